"""The schema of validation points: every field's type and range, checked before a point is predicted.

A validation file (``reference_points.toml``, ``published_points.toml`` or one a user writes) holds
``[[collective]]`` and ``[[moe_alltoall]]`` points. :func:`check_point` refuses, with one
:class:`~topologies.errors.SpecError` line naming the point and the field, what the evaluator would
otherwise read wrongly: an unknown key (a misspelt ``algoritm`` would silently fall back to the
default algorithm), a float or boolean where an integer is needed (``int(1.5)`` is 1, ``int(True)``
is 1), a string, NaN, infinity, zero or a negative number where a measurement is needed, a sweep row
of the wrong length, an empty sweep, two measurement keys in one point (only one would be used),
and the bookkeeping keys of ``published_points.toml`` (``split``, ``consistency``, ``settings``) of
the wrong type. :func:`check_ids` refuses two points with one id.

Examples
--------
>>> check_point("collective", {"id": "x", "system": "hgx-h100", "collective": "all_reduce",
...                            "ranks": 8, "size_bytes": 1024, "busbw_GBps": 10.0}, 0)
>>> check_point("collective", {"id": "x", "system": "hgx-h100", "collective": "all_reduce",
...                            "ranks": 8, "size_bytes": 1.5, "busbw_GBps": 10.0}, 0)
Traceback (most recent call last):
...
topologies.errors.SpecError: validation point 'x': size_bytes = 1.5: must be an integer number of bytes between 1 and 1,125,899,906,842,624
"""

from __future__ import annotations

import math

from topologies.errors import SpecError, brief
from topologies.limits import MAX_MESSAGE_BYTES

__all__ = ["check_point", "check_ids", "SPLITS", "MAX_SIZE_BYTES", "MEASUREMENTS", "KNOWN_KEYS", "MOE_METRICS"]

#: Values of ``split`` (``held_out`` is read as ``heldout``).
SPLITS = ("fit", "heldout", "held_out", "unsplit")
#: Largest message size of a point: 1 PiB, the same bound as ``fabric-emu run --size``.
MAX_SIZE_BYTES = MAX_MESSAGE_BYTES
_MAX_RANKS = 1 << 24

# element kinds of sweep rows: "ranks" (integer >= 2), "ep8" (a multiple of 8), "size" (bytes),
# "count" (integer >= 1), "algo" (a string), "value" (a positive finite measurement)
_SWEEPS = {
    "collective": {
        "ranks_and_busbw_GBps": ("ranks", "value"),
        "sizes_and_busbw_GBps": ("size", "value"),
        "algorithms_and_busbw_GBps": ("algo", "value"),
        "ranks_algorithms_and_busbw_GBps": ("ranks", "algo", "value"),
        "sizes_algorithms_and_busbw_GBps": ("size", "algo", "value"),
    },
    "moe_alltoall": {
        "ep_dispatch_combine_GBps": ("ranks", "value", "value"),
        "ep_and_rdma_GBps": ("ep8", "value"),
        "tokens_dispatch_combine_GBps": ("count", "value", "value"),
        "tokens_dispatch_combine_latency_us": ("count", "value", "value"),
    },
}
#: Keys that carry the measurement of a point; a point has exactly one of these forms.
MEASUREMENTS = {
    "collective": ("busbw_GBps", *_SWEEPS["collective"]),
    "moe_alltoall": ("dispatch_GBps", "ep_dispatch_combine_GBps", "ep_and_rdma_GBps"),
}
#: MoE metrics the evaluator predicts (docs/validation-data.md; ``collectives.validate`` uses this list):
#: a point with another ``metric`` (a misspelt ``rmda``) was listed as "not modelled" with exit status 0.
MOE_METRICS = ("logical", "rdma", "nccl_ep", "latency", "trtllm_logical")
_VALUES = ("busbw_GBps", "dispatch_GBps", "combine_GBps", "dispatch_latency_us", "combine_latency_us")
_STRINGS = ("id", "system", "source", "note", "category", "group", "prior_use", "nccl_version", "assumed",
            "collective", "algorithm", "scaleout", "nic", "spine_scope", "metric", "routing", "kernel", "form",
            "dispatch_dtype", "NCCL_ALGO", "nccl_algorithm", "sharp", "link", "split")
_INTS = {"ranks": 2, "size_bytes": 1, "domains": 1, "gpus_per_domain": 1, "planes": 1, "tiers": 1, "ep": 2,
         "experts": 1, "experts_per_rank": 1, "topk": 1, "tokens": 1, "tokens_per_rank": 1, "hidden": 1,
         "topk_groups": 1, "n_group": 1, "seed": 0, "gpus_per_node": 1}
# upper bounds of the integers the evaluator turns into rank lists and buffers itself; the others (domains,
# experts, tokens ...) are bounded by the memory estimate of the build or the collective, which names the option
_TOPS = {"ranks": _MAX_RANKS, "ep": _MAX_RANKS, "size_bytes": MAX_SIZE_BYTES}
_COMMON = ("id", "system", "source", "note", "category", "group", "split", "prior_use", "consistency", "settings",
           "nccl_version", "assumed", "domains", "gpus_per_domain", "scaleout", "nic", "tiers", "oversubscription",
           "planes", "spine_scope")
