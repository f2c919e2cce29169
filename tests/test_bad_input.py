"""Bad input over every command: one clear line and exit status 2, nothing destroyed, huge problems refused.

Seeded tables cover each class of docs/robustness.md; hypothesis fuzzes the
free-text options on the cheapest fabrics (``nvl`` with 4 GPUs). Every
invocation goes through :func:`check`, which asserts the contract: exit 0 or
2, no traceback, on failure exactly one ``error:`` line on stderr, and no
control or bidirectional-format character anywhere in the output.
"""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
import time
import unicodedata

import pytest
from click.testing import CliRunner
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from cli.app import cli

ESC = "\x1b"
RLO = "\u202e"
TINY = ("--topo", "nvl", "--set", "n=4")


def _unsafe(text: str) -> list[str]:
    return [c for c in text if c != "\n" and unicodedata.category(c) in ("Cc", "Cf")]


def check(*args, ok=(0, 2), env=None):
    r = CliRunner().invoke(cli, [str(a) for a in args], env=env)
    assert r.exit_code in ok, (args, r.exit_code, r.output, r.exception)
    assert r.exception is None or isinstance(r.exception, SystemExit), (args, repr(r.exception))
    assert "Traceback" not in r.output + r.stderr
    assert not _unsafe(r.stdout) and not _unsafe(r.stderr), (args, r.stdout[:200], r.stderr[:200])
    if r.exit_code == 2:
        lines = [x for x in r.stderr.splitlines() if x.strip()]
        assert len(lines) == 1 and lines[0].startswith("error: "), (args, r.stderr)
    return r


def refused(*args, needle="", env=None):
    r = check(*args, ok=(2,), env=env)
    assert needle in r.stderr, (args, r.stderr)
    return r.stderr


# ---------------------------------------------------------------- options of every command

