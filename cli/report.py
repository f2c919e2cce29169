"""Rich renderings of collective results: nccl-tests table, congestion report, validation table."""

from __future__ import annotations

from rich.console import Group
from rich.table import Table
from rich.text import Text

from cli.output import clean
from fabric.congestion import CongestionReport
from topologies.units import format_size

__all__ = ["results_table", "congestion_panel", "validation_table", "bar", "sweep_table", "cell", "histogram"]


def bar(fraction: float, width: int = 20) -> Text:
    """A utilisation bar: green below 70 %, yellow below 90 %, red above."""
    f = max(0.0, min(1.0, fraction))
    full = int(round(f * width))
    style = "green" if f < 0.7 else "yellow" if f < 0.9 else "red"
    return Text("█" * full + "·" * (width - full), style=style)


def results_table(rows, title: str) -> Table:
    t = Table(title=title, title_justify="left")
    for name, just in (("size", "right"), ("time (us)", "right"), ("algbw GB/s", "right"), ("busbw GB/s", "right"),
                       ("algorithm", "left"), ("proto", "left"), ("α-β (us)", "right"),
                       ("max link util", "right"), ("T / bound", "right")):
        t.add_column(name, justify=just, no_wrap=name == "algorithm")
    for r in rows:
        ana = "-" if r.analytic_time_s is None else f"{r.analytic_time_s * 1e6:,.1f}"
        bound = r.time_s / r.lower_bound_s if r.lower_bound_s > 0 else float("nan")
        t.add_row(format_size(r.size_bytes) if r.logical_bytes is None else f"{r.logical_bytes / 1e6:,.1f} MB*",
                  f"{r.time_s * 1e6:,.1f}", f"{r.algbw_Bps / 1e9:,.1f}", f"{r.busbw_Bps / 1e9:,.1f}", clean(r.algorithm),
                  r.protocol, ana, f"{r.max_link_utilization:.0%}", f"{bound:.2f}" if bound == bound else "-")
    return t


_SPARK = " ▁▂▃▄▅▆▇█"


def histogram(values, bins: int = 10) -> Text:
    """Utilisations 0..100 % in ``bins`` bins as a sparkline (taller: more links), coloured by threshold."""
    import numpy as np

    v = np.clip(np.asarray(values, dtype=float), 0.0, 1.0)
    counts = np.histogram(v, bins=bins, range=(0.0, 1.0))[0] if len(v) else np.zeros(bins, int)
    top = counts.max() if len(counts) and counts.max() > 0 else 1
    out = Text()
    for i, c in enumerate(counts):
        ch = _SPARK[int(np.ceil(c / top * (len(_SPARK) - 1)))] if c else "·"
        f = (i + 0.5) / bins
        out.append(ch, style="green" if f < 0.7 else "yellow" if f < 0.9 else "red")
    return out


def congestion_panel(rep: CongestionReport, top: int = 10, link_tiers=None) -> Group:
    hot = Table(title="hottest links", title_justify="left")
    for name, just in (("link", "left"), ("tier", "left"), ("utilization", "left"), ("", "right"),
                       ("busy (us)", "right"), ("flows", "right"), ("groups crossing", "left")):
        hot.add_column(name, justify=just, no_wrap=name in ("utilization", ""), min_width=4 if not name else None)
    for h in rep.hottest[:top]:
        groups = ", ".join(f"{clean(g)} {s:.0%}" for g, s in h.groups)
        name = clean(h.name) if h.parallel == 1 else f"{clean(h.name)} (x{h.parallel} parallel)"
        hot.add_row(name, clean(h.tier), bar(h.utilization, 12), f"{h.utilization:.0%}", f"{h.busy_s * 1e6:,.1f}",
                    f"{h.flows:,}", groups)
    tiers = Table(title="per-tier utilization (links that carried traffic)", title_justify="left")
    for name, just in (("tier", "left"), ("links", "right"), ("GB", "right"), ("mean", "left"), ("", "right"),
                       ("max", "right")) + ((("links by utilization 0→100%", "left"),) if link_tiers is not None
                                            else ()):
        tiers.add_column(name, justify=just, no_wrap=True)
    for t in rep.tiers:
        extra = ()
        if link_tiers is not None:
            import numpy as np

            mine = (np.asarray(link_tiers) == t.tier) & (np.asarray(rep.link_bytes) > 0)
            extra = (histogram(np.asarray(rep.link_utilization)[mine]),)
        tiers.add_row(clean(t.tier), f"{t.links:,}", f"{t.bytes / 1e9:,.2f}", bar(t.mean_utilization, 12),
                      f"{t.mean_utilization:.0%}", f"{t.max_utilization:.0%}", *extra)
    lines = [hot, tiers]
    if rep.failed:
        lines.append(Text("failed links: " + ", ".join(f"{clean(s)} ({n} directed links)" for s, n in rep.failed),
                          style="bold red"))
    ratio = f"{rep.bound_ratio:.3f}" if rep.bound_ratio == rep.bound_ratio else "- (no link carried bytes)"
    lines.append(Text(f"max-link-load bound {rep.lower_bound_s * 1e6:,.1f} us; simulated/bound = "
                      f"{ratio}; utilization max {rep.max_utilization:.0%}, mean "
                      f"{rep.mean_utilization:.0%}, p50 {rep.p50_utilization:.0%}, p99 {rep.p99_utilization:.0%}"))
    lines.append(Text("bars: green below 70 %, yellow below 90 %, red from 90 % of capacity", style="dim"))
    lines.append(Text("verdict: " + clean(rep.verdict), style="bold"))
    return Group(*lines)


