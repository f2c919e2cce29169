"""Step-time estimator: model + parallel layout + fabric -> step time, throughput, MFU, exposed communication.

Composition (``docs/steptime.md`` has the derivation, the constants and their data):

1. **Layout and placement** (:mod:`workloads.layout`): Megatron-Core rank order, the
   cluster of NVLink domains the job needs with the platform's reference scale-out,
   memory per GPU (:mod:`workloads.memory`), refused when it exceeds HBM.
2. **Compute** per layer kind and micro-batch on one GPU: the operator inventory
   (:func:`workloads.ops.layer_ops`) timed by the compute model
   (:mod:`workloads.compute`: GEMMs and grouped GEMMs at the layout's precision,
   the output head and router in BF16, attention in BF16, memory-bound ops by
   HBM bandwidth); forward, backward-data (with attention backward and memory ops)
   and weight-gradient parts; recompute adds forward work to the backward.
3. **Communication** (:mod:`workloads.traffic`): each concurrent pattern simulated
   once with all of its groups on the shared fabric.
4. **Overlap** (:class:`Overlap`) decides what of each communication is exposed.
5. **Pipeline**: per pipeline rank the micro-batch time of its chunks; the 1F1B,
   interleaved or DualPipe schedule turns them into the pipeline's makespan and bubble.
6. Plus the exposed data-parallel traffic and the optimizer step (memory-bound).

Examples
--------
>>> from workloads.models import get_model
>>> from workloads.layout import Layout
>>> res = estimate_step(get_model("llama3-8b"), Layout(gpus=8, global_batch=64, seq_len=4096, recompute="full"),
...                     "hgx-h100")
>>> 0.2 < res.mfu_bf16 < 0.8, sorted(res.breakdown_s)[:3]
(True, ['bubble', 'compute', 'cp_exposed'])
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from collectives.runner import planner_for, resolve_policy
from fabric import Router, compile_with_failures
from topologies import build, catalog, load_topology
from topologies.errors import SpecError
from workloads import compute as cm
from workloads.flops import flops_per_token
from workloads.layout import (Layout, cluster_for, default_gpus_per_domain, place, stage_of_virtual,
                              virtual_stages, _preset_gpu)
from workloads.memory import Memory, check_fits, memory_per_gpu, params_per_gpu
from workloads.ops import Split, layer_ops
from workloads.pipeline import simulate_pipeline
from workloads.trace import Span, chrome_trace
from workloads.traffic import ROUTINGS, SharedPlanner, StepTraffic, step_traffic

__all__ = ["OVERLAPS", "ATTENTION_PRECISIONS", "FUSED_PERMUTE_GPUS", "SM_SHARE_EP_COMM", "TRAINING_EFFICIENCY", "FRAMEWORK_OVERHEAD", "training_efficiency", "framework_overhead_s",
           "FP8_ATTENTION_GPUS", "attention_precision_for", "Overlap", "LayerTimes", "StepResult",
           "parse_overlap", "seed_unused_because", "layer_times", "estimate_step"]

#: Overlap options (``--overlap``): ``dp-grad`` gradient reduce-scatter under the last backward,
#: ``dp-param`` parameter all-gather under the first forward, ``tp`` TP communication under the
#: layer's GEMMs (TE userbuffers), ``ep`` EP all-to-all under the other micro-batch's compute
#: (Megatron-Core's 1F1B A2A overlap; implied by DualPipe), ``pp`` pipeline sends under compute
#: (``overlap_p2p_comm`` of the interleaved schedule).
OVERLAPS = ("dp-grad", "dp-param", "tp", "ep", "pp")

#: Share of the SMs that EP communication kernels hold while they overlap compute: DeepSeek-V3
#: reserves 20 of the H800's 132 SMs for its all-to-all (tech report arXiv 2412.19437 §3.2.2).
SM_SHARE_EP_COMM = 20 / 132

#: Training-step tensor-core efficiency per GPU model: the compute model's GEMM and attention times
#: (isolated, at the rated clock) are divided by this factor inside a training step (sustained clocks
#: under the step's power draw, kernels sharing SMs and L2 with communication); HBM-bound kernels keep
#: their bandwidth (the memory clock does not throttle with the SM clock). Fitted on the fit split
#: of ``workloads/data/training_points.toml`` (docs/steptime.md §5); GPUs without fit points use
#: ``default`` (the mean of the fitted ones). 1.0 until fitted.
TRAINING_EFFICIENCY = {"GB200": 0.743, "GB300": 0.864, "H100": 0.666, "default": 0.758}

#: Framework time per MoE layer and micro-batch pass (forward or backward), per GPU model, in
#: seconds: host launches, the device-host synchronisation of the tokens-per-expert counts,
#: small kernels the inventory does not list (Megatron-LM deepseek-v3-gb200-optimization: the
#: MoE step is host-bound without CUDA graphs). Fitted on the fit split with
#: :data:`TRAINING_EFFICIENCY`; ``default`` is the mean of the fitted ones.
FRAMEWORK_OVERHEAD = {"GB200": 0.0, "GB300": 0.0, "H100": 1.827e-3, "default": 0.609e-3}

_KIND = {"embed": "embedding", "head": "lm_head", "dense": "dense", "moe": "moe", "mtp": "mtp"}


@dataclass(frozen=True)
class Overlap:
    """Which communication may hide under compute (see :data:`OVERLAPS`)."""

    dp_grad: bool = True
    dp_param: bool = True
    tp: bool = True
    ep: bool = False
    pp: bool = True

    def names(self) -> list[str]:
        return [n for n in OVERLAPS if getattr(self, n.replace("-", "_"))]


def seed_unused_because(spec, *, ep: int, moe_routing: str, policy: str) -> str:
    """Why a step draws nothing from its seed ("" when it does).

    The seed drives ECMP hashing (``policy = "ecmp"``) and the sampled token routing of an MoE
    model's EP all-to-alls (``moe_routing`` other than ``balanced``, with ``ep > 1``).

    Examples
    --------
    >>> from workloads.models import get_model
    >>> seed_unused_because(get_model("llama3-8b"), ep=1, moe_routing="skewed", policy="ecmp")
    ''
    >>> seed_unused_because(get_model("llama3-8b"), ep=1, moe_routing="skewed", policy="auto")
    'routing auto with moe_routing skewed'
    """
    if policy == "ecmp" or (spec.is_moe and ep > 1 and moe_routing != "balanced"):
        return ""
    return f"routing {policy} with moe_routing {moe_routing}"


def parse_overlap(text: str | None, *, moe: bool = False, schedule: str = "1f1b") -> Overlap:
    """``auto`` (default), ``none``, or a comma list of :data:`OVERLAPS`.

    ``auto`` is what the Megatron-Bridge performance recipes switch on: DP gradient and
    parameter overlap, TP overlap, pipeline-send overlap, and for MoE models the 1F1B EP
    all-to-all overlap (``moe_a2a_overlap=True`` in the DeepSeek-V3 Blackwell MXFP8 recipes,
    ``scripts/performance/configs/deepseek/deepseek_workload_base_configs.py``); DualPipe
    always overlaps EP.

    Examples
    --------
    >>> parse_overlap("dp-grad,ep").names()
    ['dp-grad', 'ep']
    >>> parse_overlap("auto", moe=True).ep, parse_overlap("none", schedule="dualpipe").ep
    (True, True)
    """
    text = "auto" if text is None else text.strip().lower()
    if not text:
        raise SpecError(f"--overlap: empty; use auto, none, or a comma list of {', '.join(OVERLAPS)}")
    if text == "auto":
        ov = Overlap(ep=moe)
    elif text == "none":
        ov = Overlap(False, False, False, False, False)
    else:
        names = [t.strip() for t in text.split(",")]
        if "" in names:
            raise SpecError(f"--overlap: an empty name in {text!r}; use a comma list of {', '.join(OVERLAPS)}")
        bad = sorted({n for n in names if n not in OVERLAPS})
        if bad:
            raise SpecError(f"--overlap: {', '.join(bad)} not among auto, none, {', '.join(OVERLAPS)}")
        twice = sorted({n for n in names if names.count(n) > 1})
        if twice:
            raise SpecError(f"--overlap: {', '.join(twice)} given twice; list each of {', '.join(OVERLAPS)} once")
        ov = Overlap(*(n in names for n in OVERLAPS))
    if schedule == "dualpipe" and not ov.ep:
        ov = Overlap(ov.dp_grad, ov.dp_param, ov.tp, True, ov.pp)
    return ov


@dataclass(frozen=True)
class LayerTimes:
    """Compute of one layer kind for one micro-batch on one GPU (seconds)."""

    kind: str
    fwd_s: float
    bwd_s: float         # data gradients, attention backward, memory-bound backward ops, recompute
    wgrad_s: float
    gemm_fwd_s: float    # GEMM part of the forward (what TP communication can hide under)
    gemm_bwd_s: float
    attn_fwd_s: float
    attn_bwd_s: float
    model_flops: float
    tensor_core_s: float = 0.0  # the GEMM and attention part of fwd + bwd + wgrad (what the clock factor scales)

    @property
    def total_s(self) -> float:
        return self.fwd_s + self.bwd_s + self.wgrad_s


#: Ops Megatron-Core recomputes under ``selective`` (``--recompute-modules layernorm moe_act
#: mla_up_proj``): norms, activation functions, the MLA up-projections.
_SELECTIVE = ("norm", "_act", "mla_q_b", "mla_kv_b")
#: Ops recomputed in the backward per ``--recompute`` value (besides ``full``).
_RECOMPUTED = {"selective": _SELECTIVE, "mla_up_proj": ("mla_q_b", "mla_kv_b")}


#: GPUs whose MXFP8 recipes of MLA models run attention in FP8: the Megatron-Bridge DeepSeek-V3
#: GB300 and B300 FP8_MX recipes set ``fp8_dot_product_attention=True``
#: (scripts/performance/configs/deepseek/deepseek_workload_base_configs.py); the Llama 3.1 recipes
#: (llama31_workload_base_configs.py) do not.
FP8_ATTENTION_GPUS = ("GB300", "B300")
#: GPUs whose published MoE recipes dispatch with HybridEP, which fuses the token permute (and the
#: padding copy) into its dispatch kernel: the Megatron-Bridge DeepSeek-V3 and Qwen3 GB300 / GB200 recipes
#: (``moe_flex_dispatcher_backend="hybridep"``; qwen3_workload_base_configs.py), Megatron-LM
#: docs/discussions/deepseek-v3-gb200-optimization ("HybridEP (+fused D2D copy/permute/pad)", +113.6
#: TFLOPs/GPU). Hopper recipes use DeepEP or the all-to-all dispatcher with a separate permute.
FUSED_PERMUTE_GPUS = ("GB200", "GB300")
#: ``--attention-precision`` choices (``auto``: see :func:`attention_precision_for`).
ATTENTION_PRECISIONS = ("auto", "bf16", "fp8")


def attention_precision_for(gpu: str, precision: str, choice: str = "auto", attention: str = "mla") -> str:
    """``auto``: FP8 attention for MLA models with MXFP8 on :data:`FP8_ATTENTION_GPUS`, else BF16.

    Examples
    --------
    >>> attention_precision_for("GB300", "mxfp8"), attention_precision_for("GB200", "mxfp8")
    ('fp8', 'bf16')
    >>> attention_precision_for("GB300", "mxfp8", attention="gqa")
    'bf16'
    """
    if choice not in ATTENTION_PRECISIONS:
        raise SpecError(f"--attention-precision: {choice!r} must be auto, bf16 or fp8")
    if choice != "auto":
        return choice
    return "fp8" if precision == "mxfp8" and gpu in FP8_ATTENTION_GPUS and attention == "mla" else "bf16"


def framework_overhead_s(gpu: str) -> float:
    """The :data:`FRAMEWORK_OVERHEAD` of ``gpu`` (seconds per MoE layer pass)."""
    return FRAMEWORK_OVERHEAD.get(gpu, FRAMEWORK_OVERHEAD["default"])


def training_efficiency(gpu: str) -> float:
    """The :data:`TRAINING_EFFICIENCY` of ``gpu``."""
    return TRAINING_EFFICIENCY.get(gpu, TRAINING_EFFICIENCY["default"])


def layer_times(spec, lay: Layout, gpu: str, kind: str, *, attention_precision: str = "bf16",
                fused_permute: bool | None = None) -> LayerTimes:
    """Time the inventory of one layer kind (``embed``, ``dense``, ``moe``, ``mtp``, ``head``).

    ``fused_permute`` (default: the GPU is one of :data:`FUSED_PERMUTE_GPUS`) drops the token permute,
    which HybridEP's dispatch kernel does on the way (the copy into the expert-major buffer)."""
    ops = layer_ops(spec, _KIND[kind], micro_batch=lay.micro_batch, seq_len=lay.seq_len,
                    split=Split(tp=lay.tp, sp=True, cp=lay.cp, ep=lay.ep, etp=lay.etp))
    t = np.zeros(len(ops))
    gem = [i for i, o in enumerate(ops) if o.kind in ("gemm", "grouped_gemm")]
    if gem:
        m = np.array([max(ops[i].m, 1e-9) for i in gem], float)
        n = np.array([ops[i].n for i in gem], float)
        k = np.array([ops[i].k for i in gem], float)
        g = np.array([ops[i].groups for i in gem], float)
        low = np.array([not ops[i].name.startswith(("lm_head", "router")) for i in gem])
        for prec, mask in ((lay.precision, low), ("bf16", ~low)):
            if mask.any():
                t[np.array(gem)[mask]] = np.atleast_1d(cm.gemm_time_s(gpu, prec, np.ceil(m[mask]), n[mask], k[mask],
                                                                      groups=g[mask]))
    for i, o in enumerate(ops):
        if o.kind == "attention":
            t[i] = cm.attention_time_s(gpu, o.batch, o.heads, o.seq_q, o.d_qk, o.d_v, causal=o.causal,
                                       backward=o.phase == "bwd", precision=attention_precision)
            if o.seq_kv != o.seq_q:  # context parallelism: a rank's share of the causal work
                t[i] *= o.seq_kv / o.seq_q / lay.cp if o.causal else o.seq_kv / o.seq_q
    mem = [i for i, o in enumerate(ops) if o.kind == "memory"]
    if mem:
        t[mem] = np.atleast_1d(cm.memory_time_s(gpu, np.array([ops[i].bytes_moved for i in mem], float)))
    if (gpu in FUSED_PERMUTE_GPUS if fused_permute is None else fused_permute) and lay.ep > 1:
        t[[i for i, o in enumerate(ops) if o.name.startswith("permute:")]] = 0.0
    phase = np.array([o.phase for o in ops])
    is_gemm = np.array([o.kind in ("gemm", "grouped_gemm") for o in ops])
    is_attn = np.array([o.kind == "attention" for o in ops])
    # the sustained-clock factor slows the tensor-core kernels; HBM-bound ops keep their bandwidth
    t = np.where(is_gemm | is_attn, t / training_efficiency(gpu), t)
    fwd = float(t[phase == "fwd"].sum())
    bwd = float(t[(phase == "dgrad") | (phase == "bwd")].sum())
    wgrad = float(t[phase == "wgrad"].sum())
    tc = float(t[is_gemm | is_attn].sum())
    if lay.recompute == "full" and kind not in ("embed", "head"):
        bwd += fwd
        tc += float(t[(phase == "fwd") & (is_gemm | is_attn)].sum())
    elif lay.recompute in _RECOMPUTED:
        again = np.array([o.phase == "fwd" and any(s in o.name for s in _RECOMPUTED[lay.recompute]) for o in ops])
        bwd += float(t[again].sum())
        tc += float(t[again & (is_gemm | is_attn)].sum())
    return LayerTimes(kind, fwd, bwd, wgrad,
                      float(t[(phase == "fwd") & is_gemm].sum()), float(t[(phase != "fwd") & is_gemm].sum()),
                      float(t[(phase == "fwd") & is_attn].sum()), float(t[(phase == "bwd") & is_attn].sum()),
                      float(sum(o.model_flops for o in ops)), tc)


