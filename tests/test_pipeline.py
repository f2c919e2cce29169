"""workloads.pipeline: Megatron 1F1B / interleaved and DualPipe orders against closed forms."""

import numpy as np
import pytest

from topologies.errors import SpecError
from workloads.pipeline import KINDS, STREAMS, simulate_pipeline


@pytest.mark.parametrize("pp,m", [(1, 4), (2, 1), (4, 4), (4, 12), (8, 9)])
def test_1f1b_bubble_is_pp_minus_1_times_f_plus_b(pp, m):
    f, b = 0.7, 1.9
    r = simulate_pipeline("1f1b", pp, m, forward_s=f, backward_s=b)
    assert r.makespan_s == pytest.approx((m + pp - 1) * (f + b))
    assert r.bubble_s == pytest.approx((pp - 1) * (f + b))
    np.testing.assert_allclose(r.busy_s, m * (f + b))
    np.testing.assert_allclose(r.idle_s, (pp - 1) * (f + b), atol=1e-12)


def test_1f1b_single_micro_batch_pays_every_send_twice():
    pp, f, b, c = 5, 1.0, 2.0, 0.25
    r = simulate_pipeline("1f1b", pp, 1, forward_s=f, backward_s=b, p2p_s=c)
    assert r.makespan_s == pytest.approx(pp * (f + b) + 2 * (pp - 1) * c)
    p2p = r.timeline.stream == STREAMS.index("p2p")
    assert p2p.sum() == 2 * (pp - 1) and np.allclose(r.timeline.end_s[p2p] - r.timeline.start_s[p2p], c)


@pytest.mark.parametrize("pp,vpp,m", [(2, 2, 4), (4, 2, 8), (4, 4, 4), (4, 3, 16), (8, 2, 16)])
def test_interleaved_bubble_shrinks_by_vpp(pp, vpp, m):
    f, b = 1.2, 2.6          # per stage (all its chunks)
    r = simulate_pipeline("interleaved", pp, m, vpp=vpp, forward_s=f / vpp, backward_s=b / vpp)
    assert r.bubble_s == pytest.approx((pp - 1) * (f + b) / vpp)
    assert r.makespan_s == pytest.approx(m * (f + b) + (pp - 1) * (f + b) / vpp)


@pytest.mark.parametrize("pp", [2, 4, 6, 8])
@pytest.mark.parametrize("extra", [0, 2, 8])
def test_dualpipe_bubble_follows_table_2(pp, extra):
    # DeepSeek-V3 report, Table 2: (PP/2 - 1)(F&B + B - 3W), with F = B_input = W (the zero-bubble setting)
    f = b = w = 0.37
    m = 2 * pp + extra
    r = simulate_pipeline("dualpipe", pp, m, forward_s=f, backward_s=b, weight_s=w)
    F, B, W = f, b + w, w
    assert r.bubble_s == pytest.approx((pp / 2 - 1) * ((F + B) + B - 3 * W), abs=1e-9)
    np.testing.assert_allclose(r.busy_s, m * (F + B))
    # below 1F1B's (PP - 1)(F + B) for the same stages
    assert r.bubble_s <= (pp - 1) * (F + B)


def test_bubble_fraction_shrinks_with_more_micro_batches():
    for kind, vpp in (("1f1b", 1), ("interleaved", 2), ("dualpipe", 1)):
        fr = [simulate_pipeline(kind, 4, m, vpp=vpp, forward_s=1.0, backward_s=1.0, weight_s=1.0).bubble_fraction
              for m in (8, 16, 32, 64)]
        assert all(a > b for a, b in zip(fr, fr[1:])), (kind, fr)


@pytest.mark.parametrize("kind,pp,vpp,m,overlap", [("1f1b", 4, 1, 8, "none"), ("interleaved", 4, 2, 8, "none"),
                                                   ("interleaved", 4, 3, 12, "a2a"), ("dualpipe", 6, 1, 14, "a2a"),
                                                   ("dualpipe", 4, 1, 8, "none"), ("1f1b", 1, 1, 5, "a2a")])
def test_random_stages_respect_work_dependencies_and_streams(kind, pp, vpp, m, overlap):
    rng = np.random.default_rng(7)
    shape = (pp, vpp)
    kw = dict(forward_s=rng.uniform(0.5, 2, shape), backward_s=rng.uniform(0.5, 3, shape),
              weight_s=rng.uniform(0, 1, shape), forward_comm_s=rng.uniform(0, 1, shape),
              backward_comm_s=rng.uniform(0, 1, shape), forward_exposed_s=0.1, p2p_s=rng.uniform(0, 0.3, pp))
    r = simulate_pipeline(kind, pp, m, vpp=vpp, overlap=overlap, **kw)
    tl = r.timeline
    assert r.makespan_s >= r.busy_s.max() - 1e-12 and r.bubble_s >= -1e-12
    comp = tl.stream == 0
    n_f = ((tl.kind == KINDS.index("F")) & comp).sum()
    assert n_f == pp * vpp * m if kind != "dualpipe" else n_f == pp * m
    busy = tl.stream_busy_s(pp)
    np.testing.assert_allclose(busy[:, 0], r.compute_s, rtol=1e-12)
    for s in range(pp):  # one stream never runs two things at once
        for k in range(3):
            sel = (tl.stage == s) & (tl.stream == k)
            st, en = tl.start_s[sel], tl.end_s[sel]
            o = np.argsort(st, kind="stable")
            assert (st[o][1:] >= en[o][:-1] - 1e-9).all()
    # data dependencies: a stage's forward of a micro-batch starts after the previous stage's ends, plus the send
    if kind == "1f1b":
        fwd = tl.kind == 0
        op = fwd & (tl.stream != STREAMS.index("p2p"))
        endf = {}
        for s, mb, t in zip(tl.stage[op], tl.micro[op], tl.end_s[op]):
            endf[(s, mb)] = max(endf.get((s, mb), 0.0), t)
        for s, mb, t in zip(tl.stage[fwd & comp], tl.micro[fwd & comp], tl.start_s[fwd & comp]):
            if s > 0:
                assert t >= endf[(s - 1, mb)] + kw["p2p_s"][s - 1] - 1e-9


