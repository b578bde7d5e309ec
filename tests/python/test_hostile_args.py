"""Proves (mpirun -np 3: 1 server, 2 workers): every argument of every binding, fed hostile
values (the wrong type, float64/int32/float16/big-endian buffers, the wrong size, non-contiguous
and read-only arrays where the call writes, NaN/Inf and float32-overflowing scales, negative
and huge integers, NUL bytes, closed objects, calls from another threading.Thread and from
serve()'s tick), raises one clear Python exception whose message starts with 'asyncps:', and
nothing is sent: the arena the workers pull and the server's final snapshot are exactly what
the legitimate calls made of it (and finite). Collective constructors given a value the
library refuses raise on every rank alike. The job then ends cleanly: every rank exits 0."""
import gc
import itertools
import math
import os
import sys
import tempfile
import threading

import numpy as np

import asyncps  # before mpi4py: MPI is initialised FUNNELED by asyncps
torch_missing = False  # set where the torch cases find no torch

from mpi4py import MPI  # noqa: E402

failures = []
RANK = MPI.COMM_WORLD.Get_rank()
counts = {"refused": 0}


def fail(what):
    failures.append(what)
    print(f"FAIL [rank {RANK}]: {what}", flush=True)


def check(cond, what):
    if not cond:
        fail(what)


def refused(exc, fn, match="", what=None):
    """fn() must raise exc (or a subclass) with a message starting 'asyncps:' (and holding match)."""
    what = what or getattr(fn, "__name__", repr(fn))
    counts["refused"] += 1
    try:
        fn()
    except exc as e:
        m = str(e)
        if not m.startswith("asyncps:"):
            fail(f"{what}: {type(e).__name__} message does not start with 'asyncps:': {m!r}")
        elif match and match not in m:
            fail(f"{what}: message lacks {match!r}: {m!r}")
        if os.environ.get("ASYNCPS_TEST_VERBOSE"):
            print(f"[rank {RANK}] {what}: {type(e).__name__}: {m}", flush=True)
        return m
    except BaseException as e:  # noqa: BLE001
        fail(f"{what}: expected {getattr(exc, '__name__', exc)}, got {type(e).__name__}: {e}")
        return None
    fail(f"{what}: expected {getattr(exc, '__name__', exc)}, nothing raised")
    return None


def in_thread(fn):
    """Runs fn on another threading.Thread; returns what it raised (or None)."""
    out = []

    def run():
        try:
            fn()
            out.append(None)
        except BaseException as e:  # noqa: BLE001
            out.append(e)

    t = threading.Thread(target=run)
    t.start()
    t.join()
    return out[0]


def refused_in_thread(fn, what):
    counts["refused"] += 1
    e = in_thread(fn)
    if not isinstance(e, asyncps.ConfigError):
        fail(f"{what} from another thread: expected ConfigError, got {type(e).__name__}: {e}")
    elif not (str(e).startswith("asyncps:") and "another thread" in str(e)):
        fail(f"{what} from another thread: message {str(e)!r}")
    elif os.environ.get("ASYNCPS_TEST_VERBOSE"):
        print(f"[rank {RANK}] {what} from another thread: ConfigError: {e}", flush=True)


class FloatRaises:
    def __float__(self):
        raise RuntimeError("no float here")


class FloatNan:
    def __float__(self):
        return float("nan")


class IndexRaises:
    def __index__(self):
        raise RuntimeError("no index here")


class FakeComm:  # looks like an mpi4py communicator to a duck-typer: a bogus handle
    def py2f(self):
        return 123456


HUGE = 2**63
N = 64
layout = asyncps.Layout()
layout.add("w", (8, 4))
layout.add("b", [32])
check(layout.size == N, "layout size")
init = (np.arange(N, dtype=np.float32) * 0.5).astype(np.float32)

