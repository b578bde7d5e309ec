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

An embedding table too large to copy (Layout.add_table) is served to the model by
TableEmbeddingBag, an nn.EmbeddingBag whose weight is an asyncps.EmbeddingTable on the servers:

    bag = asyncps.torch.TableEmbeddingBag(asyncps.EmbeddingTable(w, "ids"), mode="sum")
    out = bag(ids)                      # pulls only the rows of this batch's ids
    loss.backward()                     # the gradient of those rows, kept in the module
    bag.push(-lr)                       # push_rows: each row once, duplicates summed
"""
import torch as _torch
import torch.nn.functional as _F

from . import EmbeddingTable as _EmbeddingTable
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
    and optimizers never see the table (its optimizer is the table's: 'sgd' or 'adagrad', scale =
    -learning rate). padding_idx and max_norm are not supported.
    """

    def __init__(self, table, mode="mean", include_last_offset=False):
        super().__init__()
        if not isinstance(table, _EmbeddingTable):
            raise TypeError(f"asyncps: TableEmbeddingBag: table must be an asyncps.EmbeddingTable "
                            f"(got {type(table).__name__})")
        if mode not in ("sum", "mean", "max"):
            raise ValueError(f"asyncps: TableEmbeddingBag: mode must be 'sum', 'mean' or 'max', got {mode!r}")
        self.table, self.mode, self.include_last_offset = table, mode, bool(include_last_offset)
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
        if bag.padding_idx is not None or bag.max_norm is not None:
            raise ValueError("asyncps: TableEmbeddingBag.from_module: padding_idx and max_norm are not supported")
        return cls(table, mode=bag.mode, include_last_offset=bag.include_last_offset)

    def forward(self, input, offsets=None, per_sample_weights=None):
        if not isinstance(input, _torch.Tensor) or input.dtype not in (_torch.int64, _torch.int32):
            raise TypeError("asyncps: TableEmbeddingBag: input must be an int64 or int32 tensor of ids "
                            f"(got {getattr(input, 'dtype', type(input).__name__)})")
        if input.dim() not in (1, 2):
            raise ValueError(f"asyncps: TableEmbeddingBag: input must be 1-D (with offsets) or 2-D, "
                             f"got {input.dim()}-D")
        keys, inverse = _torch.unique(input.reshape(-1).to(_torch.int64).cpu(), return_inverse=True)
        rows = _torch.from_numpy(self.table.pull_rows(keys))  # (distinct ids, dim)
        rows.requires_grad_(_torch.is_grad_enabled())
        if rows.requires_grad:
            self._looked_up.append((keys, rows))
        return _F.embedding_bag(inverse.view(input.shape), rows, offsets, mode=self.mode,
                                per_sample_weights=per_sample_weights, include_last_offset=self.include_last_offset)

    def push(self, scale):
        """push_rows(keys, scale * gradient) for every forward since the last push or discard
        whose rows got a gradient; returns the number of rows updated (NaN/Inf in a gradient sends
        nothing for that forward: the table counts it in stats['nonfinite'])."""
        looked_up, self._looked_up = self._looked_up, []
        rows = 0
        for keys, r in looked_up:
            if r.grad is not None:
                rows += self.table.push_rows(keys, r.grad.contiguous(), scale).rows
        return rows

    def discard(self):
        """Forgets the rows looked up since the last push (nothing is sent)."""
        self._looked_up = []

    def extra_repr(self):
        return f"{self.table.name!r}, rows={self.table.rows}, dim={self.table.dim}, mode={self.mode!r}"
