"""Lazy epochs of the event loop: an epoch touches the flows whose rate changes and those that finish.

In the dense epoch loop every active flow's remaining bytes and completion
time are recomputed at every epoch (``rem -= rate * dt``, ``tc = t + rem /
rate``), although a warm start re-fills few flows and an epoch ends at a few
thousand completions.  A lazy epoch keeps, per listed flow, the remaining
bytes as of the time its rate was last set (``L_rem`` at ``L_tref``) and its
completion time ``L_tc`` (inf when not active): the solve's tail sets them for
the flows it gives a rate (:func:`fabric.epoch_kernels.lazy_tail`), the epoch
end selects its earliest completions from ``L_tc`` (one threshold pass, no
per-epoch arrays over the active flows), and the flows that finish leave by
their ids.  Same solves, budgets and rules; the remaining bytes and completion
times are the same numbers rounded once instead of once per epoch (finish
times within 1e-12 relative of the dense loop's on the measured cases; the
test compares the two to 1e-9).  Used with the loop's compiled passes, in
epoch mode, without multiplicities or time series (:data:`LAZY`); a lazy run
starts at a cold solve and hands back to the dense loop (remaining bytes
brought to the current time) below the compiled passes' size and before a
rebuild.

Examples
--------
>>> LAZY
True
"""

from __future__ import annotations

import numpy as np

__all__ = ["LAZY"]

#: run the epochs of large phases lazily (False: the dense loop, the reference of the tests)
LAZY = True

_INF = np.inf


class _LazyMixin:
    """Lazy-epoch methods of :class:`fabric.eventloop._EventLoop` (internal)."""

    lz = False  # the loop's state is lazy (L_tref, L_tc valid for the active flows)
    lz_n = 0  # active flows (lazy epochs keep the count, not the array)
    lz_restore = False  # rescaled since the last solve: the next warm start gives fixed flows their max-min rate
    _ee_cand = None  # the completions the last lazy epoch end examined, (flows, t_next) (fabric.epoch)
    lz_low = -_INF  # a lower bound of the active flows' max-min rates (set by every lazy tail)

    def _lazy_eligible(self) -> bool:
        """Whether this loop may run lazy epochs at all (epoch mode, no multiplicities, no time series)."""
        return LAZY and not self.exact and not self.ts and self.pr.mult is None

    def _lazy_on(self, ek, n_act: int, need_cold: bool, t: float) -> bool:
        """Whether this epoch runs lazily (``ek``: the loop's compiled passes for ``n_act`` active flows, or None).

        A lazy run starts only at a cold solve (which gives every active flow its rate); it stops, with the
        remaining bytes brought to ``t``, once the compiled passes no longer run.
        """
        if self.lz:
            if ek is not None:
                self.lz_n = n_act
                return True
            self._lazy_off(t)
            return False
        if ek is None or not need_cold or not self._lazy_eligible():
            return False
        n = self.L_act.shape[0]  # the indexed flows
        self.L_tref = np.full(n, t)
        self.L_tc = np.full(n, _INF)
        self.lz = True
        self.lz_n = n_act
        self.lz_restore = False
        self.lz_low = -_INF
        return True

    def _lazy_off(self, t: float) -> None:
        """Back to the dense state: every active flow's remaining bytes at ``t`` (before a rebuild or a dense epoch)."""
        if not self.lz:
            return
        from fabric import epoch_kernels as ek

        ek.lazy_materialize(self.L_act, float(t), self.L_rem, self.L_tref, self.L_rate)
        self.lz = False
        self.L_tref = self.L_tc = None

    def _lazy_step(self, ek, t: float, need_cold: bool, departed_min, n_resc: int, max_rescales: int):
        """One lazy epoch from ``t``: rescale or solve, epoch end, completions.

        ``departed_min``: the smallest max-min rate of the flows that left since the last solve (the warm start's
        threshold; None if none).  Returns ``(t1, departed_min, n_resc)`` after the epoch: its end, that rate
        and the rescales since the last solve.
        """
        rates = None
        if not need_cold and n_resc < max_rescales and self._by_aggregate:
            aidx = np.flatnonzero(self.L_act)
            rates = self._rescale(aidx)
            if rates is not None:
                with np.errstate(divide="ignore", invalid="ignore"):
                    ek.lazy_set(aidx, rates, float(t), self.L_rem, self.L_tref, self.L_rate, self.L_tc)
                self.lz_restore = True
                n_resc += 1
        if rates is None:
            self._solve(None, None if need_cold else departed_min, t)
            departed_min = None
            self.idle0[:] = 0.0
            n_resc = 0
        t_arr = self.heap[0][0] if self.heap else _INF
        sat = self.members > 0
        t1 = min(self._epoch_end(t, None, self.L_rate, self.L_tc, sat, self.lz_n), t_arr)
        cut = t1
        # the flows that may finish: the completions the epoch end examined, unless the cut reaches the first
        # one it left out (then a pass over the listed flows); in flow order, as the dense loop has them
        cand = self._ee_cand
        if cand is not None and cut < cand[1]:
            cand = np.sort(cand[0])
        else:
            cand = np.flatnonzero((self.L_tc <= cut) & self.L_act)  # (an infinite cut: active flows only)
        tcc = self.L_tc[cand]
        while True:
            done = tcc <= cut
            t1, cut, again = self._truncate(cand, done, tcc, t1, cut)
            if not again:
                break
        di = np.flatnonzero(done)
        gd = cand[di]
        tcd = tcc[di]
        rc = self.L_rate[cand]
        self._account(t, t1, cand, rc, tcc, done, sat, di, n0=self.lz_n)
        if gd.size:
            self._depart(gd, rc[di])
            mn = float(self.L_mm[gd].min())  # the warm start holds on the max-min rates, whatever rescales did
            departed_min = mn if departed_min is None else min(departed_min, mn)
            self.L_act[gd] = False
            self.L_rem[gd] = 0.0
            self.L_tc[gd] = _INF
            self.lz_n -= gd.shape[0]
            self._complete(self.ix_flows[gd], tcd)
        return t1, departed_min, n_resc
