"""NCCL's launch-time NVLS work split (``src/enqueue.cc``, ``src/transport/nvls.cc``), apart from the cost model.

NCCL's tuning model (:mod:`collectives.nccl_model.tuning`) rates NVLS by one bandwidth per
size; the kernel that then runs moves the buffer in *loops*: every one of ``nChannels`` NVLS
channels handles ``nHeads`` chunks per loop, so a loop covers ``nChannels x nHeads x chunk``
bytes and the chunk is picked per operation from the size (``computeColl`` in enqueue.cc,
the same rule from v2.18.5 to v2.30.7)::

    chunk = min(NCCL_BUFFSIZE / NCCL_STEPS, NCCL_NVLS_CHUNKSIZE)   # 512 KiB, 128 KiB by default
    ops = nChannels x nHeads
    if S < 64 ops chunk and chunk > 64 KiB: chunk = 64 KiB
    if S <  8 ops chunk and chunk > 32 KiB: chunk = 32 KiB
    if S <  2 ops chunk and chunk > 16 KiB: chunk = 16 KiB

(each test uses the chunk the previous line left). ``NCCL_NVLS_CHUNKSIZE`` is 128 KiB by default
(nvls.cc ``NCCL_PARAM(NvlsChunkSize, ...)`` from v2.21.5; a literal 131072 in enqueue.cc before);
AWS's net plugin sets 512 KiB on its platforms (aws-ofi-nccl src/platform-aws.cpp, every platform
block since commit 3defe9e2, 2024-04-03). NVLS channels (nvls.cc): 16 on Hopper; Blackwell 32,
and from v2.27.3 24 inside one NVLink domain (``NVLS_NCHANNELS_SM100_NVL``). Heads of a single
domain: every GPU (search.cc: "Force intra-node NVLS algorithm to pull evenly from all GPUs"), at
most ``NCCL_MAX_NVLS_ARITY`` = 32.

Examples
--------
>>> [nvls_chunk_bytes(s, 16, 8) >> 10 for s in (4 << 20, 8 << 20, 512 << 20, 1 << 30)]
[16, 32, 64, 128]
>>> nvls_chunk_bytes(4 << 30, 24, 8, max_chunk_bytes=512 << 10) >> 10, \
nvls_chunk_bytes(8 << 30, 24, 8, max_chunk_bytes=512 << 10) >> 10
(64, 512)
"""

from __future__ import annotations

from collectives.nccl_model.constants import NCCL_MAX_NVLS_ARITY, NVLS_NCHANNELS

__all__ = ["NVLS_CHUNK_BYTES_DEFAULT", "SIMPLE_BUFFSIZE_DEFAULT", "NCCL_STEPS", "NVLS_CHUNK_FLOORS",
           "nvls_chunk_bytes", "nvls_channels", "nvls_heads", "NVLSTREE_CHUNK_FLOORS", "NVLSTREE_CHUNK_HISTORY",
           "nvlstree_chunk_bytes"]

#: ``NCCL_NVLS_CHUNKSIZE`` default (nvls.cc, v2.21.5 .. v2.30.7; enqueue.cc's literal before).
NVLS_CHUNK_BYTES_DEFAULT = 128 << 10
#: ``NCCL_BUFFSIZE`` default of the Simple protocol (init.cc ``DEFAULT_BUFFSIZE``, 4 MiB).
SIMPLE_BUFFSIZE_DEFAULT = 4 << 20
#: ``NCCL_STEPS``: slots per connection buffer (device.h).
NCCL_STEPS = 8
#: (multiple of ``ops x chunk`` below which, chunk ceiling) of enqueue.cc's NVLS rule, in order.
NVLS_CHUNK_FLOORS: tuple[tuple[int, int], ...] = ((64, 64 << 10), (8, 32 << 10), (2, 16 << 10))