@pytest.mark.parametrize("args, needle", [
    # click usage errors: one line, exit 2
    (("run",), "Missing argument"),
    (("run", "all_reduce"), "--topo"),
    (("run", "allreduce", *TINY), "COLLECTIVE"),
    (("run", "all_reduce", *TINY, "--bogus"), "--bogus"),
    (("run", "all_reduce", *TINY, "--algo", "fast"), "--algo"),
    (("run", "all_reduce", *TINY, "--routing", "ospf"), "--routing"),
    (("run", "all_reduce", *TINY, "extra"), "extra"),
    (("nosuchcommand",), "nosuchcommand"),
    (("topo", "export", "nvl"), "--format"),
    (("bisect",), "TOPO"),
    # integers: ASCII digits only, ranges
    (("run", "all_reduce", *TINY, "--ranks", "\u00b2"), "--ranks"),
    (("run", "all_reduce", *TINY, "--ranks", "\u0663"), "--ranks"),
    (("run", "all_reduce", *TINY, "--ranks", "1_0"), "--ranks"),
    (("run", "all_reduce", *TINY, "--ranks", ""), "--ranks"),
    (("run", "all_reduce", *TINY, "--ranks", "9" * 40), "--ranks"),
    (("run", "all_reduce", *TINY, "--ranks", "1"), "--ranks"),
    (("run", "all_reduce", *TINY, "--seed", "-1"), "--seed"),
    (("run", "all_reduce", *TINY, "--seed", str(2**64)), "--seed"),
    (("run", "all_reduce", *TINY, "--groups", "0"), "--groups"),
    (("run", "all_reduce", *TINY, "--groups", "3"), "--groups"),
    (("run", "moe_dispatch", *TINY, "--tokens", "\u0663"), "--tokens"),
    (("run", "moe_dispatch", *TINY, "--topk", "0"), "--topk"),
    (("run", "moe_dispatch", *TINY, "--topk", "300"), "topk"),
    # sizes
    (("run", "all_reduce", *TINY, "--size", ""), "--size"),
    (("run", "all_reduce", *TINY, "--size", "NaNB"), "--size"),
    (("run", "all_reduce", *TINY, "--size", "infB"), "--size"),
    (("run", "all_reduce", *TINY, "--size", "-1MiB"), "--size"),
    (("run", "all_reduce", *TINY, "--size", "1e400B"), "--size"),
    (("run", "all_reduce", *TINY, "--size", "1.5B"), "--size"),
    (("run", "all_reduce", *TINY, "--size", "1e200B"), "1 PiB"),
    (("run", "all_reduce", *TINY, "--sizes", "1GiB:2PiB"), "1 PiB"),
    (("run", "all_reduce", *TINY, "--sizes", "1KiB"), "--sizes"),
    (("run", "all_reduce", *TINY, "--sizes", "8KiB:1KiB"), "--sizes"),
    (("run", "all_reduce", *TINY, "--sizes", "1B:1e300B"), "--sizes"),
    (("run", "all_reduce", *TINY, "--sizes", "1KiB:8KiB:x1"), "--sizes"),
    (("run", "all_reduce", *TINY, "--size", "1MiB", "--sizes", "1KiB:2KiB"), "--size"),
    # options that do not apply
    (("run", "all_reduce", *TINY, "--tokens", "16"), "--tokens"),
    (("run", "all_reduce", *TINY, "--moe-routing", "skewed"), "--moe-routing"),
    (("run", "all_gather", *TINY, "--topk", "2"), "--topk"),
    (("run", "moe_dispatch", *TINY, "--size", "1MiB"), "--size"),
    (("run", "moe_combine", *TINY, "--sizes", "1KiB:2KiB"), "--sizes"),
    (("run", "all_reduce", *TINY, "--pxn"), "--pxn"),
    (("run", "all_reduce", *TINY, "--layout", "strided"), "--layout"),
    (("run", "all_reduce", *TINY, "--routing", "spray", "--seed", "3"), "--seed"),
    (("run", "all_to_all", "--topo", "hgx-h100", "--size", "1MiB", "--routing", "spray"), "no scale-out"),
    (("run", "all_to_all", "--topo", "hgx-h100", "--size", "1MiB", "--seed", "4"), "no scale-out"),
    (("run", "all_to_all", "--topo", "hgx-h100", "--size", "1MiB", "--no-pxn"), "no scale-out"),
    (("run", "moe_dispatch", "--topo", "hgx-h100", "--moe-routing", "node_limited"), "one node"),
    (("topo", "show", "hgx-h100", "--set", "tiers=3"), "scaleout"),
    (("topo", "show", "hgx-h100", "--set", "oversubscription=2"), "scaleout"),
    (("topo", "show", "hgx-h100", "--set", "planes=2"), "scaleout"),
    (("topo", "show", "hgx-h100", "--set", "nic=ConnectX-7"), "scaleout"),
    (("topo", "show", "fat-tree", "--set", "hosts=64", "--set", "radix=16", "--set", "oversubscription=2,2"),
     "spine"),
    (("topo", "show", "fat-tree", "--set", "hosts=8", "--set", "radix=16", "--set", "oversubscription=2"),
     "1-tier"),
    (("topo", "show", "fat-tree", "--set", "hosts=64", "--set", "radix=16", "--set", "oversubscription=1000"),
     "at most 15:1"),
    (("topo", "show", "fat-tree", "--set", "oversubscription=1,2,3"), "ratios"),
    (("run", "all_reduce", "--topo", "hgx-h100", "--algo", "sharp"), "SHARP"),
    (("run", "all_reduce", "--topo", "hgx-h100", "--set", "domains=2", "--set", "scaleout=quantum-2", "--ranks", "8",
      "--algo", "sharp"), "one domain"),
    (("run", "all_reduce", "--topo", "data.toml", "--set", "a=1"), "--set"),
    # --set values
    (("topo", "show", "nvl", "--set", "n=\u00b2"), "n:"),
    (("topo", "show", "nvl", "--set", "n=1e3"), "n:"),
    (("topo", "show", "nvl", "--set", "n=999"), "n:"),
    (("topo", "show", "nvl", "--set", "n=4", "--set", "n=8"), "twice"),
    (("topo", "show", "nvl", "--set", "=4"), "KEY=VALUE"),
    (("topo", "show", "fat-tree", "--set", "radix=" + "9" * 200), "radix"),
    (("topo", "show", "fat-tree", "--set", "radix=100000000"), "radix"),
    (("topo", "show", "fat-tree", "--set", "oversubscription=nan"), "oversubscription"),
    (("topo", "show", "fat-tree", "--set", "oversubscription=inf"), "oversubscription"),
    (("topo", "show", "fat-tree", "--set", "link=-400Gb/s"), "link"),
    (("topo", "show", "fat-tree", "--set", "planes=100000"), "planes"),
    (("topo", "show", "hgx-h100", "--set", "aggregate=maybe"), "aggregate"),
    (("topo", "show", "gb300-nvl72", "--set", "gpus_per_domain=100000"), "gpus_per_domain"),
    (("topo", "show", "superpod-h100", "--set", "sus=5"), "sus"),
    (("topo", "show", ""), "topology"),
    (("topo", "show", "[red]x[/red]" + ESC), "topology"),
    # failures and degradations
    (("bisect", "nvl", "--set", "n=4", "--fail", ""), "selector"),
    (("bisect", "nvl", "--set", "n=4", "--fail", "gpu 99"), "out of range"),
    (("bisect", "nvl", "--set", "n=4", "--fail", "gpu \u0663"), "selector"),
    (("bisect", "nvl", "--set", "n=4", "--fail", "gpu " + "9" * 50), "selector"),
    (("bisect", "nvl", "--set", "n=4", "--fail", "x" * 5000), "longer than"),
    (("bisect", "nvl", "--set", "n=4", *["--fail", "gpu 0"] * 1001), "at most 1,000"),
    (("bisect", "nvl", "--set", "n=4", "--degrade", "gpu 0 nvlink=1e-300Gb/s"), "--fail"),
    (("bisect", "nvl", "--set", "n=4", "--degrade", "gpu 0 nvlink=0.0000000001"), "--fail"),
    (("bisect", "nvl", "--set", "n=4", "--degrade", "gpu 0 nvlink=0%"), "between 0 and 1"),
    (("bisect", "nvl", "--set", "n=4", "--degrade", "gpu 0 nvlink=NaN%"), "degradation"),
    (("bisect", "nvl", "--set", "n=4", "--degrade", "gpu 0 nvlink=1e999Gb/s"), "degradation"),
    # limits
    (("run", "all_reduce", *TINY, "--memory-limit", "lots"), "--memory-limit"),
    (("run", "all_reduce", *TINY, "--memory-limit", "0B"), "--memory-limit"),
    (("topo", "export", "nvl", "--format", "json", "-o", ""), "empty"),
    (("validate", "--file", ""), "empty"),
])
def test_bad_options_are_one_line(args, needle):
    refused(*args, needle=needle)


