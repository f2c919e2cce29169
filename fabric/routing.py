"""Routing flows between GPUs: ECMP hashing, d-mod-k and spraying (DESIGN.md section 4).

A route from GPU ``a`` to GPU ``b`` has up to three segments:

* **NVLink**, when ``a`` and ``b`` share an NVLink domain: the hardware stripes
  every transfer over all of the GPU's links, so the flow is split over the
  links in proportion to their capacity, hop by hop (``a -> chip -> b``); this
  holds for every policy, since NVLink does not hash flows.
* **scale-out**, otherwise: ``a -> NIC -> leaf -> ... -> leaf -> NIC -> b`` along
  shortest paths of the switch network. At every switch the equal-cost next
  hops towards the destination are that switch's forwarding-table entry for it
  (computed once per fabric from a breadth-first search from every leaf, with
  scipy). The policy picks among them:

  - ``ecmp``: one next hop per flow by a seeded hash of (src, dst, salt, hop),
    as static hashing does (collisions happen);
  - ``dmodk``: InfiniBand's destination-mod-k: the up-port at the i-th up hop is
    ``(dst // prod of earlier up-port counts) mod count``;
  - ``spray``: the flow is split over all next hops in proportion to their
    capacity (the fluid limit of packet spraying / adaptive routing); on a
    symmetric fabric this is the equal split over all shortest paths.
* **PXN** (optional, or automatic when the rails only meet over NVLink): the
  sender first moves the data over NVLink to the GPU of its own domain that has
  the destination's local index (so its NIC is on the destination's rail), as
  NCCL's PXN does.

Resources are links or *trunks*: sets of parallel links that every flow crossing
them splits over equally (a GPU's NVLink ports; under spraying a leaf's up-links,
a pod's up-links, the links into a leaf). Merging them keeps four or six entries
per flow instead of hundreds and is exact for equal splits; the router only
trunks where the fabric is pristine (no failed or degraded link in the trunk's
scope) and otherwise lists every link with its weight.

Examples
--------
>>> from topologies.clos import fat_tree
>>> from fabric.compiled import compile_fabric
>>> r = Router(compile_fabric(fat_tree(hosts=16, radix=8)))
>>> routes = r.route([0, 0], [1, 15], policy="ecmp", seed=1)
>>> [len(r.path_links(routes, i)[0]) for i in range(2)]   # same leaf: 4 links; other leaf: 6
[4, 6]
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp
from scipy.sparse.csgraph import shortest_path

from fabric.compiled import CompiledFabric
from topologies.errors import ProblemTooLargeError, RoutingError, UnreachableError
from topologies.graph import ROLES, TIERS

__all__ = ["POLICIES", "TRANSPORTS", "Routes", "Router", "splitmix64", "flow_hash", "ecmp_pick"]

POLICIES = ("ecmp", "dmodk", "spray")

#: Transport of a link, by tier: NVLink, host interface (PCIe/C2C) or network.
TRANSPORTS = ("nvlink", "host", "network")
_TRANSPORT_OF_TIER = np.array([0 if t.startswith("nvlink") else 1 if t.startswith("host") else 2 for t in TIERS],
                              dtype=np.int8)

_R = {r: i for i, r in enumerate(ROLES)}
_T = {t: i for i, t in enumerate(TIERS)}
_INF = np.iinfo(np.int32).max // 4
_MASK64 = np.uint64(0xFFFFFFFFFFFFFFFF)


def splitmix64(x: np.ndarray) -> np.ndarray:
    """The splitmix64 finaliser, vectorised over uint64 (wrapping arithmetic).

    Examples
    --------
    >>> int(splitmix64(np.array([1], dtype=np.uint64))[0]) == int(splitmix64(np.array([1], dtype=np.uint64))[0])
    True
    """
    with np.errstate(over="ignore"):
        z = x.astype(np.uint64) + np.uint64(0x9E3779B97F4A7C15)
        z = (z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
        z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
        return z ^ (z >> np.uint64(31))


def flow_hash(src, dst, salt, seed: int) -> np.ndarray:
    """64-bit hash of (src, dst, salt, seed) per flow: the flow's ECMP "5-tuple" hash."""
    with np.errstate(over="ignore"):
        x = (np.asarray(src).astype(np.uint64) * np.uint64(0x100000001B3)) \
            ^ (np.asarray(dst).astype(np.uint64) << np.uint64(21)) \
            ^ (np.asarray(salt).astype(np.uint64) * np.uint64(0xD6E8FEB86659FD93))
        return splitmix64(x ^ np.uint64((seed * 1_000_003) & 0xFFFFFFFFFFFFFFFF))


