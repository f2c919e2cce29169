"""Compiled per-event passes of the event loop (numba), bit-identical to the numpy code they replace.

Each kernel fuses several numpy passes over the active flows of
:class:`fabric.eventloop._EventLoop` into one loop with the same arithmetic:
:func:`solve_tail` (rates and completion times from the fill, the bottleneck of every re-filled flow
and the per-slot members count, accumulated in active-flow order as
``np.bincount`` does, or moved flow by flow after a warm start), :func:`advance` (remaining bytes, rates and
departures after an epoch), :func:`compact_lists` (the resource -> flow lists without the finished flows), :func:`slot_table`
(:func:`fabric.slotfill.slot_coefficients` in one pass), :func:`warm_split` (a warm start's fixed and
re-filled flows) and :func:`saturated_order` (the epoch end's stable sort of entries by slot) and :func:`warm_sums` (the re-filled flows' coefficient sums, load and
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

__all__ = ["COLD", "WARM", "WARM_SUB", "solve_tail", "advance", "warm_sums", "compact_lists", "slot_table", "warm_split",
           "saturated_order", "select_le", "lazy_split", "lazy_tail", "lazy_set", "lazy_materialize"]

COLD = 0  #: every active flow was filled
WARM = 1  #: warm start on the full index: the flows ``ri`` were re-filled, the others kept their rates
WARM_SUB = 2  #: warm start on an index of the flows ``ri`` only (its bottlenecks are by position in ``ri``)

_jit = _kernels.jit  # numba.njit with the kernels' options, or the plain function without numba


@_jit
def solve_tail(kind, aidx, fixed, prev, level, bneck, ri, L_bneck, mult, has_mult, want_members, r1, t, L_rem, L_mm,
               members0, incremental):
    """Rates and completion times of the active flows ``aidx`` after a fill; ``L_bneck`` and ``L_mm`` updated,
    and the members per slot.

    COLD: ``L_bneck[aidx] = bneck[aidx]``; rates ``level[bneck]``.  WARM /
    WARM_SUB: ``L_bneck[ri] = bneck[ri]`` (or ``bneck[:len(ri)]``); a flow
    ``fixed`` keeps ``prev``, the others get ``level[L_bneck]``.  Every active
    flow: ``L_mm[i] = rate``, completion ``t + L_rem[i] / rate`` (numpy's
    operations, in that order).  Members: per-slot sum of the multiplicities (1
    without) over ``L_bneck[aidx]``, in ``aidx`` order (``np.bincount``); with
    ``incremental`` (no multiplicities, a warm start, ``members0`` that count
    over the same flows before it) ``members0`` with the re-filled flows moved
    from their old bottleneck to the new one (counts of 1.0: exact integers,
    so the same values).  Slot 0 is zeroed.
    """
    na = aidx.shape[0]
    rates = np.empty(na)
    tc = np.empty(na)
    inc = incremental and want_members and not has_mult and kind != COLD
    members = np.zeros(r1 if want_members else 0)
    if inc:
        for s in range(r1):
            members[s] = members0[s]
    if kind == COLD:
        # counts of 1.0 in four interleaved integer lanes (no chain of stores to one slot; exact, so the same sums)
        lanes = np.zeros((4, r1 if want_members and not has_mult else 0), np.int64)
        for q in range(na):
            i = aidx[q]
            b = bneck[i]
            L_bneck[i] = b
            r = level[b]
            rates[q] = r
            L_mm[i] = r
            tc[q] = t + L_rem[i] / r
            if want_members:
                if has_mult:
                    members[b] += mult[i]
                else:
                    lanes[q & 3, b] += 1
        if want_members and not has_mult:
            for s in range(r1):
                members[s] = float(lanes[0, s] + lanes[1, s] + lanes[2, s] + lanes[3, s])
    else:
        for q in range(ri.shape[0]):
            i = ri[q]
            b = bneck[q] if kind == WARM_SUB else bneck[i]
            if inc:
                members[L_bneck[i]] -= 1.0
                members[b] += 1.0
            L_bneck[i] = b
        for q in range(na):
            i = aidx[q]
            r = prev[i] if fixed[i] else level[L_bneck[i]]
            rates[q] = r
            L_mm[i] = r
            tc[q] = t + L_rem[i] / r
            if want_members and not inc:
                members[L_bneck[i]] += mult[i] if has_mult else 1.0
    if want_members:
        members[0] = 0.0
    return rates, tc, members


@_jit
def advance(aidx, rates, dt, done, L_rem, L_rate, L_act):
    """``L_rem[aidx] = max(L_rem[aidx] - rates * dt, 0)``, ``L_rate[aidx] = rates``; the flows ``done``
    (bool over ``aidx``) leave: ``L_rem = 0``, ``L_act = False`` (one pass).  Returns the flows of ``aidx``
    that stay (``aidx[~done]``: ``np.flatnonzero(L_act)`` when ``aidx`` was that before)."""
    keep = np.empty(aidx.shape[0], aidx.dtype)
    m = 0
    for q in range(aidx.shape[0]):
        i = aidx[q]
        r = rates[q]
        if done[q]:
            L_rem[i] = 0.0
            L_act[i] = False
        else:
            left = L_rem[i] - r * dt
            if left < 0.0:
                left = 0.0
            L_rem[i] = left
            keep[m] = i
            m += 1
        L_rate[i] = r
    return keep[:m]


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


@_jit
def compact_lists(indptr, indices, keep):
    """``(indptr, indices)`` of the lists without the flows not ``keep`` (order kept; the numpy
    compaction's arrays and dtypes)."""
    r1 = indptr.shape[0] - 1
    ptr = np.empty_like(indptr)
    out = np.empty_like(indices)
    p = 0
    ptr[0] = 0
    for s in range(r1):
        for e in range(indptr[s], indptr[s + 1]):
            f = indices[e]
            if keep[f]:
                out[p] = f
                p += 1
        ptr[s + 1] = p
    return ptr, out[:p].copy()


@_jit
def slot_table(res, weight, n_res):
    """``(sw, ok)``: the weight of every entry of resource ``l`` in ``sw[l + 1]`` (1.0 where none, and in
    slot 0), ``ok`` False as soon as two entries of one resource have different weights."""
    sw = np.ones(n_res + 1)
    seen = np.zeros(n_res + 1, np.bool_)
    n, h = res.shape
    for i in range(n):
        for j in range(h):
            r = res[i, j]
            if r >= 0:
                k = r + 1
                w = weight[i, j]
                if seen[k]:
                    if not sw[k] == w:
                        return sw, False
                else:
                    sw[k] = w
                    seen[k] = True
    sw[0] = 1.0
    return sw, True


@_jit
def warm_split(aidx, prev, thr, n):
    """``(fixed, ri, n_fixed)`` of a warm start over the active flows ``aidx`` (ascending): ``fixed[i]``
    (bool[n]) where ``prev[i] < thr``, ``ri`` the others in ascending order (``np.flatnonzero`` of the
    re-filled mask)."""
    fixed = np.zeros(n, np.bool_)
    ri = np.empty(aidx.shape[0], np.int64)
    m = 0
    for q in range(aidx.shape[0]):
        i = aidx[q]
        if prev[i] < thr:
            fixed[i] = True
        else:
            ri[m] = i
            m += 1
    return fixed, ri[:m].copy(), aidx.shape[0] - m


@_jit
def saturated_order(keys, m, nm, r1):
    """Positions of the ``nm`` entries with ``m`` set, stably ordered by ``keys`` (slot ids < ``r1``): the
    first ``nm`` of the stable argsort of ``where(m, keys, r1)`` (a counting sort; the same array)."""
    start = np.zeros(r1 + 1, np.int64)
    for e in range(keys.shape[0]):
        if m[e]:
            start[keys[e] + 1] += 1
    for s in range(1, r1 + 1):
        start[s] += start[s - 1]
    out = np.empty(nm, np.int64)
    for e in range(keys.shape[0]):
        if m[e]:
            k = keys[e]
            out[start[k]] = e
            start[k] += 1
    return out


@_jit
def select_le(tc, thr, limit):
    """``(np.flatnonzero(tc <= thr), its length)`` when that has at most ``limit`` entries, else ``(an empty
    array, limit + 1)`` (one pass, stopped early)."""
    out = np.empty(limit, np.int64)
    m = 0
    for i in range(tc.shape[0]):
        if tc[i] <= thr:
            if m == limit:
                return out[:0].copy(), limit + 1
            out[m] = i
            m += 1
    return out[:m].copy(), m


# ---------------------------------------------------------------- lazy epochs (fabric.lazyepoch)
#
# A flow's remaining bytes are kept as of the time its rate was last set (``L_rem`` at ``L_tref``), with its
# completion time ``L_tc`` (inf when not active); an epoch touches only the flows whose rate changes and those
# that finish (docs/design-notes.md, "Lazy epochs").


@_jit
def _lazy_put(i, r, t, L_rem, L_tref, L_rate, L_tc):
    """Flow ``i`` gets rate ``r`` at ``t``: its remaining bytes brought to ``t`` at the old rate (clipped at 0,
    as the advance does), then ``L_tc = t + rem / r``."""
    left = L_rem[i] - L_rate[i] * (t - L_tref[i])
    if left < 0.0:
        left = 0.0
    L_rem[i] = left
    L_tref[i] = t
    L_rate[i] = r
    L_tc[i] = t + left / r


@_jit
def lazy_split(L_act, prev, thr):
    """:func:`warm_split` over every listed flow that is active (``L_act``): the same ``(fixed, ri, n_fixed)``
    as over ``np.flatnonzero(L_act)``, without that array."""
    n = L_act.shape[0]
    fixed = np.zeros(n, np.bool_)
    ri = np.empty(n, np.int64)
    m = 0
    na = 0
    for i in range(n):
        if L_act[i]:
            na += 1
            if prev[i] < thr:
                fixed[i] = True
            else:
                ri[m] = i
                m += 1
    return fixed, ri[:m].copy(), na - m


@_jit
def _lazy_give(i, b, level, t, L_bneck, L_mm, L_rem, L_tref, L_rate, L_tc):
    """Flow ``i`` takes its new bottleneck ``b`` and that slot's level as its max-min rate (:func:`_lazy_put`);
    returns the rate."""
    L_bneck[i] = b
    r = level[b]
    L_mm[i] = r
    _lazy_put(i, r, t, L_rem, L_tref, L_rate, L_tc)
    return r


@_jit
def lazy_tail(kind, idx, fixed, prev, level, bneck, L_bneck, r1, t, L_act, L_rem, L_tref, L_rate, L_mm, L_tc,
              members0, restore):
    """:func:`solve_tail` of a lazy epoch (no multiplicities); returns the members per slot.

    COLD: ``idx`` are every active flow (ascending); each gets ``level[bneck[i]]`` and the members are counted
    over them (as :func:`solve_tail`).  WARM / WARM_SUB: ``idx`` are the re-filled flows ``ri``; they get
    ``level`` at their new bottleneck (``bneck[i]``, or ``bneck[q]`` by position) and move in ``members0``;
    the fixed flows keep their rate and completion time, or, with ``restore`` (rescales since the last solve),
    get their max-min rate ``prev`` back.  Every flow given a rate: :func:`_lazy_put`, and ``L_mm`` = the rate.
    Returns ``(members, the smallest level given, inf if none)``.
    """
    members = np.zeros(r1)
    rmin = np.inf
    if kind == COLD:
        lanes = np.zeros((4, r1), np.int64)
        for q in range(idx.shape[0]):
            i = idx[q]
            b = bneck[i]
            r = _lazy_give(i, b, level, t, L_bneck, L_mm, L_rem, L_tref, L_rate, L_tc)
            if r < rmin:
                rmin = r
            lanes[q & 3, b] += 1
        for s in range(r1):
            members[s] = float(lanes[0, s] + lanes[1, s] + lanes[2, s] + lanes[3, s])
    else:
        for s in range(r1):
            members[s] = members0[s]
        for q in range(idx.shape[0]):
            i = idx[q]
            b = bneck[q] if kind == WARM_SUB else bneck[i]
            members[L_bneck[i]] -= 1.0
            members[b] += 1.0
            r = _lazy_give(i, b, level, t, L_bneck, L_mm, L_rem, L_tref, L_rate, L_tc)
            if r < rmin:
                rmin = r
        if restore:
            for i in range(L_act.shape[0]):
                if L_act[i] and fixed[i] and L_rate[i] != prev[i]:
                    _lazy_put(i, prev[i], t, L_rem, L_tref, L_rate, L_tc)
    members[0] = 0.0
    return members, rmin


@_jit
def lazy_set(aidx, rates, t, L_rem, L_tref, L_rate, L_tc):
    """The active flows ``aidx`` get ``rates`` at ``t`` (a rescale; ``L_mm`` stays the max-min rate)."""
    for q in range(aidx.shape[0]):
        _lazy_put(aidx[q], rates[q], t, L_rem, L_tref, L_rate, L_tc)


@_jit
def lazy_materialize(L_act, t, L_rem, L_tref, L_rate):
    """Every active flow's remaining bytes brought to ``t`` (``L_tref = t``): the state the dense loop keeps."""
    for i in range(L_act.shape[0]):
        if L_act[i]:
            left = L_rem[i] - L_rate[i] * (t - L_tref[i])
            if left < 0.0:
                left = 0.0
            L_rem[i] = left
            L_tref[i] = t
