"""Round 16b (2026-12-06), review fixes (docs/collectives.md, "Round 16b (2026-12-06), review fixes").

* NCCL schedules a collective on fewer channels than topoGetAlgoInfo's ``nc`` from v2.22 (enqueue.cc
  ``scheduleCollTasksToPlan``: >= ``MinTrafficPerChannel`` of traffic per channel, cells of about that traffic;
  ``nccl_model.enqueue.scheduled_channels``), per release;
* the rate at the launched channels is tuning.cc's per protocol and release (``ring_ll.launched_kernel_efficiency``,
  form ``"nccl"``): LL's cap is absolute (``min``), LL128's per channel (share), LL's factor before 2.21 1/4 or 1/3;
* behaviour, not restated constants: Hopper's LL ring efficiency helps the fit rows it was fitted on, and the LL128
  ring fill is off on one Hopper board only (A100 / B200 boards and Hopper across nodes still pay it).
"""

import sys

import numpy as np
import pytest

import collectives.calibration  # noqa: F401  (the package's ``calibration`` name is a function)
from collectives import nccl_model as nm
from collectives import ring_ll
from collectives import validate as v
from collectives.calibration import ring_fill_s
from collectives.nccl_model.enqueue import ring_tree_launch, scheduled_channels
from collectives.ops import Collective
from collectives.runner import planner_for
from collectives.validate import _router

cal = sys.modules["collectives.calibration"]
KIB, MIB = 1 << 10, 1 << 20
V223 = (2, 23, 4)


def _sched(size, coll, n, proto, version, comm=24):
    return scheduled_channels(size, coll, n, ring_tree_launch(size, comm, proto, n)[0], comm, proto, version)


def test_scheduler_channels_of_nccl_2_23_match_the_source_reading():
    """enqueue.cc v2.23.4-1 l.722/756/794: 16 KiB of traffic per channel at least, ~16 KiB cells (review r16 item 1)."""
    assert [_sched(s, "all_gather", 8, "LL128", V223) for s in (32 * KIB, 128 * KIB, 512 * KIB, 2 * MIB)] \
        == [2, 8, 16, 22]
    assert [ring_tree_launch(s, 24, "LL128", 8)[0] for s in (32 * KIB, 128 * KIB)] == [6, 24]  # the bound before
    assert [_sched(s, "all_gather", 2, "LL", V223) for s in (32 * KIB, 128 * KIB)] == [2, 8]
    assert [_sched(512 * KIB, "all_gather", n, "LL", V223) for n in (2, 4)] == [16, 16]
    assert _sched(8 * MIB, "all_reduce", 8, "Simple", V223) == 24  # large sizes keep every channel


def test_scheduler_step_follows_the_release():
    """None before v2.22 (topoGetAlgoInfo's nc); LL counts 4 x its traffic from v2.26 (so 2-rank LL at 128 KiB runs
    topoGetAlgoInfo's 16 channels again, not 2.23's 8)."""
    nc = ring_tree_launch(128 * KIB, 24, "LL", 2)[0]
    assert nc == 16
    assert scheduled_channels(128 * KIB, "all_gather", 2, nc, 24, "LL", (2, 21, 5)) == nc
    assert scheduled_channels(128 * KIB, "all_gather", 2, nc, 24, "LL", V223) == 8
    assert scheduled_channels(128 * KIB, "all_gather", 2, nc, 24, "LL", (2, 27, 3)) == 16
    assert scheduled_channels(128 * KIB, "all_gather", 2, nc, 24, "LL128", (2, 27, 3)) == 8  # LL128 not x 4


