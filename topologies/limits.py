"""Resource limits on user input: file sizes and the memory a problem may need.

Every limit has a default, an environment variable and (in the CLI) an
option; the library functions also take it as an argument.

================================  ============================  ==========================
limit                             environment variable          default
================================  ============================  ==========================
memory a build or run may need    ``FABRIC_EMU_MEMORY_LIMIT``   8 GiB (``--memory-limit``)
spec / validation file size       ``FABRIC_EMU_MAX_INPUT``      4 MiB
graph file (.json / .graphml)     ``FABRIC_EMU_MAX_GRAPH``      128 MiB
================================  ============================  ==========================

Values are sizes with a unit (``"16GiB"``) or a plain number of bytes.

Examples
--------
>>> memory_limit_bytes("2GiB")
2147483648
>>> check_memory(1 << 20, what="toy", hint="none needed", limit="1GiB")
>>> try:
...     check_memory(3 << 30, what="toy", hint="use fewer ranks", limit="1GiB")
... except ProblemTooLargeError as e:
...     print(str(e)[:48])
toy needs about 3 GiB (estimate), over the memor
"""

from __future__ import annotations

import os

from topologies.errors import ProblemTooLargeError, SpecError, brief
from topologies.units import format_size, parse_size

__all__ = [
    "whole_number",
    "MAX_RADIX",
    "MAX_PLANES",
    "MEMORY_LIMIT_ENV",
    "MAX_INPUT_ENV",
    "MAX_GRAPH_ENV",
    "MAX_SEED",
    "MAX_HIDDEN",
    "DEFAULT_MEMORY_LIMIT_BYTES",
    "DEFAULT_MAX_INPUT_BYTES",
    "DEFAULT_MAX_GRAPH_BYTES",
    "memory_limit_bytes",
    "max_input_bytes",
    "max_graph_bytes",
    "check_memory",
    "parse_limit",
]

MEMORY_LIMIT_ENV = "FABRIC_EMU_MEMORY_LIMIT"
MAX_INPUT_ENV = "FABRIC_EMU_MAX_INPUT"
MAX_GRAPH_ENV = "FABRIC_EMU_MAX_GRAPH"

#: The flow engine's own default ceiling (fabric.engine.simulate) is 8 GiB too.
DEFAULT_MEMORY_LIMIT_BYTES = 8 << 30
#: Largest message size of a collective (1 PiB, far beyond any GPU's memory: 288 GB HBM on B300);
#: above it the times overflow to meaningless values. `run --size`, sweeps and validation points.
MAX_MESSAGE_BYTES = 1 << 50
#: Largest seed (of ECMP hashing and token routing): a signed 64-bit integer, what numpy's generators
#: and the sweep store (SQLite INTEGER) hold; a sweep grid value above it crashed the store.
MAX_SEED = 2**63 - 1
#: Largest MoE hidden size of a token (16 Mi channels; published models reach 18,432): `run --hidden`,
#: sweeps and the token-routing model itself (a sweep evaluated hidden = 10^12 without a word).
MAX_HIDDEN = 1 << 24
#: Port rates accepted for one cable, in bytes/s: 1 Gb/s to 100 Tb/s. AI fabrics use 10 GbE and up and
#: the fastest shipping ports run 1.6 Tb/s; far outside this range times over- or underflow to
#: meaningless values (a 1e-300 Gb/s link gave a 0.0 GB/s bisection and 10^10 us all-reduces).
LINK_RATE_BOUNDS_BPS = (1e9 / 8, 100e12 / 8)
#: Spec and validation files are a few kB; 4 MiB is three orders of magnitude of headroom.
DEFAULT_MAX_INPUT_BYTES = 4 << 20
#: A node-link JSON export takes ~150 B per directed link: 128 MiB is ~900 k links.
DEFAULT_MAX_GRAPH_BYTES = 128 << 20


