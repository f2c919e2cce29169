"""Tests for collectives.nccl_model (NCCL 2.30.7's tuning model).

Expected numbers are closed forms written out from the formulas in
shared/notes/hardware.md section 4 (and NCCL's tuning.cc), not values copied from the
module's output. Graph-search results for 8 x H100 are checked against NCCL's own GRAPH
log (NVIDIA/nccl#1197: ring 12 x 30, tree 12 x 30, NVLS 8 x 40/60).
"""

from __future__ import annotations

import math
from fractions import Fraction

import pytest

from collectives.nccl_model import (
    ALGORITHMS,
    NCCL_VERSION,
    PROTOCOLS,
    TREE_CORRECTION_FACTOR,
    AlgoEstimate,
    NcclSystem,
    algo_times,
    busbw_factor,
    choose,
    nccl_graph,
)
from topologies.errors import SpecError

US = 1e-6
GB = 1e9
MiB = 1 << 20


def _table(system, coll, size):
    return {(e.algorithm, e.protocol): e for e in algo_times(system, coll, size)}


@pytest.fixture(scope="module")
def h100():
    return NcclSystem(arch_sm=90, gpus_per_node=8, nvlink_links_per_gpu=18, nics_per_node=8, nic_Bps=50e9)


@pytest.fixture(scope="module")
def h100_16():
    return NcclSystem(arch_sm=90, gpus_per_node=8, nnodes=16, nvlink_links_per_gpu=18, nics_per_node=8, nic_Bps=50e9)


def test_version_pinned():
    assert NCCL_VERSION == "2.30.7"


# ----------------------------------------------------------------------------- graphs


def test_h100_single_node_graphs_match_nccl_log():
    # 18 x 20.6 = 370.8 GB/s per GPU; ring: 6 ch x 60 fits (6*60=360 <= 370.8, 7*60 does
    # not), duplicated to 12 x 30 because bwIntra 60 >= 50.
    ring = nccl_graph(90, 8, 18, 8, 50e9, 1, "ring")
    assert (ring.nchannels, ring.bw_intra_GBps, ring.bw_inter_GBps) == (12, 30.0, 30.0)
    tree = nccl_graph(90, 8, 18, 8, 50e9, 1, "tree")
    assert (tree.nchannels, tree.bw_intra_GBps) == (12, 30.0)
    # NVLS: head GPU carries 2x, so 8 channels need 9*bw <= 370.8 -> 40; pass 2 raises
    # bwInter to 60 (< 2 x 40).
    nvls = nccl_graph(90, 8, 18, 8, 50e9, 1, "nvls")
    assert (nvls.nchannels, nvls.bw_intra_GBps, nvls.bw_inter_GBps) == (8, 40.0, 60.0)


def test_other_single_node_graphs():
    # B200: 18 x 40.1 = 721.8; 8 x 90 = 720 fits -> duplicated to 16 x 45.
    b200 = nccl_graph(100, 8, 18, 8, 50e9, 1, "ring")
    assert (b200.nchannels, b200.bw_intra_GBps) == (16, 45.0)
    # A100: 12 x 20 = 240; 6 x 40 = 240 -> SM80 duplicates -> 12 x 20.
    a100 = nccl_graph(80, 8, 12, 8, 25e9, 1, "ring")
    assert (a100.nchannels, a100.bw_intra_GBps) == (12, 20.0)
    # No NVLS graph without an NVSwitch or before Hopper.
    assert nccl_graph(80, 8, 12, 8, 25e9, 1, "nvls").nchannels == 0
    assert nccl_graph(90, 8, 18, 8, 50e9, 1, "nvls", has_nvswitch=False).nchannels == 0


def test_multinode_graph_limited_by_nic():
    # NDR NIC = 400000 Mb/s / 8000 = 50 GB/s -> one 48 GB/s channel per NIC, 8 NICs.
    ring = nccl_graph(90, 8, 18, 8, 50e9, 16, "ring")
    assert (ring.nchannels, ring.bw_inter_GBps) == (8, 48.0)
    nvls = nccl_graph(90, 8, 18, 8, 50e9, 16, "nvls")
    assert nvls.nchannels == 8 and nvls.bw_inter_GBps <= 50.0


