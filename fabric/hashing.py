"""Flow hashing for ECMP and destination numbering for d-mod-k (one source of truth for both).

Examples
--------
>>> h = flow_hash(np.array([0, 0]), np.array([1, 2]), np.array([0, 0]), seed=1)
>>> ecmp_pick(h, 0, 4).tolist() == ecmp_pick(h, 0, 4).tolist()
True
"""

from __future__ import annotations

import numpy as np

from fabric.compiled import CompiledFabric
from topologies.graph import ROLES, TIERS

__all__ = ["splitmix64", "flow_hash", "ecmp_pick", "dmodk_keys"]

_R = {r: i for i, r in enumerate(ROLES)}
_T = {t: i for i, t in enumerate(TIERS)}


def splitmix64(x: np.ndarray) -> np.ndarray:
    """The splitmix64 finaliser, vectorised over uint64 (wrapping arithmetic).

    Examples
    --------
    >>> int(splitmix64(np.array([1], dtype=np.uint64))[0]) == int(splitmix64(np.array([1], dtype=np.uint64))[0])
    True
    """
    z = np.asarray(x).astype(np.uint64)
    if z.ndim == 0:
        with np.errstate(over="ignore"):
            z = z + np.uint64(0x9E3779B97F4A7C15)
            z = (z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
            z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
            return z ^ (z >> np.uint64(31))
    return _splitmix64_inplace(z)


def _splitmix64_inplace(z: np.ndarray) -> np.ndarray:
    """:func:`splitmix64` of a uint64 array of the caller's own, computed in it (one scratch array: the same
    wrapping operations in the same order, without a temporary per step)."""
    t = np.empty_like(z)
    with np.errstate(over="ignore"):
        z += np.uint64(0x9E3779B97F4A7C15)
        z ^= np.right_shift(z, np.uint64(30), out=t)
        z *= np.uint64(0xBF58476D1CE4E5B9)
        z ^= np.right_shift(z, np.uint64(27), out=t)
        z *= np.uint64(0x94D049BB133111EB)
        z ^= np.right_shift(z, np.uint64(31), out=t)
    return z


def flow_hash(src, dst, salt, seed: int) -> np.ndarray:
    """64-bit hash of (src, dst, salt, seed) per flow: the flow's ECMP "5-tuple" hash."""
    with np.errstate(over="ignore"):
        x = (np.asarray(src).astype(np.uint64) * np.uint64(0x100000001B3)) \
            ^ (np.asarray(dst).astype(np.uint64) << np.uint64(21)) \
            ^ (np.asarray(salt).astype(np.uint64) * np.uint64(0xD6E8FEB86659FD93))
        x ^= np.uint64((seed * 1_000_003) & 0xFFFFFFFFFFFFFFFF)  # x is this function's own array
    return splitmix64(x) if x.ndim == 0 else _splitmix64_inplace(x)


def ecmp_pick(h: np.ndarray, hop: int, count) -> np.ndarray:
    """Candidate index in [0, count) for hop ``hop`` from the flow hash ``h``.

    Each pair of hops reads one 64-bit re-mix of the flow hash (hops 0-1 the hash
    itself), even hops its high and odd hops its low 32 bits, as switches with
    different hash seeds would; the 32-bit value maps onto the candidates by
    Lemire's multiply-shift, so the choice is uniform and hops are independent.
    """
    with np.errstate(over="ignore"):
        base = h if hop < 2 else splitmix64(h ^ np.uint64(((hop // 2) * 0x9E3779B97F4A7C15) & 0xFFFFFFFFFFFFFFFF))
        x = (base >> np.uint64(32)) if hop % 2 == 0 else (base & np.uint64(0xFFFFFFFF))
        cnt = np.asarray(count).astype(np.uint64)
        if isinstance(x, np.ndarray) and x.ndim and np.broadcast_shapes(x.shape, cnt.shape) == x.shape:
            x *= cnt  # x is this function's own fresh array: in place
            x >>= np.uint64(32)
        else:
            x = (x * cnt) >> np.uint64(32)
        return x.astype(np.int64)


def dmodk_keys(cf: CompiledFabric) -> np.ndarray:
    """Destination index of every node for d-mod-k: NICs numbered leaf by leaf (as LIDs are).

    D-mod-K spreads destinations over up-ports by their index; it balances when
    the hosts under one leaf have consecutive indices, so NICs are numbered in
    the order of the (lowest-plane) leaf they hang from, then by node id.
    """
    nic = np.flatnonzero(cf.node_role == _R["nic"])
    up = cf.link_alive & (cf.link_tier == _T["nic-up"])
    leaf_of = np.full(cf.n_nodes, np.iinfo(np.int64).max, np.int64)
    np.minimum.at(leaf_of, cf.link_src[up], cf.link_dst[up].astype(np.int64))
    order = np.lexsort((nic, leaf_of[nic]))
    key = np.zeros(cf.n_nodes, np.int64)
    key[nic[order]] = np.arange(len(nic))
    return key
