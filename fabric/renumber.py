"""Epoch mode on the flows renumbered by their last resource (*receiver order*), results in the caller's order.

Problems are numbered as their callers list them, source-major for an all-to-all, so the flows of a receiving
link lie ~F/N rows apart and every pass of the epoch loop over such a list (the fills, the solve tail, the
epoch end's gathers) misses the caches once per flow.  Sorted by the last resource of their row, where most
flows of a skewed dispatch freeze, they are adjacent.  The loop then needs no fill-order copy of its index
(:class:`fabric.fillorder.FillOrder` is the identity).  Unlike that copy this is not bit-identical: the
loop's order-dependent sums (departures, accounting, warm-start sums, ties of the epoch end's sort) add in
another order, so finish times move by rounding only (docs/performance.md, "Round 15 (2026-12-05)"; the
tests compare both orders to 1e-9 relative).

Examples
--------
>>> import numpy as np
>>> receiver_order(np.array([[0, 3], [1, 2], [0, 2]])).tolist()
[1, 2, 0]
>>> receiver_order(np.array([[0, 2], [1, 3]])) is None
True
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np

from fabric.problem import FlowResult, _Prob

__all__ = ["receiver_order", "permuted", "in_caller_order"]

#: per-flow fields of :class:`fabric.problem._Prob` (the others are per resource or per phase)
_PER_FLOW = ("res", "weight", "size", "rel", "lat", "mult", "phase")


def receiver_order(res: np.ndarray) -> np.ndarray | None:
    """Stable permutation of the rows of ``res`` sorted by their last column, or None when already sorted."""
    if res.ndim != 2 or res.shape[0] < 2 or res.shape[1] == 0:
        return None
    last = res[:, -1]
    if (last[1:] >= last[:-1]).all():
        return None
    return np.argsort(last, kind="stable")


def permuted(pr: _Prob, perm: np.ndarray) -> _Prob:
    """A shallow copy of ``pr`` whose flow ``k`` is the flow ``perm[k]`` of ``pr`` (phases and resources kept)."""
    q = object.__new__(_Prob)
    q.__dict__.update(pr.__dict__)
    for name in _PER_FLOW:
        a = getattr(pr, name, None)
        if a is not None:
            setattr(q, name, np.take(a, perm, axis=0))
    return q


def in_caller_order(r: FlowResult, perm: np.ndarray) -> FlowResult:
    """``r`` of the renumbered problem with its per-flow arrays back in the caller's flow order."""
    back = {}
    for name in ("start_s", "transfer_end_s", "finish_s"):
        a = getattr(r, name)
        out = np.empty_like(a)
        out[perm] = a
        back[name] = out
    return replace(r, **back)
