"""Epoch mode in receiver order (fabric.renumber) against the caller's order: finish times to 1e-9, same congestion."""

import numpy as np
import pytest

from fabric import engine, renumber
from fabric.engine import simulate

from test_slotfill import _moe_problem


def _close(a, b):
    assert a.events == b.events and a.solves == b.solves
    for name in ("start_s", "transfer_end_s", "finish_s", "resource_busy_s", "resource_bytes"):
        x, y = getattr(a, name), getattr(b, name)
        np.testing.assert_allclose(x, y, rtol=1e-9, atol=0.0, err_msg=name)


@pytest.mark.parametrize("kernels", ["numba", "numpy"])
def test_skewed_moe_receiver_order_matches_caller_order(monkeypatch, kernels):
    """128-GPU skewed dispatch: with the loop's compiled passes everywhere the flows really are renumbered and the
    results equal the caller-order loop's to 1e-9; on the numpy path nothing is renumbered (same bits)."""
    if kernels == "numba":
        pytest.importorskip("numba")
    p = _moe_problem(monkeypatch, hosts=128, radix=16)
    monkeypatch.setenv("FABRIC_EMU_KERNELS", kernels)
    used = []
    real = renumber.permuted

    def spy(pr, perm):
        used.append(perm)
        return real(pr, perm)

    monkeypatch.setattr(renumber, "permuted", spy)
    monkeypatch.setattr(engine, "RENUMBER", False)
    ref = simulate(p, mode="epoch", epsilon=0.01)
    assert not used
    monkeypatch.setattr(engine, "RENUMBER", True)
    new = simulate(p, mode="epoch", epsilon=0.01)
    if kernels == "numba":
        assert len(used) == 1 and not np.array_equal(used[0], np.arange(used[0].shape[0]))
        _close(new, ref)
    else:
        assert not used
        for name in ("finish_s", "resource_busy_s"):
            assert np.array_equal(getattr(new, name), getattr(ref, name))


def test_receiver_order_and_back():
    res = np.array([[0, 5], [1, 3], [2, 5], [3, 3]])
    perm = renumber.receiver_order(res)
    assert perm.tolist() == [1, 3, 0, 2]
    assert renumber.receiver_order(res[perm]) is None