def test_degradation_overflow_warns_nothing(recwarn):
    refused("run", "all_reduce", *TINY, "--size", "1MiB", "--degrade", "gpu 0 nvlink=1e-300Gb/s", needle="--fail")
    assert not [w for w in recwarn if issubclass(w.category, RuntimeWarning)]


# hypothesis: free text in every text option, on the cheapest fabric; valid values run (exit 0)
_TEXT = st.one_of(
    st.text(max_size=12),
    st.sampled_from(["", " ", "0", "-1", "1e999", "nan", "\u00b2", "\u0663", "1_000", "9" * 30, ESC + "[31m", RLO,
                     "[red]x", "1MiB", "4KiB", "2", "all", "spine 0", "gpu 1", "gpu 1 nvlink=50%", "gpu 0=200Gb/s"]),
)
_SETTINGS = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow], derandomize=True,
                     database=None)


@_SETTINGS
@given(option=st.sampled_from(["--ranks", "--size", "--sizes", "--fail", "--degrade", "--seed", "--groups",
                               "--memory-limit", "--layout", "--algo"]), value=_TEXT)
def test_fuzz_run_options(option, value):
    extra = ("--sizes", "1KiB:2KiB") if option == "--memory-limit" else ()
    check("run", "all_reduce", *TINY, *(("--size", "1KiB") if option not in ("--size", "--sizes") else ()),
          option, value, *extra)


@_SETTINGS
@given(key=st.sampled_from(["n", "gpu", "aggregate", "domains", ""]), value=_TEXT)
def test_fuzz_set_values(key, value):
    check("topo", "show", "nvl", "--set", f"{key}={value}")


@_SETTINGS
@given(value=_TEXT)
def test_fuzz_topology_names(value):
    check("bisect", value)


# ---------------------------------------------------------------- files

def _spec(tmp_path, text: str | bytes, name="s.toml"):
    p = tmp_path / name
    p.write_bytes(text if isinstance(text, bytes) else text.encode())
    return str(p)


