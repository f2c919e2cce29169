"""Robustness round 5 (docs/robustness.md): sizes as plain byte counts, and message wording.

Each test fails on the code before the round: ``parse_size("4096")`` was refused although the docs and the
``--memory-limit`` message said sizes may be a number of bytes, and a bad ratio list was "not a valid ratios".
"""
import pytest
from click.testing import CliRunner

from cli.app import cli
from topologies.errors import FabricEmuError
from topologies.units import parse_size, parse_size_range


@pytest.mark.parametrize("text, want", [("4096", 4096), (" 4096 ", 4096), ("1e9", 10**9), ("0", 0), (4096, 4096)])
def test_a_plain_number_is_bytes(text, want):
    assert parse_size(text) == want


@pytest.mark.parametrize("text", ["4096.5", "-1", "nan", "inf", "1k", "1e400", "", "0x10"])
def test_bad_sizes_are_still_refused(text):
    with pytest.raises(FabricEmuError):
        parse_size(text, field="--size")


def test_a_plain_byte_range_reads_as_nccl_tests_does():
    assert parse_size_range("1024:8192") == [1024, 2048, 4096, 8192]


def test_cli_size_in_bytes_equals_the_same_size_with_a_unit():
    runner = CliRunner()
    args = ["run", "all_to_all", "--topo", "fat-tree", "--set", "hosts=16", "--json"]
    plain = runner.invoke(cli, args + ["--size", "65536"])
    unit = runner.invoke(cli, args + ["--size", "64KiB"])
    assert plain.exit_code == 0 and plain.output == unit.output


def test_a_bad_ratio_list_is_named_in_plain_words():
    res = CliRunner().invoke(cli, ["run", "all_to_all", "--topo", "fat-tree", "--set", "hosts=16",
                                   "--set", "oversubscription=nan", "--size", "1MiB"])
    assert res.exit_code == 2
    assert "not a valid ratio list" in res.output and "valid ratios" not in res.output
