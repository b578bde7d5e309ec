"""asyncps.torch: a torch.nn.Module's parameters and gradients as one flat arena, without copies.

    import asyncps, asyncps.torch
    arena = asyncps.torch.ModuleArena(model)        # rebinds every parameter into one flat tensor
    session = asyncps.Session(arena.layout)
    ...
    w.pull(arena.params)                            # the parameters ARE the arena: no copy
    arena.zero_grad(); loss.backward()              # gradients accumulate into arena.grads
    w.push(arena.grads, -lr)

Every parameter's .data becomes a view of arena.params_tensor and its .grad a view of
arena.grads_tensor, both contiguous float32 on the CPU; arena.params / arena.grads are numpy
views of the same memory (what WorkerClient's calls take). The layout names the tensors as
model.named_parameters() does, in that order, so every rank that builds the same model builds the
same layout. Keep the gradients where they are: zero them with arena.zero_grad() (or
optimizer.zero_grad(set_to_none=False)); set_to_none would detach them from the arena.
"""
import torch as _torch

from . import Layout as _Layout


class ModuleArena:
    def __init__(self, module):
        named = [(n, p) for n, p in module.named_parameters() if p.requires_grad]
        if not named:
            raise ValueError("asyncps: ModuleArena: the module has no trainable parameters")
        self.layout = _Layout()
        offsets = []
        for name, p in named:
            if p.dtype != _torch.float32 or p.device.type != "cpu":
                raise ValueError(f"asyncps: ModuleArena: parameter {name} is {p.dtype} on {p.device}; "
                                 "the arena holds float32 on the CPU (model.float().cpu())")
            offsets.append(self.layout.add(name, tuple(p.shape) if p.dim() else (1,)))
        n = self.layout.size
        self.params_tensor = _torch.empty(n, dtype=_torch.float32)
        self.grads_tensor = _torch.zeros(n, dtype=_torch.float32)
        with _torch.no_grad():
            for (name, p), off in zip(named, offsets):
                k = p.numel()
                self.params_tensor[off:off + k].copy_(p.detach().reshape(-1))
                p.data = self.params_tensor[off:off + k].view_as(p)
                p.grad = self.grads_tensor[off:off + k].view_as(p)
        self.params = self.params_tensor.numpy()  # shares the memory
        self.grads = self.grads_tensor.numpy()
        self._named = named

    def zero_grad(self):
        """Zeroes every gradient in place (one memset of the arena)."""
        self.grads_tensor.zero_()

    def check_bound(self):
        """Raises ValueError if some parameter's data or grad no longer lives in the arena
        (e.g. after optimizer.zero_grad(set_to_none=True) or a .to(...) of the model)."""
        base_p, base_g = self.params_tensor.data_ptr(), self.grads_tensor.data_ptr()
        for (name, p), t in zip(self._named, self.layout.tensors):
            if p.data_ptr() != base_p + 4 * t.offset:
                raise ValueError(f"asyncps: ModuleArena: parameter {name} was moved out of the arena")
            if p.grad is None or p.grad.data_ptr() != base_g + 4 * t.offset:
                raise ValueError(f"asyncps: ModuleArena: the gradient of {name} is no longer the arena's "
                                 "(zero_grad(set_to_none=True)?): use arena.zero_grad()")

    def __repr__(self):
        return f"ModuleArena({len(self._named)} tensors, {self.layout.size} floats)"
