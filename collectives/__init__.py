"""Collectives on the fabric: algorithms as flows, NCCL's model as the analytical reference, the runner."""

from collectives.algorithms import NCCL_TO_OURS, Plan, Planner
from collectives.calibration import Calibration, calibration
from collectives.groups import LAYOUTS, rank_groups
from collectives.moe import ROUTING_KINDS, TokenRouting, route_tokens
from collectives.ops import ALGORITHMS, COLLECTIVES, Collective, Options, busbw_factor
from collectives.runner import CollectiveResult, planner_for, run, sweep
from collectives.schedule import (TASK_TYPES, CollectiveTask, ComputeTask, PlanCache, ScheduleResult, SendTask,
                                  TaskResult, schedule)

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
