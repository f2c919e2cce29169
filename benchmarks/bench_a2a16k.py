"""Equal-size all-to-all on 16,384 GPUs, by node-level (PXN) aggregation.

Run: ``python -m benchmarks.bench_a2a16k [--case nvl|hgx]``.

* ``nvl``: 256 GB300 NVL racks of 64 GPUs (16 compute trays) on a two-tier
  Quantum-X800 fat-tree, one ConnectX-8 per GPU: 16,384 GPUs.
* ``hgx``: 2,048 HGX H100 nodes on a three-tier Quantum-2 fat-tree: 16,384 GPUs.

268 M GPU pairs are far too many flows; PXN (and DeepEP) forward over NVLink to
the GPU on the destination's rail and send one network flow per (source node,
destination GPU). ``Collective("all_to_all", ..., options={"aggregate": "node"})``
models exactly that (``collectives.algorithms.Planner.all_to_all_aggregated``):
per link the bytes equal those of the per-pair model with PXN
(``tests/test_aggregation.py`` checks link bytes and completion time against the
per-pair model on small clusters), and the two stages (NVLink; network) use
disjoint links, each of equal-size flows, so each is one exact solve.
"""

from __future__ import annotations

import argparse
import time

from benchmarks._util import machine, peak_rss_MB, print_table

CASES = {
    "nvl": ("gb300-nvl72", {"domains": 256, "gpus_per_domain": 64, "scaleout": "quantum-x800"}),
    "hgx": ("hgx-h100", {"domains": 2048, "scaleout": "quantum-2"}),
}


def run_case(name: str, size: int) -> list:
    from collectives import Collective, planner_for, run
    from fabric import Router, compile_fabric
    from topologies import build

    preset, ov = CASES[name]
    t0 = time.perf_counter()
    router = Router(compile_fabric(build(preset, ov)))
    router.tables
    t1 = time.perf_counter()
    n = router.cf.n_gpus
    planner = planner_for(router)
    op = Collective("all_to_all", tuple(range(n)), size, options={"aggregate": "node"})
    plan = planner.plan(op)
    t2 = time.perf_counter()
    [res] = run(router, [op], planner=planner)
    t3 = time.perf_counter()
    ideal = None
    return [name, f"{n:,}", f"{plan.flows.n_flows:,}", res.engine_mode, f"{t1 - t0:.1f}", f"{t2 - t1:.1f}",
            f"{t3 - t2:.1f}", f"{(t1 - t0) + (t3 - t2):.1f}", f"{res.time_s * 1e3:.3f}",
            f"{res.lower_bound_s * 1e3:.3f}", f"{res.time_s / res.lower_bound_s:.4f}", f"{peak_rss_MB():,.0f}",
            ideal or ""]


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--case", choices=sorted(CASES), default="nvl")
    ap.add_argument("--size", type=int, default=1 << 30, help="nccl-tests size (per-rank send buffer), bytes")
    args = ap.parse_args(argv)
    row = run_case(args.case, args.size)
    print(machine())
    print_table(["case", "GPUs", "flows", "mode", "fabric s", "plan s", "run s", "total s", "T ms", "bound ms",
                 "T/bound", "peak RSS MB", ""], [row])
    print("total = fabric build + compile + routing tables, plus the run (planning/routing, solve, congestion); "
          "'plan s' is one planning pass shown for scale (the run plans again).")


if __name__ == "__main__":
    main()
