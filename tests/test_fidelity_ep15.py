"""EP kernels, round 15 (issue 8; study, no model change): the GB200 / GB300 tray small-shape DeepEP LL miss and
pplx-kernels. A new tray source (aiconfigurator's vLLM ``moe_a2a`` tables) drew ``fit`` for GB200 but times vLLM's
eager Python prepare / finalize, not the kernel, so it was recorded and not added; the fit rows give no rank-count
per-call term for DeepEP on Blackwell (docs/collectives.md, "Round 15 (2026-12-05), EP kernels")."""

import tomllib
from pathlib import Path

from collectives.calibration import LL_NVLINK_S
from tests.test_published_points import split_coin

DATA = Path(__file__).resolve().parents[1] / "collectives" / "data" / "published_points.toml"
DOCS = Path(__file__).resolve().parents[1] / "docs" / "collectives.md"

#: The two group names fixed (and committed) before their coins were computed, with the coins the docs record.
VLLM_GROUPS = {"aiconfigurator-vllm-deepep-ll-gb200-1node": "fit",
               "aiconfigurator-vllm-deepep-ll-gb300-1node": "heldout"}


def _moe_points() -> list[dict]:
    return tomllib.loads(DATA.read_text())["moe_alltoall"]


def test_vllm_tray_groups_draw_the_recorded_coins():
    """The names' coins are the ones written in the docs (206 -> fit, 101 -> heldout), so no later round redraws
    them under another name."""
    for group, side in VLLM_GROUPS.items():
        assert split_coin(group) == side, group
    text = DOCS.read_text()
    assert "`aiconfigurator-vllm-deepep-ll-gb200-1node` (first byte 206: **fit**)" in text
    assert "`aiconfigurator-vllm-deepep-ll-gb300-1node`\n(101: held-out" in text


def test_vllm_host_path_rows_are_not_validation_rows():
    """The vLLM rows time the framework's host path (a flat ~80 us floor from 1 to 256 tokens): the kernel model has
    no term for it, so none of them is in the data file and the one-board LL form keeps its Hopper entries only."""
    groups = {p.get("group", "") for p in _moe_points()}
    assert not any(g.startswith("aiconfigurator-vllm-") for g in groups)
    assert {k[2] for k in LL_NVLINK_S} == {90}


def _one_token(group: str) -> dict[int, tuple[float, float]]:
    """SM count -> (dispatch, combine) latency at 1 token of one DeepEP normal group."""
    out = {}
    for p in _moe_points():
        if p.get("group") == group:
            [row] = [r for r in p["tokens_dispatch_combine_latency_us"] if r[0] == 1]
            out[p["settings"]["sms"]] = (row[1], row[2])
    return out


def test_fit_rows_give_no_rank_count_term_for_deepep_on_blackwell():
    """Fit rows only: at 1 token the 4-rank tray's DeepEP normal dispatch is slower than both 8-rank boards' at every
    SM count, its combine faster, so no one per-call term that falls (or grows) with the rank count fits both phases."""
    tray = _one_token("aiconfigurator-deepep-normal-gb300-1node")
    boards = [_one_token("aiconfigurator-deepep-normal-b200-1node"),
              _one_token("aiconfigurator-deepep-normal-b300-1node")]
    for g in [tray, *boards]:
        assert sorted(g) == [8, 16, 24]
    assert all(split_coin(g) == "fit" for g in ("aiconfigurator-deepep-normal-gb300-1node",
                                               "aiconfigurator-deepep-normal-b200-1node",
                                               "aiconfigurator-deepep-normal-b300-1node"))
    for sms, (d4, c4) in tray.items():
        for board in boards:
            d8, c8 = board[sms]
            assert d4 - d8 > 2.0, (sms, d4, d8)   # dispatch: EP4 slower (2.6-6.3 us)
            assert c8 - c4 > 8.0, (sms, c4, c8)   # combine: EP4 faster (8.4-9.9 us)
