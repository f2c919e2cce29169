"""Plans cached by the op's shape and rescaled in size, so each shape is routed once.

See :class:`PlanCache`; :func:`collectives.schedule.schedule` uses one.
"""

from __future__ import annotations

import math
from dataclasses import replace

import numpy as np

from collectives import nccl_model as nm
from collectives.algorithms import NCCL_TO_OURS, Plan, Planner
from collectives.calibration import (NVLS_PIPELINE_WINDOW_BYTES, net_eager_max_bytes, net_rendezvous_s,
                                    nccl_p2p_channels, ring_window_bytes)
from collectives.nccl_model.constants import parse_nccl_version
from collectives.p2p_channels import p2p_channel_counts
from collectives.trees import check_buffsize, tree_channels, tree_correction_factor, tree_depth, tree_window_bytes
from collectives.ops import Collective
from fabric.flowset import FlowSet
from topologies.errors import SpecError

__all__ = ["PlanCache"]


class PlanCache:
    """Plans by shape, rescaled in size: each shape is routed once.

    The key is (collective, ranks, algorithm, options, policy, seed) plus the
    *size-dependent decisions* of NCCL's model at the requested size: the
    algorithm ``auto`` would pick, the best protocol of every algorithm and
    every (algorithm, protocol) latency. Those are the only ways the size enters
    :meth:`Planner.plan` besides the flow sizes, which are linear in it (ring
    ``2(n-1)/n S``, tree ``S/2c``, NVLS ``S(1+1/n)``, all-to-all ``S/n``, ...).
    So a hit with equal decisions is the fresh plan with every flow size times
    ``S'/S``: exact up to rounding. Where the decisions differ (a protocol
    switch, the multi-node ring latency plateau), the size is planned afresh.
    MoE dispatch/combine ignore the size (token routing gives the bytes) and are
    reused as they are.

    Examples
    --------
    >>> from topologies import build
    >>> from fabric import compile_fabric, Router
    >>> from collectives.runner import planner_for
    >>> cache = PlanCache(planner_for(Router(compile_fabric(build("hgx-h100")))))
    >>> a = cache.plan(Collective("all_reduce", tuple(range(8)), 1 << 30, "ring"))
    >>> b = cache.plan(Collective("all_reduce", tuple(range(8)), 1 << 29, "ring"))
    >>> cache.misses, cache.hits, float(b.flows.size_bytes[0] / a.flows.size_bytes[0])
    (1, 1, 0.5)
    """

    def __init__(self, planner: Planner):
        self.planner = planner
        self._exact: dict = {}
        self._shape: dict = {}
        self.hits = 0
        self.misses = 0

    def _shape_key(self, op: Collective) -> tuple:
        p = self.planner
        return (op.collective, op.ranks, op.algorithm, op.options, p.policy, p.seed)

    def _decisions(self, op: Collective) -> tuple:
        if op.collective in ("all_to_all", "send_recv"):  # round 8: the rendezvous of the first network message
            per_peer = op.size_bytes / (op.n if op.collective == "all_to_all" else 1)
            # round 8: and NCCL's p2p protocol inside one NVLink domain (LL up to its threshold)
            # round 11: and, inside one NVLink domain, the shape of NCCL's p2p schedule (channels per peer)
            p = self.planner
            chans = nccl_p2p_channels(p.gpu.sm) if p.p2p_kernel_terms(op, per_peer) is not None else None
            # round 16: the release's LL rule (op.options carries nccl_version, part of the shape key too)
            shape = () if chans is None else p2p_channel_counts(
                op.n, int(per_peer), p2p_channels=chans[0], channels_per_peer=chans[1],
                release=parse_nccl_version(op.options.get("nccl_version")))
            return (self._above_eager(per_peer), p.p2p_protocol(op, per_peer), shape)
        if op.collective not in nm.MODELED_COLLECTIVES:
            return ()
        size = max(op.size_bytes, 1)
        system = self.planner.system_for(op)  # NCCL_NVLS_ENABLE / release options included
        ests = nm.algo_times(system, op.collective, size)
        best: dict = {}
        for e in ests:
            if e.enabled and (e.algorithm not in best or e.time_s < best[e.algorithm][1]):
                best[e.algorithm] = (e.protocol, e.time_s, e.kernel_efficiency)
        # (the NVLS pipeline fill below its window depends on the size, as do the kernel limits of the
        # protocol a plan uses, kept with the best protocols below)
        lat = tuple((e.algorithm, e.protocol, e.enabled, None if math.isnan(e.latency_s) else e.latency_s,
                     self.planner.rendezvous_s(system, size, e))  # round 7: the eager limit, by size
                    for e in ests)
        chosen = None
        if op.algorithm == "auto":
            try:
                chosen = nm.choose(system, op.collective, size).algorithm
            except SpecError:
                chosen = "none"
        # kernel limits of the NCCL algorithms this op can run on (the chosen one for auto)
        uses = {chosen} if op.algorithm == "auto" else {a for a, (ours, _) in NCCL_TO_OURS.items()
                                                          if ours == op.algorithm or op.algorithm in ("nvls", "sharp")}
        groups = self.planner.groups_by_domain(np.asarray(op.ranks)) if "NVLSTree" in uses else ()
        fill = (min(size, NVLS_PIPELINE_WINDOW_BYTES) if uses & {"NVLS", "NVLSTree"} else None,
                # the ring pipeline fill: flat rings only (forced, or auto's choice)
                min(size, ring_window_bytes()) if "ring" in (op.algorithm, str(chosen).lower()) else None,
                # single-domain NVLS: the loop cost (a kernel limit per NCCL chunk) and the loop fill
                (self.planner.nvls_loop_terms(op, size), self.planner.nvls_loops(op, size)) if "NVLS" in uses and
                len(self.planner.groups_by_domain(np.asarray(op.ranks))) == 1 else None,
                # the tree/Simple pipeline fill: min(S, nChannels x chunk) (trees.tree_window_bytes) at the
                # rates without NCCL's treeCorrectionFactor of the size (trees.tree_correction_factor)
                tuple((tree_window_bytes(size, tree_channels(e.nchannels),
                                         check_buffsize(op.options.get("nccl_buffsize")),
                                         tree_depth(system.gpus_per_node, system.nnodes), system.nccl_version),
                       tree_correction_factor(e.protocol, size))
                      for e in ests if e.algorithm == "Tree" and e.protocol == "Simple")
                if "tree" in (op.algorithm, str(chosen).lower()) else None,
                # round 8: NVLSTree's network-hop fill at its chunk of the size (Planner.nvlstree_fill)
                tuple(self.planner.nvlstree_fill(op, size, e, groups) for e in ests if e.algorithm == "NVLSTree")
                if "NVLSTree" in uses and len(groups) > 1 else None)
        # round 16: the channels / threads NCCL launches a ring with at this size (a kernel limit of the time);
        # round 16b: the channels after the scheduler's step (enqueue.scheduled_channels), the final count
        comm_nc = nm.tuning.comm_channels(system)
        launch = tuple((nm.enqueue.ring_launch_fraction(size, comm_nc, e.protocol, op.n, collective=op.collective,
                                                        version=system.nccl_version),
                        nm.enqueue.ring_tree_launch(size, comm_nc, e.protocol, op.n)[1])
                       for e in ests if e.algorithm == "Ring") \
            if "ring" in (op.algorithm, str(chosen).lower()) else None
        return chosen, tuple(sorted((a, v[0], v[2] if a in uses else None) for a, v in best.items())), lat, fill, launch

    def plan(self, op: Collective) -> Plan:
        """The plan of ``op`` (labelled as ``op``), from the cache when its shape was planned before."""
        shape = self._shape_key(op)
        sized = op.size_bytes if op.collective not in ("moe_dispatch", "moe_combine") else None
        hit = self._exact.get((shape, sized))
        if hit is None:
            dec = self._decisions(op)
            base = self._shape.get((shape, dec))
            if base is None or (sized is not None and base.op.size_bytes == 0):
                self.misses += 1
                hit = self.planner.plan(op)
                if sized is None or op.size_bytes > 0:
                    self._shape[(shape, dec)] = hit
            else:
                self.hits += 1
                hit = base if sized is None else _rescale(base, op.size_bytes)
            self._exact[(shape, sized)] = hit
        else:
            self.hits += 1
        return hit if hit.op is op else replace(hit, op=op)

    def send(self, src: int, dst: int, size_bytes: int, label: str) -> Plan:
        """A one-way send as a plan (NCCL p2p: Simple protocol, one ring step of latency)."""
        return self.sends([(src, dst, size_bytes, label)])[0]

    def sends(self, items) -> list[Plan]:
        """Plans of many one-way sends ``(src, dst, size_bytes, label)``; new pairs are routed in one batch.

        Each pair is routed once (with the same per-flow hash as alone, so the
        route is the one a single send gets) as a one-byte base plan, and once more
        for sizes above the net plugin's eager limit (a base of limit + 1 bytes: their
        first message waits for the receiver, round 8); sizes rescale it exactly (one
        flow of ``size`` bytes, latency independent of the size on each side of the limit).
        """
        pol, seed = self.planner.policy, self.planner.seed
        # round 8: a send above the net plugin's eager limit waits for the receiver (its own base plan)
        keys = [("send", int(s), int(d), pol, seed, self._above_eager(size)) for s, d, size, _ in items]
        new = sorted({k[1:3] + k[5:] for k in keys if k not in self._shape})
        self.misses += len(new)
        for above in (False, True):
            group = [x for x in new if x[2] == above]
            if not group:
                continue
            base = self._eager_limit() + 1 if above else 1  # a size on the same side of the limit
            src = np.array([x[0] for x in group], np.int64)
            dst = np.array([x[1] for x in group], np.int64)
            op = Collective("send_recv", (int(src[0]), int(dst[0])), base, label="send")
            # routed together for speed only: the pairs are not concurrent connections of one NIC
            fs = self.planner.direct(op, src, dst, np.full(len(group), float(base)), pxn=False, connections_per_flow=0)
            for j, (s_, d_, _) in enumerate(group):
                one = _flow_rows(fs, j)
                self._shape[("send", s_, d_, pol, seed, above)] = Plan(
                    Collective("send_recv", (s_, d_), base, label="send"), one, "direct", "Simple", None,
                    float(one.latency_s[0]))
        out = []
        for key, (_, _, size, label) in zip(keys, items):
            hit = self._exact.get((key, size))
            if hit is None:
                hit = self._exact[(key, size)] = _rescale(self._shape[key], int(size))
            self.hits += 1
            out.append(replace(hit, op=replace(hit.op, label=label)))
        self.hits -= len(new)          # the first use of a new pair was a miss, counted above
        return out

    def _eager_limit(self) -> int:
        return net_eager_max_bytes(self.planner.calib.nic) or 0

    def _above_eager(self, message_bytes: float) -> bool:
        """Whether a first network message of ``message_bytes`` waits for the receiver (round 8)."""
        return net_rendezvous_s(self.planner.calib.nic, message_bytes, 1.0) > 0


