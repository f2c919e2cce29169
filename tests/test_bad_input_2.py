"""Bad input, round 2: malformed and extreme inputs that the first round (test_bad_input.py) did not try.

Every invocation goes through the same contract check as round 1 (exit 0 or 2, no traceback, one
``error:`` line on failure, no control or format character in the output). Each table row is one
defect that round 2 found and fixed; docs/robustness.md lists them by class.
"""

from __future__ import annotations

import json
import time

import pytest

from tests.test_bad_input import ESC, check, refused

TINY = ("--topo", "nvl", "--set", "n=4")

# ---------------------------------------------------------------- models --model FILE.toml

_MODEL = {"name": '"tiny"', "source": '"t"', "n_layers": "2", "hidden": "64", "n_heads": "4", "n_kv_heads": "2",
          "head_dim": "16", "ffn_hidden": "128", "gated": "true", "vocab": "1000"}
_MOE = {"n_experts": "8", "topk": "2", "moe_ffn_hidden": "64"}


def _model_file(tmp_path, **fields) -> str:
    doc = {**_MODEL, **fields}
    p = tmp_path / "m.toml"
    p.write_text("".join(f"{k} = {v}\n" for k, v in doc.items() if v is not None))
    return str(p)


@pytest.mark.parametrize("fields, needle", [
    ({"n_layers": str(10**18)}, "n_layers"),          # was MemoryError (one layer-pattern entry per layer)
    ({"n_layers": "100000000"}, "n_layers"),          # was 15 s
    ({"hidden": str(10**30)}, "hidden"),              # was accepted: 3e33 parameters
    ({"ffn_hidden": "1" + "0" * 300}, "ffn_hidden"),  # was accepted: 2e303 FLOPs per token
    ({"vocab": str(10**40)}, "vocab"),
    ({"n_heads": "100000", "n_kv_heads": "100000"}, "n_heads"),
    ({"head_dim": str(1 << 40)}, "head_dim"),
    ({**_MOE, "n_experts": str(1 << 40)}, "n_experts"),
    ({**_MOE, "first_dense_layers": "1", "moe_layer_freq": "5"}, "no MoE layer"),  # was an MoE model without MoE
    ({**_MOE, "topk": "9"}, "topk"),
    ({"n_layers": "0"}, "n_layers"),
])
def test_bad_model_files(tmp_path, fields, needle):
    path = _model_file(tmp_path, **fields)
    refused("models", "--model", path, needle=needle)
    refused("models", "--model", path, "--json", needle=needle)


def test_deeply_nested_model_file_is_one_line(tmp_path):
    p = tmp_path / "deep.toml"
    p.write_text("a = " + "[" * 5000 + "]" * 5000)  # was RecursionError
    refused("models", "--model", str(p), needle="TOML")
    p.write_text('name = "tiny"\n[x]\n' + "a = " + "{b = " * 60 + "1" + "}" * 60)
    refused("models", "--model", str(p), needle="nested")


@pytest.mark.parametrize("value", ["\u0663", "1_000", " 7", str(10**30), "0", str(1 << 25)])
def test_models_seq_len_is_ascii_and_bounded(value):
    refused("models", "--seq-len", value, needle="seq")  # '٣' and '1_000' were read as 3 and 1000


def test_models_given_twice_is_refused_and_json_is_finite():  # round 6: refused (was: listed once)
    refused("models", "--model", "llama3-8b", "--model", "llama3-8b", "--json", needle="given twice")
    rows = json.loads(check("models", "--model", "llama3-8b", "--json", ok=(0,)).stdout)
    assert [r["name"] for r in rows] == ["llama3-8b"]
    err = refused("models", "--model", "x/\u202e[red]y\\[b].toml", needle="does not exist")
    assert "\\u202e[red]y" in err  # markup shown as typed, the override escaped


# ---------------------------------------------------------------- validate --file: malformed points

