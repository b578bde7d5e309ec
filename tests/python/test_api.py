"""Proves: the binding's API on 1 server + 1 worker (mpirun -np 2): layouts and options errors are
asyncps exceptions with the library's one-line messages; buffers of the wrong dtype, size,
layout or writability are clear ValueErrors (no crash, nothing sent); numpy arrays and CPU torch
tensors are used in place (zero-copy); claim_step/begin_step/end_step follow the job's limit;
a Session also takes an mpi4py communicator; servers and workers close (never collective once
serve()/finish() have freed the windows), a Session only after its server or worker, and closed
objects refuse calls. (Hostile arguments to every call: test_hostile_args.py; the lifetime rule:
test_lifetime.py.)"""
import re
import sys

import numpy as np

import asyncps

failures = []


def check(cond, what):
    if not cond:
        failures.append(what)
        print(f"FAIL: {what}", flush=True)


def raises(exc, fn, match=""):
    try:
        fn()
    except exc as e:
        if match and match not in str(e):
            failures.append(f"{exc.__name__} without '{match}': {e}")
            print(f"FAIL: message '{e}' lacks '{match}'", flush=True)
        return str(e)
    except Exception as e:  # noqa: BLE001
        failures.append(f"expected {exc.__name__}, got {type(e).__name__}: {e}")
        print(f"FAIL: expected {exc.__name__}, got {type(e).__name__}: {e}", flush=True)
        return None
    failures.append(f"expected {exc.__name__}, nothing raised")
    print(f"FAIL: expected {exc.__name__}: nothing raised ({fn})", flush=True)
    return None


# ---- Layout (local)
layout = asyncps.Layout()
check(layout.add("w", (4, 8)) == 0, "first tensor at offset 0")
check(layout.add("b", [8]) == 32, "second tensor after the first")
check(layout.size == 40 and len(layout) == 2, "size and length")
check(layout.tensor("b").shape == (8,) and layout.tensors[0].name == "w", "tensor info")
raises(asyncps.ConfigError, lambda: layout.add("w", (3,)), "w")
raises(asyncps.ConfigError, lambda: layout.add("neg", (0, 2)))
check(issubclass(asyncps.ConfigError, asyncps.Error) and issubclass(asyncps.Error, RuntimeError), "error hierarchy")
other = asyncps.Layout()
other.add("w", (4, 8))
other.add("b", (8,))
check(other.hash == layout.hash, "same layout, same hash")

# ---- the CPU level libasyncps's loops run at: one this CPU runs, the one ASYNCPS_CPU_KERNELS forces
import os  # noqa: E402

level = asyncps.cpu_kernel_level()
check(level in ("baseline", "avx2", "avx512"), f"cpu_kernel_level() names a level: {level}")
if os.environ.get("ASYNCPS_CPU_KERNELS"):
    check(level == os.environ["ASYNCPS_CPU_KERNELS"], "cpu_kernel_level() is the forced one")

# ---- the choices and defaults are the C++ library's (asyncps/option_choices.h, Options{})
check(asyncps.MODES == ("async", "sync", "ssp"), "MODES from the library's table")
check(asyncps.PULL_METHODS == ("get_accumulate", "get") and asyncps.SERVER_PROGRESS == ("auto", "poll", "wake"),
      "PULL_METHODS, SERVER_PROGRESS from the library's table")
sig = asyncps.Session.__init__.__doc__
for name, default in (("mode", "'async'"), ("stall_timeout", "60.0"), ("keep", "5"), ("wait_spin_us", "50"),
                      ("server_progress", "'auto'"), ("server_poll_us", "-1"), ("save_secs", "60.0")):
    check(re.search(r"\b%s: [\w.]+ = %s(?=[,)])" % (name, re.escape(default)), sig) is not None,
          "Session's signature shows the C++ default %s = %s" % (name, default))

