"""A Ctrl-C (SIGINT) that reaches a server while it waits in serve() (the GIL released, no tick)
ends the job at once: serve() raises KeyboardInterrupt within 50 ms, and the uncaught-exception
hook ends every rank with one line. The worker would step for a billion steps: a SIGINT left
pending until serve() returned would show as a run past the test's limit.
Run: mpirun -np 2 python test_sigint_in_serve.py (1 server, 1 worker)."""
import os
import signal
import threading
import time

import numpy as np

import asyncps

layout = asyncps.Layout()
layout.add("w", [64])
session = asyncps.Session(layout)
if session.is_server:
    # (a thread of this process signals it: Python runs its handler in the main thread, which
    # is inside serve() with the GIL released)
    threading.Timer(2.0, lambda: os.kill(os.getpid(), signal.SIGINT)).start()
    asyncps.ParameterServer(session, np.zeros(64, dtype=np.float32)).serve()
    print("serve() returned: the interrupt waited for the job's end", flush=True)
else:
    params, grad = np.zeros(64, dtype=np.float32), np.full(64, 1e-6, dtype=np.float32)
    with asyncps.WorkerClient(session) as w:
        while w.begin_step(params, 10**9) is not None:
            w.end_step(grad, -1.0)
            time.sleep(0.001)
