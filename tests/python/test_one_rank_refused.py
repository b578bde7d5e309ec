"""Proves (mpirun -np 3: 1 server, 2 workers): an argument the binding refuses on ONE rank of a
collective constructor (Session, ParameterServer) never leaves the other ranks waiting: that
rank raises its own error (TypeError, ValueError, ConfigError, as the binding would), every
other rank a ConfigError naming it ("rank N: ..."), and the job goes on to end cleanly."""
import sys

import numpy as np

import asyncps  # before mpi4py: MPI is initialised FUNNELED by asyncps

from mpi4py import MPI  # noqa: E402

RANK = MPI.COMM_WORLD.Get_rank()
failures = []


def expect(exc, fn, text):
    try:
        fn()
    except exc as e:
        if text not in str(e):
            failures.append(f"{text!r} not in {e}")
        return
    except Exception as e:  # noqa: BLE001
        failures.append(f"expected {exc.__name__} with {text!r}, got {type(e).__name__}: {e}")
        return
    failures.append(f"expected {exc.__name__} with {text!r}: nothing raised")


layout = asyncps.Layout()
layout.add("w", [16])
# 1. Session: a mode only rank 2 gets wrong (its own ValueError/ConfigError; the others told why)
bad_mode = "hogwild" if RANK == 2 else "async"
if RANK == 2:
    expect(Exception, lambda: asyncps.Session(layout, mode=bad_mode), "mode")
else:
    expect(asyncps.ConfigError, lambda: asyncps.Session(layout, mode=bad_mode), "rank 2: ")
# 2. Session: a wrong type on rank 1 only
if RANK == 1:
    expect(TypeError, lambda: asyncps.Session(layout, num_servers="one"), "num_servers")
else:
    # (its own message: it read "rank 1: Options::num_servers must be in [1, 65536], got 0")
    expect(asyncps.ConfigError, lambda: asyncps.Session(layout), "rank 1: Session: num_servers must be an integer")
# 3. ParameterServer: a wrong-size initial on the server; the workers hear of it
s = asyncps.Session(layout)
if s.is_server:
    expect(ValueError, lambda: asyncps.ParameterServer(s, np.zeros(15, np.float32)), "initial")
    expect(TypeError, lambda: asyncps.ParameterServer(s, np.zeros(16, np.float32), initial_step="0"), "initial_step")
else:
    # the server binding's own message (it read "initial parameters have 0 floats", "initial_step
    # must be in [0, 2^62], got -1")
    expect(asyncps.ConfigError, lambda: asyncps.WorkerClient(s), "rank 0: ParameterServer: initial must be a "
           "C-contiguous float32 buffer of 16 elements (got 15 elements)")
    expect(asyncps.ConfigError, lambda: asyncps.WorkerClient(s), "rank 0: ParameterServer: initial_step must be")
# 4. and the job still works and ends: one real round
if s.is_server:
    ps = asyncps.ParameterServer(s, np.ones(16, np.float32))
    ps.serve()
    if not np.allclose(ps.snapshot(), 1 - 0.5 * 2):
        failures.append(f"final arena {ps.snapshot()}")
else:
    w = asyncps.WorkerClient(s)
    w.push(np.ones(16, np.float32), -0.5)
    w.finish()
MPI.COMM_WORLD.Barrier()
for f in failures:
    print(f"FAIL [rank {RANK}]: {f}", flush=True)
print(f"rank {RANK}: {'ok' if not failures else 'FAILED'}", flush=True)
sys.exit(1 if failures else 0)
