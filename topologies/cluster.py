"""Clusters: NVLink domains joined by a rail-optimized scale-out fabric.

Every GPU has one NIC. NIC ``r`` of every domain belongs to rail ``r`` (HGX:
the GPU's index, 8 rails; NVL72: the GPU's index inside its 4-GPU compute tray,
4 rails), and the NICs of one rail in one *scalable unit* (SU) share a leaf, as
in NVIDIA's DGX SuperPOD reference architectures: traffic between GPUs of the
same rail stays one hop away inside an SU; traffic between rails or SUs crosses
the spines (or moves to the right rail over NVLink first, as NCCL's PXN does).

Examples
--------
>>> G = cluster("GB300", domains=4, scaleout="quantum-x800")
>>> from topologies.graph import summarize
>>> summarize(G).gpus
288
"""

from __future__ import annotations

import math

from topologies import catalog
from topologies.clos import add_clos, add_host_nic, split_ports
from topologies.errors import SpecError
from topologies.fabricgraph import FabricGraph
from topologies.graph import new_fabric
from topologies.limits import whole_number
from topologies.nvlink import add_nvlink_domain

__all__ = ["cluster", "superpod", "SUPERPODS"]

#: Reference layouts (DGX SuperPOD RAs, notes/hardware.md §8.1) and what they fix.
SUPERPODS = {
    # One node slot of SU 1 holds the UFM appliance, cabled to the compute fabric with 4 ports
    # (Table 4's "compute + UFM" cable counts are 8 x nodes + 4).
    "h100": dict(gpu="H100", scaleout="quantum-2", nodes_per_su=32, ufm_slots=1, ufm_ports=4, sus=(1, 2, 3, 4),
                 source="[S23-H100] DGX SuperPOD H100 RA, network-fabrics, Table 4"),
    "b200": dict(gpu="B200", scaleout="quantum-2", nodes_per_su=32, ufm_slots=0, sus=(2, 4, 8, 16, 32, 64),
                 source="[S23-B200] DGX SuperPOD B200 RA"),
    "gb200": dict(gpu="GB200", scaleout="quantum-2", nodes_per_su=8, ufm_slots=0, sus=tuple(range(1, 17)),
                  leaf_down=18, spines_per_pod=6,
                  source="[S11] DGX SuperPOD GB200 RA, network-fabrics (SU = 8 racks, 4 SLGs of 8 leaves + 6 spines)"),
    "b300-xdr": dict(gpu="B300", scaleout="quantum-x800", nodes_per_su=72, ufm_slots=0, sus=(1, 2, 4, 8, 18),
                     source="[S23-B300XDR] DGX SuperPOD B300-XDR RA, Table 3"),
}


def _gpus_per_tray(n_gpus: int) -> int:
    """GPUs per compute tray: 4 in rack-scale NVL domains, the whole board in HGX nodes."""
    return 4 if n_gpus > 8 else n_gpus


