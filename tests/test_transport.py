"""Fabric-congestion terms (fabric/transport.py) against closed forms and the packet-level data."""

from __future__ import annotations

import numpy as np
import pytest

from benchmarks import transport_study as ts
from fabric import transport as tr
from fabric.engine import simulate
from fabric.failures import compile_with_failures
from fabric.flowset import FlowSet, to_problem
from fabric.routing import Router
from topologies.clos import fat_tree
from topologies.errors import FlowError


def _a2a(hosts, radix, oversubscription=1.0, fail=(), degrade=(), policy="spray", size=1e6, sizes=None):
    r = Router(compile_with_failures(fat_tree(hosts=hosts, radix=radix, oversubscription=oversubscription),
                                     fail=fail, degrade=degrade))
    src, dst = np.divmod(np.arange(hosts * hosts), hosts)
    keep = src != dst
    fs = FlowSet.from_routes(r.route(src[keep], dst[keep], policy=policy), size if sizes is None else sizes(keep.sum()))
    p, used = to_problem(fs, r)
    return p, r, used


@pytest.mark.parametrize("hosts,radix,over,fail,per_leaf,uplinks", [
    (32, 8, 1.0, ["spine 0"], 4, 3),       # 4 hosts per leaf, 3 of 4 spines left
    (64, 12, 2.0, [], 8, 4),               # 2:1 leaves
    (64, 10, 4.0, [], 8, 2),               # 4:1 leaves
    (64, 16, 1.0, ["spine 0"], 8, 6),      # 4 spines x 2 parallel links, one spine gone
])
def test_overload_is_the_closed_form(hosts, radix, over, fail, per_leaf, uplinks):
    # uniform all-to-all, spraying: a leaf sends per_leaf x (hosts - per_leaf) / (hosts - 1) NIC-loads upwards
    p, r, used = _a2a(hosts, radix, over, fail)
    rho, fan_in = tr.bottleneck(p, r, used)
    assert rho == pytest.approx(per_leaf * (hosts - per_leaf) / (hosts - 1) / uplinks, rel=1e-9)
    assert fan_in == per_leaf * (hosts - per_leaf)     # every flow leaving the leaf shares its uplinks


MODELS = [tr.FIT_EQDS, tr.FIT_EQDS_SAT, tr.DEFAULT]


@pytest.mark.parametrize("model", MODELS)
def test_nic_bound_traffic_is_untouched(model):
    p, r, used = _a2a(32, 8)                           # 1:1, spraying: the NICs set the pace
    rho, n = tr.bottleneck(p, r, used)
    assert rho < 1.0
    assert tr.apply_fabric_congestion(p, r, used, model) is p
    assert tr.straggler_factor(rho, n, model) == 1.0
    f = simulate(p).finish_s
    np.testing.assert_array_equal(tr.tail_finish_s(f, rho, n, model), f)


@pytest.mark.parametrize("case", [
    dict(hosts=32, radix=8, fail=["spine 0"]),
    dict(hosts=64, radix=12, oversubscription=2.0),
    dict(hosts=32, radix=8, degrade=["leaf 0 spine 0=50%"]),
    dict(hosts=32, radix=8, fail=["spine 1"], policy="ecmp"),
    dict(hosts=16, radix=8, oversubscription=2.0, sizes=lambda n: 1e5 * (1 + np.arange(n) % 7)),  # event loop
])
@pytest.mark.parametrize("model", [tr.FIT_EQDS, tr.FIT_EQDS_SAT])
def test_never_faster(case, model):
    p, r, used = _a2a(**case)
    base = simulate(p)
    q = tr.apply_fabric_congestion(p, r, used, model)
    assert (q.capacity_Bps <= p.capacity_Bps).all()
    slow = simulate(q)
    assert slow.makespan_s >= base.makespan_s * (1 - 1e-12)
    rho, n = tr.bottleneck(p, r, used)
    f = tr.tail_finish_s(slow.finish_s, rho, n, model)
    assert (f >= slow.finish_s).all()
    assert np.median(f) == pytest.approx(np.median(slow.finish_s))
    assert f.max() == pytest.approx(slow.finish_s.max() * tr.straggler_factor(rho, n, model))


@pytest.mark.parametrize("m", [tr.FIT_EQDS, tr.FIT_EQDS_SAT])
def test_straggler_factor_grows_with_overload_and_fan_in(m):
    assert tr.straggler_factor(1.0, 1e4, m) == 1.0
    assert tr.straggler_factor(1.5, 100, m) < tr.straggler_factor(2.0, 100, m) < tr.straggler_factor(2.0, 1000, m)


@pytest.mark.parametrize("kw", [dict(efficiency=0.0), dict(efficiency=1.2), dict(tail_coefficient=-1.0),
                                dict(fan_in_exponent=-0.5), dict(fan_in_half=-1.0)])
def test_bad_parameters_are_rejected(kw):
    with pytest.raises(FlowError):
        tr.FabricCongestion(**kw)


def test_data_topologies_are_the_packet_level_ones():
    meta, cases = ts.load_cases()
    assert {c["split"] for c in cases} == {"fit", "held-out"}
    for c in cases:
        assert (c["split"] == "held-out") == (c["hosts"] == 128)    # the recorded split rule
        clos = fat_tree(hosts=c["hosts"], radix=c["radix"], oversubscription=c["oversubscription"]).graph["meta"]["clos"]
        h = c["htsim_topology"]
        assert (clos["tiers"], clos["leaves"], clos["leaf_down_max"], clos["leaf_up"]) == \
            (2, h["leaves"], h["hosts_per_leaf"], h["uplinks_per_leaf"])
        assert clos["spines"] * h["bundle"] == h["uplinks_per_leaf"]
        assert c["complete"]


def test_fit_reproduces_the_shipped_constants():
    got = ts.fit()
    assert got.efficiency == pytest.approx(tr.FIT_EQDS.efficiency, abs=1e-4)
    assert got.tail_coefficient == pytest.approx(tr.FIT_EQDS.tail_coefficient, rel=1e-3)
    assert got.fan_in_exponent == pytest.approx(tr.FIT_EQDS.fan_in_exponent, abs=1e-3)
    sat = ts.fit(saturating=True)
    assert sat.tail_coefficient == pytest.approx(tr.FIT_EQDS_SAT.tail_coefficient, rel=1e-3)
    assert sat.fan_in_half == pytest.approx(tr.FIT_EQDS_SAT.fan_in_half, rel=1e-3)


def test_held_out_scores_are_the_documented_ones():
    # docs/transport.md §4: held-out (all 7 scored cases) mean / largest |packet / model - 1| of the last flow
    stated = {"OFF": (0.178, 0.466), "FIT_EQDS": (0.149, 0.468), "FIT_EQDS_SAT": (0.083, 0.248)}
    for name, (mean, worst) in stated.items():
        rows = [r for r in ts.study(getattr(tr, name)) if r["split"] == "held-out" and not ts._is_base(r)]
        e = np.abs(np.array([r["excess"] for r in rows]) - 1.0)
        assert len(e) == 7
        assert e.mean() == pytest.approx(mean, abs=0.0015) and e.max() == pytest.approx(worst, abs=0.0015), name
    assert tr.DEFAULT is tr.OFF      # neither candidate met the acceptance rule (mean <= half of OFF's, max <= 15 %)
