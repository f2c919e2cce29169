"""Model catalog, TOML loader, parameter counts and FLOPs per token.

Pinned numbers come from published sources (DeepSeek-V3 report sec. 4.2 and NVIDIA's GB300
figure 1648 TFLOPs / 6338 tokens/s = 260.0 GF/token; the parameter counts the checkpoints'
safetensors metadata report); the formulas are re-derived here independently of flops.py.
"""

from __future__ import annotations

import os

import pytest

from topologies.errors import SpecError
from workloads import flops_breakdown, flops_per_token, get_model, list_models, load_model, param_counts
from workloads.models import MODEL_FILE_MAX_BYTES, model_from_dict

GF = 1e9


def test_catalog_has_the_promised_models():
    assert set(list_models()) == {"deepseek-v3", "deepseek-v2-lite", "qwen3-235b-a22b", "qwen3-30b-a3b",
                                  "mixtral-8x7b", "llama3-8b", "llama3-70b", "llama3.1-405b", "gpt3-175b"}
    for name in list_models():
        assert get_model(name).source and get_model(name).name == name


def test_deepseek_v3_structure():
    m = get_model("deepseek-v3")
    assert (m.n_layers, m.n_dense_layers, m.n_moe_layers, m.mtp_layers) == (61, 3, 58, 1)
    assert (m.n_experts, m.n_shared_experts, m.topk, m.n_groups, m.topk_groups) == (256, 1, 8, 8, 4)
    assert m.vocab == 129_280 and m.attention == "mla" and m.mtp_layer_is_moe
    assert get_model("deepseek-v2-lite").q_lora_rank is None


def _megatron_closed_form(h, L, D, nh, s, V, attn_lin, quad, dense_f, n_dense, moe_f, n_moe, mats):
    """The per-token formula of ../shared/notes/steptime.md sec. 2.1, written out again."""
    return (6 * h * mats * (dense_f * n_dense + moe_f * n_moe)
            + 6 * (L + D) * attn_lin + 6 * (L + D) * s * quad
            + 6 * D * (3 * h + 2 * h * h) + 6 * h * V * (1 + D))


def test_deepseek_v3_megatron_matches_the_notes_formula():
    h, nh, ql, kl, dn, dr, dv, s = 7168, 128, 1536, 512, 128, 64, 128, 4096
    lin = ql * (h + nh * (dn + dr) + 1) + kl * (h + nh * (dn + dv) + 1) + h * dr + nh * dv * h
    quad = nh * (dn + dr) / 2 + nh * dv / 2
    expect = _megatron_closed_form(h, 61, 1, nh, s, 129280, lin, quad, 18432, 3, 2048 * 9, 59, 3)
    assert flops_per_token(get_model("deepseek-v3"), s) == pytest.approx(expect, rel=1e-12)


def test_published_pins():
    v3 = get_model("deepseek-v3")
    pc = param_counts(v3)
    assert pc.total == pytest.approx(671e9, rel=0.005)
    assert pc.active / GF == pytest.approx(37.5, abs=0.1)
    assert (pc.total + pc.mtp_total) / GF == pytest.approx(682.6, abs=0.1)  # + MTP 11.6B (report: 11.5B)
    assert round(flops_per_token(v3, 4096) / GF, 1) == 260.0
    assert round(flops_per_token(v3, 4096, mtp=False) / GF, 1) == 249.8
    assert round(flops_per_token(v3, 4096, convention="torchtitan") / GF, 1) == 281.2
    assert round(flops_per_token(get_model("qwen3-235b-a22b"), 4096) / GF, 1) == 148.0
    assert round(flops_per_token(get_model("llama3.1-405b"), 8192) / GF) == 2524
    # ISCA'25 "Insights" table 2 quotes 250 GF/token for V3 (no MTP) at 4K.
    assert flops_per_token(v3, 4096, mtp=False) / GF == pytest.approx(250, rel=0.01)


