"""The LL ring's latency inside one NVLink domain beyond NCCL's own tuning model (round 11).

NCCL's latency model of a ring (``src/graph/tuning.cc`` @ v2.29.2-1, the latency loop: ``baseLat +
nsteps x hwLat[NVLINK][Ring][LL]``, 6.8 us + 0.6 us per step; ``nccl_model.BASE_LATENCIES_US``,
``nccl_model.HW_LATENCIES_US``) is what NCCL uses to *choose*; it stays the choice here. The measured
small-message time of the LL ring on NVLink boards is larger, and it grows with the number of ring steps
at about twice NCCL's per-step figure: nccl-tests sweeps of 2, 4 and 8 GPUs of one board (A100, B200, GB200
and GB300 trays; ai-dynamo/aiconfigurator ``systems/data/<system>/comm/nccl/<version>/nccl_perf.parquet``
@ 095f58a5, the fit-split groups of ``published_points.toml``) take 8.2-9.4 us for a 1-step all-gather of
512 B, 11-12 us for 3 steps and 15-16 us for 7, against NCCL's 7.4, 8.6 and 11.0 us. The time model adds

    t_extra = RING_LL_NVLINK_BASE_S + steps x RING_LL_NVLINK_STEP_S

to the LL ring of one NVLink domain on the architectures whose fit-split rows fitted it
(:data:`RING_LL_NVLINK_ARCHS`: Ampere and Blackwell; ``steps`` NCCL's: ``2(n-1)`` all-reduce, ``n-1`` all-gather /
reduce-scatter, 1 broadcast / reduce, whose NVSwitch graphs pay one hop: tuning.cc ``sameChannels``).
Both constants are fitted (grid, mean |busbw error|) on the fit-split rows that run the LL ring on one
NVLink domain (``benchmarks/fit_collective_constants.py ring-ll-latency``; docs/collectives.md,
"Round 11 (2026-12-03), aiconfigurator NCCL sweeps"). LL128 and Simple are not changed. Rounds 11-15: Hopper
kept NCCL's latency (no fit-split Hopper LL row below 1 MiB). Round 16: Hopper has terms of its own
(:data:`RING_LL_NVLINK_TERMS_S_BY_ARCH`), fitted on the fit-split Hopper ring/LL rows of one board up to 8 KiB (the
NCCL 2.23 H100 / H200 all-gather / reduce-scatter sweeps), and every single-domain ring runs at the rate NCCL gives
the channels it launches for its size (:data:`RING_LAUNCH_BY_SIZE`), with which the Ampere / Blackwell base was
refitted (1.2 -> 0.8 us; the step stayed 0.6 us; docs/collectives.md, "Round 16 (2026-12-06), Hopper LL ring
latency and NCCL's channels by size"). Round 16b: the launched channels include the scheduler's step
(``nccl_model.enqueue.scheduled_channels``) and the rate is NCCL's per protocol and release; the terms were refitted
(docs/collectives.md, "Round 16b (2026-12-06), review fixes").

Examples
--------
>>> ring_ll_extra_s("all_gather", 8, "Simple", 100), ring_ll_extra_s("all_gather", 8, "LL", 70)
(0.0, 0.0)
>>> [round(ring_ll_extra_s("all_gather", n, "LL", 90) * 1e6, 2) for n in (2, 8)]
[-1.4, -0.2]
>>> round(ring_ll_extra_s("all_reduce", 8, "LL", 100) * 1e6, 2) == round((RING_LL_NVLINK_BASE_S
...     + 14 * RING_LL_NVLINK_STEP_S) * 1e6, 2)
True
"""

from __future__ import annotations

from dataclasses import replace

from collectives import nccl_model as nm
from collectives.calibration import ring_nvlink_kernel_efficiency
from collectives.ring_copy import ring_copy_s

__all__ = ["RING_LL_NVLINK_ARCHS", "RING_LL_NVLINK_BASE_S", "RING_LL_NVLINK_STEP_S", "RING_LL_NVLINK_TERMS_S_BY_ARCH",
           "RING_LAUNCH_BY_SIZE", "launched_kernel_efficiency", "ring_ll_steps", "ring_ll_extra_s",
           "one_domain_ring_terms"]

#: Round 16: rings inside one NVLink domain run at the rate NCCL's bandwidth formula gives the channels it launches
#: for the size (``nccl_model.enqueue.ring_launch_fraction``: topoGetAlgoInfo's channel reduction, then, round 16b,
#: scheduleCollTasksToPlan's cells), a kernel limit of the time; NCCL's choice keeps its own table (it does not see
#: the reduction either). The forms (:func:`launched_kernel_efficiency`): ``"nccl"``, tuning.cc's formula per
#: protocol and release at ``nc`` channels; ``"channels"``, ``min(keff, nc/N)`` (round 16's; NCCL's for Ring/LL
#: from 2.21 and for Simple only); ``"share"``, ``keff x nc/N`` (NCCL's for LL128 and Simple);
#: ``"channel-threads"``, channels x threads; False: off. Chosen on the fit rows (round 16b).
RING_LAUNCH_BY_SIZE: str | bool = "nccl"

