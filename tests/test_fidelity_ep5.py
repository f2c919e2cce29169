"""Round 5 of issue 8, EP kernels: audits of the EP rows against their sources (docs/collectives.md,
"Round 5, EP kernels").

The low-latency benchmarks of DeepEP and UCCL-EP (``tests/test_low_latency.py`` / ``ep/bench/
test_low_latency.py``) print a bandwidth that is *derived* from the time they print: the bytes of every
valid (token, expert) selection (FP8 dispatch ``hidden + hidden / 128 * 4 + 16``, BF16 combine
``2 * hidden``; the test masks 10 of the ``tokens x topk`` selections) over the average time. A README
table that quotes both a GB/s and a latency must therefore agree with itself; where it does not, the row
must say so (``settings.bandwidth_latency_mismatch``), because the GB/s it is compared on may be the
misprinted cell.
"""

from __future__ import annotations

import tomllib
from pathlib import Path

DATA = Path(__file__).resolve().parents[1] / "collectives" / "data" / "published_points.toml"
#: selections the LL tests mask before timing ("for i in range(10): topk_idx[...] = -1")
MASKED = 10
#: agreement expected of a table whose two columns come from one printed line (rounding to whole GB/s
#: and us, and the masked selections that may coincide)
TOLERANCE = 0.05


def _ll_cells():
    doc = tomllib.loads(DATA.read_text())
    for p in doc["moe_alltoall"]:
        kernel = str(p.get("settings", {}).get("kernel", "")).lower().replace("_", "-")
        if "low-latency" not in kernel or p.get("metric") != "rdma":
            continue
        h, sel = p["hidden"], p["tokens"] * p["topk"] - MASKED
        for q, per_sel in (("dispatch", h + h / 128 * 4 + 16), ("combine", 2 * h)):
            if f"{q}_GBps" in p and f"{q}_latency_us" in p:
                implied = sel * per_sel / (p[f"{q}_latency_us"] * 1e-6) / 1e9
                yield p, q, p[f"{q}_GBps"] / implied - 1


def test_ll_bandwidth_cells_agree_with_their_latency_or_record_the_mismatch():
    cells = list(_ll_cells())
    assert len(cells) >= 24  # DeepEP V1 LL (12) and UCCL-EP LL p6-b200 / p5en (12)
    for p, q, err in cells:
        declared = q in p.get("settings", {}).get("bandwidth_latency_mismatch", [])
        if declared:  # a recorded mismatch must be real, so the key cannot go stale
            assert abs(err) > TOLERANCE, (p["id"], q, err)
        else:
            assert abs(err) <= TOLERANCE, (p["id"], q, f"{err:+.1%}: GB/s and latency disagree")


def test_the_recorded_mismatches_are_the_uccl_p5en_cells():
    """Exactly two cells of all LL tables disagree with their own latency: UCCL-EP p5en EP16 dispatch
    (36 GB/s against 7.51 MB / 226 us = 33.2) and EP32 combine (25 against 14.54 MB / 694 us = 20.9)."""
    bad = sorted((p["id"], q) for p, q, err in _ll_cells() if abs(err) > TOLERANCE)
    assert bad == [("uccl-ep-ll-p5en-ep16", "dispatch"), ("uccl-ep-ll-p5en-ep32", "combine")]