# ---- option errors are raised on every rank alike (nobody hangs)
raises(asyncps.ConfigError, lambda: asyncps.Session(layout, mode="hogwild"), "Options::mode must be async, sync or ssp, got 'hogwild'")
raises(TypeError, lambda: asyncps.Session(layout, comm=42), "mpi4py intracommunicator")
# a misspelt keyword: one line naming it and the nearest valid one (not pybind11's overload dump)
for call, want in ((lambda: asyncps.Session(layout, stall_timout=5),
                    "Session: unknown keyword argument 'stall_timout' (did you mean 'stall_timeout'?)"),
                   (lambda: layout.add("c", (2,), shap=(3,)), "Layout.add: unknown keyword argument 'shap' (did you mean 'shape'?)"),
                   (lambda: asyncps.list_checkpoints(dirr="x"), "list_checkpoints: unknown keyword argument 'dirr'")):
    msg = raises(TypeError, call, want)
    check(msg is not None and "\n" not in msg, f"one line: {msg!r}")
for bad in ("yes", None, 1, 2.0):
    raises(TypeError, lambda: asyncps.abort_on_uncaught_exception(bad), "enabled must be True or False")
# a save interval or a count kept without a checkpoint directory would change nothing: refused
raises(asyncps.ConfigError, lambda: asyncps.Session(layout, save_secs=5),
       "Options::checkpoint.save_secs has no effect without Options::checkpoint.dir")
raises(asyncps.ConfigError, lambda: asyncps.Session(layout, keep=2), "Options::checkpoint.keep has no effect without")
raises(asyncps.ConfigError, lambda: asyncps.Session(layout, restore=False),
       "Options::checkpoint.restore set to start afresh has no effect without Options::checkpoint.dir")
raises(asyncps.ConfigError, lambda: asyncps.Session(layout, checkpoint_dir="/tmp/x", restart_from="/tmp/x/ckpt-1.index",
                                                     restore=False), "which contradicts Options::checkpoint.restore")
# every keyword is a row of the library's options' table (asyncps/option_table.h), typed by it:
# chunk_bytes has no line of its own in the binding
raises(asyncps.ConfigError, lambda: asyncps.Session(layout, chunk_bytes=2), "Options::chunk_bytes must be a multiple of 4 (whole floats) in [4, ")
raises(TypeError, lambda: asyncps.Session(layout, chunk_bytes="big"), "chunk_bytes")
check("chunk_bytes: int = 1048576" in sig, "Session's signature lists chunk_bytes with its C++ default")

session = asyncps.Session(layout, num_servers=1, mode="async", stall_timeout=30)
check(session.size == 2 and session.num_workers == 1, "roles")
check("Session(" in repr(session), "repr")
LIMIT = 20
if session.is_server:
    import threading
    import time

    init = np.arange(40, dtype=np.float32)
    ps = asyncps.ParameterServer(session, init)
    check(ps.shard == (0, 40), "one server holds everything")
    # serve() releases the GIL: a Python thread keeps running while it blocks (the worker
    # holds the job open for at least 0.5 s)
    ticks, stop = [], threading.Event()

    def tick():
        while not stop.is_set():
            ticks.append(time.monotonic())
            time.sleep(0.01)

    ticker = threading.Thread(target=tick)
    ticker.start()
    t0 = time.monotonic()
    ps.serve()
    t1 = time.monotonic()
    stop.set()
    ticker.join()
    inside = [t for t in ticks if t0 + 0.1 < t < t1 - 0.1]
    check(t1 - t0 > 0.5 and len(inside) > 10, f"a thread ran {len(inside)} times during serve() ({t1 - t0:.2f} s)")
    check(ps.final_step == LIMIT, f"final step {ps.final_step}")
    snap = ps.snapshot()
    check(snap.dtype == np.float32 and snap.shape == (40,), "snapshot is float32 (40,)")
    raises(ValueError, session.close, "close its ParameterServer or WorkerClient first")
    ps.close()  # (serve() freed the windows: nothing collective is left)
    check(ps.closed, "closed server")
    raises(ValueError, lambda: ps.snapshot(), "this ParameterServer is closed")