def test_unknown_pattern():
    with pytest.raises(SpecError, match="pattern must be one of ring, tree, nvls"):
        nccl_graph(90, 8, 18, 8, 50e9, 1, "mesh")


# ------------------------------------------------------------- worked example A (8 x H100)


def test_example_a_latencies(h100):
    t = _table(h100, "all_reduce", MiB)
    n = 8
    nsteps = 2 * (n - 1)
    assert t["Ring", "LL"].latency_s == pytest.approx((6.6 + nsteps * 0.6) * US)  # 15.0
    assert t["Ring", "LL128"].latency_s == pytest.approx((14.0 + nsteps * 1.9) * US)  # 40.6
    assert t["Ring", "Simple"].latency_s == pytest.approx((8.4 + nsteps * 3.4) * US)  # 56.0
    assert t["Tree", "LL"].latency_s == pytest.approx((6.8 + 2 * 7 * 0.6) * US)  # 15.2
    assert t["Tree", "LL128"].latency_s == pytest.approx((14.0 + 2 * 7 * 1.25) * US)
    assert t["Tree", "Simple"].latency_s == pytest.approx((8.4 + 2 * 7 * 4.0) * US)
    assert t["NVLS", "Simple"].latency_s == pytest.approx(25.0 * US)
    assert round(t["Ring", "LL"].latency_s / US, 1) == 15.0
    assert round(t["Ring", "LL128"].latency_s / US, 1) == 40.6
    assert round(t["Ring", "Simple"].latency_s / US, 1) == 56.0
    assert round(t["Tree", "LL"].latency_s / US, 1) == 15.2


def test_example_a_bandwidths(h100):
    n, nsteps, ch = 8, 14, 12
    t = _table(h100, "all_reduce", 256 * MiB)  # log2(256 MiB / 64) = 22: tree factors 1.0/1.0/0.9
    ring_bus = {"Simple": ch * 30.0, "LL128": min(0.92 * ch * 30.0, ch * 36.7), "LL": min(141.0, 0.5 * ch * 30.0)}
    assert ring_bus == pytest.approx({"Simple": 360.0, "LL128": 331.2, "LL": 141.0})
    for proto, bus in ring_bus.items():
        assert t["Ring", proto].bandwidth_Bps == pytest.approx(bus * n / nsteps * GB)
    # NVLS: min(bwIntra * 0.85 * (C-1)/C * 2, bwInter) per channel, 8 channels.
    nvls_bus = 8 * min(40.0 * 0.85 * 7 / 8 * 2, 60.0)
    assert nvls_bus == pytest.approx(476.0)
    assert t["NVLS", "Simple"].bandwidth_Bps == pytest.approx(nvls_bus * n / nsteps * GB)
    # Tree all-reduce: min(0.92 busBw, C x 38.7), LL /3.8 capped by 141, LL128 x 7/9; ratio 0.5.
    tree = min(0.92 * 360.0, ch * 38.7)
    assert t["Tree", "Simple"].bandwidth_Bps == pytest.approx(tree * 0.5 * 0.9 * GB)
    assert t["Tree", "LL"].bandwidth_Bps == pytest.approx(min(tree / 3.8, 141.0) * 0.5 * GB)
    assert t["Tree", "LL128"].bandwidth_Bps == pytest.approx(min(tree * 7 / 9, ch * 36.7) * 0.5 * GB)


def test_time_and_busbw_formula(h100):
    size = 1 << 30
    e = _table(h100, "all_reduce", size)["Ring", "Simple"]
    algbw = 360.0 * 8 / 14 * GB
    assert e.time_s == pytest.approx(56.0 * US + size / algbw)
    assert e.busbw_Bps == pytest.approx(size / e.time_s * 2 * 7 / 8)
    assert e.nchannels == 12


def test_tree_correction_factor_applied(h100):
    # 1 MiB: log2(2^20 / 64) = 14 -> LL factor 0.5.
    e = _table(h100, "all_reduce", MiB)["Tree", "LL"]
    assert TREE_CORRECTION_FACTOR[0][14] == 0.5
    assert e.bandwidth_Bps == pytest.approx(min(331.2 / 3.8, 141.0) * 0.5 * 0.5 * GB)


