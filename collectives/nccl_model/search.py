"""Graph-search reconstruction (src/graph/search.cc ``ncclTopoCompute``): nChannels, bwIntra, bwInter."""

from __future__ import annotations

import math
from dataclasses import dataclass

from collectives.nccl_model.constants import (  # noqa: F401
    LOC_BW_GBPS,
    MAXCHANNELS,
    NCCL_MAX_DIRECT_ARITY,
    NCCL_MAX_NVLS_ARITY,
    PATTERNS,
    PCI_BW_GBPS,
    SM100_SPEED_ARRAY_INTER,
    SM100_SPEED_ARRAY_INTRA,
    SM90_SPEED_ARRAY_INTER,
    SM90_SPEED_ARRAY_INTRA,
    SPEED_ARRAY_INTER,
    SPEED_ARRAY_INTRA,
    _EPS,
    sm100_speed_arrays,
)
from collectives.nccl_model.system import (  # noqa: F401
    Graph,
    NcclSystem,
    _PATTERN_ALIASES,
    _norm,
)
from topologies.errors import SpecError

__all__ = ["nccl_graph"]

def _ladder(sm: int, inter: bool, version: tuple[int, int, int] | None = None) -> tuple[float, ...]:
    if sm >= 100:  # the SM100 ladders changed between releases (constants.SM100_SPEED_ARRAY_HISTORY)
        intra_l, inter_l = sm100_speed_arrays(version)
        return inter_l if inter else intra_l
    if inter:
        return SM90_SPEED_ARRAY_INTER if sm >= 90 else SPEED_ARRAY_INTER
    return SM90_SPEED_ARRAY_INTRA if sm >= 90 else SPEED_ARRAY_INTRA


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
    version: tuple[int, int, int] | None = None  # NCCL release (speed ladders); None: 2.30.7

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
    ladder = _ladder(t.sm, t.inter, t.version)
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
        version=system.nccl_version,
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
