"""Benchmark of the flow engine on all-to-alls routed by the project's router.

Run as ``python -m benchmarks.bench_engine [--n 1024 4096] [--cases equal lognormal moe] [--repeat 3]``
(``--skewed`` adds lognormal and moe; ``--eps`` sets epsilon for them, default 0.01).  Every run is a
fresh process, so the peak RSS is the run's own; results are in docs/flow-engine.md §5.

Fabric: ``topologies.fat_tree(hosts=N, radix=R, tiers=2, link_Bps=50e9)``, the
two-tier non-blocking fat-tree (R = 64 for N <= 2048: 32 hosts per leaf and 32
spines at N = 1024; R = 128 above: 64 hosts per leaf, 64 leaves and 64 spines at
N = 4096), compiled with :func:`fabric.compile_fabric` and routed with
:meth:`fabric.Router.route` (policy ``"ecmp"``).  Every path has six entries:
GPU -> NIC host link, NIC -> leaf, leaf -> spine, spine -> leaf, leaf -> NIC,
NIC -> GPU (intra-leaf flows pad the two spine hops with -1).

Workload: uniform all-to-all over all N GPUs, N (N - 1) flows starting at 0;
1 MiB per flow (equal case) or skewed sizes with mean 1 MiB (lognormal sigma 1;
MoE: destination popularity lognormal(0, 0.5) x per-flow noise lognormal(0, 0.3)).

The engine problem is built straight from the router's resource ids
(``FlowProblem(capacity_Bps=router.resource_capacity_Bps(), res=routes.res,
latency_s=routes.latency_s, ...)``): this is what :func:`fabric.flowset.to_problem`
produces up to a renumbering of the used resources (``--to-problem`` uses it:
0.05 s at N = 1024, 1.6 s at N = 4096).  "routing s" is fabric build +
compile + router + route + problem build, with the route call alone in
parentheses; "total s" adds the simulation.  Peak RSS is ``getrusage``'s, with
its value right after routing in parentheses.
"""

from __future__ import annotations

import argparse
import gc
import subprocess
import sys
import time

import numpy as np

import topologies
from benchmarks._util import machine, peak_rss_MB
from fabric import Router, compile_fabric
from fabric.engine import FlowProblem, simulate
from fabric.flowset import FlowSet, to_problem

__all__ = ["routed_alltoall", "skewed_sizes", "run_case", "main"]

LINK_BPS = 50e9
TARGETS = {  # (case kind, N) -> (seconds, MB or None)
    ("equal", 1024): (0.5, 300.0),
    ("equal", 4096): (5.0, 2000.0),
    ("lognormal", 1024): (10.0, None),
    ("moe", 1024): (10.0, None),
}


def radix_for(n: int) -> int:
    return 64 if n <= 2048 else 128


def routed_alltoall(n: int, *, seed: int = 0, radix: int | None = None, via_to_problem: bool = False,
                    size_bytes: float = float(1 << 20)):
    """Route an all-to-all on the 2-tier fat-tree; returns ``(problem, src, dst, timings)``.

    ``problem`` has 1 MiB per flow; callers replace ``size_bytes`` for skewed cases.
    """
    tm = {}
    t0 = time.perf_counter()
    g = topologies.fat_tree(hosts=n, radix=radix or radix_for(n), tiers=2, link_Bps=LINK_BPS)
    cf = compile_fabric(g)
    router = Router(cf)
    t1 = time.perf_counter()
    tm["fabric"] = t1 - t0
    src = np.repeat(np.arange(n, dtype=np.int64), n - 1)
    dst = np.tile(np.arange(n - 1, dtype=np.int64), n)
    dst += dst >= src
    routes = router.route(src, dst, policy="ecmp", seed=seed)
    t2 = time.perf_counter()
    tm["route"] = t2 - t1
    size = np.full(len(src), float(size_bytes))
    if via_to_problem:
        prob, _ = to_problem(FlowSet.from_routes(routes, size), router)
    else:
        prob = FlowProblem(capacity_Bps=router.resource_capacity_Bps(), res=routes.res, weight=routes.weight,
                           size_bytes=size, latency_s=routes.latency_s)
    t3 = time.perf_counter()
    tm["problem"] = t3 - t2
    return prob, src, dst, tm


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


