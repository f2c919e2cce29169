"""The ``fabric-emu`` command group: a thin composition root over the library.

Commands import the library inside their bodies, so ``fabric-emu --help``
loads click only. A command that lives in its own module is registered with
one line in :data:`COMMANDS` (``"module:attribute"``); such a module imports
only click and ``cli.options`` / ``cli.output`` at its top.
"""

from __future__ import annotations

import importlib
import sys

import click

from cli.options import (
    VocabularyChoice,
    failure_options,
    json_option,
    memory_option,
    parse_sets,
    topo_options,
)
from cli.output import clean, echo_json, fail, handles_errors, progress_console, stdout_console

__all__ = ["cli", "COMMANDS"]

#: Commands defined in their own modules, one line each: "module:attribute".
COMMANDS = (
    "cli.run:run_cmd",
    "cli.models_cmd:models_command",
    "cli.sweep_cmd:sweep_group",
    "cli.step_cmd:step_cmd",
)


class OneLineGroup(click.Group):
    """A group whose usage errors are one line on stderr (``error: ...``) with exit status 2."""

    def main(self, args=None, prog_name=None, complete_var=None, standalone_mode=True, **extra):
        if not standalone_mode:
            return super().main(args, prog_name, complete_var, standalone_mode, **extra)
        try:
            super().main(args, prog_name, complete_var, standalone_mode=False, **extra)
        except click.exceptions.Exit as exc:
            sys.exit(exc.exit_code)
        except click.UsageError as exc:
            where = exc.ctx.command_path if exc.ctx is not None else (prog_name or "fabric-emu")
            fail(f"{' '.join(exc.format_message().split())} (see '{where} --help')", 2)
        except click.ClickException as exc:
            fail(" ".join(exc.format_message().split()), 2)
        except click.Abort:
            fail("aborted", 1)
        except KeyboardInterrupt:
            fail("interrupted", 130)
        sys.exit(0)


@click.group(cls=OneLineGroup, context_settings={"help_option_names": ["-h", "--help"]})
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
    from cli import render
    from topologies import presets

    ps = presets()
    if as_json:
        echo_json([{"name": p.name, "description": p.description,
                    "params": {x.name: x.default for x in p.params}} for p in ps])
    else:
        stdout_console().print(render.presets_table(ps))


def _load(topo: str, sets, memory_limit):
    from topologies import load_topology

    return load_topology(topo, parse_sets(sets), memory_limit=memory_limit)


def _oversubscription_note(meta: dict) -> str | None:
    """'built 15:1 (asked 1000:1)' when the radix rounded the requested oversubscription."""
    asked = meta.get("oversubscription")
    built = (meta.get("clos") or {}).get("oversubscription_built")
    if not asked or not built:
        return None
    asked = list(asked) if isinstance(asked, (list, tuple)) else [asked]
    pairs = list(zip(["leaf", "spine"], asked, built))
    text = ", ".join(f"{tier} {b:.3g}:1" for tier, _, b in pairs)
    if any(abs(b - a) > 0.01 * a for _, a, b in pairs):
        text += " (asked " + ", ".join(f"{a:g}:1" for _, a, _ in pairs) + "; the switch radix rounds the port split)"
    return text


@topo.command("show")
@topo_options
@failure_options
@memory_option
@json_option
@handles_errors
def topo_show(topo: str, sets, fail, degrade, memory_limit, as_json: bool) -> None:
    """Summarise TOPO (a preset name or a .toml spec): counts and bisection bandwidth."""
    from cli import render
    from fabric import bisection, compile_with_failures
    from topologies import summarize

    G = _load(topo, sets, memory_limit)
    cf = compile_with_failures(G, fail, degrade)
    s = summarize(G)
    b = bisection(cf) if cf.n_gpus >= 2 else None
    note = _oversubscription_note(G.graph.get("meta", {}))
    if as_json:
        out = s.as_dict()
        out["bisection_GBps"] = b.bisection_Bps / 1e9 if b else None
        out["per_gpu_bisection_GBps"] = b.per_gpu_Bps / 1e9 if b else None
        out["partition"] = b.partition.as_dict() if b else None
        out["failures"] = [{"selector": sel, "links": len(l)} for sel, l in cf.failures]
        out["meta"] = dict(cf.meta)
        echo_json(out)
    else:
        stdout_console().print(render.summary_table(s, b, cf.failures, notes={"oversubscription": note}))


@topo.command("export")
@topo_options
@click.option("--format", "fmt", type=VocabularyChoice("topologies.export.FORMATS"), required=True,
              help="Output format.")
@click.option("-o", "--output", "output", required=True, metavar="FILE",
              help="Output file (a new or regular file; written atomically).")
@memory_option
@handles_errors
def topo_export(topo: str, sets, fmt: str, output: str, memory_limit) -> None:
    """Write TOPO as GraphML or node-link JSON."""
    from topologies import write_graph
    from topologies.errors import SpecError

    if not output.strip():
        raise SpecError("-o/--output: empty file name")
    G = _load(topo, sets, memory_limit)
    write_graph(G, output, fmt)
    click.echo(f"wrote {clean(output)} ({G.number_of_nodes():,} nodes, {G.number_of_edges():,} links)", err=True)


@cli.command("bisect")
@topo_options
@failure_options
@memory_option
@json_option
@handles_errors
def bisect_cmd(topo: str, sets, fail, degrade, memory_limit, as_json: bool) -> None:
    """Bisection bandwidth of TOPO per direction: min cut over structured halves."""
    from cli import render
    from fabric import bisection, compile_with_failures

    G = _load(topo, sets, memory_limit)
    cf = compile_with_failures(G, fail, degrade)
    b = bisection(cf)
    if as_json:
        out = b.as_dict()
        out["topology"] = cf.name
        out["failures"] = [sel for sel, _ in cf.failures]
        echo_json(out)
    else:
        out = stdout_console()
        out.print(render.bisection_table([(cf.name, b)]))
        out.print(f"min-cut partition: {clean(b.partition.describe())}")


@cli.command("validate")
@click.option("--file", "path", default=None, metavar="FILE",
              help="Validation file (default: the reference points shipped with fabric-emu).")
@json_option
@handles_errors
def validate_cmd(path, as_json) -> None:
    """Predict every published reference point and compare with the measurement."""
    from cli.report import validation_table
    from collectives.validate import validate
    from topologies.errors import SpecError, brief

    from cli.step_cmd import training_table
    from workloads.training_validate import validate_training

    if path is not None and not path.strip():
        raise SpecError("--file: empty file name")
    err = progress_console()
    rep = validate(path, progress=lambda pid, k, n: err.print(f"[{k}/{n}] {clean(pid)}"))
    if not rep.rows:
        raise SpecError(f"validate: {brief(path) if path else 'the reference file'} has no validation points "
                        f"([[point]] tables); nothing was checked")
    if not as_json:
        stdout_console().print(validation_table(rep))
    train = validate_training(progress=lambda pid, k, n: err.print(f"[training {k}/{n}] {clean(pid)}"))
    if as_json:
        echo_json(rep.as_dict() | {"training": train.as_dict()})
    else:
        stdout_console().print(training_table(train))


@cli.command("demo")
@handles_errors
def demo() -> None:
    """A tour: DeepSeek-V3 step on GB300 vs GB200 NVL72, and 256 vs 1,024 GPUs."""
    from cli.demo import run_demo

    run_demo(stdout_console(), progress_console())


def _register(spec: str) -> None:
    module, _, attr = spec.partition(":")
    cli.add_command(getattr(importlib.import_module(module), attr))


for _spec in COMMANDS:
    _register(_spec)
