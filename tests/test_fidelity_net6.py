"""Fidelity round 6, network transports (issue 8): what a net plugin reports vs what a step costs.

Each test is a behaviour the model lacked before round 6: the latency a net plugin reports to NCCL
(``latencyInter``) steers NCCL's choice but is not charged as time (the step's real cost is), and the
GPUDirect-TCPXO plugin's environment profile leaves NCCL Ring and Tree only.
"""

from dataclasses import replace

import pytest

from collectives import Collective, run
from collectives import nccl_model as nm
from collectives.algorithms import Planner
from collectives.runner import planner_for
from collectives.validate import _router
from topologies.errors import SpecError

RANKS = tuple(range(16))


def _p6(reported_us: float) -> Planner:
    """Two p6-b200-like nodes (EFA v4) whose plugin reports ``reported_us``; the step cost is unchanged."""
    pl = planner_for(_router("hgx-b200", {"domains": 2, "scaleout": "aws-efa-v4", "nic": "EFA-v4-400G"}))
    return Planner(pl.router, replace(pl.calib, net_latency_s=reported_us * 1e-6), policy=pl.policy)


def _time_s(pl: Planner, size: int, algo: str) -> float:
    [res] = run(pl.router, [Collective("all_reduce", RANKS, size, algo)], planner=pl, mode="epoch")
    return res.time_s


def test_reported_latency_changes_nccls_choice_but_not_the_time_of_a_fixed_algorithm():
    """A net plugin's reported latency is a tuning input (tuning.cc adds it to every network step of
    NCCL's cost table); the time a forced algorithm takes must not move with it."""
    low, high = _p6(0.0), _p6(400.0)
    for size in (256 << 10, 4 << 20):
        for algo in ("ring", "tree"):
            assert _time_s(low, size, algo) == pytest.approx(_time_s(high, size, algo), rel=1e-9)
    sizes = [1 << k for k in range(16, 30)]
    picks = [(nm.choose(low.system(RANKS), "all_reduce", s).algorithm,
              nm.choose(low.system(RANKS), "all_reduce", s).protocol,
              nm.choose(high.system(RANKS), "all_reduce", s).algorithm,
              nm.choose(high.system(RANKS), "all_reduce", s).protocol) for s in sizes]
    assert any(a[:2] != a[2:] for a in picks)  # the report moves at least one switch point


def test_the_step_cost_is_charged_whatever_the_plugin_reports():
    """The real cost of a network step (calibration.NET_STEP_LATENCY_US) is what a run pays: a small
    all-reduce across two EFA nodes is slower than the same fabric with a zero step cost."""
    pl = _p6(0.0)
    free = Planner(pl.router, replace(pl.calib, net_step_latency_s=0.0), policy=pl.policy)
    assert pl.calib.net_step_latency_s > 0
    t, t0 = _time_s(pl, 64 << 10, "tree"), _time_s(free, 64 << 10, "tree")
    # Tree across two nodes: one network step up and one down (NCCL's formula; Simple counts each twice)
    assert t - t0 >= 2 * pl.calib.net_step_latency_s * (1 - 1e-9)


def test_tcpxo_profile_leaves_nccl_ring_and_tree_only():
    """GCP's GPUDirect-TCPXO profile (nccl-env-profile.sh of the 2024-2025 plugin bundles) sets
    NCCL_ALGO=Ring,Tree and NCCL_NVLS_ENABLE=0: across two A3 Mega nodes `auto` never runs NVLS / NVLSTree,
    while over InfiniBand the same boards do."""
    tcpxo = planner_for(_router("hgx-h100", {"domains": 2, "scaleout": "gcp-tcpxo", "nic": "TCPXO-200G"}))
    ib = planner_for(_router("hgx-h100", {"domains": 2, "scaleout": "quantum-2"}))
    for size in (1 << 20, 64 << 20, 1 << 30):
        plan = tcpxo.plan(Collective("all_reduce", RANKS, size))
        assert plan.nccl_algorithm in ("Ring", "Tree"), (size, plan.algorithm)
    assert any(ib.plan(Collective("all_reduce", RANKS, s)).nccl_algorithm == "NVLSTree" for s in (64 << 20, 1 << 30))
    with pytest.raises(SpecError, match="algorithms"):
        nm.NcclSystem(arch_sm=90, gpus_per_node=8, algorithms=("Butterfly",))


@pytest.mark.parametrize("scaleout, gpu_preset, nic", [("gcp-tcpxo", "hgx-h100", "TCPXO-200G"),
                                                        ("aws-efa-v2", "hgx-h100", "EFA-v2-100G"),
                                                        ("aws-efa-v4", "hgx-b200", "EFA-v4-400G"),
                                                        ("quantum-2", "hgx-h100", "ConnectX-7"),
                                                        ("gcp-rdma", "hgx-h200", "ConnectX-7")])
def test_a_cloud_fabric_brings_its_own_nic(scaleout, gpu_preset, nic):
    """On AWS EFA and GCP TCPXO the NIC is the instance's, so `--set scaleout=gcp-tcpxo` alone must run the
    TCPXO plugin's rules (Ring / Tree only), not a ConnectX-7 on a TCPXO switch; InfiniBand / RoCE fabrics
    keep the GPU platform's NIC."""
    from fabric import compile_fabric
    from topologies import build
    G = build(gpu_preset, {"domains": "2", "scaleout": scaleout})
    assert G.graph["meta"]["nic"] == nic
    if scaleout == "gcp-tcpxo":
        from fabric import Router
        pl = planner_for(Router(compile_fabric(G)))
        assert pl.plan(Collective("all_reduce", RANKS, 64 << 20)).nccl_algorithm in ("Ring", "Tree")
