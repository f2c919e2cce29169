"""Benchmark of the max-min solver and the flow engine on a 2-tier leaf/spine all-to-all.

Run as ``python -m benchmarks.bench_engine [--n 1024 4096] [--skewed] [--eps 0.01]``.

Fabric: non-blocking 2-tier leaf/spine, H = 32 hosts per leaf, S = 32 spines,
one link per (leaf, spine) pair and direction, every link c = 400 Gb/s
= 50e9 B/s, one NIC per GPU.  Workload: uniform all-to-all over all N GPUs,
N (N - 1) flows, static ECMP (a seeded splitmix64 hash of (src, dst, seed)
picks the spine).  Routing is a small arithmetic generator in this file and is
included in the timings.

Resource ids: host up-links [0, N), host down-links [N, 2N), leaf->spine
2N + a*S + k, spine->leaf 2N + L*S + k*L + b (L = N / H leaves).
"""

from __future__ import annotations

import argparse
import datetime
import platform
import resource
import sys
import time
import tracemalloc

import numpy as np
import scipy

from fabric.engine import FlowProblem, simulate
from fabric.maxmin import maxmin_rates

__all__ = ["leaf_spine_alltoall", "skewed_sizes", "main"]

HOSTS_PER_LEAF = 32
SPINES = 32
LINK_BPS = 50e9

_M1 = np.uint64(0x9E3779B97F4A7C15)
_M2 = np.uint64(0xBF58476D1CE4E5B9)
_M3 = np.uint64(0x94D049BB133111EB)


def _splitmix64(x: np.ndarray) -> np.ndarray:
    """splitmix64 finaliser, vectorised (uint64 arithmetic wraps)."""
    x = x + _M1
    x ^= x >> np.uint64(30)
    x *= _M2
    x ^= x >> np.uint64(27)
    x *= _M3
    x ^= x >> np.uint64(31)
    return x


def leaf_spine_alltoall(n: int, *, seed: int = 0, hosts_per_leaf: int = HOSTS_PER_LEAF, spines: int = SPINES,
                        link_Bps: float = LINK_BPS, chunk: int = 256):
    """Resources and ECMP paths of a uniform all-to-all on a 2-tier leaf/spine.

    Returns ``(capacity_Bps, res, src, dst)`` with ``res`` int32[N (N - 1), 4]
    (intra-leaf flows are padded with -1).  Flows are ordered by source, then
    destination.
    """
    hpl, s_ = hosts_per_leaf, spines
    if n % hpl:
        raise ValueError(f"n={n} must be a multiple of {hpl}")
    n_leaf = n // hpl
    n_res = 2 * n + 2 * n_leaf * s_
    cap = np.full(n_res, float(link_Bps))
    f_total = n * (n - 1)
    res = np.empty((f_total, 4), dtype=np.int32)
    src_all = np.empty(f_total, dtype=np.int32)
    dst_all = np.empty(f_total, dtype=np.int32)
    up0 = 2 * n
    dn0 = 2 * n + n_leaf * s_
    seed_mix = _splitmix64(np.array([seed], dtype=np.uint64))[0]
    jj = np.arange(n, dtype=np.int64)
    for i0 in range(0, n, chunk):
        i1 = min(n, i0 + chunk)
        ii = np.repeat(np.arange(i0, i1, dtype=np.int64), n - 1)
        # destinations j != i: for source i take 0..n-2 and shift those >= i by one
        d = np.tile(jj[: n - 1], i1 - i0)
        d += d >= ii
        a = ii // hpl
        b = d // hpl
        key = (ii.astype(np.uint64) * np.uint64(n) + d.astype(np.uint64)) ^ seed_mix
        k = (_splitmix64(key) % np.uint64(s_)).astype(np.int64)
        lo = i0 * (n - 1)
        hi = i1 * (n - 1)
        out = res[lo:hi]
        out[:, 0] = ii
        out[:, 1] = up0 + a * s_ + k
        out[:, 2] = dn0 + k * n_leaf + b
        out[:, 3] = n + d
        same = a == b
        out[same, 1] = n + d[same]
        out[same, 2] = -1
        out[same, 3] = -1
        src_all[lo:hi] = ii
        dst_all[lo:hi] = d
    return cap, res, src_all, dst_all


def skewed_sizes(src: np.ndarray, dst: np.ndarray, n: int, kind: str, *, mean_bytes: float = 1 << 20,
                 seed: int = 1) -> np.ndarray:
    """Per-flow sizes: ``"lognormal"`` (sigma 1) or ``"moe"`` (popularity lognormal(0.5) x noise lognormal(0.3))."""
    rng = np.random.default_rng(seed)
    if kind == "lognormal":
        s = rng.lognormal(0.0, 1.0, src.shape[0])
    elif kind == "moe":
        pop = rng.lognormal(0.0, 0.5, n)
        s = pop[dst] * rng.lognormal(0.0, 0.3, src.shape[0])
    else:
        raise ValueError(kind)
    s *= mean_bytes / s.mean()
    return s


