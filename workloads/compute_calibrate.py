"""The fit behind :mod:`workloads.compute_fit`: loaders, fit/held-out split, least squares.

Not used at run time; :mod:`workloads.compute` reads only the fitted constants.
``tests/test_compute.py`` re-runs :func:`calibrate` on the shipped data and
checks it reproduces the constants; :func:`render_fitted_block` prints the
``BEGIN FITTED`` block of ``compute_fit.py`` from a calibration.

Every fit minimises a robust (``soft_l1``, scale 0.05) least-squares loss on
``log(model time / measured time)``, i.e. on relative error, so that a few
anomalous kernels (e.g. cuDNN's FP8 causal backward) do not drag the rest.
The split into fit and held-out rows is a rule on the shape (never on the
residual), fixed before fitting: see :data:`workloads.compute.ComputeModel.split_rules`
and the ``held_*`` functions below.

Examples
--------
>>> rows = load_h200_rows()
>>> sum(r.kind == "gemm" for r in rows), sum(r.kind.startswith("attention") for r in rows)
(134, 8)
>>> held_out_h200_gemm("expert_up_gate_t256:fwd"), held_out_h200_gemm("expert_up_gate_t512:fwd")
(True, False)
"""

from __future__ import annotations

import csv
import re
import types
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Optional

import numpy as np
from scipy.optimize import least_squares

from topologies import catalog
from workloads import compute as cm
from workloads import compute_fit as cf

__all__ = [
    "H200Row",
    "GemmCase",
    "AttentionCase",
    "Calibration",
    "load_h200_rows",
    "load_kernel_rows",
    "held_out_h200_gemm",
    "h200_gemm_cases",
    "hopper_mxfp8_cases",
    "blackwell_gemm_cases",
    "attention_cases",
    "calibrate",
    "render_fitted_block",
]

_EXTRA = "extra(groups/tokens_per_group|head_dim|seq_len|notes)"
_LOSS = dict(loss="soft_l1", f_scale=0.05)


@dataclass(frozen=True)
class H200Row:
    """One row of ``h200_gemm_attention.csv``."""

    kind: str
    name: str
    dtype: str
    m: int
    n: int
    k: int
    median_s: float


@dataclass(frozen=True)
class GemmCase:
    """A measured time of one or more GEMM kernels (summed), with its split flag.

    ``kernels`` is a tuple of ``(m, n, k, groups)``; the measured time covers all
    of them (e.g. a grouped GEMM's forward + dgrad + wgrad).
    """

    label: str
    gpu: str
    precision: str
    kernels: tuple[tuple[int, int, int, int], ...]
    time_s: float
    held_out: bool
    grouped: bool = False  #: a grouped-GEMM kernel (even with one group)


@dataclass(frozen=True)
class AttentionCase:
    """A measured attention time."""

    label: str
    gpu: str
    precision: str
    batch: int
    heads: int
    seq: int
    d_qk: int
    d_v: int
    causal: bool
    backward: bool
    time_s: float
    held_out: bool


def _data_path(name: str, path: Optional[Path]) -> Path:
    if path is not None:
        return Path(path)
    return Path(str(resources.files("workloads") / "data" / name))


def load_h200_rows(path: Optional[Path] = None) -> list[H200Row]:
    """Rows of the H200 measurement CSV (the shipped copy unless ``path`` is given); failed cases skipped."""
    out = []
    with open(_data_path("h200_gemm_attention.csv", path), newline="") as fh:
        for r in csv.DictReader(fh):
            if r["error"] or not r["median_s"]:
                continue
            out.append(H200Row(r["kind"], r["name"], r["dtype"], int(r["M"] or 0), int(r["N"] or 0),
                               int(r["K"] or 0), float(r["median_s"])))
    return out


def load_kernel_rows(path: Optional[Path] = None) -> list[dict[str, str]]:
    """Rows of the published kernel-throughput CSV (the shipped subset unless ``path`` is given).

    Examples
    --------
    >>> rows = load_kernel_rows()
    >>> len(rows), all(r["source"] for r in rows)
    (493, True)
    """
    with open(_data_path("kernel_throughput.csv", path), newline="") as fh:
        return list(csv.DictReader(fh))


# ------------------------------------------------------------------- split rules

