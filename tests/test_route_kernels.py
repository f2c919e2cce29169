"""The compiled router kernels (fabric.route_kernels) against the numpy router: bit-identical routes, NIC
connection counts, problems and CLI output (np.array_equal, byte-identical JSON)."""

import dataclasses
import json

import numpy as np
import pytest
from click.testing import CliRunner

from cli.app import cli
from collectives import Collective, planner_for
from collectives.moe import TokenRouting
from fabric import Router, compile_with_failures, route_kernels, to_problem
from topologies import load_topology

pytest.importorskip("numba")

FT = {"hosts": "128", "radix": "16", "link": "400Gb/s"}      # two tiers
FT3 = {"hosts": "512", "radix": "16", "link": "400Gb/s"}     # three tiers: 8 columns (numpy's row sum)


@pytest.fixture
def compiled(monkeypatch):
    """``set(on)``: the router kernels on or off, whatever the size (the engine's kernels stay off)."""
    calls = {"fast": 0}
    real = route_kernels.route_plain

    def spy(*a, **k):
        out = real(*a, **k)
        calls["fast"] += out is not None
        return out

    monkeypatch.setattr(route_kernels, "route_plain", spy)
    monkeypatch.delenv("FABRIC_EMU_KERNELS", raising=False)

    def set_(on: bool):
        monkeypatch.setattr(route_kernels, "use", (lambda entries: True) if on else (lambda entries: False))
    set_.calls = calls
    return set_


def _both(compiled, f):
    compiled(False)
    a = f()
    compiled(True)
    return a, f()


def _equal(a, b):
    if a is None or b is None:
        return a is None and b is None
    return a.dtype == b.dtype and np.array_equal(a, b)


def _same_routes(a, b):
    return all(_equal(getattr(a, k), getattr(b, k)) for k in ("res", "weight", "latency_s", "pxn", "src", "dst"))


def _pairs(n, m, seed):
    rng = np.random.default_rng(seed)
    s = rng.integers(0, n, m)
    return s, (s + rng.integers(1, n, m)) % n


