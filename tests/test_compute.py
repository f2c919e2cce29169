"""The compute model: fit reproduction, held-out error, physical invariants, errors."""

from __future__ import annotations

import csv
import math

import numpy as np
import pytest

from topologies import catalog
from topologies.errors import FabricEmuError, SpecError
from workloads import compute as cm
from workloads import compute_calibrate as cc
from workloads import compute_fit as cf


@pytest.fixture(scope="module")
def calibration() -> cc.Calibration:
    return cc.calibrate()


def _close(a: float, b: float, rel: float = 2e-4) -> bool:
    return math.isclose(a, b, rel_tol=rel, abs_tol=1e-12)


# ---------------------------------------------------------------- fit reproduction

def test_fit_reproduces_the_shipped_constants(calibration):
    cal = calibration
    for p in ("bf16", "fp8"):
        assert _close(cal.gemm.eta[p], cf.GEMM_H200.eta[p])
        assert _close(cal.gemm.tile_overhead_s[p], cf.GEMM_H200.tile_overhead_s[p])
    assert _close(cal.gemm.harness_floor_s, cf.GEMM_H200.harness_floor_s)
    assert set(cal.gemm_carry) == set(cf.GEMM_CARRY)
    for key, v in cal.gemm_carry.items():
        assert _close(v, cf.GEMM_CARRY[key]), key
    for key, v in cal.gemm_launch_s.items():
        assert _close(v, cf.GEMM_LAUNCH_S[key]), key
    for arch, ap in cal.attention.items():
        shipped = cf.ATTENTION[arch]
        for key, v in ap.eta.items():
            assert _close(v, shipped.eta[key]), (arch, key)
        for key, v in ap.block_overhead_s.items():
            assert _close(v, shipped.block_overhead_s[key]), (arch, key)
        assert _close(ap.exp_exposed, shipped.exp_exposed, rel=1e-3) or ap.exp_exposed < 1e-6
    for group, stats in cal.report.items():
        for key, v in stats.items():
            assert _close(v, cf.FIT_REPORT[group][key], rel=1e-3), (group, key)


def test_fit_from_the_shared_data_reproduces_the_constants(shared):
    cal = cc.calibrate(shared / "data" / "h200_gemm_attention.csv", shared / "data" / "gpu_kernel_throughput.csv")
    for group, stats in cal.report.items():
        for key, v in stats.items():
            assert _close(v, cf.FIT_REPORT[group][key], rel=1e-3), (group, key)
    for key, v in cal.gemm_carry.items():
        assert _close(v, cf.GEMM_CARRY[key]), key


def test_shipped_data_are_copies_of_the_shared_data(shared):
    ours = (cc._data_path("h200_gemm_attention.csv", None)).read_bytes()
    assert ours == (shared / "data" / "h200_gemm_attention.csv").read_bytes()
    with open(shared / "data" / "gpu_kernel_throughput.csv", newline="") as fh:
        published = {tuple(r.values()) for r in csv.DictReader(fh)}
    shipped = cc.load_kernel_rows()
    assert shipped and all(tuple(r.values()) in published for r in shipped)


def test_split_is_a_rule_on_shapes_and_holds_out_a_real_share():
    cases = cc.h200_gemm_cases(cc.load_h200_rows())
    held = [c for c in cases if c.held_out]
    assert 0.15 < len(held) / len(cases) < 0.35
    # both dtypes of a shape are on the same side of the split
    side = {}
    for c in cases:
        side.setdefault(c.label.split("/")[0], set()).add(c.held_out)
    assert all(len(s) == 1 for s in side.values())
    assert {c.label.split("/")[0] for c in held} >= {"expert_up_gate_t256:fwd", "expert_down_t4096:fwd",
                                                     "mla_kv_a:dgrad", "shared_down:wgrad", "square_4096:fwd"}


# ----------------------------------------------------------------- held-out error

#: Bounds on the mean / max absolute relative error of time that the fit achieves
#: (docs/compute-model.md lists the numbers; each bound is the achieved value
#: rounded up by about one percentage point).
HELD_OUT_BOUNDS = {
    "gemm_h200": (0.10, 0.31),
    "gemm_hopper_mxfp8": (0.085, 0.25),
    "gemm_blackwell": (0.18, 0.33),
    "attention_h200": (0.08, 0.40),
    "attention_blackwell": (0.13, 0.33),
    "attention_check_h100_fa3": (0.12, 0.32),
    "attention_check_b200_fa4": (0.22, 0.44),
}


