"""The ``fabric-emu`` command group: a thin composition root over the library."""

from __future__ import annotations

import functools
import json
import sys

import click
from rich.console import Console

from cli import render
from cli.options import failure_options, json_option, parse_sets, topo_options
from fabric import bisection, compile_with_failures
from topologies import FabricEmuError, load_topology, presets, summarize, write_graph

__all__ = ["cli"]


def _stdout() -> Console:
    return Console(file=sys.stdout, highlight=False, soft_wrap=False, width=max(100, Console().width))


def _progress() -> Console:
    """Progress goes to stderr, and only to a terminal (scripts and pipes see data or one error line)."""
    return Console(file=sys.stderr, highlight=False, quiet=not sys.stderr.isatty())


def _fail(message: str) -> None:
    Console(file=sys.stderr, highlight=False).print(f"[red]error:[/red] {message}", markup=True, soft_wrap=True)
    sys.exit(2)


def handles_errors(f):
    """Turn library errors into one red line on stderr and exit status 2."""
    @functools.wraps(f)
    def wrapper(*args, **kwargs):
        try:
            return f(*args, **kwargs)
        except FabricEmuError as exc:
            _fail(str(exc).replace("[", r"\["))
        except MemoryError:
            _fail("out of memory: shrink the problem (fewer ranks, aggregate flows, epoch mode)")
    return wrapper


