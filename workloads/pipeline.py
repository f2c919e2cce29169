"""Pipeline-parallel schedules as the real order of operations: 1F1B, interleaved 1F1B, DualPipe.

Every pipeline rank (stage) runs a fixed sequence of operations, the one its
framework issues:

* ``"1f1b"``: Megatron-LM's non-interleaved schedule
  (``forward_backward_pipelining_without_interleaving``): stage ``s`` runs
  ``min(pp - s - 1, n_micro)`` warm-up forwards, then one forward and one
  backward per step, then the remaining backwards;
* ``"interleaved"``: Megatron-LM's interleaved schedule
  (``forward_backward_pipelining_with_interleaving``, NVIDIA/Megatron-LM
  ``megatron/core/pipeline_parallel/schedules.py``): ``vpp`` model chunks per
  stage, virtual stage ``c * pp + s``; ``(pp - s - 1) * 2 + (vpp - 1) * pp``
  warm-up forwards (all forwards first when ``n_micro == pp``); the k-th forward
  runs chunk ``(k mod pp*vpp) // pp`` (backwards in reverse chunk order) on
  micro-batch ``(k // (pp*vpp)) * pp + k mod pp``. Megatron requires
  ``n_micro % pp == 0`` for this order (the same file raises otherwise);
* ``"dualpipe"``: DeepSeek-V3's bidirectional schedule (DeepSeek-V3 technical
  report section 3.2.1; deepseek-ai/DualPipe ``dualpipe/dualpipe.py``): micro-batches
  enter from both ends, rank ``r`` holds stage ``r`` of the forward direction and
  stage ``pp - 1 - r`` of the reverse one (parameters twice), and runs the eight
  steps of ``DualPipe.step``: ``nF0``, ``nF0F1``, ``nB1W1F1`` (zero bubble),
  ``nF0B1F1B0`` (the main overlapped step), ``nB1F1B0``, ``nB1B0``, ``nWB0``,
  ``nW``. Needs ``pp`` even and ``n_micro`` even and ``>= 2 pp``.

Costs are given per (stage, chunk) and micro-batch: forward compute ``F``,
backward input-gradient ``B`` and weight-gradient ``W`` compute (``B + W`` is a
full backward; only DualPipe's zero-bubble steps run ``W`` apart), hideable
communication (EP all-to-all dispatch and combine) per forward and backward,
exposed communication (TP and the like, never hidden) and the point-to-point
send between neighbouring stages.

Overlap (``overlap=``): ``"none"`` runs a chunk's hideable communication after
its compute; ``"a2a"`` pairs the forward of one micro-batch with the backward
of another in one operation whose communication hides under the other's
compute: it lasts ``max(F + B + W, comm_F + comm_B) + exposed`` (DualPipe's
F&B chunk, Megatron's combined 1F1B / EP A2A overlap). Megatron pairs the
steady-state forward and backward (with PP it needs the interleaved schedule;
without PP it pairs forward ``i + 1`` with backward ``i``); DualPipe pairs
``F0&B1`` and ``F1&B0`` in its main steps. A pair whose backward needs its own
forward runs them in turn.

Timing is event-driven over the dependency graph: an operation starts when its
rank is free and its inputs have arrived (the producing operation's end plus
the p2p send time); sends are asynchronous (they overlap compute).

Examples
--------
>>> r = simulate_pipeline("1f1b", pp=4, n_micro=8, forward_s=1.0, backward_s=2.0)
>>> r.makespan_s, r.bubble_s, round(r.bubble_fraction, 4)
(33.0, 9.0, 0.2727)
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property

import numpy as np

from topologies.errors import SpecError
from workloads.pipeline_orders import _B, _PAIR, _W, _dualpipe_ops, _megatron_ops

__all__ = ["SCHEDULES", "OVERLAPS", "STREAMS", "KINDS", "Timeline", "PipelineResult", "simulate_pipeline"]

SCHEDULES = ("1f1b", "interleaved", "dualpipe")
OVERLAPS = ("none", "a2a")
#: timeline streams: compute, hideable communication (EP all-to-all), exposed communication, p2p sends
STREAMS = ("compute", "comm", "exposed", "p2p")
KINDS = ("F", "B", "W")

#: largest pp x vpp x n_micro simulated (~10 M operations, seconds and a few GB): beyond it, a one-line error
_MAX_TRIPLES = 4_000_000


@dataclass(frozen=True)
class Timeline:
    """Timeline events as a struct of arrays (one row per event).

    ``stage``: pipeline rank; ``stream``: index into :data:`STREAMS`;
    ``chunk``: model chunk (DualPipe: direction); ``micro``: micro-batch;
    ``kind``: index into :data:`KINDS`; ``start_s`` / ``end_s``.
    """

    stage: np.ndarray
    stream: np.ndarray
    chunk: np.ndarray
    micro: np.ndarray
    kind: np.ndarray
    start_s: np.ndarray
    end_s: np.ndarray

    def __len__(self) -> int:
        return len(self.start_s)

    def rows(self) -> list[tuple]:
        """Events as ``(stage, stream, chunk, micro, kind, start_s, end_s)`` tuples with names."""
        st = [STREAMS[i] for i in self.stream.tolist()]
        kd = [KINDS[i] for i in self.kind.tolist()]
        return list(zip(self.stage.tolist(), st, self.chunk.tolist(), self.micro.tolist(), kd,
                        self.start_s.tolist(), self.end_s.tolist()))

    def stream_busy_s(self, n_stages: int) -> np.ndarray:
        """float64[stages, streams]: summed event durations per stage and stream."""
        out = np.zeros((n_stages, len(STREAMS)))
        np.add.at(out, (self.stage, self.stream), self.end_s - self.start_s)
        return out


@dataclass(frozen=True)
class PipelineResult:
    """One step of a pipeline schedule.

    ``busy_s[s]``: time stage ``s`` is occupied (compute plus communication it
    waits for); ``compute_s[s]``: its compute alone; ``idle_s = makespan -
    busy``. ``bubble_s = makespan - max(busy)``: how much longer the step is than
    the busiest stage's work; ``bubble_fraction = bubble_s / makespan_s``.
    ``timeline`` (built on first use) holds every event.
    """

    schedule: str
    pp: int
    vpp: int
    n_micro: int
    overlap: str
    makespan_s: float
    busy_s: np.ndarray
    compute_s: np.ndarray
    idle_s: np.ndarray
    bubble_s: float
    bubble_fraction: float
    _events: object = field(default=None, repr=False, compare=False)

    @cached_property
    def timeline(self) -> Timeline:
        """Every event of the step (see :class:`Timeline`), built on first use."""
        return self._events()

    def as_dict(self) -> dict:
        return {"schedule": self.schedule, "pp": self.pp, "vpp": self.vpp, "n_micro": self.n_micro,
                "overlap": self.overlap, "makespan_s": self.makespan_s, "bubble_s": self.bubble_s,
                "bubble_fraction": self.bubble_fraction, "busy_s": self.busy_s.tolist(),
                "compute_s": self.compute_s.tolist(), "idle_s": self.idle_s.tolist()}


# --------------------------------------------------------------------------- inputs


def _int(name: str, v, lo: int) -> int:
    if isinstance(v, bool) or not isinstance(v, (int, np.integer)) or v < lo:
        raise SpecError(f"{name}: {v!r} must be an integer >= {lo}")
    return int(v)


def _costs(name: str, v, pp: int, vpp: int) -> np.ndarray:
    a = np.asarray(v, dtype=np.float64)
    if a.ndim == 1 and a.shape == (pp,):
        a = a[:, None]
    try:
        a = np.broadcast_to(a, (pp, vpp)).copy()
    except ValueError:
        raise SpecError(f"{name}: expected a number, {pp} values (one per stage) or {pp} x {vpp} "
                        f"(stage x chunk), got shape {np.shape(v)}") from None
    if not np.all(np.isfinite(a)) or (a < 0).any():
        raise SpecError(f"{name}: times must be finite and >= 0 seconds")
    return a


# --------------------------------------------------------------------------- simulation


def simulate_pipeline(schedule: str, pp: int, n_micro: int, *, vpp: int = 1, forward_s, backward_s,
                      weight_s=0.0, p2p_s=0.0, forward_comm_s=0.0, backward_comm_s=0.0, forward_exposed_s=0.0,
                      backward_exposed_s=0.0, overlap: str | None = None) -> PipelineResult:
    """Simulate one step of ``schedule`` (see the module docstring).

    Parameters
    ----------
    schedule : {"1f1b", "interleaved", "dualpipe"}
    pp, n_micro : int
        Pipeline stages and micro-batches per step (DualPipe: both directions together).
    vpp : int
        Model chunks per stage (``interleaved`` only; 1 otherwise).
    forward_s, backward_s, weight_s : float or array
        Per micro-batch compute of forward, backward input-gradient (B) and
        weight-gradient (W), per stage (``[pp]``) or per stage and chunk
        (``[pp, vpp]``). DualPipe: per model stage (rank ``r`` runs stage ``r``
        forward-direction and ``pp - 1 - r`` reverse-direction).
    p2p_s : float or array[pp]
        Send time of one activation (or gradient) between stage ``s`` and
        ``(s + 1) % pp``, either way.
    forward_comm_s, backward_comm_s : float or array
        Hideable communication per chunk (EP dispatch + combine).
    forward_exposed_s, backward_exposed_s : float or array
        Communication that is never hidden (e.g. TP all-reduce).
    overlap : {"none", "a2a"}, optional
        Default ``"a2a"`` for DualPipe, ``"none"`` otherwise.

    Returns
    -------
    PipelineResult
    """
    if schedule not in SCHEDULES:
        raise SpecError(f"schedule: {schedule!r} is not one of {', '.join(SCHEDULES)}")
    pp = _int("pp", pp, 1)
    vpp = _int("vpp", vpp, 1)
    m = _int("n_micro", n_micro, 1)
    overlap = overlap or ("a2a" if schedule == "dualpipe" else "none")
    if overlap not in OVERLAPS:
        raise SpecError(f"overlap: {overlap!r} is not one of {', '.join(OVERLAPS)}")
    if schedule != "interleaved" and vpp != 1:
        raise SpecError(f"vpp: {vpp} model chunks per stage need schedule='interleaved'")
    if schedule == "interleaved":
        if pp < 2:
            raise SpecError("pp: the interleaved schedule needs pp >= 2")
        if m % pp:
            raise SpecError(f"n_micro: {m} micro-batches must be a multiple of pp = {pp} for Megatron's "
                            "interleaved schedule")
    if schedule == "dualpipe" and (pp % 2 or m % 2 or m < 2 * pp):
        raise SpecError(f"dualpipe: needs an even pp and an even n_micro >= 2 pp; got pp = {pp}, n_micro = {m}")
    if schedule == "1f1b" and overlap == "a2a" and pp > 1:
        raise SpecError("overlap: 'a2a' with pp > 1 needs schedule='interleaved' (Megatron's combined 1F1B "
                        "requires virtual pipeline stages) or 'dualpipe'")
    if pp * vpp * m > _MAX_TRIPLES:
        raise SpecError(f"n_micro: pp x vpp x n_micro = {pp * vpp * m:,} (stage, chunk, micro-batch) triples exceed "
                        f"the simulator's limit of {_MAX_TRIPLES:,}")
    pair = overlap == "a2a"
    cost = {k: _costs(k, v, pp, vpp) for k, v in (
        ("forward_s", forward_s), ("backward_s", backward_s), ("weight_s", weight_s),
        ("forward_comm_s", forward_comm_s), ("backward_comm_s", backward_comm_s),
        ("forward_exposed_s", forward_exposed_s), ("backward_exposed_s", backward_exposed_s))}
    p2p = np.asarray(p2p_s, dtype=np.float64)
    if p2p.ndim == 0:
        p2p = np.full(pp, float(p2p))
    if p2p.shape != (pp,) or not np.all(np.isfinite(p2p)) or (p2p < 0).any():
        raise SpecError(f"p2p_s: expected a time >= 0 or {pp} times (one per stage boundary)")

    st = _structure(schedule, pp, vpp, m, pair)
    typ, rank, fv, bv, isw = st.typ, st.rank, st.fv, st.bv, st.isw
    v_cost = {k: c[st.cost_index] for k, c in cost.items()}
    g = lambda k, v: np.where(v >= 0, v_cost[k][np.maximum(v, 0)], 0.0)  # noqa: E731
    f, hf, ef = g("forward_s", fv), g("forward_comm_s", fv), g("forward_exposed_s", fv)
    b, w = g("backward_s", bv), g("weight_s", bv)
    hb, eb = g("backward_comm_s", bv), g("backward_exposed_s", bv)
    w_in = np.where((typ == _B) | (typ == _PAIR), w, 0.0)  # W fused into B
    b_in = np.where(isw, 0.0, b)
    hb_in, eb_in = np.where(isw, 0.0, hb), np.where(isw, 0.0, eb)
    w_alone = np.where(isw, w, 0.0)
    longest = np.maximum(f + b_in + w_in, hf + hb_in)
    dur = np.where(typ == _PAIR, longest + ef + eb_in, f + hf + ef + b_in + w_in + hb_in + eb_in + w_alone)
    p2p_x = np.append(p2p, 0.0)          # boundary index -1 (same rank) -> no send
    l1, l2 = p2p_x[st.b1], p2p_x[st.b2]
    if st.order is None:
        start, st.order = _run(rank, st.d1, l1, st.d2, l2, dur, pp, schedule)
    else:
        start = _run_in_order(st, l1, l2, dur)
    end = start + dur
    makespan = float(end.max(initial=0.0))
    busy = np.bincount(rank, weights=dur, minlength=pp)
    compute = np.bincount(rank, weights=f + b_in + w_in + w_alone, minlength=pp)
    parts = (f, hf, ef, b_in, w_in + w_alone, hb_in, eb_in, longest)
    events = lambda: _events(st, start, end, parts, p2p_x, pp)  # noqa: E731
    bubble = makespan - float(busy.max())
    return PipelineResult(schedule=schedule, pp=pp, vpp=vpp, n_micro=m, overlap=overlap, makespan_s=makespan,
                          busy_s=busy, compute_s=compute, idle_s=makespan - busy, bubble_s=bubble,
                          bubble_fraction=bubble / makespan if makespan > 0 else 0.0, _events=events)


def _boundary(ra, rb, pp: int):
    """Index of the stage boundary a send between ranks ``ra`` and ``rb`` crosses (-1: same rank)."""
    lo = np.where((ra + 1) % pp == rb, ra, rb)
    return np.where(ra == rb, -1, lo)


class _Structure:
    """Everything that depends on (schedule, pp, vpp, n_micro, paired) only: ops, dependencies, and (after the
    first run) a topological order of the op graph, so later calls with other costs take one pass."""

    def __init__(self, schedule: str, pp: int, vpp: int, m: int, pair: bool):
        if schedule == "dualpipe":
            V = 2 * pp
            s_of = np.arange(V) % pp
            d_of = np.arange(V) // pp
            self.v_rank = np.where(d_of == 0, s_of, pp - 1 - s_of)
            self.v_chunk = d_of
            self.cost_index = (s_of, np.zeros(V, np.int64))
            self.v_next = np.where(s_of < pp - 1, np.arange(V) + 1, -1)
            self.v_prev = np.where(s_of > 0, np.arange(V) - 1, -1)
            per_dir = m // 2
            ops = _dualpipe_ops(pp, m, pair)
        else:
            V = pp * vpp
            self.v_rank = np.arange(V) % pp
            self.v_chunk = np.arange(V) // pp
            self.cost_index = (self.v_rank, self.v_chunk)
            self.v_next = np.where(np.arange(V) < V - 1, np.arange(V) + 1, -1)
            self.v_prev = np.arange(V) - 1
            per_dir = m
            ops = _megatron_ops(schedule, pp, vpp, m, pair)
        self.typ, self.rank, self.fv, self.fm, self.bv, self.bm = ops
        typ, fv, fm, bv, bm = self.typ, self.fv, self.fm, self.bv, self.bm
        N = len(typ)
        self.hasf = hasf = fv >= 0
        self.isw = isw = typ == _W
        self.bo = bo = (bv >= 0) & ~isw
        # op of every F(v, m) and B(v, m) (W ops carry their B's (v, m) but are not that B)
        self.opF = opF = np.full((V, per_dir), -1, np.int64)
        self.opB = opB = np.full((V, per_dir), -1, np.int64)
        opF[fv[hasf], fm[hasf]] = np.flatnonzero(hasf)
        opB[bv[bo], bm[bo]] = np.flatnonzero(bo)
        if (opF < 0).any() or (opB < 0).any():  # pragma: no cover - the orders cover every (v, m)
            raise SpecError(f"{schedule}: internal order is incomplete")
        # F(v, m) <- F(prev v, m); B(v, m) <- B(next v, m), or F(v, m) at the last virtual stage; W <- its B
        self.d1 = np.full(N, -1, np.int64)
        self.b1 = np.full(N, -1, np.int64)
        pv = self.v_prev[np.maximum(fv, 0)]
        okf = hasf & (pv >= 0)
        self.d1[okf] = opF[pv[okf], fm[okf]]
        self.b1[okf] = _boundary(self.v_rank[pv[okf]], self.v_rank[fv[okf]], pp)
        self.d2 = np.full(N, -1, np.int64)
        self.b2 = np.full(N, -1, np.int64)
        nv = self.v_next[np.maximum(bv, 0)]
        okb = bo & (nv >= 0)
        self.d2[okb] = opB[nv[okb], bm[okb]]
        self.b2[okb] = _boundary(self.v_rank[nv[okb]], self.v_rank[bv[okb]], pp)
        last = bo & (nv < 0)
        self.d2[last] = opF[bv[last], bm[last]]
        self.d2[isw] = opB[bv[isw], bm[isw]]
        self.order = None
        self._lists = None


_STRUCTURES: dict = {}
_MAX_STRUCTURES = 8


def _structure(schedule: str, pp: int, vpp: int, m: int, pair: bool) -> _Structure:
    key = (schedule, pp, vpp, m, pair)
    st = _STRUCTURES.get(key)
    if st is None:
        if len(_STRUCTURES) >= _MAX_STRUCTURES:
            _STRUCTURES.pop(next(iter(_STRUCTURES)))
        st = _STRUCTURES[key] = _Structure(*key)
    return st


def _inputs(rank, d1, l1, d2, l2):
    """Inputs from other ranks (same-rank ones are implied by the order): first and, for pairs, second."""
    c1 = (d1 >= 0) & (rank[np.maximum(d1, 0)] != rank)
    c2 = (d2 >= 0) & (rank[np.maximum(d2, 0)] != rank)
    both = c1 & c2
    return (np.where(c1, d1, np.where(c2, d2, -1)), np.where(c1, l1, np.where(c2, l2, 0.0)),
            np.where(both, d2, -1), np.where(both, l2, 0.0))


def _run_in_order(st: _Structure, l1, l2, dur) -> np.ndarray:
    """Start times evaluated along the structure's topological order (no blocking logic)."""
    rank, N, o = st.rank, len(st.rank), st.order
    D, L, D2, L2 = _inputs(rank, st.d1, l1, st.d2, l2)
    if st._lists is None:
        prev = np.arange(N) - 1
        first = np.ones(N, bool)
        first[1:] = rank[1:] != rank[:-1]
        prev[first] = N                  # slot N holds 0.0: "nothing before"
        two = bool((D2 >= 0).any())
        st._lists = (o.tolist(), prev[o].tolist(), np.where(D >= 0, D, N)[o].tolist(),
                     np.where(D2 >= 0, D2, N)[o].tolist() if two else None)
    oi, pi, di, d2i = st._lists
    end = [0.0] * (N + 1)
    if d2i is not None:
        for i, p, d, lg, d2_, lg2, du in zip(oi, pi, di, L[o].tolist(), d2i, L2[o].tolist(), dur[o].tolist()):
            t = end[p]
            x = end[d] + lg
            if x > t:
                t = x
            x = end[d2_] + lg2
            if x > t:
                t = x
            end[i] = t + du
    else:
        for i, p, d, lg, du in zip(oi, pi, di, L[o].tolist(), dur[o].tolist()):
            t = end[p]
            x = end[d] + lg
            if x > t:
                t = x
            end[i] = t + du
    return np.asarray(end[:N]) - dur


