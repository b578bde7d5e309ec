"""asyncps.torch: a torch.nn.Module's parameters and gradients as one flat arena, without copies.

    import asyncps, asyncps.torch
    arena = asyncps.torch.ModuleArena(model)        # rebinds every parameter into one flat tensor
    session = asyncps.Session(arena.layout)
    ...
    w.pull(arena.params)                            # the parameters ARE the arena: no copy
    arena.params_to_device()                        # (a CUDA model: one copy of the arena to it)
    arena.zero_grad(); loss.backward()              # gradients accumulate into arena.grads_tensor
    arena.grads_to_host(w.progress)                 # (a CUDA model: one copy back, waited for)
    w.push(arena.grads, -lr)

Every parameter's .data becomes a view of arena.params_tensor and its .grad a view of
arena.grads_tensor, both contiguous float32 on the module's device (the CPU or one CUDA device).
arena.params / arena.grads are numpy views of the host side (what WorkerClient's calls take): on
the CPU the same memory as the module's, so params_to_device() and grads_to_host() do nothing; for
a module on a CUDA device two flat page-locked (pinned) host tensors, host_params_tensor and
host_grads_tensor, which those two calls copy whole, one copy each. The layout names the tensors as
model.named_parameters() does, in that order, so every rank that builds the same model builds the
same layout. Keep the gradients where they are: zero them with arena.zero_grad() (or
optimizer.zero_grad(set_to_none=False)); set_to_none would detach them from the arena.

An embedding table too large to copy (Layout.add_table) is served to the model by
TableEmbeddingBag, an nn.EmbeddingBag whose weight is an asyncps.EmbeddingTable on the servers:

    bag = asyncps.torch.TableEmbeddingBag(asyncps.EmbeddingTable(w, "ids"), mode="sum")
    out = bag(ids)                      # pulls only the rows of this batch's ids (to the ids' device)
    loss.backward()                     # the gradient of those rows, kept in the module
    bag.push(-lr)                       # push_rows: each row once, duplicates summed
"""
import math as _math
import os as _os
import warnings as _warnings

import torch as _torch
import torch.nn.functional as _F

from . import EmbeddingTable as _EmbeddingTable
from ._asyncps import _first_problem
from . import Layout as _Layout


def _check_while_waiting(call, fn):
    if fn is not None and not callable(fn):
        raise TypeError(f"asyncps: ModuleArena.{call}: while_waiting must be None or a callable taking nothing "
                        f"(a WorkerClient's progress), got {type(fn).__name__}")


def _host_buffer(n, pin, zero=False):
    """(n float32 on the host, pinned): page-locked when `pin` and torch can pin memory (it takes
    CUDA: a CPU-only torch cannot), ordinary host memory otherwise."""
    t, pinned = None, False
    if pin:
        try:
            t = _torch.empty(n, dtype=_torch.float32, pin_memory=True)
            pinned = bool(t.is_pinned())
        except Exception:  # noqa: BLE001  (a CPU-only torch: RuntimeError "Pinned memory requires CUDA")
            pass
    if t is None:
        t = _torch.empty(n, dtype=_torch.float32)
    return (t.zero_() if zero else t), pinned


