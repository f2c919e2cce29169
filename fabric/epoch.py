"""Epoch mode of the event loop: budgets of idled capacity, the epoch end, rescales between solves.

The rule and what is proven about it are in docs/flow-engine.md §4; the loop
itself is :class:`fabric.eventloop._EventLoop`, which mixes these methods in.

Examples
--------
>>> import numpy as np
>>> sorted(_earliest(np.array([5.0, 1.0, 4.0, 2.0]), 1).tolist())
[1, 3]
"""

from __future__ import annotations

import numpy as np

__all__: list[str] = []

_INF = np.inf


def _earliest(tc: np.ndarray, k: int, ek=None) -> np.ndarray:
    """Indices of at least the ``k + 1`` smallest values of ``tc`` (unordered, all values below any left out).

    A threshold estimated on a strided sample selects them with one comparison
    pass; ``argpartition`` is the fallback when the estimate misses.  ``ek``
    (:mod:`fabric.epoch_kernels`): the comparison pass compiled (the same indices).
    """
    n = tc.shape[0]
    if n > 16 * k and n > 65536:
        step = n // 4096
        samp = np.sort(tc[::step])
        q = min(samp.shape[0] - 1, int(1.5 * (k + 1) / n * samp.shape[0]) + 2)
        thr = samp[q]
        if ek is not None:
            sel, m = ek.select_le(tc, thr, 4 * (k + 1))
        else:
            sel = np.flatnonzero(tc <= thr)
            m = sel.shape[0]
        if k + 1 <= m <= 4 * (k + 1):
            return sel
    return np.argpartition(tc, k)[: k + 1]


def _argsort_slots(keys: np.ndarray, n_res: int) -> np.ndarray:
    """Stable argsort of slot ids (numpy radix-sorts 16-bit keys, 6x faster than int64)."""
    if n_res < 65535:
        return np.argsort(keys.astype(np.uint16), kind="stable")
    return np.argsort(keys, kind="stable")


def _slot_max_into(out: np.ndarray, keys: np.ndarray, vals: np.ndarray) -> None:
    """``np.maximum.at(out, keys, vals)`` by a radix sort of the keys and one ``maximum.reduceat``
    (a maximum is exact in any order, so the same values; ``ufunc.at`` costs ~85 ns an entry)."""
    if keys.shape[0] == 0:
        return
    o = _argsort_slots(keys, out.shape[0])
    ks = keys[o]
    first = np.flatnonzero(np.concatenate(([True], ks[1:] != ks[:-1])))
    red = np.maximum.reduceat(vals[o], first)
    u = ks[first]
    out[u] = np.maximum(out[u], red)


def _row_bincount(keys: np.ndarray, rates: np.ndarray, coef: np.ndarray | None, minlength: int) -> np.ndarray:
    """Per-slot sum of ``rate x coefficient`` over the entries of the rows ``keys`` (slot ids)."""
    h = keys.shape[1]
    w = np.repeat(rates, h)
    if coef is not None:
        w = w * (np.repeat(coef, h) if coef.ndim == 1 else coef.reshape(-1))
    return np.bincount(keys.reshape(-1), weights=w, minlength=minlength)


