"""Rich renderings of collective results: nccl-tests table, congestion report, validation table."""

from __future__ import annotations

from rich.console import Group
from rich.table import Table
from rich.text import Text

from cli.output import clean
from fabric.congestion import CongestionReport
from topologies.units import format_size

__all__ = ["results_table", "congestion_panel", "validation_table", "bar"]


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
                  r.protocol, ana, f"{r.max_link_utilization:.0%}", f"{bound:.2f}")
    return t


def congestion_panel(rep: CongestionReport, top: int = 10) -> Group:
    hot = Table(title="hottest links", title_justify="left")
    for name, just in (("link", "left"), ("tier", "left"), ("utilization", "left"), ("", "right"),
                       ("busy (us)", "right"), ("flows", "right"), ("groups crossing", "left")):
        hot.add_column(name, justify=just)
    for h in rep.hottest[:top]:
        groups = ", ".join(f"{clean(g)} {s:.0%}" for g, s in h.groups)
        name = clean(h.name) if h.parallel == 1 else f"{clean(h.name)} (x{h.parallel} parallel)"
        hot.add_row(name, clean(h.tier), bar(h.utilization), f"{h.utilization:.0%}", f"{h.busy_s * 1e6:,.1f}",
                    f"{h.flows:,}", groups)
    tiers = Table(title="per-tier utilization (links that carried traffic)", title_justify="left")
    for name, just in (("tier", "left"), ("links", "right"), ("GB", "right"), ("mean", "left"), ("", "right"),
                       ("max", "right")):
        tiers.add_column(name, justify=just)
    for t in rep.tiers:
        tiers.add_row(clean(t.tier), f"{t.links:,}", f"{t.bytes / 1e9:,.2f}", bar(t.mean_utilization, 12),
                      f"{t.mean_utilization:.0%}", f"{t.max_utilization:.0%}")
    lines = [hot, tiers]
    if rep.failed:
        lines.append(Text("failed links: " + ", ".join(f"{clean(s)} ({n} directed links)" for s, n in rep.failed),
                          style="bold red"))
    lines.append(Text(f"max-link-load bound {rep.lower_bound_s * 1e6:,.1f} us; simulated/bound = "
                      f"{rep.bound_ratio:.3f}; utilization max {rep.max_utilization:.0%}, mean "
                      f"{rep.mean_utilization:.0%}, p50 {rep.p50_utilization:.0%}, p99 {rep.p99_utilization:.0%}"))
    lines.append(Text("verdict: " + clean(rep.verdict), style="bold"))
    return Group(*lines)


def _short(text: str, width: int) -> str:
    return text if len(text) <= width else text[: width - 1] + "…"


def _short_mid(text: str, width: int) -> str:
    """Shorten in the middle, keeping the sweep suffix (``@EP36:dispatch``, ``@1GiB``) visible."""
    if len(text) <= width:
        return text
    tail = text[text.find("@"):] if "@" in text else ""
    tail = tail[-(width // 2):]
    return text[: width - len(tail) - 1] + "…" + tail


def validation_table(rep) -> Group:
    """Validation rows (fit and held-out apart, consistency checks labelled) and error summaries.

    Fits a 100-column terminal: the point id is shortened at the front-free end, the
    quantity is abbreviated and no cell wraps.
    """
    t = Table(title=f"validation against {_short(rep.source, 80)}", title_justify="left", box=None,
              pad_edge=False, expand=False)
    for name, just, width in (("point", "left", 30), ("set", "left", 5), ("qty", "left", 7),
                              ("pred", "right", 8), ("meas", "right", 7), ("err", "right", 7),
                              ("", "left", 4), ("model", "left", 16)):
        t.add_column(name, justify=just, no_wrap=True, min_width=width, max_width=width, overflow="ellipsis")
    set_label = {"fit": "fit", "heldout": "held", "unsplit": "-"}
    for r in rep.rows:
        pred = "-" if r.predicted is None else f"{r.predicted:,.1f}" if r.predicted < 1e4 else f"{r.predicted:.3g}"
        meas = "-" if r.measured is None else f"{r.measured:,.1f}"
        err = "-" if r.rel_error is None else f"{r.rel_error:+.1%}"
        mark = {True: Text("pass", "green"), False: Text("FAIL", "bold red"), None: Text("n/a", "dim")}[r.passed]
        qty = ("busbw" if r.quantity.startswith("busbw") else "RDMA" if "RDMA" in r.quantity else
               "logical" if r.quantity.startswith("logical") else "bytes" if "bytes" in r.quantity else
               _short(r.quantity, 7))
        split = set_label.get(r.split, r.split) + ("*" if r.consistency else "")
        t.add_row(_short_mid(r.id, 30), split, qty, pred, meas, err, mark, _short(r.note, 16))
    lines = [t]
    for s in rep.summaries:
        lines.append(Text(f"{s.split:>8}: {s.n} points, mean |error| {s.mean_abs_error:.1%}, "
                          f"max |error| {s.max_abs_error:.1%}", style="bold" if s.split == "heldout" else ""))
    if rep.consistency is not None:
        c = rep.consistency
        lines.append(Text(f"consistency checks (*, restate a constant's source; not in the errors): {c.n}, "
                          f"max |error| {c.max_abs_error:.1%}", style="dim"))
    if rep.training_points:
        lines.append(Text(f"{rep.training_points} training points: see the step-time table", style="dim"))
    return Group(*lines)