# ---- Layout, checkpoint functions, abort_job: local, any thread
L = asyncps.Layout
refused(TypeError, lambda: L().add(5, (3,)), "name must be a str", "add(name=5)")
refused(TypeError, lambda: L().add(b"x", (3,)), "name must be a str", "add(name=bytes)")
refused(TypeError, lambda: L().add("x", "abc"), "shape must be a sequence", "add(shape=str)")
refused(TypeError, lambda: L().add("x", 5), "shape must be a sequence", "add(shape=int)")
refused(TypeError, lambda: L().add("x", None), "shape must be a sequence", "add(shape=None)")
refused(TypeError, lambda: L().add("x", itertools.count()), "shape must be", "add(shape=endless iterator)")
refused(TypeError, lambda: L().add("x", (1.5,)), "shape[0] must be an integer", "add(shape=(1.5,))")
refused(TypeError, lambda: L().add("x", (True,)), "shape[0] must be an integer", "add(shape=(True,))")
refused(TypeError, lambda: L().add("x", (2, "3")), "shape[1] must be an integer", "add(shape=(2,'3'))")
refused(TypeError, lambda: L().add("x", (IndexRaises(),)), "shape[0] must be an integer", "add(shape=(__index__ raises,))")
refused(asyncps.ConfigError, lambda: L().add("x", (HUGE,)), "does not fit a 64-bit integer", "add(shape=(2**63,))")
refused(asyncps.ConfigError, lambda: L().add("x", (-1,)), "non-positive", "add(shape=(-1,))")
refused(asyncps.ConfigError, lambda: L().add("x", (0, 3)), "non-positive", "add(shape=(0,3))")
refused(asyncps.ConfigError, lambda: L().add("x", [1] * 33), "dimensions", "add(shape=33 dims)")
refused(asyncps.ConfigError, lambda: L().add("x", (2**31, 2**31, 2**31)), "larger than", "add(shape=2^93 floats)")
refused(asyncps.ConfigError, lambda: L().add("", (1,)), "", "add(name='')")
refused(asyncps.ConfigError, lambda: L().add("a/b", (1,)), "", "add(name='a/b')")
refused(asyncps.ConfigError, lambda: L().add("a\0b", (1,)), "", "add(name with NUL)")
refused(asyncps.ConfigError, lambda: L().add("..", (1,)), "", "add(name='..')")
refused(asyncps.ConfigError, lambda: L().add("\ud800", (1,)), "", "add(name=lone surrogate)")
refused(asyncps.ConfigError, lambda: layout.add("w", (1,)), "added twice", "add(name repeated)")
refused(TypeError, lambda: layout.tensor(5), "name must be a str", "tensor(5)")
refused(asyncps.ConfigError, lambda: layout.tensor("nope"), "no tensor named", "tensor('nope')")
check(layout.size == N and len(layout) == 2, "the refused adds changed nothing")
# views handed out are copies: a later add (which moves the tensors) leaves them intact
tmp = asyncps.Layout()
tmp.add("first", (3, 2))
infos, one = tmp.tensors, tmp.tensor("first")
for i in range(200):
    tmp.add(f"t{i}", (1,))
check(infos[0].name == "first" and infos[0].shape == (3, 2) and one.offset == 0 and one.size == 6,
      "TensorInfo objects survive later adds")
del tmp
gc.collect()
check(one.name == "first" and infos[0].size == 6, "TensorInfo objects survive their layout")

refused(TypeError, lambda: asyncps.read_checkpoint(5, layout), "index must be a path", "read_checkpoint(index=5)")
refused(asyncps.ConfigError, lambda: asyncps.read_checkpoint("a\0b", layout), "NUL", "read_checkpoint(index NUL)")
refused(TypeError, lambda: asyncps.read_checkpoint("/nonexistent", 5), "layout must be", "read_checkpoint(layout=5)")
refused(asyncps.CheckpointError, lambda: asyncps.read_checkpoint("/nonexistent/ckpt.index", layout), "",
        "read_checkpoint(missing file)")
refused(TypeError, lambda: asyncps.list_checkpoints(None), "dir must be a path", "list_checkpoints(None)")
refused(asyncps.ConfigError, lambda: asyncps.list_checkpoints("a\0b"), "NUL", "list_checkpoints(NUL)")
with tempfile.TemporaryDirectory() as d:
    refused(ValueError, lambda: asyncps.export_npy(d, layout, np.zeros(N)), "float64", "export_npy(float64)")
    refused(ValueError, lambda: asyncps.export_npy(d, layout, np.zeros(N - 1, np.float32)), "63 elements",
            "export_npy(63 floats)")
    refused(ValueError, lambda: asyncps.export_npy(d, asyncps.Layout(), np.zeros(5, np.float32)), "0 elements",
            "export_npy(empty layout, 5 floats)")
    refused(TypeError, lambda: asyncps.export_npy(d, "layout", init), "layout must be", "export_npy(layout=str)")
    refused(TypeError, lambda: asyncps.export_npy(3.5, layout, init), "dir must be a path", "export_npy(dir=3.5)")
    refused(TypeError, lambda: asyncps.export_checkpoint_npy(3.5, layout, "x.index"), "dir must be a path",
            "export_checkpoint_npy(dir=3.5)")
    refused(TypeError, lambda: asyncps.export_checkpoint_npy(d, layout, 7), "index must be a path",
            "export_checkpoint_npy(index=7)")
    refused(TypeError, lambda: asyncps.export_checkpoint_npy(d, None, "x.index"), "layout must be",
            "export_checkpoint_npy(layout=None)")
    refused(asyncps.CheckpointError, lambda: asyncps.export_checkpoint_npy(d, layout, "/nonexistent/ckpt.index"), "",
            "export_checkpoint_npy(missing index)")
