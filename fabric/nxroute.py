"""Reference router on networkx shortest paths (with a per-destination cache).

It routes exactly like :class:`fabric.routing.Router` (same segments, same
candidate order, same hash), but finds the equal-cost next hops with networkx
breadth-first searches on the live graph instead of precomputed tables, and
lists every link (no trunks). It serves fabrics that are not Clos-shaped and is
the independent oracle the tests compare the table router against.

Examples
--------
>>> from topologies.clos import fat_tree
>>> from fabric.compiled import compile_fabric
>>> r = NxRouter(compile_fabric(fat_tree(hosts=16, radix=8)))
>>> links, weights = r.route_pair(0, 15, policy="spray")
>>> float(weights.sum())   # 6 hops, each carrying the whole flow
6.0
"""

from __future__ import annotations

from functools import lru_cache

import networkx as nx
import numpy as np

from fabric.compiled import CompiledFabric
from fabric.routing import POLICIES, dmodk_keys, ecmp_pick, flow_hash
from topologies.errors import RoutingError, UnreachableError
from topologies.graph import ROLES, TIERS

__all__ = ["NxRouter"]

_NET = {ROLES.index(r) for r in ("leaf", "spine", "core")}
_LEVEL = {ROLES.index("leaf"): 1, ROLES.index("spine"): 2, ROLES.index("core"): 3}


