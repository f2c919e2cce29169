"""Options shared by several commands, and the parameter types the CLI needs.

Choice lists come from the library's vocabularies (``collectives.ALGORITHMS``,
``fabric.POLICIES`` ...) through :class:`VocabularyChoice`, which imports the
library only when a command parses or shows the option, so ``fabric-emu
--help`` does not pay for numpy and networkx.
"""

from __future__ import annotations

import importlib
import re

import click

__all__ = ["VocabularyChoice", "AsciiInt", "parse_sets", "refuse_repeats", "topo_options", "json_option", "failure_options",
           "memory_option", "given_options"]


class VocabularyChoice(click.Choice):
    """A :class:`click.Choice` whose choices are ``module.NAME`` (plus ``extra``), read when first needed."""

    def __init__(self, source: str, *, extra: tuple = (), exclude: tuple = ()) -> None:
        self._source, self._extra, self._exclude = source, tuple(extra), tuple(exclude)
        self._choices = None
        self.case_sensitive = True

    @property
    def choices(self) -> tuple:
        if self._choices is None:
            module, _, name = self._source.rpartition(".")
            values = tuple(getattr(importlib.import_module(module), name))
            self._choices = tuple(v for v in values + self._extra if v not in self._exclude)
        return self._choices

    @choices.setter
    def choices(self, value) -> None:  # click's Choice.__init__ and copies assign it
        self._choices = tuple(value)


class AsciiInt(click.ParamType):
    """An integer written in ASCII digits (``int()`` also takes ``'٣'``, ``'1_000'`` and ``' 7 '``)."""

    name = "integer"
    _RE = re.compile(r"[+-]?[0-9]{1,30}")

    def __init__(self, min: int | None = None, max: int | None = None) -> None:
        self.min, self.max = min, max

    def convert(self, value, param, ctx):
        if isinstance(value, int) and not isinstance(value, bool):
            n = value
        elif isinstance(value, str) and self._RE.fullmatch(value):
            n = int(value)
        else:
            self.fail(f"{value!r} is not an integer in ASCII digits", param, ctx)
        if (self.min is not None and n < self.min) or (self.max is not None and n > self.max):
            span = (f"between {self.min} and {self.max}" if self.min is not None and self.max is not None
                    else f">= {self.min}" if self.min is not None else f"<= {self.max}")
            self.fail(f"{n} must be {span}", param, ctx)
        return n


def parse_sets(items: tuple[str, ...]) -> dict[str, str]:
    """``("domains=4", "scaleout=quantum-x800")`` -> dict; malformed or repeated items raise SpecError."""
    from topologies.errors import SpecError, brief

    out: dict[str, str] = {}
    for item in items:
        key, sep, value = item.partition("=")
        if not sep or not key.strip() or not value.strip():
            raise SpecError(f"--set {brief(item)}: expected KEY=VALUE, e.g. --set domains=4")
        if key.strip() in out:
            raise SpecError(f"--set {brief(key.strip())}: given twice ({brief(out[key.strip()])} and "
                            f"{brief(value.strip())}); give it once")
        out[key.strip()] = value.strip()
    return out


def refuse_repeats(option: str, values) -> None:
    """Refuse a repeatable option given one value twice (``--id X --id X``), naming the value.

    The command would otherwise do the work once and say nothing, so a script that expects one row per
    value gets fewer rows than it asked for. Values are compared as written, whitespace stripped.
    """
    from topologies.errors import SpecError, brief

    seen = set()
    for v in values:
        key = str(v).strip()
        if key in seen:
            raise SpecError(f"{option} {brief(key)}: given twice; give each value once")
        seen.add(key)


def given_options(ctx: click.Context) -> set[str]:
    """Names of the parameters the user gave on the command line (not defaults)."""
    from click.core import ParameterSource

    return {name for name in ctx.params
            if ctx.get_parameter_source(name) not in (ParameterSource.DEFAULT, ParameterSource.DEFAULT_MAP, None)}


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


def memory_option(f):
    return click.option("--memory-limit", "memory_limit", default=None, metavar="SIZE",
                        help="Refuse problems estimated to need more memory than this, e.g. 16GiB "
                             "(default: $FABRIC_EMU_MEMORY_LIMIT or 8GiB).")(f)


def json_option(f):
    return click.option("--json", "as_json", is_flag=True, help="Print machine-readable JSON on stdout.")(f)
