"""Event-driven completion times of flows sharing resources max-min fairly.

The engine takes flows as arrays (resource ids per hop, sizes, release times,
latencies, phases with dependencies) and returns, per flow, when it starts and
finishes, plus per-resource bytes, busy time and the makespan.  It knows no
graph: resources are links or trunks, already merged by the caller.

Modes (see docs/flow-engine.md for the proofs and measured errors):

* ``"one-solve"``: all flows start together (one phase, equal release) and have
  equal sizes.  Then the fastest flows always finish first and no remaining
  flow's rate ever changes (warm-start lemma), so ``finish = start + size /
  rate + latency`` from a single max-min solve.  Exact.
* ``"exact"``: fluid max-min event loop.  Rates are re-solved at every distinct
  completion (ties within 1e-9 relative are batched), arrival and phase start;
  after pure departures the solve is warm-started (flows slower than every
  departed flow keep their rates).  Exact.
* ``"epoch"``: max-min rates are held for an epoch; between two max-min
  solves the engine may also *rescale* (every flow's rate times the smallest
  ``capacity / load`` over its resources: feasible, and it gives back most of
  the freed capacity when resources empty at similar rates).  An epoch ends (besides
  arrivals) when a budget runs out: (a) the idled flow-time, ``sum over
  saturated resources of idle capacity x (flows bottlenecked there) / capacity``,
  exceeds ``epsilon`` times the elapsed flow-time; (b) on a saturated resource,
  idled capacity exceeds ``eps_l * capacity * busy time``, with ``eps_l =
  epsilon`` on the critical resources (byte load / capacity within 1 % of the
  largest) and ``min(5 epsilon, 0.5)`` elsewhere.  An aggregate-budget end is
  followed by a rescale (at most 20 in a row), a per-resource one by a solve.
  Proven: the budgets hold (so a persistent critical bottleneck delivers at
  least ``(1 - epsilon)`` of its capacity and a single-bottleneck phase ends
  within ``T_exact / (1 - epsilon)``); measured on skewed all-to-alls:
  makespan within ``T_exact / (1 - epsilon)`` (epsilon <= 2 %) and mean flow
  completion time within ``1.25 epsilon`` of exact; single flows can be off by
  much more (docs/flow-engine.md §4).
* ``"auto"``: one-solve when eligible, exact when the problem is small
  (``flows * (entries + 64 * resources) <= 5e8``), epoch otherwise.
"""

from __future__ import annotations

import heapq
from dataclasses import dataclass, replace

import numpy as np

from fabric import maxmin as _mm
from topologies.errors import FlowError, ProblemTooLargeError

__all__ = ["FlowProblem", "FlowResult", "simulate", "estimate_memory_bytes"]

_TIE = 1e-9
# epoch mode (docs/flow-engine.md §4)
_CRITICAL = 0.99  # resources with bytes / capacity >= 0.99 x the largest keep the per-resource budget epsilon
_GUARD = 5.0  # every other saturated resource: min(5 epsilon, 0.5)
_GUARD_MAX = 0.5
_MAX_RESCALES = 20  # at most this many rescales between two max-min solves
_ULP = float(np.finfo(np.float64).eps)
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
        cap = _mm._check_capacity(p.capacity_Bps)
        res = _mm._check_res(p.res, cap.shape[0])
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
        self.weight = _mm._check_weight(p.weight, res)
        if p.size_bytes is None:
            raise FlowError("size_bytes: required, float64[F] >= 0")
        self.size = _per_flow(p.size_bytes, F, "size_bytes", "sizes")
        self.rel = None if p.release_s is None else _per_flow(p.release_s, F, "release_s", "release times")
        self.lat = None if p.latency_s is None else _per_flow(p.latency_s, F, "latency_s", "latencies")
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


