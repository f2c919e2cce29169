"""Validation against published measurements, with a fit / held-out split.

Every point of a validation file is predicted with the same calibration and
compared with the measurement: collective points on bus bandwidth (nccl-tests'
busbw), MoE points on DeepEP's logical bandwidth, and crossover points on the size
where one algorithm overtakes another in our flow-level model.

File format (TOML): arrays of tables ``[[collective]]``, ``[[moe_alltoall]]`` and
``[[training]]``. Every point may carry

* ``split``: ``"fit"`` (used to choose model forms and fit constants) or
  ``"heldout"`` (never looked at while fitting); default ``"unsplit"``;
* ``consistency``: ``true`` when the point restates a constant taken from the same
  source (it is reported apart and kept out of the error summary);
* ``category``: free text (``nvlink``, ``multinode``, ``nvl72``, ``ep``...);
* ``settings``: everything the prediction needs besides the point's ``system``
  preset: fabric overrides (``domains``, ``gpus_per_domain``, ``scaleout``, ``nic``,
  ``tiers``, ``oversubscription``, ``planes``, ``spine_scope``), routing and
  token-routing keys (``routing``, ``experts``, ``experts_per_rank``, ``tokens_per_rank``,
  ``hidden``, ``topk``, ``dispatch_dtype``, ``form``), ``gpus_per_node`` (EP sweeps
  spanning ``ep / gpus_per_node`` domains), and crossover windows
  (``crossover_window_bytes``, ``crossover_algorithms``); ``sharp`` (``"on ..."``: the job enabled
  CollNet / IB SHARP, ``NCCL_COLLNET_ENABLE=1``; ``"off ..."`` or absent: NCCL's default, CollNet off,
  the switches' reduction unused); ``concurrent_load`` (the collective was
  timed while the GPUs also computed, e.g. a soak test: listed as not modelled, the model's GPU is
  idle). Top-level keys of the
  same names are read too (the shared ``reference_points.toml`` format).

``[[training]]`` points belong to the step-time estimator: they are accepted and
counted, never predicted here. A file with no point, or with tables this module
does not know, is refused with one SpecError line (the CLI exits 2); a report whose
:attr:`ValidationReport.ok` is false (nothing predicted) makes the CLI exit 1.

Examples
--------
>>> rows = validate(ids=["h100x8-allreduce-ring"]).rows
>>> rows[0].passed
True
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from importlib import resources
from pathlib import Path

import numpy as np

from collectives.moe import DISPATCH_DTYPES, TokenRouting
from collectives.ops import Collective
from collectives import nccl_model as nm
from collectives.runner import planner_for, run
from fabric import Router, compile_fabric
from topologies import build
from collectives.points_schema import MOE_METRICS, check_ids, check_point
from collectives.validate_report import (KINDS, SPLITS, TOLERANCE, ErrorSummary, ValidationReport, ValidationRow,
                                         summarise as _summary)
from topologies.errors import FabricEmuError, SpecError, brief
from topologies.files import parse_toml, read_text

__all__ = ["ValidationRow", "ErrorSummary", "ValidationReport", "validate", "default_points_path",
           "default_points_paths", "point_ids",
           "TOLERANCE", "SPLITS", "KINDS", "crossover_bytes", "MOE_METRICS", "LATENCY_METRICS"]

def default_points_path() -> Path:
    """The shared ``reference_points.toml`` shipped with the package."""
    return Path(str(resources.files("collectives") / "data" / "reference_points.toml"))


def default_points_paths() -> tuple[Path, ...]:
    """The validation files shipped with the package: the shared reference points (with their
    settings sidecar) and ``published_points.toml`` (the fit / held-out published points)."""
    data = resources.files("collectives") / "data"
    paths = [default_points_path(), Path(str(data / "published_points.toml"))]
    return tuple(p for p in paths if p.exists())


_ROUTERS: dict = {}
#: one planner per router (its per-fabric tables are built once) and one result per distinct
#: (router, collective, engine mode): sweeps of different sources on the same preset repeat
#: configurations (8 x H100 NVLS at 8 GiB appears in five groups), and a repeat is a lookup
_MEMO: dict = {}


def _run_once(router: Router, op: Collective, policy: str = "auto", **kw):
    """:func:`collectives.runner.run` of one op, memoised per (router, policy) on (op, engine settings):
    results identical. An entry holds its router, so an id is never reused while its entry exists; routers
    no longer in ``_ROUTERS`` (a fit grid clears it after patching a constant) are dropped."""
    entry = _MEMO.get((id(router), policy))
    if entry is None or entry[0] is not router:
        live = {id(x) for x in _ROUTERS.values()}
        for k in [k for k in _MEMO if k[0] not in live]:
            del _MEMO[k]
        entry = _MEMO[(id(router), policy)] = (router, planner_for(router, policy=policy), {})
    _, planner, memo = entry
    key = (op, tuple(sorted(kw.items())))
    if key not in memo:
        [memo[key]] = run(router, [op], planner=planner, **kw)
    return memo[key]


class _Unmodelled(Exception):
    """A point needs something this build does not have (a preset); it is listed, not predicted."""


def _router(preset: str, overrides: dict | None = None) -> Router:
    from topologies.presets import presets
    if preset not in {p.name for p in presets()}:
        raise _Unmodelled(f"preset {preset} not in this build")
    from topologies.catalog import SCALEOUT_FABRICS
    so = (overrides or {}).get("scaleout")
    if so not in (None, "none") and so not in SCALEOUT_FABRICS:
        raise _Unmodelled(f"scaleout {so} not in the catalog")
    key = (preset, tuple(sorted((overrides or {}).items())))
    if key not in _ROUTERS:
        _ROUTERS[key] = Router(compile_fabric(build(preset, overrides or {})))
    return _ROUTERS[key]


#: SHARP-capable scale-out fabric -> the same fabric with the in-network reduction off (catalog).
_NOSHARP = {"quantum-2": "quantum-2-nosharp", "quantum-x800": "quantum-x800-nosharp"}


class _Point:
    """One point's fields with its ``settings`` merged over the top-level keys."""

    def __init__(self, kind: str, p: dict, k: int, policy: str = "auto"):
        self.kind, self.p, self.k, self.policy = kind, p, k, policy
        s = p.get("settings", {})
        if not isinstance(s, dict):
            raise SpecError(f"validation point {p.get('id', k)!r}: settings must be a table")
        self.s = {**{x: v for x, v in p.items() if x != "settings"}, **s}
        if "tokens" in self.s and "tokens_per_rank" not in self.s:
            self.s["tokens_per_rank"] = self.s["tokens"]
        # InfiniBand run without SHARP (NCCL_COLLNET_ENABLE=0, NCCL's default): the same switches, reduction off
        if str(self.s.get("sharp", "")).startswith("off") and self.s.get("scaleout") in _NOSHARP:
            self.s["scaleout"] = _NOSHARP[self.s["scaleout"]]
        self.id = str(p.get("id", f"#{k}"))
        split = {"held_out": "heldout"}.get(p.get("split", "unsplit"), p.get("split", "unsplit"))
        if split not in SPLITS:
            raise SpecError(f"validation point {self.id!r}: split {split!r} must be one of {', '.join(SPLITS)}")
        self.split = split
        self.consistency = bool(p.get("consistency", False))
        self.category = str(p.get("category", ""))
        self.source = str(p.get("source", ""))

    def get(self, key, default=None):
        return self.s.get(key, default)

    def __getitem__(self, key):
        return self.s[key]

    def __contains__(self, key):
        return key in self.s

    def row(self, rid, quantity, predicted, measured, note="") -> ValidationRow:
        if isinstance(measured, bool) or not isinstance(measured, (int, float)) or not measured > 0:
            raise SpecError(f"validation point {rid}: measured value {measured!r} must be a positive number")
        tol = TOLERANCE[self.kind]
        err = predicted / measured - 1.0
        return ValidationRow(rid, self.kind, quantity, predicted, measured, err, tol, abs(err) <= tol, note,
                             self.split, self.consistency, self.category, self.source)


