"""The vectorised MoE token routing and flows equal the per-rank loop they replaced (same seed)."""

import numpy as np
import pytest

from collectives.moe import TokenRouting, _gumbel_scores, _route_tokens, moe_flows
from tests.moe_reference import moe_flows_loop, route_tokens_loop

CASES = [
    # kind, n_ranks, ranks per node, tokens, experts, topk   (experts >= 4 (2k + 8): thresholded path)
    ("skewed", 16, 4, 300, 256, 8),
    ("skewed", 8, 8, 257, 129, 2),      # odd draws per rank: a 64-bit word spans two ranks
    ("uniform", 12, 4, 200, 192, 6),
    ("uniform", 8, 2, 64, 16, 2),       # small expert count: every score computed
    ("node_limited", 16, 4, 128, 64, 8),
    ("deepseek", 8, 4, 96, 64, 4),
]


@pytest.mark.parametrize("kind,n,per_node,T,E,k", CASES)
def test_route_tokens_equals_the_per_rank_loop(kind, n, per_node, T, E, k, monkeypatch):
    import collectives.moe as moe
    monkeypatch.setattr(moe, "_BLOCK_DRAWS", 3 * T * E)  # several blocks, one of them partial
    node_of = np.arange(n) // per_node
    for seed in (0, 7):
        tr = TokenRouting(kind, tokens_per_rank=T, experts=E, topk=k, seed=seed, skew_sigma=1.5)
        got = _route_tokens(tr, n, node_of)
        ref = route_tokens_loop(tr, n, node_of)
        for f in ("rank_counts", "node_counts", "node_of", "copy_counts"):
            np.testing.assert_array_equal(getattr(got, f), getattr(ref, f), err_msg=f)


def test_gathered_scores_equal_the_elementwise_scores():
    rng = np.random.default_rng(3)
    u = rng.random((64, 1000), dtype=np.float32)
    a = np.log(rng.lognormal(0, 1, 1000)).astype(np.float32)[None, :]
    full = _gumbel_scores(u, a)
    r, c = np.nonzero(u > 0.9)
    np.testing.assert_array_equal(_gumbel_scores(u[r, c], a[0, c]), full[r, c])


@pytest.mark.parametrize("form", ["hier", "direct", "ll"])
@pytest.mark.parametrize("combine", [False, True])
def test_moe_flows_equal_the_loop(form, combine):
    n, per_node = 16, 4
    node_of = np.arange(n) // per_node
    perm = np.random.default_rng(0).permutation(n)  # nodes not contiguous in rank order
    for nodes in (node_of, node_of[perm]):
        tr = TokenRouting("skewed", tokens_per_rank=64, experts=64, topk=4, seed=2)
        traffic = _route_tokens(tr, n, nodes)
        local = np.zeros(n, np.int64)
        for N in range(n // per_node):
            members = np.flatnonzero(traffic.node_of == N)
            local[members] = np.arange(len(members))
        got = moe_flows(traffic, local, 7168.0, form=form, combine=combine)
        ref = moe_flows_loop(traffic, local, 7168.0, form=form, combine=combine)
        for g, r in zip(got, ref):
            np.testing.assert_array_equal(g, r)
