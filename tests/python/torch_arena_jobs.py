"""Shared by test_torch_arena.py (CPU) and test_torch_gpu.py (CUDA): one small training job through
asyncps.torch.AsyncOptimizer, run the same way on any device, so two runs can be compared step by step.

The model is a small CNN (conv 3x3 1->4, ReLU, fc 144->16, tanh, fc 16->3) on 8x8 images whose
labels a planted linear rule gives; every rank draws the same init and the same batches on the CPU
(a job then moves the model and the batches to its device). Each CONFIG exercises one of
AsyncOptimizer's paths; with `tau`, the worker's staleness is pinned to that value (one worker
measures 0), so weight prediction and the staleness correction act and the run stays deterministic.
"""
import math

import numpy as np
import torch
import torch.nn.functional as F

import asyncps
import asyncps.torch

STEPS, BATCH = 50, 32

# name: (optimizer factory, AsyncOptimizer keywords, pinned tau or None, local step whose gradient is NaN or None)
CONFIGS = {
    "sgd": (lambda ps: torch.optim.SGD(ps, lr=0.5), {}, None, None),
    "momentum-predict": (lambda ps: torch.optim.SGD(ps, lr=0.1, momentum=0.9), {}, 1.5, 7),
    "momentum-staleness": (lambda ps: torch.optim.SGD(ps, lr=0.1, momentum=0.9),
                           {"momentum_correction": "staleness"}, 1.0, None),
    "adam-predict": (lambda ps: torch.optim.Adam(ps, lr=0.01), {"weight_prediction": True}, 1.0, None),
    # (a BatchNorm after the conv, its running statistics on the servers: prediction must leave them)
    "bn-momentum-predict": (lambda ps: torch.optim.SGD(ps, lr=0.1, momentum=0.9), {"share_buffers": True}, 1.5, 7),
}


def model(bn=False):
    torch.manual_seed(3)
    norm = [torch.nn.BatchNorm2d(4)] if bn else []
    return torch.nn.Sequential(torch.nn.Conv2d(1, 4, 3), *norm, torch.nn.ReLU(), torch.nn.Flatten(),
                               torch.nn.Linear(4 * 6 * 6, 16), torch.nn.Tanh(), torch.nn.Linear(16, 3))


def batches(steps=STEPS, batch=BATCH):
    g = torch.Generator().manual_seed(11)
    x = torch.rand(steps, batch, 1, 8, 8, generator=g)
    planted = torch.randn(64, 3, generator=g)
    y = (x.reshape(steps, batch, 64) - 0.5).matmul(planted).argmax(-1)
    return x, y


def run_job(name, device, host_mirror=None, steps=STEPS):
    """Trains CONFIGS[name] on `device` for `steps` global steps (collective: every rank calls it);
    on a worker returns a dict of what each step saw, on a server None."""
    make, kw, tau, nan_at = CONFIGS[name]
    net = model(bn=name.startswith("bn-")).to(device)
    opt = asyncps.torch.AsyncOptimizer(make(net.parameters()), net, steps=steps, exit_servers=False,
                                       host_mirror=host_mirror, **kw)
    if opt.is_server:
        return None
    if tau is not None:
        opt._staleness = lambda: tau  # (the test's knob: one worker's measured staleness is 0)
    xs, ys = batches(steps)
    xs, ys = xs.to(device), ys.to(device)
    out = {"loss": [], "pulled": [], "ahead": [], "nonfinite_ends": [], "arena": opt.arena,
           "param_floats": opt.arena.param_floats}

    def arena_now():  # the module's whole arena (parameters, then any shared statistics), on the host
        return opt.arena.params_tensor.detach().double().cpu().numpy()

    k = 0
    while not opt.done:
        pulled = opt.pulled.astype(np.float64)
        out["pulled"].append(pulled)
        out["ahead"].append(arena_now() - pulled)  # what weight prediction added to the module
        opt.zero_grad()
        loss = F.cross_entropy(net(xs[k]), ys[k])
        loss.backward()
        if k == nan_at:
            with torch.no_grad():
                next(net.parameters()).grad.view(-1)[0] = math.nan
        out["loss"].append(float(loss))
        opt.step()
        out["nonfinite_ends"].append(bool(opt.last_end.nonfinite))
        k += 1
    out["final"] = arena_now()
    out["final_pulled"] = opt.pulled.astype(np.float64)
    out["nonfinite"] = opt.worker.stats["nonfinite"]
    out["steps"] = k
    opt.finish()
    return out
