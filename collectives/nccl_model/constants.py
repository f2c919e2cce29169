"""NCCL 2.30.7 constant tables (tuning.cc, topo.h, search.cc, nvls.cc), kept apart from the model.

See :mod:`collectives.nccl_model` for what is exact and what is reconstructed.
"""

from __future__ import annotations



__all__ = [
    "ALGORITHMS", "BASE_LATENCIES_US", "COLLECTIVES", "HW_LATENCIES_US", "LL_MAX_BWS_GBPS", "LOC_BW_GBPS",
    "MAXCHANNELS", "MODELED_COLLECTIVES", "NCCL_COMMIT", "NCCL_MAX_DIRECT_ARITY", "NCCL_MAX_NVLS_ARITY",
    "NCCL_VERSION", "NET_OVERHEAD_SIMPLE_FACTOR", "NET_OVERHEAD_US", "NVLINK_BW_PER_LINK_GBPS",
    "NVLS_EFFICIENCY", "NVLS_NCHANNELS", "NVLS_TREE_CAP_ABSOLUTE", "PATTERNS", "PCI_BW_GBPS",
    "PER_CH_MAX_NVLS_TREE_GBPS", "PER_CH_MAX_RING_LL128_GBPS", "PER_CH_MAX_TREE_GBPS",
    "PER_CH_MAX_TREE_LL128_GBPS", "PROTOCOLS", "PROTOCOL_WIRE_EFFICIENCY", "RING_PLATEAU_FACTOR",
    "SM100_SPEED_ARRAY_INTER", "SM100_SPEED_ARRAY_INTRA", "SM90_SPEED_ARRAY_INTER", "SM90_SPEED_ARRAY_INTRA",
    "SPEED_ARRAY_INTER", "SPEED_ARRAY_INTRA", "TREE_CORRECTION_FACTOR", "TUNING_TABLE_HISTORY", "arch_index",
    "RING_LL_FACTOR_HISTORY", "ring_ll_factor",
    "parse_nccl_version", "tuning_tables", "nvlink_bw_per_link_GBps", "NVLS_FORMULA_HISTORY", "nvls_formula",
    "LL128_C2C_FROM", "SM100_SPEED_ARRAY_HISTORY", "sm100_speed_arrays"
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
#: Releases in which NVLSTree's per-channel cap is an absolute limit of the kernel (issue 8 item 6):
#: arch index -> (first release, last release or None). Hopper: from v2.21.5-1 the NVLS buffers have
#: their own step, ``NCCL_NVLS_CHUNKSIZE`` default 128 KiB (src/transport/nvls.cc @ v2.21.5-1 l.233 and
#: l.310 ``nvlsStepSize = comm->nvlsChunkSize``; enqueue.cc NVLS_TREE ``chunkSize = comm->nvlsChunkSize``),
#: unchanged up to v2.30.7 (nvls.cc ``ncclNvlsTuning``: the 128 KiB default for SM90); up to v2.20.5
#: the NVLS buffer is ``buffSizes[SIMPLE]`` (nvls.cc @ v2.20.5-1 l.309) and NVLSTree's chunk one Simple
#: step, ``NCCL_BUFFSIZE / NCCL_STEPS`` (512 KiB by default, 1 MiB with ``NCCL_BUFFSIZE=8388608``), capped by
#: ``NCCL_NVLSTREE_MAX_CHUNKSIZE`` (512 KiB from aws-ofi-nccl v1.8.0) and reduced by size (enqueue.cc
#: @ v2.20.5-1 ``computeCollChunkInfo``: on 2 x 8 H100 above 128 KiB only from 512 MiB). The warp split of the kernel is the same in every release from
#: v2.20.5 to v2.30.7 (src/device/all_reduce.h). The Hopper cap {0, 57.7, 45.5} NVIDIA wrote into the
#: model from v2.28.3 (``perChMaxNVLSTreeBws``) is therefore the limit of the 128 KiB-chunk kernel every
#: release since 2.21.5 runs. Blackwell: not listed (its cap moved 43.1 -> 43.8 -> 80.0 at N4 with the
#: 2.30 SM100 NVLSTree retuning of chunk sizes and channels, ``ncclNvlsTreeSm100Tuning``).
NVLS_TREE_CAP_ABSOLUTE: dict[int, tuple[tuple[int, int, int], tuple[int, int, int] | None]] = {
    _HOPPER: ((2, 21, 5), None),
}
#: Rows of the per-channel cap tables that changed between NCCL releases, read from
#: ``src/graph/tuning.cc`` at each release tag of NVIDIA/nccl: table -> ((first version, arch index,
#: [N1, N2, N4+] row), ...), oldest first; a row holds from its version to the next entry of the same
#: (table, arch), the newest rows are the 2.30.7 tables above. Blackwell: ``2*36.7`` ring LL128 up to
#: 2.28.x (v2.26.2 .. v2.28.9), 40.0 from v2.29.2; tree LL128 ``{2*36.7, 2*36.7, 2*29.0}`` and tree
#: ``{2*38.7, 2*41.4, 2*36.0}`` up to 2.27.x (v2.25.1 .. v2.27.7), ``{55.6, 31.67, 20.0}`` and
#: ``{70.0, 42.8, 24.0}`` from v2.28.3. The refinement lines that use these rows are the same in every
#: release from v2.25.1 (Blackwell's first rows) to v2.30.7. Not version-keyed: the NVLS / NVLSTree
#: formulas are keyed apart (:data:`NVLS_FORMULA_HISTORY`: up to 2.27.x ``min(bwIntra, bwInter)`` and
#: ``bwInter/2`` beyond 2 nodes, no ``nvlsEfficiency``, no NVLSTree cap, a fixed 5/6 ratio). Hopper's
#: single-node LL cap: ``{87.7, 22.5, 19.0}`` (Ampere's row) up to v2.20.5, ``{141.0, 45.0, 35.0}`` from
#: v2.21.5 (round 7; round 3 had withdrawn it alone, see :data:`RING_LL_FACTOR_HISTORY` for the ring LL
#: factor that changed in the same release).
#: (The NVLSTree cap as a limit of the kernel's time, not of NCCL's choice, is release-keyed: see
#: :data:`NVLS_TREE_CAP_ABSOLUTE`.)
TUNING_TABLE_HISTORY: dict[str, tuple[tuple[tuple[int, int, int], int, tuple[float, float, float]], ...]] = {
    "ll_max": (((2, 0, 0), 2, (87.7, 22.5, 19.0)), ((2, 21, 0), 2, (141.0, 45.0, 35.0))),
    "ring_ll128": (((2, 0, 0), 3, (2 * 36.7, 2 * 36.7, 2 * 36.7)), ((2, 29, 0), 3, (40.0, 40.0, 40.0))),
    "tree_ll128": (((2, 0, 0), 3, (2 * 36.7, 2 * 36.7, 2 * 29.0)), ((2, 28, 0), 3, (55.6, 31.67, 20.0))),
    "tree": (((2, 0, 0), 3, (2 * 38.7, 2 * 41.4, 2 * 36.0)), ((2, 28, 0), 3, (70.0, 42.8, 24.0))),
    # perChMaxNVLSTreeBws (first in v2.28.3; used only by the "efficiency" NVLS formula below):
    # Blackwell N4+ 43.1 (v2.28.3 .. v2.28.7), 43.8 (v2.28.9 .. v2.29.7), 80.0 (v2.30.3 .. v2.30.7).
    "nvls_tree": (((2, 0, 0), 3, (0.0, 96.0, 43.1)), ((2, 28, 9), 3, (0.0, 96.0, 43.8)),
                  ((2, 30, 0), 3, (0.0, 96.0, 80.0))),
}
_TABLES = {"ll_max": LL_MAX_BWS_GBPS, "ring_ll128": PER_CH_MAX_RING_LL128_GBPS,
           "tree_ll128": PER_CH_MAX_TREE_LL128_GBPS, "tree": PER_CH_MAX_TREE_GBPS,
           "nvls_tree": PER_CH_MAX_NVLS_TREE_GBPS}

#: NVLS / NVLSTree bandwidth formula of ``ncclTopoTuneModel`` by release, read from
#: ``src/graph/tuning.cc`` at the release tags of NVIDIA/nccl: (first version, form), oldest first.
#:
#: * ``"ratio56"`` (v2.19.3 .. v2.27.7): per channel ``min(bwIntra, bwInter)`` for NVLS all-reduce
#:   (2.27.x: all-gather / reduce-scatter ``min(bwIntra (ppn-1)/ppn, 0.9 bwInter)``, before that the
#:   all-reduce form), NVLSTree ``min(bwIntra, bwInter)`` on <= 2 nodes and ``min(bwIntra, bwInter/2)``
#:   beyond; bus -> algorithm bandwidth ``x 5/6`` for both, whatever the rank count; no
#:   ``nvlsEfficiency``, no NVLSTree cap, no ">= 2 channels" rule.
#: * ``"efficiency"`` (v2.28.3 .. v2.30.7): ``bwIntra x nvlsEfficiency x (nCh-1)/nCh`` (x 2 for
#:   all-reduce, x (ppn-1)/ppn otherwise) against ``bwInter`` (x 2 for NVLSTree on <= 2 nodes) and
#:   ``perChMaxNVLSTreeBw``; bus -> algorithm bandwidth ``x nRanks/nsteps`` as the ring.
#:
#: v2.18.x had NVLS alone with the 5/6 ratio and NVLSTree with another latency form: releases
#: before 2.19 get the oldest form here (not checked further; no point of the data runs them on NVLS).
NVLS_FORMULA_HISTORY: tuple[tuple[tuple[int, int, int], str], ...] = (
    ((2, 0, 0), "ratio56"), ((2, 28, 0), "efficiency"),
)


#: First release whose LL128 runs over a network path that reaches the NIC through the CPU's C2C
#: link (Grace: GB200 compute trays, ConnectX-7 on the Grace PCIe). Up to v2.26.x such a GPU -> NIC
#: path is ``PATH_PHB`` (paths.cc @ v2.26.2-1 ``ncclTopoCheckGdr``: ``distance == PATH_PHB && ...
#: PATH_C2C``), and ``ncclTopoTuneModel`` enables LL128 only for ``typeInter <= PATH_PXN`` (tuning.cc
#: @ v2.26.2-1 l.429), so multi-node rings and trees of those trays run LL and Simple only. v2.27.3
#: adds ``PATH_P2C`` (topo.h "Connection between a GPU and a NIC using the C2C connection to the CPU
#: and the PCIe connection to the NIC") and ``NCCL_LL128_C2C`` (default 1: LL128 up to ``PATH_P2C``);
#: release notes of 2.27.3: "Add support for P2C (PXN over C2C) and the LL128 protocol".
LL128_C2C_FROM: tuple[int, int, int] = (2, 27, 3)


def nvls_formula(version: tuple[int, int, int] | None) -> str:
    """The NVLS bandwidth form of an NCCL release (None: 2.30.7's), see :data:`NVLS_FORMULA_HISTORY`.

    Examples
    --------
    >>> nvls_formula((2, 27, 7)), nvls_formula((2, 28, 3)), nvls_formula(None)
    ('ratio56', 'efficiency', 'efficiency')
    """
    if version is None:
        return NVLS_FORMULA_HISTORY[-1][1]
    form = NVLS_FORMULA_HISTORY[0][1]
    for first, name in NVLS_FORMULA_HISTORY:
        if version >= first:
            form = name
    return form


def parse_nccl_version(text) -> tuple[int, int, int] | None:
    """``"2.27.3"`` -> (2, 27, 3); ``"2.29"`` -> (2, 29, 0); ``None`` or text without a version -> None.

    Examples
    --------
    >>> parse_nccl_version("2.27.3"), parse_nccl_version("2.29"), parse_nccl_version("not stated")
    ((2, 27, 3), (2, 29, 0), None)
    """
    import re
    m = re.match(r"^\s*v?(\d+)\.(\d+)(?:\.(\d+))?", str(text)) if text is not None else None
    return (int(m[1]), int(m[2]), int(m[3] or 0)) if m else None


#: Ring LL refinement of ``ncclTopoTuneModel`` by release (round 7), read from ``src/graph/tuning.cc``
#: at the tags of NVIDIA/nccl: ((first version, factor), ...), oldest first. v2.18.5 .. v2.20.5:
#: ``busBw = min(llMaxBw, busBw * ((nNodes > 1 || coll == AllReduce || coll == Reduce) ? 1/4 : 1/3))``;
#: v2.21.5 .. v2.30.7: ``busBw = min(llMaxBw, busBw * .5)`` (the same release raised Hopper's LL cap,
#: ``TUNING_TABLE_HISTORY["ll_max"]``). The factor is NCCL's rate of its LL ring kernel for that release,
#: so it is both NCCL's choice and (as a kernel efficiency) the time the run takes.
RING_LL_FACTOR_HISTORY: tuple[tuple[tuple[int, int, int], float, float], ...] = (
    ((2, 0, 0), 1.0 / 4.0, 1.0 / 3.0), ((2, 21, 0), 0.5, 0.5),
)


def ring_ll_factor(version: tuple[int, int, int] | None, all_reduce_like: bool) -> float:
    """NCCL's ring LL bandwidth factor of a release (:data:`RING_LL_FACTOR_HISTORY`; None: 2.30.7).
    ``all_reduce_like``: all-reduce, reduce, or more than one node.

    Examples
    --------
    >>> ring_ll_factor((2, 18, 5), True), ring_ll_factor((2, 20, 5), False), ring_ll_factor(None, True)
    (0.25, 0.3333333333333333, 0.5)
    """
    out = RING_LL_FACTOR_HISTORY[-1][1]
    for first, ar, other in RING_LL_FACTOR_HISTORY:
        if version is None or version >= first:
            out = ar if all_reduce_like else other
    return out


def tuning_tables(version: tuple[int, int, int] | None) -> dict[str, tuple[tuple[float, float, float], ...]]:
    """The cap tables (``ll_max``, ``ring_ll128``, ``tree_ll128``, ``tree``) of an NCCL release
    (None: the 2.30.7 tables).

    Examples
    --------
    >>> tuning_tables((2, 27, 3))["tree"][3], tuning_tables(None)["tree"][3]
    ((77.4, 82.8, 72.0), (70.0, 42.8, 24.0))
    """
    out = {k: tuple(v) for k, v in _TABLES.items()}
    if version is None:
        return out
    for name, rows in TUNING_TABLE_HISTORY.items():
        table = list(out[name])
        for first, arch, row in rows:
            if version >= first:
                table[arch] = row
        out[name] = tuple(table)
    return out


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

#: Round 5: the SM100 ladders by release (search.cc at the tags of NVIDIA/nccl; the two above are
#: v2.30.7's), (first release, intra, inter), oldest first; releases before 2.25 have no SM100 ladder
#: and get the oldest. The top inter rung decides how many NICs a 72-GPU NVLink domain uses across
#: domains: one ring / tree channel per NIC, as many as fit 18 x 40.1 GB/s of NVLink. 48.0 (<= 2.26.x)
#: gives 15 channels (16 x 45.0 ties 15 x 48.0 and loses); 47.9 (2.27.3) gives 16 x 45.0, which the
#: 2.27.3 release notes state as "Increase to 16 the number of NICs used to communicate between MNNVL
#: domains on GB200 systems"; 45.1 (from 2.27.5) keeps 16.
_SM100_INTRA_A = (90.0, 80.0, 70.0, 60.0, 50.0, 40.0, 30.0, 24.0, 20.0, 19.0)
_SM100_INTER_TAIL = (42.0, 40.0, 30.0, 24.0, 22.0, 20.0, 17.5, 15.0, 12.0, 6.0, 3.0, 2.4, 1.2, 0.24, 0.12)
SM100_SPEED_ARRAY_HISTORY: tuple[tuple[tuple[int, int, int], tuple[float, ...], tuple[float, ...]], ...] = (
    ((2, 0, 0), _SM100_INTRA_A, (48.0, 45.0) + _SM100_INTER_TAIL),
    ((2, 27, 3), _SM100_INTRA_A + (18.0,), (47.9, 45.0) + _SM100_INTER_TAIL),
    ((2, 27, 5), _SM100_INTRA_A + (18.0,), (48.0, 45.1) + _SM100_INTER_TAIL),
    ((2, 27, 6), _SM100_INTRA_A + (18.0,), (96.0, 48.0, 45.1) + _SM100_INTER_TAIL),
    ((2, 29, 0), SM100_SPEED_ARRAY_INTRA, (96.0, 48.0, 45.1) + _SM100_INTER_TAIL),
    ((2, 29, 7), SM100_SPEED_ARRAY_INTRA, (96.0, 80.0, 48.0, 45.1) + _SM100_INTER_TAIL),
    ((2, 30, 0), SM100_SPEED_ARRAY_INTRA, SM100_SPEED_ARRAY_INTER),
)


def sm100_speed_arrays(version: tuple[int, int, int] | None) -> tuple[tuple[float, ...], tuple[float, ...]]:
    """(intra, inter) SM100 speed ladders of an NCCL release (None: 2.30.7's).

    Examples
    --------
    >>> sm100_speed_arrays((2, 26, 2))[1][:2], sm100_speed_arrays((2, 27, 3))[1][:2]
    ((48.0, 45.0), (47.9, 45.0))
    >>> sm100_speed_arrays(None) == (SM100_SPEED_ARRAY_INTRA, SM100_SPEED_ARRAY_INTER)
    True
    """
    if version is None:
        return SM100_SPEED_ARRAY_INTRA, SM100_SPEED_ARRAY_INTER
    intra, inter = SM100_SPEED_ARRAY_HISTORY[0][1:]
    for first, a, b in SM100_SPEED_ARRAY_HISTORY:
        if version >= first:
            intra, inter = a, b
    return intra, inter


MAXCHANNELS = 64  # src/include/device.h
NCCL_MAX_NVLS_ARITY = 32  # NVLS graph: maxChannels = min(32, nGPUs) (search.cc l.1125-1140)
NCCL_MAX_DIRECT_ARITY = 7  # CollNetDirect: at most 8 local ranks / heads
#: NVLS launch channel counts (nvls.cc l.155-157); runtime only, not used by the cost model.
NVLS_NCHANNELS = {"SM90": 16, "SM100_multinode": 32, "SM100_single_nvl_domain": 24}
_COLLNET_NODE_THRESHOLD = 2  # init.cc: NCCL_COLLNET_NODE_THRESHOLD default

_EPS = 1e-9

def nvlink_bw_per_link_GBps(sm: int) -> float:
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


def arch_index(sm: int) -> int:
    """NCCL's compute-capability index (``NCCL_*_COMPCAP_IDX``): 0 Volta, 1 Ampere, 2 Hopper, 3 Blackwell.

    The one SM -> architecture mapping of the package (tuning tables, NVLS efficiency).

    Examples
    --------
    >>> arch_index(90), arch_index(103)
    (2, 3)
    """
    return _BLACKWELL if sm >= 100 else _HOPPER if sm >= 90 else _AMPERE if sm >= 80 else _VOLTA
