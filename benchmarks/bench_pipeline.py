"""Pipeline-schedule simulator and task scheduling at step scale.

Run: ``python -m benchmarks.bench_pipeline [--case NAME ...]``. Each case runs in
a fresh subprocess. Pipeline cases: ``pp * vpp * n_micro`` (stage, chunk,
micro-batch) triples ~1e5 (twice as many F/B operations), per-(stage, chunk)
costs drawn at random; "first" is the first call (event loop with blocking),
"again" a second call with other costs (remembered topological order), "trace"
building the Chrome trace of the second. The schedule case runs a step-like
task graph (16 TP groups x 100 layers of all-reduce + compute, then 8 DP
all-reduces) on 128 H100 GPUs in one flow simulation.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys

from benchmarks._util import machine, peak_rss_MB, print_table, timer

CASES = {
    "interleaved-pp16-vpp8-m800": ("interleaved", 16, 8, 800, "none"),
    "interleaved-a2a-pp16-vpp8-m800": ("interleaved", 16, 8, 800, "a2a"),
    "1f1b-pp16-m6400": ("1f1b", 16, 1, 6400, "none"),
    "dualpipe-pp16-m6400": ("dualpipe", 16, 1, 6400, "a2a"),
    "schedule-128gpu-3208-tasks": None,
}


def run_case(name: str) -> dict:
    import numpy as np

    t: dict = {}
    if CASES[name] is None:
        from collectives import Collective, CollectiveTask, ComputeTask, PlanCache, planner_for, schedule
        from fabric import Router, compile_fabric
        from topologies import build
        r = Router(compile_fabric(build("hgx-h100", {"domains": 16, "scaleout": "quantum-2"})))
        tasks, last = [], []
        for g in range(16):
            prev = ()
            for _ in range(100):
                a = CollectiveTask(Collective("all_reduce", tuple(range(8 * g, 8 * g + 8)), 1 << 24, "ring"),
                                   after=prev)
                c = ComputeTask(tuple(range(8 * g, 8 * g + 8)), 1e-4, after=(a,))
                tasks += [a, c]
                prev = (c,)
            last.append(prev[0])
        for k in range(8):
            tasks.append(CollectiveTask(Collective("all_reduce", tuple(8 * g + k for g in range(16)), 1 << 28, "ring"),
                                        after=tuple(last)))
        with timer(t, "first_s"):
            res = schedule(r, tasks, cache=PlanCache(planner_for(r)))
        return dict(case=name, ops=len(tasks), peak_rss_MB=peak_rss_MB(), mode=res.engine_mode, **t)
    from workloads import simulate_pipeline, trace_bytes
    kind, pp, vpp, m, overlap = CASES[name]
    rng = np.random.default_rng(0)

    def costs():
        return dict(forward_s=rng.uniform(0.5e-3, 2e-3, (pp, vpp)), backward_s=rng.uniform(1e-3, 3e-3, (pp, vpp)),
                    weight_s=rng.uniform(0, 1e-3, (pp, vpp)), forward_comm_s=rng.uniform(0, 1e-3, (pp, vpp)),
                    backward_comm_s=rng.uniform(0, 1e-3, (pp, vpp)), p2p_s=1e-5)
    with timer(t, "first_s"):
        simulate_pipeline(kind, pp, m, vpp=vpp, overlap=overlap, **costs())
    with timer(t, "again_s"):
        res = simulate_pipeline(kind, pp, m, vpp=vpp, overlap=overlap, **costs())
    with timer(t, "trace_s"):
        trace_bytes(res.timeline)
    return dict(case=name, ops=pp * vpp * m, peak_rss_MB=peak_rss_MB(), mode=overlap, **t)


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--case", action="append", choices=sorted(CASES))
    ap.add_argument("--one", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.one:
        print(json.dumps(run_case(args.one)))
        return
    rows = []
    for name in args.case or list(CASES):
        cmd = [sys.executable, "-m", "benchmarks.bench_pipeline", "--one", name]
        r = json.loads(subprocess.run(cmd, capture_output=True, text=True, check=True).stdout)
        f = lambda k: f"{r[k]:.3f}" if k in r else "-"  # noqa: E731
        rows.append([r["case"], f"{r['ops']:,}", r["mode"], f("first_s"), f("again_s"), f("trace_s"),
                     f"{r['peak_rss_MB']:.0f}"])
    print(machine())
    print_table(["case", "triples / tasks", "mode", "first s", "again s", "trace s", "peak RSS MB"], rows)


if __name__ == "__main__":
    main()
