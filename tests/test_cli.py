"""CLI contract, driven through click's CliRunner."""

import json

import pytest
from click.testing import CliRunner

from cli.app import cli


@pytest.fixture()
def run():
    runner = CliRunner()

    def invoke(*args):
        return runner.invoke(cli, list(args), catch_exceptions=False)
    return invoke


def test_topo_list(run):
    r = run("topo", "list", "--json")
    assert r.exit_code == 0
    names = [p["name"] for p in json.loads(r.output)]
    for expected in ("hgx-h100", "hgx-h200", "hgx-h800", "hgx-b200", "gb200-nvl72", "gb300-nvl72", "fat-tree",
                     "superpod-h100", "superpod-gb200"):
        assert expected in names
    human = run("topo", "list")
    assert "gb300-nvl72" in human.output


def test_topo_show_cluster_json(run):
    r = run("topo", "show", "gb300-nvl72", "--set", "domains=4", "--set", "scaleout=quantum-x800", "--json")
    assert r.exit_code == 0
    data = json.loads(r.output)
    assert data["gpus"] == 288
    assert data["links"] == 2 * data["cables"]
    assert data["switches"] == 72 + data["switches_by_role"]["leaf"] + data["switches_by_role"]["spine"]
    assert data["bisection_GBps"] == pytest.approx(14400)


def test_bisect_nvl72(run):
    r = run("bisect", "gb300-nvl72", "--json")
    data = json.loads(r.output)
    assert data["bisection_GBps"] == pytest.approx(32400)
    assert data["per_gpu_GBps"] == pytest.approx(900)
    assert {"name", "side_a", "side_b"} <= set(data["partition"])


def test_bisect_fat_tree_shows_the_halving(run):
    base = run("bisect", "fat-tree", "--set", "hosts=1024", "--set", "radix=48", "--json")
    over = run("bisect", "fat-tree", "--set", "hosts=1024", "--set", "radix=48", "--set", "oversubscription=2",
               "--json")
    assert json.loads(over.output)["bisection_GBps"] == pytest.approx(json.loads(base.output)["bisection_GBps"] / 2)


def test_bisect_with_failures(run):
    r = run("bisect", "fat-tree", "--set", "hosts=128", "--set", "radix=16", "--fail", "spine 0", "--json")
    data = json.loads(r.output)
    assert data["failures"] == ["spine 0"]
    assert data["bisection_GBps"] == pytest.approx(64 * 50 * 7 / 8)


def test_human_output_is_a_table(run):
    r = run("bisect", "hgx-h100")
    assert r.exit_code == 0 and "1,800.0" in r.output and "GB/s" in r.output


def test_export_json_and_graphml(run, tmp_path):
    for fmt in ("json", "graphml"):
        out = tmp_path / f"t.{fmt}"
        r = run("topo", "export", "hgx-h100", "--format", fmt, "-o", str(out))
        assert r.exit_code == 0 and out.exists()
        shown = json.loads(run("topo", "show", str(out), "--json").output)
        assert shown["gpus"] == 8 and shown["links"] == 288


def test_spec_file(run, repo):
    r = run("topo", "show", str(repo / "docs/examples/gb300-4racks-failed-spine.toml"), "--json")
    data = json.loads(r.output)
    assert data["gpus"] == 288 and data["failures"][0]["selector"] == "spine 1"


@pytest.mark.parametrize("args, needle", [
    (("topo", "show", "nope"), "presets:"),
    (("bisect", "fat-tree", "--set", "hosts=x"), "hosts"),
    (("bisect", "fat-tree", "--set", "link=800G"), "link"),
    (("bisect", "fat-tree", "--set", "oops"), "KEY=VALUE"),
    (("bisect", "hgx-h100", "--fail", "spine 2"), "spine"),
    (("topo", "show", "missing.toml"), "does not exist"),
])
def test_errors_are_one_red_line_and_exit_2(args, needle, tmp_path):
    runner = CliRunner()
    r = runner.invoke(cli, list(args))
    assert r.exit_code == 2
    lines = [l for l in r.stderr.splitlines() if l.strip()]
    assert len(lines) == 1 and lines[0].startswith("error:") and needle in lines[0]
    assert "Traceback" not in r.output


def test_export_writes_nothing_on_error(tmp_path):
    out = tmp_path / "x.json"
    r = CliRunner().invoke(cli, ["topo", "export", "nope", "--format", "json", "-o", str(out)])
    assert r.exit_code == 2 and not out.exists()


def test_demo(run):
    r = run("demo")
    assert r.exit_code == 0
    assert "GB300 x 256" in r.output and "GB200 x 256" in r.output and "GB300 x 1,024" in r.output
    assert "where the step goes" in r.output and "per-GPU throughput" in r.output


def test_run_nvls_json_contract(run):
    r = run("run", "all_reduce", "--topo", "hgx-h100", "--ranks", "8", "--algo", "nvls", "--size", "8GiB", "--json")
    assert r.exit_code == 0
    [row] = json.loads(r.stdout)
    for key in ("size_bytes", "time_us", "algbw_GBps", "busbw_GBps", "algorithm", "max_link_utilization"):
        assert key in row
    assert row["algorithm"] == "nvls" and abs(row["busbw_GBps"] / 480 - 1) < 0.10


