"""Robustness round 8 (docs/robustness.md, "Round 8"): bad input from a new user's point of view.

Each test fails on the code before the round.
"""
import pytest
from click.testing import CliRunner

from cli.app import cli
from topologies.errors import FabricEmuError
from topologies.units import parse_bandwidth, parse_size, parse_size_range


def _refused(args, needle):
    res = CliRunner().invoke(cli, args)
    assert res.exit_code == 2, res.output
    lines = [ln for ln in res.output.splitlines() if ln.strip()]
    assert len(lines) == 1 and lines[0].startswith("error:") and needle in lines[0], res.output
    return lines[0]


@pytest.mark.parametrize("parse, text", [(parse_size, "\uff11KiB"), (parse_size, "\u0664096"),
                                         (parse_bandwidth, "\uff14" "00Gb/s"), (parse_size_range, "1KiB:1MiB:x\u0663")])
def test_sizes_and_rates_take_ascii_digits_only(parse, text):
    # int()/float() read fullwidth and Arabic-Indic digits, and \d matches them: '１KiB' ran as 1 KiB
    with pytest.raises(FabricEmuError):
        parse(text)


def test_a_degradation_in_non_ascii_digits_is_refused():
    _refused(["run", "all_reduce", "--topo", "hgx-h100", "--degrade", "gpu 0=\u0665" "0%"], "degradation")
