"""Fluid max-min vs packet-level (csg-htsim EQDS) on the same fat-trees.

Reads ``benchmarks/data/htsim_eqds_fat_tree.toml`` (measured packet-level numbers, with the
simulator commit and parameters), rebuilds every case in fabric-emu (same hosts per leaf, uplinks,
spines, failures, degradations, traffic and sizes; packet spraying = ``policy="spray"``), and prints,
per case, the fluid and packet-level completion time of the collective (last flow) and the spread
of per-flow finish times (median to last).  With ``--term`` it also applies
:mod:`fabric.transport` and reports fit and held-out errors separately.

Run: ``python -m benchmarks.transport_study [--term] [--json]``.  See docs/transport.md.
"""

from __future__ import annotations

import argparse
import json
import sys
import tomllib
from pathlib import Path

import numpy as np

from fabric.engine import simulate
from fabric.failures import compile_with_failures
from fabric.flowset import FlowSet, to_problem
from fabric.routing import Router
from fabric import transport
from topologies.clos import fat_tree

__all__ = ["DATA", "load_cases", "case_problem", "fluid_case", "study", "fit"]

DATA = Path(__file__).with_name("data") / "htsim_eqds_fat_tree.toml"
LINK_Bps = 400e9 / 8   # every link of the packet-level runs: 400 Gb/s


def load_cases(path: Path = DATA) -> tuple[dict, list[dict]]:
    """(meta, cases) of the data file."""
    with open(path, "rb") as fh:
        doc = tomllib.load(fh)
    return doc["meta"], doc["case"]


def case_problem(case: dict):
    """(problem, router, used) of one case: the fluid model of exactly that fabric and traffic."""
    G = fat_tree(hosts=case["hosts"], radix=case["radix"], oversubscription=case["oversubscription"],
                 link_Bps=LINK_Bps)
    cf = compile_with_failures(G, fail=case["fail"], degrade=case["degrade"])
    router = Router(cf)
    n = case["hosts"]
    if case["traffic"] == "all_to_all":
        src, dst = np.divmod(np.arange(n * n), n)
        keep = src != dst
        src, dst = src[keep], dst[keep]
    else:
        src = np.arange(n)
        dst = np.asarray(case["permutation"])
    fs = FlowSet.from_routes(router.route(src, dst, policy="spray"), float(case["size_bytes"]))
    problem, used = to_problem(fs, router)
    return problem, router, used


def _stats(finish_s: np.ndarray) -> dict:
    f = np.asarray(finish_s) * 1e6
    last, med = float(f.max()), float(np.median(f))
    return {"last_us": last, "median_us": med, "spread": last / med - 1.0}


def fluid_case(case: dict, model: transport.FabricCongestion | None = None) -> dict:
    """Fluid statistics of one case, raw or with the transport term ``model``."""
    problem, router, used = case_problem(case)
    rho, fan_in = transport.bottleneck(problem, router, used)
    out = {"overload": rho, "fan_in": fan_in}
    if model is not None:
        problem = transport.apply_fabric_congestion(problem, router, used, model)
    res = simulate(problem)
    finish = res.finish_s if model is None else transport.tail_finish_s(res.finish_s, rho, fan_in, model)
    out.update(_stats(finish))
    return out


def study(model: transport.FabricCongestion | None = None, path: Path = DATA) -> list[dict]:
    """One row per case: packet-level vs fluid, normalised by the NIC-bound case of the same size."""
    meta, cases = load_cases(path)
    rows = []
    for c in cases:
        fl = fluid_case(c, model)
        rows.append({"name": c["name"], "split": c["split"], "traffic": c["traffic"], "hosts": c["hosts"],
                     "size_bytes": c["size_bytes"], "overload": fl["overload"], "fan_in": fl["fan_in"],
                     "pkt_last_us": c["last_us"], "pkt_median_us": c["median_us"],
                     "pkt_spread": c["last_us"] / c["median_us"] - 1.0,
                     "fluid_last_us": fl["last_us"], "fluid_median_us": fl["median_us"],
                     "fluid_spread": fl["spread"], "ratio": c["last_us"] / fl["last_us"],
                     "ratio_median": c["median_us"] / fl["median_us"]})
    # NIC-bound reference: the pristine 1:1 case with the same hosts, traffic and size
    base = {(r["hosts"], r["traffic"], r["size_bytes"]): r for r in rows if r["name"].endswith(("_base_a2a", "_base_perm"))}
    for r in rows:
        b = base[(r["hosts"], r["traffic"], r["size_bytes"])]
        r["excess"] = r["ratio"] / b["ratio"]            # packet/fluid beyond what the NIC-bound case shows
        r["excess_median"] = r["ratio_median"] / b["ratio_median"]
    return rows


def _summary(rows: list[dict], key: str) -> dict:
    out = {}
    for split in ("fit", "held-out"):
        e = np.array([r[key] - 1.0 for r in rows if r["split"] == split and not _is_base(r)])
        out[split] = {"n": int(len(e)), "mean_abs": float(np.abs(e).mean()) if len(e) else 0.0,
                      "max_abs": float(np.abs(e).max()) if len(e) else 0.0}
    return out


