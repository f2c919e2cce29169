"""Exact reductions inside the engine: per-resource sums and maxima, folded weights, merged hop columns.

* :func:`_resource_bytes` / :func:`_slot_sum` / :func:`_slot_max`: per-resource
  reductions one hop column at a time (no F x h temporaries);
* :func:`_reduce_columns`: adjacent hop columns that carry the same flows with the
  same coefficients are merged (only the smaller capacity can bind), a column whose
  constraints another's imply (one weight per resource, :func:`_dominated_column`) is dropped, and
  :func:`_expand` gives the merged resources their statistics back;
* :func:`_unfold`: bytes in the caller's units after ``resource_weight`` was folded
  into the capacities.

Examples
--------
>>> import numpy as np
>>> _slot_sum(np.array([[0, -1], [0, 1]]), np.array([1.0, 2.0]), None, 2).tolist()
[1.0, 3.0, 2.0]
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np

from fabric import kernels as _kernels
from fabric.adjacency import overlapping_pairs
from fabric.arrays import sorted_unique
from fabric.problem import FlowResult, _Prob

__all__: list[str] = []

_INF = np.inf


def _slot_sum(res: np.ndarray, per_flow: np.ndarray, weight: np.ndarray | None, n_res: int) -> np.ndarray:
    """Per-slot sum of ``per_flow[f] * weight[f, j]`` over the entries of ``res`` (slot 0: the padding).

    One bincount per hop column: no F x h temporaries.
    """
    r1 = n_res + 1
    if res.ndim == 2 and _kernels.use_index(res.size):
        return _kernels.index().slot_sum(res, per_flow, weight, n_res)
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
    if res.ndim == 2 and _kernels.use_index(res.size):
        return _kernels.index().slot_max(res, per_flow, n_res)
    out = np.full(n_res + 1, -_INF)
    keys = np.empty(res.shape[0], np.intp)
    for j in range(res.shape[1] if res.ndim == 2 else 0):
        np.maximum.at(out, np.add(res[:, j], 1, out=keys, casting="unsafe"), per_flow)
    return out


def _resource_bytes(pr: _Prob) -> np.ndarray:
    """sum_f m_f * w_fl * size_f per resource (padding dropped)."""
    w = pr.size if pr.mult is None else pr.size * pr.mult
    return _slot_sum(pr.res, w, pr.weight, pr.R)[1:]


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

    With per-entry weights (epoch mode's unfolded resource weights) two such columns may carry
    different factors, one per resource: ``w_u`` on ``u`` and ``w_v`` on ``v``.  The constraints are
    then ``sum_f r_f <= c_u / w_u`` and ``<= c_v / w_v`` over the same flows, so when every pair has
    ``c_v / w_v > (1 + 1e-6) c_u / w_u`` (or every pair the reverse) the dominated column never binds
    and is dropped, the other keeping its own capacity and weights (:func:`_dominated_column`).
    ``wscale[v] = w_v / w_u`` (1 elsewhere) converts the carrier's load into the dropped resource's,
    ``binding`` is False on the dropped resources (never a bottleneck), and ``weighted`` says such a
    merge happened (the caller then takes the per-resource bytes from the unreduced problem).
    """

    __slots__ = ("res", "weight", "cap", "rep", "wscale", "binding", "weighted", "counts", "disjoint", "pairs")

    def __init__(self, res, weight, cap, rep, wscale=None, binding=None, counts=None, disjoint=False, pairs=None):
        self.res, self.weight, self.cap, self.rep = res, weight, cap, rep
        self.weighted = wscale is not None
        self.wscale = np.ones(rep.shape[0]) if wscale is None else wscale
        self.binding = np.ones(rep.shape[0], dtype=np.bool_) if binding is None else binding
        #: True when no resource appears in two columns of ``res`` (then no row names one twice)
        self.disjoint = disjoint
        #: int64[h', R + 1] or None: entries per slot (slot 0: the padding) of every column of ``res``,
        #: counted on the numpy path (:func:`column_counts`); the index build reuses them
        #: (:func:`fabric.adjacency._csc`)
        self.counts = counts
        #: int64[m, 2] or None: the column pairs of ``res`` whose resources intersect (the only ones in which a
        #: row can name a resource twice: :func:`fabric.adjacency.overlapping_pairs`); None: not computed
        self.pairs = pairs


