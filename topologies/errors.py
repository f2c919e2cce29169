"""The one exception hierarchy of fabric-emu.

Every layer raises subclasses of :class:`FabricEmuError`. Messages name the
offending field and value and say what is allowed, in one line, so that the CLI
can print them as they are (exit status 2) and tests can match on them.

``topologies`` is the lowest layer, so the hierarchy lives here and the higher
layers re-export it.
"""

from __future__ import annotations

import reprlib

__all__ = [
    "brief",
    "FabricEmuError",
    "SpecError",
    "UnitError",
    "TopologyError",
    "SelectorError",
    "RoutingError",
    "UnreachableError",
    "FlowError",
    "ProblemTooLargeError",
]


class FabricEmuError(Exception):
    """Root of every error fabric-emu raises on purpose."""


class SpecError(FabricEmuError, ValueError):
    """Bad user input: a field has a value that is not allowed."""


class UnitError(SpecError):
    """A quantity string could not be parsed into SI units."""


class TopologyError(FabricEmuError):
    """A topology could not be built or is inconsistent."""


class SelectorError(SpecError):
    """A failure/degradation selector does not name anything in the fabric."""


class RoutingError(FabricEmuError):
    """Routing could not be done (unknown endpoint, bad policy, ...)."""


class UnreachableError(RoutingError):
    """Two endpoints have no path between them (e.g. after link failures)."""


class FlowError(SpecError):
    """A flow set is malformed (negative or NaN sizes, bad dependencies, ...)."""


class ProblemTooLargeError(FabricEmuError):
    """A simulation would need more memory than the configured limit."""


_REPR = reprlib.Repr()
_REPR.maxstring = 80
_REPR.maxother = 80
_REPR.maxlevel = 3
_REPR.maxdict = _REPR.maxlist = _REPR.maxtuple = 6


def brief(value: object) -> str:
    """A short, one-line ``repr`` of a user value for error messages.

    Long strings and deep or long containers are elided (no recursion limit
    can be hit, however deep the value), and ``repr`` escapes control and
    bidirectional-format characters, so the text is safe to show on a terminal.

    Examples
    --------
    >>> len(brief("x" * 500)) < 100
    True
    >>> v = []
    >>> for _ in range(5000):
    ...     v = [v]
    >>> brief(v)
    '[[[[...]]]]'
    >>> brief(chr(27) + "[31m" + chr(0x202E)) == repr(chr(27) + "[31m" + chr(0x202E))
    True
    >>> chr(27) in brief(chr(27))
    False
    """
    try:
        return _REPR.repr(value)
    except Exception:  # a hostile __repr__: say what it is, nothing more
        return f"<{type(value).__name__}>"