_C = 'id = "x"\nsystem = "hgx-h100"\ncollective = "all_reduce"\nalgorithm = "ring"\n'
_C1 = _C + "ranks = 8\nsize_bytes = 1048576\n"
_M = 'id = "m"\nsystem = "hgx-h800"\n'


def _points(tmp_path, text: str) -> str:
    p = tmp_path / "v.toml"
    p.write_text(text)
    return str(p)


@pytest.mark.parametrize("text, needle", [
    # integers: floats and booleans were truncated (1.5 -> 1 B, true -> 1 B, 8.7 ranks -> 8)
    ("[[collective]]\n" + _C + "ranks = 8\nsize_bytes = 1.5\nbusbw_GBps = 100", "size_bytes"),
    ("[[collective]]\n" + _C + "ranks = 8\nsize_bytes = true\nbusbw_GBps = 100", "size_bytes"),
    ("[[collective]]\n" + _C + "ranks = 8\nsize_bytes = 0\nbusbw_GBps = 100", "size_bytes"),
    ("[[collective]]\n" + _C + "ranks = 8\nsize_bytes = 1e300\nbusbw_GBps = 100", "size_bytes"),
    ("[[collective]]\n" + _C + "ranks = 8\nsize_bytes = 100000000000000000000\nbusbw_GBps = 100", "size_bytes"),
    ("[[collective]]\n" + _C + 'ranks = "8"\nsize_bytes = 1024\nbusbw_GBps = 100', "ranks"),
    # measurements: strings, booleans and infinity were read as numbers
    ("[[collective]]\n" + _C1 + 'busbw_GBps = "100"', "busbw_GBps"),
    ("[[collective]]\n" + _C1 + "busbw_GBps = inf", "busbw_GBps"),
    ("[[collective]]\n" + _C1 + "busbw_GBps = true", "busbw_GBps"),
    # unknown keys and bookkeeping keys were ignored
    ("[[collective]]\n" + _C1 + 'busbw_GBps = 100\nalgoritm = "tree"', "unknown key 'algoritm'"),
    ("[[collective]]\n" + _C1 + "busbw_GBps = 100\nsplit = 5", "split"),
    ("[[collective]]\n" + _C1 + 'busbw_GBps = 100\nsplit = "train"', "heldout"),
    ("[[collective]]\n" + _C1 + 'busbw_GBps = 100\nconsistency = "yes"', "consistency"),
    ("[[collective]]\n" + _C1 + 'busbw_GBps = 100\nsettings = "NCCL_ALGO=ring"', "settings"),
    ("[[collective]]\n" + _C1 + "busbw_GBps = 100\nscaleout = 5", "scaleout"),
    # two measurement forms: one was silently dropped
    ("[[collective]]\n" + _C1 + "busbw_GBps = 100\nsizes_and_busbw_GBps = [[1024, 100]]", "one measurement"),
    # sweeps of the wrong arity or with wrong element types, empty sweeps
    ("[[collective]]\n" + _C + "size_bytes = 1024\nranks_and_busbw_GBps = [[8]]", "row of 2"),
    ("[[collective]]\n" + _C + "size_bytes = 1024\nranks_and_busbw_GBps = [[8, 100, 3]]", "row of 2"),
    ("[[collective]]\n" + _C + "size_bytes = 1024\nranks_and_busbw_GBps = [8, 100]", "row of 2"),
    ("[[collective]]\n" + _C + "size_bytes = 1024\nranks_and_busbw_GBps = []", "non-empty"),
    ("[[collective]]\n" + _C + "size_bytes = 1024\nranks_and_busbw_GBps = [[8.5, 100]]", "[0][0]"),
    ("[[collective]]\n" + _C + "ranks = 8\nsizes_and_busbw_GBps = [[1.5, 100]]", "[0][0]"),
    ("[[collective]]\n" + _C + "ranks = 8\nsizes_and_busbw_GBps = [[1024, -3]]", "[0][1]"),
    ("[[collective]]\n" + _C + "ranks = 8\nsize_bytes = 1024\nalgorithms_and_busbw_GBps = [[5, 100]]", "algorithm"),
    ("[[collective]]\n" + _C + "size_bytes = 1024\nranks_algorithms_and_busbw_GBps = [[8, \"ring\"]]", "row of 3"),
    # ids: not a string (rendering crashed), twice
    ("[[collective]]\n" + _C1.replace('id = "x"', "id = 5") + "busbw_GBps = 1", "id must be"),
    ("[[collective]]\n" + _C1 + "busbw_GBps = 1\n[[collective]]\n" + _C1 + "busbw_GBps = 2", "twice"),
    # crossover-named point without a crossover window or a measurement: was IndexError
    ('[[collective]]\nid = "crossover-x"\nnote = "n"\nsystem = "hgx-h100"\nranks = 99\ncollective = "all_reduce"',
     "missing field"),
    # MoE points: fractional ep/experts were truncated, ep not a multiple of 8 was IndexError
    ("[[moe_alltoall]]\n" + _M + "ep = 8.9\ndispatch_GBps = 100\ncombine_GBps = 100", "ep"),
    ("[[moe_alltoall]]\n" + _M + "ep = 8\ndispatch_GBps = 100\ncombine_GBps = 100\nexperts = 8.5", "experts"),
    ("[[moe_alltoall]]\n" + _M + "ep_and_rdma_GBps = [[12, 50]]", "multiple of 8"),
    ("[[moe_alltoall]]\n" + _M + "ep_dispatch_combine_GBps = [[8, 100]]", "row of 3"),
    ("[[moe_alltoall]]\n" + _M + "ep = 8\ndispatch_GBps = 100\ncombine_GBps = 100\nmetric = 5", "metric"),
    ("[[moe_alltoall]]\n" + _M + "ep = 8\ndispatch_GBps = 100\ncombine_GBps = 100\ntopk = 9\nexperts = 8", "topk"),
    # training points in a user's file were skipped without a word (and the shipped ones reported instead)
    ('[[training]]\nid = "t"\ntokens_per_s_per_gpu = 5', "[[training]]"),
    # the empty-file message named a table that does not exist
    ("# nothing", "[[collective]]"),
])
def test_bad_validation_points(tmp_path, text, needle):
    refused("validate", "--file", _points(tmp_path, text), needle=needle)


