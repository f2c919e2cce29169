"""Robustness round 8 (docs/robustness.md, "Round 8"): bad input from a new user's point of view.

Each test fails on the code before the round.
"""
import pytest
from click.testing import CliRunner

from cli.app import cli
from tests.test_bad_input import refused
from topologies.errors import FabricEmuError
from topologies.units import parse_bandwidth, parse_size, parse_size_range


def _refused(args, needle):
    """The one error line of ``args`` (:func:`tests.test_bad_input.refused`: exit 2, one line, no traceback)."""
    return refused(*args, needle=needle).strip()


@pytest.mark.parametrize("parse, text", [(parse_size, "\uff11KiB"), (parse_size, "\u0664096"),
                                         (parse_bandwidth, "\uff14" "00Gb/s"), (parse_size_range, "1KiB:1MiB:x\u0663")])
def test_sizes_and_rates_take_ascii_digits_only(parse, text):
    # int()/float() read fullwidth and Arabic-Indic digits, and \d matches them: '１KiB' ran as 1 KiB
    with pytest.raises(FabricEmuError):
        parse(text)


def test_a_degradation_in_non_ascii_digits_is_refused():
    _refused(["run", "all_reduce", "--topo", "hgx-h100", "--degrade", "gpu 0=\u0665" "0%"], "degradation")


def test_topk_of_all_experts_finishes_fast():
    # top-256 of 256 experts: the rejection draw was quadratic in k (over a minute for 32,768 tokens)
    import time

    t0 = time.perf_counter()
    res = CliRunner().invoke(cli, ["run", "moe_dispatch", "--topo", "hgx-h100", "--topk", "256", "--json"])
    assert res.exit_code == 0, res.output
    assert time.perf_counter() - t0 < 15


def test_the_race_has_the_law_of_the_rejection_draw():
    import numpy as np

    from collectives.token_routing import _race, alias_table, sample_distinct

    w = np.array([5.0, 1, 1, 0.5, 3, 0, 2, 0.2])
    n, k = 200_000, 3
    a = sample_distinct(np.random.default_rng(1), alias_table(w), n, k)
    b = _race(np.random.default_rng(2), w, n, k)
    assert (np.diff(b, axis=1) > 0).all() and not (b == 5).any()  # distinct, ascending, zero weight never drawn
    fa, fb = (np.bincount(x.ravel(), minlength=8) / n for x in (a, b))
    assert np.abs(fa - fb).max() < 0.006
    full = _race(np.random.default_rng(0), w[w > 0], 4, 7)
    assert (full == np.arange(7)).all()


def test_the_shipped_topk_keeps_its_draw():
    import numpy as np

    from collectives.token_routing import RACE_MIN_K2_PER_EXPERT, alias_table, sample_distinct

    assert 8 * 8 <= RACE_MIN_K2_PER_EXPERT * 256 and 2 * 2 <= RACE_MIN_K2_PER_EXPERT * 8  # DeepSeek-V3, Mixtral
    w = np.ones(256)
    a = sample_distinct(np.random.default_rng(3), alias_table(w), 1000, 8)
    assert a.shape == (1000, 8)


def test_an_oversized_grid_is_refused_before_its_rows_are_built():
    # 200 x 200 x 200 values built 8 million rows (minutes, gigabytes) before the limit refused them
    import time

    from workloads.sweep.grid import expand

    axes = [("size", tuple(f"{i}KiB" for i in range(1, 201))), ("ranks", tuple(str(i) for i in range(2, 202))),
            ("groups", tuple(str(i) for i in range(1, 201)))]
    t0 = time.perf_counter()
    with pytest.raises(FabricEmuError, match="8,000,000 points exceed"):
        expand({"op": "all_reduce", "topo": "hgx-h100"}, axes)
    assert time.perf_counter() - t0 < 2


def test_planning_a_sweep_reads_the_package_version_once():
    from workloads.sweep import params

    assert hasattr(params.package_version, "cache_info")
    params.package_version()
    before = params.package_version.cache_info().misses
    params.package_version()
    assert params.package_version.cache_info().misses == before


_COLL = ('[[collective]]\nid="p1"\nsystem="hgx-h100"\nranks=8\ncollective="all_reduce"\nalgorithm="ring"\n'
         'size_bytes=1048576\nbusbw_GBps=100\n')
_MOE = ('[[moe_alltoall]]\nid="m1"\nsystem="hgx-h100"\nep=8\nexperts=256\ntopk=8\ntokens=4096\nhidden=7168\n'
        'dispatch_GBps=100\ncombine_GBps=100\n')


