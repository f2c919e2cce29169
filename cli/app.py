"""The ``fabric-emu`` command group: a thin composition root over the library.

Commands import the library inside their bodies, so ``fabric-emu --help``
loads click only. A command that lives in its own module is registered with
one line in :data:`COMMANDS`: ``"name": ("module:attribute", "short help")``.
Its module is imported only when the command runs or shows its own help (the
group's help lists the short help given here), so even a module that imports
the library at its top does not slow ``fabric-emu --help`` down.
"""

from __future__ import annotations

import dataclasses
import importlib
import sys

import click

from cli.options import (
    VocabularyChoice,
    failure_options,
    json_option,
    memory_option,
    parse_sets,
    refuse_repeats,
    topo_options,
)
from cli.output import clean, echo_json, fail, handles_errors, progress_console, stdout_console
from topologies.errors import brief

__all__ = ["cli", "COMMANDS", "OneLineGroup", "Terminated"]

#: Commands defined in their own modules, one line each: name -> ("module:attribute", short help).
COMMANDS = {
    "run": ("cli.run:run_cmd", "Simulate COLLECTIVE on a fabric and print nccl-tests-style results."),
    "models": ("cli.models_cmd:models_command",
               "List the built-in models: sizes, parameters and FLOPs per token (Megatron and TorchTitan)."),
    "step": ("cli.step_cmd:step_cmd",
             "Estimate one training step: time, breakdown, tokens/s, TFLOPs/GPU, MFU, memory, exposed communication."),
    "sweep": ("cli.sweep_cmd:sweep_group",
              "Sweep any parameter of `run` or `step`; rank single failures; results stored in SQLite."),
}


class Terminated(KeyboardInterrupt):
    """SIGTERM (``kill``, ``timeout``), raised by the entry point's handler: unwinds like Ctrl-C, so
    atomic writes remove their temporary files, and ends with status 143 (128 + SIGTERM)."""


def _shorten(text: str, limit: int) -> str:
    """``text`` cut at a word boundary to ``limit`` characters with '...', as click shortens help."""
    text = text.strip()
    if len(text) <= limit:
        return text
    cut = text[:max(1, limit - 3)].rsplit(" ", 1)[0]
    return cut.rstrip(" .,;:") + "..."


class OneLineGroup(click.Group):
    """A group with one-line usage errors (``error: ...``, exit status 2) and lazily imported commands."""

    def __init__(self, *args, lazy: dict | None = None, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self.lazy = dict(lazy or {})

    def list_commands(self, ctx) -> list[str]:
        return sorted(set(super().list_commands(ctx)) | set(self.lazy))

    def get_command(self, ctx, name):
        if name in self.lazy and name not in self.commands:
            module, _, attr = self.lazy[name][0].partition(":")
            self.add_command(getattr(importlib.import_module(module), attr), name)
        return super().get_command(ctx, name)

    def format_commands(self, ctx, formatter) -> None:
        rows = []
        for name in self.list_commands(ctx):
            if name in self.lazy and name not in self.commands:
                rows.append((name, self.lazy[name][1]))
                continue
            cmd = self.get_command(ctx, name)
            if cmd is not None and not cmd.hidden:
                rows.append((name, cmd))
        if rows:
            limit = formatter.width - 6 - max(len(name) for name, _ in rows)
            text = [(name, _shorten(h, limit) if isinstance(h, str) else h.get_short_help_str(limit))
                    for name, h in rows]
            with formatter.section("Commands"):
                formatter.write_dl(text)

    def main(self, args=None, prog_name=None, complete_var=None, standalone_mode=True, **extra):
        if not standalone_mode:
            return super().main(args, prog_name, complete_var, standalone_mode, **extra)
        try:
            super().main(args, prog_name, complete_var, standalone_mode=False, **extra)
        except click.exceptions.Exit as exc:
            sys.exit(exc.exit_code)
        except getattr(click.exceptions, "NoArgsIsHelpError", ()) as exc:  # bare group: show its help
            click.echo(exc.ctx.get_help())
            sys.exit(0)
        except click.UsageError as exc:
            where = exc.ctx.command_path if exc.ctx is not None else (prog_name or "fabric-emu")
            fail(f"{' '.join(exc.format_message().split())} (see '{where} --help')", 2)
        except click.ClickException as exc:
            fail(" ".join(exc.format_message().split()), 2)
        except click.Abort as exc:  # click turns Ctrl-C (KeyboardInterrupt) into Abort: 128 + SIGINT, as shells
            if isinstance(exc.__cause__, Terminated):
                fail("terminated (SIGTERM)", 143)
            if isinstance(exc.__cause__, KeyboardInterrupt):
                fail("interrupted (Ctrl-C)", 130)
            fail("aborted", 1)
        except KeyboardInterrupt:  # pragma: no cover - outside click's own handling
            fail("interrupted (Ctrl-C)", 130)
        sys.exit(0)


@click.group(cls=OneLineGroup, lazy=COMMANDS, context_settings={"help_option_names": ["-h", "--help"]})
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
    note = render.oversubscription_note(G.graph.get("meta", {}))
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
              help="Output file (a new or regular file; written atomically), or - for standard output.")
