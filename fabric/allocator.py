"""Keep freed memory for reuse on large problems: fewer page faults from the big temporaries.

glibc serves every allocation above its mmap threshold (128 KiB, adapting up to 32 MiB) with a fresh
``mmap`` and gives it back to the kernel on ``free``; the next temporary of the same size is then
faulted in and zeroed page by page again. A 16.8 M-flow all-to-all makes dozens of 67-400 MB
temporaries (per-flow columns, index arrays, gathers), and half of its CPU time was system time
(docs/performance.md). With mmap off and the heap never trimmed (``mallopt(M_MMAP_MAX, 0)``,
``mallopt(M_TRIM_THRESHOLD, 2 GiB - 1)``), a freed block goes back to malloc's free lists and the
next temporary reuses its pages: the same N = 4,096 engine stage took 2.3-2.4 s of system time
instead of 5.4-7.9 s, with the same peak RSS (in-process, glibc 2.36, 2026-12-01).

numpy also asks the kernel for transparent huge pages on every large array (``madvise(MADV_HUGEPAGE)``),
so each of those temporaries first waits for the kernel to find, compact and zero 2 MiB pages. On a large
problem that costs more than it saves: the whole N = 4,096 all-to-all took 4.7 s user + 1.0-1.1 s system
with numpy's hint off against 4.5-5.2 s user + 2.1-2.8 s system with it (same JSON, 2 pairs, idle, Linux
6.18 with THP "madvise", 2026-12-02), so problems from :data:`HINT_MIN_ENTRIES` on also turn numpy's hint
off (``numpy._core.multiarray._set_madvise_hugepage(False)``, what ``NUMPY_MADVISE_HUGEPAGE=0`` sets at import).
Smaller ones keep numpy's default: at N = 1,024 (6.3 M entries) the two are within the machine's noise
(``python -m benchmarks.bench_cli --cases a2a-1024-ecmp --repeat 5`` with and without ``--env
NUMPY_MADVISE_HUGEPAGE=0``, twice each: medians 0.87 / 0.87 s with the hint, 0.84 / 0.97 s without).

Before the router sees a problem, a planner that draws large temporaries (the MoE token routing: 33.5 M
selections at 1,024 ranks, in 2 MiB chunks) calls :func:`hold_freed_memory`: glibc's mmap threshold fixed at
its largest value (32 MiB, so it no longer adapts) and no trimming. Its default policy had the draw's freed
chunks unmapped or trimmed and faulted in again (143 k of the 1,024-GPU skewed dispatch's 190 k minor page
faults; 55 k in all with the hold, docs/performance.md "Round 14"). The router's :func:`reuse_freed_memory`
then turns mmap off as before. Turning mmap off already at the draw was measured too and faulted more in the
engine (139 k in all).

The router and the engine call :func:`reuse_freed_memory` once a problem is large
(:data:`MIN_ENTRIES` flow x hop entries); it changes the process's allocator policy only (memory
freed after that stays with the process for reuse instead of returning to the kernel), never a
result. ``FABRIC_EMU_MALLOC=system`` keeps glibc's defaults. Elsewhere than on glibc it does nothing.

Examples
--------
A small problem leaves the allocator as it is: the answer is whether an earlier, larger problem in this
process already switched it (so the example holds in any process state).

>>> before = bool(_STATE.get("on"))
>>> reuse_freed_memory(entries=0) == before and bool(_STATE.get("on")) == before
True
"""

from __future__ import annotations

import ctypes
import os
import sys

__all__ = ["MIN_ENTRIES", "HINT_MIN_ENTRIES", "MMAP_THRESHOLD_BYTES", "malloc_mode", "hold_freed_memory",
           "reuse_freed_memory"]

#: Flow x hop entries from which the allocator keeps freed memory (a 1,024-GPU all-to-all has 6.3 M).
MIN_ENTRIES = 1 << 22
#: Flow x hop entries from which numpy's huge-page hint is turned off too (a 4,096-GPU all-to-all has ~100 M).
HINT_MIN_ENTRIES = 1 << 25

