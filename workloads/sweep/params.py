"""The parameters of a sweep point: their vocabulary, defaults, normalisation and identity.

A point is one evaluation of ``fabric-emu run COLLECTIVE`` or ``fabric-emu step``
with every parameter spelled out. Its keys live in one flat namespace: the
options of ``run`` or ``step`` (``routing``, ``size``, ``ep``, ...), the
failure lists ``fail`` and ``degrade``, and every ``--set`` parameter of the
point's topology preset (``domains``, ``scaleout``, ``oversubscription``, ...).

Normalising a point converts every value strictly (sizes to bytes, preset
parameters through :func:`topologies.presets.coerce`) so that two spellings of
the same input (``64MiB`` and ``67108864``) are the same point; the point's
identity is a hash of the normalised inputs and the package version.

Examples
--------
>>> p = normalise({"op": "all_to_all", "topo": "fat-tree", "hosts": "16", "radix": "8", "size": "1MiB"})
>>> p.inputs["size"], p.sets
(1048576, {'hosts': 16, 'radix': 8})
>>> p.point_id == normalise({"op": "all_to_all", "topo": "fat-tree", "hosts": 16, "radix": 8,
...                          "size": 1 << 20}).point_id
True
"""

from __future__ import annotations

import functools
import hashlib
import json
from dataclasses import dataclass, field
from pathlib import Path

from collectives.moe import DISPATCH_DTYPES, ROUTING_KINDS
from collectives.ops import ALGORITHMS, COLLECTIVES, NCCL_SWITCH_COLLECTIVES, PXN_COLLECTIVES, check_nccl_version
from fabric.failures import parse_degradation
from fabric.routing import POLICIES
from topologies.errors import SpecError, brief
from topologies.presets import preset
from topologies.limits import MAX_HIDDEN, MAX_MESSAGE_BYTES, MAX_SEED
from topologies.units import parse_size
from workloads.layout import OPTIMIZERS, PLACEMENTS, PRECISIONS, RECOMPUTE, SCHEDULES
from workloads.step import ATTENTION_PRECISIONS
from workloads.traffic import ROUTINGS as STEP_ROUTINGS
from collectives.groups import LAYOUTS

__all__ = ["KINDS", "RUN_KEYS", "STEP_KEYS", "LIST_KEYS", "Point", "normalise", "kind_of", "set_keys_of",
           "package_version", "STEP_OP"]

#: The operation name of a training-step point (every other op is a collective).
STEP_OP = "step"
#: Point kinds: a collective (``run``) or a training step (``step``).
KINDS = ("collective", "step")
#: Keys that hold lists of selectors (a grid value adds one selector to the list).
LIST_KEYS = ("fail", "degrade")


def _choice(allowed):
    def conv(key, v):
        s = str(v).strip().lower() if not isinstance(v, bool) else v
        if s not in allowed:
            raise SpecError(f"{key}: {brief(v)} is not one of {', '.join(map(str, allowed))}")
        return s
    return conv


def _optional_choice(allowed):
    inner = _choice(allowed)
    return lambda key, v: None if v in (None, "", "none", "auto") else inner(key, v)


def _int(lo: int, hi: int = MAX_SEED):  # at most a signed 64-bit integer: what the store (SQLite) holds
    span = f"between {lo} and {hi:,}"

    def conv(key, v):
        if isinstance(v, bool):
            raise SpecError(f"{key}: {brief(v)} must be an integer {span}")
        if isinstance(v, str) and v.strip().isascii() and v.strip().isdigit():
            v = int(v.strip())
        if not isinstance(v, int) or not lo <= v <= hi:
            raise SpecError(f"{key}: {brief(v)} must be an integer {span}")
        return v
    return conv


def _optional_int(lo: int):
    inner = _int(lo)
    return lambda key, v: None if v in (None, "", "none", "auto") else inner(key, v)


def _ranks(key, v):
    if isinstance(v, str) and v.strip().lower() == "all":
        return "all"
    return _int(2)(key, v)