@pytest.mark.parametrize("mode", ["nccl"])
def test_rate_at_the_launched_channels_is_nccls_formula_per_protocol(mode, monkeypatch):
    """LL (tuning.cc l.187, absolute cap): min(keff, u nc/N); LL128 (l.188, cap per channel): keff nc/N."""
    monkeypatch.setattr(ring_ll, "RING_LAUNCH_BY_SIZE", mode)
    size, frac = 512 * KIB, 16 / 24  # 8-rank all-gather, 2.23: 16 of 24 channels for both protocols
    assert _sched(size, "all_gather", 8, "LL", V223) == _sched(size, "all_gather", 8, "LL128", V223) == 16
    ll = ring_ll.launched_kernel_efficiency(0.76, size, 24, "LL", 8, "all_gather", V223)
    ll128 = ring_ll.launched_kernel_efficiency(0.76, size, 24, "LL128", 8, "all_gather", V223)
    assert ll == pytest.approx(min(0.76, frac)) and ll128 == pytest.approx(0.76 * frac)
    # before 2.21 the LL factor is 1/4 (all-reduce) or 1/3: an uncapped keff of 0.5 / 0.67 scales with nc/N
    old = ring_ll.launched_kernel_efficiency(0.5, size, 24, "LL", 8, "all_reduce", (2, 18, 5))
    assert old == pytest.approx(0.5 * _sched(size, "all_reduce", 8, "LL", (2, 18, 5)) / 24)


def _hopper_ll_mean(eff):
    hopper = ("hgx-h100", "hgx-h200")
    old = dict(cal.RING_LL_NVLINK_KERNEL_EFFICIENCY)
    try:
        cal.RING_LL_NVLINK_KERNEL_EFFICIENCY[2] = eff
        v._ROUTERS.clear()
        rows = [r for r in v.validate(splits=("fit",), ids=_hopper_ids(hopper)).rows
                if r.rel_error is not None and r.note == "ring/LL"]
    finally:
        cal.RING_LL_NVLINK_KERNEL_EFFICIENCY.clear()
        cal.RING_LL_NVLINK_KERNEL_EFFICIENCY.update(old)
        v._ROUTERS.clear()
    return len(rows), float(np.mean(np.abs([r.rel_error for r in rows])))


def _hopper_ids(systems):
    out = []
    for path in v.default_points_paths():
        doc, side = v._read(path)
        for kind, p in v._items(path, doc, side):
            if (kind == "collective" and p.get("split") == "fit" and p.get("system") in systems
                    and p.get("category") == "nvlink" and int(p.get("domains", 1)) == 1):
                out.append(p["id"])
    return out


def test_hopper_ll_ring_efficiency_beats_nccls_own_rate_on_the_fit_rows():
    """Review r16 item 7: the fitted Hopper LL efficiency (calibration.RING_LL_NVLINK_KERNEL_EFFICIENCY[2]) fits the
    fit-split Hopper ring/LL values better than NCCL's own rate (1.0); fails if it goes back to 1.0."""
    n, shipped = _hopper_ll_mean(cal.RING_LL_NVLINK_KERNEL_EFFICIENCY[2])
    n1, at_one = _hopper_ll_mean(1.0)
    assert n == n1 >= 70
    assert shipped < at_one - 0.005, (shipped, at_one)


_TWO_H100 = {"domains": 2, "scaleout": "quantum-2-nosharp", "nic": "ConnectX-7"}


@pytest.mark.parametrize("preset,overrides,n,size,fill", [
    ("hgx-a100", {}, 8, 8 * MIB, True), ("hgx-b200", {}, 8, 16 * MIB, True), ("hgx-h100", _TWO_H100, 16, 4 * MIB, True),
    ("hgx-h100", {}, 8, 8 * MIB, False)])
def test_ll128_ring_fill_is_paid_everywhere_but_one_hopper_board(preset, overrides, n, size, fill):
    """Round 16 dropped the LL128 ring fill on one Hopper board only (calibration.RING_FILL_OFF_ONE_DOMAIN): an A100
    or B200 board and two H100 nodes still add ``ring_fill_s`` to NCCL's latency; one H100 board adds nothing."""
    pl = planner_for(_router(preset, overrides))
    ranks = tuple(range(n))
    plan = pl.plan(Collective("all_gather", ranks, size, "ring"))
    est = pl.nccl_estimate(ranks, "all_gather", size, "Ring", None)
    want = ring_fill_s(size, est.bandwidth_Bps, "LL128")
    assert plan.protocol == est.protocol == "LL128" and want > 1e-6
    assert plan.latency_s == pytest.approx(est.latency_s + (want if fill else 0.0), rel=1e-6)