@pytest.mark.parametrize("group", sorted(HELD_OUT_BOUNDS))
def test_held_out_error_is_within_the_stated_bound(calibration, group):
    mean_b, max_b = HELD_OUT_BOUNDS[group]
    res = calibration.residuals[group]
    held = np.array([abs(e) for _, h, e in res if h])
    assert len(held) >= 6
    assert held.mean() <= mean_b and held.max() <= max_b


def test_api_reproduces_the_fitted_h200_gemm_model():
    # the API is the fitted model with the GPU-side launch overhead instead of the harness floor
    for m, n, k in ((4096, 7168, 16384), (128, 4096, 7168), (7168, 4096, 128)):
        for p in ("bf16", "fp8"):
            b_in, b_out = cf.BYTES_PER_ELEMENT[p]
            t = cm.gemm_time_core(m, n, k, 1, peak_flops=catalog.peak_flops("H200", p), sm_count=132,
                                  hbm_Bps=4.8e12, eta=cf.GEMM_H200.eta[p],
                                  tile_overhead_s=cf.GEMM_H200.tile_overhead_s[p],
                                  launch_s=cf.GEMM_LAUNCH_S["hopper"], bytes_in=b_in, bytes_out=b_out)
            assert _close(cm.gemm_time_s("H200", p, m, n, k), float(t), rel=1e-12)


# ------------------------------------------------------------ physical invariants

def test_gemm_never_beats_the_roofline():
    for gpu in ("A100", "H100", "H200", "H800", "H20", "B200", "B300", "GB200", "GB300"):
        for p in ("bf16", "fp8", "mxfp8"):
            if gpu == "A100" and p != "bf16":
                continue
            f = cm.gpu_figures(gpu, p)
            for m, n, k in ((16384, 16384, 16384), (128, 7168, 2048), (4096, 576, 7168)):
                t = cm.gemm_time_s(gpu, p, m, n, k)
                b_in, b_out = cf.BYTES_PER_ELEMENT[p]
                assert t >= 2.0 * m * n * k / f.peak_flops
                assert t >= ((m * k + k * n) * b_in + m * n * b_out) / f.hbm_Bps


def _reference_gemm_time(gpu: str, p: str, m: int, n: int, k: int, g: int = 1) -> float:
    """The documented GEMM form, written out with scalar Python arithmetic."""
    f = cm.gpu_figures(gpu, p)
    eta = f.gemm_eta * (f.grouped_factor if g > 1 else 1.0)
    b_in, b_out = cf.BYTES_PER_ELEMENT[p]
    bw = f.hbm_Bps * cf.HBM_EFFICIENCY
    best = math.inf
    for bm, bn in cf.GEMM_TILES:
        for s in cf.GEMM_SPLIT_K:
            tiles = g * math.ceil(m / bm) * math.ceil(n / bn) * s
            t_math = math.ceil(tiles / f.sm_count) * (
                2 * bm * bn * math.ceil(k / s) / (f.peak_flops / f.sm_count * eta) + f.gemm_tile_overhead_s)
            nbytes = g * ((m * k + k * n) * b_in + m * n * b_out) + (g * m * n * 4 * 2 * s if s > 1 else 0)
            best = min(best, max(t_math, nbytes / bw))
    return best + f.launch_s


@pytest.mark.parametrize("gpu, p", [("H200", "bf16"), ("H800", "mxfp8"), ("GB300", "mxfp8"), ("A100", "bf16")])
def test_gemm_time_is_the_documented_form(gpu, p):
    for m, n, k, g in ((16384, 16384, 16384, 1), (128, 7168, 2048, 8), (4096, 576, 7168, 1), (1000, 999, 77, 3)):
        assert cm.gemm_time_s(gpu, p, m, n, k, groups=g) == pytest.approx(_reference_gemm_time(gpu, p, m, n, k, g),
                                                                          rel=1e-12)


