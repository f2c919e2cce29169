"""Issue 8 item 5, round 13: NCCL's per-operation channel / thread reduction on one board (study, no term).

Expectations are NCCL's own rule (enqueue.cc ``topoGetAlgoInfo``, comm.h thread thresholds, device.h
maximum threads, v2.18.5-1 .. v2.30.7-1) worked by hand; none is a number copied from our output.
"""

import pytest

from collectives.nccl_model import enqueue
from collectives.nccl_model import tuning
from collectives.runner import planner_for
from collectives.validate import _router

KIB, MIB = 1 << 10, 1 << 20

#: the fit one-board aiconfigurator systems, their ranks and the version column of their rows.
FIT_BOARDS = [("hgx-a100", n, "2.27.3") for n in (2, 4, 8)] + [("hgx-b200", n, "2.29.2") for n in (2, 4, 8)] + \
    [(p, n, "2.29.2") for p in ("gb200-nvl72", "gb300-nvl72") for n in (2, 4)]


def test_nccl_thread_thresholds_are_the_sources():
    assert enqueue.THREAD_THRESHOLD_BYTES == {"LL": 8, "LL128": 8, "Simple": 64}
    assert enqueue.RING_TREE_MAX_THREADS == {"LL": 512, "LL128": 640, "Simple": 512}


def test_ring_channels_drop_below_the_threshold_by_nccls_rule():
    # Simple: a channel needs 512 threads x 64 B = 32 KiB; 24 channels run from 768 KiB.
    assert enqueue.ring_tree_launch(768 * KIB, 24, "Simple", 8) == (24, 512)
    assert enqueue.ring_tree_launch(768 * KIB - 1, 24, "Simple", 8) == (23, 512)
    # Ring/LL's threshold is x nRanks: 8 ranks, 512 threads x 64 B = 32 KiB a channel as well.
    assert enqueue.ring_tree_launch(256 * KIB, 24, "LL", 8) == (8, 512)
    assert enqueue.ring_tree_launch(256 * KIB, 24, "LL", 2) == (24, 512)
    assert enqueue.ring_tree_launch(256 * KIB, 24, "LL", 8, algorithm="Tree") == (24, 512)
    # one channel left: threads halve (multiples of 128 only): 4 KiB / (1 x 64 B) -> 64 threads would be
    # below, so 512 -> 256 -> 128 -> 64 stops at 64 (64 % 128 != 0).
    assert enqueue.ring_tree_launch(4 * KIB, 24, "Simple", 8) == (1, 64)
    # LL128: 640 threads x 8 B = 5 KiB a channel.
    assert enqueue.ring_tree_launch(60 * KIB, 24, "LL128", 8) == (12, 640)


@pytest.mark.parametrize("preset,n,version", FIT_BOARDS)
def test_nccl_keeps_every_channel_from_1_mib_on_the_fit_boards(preset, n, version):
    """The round-13 finding: the 1-32 MiB misses are not NCCL's channel reduction (it ends below 1 MiB)."""
    system = planner_for(_router(preset)).system(tuple(range(n)), nccl_version=version)
    nc = tuning._tune(system).comm_nchannels
    assert nc == (24 if preset == "hgx-a100" else 32)  # 2 x the graphs' 12 / 16 rings (ncclTopoPostset)
    for size in (1 * MIB, 2 * MIB, 8 * MIB, 32 * MIB):
        for proto in ("LL", "LL128", "Simple"):
            assert enqueue.ring_tree_launch(size, nc, proto, n) == (nc, enqueue.RING_TREE_MAX_THREADS[proto])
