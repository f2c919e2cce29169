"""``fabric-emu step``: model + layout + fabric -> step time, throughput, MFU, exposed communication.

Also the renderings of the step (summary, breakdown bar, placement, congestion of the step's
traffic) and of the training part of ``fabric-emu validate``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import click

if TYPE_CHECKING:  # pragma: no cover - annotations only; rich is imported where it is used
    from rich.console import Group
    from rich.table import Table

from cli.options import AsciiInt, VocabularyChoice
from cli.output import handles_errors
from topologies.limits import MAX_SEED

__all__ = ["step_cmd", "step_summary", "breakdown_table", "placement_table", "hottest_table", "training_table",
           "BREAKDOWN_STYLE"]

#: Order and colour of the breakdown components.
BREAKDOWN_STYLE = {"compute": "green", "tp_exposed": "magenta", "ep_exposed": "red", "cp_exposed": "bright_magenta",
                   "pp_exposed": "yellow", "framework": "bright_black", "bubble": "white", "dp_exposed": "blue",
                   "optimizer": "cyan"}


def step_summary(res) -> Table:
    from rich.table import Table

    lay = res.layout
    t = Table(title=f"step of {res.model} on {res.fabric}", title_justify="left", show_header=False)
    t.add_column("field", style="bold")
    t.add_column("value")
    t.add_row("layout", f"{lay.gpus} GPUs: TP{lay.tp} CP{lay.cp} PP{lay.pp} VPP{lay.vpp} EP{lay.ep} ETP{lay.etp} "
                        f"DP{lay.dp} (expert DP {lay.edp}); {lay.schedule}, {lay.microbatches} micro-batches of "
                        f"{lay.micro_batch} x {lay.seq_len}; {lay.precision}, recompute {lay.recompute}, "
                        f"optimizer {lay.optimizer}")
    t.add_row("step time", f"{res.step_time_s:.3f} s")
    t.add_row("tokens/s", f"{res.tokens_per_s_per_gpu:,.0f} per GPU, {res.tokens_per_s:,.0f} total")
    t.add_row("model TFLOPs/GPU", f"{res.tflops_per_gpu:,.0f} ({res.flops_per_token / 1e9:.1f} GFLOP/token, "
                                  f"{res.flops_convention})")
    t.add_row("MFU", f"{res.mfu_bf16:.1%} of BF16 dense peak, {res.mfu_fp8:.1%} of FP8 dense peak")
    mem = res.memory.as_dict()
    from topologies import catalog

    hbm = catalog.gpu(res.gpu).hbm_bytes / 2**30
    t.add_row("memory/GPU", f"{mem['total']:.1f} GiB of {hbm:.0f} (weights {mem['weights']:.1f}, grads "
                            f"{mem['grads']:.1f}, optimizer {mem['optimizer']:.1f}, activations "
                            f"{mem['activations']:.1f})" + ("  [exceeds HBM]" if mem['total'] > hbm else ""))
    t.add_row("overlap", ", ".join(res.overlap) or "none")
    t.add_row("traffic", f"EP routing {res.routing}, scale-out load balancing {res.policy}; "
                         f"{len(res.traffic.phases)} concurrent patterns simulated, "
                         f"{res.traffic.plan_misses} group shapes planned, {res.traffic.plan_hits} reused")
    return t


def breakdown_table(res, width: int = 60) -> Group:
    """The breakdown as a table and one stacked bar of the step."""
    from rich.console import Group
    from rich.table import Table
    from rich.text import Text

    t = Table(title="where the step goes", title_justify="left")
    for name, just in (("component", "left"), ("seconds", "right"), ("share", "right"), ("", "left")):
        t.add_column(name, justify=just)
    total = res.step_time_s or 1.0
    bar = Text()
    for k, style in BREAKDOWN_STYLE.items():
        v = float(res.breakdown_s.get(k, 0.0))
        share = v / total
        t.add_row(Text(k, style=style), f"{v:.3f}", f"{share:.1%}", Text("█" * int(round(share * 30)), style=style))
        bar.append("█" * int(round(share * width)), style=style)
    comm = Table(title="one instance of each communication (all groups at once)", title_justify="left")
    for name, just in (("kind", "left"), ("time (us)", "right")):
        comm.add_column(name, justify=just)
    for k, v in res.comm_s.items():
        comm.add_row(k, f"{v * 1e6:,.1f}")
    return Group(t, Text("step: ") + bar, comm)


def hottest_table(res, top: int = 5) -> Table:
    """The most utilised links over all of the step's traffic phases, with the groups crossing them."""
    from rich.table import Table

    t = Table(title="hottest links of the step's traffic (each phase with all of its groups at once)",
              title_justify="left")
    for name in ("phase", "link", "tier", "utilization", "groups crossing"):
        t.add_column(name)
    for row in res.hottest_links(top):
        t.add_row(row["phase"], row["link"], row["tier"], f"{row['utilization']:.0%}", ", ".join(row["groups"]))
    return t


