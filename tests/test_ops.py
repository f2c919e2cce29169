"""Operator inventory: shapes against the measured H200 table, FLOPs against flops.py."""

from __future__ import annotations

import csv
import re

import pytest

from topologies.errors import SpecError
from workloads import flops_breakdown, flops_per_token, get_model
from workloads.ops import Split, layer_ops, model_ops

SPLITS = [Split(), Split(tp=2, cp=2), Split(tp=4, ep=8, etp=2), Split(tp=8, sp=True, cp=1, ep=4)]


def _split_for(m, split):
    if not m.is_moe:
        return Split(tp=split.tp, sp=split.sp, cp=split.cp)
    return split


@pytest.mark.parametrize("name", ["deepseek-v3", "deepseek-v2-lite", "qwen3-30b-a3b", "mixtral-8x7b",
                                  "llama3-70b", "gpt3-175b"])
@pytest.mark.parametrize("split", SPLITS, ids=lambda s: f"tp{s.tp}cp{s.cp}ep{s.ep}etp{s.etp}")
def test_inventory_model_flops_add_up_to_megatron(name, split):
    m = get_model(name)
    if m.attention == "gqa" and m.n_kv_heads % split.tp or m.is_moe and m.n_experts % split.ep:
        pytest.skip("split does not divide this model")
    split = _split_for(m, split)
    mb, s = 2, 4096
    inv = model_ops(m, micro_batch=mb, seq_len=s, split=split)
    ranks = split.tp * split.cp
    total = sum(layer.model_flops for layer in inv) * ranks
    assert total == pytest.approx(flops_per_token(m, s) * mb * s, rel=1e-12)
    # per component, against the breakdown
    b = flops_breakdown(m, s).as_dict()
    for comp in ("attention_proj", "core_attention", "mlp", "logits", "mtp"):
        got = sum(layer.count * o.model_flops for layer in inv for o in layer.ops if o.component == comp) * ranks
        assert got == pytest.approx(b[comp] * mb * s, rel=1e-12, abs=1.0), comp


def test_without_mtp_matches_megatron_without_mtp():
    m = get_model("deepseek-v3")
    inv = model_ops(m, micro_batch=1, seq_len=4096, split=Split(ep=64), mtp=False)
    assert sum(x.model_flops for x in inv) == pytest.approx(flops_per_token(m, 4096, mtp=False) * 4096, rel=1e-12)


def _csv_rows(shared):
    with open(shared / "data" / "h200_gemm_attention.csv") as fh:
        return [r for r in csv.DictReader(fh) if r["dtype"] == "bf16"]


def test_deepseek_v3_gemm_shapes_match_the_measured_table(shared):
    m = get_model("deepseek-v3")
    ops = {o.name: o for kind in ("dense", "moe", "lm_head")
           for o in layer_ops(m, kind, micro_batch=1, seq_len=4096)}
    checked = 0
    for row in _csv_rows(shared):
        if row["kind"] != "gemm" or row["name"].startswith("square_"):
            continue
        shape = (int(row["M"]), int(row["N"]), int(row["K"]))
        mt = re.match(r"expert_(\w+?)_t(\d+):(\w+)", row["name"])
        if mt:
            part, t, phase = mt.groups()
            eops = {o.name: o for o in layer_ops(m, "moe", micro_batch=1, seq_len=4096, tokens_per_expert=int(t))}
            op = eops[f"expert_{part}:{phase}"]
            assert op.kind == "grouped_gemm"
        else:
            op = ops[row["name"]]
            assert op.kind == "gemm"
        assert (op.m, op.n, op.k) == shape, row["name"]
        assert op.flops / op.groups == pytest.approx(float(row["flops"] or 2 * shape[0] * shape[1] * shape[2]))
        checked += 1
    assert checked >= 50


def test_attention_shapes_match_the_measured_table(shared):
    m = get_model("deepseek-v3")
    for s in (4096, 8192):
        att = next(o for o in layer_ops(m, "moe", micro_batch=1, seq_len=s) if o.name == "core_attention:fwd")
        tag = f"sdpa_b{att.batch}_s{att.seq_q}_h{att.heads}_dqk{att.d_qk}_dv{att.d_v}_causal"
        assert tag in {r["name"] for r in _csv_rows(shared) if r["kind"] == "attention_fwd"}


def test_backward_gemms_are_derived_from_forward():
    ops = layer_ops(get_model("qwen3-30b-a3b"), "moe", micro_batch=1, seq_len=2048, split=Split(tp=2, ep=4))
    by = {o.name: o for o in ops}
    fwd = [o for o in ops if o.phase == "fwd" and o.kind in ("gemm", "grouped_gemm")]
    assert fwd
    for f in fwd:
        base = f.name.split(":")[0]
        d, w = by[f"{base}:dgrad"], by[f"{base}:wgrad"]
        assert (d.m, d.n, d.k) == (f.m, f.k, f.n) and (w.m, w.n, w.k) == (f.k, f.n, f.m)
        assert d.flops == w.flops == f.flops
    # backward comes after forward, in reverse layer order
    names = [o.name for o in ops]
    assert names.index("attn_qkv:fwd") < names.index("expert_down:fwd") < names.index("expert_down:dgrad")
    assert names.index("expert_down:dgrad") < names.index("attn_qkv:dgrad")


