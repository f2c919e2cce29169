"""Progressive filling: the rounds that freeze flows at their max-min fair rates.

The machinery behind :func:`fabric.maxmin.maxmin_rates` and the event loop
(:mod:`fabric.engine`, :mod:`fabric.eventloop`): per-flow states
(:data:`ALIVE` / :data:`DONE`), the per-slot coefficient sums
(:func:`coef_sums`) and fixed loads (:func:`fixed_load`) of warm starts, and
the filling itself (:func:`fill`, numpy rounds, or the compiled rounds of
:mod:`fabric.fillkernel` from :data:`FILL_MIN_ENTRIES` adjacency entries, same
bits).  The resource -> flows index it reads is :mod:`fabric.adjacency`'s
(:func:`build_index`, :func:`sub_index`).

Algorithm (docs/flow-engine.md, section 2): keep per resource the remaining
capacity ``rem`` and the unfrozen coefficient sum ``cnt``, and in each round
freeze the flows of the resources whose fair share ``rem / cnt`` is smallest.
A round takes up to 64 resources whose share lies in a small window above the
minimum, sorted by share, and processes them in that order as progressive
filling would: candidate ``j`` freezes its unfrozen flows at its share *after*
the earlier candidates froze theirs (the shares of the whole window solve one
small triangular system), provided it is then still the smallest share left;
the first candidate that is not ends the ordered prefix.  Past it, a candidate
none of whose flows crosses an earlier candidate is a local minimum of the
share (its flows touch only resources of larger or equal share, and shares
never decrease during filling) and freezes at its own share too.  Every round
is therefore exact; it only needs fewer Python-level iterations (135 instead
of 998 on a 1,024-GPU ECMP all-to-all).

Examples
--------
Three flows share link 0 (10 B/s); flow 2 also crosses link 1 (2 B/s).  Slot
``l + 1`` is resource ``l``:

>>> import numpy as np
>>> res = np.array([[0, -1], [0, -1], [0, 1]])
>>> ix = build_index(res, None, None, 2, None)
>>> state = np.full(ix.size, ALIVE, dtype=np.uint8)
>>> out = fill(ix, np.array([10.0, 2.0]), state, coef_sums(ix, None))
>>> out.rates().tolist(), (out.bneck - 1).tolist(), bool((state == DONE).all())
([4.0, 4.0, 2.0], [0, 0, 1], True)
"""

from __future__ import annotations

import threading

import numpy as np

from fabric import kernels as _kernels
from fabric.adjacency import _build_index, _Index, _sub_index

__all__ = ["ALIVE", "DONE", "FILL_MIN_ENTRIES", "TIE_RTOL", "Index", "build_index", "sub_index", "fill",
           "coef_sums", "fixed_load"]

#: Relative tolerance under which two fair shares count as the same level (:data:`fabric.maxmin.TIE_RTOL`).
TIE_RTOL = 1e-9

_INF = np.inf

#: Adjacency entries from which ``FABRIC_EMU_KERNELS=auto`` fills on the compiled kernel (bit-identical).
FILL_MIN_ENTRIES = 1 << 24


# --------------------------------------------------------------------------- flow states and slots
#
# Internal resource "slots": slot 0 is a dummy that collects the padding
# entries (-1) and is never a bottleneck; slot l + 1 is resource l.

_ALIVE = np.uint8(255)  # flow state: unfrozen, to be filled
_DONE = np.uint8(254)  # flow state: frozen, inactive or fixed
_MAXPOS = 250  # candidate positions per round are stored in the uint8 state
_MAXCAND = 64  # candidates per round (the round solves a k x k triangular system)
_UPPER: dict = {}


def _upper(k: int) -> np.ndarray:
    """bool[k, k], True on and above the diagonal (cached)."""
    u = _UPPER.get(k)
    if u is None:
        u = _UPPER[k] = np.triu(np.ones((k, k), dtype=np.bool_))
    return u


# --------------------------------------------------------------------------- filling