#: Every key a point of each table may have (the evaluator's fields and the bookkeeping of published points).
KNOWN_KEYS = {
    "collective": frozenset(_COMMON + ("ranks", "collective", "algorithm", "size_bytes", "busbw_GBps", "hier", "pxn",
                                       "NCCL_ALGO", "nccl_algorithm", "sharp", "crossover_window_bytes",
                                       "crossover_algorithms") + tuple(_SWEEPS["collective"])),
    "moe_alltoall": frozenset(_COMMON + ("ep", "experts", "experts_per_rank", "topk", "tokens", "tokens_per_rank",
                                         "hidden", "topk_groups", "n_group", "seed", "skew_sigma", "routing",
                                         "metric", "dispatch_GBps", "combine_GBps", "dispatch_latency_us",
                                         "combine_latency_us", "dispatch_dtype", "gpus_per_node", "kernel", "form",
                                         "link") + tuple(_SWEEPS["moe_alltoall"])),
}


def _is_int(v) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


def _value_ok(v) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v) and v > 0


def _element(kind: str, v) -> str | None:
    """None if ``v`` is a valid sweep element of ``kind``, else what is allowed."""
    if kind == "value":
        return None if _value_ok(v) else "a positive finite number"
    if kind == "algo":
        return None if isinstance(v, str) and v else "an algorithm name (a string)"
    if kind == "size":
        return None if _is_int(v) and 1 <= v <= MAX_SIZE_BYTES else f"an integer number of bytes in [1, {MAX_SIZE_BYTES:,}]"
    if kind == "count":
        return None if _is_int(v) and 1 <= v <= _MAX_RANKS else "an integer >= 1"
    if kind == "ep8":
        return None if _is_int(v) and v >= 8 and v % 8 == 0 else "a multiple of 8 (8 GPUs per node) >= 8"
    return None if _is_int(v) and 2 <= v <= _MAX_RANKS else f"an integer number of ranks in [2, {_MAX_RANKS:,}]"


def check_point(kind: str, p: dict, index: int) -> None:
    """Refuse a point of table ``kind`` whose fields the evaluator would read wrongly (see the module doc)."""
    pid = p.get("id", f"#{index}")
    where = f"validation point {brief(pid)}"

    def bad(field: str, allowed: str):
        return SpecError(f"{where}: {field} = {brief(p[field])}: {allowed}")

    if not isinstance(p.get("id"), str) or not p.get("id"):
        raise SpecError(f"{where} ([[{kind}]] number {index + 1}): id must be a non-empty string")
    if kind not in KNOWN_KEYS:  # [[training]]: the step-time estimator owns its schema; the listed measurement
        for key in ("tokens_per_s_per_gpu", "tflops_per_gpu"):
            if key in p and not _value_ok(p[key]):
                raise bad(key, "must be a positive finite number")
        return
    for key in p:
        if key not in KNOWN_KEYS[kind]:
            raise SpecError(f"{where}: unknown key {brief(key)}; a [[{kind}]] point has "
                            f"{', '.join(sorted(KNOWN_KEYS[kind], key=str.lower))}")
    for key in _STRINGS:
        if key in p and not isinstance(p[key], str):
            raise bad(key, "must be a string")
    if "split" in p and p["split"] not in SPLITS:
        raise bad("split", f"must be one of {', '.join(SPLITS)}")
    if kind == "moe_alltoall" and "metric" in p and p["metric"] not in MOE_METRICS:
        raise bad("metric", f"must be one of {', '.join(MOE_METRICS)}")
    if "consistency" in p and not isinstance(p["consistency"], bool):
        raise bad("consistency", "must be true or false")
    if "pxn" in p and not isinstance(p["pxn"], bool):
        raise bad("pxn", "must be true or false")
    for key in ("settings", "hier"):
        if key in p and not isinstance(p[key], dict):
            raise bad(key, "must be a table")
    for key, low in _INTS.items():
        if key in p:
            top = _TOPS.get(key)
            if not _is_int(p[key]) or p[key] < low or (top is not None and p[key] > top):
                unit = "an integer number of bytes" if key == "size_bytes" else "an integer"
                raise bad(key, f"must be {unit} " + (f"between {low} and {top:,}" if top else f">= {low}"))
    for key in _VALUES + ("skew_sigma",):
        if key in p and not _value_ok(p[key]) and not (key == "skew_sigma" and p[key] == 0):
            raise bad(key, "must be a positive finite number")
    for key, kinds in _SWEEPS[kind].items():
        if key not in p:
            continue
        rows = p[key]
        if not isinstance(rows, list) or not rows:
            raise bad(key, f"must be a non-empty array of [{', '.join(kinds)}] rows")
        for i, row in enumerate(rows):
            if not isinstance(row, list) or len(row) != len(kinds):
                raise SpecError(f"{where}: {key}[{i}] = {brief(row)}: must be a row of {len(kinds)} "
                                f"([{', '.join(kinds)}])")
            for k, (v, want) in enumerate(zip(row, kinds)):
                problem = _element(want, v)
                if problem:
                    raise SpecError(f"{where}: {key}[{i}][{k}] = {brief(v)}: must be {problem}")
    given = [k for k in MEASUREMENTS[kind] if k in p]
    if len(given) > 1:
        raise SpecError(f"{where}: {' and '.join(given)}: give one measurement form per point (only one would "
                        f"be used)")


def check_ids(points) -> None:
    """Refuse two points with the same id (their rows could not be told apart)."""
    seen: set = set()
    for p in points:
        pid = p.get("id")
        if not isinstance(pid, str):  # check_point refuses it with its table and number
            continue
        if pid in seen:
            raise SpecError(f"validation point {brief(pid)}: id given twice; ids must be unique")
        seen.add(pid)