@memory_option
@handles_errors
def topo_export(topo: str, sets, fmt: str, output: str, memory_limit) -> None:
    """Write TOPO as GraphML or node-link JSON."""
    from topologies import write_graph
    from topologies.errors import SpecError

    if not output.strip():
        raise SpecError("-o/--output: empty file name")
    G = _load(topo, sets, memory_limit)
    if output == "-":  # standard output, as for most tools
        from topologies.export import dumps

        data = dumps(G, fmt)
        sys.stdout.buffer.write(data if data.endswith(b"\n") else data + b"\n")
        sys.stdout.flush()
        click.echo(f"wrote standard output ({G.number_of_nodes():,} nodes, {G.number_of_edges():,} links)", err=True)
        return
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
        note = render.oversubscription_note(G.graph.get("meta", {}), only_if_rounded=True)
        if note:
            out.print(f"oversubscription: {note}")


@cli.command("validate")
@click.option("--file", "path", default=None, metavar="FILE",
              help="Validation file (default: the reference and published points shipped with fabric-emu).")
@click.option("--split", "split", type=click.Choice(["fit", "heldout"]), default=None,
              help="Only the points of one split.")
@click.option("--id", "ids", multiple=True, help="Only this point id (repeatable).")
@json_option
@handles_errors
def validate_cmd(path, split, ids, as_json) -> None:
    """Predict the published points and compare: fit and held-out errors apart.

    A file that holds no point or tables it does not know, an --id that names no point and an
    --id/--split that together select nothing are refused (exit status 2).
    """
    from cli.report import validation_table
    from collectives.validate import validate
    from topologies.errors import SpecError

    if path is not None and not path.strip():
        raise SpecError("--file: empty file name")
    refuse_repeats("--id", ids)
    if ids:  # a misspelt id would select nothing and report a 0 % error over zero points
        from collectives.validate import point_ids

        known = set(point_ids(path))
        if path is None:
            from workloads.training_validate import load_points

            known |= {p["id"] for p in load_points(None)}
        unknown = [i for i in ids if i not in known]
        if unknown:
            raise SpecError(f"--id {brief(unknown[0])}: not the id of any point in "
                            f"{brief(path) if path else 'the shipped validation files'} "
                            f"(fabric-emu validate --json lists them)")
    err = progress_console()
    rep = validate(path, progress=lambda pid, k, n: err.print(f"[{k}/{n}] {clean(pid)}"),
                   splits=(split,) if split else None, ids=list(ids) or None)
    if path is not None and rep.training_points:
        raise SpecError(f"--file {brief(path)}: [[training]] points are not evaluated from --file (the step-time "
                        f"validation reads the shipped training points); remove them or use fabric-emu step")
    train = None
    if path is None:  # the training points live in the shipped files (workloads/data/training_points.toml)
        from workloads.training_validate import validate_training

        train = validate_training(ids=set(ids) or None,
                                  progress=lambda pid, k, n: err.print(f"[training {k}/{n}] {clean(pid)}"))
        if split:
            train = dataclasses.replace(train, rows=tuple(r for r in train.rows
                                                          if r.split == split))
        if not train.rows:
            train = None
    if (ids or split) and not rep.rows and train is None:  # e.g. a held-out id with --split fit
        raise SpecError(f"--split {split or '(any)'} with --id {', '.join(brief(i) for i in ids) or '(any)'}: "
                        f"selects no point; drop --split or give ids of that split")
    if as_json:
        echo_json(rep.as_dict() | ({"training": train.as_dict()} if train is not None else {}))
    else:
        stdout_console().print(validation_table(_cleaned(rep)))
        if train is not None:
            from cli.step_cmd import training_table

            stdout_console().print(training_table(_cleaned(train)))
    if not rep.ok and train is None:  # no point, or tables this build does not know: the run checked nothing
        what = f"unrecognised tables: {', '.join(rep.unrecognised)}" if rep.unrecognised else "no points"
        fail(f"validation file {rep.source}: {what}", status=1)


def _cleaned(obj):
    """A dataclass (and its ``rows``) with every string field passed through :func:`clean` (ids, notes, paths)."""
    import dataclasses

    if not dataclasses.is_dataclass(obj) or isinstance(obj, type):
        return obj
    changes = {}
    for f in dataclasses.fields(obj):
        if not f.init:
            continue
        v = getattr(obj, f.name)
        if isinstance(v, str):
            changes[f.name] = clean(v)
        elif f.name == "rows" and isinstance(v, (tuple, list)):
            changes[f.name] = type(v)(_cleaned(r) for r in v)
    try:
        return dataclasses.replace(obj, **changes)
    except (TypeError, ValueError):  # pragma: no cover - a report type that cannot be rebuilt
        return obj


@cli.command("demo")
@handles_errors
def demo() -> None:
    """A tour: DeepSeek-V3 step on GB300 vs GB200 NVL72, and 256 vs 1,024 GPUs."""
    from cli.demo import run_demo

    run_demo(stdout_console(), progress_console())
