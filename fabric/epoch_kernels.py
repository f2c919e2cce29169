"""Compiled per-event passes of the event loop (numba), bit-identical to the numpy code they replace.

Each kernel fuses several numpy passes over the active flows of
:class:`fabric.eventloop._EventLoop` into one loop with the same arithmetic:
:func:`solve_tail` (rates from the fill, the bottleneck of every re-filled flow
and the per-slot members count, accumulated in active-flow order as
``np.bincount`` does), :func:`advance` (remaining bytes and rates after an
epoch) and :func:`warm_sums` (the re-filled flows' coefficient sums, load and
entry counts per slot for a warm start, from the per-slot coefficient table).  The event loop keeps its numpy code as the reference and uses these
when :func:`fabric.kernels.use_compiled` says so (``FABRIC_EMU_KERNELS``);
this module imports numba, so the loop imports it only then.

Examples
--------
>>> COLD, WARM, WARM_SUB
(0, 1, 2)
"""

from __future__ import annotations

import numpy as np

from fabric import kernels as _kernels

__all__ = ["COLD", "WARM", "WARM_SUB", "solve_tail", "advance", "warm_sums"]

COLD = 0  #: every active flow was filled
WARM = 1  #: warm start on the full index: the flows ``ri`` were re-filled, the others kept their rates
WARM_SUB = 2  #: warm start on an index of the flows ``ri`` only (its bottlenecks are by position in ``ri``)

if _kernels.available():
    from numba import njit as _njit

    _jit = _njit(cache=True, nogil=True, error_model="numpy")
else:  # never called without numba; importable for the doctests
    def _jit(f):
        return f


@_jit
def solve_tail(kind, aidx, fixed, prev, level, bneck, ri, L_bneck, mult, has_mult, want_members, r1):
    """Rates of the active flows ``aidx`` after a fill, ``L_bneck`` updated, and the members per slot.

    COLD: ``L_bneck[aidx] = bneck[aidx]``; rates ``level[bneck]``.  WARM /
    WARM_SUB: ``L_bneck[ri] = bneck[ri]`` (or ``bneck[:len(ri)]``); a flow
    ``fixed`` keeps ``prev``, the others get ``level[L_bneck]``.  Members:
    per-slot sum of the multiplicities (1 without) over ``L_bneck[aidx]``, in
    ``aidx`` order (``np.bincount``); slot 0 is zeroed.
    """
    na = aidx.shape[0]
    rates = np.empty(na)
    if kind == COLD:
        for q in range(na):
            i = aidx[q]
            b = bneck[i]
            L_bneck[i] = b
            rates[q] = level[b]
    else:
        for q in range(ri.shape[0]):
            i = ri[q]
            L_bneck[i] = bneck[q] if kind == WARM_SUB else bneck[i]
        for q in range(na):
            i = aidx[q]
            rates[q] = prev[i] if fixed[i] else level[L_bneck[i]]
    members = np.zeros(r1 if want_members else 0)
    if want_members:
        for q in range(na):
            i = aidx[q]
            members[L_bneck[i]] += mult[i] if has_mult else 1.0
        members[0] = 0.0
    return rates, members


@_jit
def advance(aidx, rem, rates, dt, L_rem, L_rate):
    """``L_rem[aidx] = max(rem - rates * dt, 0)`` and ``L_rate[aidx] = rates`` (one pass)."""
    for q in range(aidx.shape[0]):
        i = aidx[q]
        r = rates[q]
        left = rem[q] - r * dt
        if left < 0.0:
            left = 0.0
        L_rem[i] = left
        L_rate[i] = r


@_jit
def warm_sums(res, ri, sw, prev, r1):
    """Per-slot sums over the entries of the rows ``ri`` of ``res``, in row order (as ``np.bincount``):
    the coefficients ``sw[res + 1]``, the load ``prev[i] * sw[res + 1]`` and the number of entries."""
    cnt = np.zeros(r1)
    load = np.zeros(r1)
    num = np.zeros(r1, dtype=np.int64)
    h = res.shape[1]
    for q in range(ri.shape[0]):
        i = ri[q]
        p = prev[i]
        for j in range(h):
            k = res[i, j] + 1
            c = sw[k]
            cnt[k] += c
            load[k] += p * c
            num[k] += 1
    return cnt, load, num
