"""Compiled passes of the token-routing draw (numba), bit-identical to the numpy code they replace.

:func:`draw_sorted` turns ``n * k`` uniforms into ``n`` rows of ``k`` alias-table draws, each
row ascending, and flags the rows holding a repeat (:func:`collectives.token_routing._draw`, the
row sort and the repeat test of :func:`collectives.token_routing.sample_distinct`, in one pass);
:func:`count_rows` adds the per-(rank, owner) token and copy counts of rows of experts
(:func:`collectives.moe._count`).  The same floating-point operations on the same uniforms and
integer counts (exact in any order), so the same arrays.  :mod:`collectives.token_routing`
decides when they run (:data:`collectives.token_routing.COMPILED_MIN_SELECTIONS`,
``FABRIC_EMU_KERNELS``); this module imports numba, so it is imported only then.

Examples
--------
>>> import numpy as np
>>> sel, rep = draw_sorted(np.array([0.9, 0.1, 0.5, 0.5]), 4, np.arange(4) + 1.0, np.repeat(np.arange(4), 2), 2)
>>> sel.tolist(), rep.tolist()
([[0, 3], [2, 2]], [False, True])
"""

from __future__ import annotations

import numpy as np

from fabric import kernels as _kernels

__all__ = ["draw_sorted", "count_rows"]

_jit = _kernels.jit  # numba.njit with the kernels' options, or the plain function without numba


@_jit
def draw_sorted(x, E, cut, pair, k):
    """``(sel, rep)``: ``sel[r]`` the draws ``x[r k:(r + 1) k]`` through the alias table (``cut``, ``pair``
    of :class:`collectives.token_routing.AliasTable`), ascending; ``rep[r]``: the row holds a repeat.

    A row is sorted by branch-free compare-exchanges: the 19-comparator network of 8 inputs (Knuth,
    TAOCP vol. 3, section 5.3.4, fig. 49) at k = 8, odd-even transposition otherwise.
    """
    n = x.shape[0] // k
    sel = np.empty((n, k), np.int64)
    rep = np.zeros(n, np.bool_)
    o = np.empty(k, np.int64)
    for r in range(n):
        for j in range(k):
            v = x[r * k + j] * E
            i = min(int(v), E - 1)
            o[j] = pair[2 * i + np.int64(v >= cut[i])]
        if k == 8:
            a0, a1, a2, a3, a4, a5, a6, a7 = o[0], o[1], o[2], o[3], o[4], o[5], o[6], o[7]
            a0, a2 = min(a0, a2), max(a0, a2)
            a1, a3 = min(a1, a3), max(a1, a3)
            a4, a6 = min(a4, a6), max(a4, a6)
            a5, a7 = min(a5, a7), max(a5, a7)
            a0, a4 = min(a0, a4), max(a0, a4)
            a1, a5 = min(a1, a5), max(a1, a5)
            a2, a6 = min(a2, a6), max(a2, a6)
            a3, a7 = min(a3, a7), max(a3, a7)
            a0, a1 = min(a0, a1), max(a0, a1)
            a2, a3 = min(a2, a3), max(a2, a3)
            a4, a5 = min(a4, a5), max(a4, a5)
            a6, a7 = min(a6, a7), max(a6, a7)
            a2, a4 = min(a2, a4), max(a2, a4)
            a3, a5 = min(a3, a5), max(a3, a5)
            a1, a4 = min(a1, a4), max(a1, a4)
            a3, a6 = min(a3, a6), max(a3, a6)
            a1, a2 = min(a1, a2), max(a1, a2)
            a3, a4 = min(a3, a4), max(a3, a4)
            a5, a6 = min(a5, a6), max(a5, a6)
            o[0], o[1], o[2], o[3], o[4], o[5], o[6], o[7] = a0, a1, a2, a3, a4, a5, a6, a7
        else:
            for rd in range(k):
                for j in range(rd & 1, k - 1, 2):
                    a = o[j]
                    b = o[j + 1]
                    o[j] = min(a, b)
                    o[j + 1] = max(a, b)
        d = False
        for j in range(k):
            sel[r, j] = o[j]
            if j > 0:
                d |= o[j] == o[j - 1]
        rep[r] = d
    return sel, rep


@_jit
def count_rows(ei, owner, row_rank, out, copies, want_copies, ascending):
    """Add to ``out[row_rank[r], o]`` one per owner ``o = owner[ei[r, j]]`` of every row (once per row), and
    to ``copies`` (if ``want_copies``) every selection; ``ascending``: the owners of every row are
    non-decreasing already (else each row's owners are sorted first)."""
    n, k = ei.shape
    o = np.empty(k, np.int64)
    for r in range(n):
        rr = row_rank[r]
        for j in range(k):
            v = owner[ei[r, j]]
            m = j
            if not ascending:
                while m > 0 and o[m - 1] > v:
                    o[m] = o[m - 1]
                    m -= 1
            o[m] = v
        prev = -1
        for j in range(k):
            v = o[j]
            if want_copies:
                copies[rr, v] += 1
            if v != prev:
                out[rr, v] += 1
                prev = v