def placement_table(res) -> Table:
    from rich.table import Table

    pl = res.placement
    t = Table(title=f"placement ({pl['mode']}): {pl['domains']} NVLink domains x {pl['gpus_per_domain']} GPUs; "
                    f"{pl['order']}", title_justify="left")
    for name, just in (("group", "left"), ("size", "right"), ("groups", "right"), ("domains spanned", "right"),
                       ("first group (GPUs)", "left")):
        t.add_column(name, justify=just)
    for kind in ("tp", "cp", "dp", "ep", "etp", "edp", "pp"):
        g = pl[kind]
        t.add_row(kind, str(g["size"]), str(g["groups"]), str(g["domains_spanned"]),
                  " ".join(str(x) for x in g["example"]))
    t.caption = "fabric: " + ", ".join(f"{k}={v}" for k, v in pl.get("fabric_overrides", {}).items())
    return t


def training_table(rep) -> Table:
    """Training points, predicted vs published; fits 100 columns (ids whole, the model note under the id)."""
    from rich import box
    from rich.table import Table
    from rich.text import Text

    t = Table(title="training points (step-time estimator)", title_justify="left", box=box.SIMPLE_HEAD,
              padding=(0, 1), pad_edge=False, show_edge=False)
    rows = [r for r in rep.rows if r.quantity != "tokens/s/GPU"]
    id_width = max([len(r.id) for r in rows] + [len("point / model")])
    for name, just in (("point / model", "left"), ("set", "left"), ("qty", "left"), ("predicted", "right"),
                       ("measured", "right"), ("error", "right"), ("tol", "right"), ("", "left")):
        t.add_column(name, justify=just, no_wrap=name != "point / model",
                     min_width=id_width if name == "point / model" else None)
    short = {"fit": "fit", "heldout": "held", "spotcheck": "spot"}
    for r in rows:
        retained = r.quantity == "retained"
        pred = "-" if r.predicted is None else f"{r.predicted:,.3f}" if retained else f"{r.predicted:,.0f}"
        meas = f"{r.measured:,.3f}" if retained else f"{r.measured:,.0f}"
        err = "-" if r.rel_error is None else (f"{r.rel_error:+.3f}" if retained else f"{r.rel_error:+.1%}")
        tol = "-" if r.tolerance is None else f"±{r.tolerance:.2f}" if retained else f"{r.tolerance:.0%}"
        mark = {True: Text("pass", "green"), False: Text("FAIL", "bold red"), None: Text("n/a", "dim")}[r.passed]
        qty = "retained" if retained else "TFLOPs" if "TFLOP" in r.quantity else r.quantity.split()[0]
        point = Text(r.id)
        if r.note:
            point.append("\n" + r.note, style="dim")
        t.add_row(point, short.get(r.split, r.split), qty, pred, meas, err, tol, mark)
    s = rep.summary()
    t.caption = "\n".join(f"{k}: {v['points']} points, mean |error| {v['mean_abs_error']:.1%}, "
                           f"max {v['max_abs_error']:.1%}" for k, v in s.items() if v["points"])
    return t


