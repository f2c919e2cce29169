"""Filling from a per-slot coefficient table (fabric.slotfill) is bit-identical to fabric.fill's fill,
and epoch mode on it gives the same bits as the reference path (per-entry coefficient rows)."""

import numpy as np
import pytest
from click.testing import CliRunner
from synthetic import leaf_spine, numpy_and_numba as _both

from fabric import epoch, eventloop, fill, slotfill
from fabric.engine import FlowProblem, simulate


def _per_resource(seed):
    """Rows with padding and weights that are one factor per resource (as epoch mode unfolds them)."""
    rng = np.random.default_rng(seed)
    R, F, h = int(rng.integers(6, 30)), int(rng.integers(50, 600)), 4
    res = np.full((F, h), -1, dtype=np.int16)
    for f in range(F):  # distinct resources per row, padded at random positions
        k = int(rng.integers(1, h + 1))
        cols = np.sort(rng.choice(h, k, replace=False))
        res[f, cols] = rng.choice(R, k, replace=False)
    lw = rng.choice([1.0, 1.0 / 0.94, 0.5, 1.0 / 3.0], R)
    w = np.where(res >= 0, lw[np.maximum(res, 0)], 0.0)
    cap = rng.uniform(1.0, 4.0, R) * 1e9
    return cap, res, w


def _same_fill(a, b):
    assert np.array_equal(a.bneck, b.bneck)
    assert np.array_equal(a.level, b.level)
    assert np.array_equal(a.rem, b.rem) and np.array_equal(a.rem_left, b.rem_left)
    assert a.rounds == b.rounds


@pytest.mark.parametrize("seed", range(12))
def test_fill_bit_identical_to_maxmin_fill(seed):
    cap, res, w = _per_resource(seed)
    R = cap.shape[0]
    sw = slotfill.slot_coefficients(res, w, None, R)
    assert sw is not None
    ix = fill.build_index(res, w, None, R, None)
    assert np.array_equal(sw[res.astype(np.intp) + 1], ix.coef)  # what the table stands for
    rng = np.random.default_rng(100 + seed)
    n = ix.size
    # cold, with some flows inactive, and warm (fixed flows' load given)
    alive = rng.random(n) < 0.7
    for st0, fixed in ((np.full(n, fill.ALIVE, np.uint8), None),
                       (np.where(alive, fill.ALIVE, fill.DONE).astype(np.uint8), None),
                       (np.where(alive, fill.ALIVE, fill.DONE).astype(np.uint8), ~alive)):
        fl = None if fixed is None else fill.fixed_load(ix, fixed, rng.uniform(0, 1e7, n))
        cnt = fill.coef_sums(ix, st0)
        s1, s2 = st0.copy(), st0.copy()
        ref = fill.fill(ix, cap, s1, cnt.copy(), fl, compiled=False)
        new = slotfill.fill(ix, sw, cap, s2, cnt.copy(), fl)
        _same_fill(ref, new)
        assert np.array_equal(s1, s2)
    # a sub-index without coefficient arrays fills like fill.sub_index
    sel = np.flatnonzero(alive)
    cnt = fill.coef_sums(ix, np.where(alive, fill.ALIVE, fill.DONE).astype(np.uint8))
    ref = fill.fill(fill.sub_index(ix, sel), cap, np.full(sel.shape[0], fill.ALIVE, np.uint8), cnt.copy(),
                      compiled=False)
    new = slotfill.fill(slotfill.lean_sub_index(ix, sel), sw, cap, np.full(sel.shape[0], fill.ALIVE, np.uint8),
                        cnt.copy())
    _same_fill(ref, new)


@pytest.mark.parametrize("seed", range(12))
def test_compiled_fill_from_slot_table_bit_identical(monkeypatch, seed):
    """The compiled fill on an index without coefficient arrays reads the slot table (kernel kind 3): the
    numpy fill's bits, cold, warm and on a lean sub-index."""
    from fabric import kernels

    if not kernels.available():
        pytest.skip("numba not installed")
    cap, res, w = _per_resource(seed)
    R = cap.shape[0]
    sw = slotfill.slot_coefficients(res, w, None, R)
    full = fill.build_index(res, w, None, R, None)
    lean = slotfill.lean_sub_index(full, np.arange(full.size))
    assert lean.coef is None
    rng = np.random.default_rng(200 + seed)
    n = full.size
    alive = rng.random(n) < 0.7
    sel = np.flatnonzero(alive)
    fl_w = fill.fixed_load(full, ~alive, rng.uniform(0, 1e7, n))
    cases = [(lean, np.full(n, fill.ALIVE, np.uint8), None),
             (lean, np.where(alive, fill.ALIVE, fill.DONE).astype(np.uint8), fl_w),
             (slotfill.lean_sub_index(full, sel), np.full(sel.shape[0], fill.ALIVE, np.uint8), fl_w)]
    calls = []
    real = fill._fill_compiled

    def spy(*a, **k):
        calls.append(k.get("sw", a[5] if len(a) > 5 else None) is not None)
        return real(*a, **k)

    monkeypatch.setattr(fill, "_fill_compiled", spy)
    for ix, st0, fl in cases:
        cnt = fill.coef_sums(full, st0) if ix.size == n else fill.coef_sums(full, np.where(
            alive, fill.ALIVE, fill.DONE).astype(np.uint8))
        s1, s2 = st0.copy(), st0.copy()
        ref = fill.fill(full if ix.size == n else fill.sub_index(full, sel), cap, s1, cnt.copy(), fl,
                          compiled=False)
        monkeypatch.setenv("FABRIC_EMU_KERNELS", "numba")
        new = slotfill.fill(ix, sw, cap, s2, cnt.copy(), fl)
        monkeypatch.delenv("FABRIC_EMU_KERNELS")
        _same_fill(ref, new)
        assert np.array_equal(s1, s2)
    assert calls == [True, True, True]  # each ran compiled, from the table


