"""Compiled max-min fill (numba), bit-identical to the numpy fill of :func:`fabric.fill.fill`.

The round loop of the numpy fill runs here as compiled code with the same
decisions and the same floating-point operations in the same order: the fair
shares ``rem / cnt``, the first smallest
share, the candidate window, the stable sort of the candidates, the gathered
flows in list order, and the per-slot sums of the frozen flows' coefficients
accumulated in flow-then-column order as ``np.bincount`` does, subtracted once
per round (``cnt -= dc; rem -= dc * s`` or ``rem -= dr``).  Two steps stay in
numpy, called from :func:`fabric.fill.fill` between kernel calls: the
small k x k algebra of a window whose
candidates share flows (``W @ s`` and LAPACK's triangular solve, whose
summation order is the BLAS library's).  Every other round runs without
returning to Python.

The kernels are compiled on first use and cached by numba in the folder
:func:`fabric.kernels.available` sets (never next to the source); this module
imports numba, so :mod:`fabric.fill` imports it only to fill on it.

Examples
--------
>>> CONTINUE, DONE_, CAPPED, ALGEBRA
(-1, 0, 2, 1)
"""

from __future__ import annotations

import numpy as np

from fabric import kernels as _kernels

__all__ = ["CONTINUE", "DONE_", "CAPPED", "ALGEBRA", "load", "rounds", "multi", "apply"]

CONTINUE = -1  #: the window was applied in the kernel: run the rounds on
DONE_ = 0  #: no finite share left: the filling is over
ALGEBRA = 1  #: a window whose candidates share flows: numpy solves its k x k system
CAPPED = 2  #: (not returned any more: a capped window's candidates are chosen in the kernel)

_jit = _kernels.jit  # numba.njit with the kernels' options, or the plain function without numba


def load():
    """The compiled functions (``rounds``, ``multi``, ``apply``), or None without numba."""
    if not _kernels.available():
        return None
    return {"rounds": rounds, "multi": multi, "apply": apply}


@_jit
def _share_all(rem, cnt, share, ceps):
    """share = rem / cnt, inf where cnt < ceps (numpy's divide, less and copyto, slot by slot)."""
    for i in range(rem.shape[0]):
        c = cnt[i]
        share[i] = np.inf if c < ceps else rem[i] / c


@_jit
def _accumulate(fl, nf, res, kind, coef1d, coef2d, dc, tl, mk):
    """Per-slot sums of the coefficients (dc) of the flows fl[:nf], in flow-then-column order (as np.bincount
    over their rows); dc must be zero on entry.  The slots it adds to are listed in ``tl`` (marked in ``mk``);
    returns how many."""
    h = res.shape[1]
    nt = 0
    for q in range(nf):
        f = fl[q]
        for j in range(h):
            l = res[f, j] + 1
            if kind == 0:
                w = 1.0
            elif kind == 1:
                w = coef1d[f]
            elif kind == 3:
                w = coef1d[l]
            else:
                w = coef2d[f, j]
            dc[l] += w
            if not mk[l]:
                mk[l] = True
                tl[nt] = l
                nt += 1
    return nt


@_jit
def _share_at(rem, cnt, share, ceps, tl, nt):
    """:func:`_share_all` on the slots ``tl[:nt]`` only (the others' ``rem`` and ``cnt`` did not change)."""
    for t in range(nt):
        i = tl[t]
        c = cnt[i]
        share[i] = np.inf if c < ceps else rem[i] / c


@_jit
def _stable_sort(cand, share):
    """cand (ascending slot ids) sorted stably by share (insertion sort: k <= 64)."""
    k = cand.shape[0]
    for i in range(1, k):
        c = cand[i]
        v = share[c]
        j = i - 1
        while j >= 0 and share[cand[j]] > v:
            cand[j + 1] = cand[j]
            j -= 1
        cand[j + 1] = c


