#!/usr/bin/python3
"""PyTorch's answer to ctr_async: the same wide-and-deep model on the same data, with its tables
as nn.EmbeddingBag(sparse=True) trained Hogwild (torch.multiprocessing, shared memory) on one host.

    build/bin/ctr_async --dump_data /tmp/clicks --rows 1048576      # the data (dump.h)
    /usr/bin/python3 bench/torch_ctr.py --data /tmp/clicks --procs 2 --steps 2000 --eval_every 100

The model is ctr_async's (apps/ctr_async/model.h): logit = bias + v . x + sum_f wide[row_f]
+ w2 . relu(W1^T [deep[row_1] .. deep[row_26], x] + b1) + b2; Glorot-uniform W1 and w2, deep rows
uniform in [-0.05, 0.05], wide rows 0. The dense weights step by SGD, the tables by Adagrad with
ctr_async's settings (torch's Adagrad is element-wise where ctr_async's is row-wise; its state is
shared between the processes too). Process p trains on stream p. Process 0 evaluates on the
held-out examples every --eval_every of its steps (the others go on meanwhile; the clock leaves
the evaluations out) and prints the lines ctr_async prints, which bench/embedding.sh reads:
    eval: G global steps, S samples, T s training, AUC a, log-loss l
    Done: G global steps by P worker(s) in T s: X samples/s
    AUC a (the planted model's: p), ...
"""
import argparse
import json
import os
import sys
import time

import numpy as np
import torch
import torch.multiprocessing as mp
import torch.nn.functional as F


def auc(scores, labels):
    order = np.argsort(scores, kind="mergesort")
    ranks = np.empty(len(scores))
    ranks[order] = np.arange(1, len(scores) + 1)
    s = scores[order]  # ties: average ranks
    _, first, counts = np.unique(s, return_index=True, return_counts=True)
    for f, c in zip(first[counts > 1], counts[counts > 1]):
        ranks[order[f:f + c]] = f + (c + 1) / 2.0
    pos = labels > 0.5
    n_pos, n_neg = pos.sum(), (~pos).sum()
    if n_pos == 0 or n_neg == 0:
        return float("nan")  # (one class only: no pair to rank; ctr_async prints n/a)
    return float((ranks[pos].sum() - n_pos * (n_pos + 1) / 2) / (n_pos * n_neg))


class WideDeep(torch.nn.Module):
    def __init__(self, rows, fields, dense, dim, hidden, seed):
        super().__init__()
        g = torch.Generator().manual_seed(seed)
        self.fields, self.dim = fields, dim
        self.wide = torch.nn.EmbeddingBag(rows, 1, mode="sum", sparse=True)
        self.deep = torch.nn.EmbeddingBag(rows, dim, mode="sum", sparse=True)
        z = fields * dim + dense
        lim1, lim2 = (6.0 / (z + hidden)) ** 0.5, (6.0 / (hidden + 1)) ** 0.5
        self.w1 = torch.nn.Parameter((torch.rand(z, hidden, generator=g) * 2 - 1) * lim1)
        self.b1 = torch.nn.Parameter(torch.zeros(hidden))
        self.w2 = torch.nn.Parameter((torch.rand(hidden, generator=g) * 2 - 1) * lim2)
        self.b2 = torch.nn.Parameter(torch.zeros(1))
        self.v = torch.nn.Parameter(torch.zeros(dense))
        self.bias = torch.nn.Parameter(torch.zeros(1))
        with torch.no_grad():
            self.wide.weight.zero_()
            self.deep.weight.uniform_(-0.05, 0.05, generator=g)

    def forward(self, rows, dense):  # rows: (n, fields) int64, dense: (n, 13)
        n = rows.shape[0]
        wide = self.wide(rows).squeeze(1)                                        # (n,)
        emb = self.deep(rows.reshape(-1, 1)).reshape(n, self.fields * self.dim)  # (n, fields * dim)
        h = torch.relu(torch.cat([emb, dense], dim=1) @ self.w1 + self.b1)       # (n, hidden)
        return self.bias + dense @ self.v + wide + h @ self.w2 + self.b2


def load(data, name):
    return (torch.from_numpy(np.load(os.path.join(data, f"{name}_rows.npy"))),
            torch.from_numpy(np.load(os.path.join(data, f"{name}_dense.npy"))),
            torch.from_numpy(np.load(os.path.join(data, f"{name}_labels.npy"))))


