"""Round 13 study (issue 8 item 5): one-board fit ring rows at 1-32 MiB, classed by the model's protocol switch.

Reads a ``fabric-emu validate --json`` file and, on the **fit split only**, takes every one-board ring size sweep
(category ``nvlink`` and the aiconfigurator GB200 / GB300 tray sweeps). Each value at 1-32 MiB is put in one of two
classes: the first size after the model's (NCCL's tuner's) switch from Ring/LL to LL128 / Simple, or any other.
Prints the mean |busbw error| of both classes, the values of the first class, and, for them, the measured time
against a line through the measured LL times at S/16 and S/4. See docs/collectives.md, "Round 13 (2026-12-04),
mid-size one-board rings".

Run: ``python -m benchmarks.midring_study /tmp/val.json``.
"""

from __future__ import annotations

import argparse
import collections
import json
import re
import statistics

MIB = 1 << 20
_UNITS = {"B": 1, "KiB": 1 << 10, "MiB": 1 << 20, "GiB": 1 << 30}


def _size(tag: str) -> float | None:
    m = re.fullmatch(r"([\d.]+)(B|KiB|MiB|GiB)", tag)
    return float(m.group(1)) * _UNITS[m.group(2)] if m else None


def _tag(size: float) -> str:
    return f"{int(size) >> 20}MiB" if size >= MIB else f"{int(size) >> 10}KiB"


def _time_us(group: str, size: float, busbw_GBps: float) -> float:
    m = re.search(r"(\d+)gpu", group)
    n = int(m.group(1)) if m else 8
    factor = 2 * (n - 1) / n if "allreduce" in group else (n - 1) / n
    return factor * size / (busbw_GBps * 1e9) * 1e6


def study(rows: list[dict]) -> dict:
    """The two classes and the first-class details (see the module docstring)."""
    groups = collections.defaultdict(list)
    for x in rows:
        if x.get("split") != "fit" or x.get("kind") != "collective" or "@" not in x["id"]:
            continue
        if not (x["category"] == "nvlink" or x["id"].startswith("aic-nccl-gb")) or not x["note"].startswith("ring/"):
            continue
        g, tag = x["id"].split("@")
        s = _size(tag)
        if s is not None:
            groups[g].append((s, x["rel_error"], x["note"]))
    first, other = [], []
    for g, vals in groups.items():
        prev = None
        for s, e, note in sorted(vals):
            if MIB <= s <= 32 * MIB:
                (first if prev == "ring/LL" and note != "ring/LL" else other).append((e, g, s, note))
            prev = note
    by_id = {x["id"]: x for x in rows}
    lines = []
    for e, g, s, note in sorted(first):
        a, b, c = (by_id.get(f"{g}@{_tag(v)}") for v in (s / 16, s / 4, s))
        if not (a and b and c):
            continue
        ta, tb, tc = (_time_us(g, v, r["measured"]) for v, r in ((s / 16, a), (s / 4, b), (s, c)))
        lines.append((g, s, note, e, tc, tb + (tb - ta) * 4.0, _time_us(g, s, c["predicted"])))
    return {"groups": len(groups), "first": first, "other": other, "ll_line": lines}


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("validate_json")
    args = ap.parse_args(argv)
    r = study(json.load(open(args.validate_json))["rows"])
    print(f"{r['groups']} one-board fit ring sweeps")
    for name, vals in (("first size after Ring/LL", r["first"]), ("other 1-32 MiB", r["other"])):
        if vals:
            print(f"{name}: {len(vals)} values, mean |error| {100 * statistics.mean(abs(v[0]) for v in vals):.1f} %, "
                  f"signed median {100 * statistics.median(v[0] for v in vals):+.1f} %")
    print("sweep, size, model protocol, error, measured us, LL line us, model us")
    for g, s, note, e, tc, tl, tm in r["ll_line"]:
        print(f"  {g} {_tag(s)} {note} {100 * e:+.1f} % {tc:.1f} {tl:.1f} {tm:.1f}")
    if r["ll_line"]:
        print("median |measured/LL line - 1| %.1f %%, |measured/model - 1| %.1f %%" % (
            100 * statistics.median(abs(tc / tl - 1) for *_, tc, tl, _ in r["ll_line"]),
            100 * statistics.median(abs(tc / tm - 1) for *_, tc, _, tm in r["ll_line"])))


if __name__ == "__main__":
    main()
