"""Compile a fabric graph into flat numpy arrays (DESIGN.md section 3).

Everything hot works on integer ids: node id -> kind/role/domain/..., link id ->
(src, dst, capacity_Bps, latency_s, tier). Links are sorted by source node, so
``out_ptr`` gives each node's out-links as a contiguous range.

Failed links stay in the table (so link ids never change) with ``alive=False``
and capacity 0; degraded links keep their edge with a reduced capacity.

Examples
--------
>>> from topologies.nvlink import hgx
>>> cf = compile_fabric(hgx("H100"))
>>> cf.n_gpus, cf.n_links
(8, 288)
>>> float(cf.link_capacity_Bps[cf.out_links(cf.gpus[0])].sum())
450000000000.0
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from types import MappingProxyType

import numpy as np

from topologies.errors import TopologyError
from topologies.fabricgraph import CABLE_FIELDS, FabricGraph
from topologies.graph import ROLES, TIERS

__all__ = ["CompiledFabric", "compile_fabric", "KINDS", "REDUCE_KINDS"]

KINDS = ("gpu", "nic", "switch")
REDUCE_KINDS = ("", "nvls", "sharpv3", "sharpv4")


@dataclass(frozen=True, eq=False)
class CompiledFabric:
    """Flat-array form of a fabric graph. Build it with :func:`compile_fabric`."""

    name: str
    node_names: tuple
    node_index: MappingProxyType
    node_kind: np.ndarray      # int8 index into KINDS
    node_role: np.ndarray      # int8 index into ROLES
    node_domain: np.ndarray    # int32, -1 for network switches
    node_local: np.ndarray     # int32
    node_rail: np.ndarray      # int32
    node_plane: np.ndarray     # int32
    node_pod: np.ndarray       # int32
    node_reduce: np.ndarray    # int8 index into REDUCE_KINDS
    node_model: tuple
    link_src: np.ndarray       # int32
    link_dst: np.ndarray       # int32
    link_capacity_Bps: np.ndarray  # float64, per direction, 0 when failed
    link_nominal_Bps: np.ndarray   # float64, capacity before failures/degradation
    link_latency_s: np.ndarray     # float64
    link_tier: np.ndarray      # int8 index into TIERS
    link_plane: np.ndarray     # int32
    link_cable: np.ndarray     # int32, shared by the two directions of a cable
    link_cables: np.ndarray    # int32, physical cables an aggregated edge stands for
    link_alive: np.ndarray     # bool
    out_ptr: np.ndarray        # int64[n_nodes + 1]
    gpus: np.ndarray           # int32 node ids of GPUs in rank order
    meta: MappingProxyType
    failures: tuple = ()       # (selector, link ids) applied
    degradations: tuple = ()   # (selector, link ids, new capacity)
    _cache: dict = field(default_factory=dict, repr=False, compare=False)

    # -- sizes -----------------------------------------------------------------
    @property
    def n_nodes(self) -> int:
        return len(self.node_names)

    @property
    def n_links(self) -> int:
        return len(self.link_src)

    @property
    def n_gpus(self) -> int:
        return len(self.gpus)

    # -- lookups ---------------------------------------------------------------
    def node(self, name: str) -> int:
        """Node id of ``name``."""
        try:
            return self.node_index[name]
        except KeyError:
            raise TopologyError(f"node: {name!r} is not in fabric {self.name!r}") from None

    def out_links(self, node: int) -> np.ndarray:
        """Link ids leaving ``node`` (alive or not)."""
        return np.arange(self.out_ptr[node], self.out_ptr[node + 1])

    def role_of(self, node: int) -> str:
        return ROLES[self.node_role[node]]

    def tier_of(self, link: int) -> str:
        return TIERS[self.link_tier[link]]

    def link_name(self, link: int) -> str:
        """Human name ``src -> dst`` of a link."""
        return f"{self.node_names[self.link_src[link]]} -> {self.node_names[self.link_dst[link]]}"

    @property
    def gpu_rank(self) -> np.ndarray:
        """rank of each node (-1 for non-GPUs)."""
        if "gpu_rank" not in self._cache:
            r = np.full(self.n_nodes, -1, dtype=np.int32)
            r[self.gpus] = np.arange(self.n_gpus, dtype=np.int32)
            self._cache["gpu_rank"] = r
        return self._cache["gpu_rank"]

    def tier_mask(self, *tiers: str) -> np.ndarray:
        codes = [TIERS.index(t) for t in tiers]
        return np.isin(self.link_tier, codes)

    def role_mask(self, *roles: str) -> np.ndarray:
        codes = [ROLES.index(r) for r in roles]
        return np.isin(self.node_role, codes)

    def gpu_injection_Bps(self) -> np.ndarray:
        """Per-GPU sum of alive out-link capacity (NVLink + host links)."""
        cap = np.bincount(self.link_src, weights=self.link_capacity_Bps, minlength=self.n_nodes)
        return cap[self.gpus]

    def with_links(self, *, capacity_Bps: np.ndarray, alive: np.ndarray, failures: tuple = (),
                   degradations: tuple = ()) -> "CompiledFabric":
        """A copy with new link capacities/liveness (used by failure application)."""
        return replace(self, link_capacity_Bps=capacity_Bps, link_alive=alive,
                       failures=self.failures + tuple(failures),
                       degradations=self.degradations + tuple(degradations), _cache={})


def _codes(values, table, what):
    index = {v: i for i, v in enumerate(table)}
    try:
        return np.fromiter(map(index.__getitem__, values), dtype=np.int8, count=len(values))
    except KeyError as exc:
        raise TopologyError(f"{what}: {exc.args[0]!r} is not one of {', '.join(t for t in table if t)}") from None


def _is_int(x) -> bool:
    try:
        int(x)
        return True
    except (TypeError, ValueError):
        return False


def compile_fabric(G) -> CompiledFabric:
    """Compile fabric graph ``G`` into a :class:`CompiledFabric`.

    ``G`` is a builder's :class:`topologies.fabricgraph.FabricGraph` (compiled
    from its lists, without networkx) or a :class:`networkx.MultiDiGraph`
    (e.g. read from a file). Node ids follow the graph's node order; links are
    sorted by source node, parallel links in insertion (key) order: both kinds
    of graph give identical arrays.

    Raises
    ------
    TopologyError
        If a node lacks ``kind``/``role`` or an edge lacks ``capacity_Bps``.
    """
    if isinstance(G, FabricGraph) and not G.is_networkx:
        return _compile_records(G)
    names = tuple(G.nodes)
    index = {n: i for i, n in enumerate(names)}
    attrs = [G.nodes[n] for n in names]
    try:
        kinds = _codes([a["kind"] for a in attrs], KINDS, "node kind")
        roles = _codes([a["role"] for a in attrs], ROLES, "node role")
    except KeyError as exc:
        raise TopologyError(f"node attribute {exc.args[0]!r} is missing; every node needs kind and role") from None
    ints = {}
    for k in ("domain", "local", "rail", "plane", "pod"):
        try:
            ints[k] = np.fromiter((int(a.get(k, -1)) for a in attrs), dtype=np.int32, count=len(attrs))
        except (TypeError, ValueError):
            bad = next(n for n, a in zip(names, attrs) if not _is_int(a.get(k, -1)))
            raise TopologyError(f"node {bad!r}: attribute {k}={G.nodes[bad].get(k)!r} must be an integer") from None
    reduce = _codes([a.get("reduce", "") or "" for a in attrs], REDUCE_KINDS, "node reduce")
    models = tuple(a.get("model", "") for a in attrs)

    m = G.number_of_edges()
    src = np.empty(m, dtype=np.int32)
    dst = np.empty(m, dtype=np.int32)
    cap = np.empty(m, dtype=np.float64)
    lat = np.empty(m, dtype=np.float64)
    plane = np.empty(m, dtype=np.int32)
    cable = np.empty(m, dtype=np.int32)
    cables = np.empty(m, dtype=np.int32)
    tiers = []
    try:
        for i, (u, v, d) in enumerate(G.edges(data=True)):
            src[i] = index[u]
            dst[i] = index[v]
            cap[i] = d["capacity_Bps"]
            lat[i] = d.get("latency_s", 0.0)
            plane[i] = d.get("plane", -1)
            cable[i] = d.get("cable", i)
            cables[i] = d.get("cables", 1)
            tiers.append(d.get("tier", "other"))
    except KeyError as exc:
        raise TopologyError(f"edge attribute {exc.args[0]!r} is missing on {u!r} -> {v!r}") from None
    except (TypeError, ValueError):
        raise TopologyError(f"edge {u!r} -> {v!r}: capacity_Bps, latency_s, plane and cable must be numbers, got "
                            f"{ {k: d.get(k) for k in ('capacity_Bps', 'latency_s', 'plane', 'cable')} }") from None
    return _assemble(G, names, index, kinds, roles, ints, reduce, models,
                     (src, dst, cap, lat, plane, cable, cables), tiers)


def _compile_records(G: FabricGraph) -> CompiledFabric:
    """The FabricGraph path of :func:`compile_fabric`: node and cable records expanded with numpy."""
    names, nodes, cnum, ctier = G.records()
    names = tuple(names)
    n = len(names)
    ncols = dict(zip(("kind", "role", "domain", "local", "rail", "plane", "pod", "model", "reduce"),
                     map(list, zip(*nodes)))) if nodes else {}
    kinds = _codes(ncols.get("kind", []), KINDS, "node kind")
    roles = _codes(ncols.get("role", []), ROLES, "node role")
    ints = {}
    for k in ("domain", "local", "rail", "plane", "pod"):
        col = ncols.get(k, [])
        try:
            ints[k] = np.fromiter(map(int, col), dtype=np.int32, count=n)
        except (TypeError, ValueError):
            i = next(i for i, x in enumerate(col) if not _is_int(x))
            raise TopologyError(f"node {names[i]!r}: attribute {k}={col[i]!r} must be an integer") from None
    reduce = _codes([r or "" for r in ncols.get("reduce", [])], REDUCE_KINDS, "node reduce")
    models = tuple(ncols.get("model", ()))
    try:  # every number of every record in one conversion (ids and counts are exact in float64)
        num = np.array(cnum, dtype=np.float64).reshape(-1, len(CABLE_FIELDS))
    except (TypeError, ValueError):
        raise TopologyError("cable attributes: capacity_Bps, latency_s, plane and cable must be numbers") from None
    col = dict(zip(CABLE_FIELDS, num.T))
    reps = col["reps"].astype(np.int64)
    arr = dict(u=col["u"].astype(np.int32), v=col["v"].astype(np.int32), cap=col["capacity_Bps"].copy(),
               plane=col["plane"].astype(np.int32), cid=col["cable"].astype(np.int64),
               per=col["cables"].astype(np.int32), luv=col["latency_uv_s"].copy(), lvu=col["latency_vu_s"].copy())
    ctu, ctd = ctier[0::2], ctier[1::2]
    t_up = _codes(ctu, TIERS, "edge tier")
    t_down = _codes(ctd, TIERS, "edge tier")
    # cable record c stands for edges (u->v, v->u) x reps[c], in that order: expand without a Python loop
    per_rec = 2 * reps
    m = int(per_rec.sum())
    rec = np.repeat(np.arange(len(reps)), per_rec)
    pos = np.arange(m, dtype=np.int64) - np.repeat(np.cumsum(per_rec) - per_rec, per_rec)
    down = (pos & 1).astype(bool)
    src = np.where(down, arr["v"][rec], arr["u"][rec])
    dst = np.where(down, arr["u"][rec], arr["v"][rec])
    cable = (arr["cid"][rec] + (pos >> 1)).astype(np.int32)
    lat = np.where(down, arr["lvu"][rec], arr["luv"][rec])
    tier = np.where(down, t_down[rec], t_up[rec]).astype(np.int8)
    index = dict(zip(names, range(n)))
    return _assemble(G, names, index, kinds, roles, ints, reduce, models,
                     (src, dst, arr["cap"][rec], lat, arr["plane"][rec], cable, arr["per"][rec]), tier)


def _assemble(G, names, index, kinds, roles, ints, reduce, models, arrays, tiers) -> CompiledFabric:
    """Check capacities, sort links by source and build the :class:`CompiledFabric` (both paths)."""
    src, dst, cap, lat, plane, cable, cables = arrays
    m = len(src)
    if m and (not np.all(np.isfinite(cap)) or cap.min() <= 0):
        bad = int(np.argmin(np.where(np.isfinite(cap), cap, -1)))
        raise TopologyError(f"capacity_Bps: edge {names[src[bad]]!r} -> {names[dst[bad]]!r} has {cap[bad]!r}; "
                            f"capacities must be positive and finite")
    tier = tiers if isinstance(tiers, np.ndarray) else _codes(tiers, TIERS, "edge tier")
    order = np.lexsort((dst, src))
    src, dst, cap, lat, plane, cable, cables, tier = (a[order] for a in (src, dst, cap, lat, plane, cable, cables, tier))
    out_ptr = np.zeros(len(names) + 1, dtype=np.int64)
    np.cumsum(np.bincount(src, minlength=len(names)), out=out_ptr[1:])

    gpu_ids = np.flatnonzero(kinds == KINDS.index("gpu"))
    gpu_order = np.lexsort((gpu_ids, ints["local"][gpu_ids], ints["domain"][gpu_ids]))
    gpus = gpu_ids[gpu_order].astype(np.int32)
    meta = dict(G.graph.get("meta", {}))
    for key in ("failures", "degradations"):
        if key in G.graph:
            meta[key] = list(G.graph[key])
    cf = CompiledFabric(
        name=G.graph.get("name", ""), node_names=names, node_index=MappingProxyType(index),
        node_kind=kinds, node_role=roles, node_domain=ints["domain"], node_local=ints["local"],
        node_rail=ints["rail"], node_plane=ints["plane"], node_pod=ints["pod"], node_reduce=reduce,
        node_model=models, link_src=src, link_dst=dst, link_capacity_Bps=cap, link_nominal_Bps=cap.copy(),
        link_latency_s=lat, link_tier=tier, link_plane=plane, link_cable=cable, link_cables=cables,
        link_alive=np.ones(m, dtype=bool), out_ptr=out_ptr, gpus=gpus, meta=MappingProxyType(meta))
    return cf
