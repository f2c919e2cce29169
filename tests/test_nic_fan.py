"""The numpy path of the many-peer NIC counts against a per-flow oracle (tables with NIC hops in mixed columns)."""

import numpy as np
import pytest

from collectives.p2p import _PointToPointMixin

UP, DOWN, OTHER = 5, 6, 2


class _Tiers(_PointToPointMixin):
    def __init__(self, tier):
        self._rt = np.asarray(tier, np.int64)
        self._nic_tiers = np.array([UP, DOWN])


def _oracle(tier, res):
    """Per flow: max(distinct partners of its up / down port, 1) where it crosses a NIC port, else 0."""
    ups, dns = [], []
    for row in res:
        u = [r for r in row if r >= 0 and tier[r] == UP]
        d = [r for r in row if r >= 0 and tier[r] == DOWN]
        ups.append(max(u) if u else -1)
        dns.append(max(d) if d else -1)
    partners_of_up, partners_of_dn = {}, {}
    for u, d in zip(ups, dns):
        if u >= 0 and d >= 0:
            partners_of_up.setdefault(u, set()).add(d)
            partners_of_dn.setdefault(d, set()).add(u)
    out = []
    for u, d in zip(ups, dns):
        fan = max(len(partners_of_up[u]), len(partners_of_dn[d])) if u >= 0 and d >= 0 else 0
        out.append(max(fan, 1) if (u >= 0 or d >= 0) else 0)
    return np.array(out, np.int64)


@pytest.mark.parametrize("seed", range(6))
def test_fan_connections_match_a_per_flow_oracle(seed, monkeypatch):
    monkeypatch.setenv("FABRIC_EMU_KERNELS", "numpy")
    rng = np.random.default_rng(seed)
    R = 40
    tier = rng.choice([UP, DOWN, OTHER], size=R)
    F, H = 300, 5
    res = rng.integers(-1, R, size=(F, H)).astype(np.int32)
    if seed % 2:  # a whole column of up ports and one of down ports, as an all-to-all over the network has
        res[:, 0] = rng.choice(np.flatnonzero(tier == UP), size=F)
        res[:, -1] = rng.choice(np.flatnonzero(tier == DOWN), size=F)
    planner = _Tiers(tier)
    got, _, _ = planner.nic_fan_connections(res)
    np.testing.assert_array_equal(got, _oracle(tier, res))
    peer = planner.nic_peer_ports(res)
    np.testing.assert_array_equal(np.where(got > 0, np.maximum(peer, 1), 0), got)


def test_no_nic_port_gives_zeros(monkeypatch):
    monkeypatch.setenv("FABRIC_EMU_KERNELS", "numpy")
    planner = _Tiers([OTHER] * 8)
    res = np.array([[0, 1, -1], [2, 3, 4]], np.int32)
    np.testing.assert_array_equal(planner.nic_fan_connections(res)[0], [0, 0])