@pytest.mark.parametrize("content, needle", [
    (b"preset = \"nvl\"\nname = \"\xff\xfe\"\n", "not UTF-8"),
    ("a = " + "[" * 5000 + "]" * 5000, "TOML"),
    ("preset = \"nvl\"\n[set]\nn = " + "{a = " * 100 + "1" + "}" * 100, "nested"),
    ("", "exactly one"),
    ("preset = \"nvl\"\nname = 5", "name"),
    ("preset = \"nvl\"\nname = {a = 1}", "name"),
    ("preset = \"nvl\"\nname = \"x\\u001b[2J\"", "control"),
    (f"preset = \"nvl\"\nname = \"x{ESC}[2J\"", "TOML"),
    (f"preset = \"nvl\"\nname = \"x{RLO}y\"", "U+202E"),
    ("preset = \"nvl\"\nname = \"" + "x" * 500 + "\"", "name"),
    ("preset = 5", "preset"),
    ("preset = \"nvl\"\nset = \"n=4\"", "table"),
    ("preset = \"nvl\"\n[set]\nn = \"4x\"", "n:"),
    ("preset = \"nvl\"\n[set]\nn = 4.0", "n:"),
    ("preset = \"nvl\"\n[set]\nn = true", "n:"),
    ("preset = \"nvl\"\n[set]\ngpu = {a = 1}", "gpu"),
    ("preset = \"nvl\"\n[set]\ngpu = [\"GB200\"]", "gpu"),
    ("[domain]\ngpu = \"H100\"\ncount = 100000000000000000", "GPUs"),
    ("[domain]\ngpu = \"H100\"\ncount = 2\n[scaleout]\ntiers = 2", "fabric"),
    ("[domain]\ngpu = [1]", "gpu"),
    ("[fat_tree]\nhosts = 1000000000\nradix = 64", "memory limit"),
    ("[fat_tree]\nhosts = 64\nradix = 16\noversubscription = [2.0, 3.0]", "spine"),
    ("[fat_tree]\nhosts = 64\nradix = 16\nlink = 400", "unit"),
    ("preset = \"nvl\"\nfailures = \"gpu 0\"", "arrays"),
    ("preset = \"nvl\"\n[[failures]]\nselect = 3", "failures[0]"),
    ("preset = \"nvl\"\n[[failures]]\nselect = \"gpu 99\"", "out of range"),
    ("preset = \"nvl\"\n[[degradations]]\nselect = \"gpu 0\"\nfraction = nan", "fraction"),
    ("preset = \"nvl\"\n[[degradations]]\nselect = \"gpu 0=1\"\nfraction = 0.5", "'='"),
    ("preset = \"nvl\"\nextra = 1", "unknown key"),
])
def test_bad_spec_files(tmp_path, content, needle):
    refused("topo", "show", _spec(tmp_path, content), needle=needle)


def _graph(tmp_path, mutate):
    from topologies import build
    from topologies.export import to_json_dict

    data = to_json_dict(build("nvl", {"n": 4}))
    mutate(data)
    p = tmp_path / "g.json"
    p.write_text(json.dumps(data))
    return str(p)


def _set_link(key, value):
    def mutate(d):
        d["links"][0][key] = value
    return mutate


@pytest.mark.parametrize("mutate, needle", [
    (lambda d: d.update(links=[]), "no links"),
    (lambda d: [n.update(kind="nic", role="nic") for n in d["nodes"] if n["kind"] == "gpu"], "no GPU"),
    (_set_link("latency_s", -1e-6), "latency_s"),
    (_set_link("capacity_Bps", 0), "capacity_Bps"),
    (_set_link("capacity_Bps", "fast"), "capacity_Bps"),
    (_set_link("tier", ["x"]), "tier"),
    (_set_link("cables", -1), "cables"),
    (_set_link("cables", 1.5), "cables"),
    (lambda d: d["links"].append(dict(d["links"][0], target=d["links"][0]["source"])), "self-loop"),
    (lambda d: d["nodes"][0].update(role="router"), "role"),
    (lambda d: d["nodes"][0].update(domain="zero"), "domain"),
    (lambda d: d.update(nodes="all"), "node-link"),
    (lambda d: d["nodes"].append(dict(d["nodes"][0])), "twice"),
    (lambda d: d["nodes"][0].pop("id"), "'id'"),
    (lambda d: d["nodes"].append(7), "'id'"),
    (lambda d: d["graph"].update(failures="spine 0"), "failures"),
    (lambda d: d["graph"].update(meta=[1]), "meta"),
])
def test_bad_graph_files(tmp_path, mutate, needle):
    path = _graph(tmp_path, mutate)
    refused("topo", "show", path, needle=needle)
    refused("run", "all_reduce", "--topo", path, "--size", "1MiB", needle=needle)


