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

#: The step-time estimator's API, imported on first use (it pulls in the flow engine and the
#: collectives, which the compute and FLOP models do not need).
_LAZY = {
    "Layout": "workloads.layout", "Placement": "workloads.layout", "place": "workloads.layout",
    "estimate_step": "workloads.step", "StepResult": "workloads.step", "Overlap": "workloads.step",
    "parse_overlap": "workloads.step", "LayerTimes": "workloads.step",
    "validate_training": "workloads.training_validate", "TrainingReport": "workloads.training_validate",
    "TrainingRow": "workloads.training_validate", "load_points": "workloads.training_validate",
}


def __getattr__(name: str):
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'workloads' has no attribute {name!r}")
    import importlib

    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


__fabric_emu__ = True
__all__: list[str] = []
__all__ += [
    "ModelSpec", "ATTENTION_KINDS", "get_model", "list_models", "load_model",
    "ParamCounts", "FlopsBreakdown", "FLOP_CONVENTIONS", "param_counts", "flops_per_token", "flops_breakdown",
]
__all__ += ["Op", "Split", "LayerOps", "OP_KINDS", "LAYER_KINDS", "layer_ops", "model_ops"]
__all__ += [
    "ComputeModel",
    "attention_flops",
    "attention_time_s",
    "compute_model",
    "gemm_efficiency",
    "gemm_time_s",
    "gpu_figures",
    "grouped_gemm_time_s",
    "memory_time_s",
]
__all__ += ["KINDS", "OVERLAPS", "SCHEDULES", "STREAMS", "PipelineResult", "Timeline", "simulate_pipeline",
            "Span", "chrome_trace", "trace_bytes", "write_trace"]
__all__ += list(_LAZY)
