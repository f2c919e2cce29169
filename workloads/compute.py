"""Compute time of GEMMs, grouped (MoE expert) GEMMs, attention and memory-bound work.

The model is fitted to our measured H200 data and carried to other GPUs by
their dense peak per precision (:func:`topologies.catalog.peak_flops`), their
SM count and HBM bandwidth, and a per-architecture efficiency factor fitted to
published kernel throughput (:mod:`workloads.compute_fit` holds every constant
and its source; ``docs/compute-model.md`` the form, split and residuals).

GEMM (``groups`` equal problems of ``m x n x k``, one launch)::

    for each output tile (bm, bn) in GEMM_TILES and split-K factor s:
        tiles  = groups * ceil(m / bm) * ceil(n / bn) * s
        t_math = ceil(tiles / SMs) * (2 bm bn ceil(k / s) / (peak / SMs * eta) + tau)
        t_mem  = (groups ((m k + k n) b_in + m n b_out) + split-K partials) / (HBM * eta_mem)
        t      = max(t_math, t_mem)
    time = min over (tile, s) of t  +  launch

``ceil(tiles / SMs)`` is the wave quantisation, ``tau`` the fixed cost per tile
(pipeline fill and epilogue), ``eta`` the main-loop tensor-core efficiency. The
minimum over tiles and split factors stands for the library's heuristic.

Attention (FlashAttention-style, query and key blocks of ``ATTENTION_BLOCK``)::

    nb     = ceil(seq / 128); pairs = batch heads (nb (nb + 1) / 2 if causal else nb^2)
    scores = 128^2 pairs;  mma = 2 (d_qk + d_v) forward, 2 (3 d_qk + 2 d_v) backward
    time   = scores mma / (peak eta) + sigma scores / exp_rate + batch heads nb tau / SMs + launch

Memory-bound work: ``bytes / (HBM * eta_mem) + kernels * launch``.

Examples
--------
>>> t = gemm_time_s("H200", "bf16", 4096, 7168, 16384)
>>> 0.5e-3 < t < 2e-3
True
>>> gemm_time_s("GB300", "mxfp8", 4096, 2048, 7168, groups=8) < gemm_time_s("H200", "fp8", 4096, 2048, 7168, groups=8)
True
>>> round(memory_time_s("H200", 4.8e9) * 1e3, 2)
1.15
"""

from __future__ import annotations

import functools
import math
import re
import types
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Union

import numpy as np

from topologies import catalog
from topologies.errors import SpecError
from workloads import compute_fit as cf

__all__ = [
    "ComputeModel",
    "GpuFigures",
    "PRECISIONS",
    "compute_model",
    "gpu_figures",
    "gemm_time_s",
    "gemm_efficiency",
    "grouped_gemm_time_s",
    "attention_time_s",
    "attention_flops",
    "memory_time_s",
    "gemm_time_core",
    "attention_time_core",
]

#: Precisions the compute model accepts.
PRECISIONS: tuple[str, ...] = ("bf16", "fp8", "mxfp8")

#: The GPU whose ratio of MAMF to peak an architecture's fitted efficiency refers to,
#: per (arch, base precision); see :func:`gpu_figures`.
_MAMF_REFERENCE: Mapping[tuple[str, str], str] = types.MappingProxyType({
    ("hopper", "bf16"): "H100", ("hopper", "fp8"): "H200",
    ("blackwell", "bf16"): "B200", ("blackwell", "fp8"): "B200",
    ("ampere", "bf16"): "A100",
})

ArrayLike = Union[int, float, np.ndarray]


@dataclass(frozen=True)
class GpuFigures:
    """The figures of one GPU at one precision that the model uses.

    Examples
    --------
    >>> f = gpu_figures("B200", "mxfp8")
    >>> f.sm_count, f.peak_flops / 1e15
    (148, 4.5)
    """

    gpu: str
    arch: str
    precision: str
    peak_flops: float
    hbm_Bps: float
    sm_count: int
    exp_per_s: float
    gemm_eta: float  #: H200 main-loop efficiency x architecture carry x MAMF adjustment
    gemm_tile_overhead_s: float
    launch_s: float
    carry_factor: float
    mamf_adjustment: float
    grouped_factor: float  #: efficiency multiplier of grouped-GEMM kernels (groups > 1)


