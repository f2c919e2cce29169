"""Plan and execute a sweep: expand, skip what is stored, batch, run on an executor, store as points finish.

The executor is anything with the :class:`concurrent.futures.Executor` interface:
in-process (``jobs=1``), a process pool (``jobs=N``), or a Dask distributed
cluster (``scheduler="tcp://HOST:PORT"``, through ``distributed.Client.get_executor``).
The code path is the same for all three. Points are sorted so that points on the
same topology travel together, and cut into batches (:func:`batches`) so that a
task carries enough work to amortise its overhead and the worker's cached
fabric; a bounded number of batches is in flight, and each finished point is
written in its own transaction as soon as its batch returns.

Examples
--------
>>> import os, tempfile
>>> from workloads.sweep.store import Store
>>> plan = plan_sweep("all_reduce", {"topo": "fat-tree", "hosts": 16, "radix": 8, "size": "1MiB"},
...                   [("routing", ("ecmp", "spray"))])
>>> len(plan.points), plan.swept_keys
(2, ['routing'])
>>> st = Store.open(os.path.join(tempfile.mkdtemp(), "s.sqlite"))
>>> run_sweep(plan, st).done
2
>>> run_sweep(plan, st).skipped     # resumed: nothing left to do
2
"""

from __future__ import annotations

import concurrent.futures as cf
import functools
import os
from dataclasses import dataclass, field

from topologies.errors import FabricEmuError, SpecError, brief
from workloads.sweep.evaluate import base_fabric, evaluate_batch, step_fabric
from workloads.sweep.grid import each, expand
from workloads.sweep.params import LIST_KEYS, RUN_KEYS, STEP_KEYS, Point, kind_of, normalise

__all__ = ["SweepPlan", "SweepOutcome", "plan_sweep", "run_sweep", "batches", "make_executor", "InlineExecutor",
           "MAX_BATCH", "default_jobs", "point_cost"]

#: Largest batch of points in one task.
MAX_BATCH = 16


@dataclass(frozen=True)
class SweepPlan:
    """The normalised, de-duplicated points of a sweep, in order, and the keys it sweeps."""

    op: str
    points: tuple
    swept_keys: list = field(default_factory=list)


@dataclass
class SweepOutcome:
    total: int = 0
    skipped: int = 0
    done: int = 0
    failed: int = 0
    interrupted: bool = False


def _expand_each(raw: list[dict], op: str) -> list[dict]:
    """Replace ``each:`` values of ``fail``/``degrade`` by one raw point per matched element."""
    out = []
    for r in raw:
        todo = [(k, i, v) for k in LIST_KEYS for i, v in enumerate(r.get(k, [])) if str(v).startswith("each:")]
        if not todo:
            out.append(r)
            continue
        if len(todo) > 1:
            raise SpecError("fail/degrade: one 'each:' expansion per point (the what-if ranks single failures)")
        key, i, value = todo[0]
        sel = str(value)[len("each:"):].strip()
        suffix = ""
        if key == "degrade":
            sel, eq, amount = sel.rpartition("=")
            if not eq:
                raise SpecError(f"degrade={value!r}: expected each:SELECTOR=VALUE, e.g. each:spine=50%")
            suffix = "=" + amount.strip()
        probe = normalise({**r, key: [x for j, x in enumerate(r[key]) if j != i]})
        cf0 = step_fabric(probe) if probe.kind == "step" else base_fabric(probe.topo, probe.sets)[1]
        for s in each(cf0, sel):
            out.append({**r, key: [x if j != i else s + suffix for j, x in enumerate(r[key])]})
    return out


