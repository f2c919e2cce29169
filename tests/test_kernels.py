"""The compiled kernels (fabric.kernels, numba) against the pure-numpy solver: same index, same rates."""

import numpy as np
import pytest
from synthetic import leaf_spine, numpy_and_numba as _both

from fabric import adjacency
from fabric.engine import FlowProblem, simulate
from fabric.maxmin import maxmin_rates, maxmin_refill

pytest.importorskip("numba")


def test_index_build_is_identical(monkeypatch):
    rng = np.random.default_rng(1)
    res = rng.integers(-1, 40, (500, 4)).astype(np.int32)
    coef = rng.uniform(0.5, 2.0, res.shape)
    a, b = _both(monkeypatch, lambda: adjacency._csc(res, 40, coef))
    for x, y in zip(a, b):
        assert x.dtype == y.dtype and np.array_equal(x, y)


def test_rates_agree_on_random_instances(monkeypatch):
    rng = np.random.default_rng(7)
    for trial in range(60):
        F, R, h = int(rng.integers(1, 200)), int(rng.integers(1, 25)), int(rng.integers(1, 5))
        res = rng.integers(-1, R, (F, h)).astype(np.int32)
        cap = rng.choice([1.0, 2.0, 3.0, np.inf], R, p=[0.3, 0.3, 0.3, 0.1])
        w = np.where(res >= 0, rng.choice([1 / 3, 0.5, 1.0], (F, h)), 0.0) if trial % 3 == 0 else None
        m = rng.choice([1.0, 2.0, 5.0], F) if trial % 4 == 1 else None
        act = rng.random(F) < 0.8 if trial % 5 == 2 else None
        a, b = _both(monkeypatch, lambda: maxmin_rates(cap, res, w, multiplicity=m, active=act).rates_Bps)
        np.testing.assert_allclose(b, a, rtol=1e-9)
        thr = float(np.median(a[np.isfinite(a) & (a > 0)])) if (np.isfinite(a) & (a > 0)).any() else 1.0
        a, b = _both(monkeypatch, lambda: maxmin_refill(cap, res, np.nan_to_num(a, posinf=1e9), thr, w,
                                                        multiplicity=m).rates_Bps)
        np.testing.assert_allclose(b, a, rtol=1e-9)


@pytest.mark.parametrize("mode", ["auto", "exact", "epoch"])
def test_simulation_agrees(monkeypatch, mode):
    cap, res = leaf_spine(16, hpl=4, spines=2, seed=2)
    rng = np.random.default_rng(2)
    size = np.full(res.shape[0], 1e3) if mode == "auto" else rng.lognormal(7, 1, res.shape[0])
    p = FlowProblem(capacity_Bps=cap, res=res, size_bytes=size)
    from fabric import engine as _engine
    monkeypatch.setattr(_engine, "RENUMBER", False)  # bit-identity of the fill; receiver order: test_renumber.py
    from fabric import lazyepoch as _lazy
    monkeypatch.setattr(_lazy, "LAZY", False)  # the dense loop; lazy epochs to 1e-9: test_lazyepoch.py
    a, b = _both(monkeypatch, lambda: simulate(p, mode=mode))
    np.testing.assert_allclose(b.finish_s, a.finish_s, rtol=1e-9)
    np.testing.assert_allclose(b.resource_busy_s, a.resource_busy_s, rtol=1e-9)
    assert np.array_equal(a.finish_s, b.finish_s)  # the compiled fill is bit-identical (test_kernels_fill)
