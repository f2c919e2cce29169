"""Model constants of the expert-parallel (MoE all-to-all) kernels, each with its source or its fit.

DeepEP (normal and low-latency), HybridEP, UCCL-EP, NCCL EP, pplx-kernels and TensorRT-LLM's one-sided
NVLink all-to-all: per-peer costs, the low-latency kernels' fixed times (across nodes and inside one
NVLink board), the pull combine's barrier, DeepEP's SM budget and the internode pipeline rate. Kept apart
from :mod:`collectives.moe`, the model that uses them, as NCCL keeps its tuning tables; re-exported by
:mod:`collectives.calibration` (one calibration table for the collective layer). Every fit is re-run by
``python benchmarks/fit_collective_constants.py <name>`` on the fit split (docs/collectives.md, "Fits").
"""

from __future__ import annotations

import numpy as np

from topologies.errors import SpecError

__all__ = ["PER_PEER_S", "LL_FIXED_S", "LL_NVLINK_S", "PULL_COMBINE_FIXED_S", "DEEPEP_SM_RATE_BPS",
           "DEEPEP_SM_FIXED_S", "DEEPEP_SM_CAP_BPS", "DEEPEP_TEST_SMS", "RDMA_PIPELINE_BPS", "DEEPEP_SM_SWEEP",
           "DEEPEP_SM_FIT_PEERS", "ONESIDED_NVLINK_S",
           "deepep_sm_time_s", "onesided_fixed_s", "ll_nvlink_fixed_s"]

#: Per-peer cost of point-to-point kernels, seconds per peer a sender serves (issue 8 item 2),
#: by kernel family. ``moe``: least squares (through the origin) of measured minus modelled kernel
#: time against the peer count on the fit-split HybridEP NVL72 rank sweeps (EP 8-36, dispatch and
#: combine; reference hybridep-gb200-nvlink, published hybridep-gb200-nvlink-bf16-by-ep, all FP8 dispatch): 1.91 us
#: (round 3; 2.62 us in round 2, when the two reference rows were misread as BF16 dispatch).
#: ``moe_ll`` (low-latency kernels: one warp group per expert, all peers served at once): 0, and
#: the fit-split DeepEP LL rank sweep (EP 8-256, 128 tokens) confirms it (a per-peer cost would put
#: EP256 at a third of the measured 39 GB/s). ``nccl``: 0, no fit-split NCCL all-to-all rank sweep
#: exists (NCCL's per-peer step is inside the one-step p2p latency, an assumption in docs/collectives.md).
#: ``uccl_ll`` (UCCL-EP low-latency kernels, RDMA posted by CPU proxy threads over EFA): least squares
#: of (measured - modelled) kernel time against EP - 1 on the fit-split p6-b200 low-latency dispatch and
#: combine rows (9.07 us). ``uccl`` (normal kernels): 0 since round 3; the 13.1 us per peer fitted on
#: the p5en normal dispatch rows (round 2) is replaced by the pipeline rate :data:`RDMA_PIPELINE_BPS`,
#: which the same rows choose (mean |error| 17 % per-peer form, 3 % pipeline form).
#: ``nvlink_onesided`` (TensorRT-LLM's NVLinkOneSided, round 11): 0, its one-domain fixed time
#: (:data:`ONESIDED_NVLINK_S`) grows with the EP size by itself.
PER_PEER_S = {"nccl": 0.0, "moe": 1.91e-6, "moe_ll": 0.0, "uccl": 0.0, "uccl_ll": 9.07e-6, "nvlink_onesided": 0.0}

#: Fixed time of the GPU-initiated low-latency kernels (DeepEP LL, NCCL EP LL, pplx-kernels), seconds per
#: call, on top of the one-step point-to-point latency (round 3). A receiver finishes only after the last
#: (token, expert) message *and* the per-expert count flag written behind it (with a fence) have arrived,
#: then copies the tokens out of its receive buffer: one more one-way latency and a local pass. Least
#: squares (the mean) of measured - modelled kernel time over the 12 fit-split DeepEP LL rows (EP 8-256,
#: dispatch and combine; ``python benchmarks/fit_collective_constants.py ll-fixed``): 8.3 us; mean |error|
#: of those rows 5.6 % -> 3.4 %, max 21.7 % -> 7.6 %. ``uccl_ll`` has none (its per-peer fit absorbs its
#: fixed costs; adding this term moved its fit rows from 10.0 % to 10.2 %). Round 8: the two one-board (EP8)
#: rows take :data:`LL_NVLINK_S` instead, so the mean is over the 10 multi-node rows: 8.3 -> 6.6 us.
#: Round 11: ``nvlink_onesided`` across NVLink domains (no data) keeps the LL family's value.
LL_FIXED_S = {"moe_ll": 6.6e-6, "nvlink_onesided": 6.6e-6}