class NxRouter:
    """Shortest-path routing with networkx; see the module docstring."""

    def __init__(self, cf: CompiledFabric):
        self.cf = cf
        alive = np.flatnonzero(cf.link_alive)
        self.G = nx.MultiDiGraph()
        self.G.add_nodes_from(range(cf.n_nodes))
        self.G.add_edges_from((int(cf.link_src[l]), int(cf.link_dst[l]), int(l)) for l in alive)
        self._dist = lru_cache(maxsize=None)(self._dist_uncached)
        self._dmodk = dmodk_keys(cf)

    def _allowed(self, a: int, b: int, segment: str) -> set:
        cf = self.cf
        if segment == "nvlink":
            d = cf.node_domain[a]
            return {a, b} | {int(n) for n in np.flatnonzero((cf.node_role == ROLES.index("nvswitch"))
                                                           & (cf.node_domain == d))}
        return {a, b} | {int(n) for n in np.flatnonzero(np.isin(cf.node_role, list(_NET)))}

    def _dist_uncached(self, a: int, b: int, segment: str) -> dict:
        """Hop distance of every allowed node to ``b`` (reverse BFS in the segment's subgraph)."""
        sub = self.G.subgraph(self._allowed(a, b, segment))
        return nx.single_source_shortest_path_length(sub.reverse(copy=False), b)

    def _reach(self, a: int, b: int, segment: str) -> dict:
        """Capacity each node can push toward ``b`` on shortest paths (``inf`` next to ``b``'s switches)."""
        cf = self.cf
        dist = self._dist(a, b, segment)
        reach: dict[int, float] = {}
        for u in sorted(dist, key=dist.get):
            if u == b:
                reach[u] = np.inf
                continue
            cands = self._next(u, a, b, segment)
            if any(int(cf.link_dst[l]) == b for l in cands) or segment == "nvlink":
                reach[u] = np.inf          # last switch before the destination (the table router's group leaves)
                continue
            reach[u] = float(self._shares(cands, reach).sum())
        return reach

    def _shares(self, cands: list[int], reach: dict) -> np.ndarray:
        """Per link ``c_l * min(1, R(v) / C(u, v))`` with ``C(u, v)`` the capacity of the links to v."""
        cf = self.cf
        to = {}
        for l in cands:
            v = int(cf.link_dst[l])
            to[v] = to.get(v, 0.0) + cf.link_capacity_Bps[l]
        out = []
        for l in cands:
            v = int(cf.link_dst[l])
            r = reach.get(v, np.inf)
            out.append(cf.link_capacity_Bps[l] * (1.0 if np.isinf(r) else min(1.0, r / to[v])))
        return np.array(out)

    def _next(self, u: int, a: int, b: int, segment: str) -> list[int]:
        dist = self._dist(a, b, segment)
        allowed = self._allowed(a, b, segment)
        du = dist.get(u)
        out = []
        for _, v, key in self.G.out_edges(u, keys=True):
            if v in allowed and dist.get(v) == du - 1:
                out.append(key)
        return sorted(out)

    def _segment(self, a: int, b: int, segment: str, policy: str, s_rank: int, d_rank: int, salt: int,
                 seed: int) -> tuple[list[int], list[float]]:
        cf = self.cf
        if a not in self._dist(a, b, segment):
            raise UnreachableError(f"route: no {segment} path {cf.node_names[a]} -> {cf.node_names[b]}")
        if policy == "spray":
            reach = self._reach(a, b, segment)
            frac = {a: 1.0}
            links: dict[int, float] = {}
            frontier = [a]
            while frontier:
                nxt: dict[int, float] = {}
                for u in frontier:
                    if u == b:
                        continue
                    cands = self._next(u, a, b, segment)
                    share = self._shares(cands, reach)
                    for l, c in zip(cands, share):
                        w = frac[u] * c / share.sum()
                        links[l] = links.get(l, 0.0) + w
                        v = int(cf.link_dst[l])
                        nxt[v] = nxt.get(v, 0.0) + w
                frac = nxt
                frontier = [v for v in nxt if v != b]
            return list(links), list(links.values())
        if segment == "net":
            firsts = self._next(a, a, b, segment)
            cap = cf.link_capacity_Bps[firsts]
            # a NIC stripes every flow over its planes in proportion to port capacity
            links: dict[int, float] = {}
            for l, c in zip(firsts, cap):
                rest = self._walk(int(cf.link_dst[l]), a, b, segment, policy, s_rank, d_rank, salt, seed)
                for x in [l] + rest:
                    links[x] = links.get(x, 0.0) + c / cap.sum()
            return list(links), list(links.values())
        path = self._walk(a, a, b, segment, policy, s_rank, d_rank, salt, seed, hop=0)
        return path, [1.0] * len(path)

    def _walk(self, u, a, b, segment, policy, s_rank, d_rank, salt, seed, hop=1) -> list[int]:
        cf = self.cf
        path, prod = [], 1
        hashed = segment != "nvlink"
        while u != b:
            cands = self._next(u, a, b, segment)
            c = len(cands)
            last = cf.node_role[u] in _NET and cf.node_role[cf.link_dst[cands[0]]] == ROLES.index("nic")
            h = 99 if last else hop
            if policy == "ecmp" and hashed:
                k = int(ecmp_pick(flow_hash([s_rank], [d_rank], [salt], seed), h, c)[0])
            else:  # d-mod-k: up-ports by dst // (earlier up-port counts), parallel down cables by dst
                up = _LEVEL.get(int(cf.node_role[cf.link_dst[cands[0]]]), 0) > _LEVEL.get(int(cf.node_role[u]), 0)
                if up:
                    k = (d_rank // prod) % c
                    prod *= c
                else:
                    k = d_rank % c
            path.append(cands[k])
            u = int(cf.link_dst[cands[k]])
            hop += 1
        return path

    def route_pair(self, src: int, dst: int, *, policy: str = "ecmp", seed: int = 0,
                   salt: int = 0) -> tuple[np.ndarray, np.ndarray]:
        """(link ids, weights) of one flow from rank ``src`` to rank ``dst`` (no PXN)."""
        if policy not in POLICIES:
            raise RoutingError(f"routing: {policy!r} is not one of {', '.join(POLICIES)}")
        cf = self.cf
        a, b = int(cf.gpus[src]), int(cf.gpus[dst])
        if a == b:
            return np.zeros(0, np.int64), np.zeros(0)
        has_nv = any(cf.link_tier[l] == TIERS.index("nvlink-up") for _, _, l in self.G.out_edges(a, keys=True))
        if cf.node_domain[a] == cf.node_domain[b] and has_nv:
            links, w = self._segment(a, b, "nvlink", "spray", src, dst, salt, seed)
            return np.array(links, np.int64), np.array(w)
        host = TIERS.index("host-up")
        up = [l for _, _, l in self.G.out_edges(a, keys=True) if cf.link_tier[l] == host]
        down = [l for _, _, l in self.G.in_edges(b, keys=True) if cf.link_tier[l] == TIERS.index("host-down")]
        if not up or not down:
            raise UnreachableError(f"route: {cf.node_names[a]} or {cf.node_names[b]} has no NIC")
        na, nb = int(cf.link_dst[up[0]]), int(cf.link_src[down[0]])
        links, w = self._segment(na, nb, "net", policy, src, int(self._dmodk[nb]) if policy == "dmodk" else dst,
                                 salt, seed)
        return np.array([up[0]] + links + [down[0]], np.int64), np.array([1.0] + w + [1.0])
