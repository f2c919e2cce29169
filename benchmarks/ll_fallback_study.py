"""Round 16 study (docs/collectives.md, "Round 16 (2026-12-06), Blackwell LL hidden size"): what the one-domain
low-latency model does on a GPU without a fitted :data:`collectives.ep_constants.LL_NVLINK_S` entry (every Blackwell
GPU today), measured on fit-split rows where the answer is known.

Usage: PYTHONPATH=. python benchmarks/ll_fallback_study.py
The fit-split DeepEP LL rows of one NVLink board (group ``aiconfigurator-deepep-ll-h100-1node``, eight top-8 shapes x
1-1024 tokens; and the DeepEP README's H800 EP8 row, group ``deepep-v1-ll-h800``) are predicted twice: with the
Hopper entries (the shipped model) and with them withheld, i.e. the fallback a Blackwell GPU gets (NCCL's one-step
p2p latency + :data:`collectives.ep_constants.LL_FIXED_S` + the flows at the link model's rate). Only fit rows are
read. Nothing here changes a shipped constant.
"""

from __future__ import annotations

import sys
import tomllib
from contextlib import contextmanager

import numpy as np

from collectives import validate as v

__all__ = ["FIT_GROUPS", "withheld", "fit_rows"]

#: The fit-split groups with DeepEP LL kernels inside one NVLink domain (all Hopper; of the H800 README rows only EP8).
FIT_GROUPS = ("aiconfigurator-deepep-ll-h100-1node", "deepep-v1-ll-h800")


@contextmanager
def withheld():
    """The model with every :data:`LL_NVLINK_S` entry removed (the fallback of a GPU without a fit sweep);
    the validation memo is cleared on entry and on exit so no plan of one model leaks into the other."""
    m = sys.modules["collectives.moe"]
    saved = dict(m.LL_NVLINK_S)
    m.LL_NVLINK_S.clear()
    v._ROUTERS.clear()
    v._MEMO.clear()
    try:
        yield
    finally:
        m.LL_NVLINK_S.update(saved)
        v._ROUTERS.clear()
        v._MEMO.clear()


def _points() -> dict:
    path = next(p for p in v.default_points_paths() if p.name == "published_points.toml")
    doc = tomllib.loads(path.read_text())
    # one NVLink domain only: the H800 README's EP16-256 rows run across nodes, where the entries do not apply
    return {p["id"]: p for p in doc["moe_alltoall"] if p.get("group") in FIT_GROUPS and p["split"] == "fit"
            and int(p["ep"]) <= 8}


def fit_rows(fallback: bool = False) -> dict:
    """``row id -> (point, tokens or None, phase, predicted, measured)`` of the fit rows of :data:`FIT_GROUPS`,
    with the shipped model or (``fallback``) with the one-board entries withheld."""
    pts = _points()

    def run():
        out = {}
        for r in v.validate(ids=list(pts), splits=("fit",)).rows:
            if r.rel_error is None:
                continue
            base, phase = r.id.split(":")
            pid, _, tok = base.partition("@T")
            out[r.id] = (pts[pid], int(tok) if tok else None, phase, r.predicted, r.measured)
        return out

    if not fallback:
        return run()
    with withheld():
        return run()


def _report() -> None:
    ship, fb = fit_rows(), fit_rows(fallback=True)
    for name, rs in (("shipped (Hopper entries)", ship), ("fallback (entries withheld)", fb)):
        e = np.array([p / m - 1 for *_, p, m in rs.values()])
        print(f"{name}: {len(e)} fit values, mean |error| {100 * np.abs(e).mean():.2f} %, max {100 * np.abs(e).max():.1f} %")
    print("\none-token time (us) per shape, aiconfigurator H100 group: measured / shipped / fallback")
    for rid, (p, tok, phase, pred, meas) in sorted(ship.items(), key=lambda kv: (kv[1][2], kv[1][0]["hidden"],
                                                                              kv[1][0]["experts"])):
        if tok == 1:
            print(f"  {phase:8s} {p['hidden']:5d} x {p['experts']:3d}: {meas:6.2f} / {pred:6.2f} / {fb[rid][3]:6.2f}")
    print("\nfallback signed error by tokens (mean over the eight shapes, %)")
    by = {}
    for p, tok, phase, pred, meas in fb.values():
        if tok is not None:
            by.setdefault((phase, tok), []).append(pred / meas - 1)
    for (phase, tok), e in sorted(by.items()):
        print(f"  {phase:8s} T={tok:5d}: {100 * np.mean(e):+6.1f}  (range {100 * min(e):+.1f} .. {100 * max(e):+.1f})")
    print("\nH800 EP8 (DeepEP README, 128 tokens, bandwidth rows): predicted GB/s shipped / fallback, measured GB/s")
    for rid, (p, tok, phase, pred, meas) in ship.items():
        if tok is None:
            print(f"  {rid}: {pred:.1f} / {fb[rid][3]:.1f}, {meas:.1f}")


if __name__ == "__main__":
    _report()
