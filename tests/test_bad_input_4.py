"""Bad input, round 4: a fuzz driver over every option of every command, and the defects it and a
hand-made sweep of hostile input found (each row of the tables below failed on the code before).

The driver (:func:`test_fuzz_every_option`) takes one cheap valid invocation per command, reads the
command's options from click itself (so an option added later is fuzzed too), and appends each
option with values a hostile but realistic user types: wrong units and spellings, NaN, infinity,
huge, negative and empty values, escapes, paths that cannot be written. Each case is run in-process
(click's CliRunner) in an empty directory and must end in exit status 0 or 2, never an uncaught
exception; on 2 with exactly one ``error:`` line on stderr, nothing on stdout and no file written;
on 0 with ``--json`` output whose numbers are finite and whose times, sizes and bandwidths are not
negative. The cases are drawn from a fixed seed and bounded (a few seconds on two cores).
"""

from __future__ import annotations

import json
import math
import os
import random
import re
import subprocess
import sys

import click
import pytest
from click.testing import CliRunner

from cli.app import cli
from tests.test_bad_input import ESC, RLO, TINY, _unsafe, check, refused

STEP = ("step", "--model", "llama3-8b", "--system", "hgx-h100", "--gpus", "8", "--global-batch", "8",
        "--micro-batch", "1", "--seq-len", "1024", "--precision", "bf16")
MOE_STEP = ("step", "--model", "qwen3-30b-a3b", "--system", "hgx-h100", "--gpus", "16", "--ep", "16",
            "--global-batch", "64", "--micro-batch", "1", "--seq-len", "1024", "--precision", "bf16")

_TWO_NODES = ("--topo", "hgx-h100", "--set", "domains=2", "--set", "scaleout=quantum-2", "--size", "1MiB")

# ---------------------------------------------------------------- the fuzz driver

#: What a hostile but realistic user types into an option.
HOSTILE = ("", " ", "0", "-1", "1", "2", "3", "1e400", "nan", "inf", "-inf", "1e-300", "1PiB", "1000000000",
           "9" * 40, "400Gb/s", "400 Gbps", "50GB/s", "1MiB", "64", "0.5", "\u00b2", "\u0663", "1_0", "true",
           "all", "auto", "none", "x", "a=b", "1,2", "spine 0", "gpu 1=50%", ESC + "[2J", RLO + "abc", "[red]x",
           "/dev/null", "/nonexistent-dir/x.json", "out.txt", "out.json", "out.png", "-")

#: One cheap valid invocation per command (``{db}``: a stored sweep outside the working directory).
BASES = {
    "run": ("run", "all_reduce", *TINY, "--size", "1MiB", "--json"),
    "run-moe": ("run", "moe_dispatch", *TINY, "--tokens", "64", "--experts", "16", "--topk", "2", "--json"),
    "run-net": ("run", "all_to_all", "--topo", "fat-tree", "--set", "hosts=16", "--set", "radix=8", "--size",
                "64KiB", "--json"),
    "step": (*STEP, "--json"),
    "models": ("models", "--model", "llama3-8b", "--json"),
    "validate": ("validate", "--id", "h100x8-allreduce-ring", "--json"),
    "topo show": ("topo", "show", "nvl", "--set", "n=4", "--json"),
    "topo export": ("topo", "export", "nvl", "--set", "n=4", "--format", "json", "-o", "g.json"),
    "bisect": ("bisect", "nvl", "--set", "n=4", "--json"),
    "sweep run": ("sweep", "run", "all_reduce", "--topo", "nvl", "--set", "n=4", "--grid", "size=1KiB,2KiB",
                  "--db", "s.sqlite", "--jobs", "1", "--json"),
    "sweep show": ("sweep", "show", "--db", "{db}", "--json"),
    "sweep export": ("sweep", "export", "--db", "{db}", "--format", "json"),
}
#: Options left out: the Dask scheduler would try to connect to a host.
SKIP = {"--scheduler"}
#: Values per option, and the seed that draws them.
PER_OPTION, SEED = 3, 20261202
_NON_NEGATIVE = re.compile(r"(_s|_us|_ms|_GBps|_Bps|_bytes|_GiB|_GB|_tflops|_per_s)$")


