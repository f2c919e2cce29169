"""Compiled (numba) kernels of the engine outside the fill: index build, column merge, per-resource reductions.

Each kernel is the one-pass loop of a numpy computation of :mod:`fabric.maxmin`,
:mod:`fabric.reductions` or :mod:`fabric.engine` (the one-solve tail) and gives
the same bits: integer work (the CSC counting sort, presence masks, the column
map of the merge) is exact by construction; the float sums add in the order of
the numpy path (a bincount adds its weights sequentially in input order, one hop
column after the other), maxima are exact, element operations are the same IEEE
operations in the same order (no fast-math, no contraction). The callers choose
between the two paths with :func:`fabric.kernels.use_index` (thresholds in
:mod:`fabric.kernels`); this module imports numba and is imported only then.

On large tables the passes run over blocks of flows in parallel (``numba.prange``), where the blocks' results
combine exactly (counts into positions, flags, presence bits, maxima, copied rows) or each task keeps the
sequential order of its own sums (one hop column per task): the bits never depend on the blocks or threads.

Kernels are compiled on first use per argument type and cached by numba
(``cache=True``) in the folder :func:`fabric.kernels.available` sets, never
next to the source.
"""

from __future__ import annotations

import numpy as np
from numba import get_num_threads, njit, prange

__all__ = ["CSC_BLOCK", "BLOCK", "csc", "has_duplicates", "merge_duplicates", "presence", "take_columns",
           "column_map", "slot_sum", "slot_max", "one_solve_tail", "size_classes"]

_OPTS = dict(cache=True, nogil=True)


def _per_flow(a, n: int) -> np.ndarray:
    """float64 values per flow, contiguous; a broadcast constant (stride 0, ``np.broadcast_to``) as its one
    value (the kernels then read element 0 for every flow: no F x 8-byte copy)."""
    a = np.asarray(a, dtype=np.float64)
    if a.ndim == 1 and a.shape[0] == n and n > 1 and a.strides[0] == 0:
        return np.ascontiguousarray(a[:1])
    return np.ascontiguousarray(a)


@njit(**_OPTS)
def _csc(rows, counts, indices, coef2d, ecoef, want_coef):
    n, h = rows.shape
    r1 = counts.shape[0] - 1
    for i in range(n):
        for j in range(h):
            counts[rows[i, j] + 2] += 1
    for s in range(1, r1 + 1):
        counts[s] += counts[s - 1]
    pos = counts[:-1].copy()
    for j in range(h):  # within a slot: by column, then by flow (as the numpy build)
        for i in range(n):
            s = rows[i, j] + 1
            p = pos[s]
            indices[p] = i
            if want_coef:
                ecoef[p] = coef2d[i, j]
            pos[s] = p + 1


@njit(cache=True, nogil=True, parallel=True)
def _csc_blocks(rows, block, counts, indptr, indices, coef2d, ecoef, want_coef):
    """The same CSC in two passes over blocks of ``block`` flows, one task per block (``numba.prange``).

    ``counts[b, j, s]``: entries of block ``b`` in column ``j`` on slot ``s``. A slot's run is ordered by
    column, then by block (= by flow): the start of (block ``b``, column ``j``) in slot ``s`` is a prefix
    sum in that order, and each block then writes its own entries there. The output is the sequential
    build's, whatever the number of threads.
    """
    n, h = rows.shape
    nb = counts.shape[0]
    r1 = counts.shape[2]
    for b in prange(nb):
        for i in range(b * block, min(n, (b + 1) * block)):
            for j in range(h):
                counts[b, j, rows[i, j] + 1] += 1
    acc = indptr.dtype.type(0)
    for s in range(r1):  # counts -> the first position of every (block, column) run of each slot
        indptr[s] = acc
        for j in range(h):
            for b in range(nb):
                c = counts[b, j, s]
                counts[b, j, s] = acc
                acc += c
    indptr[r1] = acc
    for b in prange(nb):
        i0, i1 = b * block, min(n, (b + 1) * block)
        for j in range(h):
            pos = counts[b, j]
            for i in range(i0, i1):
                s = rows[i, j] + 1
                p = pos[s]
                indices[p] = i
                if want_coef:
                    ecoef[p] = coef2d[i, j]
                pos[s] = p + 1


#: Flows per task of the parallel CSC build (from two such blocks on): its counts take h x (R + 1) integers
#: per block.
CSC_BLOCK = 1 << 20

#: Flows per task of the other parallel passes (duplicate test, presence, one-solve tail), from two blocks on.
#: Their per-block results (a flag, presence bits, maxima) combine exactly in any order: the bits do not
#: depend on the blocks or the threads.
BLOCK = 1 << 21


