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


def test_validation_table_fits_100_columns_without_cutting():
    from types import SimpleNamespace as N

    from cli.report import validation_table
    from cli.output import stdout_console
    import io

    rows = [N(id="gb200-nvl72-allreduce-72-by-size-long-id", quantity="busbw GB/s", predicted=12345.6,
              measured=12000.0, rel_error=-0.123, tolerance=0.15, passed=True,
              note="hier(ring+nvls) with a long explanation of the model that has to wrap at words")] * 3
    rep = N(source="points.toml", rows=rows, mean_abs_error=0.05, max_abs_error=0.12)
    con = stdout_console()
    con.file = io.StringIO()
    con.print(validation_table(rep))
    text = con.file.getvalue()
    assert max(len(line) for line in text.splitlines()) <= 100
    for piece in ("gb200-nvl72-allreduce-72-by-size-long-id", "12,345.6", "12,000.0", "-12.3%", "15%", "pass"):
        assert piece in text
    assert "explanation" in text and "…" not in text
