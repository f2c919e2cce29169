"""The resource -> flow adjacency of the max-min solver: the index over a subset of flows and its build.

Internal resource "slots": slot 0 collects the padding entries (-1) and is never a bottleneck; slot
``l + 1`` is resource ``l``. :func:`_build_index` merges repeated resources of a flow, folds per-flow
weights and multiplicities into coefficients, and lists per slot the flows crossing it (a CSC; within a
slot by hop column, then by flow: numpy's radix argsort up to :data:`_SMALL_SORT` flows, scipy's counting sort above, or the compiled
build of :mod:`fabric.index_kernels` on large problems, the same arrays). :mod:`fabric.fill` fills on it.

Examples
--------
>>> import numpy as np
>>> ix = _build_index(np.array([[0, 1], [1, -1]], np.int32), None, None, 2, None)
>>> ix.indptr.tolist(), ix.indices.tolist()   # slot 0: the padding; resource 1: column 0 before column 1
([0, 1, 2, 4], [1, 0, 1, 0])
"""

from __future__ import annotations

import numpy as np

from fabric import kernels as _kernels

__all__ = ["Index", "build_index", "sub_index", "overlapping_pairs"]


class _Index:
    """Resource -> flow adjacency over a subset of the flows (internal).

    Local flow ``i`` is global flow ``flows[i]`` (``flows is None``: identity).
    ``res`` holds the resource ids of the local flows (-1 padding, unshifted);
    ``indptr`` / ``indices`` list, per slot, the local flows crossing it (CSC,
    sorted by flow).  ``coef`` is ``None`` (all coefficients 1), float64[n]
    (per flow) or float64[n, h] (per entry); in the last case ``ecoef`` holds
    the coefficient of every CSC entry (aligned with ``indices``).
    """

    __slots__ = ("flows", "res", "coef", "indptr", "indices", "n_res", "ceps", "ecoef", "pending")

    def __init__(self, flows, res, coef, indptr, indices, n_res, ceps, ecoef=None, pending=None):
        self.flows = flows
        self.res = res
        self.coef = coef
        self.indptr = indptr
        self.indices = indices
        self.n_res = n_res
        self.ceps = ceps
        self.ecoef = ecoef
        #: None, or the columns not yet placed in ``indices`` (:class:`_Pending`): read a slot's list only
        #: after ``pending.ensure`` of that slot
        self.pending = pending

    @property
    def size(self) -> int:
        return int(self.res.shape[0])

    def nbytes(self) -> int:
        c = 0 if self.coef is None else self.coef.nbytes
        c += 0 if self.ecoef is None else self.ecoef.nbytes
        return int(self.indices.nbytes + self.indptr.nbytes + c + (0 if self.flows is None else self.res.nbytes))


#: Columns of at most this many flows are ordered by a stable argsort instead of scipy's counting sort: with
#: 16-bit keys numpy's stable argsort is a radix sort, 2-4x slower than scipy's counting sort per column
#: but it spares the ~0.15-0.3 s import of scipy.sparse, which a 1,024-GPU all-to-all (1 M flows) needs
#: for nothing else.
_SMALL_SORT = 1 << 21


def _csc(rows: np.ndarray, n_res: int, coef2d: np.ndarray | None = None, counts: np.ndarray | None = None,
         lazy: bool = False):
    """(indptr, indices[, ecoef]) of the slot -> local-flow incidence of ``rows``.

    One O(n) counting sort (scipy's CSR -> CSC) per hop column, which keeps
    the scatter cache-friendlier than one sort over all entries, and gives the
    column's slot counts with it (the sorted columns, h x n ids, live until
    they are placed); small columns are sorted by numpy's stable argsort and
    counted by a bincount.  Each column's runs are written straight to their
    place in the output.  Within a slot, entries are ordered by column, then by flow.  With ``coef2d`` (float64[n, h]) the
    coefficient of every entry is returned too, in the same order. ``counts`` (int64[h, n_res + 1]): the
    entries of each column per slot when the caller has them (:func:`fabric.reductions.column_counts`).
    """
    n, h = rows.shape
    nnz = n * h
    r1 = n_res + 1
    idx_t = np.int32 if nnz < 2**31 - 1 else np.int64
    if nnz == 0:
        empty = (np.zeros(r1 + 1, dtype=idx_t), np.zeros(0, dtype=idx_t))
        return empty if coef2d is None else empty + (np.zeros(0),)
    if _kernels.use_index(nnz):
        return _kernels.index().csc(rows, n_res, coef2d)
    small = n <= _SMALL_SORT
    # entries per (slot, column), then where each column's run of a slot starts in the output; large columns
    # are sorted first (scipy's counting sort gives each column's slot counts with the order)
    given = counts is not None and small
    if not given:
        counts = np.zeros((h, r1), dtype=np.int64)
    sorted_cols = []
    if given:
        pass
    elif small:
        for j in range(h):
            counts[j] = np.bincount(np.add(rows[:, j], 1, dtype=np.intp), minlength=r1)
    else:
        import scipy.sparse as sp  # large columns: scipy's O(n) counting sort (and its import time)
        ones = np.ones(n, dtype=np.bool_)
        iptr = np.arange(n + 1, dtype=idx_t)
        for j in range(h):
            csc = sp.csr_array((ones, np.add(rows[:, j], 1, dtype=idx_t), iptr), shape=(n, r1)).tocsc()
            counts[j] = np.diff(csc.indptr)
            sorted_cols.append(csc.indices)
            del csc
    indptr = np.zeros(r1 + 1, dtype=idx_t)
    np.cumsum(counts.sum(axis=0), out=indptr[1:])
    start = indptr[:-1].astype(np.int64) + np.cumsum(counts, axis=0) - counts  # [j, slot]
    indices = np.empty(nnz, dtype=idx_t)
    ecoef = None if coef2d is None else np.empty(nnz)
    if lazy and small and coef2d is None:
        # each column is ordered and placed when a slot it crosses is first read (:class:`_Pending`)
        return indptr, indices, _Pending(rows, counts, start, indices, r1, idx_t)
    for j in range(h):
        _place(rows, j, counts[j], start[j], indices, ecoef, coef2d, small, sorted_cols, r1, idx_t)
    return (indptr, indices) if coef2d is None else (indptr, indices, ecoef)