def run_case(n: int, kind: str, *, eps: float = 0.01, mode: str = "auto", seed: int = 0,
             via_to_problem: bool = False) -> dict:
    gc.collect()
    t0 = time.perf_counter()
    prob, src, dst, tm = routed_alltoall(n, seed=seed, via_to_problem=via_to_problem)
    if kind != "equal":
        t = time.perf_counter()
        sizes = skewed_sizes(src, dst, n, kind)
        prob = FlowProblem(capacity_Bps=prob.capacity_Bps, res=prob.res, weight=prob.weight, size_bytes=sizes,
                           latency_s=prob.latency_s)
        tm["problem"] += time.perf_counter() - t
    del src, dst
    rss_route = peak_rss_MB()
    t1 = time.perf_counter()
    out = simulate(prob, mode=mode if kind != "equal" else "auto", epsilon=eps)
    t2 = time.perf_counter()
    target = TARGETS.get((kind, n))
    total = t2 - t0
    rss = peak_rss_MB()
    met = "-"
    if target is not None:
        met = "met" if total <= target[0] and (target[1] is None or rss <= target[1]) else "NOT met"
    label = {"equal": "equal 1 MiB", "lognormal": "lognormal", "moe": "MoE"}[kind]
    return dict(case=f"{label} N={n}" + ("" if kind == "equal" else f" eps={eps:g}"),
                flows=prob.res.shape[0], mode=out.mode_used, events=out.events, solves=out.solves,
                rounds=out.rounds, route_s=t1 - t0, route_only_s=tm["route"], sim_s=t2 - t1, total_s=total,
                T=out.makespan_s, lb=out.lower_bound_s, rss=rss, rss_route=rss_route, target=target, met=met)


HEAD = ("| case | flows | mode | events (solves) | rounds | routing s (route) | engine s | total s | T ms | "
        "bound ms | T/bound | peak RSS MB (after routing) | target |")


def row(r: dict) -> str:
    tg = r["target"]
    tgt = "-" if tg is None else (f"<= {tg[0]:g} s" + ("" if tg[1] is None else f", <= {tg[1]:g} MB")
                                  + f": {r['met']}")
    return (f"| {r['case']} | {r['flows']:,} | {r['mode']} | {r['events']} ({r['solves']}) | {r['rounds']:,} | "
            f"{r['route_s']:.2f} ({r['route_only_s']:.2f}) | {r['sim_s']:.2f} | {r['total_s']:.2f} | "
            f"{r['T'] * 1e3:.3f} | {r['lb'] * 1e3:.3f} | {r['T'] / r['lb']:.4f} | {r['rss']:.0f} ({r['rss_route']:.0f}) | "
            f"{tgt} |")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--n", type=int, nargs="*", default=[1024], help="numbers of GPUs")
    ap.add_argument("--cases", nargs="*", default=["equal"], choices=["equal", "lognormal", "moe"],
                    help="workloads (default: equal)")
    ap.add_argument("--skewed", action="store_true", help="also run lognormal and moe")
    ap.add_argument("--eps", type=float, default=0.01, help="epoch-mode tolerance")
    ap.add_argument("--mode", default="epoch", help="engine mode for the skewed cases")
    ap.add_argument("--to-problem", action="store_true", help="build the problem with fabric.flowset.to_problem")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--repeat", type=int, default=1, help="runs per case (fresh processes); prints the range")
    ap.add_argument("--in-process", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    cases = list(args.cases) + (["lognormal", "moe"] if args.skewed else [])
    print(machine())
    print(HEAD)
    print("|" + "---|" * (HEAD.count("|") - 1))
    for n in args.n:
        for kind in cases:
            if args.in_process:
                r = run_case(n, kind, eps=args.eps, mode=args.mode, seed=args.seed, via_to_problem=args.to_problem)
                print(row(r), flush=True)
                continue
            # one fresh process per run, so that the peak RSS is the run's own
            cmd = [sys.executable, "-m", "benchmarks.bench_engine", "--in-process", "--n", str(n), "--cases", kind,
                   "--eps", str(args.eps), "--mode", args.mode, "--seed", str(args.seed)]
            if args.to_problem:
                cmd.append("--to-problem")
            totals = []
            for _ in range(max(1, args.repeat)):
                out = subprocess.run(cmd, capture_output=True, text=True, check=False)
                lines = [ln for ln in out.stdout.splitlines() if ln.startswith("| ") and "flows" not in ln]
                print(lines[-1] if lines else f"| {kind} N={n} | failed: {out.stderr.strip()[-300:]} |", flush=True)
                if lines:
                    totals.append(float(lines[-1].split(" | ")[7]))
            if len(totals) > 1:
                print(f"|   {kind} N={n}: total s over {len(totals)} runs: {min(totals):.2f} - {max(totals):.2f} |",
                      flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
