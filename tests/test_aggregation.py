"""Exact problem reductions: disjoint size classes, node-level (PXN) aggregation of all-to-all."""

import numpy as np
import pytest

from collectives import Collective, run
from fabric import Router, compile_fabric
from fabric.decompose import independent_size_classes, simulate_split
from fabric.engine import FlowProblem, simulate
from topologies import build


def test_disjoint_size_classes_split_exactly():
    rng = np.random.default_rng(0)
    # two groups of flows on disjoint resources, each of one size
    res = np.concatenate([rng.integers(0, 10, (40, 3)), rng.integers(10, 20, (30, 3))]).astype(np.int32)
    sizes = np.r_[np.full(40, 3.0), np.full(30, 7.0)]
    p = FlowProblem(capacity_Bps=rng.uniform(1, 5, 20), res=res, size_bytes=sizes)
    assert independent_size_classes(p) is not None
    split = simulate_split(p)
    exact = simulate(p, mode="exact")
    assert np.allclose(split.finish_s, exact.finish_s, rtol=1e-9)
    assert np.allclose(split.resource_bytes, exact.resource_bytes)
    assert split.makespan_s == pytest.approx(exact.makespan_s, rel=1e-9)


def test_shared_resources_are_not_split():
    p = FlowProblem(capacity_Bps=np.ones(2), res=np.array([[0, 1], [1, -1]]), size_bytes=np.array([1.0, 2.0]))
    assert independent_size_classes(p) is None


@pytest.mark.parametrize("preset, ov", [("hgx-h100", {"domains": 4, "scaleout": "quantum-2"}),
                                        ("gb200-nvl72", {"domains": 2, "scaleout": "quantum-x800",
                                                         "gpus_per_domain": 16})])
@pytest.mark.parametrize("policy", ["ecmp", "spray"])
def test_node_aggregated_all_to_all_matches_per_pair_pxn(preset, ov, policy):
    r = Router(compile_fabric(build(preset, ov)))
    n = r.cf.n_gpus
    size = 1 << 28
    flat = run(r, [Collective("all_to_all", tuple(range(n)), size, options={"aggregate": "none"})],
               policy=policy, report=True)[0]
    agg = run(r, [Collective("all_to_all", tuple(range(n)), size, options={"aggregate": "node"})],
              policy=policy, report=True)[0]
    # bytes on every link are identical; the time differs only by the NVLink hop's path latency
    assert np.allclose(agg.report.link_bytes, flat.report.link_bytes, rtol=1e-9, atol=1.0)
    assert agg.time_s == pytest.approx(flat.time_s, abs=2e-6)
    assert agg.lower_bound_s == pytest.approx(flat.lower_bound_s, rel=1e-9)


def test_identical_flows_merge_into_classes_exactly():
    from fabric.decompose import group_identical_flows
    rng = np.random.default_rng(5)
    base = rng.integers(0, 12, (30, 3)).astype(np.int32)
    res = np.concatenate([base, base[:10], base[:10]])          # 20 duplicated flows
    sizes = np.r_[rng.uniform(1, 5, 30), np.zeros(20)]
    sizes[30:40] = sizes[:10]
    sizes[40:50] = sizes[:10]
    p = FlowProblem(capacity_Bps=rng.uniform(1, 4, 12), res=res, size_bytes=sizes)
    reduced, cls = group_identical_flows(p)
    assert len(reduced.size_bytes) == 30 and reduced.multiplicity[:10].tolist() == [3.0] * 10
    exact = simulate(p, mode="exact")
    merged = simulate_split(p, mode="exact")
    assert np.allclose(merged.finish_s, exact.finish_s, rtol=1e-9)
    assert np.allclose(merged.resource_bytes, exact.resource_bytes, rtol=1e-12)


def test_tree_all_reduce_merges_its_duplicate_chain_flows():
    r = Router(compile_fabric(build("hgx-h100")))
    [res] = run(r, [Collective("all_reduce", tuple(range(8)), 1 << 30, "tree")])
    assert res.time_s == pytest.approx(res.analytic_time_s, rel=2e-5, abs=1e-6)


