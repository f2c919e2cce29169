"""CollNet (IB SHARP) only when the job enables it, as NCCL does (issue 8, round 5).

NCCL considers CollNetDirect / CollNetChain and multi-node NVLS (NVLS + SHARP) only with
``NCCL_COLLNET_ENABLE=1`` and the SHARP plugin (NCCL env docs: "Default is 0"). On a fabric whose
switches can reduce, NCCL's default run therefore uses NVLSTree / Tree / Ring across nodes.
"""

import json

import pytest
from click.testing import CliRunner

from cli.app import cli
from collectives import Collective, run
from collectives.runner import planner_for
from collectives.validate import _collective_options
from fabric import Router, compile_fabric
from topologies import build

SHARP_IN_NAME = ("CollNetDirect", "CollNetChain")
FOUR_H100 = ["--topo", "hgx-h100", "--set", "domains=4", "--set", "scaleout=quantum-2"]


@pytest.fixture(scope="module")
def sharp_fabric():
    return Router(compile_fabric(build("hgx-h100", {"domains": "4", "scaleout": "quantum-2"})))


def _uses_sharp(res) -> bool:
    return "sharp" in res.algorithm or res.nccl_algorithm in SHARP_IN_NAME


@pytest.mark.parametrize("size", [1 << 20, 64 << 20, 4 << 30])
def test_default_all_reduce_on_sharp_switches_runs_no_collnet(sharp_fabric, size):
    res, = run(sharp_fabric, [Collective("all_reduce", tuple(range(32)), size)])
    assert not _uses_sharp(res), (res.algorithm, res.nccl_algorithm)


def test_default_matches_the_same_switches_without_sharp(sharp_fabric):
    # NCCL_COLLNET_ENABLE=0 leaves the switches' reduction unused: the same result as the no-SHARP fabric
    nosharp = Router(compile_fabric(build("hgx-h100", {"domains": "4", "scaleout": "quantum-2-nosharp"})))
    op = Collective("all_reduce", tuple(range(32)), 4 << 30)
    a, = run(sharp_fabric, [op])
    b, = run(nosharp, [op])
    assert (a.algorithm, a.nccl_algorithm) == (b.algorithm, b.nccl_algorithm)
    assert a.time_s == pytest.approx(b.time_s, rel=1e-12)


def test_collnet_on_lets_nccl_choose_sharp(sharp_fabric):
    on, = run(sharp_fabric, [Collective("all_reduce", tuple(range(32)), 4 << 30, options={"collnet": True})])
    off, = run(sharp_fabric, [Collective("all_reduce", tuple(range(32)), 4 << 30)])
    assert _uses_sharp(on)
    # the in-network reduction halves what each NIC carries: faster than NCCL's default at 4 GiB
    assert on.time_s < off.time_s


def test_collnet_option_needs_sharp_switches():
    nosharp = Router(compile_fabric(build("hgx-h100", {"domains": "4", "scaleout": "quantum-2-nosharp"})))
    op = Collective("all_reduce", tuple(range(32)), 4 << 30, options={"collnet": True})
    assert not planner_for(nosharp).collnet(op)
    res, = run(nosharp, [op])
    assert not _uses_sharp(res)


def test_explicit_sharp_still_forces_it(sharp_fabric):
    forced, = run(sharp_fabric, [Collective("all_reduce", tuple(range(32)), 1 << 30, "sharp")])
    hier, = run(sharp_fabric, [Collective("all_reduce", tuple(range(32)), 1 << 30, "hier",
                                          options={"hier": {"intra": "nvls", "inter": "sharp"}})])
    assert forced.algorithm == "hier(ring+sharp)" and forced.nccl_algorithm == "CollNetDirect"
    assert hier.algorithm == "hier(nvls+sharp)"


def test_nvls_across_nodes_pairs_with_sharp_only_with_collnet(sharp_fabric):
    # NCCL's multi-node NVLS is NVLS + CollNet; without CollNet it runs NVLSTree
    off, = run(sharp_fabric, [Collective("all_reduce", tuple(range(32)), 1 << 30, "nvls")])
    on, = run(sharp_fabric, [Collective("all_reduce", tuple(range(32)), 1 << 30, "nvls", options={"collnet": True})])
    assert off.algorithm == "hier(nvls+tree)" and on.algorithm == "hier(nvls+sharp)"


def test_validation_points_read_the_jobs_setting():
    assert _collective_options({"sharp": "on (IB SHARP)"}).get("collnet") is True
    assert _collective_options({"NCCL_COLLNET_ENABLE": "1"}).get("collnet") is True
    assert "collnet" not in _collective_options({"sharp": "off"})
    assert "collnet" not in _collective_options({})


def _cli(*args):
    return CliRunner().invoke(cli, ["run", *args])


def test_cli_collnet_flag_reaches_the_choice():
    off = _cli("all_reduce", *FOUR_H100, "--size", "4GiB", "--json")
    on = _cli("all_reduce", *FOUR_H100, "--size", "4GiB", "--collnet", "--json")
    no = _cli("all_reduce", *FOUR_H100, "--size", "4GiB", "--no-collnet", "--json")
    assert off.exit_code == on.exit_code == no.exit_code == 0, (off.output, on.output, no.output)
    (a,), (b,), (c,) = json.loads(off.stdout), json.loads(on.stdout), json.loads(no.stdout)
    assert "sharp" not in a["algorithm"] and "sharp" in b["algorithm"] and a == c
    assert b["busbw_GBps"] > a["busbw_GBps"]


@pytest.mark.parametrize("args, needle", [
    (["all_to_all", *FOUR_H100, "--collnet"], "--collnet/--no-collnet: applies to all_reduce"),
    (["all_reduce", *FOUR_H100, "--no-collnet", "--algo", "sharp"], "cannot go with --algo sharp"),
    (["all_reduce", "--topo", "hgx-h100", "--set", "domains=2", "--set", "scaleout=quantum-2-nosharp", "--collnet"],
     "has no switches with SHARP"),
    (["all_reduce", *FOUR_H100, "--ranks", "8", "--collnet"], "share one NVLink domain"),
])
def test_cli_refuses_collnet_where_it_is_ignored(args, needle):
    r = _cli(*args)
    lines = r.output.strip().splitlines()  # (a "building ..." progress line may come first)
    assert r.exit_code == 2 and needle in lines[-1], r.output
    assert [ln for ln in lines if ln.startswith("error")] == lines[-1:]
