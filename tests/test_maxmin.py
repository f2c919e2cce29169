"""Tests of fabric.maxmin: closed forms, optimality conditions, a brute-force reference."""

from __future__ import annotations

import math

import numpy as np
from synthetic import leaf_spine
import pytest
from scipy.stats import norm

from fabric.maxmin import MaxMinResult, maxmin_rates, maxmin_refill
from topologies.errors import FlowError

# --------------------------------------------------------------------------- independent reference


def ref_maxmin(cap, res, weight=None, mult=None, active=None):
    """Plain-Python progressive filling, written for obviousness, not speed."""
    F = len(res)
    coef = []  # per flow: {resource: a_lf}
    for f in range(F):
        d = {}
        for j, l in enumerate(res[f]):
            l = int(l)
            if l < 0 or math.isinf(cap[l]):
                continue
            w = 1.0 if weight is None else float(weight[f][j])
            m = 1.0 if mult is None else float(mult[f])
            d[l] = d.get(l, 0.0) + w * m
        coef.append(d)
    act = [True] * F if active is None else [bool(a) for a in active]
    rate = [0.0] * F
    frozen = [not a for a in act]
    for f in range(F):
        if act[f] and not coef[f]:
            rate[f] = math.inf
            frozen[f] = True
    rem = [float(c) for c in cap]
    while not all(frozen):
        share = {}
        for l in range(len(cap)):
            s = sum(coef[f][l] for f in range(F) if not frozen[f] and l in coef[f])
            if s > 0:
                share[l] = rem[l] / s
        smin = min(share.values())
        bott = [l for l, s in share.items() if s <= smin * (1 + 1e-12)]
        newly = [f for f in range(F) if not frozen[f] and any(l in coef[f] for l in bott)]
        for f in newly:
            rate[f] = smin
            frozen[f] = True
            for l, a in coef[f].items():
                rem[l] -= a * smin
    return np.array(rate)


def check_maxmin(cap, res, weight, mult, active, rates, rtol=1e-9):
    """Feasibility and the bottleneck condition."""
    F, h = res.shape
    w = np.ones(res.shape) if weight is None else weight
    m = np.ones(F) if mult is None else mult
    act = np.ones(F, bool) if active is None else active
    assert np.all(rates[~act] == 0)
    load = np.zeros(len(cap))
    for f in np.flatnonzero(act):
        if math.isinf(rates[f]):
            assert all(l < 0 or math.isinf(cap[l]) for l in res[f])
            continue
        for j in range(h):
            if res[f, j] >= 0:
                load[res[f, j]] += m[f] * w[f, j] * rates[f]
    fin = np.isfinite(cap)
    assert np.all(load[fin] <= cap[fin] * (1 + rtol) + 1e-12)
    sat = fin & (load >= cap * (1 - 1e-7))
    maxrate = np.zeros(len(cap))
    for f in np.flatnonzero(act):
        for l in res[f]:
            if l >= 0:
                maxrate[l] = max(maxrate[l], rates[f])
    for f in np.flatnonzero(act):
        if math.isinf(rates[f]):
            continue
        ok = any(l >= 0 and sat[l] and rates[f] >= maxrate[l] * (1 - 1e-7) for l in res[f])
        assert ok, f"flow {f} has no bottleneck"


def random_instance(rng, weighted, with_mult, with_active):
    R = int(rng.integers(2, 9))
    F = int(rng.integers(1, 16))
    h = int(rng.integers(1, 4))
    cap = rng.uniform(0.5, 10.0, R).round(2)
    if rng.random() < 0.2:
        cap[rng.integers(R)] = np.inf
    res = rng.integers(-1, R, (F, h))
    res[:, 0] = rng.integers(0, R, F)
    weight = rng.choice([0.25, 0.5, 1.0], (F, h)) if weighted else None
    mult = rng.integers(1, 4, F).astype(float) if with_mult else None
    active = rng.random(F) < 0.8 if with_active else None
    return cap, res, weight, mult, active


# --------------------------------------------------------------------------- closed forms


