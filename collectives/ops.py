"""What to run: collectives, algorithms, and a collective operation on a group of ranks.

Examples
--------
>>> op = Collective("all_reduce", tuple(range(8)), 1 << 20)
>>> op.n, op.algorithm
(8, 'auto')
"""

from __future__ import annotations

from dataclasses import dataclass, field

from topologies.errors import SpecError

__all__ = ["COLLECTIVES", "ALGORITHMS", "Collective", "busbw_factor"]

COLLECTIVES = ("all_reduce", "reduce_scatter", "all_gather", "all_to_all", "moe_dispatch", "moe_combine",
               "send_recv", "broadcast")
ALGORITHMS = ("ring", "tree", "nvls", "sharp", "hier", "direct", "auto")

#: Which algorithms apply to which collective (``auto`` always does).
_VALID = {
    "all_reduce": ("ring", "tree", "nvls", "sharp", "hier"),
    "reduce_scatter": ("ring", "nvls", "hier"),
    "all_gather": ("ring", "nvls", "hier"),
    "broadcast": ("ring",),
    "all_to_all": ("direct",),
    "send_recv": ("direct",),
    "moe_dispatch": ("direct", "hier"),
    "moe_combine": ("direct", "hier"),
}


def busbw_factor(collective: str, n: int) -> float:
    """nccl-tests' bus-bandwidth factor (doc/PERFORMANCE.md).

    MoE dispatch/combine report DeepEP's logical bandwidth instead (factor 1).

    Examples
    --------
    >>> busbw_factor("all_reduce", 8), busbw_factor("all_gather", 8)
    (1.75, 0.875)
    """
    if collective in ("moe_dispatch", "moe_combine"):
        return 1.0
    from collectives.nccl_model import busbw_factor as nccl_tests_factor  # the one table (nccl-tests)
    return nccl_tests_factor(collective, n)


@dataclass(frozen=True)
class Collective:
    """One collective on a group of GPU ranks.

    Parameters
    ----------
    collective : str
        One of :data:`COLLECTIVES`.
    ranks : tuple of int
        Global GPU ranks of the group, in group order.
    size_bytes : int
        nccl-tests' size: all-reduce/broadcast buffer, all-gather receive buffer,
        reduce-scatter send buffer, all-to-all per-rank send buffer (``n`` x the
        per-peer chunk), send/recv message. For MoE dispatch/combine: ignored
        (the token-routing model gives the bytes).
    algorithm : str
        One of :data:`ALGORITHMS`.
    label : str
        Group name in congestion reports.
    options : dict
        Algorithm options (``intra``/``inter`` for ``hier``; ``pxn``; ``moe``: a
        :class:`collectives.moe.TokenRouting`).
    """

    collective: str
    ranks: tuple
    size_bytes: int
    algorithm: str = "auto"
    label: str = ""
    options: dict = field(default_factory=dict, compare=False, hash=False)

    def __post_init__(self) -> None:
        if self.collective not in COLLECTIVES:
            raise SpecError(f"collective: {self.collective!r} is not one of {', '.join(COLLECTIVES)}")
        if self.algorithm not in ALGORITHMS:
            raise SpecError(f"algo: {self.algorithm!r} is not one of {', '.join(ALGORITHMS)}")
        if self.algorithm != "auto" and self.algorithm not in _VALID[self.collective]:
            raise SpecError(f"algo: {self.algorithm!r} does not apply to {self.collective}; use one of "
                            f"{', '.join(_VALID[self.collective] + ('auto',))}")
        ranks = tuple(int(r) for r in self.ranks)
        if len(ranks) < 2:
            raise SpecError(f"ranks: a collective needs at least 2 ranks, got {len(ranks)}")
        if len(set(ranks)) != len(ranks):
            raise SpecError("ranks: a group must not list a rank twice")
        object.__setattr__(self, "ranks", ranks)
        if isinstance(self.size_bytes, bool) or not isinstance(self.size_bytes, int) or self.size_bytes < 0:
            raise SpecError(f"size: {self.size_bytes!r} must be a whole number of bytes >= 0")
        if not self.label:
            object.__setattr__(self, "label", f"{self.collective}[{len(ranks)}]")

    @property
    def n(self) -> int:
        return len(self.ranks)