def test_tree_correction_table_shape():
    assert len(TREE_CORRECTION_FACTOR) == 3
    assert all(len(row) == 24 for row in TREE_CORRECTION_FACTOR)
    values = [v for row in TREE_CORRECTION_FACTOR for v in row]
    assert min(values) == 0.4 and max(values) == 1.0


def test_crossover_ring_ll_to_nvls(h100):
    assert (choose(h100, "all_reduce", MiB).algorithm, choose(h100, "all_reduce", MiB).protocol) == ("Ring", "LL")
    best = choose(h100, "all_reduce", 2 * MiB)
    assert (best.algorithm, best.protocol) == ("NVLS", "Simple")
    # Exact switch: 15 + S / (1000 bwLL) = 25 + S / (1000 bwNVLS), in us and GB/s.
    bw_ll = Fraction(141) * 8 / 14
    bw_nvls = Fraction(476) * 8 / 14
    s_star = Fraction(10) / (1 / (1000 * bw_ll) - 1 / (1000 * bw_nvls))
    assert MiB < s_star < 2 * MiB
    s_floor = math.floor(s_star)
    assert choose(h100, "all_reduce", s_floor).algorithm == "Ring"
    assert choose(h100, "all_reduce", s_floor + 1).algorithm == "NVLS"


# --------------------------------------------------------- worked example B (16 x 8 H100)


def test_example_b_latencies(h100_16):
    small = 8 * 1024  # below the ring plateau threshold (64 B per channel per rank)
    t = _table(h100_16, "all_reduce", small)
    n, nn, ppn = 128, 16, 8
    nsteps, ninter = 2 * (n - 1), 2 * (nn - 1)
    assert (nsteps, ninter) == (254, 30)
    assert t["Ring", "LL"].latency_s == pytest.approx((6.6 + (nsteps - ninter) * max(0.6, 1.0) + ninter * 2.7) * US)
    assert round(t["Ring", "LL"].latency_s / US, 1) == 311.6
    assert t["Ring", "LL128"].latency_s == pytest.approx((14.0 + (nsteps - ninter) * 1.9 + ninter * 4.0) * US)
    assert t["Ring", "Simple"].latency_s == pytest.approx((8.4 + (nsteps - ninter) * 3.4 + ninter * 14.0) * US)
    assert round(t["Ring", "Simple"].latency_s / US, 1) == 1190.0
    log2n = 4
    assert t["Tree", "LL"].latency_s == pytest.approx((6.8 + 2 * ((ppn - 1) * 0.6 + log2n * 5.0)) * US)  # 55.2
    assert t["Tree", "Simple"].latency_s == pytest.approx((8.4 + 2 * ((ppn - 1) * 4.0 + log2n * 14.0)) * US)
    assert t["NVLSTree", "Simple"].latency_s == pytest.approx((25.0 + 2 * log2n * 20.9) * US)  # 192.2
    assert t["NVLS", "Simple"].latency_s == pytest.approx((25.0 + 18.0) * US)
    assert t["CollNetDirect", "Simple"].latency_s == pytest.approx((2 * (3.7 + 7 * 0.4) + 31.0) * US)  # 44.0
    assert t["CollNetChain", "Simple"].latency_s == pytest.approx((2 * 7 * 2.8 + 30.0) * US)  # 69.2


def test_example_b_plateau_factor(h100_16):
    big = _table(h100_16, "all_reduce", 64 * MiB)["Ring", "Simple"]
    assert big.latency_s == pytest.approx(1190.0 * 1.4 * US)


def test_example_b_enabled_sets(h100_16):
    t = _table(h100_16, "all_reduce", MiB)
    enabled = {k for k, e in t.items() if e.enabled}
    assert enabled == {
        ("Tree", "LL"), ("Tree", "LL128"), ("Tree", "Simple"),
        ("Ring", "LL"), ("Ring", "LL128"), ("Ring", "Simple"),
        ("NVLSTree", "Simple"),
    }
    assert "CollNet" in t["NVLS", "Simple"].reason
    assert "SHARP" in t["CollNetDirect", "Simple"].reason
    sharp = NcclSystem.hgx("h100", 16, collnet=True)
    t2 = _table(sharp, "all_reduce", MiB)
    for key in [("NVLS", "Simple"), ("CollNetDirect", "Simple"), ("CollNetChain", "Simple")]:
        assert t2[key].enabled, key


