"""Link congestion of a simulated run: per-link bytes, busy time, utilisation, hot links, tiers.

Utilisation of a link over a run is ``bytes / (capacity * makespan)``: the share
of the link's capacity the run used. Busy time is how long at least one flow was
transferring across it. The hottest links come with the groups (collectives)
whose flows cross them, and the verdict names the bottleneck.

Examples
--------
>>> from topologies.clos import fat_tree
>>> from fabric.compiled import compile_fabric
>>> from fabric.routing import Router
>>> from fabric.flowset import FlowSet, to_problem
>>> from fabric.engine import simulate
>>> r = Router(compile_fabric(fat_tree(hosts=16, radix=8)))
>>> fs = FlowSet.from_routes(r.route([0, 1], [2, 2]), 1e9, label="incast")
>>> p, used = to_problem(fs, r)
>>> rep = congestion(r, fs, simulate(p), used)
>>> rep.hottest[0].tier, round(rep.hottest[0].utilization, 3)
('host-down', 1.0)
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np

from fabric.engine import FlowResult
from fabric.flowset import FlowSet
from fabric.routing import Router
from topologies.graph import TIERS

__all__ = ["LinkStat", "TierStat", "CongestionReport", "congestion", "max_link_utilization"]


@dataclass(frozen=True)
class LinkStat:
    """One link of the report."""

    link: int
    name: str
    tier: str
    capacity_Bps: float
    bytes: float
    busy_s: float
    utilization: float
    flows: int
    groups: tuple  # ((label, share of the link's bytes), ...) largest first
    parallel: int = 1  # equally loaded parallel links between the same two nodes it stands for

    def as_dict(self) -> dict:
        return {"link": self.link, "name": self.name, "tier": self.tier, "capacity_GBps": self.capacity_Bps / 1e9,
                "bytes": self.bytes, "busy_s": self.busy_s, "utilization": self.utilization, "flows": self.flows,
                "groups": [{"group": g, "share": s} for g, s in self.groups], "parallel": self.parallel}


@dataclass(frozen=True)
class TierStat:
    """Aggregate over the links of one tier that carried traffic."""

    tier: str
    links: int
    bytes: float
    mean_utilization: float
    max_utilization: float

    def as_dict(self) -> dict:
        return {"tier": self.tier, "links": self.links, "bytes": self.bytes,
                "mean_utilization": self.mean_utilization, "max_utilization": self.max_utilization}


@dataclass(frozen=True)
class CongestionReport:
    """What the congestion report renders."""

    makespan_s: float
    link_bytes: np.ndarray
    link_busy_s: np.ndarray
    link_utilization: np.ndarray   # NaN for failed links
    max_utilization: float
    mean_utilization: float        # over links that carried traffic
    p50_utilization: float
    p99_utilization: float
    hottest: tuple                 # LinkStat, hottest first
    tiers: tuple                   # TierStat per tier
    lower_bound_s: float           # max-link-load bound of the run
    bound_ratio: float             # makespan / lower bound
    failed: tuple                  # (selector, n links) of the fabric's failures
    degraded: tuple
    verdict: str

    def as_dict(self) -> dict:
        return {"makespan_s": self.makespan_s, "max_utilization": self.max_utilization,
                "mean_utilization": self.mean_utilization, "p50_utilization": self.p50_utilization,
                "p99_utilization": self.p99_utilization, "lower_bound_s": self.lower_bound_s,
                "bound_ratio": self.bound_ratio, "hottest": [h.as_dict() for h in self.hottest],
                "tiers": [t.as_dict() for t in self.tiers],
                "failed": [{"selector": s, "links": n} for s, n in self.failed],
                "degraded": [{"selector": s, "links": n} for s, n in self.degraded], "verdict": self.verdict}


def _scatter(router: Router, used: np.ndarray, values: np.ndarray) -> np.ndarray:
    full = np.zeros(router.n_resources)
    full[used] = values
    return full


def _link_busy(router: Router, busy_res: np.ndarray) -> np.ndarray:
    L = router.n_links
    busy = busy_res[:L].copy()
    if len(router.trunk_links):
        per = np.repeat(busy_res[L:], np.diff(router.trunk_ptr))
        np.maximum.at(busy, router.trunk_links, per)
    return busy


def _link_util(router: Router, result: FlowResult, used: np.ndarray):
    """(bytes per link, utilisation per link (NaN on failed links), utilisations of the links that carried bytes)."""
    cf = router.cf
    link_bytes = router.expand_to_links(_scatter(router, used, result.resource_bytes))
    T = float(result.makespan_s)
    cap = cf.link_capacity_Bps
    with np.errstate(divide="ignore", invalid="ignore"):
        util = np.where(cf.link_alive, link_bytes / (cap * T), np.nan) if T > 0 else np.zeros(cf.n_links)
    return link_bytes, util, util[(link_bytes > 0) & cf.link_alive]


def max_link_utilization(router: Router, result: FlowResult, used: np.ndarray) -> float:
    """The report's ``max_utilization`` alone (no hot-link or group analysis): bytes / (capacity x makespan)."""
    _, _, u = _link_util(router, result, used)
    return float(u.max()) if len(u) else 0.0