class _EpochMixin:
    """Epoch-mode methods of :class:`fabric.eventloop._EventLoop` (internal)."""

    def _coef_rows(self, lidx, keys):
        """The index's coefficient rows of the local flows ``lidx`` (None if unweighted).

        ``keys``: their slot ids (int[len(lidx), h]).  With one factor per slot
        (``self.sw``, :mod:`fabric.slotfill`) the same values come from that small table rather
        than from the index's float64[n, h] array.
        """
        if self.sw is not None:
            return np.take(self.sw, keys)
        ix = self.ix
        return None if ix.coef is None else np.take(ix.coef, lidx, axis=0)

    def _depart(self, gd, rd):
        """Maintained per-slot load and members after the local flows ``gd`` (rates ``rd``) finished."""
        ix = self.ix
        keys = np.take(self.L_keys, gd, axis=0)
        coef = self._coef_rows(gd, keys)
        self.load -= _row_bincount(keys, rd, coef, self.pr.R + 1)
        self.load[0] = 0.0
        mult = None if self.L_mult is None else self.L_mult[gd]
        self.members -= np.bincount(self.L_bneck[gd], weights=mult, minlength=self.pr.R + 1)
        self.members[0] = 0.0
        if self.mm_load is not None:  # the same flows at their max-min rates
            self.mm_load -= _row_bincount(keys, np.take(self.L_mm, gd), coef, self.pr.R + 1)
            self.mm_load[0] = 0.0

    def _rescale(self, aidx):
        """Cheap update between solves (epoch mode): every flow's rate times ``min over its slots of c / load``.

        Feasible (no slot ends above capacity); it gives back most of the freed
        capacity when slots empty at similar rates, but it is not max-min.
        Returns None when a budget would run out again at once (then a solve
        follows).
        """
        ix = self.ix
        keys = np.take(self.L_keys, aidx, axis=0)
        h = keys.shape[1]
        r = self.L_rate[aidx]
        coef = None
        if self.sw is not None or ix.coef is not None:
            c = self._coef_rows(aidx, keys)
            coef = np.repeat(c, h) if c.ndim == 1 else c.reshape(-1)
        load = self.load.copy()  # maintained: set by the solve, lowered by departures
        capx = self.capx
        with np.errstate(divide="ignore", invalid="ignore"):
            sig = np.where((load > 0.0) & np.isfinite(capx), capx / load, _INF)
        sig[0] = _INF
        mult = None if self.L_mult is None else self.L_mult[aidx]
        members = self.members
        g = np.take(sig, keys)
        s = g[:, 0].copy()
        for j in range(1, h):
            np.minimum(s, g[:, j], out=s)
        s[~(s < _INF)] = 1.0
        np.maximum(s, 1.0, out=s)
        d = r * (s - 1.0)
        new = r + d
        w = np.repeat(d, h) if coef is None else np.repeat(d, h) * coef
        load += np.bincount(keys.reshape(-1), weights=w, minlength=self.pr.R + 1)
        with np.errstate(invalid="ignore"):
            idle = np.maximum(capx - load, 0.0)
        idle[0] = 0.0
        sat = members > 0
        # would a budget run out again right away?
        eps_c = self.eps_slot * capx
        with np.errstate(invalid="ignore"):
            budget = eps_c * self.busy - self.lost
        if (sat & (budget <= 1e-9 * eps_c * self.busy) & (idle > eps_c)).any():
            return None
        N0 = float(aidx.shape[0]) if mult is None else float(mult.sum())
        with np.errstate(divide="ignore", invalid="ignore"):
            H0 = float(np.where(sat, idle * members / capx, 0.0).sum())
        G0 = self.agg_lost - self.eps * self.agg_time
        if G0 >= -1e-9 * self.eps * self.agg_time and H0 > self.eps * N0:
            return None
        self.load = load
        self.idle0 = np.where(sat, idle, 0.0)
        self.rescales += 1
        if self.peak is not None:
            with np.errstate(divide="ignore", invalid="ignore"):
                u = load[1:] / self.pr.cap
            np.maximum(self.peak[1:], np.nan_to_num(u), out=self.peak[1:])
        return new

    # ---------------------------------------------------------------- epochs

    def _epoch_end(self, t0, aidx, rates, tc, sat, n_act=None) -> float:
        """First time a budget runs out (docs/flow-engine.md §4), or the last completion.

        Per resource: on a saturated slot ``l`` (one that is some flow's
        bottleneck), the capacity idled inside epochs exceeds
        ``eps_slot[l] * c_l * busy_l``.  Aggregate: the idled flow-time
        ``sum_l int idle_l * members_l / c_l dt`` exceeds ``eps`` times the elapsed
        flow-time ``int (active flows) dt``.  Both are piecewise linear between
        completions; the k earliest completions are walked in windows of growing
        size (one partial sort).  The aggregate curve is kept for ``_account``.

        ``aidx`` None (a lazy epoch, :mod:`fabric.lazyepoch`): ``rates`` and ``tc`` are per listed flow, inf
        where not active, and ``n_act`` flows are active (no multiplicities); the completions examined (the
        listed flows before ``t_next``) are kept in ``_ee_cand`` as ``(flows, t_next)``.
        """
        dense = aidx is None
        n = n_act if dense else tc.shape[0]
        self._curve = None
        self._ee_cand = None
        if not sat.any():
            return float(tc.min())
        ix = self.ix
        capx = self.capx
        eps_l = self.eps_slot
        eps = self.eps
        idle0 = self.idle0
        members = self.members
        with np.errstate(invalid="ignore"):
            budget0 = eps_l * capx * self.busy - self.lost  # >= 0 on saturated slots
        np.maximum(budget0, 0.0, out=budget0)
        ec_all = eps_l * capx
        r0 = None
        grow = sat & (idle0 > ec_all)
        if grow.any():
            # before the first completion on a slot: the idle a rescale left on it
            with np.errstate(divide="ignore", invalid="ignore"):
                r0 = np.where(grow, t0 + budget0 / (idle0 - ec_all), _INF)
        with np.errstate(divide="ignore", invalid="ignore"):
            wagg = np.where(sat, members / capx, 0.0)  # aggregate weight of the idle of a slot
        H0 = float((idle0 * wagg).sum())
        G0 = min(self.agg_lost - eps * self.agg_time, 0.0)
        mult_a = None if self.L_mult is None or dense else self.L_mult[aidx]
        N0 = float(n) if mult_a is None else float(mult_a.sum())
        k = max(256, min(self._kguess, n))
        ek = self._kernels_for(n)
        while True:
            if k < n:
                sel = _earliest(tc, k, ek)
                sel = sel[np.argsort(tc[sel])]
                t_next = float(tc[sel[-1]])
                sel = sel[:-1]
                k = sel.shape[0]
            else:
                k = n
                sel = np.argsort(tc, kind="stable")
                if dense:
                    sel = sel[:n]  # the active flows (the others' tc is inf), ties in flow order as over aidx
                t_next = _INF
            lidx = sel if dense else aidx[sel]
            tcs = tc[sel]
            keys2 = np.take(self.L_keys, lidx, axis=0)
            h = keys2.shape[1]
            keys = keys2.reshape(-1)
            m = sat[keys]
            nm = int(np.count_nonzero(m))
            wH = np.zeros(k)
            best = _INF
            if r0 is not None:
                firstc = np.full(capx.shape[0], t_next)
            if nm:
                # entries of saturated slots, by slot, completion order kept (the others sort last)
                if ek is not None:  # the same stable order by a counting sort (fabric.epoch_kernels)
                    o = ek.saturated_order(keys, m, nm, capx.shape[0])
                else:
                    o = _argsort_slots(np.where(m, keys, capx.shape[0]), capx.shape[0])[:nm]
                jj = o // h
                keys = keys[o]
                # the saturated entries' rate x coefficient and whether the slot is the flow's bottleneck (the
                # values the rows' per-entry products take, gathered for these entries only)
                ar = np.take(rates[sel], jj)
                if self.sw is not None:
                    ar = ar * np.take(self.sw, keys)
                elif ix.coef is not None:
                    c = np.take(ix.coef, lidx, axis=0)
                    ar = ar * (np.take(c, jj) if c.ndim == 1 else np.take(c.reshape(-1), o))
                memb = keys == np.take(self.L_bneck[lidx], jj)
                te = tcs[jj]
                A = np.cumsum(ar)
                B = np.cumsum(ar * te)
                newgrp = np.ones(keys.shape[0], dtype=np.bool_)
                newgrp[1:] = keys[1:] != keys[:-1]
                gstart = np.flatnonzero(newgrp)
                glen = np.diff(np.append(gstart, keys.shape[0]))
                A -= np.repeat(np.concatenate([[0.0], A[gstart[1:] - 1]]), glen)
                B -= np.repeat(np.concatenate([[0.0], B[gstart[1:] - 1]]), glen)
                # ---- per resource: g(t) = lost + idle0 (t - t0) + A t - B - eps_l c (busy + t - t0)
                tnext = np.empty_like(te)
                tnext[:-1] = te[1:]
                last = np.append(gstart[1:] - 1, keys.shape[0] - 1)
                tnext[last] = t_next
                ec = ec_all[keys]
                i0 = idle0[keys]
                slope = A - ec + i0
                with np.errstate(divide="ignore", invalid="ignore"):
                    root = (B + budget0[keys] - (ec - i0) * t0) / slope
                ok = (slope > 0) & (root <= tnext)
                if ok.any():
                    best = min(best, float(np.maximum(root[ok], te[ok]).min()))
                if r0 is not None:
                    firstc[keys[gstart]] = te[gstart]
                # ---- aggregate: H = sum_l (idle0_l + A_l) * (members_l - M_l) / c_l
                mw = memb.astype(np.float64)
                if mult_a is not None:
                    mw *= mult_a[sel][jj]
                M = np.cumsum(mw)
                M -= np.repeat(np.concatenate([[0.0], M[gstart[1:] - 1]]), glen)
                prod = (i0 + A) * np.maximum(members[keys] - M, 0.0) / capx[keys]
                before = np.empty_like(prod)
                before[1:] = prod[:-1]
                before[gstart] = i0[gstart] * wagg[keys[gstart]]
                wH = np.bincount(jj, weights=prod - before, minlength=k)
            if r0 is not None:
                v = r0 <= firstc
                if v.any():
                    best = min(best, float(r0[v].min()))
            H = np.empty(k + 1)
            H[0] = H0
            np.cumsum(wH, out=H[1:])
            H[1:] += H0
            Nd = np.empty(k + 1)
            Nd[0] = 0.0
            np.cumsum(np.ones(k) if mult_a is None else mult_a[sel], out=Nd[1:])
            tb = np.concatenate([[t0], tcs])
            slope = H - eps * (N0 - Nd)
            G = np.empty(k + 1)
            G[0] = G0
            np.cumsum(slope[:-1] * np.diff(tb), out=G[1:])
            G[1:] += G0
            tend = np.concatenate([tcs, [t_next]])
            with np.errstate(divide="ignore", invalid="ignore"):
                root = tb - G / slope
            ok = (slope > 0) & (root <= tend)
            self._by_aggregate = False
            if ok.any():
                i = int(np.flatnonzero(ok)[0])
                ta = float(max(root[i], tb[i]))
                if ta < best:
                    best = ta
                    self._by_aggregate = True
            if best <= t_next or k >= n:
                t1 = best if best <= t_next else float(tcs.max() if dense else tc.max())
                self._curve = (tb, H, N0 - Nd)
                if dense:
                    self._ee_cand = (lidx, t_next)
                self._kguess = 2 * int(np.searchsorted(tcs, t1, side="right")) + 1
                return t1
            k *= 8

    def _account(self, t0, t1, aidx, rates, tc, done, sat, di=None, n0=None):
        """Busy time, epoch budget and time series for the interval [t0, t1) (``di``: ``flatnonzero(done)``).

        ``n0``: the number of active flows when ``aidx`` holds only some of them (a lazy epoch: the
        completions examined; no multiplicities, no time series)."""
        dt = t1 - t0
        R1 = self.pr.R + 1
        ix = self.ix
        nact = self.nact
        busy_all = nact > 0
        full = lastf = None
        # the finishing flows once as indices (boolean masks over all active flows cost a full pass each)
        if di is None:
            di = np.flatnonzero(done)
        if di.size:
            gd = np.take(aidx, di)
            tcd = np.take(tc, di)
            rows = np.take(ix.res, gd, axis=0)
            h = rows.shape[1]
            keys = np.add(rows, 1, dtype=np.intp).reshape(-1)
            ndone = np.bincount(keys, minlength=R1)
            full = busy_all & (ndone >= nact)
            lastf = np.full(R1, t0)
            tcd_h = np.repeat(tcd, h)
            _slot_max_into(lastf, keys, tcd_h)
            np.minimum(lastf, t1, out=lastf)
            add = np.where(full, lastf - t0, dt)
        else:
            add = np.full(R1, dt)
        self.busy += np.where(busy_all, add, 0.0)
        need_lost = not self.exact
        if need_lost or self.ts:
            # bytes idled by flows finishing inside the interval, per slot, while the slot is busy
            if di.size:
                rd = np.take(rates, di)
                end = np.where(full, lastf, t1)[keys]
                w = np.repeat(rd, h) * (end - tcd_h)
                c = None
                if self.sw is not None or ix.coef is not None:
                    c = self._coef_rows(gd, keys.reshape(-1, h))
                    c = np.repeat(c, h) if c.ndim == 1 else c.reshape(-1)
                    w = w * c
                lost = np.bincount(keys, weights=w, minlength=R1)
                lost_all = None
                if self.ts:  # for the time series: all bytes idled up to t1
                    w_all = np.repeat(rd * (t1 - tcd), h)
                    if c is not None:
                        w_all = w_all * c
                    lost_all = np.bincount(keys, weights=w_all, minlength=R1)
            else:
                lost = np.zeros(R1)
                lost_all = lost
            if need_lost:
                self.lost[sat] += lost[sat]
                if self.idle0.any():
                    self.lost += np.where(sat & busy_all, self.idle0 * add, 0.0)
                # aggregate: idled and elapsed flow-time over [t0, t1), from the curve of _epoch_end
                if self._curve is not None:
                    tb, H, Nact = self._curve
                    j = int(np.searchsorted(tb, t1, side="right"))  # segments 0..j-1 start before t1
                    seg = np.diff(np.append(tb[:j], t1))
                    self.agg_lost += float((H[:j] * seg).sum())
                    self.agg_time += float((Nact[:j] * seg).sum())
                elif n0 is not None:
                    N0 = float(n0)
                else:
                    N0 = float(aidx.shape[0]) if self.L_mult is None else float(self.L_mult[aidx].sum())
                    self.agg_time += N0 * dt
            if self.ts:
                load = self._load(aidx, rates)
                carried = load * dt - lost_all
                with np.errstate(divide="ignore", invalid="ignore"):
                    u = carried[1:] / (self.pr.cap * dt) if dt > 0 else np.zeros(self.pr.R)
                u = np.nan_to_num(u, nan=0.0, posinf=0.0)
                if not self.series_t:
                    self.series_t.append(t0)
                elif self.series_t[-1] != t0:
                    # idle gap without flows: record it as an empty interval
                    self.series_u.append(np.zeros(self.pr.R, dtype=np.float32))
                    self.series_s.append(np.zeros(self.pr.R, dtype=np.bool_))
                    self.series_t.append(t0)
                self.series_t.append(t1)
                self.series_u.append(u.astype(np.float32))
                self.series_s.append(sat[1:].copy())