def ecmp_pick(h: np.ndarray, hop: int, count) -> np.ndarray:
    """Candidate index in [0, count) for hop ``hop`` from the flow hash ``h``.

    Each pair of hops reads one 64-bit re-mix of the flow hash (hops 0-1 the hash
    itself), even hops its high and odd hops its low 32 bits, as switches with
    different hash seeds would; the 32-bit value maps onto the candidates by
    Lemire's multiply-shift, so the choice is uniform and hops are independent.
    """
    with np.errstate(over="ignore"):
        base = h if hop < 2 else splitmix64(h ^ np.uint64(((hop // 2) * 0x9E3779B97F4A7C15) & 0xFFFFFFFFFFFFFFFF))
        x = (base >> np.uint64(32)) if hop % 2 == 0 else (base & np.uint64(0xFFFFFFFF))
        return ((x * np.asarray(count).astype(np.uint64)) >> np.uint64(32)).astype(np.int64)


def dmodk_keys(cf: CompiledFabric) -> np.ndarray:
    """Destination index of every node for d-mod-k: NICs numbered leaf by leaf (as LIDs are).

    D-mod-K spreads destinations over up-ports by their index; it balances when
    the hosts under one leaf have consecutive indices, so NICs are numbered in
    the order of the (lowest-plane) leaf they hang from, then by node id.
    """
    nic = np.flatnonzero(cf.node_role == _R["nic"])
    up = cf.link_alive & (cf.link_tier == _T["nic-up"])
    leaf_of = np.full(cf.n_nodes, np.iinfo(np.int64).max, np.int64)
    np.minimum.at(leaf_of, cf.link_src[up], cf.link_dst[up].astype(np.int64))
    order = np.lexsort((nic, leaf_of[nic]))
    key = np.zeros(cf.n_nodes, np.int64)
    key[nic[order]] = np.arange(len(nic))
    return key


@dataclass(frozen=True)
class Routes:
    """Routed flows: a padded flow x resource incidence with fractional weights.

    ``res[f, j]`` is a resource id (a link id below ``n_links``, a trunk above)
    or -1; ``weight[f, j]`` the fraction of flow ``f``'s rate it carries
    (``None`` means 1.0 everywhere). ``latency_s`` is the weighted sum of link
    latencies along the flow's paths (the mean path latency).
    """

    src: np.ndarray        # ranks
    dst: np.ndarray        # ranks
    res: np.ndarray        # int32[F, h]
    weight: np.ndarray | None
    latency_s: np.ndarray  # float64[F]
    policy: str
    pxn: np.ndarray        # bool[F]: forwarded over NVLink to the rail GPU first

    @property
    def n_flows(self) -> int:
        return len(self.src)


class _Rows:
    """Accumulates per-flow (resource, weight) columns; padding (-1) may sit anywhere in a row."""

    def __init__(self, n: int):
        self.n = n
        self.res: list[np.ndarray] = []
        self.w: list[np.ndarray | None] = []

    def add(self, res: np.ndarray, w=None) -> None:
        res = np.asarray(res)
        if res.ndim == 1:
            res = res[:, None]
        if w is not None:
            w = np.asarray(w, dtype=np.float64)
            if w.ndim == 1:
                w = w[:, None]
            w = np.broadcast_to(w, res.shape)
        self.res.append(res.astype(np.int32, copy=False))
        self.w.append(w)

    @property
    def width(self) -> int:
        return sum(r.shape[1] for r in self.res)

    @property
    def weighted(self) -> bool:
        return any(w is not None for w in self.w)

    def write(self, res_out: np.ndarray, w_out: np.ndarray | None) -> None:
        """Write the columns into preallocated ``res_out`` (-1 filled) and ``w_out`` (0 filled) row blocks."""
        j = 0
        for r, w in zip(self.res, self.w):
            k = r.shape[1]
            res_out[:, j:j + k] = r
            if w_out is not None:
                w_out[:, j:j + k] = np.where(r >= 0, 1.0 if w is None else w, 0.0)
            j += k


class Router:
    """Routes flows over a compiled fabric; owns the resource (link + trunk) table.

    Parameters
    ----------
    cf : CompiledFabric
        The fabric, with failures already applied.
    max_entries : int
        Guard on explicit (untrunked) spray entries; beyond it a
        :class:`ProblemTooLargeError` says how to shrink the problem.
    """

    def __init__(self, cf: CompiledFabric, *, max_entries: int = 200_000_000, chunk_flows: int = 1 << 18):
        self.cf = cf
        self.max_entries = max_entries
        self.chunk_flows = chunk_flows
        self._nvlink_pair_cache: dict = {}
        self._index_endpoints()
        self._index_trunks()
        self._tables = None
        self._trunk_index = None
        self._reach_cache: dict = {}
        self._cache: dict = {}
        self.dmodk_key = dmodk_keys(cf)
        #: tier level of every node (NIC 0, leaf 1, spine 2, core 3): a hop is "up" when the level rises
        self.level = np.select([cf.node_role == _R["leaf"], cf.node_role == _R["spine"], cf.node_role == _R["core"]],
                               [1, 2, 3], 0).astype(np.int8)

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
        adj_rev = sp.csr_array((np.ones(len(e_src)), (local[e_dst], local[e_src])), shape=(ns, ns))
        leaves = np.unique(uniq[uniq >= 0])
        dl = shortest_path(adj_rev, unweighted=True, indices=local[leaves], directed=True)
        dl = np.where(np.isfinite(dl), dl, _INF).astype(np.int32)
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

    # ------------------------------------------------------------------ route
    def route(self, src, dst, *, policy: str = "ecmp", seed: int = 0, salt=None, pxn: bool | None = False) -> Routes:
        """Route flows from GPU ranks ``src`` to GPU ranks ``dst``.

        Parameters
        ----------
        src, dst : array_like of int
            GPU ranks (index in :attr:`CompiledFabric.gpus`). ``src == dst`` gives an empty route.
        policy : {"ecmp", "dmodk", "spray"}
        seed : int
            Seed of the ECMP hash.
        salt : array_like of int, optional
            Per-flow hash salt (e.g. channel or queue-pair index); default the flow index.
        pxn : bool
            Forward inter-domain flows over NVLink to the GPU on the destination's
            rail first. Flows whose rails only meet over NVLink use it regardless.

        Raises
        ------
        RoutingError
            Unknown policy or rank.
        UnreachableError
            A pair has no path (e.g. after failures).
        """
        if policy not in POLICIES:
            raise RoutingError(f"routing: {policy!r} is not one of {', '.join(POLICIES)}")
        cf = self.cf
        src = np.asarray(src, dtype=np.int64).ravel()
        dst = np.asarray(dst, dtype=np.int64).ravel()
        if src.shape != dst.shape:
            raise RoutingError(f"src/dst: {len(src)} sources but {len(dst)} destinations")
        for name, arr in (("src", src), ("dst", dst)):
            if len(arr) and (arr.min() < 0 or arr.max() >= cf.n_gpus):
                bad = int(arr[(arr < 0) | (arr >= cf.n_gpus)][0])
                raise RoutingError(f"{name}: rank {bad} is not a GPU of {cf.name!r} (ranks 0..{cf.n_gpus - 1})")
        F = len(src)
        salt = np.arange(F, dtype=np.int64) if salt is None else np.broadcast_to(np.asarray(salt, np.int64), (F,))
        res = w = None
        used_pxn = np.zeros(F, bool)
        lat = np.zeros(F)
        keep = np.zeros(0, bool)
        for a in range(0, max(F, 1), self.chunk_flows):
            b = min(a + self.chunk_flows, F)
            rows, pxn_part = self._route_chunk(src[a:b], dst[a:b], salt[a:b], policy, seed, pxn)
            used_pxn[a:b] = pxn_part
            width = max(rows.width, 1)
            if res is None or width > res.shape[1] or (rows.weighted and w is None):
                res, w = self._grow(res, w, F, width, rows.weighted)
                keep = np.r_[keep, np.zeros(res.shape[1] - len(keep), bool)]
            part_w = w[a:b] if w is not None else None
            rows.write(res[a:b], part_w)
            lat[a:b] = self._path_latency(res[a:b], part_w)   # chunk by chunk: small temporaries
            keep |= (res[a:b] >= 0).any(axis=0)
        if not keep.any():
            keep[0] = True
        if not keep.all():
            res = res[:, keep]
            w = None if w is None else w[:, keep]
        if w is not None and np.all((w == 1.0) | (res < 0)):
            w = None
        return Routes(src=src, dst=dst, res=res, weight=w, latency_s=lat, policy=policy, pxn=used_pxn)

    @staticmethod
    def _grow(res, w, F, width, weighted):
        new_res = np.full((F, width), -1, np.int32)
        new_w = np.zeros((F, width)) if (weighted or w is not None) else None
        if res is not None:
            new_res[:, :res.shape[1]] = res
            if new_w is not None:
                new_w[:, :res.shape[1]] = w if w is not None else np.where(res >= 0, 1.0, 0.0)
        return new_res, new_w

    def _path_latency(self, res: np.ndarray, w: np.ndarray | None) -> np.ndarray:
        """Weighted sum of the latencies of every resource a flow crosses (the mean path latency)."""
        if "latency_ext" not in self._cache:
            self._cache["latency_ext"] = np.append(self.resource_latency_s(), 0.0)  # index -1 -> 0
        lat = self._cache["latency_ext"][res]
        return (lat if w is None else lat * w).sum(axis=1)

    def _route_chunk(self, src, dst, salt, policy, seed, pxn):
        cf = self.cf
        F = len(src)
        ga, gb = cf.gpus[src], cf.gpus[dst]
        da, db = cf.node_domain[ga], cf.node_domain[gb]
        differ = src != dst
        same = (da == db) & differ
        if len(da):
            same &= self.domain_has_nvlink[np.maximum(da, 0)]
        inter = differ & ~same
        rows = _Rows(F)
        used_pxn = np.zeros(F, bool)
        if same.any():
            self._route_nvlink(np.flatnonzero(same), ga, gb, rows)
        if inter.any():
            idx = np.flatnonzero(inter) if not inter.all() else np.arange(F)
            send = ga
            reach = self._reachable(self.nic_of[ga[idx]], self.nic_of[gb[idx]])
            if pxn or not reach.all():
                loc_b = cf.node_local[gb[idx]]
                dom_a = da[idx]
                ok = (loc_b < self._rank_at.shape[1]) & (dom_a >= 0)
                prox = np.where(ok, self._rank_at[np.maximum(dom_a, 0), np.minimum(loc_b, self._rank_at.shape[1] - 1)],
                                -1)
                use = (prox >= 0) & (prox != src[idx]) & self.domain_has_nvlink[np.maximum(dom_a, 0)]
                if not pxn:
                    use &= ~reach
                if use.any():
                    k = idx[use]
                    send = ga.copy()
                    send[k] = cf.gpus[prox[use]]
                    used_pxn[k] = True
                    self._route_nvlink(k, ga, send, rows)
            self._route_scaleout(idx, send, gb, policy, seed, salt, src, dst, rows)
        return rows, used_pxn

    # -- NVLink segment
    def _route_nvlink(self, idx: np.ndarray, ga: np.ndarray, gb: np.ndarray, rows: _Rows) -> None:
        cf = self.cf
        a, b = ga[idx], gb[idx]
        pristine = self.domain_pristine[cf.node_domain[a]]
        n = len(ga)
        if pristine.any():
            k = idx[pristine]
            up = np.full(n, -1, np.int32)
            down = np.full(n, -1, np.int32)
            up[k] = self.nv_trunk_up[ga[k]]
            down[k] = self.nv_trunk_down[gb[k]]
            rows.add(up)
            rows.add(down)
        if (~pristine).any():
            k = idx[~pristine]
            pairs = np.stack([ga[k], gb[k]], axis=1)
            uniq, inv = np.unique(pairs, axis=0, return_inverse=True)
            per = [self._nvlink_pair(int(u), int(v)) for u, v in uniq]
            width = max(len(p[0]) for p in per)
            pr = np.full((len(uniq), width), -1, np.int64)
            pw = np.zeros((len(uniq), width))
            for i, (links, wts) in enumerate(per):
                pr[i, :len(links)] = links
                pw[i, :len(links)] = wts
            full_r = np.full((n, width), -1, np.int64)
            full_w = np.zeros((n, width))
            full_r[k] = pr[inv.ravel()]
            full_w[k] = pw[inv.ravel()]
            rows.add(full_r, full_w)

    def _nvlink_pair(self, a: int, b: int) -> tuple[np.ndarray, np.ndarray]:
        """Capacity-proportional striping a -> chips -> b over alive links (non-pristine domains)."""
        key = (a, b)
        if key in self._nvlink_pair_cache:
            return self._nvlink_pair_cache[key]
        cf = self.cf
        ups = np.flatnonzero(self.nv_up_mask & (cf.link_src == a))
        downs = np.flatnonzero(self.nv_down_mask & (cf.link_dst == b))
        chips_to_b = np.unique(cf.link_src[downs])
        ups = ups[np.isin(cf.link_dst[ups], chips_to_b)]
        if len(ups) == 0:
            raise UnreachableError(f"route: no NVLink path from {cf.node_names[a]} to {cf.node_names[b]} "
                                   f"(failed links); remove failures or route over the network")
        cap = cf.link_capacity_Bps
        w_up = cap[ups] / cap[ups].sum()
        arrive = np.bincount(np.searchsorted(chips_to_b, cf.link_dst[ups]), weights=w_up, minlength=len(chips_to_b))
        chip_of_down = np.searchsorted(chips_to_b, cf.link_src[downs])
        tot = np.bincount(chip_of_down, weights=cap[downs], minlength=len(chips_to_b))
        w_down = arrive[chip_of_down] * cap[downs] / tot[chip_of_down]
        keep = w_down > 0
        out = (np.concatenate([ups, downs[keep]]), np.concatenate([w_up, w_down[keep]]))
        self._nvlink_pair_cache[key] = out
        return out

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

    def _route_scaleout(self, idx, send, gb, policy, seed, salt, src, dst, rows: _Rows) -> None:
        cf = self.cf
        n = len(send)
        everyone = len(idx) == n
        a_nic = self.nic_of[send[idx]]
        b_nic = self.nic_of[gb[idx]]
        if (a_nic < 0).any() or (b_nic < 0).any():
            i = int(np.flatnonzero((a_nic < 0) | (b_nic < 0))[0])
            a, b = int(send[idx][i]), int(gb[idx][i])
            same = cf.node_domain[a] == cf.node_domain[b]
            why = ("no working NVLink path joins them (their NVSwitch links are failed) and the domain has no "
                   "(working) NIC to go around over the network" if same else
                   "they are in different NVLink domains and one of them has no (working) NIC")
            raise UnreachableError(f"route: {cf.node_names[a]} -> {cf.node_names[b]}: {why}")
        reach = self._reachable(a_nic, b_nic)
        if not reach.all():
            i = int(np.flatnonzero(~reach)[0])
            hint = "failed links" if cf.failures else "rails that only meet over NVLink"
            raise UnreachableError(
                f"route: no network path from GPU rank {src[idx][i]} to rank {dst[idx][i]} "
                f"({cf.node_names[a_nic[i]]} -> {cf.node_names[b_nic[i]]}): {hint} cut every path between them")

        def col(vals_sub, fill=-1):
            if everyone:
                return vals_sub
            out = np.full(n, fill, np.float64 if isinstance(fill, float) else np.int32)
            out[idx] = vals_sub
            return out

        up_host = self.host_up[send[idx]]
        down_host = self.host_down[gb[idx]]
        rows.add(col(up_host))
        if policy == "spray" and self.clos_pristine:
            self._spray_trunks(idx, a_nic, b_nic, rows, col)
        elif policy == "spray":
            self._spray_explicit(idx, a_nic, b_nic, self.group_of[b_nic], rows)
        else:
            self._walk(idx, a_nic, b_nic, self.group_of[b_nic], policy, seed, salt[idx], src[idx], dst[idx], rows,
                       col)
        rows.add(col(down_host))

    def _first_hop(self, a_nic, g):
        """Candidate NIC up-links (padded) toward group g: those whose leaf is closest."""
        t = self.tables
        ups = self.nic_up[a_nic]
        ok = ups >= 0
        leaf = self.cf.link_dst[np.maximum(ups, 0)]
        d = np.where(ok, t["dist"][g[:, None], t["local"][leaf]], _INF)
        best = d.min(axis=1, keepdims=True)
        return ups, ok & (d == best) & (best < _INF)

    @staticmethod
    def _choose(cnt, policy, h, d_rank, hop, prod=None, up=None):
        """Index in [0, cnt) per flow: ECMP hash or d-mod-k; 0 where there is one candidate.

        d-mod-k picks up-ports by ``(dst // product of earlier up-port counts) mod count``
        and, going down, parallel cables by ``dst mod count``.
        """
        if not (cnt > 1).any():
            return np.zeros(len(cnt), np.int64)
        if policy == "ecmp":
            return ecmp_pick(h, hop, cnt)
        k_up = (d_rank // (1 if prod is None else prod)) % cnt
        return k_up if up is None else np.where(up, k_up, d_rank % cnt)

    def _walk(self, idx, a_nic, b_nic, g, policy, seed, salt, s_rank, d_rank, rows, col) -> None:
        """ECMP / d-mod-k paths. A NIC with ports in several planes stripes every flow over the
        planes in proportion to port capacity (as multiplane SuperNICs do); the policy picks
        inside each plane."""
        cf = self.cf
        h = flow_hash(s_rank, d_rank, salt, seed) if policy == "ecmp" else None
        if policy == "dmodk":
            d_rank = self.dmodk_key[b_nic]
        if self.nic_up.shape[1] == 1:
            for c in self._walk_from(self.nic_up[a_nic, 0], b_nic, g, policy, h, d_rank):
                rows.add(col(c))
            return
        ups, cand = self._first_hop(a_nic, g)
        cap = np.where(cand, cf.link_capacity_Bps[np.maximum(ups, 0)], 0.0)
        share = cap / cap.sum(axis=1, keepdims=True)
        n = len(idx)
        for j in range(ups.shape[1]):
            sub = np.flatnonzero(cand[:, j])
            if len(sub) == 0:
                continue
            cols = self._walk_from(ups[sub, j], b_nic[sub], g[sub], policy, None if h is None else h[sub],
                                   d_rank[sub])
            w = np.zeros(n)
            w[sub] = share[sub, j]
            for c in cols:
                full = np.full(n, -1, np.int32)
                full[sub] = c
                rows.add(col(full), col(w, 0.0))

    def _walk_from(self, first, b_nic, g, policy, h, d_rank) -> list[np.ndarray]:
        """Link columns of paths that leave their NIC on link ``first`` (one choice per hop)."""
        cf = self.cf
        t = self.tables
        F = len(first)
        cols = [first]
        prod = np.ones(F, np.int64)
        loc = t["local"]
        cur = cf.link_dst[first]
        hop = 1
        set_lo, set_cnt, links = t["set_lo"], t["set_cnt"], t["set_links"]
        ng = t["dist"].shape[0]
        g64 = g.astype(np.int64)
        while True:
            key = loc[cur] * ng + g64
            c = set_cnt[key]           # 0 once the flow stands on a leaf of its destination group
            active = c > 0
            if not active.any():
                break
            lo = set_lo[key]
            up = None
            if policy == "dmodk":
                up = self.level[cf.link_dst[links[np.minimum(lo, len(links) - 1)]]] > self.level[cur]
            k = self._choose(np.maximum(c, 1), policy, h, d_rank, hop, prod, up)
            if policy == "dmodk":
                prod = np.where(active & up & (c > 1), prod * c, prod)
            if active.all():
                link = links[lo + k]
                cur = cf.link_dst[link]
            else:
                link = np.where(active, links[np.minimum(lo + k, len(links) - 1)], -1)
                cur = np.where(active, cf.link_dst[np.maximum(link, 0)], cur)
            cols.append(link)
            hop += 1
            if hop > 64:
                raise RoutingError("route: path longer than 64 hops; the switch graph has a loop")
        # last hop: the down-link from the current leaf to the destination NIC
        downs = self.nic_down[b_nic]
        if downs.shape[1] == 1:
            last = downs[:, 0]
            if (cf.link_src[last] != cur).any():
                raise UnreachableError("route: destination NIC is not attached to the final leaf")
        else:
            match = (downs >= 0) & (cf.link_src[np.maximum(downs, 0)] == cur[:, None])
            if not match.any(axis=1).all():
                raise UnreachableError("route: destination NIC is not attached to the final leaf")
            k = self._choose(match.sum(axis=1), policy, h, d_rank, 99)
            order = np.argsort(~match, axis=1, kind="stable")
            last = np.take_along_axis(downs, order, axis=1)[np.arange(F), k]
        cols.append(last)
        return cols

    def _spray_trunks(self, idx, a_nic, b_nic, rows, col) -> None:
        """Pristine Clos: trunk entries per plane (exact for the equal split)."""
        cf = self.cf
        tr = self.clos_trunk
        ups = self.nic_up[a_nic]
        downs = self.nic_down[b_nic]
        planes = (ups >= 0).sum(axis=1)
        n = len(idx)
        # NIC up / down (trunk over planes)
        up_t = np.array([tr[("nic-up", int(x))] for x in a_nic], np.int64)
        dn_t = np.array([tr[("nic-down", int(x))] for x in b_nic], np.int64)
        rows.add(col(up_t))
        width = ups.shape[1]
        la = np.where(ups >= 0, cf.link_dst[np.maximum(ups, 0)], -1)
        lb = np.where(downs >= 0, cf.link_src[np.maximum(downs, 0)], -1)
        # align planes: for each plane of the source leaf pick the destination leaf of that plane
        plane_a = np.where(la >= 0, cf.node_plane[np.maximum(la, 0)], -2)
        plane_b = np.where(lb >= 0, cf.node_plane[np.maximum(lb, 0)], -3)
        for j in range(width):
            a_leaf = la[:, j]
            match = plane_b == plane_a[:, j:j + 1]
            has = match.any(axis=1) & (a_leaf >= 0)
            b_leaf = np.where(has, lb[np.arange(n), np.argmax(match, axis=1)], -1)
            w = np.where(has, 1.0 / np.maximum(planes, 1), 0.0)
            cross = has & (a_leaf != b_leaf)
            pa = cf.node_pod[np.maximum(a_leaf, 0)]
            pb = cf.node_pod[np.maximum(b_leaf, 0)]
            pl = cf.node_plane[np.maximum(a_leaf, 0)].astype(np.int64)
            inter_pod = cross & (pa != pb)
            cols = [
                ("leaf-up", np.where(cross, a_leaf, -1)),
                ("spine-up", np.where(inter_pod, pl * 1_000_000 + pa, -1)),
                ("core-down", np.where(inter_pod, pl * 1_000_000 + pb, -1)),
                ("spine-down", np.where(cross, b_leaf, -1)),
            ]
            for name, keys in cols:
                r = np.full(n, -1, np.int64)
                sel = keys >= 0
                if sel.any():
                    uk, inv = np.unique(keys[sel], return_inverse=True)
                    try:
                        mapped = np.array([tr[(name, int(k))] for k in uk], np.int64)
                    except KeyError:
                        raise UnreachableError(f"route: no {name} path between pods (separate rail groups "
                                               f"without cores); use pxn") from None
                    r[sel] = mapped[inv.ravel()]
                rows.add(col(r), col(w, 0.0))
        rows.add(col(dn_t))

    def _spray_explicit(self, idx, a_nic, b_nic, g, rows) -> None:
        """General spray: per-hop capacity-proportional split, every link listed."""
        cf = self.cf
        t = self.tables
        ups, cand = self._first_hop(a_nic, g)
        leaf = cf.link_dst[np.maximum(ups, 0)]
        reach = np.zeros(ups.shape)
        for gv in np.unique(g):
            m = g == gv
            reach[m] = self._reach(int(gv))[t["local"][leaf[m]]]
        capu = np.where(cand, np.minimum(cf.link_capacity_Bps[np.maximum(ups, 0)], reach), 0.0)
        w_first = capu / capu.sum(axis=1, keepdims=True)
        # fabric part per (start leaf, group) pair, vectorised over pairs
        starts = np.where(cand, cf.link_dst[np.maximum(ups, 0)], -1)
        pair_keys = np.stack([starts.ravel(), np.repeat(g, starts.shape[1])], axis=1)
        valid = pair_keys[:, 0] >= 0
        uniq, inv = np.unique(pair_keys[valid], axis=0, return_inverse=True)
        est = len(uniq) * 2 * max(1, int(np.diff(t["set_ptr"]).max(initial=1)))
        if est * 3 > self.max_entries:
            raise ProblemTooLargeError(
                f"spray routing over a non-pristine fabric needs ~{est:,} explicit link entries "
                f"(> {self.max_entries:,}); use --routing ecmp, fewer ranks, or fewer failures")
        p_link, p_w, arrive = self._propagate(uniq)
        # assemble per flow: first hop, fabric (per start leaf, scaled), last hop
        F = len(idx)
        n_all = rows.n
        per_pair_len = np.bincount(p_link[0], minlength=len(uniq))
        width_pair = int(per_pair_len.max(initial=0))
        order = np.argsort(p_link[0], kind="stable")
        pl_sorted, pw_sorted = p_link[1][order], p_w[order]
        off = np.r_[0, np.cumsum(per_pair_len)[:-1]]
        pr = np.full((len(uniq), max(width_pair, 1)), -1, np.int64)
        pw = np.zeros((len(uniq), max(width_pair, 1)))
        colpos = np.arange(len(pl_sorted)) - off[p_link[0][order]]
        pr[p_link[0][order], colpos] = pl_sorted
        pw[p_link[0][order], colpos] = pw_sorted
        pair_of = np.full(valid.shape, -1, np.int64)
        pair_of[valid] = inv.ravel()
        pair_of = pair_of.reshape(starts.shape)
        full_first = np.full((n_all, ups.shape[1]), -1, np.int64)
        full_wf = np.zeros((n_all, ups.shape[1]))
        full_first[idx] = np.where(cand, ups, -1)
        full_wf[idx] = np.where(cand, w_first, 0.0)
        rows.add(full_first, full_wf)
        downs = self.nic_down[b_nic]
        for j in range(starts.shape[1]):
            p = pair_of[:, j]
            ok = p >= 0
            rr = np.full((n_all, pr.shape[1]), -1, np.int64)
            ww = np.zeros((n_all, pr.shape[1]))
            rr[idx[ok]] = pr[p[ok]]
            ww[idx[ok]] = pw[p[ok]] * w_first[ok, j:j + 1]
            rows.add(rr, ww)
            # last hop: arrival fraction at each leaf of the group -> that leaf's link to the NIC
            arr = np.zeros(downs.shape)
            leaf_of_down = np.where(downs >= 0, cf.link_src[np.maximum(downs, 0)], -1)
            for c in range(downs.shape[1]):
                key = (p, leaf_of_down[:, c])
                arr[:, c] = np.where(ok & (leaf_of_down[:, c] >= 0),
                                     [arrive.get((int(a), int(b)), 0.0) for a, b in zip(*key)], 0.0) if F else 0.0
            # parallel cables from the same leaf split the arrival by capacity
            capd = np.where(downs >= 0, cf.link_capacity_Bps[np.maximum(downs, 0)], 0.0)
            same_leaf_cap = np.zeros_like(capd)
            for c in range(downs.shape[1]):
                same_leaf_cap[:, c] = (capd * (leaf_of_down == leaf_of_down[:, c:c + 1])).sum(axis=1)
            wl = np.where(capd > 0, arr * capd / np.where(same_leaf_cap > 0, same_leaf_cap, 1), 0.0) * w_first[:, j:j + 1]
            rr = np.full((n_all, downs.shape[1]), -1, np.int64)
            ww = np.zeros((n_all, downs.shape[1]))
            rr[idx] = np.where(wl > 0, downs, -1)
            ww[idx] = wl
            rows.add(rr, ww)

    def _reach(self, g: int) -> np.ndarray:
        """Capacity each switch can still push toward group ``g`` along shortest paths.

        ``R(u) = sum over next switches v of min(C(u, v), R(v))``, where ``C(u, v)`` is
        the capacity of u's links to v, with ``R = inf`` at the group's own leaves. A
        per-hop split that gives v the share ``min(C(u, v), R(v))`` (spread over the
        parallel links in proportion to capacity) does not pour traffic into a branch
        whose downstream links are degraded. On a fabric whose links are all equal this
        is the plain capacity split.
        """
        cache = self._reach_cache
        if g in cache:
            return cache[g]
        cf = self.cf
        t = self.tables
        dist = t["dist"][g]
        loc = t["local"]
        R = np.full(len(dist), np.inf)
        finite = dist[dist < _INF]
        for k in range(1, int(finite.max(initial=0)) + 1):
            us = np.flatnonzero(dist == k)
            sets = t["table"][us, g]
            lo = t["set_ptr"][sets]
            cnt = t["set_ptr"][sets + 1] - lo
            rep = np.repeat(np.arange(len(us)), cnt)
            pos = np.arange(cnt.sum()) - np.repeat(np.cumsum(cnt) - cnt, cnt)
            links = t["set_links"][lo[rep] + pos]
            share = self._branch_share(rep, links, R[loc[cf.link_dst[links]]])
            R[us] = np.bincount(rep, weights=share, minlength=len(us))
        cache[g] = R
        return R

    def _branch_share(self, row: np.ndarray, links: np.ndarray, reach_next: np.ndarray) -> np.ndarray:
        """Per link ``c_l * min(1, R(v) / C(u, v))``: the branch to next switch v gets ``min(C(u, v), R(v))``."""
        cf = self.cf
        cap = cf.link_capacity_Bps[links]
        key = row.astype(np.int64) * cf.n_nodes + cf.link_dst[links]
        _, inv = np.unique(key, return_inverse=True)
        inv = inv.ravel()
        C = np.bincount(inv, weights=cap)
        with np.errstate(invalid="ignore", divide="ignore"):
            factor = np.minimum(1.0, np.where(np.isinf(reach_next), 1.0, reach_next / C[inv]))
        return cap * factor

    def _propagate(self, pairs: np.ndarray):
        """Per-hop split from start leaf to group, for many (leaf, group) pairs at once.

        Returns ((pair ids, link ids), weights, arrival fractions {(pair, leaf): w}).
        """
        cf = self.cf
        t = self.tables
        loc = t["local"]
        P = len(pairs)
        f_pair = np.arange(P, dtype=np.int64)
        f_node = pairs[:, 0].astype(np.int64)
        f_w = np.ones(P)
        g_of = pairs[:, 1].astype(np.int64)
        out_p, out_l, out_w = [], [], []
        arrive: dict = {}
        for _ in range(64):
            d = t["dist"][g_of[f_pair], loc[f_node]]
            done = d == 0
            for pp, nn, ww in zip(f_pair[done], f_node[done], f_w[done]):
                arrive[(int(pp), int(nn))] = arrive.get((int(pp), int(nn)), 0.0) + float(ww)
            keep = ~done
            f_pair, f_node, f_w = f_pair[keep], f_node[keep], f_w[keep]
            if len(f_pair) == 0:
                break
            sets = t["table"][loc[f_node], g_of[f_pair]]
            lo = t["set_ptr"][sets]
            cnt = t["set_ptr"][sets + 1] - lo
            rep = np.repeat(np.arange(len(f_pair)), cnt)
            pos = np.arange(cnt.sum()) - np.repeat(np.cumsum(cnt) - cnt, cnt)
            links = t["set_links"][lo[rep] + pos]
            gg = g_of[f_pair[rep]]
            reach = np.empty(len(links))
            for gv in np.unique(gg):
                m = gg == gv
                reach[m] = self._reach(int(gv))[loc[cf.link_dst[links[m]]]]
            share = self._branch_share(rep, links, reach)
            tot = np.bincount(rep, weights=share, minlength=len(f_pair))
            w = f_w[rep] * share / tot[rep]
            out_p.append(f_pair[rep])
            out_l.append(links)
            out_w.append(w)
            nxt = cf.link_dst[links].astype(np.int64)
            key = f_pair[rep] * cf.n_nodes + nxt
            uk, inv = np.unique(key, return_inverse=True)
            f_w = np.bincount(inv.ravel(), weights=w)
            f_pair = uk // cf.n_nodes
            f_node = uk % cf.n_nodes
        if out_p:
            pp = np.concatenate(out_p)
            ll = np.concatenate(out_l)
            ww = np.concatenate(out_w)
            key = pp * cf.n_links + ll
            uk, inv = np.unique(key, return_inverse=True)
            return (uk // cf.n_links, uk % cf.n_links), np.bincount(inv.ravel(), weights=ww), arrive
        return (np.zeros(0, np.int64), np.zeros(0, np.int64)), np.zeros(0), arrive


def _split_by(keys: np.ndarray, values: np.ndarray):
    """Yield (key, values) runs of a key-sorted pair of arrays."""
    if len(keys) == 0:
        return
    cuts = np.flatnonzero(np.diff(keys)) + 1
    starts = np.r_[0, cuts]
    ends = np.r_[cuts, len(keys)]
    for s, e in zip(starts, ends):
        yield keys[s], values[s:e]
