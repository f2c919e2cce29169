"""Bisection-bandwidth invariants, each against an independent computation."""

import networkx as nx
import numpy as np
import pytest

from fabric.bisection import bisection, cut_Bps, structured_partitions
from fabric.compiled import compile_fabric
from fabric.failures import apply_failures
from topologies.clos import fat_tree
from topologies.cluster import cluster
from topologies.nvlink import hgx, nvl
from topologies.presets import build

C = 50e9  # 400 Gb/s


def _nx_min_cut(cf, side_a, side_b) -> float:
    """Independent oracle: networkx minimum_cut on a simple digraph built from the compiled links."""
    D = nx.DiGraph()
    for s, d, c in zip(cf.link_src, cf.link_dst, cf.link_capacity_Bps):
        if c > 0:
            cap = D[s][d]["capacity"] + c if D.has_edge(s, d) else c
            D.add_edge(int(s), int(d), capacity=cap)
    for r in side_a:
        D.add_edge("S", int(cf.gpus[r]))  # no capacity attribute = infinite
    for r in side_b:
        D.add_edge(int(cf.gpus[r]), "T")
    value, _ = nx.minimum_cut(D, "S", "T")
    return value


@pytest.mark.parametrize("hosts, radix, tiers", [(32, 8, 2), (128, 16, 2), (128, 8, 3), (1152, 48, 2)])
def test_non_blocking_fat_tree_bisection_is_half_the_hosts(hosts, radix, tiers):
    cf = compile_fabric(fat_tree(hosts, radix, tiers=tiers, link_Bps=C))
    assert bisection(cf).bisection_Bps == pytest.approx(hosts / 2 * C, rel=1e-6)


@pytest.mark.parametrize("r", [2, 3])
def test_oversubscription_divides_the_leaf_split_bisection(r):
    # 2:1 on radix 48: 32 down / 16 up; 3:1 on radix 64: 48 down / 16 up
    radix = 48 if r == 2 else 64
    down = radix * r // (r + 1)
    hosts = down * 32
    one = compile_fabric(fat_tree(hosts, radix, oversubscription=1, link_Bps=C, tiers=2))
    over = compile_fabric(fat_tree(hosts, radix, oversubscription=r, link_Bps=C, tiers=2))
    res = bisection(over)
    assert res.bisection_Bps == pytest.approx(bisection(one).bisection_Bps / r, rel=1e-6)
    assert res.partition.name.startswith("domain") or res.partition.name.startswith("leaf")


def test_random_split_hides_oversubscription_but_structured_split_does_not():
    cf = compile_fabric(fat_tree(1024, 48, oversubscription=2, link_Bps=C))
    rng = np.random.default_rng(0)
    a = np.sort(rng.permutation(1024)[:512])
    assert cut_Bps(cf, a) > 1.5 * bisection(cf).bisection_Bps


@pytest.mark.parametrize("k", [1, 2, 5])
def test_failing_k_of_s_spines_lowers_bisection_by_k_over_s(k):
    cf = compile_fabric(fat_tree(1152, 48, link_Bps=C))  # 48 leaves x 24 hosts, 24 spines
    S = cf.meta["clos"]["spines"]
    failed = apply_failures(cf, fail=[f"spine {i}" for i in range(k)])
    assert bisection(failed).bisection_Bps == pytest.approx(1152 / 2 * C * (S - k) / S, rel=1e-6)


@pytest.mark.parametrize("topo", ["fat-tree-small", "fat-tree-3tier", "hgx", "nvl72", "cluster", "cluster-failed"])
def test_our_cut_equals_networkx_min_cut_on_the_same_partition(topo):
    G = {"fat-tree-small": lambda: fat_tree(32, 8, oversubscription=3),
         "fat-tree-3tier": lambda: fat_tree(64, 8, tiers=3),
         "hgx": lambda: hgx("H100"), "nvl72": lambda: nvl(72, "GB300"),
         "cluster": lambda: cluster("H100", 4, "quantum-2"),
         "cluster-failed": lambda: cluster("H100", 4, "quantum-2")}[topo]()
    cf = compile_fabric(G)
    if topo == "cluster-failed":
        cf = apply_failures(cf, fail=["leaf 0", "gpu 9 nvlink plane 1"], degrade=["gpu 3 nic=100Gb/s"])
    for p in structured_partitions(cf)[:4]:
        assert cut_Bps(cf, p.side_a, p.side_b) == pytest.approx(_nx_min_cut(cf, p.side_a, p.side_b), rel=1e-6)


def test_nvl72_bisection_is_36_times_900():
    res = bisection(compile_fabric(nvl(72, "GB300")))
    assert res.bisection_Bps == pytest.approx(36 * 900e9)
    assert res.per_gpu_Bps == pytest.approx(900e9)


def test_hgx_h100_bisection_is_4_times_450():
    assert bisection(compile_fabric(hgx("H100"))).bisection_Bps == pytest.approx(4 * 450e9)


@pytest.mark.parametrize("name, ov", [("hgx-h100", {}), ("gb300-nvl72", {}),
                                      ("gb300-nvl72", {"domains": 2, "scaleout": "quantum-x800"}),
                                      ("fat-tree", {"hosts": 96, "radix": 16, "oversubscription": 2})])
def test_bisection_symmetric_and_bounded_by_injection(name, ov):
    cf = compile_fabric(build(name, ov))
    inj = cf.gpu_injection_Bps()
    for p in structured_partitions(cf):
        ab = cut_Bps(cf, p.side_a, p.side_b)
        ba = cut_Bps(cf, p.side_b, p.side_a)
        assert ab == pytest.approx(ba, rel=1e-9)
        assert ab <= min(inj[p.side_a].sum(), inj[p.side_b].sum()) * (1 + 1e-9)


def test_cluster_bisection_is_the_scaleout_for_domain_halves():
    cf = compile_fabric(build("gb300-nvl72", {"domains": 4, "scaleout": "quantum-x800"}))
    res = bisection(cf)
    assert res.bisection_Bps == pytest.approx(144 * 100e9)  # 144 CX-8 NICs at 800 Gb/s
    assert res.partition.name.startswith("domain")
