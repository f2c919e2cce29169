"""Fidelity round 3, network side (issue 8): what a run's NCCL release and environment change.

Each test is a behaviour the model lacked before round 3: NCCL's Blackwell tree caps of releases
2.25-2.27, CollNet (SHARP) off on Quantum-X800 when a job does not enable it, NVLS off when a job
sets NCCL_NVLS_ENABLE=0.
"""

import pytest

from collectives import Collective, run
from collectives import nccl_model as nm
from collectives.runner import planner_for
from collectives.validate import _collective_options, _Point, _router
from topologies.errors import SpecError


def test_blackwell_tree_caps_follow_the_nccl_release():
    """tuning.cc at v2.27.7: perChMaxTreeBws[Blackwell] = {2*38.7, 2*41.4, 2*36.0}; from v2.28.3
    {70.0, 42.8, 24.0}. On 3 nodes (the N4+ column, 8 channels) 2.30's cap binds (8 x 24 GB/s) and 2.27's
    does not: the tree is bound by the wire, 1.8x faster."""
    s = nm.NcclSystem(arch_sm=100, gpus_per_node=8, nnodes=3, nics_per_node=8, nic_Bps=5e10)
    new = nm.algo_times(s, "all_reduce", 16 << 30, algorithms=["Tree"], protocols=["Simple"])[0]
    old_s = nm.NcclSystem(arch_sm=100, gpus_per_node=8, nnodes=3, nics_per_node=8, nic_Bps=5e10,
                          nccl_version=(2, 27, 3))
    old = nm.algo_times(old_s, "all_reduce", 16 << 30, algorithms=["Tree"], protocols=["Simple"])[0]
    assert new.kernel_efficiency < 0.6 and old.kernel_efficiency == 1.0
    assert old.bandwidth_Bps > 1.5 * new.bandwidth_Bps
    # Hopper rows did not change between these releases
    h = dict(arch_sm=90, gpus_per_node=8, nnodes=3, nics_per_node=8, nic_Bps=5e10)
    a = nm.algo_times(nm.NcclSystem(**h), "all_reduce", 1 << 30, algorithms=["Tree"])
    b = nm.algo_times(nm.NcclSystem(**h, nccl_version=(2, 27, 3)), "all_reduce", 1 << 30, algorithms=["Tree"])
    assert [e.bandwidth_Bps for e in a] == [e.bandwidth_Bps for e in b]


def test_forced_tree_on_three_gb200_partitions_is_faster_with_nccl_2_27():
    """nccl #1801 (NCCL 2.27.3): 3 x 8 GB200 over IB, NCCL_ALGO=Tree measured 486 GB/s, above the
    ring's 394. With the 2.30 caps the flow model's tree stays below the ring; with 2.27's it does not."""
    r = _router("gb200-nvl72", {"domains": 3, "gpus_per_domain": 8, "scaleout": "quantum-2", "nic": "ConnectX-7"})
    ranks = tuple(range(24))

    def busbw(algo, **opts):
        [res] = run(r, [Collective("all_reduce", ranks, 16 << 30, algo, options=opts)])
        return res.busbw_Bps

    ring = busbw("ring", nccl_version="2.27.3")
    assert busbw("tree") < ring < busbw("tree", nccl_version="2.27.3")


def test_sharp_off_on_quantum_x800_makes_nccl_pick_nvlstree():
    """CollNet needs NCCL_COLLNET_ENABLE=1 (env.rst: 'Default is 0'); a point that says SHARP is off on
    Quantum-X800 runs on the same switches without in-network reduction, and NCCL's choice for two
    GB200 NVL72 racks becomes NVLSTree instead of NVLS + CollNet."""
    p = _Point("collective", {"id": "x", "system": "gb200-nvl72", "scaleout": "quantum-x800",
                              "settings": {"sharp": "off: NCCL_COLLNET_ENABLE=0"}}, 0)
    assert p["scaleout"] == "quantum-x800-nosharp"
    on = planner_for(_router("gb200-nvl72", {"domains": 2, "scaleout": "quantum-x800"}))
    off = planner_for(_router("gb200-nvl72", {"domains": 2, "scaleout": "quantum-x800-nosharp"}))
    ranks = tuple(range(144))
    # (a job with CollNet on picks NVLS + CollNet on the SHARP switches only; NCCL's default, CollNet off,
    # picks NVLSTree on both: round 5)
    assert nm.choose(on.system(ranks, collnet=True), "all_reduce", 4 << 30).algorithm == "NVLS"
    assert nm.choose(off.system(ranks, collnet=True), "all_reduce", 4 << 30).algorithm == "NVLSTree"
    assert nm.choose(on.system(ranks), "all_reduce", 4 << 30).algorithm == "NVLSTree"


@pytest.mark.parametrize("enable, nvls_used", [("1", True), ("0", False)])
def test_nvls_enable_0_keeps_auto_off_nvls(enable, nvls_used):
    """NCCL_NVLS_ENABLE=0 (Nebius' SOAK_TRANSPORT=ib): NCCL's choice has no NVLS / NVLSTree, so two
    GB300 trays over InfiniBand run a ring or tree, not NVLSTree."""
    opts = _collective_options({"NCCL_NVLS_ENABLE": enable, "algorithm": "auto"})
    r = _router("gb300-nvl72", {"domains": 2, "gpus_per_domain": 4, "scaleout": "quantum-x800-nosharp"})
    [res] = run(r, [Collective("all_reduce", tuple(range(8)), 8 << 30, "auto", options=opts)])
    assert ("nvls" in res.algorithm) == nvls_used


def test_efa_v1_leaves_nccl_only_the_simple_protocol():
    """aws-ofi-nccl sets NCCL_PROTO=simple when EFA does not guarantee 128-byte in-order delivery (p4d /
    p4de, aws-ofi-nccl #715); NCCL then never picks LL or LL128 across 2 x p4de, while over EFA v2 (p5,
    which reports the ordering) LL128 stays NCCL's choice at mid sizes."""
    from collectives.calibration import net_protocols
    assert net_protocols("EFA-v1-100G") == ("Simple",) and net_protocols("EFA-v2-100G") is None
    assert net_protocols("TCPXO-200G") == ("Simple",)  # GCP's nccl-env-profile.sh (LL128 is opt-in)
    p4de = planner_for(_router("hgx-a100", {"domains": 2, "scaleout": "aws-efa-v1", "nic": "EFA-v1-100G"}))
    p5 = planner_for(_router("hgx-h100", {"domains": 2, "scaleout": "aws-efa-v2", "nic": "EFA-v2-100G"}))
    ranks = tuple(range(16))
    for size in (1 << 20, 16 << 20, 256 << 20):
        assert nm.choose(p4de.system(ranks), "all_reduce", size).protocol == "Simple"
        ll = [e for e in nm.algo_times(p4de.system(ranks), "all_reduce", size) if e.protocol != "Simple"]
        assert ll and not any(e.enabled for e in ll)
    assert nm.choose(p5.system(ranks), "all_reduce", 4 << 20).protocol == "LL128"
    with pytest.raises(SpecError, match="protocols"):
        nm.NcclSystem(arch_sm=90, gpus_per_node=8, protocols=("LL256",))


def test_an_unparsable_nccl_version_option_is_refused():
    r = _router("hgx-h100", {"domains": 2, "scaleout": "quantum-2"})
    with pytest.raises(SpecError, match="nccl_version"):
        run(r, [Collective("all_reduce", tuple(range(16)), 1 << 20, "auto", options={"nccl_version": "latest"})])