def _command(path: tuple[str, ...]) -> click.Command:
    ctx, cmd = click.Context(cli), cli
    for name in path:
        cmd = cmd.get_command(ctx, name)
    return cmd


def _cases() -> list[tuple[str, tuple[str, ...]]]:
    rng = random.Random(SEED)
    out = []
    for name, base in BASES.items():
        path = tuple(name.split("-")[0].split())
        for p in _command(path).params:
            if not isinstance(p, click.Option) or p.hidden or p.opts[0] in SKIP or "--help" in p.opts:
                continue
            if p.is_flag:
                for flag in p.opts + p.secondary_opts:
                    out.append((name, base + (flag,)))
                continue
            for value in rng.sample(HOSTILE, PER_OPTION):
                out.append((name, base + (p.opts[-1], value)))
    return out


def _numbers_ok(obj, key: str = "") -> list[str]:
    """Non-finite numbers anywhere, and negative times/sizes/bandwidths (by their unit suffix)."""
    bad = []
    if isinstance(obj, dict):
        for k, v in obj.items():
            bad += _numbers_ok(v, str(k))
    elif isinstance(obj, list):
        for v in obj:
            bad += _numbers_ok(v, key)
    elif isinstance(obj, float) and not math.isfinite(obj):
        bad.append(f"{key}={obj}")
    elif isinstance(obj, (int, float)) and not isinstance(obj, bool) and obj < 0 and _NON_NEGATIVE.search(key):
        bad.append(f"{key}={obj}")
    return bad


def contract(args, *, cwd: str) -> object:
    """Run ``args`` in the empty folder ``cwd`` and check the contract; the folder is empty again after."""
    r = CliRunner().invoke(cli, list(args))
    made = sorted(os.listdir(cwd))
    for f in made:
        os.unlink(os.path.join(cwd, f))
    assert r.exit_code in (0, 2), (args, r.exit_code, r.output[-300:], repr(r.exception))
    assert r.exception is None or isinstance(r.exception, SystemExit), (args, repr(r.exception))
    assert "Traceback" not in r.stdout + r.stderr, args
    assert not _unsafe(r.stdout) and not _unsafe(r.stderr), (args, r.stderr[:200])
    if r.exit_code == 2:
        lines = [x for x in r.stderr.splitlines() if x.strip()]
        assert len(lines) == 1 and lines[0].startswith("error: "), (args, r.stderr)
        assert r.stdout == "", (args, r.stdout[:200])
        assert made == [], (args, made)  # nothing written on a refusal
    elif "--json" in args and r.stdout.strip():
        assert not _numbers_ok(json.loads(r.stdout)), (args, _numbers_ok(json.loads(r.stdout))[:5])
    return r


@pytest.fixture(scope="module")
def stored_sweep(tmp_path_factory):
    db = tmp_path_factory.mktemp("stored") / "s.sqlite"
    check("sweep", "run", "all_reduce", *TINY, "--grid", "size=1KiB,2KiB", "--db", db, "--jobs", "1", ok=(0,))
    return str(db)


def test_fuzz_driver_reaches_every_option():
    cases = _cases()
    for name in BASES:
        fuzzed = {a for n, args in cases if n == name for a in args[len(BASES[name]):]}
        for p in _command(tuple(name.split("-")[0].split())).params:
            if isinstance(p, click.Option) and "--help" not in p.opts and p.opts[0] not in SKIP:
                assert set(p.opts + p.secondary_opts) & fuzzed, (name, p.opts)
    assert 250 <= len(cases) <= 800


def test_fuzz_every_option(tmp_path, stored_sweep, monkeypatch):
    monkeypatch.chdir(tmp_path)
    for name, args in _cases():
        contract(tuple(a.replace("{db}", stored_sweep) for a in args), cwd=str(tmp_path))