refused(TypeError, lambda: asyncps.abort_job(5), "message must be a str", "abort_job(5)")
refused(TypeError, lambda: asyncps.abort_job("x", "1"), "exit_code must be an integer", "abort_job(exit_code='1')")
refused(asyncps.ConfigError, lambda: asyncps.abort_job("x", HUGE), "does not fit", "abort_job(exit_code=2**63)")

# ---- Session: every rank passes the same hostile value. What the binding refuses is refused on
# every rank before any MPI call; what the library refuses, on every rank by its agreement.
S = asyncps.Session
tables_only = asyncps.Layout()
tables_only.add_table("t", 10, 2)
bad_sessions = [
    (TypeError, lambda: S(5), "layout must be an asyncps.Layout"),
    (asyncps.ConfigError, lambda: S(layout, checkpoint_dir=""), "checkpoint_dir must not be empty"),
    (asyncps.ConfigError, lambda: S(layout, checkpoint_dir="/tmp", restart_from=""), "restart_from must not be empty"),
    (asyncps.ConfigError, lambda: S(asyncps.Layout()), "the parameter layout is empty"),
    (asyncps.ConfigError, lambda: S(tables_only), "has 1 embedding table(s) but no tensor"),
    (asyncps.ConfigError, lambda: S(layout, server_progress="poll", server_poll_us=600000, stall_timeout=2),
     "server_poll_us 600000 exceeds the heartbeat interval of Options::stall_timeout 2"),
    (TypeError, lambda: S(layout, comm=42), "mpi4py intracommunicator"),
    (TypeError, lambda: S(layout, comm=FakeComm()), "mpi4py intracommunicator"),
    (asyncps.ConfigError, lambda: S(layout, comm=MPI.COMM_NULL), "COMM_NULL"),
    (TypeError, lambda: S(layout, mode=5), "mode must be a str"),
    (asyncps.ConfigError, lambda: S(layout, mode="hogwild"), "Options::mode must be async, sync or ssp, got 'hogwild'"),
    (TypeError, lambda: S(layout, num_servers="1"), "num_servers must be an integer"),
    (TypeError, lambda: S(layout, num_servers=True), "num_servers must be an integer"),
    (TypeError, lambda: S(layout, num_servers=1.0), "num_servers must be an integer"),
    (asyncps.ConfigError, lambda: S(layout, num_servers=HUGE), "does not fit a 64-bit"),
    (asyncps.ConfigError, lambda: S(layout, num_servers=2**31), "does not fit a 32-bit"),
    (asyncps.ConfigError, lambda: S(layout, num_servers=-1), "num_servers"),
    (asyncps.ConfigError, lambda: S(layout, num_servers=0), "num_servers"),
    (asyncps.ConfigError, lambda: S(layout, num_servers=3), ""),  # S >= ranks
    (asyncps.ConfigError, lambda: S(layout, mode="ssp", staleness=-1), "staleness"),
    (TypeError, lambda: S(layout, staleness=1.5), "staleness must be an integer"),
    (TypeError, lambda: S(layout, staleness_lr=1), "staleness_lr must be True or False"),
    (asyncps.ConfigError, lambda: S(layout, staleness_lr=True, staleness_lr_power=0.0), "staleness_lr_power"),
    (asyncps.ConfigError, lambda: S(layout, staleness_lr_power=1.0), "has no effect"),
    (asyncps.ConfigError, lambda: S(layout, staleness_lr_relative=True), "staleness_lr_relative has no effect"),
    (TypeError, lambda: S(layout, staleness_lr=True, staleness_lr_relative="yes"), "staleness_lr_relative must be"),
    (TypeError, lambda: S(layout, staleness_lr=True, staleness_lr_power="1"), "staleness_lr_power must be a number"),
    (asyncps.ConfigError, lambda: S(layout, dc_lambda=float("nan")), "dc_lambda"),
    (asyncps.ConfigError, lambda: S(layout, dc_lambda=-1.0), "dc_lambda"),
    (asyncps.ConfigError, lambda: S(layout, dc_lambda=1e300), "does not fit a float32"),
    (TypeError, lambda: S(layout, dc_lambda="0"), "dc_lambda must be a number"),
    (TypeError, lambda: S(layout, dc_lambda=FloatRaises()), "dc_lambda must be a number"),
    (TypeError, lambda: S(layout, overlap=None), "overlap must be True or False"),
    (TypeError, lambda: S(layout, pull=None), "pull must be a str"),
    (asyncps.ConfigError, lambda: S(layout, pull="put"), "Options::pull"),
    (asyncps.ConfigError, lambda: S(layout, stall_timeout=float("nan")), "stall_timeout"),
    (asyncps.ConfigError, lambda: S(layout, stall_timeout=float("inf")), "stall_timeout"),
    (asyncps.ConfigError, lambda: S(layout, stall_timeout=-1), "stall_timeout"),
    (asyncps.ConfigError, lambda: S(layout, stall_timeout=0.01), "stall_timeout"),
    (asyncps.ConfigError, lambda: S(layout, stall_timeout=10**400), "does not fit a double"),
    (TypeError, lambda: S(layout, stall_timeout="60"), "stall_timeout must be a number"),
    (TypeError, lambda: S(layout, timeline=5), "timeline must be a str"),
    (asyncps.ConfigError, lambda: S(layout, timeline="a\0b"), "timeline"),
    (TypeError, lambda: S(layout, checkpoint_dir=5), "checkpoint_dir must be a path"),
    (asyncps.ConfigError, lambda: S(layout, checkpoint_dir="a\0b"), "NUL"),
    (asyncps.ConfigError, lambda: S(layout, save_secs=float("nan")), "save_secs"),
    (asyncps.ConfigError, lambda: S(layout, save_secs=-1), "save_secs"),
    (asyncps.ConfigError, lambda: S(layout, keep=0), "keep"),
    (asyncps.ConfigError, lambda: S(layout, keep=-1), "keep"),
    (asyncps.ConfigError, lambda: S(layout, keep=HUGE), "does not fit"),
    (TypeError, lambda: S(layout, restart_from=[1]), "restart_from must be a path"),
    (TypeError, lambda: S(layout, restore="yes"), "restore must be True or False"),
    (asyncps.ConfigError, lambda: S(layout, server_progress="fast"), "Options::server_progress"),
    (asyncps.ConfigError, lambda: S(layout, server_poll_us=-2), "server_poll_us"),
    (asyncps.ConfigError, lambda: S(layout, server_poll_us=2**31), "does not fit a 32-bit"),
    (asyncps.ConfigError, lambda: S(layout, server_spin_us=-1), "server_spin_us"),
    (asyncps.ConfigError, lambda: S(layout, wait_spin_us=10**7), "wait_spin_us"),
    (asyncps.ConfigError, lambda: S(layout, wait_max_sleep_us=-2), "wait_max_sleep_us"),
    (asyncps.ConfigError, lambda: S(layout, wait_max_sleep_us=2**31), "does not fit a 32-bit"),
    (TypeError, lambda: S(layout, wait_max_sleep_us=1.5), "wait_max_sleep_us must be an integer"),
    (asyncps.ConfigError, lambda: S(layout, server_progress="poll", wait_max_sleep_us=100), "has no effect"),
    (asyncps.ConfigError, lambda: S(layout, chunk_bytes=0), "chunk_bytes"),
    (asyncps.ConfigError, lambda: S(layout, chunk_bytes=-1), "chunk_bytes"),
    (asyncps.ConfigError, lambda: S(layout, chunk_bytes=2**62), "chunk_bytes"),
    (TypeError, lambda: S(layout, chunk_bytes=float("nan")), "chunk_bytes must be an integer"),
    (asyncps.ConfigError, lambda: S(asyncps.Layout()), "empty"),
]
for i, (exc, fn, match) in enumerate(bad_sessions):
    refused(exc, fn, match, f"bad Session #{i} ({match or exc.__name__})")
