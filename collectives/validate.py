"""Validation against published measurements (``reference_points.toml``).

Every point of the file is predicted with the same calibration and compared
with the measurement: collective points on bus bandwidth (nccl-tests' busbw),
MoE points on DeepEP's logical bandwidth (bytes counted as the reference says
DeepEP counted them), and the ring-to-NVLS crossover on 8 x H100 as the size
where NVLS becomes faster in our flow-level model. Training points belong to the
step-time estimator (``workloads.training_validate``, the training part of ``fabric-emu validate``).

Examples
--------
>>> rows = validate(ids=["h100x8-allreduce-ring"]).rows
>>> rows[0].passed
True
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass
from importlib import resources
from pathlib import Path

import numpy as np

from collectives.moe import TokenRouting
from collectives.ops import Collective
from collectives.runner import planner_for, run
from fabric import Router, compile_fabric
from topologies import build
from topologies.errors import FabricEmuError, SpecError, brief
from collectives.points_schema import check_ids, check_point
from topologies.files import parse_toml, read_text

__all__ = ["ValidationRow", "ValidationReport", "validate", "default_points_path", "TOLERANCE",
           "crossover_bytes"]

#: Relative tolerance per kind of point (issue 4).
TOLERANCE = {"collective": 0.10, "moe_alltoall": 0.15}


@dataclass(frozen=True)
class ValidationRow:
    id: str
    kind: str
    quantity: str
    predicted: float | None
    measured: float | None
    rel_error: float | None
    tolerance: float | None
    passed: bool | None
    note: str = ""

    def as_dict(self) -> dict:
        return {k: getattr(self, k) for k in ("id", "kind", "quantity", "predicted", "measured", "rel_error",
                                              "tolerance", "passed", "note")}


@dataclass(frozen=True)
class ValidationReport:
    rows: tuple
    mean_abs_error: float
    max_abs_error: float
    source: str

    @property
    def passed(self) -> bool:
        return all(r.passed for r in self.rows if r.passed is not None)

    def as_dict(self) -> dict:
        return {"source": self.source, "mean_abs_error": self.mean_abs_error, "max_abs_error": self.max_abs_error,
                "passed": self.passed, "rows": [r.as_dict() for r in self.rows]}


def default_points_path() -> Path:
    """The project's copy of ``reference_points.toml`` shipped with the package."""
    return Path(str(resources.files("collectives") / "data" / "reference_points.toml"))


_ROUTERS: dict = {}


def _router(preset: str, overrides: dict | None = None) -> Router:
    key = (preset, tuple(sorted((overrides or {}).items())))
    if key not in _ROUTERS:
        _ROUTERS[key] = Router(compile_fabric(build(preset, overrides or {})))
    return _ROUTERS[key]


def _row(pid, kind, quantity, predicted, measured, note="") -> ValidationRow:
    if isinstance(measured, bool) or not isinstance(measured, (int, float)) or not measured > 0:
        raise SpecError(f"validation point {pid}: measured value {measured!r} must be a positive number")
    tol = TOLERANCE[kind]
    err = predicted / measured - 1.0
    return ValidationRow(pid, kind, quantity, predicted, measured, err, tol, abs(err) <= tol, note)


def crossover_bytes(router: Router, n: int = 8, lo: int = 1 << 16, hi: int = 1 << 24) -> float:
    """Smallest all-reduce size where NVLS beats the ring (best protocol) in the flow-level model."""
    planner = planner_for(router)
    ranks = tuple(range(n))

    def faster(size: int) -> bool:
        ring = run(router, [Collective("all_reduce", ranks, size, "ring")], planner=planner)[0].time_s
        nvls = run(router, [Collective("all_reduce", ranks, size, "nvls")], planner=planner)[0].time_s
        return nvls < ring
    if faster(lo) or not faster(hi):
        raise SpecError("crossover: NVLS vs ring does not cross inside the searched range")
    while hi - lo > 1024:
        mid = (lo + hi) // 2
        lo, hi = (lo, mid) if faster(mid) else (mid, hi)
    return float(hi)


_FABRIC_KEYS = ("domains", "gpus_per_domain", "scaleout", "nic", "tiers", "oversubscription", "planes",
                "spine_scope")


