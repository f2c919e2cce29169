"""Topology builders and the hardware catalog: they produce fabric graphs.

This is the lowest layer of fabric-emu. It also holds the exception hierarchy
and the units module, which every other layer uses.
"""

from topologies.errors import (
    FabricEmuError,
    FlowError,
    ProblemTooLargeError,
    RoutingError,
    SelectorError,
    SpecError,
    TopologyError,
    UnitError,
    UnreachableError,
)
from topologies.units import (
    format_bandwidth,
    format_size,
    format_time,
    parse_bandwidth,
    parse_size,
    parse_size_range,
    parse_time,
)

__fabric_emu__ = True

__all__ = [
    "FabricEmuError",
    "FlowError",
    "ProblemTooLargeError",
    "RoutingError",
    "SelectorError",
    "SpecError",
    "TopologyError",
    "UnitError",
    "UnreachableError",
    "format_bandwidth",
    "format_size",
    "format_time",
    "parse_bandwidth",
    "parse_size",
    "parse_size_range",
    "parse_time",
]
