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

import numpy as np

from fabric import kernels as _kernels
from fabric import fill as _fl
from fabric.allocator import reuse_freed_memory
from fabric.arrays import extremes
from fabric import renumber as _rn
from fabric.eventloop import _EventLoop, _epoch_kernels
from fabric.leanfill import LEAN_MAX_ENTRIES, lean_fill
from fabric.problem import FlowProblem, FlowResult, _Prob
from fabric.reductions import _expand, _reduce_columns, _resource_bytes, _slot_max, _unfold
from topologies.errors import FlowError, ProblemTooLargeError

__all__ = ["FlowProblem", "FlowResult", "simulate", "estimate_memory_bytes", "RENUMBER"]

#: epoch mode renumbers the flows by their last resource when the loop's compiled passes run
#: (:mod:`fabric.renumber`; False: the caller's order, the reference of the tests)
RENUMBER = True


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
    reuse_freed_memory(entries=pr.res.size)  # large runs: freed temporaries are reused, not faulted in again
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
    else:
        pr.fold_weight()  # per-resource weights given per entry: folded like resource_weight
    if chosen == "one-solve" and not time_series and _lean_ok(pr):
        got = _lean_one_solve(pr)
        if got is not None:
            return _unfold(got, pr)
    red = _reduce_columns(pr)
    prs = pr if red.res is pr.res else pr.reduced(red)
    if chosen == "one-solve" and not time_series:
        return _unfold(_expand(_one_solve(prs, pr.cap, red.rep, red.counts, red.disjoint, red.pairs), pr, red), pr)
    if red.weighted:  # a dropped column's own weights: its bytes from the unreduced rows
        rbytes, lb = _bytes_and_bound(_resource_bytes(pr), pr.cap, np.arange(pr.R))
    else:
        rbytes, lb = _bytes_and_bound(_resource_bytes(prs), pr.cap, red.rep)
    # epoch mode with the loop's compiled passes: flows in receiver order (fabric.renumber; same results to rounding)
    perm = _receiver_perm(prs) if chosen == "epoch" else None
    sim = _EventLoop(prs if perm is None else _rn.permuted(prs, perm), exact=(chosen != "epoch"),
                     epsilon=float(epsilon), time_series=time_series, memory_limit_bytes=memory_limit_bytes,
                     base_bytes=est)
    r = sim.run(rbytes, lb)
    return _unfold(_expand(r if perm is None else _rn.in_caller_order(r, perm), pr, red), pr)


def _receiver_perm(pr: _Prob) -> np.ndarray | None:
    """:func:`fabric.renumber.receiver_order` of the epoch loop's flows when its compiled passes run on them
    (a phase of at least ``EPOCH_MIN_FLOWS`` flows under ``FABRIC_EMU_KERNELS=auto``) and ``RENUMBER`` is on."""
    if not RENUMBER or pr.F == 0:
        return None
    ph = pr.phase
    big = pr.F if ph is None else int(np.bincount(ph).max())
    if _epoch_kernels(big) is None:
        return None
    return _rn.receiver_order(pr.res)


def _one_solve_ok(pr: _Prob) -> bool:
    if pr.P != 1:
        return False
    if pr.rel is not None and pr.F and pr.rel.min() != pr.rel.max():
        return False
    if pr.F == 0:
        return True
    lo, hi = (float(v) for v in extremes(pr.size))
    if lo <= 0.0:  # empty flows do not count (no F-sized temporary when every size is positive)
        lo = float(pr.size.min(where=pr.size > 0, initial=hi))
    return lo == hi


def _bytes_and_bound(rb: np.ndarray, cap: np.ndarray, rep: np.ndarray):
    """(bytes per resource, lower bound ``max bytes / capacity``) from the bytes per solved resource ``rb``."""
    rbytes = rb[rep]  # a merged resource carries exactly its representative's bytes
    with np.errstate(divide="ignore", invalid="ignore"):
        lb_r = rbytes / cap
    lb = float(np.nanmax(lb_r)) if lb_r.size else 0.0
    if not np.isfinite(lb):
        lb = 0.0
    return rbytes, lb


