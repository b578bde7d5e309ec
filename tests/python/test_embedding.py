"""Proves (mpirun -np 3: 1 server, 2 workers) asyncps.EmbeddingTable and asyncps.torch.TableEmbeddingBag:
  - Layout.add_table and EmbeddingTable refuse every hostile argument with one exception whose message
    starts 'asyncps:' (wrong types, bad dtypes and sizes, non-contiguous and read-only buffers, NaN scales,
    out-of-range integers, another thread, a finished or closed worker), and a refused call sends nothing;
  - the two workers' concurrent pushes, duplicates within a call included, sum exactly;
  - row-wise Adagrad applies -lr * g / (sqrt(acc0 + mean(g*g)) + eps) to a row;
  - TableEmbeddingBag's output and its update equal torch.nn.EmbeddingBag's on the same rows (sum and
    mean, 2-D bags and 1-D ids with offsets, ids repeated within and across bags);
  - a table's state survives a dropped Python object, and every rank exits 0."""
import os
import sys
import threading

import numpy as np
import torch

import asyncps
import asyncps.torch

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


DIM, ROWS = 4, 1 << 12
layout = asyncps.Layout()
layout.add("w", (8,))
layout.add_table("sums", ROWS, DIM, init_scale=0.0)
layout.add_table("ada", 64, DIM, optimizer="adagrad", init_scale=0.0, initial_accumulator=0.25)
layout.add_table("bag", 256, 3, init_scale=0.5, seed=7)

# ---- Layout.add_table, local
L = asyncps.Layout
refused(TypeError, lambda: L().add_table(5, 10, 2), "name must be a str", "add_table(name=5)")
refused(TypeError, lambda: L().add_table("t", 1.5, 2), "rows must be an integer", "add_table(rows=1.5)")
refused(TypeError, lambda: L().add_table("t", True, 2), "rows must be an integer", "add_table(rows=True)")
refused(asyncps.ConfigError, lambda: L().add_table("t", 0, 2), "rows = 0 must be positive", "add_table(rows=0)")
refused(asyncps.ConfigError, lambda: L().add_table("t", -5, 2), "must be positive", "add_table(rows=-5)")
refused(asyncps.ConfigError, lambda: L().add_table("t", 2**63, 2), "does not fit", "add_table(rows=2**63)")
refused(asyncps.ConfigError, lambda: L().add_table("t", 2**40, 2), "rows", "add_table(rows=2**40)")
refused(TypeError, lambda: L().add_table("t", 10, "2"), "dim must be an integer", "add_table(dim='2')")
refused(asyncps.ConfigError, lambda: L().add_table("t", 10, 0), "dim", "add_table(dim=0)")
refused(asyncps.ConfigError, lambda: L().add_table("t", 10, 2**31), "does not fit a 32-bit", "add_table(dim=2**31)")
refused(asyncps.ConfigError, lambda: L().add_table("t", 10, 70000), "dim", "add_table(dim=70000)")
refused(asyncps.ConfigError, lambda: L().add_table("t", 10, 2, optimizer="adam"), "sgd, adagrad or ftrl",
        "add_table(optimizer='adam')")
refused(TypeError, lambda: L().add_table("t", 10, 2, optimizer=1), "optimizer must be a str", "add_table(optimizer=1)")
refused(asyncps.ConfigError, lambda: L().add_table("t", 10, 2, init_scale=float("nan")), "init_scale",
        "add_table(init_scale=nan)")
refused(asyncps.ConfigError, lambda: L().add_table("t", 10, 2, init_scale=-1.0), "init_scale", "add_table(init_scale=-1)")
refused(asyncps.ConfigError, lambda: L().add_table("t", 10, 2, init_scale=1e300), "does not fit a float32",
        "add_table(init_scale=1e300)")
refused(TypeError, lambda: L().add_table("t", 10, 2, init_scale="x"), "init_scale must be a number",
        "add_table(init_scale='x')")
