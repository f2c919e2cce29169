"""NCCL's point-to-point tables inside one NVLink domain, by architecture family: the LL threshold (round 8), the
p2p channel counts and the p2p schedule's block rates and batch costs (round 11; :mod:`collectives.p2p_channels`).

Split out of :mod:`collectives.calibration` (which re-exports every name here) when round 11 added the Ampere and
Hopper entries. Every value is sourced or fitted on the fit split; each comment names its source or data.
"""

from __future__ import annotations

__all__ = ["NCCL_P2P_LL_MAX_BYTES_BY_ARCH", "NCCL_P2P_CHANNELS_BY_ARCH", "NCCL_P2P_CHANNEL_BPS", "NCCL_P2P_BATCH_S",
            "nccl_p2p_ll_max_bytes", "nccl_p2p_channels", "nccl_p2p_arch", "nccl_p2p_constants",
            "NCCL_P2P_ONEDOMAIN_PEER_S", "nccl_p2p_onedomain_peer_s", "NCCL_P2P_SIMPLE_FILL_BPS",
            "nccl_p2p_simple_fill_Bps"]

#: NCCL's point-to-point protocol inside one NVLink domain (round 8). NCCL runs a send or receive on LL when its
#: bytes are at most ``p2pnChannelsPerPeer x NCCL_P2P_LL_THRESHOLD`` (src/enqueue.cc ``addP2pToPlan`` @ v2.28.7-1:
#: ``thresholdLL = nChannelsMax*ncclParamP2pLLThreshold()``, ``protoLL[dir] &= bytes[dir] <= thresholdLL``;
#: ``NCCL_P2P_LL_THRESHOLD`` default 16384), else Simple. ``p2pnChannelsPerPeer`` is a power of two
#: (src/graph/paths.cc ``ncclTopoComputeP2pChannels``: ``pow2Up`` of min(p2pnChannels, 2 x NVLink links), capped
#: at p2pnChannels = pow2Up(comm->nChannels)); the model does not rebuild comm->nChannels after NCCL's channel
#: duplication, so the power of two is read from the fit sweeps: the three OCI GB300 nccl-tests all-to-all sweeps
#: (group ``oci-gb300-1rack-nvlink``, 4 / 8 / 64 ranks) all step up between 512 KiB and 1 MiB a peer (64 ranks:
#: 140 -> 409 GB/s busbw), i.e. 32 channels x 16 KiB; 16 or 64 would put the step a size lower or higher.
#: Blackwell only (no fit row elsewhere shows the step). Value: the largest per-peer bytes that run LL.
NCCL_P2P_LL_MAX_BYTES_BY_ARCH = {100: 32 * 16384, 90: 32 * 16384, 80: 32 * 16384}
#: Round 11 (p2p schedule on Ampere): on A100 boards ``p2pnChannelsPerPeer`` = 32 is rebuilt from the source, not read
#: off a step (src/graph/paths.cc @ v2.27.3-1 ``ncclTopoGetNchannels``: ``2 x max(1, path->bw / nvlBw)`` = 2 x 12 links
#: = 24 on an NVSwitch board, ``pow2Up`` 32, capped at ``p2pnChannels`` = ``pow2Up(comm->nChannels)`` = pow2Up(24) = 32:
#: ``comm->nChannels`` is twice the 12 ring channels, src/graph/connect.cc ``ncclTopoPostset`` l.452 @ v2.27.3-1, the
#: 12 from ``collectives.nccl_model.nccl_graph``), so LL up to 32 x 16 KiB a peer as on Blackwell; public
#: ``NCCL_DEBUG=INFO`` logs of A100-SXM4 boards print "24 coll channels, ... 32 p2p channels, 32 p2p channels per peer".
#: Hopper (sm90) boards the same way: 2 x 18 links = 36 -> pow2Up 64, capped at p2pnChannels = pow2Up(2 x 12 ring
#: channels) = 32 (src/graph/paths.cc, connect.cc @ v2.27.3-1 .. v2.29.2-1; ``nccl_graph(90, 8, 18, ...)``: ring 12 x
#: 30 GB/s, as NCCL's own GRAPH log, NVIDIA/nccl#1197); the aws-samples EKS nccl-tests README's p5.48xlarge (8 x H100)
#: log prints "24 coll channels, 16 nvls channels, 32 p2p channels, 32 p2p channels per peer".

