"""MoE dispatch and combine: token-routing models and their traffic.

A token-routing model picks, for every token of every expert-parallel (EP) rank,
its top-k experts; experts live on the EP ranks in contiguous blocks. Dispatch
sends one copy of a token to every *rank* that hosts at least one of its experts
(DeepEP deduplicates per rank); combine sends the expert outputs back.

Routing models (all seeded, vectorised over tokens):

* ``uniform``: top-k of i.i.d. scores (DeepEP's intranode test);
* ``skewed``: expert popularity drawn once from a lognormal(``skew_sigma``):
  top-k of ``log(popularity) + Gumbel`` noise, i.e. sampling without replacement
  in proportion to popularity;
* ``node_limited``: DeepSeek-style: first the top ``topk_groups`` *nodes* by
  their best expert score (DeepEP's internode test: groups = nodes, at most 4),
  then the top-k experts inside them;
* ``deepseek``: DeepSeek-V3's own gating: ``n_group`` groups of contiguous
  experts, group score = sum of its top-2 expert scores, top ``topk_groups``
  groups, then top-k;
* ``balanced``: no draw, the expected counts of ``uniform`` routing (a token's
  top-k is a uniformly random k-subset of the experts, so it needs a rank or
  node holding ``m`` of the ``E`` experts with probability
  ``1 - C(E-m, k) / C(E, k)``). This is what force-balanced benchmarks average to
  (Megatron-Core ``--moe-router-force-load-balancing`` draws random logits), and
  it costs nothing to draw, so a training step can route every EP group at once.

Byte sizes follow DeepEP: dispatch in FP8 with one float32 scale per 128
channels (``hidden + hidden / 128 * 4`` bytes per token copy), combine in BF16
(``2 * hidden``).

Forms of the traffic:

* ``direct``: every (token, destination rank) copy goes straight from the source
  GPU to the destination GPU (NVLink inside a domain, the network across);
* ``hier`` (DeepEP internode / HybridEP): one copy per (token, destination node)
  goes over the network to the GPU with the sender's local index on that node
  (same rail), which fans it out over NVLink to the GPUs that need it; tokens
  for the sender's own node go over NVLink directly. Combine is the reverse.

Bandwidth is reported the way DeepEP counts it (``reference_points.toml``):
intranode, the bytes of tokens received by a rank including its own share over
the time; internode, the distinct (token, destination node) pairs, own node
included, times the bytes, over the time.

Examples
--------
>>> tr = TokenRouting("uniform", tokens_per_rank=64, experts=16, topk=2, seed=1)
>>> t = route_tokens(tr, 8, [0, 0, 0, 0, 1, 1, 1, 1])
>>> t.rank_counts.shape, int(t.rank_counts.sum() >= 8 * 64)
((8, 8), 1)
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np

from collectives.calibration import PER_PEER_S
from topologies.errors import SpecError

__all__ = ["ROUTING_KINDS", "DISPATCH_DTYPES", "FORMS", "METRICS", "LL_HEADER_BYTES", "TokenRouting", "TokenTraffic", "route_tokens", "moe_flows", "plan_moe"]

ROUTING_KINDS = ("uniform", "skewed", "node_limited", "deepseek", "balanced")
#: Dispatch payload types: DeepEP's FP8 with per-128-channel scales, or BF16 (HybridEP's BF16 tables).
DISPATCH_DTYPES = ("fp8", "bf16")
#: Traffic forms: ``direct`` (per (token, rank) copy), ``hier`` (one network copy per (token, node),
#: NVLink fan-out), ``ll`` (low-latency kernels: per (token, expert) message, straight to the rank).
FORMS = ("direct", "hier", "ll")
#: What a reported GB/s counts (docs/validation-data.md): ``logical`` tokens received per rank, own
#: included; ``rdma`` DeepEP's internode bottleneck bytes (normal: distinct (token, node) pairs; LL: every
#: (token, expert) copy with its 16-byte header); ``nccl_ep`` NCCL EP's valid selections x 2 x hidden.
METRICS = ("logical", "rdma", "nccl_ep")
#: Per-message header of DeepEP's low-latency FP8 dispatch (tests/test_low_latency.py @ 2be0d4f l.216-222).
LL_HEADER_BYTES = 16


@dataclass(frozen=True)
class TokenRouting:
    """Parameters of a token-routing model (defaults: DeepSeek-V3 / DeepEP's test)."""

    kind: str = "node_limited"
    tokens_per_rank: int = 4096
    hidden: int = 7168
    experts: int = 256
    topk: int = 8
    topk_groups: int = 4
    n_group: int = 8
    skew_sigma: float = 1.0
    seed: int = 0
    dispatch_dtype: str = "fp8"

    def __post_init__(self) -> None:
        if self.kind not in ROUTING_KINDS:
            raise SpecError(f"moe routing: {self.kind!r} is not one of {', '.join(ROUTING_KINDS)}")
        for name in ("tokens_per_rank", "hidden", "experts", "topk", "topk_groups", "n_group"):
            v = getattr(self, name)
            if isinstance(v, bool) or not isinstance(v, int) or v < 1:
                raise SpecError(f"moe {name}: {v!r} must be an integer >= 1")
        if self.topk > self.experts:
            raise SpecError(f"moe topk: {self.topk} exceeds the {self.experts} experts")
        if isinstance(self.seed, bool) or not isinstance(self.seed, int) or self.seed < 0:
            raise SpecError(f"seed: {self.seed!r} must be an integer >= 0")
        if self.dispatch_dtype not in DISPATCH_DTYPES:
            raise SpecError(f"moe dispatch_dtype: {self.dispatch_dtype!r} is not one of {', '.join(DISPATCH_DTYPES)}")
        if not (self.skew_sigma >= 0):
            raise SpecError(f"moe skew_sigma: {self.skew_sigma!r} must be >= 0")

    @property
    def dispatch_bytes_per_token(self) -> float:
        """FP8: payload plus one float32 scale per 128 channels (DeepEP); BF16: ``2 * hidden``."""
        if self.dispatch_dtype == "bf16":
            return 2.0 * self.hidden
        return self.hidden + self.hidden / 128 * 4

    @property
    def combine_bytes_per_token(self) -> float:
        """BF16 payload."""
        return 2.0 * self.hidden


@dataclass(frozen=True)
class TokenTraffic:
    """Token counts of one routing draw.

    ``rank_counts[s, d]``: tokens of rank ``s`` needing rank ``d`` (deduplicated per
    rank, ``d == s`` included); ``node_counts[s, N]``: tokens of ``s`` needing node ``N``.
    """

    rank_counts: np.ndarray
    node_counts: np.ndarray
    node_of: np.ndarray
    copy_counts: np.ndarray | None = None  #: [s, d] (token, expert) selections of s on rank d (no dedup)


def _topk_mask(scores: np.ndarray, k: int) -> np.ndarray:
    idx = np.argpartition(-scores, k - 1, axis=1)[:, :k]
    mask = np.zeros(scores.shape, bool)
    np.put_along_axis(mask, idx, True, axis=1)
    return mask


def route_tokens(tr: TokenRouting, n_ranks: int, node_of) -> TokenTraffic:
    """Draw the routing of every token of ``n_ranks`` EP ranks (``node_of[r]``: node index of rank r).

    The draw depends on the routing parameters only (not on the payload types), so a
    dispatch and its combine see the same tokens; the last draws are memoised.
    """
    node_of = np.asarray(node_of, dtype=np.int64)
    key = (replace(tr, dispatch_dtype="fp8"), int(n_ranks), node_of.tobytes())
    hit = _ROUTE_CACHE.get(key)
    if hit is None:
        hit = _route_tokens(tr, n_ranks, node_of)
        if len(_ROUTE_CACHE) >= 16:
            _ROUTE_CACHE.pop(next(iter(_ROUTE_CACHE)))
        _ROUTE_CACHE[key] = hit
    return hit


_ROUTE_CACHE: dict = {}


def _route_tokens(tr: TokenRouting, n_ranks: int, node_of: np.ndarray) -> TokenTraffic:
    if len(node_of) != n_ranks:
        raise SpecError(f"moe: node_of has {len(node_of)} entries for {n_ranks} ranks")
    E = tr.experts
    if E < n_ranks:
        raise SpecError(f"moe experts: {E} experts are fewer than the {n_ranks} EP ranks")
    # contiguous blocks, as even as possible (E = 288 over 64 ranks: 4 or 5 experts per rank)
    rank_of_expert = (np.arange(E) * n_ranks) // E
    nodes = np.unique(node_of)
    node_index = np.searchsorted(nodes, node_of)
    n_nodes = len(nodes)
    node_of_expert = node_index[rank_of_expert]
    if tr.kind == "balanced":
        return _expected_traffic(tr, np.bincount(rank_of_expert, minlength=n_ranks), node_index, n_nodes)
    rng = np.random.default_rng(tr.seed)
    log_pop = rng.lognormal(0.0, tr.skew_sigma, E) if tr.kind == "skewed" else None
    rank_counts = np.zeros((n_ranks, n_ranks), np.int64)
    copy_counts = np.zeros((n_ranks, n_ranks), np.int64)
    node_counts = np.zeros((n_ranks, n_nodes), np.int64)
    T = tr.tokens_per_rank
    k = tr.topk
    # experts of one node are contiguous when the ranks of a node are: per-node maxima by reduceat
    starts = np.flatnonzero(np.r_[True, np.diff(node_of_expert) != 0])
    contiguous = len(starts) == n_nodes
    log_pop32 = np.log(log_pop).astype(np.float32)[None, :] if log_pop is not None else None
    ti = np.repeat(np.arange(T), k)
    for s in range(n_ranks):
        # float32 scores: the top-k only needs the order (ties have probability ~ T E 2^-24)
        u = rng.random((T, E), dtype=np.float32)
        if tr.kind == "skewed":  # Gumbel-top-k = sampling without replacement in proportion to popularity
            scores = log_pop32 - np.log(-np.log(np.maximum(u, np.float32(1e-30))))
        else:
            scores = u
        if tr.kind == "node_limited" and n_nodes > 1:
            if contiguous:
                best = np.maximum.reduceat(scores, starts, axis=1)
            else:
                best = np.stack([scores[:, node_of_expert == j].max(axis=1) for j in range(n_nodes)], axis=1)
            keep = _topk_mask(best, min(tr.topk_groups, n_nodes))
            scores = np.where(keep[:, node_of_expert], scores, -np.inf)
        elif tr.kind == "deepseek":
            if E % tr.n_group or E // tr.n_group < 2:
                raise SpecError(f"moe n_group: {E} experts do not split into {tr.n_group} groups of at least 2 "
                                f"(deepseek routing scores each group by its top-2 experts)")
            g = scores.reshape(T, tr.n_group, E // tr.n_group)
            top2 = np.partition(g, E // tr.n_group - 2, axis=2)[:, :, -2:].sum(axis=2)
            keep = _topk_mask(top2, min(tr.topk_groups, tr.n_group))
            scores = np.where(np.repeat(keep, E // tr.n_group, axis=1), scores, -np.inf)
        ei = np.argpartition(scores, E - k, axis=1)[:, E - k:].ravel()  # the k best experts of every token
        r_of = rank_of_expert[ei]
        hit_rank = np.zeros((T, n_ranks), bool)
        hit_rank[ti, r_of] = True
        rank_counts[s] = hit_rank.sum(axis=0)
        copy_counts[s] = np.bincount(r_of, minlength=n_ranks)
        hit_node = np.zeros((T, n_nodes), bool)
        hit_node[ti, node_of_expert[ei]] = True
        node_counts[s] = hit_node.sum(axis=0)
    return TokenTraffic(rank_counts=rank_counts, node_counts=node_counts, node_of=node_index,
                        copy_counts=copy_counts)


def _miss_probability(E: int, m: np.ndarray, k: int) -> np.ndarray:
    """P(a uniformly random k-subset of E experts avoids m given experts) = C(E-m, k) / C(E, k)."""
    m = np.asarray(m, np.float64)
    out = np.ones_like(m)
    for i in range(k):
        out *= np.clip(E - m - i, 0, None) / (E - i)
    return out


def _expected_traffic(tr: TokenRouting, experts_of_rank: np.ndarray, node_index: np.ndarray,
                      n_nodes: int) -> TokenTraffic:
    """Expected token counts of uniform top-k routing, rounded to whole tokens.

    ``experts_of_rank[d]``: experts rank ``d`` holds (the blocks may differ by one).
    """
    T, E, k = tr.tokens_per_rank, tr.experts, tr.topk
    n_ranks = len(experts_of_rank)
    p_rank = 1.0 - _miss_probability(E, experts_of_rank, k)
    rank_counts = np.repeat(np.rint(T * p_rank)[None, :].astype(np.int64), n_ranks, axis=0)
    per_node = np.bincount(node_index, weights=experts_of_rank, minlength=n_nodes).astype(np.int64)
    p_node = 1.0 - _miss_probability(E, per_node, k)
    node_counts = np.repeat(np.rint(T * p_node)[None, :].astype(np.int64), n_ranks, axis=0)
    copies = np.repeat(np.rint(T * k * experts_of_rank / E)[None, :].astype(np.int64), n_ranks, axis=0)
    return TokenTraffic(rank_counts=rank_counts, node_counts=node_counts, node_of=node_index, copy_counts=copies)


def moe_flows(traffic: TokenTraffic, local_of: np.ndarray, bytes_per_token: float, *, form: str,
              combine: bool) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """(src, dst, bytes, is_network) of the EP-rank-indexed flows of one dispatch or combine.

    ``local_of[r]`` is EP rank r's index inside its node. Flows of zero bytes are dropped.
    """
    C = traffic.rank_counts.astype(np.float64)
    node = traffic.node_of
    n = len(node)
    src, dst, size = [], [], []
    s_idx, d_idx = np.meshgrid(np.arange(n), np.arange(n), indexing="ij")
    off = s_idx != d_idx
    if form == "direct":
        src, dst, size = s_idx[off], d_idx[off], C[off] * bytes_per_token
    elif form == "ll":  # low-latency kernels: one message per (token, expert) selection, no dedup
        E = traffic.copy_counts.astype(np.float64)
        src, dst, size = s_idx[off], d_idx[off], E[off] * bytes_per_token
    elif form == "hier":
        same = off & (node[s_idx] == node[d_idx])
        parts_s, parts_d, parts_b = [s_idx[same]], [d_idx[same]], [C[same] * bytes_per_token]
        # one network copy per (token, remote node), to the sender's rail peer on that node
        peer = {(int(node[r]), int(local_of[r])): r for r in range(n)}
        for s in range(n):
            for N in np.unique(node):
                if N == node[s]:
                    continue
                p = peer.get((int(N), int(local_of[s])))
                if p is None:
                    raise SpecError("moe hier: every node needs a rank with the sender's local index")
                cnt = traffic.node_counts[s, N]
                if cnt:
                    parts_s.append(np.array([s]))
                    parts_d.append(np.array([p]))
                    parts_b.append(np.array([cnt * bytes_per_token]))
                # NVLink fan-out on node N from the peer to every other GPU needing the token
                targets = np.flatnonzero((node == N) & (np.arange(n) != p))
                b = C[s, targets] * bytes_per_token
                parts_s.append(np.full(len(targets), p))
                parts_d.append(targets)
                parts_b.append(b)
        src, dst, size = (np.concatenate(x) for x in (parts_s, parts_d, parts_b))
    else:
        raise SpecError(f"moe form: {form!r} must be one of {', '.join(FORMS)}")
    src, dst = np.asarray(src), np.asarray(dst)
    if combine:
        src, dst = dst, src
    keep = size > 0
    net = node[src] != node[dst]
    return src[keep], dst[keep], np.asarray(size)[keep], net[keep]


def plan_moe(planner, op, plan_type):
    """Plan of a MoE dispatch or combine (``op.options``: ``moe`` TokenRouting, ``form``, ``metric``,
    ``kernel`` family of :data:`collectives.calibration.PER_PEER_S`;
    ``bytes_per_token`` overrides the payload per token copy).

    ``plan_type`` is the :class:`collectives.algorithms.Plan` class (passed in so that this
    module does not import the algorithms module).
    """
    tr = op.options.get("moe") or TokenRouting()
    ranks = np.asarray(op.ranks)
    groups = planner.groups_by_domain(ranks)
    node_of = planner.domain[ranks]
    local_of = np.zeros(len(ranks), np.int64)
    pos = {int(r): i for i, r in enumerate(ranks)}
    for g in groups:
        for j, r in enumerate(g):
            local_of[pos[int(r)]] = j
    form = op.options.get("form")
    algo = op.algorithm if op.algorithm != "auto" else None
    if form is None:
        form = "hier" if (algo == "hier" or (algo is None and len(groups) > 1)) else "direct"
    if form not in FORMS:
        raise SpecError(f"moe form: {form!r} must be one of {', '.join(FORMS)}")
    metric = op.options.get("metric")
    if metric is not None and metric not in METRICS:
        raise SpecError(f"moe metric: {metric!r} must be one of {', '.join(METRICS)}")
    combine = op.collective == "moe_combine"
    per_token = tr.combine_bytes_per_token if combine else tr.dispatch_bytes_per_token
    if op.options.get("bytes_per_token"):  # e.g. a BF16 dispatch (Megatron's default dispatcher)
        per_token = float(op.options["bytes_per_token"])
    elif form == "ll" and not combine and tr.dispatch_dtype == "fp8":
        per_token += LL_HEADER_BYTES
    traffic = route_tokens(tr, len(ranks), node_of)
    s, d, b, net = moe_flows(traffic, local_of, per_token, form=form, combine=combine)
    family = op.options.get("kernel") or ("moe_ll" if form == "ll" else "moe")
    if family not in PER_PEER_S:
        raise SpecError(f"moe kernel: {family!r} is not one of {', '.join(PER_PEER_S)}")
    fs = planner.direct(op, ranks[s], ranks[d], b, pxn=op.options.get("pxn", form == "direct"), kernel=family)
    if PER_PEER_S[family] > 0:  # the kernel serves the other EP ranks in turn (issue 8 item 2)
        fs = replace(fs, latency_s=fs.latency_s + PER_PEER_S[family] * (len(ranks) - 1))
    if metric == "nccl_ep":
        logical = traffic.copy_counts.sum(axis=1).mean() * 2.0 * tr.hidden
    elif metric == "rdma" and form == "ll":
        logical = traffic.copy_counts.sum(axis=1).mean() * per_token
    elif metric == "logical" or (metric is None and len(groups) == 1):
        logical = traffic.rank_counts.sum(axis=0).mean() * per_token  # tokens received per rank, own included
    else:                # DeepEP internode normal: distinct (token, node) pairs incl. own node, per rank
        logical = traffic.node_counts.sum(axis=1).mean() * per_token
    return plan_type(op, fs, f"{form}", "Simple", None, float(fs.latency_s.max(initial=0)),
                     logical_bytes=float(logical),
                     notes=f"routing={tr.kind}, tokens/rank={tr.tokens_per_rank}, topk={tr.topk}, "
                           f"network bytes={b[net].sum():.3e}")
