"""Timelines as Chrome trace-event JSON (opens in Perfetto and chrome://tracing).

The format is the Trace Event Format's JSON object form: ``{"traceEvents": [...],
"displayTimeUnit": "ms"}`` with ``"X"`` (complete) events carrying ``ts`` and
``dur`` in microseconds, and ``"M"`` metadata events naming processes and
threads. Here a process (``pid``) is a pipeline stage and a thread (``tid``) a
stream: compute, hideable communication, exposed communication, p2p sends, then
any streams the caller adds with :class:`Span` s. Output bytes are deterministic
(fixed key order, times rounded to nanoseconds) and written atomically.

Examples
--------
>>> from workloads.pipeline import simulate_pipeline
>>> r = simulate_pipeline("1f1b", pp=2, n_micro=2, forward_s=1e-3, backward_s=2e-3)
>>> t = chrome_trace(r.timeline)
>>> sorted(t), t["traceEvents"][0]["ph"], sum(e["ph"] == "X" for e in t["traceEvents"])
(['displayTimeUnit', 'traceEvents'], 'M', 8)
"""

from __future__ import annotations

import json
import os
import tempfile
from dataclasses import dataclass, field

from topologies.errors import SpecError
from workloads.pipeline import KINDS, STREAMS, Timeline

__all__ = ["Span", "chrome_trace", "trace_bytes", "write_trace"]


@dataclass(frozen=True)
class Span:
    """One extra interval on a stage's stream (e.g. the DP reduce-scatter, the optimizer step)."""

    stage: int
    stream: str
    name: str
    start_s: float
    end_s: float
    args: dict = field(default_factory=dict, compare=False)

    def __post_init__(self) -> None:
        if not (self.end_s >= self.start_s >= 0):
            raise SpecError(f"trace span {self.name!r}: needs 0 <= start_s <= end_s, got {self.start_s}, {self.end_s}")


def _us(t: float) -> float:
    return round(float(t) * 1e6, 3)


def chrome_trace(timeline: Timeline, *, spans=(), stage_names=None, title: str = "pipeline") -> dict:
    """The trace-event object of ``timeline`` plus ``spans``.

    ``stage_names[s]`` names process ``s`` (default ``"stage s"``); streams keep
    the order of :data:`~workloads.pipeline.STREAMS`, extra streams follow in
    order of first appearance.
    """
    spans = list(spans)
    streams = list(STREAMS)
    for s in spans:
        if s.stream not in streams:
            streams.append(s.stream)
    stages = sorted(set(timeline.stage.tolist()) | {int(s.stage) for s in spans})
    names = {st: (stage_names[st] if stage_names is not None else f"stage {st}") for st in stages}
    events: list[dict] = [{"name": "process_name", "ph": "M", "pid": 0, "tid": 0, "args": {"name": title}}] \
        if not stages else []
    used = {st: set() for st in stages}
    for st, k in zip(timeline.stage.tolist(), timeline.stream.tolist()):
        used[st].add(k)
    for s in spans:
        used[int(s.stage)].add(streams.index(s.stream))
    for st in stages:
        events.append({"name": "process_name", "ph": "M", "pid": st, "tid": 0, "args": {"name": names[st]}})
        events.append({"name": "process_sort_index", "ph": "M", "pid": st, "tid": 0, "args": {"sort_index": st}})
        for k in sorted(used[st]):
            events.append({"name": "thread_name", "ph": "M", "pid": st, "tid": k, "args": {"name": streams[k]}})
            events.append({"name": "thread_sort_index", "ph": "M", "pid": st, "tid": k, "args": {"sort_index": k}})
    rows = zip(timeline.stage.tolist(), timeline.stream.tolist(), timeline.chunk.tolist(), timeline.micro.tolist(),
               timeline.kind.tolist(), timeline.start_s.tolist(), timeline.end_s.tolist())
    for st, k, c, m, kd, t0, t1 in rows:
        kind = KINDS[kd]
        label = kind if k == 0 else f"{kind} {STREAMS[k]}"
        events.append({"name": f"{label} mb{m} c{c}", "cat": STREAMS[k], "ph": "X", "pid": st, "tid": k,
                       "ts": _us(t0), "dur": _us(t1 - t0),
                       "args": {"kind": kind, "micro_batch": m, "chunk": c}})
    for s in spans:
        k = streams.index(s.stream)
        events.append({"name": s.name, "cat": s.stream, "ph": "X", "pid": int(s.stage), "tid": k,
                       "ts": _us(s.start_s), "dur": _us(s.end_s - s.start_s), "args": dict(s.args)})
    return {"traceEvents": events, "displayTimeUnit": "ms"}


def trace_bytes(trace: dict) -> bytes:
    """Deterministic JSON bytes of a trace object."""
    return (json.dumps(trace, separators=(",", ":"), sort_keys=True, allow_nan=False) + "\n").encode()


def write_trace(path, trace: dict) -> None:
    """Write ``trace`` to ``path`` atomically (a temporary file in the same folder, then renamed)."""
    data = trace_bytes(trace)
    folder = os.path.dirname(os.path.abspath(path))
    if not os.path.isdir(folder):
        raise SpecError(f"trace: folder {folder!r} does not exist")
    fd, tmp = tempfile.mkstemp(prefix=".trace-", suffix=".json", dir=folder)
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise
