"""Point-to-point traffic of the planner: all-to-all, send/recv and MoE flows with the many-peer terms.

A mixin of :class:`collectives.algorithms.Planner` (as the router's tables and spray are mixins of
:class:`fabric.Router`): NIC connection counts per flow, the NIC goodput factor of the kernel family
(:func:`collectives.calibration.nic_p2p_factor`) on NIC ports, and the node-aggregated (PXN) all-to-all.
It uses the planner's ``router``, ``domain``, ``routed``, ``p2p_latency_s``, ``groups_by_domain`` and
``_nic_tiers``.
"""

from __future__ import annotations

import numpy as np

from collectives.calibration import (nccl_p2p_channels, nccl_p2p_constants, nccl_p2p_family,
                                    nccl_p2p_ll_max_bytes, nccl_p2p_onedomain_peer_s, nccl_p2p_per_peer_s,
                                    nccl_p2p_simple_fill_Bps, nic_p2p_factor)
from collectives.nccl_model.constants import parse_nccl_version
from collectives.p2p_channels import p2p_kernel_terms, p2p_ll_by_peer_channels, p2p_peer_protocol, p2p_rules
from collectives.ops import Collective
from fabric import route_kernels
from fabric.flowset import FlowSet, concat
from topologies.errors import SpecError

__all__: list[str] = []


#: Most (sending, receiving) NIC port pairs counted with a bitmap (one byte each); more: a sort.
_MAX_PAIRS = 1 << 28


def _dense_ids(x: np.ndarray, n: int) -> tuple[np.ndarray, np.ndarray]:
    """The distinct values of ``x`` (ids in ``[0, n)``) in order, and each entry's index among them."""
    present = np.zeros(n, np.bool_)
    present[x] = True
    values = np.flatnonzero(present)
    rank = np.cumsum(present) - 1
    return values, rank[x]


