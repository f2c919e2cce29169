"""Expert-parallel rows, round 14 (issue 8): pplx-kernels rows audited against the timed bench once more."""

import tomllib
from pathlib import Path

DATA = Path(__file__).resolve().parents[1] / "collectives" / "data"
_PPLX_GROUPS = ("pplx-kernels-h100", "wufann-pplx-kernels-h20-1node")


def _rows() -> list[dict]:
    doc = tomllib.loads((DATA / "published_points.toml").read_text())
    return [p for p in doc["moe_alltoall"] if p.get("group") in _PPLX_GROUPS]


def test_pplx_rows_record_that_the_bench_prints_rank_0_only():
    """tests/bench_all_to_all.py (@ 7af3059 for the README table, @ 12cecfd for the H20 TSV, the same at
    2bd6e30) formats its latency cells inside ``if pgi.rank == 0``: each cell is rank 0's mean over 20
    repeats of 10 samples (events e0 -> e1 -> e2 after a barrier), not the slowest rank's. Every pplx row says
    so in its ``statistic``, and all of them stay held-out (no pplx row was moved to the fit split)."""
    rows = _rows()
    assert len(rows) == 12  # 10 README entries (20 values) + 2 H20 sweeps (28 values)
    for p in rows:
        assert "rank 0's CUDA events" in p["settings"]["statistic"], p["id"]
        assert p["split"] == "heldout", p["id"]
    assert sum(1 for p in rows if p["group"] == "pplx-kernels-h100") == 10
