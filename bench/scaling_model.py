#!/usr/bin/env python3
"""The cost model of docs/SCALING.md, fitted to bench/scaling.sh's points, and its projection.

    bench/scaling_model.py POINTS.jsonl [--plot scaling.png] [--cores 2]

Terms (A: arena bytes, S: servers, W: workers, a = A/S: one server's shard):
  worker chain    t1(A, S) = alpha + alpha_s (S - 1) + 2A / beta
                  one worker's non-compute time per step when nothing else runs: the claim and
                  pull round trip plus the push, through the one-sided operations
  server          c(a) = c0 + 2a / gamma
                  one server's CPU time per update it applies (every step updates every shard:
                  with a target-driven transport such as Open MPI's osc pt2pt the target's CPU
                  receives the push and serves the pull)
  shared cores    k(A, S) = k0 + (S - 1) c0 + 2A k1: CPU seconds of the whole job per update;
                  P cores give at most P / k updates/s (here every simulated host shares P = 2)
  wire            bytes per step = omega 2A + w0
Updates/s on this machine: X = min(W / (t_c + t1), 1 / c(A/S), P / k)   (t_c: compute per step)

Fits: alpha, beta from the one-worker sizes; alpha_s (this machine, where the S servers share
the cores) from one worker and S = 2, 4 across hosts; eps, the worker's own cost per extra
server, from one worker and S = 1, 2, 4 on one host (shared memory, no server on the path);
c0 (median over shards <= 64 KiB) and gamma (median over shards >= 1 MiB) from the points
with W >= 2 and no compute, where the servers are busy; k0, k1
from the S = 1, W = 4 points (where the cores saturate); omega, w0 from every point. Every other
point checks the model.

The projection gives each rank a host of its own (the shared-cores bound goes), with a network
of B bytes/s, in two cases:
  measured  the terms above: TCP through Open MPI's osc pt2pt, the server's CPU on the path;
            the worker's chain is alpha + eps (S - 1) + max(2A / beta, A / B) (its servers work
            in parallel), and the servers' NICs bound X by S B / A (a shard in and out per
            update, full duplex)
  rdma      not measured here: what the model says if the target's CPU left the path (osc
            rdma or ucx on InfiniBand/RoCE), c0 = 2 us of NIC work per update, gamma and beta
            the link's rate
For each model size and compute time it gives the servers that keep W workers within 10% of
their unhindered speed, and the W past which no number of servers can: every update costs
every server c0, whatever its shard."""
import argparse
import json
import math
import sys


def fit_line(xs, ys, weights=None):
    """Least squares y = p + q x (weights: 1/y^2 for relative errors)."""
    w = weights or [1.0] * len(xs)
    sw = sum(w)
    sx = sum(wi * x for wi, x in zip(w, xs))
    sy = sum(wi * y for wi, y in zip(w, ys))
    sxx = sum(wi * x * x for wi, x in zip(w, xs))
    sxy = sum(wi * x * y for wi, x, y in zip(w, xs, ys))
    det = sw * sxx - sx * sx
    q = (sw * sxy - sx * sy) / det
    p = (sy - q * sx) / sw
    return p, q


def rel(ys):
    return [1.0 / (y * y) for y in ys]


