"""The builders' fabric graph: flat lists that compile without networkx, a networkx graph on demand.

Every topology builder (:mod:`topologies.clos`, :mod:`topologies.nvlink`,
:mod:`topologies.cluster`, the presets) fills a :class:`FabricGraph` through
:func:`topologies.graph.add_node` and :func:`topologies.graph.add_cable`. It
keeps nodes and directed edges as parallel Python lists (one list per
attribute), which :func:`fabric.compiled.compile_fabric` turns into numpy
arrays directly: a run (``fabric-emu run``) never imports networkx.

The graph is still a networkx graph for whoever asks for one:
:meth:`FabricGraph.to_networkx` builds the :class:`networkx.MultiDiGraph`
the conventions of :mod:`topologies.graph` describe (same node order, same
attribute dicts in the same key order, same edge order and keys, the same
``graph`` dict object), and any other attribute (``G.nodes``, ``G.out_edges``,
``G.subgraph``, ``G.add_edge`` ...) is looked up on that graph, built once on
first use. From then on the networkx graph is the only copy: later changes go
to it, and :func:`fabric.compiled.compile_fabric` compiles it.

Examples
--------
>>> from topologies.graph import add_cable, add_node, new_fabric
>>> G = new_fabric("toy")
>>> add_node(G, "a", "gpu", domain=0, local=0); add_node(G, "b", "nvswitch", domain=0)
'a'
'b'
>>> add_cable(G, "a", "b", capacity_Bps=1e9, tier_up="nvlink-up", tier_down="nvlink-down",
...           latency_uv_s=1e-6, latency_vu_s=1e-6)
>>> G.number_of_nodes(), G.number_of_edges(), G.is_networkx
(2, 2, False)
>>> sorted(d["tier"] for _, _, d in G.out_edges("a", data=True)), G.is_networkx
(['nvlink-up'], True)
"""

from __future__ import annotations

from topologies.errors import TopologyError

__all__ = ["FabricGraph", "as_networkx", "NODE_FIELDS", "EDGE_FIELDS"]

#: Node attributes, in the key order of a node's attribute dict (:func:`topologies.graph.add_node`).
NODE_FIELDS = ("kind", "role", "domain", "local", "rail", "plane", "pod", "model", "reduce")
#: Edge attributes, in the key order of an edge's attribute dict (:func:`topologies.graph.add_cable`).
EDGE_FIELDS = ("capacity_Bps", "plane", "cable", "cables", "tier", "latency_s")

_OWN = frozenset(("graph", "_nx", "_names", "_index", "_node_cols", "_src", "_dst", "_edge_cols"))


