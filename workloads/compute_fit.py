"""Constant tables of the compute model (:mod:`workloads.compute`), each with its source.

Nothing here is computed at import time. The fitted numbers were produced by
:func:`workloads.compute_calibrate.calibrate` from the measured and published
rows shipped in ``workloads/data/`` (``h200_gemm_attention.csv``: our H200
measurements; ``kernel_throughput.csv``: the published rows of the shared
``gpu_kernel_throughput.csv`` that the carry uses). ``tests/test_compute.py``
re-runs that fit and checks it reproduces these values, so they cannot drift
from the data. ``docs/compute-model.md`` explains the form, the split into fit
and held-out rows and the residuals.

Tags: MEAS (measured by us), FIT (least-squares fit to MEAS or published rows),
SPEC (vendor figure), DERIVED (our arithmetic on cited numbers), UNVERIFIED
(second-hand or assumed).

Examples
--------
>>> GPU_COMPUTE["H200"].sm_count
132
>>> sorted(GEMM_H200.eta)
['bf16', 'fp8']
"""

from __future__ import annotations

import types
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Optional

__all__ = [
    "GpuCompute",
    "GPU_COMPUTE",
    "GemmParams",
    "AttentionParams",
    "GEMM_TILES",
    "GEMM_SPLIT_K",
    "SPLIT_K_PARTIAL_BYTES",
    "ATTENTION_BLOCK",
    "BYTES_PER_ELEMENT",
    "BASE_PRECISION",
    "HBM_EFFICIENCY",
    "MAMF_PROXY",
    "ATTENTION_FIT_GPU",
    "GEMM_H200",
    "GEMM_CARRY",
    "GEMM_GROUPED_FACTOR",
    "GEMM_TILE_OVERHEAD_SCALE",
    "GEMM_LAUNCH_S",
    "ATTENTION",
    "FIT_REPORT",
    "SOURCES",
]

#: Citations used by this module, by tag.
SOURCES: Mapping[str, str] = types.MappingProxyType({
    "H200-MEAS": "../shared/data/h200_gemm_attention.csv: one H200 SXM 141 GB, PyTorch 2.11.0+cu130, CUDA 13.0, "
                 "2026-11-29; CUDA-event median of 20 (attention 10) runs (copied to workloads/data/)",
    "DeepGEMM": "deepseek-ai/DeepGEMM README.md @55ab91f72f76e8a6db0e86282c3169a88d93df1b (H800 SXM5, FP8 1x128/128x128 "
                "block-scaled GEMM and grouped GEMM TFLOPS)",
    "torchao-mm": "pytorch/ao PR #2427 description, bench_matmul.py (B200 torch.mm BF16 TFLOPS by square size)",
    "torchao-moe": "pytorch/ao torchao/prototype/moe_training/README.md @0b1bb117287185f325161acd6a0bce8fb4439 "
                   "(B200 MXFP8 torch._scaled_grouped_mm times; BF16 torch._grouped_mm fwd+bwd times)",
    "flashinfer": "flashinfer-ai/flashinfer PR #2464 description (B200 CUTLASS mm_mxfp8 TFLOPS)",
    "cudnn-fe": "NVIDIA/cudnn-frontend benchmark/sdpa_benchmark_training/results/{h200_919_only_cudnn,dsv3,kimiK26,"
                "llama3.1,qwen35}/ @3929da2ef4c1dba1bb8acb68727b9134f26f40c0 (cuDNN SDPA fwd/bwd times)",
    "S1": "stas00/ml-engineering compute/accelerator/README.md @744d01e: MAMF (maximum achievable matmul FLOPS) "
          "table, via topologies.catalog mamf_* (MEAS by that source)",
    "SM-B200": "chipsandcheese 'Nvidia's B200: Keeping the CUDA Juggernaut Rolling' (via vuink.com mirror, 2025-12-15): "
               "80 SMs per die, 74 enabled, 148 per B200",
    "SM-GB": "r/hardware 'nVidia AI-Blackwell: Chips, Products, Naming, Hardware' (theaterfi.re / redlib mirrors): "
             "GB200 superchip 288 SMs (144 per GPU), GB300 superchip 320 SMs (160 per GPU); third-party, UNVERIFIED",
    "SM-Hopper": "NVIDIA H100 SXM5: 132 SMs (Hopper whitepaper; glennklockwood.com/garden/peak-FLOPS: 4 tensor cores x "
                 "132 SMs); H200 and H800 use the same GH100 configuration (saulelectric.com H200 spec: 132 SMs)",
    "H20": "zangshuxian.com (Geekbench 6 listing: 78 SMs; 148 TFLOPS FP16 dense, 296 INT8) and willitrunai.com H20 page "
           "(96 GB HBM3, 4.0 TB/s, 148 TFLOPS FP16); third-party, UNVERIFIED. FP8 dense taken = INT8 296 TOPS (DERIVED: "
           "Hopper runs FP8 and INT8 at the same rate)",
    "A100": "NVIDIA A100 whitepaper: 108 SMs (quoted in forums.developer.nvidia.com 'Theoretical TFLOPS ...' thread: "
            "108 x 2048 FLOP/clk = 312 TFLOPS)",
    "SFU": "Special-function (exp2) throughput: verda.com/blog/gb300-nvl72-architecture 'Attention acceleration (SFU EX2)' "
           "10.7 T exp/s GB300/B300, 5 T exp/s GB200/B200. Hopper 3.9 T/s = FlashAttention-3 paper (arXiv 2407.08608) "
           "'989 TFLOPS of FP16 matmul but only 3.9 TFLOPS of special functions' (H100 SXM5), equal to 16 exp/clk/SM x "
           "132 SMs x 1.83 GHz (DERIVED). A100 and H20: 16 exp/clk/SM x SMs x boost clock (DERIVED, UNVERIFIED)",
})


