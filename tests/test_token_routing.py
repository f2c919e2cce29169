"""The k-distinct-experts sampler has the Plackett-Luce law of the Gumbel top-k it replaced.

Checks against the exact set probabilities (enumerated orderings) and against the empirical
frequencies of the old sampler (top-k of ``log w + Gumbel``), with fixed seeds and thresholds far
from the seeds' statistics (chi-square p-values, total variation).
"""

from itertools import combinations, permutations

import numpy as np
import pytest
from scipy import stats

import collectives.token_routing as tkr
from collectives.token_routing import alias_table, sample_distinct
from topologies.errors import SpecError


def _exact_set_law(w, k):
    """P(set) of sequential sampling without replacement in proportion to w, over all orderings."""
    w = np.asarray(w, float)
    law = {}
    for s in combinations(range(len(w)), k):
        p = 0.0
        for order in permutations(s):
            left, q = w.sum(), 1.0
            for e in order:
                q *= w[e] / left
                left -= w[e]
            p += q
        law[s] = p
    return law


def _freq(sel, sets):
    index = {s: i for i, s in enumerate(sets)}
    out = np.zeros(len(sets))
    for row, n in zip(*np.unique(np.sort(sel, axis=1), axis=0, return_counts=True)):
        out[index[tuple(int(x) for x in row)]] += n
    return out


@pytest.mark.parametrize("w", [[0.3, 1.0, 2.5, 0.7, 4.0, 1.2], [1.0] * 6, [50.0, 1.0, 0.5, 2.0, 0.01, 1.0]])
def test_sets_follow_the_plackett_luce_law(w):
    k, n = 3, 120_000
    law = _exact_set_law(w, k)
    sets = sorted(law)
    p = np.array([law[s] for s in sets])
    assert p.sum() == pytest.approx(1.0, rel=1e-12)
    sel = sample_distinct(np.random.default_rng(11), alias_table(w), n, k)
    assert sel.shape == (n, k) and (np.diff(sel, axis=1) > 0).all()  # distinct, ascending
    f = _freq(sel, sets)
    chi2, pval = stats.chisquare(f, n * p)
    assert pval > 1e-3, (chi2, pval)
    assert 0.5 * np.abs(f / n - p).sum() < 0.01


def test_sets_match_the_old_gumbel_top_k():
    w = np.array([0.3, 1.0, 2.5, 0.7, 4.0, 1.2, 0.9])
    k, n = 3, 100_000
    rng = np.random.default_rng(5)
    scores = np.log(w)[None, :] + rng.gumbel(size=(n, w.size))
    old = np.argpartition(-scores, k - 1, axis=1)[:, :k]
    new = sample_distinct(np.random.default_rng(6), alias_table(w), n, k)
    sets = sorted(_exact_set_law(w, k))
    table = np.stack([_freq(old, sets), _freq(new, sets)])
    table = table[:, table.sum(axis=0) > 0]
    _, pval, _, _ = stats.chi2_contingency(table)
    assert pval > 1e-3
    assert 0.5 * np.abs(table[0] - table[1]).sum() / n < 0.01


def test_the_alias_table_carries_the_weights_exactly():
    w = np.random.default_rng(0).lognormal(0.0, 2.0, 257)
    t = alias_table(w)
    E = w.size
    mass = t.prob / E + np.bincount(t.alias, weights=(1.0 - t.prob) / E, minlength=E)
    np.testing.assert_allclose(mass, w / w.sum(), rtol=1e-10, atol=1e-15)


def test_dominant_expert_takes_the_exact_fallback(monkeypatch):
    calls = []
    exact = tkr._exact
    monkeypatch.setattr(tkr, "_exact", lambda *a: calls.append(1) or exact(*a))
    w = [1e4, 1.0, 2.0, 1.0]
    law = _exact_set_law(w, 2)
    sets = sorted(law)
    n = 40_000
    sel = sample_distinct(np.random.default_rng(2), alias_table(w), n, 2)
    assert calls  # P(8 repeats of the dominant expert) ~ 1: the inverse-CDF draw ran
    f = _freq(sel, sets)
    assert stats.chisquare(f, n * np.array([law[s] for s in sets]))[1] > 1e-3


def test_all_experts_and_bad_weights():
    sel = sample_distinct(np.random.default_rng(0), alias_table([1.0, 2.0, 3.0]), 50, 3)
    assert (sel == [0, 1, 2]).all()
    with pytest.raises(SpecError, match="topk"):
        sample_distinct(np.random.default_rng(0), alias_table([1.0, 0.0, 3.0]), 5, 3)
    for bad in ([], [1.0, -1.0], [0.0, 0.0], [np.inf, 1.0]):
        with pytest.raises(SpecError, match="weights"):
            alias_table(bad)


@pytest.mark.parametrize("E,k,sigma", [(1024, 8, 1.0), (64, 8, 2.5), (40, 6, 1.0), (9, 3, 3.0), (5, 1, 1.0), (16, 2, 0.5)])
def test_compiled_draw_gives_the_same_rows(E, k, sigma):
    """collectives.token_kernels.draw_sorted (k = 8: a sorting network) consumes the stream as the numpy
    draw does and returns the same rows, repeats redrawn alike (np.array_equal)."""
    from fabric import kernels

    if not kernels.available():
        pytest.skip("numba not installed")
    t = alias_table(np.random.default_rng(E).lognormal(0.0, sigma, E))
    for seed in range(3):
        a = sample_distinct(np.random.default_rng(seed), t, 3001, k)
        b = sample_distinct(np.random.default_rng(seed), t, 3001, k, compiled=True)
        assert a.dtype == b.dtype and np.array_equal(a, b)
        assert (np.diff(b, axis=1) > 0).all()
