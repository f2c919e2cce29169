"""Compiled kernels (numba) of the router and the problem build: the scale-out walk, NIC connection counts
and the problem's local ids.

Each kernel reproduces a numpy computation of :mod:`fabric.routing`, :mod:`fabric.flowset` or
:mod:`collectives.p2p` entry by entry and gives **bit-identical** arrays (same hash choices, same routes,
same ids, same floats: the path latency adds its hop columns in numpy's order); the
numpy code stays the reference and the default below :data:`MIN_ENTRIES` (``fabric.kernels.use_compiled``).

* :func:`route_plain`: every flow of a route call on the network only (no NVLink segment, no PXN
  forwarding: flows between NVLink domains without PXN or from a GPU already on the destination's rail; one
  NIC port per plane side; a connected switch network), with ECMP, d-mod-k or spraying over the trunks
  of a pristine single-plane Clos. A first pass checks every flow and finds each chunk's path length
  (from the forwarding tables' hop distances); the second walks every flow once and writes its row of
  the route table, its path latency and the used columns. Where a flow does not qualify (or would
  raise), the function returns None and the router runs its numpy path (which raises the same errors).
* :func:`nic_connections`: per resource, the entries of a route table; per flow, the largest count over
  its NIC ports (two passes over the table instead of one bincount and one gather per hop column).
* :func:`nic_peer_ports`: per flow, the most distinct remote NIC ports of a NIC port it crosses (a bitmap of
  the port pairs that occur instead of a sort).
* :func:`p2p_latency`: the point-to-point flows' latency (path + software latency by domain) in one pass.
* :func:`all_pairs`: an all-to-all's ordered rank pairs, row by row.
* :func:`used_mark` and :func:`local_ids`: the resources a table uses, and the table in the problem's
  compact ids (one pass each).

The kernels are compiled on first use and cached where :func:`fabric.kernels.available` points numba.

Examples
--------
>>> MIN_ENTRIES > 0
True
"""

from __future__ import annotations

import numpy as np

from fabric import kernels

__all__ = ["MIN_ENTRIES", "MIN_PAIRS", "use", "route_plain", "nic_connections", "nic_peer_ports", "p2p_latency",
           "nic_fan_connections", "all_pairs", "used_mark", "local_ids"]

#: Route-table entries (flows x hop columns) from which ``auto`` uses these kernels: below it numba's
#: import and cache load (~0.4 s, docs/performance.md) cost more than the numpy passes they replace.
MIN_ENTRIES = 1 << 24

_STATE: dict = {}
_M64 = 0xFFFFFFFFFFFFFFFF
#: ECMP hop ids the walk uses (1..64 in the switch network, 99 for the last hop's parallel cables)
_HOPS = 100


def use(entries: int) -> bool:
    """Whether a table of ``entries`` entries is handled by the compiled kernels (``FABRIC_EMU_KERNELS``)."""
    return kernels.use_compiled(int(entries), min_entries=MIN_ENTRIES)


def _k() -> dict:
    if "k" not in _STATE:
        kernels.available()  # sets numba's cache folder before numba is imported
        _STATE["k"] = _compile()
    return _STATE["k"]


