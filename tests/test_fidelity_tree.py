"""Fidelity round 6, multi-node trees (issue 8): the tree/Simple pipeline fill and the rows' own runs.

Each test is a behaviour the model lacked before round 6; the expected figures are computed here from
NCCL's rules (connect.cc tree depth, init.cc buffer size, enqueue.cc chunk), not taken from our output.
"""

import tomllib
from pathlib import Path

import pytest

from collectives import Collective, run
from collectives import nccl_model as nm
from collectives.plancache import PlanCache
from collectives.runner import planner_for
from collectives.validate import _router
from topologies.errors import SpecError

_POINTS = Path(__file__).resolve().parents[1] / "collectives" / "data" / "published_points.toml"


def _tree_simple(system: nm.NcclSystem, size: int) -> nm.AlgoEstimate:
    [est] = [e for e in nm.algo_times(system, "all_reduce", size, algorithms=["Tree"]) if e.protocol == "Simple"]
    return est


def test_tree_simple_pays_a_chunk_per_stage_up_and_down_the_tree():
    """2 x 8 H100: NCCL's tree is a chain of 8 GPUs per node joined by the binary tree, depth 7 + 1 = 8,
    so the first 512 KiB chunk of each channel crosses 7 NVLink hops and 1 network hop up, and back down,
    before the chunks stream: every hop but the slowest is fill. NVLink hops run at the chain's own rate
    (18 links x 20.6 GB/s, NCCL's per-link figure; round 7: alone in the fill, not shared by S up and S
    down as in the steady state), network hops at NCCL's
    tree bandwidth; the plan's latency is NCCL's plus that fill, and the run takes longer than both."""
    r = _router("hgx-h100", {"domains": 2, "scaleout": "quantum-2-nosharp", "nic": "ConnectX-7"})
    ranks, size = tuple(range(16)), 1 << 30
    planner = planner_for(r)
    plan = planner.plan(Collective("all_reduce", ranks, size, "tree"))
    assert plan.protocol == "Simple"
    est = _tree_simple(planner.system(ranks), size)
    w = 2 * est.nchannels * (4 << 20) / 8  # one 512 KiB step on each of the duplicated channels
    b = est.bandwidth_Bps
    # round 7: a chain hop of the fill runs alone on its GPU's channel (runTreeSplit's two thread groups
    # share it in the steady state), so at the whole of NVLink's tree rate, not the half each direction
    # gets while S goes up and S comes down (trees.fill_hop_rate)
    r_nvl = max(b, 18 * 20.6e9 * est.kernel_efficiency)
    # the two trees have opposite roots on two nodes (ncclGetDtree): at each network level of the fill half
    # the channels cross one way and half the other, W/2 per direction of the full-duplex NICs
    fill = 14 * w / r_nvl + 2 * w / (2 * b) - w / b
    assert abs(plan.latency_s - (est.latency_s + fill)) <= 1e-12 + 1e-9 * plan.latency_s
    [res] = run(r, [Collective("all_reduce", ranks, size, "tree")])
    assert res.time_s > est.latency_s + fill


def test_deep_mnnvl_tree_is_bounded_by_its_fill():
    """4 GB200 NVL72 racks on NCCL 2.26.2 without NVLS (CoreWeave's multi-rack job): NCCL picks
    Tree/Simple, whose chain is 71 GPUs long in each rack (depth 71 + 2): the fill alone, at least
    145 hops of one 512 KiB chunk per channel at no more than NVLink's raw 900 GB/s shared by S up and
    S down, exceeds the time of streaming 512 MiB at NCCL's tree rate, so busbw stays below
    S x 2(n-1)/n / fill."""
    r = _router("gb200-nvl72", {"domains": 4, "scaleout": "quantum-x800-nosharp", "nic": "ConnectX-7"})
    ranks, size = tuple(range(288)), 512 << 20
    opts = {"nccl_version": "2.26.2", "nvls": False}
    [res] = run(r, [Collective("all_reduce", ranks, size, "auto", options=opts)])
    assert (res.nccl_algorithm, res.protocol) == ("Tree", "Simple")
    est = _tree_simple(planner_for(r).system(ranks, nvls=False, nccl_version="2.26.2"), size)
    fill = (2 * (71 + 2) - 1) * 2 * est.nchannels * (512 << 10) / max(est.bandwidth_Bps, 900e9 / 2)
    assert fill > size / est.bandwidth_Bps
    assert res.busbw_Bps < size * nm.busbw_factor("all_reduce", 288) / fill


