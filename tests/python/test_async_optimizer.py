"""Proves (mpirun -np 3: 1 server, 2 workers) asyncps.torch.AsyncOptimizer:
  - hostile arguments are refused on every rank alike, before the Session (a non-optimizer, a non-module,
    steps 0 or True, an unknown momentum_correction, weight_prediction not a bool or with sync mode,
    an optimizer over a tensor outside the module);
  - a plain loop with it runs exactly `steps` updates: SGD with lr 1/8 and a gradient of ones on every
    worker ends, on every worker, at init - 40/8 exactly (the wrapped optimizer's own update, pushed);
  - momentum's staleness correction sets mu^(1 + tau) in the wrapped optimizer's group (W = 2: tau 1
    before it is measured, so 0.25 for 0.5), "none" leaves mu as given; Adam's state stays on the worker
    and its run ends finite;
  - weight prediction (momentum's default): between steps the module holds the pulled parameters plus
    tau times the update last pushed (tau 1 at W = 2 before it is measured: -lr, -1.5 lr, -1.75 lr for
    mu 0.5 and a gradient of ones), opt.pulled the pulled ones; none before the first push;
  - a NaN gradient is not given to the wrapped optimizer: its momentum buffer stays as it was, the
    step counts as non-finite (not pushed), and the next steps go on from the old state; a finite
    gradient whose sum overflows float32 is stepped and pushed as any other;
  - after done, step() raises; finish() ends the worker; servers return with exit_servers=False.
The two workers share each job's global steps as the scheduler lets them (one may take all but one):
checks that need k local steps are made by the worker that took the most (it took at least half of
them; `busiest`, agreed over mpi4py), the other checks what its own steps show."""
import sys

import numpy as np
import torch

import asyncps
import asyncps.torch
from checks import RANK, check, failures, refused
from mpi4py import MPI  # after asyncps: MPI is initialised by asyncps

WORLD = MPI.COMM_WORLD


def busiest(local):
    """True on the one worker that took the most local steps (the lower rank on a tie); collective over
    every rank (a server passes local=-1), called once each job has ended on every rank."""
    counts = WORLD.allgather(local)
    return RANK == max(range(len(counts)), key=lambda r: (counts[r], -r))



def model():
    net = torch.nn.Linear(4, 1, bias=False)
    with torch.no_grad():
        net.weight.fill_(0.0)
    return net


AO = asyncps.torch.AsyncOptimizer
net = model()
sgd = torch.optim.SGD(net.parameters(), lr=0.125)
refused(TypeError, lambda: AO(object(), net, steps=4), "must be a torch.optim.Optimizer", "optimizer=object")
refused(TypeError, lambda: AO(sgd, object(), steps=4), "must be a torch.nn.Module", "module=object")
refused(ValueError, lambda: AO(sgd, net, steps=0), "steps must be a positive int", "steps=0")
refused(TypeError, lambda: AO(sgd, net, steps=True), "steps must be an int", "steps=True")
refused(ValueError, lambda: AO(sgd, net, steps=2 ** 70), "at most 2^62", "steps=2^70")
refused(TypeError, lambda: AO(sgd, net, steps=1.5), "steps must be an int", "steps=1.5")
refused(TypeError, lambda: AO(sgd, net, steps=None), "steps must be an int", "steps=None")
refused(TypeError, lambda: AO(sgd, net, steps=4, exit_servers=0), "exit_servers must be a bool", "exit_servers=0")
refused(ValueError, lambda: AO(sgd, net, steps=4, momentum_correction="half"), "momentum_correction", "correction")
refused(TypeError, lambda: AO(sgd, net, steps=4, weight_prediction=1), "weight_prediction must be a bool",
        "weight_prediction=1")
refused(ValueError, lambda: AO(sgd, net, steps=4, weight_prediction=True, mode="sync"), "is for async and ssp",
        "weight_prediction in sync mode")
heavy = torch.optim.SGD(net.parameters(), lr=0.125, momentum=0.5)
refused(ValueError, lambda: AO(heavy, net, steps=4, momentum_correction="staleness", mode="sync"),
        "has no effect with mode='sync'", "momentum_correction in sync mode")
refused(ValueError, lambda: AO(sgd, net, steps=4, momentum_correction="none"), "has no effect without momentum",
        "momentum_correction without momentum")
refused(ValueError, lambda: AO(heavy, net, steps=4, weight_prediction=True), "weight_prediction=True has no effect with "
        "momentum and momentum_correction='predict'", "weight_prediction beside momentum's own prediction")
# one rank alone with a bad argument: every rank raises (that rank's message, with its rank), none waits
refused(ValueError, lambda: AO(heavy, net, steps=4, momentum_correction="bogus" if WORLD.Get_rank() == 1 else "predict"),
        "momentum_correction must be", "a bad momentum_correction on rank 1 only")