class _Fill:
    """Result buffers of one filling (internal).

    ``bneck`` holds, per local flow, the slot that froze it (0 = none);
    ``level`` the share at which each slot froze its flows (inf if it froze
    none).  A frozen flow's rate is ``level[bneck]``.
    """

    __slots__ = ("bneck", "level", "rounds", "rem", "rem_left", "min_rate")

    def __init__(self, n: int, r1: int):
        self.bneck = np.zeros(n, dtype=np.int32)
        self.level = np.full(r1, _INF)
        self.rounds = 0
        self.rem = None
        self.rem_left = None
        self.min_rate = None

    def rates(self, sel=None) -> np.ndarray:
        """Rates of the flows ``sel`` (all if None); level[0] = inf for unconstrained flows."""
        b = self.bneck if sel is None else self.bneck[sel]
        return self.level[b]


def _counts(ix: _Index, state: np.ndarray | None) -> np.ndarray:
    """Per-slot coefficient sums of the flows with state _ALIVE (all if None)."""
    r1 = ix.n_res + 1
    if state is None and ix.coef is None:
        return np.diff(ix.indptr).astype(np.float64)
    if state is None:
        rows = ix.res
        w = ix.coef
    else:
        sel = state == _ALIVE
        rows = ix.res[sel]
        w = None if ix.coef is None else ix.coef[sel]
    keys = np.add(rows, 1, dtype=np.intp).reshape(-1)
    if w is None:
        return np.bincount(keys, minlength=r1).astype(np.float64)
    if w.ndim == 1:
        w = np.repeat(w, rows.shape[1])
    return np.bincount(keys, weights=w.reshape(-1), minlength=r1)


def _fixed_load(ix: _Index, sel: np.ndarray, rate: np.ndarray) -> np.ndarray:
    """Per-slot load of the flows ``sel`` at rates ``rate`` (float64[n])."""
    rows = ix.res[sel]
    h = rows.shape[1]
    w = np.repeat(rate[sel], h)
    if ix.coef is not None:
        c = ix.coef[sel]
        w = w * (np.repeat(c, h) if c.ndim == 1 else c.reshape(-1))
    keys = np.add(rows, 1, dtype=np.intp).reshape(-1)
    return np.bincount(keys, weights=w, minlength=ix.n_res + 1)


def _window(W, rc, cc, s, ng0: int, bound: float, ceps: float):
    """Shares and accepted candidates of a window whose candidates share flows (module docstring).

    ``W[j, i]`` (k x k, lower triangular; int counts when unweighted): the
    coefficient on candidate ``j`` of the flows that candidate ``i < j`` freezes
    first; ``rc``, ``cc``: remaining capacity and coefficient sum of the
    candidates; ``s`` (float64[k]) holds their shares (the first ``ng0`` at the
    level) and is overwritten with the shares at which they freeze.  Returns
    ``(accp, live)``: the candidates accepted, and those with unfrozen flows left.
    Shared by the numpy and the compiled fill (:mod:`fabric.fillkernel`).
    """
    k = s.shape[0]
    rowsum = W.sum(axis=1)
    diag = cc - rowsum
    live = diag >= ceps
    if ng0 < k:
        # shares after the earlier candidates froze their flows: a triangular system
        L = W[ng0:, ng0:]
        L[np.diag_indices(k - ng0)] = np.where(live[ng0:], diag[ng0:], 1.0)
        rhs = rc[ng0:] - W[ng0:, :ng0] @ s[:ng0]
        rhs[~live[ng0:]] = 0.0
        from scipy.linalg import lapack as _lapack  # only when candidates interact

        s[ng0:] = _lapack.dtrtrs(L, rhs, lower=1)[0]
        L[np.diag_indices(k - ng0)] = 0.0
    # candidate j may freeze at s[j] only if it is then the smallest share left:
    # SH[m, j] is the share of candidate m once candidates 0..j-1 have frozen
    CW = np.zeros((k, k))
    CWS = np.zeros((k, k))
    np.cumsum(W[:, :-1], axis=1, out=CW[:, 1:])
    np.cumsum(W[:, :-1] * s[None, :-1], axis=1, out=CWS[:, 1:])
    den = cc[:, None] - CW
    SH = (rc[:, None] - CWS) / den
    SH[den < ceps] = _INF
    SH[_upper(k)] = _INF  # only later candidates m > j
    ok = (s <= SH.min(axis=0) * (1.0 + 1e-12)) & (s <= bound * (1.0 + 1e-12))
    ok[:ng0] = True
    ok |= ~live
    bad = np.flatnonzero(~ok)
    J = int(bad[0]) if bad.shape[0] else k
    accp = np.arange(k) < J
    if J < k:
        # beyond the valid prefix: candidates none of whose flows crosses an earlier
        # candidate are local minima of the share and freeze at their own share
        accp |= (rowsum == 0.0) & live
    return accp, live


