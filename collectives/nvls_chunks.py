"""NCCL's NVLS chunks and loops as the planner applies them (a mixin of :class:`collectives.algorithms.Planner`).

The chunk NCCL's NVLS kernel moves per channel and head (single domain) and NVLSTree's chunk by release
(:mod:`collectives.nccl_model.enqueue`), the loop count, the per-loop kernel efficiency and one-loop fill of
single-domain NVLS (:mod:`collectives.calibration`), and the store-and-forward fill of NVLSTree's network hops
(:mod:`collectives.trees`). Kept apart from the flow construction in :mod:`collectives.algorithms`, which calls
them; the host class provides ``gpu`` (the catalog GPU) and ``calib`` (the :class:`Calibration`).
"""

from __future__ import annotations

import math

from collectives import nccl_model as nm
from collectives.calibration import nvls_chunk_efficiency, nvls_domain_terms, nvls_loop_fill_s, nvls_loop_s
from collectives.ops import Collective
from collectives.trees import check_buffsize, nvlstree_fill_s
from topologies.errors import SpecError

__all__ = ["_NvlsChunkMixin"]


class _NvlsChunkMixin:
    """NVLS chunk, loop and fill terms of one operation (used by the planner's NVLS and NVLSTree plans)."""

    def nvls_chunk(self, op: Collective, size: float) -> int:
        """The chunk NCCL's NVLS kernel uses for ``op`` at ``size`` inside one NVLink domain
        (:func:`collectives.nccl_model.nvls_chunk_bytes`; option ``nvls_chunk_bytes`` =
        ``NCCL_NVLS_CHUNKSIZE``, default 128 KiB; at most ``nccl_buffsize / NCCL_STEPS``, as enqueue.cc)."""
        version = nm.parse_nccl_version(op.options.get("nccl_version"))
        ch = nm.nvls_channels(self.gpu.sm, True, version)
        buff = check_buffsize(op.options.get("nccl_buffsize"))  # chunk <= NCCL_BUFFSIZE / NCCL_STEPS
        return nm.nvls_chunk_bytes(max(size, 1), ch, nm.nvls_heads(op.n), max_chunk_bytes=self.nvls_chunk_option(op),
                                   buffsize_bytes=nm.SIMPLE_BUFFSIZE_DEFAULT if buff is None else buff)

    @staticmethod
    def nvls_chunk_option(op: Collective) -> int:
        """``NCCL_NVLS_CHUNKSIZE`` of ``op`` (option ``nvls_chunk_bytes``), checked."""
        v = op.options.get("nvls_chunk_bytes", nm.NVLS_CHUNK_BYTES_DEFAULT)
        if isinstance(v, bool) or not isinstance(v, int) or not (16 << 10) <= v <= (16 << 20):
            raise SpecError(f"options nvls_chunk_bytes: {v!r} must be an integer number of bytes in "
                            "[16384, 16777216] (NCCL_NVLS_CHUNKSIZE)")
        return v

    def nvlstree_fill(self, op: Collective, size: float, est: nm.AlgoEstimate, groups) -> float:
        """Round 8: the fill of NVLSTree's network hops (trees.nvlstree_fill_s) at NCCL's NVLSTree chunk of the
        size and release (nccl_model.nvlstree_chunk_bytes; options ``nccl_buffsize``, ``nvls_chunk_bytes``,
        ``nvlstree_max_chunk_bytes`` = ``NCCL_NVLSTREE_MAX_CHUNKSIZE``)."""
        version = nm.parse_nccl_version(op.options.get("nccl_version"))
        ppn, nnodes = len(groups[0]), len(groups)
        ch = nm.nvls_channels(self.gpu.sm, nnodes < 2, version)
        buff = check_buffsize(op.options.get("nccl_buffsize"))
        cap = op.options.get("nvlstree_max_chunk_bytes")
        if cap is not None and (isinstance(cap, bool) or not isinstance(cap, int) or not (16 << 10) <= cap <= (16 << 20)):
            raise SpecError(f"options nvlstree_max_chunk_bytes: {cap!r} must be an integer number of bytes in "
                            "[16384, 16777216] (NCCL_NVLSTREE_MAX_CHUNKSIZE)")
        chunk = nm.nvlstree_chunk_bytes(max(size, 1), ch, nm.nvls_heads(ppn), nnodes, version=version,
                                        buffsize_bytes=nm.SIMPLE_BUFFSIZE_DEFAULT if buff is None else buff,
                                        nvls_chunk_bytes=self.nvls_chunk_option(op), max_chunk_bytes=cap)
        return nvlstree_fill_s(chunk, ch, nm.nvls_heads(ppn), nnodes, est.bandwidth_Bps)

    def nvls_loop_terms(self, op: Collective, size: float) -> tuple[float, float]:
        """(kernel efficiency, pipeline fill in s) of single-domain NVLS at NCCL's chunk for ``size``: the
        loop cost relative to the default chunk (calibration.nvls_chunk_efficiency) and the fill of the
        kernel's pipeline of three warp groups (calibration.nvls_loop_fill_s)."""
        n = op.n
        version = nm.parse_nccl_version(op.options.get("nccl_version"))
        ops = nm.nvls_channels(self.gpu.sm, True, version) * nm.nvls_heads(n)
        per_byte = 1 + 1 / n if op.collective == "all_reduce" else 1.0
        rate = self.gpu.nvlink_Bps * self.calib.nvlink_nvls * nvls_domain_terms(n)[0]
        chunk = self.nvls_chunk(op, size)
        x = nvls_loop_s(self.gpu.sm)  # round 8: the loop cost by architecture
        return (nvls_chunk_efficiency(chunk, ops, per_byte, rate, size_bytes=size, loop_s=x),
                nvls_loop_fill_s(size, chunk, ops, per_byte, rate, loop_s=x))

    def nvls_loops(self, op: Collective, size: float) -> int:
        """NVLS loops NCCL's single-domain kernel runs for ``op`` at ``size``: ``ceil(S / (nChannels x
        nHeads x chunk))`` (the synchronisation of a large domain is paid per loop, round 8)."""
        version = nm.parse_nccl_version(op.options.get("nccl_version"))
        ops = nm.nvls_channels(self.gpu.sm, True, version) * nm.nvls_heads(op.n)
        return max(1, math.ceil(max(size, 1) / (ops * self.nvls_chunk(op, size))))
