"""Proves (mpirun -np 2: 1 server, 1 worker; no GPU needed) the device-independent parts of
asyncps.torch's GPU path (ModuleArena's host mirror, and AsyncOptimizer driving it):
  - a CPU arena's moves do nothing: params_to_device(), grads_to_host() and params_to_host() leave
    the memory and the values as they were, and the host side IS the module's memory; wait(fn) and
    grads_to_host(fn) return without calling fn (nothing runs on a device);
  - host_mirror=True on a CPU module keeps separate host buffers, page-locked when torch can pin
    memory (with CUDA) and ordinary memory otherwise (CPU-only torch: the fallback, reported); the
    host side starts as the module's parameters, and each move copies exactly its way and no other
    (a pull's write reaches the module only through params_to_device(), a backward's gradient the
    host only through grads_to_host(), a change of the module the host through params_to_host());
  - parameters of another dtype, on several devices (the CPU and 'meta'), or on a device that is
    neither the CPU nor CUDA are a ValueError starting 'asyncps:', and so are a bad host_mirror;
  - AsyncOptimizer through the mirror (the code path a CUDA module takes, run on the CPU) trains
    exactly as without it, step for step: the same losses, the same pulled parameters, the same
    weight prediction (module - pulled), the same final parameters, bit for bit, for plain SGD,
    momentum with weight prediction and a NaN gradient mid-run (not stepped, not pushed), momentum
    with the staleness correction, Adam with weight prediction (tau pinned to 1-1.5), and a model
    with BatchNorm whose running statistics are on the servers (share_buffers=True: prediction
    moves the parameters and leaves the statistics as pulled);
  - floating-point buffers the arena does not hold (BatchNorm's running statistics, buffers=False:
    the default) are named in a UserWarning; with buffers=True (test_torch_buffers.py) nothing is."""
import sys
import warnings

import numpy as np
import torch

import asyncps
import asyncps.torch
from checks import RANK, check, failures, refused
from torch_arena_jobs import CONFIGS, run_job



def net():
    torch.manual_seed(0)
    return torch.nn.Sequential(torch.nn.Linear(5, 3), torch.nn.Tanh(), torch.nn.Linear(3, 2))


MA = asyncps.torch.ModuleArena

# ---- a CPU arena: the moves do nothing, the host side is the module's memory
m = net()
a = MA(m)
check(not a.mirrored and not a.pinned and a.device.type == "cpu", f"a CPU arena has no mirror: {a!r}")
check(a.host_params_tensor is a.params_tensor and a.host_grads_tensor is a.grads_tensor, "host side = the arena")
p0, g0 = a.params.copy(), a.grads.copy()
ptrs = (a.params_tensor.data_ptr(), a.grads_tensor.data_ptr(), a.params.ctypes.data, a.grads.ctypes.data)
a.params_to_device()
a.grads_to_host()
a.params_to_host()
called = []
a.wait(lambda: called.append(1))  # (nothing runs on a device: it returns at once)
a.grads_to_host(lambda: called.append(1))
check(not called, "wait(fn) and grads_to_host(fn) on a CPU arena call nothing")
for call in (a.wait, a.grads_to_host, a.params_to_host):
    refused(TypeError, lambda: call(5), "while_waiting must be None or a callable", f"{call.__name__}(5)")
refused(TypeError, lambda: MA(5), "module must be a torch.nn.Module", "ModuleArena(5)")
# buffers the arena does not hold (BatchNorm's running statistics) are named in a warning, not
# left to be found out; a module without floating-point buffers, or one whose buffers the arena
# holds, warns nothing
with warnings.catch_warnings(record=True) as said:
    warnings.simplefilter("always")
    MA(torch.nn.Sequential(torch.nn.Linear(5, 3), torch.nn.BatchNorm1d(3)))
    MA(torch.nn.Sequential(torch.nn.Linear(5, 3), torch.nn.BatchNorm1d(3)), buffers=True)
    MA(net())
check(len(said) == 1 and "buffers (1.running_mean, 1.running_var) are not in the arena" in str(said[0].message)
      and "AsyncOptimizer(share_buffers=True) puts normalisation statistics there" in str(said[0].message),
      f"one warning naming the BatchNorm's running statistics: {[str(w.message) for w in said]}")
check(np.array_equal(a.params, p0) and np.array_equal(a.grads, g0), "the moves leave a CPU arena's values")
check(ptrs == (a.params_tensor.data_ptr(), a.grads_tensor.data_ptr(), a.params.ctypes.data, a.grads.ctypes.data),
      "the moves leave a CPU arena's memory")
check(a.params.ctypes.data == next(m.parameters()).data_ptr(), "arena.params is the module's memory")
a.check_bound()
# a parameter replaced, added or frozen after the arena was built: no longer the arena's
changes = [(lambda m: setattr(m[0], "weight", torch.nn.Parameter(torch.zeros(3, 5))), "is a new one"),
           (lambda m: m.append(torch.nn.Linear(2, 2)), "is not in the arena"),
           (lambda m: m[2].bias.requires_grad_(False), "left the module")]
for change, what in changes:
    changed = net()
    arena = MA(changed)
    arena.check_bound()
    change(changed)
    refused(ValueError, arena.check_bound, what, f"check_bound after a change ({what})")

# ---- host_mirror=True on the CPU: the device path's buffers and moves
try:
    can_pin = bool(torch.empty(4, pin_memory=True).is_pinned())
except Exception:  # noqa: BLE001
    can_pin = False