def test_example_b_amd_net_overhead():
    amd = NcclSystem.hgx("h100", 16, cpu_vendor="amd")
    t = _table(amd, "all_reduce", 8 * 1024)
    # Per intra step max(hw, overhead): AMD 2.0 us, x3 for Simple.
    assert t["Ring", "LL"].latency_s == pytest.approx((6.6 + 224 * 2.0 + 30 * 2.7) * US)
    assert t["Ring", "Simple"].latency_s == pytest.approx((8.4 + 224 * 6.0 + 30 * 14.0) * US)


def test_example_b_nvlstree_bandwidth(h100_16):
    # NVLS graph 8 x 40/48: min(40*.85*7/8*2, 48, perChMaxNVLSTree[Hopper][N4]=45.5) x 8 x n/nsteps.
    e = _table(h100_16, "all_reduce", 256 * MiB)["NVLSTree", "Simple"]
    assert e.bandwidth_Bps == pytest.approx(8 * min(59.5, 48.0, 45.5) * 128 / 254 * GB)


# ------------------------------------------------------------------ enable / disable rules


def test_nvls_not_chosen_at_small_gpu_counts():
    # Measured on 8 x H200: NVLS is picked for >= 5 GPUs, never at <= 4 (notes section 2.2).
    sizes = [1 << k for k in range(6, 35)]
    for g in range(2, 9):
        s = NcclSystem.hgx("h100", gpus_per_node=g)
        picks = {choose(s, "all_reduce", size).algorithm for size in sizes}
        assert ("NVLS" in picks) == (g >= 5), (g, picks)


def test_nvls_disabled_without_capability():
    for system in (
        NcclSystem.hgx("a100"),
        NcclSystem(arch_sm=90, gpus_per_node=8, nvls_capable=False),
        NcclSystem(arch_sm=90, gpus_per_node=8, has_nvswitch=False),
    ):
        e = _table(system, "all_reduce", 64 * MiB)["NVLS", "Simple"]
        assert not e.enabled and "NVLS" in e.reason
        assert e.time_s == math.inf and e.busbw_Bps == 0.0


def test_nvlstree_off_on_one_node(h100):
    e = _table(h100, "all_reduce", MiB)["NVLSTree", "Simple"]
    assert not e.enabled and "single node" in e.reason


def test_nvls_only_simple(h100):
    t = _table(h100, "all_reduce", MiB)
    assert not t["NVLS", "LL"].enabled and math.isnan(t["NVLS", "LL"].latency_s)


def test_ll128_needs_nvlink():
    pcie = NcclSystem(arch_sm=89, gpus_per_node=4, nvlink_links_per_gpu=0, has_nvswitch=False)
    t = _table(pcie, "all_reduce", MiB)
    assert not t["Ring", "LL128"].enabled and "LL128" in t["Ring", "LL128"].reason
    assert t["Ring", "LL"].enabled and t["Ring", "Simple"].enabled
    assert _table(NcclSystem.hgx("b200"), "all_reduce", MiB)["Ring", "LL128"].enabled


def test_pat_one_gpu_per_node():
    s = NcclSystem(arch_sm=90, gpus_per_node=1, nnodes=8, nics_per_node=1, nic_Bps=50e9)
    e = _table(s, "all_gather", MiB)["PAT", "Simple"]
    assert e.enabled
    # base 8 + log2(8) x (NET Tree Simple 14 / 3.5) + 8 ranks x 2.8
    assert e.latency_s == pytest.approx((8.0 + 3 * 14.0 / 3.5 + 8 * 2.8) * US)
    many = _table(NcclSystem.hgx("h100", 8), "all_gather", MiB)["PAT", "Simple"]
    assert not many.enabled and "1 GPU per node" in many.reason
    assert not _table(s, "all_reduce", MiB)["PAT", "Simple"].enabled