def _per_flow(x, F, name, what):
    a = np.asarray(x, dtype=np.float64)
    if a.shape != (F,):
        raise FlowError(f"{name}: expected shape ({F},), got {a.shape}")
    bad = ~((a >= 0) & (a < _INF))
    if bad.any():
        i = int(np.flatnonzero(bad)[0])
        v = a[i]
        why = "is negative" if v < 0 else "is not finite"
        raise FlowError(f"{name}[{i}]: {float(v)!r} {why}; {what} must be finite and >= 0")
    return a


# --------------------------------------------------------------------------- helpers


def _slot_sum(res: np.ndarray, per_flow: np.ndarray, weight: np.ndarray | None, n_res: int) -> np.ndarray:
    """Per-slot sum of ``per_flow[f] * weight[f, j]`` over the entries of ``res`` (slot 0: the padding).

    One bincount per hop column: no F x h temporaries.
    """
    r1 = n_res + 1
    out = np.zeros(r1)
    keys = np.empty(res.shape[0], np.intp)  # one buffer for every column (fresh F-sized arrays page-fault)
    for j in range(res.shape[1] if res.ndim == 2 else 0):
        v = per_flow if weight is None else per_flow * weight[:, j]
        out += np.bincount(np.add(res[:, j], 1, out=keys, casting="unsafe"), weights=v, minlength=r1)
    return out


def _slot_max(res: np.ndarray, per_flow: np.ndarray, n_res: int) -> np.ndarray:
    """Per-slot maximum of ``per_flow`` over the entries of ``res`` (-inf where none; slot 0: the padding).

    One ``maximum.at`` per hop column: the values stay in flow order (no gather).
    """
    out = np.full(n_res + 1, -_INF)
    keys = np.empty(res.shape[0], np.intp)
    for j in range(res.shape[1] if res.ndim == 2 else 0):
        np.maximum.at(out, np.add(res[:, j], 1, out=keys, casting="unsafe"), per_flow)
    return out


def _resource_bytes(pr: _Prob) -> np.ndarray:
    """sum_f m_f * w_fl * size_f per resource (padding dropped)."""
    w = pr.size if pr.mult is None else pr.size * pr.mult
    return _slot_sum(pr.res, w, pr.weight, pr.R)[1:]


def _earliest(tc: np.ndarray, k: int) -> np.ndarray:
    """Indices of at least the ``k + 1`` smallest values of ``tc`` (unordered, all values below any left out).

    A threshold estimated on a strided sample selects them with one comparison
    pass; ``argpartition`` is the fallback when the estimate misses.
    """
    n = tc.shape[0]
    if n > 16 * k and n > 65536:
        step = n // 4096
        samp = np.sort(tc[::step])
        q = min(samp.shape[0] - 1, int(1.5 * (k + 1) / n * samp.shape[0]) + 2)
        thr = samp[q]
        sel = np.flatnonzero(tc <= thr)
        if k + 1 <= sel.shape[0] <= 4 * (k + 1):
            return sel
    return np.argpartition(tc, k)[: k + 1]


def _argsort_slots(keys: np.ndarray, n_res: int) -> np.ndarray:
    """Stable argsort of slot ids (numpy radix-sorts 16-bit keys, 6x faster than int64)."""
    if n_res < 65535:
        return np.argsort(keys.astype(np.uint16), kind="stable")
    return np.argsort(keys, kind="stable")


def _unconstrained(pr: _Prob) -> np.ndarray:
    """Flows that cross no finite-capacity resource (their rate is infinite)."""
    fin = np.concatenate([[False], np.isfinite(pr.cap)])
    return ~np.take(fin, np.add(pr.res, 1, dtype=np.intp)).any(axis=1)