def test_tp_with_sequence_parallelism_divides_gemm_work():
    m = get_model("deepseek-v3")
    def gemm_work(split):
        return sum(o.flops for o in layer_ops(m, "dense", micro_batch=1, seq_len=4096, split=split)
                   if o.kind == "gemm")
    one = gemm_work(Split())
    assert gemm_work(Split(tp=8)) * 8 == pytest.approx(one, rel=1e-12)
    # without sequence parallelism MLA's down-projections run on every TP rank
    assert gemm_work(Split(tp=8, sp=False)) * 8 > one * 1.01


def test_real_work_differs_from_model_flops_only_where_documented():
    m = get_model("deepseek-v3")
    ops = layer_ops(m, "moe", micro_batch=1, seq_len=4096)
    router = [o for o in ops if o.name.startswith("router:")]
    assert all(o.model_flops == 0 and o.flops == 2 * 4096 * 256 * 7168 for o in router)
    others = [o for o in ops if o.kind != "attention" and not o.name.startswith("router:")]
    gem = [o for o in others if o.kind != "memory"]
    assert sum(o.flops for o in gem) == pytest.approx(sum(o.model_flops for o in gem))
    fwd = next(o for o in ops if o.name == "core_attention:fwd")
    bwd = next(o for o in ops if o.name == "core_attention:bwd")
    assert bwd.model_flops == 2 * fwd.model_flops
    assert bwd.flops == pytest.approx(fwd.flops * (3 * 192 + 2 * 128) / (192 + 128))


def test_imbalanced_experts_change_work_not_credit():
    m = get_model("deepseek-v3")
    kw = dict(micro_batch=1, seq_len=4096, split=Split(ep=32))
    base = {o.name: o for o in layer_ops(m, "moe", **kw)}
    hot = {o.name: o for o in layer_ops(m, "moe", tokens_per_expert=6000, **kw)}
    up = "expert_up_gate:fwd"
    assert base[up].m == 4096 and hot[up].m == 6000
    assert hot[up].flops == pytest.approx(base[up].flops * 6000 / 4096)
    assert hot[up].model_flops == base[up].model_flops


def test_memory_ops_scale_with_their_shard():
    m = get_model("llama3-8b")
    def norm_bytes(split, mb=1):
        return next(o.bytes_moved for o in layer_ops(m, "dense", micro_batch=mb, seq_len=4096, split=split)
                    if o.name == "input_norm:fwd")
    assert norm_bytes(Split()) == 2 * 4096 * 4096 * 2  # read x, write y, bf16
    assert norm_bytes(Split(tp=4)) * 4 == norm_bytes(Split())
    assert norm_bytes(Split(tp=4, sp=False)) == norm_bytes(Split())
    assert norm_bytes(Split(), mb=3) == 3 * norm_bytes(Split())
    assert all(o.bytes_moved > 0 for o in layer_ops(m, "dense", micro_batch=1, seq_len=64) if o.kind == "memory")


@pytest.mark.parametrize("kwargs,match", [
    (dict(split=Split(tp=3)), "tp = 3: must divide hidden"),
    (dict(split=Split(ep=3)), "ep = 3: must divide n_experts = 256"),
    (dict(split=Split(tp=2, sp=False)), "sp = False: MoE layers"),
    (dict(split=Split(cp=3)), "cp = 3: seq_len = 4096"),
    (dict(tokens_per_expert=-1), "tokens_per_expert"),
    (dict(seq_len=0), "seq_len = 0"),
])
def test_bad_splits_are_one_line_errors(kwargs, match):
    args = dict(micro_batch=1, seq_len=4096) | kwargs
    with pytest.raises(SpecError, match=match):
        layer_ops(get_model("deepseek-v3"), "moe", **args)


def test_split_and_kind_validation():
    with pytest.raises(SpecError, match="tp = 0"):
        Split(tp=0)
    with pytest.raises(SpecError, match="layer kind 'moe': model 'llama3-8b' has no experts"):
        layer_ops(get_model("llama3-8b"), "moe", micro_batch=1, seq_len=128)
    with pytest.raises(SpecError, match="layer kind 'ffn'"):
        layer_ops(get_model("llama3-8b"), "ffn", micro_batch=1, seq_len=128)
    with pytest.raises(SpecError, match="a dense model has no experts"):
        layer_ops(get_model("llama3-8b"), "dense", micro_batch=1, seq_len=128, split=Split(ep=2))


def test_output_gemm_runs_on_megatrons_padded_vocab_shard():
    def head(name, tp):
        m = get_model(name)
        return next(o for o in layer_ops(m, "lm_head", micro_batch=1, seq_len=2048, split=Split(tp=tp))
                    if o.name == "lm_head:fwd")
    assert head("gpt3-175b", 1).n == 50304            # 50257 padded to a multiple of 128
    assert head("deepseek-v3", 1).n == 129280         # already a multiple of 128
    assert head("deepseek-v3", 8).n * 8 == 130048     # multiple of 128 x 8
    h = head("gpt3-175b", 1)
    assert h.model_flops == pytest.approx(2 * 2048 * 50257 * 12288) and h.flops > h.model_flops


def test_attention_ops_carry_kv_heads():
    gqa = next(o for o in layer_ops(get_model("llama3-70b"), "dense", micro_batch=1, seq_len=1024,
                                    split=Split(tp=4)) if o.kind == "attention")
    assert (gqa.heads, gqa.kv_heads, gqa.d_qk, gqa.d_v) == (16, 2, 128, 128)
    mla = next(o for o in layer_ops(get_model("deepseek-v2-lite"), "moe", micro_batch=1, seq_len=1024)
               if o.kind == "attention")
    assert (mla.heads, mla.kv_heads, mla.d_qk, mla.d_v) == (16, 16, 192, 128)
