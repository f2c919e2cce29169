"""``fabric-emu sweep run|show|export``: parameter sweeps and failure what-ifs stored in SQLite."""

from __future__ import annotations

import signal
import sys

import click

from cli.options import AsciiInt

__all__ = ["sweep_group"]


def _check_db(db: str) -> None:
    """An empty --db would be SQLite's private temporary database: every point lost at the end."""
    from topologies.errors import SpecError

    if not db.strip():
        raise SpecError("--db: empty file name")

# Options of `run` and `step` that a sweep takes (validated by the library, workloads.sweep.params).
_RUN_OPTS = ("topo", "ranks", "size", "algo", "routing", "seed", "groups", "layout", "nccl_version", "moe_routing",
             "tokens", "hidden", "experts", "topk", "dispatch_dtype")
_STEP_OPTS = ("model", "system", "gpus", "tp", "pp", "vpp", "ep", "etp", "cp", "global_batch", "micro_batch",
              "seq_len", "precision", "recompute", "schedule", "overlap", "optimizer", "gpus_per_domain", "placement",
              "pp_layout", "attention_precision")


def _point_options(f):
    helps = {
        "topo": "run: preset name or .toml spec.", "ranks": "run: GPU ranks (first N) or 'all'.",
        "size": "run: message size, e.g. 64MiB.", "algo": "run: algorithm (ring, tree, nvls, ..., auto).",
        "routing": "auto (the fabric's forwarding), ecmp, dmodk or spray.", "seed": "ECMP hashing and token routing seed.",
        "groups": "run: concurrent groups.", "layout": "run: contiguous or strided groups.",
        "moe_routing": "MoE token routing.", "tokens": "run: MoE tokens per rank.", "hidden": "run: MoE hidden size.",
        "experts": "run: MoE routed experts.", "topk": "run: MoE experts per token.",
        "model": "step: model name or .toml.", "system": "step: domain preset, e.g. gb300-nvl72.",
        "gpus": "step: world size.", "tp": "step: tensor parallel.", "pp": "step: pipeline parallel.",
        "vpp": "step: virtual stages.", "ep": "step: expert parallel.", "etp": "step: expert tensor parallel.",
        "cp": "step: context parallel.", "global_batch": "step: sequences per step.",
        "micro_batch": "step: sequences per micro-batch.", "seq_len": "step: tokens per sequence.",
        "precision": "step: bf16, fp8 or mxfp8.", "recompute": "step: none, selective or full.",
        "schedule": "step: 1f1b, interleaved or dualpipe.", "overlap": "step: overlap options.",
        "gpus_per_domain": "step: GPUs used per NVLink domain.", "placement": "step: megatron or spread.",
        "optimizer": "step: zero1, fsdp or none.", "pp_layout": "step: Megatron pipeline layout.",
        "attention_precision": "step: auto, bf16 or fp8.",
    }
    for name in reversed(_RUN_OPTS + tuple(o for o in _STEP_OPTS if o not in _RUN_OPTS)):
        f = click.option("--" + name.replace("_", "-"), name, default=None, help=helps.get(name))(f)
    f = click.option("--pxn/--no-pxn", "pxn", default=None, help="run: force NCCL's PXN on or off.")(f)
    f = click.option("--nvls/--no-nvls", "nvls", default=None, help="run: --no-nvls: NCCL_NVLS_ENABLE=0.")(f)
    f = click.option("--collnet/--no-collnet", "collnet", default=None,
                     help="run: --collnet: NCCL_COLLNET_ENABLE=1 (SHARP switches).")(f)
    f = click.option("--ep-in-domain", "ep_in_domain", is_flag=True, default=None,
                     help="step: refuse layouts whose EP groups cross domains.")(f)
    f = click.option("--set", "sets", multiple=True, metavar="KEY=VALUE", help="Topology override (repeatable).")(f)
    f = click.option("--fail", "fail", multiple=True, metavar="SELECTOR", help="Fail cables in every point.")(f)
    f = click.option("--degrade", "degrade", multiple=True, metavar="SELECTOR=VALUE",
                     help="Degrade cables in every point.")(f)
    return f


@click.group("sweep")
def sweep_group() -> None:
    """Sweep any parameter of `run` or `step`; rank single failures; results stored in SQLite."""


