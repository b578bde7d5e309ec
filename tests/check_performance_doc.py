#!/usr/bin/env python3
"""docs/PERFORMANCE.md's targets table and its side-information paragraph quote one recorded run
of bench/run-bench.sh (the summary.txt it printed, kept as docs/data/bench-<date>-summary.txt and
named on the page). Fails on the first target row whose figure, goal or verdict is not the
summary's, on a summary target the page leaves out, and on a page without the side-information
paragraph (whose figures, in a marked block, tests/check_recorded_figures.py checks).

    check_performance_doc.py ROOT"""
import re
import sys

root = sys.argv[1]
doc = open(f"{root}/docs/PERFORMANCE.md").read()
named = re.findall(r"docs/data/(bench-[\w-]+-summary\.txt)", doc)
if not named:
    sys.exit("FAIL: docs/PERFORMANCE.md names no recorded run (docs/data/bench-<date>-summary.txt)")
summary = open(f"{root}/docs/data/{named[0]}").read()
target = re.compile(r"^(\([a-d]\)) (.+?)\s+(\d[\d.,]*(?:x|%))\s+(.+?)\s*(yes|NO|-)$")
want = {}
for line in summary.splitlines():
    m = target.match(line)
    if m:
        want[(m[1], m[2])] = (m[3], m[4].strip(), m[5])
if not want:
    sys.exit(f"FAIL: docs/data/{named[0]} holds no target line")
section = doc.split("## Targets", 1)[1].split("\n## ", 1)[0]
have = {}
for row in section.splitlines():
    cells = [c.strip() for c in row.strip().strip("|").split("|")]
    if len(cells) == 5 and re.fullmatch(r"\([a-d]\)", cells[0]):
        have[(cells[0], cells[1])] = tuple(cells[2:])
missing = []
for key, value in want.items():
    if have.get(key) != value:
        missing.append(f"{key[0]} {key[1]}: the summary says {value}, the page {have.get(key, 'nothing')}")
for key in have:
    if key not in want:
        missing.append(f"{key[0]} {key[1]}: on the page, not in the recorded run")
if "Side information from the same run" not in section:
    missing.append("no 'Side information from the same run' paragraph")
# (its figures are checked, as every marked block's, by check_recorded_figures.py)
if missing:
    sys.exit(f"FAIL: docs/PERFORMANCE.md does not carry docs/data/{named[0]}:\n  " + "\n  ".join(missing))
print(f"docs/PERFORMANCE.md's targets match docs/data/{named[0]} ({len(want)} rows)")
