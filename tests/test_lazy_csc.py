"""The one-solve path's lazily placed CSC: every list read is the eager build's, and results are the same."""

import numpy as np

from fabric import fill as fl
from fabric.adjacency import _build_index, _csc
from fabric.engine import FlowProblem, simulate


def _rows(seed: int, n: int = 3000, h: int = 4, r: int = 90) -> np.ndarray:
    rng = np.random.default_rng(seed)
    rows = np.stack([rng.integers(j * r // h, (j + 1) * r // h, n) for j in range(h)], axis=1).astype(np.int16)
    rows[rng.random((n, h)) < 0.1] = -1  # padding
    rows[:, 0] = np.sort(rows[:, 0])  # one sorted column, as an all-to-all's source links
    return rows


def test_lazy_lists_equal_eager_lists():
    rows = _rows(1)
    indptr, indices = _csc(rows, 90)
    ip2, ind2, pend = _csc(rows, 90, lazy=True)
    assert np.array_equal(indptr, ip2)
    for slot in (5, 40, 70, 1):
        pend.ensure(slot)
        assert np.array_equal(ind2[ip2[slot]:ip2[slot + 1]], indices[indptr[slot]:indptr[slot + 1]])
    assert pend.todo  # some column was not needed for these slots
    pend.all()
    assert not pend.todo
    assert np.array_equal(ind2, indices)


def test_lazy_fill_is_the_eager_fill():
    rows = _rows(2)
    cap = np.random.default_rng(3).uniform(1.0, 5.0, 90)
    outs = []
    for lazy in (False, True):
        ix = _build_index(rows, None, None, 90, None, lazy=lazy)
        assert (ix.pending is not None) == lazy
        st = np.full(ix.size, fl.ALIVE, dtype=np.uint8)
        outs.append(fl.fill(ix, cap, st, fl.coef_sums(ix, None), compiled=False))
    assert np.array_equal(outs[0].bneck, outs[1].bneck)
    assert np.array_equal(outs[0].level, outs[1].level)


def test_one_solve_matches_exact_mode():
    rows = _rows(4).astype(np.int32)
    cap = np.random.default_rng(5).uniform(1.0, 5.0, 90)
    p = FlowProblem(capacity_Bps=cap, res=rows, size_bytes=np.full(rows.shape[0], 8.0))
    a, b = simulate(p), simulate(p, mode="exact")
    assert a.mode_used == "one-solve"
    np.testing.assert_allclose(a.finish_s, b.finish_s, rtol=1e-9)
