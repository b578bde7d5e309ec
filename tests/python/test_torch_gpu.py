"""Proves (mpirun -np 2: 1 server, 1 worker; a CUDA device) that asyncps.torch trains a module on the GPU
as it trains it on the CPU:
  - AsyncOptimizer over a module on cuda: the arena lives on the device (every parameter and gradient a
    view of it), its host side is two pinned buffers; 50 global steps of the same model on the same
    batches give the CPU run's loss at every step (rtol 1e-3; TF32 off) and its final parameters, for
    plain SGD, momentum with weight prediction and a NaN gradient mid-run (not stepped, not pushed),
    momentum with the staleness correction, and Adam with weight prediction (tau pinned: one worker
    measures 0); opt.pulled is the host side; the module ends on the final pull;
  - a loop of one's own on the transport (begin_step into arena.params, params_to_device(),
    backward, grads_to_host(w.progress), end_step(arena.grads)) gives the CPU loop's losses, and
    grads_to_host() brings exactly the device's gradient; arena.wait(fn) calls fn while the device
    is busy, returns when it is idle, and lets fn's exception leave after the device is done (on
    the CPU it returns at once);
  - TableEmbeddingBag with ids on the device (int64 and int32, 2-D and 1-D with offsets; sum, mean,
    max): its output is on that device and equals nn.EmbeddingBag's on the table's rows, and push()
    applies nn.EmbeddingBag's gradient step to the table;
  - host_mirror=False with a module on cuda is a ValueError starting 'asyncps:'.
Where torch sees no CUDA device it prints one line and exits 77 (ctest: skipped)."""
import sys

import torch

from checks import RANK, check, failures, refused

if not torch.cuda.is_available():
    if RANK == 0:
        print("no GPU: torch sees no CUDA device, test_torch_gpu.py not run", flush=True)
    sys.exit(77)

import numpy as np  # noqa: E402
import torch.nn.functional as F  # noqa: E402

import asyncps  # noqa: E402
import asyncps.torch  # noqa: E402
from torch_arena_jobs import CONFIGS, batches, model, run_job  # noqa: E402

torch.backends.cuda.matmul.allow_tf32 = False
torch.backends.cudnn.allow_tf32 = False
DEV = torch.device("cuda", torch.cuda.device_count() - 1)  # (the last one: not only the default device)


def close(a, b, rtol=1e-3, atol=1e-5):
    return bool(np.allclose(np.asarray(a), np.asarray(b), rtol=rtol, atol=atol))


print(f"[rank {RANK}] torch {torch.__version__} on {torch.cuda.get_device_name(DEV)} ({DEV})", flush=True)
refused(ValueError, lambda: asyncps.torch.ModuleArena(model().to(DEV), host_mirror=False), "needs the host mirror",
        "host_mirror=False on cuda")

# ---- AsyncOptimizer: the same job on the CPU and on the device
for name in CONFIGS:
    cpu = run_job(name, "cpu")
    gpu = run_job(name, DEV)
    if cpu is None:
        continue
    a = gpu["arena"]
    check(a.mirrored and a.pinned and a.device == DEV and a.params_tensor.device == DEV
          and a.grads_tensor.device == DEV, f"{name}: the arena is on {DEV} with a pinned host side: {a!r}")
    check(a.host_params_tensor.is_pinned() and a.host_grads_tensor.is_pinned()
          and a.host_params_tensor.device.type == "cpu", f"{name}: pinned host buffers")
    a.check_bound()
    check(cpu["steps"] == gpu["steps"] and gpu["steps"] >= 40, f"{name}: steps {cpu['steps']} {gpu['steps']}")
    bad = [k for k, (x, y) in enumerate(zip(cpu["loss"], gpu["loss"])) if not close(x, y, atol=1e-6)]
    check(not bad, f"{name}: losses differ at steps {bad[:5]}: cpu {[cpu['loss'][k] for k in bad[:3]]} "
                   f"cuda {[gpu['loss'][k] for k in bad[:3]]}")
    check(gpu["loss"][-1] < gpu["loss"][0], f"{name}: the loss falls on the device")
    check(close(cpu["final"], gpu["final"]), f"{name}: final parameters differ by "
                                             f"{float(np.abs(cpu['final'] - gpu['final']).max())}")
    check(np.array_equal(gpu["final"], gpu["final_pulled"]), f"{name}: done: the module holds the final pull")
    predicts = name.endswith("predict")
    check(any(np.any(d != 0) for d in gpu["ahead"]) == predicts, f"{name}: weight prediction on the device")
    check(all(close(x, y, atol=1e-5) for x, y in zip(cpu["ahead"], gpu["ahead"])), f"{name}: prediction differs")
    check(gpu["nonfinite"] == cpu["nonfinite"] and gpu["nonfinite_ends"] == cpu["nonfinite_ends"],
          f"{name}: non-finite updates {gpu['nonfinite']} / {cpu['nonfinite']}")
    print(f"[rank {RANK}] {name}: loss {gpu['loss'][0]:.5f} -> {gpu['loss'][-1]:.5f} on {DEV}, "
          f"{cpu['loss'][-1]:.5f} on the CPU", flush=True)


