"""Compiled kernels (numba): when to use them.

numba is an install dependency, but everything works without it (the
pure-numpy code of :mod:`fabric.fill`, :mod:`fabric.reductions` and
:mod:`fabric.eventloop` is the reference, and the tests run both; every
compiled kernel gives the numpy path's bits exactly). ``FABRIC_EMU_KERNELS``
chooses:

* ``auto`` (default): each compiled kernel from a measured problem size on,
  where it pays for numba's import and first cached calls (0.7-1.0 s of CPU):
  :data:`MIN_ENTRIES_INDEX` adjacency entries for the index build, column
  merge and per-resource reductions of :mod:`fabric.index_kernels` (fewer,
  :data:`MIN_ENTRIES_INDEX_LOADED`, once numba is loaded), ``fill.FILL_MIN_ENTRIES``
  for the fill (:mod:`fabric.fillkernel`; :data:`FILL_MIN_ENTRIES_LOADED` once it ran compiled), ``eventloop.EPOCH_MIN_FLOWS`` for the
  epoch passes (:mod:`fabric.epoch_kernels`), ``route_kernels`` thresholds for
  the route walk, ``collectives.token_routing.COMPILED_MIN_SELECTIONS`` for the
  MoE token draw (``collectives.token_kernels``) (docs/performance.md);
* ``numba``: every compiled kernel on every problem;
* ``numpy``: never.

The kernels are compiled on first use and cached (numba's ``cache=True``) in
``$FABRIC_EMU_CACHE`` or ``~/.cache/fabric-emu/numba`` -- never next to the
source.

Examples
--------
>>> mode() in ("numpy", "numba", "auto")
True
>>> use_compiled(10, None) if mode() != "numba" else False
False
"""

from __future__ import annotations

import os
import time


__all__ = ["MIN_ENTRIES_INDEX", "MIN_ENTRIES_INDEX_LOADED", "FILL_MIN_ENTRIES_LOADED", "MODES", "mode", "available",
           "use_compiled", "use_index", "use_fill", "fill_loaded", "index", "load_seconds", "timed", "jit"]

#: Adjacency entries (flows x hops) from which ``auto`` uses the kernels of :mod:`fabric.index_kernels`, when
#: numba is not loaded yet: numba's import and first (cached) calls cost 0.8-1.0 s of CPU (a quarter of it is
#: the scipy.linalg import numba makes), the kernels save ~1.85e-8 s per entry (1.7e-8 at N = 1,024, 2.0e-8
#: and more at N = 4,096): break-even ~48 M entries (docs/performance.md, 2026-12-02).
MIN_ENTRIES_INDEX = 48_000_000

#: The same once numba is loaded in this process (by any kernel): a kernel then pays only for loading its
#: own cached machine code, 7-24 ms each (60-80 ms for all seven), which the CSC build alone saves from ~1.7 M
#: entries and all of them together from ~4 M (docs/performance.md).
MIN_ENTRIES_INDEX_LOADED = 1 << 21

#: Adjacency entries from which ``auto`` fills on the compiled kernel (:mod:`fabric.fillkernel`) once an
#: earlier fill of this process ran on it (its machine code is loaded: no import, no cache load left to pay),
#: instead of ``fill.FILL_MIN_ENTRIES``. Loaded, it was faster at every size measured (routed leaf-spine
#: problems, whole ``maxmin_rates`` CPU: 15 k entries 2.1 vs 3.9 ms in numpy, 63 k 3.6 vs 7.5 ms, 1.0 M 35 vs
#: 53 ms); the 16k case's NVLink stage (2.06 M entries, after a network stage of 33 M) 0.14 -> 0.04 s
#: (docs/performance.md, 2026-12-02). Kept at 64 k entries: below, a fill costs milliseconds either way.
FILL_MIN_ENTRIES_LOADED = 1 << 16

_STATE: dict = {"load_s": 0.0}


#: Values of ``FABRIC_EMU_KERNELS`` (unset or empty: ``auto``).
MODES = ("auto", "numpy", "numba")


def mode() -> str:
    """``FABRIC_EMU_KERNELS``: ``auto`` (default), ``numpy`` or ``numba``; another value is a ``SpecError``
    (a misspelt ``numpi`` ran ``auto`` without a word)."""
    raw = os.environ.get("FABRIC_EMU_KERNELS", "auto")
    m = raw.strip().lower() or "auto"
    if m not in MODES:
        from topologies.errors import SpecError, brief

        raise SpecError(f"FABRIC_EMU_KERNELS: {brief(raw)} is not one of {', '.join(MODES)} (or unset)")
    return m


def timed(f):
    """``f()``, its wall time added to :func:`load_seconds` (loading compiled code)."""
    t = time.perf_counter()
    try:
        return f()
    finally:
        _STATE["load_s"] += time.perf_counter() - t


def available() -> bool:
    """Whether numba can be imported (imported once, lazily; sets numba's cache folder first)."""
    if "numba" not in _STATE:
        os.environ.setdefault("NUMBA_CACHE_DIR", os.environ.get("FABRIC_EMU_CACHE") or os.path.join(
            os.path.expanduser("~"), ".cache", "fabric-emu", "numba"))
        t = time.perf_counter()
        try:
            import numba  # noqa: F401
        except ImportError:
            _STATE["numba"] = False
        else:
            _STATE["numba"] = True
        _STATE["load_s"] += time.perf_counter() - t
    return _STATE["numba"]


def jit(fn):
    """``fn`` compiled lazily by ``numba.njit(cache=True, nogil=True, error_model="numpy")`` when numba is
    installed (the options every serial kernel module uses), else ``fn`` itself (importable for doctests;
    never called compiled then)."""
    if not available():
        return fn
    from numba import njit
    return njit(cache=True, nogil=True, error_model="numpy")(fn)


def use_compiled(entries: int, min_entries: int | None) -> bool:
    """Whether a kernel runs compiled on a problem of ``entries`` adjacency entries.

    ``numba``: always (when numba is installed); ``numpy``: never; ``auto``: from ``min_entries`` on
    (``None``: never under ``auto``).
    """
    m = mode()
    if m == "numpy" or (m == "auto" and (min_entries is None or entries < min_entries)):
        return False
    return available()


def use_index(entries: int) -> bool:
    """Whether the kernels of :mod:`fabric.index_kernels` run on a problem of ``entries`` adjacency entries."""
    loaded = _STATE.get("numba") is True
    return use_compiled(entries, MIN_ENTRIES_INDEX_LOADED if loaded else MIN_ENTRIES_INDEX)


def use_fill(entries: int, min_entries: int | None) -> bool:
    """Whether the fill runs compiled on ``entries`` adjacency entries (``min_entries``: its threshold while the
    compiled fill has not run in this process; :data:`FILL_MIN_ENTRIES_LOADED` once it has)."""
    return use_compiled(entries, FILL_MIN_ENTRIES_LOADED if fill_loaded() else min_entries)


def fill_loaded() -> bool:
    """Whether the compiled fill's machine code is loaded in this process (its round kernel has a signature)."""
    import sys

    fk = sys.modules.get("fabric.fillkernel")
    return bool(getattr(getattr(fk, "rounds", None), "signatures", None))


def index():
    """:mod:`fabric.index_kernels` (imports numba; call only after :func:`use_compiled` said yes)."""
    if "index" not in _STATE:
        def load():
            from fabric import index_kernels
            return index_kernels
        _STATE["index"] = timed(load)
    return _STATE["index"]


def load_seconds() -> float:
    """Wall seconds this process spent importing numba and the compiled kernels (0 if never)."""
    return float(_STATE["load_s"])
