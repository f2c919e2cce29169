"""Max-min filling when every coefficient is one factor per resource (epoch mode's unfolded weights).

Epoch mode keeps a transport's per-resource weights ``w_l`` (1/wire efficiency) as per-entry
coefficients (docs/flow-engine.md §1), so :func:`fabric.maxmin.fill` gathers the float64[n, h]
coefficient row of every flow it freezes: on a 1,024-GPU MoE dispatch that is a 50 MB table read
at random, as costly as the flows' resource rows.  When the coefficient of every entry is the
factor of its slot (:func:`slot_coefficients` checks it on the problem), :func:`fill` takes it from that small
per-slot table instead (``sw[res + 1]``): the same values in the same order, so the same floating-point
operations as :func:`fabric.maxmin.fill` and bit-identical results (rates, bottlenecks, remaining
capacities, rounds; ``tests/test_slotfill.py``).  The rounds themselves are those of
:func:`fabric.maxmin.fill` (module docstring there); the k x k algebra of a window is its
:func:`fabric.maxmin._window`.  Above the compiled fill's threshold the compiled fill runs instead
(its own bit-identical code).

Examples
--------
>>> import numpy as np
>>> from fabric import maxmin as mm
>>> res = np.array([[0, 1], [0, -1], [1, -1]], np.int16)
>>> w = np.array([[1.0, 2.0], [1.0, 0.0], [2.0, 0.0]])
>>> ix = mm.build_index(res, w, None, 2, None)
>>> sw = slot_coefficients(res, w, None, 2)
>>> sw.tolist()
[1.0, 1.0, 2.0]
>>> cap = np.array([4.0, 6.0])
>>> a = fill(ix, sw, cap, np.full(3, mm.ALIVE, np.uint8), mm.coef_sums(ix, None))
>>> b = mm.fill(ix, cap, np.full(3, mm.ALIVE, np.uint8), mm.coef_sums(ix, None))
>>> a.rates().tolist() == b.rates().tolist(), a.rates().tolist()
(True, [1.5, 2.5, 1.5])
"""

from __future__ import annotations

import numpy as np

from fabric import kernels as _kernels
from fabric import maxmin as _mm

__all__ = ["slot_coefficients", "fill", "lean_sub_index"]

_INF = np.inf


def slot_coefficients(res: np.ndarray, weight: np.ndarray | None, mult: np.ndarray | None,
                      n_res: int) -> np.ndarray | None:
    """float64[R+1]: ``sw[l + 1]`` is the weight of every entry of resource ``l``, or None.

    The table gives the coefficients of every index :func:`fabric.maxmin.build_index` builds
    over rows of ``res`` (``coef[f, j] == sw[res[f, j] + 1]``, 1.0 on the padding, slot 0), provided
    there are no multiplicities and no row names a resource twice (merged entries add up); None
    otherwise, or when two entries of one resource have different weights.  One pass a hop column
    at a time.
    """
    if weight is None or weight.ndim != 2 or mult is not None or res.shape[0] == 0:
        return None
    from fabric.adjacency import _has_duplicates

    sw = np.full(n_res + 1, np.nan)
    cols = []
    for j in range(res.shape[1]):
        ok = res[:, j] >= 0
        rj = res[ok, j]
        cols.append((ok, rj))
        sw[np.add(rj, 1, dtype=np.intp)] = weight[ok, j]
    for j, (ok, rj) in enumerate(cols):
        if not np.array_equal(sw[np.add(rj, 1, dtype=np.intp)], weight[ok, j]):
            return None
    if _has_duplicates(res):
        return None
    sw[0] = 1.0  # the padding's coefficient in an index
    np.copyto(sw, 1.0, where=np.isnan(sw))  # resources no flow crosses (never read)
    return sw


def lean_sub_index(ix, sel: np.ndarray):
    """:func:`fabric.maxmin.sub_index` without the per-entry coefficients (for :func:`fill`, which takes
    them from the slot table): the same lists in the same order, the same ``ceps``."""
    from fabric.adjacency import _csc

    rows = np.take(ix.res, sel, axis=0)
    indptr, indices = _csc(rows, ix.n_res)
    return _mm.Index(None, rows, None, indptr, indices, ix.n_res, ix.ceps, None)


