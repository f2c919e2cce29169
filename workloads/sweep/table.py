"""Stored sweep points as table rows: which columns to show, sorting, the best point, CSV and JSON.

Metrics have a direction: times, bounds and utilisations are better low
(names ending in ``_s``, ``_us``, ``utilization``), bandwidths, throughputs and
MFU better high (``_GBps``, ``tokens_per_s*``, ``tflops*``, ``mfu*``). Sorting by a
metric puts the best point first (``reverse`` puts the worst first, e.g. to rank
failures by their damage); sorting by any other column is ascending.

Examples
--------
>>> direction("busbw_GBps"), direction("step_time_s"), direction("routing")
(-1, 1, 0)
>>> rows = [{"routing": "ecmp", "busbw_GBps": 10.0, "status": "ok"},
...         {"routing": "spray", "busbw_GBps": 40.0, "status": "ok"}]
>>> [r["routing"] for r in sort_rows(rows, "busbw_GBps")]
['spray', 'ecmp']
"""

from __future__ import annotations

import csv
import io
import json
import math

from topologies.errors import SpecError, brief

__all__ = ["input_value", "with_baseline", "shown_columns", "direction", "sort_rows", "best_index", "default_metric", "export_columns", "to_csv", "to_json",
           "input_columns", "output_columns", "DEFAULT_METRICS", "SHOWN_OUTPUTS"]

#: Metric shown and sorted by default, per point kind (first one present wins).
DEFAULT_METRICS = ("busbw_GBps", "tokens_per_s_per_gpu", "step_time_s", "time_us")
_LOW = ("_s", "_us", "utilization", "bound_ratio", "slowdown")
_HIGH = ("_gbps", "tokens_per_s", "tokens_per_s_per_gpu", "tflops_per_gpu", "mfu_bf16", "mfu_fp8")


def direction(column: str) -> int:
    """1: lower is better, -1: higher is better, 0: not a metric."""
    c = column.lower()
    if c in ("elapsed_s", "cpu_s", "seq"):
        return 0
    if c.endswith(_HIGH) or c.startswith("mfu"):
        return -1
    if c.endswith(_LOW):
        return 1
    return 0


def _key(value, sign: int):
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return (1, 0)
    if isinstance(value, (int, float)):
        return (0, sign * value)
    return (0, str(value)) if sign >= 0 else (0, str(value))


def sort_rows(rows: list[dict], column: str, *, reverse: bool = False) -> list[dict]:
    """Rows sorted by ``column`` (best first for metrics; errors and empty values last)."""
    if rows and column not in rows[0]:
        raise SpecError(f"--sort {brief(column)}: no such column; columns: {', '.join(rows[0])}")
    d = direction(column) or 1
    ok = [r for r in rows if r.get("status", "ok") == "ok" and r.get(column) is not None]
    rest = [r for r in rows if r not in ok]
    if any(isinstance(r[column], str) for r in ok):
        vals = [input_value(r, column) for r in ok]
        if all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in vals):   # e.g. size "64MiB"
            order = sorted(range(len(ok)), key=lambda i: vals[i], reverse=reverse)
            ok = [ok[i] for i in order]
        else:
            ok.sort(key=lambda r: str(r[column]), reverse=reverse)
    else:
        ok.sort(key=lambda r: d * r[column], reverse=reverse)
    return ok + rest


def input_value(row: dict, key: str):
    """The normalised value of input ``key`` of a stored row (bytes for ``size``), else the column's."""
    ins = json.loads(row.get("inputs_json") or "{}")
    for table in ("inputs", "sets"):
        v = ins.get(table, {}).get(key)
        if v is not None:
            return v
    return row.get(key)


def best_index(rows: list[dict], column: str) -> int | None:
    """Index of the best point for metric ``column`` (None when it is not a metric or nothing succeeded)."""
    d = direction(column)
    cand = [(d * r[column], i) for i, r in enumerate(rows)
            if d and r.get("status", "ok") == "ok" and isinstance(r.get(column), (int, float))]
    return min(cand)[1] if cand else None


def default_metric(rows: list[dict]) -> str | None:
    for m in DEFAULT_METRICS:
        if any(r.get(m) is not None for r in rows):
            return m
    return None


