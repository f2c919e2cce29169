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

import unicodedata
from pathlib import Path

from topologies.errors import SpecError, brief
from topologies.fabricgraph import FabricGraph
from topologies.files import parse_toml, read_text
from topologies.presets import build, coerce, parse_overrides, preset

__all__ = ["load", "loads", "load_topology", "resolve", "estimate_topology", "MAX_NAME_CHARS"]

_TOP = {"name", "preset", "set", "domain", "scaleout", "fat_tree", "failures", "degradations"}
_DOMAIN = {"gpu": "gpu", "gpus": "gpus_per_domain", "count": "domains"}
_SCALEOUT = {"fabric": "scaleout", "nic": "nic", "tiers": "tiers", "oversubscription": "oversubscription",
             "planes": "planes", "spine_scope": "spine_scope", "aggregate": "aggregate"}
#: Longest topology name accepted from a spec file.
MAX_NAME_CHARS = 200
#: Most failure / degradation entries in one spec (fabric.failures.MAX_SELECTORS is the same bound).
MAX_ENTRIES = 1000
_SUPPORTED = ("H100", "H200", "H800", "B200", "B300", "GB200", "GB300")


def _check_keys(table: dict, allowed, where: str) -> None:
    for key in table:
        if key not in allowed:
            raise SpecError(f"{where}.{brief(key)[1:-1]}: unknown key; allowed: {', '.join(sorted(allowed))}")


def _table(doc: dict, key: str) -> dict:
    value = doc.get(key, {})
    if not isinstance(value, dict):
        raise SpecError(f"{key}: must be a table ([{key}]), got {brief(value)}")
    return value


def _text(value, field: str, *, limit: int = MAX_NAME_CHARS) -> str:
    """A name from a spec: a string of printable characters (no control or bidi-format characters)."""
    if not isinstance(value, str):
        raise SpecError(f"{field}: must be a string, got {brief(value)}")
    if not value.strip() or len(value) > limit:
        raise SpecError(f"{field}: must be 1 to {limit} characters, got {brief(value)}")
    bad = [c for c in value if unicodedata.category(c) in ("Cc", "Cf", "Cs", "Co", "Cn", "Zl", "Zp")]
    if bad:
        raise SpecError(f"{field}: {brief(value)} contains control or formatting character U+{ord(bad[0]):04X}")
    return value


def resolve(doc: dict, *, source: str = "<spec>") -> tuple[str, dict]:
    """The (preset name, converted overrides) a parsed spec ``doc`` describes (nothing is built)."""
    if not isinstance(doc, dict):
        raise SpecError(f"{source}: a spec is a TOML table")
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
            raise SpecError(f"preset: must be a preset name string, got {brief(doc['preset'])}")
        return doc["preset"], parse_overrides(doc["preset"], _table(doc, "set"))
    if way == "domain":
        dom, so = _table(doc, "domain"), _table(doc, "scaleout")
        _check_keys(dom, _DOMAIN, "domain")
        _check_keys(so, _SCALEOUT, "scaleout")
        if "gpu" not in dom:
            raise SpecError("domain.gpu: required (a catalog GPU such as 'H100' or 'GB300')")
        if not isinstance(dom["gpu"], str):
            raise SpecError(f"domain.gpu: must be a GPU name string, got {brief(dom['gpu'])}")
        from topologies import catalog
        gpu = catalog.gpu(dom["gpu"])
        if gpu.name not in _SUPPORTED:
            raise SpecError(f"domain.gpu: {gpu.name} domains are not modelled; use one of {', '.join(_SUPPORTED)}")
        name = f"{gpu.name.lower()}-nvl72" if gpu.domain_gpus == 72 else f"hgx-{gpu.name.lower()}"
        if "gpus" in dom and gpu.domain_gpus != 72:
            raise SpecError(f"domain.gpus: only rack-scale (NVL72) domains take a GPU count; {gpu.name} boards have 8")
        if so and "fabric" not in so:
            raise SpecError("scaleout.fabric: required when [scaleout] is given (quantum-2, quantum-x800, spectrum-x)")
        overrides = {_DOMAIN[k]: v for k, v in dom.items() if k != "gpu"}
        overrides.update({_SCALEOUT[k]: v for k, v in so.items()})
        return name, parse_overrides(name, overrides)
    ft = _table(doc, "fat_tree")
    p = preset("fat-tree")
    _check_keys(ft, {x.name for x in p.params}, "fat_tree")
    if "link" in ft and not isinstance(ft["link"], str):
        raise SpecError(f"fat_tree.link: write the unit, e.g. \"400Gb/s\" (got {brief(ft['link'])})")
    return "fat-tree", {k: coerce(p.param(k), v) for k, v in ft.items()}