def _size(key, v):
    if isinstance(v, bool):
        raise SpecError(f"{key}: {brief(v)} is not a size")
    if isinstance(v, str) and v.strip().isascii() and v.strip().isdigit() and len(v.strip()) < 20:
        v = int(v.strip())   # bare digits in a grid are bytes
    n = v if isinstance(v, int) else int(parse_size(str(v), field=key))
    if not 1 <= n <= MAX_MESSAGE_BYTES:  # as run --size: 0 B is 0/0 bandwidth, beyond 1 PiB times overflow
        raise SpecError(f"{key}: {brief(v)} must be between 1 byte and 1 PiB ({MAX_MESSAGE_BYTES:,} B)")
    return n


def _bool(key, v):
    if v in (None, "", "auto", "none"):
        return None
    if isinstance(v, bool):
        return v
    s = str(v).strip().lower()
    if s in ("1", "true", "yes", "on"):
        return True
    if s in ("0", "false", "no", "off"):
        return False
    raise SpecError(f"{key}: {brief(v)} must be true or false")


def _str(key, v):
    if not isinstance(v, (str, int, float)) or isinstance(v, bool) or not str(v).strip():
        raise SpecError(f"{key}: {brief(v)} must be a non-empty string")
    return str(v).strip()


#: ``run`` options: key -> (default, converter).
RUN_KEYS = {
    "topo": (None, _str),
    "ranks": ("all", _ranks),
    "size": ("1GiB", _size),
    "algo": ("auto", _choice(ALGORITHMS)),
    "routing": ("auto", _choice(("auto",) + POLICIES)),  # auto: the fabric's forwarding (runner.fabric_policy)
    "seed": (0, _int(0)),
    "groups": (1, _int(1)),
    "layout": ("contiguous", _choice(LAYOUTS)),
    "pxn": (None, _bool),
    "nvls": (None, _bool),                   # NCCL_NVLS_ENABLE (None: NCCL's default, on)
    "collnet": (None, _bool),                # NCCL_COLLNET_ENABLE (None: NCCL's default, off)
    "nccl_version": (None, lambda k, v: None if v in (None, "", "none") else check_nccl_version(v, field=k)),
    "moe_routing": (None, _optional_choice(ROUTING_KINDS)),
    "tokens": (4096, _int(1)),
    "hidden": (7168, _int(1, MAX_HIDDEN)),
    "experts": (256, _int(1)),
    "topk": (8, _int(1)),
    "dispatch_dtype": ("fp8", _choice(DISPATCH_DTYPES)),
}
#: ``run`` keys that only some collectives use: key -> the collectives that do.
_ONLY_FOR = {"nvls": NCCL_SWITCH_COLLECTIVES, "collnet": NCCL_SWITCH_COLLECTIVES,
             "dispatch_dtype": ("moe_dispatch",),
             "nccl_version": tuple(c for c in COLLECTIVES if not c.startswith("moe"))}

#: ``step`` options: key -> (default, converter). ``routing`` is the scale-out load balancing
#: (``auto`` sprays), ``moe_routing`` the token routing of the EP all-to-alls.
STEP_KEYS = {
    "model": (None, _str),
    "system": (None, _str),
    "gpus": (None, _int(1)),
    "tp": (1, _int(1)), "pp": (1, _int(1)), "vpp": (1, _int(1)), "ep": (1, _int(1)), "etp": (1, _int(1)),
    "cp": (1, _int(1)),
    "global_batch": (None, _int(1)),
    "micro_batch": (1, _int(1)),
    "seq_len": (4096, _int(1)),
    "precision": ("bf16", _choice(PRECISIONS)),
    "recompute": ("none", _choice(RECOMPUTE)),
    "schedule": (None, _optional_choice(SCHEDULES)),
    "overlap": ("auto", _str),
    "optimizer": ("zero1", _choice(OPTIMIZERS)),
    "gpus_per_domain": (None, _optional_int(1)),
    "placement": ("megatron", _choice(PLACEMENTS)),
    "ep_in_domain": (False, lambda k, v: bool(_bool(k, v))),
    "moe_routing": ("balanced", _choice(STEP_ROUTINGS)),
    "routing": ("auto", _choice(("auto",) + POLICIES)),
    "pp_layout": (None, lambda k, v: None if v in (None, "", "auto", "none") else _str(k, v)),
    "attention_precision": ("auto", _choice(ATTENTION_PRECISIONS)),
    "seed": (0, _int(0)),
}


