"""Proves (mpirun -np 3: 1 server, 2 workers) that a worker's counts agree with the steps it took,
in every mode, when one of them is non-finite: `stats` counts each step, each push and the
non-finite one, and the staleness histogram holds one entry per update pushed (a non-finite step
pushes nothing: sync used to count it, and counted no step, push or push time at all)."""
import sys

import numpy as np

import asyncps
from checks import check, failures

LIMIT = 12
layout = asyncps.Layout()
layout.add("w", [4])
for mode in asyncps.MODES:
    session = asyncps.Session(layout, mode=mode)
    if session.is_server:
        server = asyncps.ParameterServer(session, np.zeros(4, np.float32))
        server.serve()
        # (in async and ssp a worker may take no step at all: then its NaN never comes)
        n = server.job_nonfinite
        check(n == 2 if mode == "sync" else n in (1, 2), f"{mode}: job_nonfinite {n}, not one per worker")
        check(server.job_staleness["count"] == (2 * LIMIT if mode == "sync" else LIMIT) - n,
              f"{mode}: the job's staleness counts {server.job_staleness['count']} updates, {n} of the steps were NaN")
        server.close()
    else:
        p, ones, bad = np.zeros(4, np.float32), np.ones(4, np.float32), np.ones(4, np.float32)
        bad[2] = np.nan
        with asyncps.WorkerClient(session) as w:
            ends = 0
            while w.begin_step(p, LIMIT) is not None:
                e = w.end_step(bad if ends == 0 else ones, -0.1)  # each worker's first step is NaN
                check(e.nonfinite == (ends == 0), f"{mode}: step {ends} nonfinite={e.nonfinite}")
                ends += 1
            w.drain()
            st = w.stats
            if mode == "sync":
                check(ends == LIMIT, f"{mode}: {ends} rounds, not {LIMIT}")
            check(st["steps"] == ends, f"{mode}: stats counts {st['steps']} steps, the worker took {ends}")
            nan = min(ends, 1)
            check(st["nonfinite"] == nan, f"{mode}: stats counts {st['nonfinite']} non-finite steps, not {nan}")
            check(st["pushes"] == ends - nan, f"{mode}: stats counts {st['pushes']} pushes, not {ends - nan}")
            check(w.staleness["count"] == ends - nan,
                  f"{mode}: the staleness histogram holds {w.staleness['count']} updates, {ends - nan} were pushed")
            check(ends < 2 or st["push_seconds"] > 0, f"{mode}: no time counted in the pushes")
        w.close()
    session.close()
sys.exit(1 if failures else 0)
