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
from dataclasses import dataclass, field

import numpy as np

from topologies.errors import SpecError, brief
from workloads.pipeline import KINDS, STREAMS, Timeline

__all__ = ["Span", "chrome_trace", "trace_bytes", "check_trace_path", "write_trace"]


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
    return float(np.round(float(t) * 1e6, 3))


def _layout(timeline: Timeline, spans, stage_names, title: str):
    """(streams, stages, metadata events) shared by the object and the text forms."""
    streams = list(STREAMS)
    for sp in spans:
        if sp.stream not in streams:
            streams.append(sp.stream)
    stages = sorted(set(timeline.stage.tolist()) | {int(sp.stage) for sp in spans})
    meta: list[dict] = [] if stages else [{"name": "process_name", "ph": "M", "pid": 0, "tid": 0,
                                            "args": {"name": title}}]
    used = {st: set() for st in stages}
    for st, k in set(zip(timeline.stage.tolist(), timeline.stream.tolist())):
        used[st].add(k)
    for sp in spans:
        used[int(sp.stage)].add(streams.index(sp.stream))
    for st in stages:
        name = stage_names[st] if stage_names is not None else f"stage {st}"
        meta.append({"name": "process_name", "ph": "M", "pid": st, "tid": 0, "args": {"name": name}})
        meta.append({"name": "process_sort_index", "ph": "M", "pid": st, "tid": 0, "args": {"sort_index": st}})
        for k in sorted(used[st]):
            meta.append({"name": "thread_name", "ph": "M", "pid": st, "tid": k, "args": {"name": streams[k]}})
            meta.append({"name": "thread_sort_index", "ph": "M", "pid": st, "tid": k, "args": {"sort_index": k}})
    return streams, meta


def _rows(timeline: Timeline):
    return zip(timeline.stage.tolist(), timeline.stream.tolist(), timeline.chunk.tolist(), timeline.micro.tolist(),
               timeline.kind.tolist(), timeline.start_s.tolist(), timeline.end_s.tolist())


def _label(k: int, kd: int) -> str:
    return KINDS[kd] if k == 0 else f"{KINDS[kd]} {STREAMS[k]}"


def chrome_trace(timeline: Timeline, *, spans=(), stage_names=None, title: str = "pipeline") -> dict:
    """The trace-event object of ``timeline`` plus ``spans``.

    ``stage_names[s]`` names process ``s`` (default ``"stage s"``); streams keep
    the order of :data:`~workloads.pipeline.STREAMS`, extra streams follow in
    order of first appearance.
    """
    spans = list(spans)
    streams, events = _layout(timeline, spans, stage_names, title)
    for st, k, c, m, kd, t0, t1 in _rows(timeline):
        events.append({"name": f"{_label(k, kd)} mb{m} c{c}", "cat": STREAMS[k], "ph": "X", "pid": st, "tid": k,
                       "ts": _us(t0), "dur": _us(t1 - t0),
                       "args": {"kind": KINDS[kd], "micro_batch": m, "chunk": c}})
    for sp in spans:
        events.append({"name": sp.name, "cat": sp.stream, "ph": "X", "pid": int(sp.stage),
                       "tid": streams.index(sp.stream), "ts": _us(sp.start_s), "dur": _us(sp.end_s - sp.start_s),
                       "args": dict(sp.args)})
    return {"traceEvents": events, "displayTimeUnit": "ms"}


def _dump(obj) -> str:
    return json.dumps(obj, separators=(",", ":"), sort_keys=True, allow_nan=False)


def _timeline_text(timeline: Timeline, spans, stage_names, title: str) -> str:
    """The JSON text :func:`trace_bytes` gives for :func:`chrome_trace`'s object, without building it."""
    spans = list(spans)
    streams, meta = _layout(timeline, spans, stage_names, title)
    parts = [_dump(e) for e in meta]
    ts = np.round(timeline.start_s * 1e6, 3).tolist()     # the same numbers as _us, elementwise
    du = np.round((timeline.end_s - timeline.start_s) * 1e6, 3).tolist()
    head = {(k, kd): (f'"kind":"{KINDS[kd]}","micro_batch":', f'}},"cat":"{STREAMS[k]}","dur":',
                      f',"name":"{_label(k, kd)} mb') for k in range(len(STREAMS)) for kd in range(len(KINDS))}
    for st, k, c, m, kd, t0, d in zip(timeline.stage.tolist(), timeline.stream.tolist(), timeline.chunk.tolist(),
                                      timeline.micro.tolist(), timeline.kind.tolist(), ts, du):
        a, b, n = head[k, kd]
        parts.append(f'{{"args":{{"chunk":{c},{a}{m}{b}{d!r}{n}{m} c{c}","ph":"X","pid":{st},"tid":{k},"ts":{t0!r}}}')
    for sp in spans:
        parts.append(_dump({"name": sp.name, "cat": sp.stream, "ph": "X", "pid": int(sp.stage),
                            "tid": streams.index(sp.stream), "ts": _us(sp.start_s),
                            "dur": _us(sp.end_s - sp.start_s), "args": dict(sp.args)}))
    return '{"displayTimeUnit":"ms","traceEvents":[' + ",".join(parts) + "]}"


def trace_bytes(trace, *, spans=(), stage_names=None, title: str = "pipeline") -> bytes:
    """Deterministic JSON bytes of a trace object, or straight from a :class:`Timeline` (same bytes, faster)."""
    if isinstance(trace, Timeline):
        text = _timeline_text(trace, spans, stage_names, title)
    else:
        text = _dump(trace)
    return (text + "\n").encode()


def check_trace_path(path) -> None:
    """Check ``--trace PATH`` before any work: a name ending in ``.json`` (Perfetto and chrome://tracing
    read JSON; any other name, ``.txt`` or none, would be mistaken for another kind of file) that
    :func:`topologies.files.write_atomic` may write.

    Examples
    --------
    >>> try:
    ...     check_trace_path("step.txt")
    ... except SpecError as e:
    ...     print(e)
    trace 'step.txt': a Chrome trace is JSON; name the file .json
    """
    from topologies.files import check_target

    if isinstance(path, str) and not path.strip():
        raise SpecError("--trace: empty file name")
    if not str(path).lower().endswith(".json"):
        raise SpecError(f"trace {brief(str(path))}: a Chrome trace is JSON; name the file .json")
    check_target(path, what="trace")


def write_trace(path, trace, **kwargs) -> None:
    """Write ``trace`` (an object or a :class:`Timeline`, see :func:`trace_bytes`) to ``path`` atomically.

    Through :func:`topologies.files.write_atomic`: only a new or regular file is replaced (never a device
    such as ``/dev/null``, a FIFO or a directory; a symbolic link is written through), the bytes go to a
    temporary file in the same folder that is then renamed, and a new file gets the umask's permissions.
    """
    from topologies.files import write_atomic

    check_trace_path(path)
    data = trace_bytes(trace, **kwargs)
    write_atomic(path, data, what="trace")