def test_run_sweep_and_report(run):
    r = run("run", "all_reduce", "--topo", "hgx-h100", "--sizes", "1MiB:4MiB", "--json")
    rows = json.loads(r.stdout)
    assert [x["size_bytes"] for x in rows] == [2**20, 2**21, 2**22]
    human = run("run", "all_to_all", "--topo", "gb300-nvl72", "--set", "domains=4", "--set", "scaleout=quantum-x800",
                "--fail", "spine 1", "--no-pxn", "--size", "64MiB", "--report")
    assert human.exit_code == 0
    assert "hottest links" in human.stdout and "spine 1" in human.stdout and "verdict" in human.stdout


def test_run_ecmp_vs_spray_explains_collisions(run):
    # 2:1 leaves: the spines bind (on a 1:1 fabric the NICs do, their goodput falling with 56 connections)
    args = ["run", "all_to_all", "--topo", "hgx-h100", "--set", "domains=8", "--set", "scaleout=quantum-2",
            "--set", "oversubscription=2", "--no-pxn", "--size", "256MiB"]
    ecmp = json.loads(run(*args, "--routing", "ecmp", "--json").stdout)[0]
    spray = json.loads(run(*args, "--routing", "spray", "--json").stdout)[0]
    assert ecmp["time_us"] > 1.05 * spray["time_us"]
    rep = run(*args, "--routing", "ecmp", "--report").stdout
    assert "collisions" in rep


def test_run_moe_and_groups(run):
    r = run("run", "moe_dispatch", "--topo", "hgx-h800", "--set", "domains=2", "--set", "scaleout=quantum-2",
            "--tokens", "256", "--json")
    [row] = json.loads(r.stdout)
    assert row["algorithm"] == "hier" and row["logical_bytes"] > 0
    g = json.loads(run("run", "all_reduce", "--topo", "hgx-h100", "--set", "domains=2", "--set", "scaleout=quantum-2",
                       "--groups", "8", "--layout", "strided", "--size", "16MiB", "--json").stdout)
    assert len(g) == 8 and len({x["label"] for x in g}) == 8


@pytest.mark.parametrize("args, needle", [
    (("run", "allreduce", "--topo", "hgx-h100"), "COLLECTIVE"),
    (("run", "all_reduce", "--topo", "hgx-h100", "--size", "1MB/s"), "size"),
    (("run", "all_reduce", "--topo", "hgx-h100", "--ranks", "9"), "ranks"),
    (("run", "all_reduce", "--topo", "fat-tree", "--set", "hosts=16", "--set", "radix=8", "--algo", "nvls",
      "--size", "1MiB"), "nvls"),
    (("run", "all_to_all", "--topo", "hgx-h100", "--algo", "ring"), "does not apply"),
])
def test_run_errors(args, needle):
    r = CliRunner().invoke(cli, list(args))
    assert r.exit_code == 2
    lines = [l for l in r.stderr.splitlines() if l.startswith("error")]
    assert len(lines) == 1 and needle in lines[0]


@pytest.mark.parametrize("content, name", [("not xml", "g.graphml"), ("[1, 2]", "g.json")])
def test_malformed_graph_files_are_one_line_errors(tmp_path, content, name):
    path = tmp_path / name
    path.write_text(content)
    r = CliRunner().invoke(cli, ["topo", "show", str(path)])
    assert r.exit_code == 2 and r.stderr.count("\n") == 1 and "cannot read graph" in r.stderr


@pytest.mark.parametrize("degrade", ["gpu 0 nvlink=.", "gpu 0 nvlink=1.2.3", "gpu 0 nvlink=900GB/s", "spine0"])
def test_bad_degradations(degrade):
    r = CliRunner().invoke(cli, ["bisect", "hgx-h100", "--degrade", degrade])
    assert r.exit_code == 2 and r.stderr.startswith("error: degradation")


def test_json_never_carries_nan(run):
    r = run("run", "all_reduce", "--topo", "hgx-h100", "--size", "1B", "--report", "--json")
    assert r.exit_code == 0 and "NaN" not in r.stdout and "Infinity" not in r.stdout
    json.loads(r.stdout)
    from cli.output import finite  # 0 B (0/0 utilisation) is refused up front; NaN from elsewhere becomes null
    assert finite({"a": [float("nan"), float("inf"), 1.0]}) == {"a": [None, None, 1.0]}


def test_report_lists_parallel_cables_once(run):
    out = run("run", "all_reduce", "--topo", "hgx-h100", "--algo", "ring", "--size", "64MiB", "--report").stdout
    assert "parallel" in out


def test_python_dash_m_cli_runs_the_console_entry_point():
    """``python -m cli`` is the ``fabric-emu`` command (same program name, same exit status on bad input)."""
    import subprocess
    import sys
    from pathlib import Path

    root = Path(__file__).resolve().parents[1]
    ok = subprocess.run([sys.executable, "-m", "cli", "--help"], cwd=root, capture_output=True, text=True, timeout=60)
    assert ok.returncode == 0 and ok.stdout.startswith("Usage: fabric-emu")
    bad = subprocess.run([sys.executable, "-m", "cli", "run", "all_to_all", "--size", "-1"], cwd=root,
                         capture_output=True, text=True, timeout=60)
    assert bad.returncode == 2 and "Traceback" not in bad.stderr
