"""Epoch mode drops a hop column whose constraints another column implies (per-resource weights differ).

The router lists a host link (weight 1) beside every NIC port (weight 1/wire efficiency): the same flows
on both, so only the port's ``c / w`` can bind. Epoch mode keeps the weights per entry, where the equal-
weight column merge does not apply; the dominated-column merge (``fabric.reductions._dominated_column``)
drops the host columns. It changes which slots the fill sees, not the max-min rates: finish times equal to
1e-12 relative, the same epochs, the same per-resource bytes (docs/flow-engine.md §3).
"""

from __future__ import annotations

import numpy as np
import pytest

from fabric import reductions
from fabric.engine import FlowProblem, simulate
from fabric.problem import _Prob


def _moe_problem(hosts: int, radix: int, seed: int) -> FlowProblem:
    """The CLI's skewed MoE dispatch problem (fat-tree, 400 Gb/s) through the library."""
    from collectives import Collective, planner_for
    from collectives.moe import TokenRouting
    from fabric import Router, compile_with_failures, to_problem
    from topologies import load_topology

    cf = compile_with_failures(load_topology("fat-tree", {"hosts": str(hosts), "radix": str(radix),
                                                          "link": "400Gb/s"}), (), ())
    router = Router(cf)
    planner = planner_for(router, policy="auto", seed=seed)
    tr = TokenRouting("skewed", experts=hosts, seed=seed)
    op = Collective("moe_dispatch", tuple(range(cf.n_gpus)), 0, options={"moe": tr})
    problem, _ = to_problem(planner.plan(op).flows.relabel(op.label), router)
    return problem


@pytest.fixture(scope="module")
def moe64():
    return _moe_problem(64, 16, 1)


def test_epoch_mode_drops_the_dominated_host_columns(moe64):
    pr = _Prob(moe64)
    assert moe64.res.shape[1] == 6 and moe64.resource_weight is not None
    pr.unfold()  # what epoch mode solves on: per-entry weights, the host links' 1 beside the ports' 1/eff
    red = reductions._reduce_columns(pr)
    assert red.weighted and red.res.shape[1] == 4  # (old code: nothing merged, six columns)
    dropped = np.flatnonzero(~red.binding)
    assert dropped.size and (red.rep[dropped] != dropped).all()
    # the dropped resource's c / w is above its carrier's
    w = pr.weight
    for j in (0, 5):
        ok = pr.res[:, j] >= 0
        assert np.isin(pr.res[ok, j], dropped).all()
    u = red.rep[dropped]
    fa = np.ones(pr.R)
    for j in range(6):
        ok = pr.res[:, j] >= 0
        fa[pr.res[ok, j]] = w[ok, j]
    assert (pr.cap[dropped] / fa[dropped] > pr.cap[u] / fa[u]).all()
    np.testing.assert_allclose(red.wscale[dropped], fa[dropped] / fa[u], rtol=0)


@pytest.mark.parametrize("time_series", [False, True])
def test_dominated_merge_keeps_the_epoch_schedule(moe64, monkeypatch, time_series):
    new = simulate(moe64, mode="epoch", time_series=time_series)
    monkeypatch.setattr(reductions, "_dominated_column", lambda *a: None)
    old = simulate(moe64, mode="epoch", time_series=time_series)
    assert (new.events, new.solves) == (old.events, old.solves)
    np.testing.assert_allclose(new.finish_s, old.finish_s, rtol=1e-12)
    assert new.makespan_s == pytest.approx(old.makespan_s, rel=1e-12)
    np.testing.assert_array_equal(new.resource_bytes, old.resource_bytes)
    assert new.lower_bound_s == old.lower_bound_s
    np.testing.assert_allclose(new.resource_busy_s, old.resource_busy_s, rtol=1e-12)
    if time_series:
        np.testing.assert_allclose(new.resource_peak_utilization, old.resource_peak_utilization, rtol=1e-9)
        np.testing.assert_array_equal(new.series_saturated, old.series_saturated)
        np.testing.assert_allclose(new.series_utilization, old.series_utilization, rtol=1e-5, atol=1e-6)


def test_no_merge_without_strict_dominance():
    # column 1 repeats column 0 with another weight; on one pair the copy's c / w is the smaller: no column
    # dominates, nothing is dropped (and on equal c / w neither: the tie is not strict)
    rng = np.random.default_rng(2)
    F, R0 = 200, 6
    c0 = rng.integers(0, R0, F)
    res = np.c_[c0, c0 + R0, rng.integers(2 * R0, 3 * R0, F)]
    w = np.where(res >= 0, 1.0, 0.0)
    w[:, 1] = 1.25
    cap = np.full(3 * R0, 10.0)
    cap[R0] = 20.0  # c / w of resource R0 (the copy of 0): 16 > 10, the others 8 < 10
    pr = _Prob(FlowProblem(capacity_Bps=cap, res=res, weight=w, size_bytes=rng.lognormal(0, 1, F)))
    assert reductions._reduce_columns(pr).res.shape[1] == 3
    cap[R0] = 12.5  # c / w = 10 on that pair: equal, not dominated
    pr = _Prob(FlowProblem(capacity_Bps=cap, res=res, weight=w, size_bytes=np.ones(F)))
    assert reductions._reduce_columns(pr).res.shape[1] == 3
    cap[R0] = 10.0  # every copy dominated by the first column (c / w = 8 < 10): column 1 is the kept one
    red = reductions._reduce_columns(_Prob(FlowProblem(capacity_Bps=cap, res=res, weight=w, size_bytes=np.ones(F))))
    assert red.res.shape[1] == 2 and not red.binding[:R0].any() and red.binding[R0:].all()