@dataclass(frozen=True)
class GpuCompute:
    """What the compute model needs of a GPU beyond the catalog's peaks.

    ``peak_*`` and ``hbm_Bps`` are ``None`` when :mod:`topologies.catalog` has
    the GPU (the catalog is the one source of peaks); they are given only for
    GPUs the catalog lacks.
    """

    name: str
    arch: str  #: ampere, hopper, blackwell
    sm_count: int
    exp_per_s: float  #: special-function (exp2) throughput of the whole GPU
    sources: tuple[str, ...]
    peak_bf16_flops: Optional[float] = None
    peak_fp8_flops: Optional[float] = None
    hbm_Bps: Optional[float] = None
    notes: str = ""


_GPU_LIST = (
    GpuCompute("A100", "ampere", 108, 108 * 16 * 1.41e9, ("A100", "SFU"),
               notes="exp rate DERIVED: 16/clk/SM x 108 x 1.41 GHz"),
    GpuCompute("H100", "hopper", 132, 3.9e12, ("SM-Hopper", "SFU")),
    GpuCompute("H200", "hopper", 132, 3.9e12, ("SM-Hopper", "SFU")),
    GpuCompute("H800", "hopper", 132, 3.9e12, ("SM-Hopper", "SFU"),
               notes="same GH100 configuration as H100 (catalog notes: peaks DERIVED equal to H100)"),
    GpuCompute("H20", "hopper", 78, 78 * 16 * 1.98e9, ("H20", "SFU"),
               peak_bf16_flops=148e12, peak_fp8_flops=296e12, hbm_Bps=4.0e12,
               notes="not in topologies.catalog; peaks and bandwidth here, UNVERIFIED. exp rate DERIVED with the "
                     "H100's 1.98 GHz boost clock"),
    GpuCompute("B200", "blackwell", 148, 5.0e12, ("SM-B200", "SFU")),
    GpuCompute("GB200", "blackwell", 144, 5.0e12, ("SM-GB", "SFU"), notes="SM count UNVERIFIED (third-party)"),
    GpuCompute("B300", "blackwell", 160, 10.7e12, ("SM-GB", "SFU"), notes="SM count UNVERIFIED (third-party)"),
    GpuCompute("GB300", "blackwell", 160, 10.7e12, ("SM-GB", "SFU"), notes="SM count UNVERIFIED (third-party)"),
)

