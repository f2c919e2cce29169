"""Sweep grids: ``--grid KEY=V1,V2`` and TOML sweep files, crossed or zipped, and failure what-ifs.

A sweep is a base point (the options given once) and axes. Axes are crossed
(every combination), or zipped (the i-th values of every zipped axis go
together; zipped axes must have the same length). A TOML sweep file says the
same with three tables:

.. code-block:: toml

    op = "moe_dispatch"          # a collective or "step" (optional; the CLI argument wins if both agree)

    [base]                       # fixed parameters: any option or --set key
    topo = "gb300-nvl72"
    tokens = 4096

    [grid]                       # crossed axes
    domains = [1, 2, 4, 8, 16]
    routing = ["ecmp", "spray"]

    [zip]                        # zipped axes (crossed with the grid)
    scaleout = ["quantum-2", "quantum-x800", "spectrum-x"]
    nic = ["ConnectX-7", "ConnectX-8", "ConnectX-8"]

Keys are the options of ``run`` or ``step`` (``routing``, ``algo``, ``size``,
``seed``, ``ep``, ...), ``fail`` / ``degrade`` and the ``--set`` parameters of
the topology preset. The value ``none`` of ``fail`` is the point without an
extra failure (the baseline of a what-if).

**Failure what-ifs**: a ``fail`` value ``each:SELECTOR`` becomes one point per
element it names on the point's built fabric (:func:`each`): ``each:spine``
every spine switch, ``each:leaf 3 spine`` every cable bundle from leaf 3 to a
spine, ``each:leaf spine`` every leaf-spine bundle, ``each:gpu nic`` every
GPU's NIC cables, ``each:nvswitch`` every NVSwitch chip of domain 0, and a
complete selector (``each:spine 3``) every single cable it names. ``degrade``
takes ``each:SELECTOR=VALUE`` the same way.

Examples
--------
>>> axes = parse_grid(["routing=ecmp,spray", "hosts=16,32"])
>>> [p["routing"] + "/" + str(p["hosts"]) for p in expand({"op": "all_to_all", "topo": "fat-tree"}, axes)]
['ecmp/16', 'ecmp/32', 'spray/16', 'spray/32']
>>> len(expand({"op": "all_to_all", "topo": "fat-tree"}, axes, zipped=True))
2
"""

from __future__ import annotations

import itertools
import math
import re

import numpy as np

from topologies.errors import SpecError, brief
from workloads.sweep.params import LIST_KEYS

__all__ = ["Axis", "parse_grid", "load_sweep_file", "expand", "each", "FILE_KEYS", "MAX_POINTS"]

#: Top-level keys of a TOML sweep file.
FILE_KEYS = ("op", "base", "grid", "zip")
#: Most points one sweep may expand to (a typo in a grid should not queue a billion points).
MAX_POINTS = 1_000_000

Axis = tuple  # (key, tuple of values)

_KEY_RE = re.compile(r"[a-z][a-z0-9_]*")


def _key(key: str, where: str) -> str:
    k = str(key).strip().replace("-", "_")
    if not _KEY_RE.fullmatch(k):
        raise SpecError(f"{where} {brief(key)}: a key is a lowercase option or --set name, e.g. routing, domains")
    return k


def parse_grid(items) -> list[Axis]:
    """``["routing=ecmp,spray"]`` -> ``[("routing", ("ecmp", "spray"))]`` (one axis per item).

    Examples
    --------
    >>> parse_grid(["size=1MiB,64MiB", "fail=none,each:spine"])
    [('size', ('1MiB', '64MiB')), ('fail', ('none', 'each:spine'))]
    >>> parse_grid(["routing"])
    Traceback (most recent call last):
    ...
    topologies.errors.SpecError: --grid 'routing': expected KEY=V1,V2,..., e.g. --grid routing=ecmp,spray
    """
    out, seen = [], set()
    for item in items:
        key, sep, values = str(item).partition("=")
        if not sep or not key.strip() or not values.strip():
            raise SpecError(f"--grid {brief(item)}: expected KEY=V1,V2,..., e.g. --grid routing=ecmp,spray")
        k = _key(key, "--grid")
        if k in seen:
            raise SpecError(f"--grid {k}: given twice; list all its values in one --grid")
        seen.add(k)
        vals = tuple(v.strip() for v in values.split(","))
        if any(not v for v in vals):
            raise SpecError(f"--grid {k}: empty value in {brief(values)}")
        out.append((k, vals))
    return out


def _scalar(v, where: str):
    if isinstance(v, (str, int, float, bool)) and not (isinstance(v, float) and v != v):
        return v
    raise SpecError(f"{where}: {brief(v)} must be a string, number or boolean")


