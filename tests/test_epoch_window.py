"""Compiled epoch passes give the numpy values: the window of the epoch end (fabric.epoch_kernels.epoch_window;
every epoch end of a run computed both ways and compared: end time, budget curve, next window size, whether the
aggregate budget ended it), and the warm-start split made by the advance (advance_split, solve_tail_ri)."""

import numpy as np
import pytest
from synthetic import leaf_spine

from fabric import eventloop
from fabric.engine import FlowProblem, simulate

from test_slotfill import _moe_problem


def _both_ways(monkeypatch):
    """Run every _epoch_end compiled and again on the numpy body; record the pairs."""
    real = eventloop._EventLoop._epoch_end
    pairs = []

    def twice(self, t0, aidx, rates, tc, sat):
        k0 = self._kguess
        got = real(self, t0, aidx, rates, tc, sat)
        a = (got, self._curve, self._kguess, self._by_aggregate)
        self._kguess = k0
        kern = eventloop._epoch_kernels
        eventloop._epoch_kernels = lambda n: None  # the numpy body
        try:
            ref = real(self, t0, aidx, rates, tc, sat)
        finally:
            eventloop._epoch_kernels = kern
        pairs.append((a, (ref, self._curve, self._kguess, self._by_aggregate)))
        return got

    return twice, pairs


def _check(pairs):
    assert pairs
    for (t1, curve, kg, agg), (t1r, curver, kgr, aggr) in pairs:
        assert t1 == t1r and kg == kgr and agg == aggr
        assert (curve is None) == (curver is None)
        if curve is not None:
            for x, y in zip(curve, curver):
                assert np.array_equal(x, y)


def _run(monkeypatch, p):
    pytest.importorskip("numba")
    monkeypatch.setenv("FABRIC_EMU_KERNELS", "numba")
    calls = []
    from fabric import epoch_kernels

    real_w = epoch_kernels.epoch_window

    def spy(*a):
        calls.append(a[0].shape[0])
        return real_w(*a)

    monkeypatch.setattr(epoch_kernels, "epoch_window", spy)
    twice, pairs = _both_ways(monkeypatch)
    monkeypatch.setattr(eventloop._EventLoop, "_epoch_end", twice)
    r = simulate(p, mode="epoch", epsilon=0.01)
    assert calls  # the compiled window ran
    _check(pairs)
    return r


def test_epoch_window_skewed_moe(monkeypatch):
    """Per-resource transport factors (the slot table), a skewed MoE dispatch as the CLI builds it."""
    _run(monkeypatch, _moe_problem(monkeypatch, hosts=64, radix=8))


@pytest.mark.parametrize("seed", range(3))
def test_epoch_window_multiplicity_and_phases(monkeypatch, seed):
    """Classes of flows (multiplicity), unit coefficients, two dependent phases, lognormal sizes."""
    cap, res = leaf_spine(64, hpl=8, spines=4, seed=seed)
    rng = np.random.default_rng(seed)
    F = res.shape[0]
    p = FlowProblem(capacity_Bps=cap * 1e9, res=res, size_bytes=rng.lognormal(12, 1.0, F),
                    multiplicity=rng.integers(1, 4, F).astype(np.float64),
                    phase=(np.arange(F) % 2), phase_deps=(np.array([0, 0, 1]), np.array([0])))
    _run(monkeypatch, p)


@pytest.mark.parametrize("mode,hosts", [("epoch", 64), ("exact", 16)])
def test_warm_split_from_the_advance_same_bits(monkeypatch, mode, hosts):
    """The compiled advance splits the next warm start (epoch_kernels.advance_split) and the tail then walks
    the re-filled flows only (solve_tail_ri, epoch mode): used, and the same finish and busy times, events,
    solves and rounds as the numpy path."""
    pytest.importorskip("numba")
    from synthetic import numpy_and_numba
    from test_slotfill import _same_result

    from fabric import epoch_kernels

    p = _moe_problem(monkeypatch, hosts=hosts, radix=8 if hosts > 16 else 4)
    used = {"split": 0, "tail": 0, "warm_split": 0}
    for name, key in (("advance_split", "split"), ("solve_tail_ri", "tail"), ("warm_split", "warm_split")):
        real = getattr(epoch_kernels, name)

        def spy(*a, _real=real, _key=key):
            used[_key] += 1
            return _real(*a)

        monkeypatch.setattr(epoch_kernels, name, spy)
    a, b = numpy_and_numba(monkeypatch, lambda: simulate(p, mode=mode, epsilon=0.01))
    _same_result(a, b)
    assert used["split"] > 0
    if mode == "epoch":
        assert used["tail"] > 0 and b.solves > used["tail"]  # cold solves keep the full tail
