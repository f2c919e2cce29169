"""Strict conversion between human-unit strings and SI floats.

Inside fabric-emu every quantity is a float in SI units: bytes, seconds and
bytes per second (link capacity per direction). Humans write ``"800Gb/s"``,
``"900GB/s"``, ``"0.5us"`` or ``"64MiB"``; this module is the one place where
those strings are converted, and it is strict:

* bits (``b``) and bytes (``B``) are different: ``"800Gb/s"`` is 1e11 B/s,
  ``"800GB/s"`` is 8e11 B/s;
* SI prefixes (k, M, G, T, P; powers of 1000) and binary prefixes (Ki, Mi, Gi,
  Ti, Pi; powers of 1024) are different;
* a number without a unit, or a unit that could mean two things (``"800G"``,
  ``"5"``, ``"1.8T"``), is an error that says which forms are accepted.

Examples
--------
>>> parse_bandwidth("800Gb/s")
100000000000.0
>>> parse_bandwidth("1.8TB/s")
1800000000000.0
>>> parse_time("0.5us")
5e-07
>>> parse_size("64MiB")
67108864
>>> format_bandwidth(4.5e11)
'450.0 GB/s'
"""

from __future__ import annotations

import math
import re

from topologies.errors import UnitError

__all__ = [
    "parse_bandwidth",
    "parse_size",
    "parse_time",
    "parse_size_range",
    "parse_quantity",
    "format_bandwidth",
    "format_size",
    "format_time",
    "GB",
    "MAX_SWEEP_SIZES",
]

#: nccl-tests and vendors use GB = 1e9 bytes for bandwidth.
GB = 1e9

#: Most sizes in one sweep (nccl-tests' full 1 B .. 16 GiB x2 sweep has 35).
MAX_SWEEP_SIZES = 100

# SI prefixes and time units as decimal exponents (applied in the decimal
# string, so that "500ns" is exactly the float 5e-07), binary ones as powers of 2.
_SI = {"": 0, "k": 3, "K": 3, "M": 6, "G": 9, "T": 12, "P": 15}
_BIN = {"Ki": 10, "Mi": 20, "Gi": 30, "Ti": 40, "Pi": 50}
_TIME = {"s": 0, "ms": -3, "us": -6, "µs": -6, "μs": -6, "ns": -9, "ps": -12}


def _scaled(num: str, prefix: str) -> float:
    if prefix in _BIN:
        return float(num) * 2.0 ** _BIN[prefix]
    return _pow10(num, _SI[prefix])


def _pow10(num: str, exponent: int) -> float:
    mantissa, _, exp = num.lower().partition("e")
    return float(f"{mantissa}e{int(exp or 0) + exponent}")

_NUM = r"(?P<num>[+-]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)(?:[eE][+-]?[0-9]+)?)"
_BW_RE = re.compile(_NUM + r"\s*(?P<prefix>Ki|Mi|Gi|Ti|Pi|[kKMGTP]?)(?P<unit>[bB])(?:/s|ps)$")
_SIZE_RE = re.compile(_NUM + r"\s*(?P<prefix>Ki|Mi|Gi|Ti|Pi|[kKMGTP]?)(?P<unit>[bB])$")
_BARE_RE = re.compile(_NUM + r"$")
_TIME_RE = re.compile(_NUM + r"\s*(?P<unit>s|ms|us|µs|μs|ns|ps)$")

_BW_FORMS = "a number with a bandwidth unit such as '800Gb/s', '400Gbps', '900GB/s', '1.8TB/s' or '50GiB/s' (b = bits, B = bytes)"
_SIZE_FORMS = "a number of bytes or a number with a size unit such as '4096B', '64KiB', '64MiB', '8GiB' or '1GB' (binary Ki/Mi/Gi or SI k/M/G, B = bytes)"
_TIME_FORMS = "a number with a time unit such as '0.5us', '500ns', '1.2ms' or '2s'"


def _where(field: str | None) -> str:
    return f"{field}: " if field else ""