# the wrapper's own settings differing between ranks: every rank raises, naming the first other
refused(ValueError, lambda: AO(sgd, net, steps=4 if WORLD.Get_rank() != 2 else 5),
        "AsyncOptimizer: steps=5, momentum_correction='predict', weight_prediction=False, share_buffers=False here, "
        "but steps=4, momentum_correction='predict', weight_prediction=False, share_buffers=False on rank 0",
        "steps differing on rank 2")
stray = torch.nn.Parameter(torch.zeros(3))
refused(ValueError, lambda: AO(torch.optim.SGD([stray], lr=0.1), model(), steps=4), "not a parameter of the module",
        "a tensor outside the module")


def job(opt_factory, steps, grad_at=None, **kw):
    """A plain PyTorch loop with AsyncOptimizer; returns (opt, net, local steps, momentum seen,
    (module - pulled) before each step). grad_at(local step): the gradient's value (default 1)."""
    net = model()
    opt = AO(opt_factory(net), net, steps=steps, exit_servers=False, **kw)
    if opt.is_server:
        check(opt.done and opt.worker is None, "a server's optimizer is done at once, without a worker")
        return opt, net, 0, [], []
    local, seen, ahead = 0, [], []
    while not opt.done:
        ahead.append(float((net.weight.detach().flatten() - torch.from_numpy(opt.pulled)).abs().max()) *
                     (1 if float((net.weight.detach().flatten() - torch.from_numpy(opt.pulled)).sum()) >= 0 else -1))
        opt.zero_grad()
        net.weight.grad += 1.0 if grad_at is None else grad_at(local)  # as a backward() would leave it
        opt.step()
        seen.append(opt.param_groups[0].get("momentum"))
        local += 1
    return opt, net, local, seen, ahead


# ---- SGD: exactly `steps` updates of the wrapped optimizer's own step
opt, net, local, _, ahead = job(lambda m: torch.optim.SGD(m.parameters(), lr=0.125), 40)
if not opt.is_server:
    check(bool(torch.all(net.weight == -5.0)), f"40 updates of -1/8 from 0: {net.weight.tolist()}")
    check(all(a == 0 for a in ahead), f"plain SGD predicts nothing: the module holds the pulled parameters {ahead[:3]}")
    refused(RuntimeError, lambda: opt.step(), "the job is done", "step after done")
    check(opt.worker.stats["pushes"] == local, f"pushes {opt.worker.stats['pushes']} = local steps {local}")
    opt.finish()
    check(opt.worker.finished, "finish() finished the worker")
if busiest(local if not opt.is_server else -1):
    check(local >= 20, f"the busier worker took at least half of the 40 steps: {local}")

# ---- momentum: the correction in the wrapped optimizer's group, and without it
opt, net, local, seen, _ = job(lambda m: torch.optim.SGD(m.parameters(), lr=0.01, momentum=0.5), 30,
                               momentum_correction="staleness")
if not opt.is_server:
    check(not seen or abs(seen[0] - 0.25) < 1e-12, f"mu' = 0.5^(1 + 1) before tau is measured: {seen[:3]}")
    check(bool(torch.isfinite(net.weight).all()), "momentum run finite")
    opt.finish()
if busiest(local if not opt.is_server else -1):
    check(len(seen) >= 15, f"the busier worker took at least half of 30 steps: {len(seen)}")
opt, net, local, seen, ahead = job(lambda m: torch.optim.SGD(m.parameters(), lr=0.01, momentum=0.5), 10,
                                   momentum_correction="none")
if not opt.is_server:
    check(all(m == 0.5 for m in seen), f"correction none: mu as given: {seen[:3]}")
    check(all(a == 0 for a in ahead), f"correction none: no prediction {ahead[:3]}")
    opt.finish()

# ---- Adam: its state on the worker, the run finite and moving the weights
opt, net, local, _, _ = job(lambda m: torch.optim.Adam(m.parameters(), lr=0.01), 20)
if not opt.is_server:
    check(bool(torch.isfinite(net.weight).all()) and bool(torch.all(net.weight < 0)), f"Adam: {net.weight.tolist()}")
    check(len(opt.optimizer.state) == 1, "Adam's state is the wrapped optimizer's, on this worker")
    opt.finish()

# ---- weight prediction, momentum's default: the module is ahead by tau * (the update last pushed)
opt, net, local, seen, ahead = job(lambda m: torch.optim.SGD(m.parameters(), lr=0.01, momentum=0.5), 12)
if not opt.is_server:
    check(all(m == 0.5 for m in seen), f"predict applies mu as given: {seen[:3]}")
    # tau is 1 (W - 1) until 20 updates are measured; the updates are -lr * v, v = 1, 1.5, 1.75, ...
    want = [0.0] + [-0.01 * (2 - 0.5 ** k) for k in range(len(ahead) - 1)]
    check(all(abs(a - w) < 1e-6 for a, w in zip(ahead, want)),
          f"module - pulled before each step: {ahead[:4]}, want {want[:4]}")
    check(bool(torch.isfinite(net.weight).all()), "predicted momentum run finite")
    check(bool(torch.equal(net.weight.detach().flatten(), torch.from_numpy(opt.pulled))),
          "once done the module holds the final parameters, not a prediction")
    opt.finish()
