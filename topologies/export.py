"""Write fabric graphs as GraphML or node-link JSON, and read them back.

Writes are atomic and replace only regular files (:func:`topologies.files.write_atomic`):
the file appears complete or not at all. Reads take regular files up to
``$FABRIC_EMU_MAX_GRAPH`` bytes and check the graph before anything uses it:
at least one GPU and one link, known node kinds and roles, no self-loops,
finite positive capacities and finite non-negative latencies.

Examples
--------
>>> import tempfile, os
>>> from topologies.nvlink import hgx
>>> d = tempfile.mkdtemp()
>>> write(hgx("H100"), os.path.join(d, "h.json"), "json")
>>> read(os.path.join(d, "h.json")).number_of_edges()
288
"""

from __future__ import annotations

import io
import json
import math
from pathlib import Path

from topologies.errors import SpecError, brief
from topologies.fabricgraph import as_networkx
from topologies.files import check_output_name, parse_json, read_bytes, write_atomic
from topologies.graph import ROLES
from topologies.limits import LINK_RATE_BOUNDS_BPS, MAX_GRAPH_ENV, max_graph_bytes

__all__ = ["FORMATS", "dumps", "write", "read", "to_json_dict", "check_graph"]

FORMATS = ("graphml", "json")


def to_json_dict(G) -> dict:
    """Node-link dict (networkx's schema, edges under ``links``) with JSON-safe graph attributes."""
    import networkx as nx

    G = as_networkx(G)
    data = nx.node_link_data(G, edges="links")
    data["graph"] = json.loads(json.dumps(G.graph, default=str))
    return data


def _graphml_ready(G):
    H = as_networkx(G).copy()
    # GraphML holds scalars only: keep graph-level dicts/lists as JSON strings
    H.graph = {k: (json.dumps(v, default=str) if isinstance(v, (dict, list, tuple)) else v)
               for k, v in G.graph.items()}
    return H


def dumps(G, fmt: str) -> bytes:
    """``G`` serialised as ``fmt`` (``graphml`` or ``json``): the bytes :func:`write` puts in the file."""
    if fmt not in FORMATS:
        raise SpecError(f"format: {brief(fmt)} is not one of {', '.join(FORMATS)}")
    if fmt == "json":
        return json.dumps(to_json_dict(G), allow_nan=False).encode()
    import networkx as nx

    buf = io.BytesIO()
    nx.write_graphml(_graphml_ready(G), buf)
    return buf.getvalue()


def write(G, path: str | Path, fmt: str) -> None:
    """Write ``G`` to ``path`` as ``fmt`` (``graphml`` or ``json``), atomically (see the module doc).

    A file name whose suffix names another format (``.json``, ``.graphml``/``.xml``, ``.toml``) is refused.
    """
    if fmt not in FORMATS:
        raise SpecError(f"format: {brief(fmt)} is not one of {', '.join(FORMATS)}")
    other = _SUFFIX_FORMAT.get(Path(str(path)).suffix.lower())
    check_output_name(path, tuple(k for k, v in _SUFFIX_FORMAT.items() if v == fmt), what="output",
                      kind=f"--format {fmt}", hint=f" or give --format {other}" if other in FORMATS else "")

    def writer(fh) -> None:
        fh.write(dumps(G, fmt))
    write_atomic(path, writer=writer, what="output")


#: File suffixes of the export formats (any other known suffix -- a .toml spec, a sweep database -- is
#: refused by topologies.files.check_output_name: JSON over a spec, or in a .graphml file that `topo show`
#: then cannot read).
_SUFFIX_FORMAT = {".json": "json", ".graphml": "graphml", ".xml": "graphml"}

_KIND_OF_ROLE = {"gpu": "gpu", "nic": "nic", "nvswitch": "switch", "leaf": "switch", "spine": "switch", "core": "switch"}


def _number(d: dict, key: str):
    v = d.get(key)
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        return None
    return float(v)


