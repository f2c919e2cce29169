"""Transformer model specifications: the built-in catalog and custom models from TOML.

A :class:`ModelSpec` holds the sizes that decide parameters, FLOPs and the operator shapes of
a decoder-only transformer: dense or mixture-of-experts (MoE) feed-forward, grouped-query
(GQA, which includes multi-head attention) or multi-head latent attention (MLA), and
multi-token-prediction (MTP) layers. The built-in models live as one TOML file each under
``workloads/data/models/`` (data apart from code), every one naming the published
``config.json`` it was taken from; ``docs/models.md`` documents the schema.

Examples
--------
>>> spec = get_model("deepseek-v3")
>>> spec.attention, spec.n_moe_layers, spec.n_dense_layers, spec.mtp_layers
('mla', 58, 3, 1)
>>> get_model("llama3-8b").is_moe
False
>>> "qwen3-235b-a22b" in list_models()
True
"""

from __future__ import annotations

import dataclasses
import functools
import os
import re
import tomllib
from dataclasses import dataclass
from importlib import resources

from topologies.errors import SpecError, brief
from topologies.files import parse_toml, read_text

__all__ = [
    "ModelSpec",
    "ATTENTION_KINDS",
    "MODEL_FILE_MAX_BYTES",
    "MODEL_LIMITS",
    "MAX_SEQ_LEN",
    "get_model",
    "list_models",
    "load_model",
    "model_from_dict",
]

#: Attention families a spec may name.
ATTENTION_KINDS = ("gqa", "mla")
#: A model TOML file larger than this is refused (a spec is a few hundred bytes).
MODEL_FILE_MAX_BYTES = 64 * 1024

#: Largest value accepted for each size field. These are input bounds, not model constants: 16-64 x the
#: largest published configs (126 layers in Llama 3.1 405B, hidden 18,432 in PaLM 540B, 128 heads in
#: DeepSeek-V3, a 262,144-token vocabulary in Gemma 3, 384 experts in Kimi K2), so every real model fits
#: and an absurd file is refused before the layer pattern (one entry per layer) or the counts are built.
MODEL_LIMITS = {
    **dict.fromkeys(("n_layers", "first_dense_layers", "mtp_layers", "moe_layer_freq"), 4096),
    **dict.fromkeys(("hidden", "ffn_hidden", "moe_ffn_hidden", "shared_expert_ffn_hidden"), 1 << 20),
    **dict.fromkeys(("n_heads", "n_kv_heads"), 1 << 14),
    **dict.fromkeys(("head_dim", "q_lora_rank", "kv_lora_rank", "qk_nope_head_dim", "qk_rope_head_dim",
                     "v_head_dim"), 1 << 16),
    "vocab": 1 << 24,
    **dict.fromkeys(("n_experts", "n_shared_experts", "topk", "n_groups", "topk_groups"), 1 << 16),
}
#: Longest sequence accepted by the FLOP counts (16 Mi tokens; published contexts reach 10 M).
MAX_SEQ_LEN = 1 << 24

_NAME_RE = re.compile(r"^[a-z0-9][a-z0-9._-]{0,63}$")
_MLA_FIELDS = ("kv_lora_rank", "qk_nope_head_dim", "qk_rope_head_dim", "v_head_dim")
_MOE_FIELDS = ("topk", "moe_ffn_hidden")


