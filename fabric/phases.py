"""Phases, admissions and completions of the event loop (docs/flow-engine.md §3).

:class:`_PhaseMixin` holds the methods of :class:`fabric.eventloop._EventLoop`
that start phases when their dependencies finish, admit the flows of started
phases at their release times, complete flows (finishing phases and
scheduling their dependents) and cut an epoch at the first arrival that a
finishing phase causes.  The loop mixes them in; they keep its state.

Examples
--------
>>> _PhaseMixin.__name__
'_PhaseMixin'
"""

from __future__ import annotations

import heapq

import numpy as np

__all__: list[str] = []

_ULP = float(np.finfo(np.float64).eps)
_INF = np.inf


class _PhaseMixin:
    """Phase, admission and completion methods of :class:`fabric.eventloop._EventLoop` (internal)."""

    # ---------------------------------------------------------------- phases

    def _start_phase(self, q: int, ts: float):
        self.ph_start[q] = ts
        lo, hi = self.ph_ptr[q], self.ph_ptr[q + 1]
        if hi == lo:
            self._finish_phase(q, ts)
            return
        fl = self.ph_order[lo:hi]
        self.start[fl] = ts + self.rel[fl]
        self.status[fl] = 1
        heapq.heappush(self.heap, (float(self.start[fl[0]]), q))

    def _finish_phase(self, p: int, tf: float):
        self.ph_fin[p] = tf
        pr = self.pr
        for q in pr.dependents(p):
            self.deps_left[q] -= 1
            if self.deps_left[q] == 0:
                ts = float(self.ph_fin[pr.deps(q)].max()) + float(pr.delay[q])
                self._start_phase(q, ts)

    def _earliest_new_arrival(self, fin_by_phase: dict[int, float]) -> float:
        """Earliest arrival caused by the phases finishing at the given times (no side effects)."""
        pr = self.pr
        left = {}
        fin = dict(fin_by_phase)
        stack = list(fin_by_phase.items())
        best = _INF
        while stack:
            p, tf = stack.pop()
            for q in pr.dependents(p):
                left[q] = left.get(q, int(self.deps_left[q])) - 1
                if left[q] == 0:
                    d = pr.deps(q).tolist()
                    ts = max(fin[x] if x in fin else float(self.ph_fin[x]) for x in d) + float(pr.delay[q])
                    lo, hi = self.ph_ptr[q], self.ph_ptr[q + 1]
                    if hi == lo:
                        fin[q] = ts
                        stack.append((q, ts))
                    else:
                        best = min(best, ts + float(self.rel[self.ph_order[lo]]))
        return best

    # ---------------------------------------------------------------- admissions and completions

    def _needs_index(self, admitted: np.ndarray) -> bool:
        return bool((self.loc[admitted] < 0).any())

    def _admit(self, t: float):
        """Activate every scheduled flow with start <= t; returns the admitted ids (bandwidth users)."""
        got = []
        lim = t + 4.0 * _ULP * abs(t)
        while self.heap and self.heap[0][0] <= lim:
            _, q = heapq.heappop(self.heap)
            lo, hi = self.ph_ptr[q], self.ph_ptr[q + 1]
            fl = self.ph_order[lo:hi]
            c = self.cursor[q]
            e = int(np.searchsorted(self.start[fl], lim, side="right"))
            new = fl[c:e]
            self.cursor[q] = e
            if e < hi - lo:
                heapq.heappush(self.heap, (float(self.start[fl[e]]), q))
            got.append(new)
        if not got:
            return None
        new = np.concatenate(got)
        instant = self.unc[new] | (self.pr.size[new] <= 0)
        if instant.any():
            ins = new[instant]
            self._complete(ins, self.start[ins])
            new = new[~instant]
        if new.size == 0:
            return None
        self.status[new] = 2
        if self.ix is not None:
            li = self.loc[new]
            ok = li >= 0
            self.L_act[li[ok]] = True
            self.n_pending -= int(ok.sum())
        keys = np.add(self.pr.res[new], 1, dtype=np.intp).reshape(-1)
        self.nact += np.bincount(keys, minlength=self.pr.R + 1)
        self.cntw += self._coef_counts(new, keys)
        return new

    def _coef_counts(self, gids, keys):
        """Per-slot sum of the coefficients m_f * w_fl of the flows ``gids`` (``keys``: their slots, flattened)."""
        pr = self.pr
        w = None
        if self.sw is not None:  # the same weights from the per-slot table (slot 0, the padding, is zeroed below)
            w = np.take(self.sw, keys)
        elif pr.weight is not None:
            w = pr.weight[gids].reshape(-1)
            if pr.mult is not None:
                w = w * np.repeat(pr.mult[gids], pr.res.shape[1])
        elif pr.mult is not None:
            w = np.repeat(pr.mult[gids], pr.res.shape[1])
        c = np.bincount(keys, weights=w, minlength=pr.R + 1).astype(np.float64, copy=False)
        c[0] = 0.0
        return c

    def _complete(self, gids: np.ndarray, tend: np.ndarray):
        """Mark flows done at their transfer ends; finish phases and schedule dependents."""
        self.tend[gids] = tend
        st = self.status
        was_active = st[gids] == 2
        st[gids] = 3
        fin = tend if self.lat is None else tend + self.lat[gids]
        if was_active.any():
            ga = gids[was_active]
            keys = np.add(self.pr.res[ga], 1, dtype=np.intp).reshape(-1)
            self.nact -= np.bincount(keys, minlength=self.pr.R + 1)
            self.cntw -= self._coef_counts(ga, keys)
            if not self.nact.any():
                self.cntw[:] = 0.0  # no rounding residue once nothing is active
        if self.pr.P == 1:
            phs, cnt, mx = [0], [gids.shape[0]], [float(fin.max())]
        else:
            ph = self.ph[gids]
            o = np.argsort(ph, kind="stable")
            phs, first, cnt = np.unique(ph[o], return_index=True, return_counts=True)
            mx = np.maximum.reduceat(fin[o], first)
            phs, cnt, mx = phs.tolist(), cnt.tolist(), mx.tolist()
        finished = []
        for p, c, m in zip(phs, cnt, mx):
            if m > self.ph_maxfin[p]:
                self.ph_maxfin[p] = m
            self.ph_left[p] -= c
            if self.ph_left[p] == 0:
                finished.append(p)
        for p in finished:
            self._finish_phase(p, float(self.ph_maxfin[p]))

    def _truncate(self, aidx, done, tc, t1, cut):
        """Cut the epoch at the first arrival caused by a phase finishing inside it."""
        if self.pr.dep_idx.size == 0 or not done.any():
            return t1, cut, False  # no phase waits on another: finishing phases schedule nothing
        gd = self.ix_flows[aidx[done]]
        ph = self.ph[gd]
        o = np.argsort(ph, kind="stable")
        phs, first, cnt = np.unique(ph[o], return_index=True, return_counts=True)
        fin = tc[done] if self.lat is None else tc[done] + self.lat[gd]
        mx = np.maximum.reduceat(fin[o], first)
        left = self.ph_left[phs] - cnt
        if not (left == 0).any():
            return t1, cut, False
        fb = {int(p): max(float(m), float(self.ph_maxfin[p])) for p, m, lf in zip(phs, mx, left) if lf == 0}
        ta = self._earliest_new_arrival(fb)
        if ta < t1:
            return ta, ta, True
        return t1, cut, False
