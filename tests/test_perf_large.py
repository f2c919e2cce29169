"""Large-run speed-ups give the same results as the algorithms they replace (references kept here)."""

import numpy as np
import pytest

from collectives import Collective, planner_for
from collectives.calibration import nic_p2p_factor
from fabric import Router, compile_with_failures
from topologies import load_topology


def _planner(topo="fat-tree", sets=None, policy="ecmp"):
    sets = sets or {"hosts": "32", "radix": "8", "link": "400Gb/s"}
    cf = compile_with_failures(load_topology(topo, sets), (), ())
    return planner_for(Router(cf), policy=policy, seed=1), cf


def _nic_connections_reference(planner, res):
    """The previous computation: the F x h NIC mask, per-hop bincounts and maxima."""
    nic = planner._on_nic(res)
    counts = np.zeros(len(planner._resource_tier()) + 1, np.int64)
    for j in range(res.shape[1]):
        counts += np.bincount(np.where(nic[:, j], res[:, j] + 1, 0), minlength=len(counts))
    counts[0] = 0
    per = np.zeros(len(res), np.int64)
    for j in range(res.shape[1]):
        np.maximum(per, counts[np.where(nic[:, j], res[:, j] + 1, 0)], out=per)
    return per


@pytest.mark.parametrize("topo,sets,policy", [
    ("fat-tree", None, "ecmp"),
    ("fat-tree", None, "spray"),
    ("gb300-nvl72", {"domains": "2", "scaleout": "quantum-x800"}, "spray"),
])
def test_nic_connections_match_the_masked_reference(topo, sets, policy):
    planner, cf = _planner(topo, sets, policy)
    rng = np.random.default_rng(3)
    n = cf.n_gpus
    src, dst = rng.integers(0, n, 3000), rng.integers(0, n, 3000)
    keep = src != dst
    routed = planner.routed(src[keep], dst[keep], 1e6, kind="p2p", protocol="Simple", latency_s=0.0,
                            label="x", pxn=True, salt=np.zeros(keep.sum(), np.int64))
    got = planner.nic_connections(routed.res)
    want = _nic_connections_reference(planner, routed.res)
    np.testing.assert_array_equal(got, want)
    assert (got > 0).any() and (got == 0).any() == (~planner._on_nic(routed.res).any(axis=1)).any()


def _nic_peer_ports_reference(planner, res):
    """Round 5: remote NIC ports per port, by Python sets over the flows (fan-out of nic-up, incast of nic-down)."""
    tier = planner._resource_tier()
    up_code, down_code = (int(x) for x in planner._nic_tiers)
    ends = []
    for row in res:
        hops = [int(r) for r in row if r >= 0]
        up = [r for r in hops if tier[r] == up_code]
        dn = [r for r in hops if tier[r] == down_code]
        ends.append((up[0], dn[0]) if up and dn else None)
    outs, ins = {}, {}
    for e in ends:
        if e:
            outs.setdefault(e[0], set()).add(e[1])
            ins.setdefault(e[1], set()).add(e[0])
    return np.array([max(len(outs[e[0]]), len(ins[e[1]])) if e else 0 for e in ends], np.int64)


def test_direct_non_uniform_factor_matches_the_per_flow_factor():
    planner, cf = _planner()
    rng = np.random.default_rng(7)
    n = cf.n_gpus
    src, dst = rng.integers(0, n, 700), rng.integers(0, n, 700)
    keep = src != dst
    op = Collective("all_to_all", tuple(range(n)), 1 << 20)
    fs = planner.direct(op, src[keep], dst[keep], 1e6)
    routed = planner.routed(src[keep], dst[keep], 1e6, kind="p2p", protocol="Simple", latency_s=0.0,
                            label="x", pxn=True, salt=np.zeros(keep.sum(), np.int64))
    conn = _nic_connections_reference(planner, routed.res)
    k = np.where(conn > 0, np.maximum(_nic_peer_ports_reference(planner, routed.res), 1), 0)
    f = nic_p2p_factor(k, "nccl")  # over reliable-connected NICs: remote ports, not queue pairs (round 5)
    assert f.min() < f.max()  # random pairs: unequal counts (the per-entry weight path)
    want = np.where(planner._on_nic(routed.res), 1.0 / f[:, None], 1.0) * routed.effective_weight()
    np.testing.assert_array_equal(fs.res, routed.res)
    np.testing.assert_array_equal(fs.effective_weight(), want)


