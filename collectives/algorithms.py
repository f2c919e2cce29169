"""Collective algorithms as flows on the fabric (DESIGN.md section 6).

Every algorithm turns (ranks, size, options) into a :class:`fabric.FlowSet`:

* **ring** (all-reduce, reduce-scatter, all-gather, broadcast): the pipelined
  ring in the fluid limit: every rank streams to its successor at once, each
  edge carrying ``2(n-1)/n S`` (all-reduce), ``(n-1)/n S`` (all-gather,
  reduce-scatter) or ``S`` (broadcast chain). Ring order follows the topology as
  NCCL's does: the ranks of an NVLink domain are consecutive, and channel ``c``
  enters and leaves every domain on rail ``c``: the domain's last rank forwards
  to the rail GPU over NVLink and the rail NIC carries the hop to the next
  domain (PXN), so the rings cross domain boundaries through the right rail's NICs;
* **tree**: NCCL's double binary tree all-reduce: a chain inside each domain and
  two complementary binary trees over the domains, each carrying half the data,
  reduce and broadcast streams concurrently;
* **nvls**: in-switch all-reduce inside an NVLink domain: each GPU sends
  ``S(1 + 1/n)`` into its NVSwitch ports (``multimem.ld_reduce`` reads plus the
  multicast store of its reduced shard) and receives as much; the switch reduces
  and multicasts. All-gather: send ``S/n``, receive ``S``; reduce-scatter: send
  ``S``, receive ``S/n``;
* **sharp**: in-network all-reduce over an InfiniBand tree: every NIC sends its
  data once and receives the result once; each switch of the aggregation tree
  forwards one reduced stream upward and one result stream downward;
* **hier**: NCCL's NVLSTree / CollNet shapes: reduce-scatter inside each domain
  (NVLS or ring), all-reduce of the ``S/ppn`` shard across domains among the
  GPUs of one rail (ring, tree or SHARP), all-gather inside the domain; the
  stages are pipelined, so they run concurrently;
* **direct**: all-to-all (every pair, ``S/n``), send/recv (rank ``i`` to ``i+1``)
  and MoE dispatch/combine (bytes from a token-routing model, see
  :mod:`collectives.moe`); the point-to-point machinery is :mod:`collectives.p2p`,
  NCCL's inter-node trees :mod:`collectives.trees`.

Wire efficiencies and software latencies come from :mod:`collectives.calibration`
and NCCL's tuning model (:mod:`collectives.nccl_model`).
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np

from collectives import nccl_model as nm
from collectives.calibration import (PROTOCOL_EFFICIENCY, RING_FILL_OFF_ONE_DOMAIN, Calibration, net_rendezvous_s,
                                     nvls_domain_terms, nvls_fill_s, ring_fill_s)
from collectives.nccl_view import _NcclViewMixin
from collectives.nvls_chunks import _NvlsChunkMixin
from collectives.ops import Collective
from collectives.p2p import _PointToPointMixin
from collectives import ring_ll
from collectives.trees import (check_buffsize, nccl_btree_parent, nccl_dtree_parents, tree_channels,
                               tree_correction_factor, tree_fill_s)
from fabric import Router, route_kernels
from fabric.flowset import FlowSet, concat
from topologies import catalog
from topologies.errors import SpecError, UnreachableError
from topologies.graph import ROLES, TIERS

__all__ = ["Plan", "Planner", "NCCL_TO_OURS", "nccl_btree_parent", "nccl_dtree_parents"]

#: NCCL algorithm -> (our algorithm, hier options)
NCCL_TO_OURS = {
    "Ring": ("ring", {}), "Tree": ("tree", {}), "PAT": ("ring", {}),
    "NVLS": ("nvls", {}), "NVLSTree": ("hier", {"intra": "nvls", "inter": "tree"}),
    "CollNetDirect": ("hier", {"intra": "ring", "inter": "sharp"}),
    "CollNetChain": ("hier", {"intra": "ring", "inter": "sharp"}),
}


@dataclass(frozen=True)
class Plan:
    """Flows of one collective, and how they were chosen."""

    op: Collective
    flows: FlowSet
    algorithm: str          # ours, e.g. "hier(nvls+tree)"
    protocol: str
    nccl_algorithm: str | None
    latency_s: float        # software latency added to every flow
    logical_bytes: float | None = None  # MoE: bytes as DeepEP counts them
    notes: str = ""
    kernel_efficiency: float = 1.0  # NCCL kernel limit / large-domain NVLS factor applied to the flows
    min_time_s: float = 0.0  # kernel-side floor on the time (MoE SM / proxy pipelines, NVLSTree); run() and schedule()
    latency_per_byte_s: float = 0.0  # the part of latency_s linear in the size, s/B (ring copy; PlanCache rescales it)


class Planner(_NcclViewMixin, _NvlsChunkMixin, _PointToPointMixin):
    """Builds :class:`Plan` s on one fabric (see the module docstring).

    Parameters
    ----------
    router : fabric.Router
    calib : Calibration
    policy : {"ecmp", "dmodk", "spray"}
    seed : int
    """

    def __init__(self, router: Router, calib: Calibration, *, policy: str = "ecmp", seed: int = 0):
        self.router = router
        self.calib = calib
        self.policy = policy
        self.seed = seed
        cf = router.cf
        self.transport = router.resource_transport()
        self.gpu = catalog.gpu(calib.gpu)
        self.domain = cf.node_domain[cf.gpus]
        self.local = cf.node_local[cf.gpus]
        self.nvls_domain = self._nvls_domains()
        self.has_sharp = bool(np.isin(cf.node_reduce[cf.node_role == ROLES.index("leaf")], [2, 3]).any())
        meta = cf.meta
        self.nic = catalog.nic(meta["nic"]) if meta.get("nic") else None
        self._nic_tiers = np.array([TIERS.index("nic-up"), TIERS.index("nic-down")])

    def _nvls_domains(self) -> np.ndarray:
        cf = self.router.cf
        nv = cf.node_role == ROLES.index("nvswitch")
        doms = np.zeros(max(int(self.domain.max(initial=0)) + 1, 1), bool)
        ok = nv & (cf.node_reduce == 1)
        doms[cf.node_domain[ok]] = True
        return doms

    # ---------------------------------------------------------------- helpers
    def groups_by_domain(self, ranks) -> list[np.ndarray]:
        """Ranks of the group per NVLink domain (domains in order of first appearance, ranks by local index)."""
        ranks = np.asarray(ranks, dtype=np.int64)
        dom = self.domain[ranks]
        order = np.lexsort((self.local[ranks], dom))
        ranks, dom = ranks[order], dom[order]
        cuts = np.flatnonzero(np.diff(dom)) + 1
        return np.split(ranks, cuts)

    def p2p_latency_s(self, inter: bool, plugin: bool = True, message_bytes: float = float("inf")) -> float:
        """One Simple-protocol ring step of NCCL's model (assumption, see calibration); across the network with
        NCCL's proxy (``plugin``) also the rendezvous of a message above the plugin's eager limit (round 7;
        NCCL's point-to-point network chunk, ``NCCL_P2P_NET_CHUNKSIZE``, is 128 KiB by default)."""
        base = nm.BASE_LATENCIES_US[1][2]
        hw = nm.HW_LATENCIES_US[2 if inter else 0][1][2]
        if not (inter and plugin):
            return (base + hw) * 1e-6
        step = self.calib.net_step_latency_s
        return (base + hw) * 1e-6 + 2 * step + net_rendezvous_s(self.calib.nic, message_bytes, step)

    def scale(self, res: np.ndarray, kind: str, protocol: str = "Simple", kernel: float = 1.0) -> np.ndarray:
        """Weight multipliers 1/(transport x protocol x kernel efficiency) for resources ``res``.

        ``kernel`` is NCCL's kernel limit of the (algorithm, protocol, size)
        (:attr:`nccl_model.AlgoEstimate.kernel_efficiency`): LL caps, per-channel caps
        and the tree correction factor, applied to every link the flow crosses.
        """
        eff = np.asarray(self.calib.efficiency(kind)) * PROTOCOL_EFFICIENCY[protocol] * kernel
        t = self.transport[np.maximum(res, 0)]
        return np.where(res >= 0, 1.0 / eff[t], 0.0)

    def resource_scale(self, kind: str, protocol: str = "Simple", kernel: float = 1.0) -> np.ndarray:
        """:meth:`scale` for every router resource at once (one factor per resource, no F x h array)."""
        key = (kind, protocol, float(kernel))
        cache = self.__dict__.setdefault("_rscale", {})
        if key not in cache:
            eff = np.asarray(self.calib.efficiency(kind)) * PROTOCOL_EFFICIENCY[protocol] * kernel
            cache[key] = 1.0 / eff[self.transport]
        return cache[key]

    def routed(self, src, dst, size, *, kind: str, protocol: str, latency_s: float, label: str,
               pxn: bool = False, salt=None, phase=0, kernel: float = 1.0) -> FlowSet:
        src = np.asarray(src, dtype=np.int64)
        dst = np.asarray(dst, dtype=np.int64)
        routes = self.router.route(src, dst, policy=self.policy, seed=self.seed, salt=salt, pxn=pxn)
        return FlowSet.from_routes(routes, size, label=label, latency_s=latency_s, phase=phase,
                                   resource_scale=self.resource_scale(kind, protocol, kernel))

    def ports(self, ranks, which: str, size, *, kind: str, protocol: str, latency_s: float, label: str,
              phase=0, kernel: float = 1.0) -> FlowSet:
        res, w = self.router.port(ranks, which)
        lat = (np.where(res >= 0, self._res_latency()[np.maximum(res, 0)], 0) * w).sum(axis=1)
        return FlowSet.explicit(res, w * self.scale(res, kind, protocol, kernel), size, label=label,
                                latency_s=lat + latency_s, phase=phase,
                                src=np.asarray(ranks) if which.endswith("up") else -1,
                                dst=np.asarray(ranks) if which.endswith("down") else -1)

    def _res_latency(self) -> np.ndarray:
        if not hasattr(self, "_rl"):
            self._rl = self.router.resource_latency_s()
        return self._rl

    # ------------------------------------------------------------------ rings
    def ring_edges(self, ranks, channels: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(src, dst, channel) of every ring edge, ``channels`` rings following the topology."""
        groups = self.groups_by_domain(ranks)
        src, dst, ch = [], [], []
        for c in range(channels):
            order = []
            for g in groups:
                k = c % len(g)
                order.extend(np.roll(g, -k))
            order = np.asarray(order)
            src.append(order)
            dst.append(np.roll(order, -1))
            ch.append(np.full(len(order), c))
        return np.concatenate(src), np.concatenate(dst), np.concatenate(ch)

    def ring(self, op: Collective, size: int, est: nm.AlgoEstimate, *, ranks=None, per_edge=None, label=None,
             channels=None, phase=0, broadcast=False) -> FlowSet:
        ranks = op.ranks if ranks is None else ranks
        n = len(ranks)
        groups = self.groups_by_domain(ranks)
        if channels is None:
            channels = max(1, len(groups[0])) if len(groups) > 1 else 1
        s, d, c = self.ring_edges(ranks, channels)
        if per_edge is None:
            factor = {"all_reduce": 2 * (n - 1) / n, "all_gather": (n - 1) / n, "reduce_scatter": (n - 1) / n}
            per_edge = size * factor.get(op.collective, 1.0)
        sizes = np.full(len(s), per_edge / channels)
        if broadcast:  # a chain from the first rank: the edge into the root carries nothing
            sizes[d == ranks[0]] = 0.0
        inter = self.domain[s] != self.domain[d]
        return self.routed(s, d, sizes, kind="collective", protocol=est.protocol, latency_s=est.latency_s,
                           label=label or op.label, pxn="host" if inter.any() else False, salt=c * 1_000_003 + s,
                           phase=phase,
                           kernel=est.kernel_efficiency)

    # ------------------------------------------------------------------ trees
    def tree(self, op: Collective, size: int, est: nm.AlgoEstimate, *, ranks=None, label=None,
             channels=None) -> FlowSet:
        ranks = op.ranks if ranks is None else ranks
        groups = self.groups_by_domain(ranks)
        D = len(groups)
        ppn = len(groups[0])
        channels = channels or max(1, ppn)
        src, dst, sizes, salt = [], [], [], []
        chunk = size / (2 * channels)
        for c in range(channels):
            leaders = []
            for g in groups:  # intra-domain chain from the channel's leader
                chain = np.roll(g, -(c % len(g)))
                leaders.append(chain[0])
                for a, b in zip(chain[1:], chain[:-1]):
                    for t in range(2):  # both trees use the chain
                        src += [a, b]
                        dst += [b, a]
                        sizes += [chunk, chunk]
                        salt += [c * 4 + t] * 2
            for t in range(2):  # NCCL's double binary tree over the domains (trees.cc)
                for i, par in enumerate(nccl_dtree_parents(D)[t]):
                    if par < 0:
                        continue
                    child, parent = leaders[i], leaders[par]
                    src += [child, parent]
                    dst += [parent, child]
                    sizes += [chunk, chunk]
                    salt += [c * 4 + t] * 2
        if not src:
            raise SpecError("algo: tree needs at least two ranks")
        return self.routed(np.array(src), np.array(dst), np.array(sizes), kind="collective", protocol=est.protocol,
                           latency_s=est.latency_s, label=label or op.label, pxn="host", salt=np.array(salt),
                           kernel=est.kernel_efficiency)

    # ------------------------------------------------------------------- nvls
    def nvls(self, op: Collective, size: int, est: nm.AlgoEstimate, *, ranks=None, up=None, down=None,
             label=None, kernel: float = 1.0, fill_s: float | None = None, loops: int = 1) -> FlowSet:
        ranks = np.asarray(op.ranks if ranks is None else ranks)
        groups = self.groups_by_domain(ranks)
        if any(not self.nvls_domain[self.domain[g[0]]] for g in groups):
            raise SpecError("algo: nvls needs NVLink switches that reduce in the switch (NVSwitch gen3+); "
                            "this fabric's GPUs have none, use ring or tree")
        sets = []
        for g in groups:
            n = len(g)
            if up is None:
                u, dn = {"all_reduce": (size * (1 + 1 / n), size * (1 + 1 / n)),
                         "all_gather": (size / n, size), "reduce_scatter": (size, size / n)}[op.collective]
            else:
                u, dn = up, down
            # large NVLink domains (issue 8 item 3): the in-switch reduction slows per doubling of the
            # domain beyond 8 GPUs, and each operation pays a synchronisation term ~ n^2
            keff, sync_s = nvls_domain_terms(n, one_domain=fill_s is not None, loops=loops)
            keff *= kernel
            fill = nvls_fill_s(size, max(u, dn), self.gpu.nvlink_Bps, self.calib.nvlink_nvls * keff) \
                if fill_s is None else fill_s
            lat = est.latency_s + sync_s + fill
            sets.append(self.ports(g, "nvlink-up", u, kind="nvls", protocol="Simple", latency_s=lat,
                                   label=label or op.label, kernel=keff))
            sets.append(self.ports(g, "nvlink-down", dn, kind="nvls", protocol="Simple", latency_s=lat,
                                   label=label or op.label, kernel=keff))
        return concat(sets, merge_phases=True)

    # ------------------------------------------------------------------ sharp
    def sharp(self, op: Collective, size: float, est: nm.AlgoEstimate, *, ranks=None, label=None) -> FlowSet:
        """In-network reduction: NIC ports up/down, one reduced stream per switch of the tree."""
        r = self.router
        cf = r.cf
        ranks = np.asarray(op.ranks if ranks is None else ranks)
        if not self.has_sharp:
            raise SpecError("algo: sharp needs InfiniBand switches with SHARP (quantum-2, quantum-x800)")
        label = label or op.label
        kw = dict(kind="collective", protocol="Simple", latency_s=est.latency_s, label=label)
        sets = [self.ports(ranks, "nic-up", size, **kw), self.ports(ranks, "nic-down", size, **kw)]
        nics = r.nic_of[cf.gpus[ranks]]
        ups = r.nic_up[nics]
        leaves = np.unique(cf.link_dst[ups[ups >= 0]])
        planes = max(1, int((ups >= 0).sum(axis=1).max()))
        share = size / planes
        rows = []
        for plane in np.unique(cf.node_plane[leaves]):
            lv = leaves[cf.node_plane[leaves] == plane]
            if len(lv) > 1:
                for leaf in lv:
                    rows.append(r.switch_links(int(leaf), "leaf-up", direction="out"))
                    rows.append(r.switch_links(int(leaf), "spine-down", direction="in"))
                pods = np.unique(cf.node_pod[lv])
                if len(pods) > 1:
                    for pod in pods:
                        up, down = r.pod_links(int(plane), int(pod), "spine-up"), r.pod_links(int(plane), int(pod),
                                                                                            "core-down")
                        if len(up[0]) == 0:
                            raise UnreachableError("algo: sharp tree cannot join these pods (no core switches); "
                                                   "use ring or tree across domains")
                        rows += [up, down]
        if rows:
            width = max(len(x[0]) for x in rows)
            res = np.full((len(rows), width), -1, np.int64)
            w = np.zeros((len(rows), width))
            for i, (rr, ww) in enumerate(rows):
                if len(rr) == 0:
                    raise UnreachableError("algo: a SHARP tree switch has no working links")
                res[i, :len(rr)] = rr
                w[i, :len(rr)] = ww
            lat = (np.where(res >= 0, self._res_latency()[np.maximum(res, 0)], 0) * w).sum(axis=1)
            sets.append(FlowSet.explicit(res, w * self.scale(res, "collective"), share, label=label,
                                         latency_s=lat + est.latency_s))
        return concat(sets, merge_phases=True)

    # ------------------------------------------------------------------- hier
    def hier(self, op: Collective, size: int, est: nm.AlgoEstimate, *, intra: str | None = None,
             inter: str | None = None) -> tuple[FlowSet, str]:
        groups = self.groups_by_domain(op.ranks)
        ppn = len(groups[0])
        if any(len(g) != ppn for g in groups):
            raise SpecError("algo: hier needs the same number of ranks in every NVLink domain")
        if intra is None:
            intra = "nvls" if all(self.nvls_domain[self.domain[g[0]]] for g in groups) and ppn > 1 else "ring"
        if inter is None:
            inter = "tree" if op.collective == "all_reduce" else "ring"
        if intra not in ("nvls", "ring") or inter not in ("ring", "tree", "sharp"):
            raise SpecError(f"hier: intra must be nvls or ring and inter ring, tree or sharp; got {intra}+{inter}")
        coll = op.collective
        if coll not in ("all_reduce", "all_gather", "reduce_scatter"):
            raise SpecError(f"algo: hier does not apply to {coll}")
        if inter in ("tree", "sharp") and coll != "all_reduce":
            raise SpecError(f"hier: inter={inter} only reduces; {coll} uses inter=ring")
        label = op.label
        sets = []
        shard = size / ppn
        # intra-domain stages (RS then AG for all-reduce; one of them for AG/RS)
        if ppn > 1:
            for g in groups:
                sub = Collective(coll, tuple(int(x) for x in g), size, label=label)
                if intra == "nvls":
                    up = {"all_reduce": size + shard, "reduce_scatter": size, "all_gather": shard}[coll]
                    down = {"all_reduce": shard + size, "reduce_scatter": shard, "all_gather": size}[coll]
                    # NVLSTree is one kernel: its per-channel cap (NCCL's kernel limit) paces the NVLS
                    # stage as well as the tree (issue 8 item 6)
                    sets.append(self.nvls(sub, size, est, up=up, down=down, label=label,
                                          kernel=est.kernel_efficiency if inter == "tree" else 1.0))
                else:
                    per = {"all_reduce": 2, "reduce_scatter": 1, "all_gather": 1}[coll] * size * (ppn - 1) / ppn
                    sets.append(self.ring(sub, size, est, per_edge=per, label=label))
        # inter-domain stage among the GPUs of each rail
        if len(groups) > 1:
            D = len(groups)
            for k in range(ppn):
                rail = tuple(int(g[k]) for g in groups)
                sub = Collective(coll, rail, int(shard), label=label)
                if inter == "ring":
                    per = (2 if coll == "all_reduce" else 1) * shard * (D - 1) / D
                    sets.append(self.ring(sub, int(shard), est, per_edge=per, label=label, channels=2))
                elif inter == "tree":
                    sets.append(self.tree(sub, shard, est, label=label, channels=1))
                else:
                    sets.append(self.sharp(sub, shard, est, label=label))
        return concat(sets, merge_phases=True), f"hier({intra}+{inter})"

    # ------------------------------------------------------------------- plan
    def plan(self, op: Collective) -> Plan:
        """Flows for ``op``, choosing the algorithm like NCCL when ``algorithm='auto'``."""
        coll, size, algo = op.collective, op.size_bytes, op.algorithm
        ranks = np.asarray(op.ranks)
        if coll in ("moe_dispatch", "moe_combine"):
            from collectives.moe import plan_moe  # MoE only: other collectives do not load the token machinery

            return plan_moe(self, op, Plan)
        if coll == "all_to_all":
            n = op.n
            agg = op.options.get("aggregate")
            if agg is None and n * (n - 1) > 4_000_000 and op.options.get("pxn", True):
                M = self.host_layout(ranks)
                if M is not None and M.shape[0] > 1 and M.shape[1] * M.shape[2] > 1:
                    agg = "node"
            if agg == "node":
                fs = self.all_to_all_aggregated(op)
                return Plan(op, fs, "direct(node-aggregated)", "Simple", None, float(fs.latency_s.max(initial=0)),
                            notes="PXN stages aggregated per host pair and rail")
            if agg not in (None, "none"):
                raise SpecError(f"all_to_all aggregate: {agg!r} must be 'node' or 'none'")
            # every ordered pair, row by row (as meshgrid + mask would give), from broadcast views: no n x n copies
            sd = route_kernels.all_pairs(ranks)  # large: one compiled pass (the same arrays)
            if sd is None:
                m = ranks[:, None] != ranks[None, :]
                sd = np.broadcast_to(ranks[:, None], m.shape)[m], np.broadcast_to(ranks[None, :], m.shape)[m]
                del m
            s, d = sd
            fs = self.direct(op, s, d, size / n, pxn=op.options.get("pxn", True))
            lat = float(fs.latency_s.max(initial=0))
            # round 11: inside one NVLink domain NCCL's p2p kernel (its channels' batches) bounds the time
            terms = self.p2p_kernel_terms(op, size / n)
            return Plan(op, fs, "direct", self.p2p_protocol(op, size / n), None, lat,
                        min_time_s=lat + terms[1] if terms is not None else 0.0)
        if coll == "send_recv":
            fs = self.direct(op, ranks, np.roll(ranks, -1), float(size), pxn=op.options.get("pxn", False))
            return Plan(op, fs, "direct", self.p2p_protocol(op, float(size)), None, float(fs.latency_s.max(initial=0)))
        hier_opts = dict(op.options.get("hier", {}))
        groups = self.groups_by_domain(ranks)
        # across domains NVLS pairs with an inter-domain stage: SHARP or a tree for all-reduce (NCCL's NVLS +
        # CollNet and NVLSTree), a ring for all-gather / reduce-scatter
        # (SHARP only with CollNet on, NCCL_COLLNET_ENABLE=1: without it NCCL has no multi-node NVLS)
        collnet = self.collnet(op)
        cross = "ring" if coll != "all_reduce" else ("sharp" if collnet else "tree")
        if algo == "auto":
            # trusted for the choice: NCCL's own tuning model (what NCCL runs); see docs/collectives.md
            best = nm.choose(self.system_for(op), coll, max(size, 1))
            algo, extra = NCCL_TO_OURS[best.algorithm]
            hier_opts = {**extra, **hier_opts}
            if algo == "hier" and coll != "all_reduce":
                hier_opts["inter"] = "ring"
        nccl_name = {"ring": "Ring", "tree": "Tree", "nvls": "NVLS"}.get(algo)
        if op.algorithm == "hier" and len(groups) == 1:
            raise SpecError("algo: hier joins NVLink domains over the network; these ranks share one domain: "
                            "use ring, tree or nvls")
        if algo == "nvls" and not all(self.nvls_domain[self.domain[g[0]]] and len(g) > 1 for g in groups):
            raise SpecError("algo: nvls needs two or more GPUs per NVLink domain on NVSwitches that reduce in the "
                            "switch (NVSwitch gen3+); use ring, tree or hier")
        if algo == "nvls" and len(groups) > 1:
            algo, hier_opts = "hier", {"intra": "nvls", "inter": cross, **hier_opts}
        if algo == "sharp" and not self.has_sharp:
            raise SpecError("algo: sharp needs InfiniBand switches with SHARP (quantum-2, quantum-x800); "
                            "this fabric has none")
        if algo == "sharp" and len(groups) == 1 and len(groups[0]) > 1:
            raise SpecError("algo: sharp reduces across NVLink domains in the switches; these ranks share one "
                            "domain: use ring, tree or nvls")
        if algo == "sharp" and max(len(g) for g in groups) > 1:
            algo, hier_opts = "hier", {"intra": "ring", "inter": "sharp", **hier_opts}
        if algo == "hier":
            intra = hier_opts.get("intra") or ("nvls" if all(self.nvls_domain[self.domain[g[0]]] for g in groups)
                                               and len(groups[0]) > 1 else "ring")
            inter = hier_opts.get("inter") or ("tree" if coll == "all_reduce" else "ring")
            nccl_name = {("nvls", "tree"): "NVLSTree", ("nvls", "sharp"): "NVLS", ("ring", "sharp"): "CollNetDirect",
                         ("nvls", "ring"): "NVLS", ("ring", "ring"): "Ring", ("ring", "tree"): "Tree"}[(intra, inter)]
            est = self.nccl_estimate(ranks, coll, size, nccl_name, op.options.get("nccl_version"),
                                     collnet=collnet or inter == "sharp")
            if nccl_name in ("NVLSTree", "NVLS", "CollNetDirect"):
                est = replace(est, protocol="Simple")  # NCCL runs these with the Simple protocol only
            if nccl_name == "NVLSTree" and coll == "all_reduce":  # its network hops' store-and-forward (round 8)
                est = replace(est, latency_s=est.latency_s + self.nvlstree_fill(op, size, est, groups))
            fs, name = self.hier(op, size, est, intra=intra, inter=inter)
            floor = 0.0
            if nccl_name == "NVLSTree" and coll == "all_reduce":
                # the kernel's own ceiling, nChannels x perChMaxNVLSTreeBw, on the releases where it is
                # absolute (nccl_model.NVLS_TREE_CAP_ABSOLUTE; issue 8 item 6)
                cap = nm.nvlstree_ceiling_GBps(self.system(ranks, nccl_version=op.options.get("nccl_version")))
                if cap:
                    floor = est.latency_s + size * nm.busbw_factor(coll, op.n) / (cap * 1e9)
            return Plan(op, fs, name, est.protocol, nccl_name, est.latency_s, min_time_s=floor)
        if algo == "sharp":
            nccl_name = "CollNetDirect"
            est = self.nccl_estimate(ranks, coll, size, nccl_name, op.options.get("nccl_version"), collnet=True)
            return Plan(op, self.sharp(op, size, est), "sharp", "Simple", nccl_name, est.latency_s)
        est = self.nccl_estimate(ranks, coll, size, nccl_name, op.options.get("nccl_version"))
        keff, lat, per_byte = est.kernel_efficiency, est.latency_s, 0.0
        if algo == "ring":
            fill = ring_fill_s(size, est.bandwidth_Bps, est.protocol)  # the ring's pipeline fill (calibration)
            if len(groups) == 1 and est.protocol in RING_FILL_OFF_ONE_DOMAIN.get(nm.arch_index(self.gpu.sm), ()):
                fill = 0.0  # round 16: no LL128 fill on one Hopper board (calibration.RING_FILL_OFF_ONE_DOMAIN)
            est = replace(est, latency_s=est.latency_s + fill)
            if len(groups) == 1:  # one domain: the ring kernel's own limit and latency terms (ring_ll)
                est, keff, extra, per_byte = ring_ll.one_domain_ring_terms(self, op, size, est, keff, groups[0][0])
                fill += extra
            lat += fill
            fs = self.ring(op, size, est, broadcast=coll == "broadcast")
        elif algo == "tree":
            # the tree/Simple pipeline fill (NCCL's chunking, trees.tree_fill_s): time, not NCCL's choice
            # (hops inside a domain at the tree rate its NVLink allows: every GPU of the chain sends S up
            # and S down, at the collective NVLink efficiency and NCCL's kernel limit of the size)
            nvl = bool(self.router.domain_has_nvlink[self.domain[groups[0][0]]])
            intra = self.gpu.nvlink_Bps * self.calib.nvlink_collective * est.kernel_efficiency / 2 if nvl else 0.0
            buff = check_buffsize(op.options.get("nccl_buffsize"))
            fill = tree_fill_s(size, est.bandwidth_Bps, est.protocol, tree_channels(est.nchannels), max(len(g) for g in groups),
                               len(groups), buff, intra_Bps=intra,
                               version=nm.parse_nccl_version(op.options.get("nccl_version")),
                               correction=tree_correction_factor(est.protocol, size) if coll == "all_reduce" else 1.0)
            est = replace(est, latency_s=est.latency_s + fill)
            lat += fill
            fs = self.tree(op, size, est)
        elif algo == "nvls":
            # one NVLink domain: NCCL's chunk of this size sets the loop cost and the pipeline fill
            # (issue 8 item 5; calibration.NVLS_LOOP_S, NVLS_FILL_LOOPS)
            chunk_k, fill = self.nvls_loop_terms(op, size)
            loops = self.nvls_loops(op, size)  # round 8: the large-domain synchronisation per loop
            fs = self.nvls(op, size, est, kernel=chunk_k, fill_s=fill, loops=loops)
            keff, sync = nvls_domain_terms(op.n, one_domain=True, loops=loops)
            keff *= chunk_k
            lat += sync + fill
        else:  # pragma: no cover - guarded by Collective
            raise SpecError(f"algo: {algo!r} is not implemented for {coll}")
        return Plan(op, fs, algo, est.protocol if algo != "nvls" else "Simple", nccl_name, lat,
                    kernel_efficiency=keff, latency_per_byte_s=per_byte)
