"""Proves asyncps.SummaryWriter writes TensorBoard event files that readers not of this project
read back (python3-crc32c for the framing, protoc --decode_raw for the messages, as
tests/app/check_events.py does): a new events.out.tfevents.* file per writer, the file_version
record first, each add_scalar / add_scalars one Event at its step with its tags and values;
bad tags, negative steps and writes after close() are refused with one line."""
import os
import sys
import tempfile

import asyncps
from checks import check, failures, refused

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "app"))
from check_events import decode, records  # noqa: E402

d = tempfile.mkdtemp(prefix="asyncps-summaries-")
with asyncps.SummaryWriter(d) as s:
    s.add_scalar("loss", 1.5, 3)
    s.add_scalars({"auc": 0.75, "log_loss": 0.25}, 4)
    refused(asyncps.ConfigError, lambda: s.add_scalar("", 1.0, 5), "a tag must be non-empty", "empty tag")
    refused(asyncps.ConfigError, lambda: s.add_scalar("x", 1.0, -1), "step must be >= 0", "negative step")
    refused(TypeError, lambda: s.add_scalars([("a", 1.0)], 4), "values must be a dict", "add_scalars(a list)")
    path = s.path
refused(asyncps.ConfigError, lambda: s.add_scalar("x", 1.0, 6), "closed", "add after close")
second = asyncps.SummaryWriter(d)  # a second run in the same directory: a file of its own
second.add_scalar("loss", 1.25, 10)
second.close()
files = sorted(f for f in os.listdir(d) if f.startswith("events.out.tfevents."))
check(len(files) == 2 and os.path.basename(path) in files, f"one file per writer: {files}")
recs = [decode(r) for r in records(path)]
check(recs[0][1] == "brain.Event:2", f"the first record names the format: {recs[0]}")
check([(st, v) for st, _, v in recs[1:]] == [(3, {"loss": 1.5}), (4, {"auc": 0.75, "log_loss": 0.25})],
      f"the events as written: {recs[1:]}")
print("PASS" if not failures else "FAIL: " + "; ".join(failures), flush=True)
sys.exit(1 if failures else 0)