@dataclass(frozen=True)
class StepResult:
    """Everything ``fabric-emu step`` reports (SI units; :meth:`as_dict` for JSON)."""

    model: str
    system: str
    gpu: str
    layout: Layout
    step_time_s: float
    breakdown_s: dict
    tokens_per_s_per_gpu: float
    tflops_per_gpu: float
    flops_per_token: float
    flops_convention: str
    mfu_bf16: float
    mfu_fp8: float
    memory: Memory
    placement: dict
    fabric: str
    comm_s: dict                      # per-instance communication times by kind
    stage_times_s: tuple              # per pipeline rank: (fwd, bwd, wgrad) of one micro-batch, all chunks
    pipeline: dict                    # schedule, makespan, bubble
    overlap: tuple
    traffic: StepTraffic = field(repr=False)
    routing: str = "balanced"
    policy: str = "spray"
    timeline: object = field(default=None, repr=False)
    tail_s: tuple = (0.0, 0.0, 0.0)   # EP slowed by DP traffic, exposed DP and optimizer after the pipeline

    def trace(self) -> dict:
        """The step as Chrome trace-event JSON: the pipeline timeline of every stage, then the
        exposed data-parallel traffic and the optimizer step."""
        t0 = self.pipeline["makespan_s"]
        ep, dp, opt = self.tail_s if len(self.tail_s) == 3 else (0.0, *self.tail_s)
        spans = []
        t0 += ep
        for s in range(self.layout.pp):
            if ep > 0:
                spans.append(Span(s, "ep", "EP all-to-all slowed by DP traffic (exposed)", t0 - ep, t0))
            if dp > 0:
                spans.append(Span(s, "dp", "dp reduce-scatter/all-gather (exposed)", t0, t0 + dp))
            spans.append(Span(s, "optimizer", "optimizer step", t0 + dp, t0 + dp + opt))
        return chrome_trace(self.timeline, spans=spans, stage_names=[f"pipeline rank {s}" for s in
                                                                     range(self.layout.pp)],
                            title=f"{self.model} on {self.fabric}")

    @property
    def tokens_per_s(self) -> float:
        return self.tokens_per_s_per_gpu * self.layout.gpus

    def hottest_links(self, top: int = 5) -> list[dict]:
        """The most utilised links of every simulated phase, with the groups crossing them."""
        rows = []
        for ph in self.traffic.phases:
            if ph.report is None:
                continue
            for ls in ph.report.hottest[:top]:
                rows.append({"phase": ph.name, "link": ls.name, "tier": ls.tier, "utilization": ls.utilization,
                             "groups": [g for g, _ in ls.groups[:4]]})
        rows.sort(key=lambda r: -r["utilization"])
        return rows[:top * 2]

    def as_dict(self) -> dict:
        out = {"model": self.model, "system": self.system, "fabric": self.fabric,
               "layout": self.layout.as_dict(), "step_time_s": self.step_time_s,
               "breakdown": dict(self.breakdown_s), "tokens_per_s_per_gpu": self.tokens_per_s_per_gpu,
               "tokens_per_s": self.tokens_per_s, "tflops_per_gpu": self.tflops_per_gpu,
               "flops_per_token": self.flops_per_token, "flops_convention": self.flops_convention,
               "mfu_bf16": self.mfu_bf16, "mfu_fp8": self.mfu_fp8,
               "memory_per_gpu_GiB": self.memory.as_dict(),
               "memory_exceeds_hbm": not self.memory.fits(catalog.gpu(self.gpu).hbm_bytes),
               "placement": self.placement,
               "comm_us": {k: v * 1e6 for k, v in self.comm_s.items()}, "pipeline": self.pipeline,
               "overlap": list(self.overlap), "routing": self.routing, "policy": self.policy,
               "phases": [p.as_dict() for p in self.traffic.phases]}
        if any(p.report is not None for p in self.traffic.phases):
            out["hottest_links"] = self.hottest_links()
        return out