class _Pending:
    """The columns of a CSC not yet placed in ``indices`` (internal; :func:`_csc` with ``lazy``).

    :meth:`ensure` places every column that crosses one of the given slots, exactly as the eager build
    does: a slot's list is then the one the eager build gives. A fill that reads only the lists of its
    candidate slots skips the sorts of columns none of whose slots is ever a candidate (the spine links of
    a one-solve all-to-all whose bottlenecks are host links).
    """

    __slots__ = ("rows", "counts", "start", "indices", "r1", "idx_t", "todo")

    def __init__(self, rows, counts, start, indices, r1, idx_t):
        self.rows, self.counts, self.start = rows, counts, start
        self.indices, self.r1, self.idx_t = indices, r1, idx_t
        self.todo = list(range(rows.shape[1]))

    def ensure(self, slots) -> None:
        """Place the columns with entries on any of ``slots`` (int array or int)."""
        if self.todo:
            self._take([j for j in self.todo if self.counts[j, slots].any()])

    def all(self) -> None:
        """Place every column left."""
        self._take(list(self.todo))

    def _take(self, cols) -> None:
        for j in cols:
            self.todo.remove(j)
            _place(self.rows, j, self.counts[j], self.start[j], self.indices, None, None, True, [], self.r1,
                   self.idx_t)


def _place(rows, j, cj, start_j, indices, ecoef, coef2d, small, sorted_cols, r1, idx_t) -> None:
    """Order column ``j`` of ``rows`` by slot (stably) and write its runs to their places in ``indices``."""
    n = rows.shape[0]
    if not small:
        by_slot, sorted_cols[j] = sorted_cols[j], None
    else:  # the same order: flows by slot, stably (no scipy import on small problems)
        if r1 <= 1 << 16:  # 16-bit keys (a radix sort); -1 wraps to 65535, + 1 to 0: the padding slot
            kj = np.add(rows[:, j], 1, dtype=np.uint16, casting="unsafe")
        else:
            kj = np.add(rows[:, j], 1, dtype=idx_t)
        by_slot = np.argsort(kj, kind="stable")  # (intp: cast to idx_t as it is placed)
        del kj
    cv = None if ecoef is None else coef2d[by_slot, j]
    nz = np.flatnonzero(cj)
    if nz.shape[0] * 64 <= n:
        # few runs: copy each slot's run of column j to its place (slices; no n-sized destination array)
        run0 = np.cumsum(cj) - cj
        for a, b, c in zip(start_j[nz].tolist(), run0[nz].tolist(), cj[nz].tolist()):
            indices[a:a + c] = by_slot[b:b + c]
            if cv is not None:
                ecoef[a:a + c] = cv[b:b + c]
    else:
        # destination of the k-th entry of column j: start of its slot's run + its rank in the run
        dest = np.repeat((start_j - np.cumsum(cj) + cj).astype(np.intp), cj)
        dest += np.arange(n, dtype=np.intp)
        indices[dest] = by_slot  # (cast to idx_t)
        if cv is not None:
            ecoef[dest] = cv
        del dest
    del by_slot, cv


def _has_duplicates(rows: np.ndarray, pairs: np.ndarray | None = None) -> bool:
    """True if a row names the same resource twice; ``pairs`` (int[m, 2], ``j > k``): only these column pairs
    can (:func:`overlapping_pairs`; None: every pair)."""
    n, h = rows.shape
    if h < 2 or n == 0:
        return False
    if pairs is not None and pairs.shape[0] == 0:
        return False
    if _kernels.use_index(n * h):
        return _kernels.index().has_duplicates(rows, pairs)
    tmp = np.empty(n, dtype=np.bool_)
    todo = ([(j, i) for j in range(1, h) for i in range(j)] if pairs is None
            else [(int(j), int(i)) for j, i in pairs])
    for j, i in todo:
        cj = rows[:, j]
        np.equal(cj, rows[:, i], out=tmp)
        if tmp.any() and (tmp & (cj >= 0)).any():
            return True
    return False


