"""Packaging contract: our packages import from this repository, README commands, CI script."""

import configparser
import importlib
import re
from pathlib import Path

import pytest

from cli.main import check_fabric_package


@pytest.mark.parametrize("name", ["fabric", "topologies", "collectives", "cli", "workloads"])
def test_packages_come_from_this_repository(repo, name):
    mod = importlib.import_module(name)
    assert Path(mod.__file__).resolve().parent == repo / name
    assert getattr(mod, "__fabric_emu__", False), f"{name} lacks the fabric-emu marker"


def test_cli_detects_a_foreign_fabric_package(monkeypatch):
    import sys
    import types

    assert check_fabric_package() is None
    fake = types.ModuleType("fabric")
    fake.__file__ = "/site-packages/fabric/__init__.py"
    monkeypatch.setitem(sys.modules, "fabric", fake)
    msg = check_fabric_package()
    assert msg and "not fabric-emu's" in msg and "virtual environment" in msg


def _readme_commands(repo):
    text = (repo / "README.md").read_text()
    blocks = re.findall(r"```(?:sh|bash|shell)?\n(.*?)```", text, flags=re.S)
    return [line.strip() for line in blocks[0].splitlines() if line.strip() and not line.startswith("#")]


def test_readme_starts_with_two_setup_commands(repo):
    cmds = _readme_commands(repo)
    assert len(cmds) == 2
    assert "fabric-emu demo" in cmds[0]
    assert "pytest" in cmds[1]


def test_ci_runs_the_readme_test_command_verbatim(repo):
    ci = (repo / ".ci" / "run").read_text()
    assert _readme_commands(repo)[1] in ci


def test_tests_are_not_shipped(repo):
    cfg = configparser.ConfigParser()
    cfg.read(repo / "setup.cfg")
    include = cfg["options.packages.find"]["include"].split()
    assert not any(p.startswith("tests") or p.startswith("benchmarks") for p in include)
    from setuptools import find_packages

    found = find_packages(where=str(repo), include=include)
    assert "tests" not in found and {"fabric", "topologies", "collectives", "workloads", "cli"} <= set(found)


def test_pyproject_only_holds_the_build_system(repo):
    import tomllib

    data = tomllib.loads((repo / "pyproject.toml").read_text())
    assert set(data) == {"build-system"}


def test_library_layers_never_print_or_import_the_cli_toolkit(repo):
    bad = []
    for layer in ("fabric", "topologies", "collectives", "workloads"):
        for path in (repo / layer).rglob("*.py"):
            for i, line in enumerate(path.read_text().splitlines(), 1):
                if re.match(r"\s*(import (click|rich)|from (click|rich|cli)\b)|\s*print\(", line):
                    bad.append(f"{path.relative_to(repo)}:{i}: {line.strip()}")
    assert not bad, bad


def test_layers_do_not_import_upward(repo):
    order = ["topologies", "fabric", "collectives", "workloads", "cli"]
    bad = []
    for i, layer in enumerate(order):
        higher = order[i + 1:]
        for path in (repo / layer).rglob("*.py"):
            for n, line in enumerate(path.read_text().splitlines(), 1):
                m = re.match(r"\s*(?:from|import)\s+(\w+)", line)
                if m and m.group(1) in higher:
                    bad.append(f"{path.relative_to(repo)}:{n}: {line.strip()}")
    assert not bad, bad
