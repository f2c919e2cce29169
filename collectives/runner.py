"""Run collectives on a fabric: one or many groups at once, size sweeps, nccl-tests style results.

All collectives given to :func:`run` share the fabric in one simulation, so
they contend for links (every DP ring of a job, two jobs side by side). Each
result reports nccl-tests' numbers (time, algbw = S/t, busbw = algbw x factor),
the analytical alpha-beta answer and NCCL's own model beside the flow-level
one, and the run's congestion.

Examples
--------
>>> from topologies import build
>>> from fabric import compile_fabric, Router
>>> r = Router(compile_fabric(build("hgx-h100")))
>>> [res] = run(r, [Collective("all_reduce", tuple(range(8)), 1 << 30, "ring")])
>>> round(res.busbw_Bps / 1e9)
366
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np

from collectives import analytic
from collectives.algorithms import Plan, Planner
from collectives.budget import check_ops
from collectives.calibration import calibration
from collectives.ops import Collective, busbw_factor
from fabric import POLICIES, Router
from fabric.congestion import CongestionReport, congestion, max_link_utilization
from fabric.decompose import simulate_split
from fabric.flowset import concat, to_problem
from topologies.errors import SpecError

__all__ = ["CollectiveResult", "run", "sweep", "planner_for", "fabric_policy", "resolve_policy",
           "POLICY_OF_FORWARDING", "POLICY_CHOICES"]

#: Router policy (``fabric.POLICIES``) that reproduces each switch forwarding kind
#: (``topologies.catalog.FORWARDING``): InfiniBand's destination LFTs are d-mod-k on a fat-tree,
#: Ethernet ECMP hashes flows, adaptive routing / SRD spraying is the router's ``spray``.
POLICY_OF_FORWARDING = {"destination": "dmodk", "hash": "ecmp", "adaptive-spray": "spray"}
#: What a caller may ask for: ``auto`` (the fabric's own forwarding, :func:`fabric_policy`) or a policy.
POLICY_CHOICES = ("auto",) + tuple(POLICIES)
#: Policy of a fabric with no catalog scale-out switch (generic fat-trees, single NVLink domains).
_UNKNOWN_POLICY = "ecmp"
_SCALEOUT_ROLES = ("leaf", "spine", "core")


@dataclass(frozen=True)
class CollectiveResult:
    """One collective's outcome, nccl-tests style."""

    collective: str
    label: str
    ranks: int
    size_bytes: int
    algorithm: str
    protocol: str
    nccl_algorithm: str | None
    time_s: float
    algbw_Bps: float
    busbw_Bps: float
    analytic_time_s: float | None
    latency_s: float
    max_link_utilization: float
    lower_bound_s: float
    engine_mode: str
    logical_bytes: float | None = None
    report: CongestionReport | None = None

    def as_dict(self) -> dict:
        out = {"collective": self.collective, "label": self.label, "ranks": self.ranks,
               "size_bytes": self.size_bytes, "time_us": self.time_s * 1e6, "algbw_GBps": self.algbw_Bps / 1e9,
               "busbw_GBps": self.busbw_Bps / 1e9, "algorithm": self.algorithm, "protocol": self.protocol,
               "nccl_algorithm": self.nccl_algorithm,
               "analytic_time_us": None if self.analytic_time_s is None else self.analytic_time_s * 1e6,
               "latency_us": self.latency_s * 1e6, "max_link_utilization": self.max_link_utilization,
               "lower_bound_us": self.lower_bound_s * 1e6, "engine_mode": self.engine_mode}
        if self.logical_bytes is not None:
            out["logical_bytes"] = self.logical_bytes
        if self.report is not None:
            out["congestion"] = self.report.as_dict()
        return out


def fabric_policy(cf) -> str:
    """The routing policy of a compiled fabric's own scale-out switches (what ``auto`` routes with).

    The scale-out switch is the builder's ``meta["switch"]``, else the catalog model of the
    leaf / spine / core nodes; its ``forwarding`` (``topologies.catalog.FORWARDING``) maps to a
    router policy by :data:`POLICY_OF_FORWARDING`. A fabric with no catalog scale-out switch
    (a generic fat-tree, one NVLink domain) keeps ECMP hashing.

    Examples
    --------
    >>> from topologies import build
    >>> from fabric import compile_fabric
    >>> fabric_policy(compile_fabric(build("fat-tree", {"hosts": 8, "radix": 4, "switch": "QM9700"})))
    'dmodk'
    >>> fabric_policy(compile_fabric(build("fat-tree", {"hosts": 8, "radix": 4, "switch": "spectrum-x"})))
    'spray'
    >>> fabric_policy(compile_fabric(build("fat-tree", {"hosts": 8, "radix": 4})))
    'ecmp'
    """
    from topologies.catalog import SWITCHES
    from topologies.graph import ROLES

    names = {cf.meta["switch"]} if cf.meta.get("switch") else {
        cf.node_model[i] for i in np.flatnonzero(np.isin(cf.node_role, [ROLES.index(r) for r in _SCALEOUT_ROLES]))}
    kinds = {SWITCHES[n].forwarding for n in names if n in SWITCHES and SWITCHES[n].forwarding}
    if len(kinds) != 1:  # none known, or switches that forward differently: hashing, as an Ethernet default
        return _UNKNOWN_POLICY
    return POLICY_OF_FORWARDING[kinds.pop()]