def _check_seed_used(spec, *, ep: int, moe_routing: str, routing: str, resolved: str | None = None) -> None:
    """Refuse ``--seed`` where nothing of the step draws from it (as ``run`` does)."""
    from cli.options import given_options
    from topologies.errors import SpecError
    from workloads.step import seed_unused_because

    if "seed" not in given_options(click.get_current_context()) or routing == "auto" and resolved is None:
        return  # auto: checked once the fabric's own policy is known (after the estimate, before any output)
    if seed_unused_because(spec, ep=ep, moe_routing=moe_routing, policy=resolved or routing):
        shown = (f"auto ({resolved} on this fabric)" if resolved != "none" else "auto (one NVLink domain, no "
                 "scale-out network)") if resolved else routing
        raise SpecError(f"--seed: seeds ECMP hashing (--routing ecmp) and sampled MoE token routing "
                        f"(--moe-routing uniform/model/skewed with --ep > 1); --routing {shown} with "
                        f"--moe-routing {moe_routing} draws nothing from it")


@click.command("step")
@click.option("--model", "model", required=True, help="Built-in model (fabric-emu models) or a model .toml file.")
@click.option("--system", "system", required=True,
              help="Domain preset (gb300-nvl72, gb200-nvl72, hgx-h100, ...) or a topology spec file of NVLink domains.")
@click.option("--set", "sets", multiple=True, metavar="KEY=VALUE",
              help="Override the cluster (scaleout, nic, oversubscription, tiers, planes, ...).")
@click.option("--gpus", "gpus", required=True, type=AsciiInt(min=1), help="GPUs of the job (domains are added as needed).")
@click.option("--tp", "tp", default=1, show_default=True, type=AsciiInt(min=1), help="Tensor parallel size (with SP).")
@click.option("--pp", "pp", default=1, show_default=True, type=AsciiInt(min=1), help="Pipeline parallel size.")
@click.option("--vpp", "vpp", default=1, show_default=True, type=AsciiInt(min=1), help="Virtual stages per pipeline rank.")
@click.option("--ep", "ep", default=1, show_default=True, type=AsciiInt(min=1), help="Expert parallel size.")
@click.option("--etp", "etp", default=1, show_default=True, type=AsciiInt(min=1), help="Expert tensor parallel size.")
@click.option("--cp", "cp", default=1, show_default=True, type=AsciiInt(min=1), help="Context parallel size.")
@click.option("--global-batch", "global_batch", required=True, type=AsciiInt(min=1), help="Sequences per step.")
@click.option("--micro-batch", "micro_batch", required=True, type=AsciiInt(min=1), help="Sequences per micro-batch.")
@click.option("--seq-len", "seq_len", required=True, type=AsciiInt(min=1), help="Tokens per sequence.")
@click.option("--precision", "precision", required=True, type=VocabularyChoice("workloads.layout.PRECISIONS"))
@click.option("--recompute", "recompute", default="none", show_default=True,
              type=VocabularyChoice("workloads.layout.RECOMPUTE"))
@click.option("--schedule", "schedule", default=None, type=VocabularyChoice("workloads.layout.SCHEDULES"),
              help="Pipeline schedule (default: interleaved with --vpp > 1, else 1f1b).")
@click.option("--overlap", "overlap", default="auto", show_default=True,
              help="auto, none, or a comma list of dp-grad, dp-param, tp, ep, pp.")
@click.option("--optimizer", "optimizer", default="zero1", show_default=True,
              type=VocabularyChoice("workloads.layout.OPTIMIZERS"), help="Optimizer-state sharding.")
