"""Re-run the fits of collectives/calibration.py on the fit split (docs/collectives.md, "Fits").

Usage: PYTHONPATH=. python benchmarks/fit_collective_constants.py [nvls-domain|nvls-window|ring-window|net-latency|
       nic-drop|per-peer|deepep-sms|uccl-pipeline|ll-fixed|ring-kernel|a2a-efa|a2a-rc|nvls-loop|nvl72-sync|
       nvls-latency-overlap|tcpxo-step|ring-ll-blackwell|nvls-one-loop|nvls-loop-blackwell|
       pull-combine|ll-nvlink|nvls-heads|nvl72-loop-sync|nvl72-climb|p2p-channels|p2p-channels-ampere|
       p2p-channels-hopper|deepep-sms-tokens|onesided-nvlink|
       ring-ll-latency|ring-copy|p2p-peer-cost|ring-kernel-hopper|ring-ll-hopper|p2p-simple-fill]

Every fit reads only points whose ``split`` is ``fit``; it prints the grid (or the least-squares
value) so the recorded constant can be checked against it. The grids patch the calibration module's
constants for the duration of the run only.
"""

from __future__ import annotations

import sys

import numpy as np

import collectives.calibration  # noqa: F401  (the module, not the function of the same name)
import collectives.ring_ll  # noqa: F401  (patched by ring-ll-latency)
import collectives.ring_copy  # noqa: F401  (patched by ring-copy)
from collectives import Collective, TokenRouting, run
from collectives.moe import route_tokens
from collectives import validate as v

cal = sys.modules["collectives.calibration"]


def _grid(ids, set_value, values, keep=None, digits=3):
    for x in values:
        set_value(x)
        v._ROUTERS.clear()
        rows = [r for r in v.validate(ids=ids, splits=("fit",)).rows if r.rel_error is not None]
        rows = [r for r in rows if keep is None or keep(r)]
        e = np.abs([r.rel_error for r in rows])
        print(f"  {x!s:>10}: {len(e)} values, mean |error| {e.mean():.{digits}f}, max {e.max():.3f}")


def nvls_domain() -> None:
    """t = L + S/B on the 72-rank NVL72 fit sweeps -> slowdown per doubling and sync term."""
    pts = [(536870912, 586.06), (2147483648, 757.78), (8589934592, 834.57),  # cw-gb200-nvl72-1rack
           (1073741824, 681.0), (4294967296, 839.0)]                           # reference gb200-nvl72-...
    n = 72
    f = 2 * (n - 1) / n
    S = np.array([p[0] for p in pts], float)
    t = S * f / (np.array([p[1] for p in pts]) * 1e9)
    (L, inv), *_ = np.linalg.lstsq(np.vstack([np.ones_like(S), S]).T, t, rcond=None)
    print(f"  L = {L * 1e6:.0f} us, asymptotic busbw {f / inv / 1e9:.0f} GB/s")


def nvls_window() -> None:
    def setw(w):
        cal.NVLS_PIPELINE_WINDOW_BYTES = int(w) << 20
    _grid(["mle-h200x8-allreduce-auto-by-size"], setw, (0, 4, 8, 16, 32), keep=lambda r: "nvls" in r.note)


def ring_window() -> None:
    """Grid over the ring fill window on every fit-split collective row that ran a flat ring."""
    ids = [p["id"] for p in _fit_collective_points()]

    def setw(w):
        cal.RING_PIPELINE_WINDOW_BYTES = int(w) << 20
    old = cal.RING_PIPELINE_WINDOW_BYTES
    _grid(ids, setw, (0, 2, 4, 8, 16, 32), keep=lambda r: r.note.startswith("ring/"))
    cal.RING_PIPELINE_WINDOW_BYTES = old


def _fit_collective_points():
    out = []
    for path in v.default_points_paths():
        doc, side = v._read(path)
        for kind, p in v._items(path, doc, side):
            split = p.get("split", "unsplit")
            if kind == "collective" and split == "fit" and not p.get("consistency"):
                out.append(p)
    return out


def net_latency() -> None:
    """Round 6: the real step cost (calibration.NET_STEP_LATENCY_US) on the fit rows of each transport
    (the reported latencies stay as the plugins' sources give them, calibration.NET_LATENCY_US).

    Joint refit after the merge (tree/Simple fill and NVLS terms in place; grids down to 0, the value
    the plugins' own reports bound from below): EFA 75 us (8.1 %, unchanged), TCPXO 0 us (7.0 %); with the
    A3 Mega rows' sourced NCCL_BUFFSIZE=8388608 (round 6, A3 Mega settings), TCPXO 0 us (19.7 %).
    Round 7 (AWS EFA): one step cost per group of platforms the plugin reports alike, with the rendezvous
    (calibration.NET_EAGER_MAX_BYTES) in place: EFA-v1/v2 (p4d/p4de/p5) on the p5 rows, 30 us (7.7 %);
    EFA (p5en/p6) on the p6-b200 4-node rows, 60 us (7.9 %)."""
    a2a = [f"awsgpucomm-p5-{n}node-efa-alltoall-by-size" for n in (2, 4, 8, 16, 32)]
    p5 = ["aws-p5-2node-efa-allreduce-by-size", "aws-p5-2node-efa-allreduce-small-by-size"] + a2a
    p6 = ["mle-p6b200-4node-efa-allreduce-auto-by-size", "mle-p6b200-4node-efa-allreduce-small-by-size"]
    for keys, ids, grid in (
            (("EFA-v1", "EFA-v2"), p5, (15, 20, 22, 25, 30, 35, 40, 50, 75)),
            (("EFA",), p6, (50, 55, 60, 65, 70, 75, 80, 90)),
            (("TCPXO",), ["gcp-a3mega-2node-tcpxo-allreduce-by-size"], (0, 20, 40, 60, 80, 100, 120, 160))):
        old = {k: cal.NET_STEP_LATENCY_US[k] for k in keys}
        print("/".join(keys))
        _grid(ids, lambda x: cal.NET_STEP_LATENCY_US.update({k: float(x) for k in keys}), grid)
        cal.NET_STEP_LATENCY_US.update(old)


def nic_drop() -> None:
    ids = ["deepep-h800-internode", "deepep-ll-h800-ep16", "deepep-ll-h800-ep32", "deepep-ll-h800-ep64",
           "deepep-ll-h800-ep128", "deepep-v2-sm90-cx7-ep16", "deepep-v2-sm90-cx7-ep32"]

    def setd(d):
        cal.NIC_PEER_DROP["moe"] = cal.NIC_PEER_DROP["moe_ll"] = float(d)
    _grid(ids, setd, (0.0, 0.1, 0.2))
    setd(0.0)


def per_peer() -> None:
    """Least squares of measured - modelled kernel time against EP - 1 (HybridEP on NVL72)."""
    old = cal.PER_PEER_S["moe"]
    cal.PER_PEER_S["moe"] = 0.0
    r = v._router("gb200-nvl72", {})
    X, Y = [], []
    # README_Hybrid-EP.md GB200 table, 32 SMs, kernel only, FP8 dispatch (16 and 36 ranks: the reference points)
    for dtype, pts in (("fp8", [(16, 650.48, 666.26), (36, 489.27, 596.99)]),
                       ("fp8", [(8, 713.98, 737.13), (24, 577.96, 639.8), (32, 538.86, 605.15)])):
        for ep, d, c in pts:
            for coll, meas in (("moe_dispatch", d), ("moe_combine", c)):
                tr = TokenRouting("uniform", experts=8 * ep, dispatch_dtype=dtype)
                [res] = run(r, [Collective(coll, tuple(range(ep)), 0, options={"moe": tr, "metric": "logical"})],
                            mode="epoch", epsilon=0.01)
                X.append(ep - 1)
                Y.append(res.logical_bytes / (meas * 1e9) - res.time_s)
    X, Y = np.array(X, float), np.array(Y)
    print(f"  per-peer {(X @ Y) / (X @ X) * 1e6:.2f} us")
    cal.PER_PEER_S["moe"] = old


def deepep_sms() -> None:
    """(t0, r) of DeepEP's SM-bound normal kernels: least squares of the relative bandwidth error of
    ``max(t_link, t0 + X / (n r))`` over the B200 SM sweep (calibration.DEEPEP_SM_SWEEP)."""
    from scipy.optimize import least_squares
    r = v._router("hgx-b200", {})
    tr = TokenRouting("uniform", tokens_per_rank=4096, experts=64)
    for j, coll in ((1, "moe_dispatch"), (2, "moe_combine")):
        [res] = run(r, [Collective(coll, tuple(range(8)), 0, options={"moe": tr, "metric": "logical"})],
                    mode="epoch", epsilon=0.01)  # no ``sms``: the link-bound time
        per_token = tr.dispatch_bytes_per_token if coll == "moe_dispatch" else tr.combine_bytes_per_token
        t_link = res.time_s
        X = float(route_tokens(tr, 8, [0] * 8).rank_counts.sum(axis=0).max()) * per_token  # the busiest rank
        n = np.array([row[0] for row in cal.DEEPEP_SM_SWEEP], float)
        bw = np.array([row[j] for row in cal.DEEPEP_SM_SWEEP], float) * 1e9

        L = res.logical_bytes  # what the published GB/s counts (mean received bytes per rank)

        def err(x):
            t = np.maximum(t_link, x[0] * 1e-6 + X / (n * x[1] * 1e9))
            return (L / t - bw) / bw
        fit = least_squares(err, x0=[50.0, 15.0], bounds=([0.0, 1.0], [1000.0, 100.0]))
        e = np.abs(err(fit.x))
        print(f"  {coll}: t0 = {fit.x[0]:.0f} us, r = {fit.x[1]:.1f} GB/s per SM "
              f"(link-bound {L / t_link / 1e9:.0f} GB/s); |error| mean {e.mean():.3f}, max {e.max():.3f}")