@pytest.mark.parametrize("text, needle", [
    (_MOE.replace("ep=8", "ep=9"), "ep = 9 is more than the 8 GPUs"),              # was an IndexError traceback
    (_MOE + 'metric="rmda"\n', "metric = 'rmda': must be one of"),                 # was "not modelled", exit 0
    (_COLL.replace("hgx-h100", "hgx-h10"), "no point could be predicted"),          # was "0 points, 0.0%", exit 0
])
def test_validation_files_that_predict_nothing_or_crash_are_refused(tmp_path, text, needle):
    f = tmp_path / "v.toml"
    f.write_text(text)
    _refused(["validate", "--file", str(f)], needle)


def test_a_validation_file_with_a_predictable_point_still_runs(tmp_path):
    f = tmp_path / "v.toml"
    f.write_text(_COLL + _COLL.replace('"p1"', '"p2"').replace("hgx-h100", "hgx-h10"))
    res = CliRunner().invoke(cli, ["validate", "--file", str(f), "--json"])
    assert res.exit_code == 0, res.output


@pytest.mark.parametrize("var, value", [("FABRIC_EMU_KERNELS", "numpi"), ("FABRIC_EMU_MALLOC", "sys")])
def test_a_misspelt_environment_variable_is_refused(monkeypatch, tmp_path, var, value):
    # both were read as unset (auto / reuse freed memory) without a word
    monkeypatch.setenv(var, value)
    _refused(["run", "all_reduce", "--topo", "hgx-h100", "--size", "1MiB"], var)
    db = tmp_path / "s.db"
    _refused(["sweep", "run", "all_reduce", "--topo", "hgx-h100", "--grid", "size=1KiB,2KiB", "--db", str(db)], var)
    assert not db.exists()


@pytest.mark.parametrize("value", ["", "NumPy", " auto "])
def test_kernels_variable_spellings_still_run(monkeypatch, value):
    from fabric.kernels import mode

    monkeypatch.setenv("FABRIC_EMU_KERNELS", value)
    assert mode() in ("auto", "numpy")


def test_the_same_svg_plot_twice_gives_the_same_bytes(tmp_path):
    pytest.importorskip("matplotlib")
    out = []
    for name in ("a.svg", "b.svg"):
        res = CliRunner().invoke(cli, ["run", "all_reduce", "--topo", "hgx-h100", "--sizes", "1KiB:64KiB",
                                       "--plot", str(tmp_path / name)])
        assert res.exit_code == 0, res.output
        out.append((tmp_path / name).read_bytes())
    assert out[0] == out[1]  # matplotlib drew random clip-path ids


_STEP = ["step", "--model", "llama3-8b", "--system", "hgx-h100", "--global-batch", "16", "--micro-batch", "1",
         "--seq-len", "4096", "--precision", "bf16"]


def test_placement_spread_inside_one_domain_is_refused():
    # the same step as megatron placement, only the label differed
    _refused(_STEP + ["--gpus", "8", "--placement", "spread"], "--placement spread: the job fits in one NVLink domain")


def test_placement_spread_over_two_domains_still_runs():
    res = CliRunner().invoke(cli, _STEP + ["--gpus", "16", "--placement", "spread", "--json"])
    assert res.exit_code == 0, res.output


@pytest.mark.parametrize("version", ["2.021", "2.21.05", "02.21"])
def test_nccl_version_with_leading_zeros_is_refused(version):
    # '2.021' was read as 2.21: NCCL releases carry no leading zeros
    _refused(["run", "all_reduce", "--topo", "hgx-h100", "--size", "1MiB", "--nccl-version", version],
             "--nccl-version")


def test_nccl_version_of_a_real_release_still_runs():
    res = CliRunner().invoke(cli, ["run", "all_reduce", "--topo", "hgx-h100", "--size", "1MiB", "--nccl-version",
                                   "2.20.3", "--json"])
    assert res.exit_code == 0, res.output


def test_an_overlap_list_of_empty_names_says_so_once():
    # "," read as two empty names: "an empty name, an empty name not among ..."
    from workloads.step import parse_overlap

    for text in (",", "tp,,ep", "tp,"):
        with pytest.raises(FabricEmuError, match="an empty name") as info:
            parse_overlap(text, moe=True)
        assert str(info.value).count("empty name") == 1
    with pytest.raises(FabricEmuError) as info:
        parse_overlap("foo,foo,tp", moe=True)
    assert str(info.value).count("foo") == 1