def _index_bytes(pr: _Prob, ix, size: float) -> np.ndarray | None:
    """:func:`_resource_bytes` of equal-size flows from the index's entry counts, when that is the same bits.

    Unit coefficients (no weights, multiplicities or merged repeats) and an integer size ``s`` whose
    product with the largest count is at most 2**53: every partial sum of the per-entry additions is then
    an integer below 2**53, so each addition is exact and the sum is ``count * s`` exactly, whatever the
    order. (Flows of size 0, absent from the index, add +0.0.) ``None`` otherwise.
    """
    if pr.weight is not None or pr.mult is not None or ix.coef is not None or not float(size).is_integer():
        return None
    counts = np.diff(ix.indptr)[1:]
    if counts.shape[0] and float(counts.max()) * size > 2.0 ** 53:
        return None
    return counts * size


def _one_solve(pr: _Prob, cap_full: np.ndarray, rep: np.ndarray, counts: np.ndarray | None = None,
               disjoint: bool = False, pairs: np.ndarray | None = None) -> FlowResult:
    """The one-solve shortcut (module doc); ``counts``: the per-column slot counts of ``pr.res``, if known
    (:func:`fabric.reductions.column_counts`); ``disjoint``: no resource is in two of its columns; ``pairs``:
    the column pairs that share resources, if known (:func:`fabric.adjacency.overlapping_pairs`)."""
    F = pr.F
    t0 = float(pr.delay[0]) + (float(pr.rel[0]) if pr.rel is not None and F else 0.0)
    start = np.full(F, t0)
    lo, hi = extremes(pr.size) if F else (0.0, 0.0)
    flows = None if F == 0 or lo > 0 else np.flatnonzero(pr.size > 0)
    ix = _fl.build_index(pr.res, pr.weight, pr.mult, pr.R, flows, counts, disjoint, pairs, lazy=True)
    s = float(hi)  # every positive size (the shortcut's condition)
    rb = _index_bytes(pr, ix, s) if ix.size else None
    rbytes, lb = _bytes_and_bound(_resource_bytes(pr) if rb is None else rb, cap_full, rep)
    state = np.full(ix.size, _fl.ALIVE, dtype=np.uint8)
    # the numpy fill also keeps each resource's smallest rate: the busy times without a pass over the entries
    min_rate = np.full(pr.R + 1, np.inf)
    out = _fl.fill(ix, pr.cap, state, _fl.coef_sums(ix, None), min_rate=min_rate)
    rounds = out.rounds
    if flows is None and ix.size and _kernels.use_index(ix.res.size):
        # the same element operations in one compiled pass: rates, transfer ends, busy maxima
        tend, busy = _kernels.index().one_solve_tail(out.level, out.bneck, pr.size, t0, ix.res, pr.R)
        del ix, out
        busy = busy[1:]
        np.maximum(busy, 0.0, out=busy)
        fin = tend if pr.lat is None else tend + pr.lat
        return _one_solve_result(pr, start, tend, fin, busy, rbytes, lb, rounds)
    rates = out.rates()
    sz = pr.size if flows is None else pr.size[flows]
    dur = np.divide(sz, rates, out=rates)  # inf rate -> 0; the rates are not needed any more
    del rates
    # busy: a resource is busy from t0 until its slowest flow ends (max over each resource's flows)
    busy = np.zeros(pr.R)
    if ix.size:
        busy = _busy_from_min_rate(out.min_rate, s)
        if busy is None:
            d = np.where(np.isfinite(dur), dur, 0.0)
            busy = _slot_max(ix.res, d, pr.R)[1:]
            np.maximum(busy, 0.0, out=busy)
            del d
    del ix, out
    if flows is None:
        tend = np.add(dur, t0, out=dur)  # (the durations are not needed any more)
    else:
        tend = start.copy()
        tend[flows] += dur
    del dur
    fin = tend if pr.lat is None else tend + pr.lat
    return _one_solve_result(pr, start, tend, fin, busy, rbytes, lb, rounds)


