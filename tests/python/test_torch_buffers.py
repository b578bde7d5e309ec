"""Proves that normalisation layers' running statistics (BatchNorm's running mean and variance) are
the servers' under asyncps.torch with ModuleArena(buffers=True) and AsyncOptimizer(share_buffers=True).

mpirun -np 2 (1 server + 1 worker):
  - ModuleArena puts them in the arena after the parameters, named as named_buffers() names them,
    each a view of params_tensor (the module's own memory on the CPU); the integer
    num_batches_tracked and any buffer of another kind stay the module's (the latter named in a
    warning); buffers=False (ModuleArena's default) leaves every buffer out;
    AsyncOptimizer(share_buffers=False) keeps them per worker without a warning, its default (None)
    with one; share_buffers=True beside staleness_lr or dc_lambda is refused; a float64 statistic
    and a bad `buffers` are refused; a buffer replaced instead of updated in place is refused by
    check_bound() and by the next step() (its changes would never reach the servers);
  - with one worker, AsyncOptimizer trains a model with BatchNorm exactly as plain PyTorch does,
    parameters and running statistics both (the server adds each step's change to its copy, so
    to float rounding), and the server's arena (what its checkpoints save) holds the statistics.
mpirun -np 3 (1 server + 2 workers):
  - sync: two workers on the same batches end with the statistics (and parameters) of one plain
    PyTorch worker: a round applies the mean of their changes, not the sum;
  - async: each worker's change is applied times min(1, 0.5 / (momentum x W)) (W workers adding
    whole changes computed from stale values oscillate once momentum passes about pi / (4 W - 2)).
    BatchNorm with momentum 1 and W = 2 makes it exact (factor 1/4): worker 0 trains on batches
    of mean 2 while worker 1 holds its first step, whose forward saw mean 10 at the pulled start
    (running mean 0), and pushes it last: the final running mean is 2 + (10 - 0) / 4 = 4.5 (the
    whole change would give 12). Momentum SGD there predicts weights: the statistics stay as
    pulled (a restore of the whole arena would undo the forward's change: worker 0 would never
    move)."""
import os
import sys
import time
import warnings

import numpy as np
import torch

import asyncps
import asyncps.torch
from checks import check, failures, refused

STEPS = 10
NP = int(os.environ.get("OMPI_COMM_WORLD_SIZE", os.environ.get("PMI_SIZE", "2")))


def net(momentum=0.1):
    torch.manual_seed(5)
    return torch.nn.Sequential(torch.nn.Linear(4, 3), torch.nn.BatchNorm1d(3, momentum=momentum),
                               torch.nn.Tanh(), torch.nn.Linear(3, 2))


def batches(shift=0.0):
    g = torch.Generator().manual_seed(11)
    return [(torch.randn(16, 4, generator=g) * 2 + shift, torch.randn(16, 2, generator=g)) for _ in range(STEPS)]


def train_plain():
    m = net()
    opt = torch.optim.SGD(m.parameters(), lr=0.05, momentum=0.9)
    for x, y in batches():
        opt.zero_grad()
        torch.nn.functional.mse_loss(m(x), y).backward()
        opt.step()
    return m


def same(a, b, what, tol=2e-5):
    a, b = a.detach().float(), b.detach().float()
    check(torch.allclose(a, b, rtol=tol, atol=tol), f"{what}: max diff {float((a - b).abs().max())}")


def train_on_one_batch(opt, m):
    """A worker's loop to the job's end, every step on the same batch (batches()[0])."""
    x, y = batches()[0]
    while not opt.done:
        opt.zero_grad()
        torch.nn.functional.mse_loss(m(x), y).backward()
        opt.step()


def train_async_optimizer(mode):
    m = net()
    opt = asyncps.torch.AsyncOptimizer(torch.optim.SGD(m.parameters(), lr=0.05, momentum=0.9), m,
                                       steps=STEPS, exit_servers=False,
                                       mode=mode, share_buffers=True)
    if opt.is_server:
        return None, opt
    data, k = batches(), 0
    while not opt.done:
        x, y = data[k]
        opt.zero_grad()
        torch.nn.functional.mse_loss(m(x), y).backward()
        opt.step()
        k += 1
    opt.finish()
    return m, opt


