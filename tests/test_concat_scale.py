"""concat keeps one resource_scale when the sets agree on every shared resource (no F x h weights):
same coefficients and bit-identical engine results as the per-entry weights it replaces."""

import numpy as np
import pytest

import fabric.flowset as fsm
from collectives import Collective, planner_for
from fabric import Router, compile_fabric, to_problem
from fabric.engine import simulate
from fabric.flowset import FlowSet, concat
from topologies import build


def _plans(monkeypatch):
    r = Router(compile_fabric(build("gb300-nvl72", {"domains": 4, "gpus_per_domain": 8, "scaleout": "quantum-x800"})))
    p = planner_for(r)
    op = Collective("all_to_all", tuple(range(r.cf.n_gpus)), 1 << 24, options={"aggregate": "node"})
    new = p.plan(op).flows
    with monkeypatch.context() as m:
        m.setattr(fsm, "_merged_scale", lambda sets: None)  # the previous rule: materialise F x h weights
        old = p.plan(op).flows
    return r, new, old


def test_aggregated_all_to_all_keeps_one_scale_and_the_same_results(monkeypatch):
    r, new, old = _plans(monkeypatch)
    assert new.resource_scale is not None and new.weight is None and old.weight is not None
    np.testing.assert_array_equal(new.effective_weight(), old.effective_weight())
    for mode in ("auto", "exact", "epoch"):
        a, b = simulate(to_problem(new, r)[0], mode=mode), simulate(to_problem(old, r)[0], mode=mode)
        assert a.mode_used == b.mode_used
        np.testing.assert_array_equal(a.finish_s, b.finish_s)


def _set(res, scale):
    res = np.asarray(res, np.int32)
    F = res.shape[0]
    return FlowSet(res=res, weight=None, size_bytes=np.ones(F), src=np.zeros(F, np.int64), dst=np.zeros(F, np.int64),
                   latency_s=np.zeros(F), release_s=np.zeros(F), phase=np.zeros(F, np.int32),
                   group=np.zeros(F, np.int32), labels=("x",), resource_scale=None if scale is None else np.asarray(scale))


@pytest.mark.parametrize("scales,merged", [
    (([2.0, 1.0, 1.0, 5.0], None), True),           # disjoint resources: one scale
    (([2.0, 1.0, 1.0, 5.0], [9.0, 1.0, 1.0, 5.0]), True),   # agree on the shared resource 3
    (([2.0, 1.0, 1.0, 5.0], [2.0, 1.0, 1.0, 4.0]), False),  # disagree on resource 3
    ((None, [1.0, 1.0, 3.0, 2.0]), False),          # resource 3 shared: 1 (no scale) against 2
    ((None, [1.0, 1.0, 3.0, 1.0]), True),           # resource 3 shared: 1 against 1
])
def test_merged_scale_only_where_the_sets_agree(scales, merged):
    a = _set([[0, 3], [1, -1]], scales[0])
    b = _set([[2, 3]], scales[1])
    if scales[1] is None:
        b = _set([[2, -1]], None)
    cat = concat([a, b])
    assert (cat.weight is None) == merged
    want = np.concatenate([_pad_eff(a, 2), _pad_eff(b, 2)])
    np.testing.assert_array_equal(cat.effective_weight() if cat.weight is not None or cat.resource_scale is not None
                                  else np.where(cat.res >= 0, 1.0, 0.0), want)


def _pad_eff(s, width):
    w = s.effective_weight()
    return np.where(s.res >= 0, 1.0, 0.0) if w is None else w