def estimate_step(spec, lay: Layout, system: str, *, sets: dict | None = None, gpus_per_domain: int | None = None,
                  placement: str = "megatron", ep_in_domain: bool = False, overlap: str | Overlap | None = None,
                  routing: str = "balanced", policy: str = "auto", seed: int = 0, fail=(), degrade=(),
                  pp_layout: str | None = None, attention_precision: str = "auto", report: bool = False,
                  check_memory: bool = True, progress=None, reuse: dict | None = None) -> StepResult:
    """Estimate one training step of ``spec`` under ``lay`` on ``system`` (a domain preset).

    Parameters
    ----------
    system : str
        A domain preset (``gb300-nvl72``, ``hgx-h100``, ...) or a topology spec file describing
        NVLink domains of a catalog GPU (used as written; ``--gpus`` must fit in it).
    sets : dict, optional
        ``--set`` overrides of the cluster (``scaleout``, ``nic``, ``oversubscription``, ...).
    gpus_per_domain : int, optional
        GPUs used per NVLink domain (default :func:`workloads.layout.default_gpus_per_domain`).
    placement, ep_in_domain : see :func:`workloads.layout.place`.
    overlap : str or Overlap
        See :func:`parse_overlap`.
    routing : one of :data:`workloads.traffic.ROUTINGS`.
    policy : {"auto", "ecmp", "dmodk", "spray"}
        Scale-out load balancing; ``auto`` routes as the cluster's switches forward
        (:func:`collectives.runner.fabric_policy`: InfiniBand by destination = d-mod-k,
        Spectrum-X and EFA spraying, other Ethernet ECMP).
    fail, degrade : failure selectors (as ``fabric-emu run``).
    check_memory : bool
        Refuse a layout whose estimated memory exceeds HBM (validation turns it off to compare
        throughput of published runs and reports the memory beside it).
    reuse : dict, optional
        A store the caller keeps across calls (e.g. a validation run): the built fabric, its
        router and a :class:`workloads.traffic.SharedPlanner` per (preset cluster, overrides,
        policy, seed) are kept in it and reused by later calls on the same cluster without
        failures. Results are identical to calls without it.
    """
    if routing not in ROUTINGS:
        raise SpecError(f"--moe-routing: {routing!r} is not one of {', '.join(ROUTINGS)}")
    graph = None
    if system.lower().endswith((".toml", ".json", ".graphml")):  # a spec file: the cluster as written
        graph = load_topology(system, sets or None)
        meta = graph.graph.get("meta", {})
        if not meta.get("gpu") or not meta.get("domain_gpus"):
            raise SpecError(f"--system {system!r}: the spec must describe NVLink domains of a catalog GPU "
                            f"([domain] gpu = ...); a bare fabric has no GPUs to train on")
        gpu = catalog.gpu(meta["gpu"]).name
        if gpus_per_domain is None:
            gpus_per_domain = int(meta["domain_gpus"])
    else:
        gpu = _preset_gpu(system)
    attention_precision = attention_precision_for(gpu, lay.precision, attention_precision, spec.attention)
    gspec = catalog.gpu(gpu)
    lay.check_model(layers=spec.n_layers, heads=spec.n_heads, kv_heads=spec.n_kv_heads, experts=spec.n_experts,
                    ffn=spec.ffn_hidden if spec.n_dense_layers else 0, moe_ffn=spec.moe_ffn_hidden or None)
    ov = overlap if isinstance(overlap, Overlap) else parse_overlap(overlap, moe=spec.is_moe, schedule=lay.schedule)
    stages = virtual_stages(spec.moe_layer_pattern, spec.mtp_layers, lay, pp_layout)
    mem = memory_per_gpu(spec, lay, pp_layout=pp_layout)
    if check_memory:
        check_fits(mem, gspec.hbm_bytes, gpu)
    gpd = gpus_per_domain or default_gpus_per_domain(gpu, lay)
    pl = place(lay, gpus_per_domain=gpd, mode=placement, ep_in_domain=ep_in_domain)
    shared = None
    if graph is None:
        name, overrides = cluster_for(system, pl, sets)
        key = ("cluster", name, repr(sorted(overrides.items())))
        if reuse is not None and not fail and not degrade and key in reuse:
            shared = reuse[key]
            graph = shared["graph"]
        else:
            if progress:
                progress(f"building {name} x {pl.domains} ({lay.gpus} GPUs) ...")
            graph = build(name, overrides)
            if reuse is not None and not fail and not degrade:
                shared = reuse[key] = {"graph": graph}
    else:
        overrides = {"file": system}
        if int(graph.graph["meta"].get("domain_gpus", gpd)) != gpd:
            raise SpecError(f"--gpus-per-domain {gpd}: the spec's domains have {graph.graph['meta']['domain_gpus']} "
                            f"GPUs; edit the spec instead")
    if shared is not None and "router" in shared:
        cf, router = shared["cf"], shared["router"]
    else:
        cf = compile_with_failures(graph, fail, degrade)
        router = Router(cf)
        if shared is not None:
            shared.update(cf=cf, router=router)
    if cf.n_gpus < int(pl.gpu_of.max()) + 1:
        raise SpecError(f"--gpus {lay.gpus}: the cluster has only {cf.n_gpus} GPUs ({overrides})")
    pol = resolve_policy(router, policy)  # auto: as the cluster's scale-out switches forward
    planner = None
    if shared is not None:
        planner = shared.get(("planner", pol, seed))
        if planner is None:
            planner = shared[("planner", pol, seed)] = SharedPlanner(planner_for(router, policy=pol, seed=seed))
    # ---- compute per layer kind
    kinds = sorted({k for s in stages for k in s})
    lt = {k: layer_times(spec, lay, gpu, k, attention_precision=attention_precision) for k in kinds}
    # ---- communication, every pattern once with all of its groups
    stage_params = params_per_gpu(spec, lay, stages)
    traffic = step_traffic(router, spec, lay, pl, stage_params, routing=routing, seed=seed, policy=pol,
                           report=report, progress=(lambda n, k, m: progress(f"simulating {n} traffic [{k}/{m}]"))
                           if progress else None,
                           # EP and DP meet only when the DP traffic runs under the compute (ZeRO-1 overlap)
                           concurrent=lay.optimizer != "fsdp" and (ov.dp_grad or ov.dp_param), planner=planner)
    c = {k: traffic.time(k) for k in ("tp_ag", "tp_rs", "etp_ag", "etp_rs", "cp_ag", "ep_dispatch", "ep_combine",
                                       "pp_send", "dp_rs", "dp_ag", "edp_rs", "edp_ag", "ep_dispatch_dp", "ep_combine_dp",
                                       "dp_rs_ep", "edp_rs_ep")}
    tp_pass = 2 * (c["tp_ag"] + c["tp_rs"])           # attention + MLP, one pass of one layer
    etp_pass = c["etp_ag"] + c["etp_rs"]
    ep_pass = c["ep_dispatch"] + c["ep_combine"]      # one pass (fwd or bwd) of one MoE layer
    # Megatron's EP A2A overlap pairs forward and backward: with PP it needs the interleaved schedule
    a2a = ov.ep and spec.is_moe and lay.ep > 1 and (lay.schedule != "1f1b" or lay.pp == 1)
    parts = {k: np.zeros(lay.pp) for k in ("compute", "compute_tc", "tp", "cp", "framework", "dense_passes", "moe_passes")}
    shape = (lay.pp, lay.chunks)
    cost = {k: np.zeros(shape) for k in ("F", "B", "W", "cF", "cB", "xF", "xB")}
    for v, layer_kinds in enumerate(stages):
        p, ch = stage_of_virtual(v, lay)
        for k in layer_kinds:
            t = lt[k]
            f, b, w = t.fwd_s, t.bwd_s, t.wgrad_s
            parts["compute"][p] += f + b + w
            parts["compute_tc"][p] += t.tensor_core_s
            if k in ("dense", "moe", "mtp"):
                is_moe = k == "moe" or (k == "mtp" and spec.mtp_layer_is_moe)
                overhead = framework_overhead_s(gpu) if is_moe else 0.0
                parts["moe_passes" if is_moe else "dense_passes"][p] += 2
                parts["framework"][p] += 2 * overhead
                f, b = f + overhead, b + overhead
                # TP: hidden under the pass's GEMMs with TP overlap
                tf = tp_pass + (etp_pass if is_moe else 0.0)
                e_tf = max(0.0, tf - t.gemm_fwd_s) if ov.tp else tf
                e_tb = max(0.0, tf - t.gemm_bwd_s) if ov.tp else tf
                # CP: the K/V ring hides under the attention core
                e_cf = max(0.0, c["cp_ag"] - t.attn_fwd_s)
                e_cb = max(0.0, c["cp_ag"] - t.attn_bwd_s)
                cost["xF"][p, ch] += e_tf + e_cf
                cost["xB"][p, ch] += e_tb + e_cb
                parts["tp"][p] += e_tf + e_tb
                parts["cp"][p] += e_cf + e_cb
                if is_moe:
                    cost["cF"][p, ch] += ep_pass
                    cost["cB"][p, ch] += ep_pass
                    if a2a:  # the comm kernels hold SMs while they overlap compute
                        steal = SM_SHARE_EP_COMM / (1 - SM_SHARE_EP_COMM) * ep_pass
                        cost["xF"][p, ch] += steal
                        cost["xB"][p, ch] += steal
            cost["F"][p, ch] += f
            cost["B"][p, ch] += b
            cost["W"][p, ch] += w
    p2p = c["pp_send"] if lay.pp > 1 else 0.0
    pipe_res = simulate_pipeline(lay.schedule, lay.pp, lay.microbatches, vpp=lay.chunks, forward_s=cost["F"],
                                 backward_s=cost["B"], weight_s=cost["W"], p2p_s=p2p, forward_comm_s=cost["cF"],
                                 backward_comm_s=cost["cB"], forward_exposed_s=cost["xF"],
                                 backward_exposed_s=cost["xB"], overlap="a2a" if a2a else "none")
    crit = int(np.argmax(pipe_res.busy_s))
    m = lay.microbatches
    per_rank = [(float(cost["F"][p].sum()), float(cost["B"][p].sum()), float(cost["W"][p].sum()))
                for p in range(lay.pp)]
    # ---- data parallel: reduce-scatter of gradients, all-gather of parameters (dense and expert together)
    rank_fwd = max(r[0] for r in per_rank)
    rank_bwd = max(r[1] + r[2] for r in per_rank)
    t_rs = max(c["dp_rs"], c["edp_rs"])
    t_ag = max(c["dp_ag"], c["edp_ag"])
    # DP and EP traffic together (the ``ep+dp`` phase): the reduce-scatter runs under the last backward
    # (the all-gather under the first forward), whose MoE layers dispatch and combine meanwhile. The joint
    # simulation gives one pass's interference (``slow`` on the DP collective, the EP pass's own slow-down);
    # a DP collective of ``t`` seconds meets the passes of its own lifetime, one every ``period`` seconds
    # (the window's compute over its MoE passes): ``t' = t + slow t' / period``, at most every pass of the window.
    n_win = float(parts["moe_passes"][crit]) / 2
    ep_extra = 0.0
    if traffic.phase("ep+dp") is not None and lay.optimizer != "fsdp" and n_win > 0:
        ep_dp = c["ep_dispatch_dp"] + c["ep_combine_dp"]
        # a pass holding shared links for ep_dp seconds delays a fair-shared collective by at most that
        slow = min(ep_dp, max(max(0.0, c["dp_rs_ep"] - c["dp_rs"]), max(0.0, c["edp_rs_ep"] - c["edp_rs"])))
        hide = max(ep_pass, lt["moe"].total_s / 2) if a2a and "moe" in lt else ep_pass
        for on, window in ((ov.dp_grad, rank_bwd), (ov.dp_param, rank_fwd)):
            if not on:
                continue
            period = window / n_win
            t_dp = t_rs if window is rank_bwd else t_ag
            met = n_win if slow >= period else min(n_win, t_dp / (1 - slow / period) / period)
            if window is rank_bwd:
                t_rs += met * slow
            else:
                t_ag += met * slow
            ep_extra += met * max(0.0, ep_dp - hide)
    if lay.optimizer == "fsdp":  # per micro-batch: gather for forward and backward, reduce-scatter gradients
        per_mb = 2 * t_ag + t_rs
        busy = rank_fwd + rank_bwd
        dp_exposed = lay.microbatches * (max(0.0, per_mb - busy) if (ov.dp_grad and ov.dp_param) else per_mb)
    else:
        e_rs = (max(0.0, t_rs - rank_bwd) + _bucket_tail(t_rs, stage_params, lay)) if ov.dp_grad else t_rs
        e_ag = (max(0.0, t_ag - rank_fwd) + _bucket_tail(t_ag, stage_params, lay)) if ov.dp_param else t_ag
        dp_exposed = e_rs + e_ag
    # ---- optimizer step: Adam on the GPU's shard (memory-bound)
    dense, expert = max(stage_params, key=lambda x: x[0] + x[1])
    shard = dense / (lay.dp * lay.cp) + expert / lay.edp if lay.optimizer != "none" else dense + expert
    opt_s = float(cm.memory_time_s(gpu, shard * _ADAM_BYTES_PER_PARAM))
    step_s = pipe_res.makespan_s + ep_extra + dp_exposed + opt_s
    compute = m * parts["compute"][crit]
    framework = m * parts["framework"][crit]
    tp_x, cp_x = m * parts["tp"][crit], m * parts["cp"][crit]
    # what the stage waited for beyond its compute and never-hidden communication: EP all-to-all not
    # hidden (and the SMs its kernels held), pipeline sends it waited for inside the busy time
    ep_x = max(0.0, float(pipe_res.busy_s[crit]) - compute - framework - tp_x - cp_x)
    ep_x = ep_x + ep_extra if spec.is_moe else ep_x
    breakdown = {"compute": compute, "tp_exposed": tp_x, "ep_exposed": ep_x if spec.is_moe else 0.0,
                 "cp_exposed": cp_x, "pp_exposed": 0.0 if spec.is_moe else ep_x, "framework": framework,
                 "bubble": float(pipe_res.bubble_s), "dp_exposed": dp_exposed, "optimizer": opt_s}
    pipe = {"schedule": lay.schedule, "makespan_s": float(pipe_res.makespan_s),
            "bubble_s": float(pipe_res.bubble_s), "bubble_fraction": float(pipe_res.bubble_s / step_s),
            "microbatches": m, "critical_rank": crit, "overlap": pipe_res.overlap,
            "tensor_core_s": m * float(parts["compute_tc"][crit]),
            "layer_passes": {"dense": m * parts["dense_passes"][crit], "moe": m * parts["moe_passes"][crit]}}
    tokens_s_gpu = lay.tokens_per_step / step_s / lay.gpus
    fpt = flops_per_token(spec, lay.seq_len, convention="megatron", mtp=spec.mtp_layers > 0)
    tflops = fpt * tokens_s_gpu / 1e12
    return StepResult(
        model=spec.name, system=system, gpu=gpu, layout=lay, step_time_s=step_s, breakdown_s=breakdown,
        tokens_per_s_per_gpu=tokens_s_gpu, tflops_per_gpu=tflops, flops_per_token=fpt,
        flops_convention="megatron (causal attention halved, MTP counted, active experts only)",
        mfu_bf16=tflops * 1e12 / gspec.peak_bf16_flops,
        mfu_fp8=tflops * 1e12 / gspec.peak_fp8_flops if gspec.peak_fp8_flops else float("nan"),
        memory=mem, placement=pl.as_dict() | {"fabric_overrides": {k: str(v) for k, v in overrides.items()}},
        fabric=cf.name, comm_s={k: v for k, v in c.items() if v}, stage_times_s=tuple(tuple(r) for r in per_rank),
        pipeline=pipe, overlap=tuple(ov.names()), traffic=traffic, routing=routing, policy=pol,
        timeline=pipe_res.timeline, tail_s=(ep_extra, dp_exposed, opt_s))


#: Adam step bytes per parameter of the shard: read fp32 master, gradient, two moments; write the
#: master, the moments and the BF16 copy; one more read of the gradients for the norm (clipping).
_ADAM_BYTES_PER_PARAM = 4 * 4 + 3 * 4 + 2 + 4


def _bucket_tail(t: float, stage_params, lay: Layout) -> float:
    """The last gradient bucket cannot hide: Megatron-Core's default bucket is
    ``max(40e6, 1e6 * dp)`` parameters (``distributed_data_parallel.py``)."""
    params = max(d + e for d, e in stage_params)
    if params <= 0:
        return 0.0
    bucket = max(40e6, 1e6 * lay.dp)
    return t * min(1.0, bucket / params)
