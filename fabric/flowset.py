"""Flow sets: routed traffic as a struct of arrays, ready for the flow engine.

A :class:`FlowSet` holds flows over a :class:`~fabric.routing.Router`'s
resources (links and trunks): a padded flow x resource incidence with weights
(the fraction of the flow's rate a resource carries, divided by the transfer's
wire efficiency on it), sizes, per-flow latency, phases with dependencies, and a
group label per flow (which collective or process group it belongs to). Sets
from many collectives concatenate into one problem, so that they contend for
shared links; :func:`to_problem` turns a set into the engine's
:class:`~fabric.engine.FlowProblem` over the resources it actually uses.

Examples
--------
>>> from topologies.clos import fat_tree
>>> from fabric.compiled import compile_fabric
>>> from fabric.routing import Router
>>> r = Router(compile_fabric(fat_tree(hosts=16, radix=8)))
>>> fs = FlowSet.from_routes(r.route([0, 1], [15, 14]), 1e6, label="demo")
>>> problem, used = to_problem(fs, r)
>>> problem.res.shape[0], len(problem.capacity_Bps) == len(used)
(2, True)
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np

from fabric import route_kernels
from fabric.engine import FlowProblem
from fabric.routing import Router, Routes
from topologies.errors import FlowError

__all__ = ["FlowSet", "concat", "to_problem"]


def _vec(x, n: int, name: str, dtype=np.float64) -> np.ndarray:
    a = np.asarray(x, dtype=dtype)
    if a.ndim == 0:
        return np.broadcast_to(a, (n,))  # a constant: a read-only view, no F-sized array
    if a.shape != (n,):
        raise FlowError(f"{name}: expected {n} values, got shape {a.shape}")
    return a


@dataclass(frozen=True)
class FlowSet:
    """Flows over router resources (see the module docstring)."""

    res: np.ndarray                 # int32[F, h], -1 padding
    weight: np.ndarray | None       # float64[F, h]
    size_bytes: np.ndarray          # float64[F]
    src: np.ndarray                 # int64[F] rank, -1 for in-switch (port) flows
    dst: np.ndarray                 # int64[F]
    latency_s: np.ndarray           # float64[F]: path + software latency
    release_s: np.ndarray           # float64[F]: from the phase start
    phase: np.ndarray               # int32[F]
    group: np.ndarray               # int32[F] -> labels
    labels: tuple                   # group names
    n_phases: int = 1
    phase_deps: tuple | None = None         # CSR (indptr[P+1], indices)
    phase_delay_s: np.ndarray | None = None  # float64[P]
    #: float64[router resources] or None: a factor on every entry of a resource (1 / wire efficiency of its
    #: transport); the flow's coefficient on ``res[f, j]`` is ``weight[f, j] * resource_scale[res[f, j]]``
    resource_scale: np.ndarray | None = None

    @property
    def n_flows(self) -> int:
        return len(self.size_bytes)

    def effective_weight(self) -> np.ndarray | None:
        """float64[F, h]: every entry's coefficient, ``resource_scale`` multiplied in (None = all 1)."""
        if self.resource_scale is None:
            return self.weight
        s = self.resource_scale[np.maximum(self.res, 0)]
        w = s if self.weight is None else self.weight * s
        return np.where(self.res >= 0, w, 0.0)

    @classmethod
    def from_routes(cls, routes: Routes, size_bytes, *, label: str = "flows", latency_s=0.0, release_s=0.0,
                    phase=0, n_phases: int | None = None, phase_deps=None, phase_delay_s=None,
                    weight_scale: np.ndarray | None = None, resource_scale: np.ndarray | None = None) -> "FlowSet":
        """Flows along ``routes``; ``latency_s`` is added to the routes' path latency.

        ``weight_scale`` (float64[F, h]) multiplies the routes' weights entry by
        entry; ``resource_scale`` (float64[router resources]) multiplies every
        entry of a resource, e.g. by 1/efficiency of its transport, without an
        F x h array (the engine folds it into the capacities).
        """
        F = routes.n_flows
        w = routes.weight
        if weight_scale is not None:
            w = (np.ones(routes.res.shape) if w is None else w) * weight_scale
            w = np.where(routes.res >= 0, w, 0.0)
        phase = _vec(phase, F, "phase", np.int32)
        P = int(phase.max(initial=0)) + 1 if n_phases is None else n_phases
        return cls(res=routes.res, weight=w, size_bytes=_vec(size_bytes, F, "size_bytes"),
                   src=routes.src.astype(np.int64, copy=False), dst=routes.dst.astype(np.int64, copy=False),
                   latency_s=_plus(routes.latency_s, latency_s, F),
                   release_s=_vec(release_s, F, "release_s"), phase=phase,
                   group=_vec(0, F, "group", np.int32), labels=(label,), n_phases=P, phase_deps=phase_deps,
                   phase_delay_s=phase_delay_s,
                   resource_scale=None if resource_scale is None else np.asarray(resource_scale, np.float64))

    @classmethod
    def explicit(cls, res: np.ndarray, weight: np.ndarray | None, size_bytes, *, label: str = "in-switch",
                 src=-1, dst=-1, latency_s=0.0, release_s=0.0, phase=0, n_phases: int | None = None) -> "FlowSet":
        """Flows on explicitly given resources (in-switch reduction ports, trees)."""
        res = np.atleast_2d(np.asarray(res, dtype=np.int32))
        F = res.shape[0]
        phase = _vec(phase, F, "phase", np.int32)
        return cls(res=res, weight=None if weight is None else np.atleast_2d(np.asarray(weight, np.float64)),
                   size_bytes=_vec(size_bytes, F, "size_bytes"), src=_vec(src, F, "src", np.int64),
                   dst=_vec(dst, F, "dst", np.int64), latency_s=_vec(latency_s, F, "latency_s"),
                   release_s=_vec(release_s, F, "release_s"), phase=phase, group=np.zeros(F, np.int32),
                   labels=(label,), n_phases=int(phase.max(initial=0)) + 1 if n_phases is None else n_phases)

    def relabel(self, label: str) -> "FlowSet":
        """All flows under one group label."""
        return replace(self, group=_vec(0, self.n_flows, "group", np.int32), labels=(label,))


