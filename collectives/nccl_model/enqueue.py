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
           "nvls_chunk_bytes", "nvls_channels", "nvls_heads"]

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
