#!/usr/bin/python3
"""A click-through model in PyTorch whose embedding tables live on the parameter servers.

    PYTHONPATH=build/python mpirun -np 3 --hostfile hostfiles/localhost /usr/bin/python3 apps/python/ctr_torch.py
    scripts/netns-mpirun.sh -np 3 --map-by node -x PYTHONPATH=$PWD/build/python \\
        /usr/bin/python3 $PWD/apps/python/ctr_torch.py            # across the simulated hosts

Wide and deep, as ctr_async's (its C++ twin): each example has 26 categorical ids (Zipf-distributed,
hashed into the tables: 2^20 rows by default) and 13 dense features. The wide part is a 1-float row
per id, summed; the deep part a 16-float row per id, summed by an EmbeddingBag, then an MLP with the
dense features. The tables are asyncps.EmbeddingTables (row-wise Adagrad on the servers), served to
the model by asyncps.torch.TableEmbeddingBag: a step pulls only the rows its batch touches and
pushes only their gradients. The MLP is a ModuleArena (pulled and pushed whole, plain SGD), as in
mnist_torch.py. Labels come from a planted logistic model (seeded), so the best AUC is known: at the
end the chief prints the held-out AUC beside the planted model's, the log-loss, and samples/s.
"""
import json
import math
import sys
import time

import numpy as np
import torch
import torch.nn.functional as F

import asyncps
import asyncps.torch
import example_cli  # (beside this file)

FIELDS, DENSE = 26, 13


class Clicks:
    """Synthetic click logs: ids per field Zipf(a) over vocab values, a planted logistic model over
    them and the dense features. The same seed makes the same model on every rank."""

    def __init__(self, seed, vocab, zipf_a=1.2):
        rng = np.random.default_rng(seed)
        self.vocab, self.zipf_a = vocab, zipf_a
        self.w = rng.normal(0.0, 0.6, size=(FIELDS, vocab)).astype(np.float32)  # planted weight per (field, id)
        self.v = rng.normal(0.0, 0.4, size=DENSE).astype(np.float32)
        self.bias = -1.0

    def batch(self, rng, n):
        ids = (rng.zipf(self.zipf_a, size=(n, FIELDS)) - 1) % self.vocab                    # (n, 26)
        dense = rng.normal(0.0, 1.0, size=(n, DENSE)).astype(np.float32)                     # (n, 13)
        logit = self.w[np.arange(FIELDS), ids].sum(axis=1) + dense @ self.v + self.bias      # (n,)
        label = (rng.random(n) < 1.0 / (1.0 + np.exp(-logit))).astype(np.float32)
        keys = (np.arange(FIELDS, dtype=np.int64) << 32) + ids                               # field-qualified ids
        return torch.from_numpy(keys), torch.from_numpy(dense), torch.from_numpy(label), logit


def auc_text(a):
    """'0.8123', or 'n/a (one class only)' for the NaN of a test set with one class (as ctr_async)."""
    return "n/a (one class only)" if math.isnan(a) else f"{a:.4f}"


def auc(scores, labels):
    """Area under the ROC curve (rank statistic, ties averaged)."""
    order = np.argsort(scores, kind="mergesort")
    ranks = np.empty(len(scores))
    s = scores[order]
    i = 0
    while i < len(s):  # average ranks of ties
        j = i
        while j + 1 < len(s) and s[j + 1] == s[i]:
            j += 1
        ranks[order[i:j + 1]] = (i + j) / 2.0 + 1
        i = j + 1
    pos = labels > 0.5
    n_pos, n_neg = pos.sum(), (~pos).sum()
    if n_pos == 0 or n_neg == 0:
        return float("nan")  # (one class only: no pair to rank)
    return float((ranks[pos].sum() - n_pos * (n_pos + 1) / 2) / (n_pos * n_neg))


