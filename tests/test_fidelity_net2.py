"""Fidelity round 4, network side (issue 8): NVLSTree's kernel ceiling by NCCL release.

Each test is a behaviour the model lacked before round 4.
"""

from collectives import Collective, run
from collectives import nccl_model as nm
from collectives.plancache import PlanCache
from collectives.runner import planner_for
from collectives.validate import _router


def _hgx_h100_2node():
    # no SHARP (CollNet is off unless a job enables it): with it, releases before 2.28 (fixed 5/6 NVLS
    # ratio, round 4 NVLink side) choose NVLS+SHARP over NVLSTree at 8 GiB
    return _router("hgx-h100", {"domains": 2, "scaleout": "quantum-2-nosharp", "nic": "ConnectX-7"})


def test_nvlstree_on_two_hgx_h100_is_capped_by_the_kernel_from_nccl_2_21():
    """NCCL 2.21.5 gave NVLS its own 128 KiB step (nvls.cc ``nvlsChunkSize``; before, one 512 KiB-1 MiB
    Simple step): from then on NVLSTree's busbw on 2 x 8 H100 cannot exceed nChannels x
    perChMaxNVLSTreeBw (8 x 57.7 GB/s, tuning.cc from v2.28.3), whatever the network. A 2.20 run is not
    held to it (AWS p5, 2.20.3: 479-487 GB/s)."""
    r = _hgx_h100_2node()
    ranks = tuple(range(16))
    cap = 8 * nm.PER_CH_MAX_NVLS_TREE_GBPS[2][1] * 1e9

    def busbw(**opts):
        [res] = run(r, [Collective("all_reduce", ranks, 8 << 30, "auto", options=opts)])
        assert res.nccl_algorithm == "NVLSTree"
        return res.busbw_Bps

    new, old = busbw(nccl_version="2.28.3"), busbw(nccl_version="2.20.3")
    assert new <= cap * (1 + 1e-9) < old
    assert busbw() == new  # the modelled release (2.30.7) has the same 128 KiB-chunk kernel


def test_nvlstree_ceiling_by_architecture_and_release():
    """The ceiling is NCCL's own table times the NVLS graph's channels; only where the release runs the
    kernel the table describes (Hopper from 2.21.5), never on one node or on Blackwell (retuned in 2.30)."""
    h = dict(arch_sm=90, gpus_per_node=8, nics_per_node=8, nic_Bps=5e10)
    two, four = nm.NcclSystem(**h, nnodes=2), nm.NcclSystem(**h, nnodes=4)
    nch = nm._tune(two).graphs[5].nchannels
    assert nm.nvlstree_ceiling_GBps(two) == nch * 57.7
    assert nm.nvlstree_ceiling_GBps(four) == nm._tune(four).graphs[5].nchannels * 45.5
    assert nm.nvlstree_ceiling_GBps(nm.NcclSystem(**h, nnodes=2, nccl_version=(2, 21, 5))) == nch * 57.7
    assert nm.nvlstree_ceiling_GBps(nm.NcclSystem(**h, nnodes=2, nccl_version=(2, 20, 5))) is None
    assert nm.nvlstree_ceiling_GBps(nm.NcclSystem(**h, nnodes=1)) is None
    assert nm.nvlstree_ceiling_GBps(nm.NcclSystem(**{**h, "arch_sm": 100}, nnodes=2)) is None


def test_plan_cache_rescales_the_nvlstree_floor():
    """A cached NVLSTree plan carries its kernel floor: rescaled plans give the same result as planning
    the size afresh."""
    r = _hgx_h100_2node()
    ranks = tuple(range(16))
    cache = PlanCache(planner_for(r))
    a = cache.plan(Collective("all_reduce", ranks, 4 << 30, "auto"))
    b = cache.plan(Collective("all_reduce", ranks, 8 << 30, "auto"))
    fresh = planner_for(r).plan(Collective("all_reduce", ranks, 8 << 30, "auto"))
    assert a.min_time_s > 0 and abs(b.min_time_s - fresh.min_time_s) <= 1e-12 * fresh.min_time_s