def test_wave_quantisation_of_a_compute_bound_gemm(monkeypatch):
    # with one tile shape and no split-K, 132 tiles fill one wave of an H200 and 133 need two
    monkeypatch.setattr(cf, "GEMM_TILES", ((128, 128),))
    monkeypatch.setattr(cf, "GEMM_SPLIT_K", (1,))
    cm._gemm_scalar.cache_clear()
    launch = cf.GEMM_LAUNCH_S["hopper"]
    one = cm.gemm_time_s("H200", "bf16", 128 * 12, 128 * 11, 65536) - launch  # 132 tiles
    two = cm.gemm_time_s("H200", "bf16", 128 * 7, 128 * 19, 65536) - launch  # 133 tiles
    assert two / one == pytest.approx(2.0, rel=1e-12)
    monkeypatch.undo()
    cm._gemm_scalar.cache_clear()
    # the tile and split-K choice smooths the step (as stream-K kernels do)
    smooth = cm.gemm_time_s("H200", "bf16", 128 * 7, 128 * 19, 65536) - launch
    assert one < smooth < 1.2 * one


def test_gemm_time_is_monotone_in_every_dimension():
    base = np.array([128, 512, 1000, 2048, 4096, 7168, 16384])
    for gpu, p in (("H200", "bf16"), ("GB300", "mxfp8")):
        for axis in range(3):
            dims = [np.full_like(base, 4096) for _ in range(3)]
            dims[axis] = base
            t = cm.gemm_time_s(gpu, p, *dims)
            assert np.all(np.diff(t) >= 0)


def test_memory_bound_gemm_tends_to_the_bandwidth_model():
    # k = 8: no reuse; time is the bytes over the achieved HBM bandwidth
    m = n = 16384
    t = cm.gemm_time_s("H200", "bf16", m, n, 8)
    bytes_moved = (m * 8 + 8 * n) * 2 + m * n * 2
    assert t == pytest.approx(bytes_moved / (4.8e12 * 4165.14e9 / 4.8e12) + cf.GEMM_LAUNCH_S["hopper"], rel=1e-9)


def test_grouped_gemm_shares_waves_and_launch():
    # one launch and shared waves: never slower than g separate problems at the grouped kernel's efficiency
    for gpu, p in (("H200", "fp8"), ("GB300", "mxfp8")):
        f = cm.gpu_figures(gpu, p)
        for m in (256, 4096):
            one = cm.gemm_time_s(gpu, p, m, 4096, 7168)
            for g in (2, 8, 32):
                grouped = cm.gemm_time_s(gpu, p, m, 4096, 7168, groups=g)
                assert one < grouped <= g * one / f.grouped_factor


def test_uneven_grouped_gemm_counts_every_groups_tiles():
    # equal counts reproduce the grouped API; uneven counts are the documented form written out by hand
    even = cm.grouped_gemm_time_s("H200", "fp8", [1024] * 4, 4096, 7168)
    assert even == cm.gemm_time_s("H200", "fp8", 1024, 4096, 7168, groups=4)
    tokens = [3000, 1000, 37, 0, 5]
    f = cm.gpu_figures("H200", "fp8")
    bw = f.hbm_Bps * cf.HBM_EFFICIENCY
    best = math.inf
    for bm, bn in cf.GEMM_TILES:
        for s in cf.GEMM_SPLIT_K:
            tiles = sum(math.ceil(t / bm) for t in tokens) * math.ceil(4096 / bn) * s
            t_math = math.ceil(tiles / 132) * (2 * bm * bn * math.ceil(7168 / s) / (f.peak_flops / 132 * f.gemm_eta)
                                               + f.gemm_tile_overhead_s)
            nbytes = (4042 * 7168 + 4 * 7168 * 4096) * 1 + 4042 * 4096 * 2 + (4042 * 4096 * 8 * s if s > 1 else 0)
            best = min(best, max(t_math, nbytes / bw))
    assert cm.grouped_gemm_time_s("H200", "fp8", tokens, 4096, 7168) == pytest.approx(best + f.launch_s, rel=1e-12)
    # routing all tokens to fewer experts reads fewer weights
    assert cm.grouped_gemm_time_s("B200", "mxfp8", [256, 0, 0, 0], 4096, 7168) < cm.grouped_gemm_time_s(
        "B200", "mxfp8", [64, 64, 64, 64], 4096, 7168)
    with pytest.raises(SpecError, match="^tokens_per_group:"):
        cm.grouped_gemm_time_s("H200", "fp8", [0, 0], 4096, 7168)


