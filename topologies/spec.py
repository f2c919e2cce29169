"""Topology spec files (TOML): domains, scale-out, link speeds and failures.

A spec describes a topology in one of three ways, plus optional failures:

.. code-block:: toml

    name = "four-gb300-racks"

    # 1. a preset with overrides
    preset = "gb300-nvl72"
    [set]
    domains = 4
    scaleout = "quantum-x800"

    # 2. or NVLink domains and a scale-out fabric
    # [domain]
    # gpu = "GB300"        # catalog GPU
    # gpus = 72            # GPUs per domain (optional)
    # count = 4            # number of domains
    # [scaleout]
    # fabric = "quantum-x800"   # quantum-2 | quantum-x800 | spectrum-x
    # nic = "ConnectX-8"        # optional
    # tiers = 2                 # optional
    # oversubscription = 1.0
    # planes = 1
    # spine_scope = "all"       # all | rail

    # 3. or a fat-tree of single-GPU hosts
    # [fat_tree]
    # hosts = 1024
    # radix = 48
    # link = "400Gb/s"
    # oversubscription = 2

    [[failures]]
    select = "spine 1"            # see fabric.failures for selectors

    [[degradations]]
    select = "leaf 0 spine 0"
    capacity = "200Gb/s"          # or: fraction = 0.5

Quantities with units are strings (``"400Gb/s"``); bare numbers where a unit
is needed are rejected. Failures are stored on the graph
(``G.graph["failures"]``, ``G.graph["degradations"]``) and applied when the
fabric is compiled for analysis.

Examples
--------
>>> G = loads('preset = "hgx-h100"')
>>> G.graph["name"]
'hgx-h100'
"""

from __future__ import annotations

import tomllib
from pathlib import Path

import networkx as nx

from topologies.errors import SpecError
from topologies.presets import build, coerce, preset

__all__ = ["load", "loads", "load_topology"]

_TOP = {"name", "preset", "set", "domain", "scaleout", "fat_tree", "failures", "degradations"}
_DOMAIN = {"gpu": "gpu", "gpus": "gpus_per_domain", "count": "domains"}
_SCALEOUT = {"fabric": "scaleout", "nic": "nic", "tiers": "tiers", "oversubscription": "oversubscription",
             "planes": "planes", "spine_scope": "spine_scope", "aggregate": "aggregate"}


def _check_keys(table: dict, allowed, where: str) -> None:
    for key in table:
        if key not in allowed:
            raise SpecError(f"{where}.{key}: unknown key; allowed: {', '.join(sorted(allowed))}")


def _table(doc: dict, key: str) -> dict:
    value = doc.get(key, {})
    if not isinstance(value, dict):
        raise SpecError(f"{key}: must be a table ([{key}])")
    return value