def _finite(obj):
    """JSON has no NaN/Infinity: such values become null."""
    if isinstance(obj, float):
        return obj if obj == obj and obj not in (float("inf"), float("-inf")) else None
    if isinstance(obj, dict):
        return {k: _finite(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [_finite(v) for v in obj]
    return obj


def _echo_json(obj) -> None:
    click.echo(json.dumps(_finite(json.loads(json.dumps(obj, default=float))), indent=2))


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="fabric-emu", prog_name="fabric-emu")
def cli() -> None:
    """fabric-emu: what will this fabric deliver for this job, and which links are in the way?"""


@cli.group()
def topo() -> None:
    """List, inspect and export topologies."""


@topo.command("list")
@json_option
@handles_errors
def topo_list(as_json: bool) -> None:
    """List the topology presets and their overrides."""
    ps = presets()
    if as_json:
        _echo_json([{"name": p.name, "description": p.description,
                     "params": {x.name: x.default for x in p.params}} for p in ps])
    else:
        _stdout().print(render.presets_table(ps))


@topo.command("show")
@topo_options
@failure_options
@json_option
@handles_errors
def topo_show(topo: str, sets, fail, degrade, as_json: bool) -> None:
    """Summarise TOPO (a preset name or a .toml spec): counts and bisection bandwidth."""
    G = load_topology(topo, parse_sets(sets))
    cf = compile_with_failures(G, fail, degrade)
    s = summarize(G)
    b = bisection(cf) if cf.n_gpus >= 2 else None
    if as_json:
        out = s.as_dict()
        out["bisection_GBps"] = b.bisection_Bps / 1e9 if b else None
        out["per_gpu_bisection_GBps"] = b.per_gpu_Bps / 1e9 if b else None
        out["partition"] = b.partition.as_dict() if b else None
        out["failures"] = [{"selector": sel, "links": len(l)} for sel, l in cf.failures]
        out["meta"] = dict(cf.meta)
        _echo_json(out)
    else:
        _stdout().print(render.summary_table(s, b, cf.failures))


@topo.command("export")
@topo_options
@click.option("--format", "fmt", type=click.Choice(["graphml", "json"]), required=True, help="Output format.")
@click.option("-o", "--output", "output", required=True, type=click.Path(dir_okay=False), help="Output file.")
@handles_errors
def topo_export(topo: str, sets, fmt: str, output: str) -> None:
    """Write TOPO as GraphML or node-link JSON."""
    G = load_topology(topo, parse_sets(sets))
    write_graph(G, output, fmt)
    click.echo(f"wrote {output} ({G.number_of_nodes():,} nodes, {G.number_of_edges():,} links)", err=True)


@cli.command("bisect")
@topo_options
@failure_options
@json_option
@handles_errors
def bisect_cmd(topo: str, sets, fail, degrade, as_json: bool) -> None:
    """Bisection bandwidth of TOPO per direction: min cut over structured halves."""
    G = load_topology(topo, parse_sets(sets))
    cf = compile_with_failures(G, fail, degrade)
    b = bisection(cf)
    if as_json:
        out = b.as_dict()
        out["topology"] = cf.name
        out["failures"] = [sel for sel, _ in cf.failures]
        _echo_json(out)
    else:
        _stdout().print(render.bisection_table([(cf.name, b)]))
        _stdout().print(f"min-cut partition: {b.partition.describe()}")


@cli.command("run")
@click.argument("collective", metavar="COLLECTIVE")
@click.option("--topo", "topo", required=True, help="Preset name or .toml spec.")
@click.option("--set", "sets", multiple=True, metavar="KEY=VALUE", help="Override a preset parameter (repeatable).")
@click.option("--ranks", "ranks", default="all", show_default=True, help="Number of GPU ranks (the first N) or 'all'.")
@click.option("--size", "size", default=None, help="Message size, e.g. 1MiB (nccl-tests' size).")
@click.option("--sizes", "sizes", default=None, help="Size sweep MIN:MAX[:xF], e.g. 1KiB:8GiB.")
@click.option("--algo", "algo", default="auto", show_default=True,
              type=click.Choice(["ring", "tree", "nvls", "sharp", "hier", "direct", "auto"]))
@click.option("--routing", "routing", default="ecmp", show_default=True, type=click.Choice(["ecmp", "dmodk", "spray"]))
@click.option("--seed", "seed", default=0, show_default=True, type=click.IntRange(min=0),
              help="Seed of ECMP hashing and token routing.")
@click.option("--groups", "groups", default=1, show_default=True, type=int,
              help="Split the ranks into this many groups that run the collective at the same time.")
@click.option("--layout", "layout", default="contiguous", show_default=True,
              type=click.Choice(["contiguous", "strided"]), help="How --groups split the ranks.")
@click.option("--pxn/--no-pxn", "pxn", default=None, help="Force NCCL's PXN forwarding on or off.")
@click.option("--moe-routing", "moe_routing", default=None,
              type=click.Choice(["uniform", "skewed", "node_limited", "deepseek"]),
              help="MoE token routing (default: node_limited across domains, uniform inside one).")
@click.option("--tokens", "tokens", default=4096, show_default=True, type=int, help="MoE tokens per rank.")
@click.option("--hidden", "hidden", default=7168, show_default=True, type=int, help="MoE hidden size.")
@click.option("--experts", "experts", default=256, show_default=True, type=int, help="MoE routed experts.")
@click.option("--topk", "topk", default=8, show_default=True, type=int, help="MoE experts per token.")
@failure_options
@click.option("--report", "report", is_flag=True, help="Add the congestion report (for the largest size).")
@click.option("--top", "top", default=10, show_default=True, type=click.IntRange(min=1),
              help="Hottest links in the congestion report.")
@click.option("--plot", "plot", default=None, type=click.Path(dir_okay=False),
              help="Write busbw against size (.png/.svg); with --report also the link utilisation heat map.")
@json_option
@handles_errors
def run_cmd(collective, topo, sets, ranks, size, sizes, algo, routing, seed, groups, layout, pxn, moe_routing,
            tokens, hidden, experts, topk, fail, degrade, report, top, plot, as_json) -> None:
    """Simulate COLLECTIVE on a fabric and print nccl-tests-style results."""
    from cli.run import run_command

    run_command(_stdout(), _progress(), as_json=as_json, collective=collective,
                topo=topo, sets=parse_sets(sets), ranks=ranks, size=size, sizes=sizes, algo=algo, routing=routing,
                seed=seed, groups=groups, layout=layout, pxn=pxn, moe_routing=moe_routing, tokens=tokens,
                hidden=hidden, experts=experts, topk=topk, fail=fail, degrade=degrade, report=report,
                top=top, plot=plot)


@cli.command("validate")
@click.option("--file", "path", default=None, type=click.Path(dir_okay=False),
              help="Validation file (default: the reference points shipped with fabric-emu).")
@json_option
@handles_errors
def validate_cmd(path, as_json) -> None:
    """Predict every published reference point and compare with the measurement."""
    from cli.report import validation_table
    from collectives.validate import validate

    err = _progress()
    rep = validate(path, progress=lambda pid, k, n: err.print(f"[{k}/{n}] {pid}", highlight=False))
    if as_json:
        _echo_json(rep.as_dict())
    else:
        _stdout().print(validation_table(rep))


@cli.command("demo")
@handles_errors
def demo() -> None:
    """A tour: topology summaries and bisection bandwidth of reference systems."""
    from cli.demo import run_demo

    run_demo(_stdout(), _progress())

from cli.models_cmd import models_command  # noqa: E402  (fabric-emu models)
cli.add_command(models_command)
from cli.sweep_cmd import sweep_group  # noqa: E402  (fabric-emu sweep)
cli.add_command(sweep_group)
