"""Round 12: NCCL's point-to-point schedule across nodes as the unit of the EFA per-peer cost (candidates, not adopted).

Usage: PYTHONPATH=. python benchmarks/fit_net_p2p_schedule.py [peer|op|peer+msg] [--quick]

Round 5 pays ``calibration.NCCL_P2P_PER_PEER_S`` once per peer (``collectives.p2p`` ``net_p2p_units``: ``n - 1`` in an
all-to-all). The candidates replace that unit by what NCCL v2.27.7-1 (the release of the fit AWS p5 sweeps) builds
for each network send, read by tag (docs/collectives.md, "Round 12 (2026-12-03), many-peer point-to-point across the
network"):

* ``src/graph/paths.cc`` ``ncclTopoGetNchannels`` (remote rank): 2 channels a network peer, halved while
  ``2 x nRanks > 4 x p2pnChannels``, then ``max(netCountByBw, .)``; ``ncclTopoComputeP2pChannels``:
  ``p2pnChannelsPerPeer = pow2Up(min over peers)`` (the network count once there are network peers).
* ``src/enqueue.cc`` ``scheduleP2pTasksToPlan`` / ``addP2pToPlan`` with ``nNodes > 1``: ``nChannelsMin`` halved while
  ``nChannelsMin x nRanks > p2pnChannels``; parts between ``step/2`` and ``step`` (``step`` = ``NCCL_P2P_NET_CHUNKSIZE``),
  doubled up to ``p2pnChannelsPerPeer``; the network chunk is ``step/4`` below one step, ``step/2`` below 8 steps,
  else ``step``; one proxy operation a part and direction.

``op``: ``c`` per proxy operation (peers x parts); ``peer+msg``: ``c`` per peer plus ``c_msg`` per network message
(peers x parts x chunks of a part). Only the fit split is read (the five ``awsgpucomm-p5-*node-efa-alltoall-by-size``
points, 35 values); the many-peer drop ``d`` (``NIC_PEER_DROP["nccl_efa"]``) is re-gridded with each form. The model's
constants are patched for the run only.
"""

from __future__ import annotations

import sys

import numpy as np

import collectives.calibration  # noqa: F401  (the module, not the function of the same name)
import collectives.p2p  # noqa: F401
from collectives import validate as v

cal = sys.modules["collectives.calibration"]
p2p = sys.modules["collectives.p2p"]

IDS = [f"awsgpucomm-p5-{n}node-efa-alltoall-by-size" for n in (2, 4, 8, 16, 32)]
#: the rows' ``settings.NCCL_P2P_NET_CHUNKSIZE`` (aws-ofi-nccl's tuner environment; NCCL's default is 128 KiB)
STEP = 524288
#: ``comm->p2pnChannels`` before its power of two: 32 assumed (no NCCL_DEBUG log of these runs in the source)
P2P_CHANNELS = 32
#: ``netCountByBw``: the plugin's RDMA protocol drives the 4 EFA devices of a GPU as one NCCL device (docs/collectives.md,
#: round 7: ``nccl_ofi_scheduler.c`` stripes a message over the four rails), so one device carries the GPU's bandwidth
NETS_BY_BW = 1


def channels_per_peer(n: int) -> int:
    """``p2pnChannelsPerPeer`` with network peers (ncclTopoGetNchannels, ncclTopoComputeP2pChannels)."""
    c = 2
    while c * n > 4 * P2P_CHANNELS and c > 1:
        c //= 2
    c = max(NETS_BY_BW, c)
    return 1 << (c - 1).bit_length()


def parts(n: int, peer_bytes: int) -> int:
    """Channels of one network send (addP2pToPlan, ``nNodes > 1``)."""
    C = channels_per_peer(n)
    m = C
    while m * n > P2P_CHANNELS and m > 1:
        m //= 2
    k = min(m, -(-peer_bytes // (STEP // 2)))
    part = max(STEP // 2, -(-peer_bytes // k))
    while part > STEP and k <= C // 2:
        k *= 2
        part = -(-peer_bytes // k)
    return k


def chunks_of_part(peer_bytes: int, k: int) -> int:
    """Network messages of one part (the chunk rule of addP2pToPlan for network connections)."""
    chunk = STEP // 4 if peer_bytes < STEP else STEP // 2 if peer_bytes < 8 * STEP else STEP
    return -(-(-(-peer_bytes // k)) // chunk)


def _units(form: str, ratio: float):
    def units(self, op, peer_bytes):
        peers = op.n - 1 if op.collective == "all_to_all" else 1
        pb = int(peer_bytes)
        if form == "peer":
            return float(peers)
        k = parts(op.n, pb)
        if form == "op":
            return float(peers * k)
        if form == "peer+msg":
            return peers + ratio * peers * k * chunks_of_part(pb, k)
        raise SystemExit(f"form: {form!r} is not one of peer, op, peer+msg")
    return units


def grid(form: str, ds, cs, cms=(0.0,)) -> None:
    old = (cal.NIC_PEER_DROP["nccl_efa"], cal.NCCL_P2P_PER_PEER_S["EFA"], p2p._PointToPointMixin.net_p2p_units)
    try:
        for d in ds:
            for c in cs:
                for cm in cms:
                    cal.NIC_PEER_DROP["nccl_efa"], cal.NCCL_P2P_PER_PEER_S["EFA"] = d, c * 1e-6
                    p2p._PointToPointMixin.net_p2p_units = _units(form, cm / c)
                    v._ROUTERS.clear()
                    rows = [r for r in v.validate(ids=IDS, splits=("fit",)).rows if r.rel_error is not None]
                    e = np.abs([r.rel_error for r in rows])
                    extra = f" c_msg {cm} us" if form == "peer+msg" else ""
                    print(f"  {form}: d {d} c {c} us{extra}: {len(e)} values, mean |error| {100 * e.mean():.2f} %, "
                          f"max {100 * e.max():.1f} %", flush=True)
    finally:
        cal.NIC_PEER_DROP["nccl_efa"], cal.NCCL_P2P_PER_PEER_S["EFA"], p2p._PointToPointMixin.net_p2p_units = old
        v._ROUTERS.clear()


if __name__ == "__main__":
    quick = "--quick" in sys.argv
    forms = [a for a in sys.argv[1:] if not a.startswith("--")] or ["peer", "op", "peer+msg"]
    for f in forms:
        if f == "peer":
            grid(f, (0.105,), (5.1,))
        elif f == "op":
            grid(f, (0.105,) if quick else (0.08, 0.105, 0.13), (5.0,) if quick else (3.0, 4.0, 5.0, 6.0))
        else:
            grid(f, (0.06,) if quick else (0.06, 0.08), (5.25,) if quick else (4.25, 4.75, 5.25),
                 (0.5,) if quick else (0.5, 0.75, 1.0))
