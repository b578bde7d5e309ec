"""Proves (mpirun -np 3: 1 server, 2 workers) asyncps.torch.AsyncOptimizer:
  - hostile arguments are refused on every rank alike, before the Session (a non-optimizer, a non-module,
    steps 0 or True, an unknown momentum_correction, an optimizer over a tensor outside the module);
  - a plain loop with it runs exactly `steps` updates: SGD with lr 1/8 and a gradient of ones on every
    worker ends, on every worker, at init - 40/8 exactly (the wrapped optimizer's own update, pushed);
  - momentum's staleness correction sets mu^(1 + tau) in the wrapped optimizer's group (W = 2: tau 1
    before it is measured, so 0.25 for 0.5), "none" leaves mu as given; Adam's state stays on the worker
    and its run ends finite;
  - after done, step() raises; finish() ends the worker; servers return with exit_servers=False."""
import os
import sys

import numpy as np
import torch

import asyncps
import asyncps.torch

RANK = int(os.environ.get("OMPI_COMM_WORLD_RANK", os.environ.get("PMI_RANK", "0")))
failures = []


def check(cond, what):
    if not cond:
        failures.append(what)
        print(f"FAIL [rank {RANK}]: {what}", flush=True)


def refused(exc, fn, match, what):
    try:
        fn()
    except exc as e:
        if not str(e).startswith("asyncps:") or match not in str(e):
            check(False, f"{what}: {e!r}")
        return
    except Exception as e:  # noqa: BLE001
        check(False, f"{what}: raised {type(e).__name__}: {e}")
        return
    check(False, f"{what}: accepted")


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
refused(ValueError, lambda: AO(sgd, net, steps=True), "steps must be a positive int", "steps=True")
refused(ValueError, lambda: AO(sgd, net, steps=2 ** 70), "at most 2^62", "steps=2^70")
refused(ValueError, lambda: AO(sgd, net, steps=1.5), "steps must be a positive int", "steps=1.5")
refused(ValueError, lambda: AO(sgd, net, steps=4, momentum_correction="half"), "momentum_correction", "correction")
stray = torch.nn.Parameter(torch.zeros(3))
refused(ValueError, lambda: AO(torch.optim.SGD([stray], lr=0.1), model(), steps=4), "not a trainable parameter",
        "a tensor outside the module")


def job(opt_factory, steps, **kw):
    """A plain PyTorch loop with AsyncOptimizer; returns (opt, net, local steps, momentum seen)."""
    net = model()
    opt = AO(opt_factory(net), net, steps=steps, exit_servers=False, **kw)
    if opt.is_server:
        check(opt.done and opt.worker is None, "a server's optimizer is done at once, without a worker")
        return opt, net, 0, []
    local, seen = 0, []
    while not opt.done:
        opt.zero_grad()
        net.weight.grad += 1.0  # a gradient of ones, as a backward() would leave it
        opt.step()
        seen.append(opt.param_groups[0].get("momentum"))
        local += 1
    return opt, net, local, seen


# ---- SGD: exactly `steps` updates of the wrapped optimizer's own step
opt, net, local, _ = job(lambda m: torch.optim.SGD(m.parameters(), lr=0.125), 40)
if not opt.is_server:
    check(bool(torch.all(net.weight == -5.0)), f"40 updates of -1/8 from 0: {net.weight.tolist()}")
    check(local >= 1, f"this worker took {local} steps")
    refused(RuntimeError, lambda: opt.step(), "the job is done", "step after done")
    check(opt.worker.stats["pushes"] == local, f"pushes {opt.worker.stats['pushes']} = local steps {local}")
    opt.finish()
    check(opt.worker.finished, "finish() finished the worker")

# ---- momentum: the correction in the wrapped optimizer's group, and without it
opt, net, local, seen = job(lambda m: torch.optim.SGD(m.parameters(), lr=0.01, momentum=0.5), 30)
if not opt.is_server:
    check(seen and abs(seen[0] - 0.25) < 1e-12, f"mu' = 0.5^(1 + 1) before tau is measured: {seen[:3]}")
    check(bool(torch.isfinite(net.weight).all()), "momentum run finite")
    opt.finish()
opt, net, local, seen = job(lambda m: torch.optim.SGD(m.parameters(), lr=0.01, momentum=0.5), 10,
                            momentum_correction="none")
if not opt.is_server:
    check(all(m == 0.5 for m in seen), f"correction none: mu as given: {seen[:3]}")
    opt.finish()

# ---- Adam: its state on the worker, the run finite and moving the weights
opt, net, local, _ = job(lambda m: torch.optim.Adam(m.parameters(), lr=0.01), 20)
if not opt.is_server:
    check(bool(torch.isfinite(net.weight).all()) and bool(torch.all(net.weight < 0)), f"Adam: {net.weight.tolist()}")
    check(len(opt.optimizer.state) == 1, "Adam's state is the wrapped optimizer's, on this worker")
    opt.finish()

if failures:
    print(f"[rank {RANK}] {len(failures)} failure(s)", flush=True)
    sys.exit(1)
print(f"[rank {RANK}] test_async_optimizer: all checks passed", flush=True)