#: NCCL architecture indices (``nccl_model.arch_index``) of the fit rows: 1 Ampere (A100), 3 Blackwell (B200,
#: GB200, GB300).
RING_LL_NVLINK_ARCHS = (1, 3)

#: Fixed extra time of one LL ring call inside one NVLink domain, s (fitted, see the module docstring).
RING_LL_NVLINK_BASE_S = 0.8e-6  # round 16: 1.2 -> 0.8 us, refitted with RING_LAUNCH_BY_SIZE
#: Extra time per ring step of the LL ring inside one NVLink domain, s (fitted; NCCL charges 0.6 us).
RING_LL_NVLINK_STEP_S = 0.6e-6

#: Architectures with (base, per-step) terms of their own, s (round 16): Hopper (index 2), fitted on the fit-split
#: Hopper ring/LL rows of one board up to 8 KiB (the NCCL 2.23 H100 / H200 all-gather / reduce-scatter sweeps of
#: aiconfigurator, 2-8 GPUs; ``benchmarks/fit_collective_constants.py ring-ll-hopper``, ``small``; the larger rows
#: enter only the efficiency grid); docs/collectives.md, "Round 16 (2026-12-06), Hopper LL ring latency"). Hopper's
#: 1-step call is *faster* than NCCL's ``baseLat + hwLat`` (5.98 us against 7.4 at 2 GPUs), its per-step growth
#: larger, so the base is negative.
RING_LL_NVLINK_TERMS_S_BY_ARCH: dict[int, tuple[float, float]] = {2: (-1.6e-6, 0.2e-6)}


def ring_ll_steps(collective: str, n: int) -> int:
    """NCCL's ring step count of the latency model (tuning.cc): ``2(n-1)`` for all-reduce, ``n-1`` for
    all-gather and reduce-scatter, 1 for broadcast / reduce (one hop on NVSwitch graphs), 0 otherwise.

    Examples
    --------
    >>> ring_ll_steps("all_reduce", 4), ring_ll_steps("all_gather", 4), ring_ll_steps("broadcast", 4)
    (6, 3, 1)
    """
    n = int(n)
    if n < 2:
        return 0
    if collective == "all_reduce":
        return 2 * (n - 1)
    if collective in ("all_gather", "reduce_scatter"):
        return n - 1
    if collective in ("broadcast", "reduce"):
        return 1
    return 0


def ring_ll_extra_s(collective: str, n: int, protocol: str, sm: int) -> float:
    """Extra latency in s of a ring of ``n`` ranks inside one NVLink domain of SM ``sm`` GPUs: the LL
    protocol's base and per-step terms (:data:`RING_LL_NVLINK_BASE_S`, :data:`RING_LL_NVLINK_STEP_S`) on
    the architectures of :data:`RING_LL_NVLINK_ARCHS`, else 0 (other protocols, other architectures)."""
    steps = ring_ll_steps(collective, n)
    arch = nm.arch_index(sm)
    if protocol != "LL" or steps == 0:
        return 0.0
    if arch in RING_LL_NVLINK_TERMS_S_BY_ARCH:
        base, step = RING_LL_NVLINK_TERMS_S_BY_ARCH[arch]
        return base + steps * step
    if arch not in RING_LL_NVLINK_ARCHS:
        return 0.0
    return RING_LL_NVLINK_BASE_S + steps * RING_LL_NVLINK_STEP_S


