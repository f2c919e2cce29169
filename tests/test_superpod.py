"""SuperPOD reference layouts reproduce the published switch and cable counts.

The expected numbers are NVIDIA's published tables as transcribed in
notes/hardware.md section 8.1 (an independent source, not our output).
"""

import pytest

from topologies.cluster import superpod
from topologies.graph import summarize

# sus: (nodes, GPUs, leaf, spine, compute + UFM cables, spine-leaf cables)   [S23-H100] Table 4
H100 = {1: (31, 248, 8, 4, 252, 256), 2: (63, 504, 16, 8, 508, 512), 3: (95, 760, 24, 16, 764, 768),
        4: (127, 1016, 32, 16, 1020, 1024)}
# sus: (nodes, GPUs, leaf, spine, core, node-leaf, leaf-spine, spine-core)      [S23-B200]
B200 = {2: (64, 512, 16, 8, 0, 512, 512, 0), 4: (128, 1024, 32, 16, 0, 1024, 1024, 0),
        8: (256, 2048, 64, 32, 0, 2048, 2048, 0), 16: (512, 4096, 128, 128, 64, 4096, 4096, 4096)}
# sus: (nodes, GPUs, leaf, spine, node-leaf, leaf-spine)                        [S23-B300XDR] Table 3
B300 = {1: (72, 576, 8, 4, 576, 576), 2: (144, 1152, 16, 8, 1152, 1152), 4: (288, 2304, 32, 18, 2304, 2304),
        8: (576, 4608, 64, 36, 4608, 4608)}


@pytest.mark.parametrize("sus", sorted(H100))
def test_h100_superpod(sus):
    nodes, gpus, leaf, spine, compute_ufm, spine_leaf = H100[sus]
    G = superpod("h100", sus)
    s = summarize(G)
    assert G.graph["meta"]["nodes"] == nodes and s.gpus == gpus
    assert s.switches_by_role == {"nvswitch": 4 * nodes, "leaf": leaf, "spine": spine}
    assert s.cables_by_tier["nic"] + G.graph["meta"]["ufm_cables"] == compute_ufm
    assert s.cables_by_tier["leaf"] == spine_leaf


@pytest.mark.parametrize("sus", sorted(B200))
def test_b200_superpod(sus):
    nodes, gpus, leaf, spine, core, nl, ls, sc = B200[sus]
    s = summarize(superpod("b200", sus))
    expected = {"nvswitch": 2 * nodes, "leaf": leaf, "spine": spine}
    if core:
        expected["core"] = core
    assert s.gpus == gpus and s.switches_by_role == expected
    assert (s.cables_by_tier["nic"], s.cables_by_tier["leaf"], s.cables_by_tier.get("spine", 0)) == (nl, ls, sc)


@pytest.mark.parametrize("sus", sorted(B300))
def test_b300_xdr_superpod(sus):
    nodes, gpus, leaf, spine, nl, ls = B300[sus]
    s = summarize(superpod("b300-xdr", sus))
    assert s.gpus == gpus and s.switches_by_role == {"nvswitch": 2 * nodes, "leaf": leaf, "spine": spine}
    assert (s.cables_by_tier["nic"], s.cables_by_tier["leaf"]) == (nl, ls)


def test_gb200_superpod_one_su():
    # [S11]: SU = 8 racks = 576 GPUs; 4 rail groups of 8 leaves + 6 spines; a leaf has 18 GPU ports down
    # and 18 up (3 to each of its group's 6 spines)
    G = superpod("gb200", 1)
    s = summarize(G)
    assert s.gpus == 576 and s.switches_by_role == {"nvswitch": 144, "leaf": 32, "spine": 24}
    # one CX-7 per GPU to its rail's leaf; 18 up-links per leaf; each GPU one NVLink to each of 18 chips
    assert s.cables_by_tier["nic"] == 576 and s.cables_by_tier["leaf"] == 32 * 18
    assert s.cables_by_tier["nvlink"] == 576 * 18
    for leaf in (n for n, d in G.nodes(data=True) if d["role"] == "leaf"):
        tiers = [d["tier"] for _, _, d in G.out_edges(leaf, data=True)]
        assert tiers.count("nic-down") == 18 and tiers.count("leaf-up") == 18
        spines = {v for _, v, d in G.out_edges(leaf, data=True) if d["tier"] == "leaf-up"}
        assert len(spines) == 6


def test_gb200_multi_su_adds_six_core_groups():
    s = summarize(superpod("gb200", 2))
    assert s.switches_by_role["leaf"] == 64 and s.switches_by_role["spine"] == 48
    assert s.switches_by_role["core"] % 6 == 0
