"""Whole-process benchmark of ``fabric-emu validate --json``, and where its time goes.

Run: ``python -m benchmarks.bench_validate [--repeat 3] [--no-parts]``.

The command runs as a fresh process per repeat (median wall and CPU = user + system, peak RSS, as
:mod:`benchmarks.bench_cli`). A second fresh process times the parts in the library: the collective
points (flow model), the MoE points (token routing and the epoch engine), the host copies, and the
training points (step-time estimator), so a change can be placed. Compare CPU time of A/B runs back
to back: on a shared machine wall time follows the load.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import time

from benchmarks._util import machine, print_table
from benchmarks.bench_cli import measure

__all__ = ["parts", "main"]


def _cli() -> list[str]:
    import os
    import shutil
    exe = shutil.which("fabric-emu", path=os.path.dirname(sys.executable)) or shutil.which("fabric-emu")
    return ([exe] if exe else [sys.executable, "-m", "cli.main"]) + ["validate", "--json"]


def parts() -> dict:
    """CPU seconds of each kind of point (this process)."""
    from collectives import validate as v
    from workloads.training_validate import validate_training

    kinds = {"collective": 0.0, "moe_alltoall": 0.0, "host_copy": 0.0}
    state = {"kind": None, "t": time.process_time()}
    items = [kind for path in v.default_points_paths() for kind, _ in v._items(path, *v._read(path))]

    def progress(pid, k, n):
        now = time.process_time()
        if state["kind"] in kinds:
            kinds[state["kind"]] += now - state["t"]
        state["kind"], state["t"] = items[k - 1], now

    t0 = time.process_time()
    v.validate(progress=progress)
    if state["kind"] in kinds:
        kinds[state["kind"]] += time.process_time() - state["t"]
    t1 = time.process_time()
    validate_training()
    return {**kinds, "points_total": t1 - t0, "training": time.process_time() - t1}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--no-parts", action="store_true")
    ap.add_argument("--parts-only", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.parts_only:
        print(json.dumps(parts()))
        return 0
    print(machine())
    runs = [measure(_cli()) for _ in range(max(1, args.repeat))]
    ok = all(r["ok"] or json.loads(r["out"] or b"{}").get("ok") for r in runs)
    print_table(["case", "wall s", "CPU s", "RSS MB", "ok"],
                [["validate --json", f"{statistics.median(r['wall'] for r in runs):.1f}",
                  f"{statistics.median(r['cpu'] for r in runs):.1f}",
                  f"{max(r['rss'] for r in runs):.0f}", str(ok)]])
    if not args.no_parts:
        out = subprocess.run([sys.executable, "-m", "benchmarks.bench_validate", "--parts-only"],
                             capture_output=True, text=True, check=True).stdout
        p = json.loads(out)
        print_table(["part", "CPU s"], [[k, f"{x:.1f}"] for k, x in p.items()])
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
