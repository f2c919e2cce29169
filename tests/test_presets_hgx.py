"""The hgx-a100 (DGX A100) and hgx-h20 presets: they build, with the catalog's counts and NICs."""

import collections

import pytest

from fabric import Router, compile_fabric
from topologies import build, catalog
from topologies.presets import preset
from topologies.units import parse_bandwidth


def roles(G):
    return collections.Counter(d.get("role") for _, d in G.nodes(data=True))


@pytest.mark.parametrize("name, gpu, switches", [("hgx-a100", "A100", 6), ("hgx-h20", "H20", 4)])
def test_board_presets_build_with_their_counts(name, gpu, switches):
    assert preset(name).name == name
    G = build(name)
    r = roles(G)
    assert r["gpu"] == 8 and r["nvswitch"] == switches and r["nic"] == 0
    cf = compile_fabric(G)
    assert cf.meta["gpu"] == gpu
    # every GPU's NVLink links to the switches add up to its catalog total, per direction
    g = catalog.gpu(gpu)
    per_gpu = collections.Counter()
    for u, v, d in G.edges(data=True):
        if G.nodes[u].get("role") == "gpu" and G.nodes[v].get("role") == "nvswitch":
            per_gpu[u] += d["capacity_Bps"]
    assert len(per_gpu) == 8 and all(c == pytest.approx(g.nvlink_Bps) for c in per_gpu.values())


def test_dgx_a100_scale_out_uses_hdr_connectx6():
    G = build("hgx-a100", {"domains": 4, "scaleout": "quantum-2"})
    r = roles(G)
    assert r["gpu"] == 32 and r["nic"] == 32 and r["nvswitch"] == 24
    cf = compile_fabric(G)
    assert cf.meta["nic"] == "ConnectX-6"
    nic = catalog.nic("cx6")
    assert nic.line_rate_Bps == parse_bandwidth("200Gb/s") and catalog.default_nic("A100") is nic
    # NIC -> leaf cables run at the HDR rate (the NDR switch port is faster)
    up = [d["capacity_Bps"] for u, v, d in G.edges(data=True)
          if G.nodes[u].get("role") == "nic" and G.nodes[v].get("role") == "leaf"]
    assert len(up) == 32 and set(up) == {nic.line_rate_Bps}
    Router(cf)  # routable


def test_h20_catalog_numbers():
    g = catalog.gpu("h20")
    assert (g.peak_bf16_flops, g.peak_fp8_flops, g.hbm_bytes, g.hbm_Bps) == (148e12, 296e12, 96e9, 4.0e12)
    assert 2 * g.nvlink_Bps == parse_bandwidth("900GB/s")
    assert catalog.peak_flops("H20", "fp8") == 296e12
