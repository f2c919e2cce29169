"""workloads.trace: Chrome trace-event JSON of a pipeline timeline."""

import json

import numpy as np
import pytest

from topologies.errors import SpecError
from workloads.pipeline import STREAMS, simulate_pipeline
from workloads.trace import Span, chrome_trace, trace_bytes, write_trace


@pytest.fixture(scope="module")
def result():
    return simulate_pipeline("interleaved", 4, 8, vpp=2, forward_s=1e-3, backward_s=2e-3, weight_s=5e-4,
                             forward_comm_s=3e-4, backward_comm_s=4e-4, p2p_s=1e-4, overlap="a2a")


def test_trace_is_valid_and_consistent_with_the_timeline(result, tmp_path):
    spans = [Span(s, "dp-comm", "reduce-scatter", result.makespan_s, result.makespan_s + 2e-3) for s in range(4)]
    trace = chrome_trace(result.timeline, spans=spans)
    path = tmp_path / "step.json"
    write_trace(path, trace)
    data = json.loads(path.read_text())
    assert data["displayTimeUnit"] == "ms"
    ev = data["traceEvents"]
    xs = [e for e in ev if e["ph"] == "X"]
    ms = [e for e in ev if e["ph"] == "M"]
    assert len(xs) == len(result.timeline) + 4
    for e in xs:
        assert {"name", "ph", "pid", "tid", "ts", "dur", "cat"} <= set(e) and e["dur"] >= 0 and e["ts"] >= 0
    names = {(e["pid"], e["tid"]): e["args"]["name"] for e in ms if e["name"] == "thread_name"}
    assert names[(0, 0)] == "compute" and names[(0, len(STREAMS))] == "dp-comm"
    assert {e["pid"] for e in ms if e["name"] == "process_name"} == {0, 1, 2, 3}
    # per stage and stream, the durations add up to the timeline's busy time (ns rounding)
    busy = result.timeline.stream_busy_s(4)
    got = np.zeros_like(busy)
    for e in xs:
        if e["tid"] < len(STREAMS):
            got[e["pid"], e["tid"]] += e["dur"] * 1e-6
    np.testing.assert_allclose(got, busy, atol=1e-9 * len(xs))
    np.testing.assert_allclose(got[:, 0], result.compute_s, atol=1e-9 * len(xs))
    assert max(e["ts"] + e["dur"] for e in xs if e["tid"] < len(STREAMS)) == pytest.approx(result.makespan_s * 1e6)


def test_trace_bytes_are_deterministic(result, tmp_path):
    a = trace_bytes(chrome_trace(result.timeline))
    b = trace_bytes(chrome_trace(simulate_pipeline("interleaved", 4, 8, vpp=2, forward_s=1e-3, backward_s=2e-3,
                                                   weight_s=5e-4, forward_comm_s=3e-4, backward_comm_s=4e-4,
                                                   p2p_s=1e-4, overlap="a2a").timeline))
    assert a == b
    write_trace(tmp_path / "t.json", chrome_trace(result.timeline))
    assert (tmp_path / "t.json").read_bytes() == a


def test_bad_spans_and_paths():
    with pytest.raises(SpecError, match="span"):
        Span(0, "x", "bad", 2.0, 1.0)
    r = simulate_pipeline("1f1b", 2, 2, forward_s=1.0, backward_s=1.0)
    with pytest.raises(SpecError, match="does not exist"):
        write_trace("/nonexistent-dir/x.json", chrome_trace(r.timeline))


def test_fast_text_equals_the_object_dump(result):
    spans = [Span(1, "optimizer", 'step "1"', 0.0, 1e-3, {"why": "x"})]
    assert trace_bytes(result.timeline, spans=spans) == trace_bytes(chrome_trace(result.timeline, spans=spans))
    json.loads(trace_bytes(result.timeline, spans=spans))