@dataclass(frozen=True)
class ModelSpec:
    """Sizes of a decoder-only transformer (bias-free linear layers, RMSNorm).

    Parameters
    ----------
    name, source : str
        Catalog name and where the numbers come from (the checkpoint's ``config.json``).
    n_layers, hidden, n_heads, n_kv_heads, head_dim : int
        Transformer layers (without MTP), model width, query heads, key/value heads and the
        query/key head size (for MLA: ``qk_nope_head_dim + qk_rope_head_dim``).
    ffn_hidden : int
        Intermediate size of the dense feed-forward layers.
    gated : bool
        SwiGLU feed-forward (gate, up and down matrices) instead of a 2-matrix GeLU MLP.
    vocab : int
        Vocabulary size (embedding rows and output-head columns).
    tie_embeddings : bool
        The output head shares the embedding matrix.
    attention : {"gqa", "mla"}
        Grouped-query (multi-head when ``n_kv_heads == n_heads``) or multi-head latent attention.
    qk_norm : bool
        Per-head RMSNorm of queries and keys (Qwen3); adds ``2 head_dim`` weights per layer.
    q_lora_rank, kv_lora_rank, qk_nope_head_dim, qk_rope_head_dim, v_head_dim : int or None
        MLA sizes; ``q_lora_rank`` None means a full-rank query projection (DeepSeek-V2-Lite).
    n_experts, n_shared_experts, topk : int
        Routed experts (0 = dense model), shared experts, experts chosen per token.
    moe_ffn_hidden, shared_expert_ffn_hidden : int
        Intermediate size of one routed expert, and of all shared experts together
        (Megatron's ``moe_shared_expert_intermediate_size``).
    first_dense_layers, moe_layer_freq : int
        Layer ``i`` (0-based) is MoE iff ``i >= first_dense_layers and i % moe_layer_freq == 0``
        (DeepSeek's ``first_k_dense_replace`` / ``moe_layer_freq``).
    n_groups, topk_groups : int
        Group-limited routing: experts form ``n_groups`` groups, a token reaches at most
        ``topk_groups`` of them (DeepSeek-V3: 8 and 4).
    mtp_layers : int
        Multi-token-prediction depth; each MTP module is a norm pair, an ``eh_proj`` (2h -> h)
        and one transformer layer of the kind of the last main layer, sharing embedding and head.
    """

    name: str
    source: str
    n_layers: int
    hidden: int
    n_heads: int
    n_kv_heads: int
    head_dim: int
    ffn_hidden: int
    gated: bool
    vocab: int
    tie_embeddings: bool = False
    attention: str = "gqa"
    qk_norm: bool = False
    q_lora_rank: int | None = None
    kv_lora_rank: int = 0
    qk_nope_head_dim: int = 0
    qk_rope_head_dim: int = 0
    v_head_dim: int = 0
    n_experts: int = 0
    n_shared_experts: int = 0
    topk: int = 0
    moe_ffn_hidden: int = 0
    shared_expert_ffn_hidden: int = 0
    first_dense_layers: int = 0
    moe_layer_freq: int = 1
    n_groups: int = 1
    topk_groups: int = 1
    mtp_layers: int = 0

    def __post_init__(self) -> None:
        _validate(self)

    @property
    def is_moe(self) -> bool:
        """True when the model has routed experts."""
        return self.n_experts > 0

    @property
    def moe_layer_pattern(self) -> tuple[bool, ...]:
        """Per main layer, whether its feed-forward is MoE."""
        if not self.is_moe:
            return (False,) * self.n_layers
        return tuple(i >= self.first_dense_layers and i % self.moe_layer_freq == 0
                     for i in range(self.n_layers))

    @property
    def n_moe_layers(self) -> int:
        """Main layers with an MoE feed-forward (MTP layers not included)."""
        return sum(self.moe_layer_pattern)

    @property
    def n_dense_layers(self) -> int:
        """Main layers with a dense feed-forward (MTP layers not included)."""
        return self.n_layers - self.n_moe_layers

    @property
    def mtp_layer_is_moe(self) -> bool:
        """MTP layers repeat the kind of the last main layer (as Megatron counts them)."""
        return self.moe_layer_pattern[-1]

    @property
    def qk_head_dim(self) -> int:
        """Query/key size per head that the attention core contracts over."""
        return self.qk_nope_head_dim + self.qk_rope_head_dim if self.attention == "mla" else self.head_dim

    @property
    def v_dim(self) -> int:
        """Value size per head."""
        return self.v_head_dim if self.attention == "mla" else self.head_dim


def _is_int(v) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


