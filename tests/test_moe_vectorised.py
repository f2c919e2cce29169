"""The vectorised MoE token routing and flows equal the per-rank loop they replaced (same seed)."""

import numpy as np
import pytest

from collectives.moe import TokenRouting, _route_tokens, moe_flows
from tests.moe_reference import moe_flows_loop, route_tokens_loop

CASES = [
    # kind, n_ranks, ranks per node, tokens, experts, topk
    ("skewed", 16, 4, 300, 256, 8),
    ("skewed", 8, 8, 257, 129, 2),      # chunks end inside ranks
    ("skewed", 6, 1, 100, 6, 3),        # one rank per node, few experts (many repeats to redraw)
    ("uniform", 12, 4, 200, 192, 6),
    ("uniform", 8, 2, 64, 16, 2),
    ("node_limited", 16, 4, 128, 64, 8),
    ("node_limited", 8, 1, 64, 32, 4),  # one rank per node
    ("deepseek", 8, 4, 96, 64, 4),
]


@pytest.mark.parametrize("kernels", ["numpy", "numba"])
@pytest.mark.parametrize("kind,n,per_node,T,E,k", CASES)
def test_route_tokens_equals_the_per_rank_loop(kind, n, per_node, T, E, k, kernels, monkeypatch):
    """Both paths: numpy, and the compiled draw and counts (collectives.token_kernels) on every size."""
    import collectives.moe as moe
    from fabric import kernels as fk

    if kernels == "numba" and not fk.available():
        pytest.skip("numba not installed")
    monkeypatch.setenv("FABRIC_EMU_KERNELS", kernels)
    monkeypatch.setattr(moe, "_BLOCK_DRAWS", 3 * T * E)  # several blocks, one of them partial
    monkeypatch.setattr(moe, "_CHUNK_TOKENS", 3 * T // 2 + 1)  # chunks not aligned with ranks
    node_of = np.arange(n) // per_node
    perm = np.random.default_rng(0).permutation(n)  # nodes not contiguous in rank order
    for seed, nodes in ((0, node_of), (7, node_of), (3, node_of[perm])):
        tr = TokenRouting(kind, tokens_per_rank=T, experts=E, topk=k, seed=seed, skew_sigma=1.5)
        got = _route_tokens(tr, n, nodes)
        ref = route_tokens_loop(tr, n, nodes)
        for f in ("rank_counts", "node_counts", "node_of", "copy_counts"):
            np.testing.assert_array_equal(getattr(got, f), getattr(ref, f), err_msg=f)


def test_skewed_counts_have_the_plackett_luce_means():
    """Mean copies per rank equal T x the inclusion probabilities of the experts it holds (exact law)."""
    from tests.test_token_routing import _exact_set_law
    n, T, E, k = 3, 20_000, 6, 2
    tr = TokenRouting("skewed", tokens_per_rank=T, experts=E, topk=k, seed=4, skew_sigma=1.0)
    w = np.random.default_rng(4).lognormal(0.0, 1.0, E)  # the popularity the draw starts with
    incl = np.zeros(E)
    for s, p in _exact_set_law(w, k).items():
        incl[list(s)] += p
    got = _route_tokens(tr, n, np.arange(n)).copy_counts.sum(axis=0) / (n * T)
    np.testing.assert_allclose(got, incl.reshape(n, -1).sum(axis=1), atol=0.01)


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