@pytest.mark.parametrize("name,count", [
    ("llama3-8b", 8_030_261_248), ("llama3-70b", 70_553_706_496), ("llama3.1-405b", 405_853_388_800),
    ("mixtral-8x7b", 46_702_792_704), ("qwen3-235b-a22b", 235_093_634_560),
])
def test_parameter_counts_match_the_checkpoints(name, count):
    assert param_counts(get_model(name)).total == count


def test_deepseek_v2_lite_matches_its_paper():
    # arXiv 2405.04434 appendix B: 15.7B total, 2.4B activated (the input embedding is a lookup).
    pc = param_counts(get_model("deepseek-v2-lite"))
    assert pc.total / GF == pytest.approx(15.7, abs=0.05)
    assert (pc.active - pc.embedding) / GF == pytest.approx(2.4, abs=0.1)
    assert pc.as_dict()["active"] == pc.active


def test_dense_params_by_enumerating_tensors():
    m = get_model("llama3-8b")
    h, f, V, hd = 4096, 14336, 128256, 128
    per_layer = [h * 32 * hd, h * 8 * hd, h * 8 * hd, 32 * hd * h, h * f, h * f, f * h, h, h]
    assert param_counts(m).total == 2 * V * h + 32 * sum(per_layer) + h
    gpt = param_counts(get_model("gpt3-175b"))
    assert gpt.output_head == 0 and gpt.total / GF == pytest.approx(174.6, abs=0.1)


@pytest.mark.parametrize("name", ["deepseek-v3", "deepseek-v2-lite", "qwen3-30b-a3b", "llama3-70b", "gpt3-175b"])
@pytest.mark.parametrize("convention", ["megatron", "torchtitan"])
def test_breakdown_sums_and_mtp_is_the_difference(name, convention):
    m = get_model(name)
    b = flops_breakdown(m, 4096, convention=convention, mtp=True)
    assert sum(v for k, v in b.as_dict().items() if k != "total") == pytest.approx(b.total_flops, rel=1e-12)
    assert b.total_flops == flops_per_token(m, 4096, convention=convention, mtp=True)
    without = flops_per_token(m, 4096, convention=convention, mtp=False)
    assert b.mtp_flops == pytest.approx(b.total_flops - without, rel=1e-12)
    assert (b.mtp_flops > 0) == (m.mtp_layers > 0)


def test_torchtitan_is_six_times_active_params_plus_full_attention():
    for name in ("deepseek-v3", "mixtral-8x7b", "llama3-8b"):
        m, s = get_model(name), 2048
        pc = param_counts(m)
        head_in = 0 if m.tie_embeddings else pc.embedding  # input embedding is not a matmul
        expect = 6 * (pc.active - head_in) + 6 * m.n_layers * m.n_heads * (m.qk_head_dim + m.v_dim) * s
        assert flops_per_token(m, s, convention="torchtitan") == pytest.approx(expect, rel=1e-12)


def test_causal_halving_is_the_only_attention_difference_for_dense_gqa():
    m, s = get_model("llama3-8b"), 8192
    mg, tt = flops_breakdown(m, s), flops_breakdown(m, s, convention="torchtitan")
    assert tt.core_attention_flops == pytest.approx(2 * mg.core_attention_flops)
    assert flops_breakdown(m, 2 * s).core_attention_flops == pytest.approx(2 * mg.core_attention_flops)


def test_flops_argument_errors():
    m = get_model("llama3-8b")
    with pytest.raises(SpecError, match="convention"):
        flops_per_token(m, 4096, convention="palm")
    with pytest.raises(SpecError, match="seq_len"):
        flops_per_token(m, 0)


def _write_bytes(tmp_path, data, name):
    p = tmp_path / name
    p.write_bytes(data)
    return p


def _write(tmp_path, text, name="m.toml"):
    p = tmp_path / name
    p.write_text(text)
    return p


TINY_MOE = """
name = "tiny-moe"
source = "test"
n_layers = 4
hidden = 256
n_heads = 8
ffn_hidden = 1024
gated = true
vocab = 1000
attention = "mla"
q_lora_rank = 64
kv_lora_rank = 32
qk_nope_head_dim = 16
qk_rope_head_dim = 8
v_head_dim = 16
n_experts = 16
n_shared_experts = 1
topk = 2
moe_ffn_hidden = 128
shared_expert_ffn_hidden = 128
first_dense_layers = 1
mtp_layers = 1
"""


