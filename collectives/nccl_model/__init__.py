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

from collectives.nccl_model.constants import *  # noqa: F401,F403
from collectives.nccl_model.system import *  # noqa: F401,F403
from collectives.nccl_model.search import *  # noqa: F401,F403
from collectives.nccl_model.tuning import *  # noqa: F401,F403
from collectives.nccl_model.tuning import _tune  # noqa: F401  (memoised model, for tests)
from collectives.nccl_model.enqueue import *  # noqa: F401,F403

__all__ = [
    "ALGORITHMS",
    "BASE_LATENCIES_US",
    "COLLECTIVES",
    "HW_LATENCIES_US",
    "LL_MAX_BWS_GBPS",
    "LOC_BW_GBPS",
    "MAXCHANNELS",
    "MODELED_COLLECTIVES",
    "NCCL_COMMIT",
    "NCCL_MAX_DIRECT_ARITY",
    "NCCL_MAX_NVLS_ARITY",
    "NCCL_VERSION",
    "NET_OVERHEAD_SIMPLE_FACTOR",
    "NET_OVERHEAD_US",
    "NVLINK_BW_PER_LINK_GBPS",
    "NVLS_EFFICIENCY",
    "NVLS_NCHANNELS",
    "NVLS_TREE_CAP_ABSOLUTE",
    "PATTERNS",
    "PCI_BW_GBPS",
    "PER_CH_MAX_NVLS_TREE_GBPS",
    "PER_CH_MAX_RING_LL128_GBPS",
    "PER_CH_MAX_TREE_GBPS",
    "PER_CH_MAX_TREE_LL128_GBPS",
    "PROTOCOLS",
    "PROTOCOL_WIRE_EFFICIENCY",
    "RING_PLATEAU_FACTOR",
    "SM100_SPEED_ARRAY_INTER",
    "SM100_SPEED_ARRAY_INTRA",
    "SM90_SPEED_ARRAY_INTER",
    "SM90_SPEED_ARRAY_INTRA",
    "SPEED_ARRAY_INTER",
    "SPEED_ARRAY_INTRA",
    "TREE_CORRECTION_FACTOR",
    "TUNING_TABLE_HISTORY",
    "NVLS_FORMULA_HISTORY",
    "nvls_formula",
    "LL128_C2C_FROM",
    "SM100_SPEED_ARRAY_HISTORY",
    "sm100_speed_arrays",
    "arch_index",
    "parse_nccl_version",
    "tuning_tables",
    "AlgoEstimate",
    "Graph",
    "NcclSystem",
    "busbw_factor",
    "nccl_graph",
    "algo_times",
    "choose",
    "nvlstree_ceiling_GBps",
    "NVLS_CHUNK_BYTES_DEFAULT",
    "SIMPLE_BUFFSIZE_DEFAULT",
    "NCCL_STEPS",
    "NVLS_CHUNK_FLOORS",
    "nvls_chunk_bytes",
    "nvls_channels",
    "nvls_heads",
]
