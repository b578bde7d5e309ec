#!/usr/bin/python3
"""The per-step overhead of the Python binding: mpirun -np 2 python_step.py [--floats 9098] [--iters 20000]

Rank 0 serves; rank 1 times, on an arena of --floats float32 (the MNIST CNN's 9,098 by default),
the same operations bench_push_pull times in C++:
  step    WorkerClient.pull + WorkerClient.push (numpy arrays, in place)
  bestep  begin_step + end_step (async: claim and pull in one wait, the push by request)
Latency = best of 3 repetitions of the mean over --iters calls. Prints one JSON line.
"""
import argparse
import json
import sys
import time

import numpy as np

import asyncps


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--floats", type=int, default=9098)
    ap.add_argument("--iters", type=int, default=20000)
    args = ap.parse_args()
    layout = asyncps.Layout()
    layout.add("arena", (args.floats,))
    session = asyncps.Session(layout)
    if session.is_server:
        asyncps.ParameterServer(session, np.zeros(args.floats, dtype=np.float32)).serve()
        return 0
    w = asyncps.WorkerClient(session)
    params = np.zeros(args.floats, dtype=np.float32)
    grad = np.full(args.floats, 1e-6, dtype=np.float32)

    def best(fn):
        out = []
        for _ in range(3):
            t0 = time.perf_counter()
            for _ in range(args.iters):
                fn()
            out.append((time.perf_counter() - t0) / args.iters * 1e6)
        return min(out)

    def step():
        w.pull(params)
        w.push(grad, -0.01)

    def bestep():
        if w.begin_step(params, 1 << 60) is not None:
            w.end_step(grad, -0.01)

    r = {"impl": "python", "floats": args.floats, "iters": args.iters, "step_us": round(best(step), 3),
         "bestep_us": round(best(bestep), 3)}
    w.finish()
    if session.worker_index == 0:
        print(json.dumps(r), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