refused_in_thread(lambda: S(layout), "Session()")
# one rank alone with a bad option: every rank raises (that rank's message), nobody waits
refused(asyncps.ConfigError, lambda: S(layout, keep=0 if RANK == 0 else 5), "keep", "Session(keep=0 on rank 0 only)")
# a misspelt keyword on one rank alone: that rank raises its TypeError, the others the common refusal
refused((TypeError, asyncps.ConfigError) if RANK == 0 else asyncps.ConfigError,
        lambda: S(layout, **({"stall_timout": 5} if RANK == 0 else {})), "", "Session(a misspelt keyword on rank 0 only)")

session = S(layout, num_servers=1, stall_timeout=30)
check(session.size == 3 and session.num_workers == 2, "roles")
refused(asyncps.ConfigError, lambda: session.host(-1), "rank must be in [0, 3)", "host(-1)")
refused(asyncps.ConfigError, lambda: session.host(3), "rank must be in [0, 3)", "host(3)")
refused(asyncps.ConfigError, lambda: session.host(HUGE), "does not fit", "host(2**63)")
refused(TypeError, lambda: session.host("0"), "rank must be an integer", "host('0')")
refused(asyncps.ConfigError, lambda: session.describe_rank(-1), "rank must be", "describe_rank(-1)")
for name in ("rank", "is_server", "layout", "mode"):
    refused_in_thread(lambda name=name: getattr(session, name), f"Session.{name}")