def resolve_policy(router: Router, policy: str) -> str:
    """``policy`` itself, or for ``"auto"`` the fabric's own (:func:`fabric_policy`)."""
    return fabric_policy(router.cf) if policy == "auto" else policy


def planner_for(router: Router, *, policy: str = "ecmp", seed: int = 0, gpu: str | None = None) -> Planner:
    """A :class:`Planner` with the calibration of the fabric's GPU and NIC models.

    ``policy`` is one of ``fabric.POLICIES`` or ``"auto"`` (the fabric's own forwarding,
    :func:`fabric_policy`); the planner's ``policy`` attribute holds the resolved name.
    """
    meta = router.cf.meta
    gpu = gpu or meta.get("gpu") or "H100"
    return Planner(router, calibration(gpu, meta.get("nic"), meta.get("switch")), policy=resolve_policy(router, policy),
                   seed=seed)


def run(router: Router, ops: list[Collective], *, policy: str = "ecmp", seed: int = 0, report: bool = False,
        mode: str = "auto", epsilon: float = 0.01, planner: Planner | None = None,
        memory_limit=None, top: int = 10) -> list[CollectiveResult]:
    """Simulate ``ops`` together on ``router``'s fabric and return one result per op.

    With ``report``, the congestion report lists the ``top`` hottest links. Ops whose estimated memory
    (:mod:`collectives.budget`) exceeds ``memory_limit`` (default
    ``$FABRIC_EMU_MEMORY_LIMIT`` or 8 GiB) are refused before planning.
    """
    if not ops:
        raise SpecError("collectives: nothing to run")
    check_ops(router.cf, ops, limit=memory_limit)  # refuse from an estimate before planning and routing
    planner = planner or planner_for(router, policy=policy, seed=seed)
    plans: list[Plan] = [planner.plan(op) for op in ops]
    bounds = np.cumsum([0] + [p.flows.n_flows for p in plans])  # op i owns flows bounds[i]:bounds[i + 1]
    names = [p.op.label for p in plans]
    labels = [n if names.count(n) == 1 else f"{n}#{i}" for i, n in enumerate(names)]
    fs = concat([p.flows.relabel(label) for p, label in zip(plans, labels)])
    problem, used = to_problem(fs, router)
    if not report:
        # only the report reads the flow sets again: free them (F x h resource ids, endpoints) before the engine
        plans = [replace(p, flows=None) for p in plans]
        del fs
    result = simulate_split(problem, mode=mode, epsilon=epsilon)
    # the congestion report (hot links and the groups on them) only when asked; the results need one number
    rep = congestion(router, fs, result, used, policy=planner.policy, top=top) if report else None
    max_util = rep.max_utilization if rep is not None else max_link_utilization(router, result, used)
    out = []
    for i, p in enumerate(plans):
        t = float(result.finish_s[bounds[i]:bounds[i + 1]].max(initial=0.0))
        t = max(t, p.min_time_s)  # a kernel pipeline slower than its links (MoE kernels)
        op = p.op
        payload = p.logical_bytes if p.logical_bytes is not None else float(op.size_bytes)
        algbw = payload / t if t > 0 else 0.0
        factor = 1.0 if p.logical_bytes is not None else busbw_factor(op.collective, op.n)
        ana = analytic.time_s(planner, p)
        out.append(CollectiveResult(
            collective=op.collective, label=labels[i], ranks=op.n, size_bytes=op.size_bytes, algorithm=p.algorithm,
            protocol=p.protocol, nccl_algorithm=p.nccl_algorithm, time_s=t, algbw_Bps=algbw, busbw_Bps=algbw * factor,
            analytic_time_s=ana, latency_s=p.latency_s, max_link_utilization=max_util,
            lower_bound_s=float(result.lower_bound_s), engine_mode=result.mode_used, logical_bytes=p.logical_bytes,
            report=rep))
    return out


def sweep(router: Router, collective: str, groups, sizes, *, algorithm: str = "auto", policy: str = "ecmp",
          seed: int = 0, report: bool = False, options: dict | None = None, planner: Planner | None = None,
          progress=None, memory_limit=None, top: int = 10) -> list[CollectiveResult]:
    """An nccl-tests-style sweep: for every size, ``collective`` on every rank group at the same time.

    ``groups`` is a list of rank tuples (one tuple for a single group). Each size is
    simulated on its own; with ``report`` the largest size carries the congestion
    report (its ``top`` hottest links). Returns one result per (size, group), sizes in order.
    """
    planner = planner or planner_for(router, policy=policy, seed=seed)
    groups = [tuple(g) for g in groups]
    out = []
    for k, size in enumerate(sizes):
        ops = [Collective(collective, g, int(size), algorithm, label=f"{collective}[{i}]" if len(groups) > 1 else "",
                          options=dict(options or {})) for i, g in enumerate(groups)]
        out.extend(run(router, ops, report=report and k == len(sizes) - 1, planner=planner, memory_limit=memory_limit,
                       top=top))
        if progress:
            progress(k + 1, len(sizes), size)
    return out
