"""Where the CLI's output goes: data on stdout, progress and one-line errors on stderr.

Every string that came from the user (topology names, selectors, node and tier
names from graph files, paths) is shown through :func:`clean`: control and
bidirectional-format characters become visible escapes and nothing is read as
rich markup (the consoles have markup and emoji off). This module imports rich
only when a console is made, so ``fabric-emu --help`` stays fast.
"""

from __future__ import annotations

import functools
import json
import sys
import unicodedata

import click

__all__ = ["clean", "stdout_console", "progress_console", "LazyConsole", "fail", "handles_errors", "echo_json",
           "finite"]

_UNSAFE = ("Cc", "Cf", "Cs", "Co", "Cn", "Zl", "Zp")


def clean(text: object) -> str:
    """``text`` as one line that is safe on a terminal: unsafe characters become ``\\xNN``/``\\uNNNN``.

    Examples
    --------
    >>> clean("spine 1")
    'spine 1'
    >>> clean("a" + chr(27) + "[2J" + chr(0x202E) + "b")
    'a\\\\x1b[2J\\\\u202eb'
    """
    s = str(text)
    if s.isprintable():
        return s
    out = []
    for ch in s:
        if ch.isprintable() or (ch == " "):
            out.append(ch)
        elif unicodedata.category(ch) in _UNSAFE or not ch.isprintable():
            code = ord(ch)
            out.append(f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}" if code < 0x10000 else f"\\U{code:08x}")
        else:  # pragma: no cover - every non-printable character has an unsafe category
            out.append(ch)
    return "".join(out)


def _console(file, **kw):
    from rich.console import Console

    return Console(file=file, highlight=False, markup=False, emoji=False, **kw)


class LazyConsole:
    """A rich console made on first use: ``--json`` runs, which print no table, never import rich.

    A quiet console (progress when stderr is not a terminal) swallows ``print`` without being made.
    Every other attribute (read or set, e.g. ``console.file = buffer``) is the real console's.
    """

    _OWN = ("_make", "_quiet", "_real")

    def __init__(self, make, *, quiet: bool = False) -> None:
        object.__setattr__(self, "_make", make)
        object.__setattr__(self, "_quiet", quiet)
        object.__setattr__(self, "_real", None)

    def _console(self):
        if self._real is None:
            object.__setattr__(self, "_real", self._make())
        return self._real

    def print(self, *objects, **kwargs) -> None:
        if not self._quiet or self._real is not None:
            self._console().print(*objects, **kwargs)

    def __getattr__(self, name):
        if name.startswith("__") or name in self._OWN:
            raise AttributeError(name)
        return getattr(self._console(), name)

    def __setattr__(self, name, value) -> None:
        setattr(self._console(), name, value)


def stdout_console(min_width: int = 100):
    """The console for results: no markup, no emoji, at least ``min_width`` columns wide (made on first use)."""
    def make():
        from rich.console import Console

        return _console(sys.stdout, soft_wrap=False, width=max(min_width, Console().width))
    return LazyConsole(make)


def progress_console():
    """Progress goes to stderr, and only to a terminal (scripts and pipes see data or one error line)."""
    quiet = not sys.stderr.isatty()
    return LazyConsole(lambda: _console(sys.stderr, quiet=quiet), quiet=quiet)


def fail(message: str, status: int = 2) -> None:
    """Print ``error: MESSAGE`` as one red line on stderr and exit with ``status``."""
    from rich.text import Text

    line = Text("error:", style="red")
    line.append(" " + clean(message))
    _console(sys.stderr, soft_wrap=True).print(line)
    sys.exit(status)


def handles_errors(f):
    """Turn library errors into one red line on stderr and exit status 2."""
    @functools.wraps(f)
    def wrapper(*args, **kwargs):
        from topologies.errors import FabricEmuError

        try:
            return f(*args, **kwargs)
        except FabricEmuError as exc:
            fail(str(exc))
        except MemoryError:
            fail("out of memory although the estimate was under the limit: lower --memory-limit (or "
                 "FABRIC_EMU_MEMORY_LIMIT) to what this machine has free, or use fewer --ranks")
        except RecursionError:
            fail("input nested too deeply")
    return wrapper


def finite(obj):
    """JSON has no NaN/Infinity: such values become null."""
    if isinstance(obj, float):
        return obj if obj == obj and obj not in (float("inf"), float("-inf")) else None
    if isinstance(obj, dict):
        return {str(k): finite(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [finite(v) for v in obj]
    return obj


def _plain(obj):
    if hasattr(obj, "tolist"):
        return obj.tolist()
    return float(obj)


def echo_json(obj) -> None:
    """Print ``obj`` as indented JSON on stdout (numpy scalars converted, NaN/inf as null)."""
    click.echo(json.dumps(finite(json.loads(json.dumps(obj, default=_plain))), indent=2, allow_nan=False))