def _groups_on_links(router: Router, fs: FlowSet, links: list[int], top: int = 4) -> list[tuple[int, tuple]]:
    """Per listed link: the flows crossing it (or a trunk holding it) and the groups' shares of its bytes.

    One pass over the flow table (one gather per hop column) for all the links.
    """
    K = len(links)
    if K == 0:
        return []
    L = router.n_links
    own_r, own_k, own_f = [], [], []
    sizes = np.diff(router.trunk_ptr)
    for k, link in enumerate(links):
        own_r.append(link), own_k.append(k), own_f.append(1.0)
        if len(router.trunk_links):
            t = np.flatnonzero(router.trunk_links == link)
            tid = np.searchsorted(router.trunk_ptr, t, side="right") - 1
            own_r += (tid + L).tolist()
            own_k += [k] * len(tid)
            own_f += (1.0 / sizes[tid]).tolist()  # a trunk of m links puts 1/m of its weight on each member
    own_r, own_k, own_f = np.asarray(own_r), np.asarray(own_k), np.asarray(own_f)
    uniq, inv = np.unique(own_r, return_inverse=True)
    inv = inv.ravel()
    code = np.full(router.n_resources + 1, -1, np.int64)  # index -1 (padding) lands on the last entry
    code[uniq] = np.arange(len(uniq))
    o = np.argsort(inv, kind="stable")
    ptr = np.zeros(len(uniq) + 1, np.int64)
    np.cumsum(np.bincount(inv, minlength=len(uniq)), out=ptr[1:])
    res = fs.res
    rows, cols = [], []
    for j in range(res.shape[1]):
        r = np.flatnonzero(code[res[:, j]] >= 0)
        rows.append(r)
        cols.append(np.full(len(r), j))
    rows, cols = np.concatenate(rows), np.concatenate(cols)
    rid = res[rows, cols]
    u = code[rid]
    w = fs.weight[rows, cols] if fs.weight is not None else np.ones(len(rows))
    if fs.resource_scale is not None:
        w = w * fs.resource_scale[rid]
    # every hit entry once per owner entry of its resource (a trunk may hold several listed links)
    cnt = ptr[u + 1] - ptr[u]
    e = np.repeat(np.arange(len(u)), cnt)
    pos = ptr[u][e] + np.arange(len(e)) - np.repeat(np.cumsum(cnt) - cnt, cnt)
    ek, ef = own_k[o][pos], own_f[o][pos]
    er = rows[e]
    share = w[e] * ef * fs.size_bytes[er]
    G = len(fs.labels)
    by = np.bincount(ek * G + fs.group[er], weights=share, minlength=K * G).reshape(K, G)
    nflows = np.bincount(np.unique(ek * max(fs.n_flows, 1) + er) // max(fs.n_flows, 1), minlength=K)
    out = []
    for k in range(K):
        b = by[k]
        order = np.argsort(-b)[:top]
        total = b.sum()
        out.append((int(nflows[k]), tuple((fs.labels[g], float(b[g] / total)) for g in order if b[g] > 0)))
    return out


def congestion(router: Router, fs: FlowSet, result: FlowResult, used: np.ndarray, *, top: int = 10,
               policy: str | None = None) -> CongestionReport:
    """Per-link congestion of ``result`` (a simulation of ``fs``'s problem over resources ``used``).

    ``policy`` (the routing policy used) sharpens the verdict's explanation.
    """
    cf = router.cf
    link_bytes, util, u = _link_util(router, result, used)
    link_busy = _link_busy(router, _scatter(router, used, result.resource_busy_s))
    T = float(result.makespan_s)
    cap = cf.link_capacity_Bps
    carried = link_bytes > 0
    order = np.argsort(-np.nan_to_num(util, nan=-1.0), kind="stable")
    hottest, seen = [], {}
    for l in order:
        if len(hottest) >= top or not carried[l]:
            break
        pair = (int(cf.link_src[l]), int(cf.link_dst[l]))
        if pair in seen:  # a parallel cable between the same nodes at the same load: count it, list it once
            k = seen[pair]
            if np.isclose(util[l], hottest[k].utilization, rtol=1e-6):
                hottest[k] = replace(hottest[k], parallel=hottest[k].parallel + 1)
                continue
        seen[pair] = len(hottest)
        hottest.append(LinkStat(link=int(l), name=cf.link_name(int(l)), tier=cf.tier_of(int(l)),
                                capacity_Bps=float(cap[l]), bytes=float(link_bytes[l]), busy_s=float(link_busy[l]),
                                utilization=float(util[l]), flows=0, groups=()))
    # flows and groups of every listed link in one pass over the flow table
    for k, (n, groups) in enumerate(_groups_on_links(router, fs, [h.link for h in hottest])):
        hottest[k] = replace(hottest[k], flows=n, groups=groups)
    tiers = []
    for code, name in enumerate(TIERS):
        m = (cf.link_tier == code) & carried & cf.link_alive
        if m.any():
            tiers.append(TierStat(tier=name, links=int(m.sum()), bytes=float(link_bytes[m].sum()),
                                  mean_utilization=float(util[m].mean()), max_utilization=float(util[m].max())))
    lb = float(result.lower_bound_s)
    ratio = T / lb if lb > 0 else float("nan")
    failed = tuple((sel, len(links)) for sel, links in cf.failures)
    degraded = tuple((sel, len(links)) for sel, links, _ in cf.degradations)
    rep = dict(max_utilization=float(u.max()) if len(u) else 0.0, mean_utilization=float(u.mean()) if len(u) else 0.0,
               p50_utilization=float(np.percentile(u, 50)) if len(u) else 0.0,
               p99_utilization=float(np.percentile(u, 99)) if len(u) else 0.0)
    verdict = _verdict(hottest, tiers, ratio, failed, degraded, T, lb, policy)
    return CongestionReport(makespan_s=T, link_bytes=link_bytes, link_busy_s=link_busy, link_utilization=util,
                            hottest=tuple(hottest), tiers=tuple(tiers), lower_bound_s=lb, bound_ratio=ratio,
                            failed=failed, degraded=degraded, verdict=verdict, **rep)


_FABRIC_TIERS = ("leaf-up", "spine-down", "spine-up", "core-down", "nic-up", "nic-down")


def _verdict(hottest, tiers, ratio, failed, degraded, T, lb, policy=None) -> str:
    if not hottest:
        return "no traffic crossed the fabric"
    h = hottest[0]
    parts = [f"bottleneck: {h.tier} link {h.name} at {h.utilization:.0%} of {h.capacity_Bps / 1e9:.0f} GB/s"]
    tier = next((t for t in tiers if t.tier == h.tier), None)
    if tier and tier.links > 1 and tier.mean_utilization > 0 and h.utilization > 1.15 * tier.mean_utilization:
        skew = h.utilization / tier.mean_utilization
        if policy in ("ecmp", "dmodk") and h.tier in _FABRIC_TIERS and not failed:
            what = "static ECMP hashing" if policy == "ecmp" else "d-mod-k routing"
            parts.append(f"it carries {skew:.2f}x its tier's mean load: {what} put too many flows on it (path "
                         f"collisions) while other links of the tier idle; spraying / adaptive routing would spread it")
        else:
            parts.append(f"it carries {skew:.2f}x its tier's mean load: the tier is unevenly loaded"
                         + (" (traffic squeezed around the failure)" if failed else ""))
    if failed:
        parts.append("failed: " + ", ".join(f"{s} ({n} links)" for s, n in failed) + "; traffic routed around them")
    if degraded:
        parts.append("degraded: " + ", ".join(s for s, _ in degraded))
    if lb > 0 and ratio > 1.25:
        parts.append(f"time is {ratio:.2f}x the max-link-load bound: latency, dependencies or several "
                     f"interacting bottlenecks, not one saturated link")
    return "; ".join(parts)
