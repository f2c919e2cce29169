"""Round 11 of issue 8: NCCL's PXN relays inside the sender's host, not across a multi-host NVLink domain.

NCCL v2.28.7-1 picks a network peer's NIC as the one local to the GPU of *our node* with the peer's
``nvmlDev`` (src/graph/search.cc ``ncclTopoGetNetDev``; src/graph/topo.h ``ncclTopoDevToRank`` skips GPUs
of other nodes) and relays only through a GPU "(3) on the same node as us" (src/graph/paths.cc). Each test
fails on the model before round 11, whose PXN relayed to the GPU of the sender's whole NVLink domain with
the destination's domain-local index.
"""

import numpy as np
import pytest

from collectives import Collective, planner_for, run
from collectives.calibration import nic_p2p_factor
from collectives.validate import _router
from fabric import Router, compile_fabric
from topologies import build


def _gb300_racks(racks=2, gpus=64):
    return _router("gb300-nvl72", {"domains": racks, "gpus_per_domain": gpus, "scaleout": "spectrum-x",
                                   "planes": 2})


def _rank(r, domain, local):
    cf = r.cf
    return int(np.flatnonzero((cf.node_domain[cf.gpus] == domain) & (cf.node_local[cf.gpus] == local))[0])


def test_hosts_inside_an_nvl72_rack_are_its_four_gpu_trays():
    r = Router(compile_fabric(build("gb300-nvl72", {"domains": 2, "gpus_per_domain": 64,
                                                    "scaleout": "spectrum-x"})))
    g = r.cf.gpus
    assert r.node_host[g].max() + 1 == 2 * 16          # 16 trays per rack, numbered over the fabric
    assert np.array_equal(r.node_host_dev[g], r.cf.node_local[g] % 4)
    h = Router(compile_fabric(build("hgx-h100", {"domains": 2, "scaleout": "quantum-2"})))
    assert np.array_equal(h.node_host[h.cf.gpus], h.cf.node_domain[h.cf.gpus])   # HGX: host = domain


def _sending_gpu(r, routes, f=0):
    """The GPU whose host-up link (GPU -> NIC) the flow crosses: the one whose NIC sends it."""
    links = r.path_links(routes, f)[0]
    ups = [x for x in links if x in set(r.host_up[r.host_up >= 0].tolist())]
    assert len(ups) == 1
    return int(r.cf.link_src[ups[0]])


def test_nccl_pxn_relays_to_the_gpu_of_the_senders_tray_on_the_destinations_rail():
    r = _gb300_racks()
    gpu = r.cf.gpus
    a, b = _rank(r, 0, 4), _rank(r, 1, 37)           # tray 1 index 0 -> rack 1 tray 9 index 1
    host = r.route([a], [b], pxn="host")
    dom = r.route([a], [b], pxn=True)
    assert host.pxn[0] and dom.pxn[0]
    assert _sending_gpu(r, host) == gpu[_rank(r, 0, 5)]    # the sender's tray-mate on rail 1
    assert _sending_gpu(r, dom) == gpu[_rank(r, 0, 37)]    # the domain-wide relay: another tray's NIC
    # already on the destination's rail inside its tray: no relay at all under NCCL's rule
    c = _rank(r, 0, 5)
    assert not r.route([c], [b], pxn="host").pxn[0] and r.route([c], [b], pxn=True).pxn[0]
    assert _sending_gpu(r, r.route([c], [b], pxn="host")) == gpu[c]


def test_hgx_routes_are_the_same_under_both_scopes():
    r = Router(compile_fabric(build("hgx-h100", {"domains": 4, "scaleout": "quantum-2"})))
    n = r.cf.n_gpus
    s, d = np.divmod(np.arange(n * n), n)
    keep = s != d
    a = r.route(s[keep], d[keep], pxn="host")
    b = r.route(s[keep], d[keep], pxn=True)
    assert np.array_equal(a.res, b.res) and np.array_equal(a.pxn, b.pxn)


def test_two_rack_all_to_all_meets_one_port_per_remote_tray():
    """128 ranks in 2 racks of 16 trays: every NIC port of a rail exchanges with the 16 trays of the other
    rack (k = 16; the domain-wide relay gave k = 1), and the NIC-bound rate follows the factor at 16."""
    r = _gb300_racks()
    pl = planner_for(r)
    op = Collective("all_to_all", tuple(range(128)), 1 << 30)
    fs = pl.plan(op).flows
    k = pl.nic_peer_ports(fs.res)
    assert k.max() == 16 and k[k > 0].min() == 16
    [res] = run(r, [op])
    [one] = run(r, [Collective("all_to_all", tuple(range(128)), 1 << 30, options={"pxn": True})])
    assert res.busbw_Bps == pytest.approx(one.busbw_Bps, rel=1e-12)  # the NCCL default is this scope
    rate = res.busbw_Bps * 128 / 127 * 0.5          # half of every rank's data crosses the racks
    nic = r.cf.link_capacity_Bps[r.nic_up[r.nic_of[r.cf.gpus[0]]][0]] * 2   # 2 planes of one GPU's NIC
    assert rate < float(nic_p2p_factor(16)) * nic * 1.001


@pytest.mark.parametrize("policy", ["ecmp", "spray"])
def test_host_aggregated_all_to_all_matches_per_pair_flows_on_racks(policy):
    r = Router(compile_fabric(build("gb300-nvl72", {"domains": 3, "gpus_per_domain": 16,
                                                    "scaleout": "spectrum-x"})))
    n = r.cf.n_gpus
    flat, agg = (run(r, [Collective("all_to_all", tuple(range(n)), 1 << 28, options={"aggregate": a})],
                     policy=policy, report=True)[0] for a in ("none", "node"))
    assert np.allclose(agg.report.link_bytes, flat.report.link_bytes, rtol=1e-9, atol=1.0)
    assert agg.time_s == pytest.approx(flat.time_s, abs=2e-6)


def test_pxn_scope_is_checked():
    r = Router(compile_fabric(build("hgx-h100")))
    from topologies.errors import RoutingError
    with pytest.raises(RoutingError, match="pxn"):
        r.route([0], [1], pxn="rack")


def test_host_aggregated_all_to_all_across_leaves():
    """9 racks of 4 trays: a rail's NICs span two leaves, so flows cross the spines. Spraying: every link
    carries the per-pair bytes; ECMP: every NIC port does (the hash sees fewer network flows)."""
    r = Router(compile_fabric(build("gb300-nvl72", {"domains": 9, "gpus_per_domain": 16,
                                                    "scaleout": "spectrum-x"})))
    assert r.cf.link_tier.max() >= 0 and (r.level == 2).any()     # a spine tier exists
    n = r.cf.n_gpus
    out = {}
    for policy in ("spray", "ecmp"):
        out[policy] = [run(r, [Collective("all_to_all", tuple(range(n)), 1 << 28, options={"aggregate": a})],
                           policy=policy, report=True)[0] for a in ("none", "node")]
    flat, agg = out["spray"]
    assert np.allclose(agg.report.link_bytes, flat.report.link_bytes, rtol=1e-9, atol=1.0)
    assert agg.time_s == pytest.approx(flat.time_s, rel=1e-6, abs=2e-6)
    flat, agg = out["ecmp"]
    from topologies.graph import TIERS
    nic = np.isin(r.cf.link_tier, [TIERS.index(t) for t in ("nic-up", "nic-down", "host-up", "host-down")])
    assert np.allclose(agg.report.link_bytes[nic], flat.report.link_bytes[nic], rtol=1e-9, atol=1.0)
