"""NVLink switch domains: HGX 8-GPU boards and NVL72/NVL36 racks.

Every GPU has ``nvlink_links`` NVLink links spread over the domain's NVSwitch
chips (``links_per_chip[c]`` links to chip ``c``): HGX H100/H200 4 chips with
5+4+4+5 links, H800 4 chips with 2 links each, HGX B200/B300 2 chips with 9,
GB200/GB300 NVL72 18 chips with one link each (see :mod:`topologies.catalog`).
Each link is one cable, i.e. two directed edges of ``nvlink_link_Bps`` each.

Examples
--------
>>> G = hgx("H100")
>>> from topologies.graph import summarize
>>> s = summarize(G)
>>> s.gpus, s.switches, s.cables
(8, 4, 144)
"""

from __future__ import annotations

from topologies import catalog
from topologies.errors import SpecError
from topologies.fabricgraph import FabricGraph
from topologies.graph import add_cable, add_node, cable_latency_s, new_fabric
from topologies.limits import whole_number

__all__ = ["add_nvlink_domain", "nvlink_domain", "hgx", "nvl", "gpu_node", "nvswitch_node"]


def gpu_node(domain: int, local: int) -> str:
    """Node id of GPU ``local`` of NVLink domain ``domain``."""
    return f"d{domain}/gpu{local}"


def nvswitch_node(domain: int, chip: int) -> str:
    """Node id of NVSwitch chip ``chip`` of domain ``domain``."""
    return f"d{domain}/nvsw{chip}"


def _switch_for(gpu: catalog.GPU) -> catalog.Switch:
    """The NVSwitch generation that serves the GPU's NVLink generation."""
    return catalog.switch({3: "NVSwitch2", 4: "NVSwitch3"}.get(gpu.nvlink_gen, "NVLink5-switch"))


def add_nvlink_domain(G: FabricGraph, domain: int, gpu: catalog.GPU, *, n_gpus: int | None = None,
                      links_per_chip: tuple[int, ...] | None = None, aggregate: bool = False,
                      gpus_per_tray: int | None = None) -> list[str]:
    """Add one NVLink domain (GPUs + NVSwitch chips + cables) to ``G``.

    Parameters
    ----------
    G : networkx.MultiDiGraph
        Fabric graph to extend.
    domain : int
        Domain index (also the "node" index for HGX boards).
    gpu : catalog.GPU
        GPU model; gives link count, per-link bandwidth and the chip layout.
    n_gpus : int, optional
        GPUs in the domain (default: the model's standard domain size).
    links_per_chip : tuple of int, optional
        Links from every GPU to each chip (default: the model's layout).
    aggregate : bool
        Merge parallel GPU-chip cables into one edge per direction.
    gpus_per_tray : int, optional
        GPUs per compute tray (NVL72: 4). Sets the GPUs' ``rail`` attribute to
        ``local % gpus_per_tray``; default: one rail per GPU (HGX: 8 rails).

    Returns
    -------
    list of str
        The GPU node ids, in local order.
    """
    n = gpu.domain_gpus if n_gpus is None else whole_number(n_gpus, field="n_gpus")
    layout = tuple(gpu.links_per_chip if links_per_chip is None else links_per_chip)
    if n < 1:
        raise SpecError(f"gpus_per_domain: {n} must be >= 1")
    if any(k < 0 for k in layout) or sum(layout) == 0:
        raise SpecError(f"links_per_chip: {layout} must be non-negative link counts with at least one link")
    sw = _switch_for(gpu)
    ports_needed = n * max(layout)
    if ports_needed > sw.ports:
        raise SpecError(
            f"gpus_per_domain: {n} GPUs x {max(layout)} links need {ports_needed} ports on one "
            f"{sw.name} chip, which has {sw.ports}; use at most {sw.ports // max(layout)} GPUs per domain")
    tray = gpus_per_tray or n
    lat_to_switch = sw.hop_latency_s + cable_latency_s("nvlink")
    lat_to_gpu = cable_latency_s("nvlink")
    for c, k in enumerate(layout):
        if k:
            add_node(G, nvswitch_node(domain, c), "nvswitch", domain=domain, local=c, plane=c,
                     model=sw.name, reduce=sw.in_network_reduction or "")
    gpus = []
    for i in range(n):
        g = add_node(G, gpu_node(domain, i), "gpu", domain=domain, local=i, rail=i % tray, model=gpu.name)
        gpus.append(g)
        for c, k in enumerate(layout):
            if k:
                add_cable(G, g, nvswitch_node(domain, c), capacity_Bps=gpu.nvlink_link_Bps, tier_up="nvlink-up",
                          tier_down="nvlink-down", latency_uv_s=lat_to_switch, latency_vu_s=lat_to_gpu,
                          plane=c, count=k, aggregate=aggregate)
    return gpus


def nvlink_domain(gpu_name: str, *, n_gpus: int | None = None, aggregate: bool = False,
                  name: str | None = None) -> FabricGraph:
    """One NVLink domain of ``gpu_name`` GPUs as a fabric graph.

    Examples
    --------
    >>> G = nvlink_domain("GB300")
    >>> sum(1 for _, d in G.nodes(data=True) if d["kind"] == "gpu")
    72
    """
    gpu = catalog.gpu(gpu_name)
    G = new_fabric(name or gpu.domain.lower().replace(" ", "-"), gpu=gpu.name, domain_gpus=n_gpus or gpu.domain_gpus)
    add_nvlink_domain(G, 0, gpu, n_gpus=n_gpus, aggregate=aggregate,
                      gpus_per_tray=4 if gpu.domain_gpus == 72 else None)
    return G


def hgx(gpu_name: str = "H100", *, aggregate: bool = False) -> FabricGraph:
    """An HGX/DGX 8-GPU board (A100, H100, H200, H800, B200, B300).

    Examples
    --------
    >>> G = hgx("B200")
    >>> sorted({d["model"] for _, d in G.nodes(data=True) if d["kind"] == "switch"})
    ['NVLink5-switch']
    """
    gpu = catalog.gpu(gpu_name)
    if gpu.domain_gpus != 8:
        raise SpecError(f"gpu: {gpu.name} is not an HGX 8-GPU part; use nvl() for {gpu.domain}")
    return nvlink_domain(gpu.name, aggregate=aggregate, name=f"hgx-{gpu.name.lower()}")


def nvl(n: int = 72, gpu_name: str = "GB200", *, aggregate: bool = False) -> FabricGraph:
    """A rack-scale NVLink domain of ``n`` Blackwell GPUs (NVL72, NVL36, ...).

    Every GPU has one NVLink5 link to each of the 18 switch chips, so the
    domain is a single-stage crossbar; a chip has 72 ports, which bounds ``n``.

    Examples
    --------
    >>> G = nvl(36)
    >>> sum(1 for _, d in G.nodes(data=True) if d["kind"] == "gpu")
    36
    """
    gpu = catalog.gpu(gpu_name)
    if gpu.nvlink_gen < 5:
        raise SpecError(f"gpu: NVL domains need NVLink5 GPUs (GB200, GB300, B200, B300), got {gpu.name}")
    n = whole_number(n, field="n")
    G = new_fabric(f"nvl{n}-{gpu.name.lower()}", gpu=gpu.name, domain_gpus=n)
    add_nvlink_domain(G, 0, gpu, n_gpus=n, links_per_chip=(1,) * 18, aggregate=aggregate, gpus_per_tray=4)
    return G