def _fill(ix: _Index, cap: np.ndarray, state: np.ndarray, cnt: np.ndarray,
          fixed_load: np.ndarray | None = None, *, compiled: bool = True, sw: np.ndarray | None = None,
          min_rate: np.ndarray | None = None, min_entries: int | None = None) -> _Fill:
    """Progressive filling of the flows whose ``state`` is _ALIVE.

    ``state`` (uint8[n]) is updated in place (filled flows become _DONE);
    ``cnt`` (float64[R+1], per-slot coefficient sum of the alive flows) is
    consumed.  ``fixed_load`` is the per-slot load of flows kept at fixed rates.
    ``compiled``: the compiled kernel (:mod:`fabric.fillkernel`, bit-identical)
    may be used, as :func:`fabric.kernels.use_fill` decides from
    :data:`FILL_MIN_ENTRIES` adjacency entries.
    ``sw``: every entry's coefficient is its slot's, ``sw[res + 1]`` (:mod:`fabric.slotfill`): the numpy
    rounds read that table instead of the index's per-entry coefficients (same values in the same order,
    so the same bits), and ``ix`` may omit them.
    ``min_entries``: the compiled kernel's threshold in adjacency entries instead of
    :data:`FILL_MIN_ENTRIES` (a caller whose compiled kernels are loaded already passes a lower one).
    ``min_rate`` (float64[R+1]): lowered in place, per slot, to the smallest rate of the flows this fill
    freezes that cross it (O(R) per round: the rounds' coefficient sums say which slots their flows
    cross); the numpy rounds only: the result's ``min_rate`` is the array when it was kept, else None.
    """
    n_res = ix.n_res
    r1 = n_res + 1
    rem = np.empty(r1)
    rem[0] = _INF
    rem[1:] = cap
    if fixed_load is not None:
        rem -= fixed_load
        rem[0] = _INF
    cnt[0] = 0.0
    # the compiled fill reads the index's own coefficients, or the slot table ``sw`` of an index without them
    if compiled and _kernels.use_fill(
            ix.indices.shape[0], FILL_MIN_ENTRIES if min_entries is None else min_entries):
        from fabric import fillkernel  # imports numba

        fk = fillkernel.load()
        if fk is not None:
            if ix.pending is not None:
                ix.pending.all()
            return _fill_compiled(fk, ix, rem, cnt, state, None if ix.coef is not None else sw)
    out = _Fill(ix.size, r1)
    bneck, level = out.bneck, out.level
    res, coef, indptr, indices, ecoef = ix.res, ix.coef, ix.indptr, ix.indices, ix.ecoef
    h = res.shape[1]
    ceps = ix.ceps
    pend = ix.pending  # columns placed as their slots are first read
    weighted = coef is not None
    coef2d = weighted and coef.ndim == 2
    share = np.empty(r1)
    dead = np.empty(r1, dtype=np.bool_)
    # slots that froze flows (full): their remaining capacity is kept (a dead slot's share is never read)
    full = np.zeros(r1, dtype=np.bool_)
    divide, copyto, bincount, less, add = np.divide, np.copyto, np.bincount, np.less, np.add
    take = np.take
    intp = np.intp
    rounds = 0
    window = 1e-3
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        divide(rem, cnt, out=share)
        less(cnt, ceps, out=dead)
        copyto(share, _INF, where=dead)
        while True:
            j0 = int(share.argmin())
            s0 = float(share[j0])
            if not s0 < _INF:
                break
            rounds += 1
            cand = np.flatnonzero(share <= s0 * (1.0 + window)) if s0 > 0.0 else None
            if cand is None or cand.shape[0] == 1:
                # ---- one bottleneck slot
                if pend is not None:
                    pend.ensure(j0)
                fl = indices[indptr[j0]:indptr[j0 + 1]].astype(intp)  # intp ids: faster takes and puts
                m = take(state, fl) == _ALIVE
                if not m.all():
                    fl = fl[m]
                sv = s0 if s0 > 0.0 else 0.0
                if fl.shape[0]:
                    state[fl] = _DONE  # (a scalar by fancy assignment: ~3x faster than np.put)
                    bneck[fl] = j0
                    level[j0] = sv
                    rows = add(take(res, fl, axis=0), 1, dtype=intp).reshape(-1)
                    if sw is not None:
                        dc = bincount(rows, weights=take(sw, rows), minlength=r1)
                    elif weighted:
                        w = take(coef, fl, axis=0)
                        dc = bincount(rows, weights=w.reshape(-1) if coef2d else np.repeat(w, h), minlength=r1)
                    else:
                        dc = bincount(rows, minlength=r1)
                    cnt -= dc
                    rem -= dc * sv
                    if min_rate is not None:
                        np.minimum(min_rate, sv, out=min_rate, where=dc > 0)
                full[j0] = True
                cnt[j0] = 0.0
                window = min(window * 2.0, 0.25)
            else:
                # ---- several candidates in the window (see the module docstring)
                capped = cand.shape[0] > _MAXCAND
                if capped:  # the _MAXCAND smallest shares, ties by the lower slot (machine-independent)
                    sc = share[cand]
                    keep = np.argsort(sc, kind="stable")[:_MAXCAND]
                    cand = cand[keep]
                sc = share[cand]
                order = np.argsort(sc, kind="stable")
                cand = cand[order]
                sc = sc[order]
                k = cand.shape[0]
                # non-candidates have shares >= bound, and shares only grow while flows at lower rates leave
                bound = float(sc[-1]) if capped else s0 * (1.0 + window)
                ng0 = int(np.searchsorted(sc, s0 * (1.0 + TIE_RTOL), side="right"))
                if pend is not None:
                    pend.ensure(cand)
                starts = indptr[cand].tolist()
                ends = indptr[cand + 1].tolist()
                fl = np.concatenate([indices[a:b] for a, b in zip(starts, ends)], dtype=intp)
                lens = np.subtract(ends, starts)
                pidx = np.repeat(np.arange(k, dtype=np.uint8), lens)
                m = take(state, fl) == _ALIVE
                if not m.all():
                    fl = fl[m]
                    pidx = pidx[m]
                if ecoef is not None and sw is None:
                    ew = np.concatenate([ecoef[a:b] for a, b in zip(starts, ends)])[m]
                # first candidate (smallest position) crossed by each gathered flow: the entries are in
                # candidate order, so writing them in reverse leaves the smallest position; checked
                state[fl[::-1]] = pidx[::-1]
                mn = take(state, fl)
                viol = mn > pidx
                if viol.any():
                    np.minimum.at(state, fl[viol], pidx[viol])
                    mn = take(state, fl)
                if ng0 < k:  # (all at the level: every candidate is accepted and each of these flows is frozen
                    state[fl] = _ALIVE  # below, from its first candidate: no state to restore)
                first = pidx == mn
                if first.all():
                    ff = fl
                    pf = pidx.astype(intp)
                else:
                    ff = fl[first]
                    pf = pidx[first].astype(intp)
                later = pidx > mn
                rc = rem[cand]
                cc = cnt[cand]
                s = sc.copy()
                s[:ng0] = s0
                if later.any():
                    # W[j, i]: coefficient on candidate j of the flows that candidate i < j freezes first
                    li = np.add(np.multiply(pidx[later], k, dtype=intp), mn[later])
                    if sw is not None:  # an entry's coefficient is its slot's: the candidate's own factor
                        wl = take(take(sw, cand), pidx[later])
                    elif not weighted:
                        wl = None
                    elif ecoef is not None:
                        wl = ew[later]
                    else:
                        wl = take(coef, fl[later])
                    W = bincount(li, weights=wl, minlength=k * k).reshape(k, k)
                    if ng0 == k:
                        # every candidate at the level: _window accepts them all and changes no share; only
                        # which of them keep unfrozen flows is left (the same sum and comparison as there)
                        live = (cc - W.sum(axis=1)) >= ceps
                        accp = np.ones(k, dtype=np.bool_)
                    else:
                        accp, live = _window(W, rc, cc, s, ng0, bound, ceps)
                else:
                    live = cc >= ceps
                    accp = np.ones(k, dtype=np.bool_)
                np.maximum(s, 0.0, out=s)
                if not accp.all():
                    acc = take(accp, pf)
                    if not acc.all():
                        ff = ff[acc]
                        pf = pf[acc]
                if ff.shape[0]:
                    state[ff] = _DONE
                    bneck[ff] = take(cand.astype(bneck.dtype), pf)
                    rows = add(take(res, ff, axis=0), 1, dtype=intp).reshape(-1)
                    rr = None if sw is None and not weighted else take(s, pf)
                    if sw is not None:
                        w = take(sw, rows)
                        dc = bincount(rows, weights=w, minlength=r1)
                        w2 = w.reshape(-1, h)
                        w2 *= rr[:, None]
                        dr = bincount(rows, weights=w, minlength=r1)
                    elif weighted:
                        w = take(coef, ff, axis=0)
                        if coef2d:
                            dc = bincount(rows, weights=w.reshape(-1), minlength=r1)
                            dr = bincount(rows, weights=(w * rr[:, None]).reshape(-1), minlength=r1)
                        else:
                            dc = bincount(rows, weights=np.repeat(w, h), minlength=r1)
                            dr = bincount(rows, weights=np.repeat(w * rr, h), minlength=r1)
                    else:
                        dc = bincount(rows, minlength=r1)
                        sa = s[accp]
                        if sa.min() == sa.max():
                            # one rate r for the window: a slot's sum is 0 + r + r + ... (dc of them, bincount
                            # adds in order), i.e. the same additions as a running sum of r's, looked up by count
                            run = np.empty(int(dc.max()) + 1)
                            run[0] = 0.0
                            run[1:] = sa[0]
                            dr = take(np.cumsum(run, out=run), dc)
                        else:
                            dr = bincount(rows, weights=np.repeat(take(s, pf), h), minlength=r1)
                    cnt -= dc
                    rem -= dr
                accs = cand[accp]
                lv = live[accp]
                level[accs[lv]] = s[accp][lv]
                if min_rate is not None and ff.shape[0]:
                    # the rates given (level[bneck]): one value for the window (e.g. tied shares), O(R)
                    va = take(level, accs)
                    if va.min() == va.max():
                        np.minimum(min_rate, va[0], out=min_rate, where=dc > 0)
                    else:
                        np.minimum.at(min_rate, rows, np.repeat(take(level, take(cand, pf)), h))
                full[accs] = True
                cnt[accs] = 0.0
                na = int(accp.sum())
                if na == k:
                    window = min(window * 2.0, 0.25)
                elif 2 * na < k:
                    window *= 0.5
            divide(rem, cnt, out=share)
            less(cnt, ceps, out=dead)
            copyto(share, _INF, where=dead)
    out.rounds = rounds
    out.min_rate = min_rate
    out.rem_left = rem  # capacity left per slot by all the flows (fixed and filled), ~0 on full slots
    out.rem = np.where(full, _INF, rem)  # remaining capacity per slot; inf on the slots that froze flows
    out.rem[0] = _INF
    return out


