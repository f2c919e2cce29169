"""Plots for ``--plot FILE.png|.svg`` (optional extra ``fabric-emu[plot]``: matplotlib, Agg backend).

matplotlib is imported only when a plot is asked for; without it the command
fails with one line saying how to install the extra.
"""

from __future__ import annotations

from pathlib import Path


__all__ = ["require_matplotlib", "check_plot_path", "sweep_plot", "busbw_plot", "utilisation_heatmap", "run_figure",
           "step_figure", "FORMATS"]

#: File types a plot may be written as.
FORMATS = (".png", ".svg")


def require_matplotlib():
    """``matplotlib.pyplot`` on the Agg backend, or a one-line SpecError naming the extra."""
    from topologies.errors import SpecError

    try:
        import matplotlib
    except ImportError:
        raise SpecError("--plot: needs matplotlib; install the extra: pip install 'fabric-emu[plot]'") from None
    matplotlib.use("Agg", force=True)
    import matplotlib.pyplot as plt

    return plt


def _check_path(path: str) -> None:
    from topologies.errors import SpecError, brief

    if not str(path).strip():
        raise SpecError("--plot: empty file name; give FILE.png or FILE.svg")
    if Path(path).suffix.lower() not in FORMATS:
        raise SpecError(f"--plot {brief(path)}: the file name must end in .png or .svg")


def check_plot_path(path: str | None) -> None:
    """Check ``--plot PATH`` before any work: a ``.png``/``.svg`` name that :func:`write_atomic` may
    write (so a long run never ends in a refusal, and nothing else is written first).
    ``None`` (no plot asked for) passes."""
    if path is None:
        return
    import importlib.util

    from topologies.errors import SpecError
    from topologies.files import check_target

    _check_path(path)
    check_target(path, what="--plot")
    if importlib.util.find_spec("matplotlib") is None:
        raise SpecError("--plot: needs matplotlib; install the extra: pip install 'fabric-emu[plot]'")


def _save(fig, path: str) -> None:
    import io

    from topologies.files import write_atomic

    buf = io.BytesIO()
    fmt = Path(path).suffix.lower()[1:]
    import matplotlib

    # svg.hashsalt: clip-path and glyph ids are derived from it instead of random, so the same run gives the
    # same bytes (two identical runs differed in every clip-path id)
    with matplotlib.rc_context({"svg.hashsalt": "fabric-emu"}):
        fig.savefig(buf, format=fmt, dpi=120, bbox_inches="tight", metadata={"Date": None} if fmt == "svg" else None)
    write_atomic(path, buf.getvalue(), what="--plot")


def _value(row: dict, key: str):
    from workloads.sweep.table import input_value

    return input_value(row, key)


def _is_number(v) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool)


def sweep_plot(path: str, rows: list[dict], swept: list[str], *, x: str | None, y: str | None) -> None:
    """``y`` against swept key ``x``, one line per combination of the other swept keys that vary."""
    from topologies.errors import SpecError, brief

    _check_path(path)
    ok = [r for r in rows if r.get("status") == "ok"]
    if not ok:
        raise SpecError("--plot: no successful points to plot")
    vary = [k for k in swept if len({str(r.get(k)) for r in ok}) > 1]
    x = x or (vary[0] if vary else None)
    if x is None:
        raise SpecError("--plot: the sweep varies no key; give --x KEY")
    if x not in ok[0]:
        raise SpecError(f"--x {brief(x)}: no such column; swept keys: {', '.join(swept)}")
    if not y or y not in ok[0] or not any(_is_number(r.get(y)) for r in ok):
        raise SpecError(f"--y {brief(y)}: not a numeric column of this sweep")
    plt = require_matplotlib()
    def follows_x(k):   # a key zipped with x (one value per x value) is not a series of its own
        seen = {}
        return all(seen.setdefault(str(r.get(x)), str(r.get(k))) == str(r.get(k)) for r in ok)
    others = [k for k in vary if k != x and not follows_x(k)]
    series: dict = {}
    for r in ok:
        series.setdefault(tuple(str(r.get(k)) for k in others), []).append(r)
    xs_all = [_value(r, x) for r in ok]
    numeric = all(_is_number(v) for v in xs_all)
    cats = [] if numeric else sorted({str(v) for v in xs_all}, key=lambda s: xs_all.index(
        next(v for v in xs_all if str(v) == s)))
    fig, ax = plt.subplots(figsize=(7.5, 4.5))
    for label, members in sorted(series.items()):
        pts = sorted(((_value(r, x) if numeric else cats.index(str(_value(r, x))), r[y]) for r in members
                      if _is_number(r.get(y))), key=lambda t: t[0])
        if pts:
            ax.plot([p[0] for p in pts], [p[1] for p in pts], marker="o",
                    label=", ".join(f"{k}={v}" for k, v in zip(others, label)) or y)
    if numeric:
        lo, hi = min(xs_all), max(xs_all)
        if lo > 0 and hi / lo >= 16:
            ax.set_xscale("log", base=2)
    else:
        ax.set_xticks(range(len(cats)), cats, rotation=30 if max(len(c) for c in cats) > 6 else 0, ha="right")
    ax.set_xlabel(x)
    ax.set_ylabel(y)
    ax.grid(True, alpha=0.3)
    if others:
        ax.legend(fontsize=8, loc="best")
    ax.set_title(f"{y} against {x}")
    _save(fig, path)
    plt.close(fig)


