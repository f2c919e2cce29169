"""Fidelity round 8, AWS EFA (issue 8): NCCL's point-to-point over EFA's RDMA protocol pays the rendezvous only when
its first network message is above the plugin's eager limit.

Source: aws/aws-ofi-nccl src/nccl_ofi_rdma.c ``send`` (v1.8.1-aws .. v1.21.1): a message goes eagerly when the
receiver's control message has not come and ``size <= eager_max_size`` (``OFI_NCCL_EAGER_MAX_SIZE``, 8192); NCCL's
p2p sends one channel's part of a peer's bytes, at most ``NCCL_P2P_NET_CHUNKSIZE`` (src/enqueue.cc ``addP2pToPlan``:
one channel up to half a step on the network). Until round 8 every p2p operation over EFA paid the rendezvous
(``Planner.p2p_latency_s`` without the message size), also where every message is at most 8 KiB.
"""

from collectives import Collective
from collectives.plancache import PlanCache
from collectives.runner import planner_for
from collectives.validate import _router

RANKS = tuple(range(16))


def _planner(nic="EFA-v2-100G", scaleout="aws-efa-v2"):
    return planner_for(_router("hgx-h100", {"domains": 2, "scaleout": scaleout, "nic": nic}))


def _a2a_latency(pl, per_peer: int) -> float:
    return pl.plan(Collective("all_to_all", RANKS, per_peer * len(RANKS))).latency_s


def test_small_all_to_all_over_efa_sends_eagerly():
    """16 ranks on 2 x p5: 4 KiB per peer goes eagerly, 16 KiB per peer waits one network step for the receiver;
    before round 8 both paid it (no difference)."""
    pl = _planner()
    step = pl.calib.net_step_latency_s
    assert step > 0
    assert _a2a_latency(pl, 16 << 10) - _a2a_latency(pl, 4 << 10) >= 0.99 * step


def test_the_limit_is_the_plugins_and_only_on_its_rdma_protocol():
    """At the limit itself (8192 bytes) still eager; InfiniBand (NCCL's own IB transport) has no such term."""
    pl = _planner()
    assert _a2a_latency(pl, 8192) == _a2a_latency(pl, 4096)
    ib = _planner("ConnectX-7", "quantum-2-nosharp")
    assert _a2a_latency(ib, 16 << 10) == _a2a_latency(ib, 4 << 10)


def test_plan_cache_keeps_each_side_of_the_eager_limit():
    """Cached all-to-alls and sends rescale in size only on one side of the limit: each size gives what planning it
    afresh gives (before round 8 a one-byte base plan stood for every size of a send)."""
    pl = _planner()
    cache = PlanCache(pl)
    for per_peer in (1 << 20, 4 << 10, 64 << 10, 1 << 10):
        op = Collective("all_to_all", RANKS, per_peer * len(RANKS))
        assert abs(cache.plan(op).latency_s - _planner().plan(op).latency_s) <= 1e-15, per_peer
    fresh = _planner()
    for size in (1 << 20, 4 << 10, 1 << 30, 8192, 8193):
        [got] = cache.sends([(0, 8, size, "s")])
        want = fresh.plan(Collective("send_recv", (0, 8), size)).latency_s
        assert abs(got.latency_s - want) <= 1e-15, size
        assert got.op.size_bytes == size