class ModuleArena:
    """ModuleArena(module, host_mirror=None, buffers=False): the module's trainable parameters and
    their gradients rebound as views of two flat float32 tensors, params_tensor and grads_tensor, on
    the module's device; layout names them. arena.params / arena.grads are numpy views of the host
    side of them, the buffers WorkerClient's pull and push take.

    - buffers=True (what AsyncOptimizer(share_buffers=True) makes): the running statistics of
      the normalisation layers (BatchNorm*, InstanceNorm* with track_running_stats: running_mean
      and running_var) are in the arena too, after the parameters (arena.param_floats floats of
      parameters, then arena.buffer_floats of statistics; layout names them as named_buffers()
      does), each a view of params_tensor: the servers hold them, a pull brings them,
      checkpoints keep them. Their gradient slots stay zero: pushing their changes is the
      caller's (AsyncOptimizer pushes what the forward passes changed in them; docs/PYTHON.md,
      "Module buffers"). Other buffers (num_batches_tracked, masks, caches) stay the worker's; a
      UserWarning names the floating-point ones.
    - buffers=False (the default): every buffer stays the worker's own, and a UserWarning names
      the floating-point ones (the servers, the other workers and the checkpoints never see them).

    - A module on the CPU (host_mirror None or False): the host side is params_tensor and
      grads_tensor themselves; params_to_device(), grads_to_host() and params_to_host() do nothing.
    - A module on one CUDA device (host_mirror None or True): the host side is two more flat
      tensors, host_params_tensor and host_grads_tensor, page-locked (arena.pinned). After a pull
      into arena.params, params_to_device() copies the whole arena to the device (one copy,
      non_blocking, on the device's current stream); before a push, grads_to_host() copies the
      whole gradient to the host (one copy) and waits for it. params_to_host() copies the
      parameters back (after the module changed them on the device) and waits.
    - host_mirror=True on a CPU module keeps the separate host side too (pinned when torch can pin
      memory, ordinary memory otherwise): the CUDA path's moves, on the CPU.

    Parameters on several devices, on a device that is neither the CPU nor CUDA, or of another
    dtype than float32 are a ValueError.
    """

    def __init__(self, module, host_mirror=None, buffers=False, *, _warn=True):
        if host_mirror is not None and not isinstance(host_mirror, bool):
            raise TypeError(f"asyncps: ModuleArena: host_mirror must be None or a bool "
                            f"(got {type(host_mirror).__name__})")
        if not isinstance(buffers, bool):
            raise TypeError(f"asyncps: ModuleArena: buffers must be a bool (got {type(buffers).__name__})")
        if not isinstance(module, _torch.nn.Module):
            raise TypeError(f"asyncps: ModuleArena: module must be a torch.nn.Module (got {type(module).__name__})")
        named = [(n, p) for n, p in module.named_parameters() if p.requires_grad]
        if not named:
            raise ValueError("asyncps: ModuleArena: the module has no trainable parameters")
        # the floating-point buffers the arena holds (buffers=True), with the module that owns each
        # (to see one replaced rather than updated in place: bound())
        # buffers=True: the running statistics of the normalisation layers (BatchNorm*, InstanceNorm*
        # with track_running_stats; running_mean and running_var), each with its module (its
        # momentum; and to see one replaced rather than updated in place: check_buffers_bound()).
        # Other buffers (masks, caches, observers' ranges) are constants or the worker's own.
        shared = []
        if buffers:
            for mname, mod in module.named_modules():
                if not isinstance(mod, _torch.nn.modules.batchnorm._NormBase) or not mod.track_running_stats:
                    continue
                for leaf in ("running_mean", "running_var"):
                    b = mod._buffers.get(leaf)
                    if b is not None and b.is_floating_point() and b.numel() > 0:
                        shared.append((f"{mname}.{leaf}" if mname else leaf, b, mod, leaf))
        held = {id(b) for _, b, _, _ in shared}
        local = [n for n, b in module.named_buffers() if b is not None and b.is_floating_point() and id(b) not in held]
        if local and _warn:  # (said once, not silently)
            shown = ", ".join(local[:4]) + (f" and {len(local) - 4} more" if len(local) > 4 else "")
            if buffers:
                _warnings.warn(f"asyncps: ModuleArena: the module's floating-point buffers {shown} are not normalisation "
                               "statistics: each worker keeps its own (docs/PYTHON.md, 'Module buffers')",
                               UserWarning, stacklevel=2)
            else:
                _warnings.warn(f"asyncps: ModuleArena: the module's floating-point buffers ({shown}) are not in the arena: "
                               "each worker keeps its own, and the servers, the other workers and the checkpoints never "
                               "see them; AsyncOptimizer(share_buffers=True) puts normalisation statistics there "
                               "(docs/PYTHON.md, 'Module buffers')", UserWarning, stacklevel=2)
        for name, p in named + [(n, b) for n, b, _, _ in shared]:
            if p.dtype != _torch.float32:
                kind = "parameter" if p.requires_grad else "buffer"
                hint = "(model.float())" if kind == "parameter" else \
                    "(model.float(), or keep buffers per worker: share_buffers=False, ModuleArena(buffers=False))"
                raise ValueError(f"asyncps: ModuleArena: {kind} {name} is {p.dtype}; the arena holds float32 {hint}")
        first = {}  # each device, and the first tensor on it
        for name, p in named + [(n, b) for n, b, _, _ in shared]:
            first.setdefault(p.device, name)
        if len(first) > 1:
            where = ", ".join(f"{name} on {d}" for d, name in first.items())
            raise ValueError(f"asyncps: ModuleArena: the parameters and buffers are on {len(first)} devices ({where}); "
                             "the arena is one flat tensor on one device (model.to(device))")
        device = next(iter(first))
        if device.type not in ("cpu", "cuda"):
            raise ValueError(f"asyncps: ModuleArena: the parameters are on {device}; the arena is on the CPU "
                             "or one CUDA device")
        if host_mirror is False and device.type != "cpu":
            raise ValueError(f"asyncps: ModuleArena: host_mirror=False with the parameters on {device}: the "
                             "workers' buffers are on the host, so a module on a device needs the host mirror")
        self.device = device
        self.mirrored = device.type != "cpu" if host_mirror is None else host_mirror
        self._cuda = device.type == "cuda"
        self._event = None  # wait()'s, made at its first poll
        self.layout = _Layout()
        offsets = [self.layout.add(name, tuple(p.shape) if p.dim() else (1,)) for name, p in named]
        self.param_floats = self.layout.size
        buffer_offsets = [self.layout.add(name, tuple(b.shape) if b.dim() else (1,)) for name, b, _, _ in shared]
        n = self.layout.size
        self.buffer_floats = n - self.param_floats
        self.params_tensor = _torch.empty(n, dtype=_torch.float32, device=device)
        self.grads_tensor = _torch.zeros(n, dtype=_torch.float32, device=device)
        with _torch.no_grad():
            for (name, p), off in zip(named, offsets):
                k = p.numel()
                self.params_tensor[off:off + k].copy_(p.detach().reshape(-1))
                p.data = self.params_tensor[off:off + k].view_as(p)
                p.grad = self.grads_tensor[off:off + k].view_as(p)
            for (name, b, _, _), off in zip(shared, buffer_offsets):
                k = b.numel()
                self.params_tensor[off:off + k].copy_(b.reshape(-1))
                b.data = self.params_tensor[off:off + k].view_as(b)
        if self.mirrored:
            self.host_params_tensor, self.pinned = _host_buffer(n, pin=True)
            self.host_grads_tensor, _ = _host_buffer(n, pin=self.pinned, zero=True)
            self.host_params_tensor.copy_(self.params_tensor)  # the module's parameters on the host too
        else:
            self.host_params_tensor, self.host_grads_tensor, self.pinned = self.params_tensor, self.grads_tensor, False
        self.params = self.host_params_tensor.numpy()  # shares the memory
        self.grads = self.host_grads_tensor.numpy()
        self._named = named
        self._buffers = [(name, b, owner, leaf, off) for (name, b, owner, leaf), off in zip(shared, buffer_offsets)]
        self._module = module

    def params_to_device(self):
        """After a pull into arena.params: the whole arena to the module's device, one copy
        (non_blocking from pinned memory, queued on the device's current stream: what runs on the
        device after it sees the new parameters). Nothing on a CPU arena. arena.params must not be
        written again before the copy has run: grads_to_host(), params_to_host(), the sum of a
        loss read on the host, torch.cuda.synchronize() all wait for it."""
        if self.mirrored:
            self.params_tensor.copy_(self.host_params_tensor, non_blocking=self.pinned)

    def grads_to_host(self, while_waiting=None):
        """Before a push of arena.grads: the whole gradient to the host, one copy, waited for (as
        wait() does, with while_waiting). Nothing on a CPU arena."""
        _check_while_waiting("grads_to_host", while_waiting)
        if self.mirrored:
            self._to_host(self.host_grads_tensor, self.grads_tensor, while_waiting)

    def params_to_host(self, while_waiting=None):
        """The module's parameters (changed on the device) to arena.params, one copy, waited for (as
        wait() does, with while_waiting). Nothing on a CPU arena."""
        _check_while_waiting("params_to_host", while_waiting)
        if self.mirrored:
            self._to_host(self.host_params_tensor, self.params_tensor, while_waiting)

    def wait(self, while_waiting=None):
        """Until the module's device has run everything queued so far on its current stream (the
        backward pass, say); returns at once on a CPU arena. Without while_waiting, in the stream's
        synchronize(). With it (a callable taking nothing: a WorkerClient's progress, so that the
        pushes and pulls in flight move through MPI while the device computes), polling an event
        and calling it between polls, yielding the core after each; an exception from it leaves
        after the device is done. Anything but None or a callable is a TypeError."""
        _check_while_waiting("wait", while_waiting)
        if not self._cuda:
            return
        stream = _torch.cuda.current_stream(self.device)
        if while_waiting is None:
            stream.synchronize()
            return
        if self._event is None:
            self._event = _torch.cuda.Event()  # (no timing)
        self._event.record(stream)
        try:
            while not self._event.query():
                while_waiting()
                _os.sched_yield()
        except BaseException:  # (fn's, or a KeyboardInterrupt anywhere in the loop)
            self._event.synchronize()  # what is queued may still write the host buffers
            raise

    def _to_host(self, host, device, while_waiting=None):
        host.copy_(device, non_blocking=self.pinned)
        self.wait(while_waiting)  # (the copy was queued on this stream, after everything that computed `device`)

    def zero_grad(self):
        """Zeroes every gradient in place (one memset of the arena, on its device)."""
        self.grads_tensor.zero_()

    def check_bound(self):
        """Raises ValueError if some parameter's data or grad no longer lives in the arena
        (e.g. after optimizer.zero_grad(set_to_none=True) or a .to(...) of the model), or the
        module's trainable parameters are no longer the arena's (one replaced, added or removed)."""
        now = [(n, p) for n, p in self._module.named_parameters() if p.requires_grad]
        kept = {n: p for n, p in self._named}
        for n, p in now:  # a parameter replaced (module.weight = nn.Parameter(...)) or added since
            if kept.get(n) is not p:
                raise ValueError(f"asyncps: ModuleArena: parameter {n} is "
                                 f"{'a new one' if n in kept else 'not in the arena'}: the module's parameters "
                                 "changed after the arena was built (build it after the model is complete)")
        if len(now) != len(self._named):
            gone = sorted(set(kept) - {n for n, _ in now})
            raise ValueError(f"asyncps: ModuleArena: parameter(s) {', '.join(gone)} left the module (or were frozen) "
                             "after the arena was built")
        base_p, base_g = self.params_tensor.data_ptr(), self.grads_tensor.data_ptr()
        for (name, p), t in zip(self._named, self.layout.tensors):
            if p.data_ptr() != base_p + 4 * t.offset:
                raise ValueError(f"asyncps: ModuleArena: parameter {name} was moved out of the arena")
            if p.grad is None or p.grad.data_ptr() != base_g + 4 * t.offset:
                raise ValueError(f"asyncps: ModuleArena: the gradient of {name} is no longer the arena's "
                                 "(zero_grad(set_to_none=True)?): use arena.zero_grad()")
        self.check_buffers_bound()

    def check_buffers_bound(self, call="ModuleArena"):
        """Raises ValueError if a buffer the arena holds is no longer the module's (replaced by
        another tensor, `self.running_mean = ...`) or no longer lives in the arena (`.data` set, a
        .to(...) of the model): what the module does to it would never reach the servers."""
        base = self.params_tensor.data_ptr()
        for name, b, owner, leaf, off in self._buffers:
            if owner._buffers.get(leaf) is not b or b.data_ptr() != base + 4 * off:
                raise ValueError(f"asyncps: {call}: buffer {name} is no longer the arena's (replaced or moved, not "
                                 "updated in place): its changes would never reach the servers; update it in place, "
                                 "or keep buffers per worker (buffers=False; AsyncOptimizer(share_buffers=False))")

    def __repr__(self):
        where = "" if self.device.type == "cpu" and not self.mirrored else \
            f", on {self.device}, host mirror {'pinned' if self.pinned else 'not pinned'}"
        held = f" and {len(self._buffers)} buffers" if self._buffers else ""
        return f"ModuleArena({len(self._named)} tensors{held}, {self.layout.size} floats{where})"