def _check_text(text: object, field: str | None, forms: str) -> str:
    if isinstance(text, bool) or not isinstance(text, str):
        raise UnitError(f"{_where(field)}expected {forms}, got {text!r}")
    return text.strip()


def _finite(value: float, text: str, field: str | None, forms: str, allow_zero: bool) -> float:
    if not math.isfinite(value) or value < 0 or (value == 0 and not allow_zero):
        raise UnitError(f"{_where(field)}{text!r} must be a positive, finite quantity: {forms}")
    return value


def parse_bandwidth(text: str, *, field: str | None = None) -> float:
    """Parse a bandwidth string into bytes per second.

    Parameters
    ----------
    text : str
        ``"<number><prefix><b|B>/s"`` (``"ps"`` may replace ``"/s"`` for bits:
        ``"400Gbps"``). ``b`` is bits, ``B`` bytes; ``k M G T P`` are powers of
        1000 and ``Ki Mi Gi Ti Pi`` powers of 1024.
    field : str, optional
        Name of the field being parsed, used in the error message.

    Returns
    -------
    float
        Bandwidth in bytes per second.

    Raises
    ------
    UnitError
        If the string has no unit, an ambiguous unit (``"800G"``) or is not a
        positive finite quantity.

    Examples
    --------
    >>> parse_bandwidth("400Gb/s")
    50000000000.0
    >>> parse_bandwidth("900GB/s")
    900000000000.0
    """
    s = _check_text(text, field, _BW_FORMS)
    m = _BW_RE.match(s)
    if not m:
        raise UnitError(f"{_where(field)}cannot read bandwidth {text!r}: expected {_BW_FORMS}")
    if m.group("unit") == "B" and s.endswith("ps"):
        raise UnitError(f"{_where(field)}{text!r} is ambiguous ('Bps'); write bytes as 'GB/s' or bits as 'Gb/s'")
    value = _scaled(m.group("num"), m.group("prefix"))
    if m.group("unit") == "b":
        value /= 8.0
    return _finite(value, text, field, _BW_FORMS, allow_zero=False)


def parse_size(text: str | int, *, field: str | None = None) -> int:
    """Parse a message or buffer size into bytes (an integer).

    Parameters
    ----------
    text : str or int
        ``"<number><prefix>B"``; a plain number (``4096``, ``"4096"``, ``"1e9"``) is taken as bytes.
    field : str, optional
        Name of the field being parsed, used in the error message.

    Returns
    -------
    int
        Size in bytes (rounded to the nearest byte).

    Examples
    --------
    >>> parse_size("8GiB")
    8589934592
    >>> parse_size("1MB")
    1000000
    >>> parse_size("4096")
    4096
    """
    if isinstance(text, int) and not isinstance(text, bool):
        if text < 0:
            raise UnitError(f"{_where(field)}size {text} must not be negative")
        return text
    s = _check_text(text, field, _SIZE_FORMS)
    if _BARE_RE.match(s):  # a plain number is bytes, as nccl-tests' -b / -e read it
        s = s + "B"
    m = _SIZE_RE.match(s)
    if not m:
        raise UnitError(f"{_where(field)}cannot read size {text!r}: expected {_SIZE_FORMS}")
    if m.group("unit") == "b":
        raise UnitError(f"{_where(field)}{text!r} is in bits; sizes are bytes: {_SIZE_FORMS}")
    value = _finite(_scaled(m.group("num"), m.group("prefix")), text, field, _SIZE_FORMS, allow_zero=True)
    if abs(value - round(value)) > 1e-6 * max(1.0, value):
        raise UnitError(f"{_where(field)}{text!r} is {value:g} bytes; a size must be a whole number of bytes")
    return int(round(value))


def parse_time(text: str, *, field: str | None = None) -> float:
    """Parse a time string into seconds.

    Examples
    --------
    >>> parse_time("500ns")
    5e-07
    >>> parse_time("1.2ms")
    0.0012
    """
    s = _check_text(text, field, _TIME_FORMS)
    m = _TIME_RE.match(s)
    if not m:
        raise UnitError(f"{_where(field)}cannot read time {text!r}: expected {_TIME_FORMS}")
    value = _pow10(m.group("num"), _TIME[m.group("unit")])
    return _finite(value, text, field, _TIME_FORMS, allow_zero=True)