_M_TRIM_THRESHOLD = -1  # glibc's mallopt parameter numbers (malloc.h)
_M_MMAP_MAX = -4
_M_MMAP_THRESHOLD = -3
#: glibc's largest mmap threshold on 64-bit (HEAP_MAX_SIZE / 2): blocks up to it come from the heap
MMAP_THRESHOLD_BYTES = 32 << 20
_STATE: dict = {}


def malloc_mode() -> str:
    """``FABRIC_EMU_MALLOC``: ``""`` (unset: reuse freed memory on large problems) or ``system`` (glibc's
    defaults); another value is a ``SpecError`` (it was read as unset without a word)."""
    raw = os.environ.get("FABRIC_EMU_MALLOC", "")
    m = raw.strip().lower()
    if m not in ("", "system"):
        from topologies.errors import SpecError, brief

        raise SpecError(f"FABRIC_EMU_MALLOC: {brief(raw)} is not 'system' (glibc's defaults) or unset")
    return m


def reuse_freed_memory(*, entries: int) -> bool:
    """Switch glibc to reusing freed blocks (no mmap, no trimming) for a problem of ``entries``; True if on.

    Idempotent: the first call that qualifies sets it for the rest of the process.
    """
    system = malloc_mode() == "system"
    if entries >= HINT_MIN_ENTRIES and not system and not _STATE.get("hint_off"):
        _no_huge_page_hint()
        _STATE["hint_off"] = True
    if _STATE.get("on"):
        return True
    if entries < MIN_ENTRIES or system:
        return False
    if "mallopt" not in _STATE:
        _STATE["mallopt"] = _mallopt()
    mallopt = _STATE["mallopt"]
    ok = mallopt is not None and mallopt(_M_MMAP_MAX, 0) == 1 and mallopt(_M_TRIM_THRESHOLD, 2**31 - 1) == 1
    _STATE["on"] = ok
    return ok


def hold_freed_memory(*, entries: int) -> bool:
    """Fix glibc's mmap threshold at 32 MiB and stop trimming, for a planner step of ``entries`` elements that
    allocates and frees many large temporaries; True if set (now or by an earlier call).

    Weaker than :func:`reuse_freed_memory` (blocks above 32 MiB are still mapped and unmapped), which the router
    applies afterwards; once that is on this does nothing. Same opt-out (``FABRIC_EMU_MALLOC=system``) and the
    same size threshold (:data:`MIN_ENTRIES`).
    """
    if _STATE.get("on") or _STATE.get("held"):
        return True
    if entries < MIN_ENTRIES or malloc_mode() == "system":
        return False
    if "mallopt" not in _STATE:
        _STATE["mallopt"] = _mallopt()
    mallopt = _STATE["mallopt"]
    ok = (mallopt is not None and mallopt(_M_MMAP_THRESHOLD, MMAP_THRESHOLD_BYTES) == 1
          and mallopt(_M_TRIM_THRESHOLD, 2**31 - 1) == 1)
    _STATE["held"] = ok
    return ok


def _no_huge_page_hint() -> None:
    """Turn numpy's ``madvise(MADV_HUGEPAGE)`` on new arrays off (a private numpy switch; absent: nothing)."""
    try:
        from numpy._core.multiarray import _set_madvise_hugepage
    except ImportError:
        return
    _set_madvise_hugepage(False)


def _mallopt():
    """glibc's ``mallopt`` (None on other platforms or C libraries)."""
    if not sys.platform.startswith("linux"):
        return None
    try:
        f = ctypes.CDLL(None).mallopt
    except (OSError, AttributeError):
        return None
    f.argtypes = [ctypes.c_int, ctypes.c_int]
    f.restype = ctypes.c_int
    return f