def test_vectorised_equals_scalar():
    m = np.array([128, 1024, 4096, 16384])
    n = np.array([4096, 7168, 2048, 576])
    t = cm.gemm_time_s("B200", "bf16", m, n, 7168, groups=np.array([1, 8, 4, 1]))
    for i in range(4):
        assert t[i] == cm.gemm_time_s("B200", "bf16", int(m[i]), int(n[i]), 7168, groups=int([1, 8, 4, 1][i]))
    a = cm.attention_time_s("H200", 1, 128, np.array([2048, 4096]), 192, 128)
    assert a[1] == cm.attention_time_s("H200", 1, 128, 4096, 192, 128)


def test_carry_scales_compute_bound_time_by_peak_and_efficiency():
    # the carried efficiency is eta_H200[base] x carry[arch, precision] x MAMF adjustment
    for gpu, p, base in (("GB300", "mxfp8", "fp8"), ("B200", "bf16", "bf16"), ("H800", "mxfp8", "fp8"),
                         ("A100", "bf16", "bf16"), ("H20", "fp8", "fp8")):
        f = cm.gpu_figures(gpu, p)
        assert f.gemm_eta == pytest.approx(cf.GEMM_H200.eta[base] * cf.GEMM_CARRY[(f.arch, p)] * f.mamf_adjustment)
    # with no fixed costs a compute-bound GEMM scales exactly with 1 / (peak x eta)
    kw = dict(sm_count=160, hbm_Bps=8e12, tile_overhead_s=0.0, launch_s=0.0, bytes_in=1, bytes_out=2)
    t1 = cm.gemm_time_core(16384, 16384, 16384, 1, peak_flops=4.5e15, eta=0.7, **kw)
    t2 = cm.gemm_time_core(16384, 16384, 16384, 1, peak_flops=5.0e15, eta=0.8, **kw)
    assert float(t1 / t2) == pytest.approx(5.0 * 0.8 / (4.5 * 0.7), rel=1e-12)
    # the MAMF adjustment is the catalog's measured best-matmul fraction over the reference GPU's
    gb200 = catalog.gpu("GB200")
    b200 = catalog.gpu("B200")
    expect = (gb200.mamf_bf16_flops / gb200.peak_bf16_flops) / (b200.mamf_bf16_flops / b200.peak_bf16_flops)
    assert cm.gpu_figures("GB200", "bf16").mamf_adjustment == pytest.approx(expect)


def test_reserved_sms_run_the_waves_on_the_remaining_sms():
    # a compute-bound GEMM on 112 of 132 SMs: 132/112 slower up to wave rounding and the fixed costs
    full = cm.gemm_time_s("H800", "mxfp8", 16384, 16384, 16384)
    part = cm.gemm_time_s("H800", "mxfp8", 16384, 16384, 16384, reserved_sms=20)
    assert part / full == pytest.approx(132 / 112, rel=0.02)
    a_full = cm.attention_time_s("GB200", 2, 64, 32768, 128, 128)
    a_part = cm.attention_time_s("GB200", 2, 64, 32768, 128, 128, reserved_sms=24)
    assert a_part / a_full == pytest.approx(144 / 120, rel=0.01)


def test_api_reproduces_the_fitted_published_rows(calibration):
    # the residuals the fit reports are the API's own errors on those rows (constants rounded to 6 digits)
    errs = {label: e for label, _, e in calibration.residuals["gemm_blackwell"]}
    t = cm.gemm_time_s("GB200", "mxfp8", 4096, 2048, 7168, groups=8)
    flops = 2.0 * 4096 * 2048 * 7168 * 8
    assert t / (flops / 2672e12) - 1 == pytest.approx(errs["Megatron cuBLAS grouped mxfp8 GB200 (8 x 4096 assumed)"],
                                                      rel=1e-4)
    errs = {label: e for label, _, e in calibration.residuals["gemm_hopper_mxfp8"]}
    t = cm.gemm_time_s("H800", "mxfp8", 4096, 7168, 16384)
    assert t / (2.0 * 4096 * 7168 * 16384 / 1426e12) - 1 == pytest.approx(errs["deepgemm gemm g1 4096x7168x16384"],
                                                                         rel=1e-4)
    cases = {c.label: c for c in cc.attention_cases(cc.load_h200_rows(), cc.load_kernel_rows())}
    for label, _, e in calibration.residuals["attention_blackwell"][::37]:
        c = cases[label]
        t = cm.attention_time_s(c.gpu, c.batch, c.heads, c.seq, c.d_qk, c.d_v, causal=c.causal,
                                backward=c.backward, precision=c.precision)
        assert t / c.time_s - 1 == pytest.approx(e, rel=1e-3, abs=1e-5)