@click.option("--gpus-per-domain", "gpus_per_domain", default=None, type=AsciiInt(min=1),
              help="GPUs used per NVLink domain (default: the most that hold whole TP/EP groups, e.g. 64 of 72).")
@click.option("--placement", "placement", default="megatron", show_default=True,
              type=VocabularyChoice("workloads.layout.PLACEMENTS"), help="spread: deal ranks round robin over the domains.")
@click.option("--ep-in-domain", "ep_in_domain", is_flag=True, help="Refuse layouts whose EP groups cross domains.")
@click.option("--moe-routing", "moe_routing", default="balanced", show_default=True,
              type=VocabularyChoice("workloads.traffic.ROUTINGS"), help="Token routing of the EP traffic.")
@click.option("--routing", "routing", default="auto", show_default=True,
              type=VocabularyChoice("fabric.POLICIES", extra=("auto",)),
              help="Scale-out load balancing (auto: adaptive routing, as on the reference fabrics).")
@click.option("--pp-layout", "pp_layout", default=None, help="Megatron pipeline layout, e.g. 'Et*4|(t*4|)*14tmL'.")
@click.option("--attention-precision", "attention_precision", default="auto", show_default=True,
              type=VocabularyChoice("workloads.step.ATTENTION_PRECISIONS"),
              help="auto: FP8 for MLA models with MXFP8 on GB300/B300 (NVIDIA's DeepSeek-V3 recipes), else BF16.")
@click.option("--no-memory-check", "no_memory_check", is_flag=True,
              help="Estimate even when the memory estimate exceeds HBM (it is printed beside the result).")
@click.option("--seed", "seed", default=0, show_default=True, type=AsciiInt(min=0, max=MAX_SEED))
@click.option("--fail", "fail", multiple=True, metavar="SELECTOR", help="Fail cables, e.g. 'spine 3'.")
@click.option("--degrade", "degrade", multiple=True, metavar="SELECTOR=VALUE", help="Reduce capacity, e.g. 'spine 3=50%'.")
@click.option("--report", "report", is_flag=True, help="Breakdown bar, placement and the congestion of the step's traffic.")
@click.option("--plot", "plot", default=None, type=click.Path(dir_okay=False),
              help="With --report: link utilisation heat map by tier of each traffic phase (.png/.svg).")
@click.option("--trace", "trace", default=None, type=click.Path(dir_okay=False),
              help="Write the step's timeline as Chrome trace-event JSON (Perfetto).")
