"""The scipy-free small-problem paths give the same arrays as the scipy paths they stand in for."""

import networkx as nx
import numpy as np

from fabric import maxmin, tables


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
    got = maxmin._csc(rows, 40, coef)
    monkeypatch.setattr(maxmin, "_SMALL_SORT", 0)
    ref = maxmin._csc(rows, 40, coef)
    for g, r in zip(got, ref):
        np.testing.assert_array_equal(g, r)
