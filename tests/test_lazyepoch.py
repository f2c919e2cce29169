"""Lazy epochs (fabric.lazyepoch) against the dense epoch loop: finish times to 1e-9, same congestion and epochs."""

import numpy as np
import pytest

from fabric import lazyepoch
from fabric.engine import simulate
from fabric.problem import FlowProblem

from test_slotfill import _moe_problem

pytest.importorskip("numba")


def _close(a, b):
    assert a.events == b.events and a.solves == b.solves and a.rounds == b.rounds
    for name in ("start_s", "transfer_end_s", "finish_s", "resource_busy_s", "resource_bytes"):
        x, y = getattr(a, name), getattr(b, name)
        np.testing.assert_allclose(x, y, rtol=1e-9, atol=0.0, err_msg=name)
    assert a.makespan_s == pytest.approx(b.makespan_s, rel=1e-12)


def _both(monkeypatch, p, **kw):
    """``(lazy result, dense result, lazy epochs run, rescales seen)`` of ``simulate(p, mode="epoch")``."""
    steps = []
    real = lazyepoch._LazyMixin._lazy_step

    def spy(self, *a):
        steps.append(self.lz_n)
        return real(self, *a)

    resc = []
    from fabric import epoch
    real_r = epoch._EpochMixin._rescale

    def spy_r(self, aidx):
        out = real_r(self, aidx)
        resc.append(out is not None)
        return out

    monkeypatch.setattr(lazyepoch._LazyMixin, "_lazy_step", spy)
    monkeypatch.setattr(epoch._EpochMixin, "_rescale", spy_r)
    monkeypatch.setattr(lazyepoch, "LAZY", False)
    ref = simulate(p, mode="epoch", **kw)
    assert not steps
    monkeypatch.setattr(lazyepoch, "LAZY", True)
    resc.clear()
    new = simulate(p, mode="epoch", **kw)
    return new, ref, len(steps), sum(resc)


def test_skewed_moe_lazy_matches_dense(monkeypatch):
    """128-GPU skewed dispatch with the compiled passes everywhere: every epoch lazy, results to 1e-9."""
    p = _moe_problem(monkeypatch, hosts=128, radix=16)
    monkeypatch.setenv("FABRIC_EMU_KERNELS", "numba")
    new, ref, n_lazy, _ = _both(monkeypatch, p, epsilon=0.01)
    assert n_lazy == new.events
    _close(new, ref)


def test_lazy_hands_back_to_the_dense_loop(monkeypatch):
    """Under ``auto`` with the compiled passes from half the flows: lazy epochs first, dense ones after the hand-back."""
    from fabric import eventloop

    p = _moe_problem(monkeypatch, hosts=64, radix=8)
    monkeypatch.setenv("FABRIC_EMU_KERNELS", "auto")
    monkeypatch.setattr(eventloop, "EPOCH_MIN_FLOWS", p.res.shape[0] // 2)
    new, ref, n_lazy, _ = _both(monkeypatch, p, epsilon=0.01)
    assert 0 < n_lazy < new.events
    _close(new, ref)


def _random_problem(rng, F, R, phases):
    h = 3
    res = np.stack([rng.choice(R, size=h, replace=False) for _ in range(F)]).astype(np.int32)
    res[rng.random((F, h)) < 0.2] = -1
    res[:, 0] = rng.integers(0, R, size=F)
    cap = rng.uniform(1.0, 4.0, size=R)
    size = rng.choice([1.0, 2.0, 3.0, 5.0], size=F) * rng.uniform(0.5, 1.5, size=F)
    kw = {}
    if phases > 1:
        ph = rng.integers(0, phases, size=F)
        ph[:phases] = np.arange(phases)
        # phase p waits for phase p - 1 (p odd), others start at once
        ptr = [0]
        idx = []
        for q in range(phases):
            if q % 2:
                idx.append(q - 1)
            ptr.append(len(idx))
        kw = dict(phase=ph, phase_deps=(np.array(ptr), np.array(idx, dtype=np.int64)),
                  phase_delay_s=rng.uniform(0.0, 0.5, size=phases))
    rel = np.where(rng.random(F) < 0.3, rng.uniform(0.0, 2.0, size=F), 0.0)
    return FlowProblem(capacity_Bps=cap, res=res, size_bytes=size, release_s=rel, **kw)


@pytest.mark.parametrize("seed", range(6))
def test_random_problems_lazy_matches_dense(monkeypatch, seed):
    """Random flows with release times, phases and dependencies (admissions, rebuilds, cuts at arrivals,
    rescales): lazy against dense with the compiled passes everywhere."""
    rng = np.random.default_rng(seed)
    p = _random_problem(rng, F=int(rng.integers(300, 900)), R=int(rng.integers(20, 60)), phases=1 + seed % 3)
    monkeypatch.setenv("FABRIC_EMU_KERNELS", "numba")
    new, ref, n_lazy, _ = _both(monkeypatch, p, epsilon=0.05)
    assert n_lazy > 0
    _close(new, ref)


def test_rescales_in_lazy_epochs(monkeypatch):
    """Skewed all-to-alls whose aggregate budget runs out: rescales happen inside lazy epochs, results to 1e-9."""
    from test_engine import skewed_alltoall

    monkeypatch.setenv("FABRIC_EMU_KERNELS", "numba")
    seen = 0
    for kind, seed in (("lognormal", 0), ("moe", 2)):
        p = skewed_alltoall(32, 8, 4, kind, seed)
        new, ref, n_lazy, resc = _both(monkeypatch, p, epsilon=0.01)
        assert n_lazy == new.events
        _close(new, ref)
        seen += resc
    assert seen > 0


def test_compiled_selection_of_the_earliest_completions():
    """``_earliest`` with the compiled comparison pass gives numpy's indices (with infinities and ties), and the
    kernel reports a selection over its limit."""
    from fabric import epoch_kernels as ek
    from fabric.epoch import _earliest

    rng = np.random.default_rng(3)
    for n, k in ((200_000, 300), (100_000, 2_000), (70_000, 4_000)):
        tc = np.round(rng.exponential(1.0, n), 3)  # ties
        tc[rng.random(n) < 0.4] = np.inf  # flows not active in a lazy epoch
        assert np.array_equal(_earliest(tc, k, ek), _earliest(tc, k))
        sel, m = ek.select_le(tc, 0.5, n)
        assert np.array_equal(sel, np.flatnonzero(tc <= 0.5)) and m == sel.shape[0]
        sel, m = ek.select_le(tc, 0.5, 10)
        assert sel.shape[0] == 0 and m == 11
