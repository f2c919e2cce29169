"""NCCL's point-to-point execution inside one NVLink domain: rounds, channels, batches, warps.

An all-to-all of ``S`` bytes a rank over ``n`` ranks is ``n`` rounds of one (send, recv) pair each
(``S/n`` bytes a peer, round 0 the copy to self). NCCL v2.28.7-1 runs them as follows; every rule
below is read from that tag:

* ``src/graph/paths.cc`` ``ncclTopoComputeP2pChannels``: ``p2pnChannels`` (``P``) and
  ``p2pnChannelsPerPeer`` (``C``) are powers of two, ``C <= P``.
* ``src/enqueue.cc`` ``scheduleP2pTasksToPlan``: ``nChannelsMin = C``, halved while
  ``nChannelsMin x n > P`` (and > 1). ``addP2pToPlan``: a send / recv runs LL when its bytes are at
  most ``C x NCCL_P2P_LL_THRESHOLD`` (16384) and the peer is not self, else Simple; its channel
  count is ``min(nChannelsMin, divUp(bytes, minPart))``, doubled while the part exceeds ``maxPart``
  and the count is ``<= C/2``; with one node (an MNNVL rack is one node: ``comm->nNodes`` counts rings)
  ``minPart = step/8`` and ``maxPart = 32 step``, the Simple step ``p2pChunkSize`` =
  ``NCCL_P2P_NVL_CHUNKSIZE`` (512 KiB, ``src/init.cc`` ``computeBuffSizes``), the LL step
  ``DEFAULT_LL_BUFFSIZE / NCCL_STEPS`` (8 lines x 512 threads x 8 steps x 16 B / 8 = 64 KiB).
  ``src/include/device.h`` ``ncclP2pPartBounds``: parts of ``alignUp(divUp(bytes, k), 4 KiB)``.
* ``src/include/channel.h`` ``ncclP2pChannelBaseForRound`` (one node): base of round ``r`` =
  ``reverseBits(r, log2 P)`` (its low ``log2 P`` bits reversed); ``ncclP2pChannelForPart``: part
  ``p`` runs on channel ``(base + p) & (P - 1)``.
* ``src/enqueue.cc`` ``addWorkBatchToPlan``: on one channel, works join one batch while the batch
  has fewer than ``NCCL_MAX_DEV_WORK_P2P_PER_BATCH`` (8) works, no two of one round and all of one
  epoch of 8 rounds (``round / 8``); a new epoch starts a new batch. A channel is one thread block:
  its batches run one after the other, the works of a batch at the same time.
* ``src/device/sendrecv.h`` ``RunWorkBatch<ncclFuncSendRecv>``: the block's
  ``NCCL_MAX_NTHREADS / 32`` = 20 warps are split evenly among the batch's works
  (``20 / nWorks`` each, about half sending, half receiving): the works of a batch share one block.
* ``src/graph/paths.cc`` ``ncclTopoCheckP2p``: P2P read only between two sm80 GPUs; on Hopper and
  Blackwell the transport writes (``src/transport/p2p.cc``: ``NCCL_P2P_WRITE``), so the send warps
  move the bytes over NVLink (on Ampere the receive warps read them: one block either way).

Older releases (round 11, by tag; ``release`` below): up to v2.27.7-1 ``ncclP2pChannelBaseForRound``
(one node) is the round itself and ``ncclP2pChannelForPart`` puts part ``p`` on channel
``(base + reverseBits(p, log2 P)) & (P - 1)`` (``src/include/channel.h``, ``src/include/device.h`` @
v2.27.3-1); v2.28.3-1 has the bit-reversed base and contiguous parts above; the 8-round epoch rule of
``addWorkBatchToPlan`` first appears in v2.28.7-1 (before it a batch closes only at 8 works or a repeated
round). Channel counts, parts and the LL rule are the same in v2.27.3-1 and v2.28.7-1.

Round 16 (v2.29.2-1, by tag; :func:`p2p_ll_by_peer_channels`): ``addP2pToPlan`` computes a peer's channel count
with Simple's step first (``minPart`` 64 KiB) and then runs LL when ``bytes <= nChannels[dir] x
NCCL_P2P_LL_THRESHOLD``, the peer's own count, not ``p2pnChannelsPerPeer``; the count is not recomputed for LL. So
LL only up to 16 KiB a peer (one channel), and 16 KiB - 512 KiB a peer runs Simple on ``divUp(bytes, 64 KiB)``
channels. v2.28.9-1 has the older rule; v2.29.2-1 and v2.29.7-1 the new one.

The time model built on it (:func:`p2p_kernel_terms`): a channel's time is the sum over its batches
of a fixed cost per batch plus the batch's NVLink bytes at one rate per block; the kernel's time is
its slowest channel's. The fixed cost and the block rate, by protocol, are fitted
(``collectives.calibration.NCCL_P2P_CHANNEL_BPS``, ``NCCL_P2P_BATCH_S``); the NVLink port's own limit
stays with the flows.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["NCCL_STEPS", "NCCL_MAX_NTHREADS", "NCCL_MAX_DEV_WORK_P2P_PER_BATCH", "NCCL_P2P_LL_THRESHOLD",
           "NCCL_P2P_NVL_CHUNKSIZE", "NCCL_LL_STEP_BYTES", "P2pWork", "p2p_channel_batches", "p2p_channel_counts", "p2p_kernel_terms",
           "reverse_bits", "channels_per_peer_min", "p2p_rules", "p2p_ll_by_peer_channels", "p2p_peer_protocol"]

#: ``src/include/device.h`` @ v2.28.7-1.
NCCL_STEPS = 8
#: ``src/include/device.h`` @ v2.28.7-1 (the p2p kernel's block: ``plan->threadPerBlock = NCCL_MAX_NTHREADS``).
NCCL_MAX_NTHREADS = 640
#: ``src/include/device.h`` @ v2.28.7-1.
NCCL_MAX_DEV_WORK_P2P_PER_BATCH = 8
#: ``src/enqueue.cc`` @ v2.28.7-1 ``NCCL_PARAM(P2pLLThreshold, "P2P_LL_THRESHOLD", 16384)``.
NCCL_P2P_LL_THRESHOLD = 16384
#: ``src/init.cc`` @ v2.28.7-1 ``NCCL_PARAM(P2pNvlChunkSize, "P2P_NVL_CHUNKSIZE", (1 << 19))``.
NCCL_P2P_NVL_CHUNKSIZE = 1 << 19
#: ``src/init.cc`` @ v2.28.7-1 ``DEFAULT_LL_BUFFSIZE`` / ``NCCL_STEPS`` (``NCCL_LL_LINES_PER_THREAD`` 8 x
#: ``NCCL_LL_MAX_NTHREADS`` 512 x 16-byte lines).
NCCL_LL_STEP_BYTES = 8 * 512 * 16

_ALIGN = 4 << 10  # ncclP2pPartBounds


@dataclass(frozen=True)
class P2pWork:
    """One work of a batch on one channel: its round, protocol and the bytes of this channel's part."""

    round: int
    protocol: str
    part_bytes: int

    @property
    def is_self(self) -> bool:
        """Round 0 is the copy to self (no NVLink traffic)."""
        return self.round == 0