def _lean_ok(pr: _Prob) -> bool:
    """Whether the lean one-solve (:mod:`fabric.leanfill`) may run: unit coefficients, positive sizes and a
    table of at most :data:`fabric.leanfill.LEAN_MAX_ENTRIES` entries that the compiled kernels would not
    take (a one-solve problem: :func:`_one_solve_ok`)."""
    res = pr.res
    n = res.size
    return (pr.weight is None and pr.mult is None and res.ndim == 2 and pr.F > 0 and 0 < n <= LEAN_MAX_ENTRIES
            and not _kernels.use_index(n) and float(pr.size.min()) > 0.0)


def _lean_one_solve(pr: _Prob) -> FlowResult | None:
    """:func:`_one_solve` by :func:`fabric.leanfill.lean_fill` on the unreduced table (no column merge, no
    adjacency), the same finish times to 1e-9 relative; ``None`` when the fill gives up (more tied levels
    than it takes)."""
    got = lean_fill(pr.res, pr.cap)
    if got is None:
        return None
    rate, min_rate, counts, rounds = got
    t0 = float(pr.delay[0]) + (float(pr.rel[0]) if pr.rel is not None else 0.0)
    s = float(pr.size[0])  # every size (one-solve, all positive)
    # bytes per resource: count x size when that is the per-entry sum's bits (_index_bytes), else the sum
    exact = s.is_integer() and (counts.shape[0] == 0 or float(counts.max()) * s <= 2.0 ** 53)
    rbytes, lb = _bytes_and_bound(counts * s if exact else _resource_bytes(pr), pr.cap, slice(None))
    busy = _busy_from_min_rate(min_rate, s)
    dur = np.divide(pr.size, rate)  # inf rate -> 0
    if busy is None:
        busy = _slot_max(pr.res, np.where(np.isfinite(dur), dur, 0.0), pr.R)[1:]
        np.maximum(busy, 0.0, out=busy)
    tend = np.add(dur, t0, out=dur)
    fin = tend if pr.lat is None else tend + pr.lat
    return _one_solve_result(pr, np.full(pr.F, t0), tend, fin, busy, rbytes, lb, rounds)


def _busy_from_min_rate(min_rate: np.ndarray | None, size: float) -> np.ndarray | None:
    """Busy time per resource, ``max over its flows of size / rate``, as ``size / (its smallest rate)``.

    The same bits: every flow has the size ``size`` and a correctly rounded division is monotone in the
    divisor, so the largest quotient is the one by the smallest rate (a resource no filled flow crosses
    has an infinite smallest rate and gets 0, as the maximum over zero transfer times does). ``None``
    (use the maximum over the entries) when the fill did not keep the minima, or a rate is 0 or NaN, or a
    quotient overflows (the entry pass sets those transfer times to 0 before taking the maximum).
    """
    if min_rate is None:
        return None
    mr = min_rate[1:]
    if not (mr > 0.0).all():
        return None
    with np.errstate(over="ignore"):
        busy = np.divide(size, mr)
    if not np.isfinite(busy).all():
        return None
    return busy


def _one_solve_result(pr: _Prob, start, tend, fin, busy, rbytes, lb, rounds) -> FlowResult:
    mk = float(fin.max()) if pr.F else float(pr.delay[0])
    return FlowResult(start_s=start, transfer_end_s=tend, finish_s=fin, makespan_s=mk, resource_bytes=rbytes,
                      resource_busy_s=busy, resource_peak_utilization=None, lower_bound_s=lb,
                      mode_used="one-solve", events=1, solves=1, rounds=rounds, exact=True, epsilon=0.0)