def test_other_collectives(h100):
    size = 64 * MiB
    ag = _table(h100, "all_gather", size)
    # nccl-tests AG size = receive buffer = NCCL's nBytes; ring ratio n/(n-1).
    assert ag["Ring", "Simple"].time_s == pytest.approx((8.4 + 7 * 3.4) * US + size / (360.0 * 8 / 7 * GB))
    assert not ag["Tree", "Simple"].enabled
    # NVLS all-gather: (ppn-1)/ppn instead of x2, no algbw ratio -> slower than ring.
    assert ag["NVLS", "Simple"].bandwidth_Bps == pytest.approx(8 * 40 * 0.85 * 7 / 8 * 7 / 8 * GB)
    assert choose(h100, "all_gather", size).algorithm == "Ring"
    bc = _table(h100, "broadcast", size)
    assert bc["Ring", "LL"].latency_s == pytest.approx((6.6 + 0.6) * US)
    assert {k for k, e in bc.items() if e.enabled} == {("Ring", p) for p in PROTOCOLS}
    assert choose(h100, "reduce_scatter", 1024).algorithm == "Ring"


def test_single_rank():
    one = NcclSystem(arch_sm=90, gpus_per_node=1)
    best = choose(one, "all_reduce", MiB)
    assert (best.algorithm, best.protocol, best.time_s) == ("Ring", "Simple", 0.0)


def test_choose_is_argmin(h100_16):
    for size in (8, 4096, MiB, 64 * MiB, 1 << 32):
        ests = algo_times(h100_16, "all_reduce", size)
        best = choose(h100_16, "all_reduce", size)
        assert best.time_s == min(e.time_s for e in ests if e.enabled)
        assert isinstance(best, AlgoEstimate)


def test_filters(h100):
    ests = algo_times(h100, "all_reduce", MiB, algorithms=["ring", "nvls"], protocols=["simple"])
    assert [(e.algorithm, e.protocol) for e in ests] == [("Ring", "Simple"), ("NVLS", "Simple")]
    assert len(algo_times(h100, "all_reduce", MiB)) == len(ALGORITHMS) * len(PROTOCOLS)


# ----------------------------------------------------------------------- busbw factors


@pytest.mark.parametrize(
    "coll,n,expected",
    [
        ("all_reduce", 8, 2 * 7 / 8), ("all_reduce", 1, 0.0), ("all_gather", 8, 7 / 8),
        ("reduce_scatter", 16, 15 / 16), ("all_to_all", 4, 3 / 4), ("broadcast", 8, 1.0),
        ("reduce", 8, 1.0), ("send_recv", 2, 1.0),
    ],
)
def test_busbw_factor(coll, n, expected):
    assert busbw_factor(coll, n) == pytest.approx(expected)


# ------------------------------------------------------------------------------- errors


def test_unknown_names_raise_spec_error(h100):
    with pytest.raises(SpecError, match=r"collective must be one of all_reduce, all_gather.*'allscatter'"):
        algo_times(h100, "allscatter", MiB)
    with pytest.raises(SpecError, match=r"algorithm must be one of Tree, Ring, CollNetDirect.*'Butterfly'"):
        algo_times(h100, "all_reduce", MiB, algorithms=["Butterfly"])
    with pytest.raises(SpecError, match=r"protocol must be one of LL, LL128, Simple.*'LL64'"):
        algo_times(h100, "all_reduce", MiB, protocols=["LL64"])
    with pytest.raises(SpecError, match="not in its tuning model"):
        choose(h100, "all_to_all", MiB)
    with pytest.raises(SpecError, match="collective must be one of"):
        busbw_factor("gather", 8)
    with pytest.raises(SpecError, match="nranks"):
        busbw_factor("all_reduce", 0)


@pytest.mark.parametrize("size", [-1, 1.5, float("nan"), float("inf"), "1MiB", True])
def test_bad_sizes(h100, size):
    with pytest.raises(SpecError, match="size_bytes"):
        algo_times(h100, "all_reduce", size)


def test_bad_system():
    with pytest.raises(SpecError, match="cpu_vendor must be one of intel, amd, arm"):
        NcclSystem(arch_sm=90, gpus_per_node=8, cpu_vendor="power")
    with pytest.raises(SpecError, match="nics_per_node"):
        NcclSystem(arch_sm=90, gpus_per_node=8, nnodes=2)
    with pytest.raises(SpecError, match="gpus_per_node"):
        NcclSystem(arch_sm=90, gpus_per_node=0)
    with pytest.raises(SpecError, match="gpu must be one of"):
        NcclSystem.hgx("mi300")
