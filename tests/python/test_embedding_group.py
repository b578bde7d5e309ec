"""Proves (mpirun -np 3: 1 server, 2 workers) asyncps.EmbeddingGroup and Layout.add_table(share_rows_with=):
  - add_table refuses a share_rows_with that names no earlier table, or one of other rows, or is not a str,
    with one 'asyncps:' message; TableInfo.share_rows_with reads it back;
  - EmbeddingGroup refuses bad names (not a list, not a str, unknown, twice, tables that do not share
    rows), bad buffers (wrong count, wrong size or dtype naming the table, read-only out), a NaN or
    non-number scale, calls from another thread and calls on a closed worker with one 'asyncps:' message;
  - the two workers' concurrent group pushes sum exactly in each table, and each table's own start and
    columns are kept (a push of one table leaves the other's alone);
  - a group pull returns each table's rows as that table's own EmbeddingTable.pull_rows does;
  - a NaN in one table's gradient sends nothing for any;
  - prefetch_rows: the next pull of the same keys takes it (stats["prefetched"]) and reads what a plain
    pull reads, this worker's push since included; a prefetch nobody takes is dropped by drain(); and
    every rank exits 0."""
import os
import sys
import threading

import numpy as np

import asyncps

failures = []
RANK = int(os.environ.get("OMPI_COMM_WORLD_RANK", os.environ.get("PMI_RANK", "0")))


def fail(what):
    failures.append(what)
    print(f"FAIL [rank {RANK}]: {what}", flush=True)


def check(cond, what):
    if not cond:
        fail(what)


def refused(exc, fn, match, what):
    try:
        fn()
    except exc as e:
        m = str(e)
        if not m.startswith("asyncps:"):
            fail(f"{what}: message does not start with 'asyncps:': {m!r}")
        elif match not in m:
            fail(f"{what}: message lacks {match!r}: {m!r}")
        return
    except BaseException as e:  # noqa: BLE001
        fail(f"{what}: expected {exc.__name__}, got {type(e).__name__}: {e}")
        return
    fail(f"{what}: expected {exc.__name__}, nothing raised")


def refused_in_thread(fn, what):
    out = []

    def run():
        try:
            fn()
            out.append(None)
        except BaseException as e:  # noqa: BLE001
            out.append(e)

    t = threading.Thread(target=run)
    t.start()
    t.join()
    e = out[0]
    if not (isinstance(e, asyncps.ConfigError) and str(e).startswith("asyncps:") and "another thread" in str(e)):
        fail(f"{what} from another thread: got {type(e).__name__}: {e}")


ROWS = 1 << 12
layout = asyncps.Layout()
layout.add("w", (2,))
layout.add_table("wide", ROWS, 1, init_scale=0.0)
layout.add_table("apart", 64, 2, init_scale=0.0)
layout.add_table("deep", ROWS, 4, init_scale=0.0, share_rows_with="wide")
layout.add_table("seeded", ROWS, 3, init_scale=0.5, seed=3, share_rows_with="wide")

# ---- add_table(share_rows_with=), local
L = asyncps.Layout
base = lambda: (lambda l: (l.add_table("a", 10, 2), l)[1])(L())  # noqa: E731
refused(asyncps.ConfigError, lambda: base().add_table("b", 10, 2, share_rows_with="nope"), "no earlier table",
        "share_rows_with unknown")
refused(asyncps.ConfigError, lambda: base().add_table("b", 11, 2, share_rows_with="a"), "11 rows",
        "share_rows_with, other rows")
refused(TypeError, lambda: base().add_table("b", 10, 2, share_rows_with=5), "share_rows_with must be a str",
        "share_rows_with=5")
check(layout.table("deep").share_rows_with == "wide", "TableInfo.share_rows_with reads back")
check(layout.table("wide").share_rows_with == "", "a table stored alone: share_rows_with ''")

session = asyncps.Session(layout, num_servers=1)
if session.is_server:
    asyncps.ParameterServer(session, np.zeros(2, np.float32)).serve()
    sys.exit(0)
