"""Epoch mode's maintained max-min load (warm starts) against the recomputed reference, to 1e-9 relative."""

from __future__ import annotations

import numpy as np
import pytest
from synthetic import leaf_spine

from fabric import eventloop, fill
from fabric.engine import FlowProblem, simulate


def _run(p, monkeypatch, incremental, mode="epoch", **kw):
    calls = []
    real = fill.fixed_load

    def counted(*a):
        calls.append(1)
        return real(*a)

    monkeypatch.setattr(eventloop, "_INCREMENTAL", incremental)
    monkeypatch.setattr(eventloop._fl, "fixed_load", counted)
    return simulate(p, mode=mode, **kw), len(calls)


def _random(seed):
    rng = np.random.default_rng(seed)
    R, F = int(rng.integers(8, 40)), int(rng.integers(200, 1500))
    cap = rng.uniform(1.0, 4.0, R) * 1e9
    h = 4
    res = rng.integers(-1, R, (F, h))
    res[:, 0] = rng.integers(0, R, F)
    kw = {}
    if seed % 2:
        kw["weight"] = rng.choice([0.25, 0.5, 1.0], (F, h))
    if seed % 3 == 0:
        kw["multiplicity"] = rng.integers(1, 4, F).astype(float)
    if seed % 4 == 1:
        kw["release_s"] = rng.uniform(0, 1e-3, F) * (rng.random(F) < 0.3)
    return FlowProblem(capacity_Bps=cap, res=res, size_bytes=rng.lognormal(13, 1.5, F), **kw)


def _routed(seed):
    cap, res = leaf_spine(64, 8, 8, seed=seed, link_Bps=50e9)
    rng = np.random.default_rng(seed)
    dst = res[:, 3].copy()
    dst[dst < 0] = res[dst < 0, 1]
    size = rng.lognormal(0, 0.7, 128)[dst] * rng.lognormal(0, 0.3, len(res)) * 1e6
    return FlowProblem(capacity_Bps=cap, res=res, size_bytes=size)


@pytest.mark.parametrize("make,seed", [(_random, s) for s in range(6)] + [(_routed, s) for s in range(3)])
@pytest.mark.parametrize("eps", [0.01, 0.05])
def test_epoch_maintained_load_matches_recomputed(make, seed, eps, monkeypatch):
    p = make(seed)
    ref, n_ref = _run(p, monkeypatch, False, epsilon=eps)
    new, n_new = _run(p, monkeypatch, True, epsilon=eps)
    assert n_new == 0  # the fixed flows' load is never recomputed ...
    np.testing.assert_allclose(new.finish_s, ref.finish_s, rtol=1e-9)
    np.testing.assert_allclose(new.resource_busy_s, ref.resource_busy_s, rtol=1e-9, atol=1e-15)
    assert (new.events, new.solves) == (ref.events, ref.solves)



def test_the_warm_start_with_fixed_flows_is_exercised(monkeypatch):
    # ... on problems where the reference does recompute it (the comparison above is not vacuous)
    n = sum(_run(_routed(s), monkeypatch, False, epsilon=0.01)[1] for s in range(3))
    assert n > 0


@pytest.mark.parametrize("seed", range(3))
def test_exact_mode_is_unchanged(seed, monkeypatch):
    p = _random(seed)
    a, _ = _run(p, monkeypatch, False, mode="exact")
    b, _ = _run(p, monkeypatch, True, mode="exact")
    np.testing.assert_array_equal(a.finish_s, b.finish_s)


@pytest.mark.parametrize("make,seed", [(_random, 1), (_random, 3), (_routed, 0), (_routed, 2)])
def test_filling_only_the_refilled_flows_is_bit_identical(make, seed, monkeypatch):
    p = make(seed)
    subs = []
    real = fill.sub_index

    def counted(ix, sel):
        subs.append(sel.shape[0])
        return real(ix, sel)

    monkeypatch.setattr(eventloop._fl, "sub_index", counted)
    monkeypatch.setattr(eventloop, "_SUB_FILL", float("inf"))  # never: fill the whole index
    a = simulate(p, mode="epoch", epsilon=0.01)
    assert not subs
    monkeypatch.setattr(eventloop, "_SUB_FILL", 4)
    b = simulate(p, mode="epoch", epsilon=0.01)
    assert subs  # the sub-index was used
    np.testing.assert_array_equal(a.finish_s, b.finish_s)
    assert (a.events, a.solves, a.rounds) == (b.events, b.solves, b.rounds)


