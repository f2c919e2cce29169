"""Link failures and degradations, by link id or by selector.

A selector names cables in words; every form resolves to both directions of the
cables it names:

==============================  ==================================================
``link 12`` / ``cable 5``       compiled link id (its whole cable) / cable id
``node d0/nvsw4``               every cable of a node, by name
``spine 3``                     a switch (``leaf``, ``spine``, ``core``) by index;
                                ``plane 1 spine 3`` in multi-plane fabrics
``leaf 0 spine 1``              the cables between two switches
``nvswitch 4`` / ``domain 2 nvswitch 4``   an NVSwitch chip (domain 0 by default)
``gpu 17``                      every cable of GPU rank 17
``gpu 17 nvlink``               its NVLink cables; ``gpu 17 nvlink plane 4``: to chip 4
``gpu 17 nic``                  the network cables of GPU 17's NIC
==============================  ==================================================

A degradation is ``SELECTOR=VALUE`` with VALUE a fraction of the nominal
capacity (``50%``, ``0.5``) or a bandwidth (``200Gb/s``).

Examples
--------
>>> from topologies.clos import fat_tree
>>> from fabric.compiled import compile_fabric
>>> cf = compile_fabric(fat_tree(hosts=16, radix=8))
>>> len(resolve(cf, "spine 1"))   # 4 leaves x 2 cables x 2 directions
16
>>> cf2 = apply_failures(cf, fail=["spine 1"])
>>> int((~cf2.link_alive).sum())
16
"""

from __future__ import annotations

import re

import numpy as np

from fabric.compiled import CompiledFabric
from topologies.errors import SelectorError, brief
from topologies.graph import ROLES
from topologies.units import parse_bandwidth

__all__ = ["resolve", "apply_failures", "compile_with_failures", "parse_degradation", "SELECTOR_FORMS",
           "MIN_DEGRADED_FRACTION", "MAX_SELECTOR_CHARS", "MAX_SELECTORS"]

#: Smallest degraded capacity, as a share of the nominal one. Real degradations are lane or
#: speed downshifts (a 4-lane 400G port running 1 lane at SDR is 2.5/400 = 0.6 %); a link a
#: million times slower than nominal is failed, and keeping it would only overflow the times.
MIN_DEGRADED_FRACTION = 1e-6
#: Most failure + degradation selectors in one fabric (each is a pass over the links; real
#: what-if studies fail a handful to a few hundred cables by selector).
MAX_SELECTORS = 1000
#: Longest selector accepted (the longest real form, 'domain D nvswitch C', is ~30 characters).
MAX_SELECTOR_CHARS = 200

SELECTOR_FORMS = ("'link N', 'cable N', 'node NAME', '[plane P] spine N', 'leaf N spine M', "
                  "'[domain D] nvswitch C', 'gpu R', 'gpu R nvlink [plane C]', 'gpu R nic'")


def _err(selector: str, why: str) -> SelectorError:
    return SelectorError(f"selector {brief(selector)}: {why}; forms: {SELECTOR_FORMS}")


def _int(tok: str, selector: str, what: str) -> int:
    if not re.fullmatch(r"[0-9]{1,18}", tok):
        raise _err(selector, f"{what} must be a non-negative integer, got {brief(tok)}")
    return int(tok)


def _cables_to_links(cf: CompiledFabric, mask: np.ndarray) -> np.ndarray:
    cables = np.unique(cf.link_cable[mask])
    return np.flatnonzero(np.isin(cf.link_cable, cables))


def _switch_node(cf: CompiledFabric, role: str, index: int, plane: int | None, selector: str) -> int:
    names = [f"{role}{index}"] if plane is None else [f"p{plane}/{role}{index}"]
    found = [cf.node_index[n] for n in names if n in cf.node_index]
    if not found and plane is None:
        planes = sorted({int(p) for p in cf.node_plane[cf.node_role == ROLES.index(role)]})
        cands = [f"p{p}/{role}{index}" for p in planes if f"p{p}/{role}{index}" in cf.node_index]
        if len(cands) == 1:
            return cf.node_index[cands[0]]
        if len(cands) > 1:
            raise _err(selector, f"{role} {index} exists in {len(cands)} planes; say 'plane P {role} {index}'")
    if not found and plane is not None:
        planes = sorted({int(p) for p in cf.node_plane[cf.node_role == ROLES.index(role)]})
        if plane not in planes or not any(n.startswith(f"p{plane}/") for n in cf.node_names):
            if not any(n.startswith("p") and "/" in n for n in cf.node_names):
                raise _err(selector, f"this fabric has one plane; say '{role} {index}' without 'plane {plane}'")
            raise _err(selector, f"there is no plane {plane} (fabric has planes {planes[0]}-{planes[-1]})")
    if not found:
        count = int((cf.node_role == ROLES.index(role)).sum())
        raise _err(selector, f"there is no {role} {index}" + (f" (fabric has {count} {role}s)" if count else ""))
    return found[0]