#: NCCL's p2p channels inside one NVLink domain, ``(p2pnChannels, p2pnChannelsPerPeer)`` by architecture (round 11,
#: :mod:`collectives.p2p_channels`). Both are powers of two (src/graph/paths.cc ``ncclTopoComputeP2pChannels`` @
#: v2.28.7-1); ``p2pnChannelsPerPeer`` = 32 is the value of :data:`NCCL_P2P_LL_MAX_BYTES_BY_ARCH` (32 x 16 KiB, read
#: from where the fit sweeps step). ``p2pnChannels`` = 32 is read from the same fit sweeps, not rebuilt: 64 would
#: give each of 64 ranks one batch on its own channel (the measured 64-rank call at 1 MiB a peer, 162 us, is twice
#: the 4-rank time of the same 1 MiB parts, i.e. two batches one after the other on 32 channels) and 4 ranks 16
#: channels a peer (48 blocks sending; the measured 4-rank rate at 64-512 MiB, 415-512 GB/s, is that of 24).
NCCL_P2P_CHANNELS_BY_ARCH = {100: (32, 32), 90: (32, 32), 80: (32, 32)}
#: Round 11: Ampere (sm80) and Hopper (sm90) as rebuilt in :data:`NCCL_P2P_LL_MAX_BYTES_BY_ARCH` (32 / 32 from NCCL's
#: own rules: 24 coll channels -> 32 p2p channels; 12 or 18 NVLink links -> 32 a peer after the cap).