def fill(ix, sw: np.ndarray, cap: np.ndarray, state: np.ndarray, cnt: np.ndarray,
         fixed_load: np.ndarray | None = None):
    """:func:`fabric.maxmin.fill` on an index whose coefficients are ``sw[res + 1]`` (bit-identical).

    ``ix`` may omit its coefficient arrays (:func:`lean_sub_index`); ``sw`` comes from
    :func:`slot_coefficients` of the problem whose rows ``ix`` indexes.
    """
    if ix.coef is not None and _kernels.use_compiled(ix.indices.shape[0], _mm.FILL_MIN_ENTRIES):
        return _mm.fill(ix, cap, state, cnt, fixed_load)
    n_res = ix.n_res
    r1 = n_res + 1
    rem = np.empty(r1)
    rem[0] = _INF
    rem[1:] = cap
    if fixed_load is not None:
        rem -= fixed_load
        rem[0] = _INF
    cnt[0] = 0.0
    out = _mm._Fill(ix.size, r1)
    bneck, level = out.bneck, out.level
    res, indptr, indices = ix.res, ix.indptr, ix.indices
    h = res.shape[1]
    ceps = ix.ceps
    ALIVE, DONE, MAXCAND, TIE = _mm.ALIVE, _mm.DONE, _mm._MAXCAND, _mm.TIE_RTOL
    share = np.empty(r1)
    dead = np.empty(r1, dtype=np.bool_)
    full = np.zeros(r1, dtype=np.bool_)
    divide, copyto, bincount, less, add = np.divide, np.copyto, np.bincount, np.less, np.add
    take, put = np.take, np.put
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
                fl = indices[indptr[j0]:indptr[j0 + 1]].astype(intp)
                fl = fl[take(state, fl) == ALIVE]
                sv = s0 if s0 > 0.0 else 0.0
                if fl.shape[0]:
                    put(state, fl, DONE)
                    put(bneck, fl, j0)
                    level[j0] = sv
                    rows = add(take(res, fl, axis=0), 1, dtype=intp).reshape(-1)
                    dc = bincount(rows, weights=take(sw, rows), minlength=r1)
                    cnt -= dc
                    rem -= dc * sv
                full[j0] = True
                cnt[j0] = 0.0
                window = min(window * 2.0, 0.25)
            else:
                # ---- several candidates in the window (fabric.maxmin's module docstring)
                capped = cand.shape[0] > MAXCAND
                if capped:
                    sc = share[cand]
                    keep = np.argpartition(sc, MAXCAND - 1)[:MAXCAND]
                    cand = cand[keep]
                sc = share[cand]
                order = np.argsort(sc, kind="stable")
                cand = cand[order]
                sc = sc[order]
                k = cand.shape[0]
                bound = float(sc[-1]) if capped else s0 * (1.0 + window)
                ng0 = int(np.searchsorted(sc, s0 * (1.0 + TIE), side="right"))
                starts = indptr[cand].tolist()
                ends = indptr[cand + 1].tolist()
                fl = np.concatenate([indices[a:b] for a, b in zip(starts, ends)]).astype(intp)
                lens = np.subtract(ends, starts)
                pidx = np.repeat(np.arange(k, dtype=np.uint8), lens)
                m = take(state, fl) == ALIVE
                fl = fl[m]
                pidx = pidx[m]
                put(state, fl[::-1], pidx[::-1])
                mn = take(state, fl)
                viol = mn > pidx
                if viol.any():
                    np.minimum.at(state, fl[viol], pidx[viol])
                    mn = take(state, fl)
                put(state, fl, ALIVE)
                first = pidx == mn
                ff = fl[first]
                pf = pidx[first].astype(intp)
                later = pidx > mn
                rc = rem[cand]
                cc = cnt[cand]
                s = sc.copy()
                s[:ng0] = s0
                if later.any():
                    # an entry's coefficient is its slot's: the candidate's own factor
                    li = np.add(np.multiply(pidx[later], k, dtype=intp), mn[later])
                    wl = take(take(sw, cand), pidx[later])
                    W = bincount(li, weights=wl, minlength=k * k).reshape(k, k)
                    accp, live = _mm._window(W, rc, cc, s, ng0, bound, ceps)
                else:
                    live = cc >= ceps
                    accp = np.ones(k, dtype=np.bool_)
                np.maximum(s, 0.0, out=s)
                acc = take(accp, pf)
                if not acc.all():
                    ff = ff[acc]
                    pf = pf[acc]
                if ff.shape[0]:
                    put(state, ff, DONE)
                    put(bneck, ff, take(cand, pf))
                    rr = take(s, pf)
                    rows = add(take(res, ff, axis=0), 1, dtype=intp).reshape(-1)
                    w = take(sw, rows)
                    dc = bincount(rows, weights=w, minlength=r1)
                    w2 = w.reshape(-1, h)
                    w2 *= rr[:, None]
                    dr = bincount(rows, weights=w, minlength=r1)
                    cnt -= dc
                    rem -= dr
                accs = cand[accp]
                lv = live[accp]
                level[accs[lv]] = s[accp][lv]
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
    out.rem_left = rem
    out.rem = np.where(full, _INF, rem)
    out.rem[0] = _INF
    return out