class Deep(torch.nn.Module):
    """The dense part: an MLP over the deep bag and the dense features, plus their linear term."""

    def __init__(self, dim, hidden, seed):
        super().__init__()
        torch.manual_seed(seed)
        self.mlp = torch.nn.Sequential(torch.nn.Linear(dim + DENSE, hidden), torch.nn.ReLU(), torch.nn.Linear(hidden, 1))
        self.linear = torch.nn.Linear(DENSE, 1)

    def forward(self, bag, dense):
        return (self.mlp(torch.cat([bag, dense], dim=1)) + self.linear(dense)).squeeze(1)


def refuse_bad_args(args):
    """Ends the job with one 'asyncps:' line on every rank on a value the run cannot use (as
    ctr_async refuses it), before any collective."""
    finite = math.isfinite
    example_cli.refuse([
        (not 1 <= args.steps <= 1 << 50, f"--steps must be in [1, 2^50], got {args.steps}"),
        (not 1 <= args.batch <= 65536, f"--batch must be in [1, 65536], got {args.batch}"),
        (not 1 <= args.rows <= 1 << 36, f"--rows must be in [1, 2^36], got {args.rows}"),
        (not 1 <= args.dim <= 1024, f"--dim must be in [1, 1024], got {args.dim}"),
        (not 1 <= args.hidden <= 4096, f"--hidden must be in [1, 4096], got {args.hidden}"),
        (not 1 <= args.vocab <= 1 << 22, f"--vocab must be in [1, 2^22] (the planted model holds 26 x vocab weights), "
                                         f"got {args.vocab}"),
        (not (finite(args.table_lr) and args.table_lr > 0), f"--table_lr must be positive and finite, got {args.table_lr}"),
        (not (finite(args.learning_rate) and args.learning_rate > 0),
         f"--learning_rate must be positive and finite, got {args.learning_rate}"),
        (not 1 <= args.test_examples <= 100_000_000, f"--test_examples must be in [1, 1e8], got {args.test_examples}"),
        (args.ps < 1, f"--ps must be at least 1, got {args.ps}"),
        (args.seed < 0, f"--seed must be non-negative, got {args.seed}"),
        (args.log_every < 1, f"--log_every must be positive, got {args.log_every}"),
        (args.logdir == "", "--logdir must not be empty (leave the flag out for none)"),
    ])
    if args.logdir:
        example_cli.refuse([example_cli.writable_dir(args.logdir, "--logdir")])


