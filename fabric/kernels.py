"""Compiled kernels (numba): when to use them, and the fill.

numba is an install dependency, but everything works without it (the
pure-numpy code of :mod:`fabric.maxmin` and :mod:`fabric.reductions` is the
reference, and the tests run both). ``FABRIC_EMU_KERNELS`` chooses:

* ``auto`` (default): each compiled kernel from a measured problem size on
  (:data:`MIN_ENTRIES_INDEX` adjacency entries for the index build, column
  merge and per-resource reductions of :mod:`fabric.index_kernels`, where they
  pay for numba's import and first cached calls, 0.8-1.0 s of CPU; fewer,
  :data:`MIN_ENTRIES_INDEX_LOADED`, once numba is loaded; docs/performance.md).
  These kernels give the numpy path's bits exactly. The compiled fill is not
  used under ``auto`` (:data:`MIN_ENTRIES`: ``None``) until it is bit-identical
  to the numpy fill;
* ``numba``: every compiled kernel on every problem, the fill included;
* ``numpy``: never.

The fill here agrees with the numpy fill to 1e-9 relative on the test
instances (the suite runs both), but on the 16.8 M-flow all-to-all of N =
4,096 the fastest flows' rates differ by up to 1.5e-7 relative (both satisfy
the max-min conditions to 1e-9; rounding accumulated over thousands of
subtractions per resource), which is why ``auto`` does not use it.

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
>>> use_compiled(10, None) if mode() != "numba" else False
False
"""

from __future__ import annotations

import os
import time

import numpy as np

__all__ = ["MIN_ENTRIES", "MIN_ENTRIES_INDEX", "MIN_ENTRIES_INDEX_LOADED", "mode", "available", "use_compiled",
           "use_index", "index", "load_seconds", "fill"]

#: Adjacency entries from which ``auto`` uses the compiled fill; ``None``: never (it is not bit-identical to
#: the numpy fill yet; ``FABRIC_EMU_KERNELS=numba`` uses it on every problem).
MIN_ENTRIES = None

#: Adjacency entries (flows x hops) from which ``auto`` uses the kernels of :mod:`fabric.index_kernels`, when
#: numba is not loaded yet: numba's import and first (cached) calls cost 0.8-1.0 s of CPU (a quarter of it is
#: the scipy.linalg import numba makes), the kernels save ~1.85e-8 s per entry (1.7e-8 at N = 1,024, 2.0e-8
#: and more at N = 4,096): break-even ~48 M entries (docs/performance.md, 2026-12-02).
MIN_ENTRIES_INDEX = 48_000_000

#: The same once numba is loaded in this process (by any kernel): a kernel then pays only for loading its
#: own cached machine code, 7-24 ms each (60-80 ms for all seven), which the CSC build alone saves from ~1.7 M
#: entries and all of them together from ~4 M (docs/performance.md).
MIN_ENTRIES_INDEX_LOADED = 1 << 21

_STATE: dict = {"load_s": 0.0}


def mode() -> str:
    """``FABRIC_EMU_KERNELS``: ``auto`` (default), ``numpy`` or ``numba``."""
    m = os.environ.get("FABRIC_EMU_KERNELS", "auto").strip().lower() or "auto"
    return m if m in ("auto", "numpy", "numba") else "auto"


def _load():
    """The compiled fill, or None when numba is not installed (imported once, lazily)."""
    if "k" in _STATE:
        return _STATE["k"]
    _STATE["k"] = _timed(_compile) if available() else None
    return _STATE["k"]


def _timed(f):
    t = time.perf_counter()
    try:
        return f()
    finally:
        _STATE["load_s"] += time.perf_counter() - t


def available() -> bool:
    """Whether numba can be imported (imported once, lazily; sets numba's cache folder first)."""
    if "numba" not in _STATE:
        os.environ.setdefault("NUMBA_CACHE_DIR", os.environ.get("FABRIC_EMU_CACHE") or os.path.join(
            os.path.expanduser("~"), ".cache", "fabric-emu", "numba"))
        t = time.perf_counter()
        try:
            import numba  # noqa: F401
        except ImportError:
            _STATE["numba"] = False
        else:
            _STATE["numba"] = True
        _STATE["load_s"] += time.perf_counter() - t
    return _STATE["numba"]


def use_compiled(entries: int, min_entries: int | None = MIN_ENTRIES) -> bool:
    """Whether a kernel runs compiled on a problem of ``entries`` adjacency entries.

    ``numba``: always (when numba is installed); ``numpy``: never; ``auto``: from ``min_entries`` on
    (``None``: never under ``auto``).
    """
    m = mode()
    if m == "numpy" or (m == "auto" and (min_entries is None or entries < min_entries)):
        return False
    return available()


def use_index(entries: int) -> bool:
    """Whether the kernels of :mod:`fabric.index_kernels` run on a problem of ``entries`` adjacency entries."""
    loaded = _STATE.get("numba") is True
    return use_compiled(entries, MIN_ENTRIES_INDEX_LOADED if loaded else MIN_ENTRIES_INDEX)


def index():
    """:mod:`fabric.index_kernels` (imports numba; call only after :func:`use_compiled` said yes)."""
    if "index" not in _STATE:
        from fabric import index_kernels
        _STATE["index"] = index_kernels
    return _STATE["index"]


def load_seconds() -> float:
    """Wall seconds this process spent importing numba and the compiled kernels (0 if never)."""
    return float(_STATE["load_s"])


def _compile():
    import heapq

    from numba import njit

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

    return {"fill": fill_kernel}


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
