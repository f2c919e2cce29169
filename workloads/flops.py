"""Parameter counts and training FLOPs per token, in Megatron's and TorchTitan's conventions.

Both conventions count a training step as forward + backward = 3 x forward, and a
multiply-add as 2 FLOPs; recomputation is never counted (these are *model* FLOPs).

* ``"megatron"`` follows ``num_floating_point_operations`` of Megatron-LM
  (``NVIDIA/Megatron-LM:megatron/training/training.py`` @ d98e8a64dd, lines 1009-1311) and
  Megatron-Bridge (``NVIDIA-NeMo/Megatron-Bridge:src/megatron/bridge/training/utils/flop_utils.py``
  @ 0494433be0, ``transformer_flops``): causal attention counts half of the score matrix; MoE layers count the
  ``topk`` routed plus the shared experts, not the router; MTP layers count as extra layers of
  the last layer's kind plus ``3h + 2h^2`` per module for its norms and ``eh_proj``; the logits
  GEMM counts ``1 + mtp_layers`` times; MLA's latent RMSNorms count one FMA per weight
  (the ``+ 1`` in ``q_lora_rank * (h + ... + 1)``). The vocabulary is taken as given (Megatron
  pads it to a multiple of 128 x TP; for every built-in model the difference is below 0.01 %).
* ``"torchtitan"`` follows ``get_moe_model_nparams_and_flops`` /
  ``get_dense_model_nparams_and_flops`` of ``pytorch/torchtitan:torchtitan/models/utils.py``
  (@ b5bcd76c66, lines 412-547; the same rule at @ 01c01c88fe as ``get_nparams_and_active_nparams``
  and ``quadratic_attention_flops_per_token``): ``6 x`` the parameters a token touches (every parameter but
  the input embedding, unless it is tied to the head; routed experts weighted ``topk/n_experts``;
  router and norms included) plus ``6 L n_heads (d_qk + d_v) s`` for attention, not halved for
  the causal mask; MTP is not part of the model.

Examples
--------
>>> from workloads.models import get_model
>>> v3 = get_model("deepseek-v3")
>>> round(param_counts(v3).total / 1e9, 1), round(param_counts(v3).active / 1e9, 2)
(671.0, 37.55)
>>> round(flops_per_token(v3, 4096) / 1e9, 1), round(flops_per_token(v3, 4096, mtp=False) / 1e9, 1)
(260.0, 249.8)
>>> round(flops_per_token(v3, 4096, convention="torchtitan") / 1e9, 1)
281.2
"""

from __future__ import annotations

from dataclasses import dataclass

from topologies.errors import SpecError
from workloads.models import MAX_SEQ_LEN, ModelSpec

__all__ = [
    "FLOP_CONVENTIONS",
    "ParamCounts",
    "FlopsBreakdown",
    "param_counts",
    "flops_per_token",
    "flops_breakdown",
    "megatron_attention_linear",
    "attention_core_fmas",
]

#: FLOP-counting conventions :func:`flops_per_token` knows.
FLOP_CONVENTIONS = ("megatron", "torchtitan")


@dataclass(frozen=True)
class ParamCounts:
    """Parameter counts of a :class:`~workloads.models.ModelSpec` (bias-free, RMSNorm weights included).

    Per-layer figures: ``attention_per_layer`` (projections, the MLA latent norms and the
    layer's input norm), ``dense_mlp_per_layer`` (gate/up/down and the pre-MLP norm),
    ``expert`` (one routed expert), ``shared_experts`` (all shared experts of a layer),
    ``router`` (gate weight of one MoE layer) and ``moe_norm`` (the pre-MLP norm of an MoE
    layer). ``mtp_total`` / ``mtp_active`` are the MTP modules' own parameters (they share the
    embedding and the output head). ``total`` and ``active`` describe the main model; add the
    MTP figures for the checkpoint as stored.
    """

    embedding: int
    output_head: int
    final_norm: int
    attention_per_layer: int
    dense_mlp_per_layer: int
    expert: int
    shared_experts: int
    router: int
    moe_norm: int
    n_dense_layers: int
    n_moe_layers: int
    n_experts: int
    topk: int
    mtp_total: int
    mtp_active: int

    @property
    def moe_per_layer(self) -> int:
        """All parameters of one MoE feed-forward (norm, router, every expert)."""
        return self.moe_norm + self.router + self.n_experts * self.expert + self.shared_experts

    @property
    def moe_active_per_layer(self) -> int:
        """Parameters one token touches in an MoE feed-forward (norm, router, top-k and shared experts)."""
        return self.moe_norm + self.router + self.topk * self.expert + self.shared_experts

    @property
    def total(self) -> int:
        """Main-model parameters (no MTP)."""
        return (self.embedding + self.output_head + self.final_norm
                + (self.n_dense_layers + self.n_moe_layers) * self.attention_per_layer
                + self.n_dense_layers * self.dense_mlp_per_layer + self.n_moe_layers * self.moe_per_layer)

    @property
    def active(self) -> int:
        """Main-model parameters one token touches (embedding and head included)."""
        return self.total - self.n_moe_layers * (self.moe_per_layer - self.moe_active_per_layer)

    def as_dict(self) -> dict[str, int]:
        """The fields plus ``moe_per_layer``, ``moe_active_per_layer``, ``total`` and ``active``."""
        out = dict(self.__dict__)
        out.update(moe_per_layer=self.moe_per_layer, moe_active_per_layer=self.moe_active_per_layer,
                   total=self.total, active=self.active)
        return out


