#!/usr/bin/python3
"""The TF1 tutorial's MNIST CNN in PyTorch, trained through asyncps (the Python binding).

    PYTHONPATH=build/python mpirun -np 3 --hostfile hostfiles/localhost /usr/bin/python3 apps/python/mnist_torch.py
    scripts/netns-mpirun.sh -np 3 --map-by node -x PYTHONPATH=$PWD/build/python \\
        /usr/bin/python3 $PWD/apps/python/mnist_torch.py          # across the simulated hosts

Ranks [0, --ps) serve the parameters, the others are workers. The training loop is a plain PyTorch
loop: the optimizer is a torch.optim.SGD wrapped in asyncps.torch.AsyncOptimizer, which makes the
Session (on the serving ranks it serves until the job ends), rebinds the model's parameters into one
flat arena (no copy), and on each opt.step() pushes the SGD update of the parameters this worker
pulled and pulls the next step's, asynchronously (Hogwild) or in the other modes, until the job's
--steps global steps are taken (opt.done). The recipe is the tutorial's (and mnist_async's), in
tutorial_mnist.py beside this file (shared with PyTorch's own baseline, bench/torch_mnist.py): conv
3x3x8 + pool, conv 3x3x16 + pool, fc 784->10, no activations, Glorot-uniform init, plain SGD, lr 0.01
* 0.99^(step / epoch), batch 128; the chief keeps the EMA of the parameters (decay 0.99 per global
step, TF1's warm-up; trend-corrected like mnist_async's, 2*EMA - EMA(EMA), unless --ema_correction
none) on the servers, so checkpoints (--logdir) hold it. At the end the chief prints
the test accuracy (plain and EMA) and samples/s, and with --json one JSON line.

--device cuda puts each worker's model and its training set on cuda:(L % the devices torch sees),
L the rank's index among the job's processes on its host, read from the launcher's environment
(OMPI_COMM_WORLD_LOCAL_RANK, MPI_LOCALRANKID, SLURM_LOCALID; 0 when none is set): the workers of one
host, consecutive ranks, get different devices while there are enough. The loop is the same: the
arena has a pinned host copy, and AsyncOptimizer copies the pulled parameters to the device and the
update back, one copy each per step. The serving ranks (known from OMPI_COMM_WORLD_RANK, PMI_RANK,
PMIX_RANK or SLURM_PROCID) keep their copy on the CPU; a worker where torch sees no CUDA device ends
the job with one 'asyncps: --device cuda: ...' line.
"""
import json
import math
import os
import sys
import time

import numpy as np
import torch
import torch.nn.functional as F

import asyncps
import asyncps.torch
import example_cli  # (this directory: one-line refusals)
from tutorial_mnist import accuracy, build_model, load_mnist, lr_at  # the model, data and schedule (this directory)


def average_into(out, level, smooth, correction):
    """out = 2 * level - smooth (trend: the EMA without its lag of about decay / (1 - decay) global
    steps, Brown's double smoothing), or the level itself (none: TF1's EMA)."""
    if correction == "trend":
        np.multiply(level, 2, out=out)
        out -= smooth
    else:
        out[:] = level


def env_int(*names):
    """The first of these environment variables that holds an integer (the launcher's), or None."""
    for name in names:
        value = os.environ.get(name, "")
        if value.isdigit():
            return int(value)
    return None


def pick_device(kind, servers):
    """The torch.device of this rank's model: the CPU, or for --device cuda on a worker rank
    cuda:(node-local rank % device count)."""
    if kind == "cpu":
        return torch.device("cpu")
    rank = env_int("OMPI_COMM_WORLD_RANK", "PMI_RANK", "PMIX_RANK", "SLURM_PROCID")
    if rank is not None and rank < servers:
        return torch.device("cpu")  # a serving rank: its copy only starts the servers' parameters
    if not torch.cuda.is_available():
        why = "is built without CUDA" if torch.version.cuda is None else "sees no CUDA device on this host"
        asyncps.abort_job(f"--device cuda: torch {torch.__version__} {why}", 1)
    local = env_int("OMPI_COMM_WORLD_LOCAL_RANK", "MPI_LOCALRANKID", "SLURM_LOCALID") or 0
    return torch.device("cuda", local % torch.cuda.device_count())