@dataclass(frozen=True)
class ComputeModel:
    """A description of the fitted compute model: form, parameters, residuals, sources.

    Examples
    --------
    >>> cm = compute_model()
    >>> cm.gemm.eta["bf16"] > 0.5 and "held_mean" in cm.fit_report["gemm_h200"]
    True
    """

    gemm_form: str
    attention_form: str
    memory_form: str
    gemm: cf.GemmParams
    gemm_carry: Mapping[tuple[str, str], float]
    gemm_grouped_factor: Mapping[str, float]
    gemm_tile_overhead_scale: Mapping[str, float]
    gemm_launch_s: Mapping[str, float]
    attention: Mapping[str, cf.AttentionParams]
    hbm_efficiency: float
    fit_report: Mapping[str, Mapping[str, float]]
    split_rules: Mapping[str, str]
    sources: Mapping[str, str]


_SPLIT_RULES = types.MappingProxyType({
    "gemm_h200": "held out: every expert GEMM at 256 and 4,096 tokens per expert, all passes of mla_kv_a and "
                 "shared_down, square_4096 (both dtypes); fit: the rest",
    "gemm_hopper_mxfp8": "DeepGEMM README rows on H800. fit: dense GEMMs with M in {64, 4096}; held out: M = 128 "
                         "dense GEMMs and every grouped (contiguous and masked) row",
    "gemm_blackwell": "B200 (and one GB200 row). bf16 fit: torch.mm squares 1024, 2048, 4096, 8192; held out: "
                      "squares 1536, 3072, 6144 and every torch._grouped_mm fwd+bwd row. mxfp8 fit: flashinfer "
                      "1024x2048x1024 and 8192x8192x4096, torchao grouped forward, Megatron cuBLAS grouped GEMM on "
                      "GB200; held out: flashinfer 1024x4096x4096 and 16384^3, torchao grouped dgrad and wgrad",
    "attention_h200": "held out: every row with seq 8,192 or 16,384 (ours and cuDNN's); fit: seq 2,048, 4,096, 32,768",
    "attention_check_h100_fa3": "check only (never fitted): FlashAttention-3 bf16 causal on H100, B 4, H 48, d 128, "
                                "seq 1k-8k, forward and backward (facebookexperimental/triton PR #3582)",
    "attention_check_b200_fa4": "check only (never fitted): FlashAttention-4 bf16 forward on B200, d 64 and 128, "
                                "seq 1k-16k, causal and not (Dao-AILab/flash-attention PR #2605)",
    "attention_blackwell": "cuDNN GB200 rows (non-deterministic backward). fit: seq 2,048, 4,096, 32,768; held out: "
                           "GB200 seq 8,192 and 16,384 and every GB300 row",
})


def compute_model() -> ComputeModel:
    """The fitted compute model (constants of :mod:`workloads.compute_fit`).

    Examples
    --------
    >>> sorted(compute_model().attention)
    ['blackwell', 'hopper']
    """
    return _MODEL


_MODEL = ComputeModel(
    gemm_form="time = min over tiles (bm,bn) in GEMM_TILES and split-K s of max(ceil(g*ceil(m/bm)*ceil(n/bn)*s / SMs)"
              " * (2*bm*bn*ceil(k/s) / (peak/SMs * eta) + tau), bytes / (HBM * eta_mem)) + launch",
    attention_form="time = scores * mma_flops_per_score / (peak * eta) + sigma * scores / exp_rate"
                   " + batch*heads*ceil(seq/128) * tau / SMs + launch",
    memory_form="time = bytes / (HBM * eta_mem) + kernels * launch",
    gemm=cf.GEMM_H200,
    gemm_carry=cf.GEMM_CARRY,
    gemm_grouped_factor=cf.GEMM_GROUPED_FACTOR,
    gemm_tile_overhead_scale=cf.GEMM_TILE_OVERHEAD_SCALE,
    gemm_launch_s=cf.GEMM_LAUNCH_S,
    attention=cf.ATTENTION,
    hbm_efficiency=cf.HBM_EFFICIENCY,
    fit_report=cf.FIT_REPORT,
    split_rules=_SPLIT_RULES,
    sources=cf.SOURCES,
)


