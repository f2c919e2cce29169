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
           "saturated_order", "epoch_window", "advance_split", "solve_tail_ri"]

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
def _max_np(a, b):
    """``np.maximum(a, b)`` of two floats (``a`` when ``a >= b`` or ``a`` is NaN)."""
    return a if (a >= b or a != a) else b


@_jit
def epoch_window(sel, aidx, tc, rates, L_keys, L_bneck, coef_kind, sw, cf, mult, has_mult, sat, ec_all, idle0, budget0,
                 members, capx, wagg, t0, t_next, want_firstc):
    """One window of :meth:`fabric.epoch._EpochMixin._epoch_end` over its completions ``sel`` (positions in
    ``aidx``, by completion time): ``(best, wH, firstc)``, the same values as the numpy body.

    ``best``: the earliest time a per-resource budget runs out inside the window (inf if none); ``wH[j]``: the
    change of the aggregate idle weight when completion ``j`` leaves (``np.bincount`` order: entries sorted by
    slot, completion order kept); ``firstc``: per slot the first completion on it (``t_next`` where none; only
    with ``want_firstc``).  Coefficients (``coef_kind``): 0 none, 1 the per-slot table ``sw[slot]``, 2 one per
    flow ``cf[i, 0]``, 3 one per entry ``cf[i, column]`` (the index's rows, by local flow ``i``).  The numpy
    body's operations in its order: global prefix sums minus the group's offset, ``(A - ec) + i0``,
    ``((B + budget0) - (ec - i0) t0) / slope``, ``((i0 + A) max(members - M, 0)) / c``.
    """
    k = sel.shape[0]
    h = L_keys.shape[1]
    r1 = capx.shape[0]
    ne = k * h
    # the window's entries gathered once (slot, rate x coefficient, member weight; completion time per flow),
    # then the entries of saturated slots stably by slot (a counting sort, as saturated_order)
    keys = np.empty(ne, np.int64)
    ar = np.empty(ne)
    mws = np.empty(ne)
    tcs = np.empty(k)
    start = np.zeros(r1 + 1, np.int64)
    for j in range(k):
        q = sel[j]
        i = aidx[q]
        tcs[j] = tc[q]
        r = rates[q]
        b = L_bneck[i]
        for c in range(h):
            s = L_keys[i, c]
            e = j * h + c
            keys[e] = s
            if coef_kind == 1:
                ar[e] = r * sw[s]
            elif coef_kind == 2:
                ar[e] = r * cf[i, 0]
            elif coef_kind == 3:
                ar[e] = r * cf[i, c]
            else:
                ar[e] = r
            mw = 1.0 if b == s else 0.0
            if has_mult:
                mw *= mult[i]
            mws[e] = mw
            if sat[s]:
                start[s + 1] += 1
    for s in range(1, r1 + 1):
        start[s] += start[s - 1]
    nm = start[r1]
    pos = start[:r1].copy()
    o = np.empty(nm, np.int64)
    for e in range(ne):
        s = keys[e]
        if sat[s]:
            o[pos[s]] = e
            pos[s] += 1
    firstc = np.full(r1 if want_firstc else 0, t_next)
    wH = np.zeros(k)
    best = np.inf
    if nm == 0:
        return best, wH, firstc
    A = B = M = 0.0  # global prefix sums, as np.cumsum over the sorted entries
    offA = offB = offM = 0.0  # their values before the group's first entry (what the numpy body subtracts)
    prev_s = -1
    prev_prod = 0.0
    for e in range(nm):
        jc = o[e]
        j = jc // h
        s = keys[jc]
        first = s != prev_s
        if first:
            offA, offB, offM = A, B, M
        a = ar[jc]
        te = tcs[j]
        A += a
        B += a * te
        M += mws[jc]
        Ag = A - offA
        Bg = B - offB
        Mg = M - offM
        tn = t_next
        if e + 1 < nm and keys[o[e + 1]] == s:
            tn = tcs[o[e + 1] // h]
        ec = ec_all[s]
        i0 = idle0[s]
        slope = (Ag - ec) + i0
        root = ((Bg + budget0[s]) - (ec - i0) * t0) / slope
        if slope > 0 and root <= tn:
            v = _max_np(root, te)
            if v < best:
                best = v
        if first and want_firstc:
            firstc[s] = te
        prod = ((i0 + Ag) * _max_np(members[s] - Mg, 0.0)) / capx[s]
        before = i0 * wagg[s] if first else prev_prod
        wH[j] += prod - before
        prev_prod = prod
        prev_s = s
    return best, wH, firstc


@_jit
def advance_split(aidx, rates, dt, done, L_rem, L_rate, L_act, prev, thr, t1, n):
    """:func:`advance`, and in the same pass the split of the next warm start at ``thr`` (:func:`warm_split`
    over the flows that stay) with the fixed flows' next rates and completion times.

    Returns ``(keep, fixed, ri, ripos, r_next, tc_next, n_fixed)``: ``keep`` as :func:`advance`; ``fixed``,
    ``ri`` as :func:`warm_split` of ``keep`` at ``thr``; ``ripos`` the positions of ``ri`` in ``keep``;
    ``r_next[m] = prev[i]`` and ``tc_next[m] = t1 + L_rem[i] / prev[i]`` for every fixed flow ``i = keep[m]``
    (what :func:`solve_tail` gives it at ``t1``: a fixed flow keeps ``prev``), unset for the others.
    """
    na = aidx.shape[0]
    keep = np.empty(na, aidx.dtype)
    fixed = np.zeros(n, np.bool_)
    ri = np.empty(na, np.int64)
    ripos = np.empty(na, np.int64)
    r_next = np.empty(na)
    tc_next = np.empty(na)
    m = 0
    nr = 0
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
            p = prev[i]
            if p < thr:
                fixed[i] = True
                r_next[m] = p
                tc_next[m] = t1 + left / p
            else:
                ri[nr] = i
                ripos[nr] = m
                nr += 1
            m += 1
        L_rate[i] = r
    return keep[:m], fixed, ri[:nr].copy(), ripos[:nr].copy(), r_next[:m], tc_next[:m], m - nr


@_jit
def solve_tail_ri(kind, ri, ripos, level, bneck, L_bneck, t, L_rem, L_mm, members0, r1, rates, tc):
    """:func:`solve_tail` of a warm start (``kind`` WARM or WARM_SUB, incremental members, no multiplicities)
    over the re-filled flows ``ri`` only: ``rates`` and ``tc`` (by position in the active flows, ``ripos``)
    hold the fixed flows' values already (:func:`advance_split`); the re-filled flows' are written, with
    ``L_bneck``, ``L_mm`` and the members moved flow by flow (the same values)."""
    members = np.empty(r1)
    for s in range(r1):
        members[s] = members0[s]
    for q in range(ri.shape[0]):
        i = ri[q]
        b = bneck[q] if kind == WARM_SUB else bneck[i]
        members[L_bneck[i]] -= 1.0
        members[b] += 1.0
        L_bneck[i] = b
    for q in range(ri.shape[0]):
        i = ri[q]
        r = level[L_bneck[i]]
        p = ripos[q]
        rates[p] = r
        L_mm[i] = r
        tc[p] = t + L_rem[i] / r
    members[0] = 0.0
    return members
