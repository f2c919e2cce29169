"""Optional compiled kernels (numba) for the two hot loops of the solver: the index build and the fill.

Opt-in: install with ``pip install fabric-emu[fast]`` and set
``FABRIC_EMU_KERNELS=auto`` (the kernels from :data:`MIN_ENTRIES` adjacency
entries on, where they pay for numba's import, about 0.4 s) or ``numba`` (on
every problem). The default, ``numpy``, runs the pure-numpy code of
:mod:`fabric.maxmin`. The index build is identical; the fill
(:mod:`fabric.fillkernel`) is bit-identical to the numpy fill.

The kernels are compiled on first use and cached (numba's ``cache=True``) in
``$FABRIC_EMU_CACHE`` or ``~/.cache/fabric-emu/numba`` -- never next to the
source.

Examples
--------
>>> mode() in ("numpy", "numba", "auto")
True
"""

from __future__ import annotations

import os

import numpy as np

__all__ = ["MIN_ENTRIES", "mode", "available", "use_compiled", "csc"]

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

    return {"csc": csc_kernel}


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

