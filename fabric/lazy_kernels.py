"""Compiled per-event passes of the event loop's *lazy* completion (numba).

Epoch mode keeps, for every indexed flow ``i``, its remaining bytes ``L_rem[i]`` at the time ``L_t0[i]``,
its current rate ``L_rate[i]`` and its completion time ``L_tc[i] = L_t0[i] + L_rem[i] / L_rate[i]``; a
flow's three values change only when its rate does (a cold solve, a re-filled flow of a warm start, a
rescale), so an epoch no longer rewrites the remaining bytes and completion time of every active flow.
The eager loop (``fabric.eventloop._LAZY = False``: remaining bytes rounded at every epoch end, the
completion times recomputed at every solve) is the reference of the tests; finish times agree to
rounding (docs/performance.md, "Round 15 (2026-12-05)").

* :func:`warm_split_lazy`: :func:`fabric.epoch_kernels.warm_split` that also writes the kept flows'
  rates and completion times into the epoch's arrays and returns the re-filled flows' positions;
* :func:`tail_lazy`: :func:`fabric.epoch_kernels.solve_tail` over the flows whose rate was set by the
  fill only (every active flow after a cold solve);
* :func:`depart_lazy`: the flows done leave (``L_act``, ``L_rem``, ``L_rate``), the others are kept
  untouched (their state is exact at its own ``L_t0``).

The rate-change rule every kernel applies (:func:`_set_rate` in each): the remaining bytes at ``t`` are
``max(L_rem - L_rate * (t - L_t0), 0)``, then ``L_t0 = t``, the new rate, and ``L_tc = t + rem / rate``.

Examples
--------
>>> import numpy as np
>>> L_rem, L_t0, L_rate = np.array([4.0]), np.array([0.0]), np.array([1.0])
>>> L_tc, L_mm, L_bneck = np.array([4.0]), np.array([1.0]), np.array([1])
>>> rates, tc = np.empty(1), np.empty(1)
>>> m = tail_lazy(0, np.array([0]), np.array([0]), np.array([0]), np.array([0.0, 2.0]), np.array([1]),
...               L_bneck, np.zeros(1), False, True, 2, 1.0, L_rem, L_t0, L_rate, L_tc, L_mm, np.zeros(2),
...               True, rates, tc)
>>> L_rem.tolist(), L_t0.tolist(), L_rate.tolist(), tc.tolist(), m.tolist()
([3.0, 1.0], [1.0], [2.0], [2.5], [0.0, 1.0])
"""

from __future__ import annotations

import numpy as np

from fabric import kernels as _kernels

__all__ = ["warm_split_lazy", "tail_lazy", "depart_lazy", "materialize"]

_jit = _kernels.jit  # numba.njit with the kernels' options, or the plain function without numba

_COLD = 0  # fabric.epoch_kernels.COLD
_WARM_SUB = 2  # fabric.epoch_kernels.WARM_SUB


@_jit
def warm_split_lazy(aidx, prev, thr, n, L_tc, rates, tc):
    """``(fixed, ri, rq, n_fixed)``: :func:`fabric.epoch_kernels.warm_split` plus the positions ``rq`` of the
    re-filled flows in ``aidx``; a kept flow ``aidx[q]`` gets ``rates[q] = prev[i]`` (its rate, unchanged)
    and ``tc[q] = L_tc[i]`` (its completion time, unchanged)."""
    fixed = np.zeros(n, np.bool_)
    na = aidx.shape[0]
    ri = np.empty(na, np.int64)
    rq = np.empty(na, np.int64)
    m = 0
    for q in range(na):
        i = aidx[q]
        p = prev[i]
        if p < thr:
            fixed[i] = True
            rates[q] = p
            tc[q] = L_tc[i]
        else:
            ri[m] = i
            rq[m] = q
            m += 1
    return fixed, ri[:m].copy(), rq[:m].copy(), na - m


