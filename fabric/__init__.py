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
from fabric.nxroute import NxRouter
from fabric.routing import POLICIES, Router, Routes

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
    "NxRouter",
    "POLICIES",
    "Router",
    "Routes",
]
