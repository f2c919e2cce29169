"""The fabric graph: conventions and small helpers every builder uses.

A fabric graph is a :class:`networkx.MultiDiGraph` (DESIGN.md section 3), or
the builders' list-backed :class:`topologies.fabricgraph.FabricGraph`, which
compiles without networkx and turns into that networkx graph on demand:

* node attributes: ``kind`` (``gpu``, ``nic``, ``switch``), ``role``
  (``gpu``, ``nic``, ``nvswitch``, ``leaf``, ``spine``, ``core``), ``domain``
  (NVLink domain / node index, -1 for network switches), ``local`` (index
  inside the domain or tier), ``rail`` (rail of a NIC or leaf, -1 if none),
  ``plane`` (network plane, or NVSwitch chip index), ``pod``, ``model``
  (catalog name) and ``reduce`` (``nvls``, ``sharpv3``, ``sharpv4`` or ``""``);
* each physical full-duplex cable is two directed edges with
  ``capacity_Bps`` (per direction), ``latency_s``, ``tier`` (which layer of
  the fabric the direction belongs to, e.g. ``nvlink-up``, ``leaf-up``,
  ``spine-down``), ``plane`` and ``cable`` (an id shared by both directions).
  Parallel cables stay parallel edges unless a builder aggregates them, in
  which case ``cables`` counts how many the edge stands for.

Graph attribute ``name`` holds the topology's name and ``meta`` a dict with
builder parameters (for summaries and the reference-layout checks).
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass

from topologies.fabricgraph import FabricGraph

__all__ = [
    "TIERS",
    "ROLES",
    "new_fabric",
    "add_node",
    "add_cable",
    "FabricSummary",
    "summarize",
    "gpus_of",
    "cable_counts",
    "PROPAGATION_S_PER_M",
    "CABLE_LENGTH_M",
    "cable_latency_s",
]

#: Signal propagation in copper twinax and optical fibre is about 2/3 of the
#: speed of light, i.e. ~5 ns per metre (physics; e.g. fibre group index ~1.47).
PROPAGATION_S_PER_M = 5e-9

#: Assumed cable lengths per layer (metres). They only set the few-ns
#: propagation part of the path latency, which is far below the per-hop switch
#: latency and NCCL's microsecond software latencies; ASSUMPTION, not measured.
CABLE_LENGTH_M = {
    "nvlink": 1.0,   # NVLink copper spine inside a rack / baseboard traces
    "host": 0.3,     # GPU <-> NIC on the same board / tray
    "nic": 3.0,      # NIC <-> leaf: in-rack or adjacent-rack DAC/AOC
    "leaf": 30.0,    # leaf <-> spine: row-scale fibre
    "spine": 100.0,  # spine <-> core: hall-scale fibre
}


def cable_latency_s(layer: str) -> float:
    """Propagation delay of one cable of ``layer`` (see :data:`CABLE_LENGTH_M`)."""
    return CABLE_LENGTH_M[layer] * PROPAGATION_S_PER_M

#: Tier names of directed edges, lower layer first. ``x-up`` goes away from
#: the GPUs, ``x-down`` towards them.
TIERS = (
    "nvlink-up",      # gpu -> nvswitch
    "nvlink-down",    # nvswitch -> gpu
    "nvlink-direct",  # gpu -> gpu (switchless NVLink mesh)
    "host-up",        # gpu -> nic (PCIe / C2C)
    "host-down",      # nic -> gpu
    "nic-up",         # nic -> leaf
    "nic-down",       # leaf -> nic
    "leaf-up",        # leaf -> spine
    "spine-down",     # spine -> leaf
    "spine-up",       # spine -> core
    "core-down",      # core -> spine
    "other",
)

ROLES = ("gpu", "nic", "nvswitch", "leaf", "spine", "core")

_KIND_OF_ROLE = {"gpu": "gpu", "nic": "nic", "nvswitch": "switch", "leaf": "switch", "spine": "switch", "core": "switch"}


def new_fabric(name: str, **meta) -> FabricGraph:
    """Return an empty fabric graph named ``name`` with builder metadata ``meta``.

    Examples
    --------
    >>> G = new_fabric("toy", hosts=2)
    >>> G.graph["name"], G.graph["meta"]["hosts"]
    ('toy', 2)
    """
    return FabricGraph({"name": name, "meta": dict(meta), "next_cable": 0})


def add_node(G, node: str, role: str, *, domain: int = -1, local: int = -1,
             rail: int = -1, plane: int = -1, pod: int = -1, model: str = "", reduce: str = "") -> str:
    """Add a node with the standard attributes to ``G`` (a FabricGraph or networkx graph); return its id."""
    if isinstance(G, FabricGraph):
        G.add_fabric_node(node, (_KIND_OF_ROLE[role], role, domain, local, rail, plane, pod, model, reduce))
    else:
        G.add_node(node, kind=_KIND_OF_ROLE[role], role=role, domain=domain, local=local, rail=rail,
                   plane=plane, pod=pod, model=model, reduce=reduce)
    return node


def add_cable(G, u: str, v: str, *, capacity_Bps: float, tier_up: str, tier_down: str,
              latency_uv_s: float, latency_vu_s: float, plane: int = -1, count: int = 1,
              aggregate: bool = False) -> None:
    """Add ``count`` full-duplex cables between ``u`` and ``v``.

    Each cable becomes two directed edges: ``u -> v`` with tier ``tier_up`` and
    ``v -> u`` with tier ``tier_down``. With ``aggregate=True`` the ``count``
    cables become one edge per direction with ``count`` times the capacity and
    ``cables=count``.
    """
    if aggregate and count > 1:
        reps, cap, per = 1, capacity_Bps * count, count
    else:
        reps, cap, per = count, capacity_Bps, 1
    cid = G.graph["next_cable"]
    G.graph["next_cable"] = cid + reps
    if isinstance(G, FabricGraph):  # one record for the same edges, in the same order, as below
        G.add_fabric_cables(u, v, cap, plane, cid, per, reps, tier_up, tier_down, latency_uv_s, latency_vu_s)
        return
    edges = []
    for i in range(reps):
        common = dict(capacity_Bps=cap, plane=plane, cable=cid + i, cables=per)
        edges.append((u, v, dict(common, tier=tier_up, latency_s=latency_uv_s)))
        edges.append((v, u, dict(common, tier=tier_down, latency_s=latency_vu_s)))
    G.add_edges_from(edges)


@dataclass(frozen=True)
class FabricSummary:
    """Counts that describe a fabric graph (cables counted once, both directions)."""

    name: str
    gpus: int
    nics: int
    switches: int
    switches_by_role: dict
    links: int
    cables: int
    cables_by_tier: dict
    domains: int

    def as_dict(self) -> dict:
        return {
            "name": self.name,
            "gpus": self.gpus,
            "nics": self.nics,
            "switches": self.switches,
            "switches_by_role": dict(self.switches_by_role),
            "links": self.links,
            "cables": self.cables,
            "cables_by_tier": dict(self.cables_by_tier),
            "domains": self.domains,
        }


def _node_items(G):
    return G.node_items() if isinstance(G, FabricGraph) else G.nodes(data=True)


def _edge_items(G):
    return G.edge_items() if isinstance(G, FabricGraph) else G.edges(data=True)


def cable_counts(G) -> Counter:
    """Number of physical cables per ``u-tier`` (counting the ``-up``/first direction).

    Aggregated edges count for the cables they stand for.
    """
    counts: Counter = Counter()
    if isinstance(G, FabricGraph) and not G.is_networkx:  # the same cables, without an attribute dict per edge
        for tier, _, per in G.cable_items():
            name = tier.rsplit("-", 1)[0] if tier.endswith(("-up", "-down")) else tier
            counts[name] += per
        return counts
    seen = set()
    for _, _, d in _edge_items(G):
        cid = d.get("cable")
        if cid in seen:
            continue
        seen.add(cid)
        tier = d.get("tier", "other")
        name = tier.rsplit("-", 1)[0] if tier.endswith(("-up", "-down")) else tier
        counts[name] += d.get("cables", 1)
    return counts


def summarize(G) -> FabricSummary:
    """Count GPUs, NICs, switches (by role), directed links and cables.

    Examples
    --------
    >>> from topologies.nvlink import nvl
    >>> s = summarize(nvl(72))
    >>> s.gpus, s.switches, s.links
    (72, 18, 2592)
    """
    nodes = list(_node_items(G))
    roles = Counter(d.get("role") for _, d in nodes)
    domains = {d.get("domain") for _, d in nodes if d.get("kind") == "gpu"}
    cables = cable_counts(G)
    return FabricSummary(
        name=G.graph.get("name", ""),
        gpus=roles.get("gpu", 0),
        nics=roles.get("nic", 0),
        switches=sum(v for r, v in roles.items() if _KIND_OF_ROLE.get(r) == "switch"),
        switches_by_role={r: roles[r] for r in ROLES if _KIND_OF_ROLE[r] == "switch" and roles.get(r)},
        links=G.number_of_edges(),
        cables=sum(cables.values()),
        cables_by_tier=dict(sorted(cables.items())),
        domains=len(domains),
    )


def gpus_of(G) -> list[str]:
    """GPU node ids ordered by (domain, local index): the rank order."""
    gpus = [(d.get("domain", -1), d.get("local", -1), n) for n, d in _node_items(G) if d.get("kind") == "gpu"]
    gpus.sort()
    return [n for _, _, n in gpus]