w = asyncps.WorkerClient(session)
me = w.worker_index
G = asyncps.EmbeddingGroup
refused(TypeError, lambda: G(w, "wide"), "names must be a list", "EmbeddingGroup(names=str)")
refused(asyncps.ConfigError, lambda: G(w, []), "at least one table", "EmbeddingGroup([])")
refused(asyncps.ConfigError, lambda: G(w, ["wide", "nope"]), "no embedding table named", "EmbeddingGroup(unknown)")
refused(asyncps.ConfigError, lambda: G(w, ["wide", "wide"]), "named twice", "EmbeddingGroup(twice)")
refused(asyncps.ConfigError, lambda: G(w, ["wide", "apart"]), "do not share rows", "EmbeddingGroup(apart)")
group = G(w, ["deep", "wide", "seeded"])
check(group.names == ["deep", "wide", "seeded"] and group.dims == [4, 1, 3] and group.rows == ROWS,
      f"names, dims, rows: {group.names} {group.dims} {group.rows}")
keys = np.array([1, 2, 2, 3, 4000, 77], np.uint64)
refused(ValueError, lambda: group.pull_rows(keys, [np.zeros((6, 4), np.float32)]), "a list of 3",
        "pull_rows(one buffer)")
refused(ValueError, lambda: group.pull_rows(keys, [np.zeros((6, 4), np.float32), np.zeros(5, np.float32),
                                                   np.zeros((6, 3), np.float32)]), "table 'wide'",
        "pull_rows(wrong size)")
ro = np.zeros((6, 3), np.float32)
ro.setflags(write=False)
refused(ValueError, lambda: group.pull_rows(keys, [np.zeros((6, 4), np.float32), np.zeros(6, np.float32), ro]),
        "out[2]", "pull_rows(read-only)")
refused(ValueError, lambda: group.push_rows(keys, [np.zeros((6, 4), np.float32)], 1.0), "a list of 3",
        "push_rows(one buffer)")
three = [np.zeros((6, 4), np.float32), np.zeros((6, 1), np.float32), np.zeros((6, 3), np.float32)]
refused(ValueError, lambda: group.push_rows(keys, [three[0], np.zeros((6, 1), np.float64), three[2]], 1.0),
        "grads[1] (table 'wide')", "push_rows(float64 grads)")
refused(asyncps.ConfigError, lambda: group.push_rows(keys, three, float("nan")), "scale", "push_rows(scale=nan)")
refused(TypeError, lambda: group.push_rows(keys, three, "1"), "scale", "push_rows(scale='1')")
refused(TypeError, lambda: G(w, ["wide", 1]), "names must be a str", "EmbeddingGroup([..., 1])")
refused_in_thread(lambda: G(w, ["wide", "deep"]), "EmbeddingGroup()")
refused_in_thread(lambda: group.pull_rows(keys), "EmbeddingGroup.pull_rows")
refused_in_thread(lambda: group.prefetch_rows(keys), "EmbeddingGroup.prefetch_rows")
refused_in_thread(lambda: group.push_rows(keys, three, 1.0), "EmbeddingGroup.push_rows")

# the rows the pushes below touch: the hundred keys' (both workers) and the free keys' (worker 0)
hundred = np.arange(100, dtype=np.uint64)
probe = asyncps.EmbeddingTable(w, "wide")
busy = set(int(r) for r in probe.row_of(hundred))
free = [k for k in range(5000, 6000) if probe.row_of(k) not in busy][:5]
touched = busy | set(int(probe.row_of(k)) for k in free)

# each table's start, through the group and alone, at keys whose rows nobody pushes to (the
# other worker may already be pushing: a start read at its rows would race with it)
untouched = [k for k in range(9000, 10000) if int(probe.row_of(k)) not in touched][:5]
start_keys = np.array(untouched[:2] + untouched[1:], np.uint64)  # (a duplicate)
deep0, wide0, seeded0 = group.pull_rows(start_keys)
check(deep0.shape == (6, 4) and wide0.shape == (6, 1) and seeded0.shape == (6, 3), "shapes")
check(np.array_equal(seeded0, asyncps.EmbeddingTable(w, "seeded").pull_rows(start_keys)),
      "the group reads what one table reads")
check(not np.all(seeded0 == 0) and np.all(np.abs(seeded0) <= 0.5), "seeded's own start")
check(np.all(deep0 == 0) and np.all(wide0 == 0), "deep and wide start at 0")

