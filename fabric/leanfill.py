"""Max-min filling of a small unweighted problem by tied levels, on the flow x slot table itself (no CSC).

The one-solve path of :mod:`fabric.engine` builds the resource -> flow adjacency, merges duplicate hop
columns and fills in capped windows (:mod:`fabric.fill`): a few hundred numpy calls of a few
microseconds each, which on a 128-GPU all-to-all (16 K flows x 6 hops) cost 25x one ``np.bincount`` over
the table. On a small table the textbook progressive filling is cheaper: every round takes the smallest
fair share ``s0 = rem / cnt`` and the whole *tied level*, the slots whose share is within
:data:`fabric.fill.TIE_RTOL` of it, freezes every unfrozen flow that crosses one of them at ``s0``
(found by one gather of the level's marks over the unfrozen rows) and takes their coefficients off every
slot they cross (one ``np.bincount``). A row that names a slot twice puts 2 on it, as the index's merged
coefficient does. The counts come per hop column (:func:`fabric.reductions.column_counts`: no
table-sized intp copy); when a column without padding has every slot in the first level (the host
up-links of an all-to-all on a full fat-tree), that level freezes every flow and the fill ends with no
pass over the entries. Only otherwise is the intp slot table built (its fresh pages cost more than a
count over it).

That is the oracle's arithmetic at a tied level (its window freezes every candidate at the level at
``s0`` too); it differs from :func:`fabric.fill.fill` only where that one caps a level at 64 candidates
and finishes the level in later rounds at shares recomputed from the capacity left (equal to ``s0`` up to
rounding), or solves a window's higher shares by a triangular system: finish times agree to 1e-9
relative (tests/test_leanfill.py). A round costs O(unfrozen entries), so :func:`lean_fill` gives up
(``None``) after :data:`LEAN_MAX_ROUNDS` levels, or at a level that holds less than
:data:`LEAN_MIN_LEVEL_SHARE` of the unfrozen flows (before reading the entries for it), and the caller
runs the adjacency path.

Examples
--------
>>> import numpy as np
>>> res = np.array([[0, -1], [0, -1], [0, 1]])      # links 0 and 1, -1 = padding
>>> rate, min_rate, counts, rounds = lean_fill(res, np.array([10.0, 2.0]), min_level_share=0.0)
>>> rate.tolist(), min_rate[1:].tolist(), counts.tolist(), rounds
([4.0, 4.0, 2.0], [2.0, 2.0], [3, 1], 2)
>>> lean_fill(res, np.array([10.0, 2.0])) is None   # the first level (link 1) holds 1 of 3 flows
True
"""

from __future__ import annotations

import numpy as np

from fabric.fill import TIE_RTOL
from fabric.reductions import column_counts

__all__ = ["LEAN_MAX_ENTRIES", "LEAN_MAX_ROUNDS", "LEAN_MIN_LEVEL_SHARE", "lean_fill"]

#: Table entries (flows x hops) up to which :func:`fabric.engine.simulate` tries the lean one-solve.
LEAN_MAX_ENTRIES = 1 << 18

#: Tied levels after which :func:`lean_fill` gives up (each round reads every unfrozen entry once).
LEAN_MAX_ROUNDS = 4

#: The share of the unfrozen flows under which a level's entries make :func:`lean_fill` give up: each round
#: then freezes at least this share, so the rounds read at most 1 / (1 - share) times the entries.
LEAN_MIN_LEVEL_SHARE = 0.5

_INF = np.inf


def _column_in_level(C: np.ndarray, level: np.ndarray) -> bool:
    """Whether some hop column has no padding and every slot it names in ``level`` (per-column counts ``C``):
    then every flow crosses a slot of the level. O(h x R)."""
    out = np.logical_and(C[:, 1:] > 0, ~level[1:])  # slots a column names outside the level
    return bool(np.logical_and(C[:, 0] == 0, ~out.any(axis=1)).any())


