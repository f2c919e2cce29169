"""Audit of the worst-fitting EP combine rows (docs/collectives.md, round 10): data checks, no model run.

The UCCL-EP p5en normal-mode table publishes bandwidth and latency per cell, so their product is the bytes
the benchmark counted: the combine / dispatch ratio must be the BF16 / FP8 bytes per token the rows claim.
DeepEP V1 caps one NVLink group at 8 ranks (``NUM_MAX_NVL_PEERS``), so a DeepEP V1 sweep beyond 8 ranks
must name the internode kernels it ran.
"""

import tomllib
from importlib import resources
from pathlib import Path

import pytest

PATH = Path(str(resources.files("collectives") / "data" / "published_points.toml"))
HIDDEN = 7168
FP8_BYTES = HIDDEN + HIDDEN // 128 * 4  # FP8 payload + one FP32 scale per 128 channels
BF16_BYTES = 2 * HIDDEN
DEEPEP_NVL_PEERS = 8  # deepseek-ai/DeepEP csrc/kernels/configs.cuh @ 94a9f8f


def _rows():
    return {p["id"]: p for p in tomllib.loads(PATH.read_text())["moe_alltoall"]}


@pytest.mark.parametrize("rid", ["uccl-ep-normal-p5en-ep16", "uccl-ep-normal-p5en-ep24", "uccl-ep-normal-p5en-ep32"])
def test_uccl_p5en_counted_bytes_match_dtypes(rid):
    p = _rows()[rid]
    assert (p["settings"]["dispatch_dtype"], p["settings"]["combine_dtype"]) == ("fp8", "bf16")
    assert p["hidden"] == HIDDEN and p["metric"] == "rdma"
    combine_B = p["combine_GBps"] * p["combine_latency_us"]
    dispatch_B = p["dispatch_GBps"] * p["dispatch_latency_us"]
    assert combine_B / dispatch_B == pytest.approx(BF16_BYTES / FP8_BYTES, rel=0.08)


def test_deepep_v1_sweeps_beyond_one_nvl_group_name_internode_kernels():
    checked = 0
    for p in _rows().values():
        kernel = str(p.get("settings", {}).get("kernel", ""))
        if "DeepEP V1" not in kernel or "low-latency" in kernel.lower() or "ep_dispatch_combine_GBps" not in p:
            continue
        if max(int(ep) for ep, _, _ in p["ep_dispatch_combine_GBps"]) > DEEPEP_NVL_PEERS:
            assert "internode" in kernel, p["id"]
            checked += 1
    assert checked >= 1
