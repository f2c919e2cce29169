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

from dataclasses import dataclass
from typing import Any, Callable

import networkx as nx

from topologies import catalog
from topologies.clos import fat_tree
from topologies.cluster import SUPERPODS, cluster, superpod
from topologies.errors import SpecError
from topologies.nvlink import nvl, nvlink_domain
from topologies.units import parse_bandwidth

__all__ = ["Param", "Preset", "presets", "preset", "build", "coerce"]


@dataclass(frozen=True)
class Param:
    """One override a preset accepts."""

    name: str
    kind: str  # int | float | bandwidth | str | bool | ratios
    default: Any
    help: str
    choices: tuple = ()


@dataclass(frozen=True)
class Preset:
    """A named topology and the overrides it takes."""

    name: str
    description: str
    params: tuple[Param, ...]
    builder: Callable[..., nx.MultiDiGraph]

    def param(self, key: str) -> Param:
        for p in self.params:
            if p.name == key:
                return p
        allowed = ", ".join(p.name for p in self.params)
        raise SpecError(f"--set {key}: unknown parameter for preset '{self.name}'; allowed: {allowed}")


def coerce(param: Param, value: Any) -> Any:
    """Convert a string (or TOML value) to the parameter's type, strictly."""
    field = param.name
    if value is None:
        return None
    try:
        if param.kind == "int":
            if isinstance(value, bool) or not (isinstance(value, int) or str(value).strip().lstrip("-").isdigit()):
                raise ValueError
            out = int(value)
        elif param.kind == "float":
            out = float(value)
        elif param.kind == "bandwidth":
            out = value if isinstance(value, float) and not isinstance(value, str) else parse_bandwidth(str(value), field=field)
        elif param.kind == "bool":
            if isinstance(value, bool):
                out = value
            elif str(value).lower() in ("1", "true", "yes", "on"):
                out = True
            elif str(value).lower() in ("0", "false", "no", "off"):
                out = False
            else:
                raise ValueError
        elif param.kind == "ratios":
            if isinstance(value, (list, tuple)):
                out = [float(x) for x in value]
            else:
                out = [float(x) for x in str(value).split(",")]
            out = out[0] if len(out) == 1 else out
        else:
            out = str(value)
    except SpecError:
        raise
    except (TypeError, ValueError):
        raise SpecError(f"{field}: {value!r} is not a valid {param.kind} ({param.help})") from None
    if param.choices and out not in param.choices:
        raise SpecError(f"{field}: {out!r} is not one of {', '.join(map(str, param.choices))}")
    return out


_SCALEOUT = tuple(sorted(catalog.SCALEOUT_FABRICS))

_CLUSTER_PARAMS = (
    Param("domains", "int", 1, "number of NVLink domains (nodes or racks)"),
    Param("scaleout", "str", None, "scale-out fabric joining the domains", ("none",) + _SCALEOUT),
    Param("nic", "str", None, "NIC model (default: the fabric's)"),
    Param("tiers", "int", None, "scale-out tiers (default: fewest that fit)", (2, 3)),
    Param("oversubscription", "float", 1.0, "leaf down:up ratio"),
    Param("planes", "int", 1, "network planes (NIC port split over planes)"),
    Param("spine_scope", "str", "all", "'all': rails meet at the spines; 'rail': per-rail spines", ("all", "rail")),
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


def _single_domain(gpu_name: str, n: int | None, aggregate: bool) -> nx.MultiDiGraph:
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
            _CLUSTER_PARAMS + (Param("gpus_per_domain", "int", 72, "GPUs per rack (36 = NVL36)"),),
            _domain_builder(g, 72))
    out["nvl"] = Preset("nvl", "parametric NVLink5 domain nvl(N): N GPUs x 18 switch chips",
                        (Param("n", "int", 72, "GPUs in the domain (<= 72)"),
                         Param("gpu", "str", "GB200", "Blackwell GPU model"),
                         Param("aggregate", "bool", False, "merge parallel cables")), _nvl)
    out["fat-tree"] = Preset(
        "fat-tree", "fat-tree of single-GPU hosts, any radix, tiers and oversubscription",
        (Param("hosts", "int", 1024, "number of hosts"), Param("radix", "int", 64, "ports per switch"),
         Param("tiers", "int", None, "1, 2 or 3 (default: fewest that fit)", (1, 2, 3)),
         Param("oversubscription", "ratios", 1.0, "down:up ratio, or 'r1,r2' per tier"),
         Param("link", "bandwidth", 50e9, "port rate, e.g. 400Gb/s"),
         Param("planes", "int", 1, "independent fabric planes"),
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
    except KeyError:
        raise SpecError(f"topology: {name!r} is neither a preset nor a .toml/.json/.graphml file; presets: "
                        f"{', '.join(_PRESETS)}") from None


def build(name: str, overrides: dict[str, Any] | None = None) -> nx.MultiDiGraph:
    """Build preset ``name`` with ``overrides`` (strings are converted strictly)."""
    p = preset(name)
    kwargs = {}
    for key, value in (overrides or {}).items():
        kwargs[key] = coerce(p.param(key), value)
    G = p.builder(**kwargs)
    G.graph["preset"] = name
    return G
