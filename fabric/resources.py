"""Resources of the router: endpoints, trunks (merged parallel links) and per-resource tables.

A resource is a link (id below ``n_links``) or a *trunk*: a set of parallel links that every
flow crossing it splits over equally (a GPU's NVLink ports; on a pristine Clos under spraying a
NIC's plane ports, a leaf's up-links, a pod's up-links, the links into a leaf). This module
indexes them once per fabric (:class:`_ResourcesMixin`, mixed into :class:`fabric.routing.Router`)
and answers the per-resource questions: capacity, latency, transport, member links, the resources
of a GPU's port or of a switch's tier.

Examples
--------
>>> from topologies.clos import fat_tree
>>> from fabric.compiled import compile_fabric
>>> from fabric.routing import Router
>>> r = Router(compile_fabric(fat_tree(hosts=16, radix=8)))
>>> r.n_resources >= r.n_links
True
"""

from __future__ import annotations

import numpy as np

from fabric.routes import Routes
from topologies.errors import RoutingError, UnreachableError
from topologies.graph import ROLES, TIERS

__all__ = ["TRANSPORTS"]

#: Transport of a link, by tier: NVLink, host interface (PCIe/C2C) or network.
TRANSPORTS = ("nvlink", "host", "network")
_TRANSPORT_OF_TIER = np.array([0 if t.startswith("nvlink") else 1 if t.startswith("host") else 2 for t in TIERS],
                              dtype=np.int8)

_R = {r: i for i, r in enumerate(ROLES)}
_T = {t: i for i, t in enumerate(TIERS)}