@pytest.mark.parametrize("compiled", [False, True])
def test_slot_coefficients_refuses_what_is_not_one_factor_per_resource(compiled):
    from fabric import kernels

    if compiled and not kernels.available():
        pytest.skip("numba not installed")
    cap, res, w = _per_resource(3)
    R = cap.shape[0]
    sw = slotfill.slot_coefficients(res, w, None, R, compiled)
    assert np.array_equal(sw, slotfill.slot_coefficients(res, w, None, R))  # both paths: the same table
    assert slotfill.slot_coefficients(res, None, None, R, compiled) is None
    assert slotfill.slot_coefficients(res, w, np.ones(res.shape[0]), R, compiled) is None  # multiplicities
    w2 = w.copy()
    f, j = np.argwhere(res >= 0)[-1]
    w2[f, j] *= 2.0  # one entry of a resource differs from the others
    if (res == res[f, j]).sum() > 1:
        assert slotfill.slot_coefficients(res, w2, None, R, compiled) is None
    dup = res.copy()
    row = int(np.flatnonzero((res >= 0).sum(axis=1) >= 2)[0])
    c = np.flatnonzero(res[row] >= 0)
    dup[row, c[1]] = dup[row, c[0]]  # a row naming a resource twice: the index merges it
    assert slotfill.slot_coefficients(dup, np.where(dup >= 0, 1.0, 0.0), None, R, compiled) is None


def test_slot_max_into_equals_maximum_at():
    rng = np.random.default_rng(0)
    keys = rng.integers(0, 50, 3000)
    vals = rng.random(3000)
    a = np.full(60, 0.3)
    b = a.copy()
    np.maximum.at(a, keys, vals)
    epoch._slot_max_into(b, keys, vals)
    assert np.array_equal(a, b)


def _both_paths(monkeypatch, p, **kw):
    out = []
    for on in (False, True):
        monkeypatch.setattr(eventloop, "_SLOT_FILL", on)
        out.append(simulate(p, **kw))
    return out


def _same_result(a, b):
    assert np.array_equal(a.finish_s, b.finish_s)
    assert np.array_equal(a.resource_busy_s, b.resource_busy_s)
    assert (a.events, a.solves, a.rounds) == (b.events, b.solves, b.rounds)


def _moe_problem(monkeypatch, hosts=64, radix=8):
    """The FlowProblem of a small skewed MoE dispatch as the CLI builds it (per-resource transport weights)."""
    from cli.app import cli
    from collectives import runner

    got = []
    real = runner.simulate_split

    def spy(problem, **kw):
        got.append(problem)
        return real(problem, **kw)

    monkeypatch.setattr(runner, "simulate_split", spy)
    args = ["run", "moe_dispatch", "--topo", "fat-tree", "--set", f"hosts={hosts}", "--set", f"radix={radix}",
            "--set", "link=400Gb/s", "--moe-routing", "skewed", "--experts", str(hosts), "--seed", "1", "--json"]
    r = CliRunner().invoke(cli, args)
    assert r.exit_code == 0, r.output
    monkeypatch.setattr(runner, "simulate_split", real)
    return got[0]


@pytest.mark.parametrize("mode,hosts", [("epoch", 64), ("exact", 16)])
def test_skewed_moe_same_bits_on_both_paths_numpy_and_numba(monkeypatch, mode, hosts):
    from fabric import engine as _engine
    monkeypatch.setattr(_engine, "RENUMBER", False)  # bit-identity of these paths; receiver order: test_renumber.py
    from fabric import lazyepoch as _lazy
    monkeypatch.setattr(_lazy, "LAZY", False)  # the dense loop; lazy epochs to 1e-9: test_lazyepoch.py
    p = _moe_problem(monkeypatch, hosts=hosts, radix=8 if hosts > 16 else 4)
    assert p.resource_weight is not None or p.weight is not None  # the per-resource factors are exercised
    calls = []
    real = slotfill.fill

    def spy(*a, **k):
        calls.append(1)
        return real(*a, **k)

    monkeypatch.setattr(eventloop._sf, "fill", spy)
    res = _both(monkeypatch, lambda: _both_paths(monkeypatch, p, mode=mode, epsilon=0.01))
    for ref, new in res:
        _same_result(ref, new)
    _same_result(res[0][0], res[1][1])  # numpy reference against the compiled kernels on the new path
    assert bool(calls) == (mode == "epoch")  # epoch mode fills from the table; exact mode folds the weights


@pytest.mark.parametrize("seed", range(3))
def test_routed_weighted_epoch_same_bits(monkeypatch, seed):
    cap, res = leaf_spine(64, 8, 8, seed=seed, link_Bps=50e9)
    rng = np.random.default_rng(seed)
    R = cap.shape[0]
    rw = rng.choice([1.0, 1.0 / 0.94], R)
    size = rng.lognormal(0, 0.7, 128)[np.maximum(res[:, 3], 0)] * rng.lognormal(0, 0.3, len(res)) * 1e6
    p = FlowProblem(capacity_Bps=cap, res=res, size_bytes=size, resource_weight=rw)
    for sub in (4, 1.01):  # the sub-index threshold: which flows' index is filled, not what it computes
        monkeypatch.setattr(eventloop, "_SUB_FILL", sub)
        ref, new = _both_paths(monkeypatch, p, mode="epoch", epsilon=0.01)
        _same_result(ref, new)