def _check_distinct(op: str, axes) -> None:
    """Refuse a crossed grid axis that lists one value twice (``size=1KiB,1024B``, ``routing=ecmp,ecmp``): the sweep
    would run it once and report fewer points than asked for, without a word.

    Option values are compared as the option reads them (its converter: sizes in bytes, names as
    spelt); ``--set`` keys and ``fail``/``degrade`` as written (whitespace stripped).
    """
    options = STEP_KEYS if kind_of(op) == "step" else RUN_KEYS
    for key, values in axes:
        firsts = {}
        for v in values:
            if key in options:
                try:
                    canon = options[key][1](key, v)
                except (SpecError, TypeError, ValueError):
                    continue  # normalise names the bad value with its own message
            else:
                canon = str(v).strip()
            marker = repr(canon)
            if marker in firsts:
                what = (f"{brief(v)} is listed twice" if str(firsts[marker]).strip() == str(v).strip()
                        else f"{brief(firsts[marker])} and {brief(v)} are the same value")
                raise SpecError(f"--grid {key}: {what}; give each value once")
            firsts[marker] = v


def plan_sweep(op: str, base: dict, grid, zip_axes=(), *, zipped: bool = False) -> SweepPlan:
    """Normalised points of ``op`` over ``base`` and the axes (see :mod:`workloads.sweep.grid`)."""
    kind_of(op)
    if not zipped:  # zipped axes pair up row by row: a value may recur (groups=1,1,2 with ranks=8,16,16)
        _check_distinct(op, list(grid))
    raw = expand({**base, "op": op}, list(grid), list(zip_axes), zipped=zipped)
    raw = _expand_each(raw, op)
    points, seen = [], set()
    for r in raw:
        p = normalise(r)
        if p.point_id not in seen:
            seen.add(p.point_id)
            points.append(p)
    swept = [k for k, _ in list(grid) + list(zip_axes)]
    if "seed" in swept or "seed" in base:  # a fixed seed too: run and step refuse one that nothing draws from
        _check_seed_used(points, "grid seed" if "seed" in swept else "seed")
    for key in _SCALEOUT_ONLY:
        if key in swept or key in base:
            _check_scaleout_used(points, key)
    if ("layout" in swept or "layout" in base) and points and points[0].kind == "collective" \
            and all(p.inputs.get("groups", 1) == 1 for p in points):  # as run --layout without --groups
        raise SpecError("layout: splits the ranks of --groups > 1; no point of this sweep has more than one group")
    return SweepPlan(op=op, points=tuple(points), swept_keys=swept)


def _check_seed_used(points, what: str = "grid seed") -> None:
    """Refuse a swept ``seed`` when no point draws from it (``run``/``step`` refuse ``--seed`` there
    too): the seed drives ECMP hashing on a scale-out network and sampled MoE token routing.
    A grid that crosses seeds with, e.g., ``routing=ecmp,spray`` is kept (its spray points repeat)."""
    tiers, first = {}, ""
    for p in points:
        why = _seed_unused_because(p, tiers)
        if not why:
            return
        first = first or why
    if points:
        raise SpecError(f"{what}: {points[0].op} draws nothing from the seed ({first}); "
                        + ("sweep seed" if what == "grid seed" else "give a seed") + " with ECMP routing over a "
                        "scale-out network or with sampled MoE token routing")


def _tiers_and_policy(p, cache: dict) -> tuple[int, str]:
    """Scale-out tiers and own routing policy of a collective point's fabric (built once per topology)."""
    from collectives.budget import fabric_tiers
    from collectives.runner import fabric_policy

    key = (p.topo, repr(sorted(p.sets.items())))
    if key not in cache:
        cf = base_fabric(p.topo, p.sets)[1]
        cache[key] = (fabric_tiers(cf), fabric_policy(cf))
    return cache[key]


#: Keys that only act on a scale-out network, and what they do there (run refuses them without one).
_SCALEOUT_ONLY = {"routing": "the routing policy only picks paths through network switches",
                  "pxn": "PXN forwards network traffic over NVLink"}


def _check_scaleout_used(points, key: str) -> None:
    """Refuse a fixed or swept ``key`` of :data:`_SCALEOUT_ONLY` when no collective point has a scale-out
    network (as run does)."""
    cache: dict = {}
    if points and all(p.kind == "collective" for p in points) and \
            not any(_tiers_and_policy(p, cache)[0] for p in points):
        raise SpecError(f"{key}: {points[0].topo} has no scale-out network; {_SCALEOUT_ONLY[key]}")