def _combinations(per_base: int = 25) -> list[tuple[str, tuple[str, ...]]]:
    """Three options at once per case (contradictions), each a valid value (a choice or the default)
    four times in five, else a hostile one."""
    rng = random.Random(SEED + 1)
    out = []
    for name, base in BASES.items():
        params = [p for p in _command(tuple(name.split("-")[0].split())).params
                  if isinstance(p, click.Option) and p.opts[0] not in SKIP and "--help" not in p.opts]
        for _ in range(per_base):
            args = list(base)
            for p in rng.sample(params, min(3, len(params))):
                if p.is_flag:
                    args.append(rng.choice(p.opts + p.secondary_opts))
                    continue
                good = list(getattr(p.type, "choices", None) or []) or (
                    [str(p.default)] if p.default not in (None, (), False) else [])
                args += [p.opts[-1], rng.choice(good) if good and rng.random() < 0.8 else rng.choice(HOSTILE)]
            out.append((name, tuple(args)))
    return out


def test_fuzz_option_combinations(tmp_path, stored_sweep, monkeypatch):
    monkeypatch.chdir(tmp_path)
    for name, args in _combinations():
        contract(tuple(a.replace("{db}", stored_sweep) for a in args), cwd=str(tmp_path))


# ---------------------------------------------------------------- defects found this round, one row each