def validation_table(rep) -> Group:
    """Validation rows (fit and held-out apart, consistency checks labelled) and error summaries.

    Fits a 100-column terminal without cutting anything: no vertical rules, ids and
    numbers never broken, the model note on its own dim line under the id, the
    quantity abbreviated to one word.
    """
    from rich import box

    t = Table(title=f"validation against {rep.source}", title_justify="left", box=box.SIMPLE_HEAD,
              padding=(0, 1), pad_edge=False, show_edge=False)
    set_label = {"fit": "fit", "heldout": "held", "unsplit": "-"}
    names = ("point / model", "set", "qty", "predicted", "measured", "error", "tol", "")
    id_width = max([len(r.id) for r in rep.rows] + [len(names[0])])
    for name in names:
        t.add_column(name, justify="right" if name in ("predicted", "measured", "error", "tol") else "left",
                     no_wrap=name != "point / model", min_width=id_width if name == names[0] else None)
    for r in rep.rows:
        pred = "-" if r.predicted is None else f"{r.predicted:,.1f}"
        meas = "-" if r.measured is None else f"{r.measured:,.1f}"
        err = "-" if r.rel_error is None else f"{r.rel_error:+.1%}"
        tol = "-" if r.tolerance is None else f"{r.tolerance:.0%}"
        mark = {True: Text("pass", "green"), False: Text("FAIL", "bold red"), None: Text("n/a", "dim")}[r.passed]
        q = str(r.quantity)
        qty = ("busbw" if q.startswith("busbw") else "RDMA" if "RDMA" in q else "logical" if q.startswith("logical")
               else "bytes" if "bytes" in q else q.split()[0] if q else "-")
        split = getattr(r, "split", "unsplit")
        split = set_label.get(split, split) + ("*" if getattr(r, "consistency", False) else "")
        point = Text(r.id)
        if r.note:
            point.append("\n" + r.note, style="dim")
        t.add_row(point, split, qty, pred, meas, err, tol, mark)
    lines = [t]
    summaries = getattr(rep, "summaries", None)
    if summaries:
        for s in summaries:
            lines.append(Text(f"{s.split:>8}: {s.n} points, mean |error| {s.mean_abs_error:.1%}, "
                              f"max |error| {s.max_abs_error:.1%}", style="bold" if s.split == "heldout" else ""))
    else:
        lines.append(Text(f"mean |error| {rep.mean_abs_error:.1%}, max |error| {rep.max_abs_error:.1%}"))
    c = getattr(rep, "consistency", None)
    if c is not None:
        lines.append(Text(f"consistency checks (*, restate a constant's source; not in the errors): {c.n}, "
                          f"max |error| {c.max_abs_error:.1%}", style="dim"))
    if getattr(rep, "training_points", 0):
        lines.append(Text(f"{rep.training_points} training points: see the step-time table", style="dim"))
    return Group(*lines)


def cell(value) -> str:
    """A table cell: numbers with 4 significant digits and thousands separators, None as '-'."""
    if value is None:
        return "-"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, int):
        return f"{value:,}"
    if isinstance(value, float):
        if value != value:
            return "-"
        if value == 0 or 1e-3 <= abs(value) < 1e15:
            digits = max(0, 3 - int(f"{abs(value):e}".split("e")[1])) if value else 0
            return f"{value:,.{digits}f}"
        return f"{value:.3g}"
    return str(value)


def sweep_table(rows: list[dict], columns: list[str], best_id: str | None, title: str) -> Table:
    """Stored sweep points as a table (``columns`` in order), the best point marked with a star."""
    t = Table(title=title, title_justify="left")
    t.add_column("", no_wrap=True, width=1)
    for c in columns:
        numeric = any(isinstance(r.get(c), (int, float)) and not isinstance(r.get(c), bool) for r in rows)
        t.add_column(c, justify="right" if numeric else "left", overflow="ellipsis",
                     no_wrap=numeric or c in ("routing", "status", "op"))
    for r in rows:
        mark = Text("★", style="bold green") if r["point_id"] == best_id else Text("")
        cells = [Text(f"{r[c]:.0%}" if isinstance(r.get(c), float) and ("utilization" in c or c.startswith("mfu"))
                      else clean(cell(r.get(c))), style="red" if c == "status" and r.get(c) != "ok" else "") for c in columns]
        t.add_row(mark, *cells)
    if best_id is not None:
        t.caption = "★ best point"
    return t
