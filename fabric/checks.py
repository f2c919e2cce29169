"""Validation of the solver's and the engine's array inputs: one error line naming the field and the rule.

Examples
--------
>>> import numpy as np
>>> check_capacity([1.0, np.inf]).tolist()
[1.0, inf]
"""

from __future__ import annotations

import numpy as np

from fabric.arrays import extremes
from topologies.errors import FlowError

__all__ = ["check_capacity", "check_res", "check_weight", "check_per_flow", "check_active", "per_flow"]

_INF = np.inf


def _first_bad(mask: np.ndarray) -> int:
    return int(np.flatnonzero(mask.ravel())[0])


def check_capacity(capacity_Bps) -> np.ndarray:
    cap = np.asarray(capacity_Bps, dtype=np.float64)
    if cap.ndim != 1:
        raise FlowError(f"capacity_Bps: expected a 1-D array of resource capacities, got shape {cap.shape}")
    bad = ~(cap > 0)  # catches NaN, 0 and negatives
    if bad.any():
        i = _first_bad(bad)
        raise FlowError(f"capacity_Bps[{i}]: {float(cap[i])!r} is not allowed; capacities must be > 0 (np.inf allowed)")
    return cap


def check_res(res, n_res: int) -> np.ndarray:
    arr = np.asarray(res)
    if arr.ndim != 2:
        raise FlowError(f"res: expected a 2-D int array [flows, hops] of resource ids, got shape {arr.shape}")
    if arr.dtype.kind not in "iu":
        raise FlowError(f"res: expected an integer array of resource ids, got dtype {arr.dtype}")
    if arr.size:
        lo, hi = arr.min(), arr.max()
        if lo < -1 or hi >= n_res:
            bad = (arr < -1) | (arr >= n_res)
            k = _first_bad(bad)
            f, j = divmod(k, arr.shape[1])
            raise FlowError(
                f"res[{f}, {j}]: {int(arr[f, j])} is out of range; resource ids must be -1 (padding) or in [0, {n_res})"
            )
    return arr


def check_weight(weight, res: np.ndarray) -> np.ndarray | None:
    if weight is None:
        return None
    w = np.asarray(weight, dtype=np.float64)
    if w.shape != res.shape:
        raise FlowError(f"weight: shape {w.shape} does not match res {res.shape}")
    bad = ~((w > 0) & (w < _INF)) & (res >= 0)
    if bad.any():
        k = _first_bad(bad)
        f, j = divmod(k, res.shape[1])
        raise FlowError(f"weight[{f}, {j}]: {float(w[f, j])!r} is not allowed; weights must be finite and > 0")
    return w


def check_per_flow(x, n_flows: int, name: str, *, positive: bool) -> np.ndarray | None:
    if x is None:
        return None
    a = np.asarray(x, dtype=np.float64)
    if a.shape != (n_flows,):
        raise FlowError(f"{name}: expected shape ({n_flows},), got {a.shape}")
    bad = ~((a > 0) & (a < _INF)) if positive else ~((a >= 0) & (a < _INF))
    if bad.any():
        i = _first_bad(bad)
        rule = "finite and > 0" if positive else "finite and >= 0"
        raise FlowError(f"{name}[{i}]: {float(a[i])!r} is not allowed; values must be {rule}")
    return a


def check_active(active, n_flows: int) -> np.ndarray | None:
    if active is None:
        return None
    a = np.asarray(active)
    if a.shape != (n_flows,) or a.dtype != np.bool_:
        raise FlowError(f"active: expected a bool array of shape ({n_flows},), got {a.dtype} {a.shape}")
    return a


def per_flow(x, F, name, what):
    """float64[F], finite and >= 0 (sizes, release times, latencies)."""
    a = np.asarray(x, dtype=np.float64)
    if a.shape != (F,):
        raise FlowError(f"{name}: expected shape ({F},), got {a.shape}")
    if F == 0:
        return a
    lo, hi = extremes(a)  # two reductions (none on a broadcast value), no F-sized masks (NaN fails both)
    if lo >= 0 and hi < _INF:
        return a
    bad = ~((a >= 0) & (a < _INF))
    if bad.any():
        i = int(np.flatnonzero(bad)[0])
        v = a[i]
        why = "is negative" if v < 0 else "is not finite"
        raise FlowError(f"{name}[{i}]: {float(v)!r} {why}; {what} must be finite and >= 0")
    return a