#: GPU-initiated LL kernels inside one NVLink domain (round 8; form changed in round 12):
#: ``(t0_s, per_expert_s, per_message_byte_s, rate_Bps)`` by (kernel family, phase, GPU architecture ``GPU.sm``).
#: On one board every (token, expert) message is a warp copy through the peer's P2P pointer (DeepEP
#: ``allow_nvlink_for_low_latency_mode``; pplx-kernels / NVSHMEM ``putmem_signal_nbi_warp`` over P2P), its own
#: rank's copies included, so a call takes ``t0 + a E + b P + X / rate`` (:func:`ll_nvlink_fixed_s`) with ``E``
#: the experts, ``P`` the bytes of one message and ``X`` the busiest rank's copies x ``P``, where the one-step p2p
#: latency and :data:`LL_FIXED_S` (NCCL's protocol and an RDMA count flag) do not apply; the link model still
#: bounds it from below. Why ``E`` and ``P`` (DeepEP csrc/kernels/internode_ll.cu @ d28bd67; round 14: the x86 fit rows
#: most likely ran sglang's pin 9af0e0d, whose FP8 dispatch is the same code): every rank runs one warp group per
#: expert, ``ceil(E / SMs)`` groups per SM, each storing the expert's count with a system-scope release
#: (``st_release_sys_global``) and, on receipt, polling one count per (expert, source) pair (``ld_acquire_sys_global``)
#: before its copy-out; so the call's fixed part grows with ``E`` whatever the EP size; and at a few tokens a call is
#: the serial chain of one message (the FP8 cast, the warp copy out, ``atomic_add_release_global``, the receiver's warp
#: copy in), which grows with ``P``.
#: Weighted least squares (relative error) on the fit-split DeepEP LL token sweeps of one 8 x H100 board (group
#: aiconfigurator-deepep-ll-h100-1node: 1-1024 tokens, eight top-8 shapes, hidden 2048-7168 x 128-384 experts;
#: ``python benchmarks/fit_collective_constants.py ll-nvlink``): dispatch 8.21 us + 12.60 ns per expert +
#: 176.5 ps per message byte + X / 294 GB/s (88 values, mean |error| 2.6 %, max 9.8 %; the round-8 form
#: ``t0 + X / rate``, 10.96 us + X / 288 GB/s, on the same 88 values: 5.9 %, max 23.0 %), combine 9.84 us +
#: 3.85 ns + 130.5 ps + X / 253 GB/s (3.9 %, max 16.4 %; round-8 form 5.2 %, max 16.0 %). Round 8 had two shapes
#: that change the hidden size and the expert count together, so it could not tell them apart; a per-copy term
#: fitted alongside the round-8 form comes out at -0.3 / -1.8 ns (no per-(token, expert) cost). Hopper (90)
#: only: no other architecture has a fit-split sweep, so other GPUs keep the link model. The fit is DeepEP's
#: copy (8-way unrolled, one system release per expert count); NVSHMEM's P2P ``putmem_signal`` that
#: pplx-kernels issues fences (``__threadfence_system``) and signals (``atomicAdd_system``) after every
#: message, so the "no per-message cost" is not known for pplx, whose rows are all held-out and priced by this
#: form for want of a pplx source (round 9, docs/collectives.md). Round 14: NVSHMEM's P2P copy
#: (``nvshmemi_memcpy_threadgroup``, NVIDIA/nvshmem v3.4.5-0) loops over ``__restrict__`` pointers, so how many
#: loads a warp keeps in flight is the compiler's, not the source's; and pplx's timed internode kernels
#: (2bd6e30) send in per-CTA serial chains (the combine: ``ceil(T k / SMs)`` one-warp fenced messages per CTA),
#: which this form, without an SM count, does not have. No fit row or citable measurement sizes such a chain.
LL_NVLINK_S = {("moe_ll", "moe_dispatch", 90): (8.21e-6, 12.60e-9, 176.5e-12, 294e9),
               ("moe_ll", "moe_combine", 90): (9.84e-6, 3.85e-9, 130.5e-12, 253e9)}

