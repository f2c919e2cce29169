"""EP kernels inside one Blackwell NVLink domain (issue 8, round 11): the aiconfigurator DeepEP low-latency token
sweeps of B300 / GB200 / GB300 (held-out by their coins: added, no constant changed) and TensorRT-LLM's
NVLinkOneSided all-to-all on GB200 NVL72 by EP size and tokens (fit by its coin), which sizes that kernel's
one-domain fixed time ``t0 + b log2(ep)`` per phase (``collectives.calibration.ONESIDED_NVLINK_S``)."""

import functools
import re
import tomllib
from pathlib import Path

import numpy as np
import pytest

from collectives import Collective, TokenRouting, run
from collectives.calibration import LL_NVLINK_S, ONESIDED_NVLINK_S, PULL_COMBINE_FIXED_S, onesided_fixed_s
from collectives.validate import validate
from fabric import Router, compile_fabric
from topologies.errors import SpecError
from topologies.presets import build
from tests.test_published_points import split_coin

DATA = Path(__file__).resolve().parents[1] / "collectives" / "data"
TRT_GROUP = "aiconfigurator-trtllm-alltoall-gb200-1rack"
LL_GROUPS = ("aiconfigurator-deepep-ll-b300-1node", "aiconfigurator-deepep-ll-gb200-1node",
             "aiconfigurator-deepep-ll-gb300-1node")


def _points(group: str) -> list[dict]:
    doc = tomllib.loads((DATA / "published_points.toml").read_text())
    return [p for p in doc["moe_alltoall"] if p.get("group") == group]


@functools.lru_cache(maxsize=1)
def _trt_rows() -> dict:
    """(ep, tokens, 'dispatch' | 'combine') -> validation row of the fit group's five sweeps."""
    out = {}
    for r in validate(DATA / "published_points.toml", ids=[p["id"] for p in _points(TRT_GROUP)]).rows:
        m = re.fullmatch(r"aic-trtllm-onesided-gb200-ep(\d+)-by-tokens@T(\d+):(dispatch|combine)", r.id)
        assert m, r.id
        out[(int(m[1]), int(m[2]), m[3])] = r
    return out


def test_new_groups_follow_the_coin_and_the_selection_rule():
    """Names by the convention, splits by the coin (LL: 56 / 60 / 7 -> held-out; TensorRT-LLM: 173 -> fit), the
    selection rules of the round: two shapes x 1-1024 tokens (LL), NVLinkOneSided x EP 2-32 x 1-1024 tokens."""
    for g in LL_GROUPS:
        pts = _points(g)
        assert len(pts) == 2 and {p["split"] for p in pts} == {split_coin(g)} == {"heldout"}
        assert {(p["hidden"], p["experts"], p["topk"]) for p in pts} == {(7168, 256, 8), (2048, 128, 8)}
        assert all([r[0] for r in p["tokens_dispatch_combine_latency_us"]] == [2 ** i for i in range(11)] for p in pts)
    pts = _points(TRT_GROUP)
    assert split_coin(TRT_GROUP) == "fit" and {p["split"] for p in pts} == {"fit"}
    assert sorted(p["ep"] for p in pts) == [2, 4, 8, 16, 32]
    assert all("NVLinkOneSided" in p["settings"]["kernel"] and p["dispatch_dtype"] == "nvfp4" for p in pts)
    assert all([r[0] for r in p["tokens_dispatch_combine_latency_us"]] == [2 ** i for i in range(11)] for p in pts)


