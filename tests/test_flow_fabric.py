"""The flow engine on routed fabrics: all-to-all closed forms with the project's router."""

import math

import numpy as np
import pytest
from scipy.stats import norm

from fabric import FlowSet, Router, compile_fabric, simulate, to_problem
from topologies import fat_tree

C = 50e9


def _all_to_all(N, radix, policy, seed=0, size=1e6):
    cf = compile_fabric(fat_tree(N, radix, tiers=2, link_Bps=C))
    r = Router(cf)
    s, d = np.meshgrid(np.arange(N), np.arange(N), indexing="ij")
    m = s != d
    routes = r.route(s[m], d[m], policy=policy, seed=seed)
    problem, used = to_problem(FlowSet.from_routes(routes, size), r)
    return cf, routes, simulate(problem)


def test_sprayed_all_to_all_is_exactly_n_minus_1_sizes_over_c_plus_latency():
    N, size = 128, 1e6
    cf, routes, res = _all_to_all(N, 16, "spray", size=size)
    assert res.mode_used == "one-solve" and res.exact
    T_bw = (N - 1) * size / C
    assert res.makespan_s == pytest.approx(T_bw + routes.latency_s.max(), rel=1e-12)
    assert res.lower_bound_s == pytest.approx(T_bw, rel=1e-12)
    # every flow gets exactly c / (N - 1)
    transfer = res.transfer_end_s - res.start_s
    assert np.allclose(transfer, T_bw, rtol=1e-12)


@pytest.mark.parametrize("N, radix", [(256, 32), (512, 64)])
def test_ecmp_all_to_all_slowdown_matches_balls_into_bins(N, radix):
    cf = compile_fabric(fat_tree(N, radix, tiers=2, link_Bps=C))
    clos = cf.meta["clos"]
    H, L = clos["leaf_down_max"], clos["leaves"]
    paths = clos["leaf_up"]                  # equal-cost up-links per leaf (spines x parallel cables)
    mu = H * (N - H) / paths                 # expected flows per leaf-up link
    n_links = 2 * L * paths                  # leaf-up and spine-down links
    z = norm.ppf(1 - 1 / n_links)
    predicted = (mu + z * math.sqrt(mu * (1 - 1 / paths))) / (N - 1)
    observed = []
    for seed in range(3):
        _, routes, res = _all_to_all(N, radix, "ecmp", seed=seed)
        ideal = (N - 1) * 1e6 / C
        observed.append((res.makespan_s - routes.latency_s.max()) / ideal)
    assert np.mean(observed) == pytest.approx(predicted, rel=0.04)
    assert min(observed) > 1.02  # collisions always cost something at this scale


def test_ecmp_equal_size_is_one_solve_and_meets_the_load_bound():
    _, routes, res = _all_to_all(128, 16, "ecmp", seed=4)
    assert res.mode_used == "one-solve"
    assert res.makespan_s - routes.latency_s.max() == pytest.approx(res.lower_bound_s, rel=1e-9)


def test_trunks_used_next_to_their_own_members_are_expanded():
    from fabric import concat, simulate
    cf = compile_fabric(fat_tree(32, 8, tiers=2, link_Bps=C))
    r = Router(cf)
    s, d = np.arange(16), np.arange(16, 32)
    spray = FlowSet.from_routes(r.route(s, d, policy="spray"), 1e6, label="spray")
    ecmp = FlowSet.from_routes(r.route(d, s, policy="ecmp"), 1e6, label="ecmp")
    ecmp2 = FlowSet.from_routes(r.route(s[:4], d[:4], policy="ecmp", seed=9), 1e6, label="ecmp-same-way")
    fs = concat([spray, ecmp, ecmp2])
    problem, used = to_problem(fs, r)
    trunks = used[used >= r.n_links]
    links = set(used[used < r.n_links].tolist())
    assert not any(links & set(r.members(int(t)).tolist()) for t in trunks)
    # per-link bytes equal the sum of the per-flow link weights, trunked or not
    res = simulate(problem)
    link_bytes = r.expand_to_links(_scatter(r, used, res.resource_bytes))
    expected = np.zeros(r.n_links)
    for f in range(fs.n_flows):
        l, w = r.path_links(FlowSetRoutes(fs), f)
        np.add.at(expected, l, w * fs.size_bytes[f])
    assert np.allclose(link_bytes, expected)


def _scatter(router, used, values):
    full = np.zeros(router.n_resources)
    full[used] = values
    return full


class FlowSetRoutes:
    """Adapter: a FlowSet seen as Routes for Router.path_links."""

    def __init__(self, fs):
        self.res, self.weight = fs.res, fs.weight