#: GPU name (catalog spelling) -> compute-specific figures.
GPU_COMPUTE: Mapping[str, GpuCompute] = types.MappingProxyType({g.name: g for g in _GPU_LIST})

#: Output tiles (rows x columns per SM) the GEMM model may pick, as the library's
#: heuristic would: the power-of-two WGMMA/UMMA CTA tiles of CUTLASS (64x128 ..
#: 256x128). The model takes the fastest candidate (an ideal heuristic).
GEMM_TILES: tuple[tuple[int, int], ...] = ((64, 128), (128, 64), (128, 128), (128, 256), (256, 128))
#: Split-K factors the model may pick (cuBLAS split-K / stream-K for small M x N, large K).
GEMM_SPLIT_K: tuple[int, ...] = (1, 2, 3, 4, 6, 8)
#: Bytes per element of a split-K partial (fp32), written and read once per extra split.
SPLIT_K_PARTIAL_BYTES = 4.0
#: FlashAttention query/key block (rows) used for the causal block count and work units.
ATTENTION_BLOCK = 128

#: (input bytes, output bytes) per element. mxfp8 adds one E8M0 scale per 32
#: elements (OCP MX spec); DeepSeek's Hopper recipe (1x128 fp32 scales) costs
#: the same 1/32 byte per element.
BYTES_PER_ELEMENT: Mapping[str, tuple[float, float]] = types.MappingProxyType({
    "bf16": (2.0, 2.0),
    "fp8": (1.0, 2.0),
    "mxfp8": (1.0 + 1.0 / 32.0, 2.0),
})
#: The H200-fitted precision each precision's efficiency starts from.
BASE_PRECISION: Mapping[str, str] = types.MappingProxyType({"bf16": "bf16", "fp8": "fp8", "mxfp8": "fp8"})

#: GPUs without a catalog MAMF figure at a precision take their sibling's (ASSUMPTION):
#: H200 and H800 the H100's (same GH100 die and clocks; the catalog notes H200 BF16 MAMF
#: "only given as ~H100"), GB300 the GB200's (same NVL72 platform and nameplate peaks).
MAMF_PROXY: Mapping[str, str] = types.MappingProxyType({"H200": "H100", "H800": "H100", "GB300": "GB200"})

#: The GPU whose published rows each architecture's attention parameters were fitted on.
ATTENTION_FIT_GPU: Mapping[str, str] = types.MappingProxyType({"hopper": "H200", "blackwell": "GB200"})

#: Achieved fraction of the catalog HBM bandwidth by a large device copy (MEAS
#: on H200: 4,165.14 GB/s read+write of 4.8 TB/s). Carried unchanged to the other
#: GPUs (ASSUMPTION: no copy measurement of them is in the shared data).
HBM_EFFICIENCY = 4165.14e9 / 4.8e12


@dataclass(frozen=True)
class GemmParams:
    """Fitted GEMM parameters (see :mod:`workloads.compute` for the form)."""

    eta: Mapping[str, float]  #: tensor-core efficiency of the main loop, per base precision
    tile_overhead_s: Mapping[str, float]  #: fixed cost per output tile (prologue + epilogue)
    harness_floor_s: float  #: per-call floor of the measuring harness (fitted, not used to predict)


@dataclass(frozen=True)
class AttentionParams:
    """Fitted FlashAttention parameters of one architecture (see :mod:`workloads.compute`)."""

    eta: Mapping[tuple[str, str], float]  #: (direction, precision) -> tensor-core efficiency
    block_overhead_s: Mapping[str, float]  #: direction -> cost per (batch, head, query block)
    exp_exposed: float  #: fraction of the exp (SFU) time not hidden under the MMAs


