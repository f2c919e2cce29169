"""``run --nccl-version``, ``--nvls/--no-nvls`` and ``--dispatch-dtype``: they reach the model, and are refused
where they would be ignored."""

import json

import pytest
from click.testing import CliRunner

from cli.app import cli
from collectives import nccl_model as nm

TWO_H100 = ["--topo", "hgx-h100", "--set", "domains=2", "--set", "scaleout=quantum-2-nosharp", "--set", "nic=ConnectX-7"]


def _run(*args):
    r = CliRunner().invoke(cli, ["run", *args, "--json"])
    assert r.exit_code == 0, r.output
    return json.loads(r.stdout)


def test_nccl_version_selects_the_release_tables():
    # NVLSTree on 2 x 8 H100 is held to nChannels x perChMaxNVLSTreeBw from 2.21.5 on, not before (NCCL's
    # 128 KiB NVLS chunk; tests/test_fidelity_net2.py has the mechanism)
    cap_GBps = 8 * nm.PER_CH_MAX_NVLS_TREE_GBPS[2][1]
    old, = _run("all_reduce", *TWO_H100, "--size", "8GiB", "--nccl-version", "2.20.3")
    new, = _run("all_reduce", *TWO_H100, "--size", "8GiB", "--nccl-version", "v2.28")
    default, = _run("all_reduce", *TWO_H100, "--size", "8GiB")
    assert old["nccl_algorithm"] == new["nccl_algorithm"] == "NVLSTree"
    assert new["busbw_GBps"] <= cap_GBps * (1 + 1e-9) < old["busbw_GBps"]
    assert default == new


def test_no_nvls_takes_nvls_out_of_nccls_choice():
    on, = _run("all_reduce", "--topo", "hgx-h100", "--size", "64MiB")
    off, = _run("all_reduce", "--topo", "hgx-h100", "--size", "64MiB", "--no-nvls")
    assert on["nccl_algorithm"] == "NVLS" and off["nccl_algorithm"] not in ("NVLS", "NVLSTree")
    explicit, = _run("all_reduce", "--topo", "hgx-h100", "--size", "64MiB", "--nvls")
    assert explicit == on


def test_bf16_dispatch_moves_2_bytes_a_value_against_fp8_with_scales():
    fp8, = _run("moe_dispatch", "--topo", "hgx-h100", "--moe-routing", "uniform")
    bf16, = _run("moe_dispatch", "--topo", "hgx-h100", "--moe-routing", "uniform", "--dispatch-dtype", "bf16")
    assert bf16["time_us"] > fp8["time_us"]
    # the same tokens (same seed); per token FP8 data + one FP32 scale per 128 values against 2 bytes a value
    hidden = 7168

    def logical(r):
        return r["algbw_GBps"] * r["time_us"]

    assert logical(bf16) / logical(fp8) == pytest.approx(2 * hidden / (hidden + hidden // 128 * 4), rel=1e-9)


@pytest.mark.parametrize("args, needle", [
    (["all_reduce", "--topo", "hgx-h100", "--nccl-version", "2.17.3"], "--nccl-version: '2.17.3' is older than 2.18.0"),
    (["all_reduce", "--topo", "hgx-h100", "--nccl-version", "3.1"], "--nccl-version: '3.1' is not an NCCL release"),
    (["all_reduce", "--topo", "hgx-h100", "--nccl-version", "2.27.3-1"], "is not an NCCL release"),
    (["moe_dispatch", "--topo", "hgx-h100", "--nccl-version", "2.27.3"], "--nccl-version: selects NCCL's tuning"),
    (["all_to_all", "--topo", "hgx-h100", "--no-nvls"], "--nvls/--no-nvls: applies to all_reduce"),
    (["all_reduce", "--topo", "hgx-h100", "--no-nvls", "--algo", "nvls"], "cannot go with --algo nvls"),
    (["moe_combine", "--topo", "hgx-h100", "--dispatch-dtype", "bf16"], "--dispatch-dtype: applies only to moe_dispatch"),
    (["all_reduce", "--topo", "hgx-h100", "--dispatch-dtype", "bf16"], "--dispatch-dtype: applies only"),
])
def test_refused_in_one_line(args, needle):
    r = CliRunner().invoke(cli, ["run", *args])
    assert r.exit_code == 2 and needle in r.stderr and len(r.stderr.strip().splitlines()) == 1, r.stderr


def _sweep(tmp_path, *args):
    db = str(tmp_path / "s.sqlite")
    r = CliRunner().invoke(cli, ["sweep", "run", *args, "--db", db, "--jobs", "1", "--json"])
    assert r.exit_code == 0, r.stderr
    r = CliRunner().invoke(cli, ["sweep", "show", "--db", db, "--json"])
    assert r.exit_code == 0, r.stderr
    return json.loads(r.stdout)


def test_sweep_takes_the_same_nccl_options_as_run(tmp_path):
    rows = _sweep(tmp_path, "all_reduce", "--topo", "hgx-h100", "--size", "64MiB", "--grid", "nvls=true,false",
                  "--grid", "nccl_version=2.20.3,2.28")
    assert len(rows) == 4 and {(bool(r["nvls"]), r["nccl_version"]) for r in rows} == {
        (True, "2.20.3"), (True, "2.28.0"), (False, "2.20.3"), (False, "2.28.0")}
    for r in rows:
        args = ["all_reduce", "--topo", "hgx-h100", "--size", "64MiB", "--nccl-version", r["nccl_version"]]
        (one,) = _run(*args, "--nvls" if r["nvls"] else "--no-nvls")  # stored as 1 / 0
        assert r["busbw_GBps"] == pytest.approx(one["busbw_GBps"], rel=1e-12)
    (tmp_path / "b").mkdir()
    moe = _sweep(tmp_path / "b", "moe_dispatch", "--topo", "hgx-h100", "--moe-routing", "uniform",
                 "--grid", "dispatch_dtype=fp8,bf16")
    time_us = {r["dispatch_dtype"]: r["time_us"] for r in moe}
    assert set(time_us) == {"fp8", "bf16"} and time_us["bf16"] > time_us["fp8"]


@pytest.mark.parametrize("args, needle", [
    (["all_to_all", "--topo", "hgx-h100", "--size", "1MiB", "--grid", "nvls=true,false"], "nvls: applies only to"),
    (["all_reduce", "--topo", "hgx-h100", "--size", "1MiB", "--grid", "dispatch_dtype=bf16"], "dispatch_dtype: applies"),
    (["all_reduce", "--topo", "hgx-h100", "--size", "1MiB", "--nccl-version", "2.17"], "nccl_version: '2.17' is older"),
    (["all_reduce", "--topo", "hgx-h100", "--size", "1MiB", "--no-nvls", "--algo", "nvls"], "cannot go with algo nvls"),
])
def test_sweep_refuses_them_where_run_does(tmp_path, args, needle):
    r = CliRunner().invoke(cli, ["sweep", "run", *args, "--db", str(tmp_path / "x.sqlite"), "--jobs", "1"])
    assert r.exit_code == 2 and needle in r.stderr and len(r.stderr.strip().splitlines()) == 1, r.stderr
    assert not (tmp_path / "x.sqlite").exists()