def main():
    ap = example_cli.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--steps", type=int, default=600, help="global steps to train")
    ap.add_argument("--batch", type=int, default=256)
    ap.add_argument("--rows", type=int, default=1 << 20, help="rows of each table (ids are hashed into them)")
    ap.add_argument("--dim", type=int, default=16, help="the deep table's floats per row")
    ap.add_argument("--hidden", type=int, default=32)
    ap.add_argument("--vocab", type=int, default=20000, help="distinct ids per field")
    ap.add_argument("--table_lr", type=float, default=0.3, help="the tables' Adagrad learning rate")
    ap.add_argument("--learning_rate", type=float, default=0.05, help="the MLP's SGD learning rate")
    ap.add_argument("--test_examples", type=int, default=20000)
    ap.add_argument("--ps", type=int, default=1, help="parameter-server ranks")
    ap.add_argument("--mode", default="async", choices=asyncps.MODES)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--log_every", type=int, default=50, help="the chief logs every N local steps")
    ap.add_argument("--json", action="store_true", help="the chief also prints one JSON line")
    ap.add_argument("--logdir", default=None, help="the chief's TensorBoard scalars (tensorboard --logdir): log-loss "
                                                 "every --log_every steps; AUC, test log-loss, samples/s and table "
                                                 "operations per step at the end")
    args = ap.parse_args()
    refuse_bad_args(args)
    torch.set_num_threads(1)

    deep_net = Deep(args.dim, args.hidden, args.seed)
    arena = asyncps.torch.ModuleArena(deep_net)
    layout = arena.layout
    layout.add_table("wide", args.rows, 1, optimizer="adagrad", init_scale=0.0, seed=args.seed)
    layout.add_table("deep", args.rows, args.dim, optimizer="adagrad", init_scale=0.05, seed=args.seed)
    with example_cli.one_line({"Options::num_servers": "--ps", "Options::mode": "--mode"}):
        session = asyncps.Session(layout, num_servers=args.ps, mode=args.mode)
    if session.is_server:
        asyncps.ParameterServer(session, arena.params).serve()  # (fills the tables' rows first)
        return 0

    data = Clicks(args.seed, args.vocab)
    rng = np.random.default_rng(args.seed * 1000003 + 17 + session.worker_index)
    summaries = asyncps.SummaryWriter(args.logdir) if args.logdir and session.is_chief else None
    with asyncps.WorkerClient(session) as w:
        wide = asyncps.torch.TableEmbeddingBag(asyncps.EmbeddingTable(w, "wide"), mode="sum")
        deep = asyncps.torch.TableEmbeddingBag(asyncps.EmbeddingTable(w, "deep"), mode="sum")

        def predict(keys, dense):
            return deep_net(deep(keys), dense) + wide(keys).squeeze(1)

        t0, local = time.perf_counter(), 0
        while (step := w.begin_step(arena.params, args.steps)) is not None:  # pulls the MLP
            keys, dense, label, _ = data.batch(rng, args.batch)
            arena.zero_grad()
            loss = F.binary_cross_entropy_with_logits(predict(keys, dense), label)  # pulls the batch's rows
            loss.backward()
            wide.push(-args.table_lr)  # the rows this batch touched, each once
            deep.push(-args.table_lr)
            end = w.end_step(arena.grads, -args.learning_rate)
            local += 1
            if session.is_chief and local % args.log_every == 0:
                # the job's global steps once this one is taken (where its push landed), as ctr_async
                # and mnist_async count them: step.global_step is the claimed step's index, one less
                taken = end.global_step if end.applied else step.global_step + 1
                print(f"After {local} training steps ({taken} global steps), log-loss on training batch is "
                      f"{float(loss):.6f}.", flush=True)
                if summaries:
                    summaries.add_scalar("loss", float(loss), taken)
        w.drain()  # no worker updates any more: the tables and the MLP are final
        wall = time.perf_counter() - t0
        # both tables' one-sided operations of the training (before the evaluation's pulls, as ctr_async)
        runs = wide.table.stats["runs"] + deep.table.stats["runs"]
        if session.is_chief:
            w.pull(arena.params)
            final = w.global_step
            test_rng = np.random.default_rng(args.seed * 7919 + 3)  # the held-out split: its own stream
            scores, labels, planted, losses = [], [], [], []
            with torch.no_grad():
                for lo in range(0, args.test_examples, 1000):
                    keys, dense, label, logit = data.batch(test_rng, min(1000, args.test_examples - lo))
                    z = predict(keys, dense)
                    losses.append(float(F.binary_cross_entropy_with_logits(z, label, reduction="sum")))
                    scores.append(z.numpy()), labels.append(label.numpy()), planted.append(logit)
            scores, labels, planted = np.concatenate(scores), np.concatenate(labels), np.concatenate(planted)
            a, a_planted = auc(scores, labels), auc(planted, labels)
            samples = final * args.batch
            print(f"Done: {final} global steps by {session.num_workers} worker(s) in {wall:.2f} s: "
                  f"{samples / wall:.0f} samples/s; test log-loss {sum(losses) / len(labels):.4f}", flush=True)
            print(f"AUC {auc_text(a)} (the planted model's: {auc_text(a_planted)})", flush=True)
            if summaries:
                summaries.add_scalars({"auc": a, "log_loss": sum(losses) / len(labels), "samples_per_sec": samples / wall,
                                       "operations_per_step": runs / max(local, 1)}, final)
                summaries.close()
            if args.json:
                print(json.dumps({"impl": "asyncps-python-ctr", "workers": session.num_workers,
                                  "servers": session.num_servers, "rows": args.rows, "global_steps": final,
                                  "wall_seconds": round(wall, 4), "samples_per_sec": round(samples / wall, 1),
                                  "auc": None if math.isnan(a) else a,
                                  "planted_auc": None if math.isnan(a_planted) else a_planted, "operations_per_step": runs / max(local, 1),
                                  "table_stats": wide.table.stats}), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