@dataclass(frozen=True)
class FlopsBreakdown:
    """Training (forward + backward) FLOPs per token, by component.

    ``mtp_flops`` is everything the MTP modules add (their transformer layers, ``eh_proj`` and
    norms, and their logits); the other components are the main model's.
    Under ``"torchtitan"`` the norms a component's parameters include are counted with it
    (input norm with attention, pre-MLP norm and router with the MLP, final norm with logits).
    """

    convention: str
    seq_len: int
    attention_proj_flops: float
    core_attention_flops: float
    mlp_flops: float
    logits_flops: float
    mtp_flops: float

    @property
    def total_flops(self) -> float:
        return (self.attention_proj_flops + self.core_attention_flops + self.mlp_flops
                + self.logits_flops + self.mtp_flops)

    def as_dict(self) -> dict[str, float]:
        return {"attention_proj": self.attention_proj_flops, "core_attention": self.core_attention_flops,
                "mlp": self.mlp_flops, "logits": self.logits_flops, "mtp": self.mtp_flops,
                "total": self.total_flops}


def _ffn_mats(spec: ModelSpec) -> int:
    return 3 if spec.gated else 2


def _attention_params(spec: ModelSpec) -> int:
    """Attention weights of one layer, with the input norm and (MLA) the latent norms."""
    h, nh = spec.hidden, spec.n_heads
    if spec.attention == "gqa":
        qk_norm = 2 * spec.head_dim if spec.qk_norm else 0
        return h * (nh + 2 * spec.n_kv_heads) * spec.head_dim + nh * spec.head_dim * h + qk_norm + h
    qk = spec.qk_nope_head_dim + spec.qk_rope_head_dim
    if spec.q_lora_rank is None:
        q = h * nh * qk
    else:
        q = h * spec.q_lora_rank + spec.q_lora_rank + spec.q_lora_rank * nh * qk
    kv = (h * (spec.kv_lora_rank + spec.qk_rope_head_dim) + spec.kv_lora_rank
          + spec.kv_lora_rank * nh * (spec.qk_nope_head_dim + spec.v_head_dim))
    return q + kv + nh * spec.v_head_dim * h + h


def param_counts(spec: ModelSpec) -> ParamCounts:
    """Count the parameters of ``spec``.

    >>> from workloads.models import get_model
    >>> round(param_counts(get_model("llama3-8b")).total / 1e9, 2)
    8.03
    """
    h, mats = spec.hidden, _ffn_mats(spec)
    attn = _attention_params(spec)
    dense = mats * h * spec.ffn_hidden + h
    expert = mats * h * spec.moe_ffn_hidden if spec.is_moe else 0
    shared = mats * h * spec.shared_expert_ffn_hidden
    router = spec.n_experts * h
    moe_norm = h if spec.is_moe else 0
    if spec.mtp_layer_is_moe:
        layer_total = attn + moe_norm + router + spec.n_experts * expert + shared
        layer_active = attn + moe_norm + router + spec.topk * expert + shared
    else:
        layer_total = layer_active = attn + dense
    mtp_own = 3 * h + 2 * h * h  # enorm, hnorm, head norm; eh_proj (2h -> h)
    return ParamCounts(
        embedding=spec.vocab * h, output_head=0 if spec.tie_embeddings else spec.vocab * h, final_norm=h,
        attention_per_layer=attn, dense_mlp_per_layer=dense, expert=expert, shared_experts=shared,
        router=router, moe_norm=moe_norm, n_dense_layers=spec.n_dense_layers, n_moe_layers=spec.n_moe_layers,
        n_experts=spec.n_experts, topk=spec.topk,
        mtp_total=spec.mtp_layers * (mtp_own + layer_total), mtp_active=spec.mtp_layers * (mtp_own + layer_active))