def test_moe_point_fields_are_used_not_ignored(tmp_path):
    """topk/hidden/tokens of a MoE point were silently ignored (the defaults were run)."""
    base = "[[moe_alltoall]]\n" + 'id = "m"\nsystem = "hgx-h800"\nep = 8\ndispatch_GBps = 100\ncombine_GBps = 100\n'
    a = json.loads(check("validate", "--file", _points(tmp_path, base), "--json", ok=(0,)).stdout)
    b = json.loads(check("validate", "--file", _points(tmp_path, base + "topk = 2\nhidden = 1024\ntokens = 256\n"),
                         "--json", ok=(0,)).stdout)
    assert a["rows"][0]["predicted"] != b["rows"][0]["predicted"]


def test_shipped_points_pass_the_schema():
    import tomllib
    from pathlib import Path

    from collectives.points_schema import check_ids, check_point

    for name in ("reference_points.toml", "published_points.toml"):
        doc = tomllib.loads((Path(__file__).resolve().parents[1] / "collectives" / "data" / name).read_text())
        for kind, points in doc.items():
            for i, p in enumerate(points):
                check_point(kind, p, i)
        check_ids(p for points in doc.values() for p in points)


# ---------------------------------------------------------------- run, topo, bisect

@pytest.mark.parametrize("args, needle", [
    # a forced hierarchical algorithm inside one NVLink domain was reported as "hier(nvls+tree)" / "hier"
    (("run", "all_reduce", *TINY, "--size", "1MiB", "--algo", "hier"), "one domain"),
    (("run", "all_gather", "--topo", "hgx-h100", "--size", "1MiB", "--algo", "hier"), "one domain"),
    (("run", "moe_dispatch", *TINY, "--algo", "hier"), "one node"),
    # 0 bytes gave a 'nan' bound column
    (("run", "all_reduce", *TINY, "--size", "0B"), "0 bytes"),
    # link rates far outside any real port: 0.0 GB/s bisections and 10^10 us times
    (("bisect", "fat-tree", "--set", "hosts=16", "--set", "radix=8", "--set", "link=1e-300Gb/s"), "1 Gb/s"),
    (("run", "all_reduce", "--topo", "fat-tree", "--set", "hosts=16", "--set", "radix=8", "--set", "link=101Tb/s",
      "--size", "1MiB"), "100 Tb/s"),
])
def test_bad_run_and_topology_options(args, needle):
    refused(*args, needle=needle)