@sweep_group.command("run")
@click.argument("op", metavar="COLLECTIVE|step")
@_point_options
@click.option("--grid", "grid", multiple=True, metavar="KEY=V1,V2,...",
              help="Sweep KEY over values (repeatable; crossed). KEY: an option or --set key, fail, degrade; "
                   "fail=each:SELECTOR gives one point per matching switch or cable.")
@click.option("--zip", "zipped", is_flag=True, help="Zip the --grid lists instead of crossing them.")
@click.option("--file", "sweep_file", default=None, type=click.Path(dir_okay=False), help="TOML sweep file.")
@click.option("--db", "db", required=True, type=click.Path(dir_okay=False), help="SQLite file (created or resumed).")
@click.option("--jobs", "jobs", default=None, type=AsciiInt(min=1, max=4096), help="Worker processes (default: the CPUs available).")
@click.option("--scheduler", "scheduler", default=None, metavar="tcp://HOST:PORT",
              help="Run on this Dask distributed scheduler instead (fabric-emu[distributed]).")
@click.option("--retry-failed", "retry_failed", is_flag=True, help="Evaluate points stored with an error again.")
@click.option("--json", "as_json", is_flag=True, help="Print the sweep's outcome as JSON on stdout.")
def sweep_run(op, sets, fail, degrade, pxn, grid, zipped, sweep_file, db, jobs, scheduler, retry_failed, as_json,
              **opts):
    """Run (or resume) a sweep: every point is stored in --db as soon as it finishes."""
    from cli.output import handles_errors

    handles_errors(_sweep_run)(op, sets, fail, degrade, pxn, grid, zipped, sweep_file, db, jobs, scheduler,
                               as_json, opts, retry_failed)


def _sweep_run(op, sets, fail, degrade, pxn, grid, zipped, sweep_file, db, jobs, scheduler, as_json, opts,
               retry_failed=False):
    from cli.output import clean, echo_json as _echo_json, progress_console as _progress
    from cli.options import parse_sets
    from topologies.errors import SpecError
    from workloads.sweep import Store, default_jobs, load_sweep_file, make_executor, parse_grid, plan_sweep

    from fabric.allocator import malloc_mode
    from fabric.kernels import mode as kernels_mode

    kernels_mode(), malloc_mode()  # a bad environment variable once, not as an error stored for every point
    _check_db(db)
    from topologies.files import check_output_name

    check_output_name(db, (".sqlite", ".sqlite3", ".db"), what="--db", kind="a sweep database")  # not over a spec
    for name, value in list(opts.items()) + [("scheduler", scheduler), ("file", sweep_file)]:
        if isinstance(value, str) and not value.strip():  # the converters read "" as "the default"
            raise SpecError(f"--{name.replace('_', '-')}: empty; give a value or leave the option out")
    if scheduler is not None and jobs is not None:
        raise SpecError("--jobs and --scheduler: the scheduler's workers run the points; give one of them")
    base: dict = {k: v for k, v in opts.items() if v is not None}
    if pxn is not None:
        base["pxn"] = pxn
    base.update(parse_sets(sets))
    if fail:
        base["fail"] = list(fail)
    if degrade:
        base["degrade"] = list(degrade)
    zip_axes = []
    axes = parse_grid(grid)
    both = sorted(set(base) & {k for k, _ in axes})
    if both:  # the grid would silently win over the option
        raise SpecError(f"--grid {both[0]}: also given as a fixed value; give it once")
    if sweep_file:
        f_op, f_base, f_grid, f_zip = load_sweep_file(sweep_file)
        if f_op is not None and f_op != op:
            raise SpecError(f"--file: the sweep file's op {f_op!r} differs from the command's {op!r}")
        clash = sorted((set(f_base) | {k for k, _ in f_grid + f_zip}) & ({k for k, _ in axes}))
        if clash:
            raise SpecError(f"--grid {clash[0]}: also given in the sweep file; give it once")
        base = {**f_base, **base}
        axes = f_grid + axes
        zip_axes = f_zip
    err = _progress()
    err.print(f"planning the sweep of {op} ...")
    plan = plan_sweep(op, base, axes, zip_axes, zipped=zipped)
    ex, workers, close = make_executor(jobs or default_jobs(), scheduler)  # before the --db is created
    try:
        store = Store.open(db)
    except BaseException:
        close(now=True)
        raise
    previous = signal.signal(signal.SIGTERM, _terminate)
    try:
        outcome = None
        try:
            outcome = _with_progress(plan, store, ex, workers, retry_failed)
        finally:
            close(now=outcome is None or outcome.interrupted)
        counts = store.count()
    finally:
        signal.signal(signal.SIGTERM, previous)
        store.close()
    summary = {"db": db, "points": outcome.total, "skipped": outcome.skipped, "evaluated": outcome.done,
               "failed_now": outcome.failed, "stored_ok": counts.get("ok", 0), "stored_failed": counts.get("error", 0),
               "interrupted": outcome.interrupted}
    if as_json:
        _echo_json(summary)
    else:
        click.echo(f"{clean(db)}: {outcome.done} points evaluated ({outcome.failed} failed), {outcome.skipped} already "
                   f"stored, {outcome.total} in the sweep", err=True)
    if outcome.interrupted:
        click.echo("interrupted: the finished points are stored; re-run the same command to resume", err=True)
        sys.exit(130)