refused(TypeError, lambda: L().add_table("t", 10, 2, seed=1.0), "seed must be an integer", "add_table(seed=1.0)")
refused(asyncps.ConfigError, lambda: L().add_table("t", 10, 2, seed=-1), "is not in [0, 2**64)", "add_table(seed=-1)")
refused(asyncps.ConfigError, lambda: L().add_table("t", 10, 2, seed=2**64), "is not in [0, 2**64)", "add_table(seed=2**64)")
refused(TypeError, lambda: L().add_table("t", 10, 2, seed=True), "must be an integer", "add_table(seed=True)")
big = L()
big.add_table("t", 10, 2, seed=2**64 - 1)
check(big.table("t").seed == 2**64 - 1, "seed 2**64 - 1 is taken")
refused(asyncps.ConfigError, lambda: L().add_table("t", 10, 2, optimizer="adagrad", initial_accumulator=0.0),
        "initial_accumulator", "add_table(initial_accumulator=0)")
refused(asyncps.ConfigError, lambda: L().add_table("t", 10, 2, optimizer="adagrad", initial_accumulator=float("inf")),
        "initial_accumulator", "add_table(initial_accumulator=inf)")
refused(asyncps.ConfigError, lambda: L().add_table("a/b", 10, 2), "", "add_table(name='a/b')")
# FTRL's keywords: in range, and refused where they would do nothing (as is Adagrad's initial_accumulator)
refused(asyncps.ConfigError, lambda: L().add_table("t", 10, 2, optimizer="ftrl", ftrl_l1=-1.0), "ftrl_l1 must be",
        "add_table(ftrl_l1=-1)")
refused(asyncps.ConfigError, lambda: L().add_table("t", 10, 2, optimizer="ftrl", ftrl_l2=float("nan")), "ftrl_l2 must be",
        "add_table(ftrl_l2=nan)")
refused(asyncps.ConfigError, lambda: L().add_table("t", 10, 2, optimizer="ftrl", ftrl_beta=0.0), "ftrl_beta must be",
        "add_table(ftrl_beta=0)")
refused(asyncps.ConfigError, lambda: L().add_table("t", 10, 2, ftrl_l2=0.5),
        "ftrl_l2 is for optimizer='ftrl': it does nothing for optimizer='sgd' rows", "add_table(optimizer='sgd', ftrl_l2=0.5)")
refused(asyncps.ConfigError, lambda: L().add_table("t", 10, 2, optimizer="ftrl", initial_accumulator=0.5),
        "initial_accumulator is for optimizer='adagrad'", "add_table(optimizer='ftrl', initial_accumulator=0.5)")
# ... whatever the value: another optimizer's keyword at its default value does nothing too
# (the layout alone cannot tell it from no keyword; the binding can)
refused(asyncps.ConfigError, lambda: L().add_table("t", 10, 2, initial_accumulator=0.1),
        "initial_accumulator is for optimizer='adagrad': it does nothing for optimizer='sgd' rows",
        "add_table(optimizer='sgd', initial_accumulator=0.1 (its default))")
refused(asyncps.ConfigError, lambda: L().add_table("t", 10, 2, optimizer="adagrad", ftrl_beta=1.0),
        "ftrl_beta is for optimizer='ftrl': it does nothing for optimizer='adagrad' rows",
        "add_table(optimizer='adagrad', ftrl_beta=1.0 (its default))")
refused(asyncps.ConfigError, lambda: L().add_table("t", 10, 2, optimizer="ftrl", ftrl_l1=0.0, initial_accumulator=0.1),
        "initial_accumulator is for optimizer='adagrad'", "add_table(optimizer='ftrl', ..., initial_accumulator=0.1)")
refused(TypeError, lambda: L().add_table("t", 10, 2, optimizer="ftrl", ftrl_l1="x"), "ftrl_l1 must be a number",
        "add_table(ftrl_l1='x')")
_fl = L()
_fl.add_table("f", 10, 3, optimizer="ftrl", ftrl_l1=0.5, ftrl_l2=0.25, ftrl_beta=2.0)
_fi = _fl.table("f")
check((_fi.optimizer, _fi.stride, _fi.state_blocks, _fi.ftrl_l1, _fi.ftrl_l2, _fi.ftrl_beta) ==
      ("ftrl", 9, [("ftrl_z", 3), ("ftrl_n", 3)], 0.5, 0.25, 2.0), f"TableInfo of an ftrl table: {_fi!r}")
