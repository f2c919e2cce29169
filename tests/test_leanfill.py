"""The lean one-solve (fabric.leanfill, fabric.engine._lean_one_solve) against the adjacency path it skips.

The oracle is the engine's own one-solve path (column merge, index, capped windows), reached by turning the
lean path off; the rule for a speed-up is the same finish times to 1e-9 relative and the same congestion.
"""

from __future__ import annotations

import numpy as np
import pytest

from collectives import Collective, planner_for
from fabric import Router, compile_with_failures, to_problem
from fabric import engine as _engine
from fabric import leanfill
from fabric.congestion import max_link_utilization
from fabric.decompose import simulate_split
from fabric.engine import FlowProblem, simulate
from fabric.maxmin import maxmin_rates
from topologies import load_topology

RTOL = 1e-9


def _oracle(monkeypatch, f):
    """``f()`` with the lean path off (the adjacency one-solve), then ``f()`` with it on."""
    with monkeypatch.context() as m:
        m.setattr(_engine, "_lean_ok", lambda pr: False)
        old = f()
    return old, f()


def _close(a, b, rtol=RTOL):
    a, b = np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64)
    assert a.shape == b.shape
    assert np.array_equal(np.isfinite(a), np.isfinite(b))
    f = np.isfinite(a)
    np.testing.assert_allclose(b[f], a[f], rtol=rtol, atol=0.0)
    assert np.array_equal(a[~f], b[~f])


def _same_result(old, new):
    assert new.mode_used == old.mode_used == "one-solve"
    _close(old.finish_s, new.finish_s)
    _close(old.transfer_end_s, new.transfer_end_s)
    assert np.array_equal(old.start_s, new.start_s)
    _close(old.resource_bytes, new.resource_bytes, rtol=1e-12)
    _close(old.resource_busy_s, new.resource_busy_s)
    _close(old.makespan_s, new.makespan_s)
    _close(old.lower_bound_s, new.lower_bound_s, rtol=1e-12)


def _random_problem(rng, ties: bool):
    """Random one-solve problem: 1-5 hops, padding, repeated slots in a row, tied or spread capacities."""
    F = int(rng.integers(1, 300))
    h = int(rng.integers(1, 6))
    R = int(rng.integers(1, 40))
    res = rng.integers(-1, R, size=(F, h))
    if rng.random() < 0.3:
        res[:, -1] = res[:, 0]  # a row that names a slot twice
    if ties:
        cap = rng.choice([1.0, 2.0, 3.0, 4.0], size=R) * 1e9
    else:
        cap = rng.uniform(0.5, 4.0, size=R) * 1e9
    if rng.random() < 0.2:
        cap[rng.integers(0, R)] = np.inf
    size = float(rng.choice([1.0, 4096.0, 2.5e6, 1.0 / 3.0, 3 << 20]))
    kw = {}
    if rng.random() < 0.3:
        kw["latency_s"] = rng.uniform(0, 1e-5, size=F)
    if rng.random() < 0.3:
        kw["release_s"] = np.full(F, 2e-6)
    return FlowProblem(capacity_Bps=cap, res=res, size_bytes=np.full(F, size), **kw)


@pytest.mark.parametrize("ties", [True, False])
@pytest.mark.parametrize("max_rounds", [leanfill.LEAN_MAX_ROUNDS, 10 ** 6])
def test_random_problems_match_the_adjacency_path(monkeypatch, ties, max_rounds):
    rng = np.random.default_rng(11 if ties else 12)
    calls = []
    real = leanfill.lean_fill

    def spy(keys, cap):
        # 10 ** 6: the lean fill on every problem, however many levels
        out = real(keys, cap, max_rounds=max_rounds, min_level_share=0.5 if max_rounds < 10 ** 6 else 0.0)
        calls.append(out is not None)
        return out

    monkeypatch.setattr(_engine, "lean_fill", spy)
    for _ in range(150):
        p = _random_problem(rng, ties)
        old, new = _oracle(monkeypatch, lambda: simulate(p))
        _same_result(old, new)
    assert len(calls) == 150
    if max_rounds == leanfill.LEAN_MAX_ROUNDS:
        assert 10 <= sum(calls) < 150  # the lean path ran, and gave up on problems of more levels
    else:
        assert all(calls)


def test_lean_fill_gives_the_max_min_rates():
    rng = np.random.default_rng(5)
    for _ in range(200):
        p = _random_problem(rng, bool(rng.random() < 0.5))
        got = leanfill.lean_fill(p.res, p.capacity_Bps, max_rounds=10 ** 6, min_level_share=0.0)
        rate, min_rate, counts, rounds = got
        ref = maxmin_rates(p.capacity_Bps, p.res).rates_Bps
        _close(ref, rate)
        R = len(p.capacity_Bps)
        assert np.array_equal(counts, np.bincount(p.res.reshape(-1) + 1, minlength=R + 1)[1:])
        # the smallest rate of the flows on each resource
        want = np.full(R, np.inf)
        for f in range(len(rate)):
            for r in set(p.res[f].tolist()) - {-1}:
                want[r] = min(want[r], rate[f])
        _close(want, min_rate[1:])
        assert rounds >= 1 or not np.isfinite(rate).any()