#: One p2p channel's (thread block's) NVLink send rate, shared by the works of a batch, by protocol (round 11,
#: :func:`collectives.p2p_channels.p2p_kernel_terms`), and the fixed cost of each batch a channel runs (the kernel's
#: launch and a batch's first step and completion, counted per batch). Fitted together, least mean |relative busbw
#: error|, on the 51 fit-split values of the Blackwell one-domain all-to-all sweeps (groups ``oci-gb300-1rack-nvlink``:
#: 4 / 8 / 64 ranks, 1 MiB - 16 GiB, and ``oci-gb200-1rack-nvlink``: its 1 / 2 / 16 host all-to-all rows),
#: ``python benchmarks/fit_collective_constants.py p2p-channels``. See docs/collectives.md "Round 11 (2026-12-03),
#: all-to-all inside one NVLink domain".
#: By architecture (round 11, "p2p schedule on Ampere and Hopper"): 100 is the Blackwell fit above; 80 (Ampere) is
#: fitted the same way on the 33 fit values of the A100 one-board all-to-all sweeps (group
#: ``aiconfigurator-nccl-a100-1node``, NCCL 2.27.3, 2 / 4 / 8 GPUs, 512 B - 512 MiB),
#: ``python benchmarks/fit_collective_constants.py p2p-channels-ampere``.
#: Until round 12, 90 (Hopper) had no fit one-board all-to-all below the NVLink plateau (the one fit Hopper one-board
#: all-to-all, ``h100x8-alltoall``, is a plateau value), so it took the constants of the family whose p2p transport it shares:
#: Hopper and Blackwell write over NVLink from the send warps (``NCCL_P2P_WRITE``), Ampere reads from the receive warps
#: (src/graph/paths.cc ``ncclTopoCheckP2p`` @ v2.28.7-1: P2P read only between two sm80 GPUs). Decided before any
#: held-out row was looked at; the same dict objects (a Blackwell refit carried over). Replaced in round 12 (below).
NCCL_P2P_CHANNEL_BPS = {100: {"Simple": 21.5e9, "LL": 4.8e9}, 80: {"Simple": 10.5e9, "LL": 2.8e9}}
#: Batch costs of 80 (Ampere) are round 13's (32 / 12 us until then; refitted with the cost per peer, below).
NCCL_P2P_BATCH_S = {100: {"Simple": 13e-6, "LL": 10e-6}, 80: {"Simple": 20e-6, "LL": 10e-6}}
#: Round 16: Simple refitted with the fill term (:data:`NCCL_P2P_SIMPLE_FILL_BPS`): Blackwell's batch cost 22 -> 13 us;
#: Ampere's 30 -> 20 us and its block rate 10.0 -> 10.5 GB/s.
#: Round 12 (Hopper one-board all-to-all): 90 (Hopper) has its own fit now, replacing the borrowed Blackwell objects:
#: the same form and procedure on the 60 fit values of the H100 / H200 one-board all-to-all sweeps of NCCL 2.23 (groups
#: ``aiconfigurator-nccl2.23-h100-1node`` and ``aiconfigurator-nccl2.23-h200-1node``: ai-dynamo/aiconfigurator
#: ``systems/data/{h100,h200}_sxm/comm/nccl/2.23/nccl_perf.parquet`` @ 095f58a5, 2 / 4 / 8 GPUs, 2 KiB - 512 MiB),
#: ``python benchmarks/fit_collective_constants.py p2p-channels-hopper``; every optimum inside its grid (Simple
#: 6-30 GB/s x 0-40 us, LL 1-8 GB/s x 0-20 us). See docs/collectives.md "Round 12 (2026-12-03), Hopper one-board
#: all-to-all".
NCCL_P2P_CHANNEL_BPS[90] = {"Simple": 18.0e9, "LL": 5.0e9}  # round 16: Simple 17 -> 18 GB/s with the fill
#: Batch costs: round 13's (18 / 9 us in round 12; refitted with the cost per peer, below).
NCCL_P2P_BATCH_S[90] = {"Simple": 9e-6, "LL": 5e-6}  # round 16: Simple 14 -> 9 us with the fill
#: Round 13 (Hopper one-board all-to-all, small sizes): a fixed cost per peer of a one-domain all-to-all,
#: ``(n - 1) x`` this, added once to the p2p kernel's fixed part (:func:`collectives.p2p_channels.p2p_kernel_terms`,
#: ``peer_s``): the 2 (n - 1) send / recv tasks of NCCL's group (host enqueue and ``scheduleP2pTasksToPlan``'s work
#: per task, and the kernel's per-work setup), which the schedule's per-batch cost does not see when every peer has a
#: channel of its own (2-8 ranks below 512 KiB a peer: one batch a channel whatever n). Fitted with the LL batch
#: cost on the LL-side fit values, then the Simple batch cost with it on the Simple side, per family, block rates
#: kept: ``python benchmarks/fit_collective_constants.py p2p-peer-cost`` ("Fits" (25); docs/collectives.md "Round 13
#: (2026-12-04), Hopper one-board all-to-all by rank count"). Hopper (the 61 fit values of the NCCL 2.23 H100 / H200
#: sweeps and ``h100x8-alltoall``): 1.2 us a peer, LL 9 -> 5 us, Simple 18 -> 14 us a batch; Ampere (the 33 A100
#: fit values): 0.6 us, LL 12 -> 10 us, Simple 32 -> 30 us. Blackwell: the same fit gives 0.1 us (128 fit values,
#: 8.89 -> 8.59 %, most of it from refitting its Simple batch cost on the aiconfigurator rows); not adopted (0.0),
#: see the docs.
NCCL_P2P_ONEDOMAIN_PEER_S = {100: 0.0, 90: 1.2e-6, 80: 0.6e-6}

