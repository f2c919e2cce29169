"""Routing: path and hop counts, determinism, spray weights, table router == networkx router."""

import networkx as nx
import numpy as np
import pytest

from fabric.compiled import compile_fabric
from fabric.failures import apply_failures, resolve
from fabric.nxroute import NxRouter
from fabric.routing import Router
from topologies.clos import fat_tree
from topologies.errors import RoutingError, SelectorError, UnreachableError
from topologies.nvlink import nvl
from topologies.presets import build


def _agg(links, w):
    out = {}
    for l, x in zip(links, w):
        out[int(l)] = out.get(int(l), 0.0) + float(x)
    return out


def _nodes_path(cf, links):
    return [cf.node_names[cf.link_src[l]] for l in links] + [cf.node_names[cf.link_dst[links[-1]]]]


def test_inter_leaf_ecmp_paths_equal_number_of_spines():
    G = fat_tree(128, 16)  # 16 leaves x 8 hosts, 8 spines, one cable each
    cf = compile_fabric(G)
    S = cf.meta["clos"]["spines"]
    sw = G.subgraph(n for n, d in G.nodes(data=True) if d["kind"] == "switch")
    assert len(list(nx.all_shortest_paths(sw, "leaf0", "leaf5"))) == S
    r = Router(cf)
    seen = {tuple(r.path_links(r.route([0], [127], policy="ecmp", seed=s), 0)[0]) for s in range(200)}
    assert len(seen) == S  # hashing reaches every spine
    for links in seen:
        assert len(links) == 6  # gpu-nic, nic-leaf, leaf-spine, spine-leaf, leaf-nic, nic-gpu


def test_nvl72_pair_is_one_switch_hop_over_18_planes():
    G = nvl(72, "GB300")
    assert len(list(nx.all_shortest_paths(G, "d0/gpu0", "d0/gpu71"))) == 18
    cf = compile_fabric(G)
    r = Router(cf)
    links, w = r.path_links(r.route([0], [71]), 0)
    assert len(links) == 36 and np.allclose(w, 1 / 18)
    chips = {cf.node_names[cf.link_dst[l]] for l in links if cf.tier_of(l) == "nvlink-up"}
    assert len(chips) == 18


@pytest.mark.parametrize("policy", ["ecmp", "dmodk"])
def test_deterministic_with_seed(policy):
    cf = compile_fabric(fat_tree(64, 8))
    s, d = np.meshgrid(np.arange(64), np.arange(64))
    m = s != d
    a = Router(cf).route(s[m], d[m], policy=policy, seed=7)
    b = Router(cf).route(s[m], d[m], policy=policy, seed=7)
    assert np.array_equal(a.res, b.res)
    if policy == "ecmp":
        c = Router(cf).route(s[m], d[m], policy=policy, seed=8)
        assert not np.array_equal(a.res, c.res)


def test_dmodk_routes_by_destination():
    cf = compile_fabric(fat_tree(64, 8))
    r = Router(cf)
    # all sources of one leaf to one destination share the up-port chosen by the destination
    routes = r.route(np.arange(1, 4), np.full(3, 40), policy="dmodk")
    ups = {tuple(l for l in r.path_links(routes, i)[0] if cf.tier_of(l) == "leaf-up") for i in range(3)}
    assert len(ups) == 1


@pytest.mark.parametrize("fails", [[], ["spine 1"], ["leaf 0 spine 0"]])
def test_spray_weights_conserve_the_flow(fails):
    cf = apply_failures(compile_fabric(fat_tree(64, 8, tiers=3)), fail=fails)
    r = Router(cf)
    s, d = np.meshgrid(np.arange(64), np.arange(64))
    m = s != d
    routes = r.route(s[m], d[m], policy="spray")
    for i in range(0, m.sum(), 37):
        flow = _agg(*r.path_links(routes, i))
        net = {}
        for l, w in flow.items():
            net[cf.link_src[l]] = net.get(cf.link_src[l], 0) - w
            net[cf.link_dst[l]] = net.get(cf.link_dst[l], 0) + w
        src, dst = cf.gpus[s[m][i]], cf.gpus[d[m][i]]
        assert net.pop(src) == pytest.approx(-1) and net.pop(dst) == pytest.approx(1)
        assert all(abs(v) < 1e-12 for v in net.values())
        # every hop level (links leaving the source GPU) sums to 1
        assert sum(w for l, w in flow.items() if cf.link_src[l] == src) == pytest.approx(1)
        assert all(cf.link_alive[l] for l in flow)