def _validate(s: ModelSpec) -> None:
    def bad(field: str, allowed: str) -> SpecError:
        return SpecError(f"model {s.name!r}: {field} = {getattr(s, field)!r}: {allowed}")

    if not isinstance(s.name, str) or not _NAME_RE.match(s.name):
        raise SpecError(f"model name {s.name!r}: use 1-64 lowercase letters, digits, '.', '_' or '-'")
    if not isinstance(s.source, str):
        raise bad("source", "must be a string")
    for f in ("gated", "tie_embeddings", "qk_norm"):
        if not isinstance(getattr(s, f), bool):
            raise bad(f, "must be true or false")
    for f in ("n_layers", "hidden", "n_heads", "n_kv_heads", "head_dim", "ffn_hidden", "vocab"):
        if not _is_int(getattr(s, f)) or getattr(s, f) < 1:
            raise bad(f, "must be an integer >= 1")
    for f in ("kv_lora_rank", "qk_nope_head_dim", "qk_rope_head_dim", "v_head_dim", "n_experts",
              "n_shared_experts", "topk", "moe_ffn_hidden", "shared_expert_ffn_hidden",
              "first_dense_layers", "mtp_layers"):
        if not _is_int(getattr(s, f)) or getattr(s, f) < 0:
            raise bad(f, "must be an integer >= 0")
    for f in ("moe_layer_freq", "n_groups", "topk_groups"):
        if not _is_int(getattr(s, f)) or getattr(s, f) < 1:
            raise bad(f, "must be an integer >= 1")
    for f, top in MODEL_LIMITS.items():
        v = getattr(s, f)
        if _is_int(v) and v > top:
            raise bad(f, f"must be at most {top:,}")
    if s.attention not in ATTENTION_KINDS:
        raise bad("attention", f"allowed: {', '.join(ATTENTION_KINDS)}")
    if s.attention == "gqa":
        if s.n_heads % s.n_kv_heads:
            raise bad("n_kv_heads", f"must divide n_heads = {s.n_heads}")
        if s.q_lora_rank is not None:
            raise bad("q_lora_rank", "only for attention = \"mla\"")
        for f in _MLA_FIELDS:
            if getattr(s, f):
                raise bad(f, "only for attention = \"mla\"")
    else:
        if s.q_lora_rank is not None and (not _is_int(s.q_lora_rank) or s.q_lora_rank < 1):
            raise bad("q_lora_rank", "must be an integer >= 1, or omitted for a full-rank query projection")
        for f in _MLA_FIELDS:
            if getattr(s, f) < 1 and f != "qk_rope_head_dim":
                raise bad(f, "must be an integer >= 1 for attention = \"mla\"")
        if s.n_kv_heads != s.n_heads:
            raise bad("n_kv_heads", f"MLA has one key/value per head: must equal n_heads = {s.n_heads}")
        if s.head_dim != s.qk_nope_head_dim + s.qk_rope_head_dim:
            raise bad("head_dim", f"for MLA must be qk_nope_head_dim + qk_rope_head_dim = "
                                  f"{s.qk_nope_head_dim + s.qk_rope_head_dim}")
    if s.n_experts == 0:
        for f in ("n_shared_experts", "topk", "moe_ffn_hidden", "shared_expert_ffn_hidden",
                  "first_dense_layers"):
            if getattr(s, f):
                raise bad(f, "only for MoE models (n_experts >= 1)")
        if s.moe_layer_freq != 1 or s.n_groups != 1 or s.topk_groups != 1:
            f = next(f for f in ("moe_layer_freq", "n_groups", "topk_groups") if getattr(s, f) != 1)
            raise bad(f, "only for MoE models (n_experts >= 1)")
    else:
        for f in _MOE_FIELDS:
            if getattr(s, f) < 1:
                raise bad(f, "must be an integer >= 1 for an MoE model")
        if s.topk > s.n_experts:
            raise bad("topk", f"must be at most n_experts = {s.n_experts}")
        if s.first_dense_layers >= s.n_layers:
            raise bad("first_dense_layers", f"must be below n_layers = {s.n_layers} (an MoE model needs an MoE layer)")
        if (s.n_shared_experts == 0) != (s.shared_expert_ffn_hidden == 0):
            raise bad("shared_expert_ffn_hidden", "must be 0 exactly when n_shared_experts is 0")
        if s.n_experts % s.n_groups:
            raise bad("n_groups", f"must divide n_experts = {s.n_experts}")
        if s.topk_groups > s.n_groups:
            raise bad("topk_groups", f"must be at most n_groups = {s.n_groups}")
        if not any(i % s.moe_layer_freq == 0 for i in range(s.first_dense_layers, s.n_layers)):
            raise bad("moe_layer_freq", f"leaves no MoE layer among layers {s.first_dense_layers}..{s.n_layers - 1} "
                                        f"(layer i is MoE iff i >= first_dense_layers and i % moe_layer_freq == 0)")
        if s.topk > s.topk_groups * (s.n_experts // s.n_groups):
            raise bad("topk", f"must be at most topk_groups x experts per group = "
                              f"{s.topk_groups * (s.n_experts // s.n_groups)}")


_FIELDS = {f.name: f for f in dataclasses.fields(ModelSpec)}
_REQUIRED = tuple(f.name for f in dataclasses.fields(ModelSpec)
                  if f.default is dataclasses.MISSING and f.name not in ("head_dim", "n_kv_heads"))


def model_from_dict(doc: dict, *, where: str = "model") -> ModelSpec:
    """Build a :class:`ModelSpec` from a TOML-like mapping (the schema of ``docs/models.md``).

    Unknown keys are rejected; for MLA ``head_dim`` and ``n_kv_heads`` may be omitted (they
    follow from the MLA sizes), and an omitted ``q_lora_rank`` means a full-rank query.

    >>> m = model_from_dict({"name": "tiny", "source": "test", "n_layers": 2, "hidden": 64,
    ...     "n_heads": 4, "n_kv_heads": 2, "head_dim": 16, "ffn_hidden": 128, "gated": True, "vocab": 1000})
    >>> m.attention, m.is_moe
    ('gqa', False)
    >>> model_from_dict({"name": "tiny", "layers": 2})
    Traceback (most recent call last):
    ...
    topologies.errors.SpecError: model: unknown key 'layers' (allowed: name, source, n_layers, ...)
    """
    if not isinstance(doc, dict):
        raise SpecError(f"{where}: expected a table of model fields")
    unknown = [k for k in doc if k not in _FIELDS]
    if unknown:
        raise SpecError(f"{where}: unknown key {unknown[0]!r} (allowed: name, source, n_layers, ...)")
    doc = dict(doc)
    doc.setdefault("source", where)
    missing = [k for k in _REQUIRED if k not in doc]
    if doc.get("attention", "gqa") not in ATTENTION_KINDS:
        raise SpecError(f"{where}: attention = {doc['attention']!r}: allowed: {', '.join(ATTENTION_KINDS)}")
    if doc.get("attention") == "mla":
        n = doc.get("qk_nope_head_dim", 0)
        r = doc.get("qk_rope_head_dim", 0)
        if _is_int(n) and _is_int(r):
            doc.setdefault("head_dim", n + r)
        doc.setdefault("n_kv_heads", doc.get("n_heads"))
    else:
        missing += [k for k in ("head_dim", "n_kv_heads") if k not in doc]
    if missing:
        raise SpecError(f"{where}: missing key {missing[0]!r}")
    name = doc.get("name")
    if not isinstance(name, str):
        raise SpecError(f"{where}: name = {name!r}: must be a string")
    return ModelSpec(**doc)


def load_model(path: str | os.PathLike) -> ModelSpec:
    """Read a custom model from a TOML file (a regular file of at most 64 KiB).

    Errors (missing file, not a regular file, too large, bad TOML, bad field) raise
    :class:`~topologies.errors.SpecError` with one line naming the file and the field.
    """
    where = f"model file {brief(str(path))}"
    text = read_text(path, what="model file", max_bytes=MODEL_FILE_MAX_BYTES, limit_env=None)
    spec = model_from_dict(parse_toml(text, source=where), where=where)
    built_in = _catalog().get(spec.name)
    if built_in is not None and dataclasses.replace(spec, source=built_in.source) != built_in:
        # results, tables and sweep columns name the model: two different models under one name mislead
        raise SpecError(f"{where}: name {spec.name!r} is a built-in model's, with other sizes; give the file's "
                        f"model a name of its own")
    return spec


def _catalog_dir():
    return resources.files("workloads") / "data" / "models"


@functools.cache
def _catalog() -> dict[str, ModelSpec]:
    out: dict[str, ModelSpec] = {}
    for entry in sorted(_catalog_dir().iterdir(), key=lambda e: e.name):
        if entry.name.endswith(".toml"):
            spec = model_from_dict(tomllib.loads(entry.read_text()), where=f"catalog {entry.name}")
            if f"{spec.name}.toml" != entry.name:  # pragma: no cover - catalog consistency
                raise SpecError(f"catalog {entry.name}: name {spec.name!r} does not match the file name")
            out[spec.name] = spec
    return out


def list_models() -> tuple[str, ...]:
    """Names of the built-in models, sorted."""
    return tuple(_catalog())


def get_model(name_or_path: str | os.PathLike) -> ModelSpec:
    """A built-in model by name, or a custom one from a ``.toml`` path.

    >>> get_model("mixtral-8x7b").topk
    2
    >>> get_model("llama-9")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    topologies.errors.SpecError: model 'llama-9': not a built-in model (deepseek-v2-lite, ...) nor a .toml file
    """
    key = os.fspath(name_or_path)
    cat = _catalog()
    if key in cat:
        return cat[key]
    if key.endswith(".toml") or os.sep in key:
        return load_model(key)
    raise SpecError(f"model {key!r}: not a built-in model ({', '.join(cat)}) nor a .toml file")