def test_spec_and_graph_files_with_absurd_link_rates(tmp_path):
    spec = tmp_path / "s.toml"
    spec.write_text('[fat_tree]\nhosts = 16\nradix = 8\nlink = "1e-300Gb/s"\n')
    refused("topo", "show", str(spec), needle="link")
    from topologies import build
    from topologies.export import to_json_dict

    for cap in (1e-300, 1e300):
        data = to_json_dict(build("nvl", {"n": 4}))
        data["links"][0]["capacity_Bps"] = cap
        g = tmp_path / "g.json"
        g.write_text(json.dumps(data))
        refused("bisect", str(g), needle="cable")


def test_export_names_and_stdout(tmp_path):
    spec = tmp_path / "s.toml"
    spec.write_text('preset = "nvl"\n')
    base = ("topo", "export", "nvl", "--set", "n=4")
    # JSON over a .toml spec (it was replaced), JSON in a .graphml file, a trailing slash (wrote a file 'out')
    refused(*base, "--format", "json", "-o", str(spec), needle="spec")
    assert spec.read_text() == 'preset = "nvl"\n'
    refused(*base, "--format", "json", "-o", str(tmp_path / "e.graphml"), needle="--format graphml")
    refused(*base, "--format", "graphml", "-o", str(tmp_path / "e.JSON"), needle="--format json")
    refused(*base, "--format", "json", "-o", str(tmp_path / "out") + "/", needle="directory")
    refused(*base, "--format", "json", "-o", str(tmp_path / "."), needle="directory")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["s.toml"]
    # '-' is standard output (it wrote a file named '-')
    r = check(*base, "--format", "json", "-o", "-", ok=(0,))
    assert json.loads(r.stdout)["nodes"] and "standard output" in r.stderr
    assert "<graphml" in check(*base, "--format", "graphml", "-o", "-", ok=(0,)).stdout


def test_round_two_inputs_are_deterministic():
    args = ("run", "moe_dispatch", "--topo", "hgx-h100", "--set", "domains=2", "--set", "scaleout=quantum-2",
            "--moe-routing", "skewed", "--seed", "7", "--tokens", "256", "--json")
    assert check(*args, ok=(0,)).stdout == check(*args, ok=(0,)).stdout


# ---------------------------------------------------------------- hypothesis: any TOML value in any field

from hypothesis import HealthCheck, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

_SETTINGS = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow,
                     HealthCheck.function_scoped_fixture], derandomize=True, database=None)
_TOML_VALUES = st.sampled_from([
    "0", "1", "-1", "2", "8", "3.5", "1e300", "nan", "inf", "-inf", "true", "false", '""', '"x"', '"8"', '"1GiB"',
    "[]", "[1]", "[[8, 100]]", "[[8]]", '[["ring", 1]]', "{}", "{a = 1}", str(10**30), '"\\u001b[2J"',
    '"[red]x"', '"\\u202e"',
])
_POINT = {"id": '"x"', "system": '"nvl"', "collective": '"all_reduce"', "algorithm": '"ring"', "ranks": "4",
          "size_bytes": "1024", "busbw_GBps": "100"}
