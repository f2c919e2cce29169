"""Whole-process time of ``fabric-emu step`` (issue 7 §7).

Run: ``python -m benchmarks.bench_step [--repeat N]``.

Each case is a fresh ``fabric-emu step ... --json`` process (imports, building and
compiling the cluster, routing every group, the flow simulations of all concurrent
traffic patterns, the pipeline simulation), timed from outside with
``time.perf_counter`` around ``subprocess.run``; peak RSS from ``getrusage`` of the
children and their CPU time (user + system: on a shared machine the wall time stretches with the
load, the CPU time much less). Goals: the reference scenario (DeepSeek-V3, 256 GB300) <= 2 s and
DeepSeek-V3 on 1,024 GB300 with the congestion of all concurrent groups (``--report``)
<= 5 s, on 2 cores. The load average is printed: the machine is shared, and a
loaded machine stretches every figure.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import time

from benchmarks._util import machine, print_table

_REF = ["--model", "deepseek-v3", "--system", "gb300-nvl72", "--tp", "1", "--pp", "2", "--vpp", "8", "--ep", "32",
        "--micro-batch", "1", "--seq-len", "4096", "--precision", "mxfp8", "--json"]
CASES = {
    "reference (256 GB300)": (["--gpus", "256", "--global-batch", "4096"], 2.0),
    "1,024 GB300 + congestion": (["--gpus", "1024", "--global-batch", "16384", "--report"], 5.0),
}


def _exe() -> list[str]:
    exe = os.path.join(os.path.dirname(sys.executable), "fabric-emu")
    return [exe] if os.path.exists(exe) else [sys.executable, "-m", "cli.main"]


def run_case(args: list[str]) -> tuple[float, float, float, dict]:
    """(wall s, CPU s of the child (user + system), peak RSS MB, JSON output)."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    p = subprocess.run(_exe() + ["step"] + _REF + args, capture_output=True, text=True, check=True)
    dt = time.perf_counter() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    rss = max(after.ru_maxrss, before.ru_maxrss) * 1024 / 1e6
    return dt, cpu, rss, json.loads(p.stdout)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=3)
    a = ap.parse_args()
    print(machine())
    rows = []
    for name, (args, goal) in CASES.items():
        times = []
        for _ in range(a.repeat):
            load = os.getloadavg()[0]
            dt, cpu, rss, out = run_case(args)
            times.append((dt, cpu, load))
        best = min(t for t, _, _ in times)
        cpu_best = min(c for _, c, _ in times)
        rows.append([name, ", ".join(f"{t:.2f}" for t, _, _ in times), f"{best:.2f}", f"{cpu_best:.2f}",
                     f"{goal:.0f}", "yes" if best <= goal else "no", ", ".join(f"{ld:.1f}" for _, _, ld in times),
                     f"{rss:,.0f}", f"{out['tflops_per_gpu']:,.0f}"])
    print_table(["case", "wall s (runs)", "best wall s", "best CPU s", "goal s", "met (wall)", "load avg",
                 "peak RSS MB", "TFLOPs/GPU"], rows)


if __name__ == "__main__":
    main()