@pytest.mark.parametrize("n", [1, 2, 7, 100])
def test_n_flows_on_one_link_get_c_over_n(n):
    r = maxmin_rates(np.array([12.0]), np.zeros((n, 1), dtype=np.int32))
    assert isinstance(r, MaxMinResult)
    np.testing.assert_allclose(r.rates_Bps, 12.0 / n, rtol=1e-15)
    assert (r.bottleneck == 0).all()


def test_classic_multilink_example():
    # link a (10): flows A, B, C; link b (4): C, D; link c (3): D, E.
    # Filling: c saturates at 1.5 (D, E), then b at 2.5 (C), then a at 3.75 (A, B).
    cap = np.array([10.0, 4.0, 3.0])
    res = np.array([[0, -1], [0, -1], [0, 1], [1, 2], [2, -1]])
    r = maxmin_rates(cap, res)
    np.testing.assert_allclose(r.rates_Bps, [3.75, 3.75, 2.5, 1.5, 1.5], rtol=1e-14)
    assert r.bottleneck.tolist() == [0, 0, 1, 2, 2]


def test_bertsekas_gallager_line_network():
    # Data Networks, Sec. 6.5 style: a long session over all links of a line,
    # plus one short session per link; capacities 1, 1, 2.
    cap = np.array([1.0, 1.0, 2.0])
    res = np.array([[0, 1, 2], [0, -1, -1], [1, -1, -1], [2, -1, -1]])
    r = maxmin_rates(cap, res)
    np.testing.assert_allclose(r.rates_Bps, [0.5, 0.5, 0.5, 1.5], rtol=1e-14)


def test_flow_alone_gets_its_bottleneck_capacity():
    cap = np.array([5.0, 2.0, 7.0, np.inf])
    r = maxmin_rates(cap, np.array([[0, 1, 2, 3]]))
    assert r.rates_Bps.tolist() == [2.0]
    assert r.bottleneck.tolist() == [1]


def test_unconstrained_and_inactive_flows():
    cap = np.array([1.0, np.inf])
    res = np.array([[1, -1], [-1, -1], [0, 1], [0, -1]])
    r = maxmin_rates(cap, res, active=np.array([True, True, True, False]))
    assert r.rates_Bps.tolist() == [np.inf, np.inf, 1.0, 0.0]
    assert r.bottleneck.tolist() == [-1, -1, 0, -1]


@pytest.mark.parametrize("k", [2, 4, 8])
def test_sprayed_flow_over_k_parallel_paths(k):
    # a flow split 1/k over k parallel links of capacity c: rate k*c; with a
    # competing single-path flow on link 0 both are limited by link 0.
    c = 3.0
    cap = np.full(k, c)
    res = np.arange(k)[None, :]
    w = np.full((1, k), 1.0 / k)
    r = maxmin_rates(cap, res, w)
    np.testing.assert_allclose(r.rates_Bps, [k * c], rtol=1e-14)
    res2 = np.vstack([res, np.r_[0, np.full(k - 1, -1)]])
    w2 = np.vstack([w, np.r_[1.0, np.ones(k - 1)]])
    r2 = maxmin_rates(cap, res2, w2)
    # link 0: x/k + y = c with x = y (same level) -> x = y = c k / (k + 1)
    np.testing.assert_allclose(r2.rates_Bps, [c * k / (k + 1)] * 2, rtol=1e-14)


def test_multiplicity_equals_duplicating_the_flow():
    rng = np.random.default_rng(7)
    for _ in range(50):
        cap, res, weight, _, _ = random_instance(rng, weighted=rng.random() < 0.5, with_mult=False,
                                                 with_active=False)
        mult = rng.integers(1, 4, len(res))
        rep = np.repeat(np.arange(len(res)), mult)
        a = maxmin_rates(cap, res, weight, multiplicity=mult).rates_Bps
        b = maxmin_rates(cap, res[rep], None if weight is None else weight[rep]).rates_Bps
        np.testing.assert_allclose(a[rep], b, rtol=1e-12)


