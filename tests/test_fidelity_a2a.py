"""Round 5 of issue 8: NCCL all-to-all across NICs (items 1 and 2), against closed forms.

Each test fails on the model before round 5: there the p2p latency was one step whatever the peers, and
the many-peer NIC drop counted queue pairs (8 (D-1) per rail NIC with PXN) with one drop for every
transport.
"""

import pytest

from collectives import Collective, planner_for, run
from collectives.calibration import (NCCL_P2P_PER_PEER_S, nccl_p2p_family, nccl_p2p_per_peer_s,
                                     nic_p2p_factor)
from collectives.validate import _router
from topologies import catalog


def _p5(nodes):
    return _router("hgx-h100", {"domains": nodes, "scaleout": "aws-efa-v2", "nic": "EFA-v2-100G"})


def _ib(nodes):
    return _router("hgx-h100", {"domains": nodes, "scaleout": "quantum-2"})


def test_nccl_alltoall_latency_grows_with_the_peers_over_efa():
    """Item 2: NCCL runs a grouped send/recv in one round per peer (enqueue.cc, comm->p2pSchedule), so
    the all-to-all latency grows by the per-peer cost for every extra peer: 16 -> 64 ranks add 48."""
    lat = {}
    for nodes in (2, 8):
        pl = planner_for(_p5(nodes))
        n = 8 * nodes
        lat[n] = pl.plan(Collective("all_to_all", tuple(range(n)), 32 << 20)).latency_s
    assert lat[64] - lat[16] == pytest.approx(48 * NCCL_P2P_PER_PEER_S["EFA"], rel=1e-9)


def test_per_peer_cost_is_one_peer_for_a_send_recv_ring(monkeypatch):
    op = Collective("send_recv", tuple(range(16)), 1 << 20)
    c = nccl_p2p_per_peer_s("EFA-v2-100G")
    assert c > 0
    with_cost = planner_for(_p5(2)).plan(op).latency_s
    monkeypatch.setitem(NCCL_P2P_PER_PEER_S, "EFA", 0.0)
    without = planner_for(_p5(2)).plan(op).latency_s
    assert with_cost - without == pytest.approx(c, rel=1e-6)


def test_two_node_alltoall_on_infiniband_keeps_the_single_stream_goodput():
    """Item 1: with PXN each rail NIC of a 2-node all-to-all exchanges with one remote NIC port (its own
    rail), so it runs at the single-stream goodput although it carries 8 queue pairs (OCI B300 2-node:
    0.965 of the line rate). Closed form: half of each rank's data crosses at 47 GB/s."""
    [res] = run(_ib(2), [Collective("all_to_all", tuple(range(16)), 1 << 30)])
    goodput = catalog.nic("ConnectX-7").measured_goodput_Bps
    assert res.busbw_Bps == pytest.approx(2 * goodput * 15 / 16, rel=0.02)


def test_many_peer_drop_on_infiniband_follows_the_remote_ports():
    """4 and 8 nodes: 3 and 7 remote NIC ports per rail NIC; the per-GPU network rate is the goodput x
    the factor at those counts (not at the 24 / 56 queue pairs)."""
    goodput = catalog.nic("ConnectX-7").measured_goodput_Bps
    for nodes in (4, 8):
        n = 8 * nodes
        [res] = run(_ib(nodes), [Collective("all_to_all", tuple(range(n)), 1 << 30)])
        net = res.busbw_Bps * n / (n - 1) * (nodes - 1) / nodes   # bytes per second each GPU puts on the wire
        assert net == pytest.approx(goodput * float(nic_p2p_factor(nodes - 1)), rel=0.02)


def test_efa_alltoall_loses_less_to_many_peers_than_infiniband():
    """SRD (EFA) is connectionless: at 4 nodes an EFA bundle of the same 400 Gb/s and the same assumed
    single-stream efficiency keeps more of its goodput than a reliable-connected ConnectX-7 port."""
    op = Collective("all_to_all", tuple(range(32)), 1 << 30)
    [efa] = run(_p5(4), [op])
    [ib] = run(_ib(4), [op])
    assert nccl_p2p_family("nccl", "EFA-v2-100G") == "nccl_efa"
    expect = float(nic_p2p_factor(24, "nccl_efa")) / float(nic_p2p_factor(3, "nccl"))
    assert efa.busbw_Bps / ib.busbw_Bps == pytest.approx(expect, rel=0.03)
    assert efa.busbw_Bps > 1.1 * ib.busbw_Bps