#: Largest switch radix accepted: the biggest switch ASICs have 512 ports in breakout
#: (Spectrum-X SN5600: 64 x 800G as 512 x 100G); 4096 leaves room and keeps the sizing loops cheap.
MAX_RADIX = 4096
#: Network planes: multiplane NICs split a port over 2-8 planes; 64 bounds the loops.
MAX_PLANES = 64


def whole_number(value, *, field: str, low: int = 1, high: int | None = None) -> int:
    """``value`` as an int in ``[low, high]``, for library callers: one :class:`SpecError` line otherwise.

    Accepts Python and numpy integers only (no bools, floats, NaN, infinity, strings or ``None``).

    Examples
    --------
    >>> whole_number(16, field="hosts")
    16
    >>> whole_number(float("nan"), field="hosts")
    Traceback (most recent call last):
    ...
    topologies.errors.SpecError: hosts: nan is not allowed; give a whole number >= 1
    """
    import numbers

    allowed = f"a whole number >= {low}" + (f" and <= {high}" if high is not None else "")
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise SpecError(f"{field}: {brief(value)} is not allowed; give {allowed}")
    out = int(value)
    if out < low or (high is not None and out > high):
        raise SpecError(f"{field}: {brief(out)} is out of range; give {allowed}")
    return out


def parse_limit(value, *, field: str) -> int:
    """A limit given as bytes (int or digit string) or a size string; must be > 0."""
    if isinstance(value, str) and value.strip().isascii() and value.strip().isdigit():
        value = int(value.strip())
    try:
        out = parse_size(value, field=field)
    except SpecError:
        raise SpecError(f"{field}: {brief(value)} is not a size such as '8GiB' or a number of bytes") from None
    if out <= 0:
        raise SpecError(f"{field}: {brief(value)} must be a positive size such as '8GiB'")
    return out


def _from_env(name: str, default: int) -> int:
    raw = os.environ.get(name)
    if raw is None or raw.strip() == "":
        return default
    return parse_limit(raw, field=name)


def memory_limit_bytes(override=None) -> int:
    """The memory limit: ``override`` if given, else ``$FABRIC_EMU_MEMORY_LIMIT``, else 8 GiB."""
    if override is not None:
        return parse_limit(override, field="--memory-limit")
    return _from_env(MEMORY_LIMIT_ENV, DEFAULT_MEMORY_LIMIT_BYTES)


def max_input_bytes() -> int:
    """Largest spec or validation file read (``$FABRIC_EMU_MAX_INPUT``, default 4 MiB)."""
    return _from_env(MAX_INPUT_ENV, DEFAULT_MAX_INPUT_BYTES)


def max_graph_bytes() -> int:
    """Largest graph file read (``$FABRIC_EMU_MAX_GRAPH``, default 128 MiB)."""
    return _from_env(MAX_GRAPH_ENV, DEFAULT_MAX_GRAPH_BYTES)


def check_memory(estimate_bytes: float, *, what: str, hint: str, limit=None, time_s: float | None = None) -> None:
    """Raise :class:`ProblemTooLargeError` when ``estimate_bytes`` exceeds the memory limit.

    The message gives the estimate, the limit and how to set it, and ``hint``
    (the options that shrink the problem).
    """
    lim = memory_limit_bytes(limit)
    if estimate_bytes <= lim:
        return
    est = format_size(estimate_bytes) if estimate_bytes < 1 << 60 else f"{estimate_bytes:.3g} B"
    took = "" if time_s is None else f" and {_duration(time_s)}"
    raise ProblemTooLargeError(
        f"{what} needs about {est}{took} (estimate), over the memory limit of {format_size(lim)} "
        f"(set with --memory-limit or {MEMORY_LIMIT_ENV}); {hint}")


def _duration(seconds: float) -> str:
    if seconds < 120:
        return f"{seconds:.0f} s"
    if seconds < 7200:
        return f"{seconds / 60:.0f} min"
    if seconds < 172800:
        return f"{seconds / 3600:.0f} h"
    return f"{seconds / 86400:.3g} days"