def _hop_salts() -> np.ndarray:
    """uint64[_HOPS]: the constant :func:`fabric.hashing.ecmp_pick` mixes into the flow hash at each hop."""
    return np.array([((hop // 2) * 0x9E3779B97F4A7C15) & _M64 for hop in range(_HOPS)], np.uint64)


def _compile() -> dict:
    from numba import njit, prange

    @njit(cache=True, nogil=True)
    def plan_pass(src, dst, gpus, node_domain, has_nv, pxn, rank_at, pxn_row, pxn_col, nic_of, nic_up0, nic_down0,
                  link_dst, link_src, local, group_of, dist, node_plane, node_pod, spray, chunk, kc, inter):
        """Checks every flow (0 = all qualify) and writes each chunk's walk length ``kc`` (ECMP / d-mod-k)
        or whether the chunk has a flow between pods (spray)."""
        F = src.shape[0]
        nd = has_nv.shape[0]
        ng = gpus.shape[0]
        for f in range(F):
            c = f // chunk
            if src[f] < 0 or src[f] >= ng or dst[f] < 0 or dst[f] >= ng:
                return 8  # not a rank: the router's check raises
            if src[f] == dst[f]:
                return 1
            ga = gpus[src[f]]
            gb = gpus[dst[f]]
            da = node_domain[ga]
            if max(da, 0) >= nd:
                return 2
            if has_nv[max(da, 0)]:  # the numpy path's tests for an NVLink segment and for PXN
                if da == node_domain[gb]:
                    return 2  # inside one NVLink domain
                ra = pxn_row[ga]
                cb = pxn_col[gb]
                if pxn and da >= 0 and ra >= 0 and 0 <= cb < rank_at.shape[1]:
                    prox = rank_at[ra, cb]  # the relay of the PXN scope (Router.pxn_tables)
                    if prox >= 0 and prox != src[f]:
                        return 2  # forwarded over NVLink to the GPU on the destination's rail first
            an = nic_of[ga]
            bn = nic_of[gb]
            if an < 0 or bn < 0:
                return 3
            first = nic_up0[an]
            last = nic_down0[bn]
            if first < 0 or last < 0:
                return 4
            if spray:
                la = link_dst[first]
                lb = link_src[last]
                if node_plane[la] != node_plane[lb]:
                    return 5
                if la != lb and node_pod[la] != node_pod[lb]:
                    inter[c] = True
            else:
                loc = local[link_dst[first]]
                g = group_of[bn]
                if loc < 0 or g < 0:
                    return 6
                d = dist[g, loc]
                if d >= 63:
                    return 7  # unreachable or longer than the numpy walk allows: it raises
                if d > kc[c]:
                    kc[c] = d
        return 0

    @njit(cache=True, nogil=True, parallel=True)
    def walk_write(src, dst, salt, seed_mix, gpus, nic_of, nic_up0, nic_down0, host_up, host_down, link_dst,
                   link_src, local, group_of, ng, set_lo, set_cnt, set_links, level, dkey, dmodk, salts,
                   chunk, kc, grown, ext, res, lat, keep):
        """ECMP / d-mod-k rows: host-up, NIC-up, one column per switch hop (the chunk's length), NIC-down,
        host-down, -1 to the table's width; the path latency added column by column."""
        F, W = res.shape
        nl = set_links.shape[0]
        ne = ext.shape[0]
        nb = (F + 65535) // 65536  # blocks of flows, one per task: each writes its own rows
        bad = np.zeros(nb, np.int64)
        keeps = np.zeros((nb, W), np.bool_)
        for b in prange(nb):
            for f in range(b * 65536, min(F, (b + 1) * 65536)):
                K = kc[f // chunk]
                ga = gpus[src[f]]
                gb = gpus[dst[f]]
                an = nic_of[ga]
                bn = nic_of[gb]
                g = group_of[bn]
                first = nic_up0[an]
                res[f, 0] = host_up[ga]
                res[f, 1] = first
                if dmodk:
                    d = dkey[bn]
                    h = np.uint64(0)
                else:
                    d = 0
                    x = (np.uint64(src[f]) * np.uint64(0x100000001B3)) ^ (np.uint64(dst[f]) << np.uint64(21)) \
                        ^ (np.uint64(salt[f]) * np.uint64(0xD6E8FEB86659FD93))
                    z = (x ^ seed_mix) + np.uint64(0x9E3779B97F4A7C15)  # splitmix64 (written out: a cached kernel
                    z = (z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)  # calls no other kernel)
                    z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
                    h = z ^ (z >> np.uint64(31))
                prod = 1
                cur = link_dst[first]
                for s in range(K):
                    key = local[cur] * ng + g
                    c = set_cnt[key]
                    if c > 0:
                        lo = set_lo[key]
                        if dmodk:
                            up = level[link_dst[set_links[min(lo, nl - 1)]]] > level[cur]
                            k = ((d // prod) % c) if up else (d % c)
                            if up and c > 1:
                                prod *= c
                        else:  # fabric.hashing.ecmp_pick at hop s + 1
                            hop = s + 1
                            base = h
                            if hop >= 2:
                                z = (h ^ salts[hop]) + np.uint64(0x9E3779B97F4A7C15)
                                z = (z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
                                z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
                                base = z ^ (z >> np.uint64(31))
                            x = (base >> np.uint64(32)) if hop % 2 == 0 else (base & np.uint64(0xFFFFFFFF))
                            k = np.int64((x * np.uint64(c)) >> np.uint64(32))
                        link = set_links[lo + k]
                        cur = link_dst[link]
                        res[f, 2 + s] = link
                    else:
                        res[f, 2 + s] = -1
                if set_cnt[local[cur] * ng + g] > 0:
                    bad[b] = f + 1
                    break  # the walk would go on (inconsistent tables): the numpy path
                last = nic_down0[bn]
                if link_src[last] != cur:
                    bad[b] = f + 1
                    break  # the numpy path raises
                res[f, 2 + K] = last
                res[f, 3 + K] = host_down[gb]
                for j in range(4 + K, W):
                    res[f, j] = -1
                # the path latency, as numpy's row sum over the chunk's table width (-1: the 0.0 in ext's last slot):
                # below 8 columns left to right, from 8 on its pairwise sum (8 partial sums, combined in pairs)
                Wc = grown[f // chunk]
                if Wc < 8:
                    r = res[f, 0]
                    acc = ext[r] if r >= 0 else ext[ne - 1]
                    for j in range(1, Wc):
                        r = res[f, j]
                        acc += ext[r] if r >= 0 else ext[ne - 1]
                else:  # eight partial sums (an array of the flow's own: private to its task)
                    q = np.empty(8)
                    for j in range(8):
                        r = res[f, j]
                        q[j] = ext[r] if r >= 0 else ext[ne - 1]
                    i = 8
                    while i < Wc - Wc % 8:
                        for j in range(8):
                            r = res[f, i + j]
                            q[j] += ext[r] if r >= 0 else ext[ne - 1]
                        i += 8
                    acc = ((q[0] + q[1]) + (q[2] + q[3])) + ((q[4] + q[5]) + (q[6] + q[7]))
                    for j in range(i, Wc):
                        r = res[f, j]
                        acc += ext[r] if r >= 0 else ext[ne - 1]
                lat[f] = acc
                for j in range(W):
                    if res[f, j] >= 0:
                        keeps[b, j] = True
        for b in range(nb):
            if bad[b]:
                return bad[b]  # the walk would go on or the numpy path raises: the numpy path
            for j in range(W):
                if keeps[b, j]:
                    keep[j] = True
        return 0

    @njit(cache=True, nogil=True)
    def spray_write(src, dst, gpus, nic_of, nic_up0, nic_down0, host_up, host_down, link_dst, link_src,
                    node_plane, node_pod, t_nic_up, t_nic_down, t_leaf_up, t_spine_down, t_spine_up,
                    t_core_down, chunk, pods_col, grown, ext, res, lat, keep):
        """Spray rows over single-plane Clos trunks: host-up, NIC-up trunk, leaf-up, [spine-up, core-down],
        spine-down, NIC-down trunk, host-down (``pods_col[c]``: the chunk has the two pod columns)."""
        F, W = res.shape
        ne = ext.shape[0]
        part = np.empty(8)
        for f in range(F):
            P = 2 if pods_col[f // chunk] else 0
            ga = gpus[src[f]]
            gb = gpus[dst[f]]
            an = nic_of[ga]
            bn = nic_of[gb]
            la = link_dst[nic_up0[an]]
            lb = link_src[nic_down0[bn]]
            cross = la != lb
            inter_pod = cross and node_pod[la] != node_pod[lb]
            res[f, 0] = host_up[ga]
            res[f, 1] = t_nic_up[an]
            v = t_leaf_up[la] if cross else -1
            if cross and v < 0:
                return f + 1
            res[f, 2] = v
            if P:
                pl = node_plane[la]
                v1 = t_spine_up[pl, node_pod[la]] if inter_pod else -1
                v2 = t_core_down[pl, node_pod[lb]] if inter_pod else -1
                if inter_pod and (v1 < 0 or v2 < 0):
                    return f + 1
                res[f, 3] = v1
                res[f, 4] = v2
            v = t_spine_down[lb] if cross else -1
            if cross and v < 0:
                return f + 1
            res[f, 3 + P] = v
            res[f, 4 + P] = t_nic_down[bn]
            res[f, 5 + P] = host_down[gb]
            for j in range(6 + P, W):
                res[f, j] = -1
            # the same row sum as walk_write's, written out again on purpose: a cached kernel that calls another
            # compiled function is recompiled in every process (numba's cache), which costs more than it saves
            Wc = grown[f // chunk]
            if Wc < 8:
                r = res[f, 0]
                acc = ext[r] if r >= 0 else ext[ne - 1]
                for j in range(1, Wc):
                    r = res[f, j]
                    acc += ext[r] if r >= 0 else ext[ne - 1]
            else:
                for j in range(8):
                    r = res[f, j]
                    part[j] = ext[r] if r >= 0 else ext[ne - 1]
                i = 8
                while i < Wc - Wc % 8:
                    for j in range(8):
                        r = res[f, i + j]
                        part[j] += ext[r] if r >= 0 else ext[ne - 1]
                    i += 8
                acc = ((part[0] + part[1]) + (part[2] + part[3])) + ((part[4] + part[5]) + (part[6] + part[7]))
                for j in range(i, Wc):
                    r = res[f, j]
                    acc += ext[r] if r >= 0 else ext[ne - 1]
            lat[f] = acc
            for j in range(W):
                if res[f, j] >= 0:
                    keep[j] = True
        return 0

    @njit(cache=True, nogil=True)
    def nic_kernel(res, nic_slot, counts, per, want_per):
        F, h = res.shape
        for f in range(F):
            for j in range(h):
                counts[res[f, j] + 1] += 1
        lo = np.int64(-1)
        hi = np.int64(0)
        for f in range(F):
            m = np.int64(0)
            for j in range(h):
                s = res[f, j] + 1
                if nic_slot[s] and counts[s] > m:
                    m = counts[s]
            if want_per:
                per[f] = m
            if m > 0 and (lo < 0 or m < lo):
                lo = m
            if m > hi:
                hi = m
        return lo, hi

    @njit(cache=True, nogil=True)
    def mark_kernel(res, mark):
        F, h = res.shape
        for f in range(F):
            for j in range(h):
                r = res[f, j]
                if r >= 0:
                    mark[r] = True

    @njit(cache=True, nogil=True)
    def local_kernel(res, lookup, out):
        F, h = res.shape
        for f in range(F):
            for j in range(h):
                r = res[f, j]
                out[f, j] = lookup[r] if r >= 0 else -1

    @njit(cache=True, nogil=True)
    def p2p_latency_kernel(src, dst, domain, path_s, inter_s, intra_s, out):
        n_inter = 0
        for f in range(src.shape[0]):
            if domain[src[f]] != domain[dst[f]]:
                out[f] = path_s[f] + inter_s
                n_inter += 1
            else:
                out[f] = path_s[f] + intra_s
        return n_inter

    @njit(cache=True, nogil=True, parallel=True)
    def peer_kernel(res, code, up_code, dn_code, max_pairs, out, as_conn):
        # per flow: its largest nic-up and nic-down resource; per port: the distinct ports it pairs with
        F, h = res.shape
        R = code.shape[0]
        up = np.full(F, -1, np.int64)
        dn = np.full(F, -1, np.int64)
        rank_u = np.zeros(R, np.int64)
        rank_d = np.zeros(R, np.int64)
        for f in prange(F):  # each flow its own entries (in parallel)
            u = -1
            d = -1
            for j in range(h):
                r = res[f, j]
                if r < 0:
                    continue
                c = code[r]
                if c == up_code and r > u:
                    u = r
                elif c == dn_code and r > d:
                    d = r
            up[f] = u
            dn[f] = d
        any_both = False
        for f in range(F):  # the ports that occur (sequential: shared marks)
            if up[f] >= 0 and dn[f] >= 0:
                rank_u[up[f]] = 1
                rank_d[dn[f]] = 1
                any_both = True
        if not any_both:
            for f in range(F):  # as connections: 1 on a flow that crosses one NIC port
                out[f] = 1 if as_conn and (up[f] >= 0 or dn[f] >= 0) else 0
            return True
        nu = 0
        nd = 0
        for r in range(R):  # the ports that occur, numbered in order
            if rank_u[r]:
                rank_u[r] = nu
                nu += 1
            else:
                rank_u[r] = -1
            if rank_d[r]:
                rank_d[r] = nd
                nd += 1
            else:
                rank_d[r] = -1
        if nu * nd > max_pairs:
            return False
        seen = np.zeros(nu * nd, np.bool_)
        fan_u = np.zeros(nu, np.int64)
        fan_d = np.zeros(nd, np.int64)
        for f in range(F):
            if up[f] >= 0 and dn[f] >= 0:
                iu = rank_u[up[f]]
                idn = rank_d[dn[f]]
                k = iu * nd + idn
                if not seen[k]:
                    seen[k] = True
                    fan_u[iu] += 1
                    fan_d[idn] += 1
        for f in prange(F):
            if up[f] >= 0 and dn[f] >= 0:
                a = fan_u[rank_u[up[f]]]
                b = fan_d[rank_d[dn[f]]]
                out[f] = a if a > b else b  # >= 1: the flow's own pair
            else:
                out[f] = 1 if as_conn and (up[f] >= 0 or dn[f] >= 0) else 0
        return True

    @njit(cache=True, nogil=True)
    def pairs_kernel(ranks, s, d):
        n = ranks.shape[0]
        p = 0
        for i in range(n):
            for j in range(n):
                if ranks[i] != ranks[j]:
                    s[p] = ranks[i]
                    d[p] = ranks[j]
                    p += 1
        return p

    return dict(plan=plan_pass, walk=walk_write, spray=spray_write, nic=nic_kernel, mark=mark_kernel,
                local=local_kernel, p2p_latency=p2p_latency_kernel, peer=peer_kernel, pairs=pairs_kernel)


def route_plain(router, src: np.ndarray, dst: np.ndarray, salt: np.ndarray, policy: str, seed: int, pxn=False):
    """``(res, latency_s)`` of :meth:`fabric.routing.Router.route` for flows on the network only, or None
    when a flow does not qualify (see the module docstring); bit-identical to the numpy path."""
    cf = router.cf
    F = len(src)
    if F == 0 or router.nic_up.shape[1] != 1 or router.nic_down.shape[1] != 1:
        return None
    spray = policy == "spray"
    if spray and not router.clos_pristine:
        return None
    t = router.tables
    if not t["connected"] or t["dist"].size == 0:
        return None
    k = _k()
    chunk = router.chunk_flows
    n_chunks = -(-F // chunk)
    kc = np.zeros(n_chunks, np.int64)
    inter = np.zeros(n_chunks, np.bool_)
    nic_up0 = np.ascontiguousarray(router.nic_up[:, 0])
    nic_down0 = np.ascontiguousarray(router.nic_down[:, 0])
    look = router._clos_lookup() if spray else None
    row, col, table = router.pxn_tables("host" if pxn == "host" else "domain")
    status = k["plan"](src, dst, cf.gpus, cf.node_domain, router.domain_has_nvlink, bool(pxn), table,
                       row, col, router.nic_of, nic_up0,
                       nic_down0, cf.link_dst, cf.link_src, t["local"], router.group_of, t["dist"],
                       cf.node_plane, cf.node_pod, spray, chunk, kc, inter)
    if status:
        return None
    if spray:
        pods_col = inter | bool(look["pod_tier"])
        widths = np.where(pods_col, 8, 6)
    else:
        widths = 4 + kc
    grown = np.maximum.accumulate(widths)  # the numpy path's table width when it routes each chunk
    W = int(grown[-1])
    res = np.empty((F, W), np.int32)
    lat = np.empty(F)
    keep = np.zeros(W, np.bool_)
    if "latency_ext" not in router._cache:
        router._cache["latency_ext"] = np.append(router.resource_latency_s(), 0.0)
    ext = router._cache["latency_ext"]
    if spray:
        status = k["spray"](src, dst, cf.gpus, router.nic_of, nic_up0, nic_down0, router.host_up, router.host_down,
                            cf.link_dst, cf.link_src, cf.node_plane, cf.node_pod, look["nic-up"], look["nic-down"],
                            look["leaf-up"], look["spine-down"], look["spine-up"], look["core-down"], chunk,
                            pods_col, grown, ext, res, lat, keep)
    else:
        mix = np.uint64((seed * 1_000_003) & _M64)
        status = k["walk"](src, dst, salt, mix, cf.gpus, router.nic_of, nic_up0, nic_down0, router.host_up,
                           router.host_down, cf.link_dst, cf.link_src, t["local"], router.group_of, int(t["ng"]),
                           t["set_lo"], t["set_cnt"], t["set_links"], router.level, router.dmodk_key,
                           policy == "dmodk", _salts(), chunk, kc, grown, ext, res, lat, keep)
    if status:
        return None
    if not keep.any():
        keep[0] = True
    if not keep.all():
        res = res[:, keep]
    return res, lat


def _salts() -> np.ndarray:
    if "salts" not in _STATE:
        _STATE["salts"] = _hop_salts()
    return _STATE["salts"]


def p2p_latency(src: np.ndarray, dst: np.ndarray, domain: np.ndarray, path_s: np.ndarray, inter_s: float,
                intra_s: float) -> tuple[np.ndarray, bool]:
    """``(path_s + where(domain[src] != domain[dst], inter_s, intra_s), any flow between domains)`` in one
    pass (:meth:`collectives.p2p._PointToPointMixin.direct`; the same additions), written into ``path_s``
    when it is writeable (the caller's fresh route latencies)."""
    out = path_s if path_s.flags.writeable else np.empty(len(src))  # the route's own array: in place
    n = _k()["p2p_latency"](src, dst, domain, path_s, float(inter_s), float(intra_s), out)
    return out, n > 0


def nic_connections(res: np.ndarray, nic_slot: np.ndarray, per_flow: bool = True) -> tuple[np.ndarray | None, int, int]:
    """``(per flow count, least count > 0 or -1, largest count)`` of
    :meth:`collectives.p2p._PointToPointMixin.nic_connections` (``nic_slot``: bool[resources + 1], slot 0
    the padding); ``per_flow=False``: the two bounds only (None for the counts: no F-sized array)."""
    counts = np.zeros(len(nic_slot), np.int64)
    per = np.empty(res.shape[0] if per_flow else 0, np.int64)
    lo, hi = _k()["nic"](res, nic_slot, counts, per, per_flow)
    return (per if per_flow else None), int(lo), int(hi)


def nic_peer_ports(res: np.ndarray, tier: np.ndarray, up_code: int, dn_code: int,
                   max_pairs: int) -> np.ndarray | None:
    """:meth:`collectives.p2p._PointToPointMixin.nic_peer_ports` in two passes over the table (the same
    integers); None when the ports that occur make more than ``max_pairs`` (sending, receiving) pairs."""
    out = np.empty(res.shape[0], np.int64)
    ok = _k()["peer"](res, np.ascontiguousarray(tier, np.int64), int(up_code), int(dn_code), int(max_pairs), out,
                      False)
    return out if ok else None


def nic_fan_connections(res: np.ndarray, tier: np.ndarray, up_code: int, dn_code: int,
                        max_pairs: int) -> tuple[np.ndarray, int, int] | None:
    """``(where(crosses a NIC port, max(nic_peer_ports, 1), 0), least value > 0 or -1, largest)`` in the
    same two passes (:meth:`collectives.p2p._PointToPointMixin.nic_fan_connections`); None as
    :func:`nic_peer_ports`."""
    out = np.empty(res.shape[0], np.int64)
    ok = _k()["peer"](res, np.ascontiguousarray(tier, np.int64), int(up_code), int(dn_code), int(max_pairs), out,
                      True)
    if not ok:
        return None
    crossing = out > 0
    lo = int(out.min(where=crossing, initial=np.iinfo(np.int64).max)) if crossing.any() else -1
    return out, lo, int(out.max(initial=0))


#: Ordered pairs from which ``auto`` builds an all-to-all's pair list compiled (2,048 ranks and more, where
#: the route walk of the same all-to-all loads numba anyway: 4.2 M flows x 6 hops > :data:`MIN_ENTRIES`).
MIN_PAIRS = 1 << 22


def all_pairs(ranks: np.ndarray) -> tuple[np.ndarray, np.ndarray] | None:
    """Every ordered pair of distinct ranks, row by row (``s``, ``d``; what a ``ranks[:, None] != ranks``
    mask over broadcast views gives), or None below :data:`MIN_PAIRS` (the numpy path)."""
    n = len(ranks)
    if not kernels.use_compiled(n * (n - 1), MIN_PAIRS):
        return None
    ranks = np.ascontiguousarray(ranks)
    s = np.empty(n * (n - 1), ranks.dtype)
    d = np.empty(n * (n - 1), ranks.dtype)
    p = _k()["pairs"](ranks, s, d)
    return s[:p], d[:p]


def used_mark(res: np.ndarray, n_resources: int) -> np.ndarray:
    """bool[n_resources + 1] of :func:`fabric.flowset._used_mark` (the last slot False)."""
    mark = np.zeros(n_resources + 1, bool)
    _k()["mark"](res, mark)
    return mark


def local_ids(res: np.ndarray, lookup: np.ndarray) -> np.ndarray:
    """``lookup[res]`` with -1 kept (the problem's compact ids), in ``lookup``'s dtype."""
    out = np.empty(res.shape, lookup.dtype)
    _k()["local"](res, lookup, out)
    return out
