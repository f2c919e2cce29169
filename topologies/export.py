"""Write fabric graphs as GraphML or node-link JSON, and read them back.

Writes are atomic: the file appears complete or not at all.

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

import json
import os
import tempfile
import xml.etree.ElementTree as ET
from pathlib import Path

import networkx as nx

from topologies.errors import SpecError

__all__ = ["FORMATS", "write", "read", "to_json_dict"]

FORMATS = ("graphml", "json")


def to_json_dict(G: nx.MultiDiGraph) -> dict:
    """Node-link dict (networkx's schema, edges under ``links``) with JSON-safe graph attributes."""
    data = nx.node_link_data(G, edges="links")
    data["graph"] = json.loads(json.dumps(G.graph, default=str))
    return data


def _graphml_ready(G: nx.MultiDiGraph) -> nx.MultiDiGraph:
    H = G.copy()
    # GraphML holds scalars only: keep graph-level dicts/lists as JSON strings
    H.graph = {k: (json.dumps(v, default=str) if isinstance(v, (dict, list, tuple)) else v)
               for k, v in G.graph.items()}
    return H


def write(G: nx.MultiDiGraph, path: str | Path, fmt: str) -> None:
    """Write ``G`` to ``path`` as ``fmt`` (``graphml`` or ``json``), atomically."""
    if fmt not in FORMATS:
        raise SpecError(f"format: {fmt!r} is not one of {', '.join(FORMATS)}")
    path = Path(path)
    if not path.parent.exists():
        raise SpecError(f"output: directory {str(path.parent)!r} does not exist")
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as fh:
            if fmt == "json":
                fh.write(json.dumps(to_json_dict(G)).encode())
            else:
                nx.write_graphml(_graphml_ready(G), fh)
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise


def read(path: str | Path) -> nx.MultiDiGraph:
    """Read a fabric graph written by :func:`write` (format from the suffix)."""
    path = Path(path)
    try:
        if path.suffix == ".json":
            data = json.loads(path.read_text())
            G = nx.node_link_graph(data, directed=True, multigraph=True, edges="links")
        elif path.suffix == ".graphml":
            G = nx.read_graphml(path, force_multigraph=True)
            for k, v in list(G.graph.items()):
                if isinstance(v, str) and v[:1] in "{[":
                    try:
                        G.graph[k] = json.loads(v)
                    except ValueError:
                        pass
        else:
            raise SpecError(f"{path}: unknown graph format; use .json or .graphml")
    except (OSError, ValueError, KeyError, TypeError, AttributeError, ET.ParseError, nx.NetworkXError) as exc:
        raise SpecError(f"{path}: cannot read graph ({type(exc).__name__}: {exc}); expected a file written by "
                        f"'fabric-emu topo export'") from None
    if not isinstance(G, nx.MultiDiGraph):
        G = nx.MultiDiGraph(G)
    G.graph.setdefault("meta", {})
    G.graph.setdefault("name", path.stem)
    return G