def refuse_bad_args(args):
    """Ends the job with one 'asyncps:' line on a value the run cannot use (every rank parses the
    same flags, so every rank refuses it, before any collective)."""
    finite = math.isfinite
    problems = [
        (not 1 <= args.batch <= 55000, f"--batch must be in [1, 55000] (the training set), got {args.batch}"),
        (not 1 <= args.steps <= 2 ** 50, f"--steps must be in [1, 2^50], got {args.steps}"),
        (args.seed < 0, f"--seed must be non-negative, got {args.seed}"),
        (not (finite(args.learning_rate) and args.learning_rate > 0),
         f"--learning_rate must be positive and finite, got {args.learning_rate}"),
        (not (finite(args.momentum) and 0 <= args.momentum < 1), f"--momentum must be in [0, 1), got {args.momentum}"),
        (not (finite(args.decay) and 0 < args.decay <= 1), f"--decay must be in (0, 1], got {args.decay}"),
        (not (finite(args.ema) and 0 <= args.ema < 1), f"--ema must be in [0, 1), got {args.ema}"),
        (args.threads < 1, f"--threads must be positive, got {args.threads}"),
        (args.log_every < 1, f"--log_every must be positive, got {args.log_every}"),
        (args.no_restore and not args.logdir, "--no_restore has no effect without --logdir (nothing is restored)"),
        (not os.path.isdir(args.data_dir), f"--data_dir {args.data_dir}: not a directory (make data fetches MNIST)"),
    ]
    problems.append((args.logdir == "", "--logdir must not be empty (leave the flag out for none)"))
    example_cli.refuse(problems)
    if args.logdir:
        example_cli.refuse([example_cli.writable_dir(args.logdir, "--logdir")])