def test_repeated_resource_in_a_row_counts_twice():
    # a flow crossing link 0 twice puts 2x its rate on it
    r = maxmin_rates(np.array([6.0]), np.array([[0, 0], [0, -1]]))
    np.testing.assert_allclose(r.rates_Bps, [2.0, 2.0])


# --------------------------------------------------------------------------- random instances


@pytest.mark.parametrize("weighted", [False, True])
def test_random_instances_against_reference(weighted):
    rng = np.random.default_rng(1234 + weighted)
    for i in range(150):
        cap, res, weight, mult, active = random_instance(rng, weighted, rng.random() < 0.3, rng.random() < 0.5)
        r = maxmin_rates(cap, res, weight, multiplicity=mult, active=active)
        ref = ref_maxmin(cap, res, weight, mult, active)
        np.testing.assert_allclose(r.rates_Bps, ref, rtol=1e-9, err_msg=f"instance {i}")
        check_maxmin(cap, res, weight, mult, active, r.rates_Bps)
        # determinism: bit for bit
        r2 = maxmin_rates(cap, res, weight, multiplicity=mult, active=active)
        assert np.array_equal(r.rates_Bps, r2.rates_Bps) and np.array_equal(r.bottleneck, r2.bottleneck)


def test_many_levels_batched_rounds_exact():
    # hundreds of distinct levels, chains of shared flows: exercises multi-candidate rounds
    rng = np.random.default_rng(5)
    R, F = 60, 900
    cap = rng.uniform(1.0, 1.5, R)
    res = rng.integers(0, R, (F, 3))
    r = maxmin_rates(cap, res)
    check_maxmin(cap, res, None, None, None, r.rates_Bps)
    np.testing.assert_allclose(r.rates_Bps, ref_maxmin(cap, res), rtol=1e-9)


@pytest.mark.parametrize("weighted", [False, True])
def test_ordered_rounds_with_shared_flows_are_exact(weighted):
    # close levels and flows shared between the candidates of a round: each round freezes the ordered
    # prefix of candidates at their updated shares, plus the later ones that no earlier flow touches
    rng = np.random.default_rng(21 + weighted)
    for _ in range(8):
        R, F = 30, 150
        cap = rng.uniform(1.0, 1.1, R)
        res = rng.integers(-1, R, (F, 4))
        res[:, 0] = rng.integers(0, R, F)
        weight = rng.choice([0.25, 0.5, 1.0], (F, 4)) if weighted else None
        r = maxmin_rates(cap, res, weight)
        np.testing.assert_allclose(r.rates_Bps, ref_maxmin(cap, res, weight), rtol=1e-9)
        check_maxmin(cap, res, weight, None, None, r.rates_Bps)


def test_rounds_batch_many_levels():
    # ECMP all-to-all, N = 512: about a thousand distinct bottleneck levels in a few dozen rounds
    cap, res = leaf_spine(512)
    r = maxmin_rates(cap, res)
    levels = len(np.unique(r.rates_Bps))
    assert levels > 500
    assert r.rounds < levels / 5


def test_refill_matches_cold_solve():
    rng = np.random.default_rng(11)
    for _ in range(100):
        cap, res, weight, mult, _ = random_instance(rng, rng.random() < 0.5, rng.random() < 0.3, False)
        r0 = maxmin_rates(cap, res, weight, multiplicity=mult).rates_Bps
        fin = r0[np.isfinite(r0)]
        if fin.size < 2:
            continue
        x = np.quantile(fin, 0.6)
        gone = (r0 >= x) & (rng.random(len(r0)) < 0.5) & np.isfinite(r0)
        if not gone.any():
            continue
        act = ~gone
        thr = r0[gone].min()
        warm = maxmin_refill(cap, res, r0, thr, weight, multiplicity=mult, active=act).rates_Bps
        cold = maxmin_rates(cap, res, weight, multiplicity=mult, active=act).rates_Bps
        np.testing.assert_allclose(warm, cold, rtol=1e-9)


# --------------------------------------------------------------------------- errors