@pytest.mark.parametrize("sets", [FT, FT3], ids=["2-tier", "3-tier"])
@pytest.mark.parametrize("policy", ["ecmp", "dmodk", "spray"])
@pytest.mark.parametrize("chunk", [1 << 18, 97])
def test_routes_are_bit_identical_and_compiled(compiled, sets, policy, chunk):
    cf = compile_with_failures(load_topology("fat-tree", sets), (), ())
    r = Router(cf, chunk_flows=chunk)
    s, d = _pairs(cf.n_gpus, 2000, 5)
    # a first chunk of leaf-local flows (no switch hop: narrower than the later ones, so the table grows as in
    # the numpy path, and at 3 tiers the later chunks' latency is numpy's 8-column row sum)
    leaf = np.arange(200) % 8
    s, d = np.r_[leaf, s], np.r_[(leaf + 1 + np.arange(200) // 8 % 7) % 8, d]
    for salt in (None, 0, np.arange(len(s)) * 7):
        a, b = _both(compiled, lambda: r.route(s, d, policy=policy, seed=3, salt=salt))
        assert _same_routes(a, b)
    assert compiled.calls["fast"] == 3


@pytest.mark.parametrize("fail,degrade,policy,fast", [
    (("spine 0",), (), "ecmp", True),
    (("spine 0",), (), "spray", False),          # not pristine: the numpy explicit spray
    ((), ("leaf 1 spine 0=10%",), "dmodk", True),
    ((), ("leaf 1 spine 0=10%",), "spray", False),
])
def test_failures_and_degraded_links(compiled, fail, degrade, policy, fast):
    cf = compile_with_failures(load_topology("fat-tree", FT), fail, degrade)
    r = Router(cf)
    s, d = _pairs(cf.n_gpus, 1500, 2)
    a, b = _both(compiled, lambda: r.route(s, d, policy=policy, seed=1))
    assert _same_routes(a, b)
    assert compiled.calls["fast"] == int(fast)


def test_flows_that_do_not_qualify_take_the_numpy_path(compiled):
    cf = compile_with_failures(load_topology("fat-tree", FT), (), ())
    r = Router(cf)
    s, d = _pairs(cf.n_gpus, 300, 4)
    d[7] = s[7]  # one empty route
    a, b = _both(compiled, lambda: r.route(s, d, policy="ecmp", seed=1))
    assert _same_routes(a, b) and compiled.calls["fast"] == 0


def test_a_rank_out_of_range_is_refused_as_before(compiled):
    from topologies.errors import RoutingError
    cf = compile_with_failures(load_topology("fat-tree", FT), (), ())
    r = Router(cf)
    compiled(True)
    with pytest.raises(RoutingError, match="dst: rank 128 is not a GPU"):
        r.route([0, 1], [2, 128])
    with pytest.raises(RoutingError, match="src: rank -1 is not a GPU"):
        r.route([-1, 1], [2, 3])


@pytest.mark.parametrize("pxn", [True, False])
def test_nvl72_with_pxn_is_unchanged(compiled, pxn):
    cf = compile_with_failures(load_topology("gb300-nvl72", {"domains": "2", "scaleout": "quantum-x800"}), (), ())
    r = Router(cf)
    s, d = _pairs(cf.n_gpus, 1500, 3)
    for policy in ("ecmp", "spray"):
        a, b = _both(compiled, lambda: r.route(s, d, policy=policy, seed=1, pxn=pxn))
        assert _same_routes(a, b)
    assert compiled.calls["fast"] == 0  # NVLink segments: the numpy path


@pytest.mark.parametrize("policy", ["ecmp", "dmodk", "spray"])
def test_nvl72_flows_between_domains_are_compiled(compiled, policy):
    cf = compile_with_failures(load_topology("gb300-nvl72", {"domains": "3", "scaleout": "quantum-x800"}), (), ())
    r = Router(cf, chunk_flows=300)
    s, d = _pairs(cf.n_gpus, 1500, 6)
    dom = cf.node_domain[cf.gpus]
    s, d = s[dom[s] != dom[d]], d[dom[s] != dom[d]]
    a, b = _both(compiled, lambda: r.route(s, d, policy=policy, seed=2, pxn=False))
    assert _same_routes(a, b) and compiled.calls["fast"] == 1
    loc = cf.node_local[cf.gpus]
    on_rail = loc[s] == loc[d]  # PXN has nothing to forward: the sender is on the destination's rail
    a, b = _both(compiled, lambda: r.route(s[on_rail], d[on_rail], policy=policy, seed=2, pxn=True))
    assert _same_routes(a, b) and compiled.calls["fast"] == 2
    a, b = _both(compiled, lambda: r.route(s, d, policy=policy, seed=2, pxn=True))  # PXN: the numpy path
    assert _same_routes(a, b) and compiled.calls["fast"] == 2


def _problem(cf, op, policy):
    router = Router(cf)
    planner = planner_for(router, policy=policy, seed=1)
    plan = planner.plan(op)
    return plan, to_problem(plan.flows.relabel(op.label), router)


def _same_problem(a, b):
    (pa, ua), (pb, ub) = a, b
    assert _equal(ua, ub)
    for f in dataclasses.fields(pa):
        x, y = getattr(pa, f.name), getattr(pb, f.name)
        if isinstance(x, np.ndarray) or isinstance(y, np.ndarray):
            assert _equal(x, y), f.name
        else:
            assert x == y, f.name


@pytest.mark.parametrize("policy", ["ecmp", "spray"])
def test_all_to_all_and_moe_problems_are_bit_identical(compiled, policy):
    cf = compile_with_failures(load_topology("fat-tree", FT), (), ())
    ranks = tuple(range(cf.n_gpus))
    a2a = Collective("all_to_all", ranks, 1 << 26)
    moe = Collective("moe_dispatch", ranks, 0, options={"moe": TokenRouting("skewed", experts=128, seed=1)})
    for op in (a2a, moe):
        (plan_a, prob_a), (plan_b, prob_b) = _both(compiled, lambda: _problem(cf, op, policy))
        _same_problem(prob_a, prob_b)
        for k in ("res", "weight", "latency_s", "resource_scale"):
            assert _equal(getattr(plan_a.flows, k), getattr(plan_b.flows, k)), k
    assert compiled.calls["fast"] >= 2


@pytest.mark.parametrize("topo,sets", [("fat-tree", FT), ("gb300-nvl72", {"domains": "2", "scaleout": "quantum-x800"})])
def test_nic_connections_are_the_same_integers(compiled, topo, sets):
    cf = compile_with_failures(load_topology(topo, sets), (), ())
    planner = planner_for(Router(cf), policy="ecmp", seed=1)
    s, d = _pairs(cf.n_gpus, 3000, 9)
    res = planner.router.route(s, d, policy="ecmp", seed=1).res
    (pa, la, ha), (pb, lb, hb) = _both(compiled, lambda: planner._nic_connections(res))
    assert _equal(pa, pb) and la is None and ha is None
    crossing = pa > 0
    assert crossing.any() and lb == int(pa[crossing].min()) and hb == int(pa.max())
    assert planner._nic_connections(res, per_flow=False) == (None, lb, hb)  # compiled: the bounds only


def _peer_ports_reference(planner, res):
    """Distinct remote NIC ports per port by sorting every (nic-up, nic-down) pair (F x h masks)."""
    tier = planner._resource_tier()
    up_code, dn_code = (int(x) for x in planner._nic_tiers)
    t = np.where(res >= 0, tier[np.maximum(res, 0)], -1)
    both = (t == up_code).any(axis=1) & (t == dn_code).any(axis=1)
    up = np.where(t == up_code, res, -1).max(axis=1)[both].astype(np.int64)
    dn = np.where(t == dn_code, res, -1).max(axis=1)[both].astype(np.int64)
    pairs = np.unique(up * len(tier) + dn)
    fan_up = np.bincount(pairs // len(tier), minlength=len(tier))
    fan_dn = np.bincount(pairs % len(tier), minlength=len(tier))
    out = np.zeros(len(res), np.int64)
    out[both] = np.maximum(fan_up[up], fan_dn[dn])
    return out


@pytest.mark.parametrize("topo,sets,pxn", [("fat-tree", FT, None), ("fat-tree", FT3, None),
                                           ("gb300-nvl72", {"domains": "2", "scaleout": "quantum-x800"}, True),
                                           ("gb300-nvl72", {"domains": "2", "scaleout": "quantum-x800"}, False)])
def test_nic_peer_ports_are_the_same_integers(compiled, topo, sets, pxn):
    cf = compile_with_failures(load_topology(topo, sets), (), ())
    planner = planner_for(Router(cf), policy="ecmp", seed=1)
    s, d = _pairs(cf.n_gpus, 3000, 4)
    res = planner.router.route(s, d, policy="ecmp", seed=1, pxn=pxn).res
    a, b = _both(compiled, lambda: planner.nic_peer_ports(res))
    assert _equal(a, b) and _equal(a, _peer_ports_reference(planner, res)) and a.max() >= 1  # PXN, 2 racks: 1
    (ca, la, ha), (cb, lb, hb) = _both(compiled, lambda: planner.nic_fan_connections(res))
    crosses = planner._nic_connections(res)[0] > 0
    assert _equal(ca, cb) and _equal(ca, np.where(crosses, np.maximum(a, 1), 0))
    assert la is None and ha is None and lb == int(ca[crosses].min()) and hb == int(ca.max())


def test_problem_ids_on_a_table_with_padding_and_trunks(compiled):
    cf = compile_with_failures(load_topology("fat-tree", FT), (), ())
    router = Router(cf)
    rng = np.random.default_rng(4)
    used = rng.choice(router.n_resources, 40, replace=False)
    res = np.where(rng.random((500, 5)) < 0.3, -1, used[rng.integers(0, 40, (500, 5))]).astype(np.int32)
    mark = [route_kernels.used_mark(res, router.n_resources)]
    from fabric.flowset import _used_mark
    assert _equal(mark[0], _used_mark(res, router.n_resources))
    lookup = np.full(router.n_resources + 1, -1, np.int16)
    lookup[np.sort(used)] = np.arange(40, dtype=np.int16)
    assert _equal(route_kernels.local_ids(res, lookup), lookup[res])


@pytest.mark.parametrize("args", [
    ["run", "all_to_all", "--topo", "fat-tree", "--set", "hosts=128", "--set", "radix=16", "--size", "64MiB",
     "--routing", "ecmp", "--seed", "2", "--report", "--json"],
    ["run", "all_to_all", "--topo", "fat-tree", "--set", "hosts=128", "--set", "radix=16", "--size", "64MiB",
     "--routing", "spray", "--json"],
    ["run", "all_to_all", "--topo", "fat-tree", "--set", "hosts=128", "--set", "radix=16", "--size", "16MiB",
     "--routing", "dmodk", "--fail", "spine 1", "--json"],
    ["run", "moe_dispatch", "--topo", "fat-tree", "--set", "hosts=32", "--set", "radix=8", "--moe-routing",
     "skewed", "--experts", "32", "--seed", "1", "--json"],
    ["run", "all_to_all", "--topo", "gb300-nvl72", "--set", "domains=2", "--set", "scaleout=quantum-x800",
     "--no-pxn", "--groups", "72", "--layout", "strided", "--size", "64MiB", "--json"],
], ids=["ecmp-report", "spray", "dmodk-fail", "moe", "nvl72-no-pxn"])
def test_cli_json_is_byte_identical(compiled, args):
    a, b = _both(compiled, lambda: CliRunner().invoke(cli, args))
    assert a.exit_code == 0 and b.exit_code == 0, (a.output, b.output)
    assert a.stdout == b.stdout
    json.loads(a.stdout)
    assert compiled.calls["fast"] >= 1


@pytest.mark.parametrize("ranks", [tuple(range(7)), (5, 3, 9, 0), tuple(range(40, 0, -3))])
def test_all_pairs_row_by_row_like_the_broadcast_mask(monkeypatch, ranks):
    r = np.asarray(ranks)
    m = r[:, None] != r[None, :]
    want = np.broadcast_to(r[:, None], m.shape)[m], np.broadcast_to(r[None, :], m.shape)[m]
    monkeypatch.setattr(route_kernels, "MIN_PAIRS", 0)
    monkeypatch.setenv("FABRIC_EMU_KERNELS", "auto")
    got = route_kernels.all_pairs(r)
    assert got is not None and all(_equal(g, w) for g, w in zip(got, want))
    monkeypatch.setenv("FABRIC_EMU_KERNELS", "numpy")
    assert route_kernels.all_pairs(r) is None


def test_parallel_blocks_give_the_bytes_of_one_thread_and_of_numpy():
    """The walk and the peer-port kernel run in blocks on threads: 4 blocks of flows, 1 or all threads, numpy."""
    import os
    import subprocess
    import sys
    code = ("import hashlib, numpy as np; from fabric import Router, compile_with_failures; "
            "from topologies import load_topology; from collectives import planner_for; "
            "cf = compile_with_failures(load_topology('fat-tree', {'hosts': '512', 'radix': '16', 'link': '400Gb/s'}), (), ()); "
            "p = planner_for(Router(cf), policy='ecmp', seed=3); n = cf.n_gpus; "
            "s = np.repeat(np.arange(n), n); d = np.tile(np.arange(n), n); m = s != d; "
            "r = p.router.route(s[m], d[m], policy='ecmp', seed=3); "
            "c = p.nic_fan_connections(r.res)[0]; "
            "print(hashlib.md5(r.res.tobytes() + r.latency_s.tobytes() + c.tobytes()).hexdigest())")
    out = {}
    for name, extra in (("threads", {"FABRIC_EMU_KERNELS": "numba"}),
                        ("one", {"FABRIC_EMU_KERNELS": "numba", "NUMBA_NUM_THREADS": "1"}),
                        ("numpy", {"FABRIC_EMU_KERNELS": "numpy"})):
        env = {**os.environ, **extra}
        out[name] = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True,
                                   check=True).stdout.strip()
    # the digests cover routes, latencies and connection counts
    assert out["threads"] == out["one"] == out["numpy"] and len(out["numpy"]) == 32