def main():
    ap = example_cli.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data_dir", default=os.path.join(os.path.dirname(__file__), "..", "..", "data", "mnist"))
    ap.add_argument("--steps", type=int, default=1000, help="global steps to train")
    ap.add_argument("--batch", type=int, default=128)
    ap.add_argument("--learning_rate", type=float, default=0.01)
    ap.add_argument("--momentum", type=float, default=0.0, help="SGD momentum (under asynchrony AsyncOptimizer predicts the weights by default: its momentum_correction)")
    ap.add_argument("--decay", type=float, default=0.99, help="lr = learning_rate * decay^(step / (60000 / batch))")
    ap.add_argument("--ema", type=float, default=0.99, help="the chief's moving-average decay")
    ap.add_argument("--ema_correction", default="trend", choices=("trend", "none"),
                    help="trend: report 2*EMA - EMA(EMA), which does not trail a model still improving; none: TF1's EMA")
    ap.add_argument("--ps", type=int, default=1, help="parameter-server ranks")
    ap.add_argument("--mode", default="async", choices=asyncps.MODES)
    ap.add_argument("--staleness", type=int, default=0)
    ap.add_argument("--logdir", default=None, help="checkpoints go here (and a restart resumes from them), and the "
                                                 "chief's TensorBoard scalars (tensorboard --logdir)")
    ap.add_argument("--save_secs", type=float, default=60)
    ap.add_argument("--no_restore", action="store_true")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--threads", type=int, default=1, help="torch threads per worker")
    ap.add_argument("--log_every", type=int, default=50, help="the chief logs (and stores its EMA) every N local steps")
    ap.add_argument("--json", action="store_true", help="the chief also prints one JSON line")
    ap.add_argument("--device", default="cpu", choices=("cpu", "cuda"),
                    help="where a worker's model and batches live; cuda: cuda:(node-local rank %% device count)")
    args = ap.parse_args()
    refuse_bad_args(args)
    torch.set_num_threads(args.threads)
    device = pick_device(args.device, args.ps)

    net = build_model(args.seed).to(device)  # every rank draws the same; the servers' copy is the one used
    # The optimizer line: a torch.optim optimizer, wrapped. The wrapper makes the Session, and on
    # the serving ranks serves the parameters until the job ends (exit_servers=False: it returns there).
    opt = torch.optim.SGD(net.parameters(), lr=args.learning_rate, momentum=args.momentum)
    with example_cli.one_line({"Options::num_servers": "--ps", "Options::mode": "--mode", "Options::staleness": "--staleness",
                               "Options::checkpoint.save_secs": "--save_secs", "Options::checkpoint.dir": "--logdir"}):
        opt = asyncps.torch.AsyncOptimizer(opt, net, steps=args.steps, exit_servers=False, num_servers=args.ps,
                                           mode=args.mode, staleness=args.staleness, checkpoint_dir=args.logdir or None,
                                           save_secs=args.save_secs, restore=not args.no_restore)
    if opt.is_server:
        server = opt.server
        if opt.session.rank == 0 and server.saved_checkpoint:
            print(f"asyncps: saved {server.saved_checkpoint} (global step {server.final_step})", flush=True)
        return 3 if server.halted else 0

    session, w = opt.session, opt.worker
    try:
        (train_x, train_y), _, (test_x, test_y) = load_mnist(args.data_dir)
    except (OSError, ValueError) as e:  # a missing, short or foreign file
        asyncps.abort_job(f"--data_dir {args.data_dir}: {e}", 2)
    train_x = torch.from_numpy(train_x).view(-1, 1, 28, 28).to(device)  # (on a GPU: copied there once)
    train_y = torch.from_numpy(train_y).to(device)
    rng = np.random.default_rng(args.seed * 1000003 + session.worker_index)
    perm, pos = rng.permutation(len(train_x)), 0
    params = opt.arena.params  # the module's parameters, as one numpy array (no copy)
    # the chief's curves for TensorBoard, in the checkpoints' directory (a new file per run)
    summaries = asyncps.SummaryWriter(args.logdir) if args.logdir and session.is_chief else None
    ema, ema_step = None, None  # ema: the average reported and stored (level, or 2 * level - smooth)
    if session.is_chief:
        ema = params.copy()  # (what a chief that takes no step of its own stores: the start)
        if w.load_shadow(ema):
            ema_step = w.restored_step
            level, smooth = ema.copy(), ema.copy()  # a restart: the average goes on, its trend from zero
    first = w.restored_step if w.restored else 0  # (a restart: the steps taken before are not this run's)
    if session.is_chief and first >= args.steps:
        print(f"nothing to train: the global step had already reached --steps {args.steps} (resumed from a "
              "checkpoint? raise --steps to continue, or pass --no_restore)", flush=True)
    t0, local = time.perf_counter(), 0
    while not opt.done:  # the loop's condition: the job's global step limit
        if pos + args.batch > len(perm):
            perm, pos = np.concatenate([perm[pos:], rng.permutation(len(train_x))]), 0
        idx = torch.from_numpy(perm[pos:pos + args.batch]).to(device)
        pos += args.batch
        for g in opt.param_groups:  # the tutorial's schedule, by the global step of these parameters
            g["lr"] = lr_at(opt.global_step, args.batch, args.learning_rate, args.decay)
        opt.zero_grad()
        loss = F.cross_entropy(net(train_x[idx]), train_y[idx])
        loss.backward()
        step_at = opt.global_step
        opt.step()  # the SGD update of these parameters, pushed; the next step's pulled
        local += 1
        if ema is not None and not opt.done:
            # TF1 ExponentialMovingAverage, advanced per GLOBAL step: the decays of the global steps
            # since the chief's last apply, min(decay, (1+n)/(10+n)) each
            now = opt.global_step
            pulled = opt.pulled  # (the module's own, unless weight prediction moved it ahead)
            if ema_step is None:
                level, smooth, ema_step = pulled.copy(), pulled.copy(), now - 1
            keep = 1.0
            for n in range(ema_step + 1, now + 1) if now > ema_step else (now,):  # (no step past the last: one)
                keep *= min(args.ema, (1 + n) / (10 + n))
            level *= keep
            level += (1 - keep) * pulled
            if args.ema_correction == "trend":
                smooth *= keep  # the average of the average: it trails the level as the level trails the model
                smooth += (1 - keep) * level
            ema_step = max(ema_step, now)
            if local % args.log_every == 0:
                average_into(ema, level, smooth, args.ema_correction)
                w.store_shadow(ema)
                print(f"After {local} training steps ({step_at} global steps), loss on training batch is "
                      f"{float(loss):.6f}.", flush=True)
                if summaries:
                    summaries.add_scalars({"loss": float(loss), "learning_rate": opt.param_groups[0]["lr"],
                                           "staleness_mean": w.staleness["mean"]}, step_at)
    wall = time.perf_counter() - t0  # (done: every worker's updates are in, the module holds them)
    if session.is_chief:
        if ema_step is not None:
            average_into(ema, level, smooth, args.ema_correction)
        w.store_shadow(ema)  # the final checkpoint holds it
        final = w.global_step
        acc = accuracy(net, test_x, test_y)
        params[:] = ema
        opt.arena.params_to_device()  # (the module's copy on a GPU; on the CPU params is the module)
        acc_ema = accuracy(net, test_x, test_y)
        samples = max(0, final - first) * args.batch * (session.num_workers if args.mode == "sync" else 1)
        st = w.staleness  # the chief's own updates
        print(f"Done: {final} global steps by {session.num_workers} worker(s) in {wall:.2f} s: "
              f"{samples / wall:.0f} samples/s; test accuracy {acc:.4f} (EMA {acc_ema:.4f})", flush=True)
        if summaries:
            last = {"test_accuracy": acc, "test_accuracy_ema": acc_ema}
            if final > first:  # (a run that took no step has no rate to plot)
                last["samples_per_sec"] = samples / wall
            summaries.add_scalars(last, final)
            summaries.close()
        if args.json:
            print(json.dumps({"impl": "asyncps-python", "device": str(device),
                              "workers": session.num_workers, "servers": session.num_servers,
                              "mode": args.mode, "global_steps": final, "wall_seconds": round(wall, 4),
                              "samples_per_sec": round(samples / wall, 1), "test_accuracy": acc,
                              "test_accuracy_ema": acc_ema, "chief_staleness_mean": st["mean"],
                              "single_node": session.single_node}), flush=True)
    opt.finish()
    return 0


if __name__ == "__main__":
    sys.exit(main())
