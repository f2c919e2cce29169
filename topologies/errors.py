"""The one exception hierarchy of fabric-emu.

Every layer raises subclasses of :class:`FabricEmuError`. Messages name the
offending field and value and say what is allowed, in one line, so that the CLI
can print them as they are (exit status 2) and tests can match on them.

``topologies`` is the lowest layer, so the hierarchy lives here and the higher
layers re-export it.
"""

from __future__ import annotations

__all__ = [
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
