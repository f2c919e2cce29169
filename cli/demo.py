"""``fabric-emu demo``: the main job, end to end, on reference systems."""

from __future__ import annotations

from rich.console import Console

from cli import render
from cli.report import congestion_panel, results_table
from collectives import Collective, planner_for, run
from fabric import Router, bisection, compile_with_failures
from topologies import build, summarize

__all__ = ["run_demo", "DEMO_TOPOLOGIES"]

#: (label, preset, overrides)
DEMO_TOPOLOGIES = (
    ("HGX H100", "hgx-h100", {}),
    ("GB300 NVL72", "gb300-nvl72", {}),
    ("4 x GB300 NVL72 + Quantum-X800", "gb300-nvl72", {"domains": 4, "scaleout": "quantum-x800"}),
    ("DGX H100 SuperPOD, 4 SUs", "superpod-h100", {"sus": 4}),
    ("fat-tree 1024 hosts, radix 48, 1:1", "fat-tree", {"hosts": 1024, "radix": 48}),
    ("fat-tree 1024 hosts, radix 48, 2:1", "fat-tree", {"hosts": 1024, "radix": 48, "oversubscription": 2}),
)


def run_demo(out: Console, err: Console) -> None:
    rows = []
    for label, name, overrides in DEMO_TOPOLOGIES:
        err.print(f"building {label} ...")
        G = build(name, overrides)
        cf = compile_with_failures(G)
        b = bisection(cf)
        out.print(render.summary_table(summarize(G), b))
        rows.append((label, b))
    out.print(render.bisection_table(rows))

    # collectives on four GB300 NVL72 racks joined by Quantum-X800
    err.print("running collectives on 4 x GB300 NVL72 + Quantum-X800 ...")
    router = Router(compile_with_failures(build("gb300-nvl72", {"domains": 4, "scaleout": "quantum-x800"})))
    planner = planner_for(router)
    everyone = tuple(range(router.cf.n_gpus))
    reduce_rows = [run(router, [Collective("all_reduce", everyone, size)], planner=planner)[0]
                   for size in (1 << 20, 64 << 20, 1 << 30)]
    out.print(results_table(reduce_rows, "all_reduce over 288 GB300 GPUs (4 NVL72 racks), algorithm chosen as NCCL would"))
    [a2a] = run(router, [Collective("all_to_all", everyone, 256 << 20)], planner=planner, report=True)
    out.print(results_table([a2a], "all_to_all over 288 GB300 GPUs, PXN, static ECMP"))
    out.print(congestion_panel(a2a.report, top=5))