def test_lean_fill_gives_up_after_max_rounds():
    # three links of different capacities, one flow each: three levels
    keys = np.array([[0], [1], [2]])
    cap = np.array([1.0, 2.0, 3.0])
    assert leanfill.lean_fill(keys, cap, max_rounds=2, min_level_share=0.0) is None
    assert leanfill.lean_fill(keys, cap, max_rounds=3) is None  # the first level holds 1 of 3 flows
    rate, _, _, rounds = leanfill.lean_fill(keys, cap, max_rounds=3, min_level_share=0.0)
    assert rate.tolist() == [1.0, 2.0, 3.0] and rounds == 3


def test_one_level_is_one_round():
    # 200 flows on 100 tied links (more than the adjacency path's 64-candidate window): one round
    res = np.stack([np.arange(200) % 100, 100 + np.arange(200) % 50], axis=1)
    cap = np.r_[np.ones(100), np.full(50, 2.0)]
    p = FlowProblem(capacity_Bps=cap, res=res, size_bytes=np.ones(200))
    r = simulate(p)
    assert r.rounds == 1 and r.finish_s.tolist() == [2.0] * 200


FT = {"hosts": "128", "radix": "16", "link": "400Gb/s"}


@pytest.mark.parametrize("policy,fail,degrade", [
    ("ecmp", (), ()),
    ("spray", (), ()),
    ("ecmp", ("spine 0",), ()),
    ("spray", ("spine 1",), ()),
    ("ecmp", (), ("leaf 1 spine 0=10%",)),
    ("spray", (), ("leaf 1 spine 0=10%",)),
])
def test_all_to_all_128_matches_with_the_same_congestion(monkeypatch, policy, fail, degrade):
    cf = compile_with_failures(load_topology("fat-tree", FT), fail, degrade)
    router = Router(cf)
    planner = planner_for(router, policy=policy, seed=1 if policy == "ecmp" else 0)
    op = Collective("all_to_all", tuple(range(cf.n_gpus)), 64 << 20)
    problem, used = to_problem(planner.plan(op).flows.relabel(op.label), router)
    old, new = _oracle(monkeypatch, lambda: simulate_split(problem))
    _same_result(old, new)
    a, b = max_link_utilization(router, old, used), max_link_utilization(router, new, used)
    assert type(a) is type(b)
    if isinstance(a, tuple):
        for x, y in zip(a, b):
            if isinstance(x, float):
                _close(x, y)
            else:
                assert x == y
    else:
        _close(a, b)


@pytest.mark.parametrize("policy", ["ecmp", "spray"])
def test_lean_fill_on_1024_matches_the_adjacency_fill(monkeypatch, policy):
    # N = 1,024 is above LEAN_MAX_ENTRIES (the engine keeps the adjacency path); the fill itself still agrees
    cf = compile_with_failures(load_topology("fat-tree", {"hosts": "1024", "radix": "64", "link": "400Gb/s"}),
                               (), ())
    router = Router(cf)
    planner = planner_for(router, policy=policy, seed=1 if policy == "ecmp" else 0)
    op = Collective("all_to_all", tuple(range(cf.n_gpus)), 64 << 20)
    problem, _ = to_problem(planner.plan(op).flows.relabel(op.label), router)
    assert problem.res.size > leanfill.LEAN_MAX_ENTRIES
    monkeypatch.setenv("FABRIC_EMU_KERNELS", "numpy")
    ref = simulate_split(problem)
    from fabric.problem import _Prob

    pr = _Prob(problem)
    pr.fold_weight()
    got = leanfill.lean_fill(pr.res, pr.cap, max_rounds=10 ** 6, min_level_share=0.0)
    rate = got[0]
    _close(ref.transfer_end_s, float(problem.size_bytes[0]) / rate)


def test_the_one_column_shortcut_agrees_with_the_pass_over_the_entries(monkeypatch):
    # all-to-all-like tables: column 0 (an up-link per source) without padding, tied with other columns or not
    rng = np.random.default_rng(3)
    seen = []
    real_rule = leanfill._column_in_level
    for _ in range(60):
        n = int(rng.integers(2, 20))
        src, dst = np.divmod(np.arange(n * n), n)
        keep = src != dst
        src, dst = src[keep], dst[keep]
        mid = rng.integers(0, 4, size=src.shape[0])
        res = np.stack([src, n + dst, 2 * n + mid], axis=1)
        if rng.random() < 0.3:
            res[rng.random(src.shape[0]) < 0.3, 2] = -1
        cap = np.r_[np.full(n, 1.0), np.full(n, float(rng.choice([1.0, 2.0]))), rng.choice([1.0, 1e3], size=4)]
        with monkeypatch.context() as m:
            m.setattr(leanfill, "_column_in_level", lambda C, level: seen.append(real_rule(C, level)) or seen[-1])
            real = leanfill.lean_fill(res, cap, max_rounds=10 ** 6, min_level_share=0.0)
        with monkeypatch.context() as m:
            m.setattr(leanfill, "_column_in_level", lambda C, level: False)
            ref = leanfill.lean_fill(res, cap, max_rounds=10 ** 6, min_level_share=0.0)
        for a, b in zip(ref[:3], real[:3]):
            assert np.array_equal(a, b)
        ref_mm = maxmin_rates(cap, res).rates_Bps
        _close(ref_mm, real[0])
    assert 10 <= sum(seen) < len(seen)  # the shortcut fired on some first levels and not on others

