"""Topology builders: structure checked against the catalog and closed forms."""

import networkx as nx
import pytest

from topologies import catalog
from topologies.clos import fat_tree, split_ports
from topologies.cluster import cluster
from topologies.errors import SpecError
from topologies.export import read, write
from topologies.graph import summarize
from topologies.nvlink import hgx, nvl
from topologies.presets import build, presets
from topologies.spec import load_topology, loads


def _gpu_links(G, gpu):
    return [d for _, _, d in G.out_edges(gpu, data=True) if d["tier"] == "nvlink-up"]


@pytest.mark.parametrize("name", ["A100", "H100", "H200", "H800", "B200", "B300"])
def test_hgx_boards_follow_the_catalog_layout(name):
    spec = catalog.gpu(name)
    G = hgx(name)
    s = summarize(G)
    assert s.gpus == 8 and s.switches == spec.nvswitch_chips
    for g in (n for n, d in G.nodes(data=True) if d["kind"] == "gpu"):
        links = _gpu_links(G, g)
        assert len(links) == spec.nvlink_links
        assert sum(d["capacity_Bps"] for d in links) == pytest.approx(spec.nvlink_Bps)
        per_chip = [sum(1 for d in links if d["plane"] == c) for c in range(spec.nvswitch_chips)]
        assert tuple(per_chip) == spec.links_per_chip
    # every cable is two directed edges with the same capacity
    assert s.links == 2 * s.cables


def test_h800_has_its_reduced_link_count():
    G = hgx("H800")
    g = "d0/gpu0"
    assert len(_gpu_links(G, g)) == 8
    assert sum(d["capacity_Bps"] for d in _gpu_links(G, g)) == pytest.approx(200e9)


@pytest.mark.parametrize("gpu", ["GB200", "GB300"])
def test_nvl72_every_gpu_one_link_to_each_of_18_chips(gpu):
    G = nvl(72, gpu)
    s = summarize(G)
    assert (s.gpus, s.switches) == (72, 18)
    for c in range(18):
        assert G.in_degree(f"d0/nvsw{c}") == 72 and G.out_degree(f"d0/nvsw{c}") == 72
    for i in range(72):
        chips = sorted(v for _, v in G.out_edges(f"d0/gpu{i}"))
        assert chips == sorted(f"d0/nvsw{c}" for c in range(18))


def test_parametric_nvl_and_port_limit():
    assert summarize(nvl(36)).gpus == 36
    with pytest.raises(SpecError, match="ports"):
        nvl(80)


def test_aggregate_merges_parallel_cables():
    G = hgx("H100", aggregate=True)
    assert summarize(G).cables == 144  # still counts physical cables
    assert G.number_of_edges() == 8 * 4 * 2
    assert sum(d["capacity_Bps"] for _, _, d in G.out_edges("d0/gpu0", data=True)) == pytest.approx(450e9)


@pytest.mark.parametrize("radix, r, down, up", [(48, 1, 24, 24), (48, 2, 32, 16), (64, 3, 48, 16), (64, 1, 32, 32)])
def test_port_split(radix, r, down, up):
    assert split_ports(radix, r) == (down, up)


@pytest.mark.parametrize("hosts, radix, tiers", [(16, 8, 2), (1024, 48, 2), (1152, 48, 2), (128, 8, 3), (8, 8, 1)])
def test_fat_tree_fewest_tiers_and_radix_respected(hosts, radix, tiers):
    G = fat_tree(hosts, radix)
    assert G.graph["meta"]["clos"]["tiers"] == tiers
    for n, d in G.nodes(data=True):
        if d["kind"] == "switch":
            assert G.out_degree(n) <= radix, n
    assert summarize(G).gpus == hosts


