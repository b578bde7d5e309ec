#!/usr/bin/env python3
"""Checks a --timeline file (Chrome trace-event JSON): it parses, names every rank's process,
and holds the spans each role must have recorded, with sane times.

Usage: check_timeline.py FILE RANKS SERVERS
"""
import json
import sys

path, ranks, servers = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
doc = json.load(open(path))
events = doc["traceEvents"]
names = {e["pid"]: e["args"]["name"] for e in events if e.get("ph") == "M" and e["name"] == "process_name"}
assert sorted(names) == list(range(ranks)), f"process names for ranks {sorted(names)}, want 0..{ranks - 1}"
spans = {}
for e in events:
    if e.get("ph") != "X":
        continue
    assert e["dur"] >= 0 and e["ts"] >= -1e6, f"bad span {e}"
    spans.setdefault(e["pid"], {}).setdefault(e["name"], []).append(e)
for r in range(ranks):
    have = spans.get(r, {})
    if r < servers:
        assert "server" in names[r], names[r]
        want = {"final save"}
        assert any(n.startswith("serve") for n in have), f"rank {r}: no serve spans; has {sorted(have)}"
    else:
        assert "worker" in names[r], names[r]
        want = {"claim+pull", "compute", "push"}
    # (with --overlap the claim+pull span is "claim+pull (prefetched)")
    missing = {w for w in want if not any(n == w or n.startswith(w + " (") for n in have)}
    assert not missing, f"rank {r} ({names[r]}): no {sorted(missing)} spans; has {sorted(have)}"
    if r >= servers:
        # spans of one worker do not overlap: claim+pull, compute, push follow one another
        seq = sorted((e["ts"], e["ts"] + e["dur"]) for n in have if n.split(" (")[0] in ("claim+pull", "compute", "push") for e in have[n])
        for (a0, a1), (b0, b1) in zip(seq, seq[1:]):
            assert b0 >= a1 - 1.0, f"rank {r}: overlapping spans {a0}-{a1} and {b0}-{b1}"
print(f"timeline ok: {len(events)} events, ranks {ranks}, " +
      ", ".join(f"{r}: {sum(len(v) for v in spans.get(r, {}).values())} spans" for r in range(ranks)))