# a NaN in one table's gradient: nothing sent for any (keys whose rows the pushes below never touch)
keys = np.array(free[:2] + free[1:], np.uint64)  # (a duplicate)
if me == 0:
    bad = np.ones((6, 1), np.float32)
    bad[3] = np.nan
    r = group.push_rows(keys, [np.ones((6, 4), np.float32), bad, np.zeros((6, 3), np.float32)], 1.0)
    check(not r.applied and r.nonfinite, f"a NaN in wide's gradient: {r}")
    check(group.stats["nonfinite"] == 1, f"group stats nonfinite: {group.stats}")
    d, wd, _ = group.pull_rows(keys)
    check(np.all(d == 0) and np.all(wd == 0), "nothing landed for any table")
    # a prefetch: the next pull of the same keys takes it, with this worker's push since added
    group.prefetch_rows(keys)
    group.push_rows(keys, [np.ones((6, 4), np.float32), np.zeros((6, 1), np.float32), np.zeros((6, 3), np.float32)], 1.0)
    taken = group.pull_rows(keys)
    direct = group.pull_rows(keys)
    check(all(np.array_equal(x, y) for x, y in zip(taken, direct)), "a taken prefetch reads what a plain pull reads")
    check(np.all(taken[0] >= 1), f"the push since the prefetch is in it: {taken[0][:, 0]}")
    check(group.stats["prefetched"] == 1, f"prefetched: {group.stats}")
    refused(ValueError, lambda: group.prefetch_rows(np.zeros(3, np.float64)), "keys", "prefetch_rows(float keys)")

# concurrent pushes: 50 group pushes per worker (deep += 1, wide += 2 per key) and 10 of deep alone
deep = asyncps.EmbeddingTable(w, "deep")
# seeded's start at those rows (race-free: every push below adds zeros to seeded, or leaves it out)
s_start = asyncps.EmbeddingTable(w, "seeded").pull_rows(hundred)
check(not np.all(s_start == 0), "seeded starts non-zero at the hundred keys")
hundred_twice = np.concatenate([hundred, hundred[:10]])  # duplicates within a call
for p in range(50):
    r = group.push_rows(hundred_twice, [np.ones((110, 4), np.float32), np.full((110, 1), 2.0, np.float32),
                                        np.zeros((110, 3), np.float32)], 1.0)
    check(r.applied, f"group push {p}")
    if p % 5 == 0:
        deep.push_rows(hundred, np.full((100, 4), 0.5, np.float32), 1.0)
probe.prefetch_rows(hundred)  # (a table's handle, never taken: drain drops it)
w.drain()
d, wd, s = group.pull_rows(hundred)
workers = 2
# per row (keys that share a row add up): a group push adds 1 to deep and 2 to wide per key, deep alone 0.5
rows_of = [int(r) for r in probe.row_of(hundred)]
per_row_g, per_row_d = {}, {}
for k in hundred_twice:
    r = int(probe.row_of(int(k)))
    per_row_g[r] = per_row_g.get(r, 0) + 1
for k in hundred:
    r = int(probe.row_of(int(k)))
    per_row_d[r] = per_row_d.get(r, 0) + 1
want_d = np.array([[workers * (50 * per_row_g[r] + 10 * 0.5 * per_row_d[r])] * 4 for r in rows_of], np.float32)
want_w = np.array([[workers * 50 * 2.0 * per_row_g[r]] for r in rows_of], np.float32)
check(len(set(rows_of)) < 100, "(some of the keys share a row: their sums add up)")
check(np.array_equal(d, want_d), f"deep's sums exact: {d[:12, 0]}")
check(np.array_equal(wd, want_w), f"wide's sums exact: {wd[:12, 0]}")
s_alone = asyncps.EmbeddingTable(w, "seeded").pull_rows(hundred)
check(np.array_equal(s, s_alone), "seeded read the same through the group")
check(np.array_equal(s, s_start), "seeded's columns kept their start through the group pushes (zeros) and deep's own")
check(group.stats["runs"] > 0 and group.stats["pushes"] == 50 + (1 if me == 0 else 0), f"group stats: {group.stats}")
w.finish()
w.close()
refused(ValueError, lambda: group.pull_rows(keys), "closed", "pull_rows after close")
refused(ValueError, lambda: group.prefetch_rows(keys), "closed", "prefetch_rows after close")
refused(ValueError, lambda: group.push_rows(keys, three, 1.0), "closed", "push_rows after close")

if failures:
    print(f"[rank {RANK}] {len(failures)} failure(s)", flush=True)
    sys.exit(1)
print(f"[rank {RANK}] test_embedding_group: all checks passed", flush=True)
