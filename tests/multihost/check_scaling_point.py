#!/usr/bin/env python3
"""Checks the one point bench_scaling appended to FILE for the multihost test that runs it with
the server alone on one host and the workers on the other (so every pull and push crosses the
network): the figures docs/SCALING.md is built from are there and consistent.

    check_scaling_point.py FILE"""
import json
import sys

lines = [line for line in open(sys.argv[1]) if line.strip()]
if len(lines) != 1:
    sys.exit(f"FAIL: {sys.argv[1]} holds {len(lines)} points, expected 1")
p = json.loads(lines[0])
two_b = 2 * p["bytes"]
problems = []
if p["hosts"] != 2:
    problems.append(f"hosts {p['hosts']}, expected 2")
if p["steps"] < 3 * p["workers"]:
    problems.append(f"{p['steps']} steps for {p['workers']} workers (each does at least 3)")
# a pull and a push of the arena per step, plus headers and the claim; the set-up's bytes spread
# over the steps (a run this short has few)
if not two_b <= p["wire_bytes_per_step"] <= 1.10 * two_b + 8192:
    problems.append(f"{p['wire_bytes_per_step']:.0f} wire bytes per step, expected about 2B = {two_b}")
if not p["server_cpu_us_per_update"] > 0:
    problems.append("no server CPU time per update")
if not 0 < p["server_util"] <= 1.05:
    problems.append(f"server utilisation {p['server_util']}")
if not 0 < p["noncompute_us"] <= p["step_us"] * 1.001 + 1:
    problems.append(f"non-compute {p['noncompute_us']} us against a step of {p['step_us']} us")
if not p["updates_per_s"] > 0:
    problems.append("no updates per second")
if problems:
    sys.exit("FAIL: bench_scaling point: " + "; ".join(problems) + f"\n{lines[0]}")
print(f"bench_scaling point OK: {p['wire_bytes_per_step'] / two_b:.3f} x 2B on the wire, "
      f"{p['server_cpu_us_per_update']:.1f} us server CPU per update, {p['noncompute_us']:.1f} us non-compute per step")
