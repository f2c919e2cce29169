"""Small array helpers shared by the fabric and collectives layers.

Examples
--------
>>> import numpy as np
>>> sorted_unique(np.array([3, 1, 3, 2, 1])).tolist()
[1, 2, 3]
"""

from __future__ import annotations

import numpy as np

__all__ = ["sorted_unique"]


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
