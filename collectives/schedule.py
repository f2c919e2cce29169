"""Schedule tasks with dependencies on one fabric: collectives, compute gaps and sends in one simulation.

A task is a frozen object with identity (two equal-looking tasks are two tasks):

* :class:`CollectiveTask`: a :class:`~collectives.ops.Collective`, planned into flows;
* :class:`ComputeTask`: a compute gap of ``duration_s`` on some ranks (no flows);
* :class:`SendTask`: a one-way point-to-point transfer between two ranks.

``after=`` lists other task objects (like htsim's triggers); ``delay_s`` waits
that long after the last of them ends (or after time 0). :func:`schedule`
compiles the tasks into one :class:`~fabric.engine.FlowProblem`: every task
becomes phase(s) of the engine's phase DAG (``phase_deps`` CSR and
``phase_delay_s``), a compute task one empty phase whose delay is
``delay_s + duration_s``. All flows share the fabric max-min fairly, so tasks
that overlap in time contend for links and tasks that do not, do not. Each
task gets its own start, end, duration, bandwidth, max-link utilisation and
lower bound, and the tasks it shared links with while both ran. A plan's
kernel-side floor on its time (``Plan.min_time_s``: an SM-bound MoE kernel,
NVLSTree's ceiling) becomes one more empty phase of its task, delayed by the
floor, so the task and everything after it wait for it, as :func:`run` does.

Plans are cached (:class:`PlanCache`) by the op's shape and rescaled in size;
the rescale is exact (see :class:`PlanCache`).

Examples
--------
>>> from topologies import build
>>> from fabric import compile_fabric, Router
>>> r = Router(compile_fabric(build("hgx-h100")))
>>> ar = CollectiveTask(Collective("all_reduce", tuple(range(8)), 1 << 28, "ring"), label="grads")
>>> opt = ComputeTask(tuple(range(8)), 1e-3, after=(ar,), label="optimizer")
>>> res = schedule(r, [ar, opt])
>>> abs(res[opt].start_s - res[ar].end_s) < 1e-12, round(res[opt].duration_s * 1e3, 6)
(True, 1.0)
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field, replace

import numpy as np

from collectives.algorithms import Planner
from collectives.ops import Collective, busbw_factor
from collectives.plancache import PlanCache
from collectives.runner import planner_for
from fabric import Router
from fabric.congestion import CongestionReport, congestion
from fabric.decompose import simulate_split
from fabric.flowset import FlowSet, concat, to_problem
from topologies.errors import SpecError

__all__ = ["CollectiveTask", "ComputeTask", "SendTask", "TASK_TYPES", "PlanCache", "TaskResult", "ScheduleResult",
           "schedule"]


def _check_after(after, label: str) -> tuple:
    if isinstance(after, TASK_TYPES):
        after = (after,)
    try:
        after = tuple(after)
    except TypeError:
        raise SpecError(f"after ({label}): expected tasks, got {type(after).__name__}") from None
    for a in after:
        if not isinstance(a, TASK_TYPES):
            raise SpecError(f"after ({label}): {a!r} is not a task (CollectiveTask, ComputeTask or SendTask)")
    return after


def _check_delay(value, name: str, label: str) -> float:
    try:
        v = float(value)
    except (TypeError, ValueError):
        raise SpecError(f"{name} ({label}): {value!r} must be a number of seconds >= 0") from None
    if not (v >= 0 and math.isfinite(v)):
        raise SpecError(f"{name} ({label}): {value!r} must be a finite number of seconds >= 0")
    return v


@dataclass(frozen=True, eq=False)
class CollectiveTask:
    """A collective, started when every task in ``after`` has ended, plus ``delay_s``."""

    op: Collective
    after: tuple = ()
    delay_s: float = 0.0
    label: str = ""

    def __post_init__(self) -> None:
        if not isinstance(self.op, Collective):
            raise SpecError(f"op: expected a Collective, got {type(self.op).__name__}")
        label = self.label or self.op.label
        object.__setattr__(self, "label", label)
        object.__setattr__(self, "after", _check_after(self.after, label))
        object.__setattr__(self, "delay_s", _check_delay(self.delay_s, "delay_s", label))


@dataclass(frozen=True, eq=False)
class ComputeTask:
    """A compute gap of ``duration_s`` on ``ranks`` (no traffic).

    Ordering is explicit: tasks that must wait for it list it in ``after``
    (the ranks are recorded, they impose no implicit order).
    """

    ranks: tuple
    duration_s: float
    after: tuple = ()
    delay_s: float = 0.0
    label: str = ""

    def __post_init__(self) -> None:
        try:
            ranks = tuple(int(r) for r in self.ranks)
        except (TypeError, ValueError):
            raise SpecError(f"ranks: {self.ranks!r} must be GPU ranks (integers)") from None
        if not ranks or min(ranks) < 0:
            raise SpecError("ranks: a compute task needs at least one rank, all >= 0")
        label = self.label or f"compute[{len(ranks)}]"
        object.__setattr__(self, "ranks", ranks)
        object.__setattr__(self, "label", label)
        object.__setattr__(self, "duration_s", _check_delay(self.duration_s, "duration_s", label))
        object.__setattr__(self, "after", _check_after(self.after, label))
        object.__setattr__(self, "delay_s", _check_delay(self.delay_s, "delay_s", label))


@dataclass(frozen=True, eq=False)
class SendTask:
    """A one-way transfer of ``size_bytes`` from rank ``src`` to rank ``dst`` (NCCL send/recv)."""

    src: int
    dst: int
    size_bytes: int
    after: tuple = ()
    delay_s: float = 0.0
    label: str = ""

    def __post_init__(self) -> None:
        for name in ("src", "dst"):
            v = getattr(self, name)
            if isinstance(v, bool) or not isinstance(v, (int, np.integer)) or v < 0:
                raise SpecError(f"{name}: {v!r} must be a GPU rank (integer >= 0)")
            object.__setattr__(self, name, int(v))
        if self.src == self.dst:
            raise SpecError(f"dst: a send needs two different ranks, got {self.src} -> {self.dst}")
        s = self.size_bytes
        if isinstance(s, bool) or not isinstance(s, (int, np.integer)) or s < 0:
            raise SpecError(f"size: {s!r} must be a whole number of bytes >= 0")
        object.__setattr__(self, "size_bytes", int(s))
        label = self.label or f"send[{self.src}->{self.dst}]"
        object.__setattr__(self, "label", label)
        object.__setattr__(self, "after", _check_after(self.after, label))
        object.__setattr__(self, "delay_s", _check_delay(self.delay_s, "delay_s", label))


TASK_TYPES = (CollectiveTask, ComputeTask, SendTask)


# --------------------------------------------------------------------------- results


@dataclass(frozen=True)
class TaskResult:
    """One task's own figures (not the run's).

    ``lower_bound_s``: the larger of its heaviest link's bytes over capacity and
    its slowest flow alone (size at its path's bottleneck plus latency); a
    compute task's is its duration. ``max_link_utilization``: its bytes on its
    busiest link over (capacity x its duration). ``shared_with``: labels of the
    tasks whose flows crossed a link it used while both were running, and
    ``shared_links`` those links (link ids of the fabric, trunks expanded).
    """

    index: int
    label: str
    kind: str                      # "collective" | "compute" | "send"
    start_s: float
    end_s: float
    duration_s: float
    algorithm: str | None
    protocol: str | None
    size_bytes: int | None
    algbw_Bps: float | None
    busbw_Bps: float | None
    max_link_utilization: float
    lower_bound_s: float
    bytes_on_wire: float
    shared_with: tuple
    shared_with_index: tuple
    shared_links: np.ndarray

    def as_dict(self) -> dict:
        return {"index": self.index, "label": self.label, "kind": self.kind, "start_us": self.start_s * 1e6,
                "end_us": self.end_s * 1e6, "duration_us": self.duration_s * 1e6, "algorithm": self.algorithm,
                "protocol": self.protocol, "size_bytes": self.size_bytes,
                "algbw_GBps": None if self.algbw_Bps is None else self.algbw_Bps / 1e9,
                "busbw_GBps": None if self.busbw_Bps is None else self.busbw_Bps / 1e9,
                "max_link_utilization": self.max_link_utilization, "lower_bound_us": self.lower_bound_s * 1e6,
                "bytes_on_wire": self.bytes_on_wire, "shared_with": list(self.shared_with),
                "shared_links": len(self.shared_links)}


@dataclass(frozen=True)
class ScheduleResult:
    """Every task's result (input order), the makespan and, with ``report``, the run's congestion.

    Index it by position or by the task object: ``res[task]``.
    """

    tasks: tuple
    makespan_s: float
    lower_bound_s: float
    engine_mode: str
    plan_hits: int
    plan_misses: int
    report: CongestionReport | None
    _index: dict = field(default_factory=dict, repr=False, compare=False)

    def __getitem__(self, key) -> TaskResult:
        if isinstance(key, (int, np.integer)):
            return self.tasks[key]
        try:
            return self.tasks[self._index[key]]
        except (KeyError, TypeError):
            raise SpecError(f"schedule: {key!r} is not one of the scheduled tasks") from None

    def __len__(self) -> int:
        return len(self.tasks)

    def __iter__(self):
        return iter(self.tasks)

    def as_dict(self) -> dict:
        out = {"makespan_us": self.makespan_s * 1e6, "lower_bound_us": self.lower_bound_s * 1e6,
               "engine_mode": self.engine_mode, "tasks": [t.as_dict() for t in self.tasks]}
        if self.report is not None:
            out["congestion"] = self.report.as_dict()
        return out


# --------------------------------------------------------------------------- compile and run


def _order(tasks: list) -> np.ndarray:
    """Topological order of the tasks (Kahn); SpecError on unknown tasks in ``after`` or a cycle."""
    index = {}
    for i, t in enumerate(tasks):
        if not isinstance(t, TASK_TYPES):
            raise SpecError(f"tasks[{i}]: {t!r} is not a task (CollectiveTask, ComputeTask or SendTask)")
        if t in index:
            raise SpecError(f"tasks[{i}]: task {t.label!r} is listed twice")
        index[t] = i
    deps = []
    for t in tasks:
        d = []
        for a in t.after:
            j = index.get(a)
            if j is None:
                raise SpecError(f"after ({t.label}): task {a.label!r} is not among the scheduled tasks")
            d.append(j)
        deps.append(d)
    T = len(tasks)
    indeg = np.array([len(d) for d in deps], np.int64)
    users = [[] for _ in range(T)]
    for i, d in enumerate(deps):
        for j in d:
            users[j].append(i)
    stack = [i for i in range(T) if indeg[i] == 0][::-1]
    order = []
    while stack:
        i = stack.pop()
        order.append(i)
        for u in users[i]:
            indeg[u] -= 1
            if indeg[u] == 0:
                stack.append(u)
    if len(order) < T:
        left = [tasks[i].label for i in range(T) if indeg[i] > 0]
        raise SpecError(f"after: dependency cycle among tasks {', '.join(left[:6])}"
                        f"{' ...' if len(left) > 6 else ''}; dependencies must be acyclic")
    return index, deps, np.asarray(order, np.int64)


def _empty(label: str, like: FlowSet | None = None) -> FlowSet:
    """A flow set without flows (one phase), sharing ``like``'s per-resource factors if it has any."""
    z = np.zeros(0)
    zi = np.zeros(0, np.int64)
    kw = {}
    if like is not None and getattr(like, "resource_scale", None) is not None:
        kw["resource_scale"] = like.resource_scale
    return FlowSet(res=np.zeros((0, 1), np.int32), weight=None, size_bytes=z, src=zi, dst=zi, latency_s=z,
                   release_s=z, phase=np.zeros(0, np.int32), group=np.zeros(0, np.int32), labels=(label,), **kw)


def _with_floor_phase(s: FlowSet) -> FlowSet:
    """``s`` with one more phase, empty and without internal dependencies (a task's time floor, see schedule)."""
    sp_, si_ = s.phase_deps if s.phase_deps is not None else (np.zeros(s.n_phases + 1, np.int64), np.zeros(0, np.int64))
    sp_ = np.append(np.asarray(sp_, np.int64), np.int64(sp_[-1]))
    dl = s.phase_delay_s if s.phase_delay_s is not None else np.zeros(s.n_phases)
    return replace(s, n_phases=s.n_phases + 1, phase_deps=(sp_, np.asarray(si_, np.int64)),
                   phase_delay_s=np.append(dl, 0.0))


def _unique_labels(tasks) -> list[str]:
    names = [t.label for t in tasks]
    seen: dict = {}
    for n in names:
        seen[n] = seen.get(n, 0) + 1
    return [n if seen[n] == 1 else f"{n}#{i}" for i, n in enumerate(names)]


def schedule(router: Router, tasks, *, policy: str = "ecmp", seed: int = 0, planner: Planner | None = None,
             cache: PlanCache | None = None, mode: str = "auto", epsilon: float = 0.01,
             report: bool = False) -> ScheduleResult:
    """Run ``tasks`` (with their dependencies) in one flow simulation on ``router``'s fabric.

    Parameters
    ----------
    router : fabric.Router
    tasks : sequence of CollectiveTask, ComputeTask, SendTask
        Every task named in an ``after`` must be in the sequence.
    policy, seed : routing policy and seed (when no planner or cache is given).
    planner : Planner, optional
    cache : PlanCache, optional
        Keep one across calls to reuse plans (its planner is used).
    mode, epsilon : the flow engine's mode and epoch tolerance.
    report : bool
        Also compute the run's congestion report.

    Returns
    -------
    ScheduleResult
    """
    tasks = list(tasks)
    if not tasks:
        raise SpecError("schedule: nothing to run (no tasks)")
    index, deps, order = _order(tasks)
    if cache is None:
        cache = PlanCache(planner or planner_for(router, policy=policy, seed=seed))
    planner = cache.planner
    h0, m0 = cache.hits, cache.misses
    labels = _unique_labels(tasks)
    T = len(tasks)
    plans: list = [None] * T
    sets = []
    for i, t in enumerate(tasks):
        if isinstance(t, CollectiveTask):
            plans[i] = cache.plan(t.op)
    send_ix = [i for i, t in enumerate(tasks) if isinstance(t, SendTask)]
    if send_ix:  # new (src, dst) pairs routed in one batch
        for i, p in zip(send_ix, cache.sends([(tasks[i].src, tasks[i].dst, tasks[i].size_bytes, labels[i])
                                               for i in send_ix])):
            plans[i] = p
    like = next((p.flows for p in plans if p is not None), None)
    floor = np.zeros(T)  # a kernel-side floor on a task's time (Plan.min_time_s: MoE SM pipelines, NVLSTree)
    for i, t in enumerate(tasks):
        sets.append(plans[i].flows.relabel(labels[i]) if plans[i] is not None else _empty(labels[i], like))
        if plans[i] is not None and plans[i].min_time_s > 0.0:
            floor[i] = plans[i].min_time_s
            sets[i] = _with_floor_phase(sets[i])
    # phases: task i owns phases [off[i], off[i] + n[i]); its entry phases (no internal deps) wait for every
    # phase of the tasks it is after, plus its delay; a compute task is one empty phase delayed by delay + duration
    n_ph = np.array([s.n_phases for s in sets], np.int64)
    off = np.concatenate([[0], np.cumsum(n_ph)])
    P = int(off[-1])
    delay = np.zeros(P)
    ptr, idx = [0], []
    for i, (t, s) in enumerate(zip(tasks, sets)):
        ext = [p for j in deps[i] for p in range(off[j], off[j + 1])]
        sp_, si_ = s.phase_deps if s.phase_deps is not None else (np.zeros(s.n_phases + 1, np.int64), ())
        own = t.delay_s + (t.duration_s if isinstance(t, ComputeTask) else 0.0)
        for q in range(s.n_phases):
            inner = [int(x) + off[i] for x in si_[sp_[q]:sp_[q + 1]]]
            if not inner:
                idx.extend(ext)
                delay[off[i] + q] = own
                if floor[i] > 0.0 and q == s.n_phases - 1:  # the floor phase: ends `floor` after the task starts
                    delay[off[i] + q] += floor[i]
            idx.extend(inner)
            ptr.append(len(idx))
            if s.phase_delay_s is not None:
                delay[off[i] + q] += float(s.phase_delay_s[q])
    fs = concat(sets)
    fs = replace(fs, n_phases=P, phase_deps=(np.asarray(ptr, np.int64), np.asarray(idx, np.int64)),
                 phase_delay_s=delay)
    n_fl = np.array([s.n_flows for s in sets], np.int64)
    owner = np.repeat(np.arange(T), n_fl)
    fptr = np.concatenate([[0], np.cumsum(n_fl)])      # the flows of task i are fptr[i]:fptr[i + 1]
    if fs.n_flows:
        problem, used = to_problem(fs, router)
        result = simulate_split(problem, mode=mode, epsilon=epsilon)
        fin = result.finish_s
    else:
        problem, used, result, fin = None, np.zeros(0, np.int64), None, np.zeros(0)
    # phase times, the way the engine sets them: start = max(end of deps) + delay, end = last flow's finish
    ph_has = np.bincount(fs.phase, minlength=P) > 0
    ph_max = np.full(P, -np.inf)
    np.maximum.at(ph_max, fs.phase, fin)
    ph_start = np.zeros(P)
    ph_end = np.zeros(P)
    ptr_a, idx_a = np.asarray(ptr), np.asarray(idx, np.int64)
    for i in order:
        for q in range(off[i], off[i + 1]):
            d = idx_a[ptr_a[q]:ptr_a[q + 1]]
            ph_start[q] = (ph_end[d].max() if len(d) else 0.0) + delay[q]
            ph_end[q] = ph_max[q] if ph_has[q] else ph_start[q]
    # per (task, resource) bytes on the wire
    stats = _task_link_stats(problem, owner, T) if problem is not None else None
    starts = np.array([ph_start[off[i]:off[i + 1]].min() for i in range(T)])
    ends = np.array([ph_end[off[i]:off[i + 1]].max() for i in range(T)])
    for i, t in enumerate(tasks):  # a compute task occupies [start + ..., end]: its delay is not work
        if isinstance(t, ComputeTask):
            starts[i] = ends[i] - t.duration_s
    shared = _sharing(stats, starts, ends, used, router, T) if stats is not None else {}
    out = []
    for i, t in enumerate(tasks):
        dur = float(ends[i] - starts[i])
        p = plans[i]
        util, lb, wire = 0.0, 0.0, 0.0
        if stats is not None:
            util, lb, wire = _own_figures(stats, problem, fptr[i], fptr[i + 1], i, dur)
        algbw = busbw = None
        algo = proto = None
        size = None
        kind = "compute"
        if isinstance(t, ComputeTask):
            lb = t.duration_s
        else:
            op = p.op
            kind = "send" if isinstance(t, SendTask) else "collective"
            size = op.size_bytes
            payload = p.logical_bytes if p.logical_bytes is not None else float(op.size_bytes)
            algbw = payload / dur if dur > 0 else 0.0
            factor = 1.0 if (p.logical_bytes is not None or kind == "send") else busbw_factor(op.collective, op.n)
            busbw = algbw * factor
            algo, proto = p.algorithm, p.protocol
        partners, links = shared.get(i, ((), np.zeros(0, np.int64)))
        out.append(TaskResult(index=i, label=labels[i], kind=kind, start_s=float(starts[i]), end_s=float(ends[i]),
                              duration_s=dur, algorithm=algo, protocol=proto, size_bytes=size, algbw_Bps=algbw,
                              busbw_Bps=busbw, max_link_utilization=util, lower_bound_s=lb, bytes_on_wire=wire,
                              shared_with=tuple(labels[j] for j in partners), shared_with_index=tuple(partners),
                              shared_links=links))
    makespan = float(max(ends.max(initial=0.0), result.makespan_s if result is not None else 0.0))
    rep = None
    if report and result is not None:
        rep = congestion(router, fs, result, used, policy=planner.policy)
    return ScheduleResult(tasks=tuple(out), makespan_s=makespan,
                          lower_bound_s=float(result.lower_bound_s) if result is not None else 0.0,
                          engine_mode=result.mode_used if result is not None else "none",
                          plan_hits=cache.hits - h0, plan_misses=cache.misses - m0, report=rep, _index=index)


@dataclass(frozen=True)
class _Stats:
    task: np.ndarray      # int64[K] task of each (task, resource) pair, sorted by task
    res: np.ndarray       # int64[K] local resource id
    bytes: np.ndarray     # float64[K] wire bytes of the task on the resource
    ptr: np.ndarray       # int64[T + 1] CSR over tasks
    flow_bound: np.ndarray  # float64[F] size at the path bottleneck + latency


def _task_link_stats(problem, owner: np.ndarray, T: int) -> _Stats:
    """Wire bytes of every task on every resource it uses, and each flow's bound alone."""
    res = np.asarray(problem.res, np.int64)
    F, h = res.shape
    ok = res >= 0
    w = np.where(ok, 1.0, 0.0) if problem.weight is None else np.asarray(problem.weight, np.float64)
    rw = getattr(problem, "resource_weight", None)  # per-resource factor kept apart from the weights
    if rw is not None:
        w = w * np.asarray(rw, np.float64)[np.maximum(res, 0)]
    R = len(problem.capacity_Bps)
    size = np.asarray(problem.size_bytes, np.float64)
    keys = (np.repeat(owner, h) * R + res.ravel())[ok.ravel()]
    vals = (w * size[:, None]).ravel()[ok.ravel()]
    if T * R <= 1 << 22:     # dense per (task, resource) sums: no sort
        by = np.bincount(keys, weights=vals, minlength=T * R)
        uk = np.flatnonzero(np.bincount(keys, minlength=T * R))
        by = by[uk]
    else:
        uk, inv = np.unique(keys, return_inverse=True)
        by = np.bincount(inv.ravel(), weights=vals, minlength=len(uk))
    task, rr = uk // R, uk % R
    ptr = np.searchsorted(task, np.arange(T + 1))
    cap = np.asarray(problem.capacity_Bps, np.float64)
    with np.errstate(divide="ignore", invalid="ignore"):
        per = np.where(ok, w / cap[np.maximum(res, 0)], 0.0)
    lat = np.zeros(F) if problem.latency_s is None else np.asarray(problem.latency_s)
    return _Stats(task=task, res=rr, bytes=by, ptr=ptr, flow_bound=size * per.max(axis=1, initial=0.0) + lat)


def _own_figures(st: _Stats, problem, f0: int, f1: int, i: int, dur: float) -> tuple[float, float, float]:
    a, b = st.ptr[i], st.ptr[i + 1]
    if a == b:
        return 0.0, 0.0, 0.0
    cap = np.asarray(problem.capacity_Bps, np.float64)[st.res[a:b]]
    t_link = st.bytes[a:b] / cap
    lb = max(float(t_link.max()), float(st.flow_bound[f0:f1].max(initial=0.0)))
    util = float(t_link.max() / dur) if dur > 0 else 0.0
    return util, lb, float(st.bytes[a:b].sum())


def _sharing(st: _Stats, starts, ends, used, router: Router, T: int) -> dict:
    """Per task: (partners, link ids) of the tasks whose flows crossed its links while both ran (bytes > 0).

    Pairs are formed per resource (the tasks that carry bytes on it), so the work is the number of
    (task, task, resource) sharings, not (overlapping task pairs) x (their resources): thousands of
    concurrent TP groups on disjoint NVLink domains cost nothing here.
    """
    carried = st.bytes > 0
    task, res = st.task[carried], st.res[carried]
    live = (ends > starts)[task]
    task, res = task[live], res[live]
    if len(task) < 2:
        return {}
    R = int(res.max()) + 1
    key = np.unique(res * T + task)                  # sorted by resource, then task; one entry per pair
    res, task = np.divmod(key, T)
    first = np.flatnonzero(np.r_[True, res[1:] != res[:-1]])
    size = np.diff(np.r_[first, len(res)])
    pos = np.arange(len(res)) - np.repeat(first, size)
    cnt = np.repeat(size, size) - pos - 1            # later entries of the same resource
    total = int(cnt.sum())
    if total == 0:
        return {}
    a = np.repeat(np.arange(len(res)), cnt)
    b = np.arange(total) - np.repeat(np.cumsum(cnt) - cnt, cnt) + a + 1
    A, B, on = task[a], task[b], res[a]
    both = np.maximum(starts[A], starts[B]) < np.minimum(ends[A], ends[B])   # ran at the same time
    A, B, on = A[both], B[both], on[both]
    if len(A) == 0:
        return {}
    PA, PB, PR = np.concatenate([A, B]), np.concatenate([B, A]), np.concatenate([on, on])
    pk = np.unique(PA * T + PB)
    rk = np.unique(PA * R + PR)
    p_task, p_other = np.divmod(pk, T)
    r_task, r_res = np.divmod(rk, R)
    p_cut = np.searchsorted(p_task, np.arange(T + 1))
    r_cut = np.searchsorted(r_task, np.arange(T + 1))
    L = router.n_links
    out = {}
    for i in np.unique(p_task):
        partners = tuple(int(j) for j in p_other[p_cut[i]:p_cut[i + 1]])
        rid = used[r_res[r_cut[i]:r_cut[i + 1]]]
        parts = [rid[rid < L]] + [router.members(int(r)) for r in rid[rid >= L]]
        out[int(i)] = (partners, np.unique(np.concatenate(parts)).astype(np.int64))
    return out