refused_in_thread(session.close, "Session.close")
refused_in_thread(lambda: session.host(0), "Session.host")
check(not session.closed, "the refused close() left the session open")
copy = session.layout
copy.add("extra", (1,))
check(session.layout.size == N, "Session.layout is a copy")

# workers among themselves (to keep their hostile phase apart from their pushes)
wcomm = MPI.COMM_WORLD.Split(0 if session.is_server else 1, RANK)


def make_bad(dtype=np.float32, n=N):
    return np.zeros(n, dtype=dtype)


ro = init.copy()
ro.setflags(write=False)
bad_writable = [  # (what, value, message part)
    ("float64", make_bad(np.float64), "float64"),
    ("int32", make_bad(np.int32), "int32"),
    ("float16", make_bad(np.float16), "float16"),
    ("big-endian float32", make_bad(np.dtype(">f4")), "big-endian float32"),
    ("63 floats", make_bad(n=N - 1), "63 elements"),
    ("65 floats", make_bad(n=N + 1), "65 elements"),
    ("non-contiguous", np.zeros(2 * N, np.float32)[::2], "non-contiguous"),
    ("Fortran order", np.asfortranarray(np.zeros((8, 8), np.float32)), "non-contiguous"),
    ("read-only", ro, "read-only"),
    ("broadcast", np.broadcast_to(np.float32(0), (N,)), "read-only"),
    ("list", [0.0] * N, "list"),
    ("None", None, "NoneType"),
    ("str", "x" * N, "str"),
    ("bytes", b"\0" * (4 * N), "read-only"),
    ("0-d", np.zeros((), np.float32), "1 elements"),
    ("numpy scalar", np.float32(0), "read-only"),
]
bad_readable = [b for b in bad_writable if b[0] not in ("read-only", "broadcast", "bytes", "numpy scalar")] + [
    ("bytes of uint8", b"\0" * (4 * N), "uint8"),
    ("broadcast", np.broadcast_to(np.float32(0), (N,)), "non-contiguous"),
    ("numpy scalar", np.float32(0), "1 elements"),
]
bad_scales = [  # (what, value, exception, message part)
    ("nan", float("nan"), asyncps.ConfigError, "finite"),
    ("inf", float("inf"), asyncps.ConfigError, "finite"),
    ("-inf", -float("inf"), asyncps.ConfigError, "finite"),
    ("numpy nan", np.float64("nan"), asyncps.ConfigError, "finite"),
    ("__float__ gives nan", FloatNan(), asyncps.ConfigError, "finite"),
    ("1e300", 1e300, asyncps.ConfigError, "does not fit a float32"),
    ("10**400", 10**400, asyncps.ConfigError, "does not fit a double"),
    ("str", "1", TypeError, "scale must be a number"),
    ("None", None, TypeError, "scale must be a number"),
    ("bool", True, TypeError, "scale must be a number"),
    ("complex", 1j, TypeError, "scale must be a number"),
    ("__float__ raises", FloatRaises(), TypeError, "scale must be a number"),
]
bad_limits = [
    ("-1", -1, asyncps.ConfigError, "limit"),
    ("2**62+1", 2**62 + 1, asyncps.ConfigError, "limit"),
    ("2**63", HUGE, asyncps.ConfigError, "does not fit a 64-bit"),
    ("-2**63-1", -HUGE - 1, asyncps.ConfigError, "does not fit a 64-bit"),
    ("str", "5", TypeError, "limit must be an integer"),
    ("float", 5.0, TypeError, "limit must be an integer"),
    ("bool", True, TypeError, "limit must be an integer"),
    ("None", None, TypeError, "limit must be an integer"),
]