def test_graph_file_with_nan_and_deep_nesting(tmp_path):
    p = tmp_path / "g.json"
    p.write_text('{"nodes": [], "links": [], "graph": {"x": NaN}}')
    refused("topo", "show", str(p), needle="JSON")
    p.write_text("[" * 100000 + "]" * 100000)
    refused("topo", "show", str(p), needle="JSON")
    g = tmp_path / "g.graphml"
    g.write_text('<?xml version="1.0"?><!DOCTYPE x [<!ENTITY a "aaaa"><!ENTITY b "&a;&a;&a;&a;">]><x>&b;</x>')
    refused("topo", "show", str(g), needle="graph")


def test_graph_names_with_markup_and_escapes_are_shown_escaped(tmp_path):
    name = f"[link=http://x]evil[/link] {ESC}[2J{RLO}"

    def mutate(d):
        d["graph"]["name"] = name
    path = _graph(tmp_path, mutate)
    r = check("topo", "show", path, ok=(0,))
    assert "[link=http://x]evil[/link]" in r.stdout and "\\x1b[2J\\u202e" in r.stdout
    r = check("run", "all_reduce", "--topo", path, "--size", "1MiB", "--report", ok=(0,))
    assert "\\x1b" in r.stdout


def test_special_and_oversized_input_files(tmp_path):
    fifo = tmp_path / "spec.toml"
    os.mkfifo(fifo)
    t = time.time()
    refused("topo", "show", str(fifo), needle="FIFO")
    refused("validate", "--file", str(fifo), needle="FIFO")
    assert time.time() - t < 5
    refused("topo", "show", str(tmp_path), needle="topology")  # a directory with no suffix: not a preset
    d = tmp_path / "dir.toml"
    d.mkdir()
    refused("topo", "show", str(d), needle="directory")
    big = _spec(tmp_path, "# " + "x" * 5000 + "\npreset = \"nvl\"", name="big.toml")
    refused("topo", "show", big, needle="FABRIC_EMU_MAX_INPUT", env={"FABRIC_EMU_MAX_INPUT": "1KiB"})
    refused("topo", "show", big, needle="FABRIC_EMU_MAX_INPUT", env={"FABRIC_EMU_MAX_INPUT": "x"})
    check("topo", "show", big, ok=(0,))
    refused("topo", "show", str(tmp_path / "missing.toml"), needle="does not exist")
    if os.path.exists("/dev/zero"):
        link = tmp_path / "zero.toml"
        link.symlink_to("/dev/zero")
        refused("topo", "show", str(link), needle="character device")


def test_validation_ids_are_shown_escaped(tmp_path):
    text = ('[[collective]]\nid = "x\\u001b[2J\\u202e"\nsystem = "hgx-h100"\nranks = 8\ncollective = "all_reduce"\n'
            'algorithm = "ring"\nsize_bytes = 1048576\nbusbw_GBps = 100\nsource = "[link=http://x]y"\n')
    r = check("validate", "--file", _spec(tmp_path, text, name="v.toml"), ok=(0,))
    assert "\\x1b[2J\\u202e" in r.stdout


@pytest.mark.parametrize("content, needle", [
    ("", "no validation points"),
    ("[[colective]]\nid = \"x\"", "unknown table"),
    ("collective = \"all\"", "array of tables"),
    ("[collective]\nid = \"x\"", "array of tables"),
    ("[[collective]]\nid = \"x\"\nsystem = \"hgx-h100\"\nranks = 99\ncollective = \"all_reduce\"\n"
     "algorithm = \"ring\"\nsize_bytes = 1024\nbusbw_GBps = 10", "ranks"),
    ("[[collective]]\nid = \"x\"", "missing field"),
    (b"\xff\xfe[[collective]]", "UTF-8"),
    ("a = " + "[" * 5000 + "]" * 5000, "TOML"),
])
def test_bad_validation_files(tmp_path, content, needle):
    refused("validate", "--file", _spec(tmp_path, content, name="v.toml"), needle=needle)


