"""Proves: an uncaught exception on one rank ends every rank within seconds with one
'asyncps:' line naming the rank, instead of leaving the others waiting in a collective. Here the
server passes a float64 initial arena (a ValueError before any MPI call) while the worker is
already waiting inside WorkerClient's collective construction."""
import numpy as np

import asyncps

layout = asyncps.Layout()
layout.add("w", (1000,))
session = asyncps.Session(layout)
if session.is_server:
    asyncps.ParameterServer(session, np.zeros(1000))  # float64: ValueError, uncaught
else:
    w = asyncps.WorkerClient(session)  # would wait for the server for ever
    w.finish()