def held_out_h200_gemm(name: str) -> bool:
    """The H200 GEMM split rule: expert GEMMs at 256 and 4,096 tokens, mla_kv_a, shared_down, square_4096."""
    op = name.split(":")[0]
    t = re.fullmatch(r"expert_\w+_t(\d+)", op)
    if t:
        return t.group(1) in ("256", "4096")
    return op in ("mla_kv_a", "shared_down", "square_4096")


def h200_gemm_cases(rows: Sequence[H200Row]) -> list[GemmCase]:
    """The H200 GEMM rows as cases (bf16 and per-tensor fp8).

    Examples
    --------
    >>> cases = h200_gemm_cases(load_h200_rows())
    >>> len(cases), sum(c.held_out for c in cases)
    (134, 30)
    """
    return [GemmCase(f"{r.name}/{r.dtype}", "H200", r.dtype, ((r.m, r.n, r.k, 1),), r.median_s,
                     held_out_h200_gemm(r.name)) for r in rows if r.kind == "gemm"]


def _time_from_tflops(flops: float, tflops: str) -> float:
    return flops / (float(tflops) * 1e12)


def hopper_mxfp8_cases(rows: Sequence[Mapping[str, str]]) -> list[GemmCase]:
    """DeepGEMM README rows on H800 (FP8 block-scaled = our Hopper mxfp8); time = FLOPs / published TFLOPS.

    Examples
    --------
    >>> cases = hopper_mxfp8_cases(load_kernel_rows())
    >>> len(cases), sum(c.held_out for c in cases), sum(c.grouped for c in cases)
    (28, 16, 10)
    """
    out = []
    for r in rows:
        if r["gpu"] != "H800" or not r["source"].startswith("deepseek-ai/DeepGEMM README.md @55ab91f"):
            continue
        m, n, k = int(r["M"]), int(r["N"]), int(r["K"])
        if r["kind"] == "gemm":
            g, held = 1, m == 128
        else:
            kv = dict(x.split("=", 1) for x in r[_EXTRA].split(";"))
            g, m, held = int(kv["groups"]), int(kv["M_per_group"]), True
        out.append(GemmCase(f"deepgemm {r['kind']} g{g} {m}x{n}x{k}", "H800", "mxfp8", ((m, n, k, g),),
                            _time_from_tflops(2.0 * m * n * k * g, r["tflops"]), held, r["kind"] == "grouped_gemm"))
    return out


def blackwell_gemm_cases(rows: Sequence[Mapping[str, str]]) -> list[GemmCase]:
    """B200 GEMM rows (torch.mm BF16 squares, flashinfer MXFP8, torchao grouped MXFP8 and BF16 fwd+bwd) and
    Megatron's cuBLAS grouped MXFP8 GEMM on GB200.

    Examples
    --------
    >>> cases = blackwell_gemm_cases(load_kernel_rows())
    >>> len(cases), sum(c.held_out for c in cases)
    (23, 15)
    """
    out = []
    for r in rows:
        if r["gpu"] == "GB200" and r["kind"] == "grouped_gemm" and r["source"].startswith("NVIDIA/Megatron-LM"):
            # M is not stated; 8 groups of 4,096 tokens is the guide's own configuration (EP32 over 256
            # experts = 8 local experts; MBS1 x seq 4096 x top-8 / 8 = 4,096 tokens per expert). ASSUMPTION.
            m, n, k, g = 4096, int(r["N"]), int(r["K"]), 8
            out.append(GemmCase("Megatron cuBLAS grouped mxfp8 GB200 (8 x 4096 assumed)", "GB200", "mxfp8",
                                ((m, n, k, g),), _time_from_tflops(2.0 * m * n * k * g, r["tflops"]), False, True))
            continue
        if r["gpu"] != "B200":
            continue
        src, x = r["source"], r[_EXTRA]
        if r["kind"] == "gemm" and "pytorch/ao PR #2427" in src and r["precision"] == "BF16":
            m = int(r["M"])
            out.append(GemmCase(f"torch.mm bf16 {m}^3", "B200", "bf16", ((m, m, m, 1),),
                                _time_from_tflops(2.0 * m**3, r["tflops"]), m in (1536, 3072, 6144)))
        elif r["kind"] == "gemm" and "flashinfer" in src and r["precision"] == "MXFP8":
            m, n, k = int(r["M"]), int(r["N"]), int(r["K"])
            out.append(GemmCase(f"flashinfer mxfp8 {m}x{n}x{k}", "B200", "mxfp8", ((m, n, k, 1),),
                                _time_from_tflops(2.0 * m * n * k, r["tflops"]),
                                (m, n, k) in ((1024, 4096, 4096), (16384, 16384, 16384))))
        elif r["kind"] == "grouped_gemm" and "moe_training/README.md" in src and r["precision"] == "MXFP8":
            g = int(re.search(r"groups=(\d+)", x).group(1))
            tpg = int(re.search(r"tokens_per_group=(\d+)", x).group(1))
            t = float(re.search(r"time_us=([\d.]+)", x).group(1)) * 1e-6
            n, k = int(r["N"]), int(r["K"])
            if " fwd " in x:
                kern, label, held = (tpg, n, k, g), "fwd", False
            elif "dA" in x:
                kern, label, held = (tpg, n, k, g), "dgrad", True
            else:  # wgrad 2D-2D: per group (M x N) over K = tokens per group
                kern, label, held = (int(r["M"]), n, tpg, g), "wgrad", True
            out.append(GemmCase(f"torchao grouped mxfp8 {label}", "B200", "mxfp8", (kern,), t, held, True))
        elif r["kind"] == "grouped_gemm" and "moe_training/README.md" in src and r["precision"] == "BF16":
            g = int(re.search(r"groups=(\d+)", x).group(1))
            t = float(re.search(r"time_us=([\d.]+)", x).group(1)) * 1e-6
            tokens, n, k = int(r["M"]), int(r["N"]), int(r["K"])
            tpg = tokens // g
            kern = ((tpg, n, k, g), (tpg, k, n, g), (k, n, tpg, g))  # fwd, dgrad, wgrad
            out.append(GemmCase(f"torch._grouped_mm bf16 fwd+bwd g{g} {tokens}x{n}x{k}", "B200", "bf16", kern, t,
                                True, True))
    return out