#: Extra fixed time of a pull combine (TensorRT-LLM NVLinkOneSided, round 8), seconds per call, on top of
#: the family's fixed time, which the dispatch alone pays. moeAlltoAllKernels.cu @ 01f0021: the combine's
#: span holds two per-call costs the dispatch has not: (i) ``moeA2ACombineKernel`` starts with a barrier
#: in every CTA (block 0 stores the epoch to every peer's flag slot, the first warp of each CTA polls all
#: ep_size slots, ``fence.acquire.sys``, ``__syncthreads``) before its first remote load, so no byte moves
#: until every peer has entered the combine, where the dispatch issues its stores at entry and exchanges
#: flags once, in its last CTA; (ii) when the MoE output is not already in the workspace,
#: ``moeA2APrepareCombineKernel`` runs one warp per receive slot, ``ep_size x max_tokens_per_rank`` of them
#: (most exit at once), and copies the received tokens in (``prepare_payload``; the dispatch's prepare
#: kernel is one CTA). Sized together: least squares (the mean) of (measured - modelled combine) -
#: (measured - modelled dispatch) at equal tokens over the fit-split rows of group flashinfer3697-gb200-ep32
#: (TensorRT-LLM 1.3.0rc20 on GB200 NVL72, EP32, 1-16 tokens per rank; ``python
#: benchmarks/fit_collective_constants.py pull-combine``): 3.9 us (3.1-4.5 us over the 5 token counts). The
#: setup's own offset (its dispatch is 3-4.5 us above the model) cancels in the difference. Part (ii)
#: depends on the caller (staging, ``max_tokens_per_rank``), which no row records.
PULL_COMBINE_FIXED_S = 3.9e-6

#: Round 11: validate's NVLinkOneSided rows inside one NVLink domain take :data:`ONESIDED_NVLINK_S` instead; this
#: term stays for a pull combine of another family or across domains (no data), and its round-8 fit is re-run by
#: ``... pull-combine`` with that table emptied.

#: TensorRT-LLM NVLinkOneSided inside one NVLink domain (round 11, kernel family ``nvlink_onesided``):
#: ``(t0_s, per_doubling_s)`` by phase; a call's flows start after ``t0 + per_doubling x log2(ep)``, in place of the
#: one-step point-to-point latency, :data:`LL_FIXED_S` and (combine) :data:`PULL_COMBINE_FIXED_S`. Weighted least
#: squares (relative error) of ``measured = T + t0 + b log2(ep)`` (``T``: the model's time with the fixed time at 0)
#: on every fit-split NVLinkOneSided row: group aiconfigurator-trtllm-alltoall-gb200-1rack (ai-dynamo/aiconfigurator
#: aic-core/src/aiconfigurator_core/systems/data/gb200/comm/trtllm/1.3.0rc10/trtllm_alltoall_perf.parquet @ 095f58a5,
#: TensorRT-LLM 1.2.0rc6, EP 2-32 x 1-1024 tokens, NVFP4 dispatch / BF16 combine, 110 values) and group
#: flashinfer3697-gb200-ep32 (17 values); ``python benchmarks/fit_collective_constants.py onesided-nvlink``:
#: dispatch 11.92 us + 1.92 us per doubling (67 values, mean |error| 5.3 %, max 13.2 %), combine 11.52 us + 3.60 us
#: (60 values, 8.1 %, max 21.0 %). Measured at 1 token the fixed time grows with the EP size (dispatch 12.9 / 14.9 /
#: 18.3 / 19.5 / 21.0 us at EP 2 / 4 / 8 / 16 / 32), the gap combine - dispatch too (3.2 -> 11.5 us): every call
#: exchanges flags with all peers (the dispatch's last CTA; the combine's head barrier in every CTA before any
#: remote load, moeAlltoAllKernels.cu @ 01f0021), and waits for the last of them. The form is chosen on the fit rows
#: (a constant: 13.6 / 19.3 %; ``t0 + c (ep - 1)``: 5.5 / 8.3 %, max 15.8 / 23.1 %); log2(ep) is not derived from
#: the kernel (no serial per-peer loop is there: a warp's lanes serve up to 32 peers at once).
ONESIDED_NVLINK_S = {"moe_dispatch": (11.92e-6, 1.92e-6), "moe_combine": (11.52e-6, 3.60e-6)}