def input_columns(rows: list[dict]) -> list[str]:
    """Input columns (from the points' stored input names), in first-seen order."""
    names: list[str] = ["op"]
    for r in rows:
        ins = json.loads(r["inputs_json"])
        for k in list(ins.get("inputs", {})) + list(ins.get("sets", {})) + ["fail", "degrade"]:
            if k not in names and k in r:
                names.append(k)
    return names


def output_columns(rows: list[dict]) -> list[str]:
    names: list[str] = []
    for r in rows:
        if r.get("outputs_json"):
            for k in json.loads(r["outputs_json"]):
                if k not in names:
                    names.append(k)
    return names


def export_columns(rows: list[dict], swept: list[str]) -> list[str]:
    """Swept keys first (one column each, named by the key), then the other inputs, outputs, status."""
    ins = input_columns(rows)
    first = [k for k in swept if k in ins]
    return (["point_id"] + first + [k for k in ins if k not in first] + output_columns(rows)
            + ["status", "error", "elapsed_s", "cpu_s", "version"])


def _clean(v):
    if isinstance(v, float) and not math.isfinite(v):
        return None
    return v


def to_json(rows: list[dict], swept: list[str]) -> str:
    cols = export_columns(rows, swept)
    return json.dumps([{c: _clean(r.get(c)) for c in cols} for r in rows], indent=2)


def to_csv(rows: list[dict], swept: list[str]) -> str:
    cols = export_columns(rows, swept)
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    w.writerow(cols)
    for r in rows:
        w.writerow(["" if _clean(r.get(c)) is None else r.get(c) for c in cols])
    return buf.getvalue()





def _n_selectors(text) -> int:
    return 0 if text in (None, "", "none") else len(str(text).split("; "))


def with_baseline(rows: list[dict], swept: list[str]) -> list[dict]:
    """Add ``slowdown`` (time over the baseline's) when the sweep varies ``fail`` or ``degrade``.

    The baseline of a point is the point with the same values of the other swept
    keys and the fewest failures and degradations (``fail=none``), when there is
    exactly one such point. ``slowdown`` is ``time_us`` (collectives) or
    ``step_time_s`` (steps) over the baseline's; 1.0 means the failure costs nothing.

    Examples
    --------
    >>> rows = [{"routing": "ecmp", "fail": "none", "degrade": "none", "time_us": 10.0, "status": "ok"},
    ...         {"routing": "ecmp", "fail": "spine 0", "degrade": "none", "time_us": 15.0, "status": "ok"}]
    >>> [r["slowdown"] for r in with_baseline(rows, ["fail", "routing"])]
    [1.0, 1.5]
    """
    if not ({"fail", "degrade"} & set(swept)) or not rows:
        return rows
    metric = "step_time_s" if any(r.get("step_time_s") is not None for r in rows) else "time_us"
    others = [k for k in swept if k not in ("fail", "degrade")]
    groups: dict = {}
    for r in rows:
        groups.setdefault(tuple(str(r.get(k)) for k in others), []).append(r)
    out = []
    for r in rows:
        g = groups[tuple(str(r.get(k)) for k in others)]
        counts = [_n_selectors(x.get("fail")) + _n_selectors(x.get("degrade")) for x in g]
        low = min(counts)
        base = [x for x, c in zip(g, counts) if c == low]
        ref = base[0].get(metric) if len(base) == 1 and len(g) > 1 else None
        val = r.get(metric)
        out.append({**r, "slowdown": val / ref if isinstance(val, (int, float)) and ref else None})
    return out


#: Output columns a table shows by default, per kind (those present, in this order).
SHOWN_OUTPUTS = ("time_us", "busbw_GBps", "step_time_s", "tokens_per_s_per_gpu", "tflops_per_gpu", "mfu_bf16",
                 "slowdown", "max_link_utilization", "hottest_link")


def shown_columns(rows: list[dict], swept: list[str], metric: str | None) -> list[str]:
    """Columns of a compact table: the swept keys that vary, the key metrics, the sort column."""
    vary = [k for k in ["op"] + list(swept) if k in rows[0] and len({str(r.get(k)) for r in rows}) > 1]
    outs = [c for c in SHOWN_OUTPUTS if any(r.get(c) is not None for r in rows)]
    cols = vary + [c for c in outs if c not in vary]
    if metric and metric not in cols:
        cols.append(metric)
    if any(r.get("status") != "ok" for r in rows):
        cols.append("status")
        if not any(r.get("status") == "ok" for r in rows):
            cols.append("error")
    return cols
