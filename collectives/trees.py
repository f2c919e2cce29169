"""NCCL's inter-node trees (``ncclGetBtree`` / ``ncclGetDtree``, src/graph/trees.cc).

The tree algorithm and NCCL's NVLSTree run two complementary binary trees over the nodes, each
carrying half the data; :mod:`collectives.algorithms` routes their edges. The tree/Simple pipeline fill
(:func:`tree_fill_s`: depth from connect.cc, chunk from init.cc / enqueue.cc) is time the run takes,
not part of NCCL's own cost model.
"""

from __future__ import annotations

from collectives.nccl_model.constants import MAXCHANNELS, PROTOCOLS, TREE_CORRECTION_FACTOR
from collectives.nccl_model.enqueue import NCCL_STEPS, SIMPLE_BUFFSIZE_DEFAULT
from topologies.errors import SpecError

__all__ = ["nccl_btree_parent", "nccl_dtree_parents"]


def nccl_btree_parent(n: int, rank: int) -> int:
    """Parent of ``rank`` in NCCL's binary tree over ``n`` nodes (``ncclGetBtree``, trees.cc); -1 at the root.

    The root (0) has one child; every other node's parent clears its lowest set bit and sets the
    next one, or only clears it when that falls outside ``n``.

    Examples
    --------
    >>> [nccl_btree_parent(4, r) for r in range(4)]
    [-1, 2, 0, 2]
    """
    if rank == 0:
        return -1
    bit = rank & -rank
    up = (rank ^ bit) | (bit << 1)
    return up if up < n else rank ^ bit


def nccl_dtree_parents(n: int) -> tuple[tuple[int, ...], tuple[int, ...]]:
    """Parents of every node in NCCL's two complementary trees (``ncclGetDtree``): the binary tree,
    and its mirror (``n`` even) or its shift by one node (``n`` odd).

    Examples
    --------
    >>> nccl_dtree_parents(4)
    ((-1, 2, 0, 2), (1, 3, 1, -1))
    """
    t0 = tuple(nccl_btree_parent(n, r) for r in range(n))
    if n % 2:
        t1 = tuple(-1 if (u := nccl_btree_parent(n, (r - 1) % n)) < 0 else (u + 1) % n for r in range(n))
    else:
        t1 = tuple(-1 if (u := nccl_btree_parent(n, n - 1 - r)) < 0 else n - 1 - u for r in range(n))
    return t0, t1


# ----------------------------------------------------------------------------- pipeline fill
#: NCCL's default Simple buffer per connection, bytes (src/init.cc ``DEFAULT_BUFFSIZE (1 << 22)``, the same from
#: v2.7 to v2.30.7); ``NCCL_BUFFSIZE`` overrides it (Google's TCPXO and AWS's EFA profiles set 8 MiB). One
#: source of truth with NCCL's NVLS chunk rule: :data:`collectives.nccl_model.SIMPLE_BUFFSIZE_DEFAULT`;
#: ``NCCL_STEPS`` (src/include/device.h, steps of a connection's buffer) is :data:`collectives.nccl_model.NCCL_STEPS`.
NCCL_DEFAULT_BUFFSIZE_BYTES = SIMPLE_BUFFSIZE_DEFAULT

__all__ += ["NCCL_DEFAULT_BUFFSIZE_BYTES", "NCCL_STEPS", "check_buffsize", "tree_depth", "tree_chunk_bytes",
            "tree_fill_s"]


def check_buffsize(value) -> int | None:
    """The ``nccl_buffsize`` option (``NCCL_BUFFSIZE`` in bytes), checked: None (NCCL's default) or an
    integer >= ``NCCL_STEPS``; anything else is refused in one line.

    >>> check_buffsize(None), check_buffsize(8 << 20)
    (None, 8388608)
    """
    if value is not None and (isinstance(value, bool) or not isinstance(value, int) or value < NCCL_STEPS):
        raise SpecError(f"options nccl_buffsize: {value!r} must be NCCL_BUFFSIZE in bytes, an integer "
                        f">= {NCCL_STEPS} (NCCL's default is {NCCL_DEFAULT_BUFFSIZE_BYTES})")
    return value


def _log2i(n: int) -> int:
    return max(int(n), 1).bit_length() - 1


def tree_depth(ppn: int, nnodes: int) -> int:
    """Hops from the deepest rank to the root of NCCL's tree (src/graph/connect.cc
    ``depth = nRanks/nNodes - 1 + log2i(nNodes)``: the chain inside a node, then the binary tree).

    Examples
    --------
    >>> tree_depth(8, 4), tree_depth(72, 20)
    (9, 75)
    """
    return max(int(ppn) - 1, 0) + _log2i(nnodes)