def _gpu(cf: CompiledFabric, tok: str, selector: str) -> int:
    r = _int(tok, selector, "gpu rank")
    if r >= cf.n_gpus:
        raise _err(selector, f"gpu rank {r} is out of range (fabric has {cf.n_gpus} GPUs)")
    return int(cf.gpus[r])


def resolve(cf: CompiledFabric, selector: str) -> np.ndarray:
    """Link ids (both directions of every cable) named by ``selector``.

    Raises
    ------
    SelectorError
        If the selector is malformed or names nothing in the fabric.
    """
    if not isinstance(selector, str) or not selector.strip():
        raise _err(selector, "empty selector")
    if len(selector) > MAX_SELECTOR_CHARS:
        raise _err(selector, f"longer than {MAX_SELECTOR_CHARS} characters")
    toks = selector.lower().split()
    head = toks[0]
    if head in ("link", "cable") and len(toks) == 2:
        i = _int(toks[1], selector, f"{head} id")
        if head == "link":
            if i >= cf.n_links:
                raise _err(selector, f"link id {i} is out of range (fabric has {cf.n_links} links)")
            return _cables_to_links(cf, np.arange(cf.n_links) == i)
        mask = cf.link_cable == i
        if not mask.any():
            raise _err(selector, f"there is no cable {i}")
        return np.flatnonzero(mask)
    if head == "node" and len(toks) == 2:
        name = selector.split(None, 1)[1].strip()
        n = cf.node(name) if name in cf.node_index else None
        if n is None:
            raise _err(selector, f"there is no node named {name!r}")
        return _cables_to_links(cf, (cf.link_src == n) | (cf.link_dst == n))
    if head == "gpu":
        if len(toks) < 2:
            raise _err(selector, "missing gpu rank")
        g = _gpu(cf, toks[1], selector)
        rest = toks[2:]
        touching = (cf.link_src == g) | (cf.link_dst == g)
        if not rest:
            return _cables_to_links(cf, touching)
        if rest[0] == "nvlink":
            roles = cf.node_role
            other = np.where(cf.link_src == g, cf.link_dst, cf.link_src)
            mask = touching & (roles[other] == ROLES.index("nvswitch"))
            if len(rest) == 3 and rest[1] == "plane":
                chip = _int(rest[2], selector, "nvlink plane")
                mask &= cf.node_local[other] == chip
            elif len(rest) != 1:
                raise _err(selector, "expected 'gpu R nvlink' or 'gpu R nvlink plane C'")
            if not mask.any():
                raise _err(selector, "no NVLink cable matches")
            return _cables_to_links(cf, mask)
        if rest == ["nic"]:
            other = np.where(cf.link_src == g, cf.link_dst, cf.link_src)
            nics = np.unique(other[touching & (cf.node_role[other] == ROLES.index("nic"))])
            if len(nics) == 0:
                raise _err(selector, "this GPU has no NIC")
            on_nic = np.isin(cf.link_src, nics) | np.isin(cf.link_dst, nics)
            far = np.where(np.isin(cf.link_src, nics), cf.link_dst, cf.link_src)
            return _cables_to_links(cf, on_nic & (cf.node_kind[far] == 2))
        raise _err(selector, f"unknown gpu part {' '.join(rest)!r}")
    # switches: [domain D] nvswitch C | [plane P] role N [role M]
    plane = None
    domain = 0
    if head == "plane" and len(toks) >= 3:
        plane = _int(toks[1], selector, "plane")
        toks = toks[2:]
    elif head == "domain" and len(toks) >= 3:
        domain = _int(toks[1], selector, "domain")
        toks = toks[2:]
    if toks and toks[0] == "nvswitch" and len(toks) == 2:
        name = f"d{domain}/nvsw{_int(toks[1], selector, 'nvswitch')}"
        if name not in cf.node_index:
            raise _err(selector, f"there is no NVSwitch {name!r}")
        n = cf.node_index[name]
        return _cables_to_links(cf, (cf.link_src == n) | (cf.link_dst == n))
    if len(toks) in (2, 4) and toks[0] in ("leaf", "spine", "core"):
        a = _switch_node(cf, toks[0], _int(toks[1], selector, toks[0]), plane, selector)
        if len(toks) == 2:
            return _cables_to_links(cf, (cf.link_src == a) | (cf.link_dst == a))
        if toks[2] not in ("leaf", "spine", "core"):
            raise _err(selector, f"{toks[2]!r} is not a switch role (leaf, spine, core)")
        b = _switch_node(cf, toks[2], _int(toks[3], selector, toks[2]), plane, selector)
        mask = ((cf.link_src == a) & (cf.link_dst == b)) | ((cf.link_src == b) & (cf.link_dst == a))
        if not mask.any():
            raise _err(selector, "those two switches are not cabled to each other")
        return np.flatnonzero(mask)
    raise _err(selector, "not understood")