def _reduce_columns(pr: _Prob) -> _Reduced:
    res, w, cap = pr.res, pr.weight, pr.cap
    F, h = res.shape if res.ndim == 2 else (0, 0)
    R = pr.R
    rep = np.arange(R, dtype=np.int64)
    if F == 0 or h < 2 or R == 0:
        return _Reduced(res, w, cap, rep)
    compiled = _kernels.use_index(res.size)
    cols = [res[:, j] for j in range(h)]
    present, pad = [], []
    if compiled:  # one pass over the table for every column's resources (and padding, slot 0)
        pm = _kernels.index().presence(res, R)
        pad = [bool(pm[j, 0]) for j in range(h)]
        present = [pm[j, 1:] for j in range(h)]
    else:
        # entries per slot of each column (slot 0: the padding), from which the resources present in it; the
        # index build reuses the counts of the kept columns (one bincount per column instead of a presence
        # scatter here and a bincount there)
        bufs = (np.empty(F, np.intp), np.empty(F, np.intp))
        changes: list = [None] * h  # sorted columns: where the id changes (bool[F - 1])
        counts = column_counts(res, R, changes)
        pad = [bool(counts[j, 0]) for j in range(h)]
        present = [counts[j, 1:] > 0 for j in range(h)]
    keep = list(range(h))
    pairs = [(j, j + 1) for j in range(h - 1)]
    cap_eff = None
    merged: set[int] = set()  # columns in some merge (a dominated-column merge takes none of them)
    wcols: set[int] = set()  # columns of a dominated-column merge (no later merge takes them)
    wscale = binding = None
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
        if a in wcols or b in wcols:
            continue
        if w is not None and a not in merged and b not in merged:
            dom = _dominated_column(cols[a], cols[b], w[:, a], w[:, b], cap, R)
            if dom is not None:
                drop, u_of, ratio = dom  # drop's resources u_of.nonzero() are carried by u_of[...]
                if wscale is None:
                    wscale, binding = np.ones(R), np.ones(R, dtype=np.bool_)
                d = np.flatnonzero(u_of >= 0)
                rep[d] = u_of[d]
                wscale[d] = ratio[d]
                binding[d] = False
                keep.remove(a if drop == 0 else b)
                merged.update((a, b))
                wcols.update((a, b))
                continue
        if compiled:  # the same conditions in one pass: padding, weights, a function, one-to-one
            v_of = _kernels.index().column_map(res, a, b, w, R)
            if v_of is None:
                continue
        elif changes[a] is not None and changes[b] is not None and not pad[a]:
            # two sorted columns without padding: u -> v is one-to-one exactly when both change at the same
            # flows (equal ids of a sorted column are one run, and a sorted v that changes where u changes
            # takes a larger id for every larger u)
            if not np.array_equal(changes[a], changes[b]):
                continue
            if w is not None and not np.array_equal(w[:, a], w[:, b]):
                continue
            first = np.flatnonzero(changes[a])
            first += 1
            first = np.concatenate([np.zeros(1, dtype=first.dtype), first])
            v_of = np.full(R, -1, dtype=np.intp)
            v_of[cols[a][first]] = cols[b][first]
        else:
            if not _function_on_prefix(cols[a], cols[b], R):
                continue  # a counterexample among the first flows: not a function u -> v (no full-column pass)
            u = _wide(cols[a], bufs[0])
            if pad[a]:
                v = _wide(cols[b], bufs[1])
                if not np.array_equal(u < 0, v < 0):
                    continue
                m = u >= 0
                u, v = u[m], v[m]
            else:
                m = slice(None)
                v = cols[b]  # the map in the table's own dtype: v is not widened
            if w is not None and not np.array_equal(w[m, a], w[m, b]):
                continue
            v_of = np.full(R, -1, dtype=v.dtype)
            v_of[u] = v
            if not np.array_equal(np.take(v_of, u), v):
                continue  # not a function u -> v
            vals = v_of[v_of >= 0]
            if sorted_unique(vals).shape[0] != vals.shape[0]:
                continue  # not one-to-one
        if cap_eff is None:
            cap_eff = cap.copy()
        su = np.flatnonzero(v_of >= 0)
        cap_eff[su] = np.minimum(cap_eff[su], cap[v_of[su]])
        rep[v_of[su]] = rep[su]
        keep.remove(b)
        merged.update((a, b))
        present[a] = pa | pb
        # a chain a, b, c of duplicates: the pair (b, c) becomes (a, c)
        pairs[i:] = [(a, q) if p == b else (p, q) for p, q in pairs[i:]]
    kept_counts = None if compiled else counts[keep]
    # the kept columns' own resources (a kept column's ids are its original ones)
    kept_present = pm[keep, 1:] if compiled else kept_counts[:, 1:] > 0
    disjoint = bool(np.count_nonzero(kept_present, axis=0).max(initial=0) <= 1)
    pairs = None if disjoint else overlapping_pairs(kept_present)
    if len(keep) == h:
        return _Reduced(res, w, cap, rep, wscale, binding, kept_counts, disjoint, pairs)
    res2 = _kernels.index().take_columns(res, keep) if compiled else np.take(res, keep, axis=1)
    w2 = None if w is None else np.take(w, keep, axis=1)
    return _Reduced(res2, w2, cap if cap_eff is None else cap_eff, rep, wscale, binding, kept_counts, disjoint,
                    pairs)


