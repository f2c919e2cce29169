"""The builders' list-backed FabricGraph against the networkx path it replaces on the run path.

Reference: the same builders writing into a real ``networkx.MultiDiGraph`` (``new_fabric`` patched),
compiled by networkx iteration. Both must give the same CompiledFabric, field by field, with and
without failures and degradations, and the same networkx graph and export bytes on demand.
"""

import dataclasses
import subprocess
import sys
from types import MappingProxyType

import networkx as nx
import numpy as np
import pytest

from fabric.compiled import compile_fabric
from fabric.failures import compile_with_failures
from topologies.export import dumps
from topologies.fabricgraph import FabricGraph, as_networkx
from topologies.graph import add_cable, add_node, gpus_of, new_fabric, summarize
from topologies.presets import build

import topologies.cluster  # noqa: F401  (the modules whose new_fabric the reference patches)

CASES = [
    ("hgx-h100", {}, (), ()),
    ("hgx-a100", {"aggregate": "true"}, (), ()),
    ("hgx-h100", {"domains": "4", "scaleout": "quantum-2"}, ("leaf 2",), ("leaf 0 spine 0=50%",)),
    ("hgx-b200", {"domains": "3", "scaleout": "spectrum-x", "planes": "2"}, ("plane 1 spine 0",), ()),
    ("gb300-nvl72", {"domains": "2", "scaleout": "quantum-x800"}, ("gpu 5 nvlink plane 3",), ("gpu 7 nic=200Gb/s",)),
    ("gb200-nvl72", {"domains": "2", "scaleout": "quantum-2", "gpus_per_domain": "36", "spine_scope": "rail"},
     (), ()),
    ("hgx-h100", {"domains": "8", "scaleout": "quantum-2", "tiers": "3", "oversubscription": "2"}, ("core 0",), ()),
    ("nvl", {"n": "36", "aggregate": "true"}, ("nvswitch 4",), ()),
    ("fat-tree", {"hosts": "128", "radix": "16", "link": "400Gb/s"}, (), ()),
    ("fat-tree", {"hosts": "100", "radix": "8", "tiers": "3", "oversubscription": "2,1"}, ("spine 2",),
     ("link 7=0.25",)),
    ("fat-tree", {"hosts": "48", "radix": "8", "planes": "2", "aggregate": "true", "switch": "QM9700",
                  "nic": "ConnectX-7", "link": "200Gb/s"}, ("gpu 3 nic",), ()),
    ("fat-tree", {"hosts": "12", "radix": "16"}, (), ()),
    ("superpod-h100", {}, ("leaf 3",), ()),
]
IDS = [f"{n}-{i}" for i, (n, *_rest) in enumerate(CASES)]


def _nx_new_fabric(name, **meta):
    G = nx.MultiDiGraph()
    G.graph.update(name=name, meta=dict(meta), next_cable=0)
    return G


@pytest.fixture
def networkx_builders(monkeypatch):
    """Make every builder write into a networkx.MultiDiGraph, as before FabricGraph."""
    def use():
        for mod in ("topologies.clos", "topologies.nvlink", "topologies.cluster"):
            monkeypatch.setattr(sys.modules[mod], "new_fabric", _nx_new_fabric)
    return use


def _same_compiled(a, b):
    for f in dataclasses.fields(a):
        x, y = getattr(a, f.name), getattr(b, f.name)
        if f.name == "_cache":
            continue
        if isinstance(x, np.ndarray):
            assert x.dtype == y.dtype and x.shape == y.shape and np.array_equal(x, y), f.name
        elif isinstance(x, MappingProxyType):
            assert dict(x) == dict(y) and list(x) == list(y), f.name
        else:
            assert x == y, f.name


@pytest.mark.parametrize("name, sets, fail, degrade", CASES, ids=IDS)
def test_fabricgraph_compiles_identically_to_the_networkx_path(networkx_builders, name, sets, fail, degrade):
    G = build(name, sets)
    assert isinstance(G, FabricGraph) and not G.is_networkx
    fast = compile_with_failures(G, fail, degrade)
    networkx_builders()
    R = build(name, sets)
    assert isinstance(R, nx.MultiDiGraph)
    _same_compiled(fast, compile_with_failures(R, fail, degrade))
    assert summarize(G) == summarize(R) and gpus_of(G) == gpus_of(R)
    assert not G.is_networkx  # compiling and summarising need no networkx graph
    # on demand: the same networkx graph (node, edge and attribute order included) and the same export bytes
    H = G.to_networkx()
    assert [(n, list(d.items())) for n, d in H.nodes(data=True)] == \
        [(n, list(d.items())) for n, d in R.nodes(data=True)]
    assert [(u, v, k, list(d.items())) for u, v, k, d in H.edges(keys=True, data=True)] == \
        [(u, v, k, list(d.items())) for u, v, k, d in R.edges(keys=True, data=True)]
    assert H.graph is G.graph and H.graph == R.graph
    assert dumps(G, "json") == dumps(R, "json")
    # compiling the networkx graph (the path for graph files) gives the lists' arrays too
    _same_compiled(compile_fabric(G), compile_fabric(R))


def test_networkx_api_and_changes_after_materialising():
    G = build("hgx-h100")
    assert len(G) == G.number_of_nodes() == 12 and "d0/gpu3" in G and G.number_of_edges() == 288
    assert G.out_degree("d0/gpu0") == 18 and G.is_networkx  # a networkx method builds the graph once
    assert as_networkx(G) is G.to_networkx() and isinstance(as_networkx(G), nx.MultiDiGraph)
    G.remove_edges_from([(u, v, k) for u, v, k in G.out_edges("d0/gpu0", keys=True)][:2])
    add_node(G, "d0/extra", "gpu", domain=0, local=8)
    add_cable(G, "d0/extra", "d0/nvsw0", capacity_Bps=1e9, tier_up="nvlink-up", tier_down="nvlink-down",
              latency_uv_s=0.0, latency_vu_s=0.0)
    cf = compile_fabric(G)  # compiles the (changed) networkx graph
    assert cf.n_links == 288 - 2 + 2 and cf.n_gpus == 9 and G.number_of_edges() == cf.n_links


def test_cable_to_an_unknown_node_is_refused():
    from topologies.errors import TopologyError

    G = new_fabric("toy")
    add_node(G, "a", "gpu", domain=0, local=0)
    with pytest.raises(TopologyError, match="'b' has not been added"):
        add_cable(G, "a", "b", capacity_Bps=1.0, tier_up="nvlink-up", tier_down="nvlink-down",
                  latency_uv_s=0.0, latency_vu_s=0.0)


def test_run_path_does_not_import_networkx():
    code = ("import sys; from cli.main import main\n"
            "try:\n    main(['run', 'all_to_all', '--topo', 'fat-tree', '--set', 'hosts=8', '--set', 'radix=4', "
            "'--size', '1MiB', '--json'])\nexcept SystemExit as e:\n    assert not e.code, e.code\n"
            "print(sorted(m for m in ('networkx', 'numpy.ma', 'scipy', 'rich', 'collectives.schedule', 'tomllib') if m in sys.modules), file=sys.stderr)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stderr.strip().splitlines()[-1] == "[]"
