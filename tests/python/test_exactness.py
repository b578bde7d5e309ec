"""Proves: concurrent pushes from Python workers are never lost (as core_exactness_np4 in C++).
Each of the W workers pushes PUSHES updates of known small integers (half through push, half
through push_async) into an ARENA-float arena; every sum stays below 2^24, so the arena the
server holds at the end must equal the expected sum exactly, element by element."""
import os
import sys

import numpy as np

import asyncps

ARENA = int(os.environ.get("ASYNCPS_TEST_ARENA", 1 << 16))
PUSHES = int(os.environ.get("ASYNCPS_TEST_PUSHES", 2000))
layout = asyncps.Layout()
layout.add("arena", (ARENA,))
session = asyncps.Session(layout)
i = np.arange(ARENA)
initial = (i % 3).astype(np.float32)
increment = lambda w: ((w + 1) * (i % 5 + 1)).astype(np.float32)  # noqa: E731

if session.is_server:
    ps = asyncps.ParameterServer(session, initial)
    ps.serve()
    expect = initial.copy()
    for w in range(session.num_workers):
        expect += PUSHES * increment(w)
    got = ps.snapshot()
    wrong = int(np.count_nonzero(got != expect))
    print(f"server: {session.num_workers} workers x {PUSHES} pushes of {ARENA} floats: {wrong} elements wrong", flush=True)
    sys.exit(1 if wrong else 0)
else:
    w = asyncps.WorkerClient(session)
    grad = increment(session.worker_index)
    for k in range(PUSHES):
        if k % 2:
            w.push(grad, 1.0)
        else:
            w.wait(w.push_async(grad, 1.0))
    w.drain()
    final = np.empty(ARENA, dtype=np.float32)
    w.pull(final)  # after drain(): the final arena, the same on every worker
    expect = initial.copy()
    for v in range(session.num_workers):
        expect += PUSHES * increment(v)
    wrong = int(np.count_nonzero(final != expect))
    print(f"worker {session.worker_index}: {w.stats['pushes']} pushes; final arena {wrong} elements wrong", flush=True)
    w.finish()
    sys.exit(1 if wrong or w.stats["pushes"] != PUSHES else 0)