class _Reduced:
    """The problem the solver sees after merging duplicate hop columns (internal).

    Two adjacent hop columns ``j, j + 1`` are duplicates when every flow that
    has an entry in one has one in the other, the resources of each column
    appear in no other column, the map ``res[f, j] -> res[f, j + 1]`` is a
    bijection between them and the weights are equal.  Then resources ``u``
    and ``v = map(u)`` carry exactly the same flows with the same coefficients,
    so their constraints are the same up to capacity and only
    ``min(c_u, c_v)`` can bind: column ``j + 1`` is dropped and ``u`` gets the
    smaller capacity.  Exact (same rates, same events); it removes the host
    link that sits beside every NIC port in the router's six-hop paths.
    ``rep[v] = u`` maps every resource to the one that carries its flows.
    """

    __slots__ = ("res", "weight", "cap", "rep")

    def __init__(self, res, weight, cap, rep):
        self.res, self.weight, self.cap, self.rep = res, weight, cap, rep


def _reduce_columns(pr: _Prob) -> _Reduced:
    res, w, cap = pr.res, pr.weight, pr.cap
    F, h = res.shape if res.ndim == 2 else (0, 0)
    R = pr.R
    rep = np.arange(R, dtype=np.int64)
    if F == 0 or h < 2 or R == 0:
        return _Reduced(res, w, cap, rep)
    cols = [res[:, j] for j in range(h)]
    # resources present in each column (the padding -1 marks the extra last entry)
    present, pad = [], []
    for c in cols:
        m = np.zeros(R + 1, dtype=np.bool_)
        m[c] = True
        pad.append(bool(m[R]))
        present.append(m[:R])
    keep = list(range(h))
    pairs = [(j, j + 1) for j in range(h - 1)]
    cap_eff = None
    i = 0
    while i < len(pairs):
        a, b = pairs[i]
        i += 1
        pa, pb = present[a], present[b]
        if not pa.any() or pad[a] != pad[b]:
            continue
        # each column's resources appear in no other column
        if any((pa & present[c]).any() or (pb & present[c]).any() for c in keep if c not in (a, b)):
            continue
        if (pa & pb).any():
            continue
        u, v = cols[a], cols[b]
        if pad[a]:
            if not np.array_equal(u < 0, v < 0):
                continue
            m = u >= 0
            u, v = u[m], v[m]
        else:
            m = slice(None)
        if w is not None and not np.array_equal(w[m, a], w[m, b]):
            continue
        v_of = np.full(R, -1, dtype=res.dtype)
        v_of[u] = v
        if not np.array_equal(np.take(v_of, u), v):
            continue  # not a function u -> v
        vals = v_of[v_of >= 0]
        if np.unique(vals).shape[0] != vals.shape[0]:
            continue  # not one-to-one
        if cap_eff is None:
            cap_eff = cap.copy()
        su = np.flatnonzero(v_of >= 0)
        cap_eff[su] = np.minimum(cap_eff[su], cap[v_of[su]])
        rep[v_of[su]] = rep[su]
        keep.remove(b)
        present[a] = pa | pb
        # a chain a, b, c of duplicates: the pair (b, c) becomes (a, c)
        pairs[i:] = [(a, q) if p == b else (p, q) for p, q in pairs[i:]]
    if len(keep) == h:
        return _Reduced(res, w, cap, rep)
    res2 = np.take(res, keep, axis=1)
    w2 = None if w is None else np.take(w, keep, axis=1)
    return _Reduced(res2, w2, cap_eff, rep)


def estimate_memory_bytes(problem: FlowProblem, *, time_series_events: int = 0) -> int:
    """Rough peak memory of :func:`simulate` for ``problem``, in bytes.

    Counts the adjacency (int32 per entry, built with one temporary copy), the
    slot keys of epoch mode, the coefficients when weighted, about 140 bytes of
    per-flow state and, when a time series is requested, ``events x
    resources`` float32 + bool values.

    Examples
    --------
    >>> import numpy as np
    >>> p = FlowProblem(capacity_Bps=np.ones(4), res=np.zeros((1000, 4), dtype=np.int32),
    ...                 size_bytes=np.ones(1000))
    >>> estimate_memory_bytes(p) > 0
    True
    """
    res = np.asarray(problem.res)
    F = res.shape[0] if res.ndim == 2 else 0
    h = res.shape[1] if res.ndim == 2 else 0
    R = np.asarray(problem.capacity_Bps).shape[0]
    nnz = F * h
    # index (int32 rows + CSC) and epoch mode's intp slot keys; per-entry coefficients when weighted
    per_entry = 4 * 3 + 8 + (24 if problem.weight is not None else 0)
    return int(nnz * per_entry + F * 140 + R * 64 + time_series_events * R * 5)


