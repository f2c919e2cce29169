"""Forwarding tables of the switch network: hop distances to every destination group and next-hop sets.

One breadth-first search per leaf (scipy's csgraph, on the reversed switch
graph) gives every switch's distance to every leaf, hence to every destination
group (the set of leaves a NIC hangs from); a switch's next hops toward a group
are its links one hop closer. :class:`fabric.routing.Router` mixes these in
and builds the tables on first use.

Examples
--------
>>> from topologies.clos import fat_tree
>>> from fabric.compiled import compile_fabric
>>> from fabric.routing import Router
>>> Router(compile_fabric(fat_tree(hosts=16, radix=8))).tables["connected"]
True
"""

from __future__ import annotations

import numpy as np

from fabric.arrays import sorted_unique
from topologies.graph import ROLES, TIERS

__all__: list[str] = []

_R = {r: i for i, r in enumerate(ROLES)}
_T = {t: i for i, t in enumerate(TIERS)}
_INF = np.iinfo(np.int32).max // 4  # "unreachable" hop distance


#: Sources x switch-links up to which the hop distances come from a numpy BFS (no scipy import).
_NUMPY_BFS_MAX = 1 << 24


def _hop_distances(a: np.ndarray, b: np.ndarray, n: int, sources: np.ndarray) -> np.ndarray:
    """int32 hop distances from every source to every node over the directed edges a -> b
    (``_INF`` where unreachable): a level-synchronous BFS from all sources at once on small
    networks, scipy's csgraph BFS on large ones (the same integers)."""
    L = len(sources)
    if L * max(len(a), 1) > _NUMPY_BFS_MAX:
        import scipy.sparse as sp  # large switch networks: scipy's BFS (and its import time)
        from scipy.sparse.csgraph import shortest_path

        adj = sp.csr_array((np.ones(len(a)), (a, b)), shape=(n, n))
        d = shortest_path(adj, unweighted=True, indices=sources, directed=True)
        return np.where(np.isfinite(d), d, _INF).astype(np.int32)
    dist = np.full((L, n), _INF, np.int32)
    rows = np.arange(L)
    dist[rows, sources] = 0
    frontier = np.zeros((L, n), bool)
    frontier[rows, sources] = True
    order = np.argsort(b, kind="stable")
    a, b = a[order], b[order]
    heads, first = np.unique(b, return_index=True)
    level = 0
    while frontier.any() and len(a):
        level += 1
        reach = np.logical_or.reduceat(frontier[:, a], first, axis=1)  # [source, head]: a frontier tail
        new = reach & (dist[:, heads] == _INF)
        frontier = np.zeros((L, n), bool)
        frontier[:, heads] = new
        dist[frontier] = level
    return dist


