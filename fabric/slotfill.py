"""Max-min filling when every coefficient is one factor per resource (epoch mode's unfolded weights).

Epoch mode keeps a transport's per-resource weights ``w_l`` (1/wire efficiency) as per-entry
coefficients (docs/flow-engine.md §1), so :func:`fabric.fill.fill` gathers the float64[n, h]
coefficient row of every flow it freezes: on a 1,024-GPU MoE dispatch that is a 50 MB table read
at random, as costly as the flows' resource rows.  When the coefficient of every entry is the
factor of its slot (:func:`slot_coefficients` checks it on the problem), :func:`fill` takes it from that small
per-slot table instead (``sw[res + 1]``): the same values in the same order, so the same floating-point
operations as :func:`fabric.fill.fill` and bit-identical results (rates, bottlenecks, remaining
capacities, rounds; ``tests/test_slotfill.py``).  The rounds themselves are those of
:func:`fabric.fill.fill` (module docstring there); the k x k algebra of a window is its
:func:`fabric.fill._window`.  Above the compiled fill's threshold the compiled fill runs instead
(its own bit-identical code, which also reads the slot table when the index has no coefficients).

Examples
--------
>>> import numpy as np
>>> from fabric import fill as fl
>>> res = np.array([[0, 1], [0, -1], [1, -1]], np.int16)
>>> w = np.array([[1.0, 2.0], [1.0, 0.0], [2.0, 0.0]])
>>> ix = fl.build_index(res, w, None, 2, None)
>>> sw = slot_coefficients(res, w, None, 2)
>>> sw.tolist()
[1.0, 1.0, 2.0]
>>> cap = np.array([4.0, 6.0])
>>> a = fill(ix, sw, cap, np.full(3, fl.ALIVE, np.uint8), fl.coef_sums(ix, None))
>>> b = fl.fill(ix, cap, np.full(3, fl.ALIVE, np.uint8), fl.coef_sums(ix, None))
>>> a.rates().tolist() == b.rates().tolist(), a.rates().tolist()
(True, [1.5, 2.5, 1.5])
"""

from __future__ import annotations

import numpy as np

from fabric import fill as _fl

__all__ = ["slot_coefficients", "fill", "lean_sub_index"]

_INF = np.inf


def slot_coefficients(res: np.ndarray, weight: np.ndarray | None, mult: np.ndarray | None,
                      n_res: int, compiled: bool = False) -> np.ndarray | None:
    """float64[R+1]: ``sw[l + 1]`` is the weight of every entry of resource ``l``, or None.

    The table gives the coefficients of every index :func:`fabric.fill.build_index` builds
    over rows of ``res`` (``coef[f, j] == sw[res[f, j] + 1]``, 1.0 on the padding, slot 0), provided
    there are no multiplicities and no row names a resource twice (merged entries add up); None
    otherwise, or when two entries of one resource have different weights.  One pass a hop column
    at a time (``compiled``: one pass over the rows, :func:`fabric.epoch_kernels.slot_table`, the same table).
    """
    if weight is None or weight.ndim != 2 or mult is not None or res.shape[0] == 0:
        return None
    from fabric.adjacency import _has_duplicates

    if compiled:
        from fabric import epoch_kernels  # imports numba

        sw, ok = epoch_kernels.slot_table(res, weight, n_res)
        return sw if ok and not _has_duplicates(res) else None
    sw = np.full(n_res + 1, np.nan)
    cols = []
    for j in range(res.shape[1]):
        ok = res[:, j] >= 0
        rj = res[ok, j]
        cols.append((ok, rj))
        sw[np.add(rj, 1, dtype=np.intp)] = weight[ok, j]
    for j, (ok, rj) in enumerate(cols):
        if not np.array_equal(sw[np.add(rj, 1, dtype=np.intp)], weight[ok, j]):
            return None
    if _has_duplicates(res):
        return None
    sw[0] = 1.0  # the padding's coefficient in an index
    np.copyto(sw, 1.0, where=np.isnan(sw))  # resources no flow crosses (never read)
    return sw


def lean_sub_index(ix, sel: np.ndarray, compiled: bool = False):
    """:func:`fabric.fill.sub_index` without the per-entry coefficients (for :func:`fill`, which takes
    them from the slot table): the same lists in the same order, the same ``ceps``.  ``compiled``: the
    compiled CSC build (:func:`fabric.index_kernels.csc`, the same arrays), for a caller that runs compiled
    kernels already (numba loaded)."""
    from fabric.adjacency import _csc

    rows = np.take(ix.res, sel, axis=0)
    if compiled and rows.shape[0]:
        from fabric import kernels as _kernels

        indptr, indices = _kernels.index().csc(rows, ix.n_res)
    else:
        indptr, indices = _csc(rows, ix.n_res)
    return _fl.Index(None, rows, None, indptr, indices, ix.n_res, ix.ceps, None)


def fill(ix, sw: np.ndarray, cap: np.ndarray, state: np.ndarray, cnt: np.ndarray,
         fixed_load: np.ndarray | None = None, min_entries: int | None = None):
    """:func:`fabric.fill.fill` on an index whose coefficients are ``sw[res + 1]`` (bit-identical).

    ``ix`` may omit its coefficient arrays (:func:`lean_sub_index`); ``sw`` comes from
    :func:`slot_coefficients` of the problem whose rows ``ix`` indexes. The rounds are
    :func:`fabric.fill.fill`'s, reading the coefficients from ``sw``; above the compiled fill's threshold
    (``min_entries`` adjacency entries, :data:`fabric.fill.FILL_MIN_ENTRIES` if None) the compiled fill runs
    instead, on the index's own coefficients or, without them, on ``sw`` (the same bits either way).
    """
    return _fl.fill(ix, cap, state, cnt, fixed_load, sw=sw, min_entries=min_entries)
