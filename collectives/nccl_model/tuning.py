"""The tuning model (tuning.cc ``ncclTopoTuneModel``, ``ncclTopoGetAlgoTime``) and NCCL's argmin."""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass
from typing import Iterable

from collectives.nccl_model.constants import (  # noqa: F401
    _PATH_LOC, _PATH_NVB, _PATH_NVL, _PATH_PIX, _PATH_PXB, _PATH_PXN,
    ALGORITHMS,
    BASE_LATENCIES_US,
    HW_LATENCIES_US,
    LL128_C2C_FROM,
    LL_MAX_BWS_GBPS,
    MAXCHANNELS,
    MODELED_COLLECTIVES,
    NCCL_MAX_DIRECT_ARITY,
    NCCL_MAX_NVLS_ARITY,
    NET_OVERHEAD_SIMPLE_FACTOR,
    NET_OVERHEAD_US,
    NVLS_EFFICIENCY,
    NVLS_TREE_CAP_ABSOLUTE,
    PER_CH_MAX_NVLS_TREE_GBPS,
    PER_CH_MAX_RING_LL128_GBPS,
    PER_CH_MAX_TREE_GBPS,
    PER_CH_MAX_TREE_LL128_GBPS,
    PROTOCOLS,
    PROTOCOL_WIRE_EFFICIENCY,
    RING_PLATEAU_FACTOR,
    TREE_CORRECTION_FACTOR,
    _AG,
    _AR,
    _BCAST,
    _COLLNET_CHAIN,
    _COLLNET_DIRECT,
    _COLLNET_NODE_THRESHOLD,
    _COLL_INDEX,
    _HW_NET,
    _HW_NVLINK,
    _HW_PCI,
    _LL,
    _LL128,
    _NVLS,
    _NVLS_TREE,
    _PAT,
    _REDUCE,
    _RING,
    _RS,
    _SIMPLE,
    _TREE,
    arch_index,
    nvls_formula,
    tuning_tables,
    ring_ll_factor,
)
from collectives.nccl_model.system import (  # noqa: F401
    AlgoEstimate,
    Graph,
    NcclSystem,
    _ALGO_ALIASES,
    _PROTO_ALIASES,
    _collective_name,
    _names,
    _size,
    busbw_factor,
)
from collectives.nccl_model.search import (  # noqa: F401
    _graph_for,
    _topo,
)
from topologies.errors import SpecError

