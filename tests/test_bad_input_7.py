"""Robustness round 7 (docs/robustness.md, "Round 7"): repeated values, read-only outputs, degradation wording.

Each test fails on the code before the round: a repeated ``--id`` / ``--model`` / grid value was run once
without a word, ``-o`` replaced a file made read-only (the rename needs only the folder to be writable),
and ``'-1%'`` was "not a number".
"""
import os
import stat

import pytest
from click.testing import CliRunner

from cli.app import cli
from tests.test_bad_input import refused
from fabric.failures import parse_degradation
from topologies.errors import FabricEmuError
from workloads.sweep.execute import plan_sweep


def _refused(args, needle):
    """The one error line of ``args`` (:func:`tests.test_bad_input.refused`: exit 2, one line, no traceback)."""
    return refused(*args, needle=needle).strip()


@pytest.mark.parametrize("values, needle", [("1KiB,1KiB", "'1KiB' is listed twice"),
                                            ("1KiB,1024B", "'1KiB' and '1024B' are the same value"),
                                            ("1KiB, 1KiB", "listed twice")])
def test_a_grid_value_listed_twice_is_refused_and_no_database_is_made(tmp_path, values, needle):
    db = tmp_path / "s.db"
    line = _refused(["sweep", "run", "all_reduce", "--topo", "hgx-h100", "--grid", f"size={values}",
                     "--db", str(db)], needle)
    assert "--grid size" in line
    assert not db.exists()


def test_grid_routing_twice_is_refused_in_the_library():
    with pytest.raises(FabricEmuError, match="--grid routing: 'ecmp' is listed twice"):
        plan_sweep("all_reduce", {"topo": "hgx-h100", "size": "1MiB"}, [("routing", ("ecmp", "ecmp"))])


def test_distinct_grid_values_still_run():
    plan = plan_sweep("all_reduce", {"topo": "hgx-h100"}, [("size", ("1KiB", "2KiB"))])
    assert len(plan.points) == 2


def test_validate_id_given_twice_is_refused():
    _refused(["validate", "--id", "h100x8-allreduce-ring", "--id", "h100x8-allreduce-ring"],
             "--id 'h100x8-allreduce-ring': given twice")


def test_models_model_given_twice_is_refused():
    _refused(["models", "--model", "llama3-8b", "--model", " llama3-8b", "--json"], "--model 'llama3-8b': given twice")


def test_a_read_only_output_file_is_kept(tmp_path):
    out = tmp_path / "g.json"
    out.write_text("keep me\n")
    out.chmod(stat.S_IRUSR | stat.S_IRGRP | stat.S_IROTH)
    _refused(["topo", "export", "hgx-h100", "--format", "json", "-o", str(out)], "is read-only")
    assert out.read_text() == "keep me\n"
    assert sorted(os.listdir(tmp_path)) == ["g.json"]  # no temporary file left


def test_a_writable_output_file_is_still_replaced(tmp_path):
    out = tmp_path / "g.json"
    out.write_text("old\n")
    res = CliRunner().invoke(cli, ["topo", "export", "hgx-h100", "--format", "json", "-o", str(out)])
    assert res.exit_code == 0, res.output
    assert out.read_text().startswith("{")


@pytest.mark.parametrize("value", ["-1%", "1e400%", "-0.5"])
def test_a_negative_degradation_is_not_called_not_a_number(value):
    with pytest.raises(FabricEmuError) as exc:
        parse_degradation(f"spine 0={value}")
    assert "not a number" not in str(exc.value) and "between 0% and 100%" in str(exc.value)


def test_zipped_axes_may_repeat_a_value():
    plan = plan_sweep("all_reduce", {"topo": "hgx-h100"}, [], [("size", ("1KiB", "1KiB", "2KiB")),
                                                              ("algo", ("ring", "tree", "ring"))])
    assert len(plan.points) == 3
