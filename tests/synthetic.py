"""Synthetic problems shared by the engine and solver tests (no router involved)."""

from __future__ import annotations

import numpy as np

__all__ = ["leaf_spine", "numpy_and_numba"]


def leaf_spine(n, hpl=32, spines=32, seed=0, spray=False, link_Bps=1.0):
    """Uniform all-to-all on a 2-tier leaf/spine, as (capacity, res) arrays.

    Resources: host up-links 0..n-1, host down-links n..2n-1, then fabric links.
    ECMP picks the spine by a seeded splitmix64 hash of (src, dst); ``spray``
    uses one trunk resource per leaf up (and down) of capacity ``spines x c``.
    Intra-leaf flows have two entries (padded with -1).
    """
    L = n // hpl
    i, j = np.divmod(np.arange(n * n), n)
    keep = i != j
    i, j = i[keep], j[keep]
    a, b = i // hpl, j // hpl
    res = np.full((i.size, 4), -1, dtype=np.int64)
    res[:, 0] = i
    res[:, 3] = n + j
    if spray:
        cap = np.r_[np.ones(2 * n), np.full(2 * L, float(spines))]
        res[:, 1] = 2 * n + a
        res[:, 2] = 2 * n + L + b
    else:
        cap = np.ones(2 * n + 2 * L * spines)
        x = (i.astype(np.uint64) * np.uint64(n) + j.astype(np.uint64)) ^ np.uint64(seed * 0x5851F42D + 1)
        with np.errstate(over="ignore"):
            for shift, mul in ((30, 0xBF58476D1CE4E5B9), (27, 0x94D049BB133111EB)):  # splitmix64 finaliser
                x ^= x >> np.uint64(shift)
                x *= np.uint64(mul)
        x ^= x >> np.uint64(31)
        k = (x % np.uint64(spines)).astype(np.int64)
        res[:, 1] = 2 * n + a * spines + k
        res[:, 2] = 2 * n + L * spines + k * L + b
    same = a == b
    res[same, 1] = n + j[same]
    res[same, 2:] = -1
    return cap * link_Bps, res


def numpy_and_numba(monkeypatch, f):
    """``(f() with FABRIC_EMU_KERNELS=numpy, f() with =numba)``: the pure-numpy path and the compiled one."""
    out = {}
    for k in ("numpy", "numba"):
        monkeypatch.setenv("FABRIC_EMU_KERNELS", k)
        out[k] = f()
    return out["numpy"], out["numba"]

