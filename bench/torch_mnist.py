#!/usr/bin/env python3
"""PyTorch (CPU) reference for mnist_async: the same model, init, data split, SGD schedule and steps.

The model, its initialisation, the schedule and the data split are apps/python/tutorial_mnist.py's
(shared with the asyncps example apps/python/mnist_torch.py): the tutorial's CNN without
activations, Glorot-uniform weights and biases, plain SGD, lr = 0.01 * 0.99^(global_step/(60000/128))
(not staircase), batch 128, 1000 steps; validation = the first 5,000 training images, train = the
other 55,000 (reshuffled each epoch), test = t10k.

Timing: wall clock of the training loop only (batch gather + forward + backward + update),
after one warm-up step that is not counted (it also trains: the step count includes it).

--hogwild N: N processes (torch.multiprocessing, fork) share one model (share_memory()); each
claims steps from a shared counter until --steps are done (exactly --steps updates in all, lr from
the claimed global step), Hogwild-style without locks. samples/s = steps*batch / wall of the
slowest process. --threads applies to every process.

--eval_every N (as mnist_async's): process 0 copies the shared model whenever the global step it
claims enters a new multiple of N (a copy, off the critical path), with the seconds since the timed
loop began; after training it evaluates the copies on the test set and reports, with --eval_target,
the first time and global step the test accuracy reached the target.

Prints one JSON line: {"impl", "samples_per_sec", "ms_per_step", "test_accuracy", ...}.
Usage: torch_mnist.py [--data_dir data/mnist] [--threads 1] [--channels_last] [--steps 1000]
                      [--batch 128] [--hogwild N] [--seed 1] [--eval_every N --eval_target 0.91]
"""
import argparse
import json
import os
import sys
import time

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "apps", "python"))
from tutorial_mnist import accuracy, build_model, load_mnist, lr_at  # noqa: E402


def loaded_blas():
    """The BLAS libraries mapped into this process (proves which libblas.so.3 torch uses)."""
    libs = set()
    try:
        with open("/proc/self/maps") as f:
            for line in f:
                path = line.split()[-1]
                if "blas" in os.path.basename(path):
                    libs.add(os.path.realpath(path))
    except OSError:
        pass
    return sorted(libs)


def train_loop(torch, net, train, args, counter, rank, timing):
    """Trains until the shared counter reaches args.steps; returns (local steps, seconds, snapshots).

    snapshots: [(global step, seconds since the timed loop began, state_dict copy)], process 0 only."""
    torch.set_num_threads(args.threads)
    x, y = train
    xt, yt = torch.from_numpy(x), torch.from_numpy(y)
    rng = np.random.default_rng(args.seed + 1000 * rank)
    perm, pos = rng.permutation(len(x)), 0
    params = list(net.parameters())
    lossf = torch.nn.functional.cross_entropy

    def next_batch():
        nonlocal perm, pos
        if pos + args.batch > len(perm):  # reshuffle each epoch (the tail fills from the next one)
            perm = np.concatenate([perm[pos:], rng.permutation(len(x))])
            pos = 0
        idx = torch.from_numpy(perm[pos:pos + args.batch])
        pos += args.batch
        return xt.index_select(0, idx).view(-1, 1, 28, 28), yt.index_select(0, idx)

    def claim():
        with counter.get_lock():
            s = counter.value
            if s >= args.steps:
                return None
            counter.value = s + 1
            return s

    def step(gs):
        xb, yb = next_batch()
        for p in params:
            p.grad = None
        loss = lossf(net(xb), yb)
        loss.backward()
        lr = lr_at(gs, args.batch)
        with torch.no_grad():
            for p in params:
                p.add_(p.grad, alpha=-lr)
        return float(loss)

    snapshots = []
    t0 = None

    def maybe_snapshot(gs):
        # the model as this step reads it, whenever the claimed step enters a new multiple of N
        if rank != 0 or args.eval_every <= 0:
            return
        if snapshots and gs // args.eval_every <= snapshots[-1][0] // args.eval_every:
            return
        seconds = 0.0 if t0 is None else time.perf_counter() - t0
        snapshots.append((gs, seconds, {k: v.detach().clone() for k, v in net.state_dict().items()}))

    local = 0
    if rank == 0:  # warm-up: one counted step before the clock starts
        gs = claim()
        if gs is not None:
            maybe_snapshot(gs)
            step(gs)
            local += 1
    timing["barrier"].wait()
    t0 = time.perf_counter()
    while True:
        gs = claim()
        if gs is None:
            break
        maybe_snapshot(gs)
        step(gs)
        local += 1
    return local, time.perf_counter() - t0, snapshots