def test_compiled_epoch_passes_equal_their_numpy_counterparts():
    """The list compaction and the solve tail's moved members (fabric.epoch_kernels) against numpy."""
    from fabric import kernels

    if not kernels.available():
        pytest.skip("numba not installed")
    from fabric import epoch_kernels as ek

    rng = np.random.default_rng(3)
    n, r1, h = 3000, 60, 4
    res = rng.integers(-1, r1 - 1, (n, h)).astype(np.int16)
    ix = fill.build_index(res, None, None, r1 - 1, None)
    keep = rng.random(n) < 0.6
    ptr, ind = ek.compact_lists(ix.indptr, ix.indices, keep)
    ke = keep[ix.indices]
    counts = np.bincount(np.repeat(np.arange(r1), np.diff(ix.indptr))[ke], minlength=r1)
    assert ptr.dtype == ix.indptr.dtype and ind.dtype == ix.indices.dtype
    assert np.array_equal(ptr, np.concatenate([[0], np.cumsum(counts)])) and np.array_equal(ind, ix.indices[ke])
    # a warm start: members moved flow by flow equal the bincount over every active flow's new bottleneck
    aidx = np.flatnonzero(rng.random(n) < 0.8)
    old = rng.integers(0, r1, n)
    members0 = np.bincount(old[aidx], minlength=r1).astype(np.float64)
    members0[0] = 0.0
    ri = np.sort(rng.choice(aidx, 500, replace=False))
    fixed = np.ones(n, dtype=np.bool_)
    fixed[ri] = False
    prev, level = rng.uniform(1, 2, n), rng.uniform(1, 2, r1)
    bneck = rng.integers(0, r1, n).astype(np.int32)
    L_rem, t = rng.uniform(0, 1e6, n), 0.125
    out = []
    for inc in (False, True):
        L_bneck, L_mm = old.copy(), np.zeros(n)
        rates, tc, members = ek.solve_tail(ek.WARM, aidx, fixed, prev, level, bneck, ri, L_bneck, np.zeros(1), False,
                                           True, r1, t, L_rem, L_mm, members0, inc)
        out.append((rates, tc, members, L_bneck, L_mm))
    nb = old.copy()
    nb[ri] = bneck[ri]
    ref = np.where(fixed[aidx], prev[aidx], level[nb[aidx]])
    assert np.array_equal(out[0][0], ref) and np.array_equal(out[0][1], t + L_rem[aidx] / ref)
    assert np.array_equal(out[0][4][aidx], ref)
    full = np.bincount(nb[aidx], minlength=r1).astype(np.float64)
    full[0] = 0.0
    for rates, tc, members, L_bneck, L_mm in out:
        assert np.array_equal(members, full) and np.array_equal(L_bneck, nb)
    # the warm start's split: fixed below the threshold, the others re-filled in ascending order
    act = np.zeros(n, dtype=np.bool_)
    act[aidx] = True
    fx, ri2, nf = ek.warm_split(aidx, prev, 1.5, n)
    assert np.array_equal(fx, act & (prev < 1.5)) and np.array_equal(ri2, np.flatnonzero(act & ~(prev < 1.5)))
    assert nf == int(fx.sum()) and ri2.dtype == np.flatnonzero(act).dtype
    # the epoch end's stable order of the saturated slots' entries
    keys = rng.integers(0, r1, 5000)
    m = rng.random(5000) < 0.5
    o = ek.saturated_order(keys, m, int(m.sum()), r1)
    assert np.array_equal(o, np.argsort(np.where(m, keys, r1), kind="stable")[: int(m.sum())])