def load_sweep_file(path: str) -> tuple[str | None, dict, list[Axis], list[Axis]]:
    """Read a TOML sweep file: ``(op, base, grid axes, zip axes)``, validated (one line per error)."""
    from topologies.files import parse_toml, read_text

    data = parse_toml(read_text(path, what="sweep file"), source=brief(path))
    for key in data:
        if key not in FILE_KEYS:
            raise SpecError(f"sweep file {brief(path)}: unknown key {brief(key)}; allowed: {', '.join(FILE_KEYS)}")
    op = data.get("op")
    if op is not None and not isinstance(op, str):
        raise SpecError(f"sweep file op: {brief(op)} must be a collective name or 'step'")
    base = {}
    tables = {}
    for name in ("base", "grid", "zip"):
        t = data.get(name, {})
        if not isinstance(t, dict):
            raise SpecError(f"sweep file [{name}]: expected a table of KEY = VALUE, got {brief(t)}")
        tables[name] = t
    for k, v in tables["base"].items():
        key = _key(k, "sweep file [base]")
        if key in LIST_KEYS:
            vals = v if isinstance(v, list) else [v]
            base[key] = [_scalar(x, f"[base] {key}") for x in vals]
        else:
            base[key] = _scalar(v, f"[base] {key}")
    axes = {}
    for name in ("grid", "zip"):
        axes[name] = []
        for k, v in tables[name].items():
            key = _key(k, f"sweep file [{name}]")
            vals = v if isinstance(v, list) else [v]
            if not vals:
                raise SpecError(f"sweep file [{name}] {key}: empty list")
            axes[name].append((key, tuple(_scalar(x, f"[{name}] {key}") for x in vals)))
    keys = [k for k, _ in axes["grid"] + axes["zip"]]
    dup = sorted({k for k in keys if keys.count(k) > 1} | (set(keys) & set(base)))
    if dup:
        raise SpecError(f"sweep file {brief(path)}: {dup[0]!r} is given in more than one of [base], [grid], [zip]")
    return op, base, axes["grid"], axes["zip"]


def _combine(axes: list[Axis], zipped: bool) -> list[dict]:
    if not axes:
        return [{}]
    if zipped:
        n = {len(v) for _, v in axes}
        if len(n) > 1:
            desc = ", ".join(f"{k} has {len(v)}" for k, v in axes)
            raise SpecError(f"--zip: zipped keys need the same number of values ({desc})")
        return [dict(zip([k for k, _ in axes], vals)) for vals in zip(*[v for _, v in axes])]
    return [dict(zip([k for k, _ in axes], vals)) for vals in itertools.product(*[v for _, v in axes])]


def expand(base: dict, grid: list[Axis], zip_axes: list[Axis] = (), *, zipped: bool = False) -> list[dict]:
    """Raw points: ``base`` with every combination of the axes (``zipped``: ``grid`` is zipped too).

    ``fail``/``degrade`` values of an axis are appended to the base lists. The
    result keeps ``each:`` values; :func:`each` expands them on the built fabric.
    """
    grid, zip_axes = list(grid), list(zip_axes)
    # counted before any row is built: 200 x 200 x 200 values built 8 million rows before the refusal
    total = (math.prod(len(v) for _, v in grid) if not zipped or not grid else len(grid[0][1])) * \
        (len(zip_axes[0][1]) if zip_axes else 1)
    if total > MAX_POINTS:
        raise SpecError(f"--grid: {total:,} points exceed the limit of {MAX_POINTS:,}; split the sweep")
    rows_grid = _combine(grid, zipped)
    rows_zip = _combine(zip_axes, True)
    out = []
    for a in rows_grid:
        for b in rows_zip:
            p = {k: (list(v) if k in LIST_KEYS else v) for k, v in base.items()}
            for k, v in {**a, **b}.items():
                if k in LIST_KEYS:
                    p[k] = list(p.get(k, [])) + [v]
                else:
                    p[k] = v
            out.append(p)
    return out