def launched_kernel_efficiency(keff: float, size_bytes: float, comm_channels: int, protocol: str, n: int,
                               collective: str | None = None, version: tuple[int, int, int] | None = None,
                               nnodes: int = 1) -> float:
    """NCCL's kernel efficiency ``keff`` (bandwidth / nominal of its table, before the calibration's own ring factors)
    of a single-domain ring run on the ``nc`` of ``N = comm_channels`` channels NCCL launches for ``size_bytes``
    (``nccl_model.enqueue.ring_launch_fraction`` of ``collective`` at release ``version``), by
    :data:`RING_LAUNCH_BY_SIZE`:

    - ``"nccl"``: tuning.cc's own formula at ``nc`` channels (v2.23.4-1 l.187-188). LL: ``busBw = min(llMaxBw,
      nCh x bw x f)``, an absolute cap, so ``min(keff, u x nc/N)`` with ``u = f / 0.5`` the uncapped ratio
      (``nccl_model.ring_ll_factor``: f 1/2 from 2.21, 1/4 or 1/3 before; 0.5 LL's wire efficiency); LL128
      ``min(0.92 nCh bw, nCh perChMaxRingLL128Bw)`` and Simple ``nCh bw``, caps per channel, so ``keff x nc/N``;
    - ``"channels"``: ``min(keff, nc/N)`` (round 16; the same as ``"nccl"`` for LL from 2.21 and for Simple);
    - ``"share"``: ``keff x nc/N``; ``"channel-threads"``: ``keff x nc nt / (N maxThreads)``; False: ``keff``.

    Examples
    --------
    >>> launched_kernel_efficiency(0.76, 32 << 10, 24, "LL", 8) == 1 / 24
    True
    >>> launched_kernel_efficiency(0.76, 2 << 20, 24, "LL", 8), launched_kernel_efficiency(0.9, 2 << 20, 24, "LL128", 8)
    (0.76, 0.9)
    >>> round(launched_kernel_efficiency(0.9, 512 << 10, 24, "LL128", 8, "all_gather", (2, 23, 4)), 4)
    0.6
    >>> launched_kernel_efficiency(1.0, 512 << 10, 24, "LL", 8, "all_reduce", (2, 18, 5))  # 1/4 / 0.5 x 16/24
    0.3333333333333333
    """
    mode = RING_LAUNCH_BY_SIZE
    if not mode:
        return keff
    frac = nm.enqueue.ring_launch_fraction(size_bytes, comm_channels, protocol, n, threads=mode == "channel-threads",
                                           collective=collective, version=version)
    if mode == "nccl":
        if protocol != "LL":
            return keff * frac
        ar_like = int(nnodes) > 1 or collective in ("all_reduce", "reduce")
        return min(keff, nm.ring_ll_factor(version, ar_like) / nm.PROTOCOL_WIRE_EFFICIENCY[0] * frac)
    return min(keff, frac) if mode == "channels" else keff * frac


def one_domain_ring_terms(planner, op, size_bytes: float, est, keff: float, first_gpu: int):
    """The terms of a ring of ``op`` inside one domain beyond NCCL's estimate ``est`` (kernel efficiency ``keff``),
    for :meth:`collectives.algorithms.Planner.plan`: ``(est, keff, extra_s, latency_per_byte_s)``.

    - ``keff``: NCCL's rate at the channels it launches (:func:`launched_kernel_efficiency`, round 16) times the
      ring kernel's own limit on one domain (``calibration.ring_nvlink_kernel_efficiency``, fitted);
    - ``extra_s``, added to ``est``'s latency: on an NVLink domain, the LL ring's hops (:func:`ring_ll_extra_s`)
      and round 12's local copy of the Simple ring's last step (``ring_copy.ring_copy_s``, linear in the size);
    - ``latency_per_byte_s``: that copy per byte, the part of ``extra_s`` that grows with the size (so
      ``collectives.plancache`` can rescale a cached plan's latency exactly).

    Examples
    --------
    >>> from topologies import build
    >>> from fabric import compile_fabric, Router
    >>> from collectives.runner import planner_for
    >>> from collectives.ops import Collective
    >>> planner = planner_for(Router(compile_fabric(build("hgx-h100"))))
    >>> op = Collective("all_gather", (0, 1), 16 << 20, "ring")
    >>> est = planner.nccl_estimate(op.ranks, op.collective, op.size_bytes, "Ring", None)
    >>> est2, keff, extra_s, per_byte = one_domain_ring_terms(planner, op, op.size_bytes, est, est.kernel_efficiency, 0)
    >>> est.protocol, extra_s > 0, round(per_byte * op.size_bytes, 12) == round(extra_s, 12)
    ('Simple', True, True)
    """
    if RING_LAUNCH_BY_SIZE:  # round 16: NCCL's rate at the channels it launches (enqueue.cc)
        system = planner.system_for(op)
        keff = launched_kernel_efficiency(keff, size_bytes, nm.tuning.comm_channels(system), est.protocol, op.n,
                                          op.collective, system.nccl_version, system.nnodes)
    keff = keff * ring_nvlink_kernel_efficiency(planner.gpu.sm, est.protocol)
    est = replace(est, kernel_efficiency=keff)
    if not bool(planner.router.domain_has_nvlink[planner.domain[first_gpu]]):
        return est, keff, 0.0, 0.0
    extra = ring_ll_extra_s(op.collective, op.n, est.protocol, planner.gpu.sm)
    # round 12: the last step of every chunk loop is a local copy the channel does not send during
    copy = ring_copy_s(op.collective, op.n, est.protocol, size_bytes,
                       planner.gpu.nvlink_Bps * planner.calib.nvlink_collective * keff)
    extra += copy
    return replace(est, latency_s=est.latency_s + extra), keff, extra, copy / size_bytes if size_bytes > 0 else 0.0
