"""NCCL's own performance model (tuning model), re-implemented and pinned to NCCL 2.30.7.

fabric-emu uses this module as its analytical reference and for ``--algo auto``: it
predicts, for one collective of a given size on a given system, the latency, the
bandwidth and the time of every (algorithm, protocol) pair the way NCCL's tuner does,
and picks the cheapest pair with NCCL's plain argmin.

What is exact and what is reconstructed
---------------------------------------
*Exact* (same constants, same formulas, same order of the refinements as NCCL):

* every constant table below (``BASE_LATENCIES_US``, ``HW_LATENCIES_US``,
  ``LL_MAX_BWS_GBPS``, the per-channel caps, ``NVLS_EFFICIENCY``,
  ``TREE_CORRECTION_FACTOR``, the NVLink per-link bandwidths, the speed ladders);
* the bandwidth and latency formulas of ``ncclTopoTuneModel``, the time formula of
  ``ncclTopoGetAlgoTime`` (tree correction factor, ring plateau rule), the
  enable/disable rules of ``ncclTopoTuneModel`` and ``updateCollCostTable``, and the
  argmin of ``topoGetAlgoInfo``.

*Reconstructed* (NCCL measures these at init; we derive them from a simple system
description, see :func:`nccl_graph`):

* the graph-search outputs ``nChannels``, ``bwIntra``, ``bwInter`` of each pattern.
  The search loop of ``ncclTopoCompute`` (speed ladder, pass 1 / pass 2, channel
  duplication, NVLS and tree special cases) is followed step by step, but the
  "does a channel fit" test runs on a collapsed topology: all NVSwitches are one
  node, each GPU has one NVLink port of ``links x per-link`` GB/s, each NIC has
  ``port Mb/s / 8000`` GB/s per direction and PCIe never limits. Single-node H100
  results match NCCL's own GRAPH log (ring 12 x 30, tree 12 x 30, NVLS 8 x 40/60,
  NVIDIA/nccl#1197); multi-node results have not been checked against logs.
* ``comm->nChannels`` (used only by the ring plateau rule) is taken as
  ``min(64, 2 x min(ring, tree channels))`` (``ncclTopoPostset`` duplicates channels).
* Things NCCL knows and we assume: CUDA >= 12 (no CUDA 11.8 LL128 quirk), x86 host
  unless ``cpu_vendor="arm"``, IB net plugin (``latencyInter = 0``), no tuner plugin,
  no environment overrides, one operation per launch (``numPipeOps = 1``), a sum
  reduction on a non-FP8 type (no FP8 ring penalty, SHARP supports the op), a SHARP
  plugin that supports all-gather/reduce-scatter, a balanced tree (so the 0.85 "TREE
  pattern" factor is never applied), 1 NIC head per NIC for CollNet/NVLS.

Sources
-------
NVIDIA/nccl @ 5067397 (NCCL 2.30.7, 2026-06-11). Line numbers are those recorded in
``shared/notes/hardware.md`` section 4 for that commit; the values were cross-checked
against stored copies of recent (2.29/2.30-era) ``src/graph/tuning.cc``,
``src/graph/search.cc``, ``src/graph/topo.h``, ``src/enqueue.cc``, ``src/init.cc``,
``src/graph/connect.cc`` and ``src/transport/nvls.cc``. No code was copied.

Sizes
-----
NCCL feeds ``nBytes = elemsize x ncclFuncMaxSendRecvCount(count)`` to the model:
``count x elemsize`` for all-reduce, broadcast and reduce, and ``nranks x count x
elemsize`` (the larger buffer) for all-gather and reduce-scatter. nccl-tests' "size"
column is the all-gather *receive* buffer and the reduce-scatter *send* buffer, which
is the same number, so ``size_bytes`` here is nccl-tests' size and is fed to the model
unchanged for every collective.

All-to-all and send/recv are not in NCCL's tuning model (NCCL schedules them as
point-to-point operations without a cost table); :func:`algo_times` refuses them and
:func:`busbw_factor` still knows their nccl-tests factors.

Examples
--------
>>> sys8 = NcclSystem.hgx("h100")
>>> best = choose(sys8, "all_reduce", 1 << 20)
>>> (best.algorithm, best.protocol)
('Ring', 'LL')
>>> best = choose(sys8, "all_reduce", 2 << 20)
>>> (best.algorithm, best.protocol)
('NVLS', 'Simple')
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass, field
from typing import Iterable, Sequence

from topologies.errors import SpecError

__all__ = [
    "NCCL_VERSION",
    "NCCL_COMMIT",
    "ALGORITHMS",
    "PROTOCOLS",
    "COLLECTIVES",
    "MODELED_COLLECTIVES",
    "PATTERNS",
    "PROTOCOL_WIRE_EFFICIENCY",
    "NcclSystem",
    "Graph",
    "AlgoEstimate",
    "nccl_graph",
    "algo_times",
    "choose",
    "busbw_factor",
]

NCCL_VERSION = "2.30.7"
NCCL_COMMIT = "5067397c2676d5aed50042fc39e5c8ee96eb0027"

# --------------------------------------------------------------------------------------
# Names and indices (src/include/device.h / nccl_common.h enum order)
# --------------------------------------------------------------------------------------

#: NCCL's algorithms, in NCCL's index order (NCCL_ALGO_TREE=0 ... NCCL_ALGO_PAT=6).
ALGORITHMS: tuple[str, ...] = ("Tree", "Ring", "CollNetDirect", "CollNetChain", "NVLS", "NVLSTree", "PAT")
#: NCCL's protocols, in NCCL's index order (LL=0, LL128=1, Simple=2).
PROTOCOLS: tuple[str, ...] = ("LL", "LL128", "Simple")
#: Collectives NCCL's tuning model covers, with fabric-emu's names.
MODELED_COLLECTIVES: tuple[str, ...] = ("all_reduce", "all_gather", "reduce_scatter", "broadcast", "reduce")
#: Collectives :func:`busbw_factor` knows (nccl-tests' set).
COLLECTIVES: tuple[str, ...] = MODELED_COLLECTIVES + ("all_to_all", "send_recv")
#: Graph-search patterns :func:`nccl_graph` reconstructs.
PATTERNS: tuple[str, ...] = ("ring", "tree", "nvls", "collnet_direct", "collnet_chain")

_TREE, _RING, _COLLNET_DIRECT, _COLLNET_CHAIN, _NVLS, _NVLS_TREE, _PAT = range(7)
_LL, _LL128, _SIMPLE = range(3)
_HW_NVLINK, _HW_PCI, _HW_NET = range(3)
_VOLTA, _AMPERE, _HOPPER, _BLACKWELL = range(4)  # NCCL_*_COMPCAP_IDX

# NCCL's ncclFunc_t order: Broadcast, Reduce, AllGather, ReduceScatter, AllReduce.
_BCAST, _REDUCE, _AG, _RS, _AR = range(5)
_COLL_INDEX = {"broadcast": _BCAST, "reduce": _REDUCE, "all_gather": _AG, "reduce_scatter": _RS, "all_reduce": _AR}

# Path types (src/graph/topo.h): LOC 0, NVL 1, NVB 2, C2C 3, PIX 4, PXB 5, P2C 6, PXN 7, PHB 8, SYS 9.
_PATH_LOC, _PATH_NVL, _PATH_NVB, _PATH_PIX, _PATH_PXB, _PATH_PXN = 0, 1, 2, 4, 5, 7

# --------------------------------------------------------------------------------------
# Constant tables: src/graph/tuning.cc @ 5067397 (ncclTunerConstantsDefaults)
# --------------------------------------------------------------------------------------

#: ``baseLatencies[algo][proto]`` in us, tuning.cc l.148-155.
BASE_LATENCIES_US: tuple[tuple[float, float, float], ...] = (
    (6.8, 14.0, 8.4),  # Tree
    (6.6, 14.0, 8.4),  # Ring
    (0.0, 0.0, 0.0),  # CollNetDirect
    (0.0, 0.0, 0.0),  # CollNetChain
    (0.0, 0.0, 0.0),  # NVLS
    (0.0, 0.0, 0.0),  # NVLSTree
    (8.0, 8.0, 8.0),  # PAT
)

#: ``hwLatencies[hw][algo][proto]`` in us (hw = NVLINK, PCI, NET), tuning.cc l.156-176.
HW_LATENCIES_US: tuple[tuple[tuple[float, float, float], ...], ...] = (
    (  # NVLINK
        (0.6, 1.25, 4.0), (0.6, 1.9, 3.4), (0.0, 0.0, 3.7), (0.0, 0.0, 2.8),
        (0.0, 0.0, 25.0), (0.0, 0.0, 25.0), (0.0, 0.0, 4.0),
    ),
    (  # PCI
        (1.0, 1.9, 4.0), (1.0, 2.5, 5.7), (0.0, 0.0, 3.7), (0.0, 0.0, 2.8),
        (0.0, 0.0, 0.0), (0.0, 0.0, 0.0), (0.0, 0.0, 4.0),
    ),
    (  # NET
        (5.0, 8.5, 14.0), (2.7, 4.0, 14.0), (0.0, 0.0, 31.0), (0.0, 0.0, 30.0),
        (0.0, 0.0, 18.0), (0.0, 0.0, 20.9), (0.0, 0.0, 14.0),
    ),
)

#: ``llMaxBws[row][N1, N2, N4+]`` in GB/s, tuning.cc l.177-182. Single node: row = GPU
#: arch (Volta, Ampere, Hopper, Blackwell). Multi-node: row = CPU vendor (0 Intel/other,
#: 1 AMD), which is why a multi-node Intel host reads the "Volta" row.
LL_MAX_BWS_GBPS: tuple[tuple[float, float, float], ...] = (
    (39.0, 39.0, 20.4),
    (87.7, 22.5, 19.0),
    (141.0, 45.0, 35.0),
    (282.0, 90.0, 70.0),
)
#: ``perChMaxRingLL128Bws[arch][N1, N2, N4+]`` GB/s per channel, tuning.cc l.183-188.
PER_CH_MAX_RING_LL128_GBPS: tuple[tuple[float, float, float], ...] = (
    (20.0, 20.0, 20.0), (20.0, 20.0, 20.0), (36.7, 36.7, 36.7), (40.0, 40.0, 40.0),
)
#: ``perChMaxTreeLL128Bws[arch][N1, N2, N4+]``, tuning.cc l.189-194.
PER_CH_MAX_TREE_LL128_GBPS: tuple[tuple[float, float, float], ...] = (
    (20.0, 20.0, 20.0), (20.0, 20.0, 20.0), (36.7, 36.7, 29.0), (55.6, 31.67, 20.0),
)
#: ``perChMaxTreeBws[arch][N1, N2, N4+]``, tuning.cc l.195-200.
PER_CH_MAX_TREE_GBPS: tuple[tuple[float, float, float], ...] = (
    (26.5, 18.5, 10.0), (24.0, 23.6, 17.8), (38.7, 41.4, 36.0), (70.0, 42.8, 24.0),
)
#: ``perChMaxNVLSTreeBws[arch][N1, N2, N4+]``, tuning.cc l.201-211 (Volta/Ampere rows
#: are copies of the tree row in the source; NVLS needs Hopper+ anyway).
PER_CH_MAX_NVLS_TREE_GBPS: tuple[tuple[float, float, float], ...] = (
    (26.5, 18.5, 10.0), (24.0, 23.6, 17.8), (0.0, 57.7, 45.5), (0.0, 96.0, 80.0),
)
#: ``nvlsEfficiency[arch]``, tuning.cc l.139.
NVLS_EFFICIENCY: tuple[float, float, float, float] = (0.0, 0.0, 0.85, 0.74)

#: ``treeCorrectionFactor[proto][log2(nBytes/64)]``, tuning.cc l.623 (64 B ... 512 MB).
TREE_CORRECTION_FACTOR: tuple[tuple[float, ...], ...] = (
    (1.0, 1.0, 1.0, 1.0, .9, .8, .7, .7, .7, .7, .6, .5, .4, .4, .5, .6, .7, .8, .9, 1.0, 1.0, 1.0, 1.0, 1.0),
    (1.0, 1.0, 1.0, 1.0, 1.0, .9, .8, .8, .8, .7, .6, .6, .6, .6, .6, .6, .8, .9, .9, .9, .9, 1.0, 1.0, 1.0),
    (.9, .9, .9, .9, .9, .9, .9, .8, .7, .6, .6, .5, .5, .5, .5, .6, .7, .8, .7, .7, .8, .9, .9, .9),
)

#: Wire efficiency of each protocol relative to Simple as NCCL's model uses it: LL moves
#: 8-byte lines with a 4-byte flag (the ring LL x0.5, tuning.cc l.330), LL128 keeps 120
#: of 128 bytes (the ring LL128 x0.92, l.332), Simple 1.
PROTOCOL_WIRE_EFFICIENCY: tuple[float, float, float] = (0.5, 0.92, 1.0)

#: ``getNetOverhead`` (tuning.cc l.228): per-step network post overhead in us.
NET_OVERHEAD_US: dict[str, float] = {"intel": 1.0, "amd": 2.0, "arm": 1.0}
#: Net overhead multiplier for the Simple protocol (tuning.cc, ring latency).
NET_OVERHEAD_SIMPLE_FACTOR = 3.0
#: Ring/Simple all-reduce latency factor across nodes (tuning.cc l.645-649), SM >= 80 / older.
RING_PLATEAU_FACTOR = (1.4, 1.9)

# --------------------------------------------------------------------------------------
# Topology constants: src/graph/topo.h l.17-35, search.cc l.1051-1067, nvls.cc l.155-157
# --------------------------------------------------------------------------------------

#: NVLink bandwidth per link (GB/s) by compute capability, topo.h l.17-24 and
#: ``ncclTopoNVLinkBw`` (topo.h l.274-281).
NVLINK_BW_PER_LINK_GBPS: dict[str, float] = {
    "SM60": 18.0, "SM70": 20.0, "SM80": 20.0, "SM86": 12.0, "SM90": 20.6, "SM100": 40.1,
}
PCI_BW_GBPS = 12.0  # topo.h: PCI Gen3 x16
LOC_BW_GBPS = 5000.0  # topo.h

#: Graph-search speed ladders (per-channel GB/s, tried high to low), search.cc l.1051-1067.
SPEED_ARRAY_INTRA: tuple[float, ...] = (40.0, 30.0, 20.0, 18.0, 15.0, 12.0, 10.0, 9.0, 7.0, 6.0, 5.0, 4.0, 3.0)
SPEED_ARRAY_INTER: tuple[float, ...] = (
    48.0, 30.0, 28.0, 24.0, 20.0, 18.0, 15.0, 12.0, 10.0, 9.0, 7.0, 6.0, 5.0, 4.0, 3.0, 2.4, 1.2, 0.24, 0.12,
)
SM90_SPEED_ARRAY_INTRA: tuple[float, ...] = (60.0, 50.0, 40.0, 30.0, 24.0, 20.0, 15.0, 12.0, 11.0, 6.0, 3.0)
SM90_SPEED_ARRAY_INTER: tuple[float, ...] = (
    48.0, 45.0, 42.0, 40.0, 30.0, 24.0, 22.0, 20.0, 17.5, 15.0, 12.0, 6.0, 3.0, 2.4, 1.2, 0.24, 0.12,
)
SM100_SPEED_ARRAY_INTRA: tuple[float, ...] = (90.0, 80.0, 70.0, 60.0, 50.0, 45.0, 40.0, 30.0, 24.0, 20.0, 19.0, 18.0)
SM100_SPEED_ARRAY_INTER: tuple[float, ...] = (
    96.0, 86.0, 80.0, 48.0, 45.1, 42.0, 40.0, 30.0, 24.0, 22.0, 20.0, 17.5, 15.0, 12.0, 6.0, 3.0, 2.4, 1.2, 0.24, 0.12,
)

MAXCHANNELS = 64  # src/include/device.h
NCCL_MAX_NVLS_ARITY = 32  # NVLS graph: maxChannels = min(32, nGPUs) (search.cc l.1125-1140)
NCCL_MAX_DIRECT_ARITY = 7  # CollNetDirect: at most 8 local ranks / heads
#: NVLS launch channel counts (nvls.cc l.155-157); runtime only, not used by the cost model.
NVLS_NCHANNELS = {"SM90": 16, "SM100_multinode": 32, "SM100_single_nvl_domain": 24}
_COLLNET_NODE_THRESHOLD = 2  # init.cc: NCCL_COLLNET_NODE_THRESHOLD default

_EPS = 1e-9


# --------------------------------------------------------------------------------------
# Public data types
# --------------------------------------------------------------------------------------


@dataclass(frozen=True)
class NcclSystem:
    """The system NCCL's model is evaluated on: identical nodes of GPUs and NICs.

    Parameters
    ----------
    arch_sm : int
        Compute capability as an integer (80 A100, 90 H100/H200, 100 B200/GB200, 103 B300).
    gpus_per_node : int
        GPUs (ranks) per node, or per NVLink domain for NVL72-style systems.
    nnodes : int
        Number of nodes (NVLink domains). ``nranks = gpus_per_node * nnodes``.
    nvlink_links_per_gpu : int
        NVLink links per GPU (18 on Hopper/Blackwell HGX, 12 on A100); 0 = PCIe only.
    has_nvswitch : bool
        GPUs reach each other through NVSwitch (NCCL collapses all switches into one node).
    nvls_capable : bool or None
        The NVSwitch can reduce/multicast (NVLS). ``None`` means "Hopper or newer with an
        NVSwitch", which is what NCCL's ``CU_DEVICE_ATTRIBUTE_MULTICAST_SUPPORTED`` reports
        on HGX/NVL72 with Fabric Manager running.
    nics_per_node : int
        Network ports used by NCCL per node (one per GPU on rail-optimized clusters).
    nic_Bps : float
        Per-NIC bandwidth per direction in bytes/s (400 Gb/s = 5e10). NCCL's model uses
        ``port Mb/s / 8000`` GB/s, i.e. ``nic_Bps / 1e9``.
    collnet : bool
        IB SHARP (NCCL's CollNet plugin) is available.
    cpu_vendor : {"intel", "amd", "arm"}
        Host CPU; sets the per-step network overhead and the multi-node LL cap row.

    Examples
    --------
    >>> s = NcclSystem(arch_sm=90, gpus_per_node=8, nnodes=2, nics_per_node=8, nic_Bps=5e10)
    >>> s.nranks, s.nvlink_GBps, s.nic_GBps
    (16, 370.8, 50.0)
    """

    arch_sm: int
    gpus_per_node: int
    nnodes: int = 1
    nvlink_links_per_gpu: int = 18
    has_nvswitch: bool = True
    nvls_capable: bool | None = None
    nics_per_node: int = 0
    nic_Bps: float = 0.0
    collnet: bool = False
    cpu_vendor: str = "intel"

    def __post_init__(self) -> None:
        _check_int("arch_sm", self.arch_sm, 60, "an integer SM version >= 60 (e.g. 80, 90, 100)")
        _check_int("gpus_per_node", self.gpus_per_node, 1, "an integer >= 1")
        _check_int("nnodes", self.nnodes, 1, "an integer >= 1")
        _check_int("nvlink_links_per_gpu", self.nvlink_links_per_gpu, 0, "an integer >= 0")
        _check_int("nics_per_node", self.nics_per_node, 0, "an integer >= 0")
        if not isinstance(self.nic_Bps, (int, float)) or isinstance(self.nic_Bps, bool) or not (
            math.isfinite(self.nic_Bps) and self.nic_Bps >= 0
        ):
            raise SpecError(f"nic_Bps must be a finite number of bytes/s >= 0, got {self.nic_Bps!r}")
        vendor = self.cpu_vendor.lower() if isinstance(self.cpu_vendor, str) else self.cpu_vendor
        if vendor not in NET_OVERHEAD_US:
            raise SpecError(f"cpu_vendor must be one of intel, amd, arm, got {self.cpu_vendor!r}")
        object.__setattr__(self, "cpu_vendor", vendor)
        if self.has_nvswitch and self.nvlink_links_per_gpu == 0 and self.gpus_per_node > 1:
            raise SpecError("has_nvswitch=True needs nvlink_links_per_gpu >= 1, got 0")
        if self.nnodes > 1 and (self.nics_per_node < 1 or self.nic_Bps <= 0):
            raise SpecError(
                f"nnodes={self.nnodes} needs nics_per_node >= 1 and nic_Bps > 0, "
                f"got nics_per_node={self.nics_per_node}, nic_Bps={self.nic_Bps}"
            )
        if self.nvls_capable is None:
            object.__setattr__(self, "nvls_capable", bool(self.has_nvswitch and self.arch_sm >= 90))
        elif not isinstance(self.nvls_capable, bool):
            raise SpecError(f"nvls_capable must be True, False or None, got {self.nvls_capable!r}")

    @property
    def nranks(self) -> int:
        """Total ranks: ``gpus_per_node * nnodes``."""
        return self.gpus_per_node * self.nnodes

    @property
    def nvlink_GBps(self) -> float:
        """NCCL's per-GPU NVLink bandwidth (GB/s): links x per-link constant of the arch."""
        return round(self.nvlink_links_per_gpu * _nvlink_bw_per_link(self.arch_sm), 6)

    @property
    def nic_GBps(self) -> float:
        """NCCL's per-NIC bandwidth (GB/s): port Mb/s / 8000 = ``nic_Bps / 1e9``."""
        return self.nic_Bps / 1e9

    @classmethod
    def hgx(
        cls,
        gpu: str,
        nnodes: int = 1,
        *,
        gpus_per_node: int | None = None,
        nic_Gbps: float | None = None,
        collnet: bool = False,
        cpu_vendor: str = "intel",
    ) -> "NcclSystem":
        """Build a system of HGX-style nodes (or NVL72 domains) from a GPU name.

        Parameters
        ----------
        gpu : {"a100", "h100", "h200", "b200", "b300", "gb200", "gb300"}
            GPU family. ``gb200``/``gb300`` are 72-GPU NVLink domains with 4 NICs per 4 GPUs.
        nnodes : int
            Nodes (or NVLink domains).
        gpus_per_node : int, optional
            Ranks per node (default 8, or 72 for GB200/GB300); a smaller value models a
            communicator over part of a node.
        nic_Gbps : float, optional
            NIC speed in Gb/s (defaults: A100 200, H100/H200/B200/GB200 400, B300/GB300 800).
        collnet, cpu_vendor
            As in :class:`NcclSystem`.

        Examples
        --------
        >>> NcclSystem.hgx("b200", 4).nic_GBps
        50.0
        """
        presets = {
            # gpu: (SM, NVLink links per GPU, default GPUs per node, default NIC Gb/s); one NIC per GPU
            "a100": (80, 12, 8, 200.0),
            "h100": (90, 18, 8, 400.0),
            "h200": (90, 18, 8, 400.0),
            "b200": (100, 18, 8, 400.0),
            "b300": (103, 18, 8, 800.0),
            "gb200": (100, 18, 72, 400.0),
            "gb300": (103, 18, 72, 800.0),
        }
        key = gpu.lower() if isinstance(gpu, str) else gpu
        if key not in presets:
            raise SpecError(f"gpu must be one of {', '.join(presets)}, got {gpu!r}")
        sm, links, gpn_default, nic_default = presets[key]
        gpn = gpn_default if gpus_per_node is None else gpus_per_node
        _check_int("gpus_per_node", gpn, 1, "an integer >= 1")
        gbps = nic_default if nic_Gbps is None else nic_Gbps
        if not isinstance(gbps, (int, float)) or not (math.isfinite(gbps) and gbps > 0):
            raise SpecError(f"nic_Gbps must be a number > 0, got {nic_Gbps!r}")
        return cls(
            arch_sm=sm, gpus_per_node=gpn, nnodes=nnodes, nvlink_links_per_gpu=links,
            has_nvswitch=True, nvls_capable=None, nics_per_node=gpn, nic_Bps=gbps * 1e9 / 8,
            collnet=collnet, cpu_vendor=cpu_vendor,
        )


@dataclass(frozen=True)
class Graph:
    """A (reconstructed) graph-search result, as NCCL prints it with ``NCCL_DEBUG_SUBSYS=GRAPH``.

    Attributes
    ----------
    pattern : str
        One of :data:`PATTERNS`.
    nchannels : int
        ``graph->nChannels`` (0: NCCL found no graph, the algorithm is unavailable).
    bw_intra_GBps, bw_inter_GBps : float
        ``graph->bwIntra`` / ``graph->bwInter``: per-channel GB/s inside a node and over
        the network, in NCCL's units (GB = 1e9 B).
    """

    pattern: str
    nchannels: int
    bw_intra_GBps: float
    bw_inter_GBps: float


@dataclass(frozen=True)
class AlgoEstimate:
    """NCCL's prediction for one (algorithm, protocol) pair.

    Attributes
    ----------
    algorithm, protocol : str
        Names from :data:`ALGORITHMS` and :data:`PROTOCOLS`.
    latency_s : float
        The latency term ``lat x latCount`` (incl. the ring plateau factor), seconds. NaN
        when NCCL's model has no entry for the pair.
    bandwidth_Bps : float
        NCCL's "algorithm bandwidth" ``comm->bandwidths`` (incl. the tree correction
        factor for this size), bytes/s, applied to the model's nBytes. Reported even when
        the pair is disabled (0 when the model leaves it at 0).
    time_s : float
        ``latency_s + size_bytes / bandwidth_Bps``; ``inf`` when disabled.
    busbw_Bps : float
        nccl-tests bus bandwidth ``size / time x busbw_factor``; 0 when disabled.
    nchannels : int
        Channels of the graph the algorithm runs on (graph nChannels).
    enabled : bool
        Whether NCCL would consider the pair in its argmin.
    reason : str or None
        Why the pair is disabled (None when enabled).
    kernel_efficiency : float
        ``bandwidth / nominal``, in (0, 1]: the part of NCCL's bandwidth that is a kernel
        limit rather than the wire (LL/LL128 caps, per-channel caps, the tree LL 1/3.8,
        the tree correction factor of this size). ``nominal`` is the graph bandwidth times
        the protocol's wire efficiency (:data:`PROTOCOL_WIRE_EFFICIENCY`; tree all-reduce
        also its 0.92). The flow model applies it to the flows of the plan, so that on an
        idle fabric flow times and NCCL's times use the same kernel limits.
    """

    algorithm: str
    protocol: str
    latency_s: float
    bandwidth_Bps: float
    time_s: float
    busbw_Bps: float
    nchannels: int
    enabled: bool
    reason: str | None = field(default=None)
    kernel_efficiency: float = 1.0


# --------------------------------------------------------------------------------------
# Validation helpers
# --------------------------------------------------------------------------------------


def _check_int(name: str, value: object, minimum: int, allowed: str) -> None:
    if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
        raise SpecError(f"{name} must be {allowed}, got {value!r}")


def _norm(name: str) -> str:
    return name.strip().lower().replace("_", "").replace("-", "").replace(" ", "")


_COLL_ALIASES = {_norm(c): c for c in COLLECTIVES}
_COLL_ALIASES.update({"alltoall": "all_to_all", "sendrecv": "send_recv", "bcast": "broadcast"})
_ALGO_ALIASES = {_norm(a): a for a in ALGORITHMS}
_PROTO_ALIASES = {_norm(p): p for p in PROTOCOLS}
_PATTERN_ALIASES = {_norm(p): p for p in PATTERNS}
_PATTERN_ALIASES.update({"collnet": "collnet_direct", "balancedtree": "tree"})


def _collective_name(collective: object, allowed: Sequence[str]) -> str:
    name = _COLL_ALIASES.get(_norm(collective)) if isinstance(collective, str) else None
    if name is None or name not in allowed:
        extra = ""
        if name in ("all_to_all", "send_recv"):
            extra = " (all_to_all and send_recv are point-to-point in NCCL and not in its tuning model)"
        raise SpecError(f"collective must be one of {', '.join(allowed)}, got {collective!r}{extra}")
    return name


def _names(kind: str, values: Iterable[str] | None, aliases: dict[str, str], canonical: Sequence[str]) -> list[str]:
    if values is None:
        return list(canonical)
    if isinstance(values, str):
        values = [values]
    out = []
    for v in values:
        name = aliases.get(_norm(v)) if isinstance(v, str) else None
        if name is None:
            raise SpecError(f"{kind} must be one of {', '.join(canonical)}, got {v!r}")
        if name not in out:
            out.append(name)
    return out


def _size(size_bytes: object) -> int:
    if isinstance(size_bytes, bool) or not isinstance(size_bytes, (int, float)):
        raise SpecError(f"size_bytes must be a whole number of bytes >= 0, got {size_bytes!r}")
    if not math.isfinite(size_bytes) or size_bytes < 0 or size_bytes != int(size_bytes):
        raise SpecError(f"size_bytes must be a whole number of bytes >= 0, got {size_bytes!r}")
    return int(size_bytes)


# --------------------------------------------------------------------------------------
# nccl-tests bus bandwidth factors
# --------------------------------------------------------------------------------------


def busbw_factor(collective: str, nranks: int) -> float:
    """nccl-tests' bus-bandwidth factor: ``busbw = algbw x factor``.

    all_reduce ``2(n-1)/n``; all_gather, reduce_scatter, all_to_all ``(n-1)/n``;
    broadcast, reduce, send_recv ``1`` (nccl-tests ``*GetBw``, doc/PERFORMANCE.md).

    Parameters
    ----------
    collective : str
        One of :data:`COLLECTIVES`.
    nranks : int
        Number of ranks, >= 1.

    Returns
    -------
    float

    Examples
    --------
    >>> busbw_factor("all_reduce", 8)
    1.75
    >>> busbw_factor("all_gather", 8)
    0.875
    >>> busbw_factor("broadcast", 8)
    1.0
    """
    name = _collective_name(collective, COLLECTIVES)
    _check_int("nranks", nranks, 1, "an integer >= 1")
    n = nranks
    if name == "all_reduce":
        return 2.0 * (n - 1) / n
    if name in ("all_gather", "reduce_scatter", "all_to_all"):
        return (n - 1) / n
    return 1.0


# --------------------------------------------------------------------------------------
# Graph search reconstruction (src/graph/search.cc ncclTopoCompute)
# --------------------------------------------------------------------------------------


def _nvlink_bw_per_link(sm: int) -> float:
    # ncclTopoNVLinkBw, topo.h l.274-281.
    if sm >= 100:
        return NVLINK_BW_PER_LINK_GBPS["SM100"]
    if sm >= 90:
        return NVLINK_BW_PER_LINK_GBPS["SM90"]
    if sm == 86:
        return NVLINK_BW_PER_LINK_GBPS["SM86"]
    if sm >= 80:
        return NVLINK_BW_PER_LINK_GBPS["SM80"]
    if sm >= 70:
        return NVLINK_BW_PER_LINK_GBPS["SM70"]
    return NVLINK_BW_PER_LINK_GBPS["SM60"]


def _ladder(sm: int, inter: bool) -> tuple[float, ...]:
    if inter:
        return SM100_SPEED_ARRAY_INTER if sm >= 100 else SM90_SPEED_ARRAY_INTER if sm >= 90 else SPEED_ARRAY_INTER
    return SM100_SPEED_ARRAY_INTRA if sm >= 100 else SM90_SPEED_ARRAY_INTRA if sm >= 90 else SPEED_ARRAY_INTRA


def _nfit(avail: float, per: float) -> int:
    """How many times ``per`` fits in ``avail`` (NCCL rounds link bandwidth to 1e-3)."""
    return int(math.floor(avail / per + 1e-6))


@dataclass(frozen=True)
class _Topo:
    sm: int
    ngpus: int  # GPUs per node
    gpu_bw: float  # per-GPU intra bandwidth (NVLink sum, or PCI_BW without NVLink), GB/s
    nvswitch: bool
    nics: int
    nic_bw: float  # GB/s per NIC per direction
    inter: bool  # system->inter: the communicator spans several nodes

    @property
    def max_bw(self) -> float:
        # system->maxBw: best GPU->NET path (inter) or GPU->GPU path (intra); PCIe assumed
        # not to limit the GPU->NIC path.
        if self.inter:
            return self.nic_bw
        return self.gpu_bw if self.ngpus > 1 else LOC_BW_GBPS

    @property
    def total_bw(self) -> float:
        # system->totalBw: max over GPUs of max(sum of NVLink bw, PCI bw).
        return self.gpu_bw if (self.ngpus > 1 or self.inter) else LOC_BW_GBPS


def _capacity(t: _Topo, pattern: str, s_intra: float, s_inter: float, max_ch: int) -> int:
    """Most channels of ``pattern`` that fit on the collapsed topology at these speeds.

    Resource use per channel (reconstructed from ncclTopoSearchRec* / followPath):

    * ring, tree, collnet_chain: every GPU port to the NVSwitch carries the channel once
      each way; across nodes the channel enters through one NIC and leaves through one
      NIC (``s_inter`` each way; the GPU next to the entry NIC does not receive over
      NVLink, the exit one does not send over it).
    * nvls: channel ``c`` has head GPU ``c``; every GPU port carries ``s_intra`` both ways
      and the head's port twice (``ncclTopoSearchTryNvls``); across nodes one NIC per head.
    * collnet_direct: head port ``s_intra``, other ports ``s_intra/(G-1)``
      (``ncclTopoSearchTryCollnetDirect``); one NIC per head.
    """
    g = t.ngpus
    if pattern in ("ring", "tree", "collnet_chain"):
        limit = max_ch
        if t.inter:
            limit = min(limit, t.nics * _nfit(t.nic_bw, s_inter))
            if g > 1:
                c = 0
                while c < limit:
                    nxt = c + 1
                    worst = nxt - (nxt // g if t.nics >= g else 0)
                    if worst * s_intra > t.gpu_bw + 1e-6:
                        break
                    c = nxt
                limit = c
        elif g > 1:
            limit = min(limit, _nfit(t.gpu_bw, s_intra))
        return max(limit, 0)
    if pattern == "nvls":
        heads = min(g, t.nics) if t.inter else g
        limit = min(max_ch, heads, _nfit(t.gpu_bw, s_intra) - 1)
        if t.inter and s_inter > t.nic_bw + 1e-6:
            return 0
        return max(limit, 0)
    if pattern == "collnet_direct":
        heads = min(g, t.nics)
        if s_inter > t.nic_bw + 1e-6:
            return 0
        limit = min(max_ch, heads)
        if g > 1:
            extra = (t.gpu_bw / s_intra - 1.0) * (g - 1)
            limit = min(limit, 1 + int(math.floor(extra + 1e-6)))
        return max(limit, 0)
    raise AssertionError(pattern)


def _search(t: _Topo, pattern: str, min_ch: int, max_ch: int) -> Graph:
    """Follow ncclTopoCompute's two passes over the speed ladder (search.cc l.1036-1180)."""
    ladder = _ladder(t.sm, t.inter)
    n = len(ladder)
    total = t.total_bw
    total_scaled = total
    if t.ngpus > 1 and pattern != "ring":
        total_scaled *= t.ngpus / (t.ngpus - 1)  # non-ring patterns need not return (l.1168)
    nvls = pattern == "nvls"

    def better(c: int, bi: float, be: float, best: tuple[int, float, float] | None) -> bool:
        if best is None:
            return True
        if nvls:  # ncclTopoCompareGraphs, NVLS branch: more heads first, then nCh x bwInter
            return (c > best[0] and c <= t.ngpus) or c * be > best[0] * best[2] + _EPS
        return c * bi > best[0] * best[1] + _EPS

    # Pass 1: start at the first speed <= maxBw with minChannels x speed <= totalBw.
    i = 0
    while (ladder[i] > t.max_bw or ladder[i] * min_ch > total_scaled + _EPS) and i < n - 1:
        i += 1
    best: tuple[int, float, float] | None = None
    while True:
        s = ladder[i]
        c = _capacity(t, pattern, s, s, max_ch)
        perfect = False
        if c >= max(min_ch, 1) and better(c, s, s, best):
            best = (c, s, s)
            perfect = c == max_ch  # time = -1: stop searching
        if perfect:
            break
        if best is not None and best[0] * best[2] >= total - _EPS:
            break
        if i < n - 1 and (best is None or ladder[i + 1] / best[2] > 0.49):
            i += 1
            continue
        break
    if best is None:
        if pattern in ("nvls", "collnet_direct", "collnet_chain"):
            return Graph(pattern, 0, 0.0, 0.0)
        # "Could not find a path ... falling back to simple order": 1 channel at 0.1 GB/s.
        return Graph(pattern, 1, 0.1, 0.1 if t.inter else 0.0)

    c, bi, be = best
    # ncclTopoDupChannels (search.cc l.1036).
    if not nvls and bi >= 25.0 and not (t.sm > 80 and bi < 50.0 and c > 4):
        dup = min(2 * c, max_ch)
        factor = -(-dup // c)
        bi, be, c = bi / factor, be / factor, dup
    best = (c, bi, be)

    # Pass 2: try to raise the bandwidth with minChannels = nChannels.
    i = 0
    while ladder[i] > best[2] and i < n - 1:
        i += 1
    tmp_intra = tmp_inter = ladder[i]
    while i > 0:
        if pattern == "ring":
            i -= 1
            tmp_intra = tmp_inter = ladder[i]
            c2 = _capacity(t, pattern, tmp_intra, tmp_inter, max_ch)
            if c2 >= best[0] and c2 * tmp_intra > best[0] * best[1] + _EPS:
                best = (c2, tmp_intra, tmp_inter)
        elif nvls:
            if not (abs(tmp_inter - best[2]) < _EPS and tmp_inter < tmp_intra * 2):
                break
            i -= 1
            tmp_inter = ladder[i]
            c2 = _capacity(t, pattern, tmp_intra, tmp_inter, best[0])
            if c2 >= best[0] and best[0] * tmp_inter > best[0] * best[2] + _EPS:
                best = (best[0], tmp_intra, tmp_inter)
        else:
            if not (abs(tmp_intra - best[1]) < _EPS and tmp_intra < tmp_inter * 2):
                break
            i -= 1
            tmp_intra = ladder[i]
            c2 = _capacity(t, pattern, tmp_intra, tmp_inter, max_ch)
            if c2 >= best[0] and c2 * tmp_intra > best[0] * best[1] + _EPS:
                best = (c2, tmp_intra, tmp_inter)
    return Graph(pattern, best[0], best[1], best[2])


def _topo(system: NcclSystem) -> _Topo:
    links = system.nvlink_links_per_gpu
    gpu_bw = system.nvlink_GBps if links > 0 else PCI_BW_GBPS
    return _Topo(
        sm=system.arch_sm,
        ngpus=system.gpus_per_node,
        gpu_bw=gpu_bw,
        nvswitch=system.has_nvswitch,
        nics=system.nics_per_node,
        nic_bw=system.nic_GBps,
        inter=system.nnodes > 1,
    )


def _graph_for(t: _Topo, pattern: str, *, collnet: bool = True) -> Graph:
    ring = _search(t, "ring", 1, MAXCHANNELS // 2)
    if pattern == "ring":
        return ring
    if pattern == "tree":
        return _search(t, "tree", ring.nchannels, ring.nchannels)
    if pattern == "nvls":
        if not t.nvswitch or t.sm < 90 or t.ngpus < 2:
            return Graph("nvls", 0, 0.0, 0.0)
        mx = min(NCCL_MAX_NVLS_ARITY, t.ngpus)
        return _search(t, "nvls", 1 if t.inter else mx, mx)
    if pattern == "collnet_chain":
        if not (t.inter and collnet):
            return Graph(pattern, 0, 0.0, 0.0)
        return _search(t, "collnet_chain", ring.nchannels, ring.nchannels)
    if pattern == "collnet_direct":
        if not (t.inter and collnet):
            return Graph(pattern, 0, 0.0, 0.0)
        return _search(t, "collnet_direct", 1, min(NCCL_MAX_DIRECT_ARITY + 1, t.ngpus))
    raise AssertionError(pattern)


def nccl_graph(
    arch_sm: int,
    gpus_per_node: int,
    nvlink_links_per_gpu: int,
    nics_per_node: int,
    nic_Bps: float,
    nnodes: int,
    pattern: str,
    *,
    has_nvswitch: bool = True,
) -> Graph:
    """Reconstruct NCCL's graph-search result (nChannels, bwIntra, bwInter) for a pattern.

    The search loop of ``ncclTopoCompute`` (search.cc l.1036-1180) is followed: pick the
    speed ladder (SM90/SM100/default, intra-node if the communicator is on one node,
    inter-node otherwise); start at the first speed <= maxBw whose ``minChannels x speed``
    fits the GPU's NVLink total (scaled by ``ndevs/(ndevs-1)`` for non-ring patterns);
    keep the largest ``nChannels x speed`` that fits, lowering the speed while the next
    rung is more than 0.49 of the best so far; duplicate channels (x2, bandwidth /2) when
    ``bwIntra >= 25`` unless ``SM > 80 and bwIntra < 50 and nChannels > 4`` (never for
    NVLS); then try to raise the speed again (ring: both speeds; NVLS: bwInter; trees:
    bwIntra up to 2x bwInter).

    Exact: the ladders, the loop and its thresholds, the channel limits (ring 32, tree =
    ring channels, NVLS ``min(32, nGPUs)`` with min = max on a single node, CollNetDirect
    ``min(8, nGPUs)``), the duplication rule. Reconstructed: whether channels fit, which
    is decided on a collapsed topology (one NVSwitch node; per-GPU NVLink = links x
    per-link GB/s; NIC = ``nic_Bps/1e9`` GB/s per direction; PCIe never limiting; see
    ``_capacity``). Without an NVSwitch the GPUs are treated as if switched with
    ``links x per-link`` (or 12 GB/s PCIe) each, which is only a rough stand-in.

    Parameters
    ----------
    arch_sm, gpus_per_node, nvlink_links_per_gpu, nics_per_node, nic_Bps, nnodes
        As in :class:`NcclSystem`.
    pattern : {"ring", "tree", "nvls", "collnet_direct", "collnet_chain"}
        ``"collnet"`` is accepted for ``"collnet_direct"``.
    has_nvswitch : bool
        NVLS and CollNetDirect graphs need an NVSwitch.

    Returns
    -------
    Graph
        ``nchannels == 0`` means NCCL would find no graph (e.g. NVLS without NVSwitch).

    Examples
    --------
    >>> nccl_graph(90, 8, 18, 8, 5e10, 1, "ring")
    Graph(pattern='ring', nchannels=12, bw_intra_GBps=30.0, bw_inter_GBps=30.0)
    >>> nccl_graph(90, 8, 18, 8, 5e10, 1, "nvls")
    Graph(pattern='nvls', nchannels=8, bw_intra_GBps=40.0, bw_inter_GBps=60.0)
    """
    name = _PATTERN_ALIASES.get(_norm(pattern)) if isinstance(pattern, str) else None
    if name is None:
        raise SpecError(f"pattern must be one of {', '.join(PATTERNS)}, got {pattern!r}")
    system = NcclSystem(
        arch_sm=arch_sm, gpus_per_node=gpus_per_node, nnodes=nnodes, nvlink_links_per_gpu=nvlink_links_per_gpu,
        has_nvswitch=has_nvswitch, nics_per_node=nics_per_node, nic_Bps=nic_Bps, collnet=True,
    )
    return _graph_for(_topo(system), name, collnet=True)


# --------------------------------------------------------------------------------------
# Tuning model (src/graph/tuning.cc ncclTopoTuneModel, l.243-541)
# --------------------------------------------------------------------------------------


@dataclass(frozen=True)
class _Model:
    lat: tuple[tuple[tuple[float, ...], ...], ...]  # [coll][algo][proto] us (nan: no entry)
    bw: tuple[tuple[tuple[float, ...], ...], ...]  # [coll][algo][proto] GB/s before disabling
    raw: tuple[tuple[tuple[float, ...], ...], ...]  # [coll][algo][proto] GB/s of the graph x nominal protocol
    why: tuple[tuple[tuple[str | None, ...], ...], ...]  # [coll][algo][proto] reason or None
    graphs: tuple[Graph, ...]  # per algorithm
    comm_nchannels: int


def _log2i(n: int) -> int:
    return n.bit_length() - 1 if n > 0 else -1


@functools.lru_cache(maxsize=256)
def _tune(system: NcclSystem) -> _Model:
    """``ncclTopoTuneModel`` + enable/disable rules for one system (memoized: pure function)."""
    t = _topo(system)
    n_nodes = system.nnodes
    n_ranks = system.nranks
    ppn = n_ranks / n_nodes
    ppn_int = n_ranks // n_nodes
    sm = system.arch_sm
    cc = _BLACKWELL if sm >= 100 else _HOPPER if sm >= 90 else _AMPERE if sm >= 80 else _VOLTA
    idx2 = n_nodes - 1 if n_nodes <= 2 else 2
    amd = system.cpu_vendor == "amd"
    idx1 = cc if n_nodes == 1 else (1 if amd else 0)
    ll_max = LL_MAX_BWS_GBPS[idx1][idx2]
    tree_max = PER_CH_MAX_TREE_GBPS[cc][idx2]
    ring_ll128_max = PER_CH_MAX_RING_LL128_GBPS[cc][idx2]
    tree_ll128_max = PER_CH_MAX_TREE_LL128_GBPS[cc][idx2]
    nvlstree_max = PER_CH_MAX_NVLS_TREE_GBPS[cc][idx2]
    collnet_on = system.collnet and n_nodes >= _COLLNET_NODE_THRESHOLD

    ring = _graph_for(t, "ring")
    tree = _graph_for(t, "tree")
    nvls = _graph_for(t, "nvls") if system.nvls_capable else Graph("nvls", 0, 0.0, 0.0)
    cdir = _graph_for(t, "collnet_direct", collnet=collnet_on)
    cchain = _graph_for(t, "collnet_chain", collnet=collnet_on)
    graphs = (tree, ring, cdir, cchain, nvls, nvls, tree)  # init.cc graphs[] order
    comm_nch = min(MAXCHANNELS, 2 * min(ring.nchannels, tree.nchannels))

    # Intra-node link type of every graph: NVLink when GPUs talk over NVLink, LOC with one
    # GPU per node, PCI otherwise (intraHw uses NVLINK only for typeIntra == LINK_NVL).
    if system.gpus_per_node == 1:
        type_intra = _PATH_LOC
    elif system.nvlink_links_per_gpu > 0:
        type_intra = _PATH_NVL
    else:
        type_intra = _PATH_PXB
    intra_hw = _HW_NVLINK if type_intra == _PATH_NVL else _HW_PCI
    hw_ring = intra_hw if n_nodes == 1 else _HW_NET
    net_overhead = NET_OVERHEAD_US[system.cpu_vendor]
    # Single-node graphs keep the default typeInter PIX; NICs are assumed rail-local (PIX).
    type_inter = _PATH_PIX
    pat_enabled = sm >= 60 and n_nodes == n_ranks

    nan = math.nan
    lat = [[[nan] * 3 for _ in range(7)] for _ in range(5)]
    bw = [[[0.0] * 3 for _ in range(7)] for _ in range(5)]
    raw = [[[0.0] * 3 for _ in range(7)] for _ in range(5)]
    why: list[list[list[str | None]]] = [[[None] * 3 for _ in range(7)] for _ in range(5)]

    for coll in range(5):
        nsteps = 2 * (n_ranks - 1) if coll == _AR else (n_ranks - 1 if coll in (_AG, _RS) else n_ranks)
        for a in range(7):
            if coll in (_BCAST, _REDUCE) and a != _RING:
                for p in range(3):
                    why[coll][a][p] = f"{ALGORITHMS[a]} is not in NCCL's model for this collective (Ring only)"
                continue
            if coll in (_AG, _RS) and a not in (_PAT, _RING, _NVLS, _COLLNET_DIRECT):
                for p in range(3):
                    why[coll][a][p] = f"{ALGORITHMS[a]} is not in NCCL's model for this collective"
                continue
            if coll == _AR and a == _PAT:
                for p in range(3):
                    why[coll][a][p] = "PAT is not in NCCL's model for all_reduce"
                continue
            g = graphs[a]
            nch = g.nchannels
            for p in range(3):
                if a in (_NVLS, _NVLS_TREE) and p != _SIMPLE:
                    why[coll][a][p] = f"{ALGORITHMS[a]} supports only the Simple protocol"
                    continue
                if coll in (_AG, _RS) and a == _PAT and (p != _SIMPLE or not pat_enabled):
                    why[coll][a][p] = (
                        "PAT supports only the Simple protocol" if p != _SIMPLE else "PAT needs 1 GPU per node"
                    )
                    continue
                collnet_algo = a in (_COLLNET_DIRECT, _COLLNET_CHAIN)
                b = g.bw_intra_GBps if (n_nodes <= 2 or collnet_algo) else g.bw_inter_GBps
                if a in (_NVLS, _NVLS_TREE):
                    if nch < 2:
                        why[coll][a][p] = "NVLS needs an NVLS graph with >= 2 channels"
                        continue
                    intra_bw = g.bw_intra_GBps * NVLS_EFFICIENCY[cc] * (nch - 1) / nch
                    intra_bw *= 2.0 if coll == _AR else (ppn - 1) / ppn
                    inter_bw = g.bw_inter_GBps * (2 if (n_nodes <= 2 and a == _NVLS_TREE) else 1)
                    b = min(intra_bw, inter_bw, nvlstree_max if a == _NVLS_TREE else math.inf)
                bus = nch * b
                # Nominal bandwidth the wire allows this protocol (the tree's own 0.92 included):
                # the refinements below that fall short of it are kernel limits.
                nominal = bus * (0.92 if (a == _TREE and coll == _AR) else 1.0) * PROTOCOL_WIRE_EFFICIENCY[p]
                # Model refinements, in tuning.cc's order (l.330-366).
                if a == _RING and p == _LL:
                    bus = min(ll_max, bus * 0.5)
                if a == _RING and p == _LL128:
                    bus = min(bus * 0.92, nch * ring_ll128_max)
                if a == _TREE and coll == _AR:
                    bus = min(bus * 0.92, nch * tree_max)
                if a == _TREE and p == _LL:
                    bus = min(bus / 3.8, ll_max)
                if a == _TREE and p == _LL128:
                    bus = min(bus * (7.0 / 9.0 if n_nodes == 1 else 120.0 / 128.0), nch * tree_ll128_max)
                # (Tree x 0.85 when maxTreePattern == TREE: never, see module docstring.)
                if a == _PAT:
                    bus *= 0.75
                if collnet_algo and p != _SIMPLE:
                    bus = 0.0
                if a == _COLLNET_DIRECT and p == _SIMPLE:
                    if coll in (_AG, _RS):
                        bus = ppn * min(g.bw_intra_GBps, g.bw_inter_GBps * 0.9)
                    else:
                        f = ppn / nch if nch else math.inf
                        f -= (f - 1) / 2
                        bus = bus / f if nch else 0.0
                        if sm >= 90:
                            bus *= 0.85
                heads_reason = None
                if a in (_NVLS, _COLLNET_DIRECT) and p == _SIMPLE and coll in (_AG, _RS) and n_nodes > 1:
                    n_heads = min(system.nics_per_node, system.gpus_per_node) if collnet_on else 0
                    if not collnet_on:
                        bus = 0.0
                        heads_reason = f"{ALGORITHMS[a]} all_gather/reduce_scatter across nodes needs CollNet"
                    elif system.gpus_per_node > n_heads:
                        bus = 0.0
                        heads_reason = f"{ALGORITHMS[a]} across nodes needs one CollNet head per local GPU"
                # Bus bandwidth -> algorithm bandwidth (l.367-372).
                if not (a != _RING and coll in (_AG, _RS)):
                    ratio = n_ranks / nsteps if a in (_RING, _NVLS, _NVLS_TREE) else 0.5
                    bus *= ratio
                bw[coll][a][p] = bus
                if not (a != _RING and coll in (_AG, _RS)):
                    nominal *= n_ranks / nsteps if a in (_RING, _NVLS, _NVLS_TREE) else 0.5
                raw[coll][a][p] = nominal
                if heads_reason:
                    why[coll][a][p] = heads_reason
                elif collnet_algo and p != _SIMPLE:
                    why[coll][a][p] = f"{ALGORITHMS[a]} supports only the Simple protocol"

                # Latency (l.384-435).
                lt = BASE_LATENCIES_US[a][p]
                intra_lat = HW_LATENCIES_US[intra_hw][a][p]
                inter_lat = HW_LATENCIES_US[_HW_NET][_TREE if ppn == 1 else a][p]  # + latencyInter (0 on IB)
                if a == _RING:
                    hop = HW_LATENCIES_US[hw_ring][a][p]
                    if coll in (_REDUCE, _BCAST):
                        lt += hop  # sameChannels = 1 on NVSwitch graphs
                    else:
                        overhead = 0.0
                        if n_nodes > 1:
                            overhead = net_overhead * (NET_OVERHEAD_SIMPLE_FACTOR if p == _SIMPLE else 1.0)
                        intra_lat = max(intra_lat, overhead)
                        n_inter = 0 if n_nodes == 1 else (2 * (n_nodes - 1) if coll == _AR else n_nodes - 1)
                        lt += (nsteps - n_inter) * intra_lat + n_inter * inter_lat
                elif a == _TREE:
                    if coll == _AR:
                        lt += 2 * ((ppn_int - 1) * intra_lat + _log2i(n_nodes) * inter_lat)
                elif a == _COLLNET_DIRECT:
                    lt += 2 * (min(1, ppn_int - 1) * intra_lat + (ppn_int - 1) * 0.4) + inter_lat
                elif a == _COLLNET_CHAIN:
                    lt += 2 * (ppn_int - 1) * intra_lat + inter_lat
                elif a == _NVLS:
                    lt = intra_lat + (inter_lat if n_nodes > 1 else 0.0)
                elif a == _NVLS_TREE:
                    lt += intra_lat + 2 * _log2i(n_nodes) * inter_lat
                elif a == _PAT:
                    if coll in (_AG, _RS):
                        lt += _log2i(n_nodes) * (inter_lat / 3.5) + n_ranks * 2.8
                lat[coll][a][p] = lt

    # Enable / disable (tuning.cc l.495-541), then updateCollCostTable (enqueue.cc l.1989-2026).
    nvls_support = bool(
        system.nvls_capable and system.has_nvswitch and sm >= 90 and system.gpus_per_node >= 2 and nvls.nchannels > 0
    )
    ll128_ok = (type_inter <= (_PATH_PXN if sm >= 90 else _PATH_PXB)) and type_intra <= _PATH_NVB and sm >= 70
    for coll in range(5):
        for a in range(7):
            algo_reason = None
            if n_nodes == 1 and a == _NVLS_TREE:
                algo_reason = "NVLSTree is disabled on a single node"
            elif not collnet_on and a in (_COLLNET_DIRECT, _COLLNET_CHAIN):
                algo_reason = (
                    f"{ALGORITHMS[a]} needs IB SHARP (collnet=True)" if not system.collnet
                    else f"{ALGORITHMS[a]} needs >= {_COLLNET_NODE_THRESHOLD} nodes"
                )
            elif not collnet_on and a == _NVLS and n_nodes > 1:
                algo_reason = "NVLS across nodes needs CollNet (IB SHARP); NVLSTree is used instead"
            elif a == _COLLNET_DIRECT and not system.has_nvswitch:
                algo_reason = "CollNetDirect needs an NVSwitch system"
            elif a in (_COLLNET_DIRECT, _COLLNET_CHAIN) and system.gpus_per_node > NCCL_MAX_DIRECT_ARITY + 1:
                algo_reason = f"{ALGORITHMS[a]} supports at most {NCCL_MAX_DIRECT_ARITY + 1} GPUs per node"
            elif a in (_NVLS, _NVLS_TREE) and not nvls_support:
                algo_reason = "NVLS needs >= 2 GPUs per node on an NVLS-capable NVSwitch (Hopper or newer)"
            elif a in (_NVLS, _NVLS_TREE) and coll != _AR and system.gpus_per_node > NCCL_MAX_NVLS_ARITY:
                algo_reason = f"NVLS for collectives other than all_reduce needs <= {NCCL_MAX_NVLS_ARITY} GPUs per node"
            elif a in (_COLLNET_DIRECT, _COLLNET_CHAIN) and graphs[a].nchannels == 0:
                algo_reason = f"{ALGORITHMS[a]}: no CollNet graph"
            for p in range(3):
                if why[coll][a][p] is not None:
                    continue
                if algo_reason is not None:
                    why[coll][a][p] = algo_reason
                elif p == _LL128 and not ll128_ok:
                    why[coll][a][p] = "LL128 is enabled only over NVLink (SM >= 70) and PIX/PXB (PXN on Hopper+) NICs"
                elif bw[coll][a][p] <= 0.0:
                    why[coll][a][p] = "NCCL's model gives this pair zero bandwidth"

    def freeze(x):  # nested lists -> nested tuples
        return tuple(freeze(v) for v in x) if isinstance(x, list) else x

    return _Model(freeze(lat), freeze(bw), freeze(raw), freeze(why), graphs, comm_nch)


# --------------------------------------------------------------------------------------
# Time, table and argmin (tuning.cc ncclTopoGetAlgoTime l.630-655, enqueue.cc l.2028-2046)
# --------------------------------------------------------------------------------------


def _algo_time_us(system: NcclSystem, m: _Model, coll: int, a: int, p: int, nbytes: int) -> tuple[float, float]:
    """Return (latency term in us, effective bandwidth in GB/s) as ncclTopoGetAlgoTime uses them."""
    b = m.bw[coll][a][p]
    lt = m.lat[coll][a][p]
    log_size = _log2i(nbytes >> 6)
    if a == _TREE and coll == _AR and 0 <= log_size < 23:
        b *= TREE_CORRECTION_FACTOR[p][log_size]
    x86 = system.cpu_vendor in ("intel", "amd")
    if a == _NVLS_TREE and coll == _AR and 0 <= log_size < 24 and system.arch_sm >= 100 and x86:
        b *= TREE_CORRECTION_FACTOR[p][log_size]
    if (
        a == _RING and p == _SIMPLE and system.nnodes > 1 and coll == _AR
        and m.comm_nchannels > 0 and nbytes // (m.comm_nchannels * system.nranks) >= 64
    ):
        lt *= RING_PLATEAU_FACTOR[0] if system.arch_sm >= 80 else RING_PLATEAU_FACTOR[1]
    # latCount = numPipeOps for Ring, DIVUP(numPipeOps, NCCL_MAX_DEV_WORK_BATCH_COLLS) otherwise;
    # with one operation per launch both are 1.
    lat_count = 1
    return lt * lat_count, b


def algo_times(
    system: NcclSystem,
    collective: str,
    size_bytes: int,
    *,
    algorithms: Iterable[str] | None = None,
    protocols: Iterable[str] | None = None,
) -> list[AlgoEstimate]:
    """NCCL's cost table for one collective: every (algorithm, protocol) pair with its estimate.

    ``time_us = lat x latCount + nBytes / (1000 x bw_GBps)`` (tuning.cc l.653) with the
    tree correction factor for tree all-reduce and the x1.4 ring/Simple plateau factor
    for multi-node all-reduce. ``size_bytes`` is nccl-tests' size (see the module
    docstring) and is the model's nBytes for every collective.

    Parameters
    ----------
    system : NcclSystem
    collective : {"all_reduce", "all_gather", "reduce_scatter", "broadcast", "reduce"}
    size_bytes : int
        Message size in bytes (nccl-tests convention), >= 0.
    algorithms, protocols : iterable of str, optional
        Restrict the output (names from :data:`ALGORITHMS` / :data:`PROTOCOLS`,
        case-insensitive). Default: all, in NCCL's order.

    Returns
    -------
    list of AlgoEstimate
        Algorithm-major, protocol-minor, in NCCL's index order.

    Raises
    ------
    SpecError
        Unknown collective, algorithm or protocol name, or a bad size.

    Examples
    --------
    >>> est = algo_times(NcclSystem.hgx("h100"), "all_reduce", 1 << 20,
    ...                  algorithms=["Ring"], protocols=["LL"])
    >>> round(est[0].latency_s * 1e6, 1), round(est[0].bandwidth_Bps / 1e9, 2)
    (15.0, 80.57)
    """
    name = _collective_name(collective, MODELED_COLLECTIVES)
    nbytes = _size(size_bytes)
    algos = _names("algorithm", algorithms, _ALGO_ALIASES, ALGORITHMS)
    protos = _names("protocol", protocols, _PROTO_ALIASES, PROTOCOLS)
    if not isinstance(system, NcclSystem):
        raise SpecError(f"system must be an NcclSystem, got {type(system).__name__}")
    coll = _COLL_INDEX[name]
    factor = busbw_factor(name, system.nranks)
    out: list[AlgoEstimate] = []
    if system.nranks == 1:
        # updateCollCostTable: a single rank costs nothing and runs Ring/Simple.
        for an in (a for a in ALGORITHMS if a in algos):
            for pn in (p for p in PROTOCOLS if p in protos):
                ok = an == "Ring" and pn == "Simple"
                out.append(AlgoEstimate(
                    an, pn, 0.0 if ok else math.nan, math.inf if ok else 0.0, 0.0 if ok else math.inf,
                    0.0, 1 if ok else 0, ok, None if ok else "a single rank runs Ring/Simple",
                ))
        return out
    m = _tune(system)
    for a, an in enumerate(ALGORITHMS):
        if an not in algos:
            continue
        for p, pn in enumerate(PROTOCOLS):
            if pn not in protos:
                continue
            reason = m.why[coll][a][p]
            lt_us = m.lat[coll][a][p]
            if math.isnan(lt_us):
                out.append(AlgoEstimate(an, pn, math.nan, 0.0, math.inf, 0.0, m.graphs[a].nchannels, False, reason))
                continue
            lat_us, b_gbps = _algo_time_us(system, m, coll, a, p, nbytes)
            nominal = m.raw[coll][a][p]
            keff = min(1.0, b_gbps / nominal) if nominal > 0 and b_gbps > 0 else 1.0
            enabled = reason is None
            if enabled:
                time_us = lat_us + nbytes / (1000.0 * b_gbps)
                time_s = time_us * 1e-6
                busbw = (nbytes / time_s) * factor if time_s > 0 else 0.0
            else:
                time_s, busbw = math.inf, 0.0
            out.append(AlgoEstimate(
                an, pn, lat_us * 1e-6, b_gbps * 1e9, time_s, busbw, m.graphs[a].nchannels, enabled, reason, keff,
            ))
    return out


def choose(system: NcclSystem, collective: str, size_bytes: int) -> AlgoEstimate:
    """The (algorithm, protocol) NCCL picks: plain argmin of the predicted time.

    Ties go to the first pair in NCCL's order (Tree < Ring < CollNetDirect < CollNetChain
    < NVLS < NVLSTree < PAT; LL < LL128 < Simple), as ``topoGetAlgoInfo`` keeps the first
    strict minimum.

    Parameters
    ----------
    system : NcclSystem
    collective : str
        One of :data:`MODELED_COLLECTIVES`.
    size_bytes : int
        nccl-tests size in bytes.

    Returns
    -------
    AlgoEstimate

    Raises
    ------
    SpecError
        Bad names or size, or no pair is enabled.

    Examples
    --------
    >>> choose(NcclSystem.hgx("h100", 16), "all_reduce", 8).algorithm
    'Tree'
    """
    best: AlgoEstimate | None = None
    for est in algo_times(system, collective, size_bytes):
        if est.enabled and (best is None or est.time_s < best.time_s):
            best = est
    if best is None:
        raise SpecError(f"collective {collective!r} has no enabled algorithm/protocol on this system")
    return best