__all__ = ["algo_times", "choose", "nvlstree_ceiling_GBps", "comm_channels"]

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
    cc = arch_index(sm)
    idx2 = n_nodes - 1 if n_nodes <= 2 else 2
    amd = system.cpu_vendor == "amd"
    idx1 = cc if n_nodes == 1 else (1 if amd else 0)
    caps = tuning_tables(system.nccl_version)  # the release's per-channel cap tables
    ll_max = caps["ll_max"][idx1][idx2]
    tree_max = caps["tree"][cc][idx2]
    ring_ll128_max = caps["ring_ll128"][cc][idx2]
    tree_ll128_max = caps["tree_ll128"][cc][idx2]
    nvlstree_max = caps["nvls_tree"][cc][idx2]
    # NVLS / NVLSTree bandwidth form of the release (constants.NVLS_FORMULA_HISTORY).
    nvls_old = nvls_formula(system.nccl_version) == "ratio56"
    nvls_agrs_ppn = system.nccl_version is None or system.nccl_version >= (2, 27, 0)
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
            nvlstree_keff = 1.0
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
                if a in (_NVLS, _NVLS_TREE) and nvls_old:
                    # Releases up to 2.27.x (tuning.cc @ v2.27.7 l.267-275): no efficiency, no cap.
                    intra_bw, inter_bw = g.bw_intra_GBps, g.bw_inter_GBps
                    if a == _NVLS_TREE:
                        inter_bw = inter_bw if n_nodes <= 2 else inter_bw / 2
                    elif coll != _AR and nvls_agrs_ppn:
                        intra_bw, inter_bw = intra_bw * (ppn - 1) / ppn, inter_bw * 0.9
                    b = min(intra_bw, inter_bw)
                    if a == _NVLS_TREE and nch >= 2 and nvlstree_max > 0:
                        # The kernel is the same as 2.28.3's (src/device/all_reduce.h v2.26.2 -> v2.28.3:
                        # one send call's signature): its per-channel limit, first expressed by 2.28.3's
                        # perChMaxNVLSTreeBw, is kept as the kernel efficiency (the choice stays 2.27's).
                        n_intra = g.bw_intra_GBps * NVLS_EFFICIENCY[cc] * (nch - 1) / nch * 2.0
                        n_inter = g.bw_inter_GBps * (2 if n_nodes <= 2 else 1)
                        nvlstree_keff = min(1.0, nvlstree_max / min(n_intra, n_inter))
                elif a in (_NVLS, _NVLS_TREE):
                    if nch < 2:
                        why[coll][a][p] = "NVLS needs an NVLS graph with >= 2 channels"
                        continue
                    intra_bw = g.bw_intra_GBps * NVLS_EFFICIENCY[cc] * (nch - 1) / nch
                    intra_bw *= 2.0 if coll == _AR else (ppn - 1) / ppn
                    inter_bw = g.bw_inter_GBps * (2 if (n_nodes <= 2 and a == _NVLS_TREE) else 1)
                    b = min(intra_bw, inter_bw, nvlstree_max if a == _NVLS_TREE else math.inf)
                bus = nch * b
                # Nominal bandwidth the wire allows this protocol (the tree's own 0.92 included):
                # the refinements below that fall short of it are kernel limits. NVLSTree's
                # per-channel cap (perChMaxNVLSTreeBw) is such a limit of the kernel, not of the
                # wire: the nominal is the uncapped min(intra, inter) (issue 8 item 6).
                if a == _NVLS_TREE and nvls_old:
                    wire = bus / nvlstree_keff
                elif a == _NVLS_TREE:
                    wire = nch * min(intra_bw, inter_bw)
                else:
                    wire = bus
                nominal = wire * (0.92 if (a == _TREE and coll == _AR) else 1.0) * PROTOCOL_WIRE_EFFICIENCY[p]
                # Model refinements, in tuning.cc's order (l.330-366).
                if a == _RING and p == _LL:  # the release's factor (constants.RING_LL_FACTOR_HISTORY)
                    bus = min(ll_max, bus * ring_ll_factor(system.nccl_version,
                                                           n_nodes > 1 or coll in (_AR, _REDUCE)))
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
                if a in (_NVLS, _NVLS_TREE) and nvls_old:
                    ratio = 5.0 / 6.0  # up to 2.27.x (tuning.cc @ v2.27.7 l.324)
                elif a in (_RING, _NVLS, _NVLS_TREE):
                    ratio = n_ranks / nsteps
                else:
                    ratio = 0.5
                if not (a != _RING and coll in (_AG, _RS)):
                    bus *= ratio
                bw[coll][a][p] = bus
                if not (a != _RING and coll in (_AG, _RS)):
                    nominal *= ratio
                raw[coll][a][p] = nominal
                if heads_reason:
                    why[coll][a][p] = heads_reason
                elif collnet_algo and p != _SIMPLE:
                    why[coll][a][p] = f"{ALGORITHMS[a]} supports only the Simple protocol"

                # Latency (l.384-435).
                lt = BASE_LATENCIES_US[a][p]
                intra_lat = HW_LATENCIES_US[intra_hw][a][p]
                # + latencyInter, twice for Simple (the flush) (tuning.cc l.390-392)
                inter_lat = HW_LATENCIES_US[_HW_NET][_TREE if ppn == 1 else a][p] + system.latency_inter_us * (
                    2 if p == _SIMPLE else 1)
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
    # GPU -> NIC through the CPU's C2C link: PATH_PHB up to 2.26.x (no LL128 across nodes), PATH_P2C
    # with NCCL_LL128_C2C=1 from 2.27.3 (constants.LL128_C2C_FROM).
    ll128_c2c_off = (n_nodes > 1 and system.nic_via_c2c and system.nccl_version is not None
                     and system.nccl_version < LL128_C2C_FROM)
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
            if algo_reason is None and system.algorithms is not None and ALGORITHMS[a] not in system.algorithms:
                algo_reason = f"NCCL_ALGO={','.join(system.algorithms)} (the net plugin's environment profile)"
            for p in range(3):
                if why[coll][a][p] is not None:
                    continue
                if algo_reason is not None:
                    why[coll][a][p] = algo_reason
                elif system.protocols is not None and PROTOCOLS[p] not in system.protocols:
                    why[coll][a][p] = f"NCCL_PROTO={','.join(system.protocols)} (set by the net plugin)"
                elif p == _LL128 and not ll128_ok:
                    why[coll][a][p] = "LL128 is enabled only over NVLink (SM >= 70) and PIX/PXB (PXN on Hopper+) NICs"
                elif p == _LL128 and ll128_c2c_off:
                    why[coll][a][p] = "LL128 across nodes needs NCCL >= 2.27.3 where the NIC is reached over C2C"
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
    return list(_algo_times(system, name, nbytes, tuple(algos), tuple(protos)))