_PER_FLOW = ("res", "weight", "size_bytes", "src", "dst", "latency_s", "release_s", "phase", "group")


def _flow_rows(fs: FlowSet, j: int) -> FlowSet:
    """Flow ``j`` of ``fs`` as a flow set of its own: its resources without padding, per-resource factors kept."""
    out = {k: None if getattr(fs, k) is None else np.array(getattr(fs, k)[j:j + 1]) for k in _PER_FLOW}
    keep = out["res"][0] >= 0
    out["res"] = out["res"][:, keep]
    if out["weight"] is not None:
        out["weight"] = out["weight"][:, keep]
    return replace(fs, **out)


def _rescale(plan: Plan, size_bytes: int) -> Plan:
    f = size_bytes / plan.op.size_bytes
    # round 16b: the latency's part linear in S (the Simple ring's local copy, Plan.latency_per_byte_s) moves
    # with S, on the plan and on every flow that carries it
    dlat = plan.latency_per_byte_s * (size_bytes - plan.op.size_bytes)
    lat = plan.latency_s + dlat
    # a kernel floor latency + S / B (NVLSTree's ceiling) rescales with S like the flows
    floor = lat + (plan.min_time_s - plan.latency_s) * f if plan.min_time_s > 0 else 0.0
    flows = replace(plan.flows, size_bytes=plan.flows.size_bytes * f)
    if dlat and plan.flows.latency_s is not None:
        flows = replace(flows, latency_s=plan.flows.latency_s + dlat)
    return replace(plan, op=replace(plan.op, size_bytes=size_bytes), min_time_s=floor, latency_s=lat, flows=flows)