@_jit
def tail_lazy(kind, aidx, ri, rq, level, bneck, L_bneck, mult, has_mult, want_members, r1, t, L_rem, L_t0, L_rate,
              L_tc, L_mm, members0, incremental, rates, tc):
    """Members per slot after a fill; the flows the fill set (``aidx`` for COLD, else ``ri`` at positions
    ``rq`` of ``aidx``) get their rate ``level[bneck]``, remaining bytes at ``t``, ``L_t0 = t``, ``L_mm``,
    ``L_tc`` and ``rates`` / ``tc`` at their positions; ``L_bneck`` as in
    :func:`fabric.epoch_kernels.solve_tail`, and the members the same way (moved flow by flow with
    ``incremental`` after a warm start, else counted over ``aidx`` in its order)."""
    inc = incremental and want_members and not has_mult and kind != _COLD
    members = np.zeros(r1 if want_members else 0)
    if inc:
        for s in range(r1):
            members[s] = members0[s]
    if kind == _COLD:
        lanes = np.zeros((4, r1 if want_members and not has_mult else 0), np.int64)
        for q in range(aidx.shape[0]):
            i = aidx[q]
            b = bneck[i]
            L_bneck[i] = b
            r = level[b]
            left = L_rem[i] - L_rate[i] * (t - L_t0[i])
            if left < 0.0:
                left = 0.0
            L_rem[i] = left
            L_t0[i] = t
            L_rate[i] = r
            L_mm[i] = r
            c = t + left / r
            L_tc[i] = c
            rates[q] = r
            tc[q] = c
            if want_members:
                if has_mult:
                    members[b] += mult[i]
                else:
                    lanes[q & 3, b] += 1
        if want_members and not has_mult:
            for s in range(r1):
                members[s] = float(lanes[0, s] + lanes[1, s] + lanes[2, s] + lanes[3, s])
    else:
        for m in range(ri.shape[0]):
            i = ri[m]
            b = bneck[m] if kind == _WARM_SUB else bneck[i]
            if inc:
                members[L_bneck[i]] -= 1.0
                members[b] += 1.0
            L_bneck[i] = b
            r = level[b]
            left = L_rem[i] - L_rate[i] * (t - L_t0[i])
            if left < 0.0:
                left = 0.0
            L_rem[i] = left
            L_t0[i] = t
            L_rate[i] = r
            L_mm[i] = r
            c = t + left / r
            L_tc[i] = c
            q = rq[m]
            rates[q] = r
            tc[q] = c
        if want_members and not inc:
            for q in range(aidx.shape[0]):
                i = aidx[q]
                members[L_bneck[i]] += mult[i] if has_mult else 1.0
    if want_members:
        members[0] = 0.0
    return members


@_jit
def depart_lazy(aidx, di, L_rem, L_rate, L_act):
    """The flows at positions ``di`` (ascending) of ``aidx`` leave (``L_rem = L_rate = 0``, ``L_act`` False);
    returns ``aidx`` without them (the active flows that stay, in order)."""
    nd = di.shape[0]
    keep = np.empty(aidx.shape[0] - nd, aidx.dtype)
    m = 0
    d = 0
    for q in range(aidx.shape[0]):
        if d < nd and di[d] == q:
            i = aidx[q]
            L_rem[i] = 0.0
            L_rate[i] = 0.0
            L_act[i] = False
            d += 1
        else:
            keep[m] = aidx[q]
            m += 1
    return keep


@_jit
def materialize(idx, t, L_rem, L_t0, L_rate, new_rate, L_tc, tc):
    """The flows ``idx`` change rate at ``t`` to ``new_rate`` (over ``idx``): remaining bytes at ``t``,
    ``L_t0 = t``, ``L_rate``, ``L_tc`` and ``tc`` (over ``idx``) ``t + rem / rate``."""
    for q in range(idx.shape[0]):
        i = idx[q]
        left = L_rem[i] - L_rate[i] * (t - L_t0[i])
        if left < 0.0:
            left = 0.0
        L_rem[i] = left
        L_t0[i] = t
        r = new_rate[q]
        L_rate[i] = r
        c = t + left / r
        L_tc[i] = c
        tc[q] = c
