"""Evaluate sweep points: a collective on a fabric (``run``) or a training step (``step``).

The composition is the library's (topology + overrides, failures, router,
planner, rank groups, collective), the same as ``fabric-emu run`` does, kept
apart from the CLI. What a point needs and other points share is built once per
process and cached, keyed by its inputs: the built and compiled topology (by
preset and ``--set``), the failed fabric with its router (plus the failures)
and the planner (plus routing and seed). A worker that receives a batch of
points on the same topology builds it once.

:func:`evaluate_batch` is the task a worker runs: it never raises for a bad
point, it returns the point's error instead, so one failed point does not stop
a sweep.

Examples
--------
>>> from workloads.sweep.params import normalise
>>> p = normalise({"op": "all_reduce", "topo": "hgx-h100", "size": "1GiB", "algo": "ring"})
>>> out = evaluate(p)
>>> round(out["busbw_GBps"]), out["algorithm"]
(366, 'ring')
"""

from __future__ import annotations

import threading
import time
from collections import OrderedDict

from topologies.errors import FabricEmuError, SpecError
from workloads.sweep.params import Point

__all__ = ["evaluate", "evaluate_batch", "base_fabric", "step_fabric", "cache_info", "CACHE_SIZE"]

#: Entries kept per cache (built topologies, failed fabrics with routers, planners) in a process.
CACHE_SIZE = 8

_BASE: OrderedDict = OrderedDict()
_ROUTERS: OrderedDict = OrderedDict()
_PLANNERS: OrderedDict = OrderedDict()
_STATS = {"base_builds": 0, "router_builds": 0, "planner_builds": 0}
#: One point at a time per process: the cached routers and planners are not shared between threads
#: (Dask workers with several threads run their points one after the other; use processes to scale).
_LOCK = threading.Lock()


def _cached(cache: OrderedDict, key, make, stat: str):
    if key in cache:
        cache.move_to_end(key)
        return cache[key]
    value = make()
    _STATS[stat] += 1
    cache[key] = value
    while len(cache) > CACHE_SIZE:
        cache.popitem(last=False)
    return value


def cache_info() -> dict:
    """How many topologies, routers and planners this process built (the rest were cache hits)."""
    return dict(_STATS)


def _freeze(d: dict) -> tuple:
    return tuple(sorted((k, tuple(v) if isinstance(v, list) else v) for k, v in d.items()))


def base_fabric(topo: str, sets: dict):
    """``(graph, compiled fabric)`` of ``topo`` with ``sets``, built once per process."""
    def make():
        from fabric.compiled import compile_fabric
        from topologies.spec import load_topology

        G = load_topology(topo, dict(sets))
        return G, compile_fabric(G)
    return _cached(_BASE, (topo, _freeze(sets)), make, "base_builds")


def _router(topo: str, sets: dict, fail: tuple, degrade: tuple):
    def make():
        from fabric.failures import apply_failures
        from fabric.routing import Router

        G, cf0 = base_fabric(topo, sets)
        cf = apply_failures(cf0, fail=list(G.graph.get("failures", [])) + list(fail),
                            degrade=list(G.graph.get("degradations", [])) + list(degrade))
        return Router(cf)
    return _cached(_ROUTERS, (topo, _freeze(sets), fail, degrade), make, "router_builds")


def _collective(p: Point) -> dict:
    from collectives.moe import TokenRouting
    from collectives.runner import planner_for, sweep

    x = p.inputs
    router = _router(x["topo"], p.sets, p.fail, p.degrade)
    cf = router.cf
    key = (x["topo"], _freeze(p.sets), p.fail, p.degrade, x["routing"], x["seed"])
    planner = _cached(_PLANNERS, key, lambda: planner_for(router, policy=x["routing"], seed=x["seed"]),
                      "planner_builds")
    from collectives.groups import rank_groups

    groups = rank_groups(cf.n_gpus, x["ranks"], x["groups"], x["layout"])
    options: dict = {}
    for key in ("pxn", "nvls", "collnet", "nccl_version"):
        if x.get(key) is not None:
            options[key] = x[key]
    moe = p.op.startswith("moe")
    if moe:
        n_domains = len({int(cf.node_domain[cf.gpus[r]]) for r in groups[0]})
        kind = x["moe_routing"] or ("node_limited" if n_domains > 1 else "uniform")
        options["moe"] = TokenRouting(kind, tokens_per_rank=x["tokens"], hidden=x["hidden"], experts=x["experts"],
                                      topk=x["topk"], seed=x["seed"], dispatch_dtype=x.get("dispatch_dtype", "fp8"))
    rows = sweep(router, p.op, groups, [0 if moe else x["size"]], algorithm=x["algo"], report=True,
                 options=options, planner=planner)
    slow = max(rows, key=lambda r: r.time_s)
    rep = slow.report
    out = {"time_us": slow.time_s * 1e6, "algbw_GBps": min(r.algbw_Bps for r in rows) / 1e9,
           "busbw_GBps": min(r.busbw_Bps for r in rows) / 1e9, "algorithm": slow.algorithm,
           "protocol": slow.protocol, "nccl_algorithm": slow.nccl_algorithm,
           "analytic_time_us": None if slow.analytic_time_s is None else slow.analytic_time_s * 1e6,
           "latency_us": slow.latency_s * 1e6, "max_link_utilization": slow.max_link_utilization,
           "lower_bound_us": slow.lower_bound_s * 1e6,
           "bound_ratio": slow.time_s / slow.lower_bound_s if slow.lower_bound_s > 0 else None,
           "engine_mode": slow.engine_mode, "logical_bytes": slow.logical_bytes, "n_ranks": slow.ranks,
           "fabric": cf.name, "fabric_gpus": int(cf.n_gpus)}
    if rep is not None and rep.hottest:
        h = rep.hottest[0]
        out.update(hottest_link=h.name, hottest_tier=h.tier, hottest_utilization=h.utilization,
                   verdict=rep.verdict)
    return out