def busbw_plot(ax, rows) -> None:
    """nccl-tests style: bus bandwidth (GB/s) against message size, one line per group."""
    labels = sorted({r.label for r in rows})
    for lab in labels:
        pts = sorted((r.size_bytes, r.busbw_Bps / 1e9) for r in rows if r.label == lab)
        ax.plot([p[0] for p in pts], [p[1] for p in pts], marker="o", label=lab or rows[0].collective)
    sizes = [r.size_bytes for r in rows if r.size_bytes > 0]
    if sizes and max(sizes) / min(sizes) >= 4:
        ax.set_xscale("log", base=2)
    ax.set_xlabel("size (bytes)")
    ax.set_ylabel("busbw (GB/s)")
    ax.grid(True, alpha=0.3)
    if len(labels) > 1:
        ax.legend(fontsize=8)


def utilisation_heatmap(ax, report, link_tiers) -> None:
    """Link utilisation heat map: one row per tier, its links (that exist) left to right in id order."""
    import numpy as np

    util = np.asarray(report.link_utilization, dtype=float)
    tiers = np.asarray(link_tiers)
    names = [t for t in dict.fromkeys(tiers.tolist())]
    width = max(int((tiers == t).sum()) for t in names)
    grid = np.full((len(names), width), np.nan)
    for i, t in enumerate(names):
        u = util[tiers == t]
        grid[i, :len(u)] = u
    im = ax.imshow(np.ma.masked_invalid(grid), aspect="auto", interpolation="nearest", cmap="inferno", vmin=0,
                   vmax=1)
    ax.set_yticks(range(len(names)), names)
    ax.set_xlabel("link (id order within the tier; blank: failed or absent)")
    ax.set_title("link utilisation by tier")
    ax.figure.colorbar(im, ax=ax, label="utilisation")


def run_figure(path: str, rows, report=None, link_tiers=None, title: str = "") -> None:
    """``run --plot``: busbw against size; with ``--report`` also the utilisation heat map of the largest size."""
    _check_path(path)
    plt = require_matplotlib()
    panels = (1 if rows else 0) + (1 if report is not None else 0)
    fig, axes = plt.subplots(1, panels, figsize=(7.5 * panels, 4.5), squeeze=False)
    k = 0
    if rows:
        busbw_plot(axes[0][k], rows)
        k += 1
    if report is not None:
        utilisation_heatmap(axes[0][k], report, link_tiers)
    if title:
        fig.suptitle(title, fontsize=10)
    _save(fig, path)
    plt.close(fig)



def step_figure(path: str, res, params: dict, *, report: bool) -> None:
    """``step --report --plot``: one utilisation heat map by tier per simulated traffic phase.

    ``params`` are the step's options and ``--set`` keys; the job's fabric is rebuilt
    (without failures: tiers do not change) to know each link's tier.
    """
    from topologies.errors import SpecError

    _check_path(path)
    if not report:
        raise SpecError("--plot: on step it draws the congestion of the step's traffic; add --report")
    phases = [ph for ph in res.traffic.phases if ph.report is not None]
    if not phases:
        raise SpecError("--plot: the step simulated no traffic to plot (one GPU, or no communication)")
    import numpy as np

    from topologies.graph import TIERS
    from workloads.sweep.evaluate import step_fabric
    from workloads.sweep.params import normalise

    cf = step_fabric(normalise({"op": "step", **{k: v for k, v in params.items() if v is not None}}))
    tiers = np.asarray(TIERS)[cf.link_tier]
    plt = require_matplotlib()
    fig, axes = plt.subplots(len(phases), 1, figsize=(9, 2.2 + 1.6 * len(phases)), squeeze=False)
    for ax, ph in zip(axes[:, 0], phases):
        if len(ph.report.link_utilization) != len(tiers):
            raise SpecError("--plot: the rebuilt fabric differs from the step's; cannot map links to tiers")
        utilisation_heatmap(ax, ph.report, tiers)
        ax.set_title(f"{ph.name}: link utilisation by tier ({ph.makespan_s * 1e6:,.0f} us)", fontsize=9)
    fig.suptitle(f"{res.model} on {res.fabric}", fontsize=10)
    _save(fig, path)
    plt.close(fig)
