"""A fill whose coefficients are one factor per slot gives the same bits whatever the order of the flows
(fabric.fillorder.FillOrder, which the epoch loop fills the full index on), and the event loop's
one-pass fill states equal the np.where it replaces."""

import numpy as np
import pytest
from synthetic import numpy_and_numba as _both

from fabric import eventloop, fill, fillorder, slotfill
from fabric.engine import simulate

from test_slotfill import _moe_problem, _per_resource, _same_result


def _permuted_index(ix, perm):
    """``ix`` with local flow ``perm[k]`` renumbered ``k`` (rows moved, list entries renamed, lists unsorted)."""
    inv = np.empty_like(perm)
    inv[perm] = np.arange(perm.shape[0])
    return fill.Index(None, ix.res[perm], None, ix.indptr, inv[ix.indices].astype(ix.indices.dtype), ix.n_res,
                        ix.ceps, None), inv


@pytest.mark.parametrize("compiled", [False, True])
@pytest.mark.parametrize("seed", range(10))
def test_fill_on_any_flow_order_same_bits(monkeypatch, compiled, seed):
    if compiled:
        pytest.importorskip("numba")
        monkeypatch.setenv("FABRIC_EMU_KERNELS", "numba")
    else:
        monkeypatch.setenv("FABRIC_EMU_KERNELS", "numpy")
    cap, res, w = _per_resource(seed)
    R = cap.shape[0]
    sw = slotfill.slot_coefficients(res, w, None, R)
    ix = fill.build_index(res, None, None, R, np.arange(res.shape[0]))
    ix.ceps = 0.5 * float(sw[np.diff(ix.indptr) > 0].min())
    rng = np.random.default_rng(7 + seed)
    n = ix.size
    alive = rng.random(n) < 0.7
    for perm in (np.argsort(res[:, -1], kind="stable"), rng.permutation(n)):
        ixp, inv = _permuted_index(ix, perm)
        for st0, fixed in ((np.full(n, fill.ALIVE, np.uint8), None),
                           (np.where(alive, fill.ALIVE, fill.DONE).astype(np.uint8), ~alive)):
            fl = None if fixed is None else fill.fixed_load(ix, fixed, rng.uniform(0, 1e7, n))
            keys = np.add(res[st0 == fill.ALIVE], 1, dtype=np.intp).reshape(-1)
            cnt = np.bincount(keys, weights=sw[keys], minlength=R + 1)
            ref = slotfill.fill(ix, sw, cap, st0.copy(), cnt.copy(), fl, 1 if compiled else None)
            new = slotfill.fill(ixp, sw, cap, st0[perm], cnt.copy(), fl, 1 if compiled else None)
            assert np.array_equal(ref.bneck, new.bneck[inv])
            assert np.array_equal(ref.level, new.level)
            assert np.array_equal(ref.rem, new.rem) and np.array_equal(ref.rem_left, new.rem_left)
            assert ref.rounds == new.rounds


def test_skewed_moe_fill_order_same_bits(monkeypatch):
    """Epoch mode on a small skewed MoE dispatch, compiled everywhere: the fills in fill order (used, checked)
    give the bits of the fills of the loop's own index, and those of the numpy path."""
    pytest.importorskip("numba")
    from fabric import engine as _engine
    monkeypatch.setattr(_engine, "RENUMBER", False)  # bit-identity of these paths; receiver order: test_renumber.py
    from fabric import lazyepoch as _lazy
    monkeypatch.setattr(_lazy, "LAZY", False)  # the dense loop; lazy epochs to 1e-9: test_lazyepoch.py
    p = _moe_problem(monkeypatch, hosts=64, radix=8)
    used = []
    real = eventloop._EventLoop._order_fill

    def spy(self, on):
        real(self, on)
        used.append(self.fo is not None)

    monkeypatch.setattr(eventloop._EventLoop, "_order_fill", spy)
    out = {}
    for on in (False, True):
        monkeypatch.setattr(eventloop, "_FILL_ORDER", on)
        used.clear()
        out[on] = _both(monkeypatch, lambda: simulate(p, mode="epoch", epsilon=0.01))
        assert any(used) == on  # the compiled run built the index in fill order only when asked
    for a in (out[False][0], out[False][1], out[True][0]):
        _same_result(a, out[True][1])


def test_fill_states_one_pass():
    rng = np.random.default_rng(3)
    a = rng.random(1000) < 0.6
    got = fillorder.states(a)
    assert got.dtype == np.uint8
    assert np.array_equal(got, np.where(a, fill.ALIVE, fill.DONE).astype(np.uint8))