def step_fabric(p: Point):
    """The compiled fabric (without the point's failures) that a step point's job runs on.

    Reproduces the step estimator's cluster choice (:func:`workloads.layout.cluster_for`)
    so that ``fail=each:...`` can enumerate the switches of that fabric.
    """
    from workloads.layout import Layout, _preset_gpu, cluster_for, default_gpus_per_domain, place

    x = p.inputs
    lay = _layout(x, Layout)
    gpd = x["gpus_per_domain"] or default_gpus_per_domain(_preset_gpu(x["system"]), lay)
    pl = place(lay, gpus_per_domain=gpd, mode=x["placement"], ep_in_domain=x["ep_in_domain"])
    name, overrides = cluster_for(x["system"], pl, p.sets)
    return base_fabric(name, overrides)[1]


def _layout(x: dict, Layout):
    return Layout(gpus=x["gpus"], tp=x["tp"], pp=x["pp"], vpp=x["vpp"], ep=x["ep"], etp=x["etp"], cp=x["cp"],
                  global_batch=x["global_batch"], micro_batch=x["micro_batch"], seq_len=x["seq_len"],
                  precision=x["precision"], recompute=x["recompute"], schedule=x["schedule"] or "",
                  optimizer=x["optimizer"])


def _step(p: Point) -> dict:
    try:
        from workloads.step import estimate_step
    except ImportError:
        raise SpecError("step: the step-time estimator (workloads.step) is not part of this installation") from None
    from workloads.layout import Layout
    from workloads.models import get_model

    x = p.inputs
    res = estimate_step(get_model(x["model"]), _layout(x, Layout), x["system"], sets=dict(p.sets),
                        gpus_per_domain=x["gpus_per_domain"], placement=x["placement"],
                        ep_in_domain=x["ep_in_domain"], overlap=x["overlap"], routing=x["moe_routing"],
                        policy=x["routing"], seed=x["seed"], fail=p.fail, degrade=p.degrade,
                        pp_layout=x["pp_layout"], attention_precision=x["attention_precision"])
    out = {"step_time_s": res.step_time_s, "tokens_per_s_per_gpu": res.tokens_per_s_per_gpu,
           "tokens_per_s": res.tokens_per_s, "tflops_per_gpu": res.tflops_per_gpu, "mfu_bf16": res.mfu_bf16,
           "mfu_fp8": res.mfu_fp8, "fabric": res.fabric}
    for k, v in sorted(res.breakdown_s.items()):
        out[f"{k}_s"] = float(v)
    return out


def evaluate(p: Point) -> dict:
    """Output columns of point ``p`` (raises the library's errors)."""
    return _step(p) if p.kind == "step" else _collective(p)


def evaluate_batch(points: list[Point]) -> list[tuple[str, str, dict | str, float, float]]:
    """Run ``points`` in order: ``(point_id, "ok", outputs, wall_s, cpu_s)`` or ``(point_id, "error", message, ...)``.

    ``cpu_s`` is the worker process's CPU time during the point (threads of one process share it).
    """
    out = []
    for p in points:
        t0, c0 = time.perf_counter(), time.process_time()
        try:
            with _LOCK:
                res = ("ok", evaluate(p))
        except FabricEmuError as exc:
            res = ("error", str(exc))
        except MemoryError:
            res = ("error", "out of memory")
        except Exception as exc:  # noqa: BLE001 - a bug in one point must not stop the sweep; it is recorded
            res = ("error", f"{type(exc).__name__}: {exc}")
        out.append((p.point_id, res[0], res[1], time.perf_counter() - t0, time.process_time() - c0))
    return out