# ---- fitted values (FIT; regenerate with workloads.compute_calibrate.calibrate) ----
# BEGIN FITTED
GEMM_H200 = GemmParams(
    eta=types.MappingProxyType({'bf16': 0.804373, 'fp8': 0.772355}),
    tile_overhead_s=types.MappingProxyType({'bf16': 4.54483e-07, 'fp8': 2.42933e-06}),
    harness_floor_s=2.61142e-05,
)
GEMM_CARRY: Mapping[tuple[str, str], float] = types.MappingProxyType({('hopper', 'bf16'): 1.0, ('hopper', 'fp8'): 1.0, ('hopper', 'mxfp8'): 0.971791, ('blackwell', 'bf16'): 0.810122, ('blackwell', 'mxfp8'): 1.00768, ('blackwell', 'fp8'): 1.00768, ('ampere', 'bf16'): 1.08203})
GEMM_GROUPED_FACTOR: Mapping[str, float] = types.MappingProxyType({'hopper': 1.0, 'blackwell': 0.68966, 'ampere': 1.0})
GEMM_TILE_OVERHEAD_SCALE: Mapping[str, float] = types.MappingProxyType({'hopper': 1.0, 'blackwell': 0.301549, 'ampere': 1.0})
GEMM_LAUNCH_S: Mapping[str, float] = types.MappingProxyType({'hopper': 2.00498e-06, 'blackwell': 3.22567e-06, 'ampere': 2.00498e-06})
ATTENTION: Mapping[str, AttentionParams] = types.MappingProxyType({
    'hopper': AttentionParams(
        eta=types.MappingProxyType({('fwd', 'bf16'): 0.706274, ('fwd', 'fp8'): 0.551809, ('bwd', 'bf16'): 0.593033, ('bwd', 'fp8'): 0.336827}),
        block_overhead_s=types.MappingProxyType({'fwd': 3.99512e-06, 'bwd': 2.05381e-05}),
        exp_exposed=6.95212e-11,
    ),
    'blackwell': AttentionParams(
        eta=types.MappingProxyType({('fwd', 'bf16'): 0.846305, ('fwd', 'fp8'): 0.722879, ('fwd', 'mxfp8'): 0.650157, ('bwd', 'bf16'): 0.525322, ('bwd', 'fp8'): 0.443209, ('bwd', 'mxfp8'): 0.344016}),
        block_overhead_s=types.MappingProxyType({'fwd': 2.21519e-06, 'bwd': 8.28417e-06}),
        exp_exposed=0.367261,
    ),
})
FIT_REPORT: Mapping[str, Mapping[str, float]] = types.MappingProxyType({
    'gemm_h200': types.MappingProxyType({'n_fit': 104.0, 'n_held': 30.0, 'fit_mean': 0.0704964, 'fit_max': 0.406795, 'held_mean': 0.087737, 'held_max': 0.295491}),
    'gemm_hopper_mxfp8': types.MappingProxyType({'n_fit': 12.0, 'n_held': 16.0, 'fit_mean': 0.0572527, 'fit_max': 0.189227, 'held_mean': 0.0729784, 'held_max': 0.238066}),
    'gemm_blackwell': types.MappingProxyType({'n_fit': 8.0, 'n_held': 15.0, 'fit_mean': 0.0464845, 'fit_max': 0.138693, 'held_mean': 0.167003, 'held_max': 0.315606}),
    'attention_h200': types.MappingProxyType({'n_fit': 34.0, 'n_held': 20.0, 'fit_mean': 0.0609627, 'fit_max': 0.420628, 'held_mean': 0.070247, 'held_max': 0.391602}),
    'attention_blackwell': types.MappingProxyType({'n_fit': 111.0, 'n_held': 259.0, 'fit_mean': 0.061556, 'fit_max': 0.259094, 'held_mean': 0.119631, 'held_max': 0.312884}),
    'attention_check_h100_fa3': types.MappingProxyType({'n_fit': 0.0, 'n_held': 8.0, 'held_mean': 0.113321, 'held_max': 0.312145}),
    'attention_check_b200_fa4': types.MappingProxyType({'n_fit': 0.0, 'n_held': 18.0, 'held_mean': 0.213795, 'held_max': 0.428822}),
})
# END FITTED
