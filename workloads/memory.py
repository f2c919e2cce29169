"""Memory per GPU of a training job: weights, gradients, optimizer state, activations.

Bytes per parameter follow Megatron-LM's own estimate
(``megatron/training/theoretical_memory_usage.py``): BF16 weights (2 B), FP32
main gradients (4 B) and, for Adam, FP32 master weights plus two FP32 moments
(12 B), which the distributed optimizer (ZeRO-1) shards over the data-parallel
ranks holding the same parameters (dense parameters over ``dp x cp``, expert
parameters over the expert-DP ranks); FSDP shards all 18 B. The busiest
pipeline rank is reported (the first: it holds the embedding and the most
micro-batches in flight).

Activations are the tensors the backward pass needs, counted per token and
layer from the layer's structure (BF16, 2 B an element) and divided by TP (with
sequence parallelism every saved tensor is split) and CP:

* every RMSNorm input (``h`` each), every linear layer's input, the attention
  core's ``q``, ``k``, ``v``, output and log-sum-exp (flash attention keeps no
  score matrix), the SwiGLU input (``2 F``) and output (``F``);
* MoE: the router input, every routed copy (``topk``) of the expert inputs and
  intermediates, the shared expert like a dense MLP.

Recompute: ``selective`` recomputes the norms, the SwiGLU and the MLA
up-projections (Megatron-Core ``--recompute-modules layernorm moe_act mla_up_proj``),
``full`` keeps only each layer's input. Micro-batches in flight on the first
pipeline rank: ``pp`` for 1F1B, ``pp (1 + (pp - 1) / (pp vpp))`` for the
interleaved schedule (Megatron's theoretical memory), ``pp + 1`` for DualPipe
(DualPipe README), each of the rank's layers.

Examples
--------
>>> from workloads.models import get_model
>>> from workloads.layout import Layout
>>> m = memory_per_gpu(get_model("llama3-8b"), Layout(gpus=8, global_batch=8, seq_len=8192))
>>> round(m.weights_bytes / 2**30, 1), m.fits(80e9)
(15.0, False)
"""

from __future__ import annotations

from dataclasses import dataclass

from topologies.errors import SpecError
from workloads.flops import param_counts
from workloads.layout import Layout, stage_of_virtual, virtual_stages

__all__ = ["BYTES_PER_PARAM", "ACT_BYTES", "REFUSAL_MARGIN", "Memory", "params_per_gpu", "activation_bytes_per_token",
           "inflight_microbatches", "memory_per_gpu", "check_fits"]

#: Megatron-LM theoretical_memory_usage.py: weights (bf16) + grads (fp32), and Adam state
#: (fp32 master + 2 fp32 moments) that the distributed optimizer shards over DP.
BYTES_PER_PARAM = {"weights": 2.0, "grads": 4.0, "optimizer": 12.0}
#: Bytes of one saved activation element (BF16).
ACT_BYTES = 2.0
#: A layout is refused when its estimate exceeds HBM by more than this factor. The estimate is
#: conservative for pipelined dense runs: published runs reach 1.24 x HBM (Llama 3.1 405B on GB200,
#: TP4 PP16 VP4, Megatron-Bridge 26.06: 214.7 GiB estimated, 173.2 GiB of HBM), 1.15 x (405B MXFP8 on
#: GB300) and 1.12 x (405B MXFP8 on GB200); the largest observed ratio, rounded up, is the margin.
#: Between 1 and this factor the estimate is reported as exceeding HBM, not refused.
REFUSAL_MARGIN = 1.25


@dataclass(frozen=True)
class Memory:
    """Bytes per GPU, by part (the busiest pipeline rank)."""

    weights_bytes: float
    grads_bytes: float
    optimizer_bytes: float
    activations_bytes: float
    params_dense: float
    params_expert: float
    inflight_microbatches: float

    @property
    def total_bytes(self) -> float:
        return self.weights_bytes + self.grads_bytes + self.optimizer_bytes + self.activations_bytes

    def fits(self, hbm_bytes: float) -> bool:
        return self.total_bytes <= hbm_bytes

    def as_dict(self) -> dict:
        g = 2.0 ** 30
        return {"weights": self.weights_bytes / g, "grads": self.grads_bytes / g,
                "optimizer": self.optimizer_bytes / g, "activations": self.activations_bytes / g,
                "total": self.total_bytes / g}


