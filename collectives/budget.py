"""How much memory and time a collective will need, estimated before planning and routing.

The flow engine's cost is set by the number of flows ``F`` and the resources
(hops) per flow ``h``. :func:`estimate_collective` counts the flows of each
collective the way :mod:`collectives.algorithms` creates them -- without
creating them:

==================  ==========================================================
all_to_all          ``n (n - 1)`` per group; node-aggregated (PXN, equal
                    domains, ``n (n - 1) > 4e6``): ``D g (g-1) + g D (D-1)``
moe_dispatch/...    at most ``2 n^2`` (direct pairs, plus the hier form's
                    per-node copies and fan-out); token routing needs
                    ``T x E`` scores per rank (``T`` tokens, ``E`` experts)
send_recv           ``n``
ring/tree/nvls/...  at most ``64 n`` (channels x ring/tree edges)
==================  ==========================================================

Memory: ``200 + 30 h`` bytes per flow (routing tables, the flow set, the
engine's adjacency and per-flow state) plus ``40 T E`` bytes for a MoE routing
draw and ``48 n^2`` for its count matrices. Measured whole-process peak RSS of
``fabric-emu run all_to_all ... --json`` after the engine's memory work
(2026-12-01): 129 B per flow on 4,096 hosts (2.16 GB), 139 B on 2,048, 207 B on
1,024 (baseline included), 495 B on 64 HGX H100 nodes (129 MB for 261,632 flows,
the ~60 MB interpreter baseline included); docs/robustness.md. Time: 1 us per flow-hop (measured 0.5) plus 10 ns per MoE score.

Examples
--------
>>> e = estimate_collective("all_to_all", [65536], hops=6)
>>> e.flows, round(e.memory_bytes / 2**40, 1)
(4294901760, 1.5)
>>> estimate_collective("all_reduce", [8], hops=2).flows
512
"""

from __future__ import annotations

from dataclasses import dataclass

from topologies.errors import SpecError
from topologies.limits import check_memory, memory_limit_bytes

__all__ = ["ProblemEstimate", "estimate_collective", "check_collective", "check_ops", "hops_bound", "fabric_tiers",
           "max_ranks_within", "BYTES_PER_FLOW", "BYTES_PER_HOP", "AGGREGATE_ABOVE_FLOWS"]

BYTES_PER_FLOW = 200
BYTES_PER_HOP = 30
SECONDS_PER_FLOW_HOP = 1e-6
BYTES_PER_SCORE = 40
SECONDS_PER_SCORE = 10e-9
#: collectives.algorithms aggregates an all-to-all per node pair above this many flows (with PXN).
AGGREGATE_ABOVE_FLOWS = 4_000_000


@dataclass(frozen=True)
class ProblemEstimate:
    """Flows, hops per flow, and the estimated peak memory and run time of one collective run."""

    flows: int
    hops: int
    memory_bytes: int
    time_s: float


def hops_bound(tiers: int, nvlink: bool) -> int:
    """Resources per flow: host links and two per switch tier, NVLink legs, and trunk columns.

    Examples
    --------
    >>> hops_bound(0, True), hops_bound(2, False), hops_bound(2, True)
    (4, 8, 12)
    """
    return (2 + 2 * tiers + 2 if tiers else 0) + (4 if nvlink else 0)


def _flows(collective: str, n: int, domain_gpus: int, pxn) -> int:
    if collective == "all_to_all":
        g = max(1, min(domain_gpus, n))
        D = n // g
        if n * (n - 1) > AGGREGATE_ABOVE_FLOWS and pxn is not False and D > 1 and g > 1 and n % g == 0:
            return D * g * (g - 1) + g * D * (D - 1)
        return n * (n - 1)
    if collective in ("moe_dispatch", "moe_combine"):
        return 2 * n * n
    if collective == "send_recv":
        return n
    return 64 * n


def estimate_collective(collective: str, group_sizes, *, hops: int, domain_gpus: int = 1, moe=None,
                        pxn=None) -> ProblemEstimate:
    """Estimate for ``collective`` run by groups of ``group_sizes`` ranks at once (see the module doc).

    ``moe`` is the :class:`collectives.moe.TokenRouting` of a MoE op (defaults otherwise).
    """
    if hops < 1:
        raise SpecError(f"hops: {hops} must be >= 1")
    sizes = [int(n) for n in group_sizes]
    flows = sum(_flows(collective, n, int(domain_gpus), pxn) for n in sizes)
    memory = flows * (BYTES_PER_FLOW + BYTES_PER_HOP * hops)
    time_s = flows * hops * SECONDS_PER_FLOW_HOP
    if collective in ("moe_dispatch", "moe_combine"):
        T = moe.tokens_per_rank if moe is not None else 4096
        E = moe.experts if moe is not None else 256
        memory += BYTES_PER_SCORE * T * E + sum(48 * n * n for n in sizes)
        time_s += sum(n for n in sizes) * T * E * SECONDS_PER_SCORE
    return ProblemEstimate(flows=flows, hops=hops, memory_bytes=int(memory), time_s=float(time_s))