def _kv(extra: str) -> dict[str, str]:
    return {a.strip(): b.strip() for a, b in (p.split("=", 1) for p in extra.split(";") if "=" in p)}


def attention_cases(h200_rows: Sequence[H200Row], kernel_rows: Sequence[Mapping[str, str]]) -> list[AttentionCase]:
    """Our H200 SDPA rows and cuDNN's published H200 / GB200 / GB300 rows (time from ``time_ms``).

    Examples
    --------
    >>> cases = attention_cases(load_h200_rows(), load_kernel_rows())
    >>> sorted({c.gpu for c in cases}), sum(c.gpu == "GB300" and not c.held_out for c in cases)
    (['GB200', 'GB300', 'H200'], 0)
    """
    out = []
    for r in h200_rows:
        if not r.kind.startswith("attention"):
            continue
        g = {key: int(re.search(rf"_{key}(\d+)", r.name).group(1)) for key in ("b", "s", "h", "dqk", "dv")}
        out.append(AttentionCase(f"{r.name}/{r.kind}", "H200", "bf16", g["b"], g["h"], g["s"], g["dqk"], g["dv"],
                                 True, r.kind == "attention_bwd", r.median_s, g["s"] in (8192, 16384)))
    for r in kernel_rows:
        if not (r["kind"].startswith("attention") and r["source"].startswith("NVIDIA/cudnn-frontend")):
            continue
        kv = _kv(r[_EXTRA])
        if "time_ms" not in kv or r["gpu"] not in ("H200", "GB200", "GB300"):
            continue
        if r["gpu"] != "H200" and kv.get("deterministic_bwd") == "True":
            continue  # Blackwell: the non-deterministic backward (training default); H200 has only one kind
        prec = {"bfloat16": "bf16"}.get(r["precision"], r["precision"])
        s = int(kv["seq_q"])
        held = s in (8192, 16384) or r["gpu"] == "GB300"
        out.append(AttentionCase(f"cudnn {r['gpu']} {r[_EXTRA].split(';')[0]} {r['kind']} {prec} s{s} "
                                 f"causal={kv['causal']}", r["gpu"], prec, int(kv["batch"]), int(kv["hq"]), s,
                                 int(kv["d_qk"]), int(kv["d_vo"]), kv["causal"] == "yes",
                                 r["kind"] == "attention_bwd", float(kv["time_ms"]) * 1e-3, held))
    return out


