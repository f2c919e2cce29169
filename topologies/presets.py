"""Named topology presets with typed overrides (``--set key=value``).

Examples
--------
>>> G = build("gb300-nvl72", {"domains": "4", "scaleout": "quantum-x800"})
>>> sum(1 for _, d in G.nodes(data=True) if d["kind"] == "gpu")
288
>>> [p.name for p in presets()][:3]
['hgx-h100', 'hgx-h200', 'hgx-h800']
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from typing import Any, Callable

from topologies import catalog
from topologies.clos import fat_tree
from topologies.cluster import SUPERPODS, cluster, superpod
from topologies.errors import SpecError, brief
from topologies.fabricgraph import FabricGraph
from topologies.limits import LINK_RATE_BOUNDS_BPS
from topologies.nvlink import nvl, nvlink_domain
from topologies.units import parse_bandwidth

#: the noun of each parameter kind in messages ("ratios" names a list of ratios)
_KIND_NOUNS = {"ratios": "ratio list"}

__all__ = ["Param", "Preset", "presets", "preset", "build", "coerce", "parse_overrides", "MAX_RADIX", "MAX_PLANES"]


@dataclass(frozen=True)
class Param:
    """One override a preset accepts."""

    name: str
    kind: str  # int | float | bandwidth | str | bool | ratios
    default: Any
    help: str
    choices: tuple = ()
    #: inclusive (low, high) for int/float/ratios values; None = unbounded on that side
    bounds: tuple = (None, None)
    #: name of a parameter that must be set (and not "none") for this one to apply
    requires: str = ""


@dataclass(frozen=True)
class Preset:
    """A named topology and the overrides it takes."""

    name: str
    description: str
    params: tuple[Param, ...]
    builder: Callable[..., FabricGraph]

    def param(self, key: str) -> Param:
        for p in self.params:
            if p.name == key:
                return p
        allowed = ", ".join(p.name for p in self.params)
        shown = key if isinstance(key, str) and key.isidentifier() else brief(key)
        raise SpecError(f"--set {shown}: unknown parameter for preset '{self.name}'; allowed: {allowed}")


_INT_RE = re.compile(r"[+-]?[0-9]+")
_FLOAT_RE = re.compile(r"[+-]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)(?:[eE][+-]?[0-9]+)?")


def _int(value: Any) -> int:
    if isinstance(value, bool):
        raise ValueError
    if isinstance(value, int):
        return value
    if isinstance(value, str) and _INT_RE.fullmatch(value.strip()):
        if len(value.strip()) > 100:
            raise SpecError(f"{len(value.strip())}-digit integer is too large")
        return int(value.strip())
    raise ValueError


def _float(value: Any) -> float:
    if isinstance(value, bool):
        raise ValueError
    if isinstance(value, (int, float)):
        out = float(value)
    elif isinstance(value, str) and len(value) <= 40 and _FLOAT_RE.fullmatch(value.strip()):
        out = float(value.strip())
    else:
        raise ValueError
    if not math.isfinite(out):
        raise ValueError
    return out


def _check_bounds(param: Param, value: float) -> None:
    lo, hi = param.bounds
    if (lo is not None and value < lo) or (hi is not None and value > hi):
        span = (f"between {lo:g} and {hi:g}" if lo is not None and hi is not None else
                f">= {lo:g}" if lo is not None else f"<= {hi:g}")
        raise SpecError(f"{param.name}: {brief(value)} must be {span} ({param.help})")


def coerce(param: Param, value: Any) -> Any:
    """Convert a string (or TOML value) to the parameter's type, strictly.

    Integers are ASCII digits only (no ``'²'``, ``'1_000'`` or ``'3.0'``), floats
    are finite decimal numbers, booleans are true/false words, and values are
    checked against the parameter's bounds and choices.

    Examples
    --------
    >>> p = preset("fat-tree")
    >>> coerce(p.param("hosts"), "64"), coerce(p.param("oversubscription"), "2,1")
    (64, [2.0, 1.0])
    >>> coerce(p.param("hosts"), "\u00b2")
    Traceback (most recent call last):
    ...
    topologies.errors.SpecError: hosts: '²' is not a valid int (number of hosts)
    """
    field = param.name
    if value is None:
        return None
    try:
        if param.kind == "int":
            out = _int(value)
        elif param.kind == "float":
            out = _float(value)
        elif param.kind == "bandwidth":
            if isinstance(value, float) and math.isfinite(value) and value > 0:
                out = value
            elif isinstance(value, str):
                out = parse_bandwidth(value, field=field)
            else:
                raise ValueError
        elif param.kind == "bool":
            if isinstance(value, bool):
                out = value
            elif isinstance(value, str) and value.strip().lower() in ("1", "true", "yes", "on"):
                out = True
            elif isinstance(value, str) and value.strip().lower() in ("0", "false", "no", "off"):
                out = False
            else:
                raise ValueError
        elif param.kind == "ratios":
            items = value if isinstance(value, (list, tuple)) else str(value).split(",") \
                if isinstance(value, str) else [value]
            out = [_float(x.strip() if isinstance(x, str) else x) for x in items]
            if not 1 <= len(out) <= 2:
                raise SpecError(f"{field}: {brief(value)} gives {len(out)} ratios; give one (leaf) or two "
                                f"(leaf, spine) ({param.help})")
            out = out[0] if len(out) == 1 else out
        else:
            if not isinstance(value, str) or not value.strip():
                raise ValueError
            out = value.strip()
    except SpecError as exc:
        if str(exc).endswith("is too large"):
            raise SpecError(f"{field}: {exc}") from None
        raise
    except (TypeError, ValueError, OverflowError):
        kind = _KIND_NOUNS.get(param.kind, param.kind)
        raise SpecError(f"{field}: {brief(value)} is not a valid {kind} ({param.help})") from None
    if param.kind in ("int", "float"):
        _check_bounds(param, out)
    elif param.kind == "bandwidth":
        lo, hi = param.bounds
        if (lo is not None and out < lo) or (hi is not None and out > hi):
            raise SpecError(f"{field}: {brief(value)} must be between {lo * 8 / 1e9:g} Gb/s and {hi * 8 / 1e12:g} Tb/s "
                            f"({param.help})")
    elif param.kind == "ratios":
        for x in out if isinstance(out, list) else [out]:
            _check_bounds(param, x)
    if param.choices and out not in param.choices:
        raise SpecError(f"{field}: {brief(out)} is not one of {', '.join(map(str, param.choices))}")
    return out


from topologies.limits import MAX_PLANES, MAX_RADIX  # noqa: E402  (moved; re-exported)

_SCALEOUT = tuple(sorted(catalog.SCALEOUT_FABRICS))

_CLUSTER_PARAMS = (
    Param("domains", "int", 1, "number of NVLink domains (nodes or racks)", bounds=(1, None)),
    Param("scaleout", "str", None, "scale-out fabric joining the domains", ("none",) + _SCALEOUT),
    Param("nic", "str", None, "NIC model (default: the fabric's)", requires="scaleout"),
    Param("tiers", "int", None, "scale-out tiers (default: fewest that fit)", (2, 3), requires="scaleout"),
    Param("oversubscription", "float", 1.0, "leaf down:up ratio", bounds=(1, MAX_RADIX), requires="scaleout"),
    Param("planes", "int", 1, "network planes (NIC port split over planes)", bounds=(1, MAX_PLANES),
          requires="scaleout"),
    Param("spine_scope", "str", "all", "'all': rails meet at the spines; 'rail': per-rail spines", ("all", "rail"),
          requires="scaleout"),
    Param("aggregate", "bool", False, "merge parallel cables into single edges"),
)


def _domain_builder(gpu_name: str, default_gpus: int | None = None):
    def build_domain(domains=1, scaleout=None, nic=None, tiers=None, oversubscription=1.0, planes=1,
                     spine_scope="all", aggregate=False, gpus_per_domain=default_gpus):
        if scaleout in (None, "none"):
            if domains != 1:
                raise SpecError(f"scaleout: needed to join {domains} domains; one of {', '.join(_SCALEOUT)}")
            return _single_domain(gpu_name, gpus_per_domain, aggregate)
        return cluster(gpu_name, domains, scaleout, gpus_per_domain=gpus_per_domain, nic=nic, tiers=tiers,
                       oversubscription=oversubscription, planes=planes, spine_scope=spine_scope,
                       aggregate=aggregate)
    return build_domain


def _single_domain(gpu_name: str, n: int | None, aggregate: bool) -> FabricGraph:
    gpu = catalog.gpu(gpu_name)
    if n is not None and n < 2:
        raise SpecError(f"gpus_per_domain: {n} must be >= 2")
    if gpu.domain_gpus == 72 or (n and n != gpu.domain_gpus):
        return nvl(n or 72, gpu.name, aggregate=aggregate)
    return nvlink_domain(gpu.name, aggregate=aggregate, name=f"hgx-{gpu.name.lower()}")


def _fat_tree(hosts=1024, radix=64, tiers=None, oversubscription=1.0, link=50e9, planes=1, switch=None, nic=None,
              aggregate=False):
    return fat_tree(hosts, radix, tiers=tiers, oversubscription=oversubscription, link_Bps=link, planes=planes,
                    switch=switch, nic=nic, aggregate=aggregate)


def _nvl(n=72, gpu="GB200", aggregate=False):
    return nvl(n, gpu, aggregate=aggregate)


def _superpod_builder(kind: str):
    def build_superpod(sus=SUPERPODS[kind]["sus"][0], aggregate=False):
        return superpod(kind, sus, aggregate=aggregate)
    return build_superpod


def _make() -> dict[str, Preset]:
    out: dict[str, Preset] = {}
    for g in ("H100", "H200", "H800", "B200", "B300", "A100", "H20"):
        spec = catalog.gpu(g)
        out[f"hgx-{g.lower()}"] = Preset(
            f"hgx-{g.lower()}", f"HGX {g}: 8 GPUs, {spec.nvswitch_chips} NVSwitch chips, "
            f"{spec.nvlink_Bps / 1e9:.0f} GB/s NVLink per GPU per direction", _CLUSTER_PARAMS, _domain_builder(g))
    for g in ("GB200", "GB300"):
        out[f"{g.lower()}-nvl72"] = Preset(
            f"{g.lower()}-nvl72", f"{g} NVL72 rack: 72 GPUs, 18 NVLink5 switch chips, 900 GB/s per GPU per direction",
            _CLUSTER_PARAMS + (Param("gpus_per_domain", "int", 72, "GPUs per rack (36 = NVL36)", bounds=(2, 72)),),
            _domain_builder(g, 72))
    out["nvl"] = Preset("nvl", "parametric NVLink5 domain nvl(N): N GPUs x 18 switch chips",
                        (Param("n", "int", 72, "GPUs in the domain (<= 72)", bounds=(2, 72)),
                         Param("gpu", "str", "GB200", "Blackwell GPU model"),
                         Param("aggregate", "bool", False, "merge parallel cables")), _nvl)
    out["fat-tree"] = Preset(
        "fat-tree", "fat-tree of single-GPU hosts, any radix, tiers and oversubscription",
        (Param("hosts", "int", 1024, "number of hosts", bounds=(2, None)),
         Param("radix", "int", 64, "ports per switch", bounds=(2, MAX_RADIX)),
         Param("tiers", "int", None, "1, 2 or 3 (default: fewest that fit)", (1, 2, 3)),
         Param("oversubscription", "ratios", 1.0, "down:up ratio, or 'r1,r2' per tier", bounds=(1, MAX_RADIX)),
         Param("link", "bandwidth", 50e9, "port rate, e.g. 400Gb/s", bounds=LINK_RATE_BOUNDS_BPS),
         Param("planes", "int", 1, "independent fabric planes", bounds=(1, MAX_PLANES)),
         Param("switch", "str", None, "catalog switch model (latency, SHARP)"),
         Param("nic", "str", None, "catalog NIC model (host interface)"),
         Param("aggregate", "bool", False, "merge parallel cables")), _fat_tree)
    for kind, ref in SUPERPODS.items():
        out[f"superpod-{kind}"] = Preset(
            f"superpod-{kind}", f"DGX SuperPOD {kind.upper()} reference layout ({ref['source'].split(']')[0]}])",
            (Param("sus", "int", ref["sus"][0], f"scalable units, one of {list(ref['sus'])}", ref["sus"]),
             Param("aggregate", "bool", False, "merge parallel cables")), _superpod_builder(kind))
    return out


_PRESETS = _make()


def presets() -> list[Preset]:
    """All presets, in a stable order."""
    return list(_PRESETS.values())


def preset(name: str) -> Preset:
    """Look up a preset by name (SpecError listing the known names otherwise)."""
    try:
        return _PRESETS[name]
    except (KeyError, TypeError):
        raise SpecError(f"topology: {brief(name)} is neither a preset nor a .toml/.json/.graphml file; presets: "
                        f"{', '.join(_PRESETS)}") from None


def parse_overrides(name: str, overrides: dict[str, Any] | None = None) -> dict[str, Any]:
    """Preset ``name``'s overrides converted and checked (types, bounds, choices, what applies).

    Examples
    --------
    >>> parse_overrides("hgx-h100", {"domains": "2", "scaleout": "quantum-2"})
    {'domains': 2, 'scaleout': 'quantum-2'}
    >>> parse_overrides("hgx-h100", {"tiers": "3"})
    Traceback (most recent call last):
    ...
    topologies.errors.SpecError: --set tiers: applies only with --set scaleout=... (one of none, aws-efa-v1, aws-efa-v2, aws-efa-v3, aws-efa-v4, gcp-rdma, gcp-tcpxo, quantum-2, quantum-2-nosharp, quantum-hdr, quantum-x800, quantum-x800-nosharp, spectrum-x); without a scale-out fabric it would be ignored
    """
    p = preset(name)
    if overrides is not None and not isinstance(overrides, dict):
        raise SpecError(f"overrides: expected a table of parameter = value, got {brief(overrides)}")
    kwargs = {}
    for key, value in (overrides or {}).items():
        if not isinstance(key, str):
            raise SpecError(f"overrides: parameter names are strings, got {brief(key)}")
        kwargs[key] = coerce(p.param(key), value)
    for key in kwargs:
        need = p.param(key).requires
        if need and kwargs.get(need) in (None, "none"):
            choices = ", ".join(map(str, p.param(need).choices))
            raise SpecError(f"--set {key}: applies only with --set {need}=... (one of {choices}); without a "
                            f"scale-out fabric it would be ignored")
    return kwargs


def build(name: str, overrides: dict[str, Any] | None = None, *, memory_limit=None) -> FabricGraph:
    """Build preset ``name`` with ``overrides`` (strings are converted strictly).

    The size of the graph is estimated arithmetically first
    (:func:`topologies.sizing.estimate_build`), and a build over the memory
    limit (``memory_limit``, else ``$FABRIC_EMU_MEMORY_LIMIT``, else 8 GiB) is
    refused before anything is allocated.
    """
    from topologies.sizing import check_build

    kwargs = parse_overrides(name, overrides)
    check_build(name, kwargs, memory_limit=memory_limit)
    G = preset(name).builder(**kwargs)
    G.graph["preset"] = name
    return G