def p2p_rules(release) -> tuple[bool, bool]:
    """(bit-reversed round bases, 8-round epochs) of NCCL's one-node p2p schedule in ``release``.

    ``release`` is a ``(major, minor, patch)`` tuple or None (None: the v2.28.7-1 rules, the model's default
    for every newer release too). Read by tag (module docstring): v2.27.x reverses the parts, not the bases,
    and has no epoch rule; v2.28.3 has the bases, not the epochs; v2.28.7 both.

    >>> p2p_rules((2, 27, 3)), p2p_rules((2, 28, 3)), p2p_rules((2, 28, 7)), p2p_rules(None)
    ((False, False), (True, False), (True, True), (True, True))
    """
    if release is None:
        return True, True
    v = tuple(release)
    return v >= (2, 28, 0), v >= (2, 28, 7)


def p2p_ll_by_peer_channels(release) -> bool:
    """Whether ``release`` takes LL by the peer's own channel count (v2.29+: ``bytes <= nChannels x 16 KiB``, the
    count from Simple's step) rather than by ``p2pnChannelsPerPeer x 16 KiB`` (up to v2.28.9; None: v2.28.7's).

    >>> p2p_ll_by_peer_channels((2, 28, 9)), p2p_ll_by_peer_channels((2, 29, 2)), p2p_ll_by_peer_channels(None)
    (False, True, False)
    """
    return release is not None and tuple(release) >= (2, 29, 0)


def p2p_peer_protocol(n_ranks: int, peer_bytes: int, *, p2p_channels: int, channels_per_peer: int,
                      release=None) -> tuple[str, int]:
    """(protocol, channels) of a send / recv of ``peer_bytes`` to another rank (not self), by ``release``'s rule.

    Up to v2.28.9: LL iff ``peer_bytes <= channels_per_peer x 16 KiB``, channels from that protocol's step; v2.29+:
    channels from Simple's step, LL iff ``peer_bytes <= channels x 16 KiB`` (:func:`p2p_ll_by_peer_channels`).

    >>> p2p_peer_protocol(2, 64 << 10, p2p_channels=32, channels_per_peer=32)
    ('LL', 8)
    >>> [p2p_peer_protocol(2, b << 10, p2p_channels=32, channels_per_peer=32, release=(2, 29, 2)) for b in (16, 64)]
    [('LL', 1), ('Simple', 1)]
    """
    m = channels_per_peer_min(n_ranks, p2p_channels, channels_per_peer)
    b = int(peer_bytes)
    if p2p_ll_by_peer_channels(release):
        k = _n_channels(b, "Simple", m, channels_per_peer)
        return ("LL" if b <= k * NCCL_P2P_LL_THRESHOLD else "Simple"), k
    proto = "LL" if b <= channels_per_peer * NCCL_P2P_LL_THRESHOLD else "Simple"
    return proto, _n_channels(b, proto, m, channels_per_peer)


