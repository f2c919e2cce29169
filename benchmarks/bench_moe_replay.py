"""The engine of the skewed MoE case replayed in process: lazy epochs against the dense loop, interleaved.

Run: ``python -m benchmarks.bench_moe_replay [--pairs 6] [--case moe-1024]``.

Builds the case's flow problem once through the library (as ``benchmarks.bench_cli``'s stage run does), runs
:func:`fabric.decompose.simulate_split` once per mode to load numba's kernels, then alternates
``fabric.lazyepoch.LAZY`` False / True (the order swapped every pair) and prints the process CPU time
(``time.process_time``) of each call, the minimum and median per mode, and the largest relative difference of
the finish times between the two modes (the rule: below 1e-9).  In-process CPU is the least load-dependent
figure on a shared machine; the whole-process figure is ``bench_cli --trees``.
"""

from __future__ import annotations

import argparse
import statistics
import time

import numpy as np

from benchmarks.bench_cli import CASES


def build(case: str):
    """The case's :class:`fabric.FlowProblem` (the CLI's pipeline through the library)."""
    from collectives import Collective, planner_for
    from collectives.moe import TokenRouting
    from fabric import Router, compile_with_failures, to_problem
    from topologies import load_topology

    argv = CASES[case]
    sets = dict(argv[i + 1].split("=", 1) for i, a in enumerate(argv) if a == "--set")
    opt = {argv[i]: argv[i + 1] for i in range(len(argv) - 1) if argv[i].startswith("--") and argv[i] != "--set"}
    cf = compile_with_failures(load_topology(argv[argv.index("--topo") + 1], sets), (), ())
    router = Router(cf)
    planner = planner_for(router, policy=opt.get("--routing", "auto"), seed=int(opt.get("--seed", 0)))
    tr = TokenRouting(opt["--moe-routing"], experts=int(opt["--experts"]), seed=int(opt.get("--seed", 0)))
    op = Collective(argv[1], tuple(range(cf.n_gpus)), 0, options={"moe": tr})
    problem, _ = to_problem(planner.plan(op).flows.relabel(op.label), router)
    return problem


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--case", default="moe-1024", choices=[c for c in CASES if c.startswith("moe")])
    ap.add_argument("--pairs", type=int, default=6)
    args = ap.parse_args(argv)
    from fabric import lazyepoch
    from fabric.decompose import simulate_split

    problem = build(args.case)
    finish = {}
    for mode in (False, True):  # numba's kernels loaded, the allocator warm
        lazyepoch.LAZY = mode
        finish[mode] = simulate_split(problem).finish_s
    cpu = {False: [], True: []}
    for i in range(max(1, args.pairs)):
        for mode in (False, True) if i % 2 == 0 else (True, False):
            lazyepoch.LAZY = mode
            t0 = time.process_time()
            simulate_split(problem)
            cpu[mode].append(time.process_time() - t0)
    lazyepoch.LAZY = True
    for mode, name in ((False, "dense"), (True, "lazy")):
        v = cpu[mode]
        print(f"{name}: CPU s min {min(v):.3f} median {statistics.median(v):.3f} ({', '.join(f'{x:.2f}' for x in v)})")
    a, b = finish[False], finish[True]
    print(f"finish times, largest relative difference: {float(np.max(np.abs(a - b) / np.abs(a))):.3g}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
