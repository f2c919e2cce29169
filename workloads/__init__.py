"""workloads layer of fabric-emu."""

from workloads.pipeline import KINDS, OVERLAPS, SCHEDULES, STREAMS, PipelineResult, Timeline, simulate_pipeline
from workloads.trace import Span, chrome_trace, trace_bytes, write_trace

__fabric_emu__ = True
__all__: list[str] = []
__all__ += ["KINDS", "OVERLAPS", "SCHEDULES", "STREAMS", "PipelineResult", "Timeline", "simulate_pipeline",
            "Span", "chrome_trace", "trace_bytes", "write_trace"]