@pytest.mark.parametrize("topo,sets,policy", [
    ("fat-tree", None, "ecmp"), ("fat-tree", None, "spray"),
    ("gb300-nvl72", {"domains": "2", "scaleout": "quantum-x800"}, "spray"),
    ("gb300-nvl72", {"domains": "2", "scaleout": "quantum-x800"}, "ecmp"),  # 8 columns: the row sum itself
])
def test_path_latency_by_column_is_bit_identical_to_the_row_sum(topo, sets, policy):
    planner, cf = _planner(topo, sets, policy)
    router = planner.router
    rng = np.random.default_rng(11)
    n = cf.n_gpus
    src, dst = rng.integers(0, n, 2000), rng.integers(0, n, 2000)
    routes = router.route(src, dst, policy=policy, seed=1, pxn=True)
    ext = np.append(router.resource_latency_s(), 0.0)
    for res, w in ((routes.res, routes.weight), (routes.res, None),
                   (routes.res[:, :3], rng.random((len(src), 3))), (routes.res[:, :1], None)):
        lat = ext[res]
        want = (lat if w is None else lat * w).sum(axis=1)  # the previous computation
        np.testing.assert_array_equal(router._path_latency(res, w), want)


@pytest.mark.parametrize("dtype,n_res", [(np.int16, 3000), (np.int32, 70000)])
def test_csc_radix_path_equals_scipy_counting_sort(monkeypatch, dtype, n_res):
    from fabric import adjacency
    rng = np.random.default_rng(8)
    rows = rng.integers(-1, n_res, (90_000, 4)).astype(dtype)  # above the previous 65,536-flow threshold
    got = adjacency._csc(rows, n_res)
    monkeypatch.setattr(adjacency, "_SMALL_SORT", 0)
    ref = adjacency._csc(rows, n_res)
    for g, r in zip(got, ref):
        np.testing.assert_array_equal(g, r)


def test_allocator_switch_is_opt_out_and_only_for_large_problems(monkeypatch):
    import subprocess
    import sys

    from fabric import allocator
    assert allocator.reuse_freed_memory(entries=allocator.MIN_ENTRIES - 1) is False or allocator._STATE.get("on")
    code = ("from fabric.allocator import reuse_freed_memory as r, MIN_ENTRIES as m, HINT_MIN_ENTRIES as hm; "
            "from numpy._core.multiarray import _set_madvise_hugepage as h; "
            "a = r(entries=m - 1); b = r(entries=m); hint_mid = h(True); h(hint_mid); "
            "print(a, b, r(entries=hm), hint_mid, h(True))")  # h returns the hint it replaces
    env = {k: v for k, v in __import__("os").environ.items() if k != "FABRIC_EMU_MALLOC"}
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, check=True).stdout
    on = sys.platform.startswith("linux") and __import__("platform").libc_ver()[0] == "glibc"
    default_hint = out.split()[3]  # numpy's own default (NUMPY_MADVISE_HUGEPAGE, the kernel's THP mode)
    # once on, it stays on; a very large problem also turns numpy's huge-page hint off (smaller ones keep it)
    assert out.split() == ["False", str(on), str(on), default_hint, "False"]
    env["FABRIC_EMU_MALLOC"] = "system"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, check=True).stdout
    assert out.split() == ["False", "False", "False", default_hint, default_hint]


@pytest.mark.parametrize("n,n_res", [(20_000, 50), (3_000, 2_500)])  # few long runs (slices), many short ones
def test_csc_run_copies_equal_the_stable_sort_reference(n, n_res):
    from fabric import adjacency
    rng = np.random.default_rng(9)
    rows = rng.integers(-1, n_res, (n, 3)).astype(np.int16)
    coef = rng.random((n, 3))
    indptr, indices, ecoef = adjacency._csc(rows, n_res, coef)
    # reference: entries ordered by (slot, column, flow), i.e. a stable sort of the column-major keys
    keys = (rows.T.astype(np.int64) + 1).ravel()
    order = np.argsort(keys, kind="stable")
    np.testing.assert_array_equal(indices, order % n)
    np.testing.assert_array_equal(ecoef, coef.T.ravel()[order])
    np.testing.assert_array_equal(indptr, np.r_[0, np.cumsum(np.bincount(keys, minlength=n_res + 1))])


def test_grouping_first_last_column_prefilter_keeps_the_classes():
    from fabric import FlowProblem
    from fabric.decompose import _row_keys, group_identical_flows
    rng = np.random.default_rng(12)
    for trial in range(30):
        F = int(rng.integers(3, 80))
        res = rng.integers(-1, 6, (F, 4))
        res[:, 0], res[:, 3] = 1, 2  # every row agrees on its first and last hop: the full hash decides
        if trial % 3 == 0:
            res[:, 0] = np.arange(F)  # unique first hop: dismissed by the prefilter
        size = rng.choice([1.0, 2.0], F)
        p = FlowProblem(capacity_Bps=np.full(F + 6, 1e9), res=res, size_bytes=size)
        got = group_identical_flows(p)
        _, first, inv = np.unique(_row_keys(p), return_index=True, return_inverse=True)
        if len(first) == F:
            assert got is None
            continue
        reduced, cls = got
        # flows share a class exactly when their full rows are equal
        np.testing.assert_array_equal(cls[:, None] == cls[None, :], inv.ravel()[:, None] == inv.ravel()[None, :])
        np.testing.assert_array_equal(reduced.multiplicity, np.bincount(cls).astype(float))


