"""The network: compiled fabric, routing, failures, bisection and the flow engine.

``fabric`` analyses the graphs that :mod:`topologies` builds, the way
networkx's algorithms analyse its generators' graphs.
"""

from topologies.errors import (
    FabricEmuError,
    FlowError,
    ProblemTooLargeError,
    RoutingError,
    SelectorError,
    UnreachableError,
)
from fabric.bisection import BisectionResult, Partition, bisection, cut_Bps, structured_partitions
from fabric.compiled import CompiledFabric, compile_fabric
from fabric.failures import SELECTOR_FORMS, apply_failures, compile_with_failures, parse_degradation, resolve
from fabric.congestion import CongestionReport, LinkStat, TierStat, congestion
from fabric.decompose import independent_size_classes, simulate_split
from fabric.engine import FlowProblem, FlowResult, estimate_memory_bytes, simulate
from fabric.flowset import FlowSet, concat, to_problem
from fabric.maxmin import MaxMinResult, maxmin_rates, maxmin_refill
from fabric.nxroute import NxRouter
from fabric.routing import POLICIES, TRANSPORTS, Router, Routes

__fabric_emu__ = True

__all__ = [
    "FabricEmuError",
    "FlowError",
    "ProblemTooLargeError",
    "RoutingError",
    "SelectorError",
    "UnreachableError",
    "BisectionResult",
    "Partition",
    "bisection",
    "cut_Bps",
    "structured_partitions",
    "CompiledFabric",
    "compile_fabric",
    "SELECTOR_FORMS",
    "apply_failures",
    "compile_with_failures",
    "parse_degradation",
    "resolve",
    "CongestionReport",
    "LinkStat",
    "TierStat",
    "congestion",
    "independent_size_classes",
    "simulate_split",
    "FlowProblem",
    "FlowResult",
    "estimate_memory_bytes",
    "simulate",
    "FlowSet",
    "concat",
    "to_problem",
    "MaxMinResult",
    "maxmin_rates",
    "maxmin_refill",
    "NxRouter",
    "POLICIES",
    "TRANSPORTS",
    "Router",
    "Routes",
]