@click.option("--json", "as_json", is_flag=True, help="Print machine-readable JSON on stdout.")
@handles_errors
def step_cmd(model, system, sets, gpus, tp, pp, vpp, ep, etp, cp, global_batch, micro_batch, seq_len, precision,
             recompute, schedule, overlap, optimizer, gpus_per_domain, placement, ep_in_domain, moe_routing, routing,
             pp_layout, attention_precision, no_memory_check, seed, fail, degrade, report, plot, trace, as_json) -> None:
    """Estimate one training step: time, breakdown, tokens/s, TFLOPs/GPU, MFU, memory, exposed communication."""
    from rich.text import Text

    from cli.output import clean as _clean, echo_json as _echo_json, progress_console as _progress
    from cli.output import stdout_console as _stdout
    from cli.options import parse_sets
    from topologies.errors import SpecError
    from workloads import Layout, estimate_step, get_model
    from workloads.trace import write_trace

    from cli.options import given_options
    from cli.plot import check_plot_path
    from workloads.trace import check_trace_path

    for name, value in (("--trace", trace), ("--plot", plot)):
        if value is not None and not value.strip():
            raise SpecError(f"{name}: empty file name")
    if plot is not None and not report:
        raise SpecError("--plot: on step it draws the congestion of the step's traffic; add --report")
    check_plot_path(plot)  # every output is checked before the work: nothing is written on a refusal
    if trace is not None:
        check_trace_path(trace)
    given = given_options(click.get_current_context())
    err = _progress()
    spec = get_model(model)
    _check_seed_used(spec, ep=ep, moe_routing=moe_routing, routing=routing)
    if "overlap" in given and schedule == "dualpipe" and spec.is_moe and ep > 1:
        from workloads.step import parse_overlap

        if overlap.strip().lower() != "auto" and not parse_overlap(overlap, moe=True).ep:
            raise SpecError(f"--overlap {_clean(overlap)}: DualPipe overlaps the EP all-to-alls by construction; "
                            "add ep to the list (or choose another --schedule)")
    lay = Layout(gpus=gpus, tp=tp, pp=pp, vpp=vpp, ep=ep, etp=etp, cp=cp, global_batch=global_batch,
                 micro_batch=micro_batch, seq_len=seq_len, precision=precision, recompute=recompute,
                 schedule=schedule or "", optimizer=optimizer)
    res = estimate_step(spec, lay, system, sets=parse_sets(sets), gpus_per_domain=gpus_per_domain,
                        placement=placement, ep_in_domain=ep_in_domain, overlap=overlap, routing=moe_routing,
                        policy=routing, seed=seed, fail=fail, degrade=degrade, pp_layout=pp_layout,
                        attention_precision=attention_precision, report=report,
                        check_memory=not no_memory_check,
                        progress=lambda msg: err.print(msg, highlight=False))
    if "routing" in given and res.placement.get("domains", 1) == 1:
        raise SpecError(f"--routing: the job fits in one NVLink domain of {_clean(system)}, with no scale-out "
                        "network; the routing policy only picks paths through network switches")
    if "placement" in given and placement != "megatron" and res.placement.get("domains", 1) == 1:
        # dealing ranks round robin over one domain is the megatron order: the same step, byte for byte
        raise SpecError(f"--placement {placement}: the job fits in one NVLink domain of {_clean(system)}; "
                        "placement deals ranks over several domains")
    if routing == "auto":  # one NVLink domain: no scale-out switch hashes anything
        _check_seed_used(spec, ep=ep, moe_routing=moe_routing, routing=routing,
                         resolved=res.policy if res.placement.get("domains", 1) > 1 else "none")
    if "moe_routing" in given and not (spec.is_moe and ep > 1):  # after the --seed checks, which name both
        raise SpecError("--moe-routing: routes the tokens of the EP all-to-alls; "
                        + (f"{_clean(spec.name)} is dense (no experts)" if not spec.is_moe else
                           "with --ep 1 every token stays on its GPU") + ", so it would change nothing")
    if plot:
        from cli.plot import step_figure

        step_figure(plot, res, dict(model=model, system=system, gpus=gpus, tp=tp, pp=pp, vpp=vpp, ep=ep, etp=etp,
                                    cp=cp, global_batch=global_batch, micro_batch=micro_batch, seq_len=seq_len,
                                    precision=precision, recompute=recompute, schedule=schedule,
                                    optimizer=optimizer, gpus_per_domain=gpus_per_domain, placement=placement,
                                    ep_in_domain=ep_in_domain, **parse_sets(sets)), report=report)
        err.print(f"wrote {_clean(plot)}")
    if trace:
        write_trace(trace, res.trace())
        err.print(f"wrote {_clean(trace)}")
    if as_json:
        _echo_json(res.as_dict())
        return
    out = _stdout()
    out.print(step_summary(res))
    out.print(breakdown_table(res))
    if report:
        from cli.report import congestion_panel

        out.print(placement_table(res))
        out.print(hottest_table(res))
        for ph in res.traffic.phases:
            if ph.report is not None:
                out.print(Text(f"congestion of the step's {ph.name} traffic ({ph.tasks} tasks at once, "
                               f"{ph.makespan_s * 1e6:,.1f} us)", style="bold"))
                out.print(congestion_panel(ph.report, top=5))
