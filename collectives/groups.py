"""Rank groups of a job: the first N GPUs split into contiguous or strided groups.

One definition for the CLI's ``run`` and the sweep evaluator.

Examples
--------
>>> rank_groups(8, "all", 2, "strided")
[(0, 2, 4, 6), (1, 3, 5, 7)]
>>> rank_groups(8, 4, 2, "contiguous")
[(0, 1), (2, 3)]
"""

from __future__ import annotations

from topologies.errors import SpecError, brief

__all__ = ["LAYOUTS", "rank_groups"]

#: How groups split the ranks.
LAYOUTS = ("contiguous", "strided")


def rank_groups(n_total: int, ranks, groups: int, layout: str, *, ranks_field: str = "ranks",
                groups_field: str = "groups") -> list[tuple[int, ...]]:
    """The first ``ranks`` GPUs (an int, or ``'all'``) split into ``groups`` groups laid out by ``layout``.

    ``ranks_field`` / ``groups_field`` name the inputs in error messages (``--ranks`` on the CLI).
    """
    n = n_total if ranks == "all" else int(ranks)
    if n > n_total:
        raise SpecError(f"{ranks_field}: {n} exceeds the topology's {n_total} GPUs")
    if layout not in LAYOUTS:
        raise SpecError(f"layout: {brief(layout)} is not one of {', '.join(LAYOUTS)}")
    if isinstance(groups, bool) or not isinstance(groups, int) or groups < 1 or n % groups or n // groups < 2:
        raise SpecError(f"{groups_field}: {brief(groups)} must divide {n} ranks into groups of at least 2")
    m = n // groups
    if layout == "contiguous":
        return [tuple(range(g * m, (g + 1) * m)) for g in range(groups)]
    return [tuple(range(g, n, groups)) for g in range(groups)]