LIMIT = 100
if session.is_server:
    refused(TypeError, lambda: asyncps.ParameterServer(5, init), "session must be an asyncps.Session", "PS(session=5)")
    for what, value, part in bad_readable:
        refused(ValueError, lambda v=value: asyncps.ParameterServer(session, v), part, f"PS(initial={what})")
    refused(TypeError, lambda: asyncps.ParameterServer(session, init, "0"), "initial_step must be an integer",
            "PS(initial_step='0')")
    refused(asyncps.ConfigError, lambda: asyncps.ParameterServer(session, init, HUGE), "does not fit",
            "PS(initial_step=2**63)")
    refused_in_thread(lambda: asyncps.ParameterServer(session, init), "ParameterServer()")
    # the library's refusals are collective: the workers' constructors raise them too
    nan_init = init.copy()
    nan_init[5] = np.nan
    refused(asyncps.ConfigError, lambda: asyncps.ParameterServer(session, nan_init), "NaN", "PS(initial with NaN)")
    refused(asyncps.ConfigError, lambda: asyncps.ParameterServer(session, init, -1), "initial_step",
            "PS(initial_step=-1)")
    refused(asyncps.ConfigError, lambda: asyncps.WorkerClient(session), "is a server", "WorkerClient on a server")
    refused(asyncps.ConfigError, lambda: asyncps.ParameterServer(session, init), "is a worker",
            "PS on every rank (the workers refuse)")
    ps = asyncps.ParameterServer(session, init)
    check(np.array_equal(ps.snapshot(), init), "the snapshot before serve() is the initial arena")
    MPI.COMM_WORLD.Barrier()  # (the workers push nothing before it)
    refused(TypeError, lambda: ps.serve(5), "tick must be None or a callable", "serve(tick=5)")
    for name in ("snapshot", "close", "serve"):
        refused_in_thread(getattr(ps, name), f"ParameterServer.{name}")
    for name in ("global_step", "shard", "final_step", "halted", "terminated"):
        refused_in_thread(lambda name=name: getattr(ps, name), f"ParameterServer.{name}")
    refused(ValueError, session.close, "close its ParameterServer", "Session.close under an open server")

    in_tick = []

    def tick():
        if in_tick:
            return
        in_tick.append(refused(asyncps.ConfigError, ps.close, "while serve() runs", "close() from the tick"))
        in_tick.append(refused(asyncps.ConfigError, ps.serve, "tick", "serve() from the tick"))
        in_tick.append(refused(asyncps.ConfigError, session.close, "tick", "Session.close() from the tick"))
        in_tick.append(refused(asyncps.ConfigError, lambda: asyncps.WorkerClient(session), "tick",
                               "WorkerClient() from the tick"))
        in_tick.append(ps.snapshot().shape == (N,) and ps.shard == (0, N))

    ps.serve(tick)
    check(len(in_tick) == 5 and in_tick[-1] is True, f"the tick ran its checks: {in_tick}")
    check(not ps.closed, "serve() with a refused close() in its tick left the server open")
    final = ps.snapshot()
    expect = init + np.float32(2 * (1.0 + 2 * 0.5 + 0.25))
    check(np.array_equal(final, expect),
          f"the final arena is exactly the legitimate updates' (max diff {np.max(np.abs(final - expect))})")
    check(np.all(np.isfinite(final)), "the final arena is finite")
    check(ps.global_step == ps.final_step, f"global step after serve(): {ps.global_step} vs {ps.final_step}")
    refused(asyncps.Error, ps.serve, "twice", "serve() again")
    ps.close()
    refused(ValueError, ps.snapshot, "this ParameterServer is closed", "snapshot() after close()")
    refused(ValueError, lambda: ps.global_step, "this ParameterServer is closed", "global_step after close()")
    refused(ValueError, ps.serve, "this ParameterServer is closed", "serve() after close()")
    ps.close()  # (a second close does nothing)
