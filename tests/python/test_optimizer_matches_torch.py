"""Proves (mpirun -np 2: 1 server + 1 worker, where a step is exactly the wrapped optimizer's)
that asyncps.torch.AsyncOptimizer behaves as the torch.optim optimizer it wraps, step for step,
against the same loop in plain PyTorch on the same module:
  - a frozen parameter (requires_grad_(False), still in the optimizer's groups) is accepted and
    never moves;
  - a parameter the loss never reaches keeps its value under weight decay and momentum (plain
    PyTorch leaves its grad None and skips it; the arena's zero gradient must not move it);
  - an LR scheduler (torch.optim.lr_scheduler.StepLR) built on the AsyncOptimizer changes the
    wrapped optimizer's learning rate exactly as on a plain optimizer;
and the trained parameters agree to float rounding (the server adds each update to its copy)."""
import sys

import torch

import asyncps
import asyncps.torch
from checks import check, failures

STEPS = 12


class Net(torch.nn.Module):
    def __init__(self):
        super().__init__()
        torch.manual_seed(3)
        self.used = torch.nn.Linear(6, 2)
        self.frozen = torch.nn.Parameter(torch.randn(2))
        self.unused = torch.nn.Parameter(torch.randn(5))
        self.frozen.requires_grad_(False)

    def forward(self, x):
        return self.used(x) + self.frozen


def batches():
    g = torch.Generator().manual_seed(7)
    return [(torch.randn(8, 6, generator=g), torch.randn(8, 2, generator=g)) for _ in range(STEPS)]


def make_opt(net):
    return torch.optim.SGD(net.parameters(), lr=0.05, momentum=0.9, weight_decay=0.1)


# plain PyTorch
plain = Net()
opt = make_opt(plain)
sched = torch.optim.lr_scheduler.StepLR(opt, step_size=4, gamma=0.5)
lrs_plain = []
for x, y in batches():
    opt.zero_grad()
    torch.nn.functional.mse_loss(plain(x), y).backward()
    opt.step()
    sched.step()
    lrs_plain.append(opt.param_groups[0]["lr"])

# the same through asyncps
net = Net()
start_unused, start_frozen = net.unused.detach().clone(), net.frozen.detach().clone()
aopt = asyncps.torch.AsyncOptimizer(make_opt(net), net, steps=STEPS, momentum_correction="none", exit_servers=False)
if not aopt.is_server:
    asched = torch.optim.lr_scheduler.StepLR(aopt, step_size=4, gamma=0.5)
    lrs = []
    data = batches()
    k = 0
    while not aopt.done:
        x, y = data[k]
        aopt.zero_grad()
        torch.nn.functional.mse_loss(net(x), y).backward()
        aopt.step()
        asched.step()
        lrs.append(aopt.optimizer.param_groups[0]["lr"])
        k += 1
    check(k == STEPS, f"{k} steps on the one worker")
    check(lrs == lrs_plain, f"StepLR on the AsyncOptimizer: {lrs} == plain {lrs_plain}")
    check(torch.equal(net.frozen.detach(), start_frozen) and torch.equal(plain.frozen.detach(), start_frozen),
          "the frozen parameter never moves")
    check(torch.equal(net.unused.detach(), start_unused),
          f"the unused parameter keeps its value under weight decay and momentum: moved by "
          f"{float((net.unused.detach() - start_unused).abs().max())}")
    check(torch.equal(plain.unused.detach(), start_unused), "(plain PyTorch leaves it too)")
    for name in ("weight", "bias"):
        a, b = getattr(net.used, name).detach(), getattr(plain.used, name).detach()
        check(torch.allclose(a, b, rtol=1e-5, atol=1e-6), f"used.{name} as in plain PyTorch: max diff "
                                                          f"{float((a - b).abs().max())}")
    aopt.finish()
print(f"{'PASS' if not failures else 'FAIL: ' + '; '.join(failures)}", flush=True)
sys.exit(1 if failures else 0)
