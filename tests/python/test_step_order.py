"""Proves (mpirun -np 3: 1 server, 2 workers) that begin_step and end_step are refused out of order
in every mode, before anything is sent, and that the loop then goes on to exactly `limit` steps:
  - end_step before any begin_step (in sync it used to join a round it had not waited for: the job
    hung, with no stall named);
  - a second begin_step before end_step (the claimed step's update was lost: 9 of 10 applied);
  - a second end_step of the same step (sync took it: a round with one worker's update twice);
  - and in sync and ssp, WorkerClient's own step count (claim_step, next_step), which the mode
    would not govern."""
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
            if mode != "async":  # the transport's step count: no mode applies to its loop
                for call in (lambda: w.claim_step(LIMIT), w.next_step):
                    refused(asyncps.ConfigError, call, f"Options::mode {mode} has no effect on a loop of claim_step",
                            f"{mode}: a raw step count")
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
# async with a step policy of its own (overlap, DC-ASGD): not applied by a loop of claim_step either
for keywords, named in (({"overlap": True}, "Options::overlap"), ({"dc_lambda": 0.5}, "Options::dc_lambda")):
    session = asyncps.Session(layout, **keywords)
    if session.is_server:
        asyncps.ParameterServer(session, np.zeros(4, np.float32)).serve()
    else:
        with asyncps.WorkerClient(session) as w:
            refused(asyncps.ConfigError, lambda: w.claim_step(LIMIT), named + " has no effect", f"claim_step with {named}")
            p = np.zeros(4, np.float32)
            while w.begin_step(p, LIMIT) is not None:
                w.end_step(np.ones(4, np.float32), -0.1)
        w.close()
    session.close()
sys.exit(1 if failures else 0)
