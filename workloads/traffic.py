"""The communication of a training step, simulated once per distinct concurrent pattern.

A step repeats a handful of traffic patterns thousands of times: every layer's
TP all-gather / reduce-scatter, every MoE layer's dispatch and combine, every
micro-batch's pipeline send, and once per step the data-parallel gradient
reduce-scatter and parameter all-gather. Each pattern runs on *all* groups of
the job at once (every EP group dispatches in the same layer at the same time;
every DP group reduces its gradients in the same phase), so :func:`step_traffic`
simulates each pattern once, with all of its groups together on the shared
fabric through :func:`collectives.schedule.schedule`, and the step composition
(:mod:`workloads.step`) multiplies the per-instance times out. A plan cache
shared by the phases routes each group shape once.

Phases (tasks of one :func:`schedule` call each):

* ``tp``: per TP group an all-gather of the sequence-parallel activation
  (``micro_batch x seq / cp x hidden`` BF16, the receive buffer), then a
  reduce-scatter of the same size; ETP groups likewise on the routed tokens;
* ``cp``: per CP group an all-gather of the layer's K and V;
* ``ep``: per EP group a dispatch then a combine of the rank's
  ``micro_batch x seq / (tp cp)`` tokens with the given token routing; Megatron's
  dispatchers send BF16 both ways (FP8 dispatch is off in NVIDIA's recipes:
  Megatron-LM ``docs/discussions/deepseek-v3-gb200-optimization``), so the
  dispatch carries ``2 hidden`` bytes a token copy;
* ``pp``: every stage boundary of every pipeline sends its activation at once
  (one batch of point-to-point flows: they have no dependencies);
* ``dp``: per DP (x CP) group of every stage a reduce-scatter of its dense
  gradients and per expert-DP group of its expert gradients, all stages
  together; the all-gather of the updated parameters (ZeRO-1) moves the same
  bytes over the same rings (NCCL's ring all-gather and reduce-scatter send
  ``(n - 1) / n`` of the buffer in ``n - 1`` steps alike), so it takes the
  reduce-scatter's time scaled by its bytes;
* ``ep+dp``: the traffic kinds that overlap in time, together: the DP reduce-scatter runs under
  the last backward (the all-gather under the first forward) while its MoE layers dispatch and
  combine, so every DP / expert-DP reduce-scatter runs with one EP pass of every group, started
  half-way through the DP collectives (their ``dp`` time); the step composition carries the
  interference to the window's passes (:func:`workloads.step.estimate_step`).

Examples
--------
>>> from workloads.models import get_model
>>> from workloads.layout import Layout, place
>>> lay = Layout(gpus=16, tp=2, ep=8, global_batch=16, seq_len=1024)
>>> pl = place(lay, gpus_per_domain=8)
>>> ph = phase_tasks(get_model("qwen3-30b-a3b"), lay, pl, [(1e9, 2e9)])
>>> sorted(ph), len(ph["ep"])
(['dp', 'ep', 'ep+dp', 'tp'], 4)
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from collectives.moe import TokenRouting
from collectives.ops import Collective
from collectives.schedule import CollectiveTask, PlanCache, schedule
from collectives.runner import planner_for

__all__ = ["ROUTINGS", "GRAD_BYTES", "PARAM_BYTES", "JOINT_EPSILON", "PhaseResult", "SharedPlanner", "StepTraffic", "phase_tasks",
           "step_traffic",
           "routing_for"]

#: Token routings of the step's EP traffic: ``balanced`` (force-balanced benchmarks, the expected
#: counts), ``uniform`` (one i.i.d. draw), ``model`` (the model's own gating: group-limited for
#: DeepSeek, uniform otherwise), ``skewed``.
ROUTINGS = ("balanced", "uniform", "model", "skewed")
#: Gradients are reduced in BF16 (Megatron-Core DDP ``grad_reduce_in_fp32=False`` in the
#: Megatron-Bridge performance recipes) and parameters gathered in BF16.
GRAD_BYTES = 2.0
PARAM_BYTES = 2.0
#: Epoch tolerance of the joint ``ep+dp`` simulation: the EP pass's effect on a DP collective is about
#: 1 % of it, under the default tolerance (0.02): the ``dp`` and ``ep+dp`` phases both run at 0.002
#: (docs/steptime.md).
JOINT_EPSILON = 0.002


def routing_for(spec, routing: str, tokens: int, seed: int = 0) -> TokenRouting:
    """The :class:`TokenRouting` of the model's MoE layers for ``tokens`` per EP rank."""
    kind = {"balanced": "balanced", "uniform": "uniform", "skewed": "skewed"}.get(routing)
    if routing == "model":
        kind = "deepseek" if spec.n_groups > 1 and spec.topk_groups < spec.n_groups else "uniform"
    return TokenRouting(kind, tokens_per_rank=max(int(tokens), 1), hidden=spec.hidden, experts=spec.n_experts,
                        topk=spec.topk, topk_groups=max(spec.topk_groups, 1), n_group=max(spec.n_groups, 1),
                        seed=seed)


