"""How big a preset's graph will be, computed from its parameters before building.

:func:`estimate_build` is arithmetic only (no graph, no loop over hosts), so a
request for a million hosts or 10**30 domains is refused at once by
:func:`check_build` instead of allocating for minutes. The link count is an
upper bound:

* NVLink: ``nvlink_links`` cables per GPU (18 on Hopper and Blackwell);
* host: one cable per GPU (GPU <-> NIC);
* per network plane: one NIC cable per GPU, and at most ``GPUs + radix``
  cables in each of the two switch tiers above the leaves (a leaf never has
  more up-ports than down-ports, oversubscription >= 1; a partly filled last
  leaf adds at most one radix).

Every cable is two directed links. Switch nodes are bounded by the cables.
Memory per link and per node: measured peak RSS of build + compile + bisection
was 530-980 B per directed link on fat-trees of 4096 hosts, 256 HGX H100 nodes
and 16 GB300 racks (docs/robustness.md); the estimate takes 2 KiB per link and
1 KiB per node, and 20 us per link (measured 4-10 us).

Examples
--------
>>> e = estimate_build("fat-tree", {"hosts": 1_000_000})
>>> e.gpus, e.links >= 2 * 1_000_000 * 4
(1000000, True)
>>> e.memory_bytes > 8 << 30
True
"""

from __future__ import annotations

from dataclasses import dataclass

from topologies import catalog
from topologies.limits import check_memory

__all__ = ["BuildEstimate", "estimate_build", "check_build", "BYTES_PER_LINK", "BYTES_PER_NODE", "SECONDS_PER_LINK"]

#: Conservative peak memory per directed link and per node of build + compile + bisection (2x the worst measured).
BYTES_PER_LINK = 2048
BYTES_PER_NODE = 1024
#: Conservative build + compile time per directed link (measured 4-10 us on the reference machine).
SECONDS_PER_LINK = 20e-6


@dataclass(frozen=True)
class BuildEstimate:
    """Upper bounds on a preset graph's size, and the memory and time to build and compile it."""

    gpus: int
    domain_gpus: int
    nodes: int
    links: int
    memory_bytes: int
    time_s: float


def _finish(gpus: int, domain_gpus: int, nodes: int, links: int) -> BuildEstimate:
    return BuildEstimate(gpus=gpus, domain_gpus=domain_gpus, nodes=nodes, links=links,
                         memory_bytes=links * BYTES_PER_LINK + nodes * BYTES_PER_NODE,
                         time_s=links * SECONDS_PER_LINK)


def _network(gpus: int, planes: int, radix: int) -> tuple[int, int]:
    """(cables, switches) bounds of a folded Clos over ``gpus`` NICs, per the module doc."""
    per_plane = gpus + 2 * (gpus + radix)
    return planes * per_plane, planes * (2 * gpus + 3 * radix)


def _cluster(gpu_name: str, domains: int, domain_gpus: int, scaleout, planes: int) -> BuildEstimate:
    gpu = catalog.gpu(gpu_name)
    gpus = domains * domain_gpus
    nvl_cables = gpus * gpu.nvlink_links
    nodes = gpus + domains * max(gpu.nvswitch_chips, 1)
    if scaleout in (None, "none"):
        return _finish(gpus, domain_gpus, nodes, 2 * nvl_cables)
    sw, _ = catalog.scaleout_switch(scaleout)
    cables, switches = _network(gpus, planes, sw.ports * planes)
    return _finish(gpus, domain_gpus, nodes + gpus + switches, 2 * (nvl_cables + gpus + cables))


def _gpu_of(name: str) -> str | None:
    if name.startswith("hgx-"):
        return name[4:].upper()
    if name.endswith("-nvl72"):
        return name[:-6].upper()
    return None


def estimate_build(name: str, kwargs: dict) -> BuildEstimate | None:
    """Upper bounds for preset ``name`` built with the (already converted) ``kwargs``.

    Returns None for a preset family this module does not know (its builder's
    own checks then apply).
    """
    from topologies.presets import preset

    p = preset(name)
    args = {x.name: x.default for x in p.params}
    args.update(kwargs)
    gpu_name = _gpu_of(name)
    if gpu_name is not None:
        gpu = catalog.gpu(gpu_name)
        n = args.get("gpus_per_domain") or gpu.domain_gpus
        return _cluster(gpu_name, int(args["domains"]), int(n), args.get("scaleout"), int(args.get("planes") or 1))
    if name == "fat-tree":
        hosts, planes, radix = int(args["hosts"]), int(args["planes"]), int(args["radix"])
        cables, switches = _network(hosts, planes, radix)
        return _finish(hosts, 1, 2 * hosts + switches, 2 * (hosts + cables))
    if name == "nvl":
        n = int(args["n"])
        gpu = catalog.gpu(args["gpu"])
        return _finish(n, n, n + max(gpu.nvswitch_chips, 18), 2 * n * gpu.nvlink_links)
    if name.startswith("superpod-"):
        from topologies.cluster import SUPERPODS

        ref = SUPERPODS.get(name[len("superpod-"):])
        if ref is None:
            return None
        gpu = catalog.gpu(ref["gpu"])
        nodes = ref["nodes_per_su"] * int(args["sus"]) - ref.get("ufm_slots", 0)
        return _cluster(ref["gpu"], nodes, gpu.domain_gpus, ref["scaleout"], 1)
    return None


def check_build(name: str, kwargs: dict, *, memory_limit=None) -> BuildEstimate | None:
    """Refuse (:class:`ProblemTooLargeError`) a build whose estimate exceeds the memory limit."""
    est = estimate_build(name, kwargs)
    if est is None:
        return None
    gpus = f"{est.gpus:,}" if est.gpus < 10**15 else f"{est.gpus:.3g}"
    links = f"{est.links:,}" if est.links < 10**15 else f"{est.links:.3g}"
    names = {x.name for x in _params(name)}
    knob = next((k for k in ("hosts", "domains", "sus", "n") if k in names), None)
    hint = "build fewer GPUs" + (f" (--set {knob}=N)" if knob else "")
    if "aggregate" in names:
        hint += ", or merge parallel cables (--set aggregate=true)"
    check_memory(est.memory_bytes, what=f"topology {name} with {gpus} GPUs (up to {links} links)", hint=hint,
                 limit=memory_limit, time_s=est.time_s)
    return est


def _params(name: str):
    from topologies.presets import preset

    return preset(name).params

