"""Small helpers shared by the benchmarks: timing, peak memory, machine description, tables."""

from __future__ import annotations

import datetime
import os
import platform
import resource
import subprocess
import sys
import time
from contextlib import contextmanager

__all__ = ["machine", "peak_rss_MB", "timer", "print_table"]


def machine() -> str:
    """One line: CPU model, cores, RAM, Python and library versions, date."""
    cpu = platform.processor() or platform.machine()
    try:
        out = subprocess.run(["lscpu"], capture_output=True, text=True, check=False).stdout
        for line in out.splitlines():
            if line.startswith("Model name:"):
                cpu = line.split(":", 1)[1].strip()
    except OSError:
        pass
    mem = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 2**30
    import networkx
    import numpy
    import scipy
    return (f"{cpu}, {os.cpu_count()} cores, {mem:.0f} GiB RAM; Python {platform.python_version()}, "
            f"numpy {numpy.__version__}, scipy {scipy.__version__}, networkx {networkx.__version__}; "
            f"{datetime.date.today().isoformat()}")


def peak_rss_MB() -> float:
    """Peak resident set size of this process so far, in MB (1e6 B)."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024 / 1e6


@contextmanager
def timer(results: dict, key: str):
    t0 = time.perf_counter()
    yield
    results[key] = time.perf_counter() - t0


def print_table(headers: list[str], rows: list[list], file=sys.stdout) -> None:
    widths = [max(len(str(h)), *(len(str(r[i])) for r in rows)) for i, h in enumerate(headers)]
    fmt = " | ".join(f"{{:>{w}}}" for w in widths)
    print(fmt.format(*headers), file=file)
    print("-+-".join("-" * w for w in widths), file=file)
    for r in rows:
        print(fmt.format(*r), file=file)
