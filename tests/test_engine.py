"""Tests of fabric.engine: hand-computed schedules, a brute-force event loop, the epoch bound, errors."""

from __future__ import annotations

import math

import numpy as np
import pytest

from fabric.engine import FlowProblem, FlowResult, estimate_memory_bytes, simulate
from topologies.errors import FlowError, ProblemTooLargeError

# --------------------------------------------------------------------------- independent references


def ref_rates(cap, res, active):
    """Plain-Python progressive filling (unweighted), independent of fabric.maxmin."""
    F = len(res)
    links = []  # per flow: {link: number of times the flow crosses it}
    for f in range(F):
        d = {}
        for l in res[f]:
            if l >= 0:
                d[int(l)] = d.get(int(l), 0) + 1
        links.append(d)
    rate = [0.0] * F
    frozen = [not a for a in active]
    rem = [float(c) for c in cap]
    while not all(frozen):
        share = {}
        for l in range(len(cap)):
            n = sum(links[f].get(l, 0) for f in range(F) if not frozen[f])
            if n:
                share[l] = rem[l] / n
        s = min(share.values())
        bott = {l for l, v in share.items() if v <= s * (1 + 1e-12)}
        for f in range(F):
            if not frozen[f] and bott.intersection(links[f]):
                rate[f] = s
                frozen[f] = True
                for l, k in links[f].items():
                    rem[l] -= k * s
    return rate


def ref_schedule(cap, res, size, release):
    """Brute-force fluid event loop: re-solve after every completion or arrival."""
    F = len(size)
    rem = [float(s) for s in size]
    end = [None] * F
    for f in range(F):
        if size[f] == 0:
            end[f] = float(release[f])
    t = 0.0
    while any(e is None for e in end):
        active = [end[f] is None and release[f] <= t for f in range(F)]
        future = [release[f] for f in range(F) if end[f] is None and release[f] > t]
        if not any(active):
            t = min(future)
            continue
        r = ref_rates(cap, res, active)
        dt = min(rem[f] / r[f] for f in range(F) if active[f])
        if future:
            dt = min(dt, min(future) - t)
        for f in range(F):
            if active[f]:
                rem[f] -= r[f] * dt
        t += dt
        for f in range(F):
            if active[f] and rem[f] <= 1e-12 * size[f]:
                end[f] = t
    return np.array(end)


def problem(cap, res, size, **kw) -> FlowProblem:
    return FlowProblem(capacity_Bps=np.asarray(cap, float), res=np.asarray(res), size_bytes=np.asarray(size, float),
                       **kw)


# --------------------------------------------------------------------------- hand-computed cases


def test_two_flows_of_different_sizes_on_a_link():
    C, s1, s2 = 4.0, 2.0, 6.0
    r = simulate(problem([C], [[0], [0]], [s1, s2]), mode="exact")
    assert isinstance(r, FlowResult) and r.exact and r.mode_used == "exact"
    np.testing.assert_allclose(r.finish_s, [2 * s1 / C, (s1 + s2) / C], rtol=1e-14)
    assert r.makespan_s == pytest.approx((s1 + s2) / C, rel=1e-14)
    np.testing.assert_allclose(r.resource_bytes, [s1 + s2])
    np.testing.assert_allclose(r.resource_busy_s, [(s1 + s2) / C], rtol=1e-14)
    assert r.lower_bound_s == pytest.approx((s1 + s2) / C)


def test_staggered_release_and_latency():
    # f0 alone from 0 to 0.5 (rate 1), then shares link 0 with f1 (rate 1/2 each).
    p = problem([1.0], [[0], [0]], [1.0, 2.0], release_s=np.array([0.0, 0.5]), latency_s=np.array([0.1, 0.2]))
    r = simulate(p, mode="exact")
    np.testing.assert_allclose(r.start_s, [0.0, 0.5])
    np.testing.assert_allclose(r.transfer_end_s, [1.5, 3.0], rtol=1e-14)
    np.testing.assert_allclose(r.finish_s, [1.6, 3.2], rtol=1e-14)