def _check(spec: ModelSpec, seq_len: int, convention: str) -> None:
    if not isinstance(spec, ModelSpec):
        raise SpecError(f"model: expected a ModelSpec, got {type(spec).__name__}")
    if isinstance(seq_len, bool) or not isinstance(seq_len, int) or not 1 <= seq_len <= MAX_SEQ_LEN:
        raise SpecError(f"seq_len = {seq_len!r}: must be an integer between 1 and {MAX_SEQ_LEN:,}")
    if convention not in FLOP_CONVENTIONS:
        raise SpecError(f"convention = {convention!r}: allowed: {', '.join(FLOP_CONVENTIONS)}")


def megatron_attention_linear(spec: ModelSpec) -> int:
    """Megatron's per-token, per-layer attention projection term (FMAs, forward).

    Equals the attention weight count without the input norm: MLA's latent norms are counted
    as one FMA per weight, exactly as in Megatron's MLA formula; Qwen3's query/key norms are
    not in Megatron's formula.
    """
    qk_norm = 2 * spec.head_dim if spec.qk_norm and spec.attention == "gqa" else 0
    return _attention_params(spec) - spec.hidden - qk_norm


def attention_core_fmas(spec: ModelSpec, seq_len: int, *, causal: bool) -> float:
    """Forward FMAs per token of the score and value products over a context of ``seq_len``."""
    full = spec.n_heads * (spec.qk_head_dim + spec.v_dim) * seq_len
    return full / 2 if causal else float(full)


def _mlp_fmas(spec: ModelSpec, moe: bool) -> int:
    """Forward FMAs per token of one feed-forward as Megatron counts it (active experts, no router)."""
    h, mats = spec.hidden, _ffn_mats(spec)
    if moe:
        return mats * h * (spec.topk * spec.moe_ffn_hidden + spec.shared_expert_ffn_hidden)
    return mats * h * spec.ffn_hidden


def flops_breakdown(spec: ModelSpec, seq_len: int, *, convention: str = "megatron",
                    mtp: bool | None = None) -> FlopsBreakdown:
    """Training FLOPs per token by component (see the module docstring for the conventions).

    ``mtp`` None means the convention's default (Megatron: count the MTP modules; TorchTitan: not).

    >>> from workloads.models import get_model
    >>> b = flops_breakdown(get_model("deepseek-v3"), 4096)
    >>> round(b.mtp_flops / 1e9, 1), round(b.core_attention_flops / 1e9, 1)
    (10.2, 30.7)
    """
    _check(spec, seq_len, convention)
    if mtp is None:
        mtp = convention == "megatron"
    h, L = spec.hidden, spec.n_layers
    D = spec.mtp_layers if mtp else 0
    if convention == "megatron":
        lin = megatron_attention_linear(spec)
        core = attention_core_fmas(spec, seq_len, causal=True)
        mlp_main = spec.n_dense_layers * _mlp_fmas(spec, False) + spec.n_moe_layers * _mlp_fmas(spec, True)
        mtp_layer = lin + core + _mlp_fmas(spec, spec.mtp_layer_is_moe) + 3 * h + 2 * h * h + h * spec.vocab
        return FlopsBreakdown(convention, seq_len, attention_proj_flops=6.0 * L * lin,
                              core_attention_flops=6.0 * L * core, mlp_flops=6.0 * mlp_main,
                              logits_flops=6.0 * h * spec.vocab, mtp_flops=6.0 * D * mtp_layer)
    pc = param_counts(spec)
    core = attention_core_fmas(spec, seq_len, causal=False)
    mlp_main = pc.n_dense_layers * pc.dense_mlp_per_layer + pc.n_moe_layers * pc.moe_active_per_layer
    per_mtp = pc.mtp_active // spec.mtp_layers + core if spec.mtp_layers else 0
    return FlopsBreakdown(convention, seq_len, attention_proj_flops=6.0 * L * pc.attention_per_layer,
                          core_attention_flops=6.0 * L * core, mlp_flops=6.0 * mlp_main,
                          logits_flops=6.0 * (spec.vocab * h + pc.final_norm), mtp_flops=6.0 * D * per_mtp)


def flops_per_token(spec: ModelSpec, seq_len: int, *, convention: str = "megatron",
                    mtp: bool | None = None) -> float:
    """Training (forward + backward) model FLOPs per token at sequence length ``seq_len``.

    >>> from workloads.models import get_model
    >>> round(flops_per_token(get_model("llama3.1-405b"), 8192) / 1e9)
    2524
    """
    return flops_breakdown(spec, seq_len, convention=convention, mtp=mtp).total_flops
