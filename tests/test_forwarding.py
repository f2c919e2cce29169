"""Routing each fabric the way its switches forward (issue 8, round 5): catalog forwarding kinds,
``collectives.runner.fabric_policy``, ``--routing auto`` on ``run`` / ``sweep``, and ``validate``."""

from __future__ import annotations

import json

import numpy as np
import pytest
from click.testing import CliRunner

from cli.app import cli
from collectives.runner import POLICY_OF_FORWARDING, fabric_policy, planner_for
from fabric import POLICIES, Router, compile_fabric
from topologies import build, catalog
from topologies.errors import SpecError
from topologies.graph import TIERS

# an InfiniBand fat-tree: 8 leaves of 4 hosts, 4 spines (radix 8, non-blocking)
IB = ("--topo", "fat-tree", "--set", "hosts=32", "--set", "radix=8", "--set", "switch=QM9700")
# four strided rings of 8 ranks: every host sends to the same-position host of the next leaf (a shift)
SHIFT = ("--size", "64MiB", "--groups", "4", "--layout", "strided")


def _invoke(*args):
    r = CliRunner().invoke(cli, [str(a) for a in args])
    return r


def _json(*args):
    r = _invoke(*args, "--json")
    assert r.exit_code == 0, (args, r.output)
    return json.loads(r.stdout)


def test_every_scaleout_switch_forwards_by_a_sourced_kind():
    tags = {"destination": "[S-IBLFT]", "hash": "[S-ECMP]", "adaptive-spray": ("[S30]", "[S-SRD]")}
    for sw in catalog.SWITCHES.values():
        if sw.family == "nvswitch":
            assert sw.forwarding is None
            continue
        assert sw.forwarding in catalog.FORWARDING
        need = tags[sw.forwarding]
        assert any(s.startswith(need) for s in sw.sources), (sw.name, sw.sources)
    assert set(POLICY_OF_FORWARDING) == set(catalog.FORWARDING)
    assert set(POLICY_OF_FORWARDING.values()) <= set(POLICIES)


def test_a_scaleout_switch_without_forwarding_is_refused_in_one_line():
    with pytest.raises(SpecError, match="forwarding"):
        catalog.Switch("x", "ethernet", 64, 1e9, 1e-7, None, True, sources=("[S38] x",))
    with pytest.raises(SpecError, match="forwarding"):
        catalog.Switch("x", "infiniband", 64, 1e9, 1e-7, None, True, sources=("[S38] x",), forwarding="ecmp")


@pytest.mark.parametrize("scaleout, policy", [("quantum-2", "dmodk"), ("quantum-x800-nosharp", "dmodk"),
                                              ("spectrum-x", "spray"), ("aws-efa-v3", "spray"),
                                              ("gcp-tcpxo", "ecmp"), ("gcp-rdma", "ecmp")])
def test_each_cluster_routes_as_its_switches_forward(scaleout, policy):
    cf = compile_fabric(build("hgx-h100", {"domains": 2, "scaleout": scaleout}))
    assert fabric_policy(cf) == policy
    assert planner_for(Router(cf), policy="auto").policy == policy


def test_ib_fat_tree_shift_has_no_hash_collisions_under_its_own_forwarding():
    """Counted from the routes (independent of the engine): a leaf-to-next-leaf shift puts one flow on each
    leaf up-link when the switches forward by destination; ECMP hashing piles flows on some up-links."""
    router = Router(compile_fabric(build("fat-tree", {"hosts": 32, "radix": 8, "switch": "QM9700"})))
    src = np.arange(32)
    dst = (src + 4) % 32  # host i of leaf l -> host i of leaf l+1
    up = TIERS.index("leaf-up")

    def flows_per_up_link(policy):
        r = router.route(src, dst, policy=policy)
        links = r.res[r.res >= 0]
        links = links[links < router.cf.n_links]
        links = links[router.cf.link_tier[links] == up]
        return np.bincount(links, minlength=router.cf.n_links)[router.cf.link_tier == up]

    auto = flows_per_up_link(planner_for(router, policy="auto").policy)
    assert auto.sum() == 32 and auto.max() == 1  # 8 leaves x 4 up-links, one flow each
    assert flows_per_up_link("ecmp").max() >= 2


def test_run_defaults_to_the_fabrics_forwarding():
    default = _json("run", "send_recv", *IB, *SHIFT)
    dmodk = _json("run", "send_recv", *IB, *SHIFT, "--routing", "dmodk")
    ecmp = _json("run", "send_recv", *IB, *SHIFT, "--routing", "ecmp")
    assert default == dmodk
    assert min(x["busbw_GBps"] for x in default) > 1.5 * max(x["busbw_GBps"] for x in ecmp)
    title = _invoke("run", "send_recv", *IB, *SHIFT).stdout
    assert "routing dmodk (auto)" in title and "seed" not in title
    forced = _invoke("run", "send_recv", *IB, *SHIFT, "--routing", "ecmp").stdout
    assert "routing ecmp, seed 0" in forced
    generic = _invoke("run", "send_recv", "--topo", "fat-tree", "--set", "hosts=32", "--set", "radix=8",
                      *SHIFT, "--seed", "3")
    assert generic.exit_code == 0 and "routing ecmp (auto), seed 3" in generic.stdout  # no catalog switch: ECMP


def test_seed_refusals():
    r = _invoke("run", "send_recv", *IB, *SHIFT, "--seed", "3")
    assert r.exit_code == 2 and r.stderr.count("\n") == 1
    assert "--seed" in r.stderr and "dmodk" in r.stderr and "--routing auto" in r.stderr
    r = _invoke("run", "send_recv", *IB, *SHIFT, "--routing", "spray", "--seed", "3")
    assert r.exit_code == 2 and "--seed: seeds ECMP hashing and MoE token routing; --routing spray with " \
                                  "send_recv does not use it" in r.stderr


def test_sweep_run_defaults_to_auto(tmp_path):
    db = tmp_path / "s.db"
    r = _invoke("sweep", "run", "send_recv", *IB, *SHIFT[:2], "--grid", "groups=4", "--db", db, "--json")
    assert r.exit_code == 0, r.output
    r = _invoke("sweep", "run", "send_recv", *IB, *SHIFT[:2], "--grid", "seed=1,2", "--db", tmp_path / "t.db")
    assert r.exit_code == 2 and "dmodk" in r.stderr


def test_validate_routes_an_infiniband_point_by_destination():
    from collectives.validate import validate

    ids = ["nccl-ep-ll-h100-ep16"]
    auto = [r.predicted for r in validate(ids=ids).rows]
    assert auto == [r.predicted for r in validate(ids=ids, policy="dmodk").rows]
    assert auto != [r.predicted for r in validate(ids=ids, policy="ecmp").rows]