def check_graph(G, *, source: str = "graph") -> None:
    """Raise SpecError unless ``G`` is a usable fabric graph (see the module doc).

    Examples
    --------
    >>> from topologies.nvlink import hgx
    >>> check_graph(hgx("H100"))
    >>> G = hgx("H100"); _ = G.add_edge("d0/gpu0", "d0/gpu0", capacity_Bps=1.0, latency_s=0.0)
    >>> try:
    ...     check_graph(G)
    ... except SpecError as e:
    ...     print(str(e)[:40])
    graph: link d0/gpu0 -> d0/gpu0 is a self
    """
    if G.number_of_edges() == 0:
        raise SpecError(f"{source}: the graph has no links")
    gpus = 0
    for n, d in G.nodes(data=True):
        role = d.get("role")
        if role not in _KIND_OF_ROLE or d.get("kind") != _KIND_OF_ROLE[role]:
            raise SpecError(f"{source}: node {brief(n)} has kind/role {brief(d.get('kind'))}/{brief(role)}; "
                            f"roles: {', '.join(ROLES)}")
        for key in ("domain", "local", "rail", "plane", "pod"):
            v = d.get(key, -1)
            if isinstance(v, bool) or not isinstance(v, int) or not -1 <= v < 1 << 31:
                raise SpecError(f"{source}: node {brief(n)} has {key} = {brief(v)}; expected an integer >= -1")
        gpus += role == "gpu"
    if gpus == 0:
        raise SpecError(f"{source}: the graph has no GPU nodes")
    for u, v, d in G.edges(data=True):
        if u == v:
            raise SpecError(f"{source}: link {brief(u)[1:-1]} -> {brief(v)[1:-1]} is a self-loop")
        cap, lat = _number(d, "capacity_Bps"), _number(d, "latency_s")
        if cap is None or not math.isfinite(cap) or cap <= 0:
            raise SpecError(f"{source}: link {brief(u)} -> {brief(v)} has capacity_Bps = "
                            f"{brief(d.get('capacity_Bps'))}; it must be a finite number > 0")
        n = d.get("cables", 1)
        lo, hi = LINK_RATE_BOUNDS_BPS
        if isinstance(n, int) and n >= 1 and not lo <= cap / n <= hi:
            raise SpecError(f"{source}: link {brief(u)} -> {brief(v)} has capacity_Bps = {cap:g} over {n} cable(s); "
                            f"a cable carries {lo:g} to {hi:g} B/s (1 Gb/s to 100 Tb/s)")
        if lat is None or not math.isfinite(lat) or lat < 0:
            raise SpecError(f"{source}: link {brief(u)} -> {brief(v)} has latency_s = {brief(d.get('latency_s'))}; "
                            f"it must be a finite number >= 0")
        n = d.get("cables", 1)
        if isinstance(n, bool) or not isinstance(n, int) or not 1 <= n < 1 << 31:
            raise SpecError(f"{source}: link {brief(u)} -> {brief(v)} has cables = {brief(n)}; it counts the cables "
                            f"the link stands for (an integer >= 1)")
        if not isinstance(d.get("tier", "other"), str):
            raise SpecError(f"{source}: link {brief(u)} -> {brief(v)} has tier = {brief(d.get('tier'))}; "
                            f"expected a tier name")


def read(path: str | Path):
    """Read a fabric graph written by :func:`write` (format from the suffix) and check it.

    Returns a :class:`networkx.MultiDiGraph`.
    """
    import xml.etree.ElementTree as ET

    import networkx as nx

    path = Path(path)
    source = f"graph file {brief(str(path))}"
    if path.suffix.lower() not in (".json", ".graphml"):
        raise SpecError(f"{source}: unknown graph format; use .json or .graphml")
    data = read_bytes(path, what="graph file", max_bytes=max_graph_bytes(), limit_env=MAX_GRAPH_ENV)
    try:
        if path.suffix.lower() == ".json":
            doc = parse_json(data, source=source)
            if not isinstance(doc, dict) or not isinstance(doc.get("nodes"), list) \
                    or not isinstance(doc.get("links"), list):
                raise SpecError(f"{source}: cannot read graph: expected a node-link object with 'nodes' and 'links' arrays, "
                                f"as 'fabric-emu topo export' writes")
            ids = [n.get("id") if isinstance(n, dict) else None for n in doc["nodes"]]
            if any(i is None or isinstance(i, (list, dict, bool)) for i in ids):
                raise SpecError(f"{source}: cannot read graph: every node needs an 'id' (a string or number)")
            seen: set = set()
            for i in ids:
                key = (type(i).__name__, i)
                if key in seen:
                    raise SpecError(f"{source}: cannot read graph: node id {brief(i)} appears twice")
                seen.add(key)
            G = nx.node_link_graph(doc, directed=True, multigraph=True, edges="links")
        else:
            G = nx.read_graphml(io.BytesIO(data), force_multigraph=True)
            for k, v in list(G.graph.items()):
                if isinstance(v, str) and v[:1] in "{[":
                    try:
                        G.graph[k] = parse_json(v, source=source)
                    except SpecError:
                        pass
    except SpecError:
        raise
    except RecursionError:
        raise SpecError(f"{source}: cannot read graph: nested too deeply") from None
    except (ValueError, KeyError, TypeError, AttributeError, IndexError, ET.ParseError, nx.NetworkXError) as exc:
        raise SpecError(f"{source}: cannot read graph ({type(exc).__name__}: {brief(str(exc))[1:-1]}); expected a "
                        f"file written by 'fabric-emu topo export'") from None
    if not isinstance(G, nx.MultiDiGraph):
        G = nx.MultiDiGraph(G)
    if not isinstance(G.graph.get("meta", {}), dict):
        raise SpecError(f"{source}: graph attribute 'meta' must be an object")
    G.graph.setdefault("meta", {})
    name = G.graph.get("name", path.stem)
    G.graph["name"] = name if isinstance(name, str) else path.stem
    for key in ("failures", "degradations"):
        v = G.graph.get(key, [])
        if not isinstance(v, list) or not all(isinstance(x, str) for x in v):
            raise SpecError(f"{source}: graph attribute {key!r} must be a list of selector strings")
    check_graph(G, source=source)
    return G
