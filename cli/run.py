"""``fabric-emu run``: compose topology, failures, routing and collectives from CLI options.

Before anything is built, the run is checked: options that do not apply to the
collective are refused, and the problem's memory is estimated from its size
(:mod:`topologies.sizing`, :mod:`collectives.budget`) -- once from the preset
parameters before building (with the fewest hops a flow can have, so it never
refuses what would fit) and once from the built fabric before routing.
"""

from __future__ import annotations

import re

import click

from cli.options import AsciiInt, VocabularyChoice, failure_options, given_options, json_option, memory_option, \
    parse_sets
from cli.output import clean, echo_json, handles_errors, progress_console, stdout_console
from topologies.limits import MAX_HIDDEN, MAX_SEED as _MAX_SEED

__all__ = ["run_cmd", "run_command", "make_groups", "check_applicable", "nccl_version_option", "nccl_size_options",
           "MOE_OPTIONS", "MAX_SEED", "MAX_SIZE_BYTES"]

#: Options that only MoE dispatch/combine use.
MOE_OPTIONS = ("tokens", "hidden", "experts", "topk", "moe_routing")
#: Largest message size: 1 PiB, far beyond any GPU's memory (288 GB HBM on B300); above it the
#: times overflow to meaningless values.
MAX_SIZE_BYTES = 1 << 50
#: Seeds are 64-bit hash salts (the one bound: topologies.limits.MAX_SEED).
MAX_SEED = _MAX_SEED
_RANKS_RE = re.compile(r"[0-9]{1,12}")
#: Forced algorithms that an option does not change (measured: byte-identical results with and without it
#: on 1, 2 and 4 HGX H100 nodes over Quantum-2 and one GB200 NVL72, 64 KiB .. 1 GiB): NVLS on/off and
#: CollNet only enter NCCL's choice (auto; CollNet also the multi-node NVLS of --algo nvls); the NVLS chunk
#: size only NVLS steps; the buffer size only tree and NVLS pipelines.
_NO_NVLS_CHOICE = ("ring", "tree", "sharp", "hier")
_NO_COLLNET_CHOICE = ("ring", "tree", "hier")
_NO_NVLS_CHUNKS = ("ring", "tree", "sharp")
_NO_BUFFSIZE = ("ring", "sharp")


def _flag(name: str) -> str:
    return "--" + name.replace("_", "-").replace("as-json", "json")


def make_groups(n_total: int, ranks: str, groups: int, layout: str) -> list[tuple[int, ...]]:
    """The rank groups: the first N ranks (or all), split into ``groups`` contiguous or strided groups."""
    from collectives.groups import rank_groups

    n = "all" if ranks == "all" else _ranks(ranks)
    return rank_groups(n_total, n, groups, layout, ranks_field="--ranks", groups_field="--groups")


def _ranks(ranks: str) -> int:
    from topologies.errors import SpecError, brief

    if not isinstance(ranks, str) or not _RANKS_RE.fullmatch(ranks) or int(ranks) < 2:
        raise SpecError(f"--ranks: {brief(ranks)} must be an integer >= 2 (ASCII digits) or 'all'")
    return int(ranks)


def nccl_version_option(text: str | None) -> str | None:
    """Check ``--nccl-version`` (``2.MINOR[.PATCH]``, from 2.18); returns it normalised as ``2.M.P``."""
    from collectives.ops import check_nccl_version

    return None if text is None else check_nccl_version(text, field="--nccl-version")