#: a dominated column's capacity per unit of weight exceeds its partner's by more than this, relatively,
#: on every resource pair (far above rounding: the dropped resource's share is never near the kept one's)
DOMINANCE_RTOL = 1e-6


def _dominated_column(ca: np.ndarray, cb: np.ndarray, wa: np.ndarray, wb: np.ndarray, cap: np.ndarray,
                      R: int):
    """``(drop, u_of, ratio)`` when one of two hop columns never binds, else None (:class:`_Reduced`).

    Conditions: the same padding, ``ca -> cb`` one-to-one, one weight per resource in each column
    (``wa``/``wb``: the columns' per-entry weights), positive, and ``c / w`` of every resource of the
    dropped column above its partner's by :data:`DOMINANCE_RTOL`.  ``drop`` is the column index
    (0: ``ca``, 1: ``cb``) mapped to the caller's; ``u_of[x]`` (intp[R], -1 elsewhere) the kept resource
    carrying the flows of dropped resource ``x``; ``ratio[x] = w_x / w_u``.

    Examples
    --------
    >>> import numpy as np
    >>> ca, cb = np.array([0, 1, 0]), np.array([2, 3, 2])
    >>> w1, w2 = np.ones(3), np.full(3, 1.25)
    >>> drop, u_of, ratio = _dominated_column(ca, cb, w1, w2, np.full(4, 10.0), 4)
    >>> drop, u_of.tolist(), ratio.tolist()
    (0, [2, 3, -1, -1], [0.8, 0.8, 1.0, 1.0])
    >>> _dominated_column(ca, cb, w1, w1, np.full(4, 10.0), 4) is None  # equal weights: the plain merge
    True
    """
    if not _function_on_prefix(ca, cb, R):
        return None
    u, v = ca.astype(np.intp), cb.astype(np.intp)
    if not np.array_equal(u < 0, v < 0):
        return None
    m = u >= 0
    if not m.all():
        u, v, wa, wb = u[m], v[m], wa[m], wb[m]
    if u.shape[0] == 0:
        return None
    v_of = np.full(R, -1, dtype=np.intp)
    v_of[u] = v
    if not np.array_equal(np.take(v_of, u), v):
        return None  # not a function u -> v
    su = np.flatnonzero(v_of >= 0)
    sv = v_of[su]
    if sorted_unique(sv).shape[0] != sv.shape[0]:
        return None  # not one-to-one
    fa = np.full(R, np.nan)
    fb = np.full(R, np.nan)
    fa[u] = wa
    fb[v] = wb
    if not (np.array_equal(np.take(fa, u), wa) and np.array_equal(np.take(fb, v), wb)):
        return None  # not one weight per resource
    xa, xb = fa[su], fb[sv]
    if not ((xa > 0) & (xa < _INF) & (xb > 0) & (xb < _INF)).all() or np.array_equal(xa, xb):
        return None
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        qa, qb = cap[su] / xa, cap[sv] / xb
    u_of = np.full(R, -1, dtype=np.intp)
    ratio = np.ones(R)
    if (qb > qa * (1.0 + DOMINANCE_RTOL)).all():  # b never binds
        u_of[sv] = su
        ratio[sv] = xb / xa
        return 1, u_of, ratio
    if (qa > qb * (1.0 + DOMINANCE_RTOL)).all():  # a never binds
        u_of[su] = sv
        ratio[su] = xa / xb
        return 0, u_of, ratio
    return None


