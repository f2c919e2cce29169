"""Step-time estimator: consistency of the outputs, sensitivity by construction, CLI, trace, validation."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

from cli.app import cli
from topologies.errors import SpecError
from workloads.flops import flops_per_token
from workloads.layout import Layout
from workloads.models import get_model
from workloads.step import estimate_step, parse_overlap
from workloads.training_validate import TOLERANCE, validate_training

QWEN = get_model("qwen3-30b-a3b")


def _qwen(gpus=16, gbs=64, **kw):
    """Qwen3-30B-A3B on H100 nodes: EP8 inside a node, DP across nodes (small and fast)."""
    opts = {k: kw.pop(k) for k in list(kw) if k in ("sets", "placement", "fail", "degrade", "overlap", "report")}
    lay = Layout(gpus=gpus, ep=8, global_batch=gbs, micro_batch=1, seq_len=2048, precision="fp8", **kw)
    return estimate_step(QWEN, lay, "hgx-h100", **opts)


@pytest.fixture(scope="module")
def base():
    return _qwen()


def test_outputs_are_consistent(base):
    lay = base.layout
    assert sum(base.breakdown_s.values()) == pytest.approx(base.step_time_s, rel=1e-9)
    assert base.tokens_per_s_per_gpu * base.step_time_s * lay.gpus == pytest.approx(lay.tokens_per_step)
    fpt = flops_per_token(QWEN, lay.seq_len, convention="megatron")
    assert base.tflops_per_gpu == pytest.approx(fpt * base.tokens_per_s_per_gpu / 1e12)
    assert base.mfu_bf16 == pytest.approx(base.tflops_per_gpu * 1e12 / 989e12)
    assert base.mfu_fp8 == pytest.approx(base.tflops_per_gpu * 1e12 / 1979e12)
    d = base.as_dict()
    for key in ("step_time_s", "tokens_per_s_per_gpu", "tflops_per_gpu", "mfu_bf16", "mfu_fp8", "breakdown",
                "memory_per_gpu_GiB", "placement"):
        assert key in d
    assert base.placement["ep"]["domains_spanned"] == 1 and base.placement["dp"]["domains_spanned"] == 2


def test_twice_the_scale_out_bandwidth_never_lengthens_a_step():
    # Spectrum-X (800G ports): the ConnectX-7 runs its ports at 400G, the ConnectX-8 at 800G
    slow = _qwen(sets={"scaleout": "spectrum-x", "nic": "ConnectX-7"}, placement="spread")
    fast = _qwen(sets={"scaleout": "spectrum-x", "nic": "ConnectX-8"}, placement="spread")
    assert fast.step_time_s <= slow.step_time_s
    assert fast.comm_s["ep_dispatch"] < slow.comm_s["ep_dispatch"]


def test_ep_across_domains_lengthens_the_step(base):
    spread = _qwen(placement="spread")
    assert spread.placement["ep"]["domains_spanned"] == 2
    assert spread.comm_s["ep_dispatch"] > base.comm_s["ep_dispatch"]
    assert spread.step_time_s > base.step_time_s


def test_ep_moved_out_of_an_nvl72_rack_lengthens_the_step():
    # 'spread' also moves the expert-DP ring from the network onto NVLink; micro-batches of 2 x 4096 keep
    # that traffic hidden under the backward in both placements, so the EP move is what changes
    lay = Layout(gpus=16, ep=8, global_batch=64, micro_batch=2, seq_len=4096, precision="mxfp8")
    inside, across = (estimate_step(QWEN, lay, "gb300-nvl72", gpus_per_domain=8, placement=p)
                      for p in ("megatron", "spread"))
    assert inside.placement["ep"]["domains_spanned"] == 1 and across.placement["ep"]["domains_spanned"] == 2
    assert across.breakdown_s["ep_exposed"] > inside.breakdown_s["ep_exposed"]
    assert across.step_time_s > inside.step_time_s


def test_bigger_global_batch_shrinks_the_bubble():
    spec = get_model("llama3-8b")
    small, big = (estimate_step(spec, Layout(gpus=8, pp=4, global_batch=g, seq_len=2048, precision="bf16",
                                             recompute="full"), "hgx-h100") for g in (8, 64))
    assert big.pipeline["bubble_fraction"] < small.pipeline["bubble_fraction"]
    # 1F1B: bubble (pp - 1) / (m + pp - 1) of the pipeline for equal stages (independent closed form)
    m = small.layout.microbatches
    assert small.breakdown_s["bubble"] / small.pipeline["makespan_s"] == pytest.approx(3 / (m + 3), rel=0.25)


@pytest.mark.parametrize("fail,degrade", [(("leaf 0 spine 0",), ()), ((), ("spine 0=25%",)), ((), ("gpu 3 nic=50%",))])
def test_failed_or_degraded_links_never_shorten_a_step(base, fail, degrade):
    worse = _qwen(fail=fail, degrade=degrade)
    assert worse.step_time_s >= base.step_time_s * (1 - 1e-9)


def test_overlap_options():
    assert parse_overlap("none").names() == []
    with pytest.raises(SpecError, match="--overlap: bogus"):
        parse_overlap("bogus")
    hidden, exposed = _qwen(overlap="auto"), _qwen(overlap="none")
    assert exposed.breakdown_s["ep_exposed"] > hidden.breakdown_s["ep_exposed"]
    assert exposed.step_time_s > hidden.step_time_s


def test_refuses_a_layout_that_does_not_fit():
    with pytest.raises(SpecError, match="memory: .* exceeds"):
        estimate_step(get_model("llama3-70b"), Layout(gpus=8, global_batch=8, seq_len=8192), "hgx-h100")


def test_cli_json_report_and_trace(tmp_path):
    trace = tmp_path / "step.json"
    args = ["step", "--model", "qwen3-30b-a3b", "--system", "hgx-h100", "--gpus", "16", "--ep", "8",
            "--global-batch", "64", "--micro-batch", "1", "--seq-len", "2048", "--precision", "fp8"]
    r = CliRunner().invoke(cli, args + ["--json", "--trace", str(trace)])
    assert r.exit_code == 0, r.output
    d = json.loads(r.stdout)
    assert d["placement"]["ep"]["size"] == 8 and set(d["breakdown"]) >= {"compute", "ep_exposed", "bubble"}
    t = json.loads(trace.read_text())
    xs = [e for e in t["traceEvents"] if e["ph"] == "X"]
    end_us = max(e["ts"] + e["dur"] for e in xs)
    assert end_us == pytest.approx(d["step_time_s"] * 1e6, rel=1e-6)
    crit = d["pipeline"]["critical_rank"]
    compute_us = sum(e["dur"] for e in xs if e["pid"] == crit and e["tid"] == 0)   # the compute stream
    assert compute_us == pytest.approx((d["breakdown"]["compute"] + d["breakdown"]["framework"]) * 1e6, rel=1e-6)
    r = CliRunner().invoke(cli, args + ["--report"])
    assert r.exit_code == 0 and "where the step goes" in r.output and "hottest links" in r.output
    r = CliRunner().invoke(cli, ["step", "--model", "llama3-8b", "--system", "hgx-h100", "--gpus", "12", "--tp", "8",
                                 "--global-batch", "8", "--micro-batch", "1", "--seq-len", "1024",
                                 "--precision", "bf16"])
    assert r.exit_code == 2 and "--gpus 12: not divisible by tp*cp*pp" in r.output and len(r.output.strip().splitlines()) == 1


def test_reference_scenario_within_ten_percent():
    rep = validate_training(ids=["dsv3-gb300-256"])
    row = next(r for r in rep.rows if r.quantity == "TFLOPs/GPU")
    assert row.split == "heldout" and abs(row.rel_error) <= TOLERANCE["reference"], row


def test_system_spec_file(repo):
    spec_file = repo / "docs" / "examples" / "gb300-4racks-failed-spine.toml"
    lay = Layout(gpus=128, ep=8, global_batch=128, micro_batch=1, seq_len=2048, precision="mxfp8")
    res = estimate_step(QWEN, lay, str(spec_file))
    assert res.gpu == "GB300" and res.placement["gpus_per_domain"] == 72 and res.fabric == "gb300-4racks-failed-spine"
    with pytest.raises(SpecError, match="NVLink domains of a catalog GPU"):
        estimate_step(QWEN, lay, str(repo / "docs" / "examples" / "fat-tree-2to1.toml"))


def test_cli_option_types_and_exports():
    import workloads
    from workloads.layout import SCHEDULES

    assert {"estimate_step", "Layout", "StepResult", "validate_training"} <= set(workloads.__all__)
    assert workloads.estimate_step is estimate_step and workloads.Layout is Layout
    base = ["step", "--model", "llama3-8b", "--system", "hgx-h100", "--global-batch", "8", "--micro-batch", "1",
            "--seq-len", "1024", "--precision", "bf16"]
    r = CliRunner().invoke(cli, base + ["--gpus", "٨"])          # a non-ASCII digit is not an integer
    assert r.exit_code == 2 and "--gpus" in r.output
    r = CliRunner().invoke(cli, base + ["--gpus", "8", "--schedule", "zb"])
    assert r.exit_code == 2 and all(s in r.output for s in SCHEDULES)


def test_ep_and_dp_traffic_contend_when_they_overlap():
    # EP16 crosses HGX nodes: its all-to-all shares the NICs with the DP reduce-scatter under the backward
    lay = Layout(gpus=32, ep=16, global_batch=64, micro_batch=1, seq_len=4096, precision="fp8")
    res = estimate_step(QWEN, lay, "hgx-h100", overlap="dp-grad,dp-param,tp,pp")     # EP not hidden
    c = res.comm_s
    assert c["ep_dispatch_dp"] > c["ep_dispatch"] and c["edp_rs_ep"] >= c["edp_rs"]
    assert res.tail_s[0] > 0.0 and res.breakdown_s["ep_exposed"] >= res.tail_s[0]
    alone = estimate_step(QWEN, lay, "hgx-h100", overlap="tp,pp")     # DP after the pipeline: no contention
    assert alone.tail_s[0] == 0.0


def test_spotcheck_rows_are_reported_apart():
    rep = validate_training(ids=["mb2511-gb200-llama3-8b-fp8"])
    row = next(r for r in rep.rows if r.quantity == "TFLOPs/GPU")
    assert row.split == "spotcheck" and row.passed is None and row.rel_error is not None
    assert set(rep.summary()) == {"fit", "heldout", "spotcheck"} and rep.summary()["spotcheck"]["points"] == 1


def test_hybridep_fuses_the_permute():
    from workloads import compute as cm
    from workloads.ops import Split, layer_ops
    from workloads.step import layer_times

    lay = Layout(gpus=64, ep=8, global_batch=64, micro_batch=1, seq_len=4096, precision="mxfp8")
    fused = layer_times(QWEN, lay, "GB300", "moe")
    apart = layer_times(QWEN, lay, "GB300", "moe", fused_permute=False)
    ops = layer_ops(QWEN, "moe", micro_batch=1, seq_len=4096, split=Split(ep=8))
    permute = sum(float(cm.memory_time_s("GB300", o.bytes_moved))
                  for o in ops if o.name.startswith("permute:"))
    assert apart.total_s - fused.total_s == pytest.approx(permute, rel=1e-9) and permute > 0


def test_reuse_store_shares_the_cluster_and_gives_identical_results():
    """Two steps on the same cluster through one ``reuse`` store: the second reuses the first's router
    (no new build) and both results equal those of calls without the store."""
    lay_a = Layout(gpus=16, ep=8, global_batch=64, micro_batch=1, seq_len=2048, precision="fp8")
    lay_b = Layout(gpus=16, ep=8, global_batch=32, micro_batch=1, seq_len=2048, precision="fp8")
    store: dict = {}
    a = estimate_step(QWEN, lay_a, "hgx-h100", reuse=store)
    routers = [v["router"] for v in store.values()]
    b = estimate_step(QWEN, lay_b, "hgx-h100", reuse=store)
    assert [v["router"] for v in store.values()] == routers and len(routers) == 1
    assert a.as_dict() == estimate_step(QWEN, lay_a, "hgx-h100").as_dict()
    assert b.as_dict() == estimate_step(QWEN, lay_b, "hgx-h100").as_dict()