class _TablesMixin:
    """Forwarding tables and reachability of :class:`fabric.routing.Router` (internal)."""

    # ----------------------------------------------------------------- tables
    def _build_tables(self) -> None:
        """Per-destination-group next-hop tables of the switch network (one BFS per leaf)."""
        cf = self.cf
        n = cf.n_nodes
        net = np.isin(cf.node_role, [_R["leaf"], _R["spine"], _R["core"]])
        sw_ids = np.flatnonzero(net)
        local = np.full(n, -1, np.int64)
        local[sw_ids] = np.arange(len(sw_ids))
        ss = cf.link_alive & net[cf.link_src] & net[cf.link_dst]
        e_src, e_dst = cf.link_src[ss], cf.link_dst[ss]
        ns = len(sw_ids)
        # destination groups: the set of leaves each NIC hangs from (alive nic-down links)
        nd = self.nic_down
        nic_ids = np.flatnonzero(cf.node_role == _R["nic"])
        leaf_sets = np.where(nd[nic_ids] >= 0, cf.link_src[np.maximum(nd[nic_ids], 0)], -1)
        leaf_sets.sort(axis=1)
        uniq, inv = np.unique(leaf_sets, axis=0, return_inverse=True)
        self.group_of = np.full(n, -1, np.int64)
        self.group_of[nic_ids] = inv.ravel()
        ng = len(uniq)
        if ns == 0 or ng == 0:
            self._tables = dict(dist=np.zeros((0, 0), np.int32), local=local, ng=ng, connected=False)
            return
        # distance from every switch to every leaf (reverse graph BFS), then to each group
        leaves = sorted_unique(uniq[uniq >= 0])
        dl = _hop_distances(local[e_dst], local[e_src], ns, local[leaves])
        leaf_pos = {int(l): i for i, l in enumerate(leaves)}
        dist = np.full((ng, ns), _INF, np.int32)
        for gi, row in enumerate(uniq):
            members = [leaf_pos[int(x)] for x in row if x >= 0]
            if members:
                dist[gi] = dl[members].min(axis=0)
        # next-hop sets per (switch, group)
        set_links: list[np.ndarray] = [np.zeros(0, np.int64)]
        table = np.zeros((ns, ng), np.int32)  # 0 = empty set
        ss_ids = np.flatnonzero(ss)
        order = np.argsort(cf.link_src[ss_ids], kind="stable")
        ss_ids = ss_ids[order]
        starts = np.searchsorted(cf.link_src[ss_ids], sw_ids)
        ends = np.searchsorted(cf.link_src[ss_ids], sw_ids, side="right")
        for i in range(ns):
            out = ss_ids[starts[i]:ends[i]]
            if len(out) == 0:
                continue
            di = dist[:, i:i + 1]
            valid = (dist[:, local[cf.link_dst[out]]] == di - 1) & (di < _INF) & (di > 0)
            packed = np.ascontiguousarray(np.packbits(valid, axis=1))
            keys = packed.view(np.dtype((np.void, packed.shape[1]))).ravel()
            _, first, inv2 = np.unique(keys, return_index=True, return_inverse=True)
            ids = np.zeros(len(first), np.int32)
            for k, row in enumerate(valid[first]):
                if row.any():
                    ids[k] = len(set_links)
                    set_links.append(out[row])
            table[i] = ids[inv2.ravel()]
        ptr = np.zeros(len(set_links) + 1, np.int64)
        np.cumsum([len(s) for s in set_links], out=ptr[1:])
        flat = np.concatenate(set_links).astype(np.int32)
        # every NIC can reach every destination group when each leaf reaches every group
        leaf_rows = local[leaves]
        connected = bool((dist[:, leaf_rows] < _INF).all())
        flat_table = table.ravel()
        self._tables = dict(dist=dist, local=local, ng=ng, table=table, set_ptr=ptr, set_links=flat,
                            leaf_sets=uniq, connected=connected,
                            set_lo=ptr[flat_table], set_cnt=(ptr[flat_table + 1] - ptr[flat_table]).astype(np.int32))

    @property
    def tables(self) -> dict:
        if self._tables is None:
            self._build_tables()
        return self._tables

    # -- scale-out segment
    def _reachable(self, nic_a: np.ndarray, nic_b: np.ndarray) -> np.ndarray:
        t = self.tables
        ok = (nic_a >= 0) & (nic_b >= 0)
        if not ok.any() or t["dist"].size == 0:
            return ok & False
        if t["connected"]:
            return ok
        g = self.group_of[np.maximum(nic_b, 0)]
        ups = self.nic_up[np.maximum(nic_a, 0)]
        leaves = np.where(ups >= 0, self.cf.link_dst[np.maximum(ups, 0)], -1)
        d = np.where(leaves >= 0, t["dist"][g[:, None], t["local"][np.maximum(leaves, 0)]], _INF)
        return ok & (d.min(axis=1) < _INF) & (g >= 0)


    def _first_hop(self, a_nic, g):
        """Candidate NIC up-links (padded) toward group g: those whose leaf is closest."""
        t = self.tables
        ups = self.nic_up[a_nic]
        ok = ups >= 0
        leaf = self.cf.link_dst[np.maximum(ups, 0)]
        d = np.where(ok, t["dist"][g[:, None], t["local"][leaf]], _INF)
        best = d.min(axis=1, keepdims=True)
        return ups, ok & (d == best) & (best < _INF)