#: Last releases whose tree/Simple chunk shrinks with the size (src/enqueue.cc @ v2.18.5-1 .. v2.19.4-1,
#: ``if (info->algorithm == NCCL_ALGO_TREE && info->protocol == NCCL_PROTO_SIMPLE)``: halve while a channel
#: gets fewer than ``8 depth`` chunks down to 128 KiB, ``4 depth`` down to 64 KiB, ``depth`` down to 32 KiB);
#: from v2.20.3-1 to v2.30.7 the rule is gone and the chunk is one step.
TREE_SIMPLE_CHUNK_RULE_BEFORE = (2, 20, 0)

__all__ += ["TREE_SIMPLE_CHUNK_RULE_BEFORE"]


def tree_channels(graph_channels: int) -> int:
    """Channels a tree collective runs on: the search's channels duplicated, ``min(MAXCHANNELS, 2 x nChannels)``
    (src/graph/connect.cc ``ncclTopoPostset``: "Duplication should be complete now"; the two trees of
    :func:`nccl_dtree_parents` take one copy each). NCCL's tuning bandwidth counts the search's channels,
    so a runtime channel moves ``B / (2 nChannels)``. Not modelled: the further doublings of connect.cc
    below 16 channels (Hopper with ``bwIntra > 45`` across nodes, unpack networking); every tree row here
    has 8 or more search channels, i.e. 16 or more runtime channels.

    Examples
    --------
    >>> tree_channels(8), tree_channels(40)
    (16, 64)
    """
    return min(MAXCHANNELS, 2 * max(int(graph_channels), 1))


__all__ += ["tree_channels"]


def tree_chunk_bytes(buffsize_bytes: int | None = None, size_bytes: float | None = None, nchannels: int = 1,
                     depth: int = 0, version: tuple[int, int, int] | None = None) -> int:
    """The chunk a tree/Simple channel hands to the next rank: one buffer step, ``buffSize / NCCL_STEPS``
    (src/enqueue.cc: ``chunkSteps = 1`` for trees), reduced by size on releases before
    :data:`TREE_SIMPLE_CHUNK_RULE_BEFORE` (``version``; None: the modelled 2.30.7, no rule).

    Examples
    --------
    >>> tree_chunk_bytes(), tree_chunk_bytes(8 << 20)
    (524288, 1048576)
    >>> tree_chunk_bytes(None, 64 << 20, 16, 8, (2, 19, 3))  # 4 MiB a channel: 32 chunks >= 4 x 8
    131072
    """
    chunk = int(buffsize_bytes or NCCL_DEFAULT_BUFFSIZE_BYTES) // NCCL_STEPS
    if version is not None and tuple(version) < TREE_SIMPLE_CHUNK_RULE_BEFORE and size_bytes is not None:
        nb, nc = int(size_bytes), max(int(nchannels), 1)
        for per_depth, floor in ((8, 131072), (4, 65536), (1, 32768)):
            while nb // (nc * chunk) < depth * per_depth and chunk > floor:
                chunk //= 2
    return chunk


