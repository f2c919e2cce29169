"""The system NCCL's model is evaluated on, its result types, name checks and busbw factors."""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Iterable, Sequence

from collectives.nccl_model.constants import (  # noqa: F401
    ALGORITHMS,
    COLLECTIVES,
    NET_OVERHEAD_US,
    PATTERNS,
    PROTOCOLS,
    nvlink_bw_per_link_GBps,
)
from topologies.errors import SpecError

__all__ = ["AlgoEstimate", "Graph", "NcclSystem", "busbw_factor"]

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
    latency_inter_us : float
        The net plugin's ``latencyInter`` (us): 0 for NCCL's IB plugin (``net_ib/init.cc``);
        other transports (EFA, TCPXO) report more, added per network step (twice for Simple).
    protocols : tuple of str or None
        Protocols NCCL may use (``NCCL_PROTO``; e.g. ``("Simple",)`` where the net plugin forces it);
        None: all of :data:`PROTOCOLS`.
    nccl_version : tuple of int or None
        The NCCL release whose per-channel cap tables apply (``(2, 27, 3)``; see
        :data:`TUNING_TABLE_HISTORY`); None: the tables of the modelled release (2.30.7).
    nic_via_c2c : bool
        The GPU reaches its NIC through the CPU's C2C link and the CPU's PCIe (GB200 trays'
        ConnectX-7): NCCL before :data:`LL128_C2C_FROM` runs no LL128 across nodes there.
    algorithms : tuple of str or None
        Algorithms NCCL may use (``NCCL_ALGO``; e.g. ``("Ring", "Tree")`` where the net plugin's
        environment profile sets it); None: all of :data:`ALGORITHMS`.
    tuner_protocols : tuple of (str, int, str) or None
        Rows ``(collective, from_bytes, protocol)`` of a tuner plugin's size rule: from ``from_bytes`` up
        the tuner runs ``protocol`` for that collective and NCCL picks the algorithm among its pairs
        (``collectives.net_plugins.NET_TUNER_PROTOCOLS``); None: NCCL's own choice throughout.

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
    latency_inter_us: float = 0.0
    nccl_version: tuple[int, int, int] | None = None
    protocols: tuple[str, ...] | None = None
    nic_via_c2c: bool = False
    algorithms: tuple[str, ...] | None = None
    tuner_protocols: tuple[tuple[str, int, str], ...] | None = None

    def __post_init__(self) -> None:
        if self.tuner_protocols is not None and not (
            isinstance(self.tuner_protocols, tuple) and all(
                isinstance(r, tuple) and len(r) == 3 and r[0] in COLLECTIVES
                and isinstance(r[1], int) and not isinstance(r[1], bool) and r[1] >= 0 and r[2] in PROTOCOLS
                for r in self.tuner_protocols)
        ):
            raise SpecError(f"tuner_protocols must be None or a tuple of (one of {', '.join(COLLECTIVES)}, "
                            f"from_bytes >= 0, one of {', '.join(PROTOCOLS)}) rows, got {self.tuner_protocols!r}")
        if self.algorithms is not None and not (
            isinstance(self.algorithms, tuple) and self.algorithms and set(self.algorithms) <= set(ALGORITHMS)
        ):
            raise SpecError(f"algorithms must be None or a non-empty tuple of {', '.join(ALGORITHMS)}, "
                            f"got {self.algorithms!r}")
        if not isinstance(self.nic_via_c2c, bool):
            raise SpecError(f"nic_via_c2c must be True or False, got {self.nic_via_c2c!r}")
        if self.protocols is not None and not (
            isinstance(self.protocols, tuple) and self.protocols and set(self.protocols) <= set(PROTOCOLS)
        ):
            raise SpecError(f"protocols must be None or a non-empty tuple of {', '.join(PROTOCOLS)}, "
                            f"got {self.protocols!r}")
        if self.nccl_version is not None and not (
            isinstance(self.nccl_version, tuple) and len(self.nccl_version) == 3
            and all(isinstance(x, int) and not isinstance(x, bool) and x >= 0 for x in self.nccl_version)
        ):
            raise SpecError(f"nccl_version must be None or a (major, minor, patch) tuple, got {self.nccl_version!r}")
        _check_int("arch_sm", self.arch_sm, 60, "an integer SM version >= 60 (e.g. 80, 90, 100)")
        _check_int("gpus_per_node", self.gpus_per_node, 1, "an integer >= 1")
        _check_int("nnodes", self.nnodes, 1, "an integer >= 1")
        _check_int("nvlink_links_per_gpu", self.nvlink_links_per_gpu, 0, "an integer >= 0")
        _check_int("nics_per_node", self.nics_per_node, 0, "an integer >= 0")
        if not isinstance(self.nic_Bps, (int, float)) or isinstance(self.nic_Bps, bool) or not (
            math.isfinite(self.nic_Bps) and self.nic_Bps >= 0
        ):
            raise SpecError(f"nic_Bps must be a finite number of bytes/s >= 0, got {self.nic_Bps!r}")
        if isinstance(self.latency_inter_us, bool) or not isinstance(self.latency_inter_us, (int, float)) or not (
            math.isfinite(self.latency_inter_us) and self.latency_inter_us >= 0
        ):
            raise SpecError(f"latency_inter_us must be a finite number of us >= 0, got {self.latency_inter_us!r}")
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
        return round(self.nvlink_links_per_gpu * nvlink_bw_per_link_GBps(self.arch_sm), 6)

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