def _seed_unused_because(p, tiers: dict) -> str:
    """Why point ``p`` draws nothing from its seed ("" when it does)."""
    x = p.inputs
    if p.kind == "step":
        from workloads.models import get_model
        from workloads.step import seed_unused_because

        return seed_unused_because(get_model(x["model"]), ep=x["ep"], moe_routing=x["moe_routing"],
                                   policy=x["routing"])
    if p.op.startswith("moe"):
        from collectives.moe import UNSEEDED_KINDS

        if x["moe_routing"] not in UNSEEDED_KINDS:  # None: node_limited or uniform, both drawn
            return ""
    if x["routing"] not in ("ecmp", "auto"):
        return f"routing {x['routing']} does not hash flows"
    n_tiers, policy = _tiers_and_policy(p, tiers)
    if not n_tiers:
        return f"{p.topo} has no scale-out network to hash flows over"
    return "" if x["routing"] == "ecmp" or policy == "ecmp" else \
        f"routing auto routes {p.topo} with {policy} (its switches' forwarding), which does not hash flows"


def batches(points: list, workers: int, cost=None) -> list[list]:
    """Cut ``points`` into batches of about a quarter of a worker's share of the work, heaviest first.

    ``cost(point)`` is a relative work estimate (default 1 per point). Points keep
    their order inside a batch (callers sort by topology so that a batch shares
    its fabric); a batch holds at most :data:`MAX_BATCH` points. Batches are
    returned heaviest first, so that the longest tasks start first (LPT order).

    Examples
    --------
    >>> [len(b) for b in batches(list(range(10)), 1)]
    [2, 2, 2, 2, 2]
    >>> [b for b in batches([1, 1, 1, 9], 1, cost=float)]
    [[9], [1, 1, 1]]
    """
    if not points:
        return []
    costs = [float(cost(p)) if cost else 1.0 for p in points]
    target = sum(costs) / (4 * max(1, workers))
    out, cur, acc = [], [], 0.0
    for p, c in zip(points, costs):
        if cur and (acc + c > target * (1 + 1e-9) or len(cur) >= MAX_BATCH):
            out.append((acc, cur))
            cur, acc = [], 0.0
        cur.append(p)
        acc += c
    out.append((acc, cur))
    order = sorted(range(len(out)), key=lambda i: -out[i][0])
    return [out[i][1] for i in order]


_A2A = ("all_to_all", "moe_dispatch", "moe_combine")


@functools.lru_cache(maxsize=256)
def _estimate(topo: str, sets: tuple):
    from topologies.spec import estimate_topology

    try:
        return estimate_topology(topo, dict(sets))
    except Exception:  # noqa: BLE001 - an estimate only; the point reports its own error when run
        return None


def point_cost(p: Point) -> float:
    """Relative work of a point, for scheduling only: links to build plus flows to simulate."""
    est = _estimate(p.topo, tuple(sorted((k, str(v)) for k, v in p.sets.items()))) if p.kind == "collective" \
        else None
    links = est.links if est else 0
    n = est.gpus if est else int(p.inputs.get("gpus") or 1)
    if p.kind == "collective" and p.inputs.get("ranks") not in (None, "all"):
        n = int(p.inputs["ranks"])
    flows = n * n if (p.kind == "step" or p.op in _A2A) else n
    return float(links + flows)


class InlineExecutor(cf.Executor):
    """Runs each task in the calling process when it is submitted (``jobs=1``)."""

    def submit(self, fn, /, *args, **kwargs):
        fut: cf.Future = cf.Future()
        try:
            fut.set_result(fn(*args, **kwargs))
        except BaseException as exc:  # noqa: BLE001 - delivered through the future
            if isinstance(exc, KeyboardInterrupt):
                raise
            fut.set_exception(exc)
        return fut


