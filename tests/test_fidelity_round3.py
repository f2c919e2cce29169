"""Fidelity round 3 (issue 8, NVLink domains): the ring kernel's own limit on Blackwell NVLink."""

import pytest

from collectives import Collective, run
from collectives import nccl_model as nm
from collectives.validate import _router
from topologies import catalog


def _nominal_busbw(gpu: str) -> float:
    """NCCL's ring nominal on one NVSwitch board: links x topo.h per-link bandwidth (GB/s)."""
    g = catalog.gpu(gpu)
    return g.nvlink_links * nm.nvlink_bw_per_link_GBps(g.sm)


@pytest.mark.parametrize("preset, gpu, lo, hi", [
    ("hgx-h100", "H100", 0.98, 1.01),  # round 13: Hopper sends above the per-link constant (calibration)
    ("hgx-b200", "B200", 0.93, 0.97)])
def test_single_board_ring_busbw_relative_to_nccl_per_link_nominal(preset, gpu, lo, hi):
    """Measured 8 GiB rings: Hopper reaches NCCL's per-link nominal (370 of 371 GB/s), Blackwell does
    not (673-700 of 722 GB/s on every fit-split source): with the ring's final local copy (round 12) in
    the time, Hopper's sending steps run above NCCL's 20.6 GB/s per-link constant (round 13, fitted 1.05)
    and Blackwell's at its 40.1, so the ratio is architecture-dependent."""
    r = _router(preset)
    [res] = run(r, [Collective("all_reduce", tuple(range(8)), 8 << 30, "ring")])
    assert lo <= res.busbw_Bps / 1e9 / _nominal_busbw(gpu) <= hi


def test_ring_kernel_limit_is_on_nvlink_only():
    """Across NVLink domains the ring is paced by its NICs: two B200 boards over 400G NICs keep the
    NIC-bound busbw whatever the Blackwell NVLink ring limit."""
    r = _router("hgx-b200", {"domains": 2, "scaleout": "quantum-2-nosharp", "nic": "ConnectX-7"})
    ops = [Collective("all_reduce", tuple(range(16)), 8 << 30, "ring")]
    import importlib
    cal = importlib.import_module("collectives.calibration")  # the module (the package exports a function so named)
    base = run(r, ops)[0].busbw_Bps
    old = dict(cal.RING_NVLINK_KERNEL_EFFICIENCY)
    try:
        cal.RING_NVLINK_KERNEL_EFFICIENCY[3] = 0.5
        assert run(r, ops)[0].busbw_Bps == pytest.approx(base, rel=1e-9)
    finally:
        cal.RING_NVLINK_KERNEL_EFFICIENCY.update(old)