def _group_reference(p):
    """The previous grouping: np.unique over the byte rows of every flow (first-appearance order)."""
    from fabric.decompose import _row_keys
    keys = _row_keys(p)
    uniq, first, inv = np.unique(keys, return_index=True, return_inverse=True)
    order = np.argsort(first)
    rank = np.empty_like(order)
    rank[order] = np.arange(len(order))
    return rank[inv.ravel()], first[order]


@pytest.mark.parametrize("collide", [False, True])
def test_grouping_matches_the_byte_row_reference(monkeypatch, collide):
    from fabric import decompose
    if collide:  # every hash equal: the exact comparison alone must decide
        monkeypatch.setattr(decompose, "_row_hash", lambda p: np.zeros(len(p.size_bytes), np.uint64))
    rng = np.random.default_rng(11)
    for trial in range(20):
        F = int(rng.integers(2, 60))
        res = rng.integers(-1, 4, (F, 3)).astype(np.int32)
        w = np.where(res >= 0, rng.choice([0.5, 1.0], (F, 3)), 0.0) if trial % 2 else None
        p = FlowProblem(capacity_Bps=np.ones(4), res=res, weight=w, size_bytes=rng.choice([1.0, 2.0], F),
                        latency_s=rng.choice([0.0, 1e-6], F))
        ref_cls, ref_rep = _group_reference(p)
        got = decompose.group_identical_flows(p)
        if len(ref_rep) == F:
            assert got is None
            continue
        reduced, cls = got
        assert cls.tolist() == ref_cls.tolist()
        assert reduced.res.tolist() == res[ref_rep].tolist()
        assert reduced.multiplicity.tolist() == np.bincount(ref_cls).astype(float).tolist()


def test_all_to_all_has_no_identical_flows_and_skips_grouping():
    from fabric.decompose import group_identical_flows
    from fabric.flowset import FlowSet, to_problem
    r = Router(compile_fabric(build("fat-tree", {"hosts": 32, "radix": 8})))
    src = np.repeat(np.arange(32), 31)
    dst = np.tile(np.arange(31), 32)
    dst += dst >= src
    p, _ = to_problem(FlowSet.from_routes(r.route(src, dst), 1e6), r)
    assert group_identical_flows(p) is None


def test_ends_in_increasing_order_prove_distinct_flows_without_hashing(monkeypatch):
    from fabric import decompose
    from fabric.flowset import FlowSet, to_problem
    r = Router(compile_fabric(build("fat-tree", {"hosts": 32, "radix": 8})))
    src = np.repeat(np.arange(32), 31)
    dst = np.tile(np.arange(31), 32)
    dst += dst >= src
    p, _ = to_problem(FlowSet.from_routes(r.route(src, dst), 1e6), r)
    assert decompose._ends_increasing(np.asarray(p.res), len(p.capacity_Bps))

    def no_hash(*a, **k):
        raise AssertionError("hashed although the ends proved the flows distinct")
    monkeypatch.setattr(decompose, "_mix_hash", no_hash)
    assert decompose.group_identical_flows(p) is None
    # the same flows in another order: no proof from the order, the hash decides (still nothing to merge)
    monkeypatch.undo()
    perm = np.random.default_rng(2).permutation(len(src))
    q, _ = to_problem(FlowSet.from_routes(r.route(src[perm], dst[perm]), 1e6), r)
    assert not decompose._ends_increasing(np.asarray(q.res), len(q.capacity_Bps))
    assert decompose.group_identical_flows(q) is None


def test_the_ends_proof_never_claims_distinct_rows_that_repeat():
    from fabric.decompose import _ends_increasing, _row_keys
    rng = np.random.default_rng(7)
    for trial in range(200):
        F = int(rng.integers(2, 40))
        res = rng.integers(-1, 3, (F, int(rng.integers(1, 4)))).astype(rng.choice([np.int16, np.int32, np.int64]))
        if trial % 2:  # sorted by (first, last) hop: the proof applies when those pairs are distinct
            res = res[np.lexsort((res[:, -1], res[:, 0]))]
        p = FlowProblem(capacity_Bps=np.ones(3), res=res, size_bytes=np.ones(F))
        distinct = len(np.unique(_row_keys(p))) == F
        pairs = len({(int(a), int(b)) for a, b in zip(res[:, 0], res[:, -1])}) == F
        got = _ends_increasing(res, 3)
        assert not got or (distinct and pairs)
        if trial % 2:
            assert got == pairs