def test_two_tier_spray_without_the_empty_pod_columns_routes_the_same():
    planner, cf = _planner(policy="spray")
    router = planner.router
    rng = np.random.default_rng(13)
    n = cf.n_gpus
    src, dst = rng.integers(0, n, 3000), rng.integers(0, n, 3000)
    got = router.route(src, dst, policy="spray", pxn=True)
    look = router._clos_lookup()
    assert not look["pod_tier"]
    look["pod_tier"] = True  # the previous path: the spine-up / core-down columns written as -1, dropped later
    try:
        want = router.route(src, dst, policy="spray", pxn=True)
    finally:
        look["pod_tier"] = False
    np.testing.assert_array_equal(got.res, want.res)
    assert (got.weight is None) == (want.weight is None)
    if got.weight is not None:
        np.testing.assert_array_equal(got.weight, want.weight)
    np.testing.assert_allclose(got.latency_s, want.latency_s, rtol=1e-15)


def test_column_merge_prefix_rejection_keeps_the_merges(monkeypatch):
    from fabric import FlowProblem, reductions, to_problem
    from fabric.problem import _Prob
    planner, cf = _planner()
    n = cf.n_gpus
    src, dst = np.divmod(np.arange(n * n), n)
    keep = src != dst
    op = Collective("all_to_all", tuple(range(n)), 1 << 20)
    routed, _ = to_problem(planner.direct(op, src[keep], dst[keep], 1e6), planner.router)
    rng = np.random.default_rng(14)
    base = rng.integers(0, 50, 40_000)
    chain = np.stack([base, base + 50, (base * 7) % 50 + 100, (base * 7) % 50 + 150], axis=1)
    chain[30_000:, 3] = rng.integers(150, 200, 10_000)  # a function on the prefix only: the full check rejects it
    problems = [routed, FlowProblem(capacity_Bps=rng.uniform(1, 2, 250), res=chain, size_bytes=np.ones(40_000))]
    for p in problems:
        got = reductions._reduce_columns(_Prob(p))
        with monkeypatch.context() as m:
            m.setattr(reductions, "_function_on_prefix", lambda *a, **k: True)
            want = reductions._reduce_columns(_Prob(p))
        np.testing.assert_array_equal(got.res, want.res)
        np.testing.assert_array_equal(got.cap, want.cap)
        np.testing.assert_array_equal(got.rep, want.rep)
    assert got.res.shape[1] == 2  # columns 0, 1, 2 merged; 3 kept


@pytest.mark.parametrize("policy", ["ecmp", "spray"])
def test_route_table_without_prefill_equals_the_prefilled_one(monkeypatch, policy):
    from fabric.routing import Router

    def prefilled_grow(res, w, F, width, weighted):  # the previous table growth: every row pre-filled with -1
        new_res = np.full((F, width), -1, np.int32)
        new_w = np.zeros((F, width)) if (weighted or w is not None) else None
        if res is not None:
            new_res[:, :res.shape[1]] = res
            if new_w is not None:
                new_w[:, :res.shape[1]] = w if w is not None else np.where(res >= 0, 1.0, 0.0)
        return new_res, new_w

    # a failed spine: spraying lists weighted links (weighted chunks); chunks of NVLink-only, empty and
    # network flows have different widths, so the table grows and narrower chunks are padded
    cf = compile_with_failures(load_topology("gb300-nvl72", {"domains": "2", "scaleout": "quantum-x800"}),
                               fail=["spine 0"])
    rng = np.random.default_rng(15)
    n = cf.n_gpus
    half = n // 2
    nv = rng.integers(0, half - 1, 200)
    net = rng.integers(0, half, 300)
    src = np.concatenate([nv, net, nv, net[:100]])
    dst = np.concatenate([nv + 1, net + half, nv, net[:100] + half])  # NVLink, network, empty, network
    kw = dict(policy=policy, seed=1, pxn=policy == "ecmp")
    got = Router(cf, chunk_flows=100).route(src, dst, **kw)
    monkeypatch.setattr(Router, "_grow", staticmethod(prefilled_grow))
    want = Router(cf, chunk_flows=100).route(src, dst, **kw)
    np.testing.assert_array_equal(got.res, want.res)
    assert (got.weight is None) == (want.weight is None)
    if got.weight is not None:
        np.testing.assert_array_equal(got.weight, want.weight)
    np.testing.assert_array_equal(got.latency_s, want.latency_s)