#: SM budget of DeepEP's normal (high-throughput) kernels (round 3; form changed in round 10). The kernels copy
#: every token with their own SMs (a channel per SM pair, ``deep_ep.Config(num_sms, ...)``), so with ``n`` SMs
#: a rank moves its bytes no faster than ``n x r``; on top, each call pays a small fixed ``t0`` (the host API,
#: launch, channel flags) and a part that grows with the bytes whatever the SM count, ``X / R`` (a rate cap
#: ``R`` of the path outside the SM copies). Kernel time = ``max(t_link, t0 + X (1 / (n r) + 1 / R))``,
#: ``X`` the rank's bytes as DeepEP's test counts them (received tokens incl. its own x bytes per token).
#: Round 10: least squares of the relative error (the ``max`` form with the flow model's link time), per
#: phase, on :data:`DEEPEP_SM_SWEEP` (8 values, bandwidth error) together with the 45 fit-split values
#: of the groups aiconfigurator-deepep-normal-{b200,b300,gb300}-1node (SMs 8 / 16 / 24 x tokens 1 - 32768,
#: latency error; ``python benchmarks/fit_collective_constants.py deepep-sms-tokens``): dispatch 35.0 us,
#: 18.60 GB/s per SM, R 2425 GB/s (53 values mean |error| 6.0 %, max 12.4 %; the round-3 constants 66.8 %,
#: max 220 %); combine 51.5 us, 23.55 GB/s per SM, R 1898 GB/s (7.0 %, max 16.5 %; before 147 %, max 510 %).
#: The round-3 form ``t0 + X / (n r)`` (101 / 271 us, 18.6 / 27.1 GB/s, fitted on the 4096-token sweep only)
#: put the whole per-call part at one token count. Intranode only (the internode kernels split their SMs
#: over RDMA and NVLink roles: not fitted). Keyed by kernel implementation; HybridEP (TMA copies, 16-32
#: SMs) has no SM-bound data and no entry.
DEEPEP_SM_RATE_BPS = {"moe_dispatch": 18.60e9, "moe_combine": 23.55e9}
DEEPEP_SM_FIXED_S = {"moe_dispatch": 35.0e-6, "moe_combine": 51.5e-6}
DEEPEP_SM_CAP_BPS = {"moe_dispatch": 2425e9, "moe_combine": 1898e9}
#: DeepEP's intranode test runs its normal kernels with 24 SMs (tests/legacy/test_intranode.py @ dd758ca:
#: ``for i in (24, ): test_main(args, i, ...)``; uccl ep/bench/test_intranode.py @ da914a2:
#: ``num_sms = 24 if torch.version.cuda else 64``); ``deep_ep.Buffer.num_sms`` defaults to 20.
DEEPEP_TEST_SMS = 24

#: Internode pipeline of the normal kernels (round 3), bytes/s per rank, by kernel family. DeepEP's
#: internode dispatch (and UCCL-EP's copy of it) sends every (token, destination node) pair through the
#: same RDMA-sender -> forwarder pipeline, the local node's pairs included (they are written to the local
#: receive buffer: uccl ep/src/internode.cu @ da914a2 l.714 ``dst_rdma_rank == rdma_rank ?
#: recv_buffer(...) : send_buffer(...)``; "Lighter fence for local RDMA rank"), so a pipeline slower
#: than the NIC bounds the time by the rank's counted pairs (what the RDMA metric counts) over its rate.
#: ``uccl`` (the RDMA writes are posted by CPU proxy threads): least squares of the relative error of
#: ``max(t_link, pairs x bytes / R)`` on the fit-split UCCL-EP p5en normal dispatch rows (EP 16-32;
#: published 50 / 53 / 54 GB/s, flat in EP while the NIC share of the counted pairs goes 1/2 -> 3/4):
#: ``python benchmarks/fit_collective_constants.py uccl-pipeline``. It replaces the per-peer form
#: (13.1 us per peer) fitted on the same rows. No entry for DeepEP / HybridEP (GPU-initiated): their
#: fit rows show no such bound (DeepEP H800 EP32 reaches 58 GB/s).
RDMA_PIPELINE_BPS = {"uccl": 52.4e9}
#: DeepEP V1 intranode normal kernels on 8 x B200 by SM count, Torch API (FP8 dispatch GB/s, combine GB/s;
#: 4096 tokens, hidden 7168, top-8 of 64 experts, random uniform router): deepseek-ai/DeepEP branch
#: hybrid-ep docs/README_Hybrid-EP.md @ 41cad94, "B200 Platform / Performance Comparison" (fit split,
#: group hybridep-readme-b200-comparison; its 48-SM row is a published point).
DEEPEP_SM_SWEEP = ((16, 246, 302), (24, 349, 420), (28, 397, 477), (32, 443, 524), (36, 482, 549),
                   (40, 519, 570), (44, 544, 577), (48, 554, 586))