def crossover_bytes(router: Router, n: int = 8, lo: int = 1 << 16, hi: int = 1 << 26,
                    algorithms: tuple[str, str] = ("ring", "nvls"), collective: str = "all_reduce",
                    policy: str = "auto") -> float:
    """Smallest size where ``algorithms[1]`` beats ``algorithms[0]`` (best protocol) in the flow-level model."""
    planner = planner_for(router, policy=policy)
    ranks = tuple(range(n))
    a, b = algorithms

    def faster(size: int) -> bool:
        ta = run(router, [Collective(collective, ranks, size, a)], planner=planner)[0].time_s
        tb = run(router, [Collective(collective, ranks, size, b)], planner=planner)[0].time_s
        return tb < ta
    if faster(lo) or not faster(hi):
        raise SpecError(f"crossover: {a} vs {b} does not cross inside the searched range")
    while hi - lo > 1024:
        mid = (lo + hi) // 2
        lo, hi = (lo, mid) if faster(mid) else (mid, hi)
    return float(hi)


_FABRIC_KEYS = ("domains", "gpus_per_domain", "scaleout", "nic", "tiers", "oversubscription", "planes",
                "spine_scope")


def _fabric_overrides(p, **extra) -> dict:
    """Preset overrides named by a point (``domains``, ``scaleout``, ``nic``, ...)."""
    out = {k: p[k] for k in _FABRIC_KEYS if k in p}
    out.update(extra)
    return out


