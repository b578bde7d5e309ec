"""Proves (mpirun -np 4) that two Sessions on the two halves of one MPI_Comm_split, created at the
same moment on one node, train apart: each ends at its own exact result. Under Open MPI 4 their
windows' shared-memory files had one name (open-mpi/ompi#9492): the jobs silently shared their
parameters, or MPI_Win_allocate failed, in about half the runs (WindowCreationLock). Five rounds."""
import sys

import numpy as np

import asyncps
from checks import check, failures
from mpi4py import MPI  # noqa: E402  (after asyncps: MPI is initialised by it)

WORLD = MPI.COMM_WORLD
RANK = WORLD.Get_rank()
layout = asyncps.Layout()
layout.add("w", [64])
color = RANK % 2
for round_ in range(5):
    sub = WORLD.Split(color, RANK)
    init, steps = 100.0 * (color + 1), 3 + color
    WORLD.Barrier()  # both halves create their windows at once
    session = asyncps.Session(layout, sub)
    if session.is_server:
        server = asyncps.ParameterServer(session, np.full(64, init, np.float32))
        server.serve()
        final = server.snapshot()
        check(np.all(final == init - steps), f"round {round_}, job {color}: ended at {final[:3]}..., not {init - steps}")
        server.close()
    else:
        p = np.zeros(64, np.float32)
        with asyncps.WorkerClient(session) as w:
            w.pull(p)
            check(np.all(p == init), f"round {round_}, job {color}: first pull {p[:3]}..., not {init}")
            while w.begin_step(p, steps) is not None:
                w.end_step(np.ones(64, np.float32), -1.0)
        w.close()
    session.close()
    sub.Free()
sys.exit(1 if failures else 0)
