"""The exact and epoch event loops of the flow engine (docs/flow-engine.md §3-4).

:class:`_EventLoop` admits flows as their phases start (:mod:`fabric.phases`), solves max-min rates
(warm-started after pure departures), and advances to the next completion
(exact mode) or to the end of an epoch, when a budget of idled capacity runs
out (epoch mode, with rescales between solves). :func:`fabric.engine.simulate`
chooses the mode and builds the loop.

Examples
--------
>>> _CRITICAL, _GUARD, _MAX_RESCALES
(0.99, 5.0, 20)
"""

from __future__ import annotations

import numpy as np

from fabric import kernels as _kernels
from fabric import fill as _fl
from fabric import fillorder as _fo
from fabric import slotfill as _sf
from fabric.problem import FlowResult, _Prob
from fabric.epoch import _EpochMixin, _row_bincount
from fabric.lazyepoch import _LazyMixin
from fabric.phases import _PhaseMixin
from fabric.kernels import FILL_MIN_ENTRIES_LOADED
from fabric.reductions import _unconstrained
from topologies.errors import ProblemTooLargeError

__all__: list[str] = []

_TIE = 1e-9
# epoch mode (docs/flow-engine.md §4)
_CRITICAL = 0.99  # resources with bytes / capacity >= 0.99 x the largest keep the per-resource budget epsilon
_GUARD = 5.0  # every other saturated resource: min(5 epsilon, 0.5)
_GUARD_MAX = 0.5
_MAX_RESCALES = 20  # at most this many rescales between two max-min solves
_ULP = float(np.finfo(np.float64).eps)
_INF = np.inf
#: epoch mode keeps the per-slot load at max-min rates up to date for the warm start (False: recompute it
#: from the fixed flows at every warm start, the reference the tests compare against)
_INCREMENTAL = True
#: a warm start fills an index of the re-filled flows only when they are fewer than 1/_SUB_FILL of the listed
#: flows (its build is a sort of their entries; the full index's filling walks every listed flow it meets)
_SUB_FILL = 4
#: active flows from which ``FABRIC_EMU_KERNELS=auto`` runs the fused per-event passes compiled (bit-identical)
EPOCH_MIN_FLOWS = 1 << 18
#: fill the full index in fill order (:class:`fabric.fillorder.FillOrder`, same bits) when its fills run compiled
_FILL_ORDER = True
#: fill from the per-slot coefficient table when the weights are one factor per resource
#: (:mod:`fabric.slotfill`, bit-identical; False: the per-entry coefficient rows, the reference of the tests)
_SLOT_FILL = True


def _epoch_kernels(n: int):
    """:mod:`fabric.epoch_kernels` when the compiled per-event passes are used for ``n`` flows, else None."""
    if not _kernels.use_compiled(n, EPOCH_MIN_FLOWS):
        return None
    from fabric import epoch_kernels  # imports numba

    return epoch_kernels