class _PointToPointMixin:
    """The planner's point-to-point methods (see the module docstring)."""

    def _resource_tier(self) -> np.ndarray:
        """Tier code of every resource (a trunk takes its first member's tier)."""
        if not hasattr(self, "_rt"):
            r = self.router
            t = r.cf.link_tier.astype(np.int64)
            if len(r.trunk_links):
                t = np.concatenate([t, t[r.trunk_links[r.trunk_ptr[:-1]]]])
            self._rt = t
        return self._rt

    def nic_connections(self, res: np.ndarray) -> np.ndarray:
        """Per flow, the most concurrent network connections on a NIC port it crosses (0 if none)."""
        return self._nic_connections(res)[0]

    def _nic_connections(self, res: np.ndarray, per_flow: bool = True) -> tuple[np.ndarray | None, int | None,
                                                                                 int | None]:
        """Per flow, the most concurrent network connections on a NIC port it crosses (0 if none).

        Every flow of one point-to-point operation is one connection (one queue pair in
        NCCL and DeepEP); a NIC port's count is the number of flows that cross it, in
        its direction (sender side ``nic-up``, receiver side ``nic-down``: incast).
        One bincount and one gather per hop column (no F x h temporaries): the count of
        every resource, kept on the NIC ports only, then each flow's maximum over its hops;
        large tables: the compiled kernel (:func:`fabric.route_kernels.nic_connections`, the same
        integers), which also gives the least count above 0 (or -1) and the largest (else None, None),
        and with ``per_flow=False`` only those (the counts None).
        """
        F = len(res)
        if F == 0 or res.ndim != 2 or not self._nic_lut_of().any():
            return np.zeros(F, np.int64), None, None
        if route_kernels.use(res.size):
            return route_kernels.nic_connections(res, np.r_[False, self._nic_lut], per_flow)
        R1 = len(self._resource_tier()) + 1
        keys = np.empty(F, np.intp)  # one buffer for every column: slot = resource + 1, 0 = the padding
        counts = np.zeros(R1, np.int64)  # entries per slot
        nic_slot = np.r_[False, self._nic_lut]
        nic_cols = []
        for j in range(res.shape[1]):
            cj = np.bincount(np.add(res[:, j], 1, out=keys, casting="unsafe"), minlength=R1)
            counts += cj
            if cj[nic_slot].any():
                nic_cols.append(j)  # only these columns can raise a flow's maximum
        per_slot = np.where(nic_slot, counts, 0)  # NIC ports only; the padding: 0
        per = np.zeros(F, np.int64)
        for j in nic_cols:  # gathers with intp ids (about 1.7x faster than with int32 / int16)
            np.maximum(per, per_slot[np.add(res[:, j], 1, out=keys, casting="unsafe")], out=per)
        return per, None, None

    def _nic_up_down(self, res: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Per flow, the ``nic-up`` and the ``nic-down`` resource it crosses (the largest id if several; -1: none).

        One gather of a tier code per hop column (0: not a NIC port, 1: ``nic-up``, 2: ``nic-down``); a
        column whose every entry is of one NIC tier, where no earlier column had that tier, is taken as it is
        (an all-to-all over the network: its first and last network hops), with no mask.
        """
        F = len(res)
        tier = self._resource_tier()
        up_code, down_code = (int(x) for x in self._nic_tiers)
        code = np.zeros(len(tier) + 1, np.int8)  # by slot: resource + 1, slot 0 the padding
        code[1:][tier == up_code] = 1
        code[1:][tier == down_code] = 2
        keys = np.empty(F, np.intp)
        up = dn = None
        for j in range(res.shape[1]):
            hop = code[np.add(res[:, j], 1, out=keys, casting="unsafe")]
            hi = int(hop.max())
            if hi == 0:  # no NIC port in this column
                continue
            whole = int(hop.min()) == hi  # every entry of one NIC tier
            for c, side in ((1, "up"), (2, "dn")):
                if whole and c != hi:
                    continue
                hit = None if whole else hop == c
                if hit is not None and not hit.any():
                    continue
                col = up if side == "up" else dn
                if col is None and whole:
                    col = res[:, j].astype(np.int64)
                elif whole:
                    np.maximum(col, res[:, j], out=col)
                else:
                    if col is None:
                        col = np.full(F, -1, np.int64)
                    np.copyto(col, np.maximum(col, res[:, j]), where=hit)
                if side == "up":
                    up = col
                else:
                    dn = col
        none = np.full(F, -1, np.int64) if up is None or dn is None else None
        return (none if up is None else up), (none if dn is None else dn)

    def nic_peer_ports(self, res: np.ndarray) -> np.ndarray:
        """Per flow, the most distinct remote NIC ports that a NIC port it crosses exchanges with (0 if none).

        The fan-out of the sending NIC port (``nic-up``: distinct receiving ports of its flows) and the
        fan-in (incast) of the receiving one (``nic-down``: distinct sending ports), the larger of the two.
        With PXN a rail-aligned all-to-all over ``D`` nodes has ``D - 1`` on every port whatever the GPUs
        per node; two nodes have 1 (one port pair per rail). Round 5 (calibration ``NCCL_NET_PEER_DROP``).
        Round 11: NCCL relays inside a host, so over ``D`` NVLink domains of ``h`` hosts each it is ``(D - 1) h``.
        """
        F = len(res)
        if F == 0 or res.ndim != 2:
            return np.zeros(F, np.int64)
        if route_kernels.use(res.size):
            up_code, down_code = (int(x) for x in self._nic_tiers)
            out = route_kernels.nic_peer_ports(res, self._resource_tier(), up_code, down_code, _MAX_PAIRS)
            if out is not None:
                return out
        return self._peer_ports_of(*self._nic_up_down(res))

    def _peer_ports_of(self, up: np.ndarray, dn: np.ndarray) -> np.ndarray:
        """:meth:`nic_peer_ports` from each flow's ``nic-up`` and ``nic-down`` resource (-1: none)."""
        F = len(up)
        both = (up >= 0) & (dn >= 0)
        if not both.any():
            return np.zeros(F, np.int64)
        every = bool(both.all())  # an all-to-all over the network: no masks
        if not every:
            up, dn = up[both], dn[both]
        # distinct (up, down) port pairs: a bitmap over the ports that occur, else a sort (np.unique imports numpy.ma)
        R = len(self._resource_tier())
        ups, iu = _dense_ids(up, R)
        dns, idn = _dense_ids(dn, R)
        nu, nd = len(ups), len(dns)
        if nu * nd <= _MAX_PAIRS:
            seen = np.zeros(nu * nd, np.bool_)
            seen[iu * nd + idn] = True
            pairs = np.flatnonzero(seen)
        else:
            pairs = np.sort(iu * nd + idn)
            pairs = pairs[np.r_[True, pairs[1:] != pairs[:-1]]]
        fan_up = np.bincount(pairs // nd, minlength=nu)
        fan_dn = np.bincount(pairs % nd, minlength=nd)
        fan = np.maximum(fan_up[iu], fan_dn[idn])
        if every:
            return fan
        out = np.zeros(F, np.int64)
        out[both] = fan
        return out

    def nic_fan_connections(self, res: np.ndarray) -> tuple[np.ndarray, int | None, int | None]:
        """Per flow, ``max(nic_peer_ports, 1)`` where it crosses a NIC port, else 0; with the least count
        above 0 (or -1) and the largest when the compiled kernel gave them (else None, None).

        The numpy path reads each flow's NIC ports once (:meth:`_nic_up_down`): a flow crosses a NIC port
        iff it has a ``nic-up`` or a ``nic-down`` one (the NIC tiers are these two), so no connection count
        is needed.
        """
        F = len(res)
        if F == 0 or res.ndim != 2 or not self._nic_lut_of().any():
            return np.zeros(F, np.int64), None, None
        if route_kernels.use(res.size):
            up_code, down_code = (int(x) for x in self._nic_tiers)
            got = route_kernels.nic_fan_connections(res, self._resource_tier(), up_code, down_code, _MAX_PAIRS)
            if got is not None:
                return got
        up, dn = self._nic_up_down(res)
        fan = self._peer_ports_of(up, dn)
        crossing = (up >= 0) | (dn >= 0)
        if crossing.all():
            return np.maximum(fan, 1, out=fan), None, None
        return np.where(crossing, np.maximum(fan, 1), 0), None, None

    def _nic_lut_of(self) -> np.ndarray:
        """bool[R]: the resource is a NIC port (a resource of a NIC tier)."""
        lut = getattr(self, "_nic_lut", None)
        if lut is None:
            lut = self._nic_lut = np.isin(self._resource_tier(), self._nic_tiers)
        return lut

    def _on_nic(self, res: np.ndarray) -> np.ndarray:
        """[flow, hop]: the hop is a NIC port (a resource of a NIC tier)."""
        lut = self._nic_lut_of()
        return lut[np.maximum(res, 0)] & (res >= 0)

    def direct(self, op: Collective, src, dst, sizes, *, pxn: bool = True, label=None,
               kernel: str = "nccl", connections_per_flow: int = 1, remote_ports_per_flow: int = 1) -> FlowSet:
        """Point-to-point flows (all-to-all, send/recv, MoE) with the many-peer terms.

        ``pxn``: forward network flows over NVLink to a GPU on the destination's rail first; NCCL's
        point-to-point (``kernel="nccl"``) relays only inside the sender's host (round 11: NCCL v2.28.7-1
        src/graph/paths.cc, a relay GPU "(3) is on the same node as us"; :meth:`fabric.routing.Router.route`
        scope ``"host"``), other kernels (their own relays) across the sender's NVLink domain.
        NIC goodput falls with the concurrent connections ``k`` on the port
        (:func:`collectives.calibration.nic_p2p_factor` of the ``kernel`` family): weights
        on NIC ports x 1/factor(k); a flow that stands for several connections (node-aggregated
        all-to-all) says so with ``connections_per_flow`` (0: the flows are not concurrent connections,
        e.g. sends routed in one batch for speed), and, for NCCL, a flow that stands for flows to several
        remote NIC ports with ``remote_ports_per_flow`` (the host-aggregated all-to-all). The per-peer cost
        of MoE kernels is added by :func:`collectives.moe.plan_moe` (it depends on the EP group, not on the flows).
        """
        src = np.asarray(src, dtype=np.int64)
        dst = np.asarray(dst, dtype=np.int64)
        if kernel == "nccl" and not isinstance(pxn, str) and bool(pxn):  # round 11: NCCL relays inside the host
            pxn = "host"
        # the net plugin's latencyInter belongs to NCCL's proxy path; MoE kernels carry their own fits. Round 8: the
        # rendezvous only where the first network message (one connection's bytes, at most NCCL's p2p net chunk) is
        # above the plugin's eager limit (calibration.net_rendezvous_s); the largest flow decides for all
        msg = float(np.max(sizes, initial=0.0)) / max(int(connections_per_flow), 1)
        lat_inter = self.p2p_latency_s(True, plugin=kernel == "nccl", message_bytes=msg)
        lat_intra = self.p2p_latency_s(False)
        terms = self.p2p_kernel_terms(op, msg) if kernel == "nccl" else None
        if terms is not None:  # round 11: NCCL's p2p kernel inside one NVLink domain (its batches' fixed costs)
            lat_intra = terms[0]
        if kernel == "nccl":  # round 5: NCCL's p2p rounds (one per peer) and its net transport's many-peer drop
            c = nccl_p2p_per_peer_s(self.calib.nic)
            if c > 0:  # on the flows that cross the network only
                lat_inter = lat_inter + c * self.net_p2p_units(op, msg)
            kernel = nccl_p2p_family(kernel, self.calib.nic)
        protocol = self.p2p_protocol(op, msg) if kernel == "nccl" else "Simple"
        fs = self.routed(src, dst, sizes, kind="p2p", protocol=protocol, latency_s=0.0, label=label or op.label,
                         pxn=pxn, salt=0)  # one salt for every flow (a broadcast, no F-sized array)
        if route_kernels.use(fs.res.size) and src.ndim == 1:
            latency_s, any_inter = route_kernels.p2p_latency(src, dst, self.domain, fs.latency_s, lat_inter,
                                                             lat_intra)
        else:
            inter = self.domain[src] != self.domain[dst]
            lat = np.where(inter, lat_inter, lat_intra)
            latency_s, any_inter = np.add(fs.latency_s, lat, out=lat), bool(inter.any())
            del inter
        w = fs.weight
        # > 0 exactly on flows crossing a NIC port; a uniform all-to-all needs the least and largest count only
        conn = lo = hi = None
        if any_inter:
            if kernel == "nccl":  # round 5: on reliable-connected NICs the drop follows the remote NIC ports
                conn, lo, hi = self.nic_fan_connections(fs.res)  # (incast), not the queue pairs
                # 0 (independent sends batched) stays 0; an aggregated flow stands for remote_ports_per_flow ports
                connections_per_flow = min(connections_per_flow, 1) * max(int(remote_ports_per_flow), 1)
            else:
                conn, lo, hi = self._nic_connections(fs.res, per_flow=not (w is None and fs.resource_scale is not None))
            if hi is None:  # the numpy counts: their bounds
                crossing = conn > 0
                lo = int(conn.min(where=crossing, initial=np.iinfo(np.int64).max)) if crossing.any() else -1
                hi = int(conn.max(initial=0))
        # the factor is monotone in k (and so is its correctly rounded evaluation): its extremes over a set of
        # flows are its values at the extreme k, so the uniform case needs no per-flow factor array
        k_all = (0, 0) if hi is None else (0, hi * connections_per_flow)  # counts are >= 0: the least is 0
        if float(np.min(nic_p2p_factor(np.array(k_all), kernel))) < 1.0:
            k_nic = np.array([lo, hi]) * connections_per_flow
            fn = nic_p2p_factor(k_nic, kernel) if hi > 0 else np.zeros(0)
            if w is None and fs.resource_scale is not None and len(fn) and fn.min() == fn.max():
                # every flow on a NIC port has the same factor (a uniform all-to-all): one factor per
                # resource, no F x h array (the engine folds it into capacities: the same coefficients)
                rs = fs.resource_scale * np.where(self._nic_lut_of(), 1.0 / fn[0], 1.0)
                return FlowSet(**{**fs.__dict__, "resource_scale": rs, "latency_s": latency_s})
            if conn is None:  # only the bounds were counted: now the per-flow counts
                conn = self._nic_connections(fs.res)[0]
            f = nic_p2p_factor(conn * connections_per_flow, kernel)
            on_nic = self._on_nic(fs.res)
            fac = np.where(on_nic, (1.0 / f)[:, None], 1.0)  # one F x h array (1 x w = w exactly)
            del on_nic
            if w is not None:
                fac *= w
            w = fac
        return FlowSet(**{**fs.__dict__, "weight": w, "latency_s": latency_s})

    def net_p2p_units(self, op: Collective, peer_bytes: float) -> float:
        """What NCCL's per-peer network cost (``calibration.NCCL_P2P_PER_PEER_S``) is paid for: one round per peer
        (round 5), ``n - 1`` in an all-to-all and 1 in a send/recv ring, whatever ``peer_bytes``. Round 12 tried
        NCCL's parts and network messages a peer in its place (``benchmarks/fit_collective_constants.py
        a2a-efa-schedule``; docs/collectives.md "Round 12"): not adopted."""
        return float(op.n - 1 if op.collective == "all_to_all" else 1)

    def p2p_kernel_terms(self, op: Collective, peer_bytes: float) -> tuple[float, float] | None:
        """(fixed, data) seconds of NCCL's p2p kernel for an all-to-all whose ranks share one NVLink domain, on the
        architectures of :data:`collectives.calibration.NCCL_P2P_CHANNELS_BY_ARCH` (round 11,
        :func:`collectives.p2p_channels.p2p_kernel_terms`); None elsewhere (the flows alone).

        The fixed part replaces the flows' intra-domain latency; the plan's time is at least the latency plus the
        data part (``Plan.min_time_s``), the NVLink ports' limit staying with the flows.
        """
        chans = nccl_p2p_channels(self.gpu.sm)
        consts = nccl_p2p_constants(self.gpu.sm)
        if chans is None or consts is None or op.collective != "all_to_all" or op.n < 2 or peer_bytes <= 0:
            return None
        doms = self.domain[np.asarray(op.ranks, dtype=np.int64)]
        if doms.min() != doms.max():
            return None
        # round 11: the release's channel mapping and batching rules (p2p_channels.p2p_rules; None: v2.28.7's)
        release = parse_nccl_version(op.options.get("nccl_version"))
        rules = p2p_rules(release)
        bps, batch = consts
        peer_s = nccl_p2p_onedomain_peer_s(self.gpu.sm)  # round 13: a fixed cost per peer
        fill = nccl_p2p_simple_fill_Bps(self.gpu.sm)  # round 16: a Simple batch's last step again
        key = (op.n, int(peer_bytes), chans, rules, p2p_ll_by_peer_channels(release), tuple(sorted(bps.items())),
               tuple(sorted(batch.items())), peer_s, fill)
        cache = self.__dict__.setdefault("_p2p_terms", {})
        if key not in cache:
            cache[key] = p2p_kernel_terms(op.n, int(peer_bytes), p2p_channels=chans[0], channels_per_peer=chans[1],
                                          channel_Bps=bps, batch_s=batch, release=release, peer_s=peer_s,
                                          fill_Bps=fill)
        return cache[key]

    def p2p_protocol(self, op: Collective, peer_bytes: float) -> str:
        """NCCL's p2p protocol of ``op``: ``"LL"`` for an all-to-all whose ranks share one NVLink domain and whose
        bytes per peer are at most :func:`collectives.calibration.nccl_p2p_ll_max_bytes` (round 8: NCCL's
        ``thresholdLL``), else ``"Simple"``; round 16: from NCCL 2.29 (the row's ``nccl_version``) LL only when the
        bytes are at most the peer's own channel count x 16 KiB (:func:`collectives.p2p_channels.p2p_peer_protocol`).
        Round 11: the LL kernel's own rate is the channel term of :meth:`p2p_kernel_terms` (it replaced round 8's LL
        kernel fraction); the flows keep LL's wire efficiency.
        """
        limit = nccl_p2p_ll_max_bytes(self.gpu.sm)
        if op.collective != "all_to_all" or limit <= 0 or peer_bytes > limit or peer_bytes <= 0:
            return "Simple"
        doms = self.domain[np.asarray(op.ranks, dtype=np.int64)]
        if doms.size == 0 or doms.min() != doms.max():  # across domains: not fitted (the net transport's LL)
            return "Simple"
        release = parse_nccl_version(op.options.get("nccl_version"))
        chans = nccl_p2p_channels(self.gpu.sm)
        if chans is not None and p2p_ll_by_peer_channels(release):  # round 16: v2.29's rule
            return p2p_peer_protocol(op.n, int(peer_bytes), p2p_channels=chans[0], channels_per_peer=chans[1],
                                     release=release)[0]
        return "LL"

    def host_layout(self, ranks) -> np.ndarray | None:
        """``[D, h, g]`` ranks by NVLink domain, host inside it (compute tray) and index in the host, when every
        domain holds as many hosts of the group, each with as many ranks at the same indices (else None)."""
        r = self.router
        hosts = []
        for grp in self.groups_by_domain(ranks):
            host = r.node_host[r.cf.gpus[grp]]
            hosts.append(np.split(grp, np.flatnonzero(np.diff(host)) + 1))
        if len({len(x) for x in hosts}) != 1 or len({len(y) for x in hosts for y in x}) != 1:
            return None
        M = np.array(hosts, dtype=np.int64)
        dev = r.node_host_dev[r.cf.gpus[M]]
        return M if bool((dev == dev[:1, :1]).all()) else None

    def all_to_all_aggregated(self, op: Collective) -> FlowSet:
        """All-to-all with NCCL's PXN forwarding, flows aggregated per host pair and rail.

        Ranks ``(A, x, i)``: NVLink domain ``A``, host ``x`` inside it (``h`` per domain), index ``i`` in the
        host (``g`` per host; on HGX boards one host per domain). NCCL relays a network send inside the
        sender's host (round 11, :meth:`fabric.routing.Router.route` scope ``"host"``), so:
        stage 1 (NVLink, same host): ``(A, x, i)`` hands ``(A, x, j)`` its own chunk for it and everything for
        the ``(D - 1) h`` GPUs of index ``j`` in the other domains, ``(1 + (D - 1) h) S/n`` bytes; inside the
        domain between hosts every pair is direct (``S/n``); with ``h > 1`` these bytes are spread equally over
        each GPU's NVLink flows, which keeps every GPU's NVLink ports exact in a pristine domain (the NVLink
        route of a pair is its two port trunks) and the stage one size class. Stage 2 (network): proxy
        ``(A, x, j)`` sends each ``(B, y, j)`` the data of the ``g`` GPUs of its host, ``g S/n`` bytes, on rail
        ``j``; these ``h`` flows into domain ``B`` are carried by one flow to ``(B, x, j)`` of ``h g S/n`` bytes
        that counts as ``h`` remote NIC ports (the many-peer drop sees ``(D - 1) h`` per port, as NCCL's flows
        give). Every NIC port carries the same bytes as the per-pair model with PXN, and so does every switch
        link under spraying on a pristine Clos and wherever one domain's NICs of a rail share a leaf
        (``tests/test_aggregation.py``, ``tests/test_pxn_host.py``); ECMP hashes ``1/h`` as many network flows.
        ``D hg (hg - 1) + D hg (D - 1)`` flows instead of ``n (n - 1)``.
        """
        M = self.host_layout(op.ranks)
        if M is None or M.shape[0] < 2 or M.shape[1] * M.shape[2] < 2:
            raise SpecError("all_to_all aggregate=node: needs >= 2 domains with the same number (>= 2) of ranks "
                            "each, in whole hosts of the same size")
        D, h, g = M.shape
        chunk = op.size_bytes / op.n
        dom = M.reshape(D, h * g)
        a = np.repeat(dom, h * g, axis=1).ravel()    # every ordered pair inside a domain
        b = np.tile(dom, (1, h * g)).ravel()
        keep = a != b
        # every GPU sends (g - 1)(1 + (D - 1) h) + (h - 1) g chunks over NVLink and receives as many: spread
        # equally over its h g - 1 NVLink flows, each GPU port carries its exact bytes and the stage is one size
        # class (one exact solve, as with one host per domain, where this is D chunks a pair)
        per_gpu = ((g - 1) * (1 + (D - 1) * h) + (h - 1) * g) * chunk
        nv = self.direct(op, a[keep], b[keep], per_gpu / (h * g - 1), pxn=False)
        A, B = np.meshgrid(np.arange(D), np.arange(D), indexing="ij")
        off = A != B
        src = dom[A[off]].ravel()                    # proxy (A, x, j) -> (B, x, j), for the h hosts of B
        dst = dom[B[off]].ravel()
        net = self.direct(op, src, dst, h * g * chunk, pxn=False, connections_per_flow=g, remote_ports_per_flow=h)
        return concat([nv, net], merge_phases=True)
