"""The numpy one-solve path's per-column slot counts: what they replace gives the same arrays.

``fabric.reductions.column_counts`` counts every hop column once (sorted columns from their runs); the column
merge reads presence from the counts and verifies sorted column pairs from where they change, and the index
build takes its CSC slot counts from them and skips the duplicate test when no resource is in two columns. Every comparison here is against the path without them (``np.array_equal``).
"""

import numpy as np
import pytest

from fabric import adjacency, reductions
from fabric.arrays import extremes
from fabric.engine import FlowProblem, simulate
from fabric.problem import _Prob


def _table(rng, F, R, dtype):
    """Columns: sorted (by source), unsorted with padding, runs of increasing ids, sorted with padding first."""
    src = np.sort(rng.integers(0, R // 4, F))
    mid = np.where(rng.random(F) < 0.2, -1, rng.integers(R // 4, R // 2, F))
    q = 3 * R // 4
    runs = np.concatenate([np.sort(rng.choice(np.arange(R // 2, q), 7, replace=False)) for _ in range(F // 7 + 1)])
    padsorted = np.sort(np.where(rng.random(F) < 0.1, -1, rng.integers(q, R, F)))
    runs = runs[:F]
    return np.stack([src, mid, runs, padsorted], axis=1).astype(dtype)


@pytest.mark.parametrize("dtype,R", [(np.int16, 64), (np.int32, 300), (np.int32, 70_000)])
def test_column_counts_equal_one_bincount_per_column(dtype, R):
    rng = np.random.default_rng(3)
    res = _table(rng, 700, R, dtype)
    changes = [None] * 4
    got = reductions.column_counts(res, R, changes)
    for j in range(4):
        c = res[:, j].astype(np.int64)
        assert np.array_equal(got[j], np.bincount(c + 1, minlength=R + 1))
        is_sorted = bool((np.diff(c) >= 0).all())
        assert (changes[j] is not None) == is_sorted
        if is_sorted:
            assert np.array_equal(changes[j], c[1:] != c[:-1])
    assert [changes[j] is not None for j in range(4)] == [True, False, False, True]
    assert np.array_equal(reductions.column_counts(res, R), got)  # the list is optional


def test_csc_from_given_counts_equals_its_own():
    rng = np.random.default_rng(4)
    res = _table(rng, 900, 80, np.int16)
    counts = reductions.column_counts(res, 80)
    for coef in (None, rng.random(res.shape)):
        want = adjacency._csc(res, 80, coef)
        got = adjacency._csc(res, 80, coef, counts=counts)
        for a, b in zip(got, want):
            assert a.dtype == b.dtype and np.array_equal(a, b)


def test_duplicate_test_skipped_only_when_no_resource_is_in_two_columns(monkeypatch):
    rng = np.random.default_rng(5)
    res = _table(rng, 350, 80, np.int16)  # the four columns use disjoint resources
    counts = reductions.column_counts(res, 80)
    want = adjacency._build_index(res, None, None, 80, None)

    def no_test(rows):
        raise AssertionError("the duplicate test ran")

    monkeypatch.setattr(adjacency, "_has_duplicates", no_test)
    got = adjacency._build_index(res, None, None, 80, None, counts)
    assert np.array_equal(got.indptr, want.indptr) and np.array_equal(got.indices, want.indices)
    monkeypatch.undo()
    # a row naming one resource twice (column 1 repeats column 0's): the test runs and merges it
    dup = res.copy()
    dup[5, 1] = dup[5, 0]
    counts = reductions.column_counts(dup, 80)
    got = adjacency._build_index(dup, None, None, 80, None, counts)
    want = adjacency._build_index(dup, None, None, 80, None)
    assert got.coef is not None and np.array_equal(got.coef, want.coef)
    assert np.array_equal(got.res, want.res) and np.array_equal(got.indices, want.indices)
    assert got.res[5, 1] == -1 and got.coef[5, 0] == 2.0


def _twins(rng, F, broken=None):
    """Host link and NIC port beside it (columns 0 and 1, both sorted by source), then two more hops."""
    host = np.sort(rng.integers(0, 20, F))
    nic = host + 20
    if broken == "not-a-function":  # one host link on two NIC ports (both columns still sorted)
        k = int(np.flatnonzero(host[1:] == host[:-1])[0]) + 1
        nic[k:] = np.where(host[k:] == host[k], nic[k:] + 1, nic[k:])
        nic = np.maximum.accumulate(nic)
    if broken == "not-one-to-one":  # two host links on one NIC port
        nic = np.where(host == 1, 20, nic)
    up = rng.integers(40, 60, F)
    down = np.where(up % 3 == 0, -1, rng.integers(60, 80, F))
    return np.stack([host, nic, up, down], axis=1).astype(np.int16)


@pytest.mark.parametrize("broken", [None, "not-a-function", "not-one-to-one"])
def test_sorted_twin_columns_merge_as_the_general_test_decides(broken):
    rng = np.random.default_rng(6)
    res = _twins(rng, 500, broken)
    assert (np.diff(res[:, 0]) >= 0).all() and (np.diff(res[:, 1]) >= 0).all()
    cap = rng.choice([1.0, 2.0, 4.0], 80)
    perm = rng.permutation(len(res))  # the same rows out of order: no column sorted, the general test
    got = reductions._reduce_columns(_Prob(FlowProblem(capacity_Bps=cap, res=res, size_bytes=np.ones(500))))
    ref = reductions._reduce_columns(_Prob(FlowProblem(capacity_Bps=cap, res=res[perm], size_bytes=np.ones(500))))
    assert got.res.shape[1] == ref.res.shape[1] == (3 if broken is None else 4)
    assert np.array_equal(got.res[perm], ref.res) and np.array_equal(got.rep, ref.rep)
    assert np.array_equal(got.cap, ref.cap)
    assert np.array_equal(got.counts, reductions.column_counts(got.res, 80))


def _six_hops(n, seed):
    """A leaf-spine all-to-all with a NIC port beside each host link (up and down), as the router's paths
    have: host up, NIC up, leaf -> spine, spine -> leaf, NIC down, host down (no resource in two columns)."""
    from synthetic import leaf_spine

    cap, res = leaf_spine(n, hpl=8, spines=4, seed=seed)
    R0 = cap.shape[0]
    inter = res[:, 3] >= 0  # (intra-leaf rows list the down link second)
    down = np.where(inter, res[:, 3], res[:, 1])
    up, across = np.where(inter, res[:, 1], -1), np.where(inter, res[:, 2], -1)
    res = np.stack([res[:, 0], res[:, 0] + R0, up, across, down + R0, down], axis=1)
    cap = np.r_[cap, np.random.default_rng(7).choice([0.5, 1.0, 2.0], 2 * n)]
    return cap, res.astype(np.int16)


def test_a_fat_tree_all_to_all_solves_to_the_same_bits_with_and_without_the_counts(monkeypatch):
    from fabric import engine

    cap, res = _six_hops(48, 2)
    p = FlowProblem(capacity_Bps=cap, res=res,
                    size_bytes=np.broadcast_to(np.array([3e6]), (res.shape[0],)), latency_s=np.full(res.shape[0], 1e-6))
    assert reductions._reduce_columns(_Prob(p)).res.shape[1] == 4  # both twins merged
    monkeypatch.setenv("FABRIC_EMU_KERNELS", "numpy")
    got = simulate(p)
    real = engine._one_solve
    monkeypatch.setattr(engine, "_one_solve", lambda pr, cap, rep, counts=None, disjoint=False, pairs=None: real(pr, cap, rep))
    want = simulate(p)
    assert got.mode_used == want.mode_used == "one-solve" and got.rounds == want.rounds
    for f in ("start_s", "transfer_end_s", "finish_s", "resource_bytes", "resource_busy_s"):
        assert np.array_equal(getattr(got, f), getattr(want, f))


def test_extremes_read_a_broadcast_value_once():
    a = np.broadcast_to(np.array([4.0]), (10,))
    assert [float(v) for v in extremes(a)] == [4.0, 4.0]
    b = np.array([3.0, np.nan, 1.0])
    lo, hi = extremes(b)
    assert np.isnan(lo) and np.isnan(hi)  # as min / max
    assert [float(v) for v in extremes(np.array([2.0, -1.0, 5.0]))] == [-1.0, 5.0]


def test_compiled_path_skips_the_duplicate_test_on_disjoint_columns(monkeypatch):
    """The compiled column merge's presence bits prove the kept columns disjoint: no duplicate pass, and the
    same bits as the numpy path."""
    pytest.importorskip("numba")
    from fabric import index_kernels, kernels

    cap, res = _six_hops(32, 1)
    p = FlowProblem(capacity_Bps=cap, res=res, size_bytes=np.full(res.shape[0], 2e6))
    monkeypatch.setenv("FABRIC_EMU_KERNELS", "numpy")
    want = simulate(p)
    monkeypatch.setenv("FABRIC_EMU_KERNELS", "auto")
    monkeypatch.setattr(kernels, "MIN_ENTRIES_INDEX", 0)
    monkeypatch.setattr(kernels, "MIN_ENTRIES_INDEX_LOADED", 0)
    assert reductions._reduce_columns(_Prob(p)).disjoint

    def no_test(rows):
        raise AssertionError("the duplicate test ran")

    monkeypatch.setattr(index_kernels, "has_duplicates", no_test)
    got = simulate(p)
    for f in ("finish_s", "transfer_end_s", "resource_bytes", "resource_busy_s"):
        assert np.array_equal(getattr(got, f), getattr(want, f))
    # a row that names one resource twice: not disjoint, the test runs
    res2 = res.copy()
    res2[3, 1] = res2[3, 0]
    assert not reductions._reduce_columns(_Prob(FlowProblem(capacity_Bps=cap, res=res2,
                                                            size_bytes=np.ones(res.shape[0])))).disjoint