class _EventLoop(_LazyMixin, _PhaseMixin, _EpochMixin):
    """Exact and epoch event loops (internal)."""

    def __init__(self, pr: _Prob, *, exact: bool, epsilon: float, time_series: bool, memory_limit_bytes: int,
                 base_bytes: int):
        self.pr = pr
        self.exact = exact
        self.eps = epsilon
        self.ts = time_series
        self.mem_limit = memory_limit_bytes
        self.base_bytes = base_bytes
        F, R = pr.F, pr.R
        self.start = np.full(F, np.nan)
        self.tend = np.full(F, np.nan)
        self.status = np.zeros(F, dtype=np.int8)  # 0 unscheduled, 1 scheduled, 2 active, 3 done
        self.remb = pr.size.copy()
        if F and pr.res.shape[1] and np.isfinite(pr.cap).all():  # = _unconstrained(pr): only rows of padding alone
            self.unc = pr.res[:, 0] < 0
            for j in range(1, pr.res.shape[1]):
                self.unc &= pr.res[:, j] < 0
        else:
            self.unc = _unconstrained(pr)
        self.lat = pr.lat
        self.busy = np.zeros(R + 1)
        self.nact = np.zeros(R + 1, dtype=np.int64)  # active flows per slot
        self.cntw = np.zeros(R + 1)  # sum of the coefficients m_f * w_fl of the active flows per slot
        self.lost = np.zeros(R + 1)  # epoch budget: idled capacity x time while saturated
        self.capx = np.concatenate([[0.0], pr.cap])
        self.eps_slot = np.full(R + 1, epsilon)  # per-resource budget fraction (set in run())
        self.members = np.zeros(R + 1)  # flows (x multiplicity) whose bottleneck is the slot, since the last solve
        self.agg_lost = 0.0  # sum over slots of the idled flow-time: int idle_l * members_l / c_l dt
        self.idle0 = np.zeros(R + 1)  # idle capacity per slot right after the last solve or rescale
        self.load = np.zeros(R + 1)  # epoch mode: load per slot (set by solves, lowered by departures)
        # epoch mode: load per slot of the active flows at their max-min rates of the last solve (L_mm), kept
        # up to date on departures; the warm start takes the fixed flows' load from it (None: recompute)
        self.mm_load = None
        self._curve = None  # aggregate budget curve of the current epoch (from _epoch_end)
        self._kguess = 256  # completions to examine first when looking for the epoch end
        self._by_aggregate = False  # the last epoch ended on the aggregate budget
        self.rescales = 0
        self.agg_time = 0.0  # elapsed flow-time: int (active flows x multiplicity) dt
        self.events = self.solves = self.rounds = 0
        # phases: flows grouped by phase, sorted by release within a phase
        P = pr.P
        ph = pr.phase if pr.phase is not None else np.zeros(F, dtype=np.int64)
        self.ph = ph
        rel = pr.rel if pr.rel is not None else np.zeros(F)
        self.rel = rel
        order = np.lexsort((rel, ph)) if F else np.zeros(0, dtype=np.int64)
        self.ph_order = order
        self.ph_ptr = np.zeros(P + 1, dtype=np.int64)
        np.cumsum(np.bincount(ph, minlength=P) if F else np.zeros(P, dtype=np.int64), out=self.ph_ptr[1:])
        self.ph_left = np.diff(self.ph_ptr).copy()
        self.ph_maxfin = np.full(P, -_INF)
        self.ph_start = np.full(P, np.nan)
        self.ph_fin = np.full(P, np.nan)
        self.deps_left = np.diff(pr.dep_ptr).copy()
        self.heap: list[tuple[float, int]] = []
        self.cursor = np.zeros(P, dtype=np.int64)
        # index over the flows of started phases
        self.ix = None
        self.fo = None  # the index in fill order (_order_fill), or None
        self.loc = np.full(F, -1, dtype=np.int64)
        # coefficients as one factor per slot (epoch mode's unfolded resource weights), or None
        # (compiled when a phase is large enough for the loop's kernels, which then load numba anyway)
        big = int(np.diff(self.ph_ptr).max(initial=0))
        self.sw = (_sf.slot_coefficients(pr.res, pr.weight, pr.mult, R, _epoch_kernels(big) is not None)
                   if _SLOT_FILL and not exact else None)
        self.series_t: list[float] = []
        self.series_u: list[np.ndarray] = []
        self.series_s: list[np.ndarray] = []
        self.peak = np.zeros(R + 1) if time_series else None

    @staticmethod
    def _kernels_for(n: int):
        """:func:`_epoch_kernels` (for the mixed-in epoch methods)."""
        return _epoch_kernels(n)

    # ---------------------------------------------------------------- index

    def _rebuild(self):
        """Index every active or scheduled flow (compaction / new phases)."""
        pr = self.pr
        if self.ix is not None:
            # write back remaining bytes of the indexed flows
            self.remb[self.ix_flows] = self.L_rem
            self.loc[self.ix_flows] = -1
        st = self.status
        flows = np.flatnonzero((st == 1) | (st == 2))
        flows = flows[~self.unc[flows] & (pr.size[flows] > 0)]
        self.ix_flows = flows
        if self.sw is not None:
            # coefficients from the per-slot table: an index without the float64 per-entry arrays (the same lists),
            # with the ceps of the weighted one (half the smallest coefficient of its entries); the numpy and the
            # compiled fill both read the table
            self.ix = _fl.build_index(pr.res, None, None, pr.R, flows)
            used = np.diff(self.ix.indptr) > 0
            self.ix.ceps = 0.5 * float(self.sw[used].min()) if used.any() else 0.5
            self._order_fill(_FILL_ORDER and _epoch_kernels(flows.shape[0]) is not None)
        else:
            self.ix = _fl.build_index(pr.res, pr.weight, pr.mult, pr.R, flows)
        self.loc[flows] = np.arange(flows.shape[0])
        self.L_act = st[flows] == 2
        self.L_rem = self.remb[flows]
        self.L_rate = np.zeros(flows.shape[0])
        self.L_mm = np.zeros(flows.shape[0])  # max-min rates of the last solve (rescales change L_rate only)
        self.L_bneck = np.zeros(flows.shape[0], dtype=np.int64)
        self.L_mult = None if pr.mult is None else pr.mult[flows]
        # slot ids (resource + 1) of the indexed flows as intp, for the per-event gathers of epoch mode
        self.L_keys = None if self.exact else np.add(self.ix.res, 1, dtype=np.intp)
        self.n_pending = int((st[flows] == 1).sum())
        self.n_listed = flows.shape[0]
        est = self.base_bytes + self.ix.nbytes()
        if self.ts:
            est += len(self.series_t) * (pr.R * 5)
        if est > self.mem_limit:
            raise ProblemTooLargeError(
                f"simulate: the run needs more than memory_limit_bytes = {self.mem_limit / 2**30:.2f} GiB "
                f"(about {est / 2**30:.2f} GiB so far); use mode='epoch', turn time_series off, aggregate flows "
                "into classes (multiplicity) or simulate fewer ranks")

    def _compact_lists(self):
        """Drop finished flows from the resource -> flow lists (local ids and rows stay).

        The filling walks these lists; finished flows in them are skipped one by
        one, so they are removed once they are a quarter of the lists.  Cheaper
        than a rebuild: one mask over the entries.
        """
        ix = self.ix
        keep = self.L_act | (self.status[self.ix_flows] == 1)
        self.n_listed = int(np.count_nonzero(keep))
        ek = _epoch_kernels(ix.size)
        if ek is not None and ix.ecoef is None:
            ix.indptr, ix.indices = ek.compact_lists(ix.indptr, ix.indices, keep)
            if self.fo is not None:
                self.fo.rename(ix)
            return
        ke = keep[ix.indices]
        r1 = ix.indptr.shape[0] - 1
        slot = np.repeat(np.arange(r1), np.diff(ix.indptr))
        counts = np.bincount(slot[ke], minlength=r1)
        indptr = np.zeros(r1 + 1, dtype=ix.indptr.dtype)
        np.cumsum(counts, out=indptr[1:])
        ix.indices = ix.indices[ke]
        ix.indptr = indptr
        if self.fo is not None:
            self.fo.rename(ix)
        if ix.ecoef is not None:
            ix.ecoef = ix.ecoef[ke]

    # ---------------------------------------------------------------- main loop

    def run(self, rbytes, lb) -> FlowResult:
        pr = self.pr
        if not self.exact:
            # critical resources (largest byte load for their capacity) keep the per-resource budget eps;
            # every other resource a looser guard; the aggregate flow-time budget covers the rest (docs §4)
            with np.errstate(divide="ignore", invalid="ignore"):
                lbr = np.where(np.isfinite(pr.cap), rbytes / pr.cap, 0.0)
            top = float(lbr.max()) if lbr.size else 0.0
            crit = lbr >= _CRITICAL * top
            self.eps_slot[1:] = np.where(crit, self.eps, min(_GUARD * self.eps, _GUARD_MAX))
            self.eps_slot[0] = 0.0
        P = pr.P
        for q in range(P):
            if self.deps_left[q] == 0 and np.isnan(self.ph_start[q]):
                self._start_phase(q, float(pr.delay[q]))
        t = 0.0
        if self.heap:
            t = self.heap[0][0]
        last_departed_min = None  # warm start: min max-min rate of the flows that left since the last solve
        need_cold = True
        n_resc = 0  # rescales since the last solve (the warm start needs max-min rates)
        next_aidx = None  # the active flows the last compiled advance kept
        while True:
            ix0 = self.ix
            # ---- admit arrivals at t
            admitted = self._admit(t)
            if admitted is not None:
                need_cold = True
            if self.ix is None or (admitted is not None and self._needs_index(admitted)):
                self._lazy_off(t)
                self._rebuild()
                need_cold = True
            else:
                n_live = int(np.count_nonzero(self.L_act)) + self.n_pending
                if self.ix.size and n_live * 2 < self.ix.size:
                    self._lazy_off(t)
                    self._rebuild()
                    need_cold = True
                elif n_live * 4 < 3 * self.n_listed:
                    self._compact_lists()
            n_act = int(np.count_nonzero(self.L_act)) if self.ix is not None else 0
            if n_act == 0:
                if not self.heap:
                    break
                t = max(t, self.heap[0][0])
                continue
            self.events += 1
            ek = _epoch_kernels(n_act)
            if self._lazy_on(ek, n_act, need_cold, t):  # (fabric.lazyepoch)
                t, last_departed_min, n_resc = self._lazy_step(ek, t, need_cold, last_departed_min, n_resc,
                                                               _MAX_RESCALES)
                need_cold = False
                next_aidx = None
                continue
            # ---- solve
            # the active flows: what the last advance kept, while no arrival and no rebuild changed the lists
            aidx = next_aidx if next_aidx is not None and admitted is None and self.ix is ix0 \
                else np.flatnonzero(self.L_act)
            next_aidx = None
            rates = tc = None
            if not self.exact and not need_cold and n_resc < _MAX_RESCALES and self._by_aggregate:
                # the aggregate budget ran out (flows finishing everywhere): a rescale first
                rates = self._rescale(aidx)
            if rates is None:
                # the compiled tail also gives the completion times and sets L_mm (tc None: not computed)
                rates, tc = self._solve(aidx, None if need_cold else last_departed_min, t)
                if tc is None:
                    self.L_mm[aidx] = rates
                last_departed_min = None
                self.idle0[:] = 0.0
                n_resc = 0
            else:
                n_resc += 1
            need_cold = False
            rem = None
            if tc is None:
                rem = self.L_rem[aidx]
                with np.errstate(divide="ignore", invalid="ignore"):
                    tc = t + rem / rates
            t_arr = self.heap[0][0] if self.heap else _INF
            sat = self.members > 0
            if self.exact:
                tmin = float(tc.min())
                t1 = min(tmin, t_arr)
                cut = t1 + max(_TIE * (t1 - t), 4.0 * _ULP * abs(t1)) if t1 == tmin else t1
            else:
                t1 = min(self._epoch_end(t, aidx, rates, tc, sat), t_arr)
                cut = t1
            # ---- completions (truncate at arrivals caused by finishing phases)
            while True:
                done = tc <= cut
                t1, cut, again = self._truncate(aidx, done, tc, t1, cut)
                if not again:
                    break
            di = np.flatnonzero(done)  # the finishing flows once as positions (a mask costs a pass each time)
            gd = aidx[di]
            tcd = tc[di]
            self._account(t, t1, aidx, rates, tc, done, sat, di)
            if ek is not None:  # also clears L_act and L_rem of the flows done
                next_aidx = ek.advance(aidx, rates, t1 - t, done, self.L_rem, self.L_rate, self.L_act)
            else:
                left = (self.L_rem[aidx] if rem is None else rem) - rates * (t1 - t)
                np.maximum(left, 0.0, out=left)
                self.L_rem[aidx] = left
                self.L_rate[aidx] = rates
            if gd.size and not self.exact:
                self._depart(gd, rates[di])
            if gd.size:
                # the warm start holds on the max-min rates of the last solve, whatever rescales did since
                mn = float(self.L_mm[gd].min())
                last_departed_min = mn if last_departed_min is None else min(last_departed_min, mn)
                if ek is None:
                    self.L_act[gd] = False
                    self.L_rem[gd] = 0.0
                self._complete(self.ix_flows[gd], tcd)
            t = t1
        return self._result(rbytes, lb)

    # ---------------------------------------------------------------- solve

    def _solve(self, aidx, warm_x, t=0.0):
        """``(rates, tc)``: max-min rates of the active flows; warm-started (exact) when ``warm_x`` is given.

        Also records every active flow's bottleneck slot (``L_bneck``) and the
        number of flows (x multiplicity) bottlenecked at each slot (``members``).
        The compiled tail also sets ``L_mm`` and returns the completion times ``t + L_rem / rates``
        (``tc``; None from the numpy tail).  ``aidx`` None: a lazy epoch (:mod:`fabric.lazyepoch`; compiled
        passes, ``lz_n`` active flows): the rates and completion times are set per listed flow; returns None.
        """
        ix = self.ix
        n = ix.size
        n_a = self.lz_n if aidx is None else aidx.shape[0]
        all_active = n_a == n
        ek = _epoch_kernels(n)
        tc = None
        fixed = ri = None
        if warm_x is not None:
            prev = self.L_mm
            thr = warm_x * (1.0 - _fl.TIE_RTOL)
            if aidx is None and not thr > self.lz_low:
                fixed = None  # no active flow is below thr: the split would fix none (a lazy epoch skips its pass)
            elif aidx is None:  # the same split, over the listed flows that are active
                fixed, ri, nf = ek.lazy_split(self.L_act, prev, thr)
                if nf == 0:
                    fixed = None
            elif ek is not None:  # fixed flows and re-filled ones in one pass over the active flows
                fixed, ri, nf = ek.warm_split(aidx, prev, thr, n)
                if nf == 0:
                    fixed = None
            else:
                fixed = self.L_act & (prev < thr)
                if not fixed.any():
                    fixed = None
        if fixed is not None:
            if ri is None:
                ri = np.flatnonzero(self.L_act & ~fixed)
            sub = _INCREMENTAL and not self.exact and ri.shape[0] * _SUB_FILL < self.n_listed
            state = None if sub else _fo.states(self.L_act & ~fixed)
            nfix = n_a - ri.shape[0]
            incr = _INCREMENTAL and self.mm_load is not None
            r1 = self.pr.R + 1
            sums = None  # the re-filled flows' coefficient sums, load and entries per slot (one compiled pass)
            if incr and ek is not None and self.sw is not None:
                sums = ek.warm_sums(ix.res, ri, self.sw, prev, r1)
            elif incr:
                # the re-filled flows' slots and coefficients, in local-flow order (as coef_sums gathers them)
                keys = np.add(np.take(ix.res, ri, axis=0), 1, dtype=np.intp)
                if self.sw is not None:  # the same values from the per-slot table
                    coef = np.take(self.sw, keys)
                else:
                    coef = None if ix.coef is None else np.take(ix.coef, ri, axis=0)
            if 2 * nfix < n_a:
                cnt = self.cntw - self._coef_sums(ix, _fo.states(fixed))
            elif sums is not None:
                cnt = sums[0]
            elif incr:  # = coef_sums(ix, state), the same entries in the same order
                h = keys.shape[1]
                w = None if coef is None else (coef.reshape(-1) if coef.ndim == 2 else np.repeat(coef, h))
                cnt = np.bincount(keys.reshape(-1), weights=w, minlength=r1).astype(np.float64)
            else:
                cnt = self._coef_sums(ix, state if state is not None else _fo.states(self.L_act & ~fixed))
            if incr:
                # the fixed flows' load: the maintained load of all active flows minus the re-filled ones'
                # (O(re-filled flows) instead of a pass over every fixed flow's entries)
                if sums is not None:
                    fl_load = self.mm_load - sums[1]
                    n_ent = sums[2]
                else:
                    fl_load = self.mm_load - _row_bincount(keys, prev[ri], coef, r1)
                    n_ent = np.bincount(keys.reshape(-1), minlength=r1)
                # no fixed flow on a slot: exactly no load (no rounding residue of the subtraction)
                fl_load[self.nact == n_ent] = 0.0
            else:
                fl_load = self._fixed_load(ix, fixed, prev)
            if sub:
                # few flows to re-fill: fill an index of them only (same lists, same order, same arithmetic)
                # rather than walk the fixed and finished flows in every bottleneck's list
                alive = np.full(ri.shape[0], _fl.ALIVE, dtype=np.uint8)
                if self.sw is not None:
                    out = _sf.fill(_sf.lean_sub_index(ix, ri, ek is not None), self.sw, self.pr.cap, alive, cnt, fl_load,
                                   self._fill_min_entries(ek))
                else:
                    out = _fl.fill(_fl.sub_index(ix, ri), self.pr.cap, alive, cnt, fl_load)
            else:
                out = self._fill(ix, state, cnt, fl_load, ek)
            if ek is not None:
                rates, tc = self._tail(ek, ek.WARM_SUB if sub else ek.WARM, aidx, fixed, prev, out, ri, t)
            else:
                if sub:
                    bn = np.zeros(n, dtype=out.bneck.dtype)
                    bn[ri] = out.bneck
                    out.bneck = bn
                rates = np.where(fixed[aidx], prev[aidx], out.level[out.bneck[aidx]])
                self.L_bneck[ri] = out.bneck[ri]
        else:
            if all_active:
                state = np.full(n, _fl.ALIVE, dtype=np.uint8)
            else:
                state = _fo.states(self.L_act)
            cnt = self.cntw.copy()  # maintained on arrivals and departures
            out = self._fill(ix, state, cnt, None, ek)
            if ek is not None:
                rates, tc = self._tail(ek, ek.COLD, aidx, None, None, out, None, t)
            else:
                b = out.bneck[aidx]
                rates = out.level[b]
                self.L_bneck[aidx] = b
        if ek is None and (not self.exact or self.ts):
            bn = self.L_bneck[aidx]
            mult = None if self.L_mult is None else self.L_mult[aidx]
            self.members = np.bincount(bn, weights=mult, minlength=self.pr.R + 1).astype(np.float64)
            self.members[0] = 0.0
        if not self.exact:
            # load per slot, for rescales: slots that froze flows are full, the others carry c - rem
            with np.errstate(invalid="ignore"):
                self.load = np.where(np.isinf(out.rem), self.capx, self.capx - out.rem)
            self.load[~np.isfinite(self.capx)] = 0.0  # never a bottleneck; its load is not needed
            self.load[0] = 0.0
            if _INCREMENTAL and out.rem_left is not None:
                with np.errstate(invalid="ignore"):
                    self.mm_load = np.where(np.isfinite(self.capx), self.capx - out.rem_left, 0.0)
                self.mm_load[0] = 0.0
            else:
                self.mm_load = None
        self.solves += 1
        self.rounds += out.rounds
        if self.peak is not None:
            load = self._load(aidx, rates)
            with np.errstate(divide="ignore", invalid="ignore"):
                u = load[1:] / self.pr.cap
            np.maximum(self.peak[1:], np.nan_to_num(u), out=self.peak[1:])
        return rates, tc

    def _coef_sums(self, ix, state):
        """:func:`fabric.fill.coef_sums` (per-slot coefficient sums of the alive flows), from the slot table if any."""
        if self.sw is None:
            return _fl.coef_sums(ix, state)
        keys = np.add(ix.res[state == _fl.ALIVE], 1, dtype=np.intp).reshape(-1)
        return np.bincount(keys, weights=np.take(self.sw, keys), minlength=ix.n_res + 1)

    def _fixed_load(self, ix, sel, rate):
        """:func:`fabric.fill.fixed_load` (per-slot load of the flows ``sel``), from the slot table if any."""
        if self.sw is None:
            return _fl.fixed_load(ix, sel, rate)
        keys = np.add(ix.res[sel], 1, dtype=np.intp)
        return _row_bincount(keys, rate[sel], np.take(self.sw, keys), ix.n_res + 1)

    def _order_fill(self, on: bool):
        """Keep the index in fill order (:class:`fabric.fillorder.FillOrder`) for the compiled fills, if ``on``."""
        if on:  # not needed when the rows are in that order already (fabric.renumber)
            last = self.ix.res[:, -1]
            on = not bool((last[1:] >= last[:-1]).all())
        self.fo = _fo.FillOrder(self.ix) if on else None

    def _fill(self, ix, state, cnt, fixed_load=None, ek=None):
        """:func:`fabric.fill.fill` of the index, from the per-slot coefficients when they are (same bits); on the
        index in fill order (:meth:`_order_fill`) when there is one and the fill runs compiled (``state`` is then
        not updated: the loop does not read it after a fill)."""
        if (self.fo is not None and ix is self.ix and ek is not None
                and _kernels.use_fill(ix.indices.shape[0], FILL_MIN_ENTRIES_LOADED)):
            return self.fo.fill(self.sw, self.pr.cap, state, cnt, fixed_load, FILL_MIN_ENTRIES_LOADED)
        if self.sw is not None:
            return _sf.fill(ix, self.sw, self.pr.cap, state, cnt, fixed_load, self._fill_min_entries(ek))
        return _fl.fill(ix, self.pr.cap, state, cnt, fixed_load, min_entries=self._fill_min_entries(ek))

    @staticmethod
    def _fill_min_entries(ek):
        """The compiled fill's threshold: any size once this loop runs its compiled passes (``ek``: numba is
        loaded, so a compiled fill pays only for its cached machine code), else the fill's own."""
        return FILL_MIN_ENTRIES_LOADED if ek is not None else None

    def _tail(self, ek, kind, aidx, fixed, prev, out, ri, t):
        """The compiled end of :meth:`_solve` (:func:`fabric.epoch_kernels.solve_tail`): rates and completion
        times, L_bneck, L_mm, members (epoch mode: moved flow by flow after a warm start; ``_depart`` keeps
        them over the active flows)."""
        z = np.zeros(1)
        zi = np.zeros(1, dtype=np.int64)
        if aidx is None:  # a lazy epoch: the flows whose rate is set only (all active ones after a cold fill)
            idx = np.flatnonzero(self.L_act) if kind == ek.COLD else ri
            self.members, rmin = ek.lazy_tail(
                kind, idx, np.zeros(1, dtype=np.bool_) if fixed is None else fixed, z if prev is None else prev,
                out.level, out.bneck, self.L_bneck, self.pr.R + 1, float(t), self.L_act, self.L_rem, self.L_tref,
                self.L_rate, self.L_mm, self.L_tc, self.members, self.lz_restore)
            self.lz_restore = False
            # every active flow's L_mm was given since the last cold fill: a lower bound of them all
            self.lz_low = rmin if kind == ek.COLD else min(self.lz_low, rmin)
            return None, None
        want = not self.exact or self.ts
        mult = self.L_mult
        with np.errstate(divide="ignore", invalid="ignore"):
            rates, tc, members = ek.solve_tail(
                kind, aidx, np.zeros(1, dtype=np.bool_) if fixed is None else fixed, z if prev is None else prev,
                out.level, out.bneck, zi if ri is None else ri, self.L_bneck, z if mult is None else mult,
                mult is not None, want, self.pr.R + 1, float(t), self.L_rem, self.L_mm, self.members, not self.exact)
        if want:
            self.members = members
        return rates, tc

    def _load(self, aidx, rates):
        ix = self.ix
        keys = np.add(np.take(ix.res, aidx, axis=0), 1, dtype=np.intp)
        coef = self._coef_rows(aidx, keys)
        return _row_bincount(keys, rates, coef, self.pr.R + 1)


    # ---------------------------------------------------------------- result

    def _result(self, rbytes, lb) -> FlowResult:
        pr = self.pr
        tend = self.tend
        fin = tend if pr.lat is None else tend + pr.lat
        if pr.F:
            mk = float(np.nanmax(fin))
        else:
            mk = 0.0
        if np.isfinite(self.ph_fin).any():
            mk = max(mk, float(np.nanmax(self.ph_fin)))
        st = self.start.copy()
        series = {}
        if self.ts:
            series = dict(series_time_s=np.array(self.series_t),
                          series_utilization=np.array(self.series_u).reshape(-1, pr.R),
                          series_saturated=np.array(self.series_s).reshape(-1, pr.R))
        return FlowResult(start_s=st, transfer_end_s=tend.copy(), finish_s=fin.copy(), makespan_s=mk,
                          resource_bytes=rbytes, resource_busy_s=self.busy[1:].copy(),
                          resource_peak_utilization=None if self.peak is None else self.peak[1:].copy(),
                          lower_bound_s=lb, mode_used="exact" if self.exact else "epoch", events=self.events,
                          solves=self.solves, rounds=self.rounds, exact=self.exact,
                          epsilon=0.0 if self.exact else self.eps, **series)
