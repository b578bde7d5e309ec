#!/usr/bin/env python3
"""PyTorch reference for bench_gpu_step: the same MNIST CNN on the same GPU, timed per SGD step.

Model (as lib/nn/mnist_cnn.h, NHWC semantics): x (B,784) viewed as (B,28,28,1) -> conv 3x3 1->8
SAME + b -> maxpool 2x2/2 -> conv 3x3 8->16 SAME + b -> maxpool 2x2/2 -> flatten in (h,w,c)
order (784) -> fc 784->10 + b -> mean softmax cross-entropy; plain SGD. Tensors use the
channels_last memory format, so cuDNN sees NHWC like the asyncps GPU backend. FP32 throughout:
TF32 is off unless --tf32 (the asyncps backend uses FP32 FMA math).

Two timings per batch size, after a warm-up, bracketed by torch.cuda.synchronize():
  torch-resident   params, batch and optimizer on the GPU: zero_grad, forward, backward, step.
  torch-roundtrip  what a libasyncps worker does: params and batch uploaded from pinned host
                   memory, forward+backward, gradients downloaded to pinned host memory, SGD on host.
bench_gpu_step's "train step (sgd)" is the analogue of torch-roundtrip.

Prints one "RESULT impl=... batch=... ms_per_step=... samples_per_s=..." line per timing.
Exits 77 (one line) when torch or a CUDA device is missing.
Usage: torch_mnist_gpu.py [--batch 128 1024] [--seconds 2] [--device cuda:0] [--tf32] [--benchmark]
"""
import argparse
import sys
import time


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--batch", type=int, nargs="+", default=[128, 1024])
    ap.add_argument("--seconds", type=float, default=2.0)
    ap.add_argument("--device", default="cuda:0")
    ap.add_argument("--lr", type=float, default=1e-4)
    ap.add_argument("--tf32", action="store_true", help="allow TF32 in cuDNN and cuBLAS")
    ap.add_argument("--benchmark", action="store_true", help="torch.backends.cudnn.benchmark = True")
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

    for batch in args.batch:
        g = torch.Generator().manual_seed(42)
        x_host = torch.rand(batch, 784, generator=g).pin_memory()
        y_host = torch.randint(0, 10, (batch,), generator=g).pin_memory()

        # resident
        params = [to_dev(t).requires_grad_() for t in new_params()]
        opt = torch.optim.SGD(params, lr=args.lr)
        x, y = x_host.to(dev), y_host.to(dev)

        def resident():
            opt.zero_grad(set_to_none=True)
            loss_fn(params, x, y).backward()
            opt.step()

        ms, sps = time_steps(resident, batch)
        print(f"RESULT impl=torch-resident batch={batch} ms_per_step={ms:.4f} samples_per_s={sps:.0f}")

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

        ms, sps = time_steps(roundtrip, batch)
        print(f"RESULT impl=torch-roundtrip batch={batch} ms_per_step={ms:.4f} samples_per_s={sps:.0f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