if NP == 2:
    # ---- the arena: what it holds, and what it refuses
    MA = asyncps.torch.ModuleArena
    m = net()
    a = MA(m, buffers=True)
    names = [t.name for t in a.layout.tensors]
    check(names == ["0.weight", "0.bias", "1.weight", "1.bias", "3.weight", "3.bias", "1.running_mean", "1.running_var"],
          f"the layout: the parameters, then the floating-point buffers: {names}")
    check(a.param_floats == 12 + 3 + 3 + 3 + 6 + 2 and a.buffer_floats == 6, f"{a.param_floats} + {a.buffer_floats}")
    base = a.params_tensor.data_ptr()
    check(m[1].running_mean.data_ptr() == base + 4 * a.param_floats and
          m[1].running_var.data_ptr() == base + 4 * (a.param_floats + 3), "each buffer a view of the arena's tail")
    check(np.array_equal(a.params[a.param_floats:], np.r_[np.zeros(3), np.ones(3)]), "the buffers' values in it")
    check(m[1].num_batches_tracked.dtype == torch.int64, "(num_batches_tracked stays the module's)")
    m.train()(torch.randn(8, 4))
    check(not np.array_equal(a.params[a.param_floats:], np.r_[np.zeros(3), np.ones(3)]),
          "a forward in train() updates the running statistics in the arena")
    a.check_bound()
    check("and 2 buffers" in repr(a), repr(a))
    # a buffer of another kind (a mask) stays the worker's, named in a warning
    masked = net()
    masked.register_buffer("mask", torch.full((3,), float("-inf")))
    with warnings.catch_warnings(record=True) as said:
        warnings.simplefilter("always")
        c = MA(masked, buffers=True)
    check(c.buffer_floats == 6 and len(said) == 1 and "buffers mask are not normalisation statistics" in
          str(said[0].message), f"a mask: {c!r}, {[str(w.message) for w in said]}")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # (the warning itself: test_torch_arena.py)
        b = MA(net())
    check(b.buffer_floats == 0 and b.layout.size == a.param_floats, "buffers=False: the parameters only")
    refused(TypeError, lambda: MA(net(), buffers=1), "buffers must be a bool", "ModuleArena(buffers=1)")
    d = net()
    d[1].running_mean = d[1].running_mean.double()
    refused(ValueError, lambda: MA(d, buffers=True), "buffer 1.running_mean is torch.float64", "a float64 buffer")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        MA(d)  # (kept per worker: accepted)
    m[1].running_var = torch.ones(3)  # replaced, not updated in place
    refused(ValueError, a.check_bound, "buffer 1.running_var is no longer the arena's", "a replaced buffer")

    # ---- one worker: exactly plain PyTorch, statistics included; the checkpoint holds them
    plain = train_plain()
    ours, opt = train_async_optimizer("async")
    if ours is not None:
        for (n, p), q in zip(ours.named_parameters(), plain.parameters()):
            same(p, q, f"parameter {n} as in plain PyTorch")
        same(ours[1].running_mean, plain[1].running_mean, "running_mean as in plain PyTorch")
        same(ours[1].running_var, plain[1].running_var, "running_var as in plain PyTorch")
        check(not torch.equal(plain[1].running_mean, torch.zeros(3)), "(the statistics moved)")
    else:
        srv = opt.server.snapshot()
        same(torch.from_numpy(np.asarray(srv)[-6:]), torch.cat([plain[1].running_mean, plain[1].running_var]),
             "the server's arena holds the trained statistics")

    # ---- share_buffers=False: kept per worker, without a warning (asked for)
    with warnings.catch_warnings(record=True) as said:
        warnings.simplefilter("always")
        m = net()
        opt = asyncps.torch.AsyncOptimizer(torch.optim.SGD(m.parameters(), lr=0.05), m, steps=3, exit_servers=False,
                                           share_buffers=False)
    check(opt.arena.buffer_floats == 0 and not said, f"share_buffers=False: {opt.arena!r}, warnings {said}")
    if not opt.is_server:
        train_on_one_batch(opt, m)
        check(float(m[1].running_var.sum()) != 3.0, "per worker: its own forwards' statistics, never pulled over")
        opt.finish()

    # ---- the default (None): per worker too, with a warning naming them
    with warnings.catch_warnings(record=True) as said:
        warnings.simplefilter("always")
        m = net()
        opt = asyncps.torch.AsyncOptimizer(torch.optim.SGD(m.parameters(), lr=0.05), m, steps=2, exit_servers=False)
    check(opt.arena.buffer_floats == 0 and len(said) == 1 and "(1.running_mean, 1.running_var) are not in the arena"
          in str(said[0].message), f"the default: {opt.arena!r}, warnings {[str(w.message) for w in said]}")
    if not opt.is_server:
        train_on_one_batch(opt, m)
        opt.finish()
    for bad in (1, "yes", float("nan")):  # (a hostile value: one TypeError on every rank, no Session made)
        refused(TypeError, lambda: asyncps.torch.AsyncOptimizer(torch.optim.SGD(net().parameters(), lr=0.05), net(),
                                                                steps=2, share_buffers=bad),
                "share_buffers must be None or a bool", f"share_buffers={bad!r}")
    for other in ({"staleness_lr": True}, {"dc_lambda": 0.1}):
        refused(ValueError, lambda: asyncps.torch.AsyncOptimizer(torch.optim.SGD(net().parameters(), lr=0.05), net(),
                                                                 steps=2, share_buffers=True, **other),
                f"share_buffers=True with {next(iter(other))}", f"share_buffers=True beside {other}")

    # ---- a buffer replaced mid-training: refused at the next step, on the worker
    m = net()
    opt = asyncps.torch.AsyncOptimizer(torch.optim.SGD(m.parameters(), lr=0.05), m, steps=5, exit_servers=False,
                                       share_buffers=True)
    if not opt.is_server:
        x, y = batches()[0]
        torch.nn.functional.mse_loss(m(x), y).backward()
        opt.step()
        kept = m[1].running_mean
        m[1].running_mean = kept.clone()
        torch.nn.functional.mse_loss(m(x), y).backward()
        refused(ValueError, opt.step, "AsyncOptimizer.step: buffer 1.running_mean is no longer the arena's",
                "step() after a buffer was replaced")
        m[1].running_mean = kept

        def replacing():  # a closure whose forward replaces a statistic: refused by this step, not the next
            opt.zero_grad()
            m[1].running_var = m[1].running_var.clone()
            loss = torch.nn.functional.mse_loss(m(x), y)
            loss.backward()
            return loss
        kept_var = m[1].running_var
        refused(ValueError, lambda: opt.step(replacing), "AsyncOptimizer.step: buffer 1.running_var is no longer the arena's",
                "step(closure) whose forward replaced a buffer")
        m[1].running_var = kept_var
        train_on_one_batch(opt, m)  # (put back: the job ends normally)
        opt.finish()