def column_counts(res: np.ndarray, n_res: int, changes: list | None = None) -> np.ndarray:
    """int64[h, n_res + 1]: entries of each hop column of ``res`` per slot (slot 0: the padding -1).

    A column whose ids never decrease in flow order (e.g. the source links of an all-to-all listed by
    source) is counted from where its id changes, and that bool[F - 1] goes to ``changes[j]`` when a list
    is given (``None`` for the other columns); the others by one ``np.bincount`` over 16-bit keys when the
    slots fit (-1 wraps to 65535, + 1 to 0; one buffer for every column), else over intp keys.

    >>> column_counts(np.array([[0, -1], [0, 1]], np.int16), 2).tolist()
    [[0, 2, 0], [1, 0, 1]]
    """
    F, h = res.shape
    r1 = int(n_res) + 1
    out = np.zeros((h, r1), dtype=np.int64)
    kt = np.uint16 if r1 <= 1 << 16 else np.intp
    buf = None
    for j in range(h):
        c = res[:, j]
        k = min(F, 1 << 14)  # a prefix first: most unsorted columns show a descent early
        if F > 1 and not np.less(c[1:k], c[:k - 1]).any() and not np.less(c[1:], c[:-1]).any():
            ch = np.not_equal(c[1:], c[:-1])
            first = np.flatnonzero(ch)
            first += 1
            ends = np.append(first, F)
            first = np.concatenate([np.zeros(1, dtype=first.dtype), first])
            out[j, np.add(c[first], 1, dtype=np.intp)] = ends - first  # one run per id (sorted)
            if changes is not None:
                changes[j] = ch
            continue
        if buf is None:
            buf = np.empty(F, dtype=kt)
        np.add(c, 1, out=buf, dtype=kt, casting="unsafe")
        out[j] = np.bincount(buf, minlength=r1)
    return out


def _function_on_prefix(ca: np.ndarray, cb: np.ndarray, R: int, k: int = 1 << 14) -> bool:
    """False when the first ``k`` flows already show that ``ca -> cb`` is not a function (or that their
    padding differs); True means "maybe" (the caller checks every flow)."""
    u, v = ca[:k].astype(np.intp), cb[:k].astype(np.intp)
    if not np.array_equal(u < 0, v < 0):
        return False
    m = u >= 0
    u, v = u[m], v[m]
    v_of = np.full(R, -1, dtype=np.intp)
    v_of[u] = v
    return bool(np.array_equal(v_of[u], v))


def _wide(col: np.ndarray, buf: np.ndarray) -> np.ndarray:
    """``col`` as intp ids in ``buf`` (a view when it already is intp)."""
    if col.dtype == np.intp:
        return col
    np.copyto(buf, col, casting="unsafe")
    return buf


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
    # utilisation was measured against the merged (smaller) capacity, and a dropped column's resource
    # carries its own weight (wscale) of the carrier's load
    scale = red.cap[rep] / pr.cap * red.wscale
    scale = np.where(np.isfinite(scale), scale, 0.0)
    kw = dict(resource_busy_s=r.resource_busy_s[rep])
    if r.resource_peak_utilization is not None:
        kw["resource_peak_utilization"] = r.resource_peak_utilization[rep] * scale
    if r.series_utilization is not None:
        kw["series_utilization"] = (r.series_utilization[:, rep] * scale.astype(np.float32)).astype(np.float32)
        kw["series_saturated"] = r.series_saturated[:, rep] & ((pr.cap <= red.cap[rep]) & red.binding)[None, :]
    return replace(r, **kw)
