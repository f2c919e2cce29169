"""Bisection bandwidth: the min cut between two equal halves of the GPUs.

For a given partition (side A, side B) the cut is the maximum flow from a
super-source feeding every A GPU to a super-sink drained by every B GPU, on the
compiled fabric's per-direction capacities (scipy's Dinic max-flow; by max-flow
= min-cut it is the capacity of the smallest set of links whose removal
separates A from B). The super-source edges carry each GPU's injection
bandwidth, so a cut never exceeds the smaller side's injection.

Bisection bandwidth is the minimum over the partitions that matter. Random host
splits hide oversubscription (each leaf then has hosts on both sides and traffic
stays inside it), so the candidates are *structured*: the GPUs grouped by NVLink
domain, by leaf, by pod and by rank, and the groups split into contiguous halves
or alternated (see ``flow-engine.md`` §2.4).

Examples
--------
>>> from topologies.nvlink import nvl
>>> from fabric.compiled import compile_fabric
>>> res = bisection(compile_fabric(nvl(72, "GB300")))
>>> res.bisection_Bps / 1e9, res.per_gpu_Bps / 1e9
(32400.0, 900.0)
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp
from scipy.sparse.csgraph import maximum_flow

from fabric.compiled import CompiledFabric
from topologies.errors import SpecError
from topologies.graph import ROLES

__all__ = ["Partition", "BisectionResult", "cut_Bps", "structured_partitions", "bisection", "gpu_groups"]

_INT32_MAX = 2**31 - 1


@dataclass(frozen=True)
class Partition:
    """Two halves of the GPU ranks."""

    name: str
    side_a: np.ndarray  # ranks
    side_b: np.ndarray  # ranks

    def describe(self, limit: int = 6) -> str:
        return f"{self.name}: A = {_ranges(self.side_a, limit)}, B = {_ranges(self.side_b, limit)}"

    def as_dict(self) -> dict:
        return {"name": self.name, "side_a": _ranges(self.side_a, 10**9), "side_b": _ranges(self.side_b, 10**9),
                "size": int(len(self.side_a))}


@dataclass(frozen=True)
class BisectionResult:
    """Bisection bandwidth per direction and the partition that attains it."""

    bisection_Bps: float
    per_gpu_Bps: float
    partition: Partition
    candidates: tuple  # ((name, cut_Bps), ...) for every partition tried
    gpus: int = 0

    def as_dict(self) -> dict:
        return {"gpus": self.gpus, "bisection_GBps": self.bisection_Bps / 1e9, "per_gpu_GBps": self.per_gpu_Bps / 1e9,
                "partition": self.partition.as_dict(),
                "candidates": [{"partition": n, "cut_GBps": c / 1e9} for n, c in self.candidates]}


def _ranges(ranks: np.ndarray, limit: int) -> str:
    r = np.sort(np.asarray(ranks))
    if len(r) == 0:
        return "{}"
    breaks = np.flatnonzero(np.diff(r) != 1)
    starts = np.r_[r[0], r[breaks + 1]]
    ends = np.r_[r[breaks], r[-1]]
    parts = [f"{a}" if a == b else f"{a}-{b}" for a, b in zip(starts, ends)]
    if len(parts) > limit:
        parts = parts[:limit] + [f"... ({len(parts)} runs)"]
    return ",".join(parts)


def gpu_groups(cf: CompiledFabric) -> dict[str, np.ndarray]:
    """Group label of every GPU rank, per structural grouping (domain, leaf, pod, rank)."""
    n = cf.n_gpus
    groups = {"domain": cf.node_domain[cf.gpus].astype(np.int64)}
    # the leaf (lowest plane) behind each GPU's NIC
    nic_role, leaf_role = ROLES.index("nic"), ROLES.index("leaf")
    host = cf.node_role[cf.link_dst] == nic_role
    nic_of = np.full(cf.n_nodes, -1, dtype=np.int64)
    gsel = host & (cf.node_kind[cf.link_src] == 0)
    nic_of[cf.link_src[gsel]] = cf.link_dst[gsel]
    up = (cf.node_role[cf.link_src] == nic_role) & (cf.node_role[cf.link_dst] == leaf_role)
    leaf_of_nic = np.full(cf.n_nodes, -1, dtype=np.int64)
    order = np.argsort(cf.node_plane[cf.link_dst[up]], kind="stable")[::-1]
    leaf_of_nic[cf.link_src[up][order]] = cf.link_dst[up][order]
    nics = nic_of[cf.gpus]
    if (nics >= 0).any():
        leaves = np.where(nics >= 0, leaf_of_nic[np.maximum(nics, 0)], -1)
        groups["leaf"] = leaves
        pods = np.where(leaves >= 0, cf.node_pod[np.maximum(leaves, 0)], -1)
        if len(np.unique(pods)) > 1:
            groups["pod"] = pods
    groups["rank"] = np.arange(n, dtype=np.int64)
    return groups


def _balanced(labels: np.ndarray, alternate: bool, aligned: bool = False) -> np.ndarray | None:
    """Side A of a split of the groups of ``labels`` (in order of first rank).

    ``aligned=False`` gives exactly ``n // 2`` ranks (the group at the middle is
    split if needed); ``aligned=True`` keeps whole groups, as close to half as
    the group sizes allow.
    """
    n = len(labels)
    half = n // 2
    uniq, first = np.unique(labels, return_index=True)
    order = uniq[np.argsort(first)]
    if len(order) < 2:
        return None
    members = [np.flatnonzero(labels == g) for g in order]
    if alternate:
        members = members[0::2] + members[1::2]
    side_a: list = []
    count = 0
    for m in members:
        if count >= half:
            break
        if aligned:
            if abs(count + len(m) - half) > abs(count - half) and count > 0:
                break
            side_a.extend(m)
            count += len(m)
        else:
            take = min(len(m), half - count)
            side_a.extend(m[:take])
            count += take
    if not side_a or count >= n:
        return None
    return np.sort(np.asarray(side_a, dtype=np.int64))


def structured_partitions(cf: CompiledFabric) -> list[Partition]:
    """Balanced partitions along the fabric's structure (deduplicated)."""
    if cf.n_gpus < 2:
        raise SpecError(f"gpus: bisection needs at least 2 GPUs, fabric {cf.name!r} has {cf.n_gpus}")
    out, seen = [], set()
    everyone = np.arange(cf.n_gpus)
    for by, labels in gpu_groups(cf).items():
        for alternate in (False, True):
            for aligned in (False, True):
                a = _balanced(labels, alternate, aligned)
                if a is None:
                    continue
                key = a.tobytes()
                if key in seen:
                    continue
                seen.add(key)
                b = np.setdiff1d(everyone, a)
                name = f"{by} {'alternate' if alternate else 'halves'}" + (" (whole groups)" if aligned else "")
                out.append(Partition(name, a, b))
    return out


