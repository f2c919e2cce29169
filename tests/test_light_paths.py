"""The scipy-free small-problem paths give the same arrays as the scipy paths they stand in for."""

import networkx as nx
import numpy as np

from fabric import adjacency, tables


def test_numpy_bfs_equals_scipy_bfs(monkeypatch):
    rng = np.random.default_rng(5)
    for n, m in ((30, 60), (80, 400), (50, 20)):  # the last one disconnected
        a, b = rng.integers(0, n, m), rng.integers(0, n, m)
        src = np.unique(rng.integers(0, n, 7))
        got = tables._hop_distances(a, b, n, src)
        monkeypatch.setattr(tables, "_NUMPY_BFS_MAX", 0)
        ref = tables._hop_distances(a, b, n, src)
        monkeypatch.undo()
        np.testing.assert_array_equal(got, ref)
        g = nx.DiGraph()
        g.add_nodes_from(range(n))
        g.add_edges_from(zip(a.tolist(), b.tolist()))
        for i, s in enumerate(src):
            d = nx.single_source_shortest_path_length(g, int(s))
            want = np.full(n, tables._INF, np.int32)
            want[list(d)] = list(d.values())
            np.testing.assert_array_equal(got[i], want)


def test_small_csc_equals_the_counting_sort(monkeypatch):
    rng = np.random.default_rng(2)
    rows = rng.integers(-1, 40, (500, 3))
    coef = rng.random((500, 3))
    got = adjacency._csc(rows, 40, coef)
    monkeypatch.setattr(adjacency, "_SMALL_SORT", 0)
    ref = adjacency._csc(rows, 40, coef)
    for g, r in zip(got, ref):
        np.testing.assert_array_equal(g, r)


def _problem(per_resource: bool, sizes_equal: bool):
    from fabric import FlowProblem
    rng = np.random.default_rng(4)
    F, h, R = 400, 4, 30
    res = np.stack([rng.choice(R, h, replace=False) for _ in range(F)])
    res[rng.random((F, h)) < 0.1] = -1
    lw = rng.uniform(1.0, 2.0, R)
    w = lw[np.maximum(res, 0)]
    if not per_resource:
        w[0, 0] *= 1.5
    size = np.full(F, 1e6) if sizes_equal else rng.uniform(1e5, 1e6, F)
    return FlowProblem(capacity_Bps=rng.uniform(1e9, 4e9, R), res=res, size_bytes=size, weight=w,
                       resource_weight=rng.uniform(1.0, 1.2, R))


def test_per_resource_entry_weights_folded_equal_the_weighted_solve(monkeypatch):
    from fabric import simulate
    from fabric.problem import _Prob
    for per_resource in (True, False):
        for mode, equal in (("auto", True), ("exact", False)):
            p = _problem(per_resource, equal)
            got = simulate(p, mode=mode)
            with monkeypatch.context() as m:
                m.setattr(_Prob, "fold_weight", lambda self: None)
                ref = simulate(p, mode=mode)
            np.testing.assert_allclose(got.finish_s, ref.finish_s, rtol=1e-9)
            np.testing.assert_allclose(got.resource_bytes, ref.resource_bytes, rtol=1e-9)
            np.testing.assert_allclose(got.resource_busy_s, ref.resource_busy_s, rtol=1e-9)
            assert got.lower_bound_s == ref.lower_bound_s or abs(got.lower_bound_s / ref.lower_bound_s - 1) < 1e-9


def test_uniform_nic_factor_as_resource_scale_equals_the_entry_weights():
    from collectives import Collective, planner_for
    from collectives.calibration import nic_p2p_factor
    from fabric import Router, compile_with_failures
    from topologies import load_topology

    cf = compile_with_failures(load_topology("fat-tree", {"hosts": "32", "radix": "8", "link": "400Gb/s"}), (), ())
    planner = planner_for(Router(cf), policy="ecmp", seed=1)
    n = cf.n_gpus
    src, dst = np.divmod(np.arange(n * n), n)
    keep = src != dst
    op = Collective("all_to_all", tuple(range(n)), 1 << 20)
    fs = planner.direct(op, src[keep], dst[keep], 1e6)
    assert fs.weight is None
    routed = planner.routed(src[keep], dst[keep], 1e6, kind="p2p", protocol="Simple", latency_s=0.0,
                            label="x", pxn=True, salt=np.zeros(keep.sum(), np.int64))
    f = nic_p2p_factor(planner.nic_connections(routed.res), "nccl")
    assert (f < 1).any()
    want = np.where(planner._on_nic(routed.res), 1.0 / f[:, None], 1.0) * routed.effective_weight()
    np.testing.assert_array_equal(fs.res, routed.res)
    np.testing.assert_allclose(fs.effective_weight(), want, rtol=1e-15)