def _failures(doc: dict) -> tuple[list[str], list[str]]:
    failures = doc.get("failures", [])
    degradations = doc.get("degradations", [])
    if not isinstance(failures, list) or not isinstance(degradations, list):
        raise SpecError("failures/degradations: must be arrays of tables ([[failures]])")
    if len(failures) + len(degradations) > MAX_ENTRIES:
        raise SpecError(f"failures/degradations: {len(failures) + len(degradations):,} entries; at most {MAX_ENTRIES:,}")
    fails = []
    for i, f in enumerate(failures):
        if not isinstance(f, dict) or set(f) != {"select"} or not isinstance(f["select"], str):
            raise SpecError(f"failures[{i}]: expected {{select = \"SELECTOR\"}}, got {brief(f)}")
        fails.append(_text(f["select"], f"failures[{i}].select"))
    degs = []
    for i, d in enumerate(degradations):
        if not isinstance(d, dict) or "select" not in d or len(set(d) & {"capacity", "fraction"}) != 1 \
                or set(d) - {"select", "capacity", "fraction"} or not isinstance(d["select"], str):
            raise SpecError(f"degradations[{i}]: expected {{select = \"SELECTOR\", capacity = \"200Gb/s\"}} "
                            f"or {{select = ..., fraction = 0.5}}, got {brief(d)}")
        sel = _text(d["select"], f"degradations[{i}].select")
        if "=" in sel:
            raise SpecError(f"degradations[{i}].select: {brief(sel)} must not contain '='")
        if "capacity" in d:
            if not isinstance(d["capacity"], str):
                raise SpecError(f"degradations[{i}].capacity: write the unit, e.g. \"200Gb/s\" "
                                f"(got {brief(d['capacity'])})")
            degs.append(f"{sel}={_text(d['capacity'], f'degradations[{i}].capacity')}")
        else:
            frac = d["fraction"]
            if isinstance(frac, bool) or not isinstance(frac, (int, float)) or not 0 < frac < 1:
                raise SpecError(f"degradations[{i}].fraction: {brief(frac)} must be a number between 0 and 1")
            degs.append(f"{sel}={frac!r}")
    return fails, degs


def loads(text: str, *, source: str = "<spec>", memory_limit=None) -> FabricGraph:
    """Build the topology described by TOML ``text``."""
    doc = parse_toml(text, source=source)
    name, overrides = resolve(doc, source=source)
    title = _text(doc["name"], "name") if "name" in doc else None
    if title is not None and (title != name or overrides):
        from topologies.presets import presets

        if title in {p.name for p in presets()}:  # every result names the fabric: not another one's name
            raise SpecError(f"name: {title!r} is a preset's name, and this spec builds another fabric "
                            f"({name}{' with overrides' if overrides else ''}); give it a name of its own")
    fails, degs = _failures(doc)
    G = build(name, overrides, memory_limit=memory_limit)
    if title is not None:
        G.graph["name"] = title
    G.graph["failures"] = fails
    G.graph["degradations"] = degs
    return G


def load(path: str | Path, *, memory_limit=None) -> FabricGraph:
    """Build the topology described by the TOML spec file ``path`` (a regular file, at most 4 MiB)."""
    return loads(read_text(path, what="spec file"), source=brief(str(path)), memory_limit=memory_limit)


_FILE_SUFFIXES = (".toml", ".json", ".graphml")


def _check_topo(topo) -> str:
    if not isinstance(topo, str) or not topo.strip():
        raise SpecError(f"topology: {brief(topo)} is empty; give a preset name (fabric-emu topo list) or a "
                        f".toml/.json/.graphml file")
    return topo


def load_topology(topo: str, overrides: dict | None = None, *, memory_limit=None):
    """Build ``topo``: a preset name, a ``.toml`` spec, or a ``.json``/``.graphml`` graph file.

    Presets and specs give a :class:`~topologies.fabricgraph.FabricGraph`, graph files a
    :class:`networkx.MultiDiGraph`.

    ``overrides`` (``--set key=value``) apply to presets only.
    """
    suffix = Path(_check_topo(topo)).suffix.lower()
    if suffix in _FILE_SUFFIXES:
        if overrides:
            raise SpecError(f"--set: overrides apply to presets, not to the file {brief(topo)}; edit the file instead")
        if suffix == ".toml":
            return load(topo, memory_limit=memory_limit)
        from topologies.export import read

        return read(topo)
    return build(topo, overrides or {}, memory_limit=memory_limit)


def estimate_topology(topo: str, overrides: dict | None = None):
    """:class:`topologies.sizing.BuildEstimate` of ``topo`` without building it (None for graph files)."""
    from topologies.sizing import estimate_build

    suffix = Path(_check_topo(topo)).suffix.lower()
    if suffix in _FILE_SUFFIXES and overrides:
        raise SpecError(f"--set: overrides apply to presets, not to the file {brief(topo)}; edit the file instead")
    if suffix in (".json", ".graphml"):
        return None
    if suffix == ".toml":
        name, kwargs = resolve(parse_toml(read_text(topo, what="spec file"), source=brief(topo)), source=brief(topo))
    else:
        name, kwargs = topo, parse_overrides(topo, overrides or {})
    return estimate_build(name, kwargs)
