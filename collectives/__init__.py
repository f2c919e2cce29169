"""Collectives on the fabric: algorithms as flows, NCCL's model as the analytical reference, the runner."""

from collectives.algorithms import NCCL_TO_OURS, Plan, Planner
from collectives.calibration import Calibration, calibration
from collectives.moe import ROUTING_KINDS, TokenRouting, route_tokens
from collectives.ops import ALGORITHMS, COLLECTIVES, Collective, busbw_factor
from collectives.runner import CollectiveResult, planner_for, run, sweep

__fabric_emu__ = True

__all__ = [
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
    "busbw_factor",
    "CollectiveResult",
    "planner_for",
    "run",
    "sweep",
]