@pytest.mark.parametrize("args, needle", [
    # options silently ignored
    (("run", "all_reduce", *TINY, "--plot", ""), "--plot: empty"),                    # was: no plot, exit 0
    (("run", "all_reduce", *TINY, "--top", "5"), "add --report"),                     # was: ignored
    (("run", "moe_dispatch", *TINY, "--moe-routing", "balanced", "--seed", "3"), "--seed"),   # drew nothing
    (("run", "moe_dispatch", *TINY, "--moe-routing", "perfect", "--seed", "3"), "--seed"),
    (("run", "moe_dispatch", "--topo", "fat-tree", "--set", "hosts=16", "--set", "radix=8", "--experts", "16",
      "--tokens", "64", "--moe-routing", "balanced", "--routing", "spray", "--seed", "3"), "does not hash"),
    ((*STEP, "--pp-layout", ""), "--pp-layout"),                                      # was: the even split
    ((*STEP, "--moe-routing", "skewed"), "dense"),                                    # was: ignored
    ((*MOE_STEP, "--ep", "1", "--no-memory-check", "--moe-routing", "skewed"), "--ep 1"),
    ((*STEP, "--routing", "spray"), "one NVLink domain"),                             # run refuses it too
    ((*MOE_STEP, "--ep", "8", "--pp", "2", "--schedule", "dualpipe", "--overlap", "none"), "DualPipe"),  # ep added
    ((*MOE_STEP, "--ep", "8", "--pp", "2", "--schedule", "dualpipe", "--overlap", "dp-grad,tp"), "add ep"),
    ((*STEP, "--gpus-per-domain", "9"), "domains have 8 GPUs"),                       # 9 of an 8-GPU board
    (("validate", "--id", "no-such-point"), "--id"),                                  # was: 0 points, 0 % error
    (("validate", "--id", ""), "--id"),
    (("validate", "--id", "h100x8-allreduce-ring", "--split", "heldout"), "selects no point"),
    (("sweep", "run", "all_reduce", *TINY, "--grid", "size=1KiB,2KiB", "--db", "x.sqlite", "--nccl-version", ""),
     "--nccl-version: empty"),                                                         # was: the default release
    (("sweep", "run", "all_reduce", *TINY, "--grid", "size=1KiB,2KiB", "--db", "x.sqlite", "--pxn"), "pxn"),
    (("sweep", "run", "moe_dispatch", *TINY, "--moe-routing", "balanced", "--grid", "seed=1,2", "--db",
      "x.sqlite"), "grid seed"),
    (("sweep", "run", "all_reduce", *TINY, "--grid", "size=1KiB,2KiB", "--db", "x.sqlite", "--seed", "3"),
     "seed: all_reduce draws nothing"),                                                # a fixed seed: ignored
    (("sweep", "run", "all_reduce", *TINY, "--grid", "size=1KiB,2KiB", "--db", "x.sqlite", "--layout", "strided"),
     "no point of this sweep"),                                                        # as run --layout alone
    (("sweep", "run", "all_reduce", "--topo", "nvl", "--grid", "n=2,4", "--grid", "routing=ecmp,spray", "--db",
      "x.sqlite"), "no scale-out network"),                                            # as run --routing
    (("sweep", "run", "all_to_all", *TINY, "--grid", "size=1KiB,2KiB", "--db", "x.sqlite", "--pxn"),
     "PXN forwards"),
    (("sweep", "run", "all_reduce", *TINY, "--db", "x.sqlite", "--jobs", "2", "--scheduler", "tcp://h:1"),
     "give one of them"),
    (("sweep", "run", "all_reduce", *TINY, "--db", "x.sqlite", "--file", ""), "--file: empty"),   # was: ignored
    (("sweep", "run", "all_reduce", *TINY, "--db", "x.sqlite", "--degrade", "  "), "empty selector"),  # dropped
    # a malformed degradation was stored as one error per point, exit 0; it is checked once, before any point
    (("sweep", "run", "all_reduce", *TINY, "--db", "x.sqlite", "--grid", "size=1KiB,2KiB", "--degrade",
      "gpu 0 nvlink"), "SELECTOR=VALUE"),
    (("sweep", "run", "all_reduce", *TINY, "--db", "x.sqlite", "--grid", "degrade=gpu 0 nvlink=50%,gpu 1=150%"),
     "between 0 and 1"),
    # a forced algorithm bypasses NCCL's choice: these options gave byte-identical results
    (("run", "all_reduce", *_TWO_NODES, "--algo", "ring", "--collnet"), "--algo ring does not use it"),
    (("run", "all_reduce", *_TWO_NODES, "--algo", "tree", "--no-nvls"), "--algo tree does not use it"),
    (("run", "all_reduce", *_TWO_NODES, "--algo", "hier", "--no-nvls"), "--algo hier does not use it"),
    (("run", "all_reduce", *_TWO_NODES, "--algo", "ring", "--nvls-chunksize", "1MiB"), "NVLS chunks"),
    (("run", "all_reduce", *_TWO_NODES, "--algo", "sharp", "--nccl-buffsize", "1MiB"), "--algo sharp"),
    # a trace named anything but .json (the docs said so; only six suffixes were refused)
    ((*STEP, "--trace", "step.txt"), ".json"),
    ((*STEP, "--trace", "trace"), ".json"),
])
def test_round4_defects_are_refused(args, needle, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    refused(*args, needle=needle)
    assert os.listdir(tmp_path) == []


@pytest.mark.parametrize("extra", [("--algo", "nvls", "--collnet"), ("--algo", "auto", "--no-nvls"),
                                   ("--algo", "sharp", "--collnet"), ("--algo", "tree", "--nccl-buffsize", "1MiB")])
def test_options_the_forced_algorithm_uses_still_run(extra):
    check("run", "all_reduce", *_TWO_NODES, *extra, "--json", ok=(0,))


@pytest.mark.parametrize("grid", [
    "seed=0,9223372036854775808",          # 2^63: run and step refuse it, the sweep crashed in SQLite
    "tokens=1,1000000000000000000000",     # any integer over 64 bits: OverflowError, exit 1, half a sweep stored
    "experts=16,1000000000000000000000",
    "hidden=1,1000000000000",              # run --hidden stops at 16 Mi; the sweep evaluated it
])
def test_sweep_integers_are_bounded_before_any_point(grid, tmp_path):
    db = tmp_path / "s.sqlite"
    refused("sweep", "run", "moe_dispatch", *TINY, "--tokens" if not grid.startswith("tokens") else "--topk", "2",
            "--grid", grid, "--db", db, "--jobs", "1", needle=grid.split("=")[0])
    assert not db.exists()


def test_sweep_stores_a_preset_value_over_64_bits_as_text(tmp_path):
    """hosts = 10^21 is a --set value (bounded by its point's estimate, stored as an error): the store
    crashed on the integer (OverflowError, exit 1); it is stored now, and reads back as 1e+21 whichever
    point finishes first (the column's type followed the first value stored)."""
    db = tmp_path / "s.sqlite"
    check("sweep", "run", "all_to_all", "--topo", "fat-tree", "--set", "radix=8", "--size", "1MiB", "--grid",
          "hosts=16,1000000000000000000000", "--db", db, "--jobs", "1", ok=(0,))
    r = check("sweep", "export", "--db", db, "--format", "json", ok=(0,))
    rows = {str(x["hosts"]): x for x in json.loads(r.stdout)}
    assert set(rows) == {"16", "1e+21"}
    assert rows["16"]["status"] == "ok" and rows["1e+21"]["status"] == "error"


@pytest.mark.parametrize("top", [3, 30])
def test_run_top_sizes_the_report_it_names(top):
    """--top over 10 was cut to 10: the report kept the 10 hottest links whatever --top asked."""
    r = check("run", "all_to_all", "--topo", "fat-tree", "--set", "hosts=64", "--set", "radix=16", "--size", "1MiB",
              "--report", "--top", top, "--json", ok=(0,))
    assert len(json.loads(r.stdout)[0]["congestion"]["hottest"]) == top


def test_no_nan_in_the_tables_when_no_byte_crosses_the_fabric():
    """perfect routing with top-1 of 4 experts on 4 ranks keeps every token on its GPU: the bound
    columns printed 'nan'."""
    r = check("run", "moe_combine", *TINY, "--tokens", "1", "--experts", "4", "--topk", "1", "--moe-routing",
              "perfect", "--report", ok=(0,))
    assert "nan" not in r.stdout.lower() and "no traffic crossed" in r.stdout


def test_step_seq_len_is_bounded_as_models_is():
    refused(*STEP, "--seq-len", "1" + "0" * 21, "--no-memory-check", needle="--seq-len")


def test_library_token_routing_bounds():
    from collectives.moe import TokenRouting
    from topologies.errors import SpecError

    with pytest.raises(SpecError, match="hidden"):
        TokenRouting("uniform", hidden=10**12)
    with pytest.raises(SpecError, match="seed"):
        TokenRouting("uniform", seed=2**63)


def test_a_model_file_cannot_take_a_built_in_name(tmp_path):
    """A file named 'llama3-8b' with DeepSeek-V2-Lite's sizes ran as 'step of llama3-8b' and was listed
    next to the real one under the same name; a verbatim copy of a built-in is still accepted."""
    from importlib import resources

    text = (resources.files("workloads") / "data" / "models" / "deepseek-v2-lite.toml").read_text()
    clash = tmp_path / "clash.toml"
    clash.write_text(text.replace('name = "deepseek-v2-lite"', 'name = "llama3-8b"'))
    refused("models", "--model", clash, needle="built-in model")
    refused(*STEP[:2], clash, *STEP[3:], needle="built-in model")
    copy = tmp_path / "copy.toml"
    copy.write_text(text)
    check("models", "--model", copy, ok=(0,))


def test_a_spec_cannot_take_another_fabrics_preset_name(tmp_path):
    """name = "hgx-h100" on a GB200 NVLink domain printed 'all_reduce on hgx-h100' with GB200 numbers."""
    other = tmp_path / "other.toml"
    other.write_text('preset = "nvl"\nname = "hgx-h100"\n')
    refused("run", "all_reduce", "--topo", other, "--size", "1MiB", needle="preset's name")
    same = tmp_path / "same.toml"
    same.write_text('preset = "hgx-h100"\nname = "hgx-h100"\n')
    check("topo", "show", same, ok=(0,))


def test_sweep_vocabularies_are_the_commands(tmp_path):
    """recompute mla_up_proj (a step option) was refused by sweep: its choice lists were copies."""
    from workloads.layout import OPTIMIZERS, PLACEMENTS, PRECISIONS, RECOMPUTE, SCHEDULES
    from workloads.step import ATTENTION_PRECISIONS
    from workloads.sweep.params import STEP_KEYS, normalise

    base = {"op": "step", "model": "llama3-8b", "system": "hgx-h100", "gpus": 8, "global_batch": 8}
    for key, vocab in (("recompute", RECOMPUTE), ("precision", PRECISIONS), ("schedule", SCHEDULES),
                       ("optimizer", OPTIMIZERS), ("placement", PLACEMENTS),
                       ("attention_precision", ATTENTION_PRECISIONS)):
        assert key in STEP_KEYS
        for v in vocab:
            assert normalise({**base, key: v}).inputs[key] == v
    db = tmp_path / "r.sqlite"
    check("sweep", "run", "step", "--model", "llama3-8b", "--system", "hgx-h100", "--gpus", "8", "--global-batch",
          "8", "--seq-len", "1024", "--grid", "recompute=none,mla_up_proj", "--db", db, "--jobs", "1", ok=(0,))


def test_a_refused_second_output_writes_no_first_one(tmp_path):
    """step --plot OK.png --trace BAD: the plot was written, then exit 2 (outputs are checked first now)."""
    plot = tmp_path / "ok.png"
    refused(*MOE_STEP, "--report", "--plot", plot, "--trace", tmp_path / "missing" / "t.json", needle="trace")
    assert not plot.exists()
    refused("run", "all_reduce", *TINY, "--plot", tmp_path / "missing" / "p.png", needle="does not exist")


def test_a_plot_without_matplotlib_is_refused_before_the_run(monkeypatch, tmp_path):
    import importlib.util

    import topologies

    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None if name == "matplotlib" else real(name, *a))
    monkeypatch.setattr(topologies, "load_topology", lambda *a, **k: pytest.fail("built before the refusal"))
    refused("run", "all_reduce", *TINY, "--plot", tmp_path / "p.png", needle="matplotlib")