class _ResourcesMixin:
    """Endpoint and trunk indexes of :class:`fabric.routing.Router`, and its per-resource queries (internal)."""
    # ------------------------------------------------------------------ setup
    def _index_endpoints(self) -> None:
        cf = self.cf
        alive = cf.link_alive
        src, dst = cf.link_src, cf.link_dst
        tier = cf.link_tier
        n = cf.n_nodes
        # GPU <-> NIC host links (one NIC per GPU)
        up = alive & (tier == _T["host-up"])
        self.host_up = np.full(n, -1, np.int32)
        self.host_up[src[up]] = np.flatnonzero(up)
        self.nic_of = np.full(n, -1, np.int32)
        self.nic_of[src[up]] = dst[up]
        down = alive & (tier == _T["host-down"])
        self.host_down = np.full(n, -1, np.int32)
        self.host_down[dst[down]] = np.flatnonzero(down)
        # NIC <-> leaf links, padded per NIC
        self.nic_up = self._padded(alive & (tier == _T["nic-up"]), by=src)
        self.nic_down = self._padded(alive & (tier == _T["nic-down"]), by=dst)
        # NVLink links per GPU
        self.nv_up_mask = alive & (tier == _T["nvlink-up"])
        self.nv_down_mask = alive & (tier == _T["nvlink-down"])
        g = cf.gpus
        self.domain_of = cf.node_domain
        rank_domain = cf.node_domain[g]
        self.domain_has_nvlink = np.zeros(max(int(rank_domain.max(initial=-1)) + 1, 1), bool)
        has = np.zeros(n, bool)
        has[src[self.nv_up_mask]] = True
        self.domain_has_nvlink[rank_domain[has[g]]] = True
        # rank of the GPU with a given (domain, local) for PXN
        loc = cf.node_local[g]
        self._rank_at = np.full((len(self.domain_has_nvlink), int(loc.max(initial=0)) + 1), -1, np.int64)
        self._rank_at[rank_domain, loc] = np.arange(len(g))
        self._index_hosts(g, rank_domain, loc)

    def _index_hosts(self, g: np.ndarray, rank_domain: np.ndarray, loc: np.ndarray) -> None:
        """Hosts (compute trays) inside the NVLink domains, for NCCL's PXN, which relays only inside a host.

        A GPU's rail is its index inside its compute tray (:func:`topologies.nvlink.add_nvlink_domain`:
        ``rail = local % gpus_per_tray``; HGX boards: one tray, the GPU's index), so a domain's tray holds
        ``max(rail) + 1`` GPUs; a domain whose GPUs have no rail is one host. ``node_host`` (per node, -1 for
        non-GPUs) numbers the hosts over the fabric, ``node_host_dev`` is the GPU's index inside its host (its
        ``nvmlDev`` in NCCL) and ``_host_rank_at[host, dev]`` the rank there (-1: none).
        """
        cf = self.cf
        n = cf.n_nodes
        self.node_host = np.full(n, -1, np.int64)
        self.node_host_dev = np.full(n, -1, np.int64)
        if len(g) == 0:
            self._host_rank_at = np.full((1, 1), -1, np.int64)
            return
        nd = len(self.domain_has_nvlink)
        dom = np.maximum(rank_domain, 0)
        rail = cf.node_rail[g].astype(np.int64)
        size = np.zeros(nd, np.int64)
        np.maximum.at(size, dom, loc + 1)
        tray = np.zeros(nd, np.int64)
        np.maximum.at(tray, dom, rail + 1)
        norail = np.zeros(nd, bool)
        norail[dom[rail < 0]] = True
        tray = np.where(norail | (tray < 1), np.maximum(size, 1), tray)
        per = -(-size // tray)                       # hosts per domain
        first = np.r_[0, np.cumsum(per)[:-1]]        # each domain's first host number
        t = tray[dom]
        self.node_host[g] = first[dom] + loc // t
        self.node_host_dev[g] = loc % t
        self._host_rank_at = np.full((int(per.sum()), int(tray.max(initial=1))), -1, np.int64)
        self._host_rank_at[self.node_host[g], self.node_host_dev[g]] = np.arange(len(g))

    def pxn_tables(self, scope: str) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """``(row, col, table)``: the PXN relay of a flow from GPU node ``a`` to GPU node ``b`` is the rank
        ``table[row[a], col[b]]`` (-1: none). ``scope="domain"``: the GPU of ``a``'s NVLink domain with ``b``'s
        domain-local index; ``"host"``: the GPU of ``a``'s host with ``b``'s index inside its host, as NCCL
        (v2.28.7-1 src/graph/search.cc ``ncclTopoGetNetDev``: the NIC local to the GPU of our node with the
        peer's ``nvmlDev``, ``ncclTopoDevToRank`` in src/graph/topo.h skips GPUs of other nodes; paths.cc
        ``ncclTopoComputePaths``: a relay GPU must be "(3) on the same node as us").
        """
        if scope == "host":
            return self.node_host, self.node_host_dev, self._host_rank_at
        return self.cf.node_domain, self.cf.node_local, self._rank_at

    def _padded(self, mask: np.ndarray, by: np.ndarray) -> np.ndarray:
        ids = np.flatnonzero(mask)
        owner = by[ids]
        order = np.argsort(owner, kind="stable")
        ids, owner = ids[order], owner[order]
        counts = np.bincount(owner, minlength=self.cf.n_nodes)
        width = max(1, int(counts.max(initial=0)))
        out = np.full((self.cf.n_nodes, width), -1, np.int32)
        start = np.r_[0, np.cumsum(counts)[:-1]]
        col = np.arange(len(ids)) - start[owner]
        out[owner, col] = ids
        return out

    def _index_trunks(self) -> None:
        """Register trunks: GPU NVLink ports, NIC plane ports, Clos classes (pristine scopes only)."""
        cf = self.cf
        L = cf.n_links
        members: list[np.ndarray] = []
        key_of: dict = {}

        def register(key, links: np.ndarray) -> None:
            if len(links) > 1:
                key_of[key] = L + len(members)
                members.append(np.sort(links))

        pristine = cf.link_alive & (cf.link_capacity_Bps == cf.link_nominal_Bps)
        src, dst, tier = cf.link_src, cf.link_dst, cf.link_tier
        # NVLink: per GPU up and down ports, in pristine, regular domains
        self.nv_trunk_up = np.full(cf.n_nodes, -1, np.int64)
        self.nv_trunk_down = np.full(cf.n_nodes, -1, np.int64)
        nv_up = np.flatnonzero(tier == _T["nvlink-up"])
        nv_down = np.flatnonzero(tier == _T["nvlink-down"])
        self.domain_pristine = np.zeros(len(self.domain_has_nvlink), bool)
        if len(nv_up):
            dom = cf.node_domain[src[nv_up]]
            bad = np.zeros(len(self.domain_has_nvlink), bool)
            bad[dom[~pristine[nv_up]]] = True
            bad[cf.node_domain[dst[nv_down][~pristine[nv_down]]]] = True
            # regular: every GPU of the domain has the same count of links to every chip, same capacity
            for d in np.unique(dom):
                if bad[d]:
                    continue
                ups = nv_up[dom == d]
                gsrc, chip = src[ups], dst[ups]
                gpus_d = np.unique(gsrc)
                counts = np.zeros((len(gpus_d), cf.n_nodes), np.int32) if len(gpus_d) * cf.n_nodes < 5e7 else None
                if counts is not None:
                    np.add.at(counts, (np.searchsorted(gpus_d, gsrc), chip), 1)
                    regular = bool((counts == counts[0]).all())
                else:
                    regular = True
                caps = cf.link_capacity_Bps[ups]
                regular = regular and bool((caps == caps[0]).all())
                self.domain_pristine[d] = regular
            order = np.argsort(src[nv_up], kind="stable")
            for g, links in _split_by(src[nv_up][order], nv_up[order]):
                if self.domain_pristine[cf.node_domain[g]]:
                    register(("nv-up", g), links)
                    self.nv_trunk_up[g] = key_of.get(("nv-up", g), links[0])
            order = np.argsort(dst[nv_down], kind="stable")
            for g, links in _split_by(dst[nv_down][order], nv_down[order]):
                if self.domain_pristine[cf.node_domain[g]]:
                    register(("nv-down", g), links)
                    self.nv_trunk_down[g] = key_of.get(("nv-down", g), links[0])
        # Scale-out Clos classes (for spraying), only when the whole scale-out is pristine
        so_tiers = [_T[t] for t in ("nic-up", "nic-down", "leaf-up", "spine-down", "spine-up", "core-down")]
        so = np.isin(tier, so_tiers)
        roles = cf.node_role
        is_net = np.isin(roles, [_R["leaf"], _R["spine"], _R["core"]])
        self.clos_pristine = bool(so.any() and pristine[so].all() and (cf.node_pod[is_net] >= 0).all())
        self.clos_trunk: dict = {}
        if self.clos_pristine:
            pod = cf.node_pod
            classes = [
                ("nic-up", so & (tier == _T["nic-up"]), src),
                ("nic-down", so & (tier == _T["nic-down"]), dst),
                ("leaf-up", tier == _T["leaf-up"], src),
                ("spine-down", tier == _T["spine-down"], dst),
            ]
            for name, mask, by in classes:
                ids = np.flatnonzero(mask)
                order = np.argsort(by[ids], kind="stable")
                for node, links in _split_by(by[ids][order], ids[order]):
                    register((name, node), links)
                    self.clos_trunk[(name, node)] = key_of.get((name, node), int(links[0]))
            for name, mask, by in (("spine-up", tier == _T["spine-up"], src), ("core-down", tier == _T["core-down"], dst)):
                ids = np.flatnonzero(mask)
                keys = cf.node_plane[by[ids]].astype(np.int64) * 1_000_000 + pod[by[ids]]
                order = np.argsort(keys, kind="stable")
                for k, links in _split_by(keys[order], ids[order]):
                    register((name, int(k)), links)
                    self.clos_trunk[(name, int(k))] = key_of.get((name, int(k)), int(links[0]))
            # every trunk must have equal member capacities for the equal split to be exact
            for links in members:
                c = cf.link_capacity_Bps[links]
                if not (c == c[0]).all():
                    self.clos_pristine = False
        self.trunk_ptr = np.zeros(len(members) + 1, np.int64)
        if members:
            np.cumsum([len(m) for m in members], out=self.trunk_ptr[1:])
            self.trunk_links = np.concatenate(members).astype(np.int64)
        else:
            self.trunk_links = np.zeros(0, np.int64)

    # -------------------------------------------------------------- resources
    @property
    def n_links(self) -> int:
        return self.cf.n_links

    @property
    def n_resources(self) -> int:
        return self.cf.n_links + len(self.trunk_ptr) - 1

    def resource_capacity_Bps(self) -> np.ndarray:
        """Capacity of every resource: links, then trunks (sum of members)."""
        cap = self.cf.link_capacity_Bps
        tr = np.add.reduceat(cap[self.trunk_links], self.trunk_ptr[:-1]) if len(self.trunk_links) else np.zeros(0)
        return np.concatenate([cap, tr])

    def resource_latency_s(self) -> np.ndarray:
        lat = self.cf.link_latency_s
        if not len(self.trunk_links):
            return lat.copy()
        tr = np.add.reduceat(lat[self.trunk_links], self.trunk_ptr[:-1]) / np.diff(self.trunk_ptr)
        return np.concatenate([lat, tr])

    def members(self, resource: int) -> np.ndarray:
        """Link ids a resource stands for."""
        if resource < self.cf.n_links:
            return np.array([resource])
        t = resource - self.cf.n_links
        return self.trunk_links[self.trunk_ptr[t]:self.trunk_ptr[t + 1]]

    def expand_to_links(self, resource_values: np.ndarray) -> np.ndarray:
        """Spread per-resource values (bytes, load) over links (trunks split equally)."""
        L = self.cf.n_links
        out = np.asarray(resource_values[:L], dtype=np.float64).copy()
        if len(self.trunk_links):
            sizes = np.diff(self.trunk_ptr)
            per = np.repeat(np.asarray(resource_values[L:], dtype=np.float64) / sizes, sizes)
            np.add.at(out, self.trunk_links, per)
        return out

    def path_links(self, routes: Routes, f: int) -> tuple[np.ndarray, np.ndarray]:
        """(link ids, weights) of flow ``f`` with trunks expanded (for inspection and tests)."""
        links, weights = [], []
        for r, w in zip(routes.res[f], routes.weight[f] if routes.weight is not None else np.ones(routes.res.shape[1])):
            if r < 0:
                continue
            m = self.members(int(r))
            links.append(m)
            weights.append(np.full(len(m), w / len(m)))
        if not links:
            return np.zeros(0, np.int64), np.zeros(0)
        return np.concatenate(links), np.concatenate(weights)

    def resource_transport(self) -> np.ndarray:
        """Transport code (index into :data:`TRANSPORTS`) of every resource."""
        t = _TRANSPORT_OF_TIER[self.cf.link_tier]
        if len(self.trunk_links):
            return np.concatenate([t, t[self.trunk_links[self.trunk_ptr[:-1]]]])
        return t.copy()

    def _spread(self, links: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Alive links of a set with capacity-proportional weights (a trunk when one covers exactly them)."""
        cf = self.cf
        links = links[cf.link_alive[links]]
        if len(links) == 0:
            return np.zeros(0, np.int64), np.zeros(0)
        key = tuple(np.sort(links))
        if self._trunk_index is None:
            self._trunk_index = {tuple(self.trunk_links[a:b]): self.cf.n_links + i
                                 for i, (a, b) in enumerate(zip(self.trunk_ptr[:-1], self.trunk_ptr[1:]))}
        t = self._trunk_index.get(key)
        if t is not None:
            return np.array([t]), np.array([1.0])
        cap = cf.link_capacity_Bps[links]
        return links, cap / cap.sum()

    def port(self, ranks, which: str) -> tuple[np.ndarray, np.ndarray]:
        """Resources of each GPU's port, for traffic that ends or starts inside a switch.

        ``which`` is ``nvlink-up`` / ``nvlink-down`` (all NVLink links of the GPU,
        e.g. for NVLS in-switch reduction) or ``nic-up`` / ``nic-down`` (host link
        plus the NIC's network links, e.g. for SHARP). Returns padded
        ``(res[F, k], weight[F, k])``; weights on each hop sum to 1.
        """
        cf = self.cf
        ranks = np.asarray(ranks, dtype=np.int64).ravel()
        nodes = cf.gpus[ranks]
        rows = []
        for g in nodes:
            if which in ("nvlink-up", "nvlink-down"):
                mask = self.nv_up_mask & (cf.link_src == g) if which == "nvlink-up" else \
                    self.nv_down_mask & (cf.link_dst == g)
                r, w = self._spread(np.flatnonzero(mask))
                if len(r) == 0:
                    raise UnreachableError(f"port: GPU {cf.node_names[g]} has no working NVLink")
            elif which in ("nic-up", "nic-down"):
                nic = self.nic_of[g]
                if nic < 0:
                    raise UnreachableError(f"port: GPU {cf.node_names[g]} has no (working) NIC")
                host = self.host_up[g] if which == "nic-up" else self.host_down[g]
                side = self.nic_up[nic] if which == "nic-up" else self.nic_down[nic]
                r2, w2 = self._spread(side[side >= 0])
                r, w = np.r_[host, r2], np.r_[1.0, w2]
            else:
                raise RoutingError(f"port: {which!r} is not one of nvlink-up, nvlink-down, nic-up, nic-down")
            rows.append((r, w))
        width = max(len(r) for r, _ in rows) if rows else 1
        res = np.full((len(rows), width), -1, np.int64)
        wt = np.zeros((len(rows), width))
        for i, (r, w) in enumerate(rows):
            res[i, :len(r)] = r
            wt[i, :len(r)] = w
        return res, wt

    def switch_links(self, node: int, tier: str, *, direction: str = "out") -> tuple[np.ndarray, np.ndarray]:
        """All alive ``tier`` links leaving (``out``) or entering (``in``) a node, as a trunk or weighted links."""
        cf = self.cf
        m = cf.link_tier == _T[tier]
        m &= (cf.link_src == node) if direction == "out" else (cf.link_dst == node)
        return self._spread(np.flatnonzero(m))

    def pod_links(self, plane: int, pod: int, tier: str) -> tuple[np.ndarray, np.ndarray]:
        """All alive ``spine-up`` links leaving, or ``core-down`` links entering, the spines of one pod."""
        cf = self.cf
        ends = cf.link_src if tier == "spine-up" else cf.link_dst
        m = (cf.link_tier == _T[tier]) & (cf.node_pod[ends] == pod) & (cf.node_plane[ends] == plane)
        m &= cf.node_role[ends] == _R["spine"]
        return self._spread(np.flatnonzero(m))


def _split_by(keys: np.ndarray, values: np.ndarray):
    """Yield (key, values) runs of a key-sorted pair of arrays."""
    if len(keys) == 0:
        return
    cuts = np.flatnonzero(np.diff(keys)) + 1
    starts = np.r_[0, cuts]
    ends = np.r_[cuts, len(keys)]
    for s, e in zip(starts, ends):
        yield keys[s], values[s:e]