CASES = [
    ("fat-tree", {"hosts": 32, "radix": 8}, []),
    ("fat-tree", {"hosts": 32, "radix": 8}, ["spine 1", "leaf 0 spine 0"]),
    ("fat-tree", {"hosts": 64, "radix": 8, "tiers": 3}, ["core 1"]),
    ("hgx-h100", {"domains": 3, "scaleout": "quantum-2", "planes": 2}, []),
    ("hgx-h100", {"domains": 2, "scaleout": "quantum-2"}, ["gpu 3 nvlink plane 1"]),
    ("superpod-h100", {"sus": 1}, ["spine 2"]),
    ("fat-tree", {"hosts": 64, "radix": 16}, ["leaf 1 spine 0=10%", "spine 2 leaf 5=30%"]),
    ("fat-tree", {"hosts": 64, "radix": 8, "tiers": 3}, ["core 0=25%", "leaf 3 spine 1=50%"]),
]


@pytest.mark.parametrize("name, ov, fails", CASES)
@pytest.mark.parametrize("policy", ["ecmp", "dmodk", "spray"])
def test_table_router_agrees_with_networkx_router(name, ov, fails, policy):
    cf = apply_failures(compile_fabric(build(name, ov)), fail=[f for f in fails if "=" not in f],
                        degrade=[f for f in fails if "=" in f])
    fast, ref = Router(cf), NxRouter(cf)
    rng = np.random.default_rng(1)
    n = cf.n_gpus
    pairs = rng.integers(0, n, size=(150, 2))
    pairs = pairs[pairs[:, 0] != pairs[:, 1]]
    routes = fast.route(pairs[:, 0], pairs[:, 1], policy=policy, seed=5)
    for i, (a, b) in enumerate(pairs):
        x = _agg(*fast.path_links(routes, i))
        y = _agg(*ref.route_pair(int(a), int(b), policy=policy, seed=5, salt=i))
        assert x.keys() == y.keys()
        assert all(x[k] == pytest.approx(y[k], abs=1e-12) for k in x)


def test_routing_avoids_failed_links_and_reports_unreachable():
    cf = compile_fabric(fat_tree(16, 8))
    failed = apply_failures(cf, fail=["spine 0"])
    r = Router(failed)
    s, d = np.meshgrid(np.arange(16), np.arange(16))
    m = s != d
    routes = r.route(s[m], d[m], policy="ecmp")
    dead = set(resolve(cf, "spine 0"))
    for i in range(m.sum()):
        assert not dead & set(r.path_links(routes, i)[0])
    cut = apply_failures(cf, fail=["spine 0", "spine 1"])
    with pytest.raises(UnreachableError, match="no network path"):
        Router(cut).route([0], [15])


def test_pxn_moves_to_the_destination_rail_over_nvlink():
    cf = compile_fabric(build("hgx-h100", {"domains": 2, "scaleout": "quantum-2"}))
    r = Router(cf)
    direct = r.route([0], [8 + 3], policy="ecmp")
    pxn = r.route([0], [8 + 3], policy="ecmp", pxn=True)
    tiers_direct = [cf.tier_of(l) for l in r.path_links(direct, 0)[0]]
    tiers_pxn = [cf.tier_of(l) for l in r.path_links(pxn, 0)[0]]
    assert "leaf-up" in tiers_direct          # rail 0 -> rail 3 crosses a spine
    assert "leaf-up" not in tiers_pxn and tiers_pxn[0] == "nvlink-up" and pxn.pxn[0]


def test_rail_only_fabric_falls_back_to_pxn():
    cf = compile_fabric(build("hgx-h100", {"domains": 2, "scaleout": "quantum-2", "spine_scope": "rail"}))
    r = Router(cf)
    routes = r.route([0], [8 + 3])
    assert routes.pxn[0]


def test_bad_inputs():
    r = Router(compile_fabric(fat_tree(16, 8)))
    with pytest.raises(RoutingError, match="ecmp"):
        r.route([0], [1], policy="random")
    with pytest.raises(RoutingError, match="rank 99"):
        r.route([0], [99])
    with pytest.raises(SelectorError, match="forms"):
        resolve(r.cf, "switch 3")
    with pytest.raises(SelectorError, match="no spine 9"):
        resolve(r.cf, "spine 9")


def test_selectors():
    cf = compile_fabric(build("gb300-nvl72", {"domains": 2, "scaleout": "quantum-x800"}))
    assert len(resolve(cf, "gpu 17 nvlink plane 4")) == 2
    assert len(resolve(cf, "gpu 17 nvlink")) == 36
    assert {cf.tier_of(l) for l in resolve(cf, "gpu 17 nic")} == {"nic-up", "nic-down"}
    assert len(resolve(cf, "domain 1 nvswitch 3")) == 144
    degraded = apply_failures(cf, degrade=["gpu 17 nic=50%"])
    links = resolve(cf, "gpu 17 nic")
    assert np.allclose(degraded.link_capacity_Bps[links], cf.link_nominal_Bps[links] / 2)