# --------------------------------------------------------------------------- simulation


def simulate(problem: FlowProblem, *, mode: str = "auto", epsilon: float = 0.01,
             memory_limit_bytes: int = 8 << 30, time_series: bool = False) -> FlowResult:
    """Completion time of every flow under max-min fair sharing.

    Parameters
    ----------
    problem : FlowProblem
        Flows, resources, phases.
    mode : {"auto", "exact", "epoch"}
        ``"exact"``: re-solve at every event; ``"epoch"``: hold rates within
        epochs (tolerance ``epsilon``); ``"auto"``: the one-solve shortcut when
        it is exact, exact when small, epoch otherwise (rule in the module doc).
    epsilon : float
        Epoch tolerance in (0, 1): budget of idled flow-time (a share of the
        elapsed flow-time) and of idled capacity on the critical resources;
        other saturated resources get ``min(5 epsilon, 0.5)`` (module doc).
    memory_limit_bytes : int
        Raise :class:`ProblemTooLargeError` when the estimate exceeds it.
    time_series : bool
        Also return per-interval utilisation and saturation of every resource
        (memory ``O(events x R)``).

    Returns
    -------
    FlowResult

    Raises
    ------
    FlowError
        Malformed input (negative or NaN sizes, bad resource ids, dependency cycle, ...).
    ProblemTooLargeError
        The memory estimate is over ``memory_limit_bytes``.

    Examples
    --------
    Two flows of 1 and 3 bytes share a 1 B/s link: the small one finishes at
    2 s (half rate), the big one at 4 s.

    >>> import numpy as np
    >>> p = FlowProblem(capacity_Bps=np.array([1.0]), res=np.array([[0], [0]]),
    ...                 size_bytes=np.array([1.0, 3.0]))
    >>> simulate(p, mode="exact").finish_s.tolist()
    [2.0, 4.0]
    """
    if mode not in ("auto", "exact", "epoch"):
        raise FlowError(f"mode: {mode!r} is not one of 'auto', 'exact', 'epoch'")
    if not (0.0 < float(epsilon) < 1.0):
        raise FlowError(f"epsilon: {epsilon!r} must be in (0, 1)")
    pr = _Prob(problem)
    est = estimate_memory_bytes(problem)
    if est > memory_limit_bytes:
        raise ProblemTooLargeError(
            f"simulate: this problem needs about {est / 2**30:.2f} GiB ({pr.F:,} flows x {pr.res.shape[1]} hops, "
            f"{pr.R:,} resources), over memory_limit_bytes = {memory_limit_bytes / 2**30:.2f} GiB; aggregate "
            "identical flows into classes (multiplicity), merge parallel links into trunks, simulate fewer ranks, "
            "or raise memory_limit_bytes")
    one = _one_solve_ok(pr)
    if mode == "auto":
        if one:
            chosen = "one-solve"
        else:
            nnz = pr.res.size
            chosen = "exact" if pr.F * (nnz + 64 * pr.R) <= 5e8 else "epoch"
    else:
        chosen = mode
    if chosen == "epoch":
        # The fold is exact, but it changes roundings, and epoch mode's discrete choices (epoch ends, rescales)
        # can flip on a last-bit difference: keep the per-entry coefficients there, so results do not depend
        # on how the caller expressed the weights.
        pr.unfold()
    red = _reduce_columns(pr)
    prs = pr if red.res is pr.res else pr.reduced(red)
    rbytes = _resource_bytes(prs)[red.rep]  # a merged resource carries exactly its representative's bytes
    with np.errstate(divide="ignore", invalid="ignore"):
        lb_r = rbytes / pr.cap
    lb = float(np.nanmax(lb_r)) if lb_r.size else 0.0
    if not np.isfinite(lb):
        lb = 0.0
    if chosen == "one-solve" and not time_series:
        return _unfold(_expand(_one_solve(prs, rbytes, lb), pr, red), pr)
    sim = _EventLoop(prs, exact=(chosen != "epoch"), epsilon=float(epsilon), time_series=time_series,
                     memory_limit_bytes=memory_limit_bytes, base_bytes=est)
    return _unfold(_expand(sim.run(rbytes, lb), pr, red), pr)