def evaluate_snapshots(torch, net, snapshots, test):
    """[(global step, seconds, test accuracy)] of each snapshot, on a private copy of the model."""
    import copy
    probe = copy.deepcopy(net)
    out = []
    for gs, seconds, state in snapshots:
        probe.load_state_dict(state)
        out.append((gs, round(seconds, 4), accuracy(probe, *test)))
    return out


def worker_main(rank, net, train, test, args, counter, barrier, results):
    import torch
    local, secs, snapshots = train_loop(torch, net, train, args, counter, rank, {"barrier": barrier})
    evals = evaluate_snapshots(torch, net, snapshots, test) if snapshots else []
    results.put((rank, local, secs, evals))


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data_dir", default=os.path.join(os.path.dirname(__file__), "..", "data", "mnist"))
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--channels_last", action="store_true")
    ap.add_argument("--steps", type=int, default=1000)
    ap.add_argument("--batch", type=int, default=128)
    ap.add_argument("--hogwild", type=int, default=1, help="processes sharing the model (1: one process)")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--label", default="", help="free text copied into the JSON line")
    ap.add_argument("--eval_every", type=int, default=0,
                    help="process 0 snapshots the model every N global steps; evaluated after training (0: off)")
    ap.add_argument("--eval_target", type=float, default=0.91,
                    help="with --eval_every: the test accuracy whose first time and step are reported")
    args = ap.parse_args()

    import torch
    import torch.multiprocessing as mp
    torch.set_num_threads(args.threads)
    train, valid, test = load_mnist(args.data_dir)
    torch.manual_seed(args.seed)
    net = build_model(args.seed, args.channels_last)

    if args.hogwild <= 1:
        import multiprocessing.dummy as dummy  # a counter with get_lock, no processes

        class Counter:
            def __init__(self):
                self.value = 0
                self._lock = dummy.Lock()

            def get_lock(self):
                return self._lock

        class NoBarrier:
            def wait(self):
                pass

        local, secs, snapshots = train_loop(torch, net, train, args, Counter(), 0, {"barrier": NoBarrier()})
        per_proc = [(0, local, secs, evaluate_snapshots(torch, net, snapshots, test) if snapshots else [])]
    else:
        ctx = mp.get_context("fork")
        net.share_memory()
        counter = ctx.Value("l", 0)
        barrier = ctx.Barrier(args.hogwild)
        results = ctx.Queue()
        procs = [ctx.Process(target=worker_main, args=(r, net, train, test, args, counter, barrier, results))
                 for r in range(args.hogwild)]
        for p in procs:
            p.start()
        per_proc = sorted(results.get() for _ in procs)
        for p in procs:
            p.join()
    steps_timed = sum(l for _, l, _, _ in per_proc) - 1  # the warm-up step is not timed
    wall = max(s for _, _, s, _ in per_proc)
    evals = per_proc[0][3]
    reached = next(((gs, t) for gs, t, acc in evals if acc >= args.eval_target), None)
    sps = steps_timed * args.batch / wall
    torch.set_num_threads(max(1, args.threads))
    out = {
        "impl": "pytorch",
        "label": args.label,
        "torch": torch.__version__,
        "threads": args.threads,
        "channels_last": args.channels_last,
        "hogwild": args.hogwild,
        "batch": args.batch,
        "steps": args.steps,
        "samples_per_sec": round(sps, 1),
        "ms_per_step": round(1e3 * wall / steps_timed * max(1, args.hogwild), 4),
        "wall_seconds": round(wall, 4),
        "steps_per_process": [l for _, l, _, _ in per_proc],
        "validation_accuracy": accuracy(net, *valid),
        "test_accuracy": accuracy(net, *test),
        "blas_loaded": loaded_blas(),
        "openblas_num_threads": os.environ.get("OPENBLAS_NUM_THREADS", ""),
    }
    if args.eval_every > 0:
        out["evals"] = [{"global_step": gs, "seconds": t, "test_accuracy": acc} for gs, t, acc in evals]
        out["eval_target"] = args.eval_target
        out["seconds_to_target"] = None if reached is None else reached[1]
        out["global_step_to_target"] = None if reached is None else reached[0]
    print(json.dumps(out))
    return 0


if __name__ == "__main__":
    sys.exit(main())