@_jit
def apply(res, kind, coef1d, coef2d, rem, cnt, share, full, level, bneck, state, ctx, ceps, alive, done, cand, s,
          accp, live, ff, pf, dc, dr, ib, tl, mk):
    """Freeze the first-crossed flows ff of the accepted candidates at s (the end of a window round).

    The flows of ``ff`` hold their candidate's position in ``state`` (:func:`multi`): an accepted one
    becomes ``done``, the others ``alive`` again (the state after :func:`multi` in every case).
    ``dc``, ``dr`` (zero on entry and on return) and ``mk`` (False on entry and on return): per-slot work
    arrays; ``tl`` lists the slots touched, the only ones whose ``cnt``, ``rem`` and share change (a slot
    no frozen flow crosses would subtract exactly 0.0: same bits)."""
    k = cand.shape[0]
    n = ff.shape[0]
    h = res.shape[1]
    nf = 0
    nt = 0
    # per-slot sums of the frozen flows' coefficients (dc) and coefficient x rate (dr), in flow-then-column
    # order (as np.bincount over their rows)
    for q in range(n):
        p = pf[q]
        f = ff[q]
        if accp[p]:
            r = s[p]
            state[f] = done
            bneck[f] = cand[p]
            nf += 1
            for j in range(h):
                l = res[f, j] + 1
                if kind == 0:
                    dc[l] += 1.0
                    dr[l] += r
                else:
                    if kind == 1:
                        w = coef1d[f]
                    elif kind == 3:
                        w = coef1d[l]
                    else:
                        w = coef2d[f, j]
                    dc[l] += w
                    dr[l] += w * r
                if not mk[l]:
                    mk[l] = True
                    tl[nt] = l
                    nt += 1
        else:
            state[f] = alive
    for t in range(nt):
        l = tl[t]
        cnt[l] -= dc[l]
        rem[l] -= dr[l]
        dc[l] = 0.0
        dr[l] = 0.0
    na = 0
    for p in range(k):
        if accp[p]:
            c = cand[p]
            if live[p]:
                level[c] = s[p]
            full[c] = True
            cnt[c] = 0.0
            na += 1
            if not mk[c]:
                mk[c] = True
                tl[nt] = c
                nt += 1
    if na == k:
        ctx[0] = min(ctx[0] * 2.0, 0.25)
    elif 2 * na < k:
        ctx[0] *= 0.5
    _share_at(rem, cnt, share, ceps, tl, nt)
    for t in range(nt):
        mk[tl[t]] = False


@_jit
def _smallest(share, thr, k):
    """The ``k`` slots of smallest share among those ``<= thr``, by share, ties by the lower slot (what
    ``np.argsort(share[cand], kind="stable")[:k]`` gives for the ascending ``cand``); one pass over the
    slots keeping the ``k`` best in order."""
    out = np.empty(k, np.int64)
    n = 0
    for i in range(share.shape[0]):
        v = share[i]
        if not v <= thr:
            continue
        if n == k:
            if not v < share[out[k - 1]]:
                continue  # a larger share, or a tie with a lower slot kept
            n -= 1
        p = n
        while p > 0 and v < share[out[p - 1]]:  # after the equal shares (lower slots)
            out[p] = out[p - 1]
            p -= 1
        out[p] = i
        n += 1
    return out


@_jit
def multi(indptr, indices, res, kind, coef1d, coef2d, ecoef, rem, cnt, share, full, level, bneck, state, ctx,
          ceps, tie, alive, done, cand, s0, dc, dr, ib, tl, mk):
    """A window of k > 1 candidates (sorted by share): applied here unless they share flows.

    Returns (code, s, W, ff, pf, rc, cc, ng0): code CONTINUE once applied,
    ALGEBRA when numpy must solve the window (W float64[k, k], counts
    for unweighted problems); then the flows of ``ff`` keep their candidate's
    position in ``state`` until :func:`apply` ends the round.
    """
    k = cand.shape[0]
    sc = np.empty(k)
    for p in range(k):
        sc[p] = share[cand[p]]
    lim = s0 * (1.0 + tie)
    ng0 = 0
    while ng0 < k and sc[ng0] <= lim:
        ng0 += 1
    ff = ib[1]
    pf = ib[2]
    W = np.zeros((k, k))
    # one pass over the candidates' lists, in list order: the first candidate crossing each unfrozen flow (the
    # entries come in candidate order) is marked in its state and lists the flow in ff; a later candidate
    # crossing it adds the entry's coefficient to W[p, first] (in list order, as numpy's bincount)
    q = 0
    nlater = 0
    for p in range(k):
        c = cand[p]
        for e in range(indptr[c], indptr[c + 1]):
            f = indices[e]
            m = state[f]
            if m == alive:
                ff[q] = f
                pf[q] = p
                q += 1
                state[f] = p
            elif m < done:
                nlater += 1
                if m < p:
                    if kind == 0:
                        W[p, m] += 1.0
                    elif kind == 1:
                        W[p, m] += coef1d[f]
                    elif kind == 3:
                        W[p, m] += coef1d[c]
                    else:
                        W[p, m] += ecoef[e]
    ff = ff[:q]
    pf = pf[:q]
    rc = np.empty(k)
    cc = np.empty(k)
    s = sc.copy()
    for p in range(k):
        rc[p] = rem[cand[p]]
        cc[p] = cnt[cand[p]]
    for p in range(ng0):
        s[p] = s0
    if nlater:
        return ALGEBRA, s, W, ff, pf, rc, cc, ng0
    live = np.empty(k, np.bool_)
    accp = np.ones(k, np.bool_)
    for p in range(k):
        live[p] = cc[p] >= ceps
    apply(res, kind, coef1d, coef2d, rem, cnt, share, full, level, bneck, state, ctx, ceps, alive, done, cand, s,
          accp, live, ff, pf, dc, dr, ib, tl, mk)
    return CONTINUE, s, W, ff, pf, rc, cc, ng0