def reverse_bits(x: int, n_bits: int) -> int:
    """``reverseBits(x, nBits)`` of NCCL's bitops.h: the low ``n_bits`` bits of ``x``, reversed.

    >>> [reverse_bits(r, 5) for r in range(4)], reverse_bits(33, 5)
    ([0, 16, 8, 24], 16)
    """
    out = 0
    for i in range(n_bits):
        out |= ((x >> i) & 1) << (n_bits - 1 - i)
    return out


def channels_per_peer_min(n_ranks: int, p2p_channels: int, channels_per_peer: int) -> int:
    """``nChannelsMin`` of ``scheduleP2pTasksToPlan``.

    >>> [channels_per_peer_min(n, 32, 32) for n in (4, 8, 64)]
    [8, 4, 1]
    """
    m = channels_per_peer
    while m * n_ranks > p2p_channels and m > 1:
        m //= 2
    return m


def _n_channels(nbytes: int, protocol: str, m: int, c: int) -> int:
    step = NCCL_P2P_NVL_CHUNKSIZE if protocol == "Simple" else NCCL_LL_STEP_BYTES
    if nbytes <= 0:
        return 1
    min_part, max_part = step // 8, step * 32
    k = min(m, -(-nbytes // min_part))
    part = max(min_part, -(-nbytes // k))
    while part > max_part and k <= c // 2:
        k *= 2
        part = -(-nbytes // k)
    return k


def p2p_channel_counts(n_ranks: int, peer_bytes: int, *, p2p_channels: int, channels_per_peer: int,
                       release=None) -> tuple:
    """(protocol of the peers, channels of a peer, channels of the copy to self): what decides the schedule's shape
    (the plan cache keys it; within one shape every part scales with the size, up to the 4 KiB alignment).

    >>> p2p_channel_counts(4, 1 << 28, p2p_channels=32, channels_per_peer=32)
    ('Simple', 16, 16, True)
    """
    m = channels_per_peer_min(n_ranks, p2p_channels, channels_per_peer)
    proto, k = p2p_peer_protocol(n_ranks, peer_bytes, p2p_channels=p2p_channels, channels_per_peer=channels_per_peer,
                                 release=release)
    # round 16: and whether a peer's part exceeds one Simple chunk (p2p_kernel_terms' fill: linear below, fixed above)
    return (proto, k, _n_channels(int(peer_bytes), "Simple", m, channels_per_peer),
            -(-int(peer_bytes) // k) > NCCL_P2P_NVL_CHUNKSIZE)


def p2p_channel_batches(n_ranks: int, peer_bytes: int, *, p2p_channels: int,
                        channels_per_peer: int, release=None) -> list[list[list[P2pWork]]]:
    """NCCL's batches of a uniform all-to-all on each of ``p2p_channels`` channels (one node, one rank).

    Returns, per channel, its batches in order, each a list of :class:`P2pWork`. Every rank runs the
    same shape (the schedule is a permutation per round), so rank 0's is every rank's. ``release``: the
    NCCL release whose channel mapping and batching rules apply (:func:`p2p_rules`).

    >>> b = p2p_channel_batches(4, 1 << 20, p2p_channels=32, channels_per_peer=32)
    >>> sorted({len(ch) for ch in b}), b[16][0][0]
    ([1], P2pWork(round=1, protocol='Simple', part_bytes=131072))
    >>> b = p2p_channel_batches(64, 1 << 20, p2p_channels=32, channels_per_peer=32)
    >>> sorted({len(ch) for ch in b}), [w.round for batch in b[16] for w in batch]
    ([2], [1, 33])
    >>> b = p2p_channel_batches(64, 1 << 20, p2p_channels=32, channels_per_peer=32, release=(2, 27, 3))
    >>> sorted({len(ch) for ch in b}), [[w.round for w in batch] for batch in b[1]]  # no epochs: one batch
    ([1], [[1, 33]])
    """
    P, C = int(p2p_channels), int(channels_per_peer)
    if P < 1 or P & (P - 1) or C < 1 or C & (C - 1) or C > P:
        raise ValueError(f"p2p channels: P={P}, C={C} must be powers of two with C <= P")
    m = channels_per_peer_min(n_ranks, P, C)
    peer_proto, peer_k = p2p_peer_protocol(n_ranks, peer_bytes, p2p_channels=P, channels_per_peer=C, release=release)
    log2p = P.bit_length() - 1
    rev_base, epochs = p2p_rules(release)
    chans: list[list[list[tuple[int, str, int]]]] = [[] for _ in range(P)]
    epoch_of: list[int] = [-1] * P
    for r in range(n_ranks):
        proto, k = (peer_proto, peer_k) if r != 0 else ("Simple", _n_channels(int(peer_bytes), "Simple", m, C))
        part = -(-int(peer_bytes) // k)
        part = -(-part // _ALIGN) * _ALIGN
        base = reverse_bits(r, log2p) if rev_base else r & 0xff
        for p in range(k):
            beg = min(p * part, int(peer_bytes))
            end = min((p + 1) * part, int(peer_bytes))
            c = (base + (p if rev_base else reverse_bits(p, log2p))) & (P - 1)
            e = r // NCCL_MAX_DEV_WORK_P2P_PER_BATCH if epochs else 0
            batches = chans[c]
            if (not batches or epoch_of[c] != e or len(batches[-1]) == NCCL_MAX_DEV_WORK_P2P_PER_BATCH
                    or any(w[0] == r for w in batches[-1])):
                batches.append([])
                epoch_of[c] = e
            batches[-1].append((r, proto, end - beg))
    return [[[P2pWork(r, proto, nb) for r, proto, nb in batch] for batch in ch] for ch in chans]


def p2p_kernel_terms(n_ranks: int, peer_bytes: int, *, p2p_channels: int, channels_per_peer: int,
                     channel_Bps: dict, batch_s: dict, release=None, peer_s: float = 0.0,
                     fill_Bps: float = 0.0) -> tuple[float, float]:
    """(fixed, data) seconds of the slowest channel of NCCL's p2p kernel for a uniform all-to-all.

    A channel's time is ``sum over its batches (batch_s[protocol] + NVLink bytes of the batch /
    channel_Bps[protocol])``: one thread block moves its NVLink sends at one rate, shared by the works
    of a batch (their warps split the block); the copy to self moves nothing over NVLink and is not
    counted. Every batch costs the fixed cost of the peers' protocol (a batch of the copy to self alone
as well: the block runs it). The slowest channel is the one with
    the largest total; its two parts are returned apart (the fixed part is the same for every size with
    the same schedule, the data part scales with the size). ``peer_s`` (round 13): a fixed cost per peer,
    ``(n_ranks - 1) x peer_s`` added once to the fixed part (``calibration.NCCL_P2P_ONEDOMAIN_PEER_S``).
    ``fill_Bps`` (round 16; 0: none): a Simple batch also pays its largest NVLink part's last step again,
    ``min(part, NCCL_P2P_NVL_CHUNKSIZE) / fill_Bps`` (a part moves in steps of one chunk, each handed over as a
    whole: the step in flight when the sender finishes is not overlapped); in the data part while the part is at
    most one chunk (it scales with the size), in the fixed part above (``calibration.NCCL_P2P_SIMPLE_FILL_BPS``).

    >>> f, d = p2p_kernel_terms(64, 1 << 20, p2p_channels=32, channels_per_peer=32,
    ...                         channel_Bps={"Simple": 20e9, "LL": 5e9}, batch_s={"Simple": 20e-6, "LL": 5e-6})
    >>> round(f * 1e6, 1), round(d * 1e6, 1)
    (40.0, 104.9)
    """
    best = (-1.0, 0.0, 0.0)
    proto = p2p_peer_protocol(n_ranks, peer_bytes, p2p_channels=p2p_channels, channels_per_peer=channels_per_peer,
                              release=release)[0]  # the peers' protocol
    for ch in p2p_channel_batches(n_ranks, peer_bytes, p2p_channels=p2p_channels,
                                  channels_per_peer=channels_per_peer, release=release):
        fixed = data = 0.0
        for batch in ch:
            net = [w for w in batch if not w.is_self]
            fixed += batch_s[proto]
            data += sum(w.part_bytes for w in net) / channel_Bps[proto]
            if fill_Bps > 0 and proto == "Simple" and net:
                last = max(w.part_bytes for w in net)
                if last <= NCCL_P2P_NVL_CHUNKSIZE:
                    data += last / fill_Bps
                else:
                    fixed += NCCL_P2P_NVL_CHUNKSIZE / fill_Bps
        if fixed + data > best[0]:
            best = (fixed + data, fixed, data)
    return best[1] + peer_s * (n_ranks - 1), best[2]
