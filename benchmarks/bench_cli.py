"""Whole-process benchmark of the command users run, with the bincount floor beside it.

Run: ``python -m benchmarks.bench_cli [--cases a2a-1024-ecmp ...] [--repeat 3]``.

Every case runs ``fabric-emu`` as a fresh process, as a user would, and reports
the median wall time, CPU time (user + system) and peak RSS over the repeats
(from ``os.wait4``). A second fresh process runs the same pipeline through the
library with a timer per stage (topology + compile + router, planning and
routing, problem build, engine) and measures, in that same process, the
*floor*: one ``np.bincount`` over the problem's flow x resource incidence
(the least work any engine must do: touch every entry once), as the median of
``FLOOR_REPEATS`` calls over the same keys, with its p10-p90 spread. The stage
process runs ``--stage-runs`` times (fresh each); the engine-stage ratio is each
process's engine time / its own floor, median and range over those processes; the engine time includes numba's import and first cached call when the
compiled kernels ran (``FABRIC_EMU_KERNELS``, default ``auto``: large problems only), shown beside it as
"kernels, numba load s" (the mode and the wall seconds of numba's import in the engine stage).

Cases (see docs/performance.md for the targets):

* ``a2a-N-ecmp`` / ``a2a-N-spray``: ``fabric-emu run all_to_all --topo fat-tree
  --set hosts=N --set radix=R --set link=400Gb/s --size 64MiB --routing ecmp|spray
  [--seed 1 with ECMP] --json`` (R = 16 at N = 128, 64 at N = 1,024, 128 at N = 4,096);
* ``moe-1024``: ``fabric-emu run moe_dispatch`` on the same 1,024-host fat-tree,
  skewed token routing, 1,024 experts (epoch mode, 1 %);
* ``a2a-16k``: all-to-all of 1 GiB on 256 GB300 racks of 64 GPUs (16,384 GPUs,
  Quantum-X800 two-tier fat-tree), node-level aggregation chosen automatically;
* ``help``: ``fabric-emu --help``.

``--trees DIR [DIR ...]`` times the same cases in several source trees instead (e.g. an unpacked ``git archive``
of the old code and this one): ``python -m cli.main`` run from each tree, the trees interleaved within every
repeat (A B A B ...), median wall and CPU per tree, and whether the trees' stdout bytes are identical.

``--imports CASE`` prints the import profile of a case instead: ``python -X importtime`` of the
whole command, repeated, with the least self time of every module over the repeats (the
least is the one least disturbed by other load), summed per top-level package.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import time

from benchmarks._util import print_table

__all__ = ["CASES", "FLOOR_REPEATS", "cli_args", "measure", "compare_trees", "stages", "floor_samples", "import_profile", "main"]

_A2A = {128: 16, 1024: 64, 4096: 128}


def _a2a(n: int, routing: str) -> list[str]:
    return ["run", "all_to_all", "--topo", "fat-tree", "--set", f"hosts={n}", "--set", f"radix={_A2A[n]}",
            "--set", "link=400Gb/s", "--size", "64MiB", "--routing", routing, "--json"] + (
                ["--seed", "1"] if routing == "ecmp" else [])  # the CLI refuses a seed that spraying does not use


CASES = {f"a2a-{n}-{r}": _a2a(n, r) for n in _A2A for r in ("ecmp", "spray")}
CASES["moe-1024"] = ["run", "moe_dispatch", "--topo", "fat-tree", "--set", "hosts=1024", "--set", "radix=64",
                     "--set", "link=400Gb/s", "--moe-routing", "skewed", "--experts", "1024", "--seed", "1", "--json"]
CASES["a2a-16k"] = ["run", "all_to_all", "--topo", "gb300-nvl72", "--set", "domains=256", "--set",
                    "gpus_per_domain=64", "--set", "scaleout=quantum-x800", "--size", "1GiB", "--routing", "ecmp",
                    "--json"]  # ecmp as recorded before `run` defaulted to the fabric's forwarding (auto)
CASES["help"] = ["--help"]
DEFAULT = ["help", "a2a-128-ecmp", "a2a-1024-ecmp", "a2a-1024-spray", "a2a-4096-ecmp", "a2a-4096-spray", "a2a-16k"]


def cli_args(case: str) -> list[str]:
    """The command line of a case: the installed ``fabric-emu`` script (or ``python -m cli.main``)."""
    exe = shutil.which("fabric-emu", path=os.path.dirname(sys.executable)) or shutil.which("fabric-emu")
    head = [exe] if exe else [sys.executable, "-m", "cli.main"]
    return head + CASES[case]


def measure(args: list[str], extra_env: dict | None = None, cwd: str | None = None) -> dict:
    """Wall, CPU (user + system) and peak RSS of one fresh process (``extra_env``: added to its environment)."""
    t0 = time.perf_counter()
    # the up-front estimate refuses N = 4,096 and the 16k case under the default 8 GiB (it estimates 12.5-31 and
    # 15.5 GiB; their measured peaks are below 2 GB): the benchmark lifts the limit (it only gates the estimate)
    env = {**os.environ, "FABRIC_EMU_MEMORY_LIMIT": os.environ.get("FABRIC_EMU_MEMORY_LIMIT", "64GiB"),
           **(extra_env or {})}
    p = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, env=env, cwd=cwd)
    out = p.stdout.read()
    _, status, ru = os.wait4(p.pid, 0)
    wall = time.perf_counter() - t0
    p.returncode = os.waitstatus_to_exitcode(status)
    return dict(wall=wall, cpu=ru.ru_utime + ru.ru_stime, sys=ru.ru_stime, rss=ru.ru_maxrss * 1024 / 1e6,
                ok=p.returncode == 0, out=out)


def stages(case: str) -> dict:
    """The CLI's pipeline through the library, timed stage by stage, and the floor (in this process)."""
    import numpy as np

    t0 = time.perf_counter()
    from collectives import Collective, planner_for
    from collectives.moe import TokenRouting
    from fabric import Router, compile_with_failures, to_problem
    from fabric.congestion import max_link_utilization
    from fabric.decompose import simulate_split
    from topologies import load_topology
    t_imp = time.perf_counter()
    argv = CASES[case]
    sets = dict(argv[i + 1].split("=", 1) for i, a in enumerate(argv) if a == "--set")
    opt = {argv[i]: argv[i + 1] for i in range(len(argv) - 1) if argv[i].startswith("--") and argv[i] != "--set"}
    cf = compile_with_failures(load_topology(argv[argv.index("--topo") + 1], sets), (), ())
    router = Router(cf)
    t_fab = time.perf_counter()
    planner = planner_for(router, policy=opt.get("--routing", "auto"), seed=int(opt.get("--seed", 0)))
    ranks = tuple(range(cf.n_gpus))
    from topologies.units import parse_size
    if argv[1].startswith("moe"):
        tr = TokenRouting(opt["--moe-routing"], experts=int(opt["--experts"]), seed=int(opt.get("--seed", 0)))
        op = Collective(argv[1], ranks, 0, options={"moe": tr})
    else:
        op = Collective(argv[1], ranks, parse_size(opt["--size"]))
    plan = planner.plan(op)
    t_plan = time.perf_counter()
    problem, used = to_problem(plan.flows.relabel(op.label), router)
    t_prob = time.perf_counter()
    from fabric import kernels
    load0 = kernels.load_seconds()
    result = simulate_split(problem)
    t_eng = time.perf_counter()
    load = kernels.load_seconds() - load0  # numba's import, inside the engine stage when a kernel needed it
    max_link_utilization(router, result, used)
    t_end = time.perf_counter()
    floor = floor_samples(problem)
    return dict(imports=t_imp - t0, fabric=t_fab - t_imp, plan=t_plan - t_fab, problem=t_prob - t_plan,
                engine=t_eng - t_prob, numba_load=load, kernels=kernels.mode(), report=t_end - t_eng,
                floor=statistics.median(floor), floor_lo=_quantile(floor, 0.1), floor_hi=_quantile(floor, 0.9),
                floor_n=len(floor), flows=problem.res.shape[0],
                entries=int(problem.res.size), mode=result.mode_used, time_s=float(result.makespan_s))