class Model:
    def __init__(self, points, cores):
        self.cores = cores
        across = [p for p in points if p["hosts"] > 1]
        one_w = [p for p in across if p["workers"] == 1 and p["compute_us"] == 0]
        sizes = [p for p in one_w if p["servers"] == 1]
        if len(sizes) < 2:
            sys.exit("scaling_model: needs one-worker points of at least two sizes")
        # worker chain: t1 = alpha + 2A/beta (seconds)
        a, q = fit_line([2 * p["bytes"] for p in sizes], [p["noncompute_us"] * 1e-6 for p in sizes],
                        rel([p["noncompute_us"] for p in sizes]))
        self.alpha, self.beta, self.alpha_s = max(a, 0.0), 1.0 / q, 0.0
        extra = [(p["servers"] - 1, p["noncompute_us"] * 1e-6 - self.t1(p["bytes"], 1))
                 for p in one_w if p["servers"] > 1 and p["bytes"] <= 1 << 16]
        self.alpha_s = max(0.0, sum(e for _, e in extra) / sum(n for n, _ in extra)) if extra else 0.0
        local = [p for p in points if p["hosts"] == 1 and p["workers"] == 1 and p["bytes"] <= 1 << 16]
        if len({p["servers"] for p in local}) >= 2:
            _, self.eps = fit_line([p["servers"] for p in local], [p["noncompute_us"] * 1e-6 for p in local])
        else:
            self.eps = self.alpha_s
        # server: c(a) = c0 + 2a/gamma, from the points where the servers are busy (W >= 2): an
        # idle server pays a wake-up per operation (up to 3x c0 at W = 1 with small shards).
        # c0 from the small shards (<= 64 KiB), gamma from the large (>= 1 MiB) with c0 taken off.
        busy = [p for p in across if p["workers"] >= 2 and p["compute_us"] == 0]
        small = sorted(p["server_cpu_us_per_update"] * 1e-6 for p in busy if p["bytes"] / p["servers"] <= 1 << 16)
        large = [p for p in busy if p["bytes"] / p["servers"] >= 1 << 20]
        if not small or not large:
            sys.exit("scaling_model: needs busy-server points with small and large shards")
        self.c0 = small[len(small) // 2]
        rates = sorted(2 * p["bytes"] / p["servers"] / (p["server_cpu_us_per_update"] * 1e-6 - self.c0) for p in large)
        self.gamma = rates[len(rates) // 2]
        # shared cores: k(A) = P / X at saturation
        sat = [p for p in across if p["servers"] == 1 and p["workers"] == 4 and p["compute_us"] == 0]
        if len(sat) >= 2:
            k0, k1 = fit_line([2 * p["bytes"] for p in sat], [cores / p["updates_per_s"] for p in sat],
                              rel([cores / p["updates_per_s"] for p in sat]))
            self.k0, self.k1 = max(k0, 0.0), k1
        else:
            self.k0, self.k1 = 0.0, 0.0
        self.fitted = {id(p) for p in sizes} | {id(p) for p in sat}
        wire = [p for p in across if p["wire_bytes_per_step"] > 0]
        self.w0, self.omega = fit_line([2 * p["bytes"] for p in wire], [p["wire_bytes_per_step"] for p in wire],
                                       rel([p["wire_bytes_per_step"] for p in wire]))

    def t1(self, A, S):
        return self.alpha + self.alpha_s * (S - 1) + 2 * A / self.beta

    def c(self, A, S):
        return self.c0 + 2 * (A / S) / self.gamma

    def updates_per_s(self, A, S, W, compute_s):
        bounds = {"workers": W / (compute_s + self.t1(A, S)), "server": 1.0 / self.c(A, S)}
        if self.k1 > 0:
            bounds["cores"] = self.cores / (self.k0 + (S - 1) * self.c0 + 2 * A * self.k1)
        which = min(bounds, key=bounds.get)
        return bounds[which], which

    def describe(self):
        return [
            ("alpha", "worker's latency per step", f"{self.alpha * 1e6:.1f} us"),
            ("alpha_s", "more per extra server (this machine)", f"{self.alpha_s * 1e6:.1f} us"),
            ("eps", "worker's own cost per extra server", f"{self.eps * 1e6:.2f} us"),
            ("beta", "worker's bandwidth (pull + push bytes)", f"{self.beta / 1e6:.0f} MB/s"),
            ("c0", "server CPU per update, fixed", f"{self.c0 * 1e6:.1f} us"),
            ("gamma", "server CPU rate on shard bytes in + out", f"{self.gamma / 1e6:.0f} MB/s"),
            ("k0", "job CPU per update, fixed", f"{self.k0 * 1e6:.1f} us"),
            ("1/k1", "job CPU rate on bytes moved", f"{1 / self.k1 / 1e6:.0f} MB/s" if self.k1 > 0 else "-"),
            ("omega, w0", "wire bytes = omega 2A + w0", f"{self.omega:.4f}, {self.w0:.0f} B"),
        ]


def human(n):
    for unit, f in (("MiB", 1 << 20), ("KiB", 1 << 10)):
        if n >= f:
            return f"{n / f:.0f} {unit}" if n % f == 0 else f"{n / f:.1f} {unit}"
    return f"{n} B"


def projection(m, workloads, bandwidths, ws):
    """Servers needed so that W workers keep 90% of their unhindered speed, on hosts of their own.
    Rows: (workload, network, case, W, servers or None, the W limit)."""
    rows = []
    for name, A, tc in workloads:
        for label, B in bandwidths:
            for case in ("measured", "rdma"):
                c0, gamma, beta = (m.c0, m.gamma, m.beta) if case == "measured" else (2e-6, B, B)

                def chain(S):  # the worker's step with S servers working in parallel
                    return tc + m.alpha + m.eps * (S - 1) + max(2 * A / beta, A / B)

                def server_rate(S):  # updates/s one server (and so the job) can take
                    return min(1.0 / (c0 + 2 * (A / S) / gamma), S * B / A)

                wmax = chain(1) / (0.9 * c0)  # past it 0.9 W / chain > 1 / c0 for any S
                for W in ws:
                    need = None
                    for S in range(1, 4097):
                        if min(W / chain(S), server_rate(S)) >= 0.9 * W / chain(1):
                            need = S
                            break
                    rows.append((name, label, case, W, need, wmax))
    return rows


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("points")
    ap.add_argument("--plot")
    ap.add_argument("--cores", type=int, default=2)
    args = ap.parse_args()
    points = [json.loads(line) for line in open(args.points) if line.strip()]
    m = Model(points, args.cores)
    print("# Fitted terms (bench/scaling_model.py)")
    for k, what, v in m.describe():
        print(f"  {k:10s} {what:42s} {v}")

    print("\n# Measured beside the model (across hosts; * = a point the fit used)")
    print(f"  {'label':8s} {'arena':>8s} {'S':>2s} {'W':>3s} {'t_c us':>7s} {'upd/s':>9s} {'model':>9s} "
          f"{'bound':>8s} {'err':>6s} {'noncomp us':>11s} {'srv us/upd':>11s} {'util':>5s} {'wire/2A':>8s}")
    errs = []
    for p in points:
        if p["hosts"] < 2:
            continue
        x, which = m.updates_per_s(p["bytes"], p["servers"], p["workers"], p["compute_us"] * 1e-6)
        err = x / p["updates_per_s"] - 1
        fitted = id(p) in m.fitted
        if not fitted:
            errs.append((abs(err), p["servers"] + p["workers"] <= 2 * m.cores))
        print(f"  {p['label']:8s} {human(p['bytes']):>8s} {p['servers']:2d} {p['workers']:3d} {p['compute_us']:7d} "
              f"{p['updates_per_s']:9.1f} {x:9.1f} {which:>8s} {err:+6.0%}{'*' if fitted else ' '}"
              f"{p['noncompute_us']:11.0f} {p['server_cpu_us_per_update']:11.1f} {p['server_util']:5.2f} "
              f"{p['wire_bytes_per_step'] / (2 * p['bytes']):8.3f}")
    for name, keep in (("S + W <= 2 P", True), ("S + W > 2 P (oversubscribed)", False)):
        e = sorted(x for x, k in errs if k == keep)
        if e:
            print(f"  checked points, {name}: {len(e)}, median |error| {e[len(e) // 2]:.0%}, worst {e[-1]:.0%}")
    one = [p for p in points if p["hosts"] == 1]
    if one:
        print("\n# One host, 1 server + 1 worker (shared memory), for comparison")
        for p in one:
            print(f"  {human(p['bytes']):>8s}: non-compute {p['noncompute_us']:.1f} us/step, "
                  f"server {p['server_cpu_us_per_update']:.2f} us CPU per update")

    workloads = [("36 KiB, 2 ms compute (the MNIST CNN)", 36392, 2e-3),
                 ("16 MiB, 50 ms compute", 16 << 20, 50e-3),
                 ("256 MiB, 500 ms compute", 256 << 20, 500e-3)]
    bandwidths = [("10 Gb/s", 10e9 / 8), ("100 Gb/s", 100e9 / 8)]
    ws = [64, 128, 256, 512, 1024]
    rows = projection(m, workloads, bandwidths, ws)
    print("\n# Projection: servers that keep W workers at >= 90% of their own speed (hosts of their own)")
    print("  ('-': no number of servers can; past the limit W, c0 alone saturates every server)")
    for case in ("measured", "rdma"):
        for name, _, _ in workloads:
            for label, _ in bandwidths:
                sel = [r for r in rows if r[0] == name and r[1] == label and r[2] == case]
                cells = "  ".join(f"W={r[3]}: {r[4] if r[4] else '-'}" for r in sel)
                print(f"  {case:8s} {name:38s} {label:>8s}  {cells}   (limit W ~ {sel[0][5]:.0f})")

    if args.plot:
        plot(points, m, rows, workloads, bandwidths, args.plot)
        print(f"\nplot: {args.plot}")


def plot(points, m, rows, workloads, bandwidths, path):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    fig, ax = plt.subplots(1, 3, figsize=(16, 4.8))
    across = [p for p in points if p["hosts"] > 1 and p["compute_us"] == 0]
    sizes = sorted({p["bytes"] for p in across})
    # 1: one worker's non-compute time and the server's CPU per update, against the arena
    one = [p for p in across if p["workers"] == 1 and p["servers"] == 1]
    xs = [p["bytes"] for p in one]
    ax[0].loglog(xs, [p["noncompute_us"] for p in one], "o", label="worker non-compute / step (measured)")
    ax[0].loglog(xs, [p["server_cpu_us_per_update"] for p in one], "s", label="server CPU / update (measured)")
    grid = [sizes[0] * (sizes[-1] / sizes[0]) ** (i / 50) for i in range(51)]
    ax[0].loglog(grid, [m.t1(A, 1) * 1e6 for A in grid], "-", color="C0", label="model t1")
    ax[0].loglog(grid, [m.c(A, 1) * 1e6 for A in grid], "-", color="C1", label="model c")
    ax[0].set_xlabel("arena bytes")
    ax[0].set_ylabel("µs")
    ax[0].set_title("1 server + 1 worker, across hosts")
    ax[0].legend(fontsize=8)
    # 2: updates/s against W, measured and modelled
    for i, A in enumerate(sizes):
        for S, mark in ((1, "o"), (2, "^"), (4, "s")):
            pts = sorted((p for p in across if p["bytes"] == A and p["servers"] == S), key=lambda p: p["workers"])
            if not pts:
                continue
            ax[1].semilogy([p["workers"] for p in pts], [p["updates_per_s"] for p in pts], mark, color=f"C{i}",
                           label=f"{human(A)}, S={S}")
            if S == 1:
                wgrid = list(range(1, 13))
                ax[1].semilogy(wgrid, [m.updates_per_s(A, S, W, 0)[0] for W in wgrid], "-", color=f"C{i}")
    ax[1].set_xlabel("workers W")
    ax[1].set_ylabel("updates/s (job)")
    ax[1].set_title("measured (marks) and model (lines, S=1), 2 shared cores")
    ax[1].legend(fontsize=7, ncol=2)
    # 3: projection
    ws = sorted({r[3] for r in rows})
    for i, (name, _, _) in enumerate(workloads):
        for case, label, style in (("measured", bandwidths[0][0], "-o"), ("rdma", bandwidths[0][0], "--^"),
                                   ("rdma", bandwidths[1][0], ":s")):
            sel = [r for r in rows if r[0] == name and r[1] == label and r[2] == case and r[4]]
            if sel:
                ax[2].loglog([r[3] for r in sel], [r[4] / r[3] for r in sel], style, color=f"C{i}",
                             label=f"{name.split(',')[0]}, {case}, {label}")
    ax[2].set_xlabel("workers W")
    ax[2].set_ylabel("servers per worker (S/W) for 90% speed")
    ax[2].set_title("projection (missing points: no S suffices)")
    ax[2].legend(fontsize=7)
    ax[2].set_xticks(ws)
    ax[2].set_xticklabels([str(w) for w in ws])
    fig.tight_layout()
    fig.savefig(path, dpi=110)


if __name__ == "__main__":
    main()
