"""``fabric-emu sweep run|show|export`` and the plots, through click's CliRunner; kill and resume; Dask."""

from __future__ import annotations

import csv
import io
import json
import os
import signal
import sqlite3
import subprocess
import sys
import time

import pytest
from click.testing import CliRunner

from cli.app import cli

SMALL = ["--topo", "fat-tree", "--set", "hosts=16", "--set", "radix=8", "--size", "1MiB"]


def _run(args, **kw):
    return CliRunner().invoke(cli, args, catch_exceptions=False, **kw)


@pytest.fixture(scope="module")
def db(tmp_path_factory):
    path = str(tmp_path_factory.mktemp("sweep") / "a.sqlite")
    r = _run(["sweep", "run", "all_to_all", *SMALL, "--grid", "routing=ecmp,spray", "--grid", "fail=none,each:spine",
              "--db", path, "--jobs", "1", "--json"])
    assert r.exit_code == 0, r.stderr
    out = json.loads(r.stdout)
    assert out["points"] == 6 and out["stored_ok"] == 6 and out["evaluated"] == 6
    return path


def test_run_resumes(db):
    r = _run(["sweep", "run", "all_to_all", *SMALL, "--grid", "routing=ecmp,spray", "--grid", "fail=none,each:spine",
              "--db", db, "--jobs", "1", "--json"])
    out = json.loads(r.stdout)
    assert (out["skipped"], out["evaluated"], out["stored_ok"]) == (6, 0, 6)


def test_show_table_and_json(db):
    r = _run(["sweep", "show", "--db", db, "--sort", "slowdown", "--reverse"])
    assert r.exit_code == 0 and "★" in r.stdout and "slowdown" in r.stdout and r.stderr == ""
    assert max(len(line) for line in r.stdout.splitlines()) <= 100
    r = _run(["sweep", "show", "--db", db, "--sort", "busbw_GBps", "--top", "2", "--json"])
    rows = json.loads(r.stdout)
    assert len(rows) == 2 and rows[0]["best"] and rows[0]["busbw_GBps"] >= rows[1]["busbw_GBps"]
    assert {"routing", "fail"} <= set(rows[0])
    r = _run(["sweep", "show", "--db", db, "--sort", "nope"])
    assert r.exit_code == 2 and "nope" in r.stderr and len(r.stderr.strip().splitlines()) == 1


def test_export_csv_json(db, tmp_path):
    r = _run(["sweep", "export", "--db", db, "--format", "csv"])
    rows = list(csv.DictReader(io.StringIO(r.stdout)))
    assert len(rows) == 6 and {"routing", "fail", "busbw_GBps", "time_us"} <= set(rows[0])
    assert {r["fail"] for r in rows} == {"none", "spine 0", "spine 1"}
    out = tmp_path / "x.json"
    r = _run(["sweep", "export", "--db", db, "--format", "json", "-o", str(out)])
    assert r.exit_code == 0 and r.stdout == ""
    data = json.loads(out.read_text())
    assert len(data) == 6 and list(data[0])[:3] == ["point_id", "routing", "fail"]


@pytest.mark.parametrize("content", [b"plain text" * 100, None])
def test_cli_refuses_bad_db(tmp_path, content):
    p = tmp_path / "bad.sqlite"
    if content is None:
        con = sqlite3.connect(p)
        con.execute("CREATE TABLE t (x)")
        con.commit()
        con.close()
    else:
        p.write_bytes(content)
    before = p.read_bytes()
    for args in (["sweep", "run", "all_reduce", *SMALL, "--db", str(p), "--jobs", "1"],
                 ["sweep", "show", "--db", str(p)], ["sweep", "export", "--db", str(p), "--format", "csv"]):
        r = _run(args)
        assert r.exit_code == 2 and len(r.stderr.strip().splitlines()) == 1 and "refusing" in r.stderr
        assert r.stdout == ""
    assert p.read_bytes() == before and os.listdir(tmp_path) == ["bad.sqlite"]


def test_bad_grid_is_one_line(tmp_path):
    r = _run(["sweep", "run", "all_reduce", *SMALL, "--grid", "colour=red", "--db", str(tmp_path / "x.sqlite")])
    assert r.exit_code == 2 and "colour" in r.stderr and len(r.stderr.strip().splitlines()) == 1
    assert not (tmp_path / "x.sqlite").exists()


def test_sweep_file_cli(tmp_path):
    f = tmp_path / "s.toml"
    f.write_text('[base]\ntopo = "fat-tree"\nhosts = 16\nradix = 8\n[zip]\nsize = ["1MiB", "4MiB"]\n'
                 'algo = ["ring", "tree"]\n')
    r = _run(["sweep", "run", "all_reduce", "--file", str(f), "--db", str(tmp_path / "f.sqlite"), "--jobs", "1",
              "--json"])
    assert r.exit_code == 0, r.stderr
    assert json.loads(r.stdout)["points"] == 2


def _png_ok(path):
    data = open(path, "rb").read()
    return data[:8] == b"\x89PNG\r\n\x1a\n" and len(data) > 10_000