def _terminate(signum, frame):
    """SIGTERM stops a sweep like Ctrl-C: finished points stay stored, workers are stopped."""
    raise KeyboardInterrupt


def _with_progress(plan, store, ex, workers, retry_failed=False):
    from workloads.sweep import run_sweep

    if not sys.stderr.isatty():
        return run_sweep(plan, store, executor=ex, workers=workers, retry_failed=retry_failed)
    from rich.console import Console
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn, \
        TimeRemainingColumn

    console = Console(file=sys.stderr)
    cols = (TextColumn("[bold]sweep"), BarColumn(), MofNCompleteColumn(), TextColumn("{task.fields[rate]}"),
            TextColumn("ETA"), TimeRemainingColumn(), TextColumn("[red]{task.fields[failed]}"), TimeElapsedColumn())
    with Progress(*cols, console=console, transient=False) as bar:
        task = bar.add_task("sweep", total=len(plan.points), rate="", failed="")
        state = {"first": None}

        def progress(done, total, failed):
            import time

            now = time.perf_counter()
            if state["first"] is None:
                state["first"] = (now, done)
            t0, d0 = state["first"]
            rate = (done - d0) / (now - t0) if now > t0 and done > d0 else 0.0
            bar.update(task, completed=done, rate=f"{rate:.2f} pt/s" if rate else "",
                       failed=f"{failed} failed" if failed else "")
        return run_sweep(plan, store, executor=ex, workers=workers, progress=progress, retry_failed=retry_failed)


@sweep_group.command("show")
@click.option("--db", "db", required=True, type=click.Path(dir_okay=False), help="SQLite sweep file.")
@click.option("--sort", "sort", default=None, help="Column to sort by (metrics: best first).")
@click.option("--reverse", "reverse", is_flag=True, help="Reverse the order (worst first, e.g. to rank failures).")
@click.option("--top", "top", default=None, type=AsciiInt(min=1), help="Show only the first N rows.")
@click.option("--columns", "columns", default=None, help="Comma-separated columns to show.")
@click.option("--plot", "plot", default=None, type=click.Path(dir_okay=False), help="Write a plot (.png or .svg).")
@click.option("--x", "x", default=None, help="Plot: swept key on the x axis.")
@click.option("--y", "y", default=None, help="Plot: metric on the y axis (default: the sort column).")
@click.option("--json", "as_json", is_flag=True, help="Print the rows as JSON on stdout.")
def sweep_show(db, sort, reverse, top, columns, plot, x, y, as_json):
    """Show the stored points as a table sorted by any column, the best point marked."""
    from cli.output import handles_errors

    handles_errors(_sweep_show)(db, sort, reverse, top, columns, plot, x, y, as_json)


def _load(db):
    from workloads.sweep import Store
    from workloads.sweep.table import with_baseline

    st = Store.open(db, readonly=True)
    try:
        rows, swept = st.rows(), st.swept_keys()
    finally:
        st.close()
    return with_baseline(rows, swept), swept