def lean_fill(res: np.ndarray, cap: np.ndarray, max_rounds: int = LEAN_MAX_ROUNDS,
              min_level_share: float = LEAN_MIN_LEVEL_SHARE):
    """Max-min rates of unit-coefficient flows by tied levels, or ``None`` when that would take many rounds.

    Parameters
    ----------
    res : numpy.ndarray
        int[F, h], the resource of every entry, -1 for padding.
    cap : numpy.ndarray
        float64[R], capacity of each resource (> 0, ``inf`` allowed).
    max_rounds : int
        Levels to fill at most.
    min_level_share : float
        Give up at a level (one that needs a pass over the entries) whose slots carry fewer entries than
        this share of the unfrozen flows: it freezes fewer of them (0: never give up for this).

    Returns
    -------
    tuple or None
        ``(rate, min_rate, counts, rounds)``: float64[F] rates (``inf`` for flows that cross no finite
        share), float64[R + 1] the smallest rate of the frozen flows crossing each slot (``inf`` if none),
        int[R] entries per resource, and the number of rounds; ``None`` when flows are left after
        ``max_rounds`` rounds or a level is thinner than ``min_level_share``.

    Notes
    -----
    The first level is tested for a hop column without padding whose every slot is in it (the host
    up-links of an all-to-all): then it freezes every flow, from the per-column counts alone (no pass
    over the entries, no table-sized copy). Otherwise the rounds read the intp slot table.
    """
    F = res.shape[0]
    r1 = cap.shape[0] + 1
    C = column_counts(res, r1 - 1)
    counts = C.sum(axis=0)
    cnt = counts.astype(np.float64)
    cnt[0] = 0.0
    rem = np.empty(r1)
    rem[0] = _INF
    rem[1:] = cap
    rate = np.full(F, _INF)
    min_rate = np.full(r1, _INF)
    share = np.empty(r1)
    rows = None  # the unfrozen rows (None: all of them)
    k = None  # their slots (built at the first level that does not freeze every flow)
    rounds = 0
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        while True:
            np.divide(rem, cnt, out=share)
            share[cnt < 0.5] = _INF  # no unfrozen flow (coefficient sums are integers)
            s0 = float(share.min())
            if not s0 < _INF:
                break
            if rounds == max_rounds:
                return None
            rounds += 1
            level = share <= (s0 * (1.0 + TIE_RTOL) if s0 > 0.0 else s0)
            sv = s0 if s0 > 0.0 else 0.0
            # every flow is hit when a column without padding has all its slots in the level
            every = rows is None and _column_in_level(C, level)
            if not every:
                # a level whose slots carry fewer entries than half the unfrozen flows freezes fewer than half
                # of them: rounds that re-read most entries for few flows (a degraded link); give up
                if float(cnt[level].sum()) < min_level_share * (F if rows is None else rows.shape[0]):
                    return None
                if k is None:
                    k = np.add(res, 1, dtype=np.intp)
                g = np.take(level, k)
                hit = g[:, 0].copy()  # (a loop over the columns: .any(axis=1) over rows of h is ~5x slower)
                for j in range(1, g.shape[1]):
                    np.logical_or(hit, g[:, j], out=hit)
                every = rows is None and bool(hit.all())
            if every:  # one level freezes every flow (e.g. an all-to-all on a full fat-tree)
                dc = counts
                rate.fill(sv)
                left = 0
            else:
                fk = k[hit]
                rate[np.flatnonzero(hit) if rows is None else rows[hit]] = sv
                keep = ~hit
                rows = np.flatnonzero(keep) if rows is None else rows[keep]
                k = k[keep]
                left = rows.shape[0]
                dc = np.bincount(fk.reshape(-1), minlength=r1)
            cnt -= dc
            rem -= dc * sv
            np.minimum(min_rate, sv, out=min_rate, where=dc > 0)  # (the level's slots: every flow frozen, 0 left)
            if left == 0:
                break
    return rate, min_rate, counts[1:], rounds