def test_attention_causal_half_and_backward_cost():
    nb = 32768 // 128
    full = cm.attention_time_s("GB200", 2, 64, 32768, 128, 128, causal=False)
    causal = cm.attention_time_s("GB200", 2, 64, 32768, 128, 128, causal=True)
    launch = cf.GEMM_LAUNCH_S["blackwell"]
    ap = cf.ATTENTION["blackwell"]
    units_s = 2 * 64 * nb * ap.block_overhead_s["fwd"] / 144
    assert (causal - launch - units_s) / (full - launch - units_s) == pytest.approx((nb + 1) / (2 * nb), rel=1e-9)
    fwd = cm.attention_time_s("H200", 1, 128, 4096, 192, 128)
    bwd = cm.attention_time_s("H200", 1, 128, 4096, 192, 128, backward=True)
    assert 1.8 < bwd / fwd < 4.0


def test_attention_flops_follow_the_csv_convention():
    rows = [r for r in cc.load_h200_rows() if r.kind.startswith("attention")]
    with open(cc._data_path("h200_gemm_attention.csv", None), newline="") as fh:
        flops = {(r["kind"], r["name"]): float(r["flops"]) for r in csv.DictReader(fh) if r["kind"] != "gemm"}
    for r in rows:
        c = next(a for a in cc.attention_cases([r], []))
        f = cm.attention_flops(c.batch, c.heads, c.seq, c.d_qk, c.d_v, causal=True, backward=c.backward)
        assert f == pytest.approx(flops[(r.kind, r.name)], rel=1e-12)


def test_memory_time_is_bytes_over_achieved_bandwidth():
    for gpu in ("H100", "B200", "GB300", "H20"):
        f = cm.gpu_figures(gpu, "bf16")
        assert cm.memory_time_s(gpu, 1e9, kernels=0) == pytest.approx(1e9 / (f.hbm_Bps * cf.HBM_EFFICIENCY))
        assert cm.memory_time_s(gpu, 1e9, kernels=3) - cm.memory_time_s(gpu, 1e9, kernels=0) == pytest.approx(
            3 * f.launch_s)


def test_compute_model_describes_itself():
    model = cm.compute_model()
    assert set(model.split_rules) == set(model.fit_report)
    assert "ceil" in model.gemm_form and model.hbm_efficiency == cf.HBM_EFFICIENCY
    with pytest.raises(Exception):
        model.gemm_form = "x"  # frozen


# ---------------------------------------------------------------------- errors

@pytest.mark.parametrize("call, field", [
    (lambda: cm.gemm_time_s("H900", "bf16", 1, 1, 1), "gpu"),
    (lambda: cm.gemm_time_s("H200", "fp4", 1, 1, 1), "precision"),
    (lambda: cm.gemm_time_s("A100", "fp8", 1, 1, 1), "precision"),
    (lambda: cm.gemm_time_s("H200", "bf16", 0, 1, 1), "m"),
    (lambda: cm.gemm_time_s("H200", "bf16", 8, 8, 8, groups=-1), "groups"),
    (lambda: cm.attention_time_s("H200", 1, 8, float("nan"), 64, 64), "seq"),
    (lambda: cm.memory_time_s("H200", -1.0), "bytes_moved"),
    (lambda: cm.gemm_time_s("H200", "bf16", 8, 8, 8, reserved_sms=132), "reserved_sms"),
    (lambda: cm.attention_time_s("B200", 1, 8, 128, 64, 64, reserved_sms=-1), "reserved_sms"),
])
def test_bad_input_gives_one_line_naming_the_field(call, field):
    with pytest.raises(SpecError) as err:
        call()
    assert isinstance(err.value, FabricEmuError)
    msg = str(err.value)
    assert msg.startswith(f"{field}:") and "\n" not in msg