def nccl_size_options(buffsize: str | None, nvls_chunk: str | None) -> dict:
    """``--nccl-buffsize`` / ``--nvls-chunksize`` (sizes such as ``8MiB``) as the collective options
    ``nccl_buffsize`` / ``nvls_chunk_bytes``, checked as the planner checks them (one line naming the flag)."""
    from collectives.algorithms import Planner
    from collectives.ops import Collective
    from collectives.trees import check_buffsize
    from topologies.errors import SpecError
    from topologies.units import parse_size

    opts: dict = {}
    checks = (("nccl_buffsize", buffsize, check_buffsize),
              ("nvls_chunk_bytes", nvls_chunk, lambda v: Planner.nvls_chunk_option(
                  Collective("all_reduce", (0, 1), 1, options={"nvls_chunk_bytes": v}))))
    for (key, text, check), flag in zip(checks, ("--nccl-buffsize", "--nvls-chunksize")):
        if text is None:
            continue
        value = parse_size(text, field=flag)
        try:
            check(value)
        except SpecError as exc:  # "options KEY: ..." -> the flag the user typed
            raise SpecError(f"{flag}: {str(exc).split(': ', 1)[-1]}") from None
        opts[key] = value
    return opts


def check_applicable(collective: str, given: set[str], *, routing: str, groups: int, algo: str = "auto",
                     nvls: bool | None = None, collnet: bool | None = None) -> None:
    """Refuse options the user gave that this collective would ignore."""
    from collectives.ops import NCCL_SWITCH_COLLECTIVES as switch  # what NVLS / CollNet can run
    from collectives.ops import PXN_COLLECTIVES
    from topologies.errors import SpecError

    moe = collective.startswith("moe")
    for name in MOE_OPTIONS:
        if name in given and not moe:
            raise SpecError(f"{_flag(name)}: applies only to moe_dispatch and moe_combine, not {collective}")
    if "dispatch_dtype" in given and collective != "moe_dispatch":
        raise SpecError(f"--dispatch-dtype: applies only to moe_dispatch (the combine sends BF16), not {collective}")
    if "nccl_version" in given and moe:
        raise SpecError(f"--nccl-version: selects NCCL's tuning tables; {collective} runs an expert-parallel "
                        f"kernel, not NCCL's tuner")
    for name, what in (("nccl_buffsize", "NCCL_BUFFSIZE"), ("nvls_chunksize", "NCCL_NVLS_CHUNKSIZE")):
        if name in given and moe:
            raise SpecError(f"{_flag(name)}: sets {what} for NCCL's collectives; {collective} runs an "
                            f"expert-parallel kernel")
    for name in ("nccl_buffsize", "nvls_chunksize"):
        if name in given and not moe and collective not in switch:
            raise SpecError(f"{_flag(name)}: sizes the tree and NVLS chunks of {', '.join(switch)}; the model of "
                            f"{collective} does not use it")
    if "nvls" in given and collective not in switch:
        raise SpecError(f"--nvls/--no-nvls: applies to {', '.join(switch)}; NCCL runs {collective} without NVLS")
    # a forced algorithm bypasses NCCL's choice: what only that choice (or another algorithm) reads is ignored
    for name, flag, algos, what in (
            ("nvls", "--nvls/--no-nvls", _NO_NVLS_CHOICE, "NCCL's choice of NVLS"),
            ("collnet", "--collnet/--no-collnet", _NO_COLLNET_CHOICE, "NCCL's choice of CollNet / multi-node NVLS"),
            ("nvls_chunksize", "--nvls-chunksize", _NO_NVLS_CHUNKS, "the NVLS chunks"),
            ("nccl_buffsize", "--nccl-buffsize", _NO_BUFFSIZE, "the tree and NVLS pipelines' chunks")):
        if name in given and algo in algos:
            raise SpecError(f"{flag}: sets {what}; --algo {algo} does not use it (give --algo auto to let NCCL "
                            f"choose)")
    if nvls is False and algo == "nvls":
        raise SpecError("--no-nvls: turns NVLS off (NCCL_NVLS_ENABLE=0); it cannot go with --algo nvls")
    if "collnet" in given and collective not in switch:
        raise SpecError(f"--collnet/--no-collnet: applies to {', '.join(switch)}; NCCL runs {collective} "
                        f"without CollNet")
    if collnet is False and algo == "sharp":
        raise SpecError("--no-collnet: leaves CollNet off (NCCL_COLLNET_ENABLE=0); it cannot go with --algo sharp")
    for name in ("size", "sizes"):
        if name in given and moe:
            raise SpecError(f"{_flag(name)}: does not apply to {collective}: the token routing gives the bytes "
                            f"(use --tokens, --hidden, --topk)")
    if "pxn" in given and collective not in PXN_COLLECTIVES:
        raise SpecError(f"--pxn/--no-pxn: applies to {', '.join(PXN_COLLECTIVES)}; {collective} picks its own "
                        f"forwarding")
    if "layout" in given and groups == 1:
        raise SpecError("--layout: applies only with --groups > 1")
    if "seed" in given and routing not in ("ecmp", "auto") and not moe:  # auto: once the fabric is built
        raise SpecError(f"--seed: seeds ECMP hashing and MoE token routing; --routing {routing} with {collective} "
                        f"does not use it")


