"""Human output of the reports: units, plain words, 100 columns, the congestion report's parts."""

from __future__ import annotations

import json

from click.testing import CliRunner

from cli.app import cli


def _run(args):
    return CliRunner().invoke(cli, args, catch_exceptions=False)


def test_topo_list_speaks_units():
    out = _run(["topo", "list"]).stdout
    assert "link=400Gb/s" in out and "50000000000" not in out
    assert "scaleout=none" in out and "None" not in out
    assert max(len(line) for line in out.splitlines()) <= 100
    params = {p["name"]: p["params"] for p in json.loads(_run(["topo", "list", "--json"]).stdout)}
    assert params["fat-tree"]["link"] == 50e9          # machines keep SI numbers


def test_single_gpu_hosts_are_not_nvlink_domains():
    out = _run(["topo", "show", "fat-tree", "--set", "hosts=16", "--set", "radix=8"]).stdout
    assert "NVLink domain" in out and "16 in 16" not in out and "single-GPU hosts" in out
    out = _run(["topo", "show", "hgx-h100"]).stdout
    assert "8 in 1 NVLink domain" in out and "domain(s)" not in out


def test_congestion_report_parts_and_width():
    r = _run(["run", "all_to_all", "--topo", "fat-tree", "--set", "hosts=16", "--set", "radix=8", "--set",
              "oversubscription=2", "--size", "4MiB", "--report", "--top", "3"])
    assert r.exit_code == 0, r.stderr
    out = r.stdout
    hot = out.split("hottest links")[1].split("per-tier")[0]
    assert sum(1 for line in hot.splitlines() if "->" in line) == 3      # --top 3
    assert "links by utilization 0→100%" in out and "verdict:" in out and "bars: green below 70 %" in out
    assert max(len(line) for line in out.splitlines()) <= 100