# ---------------------------------------------------------------- exports

def _export(path, *extra):
    return CliRunner().invoke(cli, ["topo", "export", "nvl", "--set", "n=4", "--format", "json", "-o", str(path),
                                    *extra])


def test_export_refuses_special_files_and_keeps_links(tmp_path):
    fifo = tmp_path / "out.json"
    os.mkfifo(fifo)
    r = _export(fifo)
    assert r.exit_code == 2 and "FIFO" in r.stderr and stat.S_ISFIFO(os.lstat(fifo).st_mode)
    if os.path.exists("/dev/null"):
        link = tmp_path / "null.json"
        link.symlink_to("/dev/null")
        r = _export(link)
        assert r.exit_code == 2 and "character device" in r.stderr and os.path.islink(link)
    target = tmp_path / "real.json"
    target.write_text("old")
    os.chmod(target, 0o640)
    link = tmp_path / "via.json"
    link.symlink_to(target)
    assert _export(link).exit_code == 0
    assert os.path.islink(link) and json.loads(target.read_text())["nodes"]
    assert stat.S_IMODE(os.stat(target).st_mode) == 0o640
    dangling = tmp_path / "dangling.json"
    dangling.symlink_to(tmp_path / "nowhere.json")
    r = _export(dangling)
    assert r.exit_code == 2 and "missing" in r.stderr and not (tmp_path / "nowhere.json").exists()
    r = _export(tmp_path)
    assert r.exit_code == 2 and "directory" in r.stderr
    r = _export(tmp_path / "no" / "such" / "dir.json")
    assert r.exit_code == 2 and "does not exist" in r.stderr
    assert sorted(p.name for p in tmp_path.iterdir() if p.name.endswith(".tmp")) == []


def test_export_honours_the_umask(tmp_path):
    old = os.umask(0o027)
    try:
        assert _export(tmp_path / "a.json").exit_code == 0
    finally:
        os.umask(old)
    assert stat.S_IMODE(os.stat(tmp_path / "a.json").st_mode) == 0o640


@pytest.mark.skipif(hasattr(os, "geteuid") and os.geteuid() == 0, reason="root writes anywhere")
def test_export_to_unwritable_directory(tmp_path):
    d = tmp_path / "ro"
    d.mkdir()
    os.chmod(d, 0o500)
    try:
        r = _export(d / "x.json")
        assert r.exit_code == 2 and r.stderr.count("\n") == 1 and "cannot write" in r.stderr
    finally:
        os.chmod(d, 0o700)


def test_failed_export_leaves_the_old_file_whole(tmp_path, monkeypatch):
    import networkx as nx

    out = tmp_path / "x.graphml"
    out.write_text("previous")

    def boom(*a, **k):
        raise OSError(28, "No space left on device")
    monkeypatch.setattr(nx, "write_graphml", boom)
    r = CliRunner().invoke(cli, ["topo", "export", "nvl", "--set", "n=4", "--format", "graphml", "-o", str(out)])
    assert r.exit_code == 2 and "No space left" in r.stderr
    assert out.read_text() == "previous" and [p.name for p in tmp_path.iterdir()] == ["x.graphml"]


# ---------------------------------------------------------------- huge problems

@pytest.mark.parametrize("args, needle", [
    (("run", "all_to_all", "--topo", "fat-tree", "--set", "hosts=65536"), "--ranks"),
    (("topo", "show", "fat-tree", "--set", "hosts=1000000"), "hosts=N"),
    (("topo", "show", "hgx-h100", "--set", "domains=" + "9" * 25, "--set", "scaleout=quantum-2"), "domains=N"),
    (("bisect", "gb300-nvl72", "--set", "domains=10000000", "--set", "scaleout=quantum-x800"), "memory limit"),
    (("run", "moe_dispatch", *TINY, "--tokens", "1000000000"), "--tokens"),
    (("run", "moe_dispatch", *TINY, "--experts", str(10**12), "--topk", "2"), "--experts"),
    (("run", "all_to_all", "--topo", "fat-tree", "--set", "hosts=4096", "--memory-limit", "64MiB"), "--ranks"),
])
def test_huge_problems_are_refused_up_front(args, needle):
    t = time.time()
    err = refused(*args, needle=needle)
    assert time.time() - t < 5
    assert "estimate" in err and "FABRIC_EMU_MEMORY_LIMIT" in err