def test_errors_name_the_field():
    cap = np.array([1.0, 2.0])
    with pytest.raises(FlowError, match=r"res\[1, 0\]: 5 is out of range"):
        maxmin_rates(cap, np.array([[0], [5]]))
    with pytest.raises(FlowError, match=r"capacity_Bps\[1\]"):
        maxmin_rates(np.array([1.0, 0.0]), np.array([[0]]))
    with pytest.raises(FlowError, match=r"weight\[0, 1\]"):
        maxmin_rates(cap, np.array([[0, 1]]), np.array([[1.0, -1.0]]))
    with pytest.raises(FlowError, match=r"multiplicity\[0\]"):
        maxmin_rates(cap, np.array([[0]]), multiplicity=np.array([np.nan]))
    with pytest.raises(FlowError, match="active"):
        maxmin_rates(cap, np.array([[0]]), active=np.array([1]))


# --------------------------------------------------------------------------- leaf/spine all-to-all


def test_spray_alltoall_gets_exact_fair_share():
    n = 256
    cap, res = leaf_spine(n, spray=True)
    r = maxmin_rates(cap, res)
    np.testing.assert_allclose(r.rates_Bps, 1.0 / (n - 1), rtol=1e-12)
    assert (1.0 / r.rates_Bps).max() == pytest.approx(n - 1, rel=1e-12)


@pytest.mark.parametrize("n", [512])
def test_ecmp_alltoall_slowdown_matches_balls_into_bins(n):
    hpl = spines = 32
    L = n // hpl
    slow = []
    for seed in range(3):
        cap, res = leaf_spine(n, seed=seed)
        r = maxmin_rates(cap, res)
        check_sample = np.random.default_rng(seed).choice(len(res), 2000, replace=False)
        assert np.all(r.rates_Bps[check_sample] > 0)
        T = (1.0 / r.rates_Bps).max()  # equal sizes of 1 byte, c = 1
        slow.append(T / (n - 1))
    mu = n - hpl  # expected flows per leaf uplink: H (N - H) / S
    nlinks = 2 * L * spines
    pred = (mu + norm.ppf(1 - 1 / nlinks) * math.sqrt(mu * (1 - 1 / spines))) / (n - 1)
    assert np.mean(slow) == pytest.approx(pred, rel=0.03)
    assert all(s > 1.0 for s in slow)


@pytest.mark.parametrize("weighted", [False, True])
def test_fill_keeps_each_resources_smallest_rate(monkeypatch, weighted):
    from fabric.fill import ALIVE, build_index, coef_sums, fill
    monkeypatch.setenv("FABRIC_EMU_KERNELS", "numpy")  # the numpy rounds keep the minima
    rng = np.random.default_rng(31 + weighted)
    multi = 0
    for trial in range(120):
        if trial % 3:
            cap, res, weight, mult, _ = random_instance(rng, weighted, trial % 2 == 0, False)
        else:  # many flows and levels: windows of several candidates at different shares
            R, F = 40, 300
            cap = rng.uniform(1.0, 3.0, R)
            res = rng.integers(-1, R, (F, 3))
            res[:, 0] = rng.integers(0, R, F)
            weight = rng.choice([0.5, 1.0], (F, 3)) if weighted else None
            mult = None
        ix = build_index(res, weight, mult, len(cap), None)
        state = np.full(ix.size, ALIVE, dtype=np.uint8)
        mr = np.full(len(cap) + 1, np.inf)
        out = fill(ix, cap, state, coef_sums(ix, None), min_rate=mr)
        assert out.min_rate is mr
        rates = out.rates()
        ref = np.full(len(cap) + 1, np.inf)
        for f in range(ix.size):
            if out.bneck[f] == 0:
                continue  # not filled (unconstrained): no rate from the fill
            for l in ix.res[f]:
                if l >= 0:
                    ref[l + 1] = min(ref[l + 1], rates[f])
        assert np.array_equal(mr[1:], ref[1:])
        multi += len(np.unique(rates[np.isfinite(rates)])) > 1
    assert multi > 20
