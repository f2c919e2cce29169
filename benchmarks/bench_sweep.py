"""Whole-process benchmark of ``fabric-emu sweep run``: 96 points of 64 MiB all-to-alls on <= 1,024 GPUs.

GB300 NVL72 racks (64 GPUs used per rack) x 1-16 racks x 3 scale-out families x ECMP/spray,
``--jobs 2``, into a fresh SQLite file; then the same command again (resume: nothing to do).
``points_cpu_s`` is the workers' CPU time summed over the points and ``driver_cpu_s`` the sweep process's: on
a machine shared with other jobs the wall time is inflated, and ``points_cpu_s / jobs`` is about what the
points take on ``jobs`` idle cores (worker start-up and imports come on top).

Run: ``python benchmarks/bench_sweep.py [--jobs 2] [--racks 16]``; prints one JSON line.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import resource
import shutil
import subprocess
import sys
import tempfile
import time


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--racks", type=int, default=16)
    args = ap.parse_args()
    exe = shutil.which("fabric-emu") or os.path.join(os.path.dirname(sys.executable), "fabric-emu")
    d = tempfile.mkdtemp()
    db = os.path.join(d, "bench.sqlite")
    racks = ",".join(str(i) for i in range(1, args.racks + 1))
    cmd = [exe, "sweep", "run", "all_to_all", "--topo", "gb300-nvl72", "--set", "gpus_per_domain=64",
           "--size", "64MiB", "--grid", f"domains={racks}", "--grid", "scaleout=quantum-2,quantum-x800,spectrum-x",
           "--grid", "routing=ecmp,spray", "--db", db, "--jobs", str(args.jobs), "--json"]
    load0 = os.getloadavg()[0]
    cpu0 = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    first = subprocess.run(cmd, check=True, capture_output=True, text=True)
    t1 = time.perf_counter()
    cpu1 = resource.getrusage(resource.RUSAGE_CHILDREN)
    import sqlite3

    con = sqlite3.connect(db)
    work_cpu_s, work_wall_s = con.execute("SELECT SUM(cpu_s), SUM(elapsed_s) FROM points").fetchone()
    con.close()
    load1 = os.getloadavg()[0]
    again = subprocess.run(cmd, check=True, capture_output=True, text=True)
    t2 = time.perf_counter()
    out = {"benchmark": "sweep-96-a2a", "points": json.loads(first.stdout)["points"],
           "stored_ok": json.loads(first.stdout)["stored_ok"], "jobs": args.jobs, "sweep_s": round(t1 - t0, 1),
           "resume_s": round(t2 - t1, 1),
           "driver_cpu_s": round(cpu1.ru_utime + cpu1.ru_stime - cpu0.ru_utime - cpu0.ru_stime, 1),
           "points_cpu_s": round(work_cpu_s, 1), "points_wall_s": round(work_wall_s, 1),
           "load_avg_start_end": [round(load0, 1), round(load1, 1)], "resume_skipped": json.loads(again.stdout)["skipped"],
           "cpus": os.cpu_count(), "python": platform.python_version(), "date": time.strftime("%Y-%m-%d")}
    print(json.dumps(out))
    shutil.rmtree(d)


if __name__ == "__main__":
    main()
