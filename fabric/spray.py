"""Spraying: every flow split over all its shortest paths (the fluid limit of packet spraying).

On a pristine Clos the split is exact with one trunk per (tier, node) or per
(tier, plane, pod), looked up from dense arrays; elsewhere every link is listed
with its capacity-proportional weight, propagated hop by hop from each start
leaf (with the downstream capacity each branch can still carry).
:class:`fabric.routing.Router` mixes these in.

Examples
--------
>>> from topologies.clos import fat_tree
>>> from fabric.compiled import compile_fabric
>>> from fabric.routing import Router
>>> r = Router(compile_fabric(fat_tree(hosts=16, radix=8)))
>>> r.route([0], [15], policy="spray").res.shape[1] >= 4
True
"""

from __future__ import annotations

import numpy as np

from topologies.errors import ProblemTooLargeError, UnreachableError
from topologies.graph import ROLES, TIERS

__all__: list[str] = []

_R = {r: i for i, r in enumerate(ROLES)}
_T = {t: i for i, t in enumerate(TIERS)}
_INF = np.iinfo(np.int32).max // 4  # "unreachable" hop distance


class _SprayMixin:
    """Spray routing of :class:`fabric.routing.Router` (internal)."""

    def _spray_trunks(self, idx, a_nic, b_nic, rows, col) -> None:
        """Pristine Clos: trunk entries per plane (exact for the equal split)."""
        cf = self.cf
        ups = self.nic_up[a_nic]
        downs = self.nic_down[b_nic]
        planes = (ups >= 0).sum(axis=1)
        n = len(idx)
        look = self._clos_lookup()
        # NIC up / down (trunk over planes)
        up_t = look["nic-up"][a_nic]
        dn_t = look["nic-down"][b_nic]
        rows.add(col(up_t))
        width = ups.shape[1]
        la = np.where(ups >= 0, cf.link_dst[np.maximum(ups, 0)], -1)
        lb = np.where(downs >= 0, cf.link_src[np.maximum(downs, 0)], -1)
        # align planes: for each plane of the source leaf pick the destination leaf of that plane
        plane_a = np.where(la >= 0, cf.node_plane[np.maximum(la, 0)], -2)
        plane_b = np.where(lb >= 0, cf.node_plane[np.maximum(lb, 0)], -3)
        single = width == 1 and downs.shape[1] == 1  # one plane a NIC: no plane alignment to search
        for j in range(width):
            a_leaf = la[:, j]
            if single:
                has = (plane_b[:, 0] == plane_a[:, 0]) & (a_leaf >= 0)
                b_leaf = np.where(has, lb[:, 0], -1)
                w = has.astype(np.float64)  # 1 / max(planes, 1) is 1 where a plane matches
            else:
                match = plane_b == plane_a[:, j:j + 1]
                has = match.any(axis=1) & (a_leaf >= 0)
                b_leaf = np.where(has, lb[np.arange(n), np.argmax(match, axis=1)], -1)
                w = np.where(has, 1.0 / np.maximum(planes, 1), 0.0)
            cross = has & (a_leaf != b_leaf)
            pa = cf.node_pod[np.maximum(a_leaf, 0)]
            pb = cf.node_pod[np.maximum(b_leaf, 0)]
            pl = cf.node_plane[np.maximum(a_leaf, 0)].astype(np.int64)
            inter_pod = cross & (pa != pb)
            any_inter = bool(inter_pod.any())
            cols = [
                ("leaf-up", cross, look["leaf-up"][np.maximum(a_leaf, 0)]),
                ("spine-up", inter_pod, look["spine-up"][pl, np.maximum(pa, 0)] if any_inter else None),
                ("core-down", inter_pod, look["core-down"][pl, np.maximum(pb, 0)] if any_inter else None),
                ("spine-down", cross, look["spine-down"][np.maximum(b_leaf, 0)]),
            ]
            if not any_inter and not look["pod_tier"]:
                # no spine-up / core-down trunks (a two-tier Clos): no chunk can fill these columns (a flow
                # between pods is unreachable and raises), so they are not written as -1 and dropped later
                del cols[1:3]
            for name, sel, mapped in cols:
                if mapped is None:
                    r = np.full(n, -1, np.int64)
                else:
                    r = np.where(sel, mapped, -1)
                    if (sel & (r < 0)).any():
                        raise UnreachableError(f"route: no {name} path between pods (separate rail groups "
                                               f"without cores); use pxn")
                rows.add(col(r), col(w, 0.0))
        rows.add(col(dn_t))

    def _clos_lookup(self) -> dict:
        """Dense arrays of the Clos trunk ids (-1: none): per node, and per (plane, pod) for the pod tiers."""
        if "clos_lookup" in self._cache:
            return self._cache["clos_lookup"]
        n = self.cf.n_nodes
        out = {name: np.full(n, -1, np.int64) for name in ("nic-up", "nic-down", "leaf-up", "spine-down")}
        pk = [(name, k) for name, k in self.clos_trunk if name in ("spine-up", "core-down")]
        planes = max([k // 1_000_000 for _, k in pk] + [int(self.cf.node_plane.max(initial=0))]) + 1
        pods = max([k % 1_000_000 for _, k in pk] + [int(self.cf.node_pod.max(initial=0))]) + 1
        for name in ("spine-up", "core-down"):
            out[name] = np.full((planes, pods), -1, np.int64)
        for (name, k), t in self.clos_trunk.items():
            if name in ("spine-up", "core-down"):
                out[name][k // 1_000_000, k % 1_000_000] = t
            else:
                out[name][k] = t
        out["pods"] = pods
        out["pod_tier"] = bool((out["spine-up"] >= 0).any() or (out["core-down"] >= 0).any())
        self._cache["clos_lookup"] = out
        return out

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