_BUFFERS = threading.local()


def _fill_buffers(n: int):
    """int64[3, >= n] work buffer of the compiled fill (the flows of a one-slot round; a window's first-crossed
    flows and their candidates), per thread (kept between fills: its pages are touched once, not at every fill)."""
    b = getattr(_BUFFERS, "ib", None)
    if b is None or b.shape[1] < n:
        b = _BUFFERS.ib = np.empty((3, max(n, 1024)), dtype=np.int64)
    return b


def _fill_compiled(fk, ix: _Index, rem: np.ndarray, cnt: np.ndarray, state: np.ndarray,
                   sw: np.ndarray | None = None) -> _Fill:
    """:func:`_fill` on the compiled rounds of :mod:`fabric.fillkernel` (same bits); numpy does the windows
    whose candidates share flows (:func:`_window`). ``sw``: every entry's coefficient is its slot's,
    ``sw[res + 1]`` (an index without coefficient arrays; kernel kind 3)."""
    from fabric import fillkernel as _fk

    r1 = ix.n_res + 1
    out = _Fill(ix.size, r1)
    coef, ceps = ix.coef, ix.ceps
    z1, z2 = np.zeros(1), np.zeros((1, 1))
    if sw is not None:
        kind, c1, c2, ec = 3, sw, z2, z1
    elif coef is None:
        kind, c1, c2, ec = 0, z1, z2, z1
    elif coef.ndim == 1:
        kind, c1, c2, ec = 1, coef, z2, z1
    else:
        kind, c1, c2, ec = 2, z1, coef, ix.ecoef
    full = np.zeros(r1, dtype=np.bool_)
    share = np.empty(r1)
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        np.divide(rem, cnt, out=share)
        np.copyto(share, _INF, where=np.less(cnt, ceps))
    ctx = np.array([1e-3, 0.0])  # window, rounds
    dc, dr = np.zeros(r1), np.zeros(r1)
    tie = float(TIE_RTOL)
    base = (ix.indptr, ix.indices, ix.res, kind, c1, c2, ec, rem, cnt, share, full, out.level, out.bneck, state, ctx,
            ceps, tie, _ALIVE, _DONE)
    # work buffers of the kernels: a window gathers at most the lists of its _MAXCAND candidates
    lens = np.diff(ix.indptr)
    need = int(np.partition(lens, lens.shape[0] - _MAXCAND)[-_MAXCAND:].sum() if lens.shape[0] > _MAXCAND
               else lens.sum()) + 1
    # the kernels' touched-slot list and marks (False between rounds; dc and dr stay zero between rounds)
    work = (dc, dr, _fill_buffers(need), np.empty(r1, dtype=np.int64), np.zeros(r1, dtype=np.bool_))
    while True:
        code, cand, s, W, ff, pf, rc, cc, ng0, bound, s0 = fk["rounds"](*base, _MAXCAND, *work)
        if code == _fk.DONE_:
            break
        with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
            accp, live = _window(W if kind else W.astype(np.intp), rc, cc, s, int(ng0), float(bound), ceps)
            np.maximum(s, 0.0, out=s)
        fk["apply"](ix.res, kind, c1, c2, rem, cnt, share, full, out.level, out.bneck, state, ctx, ceps, _ALIVE,
                    _DONE, cand, s, accp, live, ff, pf, *work)
    out.rounds = int(ctx[1])
    out.rem_left = rem
    out.rem = np.where(full, _INF, rem)
    out.rem[0] = _INF
    return out


# --------------------------------------------------------------------------- engine interface
#
# What fabric.maxmin and the event loop (fabric.engine, fabric.eventloop) use: an index over a subset of
# flows, a filling with per-flow states, and the per-slot coefficient sums and fixed loads of warm starts.

ALIVE = _ALIVE  #: flow state: unfrozen, to be filled
DONE = _DONE  #: flow state: frozen, inactive or fixed
Index = _Index
build_index = _build_index
sub_index = _sub_index
fill = _fill
coef_sums = _counts
fixed_load = _fixed_load