def loads(text: str, *, source: str = "<spec>") -> nx.MultiDiGraph:
    """Build the topology described by TOML ``text``."""
    try:
        doc = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise SpecError(f"{source}: not valid TOML: {exc}") from None
    _check_keys(doc, _TOP, "spec")
    ways = [k for k in ("preset", "domain", "fat_tree") if k in doc]
    if len(ways) != 1:
        raise SpecError(f"spec: give exactly one of 'preset', '[domain]' or '[fat_tree]' (got {ways or 'none'})")
    way = ways[0]
    stray = {"preset": ("scaleout",), "domain": ("set",), "fat_tree": ("set", "scaleout")}[way]
    for key in stray:
        if key in doc:
            raise SpecError(f"spec.{key}: does not apply with '{way}'; use "
                            + ("[set] overrides with a preset" if way == "preset" else
                               "[scaleout] with [domain]" if way == "domain" else "keys inside [fat_tree]"))
    if way == "preset":
        if not isinstance(doc["preset"], str):
            raise SpecError("preset: must be a preset name string")
        G = build(doc["preset"], _table(doc, "set"))
    elif way == "domain":
        dom, so = _table(doc, "domain"), _table(doc, "scaleout")
        _check_keys(dom, _DOMAIN, "domain")
        _check_keys(so, _SCALEOUT, "scaleout")
        if "gpu" not in dom:
            raise SpecError("domain.gpu: required (a catalog GPU such as 'H100' or 'GB300')")
        from topologies import catalog
        gpu = catalog.gpu(dom["gpu"])
        supported = ("H100", "H200", "H800", "B200", "B300", "GB200", "GB300")
        if gpu.name not in supported:
            raise SpecError(f"domain.gpu: {gpu.name} domains are not modelled; use one of {', '.join(supported)}")
        name = f"{gpu.name.lower()}-nvl72" if gpu.domain_gpus == 72 else f"hgx-{gpu.name.lower()}"
        overrides = {_DOMAIN[k]: v for k, v in dom.items() if k != "gpu"}
        overrides.update({_SCALEOUT[k]: v for k, v in so.items()})
        if "gpus_per_domain" in overrides and gpu.domain_gpus != 72:
            raise SpecError(f"domain.gpus: only rack-scale (NVL72) domains take a GPU count; {gpu.name} boards have 8")
        G = build(name, overrides)
    else:
        ft = _table(doc, "fat_tree")
        p = preset("fat-tree")
        allowed = {x.name for x in p.params}
        _check_keys(ft, allowed, "fat_tree")
        for key in ("link",):
            if key in ft and not isinstance(ft[key], str):
                raise SpecError(f"fat_tree.{key}: write the unit, e.g. \"400Gb/s\" (got {ft[key]!r})")
        G = build("fat-tree", {k: coerce(p.param(k), v) for k, v in ft.items()})
    if "name" in doc:
        G.graph["name"] = str(doc["name"])
    failures = doc.get("failures", [])
    degradations = doc.get("degradations", [])
    if not isinstance(failures, list) or not isinstance(degradations, list):
        raise SpecError("failures/degradations: must be arrays of tables ([[failures]])")
    fails = []
    for i, f in enumerate(failures):
        if not isinstance(f, dict) or set(f) != {"select"} or not isinstance(f["select"], str):
            raise SpecError(f"failures[{i}]: expected {{select = \"SELECTOR\"}}, got {f!r}")
        fails.append(f["select"])
    degs = []
    for i, d in enumerate(degradations):
        if not isinstance(d, dict) or "select" not in d or len(set(d) & {"capacity", "fraction"}) != 1 \
                or set(d) - {"select", "capacity", "fraction"}:
            raise SpecError(f"degradations[{i}]: expected {{select = \"SELECTOR\", capacity = \"200Gb/s\"}} "
                            f"or {{select = ..., fraction = 0.5}}, got {d!r}")
        if "capacity" in d:
            if not isinstance(d["capacity"], str):
                raise SpecError(f"degradations[{i}].capacity: write the unit, e.g. \"200Gb/s\"")
            degs.append(f"{d['select']}={d['capacity']}")
        else:
            frac = d["fraction"]
            if isinstance(frac, bool) or not isinstance(frac, (int, float)) or not 0 < frac < 1:
                raise SpecError(f"degradations[{i}].fraction: {frac!r} must be a number between 0 and 1")
            degs.append(f"{d['select']}={frac}")
    G.graph["failures"] = fails
    G.graph["degradations"] = degs
    return G


def load(path: str | Path) -> nx.MultiDiGraph:
    """Build the topology described by the TOML spec file ``path``."""
    p = Path(path)
    try:
        text = p.read_text()
    except OSError as exc:
        raise SpecError(f"{path}: cannot read spec file ({exc.strerror})") from None
    return loads(text, source=str(path))


def load_topology(topo: str, overrides: dict | None = None) -> nx.MultiDiGraph:
    """Build ``topo``: a preset name, a ``.toml`` spec, or a ``.json``/``.graphml`` graph file.

    ``overrides`` (``--set key=value``) apply to presets only.
    """
    from topologies.export import read

    suffix = Path(topo).suffix.lower()
    if suffix in (".toml", ".json", ".graphml"):
        if overrides:
            raise SpecError(f"--set: overrides apply to presets, not to the file {topo!r}; edit the file instead")
        if not Path(topo).exists():
            raise SpecError(f"topology: file {topo!r} does not exist")
        return load(topo) if suffix == ".toml" else read(topo)
    return build(topo, overrides or {})