def make_executor(jobs: int = 1, scheduler: str | None = None):
    """``(executor, workers, close)``: Dask at ``scheduler``, else a pool of ``jobs`` processes, else inline.

    ``close(now=False)`` releases the executor; ``now=True`` (after an interrupt) also stops running workers.
    """
    if scheduler:
        try:
            from distributed import Client
        except ImportError:
            raise SpecError("--scheduler: needs the Dask extra; pip install 'fabric-emu[distributed]'") from None
        try:
            client = Client(scheduler, timeout="10s")
        except (OSError, TimeoutError) as exc:
            raise SpecError(f"--scheduler {scheduler}: cannot connect ({exc})") from None
        workers = max(1, sum(int(w.get("nthreads", 1)) for w in client.scheduler_info()["workers"].values()))
        ex = client.get_executor(pure=False)
        return ex, workers, lambda now=False: client.close()
    if jobs < 1:
        raise SpecError(f"--jobs: {jobs} must be >= 1")
    if jobs == 1:
        ex = InlineExecutor()
        return ex, 1, lambda now=False: None
    import multiprocessing as mp

    ctx = mp.get_context("forkserver" if "forkserver" in mp.get_all_start_methods() else "spawn")
    ex = cf.ProcessPoolExecutor(max_workers=jobs, mp_context=ctx)

    def close(now: bool = False) -> None:
        if now:   # interrupted: stop the workers' current points too (they are not stored)
            for proc in list(getattr(ex, "_processes", {}).values()):
                proc.terminate()
        ex.shutdown(wait=not now, cancel_futures=True)
    return ex, jobs, close


def _topo_key(p: Point):
    return (p.op == "step", str(p.topo), str(sorted(p.sets.items())), p.fail, p.degrade)


def run_sweep(plan: SweepPlan, store, *, executor=None, workers: int = 1, progress=None,
              retry_failed: bool = False) -> SweepOutcome:
    """Evaluate the plan's points not yet in ``store``; store each as it finishes.

    ``progress(done, total, failed)`` is called after every stored point (``done``
    counts stored points of this plan, including those skipped as already stored).
    KeyboardInterrupt stops submitting, keeps what is stored and returns with
    ``interrupted`` set. ``retry_failed`` evaluates the points stored with an error again.
    """
    stored = store.done_ids(ok_only=retry_failed)
    todo = sorted((p for p in plan.points if p.point_id not in stored), key=_topo_key)
    order = {p.point_id: i for i, p in enumerate(plan.points)}
    out = SweepOutcome(total=len(plan.points), skipped=len(plan.points) - len(todo))
    store.begin_sweep(plan.op, plan.swept_keys, len(plan.points))
    if progress:
        progress(out.skipped, out.total, 0)
    if not todo:
        return out
    ex = executor or InlineExecutor()
    by_id = {p.point_id: p for p in todo}
    queue = batches(todo, workers, cost=point_cost)
    window = max(1, 2 * workers)
    pending: set = set()
    base_seq = store.conn.execute("SELECT COALESCE(MAX(seq), -1) + 1 FROM points").fetchone()[0]

    def record(results):
        for pid, status, payload, elapsed, cpu in results:
            p = by_id[pid]
            store.put(pid, {**p.columns(), "cpu_s": cpu}, status, payload, elapsed, inputs=p.identity(),
                      seq=base_seq + order[pid])
            out.done += 1
            out.failed += status != "ok"
            if progress:
                progress(out.skipped + out.done, out.total, out.failed)

    try:
        while queue or pending:
            while queue and len(pending) < window:
                pending.add(ex.submit(evaluate_batch, queue.pop(0)))
            finished, pending = cf.wait(pending, return_when=cf.FIRST_COMPLETED)
            for fut in finished:
                record(fut.result())
    except KeyboardInterrupt:
        out.interrupted = True
        for fut in pending:
            fut.cancel()
    except cf.BrokenExecutor:
        raise FabricEmuError(f"sweep: a worker process died (out of memory?) after {out.done} new points; they are "
                             f"stored; re-run the same command to resume") from None
    return out


def default_jobs() -> int:
    """Worker processes when ``--jobs`` is not given: the CPUs this process may use."""
    return max(1, len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1)
