"""Split a flow problem into independent parts before simulating it.

Flows that share no resource never influence each other's rates, so a problem
whose flows fall into groups with pairwise disjoint resource sets can be
simulated group by group and the results merged: this is exact. The split used
here is by size class (flows of equal size form a class); it applies when every
flow starts at time 0 in one phase. Its purpose: a collective with two stages
on disjoint links (e.g. the NVLink and the network stage of node-aggregated
all-to-all, each of equal-size flows) gets the exact one-solve shortcut per
stage instead of an event loop over the union.

Examples
--------
>>> import numpy as np
>>> from fabric.engine import FlowProblem
>>> p = FlowProblem(capacity_Bps=np.array([1.0, 2.0]), res=np.array([[0], [0], [1]]),
...                 size_bytes=np.array([1.0, 1.0, 4.0]))
>>> r = simulate_split(p)
>>> r.finish_s.tolist(), r.mode_used
([2.0, 2.0, 2.0], 'one-solve')
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np

from fabric import kernels as _kernels
from fabric.arrays import extremes
from fabric.engine import FlowProblem, FlowResult, simulate

__all__ = ["independent_size_classes", "simulate_split", "group_identical_flows"]


def independent_size_classes(problem: FlowProblem, max_classes: int = 16) -> list[np.ndarray] | None:
    """Flow index arrays of the size classes, if they use pairwise disjoint resources; else ``None``.

    Each array lists its class's flows in increasing order; the classes come by increasing size. On large
    tables (:func:`fabric.kernels.use_index`) one compiled pass labels the flows and one marks every slot's
    class (:func:`fabric.index_kernels.size_classes`): the same arrays.
    """
    found = _size_classes(problem, max_classes)
    return None if found is None else found[0]


def _size_classes(problem: FlowProblem, max_classes: int):
    """(:func:`independent_size_classes`, bool[classes, h]: the hop columns in which each class has entries
    other than padding, int[R + 1]: the class of every slot, -1 for none), or ``None``."""
    if problem.phase_deps is not None or (problem.phase is not None and np.any(problem.phase)):
        return None
    if problem.release_s is not None and np.any(problem.release_s):
        return None
    sizes = np.asarray(problem.size_bytes)
    if len(sizes) == 0:
        return None
    lo, hi = extremes(sizes)
    if lo == hi:
        return None  # one size class
    res = np.asarray(problem.res)
    R = len(problem.capacity_Bps)
    if (res.ndim == 2 and res.shape[0] == len(sizes) and max_classes < 128 and sizes.dtype.kind == "f"
            and _kernels.use_index(res.size)):
        return _kernels.index().size_classes(sizes, res, R, max_classes)
    # the distinct sizes, smallest first, by repeated minima (at most max_classes + 1 passes, no sort)
    left = np.ones(len(sizes), dtype=np.bool_)
    masks = []
    while left.any():
        if len(masks) == max_classes:
            return None
        v = sizes[left].min()
        m = sizes == v
        masks.append(m)
        left &= ~m
    taken = np.zeros(R + 1, dtype=np.bool_)  # slot 0: the padding
    owner = np.full(R + 1, -1, dtype=np.int8 if max_classes < 128 else np.int64)
    classes = []
    h = res.shape[1] if res.ndim == 2 else 0
    cols = np.zeros((len(masks), h), dtype=np.bool_)
    for c, m in enumerate(masks):
        rows = np.flatnonzero(m)
        part = _rows_of(res, rows) if res.ndim == 2 else res[:0]
        used = np.zeros(R + 1, dtype=np.bool_)
        for j in range(h):
            used[np.add(part[:, j], 1, dtype=np.intp)] = True
            cols[c, j] = bool((part[:, j] >= 0).any())
        used[0] = False
        if (taken & used).any():
            return None
        taken |= used
        owner[used] = c
        classes.append(rows)
    return classes, cols, owner


def _rows_of(a: np.ndarray, rows: np.ndarray) -> np.ndarray:
    """``a[rows]`` for increasing distinct ``rows``: a view (no copy) when they are one run ``i, i + 1, ...``."""
    n = rows.shape[0]
    if n and int(rows[-1]) - int(rows[0]) + 1 == n:  # increasing and distinct: a run exactly then
        return a[int(rows[0]):int(rows[0]) + n]
    return a[rows]


def _put_rows(out: np.ndarray, rows: np.ndarray, values: np.ndarray) -> None:
    """``out[rows] = values`` for increasing distinct ``rows`` (a slice assignment when they are one run)."""
    n = rows.shape[0]
    if n and int(rows[-1]) - int(rows[0]) + 1 == n:
        out[int(rows[0]):int(rows[0]) + n] = values
    else:
        out[rows] = values


def _sub(problem: FlowProblem, rows: np.ndarray, cols: np.ndarray | None = None) -> FlowProblem:
    """The flows ``rows`` (increasing, distinct) of ``problem``; views of its arrays when they are one run.

    ``cols`` (bool[h]): keep only these hop columns of ``res`` and ``weight`` (the others must be padding
    in these rows; at least one column stays).
    """
    pick = lambda a: None if a is None else _rows_of(np.asarray(a), rows)  # noqa: E731
    res, w = pick(problem.res), pick(problem.weight)
    if cols is not None and res.ndim == 2 and not cols.all():
        keep = np.flatnonzero(cols) if cols.any() else np.arange(1)
        res = np.take(res, keep, axis=1)
        w = w if w is None or w.ndim != 2 else np.take(w, keep, axis=1)
    return replace(problem, res=res, weight=w, size_bytes=pick(problem.size_bytes),
                   release_s=pick(problem.release_s), latency_s=pick(problem.latency_s), phase=pick(problem.phase),
                   multiplicity=pick(problem.multiplicity))


def _compact(sub: FlowProblem, owner: np.ndarray, c: int) -> tuple[FlowProblem, np.ndarray] | None:
    """``sub`` (class ``c``) on its own resources only, renumbered in their order, and those resources'
    ids; ``None`` when it uses more than half of them (or none).

    For a one-solve this is exact: the other resources carry no flow of the class (their share is infinite,
    they are never a candidate and add zeros), and keeping the order keeps every first minimum, every
    candidate window (the same shares in the same order, so the same ``np.argpartition`` choice), every
    resource's list and sum.
    """
    used = np.flatnonzero(owner[1:] == c)
    R = len(sub.capacity_Bps)
    if used.shape[0] == 0 or 2 * used.shape[0] > R:
        return None
    res = np.asarray(sub.res)
    lut = np.full(R + 1, -1, dtype=res.dtype)  # slot -> new id; the padding (slot 0) stays -1
    lut[used + 1] = np.arange(used.shape[0], dtype=res.dtype)
    pick = lambda a: None if a is None else np.asarray(a)[used]  # noqa: E731
    return replace(sub, res=lut[np.add(res, 1, dtype=np.intp)], capacity_Bps=pick(sub.capacity_Bps),
                   resource_weight=pick(sub.resource_weight)), used


def _widen(r: FlowResult, used: np.ndarray, R: int) -> FlowResult:
    """The result of a :func:`_compact` problem on all ``R`` resources (0 bytes, 0 s busy on the others, as a
    resource without flows gets)."""
    out = {}
    for f in ("resource_bytes", "resource_busy_s", "resource_peak_utilization"):
        if getattr(r, f) is not None:
            a = np.zeros(R)
            a[used] = getattr(r, f)
            out[f] = a
    return replace(r, **out)


def _row_keys(problem: FlowProblem) -> np.ndarray:
    """Bytes of every flow's full description (resources, weights, size, timing, phase) as one void key."""
    F = len(problem.size_bytes)
    cols = [np.ascontiguousarray(np.asarray(problem.res, dtype=np.int32)).view(np.uint8).reshape(F, -1)]
    for a in (problem.weight, problem.size_bytes, problem.release_s, problem.latency_s, problem.phase):
        if a is not None:
            a = np.ascontiguousarray(np.asarray(a, dtype=np.float64).reshape(F, -1))
            cols.append(a.view(np.uint8).reshape(F, -1))
    rows = np.ascontiguousarray(np.concatenate(cols, axis=1))
    return rows.view(np.dtype((np.void, rows.shape[1]))).ravel()