def attention_check_cases(kernel_rows: Sequence[Mapping[str, str]]) -> list[AttentionCase]:
    """Published attention rows used only as a check (never fitted), all held out.

    H100: FlashAttention-3 bf16 causal, B 4, H 48, d 128, times in us (facebookexperimental/triton PR
    #3582). B200: FlashAttention-4 bf16 (Dao-AILab/flash-attention PR #2605, GPU inferred from its MFU
    denominator); TFLOPS only, so time = FLOPs / TFLOPS with heads = 2,048 / head_dim (the FlashAttention
    benchmark's model width, ASSUMPTION; TFLOPS hardly depend on it).

    Examples
    --------
    >>> cases = attention_check_cases(load_kernel_rows())
    >>> sorted({c.gpu for c in cases}), len(cases), all(c.held_out for c in cases)
    (['B200', 'H100'], 26, True)
    """
    out = []
    for r in kernel_rows:
        x, bwd = r[_EXTRA], r["kind"] == "attention_bwd"
        if r["source"].startswith("facebookexperimental/triton PR #3582") and r["kind"].startswith("attention"):
            kv = _kv(x)
            b, h, d, s = int(kv["batch"]), int(kv["heads"]), int(kv["head_dim"]), int(kv["seq_len"])
            t = float(kv["time_us"]) * 1e-6
            out.append(AttentionCase(f"FA3 H100 {r['kind']} s{s}", "H100", "bf16", b, h, s, d, d, True, bwd, t,
                                     True))
        elif r["gpu"] == "B200 (inferred)" and r["source"].startswith("Dao-AILab/flash-attention PR #2605"):
            kv = _kv(x)
            b, d, s = int(kv["batch"]), int(kv["head_dim"]), int(kv["seq_len"])
            h, causal = 2048 // d, kv["causal"] == "yes"
            flops = cm.attention_flops(b, h, s, d, d, causal=causal, backward=bwd)
            out.append(AttentionCase(f"FA4 B200 {r['kind']} d{d} s{s} causal={kv['causal']}", "B200", "bf16", b, h,
                                     s, d, d, causal, bwd, flops / (float(r["tflops"]) * 1e12), True))
    return out


# ---------------------------------------------------------------------- models

def _gpu_hw(gpu: str, precision: str) -> tuple[float, int, float, float, str]:
    entry = cf.GPU_COMPUTE[gpu]
    g = catalog.gpu(gpu)
    base = cf.BASE_PRECISION[precision]
    peak = g.peak_bf16_flops if base == "bf16" else g.peak_fp8_flops
    return float(peak), entry.sm_count, float(g.hbm_Bps), entry.exp_per_s, entry.arch


class _GemmBatch:
    """Every kernel of a list of GEMM cases as flat arrays, for one vectorised model call."""

    def __init__(self, cases: Sequence[GemmCase]) -> None:
        flat = [(i, c, kern) for i, c in enumerate(cases) for kern in c.kernels]
        self.case = np.array([i for i, _, _ in flat])
        self.m, self.n, self.k, self.g = (np.array([kern[j] for _, _, kern in flat], float) for j in range(4))
        hw = [_gpu_hw(c.gpu, c.precision) for _, c, _ in flat]
        self.peak, self.sm, self.hbm = (np.array([h[j] for h in hw], float) for j in range(3))
        self.b_in = np.array([cf.BYTES_PER_ELEMENT[c.precision][0] for _, c, _ in flat])
        self.b_out = np.array([cf.BYTES_PER_ELEMENT[c.precision][1] for _, c, _ in flat])
        self.fp8 = np.array([cf.BASE_PRECISION[c.precision] == "fp8" for _, c, _ in flat])
        self.grouped = np.array([c.grouped for _, c, _ in flat])
        self.adj = np.array([cm._mamf_adjustment(c.gpu, cf.GPU_COMPUTE[c.gpu].arch, cf.BASE_PRECISION[c.precision])
                             for _, c, _ in flat])
        self.n_cases = len(cases)

    def times(self, eta, tau, launch) -> np.ndarray:
        t = cm.gemm_time_core(self.m, self.n, self.k, self.g, peak_flops=self.peak, sm_count=self.sm,
                              hbm_Bps=self.hbm, eta=eta * self.adj, tile_overhead_s=tau, launch_s=launch,
                              bytes_in=self.b_in, bytes_out=self.b_out)
        return np.bincount(self.case, weights=t, minlength=self.n_cases)


