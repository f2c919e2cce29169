"""Round 14 study (docs/collectives.md, "NVLinkOneSided: an overlapped per-token time"): fit alternative fixed-time
forms of TensorRT-LLM's NVLinkOneSided kernels on the fit-split rows, then report the held-out rows once.

Usage: PYTHONPATH=. python benchmarks/onesided_overlap_study.py
``T`` is the model's link time with :data:`collectives.moe.ONESIDED_NVLINK_S` set to 0; every form is fitted by
least squares of the relative latency error on the fit rows only. Nothing here changes a shipped constant.
"""

from __future__ import annotations

import sys
import tomllib

import numpy as np
from scipy.optimize import least_squares

from collectives import validate as v

FORMS = {
    "t0 + b log2(ep) + T": (lambda x, ep, T: x[0] + x[1] * np.log2(ep) + T, [12.0, 2.0]),
    "t0 + b log2(ep) + k T": (lambda x, ep, T: x[0] + x[1] * np.log2(ep) + x[2] * T, [12.0, 2.0, 1.0]),
    "t0 + b log2(ep) + max(c, k T)": (lambda x, ep, T: x[0] + x[1] * np.log2(ep) + np.maximum(x[2], x[3] * T),
                                      [8.0, 2.0, 4.0, 1.0]),
    "max(t0 + b log2(ep), c + k T)": (lambda x, ep, T: np.maximum(x[0] + x[1] * np.log2(ep), x[2] + x[3] * T),
                                      [12.0, 2.0, 8.0, 1.0]),
}


def rows(split: str) -> dict:
    """(ep, T us, measured us) per phase for the NVLinkOneSided rows of one split."""
    path = next(p for p in v.default_points_paths() if p.name == "published_points.toml")
    doc = tomllib.loads(path.read_text())
    pts = {p["id"]: p for p in doc["moe_alltoall"] if p["split"] == split
           and "NVLinkOneSided" in str(p.get("settings", {}).get("kernel", ""))}
    m = sys.modules["collectives.moe"]
    old = dict(m.ONESIDED_NVLINK_S)
    m.ONESIDED_NVLINK_S.update({k: (0.0, 0.0) for k in old})
    try:
        v._ROUTERS.clear()
        rs = [r for r in v.validate(ids=list(pts), splits=(split,)).rows if r.rel_error is not None]
    finally:
        m.ONESIDED_NVLINK_S.update(old)
        v._ROUTERS.clear()
    out = {}
    for phase in ("dispatch", "combine"):
        sel = [r for r in rs if r.id.endswith(":" + phase)]
        ep = np.array([pts[r.id.split("@")[0].split(":")[0]]["ep"] for r in sel], float)
        out[phase] = (ep, np.array([r.predicted for r in sel]), np.array([r.measured for r in sel]))
    return out


def main() -> None:
    fit, held = rows("fit"), rows("heldout")
    for phase in ("dispatch", "combine"):
        ep, T, M = fit[phase]
        eh, Th, Mh = held[phase]
        for name, (f, x0) in FORMS.items():
            x = least_squares(lambda x: f(x, ep, T) / M - 1, x0).x
            e, h = np.abs(f(x, ep, T) / M - 1), np.abs(f(x, eh, Th) / Mh - 1)
            print(f"{phase:8s} {name:32s} {np.round(x, 3)} fit {len(e)} values mean {100 * e.mean():.2f} % "
                  f"max {100 * e.max():.1f} % | held-out {len(h)} mean {100 * h.mean():.2f} %")


if __name__ == "__main__":
    main()