_K = np.array([0x9E3779B97F4A7C15, 0xBF58476D1CE4E5B9, 0x94D049BB133111EB, 0xD6E8FEB86659FD93,
               0xC2B2AE3D27D4EB4F, 0x165667B19E3779F9, 0x27D4EB2F165667C5, 0xFF51AFD7ED558CCD],
              dtype=np.uint64)


def _row_hash(problem: FlowProblem) -> np.ndarray:
    """uint64 per flow, equal for identical flows (a linear mix of resources and size, then a finaliser).

    Only "identical rows give equal hashes" matters for exactness: rows whose hash
    is unique are proven unique; rows sharing a hash are compared exactly.
    """
    return _mix_hash(problem, None)


def _mix_hash(problem: FlowProblem, columns) -> np.ndarray:
    """:func:`_row_hash` of the hop ``columns`` alone, without the size (all columns and the size: None)."""
    res = np.asarray(problem.res)
    F = res.shape[0]
    h = np.zeros(F, dtype=np.uint64)
    k = 0
    tmp = np.empty(F, dtype=np.uint64)

    def mix(col):  # h += col * (an odd constant of its own)
        nonlocal k
        np.multiply(col, _K[k % len(_K)] + np.uint64(2 * (k // len(_K))), out=tmp)
        np.add(h, tmp, out=h)
        k += 1

    with np.errstate(over="ignore"):
        for j in (range(res.shape[1] if res.ndim == 2 else 0) if columns is None else columns):
            np.copyto(tmp, res[:, j], casting="unsafe")  # -1 wraps to 2**64 - 1: still one value
            mix(tmp)
        # the resources and the size only: rows that agree on them are compared field by field anyway
        if columns is None:
            mix(np.ascontiguousarray(np.asarray(problem.size_bytes, dtype=np.float64).reshape(F)).view(np.uint64))
        h ^= h >> np.uint64(31)
        h *= np.uint64(0xBF58476D1CE4E5B9)
        h ^= h >> np.uint64(29)
    return h


def _shared_hashes(h: np.ndarray) -> np.ndarray:
    """bool[F]: the flow's hash is also another flow's (rows alone in their bucket are unique: only the
    crowded buckets' hashes are sorted)."""
    F = h.shape[0]
    out = np.zeros(F, dtype=np.bool_)
    nb = 1 << max(4, int(F).bit_length() + 1)  # 2x to 4x the flows
    bucket = (h & np.uint64(nb - 1)).astype(np.intp)
    crowded = np.flatnonzero(np.bincount(bucket, minlength=nb)[bucket] > 1)
    if crowded.shape[0] == 0:
        return out
    hc = h[crowded]
    hs = np.sort(hc)
    eq = hs[1:] == hs[:-1]
    if eq.any():
        out[crowded[np.isin(hc, hs[1:][eq])]] = True
    return out


def _ends_increasing(res: np.ndarray, n_res: int) -> bool:
    """True when the (first hop, last hop) pairs of the rows strictly increase in flow order.

    Then no two rows share both ends, so no two flows are identical: a proof in
    O(F) integer work (two column reads, one multiply-add, one comparison of
    neighbours) instead of a hash of the F x h table. Collective builders list
    flows by source, then destination, and the router numbers the NIC ports by
    host, so an all-to-all passes it; any other order falls back to the hash.
    """
    F = res.shape[0] if res.ndim else 0
    if res.ndim != 2 or res.shape[1] == 0 or F < 2 or res.dtype.kind not in "iu":
        return False
    n1 = int(n_res) + 1
    kt = np.int32 if n1 * n1 < 2**31 else np.int64
    key = np.add(res[:, 0], 1, dtype=kt, casting="unsafe")  # -1 (padding) -> 0: ids in [0, n1) once checked
    key *= kt(n1)
    np.add(key, res[:, -1], out=key, casting="unsafe")
    key += kt(1)
    return bool(np.greater(key[1:], key[:-1]).all())


def group_identical_flows(problem: FlowProblem) -> tuple[FlowProblem, np.ndarray] | None:
    """Merge flows with identical resources, weights, size, start, latency and phase into classes.

    Max-min fairness treats ``m`` identical flows exactly like one flow of
    multiplicity ``m`` (each member gets the class rate), so this is exact. Returns
    the reduced problem and, for every original flow, the index of its class; or
    ``None`` when no two flows are identical (or multiplicities are already set).

    Cost: flows whose (first hop, last hop) pairs strictly increase in flow order
    (an all-to-all as the collectives list it) are dismissed after one O(F) pass;
    otherwise one hash per flow and one sort of the crowded hashes, and only
    flows whose hash is shared are compared field by field.

    Examples
    --------
    >>> import numpy as np
    >>> p = FlowProblem(capacity_Bps=np.array([1.0]), res=np.array([[0], [0], [0]]),
    ...                 size_bytes=np.array([1.0, 2.0, 1.0]))
    >>> reduced, cls = group_identical_flows(p)
    >>> cls.tolist(), reduced.multiplicity.tolist()
    ([0, 1, 0], [2.0, 1.0])
    """
    F = len(problem.size_bytes)
    if problem.multiplicity is not None or F < 2:
        return None
    res = np.asarray(problem.res)
    if _ends_increasing(res, len(problem.capacity_Bps)):
        return None  # flows listed in order of distinct (first, last) hops (e.g. an all-to-all by source, destination)
    if res.ndim == 2 and res.shape[1] > 2 and not _shared_hashes(_mix_hash(problem, (0, res.shape[1] - 1))).any():
        return None  # rows already unique on their first and last hop (e.g. the host links of an all-to-all)
    h = _row_hash(problem)
    # rows alone in their bucket of the hash are unique; sort only the others' hashes
    shared = _shared_hashes(h)
    if not shared.any():
        return None
    cand = np.flatnonzero(shared)
    keys = _row_keys(_sub(problem, cand))
    uniq, first, inv = np.unique(keys, return_index=True, return_inverse=True)
    if len(uniq) == len(keys):
        return None
    rep_of = np.arange(F)
    rep_of[cand] = cand[first[inv.ravel()]]  # the first member of each class (np.unique's index is the first)
    reps = np.flatnonzero(rep_of == np.arange(F))  # classes in first-appearance order (deterministic)
    lookup = np.full(F, -1, np.int64)
    lookup[reps] = np.arange(len(reps))
    cls = lookup[rep_of]
    mult = np.bincount(cls).astype(np.float64)
    return replace(_sub(problem, reps), multiplicity=mult), cls


def simulate_split(problem: FlowProblem, **kwargs) -> FlowResult:
    """:func:`fabric.engine.simulate`, after the exact reductions of this module.

    Identical flows are merged into classes (:func:`group_identical_flows`) when
    there are any, and size classes on disjoint resources are simulated apart.
    """
    grouped = group_identical_flows(problem) if len(problem.size_bytes) <= 4_000_000 else None
    if grouped is not None:
        reduced, cls = grouped
        r = simulate_split(reduced, **kwargs)
        return replace(r, start_s=r.start_s[cls], transfer_end_s=r.transfer_end_s[cls], finish_s=r.finish_s[cls])
    found = _size_classes(problem, 16)
    if found is None or kwargs.get("time_series"):
        return simulate(problem, **kwargs)
    classes, cols, owner = found
    # each class has one size, starts at once, in one phase: under mode "auto" it is solved once
    # (fabric.engine), where a hop column that is padding in every row of the class adds nothing (its
    # entries go to slot 0, never a bottleneck; every resource's entries keep their order): such columns
    # are dropped (the NVLink stage of node-aggregated all-to-all: 2 of 8 columns), and a class that uses at
    # most half the resources is solved on its own resources only (_compact)
    drop = kwargs.get("mode", "auto") == "auto"
    F = len(problem.size_bytes)
    R = len(problem.capacity_Bps)
    rbytes, rbusy = np.zeros(R), np.zeros(R)
    parts = []
    for c, rows in enumerate(classes):
        sub = _sub(problem, rows, cols[c] if drop else None)
        packed = _compact(sub, owner, c) if drop else None
        if packed is None:
            r = simulate(sub, **kwargs)
        else:
            r = _widen(simulate(packed[0], **kwargs), packed[1], R)
        rbytes += r.resource_bytes
        rbusy += r.resource_busy_s
        parts.append(r)
    # the classes cover every flow; allocated after the solves, whose freed temporaries they reuse
    start, tend, finish = np.empty(F), np.empty(F), np.empty(F)
    for rows, r in zip(classes, parts):
        for out, v in ((start, r.start_s), (tend, r.transfer_end_s), (finish, r.finish_s)):
            _put_rows(out, rows, v)
    modes = {p.mode_used for p in parts}
    return FlowResult(start_s=start, transfer_end_s=tend, finish_s=finish,
                      makespan_s=max(p.makespan_s for p in parts), resource_bytes=rbytes, resource_busy_s=rbusy,
                      resource_peak_utilization=None, lower_bound_s=max(p.lower_bound_s for p in parts),
                      mode_used=modes.pop() if len(modes) == 1 else "+".join(sorted(modes)),
                      events=sum(p.events for p in parts), solves=sum(p.solves for p in parts),
                      rounds=sum(p.rounds for p in parts), exact=all(p.exact for p in parts),
                      epsilon=max(p.epsilon for p in parts))
