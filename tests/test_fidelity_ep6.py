"""Round 6 of issue 8, EP kernels (docs/collectives.md, "Round 6 (2026-12-02), EP kernels").

DeepEP-type internode normal kernels (DeepEP V1 / V2 hybrid mode, HybridEP, UCCL-EP) send one network copy per
(token, node) and forward it inside the timed kernel over NVLink to every rank of that node that needs it. A
published "RDMA" bandwidth therefore fixes the kernel time (counted bytes / GB/s) and with it the NVLink rate into
each GPU that the forward needs. A row whose implied NVLink rate exceeds its GPU's NVLink per direction names the
wrong GPU: the check below is a closed form (expected distinct ranks and nodes of a uniform top-k draw over
contiguous expert blocks), independent of the flow model.
"""

from __future__ import annotations

import tomllib
from math import comb
from pathlib import Path

import pytest

from topologies import catalog

DATA = Path(__file__).resolve().parents[1] / "collectives" / "data" / "published_points.toml"


def _hit(experts: int, block: int, k: int) -> float:
    """Probability that a uniform top-k draw of distinct experts touches a given block of ``block`` experts."""
    return 1.0 - comb(experts - block, k) / comb(experts, k)


def _forward_rows():
    doc = tomllib.loads(DATA.read_text())
    for p in doc["moe_alltoall"]:
        kernel = str(p.get("settings", {}).get("kernel", "")).lower()
        nodes = int(p.get("domains", 1))
        # two nodes: node-limited routing (top-4 of 8 groups) cannot exclude a node, so the draw is uniform
        if p.get("metric") != "rdma" or nodes < 2 or "low-latency" in kernel or "dispatch_GBps" not in p:
            continue
        if p.get("routing") != "uniform" and nodes != 2:
            continue
        yield p


def _implied_nvlink_in_Bps(p, gbps: float, bytes_per_token: float) -> float:
    ep, nodes, k, tokens = p["ep"], int(p["domains"]), p["topk"], p["tokens"]
    experts = p.get("experts", 256)
    counted = tokens * nodes * _hit(experts, experts // nodes, k) * bytes_per_token  # (token, node) pairs, own kept
    time_s = counted / (gbps * 1e9)
    received = ep * tokens * _hit(experts, experts // ep, k)  # tokens a rank receives, all sources
    forwarded = received * (ep - nodes) / ep  # all but those whose forwarder (same local index) is the rank itself
    return forwarded * bytes_per_token / time_s


def test_the_check_covers_the_two_node_rows():
    ids = {p["id"] for p in _forward_rows()}
    assert {"deepep-v2-sm90-cx7-ep16", "deepep-v2-sm100-cx7-ep16", "hybridep-h100-ib-ep16"} <= ids


@pytest.mark.parametrize("p", list(_forward_rows()), ids=lambda p: p["id"])
def test_published_rdma_bandwidth_fits_the_gpus_nvlink(p):
    """DeepEP V2 SM90 8 x 2 (90 GB/s) needs ~258 GB/s into each GPU: not an H800 (200 GB/s per direction)."""
    h = p["hidden"]
    fp8 = h + h / 128 * 4
    gpu = catalog.gpu(p["system"].split("-", 1)[1].upper())
    need = _implied_nvlink_in_Bps(p, p["dispatch_GBps"], fp8)
    assert need <= gpu.nvlink_Bps, (p["id"], f"{need / 1e9:.0f} GB/s into each GPU > {gpu.nvlink_Bps / 1e9:.0f}")


def test_v1_h800_internode_rows_fit_h800_nvlink():
    """The same check on DeepEP V1's own H800 table (legacy docs: "H800 (~160 GB/s NVLink maximum
    bandwidth)"): its 2-node 43 GB/s needs ~123 GB/s of forward, inside what the maintainers measured (160)."""
    doc = tomllib.loads((DATA.parent / "reference_points.toml").read_text())
    [p] = [q for q in doc["moe_alltoall"] if q.get("id") == "deepep-h800-internode"]
    gbps = dict((int(ep), g) for ep, g in p["ep_and_rdma_GBps"])[16]
    row = {"ep": 16, "domains": 2, "topk": p.get("topk", 8), "tokens": p.get("tokens", 4096),
           "experts": p.get("experts", 256)}
    h = p.get("hidden", 7168)
    need = _implied_nvlink_in_Bps(row, gbps, h + h / 128 * 4)
    assert need <= 160e9 <= catalog.gpu("H800").nvlink_Bps


def test_v2_sm90_two_node_dispatch_reaches_the_published_bandwidth():
    """With the forward on 18 NVLink4 links the 8 x 2 dispatch is NIC-bound, as DeepEP V2 reports
    (90 GB/s RDMA, local traffic counted); on H800's NVLink the model stayed at 46.5 GB/s (-48 %)."""
    from collectives.validate import validate

    rep = validate(DATA, ids=["deepep-v2-sm90-cx7-ep16"])
    [row] = [r for r in rep.rows if r.id.endswith(":dispatch")]
    assert abs(row.predicted / row.measured - 1) < 0.10
