"""``fabric-emu run``: compose topology, failures, routing and collectives from CLI options."""

from __future__ import annotations

from rich.console import Console

from cli.report import congestion_panel, results_table
from collectives import COLLECTIVES, TokenRouting, planner_for, sweep
from fabric import Router, compile_with_failures
from topologies import load_topology
from topologies.errors import SpecError
from topologies.units import parse_size, parse_size_range

__all__ = ["run_command", "make_groups"]


def make_groups(n_total: int, ranks: str, groups: int, layout: str) -> list[tuple[int, ...]]:
    """The rank groups: the first N ranks (or all), split into ``groups`` contiguous or strided groups."""
    if ranks == "all":
        n = n_total
    else:
        if not ranks.isdigit() or int(ranks) < 2:
            raise SpecError(f"--ranks: {ranks!r} must be an integer >= 2 or 'all'")
        n = int(ranks)
    if n > n_total:
        raise SpecError(f"--ranks: {n} exceeds the topology's {n_total} GPUs")
    if groups < 1 or n % groups or n // groups < 2:
        raise SpecError(f"--groups: {groups} must divide {n} ranks into groups of at least 2")
    m = n // groups
    if layout == "contiguous":
        return [tuple(range(g * m, (g + 1) * m)) for g in range(groups)]
    return [tuple(range(g, n, groups)) for g in range(groups)]


def run_command(out: Console, err: Console, *, as_json: bool, collective: str, topo: str, sets: dict, ranks: str,
                size, sizes, algo, routing, seed, groups, layout, pxn, moe_routing, tokens, hidden, experts, topk,
                fail, degrade, report, top=10, plot=None) -> None:
    if collective not in COLLECTIVES:
        raise SpecError(f"COLLECTIVE: {collective!r} is not one of {', '.join(COLLECTIVES)}")
    if size and sizes:
        raise SpecError("--size and --sizes: give one of them")
    moe = collective.startswith("moe")
    if moe:
        size_list = [0]
    elif sizes:
        size_list = parse_size_range(sizes, field="--sizes")
    else:
        size_list = [parse_size(size or "1GiB", field="--size")]
    err.print(f"building {topo} ...")
    G = load_topology(topo, sets)
    cf = compile_with_failures(G, fail, degrade)
    router = Router(cf)
    rank_groups = make_groups(cf.n_gpus, ranks, groups, layout)
    options: dict = {}
    if pxn is not None:
        options["pxn"] = pxn
    if moe:
        n_domains = len({int(cf.node_domain[cf.gpus[r]]) for r in rank_groups[0]})
        kind = moe_routing or ("node_limited" if n_domains > 1 else "uniform")
        options["moe"] = TokenRouting(kind, tokens_per_rank=tokens, hidden=hidden, experts=experts, topk=topk,
                                      seed=seed)
    planner = planner_for(router, policy=routing, seed=seed)

    def progress(k, n, s):
        if n > 1:
            err.print(f"[{k}/{n}] {s:,} bytes")

    rows = sweep(router, collective, rank_groups, size_list, algorithm=algo, report=report, options=options,
                 planner=planner, progress=progress)
    last = rows[-len(rank_groups)].report if report else None
    if plot:
        import numpy as np

        from cli.plot import run_figure
        from topologies.graph import TIERS

        run_figure(plot, rows, last, np.asarray(TIERS)[cf.link_tier] if last is not None else None,
                   title=f"{collective} on {cf.name}, routing {routing}")
        err.print(f"wrote {plot}")
    if as_json:
        from cli.app import _echo_json
        _echo_json([r.as_dict() for r in rows])
        return
    title = (f"{collective} on {cf.name}: {len(rank_groups)} group(s) of {len(rank_groups[0])} ranks, "
             f"routing {routing}, seed {seed}" + (f", failed: {', '.join(fail)}" if fail else ""))
    out.print(results_table(rows, title))
    if moe:
        out.print("* MoE sizes are DeepEP's logical bytes per rank; algbw = logical bytes / time.")
    if last is not None:
        import numpy as np

        from topologies.graph import TIERS

        out.print(congestion_panel(last, top=top, link_tiers=np.asarray(TIERS)[cf.link_tier]))