def phase_tasks(spec, lay, pl, stage_params, *, routing: str = "balanced", seed: int = 0,
                concurrent: bool = True) -> dict:
    """The tasks of every phase (see the module docstring), by phase name.

    ``stage_params[p]`` is (dense, expert) parameters per GPU of pipeline rank ``p``.
    Each value is a list of ``(kind, task)``; a phase with nothing to send is left out.
    ``concurrent`` adds the ``ep+dp`` phase (EP dispatch and combine of every group during the
    DP reduce-scatters of every group: kinds ``ep_dispatch_dp``, ``ep_combine_dp``, ``dp_rs_ep``,
    ``edp_rs_ep``).
    """
    h = spec.hidden
    tokens = lay.micro_batch * lay.seq_len // lay.cp          # tokens of one micro-batch on one CP rank
    act_bytes = int(tokens * h * 2)                             # BF16 activation, full (gathered) sequence
    out: dict = {}
    tp = []
    if lay.tp > 1:
        for i, g in enumerate(pl.groups("tp")):
            ag = CollectiveTask(Collective("all_gather", g, act_bytes, label="tp-ag"), label=f"tp-ag[{i}]")
            rs = CollectiveTask(Collective("reduce_scatter", g, act_bytes, label="tp-rs"), after=(ag,),
                                label=f"tp-rs[{i}]")
            tp += [("tp_ag", ag), ("tp_rs", rs)]
    if spec.is_moe and lay.etp > 1:
        routed = int(tokens / lay.tp * spec.topk * h * 2 / lay.ep * lay.etp)
        for i, g in enumerate(pl.groups("etp")):
            ag = CollectiveTask(Collective("all_gather", g, routed, label="etp-ag"), label=f"etp-ag[{i}]")
            rs = CollectiveTask(Collective("reduce_scatter", g, routed, label="etp-rs"), after=(ag,),
                                label=f"etp-rs[{i}]")
            tp += [("etp_ag", ag), ("etp_rs", rs)]
    if tp:
        out["tp"] = tp
    if lay.cp > 1:
        kv = int(lay.micro_batch * lay.seq_len * spec.n_kv_heads * (spec.qk_head_dim + spec.v_dim) * 2 / lay.tp)
        if spec.attention == "mla":  # Megatron-Core gathers the up-projected K and V of every head
            kv = int(lay.micro_batch * lay.seq_len * spec.n_heads * (spec.qk_head_dim + spec.v_dim) * 2 / lay.tp)
        out["cp"] = [("cp_ag", CollectiveTask(Collective("all_gather", g, kv, label="cp-kv"), label=f"cp-kv[{i}]"))
                     for i, g in enumerate(pl.groups("cp"))]
    if spec.is_moe and lay.ep > 1:
        tr = routing_for(spec, routing, tokens // lay.tp, seed)
        ep = []
        for i, g in enumerate(pl.groups("ep")):
            d = CollectiveTask(Collective("moe_dispatch", g, 0, label="ep-dispatch",
                                          options={"moe": tr, "bytes_per_token": 2 * h}), label=f"ep-dispatch[{i}]")
            c = CollectiveTask(Collective("moe_combine", g, 0, label="ep-combine", options={"moe": tr}),
                               after=(d,), label=f"ep-combine[{i}]")
            ep += [("ep_dispatch", d), ("ep_combine", c)]
        out["ep"] = ep
    if lay.pp > 1:
        send = int(act_bytes / lay.tp)
        pairs = []
        for g in pl.groups("pp"):
            pairs += [(g[p], g[p + 1]) for p in range(lay.pp - 1)]
            if lay.schedule == "interleaved" or lay.pp == 2:  # chunk wrap-around / the backward direction
                pairs.append((g[-1], g[0]))
        out["pp"] = [("pp_send", _Sends(tuple(pairs), send))]
    dp = []
    per_stage = lay.gpus // lay.pp
    if lay.dp * lay.cp > 1:
        for i, g in enumerate(pl.groups("dpcp")):
            p = _stage_of(pl, g[0], per_stage)
            size = _bucketable(stage_params[p][0] * GRAD_BYTES, len(g))
            dp.append(("dp_rs", CollectiveTask(Collective("reduce_scatter", g, size, label="dp-rs"),
                                               label=f"dp-rs[stage {p}, {i}]")))
    if spec.is_moe and lay.edp > 1:
        for i, g in enumerate(pl.groups("edp")):
            p = _stage_of(pl, g[0], per_stage)
            size = _bucketable(stage_params[p][1] * GRAD_BYTES, len(g))
            if size == 0:
                continue
            dp.append(("edp_rs", CollectiveTask(Collective("reduce_scatter", g, size, label="edp-rs"),
                                                label=f"edp-rs[stage {p}, {i}]")))
    if dp:
        out["dp"] = dp
    if dp and "ep" in out and concurrent:
        # the gradient reduce-scatter runs under the last backward, whose MoE layers dispatch and combine
        # meanwhile: one pass of every EP group together with every DP / expert-DP reduce-scatter
        both, twin = [], {}
        for kind, t in out["ep"] + dp:
            twin[id(t)] = CollectiveTask(t.op, after=tuple(twin[id(a)] for a in t.after), label=t.label + "+dp")
            both.append((kind + ("_ep" if kind in ("dp_rs", "edp_rs") else "_dp"), twin[id(t)]))
        out["ep+dp"] = both
    return out


@dataclass(frozen=True)
class _Sends:
    """Every pipeline send of one step boundary at once: ``pairs`` of (src, dst) GPUs, ``size_bytes`` each."""

    pairs: tuple
    size_bytes: int


def _simulate_sends(router, planner, sends: _Sends, *, epsilon: float, report: bool):
    """All sends in one flow simulation (routed in one batch: they have no dependencies)."""
    from fabric.congestion import congestion
    from fabric.decompose import simulate_split
    from fabric.flowset import to_problem

    src = np.array([a for a, _ in sends.pairs], np.int64)
    dst = np.array([b for _, b in sends.pairs], np.int64)
    op = Collective("send_recv", (int(src[0]), int(dst[0])), sends.size_bytes, label="pp-send")
    fs = planner.direct(op, src, dst, np.full(len(src), float(sends.size_bytes)), pxn=False, label="pp-send")
    problem, used = to_problem(fs, router)
    res = simulate_split(problem, mode="auto", epsilon=epsilon)
    rep = congestion(router, fs, res, used, policy=planner.policy) if report else None
    return float(res.finish_s.max(initial=0.0)), rep


def _stage_of(pl, gpu: int, per_stage: int) -> int:
    rank = int(np.flatnonzero(pl.gpu_of == gpu)[0])
    return rank // per_stage


def _bucketable(size: float, n: int) -> int:
    """A reduce-scatter buffer of ``size`` bytes, rounded up to a multiple of the group size."""
    s = int(np.ceil(size / n)) * n
    return max(s, 0)


def _mid_collective(items, done):
    """The ``ep+dp`` tasks with the EP pass started half-way through the DP collectives (their alone
    time, from the ``dp`` phase): the pass meets the DP traffic in its steady state, not its start-up
    (where every hop of a ring starts at once)."""
    dp = next((ph for ph in done if ph.name == "dp"), None)
    delay = 0.5 * max((dp.times_s.get(k, 0.0) for k in ("dp_rs", "edp_rs")), default=0.0) if dp else 0.0
    twin, out = {}, []
    for kind, t in items:
        if kind.startswith("ep_"):
            t2 = CollectiveTask(t.op, after=tuple(twin[id(a)] for a in t.after), label=t.label,
                                delay_s=0.0 if t.after else delay)
            twin[id(t)] = t2
            t = t2
        out.append((kind, t))
    return out


@dataclass(frozen=True)
class PhaseResult:
    """One phase's simulation: per kind the slowest instance (all groups run together)."""

    name: str
    times_s: dict            # kind -> slowest task duration (s)
    makespan_s: float
    tasks: int
    report: object = None    # CongestionReport when asked

    def as_dict(self) -> dict:
        out = {"phase": self.name, "tasks": self.tasks, "makespan_us": self.makespan_s * 1e6,
               "times_us": {k: v * 1e6 for k, v in self.times_s.items()}}
        return out


@dataclass(frozen=True)
class StepTraffic:
    """Per-instance communication times of a step (seconds), and each phase's simulation."""

    phases: tuple
    plan_hits: int
    plan_misses: int

    def time(self, kind: str) -> float:
        for ph in self.phases:
            if kind in ph.times_s:
                return ph.times_s[kind]
        return 0.0

    def phase(self, name: str):
        for ph in self.phases:
            if ph.name == name:
                return ph
        return None


class SharedPlanner:
    """A planner whose :meth:`plan` results are kept per op, for several steps on one fabric.

    ``Planner.plan`` is a pure function of the op on a given router, policy and seed, so a
    repeated op (another training point on the same system) gets the very plan it would have
    been given afresh: results are identical. Every other attribute is the wrapped planner's.
    Each step keeps its own :class:`PlanCache` (same hits, misses and rescaling as alone).
    """

    def __init__(self, planner):
        self._planner = planner
        self._plans: dict = {}
        self._systems: dict = {}

    def plan(self, op):
        hit = self._plans.get(op)
        if hit is None:
            hit = self._plans[op] = self._planner.plan(op)
        return hit

    def system_for(self, op):
        """``Planner.system_for``, kept per (ranks, ``nvls``, ``nccl_version``, CollNet): all it depends on."""
        key = (op.ranks, bool(op.options.get("nvls", True)), op.options.get("nccl_version"),
               self._planner.collnet(op))
        hit = self._systems.get(key)
        if hit is None:
            hit = self._systems[key] = self._planner.system_for(op)
        return hit

    def __getattr__(self, name):
        return getattr(self._planner, name)


def step_traffic(router, spec, lay, pl, stage_params, *, routing: str = "balanced", seed: int = 0,
                 policy: str = "ecmp", report: bool = False, epsilon: float = 0.02, progress=None,
                 concurrent: bool = True, planner=None) -> StepTraffic:
    """Simulate every phase of the step's traffic once (all of its groups together).

    ``planner`` (optional): one for ``router`` with this ``policy`` and ``seed``, e.g. a
    :class:`SharedPlanner` kept across steps on the same fabric (default: a fresh one).
    """
    phases = phase_tasks(spec, lay, pl, stage_params, routing=routing, seed=seed, concurrent=concurrent)
    cache = PlanCache(planner if planner is not None else planner_for(router, policy=policy, seed=seed))
    out = []
    for k, (name, items) in enumerate(phases.items()):
        if progress:
            progress(name, k + 1, len(phases))
        if name == "pp":
            (_, sends), = items
            t, rep = _simulate_sends(router, cache.planner, sends, epsilon=epsilon, report=report)
            out.append(PhaseResult(name, {"pp_send": t}, t, len(sends.pairs), rep))
            continue
        eps = epsilon
        if name == "dp" and "ep+dp" in phases or name == "ep+dp":
            # the interference is a small difference of long collectives: both sides at a finer tolerance
            eps = min(epsilon, JOINT_EPSILON)
        if name == "ep+dp":
            items = _mid_collective(items, out)
        res = schedule(router, [t for _, t in items], cache=cache, mode="auto", epsilon=eps, report=report)
        times: dict = {}
        for (kind, task) in items:
            times[kind] = max(times.get(kind, 0.0), res[task].duration_s)
        if name == "dp":  # the all-gather moves the same bytes over the same ring as the reduce-scatter
            for rs, ag in (("dp_rs", "dp_ag"), ("edp_rs", "edp_ag")):
                if rs in times:
                    times[ag] = times[rs] * PARAM_BYTES / GRAD_BYTES
        out.append(PhaseResult(name, times, res.makespan_s, len(items), res.report if report else None))
    return StepTraffic(tuple(out), cache.hits, cache.misses)