def test_sweep_that_cannot_start_creates_no_database(tmp_path):
    """--scheduler without the Dask extra (or unreachable) failed after the --db was created."""
    pytest.importorskip("sqlite3")
    db = tmp_path / "s.sqlite"
    try:
        import distributed  # noqa: F401
        pytest.skip("the Dask extra is installed: the scheduler would be contacted")
    except ImportError:
        pass
    refused("sweep", "run", "all_reduce", *TINY, "--grid", "size=1KiB,2KiB", "--db", db, "--scheduler",
            "tcp://127.0.0.1:1", needle="--scheduler")
    assert list(tmp_path.iterdir()) == []


def test_outputs_never_replace_a_sweep_database_or_its_journal(tmp_path, stored_sweep):
    """sweep export -o x.sqlite-wal (tab completion offers it next to x.sqlite) replaced SQLite's
    write-ahead log with CSV; topo export --format json -o x.sqlite replaced the database."""
    import shutil

    db = tmp_path / "s.sqlite"
    shutil.copy(stored_sweep, db)
    wal = tmp_path / "s.sqlite-wal"
    wal.write_bytes(b"WAL")  # stands for the live journal of a sweep being written
    refused("sweep", "export", "--db", db, "--format", "csv", "-o", wal, needle="journal")
    refused("topo", "export", "nvl", "--set", "n=4", "--format", "json", "-o", wal, needle="journal")
    refused("topo", "export", "nvl", "--set", "n=4", "--format", "json", "-o", db, needle="sweep database")
    link = tmp_path / "wal.csv"
    link.symlink_to(wal)
    refused("sweep", "export", "--db", db, "--format", "csv", "-o", link, needle="--db itself")
    spec = tmp_path / "spec.toml"
    spec.write_text('preset = "nvl"\n')
    refused("sweep", "run", "all_reduce", *TINY, "--db", spec, "--jobs", "1", needle="sweep database")
    assert wal.read_bytes() == b"WAL" and spec.read_text() == 'preset = "nvl"\n'
    assert db.read_bytes() == open(stored_sweep, "rb").read()