class FabricGraph:
    """A fabric graph held as flat lists; see the module docstring.

    Attributes
    ----------
    graph : dict
        Graph attributes (``name``, ``meta``, ``next_cable``, ``preset``,
        ``failures`` ...), shared with the networkx graph once built.
    """

    def __init__(self, graph: dict | None = None) -> None:
        self.graph = {} if graph is None else graph
        self._nx = None
        self._names: list = []
        self._index: dict = {}
        self._node_cols: dict = {k: [] for k in NODE_FIELDS}
        self._src: list = []
        self._dst: list = []
        self._edge_cols: dict = {k: [] for k in EDGE_FIELDS}

    # -- building (used by topologies.graph.add_node / add_cable) ---------------------------------------
    def add_fabric_node(self, name, values: tuple) -> None:
        """Add node ``name`` with the :data:`NODE_FIELDS` ``values`` (an existing node's are replaced)."""
        if self._nx is not None:
            self._nx.add_node(name, **dict(zip(NODE_FIELDS, values)))
            return
        i = self._index.get(name)
        if i is None:
            self._index[name] = len(self._names)
            self._names.append(name)
            for col, v in zip(self._node_cols.values(), values):
                col.append(v)
        else:
            for col, v in zip(self._node_cols.values(), values):
                col[i] = v

    def add_fabric_edges(self, u, v, rows: list[tuple]) -> None:
        """Append directed edges: each row is (forward, :data:`EDGE_FIELDS` values) -- ``u -> v`` if forward."""
        if self._nx is not None:
            self._nx.add_edges_from((u, v, dict(zip(EDGE_FIELDS, vals))) if fwd else
                                    (v, u, dict(zip(EDGE_FIELDS, vals))) for fwd, vals in rows)
            return
        try:
            iu, iv = self._index[u], self._index[v]
        except KeyError as exc:
            raise TopologyError(f"cable {u!r} - {v!r}: node {exc.args[0]!r} has not been added; "
                                f"add_node() both ends first") from None
        cols = tuple(self._edge_cols.values())
        for fwd, vals in rows:
            self._src.append(iu if fwd else iv)
            self._dst.append(iv if fwd else iu)
            for col, x in zip(cols, vals):
                col.append(x)

    # -- reading without networkx ------------------------------------------------------------------------
    @property
    def is_networkx(self) -> bool:
        """True once the networkx graph has been built (it then holds the graph)."""
        return self._nx is not None

    def columns(self) -> tuple[list, dict, list, list, dict]:
        """(node names, node attribute lists, edge source ids, edge destination ids, edge attribute lists).

        Edges are in insertion order (parallel edges between two nodes in key order). Only before the
        networkx graph exists (see :attr:`is_networkx`); the lists are the graph's own, do not modify them.
        """
        if self._nx is not None:
            raise TopologyError("graph: the networkx graph holds this fabric now; read it instead")
        return self._names, self._node_cols, self._src, self._dst, self._edge_cols

    def number_of_nodes(self) -> int:
        return self._nx.number_of_nodes() if self._nx is not None else len(self._names)

    def number_of_edges(self, u=None, v=None) -> int:
        if self._nx is not None or u is not None or v is not None:
            return self.to_networkx().number_of_edges(u, v)
        return len(self._src)

    def node_items(self):
        """``(name, attribute dict)`` per node in node order (fresh dicts before networkx exists)."""
        if self._nx is not None:
            yield from self._nx.nodes(data=True)
            return
        cols = tuple(self._node_cols.values())
        for i, n in enumerate(self._names):
            yield n, dict(zip(NODE_FIELDS, (c[i] for c in cols)))

    def edge_items(self):
        """``(u, v, attribute dict)`` per directed edge: insertion order before networkx exists, then its order."""
        if self._nx is not None:
            yield from self._nx.edges(data=True)
            return
        names, cols = self._names, tuple(self._edge_cols.values())
        for i, (s, d) in enumerate(zip(self._src, self._dst)):
            yield names[s], names[d], dict(zip(EDGE_FIELDS, (c[i] for c in cols)))

    def __iter__(self):
        return iter(self._nx) if self._nx is not None else iter(list(self._names))

    def __len__(self) -> int:
        return self.number_of_nodes()

    def __contains__(self, n) -> bool:
        return n in self._nx if self._nx is not None else n in self._index

    def __getitem__(self, n):
        return self.to_networkx()[n]

    def __repr__(self) -> str:
        return (f"FabricGraph({self.graph.get('name', '')!r}, {self.number_of_nodes():,} nodes, "
                f"{self.number_of_edges():,} links{', networkx' if self._nx is not None else ''})")

    # -- networkx ------------------------------------------------------------------------------------------
    def to_networkx(self):
        """The :class:`networkx.MultiDiGraph` of this fabric (built once; it holds the fabric from then on)."""
        if self._nx is None:
            import networkx as nx

            H = nx.MultiDiGraph()
            H.graph = self.graph
            cols = tuple(self._node_cols.values())
            H.add_nodes_from((n, dict(zip(NODE_FIELDS, (c[i] for c in cols)))) for i, n in enumerate(self._names))
            names = self._names
            ecols = tuple(self._edge_cols.values())
            H.add_edges_from((names[s], names[d], dict(zip(EDGE_FIELDS, (c[i] for c in ecols))))
                             for i, (s, d) in enumerate(zip(self._src, self._dst)))
            self._nx = H
            self._names, self._index, self._src, self._dst = [], {}, [], []
            self._node_cols = self._edge_cols = {}
        return self._nx

    def __getattr__(self, name: str):
        # only called for names the class does not define: the rest of networkx's graph API
        if name.startswith("__") or name in _OWN:
            raise AttributeError(name)
        return getattr(self.to_networkx(), name)


def as_networkx(G):
    """``G`` as a :class:`networkx.MultiDiGraph` (a :class:`FabricGraph` builds its own once; others pass through)."""
    return G.to_networkx() if isinstance(G, FabricGraph) else G