def _flow_graph(cf: CompiledFabric):
    if "flow_graph" not in cf._cache:
        alive = cf.link_alive & (cf.link_capacity_Bps > 0)
        cf._cache["flow_graph"] = (cf.link_src[alive], cf.link_dst[alive], cf.link_capacity_Bps[alive])
    return cf._cache["flow_graph"]


def cut_Bps(cf: CompiledFabric, side_a, side_b=None) -> float:
    """Max-flow (= min-cut) capacity from GPU ranks ``side_a`` to ``side_b``, bytes/s per direction.

    Examples
    --------
    >>> from topologies.nvlink import hgx
    >>> from fabric.compiled import compile_fabric
    >>> cf = compile_fabric(hgx("H100"))
    >>> cut_Bps(cf, [0, 1, 2, 3]) / 1e9
    1800.0
    """
    a = np.unique(np.asarray(side_a, dtype=np.int64))
    b = np.setdiff1d(np.arange(cf.n_gpus), a) if side_b is None else np.unique(np.asarray(side_b, dtype=np.int64))
    if len(a) == 0 or len(b) == 0 or np.intersect1d(a, b).size:
        raise SpecError("partition: both sides must be non-empty and disjoint")
    if a.max() >= cf.n_gpus or b.max() >= cf.n_gpus or a.min() < 0 or b.min() < 0:
        raise SpecError(f"partition: ranks must be in [0, {cf.n_gpus})")
    src, dst, cap = _flow_graph(cf)
    n = cf.n_nodes
    s, t = n, n + 1
    inj = np.bincount(src, weights=cap, minlength=n)
    ej = np.bincount(dst, weights=cap, minlength=n)
    ga, gb = cf.gpus[a], cf.gpus[b]
    bound = min(inj[ga].sum(), ej[gb].sum())
    if bound <= 0:
        return 0.0
    # scipy's max-flow needs int32 capacities: scale to units of `unit` bytes/s.
    unit = 1.0 if bound < 1e9 else 10.0 ** math.ceil(math.log10(bound / 1e9))
    rows = np.concatenate([src, np.full(len(ga), s), gb])
    cols = np.concatenate([dst, ga, np.full(len(gb), t)])
    caps = np.concatenate([cap, inj[ga], ej[gb]]) / unit
    caps = np.minimum(np.maximum(np.rint(caps), 1), _INT32_MAX).astype(np.int32)
    mat = sp.csr_array((caps, (rows, cols)), shape=(n + 2, n + 2))
    mat.sum_duplicates()
    if mat.data.max(initial=0) >= _INT32_MAX:
        mat.data = np.minimum(mat.data, _INT32_MAX - 1)
    mat.data = mat.data.astype(np.int32)
    return float(maximum_flow(mat, s, t).flow_value) * unit


def bisection(cf: CompiledFabric, partitions: list[Partition] | None = None) -> BisectionResult:
    """Bisection bandwidth per direction: the smallest cut over the structured partitions.

    Candidates are equal halves and, where equal halves would split a group
    (an NVLink domain, a leaf), the nearest whole-group split. To compare
    splits of slightly different sizes, each cut is taken per GPU of the
    smaller side; the result is the smallest per-GPU cut times ``n // 2`` (for
    equal halves this is simply the smallest cut).

    Returns the total (bytes/s), the per-GPU value and the partition that
    attains the minimum, with every candidate's cut.
    """
    parts = structured_partitions(cf) if partitions is None else list(partitions)
    results = [(p, cut_Bps(cf, p.side_a, p.side_b)) for p in parts]
    per_gpu = [v / min(len(p.side_a), len(p.side_b)) for p, v in results]
    i = int(np.argmin(per_gpu))
    best = results[i][0]
    return BisectionResult(bisection_Bps=per_gpu[i] * (cf.n_gpus // 2), per_gpu_Bps=per_gpu[i], partition=best,
                           candidates=tuple((p.name, v) for p, v in results), gpus=cf.n_gpus)