def _size_tag(size) -> str:
    """Compact binary size for row ids: 65536 -> '64KiB', 1073741824 -> '1GiB'."""
    size = int(size)
    for unit, shift in (("GiB", 30), ("MiB", 20), ("KiB", 10)):
        if size >= 1 << shift and size % (1 << shift) == 0:
            return f"{size >> shift}{unit}"
    return f"{size}B"


def _collective_cases(p) -> list[tuple[int | None, int, str, float, str]]:
    """(ranks, size_bytes, algorithm, busbw_GBps, suffix) for every measurement of a collective point.

    A point gives one measurement (``busbw_GBps``) or a sweep: ``ranks_and_busbw_GBps``,
    ``sizes_and_busbw_GBps``, ``algorithms_and_busbw_GBps``, ``ranks_algorithms_and_busbw_GBps``
    or ``sizes_algorithms_and_busbw_GBps``. ``ranks`` None means every GPU of the fabric.
    """
    default_algo = "direct" if p["collective"] in ("all_to_all", "send_recv") else "auto"
    algo = p.get("algorithm", default_algo)
    ranks = p.get("ranks")
    size = int(p.get("size_bytes", 8 << 30))
    if "ranks_and_busbw_GBps" in p:
        return [(int(n), size, algo, float(b), f"@{n}") for n, b in p["ranks_and_busbw_GBps"]]
    if "sizes_and_busbw_GBps" in p:
        return [(ranks, int(s), algo, float(b), f"@{_size_tag(s)}") for s, b in p["sizes_and_busbw_GBps"]]
    if "algorithms_and_busbw_GBps" in p:
        return [(ranks, size, str(a), float(b), f"@{a}") for a, b in p["algorithms_and_busbw_GBps"]]
    if "ranks_algorithms_and_busbw_GBps" in p:
        return [(int(n), size, str(a), float(b), f"@{n}:{a}") for n, a, b in p["ranks_algorithms_and_busbw_GBps"]]
    if "sizes_algorithms_and_busbw_GBps" in p:
        return [(ranks, int(s), str(a), float(b), f"@{_size_tag(s)}:{a}") for s, a, b in
                p["sizes_algorithms_and_busbw_GBps"]]
    return [(ranks, size, algo, float(p["busbw_GBps"]), "")]