FLOOR_REPEATS = 31


def _quantile(xs: list, q: float) -> float:
    """The ``q`` quantile of ``xs`` (nearest rank on the sorted values)."""
    s = sorted(xs)
    return s[min(len(s) - 1, max(0, round(q * (len(s) - 1))))]


def floor_samples(problem, repeats: int = FLOOR_REPEATS) -> list[float]:
    """Seconds of ``repeats`` runs of the one ``np.bincount`` over ``problem``'s flow x resource incidence.

    The keys (resource id + 1, padding -1 -> 0) are built once, outside the timed calls, and every call counts
    the same array, so the samples differ only by what the machine does meanwhile; the caller reports their
    median and spread (a single minimum moved by 3x between two cases of one run on the shared machine).
    """
    import numpy as np

    keys = np.add(problem.res, 1, dtype=np.intp).reshape(-1)
    R1 = len(problem.capacity_Bps) + 1
    np.bincount(keys, minlength=R1)  # first touch of the output and of the keys' pages: not timed
    out = []
    for _ in range(max(1, repeats)):
        a = time.perf_counter()
        np.bincount(keys, minlength=R1)
        out.append(time.perf_counter() - a)
    return out


def _stage_runs(case: str, n: int) -> dict:
    """Medians over ``n`` fresh stage processes of ``case``: stage times, the floor's median and p10-p90
    (the median process's), and engine / floor (each process's ratio of its own engine and floor; range)."""
    got = []
    for _ in range(n):
        out = subprocess.run([sys.executable, "-m", "benchmarks.bench_cli", "--stages-of", case],
                             capture_output=True, text=True, check=False)
        if out.returncode == 0:
            got.append(json.loads(out.stdout.strip().splitlines()[-1]))
    if not got:
        return {}
    for g in got:
        g["ratio"] = g["engine"] / g["floor"]
    st = dict(sorted(got, key=lambda g: g["floor"])[len(got) // 2])  # the process of the median floor
    for k in ("plan", "problem", "engine", "numba_load", "ratio"):
        st[k] = statistics.median(g[k] for g in got)
    st["ratio_lo"], st["ratio_hi"] = min(g["ratio"] for g in got), max(g["ratio"] for g in got)
    return st


def import_profile(case: str, repeat: int = 5) -> tuple[dict, dict]:
    """(least self time per module, summed per top-level package), in seconds, of ``case``'s imports."""
    code = ("import sys; from cli.main import main; sys.argv = ['fabric-emu'] + " + repr(CASES[case])
            + "; main()")
    env = {**os.environ, "FABRIC_EMU_MEMORY_LIMIT": os.environ.get("FABRIC_EMU_MEMORY_LIMIT", "64GiB")}
    best: dict = {}
    for _ in range(max(1, repeat)):
        err = subprocess.run([sys.executable, "-X", "importtime", "-c", code], capture_output=True, text=True,
                             env=env, check=False).stderr
        for line in err.splitlines():
            if not line.startswith("import time:") or "[us]" in line:
                continue
            us, _, name = line[len("import time:"):].split("|")
            name = name.strip()
            best[name] = min(best.get(name, float("inf")), int(us) / 1e6)
    packages: dict = {}
    for name, t in best.items():
        top = name.split(".")[0]
        packages[top] = packages.get(top, 0.0) + t
    return best, dict(sorted(packages.items(), key=lambda kv: -kv[1]))


def _print_imports(case: str, repeat: int) -> None:
    best, packages = import_profile(case, repeat)
    print(f"import profile of {case}: {len(best)} modules, {sum(best.values()) * 1e3:.1f} ms "
          f"(least self time over {repeat} runs)")
    print_table(["package", "ms"], [[k, f"{v * 1e3:.1f}"] for k, v in list(packages.items())[:15]])
    print()
    ours = ("fabric", "topologies", "collectives", "workloads", "cli")
    top = sorted(((t, n) for n, t in best.items() if n.split(".")[0] in ours), reverse=True)[:15]
    print_table(["fabric-emu module", "self ms"], [[n, f"{t * 1e3:.1f}"] for t, n in top])


def compare_trees(trees: list[str], cases: list[str], repeat: int, extra_env: dict | None = None) -> list[list]:
    """Rows (case, tree, median wall, its runs, median CPU, stdout identical to the first tree's) of ``cases``
    run as ``python -m cli.main`` from each of ``trees``, interleaved: every repeat runs each tree once in turn.

    Each tree's bytecode is written on its first run (``PYTHONDONTWRITEBYTECODE`` is dropped from the children's
    environment), and one untimed run per case and tree precedes the timed ones (bytecode, numba's cache).
    """
    env = {k: v for k, v in (extra_env or {}).items()}
    head = [sys.executable, "-m", "cli.main"]
    rows = []
    saved = os.environ.pop("PYTHONDONTWRITEBYTECODE", None)
    try:
        for case in cases:
            runs: dict = {t: [] for t in trees}
            outs = {t: measure(head + CASES[case], env, cwd=t)["out"] for t in trees}  # warm-up, untimed
            for _ in range(max(1, repeat)):
                for t in trees:
                    runs[t].append(measure(head + CASES[case], env, cwd=t))
            for t in trees:
                rs = runs[t]
                same = all(r["out"] == outs[trees[0]] for r in rs) and outs[t] == outs[trees[0]]
                rows.append([case, t, f"{statistics.median(r['wall'] for r in rs):.3f}",
                             ", ".join(f"{r['wall']:.2f}" for r in rs),
                             f"{statistics.median(r['cpu'] for r in rs):.3f}",
                             "ok" if all(r["ok"] for r in rs) else "FAILED", "yes" if same else "NO"])
                print(" | ".join(rows[-1]), flush=True)
    finally:
        if saved is not None:
            os.environ["PYTHONDONTWRITEBYTECODE"] = saved
    return rows


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--cases", nargs="*", default=DEFAULT, choices=sorted(CASES))
    ap.add_argument("--repeat", type=int, default=3, help="fresh CLI processes per case (median reported)")
    ap.add_argument("--no-stages", action="store_true", help="skip the in-library stage run and floor")
    ap.add_argument("--imports", choices=sorted(CASES), help="print the import profile of this case and stop")
    ap.add_argument("--env", action="append", default=[], metavar="KEY=VALUE",
                    help="extra environment of the CLI processes (repeatable), e.g. NUMPY_MADVISE_HUGEPAGE=0 or "
                         "FABRIC_EMU_CACHE=/empty/folder for numba's first-run cost")
    ap.add_argument("--stage-runs", type=int, default=3,
                    help="fresh processes of the timed stages and floor per case (medians reported)")
    ap.add_argument("--stages-of", help=argparse.SUPPRESS)
    ap.add_argument("--trees", nargs="+", metavar="DIR",
                    help="time the cases in each of these source trees, interleaved, instead (A/B)")
    args = ap.parse_args(argv)
    extra = dict(e.split("=", 1) for e in args.env)
    if args.trees:
        line = subprocess.run([sys.executable, "-c", "from benchmarks._util import machine; print(machine())"],
                              capture_output=True, text=True, check=False).stdout.strip()
        print(line or "machine: unknown")
        rows = compare_trees([os.path.abspath(t) for t in args.trees], args.cases, args.repeat, extra)
        print()
        print_table(["case", "tree", "wall s median", "runs", "CPU s median", "status", "stdout = first tree's"],
                    rows)
        return 0
    if args.stages_of:
        print(json.dumps(stages(args.stages_of)))
        return 0
    if args.imports:
        _print_imports(args.imports, max(1, args.repeat))
        return 0
    # the machine line imports numpy, scipy and networkx: not in this process, whose size would be the floor of
    # every child's peak RSS (Linux counts the forking parent's resident pages into a child's ru_maxrss)
    line = subprocess.run([sys.executable, "-c", "from benchmarks._util import machine; print(machine())"],
                          capture_output=True, text=True, check=False).stdout.strip()
    print(line or "machine: unknown")
    if extra:
        print("environment: " + ", ".join(f"{k}={v}" for k, v in extra.items()))
    rows = []
    for case in args.cases:
        runs = [measure(cli_args(case), extra) for _ in range(max(1, args.repeat))]
        ok = all(r["ok"] for r in runs)
        med = {k: statistics.median(r[k] for r in runs) for k in ("wall", "cpu", "sys", "rss")}
        st = {}
        if case != "help" and not args.no_stages and ok:
            st = _stage_runs(case, max(1, args.stage_runs))
        walls = ", ".join(f"{r['wall']:.2f}" for r in runs)
        rows.append([case, "ok" if ok else "FAILED", f"{med['wall']:.2f} ({walls})", f"{med['cpu']:.2f}",
                     f"{med['sys']:.2f}", f"{med['rss']:,.0f}",
                     f"{st['flows']:,}" if st else "-", st.get("mode", "-"),
                     f"{st['plan']:.2f}" if st else "-", f"{st['problem']:.2f}" if st else "-",
                     f"{st['engine']:.3f}" if st else "-",
                     f"{st['kernels']} {st['numba_load']:.2f}" if st else "-",
                     f"{st['floor'] * 1e3:.2f} ({st['floor_lo'] * 1e3:.2f}-{st['floor_hi'] * 1e3:.2f})" if st else "-",
                     f"{st['ratio']:.1f} ({st['ratio_lo']:.1f}-{st['ratio_hi']:.1f})" if st else "-"])
        print(" | ".join(rows[-1]), flush=True)
    print()
    print_table(["case", "status", "wall s median (runs)", "CPU s", "sys s", "peak RSS MB", "flows", "mode",
                 "plan+route s", "problem s", "engine s", "kernels, numba load s",
                 f"floor ms median (p10-p90 of {FLOOR_REPEATS})",
                 f"engine/floor median (range of {args.stage_runs})"], rows)
    return 0


if __name__ == "__main__":
    sys.exit(main())
