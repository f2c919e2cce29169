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

__fabric_emu__ = True
__all__: list[str] = []
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