refused(asyncps.ConfigError, lambda: layout.add_table("sums", 10, 2), "sums", "add_table(name repeated)")
refused(asyncps.ConfigError, lambda: layout.add_table("w", 10, 2), "w", "add_table(name of a tensor)")
refused(asyncps.ConfigError, lambda: layout.table("nope"), "nope", "table('nope')")
refused(TypeError, lambda: layout.table(3), "name must be a str", "table(3)")
check([t.name for t in layout.tables] == ["sums", "ada", "bag"], "tables in order, the refused adds left out")
ada_info = layout.table("ada")
check((ada_info.rows, ada_info.dim, ada_info.optimizer, ada_info.stride, ada_info.initial_accumulator) ==
      (64, DIM, "adagrad", DIM + 1, 0.25), f"TableInfo of ada: {ada_info!r}")
check(layout.size == 8 and "3 tables" in repr(layout), f"the tables are outside the arena: {layout!r}")

session = asyncps.Session(layout, num_servers=1)
if session.is_server:
    asyncps.ParameterServer(session, np.zeros(8, np.float32)).serve()
    sys.exit(0)

w = asyncps.WorkerClient(session)
me = session.worker_index
refused(TypeError, lambda: asyncps.EmbeddingTable(5, "sums"), "worker must be an asyncps.WorkerClient",
        "EmbeddingTable(worker=5)")
refused(TypeError, lambda: asyncps.EmbeddingTable(w, 5), "name must be a str", "EmbeddingTable(name=5)")
refused(asyncps.ConfigError, lambda: asyncps.EmbeddingTable(w, "nope"), "nope", "EmbeddingTable('nope')")
refused_in_thread(lambda: asyncps.EmbeddingTable(w, "sums"), "EmbeddingTable()")
sums = asyncps.EmbeddingTable(w, "sums")
check((sums.name, sums.rows, sums.dim, sums.optimizer) == ("sums", ROWS, DIM, "sgd"), f"attributes: {sums!r}")

# ---- hostile arguments: each refused, nothing sent (the sums checked below are exact)
keys = np.arange(10, dtype=np.uint64)
g = np.ones((10, DIM), np.float32)
for bad, what in ((keys.astype(np.float64), "float64"), (keys.astype(np.int32), "int32"), ([1, 2, 3], "list"),
                  (np.arange(20, dtype=np.uint64)[::2], "non-contiguous"), ("abc", "str"),
                  (torch.arange(4, dtype=torch.float32), "float torch tensor")):
    refused(ValueError, lambda: sums.pull_rows(bad), "keys must be a C-contiguous uint64 or int64 buffer",
            f"pull_rows(keys={what})")
    refused(ValueError, lambda: sums.push_rows(bad, g, -1.0), "keys must be a C-contiguous uint64 or int64 buffer",
            f"push_rows(keys={what})")
refused(ValueError, lambda: sums.pull_rows(keys, np.zeros((10, DIM - 1), np.float32)), "40 elements",
        "pull_rows(out too small)")
refused(ValueError, lambda: sums.pull_rows(keys, np.zeros((10, DIM))), "float64", "pull_rows(out float64)")
ro = np.zeros((10, DIM), np.float32)
ro.flags.writeable = False
refused(ValueError, lambda: sums.pull_rows(keys, ro), "read-only", "pull_rows(out read-only)")
refused(ValueError, lambda: sums.push_rows(keys, g[:9], -1.0), "40 elements", "push_rows(grads too few)")
refused(ValueError, lambda: sums.push_rows(keys, g.astype(np.float16), -1.0), "float16", "push_rows(grads float16)")
refused(asyncps.ConfigError, lambda: sums.push_rows(keys, g, float("nan")), "scale must be a finite number",
        "push_rows(scale=nan)")
refused(asyncps.ConfigError, lambda: sums.push_rows(keys, g, 1e300), "does not fit a float32", "push_rows(scale=1e300)")
refused(TypeError, lambda: sums.push_rows(keys, g, "1"), "scale must be a number", "push_rows(scale='1')")
refused(TypeError, lambda: sums.row_of(1.5), "key must be an integer or an array", "row_of(1.5)")
refused(TypeError, lambda: sums.row_of(True), "key must be an integer or an array", "row_of(True)")
refused(asyncps.ConfigError, lambda: sums.row_of(2**64), "not a 64-bit key", "row_of(2**64)")
refused(asyncps.ConfigError, lambda: sums.row_of(-2**63 - 1), "not a 64-bit key", "row_of(-2**63-1)")
refused(asyncps.ConfigError, lambda: setattr(sums, "epsilon", -1.0), "eps", "epsilon = -1")
refused(asyncps.ConfigError, lambda: setattr(sums, "epsilon", float("nan")), "eps", "epsilon = nan")
refused(TypeError, lambda: setattr(sums, "epsilon", "x"), "epsilon must be a number", "epsilon = 'x'")
refused_in_thread(lambda: sums.pull_rows(keys), "pull_rows")
refused_in_thread(lambda: sums.push_rows(keys, g, 1.0), "push_rows")
refused_in_thread(lambda: sums.row_of(3), "row_of")
refused_in_thread(lambda: sums.stats, "stats")
refused_in_thread(lambda: setattr(sums, "epsilon", 1.0), "epsilon")
bad = g.copy()
bad[3, 1] = np.nan
p = sums.push_rows(keys, bad, 1.0)
check(not p and p.nonfinite and sums.stats["nonfinite"] == 1, f"a NaN gradient is refused and counted: {p!r}")
check(sums.push_rows(keys, g * 10, 3e38).nonfinite, "scale * g overflowing float32 sends nothing")