def test_plots(db, tmp_path):
    pytest.importorskip("matplotlib")
    png, svg = str(tmp_path / "p.png"), str(tmp_path / "p.svg")
    r = _run(["sweep", "show", "--db", db, "--plot", png, "--x", "fail", "--y", "busbw_GBps"])
    assert r.exit_code == 0, r.stderr
    assert _png_ok(png)
    r = _run(["sweep", "show", "--db", db, "--plot", svg, "--x", "routing", "--y", "time_us", "--json"])
    json.loads(r.stdout)
    text = open(svg).read()
    assert "<svg" in text and text.count("<path") > 10
    run_png = str(tmp_path / "run.png")
    r = _run(["run", "all_reduce", *SMALL[:6], "--sizes", "1MiB:16MiB:x4", "--report", "--top", "3", "--plot", run_png])
    assert r.exit_code == 0, r.stderr
    assert _png_ok(run_png)


def test_plot_without_matplotlib(db, tmp_path, monkeypatch):
    monkeypatch.setitem(sys.modules, "matplotlib", None)
    r = _run(["sweep", "show", "--db", db, "--plot", str(tmp_path / "p.png")])
    assert r.exit_code == 2 and "pip install 'fabric-emu[plot]'" in r.stderr
    assert not (tmp_path / "p.png").exists()


def test_sigkill_then_resume_gives_every_point_once(tmp_path):
    path = str(tmp_path / "k.sqlite")
    args = [sys.executable, "-m", "cli.main", "sweep", "run", "all_to_all", "--topo", "fat-tree", "--set",
            "hosts=64", "--set", "radix=16", "--size", "1MiB", "--grid", "seed=" + ",".join(map(str, range(32))),
            "--grid", "routing=ecmp,spray", "--db", path, "--jobs", "1"]
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    proc = subprocess.Popen(args, cwd=root, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    stored = 0
    deadline = time.time() + 60
    while time.time() < deadline and proc.poll() is None:
        time.sleep(0.05)
        if os.path.exists(path):
            try:
                con = sqlite3.connect(f"file:{path}?mode=ro", uri=True, timeout=1)
                stored = con.execute("SELECT COUNT(*) FROM points").fetchone()[0]
                con.close()
            except sqlite3.Error:
                continue
            if stored >= 3:
                break
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    con = sqlite3.connect(path)
    killed_at = con.execute("SELECT COUNT(*) FROM points").fetchone()[0]
    con.close()
    assert 3 <= killed_at < 64, killed_at  # 64 points: enough that the kill lands mid-sweep on a fast machine
    r = subprocess.run(args, cwd=root, capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    con = sqlite3.connect(path)
    ids = [x[0] for x in con.execute("SELECT point_id FROM points")]
    combos = set(con.execute("SELECT seed, routing FROM points WHERE status = 'ok'"))
    con.close()
    assert len(ids) == len(set(ids)) == 64
    assert combos == {(s, rt) for s in range(32) for rt in ("ecmp", "spray")}


def test_dask_local_cluster(tmp_path):
    distributed = pytest.importorskip("distributed")
    with distributed.LocalCluster(n_workers=1, threads_per_worker=2, processes=False,
                                  dashboard_address=None) as cluster:
        r = _run(["sweep", "run", "all_reduce", *SMALL, "--grid", "algo=ring,tree", "--grid", "seed=0,1",
                  "--db", str(tmp_path / "d.sqlite"), "--scheduler", cluster.scheduler_address, "--json"])
    assert r.exit_code == 0, r.stderr
    out = json.loads(r.stdout)
    assert out["stored_ok"] == 4 and out["evaluated"] == 4


STEP = ["--model", "llama3-8b", "--system", "hgx-h100", "--global-batch", "64", "--seq-len", "4096",
        "--recompute", "full"]


def test_step_sweep_failures_never_shorten_the_step(tmp_path):
    pytest.importorskip("workloads.step")
    path = str(tmp_path / "st.sqlite")
    r = _run(["sweep", "run", "step", *STEP, "--gpus", "16", "--grid", "fail=none,each:spine", "--db", path,
              "--jobs", "1", "--json"])
    assert r.exit_code == 0, r.stderr
    assert json.loads(r.stdout)["stored_ok"] >= 2
    rows = json.loads(_run(["sweep", "show", "--db", path, "--sort", "slowdown", "--json",
                            "--columns", "fail,step_time_s,slowdown"]).stdout)
    assert rows[0]["fail"] == "none" or rows[0]["slowdown"] == 1.0
    assert all(x["slowdown"] >= 1.0 - 1e-9 for x in rows)


def test_step_report_plot(tmp_path):
    pytest.importorskip("matplotlib")
    pytest.importorskip("workloads.step")
    png = str(tmp_path / "s.png")
    r = _run(["step", *STEP, "--gpus", "16", "--micro-batch", "1", "--precision", "bf16", "--report",
              "--plot", png])
    assert r.exit_code == 0, r.stderr
    assert _png_ok(png)