def overlapping_pairs(present: np.ndarray) -> np.ndarray:
    """int64[m, 2]: the column pairs ``(j, k)``, ``j > k``, whose resources intersect, from ``present``
    (bool[h, R]: the resources of each column).  A row can name a resource twice only in such a pair.

    >>> overlapping_pairs(np.array([[1, 0, 0], [0, 1, 0], [1, 0, 1]], bool)).tolist()
    [[2, 0]]
    """
    h = present.shape[0]
    shared = np.flatnonzero(np.count_nonzero(present, axis=0) > 1)
    m = present[:, shared].astype(np.int64)
    o = (m @ m.T) > 0
    return np.array([(j, k) for j in range(1, h) for k in range(j) if o[j, k]], dtype=np.int64).reshape(-1, 2)


def _build_index(res: np.ndarray, weight: np.ndarray | None, mult: np.ndarray | None, n_res: int,
                 flows: np.ndarray | None, counts: np.ndarray | None = None, disjoint: bool = False,
                 pairs: np.ndarray | None = None, lazy: bool = False) -> _Index:
    """Build the adjacency of ``flows`` (None = all rows).

    ``counts``: :func:`fabric.reductions.column_counts` of ``res`` (``flows`` None only), when the caller
    has them: the CSC takes its slot counts from them. ``disjoint``: no
    resource appears in two columns of ``res`` (the caller checked), so no row can repeat one and the
    duplicate test is skipped; the counts prove it too. ``pairs``: the column pairs of ``res`` that share a
    resource (:func:`overlapping_pairs`), when the caller has them: the duplicate test compares only those.
    ``lazy``: the numpy CSC places a column only when a slot it crosses is first read (``pending``; for a
    reader that calls ``pending.ensure``, i.e. :func:`fabric.fill.fill`).
    """
    if flows is not None:
        counts = None
    rows = res if flows is None else res[flows]
    m = None if mult is None else (mult if flows is None else mult[flows])
    if weight is not None:
        coef = weight[flows] if flows is not None else weight.copy()
        if m is not None:
            coef *= m[:, None]
        coef[rows < 0] = 1.0  # padding: any finite value
    else:
        coef = None if m is None else np.array(m, dtype=np.float64)
    if counts is not None and not disjoint:
        disjoint = np.count_nonzero(counts[:, 1:], axis=0).max(initial=0) <= 1
    if not disjoint:
        if _has_duplicates(rows, pairs):
            rows, coef = _merge_duplicates(rows, coef)
            counts = None
    ecoef = pending = None
    if coef is not None and coef.ndim == 2:
        indptr, indices, ecoef = _csc(rows, n_res, coef, counts=counts)
    else:
        got = _csc(rows, n_res, counts=counts, lazy=lazy)
        indptr, indices = got[:2]
        pending = got[2] if len(got) > 2 else None
    ceps = 0.5 if coef is None or coef.size == 0 else 0.5 * float(coef.min())
    return _Index(flows, rows, coef, indptr, indices, n_res, ceps, ecoef, pending)


def _sub_index(ix: _Index, sel: np.ndarray) -> _Index:
    """The adjacency of the local flows ``sel`` (sorted) of ``ix``, renumbered 0..len(sel)-1.

    Each slot lists the same flows in the same order as ``ix`` restricted to
    ``sel`` (by column, then by flow), with the same ``ceps``: a filling of the
    sub-index does the same arithmetic as one of ``ix`` whose other flows are
    not alive, without walking them.
    """
    rows = np.take(ix.res, sel, axis=0)
    coef = None if ix.coef is None else np.take(ix.coef, sel, axis=0)
    ecoef = None
    if coef is not None and coef.ndim == 2:
        indptr, indices, ecoef = _csc(rows, ix.n_res, coef)
    else:
        indptr, indices = _csc(rows, ix.n_res)
    return _Index(None, rows, coef, indptr, indices, ix.n_res, ix.ceps, ecoef)


def _merge_duplicates(rows: np.ndarray, coef: np.ndarray | None):
    """Merge repeated resource ids within a row (their coefficients add up)."""
    n, h = rows.shape
    if _kernels.use_index(n * h):
        return _kernels.index().merge_duplicates(rows, coef)
    dup = np.zeros(n, dtype=np.bool_)
    for j in range(1, h):
        for i in range(j):
            dup |= (rows[:, j] == rows[:, i]) & (rows[:, j] >= 0)
    if coef is None:
        w = np.ones((n, h))
    elif coef.ndim == 1:
        w = np.repeat(coef[:, None], h, axis=1)
    else:
        w = coef.copy()
    rows = rows.copy()
    for r in np.flatnonzero(dup).tolist():  # rare path: only the rows that repeat a resource
        seen: dict[int, int] = {}
        for j in range(h):
            v = int(rows[r, j])
            if v < 0:
                continue
            if v in seen:
                w[r, seen[v]] += w[r, j]
                rows[r, j] = -1
                w[r, j] = 1.0
            else:
                seen[v] = j
    return rows, w


Index = _Index
build_index = _build_index
sub_index = _sub_index
