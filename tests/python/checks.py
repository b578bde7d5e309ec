"""The Python tests' shared checking helpers: a failure is recorded and printed with the rank, the
test ends by reporting `failures`; `refused` expects one exception type whose message starts with
"asyncps:" and contains `match`."""
import os

RANK = int(os.environ.get("OMPI_COMM_WORLD_RANK", os.environ.get("PMI_RANK", "0")))
failures = []


def check(cond, what):
    if not cond:
        failures.append(what)
        print(f"FAIL [rank {RANK}]: {what}", flush=True)


def refused(exc, fn, match, what):
    try:
        fn()
    except exc as e:
        if not str(e).startswith("asyncps:") or match not in str(e):
            check(False, f"{what}: {e!r}")
        return
    except Exception as e:  # noqa: BLE001
        check(False, f"{what}: raised {type(e).__name__}: {e}")
        return
    check(False, f"{what}: accepted")
