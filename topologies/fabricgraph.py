"""The builders' fabric graph: flat lists that compile without networkx, a networkx graph on demand.

Every topology builder (:mod:`topologies.clos`, :mod:`topologies.nvlink`,
:mod:`topologies.cluster`, the presets) fills a :class:`FabricGraph` through
:func:`topologies.graph.add_node` and :func:`topologies.graph.add_cable`. It
keeps one tuple per node and one per :func:`~topologies.graph.add_cable` call
(a bundle of ``reps`` cables, each two directed edges), which
:func:`fabric.compiled.compile_fabric` expands into numpy arrays with a few
vectorised operations: a run (``fabric-emu run``) never imports networkx, and
a 16,384-GPU cluster builds and compiles in about a tenth of the time the
networkx graph took (docs/performance.md).

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

__all__ = ["FabricGraph", "as_networkx", "NODE_FIELDS", "EDGE_FIELDS", "CABLE_FIELDS"]

#: Node attributes, in the key order of a node's attribute dict (:func:`topologies.graph.add_node`).
NODE_FIELDS = ("kind", "role", "domain", "local", "rail", "plane", "pod", "model", "reduce")
#: Edge attributes, in the key order of an edge's attribute dict (:func:`topologies.graph.add_cable`).
EDGE_FIELDS = ("capacity_Bps", "plane", "cable", "cables", "tier", "latency_s")
#: The numbers of one add_cable record: node ids ``u``, ``v``; ``reps`` cables with ids ``cable`` ..
#: ``cable + reps - 1``, each an edge ``u -> v`` (``latency_uv_s``) then ``v -> u`` (``latency_vu_s``);
#: its tiers (``tier_up`` for ``u -> v``, ``tier_down``) are kept apart (strings).
CABLE_FIELDS = ("u", "v", "capacity_Bps", "plane", "cable", "cables", "reps", "latency_uv_s", "latency_vu_s")
_NC = len(CABLE_FIELDS)

_OWN = frozenset(("graph", "_nx", "_names", "_index", "_nodes", "_cnum", "_ctier", "_n_edges"))


class FabricGraph:
    """A fabric graph held as node and cable records; see the module docstring.

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
        self._nodes: list = []    # NODE_FIELDS tuples, in node order
        self._cnum: list = []     # CABLE_FIELDS values of every record, flat, in insertion order
        self._ctier: list = []    # (tier_up, tier_down) of every record, flat
        self._n_edges = 0

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
            self._nodes.append(values)
        else:
            self._nodes[i] = values

    def add_fabric_cables(self, u, v, capacity_Bps, plane, cable: int, cables: int, reps: int, tier_up, tier_down,
                          latency_uv_s, latency_vu_s) -> None:
        """Add ``reps`` cables ``u - v`` (one :data:`CABLE_FIELDS` record; see there for the edges it stands for)."""
        if self._nx is not None:
            edges = []
            for k in range(reps):
                edges.append((u, v, dict(zip(EDGE_FIELDS, (capacity_Bps, plane, cable + k, cables, tier_up,
                                                           latency_uv_s)))))
                edges.append((v, u, dict(zip(EDGE_FIELDS, (capacity_Bps, plane, cable + k, cables, tier_down,
                                                           latency_vu_s)))))
            self._nx.add_edges_from(edges)
            return
        try:
            iu, iv = self._index[u], self._index[v]
        except KeyError as exc:
            raise TopologyError(f"cable {u!r} - {v!r}: node {exc.args[0]!r} has not been added; "
                                f"add_node() both ends first") from None
        self._cnum.extend((iu, iv, capacity_Bps, plane, cable, cables, reps, latency_uv_s, latency_vu_s))
        self._ctier.extend((tier_up, tier_down))
        self._n_edges += 2 * reps

    # -- reading without networkx ------------------------------------------------------------------------
    @property
    def is_networkx(self) -> bool:
        """True once the networkx graph has been built (it then holds the graph)."""
        return self._nx is not None

    def records(self) -> tuple[list, list, list, list]:
        """(node names, :data:`NODE_FIELDS` tuples, flat :data:`CABLE_FIELDS` values, flat (tier_up, tier_down)).

        Record ``c``'s numbers are ``[c * len(CABLE_FIELDS):(c + 1) * len(CABLE_FIELDS)]`` of the third list,
        its tiers ``[2 * c:2 * c + 2]`` of the fourth; ``u`` and ``v`` are node ids.

        Only before the networkx graph exists (see :attr:`is_networkx`); the lists are the graph's own,
        do not modify them.
        """
        if self._nx is not None:
            raise TopologyError("graph: the networkx graph holds this fabric now; read it instead")
        return self._names, self._nodes, self._cnum, self._ctier

    def number_of_nodes(self) -> int:
        return self._nx.number_of_nodes() if self._nx is not None else len(self._names)

    def number_of_edges(self, u=None, v=None) -> int:
        if self._nx is not None or u is not None or v is not None:
            return self.to_networkx().number_of_edges(u, v)
        return self._n_edges

    def node_items(self):
        """``(name, attribute dict)`` per node in node order (fresh dicts before networkx exists)."""
        if self._nx is not None:
            yield from self._nx.nodes(data=True)
            return
        for n, vals in zip(self._names, self._nodes):
            yield n, dict(zip(NODE_FIELDS, vals))

    def edge_items(self):
        """``(u, v, attribute dict)`` per directed edge: insertion order before networkx exists, then its order."""
        if self._nx is not None:
            yield from self._nx.edges(data=True)
            return
        names, num, tiers = self._names, self._cnum, self._ctier
        for c in range(len(tiers) // 2):
            iu, iv, cap, plane, cid, per, reps, l_uv, l_vu = num[c * _NC:(c + 1) * _NC]
            t_up, t_down = tiers[2 * c:2 * c + 2]
            u, v = names[iu], names[iv]
            for k in range(reps):
                yield u, v, dict(zip(EDGE_FIELDS, (cap, plane, cid + k, per, t_up, l_uv)))
                yield v, u, dict(zip(EDGE_FIELDS, (cap, plane, cid + k, per, t_down, l_vu)))

    def cable_items(self):
        """``(tier, cable id, cables)`` of the first edge of every cable id, as :meth:`edge_items` meets them.

        Each record's ``u -> v`` edge comes before its ``v -> u`` edge, so the tier is ``tier_up``; cheaper than
        :meth:`edge_items` (no attribute dicts). Before networkx exists only.
        """
        if self._nx is not None:
            raise TopologyError("graph: the networkx graph holds this fabric now; read it instead")
        num, tiers, seen = self._cnum, self._ctier, set()
        for c in range(len(tiers) // 2):
            cid, per, reps = num[c * _NC + 4:c * _NC + 7]
            for k in range(cid, cid + reps):
                if k not in seen:
                    seen.add(k)
                    yield tiers[2 * c], k, per

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
            H.add_nodes_from(self.node_items())
            H.add_edges_from(self.edge_items())
            self._nx = H
            self._names, self._index, self._nodes, self._cnum, self._ctier, self._n_edges = [], {}, [], [], [], 0
        return self._nx

    def __getattr__(self, name: str):
        # only called for names the class does not define: the rest of networkx's graph API
        if name.startswith("__") or name in _OWN:
            raise AttributeError(name)
        return getattr(self.to_networkx(), name)


def as_networkx(G):
    """``G`` as a :class:`networkx.MultiDiGraph` (a :class:`FabricGraph` builds its own once; others pass through)."""
    return G.to_networkx() if isinstance(G, FabricGraph) else G