def _rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0


def _load_bound(cap, res, size):
    r1 = cap.shape[0] + 1
    rows = np.where(res < 0, cap.shape[0], res)
    b = np.bincount(rows.reshape(-1), weights=np.repeat(size, res.shape[1]), minlength=r1)[:-1]
    return float((b / cap).max())


def run_equal(n: int, seed: int = 0, trace: bool = False) -> dict:
    size = float(1 << 20)
    if trace:
        tracemalloc.start()
    t0 = time.perf_counter()
    cap, res, _, _ = leaf_spine_alltoall(n, seed=seed)
    t1 = time.perf_counter()
    prob = FlowProblem(capacity_Bps=cap, res=res, weight=None, size_bytes=np.full(res.shape[0], size),
                       release_s=None, latency_s=None, phase=None, phase_deps=None, phase_delay_s=None,
                       multiplicity=None)
    out = simulate(prob)
    t2 = time.perf_counter()
    peak_tm = tracemalloc.get_traced_memory()[1] / 2**20 if trace else float("nan")
    if trace:
        tracemalloc.stop()
    return dict(case=f"equal ECMP N={n}", flows=res.shape[0], mode=out.mode_used, events=out.events,
                rounds=out.rounds, route_s=t1 - t0, total_s=t2 - t0, T=out.makespan_s, lb=out.lower_bound_s,
                ideal=(n - 1) * size / LINK_BPS, rss=_rss_mb(), tm=peak_tm)


def run_skewed(n: int, kind: str, eps: float, mode: str = "epoch", seed: int = 0) -> dict:
    t0 = time.perf_counter()
    cap, res, src, dst = leaf_spine_alltoall(n, seed=seed)
    size = skewed_sizes(src, dst, n, kind)
    del src, dst
    t1 = time.perf_counter()
    prob = FlowProblem(capacity_Bps=cap, res=res, weight=None, size_bytes=size, release_s=None, latency_s=None,
                       phase=None, phase_deps=None, phase_delay_s=None, multiplicity=None)
    out = simulate(prob, mode=mode, epsilon=eps)
    t2 = time.perf_counter()
    return dict(case=f"{kind} ECMP N={n} eps={eps:g}", flows=res.shape[0], mode=out.mode_used, events=out.events,
                rounds=out.rounds, route_s=t1 - t0, total_s=t2 - t0, T=out.makespan_s, lb=out.lower_bound_s,
                ideal=float("nan"), rss=_rss_mb(), tm=float("nan"))


def machine() -> str:
    model = "?"
    try:
        with open("/proc/cpuinfo") as fh:
            for line in fh:
                if line.startswith("model name"):
                    model = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    import os

    mem = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 2**30
    return (f"{model}, {os.cpu_count()} cores, {mem:.0f} GiB RAM, Python {platform.python_version()}, "
            f"numpy {np.__version__}, scipy {scipy.__version__}, {datetime.date.today().isoformat()}")


def _table(rows: list[dict]) -> str:
    head = "| case | flows | mode | events | rounds | routing s | total s | T ms | bound ms | T/bound | peak RSS MB | tracemalloc MB |"
    lines = [head, "|" + "---|" * 12]
    for r in rows:
        lines.append(
            f"| {r['case']} | {r['flows']:,} | {r['mode']} | {r['events']} | {r['rounds']:,} | {r['route_s']:.2f} | "
            f"{r['total_s']:.2f} | {r['T'] * 1e3:.3f} | {r['lb'] * 1e3:.3f} | {r['T'] / r['lb']:.4f} | "
            f"{r['rss']:.0f} | {r['tm']:.0f} |"
        )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--n", type=int, nargs="*", default=[1024], help="numbers of GPUs (multiples of 32)")
    ap.add_argument("--skewed", action="store_true", help="also run the skewed (lognormal, MoE) all-to-alls in epoch mode")
    ap.add_argument("--skewed-only", action="store_true", help="run only the skewed cases")
    ap.add_argument("--eps", type=float, default=0.01, help="epoch-mode tolerance")
    ap.add_argument("--mode", default="epoch", help="mode for the skewed cases")
    ap.add_argument("--tracemalloc", action="store_true", help="also measure peak traced allocations (slower)")
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args(argv)
    rows = []
    print(machine())
    for n in args.n:
        if not args.skewed_only:
            rows.append(run_equal(n, seed=args.seed, trace=args.tracemalloc))
            print(_table(rows[-1:]).splitlines()[-1], flush=True)
        if args.skewed or args.skewed_only:
            for kind in ("moe", "lognormal"):
                rows.append(run_skewed(n, kind, args.eps, mode=args.mode, seed=args.seed))
                print(_table(rows[-1:]).splitlines()[-1], flush=True)
    print(_table(rows))
    return 0


if __name__ == "__main__":
    sys.exit(main())
