"""What to run: collectives, algorithms, and a collective operation on a group of ranks.

Examples
--------
>>> op = Collective("all_reduce", tuple(range(8)), 1 << 20)
>>> op.n, op.algorithm
(8, 'auto')
"""

from __future__ import annotations

import re

from collections.abc import Mapping
from dataclasses import dataclass, field

from topologies.errors import SpecError, brief

__all__ = ["COLLECTIVES", "ALGORITHMS", "DISPATCH_DTYPES", "NCCL_SWITCH_COLLECTIVES", "PXN_COLLECTIVES", "OLDEST_NCCL", "Collective",
           "Options", "busbw_factor",
           "check_nccl_version"]

COLLECTIVES = ("all_reduce", "reduce_scatter", "all_gather", "all_to_all", "moe_dispatch", "moe_combine",
               "send_recv", "broadcast")
ALGORITHMS = ("ring", "tree", "nvls", "sharp", "hier", "direct", "auto")
#: Dispatch payload types of the MoE ops: DeepEP's FP8 with per-128-channel scales, BF16 (HybridEP's BF16
#: tables), or NVFP4 (TensorRT-LLM's post-quant dispatch). Here, with the other vocabularies, so that the CLI's
#: ``--dispatch-dtype`` default is checked without importing the MoE model; :mod:`collectives.moe` re-exports it.
DISPATCH_DTYPES = ("fp8", "bf16", "nvfp4")
#: Collectives NCCL can run on NVLS (NVLink SHARP) or CollNet (IB SHARP): what ``NCCL_NVLS_ENABLE`` and
#: ``NCCL_COLLNET_ENABLE`` (the ``nvls`` / ``collnet`` options) change.
NCCL_SWITCH_COLLECTIVES = ("all_reduce", "all_gather", "reduce_scatter")
#: Collectives whose point-to-point flows take PXN forwarding as an option (``pxn``); rings, trees and
#: NVLS pick their own forwarding.
PXN_COLLECTIVES = ("all_to_all", "send_recv", "moe_dispatch", "moe_combine")
#: Oldest NCCL release an ``nccl_version`` option takes: the release histories of the tuning tables start there.
OLDEST_NCCL = (2, 18, 0)
_NCCL_RE = re.compile(r"v?2\.(0|[1-9][0-9]{0,2})(?:\.(0|[1-9][0-9]{0,2}))?")  # no leading zeros: 2.021 is not 2.21


def check_nccl_version(text, *, field: str = "nccl_version") -> str:
    """``2.MINOR[.PATCH]`` from 2.18 on, normalised as ``2.M.P`` (``field`` names it in the error).

    Examples
    --------
    >>> check_nccl_version("v2.27"), check_nccl_version(" 2.21.5 ")
    ('2.27.0', '2.21.5')
    """
    m = _NCCL_RE.fullmatch(text.strip()) if isinstance(text, str) else None
    if m is None:
        raise SpecError(f"{field}: {brief(text)} is not an NCCL release such as 2.21.5 or 2.27")
    version = (2, int(m[1]), int(m[2] or 0))
    if version < OLDEST_NCCL:
        raise SpecError(f"{field}: {brief(text)} is older than {'.'.join(map(str, OLDEST_NCCL))}, the oldest "
                        f"release whose tuning tables are modelled")
    return ".".join(map(str, version))

#: Which algorithms apply to which collective (``auto`` always does).
_VALID = {
    "all_reduce": ("ring", "tree", "nvls", "sharp", "hier"),
    "reduce_scatter": ("ring", "nvls", "hier"),
    "all_gather": ("ring", "nvls", "hier"),
    "broadcast": ("ring",),
    "all_to_all": ("direct",),
    "send_recv": ("direct",),
    "moe_dispatch": ("direct", "hier"),
    "moe_combine": ("direct", "hier"),
}


def busbw_factor(collective: str, n: int) -> float:
    """nccl-tests' bus-bandwidth factor (doc/PERFORMANCE.md).

    MoE dispatch/combine report DeepEP's logical bandwidth instead (factor 1).

    Examples
    --------
    >>> busbw_factor("all_reduce", 8), busbw_factor("all_gather", 8)
    (1.75, 0.875)
    """
    if collective in ("moe_dispatch", "moe_combine"):
        return 1.0
    from collectives.nccl_model import busbw_factor as nccl_tests_factor  # the one table (nccl-tests)
    return nccl_tests_factor(collective, n)


def _freeze(key: str, value):
    """A hashable, immutable form of an option value (mappings, lists and sets recursively)."""
    if isinstance(value, Mapping):
        return Options(value)
    if isinstance(value, (list, tuple)):
        return tuple(_freeze(key, v) for v in value)
    if isinstance(value, (set, frozenset)):
        return frozenset(_freeze(key, v) for v in value)
    try:
        hash(value)
    except TypeError:
        raise SpecError(f"options {key}: a {type(value).__name__} value cannot be an option; use numbers, strings, "
                        "tuples, mappings or frozen dataclasses") from None
    return value