def _collective_options(p) -> dict:
    """Algorithm options named by a point: ``hier`` shapes (NCCL_ALGO=NVLSTree, SHARP on), ``pxn``,
    ``nccl_version``, ``nccl_buffsize`` (``NCCL_BUFFSIZE``), ``nvls_chunk_bytes`` (``NCCL_NVLS_CHUNKSIZE``), ``nvls``
    (``NCCL_NVLS_ENABLE=0`` with NCCL's own choice), ``collnet`` (``sharp = "on ..."`` or
    ``NCCL_COLLNET_ENABLE = "1"``: CollNet in NCCL's choice; otherwise off, NCCL's default)."""
    opts = {}
    if "hier" in p:
        opts["hier"] = dict(p["hier"])
    elif p.get("algorithm") == "hier":
        forced = str(p.get("NCCL_ALGO", p.get("nccl_algorithm", ""))).lower()
        if "nvlstree" in forced:
            opts["hier"] = {"intra": "nvls", "inter": "tree"}
        elif str(p.get("sharp", "")).startswith("on"):
            opts["hier"] = {"intra": "nvls", "inter": "sharp"}
    if "pxn" in p:
        opts["pxn"] = bool(p["pxn"])
    if nm.parse_nccl_version(p.get("nccl_version")) is not None:
        opts["nccl_version"] = str(p["nccl_version"])  # that release's cap tables (nccl_model.tuning_tables)
    if (buff := _setting_bytes(p, "NCCL_BUFFSIZE")) is not None:
        opts["nccl_buffsize"] = buff  # the Simple step (trees.tree_chunk_bytes)
    if str(p.get("NCCL_NVLS_ENABLE", "")).strip() == "0" and p.get("algorithm", "auto") == "auto":
        opts["nvls"] = False  # NCCL's choice without NVLS / NVLSTree
    if str(p.get("sharp", "")).startswith("on") or str(p.get("NCCL_COLLNET_ENABLE", "")).strip() == "1":
        opts["collnet"] = True  # the source enabled CollNet (SHARP); without it NCCL's default, off
    if (chunk := _setting_bytes(p, "NCCL_NVLS_CHUNKSIZE")) is not None:  # e.g. set by AWS's net plugin
        opts["nvls_chunk_bytes"] = chunk  # (docs/validation-data.md)
    if (cap := _setting_bytes(p, "NCCL_NVLSTREE_MAX_CHUNKSIZE")) is not None:  # AWS's net plugin from v1.8.0
        opts["nvlstree_max_chunk_bytes"] = cap  # NVLSTree's chunk cap (round 8, nccl_model.nvlstree_chunk_bytes)
    return opts


def _setting_bytes(p, key: str) -> int | None:
    """An NCCL environment setting in bytes from a point's settings: its leading integer (a note may follow,
    ``"524288 (AWS plugin ...)"``), or None when absent or noted as NCCL's default (``"default ..."``).
    Anything else is refused in one line naming the point and the field."""
    if key not in p:
        return None
    text = str(p[key]).strip()
    if text.lower().startswith("default"):
        return None
    head = text.split()[0] if text else ""
    if not head.isdigit():
        raise SpecError(f"validation point {p.id!r}: settings.{key} = {brief(p[key])} must start with a whole "
                        f"number of bytes (e.g. \"8388608\") or say \"default ...\"")
    return int(head)


def _host_overhead_s(p) -> float:
    """Per-call host time inside the measured interval (``timing = "one call ..."``: the start event is
    recorded before the host issues the call; calibration.HOST_CALL_OVERHEAD_S), else 0."""
    from collectives.calibration import HOST_CALL_OVERHEAD_S
    return HOST_CALL_OVERHEAD_S if str(p.get("timing", "")).startswith("one call") else 0.0