# ---- a loop of one's own (the transport, the arena's moves) and TableEmbeddingBag with ids on the device
def distinct_row_keys(table, n, start):
    keys, rows, k = [], set(), start
    while len(keys) < n:
        if table.row_of(k) not in rows:
            rows.add(table.row_of(k))
            keys.append(k)
        k += 1
    return keys


def bag_checks(w):
    table = asyncps.EmbeddingTable(w, "bag")
    for mode, two_d, dtype, start in (("sum", True, torch.int64, 2 ** 40), ("mean", False, torch.int32, 5),
                                      ("max", True, torch.int64, 77)):
        a, b, c, d = distinct_row_keys(table, 4, start)
        ids = torch.tensor([[a, b, a], [c, b, d]], dtype=torch.int64)  # repeats within and across bags
        offsets = None
        if not two_d:
            ids, offsets = ids.reshape(-1), torch.tensor([0, 2], dtype=torch.int64)
        uniq = torch.unique(ids)
        before = torch.from_numpy(table.pull_rows(uniq))
        ref = torch.nn.EmbeddingBag(len(uniq), 3, mode=mode)
        with torch.no_grad():
            ref.weight.copy_(before)
        remap = torch.searchsorted(uniq, ids)
        mine = asyncps.torch.TableEmbeddingBag(table, mode=mode)
        out = mine(ids.to(dtype).to(DEV), None if offsets is None else offsets.to(DEV))
        want = ref(remap, offsets)
        what = f"TableEmbeddingBag {mode}/{'2-D' if two_d else 'offsets'}/{dtype} on {DEV}"
        check(out.device == DEV, f"{what}: output on {out.device}")
        check(torch.allclose(out.cpu(), want, atol=1e-6), f"{what}: forward {out.cpu()} != {want}")
        target = torch.arange(6, dtype=torch.float32).reshape(2, 3)
        ((out - target.to(DEV)) ** 2).sum().backward()
        ((want - target) ** 2).sum().backward()
        n = mine.push(-0.1)
        check(n == len(uniq), f"{what}: push updated {n} rows, {len(uniq)} looked up")
        after = torch.from_numpy(table.pull_rows(uniq))
        check(torch.allclose(after, before - 0.1 * ref.weight.grad, atol=1e-5),
              f"{what}: the table's update is nn.EmbeddingBag's gradient step")


def wait_checks(arena, w):
    """arena.wait(fn) with the device's stream kept busy (torch.cuda._sleep): fn runs between polls
    and wait returns only when the stream is idle; fn's exception leaves, after the device is done."""
    stream = torch.cuda.current_stream(DEV)
    calls = [0]

    def progress():
        calls[0] += 1
        w.progress()

    def boom():
        raise RuntimeError("boom from while_waiting")

    with torch.cuda.device(DEV):
        torch.cuda._sleep(200_000_000)  # (about 0.1 s of the device's clock)
        arena.wait(progress)
        check(calls[0] >= 1 and stream.query(), f"wait(progress): {calls[0]} calls, stream idle {stream.query()}")
        torch.cuda._sleep(200_000_000)
        try:
            arena.wait(boom)
            check(False, "wait(fn) with fn raising: returned")
        except RuntimeError as e:
            check("boom from while_waiting" in str(e), f"wait(fn) with fn raising: {e!r}")
        check(stream.query(), "wait(fn): fn's exception left before the device was done")


def own_loop(device, steps=20, lr=0.5):
    """ModuleArena + WorkerClient's step loop on `device` (with a table beside the arena); the
    worker's losses, or None on the server."""
    net = model().to(device)
    arena = asyncps.torch.ModuleArena(net)
    layout = arena.layout
    layout.add_table("bag", 256, 3, init_scale=0.5, seed=7)
    session = asyncps.Session(layout, num_servers=1)
    if session.is_server:
        asyncps.ParameterServer(session, arena.params).serve()
        return None
    xs, ys = batches(steps)
    xs, ys = xs.to(device), ys.to(device)
    losses, k = [], 0
    with asyncps.WorkerClient(session) as w:
        while (w.begin_step(arena.params, steps)) is not None:  # pulls into the host side
            arena.params_to_device()
            arena.zero_grad()
            loss = F.cross_entropy(net(xs[k]), ys[k])
            loss.backward()
            arena.grads_to_host(w.progress)  # (the transport moves while the device finishes)
            if k == 3:
                check(np.array_equal(arena.grads, arena.grads_tensor.cpu().numpy()),
                      f"{device}: grads_to_host() brings the device's gradient")
            w.end_step(arena.grads, -lr)
            losses.append(float(loss))
            k += 1
        if torch.device(device).type == "cuda":
            wait_checks(arena, w)
            bag_checks(w)
        else:
            arena.wait(lambda: check(False, "wait() on a CPU arena calls its function"))
    return losses


cpu_losses = own_loop("cpu")
gpu_losses = own_loop(DEV)
if cpu_losses is not None:
    check(len(cpu_losses) == len(gpu_losses) == 20 and close(cpu_losses, gpu_losses, atol=1e-6),
          f"own loop: losses differ: cpu {cpu_losses[:4]} cuda {gpu_losses[:4]}")

if failures:
    print(f"[rank {RANK}] {len(failures)} failure(s)", flush=True)
    sys.exit(1)
print(f"[rank {RANK}] test_torch_gpu: all checks passed", flush=True)
