"""Whole-process CLI latency: help screens and up-front refusals of huge problems.

Run: ``python -m benchmarks.bench_cli_startup [--repeat N]``. Each command runs
as a fresh ``fabric-emu`` process (the console script next to this Python);
the table gives the median and the maximum wall time over the repeats.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import time

from benchmarks._util import machine, print_table

CASES = {
    "--help": ["--help"],
    "run --help": ["run", "--help"],
    "refuse all_to_all on 65,536 hosts": ["run", "all_to_all", "--topo", "fat-tree", "--set", "hosts=65536"],
    "refuse fat-tree of 1,000,000 hosts": ["topo", "show", "fat-tree", "--set", "hosts=1000000"],
    "refuse 1e9 MoE tokens": ["run", "moe_dispatch", "--topo", "hgx-h100", "--tokens", "1000000000"],
}


def _exe() -> str:
    here = os.path.join(os.path.dirname(sys.executable), "fabric-emu")
    return here if os.path.exists(here) else "fabric-emu"


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeat", type=int, default=7)
    args = ap.parse_args()
    rows = []
    for name, argv in CASES.items():
        times = []
        for _ in range(args.repeat):
            t0 = time.perf_counter()
            r = subprocess.run([_exe(), *argv], capture_output=True, text=True)
            times.append(time.perf_counter() - t0)
        rows.append([name, r.returncode, f"{statistics.median(times):.3f}", f"{max(times):.3f}"])
    print("Machine:", machine())
    print_table(["command", "exit", "median s", "max s"], rows)


if __name__ == "__main__":
    main()
