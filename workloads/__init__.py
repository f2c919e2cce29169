"""workloads layer of fabric-emu: models, FLOPs, compute, pipelines and the step-time estimator.

Every public name is imported on first use (:mod:`topologies.lazy`), so the compute and FLOP
models do not load the flow engine and the collectives that the step-time estimator needs.
"""

from topologies.lazy import install_lazy_exports

#: module -> the public names it exports through the package
_MODULES = {
    "workloads.compute": ("ComputeModel", "attention_flops", "attention_time_s", "compute_model", "gemm_efficiency",
                          "gemm_time_s", "gpu_figures", "grouped_gemm_time_s", "memory_time_s"),
    "workloads.flops": ("FLOP_CONVENTIONS", "FlopsBreakdown", "ParamCounts", "flops_breakdown", "flops_per_token",
                        "param_counts"),
    "workloads.models": ("ATTENTION_KINDS", "ModelSpec", "get_model", "list_models", "load_model"),
    "workloads.ops": ("LAYER_KINDS", "OP_KINDS", "LayerOps", "Op", "Split", "layer_ops", "model_ops"),
    "workloads.pipeline": ("KINDS", "OVERLAPS", "SCHEDULES", "STREAMS", "PipelineResult", "Timeline",
                           "simulate_pipeline"),
    "workloads.trace": ("Span", "chrome_trace", "trace_bytes", "write_trace"),
    "workloads.layout": ("Layout", "Placement", "place"),
    "workloads.step": ("estimate_step", "StepResult", "Overlap", "parse_overlap", "LayerTimes"),
    "workloads.training_validate": ("validate_training", "TrainingReport", "TrainingRow", "load_points"),
}
_EXPORTS = {name: (module, name) for module, names in _MODULES.items() for name in names}

__fabric_emu__ = True
__all__ = list(_EXPORTS)

install_lazy_exports(__name__, _EXPORTS)