def _run(rank, d1, l1, d2, l2, dur, pp: int, schedule: str) -> tuple[np.ndarray, np.ndarray]:
    """Start times by an event loop: each rank runs its ops in order, each once its inputs have arrived.

    O(ops): a rank blocked on an input that is not computed yet waits for that op
    (at most two ranks wait on one op) and resumes when it is computed. Inputs
    from the same rank are implied by the order; only pairs have two inputs
    from other ranks. Also returns the processing order (a topological order).
    """
    N = len(rank)
    ptr = np.searchsorted(rank, np.arange(pp + 1)).tolist()
    D, L, D2, L2 = _inputs(rank, d1, l1, d2, l2)
    any2 = bool((D2 >= 0).any())
    D, L, D2, L2 = D.tolist(), L.tolist(), D2.tolist(), L2.tolist()
    runs: list = []                      # (first op, last op + 1) of every run, in processing order
    DU = dur.tolist()
    end = [-1.0] * N
    w1 = [-1] * N
    w2 = [-1] * N
    pos, stop = ptr[:-1], ptr[1:]
    free = [0.0] * pp
    stack = list(range(pp - 1, -1, -1))
    while stack:
        r = stack.pop()
        o, t, n = pos[r], free[r], stop[r]
        while o < n:
            d = D[o]
            if d >= 0:
                e = end[d]
                if e < 0:
                    if w1[d] < 0:
                        w1[d] = r
                    else:
                        w2[d] = r
                    break
                e += L[o]
                if e > t:
                    t = e
                if any2:
                    d = D2[o]
                    if d >= 0:
                        e = end[d]
                        if e < 0:
                            if w1[d] < 0:
                                w1[d] = r
                            else:
                                w2[d] = r
                            break
                        e += L2[o]
                        if e > t:
                            t = e
            t += DU[o]
            end[o] = t
            if w1[o] >= 0:
                stack.append(w1[o])
                if w2[o] >= 0:
                    stack.append(w2[o])
            o += 1
        if o > pos[r]:
            runs.append((pos[r], o))
        pos[r], free[r] = o, t
    if any(pos[r] < stop[r] for r in range(pp)):  # pragma: no cover - every supported order is deadlock-free
        raise SpecError(f"{schedule}: the operation order deadlocks")
    ra = np.asarray(runs, np.int64).reshape(-1, 2)
    lens = ra[:, 1] - ra[:, 0]
    order = np.arange(int(lens.sum())) - np.repeat(np.cumsum(lens) - lens, lens) + np.repeat(ra[:, 0], lens)
    return np.asarray(end) - dur, order


