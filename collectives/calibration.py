"""Model constants of the collective layer, each with its source.

One calibration serves every case; nothing here is tuned to a test.

Wire efficiency
---------------
A transfer of ``S`` payload bytes puts ``S / eta`` bytes on a link, where
``eta`` depends on the transport (NVLink, host link, network) and on the kind of
kernel moving the data:

* **collective kernels on NVLink** (ring, tree, chains): NCCL's own per-link
  NVLink bandwidth over the raw per-link rate, ``src/graph/topo.h`` (MODEL):
  SM80 20.0/25, SM90 20.6/25 = 0.824, SM100 40.1/50 = 0.802. NCCL's developers
  describe the gap to the 25 GB/s signalling rate as protocol overhead
  (nccl-tests #212, [S24]); measured ring all-reduce on 8 x H100 reaches 365-370
  GB/s busbw (nccl #1455), i.e. this very constant.
* **NVLS on NVLink**: the collective-kernel efficiency times NCCL's
  ``nvlsEfficiency`` (tuning.cc l.139, MODEL): 0.85 on Hopper, 0.74 on Blackwell.
* **point-to-point kernels on NVLink** (all-to-all, send/recv, MoE dispatch and
  combine): a kernel factor ``kappa`` times the GPU's measured point-to-point NVLink
  bandwidth over its raw rate (catalog ``nvlink_measured_Bps``: 380/450 H100,
  396/450 H200, 160/200 H800, 770/900 GB200; GPUs without a measurement take the
  mean of those ratios). ``kappa`` is fitted to the measured all-to-all / DeepEP
  bandwidths of :data:`P2P_NVLINK_MEASUREMENTS` (MEAS), none of which is a
  validation point: the mean of achieved wire bandwidth over measured link bandwidth.
* **network**: measured NCCL goodput of a ConnectX-7 400G port over its line
  rate, 46-48 GB/s of 50 (nccl-tests #290, [S24]) -> 47/50 = 0.94 (MEAS). No
  ConnectX-8 measurement is in the notes, so the same ratio is assumed for it.
* **host links** (PCIe/C2C between GPU and NIC): 1.0; they are provisioned above
  the NIC rate and never limit in our topologies.

Protocols (NCCL's model, tuning.cc l.288-383): LL moves 8-byte words with a
4-byte flag (half the bandwidth, ``0.5``), LL128 keeps 120 of every 128 bytes
(NCCL caps ring LL128 at ``0.92`` of Simple), Simple ``1.0``.

Latency
-------
The software latency of an (algorithm, protocol) is NCCL's tuning-model latency
(:mod:`collectives.nccl_model`, base + per-step hardware latencies). Point-to-point
operations are not in NCCL's model; their latency is taken as one Simple-protocol
step of NCCL's ring model: ``baseLat[Ring][Simple] + hwLat[hw][Ring][Simple]``
(8.4 + 3.4 us on NVLink, 8.4 + 14 us across the network), an ASSUMPTION stated in
``docs/collectives.md``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from collectives import nccl_model as nm
from collectives.ep_constants import (DEEPEP_SM_CAP_BPS, DEEPEP_SM_FIT_PEERS, DEEPEP_SM_FIXED_S,  # noqa: F401
                                      DEEPEP_SM_RATE_BPS, DEEPEP_SM_SWEEP, DEEPEP_TEST_SMS, LL_FIXED_S, LL_NVLINK_S, PER_PEER_S,
                                      PULL_COMBINE_FIXED_S, RDMA_PIPELINE_BPS, deepep_sm_time_s, ONESIDED_NVLINK_S,
                                      onesided_fixed_s, ll_nvlink_fixed_s)
from collectives.net_plugins import (NET_ALGORITHMS, NET_EAGER_MAX_BYTES, NET_LATENCY_US, NET_PROTOCOLS,  # noqa: F401
                                     NET_STEP_LATENCY_US, NET_TUNER_PROTOCOLS, NIC_VIA_C2C, net_algorithms,
                                     net_eager_max_bytes, net_key, net_latency_us, net_protocols, net_rendezvous_s,
                                     net_step_latency_us, net_tuner_protocols)
from topologies import catalog
from topologies.errors import SpecError

__all__ = ["NVLS_PIPELINE_WINDOW_BYTES", "nvls_fill_s", "NVLS_LOOP_S", "nvls_chunk_efficiency", "NVLS_FILL_LOOPS",
           "nvls_loop_fill_s", "NVLS_LOOP_S_BY_ARCH", "nvls_loop_s",
           "HOST_CALL_OVERHEAD_S", "RING_PIPELINE_WINDOW_BYTES", "ring_fill_s", "ring_window_bytes",
           "NET_LATENCY_US", "net_latency_us", "NVLS_DOMAIN_SLOWDOWN", "NVLS_SYNC_S_PER_RANK2",
           "NVLS_SYNC_S_PER_RANK2_PER_LOOP", "nvls_domain_terms",
           "RING_NVLINK_KERNEL_EFFICIENCY", "ring_nvlink_kernel_efficiency", "HOST_LINK_MEASURED",
           "host_link_efficiency", "NIC_PEER_DROP", "PER_PEER_S", "LL_FIXED_S", "LL_NVLINK_S", "nic_p2p_factor",
           "DEEPEP_SM_RATE_BPS", "DEEPEP_SM_FIXED_S", "DEEPEP_SM_CAP_BPS", "DEEPEP_TEST_SMS", "RDMA_PIPELINE_BPS",
           "DEEPEP_SM_SWEEP",
           "DEEPEP_SM_FIT_PEERS", "deepep_sm_time_s", "PULL_COMBINE_FIXED_S", "ONESIDED_NVLINK_S", "onesided_fixed_s",
           "ll_nvlink_fixed_s",
           "Measurement", "P2P_NVLINK_MEASUREMENTS", "measured_link_ratio", "p2p_kernel_factor",
           "p2p_nvlink_efficiency", "Calibration", "calibration", "PROTOCOL_EFFICIENCY"]


@dataclass(frozen=True)
class Measurement:
    """A measured per-GPU bandwidth used to fit a constant."""

    system: str
    gpu: str
    what: str
    achieved_wire_Bps: float  # per-GPU bytes/s per direction actually crossing NVLink
    source: str


#: Measured NVLink point-to-point (all-to-all) throughput, converted to per-GPU wire
#: bandwidth per direction. nccl-tests alltoall: busbw = algbw (n-1)/n is exactly the
#: bytes each GPU sends to its peers per second. DeepEP / HybridEP count every
#: received token including the rank's own share (tests/test_intranode.py,
#: tests/test_hybrid_ep.py): with uniform routing over 8 ranks, wire = logical x 7/8.
#: None of these is a point of ``reference_points.toml``; those validate the fit.
P2P_NVLINK_MEASUREMENTS: tuple[Measurement, ...] = (
    Measurement("4 x H100, nccl-tests alltoall, 500 MiB, NCCL 2.30.4", "H100", "busbw 334.90 GB/s",
                334.90e9, "NVIDIA/nccl#2169"),
    Measurement("8 x B200, DeepEP V2 intranode EP8, 64 SMs, dispatch", "B200", "726 GB/s logical",
                726e9 * 7 / 8, "deepseek-ai/DeepEP README.md @ 0297fc8"),
    Measurement("8 x B200, DeepEP V2 intranode EP8, 64 SMs, combine", "B200", "740 GB/s logical",
                740e9 * 7 / 8, "deepseek-ai/DeepEP README.md @ 0297fc8"),
    Measurement("8 x B200, HybridEP EP8 BF16 dispatch, kernel only, 16 SMs", "B200", "734.95 GB/s logical",
                734.95e9 * 7 / 8, "deepseek-ai/DeepEP docs/README_Hybrid-EP.md @ 41cad94"),
    Measurement("GB200 NVL, HybridEP EP8 BF16 dispatch, kernel only, 32 SMs", "GB200", "764.03 GB/s logical",
                764.03e9 * 7 / 8, "deepseek-ai/DeepEP docs/README_Hybrid-EP.md @ 41cad94"),
)


def measured_link_ratio(gpu_name: str) -> float:
    """Measured point-to-point NVLink bandwidth over the raw rate (catalog), or the mean over GPUs measured."""
    g = catalog.gpu(gpu_name)
    if g.nvlink_measured_Bps:
        return g.nvlink_measured_Bps / g.nvlink_Bps
    known = [x.nvlink_measured_Bps / x.nvlink_Bps for x in catalog.GPUS.values() if x.nvlink_measured_Bps]
    return sum(known) / len(known)


def p2p_kernel_factor() -> float:
    """``kappa``: mean of achieved wire bandwidth / measured NVLink bandwidth over the measurements."""
    ratios = [m.achieved_wire_Bps / (catalog.gpu(m.gpu).nvlink_Bps * measured_link_ratio(m.gpu))
              for m in P2P_NVLINK_MEASUREMENTS]
    return sum(ratios) / len(ratios)


def p2p_nvlink_efficiency(gpu_name: str) -> float:
    """NVLink efficiency of point-to-point kernels on ``gpu_name``: ``kappa x measured/raw``."""
    return p2p_kernel_factor() * measured_link_ratio(gpu_name)


#: Measured host-device copy over the raw PCIe Gen5 x16 rate (nvbandwidth copy engine, 8 x H200):
#: 55.43 GB/s H2D of 63.0 (stas00/ml-engineering network/README.md @ 744d01e; published point
#: ``mle-h200-pcie5-h2d-d2h``, a consistency check of this constant).
HOST_LINK_MEASURED = (55.43e9, 63.0e9)


def host_link_efficiency() -> float:
    """Achieved over raw host-link (PCIe) bandwidth: 0.88 (:data:`HOST_LINK_MEASURED`)."""
    return HOST_LINK_MEASURED[0] / HOST_LINK_MEASURED[1]


#: Many-peer NIC goodput (issue 8 item 1): with ``k`` concurrent peers on a NIC port, point-to-point
#: goodput is ``1 - NIC_PEER_DROP x (1 - 1/k)`` of the single-stream goodput: one peer keeps the
#: measured goodput, many saturate at ``1 - NIC_PEER_DROP``. By kernel family. ``nccl`` (proxy-driven
#: send/recv over reliable-connected InfiniBand / RoCE, PXN): ``k`` is the number of remote NIC ports the
#: port exchanges with (fan-out / incast, round 5; rounds 1-4 counted queue pairs, 8 x 3 = 24 on 4 HGX
#: nodes, and d = 0.236). Round 5: the fit-split OCI B300 2-node all-to-all (one port pair per rail, k = 1)
#: reaches 96.5 GB/s per GPU of 100 (0.965), above what any queue-pair drop at k = 8 allows (0.79 x 0.94),
#: so the drop follows the remote ports, not the connections. Fitted on the fit-split 4 x DGX A100
#: all-to-all (GTC25 S72583: 24 GB/s busbw over 8 x 200G HDR, i.e. 18.6 GB/s per NIC at k = 3 against the
#: 24 GB/s single-stream goodput), which is also the NCCL maintainers' rule that an all-to-all gets "the
#: performance of a single NIC" (nccl-tests #267): 1 - 18.6/24 = 0.225 at 1 - 1/3 -> 0.338. NCCL over EFA
#: has its own entry (``nccl_efa``, :data:`NCCL_NET_PEER_DROP`, counted in connections). ``moe`` (GPU-initiated IBGDA kernels: DeepEP, HybridEP):
#: the best value on the fit-split DeepEP internode rows (normal and low-latency, k = 1 to 248),
#: which show no many-peer loss (docs/collectives.md, "Fits").
NIC_PEER_DROP = {"nccl": 0.338, "moe": 0.0, "moe_ll": 0.0, "uccl": 0.0, "uccl_ll": 0.0, "nvlink_onesided": 0.0}

#: Large NVLink domains (issue 8 item 3). NVLS all-reduce over ``n`` GPUs of one domain: the wire
#: efficiency is divided by ``1 + NVLS_DOMAIN_SLOWDOWN x log2(n / 8)`` beyond 8 GPUs (one factor per
#: doubling: the reduction fans in over more switch ports and chips), and every operation pays
#: ``NVLS_SYNC_S_PER_RANK2 x (n^2 - 64)`` seconds more than NCCL's NVLS latency (all-pairs flag
#: synchronisation of the n ranks; NCCL's constants are calibrated on 8-GPU boards, so both terms
#: vanish at n <= 8). Both fitted by least squares (t = L + S/B) on the fit-split 72-rank GB200
#: NVL72 sweeps (published cw-gb200-nvl72-1rack-allreduce-by-size, reference
#: gb200-nvl72-allreduce-72-by-size): L = 582 us, asymptotic busbw 864 GB/s against the
#: 8-GPU-calibrated 1,037; less the 38 us of the pipeline fill (below) that the same fit absorbs
#: (rounds 1-5: c = 0.1014 us). Round 6: single-domain NVLS takes NCCL's chunk loops (the loop cost and
#: a one-loop fill, 32 heads x 24-32 channels on a 72-GPU domain: ~48-64 MiB loops) instead of the
#: window fill, so its c was refitted on the same five fit values by grid (b kept: 0.0633 stays best):
#: mean |error| 1.4 % at c = 0.075 us (0.065: 2.3, 0.070: 1.7, 0.080: 1.5, 0.085: 1.7, 0.1014: 3.6; the
#: five values: `python benchmarks/fit_collective_constants.py nvl72-sync`):
#: ``NVLS_SYNC_S_PER_RANK2_ONE_DOMAIN`` (rounds 6-7; replaced in round 8, below). The NVLS stage of a multi-domain plan (NVLSTree, NVLS + SHARP)
#: keeps the window fill and with it the rounds 1-5 pair (W = 16 MiB, c = 0.1014 us), fitted together.
NVLS_DOMAIN_SLOWDOWN = 0.0633
NVLS_SYNC_S_PER_RANK2 = 0.1014e-6
#: Round 8, large NVLink domains: in one domain the synchronisation is paid per NVLS loop of NCCL's chunk
#: (``c x (n^2 - 64)`` each of the ``ceil(S / (nChannels x nHeads x chunk))`` loops), not once per call: the
#: kernel's warp groups wait on their peers' step flags every loop (src/device/all_reduce.h NVLS, v2.28.7-1). c by
#: grid on 20 fit values (OCI GB300 16 trays, 64 ranks: 15; the 72-rank rows: 5), b kept: 0.003 / 0.0035 /
#: 0.004 / 0.0045 / 0.005 us -> 6.72 / 6.33 / 6.31 / 6.82 / 7.93 % (`benchmarks/fit_collective_constants.py
#: nvl72-loop-sync`; docs/collectives.md, "Round 8 (2026-12-02), large NVLink domains").
NVLS_SYNC_S_PER_RANK2_PER_LOOP = 0.004e-6


#: NVLS pipeline fill across NVLink domains (NVLS stages of NVLSTree / NVLS + SHARP; one domain uses the
#: loop fill below since round 6) (issue 8 item 5, mid-size messages): every chunk is reduced
#: (``multimem.ld_reduce``) and then multicast (``multimem.st``); the two stages overlap only once
#: the pipeline window of ``NVLS_PIPELINE_WINDOW_BYTES`` per GPU is in flight, so the first window
#: is not overlapped: ``t = lat + (S + min(S, W)) / B``, the ``min(S, W) / B`` term added as latency
#: at the idle-fabric port rate (so a plan stays linear in S above W). Fitted by grid search (mean
#: |busbw error|) on the fit-split 8 x H200 NVLS sweep (mle-h200x8-allreduce-auto-by-size,
#: 2 MiB - 16 GiB); docs/collectives.md, "Fits".
NVLS_PIPELINE_WINDOW_BYTES = 16 << 20


def nvls_fill_s(size_bytes: float, port_bytes: float, port_Bps: float, efficiency: float) -> float:
    """Latency of the NVLS pipeline fill: the first ``min(S, W)`` bytes' share of ``port_bytes``
    (the bytes the busiest port moves for size ``S``) at ``port_Bps x efficiency``."""
    s = float(size_bytes)
    if s <= 0 or port_Bps <= 0 or efficiency <= 0:
        return 0.0
    return min(s, NVLS_PIPELINE_WINDOW_BYTES) / s * port_bytes / (port_Bps * efficiency)


#: NVLS loop cost (issue 8 item 5, round 6): NCCL's NVLS kernel moves the buffer in loops of
#: ``nChannels x nHeads x chunk`` bytes, the chunk chosen from the size by enqueue.cc's rule
#: (:func:`collectives.nccl_model.nvls_chunk_bytes`: 16 KiB below ``2 ops x 32 KiB``, 32 KiB below
#: ``8 ops x 64 KiB``, 64 KiB below ``64 ops x`` NCCL_NVLS_CHUNKSIZE, then NCCL_NVLS_CHUNKSIZE). Every
#: loop pays ``NVLS_LOOP_S`` that the data transfer does not hide (the scatter -> multimem reduce ->
#: gather hand-offs of one step), so a loop of ``d`` seconds of data takes ``d + x``. NCCL's
#: ``nvlsEfficiency`` is taken as the rate NCCL is calibrated for at its default chunk (128 KiB, the
#: chunk of every size >= 64 ops x 128 KiB); a chunk ``c`` then runs at
#: ``(1 + x/d(128 KiB)) / (1 + x/d(c))`` of it (:func:`nvls_chunk_efficiency`). Fitted on the fit rows:
#: docs/collectives.md, "Round 6, NVLink boards". Round 7 (NVLS one-loop regime): the kernel runs
#: ``ceil(S / (ops x chunk))`` loops (a partial last loop is one more step of each warp group), and each
#: pays x; refitted with the fill and the host overhead on the 92 fit NVLink values: unchanged. Round 8: this
#: is Hopper's (and the default) loop cost; Blackwell's is :data:`NVLS_LOOP_S_BY_ARCH`.
NVLS_LOOP_S = 6.0e-6
#: Round 8 (NVLS small chunks): the loop cost by architecture (``nccl_model.arch_index``: 3 Blackwell), where
#: it differs from :data:`NVLS_LOOP_S`. The same kernel and loop (all_reduce.h ``oneNode`` is one code path on
#: sm90 and sm100), so the form is kept and only x is fitted apart: two independent Blackwell sweeps with
#: NVLS at 16-64 KiB chunks (ml-engineering p6-b200, torch; OCI GB300 2 trays, nccl-tests) each put it at
#: 10 us (grid 6-12 us), Hopper's three sweeps keep 6 us. docs/collectives.md, "Round 8 (2026-12-02), NVLS
#: small chunks".
NVLS_LOOP_S_BY_ARCH: dict[int, float] = {3: 10.0e-6}


def nvls_loop_s(sm: int) -> float:
    """The NVLS loop cost x of a GPU of compute capability ``sm`` (:data:`NVLS_LOOP_S_BY_ARCH`).

    >>> nvls_loop_s(90) == NVLS_LOOP_S, nvls_loop_s(100) > nvls_loop_s(90)
    (True, True)
    """
    return NVLS_LOOP_S_BY_ARCH.get(nm.arch_index(sm), NVLS_LOOP_S)

#: Pipeline fill of NCCL's single-node NVLS kernel, in loop times. The kernel runs three warp groups over
#: the same loops (src/device/all_reduce.h, ``work->oneNode``: scatter, reduce + multicast, gather), so the
#: time is the slowest stage's ``nLoops`` loop times plus one loop of each other stage: a fill between 0
#: (the other two much faster) and 2 loop times (all three equal), the fill of one NVLink domain
#: (:func:`nvls_loop_fill_s`; it replaces the fitted window :data:`NVLS_PIPELINE_WINDOW_BYTES` there).
#: Fitted with :data:`NVLS_LOOP_S` and :data:`HOST_CALL_OVERHEAD_S` on the grid {0, 1, 1.5, 2} over the 92
#: fit-split NVLink-board values (docs/collectives.md, "Round 6, NVLink boards").
NVLS_FILL_LOOPS = 1.0


def nvls_loop_fill_s(size_bytes: float, chunk_bytes: float, loop_ops: int, port_per_byte: float,
                     rate_Bps: float, loop_s: float | None = None) -> float:
    """Pipeline fill of single-domain NVLS: ``NVLS_FILL_LOOPS x (d + NVLS_LOOP_S)``, ``d`` the data
    time of one loop (``loop_ops x chunk`` bytes, or the whole buffer when it is smaller) at ``rate_Bps``;
    ``loop_s`` the loop cost (default :data:`NVLS_LOOP_S`; :func:`nvls_loop_s` by architecture).

    >>> f = nvls_loop_fill_s(1 << 30, 128 << 10, 128, 1.125, 315e9)  # one 16 MiB loop on 8 x H100
    >>> abs(f - NVLS_FILL_LOOPS * ((16 << 20) * 1.125 / 315e9 + NVLS_LOOP_S)) < 1e-12
    True
    """
    if rate_Bps <= 0:
        return 0.0
    loop = min(float(size_bytes), loop_ops * float(chunk_bytes))
    return NVLS_FILL_LOOPS * (loop * port_per_byte / rate_Bps + (NVLS_LOOP_S if loop_s is None else loop_s))


def nvls_chunk_efficiency(chunk_bytes: float, loop_ops: int, port_per_byte: float, rate_Bps: float,
                          default_chunk_bytes: float = 128 << 10, size_bytes: float | None = None,
                          loop_s: float | None = None) -> float:
    """Kernel efficiency of NVLS at chunk ``chunk_bytes`` relative to the default chunk
    (:data:`NVLS_LOOP_S`). ``loop_ops`` = channels x heads, ``port_per_byte`` = port bytes per user byte
    (``1 + 1/n`` for all-reduce), ``rate_Bps`` the port rate the flows run at. With ``size_bytes`` the
    loop cost is paid once per loop the kernel runs, ``ceil(S / (loop_ops x chunk))`` (a partial last loop
    is a whole step of each warp group: src/device/all_reduce.h, NVLS ``oneNode``, ``lastChunkSize``);
    without it, per ``S / (loop_ops x chunk)`` (the same for a whole number of loops). ``loop_s``: the loop
    cost (default :data:`NVLS_LOOP_S`; :func:`nvls_loop_s` by architecture).

    Examples
    --------
    >>> round(nvls_chunk_efficiency(128 << 10, 128, 1.125, 315e9), 6)
    1.0
    >>> nvls_chunk_efficiency(64 << 10, 128, 1.125, 315e9) < 1 < nvls_chunk_efficiency(512 << 10, 128, 1.125, 315e9)
    True
    >>> whole = nvls_chunk_efficiency(16 << 10, 128, 1.125, 315e9, size_bytes=4 << 20)  # two whole loops
    >>> abs(whole - nvls_chunk_efficiency(16 << 10, 128, 1.125, 315e9)) < 1e-12
    True
    >>> nvls_chunk_efficiency(16 << 10, 128, 1.125, 315e9, size_bytes=3 << 20) < whole  # 1.5 loops run as 2
    True
    """
    x = NVLS_LOOP_S if loop_s is None else loop_s
    if rate_Bps <= 0 or chunk_bytes <= 0 or x <= 0:
        return 1.0
    per = loop_ops * port_per_byte / rate_Bps  # seconds of data per byte of chunk
    base = 1.0 + x / (per * default_chunk_bytes)
    if size_bytes is None or size_bytes <= 0:
        return base / (1.0 + x / (per * chunk_bytes))
    loops = float(size_bytes) / (loop_ops * float(chunk_bytes))
    return base / (1.0 + math.ceil(loops - 1e-9) * x / (per * chunk_bytes * loops))


#: Per-call host overhead of a timing that records its start event before the host issues the call
#: (one call per trial on an idle device, ``settings.timing = "one call ..."``): PyTorch's
#: ``dist.all_reduce`` path (ProcessGroupNCCL, work bookkeeping, the kernel launch) runs after the
#: event, so the measured time carries it. ml-engineering's all_reduce_bench.py at the measured commits
#: (744d01e, c53741b: ``dist.barrier(); start_event.record(); dist.all_reduce(tensor); end_event.record()``);
#: the same script's later docstring puts "PyTorch's per-call host overhead of some 20-30us" on that
#: form (``--with-host-overhead``). A property of the measurement, not of the collective: added only
#: by ``fabric-emu validate`` to points that say so. Fitted on the fit rows (docs/collectives.md,
#: "Round 6, NVLink boards").
HOST_CALL_OVERHEAD_S = 20e-6


#: Ring pipeline fill (mid-size messages): NCCL's ring moves each channel's data in chunks through
#: the 2(n-1) steps of the ring; until a window of chunks is in flight on every channel the steps do not
#: overlap, so the first ``RING_PIPELINE_WINDOW_BYTES`` per GPU cost their transfer time once more:
#: ``t = lat + (S + min(S, W)) / B`` with ``B`` NCCL's ring bandwidth of the (protocol, size) (the same
#: form as the NVLS fill). Fitted by grid search (mean |busbw error|) on the fit-split flat-ring rows
#: (``benchmarks/fit_collective_constants.py ring-window``); docs/collectives.md, "Fits".
RING_PIPELINE_WINDOW_BYTES = 8 << 20


def ring_window_bytes() -> int:
    """The ring pipeline window in force (:data:`RING_PIPELINE_WINDOW_BYTES`)."""
    return RING_PIPELINE_WINDOW_BYTES


#: Protocols whose ring pays the fill of :data:`RING_PIPELINE_WINDOW_BYTES` (round 7): Simple and LL128.
#: Simple forwards a step only when the whole step has arrived (prims_simple.h waits on the step's
#: flag); LL forwards every 8-byte line as soon as its flag is seen (prims_ll.h), so its ring has no
#: step-sized fill beyond the per-hop ``hwLat`` that NCCL's latency already charges (tuning.cc:
#: ``nsteps x hwLat[NVLINK][Ring][LL]``, 0.6 us), the same source as the tree fill
#: (``trees.tree_fill_s``: 0 for LL / LL128). LL128 forwards per 128-byte line too (prims_ll128.h) but
#: keeps the ring fill: the fit rows need it (without it Azure A100 4-16 MiB +39..+55 %, DeepOps 2-node
#: +20..+37 %, GKE A3 Ultra +22..+63 %; docs/collectives.md, "Round 7 (2026-12-02), NVLink boards mid sizes"), where it
#: stands in for an LL128 shortfall that is not modelled.
RING_FILL_PROTOCOLS = ("LL128", "Simple")


#: Round 16: protocols whose ring fill is off on rings inside one NVLink domain, by NCCL architecture index. LL128
#: forwards line by line (prims_ll128.h, as LL: round 7's reason to take LL out of :data:`RING_FILL_PROTOCOLS`);
#: round 7 kept the LL128 fill because the fit Ampere and multi-node rows need it (it stands in for an LL128 shortfall
#: not modelled there). On one Hopper board the fit rows say the opposite: the four NCCL 2.23 8-GPU all-gather /
#: reduce-scatter values at 8 MiB (LL128, aiconfigurator H100 / H200) take -33..-36 % busbw with the fill, -3..-7 %
#: without; Ampere / Blackwell single-domain LL128 rows get worse without it (13 values, 0.22 -> 0.34 mean |error|
#: with Hopper's 4; docs/collectives.md, "Round 16").
RING_FILL_OFF_ONE_DOMAIN: dict[int, tuple[str, ...]] = {2: ("LL128",)}
__all__ += ["RING_FILL_OFF_ONE_DOMAIN"]


def ring_fill_s(size_bytes: float, bandwidth_Bps: float, protocol: str = "Simple") -> float:
    """Latency of the ring pipeline fill: ``min(S, W) / B`` (``B`` NCCL's ring algorithm bandwidth)
    for the protocols of :data:`RING_FILL_PROTOCOLS`, else 0.

    Examples
    --------
    >>> ring_fill_s(1 << 20, 0.0)
    0.0
    >>> ring_fill_s(1 << 20, 1e11, "LL")
    0.0
    """
    if size_bytes <= 0 or bandwidth_Bps <= 0 or protocol not in RING_FILL_PROTOCOLS:
        return 0.0
    return min(float(size_bytes), RING_PIPELINE_WINDOW_BYTES) / bandwidth_Bps


#: Ring kernel efficiency inside one NVLink domain, Simple protocol, per NCCL architecture index
#: (``nccl_model.arch_index``: 2 Hopper, 3 Blackwell): the measured ring busbw over NCCL's per-link
#: NVLink nominal (topo.h), a kernel limit of the ring on NVLink only (a NIC-bound ring is paced by the
#: NIC). Hopper: 1 (NCCL's constants reproduce 8 x H100 / H200 rings: 370/370, 363-366/370).
#: Blackwell: the fit-split single-domain Blackwell rings at >= 4 GiB all fall 3-6.5 % below the
#: nominal 722 GB/s (p6-b200 NVLS-off ranks sweep 4-8 GPUs 673.2-682.2 and reference 673.8, ml-engineering
#: network/README.md @ 744d01e; GTC25 S72583 B200 ring 700; nccl #2140 B300 ring 695): measured /
#: modelled 0.936-0.973, mean per source (ml-engineering 0.942, GTC25 0.973, nccl #2140 0.966) 0.960.
#: Round 12: with the ring's final local copy (collectives.ring_copy) in the time, the same fit gives 1.012
#: (per source 1.010 / 1.016 / 1.009, ``fit_collective_constants.py ring-kernel``): the 3-6.5 % shortfall was
#: that copy (1/(2(n-1)) of a pass on an all-reduce). Blackwell is set to 1, NCCL's nominal.
#: Round 13: Hopper refitted with the copy in the time: the fit-split single-domain Hopper ring/Simple rows
#: (8 values, 4-8 GPUs at 8-16 GiB: ml-engineering H200 ranks sweep and 8 x H200 all-gather / reduce-scatter,
#: nccl #2140 8 x H100) measure 1.032-1.082 x the model at 1 (mean over sources 1.053); grid 1.0 / 1.03 / 1.04 /
#: 1.05 / 1.06 / 1.08: mean |busbw error| 0.051 / 0.023 / 0.015 / **0.0127** / 0.0128 / 0.025
#: (``fit_collective_constants.py ring-kernel-hopper``). Hopper's sending steps run at 1.05 x NCCL's SM90
#: constant, 21.6 GB/s a link (NVLink4 signals 25 GB/s a link and direction: 0.87 of it; Blackwell's 40.1 is 0.80
#: of NVLink5's 50), so the copy and the 8-GPU nominal 370 GB/s are both in the Hopper rings.
RING_NVLINK_KERNEL_EFFICIENCY = {2: 1.05, 3: 1.0}


#: Ring LL kernel efficiency inside one NVLink domain, per NCCL architecture index (round 7): the
#: measured LL ring rate over NCCL's LL rate of the release (``min(llMaxBw, busBw/2)``), a kernel limit
#: of the time only (NCCL's choice keeps its own table). Blackwell's ``llMaxBw`` is ``2*141`` GB/s
#: (tuning.cc, Hopper's 141 doubled); fitted on the fit-split single-domain Blackwell LL values
#: (docs/collectives.md, "Round 7, NVLink boards mid sizes"). Hopper: 1 (NCCL's LL model reproduces the
#: fit 8 x H100 / H200 1 MiB rings once the ring fill is off for LL).
#: Round 11: refitted to 0.85 together with the LL ring's extra latency on NVLink (collectives.ring_ll), on
#: the fit-split single-domain ring/LL rows, 216 values (grid 0.5 / 0.6 / 0.7 / 0.8 / 0.85 / 0.9 / 1.0: mean
#: |busbw error| 0.096 / 0.086 / 0.080 / 0.076 / 0.076 / 0.076 / 0.079; ``fit_collective_constants.py
#: ring-ll-latency``): the round-7 value 0.5 stood in for that latency on the 1-4 MiB rows.
RING_LL_NVLINK_KERNEL_EFFICIENCY = {3: 0.85}
#: Round 16: Hopper 0.8, fitted after the Hopper LL ring terms, with NCCL's launched channels (collectives.ring_ll), on
#: the 74 fit-split Hopper ring/LL values (grid 0.6 / 0.7 / 0.8 / 0.9 / 1.0: mean |busbw error| 0.104 / 0.094 / 0.091 /
#: 0.094 / 0.106; ``fit_collective_constants.py ring-ll-hopper``; docs/collectives.md, "Round 16"). It multiplies NCCL's
#: rate at the launched channels (``ring_ll.launched_kernel_efficiency``), as Blackwell's 0.85 does. Round 16b: kept
#: (0.0753 on the 74 values, 1.0 0.0911) with the scheduler's channels and NCCL's per-protocol rate ("Round 16b").
RING_LL_NVLINK_KERNEL_EFFICIENCY[2] = 0.8
__all__ += ["RING_FILL_PROTOCOLS", "RING_LL_NVLINK_KERNEL_EFFICIENCY"]  # round 7 (kept apart: merge-friendly)


def ring_nvlink_kernel_efficiency(sm: int, protocol: str) -> float:
    """:data:`RING_NVLINK_KERNEL_EFFICIENCY` of SM ``sm`` for a single-domain ring (1 for LL / LL128,
    whose own caps are in NCCL's model, and for architectures without a fit).

    Examples
    --------
    >>> ring_nvlink_kernel_efficiency(100, "Simple"), ring_nvlink_kernel_efficiency(100, "LL")
    (1.0, 0.85)
    """
    if protocol == "LL":
        return RING_LL_NVLINK_KERNEL_EFFICIENCY.get(nm.arch_index(sm), 1.0)
    if protocol != "Simple":
        return 1.0
    return RING_NVLINK_KERNEL_EFFICIENCY.get(nm.arch_index(sm), 1.0)


def nvls_domain_terms(n: int, one_domain: bool = False, loops: int = 1) -> tuple[float, float]:
    """(kernel efficiency, extra latency in s) of NVLS over ``n`` GPUs of one domain (``one_domain``: the
    whole operation is that domain, NCCL's chunk loops, ``loops`` of them, each synchronising the ``n``
    ranks: :data:`NVLS_SYNC_S_PER_RANK2_PER_LOOP`; else the NVLS stage of a multi-domain plan, once).

    Examples
    --------
    >>> nvls_domain_terms(8, True, 5)
    (1.0, 0.0)
    >>> k, one = nvls_domain_terms(64, True, 1); _, ten = nvls_domain_terms(64, True, 10)
    >>> k < 1 and abs(ten - 10 * one) < 1e-15
    True
    """
    import math
    slow = 1.0 + NVLS_DOMAIN_SLOWDOWN * max(0.0, math.log2(max(n, 1) / 8))
    c = NVLS_SYNC_S_PER_RANK2_PER_LOOP * max(1, int(loops)) if one_domain else NVLS_SYNC_S_PER_RANK2
    return 1.0 / slow, c * max(0, n * n - 64)


def nic_p2p_factor(k, kernel: str = "nccl"):
    """Fraction of the single-stream NIC goodput left with ``k`` concurrent connections.

    Examples
    --------
    >>> float(nic_p2p_factor(1)), round(float(nic_p2p_factor(3)), 3)
    (1.0, 0.775)
    """
    import numpy as np
    k = np.maximum(np.asarray(k, dtype=np.float64), 1.0)
    return 1.0 - NIC_PEER_DROP[kernel] * (1.0 - 1.0 / k)


#: Protocol wire efficiency relative to Simple (NCCL tuning model; one table, in nccl_model).
PROTOCOL_EFFICIENCY = dict(zip(nm.PROTOCOLS, nm.PROTOCOL_WIRE_EFFICIENCY))


@dataclass(frozen=True)
class Calibration:
    """Wire efficiencies for one GPU and NIC model (see the module docstring)."""

    gpu: str
    nic: str | None
    nvlink_collective: float
    nvlink_nvls: float
    nvlink_p2p: float
    network: float
    host: float = 1.0
    net_latency_s: float = 0.0  #: the net plugin's latencyInter (:data:`NET_LATENCY_US`)
    net_protocols: tuple[str, ...] | None = None  #: protocols the net plugin leaves NCCL (:data:`NET_PROTOCOLS`)
    nic_via_c2c: bool = False  #: GPU -> NIC over the CPU's C2C link (:data:`NIC_VIA_C2C`)
    net_step_latency_s: float = 0.0  #: real time of one network step (:data:`NET_STEP_LATENCY_US`)
    net_algorithms: tuple[str, ...] | None = None  #: algorithms the plugin's profile leaves NCCL (:data:`NET_ALGORITHMS`)
    #: the platform tuner's protocol by collective and size (:data:`~collectives.net_plugins.NET_TUNER_PROTOCOLS`)
    tuner_protocols: tuple[tuple[str, int, str], ...] | None = None

    def efficiency(self, kind: str) -> tuple[float, float, float]:
        """(nvlink, host, network) efficiency for kernel ``kind`` (collective, nvls, p2p)."""
        nv = {"collective": self.nvlink_collective, "nvls": self.nvlink_nvls, "p2p": self.nvlink_p2p}
        if kind not in nv:
            raise SpecError(f"kernel kind: {kind!r} is not one of {', '.join(nv)}")
        return nv[kind], self.host, self.network


def calibration(gpu_name: str, nic_name: str | None = None, switch_name: str | None = None) -> Calibration:
    """The calibration for ``gpu_name`` GPUs (and ``nic_name`` NICs on ``switch_name``'s scale-out fabric)."""
    gpu = catalog.gpu(gpu_name)
    # NCCL's per-link NVLink constant and its SM -> architecture index: one table each, in nccl_model
    coll = nm.nvlink_bw_per_link_GBps(gpu.sm) * 1e9 / gpu.nvlink_link_Bps
    arch = nm.arch_index(gpu.sm)
    nvls = coll * nm.NVLS_EFFICIENCY[arch] if nm.NVLS_EFFICIENCY[arch] > 0 else coll
    ref = catalog.nic("ConnectX-7")
    net = ref.measured_goodput_Bps / ref.line_rate_Bps
    if nic_name:
        n = catalog.nic(nic_name)
        if n.measured_goodput_Bps:
            net = n.measured_goodput_Bps / n.line_rate_Bps
    return Calibration(gpu=gpu.name, nic=nic_name, nvlink_collective=coll, nvlink_nvls=nvls,
                       nvlink_p2p=p2p_nvlink_efficiency(gpu.name), network=net,
                       # a fabric without a catalog NIC has placeholder host links at the port rate
                       host=host_link_efficiency() if nic_name else 1.0,
                       net_latency_s=net_latency_us(nic_name) * 1e-6, net_protocols=net_protocols(nic_name),
                       nic_via_c2c=bool(nic_name) and (gpu.name, catalog.nic(nic_name).name) in NIC_VIA_C2C,
                       net_step_latency_s=net_step_latency_us(nic_name) * 1e-6,
                       net_algorithms=net_algorithms(nic_name),
                       tuner_protocols=net_tuner_protocols(switch_name))


# ---- Round 5: NCCL all-to-all across NICs (issue 8 items 1-2; docs/collectives.md "Round 5, all-to-all
# across NICs"). Kept apart from the tables above so that branches merge.

#: Many-peer NIC goodput of NCCL's proxy path by net transport (the ``d`` of :func:`nic_p2p_factor`), for
#: NICs whose name starts with a key; other NICs keep ``NIC_PEER_DROP["nccl"]`` (0.338 per remote NIC port, InfiniBand / RoCE:
#: reliable-connected queue pairs, one per peer pair). ``EFA``: AWS's SRD transport is connectionless
#: (one reliable-datagram endpoint per device, packets sprayed over many paths, aws-ofi-nccl's RDMA
#: protocol over libfabric RDM endpoints), so the RC model's drop is not its own. Fitted jointly with
#: :data:`NCCL_P2P_PER_PEER_S` (least |relative busbw error|, grid d 0.05-0.16 step 0.005, c 3-8 us step
#: 0.1) on the fit-split AWS p5 all-to-all sweeps (group ``awsgpucomm-p5-efa-alltoall``: 2-32 nodes,
#: 32 MiB - 2 GiB, NCCL 2.27.7, 35 values): d = 0.105, c = 5.1 us; mean |error| 15.2 % (today's d = 0.236,
#: c = 0) -> 5.6 %. The measured per-GPU network rate at 2 GiB is 0.82-0.90 of the 4 x 100 Gb/s line
#: from 2 to 32 nodes (k = 8 to 248 connections per NIC bundle): flat in k, as the form says.
NCCL_NET_PEER_DROP = {"EFA": 0.105}
NIC_PEER_DROP["nccl_efa"] = NCCL_NET_PEER_DROP["EFA"]

#: Per-peer cost of NCCL's point-to-point schedule across the network, seconds per peer, by net transport
#: (NIC name prefix; NICs not listed: 0, no fit data). NCCL runs a grouped send/recv (an all-to-all) in
#: ``nRanks`` rounds, one (send peer, recv peer) pair per round (src/enqueue.cc, ``for (int round=0; round <
#: nRanks; round++)`` over ``comm->p2pSchedule``, built in init.cc), so a rank's time grows with its peers
#: (issue 8 item 2). Form: ``c`` per peer a rank serves (``n - 1`` in an all-to-all, 1 in a send/recv ring),
#: added to the latency of the flows that cross the network. Fit: with :data:`NCCL_NET_PEER_DROP` (above). The per-node-count best
#: ``c`` (d fixed at 0.11) is 4.25 / 4.25 / 6.75 / 4.75 us at 4 / 8 / 16 / 32 nodes: one constant per peer.
NCCL_P2P_PER_PEER_S = {"EFA": 5.1e-6}

__all__ += ["NCCL_NET_PEER_DROP", "NCCL_P2P_PER_PEER_S", "nccl_p2p_family", "nccl_p2p_per_peer_s"]




def nccl_p2p_family(kernel: str, nic_name: str | None) -> str:
    """The :data:`NIC_PEER_DROP` key of a point-to-point kernel family on ``nic_name``: NCCL over EFA has
    its own (``nccl_efa``); every other case is the family itself.

    Examples
    --------
    >>> nccl_p2p_family("nccl", "EFA-v2-100G"), nccl_p2p_family("nccl", "ConnectX-7"), nccl_p2p_family("moe", "EFA-v2-100G")
    ('nccl_efa', 'nccl', 'moe')
    """
    if kernel == "nccl" and net_key(NCCL_NET_PEER_DROP, nic_name) is not None:
        return "nccl_efa"
    return kernel


def nccl_p2p_per_peer_s(nic_name: str | None) -> float:
    """:data:`NCCL_P2P_PER_PEER_S` of the NIC's transport (0 where not fitted).

    Examples
    --------
    >>> round(nccl_p2p_per_peer_s("EFA-v3-200G") * 1e6, 2), nccl_p2p_per_peer_s("ConnectX-7")
    (5.1, 0.0)
    """
    key = net_key(NCCL_P2P_PER_PEER_S, nic_name)
    return NCCL_P2P_PER_PEER_S[key] if key is not None else 0.0

# The net-plugin tables live in collectives/net_plugins.py; re-exported here under the names the docs use.
__all__ += ["NET_PROTOCOLS", "net_protocols", "NIC_VIA_C2C", "NET_STEP_LATENCY_US", "net_step_latency_us",
            "NET_ALGORITHMS", "net_algorithms", "NET_EAGER_MAX_BYTES", "net_eager_max_bytes", "net_rendezvous_s",
            "NET_TUNER_PROTOCOLS", "net_tuner_protocols"]

# The one-domain p2p tables live in collectives/p2p_constants.py (round 11); re-exported here under the names the docs
# use (the same objects: a fit that patches one of these dicts patches the model).
from collectives.p2p_constants import (NCCL_P2P_BATCH_S, NCCL_P2P_CHANNEL_BPS, NCCL_P2P_CHANNELS_BY_ARCH,  # noqa: E402
                                       NCCL_P2P_LL_MAX_BYTES_BY_ARCH, nccl_p2p_arch, nccl_p2p_channels,
                                       nccl_p2p_constants, nccl_p2p_ll_max_bytes,
                                       NCCL_P2P_ONEDOMAIN_PEER_S, nccl_p2p_onedomain_peer_s,
                                       NCCL_P2P_SIMPLE_FILL_BPS, nccl_p2p_simple_fill_Bps)

__all__ += ["NCCL_P2P_LL_MAX_BYTES_BY_ARCH", "NCCL_P2P_CHANNELS_BY_ARCH", "NCCL_P2P_CHANNEL_BPS", "NCCL_P2P_BATCH_S",
            "nccl_p2p_ll_max_bytes", "nccl_p2p_channels", "nccl_p2p_arch", "nccl_p2p_constants",
            "NCCL_P2P_ONEDOMAIN_PEER_S", "nccl_p2p_onedomain_peer_s", "NCCL_P2P_SIMPLE_FILL_BPS",
            "nccl_p2p_simple_fill_Bps"]
