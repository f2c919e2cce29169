"""Options shared by several commands (``--set``, ``--fail``, ``--degrade``, ``--json``)."""

from __future__ import annotations

import click

from topologies.errors import SpecError

__all__ = ["parse_sets", "topo_options", "json_option", "failure_options"]


def parse_sets(items: tuple[str, ...]) -> dict[str, str]:
    """``("domains=4", "scaleout=quantum-x800")`` -> dict; malformed items raise SpecError."""
    out: dict[str, str] = {}
    for item in items:
        key, sep, value = item.partition("=")
        if not sep or not key.strip() or not value.strip():
            raise SpecError(f"--set {item!r}: expected KEY=VALUE, e.g. --set domains=4")
        out[key.strip()] = value.strip()
    return out


def topo_options(f):
    """TOPO argument and ``--set KEY=VALUE`` overrides."""
    f = click.option("--set", "sets", multiple=True, metavar="KEY=VALUE",
                     help="Override a preset parameter (repeatable), e.g. --set domains=4.")(f)
    return click.argument("topo", metavar="TOPO")(f)


def failure_options(f):
    f = click.option("--degrade", "degrade", multiple=True, metavar="SELECTOR=VALUE",
                     help="Reduce capacity, e.g. 'leaf 0 spine 1=200Gb/s' or 'spine 3=50%'.")(f)
    return click.option("--fail", "fail", multiple=True, metavar="SELECTOR",
                        help="Fail cables, e.g. 'spine 3', 'gpu 17 nvlink plane 4' (repeatable).")(f)


def json_option(f):
    return click.option("--json", "as_json", is_flag=True, help="Print machine-readable JSON on stdout.")(f)