def _gpu_entry(name: object) -> tuple[str, cf.GpuCompute]:
    if not isinstance(name, str):
        raise SpecError(f"gpu: {name!r} is not a name; known: {', '.join(cf.GPU_COMPUTE)}")
    key = re.sub(r"[\s_]+", "-", name.strip().lower())
    local = {n.lower(): n for n in cf.GPU_COMPUTE}
    if key in local and cf.GPU_COMPUTE[local[key]].peak_bf16_flops is not None:
        return local[key], cf.GPU_COMPUTE[local[key]]
    try:
        canonical = catalog.gpu(name).name
    except SpecError:
        raise SpecError(f"gpu: {name!r} has no compute model; known: {', '.join(cf.GPU_COMPUTE)}") from None
    if canonical not in cf.GPU_COMPUTE:
        raise SpecError(f"gpu: {canonical} has no compute model; known: {', '.join(cf.GPU_COMPUTE)}")
    return canonical, cf.GPU_COMPUTE[canonical]


def _precision(precision: object) -> str:
    p = precision.strip().lower() if isinstance(precision, str) else precision
    if p not in PRECISIONS:
        raise SpecError(f"precision: {precision!r} is not allowed; known: {', '.join(PRECISIONS)}")
    return p


def _mamf_ratio(name: str, base: str) -> float | None:
    """Catalog MAMF / peak of a GPU at a base precision, or its proxy's (MAMF_PROXY), or None."""
    for candidate in (name, cf.MAMF_PROXY.get(name)):
        if candidate is None:
            continue
        try:
            g = catalog.gpu(candidate)
        except SpecError:
            return None
        mamf = g.mamf_bf16_flops if base == "bf16" else g.mamf_fp8_flops
        peak = g.peak_bf16_flops if base == "bf16" else g.peak_fp8_flops
        if mamf is not None and peak:
            return mamf / peak
    return None


def _mamf_adjustment(name: str, arch: str, base: str, reference: str | None = None) -> float:
    ref = reference or _MAMF_REFERENCE.get((arch, base))
    own, ref_ratio = _mamf_ratio(name, base), (_mamf_ratio(ref, base) if ref else None)
    return own / ref_ratio if own is not None and ref_ratio is not None else 1.0


def gpu_figures(gpu: str, precision: str) -> GpuFigures:
    """Peaks, SM count and the carried GEMM efficiency of a GPU at a precision.

    ``gemm_eta = eta_H200[base] * carry[arch, precision] * mamf_adjustment`` where
    ``base`` is bf16 for bf16 and fp8 for fp8/mxfp8, ``carry`` is fitted to
    published kernel throughput (1 for Hopper bf16/fp8 by definition) and the
    MAMF adjustment is the GPU's measured best-matmul fraction of peak over that
    of its architecture's reference GPU (catalog ``mamf_*``, source [S1]; a GPU
    without one takes its sibling's, :data:`workloads.compute_fit.MAMF_PROXY`;
    1 when still unknown).

    Raises
    ------
    SpecError
        Unknown GPU or precision, or a precision the GPU has no tensor path for.

    Examples
    --------
    >>> gpu_figures("H200", "bf16").carry_factor
    1.0
    >>> gpu_figures("A100", "fp8")
    Traceback (most recent call last):
    ...
    topologies.errors.SpecError: precision: A100 has no fp8 tensor path; available: bf16
    """
    return _figures(gpu, precision)