else:
    # ---- sync, two workers on the same batches: one plain worker's statistics
    plain = train_plain()
    ours, _ = train_async_optimizer("sync")
    if ours is not None:
        same(ours[1].running_mean, plain[1].running_mean, "sync: running_mean of the round's mean")
        same(ours[1].running_var, plain[1].running_var, "sync: running_var of the round's mean")
        for (n, p), q in zip(ours.named_parameters(), plain.parameters()):
            same(p, q, f"sync: parameter {n}")

    # ---- async, two workers: each change divided by W
    def batch(i):  # worker i's one batch: column means exactly 2 (worker 0) or 10 (worker 1)
        x = torch.randn(16, 4, generator=torch.Generator().manual_seed(i))
        return x - x.mean(0) + (10.0 if i == 1 else 2.0)

    m = net(momentum=1.0)  # (momentum 1: a forward sets the running mean to its batch's mean)
    opt = asyncps.torch.AsyncOptimizer(torch.optim.SGD(m.parameters(), lr=0.0, momentum=0.9), m, steps=41,
                                       exit_servers=False, share_buffers=True)
    if not opt.is_server:
        me = opt.session.worker_index
        with torch.no_grad():  # the batch means the BatchNorm sees (the first layer does not train: lr 0)
            b0, b1 = m[0](batch(0)).mean(0), m[0](batch(1)).mean(0)
        if me == 1:  # holds its first step (pulled at the start: running mean 0) while worker 0 takes all its own
            t_end = time.monotonic() + 60
            while opt.worker.global_step < 41 and time.monotonic() < t_end:
                time.sleep(0.02)
            time.sleep(0.5)  # (worker 0's last pull and push, after its last claim)
        k = 0
        while not opt.done:
            opt.zero_grad()
            m(batch(me)).sum().backward()
            opt.step()
            k += 1
        opt.finish()
        check(k == 1 if me == 1 else k == 40, f"worker {me} took {k} steps (want {1 if me == 1 else 40})")
        same(m[1].running_mean, b0 + (b1 - 0) / 4, "async W = 2, momentum 1: worker 0's mean, then worker 1's change "
             "times 0.5 / (1 x 2)", tol=1e-4)
print(f"{'PASS' if not failures else 'FAIL: ' + '; '.join(failures)}", flush=True)
sys.exit(1 if failures else 0)