def _collective(p: _Point) -> list[ValidationRow]:
    if "concurrent_load" in p:  # timed while the GPUs also compute (a soak test): the model's GPU is idle
        raise _Unmodelled("timed under a concurrent compute load (settings.concurrent_load)")
    r = _router(p["system"], _fabric_overrides(p))
    if "crossover_window_bytes" in p:
        lo, hi = (int(x) for x in p["crossover_window_bytes"])
        algos = tuple(p.get("crossover_algorithms", ("ring", "nvls")))
        x = crossover_bytes(r, p.get("ranks", 8), algorithms=algos, collective=p["collective"], policy=p.policy)
        ok = lo < x <= hi
        return [ValidationRow(p.id, "collective", f"{algos[0]}->{algos[1]} bytes", x, None, None, None, ok,
                              f"measured: {algos[0]} <= {lo} B, {algos[1]} >= {hi} B", p.split, p.consistency,
                              p.category, p.source)]
    rows = []
    cases = _collective_cases(p)
    opts = _collective_options(p)
    host_s = _host_overhead_s(p)
    for n, size, algo, busbw, suffix in cases:
        n = r.cf.n_gpus if n is None else n
        if not 2 <= n <= r.cf.n_gpus:
            raise SpecError(f"validation point {p.id!r}: ranks {n} must be in [2, {r.cf.n_gpus}]")
        res = _run_once(r, Collective(p["collective"], tuple(range(int(n))), size, algo, options=dict(opts)),
                        policy=p.policy)
        pred = res.busbw_Bps
        if host_s > 0 and pred > 0:  # the tool's own per-call time, measured with the collective
            t = nm.busbw_factor(p["collective"], int(n)) * size / pred
            pred *= t / (t + host_s)
        rows.append(p.row(p.id + (suffix if len(cases) > 1 else ""), f"busbw GB/s ({n} ranks)",
                          pred / 1e9, busbw, f"{res.algorithm}/{res.protocol}"))
    return rows


_ROUTING_KEYS = ("tokens_per_rank", "hidden", "experts", "topk", "topk_groups", "n_group", "seed")


def _moe_routing(p, default: str, ep: int) -> TokenRouting:
    kw = {k: int(p[k]) for k in _ROUTING_KEYS if k in p}
    if "experts_per_rank" in p:
        kw["experts"] = int(p["experts_per_rank"]) * ep
    if "skew_sigma" in p:
        kw["skew_sigma"] = float(p["skew_sigma"])
    if str(p.get("dispatch_dtype", "")).lower() in DISPATCH_DTYPES:  # "not stated" keeps DeepEP's FP8
        kw["dispatch_dtype"] = str(p["dispatch_dtype"]).lower()
    return TokenRouting(p.get("routing", default), **kw)