def tree_fill_s(size_bytes: float, bandwidth_Bps: float, protocol: str, nchannels: int, ppn: int, nnodes: int,
                buffsize_bytes: int | None = None, intra_Bps: float = 0.0,
                version: tuple[int, int, int] | None = None, correction: float = 1.0) -> float:
    """Pipeline fill of NCCL's tree/Simple all-reduce, seconds (0 for LL and LL128).

    With Simple a rank forwards a step only once the whole step has arrived (the sender posts the
    step's tail after its data, src/device/prims_simple.h), so the first chunk of every channel crosses
    every hop up the tree and back down (``2 D`` hops, ``D`` :func:`tree_depth`) before the chunks stream.
    A hop moves one chunk per channel, ``W = min(S, nChannels x chunk)`` bytes (:func:`tree_window_bytes`):
    between nodes at ``B``, NCCL's tree bandwidth of the size (``bandwidth_Bps``, the per-channel rate of
    its model times its channels), inside a node at ``r_fill = max(B, 2 intra_Bps)`` (:func:`fill_hop_rate`,
    round 7: a chain hop of the fill runs alone on its GPU's channel, at twice the steady per-direction rate
    ``r_intra = max(B, intra_Bps)``), ``intra_Bps`` the steady tree rate the node's NVLink allows (each
    GPU of the chain sends S up and S down). Every hop but the slowest is fill::

        fill = 2 (ppn - 1) W / r_fill + 2 log2i(nNodes) W / B - W / min(r_intra, B)

    On two nodes the network hops are halved (joint refit after round 6): NCCL's two trees have
    opposite roots there (``ncclGetDtree``, :func:`nccl_dtree_parents` (2) = ``((-1, 0), (1, -1))``), so
    at the fill's up level half the channels cross node 1 -> 0 and half 0 -> 1, and at the down level
    the reverse: each direction of the full-duplex NICs carries ``W / 2`` per network level, where the
    steady state (which sets ``B``) carries one tree's up and the other's down, ``W``::

        fill (2 nodes) = 2 (ppn - 1) W / r_fill + 2 W / (2 B) - W / min(r_intra, B)

    ``correction`` is the ``treeCorrectionFactor`` of the size (:func:`tree_correction_factor`) that
    ``bandwidth_Bps`` and ``intra_Bps`` carry: NCCL multiplies its whole-operation estimate by it
    (tuning.cc ``ncclTopoGetAlgoTime``), an empirical factor of time, not a slower link, so a hop of the
    fill moves its chunk at the uncorrected rates ``B / correction`` and ``r_fill / correction``.

    LL and LL128 carry a flag in every 8-byte / 128-byte line and a rank forwards each line as it arrives
    (prims_ll.h / prims_ll128.h), so they have no chunk-sized fill. NCCL's own model leaves it out ("Add
    some chunk latency, waiting for proper chunk modeling", tuning.cc): this is time the run takes, not
    an input to NCCL's choice.

    Examples
    --------
    >>> round(tree_fill_s(1 << 30, 100e9, "Simple", 16, 8, 4) * 1e6, 1)  # 4 nodes: 17 hops x 8 MiB at 100 GB/s
    1426.1
    >>> round(tree_fill_s(1 << 30, 100e9, "Simple", 16, 8, 2) * 1e6, 1)  # 2 nodes: 14 + 2 x 1/2 - 1 hops
    1174.4
    >>> round(tree_fill_s(1 << 30, 100e9, "Simple", 16, 8, 2, intra_Bps=200e9) * 1e6, 1)  # chain hops alone at 4x
    293.6
    >>> round(tree_fill_s(8 << 20, 80e9, "Simple", 16, 8, 2, correction=0.8) * 1e6, 1)  # at 100 GB/s
    1174.4
    >>> tree_fill_s(1 << 30, 100e9, "LL128", 16, 8, 2), tree_fill_s(1 << 20, 0.0, "Simple", 16, 8, 2)
    (0.0, 0.0)
    """
    if protocol != "Simple" or bandwidth_Bps <= 0 or size_bytes <= 0 or tree_depth(ppn, nnodes) <= 0:
        return 0.0
    if not 0.0 < correction <= 1.0:
        raise SpecError(f"correction: {correction!r} must be in (0, 1] (NCCL's treeCorrectionFactor)")
    w = tree_window_bytes(size_bytes, nchannels, buffsize_bytes, tree_depth(ppn, nnodes), version)
    b = float(bandwidth_Bps) / correction
    r_intra = max(b, float(intra_Bps) / correction)
    net_level = w / (2 * b) if int(nnodes) == 2 else w / b  # two nodes: opposite directions (docstring)
    # every chain hop of the fill runs alone on its GPU's channel, at the channel's whole rate (fill_hop_rate)
    r_fill = fill_hop_rate(b, r_intra, float(intra_Bps) / correction)
    hops = 2 * max(int(ppn) - 1, 0) * w / r_fill + 2 * _log2i(nnodes) * net_level
    slowest = w / (b if nnodes > 1 else r_intra)
    return max(hops - slowest, 0.0)


def fill_hop_rate(bandwidth_Bps: float, shared_Bps: float, intra_Bps: float) -> float:
    """Rate of a chain (NVLink) hop of the tree/Simple fill, B/s (round 7, from NCCL's kernel):
    ``max(B, shared, 2 intra_Bps)``.

    NCCL runs each tree channel as one thread block (``runTreeSplit``, src/device/all_reduce.h, v2.18 to
    v2.30.7): its threads are split into a reduce-up group (``nthreads/2 + 64``) and a broadcast-down
    group that run at once, so in the steady state each GPU of the chain moves ``S`` up and ``S`` down
    through the same channel and the same NVLink port: each direction at half the chain's rate
    (``intra_Bps`` = NVLink x efficiency x kernel limit / 2, the kernel limit holding NCCL's per-channel cap
    ``perChMaxTreeBw``, which is per channel, both directions together). The first chunk of a channel
    climbs the chain while nothing has come down yet, and on its way down the chunks still climbing are
    the ones the streaming term ``S / B`` already times: a work-conserving channel that gives a lone
    direction all of its rate completes in ``(2 D - 1)`` lone hops plus the stream (a fluid simulation of
    the chain with its budget shared by the sends in progress is within one steady-state hop of that, for
    1 to 64 chunks a channel, network- or NVLink-bound; docs/collectives.md, "Round 7"). So the fill's
    chain hops move their chunk at twice the steady per-direction rate. The network levels keep
    :func:`tree_fill_s`'s rates (a NIC direction's capacity is not shared between up and down).

    Examples
    --------
    >>> fill_hop_rate(100e9, 100e9, 100e9)  # NVLink-paced chain: twice the steady rate
    200000000000.0
    >>> fill_hop_rate(100e9, 100e9, 0.0)  # no NVLink rate given (hops at B): unchanged
    100000000000.0
    """
    return max(float(bandwidth_Bps), float(shared_Bps), 2 * float(intra_Bps))