# ---- hashing: the same on every rank, int64 and uint64 keys alike
check(sums.row_of(np.int64(-1)) == sums.row_of(torch.tensor(-1)) == sums.row_of(np.uint64(2**64 - 1)),
      "numpy and torch integer scalars are one key")
check(sums.row_of(-1) == sums.row_of(2**64 - 1) == int(sums.row_of(np.array([-1], np.int64))[0]),
      "-1 and 2**64 - 1 are one key")
rows_of = sums.row_of(np.arange(1000, dtype=np.uint64))
check(rows_of.dtype == np.uint64 and rows_of.shape == (1000,) and int(rows_of.max()) < ROWS, "row_of an array")
check(len(set(rows_of.tolist())) > 850, "1000 keys spread over 4096 rows")



def distinct_row_keys(table, n, start=0):
    """The first n keys from start whose rows differ (keys that share a row would add up)."""
    out, used, key = [], set(), start
    while len(out) < n:
        r = table.row_of(key)
        if r not in used:
            used.add(r), out.append(key)
        key += 1
    return np.array(out, np.int64)


# ---- exact concurrent sums: each worker adds, 50 times, 1 + me to 100 keys and again to 10 of them (duplicates)
hundred = distinct_row_keys(sums, 100)
k = np.concatenate([hundred, hundred[:10]])
grads = np.full((len(k), DIM), 1.0 + me, np.float32)
for _ in range(50):
    r = sums.push_rows(k, grads, 1.0)
    check(r and r.rows == 100, f"push_rows updated {r.rows} rows")
st = sums.stats
check((st["pushes"], st["keys_pushed"], st["rows_pushed"], st["nonfinite"]) == (50, 5500, 5000, 2),
      f"stats count the applied pushes and the refused ones apart: {st}")

# ---- Adagrad, one row only this worker touches: acc0 0.25, g = (1, 2, 3, 4): mean(g*g) = 7.5
ada = asyncps.EmbeddingTable(w, "ada")
ada.epsilon = 0.5
refused(asyncps.ConfigError, lambda: setattr(sums, "epsilon", 0.1), "reads no eps", "epsilon on an sgd table")
ka = distinct_row_keys(ada, 2, 1000)[me:me + 1].astype(np.uint64)  # (the workers' rows differ)
ga = np.array([[1, 2, 3, 4]], np.float32)
ada.push_rows(ka, ga, -0.1)
got = ada.pull_rows(ka)
want = -0.1 * ga / (np.sqrt(0.25 + 7.5) + 0.5)
check(np.allclose(got, want, rtol=1e-6, atol=0), f"Adagrad's first step: {got} != {want}")
ada.push_rows(ka, ga, -0.1)  # acc = 0.25 + 15
want2 = want - 0.1 * ga / (np.sqrt(0.25 + 15.0) + 0.5)
check(np.allclose(ada.pull_rows(ka), want2, rtol=1e-6, atol=0), "Adagrad's second step uses the grown accumulator")

