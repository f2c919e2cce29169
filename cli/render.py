"""Rich renderings of library results (tables only; no computation here)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from rich.table import Table

from cli.output import clean

if TYPE_CHECKING:  # pragma: no cover
    from fabric import BisectionResult
    from topologies import FabricSummary, Preset

__all__ = ["presets_table", "summary_table", "bisection_table", "gbps", "oversubscription_note", "param_value"]


def gbps(value_Bps: float) -> str:
    """Bytes/s as GB/s (GB = 1e9 B), nccl-tests style."""
    return f"{value_Bps / 1e9:,.1f}"


def presets_table(presets: list[Preset]) -> Table:
    t = Table(title="topology presets", title_justify="left")
    t.add_column("name", style="bold")
    t.add_column("description")
    t.add_column("overrides (--set)")
    for p in presets:
        t.add_row(p.name, p.description, ", ".join(f"{x.name}={param_value(x.kind, x.default, x.choices)}"
                                             for x in p.params))
    return t


def param_value(kind: str, value, choices: tuple = ()) -> str:
    """A preset parameter's value as a user writes it: ``400Gb/s``, ``auto``, ``false``, ``1``.

    Examples
    --------
    >>> param_value("bandwidth", 50e9), param_value("str", None), param_value("float", 1.0)
    ('400Gb/s', 'auto', '1')
    """
    if value is None:
        return "none" if "none" in choices else "auto"
    if isinstance(value, bool):
        return "true" if value else "false"
    if kind == "bandwidth":
        return f"{value * 8 / 1e9:g}Gb/s"
    if isinstance(value, float):
        return f"{value:g}"
    if isinstance(value, (list, tuple)):
        return ",".join(f"{v:g}" if isinstance(v, float) else str(v) for v in value)
    return str(value)


def summary_table(summary: FabricSummary, bis: BisectionResult | None, failures: tuple = (),
                  notes: dict | None = None) -> Table:
    """Counts, failures, bisection and ``notes`` (field -> text, None skipped) of one fabric."""
    t = Table(title=f"topology {clean(summary.name)}", title_justify="left", show_header=False)
    t.add_column("field", style="bold")
    t.add_column("value")
    if summary.domains >= summary.gpus:
        t.add_row("GPUs", f"{summary.gpus:,} (single-GPU hosts: no NVLink domain)")
    else:
        t.add_row("GPUs", f"{summary.gpus:,} in {summary.domains:,} NVLink domain" + ("s" if summary.domains > 1 else ""))
    t.add_row("NICs", f"{summary.nics:,}")
    t.add_row("switches", f"{summary.switches:,} (" + ", ".join(f"{v:,} {k}" for k, v in summary.switches_by_role.items()) + ")")
    t.add_row("cables", f"{summary.cables:,} (" + ", ".join(f"{v:,} {clean(k)}" for k, v in summary.cables_by_tier.items())
              + ")")
    t.add_row("links (directed)", f"{summary.links:,}")
    for sel, links in failures:
        t.add_row("failed", f"{clean(sel)} ({len(links)} links)")
    for field, text in (notes or {}).items():
        if text:
            t.add_row(field, clean(text))
    if bis is not None:
        t.add_row("bisection", f"{gbps(bis.bisection_Bps)} GB/s per direction ({gbps(bis.per_gpu_Bps)} GB/s per GPU)")
        t.add_row("min-cut partition", clean(bis.partition.describe()))
    return t


def bisection_table(rows: list[tuple[str, BisectionResult]]) -> Table:
    t = Table(title="bisection bandwidth (per direction, GB = 1e9 B)", title_justify="left")
    t.add_column("topology", style="bold")
    t.add_column("GPUs", justify="right")
    t.add_column("bisection GB/s", justify="right")
    t.add_column("per GPU GB/s", justify="right")
    t.add_column("min-cut partition")
    for name, b in rows:
        t.add_row(clean(name), f"{b.gpus:,}", gbps(b.bisection_Bps), gbps(b.per_gpu_Bps), clean(b.partition.name))
    return t


def oversubscription_note(meta: dict, *, only_if_rounded: bool = False) -> str | None:
    """'leaf 2.2:1 (asked 2:1; ...)': the down:up ratios built, and the ones asked when the radix rounded them.

    Examples
    --------
    >>> oversubscription_note({"oversubscription": [2.0], "clos": {"oversubscription_built": [2.2]}})
    'leaf 2.2:1 (asked 2:1; the switch radix rounds the port split)'
    >>> oversubscription_note({"oversubscription": [2.0], "clos": {"oversubscription_built": [2.0]}},
    ...                       only_if_rounded=True) is None
    True
    """
    asked = meta.get("oversubscription")
    built = (meta.get("clos") or {}).get("oversubscription_built") if isinstance(meta.get("clos"), dict) else None
    if not asked or not built:
        return None
    asked = list(asked) if isinstance(asked, (list, tuple)) else [asked]
    try:
        pairs = [(tier, float(a), float(b)) for tier, a, b in zip(["leaf", "spine"], asked, built)]
    except (TypeError, ValueError):
        return None
    rounded = any(abs(b - a) > 0.01 * a for _, a, b in pairs)
    if only_if_rounded and not rounded:
        return None
    text = ", ".join(f"{tier} {b:.3g}:1" for tier, _, b in pairs)
    if rounded:
        text += " (asked " + ", ".join(f"{a:g}:1" for _, a, _ in pairs) + "; the switch radix rounds the port split)"
    return text