def _blocks(n: int) -> tuple[int, int]:
    """(blocks, flows per block) of a parallel pass over ``n`` flows."""
    nb = -(-n // BLOCK) if n else 0
    return nb, BLOCK


def csc(rows: np.ndarray, n_res: int, coef2d: np.ndarray | None = None):
    """Compiled :func:`fabric.adjacency._csc`: same arrays, same dtypes, same order of entries."""
    rows = np.ascontiguousarray(rows)
    n, h = rows.shape
    idx_t = np.int32 if n * h < 2**31 - 1 else np.int64
    indices = np.empty(n * h, idx_t)
    want = coef2d is not None
    ecoef = np.empty(n * h if want else 0)
    c2 = np.ascontiguousarray(coef2d) if want else np.zeros((1, 1))
    nb = -(-n // CSC_BLOCK)
    if nb >= 2:
        counts = np.zeros((nb, h, n_res + 1), idx_t)
        indptr = np.empty(n_res + 2, idx_t)
        _csc_blocks(rows, CSC_BLOCK, counts, indptr, indices, c2, ecoef, want)
        del counts
    else:
        indptr = np.zeros(n_res + 2, idx_t)
        _csc(rows, indptr, indices, c2, ecoef, want)
    return (indptr, indices) if not want else (indptr, indices, ecoef)


@njit(**_OPTS)
def _has_duplicates(rows, pj, pk):
    n = rows.shape[0]
    m = pj.shape[0]
    for i0 in range(0, n, 4096):  # column pairs over a block of rows (no branch per entry), one test per block
        i1 = min(i0 + 4096, n)
        d = 0
        for q in range(m):
            j = pj[q]
            k = pk[q]
            for i in range(i0, i1):
                v = rows[i, j]
                d += (rows[i, k] == v) & (v >= 0)
        if d:
            return True
    return False


@njit(cache=True, nogil=True, parallel=True)
def _has_duplicates_blocks(rows, pj, pk, block, found):
    n = rows.shape[0]
    for b in prange(found.shape[0]):
        found[b] = _has_duplicates(rows[b * block:min(n, (b + 1) * block)], pj, pk)


def has_duplicates(rows: np.ndarray, pairs: np.ndarray | None = None) -> bool:
    """Compiled :func:`fabric.adjacency._has_duplicates` (blocks of flows in parallel on large tables);
    ``pairs`` (int64[m, 2], ``j > k``): the column pairs to compare (None: every pair)."""
    if pairs is None:
        h = rows.shape[1]
        pairs = np.array([(j, k) for j in range(1, h) for k in range(j)], dtype=np.int64).reshape(-1, 2)
    pj = np.ascontiguousarray(pairs[:, 0], dtype=np.int64)
    pk = np.ascontiguousarray(pairs[:, 1], dtype=np.int64)
    nb, block = _blocks(rows.shape[0])
    if nb < 2:
        return bool(_has_duplicates(rows, pj, pk))
    found = np.zeros(nb, np.bool_)
    _has_duplicates_blocks(rows, pj, pk, block, found)
    return bool(found.any())


@njit(**_OPTS)
def _merge_duplicates(rows, w):
    n, h = rows.shape
    for i in range(n):
        for j in range(1, h):
            v = rows[i, j]
            if v < 0:
                continue
            for k in range(j):  # the first occurrence (a later one is already -1)
                if rows[i, k] == v:
                    w[i, k] += w[i, j]
                    rows[i, j] = -1
                    w[i, j] = 1.0
                    break


def merge_duplicates(rows: np.ndarray, coef: np.ndarray | None):
    """Compiled :func:`fabric.adjacency._merge_duplicates` (same rows, same coefficients)."""
    n, h = rows.shape
    if coef is None:
        w = np.ones((n, h))
    elif coef.ndim == 1:
        w = np.repeat(coef[:, None], h, axis=1)
    else:
        w = np.array(coef, dtype=np.float64, order="C")
    rows = np.array(rows, order="C")
    _merge_duplicates(rows, w)
    return rows, w


@njit(**_OPTS)
def _presence(res, present):
    n, h = res.shape
    for i in range(n):
        for j in range(h):
            present[j, res[i, j] + 1] = True


@njit(cache=True, nogil=True, parallel=True)
def _presence_blocks(res, block, present):
    n = res.shape[0]
    for b in prange(present.shape[0]):
        _presence(res[b * block:min(n, (b + 1) * block)], present[b])


def presence(res: np.ndarray, n_res: int) -> np.ndarray:
    """bool[h, R + 1]: ``[j, l + 1]`` when resource ``l`` appears in column ``j``, ``[j, 0]`` for padding."""
    res = np.ascontiguousarray(res)
    nb, block = _blocks(res.shape[0])
    if nb < 2:
        out = np.zeros((res.shape[1], n_res + 1), dtype=np.bool_)
        _presence(res, out)
        return out
    per_block = np.zeros((nb, res.shape[1], n_res + 1), dtype=np.bool_)
    _presence_blocks(res, block, per_block)
    return np.logical_or.reduce(per_block, axis=0)


@njit(cache=True, nogil=True, parallel=True)
def _take_columns(res, keep, block, out):
    n = res.shape[0]
    k = keep.shape[0]
    for b in prange(-(-n // block)):
        for i in range(b * block, min(n, (b + 1) * block)):
            for c in range(k):
                out[i, c] = res[i, keep[c]]


def take_columns(res: np.ndarray, keep: list) -> np.ndarray:
    """``np.take(res, keep, axis=1)`` (a C-ordered copy of the hop columns ``keep``), blocks of flows in parallel."""
    out = np.empty((res.shape[0], len(keep)), dtype=res.dtype)
    _take_columns(np.ascontiguousarray(res), np.asarray(keep, dtype=np.intp), BLOCK, out)
    return out


@njit(**_OPTS)
def _column_map(res, a, b, w, has_w, v_of, seen):
    n = res.shape[0]
    for i in range(n):
        u = res[i, a]
        v = res[i, b]
        if (u < 0) != (v < 0):
            return False
        if u < 0:
            continue
        if has_w and not (w[i, a] == w[i, b]):
            return False
        o = v_of[u]
        if o < 0:
            v_of[u] = v
        elif o != v:
            return False
    for u in range(v_of.shape[0]):
        v = v_of[u]
        if v >= 0:
            if seen[v]:
                return False
            seen[v] = True
    return True


def column_map(res: np.ndarray, a: int, b: int, weight: np.ndarray | None, n_res: int) -> np.ndarray | None:
    """The one-to-one map ``res[f, a] -> res[f, b]`` (intp[R], -1 where unused), or None when it is not one.

    ``None`` too when the padding of the two columns differs or (``weight``) their weights differ on
    some flow: the conditions :func:`fabric.reductions._reduce_columns` checks with numpy.
    """
    v_of = np.full(n_res, -1, dtype=np.intp)
    seen = np.zeros(n_res, dtype=np.bool_)
    w = np.zeros((1, 1)) if weight is None else weight
    ok = _column_map(np.ascontiguousarray(res), a, b, w, weight is not None, v_of, seen)
    return v_of if ok else None


@njit(**_OPTS)
def _slot_sum(res, per_flow, weight, has_w, out, tmp):
    n, h = res.shape
    r1 = out.shape[0]
    # one sum per column (tmp[j]: a bincount of column j, in flow order), walked row by row; the columns are
    # then added to the total one after the other (the numpy path's order)
    step = 1 if per_flow.shape[0] == n else 0  # a constant: per_flow[0]
    for i in range(n):
        p = per_flow[i * step]
        for j in range(h):
            v = p * weight[i, j] if has_w else p
            tmp[j, res[i, j] + 1] += v
    for j in range(h):
        for s in range(r1):
            out[s] += tmp[j, s]


@njit(cache=True, nogil=True, parallel=True)
def _slot_sum_columns(res, per_flow, weight, has_w, groups, tmp):
    """tmp[j]: the sum of column j in flow order (as :func:`_slot_sum`); the columns in ``groups`` interleaved
    sets, one task each (every task walks all the rows, for its own columns only)."""
    n, h = res.shape
    step = 1 if per_flow.shape[0] == n else 0
    for g in prange(groups):
        for i in range(n):
            p = per_flow[i * step]
            for j in range(g, h, groups):
                v = p * weight[i, j] if has_w else p
                tmp[j, res[i, j] + 1] += v


def slot_sum(res: np.ndarray, per_flow: np.ndarray, weight: np.ndarray | None, n_res: int) -> np.ndarray:
    """Compiled :func:`fabric.reductions._slot_sum` (bit-identical).

    On large tables the hop columns are summed in parallel, each column by one task in flow order (the
    sequential order), then added one after the other: the same bits.
    """
    out = np.zeros(n_res + 1)
    w = np.zeros((1, 1)) if weight is None else weight
    tmp = np.zeros((res.shape[1], n_res + 1))
    per_flow = _per_flow(per_flow, res.shape[0])
    if _blocks(res.shape[0])[0] < 2 or res.shape[1] < 2:
        _slot_sum(res, per_flow, w, weight is not None, out, tmp)
        return out
    _slot_sum_columns(res, per_flow, w, weight is not None, min(res.shape[1], get_num_threads()), tmp)
    for j in range(res.shape[1]):
        out += tmp[j]
    return out


@njit(**_OPTS)
def _slot_max(res, per_flow, out):
    n, h = res.shape
    for i in range(n):
        v = per_flow[i]
        for j in range(h):
            s = res[i, j] + 1
            if v > out[s] or v != v:  # np.maximum: NaN wins, ties keep the first
                out[s] = v


def slot_max(res: np.ndarray, per_flow: np.ndarray, n_res: int) -> np.ndarray:
    """Compiled :func:`fabric.reductions._slot_max` (exact)."""
    out = np.full(n_res + 1, -np.inf)
    _slot_max(res, np.ascontiguousarray(per_flow, dtype=np.float64), out)
    return out


@njit(**_OPTS)
def _one_solve_tail(level, bneck, size, t0, res, tend, busy):
    n, h = res.shape
    step = 1 if size.shape[0] == n else 0  # one size for every flow (a broadcast): size[0]
    for i in range(n):
        d = size[i * step] / level[bneck[i]]  # the flow's transfer time at its max-min rate
        tend[i] = d + t0
        if not np.isfinite(d):
            d = 0.0
        for j in range(h):
            s = res[i, j] + 1
            if d > busy[s]:
                busy[s] = d


@njit(cache=True, nogil=True, parallel=True)
def _one_solve_tail_blocks(level, bneck, size, t0, res, block, tend, busy):
    n = res.shape[0]
    one = size.shape[0] != n
    for b in prange(busy.shape[0]):
        i0, i1 = b * block, min(n, (b + 1) * block)
        _one_solve_tail(level, bneck[i0:i1], size if one else size[i0:i1], t0, res[i0:i1], tend[i0:i1], busy[b])


def one_solve_tail(level, bneck, size, t0: float, res, n_res: int):
    """``(transfer_end, busy per slot)`` of the one-solve shortcut of :mod:`fabric.engine`, every flow filled:
    ``size / level[bneck] + t0``, and per slot the maximum finite transfer time (-inf where no flow). The numpy
    path's operations on every element, in one pass (bit-identical)."""
    tend = np.empty(res.shape[0])
    busy = np.full(n_res + 1, -np.inf)
    size, res = _per_flow(size, res.shape[0]), np.ascontiguousarray(res)
    nb, block = _blocks(res.shape[0])
    if nb < 2:
        _one_solve_tail(level, bneck, size, float(t0), res, tend, busy)
        return tend, busy
    # blocks of flows in parallel, each with its own maxima (a maximum is exact in any order: the same bits)
    per_block = np.full((nb, n_res + 1), -np.inf)
    _one_solve_tail_blocks(level, bneck, size, float(t0), res, block, tend, per_block)
    np.max(per_block, axis=0, out=busy)
    return tend, busy


@njit(**_OPTS)
def _size_classes(sizes, res, max_classes, vals, label, owner, cols):
    """Class of every flow by size (``vals``: the distinct sizes in first-appearance order), the owner class
    of every slot and the hop columns each class uses (``cols[c, j]``: an entry that is not padding); 0: done,
    1: one size class or more than ``max_classes`` or a NaN, 2: a slot in two classes."""
    n = sizes.shape[0]
    m = 0
    last = 0
    for i in range(n):
        v = sizes[i]
        if v != v:
            return 1, 0
        if m and vals[last] == v:  # flows of a class are mostly adjacent
            label[i] = last
            continue
        c = -1
        for k in range(m):
            if vals[k] == v:
                c = k
                break
        if c < 0:
            if m == max_classes:
                return 1, 0
            vals[m] = v
            c = m
            m += 1
        label[i] = c
        last = c
    if m < 2:
        return 1, m
    h = res.shape[1]
    for i in range(n):
        c = label[i]
        for j in range(h):
            s = res[i, j] + 1
            if s == 0:
                continue
            cols[c, j] = True
            o = owner[s]
            if o < 0:
                owner[s] = c
            elif o != c:
                return 2, m
    return 0, m


def size_classes(sizes: np.ndarray, res: np.ndarray, n_res: int, max_classes: int):
    """Compiled :func:`fabric.decompose.independent_size_classes` (after its phase and release checks): the
    same index arrays (each class's flows ascending, classes by increasing size), or ``None``; with them
    bool[classes, h], the hop columns in which each class has entries other than padding, and int8[R + 1],
    the class of every slot (-1: none; slot 0: the padding)."""
    sizes = np.ascontiguousarray(sizes, dtype=np.float64)
    res = np.ascontiguousarray(res)
    n = sizes.shape[0]
    vals = np.empty(max_classes)
    label = np.empty(n, np.int8)
    owner = np.full(n_res + 1, -1, np.int8)
    cols = np.zeros((max_classes, res.shape[1]), dtype=np.bool_)
    code, m = _size_classes(sizes, res, max_classes, vals, label, owner, cols)
    if code:
        return None
    order = np.argsort(vals[:m])  # distinct values: the order of the numpy path's repeated minima
    rank = np.empty(m + 1, np.int8)
    rank[order] = np.arange(m, dtype=np.int8)
    rank[m] = -1  # owner -1 (no class) stays -1
    return [np.flatnonzero(label == c) for c in order.tolist()], cols[order], rank[owner]
