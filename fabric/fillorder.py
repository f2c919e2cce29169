"""Filling an index with its flows renumbered (*fill order*), bit-identical, and the fill states in one pass.

When every coefficient of an index is its slot's (the per-slot table ``sw`` of :mod:`fabric.slotfill`), the
result of a max-min fill does not depend on the order of the flows: a round adds, per slot, one value per
candidate (``sw[l]``, and ``sw[l] * s[p]`` for the flows candidate ``p`` freezes first) in candidate order,
whatever the order of the flows inside a list, and every decision (shares, candidates, windows, the first
candidate crossing a flow) is per slot.  So a fill of the same lists with the flows renumbered gives the same
levels, remaining capacities and rounds, and the same bottlenecks once mapped back (``tests/test_fill_order.py``).

:class:`FillOrder` keeps such a copy of an index, its flows sorted by the last resource of their row.  The event
loop's flows are numbered as the problem lists them, source-major for an all-to-all, so the list of a receiving
link holds flows ~F/N rows apart and a fill's reads of their rows, states and bottlenecks miss the caches once
per flow; sorted by the receiving end, where most flows of a skewed dispatch freeze, they are adjacent
(docs/performance.md, "Round 11 (2026-12-03), skewed MoE epoch mode").

Examples
--------
>>> import numpy as np
>>> from fabric import fill as fl
>>> states(np.array([True, False])).tolist() == [fl.ALIVE, fl.DONE]
True
>>> res = np.array([[0, 2], [1, 2], [0, 3]], np.int16)
>>> ix = fl.build_index(res, None, None, 4, np.arange(3))
>>> fo = FillOrder(ix)
>>> fo.perm.tolist(), fo.ix.res[:, -1].tolist()
([0, 1, 2], [2, 2, 3])
"""

from __future__ import annotations

import numpy as np

from fabric import fill as _fl
from fabric import slotfill as _sf

__all__ = ["FillOrder", "states"]


def states(alive: np.ndarray) -> np.ndarray:
    """Fill states (uint8): ``ALIVE`` where ``alive`` (bool), else ``DONE``.

    The array ``np.where(alive, ALIVE, DONE).astype(np.uint8)`` in one pass (DONE + 1 is ALIVE): 0.1-0.6 ms
    on 1 M flows instead of 15-22 ms.
    """
    return np.add(alive.view(np.uint8), _fl.DONE, dtype=np.uint8)


class FillOrder:
    """A copy of an index (no coefficient arrays) with its flows sorted by the last resource of their row.

    ``perm[k]`` is the index's local flow that is flow ``k`` of the copy ``ix``, ``inv`` the inverse map
    (both in the lists' id type); the copy has the same lists (entries renamed), rows (moved) and ``ceps``.
    """

    __slots__ = ("ix", "perm", "inv")

    def __init__(self, ix):
        # the maps in the lists' id type (int32 below 2**31 entries): 4 bytes a flow, and the renamed lists come
        # out of one take in that type
        perm = np.argsort(ix.res[:, -1], kind="stable").astype(ix.indices.dtype)
        inv = np.empty_like(perm)
        inv[perm] = np.arange(perm.shape[0], dtype=perm.dtype)
        self.perm, self.inv = perm, inv
        self.ix = None
        self._lists(ix, np.take(ix.res, perm, axis=0))

    def _lists(self, ix, rows):
        self.ix = _fl.Index(None, rows, None, ix.indptr, np.take(self.inv, ix.indices), ix.n_res, ix.ceps, None)

    def rename(self, ix) -> None:
        """Take the lists of ``ix`` again (after a compaction dropped flows from them; local ids unchanged)."""
        self._lists(ix, self.ix.res)

    def fill(self, sw: np.ndarray, cap: np.ndarray, state: np.ndarray, cnt: np.ndarray,
             fixed_load: np.ndarray | None, min_entries: int | None):
        """:func:`fabric.slotfill.fill` of the index (``state`` over its local flows, not updated), on the copy:
        the same result, bottlenecks by the index's local flow."""
        out = _sf.fill(self.ix, sw, cap, np.take(state, self.perm), cnt, fixed_load, min_entries)
        out.bneck = np.take(out.bneck, self.inv)
        return out