def test_sweep_export_dash_is_standard_output(tmp_path, stored_sweep, monkeypatch):
    """-o - wrote a file named '-' (topo export -o - writes standard output)."""
    monkeypatch.chdir(tmp_path)
    r = check("sweep", "export", "--db", stored_sweep, "--format", "csv", "-o", "-", ok=(0,))
    assert r.stdout.startswith("point_id,") and os.listdir(tmp_path) == []


@pytest.mark.parametrize("extra, needle", [
    (("--x", "size"), "--x"),              # plot axes without --plot: ignored
    (("--y", "busbw_GBps"), "--y"),
    (("--columns", "size,size"), "twice"),
])
def test_sweep_show_options_that_did_nothing(extra, needle, stored_sweep):
    refused("sweep", "show", "--db", stored_sweep, *extra, needle=needle)


def test_check_target_is_what_write_atomic_checks(tmp_path):
    from topologies.errors import SpecError
    from topologies.files import check_target, write_atomic

    for bad in ("", str(tmp_path) + "/", str(tmp_path / "no" / "x.json"), "/dev/null"):
        with pytest.raises(SpecError) as a:
            check_target(bad, what="out")
        with pytest.raises(SpecError) as b:
            write_atomic(bad, b"x", what="out")
        assert str(a.value) == str(b.value)
    assert write_atomic(tmp_path / "x.json", b"{}") == check_target(tmp_path / "x.json")[0]


