"""Fidelity round 8, GCP gIB (issue 8): the protocol Google's NCCL tuner runs for all-gather on GCP's RDMA fabric.

Each test is a behaviour the model lacked before round 8. The expected figures come from the fit A3 Ultra
source's own output (cluster-toolkit examples/gke-consumption-options/dws-flex-start/README.md @ 1047080) and
NCCL's tuner plugin interface; none is taken from our output.
"""

import pytest

from collectives import Collective, nccl_model as nm
from collectives.net_plugins import NET_TUNER_PROTOCOLS, net_tuner_protocols
from collectives.runner import planner_for
from collectives.validate import _items, _Point, _read, _router, default_points_paths, validate
from topologies.errors import SpecError

RANKS = tuple(range(16))
A3ULTRA_ALLGATHER = "gke-a3ultra-2node-allgather-by-size"
GIB_ROWS = {A3ULTRA_ALLGATHER: "tuner_config_a3u.txtpb", "gke-a4-2node-allgather-by-size": "tuner_config_a4.txtpb"}


def _planner(preset: str, scaleout: str):
    return planner_for(_router(preset, {"domains": 2, "scaleout": scaleout}))


def test_gib_tuner_runs_simple_for_all_gather_from_one_mib():
    """The fit source's all-gather takes 64.8 us at 512 KiB and 79.7 / 78.4 us at 1 / 2 MiB: a step up of
    15 us where NCCL's LL128 estimate grows by 1.6 us, then NCCL's ring/Simple times. NCCL's own argmin picks
    LL128 at 1-32 MiB there; Google's tuner (loaded by every gIB environment) runs Simple from 1 MiB."""
    pl = _planner("hgx-h200", "gcp-rdma")
    assert pl.calib.tuner_protocols == (("all_gather", 1 << 20, "Simple"),)
    system = pl.system(RANKS)
    for size in (1 << 20, 4 << 20, 32 << 20):
        assert nm.choose(system, "all_gather", size).protocol == "Simple", size
        assert pl.plan(Collective("all_gather", RANKS, size)).protocol == "Simple", size
    # below the row's size NCCL's own cost table still decides (LL / LL128, not forced)
    assert nm.choose(system, "all_gather", 1 << 16).protocol != "Simple"
    reason = {e.protocol: e.reason for e in nm.algo_times(system, "all_gather", 1 << 20, algorithms=["Ring"])}
    assert "tuner plugin runs Simple" in reason["LL128"]


def test_a3ultra_all_gather_mid_sizes_match_the_measured_sweep():
    """With LL128 at 1-4 MiB the model was +53 / +33 / +15 % fast on the fit row; with the tuner's Simple
    the 1-4 MiB values are within 10 % (and 1-32 MiB within 17 %)."""
    rows = {r.id.split("@")[1]: r for r in validate(ids=[A3ULTRA_ALLGATHER]).rows}
    for size in ("1MiB", "2MiB", "4MiB"):
        assert rows[size].note == "ring/Simple", size
        assert abs(rows[size].rel_error) < 0.10, (size, rows[size].rel_error)
    for size in ("8MiB", "16MiB", "32MiB"):
        assert abs(rows[size].rel_error) < 0.17, (size, rows[size].rel_error)


@pytest.mark.parametrize("scaleout", ["quantum-2", "spectrum-x"])
def test_tuner_rule_is_gcps_alone(scaleout):
    """The rule belongs to GCP's fabric (its switch), not to the ConnectX-7 it shares with InfiniBand:
    elsewhere NCCL's own argmin keeps LL128 at 1 MiB across two H200 nodes."""
    pl = _planner("hgx-h200", scaleout)
    assert pl.calib.tuner_protocols is None
    assert nm.choose(pl.system(RANKS), "all_gather", 1 << 20).protocol == "LL128"


def test_tuner_rule_applies_across_nodes_and_to_the_listed_collective_only():
    pl = _planner("hgx-h200", "gcp-rdma")
    one_node = pl.system(tuple(range(8)))
    assert one_node.tuner_protocols is None
    system = pl.system(RANKS)
    # reduce-scatter / all-reduce: no tuner row is sourced, NCCL's own choice
    assert nm.choose(system, "reduce_scatter", 1 << 20).protocol == "LL128"
    assert net_tuner_protocols("QM9700") is None and "GCP-RDMA-fabric" in NET_TUNER_PROTOCOLS


@pytest.mark.parametrize("bad", [(("all_gather", -1, "Simple"),), (("all_gather", 1, "simple"),), ("all_gather",),
                                 (("all_gather", True, "Simple"),), (("allgather", 1 << 20, "Simple"),)])
def test_bad_tuner_rows_are_refused_naming_the_field(bad):
    with pytest.raises(SpecError, match="tuner_protocols"):
        nm.NcclSystem(arch_sm=90, gpus_per_node=8, nnodes=2, nics_per_node=8, nic_Bps=5e10, tuner_protocols=bad)


def test_gib_rows_run_on_gcps_fabric_and_name_googles_tuner():
    """Both gIB rows are on the fabric the tuner row is keyed by, and say which tuner config their environment
    loaded (set_nccl_env.sh's NCCL_TUNER_CONFIG_PATH); the dstack A4 row ran no gIB, and says so."""
    found = {}
    for path in default_points_paths():
        doc, side = _read(path)
        for kind, raw in _items(path, doc, side):
            if raw.get("id") in GIB_ROWS or raw.get("id") == "dstack-a4-2node-allreduce-by-size":
                found[raw["id"]] = _Point(kind, raw, 0)
    assert set(found) == set(GIB_ROWS) | {"dstack-a4-2node-allreduce-by-size"}
    for pid, config in GIB_ROWS.items():
        p = found[pid]
        assert p["scaleout"] == "gcp-rdma" and p["collective"] == "all_gather", pid
        assert config in str(p.get("tuner")) and "gIB" in str(p.get("NCCL_NET")), pid
    assert "no gIB" in str(found["dstack-a4-2node-allreduce-by-size"].get("net"))