def test_unbuildable_trees_fail_arithmetically_before_building():
    t = time.time()
    refused("topo", "show", "fat-tree", "--set", "hosts=1000000", "--memory-limit", "100GiB", needle="65,536")
    refused("topo", "show", "fat-tree", "--set", "hosts=2000", "--set", "radix=8", "--memory-limit", "100GiB",
            needle="hosts")
    assert time.time() - t < 5


def test_memory_limit_from_the_environment():
    refused("run", "all_to_all", "--topo", "fat-tree", "--set", "hosts=1024", needle="1 MiB",
            env={"FABRIC_EMU_MEMORY_LIMIT": "1MiB"})


@pytest.mark.parametrize("name, overrides", [
    ("fat-tree", {"hosts": 100, "radix": 8}), ("fat-tree", {"hosts": 1000, "radix": 16, "planes": 2}),
    ("fat-tree", {"hosts": 64, "radix": 16, "tiers": 3, "oversubscription": [2.0, 2.0]}),
    ("hgx-h100", {}), ("hgx-h100", {"domains": 16, "scaleout": "quantum-2", "planes": 2, "oversubscription": 2.0}),
    ("gb300-nvl72", {"domains": 3, "scaleout": "spectrum-x"}), ("nvl", {"n": 36}),
    ("gb200-nvl72", {"gpus_per_domain": 36, "domains": 5, "scaleout": "quantum-x800", "tiers": 3}),
    ("superpod-h100", {"sus": 2}), ("superpod-gb200", {"sus": 2}), ("superpod-b300-xdr", {"sus": 1}),
])
def test_build_estimate_bounds_real_builds(name, overrides):
    from topologies import build, summarize
    from topologies.sizing import estimate_build

    G = build(name, overrides)
    est = estimate_build(name, overrides)
    assert G.number_of_edges() <= est.links <= 2 * G.number_of_edges()
    assert G.number_of_nodes() <= est.nodes
    assert est.gpus == summarize(G).gpus


@pytest.mark.parametrize("collective, name, overrides, n, opts", [
    ("all_to_all", "fat-tree", {"hosts": 64, "radix": 16}, 64, {}),
    ("all_to_all", "fat-tree", {"hosts": 64, "radix": 8}, 64, {}),
    ("all_to_all", "hgx-h100", {"domains": 4, "scaleout": "quantum-2"}, 32, {}),
    ("all_to_all", "hgx-h100", {"domains": 4, "scaleout": "quantum-2"}, 32, {"aggregate": "node"}),
    ("all_reduce", "hgx-h100", {"domains": 4, "scaleout": "quantum-2"}, 32, {}),
    ("all_gather", "gb300-nvl72", {}, 72, {}),
    ("send_recv", "fat-tree", {"hosts": 16, "radix": 8}, 16, {}),
    ("moe_dispatch", "hgx-h100", {"domains": 2, "scaleout": "quantum-2"}, 16, {}),
])
def test_collective_estimate_bounds_real_plans(collective, name, overrides, n, opts):
    from collectives import Collective, TokenRouting, planner_for
    from collectives.budget import estimate_collective, fabric_tiers, hops_bound
    from fabric import Router, compile_fabric
    from fabric.flowset import to_problem
    from topologies import build

    cf = compile_fabric(build(name, overrides))
    router = Router(cf)
    tr = TokenRouting("uniform", tokens_per_rank=64) if collective.startswith("moe") else None
    op = Collective(collective, tuple(range(n)), 1 << 20, options={**opts, **({"moe": tr} if tr else {})})
    plan = planner_for(router).plan(op)
    problem, _ = to_problem(plan.flows, router)
    hops = hops_bound(fabric_tiers(cf), True)
    est = estimate_collective(collective, [n], hops=hops, domain_gpus=cf.n_gpus // len(set(cf.node_domain[cf.gpus])),
                              moe=tr)
    assert plan.flows.n_flows <= est.flows or opts.get("aggregate")
    assert problem.res.shape[1] <= hops


# ---------------------------------------------------------------- CLI structure

def test_help_does_not_import_the_library():
    code = "import sys, cli.app; print(sorted(m for m in ('numpy', 'networkx', 'scipy', 'rich') if m in sys.modules))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"


