"""Proves (mpirun -np 3: 1 server, 2 workers) the lifetime rule of docs/PYTHON.md:
1. The natural program ends: the servers run `asyncps.ParameterServer(session, params).serve()`
   as a temporary, the workers finish (`with`), then EVERY rank does collectives of its own
   (mpi4py Barrier, allreduce) and exits 0. Nothing asyncps frees later needs the other ranks.
2. What Python is handed never dangles: snapshot() (a copy, also after serve() freed the
   windows and after the server is gone), stats, Session.layout; a pull_async buffer is kept
   alive until waited for (or finish()), then let go.
3. Dropping never blocks: a served server, a finished worker, an open Session (also from inside
   a garbage-collected cycle), an unfinished worker (main thread, while the other worker is
   still busy for 4 s; and another thread) all drop in well under 2 s; the unfinished workers are
   kept (RuntimeWarning) and finished at exit,
   where the servers' serve() returns with their updates in the arena, and every rank exits 0.
With ASYNCPS_TEST_MPI4PY_FIRST=1, mpi4py initialises MPI (thread_level "funneled") before
asyncps is imported; everything else is the same."""
import gc
import os
import sys
import threading
import time
import warnings
import weakref

import numpy as np

if os.environ.get("ASYNCPS_TEST_MPI4PY_FIRST") == "1":
    import mpi4py

    mpi4py.rc.thread_level = "funneled"
    from mpi4py import MPI

    import asyncps
else:
    import asyncps  # initialises MPI (FUNNELED)

    from mpi4py import MPI

failures = []
RANK = MPI.COMM_WORLD.Get_rank()


def check(cond, what):
    if not cond:
        failures.append(what)
        print(f"FAIL [rank {RANK}]: {what}", flush=True)


def quick(fn, what, limit=2.0):
    """fn() returns within `limit` seconds (dropping never waits for another rank)."""
    t0 = time.monotonic()
    fn()
    dt = time.monotonic() - t0
    check(dt < limit, f"{what} took {dt:.2f} s")


N = 48
layout = asyncps.Layout()
layout.add("w", (6, 8))
init = (np.arange(N, dtype=np.float32) / 8 - 3).astype(np.float32)  # (sums exact in float32)
ones = np.ones(N, np.float32)

# ---- 1. the natural program
session = asyncps.Session(layout, stall_timeout=30)
if session.is_server:
    asyncps.ParameterServer(session, init).serve()  # (the temporary is dropped right here)
else:
    with asyncps.WorkerClient(session) as w:
        w.push(ones, 1.0)
    check(w.finished, "the context manager finished the worker")
    del w
t0 = time.monotonic()
MPI.COMM_WORLD.Barrier()
total = MPI.COMM_WORLD.allreduce(RANK)
check(total == 0 + 1 + 2, f"allreduce after the job: {total}")
check(time.monotonic() - t0 < 10, "the ranks met in the Barrier at once")

# ---- 2. views and buffers
s2 = asyncps.Session(layout, stall_timeout=30)
lay = s2.layout
lay.add("extra", (3,))
check(s2.layout.size == N and lay.size == N + 3, "Session.layout is a copy")
tensors = s2.layout.tensors
if s2.is_server:
    ps = asyncps.ParameterServer(s2, init)
    early = ps.snapshot()
    MPI.COMM_WORLD.Barrier()  # (a collective of one's own between construction and serve(): the workers push after it)
    ps.serve()
    snap = ps.snapshot()  # the final shard: serve() has freed the windows
    step = ps.global_step
    job = ps.job_staleness
    skipped = ps.job_nonfinite  # (no worker pushed a non-finite update)
    snap[:] += 0  # (a copy of its own: writable)
    quick(lambda: ps.close(), "closing a served server")
    del ps
    gc.collect()
    check(np.array_equal(early, init), "the snapshot before serve()")
    check(np.array_equal(snap, init + 2 * 1.0), f"the snapshot after serve(), after the server is gone: {snap[:3]}")
    check(step == 0 and isinstance(job, dict), f"global_step after serve(): {step}")
    check(skipped == 0, f"job_nonfinite after serve(): {skipped}")
else:
    w = asyncps.WorkerClient(s2)
    MPI.COMM_WORLD.Barrier()
    buf = np.empty(N, np.float32)
    ref = weakref.ref(buf)
    t = w.pull_async(buf)
    del buf
    gc.collect()
    check(ref() is not None, "a pending pull_async buffer is kept alive")
    w.wait(t)
    gc.collect()
    check(ref() is None, "... and let go once waited for")
    buf2 = np.empty(N, np.float32)
    ref2 = weakref.ref(buf2)
    w.pull_async(buf2)
    del buf2
    w.push(ones, 1.0)
    stats = w.stats
    w.finish()
    gc.collect()
    check(ref2() is None, "finish() completes and lets go of the pull_async buffers never waited for")
    w.pull_async  # (attribute access only)
    check(stats["pushes"] == 1 and stats["pulls"] >= 1, f"stats dict: {stats}")
    # a finished worker dropped on another thread: kept, destroyed at exit (no MPI off-thread)
    box = [w]
    del w
    errors = []

    def drop():
        try:
            box.pop()
        except BaseException as e:  # noqa: BLE001
            errors.append(e)

    th = threading.Thread(target=drop)
    quick(lambda: (th.start(), th.join()), "dropping a finished worker on another thread")
    check(not errors, f"dropping on another thread raised: {errors}")
check(tensors[0].name == "w" and tensors[0].shape == (6, 8), "TensorInfo copies")
s2.close()
MPI.COMM_WORLD.Barrier()

# ---- 3. drops that must not block
tmp = asyncps.Session(layout)
quick(lambda: globals().pop("tmp"), "dropping an open Session")


class Holder:
    pass


h = Holder()
h.me = h
h.session = asyncps.Session(layout)
del h
quick(gc.collect, "collecting a cycle that holds an open Session")

s3 = asyncps.Session(layout, stall_timeout=30)
if s3.is_server:
    ps3 = asyncps.ParameterServer(s3, init)
    ps3.serve()  # returns when the workers' parked clients are finished, at their exit
    final = ps3.snapshot()
    check(np.array_equal(final, init + 1.0 + 2.0),
          f"the unfinished workers' updates are in the arena after they finished at exit: {final[:3]}")
else:
    w = asyncps.WorkerClient(s3)
    w.push(ones, 1.0 + s3.worker_index)
    if s3.worker_index == 0:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            quick(lambda: globals().pop("w"), "dropping an unfinished worker")
        text = " ".join(str(c.message) for c in caught)
        check(any(issubclass(c.category, RuntimeWarning) for c in caught) and "without finish()" in text,
              f"a RuntimeWarning for the unfinished worker: {text!r}")
    else:
        time.sleep(4)  # (had worker 0's drop finished its worker, it would have waited for this one)
        box = [w]
        del w
        th = threading.Thread(target=box.pop)
        quick(lambda: (th.start(), th.join()), "dropping an unfinished worker on another thread")
    try:
        s3.close()
        check(False, "Session.close under a parked worker must refuse")
    except ValueError as e:
        check("dropped without finish()" in str(e), f"Session.close message: {e}")

print(f"rank {RANK}: {'PASS' if not failures else 'FAIL: ' + '; '.join(failures)}", flush=True)
sys.exit(1 if failures else 0)  # (at exit: the parked workers finish, the servers' serve() returns)
