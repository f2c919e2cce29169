"""Fidelity round 11, p2p schedule on Ampere and Hopper (issue 8): NCCL's one-node p2p schedule
(``collectives.p2p_channels``) now bounds a one-board all-to-all on A100 and H100 boards too, with the channel
counts NCCL's own rules give there (32 p2p channels, 32 a peer), the release's channel mapping and batching rules
(v2.27.x: parts bit-reversed, no 8-round epochs) and per-architecture constants (Ampere fitted on the A100 fit
sweeps, Hopper the Blackwell ones: same NVLink write transport). Until then Ampere and Hopper boards were the flows
alone (one latency, the NVLink rate at every size) and every release ran the v2.28.7 rules.
"""

import numpy as np

from collectives import Collective
from collectives.calibration import nccl_p2p_channels, nccl_p2p_constants, nccl_p2p_ll_max_bytes
from collectives import validate as v
from collectives.p2p_channels import p2p_channel_batches, p2p_kernel_terms, p2p_rules
from collectives.runner import planner_for
from collectives.validate import _router


def test_channel_counts_by_architecture_family():
    """32 / 32 on Ampere and Hopper (NCCL's rules and logs); the families are exact (no borrowing downwards)."""
    assert nccl_p2p_channels(80) == (32, 32) and nccl_p2p_channels(90) == (32, 32)
    assert nccl_p2p_ll_max_bytes(80) == 32 * 16384 and nccl_p2p_ll_max_bytes(90) == 32 * 16384
    assert nccl_p2p_channels(70) is None and nccl_p2p_constants(70) is None
    # round 12: Hopper has constants of its own (fitted on the H100 / H200 NCCL 2.23 sweeps), not Blackwell's
    assert nccl_p2p_constants(90) != nccl_p2p_constants(100)


def test_release_rules_change_the_schedule():
    """v2.27.x: base = round, parts on bit-reversed offsets, no epochs; 64 ranks at 1 MiB a peer then run rounds r
    and r + 32 in one batch (one fixed cost), v2.28.7 in two."""
    assert p2p_rules((2, 27, 3)) == (False, False)
    kw = dict(p2p_channels=32, channels_per_peer=32)
    old = p2p_channel_batches(64, 1 << 20, release=(2, 27, 3), **kw)
    new = p2p_channel_batches(64, 1 << 20, release=(2, 28, 7), **kw)
    assert {len(ch) for ch in old} == {1} and {len(ch) for ch in new} == {2}
    # 4 ranks, 8 channels a peer: round 1's parts sit on channels 1, 17, 9, 25, ... (v2.27) or 16..23 (v2.28)
    old4 = p2p_channel_batches(4, 1 << 20, release=(2, 27, 3), **kw)
    assert sorted(c for c, ch in enumerate(old4) if any(w.round == 1 for b in ch for w in b)) == list(range(1, 32, 4))
    c = dict(channel_Bps={"Simple": 20e9, "LL": 5e9}, batch_s={"Simple": 20e-6, "LL": 5e-6})
    f_old, _ = p2p_kernel_terms(64, 1 << 20, release=(2, 27, 3), **kw, **c)
    f_new, _ = p2p_kernel_terms(64, 1 << 20, release=None, **kw, **c)
    assert abs(f_old - 20e-6) < 1e-12 and abs(f_new - 40e-6) < 1e-12


def test_ampere_and_hopper_boards_have_a_kernel_floor():
    """An 8-GPU one-board all-to-all at 8 MiB: the plan now has the p2p schedule's floor (before: 0, the flows)."""
    for preset in ("hgx-a100", "hgx-h100"):
        plan = planner_for(_router(preset, {})).plan(Collective("all_to_all", tuple(range(8)), 8 << 20))
        assert plan.min_time_s > 0.0, preset


def test_ampere_fit_sweeps_within_the_fit():
    """The 33 fit values of the A100 one-board all-to-all sweeps (NCCL 2.27.3): mean |error| <= 12 % and the
    2-8 MiB values within 35 % (old model: 29.96 % mean, +70..+89 % at 2 MiB)."""
    ids = [f"aic-nccl-a100-alltoall-{n}gpu-by-size" for n in (2, 4, 8)]
    rows = [r for r in v.validate(ids=ids, splits=("fit",)).rows if r.rel_error is not None]
    assert len(rows) == 33
    assert np.mean([abs(r.rel_error) for r in rows]) <= 0.12
    mid = [abs(r.rel_error) for r in rows if r.id.endswith(("@2MiB", "@8MiB"))]
    assert len(mid) == 6 and max(mid) <= 0.35