@dataclass(frozen=True)
class Point:
    """One normalised sweep point.

    ``inputs`` holds every option of the point's kind (defaults filled in);
    ``sets`` the topology overrides, ``fail``/``degrade`` the selectors;
    ``labels`` the values as the user spelled them (for tables and exports).
    """

    op: str
    inputs: dict
    sets: dict
    fail: tuple = ()
    degrade: tuple = ()
    labels: dict = field(default_factory=dict, compare=False)
    point_id: str = ""

    @property
    def kind(self) -> str:
        return kind_of(self.op)

    @property
    def topo(self) -> str:
        return self.inputs["system" if self.kind == "step" else "topo"]

    def identity(self) -> dict:
        """The normalised inputs that make the point (hashed with the package version)."""
        return {"op": self.op, "inputs": self.inputs, "sets": self.sets, "fail": list(self.fail),
                "degrade": list(self.degrade)}

    def columns(self) -> dict:
        """Flat input columns: every option, every ``--set`` key and the failure lists."""
        out = {"op": self.op}
        for k, v in self.inputs.items():
            out[k] = self.labels.get(k, v)
        for k, v in self.sets.items():
            out[k] = self.labels.get(k, v if not isinstance(v, list) else ",".join(map(str, v)))
        out["fail"] = "; ".join(self.fail) or "none"
        out["degrade"] = "; ".join(self.degrade) or "none"
        return out


def kind_of(op: str) -> str:
    """``'step'`` for the training step, ``'collective'`` for a collective name (SpecError otherwise)."""
    if op == STEP_OP:
        return "step"
    if op in COLLECTIVES:
        return "collective"
    raise SpecError(f"sweep: {brief(op)} is neither 'step' nor a collective ({', '.join(COLLECTIVES)})")


def _options(op: str) -> dict:
    return STEP_KEYS if kind_of(op) == "step" else RUN_KEYS


def set_keys_of(topo: str) -> tuple[str, ...]:
    """``--set`` parameter names of preset ``topo`` (empty for spec and graph files)."""
    if Path(str(topo)).suffix.lower() in (".toml", ".json", ".graphml"):
        return ()
    return tuple(p.name for p in preset(topo).params)


@functools.lru_cache(maxsize=1)
def package_version() -> str:
    """The installed fabric-emu version (part of every point's identity).

    Read once per process: reading the package metadata took 3 ms, 85 % of planning a point, so a
    sweep of 10^6 points (``grid.MAX_POINTS``) spent 50 minutes before its first point.
    """
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("fabric-emu")
    except PackageNotFoundError:  # pragma: no cover - source checkouts without metadata
        return "0+unknown"


def _hash(identity: dict) -> str:
    text = json.dumps({"point": identity, "version": package_version()}, sort_keys=True, separators=(",", ":"),
                      default=str)
    return hashlib.sha256(text.encode()).hexdigest()[:20]