class Options(Mapping):
    """Algorithm options as an immutable, hashable mapping (keys sorted, values frozen).

    Two collectives with different options (e.g. token routings) compare unequal
    and hash apart; nested dicts become :class:`Options`, lists tuples.

    Examples
    --------
    >>> a = Options({"pxn": False, "hier": {"inter": "ring"}})
    >>> a["hier"]["inter"], a == {"hier": {"inter": "ring"}, "pxn": False}, hash(a) == hash(Options(a))
    ('ring', True, True)
    """

    __slots__ = ("_items", "_map")

    def __init__(self, data=None):
        if isinstance(data, Options):
            items = data._items
        else:
            pairs = data.items() if isinstance(data, Mapping) else (data or ())
            frozen = {}
            for k, v in pairs:
                if not isinstance(k, str):
                    raise SpecError(f"options: key {k!r} must be a string")
                frozen[k] = _freeze(k, v)
            items = tuple(sorted(frozen.items(), key=lambda kv: kv[0]))
        object.__setattr__(self, "_items", items)
        object.__setattr__(self, "_map", dict(items))

    def __setattr__(self, name, value):
        raise AttributeError("Options are immutable")

    def __getitem__(self, key):
        return self._map[key]

    def __iter__(self):
        return iter(self._map)

    def __len__(self) -> int:
        return len(self._items)

    def __hash__(self) -> int:
        return hash(self._items)

    def __eq__(self, other) -> bool:
        if isinstance(other, Options):
            return self._items == other._items
        if isinstance(other, Mapping):
            return self._map == dict(other)
        return NotImplemented

    def __repr__(self) -> str:
        return f"Options({self._map!r})"

    def __reduce__(self):  # pickle / copy rebuild through __init__ (the slots are read-only)
        return (Options, (self._items,))


@dataclass(frozen=True)
class Collective:
    """One collective on a group of GPU ranks.

    Parameters
    ----------
    collective : str
        One of :data:`COLLECTIVES`.
    ranks : tuple of int
        Global GPU ranks of the group, in group order.
    size_bytes : int
        nccl-tests' size: all-reduce/broadcast buffer, all-gather receive buffer,
        reduce-scatter send buffer, all-to-all per-rank send buffer (``n`` x the
        per-peer chunk), send/recv message. For MoE dispatch/combine: ignored
        (the token-routing model gives the bytes).
    algorithm : str
        One of :data:`ALGORITHMS`.
    label : str
        Group name in congestion reports.
    options : mapping
        Algorithm options (``intra``/``inter`` for ``hier``; ``pxn``; ``moe``: a
        :class:`collectives.moe.TokenRouting`). Stored as :class:`Options` (frozen,
        hashable), so options take part in equality and hashing.

    Examples
    --------
    >>> a = Collective("all_to_all", (0, 1), 64, options={"pxn": False})
    >>> a == Collective("all_to_all", (0, 1), 64, options={"pxn": True}), a.options["pxn"]
    (False, False)
    """

    collective: str
    ranks: tuple
    size_bytes: int
    algorithm: str = "auto"
    label: str = ""
    options: Options = field(default_factory=Options)

    def __post_init__(self) -> None:
        if self.collective not in COLLECTIVES:
            raise SpecError(f"collective: {self.collective!r} is not one of {', '.join(COLLECTIVES)}")
        if self.algorithm not in ALGORITHMS:
            raise SpecError(f"algo: {self.algorithm!r} is not one of {', '.join(ALGORITHMS)}")
        if self.algorithm != "auto" and self.algorithm not in _VALID[self.collective]:
            raise SpecError(f"algo: {self.algorithm!r} does not apply to {self.collective}; use one of "
                            f"{', '.join(_VALID[self.collective] + ('auto',))}")
        ranks = tuple(int(r) for r in self.ranks)
        if len(ranks) < 2:
            raise SpecError(f"ranks: a collective needs at least 2 ranks, got {len(ranks)}")
        if len(set(ranks)) != len(ranks):
            raise SpecError("ranks: a group must not list a rank twice")
        object.__setattr__(self, "ranks", ranks)
        if not isinstance(self.options, Options):
            if self.options is not None and not isinstance(self.options, Mapping):
                raise SpecError(f"options: expected a mapping of option names to values, got "
                                f"{type(self.options).__name__}")
            object.__setattr__(self, "options", Options(self.options))
        if isinstance(self.size_bytes, bool) or not isinstance(self.size_bytes, int) or self.size_bytes < 0:
            raise SpecError(f"size: {self.size_bytes!r} must be a whole number of bytes >= 0")
        if not self.label:
            object.__setattr__(self, "label", f"{self.collective}[{len(ranks)}]")

    @property
    def n(self) -> int:
        return len(self.ranks)
