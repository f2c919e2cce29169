"""Validation against published measurements (reference_points.toml)."""

import json

import pytest
from click.testing import CliRunner

from cli.app import cli
from collectives.validate import TOLERANCE, default_points_path, validate


def test_shipped_reference_points_match_the_shared_copy(shared):
    assert default_points_path().read_text() == (shared / "data" / "reference_points.toml").read_text()


COLLECTIVE_IDS = ["h100x8-allreduce-ring", "h100x8-allreduce-nvls", "h200-allreduce-nvls-by-ranks",
                  "h200x8-allgather", "h200x8-reducescatter", "h100x8-alltoall"]


@pytest.mark.parametrize("pid", COLLECTIVE_IDS)
def test_collective_points_within_10_percent(pid):
    rows = validate(ids=[pid]).rows
    assert rows
    for r in rows:
        assert abs(r.rel_error) <= TOLERANCE["collective"] == 0.10, (r.id, r.predicted, r.measured)


def test_h100_ring_to_nvls_crossover_between_1_and_2_mib():
    [row] = validate(ids=["nccl-model-h100x8-crossover"]).rows
    assert 2**20 < row.predicted <= 2 * 2**20 and row.passed


def test_deepep_intranode_within_15_percent():
    rows = validate(ids=["deepep-h800-intranode-ep8"]).rows
    assert len(rows) == 2
    for r in rows:
        assert abs(r.rel_error) <= TOLERANCE["moe_alltoall"] == 0.15, (r.id, r.predicted, r.measured)


@pytest.fixture(scope="module")
def internode():
    return {r.id: r for r in validate(ids=["deepep-h800-internode"]).rows}


@pytest.mark.parametrize("ep", [16, 32, 64])
def test_deepep_internode_within_15_percent(internode, ep):
    r = internode[f"deepep-h800-internode@EP{ep}"]
    assert abs(r.rel_error) <= 0.15, (r.predicted, r.measured)


def test_validate_cli_json():
    r = CliRunner().invoke(cli, ["validate", "--json"])
    assert r.exit_code == 0
    data = json.loads(r.stdout)
    assert {"mean_abs_error", "max_abs_error", "rows"} <= set(data)
    ids = {row["id"] for row in data["rows"]}
    training = {row["id"]: row for row in data["training"]["rows"] if row["quantity"] == "TFLOPs/GPU"}
    assert "h100x8-allreduce-ring" in ids and "dsv3-gb300-256" in training
    assert training["dsv3-gb300-256"]["passed"] and set(data["training"]["summary"]) >= {"fit", "held-out"}


def test_validate_bad_file(tmp_path):
    bad = tmp_path / "x.toml"
    bad.write_text("this is not toml [")
    r = CliRunner().invoke(cli, ["validate", "--file", str(bad)])
    assert r.exit_code == 2 and "not valid TOML" in r.stderr
