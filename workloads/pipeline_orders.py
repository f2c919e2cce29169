"""The order of operations each pipeline rank issues (Megatron 1F1B / interleaved, DualPipe).

:mod:`workloads.pipeline` times these orders over their dependencies; its docstring describes each
schedule and its sources. Operation codes: forward ``_F``, backward ``_B`` (input and weight
gradient together), zero-bubble backward ``_BZ`` (input gradient only) and weight gradient ``_W``,
and ``_PAIR`` (a forward and a backward of different micro-batches run as one overlapped operation).
"""

from __future__ import annotations

import numpy as np

__all__: list[str] = []

#: operation types
_F, _B, _BZ, _W, _PAIR = 0, 1, 2, 3, 4


def _megatron_types(schedule: str, pp: int, vpp: int, m: int, r: int, pair: bool) -> np.ndarray:
    """Operation types of rank r in Megatron's order (forwards and backwards numbered in order of issue)."""
    if schedule == "1f1b":
        if pair and pp == 1:  # combined 1F1B without PP: F0, then (F i+1 & B i), then the last B
            return np.concatenate([[_F], np.full(m - 1, _PAIR), [_B]]).astype(np.int64)
        warm, total = min(pp - r - 1, m), m
    else:
        total = m * vpp
        warm = total if m == pp else min((pp - r - 1) * 2 + (vpp - 1) * pp, total)
    steady = np.full(total - warm, _PAIR) if pair else np.tile([_F, _B], total - warm)
    return np.concatenate([np.full(warm, _F), steady, np.full(warm, _B)]).astype(np.int64)


def _megatron_ops(schedule: str, pp: int, vpp: int, m: int, pair: bool):
    """(type, rank, F virtual stage, F micro, B virtual stage, B micro) of every op, rank by rank, in order."""
    parts = []
    g = pp * vpp
    for r in range(pp):
        t = _megatron_types(schedule, pp, vpp, m, r, pair)
        isf = (t == _F) | (t == _PAIR)
        isb = (t == _B) | (t == _PAIR)
        kf = np.where(isf, np.cumsum(isf) - 1, -1)
        kb = np.where(isb, np.cumsum(isb) - 1, -1)
        # Megatron: k-th forward -> chunk (k mod pp*vpp) // pp, micro (k // (pp*vpp)) * pp + k mod pp;
        # backwards run the chunks in reverse
        mf = np.where(isf, (kf // g) * pp + kf % pp, -1)
        mb = np.where(isb, (kb // g) * pp + kb % pp, -1)
        cf = np.where(isf, (kf % g) // pp, -1)
        cb = np.where(isb, vpp - 1 - (kb % g) // pp, -1)
        split = (t == _PAIR) & (mf == mb)  # the backward needs this very forward: run them in turn
        if split.any():
            rep = np.repeat(np.arange(len(t)), np.where(split, 2, 1))
            first = np.ones(len(rep), bool)
            first[1:] = rep[1:] != rep[:-1]
            sp = split[rep]
            t = np.where(sp, np.where(first, _F, _B), t[rep])
            mf, cf = np.where(sp & ~first, -1, mf[rep]), np.where(sp & ~first, -1, cf[rep])
            mb, cb = np.where(sp & first, -1, mb[rep]), np.where(sp & first, -1, cb[rep])
        fv = np.where(cf >= 0, cf * pp + r, -1)
        bv = np.where(cb >= 0, cb * pp + r, -1)
        parts.append((t, np.full(len(t), r), fv, mf, bv, mb))
    return tuple(np.concatenate([p[i] for p in parts]).astype(np.int64) for i in range(6))


def _order_dualpipe(pp: int, m: int, r: int, pair: bool) -> list[tuple]:
    """DualPipe.step's order on rank r: (type, F local phase, B local phase) (phases resolved by the caller)."""
    half_ranks = pp // 2
    hr = min(r, pp - 1 - r)
    half = m // 2
    middle = hr == half_ranks - 1
    ops: list[tuple] = []
    F = lambda p: ops.append((_F, p, -1))                                     # noqa: E731
    B = lambda p, zb=False: ops.append((_BZ if zb else _B, -1, p))            # noqa: E731
    W = lambda: ops.append((_W, -1, -1))                                      # noqa: E731

    def FB(p0, p1):
        if pair:
            ops.append((_PAIR, p0, p1))
        else:
            F(p0)
            B(p1)

    for _ in range((half_ranks - hr - 1) * 2):          # step 1: nF0
        F(0)
    for _ in range(hr + 1):                              # step 2: nF0F1
        F(0)
        F(1)
    for _ in range(half_ranks - hr - 1):                 # step 3: nB1W1F1 (zero bubble)
        B(1, True)
        W()
        F(1)
    for i in range(half - pp + hr + 1):                  # step 4: nF0B1F1B0
        if i == 0 and middle:                            # not overlapped, to shrink the bubble
            F(0)
            B(1)
        else:
            FB(0, 1)
        FB(1, 0)
    for _ in range(half_ranks - hr - 1):                 # step 5: nB1F1B0
        B(1)
        FB(1, 0)
    s6 = hr + 1                                          # step 6: nB1B0, second half zero bubble
    zb = False
    for i in range(s6):
        if i == s6 // 2 and hr % 2 == 1:
            zb = True
        B(1, zb)
        if i == s6 // 2 and hr % 2 == 0:
            zb = True
        B(0, zb)
    for _ in range(half_ranks - hr - 1):                 # step 7: nWB0
        W()
        B(0, True)
    for _ in range(hr + 1):                              # step 8: nW
        W()
    return ops


def _dualpipe_ops(pp: int, m: int, pair: bool):
    """DualPipe's ops with local phases resolved: direction d = phase XOR (rank in the second half)."""
    typ, rank, fv, fm, bv, bm = [], [], [], [], [], []
    for r in range(pp):
        second = int(r >= pp // 2)
        nf, nb = [0, 0], [0, 0]
        zq: list = []   # zero-bubble backwards whose W is still to run (FIFO, as WeightGradStore)
        for t, pf, pb in _order_dualpipe(pp, m, r, pair):
            typ.append(t)
            rank.append(r)
            if t == _W:
                v, k = zq.pop(0)
                fv.append(-1), fm.append(-1), bv.append(v), bm.append(k)
                continue
            if pf >= 0:
                d = pf ^ second
                fv.append(d * pp + (r if d == 0 else pp - 1 - r)), fm.append(nf[d])
                nf[d] += 1
            else:
                fv.append(-1), fm.append(-1)
            if pb >= 0:
                d = pb ^ second
                v = d * pp + (r if d == 0 else pp - 1 - r)
                bv.append(v), bm.append(nb[d])
                nb[d] += 1
                if t == _BZ:
                    zq.append((v, nb[d] - 1))
            else:
                bv.append(-1), bm.append(-1)
    return tuple(np.asarray(x, np.int64) for x in (typ, rank, fv, fm, bv, bm))