def _stats(errors: np.ndarray, held: np.ndarray) -> dict[str, float]:
    a = np.abs(errors)
    out = {"n_fit": float((~held).sum()), "n_held": float(held.sum())}
    for key, mask in (("fit", ~held), ("held", held)):
        if mask.any():
            out[f"{key}_mean"] = float(a[mask].mean())
            out[f"{key}_max"] = float(a[mask].max())
    return out


def _fit(cases: Sequence, predict: Callable[[np.ndarray], np.ndarray], x0: Sequence[float],
         lo: Sequence[float], hi: Sequence[float]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Robust least squares of log(predicted / measured) over the fit rows; errors of all rows."""
    measured = np.array([c.time_s for c in cases])
    held = np.array([c.held_out for c in cases])

    def resid(p: np.ndarray) -> np.ndarray:
        return np.log(predict(p)[~held] / measured[~held])

    sol = least_squares(resid, np.asarray(x0, float), bounds=(lo, hi), **_LOSS)
    return sol.x, predict(sol.x) / measured - 1.0, held


@dataclass(frozen=True)
class Calibration:
    """The result of :func:`calibrate`: fitted constants and the residual report."""

    gemm: cf.GemmParams
    gemm_carry: Mapping[tuple[str, str], float]
    gemm_grouped: Mapping[str, float]
    gemm_tile_scale: Mapping[str, float]
    gemm_launch_s: Mapping[str, float]
    attention: Mapping[str, cf.AttentionParams]
    report: Mapping[str, Mapping[str, float]]
    residuals: Mapping[str, tuple[tuple[str, bool, float], ...]]  #: group -> (label, held_out, rel. error)


def _attention_predictor(cases: Sequence[AttentionCase], keys: Sequence[tuple[str, str]], launch: float):
    """A vectorised predictor p -> times; p = eta per key, then tau fwd, tau bwd, sigma."""
    idx = {k: i for i, k in enumerate(keys)}
    n = len(keys)
    hw = [_gpu_hw(c.gpu, c.precision) for c in cases]
    peak, sm, exp_rate = (np.array([h[j] for h in hw], float) for j in (0, 1, 3))
    shape = {f: np.array([getattr(c, f) for c in cases], float) for f in ("batch", "heads", "seq", "d_qk", "d_v")}
    causal = np.array([c.causal for c in cases])
    backward = np.array([c.backward for c in cases])
    eta_idx = np.array([idx[("bwd" if c.backward else "fwd", c.precision)] for c in cases])
    adj = np.array([cm._mamf_adjustment(c.gpu, cf.GPU_COMPUTE[c.gpu].arch, cf.BASE_PRECISION[c.precision],
                                        reference=cf.ATTENTION_FIT_GPU[cf.GPU_COMPUTE[c.gpu].arch]) for c in cases])
    tau_idx = n + backward.astype(int)

    def predict(p: np.ndarray) -> np.ndarray:
        return cm.attention_time_core(shape["batch"], shape["heads"], shape["seq"], shape["d_qk"], shape["d_v"],
                                      causal=causal, backward=backward, peak_flops=peak, sm_count=sm,
                                      exp_per_s=exp_rate, eta=p[eta_idx] * adj, block_overhead_s=p[tau_idx],
                                      exp_exposed=p[n + 2], launch_s=launch)
    return predict


def _attention_vector(ap: cf.AttentionParams, keys: Sequence[tuple[str, str]]) -> np.ndarray:
    return np.array([ap.eta[k] for k in keys] + [ap.block_overhead_s["fwd"], ap.block_overhead_s["bwd"],
                                                 ap.exp_exposed])


def _fit_attention(cases: Sequence[AttentionCase], precisions: Sequence[str], launch: float):
    keys = [(d, p) for d in ("fwd", "bwd") for p in precisions]
    n = len(keys)
    predict = _attention_predictor(cases, keys, launch)
    x0 = [0.6] * n + [2e-6, 2e-6, 0.3]
    lo = [0.05] * n + [0.0, 0.0, 0.0]
    hi = [1.0] * n + [1e-4, 1e-4, 3.0]
    x, err, held = _fit(cases, predict, x0, lo, hi)
    params = cf.AttentionParams(
        eta=types.MappingProxyType({k: float(x[i]) for i, k in enumerate(keys)}),
        block_overhead_s=types.MappingProxyType({"fwd": float(x[n]), "bwd": float(x[n + 1])}),
        exp_exposed=float(x[n + 2]),
    )
    return params, err, held


def calibrate(h200_path: Optional[Path] = None, kernel_path: Optional[Path] = None) -> Calibration:
    """Fit every constant of :mod:`workloads.compute_fit` from the data (a few seconds).

    Order: (1) H200 GEMMs -> eta and tile overhead per base precision and the
    harness floor; (2) Hopper mxfp8 carry and launch overhead on DeepGEMM's H800
    rows; (3) Blackwell bf16 / mxfp8 carry and launch overhead on the B200 rows;
    (4) attention on the H200 rows (ours + cuDNN) and on cuDNN's GB200 rows.
    Ampere's bf16 carry is DERIVED from MAMF: (A100 MAMF / peak) / (H100 MAMF / peak).
    """
    h200 = load_h200_rows(h200_path)
    kernels = load_kernel_rows(kernel_path)
    report: dict[str, dict[str, float]] = {}
    residuals: dict[str, tuple] = {}

    def record(group: str, cases: Sequence, err: np.ndarray, held: np.ndarray) -> None:
        report[group] = _stats(err, held)
        residuals[group] = tuple((c.label, bool(h), float(e)) for c, h, e in zip(cases, held, err))

    # (1) H200 GEMMs: p = eta_bf16, eta_fp8, tau_bf16, tau_fp8, harness floor
    g_cases = h200_gemm_cases(h200)
    gb = _GemmBatch(g_cases)
    gx, gerr, gheld = _fit(g_cases, lambda p: gb.times(np.where(gb.fp8, p[1], p[0]), np.where(gb.fp8, p[3], p[2]),
                                                       p[4]),
                           [0.8, 0.75, 1e-6, 2e-6, 2e-5], [0.1, 0.1, 0, 0, 0], [1.0, 1.0, 1e-4, 1e-4, 1e-4])
    record("gemm_h200", g_cases, gerr, gheld)
    gemm = cf.GemmParams(eta=types.MappingProxyType({"bf16": float(gx[0]), "fp8": float(gx[1])}),
                         tile_overhead_s=types.MappingProxyType({"bf16": float(gx[2]), "fp8": float(gx[3])}),
                         harness_floor_s=float(gx[4]))

    # (2) Hopper mxfp8 (DeepGEMM, H800): p = carry, launch. Grouped factor 1 (not fitted; checked held out).
    h_cases = hopper_mxfp8_cases(kernels)
    hb = _GemmBatch(h_cases)
    hx, herr, hheld = _fit(h_cases, lambda p: hb.times(gemm.eta["fp8"] * p[0], gemm.tile_overhead_s["fp8"], p[1]),
                           [1.0, 5e-6], [0.2, 0.0], [2.0, 1e-4])
    record("gemm_hopper_mxfp8", h_cases, herr, hheld)

    # (3) Blackwell (B200): p = carry_bf16, carry_mxfp8, launch, grouped-kernel factor, tile-overhead scale
    b_cases = blackwell_gemm_cases(kernels)
    bb = _GemmBatch(b_cases)
    b_eta = np.where(bb.fp8, gemm.eta["fp8"], gemm.eta["bf16"])
    b_tau = np.where(bb.fp8, gemm.tile_overhead_s["fp8"], gemm.tile_overhead_s["bf16"])
    bx, berr, bheld = _fit(b_cases, lambda p: bb.times(b_eta * np.where(bb.fp8, p[1], p[0])
                                                       * np.where(bb.grouped, p[3], 1.0), b_tau * p[4], p[2]),
                           [1.0, 1.0, 5e-6, 1.0, 1.0], [0.2, 0.2, 0.0, 0.2, 0.0], [2.0, 2.0, 1e-4, 1.5, 10.0])
    record("gemm_blackwell", b_cases, berr, bheld)

    a100 = catalog.gpu("A100").mamf_bf16_flops / catalog.gpu("A100").peak_bf16_flops
    h100 = catalog.gpu("H100").mamf_bf16_flops / catalog.gpu("H100").peak_bf16_flops
    carry = {
        ("hopper", "bf16"): 1.0, ("hopper", "fp8"): 1.0, ("hopper", "mxfp8"): float(hx[0]),
        ("blackwell", "bf16"): float(bx[0]), ("blackwell", "mxfp8"): float(bx[1]),
        ("blackwell", "fp8"): float(bx[1]),
        ("ampere", "bf16"): float(a100 / h100),
    }
    grouped = {"hopper": 1.0, "blackwell": float(bx[3]), "ampere": 1.0}
    tile_scale = {"hopper": 1.0, "blackwell": float(bx[4]), "ampere": 1.0}
    launch = {"hopper": float(hx[1]), "blackwell": float(bx[2]), "ampere": float(hx[1])}

    # (4) attention
    a_cases = attention_cases(h200, kernels)
    hop = [c for c in a_cases if c.gpu == "H200"]
    bw = [c for c in a_cases if c.gpu in ("GB200", "GB300")]
    ap_h, aerr_h, aheld_h = _fit_attention(hop, ("bf16", "fp8"), launch["hopper"])
    record("attention_h200", hop, aerr_h, aheld_h)
    ap_b, aerr_b, aheld_b = _fit_attention(bw, ("bf16", "fp8", "mxfp8"), launch["blackwell"])
    record("attention_blackwell", bw, aerr_b, aheld_b)

    # (5) checks, never fitted: FlashAttention-3 on H100, FlashAttention-4 on B200
    checks = attention_check_cases(kernels)
    for group, gpu, arch, ap, precs in (("attention_check_h100_fa3", "H100", "hopper", ap_h, ("bf16", "fp8")),
                                        ("attention_check_b200_fa4", "B200", "blackwell", ap_b,
                                         ("bf16", "fp8", "mxfp8"))):
        cs = [c for c in checks if c.gpu == gpu]
        keys = [(d, p) for d in ("fwd", "bwd") for p in precs]
        times = _attention_predictor(cs, keys, launch[arch])(_attention_vector(ap, keys))
        record(group, cs, times / np.array([c.time_s for c in cs]) - 1.0, np.ones(len(cs), bool))

    return Calibration(
        gemm=gemm,
        gemm_carry=types.MappingProxyType(carry),
        gemm_grouped=types.MappingProxyType(grouped),
        gemm_tile_scale=types.MappingProxyType(tile_scale),
        gemm_launch_s=types.MappingProxyType(launch),
        attention=types.MappingProxyType({"hopper": ap_h, "blackwell": ap_b}),
        report=types.MappingProxyType({k: types.MappingProxyType(v) for k, v in report.items()}),
        residuals=types.MappingProxyType(residuals),
    )


def _fmt(x: float) -> str:
    s = f"{x:.6g}"
    return s if any(ch in s for ch in ".en") else s + ".0"


def render_fitted_block(cal: Calibration) -> str:
    """The ``BEGIN FITTED`` .. ``END FITTED`` block of ``compute_fit.py`` for a calibration."""
    def mp(d: Mapping, key=repr) -> str:
        return "types.MappingProxyType({" + ", ".join(f"{key(k)}: {_fmt(v)}" for k, v in d.items()) + "})"

    lines = ["# BEGIN FITTED", "GEMM_H200 = GemmParams(",
             f"    eta={mp(cal.gemm.eta)},",
             f"    tile_overhead_s={mp(cal.gemm.tile_overhead_s)},",
             f"    harness_floor_s={_fmt(cal.gemm.harness_floor_s)},", ")",
             "GEMM_CARRY: Mapping[tuple[str, str], float] = " + mp(cal.gemm_carry),
             "GEMM_GROUPED_FACTOR: Mapping[str, float] = " + mp(cal.gemm_grouped),
             "GEMM_TILE_OVERHEAD_SCALE: Mapping[str, float] = " + mp(cal.gemm_tile_scale),
             "GEMM_LAUNCH_S: Mapping[str, float] = " + mp(cal.gemm_launch_s),
             "ATTENTION: Mapping[str, AttentionParams] = types.MappingProxyType({"]
    for arch, ap in cal.attention.items():
        lines += [f"    {arch!r}: AttentionParams(",
                  f"        eta={mp(ap.eta)},",
                  f"        block_overhead_s={mp(ap.block_overhead_s)},",
                  f"        exp_exposed={_fmt(ap.exp_exposed)},", "    ),"]
    lines.append("})")
    lines.append("FIT_REPORT: Mapping[str, Mapping[str, float]] = types.MappingProxyType({")
    for group, stats in cal.report.items():
        lines.append(f"    {group!r}: {mp(stats)},")
    lines += ["})", "# END FITTED"]
    return "\n".join(lines) + "\n"