m = net()
want = torch.cat([p.detach().reshape(-1) for p in m.parameters()]).numpy().copy()
a = MA(m, host_mirror=True)
where = "pinned" if a.pinned else "ordinary host memory (torch cannot pin here)"
print(f"[rank {RANK}] host mirror on the CPU: {where}", flush=True)
check(a.mirrored and a.pinned == can_pin, f"mirror pinned {a.pinned}, torch can pin {can_pin}")
check(a.host_params_tensor.is_pinned() == a.pinned and a.host_grads_tensor.is_pinned() == a.pinned,
      "the host buffers are pinned exactly when the arena says so")
check(a.host_params_tensor.data_ptr() != a.params_tensor.data_ptr() and
      a.host_grads_tensor.data_ptr() != a.grads_tensor.data_ptr(), "separate host buffers")
check(a.params.ctypes.data == a.host_params_tensor.data_ptr() and a.grads.ctypes.data == a.host_grads_tensor.data_ptr(),
      "arena.params / arena.grads are the host buffers")
check(np.array_equal(a.params, want), "the host side starts as the module's parameters")
a.check_bound()
new = np.linspace(-1, 1, a.layout.size, dtype=np.float32)
a.params[:] = new  # as a pull would
check(np.array_equal(a.params_tensor.numpy(), want), "a write of arena.params does not reach the module by itself")
a.params_to_device()
check(np.array_equal(a.params_tensor.numpy(), new), "params_to_device() copies the whole arena to the module")
x = torch.linspace(0, 1, 20).reshape(4, 5)
a.zero_grad()
m(x).square().sum().backward()
g = a.grads_tensor.numpy().copy()
check(np.any(g != 0) and not np.any(a.grads), "backward fills the module's gradients, not the host's")
a.grads_to_host(lambda: check(False, "grads_to_host(fn) on the CPU calls fn"))
check(np.array_equal(a.grads, g), "grads_to_host() copies the whole gradient to the host")
with torch.no_grad():
    a.params_tensor.mul_(2)
check(np.array_equal(a.params, new), "a change of the module does not reach the host by itself")
a.params_to_host()
check(np.array_equal(a.params, 2 * new), "params_to_host() copies the module's parameters to the host")
a.zero_grad()
check(not np.any(a.grads_tensor.numpy()) and np.array_equal(a.grads, g), "zero_grad() zeroes the module's gradients")
check("host mirror" in repr(a), repr(a))

# ---- refused: another dtype, several devices, a device the arena does not serve, a bad host_mirror
refused(ValueError, lambda: MA(net().double()), "float32", "float64 parameters")
mixed = net()
mixed[2].bias = torch.nn.Parameter(torch.empty(2, device="meta"))
refused(ValueError, lambda: MA(mixed), "2 devices", "parameters on the CPU and on meta")
refused(ValueError, lambda: MA(net().to("meta")), "on meta", "parameters on meta")
refused(TypeError, lambda: MA(net(), host_mirror="yes"), "host_mirror must be None or a bool", "host_mirror='yes'")
refused(ValueError, lambda: asyncps.torch.AsyncOptimizer(torch.optim.SGD(mixed.parameters(), lr=0.1), mixed, steps=3),
        "2 devices", "AsyncOptimizer over parameters on two devices")

# ---- AsyncOptimizer through the mirror trains exactly as without it
for name in CONFIGS:
    plain = run_job(name, "cpu")
    mirror = run_job(name, "cpu", host_mirror=True)
    if plain is None:
        continue
    check(mirror["arena"].mirrored and not plain["arena"].mirrored, f"{name}: the runs' arenas")
    check(plain["steps"] == mirror["steps"] and plain["steps"] >= 40,
          f"{name}: steps {plain['steps']} {mirror['steps']}")
    check(plain["loss"] == mirror["loss"], f"{name}: losses differ: {plain['loss'][:4]} {mirror['loss'][:4]}")
    check(plain["loss"][-1] < plain["loss"][0], f"{name}: the loss falls: {plain['loss'][0]} -> {plain['loss'][-1]}")
    check(all(np.array_equal(p, q) for p, q in zip(plain["pulled"], mirror["pulled"])), f"{name}: pulled differ")
    check(all(np.array_equal(p, q) for p, q in zip(plain["ahead"], mirror["ahead"])), f"{name}: prediction differs")
    check(np.array_equal(plain["final"], mirror["final"]), f"{name}: final parameters differ")
    check(np.array_equal(mirror["final"], mirror["final_pulled"]), f"{name}: done: the module holds the final pull")
    predicts = name.endswith("predict")
    check(any(np.any(d != 0) for d in mirror["ahead"]) == predicts,
          f"{name}: the module is ahead of the pulled parameters {'' if predicts else 'never'}")
    nan = CONFIGS[name][3]
    check(mirror["nonfinite"] == (0 if nan is None else 1) and mirror["nonfinite_ends"] == plain["nonfinite_ends"],
          f"{name}: non-finite updates {mirror['nonfinite']}")
    check(bool(np.isfinite(mirror["final"]).all()), f"{name}: the run ends finite")
    if name.startswith("bn-"):  # prediction moves the parameters, never the shared statistics
        pf = mirror["param_floats"]
        check(len(mirror["final"]) > pf and all(not np.any(d[pf:]) for d in plain["ahead"] + mirror["ahead"]),
              f"{name}: weight prediction left the running statistics as pulled")
        check(any(np.any(d[:pf]) for d in mirror["ahead"]), f"{name}: (and moved the parameters)")

if failures:
    print(f"[rank {RANK}] {len(failures)} failure(s)", flush=True)
    sys.exit(1)
print(f"[rank {RANK}] test_torch_arena: all checks passed", flush=True)
