"""Bad input, round 3: the leftovers that docs/robustness.md listed after round 2.

Same contract as rounds 1 and 2 (exit 0 or 2, no traceback, one ``error:`` line on failure).
"""

from __future__ import annotations

import json

import numpy as np
import pytest

from tests.test_bad_input import check, refused

A2A = ("run", "all_to_all", "--topo", "fat-tree", "--set", "hosts=16", "--set", "radix=8", "--size", "1MiB",
       "--json")
STEP = ("step", "--model", "qwen3-30b-a3b", "--system", "hgx-h100", "--gpus", "16", "--ep", "16",
        "--global-batch", "64", "--micro-batch", "1", "--seq-len", "1024", "--precision", "bf16")


@pytest.mark.parametrize("extra, needle", [
    (("--seed", "3"), "--seed"),                                   # auto routing, balanced tokens: no draw
    (("--seed", "3", "--routing", "spray"), "--seed"),
    (("--overlap", ""), "--overlap: empty"),                       # was: the default
    (("--overlap", "tp,tp"), "tp given twice"),                    # was accepted
    (("--overlap", "tp,"), "an empty name"),
])
def test_step_options_that_did_nothing(extra, needle):
    refused(*STEP, *extra, needle=needle)


def test_step_seed_refused_for_a_dense_model_even_with_sampled_routing():
    refused("step", "--model", "llama3-8b", "--system", "hgx-h100", "--gpus", "8", "--global-batch", "8",
            "--micro-batch", "1", "--seq-len", "1024", "--precision", "bf16", "--moe-routing", "skewed",
            "--seed", "2", needle="--seed")


def test_same_links_degraded_twice_is_refused():
    refused(*A2A, "--degrade", "spine 0=50%", "--degrade", "spine 0=20%", needle="same links")
    from fabric import SelectorError, apply_failures, compile_fabric
    from topologies.clos import fat_tree

    with pytest.raises(SelectorError, match="same links"):  # parsed tuples with one (interned) selector string
        apply_failures(compile_fabric(fat_tree(hosts=16, radix=8)),
                       degrade=[("spine 0", 0.5, None), ("spine 0", 0.2, None)])


def _time_us(*extra) -> float:
    r = check(*A2A, *extra, ok=(0,))
    return json.loads(r.stdout)[0]["time_us"]


def test_overlapping_degradations_apply_the_lower_capacity():
    # the cable leaf 0 - spine 0 is in both selectors: it runs at 20 %, the rest of spine 0 at 50 %
    from fabric import apply_failures, compile_fabric, resolve
    from topologies.clos import fat_tree

    cf = compile_fabric(fat_tree(hosts=16, radix=8))
    spine, cable = resolve(cf, "spine 0"), resolve(cf, "leaf 0 spine 0")
    rest = np.setdiff1d(spine, cable)
    assert len(cable) and len(rest)
    for order in (("spine 0=50%", "leaf 0 spine 0=20%"), ("leaf 0 spine 0=20%", "spine 0=50%")):
        cap = apply_failures(cf, degrade=order).link_capacity_Bps
        assert np.allclose(cap[cable], 0.2 * cf.link_nominal_Bps[cable], rtol=1e-12)
        assert np.allclose(cap[rest], 0.5 * cf.link_nominal_Bps[rest], rtol=1e-12)
    both = _time_us("--degrade", "spine 0=50%", "--degrade", "leaf 0 spine 0=20%")
    assert both == pytest.approx(_time_us("--degrade", "leaf 0 spine 0=20%", "--degrade", "spine 0=50%"), rel=1e-12)
    assert both >= _time_us("--degrade", "spine 0=50%") * (1 - 1e-12)


@pytest.mark.parametrize("sets, selector, needle", [
    ((), "plane 5 spine 0", "one plane"),                          # was "there is no spine 0"
    (("--set", "planes=2"), "plane 5 spine 0", "no plane 5"),
])
def test_plane_selectors_name_the_plane(sets, selector, needle):
    refused(*A2A, *sets, "--fail", selector, needle=needle)


def test_sweep_seed_where_nothing_draws_from_it(tmp_path):
    db = tmp_path / "s.sqlite"
    refused("sweep", "run", "all_reduce", "--topo", "nvl", "--set", "n=4", "--size", "1MiB", "--grid", "seed=1,2",
            "--db", str(db), needle="grid seed")
    refused("sweep", "run", "all_to_all", "--topo", "fat-tree", "--set", "hosts=16", "--set", "radix=8",
            "--size", "1MiB", "--grid", "seed=1,2", "--routing", "spray", "--db", str(db), needle="routing spray")
    assert not db.exists()


def test_sweep_db_in_a_missing_folder(tmp_path):
    db = tmp_path / "missing" / "s.sqlite"
    refused("sweep", "run", "all_reduce", "--topo", "nvl", "--set", "n=4", "--size", "1MiB", "--db", str(db),
            needle="does not exist")
    assert not db.parent.exists()



def test_step_seed_under_auto_routing_follows_the_fabrics_policy():
    # auto on a hashing fabric (GCP TCPXO: ECMP) uses the seed; on InfiniBand (d-mod-k) it draws nothing
    dense = ("step", "--model", "llama3-8b", "--system", "hgx-h100", "--gpus", "16", "--global-batch", "64",
             "--micro-batch", "1", "--seq-len", "1024", "--precision", "bf16", "--seed", "3")
    r = check(*dense, "--set", "scaleout=gcp-tcpxo", "--json")
    assert r.exit_code == 0 and json.loads(r.stdout)["policy"] == "ecmp"
    err = refused(*dense, "--set", "scaleout=quantum-2", needle="--seed")
    assert "auto (dmodk on this fabric)" in err