def uccl_pipeline() -> None:
    """R of UCCL-EP's internode pipeline: least squares of the relative error of ``max(t_link, X / R)``
    (X the busiest rank's (token, node) pairs x bytes) on the fit-split p5en normal dispatch rows; the
    per-peer term of the ``uccl`` family is off for the link time (the form it replaces)."""
    from scipy.optimize import least_squares
    old_pp, old_r = cal.PER_PEER_S["uccl"], cal.RDMA_PIPELINE_BPS.pop("uccl")
    cal.PER_PEER_S["uccl"] = 0.0
    L, X, T, bw = [], [], [], []
    for ep, meas in ((16, 50.0), (24, 53.0), (32, 54.0)):
        r = v._router("hgx-h200", {"domains": ep // 8, "scaleout": "aws-efa-v3", "nic": "EFA-v3-200G"})
        tr = TokenRouting("node_limited", tokens_per_rank=4096, experts=288)
        [res] = run(r, [Collective("moe_dispatch", tuple(range(ep)), 0,
                                   options={"moe": tr, "metric": "rdma", "kernel": "uccl"})], mode="epoch", epsilon=0.01)
        counts = route_tokens(tr, ep, np.arange(ep) // 8).node_counts.sum(axis=1)
        L.append(res.logical_bytes)
        X.append(float(counts.max()) * tr.dispatch_bytes_per_token)
        T.append(res.time_s)
        bw.append(meas * 1e9)
    L, X, T, bw = map(np.array, (L, X, T, bw))

    def err(x):
        return (L / np.maximum(T, X / (x[0] * 1e9)) - bw) / bw
    fit = least_squares(err, x0=[50.0], bounds=([1.0], [1000.0]))
    print(f"  R = {fit.x[0]:.1f} GB/s; link-only {np.round(L / T / 1e9, 1)} GB/s; "
          f"|error| {np.round(np.abs(err(fit.x)), 3)}")
    cal.PER_PEER_S["uccl"], cal.RDMA_PIPELINE_BPS["uccl"] = old_pp, old_r


def ll_fixed() -> None:
    """Fixed time of the GPU-initiated LL kernels: mean of (measured - modelled) kernel time over the
    fit-split DeepEP LL rows (the published latency; the model's time from the bandwidth ratio)."""
    import tomllib
    old = cal.LL_FIXED_S.pop("moe_ll")
    path = next(p for p in v.default_points_paths() if p.name == "published_points.toml")
    doc = tomllib.loads(path.read_text())
    pts = {p["id"]: p for p in doc["moe_alltoall"] if p.get("group") == "deepep-v1-ll-h800" and p["split"] == "fit"}
    # round 8: the one-board rows (EP8, no ``domains``) take calibration.LL_NVLINK_S instead of this term
    pts = {k: p for k, p in pts.items() if p.get("domains", 1) > 1}
    v._ROUTERS.clear()
    res = []
    for r in v.validate(ids=list(pts), splits=("fit",)).rows:
        pid, coll = r.id.split(":")
        res.append(pts[pid][f"{coll}_latency_us"] * (1 - r.measured / r.predicted))
    print(f"  residuals {np.round(res, 1)} us -> {np.mean(res):.1f} us")
    cal.LL_FIXED_S["moe_ll"] = old


def ring_kernel() -> None:
    """Measured / modelled busbw of the fit-split single-domain Blackwell rings (>= 4 GiB) with the ring
    kernel efficiency at 1 -> its value: the mean over sources of the per-source means."""
    ids = {"ml-engineering": ["mle-p6b200-allreduce-by-ranks", "b200-allreduce-by-ranks"],
           "GTC25 S72583": ["gtc25-b200x8-allreduce-ring-nvls"], "nccl #2140": ["nccl2140-b300x8-allreduce-ring-nvls"]}
    old = dict(cal.RING_NVLINK_KERNEL_EFFICIENCY)
    cal.RING_NVLINK_KERNEL_EFFICIENCY[3] = 1.0
    v._ROUTERS.clear()
    per = {}
    for src, pids in ids.items():
        rows = [r for r in v.validate(ids=pids, splits=("fit",)).rows
                if r.rel_error is not None and r.note == "ring/Simple" and (":ring" in r.id or "@ring" in r.id)]
        per[src] = float(np.mean([r.measured / r.predicted for r in rows]))
        print(f"  {src}: {len(rows)} rows, measured / modelled {per[src]:.3f}")
    print(f"  mean over sources {np.mean(list(per.values())):.3f}")
    cal.RING_NVLINK_KERNEL_EFFICIENCY.update(old)
    v._ROUTERS.clear()


def a2a_efa() -> None:
    """Round 5: NCCL all-to-all over EFA, the many-peer drop ``d`` (``nccl_efa``) and the per-peer cost ``c``
    on the fit-split AWS p5 sweeps (2-32 nodes, 32 MiB - 2 GiB), a coarse grid around the recorded values."""
    ids = [f"awsgpucomm-p5-{n}node-efa-alltoall-by-size" for n in (2, 4, 8, 16, 32)]
    old = (cal.NIC_PEER_DROP["nccl_efa"], cal.NCCL_P2P_PER_PEER_S["EFA"])
    for d in (0.08, 0.105, 0.13, 0.236):
        for c in (0.0, 4.0, 5.1, 6.0):
            def setv(x, d=d):
                cal.NIC_PEER_DROP["nccl_efa"] = d
                cal.NCCL_P2P_PER_PEER_S["EFA"] = x * 1e-6
            print(f"  d = {d}:", end="")
            _grid(ids, setv, (c,))
    cal.NIC_PEER_DROP["nccl_efa"], cal.NCCL_P2P_PER_PEER_S["EFA"] = old
    v._ROUTERS.clear()


def a2a_rc() -> None:
    """Round 5: the drop of NCCL over reliable-connected NICs with ``k`` = remote NIC ports, on the fit-split
    4 x DGX A100 all-to-all (GTC25; k = 3) and OCI B300 2-node (k = 1: not sensitive)."""
    old = cal.NIC_PEER_DROP["nccl"]
    _grid(["gtc25-dgxa100-4node-hdr-alltoall", "oci-b300-2node-roce-alltoall"],
          lambda x: cal.NIC_PEER_DROP.__setitem__("nccl", float(x)), (0.236, 0.30, 0.338, 0.36))
    cal.NIC_PEER_DROP["nccl"] = old
    v._ROUTERS.clear()


def nvls_loop() -> None:
    """Round 6: NVLS loop cost x (NVLS_LOOP_S), pipeline fill in loops (NVLS_FILL_LOOPS) and the one-call
    timing's host overhead (HOST_CALL_OVERHEAD_S), jointly on every fit-split NVLink-board value."""
    ids = [p["id"] for p in _fit_collective_points() if p.get("category") == "nvlink"]
    old = cal.NVLS_LOOP_S, cal.NVLS_FILL_LOOPS, cal.HOST_CALL_OVERHEAD_S
    for fill in (0.0, 1.0, 1.5, 2.0):
        for h in (10, 20, 30):
            def setx(x, fill=fill, h=h):
                cal.NVLS_LOOP_S, cal.NVLS_FILL_LOOPS, cal.HOST_CALL_OVERHEAD_S = x * 1e-6, fill, h * 1e-6
            print(f"  fill {fill} loops, host {h} us; x in us:")
            _grid(ids, setx, (0, 2, 4, 6, 8))
    cal.NVLS_LOOP_S, cal.NVLS_FILL_LOOPS, cal.HOST_CALL_OVERHEAD_S = old
    v._ROUTERS.clear()


def nvl72_sync() -> None:
    """Round 6: the NVL72 synchronisation term c, once per call, refitted (b kept) on the 72-rank fit sweeps
    once single-domain NVLS takes NCCL's chunk loops (kept 0.075 us). Round 8 replaced the per-call term
    (``NVLS_SYNC_S_PER_RANK2_ONE_DOMAIN``, gone) by one per loop, so this name now runs that grid
    (``nvl72-loop-sync``); the round-6 grid's values are in docs/collectives.md, "Fits" (13)."""
    nvl72_loop_sync()


def nvls_latency_overlap() -> None:
    """Round 6, NVLS latency vs loop fill: does NCCL's 25 us NVLS latency already hold part of the one-loop
    fill? Three forms of the single-domain fill, each with the loop cost x on the round-6 grid, on every
    fit-split NVLink-board value: ``sum`` (today: latency + d + x), ``less-x`` (latency + d: the loop cost
    of the fill inside NCCL's latency), ``max`` (max(latency, d + x): NCCL's latency holds the whole fill).
    No new constant: NCCL's latency is tuning.cc's hwLat[NVLINK][NVLS][Simple] (baseLat 0)."""
    from collectives.algorithms import Planner
    from collectives.nccl_model.constants import HW_LATENCIES_US
    nccl_lat = HW_LATENCIES_US[0][4][2] * 1e-6
    ids = [p["id"] for p in _fit_collective_points() if p.get("category") == "nvlink"]
    orig, old = Planner.nvls_loop_terms, cal.NVLS_LOOP_S
    forms = {"sum": lambda f, x: f, "less-x": lambda f, x: max(0.0, f - cal.NVLS_FILL_LOOPS * x),
             "max": lambda f, x: max(nccl_lat, f) - nccl_lat}
    try:
        for name, form in forms.items():
            def terms(self, op, size, form=form):
                k, f = orig(self, op, size)
                return k, form(f, cal.nvls_loop_s(self.gpu.sm))
            Planner.nvls_loop_terms = terms
            print(f"  fill form {name}; x in us:")
            _grid(ids, lambda x: setattr(cal, "NVLS_LOOP_S", x * 1e-6), (4, 6, 8, 10, 12))
    finally:
        Planner.nvls_loop_terms, cal.NVLS_LOOP_S = orig, old
        v._ROUTERS.clear()


def nvls_one_loop() -> None:
    """Round 7, NVLS one-loop regime: forms of the single-domain NVLS fill read from the kernel (one loop
    runs scatter -> multimem reduce -> gather one after the other; a later loop's scatter overlaps the
    earlier loop's reduce), each charged as ``Fd x d + Fx x - dlat`` (``d`` the data time of one loop, x the
    loop cost; ``dlat`` a cut of NCCL's 25 us NVLS latency in the time taken), on every fit-split
    NVLink-board value, the loop count rounded up (kept). (1, 1, 0) is the kept form."""
    from collectives.algorithms import Planner
    ids = [p["id"] for p in _fit_collective_points() if p.get("category") == "nvlink"]
    orig = Planner.nvls_loop_terms
    forms = ((1.0, 1.0, 0), (0.125, 1.0, 0), (1.0, 0.0, 0), (1.25, 0.0, 0), (1.5, 0.0, 0), (2.0, 0.0, 0), (2.0, 1.0, 0),
             (0.5, 0.5, 0), (0.0, 1.0, 0), (1.0, 1.0, 5), (1.5, 0.0, 5), (2.0, 0.0, 5), (2.0, 0.0, 10),
             (2.0, 1.0, 10), (1.5, 0.0, 10))
    try:
        for fd, fx, dl in forms:
            def terms(self, op, size, fd=fd, fx=fx, dl=dl):
                k, f = orig(self, op, size)
                x = cal.nvls_loop_s(self.gpu.sm)
                d = f / cal.NVLS_FILL_LOOPS - x
                return k, fd * d + fx * x - dl * 1e-6
            Planner.nvls_loop_terms = terms
            print(f"  fill {fd} d + {fx} x, latency cut {dl} us:")
            _grid(ids, lambda x: None, ("-",))
    finally:
        Planner.nvls_loop_terms = orig
        v._ROUTERS.clear()


def ring_ll_blackwell() -> None:
    """Round 7: Blackwell's ring LL kernel efficiency on one NVLink domain
    (calibration.RING_LL_NVLINK_KERNEL_EFFICIENCY[3]) once the ring fill is off for LL, on the fit-split
    single-domain Blackwell ring/LL values (then the whole fit NVLink-board set for the record)."""
    ids = [p["id"] for p in _fit_collective_points() if p.get("category") == "nvlink"]
    old = cal.RING_LL_NVLINK_KERNEL_EFFICIENCY[3]
    setk = lambda x: cal.RING_LL_NVLINK_KERNEL_EFFICIENCY.__setitem__(3, x)  # noqa: E731
    _grid(ids, setk, (0.4, 0.5, 0.6, 0.7, 0.8, 1.0),
          keep=lambda r: r.note == "ring/LL" and ("b200" in r.id or "b300" in r.id))
    _grid(ids, setk, (0.4, 0.5, 0.6, 1.0))
    setk(old)
    v._ROUTERS.clear()


FITS = {"nvls-domain": nvls_domain, "nvls-window": nvls_window, "ring-window": ring_window, "net-latency": net_latency,
        "nic-drop": nic_drop, "per-peer": per_peer, "deepep-sms": deepep_sms,
        "uccl-pipeline": uccl_pipeline, "ll-fixed": ll_fixed, "ring-kernel": ring_kernel}
FITS.update({"a2a-efa": a2a_efa, "a2a-rc": a2a_rc})  # round 5 (kept apart: merge-friendly)
FITS.update({"nvls-loop": nvls_loop, "nvl72-sync": nvl72_sync})  # round 6, NVLink boards
FITS.update({"nvls-latency-overlap": nvls_latency_overlap})  # round 6, NVLS latency vs loop fill
FITS.update({"ring-ll-blackwell": ring_ll_blackwell})  # round 7, NVLink boards mid sizes
FITS.update({"nvls-one-loop": nvls_one_loop})  # round 7, NVLS one-loop regime


def nvls_loop_blackwell() -> None:
    """Round 8, NVLS small chunks: Blackwell's NVLS loop cost (calibration.NVLS_LOOP_S_BY_ARCH[3]; Hopper's
    NVLS_LOOP_S fixed) on every fit-split NVLink-board value and the fit-split NVL72 values (each printed
    apart, then the two Blackwell small-chunk sweeps alone). Kept: 10 us."""
    nvlink = [p["id"] for p in _fit_collective_points() if p.get("category") == "nvlink"]
    nvl72 = [p["id"] for p in _fit_collective_points() if p.get("category") == "nvl72"]
    old = cal.NVLS_LOOP_S_BY_ARCH[3]
    setx = lambda x: cal.NVLS_LOOP_S_BY_ARCH.__setitem__(3, x * 1e-6)  # noqa: E731
    grid = (6, 8, 9, 10, 11, 12, 14)
    try:
        for name, ids in (("fit NVLink boards", nvlink), ("fit NVL72", nvl72),
                          ("p6-b200 torch sweep", ["mle-p6b200x8-allreduce-auto-by-size"]),
                          ("OCI GB300 2 trays", ["oci-gb300-2tray-mnnvl-allreduce-by-size"])):
            print(f"  {name}; Blackwell x in us:")
            _grid(ids, setx, grid, digits=4)
    finally:
        cal.NVLS_LOOP_S_BY_ARCH[3] = old
        v._ROUTERS.clear()


FITS.update({"nvls-loop-blackwell": nvls_loop_blackwell})  # round 8, NVLS small chunks

#: Round 7 (GCP): the fit A3 Mega source's own small all-reduces, out-of-place us (lessizzmore/create-a3mega-ztan-fork
#: ztan-NCCL-test-result @ 02dd8f4, 16-256 B; the row itself starts at 1 MiB)
A3MEGA_SMALL_US = {16: 123.2, 32: 123.3, 64: 123.4, 128: 123.0, 256: 123.6}


def tcpxo_step() -> None:
    """Round 7: the TCPXO step cost (calibration.NET_STEP_LATENCY_US["TCPXO"]) with the tree fill's chain hops
    alone (trees.fill_hop_rate), over every measured value of the fit source: the row's 14 busbw values and the
    log's 16-256 B times (busbw error = measured time / model time - 1). Kept: 7.5 us (3.9 %)."""
    row = "gcp-a3mega-2node-tcpxo-allreduce-by-size"
    old = cal.NET_STEP_LATENCY_US["TCPXO"]
    for x in (0, 5, 7.5, 8, 9, 10, 12.5, 15):
        cal.NET_STEP_LATENCY_US["TCPXO"] = float(x)
        v._ROUTERS.clear()
        e = [abs(r.rel_error) for r in v.validate(ids=[row], splits=("fit",)).rows if r.rel_error is not None]
        r = v._router("hgx-h100", {"domains": 2, "scaleout": "gcp-tcpxo", "nic": "TCPXO-200G"})
        small = []
        for size, us in A3MEGA_SMALL_US.items():
            [res] = run(r, [Collective("all_reduce", tuple(range(16)), size)], mode="epoch")
            small.append(abs(us * 1e-6 / res.time_s - 1.0))
        print(f"  {x!s:>6}: row {np.mean(e):.3f} (max {np.max(e):.3f}), small sizes {np.mean(small):.3f}, "
              f"all {len(e) + len(small)} values {np.mean(e + small):.3f}")
    cal.NET_STEP_LATENCY_US["TCPXO"] = old
    v._ROUTERS.clear()


FITS.update({"tcpxo-step": tcpxo_step})  # round 7, GCP (kept apart: merge-friendly)


def pull_combine() -> None:
    """Round 8: the pull combine's extra fixed time (calibration.PULL_COMBINE_FIXED_S) as the mean over token counts
    of (measured - modelled combine) - (measured - modelled dispatch) on the fit-split TensorRT-LLM NVLinkOneSided
    rows (with the barrier set to 0), then the rows' errors with the kept value."""
    ids = ["flashinfer3697-trtllm-onesided-gb200-ep32-by-tokens"]  # the only fit-split NVLinkOneSided row in round 8
    old = cal.PULL_COMBINE_FIXED_S
    # round 11: these rows now take calibration.ONESIDED_NVLINK_S (``onesided-nvlink``); the round-8 path (p2p latency
    # + LL fixed time + this term) is re-run with that table emptied for the duration of the fit
    onesided = sys.modules["collectives.moe"].ONESIDED_NVLINK_S
    sys.modules["collectives.moe"].ONESIDED_NVLINK_S = {}
    sys.modules["collectives.moe"].PULL_COMBINE_FIXED_S = 0.0
    v._ROUTERS.clear()
    rows = {r.id: r for r in v.validate(ids=ids, splits=("fit",)).rows if r.rel_error is not None}
    diffs = []
    for rid, r in rows.items():
        if rid.endswith(":combine"):
            d = rows[rid[:-len("combine")] + "dispatch"]
            diffs.append((r.measured - r.predicted) - (d.measured - d.predicted))
    print(f"  {len(diffs)} token counts: extra combine time {np.mean(diffs):.2f} us "
          f"(min {np.min(diffs):.2f}, max {np.max(diffs):.2f})")
    sys.modules["collectives.moe"].PULL_COMBINE_FIXED_S = old
    v._ROUTERS.clear()
    e = np.abs([r.rel_error for r in v.validate(ids=ids, splits=("fit",)).rows if r.rel_error is not None])
    print(f"  kept {old * 1e6:.1f} us: {len(e)} values, mean |error| {e.mean():.3f}, max {e.max():.3f}")
    sys.modules["collectives.moe"].ONESIDED_NVLINK_S = onesided
    v._ROUTERS.clear()


FITS.update({"pull-combine": pull_combine})  # round 8, TensorRT-LLM one-sided combine


def ll_nvlink() -> None:
    """Round 8: GPU-initiated LL kernels on one NVLink board. Weighted least squares (relative error)
    of the measured kernel time against ``t0 + X / R`` per phase, ``X`` the bytes of one rank's
    (token, expert) copies (tokens x top-k x bytes per copy, its own copies included: every copy is a
    warp store through the P2P pointer, local or not), on the fit-split DeepEP LL token sweeps of one
    board (the group ``aiconfigurator-deepep-ll-h100-1node``); a column ``s`` per copy is printed
    to show the per-message cost the data allow. Round 12: the group holds eight top-8 shapes (hidden
    2048-7168 x 128-384 experts) and the recorded form is ``t0 + a E + b P + X / R`` (``E`` the experts,
    one warp group per expert on every rank; ``P`` the bytes of one message, the serial chain of one
    token: cast, warp copy out, warp copy in); the round-8 two-column form and ``t0 + a E + X / R`` are
    printed next to it, on the round-8 shapes and on all eight. Then the validate errors of those rows."""
    import tomllib
    from collectives.moe import LL_HEADER_BYTES
    path = next(p for p in v.default_points_paths() if p.name == "published_points.toml")
    doc = tomllib.loads(path.read_text())
    pts = [p for p in doc["moe_alltoall"] if p.get("group") == "aiconfigurator-deepep-ll-h100-1node"
           and p["split"] == "fit"]
    round8 = {(2048, 128), (7168, 256)}
    for col, phase in ((1, "dispatch"), (2, "combine")):
        X, m, y, E, P, r8 = [], [], [], [], [], []
        for p in pts:
            tr = TokenRouting("uniform", hidden=int(p["hidden"]), experts=int(p["experts"]), topk=int(p["topk"]))
            per = tr.dispatch_bytes_per_token + LL_HEADER_BYTES if phase == "dispatch" else tr.combine_bytes_per_token
            for row in p["tokens_dispatch_combine_latency_us"]:
                m.append(row[0] * tr.topk)
                X.append(row[0] * tr.topk * per)
                y.append(row[col] * 1e-6)
                E.append(tr.experts)
                P.append(per)
                r8.append((tr.hidden, tr.experts) in round8)
        X, m, y, E, P, r8 = map(np.asarray, (X, m, y, E, P, r8))
        one = np.ones_like(X)
        forms = (("t0 + X/R", np.c_[one, X]), ("t0 + s m + X/R", np.c_[one, m, X]),
                 ("t0 + a E + X/R", np.c_[one, E, X]), ("t0 + a E + b P + X/R (recorded)", np.c_[one, E, P, X]))
        for rows, label in ((r8, "round-8 shapes"), (np.ones_like(r8), "all shapes")):
            w = 1 / y[rows]
            for name, A in forms:
                A = A[rows]
                c = np.linalg.lstsq(A * w[:, None], y[rows] * w, rcond=None)[0]
                e = np.abs(A @ c - y[rows]) / y[rows]
                terms = ""
                if name == "t0 + s m + X/R":
                    terms = f", s {c[1] * 1e9:.2f} ns per copy"
                elif name.startswith("t0 + a E"):
                    terms = f", a {c[1] * 1e9:.2f} ns per expert"
                    if len(c) == 4:
                        terms += f", b {c[2] * 1e12:.1f} ps per message byte"
                print(f"  {phase} ({label}) {name}: t0 {c[0] * 1e6:.2f} us{terms}, R {1 / c[-1] / 1e9:.0f} GB/s; "
                      f"{len(A)} values, mean |error| {e.mean():.3f}, max {e.max():.3f}")
    v._ROUTERS.clear()
    rows = [r for r in v.validate(ids=[p["id"] for p in pts], splits=("fit",)).rows if r.rel_error is not None]
    e = np.abs([r.rel_error for r in rows])
    print(f"  validate (constants as shipped): {len(e)} values, mean |error| {e.mean():.3f}, max {e.max():.3f}")


FITS.update({"ll-nvlink": ll_nvlink})  # round 8, LL kernels on one NVLink board (kept apart: merge-friendly)


def nvls_heads() -> None:
    """Round 8 (new out-of-sample points), candidate NOT adopted: single-domain NVLS paying a cost per loop and per
    head beyond 8 (NCCL's one-node kernel runs one scatter / gather step over ``nHeads`` peers per loop,
    src/device/all_reduce.h @ v2.28.7-1) instead of the per-operation ``c x (n^2 - 64)``, on every fit-split
    single-domain NVL72 all-reduce sweep of more than 8 ranks. First the model as it is, then the candidate."""
    import math
    from collectives import nccl_model as nm
    from collectives import algorithms as alg
    ids = ["gb200-nvl72-allreduce-72-by-size", "cw-gb200-nvl72-1rack-allreduce-by-size",
           "oci-gb300-16tray-allreduce-by-size"]
    print("  model as it is:")
    _grid(ids, lambda _: None, ("-",))
    orig_terms, orig_loop = alg.nvls_domain_terms, alg.Planner.nvls_loop_terms
    per_head = {"s": 0.0}

    def terms(n, one_domain=False, loops=1):
        k, s = orig_terms(n, one_domain, loops)
        return k, (0.0 if one_domain else s)

    def loop_terms(self, op, size):
        k, fill = orig_loop(self, op, size)
        ch = nm.nvls_channels(self.gpu.sm, True, nm.parse_nccl_version(op.options.get("nccl_version")))
        heads = nm.nvls_heads(op.n)
        loops = math.ceil(max(size, 1) / (ch * heads * self.nvls_chunk(op, size)))
        return k, fill + per_head["s"] * max(0, heads - 8) * loops

    alg.nvls_domain_terms, alg.Planner.nvls_loop_terms = terms, loop_terms
    try:
        print("  candidate: cost per loop and head beyond 8, us:")
        _grid(ids, lambda c: per_head.update(s=c * 1e-6), (0.0, 0.70, 0.80, 0.85, 0.90, 1.0))
    finally:
        alg.nvls_domain_terms, alg.Planner.nvls_loop_terms = orig_terms, orig_loop
        v._ROUTERS.clear()


FITS.update({"nvls-heads": nvls_heads})  # round 8, new out-of-sample points (rejected candidate)


def nvl72_loop_sync() -> None:
    """Round 8, large NVLink domains: the single-domain synchronisation ``c (n^2 - 64)`` paid per NVLS loop of
    NCCL's chunk (calibration.NVLS_SYNC_S_PER_RANK2_PER_LOOP), b kept (0.0633), on the fit-split large-domain
    rows (OCI GB300 16 trays, 15 values; CoreWeave 1 rack and the reference 72-rank rows, 5 values) and every
    fit NVL72 value. Kept: 0.004 us (b = 0: best 0.0055 us, 6.72 / 25.0 % on the 20 values)."""
    ids = ["oci-gb300-16tray-allreduce-by-size", "cw-gb200-nvl72-1rack-allreduce-by-size",
           "gb200-nvl72-allreduce-72-by-size"]
    old = cal.NVLS_SYNC_S_PER_RANK2_PER_LOOP
    for c in (0.002, 0.003, 0.0035, 0.004, 0.0045, 0.005):
        cal.NVLS_SYNC_S_PER_RANK2_PER_LOOP = c * 1e-6
        v._ROUTERS.clear()
        rows = [r for r in v.validate(splits=("fit",)).rows if r.rel_error is not None and r.category == "nvl72"]
        big = np.abs([r.rel_error for r in rows if r.id.split("@")[0] in ids])
        e = np.abs([r.rel_error for r in rows])
        print(f"  {c!s:>7} us: large-domain {len(big)} values {big.mean():.4f} (max {big.max():.3f}); "
              f"fit nvl72 {len(e)} values {e.mean():.4f}")
    cal.NVLS_SYNC_S_PER_RANK2_PER_LOOP = old
    v._ROUTERS.clear()


FITS.update({"nvl72-loop-sync": nvl72_loop_sync})  # round 8, large NVLink domains


#: Round 11: the Blackwell one-domain all-to-all sweeps of the fit split (what p2p-channels reads).
P2P_CHANNEL_FIT_IDS = ([f"oci-gb300-{h}host-alltoall-by-size" for h in (1, 2, 16)]
                       + [f"oci-gb200-{h}host-alltoall" for h in (1, 2, 16)])


def _p2p_channels_fit(arch, ids, simple_grid, ll_grid) -> None:
    """Grid fit of one architecture's p2p block rate and batch cost (Simple first, then LL) on the fit rows of ``ids``."""
    old = dict(cal.NCCL_P2P_CHANNEL_BPS[arch]), dict(cal.NCCL_P2P_BATCH_S[arch])

    def errors(keep):
        v._ROUTERS.clear()
        rows = [r for r in v.validate(ids=ids, splits=("fit",)).rows if r.rel_error is not None]
        return np.abs([r.rel_error for r in rows if keep(r)])

    def best(proto, rates, costs, keep):
        out = None
        for rate in rates:
            for cost in costs:
                cal.NCCL_P2P_CHANNEL_BPS[arch][proto], cal.NCCL_P2P_BATCH_S[arch][proto] = rate * 1e9, cost * 1e-6
                e = errors(keep)
                if out is None or e.mean() < out[0]:
                    out = (float(e.mean()), float(e.max()), len(e), rate, cost)
        cal.NCCL_P2P_CHANNEL_BPS[arch][proto], cal.NCCL_P2P_BATCH_S[arch][proto] = out[3] * 1e9, out[4] * 1e-6
        print(f"  sm{arch} {proto}: {out[3]:.1f} GB/s per channel, {out[4]:.0f} us per batch: {out[2]} values, "
              f"mean |error| {out[0]:.4f}, max {out[1]:.3f} (grid {rates[0]}-{rates[-1]} GB/s x "
              f"{costs[0]}-{costs[-1]} us)")

    simple = lambda r: r.note.startswith("direct/Simple")  # noqa: E731 (the protocol the model ran)
    best("Simple", *simple_grid, simple)
    best("LL", *ll_grid, lambda r: not simple(r))
    e = errors(lambda r: True)
    print(f"  all: {len(e)} values, mean |error| {e.mean():.4f}, max {e.max():.3f}")
    cal.NCCL_P2P_CHANNEL_BPS[arch].update(old[0])
    cal.NCCL_P2P_BATCH_S[arch].update(old[1])
    v._ROUTERS.clear()


def p2p_channels() -> None:
    """Round 11, all-to-all inside one NVLink domain: NCCL's p2p block rate and fixed cost per batch, by protocol
    (calibration.NCCL_P2P_CHANNEL_BPS[100], NCCL_P2P_BATCH_S[100]; collectives.p2p_channels), least mean |relative
    busbw error| on the fit-split values of :data:`P2P_CHANNEL_FIT_IDS` (groups ``oci-gb300-1rack-nvlink`` and
    ``oci-gb200-1rack-nvlink``: 51 values). Simple first on the values above 512 KiB a peer (grid rate 19-24 GB/s
    step 0.5, cost 10-34 us step 2), then LL on the others (rate 3.6-6.0 GB/s step 0.2, cost 0-20 us step 1);
    prints the best of each grid and the errors of all 51 values with the result. The held-out rows are not read."""
    _p2p_channels_fit(100, P2P_CHANNEL_FIT_IDS,
                      ([round(19 + 0.5 * i, 1) for i in range(11)], list(range(10, 36, 2))),
                      ([round(3.6 + 0.2 * i, 1) for i in range(13)], list(range(0, 21))))


#: Round 11 (p2p schedule on Ampere): the A100 one-board all-to-all sweeps of the fit split (NCCL 2.27.3).
P2P_CHANNEL_FIT_IDS_AMPERE = [f"aic-nccl-a100-alltoall-{n}gpu-by-size" for n in (2, 4, 8)]


def p2p_channels_ampere() -> None:
    """Round 11, p2p schedule on Ampere: calibration.NCCL_P2P_CHANNEL_BPS[80], NCCL_P2P_BATCH_S[80], the same
    form and procedure as :func:`p2p_channels` on the 33 fit values of :data:`P2P_CHANNEL_FIT_IDS_AMPERE`
    (group ``aiconfigurator-nccl-a100-1node``). Grids: Simple 6-24 GB/s step 1 x 0-40 us step 2, LL 1-8 GB/s step
    0.25 x 0-20 us step 1. The held-out rows are not read."""
    _p2p_channels_fit(80, P2P_CHANNEL_FIT_IDS_AMPERE,
                      ([float(x) for x in range(6, 25)], list(range(0, 42, 2))),
                      ([1 + 0.25 * i for i in range(29)], list(range(0, 21))))


FITS.update({"p2p-channels-ampere": p2p_channels_ampere})  # round 11, p2p schedule on Ampere
#: Round 12 (Hopper one-board all-to-all): the H100 / H200 one-board all-to-all sweeps of the fit split (NCCL 2.23).
P2P_CHANNEL_FIT_IDS_HOPPER = [f"aic-nccl223-{g}-alltoall-{n}gpu-by-size" for g in ("h100", "h200") for n in (2, 4, 8)]


def p2p_channels_hopper() -> None:
    """Round 12, Hopper one-board all-to-all: calibration.NCCL_P2P_CHANNEL_BPS[90], NCCL_P2P_BATCH_S[90], the same
    form and procedure as :func:`p2p_channels` on the 60 fit values of :data:`P2P_CHANNEL_FIT_IDS_HOPPER` (groups
    ``aiconfigurator-nccl2.23-h100-1node`` and ``-h200-1node``). Hopper gets dicts of its own first (before round 12
    it shared Blackwell's objects), so the grid never touches the Blackwell entries. Grids: Simple 6-30 GB/s step 1 x
    0-40 us step 2, LL 1-8 GB/s step 0.25 x 0-20 us step 1. The held-out rows are not read."""
    for table in (cal.NCCL_P2P_CHANNEL_BPS, cal.NCCL_P2P_BATCH_S):
        if table[90] is table[100]:
            table[90] = dict(table[100])
    _p2p_channels_fit(90, P2P_CHANNEL_FIT_IDS_HOPPER,
                      ([float(x) for x in range(6, 31)], list(range(0, 42, 2))),
                      ([1 + 0.25 * i for i in range(29)], list(range(0, 21))))


FITS.update({"p2p-channels-hopper": p2p_channels_hopper})  # round 12, Hopper one-board all-to-all
FITS.update({"p2p-channels": p2p_channels})  # round 11, all-to-all inside one NVLink domain (replaced round 8's p2p-ll)


def deepep_sms_tokens() -> None:
    """Round 10: (t0, r, R) of DeepEP's SM-bound normal kernels in the form ``max(t_link, t0 + X (1/(n r) + 1/R))``
    (``X`` the busiest rank's bytes, ``n`` SMs): least squares of the relative error over the README B200 SM
    sweep (calibration.DEEPEP_SM_SWEEP, 4096 tokens, bandwidth error) together with the fit-split rows of the
    groups ``aiconfigurator-deepep-normal-<gpu>-1node`` (b200 / b300 / gb300: SMs 8 / 16 / 24 x tokens 1 - 32768,
    latency error); the held-out groups are not read. Prints the fit and the old constants' errors."""
    import tomllib
    from dataclasses import replace as _replace
    from scipy.optimize import least_squares
    path = next(p for p in v.default_points_paths() if p.name == "published_points.toml")
    doc = tomllib.loads(path.read_text())
    pts = [v._Point("moe_alltoall", raw, k) for k, raw in enumerate(doc["moe_alltoall"])
           if str(raw.get("group", "")).startswith("aiconfigurator-deepep-normal-")]
    pts = [p for p in pts if p.split == "fit"]
    v._ROUTERS.clear()
    for j, coll in ((1, "moe_dispatch"), (2, "moe_combine")):
        # rows: (kind, n SMs, X bytes, t_link s, measured, L bytes); kind "bw" (GB/s) or "lat" (s)
        rows = []
        r = v._router("hgx-b200", {})
        tr = TokenRouting("uniform", tokens_per_rank=4096, experts=64)
        [res] = run(r, [Collective(coll, tuple(range(8)), 0, options={"moe": tr, "metric": "logical"})],
                    mode="epoch", epsilon=0.01)
        per_token = tr.dispatch_bytes_per_token if coll == "moe_dispatch" else tr.combine_bytes_per_token
        X = float(route_tokens(tr, 8, [0] * 8).rank_counts.sum(axis=0).max()) * per_token
        for n, *bws in cal.DEEPEP_SM_SWEEP:
            rows.append(("bw", n, X, res.time_s, bws[j - 1] * 1e9, res.logical_bytes))
        for p in pts:
            ep = int(p["ep"])
            r = v._moe_router(p, ep)
            for tok, *lat in p["tokens_dispatch_combine_latency_us"]:
                tr = _replace(v._moe_routing(p, "uniform", ep), tokens_per_rank=int(tok))
                [res] = run(r, [Collective(coll, tuple(range(ep)), 0, options={"moe": tr})], mode="epoch",
                            epsilon=0.01)  # no ``sms``: the link-bound time
                per_token = tr.dispatch_bytes_per_token if coll == "moe_dispatch" else tr.combine_bytes_per_token
                X = float(route_tokens(tr, ep, [0] * ep).rank_counts.sum(axis=0).max()) * per_token
                rows.append(("lat", int(p["sms"]), X, res.time_s, lat[j - 1] * 1e-6, 0.0))
        kind = np.array([k == "bw" for k, *_ in rows])
        n, X, T, M, L = (np.array([row[i] for row in rows], float) for i in range(1, 6))

        def err(x, cap=True):
            t = np.maximum(T, x[0] * 1e-6 + X / (n * x[1] * 1e9) + (X / (x[2] * 1e9) if cap else 0.0))
            return np.where(kind, L / t / M - 1.0, t / M - 1.0)
        old = np.abs(err([cal.DEEPEP_SM_FIXED_S[coll] * 1e6, cal.DEEPEP_SM_RATE_BPS[coll] / 1e9, 1.0], cap=False))
        fit = least_squares(err, x0=[30.0, 15.0, 100.0], bounds=([0.0, 1.0, 1.0], [1000.0, 100.0, 1e5]))
        e = np.abs(err(fit.x))
        print(f"  {coll}: t0 = {fit.x[0]:.1f} us, r = {fit.x[1]:.2f} GB/s per SM, R = {fit.x[2]:.0f} GB/s; "
              f"{len(e)} values ({kind.sum()} sweep): |error| mean {e.mean():.3f} (sweep {e[kind].mean():.3f}, "
              f"rows {e[~kind].mean():.3f}), max {e.max():.3f}; old constants mean {old.mean():.3f}, "
              f"max {old.max():.3f}")


FITS.update({"deepep-sms-tokens": deepep_sms_tokens})  # round 10, DeepEP SM budget across token counts


def onesided_nvlink() -> None:
    """Round 11: TensorRT-LLM NVLinkOneSided in one NVLink domain, the fixed time ``t0 + b log2(ep)`` per phase
    (calibration.ONESIDED_NVLINK_S). Every fit-split NVLinkOneSided row (groups aiconfigurator-trtllm-alltoall-gb200-1rack,
    EP 2-32 x 1-1024 tokens, and flashinfer3697-gb200-ep32) is run with the fixed time set to 0 (the link model's
    transfer time ``T``); then weighted least squares (relative error) of ``measured = T + t0 + b log2(ep)``, and for
    comparison ``T + t0`` and ``T + t0 + c (ep - 1)``. Prints the errors by group with the fitted constants."""
    import tomllib
    path = next(p for p in v.default_points_paths() if p.name == "published_points.toml")
    doc = tomllib.loads(path.read_text())
    pts = {p["id"]: p for p in doc["moe_alltoall"] if p["split"] == "fit"
           and "NVLinkOneSided" in str(p.get("settings", {}).get("kernel", ""))}
    m = sys.modules["collectives.moe"]
    old = dict(m.ONESIDED_NVLINK_S)
    m.ONESIDED_NVLINK_S.update({k: (0.0, 0.0) for k in old})
    v._ROUTERS.clear()
    rows = [r for r in v.validate(ids=list(pts), splits=("fit",)).rows if r.rel_error is not None]
    m.ONESIDED_NVLINK_S.update(old)
    for phase in ("dispatch", "combine"):
        sel = [r for r in rows if r.id.endswith(":" + phase)]
        pid = [r.id.split("@")[0].split(":")[0] for r in sel]
        ep = np.array([pts[i]["ep"] for i in pid], float)
        T = np.array([r.predicted for r in sel]) * 1e-6
        y = np.array([r.measured for r in sel]) * 1e-6
        grp = np.array([pts[i]["group"] for i in pid])
        for name, A in (("t0", np.c_[np.ones_like(ep)]), ("t0 + b log2(ep)", np.c_[np.ones_like(ep), np.log2(ep)]),
                        ("t0 + c (ep - 1)", np.c_[np.ones_like(ep), ep - 1])):
            w = 1 / y
            c = np.linalg.lstsq(A * w[:, None], (y - T) * w, rcond=None)[0]
            e = np.abs(T + A @ c - y) / y
            by = ", ".join(f"{g} {e[grp == g].mean():.3f}" for g in sorted(set(grp)))
            print(f"  {phase} {name}: {np.round(c * 1e6, 3)} us; {len(y)} values, mean |error| {e.mean():.3f}, "
                  f"max {e.max():.3f} ({by})")
    v._ROUTERS.clear()
    e = np.abs([r.rel_error for r in v.validate(ids=list(pts), splits=("fit",)).rows if r.rel_error is not None])
    print(f"  validate (constants as shipped): {len(e)} values, mean |error| {e.mean():.3f}, max {e.max():.3f}")


FITS.update({"onesided-nvlink": onesided_nvlink})  # round 11, TensorRT-LLM one-sided kernels in one NVLink domain

def ring_ll_latency() -> None:
    """Round 11: the LL ring's extra latency on one NVLink domain (collectives.ring_ll: base and per-step terms)
    and, with it, Blackwell's ring LL kernel efficiency (calibration.RING_LL_NVLINK_KERNEL_EFFICIENCY[3], fitted in
    round 7 without the extra latency). Grid of mean |busbw error| over the fit-split ring/LL rows of the
    single-domain collective points (categories nvlink / nvl72, no network): (base, step) on the rows <= 8 KiB
    (the latency-bound sizes), then the efficiency on every ring/LL row with the chosen (base, step)."""
    rl = sys.modules["collectives.ring_ll"]
    ids = [p["id"] for p in _fit_collective_points() if p.get("category") in ("nvlink", "nvl72")
           and int(p.get("domains", 1)) == 1 and p.get("scaleout", "none") == "none" and p["collective"] in
           ("all_reduce", "all_gather", "reduce_scatter")]
    small = lambda r: r.note == "ring/LL" and r.id.rsplit("@", 1)[-1] in ("512B", "2KiB", "8KiB")  # noqa: E731
    old = (rl.RING_LL_NVLINK_BASE_S, rl.RING_LL_NVLINK_STEP_S, cal.RING_LL_NVLINK_KERNEL_EFFICIENCY[3])
    for base in (0.0, 0.8, 1.0, 1.2, 1.4, 1.8) if "--efficiency-only" not in sys.argv else ():
        def setp(step, base=base):
            rl.RING_LL_NVLINK_BASE_S, rl.RING_LL_NVLINK_STEP_S = base * 1e-6, step * 1e-6
        print(f"  base {base} us, step (us):")
        _grid(ids, setp, (0.0, 0.4, 0.5, 0.55, 0.6, 0.65, 0.8), keep=small)
    rl.RING_LL_NVLINK_BASE_S, rl.RING_LL_NVLINK_STEP_S = old[:2]
    print(f"  Blackwell ring LL efficiency, base {old[0] * 1e6:.1f} us, step {old[1] * 1e6:.1f} us, every ring/LL row:")
    _grid(ids, lambda x: cal.RING_LL_NVLINK_KERNEL_EFFICIENCY.__setitem__(3, x), (0.5, 0.6, 0.7, 0.8, 0.85, 0.9, 1.0),
          keep=lambda r: r.note == "ring/LL")
    cal.RING_LL_NVLINK_KERNEL_EFFICIENCY[3] = old[2]
    v._ROUTERS.clear()


FITS.update({"ring-ll-latency": ring_ll_latency})  # round 11, aiconfigurator NCCL sweeps


HOPPER_SYSTEMS = ("hgx-h100", "hgx-h200", "hgx-h800", "hgx-h20")


def ring_ll_hopper() -> None:
    """Round 16: NCCL's launched channels on single-domain rings (``collectives.ring_ll.RING_LAUNCH_BY_SIZE``: the forms
    off / "share" / "channels" / "nccl" (round 16b) / "channel-threads"), then, with the shipped form ("channels" in
    round 16, "nccl" from round 16b, with the scheduler's channels), round 11's procedure again: the LL ring's
    (base, step) on the fit-split ring/LL rows <= 8 KiB, Ampere / Blackwell together (``RING_LL_NVLINK_BASE_S``,
    ``RING_LL_NVLINK_STEP_S``) and Hopper apart (``RING_LL_NVLINK_TERMS_S_BY_ARCH[2]``), then the ring LL kernel
    efficiency (``calibration.RING_LL_NVLINK_KERNEL_EFFICIENCY``, Blackwell 3, Hopper 2) on every ring/LL row of the
    architecture. Rows: the fit-split single-domain ring collective points (nvlink / nvl72 categories, one domain, no
    network; the Hopper ones: the NCCL 2.23 aiconfigurator all-gather / reduce-scatter sweeps added in round 16, DGX
    Cloud H100 and ml-engineering H200). Mean |busbw error|; last, the shipped model's one-board ring values by
    architecture (docs/collectives.md, "Round 16b (2026-12-06), review fixes")."""
    rl = sys.modules["collectives.ring_ll"]
    pts = [p for p in _fit_collective_points() if p.get("category") in ("nvlink", "nvl72")
           and int(p.get("domains", 1)) == 1 and p.get("scaleout", "none") == "none" and p["collective"] in
           ("all_reduce", "all_gather", "reduce_scatter", "broadcast", "reduce")]
    ids = [p["id"] for p in pts]
    hopper = {p["id"] for p in pts if p.get("system") in HOPPER_SYSTEMS}
    ampere = {p["id"] for p in pts if p.get("system") == "hgx-a100"}
    hop = lambda r: r.id.split("@")[0] in hopper  # noqa: E731
    small = lambda r: r.note == "ring/LL" and r.id.rsplit("@", 1)[-1] in ("512B", "2KiB", "8KiB")  # noqa: E731
    old = (rl.RING_LAUNCH_BY_SIZE, rl.RING_LL_NVLINK_BASE_S, rl.RING_LL_NVLINK_STEP_S,
           dict(rl.RING_LL_NVLINK_TERMS_S_BY_ARCH), dict(cal.RING_LL_NVLINK_KERNEL_EFFICIENCY))

    def restore():
        rl.RING_LAUNCH_BY_SIZE, rl.RING_LL_NVLINK_BASE_S, rl.RING_LL_NVLINK_STEP_S = old[:3]
        rl.RING_LL_NVLINK_TERMS_S_BY_ARCH.clear()
        rl.RING_LL_NVLINK_TERMS_S_BY_ARCH.update(old[3])
        cal.RING_LL_NVLINK_KERNEL_EFFICIENCY.clear()
        cal.RING_LL_NVLINK_KERNEL_EFFICIENCY.update(old[4])

    def setab(x):
        rl.RING_LL_NVLINK_BASE_S, rl.RING_LL_NVLINK_STEP_S = x[0] * 1e-6, x[1] * 1e-6

    def seth(x):
        rl.RING_LL_NVLINK_TERMS_S_BY_ARCH[2] = (x[0] * 1e-6, x[1] * 1e-6)
    try:
        print("  launched channels (constants as shipped), every single-domain ring row:")
        _grid(ids, lambda m: setattr(rl, "RING_LAUNCH_BY_SIZE", m),
              (False, "share", "channels", "nccl", "channel-threads"), digits=4)
        restore()
        print("  Ampere / Blackwell (base us, step us), ring/LL rows <= 8 KiB:")
        # round 16b: the grid extended past round 16's corner (0.8, 0.6)
        _grid(ids, setab, [(b, st) for b in (0.0, 0.2, 0.4, 0.6, 0.8, 1.0, 1.2) for st in (0.4, 0.5, 0.6, 0.7, 0.8)],
              keep=lambda r: small(r) and not hop(r), digits=4)
        restore()
        print("  Blackwell ring LL efficiency, every Blackwell ring/LL row:")
        _grid(ids, lambda x: cal.RING_LL_NVLINK_KERNEL_EFFICIENCY.__setitem__(3, x), (0.55, 0.65, 0.75, 0.85, 0.95),
              keep=lambda r: r.note == "ring/LL" and not hop(r) and r.id.split("@")[0] not in ampere, digits=4)
        restore()
        print("  Hopper (base us, step us), Hopper ring/LL rows <= 8 KiB:")
        _grid(ids, seth, [(b, st) for b in (-2.4, -2.0, -1.6, -1.2, -0.8) for st in (0.1, 0.2, 0.3, 0.4)],
              keep=lambda r: small(r) and hop(r), digits=4)
        restore()
        print("  Hopper ring LL efficiency, every Hopper ring/LL row:")
        _grid(ids, lambda x: cal.RING_LL_NVLINK_KERNEL_EFFICIENCY.__setitem__(2, x), (0.6, 0.7, 0.8, 0.9, 1.0),
              keep=lambda r: r.note == "ring/LL" and hop(r), digits=4)
        restore()
        print("  one-board ring values by architecture (constants as shipped): Hopper, Ampere, Blackwell:")
        for name, keep in (("hopper", hop), ("ampere", lambda r: r.id.split("@")[0] in ampere),
                           ("blackwell", lambda r: not hop(r) and r.id.split("@")[0] not in ampere)):
            _grid(ids, lambda _: None, (name,), keep=keep, digits=4)
    finally:
        restore()
        v._ROUTERS.clear()


FITS.update({"ring-ll-hopper": ring_ll_hopper})  # round 16, Hopper LL ring latency


def nvl72_climb() -> None:
    """Round 12, the one-domain climb (candidate NOT adopted): single-domain NVLS over ``n`` > 8 GPUs with the
    per-doubling slowdown ``b`` of the rate (``calibration.NVLS_DOMAIN_SLOWDOWN`` today, 0.0633), the per-loop
    sync ``c (n^2 - 64)`` (``NVLS_SYNC_S_PER_RANK2_PER_LOOP``, 0.004 us today) and an extra latency
    ``k (n^2 - 64) sqrt(S / MiB)`` (no source: the empirical shape of the fit rows, docs/collectives.md, "Round 12
    (2026-12-03), NVL72 all-reduce across racks and the one-domain climb"). Grid over (b, c in us, k in us) on the 20
    fit-split large-domain values (OCI GB300 16 trays; CoreWeave 1 rack and the reference 72-rank rows). The
    multi-domain NVLS stages keep b and their per-call term (not patched)."""
    import math
    from collectives import algorithms as alg
    from collectives import nvls_chunks as nc
    ids = ["oci-gb300-16tray-allreduce-by-size", "cw-gb200-nvl72-1rack-allreduce-by-size",
           "gb200-nvl72-allreduce-72-by-size"]
    orig_terms, orig_chunk_terms, orig_loop = alg.nvls_domain_terms, nc.nvls_domain_terms, alg.Planner.nvls_loop_terms
    old_c = cal.NVLS_SYNC_S_PER_RANK2_PER_LOOP
    par = {"b": cal.NVLS_DOMAIN_SLOWDOWN, "k": 0.0}

    def terms(n, one_domain=False, loops=1):
        keff, sync = orig_terms(n, one_domain, loops)
        if one_domain:
            keff = 1.0 / (1.0 + par["b"] * max(0.0, math.log2(max(n, 1) / 8)))
        return keff, sync

    def loop_terms(self, op, size):  # single-domain NVLS only; the skew rides on the fill (a latency)
        keff, fill = orig_loop(self, op, size)
        return keff, fill + par["k"] * max(0, op.n * op.n - 64) * math.sqrt(max(size, 1) / (1 << 20))

    def setp(x):
        par["b"], c, par["k"] = x[0], x[1], x[2]
        cal.NVLS_SYNC_S_PER_RANK2_PER_LOOP = c * 1e-6
        par["k"] *= 1e-6

    alg.nvls_domain_terms, nc.nvls_domain_terms, alg.Planner.nvls_loop_terms = \
        terms, (lambda n, one_domain=False, loops=1: terms(n, True, loops)), loop_terms
    try:
        print("  (b, c us, k us); k = 0 is the per-loop form of round 8 (b 0.0633, c 0.004 today):")
        _grid(ids, setp, [(b, c, 0.0) for b in (0.0, 0.02, 0.04, 0.0633) for c in (0.003, 0.004, 0.0055)]
              + [(b, c, k) for b in (0.0, 0.02, 0.04, 0.0633) for c in (0.0, 0.001, 0.002)
                 for k in (0.0015, 0.002, 0.0025, 0.003)])
    finally:
        alg.nvls_domain_terms, nc.nvls_domain_terms, alg.Planner.nvls_loop_terms = orig_terms, orig_chunk_terms, orig_loop
        cal.NVLS_SYNC_S_PER_RANK2_PER_LOOP = old_c
        v._ROUTERS.clear()


FITS.update({"nvl72-climb": nvl72_climb})  # round 12, the one-domain climb (rejected candidate)
def ring_copy() -> None:
    """Round 12: the Simple ring's final local copy (collectives.ring_copy.RING_COPY_RATIO). Grid of mean |busbw
    error| over the fit-split ring/Simple rows of the single-domain collective points (categories nvlink / nvl72,
    no network; all-reduce, all-gather, reduce-scatter), all of them and by rank count; 0 is the old model."""
    rc = sys.modules["collectives.ring_copy"]
    ids = [p["id"] for p in _fit_collective_points() if p.get("category") in ("nvlink", "nvl72")
           and int(p.get("domains", 1)) == 1 and p.get("scaleout", "none") == "none" and p["collective"] in
           rc.RING_COPY_COLLECTIVES]
    old = rc.RING_COPY_RATIO
    grid = (0.0, 1.0, 1.25, 1.5, 1.625, 1.75, 1.875, 2.0, 2.25, 2.5, 3.0, 4.0)
    print("  every ring/Simple row:")
    _grid(ids, lambda x: setattr(rc, "RING_COPY_RATIO", x), grid, keep=lambda r: r.note == "ring/Simple", digits=4)
    ranks = {p["id"]: int(p.get("ranks", 0)) for p in _fit_collective_points() if p["id"] in ids}
    for lo, hi in ((2, 2), (3, 4), (5, 8)):  # (no fit-split ring/Simple row of one domain has more ranks)
        print(f"  ring/Simple rows of {lo}-{hi} ranks:")
        _grid(ids, lambda x: setattr(rc, "RING_COPY_RATIO", x), (0.0, 1.5, 1.625, 1.75, 2.0, 2.5),
              keep=lambda r, lo=lo, hi=hi: r.note == "ring/Simple" and lo <= ranks.get(r.id.split("@")[0], 0) <= hi)
    rc.RING_COPY_RATIO = old
    v._ROUTERS.clear()


FITS.update({"ring-copy": ring_copy})  # round 12, ring plateau on small boards


#: Round 13 (Hopper one-board all-to-all, small sizes): every fit NCCL one-board all-to-all sweep, by architecture.
P2P_PEER_FIT_IDS = {
    90: P2P_CHANNEL_FIT_IDS_HOPPER + ["h100x8-alltoall"],
    80: P2P_CHANNEL_FIT_IDS_AMPERE,
    100: [f"aic-nccl-{g}-alltoall-{n}gpu-by-size" for g in ("b200", "gb200", "gb300") for n in (2, 4, 8)]
    + P2P_CHANNEL_FIT_IDS,
}


def p2p_peer_cost(arch=None, peer_grid=None, ll_grid=None, simple_grid=None) -> None:
    """Round 13: a fixed cost per peer of a one-domain all-to-all (``(n - 1) x c`` on the p2p kernel's fixed part,
    calibration.NCCL_P2P_ONEDOMAIN_PEER_S) fitted with the LL batch cost on the LL-side fit values of
    :data:`P2P_PEER_FIT_IDS` (grid c 0-2 us step 0.1 x LL batch 0-12 us step 1; block rates kept), then the Simple
    batch cost (0-40 us step 2) on the Simple-side values with that c. Per architecture family; prints each grid's
    best and the errors of every value before and after. The held-out rows are not read."""
    archs = [arch] if arch is not None else (90, 80, 100)
    peer_grid = peer_grid or [round(0.1 * i, 1) for i in range(21)]
    ll_grid = ll_grid or list(range(0, 13))
    simple_grid = simple_grid or list(range(0, 42, 2))
    simple = lambda r: r.note.startswith("direct/Simple")  # noqa: E731 (the protocol the model ran)
    for a in archs:
        ids = list(P2P_PEER_FIT_IDS[a])
        old = (cal.NCCL_P2P_ONEDOMAIN_PEER_S[a], dict(cal.NCCL_P2P_BATCH_S[a]))

        def errors(keep=lambda r: True):
            v._ROUTERS.clear()
            rows = [r for r in v.validate(ids=ids, splits=("fit",)).rows if r.rel_error is not None]
            return np.abs([r.rel_error for r in rows if keep(r)])
        e0 = errors()
        out = None
        for c in peer_grid:
            for b in ll_grid:
                cal.NCCL_P2P_ONEDOMAIN_PEER_S[a], cal.NCCL_P2P_BATCH_S[a]["LL"] = c * 1e-6, b * 1e-6
                e = errors(lambda r: not simple(r))
                if out is None or e.mean() < out[0]:
                    out = (float(e.mean()), float(e.max()), len(e), c, b)
        cal.NCCL_P2P_ONEDOMAIN_PEER_S[a], cal.NCCL_P2P_BATCH_S[a]["LL"] = out[3] * 1e-6, out[4] * 1e-6
        print(f"  sm{a} LL: {out[3]:.1f} us a peer, {out[4]:.0f} us a batch: {out[2]} values, mean |error| "
              f"{out[0]:.4f}, max {out[1]:.3f}")
        best_s = None
        for b in simple_grid:
            cal.NCCL_P2P_BATCH_S[a]["Simple"] = b * 1e-6
            e = errors(simple)
            if best_s is None or e.mean() < best_s[0]:
                best_s = (float(e.mean()), float(e.max()), len(e), b)
        cal.NCCL_P2P_BATCH_S[a]["Simple"] = best_s[3] * 1e-6
        print(f"  sm{a} Simple: {best_s[3]:.0f} us a batch: {best_s[2]} values, mean |error| {best_s[0]:.4f}, "
              f"max {best_s[1]:.3f}")
        e1 = errors()
        print(f"  sm{a} all: {len(e1)} values, mean |error| {e0.mean():.4f} -> {e1.mean():.4f}, "
              f"max {e0.max():.3f} -> {e1.max():.3f}")
        cal.NCCL_P2P_ONEDOMAIN_PEER_S[a] = old[0]
        cal.NCCL_P2P_BATCH_S[a].update(old[1])
        v._ROUTERS.clear()


FITS.update({"p2p-peer-cost": p2p_peer_cost})  # round 13, one-domain all-to-all cost per peer


#: Round 16 (one-board all-to-all mid sizes): the fit rows of the Simple fill, by family (every fit NCCL one-domain
#: all-to-all of that family; held-out rows are not read).
P2P_FILL_FIT_IDS = {
    100: [f"aic-nccl-{g}-alltoall-{n}gpu-by-size" for g in ("b200", "gb200", "gb300") for n in (2, 4, 8)]
    + P2P_CHANNEL_FIT_IDS + ["gtc25-b200x8-alltoall"],
    90: P2P_CHANNEL_FIT_IDS_HOPPER + ["h100x8-alltoall"],
    80: P2P_CHANNEL_FIT_IDS_AMPERE,
}
#: (block rates GB/s, batch costs us, fills GB/s): the coarse grid, then the fine one round its best, by family.
P2P_FILL_GRIDS = {
    100: (([19, 20, 21, 21.5, 22, 23, 24], list(range(6, 23, 2)), [0, 20, 30, 40, 50, 60, 80, 120]),
          ([21, 21.5, 22], [13, 14, 15], [45, 50, 55])),
    90: (([13, 15, 16, 17, 18, 19, 21], list(range(0, 19, 2)), [0, 20, 30, 40, 50, 60, 80, 120]),
         ([17.5, 18, 18.5], [9, 10, 11], [25, 30, 35])),
    80: (([8, 9, 10, 11, 12], [10, 14, 18, 22, 26, 30, 34], [0, 10, 20, 30, 40, 60]),
         ([10.5, 11, 11.5], [20, 22, 24], [15, 20, 25])),
}


def p2p_simple_fill(arch=None) -> None:
    """Round 16: the Simple side of the one-domain p2p kernel with its last-step fill (calibration
    NCCL_P2P_CHANNEL_BPS[a]["Simple"], NCCL_P2P_BATCH_S[a]["Simple"], NCCL_P2P_SIMPLE_FILL_BPS[a]), least mean |busbw
    error| over the Simple-side fit values of :data:`P2P_FILL_FIT_IDS` (the protocol the model ran, with NCCL 2.29's
    LL rule), the grids of :data:`P2P_FILL_GRIDS` (coarse, then fine; the fine grid's best is the constant; a fill of
    0 is the form without the term). LL constants and the cost per peer kept. The held-out rows are not read."""
    import itertools
    simple = lambda r: r.note.startswith("direct/Simple")  # noqa: E731 (the protocol the model ran)
    for a in ([arch] if arch is not None else (100, 90, 80)):
        ids = P2P_FILL_FIT_IDS[a]
        old = (cal.NCCL_P2P_CHANNEL_BPS[a]["Simple"], cal.NCCL_P2P_BATCH_S[a]["Simple"],
               cal.NCCL_P2P_SIMPLE_FILL_BPS.get(a))

        def errors(keep):
            v._ROUTERS.clear()
            rows = [r for r in v.validate(ids=ids, splits=("fit",)).rows if r.rel_error is not None]
            return np.abs([r.rel_error for r in rows if keep(r)])
        for grid in P2P_FILL_GRIDS[a]:
            best = nofill = None
            for rate, cost, fill in itertools.product(*grid):
                cal.NCCL_P2P_CHANNEL_BPS[a]["Simple"], cal.NCCL_P2P_BATCH_S[a]["Simple"] = rate * 1e9, cost * 1e-6
                cal.NCCL_P2P_SIMPLE_FILL_BPS[a] = fill * 1e9
                e = errors(simple)
                out = (float(e.mean()), float(e.max()), len(e), rate, cost, fill)
                best = out if best is None or out[0] < best[0] else best
                if fill == 0:
                    nofill = out if nofill is None or out[0] < nofill[0] else nofill
            print(f"  sm{a} grid {grid}: best {best[3]} GB/s, {best[4]} us, fill {best[5]} GB/s: {best[2]} values, "
                  f"mean |error| {best[0]:.4f}, max {best[1]:.3f}"
                  + (f"; without a fill {nofill[3]} GB/s, {nofill[4]} us: {nofill[0]:.4f}" if nofill else ""))
        cal.NCCL_P2P_CHANNEL_BPS[a]["Simple"], cal.NCCL_P2P_BATCH_S[a]["Simple"] = old[0], old[1]
        if old[2] is None:
            cal.NCCL_P2P_SIMPLE_FILL_BPS.pop(a, None)
        else:
            cal.NCCL_P2P_SIMPLE_FILL_BPS[a] = old[2]
        v._ROUTERS.clear()


FITS.update({"p2p-simple-fill": p2p_simple_fill})  # round 16, one-board all-to-all mid sizes


def ring_kernel_hopper() -> None:
    """Round 13: Hopper's ring kernel efficiency on NVLink (``calibration.RING_NVLINK_KERNEL_EFFICIENCY[2]``) with
    the ring's final local copy in the time (round 12). Per source, measured / modelled busbw at 1 (NCCL's 20.6
    GB/s per-link constant for the sending steps), then a grid of mean |busbw error| over every fit-split
    single-domain Hopper ring/Simple row (categories nvlink / nvl72, no network)."""
    hopper = ("h100", "h200", "h800", "h20")
    pts = [p for p in _fit_collective_points() if p.get("category") in ("nvlink", "nvl72")
           and int(p.get("domains", 1)) == 1 and p.get("scaleout", "none") == "none"
           and any(h in str(p.get("system", "")).lower() for h in hopper)]
    ids = [p["id"] for p in pts]
    old = dict(cal.RING_NVLINK_KERNEL_EFFICIENCY)
    cal.RING_NVLINK_KERNEL_EFFICIENCY[2] = 1.0
    v._ROUTERS.clear()
    src = {p["id"]: str(p.get("source", ""))[:40] for p in pts}
    per = {}
    for r in v.validate(ids=ids, splits=("fit",)).rows:
        if r.rel_error is not None and r.note == "ring/Simple":
            per.setdefault(src.get(r.id.split("@")[0], r.id), []).append(r.measured / r.predicted)
    for s, q in per.items():
        print(f"  {s}: {len(q)} rows, measured / modelled {np.mean(q):.3f} (min {min(q):.3f}, max {max(q):.3f})")
    print(f"  mean over sources {np.mean([np.mean(q) for q in per.values()]):.3f}")
    print("  every Hopper ring/Simple row, grid of the efficiency:")
    _grid(ids, lambda x: cal.RING_NVLINK_KERNEL_EFFICIENCY.__setitem__(2, float(x)),
          (1.0, 1.02, 1.03, 1.04, 1.045, 1.05, 1.055, 1.06, 1.07, 1.08), keep=lambda r: r.note == "ring/Simple",
          digits=4)
    cal.RING_NVLINK_KERNEL_EFFICIENCY.clear()
    cal.RING_NVLINK_KERNEL_EFFICIENCY.update(old)
    v._ROUTERS.clear()


FITS.update({"ring-kernel-hopper": ring_kernel_hopper})  # round 13, Hopper ring rate vs NCCL's per-link constant


if __name__ == "__main__":
    for name in [a for a in sys.argv[1:] if not a.startswith("--")] or list(FITS):
        print(name)
        FITS[name]()