_MOE_POINT = {"id": '"m"', "system": '"nvl"', "ep": "4", "experts": "8", "topk": "2", "tokens": "64",
              "dispatch_GBps": "100", "combine_GBps": "100", "routing": '"uniform"', "split": '"fit"',
              "consistency": "false"}


def _toml(table: str, doc: dict) -> str:
    return f"[[{table}]]\n" + "".join(f"{k} = {v}\n" for k, v in doc.items())


@_SETTINGS
@given(field=st.sampled_from(sorted(_POINT) + ["sizes_and_busbw_GBps", "ranks_and_busbw_GBps", "settings", "split"]),
       value=_TOML_VALUES)
def test_fuzz_collective_point_fields(tmp_path, field, value):
    doc = dict(_POINT, **{field: value})
    if field.endswith("_and_busbw_GBps"):
        doc.pop("busbw_GBps")
    p = tmp_path / "v.toml"
    p.write_text(_toml("collective", doc))
    check("validate", "--file", str(p))


@_SETTINGS
@given(field=st.sampled_from(sorted(_MOE_POINT) + ["hidden", "ep_dispatch_combine_GBps", "metric"]),
       value=_TOML_VALUES)
def test_fuzz_moe_point_fields(tmp_path, field, value):
    doc = dict(_MOE_POINT, **{field: value})
    if field == "ep_dispatch_combine_GBps":
        for k in ("ep", "dispatch_GBps", "combine_GBps"):
            doc.pop(k)
    p = tmp_path / "v.toml"
    p.write_text(_toml("moe_alltoall", doc))
    check("validate", "--file", str(p))


@_SETTINGS
@given(field=st.sampled_from(sorted(_MODEL) + ["n_experts", "topk", "moe_ffn_hidden", "attention", "mtp_layers",
                                               "first_dense_layers", "moe_layer_freq", "kv_lora_rank"]),
       value=_TOML_VALUES)
def test_fuzz_model_file_fields(tmp_path, field, value):
    check("models", "--model", _model_file(tmp_path, **{field: value}), "--json")


# ---------------------------------------------------------------- step (merged from the step branch)

_STEP = ("step", "--model", "llama3-8b", "--system", "hgx-h100", "--precision", "bf16", "--micro-batch", "1",
         "--seq-len", "4096", "--gpus", "16", "--global-batch", "64")


@pytest.mark.parametrize("extra, needle", [
    (("--tp", "\u0663"), "--tp"),                   # was read as 3
    (("--tp", "1_6"), "--tp"),                      # was read as 16
    (("--pp", "\u00b2"), "--pp"),
    (("--seed", "\u0663"), "--seed"),
    (("--seed", str(2**70)), "--seed"),             # unbounded
    (("--gpus-per-domain", "0"), "--gpus-per-domain"),  # was silently the default
    (("--trace", ""), "empty"),                     # was silently no trace
    (("--pp", "2", "--pp-layout", "Et*99999999999|t*16L"), "expands"),  # was OverflowError
    (("--pp", "2", "--pp-layout", "((t*1000)*1000)*1000"), "expands"),  # a 10^9-symbol layout
    (("--fail", "spine 99"), "[plane P]"),          # the message had literal backslashes: '\[plane P]'
])
def test_bad_step_options(extra, needle):
    err = refused(*_STEP, *extra, needle=needle)
    assert "\\[" not in err


def test_step_trace_never_replaces_special_files(tmp_path):
    import os
    import stat

    fifo = tmp_path / "t.json"
    os.mkfifo(fifo)
    refused(*_STEP, "--trace", str(fifo), needle="FIFO")   # was replaced by a regular file
    assert stat.S_ISFIFO(os.lstat(fifo).st_mode)
    if os.path.exists("/dev/null"):
        link = tmp_path / "null.json"
        link.symlink_to("/dev/null")  # run as root, --trace /dev/null replaced the device node
        refused(*_STEP, "--trace", str(link), needle="character device")
        assert os.path.islink(link) and stat.S_ISCHR(os.stat("/dev/null").st_mode)
    spec = tmp_path / "s.toml"
    spec.write_text('preset = "nvl"\n')
    refused(*_STEP, "--trace", str(spec), needle=".json")  # a trace written over a spec file
    assert spec.read_text() == 'preset = "nvl"\n'
    out = tmp_path / "ok.json"
    check(*_STEP, "--trace", str(out), ok=(0,))
    assert json.loads(out.read_text())