def test_ll128_trees_forward_line_by_line_without_a_chunk_fill():
    """LL128 (and LL) flag every line, so a rank forwards data as it arrives: at 4 MiB on 2 x 8 H100 the
    tree runs LL128 and its latency is NCCL's own, whatever the depth."""
    r = _router("hgx-h100", {"domains": 2, "scaleout": "quantum-2-nosharp", "nic": "ConnectX-7"})
    ranks = tuple(range(16))
    planner = planner_for(r)
    plan = planner.plan(Collective("all_reduce", ranks, 4 << 20, "tree"))
    assert plan.protocol == "LL128"
    [est] = [e for e in nm.algo_times(planner.system(ranks), "all_reduce", 4 << 20, algorithms=["Tree"])
             if e.protocol == "LL128"]
    assert plan.latency_s == est.latency_s


def test_nccl_buffsize_sets_the_tree_chunk():
    """NCCL_BUFFSIZE=8388608 (AWS's and Google's profiles) doubles the Simple step, so the fill of a large
    tree/Simple all-reduce doubles."""
    r = _router("hgx-h100", {"domains": 2, "scaleout": "quantum-2-nosharp", "nic": "ConnectX-7"})
    ranks, size = tuple(range(16)), 1 << 30
    planner = planner_for(r)
    est = _tree_simple(planner.system(ranks), size)
    base = planner.plan(Collective("all_reduce", ranks, size, "tree")).latency_s - est.latency_s
    big = planner.plan(Collective("all_reduce", ranks, size, "tree",
                                  options={"nccl_buffsize": 8 << 20})).latency_s - est.latency_s
    assert base > 0 and abs(big - 2 * base) <= 1e-9 * big


def test_bad_nccl_buffsize_is_refused_in_one_line():
    r = _router("hgx-h100", {"domains": 2, "scaleout": "quantum-2-nosharp", "nic": "ConnectX-7"})
    for bad in (-1, "4MiB", 2.5):
        with pytest.raises(SpecError, match="nccl_buffsize"):
            planner_for(r).plan(Collective("all_reduce", tuple(range(16)), 1 << 30, "tree",
                                           options={"nccl_buffsize": bad}))
        with pytest.raises(SpecError, match="nccl_buffsize"):  # the plan cache's key checks it too
            PlanCache(planner_for(r)).plan(Collective("all_reduce", tuple(range(16)), 1 << 30, "tree",
                                                      options={"nccl_buffsize": bad}))


def test_plan_cache_keeps_the_tree_fill_of_each_size():
    """Below ``nChannels x chunk`` the fill grows with the size: a cached tree plan is not rescaled across
    that window, and every size gives what planning it afresh gives."""
    r = _router("hgx-h100", {"domains": 2, "scaleout": "quantum-2-nosharp", "nic": "ConnectX-7"})
    ranks = tuple(range(16))
    cache = PlanCache(planner_for(r))
    for size in (256 << 20, 1 << 30, 2 << 30):
        got = cache.plan(Collective("all_reduce", ranks, size, "tree"))
        fresh = planner_for(r).plan(Collective("all_reduce", ranks, size, "tree"))
        assert abs(got.latency_s - fresh.latency_s) <= 1e-12 * fresh.latency_s


def test_deepops_two_node_sweep_is_the_forced_ring_of_its_job_file():
    """The 2 x DGX A100 result of NVIDIA/deepops nvidia-network-operator.md @ 3957a42 came with the MPIJob
    of the same commit (740df4b6), which passes ``-x NCCL_ALGO=RING``: the row forces the ring."""
    points = tomllib.loads(_POINTS.read_text())["collective"]
    [row] = [p for p in points if p["id"] == "deepops-dgxa100-2node-hdr-allreduce-by-size"]
    assert row["algorithm"] == "ring" and row["settings"]["NCCL_ALGO"] == "RING"
    assert row["split"] == "fit"


def test_nccl_2_19_shrinks_the_tree_chunk_and_its_fill():
    """Up to v2.19 enqueue.cc halved the tree/Simple chunk until a channel had 8 x depth chunks (down to
    128 KiB); v2.20 removed the rule. At 512 MiB on 8 x 8 H100 (depth 7 + 3 = 10) each of the 16 channels
    holds 64 steps of 512 KiB, fewer than 80, so 2.19 runs 256 KiB chunks: half the fill of 2.20."""
    r = _router("hgx-h100", {"domains": 8, "scaleout": "quantum-2-nosharp", "nic": "ConnectX-7"})
    ranks, size = tuple(range(64)), 512 << 20
    planner = planner_for(r)

    def fill(version):
        plan = planner.plan(Collective("all_reduce", ranks, size, "tree", options={"nccl_version": version}))
        assert plan.protocol == "Simple"
        return plan.latency_s - _tree_simple(planner.system(ranks, nccl_version=version), size).latency_s

    est = _tree_simple(planner.system(ranks, nccl_version="2.20.3"), size)
    assert size // (2 * est.nchannels * (512 << 10)) == 64 < 8 * 10
    old, new = fill("2.19.3"), fill("2.20.3")
    assert old > 0 and abs(old - new / 2) <= 1e-9 * new