def cluster(gpu_name: str, domains: int, scaleout: str, *, gpus_per_domain: int | None = None,
            nic: str | None = None, tiers: int | None = None, oversubscription: float = 1.0,
            planes: int = 1, spine_scope: str = "all", domains_per_su: int | None = None,
            aggregate: bool = False, name: str | None = None, _superpod: dict | None = None) -> FabricGraph:
    """``domains`` NVLink domains of ``gpu_name`` GPUs joined by a rail-optimized fat-tree.

    Parameters
    ----------
    gpu_name : str
        Catalog GPU (sets the NVLink domain: HGX board or NVL72 rack).
    domains : int
        Number of NVLink domains (HGX nodes or NVL racks).
    scaleout : {"quantum-2", "quantum-x800", "spectrum-x"}
        Scale-out fabric: switch model and default NIC.
    gpus_per_domain : int, optional
        GPUs per domain (NVL36 = 36); default the GPU's standard domain.
    nic : str, optional
        NIC model (default: the GPU platform's, e.g. ConnectX-7 with H100, ConnectX-8 with
        GB300, or on a cloud fabric of ``catalog.CLOUD_NIC_FABRICS`` the fabric's own, e.g.
        EFA-v2-100G on ``aws-efa-v2``); ports run at the lower of the NIC's and the switch's rate.
    tiers : {2, 3}, optional
        Default: the fewest that fit.
    oversubscription : float
        Leaf down:up ratio.
    planes : int
        Network planes; each NIC port is split into ``planes`` links of
        ``line_rate / planes`` (Spectrum-X multiplane, B300 twin-planar), and
        each plane's switches run their ports in the matching breakout
        (``planes x`` the ports at ``1/planes`` the rate).
    spine_scope : {"all", "rail"}
        ``all``: every leaf reaches every spine (rails meet at the spines).
        ``rail``: each rail has its own spines (rail-only; rails meet through
        NVLink, or through cores with ``tiers=3``).
    domains_per_su : int, optional
        Domains per scalable unit (default: as many as one leaf takes per rail).
    aggregate : bool
        Merge parallel cables into single edges.
    """
    gpu = catalog.gpu(gpu_name)
    domains = whole_number(domains, field="domains")
    if domains < 1:
        raise SpecError(f"domains: {domains} must be >= 1")
    if scaleout not in catalog.SCALEOUT_FABRICS:
        raise SpecError(f"scaleout: {scaleout!r} is not one of {sorted(catalog.SCALEOUT_FABRICS)}")
    if spine_scope not in ("all", "rail"):
        raise SpecError(f"spine_scope: {spine_scope!r} must be 'all' or 'rail'")
    planes = int(planes)
    if planes < 1:
        raise SpecError(f"planes: {planes} must be >= 1")
    sw, fabric_nic = catalog.scaleout_switch(scaleout)
    # the NIC ships with the GPU platform (HGX H100: ConnectX-7, GB300: ConnectX-8), whatever the switches,
    # except on cloud fabrics whose NIC is the instance's (catalog.CLOUD_NIC_FABRICS: EFA, TCPXO)
    if nic:
        nic_spec = catalog.nic(nic)
    else:
        nic_spec = fabric_nic if scaleout in catalog.CLOUD_NIC_FABRICS else catalog.default_nic(gpu.name)
    port_Bps = min(nic_spec.line_rate_Bps, sw.port_Bps) / planes
    radix = sw.ports * planes
    n_gpus = gpu.domain_gpus if gpus_per_domain is None else int(gpus_per_domain)
    if n_gpus < 1:
        raise SpecError(f"gpus_per_domain: {n_gpus} must be >= 1")
    if n_gpus > 8 and n_gpus % 4:
        raise SpecError(f"gpus_per_domain: {n_gpus} must be a multiple of 4 (GPUs per compute tray) above 8")
    tray = _gpus_per_tray(n_gpus)
    rails = tray
    per_rail = n_gpus // rails
    G = new_fabric(name or f"{gpu.name.lower()}-x{domains}-{scaleout}", gpu=gpu.name, domains=domains,
                   domain_gpus=n_gpus, scaleout=scaleout, switch=sw.name, nic=nic_spec.name, planes=planes,
                   oversubscription=[float(oversubscription)])
    nics_by_rail: list[list[list[str]]] = [[[] for _ in range(domains)] for _ in range(rails)]
    for d in range(domains):
        gpus = add_nvlink_domain(G, d, gpu, n_gpus=n_gpus, aggregate=aggregate,
                                 gpus_per_tray=tray if n_gpus > 8 else None)
        for i, g in enumerate(gpus):
            r = i % rails
            nics_by_rail[r][d].append(add_host_nic(G, g, d, i, r, nic_spec, nic_spec.line_rate_Bps))
    sp = _superpod or {}
    d1, _ = split_ports(radix, oversubscription)
    leaf_down = sp["leaf_down"] * planes if "leaf_down" in sp else d1
    # Leaves are rail-aligned: a leaf takes the NICs of one rail from whole domains
    # (or, when a domain has more NICs on a rail than a leaf has ports, a share of one).
    if per_rail <= leaf_down:
        domains_per_leaf, leaves_per_domain = leaf_down // per_rail, 1
    else:
        domains_per_leaf, leaves_per_domain = 1, math.ceil(per_rail / leaf_down)
        if per_rail % leaves_per_domain:
            raise SpecError(f"gpus_per_domain: {per_rail} NICs per rail per domain do not split evenly over "
                            f"leaves of {leaf_down} ports")
    if domains_per_su is None:
        domains_per_su = domains_per_leaf
    if domains_per_su % domains_per_leaf and domains_per_leaf % domains_per_su:
        raise SpecError(f"domains_per_su: {domains_per_su} must be a multiple or divisor of the "
                        f"{domains_per_leaf} domains one leaf serves per rail")
    sus = math.ceil(domains / domains_per_su)
    per_leaf = min(domains_per_leaf, domains_per_su)
    leaf_nics, leaf_rails, su_of_leaf = [], [], []
    for s in range(sus):
        doms = list(range(s * domains_per_su, min((s + 1) * domains_per_su, domains)))
        for r in range(rails):
            for k in range(0, len(doms), per_leaf):
                group = [n for d in doms[k:k + per_leaf] for n in nics_by_rail[r][d]]
                step = len(group) // leaves_per_domain if per_leaf == 1 else len(group)
                for j in range(0, len(group), step):
                    leaf_nics.append(group[j:j + step])
                    leaf_rails.append(r)
                    su_of_leaf.append(s)
    # Up-ports: non-blocking (divided by the oversubscription) for the ports the
    # design reserves (a reference layout) or the ports in use (a generic cluster).
    reserved = per_leaf * per_rail // leaves_per_domain if sp else max(len(x) for x in leaf_nics)
    leaf_up = math.ceil(reserved / oversubscription)
    nleaves = len(leaf_nics)
    spines_per_pod = sp.get("spines_per_pod")
    pods = None
    if spine_scope == "rail":
        groups: dict = {}
        for i, (r, s) in enumerate(zip(leaf_rails, su_of_leaf)):
            groups.setdefault((r, s) if sp else (r, 0), []).append(i)
        pods = list(groups.values())
    if tiers is None:
        pod_size = max(len(p) for p in pods) if pods else nleaves
        fits = any(leaf_up % a == 0 and pod_size * (leaf_up // a) <= radix for a in range(1, leaf_up + 1))
        tiers = 2 if fits and not (spine_scope == "rail" and sp and sus > 1) else 3
    if tiers == 3 and pods is None:
        if sp:  # reference layouts: one pod per scalable unit
            pods = [[i for i, s in enumerate(su_of_leaf) if s == k] for k in range(sus)]
        else:   # generic: as many whole SUs per pod as a non-blocking spine takes leaves
            d2, _ = split_ports(radix, 1.0)
            leaves_per_su = max(1, nleaves // sus)
            sus_per_pod = max(1, d2 // leaves_per_su)
            pods = [[i for i, s in enumerate(su_of_leaf) if s0 <= s < s0 + sus_per_pod]
                    for s0 in range(0, sus, sus_per_pod)]
    G.graph["meta"].update(rails=rails, domains_per_su=domains_per_su, sus=sus)
    for p in range(planes):
        add_clos(G, leaf_nics, radix=radix, link_Bps=port_Bps, leaf_up=leaf_up, tiers=tiers, pods=pods,
                 spines_per_pod=spines_per_pod, leaf_rails=leaf_rails, plane=p,
                 prefix=f"p{p}/" if planes > 1 else "", switch=sw, aggregate=aggregate)
    return G


def superpod(kind: str, sus: int, *, aggregate: bool = False) -> FabricGraph:
    """A DGX SuperPOD reference layout with ``sus`` scalable units.

    ``kind`` is one of :data:`SUPERPODS`: ``h100`` (32-node SUs on Quantum-2,
    one node slot per SU holds the UFM appliance, so 31 nodes in SU 1 and
    ``32 * sus - 1`` in all), ``b200`` (32-node SUs, 3 tiers from 16 SUs),
    ``gb200`` (8 NVL72 racks per SU; per rail per SU a spine-leaf group of 8
    leaves and 6 spines; cores join the SUs) and ``b300-xdr`` (72-node SUs on
    Quantum-X800, two tiers).

    Examples
    --------
    >>> G = superpod("h100", 1)
    >>> G.graph["meta"]["clos"]["leaves"], G.graph["meta"]["clos"]["spines"]
    (8, 4)
    """
    try:
        ref = SUPERPODS[kind]
    except KeyError:
        raise SpecError(f"superpod: {kind!r} is not one of {sorted(SUPERPODS)}") from None
    sus = whole_number(sus, field="sus")
    if sus not in ref["sus"]:
        raise SpecError(f"sus: the {kind} SuperPOD reference layout is published for {list(ref['sus'])} SUs, got {sus}")
    nodes = ref["nodes_per_su"] * sus - ref["ufm_slots"]
    G = cluster(ref["gpu"], nodes, ref["scaleout"], domains_per_su=ref["nodes_per_su"],
                spine_scope="rail" if kind == "gb200" else "all",
                tiers=3 if (kind == "b200" and sus >= 16) or (kind == "gb200" and sus > 1) else None,
                aggregate=aggregate, name=f"superpod-{kind}-{sus}su", _superpod=ref)
    G.graph["meta"].update(superpod=kind, sus=sus, nodes=nodes, ufm_cables=ref.get("ufm_ports", 0),
                           source=ref["source"])
    return G