def params_per_gpu(spec, lay: Layout, stages: list[list[str]] | None = None) -> list[tuple[float, float]]:
    """(dense, expert) parameters held by one GPU of every pipeline rank.

    Dense parameters (attention, dense MLPs, norms, router, shared experts, embedding,
    head, MTP projections) are split over TP; routed experts over EP x ETP.
    """
    pc = param_counts(spec)
    stages = stages or virtual_stages(spec.moe_layer_pattern, spec.mtp_layers, lay)
    out = [[0.0, 0.0] for _ in range(lay.pp)]
    mtp_own = (pc.mtp_total - (pc.attention_per_layer + (pc.moe_per_layer if spec.mtp_layer_is_moe
                                                         else pc.dense_mlp_per_layer)) * spec.mtp_layers)
    mtp_own = mtp_own / max(spec.mtp_layers, 1)
    for v, kinds in enumerate(stages):
        p, _ = stage_of_virtual(v, lay)
        for k in kinds:
            moe = k == "moe" or (k == "mtp" and spec.mtp_layer_is_moe)
            dense = 0.0
            if k == "embed":
                dense = pc.embedding
            elif k == "head":
                dense = pc.output_head + pc.final_norm
            else:
                dense = pc.attention_per_layer + (pc.moe_norm + pc.router + pc.shared_experts if moe
                                                  else pc.dense_mlp_per_layer)
                if k == "mtp":
                    dense += mtp_own
            out[p][0] += dense / lay.tp
            if moe:
                out[p][1] += pc.n_experts * pc.expert / (lay.ep * lay.etp)
    return [tuple(x) for x in out]


def activation_bytes_per_token(spec, kind: str, recompute: str = "none") -> float:
    """Saved activation bytes of one token in one layer of ``kind`` (before TP/CP splitting).

    Examples
    --------
    >>> from workloads.models import get_model
    >>> round(activation_bytes_per_token(get_model("llama3-8b"), "dense") / 1e3, 1)
    139.3
    >>> activation_bytes_per_token(get_model("llama3-8b"), "dense", "full")
    8192.0
    """
    h = spec.hidden
    if kind in ("embed", "head"):
        return 0.0
    if recompute == "full":
        return ACT_BYTES * h
    sel = recompute == "selective"                          # norms, activation functions, MLA up-projections
    sel_mla = sel or recompute == "mla_up_proj"
    nh, nkv = spec.n_heads, spec.n_kv_heads
    dqk, dv = spec.qk_head_dim, spec.v_dim
    norms = 0 if sel else 2 * h
    if spec.attention == "mla":
        ql = spec.q_lora_rank or 0
        kvl = spec.kv_lora_rank + spec.qk_rope_head_dim
        # q_a / kv_a input (shared), latent norms, q_b / kv_b inputs; up-projected q, k, v, o, lse
        latent = h + ((0 if sel else ql + kvl) + ql + spec.kv_lora_rank)
        core = nh * (2 * dqk + 2 * dv) + nh
        if sel_mla:  # MLA up-projection outputs recomputed; the core keeps only o and lse
            core = nh * dv + nh
        attn = latent + core + nh * dv  # o_proj input
    else:
        attn = h + nh * dqk + nkv * (dqk + dv) + nh * dv + nh  # qkv input, q, k, v, o, lse
    gate = 2 if spec.gated else 1

    def mlp(f: int) -> float:  # fc1 input, activation input (gated: 2F), fc2 input
        return h + (0 if sel else gate * f) + f

    if kind == "dense" or (kind == "mtp" and not spec.mtp_layer_is_moe):
        ffn = mlp(spec.ffn_hidden)
    else:
        # router input (also the shared expert's input), topk permuted copies with their intermediates
        shared = mlp(spec.shared_expert_ffn_hidden) - h if spec.shared_expert_ffn_hidden else 0
        ffn = h + spec.topk * mlp(spec.moe_ffn_hidden) + shared
    extra = 2 * h if kind == "mtp" else 0  # eh_proj input
    return ACT_BYTES * (norms + attn + ffn + extra)