def test_phases_with_dependencies_and_delays():
    # phase 0: f0 (link 0) and f1 (links 0, 1); phase 1 (after phase 0 + 0.25 s): f2 on link 1.
    p = problem([1.0, 2.0], [[0, -1], [0, 1], [1, -1]], [1.0, 2.0, 1.0],
                release_s=np.array([0.0, 0.5, 0.0]), latency_s=np.array([0.1, 0.0, 0.0]),
                phase=np.array([0, 0, 1]), phase_deps=(np.array([0, 0, 1]), np.array([0])),
                phase_delay_s=np.array([0.0, 0.25]))
    for mode in ("exact", "auto"):
        r = simulate(p, mode=mode, time_series=True)
        np.testing.assert_allclose(r.transfer_end_s, [1.5, 3.0, 3.75], rtol=1e-14)
        np.testing.assert_allclose(r.finish_s, [1.6, 3.0, 3.75], rtol=1e-14)
        np.testing.assert_allclose(r.start_s, [0.0, 0.5, 3.25])
        np.testing.assert_allclose(r.resource_busy_s, [3.0, 3.0], rtol=1e-14)
        assert r.makespan_s == pytest.approx(3.75)
        assert r.series_utilization.shape == (len(r.series_time_s) - 1, 2)
        np.testing.assert_allclose(r.resource_peak_utilization, [1.0, 1.0])


def test_latency_of_the_last_flow_delays_the_dependent_phase():
    p = problem([1.0], [[0], [0]], [1.0, 1.0], latency_s=np.array([0.0, 5.0]), phase=np.array([0, 1]),
                phase_deps=(np.array([0, 0, 1]), np.array([0])))
    r = simulate(p, mode="exact")
    np.testing.assert_allclose(r.start_s, [0.0, 1.0])
    np.testing.assert_allclose(r.finish_s, [1.0, 7.0])


def test_zero_size_flow_finishes_at_start_plus_latency_and_empty_phases():
    # phases 0 -> 1 (empty, delay 2) -> 2
    p = problem([1.0], [[0], [0]], [0.0, 1.0], latency_s=np.array([0.5, 0.0]), phase=np.array([0, 2]),
                phase_deps=(np.array([0, 0, 1, 2]), np.array([0, 1])), phase_delay_s=np.array([0.0, 2.0, 0.0]))
    r = simulate(p, mode="exact")
    np.testing.assert_allclose(r.finish_s, [0.5, 3.5])
    np.testing.assert_allclose(r.start_s, [0.0, 2.5])


def test_multiplicity_equals_duplicated_flows_in_the_event_loop():
    rng = np.random.default_rng(3)
    cap = rng.uniform(1, 3, 5)
    res = rng.integers(0, 5, (12, 2))
    size = rng.uniform(0.5, 2, 12)
    m = rng.integers(1, 4, 12)
    rep = np.repeat(np.arange(12), m)
    a = simulate(FlowProblem(capacity_Bps=cap, res=res, size_bytes=size, multiplicity=m.astype(float)), mode="exact")
    b = simulate(problem(cap, res[rep], size[rep]), mode="exact")
    np.testing.assert_allclose(a.finish_s[rep], b.finish_s, rtol=1e-9)
    np.testing.assert_allclose(a.resource_bytes, b.resource_bytes, rtol=1e-12)


# --------------------------------------------------------------------------- exact mode vs references


@pytest.mark.parametrize("seed", range(12))
def test_exact_mode_matches_brute_force(seed):
    rng = np.random.default_rng(seed)
    R, F = int(rng.integers(2, 6)), int(rng.integers(1, 10))
    cap = rng.uniform(1.0, 4.0, R)
    res = rng.integers(-1, R, (F, 3))
    res[:, 0] = rng.integers(0, R, F)
    size = rng.uniform(0.0, 3.0, F) * (rng.random(F) < 0.9)
    release = rng.uniform(0, 2, F) * (rng.random(F) < 0.5)
    r = simulate(problem(cap, res, size, release_s=release), mode="exact")
    ref = ref_schedule(cap, res, size, release)
    np.testing.assert_allclose(r.transfer_end_s, ref, rtol=1e-9, atol=1e-12)
    r2 = simulate(problem(cap, res, size, release_s=release), mode="exact")
    assert np.array_equal(r.finish_s, r2.finish_s)  # deterministic


