"""NCCL's inter-node trees (``ncclGetBtree`` / ``ncclGetDtree``, src/graph/trees.cc).

The tree algorithm and NCCL's NVLSTree run two complementary binary trees over the nodes, each
carrying half the data; :mod:`collectives.algorithms` routes their edges.
"""

from __future__ import annotations

__all__ = ["nccl_btree_parent", "nccl_dtree_parents"]


def nccl_btree_parent(n: int, rank: int) -> int:
    """Parent of ``rank`` in NCCL's binary tree over ``n`` nodes (``ncclGetBtree``, trees.cc); -1 at the root.

    The root (0) has one child; every other node's parent clears its lowest set bit and sets the
    next one, or only clears it when that falls outside ``n``.

    Examples
    --------
    >>> [nccl_btree_parent(4, r) for r in range(4)]
    [-1, 2, 0, 2]
    """
    if rank == 0:
        return -1
    bit = rank & -rank
    up = (rank ^ bit) | (bit << 1)
    return up if up < n else rank ^ bit


def nccl_dtree_parents(n: int) -> tuple[tuple[int, ...], tuple[int, ...]]:
    """Parents of every node in NCCL's two complementary trees (``ncclGetDtree``): the binary tree,
    and its mirror (``n`` even) or its shift by one node (``n`` odd).

    Examples
    --------
    >>> nccl_dtree_parents(4)
    ((-1, 2, 0, 2), (1, 3, 1, -1))
    """
    t0 = tuple(nccl_btree_parent(n, r) for r in range(n))
    if n % 2:
        t1 = tuple(-1 if (u := nccl_btree_parent(n, (r - 1) % n)) < 0 else (u + 1) % n for r in range(n))
    else:
        t1 = tuple(-1 if (u := nccl_btree_parent(n, n - 1 - r)) < 0 else n - 1 - u for r in range(n))
    return t0, t1