_FIG_CACHE: dict[tuple[str, str], GpuFigures] = {}


def _figures(gpu: str, precision: str) -> GpuFigures:
    cached = _FIG_CACHE.get((gpu, precision)) if isinstance(gpu, str) and isinstance(precision, str) else None
    if cached is not None:
        return cached
    name, entry = _gpu_entry(gpu)
    p = _precision(precision)
    base = cf.BASE_PRECISION[p]
    if entry.peak_bf16_flops is not None:
        peak = entry.peak_bf16_flops if base == "bf16" else entry.peak_fp8_flops
        hbm = entry.hbm_Bps
    else:
        g = catalog.gpu(name)
        peak = g.peak_bf16_flops if base == "bf16" else g.peak_fp8_flops
        hbm = g.hbm_Bps
    if peak is None:
        raise SpecError(f"precision: {name} has no {p} tensor path; available: bf16")
    carry_key = (entry.arch, p)
    if carry_key not in cf.GEMM_CARRY:
        have = sorted(q for (a, q) in cf.GEMM_CARRY if a == entry.arch)
        raise SpecError(f"precision: {name} ({entry.arch}) has no {p} model; available: {', '.join(have)}")
    carry = cf.GEMM_CARRY[carry_key]
    adj = _mamf_adjustment(name, entry.arch, base)
    fig = GpuFigures(
        gpu=name, arch=entry.arch, precision=p, peak_flops=float(peak), hbm_Bps=float(hbm),
        sm_count=entry.sm_count, exp_per_s=entry.exp_per_s,
        gemm_eta=cf.GEMM_H200.eta[base] * carry * adj,
        gemm_tile_overhead_s=cf.GEMM_H200.tile_overhead_s[base] * cf.GEMM_TILE_OVERHEAD_SCALE[entry.arch],
        launch_s=cf.GEMM_LAUNCH_S[entry.arch], carry_factor=carry, mamf_adjustment=adj,
        grouped_factor=cf.GEMM_GROUPED_FACTOR[entry.arch],
    )
    if isinstance(gpu, str) and isinstance(precision, str):
        _FIG_CACHE[(gpu, precision)] = fig
    return fig


# ----------------------------------------------------------------------------- GEMM

def gemm_time_core(m, n, k, groups, *, peak_flops, sm_count, hbm_Bps, eta, tile_overhead_s, launch_s, bytes_in,
                   bytes_out, hbm_efficiency: float = cf.HBM_EFFICIENCY) -> np.ndarray:
    """The GEMM time model on explicit parameters, vectorised over the shapes and the GPU parameters.

    Used by :func:`gemm_time_s` with the fitted constants and by the fit itself.

    Examples
    --------
    >>> t = gemm_time_core(8192, 8192, 8192, 1, peak_flops=1e15, sm_count=100, hbm_Bps=4e12, eta=1.0,
    ...                    tile_overhead_s=0.0, launch_s=0.0, bytes_in=2, bytes_out=2)
    >>> bool(abs(float(t) - 2 * 8192**3 / 1e15) / (2 * 8192**3 / 1e15) < 0.03)
    True
    """
    combos = [(bm, bn, s) for bm, bn in cf.GEMM_TILES for s in cf.GEMM_SPLIT_K]
    bm, bn, s = (np.array([c[i] for c in combos], dtype=float) for i in range(3))
    col = (lambda x: np.asarray(x, dtype=float)[..., None])  # noqa: E731 - broadcast against the candidates
    m, n, k, g = col(m), col(n), col(k), col(groups)
    per_sm = col(peak_flops) / col(sm_count) * col(eta)
    bw = col(hbm_Bps) * hbm_efficiency
    tiles = g * np.ceil(m / bm) * np.ceil(n / bn) * s
    t_math = np.ceil(tiles / col(sm_count)) * (2.0 * bm * bn * np.ceil(k / s) / per_sm + col(tile_overhead_s))
    nbytes = g * ((m * k + k * n) * col(bytes_in) + m * n * col(bytes_out))
    nbytes = nbytes + np.where(s > 1, g * m * n * cf.SPLIT_K_PARTIAL_BYTES * 2.0 * s, 0.0)
    best = np.maximum(t_math, nbytes / bw).min(axis=-1)
    return best + np.asarray(launch_s, dtype=float)