if busiest(local if not opt.is_server else -1):
    check(len(ahead) >= 6, f"the busier worker took at least half of 12 steps, predictions compared: {len(ahead)}")
# a closure would take the gradient at the pulled parameters: refused while predicting, not ignored
net = model()
opt = AO(torch.optim.SGD(net.parameters(), lr=0.01, momentum=0.5), net, steps=3, exit_servers=False)
if not opt.is_server:
    refused(ValueError, lambda: opt.step(lambda: torch.zeros(())), "the closure would compute the gradient at the pulled",
            "step(closure) while predicting")
    while not opt.done:  # (the job still runs to its end)
        opt.zero_grad()
        net.weight.grad += 1.0
        opt.step()
    opt.finish()
# ... and in sync, where nothing is predicted (a round's parameters do not move), momentum with
# the default correction takes a closure
net = model()
opt = AO(torch.optim.SGD(net.parameters(), lr=0.01, momentum=0.5), net, steps=3, exit_servers=False, mode="sync")
if not opt.is_server:
    while not opt.done:
        opt.zero_grad()
        net.weight.grad += 1.0
        check(float(opt.step(lambda: torch.ones(()))) == 1.0, "sync: step(closure) with momentum runs the closure")
    opt.finish()

# ---- a NaN gradient: the wrapped optimizer does not step, its momentum stays, the update is not pushed
# (each worker's own local step 2 is NaN; the busier worker takes at least 8 of the 16 steps)
buffers, ends = [], []


def nan_at_2(k):
    return float("nan") if k == 2 else 1.0


net = model()
opt = AO(torch.optim.SGD(net.parameters(), lr=0.01, momentum=0.5), net, steps=16, exit_servers=False)
if not opt.is_server:
    k = 0
    while not opt.done:
        opt.zero_grad()
        net.weight.grad += nan_at_2(k)
        opt.step()
        st = opt.optimizer.state[net.weight]
        buffers.append(st["momentum_buffer"].clone() if "momentum_buffer" in st else None)
        ends.append(opt.last_end.nonfinite)
        k += 1
    b = [None if x is None else x.flatten()[0].item() for x in buffers[:4]]
    check(not any(ends[:2] + ends[3:]) and (len(ends) < 3 or ends[2]), f"only step 2 is non-finite: {ends[:5]}")
    if len(buffers) >= 3:
        check(buffers[2] is not None and torch.equal(buffers[2], buffers[1]),
              f"the momentum buffer skips the NaN step: {b}")
    if len(buffers) >= 4:
        check(bool(torch.isfinite(buffers[3]).all()) and abs(b[3] - (0.5 * 1.5 + 1)) < 1e-6,
              f"then goes on from 1.5: {b}")
    want_nonfinite = 1 if len(ends) >= 3 else 0
    check(opt.worker.stats["nonfinite"] == want_nonfinite,
          f"{want_nonfinite} non-finite update counted: {opt.worker.stats['nonfinite']}")
    check(bool(torch.isfinite(net.weight).all()), "the run after a NaN gradient ends finite")
    opt.finish()
# every rank knows the job's total after the end: the workers' own counts, summed
mine = opt.worker.stats["nonfinite"] if not opt.is_server else 0
total = opt.server.job_nonfinite if opt.is_server else opt.worker.job_nonfinite
check(WORLD.allgather(total) == [sum(WORLD.allgather(mine))] * WORLD.Get_size() and total >= 1,
      f"job_nonfinite {total} on every rank is the workers' counts summed")
if busiest(len(ends) if not opt.is_server else -1):
    check(len(ends) >= 8, f"the busier worker took at least half of the 16 steps, the NaN step and 3 more: {len(ends)}")

# ---- a finite gradient whose sum overflows float32 is a gradient like any other: stepped and pushed
net = model()
opt = AO(torch.optim.SGD(net.parameters(), lr=1e-30), net, steps=6, exit_servers=False)
if not opt.is_server:
    while not opt.done:
        opt.zero_grad()
        net.weight.grad += 3e38  # 4 of them: the sum is inf, every element finite
        opt.step()
        check(opt.last_end.applied, "a finite gradient with an overflowing sum is pushed")
    w = net.weight.detach()
    check(bool(torch.isfinite(w).all()) and bool(torch.all(w < 0)), f"... as -lr * g: {w.tolist()}")
    check(opt.worker.stats["nonfinite"] == 0, f"nothing counted non-finite: {opt.worker.stats['nonfinite']}")
    opt.finish()

if failures:
    print(f"[rank {RANK}] {len(failures)} failure(s)", flush=True)
    sys.exit(1)
print(f"[rank {RANK}] test_async_optimizer: all checks passed", flush=True)