def _moe_router(p, ep: int) -> Router:
    gpn = p.get("gpus_per_node")
    if gpn and ep > int(gpn) and "domains" not in p:
        if ep % int(gpn):
            raise SpecError(f"validation point {p.id!r}: ep {ep} is not a multiple of gpus_per_node {gpn}")
        return _router(p["system"], _fabric_overrides(p, domains=ep // int(gpn)))
    return _router(p["system"], _fabric_overrides(p))


#: Metrics whose rows compare the kernel time: ``trtllm_logical`` (TensorRT-LLM's NVLinkOneSided blog)
#: reports GB/s derived from the measured latency (``tokens x min(ep, top_k) x bytes_per_token / latency``),
#: so the latency, the measured quantity, is what is compared.
LATENCY_METRICS = ("latency", "trtllm_logical")


def _moe_one(p: _Point, ep: int, coll: str, measured: float, rid: str, quantity: str,
             tokens: int | None = None) -> ValidationRow:
    metric = str(p.get("metric", "")) or None
    if metric is not None and metric not in MOE_METRICS:
        raise _Unmodelled(f"metric {metric}")
    r = _moe_router(p, ep)
    if ep > r.cf.n_gpus:  # was an IndexError deep in the planner
        raise SpecError(f"validation point {brief(p.id)}: ep = {ep} is more than the {r.cf.n_gpus} GPUs of "
                        f"{brief(p['system'])} (domains = {p.get('domains', 1)}); give ep <= {r.cf.n_gpus} or more domains")
    multi = r.cf.n_gpus > 0 and len(np.unique(r.cf.node_domain[r.cf.gpus[:ep]])) > 1
    tr = _moe_routing(p, "node_limited" if multi else "uniform", ep)
    if tokens is not None:
        tr = replace(tr, tokens_per_rank=int(tokens))
    opts = {"moe": tr}
    # the kernel as the source names it: "low-latency", "low_latency_dispatch" (DeepEP's function names)
    kernel = str(p.get("kernel", ""))
    low_latency = "low-latency" in kernel.replace("_", "-").lower()
    if "form" in p:
        opts["form"] = str(p["form"])
    elif low_latency or "pplx" in kernel:
        opts["form"] = "ll"  # per (token, expert) messages straight to the rank (pplx-kernels work so too)
    if "UCCL" in kernel:  # CPU-proxy kernels (settings.kernel names them)
        opts["kernel"] = "uccl_ll" if low_latency else "uccl"
    if "NVLinkOneSided" in kernel:
        # TensorRT-LLM's one-sided NVLink kernels (moeAlltoAllKernels.cu): a warp per token stores it once
        # per distinct target rank (the ``direct`` traffic), all peers at once, and the last CTA writes
        # the completion flags behind the data (fence.release.sys): the low-latency family's fixed time,
        # no per-peer serial work (round 7, docs/collectives.md)
        opts["kernel"] = "nvlink_onesided"  # round 11: its own one-domain fixed time (was "moe_ll")
        opts["pull_combine"] = True  # its combine: barrier before the pulls, prepare grid (round 8)
    # DeepEP V1 normal kernels (and UCCL-EP's DeepEP-compatible ones) are SM-bound with the SMs the row names
    if "sms" in p and not low_latency and ("DeepEP V1" in kernel or "DeepEP-compatible" in kernel):
        opts["sms"] = int(p["sms"])
    if metric not in (None, *LATENCY_METRICS):
        opts["metric"] = metric
    # epoch mode (1 % tolerance): MoE flows all differ in size, exact re-solves at every finish are
    # 3x slower for < 1 % difference in the completion time
    res = _run_once(r, Collective(coll, tuple(range(ep)), 0, options=opts), policy=p.policy, mode="epoch",
                    epsilon=0.01)
    if metric in LATENCY_METRICS:
        return p.row(rid, "latency us", res.time_s * 1e6, float(measured), res.algorithm)
    return p.row(rid, quantity, res.algbw_Bps / 1e9, float(measured), res.algorithm)


def _moe(p: _Point) -> list[ValidationRow]:
    rows = []
    lat = p.get("metric") in LATENCY_METRICS
    if "ep_dispatch_combine_GBps" in p:  # a rank sweep
        for ep, d, c in p["ep_dispatch_combine_GBps"]:
            for coll, value in (("moe_dispatch", d), ("moe_combine", c)):
                rows.append(_moe_one(p, int(ep), coll, value, f"{p.id}@EP{int(ep)}:{coll.split('_')[1]}",
                                     f"{p.get('metric') or 'logical'} GB/s"))
        return rows
    for key in ("tokens_dispatch_combine_latency_us", "tokens_dispatch_combine_GBps"):
        if key in p and (lat == key.endswith("_us")):  # a batch-size sweep
            for tok, d, c in p[key]:
                for coll, value in (("moe_dispatch", d), ("moe_combine", c)):
                    rows.append(_moe_one(p, int(p["ep"]), coll, value, f"{p.id}@T{int(tok)}:{coll.split('_')[1]}",
                                         "GB/s", tokens=int(tok)))
            return rows
    if "ep" in p:  # one EP group
        keys = (("moe_dispatch", "dispatch_latency_us"), ("moe_combine", "combine_latency_us")) if lat else \
            (("moe_dispatch", "dispatch_GBps"), ("moe_combine", "combine_GBps"))
        for coll, key in keys:
            if key in p:
                rows.append(_moe_one(p, int(p["ep"]), coll, p[key], f"{p.id}:{coll.split('_')[1]}",
                                     f"{p.get('metric') or 'logical'} GB/s"))
        if rows:
            return rows
    if "ep_and_rdma_GBps" in p:  # DeepEP internode dispatch, RDMA bottleneck bandwidth
        for ep, gbps in p["ep_and_rdma_GBps"]:
            rows.append(_moe_one(p, int(ep), "moe_dispatch", gbps, f"{p.id}@EP{int(ep)}",
                                 "DeepEP RDMA GB/s (dispatch)"))
        return rows
    raise SpecError(f"validation point {p.id!r}: no measurement (dispatch_GBps, ep_dispatch_combine_GBps, "
                    "tokens_dispatch_combine_*, dispatch_latency_us or ep_and_rdma_GBps)")


def _host_copy(p: _Point) -> list[ValidationRow]:
    """Host-device copy bandwidth: the host link's raw rate x the host-link efficiency."""
    from collectives.calibration import host_link_efficiency
    if "raw_GBps" not in p or not any(k in p for k in ("h2d_GBps", "d2h_GBps")):
        raise _Unmodelled(f"{p.get('link', 'host link')} rate or copy figures not in the point")
    if not str(p.get("link", "pcie")).startswith("pcie"):
        raise _Unmodelled(f"{p['link']}: the measured efficiency is PCIe's")
    if str(p.get("engine", "copy engine")).lower() == "sm":  # nvbandwidth *_memcpy_sm: a kernel's stores, not DMA
        raise _Unmodelled("SM copy kernels: the host-link efficiency is the copy engines'")
    eta = host_link_efficiency()
    return [p.row(f"{p.id}:{key[:3]}", "host copy GB/s", float(p["raw_GBps"]) * eta, float(p[key]),
                  f"raw x {eta:.3f}") for key in ("h2d_GBps", "d2h_GBps") if key in p]


def _sidecar(path: Path) -> dict:
    """Per-id split / consistency / settings for a file in the shared format (``<name>.settings.toml``)."""
    side = path.with_name(path.stem + ".settings.toml")
    if not side.exists():
        return {}
    doc = parse_toml(read_text(side, what="validation settings"), source=f"validation settings {brief(str(side))}")
    return {str(e.get("id")): e for e in doc.get("point", []) if isinstance(e, dict)}


def validate(path: str | Path | None = None, *, ids: list[str] | None = None, progress=None,
             splits: tuple[str, ...] | None = None, policy: str = "auto") -> ValidationReport:
    """Predict every point of the validation file(s) and compare with the measurements.

    Parameters
    ----------
    path : str or Path, optional
        Validation file (default: every file of :func:`default_points_paths`).
    ids : list of str, optional
        Only these point ids.
    progress : callable, optional
        ``progress(id, k, n)`` before each point.
    splits : tuple of str, optional
        Only points of these splits.
    policy : {"auto", "ecmp", "dmodk", "spray"}
        Scale-out routing of every point: ``auto`` routes each point as its fabric's switches
        forward (:func:`collectives.runner.fabric_policy`: InfiniBand by destination, Spectrum-X
        and EFA spraying, other Ethernet ECMP hashing); the others force one policy on all points.
    """
    paths = [Path(path)] if path else list(default_points_paths())
    items = []
    unrecognised: tuple = ()
    for one in paths:
        doc, side = _read(one)
        where = f"validation file {brief(str(one))}"
        for key in doc:
            if key not in KINDS:  # an unrecognised file checks nothing: refuse it (CLI exit 2)
                raise SpecError(f"{where}: unknown table {brief(key)}; expected [[{']], [['.join(KINDS)}]]")
        found = _items(one, doc, side)
        if not found:
            raise SpecError(f"{where} has no validation points ([[collective]], [[moe_alltoall]], [[host_copy]] "
                            "or [[training]] tables); nothing was checked")
        items += found
    rows, training = _predict(items, ids, splits, progress, policy)
    if path and rows and all(r.predicted is None for r in rows):
        # a user's file of which nothing could be predicted (a misspelt preset) reported "0 points, mean
        # |error| 0.0%" with exit status 0; the shipped files list such points beside the predicted ones
        first = next(r for r in rows)
        raise SpecError(f"validation file {brief(str(path))}: no point could be predicted ({brief(first.id)}: "
                        f"{first.note}); check the names against fabric-emu topo list")
    errors = [r for r in rows if not r.consistency]
    summaries = tuple(_summary(s, [r for r in errors if r.split == s]) for s in SPLITS
                      if any(r.split == s for r in errors))
    cons = [r for r in rows if r.consistency]
    overall = _summary("all", errors)
    return ValidationReport(rows=tuple(rows), mean_abs_error=overall.mean_abs_error,
                            max_abs_error=overall.max_abs_error, source=", ".join(str(p) for p in paths),
                            summaries=summaries, consistency=_summary("consistency", cons) if cons else None,
                            training_points=training, unrecognised=unrecognised)


def point_ids(path: str | Path | None = None) -> frozenset:
    """The ids of every point of the validation file(s) (default: :func:`default_points_paths`), of
    every table kind, so that an id asked for can be checked before anything is predicted.

    Examples
    --------
    >>> "h100x8-allreduce-ring" in point_ids()
    True
    """
    out = set()
    for one in ([Path(path)] if path else list(default_points_paths())):
        doc, side = _read(one)
        out |= {raw.get("id") for _, raw in _items(one, doc, side)}
    return frozenset(out)


def _read(path: Path) -> tuple[dict, dict]:
    where = f"validation file {brief(str(path))}"
    doc = parse_toml(read_text(path, what="validation file"), source=where)
    return doc, _sidecar(path)


def _items(path: Path, doc: dict, side: dict) -> list:
    items = []
    for kind in KINDS:
        entries = doc.get(kind, [])
        if not isinstance(entries, list):
            raise SpecError(f"validation file {str(path)!r}: {kind} must be an array of tables ([[{kind}]])")
        for p in entries:
            if not isinstance(p, dict):
                raise SpecError(f"validation file {str(path)!r}: {kind} entries must be tables")
            extra = side.get(str(p.get("id")))
            if extra:
                p = {**p, **{k: v for k, v in extra.items() if k != "id"},
                     "settings": {**p.get("settings", {}), **extra.get("settings", {})}}
            items.append((kind, p))
    return items


def _predict(items, ids, splits, progress, policy: str = "auto") -> tuple[list, int]:
    rows: list[ValidationRow] = []
    training = 0
    checked = ("collective", "moe_alltoall")
    check_ids(raw for kind, raw in items if kind in checked)
    for k, (kind, raw) in enumerate(items):
        if kind == "training":
            training += 1
            continue
        if kind in checked:
            check_point(kind, raw, k)
        if ids and raw.get("id") not in ids:
            continue
        try:
            p = _Point(kind, raw, k, policy)
            if splits and p.split not in splits:
                continue
            if progress:
                progress(p.id, k + 1, len(items))
            rows += {"collective": _collective, "moe_alltoall": _moe, "host_copy": _host_copy}[kind](p)
        except _Unmodelled as exc:
            rows.append(ValidationRow(p.id, kind, "-", None, None, None, None, None, f"not modelled: {exc}",
                                      p.split, p.consistency, p.category, p.source))
        except FabricEmuError:
            raise
        except KeyError as exc:
            raise SpecError(f"validation point {brief(raw.get('id', k))}: missing field {brief(exc.args[0])}") from None
        except (TypeError, ValueError, ZeroDivisionError) as exc:
            raise SpecError(f"validation point {brief(raw.get('id', k))}: bad value ({brief(str(exc))[1:-1]})") from None
    return rows, training