else:
    import torch

    w = asyncps.WorkerClient(session)
    params = np.zeros(40, dtype=np.float32)
    w.pull(params)
    check(np.array_equal(params, np.arange(40, dtype=np.float32)), "pull fills the array in place")
    # the bad buffers: each a ValueError naming the call, nothing sent
    m = raises(ValueError, lambda: w.pull(np.zeros(40)), "float32")
    check(m is not None and m.startswith("asyncps: WorkerClient.pull: params") and "float64" in m, f"message: {m}")
    raises(ValueError, lambda: w.pull(np.zeros(39, dtype=np.float32)), "39 elements")
    raises(ValueError, lambda: w.pull(np.zeros(80, dtype=np.float32)[::2]), "non-contiguous")
    ro = np.zeros(40, dtype=np.float32)
    ro.setflags(write=False)
    raises(ValueError, lambda: w.pull(ro), "read-only")
    raises(ValueError, lambda: w.push([0.0] * 40, 1.0), "list")
    raises(ValueError, lambda: w.push(np.zeros((5, 8), dtype=np.int32), 1.0), "int32")
    raises(ValueError, lambda: w.end_step(np.zeros(41, dtype=np.float32), 1.0), "40 elements")
    check(w.stats["pushes"] == 0 and w.stats["pulls"] == 1, f"nothing sent by the refused calls: {w.stats}")
    # 2-D C-contiguous arrays of the right size are fine; the arena does not care about shape
    ones = np.ones((5, 8), dtype=np.float32)
    w.push(ones, 0.5)
    w.pull(params)
    check(np.array_equal(params, np.arange(40, dtype=np.float32) + 0.5), "push of a 2-D array")
    # torch tensors, zero-copy both ways
    t = torch.zeros(40)
    w.pull(t)
    check(torch.equal(t, torch.arange(40, dtype=torch.float32) + 0.5), "pull into a torch tensor in place")
    g = torch.ones(40, requires_grad=True)
    w.push(g, 0.5)
    raises(ValueError, lambda: w.pull(torch.zeros(40, dtype=torch.float64)), "float64")
    # the step API and the limit
    step = w.claim_step(LIMIT)
    check(step == 1, f"first claim {step}")
    n = 1
    while True:
        s = w.begin_step(params, LIMIT)
        if s is None:
            break
        check(isinstance(s, asyncps.StepStart) and 0 < s.global_step <= LIMIT, f"step {s}")
        e = w.end_step(np.zeros(40, dtype=np.float32), -0.1)
        check(bool(e) and e.applied and not e.nonfinite, f"end_step {e}")
        n += 1
    check(n == LIMIT and w.claim_step(LIMIT) is None, f"{n} steps, then no more")
    check(w.global_step == LIMIT, "global step at the limit")
    import time

    time.sleep(0.6)  # (the server's GIL check needs serve() to last)
    w.pull(params)
    check(np.array_equal(params, np.arange(40, dtype=np.float32) + 1.0), "arena after both pushes")
    for name in ("halted", "terminated", "final_step", "job_staleness", "job_nonfinite"):  # the job's outcome
        raises(asyncps.Error, lambda: getattr(w, name), "known once finish() has ended it")
    w.finish()
    check(w.final_step == LIMIT and w.halted is False, f"after finish(): final step {w.final_step}, halted {w.halted}")
    check(w.finished, "finished")
    check(w.staleness["count"] == LIMIT - 1, f"staleness counted per step: {w.staleness}")
    raises(ValueError, session.close, "close its ParameterServer or WorkerClient first")
    w.close()  # (finish() freed the windows: nothing collective is left)
    check(w.closed, "closed worker")
    raises(ValueError, lambda: w.pull(params), "this WorkerClient is closed")
rank = session.rank
session.close()  # no server or worker left on it: frees the communicator (collective)
check(session.closed, "closed session")
raises(ValueError, lambda: session.rank, "this Session is closed")

# ---- a second session over an mpi4py communicator (asyncps was imported first: MPI is ours)
from mpi4py import MPI  # noqa: E402

comm = MPI.COMM_WORLD.Dup()
s2 = asyncps.Session(layout, comm, mode="sync")
check(s2.mode == "sync" and s2.size == comm.Get_size(), "session over an mpi4py communicator")
if s2.is_server:
    asyncps.ParameterServer(s2, np.zeros(40, dtype=np.float32)).serve()
else:
    w2 = asyncps.WorkerClient(s2)
    with w2:
        p = np.empty(40, dtype=np.float32)
        s = w2.begin_step(p, 1)
        w2.end_step(np.ones(40, dtype=np.float32), 2.0)
    check(w2.finished, "the context manager finished the worker")
comm.Free()

print(f"rank {rank}: {'PASS' if not failures else 'FAIL: ' + '; '.join(failures)}", flush=True)
sys.exit(1 if failures else 0)