def run_command(out, err, *, as_json: bool, collective: str, topo: str, sets: dict, ranks: str,
                size, sizes, algo, routing, seed, groups, layout, pxn, moe_routing, tokens, hidden, experts, topk,
                fail, degrade, report, memory_limit=None, given: set[str] = frozenset(), top=10,
                plot=None, nccl_version=None, nvls=None, dispatch_dtype="fp8", collnet=None, nccl_buffsize=None,
                nvls_chunksize=None) -> None:
    from collectives import COLLECTIVES, planner_for, sweep
    from collectives.runner import resolve_policy
    from collectives.budget import check_collective, fabric_tiers, hops_bound
    from fabric import Router, compile_with_failures
    from topologies import load_topology
    from topologies.errors import SpecError, brief
    from topologies.limits import memory_limit_bytes
    from topologies.spec import estimate_topology
    from topologies.units import parse_size, parse_size_range

    if collective not in COLLECTIVES:
        raise SpecError(f"COLLECTIVE: {brief(collective)} is not one of {', '.join(COLLECTIVES)}")
    memory_limit_bytes(memory_limit)  # a malformed --memory-limit fails first
    from cli.plot import check_plot_path

    check_plot_path(plot)  # before any work: a bad path is refused at once and nothing is written
    if "top" in given and not report:
        raise SpecError("--top: sizes the congestion report; add --report (without it no link is listed)")
    if size is not None and sizes is not None:
        raise SpecError("--size and --sizes: give one of them")
    check_applicable(collective, given, routing=routing, groups=groups, algo=algo, nvls=nvls, collnet=collnet)
    nccl_version = nccl_version_option(nccl_version)
    nccl_options = nccl_size_options(nccl_buffsize, nvls_chunksize)
    moe = collective.startswith("moe")
    if moe:
        size_list = [0]
    elif sizes is not None:
        size_list = parse_size_range(sizes, field="--sizes")
    else:
        size_list = [parse_size("1GiB" if size is None else size, field="--size")]
    if not moe and min(size_list) < 1:
        raise SpecError("--size: 0 bytes moves nothing (busbw and the bound would be 0/0); give 1 byte or more")
    if max(size_list) > MAX_SIZE_BYTES:
        raise SpecError(f"{'--sizes' if sizes is not None else '--size'}: {max(size_list):.3g} bytes is over "
                        f"1 PiB ({MAX_SIZE_BYTES:,} B); no GPU holds a buffer that large")
    tr = None
    if moe:  # the token machinery (collectives.moe) is imported for MoE runs only
        from collectives import TokenRouting
        from collectives.moe import UNSEEDED_KINDS

        tr = TokenRouting(moe_routing or "uniform", tokens_per_rank=tokens, hidden=hidden, experts=experts,
                          topk=topk, seed=seed, dispatch_dtype=dispatch_dtype)
    # 1. before building: the topology's own size, and the collective with the fewest hops a flow can have
    est = estimate_topology(topo, sets)
    if est is not None:
        n = est.gpus if ranks == "all" else min(_ranks(ranks), est.gpus)
        if n >= 2 and groups >= 1 and n % groups == 0:
            check_collective(collective, [n // groups] * groups, hops=2, domain_gpus=est.domain_gpus, moe=tr,
                             pxn=pxn, limit=memory_limit)
    err.print(f"building {clean(topo)} ...")
    G = load_topology(topo, sets, memory_limit=memory_limit)
    cf = compile_with_failures(G, fail, degrade)
    rank_groups = make_groups(cf.n_gpus, ranks, groups, layout)
    if fabric_tiers(cf) == 0:
        if "routing" in given:
            raise SpecError(f"--routing: {clean(cf.name)} has no scale-out network; the routing policy only picks "
                            f"paths through network switches")
        if "seed" in given and not collective.startswith("moe"):
            raise SpecError(f"--seed: {clean(cf.name)} has no scale-out network to hash flows over, and "
                            f"{collective} routes no tokens")
        if "pxn" in given:
            raise SpecError(f"--pxn/--no-pxn: {clean(cf.name)} has no scale-out network; PXN forwards network "
                            f"traffic over NVLink")
    # 2. before routing: with the built fabric's tiers
    domain_gpus = max(1, cf.n_gpus // max(1, len(set(int(d) for d in cf.node_domain[cf.gpus]))))
    nvlink = bool((cf.node_role == 2).any())
    check_collective(collective, [len(g) for g in rank_groups], hops=hops_bound(fabric_tiers(cf), nvlink),
                     domain_gpus=domain_gpus, moe=tr, pxn=pxn, limit=memory_limit)
    router = Router(cf)
    policy = resolve_policy(router, routing)  # auto: as the fabric's scale-out switches forward
    if routing == "auto" and "seed" in given and policy != "ecmp" and not moe and fabric_tiers(cf):
        raise SpecError(f"--seed: seeds ECMP hashing and MoE token routing; --routing auto routes {clean(cf.name)} "
                        f"with {policy} (its switches' forwarding), which does not use it; --routing ecmp hashes")
    options: dict = {}
    if pxn is not None:
        options["pxn"] = pxn
    if nccl_version is not None:
        options["nccl_version"] = nccl_version
    if nvls is not None:
        options["nvls"] = nvls
    if collnet is not None:
        options["collnet"] = collnet
    options.update(nccl_options)
    if moe:
        n_domains = len({int(cf.node_domain[cf.gpus[r]]) for r in rank_groups[0]})
        if moe_routing == "node_limited" and n_domains == 1:
            raise SpecError("--moe-routing node_limited: limits each token to a few nodes; these ranks are on one "
                            "node (use uniform, skewed or deepseek)")
        kind = moe_routing or ("node_limited" if n_domains > 1 else "uniform")
        if "seed" in given and kind in UNSEEDED_KINDS and not (policy == "ecmp" and fabric_tiers(cf)):
            raise SpecError(f"--seed: --moe-routing {kind} draws no tokens (its counts are fixed), and "
                            + (f"{clean(cf.name)} has no scale-out network to hash flows over" if not fabric_tiers(cf)
                               else f"routing {policy} does not hash flows") + "; the seed would change nothing")
        options["moe"] = TokenRouting(kind, tokens_per_rank=tokens, hidden=hidden, experts=experts, topk=topk,
                                      seed=seed, dispatch_dtype=dispatch_dtype)
    planner = planner_for(router, policy=policy, seed=seed)
    shown = f"{policy} (auto)" if routing == "auto" else routing
    if "collnet" in given:  # NCCL_COLLNET_ENABLE counts only with SHARP switches, across NVLink domains
        if not planner.has_sharp:
            raise SpecError(f"--collnet/--no-collnet: {clean(cf.name)} has no switches with SHARP (CollNet needs "
                            f"quantum-2 or quantum-x800 switches); NCCL runs without CollNet here")
        if len(planner.groups_by_domain(rank_groups[0])) == 1:
            raise SpecError("--collnet/--no-collnet: these ranks share one NVLink domain; CollNet (SHARP) "
                            "reduces across domains over the network")

    def progress(k, n, s):
        if n > 1:
            err.print(f"[{k}/{n}] {s:,} bytes")

    rows = sweep(router, collective, rank_groups, size_list, algorithm=algo, report=report, options=options,
                 planner=planner, progress=progress, memory_limit=memory_limit, top=top)
    last = rows[-len(rank_groups)].report if report else None
    if plot:
        import numpy as np

        from cli.plot import run_figure
        from topologies.graph import TIERS

        run_figure(plot, rows, last, np.asarray(TIERS)[cf.link_tier] if last is not None else None,
                   title=f"{collective} on {cf.name}, routing {shown}")
        err.print(f"wrote {plot}")
    if as_json:
        echo_json([r.as_dict() for r in rows])
        return
    from cli.report import congestion_panel, results_table

    title = (f"{collective} on {clean(cf.name)}: {len(rank_groups)} group(s) of {len(rank_groups[0])} ranks, "
             f"routing {shown}" + (f", seed {seed}" if policy == "ecmp" or moe else "")
             + (f", failed: {', '.join(clean(f) for f in fail)}" if fail else "")
             + (f", NCCL {nccl_version}" if nccl_version else "") + (", NVLS off" if nvls is False else "")
             + (", CollNet on" if collnet else "")
             + (", BF16 dispatch" if moe and dispatch_dtype == "bf16" else ""))
    out.print(results_table(rows, title))
    if moe:
        out.print("* MoE sizes are DeepEP's logical bytes per rank; algbw = logical bytes / time.")
    from cli.render import oversubscription_note

    note = oversubscription_note(G.graph.get("meta", {}), only_if_rounded=True)
    if note:
        out.print(f"oversubscription: {note}")
    if last is not None:
        import numpy as np

        from topologies.graph import TIERS

        out.print(congestion_panel(last, top=top, link_tiers=np.asarray(TIERS)[cf.link_tier]))


@click.command("run")
@click.argument("collective", metavar="COLLECTIVE", type=VocabularyChoice("collectives.COLLECTIVES"))
@click.option("--topo", "topo", required=True, help="Preset name or .toml spec.")
@click.option("--set", "sets", multiple=True, metavar="KEY=VALUE", help="Override a preset parameter (repeatable).")
@click.option("--ranks", "ranks", default="all", show_default=True, help="Number of GPU ranks (the first N) or 'all'.")
@click.option("--size", "size", default=None, help="Message size, e.g. 1MiB (nccl-tests' size; default 1GiB).")
@click.option("--sizes", "sizes", default=None, help="Size sweep MIN:MAX[:xF], e.g. 1KiB:8GiB.")
@click.option("--algo", "algo", default="auto", show_default=True, type=VocabularyChoice("collectives.ALGORITHMS"))
@click.option("--routing", "routing", default="auto", show_default=True,
              type=VocabularyChoice("collectives.runner.POLICY_CHOICES"),
              help="Scale-out load balancing; auto: as the fabric's switches forward (InfiniBand by destination "
                   "= dmodk, Spectrum-X and EFA spray, other Ethernet ECMP hashing).")
@click.option("--seed", "seed", default=0, show_default=True, type=AsciiInt(min=0, max=MAX_SEED),
              help="Seed of ECMP hashing and token routing.")
@click.option("--groups", "groups", default=1, show_default=True, type=AsciiInt(min=1, max=1 << 20),
              help="Split the ranks into this many groups that run the collective at the same time.")
@click.option("--layout", "layout", default="contiguous", show_default=True,
              type=VocabularyChoice("collectives.LAYOUTS"), help="How --groups split the ranks.")
@click.option("--pxn/--no-pxn", "pxn", default=None, help="Force NCCL's PXN forwarding on or off.")
@click.option("--nvls/--no-nvls", "nvls", default=None,
              help="--no-nvls: NCCL_NVLS_ENABLE=0 (no NVLS or NVLSTree in NCCL's choice).")
@click.option("--collnet/--no-collnet", "collnet", default=None,
              help="--collnet: NCCL_COLLNET_ENABLE=1 with the SHARP plugin (CollNet and multi-node NVLS in "
                   "NCCL's choice on SHARP switches); default off, as NCCL's.")
@click.option("--nccl-version", "nccl_version", default=None, metavar="2.M[.P]",
              help="NCCL release whose tuning tables and caps apply, from 2.18 (default: the newest modelled, "
                   "2.30.7).")
@click.option("--nccl-buffsize", "nccl_buffsize", default=None, metavar="SIZE",
              help="NCCL_BUFFSIZE (e.g. 8MiB; default NCCL's 4MiB): the Simple step, i.e. the tree pipeline's chunk.")
@click.option("--nvls-chunksize", "nvls_chunksize", default=None, metavar="SIZE",
              help="NCCL_NVLS_CHUNKSIZE (16KiB..16MiB; default 128KiB, AWS's net plugin sets 512KiB).")
@click.option("--moe-routing", "moe_routing", default=None, type=VocabularyChoice("collectives.ROUTING_KINDS"),
              help="MoE token routing (default: node_limited across domains, uniform inside one).")
@click.option("--tokens", "tokens", default=4096, show_default=True, type=AsciiInt(min=1), help="MoE tokens per rank.")
@click.option("--hidden", "hidden", default=7168, show_default=True, type=AsciiInt(min=1, max=MAX_HIDDEN),
              help="MoE hidden size.")
@click.option("--experts", "experts", default=256, show_default=True, type=AsciiInt(min=1), help="MoE routed experts.")
@click.option("--topk", "topk", default=8, show_default=True, type=AsciiInt(min=1), help="MoE experts per token.")
@click.option("--dispatch-dtype", "dispatch_dtype", default="fp8", show_default=True,
              type=VocabularyChoice("collectives.ops.DISPATCH_DTYPES"), help="Token format of moe_dispatch.")
@failure_options
@click.option("--report", "report", is_flag=True, help="Add the congestion report (for the largest size).")
@click.option("--top", "top", default=10, show_default=True, type=AsciiInt(min=1, max=10_000),
              help="Hottest links in the congestion report.")
@click.option("--plot", "plot", default=None, type=click.Path(dir_okay=False),
              help="Write busbw against size (.png/.svg); with --report also the link utilisation heat map.")
@memory_option
@json_option
@click.pass_context
@handles_errors
def run_cmd(ctx, collective, topo, sets, ranks, size, sizes, algo, routing, seed, groups, layout, pxn, nvls, collnet,
            nccl_version, nccl_buffsize, nvls_chunksize, moe_routing, tokens, hidden, experts, topk, dispatch_dtype, fail,
            degrade, report, top, plot, memory_limit, as_json) -> None:
    """Simulate COLLECTIVE on a fabric and print nccl-tests-style results."""
    run_command(stdout_console(), progress_console(), as_json=as_json, collective=collective,
                topo=topo, sets=parse_sets(sets), ranks=ranks, size=size, sizes=sizes, algo=algo, routing=routing,
                seed=seed, groups=groups, layout=layout, pxn=pxn, moe_routing=moe_routing, tokens=tokens,
                hidden=hidden, experts=experts, topk=topk, fail=fail, degrade=degrade, report=report,
                memory_limit=memory_limit, given=given_options(ctx), top=top, plot=plot, nccl_version=nccl_version,
                nvls=nvls, dispatch_dtype=dispatch_dtype, collnet=collnet, nccl_buffsize=nccl_buffsize,
                nvls_chunksize=nvls_chunksize)
