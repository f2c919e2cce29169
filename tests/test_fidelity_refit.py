"""Fidelity round 6, joint refit after the merge (issue 8): the network step costs with the tree/Simple fill.

Each test is a behaviour the merged model (network step costs fitted without the fill, the fill decided
without the step costs) got wrong; the bounds come from measurements and NCCL's rules, not our output.
"""

from collectives import Collective, run
from collectives import nccl_model as nm
from collectives.runner import planner_for
from collectives.trees import tree_fill_s
from collectives.validate import _router

RANKS = tuple(range(16))


def _a3mega():
    """Two GCP A3 Mega VMs (8 x H100, 8 x 200 Gb/s GPUDirect-TCPXO NICs), as the fit sweep's row."""
    return _router("hgx-h100", {"domains": 2, "scaleout": "gcp-tcpxo", "nic": "TCPXO-200G"})


def test_small_a3mega_all_reduce_is_not_slower_than_its_measured_floor():
    """The log of the fit sweep (lessizzmore/create-a3mega-ztan-fork ztan-NCCL-test-result @ 02dd8f4,
    all_reduce_perf across the two VMs) times every out-of-place all-reduce of 16-256 B at 123.0-123.6 us:
    that is the whole cost of a tree/Simple all-reduce's network steps there. The merged model charged
    each step 160 us (NCCL's formula counts two per Simple network step, up and down: 640 us)."""
    r = _a3mega()
    [res] = run(r, [Collective("all_reduce", RANKS, 256)], planner=planner_for(r), mode="epoch")
    assert res.time_s <= 123.6e-6 * 1.05


def test_tree_fill_below_one_window_grows_with_the_size_at_the_uncorrected_rate():
    """Below one window (nChannels x 512 KiB) a tree/Simple fill moves the whole message once per hop, so
    it is proportional to the size at the channels' rate. NCCL's treeCorrectionFactor (tuning.cc: 0.5 at
    1 MiB, 0.6 at 2 MiB for Simple) scales its whole-time estimate, not the links: the fill of 2 MiB on two
    A3 Mega nodes is twice that of 1 MiB (the merged model, hops at the corrected rate: 2 x 0.5/0.6)."""
    planner = planner_for(_a3mega())

    def fill_s(size):
        est = planner.nccl_estimate(RANKS, "all_reduce", size, "Tree")  # Simple only (the TCPXO profile)
        plan = planner.plan(Collective("all_reduce", RANKS, size, "tree"))
        assert est.protocol == plan.protocol == "Simple"
        return plan.latency_s - est.latency_s

    simple = nm.TREE_CORRECTION_FACTOR[nm.PROTOCOLS.index("Simple")]
    assert (simple[14], simple[15]) == (0.5, 0.6)  # log2(S / 64) = 14, 15: NCCL's table at 1 and 2 MiB
    f1, f2 = fill_s(1 << 20), fill_s(2 << 20)
    assert f1 > 0 and abs(f2 / f1 - 2.0) < 1e-6


def test_two_node_fill_network_levels_carry_half_a_window_each_way():
    """NCCL's two trees have opposite roots on two nodes (ncclGetDtree): at the fill's up level half the
    channels cross node 1 -> 0 and half 0 -> 1, and the reverse at the down level, so each direction of
    the full-duplex NICs carries W/2 per level. With the NVLink hops free (ppn = 1), the fill is the two
    network levels at W/(2B) less the slowest stage W/B: none; on four nodes (four levels, two per
    direction) it is 4 W/B - W/B = 3 W/B, whatever the correction factor."""
    w, b = 8 << 20, 100e9
    assert tree_fill_s(1 << 30, b, "Simple", 16, 1, 2) == 0.0
    assert abs(tree_fill_s(1 << 30, b, "Simple", 16, 1, 4) - 3 * w / b) < 1e-12
    two_node = tree_fill_s(1 << 30, b, "Simple", 16, 8, 2, intra_Bps=2 * b)
    # round 7: the 14 chain hops of the fill run alone on their channel, at twice the steady 2B (trees.fill_hop_rate)
    assert abs(two_node - (14 * w / (4 * b) + 2 * w / (2 * b) - w / b)) < 1e-12
