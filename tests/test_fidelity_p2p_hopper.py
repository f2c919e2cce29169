"""Fidelity round 12, Hopper one-board all-to-all (issue 8): the p2p schedule's Hopper block rate and batch cost
(``NCCL_P2P_CHANNEL_BPS[90]``, ``NCCL_P2P_BATCH_S[90]``) are fitted on fit-split Hopper sweeps (ai-dynamo/aiconfigurator's
NCCL 2.23 files for H100 and H200, groups ``aiconfigurator-nccl2.23-{h100,h200}-1node``) instead of borrowing
Blackwell's objects. The old model (Blackwell's 21.5 GB/s / 22 us Simple, 4.8 GB/s / 10 us LL) had these 60 fit
values at 18.12 % mean (Simple values 11.5 %).
"""

import numpy as np

from collectives import validate as v
from collectives.calibration import NCCL_P2P_BATCH_S, NCCL_P2P_CHANNEL_BPS, nccl_p2p_constants

IDS = [f"aic-nccl223-{g}-alltoall-{n}gpu-by-size" for g in ("h100", "h200") for n in (2, 4, 8)]


def _rows():
    return [r for r in v.validate(ids=IDS, splits=("fit",)).rows if r.rel_error is not None]


def test_hopper_sweeps_are_fit_rows_of_nccl_2_23():
    """Six sweeps of 10 values each (2 KiB - 512 MiB every other power of two), all on the fit side."""
    rows = _rows()
    assert len(rows) == 60
    assert {r.split for r in rows} == {"fit"}


def test_hopper_has_its_own_p2p_constants():
    """Hopper's tables are not Blackwell's objects any more, and sm90 boards read them."""
    assert NCCL_P2P_CHANNEL_BPS[90] is not NCCL_P2P_CHANNEL_BPS[100]
    assert NCCL_P2P_BATCH_S[90] is not NCCL_P2P_BATCH_S[100]
    bps, batch = nccl_p2p_constants(90)
    assert bps is NCCL_P2P_CHANNEL_BPS[90] and batch is NCCL_P2P_BATCH_S[90]
    assert bps != NCCL_P2P_CHANNEL_BPS[100]


def test_hopper_fit_sweeps_within_the_fit():
    """The 60 fit values: mean |error| <= 16 % (old 18.12 %), the Simple values (above 512 KiB a peer) <= 9 %
    (old 11.5 %)."""
    rows = _rows()
    assert np.mean([abs(r.rel_error) for r in rows]) <= 0.16
    simple = [abs(r.rel_error) for r in rows if r.note.startswith("direct/Simple")]
    assert len(simple) == 26 and np.mean(simple) <= 0.09
