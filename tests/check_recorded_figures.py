#!/usr/bin/env python3
"""Every figure the docs quote from a recorded run is in that run's files.

A page marks what it quotes:

    <!-- figures: docs/data/A.txt docs/data/B.txt -->
    ... tables, paragraphs, a code block of the run's output ...
    <!-- end figures -->

Between the two lines every figure (a number with a decimal point, or of three digits and more;
thousands commas allowed: 1,504 is 1504) outside inline `code` must be one of the numbers the
named files hold, as printed there. Fails naming each figure that is not, each marked block
whose files are missing, and a marker left open. Small integers (worker counts, "1 + 1") and the
commands in backticks are not figures. Where no page has a block, that is a failure too: the
check would prove nothing.

    check_recorded_figures.py ROOT"""
import glob
import os
import re
import sys

root = sys.argv[1]
NUMBER = re.compile(r"(?<![\w.])-?\d[\d,]*(?:\.\d+)?(?![\w])")
begin = re.compile(r"<!-- figures: (.+?) -->")


def numbers(text):
    """The numbers of a text as printed, commas between digit groups removed: '1,504' -> '1504'."""
    out = set()
    for m in NUMBER.finditer(text):
        tok = m.group(0).rstrip(",")
        if re.fullmatch(r"-?\d{1,3}(,\d{3})+(\.\d+)?", tok):
            tok = tok.replace(",", "")
        elif "," in tok:  # '2,3' is two numbers
            out.update(t for t in tok.split(",") if t)
            continue
        out.add(tok.lstrip("-"))
    return out


def is_figure(tok):
    return "." in tok or len(tok) >= 3


problems, blocks = [], 0
for page in sorted(glob.glob(f"{root}/docs/*.md")) + [f"{root}/README.md"]:
    name = os.path.relpath(page, root)
    lines = open(page).read().splitlines()
    i = 0
    while i < len(lines):
        m = begin.search(re.sub(r"`[^`]*`", " ", lines[i]))  # (a marker quoted in `code` is not one)
        if not m:
            i += 1
            continue
        start = i + 1
        files = m.group(1).split()
        end = next((j for j in range(start, len(lines))
                    if "<!-- end figures -->" in re.sub(r"`[^`]*`", " ", lines[j])), None)
        if end is None:
            problems.append(f"{name}:{start}: a figures block that never ends")
            break
        blocks += 1
        data = set()
        for f in files:
            path = f"{root}/{f}"
            if not os.path.isfile(path):
                problems.append(f"{name}:{start}: {f} is not in the tree")
                continue
            data |= numbers(open(path, errors="replace").read())
        for k in range(start, end):
            text = re.sub(r"`[^`]*`", " ", lines[k])
            for tok in sorted(numbers(text)):
                if is_figure(tok) and tok not in data:
                    problems.append(f"{name}:{k + 1}: {tok} is not in {' '.join(files)}")
        i = end + 1
if not blocks:
    problems.append("no page marks a figures block: the check would prove nothing")
if problems:
    sys.exit("FAIL: figures the recorded data does not hold:\n  " + "\n  ".join(problems))
print(f"every figure of {blocks} marked block(s) is in its recorded data")