def _unfold(r: FlowResult, pr: _Prob) -> FlowResult:
    """Bytes per resource in the caller's units when ``resource_weight`` was folded into the capacities."""
    if pr.rw is None:
        return r
    return replace(r, resource_bytes=r.resource_bytes * pr.rw)


def _expand(r: FlowResult, pr: _Prob, red: _Reduced) -> FlowResult:
    """Per-resource statistics of the merged resources, from the resource that carried their flows."""
    if red.res is pr.res:
        return r
    rep = red.rep
    scale = red.cap[rep] / pr.cap  # utilisation was measured against the merged (smaller) capacity
    scale = np.where(np.isfinite(scale), scale, 0.0)
    kw = dict(resource_busy_s=r.resource_busy_s[rep])
    if r.resource_peak_utilization is not None:
        kw["resource_peak_utilization"] = r.resource_peak_utilization[rep] * scale
    if r.series_utilization is not None:
        kw["series_utilization"] = (r.series_utilization[:, rep] * scale.astype(np.float32)).astype(np.float32)
        kw["series_saturated"] = r.series_saturated[:, rep] & (pr.cap <= red.cap[rep])[None, :]
    return replace(r, **kw)


def _one_solve_ok(pr: _Prob) -> bool:
    if pr.P != 1:
        return False
    if pr.rel is not None and pr.F and pr.rel.min() != pr.rel.max():
        return False
    if pr.F == 0:
        return True
    hi = float(pr.size.max())
    lo = float(np.where(pr.size > 0, pr.size, hi).min())
    return lo == hi


def _one_solve(pr: _Prob, rbytes, lb) -> FlowResult:
    F = pr.F
    t0 = float(pr.delay[0]) + (float(pr.rel[0]) if pr.rel is not None and F else 0.0)
    start = np.full(F, t0)
    pos = pr.size > 0
    flows = None if pos.all() else np.flatnonzero(pos)
    ix = _mm._build_index(pr.res, pr.weight, pr.mult, pr.R, flows)
    state = np.full(ix.size, _mm._ALIVE, dtype=np.uint8)
    out = _mm._fill(ix, pr.cap, state, _mm._counts(ix, None))
    rates = out.rates()
    rounds = out.rounds
    sz = pr.size if flows is None else pr.size[flows]
    dur = np.divide(sz, rates, out=rates)  # inf rate -> 0; the rates are not needed any more
    del rates
    if flows is None:
        tend = dur + t0
    else:
        tend = start.copy()
        tend[flows] += dur
    # busy: a resource is busy from t0 until its slowest flow ends (max over each resource's flows)
    busy = np.zeros(pr.R)
    if ix.size:
        np.copyto(dur, 0.0, where=~np.isfinite(dur))
        busy = _slot_max(ix.res, dur, pr.R)[1:]
        np.maximum(busy, 0.0, out=busy)
    del ix, out, dur
    fin = tend if pr.lat is None else tend + pr.lat
    mk = float(fin.max()) if F else float(pr.delay[0])
    return FlowResult(start_s=start, transfer_end_s=tend, finish_s=fin, makespan_s=mk, resource_bytes=rbytes,
                      resource_busy_s=busy, resource_peak_utilization=None, lower_bound_s=lb,
                      mode_used="one-solve", events=1, solves=1, rounds=rounds, exact=True, epsilon=0.0)