def _check_dims(**dims) -> None:
    for field, v in dims.items():
        a = np.asarray(v)
        if a.dtype.kind not in "iuf" or not np.all(np.isfinite(a)) or np.any(a < 1):
            raise SpecError(f"{field}: {v!r} is not allowed; must be a positive number (or array of them)")


def _out(t: np.ndarray, *inputs) -> float | np.ndarray:
    return float(t) if all(np.ndim(x) == 0 for x in inputs) else t


def gemm_time_s(gpu: str, precision: str, m: ArrayLike, n: ArrayLike, k: ArrayLike, *,
                groups: ArrayLike = 1, reserved_sms: int = 0) -> float | np.ndarray:
    """Time of ``C[m, n] = A[m, k] B[k, n]``, or of a grouped GEMM of ``groups`` such problems.

    ``groups > 1`` is one grouped kernel (MoE experts at ``m`` tokens per expert):
    the tiles of all groups share the waves, there is one launch, and the
    architecture's grouped-kernel factor (:data:`workloads.compute_fit.GEMM_GROUPED_FACTOR`)
    multiplies the efficiency. Shapes may be numpy arrays (broadcast together);
    scalars give a float.

    Parameters
    ----------
    gpu : str
        A GPU of :data:`workloads.compute_fit.GPU_COMPUTE` (``H200``, ``GB300`` ...).
    precision : str
        ``bf16``, ``fp8`` (per-tensor scaled) or ``mxfp8`` (block-scaled; on Hopper
        DeepSeek's 1x128 / 128x128 recipe).
    reserved_sms : int
        SMs taken by concurrently running kernels (e.g. 20-24 for DeepEP dispatch
        and combine): the GEMM runs its waves on the others.

    Examples
    --------
    >>> one = gemm_time_s("H200", "bf16", 2048, 2048, 7168)
    >>> eight = gemm_time_s("H200", "bf16", 2048, 2048, 7168, groups=8)
    >>> one < eight < 8 * one
    True
    >>> gemm_time_s("H100", "bf16", [128, 4096], 7168, 2048).shape
    (2,)
    >>> gemm_time_s("H800", "mxfp8", 4096, 7168, 2048, reserved_sms=20) > gemm_time_s("H800", "mxfp8", 4096, 7168, 2048)
    True
    """
    if all(isinstance(x, (int, float)) for x in (m, n, k, groups)) and isinstance(gpu, str) \
            and isinstance(precision, str) and isinstance(reserved_sms, int):
        return _gemm_scalar(gpu, precision, m, n, k, groups, reserved_sms)
    return _gemm_array(gpu, precision, m, n, k, groups, reserved_sms)


def _usable_sms(f: GpuFigures, reserved_sms: object) -> tuple[int, float]:
    """SMs left to a kernel and the fraction of the GPU's peak they carry."""
    if not isinstance(reserved_sms, (int, np.integer)) or isinstance(reserved_sms, bool) \
            or not 0 <= reserved_sms < f.sm_count:
        raise SpecError(f"reserved_sms: {reserved_sms!r} is not allowed; must be an integer in 0..{f.sm_count - 1} "
                        f"({f.gpu} has {f.sm_count} SMs)")
    sms = f.sm_count - int(reserved_sms)
    return sms, sms / f.sm_count


