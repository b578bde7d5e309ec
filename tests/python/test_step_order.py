"""Proves (mpirun -np 3: 1 server, 2 workers) that begin_step and end_step are refused out of order
in every mode, before anything is sent, and that the loop then goes on to exactly `limit` steps:
  - end_step before any begin_step (in sync it used to join a round it had not waited for: the job
    hung, with no stall named);
  - a second begin_step before end_step (the claimed step's update was lost: 9 of 10 applied);
  - a second end_step of the same step (sync took it: a round with one worker's update twice)."""
import sys

import numpy as np

import asyncps
from checks import check, failures, refused

LIMIT = 10
layout = asyncps.Layout()
layout.add("w", [4])
for mode in asyncps.MODES:
    session = asyncps.Session(layout, mode=mode)
    if session.is_server:
        server = asyncps.ParameterServer(session, np.zeros(4, np.float32))
        server.serve()
        check(server.final_step == LIMIT, f"{mode}: the job took {server.final_step} global steps, not {LIMIT}")
        server.close()
    else:
        p, ones = np.zeros(4, np.float32), np.ones(4, np.float32)
        with asyncps.WorkerClient(session) as w:
            refused(asyncps.Error, lambda: w.end_step(ones, -0.1), "without a begin_step", f"{mode}: end_step first")
            step = w.begin_step(p, LIMIT)
            check(step is not None, f"{mode}: the first begin_step returned no step")
            refused(asyncps.Error, lambda: w.begin_step(p, LIMIT), "before end_step", f"{mode}: begin_step twice")
            w.end_step(ones, -0.1)
            refused(asyncps.Error, lambda: w.end_step(ones, -0.1), "without a begin_step", f"{mode}: end_step twice")
            while w.begin_step(p, LIMIT) is not None:
                w.end_step(ones, -0.1)
            w.drain()
            check(w.global_step == LIMIT, f"{mode}: the worker saw {w.global_step} global steps, not {LIMIT}")
        w.close()
    session.close()
sys.exit(1 if failures else 0)
