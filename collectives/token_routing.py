"""Weighted sampling of k distinct experts per token (the ``uniform`` and ``skewed`` routing draws).

The top-k of ``log(w_e) + Gumbel`` noise over the experts (the ``skewed`` routing
model; ``uniform`` is the case of equal weights) has the Plackett-Luce law: the
set equals the first k experts of sequential sampling *without replacement*, each
step picking a remaining expert with probability proportional to its weight
(Yellott 1977, "The relationship between Luce's choice axiom, Thurstone's theory
of comparative judgment, and the double exponential distribution", J. Math.
Psych. 15; Kool, van Hoof & Welling 2019, "Stochastic beams and where to find
them", ICML, section 2). Sampling it sequentially needs about ``k`` draws per
token instead of one per (token, expert) pair.

Equivalently, the set is that of the first k *distinct* values of an i.i.d.
sequence of draws from the full weights (a draw that repeats an expert already
held is a rejection; conditioned on a new expert, it is one with probability
proportional to its weight among the remaining ones, which is the sequential
law). Draws come from Walker's alias method (Walker 1977, ACM TOMS 3(3); Vose's
1991 construction, IEEE TSE 17(9)): one uniform per draw, O(1) work. Every token
takes k draws at once; only tokens with a repeat (about ``k^2/2 * sum(p_e^2)`` of
them) draw more. A token still repeating after ``_MAX_ROUNDS`` redraws of one
place (only when a few experts hold most of the weight) takes one exact
inverse-CDF draw over its remaining weights.

When k is a large share of the experts (``k^2 > RACE_MIN_K2_PER_EXPERT * E``) the repeats make the
rejection quadratic in k (top-256 of 256 experts took over a minute for 32,768 tokens); those draws
take the exponential race instead: the k smallest of ``Exp(1) / w_e`` over the experts, which has
the same law (the Gumbel top-k above with keys ``-log(Exp(1)) + log w_e``; Efraimidis & Spirakis
2006, "Weighted random sampling with a reservoir", IPL 97(5)), at ``E`` draws per token.

Examples
--------
>>> import numpy as np
>>> t = alias_table(np.array([1.0, 2.0, 1.0]))
>>> sel = sample_distinct(np.random.default_rng(0), t, 1000, 2)
>>> sel.shape, bool((sel[:, 0] != sel[:, 1]).all())
((1000, 2), True)
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from topologies.errors import SpecError

__all__ = ["COMPILED_MIN_SELECTIONS", "RACE_MIN_K2_PER_EXPERT", "AliasTable", "alias_table", "sample_distinct"]

#: Redraw rounds of one step before the remaining repeating tokens take the exact inverse-CDF draw.
_MAX_ROUNDS = 8
#: Float64 entries of one block of the exact fallback (tokens x experts; 2^22 = 32 MiB).
_FALLBACK_ENTRIES = 1 << 22
#: Selections (tokens x k) of one routing draw from which ``FABRIC_EMU_KERNELS=auto`` draws and counts on the
#: compiled passes of :mod:`collectives.token_kernels` (the same arrays): measured at 2^25 selections (1,024
#: ranks x 4,096 tokens x 8), they save 0.4-0.5 s of CPU (12-15 ns a selection) against 0.45-0.63 s for
#: numba's import and first load when nothing loaded it yet: break-even about 2^25 (docs/performance.md,
#: 2026-12-02, "Skewed MoE: compiled per-event passes and token draw").
COMPILED_MIN_SELECTIONS = 1 << 25
#: Draws with ``k^2 > RACE_MIN_K2_PER_EXPERT * E`` take the exponential race (one key per token and expert)
#: instead of the rejection. Measured on 32,768 tokens, E = 8 .. 1024, k = 2 .. E, uniform and gamma(0.5)
#: weights (docs/robustness.md, round 8): at k^2 / E = 4 the rejection takes 0.4-2.6x the race's time, at
#: 8 it takes 2.6-12.6x, at 64 7-190x; below 8 every draw of the shipped models (k^2 / E <= 1) keeps its
#: stream and bytes.
RACE_MIN_K2_PER_EXPERT = 8


@dataclass(frozen=True)
class AliasTable:
    """Walker alias table of ``weights``: a draw in bin ``i`` keeps ``i`` with probability ``prob[i]``,
    else takes ``alias[i]``."""

    weights: np.ndarray
    prob: np.ndarray
    alias: np.ndarray

    cut: np.ndarray   #: ``i + prob[i]``: a draw ``x = u E`` in bin ``i`` keeps ``i`` below it
    pair: np.ndarray  #: ``[i, alias[i]]`` of every bin, flat (index ``2 i + (x >= cut[i])``)


def alias_table(weights) -> AliasTable:
    """Alias table of non-negative weights (Vose's construction: exact up to float64 rounding).

    >>> t = alias_table([1.0, 3.0])
    >>> t.prob.tolist(), t.alias.tolist()
    ([0.5, 1.0], [1, 1])
    """
    w = np.asarray(weights, np.float64).ravel()
    if w.size == 0 or not np.isfinite(w).all() or (w < 0).any() or not w.sum() > 0:
        raise SpecError("token routing weights: need finite weights >= 0 with a positive sum")
    E = w.size
    p = w * (E / w.sum())
    prob = np.ones(E)
    alias = np.arange(E, dtype=np.int64)
    small = [int(i) for i in np.flatnonzero(p < 1.0)]
    large = [int(i) for i in np.flatnonzero(p >= 1.0)]
    pl = p.tolist()
    while small and large:
        s = small.pop()
        g = large[-1]
        prob[s] = pl[s]
        alias[s] = g
        pl[g] = (pl[g] + pl[s]) - 1.0
        if pl[g] < 1.0:
            small.append(large.pop())
    # what is left holds probability 1 up to rounding
    return AliasTable(weights=w, prob=prob, alias=alias, cut=np.arange(E) + prob,
                      pair=np.stack([np.arange(E), alias], axis=1).ravel())


def _draw(rng: np.random.Generator, t: AliasTable, n: int) -> np.ndarray:
    """``n`` independent draws of an expert with probability proportional to its weight.

    One uniform ``x = u E`` per draw: bin ``i = floor(x)``, kept when ``x < i + prob[i]``, else ``alias[i]``.
    """
    E = t.prob.shape[0]
    x = rng.random(n)
    x *= E
    i = x.astype(np.intp)
    np.minimum(i, E - 1, out=i)
    far = x >= np.take(t.cut, i)
    i += i
    i += far
    return np.take(t.pair, i)


def _repeats(prev: np.ndarray, e: np.ndarray) -> np.ndarray:
    """Rows where ``e`` equals one of the experts already in ``prev`` (rows x j)."""
    d = prev[:, 0] == e
    for c in range(1, prev.shape[1]):
        d |= prev[:, c] == e
    return d


def _exact(rng: np.random.Generator, w: np.ndarray, prev: np.ndarray) -> np.ndarray:
    """One draw per row among the experts not in ``prev[row]``, in proportion to ``w`` (inverse CDF)."""
    m, E = prev.shape[0], w.shape[0]
    out = np.empty(m, np.int64)
    step = max(1, _FALLBACK_ENTRIES // E)
    for a in range(0, m, step):
        p = prev[a:a + step]
        W = np.broadcast_to(w, (p.shape[0], E)).copy()
        np.put_along_axis(W, p, 0.0, axis=1)
        c = np.cumsum(W, axis=1)
        x = rng.random(p.shape[0]) * c[:, -1]
        out[a:a + step] = np.minimum((c <= x[:, None]).sum(axis=1), E - 1)
    return out


def _race(rng: np.random.Generator, w: np.ndarray, n: int, k: int) -> np.ndarray:
    """``(n, k)`` ascending rows: the k experts of smallest ``Exp(1) / w_e`` (zero weights never win)."""
    E = w.shape[0]
    if k == E:  # every expert (all weights positive, as sample_distinct checked): nothing to draw
        return np.broadcast_to(np.arange(E, dtype=np.int64), (n, E)).copy()
    inv = np.divide(1.0, w, out=np.full(E, np.inf), where=w > 0)
    out = np.empty((n, k), np.int64)
    step = max(1, _FALLBACK_ENTRIES // E)
    for a in range(0, n, step):
        m = min(step, n - a)
        keys = rng.standard_exponential((m, E))
        keys *= inv
        out[a:a + m] = np.argpartition(keys, k - 1, axis=1)[:, :k]
        out[a:a + m].sort(axis=1)
    return out


def sample_distinct(rng: np.random.Generator, table: AliasTable, n: int, k: int, compiled: bool = False) -> np.ndarray:
    """``(n, k)`` experts, each row ascending: k distinct experts per row, with the law of sequential
    sampling without replacement in proportion to ``table.weights``.

    That law is the set of the first k distinct values of an i.i.d. sequence of draws from the
    weights. Every row takes k draws (one call, row after row); the rows holding a repeat keep their
    distinct values and draw the missing ones, column by column, redrawing repeats (rejection). The
    stream of ``rng`` is consumed in that order, so the result depends on ``rng``'s state, ``n``,
    ``k`` and the table only.  ``compiled``: the first k draws of every row, their sort and the repeat
    test run in one compiled pass (:func:`collectives.token_kernels.draw_sorted`; the same array).
    """
    w = table.weights
    E = w.shape[0]
    if k > int(np.count_nonzero(w)):
        raise SpecError(f"token routing topk: {k} exceeds the {int(np.count_nonzero(w))} experts of positive weight")
    if k * k > RACE_MIN_K2_PER_EXPERT * E:
        return _race(rng, w, n, k)
    if compiled:
        from collectives import token_kernels as _tk  # imports numba

        sel, has_rep = _tk.draw_sorted(rng.random(n * k), E, table.cut, table.pair, k)
        if k == 1:
            return sel
        rows = np.flatnonzero(has_rep)
        if not rows.size:
            return sel
        sub = sel[rows]
        rep_sub = sub[:, 1:] == sub[:, :-1]
    else:
        sel = _draw(rng, table, n * k).reshape(n, k)
        sel.sort(axis=1)
        if k == 1:
            return sel
        rep = sel[:, 1:] == sel[:, :-1]
        rows = np.flatnonzero(rep.any(axis=1))
        if not rows.size:
            return sel
        sub = sel[rows]
        rep_sub = rep[rows]
    # rows with a repeat: distinct values first (ascending), the repeats become E and sort last
    sub[:, 1:][rep_sub] = E
    sub.sort(axis=1)
    for c in range(int(np.argmax(sub == E, axis=1).min()), k):
        todo = np.flatnonzero(sub[:, c] == E)
        rounds = 0
        while todo.size:
            prev = sub[todo, :c]
            f = _draw(rng, table, todo.size) if rounds < _MAX_ROUNDS else _exact(rng, w, prev)
            sub[todo, c] = f
            todo = todo[_repeats(prev, f)]
            rounds += 1
    sub.sort(axis=1)
    sel[rows] = sub
    return sel
