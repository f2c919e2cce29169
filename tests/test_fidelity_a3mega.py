"""Fidelity round 6, A3 Mega settings (issue 8): the byte settings of Google's FasTrak v1.0.3 profile.

Both A3 Mega TCPXO rows ran the nccl-plugin-gpudirecttcpx-dev:v1.0.3 bundle with its environment profile.
Google's release notes of that bundle (GoogleCloudPlatform/container-engine-accelerators
gpudirect-tcpxo/README.md @ 498c872, "## Jun 27, 2024", "NCCL configs:") list "NCCL_BUFFSIZE=8388608":
NCCL's Simple buffer is 8 MiB there, not its default 4 MiB, so a tree/Simple step is 1 MiB.
"""

from collectives import Collective
from collectives.runner import planner_for
from collectives.validate import _collective_options, _items, _Point, _read, _router, default_points_paths

A3MEGA_ROWS = ("gcp-a3mega-2node-tcpxo-allreduce-by-size", "gke-a3mega-2node-tcpxo-allgather-by-size")
PROFILE_BUFFSIZE_BYTES = 8388608  # "NCCL_BUFFSIZE=8388608" (the release notes above)
PROFILE_MIN_NCHANNELS = "4"  # "NCCL_MIN_NCHANNELS=4" (same list; not modelled)


def _points():
    found = {}
    for path in default_points_paths():
        doc, side = _read(path)
        for kind, raw in _items(path, doc, side):
            if raw.get("id") in A3MEGA_ROWS:
                found[raw["id"]] = _Point(kind, raw, 0)  # settings merged, as validate reads them
    assert set(found) == set(A3MEGA_ROWS)
    return found


def test_a3mega_rows_carry_the_profile_buffer_size():
    """Both rows reach the model with the profile's NCCL_BUFFSIZE (the option the tree/Simple fill reads),
    and with the same profile: Ring,Tree / Simple / NVLS off / at least 4 channels."""
    pts = _points()
    for pid, p in pts.items():
        assert _collective_options(p).get("nccl_buffsize") == PROFILE_BUFFSIZE_BYTES, pid
        assert str(p.get("NCCL_MIN_NCHANNELS")) == PROFILE_MIN_NCHANNELS, pid
    keys = ("NCCL_ALGO", "NCCL_PROTO", "NCCL_NVLS_ENABLE", "NCCL_MIN_NCHANNELS", "NCCL_BUFFSIZE")
    a, b = (pts[i] for i in A3MEGA_ROWS)
    assert [str(a.get(k)) for k in keys] == [str(b.get(k)) for k in keys]


def test_a3mega_profile_buffer_doubles_the_large_tree_fill():
    """At 1 GiB the tree/Simple window is nChannels whole steps, so the fill is proportional to the step:
    the profile's 8 MiB buffer (1 MiB steps) gives twice the fill of NCCL's default 4 MiB (512 KiB)."""
    p = _points()[A3MEGA_ROWS[0]]
    r = _router(p["system"], {"domains": 2, "scaleout": p["scaleout"], "nic": p["nic"]})
    planner = planner_for(r)
    ranks, size = tuple(range(16)), 1 << 30

    def fill_s(options):
        est = planner.nccl_estimate(ranks, "all_reduce", size, "Tree")
        plan = planner.plan(Collective("all_reduce", ranks, size, "tree", options=options))
        assert plan.protocol == "Simple"
        return plan.latency_s - est.latency_s

    default, profile = fill_s({}), fill_s(_collective_options(p))
    assert default > 0 and abs(profile / default - 2.0) < 1e-6
