"""Proves asyncps.SummaryWriter writes TensorBoard event files that readers not of this project
read back (python3-crc32c for the framing, protoc --decode_raw for the messages, as
tests/app/check_events.py does): a new events.out.tfevents.* file per writer, the file_version
record first, each add_scalar / add_scalars one Event at its step with its tags and values;
bad tags, negative steps, finite values a float cannot hold, an empty logdir and writes after
close() are refused with one line; a write that fails (a file-size limit standing in for a full
disk) warns once and leaves the file ending with its last whole record."""
import os
import subprocess
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
    refused(asyncps.ConfigError, lambda: s.add_scalar("big", 1e300, 5), "beyond the range of a scalar summary",
            "a finite value a float cannot hold")
    path = s.path
refused(asyncps.ConfigError, lambda: s.add_scalar("x", 1.0, 6), "closed", "add after close")
check(s.path == path, f"the path stays after close(): {s.path!r}")
refused(asyncps.ConfigError, lambda: asyncps.SummaryWriter(""), "the log directory must not be empty", "an empty logdir")
second = asyncps.SummaryWriter(d)  # a second run in the same directory: a file of its own
second.add_scalar("loss", 1.25, 10)
second.close()
files = sorted(f for f in os.listdir(d) if f.startswith("events.out.tfevents."))
check(len(files) == 2 and os.path.basename(path) in files, f"one file per writer: {files}")
recs = [decode(r) for r in records(path)]
check(recs[0][1] == "brain.Event:2", f"the first record names the format: {recs[0]}")
check([(st, v) for st, _, v in recs[1:]] == [(3, {"loss": 1.5}), (4, {"auc": 0.75, "log_loss": 0.25})],
      f"the events as written: {recs[1:]}")

# A full disk: the writer in a child process whose files may not grow past 600 bytes once the
# writer is made (SIGXFSZ ignored: the write fails with EFBIG); it warns once, and the file holds
# whole records only.
full = tempfile.mkdtemp(prefix="asyncps-summaries-full-")
child = ("import asyncps, resource, signal, sys\n"
         "w = asyncps.SummaryWriter(sys.argv[1])\n"
         "signal.signal(signal.SIGXFSZ, signal.SIG_IGN)\n"
         "resource.setrlimit(resource.RLIMIT_FSIZE, (600, 600))\n"
         "for i in range(100): w.add_scalars({'loss': 1.0 / (i + 1), 'a_longer_tag_name': float(i)}, i)\n"
         "print(w.path)\n")
# (a process of its own, not a rank of this job: mpirun's variables left out, it starts MPI alone)
alone = {k: v for k, v in os.environ.items() if not k.startswith(("OMPI_", "PMIX_", "PMI_", "HYDRA_"))}
alone.update(OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1")
r = subprocess.run([sys.executable, "-c", child, full], capture_output=True, text=True,
                   env=alone, timeout=60)
check(r.returncode == 0, f"the writer's process went on after the failed write: rc {r.returncode} {r.stderr}")
check(r.stderr.count("asyncps: warning: SummaryWriter: cannot write") == 1, f"one warning: {r.stderr!r}")
if r.returncode == 0:
    written = r.stdout.strip()
    size = os.path.getsize(written)
    recs = [decode(x) for x in records(written)]  # (exits FAIL on a torn record)
    check(0 < size <= 600 and len(recs) >= 2 and recs[-1][0] == len(recs) - 2,
          f"whole records up to the failed one: {len(recs)} records in {size} bytes")
print("PASS" if not failures else "FAIL: " + "; ".join(failures), flush=True)
sys.exit(1 if failures else 0)