def max_ranks_within(collective: str, groups: int, *, hops: int, domain_gpus: int = 1, moe=None, pxn=None,
                     limit=None) -> int:
    """The largest total rank count (a multiple of ``groups``) whose estimate fits the memory limit (0 if none).

    Examples
    --------
    >>> n = max_ranks_within("all_to_all", 1, hops=6, limit="8GiB")
    >>> 4000 < n < 6000
    True
    """
    lim = memory_limit_bytes(limit)

    def fits(n_total: int) -> bool:
        per = n_total // groups
        return estimate_collective(collective, [per] * groups, hops=hops, domain_gpus=domain_gpus, moe=moe,
                                   pxn=pxn).memory_bytes <= lim
    if not fits(2 * groups):
        return 0
    lo, hi = 2, 4
    while fits(hi * groups) and hi < 1 << 40:
        lo, hi = hi, hi * 2
    while hi - lo > 1:
        mid = (lo + hi) // 2
        lo, hi = (mid, hi) if fits(mid * groups) else (lo, mid)
    return lo * groups


def check_collective(collective: str, group_sizes, *, hops: int, domain_gpus: int = 1, moe=None, pxn=None,
                     limit=None) -> ProblemEstimate:
    """Raise :class:`ProblemTooLargeError` (with the estimate, the limit and what to change) when it does not fit."""
    est = estimate_collective(collective, group_sizes, hops=hops, domain_gpus=domain_gpus, moe=moe, pxn=pxn)
    if est.memory_bytes <= memory_limit_bytes(limit):
        return est
    sizes = list(group_sizes)
    n_total = sum(sizes)
    hints = []
    if collective in ("moe_dispatch", "moe_combine") and moe is not None \
            and BYTES_PER_SCORE * moe.tokens_per_rank * moe.experts > memory_limit_bytes(limit) / 2:
        hints.append("fewer --tokens or --experts")
    best = max_ranks_within(collective, len(sizes), hops=hops, domain_gpus=domain_gpus, moe=moe, pxn=pxn,
                            limit=limit)
    if best >= 2 * len(sizes) and best < n_total:
        hints.append(f"--ranks {best} or fewer")
    elif not hints:
        hints.append("fewer ranks")
    flows = f"{est.flows:,}" if est.flows < 10**15 else f"{est.flows:.3g}"
    check_memory(est.memory_bytes, what=f"{collective} over {n_total:,} ranks ({flows} flows x {hops} hops)",
                 hint="use " + " or ".join(hints), limit=limit, time_s=est.time_s)
    return est  # pragma: no cover - check_memory raised


def fabric_tiers(cf) -> int:
    """Switch tiers of a compiled fabric: 3 with cores, 2 with spines, 1 with leaves only, 0 without a network."""
    from topologies.graph import ROLES

    roles = set(int(x) for x in set(cf.node_role.tolist()))
    return 3 if ROLES.index("core") in roles else 2 if ROLES.index("spine") in roles else \
        1 if ROLES.index("leaf") in roles else 0


def check_ops(cf, ops, *, limit=None) -> ProblemEstimate:
    """:func:`check_collective` for the ops :func:`collectives.runner.run` is about to plan on fabric ``cf``."""
    from topologies.graph import ROLES

    hops = hops_bound(fabric_tiers(cf), bool((cf.node_role == ROLES.index("nvswitch")).any()))
    n_domains = max(1, len(set(cf.node_domain[cf.gpus].tolist())))
    domain_gpus = max(1, cf.n_gpus // n_domains)
    kinds: dict = {}
    for op in ops:
        kinds.setdefault(op.collective, []).append(op)
    est = None
    for coll, group in kinds.items():
        first = group[0].options
        e = check_collective(coll, [op.n for op in group], hops=hops, domain_gpus=domain_gpus,
                             moe=first.get("moe"), pxn=first.get("pxn"), limit=limit)
        est = e if est is None else ProblemEstimate(est.flows + e.flows, hops, est.memory_bytes + e.memory_bytes,
                                                    est.time_s + e.time_s)
    if est is not None and len(kinds) > 1:
        check_memory(est.memory_bytes, what=f"{len(ops)} collectives ({est.flows:,} flows x {hops} hops)",
                     hint="run fewer collectives at once or on fewer ranks", limit=limit, time_s=est.time_s)
    return est