def tree_correction_factor(protocol: str, size_bytes: float) -> float:
    """NCCL's ``treeCorrectionFactor[protocol][log2i(nBytes / 64)]`` (tuning.cc; 1 from 512 MiB up), the
    factor its tree all-reduce estimate applies to the bandwidth of the size.

    Examples
    --------
    >>> tree_correction_factor("Simple", 1 << 20), tree_correction_factor("Simple", 1 << 30)
    (0.5, 1.0)
    """
    log_size = _log2i(int(size_bytes) >> 6) if int(size_bytes) >= 64 else -1
    if protocol not in PROTOCOLS or not 0 <= log_size < 23:
        return 1.0
    return TREE_CORRECTION_FACTOR[PROTOCOLS.index(protocol)][log_size]


def tree_window_bytes(size_bytes: float, nchannels: int, buffsize_bytes: int | None = None, depth: int = 0,
                      version: tuple[int, int, int] | None = None) -> float:
    """Bytes one fill stage moves: ``min(S, nChannels x chunk)`` (see :func:`tree_fill_s`, :func:`tree_chunk_bytes`).

    Examples
    --------
    >>> tree_window_bytes(1 << 20, 16), tree_window_bytes(1 << 30, 16)
    (1048576.0, 8388608.0)
    """
    chunk = tree_chunk_bytes(buffsize_bytes, size_bytes, nchannels, depth, version)
    return min(float(size_bytes), max(int(nchannels), 1) * float(chunk))


__all__ += ["tree_window_bytes", "tree_correction_factor", "fill_hop_rate"]


# ---- Round 8 (issue 8, AWS EFA): NVLSTree's network store-and-forward. Kept apart from the tree/Simple fill above
# so that branches merge (docs/collectives.md, "Round 8 (2026-12-02), AWS EFA").

def nvlstree_fill_s(chunk_bytes: int, nchannels: int, nheads: int, nnodes: int, bandwidth_Bps: float) -> float:
    """Pipeline fill of NCCL's NVLSTree all-reduce across nodes, seconds: its network hops' store-and-forward.

    NVLSTree runs Simple only (prims_simple.h): a head receives a whole step before its warps reduce it or send it on,
    so the first chunk of a channel crosses every network level of the inter-node tree up and back down
    (``2 log2i(nNodes)`` hops, NCCL's double binary tree over nodes) before the chunks stream; the NVLS stages inside a
    node move a chunk at NVLink speed and are left out. A hop moves one chunk per channel and head at the channel's
    steady rate: a head's network direction carries its ``nChannels`` channels at ``B_head = bandwidth_Bps / nHeads``
    (NCCL's algorithm bandwidth of the size; each of a domain's ``nHeads`` heads, ``nccl_model.nvls_heads``, sends
    ``S / nHeads`` a direction), so the hop takes ``nChannels x chunk / B_head``. As in :func:`tree_fill_s`, every
    hop but the slowest is fill (a pipeline of ``k`` stages adds ``k - 1`` stage times to the stream)::

        fill = (2 log2i(nNodes) - 1) x nChannels x chunk x nHeads / bandwidth_Bps

    ``chunk_bytes`` is NCCL's NVLSTree chunk of the size (``nccl_model.nvlstree_chunk_bytes``, by release). Time the
    run takes, not a term of NCCL's choice (NCCL's model leaves chunks out, tuning.cc).

    Examples
    --------
    >>> round(nvlstree_fill_s(128 << 10, 16, 8, 2, 250e9) * 1e6, 1)  # 2 nodes: one hop of 16 x 128 KiB at 31 GB/s
    67.1
    >>> round(nvlstree_fill_s(64 << 10, 16, 8, 4, 250e9) * 1e6, 1)  # 4 nodes: three hops
    100.7
    >>> nvlstree_fill_s(128 << 10, 16, 8, 1, 250e9), nvlstree_fill_s(128 << 10, 16, 8, 2, 0.0)
    (0.0, 0.0)
    """
    if int(nnodes) < 2 or bandwidth_Bps <= 0:
        return 0.0
    hops = 2 * _log2i(int(nnodes)) - 1
    return hops * max(int(nchannels), 1) * float(chunk_bytes) * max(int(nheads), 1) / float(bandwidth_Bps)


__all__ += ["nvlstree_fill_s"]
