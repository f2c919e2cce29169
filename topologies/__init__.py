"""Topology builders and the hardware catalog: they produce fabric graphs.

This is the lowest layer of fabric-emu. It also holds the exception hierarchy
and the units module, which every other layer uses.
"""

from __future__ import annotations

from topologies.lazy import install_lazy_exports

#: public name -> (module, attribute); imported on first use, so that importing the package
#: (e.g. for ``fabric-emu --help``) does not load numpy, scipy or networkx
_EXPORTS = {
    "FabricEmuError": ("topologies.errors", "FabricEmuError"),
    "FlowError": ("topologies.errors", "FlowError"),
    "ProblemTooLargeError": ("topologies.errors", "ProblemTooLargeError"),
    "RoutingError": ("topologies.errors", "RoutingError"),
    "SelectorError": ("topologies.errors", "SelectorError"),
    "SpecError": ("topologies.errors", "SpecError"),
    "TopologyError": ("topologies.errors", "TopologyError"),
    "UnitError": ("topologies.errors", "UnitError"),
    "UnreachableError": ("topologies.errors", "UnreachableError"),
    "format_bandwidth": ("topologies.units", "format_bandwidth"),
    "format_size": ("topologies.units", "format_size"),
    "format_time": ("topologies.units", "format_time"),
    "parse_bandwidth": ("topologies.units", "parse_bandwidth"),
    "parse_size": ("topologies.units", "parse_size"),
    "parse_size_range": ("topologies.units", "parse_size_range"),
    "parse_time": ("topologies.units", "parse_time"),
    "catalog": ("topologies.catalog", None),
    "fat_tree": ("topologies.clos", "fat_tree"),
    "SUPERPODS": ("topologies.cluster", "SUPERPODS"),
    "cluster": ("topologies.cluster", "cluster"),
    "superpod": ("topologies.cluster", "superpod"),
    "read_graph": ("topologies.export", "read"),
    "write_graph": ("topologies.export", "write"),
    "FabricGraph": ("topologies.fabricgraph", "FabricGraph"),
    "as_networkx": ("topologies.fabricgraph", "as_networkx"),
    "FabricSummary": ("topologies.graph", "FabricSummary"),
    "gpus_of": ("topologies.graph", "gpus_of"),
    "summarize": ("topologies.graph", "summarize"),
    "hgx": ("topologies.nvlink", "hgx"),
    "nvl": ("topologies.nvlink", "nvl"),
    "nvlink_domain": ("topologies.nvlink", "nvlink_domain"),
    "Preset": ("topologies.presets", "Preset"),
    "build": ("topologies.presets", "build"),
    "preset": ("topologies.presets", "preset"),
    "presets": ("topologies.presets", "presets"),
    "load_spec": ("topologies.spec", "load"),
    "load_topology": ("topologies.spec", "load_topology"),
}

__fabric_emu__ = True

__all__ = [
    "catalog",
    "fat_tree",
    "SUPERPODS",
    "cluster",
    "superpod",
    "read_graph",
    "write_graph",
    "FabricGraph",
    "as_networkx",
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


install_lazy_exports(__name__, _EXPORTS)