def _plus(path_s: np.ndarray, extra_s, n: int) -> np.ndarray:
    """``path_s + extra_s``; a constant 0 adds nothing (x + 0.0 == x for the non-negative path latencies)."""
    if np.ndim(extra_s) == 0 and float(extra_s) == 0.0:
        return path_s
    return path_s + _vec(extra_s, n, "latency_s")


def _pad(a: np.ndarray, width: int, fill) -> np.ndarray:
    if a.shape[1] == width:
        return a
    out = np.full((a.shape[0], width), fill, dtype=a.dtype)
    out[:, :a.shape[1]] = a
    return out


def _merged_scale(sets: list[FlowSet]) -> np.ndarray | None:
    """One ``resource_scale`` for all ``sets`` when they agree on every resource two of them use (a set
    without one has factor 1), e.g. the NVLink and the network stage of an aggregated all-to-all;
    None when two sets give a resource different factors."""
    n = next(s.resource_scale.shape[0] for s in sets if s.resource_scale is not None)
    merged = np.ones(n)
    claimed = np.zeros(n, bool)
    for s in sets:
        used = _used_mark(s.res, n)[:-1]
        sc = s.resource_scale
        if sc is None:
            if (claimed & used & (merged != 1.0)).any():
                return None
        else:
            if sc.shape[0] != n or (claimed & used & (merged != sc)).any():
                return None
            merged[used] = sc[used]
        claimed |= used
    return merged