def _fabric_overrides(p: dict) -> dict:
    """Preset overrides named by a point (``domains``, ``scaleout``, ``nic``, ...)."""
    return {k: p[k] for k in _FABRIC_KEYS if k in p}


def _collective_cases(p: dict) -> list[tuple[int | None, int, str, float, str]]:
    """(ranks, size_bytes, algorithm, busbw_GBps, suffix) for every measurement of a collective point.

    A point gives one measurement (``busbw_GBps``) or a sweep: ``ranks_and_busbw_GBps``,
    ``sizes_and_busbw_GBps``, ``algorithms_and_busbw_GBps`` or ``ranks_algorithms_and_busbw_GBps``.
    ``ranks`` None means every GPU of the fabric.
    """
    default_algo = "direct" if p["collective"] in ("all_to_all", "send_recv") else "auto"
    algo = p.get("algorithm", default_algo)
    ranks = p.get("ranks")
    size = int(p.get("size_bytes", 8 << 30))
    if "ranks_and_busbw_GBps" in p:
        return [(int(n), size, algo, float(b), f"@{n}") for n, b in p["ranks_and_busbw_GBps"]]
    if "sizes_and_busbw_GBps" in p:
        return [(ranks, int(s), algo, float(b), f"@{int(s)}B") for s, b in p["sizes_and_busbw_GBps"]]
    if "algorithms_and_busbw_GBps" in p:
        return [(ranks, size, str(a), float(b), f"@{a}") for a, b in p["algorithms_and_busbw_GBps"]]
    if "ranks_algorithms_and_busbw_GBps" in p:
        return [(int(n), size, str(a), float(b), f"@{n}:{a}") for n, a, b in p["ranks_algorithms_and_busbw_GBps"]]
    return [(ranks, size, algo, float(p["busbw_GBps"]), "")]


def _collective(p: dict) -> list[ValidationRow]:
    r = _router(p["system"], _fabric_overrides(p))
    if "note" in p and "crossover" in p["id"]:
        n = p.get("ranks", 8)
        if not 2 <= n <= r.cf.n_gpus:
            raise SpecError(f"validation point {p['id']!r}: ranks {n} must be in [2, {r.cf.n_gpus}]")
        x = crossover_bytes(r, n)
        ok = 2**20 < x <= 2 * 2**20
        return [ValidationRow(p["id"], "collective", "ring->NVLS bytes", x, None, None, None, ok,
                              "measured: Ring <= 1 MiB, NVLS >= 2 MiB")]
    rows = []
    cases = _collective_cases(p)
    for n, size, algo, busbw, suffix in cases:
        n = r.cf.n_gpus if n is None else n
        if not 2 <= n <= r.cf.n_gpus:
            raise SpecError(f"validation point {p['id']!r}: ranks {n} must be in [2, {r.cf.n_gpus}]")
        [res] = run(r, [Collective(p["collective"], tuple(range(int(n))), size, algo)])
        rows.append(_row(p["id"] + (suffix if len(cases) > 1 else ""), "collective", f"busbw GB/s ({n} ranks)",
                         res.busbw_Bps / 1e9, busbw, f"{res.algorithm}/{res.protocol}"))
    return rows


def _moe_routing(p: dict, default: str) -> TokenRouting:
    kw = {name: int(p[key]) for key, name in (("experts", "experts"), ("topk", "topk"), ("hidden", "hidden"),
                                              ("tokens", "tokens_per_rank")) if key in p}
    return TokenRouting(p.get("routing", default), **kw)