def test_perfect_routing_gives_the_collectors_balanced_counts():
    """The collector's generate_balanced_expert_ids (ep >= 8: token i -> the 8 ranks of group i % (ep / 8), one
    expert each; ep < 8: every rank, 8 / ep experts each) gives the ``perfect`` router's rank and copy counts once
    tokens >= ep / 8 (an independent loop over the collector's formula)."""
    from collectives.moe import route_tokens
    for ep, tokens in ((2, 4), (4, 1), (8, 3), (16, 2), (32, 4), (32, 64)):
        per = 256 // ep
        ranks, copies = np.zeros((ep, ep), np.int64), np.zeros((ep, ep), np.int64)
        for s in range(ep):
            for i in range(tokens):
                if ep >= 8:
                    g = i % (ep // 8)
                    experts = [(g * 8 + k) * per + (i // (ep // 8)) % per for k in range(8)]
                else:
                    experts = [(k % ep) * per + (i + k // ep) % per for k in range(8)]
                owners = [e // per for e in experts]
                for d in set(owners):
                    ranks[s, d] += 1
                for d in owners:
                    copies[s, d] += 1
        t = route_tokens(TokenRouting("perfect", tokens_per_rank=tokens, experts=256, topk=8), ep, np.zeros(ep, np.int64))
        assert np.array_equal(t.rank_counts, ranks) and np.array_equal(t.copy_counts, copies), (ep, tokens)


def test_one_token_dispatch_follows_the_ep_size():
    """Measured at 1 token: 12.9 / 14.9 / 18.3 / 19.5 / 21.0 us at EP 2 / 4 / 8 / 16 / 32. Before round 11 the
    model charged every EP size the same 18.6 us (p2p latency + LL fixed time): +44 % at EP2, -11 % at EP32."""
    rows = _trt_rows()
    for ep in (2, 4, 8, 16, 32):
        assert abs(rows[(ep, 1, "dispatch")].rel_error) <= 0.10, ep
    assert rows[(32, 1, "dispatch")].predicted - rows[(2, 1, "dispatch")].predicted >= 6.0


def test_combine_minus_dispatch_grows_with_the_ep_size():
    """Measured at 1 token, combine - dispatch: 3.2 us at EP2, 11.5 us at EP32 (the combine's head barrier waits
    for every peer). Round 8 charged a flat 3.9 us (PULL_COMBINE_FIXED_S) at every EP."""
    rows = _trt_rows()
    gap = {ep: rows[(ep, 1, "combine")].predicted - rows[(ep, 1, "dispatch")].predicted for ep in (2, 32)}
    assert gap[32] - gap[2] >= 5.0, gap


def test_fit_group_error():
    """The fit group (110 values): mean |error| 16.7 % before round 11 (max 45 %), within 7 % / 22 % with it."""
    e = np.abs([r.rel_error for r in _trt_rows().values()])
    assert len(e) == 110 and e.mean() <= 0.07 and e.max() <= 0.22


def test_recorded_constants_are_the_fit():
    """ONESIDED_NVLINK_S is the weighted least squares of ``measured = T + t0 + b log2(ep)`` (T: the model's time with
    the fixed time at 0) over every fit-split NVLinkOneSided row, as benchmarks/fit_collective_constants.py
    onesided-nvlink prints it (rounded to 0.01 us)."""
    import collectives.moe as moe
    from collectives import validate as v
    doc = tomllib.loads((DATA / "published_points.toml").read_text())
    pts = {p["id"]: p for p in doc["moe_alltoall"] if p["split"] == "fit"
           and "NVLinkOneSided" in str(p.get("settings", {}).get("kernel", ""))}
    assert {p["group"] for p in pts.values()} == {TRT_GROUP, "flashinfer3697-gb200-ep32"}
    saved = dict(moe.ONESIDED_NVLINK_S)
    moe.ONESIDED_NVLINK_S.update({k: (0.0, 0.0) for k in saved})  # in place: onesided_fixed_s reads the same table
    v._ROUTERS.clear()
    try:
        rows = [r for r in validate(DATA / "published_points.toml", ids=list(pts)).rows if r.rel_error is not None]
    finally:
        moe.ONESIDED_NVLINK_S.update(saved)
        v._ROUTERS.clear()
    for phase in ("dispatch", "combine"):
        sel = [r for r in rows if r.id.endswith(":" + phase)]
        ep = np.array([pts[r.id.split("@")[0].split(":")[0]]["ep"] for r in sel], float)
        T, y = (np.array([getattr(r, k) for r in sel]) * 1e-6 for k in ("predicted", "measured"))
        A = np.c_[np.ones_like(ep), np.log2(ep)] / y[:, None]
        t0, b = np.linalg.lstsq(A, (y - T) / y, rcond=None)[0]
        assert ONESIDED_NVLINK_S["moe_" + phase] == pytest.approx((t0, b), abs=0.006e-6), phase


@functools.lru_cache(maxsize=1)
def _gb200() -> Router:
    return Router(compile_fabric(build("gb200-nvl72", {})))


def _time_s(coll: str, ep: int, kernel: str, **options) -> float:
    tr = TokenRouting("perfect", tokens_per_rank=1, experts=256, topk=8, hidden=7168, dispatch_dtype="nvfp4")
    [res] = run(_gb200(), [Collective(coll, tuple(range(ep)), 0, options={"moe": tr, "form": "direct",
                                                                          "kernel": kernel, **options})],
                mode="epoch", epsilon=0.01)
    return res.time_s


def test_fixed_time_replaces_the_latency_and_the_pull_term():
    """In one NVLink domain the family pays onesided_fixed_s in place of the p2p latency + LL fixed time (+ the pull
    combine's 3.9 us): a 1-token call is that fixed time plus well under a microsecond of transfer."""
    for coll in ("moe_dispatch", "moe_combine"):
        for ep in (4, 16):
            t = _time_s(coll, ep, "nvlink_onesided", pull_combine=True)
            assert 0 <= t - onesided_fixed_s(coll, ep) <= 1.0e-6, (coll, ep)
    # the pull option does not add PULL_COMBINE_FIXED_S on top of the fitted combine time
    assert _time_s("moe_combine", 8, "nvlink_onesided", pull_combine=True) == \
        pytest.approx(_time_s("moe_combine", 8, "nvlink_onesided"), abs=1e-9)
    # the LL family with the pull option keeps the round-8 path
    assert _time_s("moe_combine", 8, "moe_ll", pull_combine=True) - _time_s("moe_combine", 8, "moe_ll") == \
        pytest.approx(PULL_COMBINE_FIXED_S, rel=0.02)


def test_onesided_fixed_time_refuses_bad_ranks():
    with pytest.raises(SpecError, match="moe ranks"):
        onesided_fixed_s("moe_dispatch", 1)
    with pytest.raises(SpecError, match="moe ranks"):
        onesided_fixed_s("moe_dispatch", True)


def test_blackwell_ll_kernels_keep_the_link_model():
    """The three new DeepEP LL groups are held-out: no Blackwell entry of LL_NVLINK_S was fitted from them (the
    one-board Hopper fit stays the only one)."""
    assert {k[2] for k in LL_NVLINK_S} == {90}