def concat(sets: list[FlowSet], *, merge_phases: bool = False) -> FlowSet:
    """Concatenate flow sets: groups stay distinct; phases are offset (or shared with ``merge_phases``).

    With ``merge_phases=False`` each set keeps its own phase DAG; with
    ``merge_phases=True`` phase ids are shared (sets built against one phase plan).
    """
    sets = [s for s in sets if s.n_flows or s.n_phases]
    if not sets:
        raise FlowError("flows: nothing to simulate (empty flow set)")
    if len(sets) == 1:
        return sets[0]  # nothing to join: no copies
    width = max(s.res.shape[1] for s in sets)
    scales = [s.resource_scale for s in sets]
    rs = scales[0]
    if rs is not None and all(x is rs or (x is not None and np.array_equal(x, rs)) for x in scales[1:]):
        pass  # one factor per resource for every set: keep it apart
    elif any(x is not None for x in scales):
        rs = _merged_scale(sets)
        if rs is None:  # two sets give one resource different factors: per-entry coefficients
            sets = [replace(s, weight=s.effective_weight(), resource_scale=None) for s in sets]
    any_w = any(s.weight is not None for s in sets)
    res = np.concatenate([_pad(s.res, width, -1) for s in sets])
    weight = None
    if any_w:
        weight = np.concatenate([_pad(s.weight if s.weight is not None else np.where(s.res >= 0, 1.0, 0.0),
                                      width, 0.0) for s in sets])
    labels, group, phase = [], [], []
    ptr, idx, delay = [0], [], []
    p_off = 0
    for s in sets:
        group.append(s.group + len(labels))
        labels.extend(s.labels)
        if merge_phases:
            phase.append(s.phase)
            continue
        phase.append(s.phase + p_off)
        sp, si = s.phase_deps if s.phase_deps is not None else (np.zeros(s.n_phases + 1, np.int64), np.zeros(0, np.int64))
        for p in range(s.n_phases):
            idx.extend((si[sp[p]:sp[p + 1]] + p_off).tolist())
            ptr.append(len(idx))
        delay.append(s.phase_delay_s if s.phase_delay_s is not None else np.zeros(s.n_phases))
        p_off += s.n_phases
    if merge_phases:
        n_phases = max(s.n_phases for s in sets)
        deps = next((s.phase_deps for s in sets if s.phase_deps is not None), None)
        delays = next((s.phase_delay_s for s in sets if s.phase_delay_s is not None), None)
    else:
        n_phases = p_off
        deps = (np.asarray(ptr, np.int64), np.asarray(idx, np.int64)) if idx else None
        delays = np.concatenate(delay) if any(d.any() for d in delay) else None
    cat = lambda name: np.concatenate([getattr(s, name) for s in sets])  # noqa: E731
    return FlowSet(res=res, weight=weight, size_bytes=cat("size_bytes"), src=cat("src"), dst=cat("dst"),
                   latency_s=cat("latency_s"), release_s=cat("release_s"), phase=np.concatenate(phase),
                   group=np.concatenate(group).astype(np.int32), labels=tuple(labels), n_phases=n_phases,
                   phase_deps=deps, phase_delay_s=delays, resource_scale=rs)


def _conflicting_trunks(router: Router, used_mark: np.ndarray) -> np.ndarray:
    """Used trunks with a member link that is also used on its own (``used_mark``: bool[resources])."""
    L = router.n_links
    trunks = np.flatnonzero(used_mark[L:router.n_resources]) + L
    if len(trunks) == 0:
        return trunks
    t = trunks - L
    lo, hi = router.trunk_ptr[t], router.trunk_ptr[t + 1]
    owner = np.repeat(np.arange(len(t)), hi - lo)
    pos = np.arange(int((hi - lo).sum())) - np.repeat(np.cumsum(hi - lo) - (hi - lo), hi - lo)
    hit = used_mark[router.trunk_links[lo[owner] + pos]]
    return trunks[np.bincount(owner[hit], minlength=len(t)) > 0]


def _expand_conflicts(res: np.ndarray, weight: np.ndarray | None, router: Router,
                      bad: np.ndarray) -> tuple[np.ndarray, np.ndarray | None]:
    """Replace the trunk entries ``bad`` by their member links for every flow.

    Trunks are exact only when every user splits equally over the members; a
    flow that uses one member alone (ECMP next to spray) breaks that, so such
    trunks are listed link by link for every flow.
    """
    if weight is None:
        weight = np.where(res >= 0, 1.0, 0.0)
    hit = np.isin(res, bad)
    rows = np.flatnonzero(hit.any(axis=1))
    extra = max(len(router.members(int(t))) for t in bad) * int(hit.sum(axis=1).max())
    new_res = _pad(res, res.shape[1] + extra, -1)
    new_w = _pad(weight, res.shape[1] + extra, 0.0)
    for f in rows:  # only the flows touching a conflicting trunk
        r, w = res[f], weight[f]
        keep = (r >= 0) & ~np.isin(r, bad)
        parts_r, parts_w = [r[keep]], [w[keep]]
        for j in np.flatnonzero(np.isin(r, bad)):
            m = router.members(int(r[j]))
            parts_r.append(m)
            parts_w.append(np.full(len(m), w[j] / len(m)))
        rr, ww = np.concatenate(parts_r), np.concatenate(parts_w)
        new_res[f] = -1
        new_w[f] = 0.0
        new_res[f, :len(rr)] = rr
        new_w[f, :len(rr)] = ww
    width = int((new_res >= 0).sum(axis=1).max(initial=1))
    return new_res[:, :max(width, 1)], new_w[:, :max(width, 1)]


