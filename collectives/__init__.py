"""Collectives on the fabric: algorithms as flows, NCCL's model as the analytical reference, the runner."""

from __future__ import annotations

from topologies.lazy import install_lazy_exports

#: public name -> (module, attribute); imported on first use, so that a run loads only what it uses
#: (e.g. not the step scheduler) and ``fabric-emu --help`` none of it
_EXPORTS = {
    "NCCL_TO_OURS": ("collectives.algorithms", "NCCL_TO_OURS"),
    "Plan": ("collectives.algorithms", "Plan"),
    "Planner": ("collectives.algorithms", "Planner"),
    "Calibration": ("collectives.calibration", "Calibration"),
    "calibration": ("collectives.calibration", "calibration"),
    "LAYOUTS": ("collectives.groups", "LAYOUTS"),
    "rank_groups": ("collectives.groups", "rank_groups"),
    "ROUTING_KINDS": ("collectives.moe", "ROUTING_KINDS"),
    "TokenRouting": ("collectives.moe", "TokenRouting"),
    "route_tokens": ("collectives.moe", "route_tokens"),
    "ALGORITHMS": ("collectives.ops", "ALGORITHMS"),
    "COLLECTIVES": ("collectives.ops", "COLLECTIVES"),
    "Collective": ("collectives.ops", "Collective"),
    "Options": ("collectives.ops", "Options"),
    "busbw_factor": ("collectives.ops", "busbw_factor"),
    "CollectiveResult": ("collectives.runner", "CollectiveResult"),
    "planner_for": ("collectives.runner", "planner_for"),
    "run": ("collectives.runner", "run"),
    "sweep": ("collectives.runner", "sweep"),
    "TASK_TYPES": ("collectives.schedule", "TASK_TYPES"),
    "CollectiveTask": ("collectives.schedule", "CollectiveTask"),
    "ComputeTask": ("collectives.schedule", "ComputeTask"),
    "PlanCache": ("collectives.schedule", "PlanCache"),
    "ScheduleResult": ("collectives.schedule", "ScheduleResult"),
    "SendTask": ("collectives.schedule", "SendTask"),
    "TaskResult": ("collectives.schedule", "TaskResult"),
    "schedule": ("collectives.schedule", "schedule"),
}

__fabric_emu__ = True

__all__ = [
    "LAYOUTS",
    "rank_groups",
    "NCCL_TO_OURS",
    "Plan",
    "Planner",
    "Calibration",
    "calibration",
    "ROUTING_KINDS",
    "TokenRouting",
    "route_tokens",
    "ALGORITHMS",
    "COLLECTIVES",
    "Collective",
    "Options",
    "busbw_factor",
    "CollectiveResult",
    "planner_for",
    "run",
    "sweep",
    "TASK_TYPES",
    "CollectiveTask",
    "ComputeTask",
    "PlanCache",
    "ScheduleResult",
    "SendTask",
    "TaskResult",
    "schedule",
]


install_lazy_exports(__name__, _EXPORTS)