def test_three_tier_k_ary_fat_tree_closed_form():
    # k-ary fat-tree (Al-Fares): k^3/4 hosts, k^2/2 edge + k^2/2 aggregation, k^2/4 core switches
    k = 8
    G = fat_tree(k**3 // 4, k, tiers=3)
    roles = summarize(G).switches_by_role
    assert roles == {"leaf": k * k // 2, "spine": k * k // 2, "core": k * k // 4}


def test_fat_tree_planes_and_oversubscription():
    G = fat_tree(64, 16, planes=2, oversubscription=3)
    assert sum(1 for _, d in G.nodes(data=True) if d["role"] == "leaf") == 2 * 6
    nic_up = [d for _, _, d in G.out_edges("d0/nic0", data=True) if d["tier"] == "nic-up"]
    assert sorted(d["plane"] for d in nic_up) == [0, 1]


def test_cluster_is_rail_optimized():
    G = cluster("H100", 4, "quantum-2")
    # NIC i of every node hangs from rail i's leaf
    for d in range(4):
        for i in range(8):
            (leaf,) = [v for _, v, e in G.out_edges(f"d{d}/nic{i}", data=True) if e["tier"] == "nic-up"]
            assert G.nodes[leaf]["rail"] == i
    s = summarize(G)
    assert s.gpus == 32 and s.nics == 32


def test_nvl72_cluster_rails_are_tray_positions():
    G = cluster("GB300", 4, "quantum-x800")
    rails = {G.nodes[f"d0/nic{i}"]["rail"] for i in range(72)}
    assert rails == {0, 1, 2, 3}
    nic = catalog.nic("ConnectX-8")
    e = next(d for _, _, d in G.out_edges("d0/nic0", data=True) if d["tier"] == "nic-up")
    assert e["capacity_Bps"] == nic.line_rate_Bps


def test_presets_build_and_reject_unknown_overrides():
    for p in presets():
        kwargs = {"sus": p.params[0].default} if p.name.startswith("superpod") else {}
        if p.name.startswith("superpod") and p.name != "superpod-h100":
            continue  # large ones are exercised in test_superpod
        G = build(p.name, kwargs)
        assert summarize(G).gpus > 0
    with pytest.raises(SpecError, match="allowed: "):
        build("hgx-h100", {"bogus": "1"})
    with pytest.raises(SpecError, match="scaleout"):
        build("hgx-h100", {"domains": "2"})
    with pytest.raises(SpecError, match="quantum-2"):
        build("hgx-h100", {"domains": "2", "scaleout": "ethernet"})
    with pytest.raises(SpecError, match="int"):
        build("fat-tree", {"hosts": "1.5"})


def test_spec_files_in_docs_build(repo):
    import tomllib

    # topology specs only: docs/examples also holds sweep files (op/base/grid/zip tables)
    files = [f for f in sorted((repo / "docs" / "examples").glob("*.toml"))
             if not {"op", "base", "grid", "zip"} & set(tomllib.loads(f.read_text()))]
    assert files
    for f in files:
        G = load_topology(str(f))
        assert summarize(G).gpus > 0


@pytest.mark.parametrize("text, match", [
    ('preset = "hgx-h100"\nfoo = 1', "spec.foo"),
    ('[domain]\ngpu = "H100"\ncount = 2', "scaleout"),
    ('[fat_tree]\nhosts = 64\nradix = 16\nlink = 400', "unit"),
    ('[fat_tree]\nhosts = 64\nradix = 16\nlink = "400G"', "bandwidth"),
    ('preset = "hgx-h100"\n[[failures]]\nwhere = "x"', "failures"),
    ('preset = "hgx-h100"\n[[degradations]]\nselect = "x"\nfraction = 2', "fraction"),
    ('preset = "hgx-h100"\n[domain]\ngpu = "H100"', "exactly one"),
    ("this is = not toml [", "TOML"),
])
def test_spec_errors_name_the_field(text, match):
    with pytest.raises(SpecError, match=match):
        loads(text)


@pytest.mark.parametrize("fmt", ["json", "graphml"])
def test_export_roundtrip(tmp_path, fmt):
    G = cluster("H100", 2, "quantum-2")
    path = tmp_path / f"g.{fmt}"
    write(G, path, fmt)
    H = read(path)
    assert H.number_of_nodes() == G.number_of_nodes() and H.number_of_edges() == G.number_of_edges()
    caps = sorted(d["capacity_Bps"] for _, _, d in H.edges(data=True))
    assert caps == sorted(d["capacity_Bps"] for _, _, d in G.edges(data=True))
    assert H.graph["meta"]["domains"] == 2
    assert not list(tmp_path.glob("*.tmp"))


def test_export_refuses_bad_format_and_missing_dir(tmp_path):
    with pytest.raises(SpecError, match="format"):
        write(hgx("H100"), tmp_path / "x.gv", "dot")
    with pytest.raises(SpecError, match="does not exist"):
        write(hgx("H100"), tmp_path / "no" / "x.json", "json")


def test_graph_is_networkx_multidigraph_with_standard_attributes():
    G = cluster("H100", 2, "quantum-2").to_networkx()
    assert isinstance(G, nx.MultiDiGraph)
    for _, d in G.nodes(data=True):
        assert {"kind", "role", "domain"} <= set(d)
    for _, _, d in G.edges(data=True):
        assert {"capacity_Bps", "latency_s", "tier", "plane", "cable"} <= set(d)


def test_cluster_nic_follows_the_gpu_platform():
    G = build("hgx-h100", {"domains": 2, "scaleout": "spectrum-x"})
    assert G.graph["meta"]["nic"] == "ConnectX-7"
    e = next(d for _, _, d in G.out_edges("d0/nic0", data=True) if d["tier"] == "nic-up")
    assert e["capacity_Bps"] == 50e9
    assert build("gb300-nvl72", {"domains": 2, "scaleout": "quantum-2"}).graph["meta"]["nic"] == "ConnectX-8"


@pytest.mark.parametrize("ratios", [[1, 2], [2, 2], [1, 3]])
def test_three_tier_fat_tree_with_spine_oversubscription(ratios):
    G = fat_tree(1024, 32, tiers=3, oversubscription=ratios)
    for n, d in G.nodes(data=True):
        if d["kind"] == "switch":
            assert G.out_degree(n) <= 32
    spine = next(n for n, d in G.nodes(data=True) if d["role"] == "spine")
    tiers = [d["tier"] for _, _, d in G.out_edges(spine, data=True)]
    down, up = tiers.count("spine-down"), tiers.count("spine-up")
    assert down / up == pytest.approx(ratios[1], rel=0.1)


def test_fat_tree_planes_may_not_exceed_the_nic():
    with pytest.raises(SpecError, match="exceed"):
        fat_tree(64, 16, planes=2, nic="cx7", link_Bps=50e9)
    assert summarize(fat_tree(64, 16, planes=2, nic="cx7", link_Bps=25e9)).gpus == 64