def evaluate(model, test, examples):
    rows, dense, labels = (t[:examples] for t in test)
    with torch.no_grad():
        z = torch.cat([model(rows[i:i + 1024], dense[i:i + 1024]) for i in range(0, len(rows), 1024)])
    y = labels.numpy()
    return auc(z.numpy(), y), float(F.binary_cross_entropy_with_logits(z, labels))


def train(p, args, model, opt_dense, opt_rows, counter, start, out):
    torch.set_num_threads(1)
    rows, dense, labels = load(args.data, f"train{p}")
    test = load(args.data, "test") if p == 0 else None
    pos, local, excluded = 0, 0, 0.0
    start.wait()
    t0 = time.perf_counter()
    while True:
        with counter.get_lock():
            if counter.value >= args.steps:
                break
            counter.value += 1
            g = counter.value
        if pos + args.batch > len(rows):
            pos = 0
        sl = slice(pos, pos + args.batch)
        pos += args.batch
        opt_dense.zero_grad()
        opt_rows.zero_grad()
        loss = F.binary_cross_entropy_with_logits(model(rows[sl], dense[sl]), labels[sl])
        loss.backward()
        opt_dense.step()
        opt_rows.step()
        local += 1
        if p == 0 and args.eval_every and local % args.eval_every == 0:
            e0 = time.perf_counter()
            a, ll = evaluate(model, test, args.test_examples)
            excluded += time.perf_counter() - e0
            print(f"eval: {g} global steps, {g * args.batch} samples, {time.perf_counter() - t0 - excluded:.3f} s "
                  f"training, AUC {a:.4f}, log-loss {ll:.4f}", flush=True)
    out.put((p, local, time.perf_counter() - t0))


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data", required=True, help="what ctr_async --dump_data wrote")
    ap.add_argument("--procs", type=int, default=2, help="Hogwild processes (each needs its train<p> stream)")
    ap.add_argument("--steps", type=int, default=2000, help="global steps (of all processes together)")
    ap.add_argument("--batch", type=int, default=256)
    ap.add_argument("--dim", type=int, default=16)
    ap.add_argument("--hidden", type=int, default=64)
    ap.add_argument("--learning_rate", type=float, default=0.05)
    ap.add_argument("--embedding_lr", type=float, default=0.05)
    ap.add_argument("--initial_accumulator", type=float, default=1e-4)
    ap.add_argument("--test_examples", type=int, default=20000)
    ap.add_argument("--eval_every", type=int, default=0, help="process 0 evaluates every N of its steps (0: never)")
    ap.add_argument("--seed", type=int, default=1)
    args = ap.parse_args()
    with open(os.path.join(args.data, "meta.json")) as f:
        meta = json.load(f)
    if args.procs > meta["workers"]:
        sys.exit(f"asyncps: torch_ctr.py: --procs {args.procs} needs {args.procs} streams, {args.data} has {meta['workers']}")
    torch.set_num_threads(1)
    model = WideDeep(meta["rows"], meta["fields"], meta["dense"], args.dim, args.hidden, args.seed)
    model.share_memory()
    dense_params = [model.w1, model.b1, model.w2, model.b2, model.v, model.bias]
    opt_dense = torch.optim.SGD(dense_params, lr=args.learning_rate)
    opt_rows = torch.optim.Adagrad([model.wide.weight, model.deep.weight], lr=args.embedding_lr,
                                   initial_accumulator_value=args.initial_accumulator, eps=1e-8)
    opt_rows.share_memory()
    ctx = mp.get_context("fork")
    counter, start, out = ctx.Value("l", 0), ctx.Event(), ctx.Queue()
    procs = [ctx.Process(target=train, args=(p, args, model, opt_dense, opt_rows, counter, start, out))
             for p in range(args.procs)]
    for pr in procs:
        pr.start()
    time.sleep(0.5)
    t0 = time.perf_counter()
    start.set()
    results = [out.get() for _ in procs]
    wall = time.perf_counter() - t0
    for pr in procs:
        pr.join()
    if any(pr.exitcode != 0 for pr in procs):
        sys.exit("asyncps: torch_ctr.py: a training process failed")
    steps = counter.value
    test = load(args.data, "test")
    a, ll = evaluate(model, test, args.test_examples)
    planted = np.load(os.path.join(args.data, "test_planted.npy"))[:args.test_examples]
    print(f"Done: {steps} global steps by {args.procs} worker(s) in {wall:.2f} s: {steps * args.batch / wall:.0f} samples/s")
    print(f"AUC {a:.4f} (the planted model's: {auc(planted, test[2][:args.test_examples].numpy()):.4f}), "
          f"log-loss {ll:.4f} on {args.test_examples} held-out examples", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
