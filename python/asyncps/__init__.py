"""asyncps: the parameter server of libasyncps for NumPy and PyTorch models.

Hogwild-style asynchronous SGD over MPI-3 one-sided communication, within one host or across
hosts. Ranks [0, num_servers) hold the parameters; the others are workers that pull them, compute
a gradient with their own model code and push the update, without the servers taking part.

    import asyncps                      # initialises MPI (before mpi4py, if you use it)
    layout = asyncps.Layout(); layout.add("w", (784, 10)); layout.add("b", (10,))
    session = asyncps.Session(layout, num_servers=1, mode="async")
    if session.is_server:
        asyncps.ParameterServer(session, initial_params).serve()
    else:
        with asyncps.WorkerClient(session) as w:
            while (step := w.begin_step(params, 1000)) is not None:   # pulls into params
                grad[:] = ...                                          # your model
                w.end_step(grad, -lr)                                  # arena += -lr * grad

Buffers are C-contiguous float32 arrays of layout.size elements (numpy, the buffer protocol, CPU
torch tensors), used in place. Calls that may wait for another rank release the GIL; only the
thread that imported asyncps may call it (others get ConfigError). serve() and finish() free the
windows at the job's end; dropping an object never runs a collective (an unfinished worker is
kept and finished at exit). asyncps.torch maps a torch.nn.Module's parameters and gradients onto
one arena, and serves an nn.EmbeddingBag's rows from an EmbeddingTable (Layout.add_table: rows
sharded across the servers, pulled and pushed a few at a time by key). See docs/PYTHON.md.
"""
import atexit as _atexit
import os as _os
import sys as _sys

# Open MPI loads its components with dlopen and they need libmpi's symbols: make them global.
_flags = _sys.getdlopenflags()
_sys.setdlopenflags(_flags | _os.RTLD_GLOBAL)
try:
    from . import _asyncps
finally:
    _sys.setdlopenflags(_flags)

from ._asyncps import (  # noqa: E402
    CheckpointError,
    ConfigError,
    EmbeddingGroup,
    EmbeddingTable,
    Error,
    Layout,
    MpiError,
    ParameterServer,
    RowPush,
    Session,
    StallError,
    StepEnd,
    StepStart,
    SummaryWriter,
    TableInfo,
    TensorInfo,
    WorkerClient,
    abort_job,
    cpu_kernel_level,
    export_checkpoint_npy,
    export_npy,
    list_checkpoints,
    read_checkpoint,
    MODES,
    PULL_METHODS,
    SERVER_PROGRESS,
    __version__,
)

__all__ = [
    "CheckpointError", "ConfigError", "EmbeddingGroup", "EmbeddingTable", "Error", "Layout", "MpiError", "ParameterServer", "RowPush",
    "Session", "StallError", "StepEnd", "StepStart", "SummaryWriter", "TableInfo", "TensorInfo", "WorkerClient", "abort_job", "cpu_kernel_level", "export_checkpoint_npy", "export_npy", "list_checkpoints",
    "read_checkpoint", "abort_on_uncaught_exception", "MODES", "PULL_METHODS", "SERVER_PROGRESS", "__version__",
]

# A call pybind11 cannot match (a misspelt keyword, a wrong type) raises a one-line TypeError
# naming the keyword and the nearest valid one, not pybind11's multi-line dump of overloads.
from ._keywords import one_line_type_errors as _one_line_type_errors  # noqa: E402

_one_line_type_errors(globals(), __all__)

# MPI_Init_thread(MPI_THREAD_FUNNELED) unless MPI is already up (mpi4py imported first: then
# set mpi4py.rc.thread_level = "funneled", as Open MPI's pt2pt one-sided component, the one that
# works between hosts without RDMA, refuses MPI_THREAD_MULTIPLE). Only this (the importing) thread
# may call asyncps.
_asyncps._init_mpi()
# At exit: close every live or kept (dropped unfinished) Session, server and worker in reverse
# order of creation (the same on every rank, so their collective parts match), then MPI_Finalize
# if we initialised MPI.
_atexit.register(_asyncps._finalize)


def _message(exc):
    text = str(exc)
    text = text[len("asyncps: "):] if text.startswith("asyncps: ") else text
    if isinstance(exc, Error):
        return text
    if not text:  # (KeyboardInterrupt, a bare raise of a class: no message of their own)
        text = "interrupted (SIGINT or Ctrl-C)" if isinstance(exc, KeyboardInterrupt) else "(no message)"
    return f"uncaught {type(exc).__name__}: {text}"


_previous_hook = _sys.excepthook


def _abort_on_uncaught(exc_type, exc, tb):
    # The traceback first, then one 'asyncps:' line naming this rank, and every rank ends:
    # the other ranks never wait for one that died (they may be inside a collective with it).
    _previous_hook(exc_type, exc, tb)
    _sys.stderr.flush()
    abort_job(_message(exc), 1)


def abort_on_uncaught_exception(enabled=True):
    """On by default: an uncaught exception on any rank prints its traceback and one
    'asyncps: ... [rank R of N on HOST]' line, then ends every rank of the job (MPI_Abort)
    instead of leaving the others waiting. False restores the previous sys.excepthook. Anything
    but True or False is a TypeError."""
    if not isinstance(enabled, bool):
        raise TypeError(f"asyncps: abort_on_uncaught_exception: enabled must be True or False, got {enabled!r}")
    _sys.excepthook = _abort_on_uncaught if enabled else _previous_hook


abort_on_uncaught_exception(True)
