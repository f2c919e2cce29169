"""Fidelity round 4, NVLink domains (issue 8): NCCL's NVLS cost formula by release.

tuning.cc up to v2.27.7 converts NVLS / NVLSTree bus bandwidth to algorithm bandwidth with a fixed
5/6 and takes ``min(bwIntra, bwInter)`` per channel; from v2.28.3 it scales ``bwIntra`` by
``nvlsEfficiency x (nCh-1)/nCh`` and converts with the ring's ``nRanks/nsteps``. On a partial board the
two releases choose differently; the measured NCCL 2.27.7 boards (ml-engineering, 8 x H200 and p6-b200)
picked NVLS from 5 and 6 GPUs.
"""

import dataclasses

from collectives import nccl_model as nm


def _choice(gpu: str, n: int, version):
    s = dataclasses.replace(nm.NcclSystem.hgx(gpu, gpus_per_node=n), nccl_version=version)
    return nm.choose(s, "all_reduce", 8 << 30).algorithm


def test_nccl_2_27_picks_nvls_on_fewer_gpus_of_a_board_than_2_30():
    """ml-engineering (NCCL 2.27.7): NVLS from 5 GPUs on 8 x H200 (5-GPU NVLS 414 GB/s against the ring's
    364) and from 6 on p6-b200 (4 and 5 GPUs: Ring with NVLS enabled). NCCL 2.30.7's formula keeps Ring
    at 5 GPUs on H200 and up to 7 on B200."""
    old = (2, 27, 7)
    assert [_choice("h200", n, old) for n in (4, 5, 6)] == ["Ring", "NVLS", "NVLS"]
    assert [_choice("b200", n, old) for n in (5, 6, 7)] == ["Ring", "NVLS", "NVLS"]
    assert _choice("h200", 5, None) == "Ring" and _choice("b200", 7, None) == "Ring"


def test_nvls_formula_follows_the_release():
    """One 8 x H100 board, NVLS graph 8 x 40/60 GB/s (NVIDIA/nccl#1197): 2.27.x gives 8 x min(40, 60) x 5/6
    = 266.7 GB/s algorithm bandwidth, 2.28+ gives 8 x min(40 x 0.85 x 7/8 x 2, 60) x 8/14 = 272 GB/s; the
    2.27.x NVLS all-gather uses min(bwIntra (ppn-1)/ppn, 0.9 bwInter) without the 5/6."""
    base = nm.NcclSystem.hgx("h100")
    old = dataclasses.replace(base, nccl_version=(2, 27, 7))
    ar = {v: nm.algo_times(s, "all_reduce", 1 << 30, algorithms=["NVLS"])[-1]
          for v, s in (("old", old), ("new", base))}
    assert abs(ar["old"].bandwidth_Bps / 1e9 - 8 * 40 * 5 / 6) < 1e-6
    assert abs(ar["new"].bandwidth_Bps / 1e9 - 8 * 40 * 0.85 * 7 / 8 * 2 * 8 / 14) < 1e-3
    ag = nm.algo_times(old, "all_gather", 1 << 30, algorithms=["NVLS"])[-1]
    assert abs(ag.bandwidth_Bps / 1e9 - 8 * min(40 * 7 / 8, 60 * 0.9)) < 1e-6
    assert nm.nvls_formula((2, 27, 7)) == "ratio56" and nm.nvls_formula((2, 28, 3)) == "efficiency"


def test_blackwell_nvlstree_cap_follows_the_release():
    """perChMaxNVLSTreeBws[Blackwell][N4+]: 43.1 in v2.28.3, 43.8 from v2.28.9, 80.0 from v2.30.3."""
    assert nm.tuning_tables((2, 28, 3))["nvls_tree"][3][2] == 43.1
    assert nm.tuning_tables((2, 29, 2))["nvls_tree"][3][2] == 43.8
    assert nm.tuning_tables((2, 30, 4))["nvls_tree"][3][2] == 80.0
    s = nm.NcclSystem.hgx("b200", 4)
    e = {v: nm.algo_times(dataclasses.replace(s, nccl_version=v), "all_reduce", 8 << 30,
                          algorithms=["NVLSTree"])[-1] for v in ((2, 28, 3), (2, 30, 4))}
    assert e[(2, 28, 3)].bandwidth_Bps < e[(2, 30, 4)].bandwidth_Bps


def test_nvlstree_kernel_limit_is_kept_for_releases_before_its_cap():
    """2.26.x has no perChMaxNVLSTreeBw in its model, but its NVLSTree kernel is 2.28.3's
    (src/device/all_reduce.h differs by one send call): the kernel efficiency stays 2.28.3's, below 1
    on 2 x H100 where that cap binds, while the choice follows 2.26's formula."""
    s = nm.NcclSystem.hgx("h100", 2)
    old, capped = (nm.algo_times(dataclasses.replace(s, nccl_version=v), "all_reduce", 8 << 30,
                                 algorithms=["NVLSTree"])[-1] for v in ((2, 26, 2), (2, 28, 3)))
    assert capped.kernel_efficiency < 1.0
    assert abs(old.kernel_efficiency - capped.kernel_efficiency) < 1e-12
    assert old.bandwidth_Bps != capped.bandwidth_Bps  # the two releases' cost formulas differ
