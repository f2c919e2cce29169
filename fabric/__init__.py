"""The network: compiled fabric, routing, failures, bisection and the flow engine.

``fabric`` analyses the graphs that :mod:`topologies` builds, the way
networkx's algorithms analyse its generators' graphs.
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
    "UnreachableError": ("topologies.errors", "UnreachableError"),
    "BisectionResult": ("fabric.bisection", "BisectionResult"),
    "Partition": ("fabric.bisection", "Partition"),
    "bisection": ("fabric.bisection", "bisection"),
    "cut_Bps": ("fabric.bisection", "cut_Bps"),
    "structured_partitions": ("fabric.bisection", "structured_partitions"),
    "CompiledFabric": ("fabric.compiled", "CompiledFabric"),
    "compile_fabric": ("fabric.compiled", "compile_fabric"),
    "SELECTOR_FORMS": ("fabric.failures", "SELECTOR_FORMS"),
    "apply_failures": ("fabric.failures", "apply_failures"),
    "compile_with_failures": ("fabric.failures", "compile_with_failures"),
    "parse_degradation": ("fabric.failures", "parse_degradation"),
    "resolve": ("fabric.failures", "resolve"),
    "CongestionReport": ("fabric.congestion", "CongestionReport"),
    "LinkStat": ("fabric.congestion", "LinkStat"),
    "TierStat": ("fabric.congestion", "TierStat"),
    "congestion": ("fabric.congestion", "congestion"),
    "independent_size_classes": ("fabric.decompose", "independent_size_classes"),
    "simulate_split": ("fabric.decompose", "simulate_split"),
    "FlowProblem": ("fabric.engine", "FlowProblem"),
    "FlowResult": ("fabric.engine", "FlowResult"),
    "estimate_memory_bytes": ("fabric.engine", "estimate_memory_bytes"),
    "simulate": ("fabric.engine", "simulate"),
    "FlowSet": ("fabric.flowset", "FlowSet"),
    "concat": ("fabric.flowset", "concat"),
    "to_problem": ("fabric.flowset", "to_problem"),
    "MaxMinResult": ("fabric.maxmin", "MaxMinResult"),
    "maxmin_rates": ("fabric.maxmin", "maxmin_rates"),
    "maxmin_refill": ("fabric.maxmin", "maxmin_refill"),
    "NxRouter": ("fabric.nxroute", "NxRouter"),
    "POLICIES": ("fabric.routing", "POLICIES"),
    "TRANSPORTS": ("fabric.routing", "TRANSPORTS"),
    "Router": ("fabric.routing", "Router"),
    "Routes": ("fabric.routing", "Routes"),
}

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


install_lazy_exports(__name__, _EXPORTS)
