"""Fidelity round 11, all-to-all inside one NVLink domain (issue 8 item 2): NCCL's p2p kernel runs the ``n`` rounds
of an all-to-all on ``p2pnChannels`` thread blocks, a few channels a peer, and rounds of different 8-round epochs
one after the other on a channel (NCCL v2.28.7-1 src/enqueue.cc ``scheduleP2pTasksToPlan`` / ``addP2pToPlan`` /
``addWorkBatchToPlan``, src/include/channel.h ``ncclP2pChannelBaseForRound``). So the rank count matters at a
fixed size a peer, and the rate reaches the NVLink plateau only where every block is busy with large parts.
Until round 11 the one-domain all-to-all was the flows alone (one latency, the NVLink rate at every size).
"""

import numpy as np

from collectives import Collective
from collectives import validate as v
from collectives.p2p_channels import (NCCL_MAX_DEV_WORK_P2P_PER_BATCH, channels_per_peer_min, p2p_channel_batches,
                                      reverse_bits)
from collectives.plancache import PlanCache
from collectives.runner import planner_for, run
from collectives.validate import _router


def _time_s(n, per_peer, preset="gb300-nvl72"):
    r = _router(preset, {"gpus_per_domain": 64} if preset == "gb300-nvl72" else {})
    [res] = run(r, [Collective("all_to_all", tuple(range(n)), per_peer * n)], mode="epoch", epsilon=0.01)
    return res.time_s, res.busbw_Bps


def test_schedule_follows_nccl_rules():
    """Channels a peer (``nChannelsMin``), bit-reversed round bases, no batch over 8 works or across epochs."""
    assert [channels_per_peer_min(n, 32, 32) for n in (2, 4, 8, 16, 32, 64)] == [16, 8, 4, 2, 1, 1]
    assert [reverse_bits(r, 5) for r in (0, 1, 2, 3, 32)] == [0, 16, 8, 24, 0]
    for n, per_peer in ((4, 1 << 20), (8, 1 << 30), (64, 1 << 20), (64, 64 << 20), (48, 4 << 20)):
        chans = p2p_channel_batches(n, per_peer, p2p_channels=32, channels_per_peer=32)
        moved = 0
        for ch in chans:
            for batch in ch:
                assert 1 <= len(batch) <= NCCL_MAX_DEV_WORK_P2P_PER_BATCH
                assert len({w.round // 8 for w in batch}) == 1  # one epoch a batch
                assert len({w.round for w in batch}) == len(batch)  # no round twice in a batch
                moved += sum(w.part_bytes for w in batch)
        assert moved == n * per_peer  # every byte of every round on some channel, once


def test_rank_count_matters_at_a_fixed_size_a_peer():
    """16 KiB a peer: 64 ranks run two batches on each of the 32 channels (rounds r and r + 32), 32 ranks one; the
    old model (one latency whatever the peers, the data tiny) gave both the same time within 10 %."""
    t32, _ = _time_s(32, 16 << 10)
    t64, _ = _time_s(64, 16 << 10)
    assert t64 >= 1.5 * t32


def test_plateau_is_reached_only_at_large_sizes():
    """4 ranks: the measured busbw at 512 MiB is 0.815 of that at 16 GiB (511.6 / 627.7; 24 blocks sending at 512 MiB,
    all 32 from 2 GiB); the old model gave 0.98. The model now stays below 0.9 there and climbs after."""
    _, bw_mid = _time_s(4, 128 << 20)
    _, bw_2g = _time_s(4, 512 << 20)
    _, bw_big = _time_s(4, 4 << 30)
    assert bw_mid <= 0.9 * bw_big
    assert bw_2g > 1.05 * bw_mid


def test_boards_without_p2p_tables_keep_the_flows_alone():
    """No channel model where no architecture family has tables (pre-Ampere): the plan has no kernel floor. (Round 11,
    "p2p schedule on Ampere and Hopper", gave Ampere and Hopper boards the schedule: tests/test_fidelity_p2p_arch.py.)"""
    from collectives.calibration import nccl_p2p_channels, nccl_p2p_constants
    assert nccl_p2p_channels(70) is None and nccl_p2p_constants(70) is None


def test_plan_cache_gives_the_fresh_plan_across_channel_counts():
    """The cache keys the schedule's shape: each size gives the floor that planning afresh gives."""
    pl = planner_for(_router("gb300-nvl72", {"gpus_per_domain": 64}))
    cache = PlanCache(pl)
    ranks = tuple(range(4))
    for per_peer in (1 << 20, 128 << 20, 256 << 20, 2 << 20, 512 << 20, 64 << 10):
        op = Collective("all_to_all", ranks, per_peer * 4)
        got = cache.plan(op)
        want = planner_for(_router("gb300-nvl72", {"gpus_per_domain": 64})).plan(op)
        assert abs(got.min_time_s - want.min_time_s) <= 1e-3 * want.min_time_s, per_peer
        assert abs(got.latency_s - want.latency_s) <= 1e-15, per_peer


def test_fit_sweeps_within_the_fit():
    """The 51 fit values of the Blackwell one-domain all-to-all sweeps: mean |error| <= 8 % (old model: 15.7 %)."""
    ids = ([f"oci-gb300-{h}host-alltoall-by-size" for h in (1, 2, 16)]
           + [f"oci-gb200-{h}host-alltoall" for h in (1, 2, 16)])
    e = [abs(r.rel_error) for r in v.validate(ids=ids, splits=("fit",)).rows if r.rel_error is not None]
    assert len(e) == 51
    assert np.mean(e) <= 0.08