def test_a2a_pairs_hide_comm_under_the_other_micro_batch():
    # without PP: F0, then m - 1 pairs (F i+1 & B i), then the last B (Megatron's combined 1F1B)
    f, b, hf, hb, m = 1.0, 2.0, 0.8, 1.1, 6
    r = simulate_pipeline("1f1b", 1, m, forward_s=f, backward_s=b, forward_comm_s=hf, backward_comm_s=hb,
                          overlap="a2a")
    assert r.makespan_s == pytest.approx((f + hf) + (m - 1) * max(f + b, hf + hb) + (b + hb))
    none = simulate_pipeline("1f1b", 1, m, forward_s=f, backward_s=b, forward_comm_s=hf, backward_comm_s=hb)
    assert none.makespan_s == pytest.approx(m * (f + b + hf + hb))
    # comm-bound pairs take the comm time
    r2 = simulate_pipeline("1f1b", 1, m, forward_s=f, backward_s=b, forward_comm_s=2.5, backward_comm_s=2.0,
                           overlap="a2a")
    assert r2.makespan_s == pytest.approx((f + 2.5) + (m - 1) * 4.5 + (b + 2.0))


def test_serialised_comm_is_compute_for_the_schedule():
    a = simulate_pipeline("1f1b", 4, 8, forward_s=1.0, backward_s=2.0, forward_comm_s=0.5, backward_exposed_s=0.25)
    b = simulate_pipeline("1f1b", 4, 8, forward_s=1.5, backward_s=2.25)
    assert a.makespan_s == pytest.approx(b.makespan_s)
    assert a.compute_s == pytest.approx(8 * 3.0) and a.busy_s == pytest.approx(b.busy_s)


def test_bad_inputs_are_one_line_errors():
    with pytest.raises(SpecError, match="multiple of pp"):
        simulate_pipeline("interleaved", 4, 6, vpp=2, forward_s=1, backward_s=1)
    with pytest.raises(SpecError, match="even pp"):
        simulate_pipeline("dualpipe", 3, 12, forward_s=1, backward_s=1)
    with pytest.raises(SpecError, match="2 pp"):
        simulate_pipeline("dualpipe", 4, 6, forward_s=1, backward_s=1)
    with pytest.raises(SpecError, match="interleaved"):
        simulate_pipeline("1f1b", 4, 8, forward_s=1, backward_s=1, overlap="a2a")
    with pytest.raises(SpecError, match="forward_s"):
        simulate_pipeline("1f1b", 4, 8, forward_s=[1, 2], backward_s=1)
    with pytest.raises(SpecError, match="schedule"):
        simulate_pipeline("gpipe", 4, 8, forward_s=1, backward_s=1)
    with pytest.raises(SpecError, match="vpp"):
        simulate_pipeline("1f1b", 4, 8, vpp=2, forward_s=1, backward_s=1)
    with pytest.raises(SpecError, match="limit"):
        simulate_pipeline("interleaved", 64, 64_000, vpp=2, forward_s=1, backward_s=1)


@pytest.mark.parametrize("kind,vpp,overlap", [("interleaved", 2, "a2a"), ("dualpipe", 1, "a2a"), ("1f1b", 1, "none")])
def test_remembered_order_gives_the_event_loop_times(kind, vpp, overlap):
    import workloads.pipeline as pl
    rng = np.random.default_rng(3)
    pp, m = 4, 8
    costs = [dict(forward_s=rng.uniform(0.5, 2, (pp, vpp)), backward_s=rng.uniform(0.5, 3, (pp, vpp)),
                  weight_s=rng.uniform(0, 1, (pp, vpp)), forward_comm_s=rng.uniform(0, 2, (pp, vpp)),
                  backward_comm_s=rng.uniform(0, 2, (pp, vpp)), p2p_s=rng.uniform(0, 0.3, pp)) for _ in range(2)]
    pl._STRUCTURES.clear()
    simulate_pipeline(kind, pp, m, vpp=vpp, overlap=overlap, **costs[0])   # learns the order
    remembered = simulate_pipeline(kind, pp, m, vpp=vpp, overlap=overlap, **costs[1])
    pl._STRUCTURES.clear()
    fresh = simulate_pipeline(kind, pp, m, vpp=vpp, overlap=overlap, **costs[1])
    assert remembered.makespan_s == pytest.approx(fresh.makespan_s, rel=1e-12)
    np.testing.assert_allclose(remembered.timeline.start_s, fresh.timeline.start_s, rtol=1e-12, atol=1e-12)