def test_choices_come_from_the_library():
    import collectives
    import fabric
    from cli.app import cli as group
    from topologies.export import FORMATS

    run = group.get_command(None, "run")
    params = {p.name: p for p in run.params}
    assert tuple(params["algo"].type.choices) == tuple(collectives.ALGORITHMS)
    assert tuple(params["routing"].type.choices) == ("auto",) + tuple(fabric.POLICIES)
    assert tuple(params["moe_routing"].type.choices) == tuple(collectives.ROUTING_KINDS)
    assert tuple(params["collective"].type.choices) == tuple(collectives.COLLECTIVES)
    export = {p.name: p for p in group.commands["topo"].commands["export"].params}
    assert tuple(export["fmt"].type.choices) == FORMATS


def test_cli_modules_do_not_import_each_other_in_a_circle():
    import ast
    from pathlib import Path

    src = Path(__file__).resolve().parents[1] / "cli" / "run.py"
    names = {n.module for n in ast.walk(ast.parse(src.read_text())) if isinstance(n, ast.ImportFrom)}
    assert "cli.app" not in names


def test_oversubscription_is_reported_as_built():
    r = check("topo", "show", "fat-tree", "--set", "hosts=64", "--set", "radix=16", "--set", "oversubscription=2",
              ok=(0,))
    assert "2.2:1" in r.stdout and "asked 2:1" in r.stdout
    meta = json.loads(check("topo", "show", "fat-tree", "--set", "hosts=64", "--set", "radix=16", "--set",
                            "oversubscription=2", "--json", ok=(0,)).stdout)["meta"]
    assert meta["oversubscription"] == [2.0] and meta["clos"]["oversubscription_built"][0] == pytest.approx(11 / 5)


def test_bare_groups_show_their_help():
    for args in ((), ("topo",)):
        r = check(*args, ok=(0,))
        assert r.stdout.startswith("Usage:") and "Commands:" in r.stdout


def test_ascii_terminal_gets_escapes_not_a_crash():
    env = dict(os.environ, PYTHONIOENCODING="ascii")
    code = "from cli.main import main; main(['run', 'all_reduce', '--topo', 'nvl', '--set', 'n=4', '--size', '1KiB'])"
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env)
    assert r.returncode == 0 and "\\u03b1" in r.stdout, r.stderr[-500:]


def test_registered_commands_load_lazily_with_their_own_short_help():
    from cli.app import COMMANDS, cli as group

    for name, (_, short) in COMMANDS.items():
        cmd = group.get_command(None, name)
        assert cmd is not None and cmd.get_short_help_str(len(short) + 10) == short
    out = check("--help", ok=(0,)).stdout
    assert all(name in out for name in COMMANDS)


def test_library_run_refuses_before_planning(tmp_path):
    from collectives import Collective, TokenRouting, run
    from fabric import Router, compile_fabric
    from topologies import ProblemTooLargeError, build

    router = Router(compile_fabric(build("nvl", {"n": 4})))
    op = Collective("moe_dispatch", (0, 1, 2, 3), 0, options={"moe": TokenRouting("uniform", tokens_per_rank=10**9)})
    t = time.time()
    with pytest.raises(ProblemTooLargeError, match="--tokens"):
        run(router, [op])
    with pytest.raises(ProblemTooLargeError, match="1 KiB"):
        run(router, [Collective("all_to_all", (0, 1, 2, 3), 1 << 20)], memory_limit="1KiB")
    assert time.time() - t < 2
    text = ('[[moe_alltoall]]\nid = "huge"\nsystem = "hgx-h800"\nep = 8\nexperts = 8000000000\n'
            'dispatch_GBps = 1\ncombine_GBps = 1\n')
    refused("validate", "--file", _spec(tmp_path, text, name="v.toml"), needle="--experts")


@pytest.mark.skipif(not os.path.exists("/dev/full"), reason="needs /dev/full")
def test_full_disk_on_stdout_is_one_line():
    code = "from cli.main import main; main(['topo', 'list'])"
    with open("/dev/full", "w") as full:
        r = subprocess.run([sys.executable, "-c", code], stdout=full, stderr=subprocess.PIPE, text=True)
    assert r.returncode == 1 and r.stderr.strip().splitlines() == ["error: cannot write the output (No space left on "
                                                                   "device)"]
