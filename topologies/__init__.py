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

from topologies import catalog
from topologies.clos import fat_tree
from topologies.cluster import SUPERPODS, cluster, superpod
from topologies.export import read as read_graph
from topologies.export import write as write_graph
from topologies.graph import FabricSummary, gpus_of, summarize
from topologies.nvlink import hgx, nvl, nvlink_domain
from topologies.presets import Preset, build, preset, presets
from topologies.spec import load as load_spec
from topologies.spec import load_topology

__fabric_emu__ = True

__all__ = [
    "catalog",
    "fat_tree",
    "SUPERPODS",
    "cluster",
    "superpod",
    "read_graph",
    "write_graph",
    "FabricSummary",
    "gpus_of",
    "summarize",
    "hgx",
    "nvl",
    "nvlink_domain",
    "Preset",
    "build",
    "preset",
    "presets",
    "load_spec",
    "load_topology",
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