def parse_degradation(text: str) -> tuple[str, float | None, float | None]:
    """Split ``'SELECTOR=VALUE'`` into (selector, fraction, capacity_Bps).

    Examples
    --------
    >>> parse_degradation("spine 3=50%")
    ('spine 3', 0.5, None)
    >>> parse_degradation("leaf 0 spine 1=200Gb/s")
    ('leaf 0 spine 1', None, 25000000000.0)
    """
    if not isinstance(text, str) or "=" not in text:
        raise SelectorError(f"degradation {brief(text)}: expected 'SELECTOR=VALUE' with VALUE like '50%', '0.5' or '200Gb/s'")
    sel, value = (s.strip() for s in text.rsplit("=", 1))
    number = r"(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)"
    if re.fullmatch(number + "%", value):
        frac = float(value[:-1]) / 100.0
    elif re.fullmatch(number, value):
        frac = float(value)
    elif value.endswith("%") or re.fullmatch(r"[-+]?[0-9.]+(?:[eE][-+]?[0-9]*)?|[-+]?(?:nan|inf)", value, re.I):
        raise SelectorError(f"degradation {brief(text)}: {brief(value)} is not a fraction in decimal digits "
                            f"between 0 and 1 or a percentage between 0% and 100% (exclusive); use e.g. '50%', "
                            f"'0.5' or '200Gb/s'")
    else:
        return sel, None, parse_bandwidth(value, field=f"degradation {brief(sel)}")
    if not 0.0 < frac < 1.0:
        raise SelectorError(f"degradation {brief(text)}: the fraction must be between 0 and 1 (exclusive); "
                            f"use --fail to remove a link")
    if frac < MIN_DEGRADED_FRACTION:
        raise SelectorError(f"degradation {brief(text)}: {frac:g} of the nominal capacity is below "
                            f"{MIN_DEGRADED_FRACTION:g}; a link that slow is down: use --fail")
    return sel, frac, None


def apply_failures(cf: CompiledFabric, fail=(), degrade=()) -> CompiledFabric:
    """Return ``cf`` with ``fail`` selectors removed and ``degrade`` entries applied.

    Parameters
    ----------
    fail : iterable of str
        Selectors of cables to fail (both directions).
    degrade : iterable of str or (selector, fraction, capacity_Bps)
        ``'SELECTOR=VALUE'`` strings or parsed tuples.
    """
    fail, degrade = list(fail), list(degrade)
    if len(fail) + len(degrade) > MAX_SELECTORS:
        raise SelectorError(f"failures: {len(fail) + len(degrade):,} selectors; at most {MAX_SELECTORS:,} (select "
                            f"whole switches, e.g. 'spine 3', rather than single cables)")
    cap = cf.link_capacity_Bps.copy()
    alive = cf.link_alive.copy()
    fails, degs = [], []
    for sel in fail:
        links = resolve(cf, sel)
        alive[links] = False
        cap[links] = 0.0
        fails.append((sel, tuple(int(x) for x in links)))
    seen: dict = {}  # selected link set -> the first selector that chose it
    for item in degrade:
        sel, frac, absolute = parse_degradation(item) if isinstance(item, str) else item
        links = resolve(cf, sel)
        key = tuple(sorted(int(x) for x in links))
        if key in seen:
            raise SelectorError(f"degradation {brief(sel)}: selects the same links as {brief(seen[key])}; degrade "
                                f"each link once (where selectors overlap in part, the lower capacity applies)")
        seen[key] = sel
        new = cf.link_nominal_Bps[links] * frac if frac is not None else np.full(len(links), absolute)
        if (new >= cf.link_nominal_Bps[links]).any():
            raise SelectorError(f"degradation {brief(sel)}: {absolute / 1e9 * 8 if absolute else 0:g} Gb/s is not "
                                f"below the links' {cf.link_nominal_Bps[links].min() * 8 / 1e9:g} Gb/s; a degradation "
                                f"must lower the capacity")
        if (new < cf.link_nominal_Bps[links] * MIN_DEGRADED_FRACTION).any():
            raise SelectorError(f"degradation {brief(sel)}: {absolute * 8 / 1e9:g} Gb/s is below "
                                f"{MIN_DEGRADED_FRACTION:g} of the links' {cf.link_nominal_Bps[links].max() * 8 / 1e9:g} "
                                f"Gb/s; a link that slow is down: use --fail")
        keep = alive[links]
        cap[links[keep]] = np.minimum(cap[links[keep]], new[keep])
        degs.append((sel, tuple(int(x) for x in links), float(new.min()) if len(new) else 0.0))
    return cf.with_links(capacity_Bps=cap, alive=alive, failures=tuple(fails), degradations=tuple(degs))


def compile_with_failures(G, fail=(), degrade=()) -> CompiledFabric:
    """Compile graph ``G`` and apply its spec-file failures plus ``fail``/``degrade``.

    Examples
    --------
    >>> from topologies.clos import fat_tree
    >>> cf = compile_with_failures(fat_tree(hosts=16, radix=8), fail=["spine 0"])
    >>> [s for s, _ in cf.failures]
    ['spine 0']
    """
    from fabric.compiled import compile_fabric

    cf = compile_fabric(G)
    return apply_failures(cf, fail=list(G.graph.get("failures", [])) + list(fail),
                          degrade=list(G.graph.get("degradations", [])) + list(degrade))