def _used_mark(res: np.ndarray, n_resources: int) -> np.ndarray:
    mark = np.zeros(n_resources + 1, bool)
    if res.ndim != 2 or res.dtype == np.intp:
        mark[res.ravel()] = True             # -1 lands on the extra last slot
    else:  # one hop column at a time, widened to intp (scatters with intp ids are ~3x faster)
        buf = np.empty(res.shape[0], np.intp)
        for j in range(res.shape[1]):
            np.copyto(buf, res[:, j], casting="unsafe")
            mark[buf] = True
    mark[-1] = False
    return mark


def to_problem(fs: FlowSet, router: Router, *, multiplicity: np.ndarray | None = None) -> tuple[FlowProblem, np.ndarray]:
    """Engine problem over the resources ``fs`` uses; also returns their router resource ids.

    ``fs.resource_scale`` becomes the problem's ``resource_weight`` (folded into
    the capacities by the engine), unless conflicting trunks must be expanded.

    Raises
    ------
    FlowError
        If a flow crosses a failed (zero-capacity) resource.
    """
    res = fs.res
    weight = fs.weight
    rs = fs.resource_scale
    R = router.n_resources
    compiled = res.ndim == 2 and route_kernels.use(res.size)
    mark = route_kernels.used_mark(res, R) if compiled else _used_mark(res, R)
    bad = _conflicting_trunks(router, mark)
    if len(bad):
        if rs is not None:
            weight, rs = fs.effective_weight(), None
        res, weight = _expand_conflicts(res, weight, router, bad)
        mark = _used_mark(res, R)
    # compact resource ids without sorting: number the used ones in id order
    used = np.flatnonzero(mark[:-1])
    ids = np.int16 if len(used) < np.iinfo(np.int16).max else np.int32  # half the memory on most problems
    lookup = np.full(R + 1, -1, ids)
    lookup[used] = np.arange(len(used), dtype=ids)
    if compiled:
        local = route_kernels.local_ids(res, lookup)  # one pass, the same ids
    elif res.ndim == 2 and res.dtype != np.intp:  # one hop column at a time through an intp buffer (faster gathers)
        local = np.empty(res.shape, ids)
        buf = np.empty(res.shape[0], np.intp)
        for j in range(res.shape[1]):
            np.copyto(buf, res[:, j], casting="unsafe")
            local[:, j] = lookup[buf]
    else:
        local = lookup[res]
    cap = router.resource_capacity_Bps()[used]
    if len(cap) and cap.min() <= 0:
        bad = used[np.argmin(cap)]
        raise FlowError(f"flows: resource {int(bad)} ({router.cf.link_name(int(router.members(int(bad))[0]))}) "
                        f"has no capacity (failed) but flows were routed over it")
    w = None if weight is None or np.all((weight == 1.0) | (local < 0)) else np.where(local >= 0, weight, 0.0)
    # all-zero release times and one phase are the engine's defaults: no per-flow arrays to check
    release = fs.release_s if np.any(fs.release_s) else None
    phase = fs.phase if fs.n_phases > 1 or np.any(fs.phase) else None
    problem = FlowProblem(capacity_Bps=cap, res=local, weight=w, size_bytes=fs.size_bytes, release_s=release,
                          latency_s=fs.latency_s, phase=phase, phase_deps=fs.phase_deps,
                          phase_delay_s=fs.phase_delay_s, multiplicity=multiplicity,
                          resource_weight=None if rs is None else rs[used])
    return problem, used
