"""Expert-parallel kernel mechanisms, round 4 (issue 8), each against a measurement or a source's rule."""

import tomllib
from pathlib import Path

from collectives import Collective, TokenRouting, run
from collectives.validate import _router

DATA = Path(__file__).resolve().parents[1] / "collectives" / "data"


def _deepep_gb200_dispatch_GBps(ep: int) -> float:
    r = _router("gb200-nvl72", {})
    tr = TokenRouting("uniform", tokens_per_rank=4096, experts=8 * ep)
    opts = {"moe": tr, "metric": "logical", "sms": 32}
    [res] = run(r, [Collective("moe_dispatch", tuple(range(ep)), 0, options=opts)], mode="epoch", epsilon=0.01)
    return res.algbw_Bps / 1e9


def test_deepep_sm_path_pays_for_peers_beyond_eight():
    """DeepEP's intranode kernels split every channel's warps by peer (intranode.cu
    ``num_threads_per_rank = kNumThreads / kNumRanks``): with 32 SMs on one GB200 NVL72 the FP8 dispatch
    falls from 447.8 GB/s at 8 ranks to 393.7 at 16 (README_Hybrid-EP.md @ 94a9f8f, 'DeepEP Performance
    Results'). The SM path fitted on 8 ranks alone made 16 ranks 5 % faster than 8."""
    assert _deepep_gb200_dispatch_GBps(16) < 1.03 * _deepep_gb200_dispatch_GBps(8)


def test_pplx_rows_name_the_benchmarked_code():
    """pplx-kernels' README table was added in 7af3059 (2025-03-25), the commit after the initial one:
    the kernels it timed are those of that tree (internode_scatter.cu / internode_gather.cu), not the
    later dispatch / combine rewrite; a row citing only a later commit misdates its kernel."""
    doc = tomllib.loads((DATA / "published_points.toml").read_text())
    rows = [p for p in doc["moe_alltoall"] if p.get("group") == "pplx-kernels-h100"]
    assert len(rows) == 10
    assert all("7af3059" in p["settings"]["kernel"] for p in rows)