def _events(st: _Structure, start, end, parts, p2p_x, pp: int) -> Timeline:
    """Timeline rows of every operation part (zero-length parts dropped), in a deterministic order."""
    typ, rank, fv, fm, bv, bm, hasf, bo = st.typ, st.rank, st.fv, st.fm, st.bv, st.bm, st.hasf, st.bo
    v_chunk, v_next, v_prev = st.v_chunk, st.v_next, st.v_prev
    f, hf, ef, b, w, hb, eb, longest = parts
    lag = lambda va, vb: p2p_x[_boundary(st.v_rank[va], st.v_rank[vb], pp)]  # noqa: E731
    pair = typ == _PAIR
    cols = {k: [] for k in ("stage", "stream", "chunk", "micro", "kind", "start", "dur")}

    def add(mask, stream, kind, v, mm, t0, d):
        sel = mask & (d > 0)
        cols["stage"].append(rank[sel])
        cols["stream"].append(np.full(int(sel.sum()), stream))
        cols["chunk"].append(v_chunk[v[sel]])
        cols["micro"].append(mm[sel])
        cols["kind"].append(np.full(int(sel.sum()), kind))
        cols["start"].append(t0[sel])
        cols["dur"].append(d[sel])

    hb_ = bv >= 0
    s = start
    # forward part: compute, then (not paired) its comm and exposed comm; paired: comm from the start
    add(hasf, 0, 0, fv, fm, s, f)
    add(hasf, 1, 0, fv, fm, np.where(pair, s, s + f), hf)
    add(hasf, 2, 0, fv, fm, np.where(pair, s + longest, s + f + hf), ef)
    # backward part: B, W (fused or alone), comm, exposed
    bs = np.where(pair, s + f, s + f + hf + ef)  # single ops have no forward part: f = hf = ef = 0
    add(hb_, 0, 1, bv, bm, bs, b)
    add(hb_, 0, 2, bv, bm, bs + b, w)
    add(hb_, 1, 1, bv, bm, np.where(pair, s + hf, bs + b + w), hb)
    add(hb_, 2, 1, bv, bm, np.where(pair, s + longest + ef, bs + b + w + hb), eb)
    # p2p sends: the output of F(v, m) to the next virtual stage's rank, of B(v, m) to the previous one's
    nv = v_next[np.maximum(fv, 0)]
    okf = hasf & (nv >= 0)
    lf = np.zeros(len(typ))
    lf[okf] = lag(fv[okf], nv[okf])
    add(okf, 3, 0, fv, fm, end, lf)
    pv = v_prev[np.maximum(bv, 0)]
    okb = bo & (pv >= 0)
    lb = np.zeros(len(typ))
    lb[okb] = lag(bv[okb], pv[okb])
    add(okb, 3, 1, bv, bm, end, lb)
    c = {k: np.concatenate(v) for k, v in cols.items()}
    order = np.lexsort((c["start"], c["stage"]))  # stable: ties keep the (deterministic) build order
    return Timeline(stage=c["stage"][order].astype(np.int32), stream=c["stream"][order].astype(np.int8),
                    chunk=c["chunk"][order].astype(np.int32), micro=c["micro"][order].astype(np.int32),
                    kind=c["kind"][order].astype(np.int8), start_s=c["start"][order],
                    end_s=c["start"][order] + c["dur"][order])
