"""``fabric-emu demo``: the main job, end to end, on reference systems."""

from __future__ import annotations

from rich.console import Console

from cli import render
from fabric import bisection, compile_with_failures
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