#: Round 16 (one-board all-to-all mid sizes): the rate at which a Simple batch pays its largest part's last step again
#: (``min(part, NCCL_P2P_NVL_CHUNKSIZE) / this``, :func:`collectives.p2p_channels.p2p_kernel_terms` ``fill_Bps``; 0 or
#: absent: no such term). Fitted below (docs/collectives.md "Round 16 (2026-12-06), one-board all-to-all mid sizes").
NCCL_P2P_SIMPLE_FILL_BPS: dict = {100: 45e9, 90: 30e9, 80: 20e9}
#: Blackwell (100): fitted with the Simple block rate and batch cost (21.5 GB/s kept, 22 -> 13 us a batch), least mean
#: |busbw error| over the 89 Simple-side fit values of the Blackwell one-domain all-to-all sweeps (aiconfigurator
#: b200 / gb200 / gb300 2-8 GPUs, NCCL 2.29.2, with the v2.29 LL rule; OCI GB300 / GB200 one-rack sweeps, 2.28.7;
#: ``gtc25-b200x8-alltoall``): grid rate 19-24 GB/s x batch 6-24 us x fill 0-120 GB/s, then 21-22 x 13-15 x 45-55;
#: ``python benchmarks/fit_collective_constants.py p2p-simple-fill``. Without the fill the best of the grid is
#: 20 GB/s and 16 us, 7.25 % (with it 4.83 %).
#: Hopper (90), the same grids on the 27 Simple-side fit values of the NCCL 2.23 H100 / H200 sweeps and
#: ``h100x8-alltoall`` (the round-12 / 13 set): block rate 17 -> 18 GB/s, batch 14 -> 9 us, fill 30 GB/s; 6.75 % (best
#: without a fill: the round-13 17 GB/s / 14 us) -> 3.06 %. Ampere (80), on the 13 Simple-side fit values of the A100
#: sweeps (NCCL 2.27.3): 10 -> 10.5 GB/s, 30 -> 20 us, fill 20 GB/s; 7.93 % -> 5.36 %. The fill is about twice the
#: block rate in all three families (45 / 21.5, 30 / 18, 20 / 10.5).


def nccl_p2p_arch(sm: int) -> int:
    """The architecture family (100 Blackwell, 90 Hopper, 80 Ampere, 0 older) whose p2p tables apply: an exact
    family, so a family without its own entry is not modelled (it never borrows an older family's constants).

    >>> [nccl_p2p_arch(s) for s in (103, 100, 90, 89, 80, 70)]
    [100, 100, 90, 80, 80, 0]
    """
    return 100 if sm >= 100 else 90 if sm >= 90 else 80 if sm >= 80 else 0


def nccl_p2p_constants(sm: int) -> tuple[dict, dict] | None:
    """(:data:`NCCL_P2P_CHANNEL_BPS`, :data:`NCCL_P2P_BATCH_S`) of the GPU's architecture family (None: none fitted).

    >>> nccl_p2p_constants(103)[1]["Simple"] * 1e6, nccl_p2p_constants(70)
    (13.0, None)
    """
    a = nccl_p2p_arch(sm)
    if a not in NCCL_P2P_CHANNEL_BPS or a not in NCCL_P2P_BATCH_S:
        return None
    return NCCL_P2P_CHANNEL_BPS[a], NCCL_P2P_BATCH_S[a]


def nccl_p2p_onedomain_peer_s(sm: int) -> float:
    """:data:`NCCL_P2P_ONEDOMAIN_PEER_S` of the GPU's architecture family (0: none).

    >>> nccl_p2p_onedomain_peer_s(70)
    0.0
    """
    return NCCL_P2P_ONEDOMAIN_PEER_S.get(nccl_p2p_arch(sm), 0.0)


def nccl_p2p_ll_max_bytes(sm: int) -> int:
    """:data:`NCCL_P2P_LL_MAX_BYTES_BY_ARCH` of the GPU's architecture (0: no LL modelled).

    Examples
    --------
    >>> nccl_p2p_ll_max_bytes(103), nccl_p2p_ll_max_bytes(90), nccl_p2p_ll_max_bytes(70)
    (524288, 524288, 0)
    """
    return NCCL_P2P_LL_MAX_BYTES_BY_ARCH.get(nccl_p2p_arch(sm), 0)


def nccl_p2p_channels(sm: int) -> tuple[int, int] | None:
    """:data:`NCCL_P2P_CHANNELS_BY_ARCH` of the GPU's architecture (None: not modelled, the flows alone).

    Examples
    --------
    >>> nccl_p2p_channels(103), nccl_p2p_channels(90), nccl_p2p_channels(80), nccl_p2p_channels(70)
    ((32, 32), (32, 32), (32, 32), None)
    """
    return NCCL_P2P_CHANNELS_BY_ARCH.get(nccl_p2p_arch(sm))


def nccl_p2p_simple_fill_Bps(sm: int) -> float:
    """:data:`NCCL_P2P_SIMPLE_FILL_BPS` of the GPU's architecture family (0: no fill term).

    >>> nccl_p2p_simple_fill_Bps(70)
    0.0
    """
    return float(NCCL_P2P_SIMPLE_FILL_BPS.get(nccl_p2p_arch(sm), 0.0))