# ---------------------------------------------------------------- Ctrl-C

def test_ctrl_c_is_one_line_and_exit_130(monkeypatch):
    """click turns KeyboardInterrupt into Abort: the CLI printed 'aborted' with status 1 (its own
    'interrupted', 130 branch was never reached)."""
    import topologies

    def interrupted(*a, **k):
        raise KeyboardInterrupt

    monkeypatch.setattr(topologies, "load_topology", interrupted)
    r = CliRunner().invoke(cli, ["run", "all_reduce", *TINY])
    assert r.exit_code == 130
    assert [x for x in r.stderr.splitlines() if x.strip()] == ["error: interrupted (Ctrl-C)"]
    assert r.stdout == ""


def _run_signalled(code: str, cwd):
    """Run ``code`` in a fresh interpreter with the project on its path (a real signal reaches the entry point)."""
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    return subprocess.run([sys.executable, "-c", code], cwd=cwd, capture_output=True, text=True, timeout=60,
                          env={**os.environ, "PYTHONPATH": root})


def test_a_real_sigint_through_the_entry_point(tmp_path):
    """The real signal, through ``cli.main.main``: status 130, one line, no trace file left behind."""
    code = ("import os, signal, time, topologies\n"
            "def slow(*a, **k):\n"
            "    os.kill(os.getpid(), signal.SIGINT)\n"
            "    time.sleep(30)\n"
            "topologies.load_topology = slow\n"
            "from cli.main import main\n"
            "main(['run', 'all_reduce', '--topo', 'nvl', '--set', 'n=4', '--plot', 'p.png'])\n")
    r = _run_signalled(code, tmp_path)
    assert r.returncode == 130, (r.returncode, r.stderr[-500:])
    assert [x for x in r.stderr.splitlines() if x.strip()] == ["error: interrupted (Ctrl-C)"]
    assert r.stdout == "" and list(tmp_path.iterdir()) == []


def test_sigterm_mid_write_leaves_no_file(tmp_path):
    """SIGTERM (kill, timeout) killed the process at once: a write in progress left its temporary file.
    The entry point unwinds on it now (status 143, one line), and the atomic write removes its temporary."""
    code = ("import os, signal, time\n"
            "import topologies.files as f\n"
            "def slow(fd):\n"
            "    os.kill(os.getpid(), signal.SIGTERM)\n"
            "    time.sleep(30)\n"
            "f.os.fsync = slow\n"
            "from cli.main import main\n"
            "main(['topo', 'export', 'nvl', '--set', 'n=4', '--format', 'json', '-o', 'g.json'])\n")
    r = _run_signalled(code, tmp_path)
    assert r.returncode == 143, (r.returncode, r.stderr[-500:])
    assert [x for x in r.stderr.splitlines() if x.strip()] == ["error: terminated (SIGTERM)"]
    assert list(tmp_path.iterdir()) == []