def fit(path: Path = DATA, *, saturating: bool = False) -> transport.FabricCongestion:
    """Fit the terms on the fit set only: efficiency from the median flow, tail from the last flow.

    ``efficiency = 1 / mean(excess_median)`` over the scored fit cases; then ``a, b`` of
    ``1 + a (1 - 1/rho) n^b`` (or ``a, n0`` of ``1 + a (1 - 1/rho) n / (n + n0)`` with
    ``saturating``) by least squares on ``log(predicted excess / measured excess)``.
    """
    from scipy.optimize import least_squares

    rows = [r for r in study(None, path) if r["split"] == "fit" and not _is_base(r)]
    med = np.array([r["excess_median"] for r in rows])
    exc = np.array([r["excess"] for r in rows])
    x = np.clip(1.0 - 1.0 / np.array([r["overload"] for r in rows]), 0.0, None)
    n = np.maximum(np.array([r["fan_in"] for r in rows]), 1.0)
    eta = float(min(1.0, 1.0 / med.mean()))

    if saturating:
        sol = least_squares(lambda p: np.log((1.0 + p[0] * x * n / (n + p[1])) / eta) - np.log(exc),
                            [1.0, 50.0], bounds=([0.0, 0.0], [10.0, 1e4]))
        return transport.FabricCongestion(efficiency=round(eta, 4), tail_coefficient=round(float(sol.x[0]), 4),
                                          fan_in_half=round(float(sol.x[1]), 2),
                                          source="benchmarks.transport_study.fit(saturating=True)")

    def resid(p):
        return np.log((1.0 + p[0] * x * n ** p[1]) / eta) - np.log(exc)

    sol = least_squares(resid, [0.05, 0.5], bounds=([0.0, 0.0], [10.0, 2.0]))
    return transport.FabricCongestion(efficiency=round(eta, 4), tail_coefficient=round(float(sol.x[0]), 5),
                                      fan_in_exponent=round(float(sol.x[1]), 4), source="benchmarks.transport_study.fit")


def _is_base(r: dict) -> bool:
    return r["name"].endswith(("_base_a2a", "_base_perm"))


def markdown(raw: list[dict], term: list[dict]) -> str:
    """The results table of docs/transport.md §3-4 (raw fluid and fluid with the term, side by side)."""
    t = {r["name"]: r for r in term}
    out = ["| case | split | rho | fan-in | packet last / median (us) | fluid last (us) | excess | excess median "
           "| packet spread | with term: excess | spread |",
           "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for r in raw:
        q = t[r["name"]]
        out.append(f"| {r['name']} | {r['split']} | {r['overload']:.2f} | {r['fan_in']:.0f} | "
                   f"{r['pkt_last_us']:.1f} / {r['pkt_median_us']:.1f} | {r['fluid_last_us']:.1f} | "
                   f"{r['excess']:.3f} | {r['excess_median']:.3f} | {r['pkt_spread']:.3f} | "
                   f"{q['excess']:.3f} | "
                   f"{q['fluid_spread']:.3f} |")
    return "\n".join(out)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--term", action="store_true", help="apply fabric.transport.DEFAULT")
    ap.add_argument("--json", action="store_true")
    ap.add_argument("--fit", action="store_true", help="fit the terms on the fit set and print them")
    ap.add_argument("--markdown", action="store_true", help="print the docs table (raw and with the term)")
    a = ap.parse_args(argv)
    if a.fit:
        print(fit())
        print(fit(saturating=True))
        return 0
    if a.markdown:
        raw = study(None)
        print(json.dumps({"raw": _summary(raw, "excess"), "raw_median": _summary(raw, "excess_median")}))
        for name in ("FIT_EQDS", "FIT_EQDS_SAT"):
            term = study(getattr(transport, name))
            print(f"\n{name}\n" + markdown(raw, term))
            print(json.dumps({name: _summary(term, "excess"), "median": _summary(term, "excess_median")}))
        return 0
    rows = study(transport.DEFAULT if a.term else None)
    summ = {"last": _summary(rows, "excess"), "median": _summary(rows, "excess_median")}
    if a.json:
        print(json.dumps({"rows": rows, "summary": summ}, indent=1))
        return 0
    hdr = f"{'case':16} {'split':8} {'ovl':>5} {'fan-in':>6} {'pkt last':>9} {'fl last':>9} {'excess':>7} {'exc med':>7} {'pkt spr':>7} {'fl spr':>7}"
    print(hdr)
    for r in rows:
        print(f"{r['name']:16} {r['split']:8} {r['overload']:5.2f} {r['fan_in']:6.0f} {r['pkt_last_us']:9.1f} {r['fluid_last_us']:9.1f} "
              f"{r['excess']:7.3f} {r['excess_median']:7.3f} {r['pkt_spread']:7.3f} {r['fluid_spread']:7.3f}")
    print(json.dumps(summ))
    return 0


if __name__ == "__main__":
    sys.exit(main())
