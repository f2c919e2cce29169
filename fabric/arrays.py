"""Small array helpers shared by the fabric and collectives layers.

Examples
--------
>>> import numpy as np
>>> sorted_unique(np.array([3, 1, 3, 2, 1])).tolist()
[1, 2, 3]
>>> [float(v) for v in extremes(np.broadcast_to(np.array([2.5]), (4,)))]
[2.5, 2.5]
"""

from __future__ import annotations

import numpy as np

__all__ = ["sorted_unique", "extremes"]


def sorted_unique(a) -> np.ndarray:
    """The sorted distinct values of ``a`` (flattened), like ``np.unique(a)`` without its options.

    Sort and keep each value that differs from its predecessor. ``np.unique`` without
    ``return_*`` options imports ``numpy.ma`` on its first call in numpy 2.3+ (40-60 ms of a
    small run's start-up, see docs/performance.md) and hashes where sorting is faster on
    many distinct integers. Floats: every NaN is kept, as ``np.unique(..., equal_nan=False)``.
    """
    s = np.sort(np.asarray(a).ravel())
    if s.size == 0:
        return s
    keep = np.empty(s.size, dtype=bool)
    keep[0] = True
    np.not_equal(s[1:], s[:-1], out=keep[1:])
    return s[keep]


def extremes(a: np.ndarray) -> tuple:
    """``(a.min(), a.max())`` of a non-empty 1-d array; without a pass when every element is the same memory
    (stride 0: an ``np.broadcast_to`` view, as the collectives give equal sizes, or one element).

    NaN propagates as in ``min`` / ``max``.
    """
    if a.ndim == 1 and (a.shape[0] == 1 or a.strides[0] == 0):
        v = a[0]
        return v, v
    return a.min(), a.max()