def test_custom_toml_model_and_catalog_files_round_trip(tmp_path, repo):
    m = load_model(_write(tmp_path, TINY_MOE))
    assert (m.head_dim, m.n_kv_heads, m.n_moe_layers, m.n_dense_layers) == (24, 8, 3, 1)
    assert get_model(str(tmp_path / "m.toml")) == m
    for f in sorted((repo / "workloads" / "data" / "models").glob("*.toml")):
        assert load_model(f) == get_model(f.stem)


@pytest.mark.parametrize("edit,match", [
    (("n_layers = 4", "n_layers = 0"), "n_layers = 0: must be an integer >= 1"),
    (("n_layers = 4", "n_layers = 4.5"), "n_layers = 4.5"),
    (("gated = true", "gated = 1"), "gated = 1: must be true or false"),
    (('attention = "mla"', 'attention = "mha"'), "attention = 'mha': allowed: gqa, mla"),
    (("topk = 2", "topk = 17"), "topk = 17: must be at most n_experts = 16"),
    (("topk = 2", "topk = 0"), "topk = 0: must be an integer >= 1 for an MoE model"),
    (("first_dense_layers = 1", "first_dense_layers = 4"), "first_dense_layers = 4"),
    (("shared_expert_ffn_hidden = 128", "shared_expert_ffn_hidden = 0"), "shared_expert_ffn_hidden"),
    (("v_head_dim = 16", "v_head_dim = 16\nhead_dim = 20"), "head_dim = 20: for MLA must be"),
    (("mtp_layers = 1", "mtp_layers = 1\nlayers = 3"), "unknown key 'layers'"),
    (('name = "tiny-moe"', 'name = "Tiny MoE"'), "model name 'Tiny MoE'"),
    (("hidden = 256", ""), "missing key 'hidden'"),
])
def test_bad_fields_give_one_line_naming_the_field(tmp_path, edit, match):
    with pytest.raises(SpecError, match=match) as exc:
        load_model(_write(tmp_path, TINY_MOE.replace(*edit)))
    assert "\n" not in str(exc.value)


def test_gqa_validation():
    base = dict(name="g", source="t", n_layers=2, hidden=64, n_heads=6, n_kv_heads=4, head_dim=16,
                ffn_hidden=128, gated=False, vocab=100)
    with pytest.raises(SpecError, match="n_kv_heads = 4: must divide n_heads = 6"):
        model_from_dict(base)
    with pytest.raises(SpecError, match="kv_lora_rank.*only for attention"):
        model_from_dict({**base, "n_kv_heads": 2, "kv_lora_rank": 8})
    with pytest.raises(SpecError, match="topk = 2: only for MoE"):
        model_from_dict({**base, "n_kv_heads": 2, "topk": 2})


def test_model_files_must_be_small_regular_toml(tmp_path):
    with pytest.raises(SpecError, match="^model file .*: is a directory; give a regular file$"):
        load_model(tmp_path)
    with pytest.raises(SpecError, match="^model file .*absent.toml.: does not exist$"):
        load_model(tmp_path / "absent.toml")
    with pytest.raises(SpecError, match="^model file .*bad.toml"):
        load_model(_write(tmp_path, "name = [", "bad.toml"))
    big = _write(tmp_path, TINY_MOE + "#" * MODEL_FILE_MAX_BYTES, "big.toml")
    with pytest.raises(SpecError, match=f"over the {MODEL_FILE_MAX_BYTES:,}-byte limit$"):
        load_model(big)  # a fixed limit: no variable raises it
    with pytest.raises(SpecError, match="is not UTF-8 text"):
        load_model(_write_bytes(tmp_path, b"name = '\xe9'", "latin.toml"))
    if hasattr(os, "mkfifo"):
        fifo = tmp_path / "fifo.toml"
        os.mkfifo(fifo)
        with pytest.raises(SpecError, match="FIFO"):
            load_model(fifo)
    with pytest.raises(SpecError, match="not a built-in model"):
        get_model("gpt5")