def normalise(raw: dict) -> Point:
    """Point from a flat dict of user values (``op``, options, ``--set`` keys, ``fail``, ``degrade``).

    Raises
    ------
    SpecError
        Naming the first key that is unknown or whose value is not allowed.
    """
    op = raw.get("op")
    options = _options(op)
    topo_key = "system" if kind_of(op) == "step" else "topo"
    inputs, sets, labels = {}, {}, {}
    topo = raw.get(topo_key)
    if topo in (None, ""):
        raise SpecError(f"sweep: {topo_key} is required (--{topo_key} or a grid/base key)")
    set_names = set_keys_of(str(topo))
    for key, value in raw.items():
        if key in ("op",) + LIST_KEYS:
            continue
        if key in options:
            continue
        if key in set_names:
            continue
        if set_names or Path(str(topo)).suffix.lower() not in (".toml", ".json", ".graphml"):
            allowed = ", ".join(sorted(set(options) | set(LIST_KEYS)))
            raise SpecError(f"sweep key {brief(key)}: neither an option of {op if op == 'step' else 'run'} "
                            f"({allowed}) nor a --set parameter of {topo} ({', '.join(set_names)})")
        raise SpecError(f"sweep key {brief(key)}: --set parameters apply to presets, not to the file {topo}")
    for key, (default, conv) in options.items():
        value = raw.get(key, default)
        if value is None:
            if key in ("topo", "system", "model", "gpus", "global_batch"):
                raise SpecError(f"sweep: {key} is required for {op}")
            inputs[key] = None
            continue
        inputs[key] = conv(key, value)
        if isinstance(value, str) and key == "size":
            labels[key] = value
    if kind_of(op) == "collective" and op.startswith("moe"):
        if "size" in raw:
            raise SpecError(f"size: {op} sizes come from --tokens/--hidden/--experts/--topk; do not sweep size")
        inputs["size"] = None
    if kind_of(op) == "collective" and not op.startswith("moe"):
        for key in ("moe_routing", "tokens", "hidden", "experts", "topk"):
            if key in raw:
                raise SpecError(f"{key}: applies only to moe_dispatch/moe_combine, not to {op}")
            inputs.pop(key)
    if kind_of(op) == "collective":
        for key, ops in _ONLY_FOR.items():
            if op not in ops:
                if raw.get(key) not in (None, "", "none"):
                    raise SpecError(f"{key}: applies only to {', '.join(ops)}, not to {op}")
                inputs.pop(key, None)
        if op not in PXN_COLLECTIVES and raw.get("pxn") not in (None, "", "none", "auto"):
            # refused, as run --pxn is; the key stays in the inputs (None) so that point ids do not change
            raise SpecError(f"pxn: applies only to {', '.join(PXN_COLLECTIVES)}, not to {op} (it picks its own "
                            f"forwarding)")
        if inputs.get("nvls") is False and inputs.get("algo") == "nvls":
            raise SpecError("nvls = false: turns NVLS off (NCCL_NVLS_ENABLE=0); it cannot go with algo nvls")
        if inputs.get("collnet") is False and inputs.get("algo") == "sharp":
            raise SpecError("collnet = false: leaves CollNet off (NCCL_COLLNET_ENABLE=0); it cannot go with algo sharp")
    if set_names:
        from topologies.presets import parse_overrides

        given = {k: v for k, v in raw.items() if k in set_names and k not in options}
        sets = parse_overrides(str(topo), given)
        for k, v in given.items():   # keep the user's spelling where it carries a unit ("400Gb/s", "2,1")
            if isinstance(v, str) and (isinstance(sets[k], list) or any(c.isalpha() for c in v)) \
                    and not isinstance(sets[k], (bool, int, str)):
                labels[k] = v
    for key in LIST_KEYS:  # a blank selector was dropped: the point ran without the failure asked for
        if any(not str(s).strip() for s in raw.get(key, ())):
            raise SpecError(f"{key}: an empty selector; give e.g. 'spine 3'" + ("=50%" if key == "degrade" else "")
                            + " (or 'none')")
    fail = tuple(str(s).strip() for s in raw.get("fail", ()) if str(s).strip() != "none")
    degrade = tuple(str(s).strip() for s in raw.get("degrade", ()) if str(s).strip() != "none")
    for d in degrade:  # its form and value are checked here, once, not as one stored error per point
        parse_degradation(d)
    p = Point(op=op, inputs=inputs, sets=sets, fail=fail, degrade=degrade, labels=labels)
    return Point(op=op, inputs=inputs, sets=sets, fail=fail, degrade=degrade, labels=labels,
                 point_id=_hash(p.identity()))