def _gemm_array(gpu, precision, m, n, k, groups, reserved_sms=0):
    _check_dims(m=m, n=n, k=k, groups=groups)
    f = _figures(gpu, precision)
    sms, share = _usable_sms(f, reserved_sms)
    b_in, b_out = cf.BYTES_PER_ELEMENT[f.precision]
    eta = f.gemm_eta * np.where(np.asarray(groups) > 1, f.grouped_factor, 1.0)
    t = gemm_time_core(m, n, k, groups, peak_flops=f.peak_flops * share, sm_count=sms, hbm_Bps=f.hbm_Bps,
                       eta=eta, tile_overhead_s=f.gemm_tile_overhead_s, launch_s=f.launch_s,
                       bytes_in=b_in, bytes_out=b_out)
    return _out(t, m, n, k, groups)


@functools.lru_cache(maxsize=65536)
def _gemm_scalar(gpu: str, precision: str, m: float, n: float, k: float, groups: float, reserved_sms: int) -> float:
    # scalar calls repeat the same few shapes per layer: cache them (the model is a pure function)
    return float(_gemm_array(gpu, precision, m, n, k, groups, reserved_sms))


def grouped_gemm_time_s(gpu: str, precision: str, tokens_per_group: ArrayLike, n: int, k: int, *,
                        reserved_sms: int = 0) -> float:
    """Time of one grouped GEMM whose groups have different token counts (MoE experts as routed).

    Each group ``i`` computes ``[m_i, k] x [k, n]``. The waves are counted over the sum of
    every group's tiles (``sum_i ceil(m_i / bm) * ceil(n / bn)``), the bytes over the groups
    that have tokens (an expert without tokens reads no weights); otherwise as
    :func:`gemm_time_s` with ``groups > 1`` (the grouped-kernel factor applies). With
    equal counts in more than one group it equals ``gemm_time_s(..., m, n, k, groups=...)``.

    Examples
    --------
    >>> even = grouped_gemm_time_s("GB300", "mxfp8", [4096] * 8, 2048, 7168)
    >>> even == gemm_time_s("GB300", "mxfp8", 4096, 2048, 7168, groups=8)
    True
    >>> grouped_gemm_time_s("GB300", "mxfp8", [4096] * 8 + [0] * 8, 2048, 7168) == even
    True
    """
    m = np.asarray(tokens_per_group, dtype=float).ravel()
    if m.size == 0 or not np.all(np.isfinite(m)) or np.any(m < 0) or not np.any(m > 0):
        raise SpecError(f"tokens_per_group: {tokens_per_group!r} is not allowed; must be counts >= 0, not all 0")
    _check_dims(n=n, k=k)
    m = m[m > 0]
    if m.size > 1 and np.all(m == m[0]):
        return float(gemm_time_s(gpu, precision, float(m[0]), n, k, groups=int(m.size), reserved_sms=reserved_sms))
    f = _figures(gpu, precision)
    sms, share = _usable_sms(f, reserved_sms)
    b_in, b_out = cf.BYTES_PER_ELEMENT[f.precision]
    per_sm = f.peak_flops * share / sms * f.gemm_eta * f.grouped_factor
    bw = f.hbm_Bps * cf.HBM_EFFICIENCY
    total_m, g = float(m.sum()), float(m.size)
    best = np.inf
    for bm, bn in cf.GEMM_TILES:
        row_tiles = float(np.ceil(m / bm).sum())
        for s in cf.GEMM_SPLIT_K:
            waves = math.ceil(row_tiles * math.ceil(n / bn) * s / sms)
            t_math = waves * (2.0 * bm * bn * math.ceil(k / s) / per_sm + f.gemm_tile_overhead_s)
            nbytes = (total_m * k + g * k * n) * b_in + total_m * n * b_out
            if s > 1:
                nbytes += total_m * n * cf.SPLIT_K_PARTIAL_BYTES * 2.0 * s
            best = min(best, max(t_math, nbytes / bw))
    return best + f.launch_s