def _moe(p: dict) -> list[ValidationRow]:
    rows = []
    if "ep_dispatch_combine_GBps" in p:  # a rank sweep inside one domain
        r = _router(p["system"], _fabric_overrides(p))
        for ep, disp, comb in p["ep_dispatch_combine_GBps"]:
            ep = int(ep)
            tr = _moe_routing(p, "uniform")
            if "experts_per_rank" in p:
                tr = dataclasses.replace(tr, experts=int(p["experts_per_rank"]) * ep)
            for coll, value in (("moe_dispatch", disp), ("moe_combine", comb)):
                op = Collective(coll, tuple(range(ep)), 0, options={"moe": tr})
                [res] = run(r, [op])
                rows.append(_row(f"{p['id']}@EP{ep}:{coll.split('_')[1]}", "moe_alltoall", "logical GB/s",
                                 res.algbw_Bps / 1e9, float(value), res.algorithm))
        return rows
    if "ep" in p:  # one EP group, on one domain or across domains
        r = _router(p["system"], _fabric_overrides(p))
        default = "node_limited" if int(p.get("domains", 1)) > 1 else "uniform"
        for coll, key in (("moe_dispatch", "dispatch_GBps"), ("moe_combine", "combine_GBps")):
            op = Collective(coll, tuple(range(int(p["ep"]))), 0, options={"moe": _moe_routing(p, default)})
            [res] = run(r, [op])
            rows.append(_row(f"{p['id']}:{coll.split('_')[1]}", "moe_alltoall", "logical GB/s",
                             res.algbw_Bps / 1e9, float(p[key]), res.algorithm))
        return rows
    for ep, gbps in p["ep_and_rdma_GBps"]:
        # DeepSeek's cluster: 8 x 400G CX-7 per node, multi-plane (one plane per rail) fat-tree
        r = _router("hgx-h800", {"domains": ep // 8, "scaleout": "quantum-2", "spine_scope": "rail"})
        op = Collective("moe_dispatch", tuple(range(ep)), 0, options={"moe": TokenRouting("node_limited")})
        [res] = run(r, [op])
        rows.append(_row(f"{p['id']}@EP{ep}", "moe_alltoall", "DeepEP RDMA GB/s (dispatch)", res.algbw_Bps / 1e9,
                         float(gbps), res.algorithm))
    return rows


def validate(path: str | Path | None = None, *, ids: list[str] | None = None, progress=None) -> ValidationReport:
    """Predict every point of the validation file and compare with the measurements."""
    path = Path(path) if path else default_points_path()
    where = f"validation file {brief(str(path))}"
    doc = parse_toml(read_text(path, what="validation file"), source=where)
    tables = ("collective", "moe_alltoall", "training")
    for key in doc:
        if key not in tables:
            raise SpecError(f"{where}: unknown table {brief(key)}; expected [[{']], [['.join(tables)}]]")
    for key in tables:
        v = doc.get(key, [])
        if not isinstance(v, list) or not all(isinstance(p, dict) for p in v):
            raise SpecError(f"{where}: {key} must be an array of tables ([[{key}]]), got {brief(v)}")
    rows: list[ValidationRow] = []
    # training points are validated by the step-time estimator (workloads.training_validate), from its own
    # file; in any other file they would be skipped without a word
    if doc.get("training") and path != default_points_path():
        raise SpecError(f"{where}: [[training]] points are not evaluated from --file (the step-time validation "
                        f"reads the shipped training points); remove them or use fabric-emu step")
    items = [("collective", p) for p in doc.get("collective", [])] + \
            [("moe_alltoall", p) for p in doc.get("moe_alltoall", [])]
    check_ids(p for _, p in items)
    for k, (kind, p) in enumerate(items):
        check_point(kind, p, k)
        if ids and p.get("id") not in ids:
            continue
        if progress:
            progress(p.get("id", "?"), k + 1, len(items))
        try:
            if kind == "collective":
                rows += _collective(p)
            elif kind == "moe_alltoall":
                rows += _moe(p)
        except FabricEmuError:
            raise
        except KeyError as exc:
            raise SpecError(f"validation point {brief(p.get('id', k))}: missing field {brief(exc.args[0])}") from None
        except (TypeError, ValueError, ZeroDivisionError) as exc:
            raise SpecError(f"validation point {brief(p.get('id', k))}: bad value ({brief(str(exc))[1:-1]})") from None
        if kind == "training":
            rows.append(ValidationRow(p.get("id", "?"), "training", "tokens/s/GPU", None,
                                      p.get("tokens_per_s_per_gpu"), None, None, None,
                                      "step-time estimator not built yet"))
    errs = [abs(r.rel_error) for r in rows if r.rel_error is not None and math.isfinite(r.rel_error)]
    return ValidationReport(rows=tuple(rows), mean_abs_error=float(np.mean(errs)) if errs else 0.0,
                            max_abs_error=float(np.max(errs)) if errs else 0.0, source=str(path))
