"""The Simple ring's final local copy inside one NVLink domain (round 12).

NCCL's ring kernels run every step of a chunk loop in program order on the same threads of a channel
(``src/device/all_gather.h``, ``reduce_scatter.h``, ``all_reduce.h`` @ v2.29.2-1, ``runRing``): per loop an
all-gather calls ``directCopySend`` (step 0), ``n - 2`` x ``directRecvCopyDirectSend`` and a final
``directRecv``; a reduce-scatter ``send``, ``n - 2`` x ``recvReduceSend`` and a final ``recvReduceCopy``; an
all-reduce ``2(n - 1)`` sending steps and a final ``directRecv``. Every step but the last writes into the next
rank's buffer over NVLink; the last one only moves the chunk from the receive FIFO to the user's buffer on
the GPU itself. Without user-buffer registration (nccl-tests' default; ``prims_simple.h`` sets ``DirectWrite``
/ ``DirectRead`` only when ``ipcRegFlag``, the registered case) the data goes through the FIFO
(``conn->buffs[NCCL_PROTO_SIMPLE]``) and that last step is a real copy: the channel does not send while it
runs, and the next loop's first step waits for it. Over the whole operation each rank copies ``S / n`` that way
(one chunk per loop of ``n`` chunks, every collective: all-gather's ``S`` is the receive buffer, reduce-scatter's
the send buffer, all-reduce's the buffer), so the ring time gains

    t_copy = S / (n x RING_COPY_RATIO x B)

with ``B`` the ring's per-GPU NVLink rate (NCCL's per-link constant x links x the ring kernel limits, the rate
the ring's flows get). The term is ``1/(n-1)`` of a ring pass relative to an all-gather's ``(n-1)/n x S / B``:
at the fitted ``RING_COPY_RATIO`` (1.625) 62 % more on 2 GPUs, 21 % on 4 and 9 % on 8, which is the rank-count dependence
of the measured plateaus (nccl-tests sweeps of 2, 4 and 8 GPUs of one board: B200 all-gather 512 MiB 438 /
567 / 617 GB/s busbw; ai-dynamo/aiconfigurator ``systems/data/<system>/comm/nccl/<version>/nccl_perf.parquet``
@ 095f58a5). ``RING_COPY_RATIO`` (local copy rate of a channel over its NVLink rate) is fitted on the fit-split
single-domain Simple rings (``benchmarks/fit_collective_constants.py ring-copy``; docs/collectives.md, "Round 12
(2026-12-03), ring plateau on small boards"). Only the Simple protocol (the protocol of the plateau rows; LL / LL128 keep
their own fitted terms) and only one NVLink domain (across the network the NIC, not the channel, paces the
ring and the copy runs in its slack).

Examples
--------
>>> ring_copy_s("all_gather", 2, "LL", 1 << 20, 1e11), ring_copy_s("all_to_all", 2, "Simple", 1 << 20, 1e11)
(0.0, 0.0)
>>> t2 = ring_copy_s("all_gather", 2, "Simple", 1 << 29, 6e11); t8 = ring_copy_s("all_gather", 8, "Simple", 1 << 29, 6e11)
>>> round(t2 / t8, 6)
4.0
"""

from __future__ import annotations

__all__ = ["RING_COPY_COLLECTIVES", "RING_COPY_RATIO", "ring_copy_s"]

#: Collectives whose ring ends each chunk loop with a local-only step (see the module docstring).
RING_COPY_COLLECTIVES = ("all_gather", "reduce_scatter", "all_reduce")

#: Local copy rate of a ring channel's last step over the channel's NVLink rate (fitted, see the module
#: docstring; grid in docs/collectives.md, "Fits").
RING_COPY_RATIO = 1.625


def ring_copy_s(collective: str, n: int, protocol: str, size_bytes: float, rate_Bps: float) -> float:
    """Time in s of the Simple ring's final local copy: ``size_bytes / (n x RING_COPY_RATIO x rate_Bps)``
    for the collectives of :data:`RING_COPY_COLLECTIVES` on ``n >= 2`` ranks, else 0.

    Parameters
    ----------
    collective : str
        The collective (``all_gather``, ``reduce_scatter``, ``all_reduce``; others give 0).
    n : int
        Ranks of the ring.
    protocol : str
        NCCL protocol; only ``Simple`` pays the copy here.
    size_bytes : float
        nccl-tests' size of the operation (the larger buffer).
    rate_Bps : float
        The ring's per-GPU NVLink rate, bytes/s.

    Returns
    -------
    float
        The extra time in s.
    """
    if (protocol != "Simple" or collective not in RING_COPY_COLLECTIVES or int(n) < 2 or size_bytes <= 0
            or rate_Bps <= 0 or RING_COPY_RATIO <= 0):
        return 0.0
    return float(size_bytes) / (int(n) * RING_COPY_RATIO * float(rate_Bps))
