"""Round 16b (issue 8, review r16 item 10): a cached plan is the plan of its size, whatever was cached before.

The plan cache rescales a plan of one size to another when NCCL's size-dependent decisions agree. Every part
of the plan that grows with the size must then be rescaled with it; a term that is not (round 12's Simple ring
copy, ``ring_copy.ring_copy_s``, linear in the size and part of the latency) kept the first size's value: a
2-GPU H100 Simple ring above ~9 MiB returned 30.55 us of latency against 31.5-35.0 us uncached.
"""

import numpy as np
import pytest

from collectives.ops import Collective
from collectives.plancache import PlanCache
from collectives.runner import planner_for
from collectives.validate import _router

#: non-power-of-two sizes from 1.5 KiB to 27 MiB, rising, then the same sizes falling (so a small size and a large
#: size each get planned first once)
_SIZES = sorted({int(1.13 ** k) for k in range(60, 140)})


def _mismatches(preset: str, n: int, coll: str, algo: str, sizes) -> list:
    router = _router(preset, {})
    fresh, cache = planner_for(router), PlanCache(planner_for(router))
    bad = []
    for s in sizes:
        op = Collective(coll, tuple(range(n)), int(s), algorithm=algo)
        a, b = fresh.plan(op), cache.plan(op)
        same = (a.algorithm == b.algorithm and a.protocol == b.protocol
                and abs(a.latency_s - b.latency_s) <= 1e-9 * max(a.latency_s, 1e-9)
                and abs(a.kernel_efficiency - b.kernel_efficiency) <= 1e-12
                and abs(a.min_time_s - b.min_time_s) <= 1e-9 * max(a.min_time_s, 1e-9)
                and np.allclose(a.flows.latency_s, b.flows.latency_s, rtol=1e-9, atol=0.0)
                and np.allclose(a.flows.size_bytes, b.flows.size_bytes, rtol=1e-9, atol=0.0))
        if not same:
            bad.append((s, a.protocol, a.latency_s, b.latency_s))
    return bad


@pytest.mark.parametrize("preset,n,coll,algo", [
    ("hgx-h100", 2, "all_gather", "ring"), ("hgx-h100", 2, "all_reduce", "ring"),
    ("hgx-h100", 8, "all_gather", "ring"), ("hgx-h100", 8, "all_reduce", "auto"),
    ("hgx-h100", 2, "reduce_scatter", "auto")])
@pytest.mark.parametrize("order", ["rising", "falling"])
def test_cached_plans_equal_fresh_plans_over_a_size_sweep(preset, n, coll, algo, order):
    sizes = _SIZES if order == "rising" else _SIZES[::-1]
    bad = _mismatches(preset, n, coll, algo, sizes)
    assert not bad, f"{len(bad)} cached plans differ from fresh ones, e.g. {bad[:3]}"
