"""DeepEP low-latency kernels on Blackwell (issue 8, round 14; study, no model change): the aiconfigurator DeepEP
rows record which DeepEP build sglang's images carry (x86: the Dockerfile pin 9af0e0d; Grace-Blackwell: the hybrid-ep
branch @ d28bd67), and no Blackwell LL group is fit (aiconfigurator's ``sglang/0.5.10`` LL files are an earlier
collection of the same setups, not another stack, so no group was made of them; docs/collectives.md, "Round 14
(2026-12-04), DeepEP LL on Blackwell")."""

import tomllib
from pathlib import Path

from collectives.calibration import LL_NVLINK_S
from tests.test_published_points import split_coin

DATA = Path(__file__).resolve().parents[1] / "collectives" / "data"


def _aic_deepep_points() -> list[dict]:
    doc = tomllib.loads((DATA / "published_points.toml").read_text())
    return [p for p in doc["moe_alltoall"] if p.get("group", "").startswith("aiconfigurator-deepep-")]


def test_aiconfigurator_deepep_rows_record_their_build():
    """36 entries (18 LL, 18 normal): GB200 / GB300 rows name the Grace-Blackwell build d28bd67, the x86 rows the
    pin 9af0e0d (the data commit's d28bd67 was checked on GB200)."""
    pts = _aic_deepep_points()
    assert len(pts) == 36
    for p in pts:
        rt = p["settings"]["runtime"]
        if p["settings"]["device"].startswith("NVIDIA GB"):
            assert "Grace-Blackwell (arm64) build" in rt and "d28bd67" in rt, p["id"]
        else:
            assert "most likely ran 9af0e0d" in rt, p["id"]


def test_blackwell_ll_groups_are_the_coins_and_none_is_fit():
    """The one-domain Blackwell LL groups are held-out by their coins, no group was made of the 0.5.10 files, and
    the one-board LL form keeps its Hopper entries only."""
    groups = {p["group"] for p in _aic_deepep_points() if "-deepep-ll-" in p["group"]}
    blackwell = {g for g in groups if any(s in g for s in ("-b200-", "-b300-", "-gb200-", "-gb300-"))}
    assert len(blackwell) == 4
    assert all(split_coin(g) == "heldout" for g in blackwell)
    assert not any("0.5.10" in g or "sglang0" in g for g in groups)
    assert {k[2] for k in LL_NVLINK_S} == {90}
