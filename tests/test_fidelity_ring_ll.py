"""Round 11: the LL ring's latency on one NVLink board, from nccl-tests sweeps of 2, 4 and 8 GPUs
(ai-dynamo/aiconfigurator ``nccl_perf.parquet`` @ 095f58a5, the fit-split groups of published_points.toml),
and the count / split of those groups.

The expected times are the measured values of fit-split rows (read from the data file) or NCCL's own
latency model (tuning.cc: ``baseLat + nsteps x hwLat``), never a number copied from our output.
"""

import tomllib
from pathlib import Path

import pytest

from collectives import Collective, run
from collectives import nccl_model as nm
from collectives.ring_ll import (RING_LL_NVLINK_BASE_S, RING_LL_NVLINK_STEP_S, RING_LL_NVLINK_TERMS_S_BY_ARCH,
                                 ring_ll_extra_s, ring_ll_steps)
from collectives.validate import _router
from tests.test_published_points import split_coin

POINTS = Path(__file__).resolve().parents[1] / "collectives" / "data" / "published_points.toml"
GROUPS = {f"aiconfigurator-nccl-{g}-1node" for g in ("a100", "h100", "h200", "b200", "b300", "gb200", "gb300")}


def _aic():
    doc = tomllib.loads(POINTS.read_text())
    return [p for p in doc["collective"] if p["group"] in GROUPS]


def _measured_us(point_id, size):
    [p] = [p for p in _aic() if p["id"] == point_id]
    [busbw] = [b for s, b in p["sizes_and_busbw_GBps"] if s == size]
    return nm.busbw_factor(p["collective"], p["ranks"]) * size / (busbw * 1e9) * 1e6


def _time_us(preset, coll, n, size, **over):
    r = _router(preset, over)
    [res] = run(r, [Collective(coll, tuple(range(n)), size, options={"nccl_version": "2.29.2"})])
    return res.time_s * 1e6, res


def test_the_aiconfigurator_groups_hold_76_sweeps_split_by_the_coin():
    pts = _aic()
    assert len(pts) == 76 and {p["group"] for p in pts} == GROUPS
    values = {"fit": 0, "heldout": 0}
    for p in pts:
        assert p["split"] == split_coin(p["group"]), p["id"]
        assert [s for s, _ in p["sizes_and_busbw_GBps"]] == [1 << e for e in range(9, 30, 2)], p["id"]
        values[p["split"]] += len(p["sizes_and_busbw_GBps"])
    assert values == {"fit": 440, "heldout": 396}


@pytest.mark.parametrize("coll,n", [("all_reduce", 8), ("all_gather", 8), ("all_reduce", 2), ("reduce_scatter", 4)])
def test_small_ll_ring_on_a_b200_board_takes_the_measured_time(coll, n):
    """512 B on 8 x B200 (fit rows): the LL ring runs 1.2-1.25 us per step where NCCL charges 0.6 us; NCCL's
    latency model alone gives 15.2 us for the 8-GPU all-reduce, measured 25.1 us (the old model: -40 %)."""
    op = {"all_reduce": "allreduce", "all_gather": "allgather", "reduce_scatter": "reducescatter"}[coll]
    want = _measured_us(f"aic-nccl-b200-{op}-{n}gpu-by-size", 512)
    got, res = _time_us("hgx-b200", coll, n, 512)
    assert res.protocol == "LL"
    assert got == pytest.approx(want, rel=0.10)


def test_the_extra_time_grows_with_the_ring_steps_as_on_the_a100_board():
    """All-gather of 2 KiB on 2, 4, 8 A100s (fit rows): 9.1, 11.0, 14.8 us, +0.95 us per added step; NCCL's
    model adds 0.6. The modelled slope is NCCL's 0.6 us plus RING_LL_NVLINK_STEP_S."""
    t = {n: _time_us("hgx-a100", "all_gather", n, 2048)[0] for n in (2, 4, 8)}
    slope = (t[8] - t[2]) / 6
    meas = {n: _measured_us(f"aic-nccl-a100-allgather-{n}gpu-by-size", 2048) for n in (2, 4, 8)}
    assert (meas[8] - meas[2]) / 6 > 0.8  # the data: well above NCCL's 0.6 us per step
    assert slope == pytest.approx(0.6 + RING_LL_NVLINK_STEP_S * 1e6, abs=0.05)


def test_hopper_has_ll_ring_terms_of_its_own():
    """Rounds 11-15 kept NCCL's LL ring latency on Hopper (no fit-split Hopper row below 1 MiB); round 16 fitted
    Hopper's own terms on the NCCL 2.23 H100 / H200 all-gather / reduce-scatter sweeps (tests/test_fidelity_ll_small.py)."""
    base, step = RING_LL_NVLINK_TERMS_S_BY_ARCH[2]
    assert ring_ll_extra_s("all_reduce", 8, "LL", 90) == pytest.approx(base + 14 * step)
    got, res = _time_us("hgx-h100", "all_reduce", 8, 512)
    assert res.protocol == "LL" and got == pytest.approx(6.8 + 14 * 0.6 + (base + 14 * step) * 1e6, rel=0.03)


def test_only_ll_pays_and_steps_follow_nccl():
    assert ring_ll_steps("all_reduce", 8) == 14 and ring_ll_steps("all_gather", 8) == 7
    assert ring_ll_extra_s("all_gather", 4, "LL128", 100) == 0.0 == ring_ll_extra_s("all_gather", 4, "Simple", 80)
    assert ring_ll_extra_s("all_gather", 4, "LL", 100) == pytest.approx(RING_LL_NVLINK_BASE_S + 3 * RING_LL_NVLINK_STEP_S)
