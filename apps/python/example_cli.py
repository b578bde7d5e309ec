"""The Python examples' command lines (mnist_torch.py, ctr_torch.py): every value a run cannot
use ends the job with one 'asyncps:' line and a non-zero exit on every rank, before any collective,
instead of a traceback or a run that does nothing.

    ap = example_cli.ArgumentParser(description=...)   # argparse; its errors are such lines too
    args = ap.parse_args()
    example_cli.refuse([(args.batch < 1, f"--batch must be positive, got {args.batch}"), ...])
    with example_cli.one_line({"Options::num_servers": "--ps"}):   # the library's names as flags
        session = asyncps.Session(layout, num_servers=args.ps)

Every rank parses the same command line, so every rank refuses it and none is left waiting."""
import argparse
import contextlib
import os

import asyncps


class ArgumentParser(argparse.ArgumentParser):
    """argparse whose errors (an unknown flag, a value of the wrong type, a choice not offered)
    end the job with one line and exit code 2 (argparse's), not its usage text on every rank."""

    def error(self, message):
        asyncps.abort_job(f"{message} (see --help)", 2)


def refuse(problems):
    """problems: (bad, why) pairs; the first bad one ends the job with `why`, exit code 2."""
    for bad, why in problems:
        if bad:
            asyncps.abort_job(why, 2)


def writable_dir(path, flag):
    """(bad, why): `path` cannot be made a writable directory here (checked on every rank: each
    host's own), so the job would fail only when the chief first writes there."""
    try:
        os.makedirs(path, exist_ok=True)
        ok = os.path.isdir(path) and os.access(path, os.W_OK | os.X_OK)
    except OSError as e:
        return True, f"{flag} {path}: {e.strerror or e}"
    return not ok, f"{flag} {path}: not a writable directory"


@contextlib.contextmanager
def one_line(flag_names=None):
    """An asyncps.Error raised inside (a Session refusing --ps or --mode, a directory it cannot
    use) ends the job with its one line, the library's option names replaced by the flags."""
    try:
        yield
    except asyncps.Error as e:
        message = str(e)
        if message.startswith("asyncps: "):
            message = message[len("asyncps: "):]
        for api, flag in sorted((flag_names or {}).items(), key=lambda kv: -len(kv[0])):
            message = message.replace(api, flag)
        asyncps.abort_job(message, 2)