@pytest.mark.parametrize("seed", range(6))
def test_one_solve_shortcut_equals_event_loop(seed):
    rng = np.random.default_rng(100 + seed)
    R, F = 30, 400
    cap = rng.uniform(1.0, 2.0, R)
    res = rng.integers(-1, R, (F, 4))
    res[:, 0] = rng.integers(0, R, F)
    weight = rng.choice([0.5, 1.0], (F, 4)) if seed % 2 else None
    p = FlowProblem(capacity_Bps=cap, res=res, weight=weight, size_bytes=np.full(F, 3.0),
                    latency_s=rng.uniform(0, 0.1, F))
    fast = simulate(p)
    assert fast.mode_used == "one-solve" and fast.solves == 1 and fast.exact
    full = simulate(p, mode="exact")
    assert full.events > 1
    np.testing.assert_allclose(fast.finish_s, full.finish_s, rtol=1e-12)
    np.testing.assert_allclose(fast.resource_busy_s, full.resource_busy_s, rtol=1e-12)


# --------------------------------------------------------------------------- leaf/spine all-to-all


def leaf_spine(n, hpl, spines, seed=0, spray=False):
    L = n // hpl
    i, j = np.divmod(np.arange(n * n), n)
    keep = i != j
    i, j = i[keep], j[keep]
    a, b = i // hpl, j // hpl
    res = np.full((i.size, 4), -1, dtype=np.int64)
    res[:, 0] = i
    res[:, 3] = n + j
    if spray:
        cap = np.r_[np.ones(2 * n), np.full(2 * L, float(spines))]
        res[:, 1] = 2 * n + a
        res[:, 2] = 2 * n + L + b
    else:
        cap = np.ones(2 * n + 2 * L * spines)
        k = (i * 7 + j * 13 + seed * 31 + (i * j) % 5) % spines
        res[:, 1] = 2 * n + a * spines + k
        res[:, 2] = 2 * n + L * spines + k * L + b
    same = a == b
    res[same, 1] = n + j[same]
    res[same, 2:] = -1
    return cap * 50e9, res


def test_spray_alltoall_finishes_at_the_ideal_time():
    n, size = 256, 1 << 20
    cap, res = leaf_spine(n, 32, 32, spray=True)
    r = simulate(problem(cap, res, np.full(len(res), float(size))))
    assert r.mode_used == "one-solve"
    assert r.makespan_s == pytest.approx((n - 1) * size / 50e9, rel=1e-12)
    assert r.makespan_s == pytest.approx(r.lower_bound_s, rel=1e-12)
    np.testing.assert_allclose(r.resource_busy_s[:2 * n], r.makespan_s, rtol=1e-12)


def skewed_alltoall(n, hpl, spines, kind, seed):
    cap, res = leaf_spine(n, hpl, spines, seed=seed)
    rng = np.random.default_rng(seed)
    F = len(res)
    if kind == "lognormal":
        size = rng.lognormal(0, 1, F)
    else:
        dst = res[:, 3].copy()
        dst[dst < 0] = res[dst < 0, 1]
        pop = rng.lognormal(0, 0.5, 2 * n)
        size = pop[dst] * rng.lognormal(0, 0.3, F)
    return problem(cap, res, size * 1e6)


# --------------------------------------------------------------------------- epoch mode bound


@pytest.mark.parametrize("seed", range(10))
def test_epoch_single_bottleneck_within_proven_bound(seed):
    # incast: every flow crosses link 0; private links are wider, so link 0 is
    # saturated at every solve while it carries flows (persistent bottleneck).
    rng = np.random.default_rng(seed)
    F = int(rng.integers(5, 60))
    eps = float(rng.choice([0.01, 0.05, 0.2]))
    cap = np.r_[10.0, rng.uniform(5.0, 30.0, F)]
    res = np.c_[np.zeros(F, int), 1 + np.arange(F)]
    size = rng.lognormal(0, 1.5, F)
    p = problem(cap, res, size)
    ex = simulate(p, mode="exact")
    ep = simulate(p, mode="epoch", epsilon=eps)
    assert not ep.exact and ep.mode_used == "epoch" and ep.epsilon == eps
    assert ep.makespan_s <= ex.makespan_s / (1 - eps) * (1 + 1e-12)
    assert ep.makespan_s >= ex.makespan_s * (1 - 1e-12)
    assert ep.makespan_s >= ep.lower_bound_s * (1 - 1e-12)


