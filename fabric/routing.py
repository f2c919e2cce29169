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
  sender first moves the data over NVLink to a GPU on the destination's rail, so
  that GPU's NIC carries the flow: with scope ``"host"`` the GPU of the sender's
  host (compute tray) with the destination's index inside its host, as NCCL's PXN
  does (it relays only inside a host); with scope ``"domain"`` (``pxn=True``) the
  GPU of the sender's NVLink domain with the destination's domain-local index.

Resources are links or *trunks*: sets of parallel links that every flow crossing
them splits over equally (a GPU's NVLink ports; under spraying a leaf's up-links,
a pod's up-links, the links into a leaf). Merging them keeps four or six entries
per flow instead of hundreds and is exact for equal splits; the router only
trunks where the fabric is pristine (no failed or degraded link in the trunk's
scope) and otherwise lists every link with its weight. The resource and trunk indexes
live in :mod:`fabric.resources`.

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

import numpy as np

from fabric import route_kernels
from fabric.allocator import reuse_freed_memory
from fabric.compiled import CompiledFabric
from fabric.hashing import dmodk_keys, ecmp_pick, flow_hash, splitmix64
from fabric.resources import TRANSPORTS, _ResourcesMixin
from fabric.routes import Routes, _Rows
from fabric.spray import _SprayMixin
from fabric.tables import _TablesMixin
from topologies.errors import RoutingError, UnreachableError
from topologies.graph import ROLES

__all__ = ["POLICIES", "PXN_SCOPES", "TRANSPORTS", "Routes", "Router", "splitmix64", "flow_hash", "ecmp_pick"]

POLICIES = ("ecmp", "dmodk", "spray")
#: Where a PXN relay may sit: the sender's NVLink domain, or (NCCL) the sender's host inside it.
PXN_SCOPES = ("domain", "host")

_R = {r: i for i, r in enumerate(ROLES)}
_INF = np.iinfo(np.int32).max // 4


class Router(_ResourcesMixin, _TablesMixin, _SprayMixin):
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
        pxn : bool or {"domain", "host"}
            Forward inter-domain flows over NVLink to the GPU on the destination's
            rail first. ``True`` / ``"domain"``: the GPU of the sender's NVLink domain with the
            destination's domain-local index (kernels that relay across the domain);
            ``"host"``: the GPU of the sender's host (compute tray) with the destination's index
            inside its host, as NCCL's PXN does (it relays only inside a host; on HGX boards host and
            domain coincide). Flows whose rails only meet over NVLink use it regardless.

        Raises
        ------
        RoutingError
            Unknown policy or rank.
        UnreachableError
            A pair has no path (e.g. after failures).
        """
        if policy not in POLICIES:
            raise RoutingError(f"routing: {policy!r} is not one of {', '.join(POLICIES)}")
        if pxn is None:
            pxn = False
        if not (isinstance(pxn, (bool, np.bool_)) or pxn in PXN_SCOPES):
            raise RoutingError(f"pxn: {pxn!r} must be true, false or one of {', '.join(PXN_SCOPES)}")
        if pxn == "domain":
            pxn = True
        cf = self.cf
        src = np.asarray(src, dtype=np.int64).ravel()
        dst = np.asarray(dst, dtype=np.int64).ravel()
        if src.shape != dst.shape:
            raise RoutingError(f"src/dst: {len(src)} sources but {len(dst)} destinations")
        F = len(src)
        reuse_freed_memory(entries=4 * F)  # large runs: freed temporaries are reused, not faulted in again
        salt = np.arange(F, dtype=np.int64) if salt is None else np.broadcast_to(np.asarray(salt, np.int64), (F,))
        if F and route_kernels.use(F * 6):
            # the compiled walk checks the ranks itself (None on any out of range: the check below says which)
            fast = route_kernels.route_plain(self, src, dst, salt, policy, seed, pxn)  # None: not network-only
            if fast is not None:
                return Routes(src=src, dst=dst, res=fast[0], weight=None, latency_s=fast[1], policy=policy,
                              pxn=np.zeros(F, bool))
        for name, arr in (("src", src), ("dst", dst)):
            if len(arr) and (arr.min() < 0 or arr.max() >= cf.n_gpus):
                bad = int(arr[(arr < 0) | (arr >= cf.n_gpus)][0])
                raise RoutingError(f"{name}: rank {bad} is not a GPU of {cf.name!r} (ranks 0..{cf.n_gpus - 1})")
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
            if rows.width < res.shape[1]:  # the table is not pre-filled: pad this chunk's unused columns
                res[a:b, rows.width:] = -1
                if part_w is not None:
                    part_w[:, rows.width:] = 0.0
            if part_w is None and 0 < res.shape[1] <= 7 and rows.res:
                lat[a:b] = self._rows_latency(rows, res.shape[1])  # the chunk's own contiguous columns
            else:
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
        """A wider (or weighted) table; rows of chunks not routed yet are left unset (their chunk writes every
        column), so the F x h table is written once instead of being pre-filled with -1 first."""
        new_res = np.empty((F, width), np.int32)
        new_w = np.zeros((F, width)) if (weighted or w is not None) else None
        if res is not None:
            new_res[:, :res.shape[1]] = res
            new_res[:, res.shape[1]:] = -1
            if new_w is not None:
                new_w[:, :res.shape[1]] = w if w is not None else np.where(res >= 0, 1.0, 0.0)
        return new_res, new_w

    def _path_latency(self, res: np.ndarray, w: np.ndarray | None) -> np.ndarray:
        """Weighted sum of the latencies of every resource a flow crosses (the mean path latency)."""
        if "latency_ext" not in self._cache:
            self._cache["latency_ext"] = np.append(self.resource_latency_s(), 0.0)  # index -1 -> 0
        ext = self._cache["latency_ext"]
        h = res.shape[1]
        if not 0 < h <= 7:
            lat = ext[res]
            return (lat if w is None else lat * w).sum(axis=1)
        # one hop column at a time, added left to right: numpy's row sum over fewer than 8 columns adds in
        # the same order, so the result is bit-identical, without the F x h temporaries
        lat = ext[res[:, 0]] if w is None else ext[res[:, 0]] * w[:, 0]
        for j in range(1, h):
            lat += ext[res[:, j]] if w is None else ext[res[:, j]] * w[:, j]
        return lat

    def _rows_latency(self, rows: _Rows, h: int) -> np.ndarray:
        """:meth:`_path_latency` of an unweighted chunk of table width ``h`` (1-7) from the router's own
        columns (contiguous, where the table's are strided): the same additions in the same order (column by
        column, left to right, then the padding's 0.0 once per padded column), so the same bits."""
        if "latency_ext" not in self._cache:
            self._cache["latency_ext"] = np.append(self.resource_latency_s(), 0.0)  # index -1 -> 0
        ext = self._cache["latency_ext"]
        cols = [r[:, j] for r in rows.res for j in range(r.shape[1])]
        lat = ext.take(cols[0])
        for c in cols[1:]:
            lat += ext.take(c)
        for _ in range(h - len(cols)):  # padded columns: ext[-1] = 0.0, added as the table's row sum does
            lat += 0.0
        return lat

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
            everyone = bool(inter.all())
            idx = np.arange(F) if everyone else np.flatnonzero(inter)
            sub = _subset(idx, everyone)
            send = ga
            a_nic, b_nic = self.nic_of[sub(ga)], self.nic_of[sub(gb)]
            reach = self._reachable(a_nic, b_nic)
            known = (a_nic, b_nic, reach)  # the scale-out segment's NICs and reachability while no flow relays
            # a relay needs an NVLink domain (``use`` below is False everywhere without one): skip its lookups
            if (pxn or not reach.all()) and self.domain_has_nvlink.any():
                row, col, table = self.pxn_tables("host" if pxn == "host" else "domain")
                col_b = col[sub(gb)]
                row_a = row[sub(ga)]
                dom_a = sub(da)
                ok = (col_b >= 0) & (col_b < table.shape[1]) & (row_a >= 0) & (dom_a >= 0)
                prox = np.where(ok, table[np.maximum(row_a, 0), np.clip(col_b, 0, table.shape[1] - 1)], -1)
                use = (prox >= 0) & (prox != sub(src)) & self.domain_has_nvlink[np.maximum(dom_a, 0)]
                if not pxn:
                    use &= ~reach
                if use.any():
                    k = idx[use]
                    send = ga.copy()
                    send[k] = cf.gpus[prox[use]]
                    used_pxn[k] = True
                    known = None
                    self._route_nvlink(k, ga, send, rows)
            self._route_scaleout(idx, send, gb, policy, seed, salt, src, dst, rows, known)
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

    def _route_scaleout(self, idx, send, gb, policy, seed, salt, src, dst, rows: _Rows, known=None) -> None:
        """The network segment of flows ``idx``; ``known``: their ``(a_nic, b_nic, reachable)`` when the caller
        has them for these senders (no flow relayed over PXN), else None (computed here)."""
        cf = self.cf
        n = len(send)
        everyone = len(idx) == n
        sub = _subset(idx, everyone)
        if known is None:
            a_nic = self.nic_of[sub(send)]
            b_nic = self.nic_of[sub(gb)]
            reach = None
        else:
            a_nic, b_nic, reach = known
        if (a_nic < 0).any() or (b_nic < 0).any():
            i = int(np.flatnonzero((a_nic < 0) | (b_nic < 0))[0])
            a, b = int(send[idx][i]), int(gb[idx][i])
            same = cf.node_domain[a] == cf.node_domain[b]
            why = ("no working NVLink path joins them (their NVSwitch links are failed) and the domain has no "
                   "(working) NIC to go around over the network" if same else
                   "they are in different NVLink domains and one of them has no (working) NIC")
            raise UnreachableError(f"route: {cf.node_names[a]} -> {cf.node_names[b]}: {why}")
        if reach is None:
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

        up_host = self.host_up[sub(send)]
        down_host = self.host_down[sub(gb)]
        rows.add(col(up_host))
        if policy == "spray" and self.clos_pristine:
            self._spray_trunks(idx, a_nic, b_nic, rows, col)
        elif policy == "spray":
            self._spray_explicit(idx, a_nic, b_nic, self.group_of[b_nic], rows)
        else:
            self._walk(idx, a_nic, b_nic, self.group_of[b_nic], policy, seed, sub(salt), sub(src), sub(dst), rows,
                       col)
        rows.add(col(down_host))


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


def _subset(idx: np.ndarray, everyone: bool):
    """``a -> a[idx]``, or the array itself when ``idx`` is every flow of the chunk (no gathered copies)."""
    return (lambda a: a) if everyone else (lambda a: a[idx])
