"""Operator inventory of a transformer layer on one rank, for the compute model.

:func:`layer_ops` lists, for one layer kind (``"dense"``, ``"moe"``, ``"mtp"``,
``"embedding"``, ``"lm_head"``) and one micro-batch, the operators a rank runs in the forward
and backward pass under a parallel :class:`Split` (TP with sequence parallelism, CP, EP with
expert-TP), the way Megatron-Core lays them out:

* GEMMs ``C[M,N] = A[M,K] B[K,N]`` with M the token rows. Forward ``name:fwd`` is
  ``(M, N, K)``; backward is ``name:dgrad`` ``(M, K, N)`` (input gradient) and ``name:wgrad``
  ``(K, N, M)`` (weight gradient), the naming of ``h200_gemm_attention.csv``
  (``mla_q_a``, ``mla_q_b``, ``mla_kv_a``, ``mla_kv_b``, ``attn_out``, ``dense_up_gate``,
  ``dense_down``, ``shared_up_gate``, ``shared_down``, ``expert_up_gate``, ``expert_down``,
  ``lm_head``; GQA adds ``attn_qkv``, non-gated MLPs use ``*_up``).
* Column-parallel GEMMs split N by ``tp``, row-parallel ones split K; with sequence
  parallelism they run on the all-gathered ``T = micro_batch * seq_len / cp`` tokens, and norms,
  residual adds and the MoE router on the ``T / tp`` tokens of the rank's sequence shard. The
  output GEMM's N is the rank's shard of the vocabulary padded to a multiple of ``128 tp``
  (Megatron). MLA's
  down-projections (``mla_q_a``, ``mla_kv_a``) are replicated weights applied to the sequence
  shard (duplicated on all ``T`` tokens without sequence parallelism); the latent norms run on
  all ``T`` tokens on every TP rank (Megatron-Core ``MLASelfAttention``).
* Routed experts are ``grouped_gemm`` ops with ``groups`` = local experts ``n_experts / ep``
  and M = tokens per local expert (``ep * etp * (T/tp) * topk / n_experts`` when balanced, or
  ``tokens_per_expert``), N split by ``etp``.
* Attention is one ``attention`` op per pass: ``batch, heads = n_heads/tp, kv_heads`` (GQA:
  ``n_kv_heads/tp``; MLA: ``heads``), ``seq_q = seq_len/cp,
  seq_kv = seq_len, d_qk, d_v, causal``; context parallelism is load-balanced, so a rank
  does ``1/cp`` of the causal work.
* Memory-bound ops (``kind="memory"``) carry ``bytes_moved``, with per token and activation
  element of ``act_bytes`` bytes (bf16: 2): RMSNorm forward reads x and writes y (2w elements),
  backward reads x and dy and writes dx (3w); residual add reads two and writes one (3w, both
  passes); SwiGLU forward reads gate and up and writes one (3f), backward reads gate, up and dy
  and writes two (5f); GeLU 2f / 3f; RoPE reads and writes the rotary part (2r, both passes);
  router top-k reads the fp32 logits and writes fp32 weights and int32 indices (4E + 8k bytes);
  permute copies each token the rank routes, at the source (2 k h); unpermute reads the k
  returned copies and writes one token ((k+1) h); the embedding lookup reads and writes a row
  (2h), its backward reads dy and updates an fp32 gradient row (``h * act_bytes + 8 h`` bytes);
  cross-entropy reads the logit shard (V/tp) forward and reads and writes it backward.
  Activation expert rows use the rows the rank's experts process.

Every op has two FLOP figures: ``flops`` (the work the rank does: ``2 M N K groups`` for
GEMMs, FlashAttention's 2 forward and 5 backward products (Dao, FlashAttention-2, 2023,
algorithm 2) halved for the causal mask, 0 for memory ops) and ``model_flops`` (the rank's
share of the Megatron-convention count of :mod:`workloads.flops`: duplicated work is credited
``1/tp``, the router and Qwen3's query/key norms are not counted, attention backward is 2x
forward, routed experts at balanced load). Summed over a model's layers, ``model_flops`` times
``tp * cp`` equals ``flops_per_token(spec, seq_len) * micro_batch * seq_len`` (tested).

Examples
--------
>>> from workloads.models import get_model
>>> ops = layer_ops(get_model("deepseek-v3"), "moe", micro_batch=1, seq_len=4096, split=Split(ep=32))
>>> [(o.name, o.m, o.n, o.k) for o in ops if o.phase == "fwd" and o.kind == "gemm"][:2]
[('mla_q_a:fwd', 4096, 1536, 7168), ('mla_q_b:fwd', 4096, 24576, 1536)]
>>> up = next(o for o in ops if o.name == "expert_up_gate:fwd")
>>> up.kind, up.groups, up.m, up.n, up.k
('grouped_gemm', 8, 4096, 4096, 7168)
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from topologies.errors import SpecError
from workloads.models import ModelSpec

__all__ = [
    "OP_KINDS",
    "LAYER_KINDS",
    "Op",
    "Split",
    "LayerOps",
    "layer_ops",
    "model_ops",
]

#: Operator kinds.
OP_KINDS = ("gemm", "grouped_gemm", "attention", "memory")
#: Layer kinds :func:`layer_ops` builds.
LAYER_KINDS = ("embedding", "dense", "moe", "mtp", "lm_head")

_ROUTER_BYTES_PER_EXPERT = 4  # fp32 router logits
_ROUTER_BYTES_PER_CHOICE = 8  # fp32 weight + int32 index per chosen expert
_GRAD_ACCUM_BYTES = 4         # fp32 embedding-gradient rows (read + write = 8 bytes)
#: Megatron pads the vocabulary to a multiple of this times TP (``--make-vocab-size-divisible-by``
#: default, ``megatron/training/tokenizer`` ``_vocab_size_with_padding``); the output GEMM runs on
#: the padded shard, the FLOP credit stays with the real vocabulary.
VOCAB_PAD_MULTIPLE = 128


@dataclass(frozen=True)
class Op:
    """One operator of one pass on one rank (see the module docstring for the conventions)."""

    name: str
    kind: str
    phase: str           # "fwd", "dgrad", "wgrad" (GEMMs) or "bwd" (attention, memory ops)
    component: str       # "attention_proj", "core_attention", "mlp", "logits", "mtp", "other"
    m: float = 0         # GEMM rows (mean rows per group for grouped GEMMs)
    n: int = 0
    k: int = 0
    groups: int = 1
    batch: int = 0
    heads: int = 0
    kv_heads: int = 0
    seq_q: int = 0
    seq_kv: int = 0
    d_qk: int = 0
    d_v: int = 0
    causal: bool = False
    bytes_moved: float = 0.0
    flops: float = 0.0
    model_flops: float = 0.0

    def operand_bytes(self, elem_bytes: float) -> float:
        """Bytes of A, B and C of a GEMM at ``elem_bytes`` per element (0 for other kinds)."""
        if self.kind not in ("gemm", "grouped_gemm"):
            return 0.0
        return (self.m * self.k + self.k * self.n + self.m * self.n) * self.groups * elem_bytes


@dataclass(frozen=True)
class Split:
    """Parallel split of one layer: tensor (``tp``, ``sp`` = sequence parallelism), context
    (``cp``), expert (``ep``) and expert-tensor (``etp``) parallel sizes."""

    tp: int = 1
    sp: bool = True
    cp: int = 1
    ep: int = 1
    etp: int = 1

    def __post_init__(self) -> None:
        for f in ("tp", "cp", "ep", "etp"):
            v = getattr(self, f)
            if isinstance(v, bool) or not isinstance(v, int) or v < 1:
                raise SpecError(f"{f} = {v!r}: must be an integer >= 1")
        if not isinstance(self.sp, bool):
            raise SpecError(f"sp = {self.sp!r}: must be true or false")


@dataclass(frozen=True)
class LayerOps:
    """The ops of one layer kind and how many such layers the model has."""

    kind: str
    count: int
    ops: tuple[Op, ...]

    @property
    def model_flops(self) -> float:
        return self.count * sum(o.model_flops for o in self.ops)


def _check(spec: ModelSpec, kind: str, micro_batch: int, seq_len: int, split: Split) -> None:
    if not isinstance(spec, ModelSpec):
        raise SpecError(f"model: expected a ModelSpec, got {type(spec).__name__}")
    if not isinstance(split, Split):
        raise SpecError(f"split: expected a Split, got {type(split).__name__}")
    if kind not in LAYER_KINDS:
        raise SpecError(f"layer kind {kind!r}: allowed: {', '.join(LAYER_KINDS)}")
    for f, v in (("micro_batch", micro_batch), ("seq_len", seq_len)):
        if isinstance(v, bool) or not isinstance(v, int) or v < 1:
            raise SpecError(f"{f} = {v!r}: must be an integer >= 1")
    tp, cp = split.tp, split.cp
    if spec.hidden % tp:
        raise SpecError(f"tp = {tp}: must divide hidden = {spec.hidden}")
    if spec.n_heads % tp:
        raise SpecError(f"tp = {tp}: must divide n_heads = {spec.n_heads}")
    if spec.attention == "gqa" and spec.n_kv_heads % tp:
        raise SpecError(f"tp = {tp}: must divide n_kv_heads = {spec.n_kv_heads}")
    if spec.n_dense_layers and spec.ffn_hidden % tp:
        raise SpecError(f"tp = {tp}: must divide ffn_hidden = {spec.ffn_hidden}")
    if spec.shared_expert_ffn_hidden % tp:
        raise SpecError(f"tp = {tp}: must divide shared_expert_ffn_hidden = {spec.shared_expert_ffn_hidden}")
    if cp > 1 and seq_len % (2 * cp):
        raise SpecError(f"cp = {cp}: seq_len = {seq_len} must be a multiple of 2 x cp (load-balanced causal split)")
    tokens = micro_batch * seq_len // cp
    if split.sp and tp > 1 and tokens % tp:
        raise SpecError(f"tp = {tp}: must divide the {tokens} tokens of a micro-batch shard (sequence parallelism)")
    if spec.is_moe:
        if spec.n_experts % split.ep:
            raise SpecError(f"ep = {split.ep}: must divide n_experts = {spec.n_experts}")
        if spec.moe_ffn_hidden % split.etp:
            raise SpecError(f"etp = {split.etp}: must divide moe_ffn_hidden = {spec.moe_ffn_hidden}")
        has_moe = kind == "moe" or kind == "mtp" and spec.mtp_layer_is_moe
        if tp > 1 and not split.sp and has_moe:
            raise SpecError(f"sp = False: MoE layers with tp = {tp} need sequence parallelism")
    elif split.ep > 1 or split.etp > 1:
        raise SpecError(f"ep = {split.ep}, etp = {split.etp}: a dense model has no experts (use 1)")


class _Builder:
    """Collects forward ops and derives their backward counterparts."""

    def __init__(self, component: str, act_bytes: float):
        self.fwd: list[Op] = []
        self.bwd: list[Op] = []
        self.component = component
        self.b = act_bytes

    def gemm(self, name, m, n, k, *, groups=1, model_share=1.0, model_m=None):
        kind = "grouped_gemm" if groups > 1 or name.startswith("expert_") else "gemm"
        c = self.component
        work = 2.0 * m * n * k * groups
        credit = (2.0 * (m if model_m is None else model_m) * n * k * groups) * model_share
        self.fwd.append(Op(f"{name}:fwd", kind, "fwd", c, m=m, n=n, k=k, groups=groups, flops=work,
                           model_flops=credit))
        self.bwd.append(Op(f"{name}:wgrad", kind, "wgrad", c, m=k, n=n, k=m, groups=groups, flops=work,
                           model_flops=credit))
        self.bwd.append(Op(f"{name}:dgrad", kind, "dgrad", c, m=m, n=k, k=n, groups=groups, flops=work,
                           model_flops=credit))

    def memory(self, name, fwd_bytes, bwd_bytes, *, model_fwd_flops=0.0):
        c = self.component
        self.fwd.append(Op(f"{name}:fwd", "memory", "fwd", c, bytes_moved=fwd_bytes, model_flops=model_fwd_flops))
        self.bwd.append(Op(f"{name}:bwd", "memory", "bwd", c, bytes_moved=bwd_bytes,
                           model_flops=2.0 * model_fwd_flops))

    def norm(self, name, tokens, width, *, model_share=0.0):
        """RMSNorm; ``model_share`` > 0 credits one FMA per weight per token (Megatron's MLA/MTP norms)."""
        self.memory(name, 2 * tokens * width * self.b, 3 * tokens * width * self.b,
                    model_fwd_flops=2.0 * tokens * width * model_share)

    def residual(self, name, tokens, width):
        self.memory(name, 3 * tokens * width * self.b, 3 * tokens * width * self.b)

    def activation(self, name, tokens, width, gated):
        if gated:
            self.memory(name, 3 * tokens * width * self.b, 5 * tokens * width * self.b)
        else:
            self.memory(name, 2 * tokens * width * self.b, 3 * tokens * width * self.b)

    def attention(self, batch, heads, kv_heads, seq_q, seq_kv, d_qk, d_v, causal=True):
        base = 2.0 * batch * heads * seq_q * seq_kv * (0.5 if causal else 1.0)
        kw = dict(batch=batch, heads=heads, kv_heads=kv_heads, seq_q=seq_q, seq_kv=seq_kv, d_qk=d_qk, d_v=d_v,
                  causal=causal)
        fwd = base * (d_qk + d_v)
        self.fwd.append(Op("core_attention:fwd", "attention", "fwd", "core_attention", flops=fwd,
                           model_flops=fwd, **kw))
        self.bwd.append(Op("core_attention:bwd", "attention", "bwd", "core_attention",
                           flops=base * (3 * d_qk + 2 * d_v), model_flops=2 * fwd, **kw))

    def ops(self) -> tuple[Op, ...]:
        return tuple(self.fwd) + tuple(reversed(self.bwd))


def _attention_block(bld: _Builder, spec: ModelSpec, mb: int, s: int, split: Split) -> None:
    tp, cp = split.tp, split.cp
    T = mb * s // cp
    t_sp = T // tp if split.sp and tp > 1 else T
    h, nh, b = spec.hidden, spec.n_heads // tp, bld.b
    bld.norm("input_norm", t_sp, h)
    if spec.attention == "gqa":
        hd = spec.head_dim
        bld.gemm("attn_qkv", T, (nh + 2 * spec.n_kv_heads // tp) * hd, h)
        if spec.qk_norm:
            bld.norm("qk_norm", T, (nh + spec.n_kv_heads // tp) * hd)
        rope_bytes = 2 * T * (nh + spec.n_kv_heads // tp) * hd * b
        bld.memory("rope", rope_bytes, rope_bytes)
        bld.attention(mb, nh, spec.n_kv_heads // tp, s // cp, s, hd, hd)
        bld.gemm("attn_out", T, h, nh * hd)
    else:
        qk, rope = spec.qk_nope_head_dim + spec.qk_rope_head_dim, spec.qk_rope_head_dim
        down_m, down_share = (t_sp, 1.0) if split.sp or tp == 1 else (T, 1.0 / tp)
        if spec.q_lora_rank is None:
            bld.gemm("mla_q", T, nh * qk, h)
        else:
            bld.gemm("mla_q_a", down_m, spec.q_lora_rank, h, model_share=down_share)
            bld.norm("q_a_norm", T, spec.q_lora_rank, model_share=1.0 / tp)
            bld.gemm("mla_q_b", T, nh * qk, spec.q_lora_rank)
        bld.gemm("mla_kv_a", down_m, spec.kv_lora_rank + rope, h, model_share=down_share)
        bld.norm("kv_a_norm", T, spec.kv_lora_rank, model_share=1.0 / tp)
        bld.gemm("mla_kv_b", T, nh * (spec.qk_nope_head_dim + spec.v_head_dim), spec.kv_lora_rank)
        bld.memory("rope", 2 * T * (nh + 1) * rope * b, 2 * T * (nh + 1) * rope * b)
        bld.attention(mb, nh, nh, s // cp, s, qk, spec.v_head_dim)
        bld.gemm("attn_out", T, h, nh * spec.v_head_dim)
    bld.residual("attn_residual", t_sp, h)


def _mlp_block(bld: _Builder, spec: ModelSpec, moe: bool, mb: int, s: int, split: Split,
               tokens_per_expert: float | None) -> None:
    tp, cp = split.tp, split.cp
    T = mb * s // cp
    t_sp = T // tp if split.sp and tp > 1 else T
    h, b, g = spec.hidden, bld.b, spec.gated
    up = "up_gate" if g else "up"
    width = 2 if g else 1
    bld.norm("pre_mlp_norm", t_sp, h)
    if not moe:
        f = spec.ffn_hidden // tp
        bld.gemm(f"dense_{up}", T, width * f, h)
        bld.activation("dense_act", T, f, g)
        bld.gemm("dense_down", T, h, f)
    else:
        E, k, ep, etp = spec.n_experts, spec.topk, split.ep, split.etp
        bld.gemm("router", t_sp, E, h, model_share=0.0)
        bld.memory("router_topk", t_sp * (_ROUTER_BYTES_PER_EXPERT * E + _ROUTER_BYTES_PER_CHOICE * k),
                   t_sp * (_ROUTER_BYTES_PER_EXPERT * E + _ROUTER_BYTES_PER_CHOICE * k))
        local = E // ep
        balanced = ep * etp * t_sp * k / E
        per_expert = balanced if tokens_per_expert is None else float(tokens_per_expert)
        m = int(per_expert) if float(per_expert).is_integer() else per_expert
        rows = per_expert * local          # token copies this rank's experts process
        sent = t_sp * k                    # token copies this rank routes (permute at the source)
        bld.memory("permute", 2 * sent * h * b, 2 * sent * h * b)
        fe = spec.moe_ffn_hidden // etp
        bld.gemm(f"expert_{up}", m, width * fe, h, groups=local, model_m=balanced)
        bld.activation("expert_act", rows, fe, g)
        bld.gemm("expert_down", m, h, fe, groups=local, model_m=balanced)
        bld.memory("unpermute", (sent + t_sp) * h * b, (sent + t_sp) * h * b)
        if spec.shared_expert_ffn_hidden:
            fs = spec.shared_expert_ffn_hidden // tp
            bld.gemm(f"shared_{up}", T, width * fs, h)
            bld.activation("shared_act", T, fs, g)
            bld.gemm("shared_down", T, h, fs)
    bld.residual("mlp_residual", t_sp, h)


def _head(bld: _Builder, spec: ModelSpec, mb: int, s: int, split: Split) -> None:
    tp = split.tp
    T = mb * s // split.cp
    v_shard = math.ceil(spec.vocab / (VOCAB_PAD_MULTIPLE * tp)) * VOCAB_PAD_MULTIPLE
    bld.gemm("lm_head", T, v_shard, spec.hidden, model_m=T * spec.vocab / (tp * v_shard))
    bld.memory("cross_entropy", T * v_shard * bld.b, 2 * T * v_shard * bld.b)


def layer_ops(spec: ModelSpec, kind: str, *, micro_batch: int, seq_len: int, split: Split | None = None,
              act_bytes: float = 2, tokens_per_expert: float | None = None) -> tuple[Op, ...]:
    """Forward then backward ops of one layer of ``kind`` for one micro-batch on one rank.

    ``kind``: ``"embedding"`` (lookup), ``"dense"`` / ``"moe"`` (a transformer layer),
    ``"mtp"`` (one MTP module: its norms and ``eh_proj``, a transformer layer of the last main
    layer's kind, and its own logits), ``"lm_head"`` (final norm, output GEMM, cross-entropy).
    ``tokens_per_expert`` overrides the balanced rows per local expert (load imbalance): it
    changes ``flops``, never ``model_flops``.

    >>> from workloads.models import get_model
    >>> ops = layer_ops(get_model("llama3-8b"), "dense", micro_batch=1, seq_len=8192, split=Split(tp=4))
    >>> [(o.name, o.m, o.n, o.k) for o in ops if o.kind == "gemm"][:3]
    [('attn_qkv:fwd', 8192, 1536, 4096), ('attn_out:fwd', 8192, 4096, 1024), ('dense_up_gate:fwd', 8192, 7168, 4096)]
    """
    split = Split() if split is None else split
    _check(spec, kind, micro_batch, seq_len, split)
    if kind == "moe" and not spec.is_moe:
        raise SpecError(f"layer kind 'moe': model {spec.name!r} has no experts")
    if kind == "dense" and spec.n_dense_layers == 0:
        raise SpecError(f"layer kind 'dense': model {spec.name!r} has no dense layers")
    if kind == "mtp" and spec.mtp_layers == 0:
        raise SpecError(f"layer kind 'mtp': model {spec.name!r} has no MTP layers")
    if tokens_per_expert is not None and (isinstance(tokens_per_expert, bool)
                                          or not isinstance(tokens_per_expert, (int, float))
                                          or not tokens_per_expert >= 0 or math.isinf(tokens_per_expert)):
        raise SpecError(f"tokens_per_expert = {tokens_per_expert!r}: must be a finite number >= 0")
    if not isinstance(act_bytes, (int, float)) or isinstance(act_bytes, bool) or not act_bytes > 0:
        raise SpecError(f"act_bytes = {act_bytes!r}: must be a number > 0")
    mb, s, tp = micro_batch, seq_len, split.tp
    T = mb * s // split.cp
    t_sp = T // tp if split.sp and tp > 1 else T
    h = spec.hidden
    if kind == "embedding":
        bld = _Builder("other", act_bytes)
        bld.memory("embedding", 2 * T * h * act_bytes, T * h * (act_bytes + 2 * _GRAD_ACCUM_BYTES))
        return bld.ops()
    if kind == "lm_head":
        bld = _Builder("logits", act_bytes)
        bld.norm("final_norm", t_sp, h)
        _head(bld, spec, mb, s, split)
        return bld.ops()
    if kind == "mtp":
        bld = _Builder("mtp", act_bytes)
        bld.memory("mtp_embedding", 2 * T * h * act_bytes, T * h * (act_bytes + 2 * _GRAD_ACCUM_BYTES))
        bld.norm("mtp_enorm", t_sp, h, model_share=1.0)
        bld.norm("mtp_hnorm", t_sp, h, model_share=1.0)
        bld.gemm("mtp_eh_proj", T, h // tp, 2 * h)
        _attention_block(bld, spec, mb, s, split)
        _mlp_block(bld, spec, spec.mtp_layer_is_moe, mb, s, split, tokens_per_expert)
        bld.norm("mtp_final_norm", t_sp, h, model_share=1.0)
        _head(bld, spec, mb, s, split)
        ops = bld.ops()
        return tuple(Op(**{**o.__dict__, "component": "mtp"}) for o in ops)
    attn = _Builder("attention_proj", act_bytes)
    _attention_block(attn, spec, mb, s, split)
    mlp = _Builder("mlp", act_bytes)
    _mlp_block(mlp, spec, kind == "moe", mb, s, split, tokens_per_expert)
    return tuple(attn.fwd) + tuple(mlp.fwd) + tuple(reversed(mlp.bwd)) + tuple(reversed(attn.bwd))


def model_ops(spec: ModelSpec, *, micro_batch: int, seq_len: int, split: Split | None = None,
              mtp: bool = True, act_bytes: float = 2,
              tokens_per_expert: float | None = None) -> tuple[LayerOps, ...]:
    """The whole model's inventory: each layer kind once, with how many layers have it.

    >>> from workloads.models import get_model
    >>> [(l.kind, l.count) for l in model_ops(get_model("deepseek-v3"), micro_batch=1, seq_len=4096)]
    [('embedding', 1), ('dense', 3), ('moe', 58), ('mtp', 1), ('lm_head', 1)]
    """
    counts = [("embedding", 1), ("dense", spec.n_dense_layers), ("moe", spec.n_moe_layers),
              ("mtp", spec.mtp_layers if mtp else 0), ("lm_head", 1)]
    return tuple(LayerOps(kind, n, layer_ops(spec, kind, micro_batch=micro_batch, seq_len=seq_len, split=split,
                                             act_bytes=act_bytes, tokens_per_expert=tokens_per_expert))
                 for kind, n in counts if n)