def _tuner_protocol(system: NcclSystem, name: str, nbytes: int) -> tuple[int, str] | None:
    """(from_bytes, protocol) of the tuner row that applies to ``name`` at ``nbytes`` across nodes (the row
    with the largest ``from_bytes <= nbytes``), or None: NCCL's own choice."""
    if system.tuner_protocols is None or system.nnodes < 2:
        return None
    rows = [(b, p) for c, b, p in system.tuner_protocols if c == name and b <= nbytes]
    return max(rows) if rows else None


@functools.lru_cache(maxsize=1 << 16)
def _algo_times(system: NcclSystem, name: str, nbytes: int, algos: tuple, protos: tuple) -> tuple:
    """:func:`algo_times` after its checks (memoized: a pure function of its arguments; the
    estimates are frozen, callers get a fresh list)."""
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
        return tuple(out)
    m = _tune(system)
    tuned = _tuner_protocol(system, name, nbytes)
    for a, an in enumerate(ALGORITHMS):
        if an not in algos:
            continue
        for p, pn in enumerate(PROTOCOLS):
            if pn not in protos:
                continue
            reason = m.why[coll][a][p]
            if reason is None and tuned is not None and pn != tuned[1]:
                reason = f"the platform's tuner plugin runs {tuned[1]} for {name} from {tuned[0]} bytes"
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
    return tuple(out)


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


def comm_channels(system: NcclSystem) -> int:
    """``comm->nChannels`` of NCCL's model of ``system`` (the ring / tree graphs' channels; round 16b: public for the
    launched-channel rule, ``nccl_model.enqueue.ring_launch_fraction``).

    Examples
    --------
    >>> from collectives.nccl_model.system import NcclSystem
    >>> comm_channels(NcclSystem(arch_sm=90, gpus_per_node=8, nnodes=1, nvlink_links_per_gpu=18, has_nvswitch=True,
    ...                          nvls_capable=True))
    24
    """
    return int(_tune(system).comm_nchannels)


def nvlstree_ceiling_GBps(system: NcclSystem) -> float | None:
    """NVLSTree all-reduce bus bandwidth ceiling of the kernel, ``nChannels x perChMaxNVLSTreeBw``, in GB/s,
    or None where the cap is not an absolute limit of the release's kernel (issue 8 item 6).

    The cap holds on the architectures and releases of :data:`NVLS_TREE_CAP_ABSOLUTE` (Hopper from
    2.21.5, whose NVLSTree runs 128 KiB NVLS chunks); ``nccl_version`` None is the 2.30.7 model.
    Single-node systems have no NVLSTree (None).

    Examples
    --------
    >>> from collectives.nccl_model.system import NcclSystem
    >>> h100 = dict(arch_sm=90, gpus_per_node=8, nnodes=2, nics_per_node=8, nic_Bps=5e10)
    >>> round(nvlstree_ceiling_GBps(NcclSystem(**h100)), 1)
    461.6
    >>> nvlstree_ceiling_GBps(NcclSystem(**h100, nccl_version=(2, 20, 3))) is None
    True
    """
    if system.nnodes < 2:
        return None
    cc = arch_index(system.arch_sm)
    span = NVLS_TREE_CAP_ABSOLUTE.get(cc)
    if span is None:
        return None
    first, last = span
    v = system.nccl_version
    if v is not None and (v < first or (last is not None and v > last)):
        return None
    idx2 = system.nnodes - 1 if system.nnodes <= 2 else 2
    nch = _tune(system).graphs[_NVLS_TREE].nchannels
    cap = PER_CH_MAX_NVLS_TREE_GBPS[cc][idx2]
    return nch * cap if nch >= 2 and cap > 0 else None