class TableEmbeddingBag(_torch.nn.Module):
    """nn.EmbeddingBag(sparse=True) with its weight on the servers: an asyncps.EmbeddingTable.

    forward(input, offsets=None, per_sample_weights=None) takes what nn.EmbeddingBag takes: a 2-D
    (bags, ids per bag) integer tensor, or a 1-D one with offsets (include_last_offset as given at
    construction); the ids are the table's keys (any int64, hashed into rows). It pulls the rows of
    the distinct ids once, into a leaf tensor, and bags them with torch's own embedding_bag, so the
    output and its gradient are nn.EmbeddingBag's. backward() leaves the gradient of those rows
    here; push(scale) sends scale * gradient for every forward since the last push (one push_rows
    each: the table sums the gradients of ids that share a row) and returns the rows updated;
    discard() drops them unsent. The module has no parameters of its own: ModuleArena skips it,
    and optimizers never see the table (its optimizer is the table's: 'sgd', 'adagrad' or 'ftrl', scale =
    -learning rate). padding_idx, max_norm and scale_grad_by_freq are not supported.

    Ids on a CUDA device: the distinct ids are found there and copied to the host, their rows are
    pulled into pinned host memory and copied to the ids' device (one copy each way), where the bag
    is computed (offsets and per_sample_weights belong on that device too); push() copies the
    rows' gradient to the host (one copy) before it sends it.
    """

    def __init__(self, table, mode="mean", include_last_offset=False):
        super().__init__()
        if not isinstance(table, _EmbeddingTable):
            raise TypeError(f"asyncps: TableEmbeddingBag: table must be an asyncps.EmbeddingTable "
                            f"(got {type(table).__name__})")
        if mode not in ("sum", "mean", "max"):
            raise ValueError(f"asyncps: TableEmbeddingBag: mode must be 'sum', 'mean' or 'max', got {mode!r}")
        if not isinstance(include_last_offset, bool):
            raise TypeError(f"asyncps: TableEmbeddingBag: include_last_offset must be a bool "
                            f"(got {type(include_last_offset).__name__})")
        self.table, self.mode, self.include_last_offset = table, mode, include_last_offset
        self.embedding_dim = table.dim
        self._looked_up = []  # (distinct keys, their rows: a leaf tensor that collects the gradient)

    @classmethod
    def from_module(cls, bag, table):
        """The TableEmbeddingBag that stands in for nn.EmbeddingBag `bag` (its mode and offsets
        convention), served from `table` (whose dim must be bag's embedding_dim). bag's own weight
        is not used: the table's rows start as Layout.add_table's init says."""
        if not isinstance(bag, _torch.nn.EmbeddingBag):
            raise TypeError(f"asyncps: TableEmbeddingBag.from_module: bag must be a torch.nn.EmbeddingBag "
                            f"(got {type(bag).__name__})")
        if bag.embedding_dim != table.dim:
            raise ValueError(f"asyncps: TableEmbeddingBag.from_module: the bag's embedding_dim is "
                             f"{bag.embedding_dim}, table {table.name!r} has dim {table.dim}")
        if bag.padding_idx is not None or bag.max_norm is not None or bag.scale_grad_by_freq:
            raise ValueError("asyncps: TableEmbeddingBag.from_module: padding_idx, max_norm and scale_grad_by_freq "
                             "are not supported")
        return cls(table, mode=bag.mode, include_last_offset=bag.include_last_offset)

    def forward(self, input, offsets=None, per_sample_weights=None):
        if not isinstance(input, _torch.Tensor) or input.dtype not in (_torch.int64, _torch.int32):
            raise TypeError("asyncps: TableEmbeddingBag: input must be an int64 or int32 tensor of ids "
                            f"(got {getattr(input, 'dtype', type(input).__name__)})")
        if input.dim() not in (1, 2):
            raise ValueError(f"asyncps: TableEmbeddingBag: input must be 1-D (with offsets) or 2-D, "
                             f"got {input.dim()}-D")
        keys, inverse = _torch.unique(input.reshape(-1).to(_torch.int64), return_inverse=True)  # on the ids' device
        if input.device.type == "cpu":
            rows = _torch.from_numpy(self.table.pull_rows(keys))  # (distinct ids, dim)
        else:  # the distinct keys to the host (one copy), their rows pulled into pinned memory, to the device
            keys = keys.cpu()
            host, _ = _host_buffer(len(keys) * self.embedding_dim, pin=True)
            self.table.pull_rows(keys, out=host.numpy())
            rows = host.view(len(keys), self.embedding_dim).to(input.device, non_blocking=True)
        rows.requires_grad_(_torch.is_grad_enabled())
        if rows.requires_grad:
            self._looked_up.append((keys, rows))
        return _F.embedding_bag(inverse.view(input.shape), rows, offsets, mode=self.mode,
                                per_sample_weights=per_sample_weights, include_last_offset=self.include_last_offset)

    def push(self, scale):
        """push_rows(keys, scale * gradient) for every forward since the last push or discard
        whose rows got a gradient; returns the number of rows updated (NaN/Inf in a gradient sends
        nothing for that forward: the table counts it in stats['nonfinite']; none since the last
        push: 0). ValueError where none of the forwards has a gradient yet: push before backward
        (the forwards are kept for the next push). Where push_rows raises (a scale it refuses,
        ConfigError: nothing of that forward was sent), that forward and the later ones are kept
        for the next push; the earlier ones were sent."""
        if self._looked_up and all(r.grad is None for _, r in self._looked_up):
            raise ValueError(f"asyncps: TableEmbeddingBag.push: none of the {len(self._looked_up)} forward(s) since "
                             "the last push has a gradient yet: call backward() first (or discard() them)")
        looked_up, rows, sent = self._looked_up, 0, 0
        try:
            for keys, r in looked_up:
                if r.grad is not None:  # (on a device: one copy of the rows' gradient to the host, waited for)
                    rows += self.table.push_rows(keys, r.grad.contiguous().cpu(), scale).rows
                sent += 1
        finally:  # a push_rows that raised (a refused scale: nothing of it sent) keeps it and the rest
            self._looked_up = looked_up[sent:]
        return rows

    def discard(self):
        """Forgets the rows looked up since the last push (nothing is sent)."""
        self._looked_up = []

    def extra_repr(self):
        return f"{self.table.name!r}, rows={self.table.rows}, dim={self.table.dim}, mode={self.mode!r}"