def _sweep_show(db, sort, reverse, top, columns, plot, x, y, as_json):
    from cli.output import echo_json as _echo_json, stdout_console as _stdout
    from topologies.errors import SpecError
    from workloads.sweep.table import best_index, default_metric, shown_columns, sort_rows

    from cli.output import clean

    _check_db(db)
    for name, value in (("--plot", plot), ("--sort", sort), ("--columns", columns)):
        if value is not None and not value.strip(" ,"):
            raise SpecError(f"{name}: empty; give a {'file name' if name == '--plot' else 'column'}")
    for name, value in (("--x", x), ("--y", y)):
        if value is not None and plot is None:
            raise SpecError(f"{name}: sets an axis of the plot; add --plot FILE.png (the table does not use it)")
    from cli.plot import check_plot_path

    check_plot_path(plot)
    if columns:
        names = [c.strip() for c in columns.split(",")]
        twice = next((c for c in names if names.count(c) > 1), None)
        if twice:
            raise SpecError(f"--columns {twice!r}: given twice; list each column once")
    rows, swept = _load(db)
    if not rows:
        raise SpecError(f"--db {db}: no points stored yet")
    ok = [r for r in rows if r.get("status") == "ok"]
    if sort and sort not in rows[0]:
        if not ok:
            raise SpecError(f"--sort {sort}: no point succeeded yet ({len(rows)} failed; first error: "
                            f"{rows[0].get('error')})")
    metric = sort or default_metric(rows)
    ordered = sort_rows(rows, metric, reverse=reverse) if metric else rows
    cols = [c.strip() for c in columns.split(",")] if columns else shown_columns(rows, swept, metric)
    for c in cols:
        if c not in rows[0]:
            raise SpecError(f"--columns {c!r}: no such column; columns: {', '.join(k for k in rows[0] if not k.endswith('_json'))}")
    if plot:
        from cli.plot import sweep_plot

        sweep_plot(plot, rows, swept, x=x, y=y or metric)
        click.echo(f"wrote {clean(plot)}", err=True)
    shown = ordered[:top] if top else ordered
    best = best_index(ordered, metric) if metric else None
    best_id = ordered[best]["point_id"] if best is not None else None
    if as_json:
        _echo_json([{**{c: r.get(c) for c in ["point_id"] + cols}, "best": r["point_id"] == best_id}
                    for r in shown])
        return
    from cli.report import sweep_table

    _stdout().print(sweep_table(shown, cols, best_id, title=f"{clean(db)}: {len(rows)} points"
                                + (f", sorted by {metric}" + (" (worst first)" if reverse else "") if metric else "")
                                + (f", top {top}" if top else "")))


@sweep_group.command("export")
@click.option("--db", "db", required=True, type=click.Path(dir_okay=False), help="SQLite sweep file.")
@click.option("--format", "fmt", required=True, type=click.Choice(["csv", "json"]), help="Output format.")
@click.option("-o", "--output", "output", default=None, type=click.Path(dir_okay=False),
              help="Output file (default, or -: standard output).")
def sweep_export(db, fmt, output):
    """Export every stored point, one column per swept key, as CSV or JSON."""
    from cli.output import handles_errors

    handles_errors(_sweep_export)(db, fmt, output)


def _sweep_export(db, fmt, output):
    from workloads.sweep.table import to_csv, to_json

    import os

    from cli.output import clean
    from topologies.errors import SpecError

    _check_db(db)
    if output is not None:
        if not output.strip():
            raise SpecError("-o/--output: empty file name (leave -o out for standard output)")
        from topologies.files import check_output_name

        if output != "-":
            check_output_name(output, ("." + fmt,), what="-o", kind=f"--format {fmt}")
        from topologies.files import SQLITE_SIDECARS

        for part in ("",) + SQLITE_SIDECARS:  # the database or its journal under another name (a link)
            if output != "-" and os.path.exists(output) and os.path.exists(db + part) \
                    and os.path.samefile(output, db + part):
                raise SpecError(f"-o {clean(output)}: is the --db itself" + (f" (its {part[1:]} journal)" if part
                                else "") + "; the export would destroy the sweep")
    rows, swept = _load(db)
    text = to_csv(rows, swept) if fmt == "csv" else to_json(rows, swept) + "\n"
    if output and output != "-":  # "-": standard output, as topo export -o -
        from topologies.files import write_atomic

        write_atomic(output, text.encode(), what="-o")
        click.echo(f"wrote {clean(output)} ({len(rows)} points)", err=True)
    else:
        click.echo(text, nl=False)

