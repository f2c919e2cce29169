"""Optional compiled kernels (numba) for the two hot loops of the solver: the index build and the fill.

Opt-in: install with ``pip install fabric-emu[fast]`` and set
``FABRIC_EMU_KERNELS=auto`` (the kernels from :data:`MIN_ENTRIES` adjacency
entries on, where they pay for numba's import, about 0.4 s) or ``numba`` (on
every problem). The default, ``numpy``, runs the pure-numpy code of
:mod:`fabric.maxmin`. The index build is identical; the fill agrees with the
numpy fill to 1e-9 relative on the test instances (the suite runs both), but on
the 16.8 M-flow all-to-all of N = 4,096 the fastest flows' rates differ by up
to 1.5e-7 relative (both satisfy the max-min conditions to 1e-9; rounding
accumulated over thousands of subtractions per resource), which is why it is
not the default (docs/performance.md).

The kernels are compiled on first use and cached (numba's ``cache=True``) in
``$FABRIC_EMU_CACHE`` or ``~/.cache/fabric-emu/numba`` -- never next to the
source. The fill is plain sequential progressive filling: a lazy heap of the
resources' fair shares ``rem / cnt`` (shares only grow while filling, so a
popped share that is out of date is pushed back with its current value);
the resource with the smallest share freezes its unfrozen flows; shares within
``TIE_RTOL`` of the level opened last freeze at that level, as in the numpy
rounds. Exact, like the numpy version (docs/flow-engine.md §2).

Examples
--------
>>> mode() in ("numpy", "numba", "auto")
True
"""

from __future__ import annotations

import os

import numpy as np

__all__ = ["MIN_ENTRIES", "mode", "available", "use_compiled", "csc", "fill"]

#: Adjacency entries from which ``auto`` uses the compiled kernels.
MIN_ENTRIES = 1 << 24

_STATE: dict = {}


def mode() -> str:
    """``FABRIC_EMU_KERNELS``: ``numpy`` (default), ``auto`` or ``numba``."""
    m = os.environ.get("FABRIC_EMU_KERNELS", "numpy").strip().lower() or "numpy"
    return m if m in ("auto", "numpy", "numba") else "numpy"


def _load():
    """The compiled functions, or None when numba is not installed (imported once, lazily)."""
    if "k" in _STATE:
        return _STATE["k"]
    _STATE["k"] = _compile() if available() else None
    return _STATE["k"]


def available() -> bool:
    """Whether numba can be imported (imported once, lazily; sets numba's cache folder first)."""
    if "numba" not in _STATE:
        os.environ.setdefault("NUMBA_CACHE_DIR", os.environ.get("FABRIC_EMU_CACHE") or os.path.join(
            os.path.expanduser("~"), ".cache", "fabric-emu", "numba"))
        try:
            import numba  # noqa: F401
        except ImportError:
            _STATE["numba"] = False
        else:
            _STATE["numba"] = True
    return _STATE["numba"]


def use_compiled(entries: int, min_entries: int = MIN_ENTRIES) -> bool:
    """Whether a problem with ``entries`` entries runs on compiled kernels (``auto``: from ``min_entries``)."""
    m = mode()
    if m == "numpy" or (m == "auto" and entries < min_entries):
        return False
    return available()


def _compile():
    import heapq

    from numba import njit

    @njit(cache=True, nogil=True)
    def csc_kernel(rows, counts, indices, coef2d, ecoef, want_coef):
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

    @njit(cache=True, nogil=True)
    def fill_kernel(indptr, indices, rows, coef_kind, coef1d, coef2d, rem, cnt, state, ceps, tie, alive, done):
        n, h = rows.shape
        r1 = rem.shape[0]
        level = np.full(r1, np.inf)
        bneck = np.zeros(n, np.int32)
        closed = np.zeros(r1, np.bool_)
        closed[0] = True
        heap = [(0.0, 0)]
        heap.pop()
        for s in range(1, r1):
            if cnt[s] >= ceps:
                sh = rem[s] / cnt[s]
                if sh < np.inf:
                    heap.append((sh, s))
        heapq.heapify(heap)
        rounds = 0
        cur = -1.0
        lim = -1.0
        while len(heap) > 0:
            sh, j = heapq.heappop(heap)
            if closed[j]:
                continue
            if cnt[j] < ceps:
                continue  # no unfrozen flow left: never a bottleneck
            now = rem[j] / cnt[j]
            if now != sh:
                if now < np.inf:
                    heapq.heappush(heap, (now, j))  # out of date (shares only grow): back with its share
                continue
            if now <= lim:
                v = cur  # the same level as the slot that opened it (ties within TIE_RTOL)
            else:
                cur = now if now > 0.0 else 0.0
                lim = now * (1.0 + tie) if now > 0.0 else 0.0
                v = cur
                rounds += 1
            any_frozen = False
            for p in range(indptr[j], indptr[j + 1]):
                f = indices[p]
                if state[f] != alive:
                    continue
                state[f] = done
                bneck[f] = j
                any_frozen = True
                for k in range(h):
                    l = rows[f, k] + 1
                    if coef_kind == 0:
                        c = 1.0
                    elif coef_kind == 1:
                        c = coef1d[f]
                    else:
                        c = coef2d[f, k]
                    cnt[l] -= c
                    rem[l] -= c * v
            if any_frozen:
                level[j] = v
            rem[j] = np.inf
            cnt[j] = 0.0
            closed[j] = True
        rem[0] = np.inf
        return level, bneck, rounds

    return {"csc": csc_kernel, "fill": fill_kernel}


def csc(rows: np.ndarray, n_res: int, coef2d: np.ndarray | None = None):
    """Compiled :func:`fabric.maxmin._csc`: same arrays, same order of entries."""
    k = _load()
    n, h = rows.shape
    idx_t = np.int32 if n * h < 2**31 - 1 else np.int64
    counts = np.zeros(n_res + 2, idx_t)
    indices = np.empty(n * h, idx_t)
    ecoef = np.empty(n * h if coef2d is not None else 0)
    k["csc"](rows, counts, indices, coef2d if coef2d is not None else np.zeros((1, 1)), ecoef, coef2d is not None)
    return (counts, indices) if coef2d is None else (counts, indices, ecoef)


def fill(ix, rem: np.ndarray, cnt: np.ndarray, state: np.ndarray, alive, done, tie: float):
    """Compiled filling loop: ``(level, bneck, rounds)``; ``rem``, ``cnt`` and ``state`` are updated in place."""
    k = _load()
    coef = ix.coef
    if coef is None:
        kind, c1, c2 = 0, np.zeros(1), np.zeros((1, 1))
    elif coef.ndim == 1:
        kind, c1, c2 = 1, coef, np.zeros((1, 1))
    else:
        kind, c1, c2 = 2, np.zeros(1), coef
    return k["fill"](ix.indptr, ix.indices, ix.res, kind, c1, c2, rem, cnt, state, float(ix.ceps), float(tie),
                     alive, done)