def _row_bincount(keys: np.ndarray, rates: np.ndarray, coef: np.ndarray | None, minlength: int) -> np.ndarray:
    """Per-slot sum of ``rate x coefficient`` over the entries of the rows ``keys`` (slot ids)."""
    h = keys.shape[1]
    w = np.repeat(rates, h)
    if coef is not None:
        w = w * (np.repeat(coef, h) if coef.ndim == 1 else coef.reshape(-1))
    return np.bincount(keys.reshape(-1), weights=w, minlength=minlength)


class _EventLoop:
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
        self.loc = np.full(F, -1, dtype=np.int64)
        self.series_t: list[float] = []
        self.series_u: list[np.ndarray] = []
        self.series_s: list[np.ndarray] = []
        self.peak = np.zeros(R + 1) if time_series else None

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
        self.ix = _mm._build_index(pr.res, pr.weight, pr.mult, pr.R, flows)
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
        ke = keep[ix.indices]
        r1 = ix.indptr.shape[0] - 1
        slot = np.repeat(np.arange(r1), np.diff(ix.indptr))
        counts = np.bincount(slot[ke], minlength=r1)
        indptr = np.zeros(r1 + 1, dtype=ix.indptr.dtype)
        np.cumsum(counts, out=indptr[1:])
        ix.indices = ix.indices[ke]
        ix.indptr = indptr
        if ix.ecoef is not None:
            ix.ecoef = ix.ecoef[ke]
        self.n_listed = int(np.count_nonzero(keep))

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
        while True:
            # ---- admit arrivals at t
            admitted = self._admit(t)
            if admitted is not None:
                need_cold = True
            if self.ix is None or (admitted is not None and self._needs_index(admitted)):
                self._rebuild()
                need_cold = True
            elif self.ix.size and (self.L_act.sum() + self.n_pending) * 2 < self.ix.size:
                self._rebuild()
                need_cold = True
            elif (self.L_act.sum() + self.n_pending) * 4 < 3 * self.n_listed:
                self._compact_lists()
            n_act = int(self.L_act.sum()) if self.ix is not None else 0
            if n_act == 0:
                if not self.heap:
                    break
                t = max(t, self.heap[0][0])
                continue
            self.events += 1
            # ---- solve
            aidx = np.flatnonzero(self.L_act)
            rates = None
            if not self.exact and not need_cold and n_resc < _MAX_RESCALES and self._by_aggregate:
                # the aggregate budget ran out (flows finishing everywhere): a rescale first
                rates = self._rescale(aidx)
            if rates is None:
                rates = self._solve(aidx, None if need_cold else last_departed_min)
                self.L_mm[aidx] = rates
                last_departed_min = None
                self.idle0[:] = 0.0
                n_resc = 0
            else:
                n_resc += 1
            need_cold = False
            rem = self.L_rem[aidx]
            with np.errstate(divide="ignore"):
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
            gd = aidx[done]
            tcd = tc[done]
            self._account(t, t1, aidx, rates, tc, done, sat)
            left = rem - rates * (t1 - t)
            np.maximum(left, 0.0, out=left)
            self.L_rem[aidx] = left
            self.L_rate[aidx] = rates
            if gd.size and not self.exact:
                self._depart(gd, rates[done])
            if gd.size:
                # the warm start holds on the max-min rates of the last solve, whatever rescales did since
                mn = float(self.L_mm[gd].min())
                last_departed_min = mn if last_departed_min is None else min(last_departed_min, mn)
                self.L_act[gd] = False
                self.L_rem[gd] = 0.0
                self._complete(self.ix_flows[gd], tcd)
            t = t1
        return self._result(rbytes, lb)

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
        if pr.weight is not None:
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

    # ---------------------------------------------------------------- solve

    def _solve(self, aidx, warm_x):
        """Max-min rates of the active flows; warm-started (exact) when ``warm_x`` is given.

        Also records every active flow's bottleneck slot (``L_bneck``) and the
        number of flows (x multiplicity) bottlenecked at each slot (``members``).
        """
        ix = self.ix
        n = ix.size
        all_active = aidx.shape[0] == n
        fixed = None
        if warm_x is not None:
            prev = self.L_mm
            fixed = self.L_act & (prev < warm_x * (1.0 - _mm.TIE_RTOL))
            if not fixed.any():
                fixed = None
        if fixed is not None:
            refill = self.L_act & ~fixed
            state = np.where(refill, _mm._ALIVE, _mm._DONE).astype(np.uint8)
            nfix = int(np.count_nonzero(fixed))
            if 2 * nfix < aidx.shape[0]:
                cnt = self.cntw - _mm._counts(ix, np.where(fixed, _mm._ALIVE, _mm._DONE).astype(np.uint8))
            else:
                cnt = _mm._counts(ix, state)
            out = _mm._fill(ix, self.pr.cap, state, cnt, _mm._fixed_load(ix, fixed, prev), compiled=self.exact)
            rates = np.where(fixed[aidx], prev[aidx], out.level[out.bneck[aidx]])
            ri = np.flatnonzero(refill)
            self.L_bneck[ri] = out.bneck[ri]
        else:
            if all_active:
                state = np.full(n, _mm._ALIVE, dtype=np.uint8)
            else:
                state = np.where(self.L_act, _mm._ALIVE, _mm._DONE).astype(np.uint8)
            cnt = self.cntw.copy()  # maintained on arrivals and departures
            out = _mm._fill(ix, self.pr.cap, state, cnt, compiled=self.exact)
            b = out.bneck[aidx]
            rates = out.level[b]
            self.L_bneck[aidx] = b
        if not self.exact or self.ts:
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
        self.solves += 1
        self.rounds += out.rounds
        if self.peak is not None:
            load = self._load(aidx, rates)
            with np.errstate(divide="ignore", invalid="ignore"):
                u = load[1:] / self.pr.cap
            np.maximum(self.peak[1:], np.nan_to_num(u), out=self.peak[1:])
        return rates

    def _depart(self, gd, rd):
        """Maintained per-slot load and members after the local flows ``gd`` (rates ``rd``) finished."""
        ix = self.ix
        keys = np.take(self.L_keys, gd, axis=0)
        coef = None if ix.coef is None else np.take(ix.coef, gd, axis=0)
        self.load -= _row_bincount(keys, rd, coef, self.pr.R + 1)
        self.load[0] = 0.0
        mult = None if self.L_mult is None else self.L_mult[gd]
        self.members -= np.bincount(self.L_bneck[gd], weights=mult, minlength=self.pr.R + 1)
        self.members[0] = 0.0

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
        if ix.coef is not None:
            c = np.take(ix.coef, aidx, axis=0)
            coef = np.repeat(c, h) if c.ndim == 1 else c.reshape(-1)
        load = self.load.copy()  # maintained: set by the solve, lowered by departures
        capx = self.capx
        with np.errstate(divide="ignore", invalid="ignore"):
            sig = np.where((load > 0.0) & np.isfinite(capx), capx / load, _INF)
        sig[0] = _INF
        bn = self.L_bneck[aidx]
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

    def _load(self, aidx, rates):
        ix = self.ix
        keys = np.add(np.take(ix.res, aidx, axis=0), 1, dtype=np.intp)
        coef = None if ix.coef is None else np.take(ix.coef, aidx, axis=0)
        return _row_bincount(keys, rates, coef, self.pr.R + 1)

    # ---------------------------------------------------------------- epochs

    def _epoch_end(self, t0, aidx, rates, tc, sat) -> float:
        """First time a budget runs out (docs/flow-engine.md §4), or the last completion.

        Per resource: on a saturated slot ``l`` (one that is some flow's
        bottleneck), the capacity idled inside epochs exceeds
        ``eps_slot[l] * c_l * busy_l``.  Aggregate: the idled flow-time
        ``sum_l int idle_l * members_l / c_l dt`` exceeds ``eps`` times the elapsed
        flow-time ``int (active flows) dt``.  Both are piecewise linear between
        completions; the k earliest completions are walked in windows of growing
        size (one partial sort).  The aggregate curve is kept for ``_account``.
        """
        n = tc.shape[0]
        self._curve = None
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
        mult_a = None if self.L_mult is None else self.L_mult[aidx]
        N0 = float(n) if mult_a is None else float(mult_a.sum())
        k = max(256, min(self._kguess, n))
        while True:
            if k < n:
                sel = _earliest(tc, k)
                sel = sel[np.argsort(tc[sel])]
                t_next = float(tc[sel[-1]])
                sel = sel[:-1]
                k = sel.shape[0]
            else:
                k = n
                sel = np.argsort(tc, kind="stable")
                t_next = _INF
            lidx = aidx[sel]
            tcs = tc[sel]
            keys2 = np.take(self.L_keys, lidx, axis=0)
            h = keys2.shape[1]
            ar = np.repeat(rates[sel], h)
            if ix.coef is not None:
                c = np.take(ix.coef, lidx, axis=0)
                ar = ar * (np.repeat(c, h) if c.ndim == 1 else c.reshape(-1))
            memb = (keys2 == self.L_bneck[lidx][:, None]).reshape(-1)
            keys = keys2.reshape(-1)
            m = sat[keys]
            nm = int(np.count_nonzero(m))
            wH = np.zeros(k)
            best = _INF
            if r0 is not None:
                firstc = np.full(capx.shape[0], t_next)
            if nm:
                # entries of saturated slots, by slot, completion order kept (the others sort last)
                o = _argsort_slots(np.where(m, keys, capx.shape[0]), capx.shape[0])[:nm]
                jj = o // h
                keys, ar, memb = keys[o], ar[o], memb[o]
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
                t1 = best if best <= t_next else float(tc.max())
                self._curve = (tb, H, N0 - Nd)
                self._kguess = 2 * int(np.searchsorted(tcs, t1, side="right")) + 1
                return t1
            k *= 8

    def _account(self, t0, t1, aidx, rates, tc, done, sat):
        """Busy time, epoch budget and time series for the interval [t0, t1)."""
        dt = t1 - t0
        R1 = self.pr.R + 1
        ix = self.ix
        nact = self.nact
        busy_all = nact > 0
        full = lastf = None
        if done.any():
            gd = aidx[done]
            rows = np.take(ix.res, gd, axis=0)
            keys = np.add(rows, 1, dtype=np.intp).reshape(-1)
            ndone = np.bincount(keys, minlength=R1)
            full = busy_all & (ndone >= nact)
            lastf = np.full(R1, t0)
            np.maximum.at(lastf, keys, np.repeat(tc[done], rows.shape[1]))
            np.minimum(lastf, t1, out=lastf)
            add = np.where(full, lastf - t0, dt)
        else:
            add = np.full(R1, dt)
        self.busy += np.where(busy_all, add, 0.0)
        need_lost = not self.exact
        if need_lost or self.ts:
            # bytes idled by flows finishing inside the interval, per slot, while the slot is busy
            if done.any():
                h = rows.shape[1]
                end = np.where(full, lastf, t1)[keys]
                w = np.repeat(rates[done], h) * (end - np.repeat(tc[done], h))
                if ix.coef is not None:
                    c = np.take(ix.coef, gd, axis=0)
                    w = w * (np.repeat(c, h) if c.ndim == 1 else c.reshape(-1))
                lost = np.bincount(keys, weights=w, minlength=R1)
                # for the time series: all bytes idled up to t1
                w_all = np.repeat(rates[done] * (t1 - tc[done]), h)
                if ix.coef is not None:
                    w_all = w_all * (np.repeat(c, h) if c.ndim == 1 else c.reshape(-1))
                lost_all = np.bincount(keys, weights=w_all, minlength=R1) if self.ts else None
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