# ---------------------------------------------------------------- sweep (merged from the sweep branch)

_SWEEP = ("sweep", "run", "all_reduce", "--topo", "nvl", "--set", "n=4", "--size", "1MiB", "--jobs", "1")


@pytest.fixture(scope="module")
def sweep_db(tmp_path_factory):
    db = tmp_path_factory.mktemp("sweep") / "a.sqlite"
    check(*_SWEEP, "--grid", "algo=ring,tree", "--db", str(db), ok=(0,))
    return db


@pytest.mark.parametrize("args, needle", [
    (("--grid", "algo=ring", "--algo", "tree"), "given"),        # the grid silently won over --algo
    (("--grid", "algo=ring", "--db", ""), "empty"),              # SQLite's temporary database: results lost
    (("--grid", "algo=ring", "--jobs", "\u0663"), "--jobs"),     # was read as 3
    (("--grid", "algo=ring", "--jobs", "100000"), "--jobs"),
])
def test_bad_sweep_run_options(tmp_path, args, needle):
    if "--db" not in args:
        args = (*args, "--db", str(tmp_path / "x.sqlite"))
    refused(*_SWEEP, *args, needle=needle)


@pytest.mark.parametrize("args, needle", [
    (("--top", "\u0663"), "--top"),
    (("--sort", ""), "--sort"),       # was silently the default sort
    (("--columns", ",,"), "--columns"),
    (("--columns", ""), "--columns"),
    (("--plot", ""), "--plot"),       # was silently no plot
])
def test_bad_sweep_show_options(sweep_db, args, needle):
    refused("sweep", "show", "--db", str(sweep_db), *args, needle=needle)


def test_sweep_export_never_destroys_the_database(sweep_db, tmp_path):
    before = sweep_db.read_bytes()
    refused("sweep", "export", "--db", str(sweep_db), "--format", "json", "-o", str(sweep_db), needle="sqlite")
    link = tmp_path / "same.json"
    link.symlink_to(sweep_db)  # the --db under another name: was overwritten with JSON
    refused("sweep", "export", "--db", str(sweep_db), "--format", "json", "-o", str(link), needle="--db itself")
    refused("sweep", "export", "--db", str(sweep_db), "--format", "csv", "-o", str(tmp_path / "x.json"),
            needle="--format csv")
    refused("sweep", "export", "--db", str(sweep_db), "--format", "csv", "-o", "", needle="empty")
    assert sweep_db.read_bytes() == before
    out = tmp_path / f"a{ESC}[2J.csv"
    r = check("sweep", "export", "--db", str(sweep_db), "--format", "csv", "-o", str(out), ok=(0,))
    assert "\\x1b[2J" in r.stderr and out.read_text().count("\n") == 3


@pytest.mark.parametrize("size", ["0B", "1e200B", "0"])
def test_sweep_sizes_are_bounded_like_run(tmp_path, size):
    """sweep bypassed run's size checks: a 0-byte point (0/0 bandwidth) and a 10^200-byte one were evaluated."""
    refused("sweep", "run", "all_reduce", "--topo", "nvl", "--set", "n=4", "--jobs", "1", "--grid",
            f"size=1MiB,{size}", "--db", str(tmp_path / "x.sqlite"), needle="1 PiB")
    assert not (tmp_path / "x.sqlite").exists()


def test_one_message_size_bound():
    from cli.run import MAX_SIZE_BYTES
    from collectives.points_schema import MAX_SIZE_BYTES as points_max
    from topologies.limits import MAX_MESSAGE_BYTES

    assert MAX_SIZE_BYTES == points_max == MAX_MESSAGE_BYTES