def gemm_efficiency(gpu: str, precision: str, m: ArrayLike, n: ArrayLike, k: ArrayLike, *,
                    groups: ArrayLike = 1, reserved_sms: int = 0) -> float | np.ndarray:
    """Achieved fraction of the (whole GPU's) dense peak: ``2 m n k groups / (time * peak)``.

    Examples
    --------
    >>> 0.5 < gemm_efficiency("H200", "bf16", 8192, 8192, 8192) < 0.9
    True
    >>> gemm_efficiency("H200", "bf16", 128, 7168, 2048) < gemm_efficiency("H200", "bf16", 8192, 7168, 2048)
    True
    """
    t = gemm_time_s(gpu, precision, m, n, k, groups=groups, reserved_sms=reserved_sms)
    f = _figures(gpu, precision)
    flops = 2.0 * np.asarray(m, float) * np.asarray(n, float) * np.asarray(k, float) * np.asarray(groups, float)
    return _out(flops / (np.asarray(t) * f.peak_flops), m, n, k, groups)


# ------------------------------------------------------------------------ attention

def attention_flops(batch: ArrayLike, heads: ArrayLike, seq: ArrayLike, d_qk: ArrayLike, d_v: ArrayLike, *,
                    causal: bool = True, backward: bool = False) -> float | np.ndarray:
    """Attention FLOPs as the H200 CSV (and Megatron) count them.

    Forward ``2 B H S^2 (d_qk + d_v)``, halved when causal; backward 2.5 x forward.

    Examples
    --------
    >>> attention_flops(1, 128, 4096, 192, 128) / 1e12
    0.68719476736
    """
    f = 2.0 * np.asarray(batch, float) * np.asarray(heads, float) * np.asarray(seq, float) ** 2 * (
        np.asarray(d_qk, float) + np.asarray(d_v, float))
    f = f / 2.0 if causal else f
    f = f * 2.5 if backward else f
    return _out(f, batch, heads, seq, d_qk, d_v)


def attention_time_core(batch, heads, seq, d_qk, d_v, *, causal, backward, peak_flops, sm_count, exp_per_s, eta,
                        block_overhead_s, exp_exposed, launch_s) -> np.ndarray:
    """The attention time model on explicit parameters, vectorised over every argument (numpy broadcasting).

    Examples
    --------
    >>> t = attention_time_core(1, 128, 4096, 128, 128, causal=False, backward=False, peak_flops=1e15,
    ...     sm_count=132, exp_per_s=4e12, eta=1.0, block_overhead_s=0.0, exp_exposed=0.0, launch_s=0.0)
    >>> round(float(t) * 1e15 / (4 * 128 * 4096**2 * 128), 6)
    1.0
    """
    b, h, s, dq, dv = (np.asarray(x, dtype=float) for x in (batch, heads, seq, d_qk, d_v))
    blk = float(cf.ATTENTION_BLOCK)
    nb = np.ceil(s / blk)
    chain = nb  # longest chain of key blocks of one query block
    pairs = b * h * np.where(causal, nb * (nb + 1.0) / 2.0, nb * nb)
    mma = np.where(backward, 2.0 * (3.0 * dq + 2.0 * dv), 2.0 * (dq + dv))
    per_pair = blk * blk * (mma / (peak_flops * eta) + exp_exposed / exp_per_s)
    units = b * h * nb
    t_balanced = pairs * per_pair + units * block_overhead_s / sm_count
    t_chain = chain * per_pair * sm_count + block_overhead_s  # one unit on one SM
    return np.maximum(t_balanced, t_chain) + launch_s


