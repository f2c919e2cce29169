"""Folded-Clos (fat-tree) scale-out fabrics: 1, 2 or 3 tiers, any radix and oversubscription.

One sizing rule builds every tier: a switch's up-ports are spread *evenly* over
the switches of the next tier, so the number of next-tier switches is the
smallest divisor of the up-port count whose switches can take all the cables.
With leaves of ``u`` up-ports in a pod of ``P`` leaves and radix-``k`` spines,
that is the smallest divisor ``A`` of ``u`` with ``P * u / A <= k`` (each leaf
then has ``u / A`` parallel cables to each spine). This reproduces NVIDIA's
published DGX SuperPOD switch counts (H100: 4/8/16/16 spines for 1-4 SUs;
B300-XDR: 4/8/18/36/72 spines for 1/2/4/8/18 SUs), see ``tests/test_superpod.py``.

Three tiers group leaves into pods; every pod has ``A`` aggregation switches
("spines" here), and aggregation switch ``j`` of every pod connects to core
group ``j``.

Examples
--------
>>> G = fat_tree(hosts=1024, radix=48, oversubscription=2)
>>> G.graph["meta"]["clos"]["leaves"], G.graph["meta"]["clos"]["spines"]
(32, 16)
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass

from topologies import catalog
from topologies.errors import SpecError
from topologies.fabricgraph import FabricGraph
from topologies.graph import add_cable, add_node, cable_latency_s, new_fabric
from topologies.limits import MAX_PLANES, MAX_RADIX, whole_number
from topologies.nvlink import gpu_node

__all__ = ["ClosLayout", "add_clos", "fat_tree", "split_ports", "nic_node", "add_host_nic"]


@dataclass(frozen=True)
class ClosLayout:
    """What :func:`add_clos` built (per plane)."""

    tiers: int
    leaves: int
    spines: int
    cores: int
    pods: int
    leaf_down_max: int
    leaf_up: int
    spines_per_pod: int
    spine_up: int
    cores_per_group: int
    radix: int
    link_Bps: float
    #: down:up ratios as built (leaf, and spine with 3 tiers): host ports / up-ports of the fullest leaf,
    #: spine down-ports / up-ports; the radix rounds what was asked
    oversubscription_built: tuple = ()

    def as_dict(self) -> dict:
        return asdict(self)


def nic_node(domain: int, local: int) -> str:
    """Node id of the NIC of GPU ``local`` in domain ``domain``."""
    return f"d{domain}/nic{local}"


def split_ports(radix: int, oversubscription: float, *, field: str = "oversubscription") -> tuple[int, int]:
    """Split ``radix`` ports into (down, up) with down/up as close to the ratio as possible.

    Examples
    --------
    >>> split_ports(48, 1), split_ports(48, 2), split_ports(64, 3)
    ((24, 24), (32, 16), (48, 16))
    """
    try:
        r = float(oversubscription)
    except (TypeError, ValueError):
        r = float("nan")
    if not math.isfinite(r) or r < 1:
        raise SpecError(f"{field}: {oversubscription!r} must be a ratio >= 1 (down:up), e.g. 1, 2 or 3")
    if r > radix - 1:
        raise SpecError(f"{field}: {r:g}:1 cannot be built with radix-{radix} switches (at most {radix - 1}:1, "
                        f"{radix - 1} down-ports and 1 up-port)")
    up = max(1, round(radix / (r + 1)))
    down = radix - up
    if down < 1:
        raise SpecError(f"radix: {radix} is too small for oversubscription {r:g}")
    return down, up


def _smallest_divisor(n: int, ok) -> int | None:
    for a in range(1, n + 1):
        if n % a == 0 and ok(a):
            return a
    return None


def add_host_nic(G: FabricGraph, gpu: str, domain: int, local: int, rail: int, nic: catalog.NIC | None,
                 port_Bps: float) -> str:
    """Add the NIC of ``gpu`` and its host link (PCIe or C2C); return the NIC id.

    The host link runs at the NIC's host interface rate (catalog), or at the
    port rate when no catalog NIC is given, so it never hides the port.
    """
    n = add_node(G, nic_node(domain, local), "nic", domain=domain, local=local, rail=rail,
                 model=nic.name if nic else "")
    host_Bps = max(nic.host_Bps, port_Bps) if nic else port_Bps
    add_cable(G, gpu, n, capacity_Bps=host_Bps, tier_up="host-up", tier_down="host-down",
              latency_uv_s=cable_latency_s("host"), latency_vu_s=cable_latency_s("host"))
    return n


def add_clos(G: FabricGraph, leaf_nics: list[list[str]], *, radix: int, link_Bps: float,
             leaf_up: int | None = None, tiers: int = 2, pods: list[list[int]] | None = None,
             spines_per_pod: int | None = None, spine_oversubscription: float = 1.0,
             leaf_rails: list[int] | None = None, plane: int = -1, prefix: str = "",
             switch: catalog.Switch | None = None, aggregate: bool = False) -> ClosLayout:
    """Add a folded Clos above the given NICs.

    Parameters
    ----------
    leaf_nics : list of list of str
        NIC node ids attached to each leaf (one cable each, at ``link_Bps``).
    radix : int
        Ports per switch (all tiers).
    link_Bps : float
        Per-direction rate of every port.
    leaf_up : int
        Up-ports per leaf (default: as many as the fullest leaf has NICs,
        i.e. non-blocking). Ignored for ``tiers=1``.
    tiers : {1, 2, 3}
    pods : list of list of int, optional
        Leaf indices of each pod: leaves of a pod share its spines. Default:
        one pod with every leaf. With ``tiers=2`` and several pods the pods are
        separate (e.g. per-rail spine groups that only meet through NVLink).
    spines_per_pod : int, optional
        Override the sizing rule (e.g. a reference architecture's count).
    spine_oversubscription : float
        Down:up ratio of the spines for ``tiers=3``.
    leaf_rails : list of int, optional
        Rail of each leaf (rail-optimized fabrics).
    plane, prefix : int, str
        Plane index and node-name prefix (multi-plane fabrics).
    switch : catalog.Switch, optional
        Switch model for names, per-hop latency and in-network reduction.
    aggregate : bool
        Merge parallel switch-switch cables into one edge per direction.
    """
    if tiers not in (1, 2, 3):
        raise SpecError(f"tiers: {tiers!r} must be 1, 2 or 3")
    nleaves = len(leaf_nics)
    if nleaves == 0:
        raise SpecError("hosts: a fabric needs at least one host")
    model = switch.name if switch else f"generic-{radix}p"
    hop_s = switch.hop_latency_s if switch else catalog.switch("QM9700").hop_latency_s
    reduce = (switch.in_network_reduction or "") if switch else ""
    down_max = max(len(x) for x in leaf_nics)
    if tiers == 1:
        if nleaves != 1 or down_max > radix:
            raise SpecError(f"tiers: 1 tier holds at most radix={radix} hosts; got {sum(map(len, leaf_nics))}")
        leaf_up = 0
    else:
        leaf_up = down_max if leaf_up is None else int(leaf_up)
        if leaf_up < 1 or down_max + leaf_up > radix:
            raise SpecError(f"leaf_up: {down_max} host ports + {leaf_up} up-ports exceed radix {radix}")
    pods = [list(range(nleaves))] if pods is None else [list(p) for p in pods]

    def lat(layer: str) -> tuple[float, float]:
        return hop_s + cable_latency_s(layer), hop_s + cable_latency_s(layer)

    leaves = []
    pod_of = {}
    for p, members in enumerate(pods):
        for i in members:
            pod_of[i] = p
    for i, nics in enumerate(leaf_nics):
        rail = leaf_rails[i] if leaf_rails else -1
        leaf = add_node(G, f"{prefix}leaf{i}", "leaf", local=i, rail=rail, plane=plane, pod=pod_of.get(i, -1),
                        model=model, reduce=reduce)
        leaves.append(leaf)
        for nic in nics:
            add_cable(G, nic, leaf, capacity_Bps=link_Bps, tier_up="nic-up", tier_down="nic-down",
                      latency_uv_s=hop_s + cable_latency_s("nic"), latency_vu_s=cable_latency_s("nic"), plane=plane)
    spines = cores = a = c = spine_up = 0
    if tiers >= 2:
        pod_size = max(len(p) for p in pods)

        def fits(down: int) -> bool:  # spine ports: down + up (up = down / ratio, rounded to the ports left)
            up = max(1, math.floor(down / spine_oversubscription)) if tiers == 3 else 0
            return down + up <= radix

        if spines_per_pod is None:
            a = _smallest_divisor(leaf_up, lambda a: fits(pod_size * (leaf_up // a)))
            if a is None:
                raise SpecError(
                    f"tiers: {pod_size} leaves x {leaf_up} up-ports do not fit {tiers} tiers of radix-{radix} "
                    f"switches; use more tiers or a larger radix")
        else:
            a = int(spines_per_pod)
            if a < 1 or leaf_up % a:
                raise SpecError(f"spines_per_pod: {a} must divide the {leaf_up} leaf up-ports")
        m1 = leaf_up // a
        spine_down = pod_size * m1
        spine_up = min(math.ceil(spine_down / spine_oversubscription), radix - spine_down) if tiers == 3 else 0
        if not fits(spine_down) or (tiers == 3 and spine_up < 1):
            what = f"spines_per_pod: {a}" if spines_per_pod is not None else f"tiers: {tiers}"
            raise SpecError(f"{what}: {pod_size} leaves x {leaf_up // a} cables per spine need "
                            f"{spine_down} spine down-ports (+ up-ports) > radix {radix}")
        lu = lat("leaf")
        for p, members in enumerate(pods):
            for j in range(a):
                sp = add_node(G, f"{prefix}spine{p * a + j}", "spine", local=j, plane=plane, pod=p, model=model,
                              reduce=reduce)
                for i in members:
                    add_cable(G, leaves[i], sp, capacity_Bps=link_Bps, tier_up="leaf-up", tier_down="spine-down",
                              latency_uv_s=lu[0], latency_vu_s=lu[1], plane=plane, count=m1, aggregate=aggregate)
        spines = a * len(pods)
        if tiers == 3:
            npods = len(pods)
            c = _smallest_divisor(spine_up, lambda c: npods * (spine_up // c) <= radix)
            if c is None:
                raise SpecError(f"tiers: {npods} pods do not fit under radix-{radix} cores; use a larger radix")
            m2 = spine_up // c
            lc = lat("spine")
            for j in range(a):
                for k in range(c):
                    core = add_node(G, f"{prefix}core{j * c + k}", "core", local=j * c + k, plane=plane, pod=j,
                                    model=model, reduce=reduce)
                    for p in range(npods):
                        add_cable(G, f"{prefix}spine{p * a + j}", core, capacity_Bps=link_Bps, tier_up="spine-up",
                                  tier_down="core-down", latency_uv_s=lc[0], latency_vu_s=lc[1], plane=plane,
                                  count=m2, aggregate=aggregate)
            cores = a * c
    built = () if tiers == 1 else (down_max / leaf_up,) + (
        ((pod_size * (leaf_up // a)) / spine_up,) if tiers == 3 else ())
    layout = ClosLayout(tiers=tiers, leaves=nleaves, spines=spines, cores=cores, pods=len(pods),
                        leaf_down_max=down_max, leaf_up=leaf_up, spines_per_pod=a, spine_up=spine_up,
                        cores_per_group=c, radix=radix, link_Bps=link_Bps, oversubscription_built=built)
    G.graph["meta"].setdefault("clos", layout.as_dict())
    return layout


def _fewest_tiers(hosts: int, radix: int, r1: float, r2: float) -> int:
    d1, u1 = split_ports(radix, r1)
    if hosts <= radix:
        return 1
    leaves = math.ceil(hosts / d1)
    if _smallest_divisor(u1, lambda a: leaves * (u1 // a) <= radix) is not None:
        return 2
    return 3


def fat_tree(hosts: int, radix: int, *, tiers: int | None = None, oversubscription=1.0,
             link_Bps: float = 50e9, planes: int = 1, switch: str | None = None, nic: str | None = None,
             aggregate: bool = False) -> FabricGraph:
    """A fat-tree of ``hosts`` single-GPU hosts (one NIC each).

    Parameters
    ----------
    hosts : int
        Number of hosts (GPU + NIC). Hosts fill leaves in order.
    radix : int
        Ports per switch.
    tiers : {1, 2, 3}, optional
        Default: the fewest that fit.
    oversubscription : float or sequence of float
        Down:up ratio; a number applies to the leaf tier, a sequence gives one
        ratio per tier (leaf, spine).
    link_Bps : float
        Per-direction rate of every port (host links included).
    planes : int
        Independent copies of the switch fabric; every NIC has one port of
        ``link_Bps`` into each plane.
    switch, nic : str, optional
        Catalog models for per-hop latency and reduction capability, and for
        the host interface rate.

    Examples
    --------
    >>> G = fat_tree(hosts=16, radix=8)
    >>> G.graph["meta"]["clos"]["tiers"], G.graph["meta"]["clos"]["spines"]
    (2, 2)
    """
    given = list(oversubscription) if isinstance(oversubscription, (list, tuple)) else [oversubscription]
    if not 1 <= len(given) <= 2:
        raise SpecError(f"oversubscription: give one ratio (leaf) or two (leaf, spine), got {len(given)}")
    ratios = [float(x) for x in given] + [1.0] * 2
    r1, r2 = ratios[0], ratios[1]
    hosts = whole_number(hosts, field="hosts", low=2)
    radix = whole_number(radix, field="radix", low=2, high=MAX_RADIX)
    planes = whole_number(planes, field="planes", high=MAX_PLANES)
    if hosts < 2:
        raise SpecError(f"hosts: {hosts} must be >= 2")
    if radix < 2:
        raise SpecError(f"radix: {radix} must be >= 2")
    if planes < 1:
        raise SpecError(f"planes: {planes} must be >= 1")
    sw = catalog.switch(switch) if switch else None
    nic_spec = catalog.nic(nic) if nic else None
    if nic_spec and planes * link_Bps > nic_spec.line_rate_Bps * (1 + 1e-9):
        raise SpecError(f"link: {planes} plane(s) x {link_Bps * 8 / 1e9:g} Gb/s exceed the {nic_spec.name}'s "
                        f"{nic_spec.line_rate_Bps * 8 / 1e9:g} Gb/s; use link={nic_spec.line_rate_Bps * 8 / 1e9 / planes:g}Gb/s")
    d1, u1 = split_ports(radix, r1)
    if tiers is None:
        tiers = _fewest_tiers(hosts, radix, r1, r2)
    if tiers == 1 and r1 != 1:
        raise SpecError(f"oversubscription: {r1:g} does not apply to a 1-tier fat-tree ({hosts} hosts on one "
                        f"radix-{radix} switch has no up-links); drop it or set tiers=2")
    # capacity, before any node exists: a spine has radix ports, so a pod holds at most radix leaves
    # (2 tiers), and a core has radix ports, one per pod at least (3 tiers)
    if tiers in (2, 3):
        per_pod = radix if tiers == 2 else max(1, split_ports(radix, r2, field="oversubscription[1]")[0])
        cap = d1 * per_pod * (radix if tiers == 3 else 1)
        if hosts > cap:
            raise SpecError(f"hosts: {hosts:,} exceed the {cap:,} that {tiers} tiers of radix-{radix} switches hold "
                            f"at {r1:g}:1; use a larger radix" + (", more tiers" if tiers < 3 else "") + " or fewer hosts")
    if len(given) == 2 and tiers != 3:
        raise SpecError(f"oversubscription: the second (spine) ratio {r2:g} applies only to 3 tiers; this tree has "
                        f"{tiers}; give one ratio or set tiers=3")
    G = new_fabric(f"fat-tree-{hosts}", hosts=hosts, radix=radix, tiers=tiers, oversubscription=ratios[:len(given)],
                   link_Bps=link_Bps, planes=planes)
    nics = []
    for h in range(hosts):
        g = add_node(G, gpu_node(h, 0), "gpu", domain=h, local=0, rail=0, model="")
        nics.append(add_host_nic(G, g, h, 0, 0, nic_spec, link_Bps * planes))
    if tiers == 1:
        leaf_groups, pods = [nics], None
    else:
        leaf_groups = [nics[i:i + d1] for i in range(0, hosts, d1)]
        pods = None
        if tiers == 3:
            d2, _ = split_ports(radix, r2, field="oversubscription[1]")
            per_pod = max(1, d2)  # one cable from each leaf to each of u1 spines of its pod
            pods = [list(range(i, min(i + per_pod, len(leaf_groups)))) for i in range(0, len(leaf_groups), per_pod)]
    for p in range(planes):
        add_clos(G, leaf_groups, radix=radix, link_Bps=link_Bps, leaf_up=None if tiers == 1 else u1, tiers=tiers,
                 pods=pods, spines_per_pod=u1 if tiers == 3 else None, spine_oversubscription=r2, plane=p,
                 prefix=f"p{p}/" if planes > 1 else "", switch=sw, aggregate=aggregate)
    return G