# ---- TableEmbeddingBag equals nn.EmbeddingBag on the same rows (worker 0 only: the other does not touch 'bag')
if me == 0:
    bag_table = asyncps.EmbeddingTable(w, "bag")
    for mode, two_d in (("sum", True), ("mean", True), ("sum", False), ("mean", False)):
        a, b, c, d = distinct_row_keys(bag_table, 4, 2**40).tolist()
        ids = torch.tensor([[a, b, a], [c, b, d - 2**41]], dtype=torch.int64)  # repeats within and across bags
        check(len({bag_table.row_of(x) for x in ids.reshape(-1).tolist()}) == 4, "the bag test's ids have 4 rows")
        offsets = None
        if not two_d:
            ids, offsets = ids.reshape(-1), torch.tensor([0, 2], dtype=torch.int64)
        uniq = torch.unique(ids)
        before = torch.from_numpy(bag_table.pull_rows(uniq))
        ref = torch.nn.EmbeddingBag(len(uniq), 3, mode=mode)
        with torch.no_grad():
            ref.weight.copy_(before)
        remap = torch.searchsorted(uniq, ids)
        mine = asyncps.torch.TableEmbeddingBag(bag_table, mode=mode)
        target = torch.arange(6, dtype=torch.float32).reshape(2, 3)
        out, want_out = mine(ids, offsets), ref(remap, offsets)
        check(torch.allclose(out, want_out), f"{mode}/{'2-D' if two_d else 'offsets'}: forward {out} != {want_out}")
        refused(ValueError, lambda: mine.push(-0.1), "has a gradient yet", f"{mode}: push before backward")
        ((out - target) ** 2).sum().backward()
        ((want_out - target) ** 2).sum().backward()
        refused(asyncps.ConfigError, lambda: mine.push(float("nan")), "scale must be a finite number",
                f"{mode}: push with a NaN scale")
        n = mine.push(-0.1)  # (the forward the two refused pushes kept)
        check(n == len(uniq), f"push updated {n} rows, {len(uniq)} looked up")
        after = torch.from_numpy(bag_table.pull_rows(uniq))
        check(torch.allclose(after, before - 0.1 * ref.weight.grad, atol=1e-6),
              f"{mode}: the table's update is nn.EmbeddingBag's gradient step")
        check(mine.push(-0.1) == 0, "a second push sends nothing")
    mine = asyncps.torch.TableEmbeddingBag.from_module(torch.nn.EmbeddingBag(10, 3, mode="max"), bag_table)
    check(mine.mode == "max", "from_module copies the mode")
    refused(ValueError, lambda: asyncps.torch.TableEmbeddingBag.from_module(torch.nn.EmbeddingBag(10, 4), bag_table),
            "embedding_dim is 4", "from_module(dim mismatch)")
    refused(ValueError, lambda: asyncps.torch.TableEmbeddingBag.from_module(
        torch.nn.EmbeddingBag(10, 3, scale_grad_by_freq=True), bag_table), "scale_grad_by_freq",
        "from_module(scale_grad_by_freq=True)")
    refused(TypeError, lambda: asyncps.torch.TableEmbeddingBag(object()), "must be an asyncps.EmbeddingTable",
            "TableEmbeddingBag(object)")
    refused(ValueError, lambda: asyncps.torch.TableEmbeddingBag(bag_table, mode="prod"), "mode", "mode='prod'")
    refused(TypeError, lambda: asyncps.torch.TableEmbeddingBag(bag_table, include_last_offset=1),
            "include_last_offset must be a bool", "include_last_offset=1")
    refused(TypeError, lambda: mine(torch.zeros(2, 3)), "int64 or int32", "forward(float ids)")
    with torch.no_grad():
        mine(torch.tensor([[1, 2]]))
    check(mine.push(-1.0) == 0, "a forward under no_grad keeps nothing to push")

# ---- a dropped Python object leaves the worker's table state intact
del sums
w.drain()  # every worker's pushes are in
again = asyncps.EmbeddingTable(w, "sums")
total = again.pull_rows(hundred)
want = np.full((100, DIM), 50 * (1 + 2), np.float32)
want[:10] *= 2
check(np.array_equal(total, want), f"concurrent sums exact: {total[:12, 0]}")
refused(asyncps.Error, lambda: again.push_rows(keys, g, 1.0), "after drain()", "push_rows after drain")
w.finish()
refused(asyncps.Error, lambda: again.pull_rows(keys), "after finish()", "pull_rows after finish")
w.close()
refused(ValueError, lambda: again.pull_rows(keys), "closed", "pull_rows after close")
refused(ValueError, lambda: again.stats, "closed", "stats after close")
check(again.name == "sums" and again.dim == DIM, "attributes readable after close")

if failures:
    print(f"[rank {RANK}] {len(failures)} failure(s)", flush=True)
    sys.exit(1)
print(f"[rank {RANK}] test_embedding: all checks passed", flush=True)