else:
    refused(TypeError, lambda: asyncps.WorkerClient(None), "session must be an asyncps.Session", "WorkerClient(None)")
    refused_in_thread(lambda: asyncps.WorkerClient(session), "WorkerClient()")
    # the server's refusals of its own arguments still take part in the collective (no rank is
    # left waiting): the workers are told, naming the server's rank
    for what, _value, _part in bad_readable:
        refused(asyncps.ConfigError, lambda: asyncps.WorkerClient(session), "rank 0: ",
                f"WorkerClient (the server's initial={what})")
    for what in ("initial_step='0'", "initial_step=2**63"):
        refused(asyncps.ConfigError, lambda: asyncps.WorkerClient(session), "rank 0: ", f"WorkerClient (the server's {what})")
    # the servers' constructor refuses these values: every rank raises (collectively)
    refused(asyncps.ConfigError, lambda: asyncps.WorkerClient(session), "NaN", "WorkerClient (server's NaN)")
    refused(asyncps.ConfigError, lambda: asyncps.WorkerClient(session), "initial_step", "WorkerClient (step -1)")
    refused(asyncps.ConfigError, lambda: asyncps.WorkerClient(session), "is a server", "WorkerClient everywhere")
    refused(asyncps.ConfigError, lambda: asyncps.ParameterServer(session, init), "is a worker",
            "PS on a worker")
    w = asyncps.WorkerClient(session)
    MPI.COMM_WORLD.Barrier()
    before = np.empty(N, np.float32)
    w.pull(before)
    check(np.array_equal(before, init), "the first pull is the initial arena")
    step_before = w.global_step
    buf = np.empty(N, np.float32)
    ones = np.ones(N, np.float32)

    # -- buffers
    for call in ("pull", "pull_async", "load_shadow"):
        for what, value, part in bad_writable:
            refused(ValueError, lambda c=call, v=value: getattr(w, c)(v), part, f"{call}({what})")
    for what, value, part in bad_writable:
        refused(ValueError, lambda v=value: w.begin_step(v, LIMIT), part, f"begin_step({what})")
    for call in ("push", "push_async", "end_step"):
        for what, value, part in bad_readable:
            refused(ValueError, lambda c=call, v=value: getattr(w, c)(v, 1.0), part, f"{call}({what})")
    for what, value, part in bad_readable:
        refused(ValueError, lambda v=value: w.store_shadow(v), part, f"store_shadow({what})")
    try:
        import torch

        for call in ("pull", "push"):
            args = (1.0,) if call == "push" else ()
            refused(ValueError, lambda c=call: getattr(w, c)(torch.zeros(N, dtype=torch.float64), *args), "float64",
                    f"{call}(torch float64)")
            refused(ValueError, lambda c=call: getattr(w, c)(torch.zeros(N + 1), *args), f"{N + 1} elements",
                    f"{call}(torch, {N + 1} floats)")
            refused(ValueError, lambda c=call: getattr(w, c)(torch.zeros(8, 16).t(), *args), "non-contiguous",
                    f"{call}(torch, transposed)")
    except ImportError:
        torch_missing = True
        print("no torch here: its cases are not run (python3-torch: scripts/install-deps.sh --tests)", flush=True)
    # -- scales (with a good buffer: nothing may be sent)
    for call in ("push", "push_async", "end_step"):
        for what, value, exc, part in bad_scales:
            refused(exc, lambda c=call, v=value: getattr(w, c)(ones, v), part, f"{call}(scale={what})")
    # -- what only the library can see: NaN in the gradient, a product that overflows
    nan_grad = ones.copy()
    nan_grad[7] = np.nan
    refused(asyncps.ConfigError, lambda: w.push(nan_grad, 1.0), "NaN", "push(grad with NaN)")
    refused(asyncps.ConfigError, lambda: w.push_async(nan_grad, 1.0), "NaN", "push_async(grad with NaN)")
    big = np.full(N, 1e30, np.float32)
    refused(asyncps.ConfigError, lambda: w.push(big, 1e30), "nothing was sent", "push(1e30 * 1e30)")
    refused(asyncps.ConfigError, lambda: w.push_async(big, 1e30), "nothing was sent", "push_async(1e30 * 1e30)")
    # -- integers
    for what, value, exc, part in bad_limits:
        refused(exc, lambda v=value: w.claim_step(v), part, f"claim_step({what})")
        refused(exc, lambda v=value: w.begin_step(buf, v), part, f"begin_step(limit={what})")
    for what, value, exc, part in [
        ("-1", -1, asyncps.Error, "unknown"),
        ("12345", 12345, asyncps.Error, "unknown"),
        ("2**63", HUGE, asyncps.ConfigError, "does not fit"),
        ("str", "1", TypeError, "ticket must be an integer"),
        ("None", None, TypeError, "ticket must be an integer"),
    ]:
        refused(exc, lambda v=value: w.wait(v), part, f"wait({what})")
    refused(asyncps.Error, lambda: w.end_step(ones, 1.0), "without a begin_step", "end_step before begin_step")
    check(w.load_shadow(buf) is False, "no shadow on the servers yet")
    # -- every call from another thread
    t_ok = w.push_async(np.zeros(N, np.float32), 1.0)
    thread_calls = {
        "pull": lambda: w.pull(buf), "push": lambda: w.push(ones, 1.0), "push_async": lambda: w.push_async(ones, 1.0),
        "pull_async": lambda: w.pull_async(buf), "wait": lambda: w.wait(t_ok), "wait_all": w.wait_all,
        "progress": w.progress, "next_step": w.next_step, "claim_step": lambda: w.claim_step(LIMIT), "global_step": lambda: w.global_step,
        "drain": w.drain, "finish": w.finish, "finished": lambda: w.finished, "stats": lambda: w.stats,
        "worker_index": lambda: w.worker_index, "begin_step": lambda: w.begin_step(buf, LIMIT),
        "end_step": lambda: w.end_step(ones, 1.0), "request_halt": w.request_halt, "halted": lambda: w.halted,
        "terminated": lambda: w.terminated,
        "final_step": lambda: w.final_step, "staleness": lambda: w.staleness, "job_staleness": lambda: w.job_staleness,
        "job_nonfinite": lambda: w.job_nonfinite,
        "store_shadow": lambda: w.store_shadow(ones), "load_shadow": lambda: w.load_shadow(buf), "close": w.close,
        "__enter__": w.__enter__, "__exit__": lambda: w.__exit__(None, None, None),
    }
    for name, fn in thread_calls.items():
        refused_in_thread(fn, f"WorkerClient.{name}")
    check(w.progress() is None, "progress() with a push in flight returns at once")
    w.wait(t_ok)  # (a push of zeros: the arena is unchanged)
    check(not w.closed and not w.finished, "the refused close()/finish() from a thread left the worker open")
    after = np.empty(N, np.float32)
    w.pull(after)
    check(np.array_equal(after, before), "nothing the refused calls did reached the arena")
    check(w.global_step == step_before, f"no step was claimed by the refused calls ({w.global_step})")
    check(w.stats["pushes"] == 1, f"only the zero push went out: {w.stats}")
    refused(ValueError, session.close, "close its ParameterServer", "Session.close under an open worker")
    wcomm.Barrier()  # both workers' hostile phases are over

    # -- the legitimate updates: per worker 1 + 2*0.5 + 0.25
    w.push(ones, 1.0)
    w.wait(w.push_async(ones, 0.5 * 2))
    check(w.begin_step(buf, LIMIT) is not None, "a step")
    e = w.end_step(nan_grad, -0.1)
    check(e.nonfinite and not e.applied, f"a NaN gradient is not applied: {e}")
    check(w.begin_step(buf, LIMIT) is not None, "a step")
    e = w.end_step(big, 1e30)
    check(e.nonfinite and not e.applied, f"an overflowing update is not applied: {e}")
    check(w.begin_step(buf, LIMIT) is not None, "a step")
    e = w.end_step(ones, 0.25)
    check(e.applied and not e.nonfinite, f"a finite update is applied: {e}")
    w.drain()
    refused(asyncps.Error, lambda: w.push(ones, 1.0), "after drain", "push after drain()")
    final = np.empty(N, np.float32)
    w.pull(final)
    expect = init + np.float32(2 * (1.0 + 2 * 0.5 + 0.25))
    check(np.array_equal(final, expect), f"the final arena (max diff {np.max(np.abs(final - expect))})")
    check(np.all(np.isfinite(final)), "the final arena is finite")
    w.finish()
    check(w.finished, "finished")
    refused(asyncps.Error, lambda: w.pull(final), "after finish", "pull after finish()")
    refused(asyncps.Error, w.progress, "after finish", "progress after finish()")
    refused(asyncps.Error, lambda: w.push(ones, 1.0), "", "push after finish()")
    stats = w.stats
    w.close()
    check(stats["pushes"] >= 3, f"stats kept after close: {stats}")
    for name, fn in [("pull", lambda: w.pull(final)), ("push", lambda: w.push(ones, 1.0)),
                     ("claim_step", lambda: w.claim_step(1)), ("stats", lambda: w.stats),
                     ("begin_step", lambda: w.begin_step(final, 1)), ("store_shadow", lambda: w.store_shadow(ones))]:
        refused(ValueError, fn, "this WorkerClient is closed", f"{name} after close()")
    w.close()  # (a second close does nothing)
    refused(ValueError, w.__enter__, "this WorkerClient is closed", "with a closed WorkerClient")