#: Peers of the SM fit (round 4): :data:`DEEPEP_SM_SWEEP` ran 8 ranks, so its ``t0`` holds the per-peer
#: work of 7 peers. A kernel with more peers pays the per-peer cost of its family (``PER_PEER_S``) for each
#: peer beyond these on the SM path too (DeepEP's intranode kernels split every channel's warps by peer:
#: csrc/kernels/intranode.cu ``num_threads_per_rank = kNumThreads / kNumRanks``).
DEEPEP_SM_FIT_PEERS = 7


def deepep_sm_time_s(collective: str, sms: int, rank_bytes: float, peers: int = DEEPEP_SM_FIT_PEERS,
                     per_peer_s: float = 0.0) -> float:
    """Time of the SM copy path of a DeepEP normal kernel:
    ``t0 + per_peer_s x max(0, peers - 7) + X / (sms x r) + X / R``.

    Examples
    --------
    >>> round(deepep_sm_time_s("moe_dispatch", 24, 0.0) * 1e6)
    35
    >>> round(deepep_sm_time_s("moe_dispatch", 24, 0.0, peers=15, per_peer_s=2e-6) * 1e6)
    51
    """
    if isinstance(sms, bool) or not isinstance(sms, int) or sms < 1:
        raise SpecError(f"moe sms: {sms!r} must be an integer >= 1")
    extra = max(0, int(peers) - DEEPEP_SM_FIT_PEERS) * float(per_peer_s)
    x = float(rank_bytes)
    return DEEPEP_SM_FIXED_S[collective] + extra + x / (sms * DEEPEP_SM_RATE_BPS[collective]) \
        + x / DEEPEP_SM_CAP_BPS[collective]


def onesided_fixed_s(collective: str, ep: int) -> float:
    """Fixed time of a TensorRT-LLM NVLinkOneSided dispatch or combine of ``ep`` ranks in one NVLink domain:
    ``t0 + per_doubling x log2(ep)`` (:data:`ONESIDED_NVLINK_S`).

    Examples
    --------
    >>> t0, b = ONESIDED_NVLINK_S["moe_dispatch"]
    >>> onesided_fixed_s("moe_dispatch", 8) == t0 + 3 * b
    True
    """
    if isinstance(ep, bool) or not isinstance(ep, (int, np.integer)) or ep < 2:
        raise SpecError(f"moe ranks: {ep!r} must be an integer >= 2 (an NVLinkOneSided call of one rank moves nothing)")
    t0, per_doubling = ONESIDED_NVLINK_S[collective]
    return t0 + per_doubling * float(np.log2(int(ep)))


def ll_nvlink_fixed_s(entry: tuple, experts: int, message_bytes: float) -> float:
    """Fixed part of a GPU-initiated LL dispatch or combine in one NVLink domain (an entry of
    :data:`LL_NVLINK_S`): ``t0 + per_expert x experts + per_message_byte x message_bytes``; the call then moves
    its busiest rank's copies at the entry's rate.

    Examples
    --------
    >>> e = LL_NVLINK_S[("moe_ll", "moe_dispatch", 90)]
    >>> round(ll_nvlink_fixed_s(e, 256, 7408.0) * 1e6, 2)
    12.74
    """
    if isinstance(experts, bool) or not isinstance(experts, (int, np.integer)) or experts < 1:
        raise SpecError(f"moe experts: {experts!r} must be an integer >= 1")
    t0, per_expert, per_byte, _rate = entry
    return t0 + per_expert * int(experts) + per_byte * float(message_bytes)
