"""Fidelity round 8, all-to-all inside one NVLink domain (issue 8): NCCL runs a point-to-point operation on LL when
its bytes are at most ``p2pnChannelsPerPeer x NCCL_P2P_LL_THRESHOLD`` (src/enqueue.cc ``addP2pToPlan`` @ v2.28.7-1),
which on GB300 NVL72 puts all-to-alls up to 512 KiB a peer on LL (the OCI GB300 one-rack sweeps step up between
512 KiB and 1 MiB a peer). Until round 8 every NCCL all-to-all ran Simple at every size.
"""

import numpy as np

from collectives import Collective
from collectives import validate as v
from collectives.plancache import PlanCache
from collectives.runner import planner_for
from collectives.validate import _router


def _planner(preset="gb300-nvl72", **over):
    return planner_for(_router(preset, {"gpus_per_domain": 64, **over} if preset == "gb300-nvl72" else over))


def _a2a(pl, ranks, per_peer):
    return pl.plan(Collective("all_to_all", tuple(ranks), per_peer * len(ranks)))


def test_small_all_to_all_in_one_gb300_rack_runs_ll():
    """64 ranks: 512 KiB a peer is LL, 1 MiB a peer is Simple (NCCL's ``bytes <= thresholdLL``)."""
    pl = _planner()
    ranks = range(64)
    assert _a2a(pl, ranks, 512 << 10).protocol == "LL"
    assert _a2a(pl, ranks, (512 << 10) + 1).protocol == "Simple"
    assert _a2a(pl, ranks, 16 << 10).protocol == "LL"


def test_the_64_rank_sweep_is_faster_at_64_than_at_32_mib_as_measured():
    """The measured OCI GB300 16-host all-to-all takes less time at 64 MiB (Simple) than at 32 MiB (LL); the old
    model (Simple everywhere) made 64 MiB ~1.8 x slower than 32 MiB."""
    rows = {r.id: r for r in v.validate(ids=["oci-gb300-16host-alltoall-by-size"], splits=("fit",)).rows}
    t = {s: (s << 20) / r.predicted for s in (32, 64) for r in [rows[f"oci-gb300-16host-alltoall-by-size@{s}MiB"]]}
    assert t[64] < t[32]


def test_ll_regime_values_of_the_fit_sweeps_are_within_the_fit():
    """The 11 LL-regime values (<= 512 KiB a peer) of the three fit sweeps: mean |error| <= 15 % (old model: 131 %)."""
    ids = [f"oci-gb300-{h}host-alltoall-by-size" for h in (1, 2, 16)]
    ll = {1: 2, 2: 3, 16: 6}
    keep = {f"oci-gb300-{h}host-alltoall-by-size@{1 << i}MiB" for h, k in ll.items() for i in range(k)}
    e = [abs(r.rel_error) for r in v.validate(ids=ids, splits=("fit",)).rows if r.id in keep]
    assert len(e) == 11
    assert np.mean(e) <= 0.15


def test_cross_domain_all_to_alls_stay_simple_and_hopper_boards_take_the_sourced_rule():
    """No LL for all-to-alls that leave the NVLink domain. Hopper boards: round 11 ("p2p schedule on Ampere and
    Hopper") gave them NCCL's own threshold (32 channels a peer x 16 KiB, rebuilt from the source and NCCL's logs):
    LL at 64 KiB a peer, Simple above 512 KiB (it was Simple at every size before)."""
    h100 = planner_for(_router("hgx-h100", {}))
    assert _a2a(h100, range(8), 64 << 10).protocol == "LL"
    assert _a2a(h100, range(8), (512 << 10) + 4096).protocol == "Simple"
    two = planner_for(_router("gb300-nvl72", {"domains": 2, "gpus_per_domain": 4, "scaleout": "spectrum-x"}))
    assert _a2a(two, range(8), 64 << 10).protocol == "Simple"


def test_plan_cache_keeps_each_side_of_the_ll_threshold():
    """A cached all-to-all rescales only on one side of the threshold: each size gives what planning afresh gives."""
    pl = _planner()
    cache = PlanCache(pl)
    ranks = tuple(range(64))
    for per_peer in (1 << 20, 64 << 10, 2 << 20, 512 << 10, (512 << 10) + 1):
        op = Collective("all_to_all", ranks, per_peer * 64)
        got, want = cache.plan(op), _planner().plan(op)
        assert got.protocol == want.protocol, per_peer
        assert abs(got.latency_s - want.latency_s) <= 1e-15, per_peer