@pytest.mark.parametrize("kind,seed", [("lognormal", 0), ("lognormal", 1), ("moe", 2), ("moe", 3)])
def test_epoch_skewed_alltoall_within_stated_bound(kind, seed):
    eps = 0.02
    p = skewed_alltoall(32, 8, 4, kind, seed)
    ex = simulate(p, mode="exact")
    ep = simulate(p, mode="epoch", epsilon=eps, time_series=True)
    assert ep.events < ex.events / 3
    # stated (measured) bound: makespan within eps / (1 - eps), one-sided; mean FCT within eps
    assert ex.makespan_s * (1 - 1e-9) <= ep.makespan_s <= ex.makespan_s / (1 - eps) * (1 + 1e-9)
    assert abs(ep.finish_s.mean() / ex.finish_s.mean() - 1) <= eps
    # proven budget: on every resource, capacity idled while saturated <= eps * busy time
    # (counted over the intervals after which the resource still carries traffic)
    dt = np.diff(ep.series_time_s)
    u = ep.series_utilization.astype(float)
    still = np.zeros_like(ep.series_saturated)
    still[:-1] = u[1:] > 0
    idle = ((1.0 - u) * (ep.series_saturated & still) * dt[:, None]).sum(axis=0)
    assert np.all(idle <= eps * ep.resource_busy_s * (1 + 1e-6) + 1e-15)


def test_auto_picks_epoch_for_large_problems_and_exact_for_small():
    p = skewed_alltoall(32, 8, 4, "lognormal", 0)
    assert simulate(p).mode_used == "exact"
    big = skewed_alltoall(128, 32, 32, "lognormal", 0)
    r = simulate(big, epsilon=0.05)
    assert r.mode_used == "epoch" and not r.exact
    assert r.makespan_s >= r.lower_bound_s


# --------------------------------------------------------------------------- errors


def test_errors():
    ok = dict(cap=[1.0], res=[[0], [0]])
    with pytest.raises(FlowError, match=r"size_bytes\[1\]: -5.0 is negative; sizes must be finite and >= 0"):
        simulate(problem(ok["cap"], ok["res"], [1.0, -5.0]))
    with pytest.raises(FlowError, match=r"size_bytes\[0\]: nan is not finite"):
        simulate(problem(ok["cap"], ok["res"], [np.nan, 1.0]))
    with pytest.raises(FlowError, match=r"res\[1, 0\]: 3 is out of range"):
        simulate(problem(ok["cap"], [[0], [3]], [1.0, 1.0]))
    with pytest.raises(FlowError, match=r"release_s\[0\]"):
        simulate(problem(ok["cap"], ok["res"], [1.0, 1.0], release_s=np.array([-1.0, 0.0])))
    with pytest.raises(FlowError, match=r"dependency cycle 1 -> 2 -> 1"):
        simulate(problem(ok["cap"], ok["res"], [1.0, 1.0], phase=np.array([0, 1]),
                         phase_deps=(np.array([0, 0, 1, 2]), np.array([2, 1]))))
    with pytest.raises(FlowError, match="mode"):
        simulate(problem(ok["cap"], ok["res"], [1.0, 1.0]), mode="fast")
    p = problem(np.ones(8), np.zeros((100_000, 4), dtype=np.int32), np.ones(100_000))
    with pytest.raises(ProblemTooLargeError, match=r"needs about .* GiB .*multiplicity.*fewer ranks"):
        simulate(p, memory_limit_bytes=1 << 20)
    assert estimate_memory_bytes(p) > 1 << 20
