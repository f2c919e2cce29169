"""Fidelity round 10, AWS EFA buffer and chunk size (issue 8; docs/collectives.md "Round 10 (2026-12-03), EFA buffer and
chunk size").

The two AWS p5 2-node all-reduce sweeps differ in their byte settings (the fit Slurm run: NCCL 2.20.3, NCCL_BUFFSIZE 8 MiB,
NCCL_P2P_NET_CHUNKSIZE 512 KiB, aws-ofi-nccl 1.8.1's NCCL_NVLSTREE_MAX_CHUNKSIZE 512 KiB; the held-out EKS run: NCCL 2.18.5,
NCCL's defaults 4 MiB / 128 KiB, aws-ofi-nccl 1.7.3). Round 10 read NCCL's source by tag: the Simple step is
NCCL_BUFFSIZE / NCCL_STEPS, NVLSTree's chunk starts from one step up to v2.20.5 and is cut by size (enqueue.cc
``computeColl`` @ v2.18.5-1 / v2.20.3-1), and NCCL_P2P_NET_CHUNKSIZE is read only for point-to-point (``comm->p2pChunkSize``,
init.cc / enqueue.cc @ v2.18.5-1). So both rows' settings, as ``validate`` reads them from the data file, give the same
NVLSTree chunks and the same modelled busbw: the buffer / chunk settings do not separate the two runs.
"""

from importlib import resources

from collectives import nccl_model as nm
from collectives.validate import _collective_options, _Point
from topologies.files import parse_toml

SLURM_ID = "aws-p5-2node-efa-allreduce-by-size"
EKS_ID = "aws-p5-2node-efa-eks-allreduce-by-size"


def _rows():
    text = resources.files("collectives").joinpath("data/published_points.toml").read_text()
    rows = {p["id"]: p for p in parse_toml(text, source="published_points.toml")["collective"]}
    return rows[SLURM_ID], rows[EKS_ID]


def _chunk(opts: dict, size: int) -> int:
    version = nm.parse_nccl_version(opts.get("nccl_version"))
    return nm.nvlstree_chunk_bytes(size, nm.nvls_channels(90, False, version), nm.nvls_heads(8), 2, version=version,
                                   buffsize_bytes=opts.get("nccl_buffsize", nm.SIMPLE_BUFFSIZE_DEFAULT),
                                   max_chunk_bytes=opts.get("nvlstree_max_chunk_bytes"))


def test_the_rows_settings_reach_the_model_as_written():
    slurm, eks = (_collective_options(_Point("collective", p, 0)) for p in _rows())
    assert slurm["nccl_buffsize"] == 8 << 20 and slurm["nvlstree_max_chunk_bytes"] == 512 << 10
    assert slurm["nccl_version"] == "2.20.3"
    assert "nccl_buffsize" not in eks and "nvlstree_max_chunk_bytes" not in eks  # NCCL's defaults
    assert eks["nccl_version"] == "2.18.5"
    assert not any("p2p" in k for k in (*slurm, *eks))  # NCCL_P2P_NET_CHUNKSIZE: point-to-point only


def test_both_stacks_give_the_same_nvlstree_chunk_at_every_measured_size():
    slurm, eks = (_collective_options(_Point("collective", p, 0)) for p in _rows())
    sizes = [s for s, _ in _rows()[1]["sizes_and_busbw_GBps"]]
    got = [(_chunk(slurm, s) >> 10, _chunk(eks, s) >> 10) for s in sizes]
    assert got == [(128, 128), (128, 128), (128, 128), (256, 256), (256, 256), (512, 512)]
    # the buffer does act where it is the bound: 2.18.5 with an 8 MiB buffer at 8 GiB would take a 1 MiB step
    assert _chunk({"nccl_version": "2.18.5", "nccl_buffsize": 8 << 20}, 8 << 30) == 1 << 20