@_jit
def rounds(indptr, indices, res, kind, coef1d, coef2d, ecoef, rem, cnt, share, full, level, bneck, state, ctx,
           ceps, tie, alive, done, maxcand, dc, dr, ib, tl, mk):
    """Filling rounds until the end (DONE_) or a window numpy must handle (ALGEBRA).

    ``ctx`` = [window, rounds]; ``share`` must hold the current shares.
    Returns (code, cand, s, W, ff, pf, rc, cc, ng0, bound, s0).

    One pass over the slots per round: the first smallest share ``s0`` and, in slot order, every slot whose
    share is within the window of the smallest share seen so far (a superset of the candidates, which are
    within the window of ``s0``: the running minimum only decreases), filtered afterwards; a round then
    touches only the slots its frozen flows cross (``tl``, ``mk``; ``dc`` zero between rounds).
    """
    r1 = rem.shape[0]
    e_i = np.zeros(0, np.int64)
    e_f = np.zeros(0)
    e_w = np.zeros((0, 0))
    buf = np.empty(maxcand + 1, np.int64)
    seen = np.empty(r1, np.int64)
    while True:
        window = ctx[0]
        wf = 1.0 + window
        j0 = 0
        s0 = share[0]
        ns = 0
        if not np.isnan(s0):
            # slot 0 (the padding) is never a candidate unless its share is the smallest and finite
            if s0 <= s0 * wf:
                seen[0] = 0
                ns = 1
            for i in range(1, r1):
                v = share[i]
                if np.isnan(v):
                    j0 = i
                    s0 = v
                    break
                if v < s0:
                    j0 = i
                    s0 = v
                if v <= s0 * wf:
                    seen[ns] = i
                    ns += 1
        if not s0 < np.inf:
            return DONE_, e_i, e_f, e_w, e_i, e_i, e_f, e_f, 0, 0.0, s0
        ctx[1] += 1.0
        nc = 0
        thr = s0 * wf
        if s0 > 0.0:
            for t in range(ns):
                i = seen[t]
                if share[i] <= thr:
                    if nc <= maxcand:
                        buf[nc] = i
                    nc += 1
        if nc <= 1:
            # ---- one bottleneck slot
            sv = s0 if s0 > 0.0 else 0.0
            a, b = indptr[j0], indptr[j0 + 1]
            fl = ib[0]
            nf = 0
            for e in range(a, b):
                f = indices[e]
                fl[nf] = f
                nf += state[f] == alive
            nt = 0
            if nf:
                for q in range(nf):
                    state[fl[q]] = done
                    bneck[fl[q]] = j0
                level[j0] = sv
                nt = _accumulate(fl, nf, res, kind, coef1d, coef2d, dc, tl, mk)
                for t in range(nt):
                    l = tl[t]
                    cnt[l] -= dc[l]
                    rem[l] -= dc[l] * sv
                    dc[l] = 0.0
            full[j0] = True
            cnt[j0] = 0.0
            if not mk[j0]:
                mk[j0] = True
                tl[nt] = j0
                nt += 1
            ctx[0] = min(window * 2.0, 0.25)
            _share_at(rem, cnt, share, ceps, tl, nt)
            for t in range(nt):
                mk[tl[t]] = False
            continue
        bound = thr
        if nc > maxcand:
            cand = _smallest(share, thr, maxcand)
            bound = share[cand[maxcand - 1]]
        else:
            cand = buf[:nc].copy()
            _stable_sort(cand, share)
        code, s, W, ff, pf, rc, cc, ng0 = multi(indptr, indices, res, kind, coef1d, coef2d, ecoef, rem, cnt,
                                                share, full, level, bneck, state, ctx, ceps, tie, alive, done,
                                                cand, s0, dc, dr, ib, tl, mk)
        if code == ALGEBRA:
            return ALGEBRA, cand, s, W, ff, pf, rc, cc, ng0, bound, s0
