#!/usr/bin/env python3
"""PyTorch reference for bench_gpu_step: the same MNIST CNN on the same GPU, timed per SGD step.

Model (as lib/nn/mnist_cnn.h, NHWC semantics): x (B,784) viewed as (B,28,28,1) -> conv 3x3 1->8
SAME + b -> maxpool 2x2/2 -> conv 3x3 8->16 SAME + b -> maxpool 2x2/2 -> flatten in (h,w,c)
order (784) -> fc 784->10 + b -> mean softmax cross-entropy; plain SGD. Tensors use the
channels_last memory format, so cuDNN sees NHWC like the asyncps GPU backend. FP32 throughout:
TF32 is off unless --tf32 (the asyncps backend uses FP32 FMA math).

The variants (--impl picks some; all by default), timed per batch size after a warm-up,
bracketed by torch.cuda.synchronize():
  torch-resident    params, batch and optimizer on the GPU: zero_grad, forward, backward, step.
  torch-roundtrip   what a libasyncps worker does: params and batch uploaded from pinned host
                    memory, forward+backward, gradients downloaded to pinned host memory, SGD on host.
  torch-graph       torch-resident's whole step (forward, backward, SGD step) captured once as a
                    CUDA graph (torch.cuda.CUDAGraph, static inputs, warm-up on a side stream) and
                    replayed: one launch per step, no Python or kernel-launch overhead.
  torch-compile     torch.compile of the loss (mode default: Inductor's fused kernels), backward
                    through its compiled graph, the optimizer's step eager.
  torch-compile-ro  the same with mode="reduce-overhead" (Inductor's kernels in CUDA graphs).
bench_gpu_step's "train step (sgd)" is the analogue of torch-roundtrip; the fastest of the others
is the peer of a step that stays on the GPU.

Before timing, each variant but torch-roundtrip takes 3 steps from its current parameters and
compares the change with 3 eager SGD steps from the same point: one "CHECK impl=... batch=...
rel_diff=... agrees=yes|no" line (a variant that does not agree is left out of BEST).
Prints one "RESULT impl=... batch=... ms_per_step=... samples_per_s=..." line per timing, a
"SKIP impl=... batch=... reason=..." line for a variant that cannot run here (torch.compile
without triton or a C compiler, a capture that fails), and per batch size a final
"BEST batch=... impl=... ms_per_step=..." naming the fastest variant that ran and agreed.
Exits 77 (one line) when torch or a CUDA device is missing. torch.compile's first compile of each
batch size and mode takes tens of seconds (--impl leaves it out).
Usage: torch_mnist_gpu.py [--batch 128 1024 4096] [--seconds 2] [--device cuda:0] [--tf32] [--benchmark]
                          [--impl torch-resident torch-graph ...]
"""
import argparse
import sys
import time

IMPLS = ("torch-resident", "torch-roundtrip", "torch-graph", "torch-compile", "torch-compile-ro")
CHECK_STEPS = 3
CHECK_TOLERANCE = 1e-2  # relative difference of the parameters' change over CHECK_STEPS steps