def parse_size_range(text: str, *, field: str | None = None) -> list[int]:
    """Parse an nccl-tests style size sweep ``"MIN:MAX[:xFACTOR]"``.

    Sizes go from MIN to MAX multiplying by FACTOR (default 2), as
    ``nccl-tests -b MIN -e MAX -f FACTOR`` does.

    Examples
    --------
    >>> parse_size_range("1KiB:8KiB")
    [1024, 2048, 4096, 8192]
    >>> parse_size_range("1MiB:64MiB:x4")
    [1048576, 4194304, 16777216, 67108864]
    """
    if not isinstance(text, str) or text.count(":") not in (1, 2) or len(text) > 100:
        raise UnitError(f"{_where(field)}expected a size range 'MIN:MAX' or 'MIN:MAX:xFACTOR' such as '1KiB:8GiB', got {text!r}")
    parts = text.split(":")
    lo = parse_size(parts[0], field=field)
    hi = parse_size(parts[1], field=field)
    factor = 2
    if len(parts) == 3:
        f = parts[2].strip()
        if not re.fullmatch(r"x[0-9]+", f) or int(f[1:]) < 2:
            raise UnitError(f"{_where(field)}size range factor {f!r} must look like 'x2' (an integer >= 2)")
        factor = int(f[1:])
    if lo <= 0 or hi < lo:
        raise UnitError(f"{_where(field)}size range {text!r} needs 0 < MIN <= MAX")
    count = 1 + math.floor(math.log(hi / lo, factor) + 1e-9)
    if count > MAX_SWEEP_SIZES:
        raise UnitError(f"{_where(field)}size range {text!r} has {count} sizes; at most {MAX_SWEEP_SIZES} "
                        f"(raise MIN, lower MAX or use a larger factor such as x4)")
    sizes = []
    s = lo
    while s <= hi:
        sizes.append(s)
        s *= factor
    return sizes


_KINDS = {"bandwidth": parse_bandwidth, "size": parse_size, "time": parse_time}


def parse_quantity(text: str, kind: str, *, field: str | None = None) -> float:
    """Parse ``text`` as a quantity of ``kind`` (``bandwidth``, ``size`` or ``time``)."""
    try:
        parser = _KINDS[kind]
    except KeyError:
        raise UnitError(f"quantity kind {kind!r} is not one of {sorted(_KINDS)}") from None
    return parser(text, field=field)


def format_bandwidth(value_Bps: float, *, digits: int = 1) -> str:
    """Format bytes per second as GB/s (GB = 1e9 B), as nccl-tests does.

    Examples
    --------
    >>> format_bandwidth(1e11)
    '100.0 GB/s'
    """
    return f"{value_Bps / GB:.{digits}f} GB/s"


def format_size(size_bytes: float) -> str:
    """Format a byte count with binary prefixes (B, KiB, MiB, GiB, TiB).

    Examples
    --------
    >>> format_size(8 * 2**30)
    '8 GiB'
    >>> format_size(1536)
    '1.5 KiB'
    """
    value = float(size_bytes)
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if abs(value) < 1024 or unit == "TiB":
            break
        value /= 1024.0
    text = f"{value:.2f}".rstrip("0").rstrip(".")
    return f"{text} {unit}"


def format_time(seconds: float) -> str:
    """Format seconds as ns, us, ms or s with three significant digits.

    Examples
    --------
    >>> format_time(2.5e-5)
    '25.0 us'
    >>> format_time(0.0123)
    '12.3 ms'
    """
    s = float(seconds)
    for unit, scale in (("ns", 1e-9), ("us", 1e-6), ("ms", 1e-3)):
        if abs(s) < 1000 * scale:
            return _fmt3(s / scale, unit)
    return _fmt3(s, "s")


def _fmt3(v: float, unit: str) -> str:
    if abs(v) >= 100:
        return f"{v:.0f} {unit}"
    if abs(v) >= 10:
        return f"{v:.1f} {unit}"
    return f"{v:.2f} {unit}"
