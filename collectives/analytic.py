"""Analytical alpha-beta times, beside the flow-level ones.

``t = alpha + V / (B * eta * k)``: ``alpha`` is the software latency the plan uses
(NCCL's model, plus the large-domain NVLS term), ``V`` the bytes the busiest GPU
port moves in one direction (closed form per algorithm), ``B`` the port's raw
bandwidth, ``eta`` the wire efficiency of the kernel and protocol
(:mod:`collectives.calibration`, with the many-peer NIC factor for all-to-all) and
``k`` the plan's kernel efficiency (NCCL's kernel limits, the large-domain NVLS factor).

Closed forms per GPU port and direction, ``n`` ranks, size ``S``:

============================  ===========================================
ring all-reduce                 ``2 (n-1)/n S``
ring all-gather, reduce-scatter ``(n-1)/n S``
ring broadcast                  ``S``
tree all-reduce (chains)        ``2 (n-1)/n S`` (every GPU heads one chain per channel)
NVLS all-reduce                 ``S (1 + 1/n)``
NVLS all-gather/reduce-scatter  ``S``
all-to-all                      ``(n-1)/n S``
send/recv                       ``S``
============================  ===========================================

The forms hold for a group whose GPUs hang off one non-blocking switch stage:
one NVLink domain (``B`` = the GPU's NVLink bandwidth), or one-GPU hosts on one
leaf (``B`` = the NIC's). For any other group :func:`time_s` returns ``None``:
there the flow-level simulation is the answer.

Examples
--------
>>> round(ring_allreduce_s(8, 2**30, 450e9, 0.824, 0.0) * 1e3, 3)
5.068
"""

from __future__ import annotations

import numpy as np

from collectives.calibration import PROTOCOL_EFFICIENCY, nccl_p2p_family, nccl_p2p_per_peer_s, nic_p2p_factor
from fabric.arrays import sorted_unique

__all__ = ["port_bytes", "time_s", "ring_allreduce_s"]


def port_bytes(collective: str, algorithm: str, n: int, size: float) -> float | None:
    """Bytes the busiest GPU port moves per direction (closed forms above)."""
    if algorithm in ("ring", "tree"):
        return {"all_reduce": 2 * (n - 1) / n * size, "all_gather": (n - 1) / n * size,
                "reduce_scatter": (n - 1) / n * size, "broadcast": size}.get(collective)
    if algorithm == "nvls":
        return {"all_reduce": size * (1 + 1 / n), "all_gather": size, "reduce_scatter": size}.get(collective)
    if algorithm == "direct":
        return {"all_to_all": (n - 1) / n * size, "send_recv": size}.get(collective)
    return None


def ring_allreduce_s(n: int, size: float, port_Bps: float, eta: float, alpha_s: float) -> float:
    """Ring all-reduce on one switch: ``alpha + 2(n-1)/n S / (B eta)``."""
    return alpha_s + 2 * (n - 1) / n * size / (port_Bps * eta)


def time_s(planner, plan) -> float | None:
    """Alpha-beta time of ``plan`` when its group sits on one switch stage, else ``None``."""
    op = plan.op
    if op.collective.startswith("moe"):
        return None
    ranks = np.asarray(op.ranks)
    cf = planner.router.cf
    kind = {"nvls": "nvls", "direct": "p2p"}.get(plan.algorithm, "collective")
    eff_nv, _, eff_net = planner.calib.efficiency(kind)
    proto = PROTOCOL_EFFICIENCY.get(plan.protocol, 1.0)
    domains = sorted_unique(planner.domain[ranks])
    cap = cf.link_capacity_Bps  # 0 for failed links, reduced for degraded ones
    if len(domains) == 1 and planner.router.domain_has_nvlink[domains[0]]:
        g = cf.gpus[ranks]
        out = np.bincount(cf.link_src[planner.router.nv_up_mask], weights=cap[planner.router.nv_up_mask],
                          minlength=cf.n_nodes)[g]
        into = np.bincount(cf.link_dst[planner.router.nv_down_mask], weights=cap[planner.router.nv_down_mask],
                           minlength=cf.n_nodes)[g]
        B = float(min(out.min(), into.min()))   # the slowest GPU port paces the collective
        eta = eff_nv * proto
    else:
        nics = planner.router.nic_of[cf.gpus[ranks]]
        if (nics < 0).any():
            return None
        ups = planner.router.nic_up[nics]
        leaves = sorted_unique(cf.link_dst[ups[ups >= 0]])
        if len(leaves) != 1 or len(domains) != len(ranks):
            return None
        per_nic = np.where(ups >= 0, cap[np.maximum(ups, 0)], 0.0).sum(axis=1)
        B = float(per_nic.min())
        eta = eff_net * proto
        if plan.algorithm == "direct" and op.collective == "all_to_all":
            # one GPU per domain: n-1 connections and n-1 remote NIC ports on every NIC port
            eta *= float(nic_p2p_factor(op.n - 1, nccl_p2p_family("nccl", planner.calib.nic)))
    V = port_bytes(op.collective, plan.algorithm, op.n, float(op.size_bytes))
    if V is None:
        return None
    # a kernel-side floor (Plan.min_time_s: round 11, NCCL's p2p schedule inside one NVLink domain) bounds it too
    return max(plan.latency_s + V / (B * eta * plan.kernel_efficiency), plan.min_time_s)
