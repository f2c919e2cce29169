"""Exact max-min fair rates by incremental, link-centric progressive filling.

A *resource* is a link or a trunk (a bundle of parallel links with equal
split, merged by the caller).  Flow ``f`` puts the fraction ``weight[f, j]``
of its rate on resource ``res[f, j]`` (``-1`` pads short rows), and stands for
``multiplicity[f]`` identical member flows.  With ``a_lf = m_f * w_lf`` the
allocation returned is the unique max-min fair one:

* feasible: ``sum_f a_lf * r_f <= c_l`` for every resource ``l``;
* every flow crosses a saturated resource on which its rate is maximal among
  the flows crossing it (its *bottleneck*).

The filling itself (the rounds, the compiled kernel's driver, the flow states
and the event loop's interface to it) is :mod:`fabric.fill`.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from fabric.checks import check_active, check_capacity, check_per_flow, check_res, check_weight
from fabric.fill import ALIVE, DONE, TIE_RTOL, build_index, coef_sums, fill, fixed_load
from topologies.errors import FlowError

__all__ = ["MaxMinResult", "maxmin_rates", "maxmin_refill"]

# TIE_RTOL (relative tolerance under which two fair shares count as the same level) is fabric.fill's, read there.


@dataclass(frozen=True)
class MaxMinResult:
    """Max-min fair rates of a flow set.

    Attributes
    ----------
    rates_Bps : numpy.ndarray
        float64[F], rate of each (member) flow in bytes/s; 0 for inactive flows,
        ``inf`` for active flows that cross no finite-capacity resource.
    bottleneck : numpy.ndarray
        int64[F], the resource that froze the flow, -1 for inactive or
        unconstrained flows.
    rounds : int
        Number of Python-level filling rounds.
    """

    rates_Bps: np.ndarray
    bottleneck: np.ndarray
    rounds: int



# --------------------------------------------------------------------------- public API


def _prepare(capacity_Bps, res, weight, multiplicity, active):
    cap = check_capacity(capacity_Bps)
    res_a = check_res(res, cap.shape[0])
    n_flows = res_a.shape[0]
    w = check_weight(weight, res_a)
    m = check_per_flow(multiplicity, n_flows, "multiplicity", positive=True)
    act = check_active(active, n_flows)
    return cap, res_a, w, m, act


def maxmin_rates(capacity_Bps: np.ndarray, res: np.ndarray, weight: np.ndarray | None = None, *,
                 multiplicity: np.ndarray | None = None, active: np.ndarray | None = None) -> MaxMinResult:
    """Max-min fair rates by exact progressive filling.

    Parameters
    ----------
    capacity_Bps : numpy.ndarray
        float64[R], capacity of each resource in bytes/s, > 0 (``np.inf`` allowed).
    res : numpy.ndarray
        int[F, h], resource ids crossed by each flow, -1 = padding.
    weight : numpy.ndarray, optional
        float64[F, h], fraction of the flow's rate carried on that resource
        (``None`` = 1.0 everywhere), > 0 where ``res >= 0``.
    multiplicity : numpy.ndarray, optional
        float[F] > 0: flow ``f`` stands for ``m_f`` identical member flows.
        The rate returned is per member flow.
    active : numpy.ndarray, optional
        bool[F]; inactive flows get rate 0 and use no capacity.

    Returns
    -------
    MaxMinResult
        ``rates_Bps`` (float64[F]), ``bottleneck`` (int64[F], -1 if none) and
        ``rounds``.

    Raises
    ------
    FlowError
        On malformed input (bad shapes, out-of-range ids, non-positive weights
        or capacities).

    Examples
    --------
    Three flows share link 0 (10 B/s); flow 2 also crosses link 1 (2 B/s):

    >>> import numpy as np
    >>> r = maxmin_rates(np.array([10.0, 2.0]), np.array([[0, -1], [0, -1], [0, 1]]))
    >>> r.rates_Bps.tolist(), r.bottleneck.tolist()
    ([4.0, 4.0, 2.0], [0, 0, 1])
    """
    cap, res_a, w, m, act = _prepare(capacity_Bps, res, weight, multiplicity, active)
    flows = None if act is None or act.all() else np.flatnonzero(act)
    ix = build_index(res_a, w, m, cap.shape[0], flows)
    state = np.full(ix.size, ALIVE, dtype=np.uint8)
    out = fill(ix, cap, state, coef_sums(ix, None))
    return _result(res_a.shape[0], flows, out.rates(), out.bneck, out.rounds)


def _result(n_flows, flows, rates, bneck_slot, rounds) -> MaxMinResult:
    bn = bneck_slot.astype(np.int64)
    bn -= 1
    if flows is None:
        return MaxMinResult(rates_Bps=rates, bottleneck=bn, rounds=rounds)
    r = np.zeros(n_flows)
    b = np.full(n_flows, -1, dtype=np.int64)
    r[flows] = rates
    b[flows] = bn
    return MaxMinResult(rates_Bps=r, bottleneck=b, rounds=rounds)


def maxmin_refill(capacity_Bps: np.ndarray, res: np.ndarray, rates_Bps: np.ndarray, threshold_Bps: float,
                  weight: np.ndarray | None = None, *, multiplicity: np.ndarray | None = None,
                  active: np.ndarray | None = None) -> MaxMinResult:
    """Warm start: re-fill only the flows whose previous rate is ``>= threshold_Bps``.

    Exact when ``rates_Bps`` is the max-min allocation of a superset of the
    active flows and every departed flow had rate ``>= threshold_Bps``: then
    every remaining flow below the threshold keeps its rate (its bottleneck is
    saturated by flows of lower or equal rate, none of which left), and the
    flows at or above it are re-filled on the capacity the lower ones leave.

    Parameters
    ----------
    capacity_Bps, res, weight, multiplicity, active
        As in :func:`maxmin_rates`.
    rates_Bps : numpy.ndarray
        float64[F], the previous max-min rates.
    threshold_Bps : float
        Smallest rate among the departed flows.

    Returns
    -------
    MaxMinResult
        Rates of the active flows; ``bottleneck`` is -1 for flows kept below
        the threshold (their bottleneck is unchanged) and ``rounds`` counts the
        re-fill rounds only.

    Examples
    --------
    >>> import numpy as np
    >>> cap = np.array([10.0, 2.0]); res = np.array([[0, -1], [0, -1], [0, 1]])
    >>> r0 = maxmin_rates(cap, res).rates_Bps          # [4, 4, 2]
    >>> act = np.array([False, True, True])            # flow 0 (rate 4) leaves
    >>> maxmin_refill(cap, res, r0, 4.0, active=act).rates_Bps.tolist()
    [0.0, 8.0, 2.0]
    """
    cap, res_a, w, m, act = _prepare(capacity_Bps, res, weight, multiplicity, active)
    n_flows = res_a.shape[0]
    prev = np.asarray(rates_Bps, dtype=np.float64)
    if prev.shape != (n_flows,) or np.isnan(prev).any() or (prev < 0).any():
        raise FlowError(f"rates_Bps: expected {n_flows} rates >= 0 (a previous max-min result)")
    flows = None if act is None or act.all() else np.flatnonzero(act)
    ix = build_index(res_a, w, m, cap.shape[0], flows)
    lp = prev if flows is None else prev[flows]
    fixed = lp < float(threshold_Bps) * (1.0 - TIE_RTOL)
    state = np.where(fixed, DONE, ALIVE).astype(np.uint8)
    out = fill(ix, cap, state, coef_sums(ix, state), fixed_load(ix, fixed, lp))
    rates = np.where(fixed, lp, out.rates())
    return _result(n_flows, flows, rates, out.bneck, out.rounds)
