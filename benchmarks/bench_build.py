"""Build and compile large rail-optimized clusters (foundation speed goal).

Run: ``python -m benchmarks.bench_build [--case NAME ...] [--route]``. Each case
runs in a fresh subprocess so that the peak memory figure is its own.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys

from benchmarks._util import machine, peak_rss_MB, print_table, timer

CASES = {
    # 2,048 HGX H100 nodes on Quantum-2: 16,384 GPUs, three tiers
    "hgx-h100-x2048": ("hgx-h100", {"domains": 2048, "scaleout": "quantum-2"}),
    # the B200 SuperPOD layout with 64 SUs: 16,384 GPUs
    "superpod-b200-64su": ("superpod-b200", {"sus": 64}),
    # 228 GB300 NVL72 racks on Quantum-X800: 16,416 GPUs (18 NVLink planes per GPU)
    "gb300-nvl72-x228": ("gb300-nvl72", {"domains": 228, "scaleout": "quantum-x800"}),
}


def run_case(name: str, route: bool) -> dict:
    from fabric import Router, compile_fabric
    from topologies import build, summarize

    preset, ov = CASES[name]
    t: dict = {}
    with timer(t, "build_s"):
        G = build(preset, ov)
    with timer(t, "compile_s"):
        cf = compile_fabric(G)
    if route:
        with timer(t, "tables_s"):
            Router(cf).tables
    s = summarize(G)
    return dict(case=name, gpus=s.gpus, switches=s.switches, links=s.links, peak_rss_MB=peak_rss_MB(), **t)


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--case", action="append", choices=sorted(CASES))
    ap.add_argument("--route", action="store_true", help="also build the routing tables")
    ap.add_argument("--one", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.one:
        print(json.dumps(run_case(args.one, args.route)))
        return
    rows = []
    for name in args.case or list(CASES):
        cmd = [sys.executable, "-m", "benchmarks.bench_build", "--one", name] + (["--route"] if args.route else [])
        r = json.loads(subprocess.run(cmd, capture_output=True, text=True, check=True).stdout)
        rows.append([r["case"], f"{r['gpus']:,}", f"{r['switches']:,}", f"{r['links']:,}", f"{r['build_s']:.2f}",
                     f"{r['compile_s']:.2f}", f"{r.get('tables_s', float('nan')):.2f}", f"{r['peak_rss_MB']:.0f}"])
    print(machine())
    print_table(["case", "GPUs", "switches", "directed links", "build s", "compile s", "route tables s",
                 "peak RSS MB"], rows)


if __name__ == "__main__":
    main()