def attention_time_s(gpu: str, batch: ArrayLike, heads: ArrayLike, seq: ArrayLike, d_qk: ArrayLike,
                     d_v: ArrayLike, *, causal: bool = True, backward: bool = False,
                     precision: str = "bf16", reserved_sms: int = 0) -> float | np.ndarray:
    """Time of one fused attention (FlashAttention / cuDNN SDPA) forward or backward.

    ``heads`` are query heads (GQA/MLA share keys but do the same MMA work per
    query head). Shapes may be arrays. The efficiencies are those fitted on the
    architecture's reference GPU (:data:`workloads.compute_fit.ATTENTION_FIT_GPU`),
    scaled by the GPU's MAMF fraction over that GPU's; Ampere uses Hopper's
    (UNVERIFIED). On Hopper ``mxfp8`` attention runs as fp8. ``reserved_sms`` as
    for :func:`gemm_time_s`.

    Examples
    --------
    >>> f = attention_time_s("H200", 1, 128, 4096, 192, 128)
    >>> b = attention_time_s("H200", 1, 128, 4096, 192, 128, backward=True)
    >>> 1e-4 < f < b
    True
    >>> attention_time_s("GB300", 1, 128, 4096, 192, 128) < attention_time_s("GB200", 1, 128, 4096, 192, 128)
    True
    """
    scalar = all(isinstance(x, (int, float)) for x in (batch, heads, seq, d_qk, d_v))
    if scalar and isinstance(gpu, str) and isinstance(precision, str) and isinstance(reserved_sms, int):
        return _attention_scalar(gpu, batch, heads, seq, d_qk, d_v, bool(causal), bool(backward), precision,
                                 reserved_sms)
    return _attention_array(gpu, batch, heads, seq, d_qk, d_v, causal, backward, precision, reserved_sms)


@functools.lru_cache(maxsize=16384)
def _attention_scalar(gpu, batch, heads, seq, d_qk, d_v, causal, backward, precision, reserved_sms) -> float:
    return float(_attention_array(gpu, batch, heads, seq, d_qk, d_v, causal, backward, precision, reserved_sms))


def _attention_array(gpu, batch, heads, seq, d_qk, d_v, causal, backward, precision, reserved_sms):
    _check_dims(batch=batch, heads=heads, seq=seq, d_qk=d_qk, d_v=d_v)
    f = _figures(gpu, precision)
    sms, share = _usable_sms(f, reserved_sms)
    arch = "hopper" if f.arch == "ampere" else f.arch
    ap = cf.ATTENTION[arch]
    direction = "bwd" if backward else "fwd"
    prec = f.precision if (direction, f.precision) in ap.eta else "fp8"
    base = cf.BASE_PRECISION[f.precision]
    adj = _mamf_adjustment(f.gpu, f.arch, base, reference=cf.ATTENTION_FIT_GPU[arch])
    t = attention_time_core(batch, heads, seq, d_qk, d_v, causal=causal, backward=backward,
                            peak_flops=f.peak_flops * share, sm_count=sms, exp_per_s=f.exp_per_s * share,
                            eta=ap.eta[(direction, prec)] * adj,
                            block_overhead_s=ap.block_overhead_s[direction], exp_exposed=ap.exp_exposed,
                            launch_s=f.launch_s)
    return _out(t, batch, heads, seq, d_qk, d_v)


# --------------------------------------------------------------------------- memory

def memory_time_s(gpu: str, bytes_moved: ArrayLike, *, kernels: ArrayLike = 1) -> float | np.ndarray:
    """Time of memory-bound work (norms, activations, router, permutes, optimizer).

    ``bytes_moved`` counts bytes read plus written. The achieved bandwidth is the
    catalog HBM bandwidth times the H200 device-copy efficiency; each of
    ``kernels`` launches adds the architecture's launch overhead.

    Examples
    --------
    >>> memory_time_s("GB300", 0.0, kernels=0)
    0.0
    >>> memory_time_s("H200", 1e9, kernels=0) > memory_time_s("B200", 1e9, kernels=0)
    True
    """
    a = np.asarray(bytes_moved)
    if a.dtype.kind not in "iuf" or not np.all(np.isfinite(a)) or np.any(a < 0):
        raise SpecError(f"bytes_moved: {bytes_moved!r} is not allowed; must be a number >= 0")
    kn = np.asarray(kernels)
    if kn.dtype.kind not in "iuf" or np.any(kn < 0):
        raise SpecError(f"kernels: {kernels!r} is not allowed; must be an integer >= 0")
    f = _figures(gpu, "bf16")
    t = a / (f.hbm_Bps * cf.HBM_EFFICIENCY) + kn * f.launch_s
    return _out(np.asarray(t, dtype=float), bytes_moved, kernels)

