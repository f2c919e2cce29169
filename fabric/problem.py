"""The flow engine's input and output: :class:`FlowProblem`, :class:`FlowResult`, and their validation.

:class:`_Prob` is the validated, normalised problem every engine stage works
on (per-flow arrays checked once, phases and their dependency DAG, resource
weights folded into capacities); :mod:`fabric.engine` runs it.

Examples
--------
>>> import numpy as np
>>> p = FlowProblem(capacity_Bps=np.array([1.0]), res=np.array([[0]]), size_bytes=np.array([2.0]))
>>> _Prob(p).F
1
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from fabric.checks import check_capacity, check_res, check_weight, per_flow
from topologies.errors import FlowError

__all__ = ["FlowProblem", "FlowResult"]

_INF = np.inf


@dataclass(frozen=True)
class FlowProblem:
    """A set of flows over resources, with phases and dependencies.

    Attributes
    ----------
    capacity_Bps : numpy.ndarray
        float64[R] > 0 (``np.inf`` allowed): capacity of each resource.
    res : numpy.ndarray
        int[F, h]: resource ids crossed by each flow, -1 = padding.
    weight : numpy.ndarray or None
        float64[F, h]: fraction of the flow's rate on that resource (None = 1).
    size_bytes : numpy.ndarray
        float64[F] >= 0, finite: bytes to transfer (per member flow).
    release_s : numpy.ndarray or None
        float64[F] >= 0: earliest start, measured from the start of the flow's phase.
    latency_s : numpy.ndarray or None
        float64[F] >= 0: fixed latency added after the bytes are transferred.
    phase : numpy.ndarray or None
        int[F] in [0, P): phase of each flow (None = all in phase 0).
    phase_deps : tuple of numpy.ndarray or None
        CSR ``(indptr[P + 1], indices)``: phase ``p`` starts when every flow of
        every phase in ``indices[indptr[p]:indptr[p + 1]]`` has finished
        (latency included).  Must be acyclic.
    phase_delay_s : numpy.ndarray or None
        float64[P] >= 0: extra delay between the dependencies' end and the start.
    multiplicity : numpy.ndarray or None
        float64[F] >= 1: flow ``f`` stands for ``m_f`` identical flows (a class).
    resource_weight : numpy.ndarray or None
        float64[R] > 0, finite: a factor on every entry of resource ``l``
        (e.g. 1 / wire efficiency of its transport): flow ``f`` puts
        ``weight[f, j] * resource_weight[res[f, j]]`` of its rate on it.  The
        engine folds it into the capacity (``c_l / resource_weight[l]``), which
        is exact and keeps unit weights unweighted; ``resource_bytes`` still
        counts ``resource_weight[l]`` x the bytes.
    """

    capacity_Bps: np.ndarray
    res: np.ndarray
    weight: np.ndarray | None = None
    size_bytes: np.ndarray | None = None
    release_s: np.ndarray | None = None
    latency_s: np.ndarray | None = None
    phase: np.ndarray | None = None
    phase_deps: tuple[np.ndarray, np.ndarray] | None = None
    phase_delay_s: np.ndarray | None = None
    multiplicity: np.ndarray | None = None
    resource_weight: np.ndarray | None = None


@dataclass(frozen=True)
class FlowResult:
    """Completion times and per-resource statistics of a simulation.

    Attributes
    ----------
    start_s, transfer_end_s, finish_s : numpy.ndarray
        float64[F]: start, end of the byte transfer, and finish (= transfer end
        + latency) of every flow.
    makespan_s : float
        Latest finish (or latest phase end when there are no flows).
    resource_bytes : numpy.ndarray
        float64[R]: bytes carried, ``sum_f m_f * w_fl * size_f``.
    resource_busy_s : numpy.ndarray
        float64[R]: total time with at least one transferring flow on the resource.
    resource_peak_utilization : numpy.ndarray or None
        float64[R]: highest load / capacity at any solve (only with ``time_series``).
    lower_bound_s : float
        ``max_r resource_bytes[r] / capacity[r]``: a lower bound on the transfer
        time of a single phase with a common start (and on any makespan).
    mode_used : str
        ``"one-solve"``, ``"exact"`` or ``"epoch"``.
    events, solves, rounds : int
        Loop iterations, max-min solves and filling rounds, in total.
    exact : bool
        True when the result is the exact fluid max-min schedule.
    epsilon : float
        Epoch tolerance used (0 for exact modes).
    series_time_s : numpy.ndarray or None
        float64[E + 1]: boundaries of the intervals between solves (``time_series`` only).
    series_utilization : numpy.ndarray or None
        float32[E, R]: mean utilisation of each resource in each interval.
    series_saturated : numpy.ndarray or None
        bool[E, R]: resource saturated at the solve that opened the interval.
    """

    start_s: np.ndarray
    transfer_end_s: np.ndarray
    finish_s: np.ndarray
    makespan_s: float
    resource_bytes: np.ndarray
    resource_busy_s: np.ndarray
    resource_peak_utilization: np.ndarray | None
    lower_bound_s: float
    mode_used: str
    events: int
    solves: int
    rounds: int
    exact: bool
    epsilon: float
    series_time_s: np.ndarray | None = None
    series_utilization: np.ndarray | None = None
    series_saturated: np.ndarray | None = None


# --------------------------------------------------------------------------- validation


class _Prob:
    """Validated, normalised problem (internal)."""

    def __init__(self, p: FlowProblem):
        cap = check_capacity(p.capacity_Bps)
        res = check_res(p.res, cap.shape[0])
        F = res.shape[0]
        self.rw = None
        if p.resource_weight is not None:
            rw = np.asarray(p.resource_weight, dtype=np.float64)
            if rw.shape != cap.shape:
                raise FlowError(f"resource_weight: expected shape {cap.shape}, got {rw.shape}")
            bad = ~((rw > 0) & (rw < _INF))
            if bad.any():
                i = int(np.flatnonzero(bad)[0])
                raise FlowError(f"resource_weight[{i}]: {float(rw[i])!r} is not allowed; factors must be finite and > 0")
            if not (rw == 1.0).all():
                self.rw = rw
                self.cap_in = cap
                cap = cap / rw  # exact: sum_f rw_l w_fl r_f <= c_l  <=>  sum_f w_fl r_f <= c_l / rw_l
        self.cap = cap
        self.res = res
        self.F = F
        self.R = cap.shape[0]
        self.weight = check_weight(p.weight, res)
        if p.size_bytes is None:
            raise FlowError("size_bytes: required, float64[F] >= 0")
        self.size = per_flow(p.size_bytes, F, "size_bytes", "sizes")
        self.rel = None if p.release_s is None else per_flow(p.release_s, F, "release_s", "release times")
        self.lat = None if p.latency_s is None else per_flow(p.latency_s, F, "latency_s", "latencies")
        if p.multiplicity is None:
            self.mult = None
        else:
            m = np.asarray(p.multiplicity, dtype=np.float64)
            if m.shape != (F,):
                raise FlowError(f"multiplicity: expected shape ({F},), got {m.shape}")
            bad = ~((m >= 1) & (m < _INF))
            if bad.any():
                i = int(np.flatnonzero(bad)[0])
                raise FlowError(f"multiplicity[{i}]: {float(m[i])!r} is not allowed; multiplicities must be finite and >= 1")
            self.mult = m
        self._phases(p)

    def _phases(self, p: FlowProblem):
        F = self.F
        P = 1
        if p.phase is not None:
            ph = np.asarray(p.phase)
            if ph.shape != (F,) or ph.dtype.kind not in "iu":
                raise FlowError(f"phase: expected an int array of shape ({F},), got {ph.dtype} {ph.shape}")
            if F and ph.min() < 0:
                i = int(np.flatnonzero(ph < 0)[0])
                raise FlowError(f"phase[{i}]: {int(ph[i])} is negative; phase ids must be in [0, P)")
            P = max(P, int(ph.max()) + 1 if F else 1)
        else:
            ph = None
        if p.phase_deps is not None:
            try:
                indptr, indices = p.phase_deps
            except (TypeError, ValueError):
                raise FlowError("phase_deps: expected a CSR pair (indptr[P + 1], indices)") from None
            indptr = np.asarray(indptr)
            indices = np.asarray(indices)
            if indptr.ndim != 1 or indptr.shape[0] < 1 or indptr.dtype.kind not in "iu" or indices.dtype.kind not in "iu":
                raise FlowError("phase_deps: expected integer arrays (indptr[P + 1], indices)")
            Pd = indptr.shape[0] - 1
            if ph is not None and F and int(ph.max()) >= Pd:
                i = int(np.flatnonzero(ph >= Pd)[0])
                raise FlowError(f"phase[{i}]: {int(ph[i])} is out of range; phase_deps describes {Pd} phases")
            P = Pd
            if indptr[0] != 0 or (np.diff(indptr) < 0).any() or indptr[-1] != indices.shape[0]:
                raise FlowError("phase_deps: indptr must start at 0, be non-decreasing and end at len(indices)")
            if indices.size and (indices.min() < 0 or indices.max() >= P):
                i = int(np.flatnonzero((indices < 0) | (indices >= P))[0])
                raise FlowError(f"phase_deps indices[{i}]: {int(indices[i])} is not a phase id in [0, {P})")
            self.dep_ptr = indptr.astype(np.int64)
            self.dep_idx = indices.astype(np.int64)
        else:
            self.dep_ptr = np.zeros(P + 1, dtype=np.int64)
            self.dep_idx = np.zeros(0, dtype=np.int64)
        if p.phase_delay_s is not None:
            d = np.asarray(p.phase_delay_s, dtype=np.float64)
            if d.ndim != 1 or d.shape[0] < P:
                raise FlowError(f"phase_delay_s: expected shape ({P},), got {d.shape}")
            if d.shape[0] > P:
                if p.phase_deps is not None:
                    raise FlowError(f"phase_delay_s: expected shape ({P},), got {d.shape}")
                P = d.shape[0]
                self.dep_ptr = np.zeros(P + 1, dtype=np.int64)
            bad = ~((d >= 0) & (d < _INF))
            if bad.any():
                i = int(np.flatnonzero(bad)[0])
                raise FlowError(f"phase_delay_s[{i}]: {float(d[i])!r} is not allowed; delays must be finite and >= 0")
            self.delay = d
        else:
            self.delay = np.zeros(P)
        self.P = P
        self.phase = ph
        self._check_acyclic()

    def _check_acyclic(self):
        P = self.P
        ptr, idx = self.dep_ptr, self.dep_idx
        if idx.size == 0:
            self.order = list(range(P))
            return
        indeg = np.diff(ptr).astype(np.int64)
        # dependents lists
        src = np.repeat(np.arange(P), np.diff(ptr))
        o = np.argsort(idx, kind="stable")
        self.rdep_idx = src[o]
        self.rdep_ptr = np.zeros(P + 1, dtype=np.int64)
        np.cumsum(np.bincount(idx, minlength=P), out=self.rdep_ptr[1:])
        left = indeg.copy()
        stack = [int(q) for q in np.flatnonzero(left == 0)]
        seen = 0
        rp, ri = self.rdep_ptr, self.rdep_idx
        while stack:
            q = stack.pop()
            seen += 1
            for d in ri[rp[q]:rp[q + 1]].tolist():
                left[d] -= 1
                if left[d] == 0:
                    stack.append(d)
        if seen < P:
            raise FlowError(f"phase_deps: dependency cycle {' -> '.join(map(str, _find_cycle(ptr, idx, left > 0)))}; "
                            "phase dependencies must be acyclic")

    def unfold(self) -> None:
        """Per-entry coefficients instead of folded capacities (what epoch mode uses, see :func:`simulate`)."""
        if self.rw is None:
            return
        f = self.rw[np.maximum(self.res, 0)]
        self.weight = np.where(self.res >= 0, f if self.weight is None else self.weight * f, 0.0)
        self.cap, self.rw = self.cap_in, None

    def reduced(self, red) -> "_Prob":
        """A shallow copy that solves on the merged columns (see :func:`_reduce_columns`)."""
        q = object.__new__(_Prob)
        q.__dict__.update(self.__dict__)
        q.res, q.weight, q.cap = red.res, red.weight, red.cap
        return q

    def deps(self, p):
        return self.dep_idx[self.dep_ptr[p]:self.dep_ptr[p + 1]]

    def dependents(self, p):
        if self.dep_idx.size == 0:
            return ()
        return self.rdep_idx[self.rdep_ptr[p]:self.rdep_ptr[p + 1]].tolist()


def _find_cycle(ptr, idx, on_cycle_or_after):
    """One dependency cycle among the phases left by Kahn's algorithm."""
    start = int(np.flatnonzero(on_cycle_or_after)[0])
    path, pos = [], {}
    q = start
    while q not in pos:
        pos[q] = len(path)
        path.append(q)
        nxt = [d for d in idx[ptr[q]:ptr[q + 1]].tolist() if on_cycle_or_after[d]]
        q = nxt[0]
    cyc = path[pos[q]:] + [q]
    return cyc