def nvls_chunk_bytes(size_bytes: float, n_channels: int, n_heads: int, *,
                     max_chunk_bytes: int = NVLS_CHUNK_BYTES_DEFAULT,
                     buffsize_bytes: int = SIMPLE_BUFFSIZE_DEFAULT) -> int:
    """The chunk NCCL's NVLS kernel moves per head and channel for an operation of ``size_bytes``."""
    chunk = min(int(buffsize_bytes) // NCCL_STEPS, int(max_chunk_bytes))
    ops = int(n_channels) * int(n_heads)
    for mult, ceiling in NVLS_CHUNK_FLOORS:
        if size_bytes < mult * ops * chunk and chunk > ceiling:
            chunk = ceiling
    return chunk


def nvls_channels(sm: int, single_domain: bool = True, version: tuple[int, int, int] | None = None) -> int:
    """NVLS channels NCCL launches (nvls.cc ``NVLS_NCHANNELS_*``): 16 on Hopper; Blackwell 32, 24 in
    one NVLink domain from v2.27.3 (``version`` None: the pinned release, 2.30.7).

    >>> nvls_channels(90), nvls_channels(100), nvls_channels(100, version=(2, 26, 2))
    (16, 24, 32)
    """
    if sm < 100:
        return NVLS_NCHANNELS["SM90"]
    if single_domain and (version is None or version >= (2, 27, 3)):
        return NVLS_NCHANNELS["SM100_single_nvl_domain"]
    return NVLS_NCHANNELS["SM100_multinode"]


def nvls_heads(gpus_in_domain: int) -> int:
    """NVLS heads of one NVLink domain: every GPU, at most ``NCCL_MAX_NVLS_ARITY``."""
    return max(1, min(int(gpus_in_domain), NCCL_MAX_NVLS_ARITY))


# ---- Round 8 (issue 8, AWS EFA): NVLSTree's chunk by release. Kept apart from the NVLS rule above so that
# branches merge (docs/collectives.md, "Round 8 (2026-12-02), AWS EFA").

#: (multiple of ``ops x chunk`` below which, chunk ceiling) of enqueue.cc's NVLSTree rule, in order; the same four
#: lines in every release from v2.18.5-1 (``computeColl``) to v2.30.7-1 (``computeCollChunkInfo`` /
#: ``getAlgoInfo``), ``ops = nChannels x nHeads``.
NVLSTREE_CHUNK_FLOORS: tuple[tuple[int, int], ...] = ((32, 256 << 10), (16, 128 << 10), (4, 64 << 10), (1, 32 << 10))

#: Where NVLSTree's chunk starts from, by first release (NVIDIA/nccl src/enqueue.cc, src/transport/nvls.cc at each tag):
#: ``"step"``: one Simple step, ``NCCL_BUFFSIZE / NCCL_STEPS`` (v2.18.5-1 .. v2.20.5-1: the NVLS buffers are the Simple
#: ones); ``"nvls"``: ``NCCL_NVLS_CHUNKSIZE`` (128 KiB by default; v2.21.5-1 .. v2.30.7-1, the NVLS buffers' own step).
#: ``cap4``: 64 KiB on 4 nodes or more (v2.19.3-1: ``if (nNodes >= 4) chunkSize = 65536``; from v2.20.3-1 the default of
#: ``NCCL_NVLSTREE_MAX_CHUNKSIZE``, -2 = "64 KiB from 4 nodes, else no cap"; v2.30.7 keeps it in ``ncclNvlsTuning``);
#: ``param``: whether ``NCCL_NVLSTREE_MAX_CHUNKSIZE`` exists (from v2.20.3-1; aws-ofi-nccl sets 524288 from v1.8.0,
#: src/platform-aws.c "Setting NCCL_NVLSTREE_MAX_CHUNKSIZE to 512KiB"). Not modelled: Blackwell's own multi-node
#: NVLSTree tuning of v2.30 (``ncclNvlsTreeSm100Tuning``: chunk, cap and channels by NIC speed and GPUs per node).
NVLSTREE_CHUNK_HISTORY: tuple[tuple[tuple[int, int, int], str, bool, bool], ...] = (
    ((2, 0, 0), "step", False, False),
    ((2, 19, 3), "step", True, False),
    ((2, 20, 3), "step", True, True),
    ((2, 21, 0), "nvls", True, True),
)


def nvlstree_chunk_bytes(size_bytes: float, n_channels: int, n_heads: int, n_nodes: int, *,
                         version: tuple[int, int, int] | None = None,
                         buffsize_bytes: int = SIMPLE_BUFFSIZE_DEFAULT,
                         nvls_chunk_bytes: int = NVLS_CHUNK_BYTES_DEFAULT,
                         max_chunk_bytes: int | None = None) -> int:
    """The chunk each NVLSTree channel and head moves per step for an all-reduce of ``size_bytes``
    (:data:`NVLSTREE_CHUNK_HISTORY`, :data:`NVLSTREE_CHUNK_FLOORS`; ``version`` None: the newest row).
    ``max_chunk_bytes`` is ``NCCL_NVLSTREE_MAX_CHUNKSIZE`` (None: NCCL's default, ignored before v2.20.3).

    Examples
    --------
    >>> [nvlstree_chunk_bytes(s, 16, 8, 2, version=(2, 18, 5)) >> 10 for s in (64 << 20, 512 << 20, 2 << 30)]
    [128, 256, 512]
    >>> nvlstree_chunk_bytes(8 << 30, 16, 8, 2, version=(2, 20, 3), buffsize_bytes=8 << 20,
    ...                      max_chunk_bytes=512 << 10) >> 10  # AWS's plugin cap on a 1 MiB step
    512
    >>> nvlstree_chunk_bytes(8 << 30, 16, 8, 4) >> 10, nvlstree_chunk_bytes(8 << 30, 16, 8, 2) >> 10
    (64, 128)
    """
    v = version or NVLSTREE_CHUNK_HISTORY[-1][0]
    _, base, cap4, param = next(row for row in reversed(NVLSTREE_CHUNK_HISTORY) if v >= row[0])
    chunk = int(nvls_chunk_bytes) if base == "nvls" else int(buffsize_bytes) // NCCL_STEPS
    if param and max_chunk_bytes is not None:
        chunk = min(chunk, int(max_chunk_bytes))
    elif cap4 and int(n_nodes) >= 4:
        chunk = min(chunk, 64 << 10)
    ops = int(n_channels) * int(n_heads)
    for mult, ceiling in NVLSTREE_CHUNK_FLOORS:
        if size_bytes < mult * ops * chunk and chunk > ceiling:
            chunk = ceiling
    return chunk


# ---- Round 13 (issue 8 item 5, mid-size rings): NCCL's per-operation channel / thread reduction for Ring and
# Tree. A reconstruction for the study of docs/collectives.md "Round 13 (2026-12-04), mid-size one-board rings";
# no flow term uses it (at the sizes studied it keeps every channel).

#: Bytes a thread must have before NCCL keeps another channel (comm.h ``NCCL_LL_THREAD_THRESHOLD`` 8,
#: ``NCCL_LL128_THREAD_THRESHOLD`` 8, ``NCCL_SIMPLE_THREAD_THRESHOLD`` 64; the same in v2.18.5-1 .. v2.30.7-1).
#: tuning.cc multiplies Ring/LL's by ``nRanks`` (``threadThresholds[NCCL_ALGO_RING][NCCL_PROTO_LL] *= nRanks``).
THREAD_THRESHOLD_BYTES = {"LL": 8, "LL128": 8, "Simple": 64}
#: ``comm->maxThreads`` of Ring / Tree by protocol with no environment (device.h: ``NCCL_LL_MAX_NTHREADS`` 512,
#: ``NCCL_LL128_MAX_NTHREADS`` 640, ``NCCL_SIMPLE_MAX_NTHREADS`` 512).
RING_TREE_MAX_THREADS = {"LL": 512, "LL128": 640, "Simple": 512}


def ring_tree_launch(size_bytes: float, comm_channels: int, protocol: str, n_ranks: int,
                     algorithm: str = "Ring") -> tuple[int, int]:
    """(channels, threads) NCCL launches a Ring or Tree operation of ``size_bytes`` with (enqueue.cc
    ``topoGetAlgoInfo``, v2.18.5-1 .. v2.30.7-1, after the algorithm and protocol are chosen)::

        nc, nt = comm->nChannels, maxThreads[algo][proto]
        while nBytes < nc * nt * threadThreshold and nc >= 2: nc -= 1
        while nBytes < nc * nt * threadThreshold and nt % 128 == 0: nt /= 2

    ``nBytes`` is the larger buffer (nccl-tests' size), ``threads`` before the Simple sync warps (and Tree then
    runs ``NCCL_MAX_NTHREADS`` anyway). NCCL's cost model (tuning.cc) does not see this: the time table is
    built from the graphs' channels before the reduction.

    Examples
    --------
    >>> ring_tree_launch(8 << 20, 32, "Simple", 4), ring_tree_launch(512 << 10, 24, "Simple", 8)
    ((32, 512), (16, 512))
    >>> ring_tree_launch(512 << 10, 24, "LL", 8), ring_tree_launch(1 << 20, 24, "LL", 8)
    ((16, 512), (24, 512))
    """
    nc = max(1, int(comm_channels))
    nt = RING_TREE_MAX_THREADS[protocol]
    thr = THREAD_THRESHOLD_BYTES[protocol] * (int(n_ranks) if (algorithm == "Ring" and protocol == "LL") else 1)
    while size_bytes < nc * nt * thr and nc >= 2:
        nc -= 1
    while size_bytes < nc * nt * thr and nt % 128 == 0:
        nt //= 2
    return nc, nt


__all__ += ["THREAD_THRESHOLD_BYTES", "RING_TREE_MAX_THREADS", "ring_tree_launch"]


def ring_launch_fraction(size_bytes: float, comm_channels: int, protocol: str, n_ranks: int,
                         threads: bool = False, collective: str | None = None,
                         version: tuple[int, int, int] | None = None) -> float:
    """The part of a Ring operation's channels (``threads``: channel-threads) that NCCL launches for
    ``size_bytes``: ``nc / comm->nChannels`` (``nc x nt / (comm->nChannels x maxThreads)``) with ``nt`` of
    :func:`ring_tree_launch` and ``nc`` its channels, then, for a ``collective``, the channels
    :func:`scheduled_channels` finally schedules it on at release ``version`` (round 16b; ``collective`` None:
    topoGetAlgoInfo's bound alone, round 16). NCCL's cost model rates the ring by every channel; a kernel with
    ``nc`` of them moves its lines at that share of the rate, so the time model takes the fraction as a kernel limit.
    1 from the size where every channel runs (1 MiB on the fit boards).

    Examples
    --------
    >>> ring_launch_fraction(32 << 10, 24, "LL", 8), ring_launch_fraction(128 << 10, 24, "LL", 8)
    (0.041666666666666664, 0.16666666666666666)
    >>> ring_launch_fraction(2 << 10, 24, "LL", 2, threads=True), ring_launch_fraction(2 << 20, 24, "LL", 8)
    (0.010416666666666666, 1.0)
    >>> [ring_launch_fraction(128 << 10, 24, "LL", 2, collective=c, version=(2, 23, 4)) for c in (None, "all_gather")]
    [0.6666666666666666, 0.3333333333333333]
    """
    nc_all = max(1, int(comm_channels))
    nc, nt = ring_tree_launch(size_bytes, nc_all, protocol, n_ranks)
    if collective is not None:
        nc = scheduled_channels(size_bytes, collective, n_ranks, nc, nc_all, protocol, version)
    return (nc * (nt if threads else RING_TREE_MAX_THREADS[protocol])) / (nc_all * RING_TREE_MAX_THREADS[protocol])


__all__ += ["ring_launch_fraction"]


# ---- Round 16b (review r16 item 1): the channels a single collective is finally scheduled on. topoGetAlgoInfo's
# ``nc`` (:func:`ring_tree_launch`) is only an upper bound from v2.22: ``scheduleCollTasksToPlan`` (enqueue.cc)
# cuts the operation into cells of about ``MinTrafficPerChannel`` of traffic and fills channels one after the other
# with ``trafficPerChannel`` each. One collective per plan (nccl-tests), no CollNet / NVLS (their own path).

#: ``MinTrafficPerChannel`` of ``scheduleCollTasksToPlan`` by release, oldest first ((first version, bytes), ...):
#: v2.22.3-1 512 B with 16 B cells; v2.23.4-1 .. v2.28.9-1 16 KiB; v2.29.2-1 .. v2.30.7-1 32 KiB (NVIDIA/nccl
#: src/enqueue.cc at the tags; none before v2.22: the operation runs topoGetAlgoInfo's channels).
SCHEDULE_MIN_TRAFFIC_BYTES: tuple[tuple[tuple[int, int, int], int], ...] = (
    ((2, 22, 0), 512), ((2, 23, 0), 16 << 10), ((2, 29, 0), 32 << 10))
#: First release whose LL operations count 4 x their traffic (enqueue.cc v2.26.2-1: ``if (aggBeg->protocol ==
#: NCCL_PROTO_LL) aggBeg->trafficBytes *= 4`` and ``trafficPerByte *= 4`` in the cells; not in v2.25.1-1).
SCHEDULE_LL_TRAFFIC_X4_FROM = (2, 26, 0)


def traffic_per_byte(collective: str, n_ranks: int) -> int:
    """``ncclFuncTrafficPerByte`` (enqueue.cc): 2 for all-reduce, ``nRanks`` for all-gather / reduce-scatter, else 1.

    >>> traffic_per_byte("all_reduce", 8), traffic_per_byte("all_gather", 8), traffic_per_byte("broadcast", 8)
    (2, 8, 1)
    """
    return 2 if collective == "all_reduce" else int(n_ranks) if collective in ("all_gather", "reduce_scatter") else 1


def _div_up(a: int, b: int) -> int:
    return -(-int(a) // int(b))


def scheduled_channels(size_bytes: float, collective: str, n_ranks: int, nc: int, comm_channels: int,
                       protocol: str = "LL", version: tuple[int, int, int] | None = None) -> int:
    """Channels ``scheduleCollTasksToPlan`` (enqueue.cc) runs one collective of nccl-tests size ``size_bytes`` on,
    given topoGetAlgoInfo's ``nc`` (:func:`ring_tree_launch`) and ``comm->nChannels`` = ``comm_channels``;
    ``version`` None is the newest model (v2.30.7), before v2.22 ``nc`` itself. With ``count`` bytes per rank
    (``size/n`` for all-gather / reduce-scatter, else ``size``; all-gather counts bytes), ``tpb`` of
    :func:`traffic_per_byte` and ``min`` of :data:`SCHEDULE_MIN_TRAFFIC_BYTES`::

        traffic = max(min, count x tpb)
        trafficPerChannel = max(min, traffic / nc)       (v2.29: roundup16(traffic / nc))
        cellSize = roundup16(ceil(min / tpb))            (v2.22: 16 B)

    (from :data:`SCHEDULE_LL_TRAFFIC_X4_FROM` an LL operation's ``tpb`` is 4 x, in the traffic and the cells)
        cells = ceil(count / cellSize); cellsPerChannel = min(cells, ceil(trafficPerChannel / (cellSize tpb)))

    then the first channel takes ``cellsPerChannel`` cells (v2.22: rounded down), the middle ones as many each, the
    last the rest, at most ``comm_channels`` channels (v2.23.4-1 l.722-870; v2.29.2-1 l.576-690).

    Examples
    --------
    LL128 all-gather on 8 ranks (topoGetAlgoInfo: 6 of 24 channels at 32 KiB, 24 at 128 KiB):

    >>> [scheduled_channels(s, "all_gather", 8, ring_tree_launch(s, 24, "LL128", 8)[0], 24, "LL128", (2, 23, 4))
    ...  for s in (32 << 10, 128 << 10, 512 << 10, 2 << 20)]
    [2, 8, 16, 22]
    >>> scheduled_channels(128 << 10, "all_gather", 2, 16, 24, "LL", (2, 23, 4))
    8
    >>> scheduled_channels(128 << 10, "all_gather", 2, 16, 24, "LL", (2, 21, 5))
    16
    >>> scheduled_channels(32 << 10, "all_gather", 8, 1, 32, "LL", (2, 29, 2))  # LL's traffic x 4: one channel
    1
    """
    v = (2, 30, 7) if version is None else tuple(version)
    rules = [m for first, m in SCHEDULE_MIN_TRAFFIC_BYTES if v >= first]
    nc, n_all = max(1, int(nc)), max(1, int(comm_channels))
    if not rules:
        return nc
    min_t, new, old = rules[-1], v >= (2, 29, 0), v < (2, 23, 0)
    tpb = traffic_per_byte(collective, n_ranks)
    count = max(1, int(size_bytes) // int(n_ranks) if collective in ("all_gather", "reduce_scatter")
                else int(size_bytes))
    tpb_cell = tpb * 4 if (v >= SCHEDULE_LL_TRAFFIC_X4_FROM and protocol == "LL") else tpb
    traffic = max(min_t, count * tpb_cell)
    nch = min(nc, n_all)
    per_ch = _div_up(traffic // nch, 16) * 16 if new else max(min_t, traffic // nch)
    cell = 16 if old else _div_up(_div_up(min_t, tpb_cell), 16) * 16
    cells = _div_up(count, cell)
    per_cell = cell * tpb_cell
    cpc = min(cells, _div_up(per_ch, per_cell))
    lo = cells if n_all == 1 else min(cells, per_ch // per_cell if old else _div_up(per_ch, per_cell))
    if cpc == 0:
        return 1
    mid, hi = (cells - lo) // cpc, (cells - lo) % cpc
    if n_all < (lo != 0) + mid + (hi != 0):  # overflowed the communicator's channels
        mid = n_all - 2
        cpc = (cells - lo) // (mid + 1)
        hi = cpc + (cells - lo) % (mid + 1)
    if hi == 0 and mid != 0:
        hi, mid = cpc, mid - 1
    if lo == 0:  # first channel skipped: the next one is the first
        if mid == 0:
            lo, hi = hi, 0
        else:
            lo, mid = cpc, mid - 1
    return max(1, (lo != 0) + mid + (hi != 0))


__all__ += ["SCHEDULE_MIN_TRAFFIC_BYTES", "SCHEDULE_LL_TRAFFIC_X4_FROM", "traffic_per_byte", "scheduled_channels"]
