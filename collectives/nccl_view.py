"""NCCL's view of a collective's group, for the planner: the system NCCL's tuning model sees, whether CollNet
is on, NCCL's chosen protocol for an algorithm and the latency the run is charged for it.

A mixin of :class:`collectives.algorithms.Planner` (it reads the planner's ``router``, ``calib``, ``gpu``,
``nic``, ``domain``, ``local``, ``nvls_domain`` and ``has_sharp``); kept apart from the flow builders.

Examples
--------
>>> from topologies import build
>>> from fabric import Router, compile_fabric
>>> from collectives.runner import planner_for
>>> pl = planner_for(Router(compile_fabric(build("hgx-h100", {"domains": "2", "scaleout": "quantum-2"}))))
>>> s = pl.system(range(16))
>>> s.gpus_per_node, s.nnodes
(8, 2)
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np

from collectives import nccl_model as nm
from collectives.calibration import net_rendezvous_s
from collectives.ops import Collective
from collectives.trees import tree_channels
from topologies.errors import SpecError

__all__: list[str] = []


class _NcclViewMixin:
    """NCCL's system, CollNet decision, estimate and charged latency of a group (see the module docstring)."""

    def system(self, ranks, nvls: bool = True, nccl_version=None, collnet: bool = False) -> nm.NcclSystem:
        """NCCL's view of the group: ranks per domain, domains, NVLink, NICs, SHARP (``nvls=False``:
        ``NCCL_NVLS_ENABLE=0``, NCCL's NVLS and NVLSTree are off; ``nccl_version``: the release whose
        cap tables apply, e.g. "2.27.3"; ``collnet=True``: ``NCCL_COLLNET_ENABLE=1`` with the SHARP
        plugin, which counts only where the switches reduce: NCCL's default is off, see :meth:`collnet`)."""
        version = nm.parse_nccl_version(nccl_version)
        if nccl_version is not None and version is None:
            raise SpecError(f"options nccl_version: {nccl_version!r} is not an NCCL release such as '2.27.3'")
        groups = self.groups_by_domain(ranks)
        ppn = max(len(g) for g in groups)
        nnodes = len(groups)
        has_nvlink = bool(self.router.domain_has_nvlink[self.domain[groups[0][0]]]) and ppn > 1
        nic_Bps = self.nic.line_rate_Bps if self.nic else float(self.router.cf.meta.get("link_Bps", 5e10))
        return nm.NcclSystem(arch_sm=self.gpu.sm, gpus_per_node=ppn, nnodes=nnodes,
                             nvlink_links_per_gpu=self.gpu.nvlink_links if has_nvlink else 0,
                             has_nvswitch=has_nvlink,
                             nvls_capable=bool(nvls and has_nvlink and self.nvls_domain[self.domain[groups[0][0]]]),
                             nics_per_node=ppn if nnodes > 1 else 0, nic_Bps=nic_Bps if nnodes > 1 else 0.0,
                             collnet=bool(collnet and self.has_sharp), latency_inter_us=self.calib.net_latency_s * 1e6,
                             nccl_version=version,
                             protocols=self.calib.net_protocols if nnodes > 1 else None,
                             algorithms=self.calib.net_algorithms if nnodes > 1 else None,
                             tuner_protocols=self.calib.tuner_protocols if nnodes > 1 else None,
                             nic_via_c2c=bool(self.calib.nic_via_c2c and nnodes > 1))

    def collnet(self, op: Collective) -> bool:
        """Whether ``op`` runs with CollNet (IB SHARP) enabled, as NCCL decides it.

        NCCL considers CollNetDirect / CollNetChain and multi-node NVLS (NVLS + SHARP) only when the
        job sets ``NCCL_COLLNET_ENABLE=1`` and loads the SHARP plugin (NCCL env docs: "Default is 0").
        So the option ``collnet`` (default False) decides it, and an explicit SHARP algorithm
        (``algorithm='sharp'``, ``hier`` with ``inter='sharp'``) is the user's choice that turns it on.
        Only fabrics whose switches reduce (:attr:`has_sharp`) honour it.

        >>> from topologies import build
        >>> from fabric import Router, compile_fabric
        >>> from collectives.runner import planner_for
        >>> G = build("hgx-h100", {"domains": "2", "scaleout": "quantum-2"})
        >>> pl = planner_for(Router(compile_fabric(G)))
        >>> ar = lambda **kw: Collective("all_reduce", tuple(range(16)), 1 << 30, **kw)
        >>> pl.collnet(ar()), pl.collnet(ar(options={"collnet": True})), pl.collnet(ar(algorithm="sharp"))
        (False, True, True)
        """
        hier = op.options.get("hier") or {}
        forced = op.algorithm == "sharp" or (op.algorithm == "hier" and hier.get("inter") == "sharp")
        return self.has_sharp and (bool(op.options.get("collnet", False)) or forced)

    def system_for(self, op: Collective) -> nm.NcclSystem:
        """:meth:`system` of ``op``'s ranks with its options ``nvls``, ``nccl_version`` and ``collnet``."""
        return self.system(op.ranks, nvls=bool(op.options.get("nvls", True)),
                           nccl_version=op.options.get("nccl_version"), collnet=self.collnet(op))

    def nccl_estimate(self, ranks, collective: str, size: int, algorithm: str, nccl_version=None,
                      collnet: bool = False) -> nm.AlgoEstimate:
        """NCCL's best protocol for ``algorithm`` (its latency is the software latency we add)."""
        system = self.system(ranks, nccl_version=nccl_version, collnet=collnet)
        ests = nm.algo_times(system, collective, max(size, 1), algorithms=[algorithm])
        enabled = [e for e in ests if np.isfinite(e.time_s)]
        if enabled:
            return self.charged(system, collective, size, min(enabled, key=lambda e: e.time_s))
        # NCCL would not run it on this group (e.g. NVLS all-gather beyond 32 GPUs, CollNet beyond 8 GPUs per
        # node); keep its Simple-protocol latency, the one protocol every algorithm supports
        usable = [e for e in ests if np.isfinite(e.latency_s) and e.protocol == "Simple"] or \
            [e for e in ests if np.isfinite(e.latency_s)]
        if not usable:
            raise SpecError(f"algo: NCCL's model has no {algorithm} for {collective} on this group")
        return self.charged(system, collective, size, min(usable, key=lambda e: e.latency_s))

    def charged(self, system: nm.NcclSystem, collective: str, size: int, est: nm.AlgoEstimate) -> nm.AlgoEstimate:
        """``est`` with the latency the run is charged: NCCL's latency formula for the same algorithm and
        protocol with the network step's real cost (:data:`calibration.NET_STEP_LATENCY_US`) in place of
        the latency the net plugin reports (which only steered NCCL's choice); above the plugin's eager
        limit one step more, the first message's wait for the receiver (round 7, ``calibration.net_rendezvous_s``).

        >>> from dataclasses import replace
        >>> from topologies import build
        >>> from fabric import Router, compile_fabric
        >>> from collectives.runner import planner_for
        >>> G = build("hgx-h100", {"domains": "2", "scaleout": "aws-efa-v4", "nic": "EFA-v4-400G"})
        >>> pl = planner_for(Router(compile_fabric(G)))
        >>> round(pl.calib.net_latency_s * 1e6, 6), round(pl.calib.net_step_latency_s * 1e6, 6)  # reported, charged
        (35.0, 60.0)
        >>> est = pl.nccl_estimate(range(16), "all_reduce", 1 << 20, "Tree")
        >>> ref = nm.algo_times(replace(pl.system(range(16)), latency_inter_us=60.0), "all_reduce", 1 << 20,
        ...                     algorithms=["Tree"], protocols=[est.protocol])[0]
        >>> round((est.latency_s - ref.latency_s) * 1e6, 6)  # + the rendezvous: one step
        60.0
        """
        step_us = self.calib.net_step_latency_s * 1e6
        if system.nnodes < 2 or not np.isfinite(est.latency_s):
            return est
        lat = est.latency_s
        if step_us != system.latency_inter_us:
            lat = nm.algo_times(replace(system, latency_inter_us=step_us), collective, max(size, 1),
                                algorithms=[est.algorithm], protocols=[est.protocol])[0].latency_s
        lat += self.rendezvous_s(system, size, est)
        return est if lat == est.latency_s else replace(est, latency_s=lat)

    def rendezvous_s(self, system: nm.NcclSystem, size: int, est: nm.AlgoEstimate) -> float:
        """Round 7: the first network message's wait for the receiver's control message when it is above the
        net plugin's eager limit (``calibration.net_rendezvous_s``): one channel's share of the operation on
        the wire (LL lines carry 8 flag bytes per 8 data bytes, LL128 8 per 120), one network step."""
        if system.nnodes < 2:
            return 0.0
        wire = {"LL": 2.0, "LL128": 128 / 120}.get(est.protocol, 1.0)
        first = max(size, 1) / tree_channels(est.nchannels) * wire
        return net_rendezvous_s(self.calib.nic, first, self.calib.net_step_latency_s)
