"""The ``hier`` MoE flows with one rank per node (one GPU per host) take a path without the grids: the
same arrays as the per-rank loop they replaced, in the same order."""

import numpy as np
import pytest

from collectives.moe import TokenRouting, _route_tokens, moe_flows
from tests.moe_reference import moe_flows_loop


@pytest.mark.parametrize("combine", [False, True])
@pytest.mark.parametrize("n", [1, 2, 13])
def test_hier_one_rank_per_node_equals_the_loop(n, combine):
    perm = np.random.default_rng(n).permutation(n)  # node numbers not in rank order
    for nodes in (np.arange(n), perm):
        tr = TokenRouting("skewed", tokens_per_rank=64, experts=max(n, 4), topk=min(4, max(n, 4)), seed=3)
        traffic = _route_tokens(tr, n, nodes)
        local = np.zeros(n, np.int64)
        got = moe_flows(traffic, local, 7168.0, form="hier", combine=combine)
        ref = moe_flows_loop(traffic, local, 7168.0, form="hier", combine=combine)
        assert len(got[0]) == len(ref[0])
        for g, r in zip(got, ref):
            assert g.dtype == r.dtype or g.dtype.kind == r.dtype.kind
            np.testing.assert_array_equal(g, r)
        if (nodes == np.arange(n)).all():  # nodes in rank order: the direct form's flows (all network copies)
            d = moe_flows(traffic, local, 7168.0, form="direct", combine=combine)
            for g, r in zip(got, d):
                np.testing.assert_array_equal(g, r)
