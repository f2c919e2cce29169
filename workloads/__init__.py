"""workloads layer of fabric-emu."""

from workloads.compute import (
    ComputeModel,
    attention_flops,
    attention_time_s,
    compute_model,
    gemm_efficiency,
    gemm_time_s,
    gpu_figures,
    grouped_gemm_time_s,
    memory_time_s,
)
from workloads.flops import (
    FLOP_CONVENTIONS,
    FlopsBreakdown,
    ParamCounts,
    flops_breakdown,
    flops_per_token,
    param_counts,
)
from workloads.models import ATTENTION_KINDS, ModelSpec, get_model, list_models, load_model
from workloads.ops import LAYER_KINDS, OP_KINDS, LayerOps, Op, Split, layer_ops, model_ops
from workloads.pipeline import KINDS, OVERLAPS, SCHEDULES, STREAMS, PipelineResult, Timeline, simulate_pipeline
from workloads.trace import Span, chrome_trace, trace_bytes, write_trace

__fabric_emu__ = True
__all__: list[str] = []
__all__ += [
    "ModelSpec", "ATTENTION_KINDS", "get_model", "list_models", "load_model",
    "ParamCounts", "FlopsBreakdown", "FLOP_CONVENTIONS", "param_counts", "flops_per_token", "flops_breakdown",
]
__all__ += ["Op", "Split", "LayerOps", "OP_KINDS", "LAYER_KINDS", "layer_ops", "model_ops"]
__all__ += ["KINDS", "OVERLAPS", "SCHEDULES", "STREAMS", "PipelineResult", "Timeline", "simulate_pipeline",
            "Span", "chrome_trace", "trace_bytes", "write_trace"]
__all__ += ["ComputeModel", "attention_flops", "attention_time_s", "compute_model", "gemm_efficiency", "gemm_time_s",
            "gpu_figures", "grouped_gemm_time_s", "memory_time_s"]