def inflight_microbatches(lay: Layout, rank: int = 0) -> float:
    """Micro-batches whose activations pipeline rank ``rank`` holds at its peak.

    1F1B: ``pp - rank``; interleaved: ``(2 (pp - rank - 1) + (vpp - 1) pp + 1) / vpp`` chunk
    micro-batches of ``1 / vpp`` of the layers (``pp (1 + (pp - 1) / (pp vpp))`` on rank 0, as
    Megatron's theoretical memory); DualPipe ``pp + 1``; never more than the step's micro-batches.

    Examples
    --------
    >>> lay = Layout(gpus=16, pp=4, vpp=2, global_batch=64)
    >>> inflight_microbatches(lay), inflight_microbatches(Layout(gpus=16, pp=4, global_batch=64), 3)
    (5.5, 1.0)
    """
    if lay.schedule == "dualpipe":
        n = lay.pp + 1.0
    elif lay.schedule == "interleaved":
        n = (2 * (lay.pp - rank - 1) + (lay.vpp - 1) * lay.pp + 1) / lay.vpp
    else:
        n = float(lay.pp - rank)
    return min(n, float(lay.microbatches))


def memory_per_gpu(spec, lay: Layout, *, pp_layout: str | None = None) -> Memory:
    """Memory of the busiest pipeline rank (see the module docstring)."""
    stages = virtual_stages(spec.moe_layer_pattern, spec.mtp_layers, lay, pp_layout)
    per_rank = params_per_gpu(spec, lay, stages)
    tokens = lay.micro_batch * lay.seq_len / (lay.tp * lay.cp)
    best = None
    for p in range(lay.pp):
        dense, expert = per_rank[p]
        params = dense + expert
        if lay.optimizer == "fsdp":
            weights = BYTES_PER_PARAM["weights"] * (dense / lay.dp + expert / lay.edp)
            grads = BYTES_PER_PARAM["grads"] * (dense / lay.dp + expert / lay.edp)
        else:
            weights = BYTES_PER_PARAM["weights"] * params
            grads = BYTES_PER_PARAM["grads"] * params
        if lay.optimizer == "none":
            opt = BYTES_PER_PARAM["optimizer"] * params
        else:
            opt = BYTES_PER_PARAM["optimizer"] * (dense / (lay.dp * lay.cp) + expert / lay.edp)
        if lay.schedule == "dualpipe":  # two copies of the parameters (DualPipe README)
            weights, grads = 2 * weights, 2 * grads
        act_layer = 0.0
        for v, kinds in enumerate(stages):
            if stage_of_virtual(v, lay)[0] != p:
                continue
            act_layer += sum(activation_bytes_per_token(spec, k, lay.recompute) for k in kinds)
        inflight = inflight_microbatches(lay, p)
        act = act_layer * tokens * inflight
        m = Memory(weights, grads, opt, act, dense, expert, inflight)
        if best is None or m.total_bytes > best.total_bytes:
            best = m
    return best


def check_fits(mem: Memory, hbm_bytes: float, gpu_name: str) -> None:
    """SpecError naming the parts when ``mem`` exceeds ``hbm_bytes`` by more than :data:`REFUSAL_MARGIN`."""
    if mem.total_bytes > hbm_bytes * REFUSAL_MARGIN:
        d = mem.as_dict()
        raise SpecError(f"memory: {d['total']:.1f} GiB per GPU (weights {d['weights']:.1f}, grads {d['grads']:.1f}, "
                        f"optimizer {d['optimizer']:.1f}, activations {d['activations']:.1f}) exceeds the "
                        f"{hbm_bytes / 2**30:.1f} GiB of a {gpu_name} (x {REFUSAL_MARGIN} margin of the estimate); "
                        f"raise tp/pp/ep, recompute, or shrink the micro-batch")
