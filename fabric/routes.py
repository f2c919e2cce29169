"""Routed flows as arrays: :class:`Routes` (the router's output) and the column accumulator the router fills.

Examples
--------
>>> rows = _Rows(2)
>>> rows.add(np.array([3, 4])); rows.add(np.array([5, -1]), np.array([0.5, 1.0]))
>>> rows.width, rows.weighted
(2, True)
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

__all__ = ["Routes"]


@dataclass(frozen=True)
class Routes:
    """Routed flows: a padded flow x resource incidence with fractional weights.

    ``res[f, j]`` is a resource id (a link id below ``n_links``, a trunk above)
    or -1; ``weight[f, j]`` the fraction of flow ``f``'s rate it carries
    (``None`` means 1.0 everywhere). ``latency_s`` is the weighted sum of link
    latencies along the flow's paths (the mean path latency).
    """

    src: np.ndarray        # ranks
    dst: np.ndarray        # ranks
    res: np.ndarray        # int32[F, h]
    weight: np.ndarray | None
    latency_s: np.ndarray  # float64[F]
    policy: str
    pxn: np.ndarray        # bool[F]: forwarded over NVLink to the rail GPU first

    @property
    def n_flows(self) -> int:
        return len(self.src)


class _Rows:
    """Accumulates per-flow (resource, weight) columns; padding (-1) may sit anywhere in a row."""

    def __init__(self, n: int):
        self.n = n
        self.res: list[np.ndarray] = []
        self.w: list[np.ndarray | None] = []

    def add(self, res: np.ndarray, w=None) -> None:
        res = np.asarray(res)
        if res.ndim == 1:
            res = res[:, None]
        if w is not None:
            w = np.asarray(w, dtype=np.float64)
            if w.ndim == 1:
                w = w[:, None]
            w = np.broadcast_to(w, res.shape)
        self.res.append(res.astype(np.int32, copy=False))
        self.w.append(w)

    @property
    def width(self) -> int:
        return sum(r.shape[1] for r in self.res)

    @property
    def weighted(self) -> bool:
        """True when some entry carries a weight other than 1 (unit weight columns need no array)."""
        return any(w is not None and not bool(np.all((w == 1.0) | (r < 0))) for r, w in zip(self.res, self.w))

    def write(self, res_out: np.ndarray, w_out: np.ndarray | None) -> None:
        """Write the columns into preallocated ``res_out`` (-1 filled) and ``w_out`` (0 filled) row blocks."""
        j = 0
        for r, w in zip(self.res, self.w):
            k = r.shape[1]
            res_out[:, j:j + k] = r
            if w_out is not None:
                w_out[:, j:j + k] = np.where(r >= 0, 1.0 if w is None else w, 0.0)
            j += k
