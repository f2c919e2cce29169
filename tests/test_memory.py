"""Memory per GPU: parameter bytes against parameter counts, activations against closed forms."""

from __future__ import annotations

import pytest

from topologies.errors import SpecError
from workloads.flops import param_counts
from workloads.layout import Layout
from workloads.memory import (activation_bytes_per_token, check_fits, inflight_microbatches, memory_per_gpu,
                              params_per_gpu)
from workloads.models import get_model


def test_single_gpu_params_are_the_model():
    spec = get_model("llama3-8b")
    lay = Layout(gpus=1, global_batch=1, seq_len=4096)
    (dense, expert), = params_per_gpu(spec, lay)
    assert expert == 0 and dense == pytest.approx(param_counts(spec).total)
    m = memory_per_gpu(spec, lay)
    # Megatron: 2 B weights + 4 B grads replicated, 12 B optimizer sharded over dp = 1
    assert m.weights_bytes == pytest.approx(2 * dense) and m.grads_bytes == pytest.approx(4 * dense)
    assert m.optimizer_bytes == pytest.approx(12 * dense)


def test_experts_split_over_ep_and_pipeline_ranks_add_up():
    spec = get_model("deepseek-v3")
    pc = param_counts(spec)
    lay = Layout(gpus=256, pp=2, vpp=8, ep=32, global_batch=4096)
    per = params_per_gpu(spec, lay)
    expert_total = sum(e for _, e in per) * lay.ep
    assert expert_total == pytest.approx((pc.n_moe_layers + spec.mtp_layers) * pc.n_experts * pc.expert)
    dense_total = sum(d for d, _ in per)
    assert dense_total == pytest.approx(pc.total + pc.mtp_total - (pc.n_moe_layers + 1) * pc.n_experts * pc.expert)


def test_dense_activations_match_the_closed_form():
    spec = get_model("llama3-70b")
    h, f, nh, nkv, d = spec.hidden, spec.ffn_hidden, spec.n_heads, spec.n_kv_heads, spec.head_dim
    # norms 2h; qkv input h, q, k, v, o, lse; mlp input h, swiglu input 2f, fc2 input f; BF16
    closed = 2 * (2 * h + h + nh * d + 2 * nkv * d + nh * d + nh + h + 3 * f)
    assert activation_bytes_per_token(spec, "dense") == pytest.approx(closed)
    assert activation_bytes_per_token(spec, "dense", "full") == 2 * h
    assert activation_bytes_per_token(spec, "dense", "selective") < closed


def test_inflight_microbatches_follow_the_schedules():
    assert inflight_microbatches(Layout(gpus=8, pp=8, global_batch=64)) == 8
    assert inflight_microbatches(Layout(gpus=8, pp=8, global_batch=64), 7) == 1
    inter = Layout(gpus=8, pp=8, vpp=4, global_batch=64)
    assert inflight_microbatches(inter) == pytest.approx(8 * (1 + 7 / 32))   # Megatron's formula
    assert inflight_microbatches(Layout(gpus=8, pp=8, global_batch=64, schedule="dualpipe")) == 9


def test_published_memory_anatomy_of_deepseek_v3():
    # Megatron Core MoE report (arXiv 2603.07685, via notes/moe-breakdowns.md B2): PP4 x VPP4 x EP64 on 256
    # GPUs: weights + grads 36.4, master weights + optimizer 32.1, activations 131.0 (Megatron prints binary
    # units: theoretical_memory_usage.py divides by 1024 * 1024)
    # Megatron's even split of the 61 layers over 16 virtual stages (the ends one layer lighter)
    m = memory_per_gpu(get_model("deepseek-v3"), Layout(gpus=256, pp=4, vpp=4, ep=64, global_batch=4096),
                       pp_layout="Ettt|(tttt|)*13ttt|tttmL")
    gib = 2.0 ** 30
    assert (m.weights_bytes + m.grads_bytes) / gib == pytest.approx(36.4, rel=0.02)
    assert m.optimizer_bytes / gib == pytest.approx(32.1, rel=0.02)
    assert m.activations_bytes / gib == pytest.approx(131.0, rel=0.05)


def test_refuses_what_does_not_fit():
    m = memory_per_gpu(get_model("llama3-70b"), Layout(gpus=8, global_batch=8, seq_len=8192))
    with pytest.raises(SpecError, match=r"memory: .* GiB per GPU \(weights .*exceeds the 74.5 GiB of a H100"):
        check_fits(m, 80e9, "H100")