def test_dmodk_balances_every_tier_of_a_fat_tree_all_to_all():
    from fabric import FlowSet, to_problem, simulate
    cf = compile_fabric(fat_tree(64, 16))  # two parallel cables per leaf-spine pair
    r = Router(cf)
    s, d = np.meshgrid(np.arange(64), np.arange(64))
    m = s != d
    routes = r.route(s[m], d[m], policy="dmodk")
    problem, used = to_problem(FlowSet.from_routes(routes, 1.0), r)
    res = simulate(problem)
    full = np.zeros(r.n_resources)
    full[used] = res.resource_bytes
    link_bytes = r.expand_to_links(full)
    for tier in ("leaf-up", "spine-down"):
        b = link_bytes[cf.tier_mask(tier)]
        assert b.max() == pytest.approx(b.mean()), tier  # D-mod-K spreads destinations perfectly


def test_dmodk_on_rail_optimized_numbering_is_not_worse_than_ecmp():
    from collectives import Collective, run
    r = Router(compile_fabric(build("gb300-nvl72", {"domains": 4, "scaleout": "quantum-x800"})))
    op = Collective("all_to_all", tuple(range(288)), 1 << 26, options={"pxn": False})
    dm = run(r, [op], policy="dmodk")[0].time_s
    ec = run(r, [op], policy="ecmp")[0].time_s
    assert dm <= ec * 1.01


@pytest.mark.parametrize("policy", ["ecmp", "dmodk", "spray"])
def test_multiplane_nics_stripe_over_their_planes(policy):
    from collectives import Collective, run
    one = Router(compile_fabric(build("hgx-h100", {"domains": 4, "scaleout": "quantum-2"})))
    two = Router(compile_fabric(build("hgx-h100", {"domains": 4, "scaleout": "quantum-2", "planes": 2})))
    op = Collective("all_reduce", tuple(range(32)), 1 << 30, "ring")
    t1 = run(one, [op], policy=policy)[0].time_s
    t2 = run(two, [op], policy=policy)[0].time_s
    assert t2 == pytest.approx(t1, rel=1e-3)


@pytest.mark.parametrize("collective", ["all_to_all", "all_reduce"])
def test_spray_does_not_lose_to_ecmp_around_a_degraded_link(collective):
    from collectives import Collective, run
    cf = apply_failures(compile_fabric(fat_tree(64, 16)), degrade=["leaf 1 spine 0=10%"])
    r = Router(cf)
    op = Collective(collective, tuple(range(64)), 1 << 28, "ring" if collective == "all_reduce" else "auto")
    spray = run(r, [op], policy="spray")[0].time_s
    ecmp = run(r, [op], policy="ecmp")[0].time_s
    healthy = run(Router(compile_fabric(fat_tree(64, 16))), [op], policy="spray")[0].time_s
    assert spray <= ecmp * 1.001
    assert spray < 1.3 * healthy  # the split steers around the degraded cables


def test_spray_trunk_entries_match_the_trunk_table_flow_by_flow():
    """The vectorised spray look-ups name, per flow, the trunks of the router's (name, key) table."""
    from topologies import build
    r = Router(compile_fabric(build("fat-tree", {"hosts": 32, "radix": 8, "tiers": 3})))
    assert r.clos_pristine
    cf = r.cf
    n = cf.n_gpus
    src = np.repeat(np.arange(n), n - 1)
    dst = np.tile(np.arange(n - 1), n)
    dst += dst >= src
    rt = r.route(src, dst, policy="spray")
    tr = r.clos_trunk
    for f in range(0, len(src), 7):
        a, b = r.nic_of[cf.gpus[src[f]]], r.nic_of[cf.gpus[dst[f]]]
        la = int(cf.link_dst[r.nic_up[a, 0]])
        lb = int(cf.link_src[r.nic_down[b, 0]])
        want = {int(r.host_up[cf.gpus[src[f]]]), int(r.host_down[cf.gpus[dst[f]]]), tr[("nic-up", int(a))],
                tr[("nic-down", int(b))]}
        if la != lb:
            want |= {tr[("leaf-up", la)], tr[("spine-down", lb)]}
            pa, pb, pl = int(cf.node_pod[la]), int(cf.node_pod[lb]), int(cf.node_plane[la])
            if pa != pb:
                want |= {tr[("spine-up", pl * 1_000_000 + pa)], tr[("core-down", pl * 1_000_000 + pb)]}
        assert set(rt.res[f][rt.res[f] >= 0].tolist()) == want