def _corrected_momentum(mu, staleness):
    """(mu', push scale): mu^(1 + tau), mu per global step over the 1 + tau global steps between a
    worker's own, and sqrt((1 - mu') / (1 - mu)) (mnist_async's --momentum_correction staleness;
    apps/mnist_async/optimizer.h has the measurements behind the rule)."""
    tau = max(0.0, float(staleness))
    applied = mu ** (1.0 + tau)
    return applied, ((1.0 - applied) / (1.0 - mu)) ** 0.5 if mu < 1 else 1.0


class AsyncOptimizer(_torch.optim.Optimizer):
    """A torch.optim optimizer whose step() trains as an asyncps worker (Horovod's
    DistributedOptimizer, for async parameter servers): an existing loop changes its optimizer line
    and the condition of its loop.

        opt = torch.optim.SGD(net.parameters(), lr=0.01, momentum=0.9)
        opt = asyncps.torch.AsyncOptimizer(opt, net, steps=1000)      # + this line
        while not opt.done:                                           # was: for _ in range(1000)
            x, y = next_batch()
            opt.zero_grad()
            F.cross_entropy(net(x), y).backward()
            opt.step()
        # here net holds the job's final parameters (every worker's updates in)

    The constructor makes the Session (collective over MPI_COMM_WORLD, or `comm`; keyword options
    are Session's) and, on the ranks that serve ([0, num_servers)), serves until every worker is
    done and then exits the process (0; 3 if a worker halted the job): they never reach the loop.
    Pass exit_servers=False to have it return there instead (opt.is_server is then True and
    opt.done too). On a worker it pulls the parameters into the module (the module's parameters
    become one flat arena, ModuleArena: no copy); each step() runs the wrapped optimizer on this
    worker, with its state (momentum buffers, Adam's moments, its learning rate and any scheduler
    of it) kept here, and pushes what it changed, the update, to the servers (scale 1); then pulls
    the parameters of the next step (StepLoop: the mode's waits, the non-finite guard, the global
    step limit `steps`). opt.done turns True once the job has taken `steps` global steps (or a
    worker halted it): the worker has then drained and the module holds the final parameters
    (every worker's updates in); opt.finish() (or the program's end) then finishes the worker,
    collective with the servers.

    A module on a CUDA device (every parameter on the same one) trains there with the same loop:
    its arena has a pinned host mirror (ModuleArena), each pull is followed by one copy of the whole
    arena to the device (arena.params_to_device()), and the wrapped optimizer's step runs on the
    device, where the update is computed and then copied to the host in one copy to be pushed
    (the gradients stay on the device). host_mirror is ModuleArena's (True on a CPU module runs
    that path on the CPU).

    Momentum under asynchrony (mnist_async's --momentum_correction; tau is this worker's mean
    staleness, W - 1 until 20 updates are measured, 0 in sync mode):
    - "predict" (the default): weight prediction. When an optimizer group has momentum, the
      gradient is computed at the parameters predicted for when this step's update lands: the
      pulled ones plus tau times the update this worker last pushed (the other workers' tau
      pushes land meanwhile, each about as large). Between step() calls the module then holds
      the predicted parameters; opt.pulled holds the ones pulled. mu is applied as given; at
      W = 1 it is plain momentum. At W = 8 it holds momentum 0.9 close to one worker's accuracy
      where the plain rule diverged (figures: docs/CONVERGENCE.md).
    - "staleness": mu' = mu^(1 + tau), and the update pushed times sqrt((1 - mu') / (1 - mu)).
    - "none": mu as given, the gradient at the parameters pulled.
    weight_prediction=True predicts for every optimizer (Adam gains from it; refused with mode="sync").

    share_buffers=True puts the normalisation layers' running statistics (BatchNorm's running
    mean and variance) in the arena (ModuleArena's buffers=True): each step pushes, beside the
    update, what this worker's forward passes changed in them since the pull. A sync round applies
    the mean of the workers' changes; in async and ssp each change is applied as it comes, times
    min(1, 0.5 / (momentum x W)), which is 1 unless the workers' stale changes could make the
    servers' statistics oscillate (momentum 0.1: beyond 5 workers). Weight prediction leaves them
    as pulled. Refused beside staleness_lr and dc_lambda. Without it (None, the default: with a
    UserWarning naming the floating-point buffers; False: without) every buffer stays the
    worker's own, as the servers and the checkpoints never see them.
    opt.global_step is the step of the parameters pulled (for a learning-rate schedule),
    opt.worker the asyncps.WorkerClient (store_shadow, staleness, ...), opt.session the Session.
    """

    def __init__(self, optimizer, module, *, steps, momentum_correction="predict", weight_prediction=False,
                 exit_servers=True, comm=None, host_mirror=None, share_buffers=None, **session_options):
        import sys as _sys
        from . import ParameterServer as _ParameterServer
        from . import Session as _Session
        from . import WorkerClient as _WorkerClient
        # Every argument is checked on every rank, and the ranks agree before the Session: a value
        # one rank alone refuses raises on every rank (none is left waiting in the Session).
        problem = None
        try:
            if not isinstance(optimizer, _torch.optim.Optimizer):
                raise TypeError(f"asyncps: AsyncOptimizer: optimizer must be a torch.optim.Optimizer "
                                f"(got {type(optimizer).__name__})")
            if not isinstance(module, _torch.nn.Module):
                raise TypeError(f"asyncps: AsyncOptimizer: module must be a torch.nn.Module (got {type(module).__name__})")
            if isinstance(steps, bool) or not isinstance(steps, int):
                raise TypeError(f"asyncps: AsyncOptimizer: steps must be an int (got {type(steps).__name__})")
            if not isinstance(exit_servers, bool):
                raise TypeError(f"asyncps: AsyncOptimizer: exit_servers must be a bool (got {type(exit_servers).__name__})")
            if share_buffers is not None and not isinstance(share_buffers, bool):
                raise TypeError(f"asyncps: AsyncOptimizer: share_buffers must be None or a bool "
                                f"(got {type(share_buffers).__name__})")
            for opt_name in ("staleness_lr", "dc_lambda"):
                if share_buffers and session_options.get(opt_name):
                    raise ValueError(f"asyncps: AsyncOptimizer: share_buffers=True with {opt_name}: it would scale or "
                                     "compensate the running statistics' changes as if they were gradients; use one or "
                                     "the other")
            if not 1 <= steps <= 2 ** 62:
                # (checked on every rank before the Session: the step loop's limit is at most 2^62)
                raise ValueError(f"asyncps: AsyncOptimizer: steps must be a positive int, at most 2^62 (got {steps!r})")
            if momentum_correction not in ("predict", "staleness", "none"):
                raise ValueError(f"asyncps: AsyncOptimizer: momentum_correction must be 'predict', 'staleness' or "
                                 f"'none' (got {momentum_correction!r})")
            if not isinstance(weight_prediction, bool):
                raise TypeError(f"asyncps: AsyncOptimizer: weight_prediction must be a bool "
                                f"(got {type(weight_prediction).__name__})")
            if momentum_correction != "predict" and not any(g.get("momentum") for g in optimizer.param_groups):
                raise ValueError(f"asyncps: AsyncOptimizer: momentum_correction={momentum_correction!r} has no effect "
                                 f"without momentum (the wrapped {type(optimizer).__name__} has none)")
            if momentum_correction != "predict" and session_options.get("mode") == "sync":
                raise ValueError(f"asyncps: AsyncOptimizer: momentum_correction={momentum_correction!r} has no effect "
                                 "with mode='sync': a sync round's updates have no staleness to correct")
            if weight_prediction and session_options.get("mode") == "sync":
                raise ValueError("asyncps: AsyncOptimizer: weight_prediction is for async and ssp: a sync round's "
                                 "parameters do not move while it computes")
            if weight_prediction and momentum_correction == "predict" and any(
                    g.get("momentum") for g in optimizer.param_groups):
                raise ValueError("asyncps: AsyncOptimizer: weight_prediction=True has no effect with momentum and "
                                 "momentum_correction='predict' (the default), which predicts the weights already")
            # (torch.optim.Optimizer's own __init__ is not called: the wrapped optimizer holds the
            # parameter groups and the state; an LR scheduler built on this one changes the wrapped one's)
            self.optimizer = optimizer
            self.arena = ModuleArena(module, host_mirror=host_mirror, buffers=bool(share_buffers),
                                     _warn=share_buffers is not False)
            # every tensor the optimizer updates must be one of the module's: a trainable one (now the
            # arena's) or a frozen one (requires_grad False: never a gradient, so the optimizer skips
            # it, as in plain PyTorch)
            mine = {id(p) for p in module.parameters()}
            for g in optimizer.param_groups:
                for p in g["params"]:
                    if id(p) not in mine:
                        raise ValueError("asyncps: AsyncOptimizer: the optimizer updates a tensor that is not a parameter "
                                         "of the module (build it from module.parameters())")
        except Exception as e:  # noqa: BLE001  (any failure here, torch's too: the others must hear of it)
            problem = e
        agreed = _first_problem(comm, "" if problem is None else str(problem).removeprefix("asyncps: "))
        if problem is not None:
            raise problem
        if agreed:
            raise ValueError(f"asyncps: {agreed}")
        # ... and on the wrapper's own settings: every rank the same (the Session compares its options)
        ours = (f"steps={steps}, momentum_correction={momentum_correction!r}, weight_prediction={weight_prediction}, "
                f"share_buffers={bool(share_buffers)}")
        at0 = _first_problem(comm, ours).removeprefix("rank 0: ")  # (every rank gives one: rank 0's)
        agreed = _first_problem(comm, "" if ours == at0 else f"AsyncOptimizer: {ours} here, but {at0} on rank 0: every "
                                "rank must give the same steps, momentum_correction, weight_prediction and share_buffers")
        if agreed:
            raise ValueError(f"asyncps: {agreed}")
        # A parameter the loss never reached keeps grad None in plain PyTorch, and its optimizer
        # skips it (no weight decay, no momentum). Here every gradient is a view of the arena; a
        # hook on each trainable parameter notes which ones backward() reached since the last step.
        self._reached = set()
        for i, (_, p) in enumerate(self.arena._named):
            p.register_hook(lambda g, i=i: self._reached.add(i) or g)
        self.steps, self.momentum_correction = steps, momentum_correction
        self.session = _Session(self.arena.layout, comm, **session_options)
        self.is_server = self.session.is_server
        self.worker, self.server, self.last_end = None, None, None
        self.done, self._step = True, None
        if self.is_server:
            self.server = _ParameterServer(self.session, self.arena.params)  # (the module's parameters, on the host)
            self.server.serve()
            if exit_servers:
                _sys.exit(3 if self.server.halted else 0)
            return
        self.worker = _WorkerClient(self.session)
        self._mu = [g.get("momentum") for g in optimizer.param_groups]  # the momentum asked for, per group
        # The arena-sized work buffers live where the module does (its device): the update is
        # computed there and, on a device, copied to one pinned host buffer to be pushed.
        n, dev = self.arena.layout.size, self.arena.device
        self._before = _torch.empty(n, dtype=_torch.float32, device=dev)
        self._update = _torch.empty(n, dtype=_torch.float32, device=dev)
        self._update_host_tensor = _host_buffer(n, pin=self.arena.pinned)[0] if self.arena.mirrored else None
        self._update_host = None if self._update_host_tensor is None else self._update_host_tensor.numpy()
        # weight prediction: the parameters pulled, and the update this worker last pushed
        # (never in sync: a round's parameters do not move while it computes, nothing to predict)
        self._predicts = self.session.mode != "sync" and (
            weight_prediction or (momentum_correction == "predict" and any(self._mu)))
        self._pulled = _torch.empty(n, dtype=_torch.float32, device=dev) if self._predicts else None
        self._pushed = _torch.empty(n, dtype=_torch.float32, device=dev) if self._predicts else None
        self._have_pushed, self._ahead = False, False
        # the buffers (the arena's tail): their values as pulled, to push what the forwards changed,
        # times _scales_of_buffers() where each change is applied alone (async, ssp)
        self._np = self.arena.param_floats
        self._buffers_pulled = (_torch.empty(n - self._np, dtype=_torch.float32, device=dev)
                                if self.arena.buffer_floats else None)
        self._buffer_scales = self._scales_of_buffers()
        self._next()

    def _scales_of_buffers(self):
        """Each shared statistic's factor on its change (None: all 1). Sync: 1 (a round applies the
        mean). Async and ssp: min(1, 0.5 / (momentum x W)). Each change was computed from
        statistics up to W - 1 changes old, so the servers' copy follows x += m (target - x[t - W + 1]),
        which oscillates and diverges once m passes about pi / (4 W - 2) (0.1 at W = 16); at most
        0.5 / W keeps it well inside. BatchNorm's momentum None (a cumulative average) is 1."""
        W = self.session.num_workers
        if self.session.mode == "sync" or W == 1 or not self.arena.buffer_floats:
            return None
        scales = _torch.ones(self.arena.buffer_floats, dtype=_torch.float32)
        for _, b, mod, _, off in self.arena._buffers:
            m = mod.momentum if mod.momentum is not None else 0.0
            if m * W > 0.5:
                scales[off - self._np:off - self._np + b.numel()] = 0.5 / (m * W)
        return None if bool((scales == 1).all()) else scales.to(self.arena.device)

    @property
    def param_groups(self):
        return self.optimizer.param_groups

    @property
    def defaults(self):
        return self.optimizer.defaults

    @property
    def state(self):
        return self.optimizer.state

    def _run_wrapped_step(self, closure):
        """The wrapped optimizer's step, with the gradient of every parameter that backward() did not
        reach since the last step (and that nobody wrote: all zeros) set to None for it, as plain
        PyTorch leaves it, so that the optimizer skips that parameter."""
        hidden = []
        for i, (_, p) in enumerate(self.arena._named):
            if i not in self._reached and p.grad is not None and not bool(p.grad.any()):
                hidden.append((p, p.grad))
                p.grad = None
        try:
            return self.optimizer.step(closure)
        finally:
            for p, g in hidden:
                p.grad = g  # (the arena's view again)
            self._reached.clear()

    @property
    def global_step(self):
        """The global step the current parameters were pulled at (None once done)."""
        return None if self._step is None else self._step.global_step

    @property
    def pulled(self):
        """The parameters pulled for this step, as one numpy array on the host (the module's own,
        unless weight prediction moved the module to the predicted ones; with a host mirror, a
        module on a device, it is always arena.params: the prediction is made on the device)."""
        return self._pulled.numpy() if self._ahead and not self.arena.mirrored else self.arena.params

    def _staleness(self):
        if self.session.mode == "sync":
            return 0.0
        st = self.worker.staleness
        return st["mean"] if st["count"] >= 20 else float(self.session.num_workers - 1)

    def zero_grad(self, set_to_none=False):
        """Zeroes the gradients in place (they live in the arena; set_to_none would detach them)."""
        self.arena.zero_grad()

    def _next(self):
        arena = self.arena
        self._step = self.worker.begin_step(arena.params, self.steps)  # pulls into the module (its host side)
        if self._step is None:
            self.done = True
            self.worker.drain()  # every worker's updates are in
            self.worker.pull(arena.params)
            arena.params_to_device()
        else:
            self.done = False
            arena.params_to_device()  # (a module on a device: one copy of the arena; on the CPU nothing)
            if self._buffers_pulled is not None:
                self._buffers_pulled.copy_(arena.params_tensor[self._np:])
            tau = self._staleness() if self._predicts and self._have_pushed else 0.0
            self._ahead = tau > 0
            if self._ahead:  # the module to the predicted parameters: pulled + tau * (the last update)
                params = arena.params_tensor[:self._np]  # (the buffers stay as pulled)
                self._pulled.copy_(arena.params_tensor)
                params.add_(self._pushed[:self._np], alpha=tau)

    def finish(self):
        """Finishes the worker (collective with the servers' serve(); also done at exit). After
        opt.done the worker may still store_shadow() and read its statistics before it."""
        if self.worker is not None and not self.worker.finished:
            self.worker.finish()

    def _correct_momentum(self):
        """Sets each momentum group's mu' for this step; returns [(group, push scale)] of those groups."""
        if self.momentum_correction != "staleness" or not any(self._mu):
            return []
        tau = self._staleness()
        scaled = []
        for g, mu in zip(self.optimizer.param_groups, self._mu):
            if mu:
                g["momentum"], scale = _corrected_momentum(mu, tau)
                scaled.append((g, scale))
        return scaled

    def _scale_groups(self, scaled):
        """Multiplies each momentum group's part of the update by its push scale."""
        base = self.arena.params_tensor.data_ptr()
        update = self._update
        for g, scale in scaled:
            for p in g["params"]:
                off = (p.data_ptr() - base) // 4  # (ModuleArena: every parameter is a view of the arena)
                update[off:off + p.numel()].mul_(scale)

    def _update_to_push(self):
        """The update as the numpy buffer end_step takes: the arena's own memory on the CPU; on a
        device one copy of it to the pinned host buffer, waited for while the transport moves."""
        if not self.arena.mirrored:
            return self._update.numpy()
        self.arena._to_host(self._update_host_tensor, self._update, self.worker.progress)
        return self._update_host

    def step(self, closure=None):
        """One worker step: the wrapped optimizer's update of the pulled parameters, pushed; then
        the next step's parameters pulled. Returns the closure's loss, if one was given. A closure
        is refused while weights are predicted (momentum_correction="predict" with momentum, or
        weight_prediction=True): it would evaluate the gradient again at the pulled parameters,
        and the prediction would be silently lost."""
        if self.worker is None or self.done:
            raise RuntimeError("asyncps: AsyncOptimizer.step: the job is done (opt.done)" if self.worker is not None
                               else "asyncps: AsyncOptimizer.step on a server rank")
        if closure is not None and self._predicts:
            raise ValueError("asyncps: AsyncOptimizer.step(closure): the closure would compute the gradient at the "
                             "pulled parameters, not the predicted ones; weight prediction is on (momentum_correction="
                             "'predict' with momentum, or weight_prediction=True): call step() without a closure, or "
                             "pass momentum_correction='none' or 'staleness' and weight_prediction=False")
        arena = self.arena
        grads = arena.grads_tensor  # (where the module's gradients are: on its device)
        if closure is None:  # (the sum waits for the backward pass: on a device, the transport moves meanwhile)
            total = grads.sum()
            arena.wait(self.worker.progress)
        if (closure is None and not _math.isfinite(float(total))  # (one pass; the exact test only then:
                and not bool(_torch.isfinite(grads).all())):      # a sum of finite values can overflow)
            # a NaN or Inf gradient: the wrapped optimizer does not step (its momentum or moments
            # would stay NaN for good); the step ends as a non-finite update, nothing pushed
            if self._ahead:
                arena.params_tensor[:self._np].copy_(self._pulled[:self._np])
                self._ahead = False
            update = self._update_host if arena.mirrored else self._update.numpy()
            update.fill(_math.nan)  # (refused by end_step's guard whatever the gradient holds)
            self.last_end = self.worker.end_step(update, 1.0)
            self._reached.clear()
            self._next()
            return None
        if self._buffers_pulled is not None:
            arena.check_buffers_bound("AsyncOptimizer.step")
        scaled = self._correct_momentum()
        params = arena.params_tensor
        if self._ahead:  # the gradient was taken at the predicted parameters; the update is of the pulled
            params[:self._np].copy_(self._pulled[:self._np])
            self._ahead = False
        self._before.copy_(params)
        loss = self._run_wrapped_step(closure)  # updates the module's parameters in place (the arena)
        if closure is not None and self._buffers_pulled is not None:  # (the closure's forward ran just now)
            arena.check_buffers_bound("AsyncOptimizer.step")
        _torch.sub(params, self._before, out=self._update)
        if scaled:
            self._scale_groups(scaled)
        if self._buffers_pulled is not None:  # what the forwards (a closure's too) changed in the buffers, / W
            tail = self._update[self._np:]
            _torch.sub(params[self._np:], self._buffers_pulled, out=tail)
            if self._buffer_scales is not None:
                tail.mul_(self._buffer_scales)
        self.last_end = self.worker.end_step(self._update_to_push(), 1.0)  # the servers add it (non-finite: not pushed)
        if self._predicts and self.last_end.applied:  # (a swap: _update is rewritten whole next step)
            self._pushed, self._update = self._update, self._pushed
            self._have_pushed = True
        self._next()
        return loss

    def state_dict(self):
        return self.optimizer.state_dict()

    def load_state_dict(self, state):
        self.optimizer.load_state_dict(state)

    def __repr__(self):
        role = "server" if self.is_server else f"worker {self.session.worker_index}"
        return f"AsyncOptimizer({type(self.optimizer).__name__}, {role}, steps={self.steps}, done={self.done})"