def one_line(exc):
    """An exception as one short line (for SKIP ... reason=)."""
    text = " ".join(f"{type(exc).__name__}: {exc}".split())
    return text[:300] + ("..." if len(text) > 300 else "")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--batch", type=int, nargs="+", default=[128, 1024, 4096])
    ap.add_argument("--seconds", type=float, default=2.0)
    ap.add_argument("--device", default="cuda:0")
    ap.add_argument("--lr", type=float, default=1e-4)
    ap.add_argument("--tf32", action="store_true", help="allow TF32 in cuDNN and cuBLAS")
    ap.add_argument("--benchmark", action="store_true", help="torch.backends.cudnn.benchmark = True")
    ap.add_argument("--impl", nargs="+", choices=IMPLS, default=list(IMPLS), help="the variants to run (all)")
    args = ap.parse_args()
    try:
        import torch
        import torch.nn.functional as F
    except ImportError:
        print("no GPU: torch is not installed, torch_mnist_gpu.py not run")
        return 77
    if not torch.cuda.is_available():
        print("no GPU: torch sees no CUDA device, torch_mnist_gpu.py not run")
        return 77
    torch.backends.cudnn.allow_tf32 = args.tf32
    torch.backends.cuda.matmul.allow_tf32 = args.tf32
    torch.backends.cudnn.benchmark = args.benchmark
    dev = torch.device(args.device)
    if dev.type == "cuda" and dev.index is None:  # ("cuda": the current device, named)
        dev = torch.device(dev.type, torch.cuda.current_device())
    torch.cuda.set_device(dev)  # (side streams, graphs and compiled kernels on this device)
    print(f"torch {torch.__version__}, cuDNN {torch.backends.cudnn.version()}, {torch.cuda.get_device_name(dev)}, "
          f"tf32 {args.tf32}, cudnn.benchmark {args.benchmark}")

    # Parameters in torch's own layouts (conv OIHW); fc_w is [784,10] over (h,w,c) features.
    def new_params():
        g = torch.Generator().manual_seed(1)
        shapes = [(8, 1, 3, 3), (8,), (16, 8, 3, 3), (16,), (784, 10), (10,)]
        return [(torch.rand(s, generator=g) * 0.2 - 0.1) for s in shapes]

    def loss_fn(p, x, y):
        w1, b1, w2, b2, wf, bf = p
        h = x.view(-1, 28, 28, 1).permute(0, 3, 1, 2)  # NHWC data, NCHW view
        h = h.contiguous(memory_format=torch.channels_last)
        h = F.max_pool2d(F.conv2d(h, w1, b1, padding=1), 2, 2)
        h = F.max_pool2d(F.conv2d(h, w2, b2, padding=1), 2, 2)
        h = h.permute(0, 2, 3, 1).reshape(x.shape[0], 784)  # flatten (h,w,c)
        return F.cross_entropy(h @ wf + bf, y)

    def to_dev(t):
        t = t.to(dev)
        return t.contiguous(memory_format=torch.channels_last) if t.dim() == 4 else t

    def time_steps(step, batch):
        for _ in range(50):
            step()
        torch.cuda.synchronize(dev)
        steps, t0 = 0, time.perf_counter()
        while True:
            for _ in range(10):
                step()
            steps += 10
            torch.cuda.synchronize(dev)
            el = time.perf_counter() - t0
            if el >= args.seconds:
                break
        ms = 1e3 * el / steps
        return ms, batch * 1e3 / ms

    def resident_params():
        params = [to_dev(t).requires_grad_() for t in new_params()]
        return params, torch.optim.SGD(params, lr=args.lr)

    def agrees(step, params, x, y):
        """(rel_diff, ok): CHECK_STEPS of `step` against as many eager SGD steps from the same parameters."""
        torch.cuda.synchronize(dev)
        start = [p.detach().clone() for p in params]
        for _ in range(CHECK_STEPS):
            step()
        torch.cuda.synchronize(dev)
        moved = [p.detach() - s for p, s in zip(params, start)]
        ref = [s.clone().requires_grad_() for s in start]
        for _ in range(CHECK_STEPS):
            loss_fn(ref, x, y).backward()
            with torch.no_grad():
                for r in ref:
                    r -= args.lr * r.grad
                    r.grad = None
        want = [r.detach() - s for r, s in zip(ref, start)]
        num = sum(float(torch.linalg.vector_norm((m - w).float())) ** 2 for m, w in zip(moved, want)) ** 0.5
        den = sum(float(torch.linalg.vector_norm(w.float())) ** 2 for w in want) ** 0.5
        rel = num / den if den > 0 else (0.0 if num == 0 else float("inf"))
        return rel, rel <= CHECK_TOLERANCE

    # ---- the variants: each builds its step from fresh parameters (and runs its warm-up/capture/compile)
    def make_resident(x, y):
        params, opt = resident_params()

        def resident():
            opt.zero_grad(set_to_none=True)
            loss_fn(params, x, y).backward()
            opt.step()

        return resident, params

    def make_graph(x, y):
        # PyTorch's whole-network capture: warm up on a side stream (autograd and cuDNN set up
        # outside the capture), grads set to None so backward allocates them from the graph's
        # pool, then forward, backward and the optimizer's step captured on that stream. x and y
        # are the static inputs (a real loop copies each batch into them before replay()).
        params, opt = resident_params()
        side = torch.cuda.Stream(dev)
        side.wait_stream(torch.cuda.current_stream(dev))
        with torch.cuda.stream(side):
            for _ in range(3):
                opt.zero_grad(set_to_none=True)
                loss_fn(params, x, y).backward()
                opt.step()
        torch.cuda.current_stream(dev).wait_stream(side)
        graph = torch.cuda.CUDAGraph()
        opt.zero_grad(set_to_none=True)
        with torch.cuda.graph(graph, stream=side):
            static_loss = loss_fn(params, x, y)
            static_loss.backward()
            opt.step()  # (plain SGD keeps no step count on the host: nothing needs capturable=True)
        torch.cuda.synchronize(dev)

        def replay():
            graph.replay()

        replay.keep = (graph, static_loss, opt)  # (the graph's memory lives as long as the step)
        return replay, params

    def make_compile(x, y, mode):
        compiler = getattr(torch, "compiler", None)
        if compiler is not None and hasattr(compiler, "reset"):
            compiler.reset()  # (a fresh compile for this batch size: static shapes, no recompile limit)
        else:
            torch._dynamo.reset()
        params, opt = resident_params()
        compiled = torch.compile(loss_fn, mode=mode)
        mark = getattr(compiler, "cudagraph_mark_step_begin", None) if mode == "reduce-overhead" else None

        def step():
            if mark is not None:
                mark()  # (a new iteration: the previous one's graph outputs may be overwritten)
            opt.zero_grad(set_to_none=True)
            compiled(params, x, y).backward()
            opt.step()

        for _ in range(3):  # compiles here: a failure surfaces now, not while timing
            step()
        torch.cuda.synchronize(dev)
        return step, params

    def make_roundtrip(x_host, y_host):
        # round trip through pinned host memory, SGD on the host
        host_params = [t.contiguous().pin_memory() for t in new_params()]
        host_grads = [torch.empty_like(t).pin_memory() for t in host_params]

        def roundtrip():
            p = [t.to(dev, non_blocking=True) for t in host_params]
            p = [(q.contiguous(memory_format=torch.channels_last) if q.dim() == 4 else q).requires_grad_() for q in p]
            xd, yd = x_host.to(dev, non_blocking=True), y_host.to(dev, non_blocking=True)
            loss_fn(p, xd, yd).backward()
            for hg, q in zip(host_grads, p):
                hg.copy_(q.grad, non_blocking=True)
            torch.cuda.synchronize(dev)
            for hp, hg in zip(host_params, host_grads):
                hp.sub_(hg, alpha=args.lr)

        return roundtrip

    makers = {
        "torch-resident": make_resident,
        "torch-graph": make_graph,
        "torch-compile": lambda x, y: make_compile(x, y, None),
        "torch-compile-ro": lambda x, y: make_compile(x, y, "reduce-overhead"),
    }

    for batch in args.batch:
        g = torch.Generator().manual_seed(42)
        x_host = torch.rand(batch, 784, generator=g).pin_memory()
        y_host = torch.randint(0, 10, (batch,), generator=g).pin_memory()
        x, y = x_host.to(dev), y_host.to(dev)
        timings = {}  # impl: ms per step (variants that ran and agreed)

        for impl in args.impl:
            ok = True
            try:
                if impl == "torch-roundtrip":
                    step = make_roundtrip(x_host, y_host)
                else:
                    step, params = makers[impl](x, y)
                    rel, ok = agrees(step, params, x, y)
                    print(f"CHECK impl={impl} batch={batch} steps={CHECK_STEPS} rel_diff={rel:.2e} "
                          f"agrees={'yes' if ok else 'no'}", flush=True)
                    del params
                ms, sps = time_steps(step, batch)
            except Exception as e:  # noqa: BLE001  (no triton, no C compiler, a capture that fails, ...)
                print(f"SKIP impl={impl} batch={batch} reason={one_line(e)}", flush=True)
                continue
            finally:
                step = None  # (a graph's memory, a compiled step's caches: gone before the next variant)
            print(f"RESULT impl={impl} batch={batch} ms_per_step={ms:.4f} samples_per_s={sps:.0f}", flush=True)
            if ok:
                timings[impl] = ms
        if timings:
            best = min(timings, key=timings.get)
            print(f"BEST batch={batch} impl={best} ms_per_step={timings[best]:.4f}", flush=True)
        else:
            print(f"BEST batch={batch} impl=none ms_per_step=nan", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