def _switches(cf, role: str, plane: int | None = None, domain: int | None = None) -> list[str]:
    """Selectors of every switch of ``role`` (by index; per plane in multi-plane fabrics)."""
    names = [str(n) for n in cf.node_names] if hasattr(cf, "node_names") else list(cf.node_index)
    out = []
    if role == "nvswitch":
        d = 0 if domain is None else domain
        pat = re.compile(rf"d{d}/nvsw(\d+)")
        idx = sorted(int(m.group(1)) for n in names if (m := pat.fullmatch(n)))
        return [(f"domain {d} nvswitch {i}" if domain is not None else f"nvswitch {i}") for i in idx]
    pat = re.compile(rf"(?:p(\d+)/)?{role}(\d+)")
    found = []
    for n in names:
        m = pat.fullmatch(n)
        if m:
            found.append((int(m.group(1)) if m.group(1) is not None else None, int(m.group(2))))
    planes = {p for p, _ in found}
    for p, i in sorted(found, key=lambda t: (-1 if t[0] is None else t[0], t[1])):
        if plane is not None and p != plane:
            continue
        out.append(f"plane {p} {role} {i}" if p is not None and (plane is not None or len(planes) > 1)
                   else f"{role} {i}")
    return out


def _node_name(sel: str) -> str:
    """``'plane 1 leaf 3'`` -> ``'p1/leaf3'``, ``'leaf 3'`` -> ``'leaf3'``."""
    t = sel.split()
    return f"p{t[1]}/{t[2]}{t[3]}" if t[0] == "plane" else f"{t[0]}{t[1]}"


def each(cf, selector: str) -> list[str]:
    """The single-element selectors that ``each:SELECTOR`` stands for on compiled fabric ``cf``.

    Examples
    --------
    >>> from topologies.clos import fat_tree
    >>> from fabric.compiled import compile_fabric
    >>> cf = compile_fabric(fat_tree(hosts=16, radix=8))
    >>> each(cf, "spine")
    ['spine 0', 'spine 1']
    >>> each(cf, "leaf 0 spine")
    ['leaf 0 spine 0', 'leaf 0 spine 1']
    >>> len(each(cf, "spine 1"))   # 4 leaves x 2 cables, one by one
    8
    >>> from topologies import build
    >>> racks = compile_fabric(build("gb300-nvl72", {"domains": "4", "scaleout": "quantum-x800"}))
    >>> each(racks, "rail 3 leaf spine")     # every uplink bundle of the rail-3 leaves
    ['leaf 3 spine 0', 'leaf 3 spine 1']
    """
    from fabric.failures import resolve

    toks = selector.lower().split()
    roles = ("leaf", "spine", "core", "nvswitch")
    plane = domain = None
    if len(toks) >= 3 and toks[0] == "rail" and toks[1].isdigit() and toks[2] == "leaf":
        rail = int(toks[1])
        leaves = [s for s in _switches(cf, "leaf") if int(cf.node_rail[cf.node_index[_node_name(s)]]) == rail]
        if not leaves:
            raise SpecError(f"fail=each:{selector}: no leaf of rail {rail} on {cf.name}")
        rest = " ".join(toks[3:])
        out = [x for leaf in leaves for x in (each(cf, f"{leaf} {rest}") if rest else [leaf])]
        return out
    if len(toks) >= 3 and toks[0] in ("plane", "domain") and toks[1].isdigit():
        plane, domain = (int(toks[1]), None) if toks[0] == "plane" else (None, int(toks[1]))
        toks = toks[2:]
    if len(toks) == 1 and toks[0] in roles:
        out = _switches(cf, toks[0], plane, domain)
    elif len(toks) == 1 and toks[0] == "gpu" or (len(toks) == 2 and toks[0] == "gpu" and toks[1] in ("nic", "nvlink")):
        out = [f"gpu {r}" + (f" {toks[1]}" if len(toks) == 2 else "") for r in range(cf.n_gpus)]
    elif len(toks) in (2, 3) and toks[0] in roles[:3] and (len(toks) == 2 or toks[1].isdigit()) \
            and toks[-1] in roles[:3]:
        firsts = _switches(cf, toks[0], plane) if len(toks) == 2 else \
            [(f"plane {plane} " if plane is not None else "") + f"{toks[0]} {toks[1]}"]
        seconds = _switches(cf, toks[-1], plane)
        out = []
        for a in firsts:
            for b in seconds:
                pa, pb = a.split()[-2:], b.split()[-2:]
                if a.startswith("plane") != b.startswith("plane") or (a.startswith("plane") and
                                                                       a.split()[1] != b.split()[1]):
                    continue
                sel = (" ".join(a.split()[:2]) + " " if a.startswith("plane") else "") + " ".join(pa + pb)
                try:
                    resolve(cf, sel)
                except Exception:  # noqa: BLE001 - not cabled to each other
                    continue
                out.append(sel)
    else:
        links = resolve(cf, selector)
        cables = np.unique(cf.link_cable[links])
        out = [f"cable {int(c)}" for c in cables]
    if not out:
        raise SpecError(f"fail=each:{selector}: matches nothing on {cf.name}")
    return out