session.close()
for name, fn in [("rank", lambda: session.rank), ("WorkerClient", lambda: asyncps.WorkerClient(session)),
                 ("ParameterServer", lambda: asyncps.ParameterServer(session, init)),
                 ("host", lambda: session.host(0))]:
    refused(ValueError, fn, "this Session is closed", f"{name} on a closed Session")
session.close()  # (a second close does nothing)

# ---- a checkpoint directory that cannot be made: every rank is refused, the option named
blocker = os.path.join(tempfile.gettempdir(), f"asyncps-hostile-file-{os.getppid()}")
if RANK == 0:
    with open(blocker, "w") as f:
        f.write("a file, not a directory\n")
MPI.COMM_WORLD.Barrier()
bad_dir = S(layout, num_servers=1, checkpoint_dir=os.path.join(blocker, "sub"))
refused(asyncps.CheckpointError,
        (lambda: asyncps.ParameterServer(bad_dir, init)) if bad_dir.is_server else (lambda: asyncps.WorkerClient(bad_dir)),
        "Options::checkpoint.dir " + os.path.join(blocker, "sub") + ": cannot create it", "checkpoint_dir under a file")
bad_dir.close()
MPI.COMM_WORLD.Barrier()
if RANK == 0:
    os.remove(blocker)
wcomm.Free()
MPI.COMM_WORLD.Barrier()
print(f"rank {RANK}: {counts['refused']} hostile calls; {'PASS' if not failures else 'FAIL: ' + '; '.join(failures)}",
      flush=True)
# every other case passed, but not all were run without torch: a skip (77), not a pass
sys.exit(1 if failures else 77 if torch_missing else 0)
