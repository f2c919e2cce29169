"""MoE dispatch and combine: token-routing models and their traffic.

A token-routing model picks, for every token of every expert-parallel (EP) rank,
its top-k experts; experts live on the EP ranks in contiguous blocks. Dispatch
sends one copy of a token to every *rank* that hosts at least one of its experts
(DeepEP deduplicates per rank); combine sends the expert outputs back.

Routing models (all seeded, vectorised over tokens):

* ``uniform``: top-k of i.i.d. scores (DeepEP's intranode test), i.e. k distinct
  experts uniformly at random;
* ``skewed``: expert popularity drawn once from a lognormal(``skew_sigma``):
  top-k of ``log(popularity) + Gumbel`` noise, i.e. sampling without replacement
  in proportion to popularity (drawn so, k draws per token:
  :mod:`collectives.token_routing`);
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
  it costs nothing to draw, so a training step can route every EP group at once;
* ``perfect``: no draw, TensorRT-LLM's ``--perfect_router`` (tests/microbenchmarks/bench_moe_comm.py,
  ``_make_inputs``): rank ``s`` lays its (token, slot) pairs out flat, ``f = t * topk + j``, and sends
  slot ``f`` to rank ``(f + s) % ep``, local expert ``((f + s) // ep) % experts_per_rank``: every token
  reaches ``min(ep, topk)`` distinct ranks and every rank receives the same count.

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

from collectives.ops import DISPATCH_DTYPES as _DISPATCH_DTYPES
from collectives.ep_constants import (DEEPEP_SM_RATE_BPS, LL_FIXED_S, LL_NVLINK_S, ONESIDED_NVLINK_S, PER_PEER_S,
                                      PULL_COMBINE_FIXED_S, RDMA_PIPELINE_BPS, deepep_sm_time_s, ll_nvlink_fixed_s,
                                      onesided_fixed_s)
from topologies.errors import SpecError
from topologies.limits import MAX_HIDDEN, MAX_SEED

from collectives.token_routing import COMPILED_MIN_SELECTIONS, alias_table, sample_distinct  # the uniform / skewed draw
from fabric import kernels as _kernels
from fabric.allocator import hold_freed_memory

__all__ = ["ROUTING_KINDS", "UNSEEDED_KINDS", "DISPATCH_DTYPES", "FORMS", "METRICS", "LL_HEADER_BYTES", "TokenRouting",
           "TokenTraffic", "route_tokens", "moe_flows", "plan_moe"]

ROUTING_KINDS = ("uniform", "skewed", "node_limited", "deepseek", "balanced", "perfect")
#: Routing kinds that draw nothing (fixed counts): the seed does not change their traffic.
UNSEEDED_KINDS = ("balanced", "perfect")
#: Dispatch payload types (defined in :mod:`collectives.ops`, with the other vocabularies): DeepEP's FP8 with
#: per-128-channel scales, BF16 (HybridEP's BF16 tables), or NVFP4 (TensorRT-LLM's post-quant dispatch).
DISPATCH_DTYPES = _DISPATCH_DTYPES
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
        if self.hidden > MAX_HIDDEN:
            raise SpecError(f"moe hidden: {self.hidden:,} is over {MAX_HIDDEN:,} channels per token")
        if self.topk > self.experts:
            raise SpecError(f"moe topk: {self.topk} exceeds the {self.experts} experts")
        if isinstance(self.seed, bool) or not isinstance(self.seed, int) or not 0 <= self.seed <= MAX_SEED:
            raise SpecError(f"seed: {self.seed!r} must be an integer between 0 and {MAX_SEED}")
        if self.dispatch_dtype not in DISPATCH_DTYPES:
            raise SpecError(f"moe dispatch_dtype: {self.dispatch_dtype!r} is not one of {', '.join(DISPATCH_DTYPES)}")
        if not (self.skew_sigma >= 0):
            raise SpecError(f"moe skew_sigma: {self.skew_sigma!r} must be >= 0")

    @property
    def dispatch_bytes_per_token(self) -> float:
        """FP8: payload plus one float32 scale per 128 channels (DeepEP); BF16: ``2 * hidden``; NVFP4: two
        elements per byte plus one 1-byte scale per 16 elements (4,032 B at hidden 7,168, the bytes/token
        column of TensorRT-LLM's blog 18 "Post-Quant Dispatch" table)."""
        if self.dispatch_dtype == "bf16":
            return 2.0 * self.hidden
        if self.dispatch_dtype == "nvfp4":
            return self.hidden / 2 + self.hidden / 16
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


#: Uniform draws per block of ranks (a block is whole ranks; 2^22 float32 = 16 MiB).
_BLOCK_DRAWS = 1 << 22
#: Tokens per chunk of the ``uniform`` / ``skewed`` draws (part of the draw's definition: the stream is
#: consumed chunk by chunk; 2^15 tokens x k int64 = 2 MiB at k = 8 stay in cache: 1.5x faster than 2^18).
_CHUNK_TOKENS = 1 << 15


def _u32_to_unit(x: np.ndarray) -> np.ndarray:
    """numpy's float32 uniform from a raw 32-bit draw: ``(x >> 8) * 2^-24`` (exact)."""
    return (x >> np.uint32(8)).astype(np.float32) * np.float32(2.0 ** -24)


def _scores(tr: TokenRouting, u: np.ndarray, node_of_expert, starts, contiguous, n_nodes):
    """Scores (the uniforms ``u``) of tokens over the experts; -inf outside the allowed nodes or groups
    (``node_limited``, ``deepseek``)."""
    E = tr.experts
    T = u.shape[0]
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
    return scores


def _full_topk(scores: np.ndarray, k: int) -> np.ndarray:
    """The k best experts of every row (argpartition over the whole row, as the draw is defined)."""
    E = scores.shape[1]
    return np.argpartition(scores, E - k, axis=1)[:, E - k:]


def _count(ei: np.ndarray, owner: np.ndarray, row_rank: np.ndarray, width: int, out: np.ndarray,
           copies: np.ndarray | None = None, ascending: bool = False, compiled: bool = False) -> None:
    """Add to ``out[r, owner]`` the tokens (rows of ``ei``) of rank ``row_rank`` (non-decreasing) that
    select ``owner`` once per token, and to ``copies[r, owner]`` (if given) every selection.
    ``ascending``: the owners of every row are already non-decreasing (no sort needed).
    ``compiled``: one compiled pass (:func:`collectives.token_kernels.count_rows`; the same counts)."""
    if compiled:
        from collectives import token_kernels as _tk  # imports numba

        _tk.count_rows(ei, owner, row_rank, out, out if copies is None else copies, copies is not None, ascending)
        return
    o = owner[ei]
    if not ascending:
        o = np.sort(o, axis=1)
    r0 = int(row_rank[0])
    n = int(row_rank[-1]) - r0 + 1
    key = (row_rank - r0)[:, None] * width + o
    if copies is not None:
        copies[r0:r0 + n] += np.bincount(key.reshape(-1), minlength=n * width).reshape(n, width)
    key = key.ravel()
    first = np.empty(key.shape[0], bool)  # a new owner in its row (compared along the flat rows)
    np.not_equal(key[1:], key[:-1], out=first[1:])
    first[::o.shape[1]] = True
    out[r0:r0 + n] += np.bincount(key[first], minlength=n * width).reshape(n, width)


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
    # large draws: their freed chunks stay with the process (fewer page faults; no result changes)
    hold_freed_memory(entries=n_ranks * tr.tokens_per_rank * tr.topk)
    rank_counts = np.zeros((n_ranks, n_ranks), np.int64)
    copy_counts = np.zeros((n_ranks, n_ranks), np.int64)
    node_counts = np.zeros((n_ranks, n_nodes), np.int64)
    T = tr.tokens_per_rank
    k = tr.topk
    # the compiled draw and counts (the same arrays) on large draws
    compiled = _kernels.use_compiled(n_ranks * T * k, COMPILED_MIN_SELECTIONS)

    # one rank per node: the node counts are the rank counts (rank d is node node_index[d])
    one_per_node = n_nodes == n_ranks
    node_ascending = bool((np.diff(node_index) >= 0).all())

    def count(ei, row_rank, ascending=False):  # ascending: every row of ei is (so are its ranks)
        _count(ei, rank_of_expert, row_rank, n_ranks, rank_counts, copy_counts, ascending, compiled)
        if not one_per_node:
            _count(ei, node_of_expert, row_rank, n_nodes, node_counts, None, ascending and node_ascending, compiled)

    if tr.kind == "perfect":  # bench_moe_comm.py --perfect_router: slot f of rank s -> rank (f + s) % ep
        if E % n_ranks:
            raise SpecError(f"moe routing: perfect needs the {E} experts to split evenly over {n_ranks} ranks")
        per = E // n_ranks
        f = np.arange(T * k, dtype=np.int64)
        block = max(1, min(n_ranks, _BLOCK_DRAWS // (T * k)))
        for r0 in range(0, n_ranks, block):
            sched = f[None, :] + np.arange(r0, min(n_ranks, r0 + block), dtype=np.int64)[:, None]
            ei = ((sched % n_ranks) * per + (sched // n_ranks) % per).reshape(-1, k)
            count(ei, np.repeat(np.arange(r0, r0 + sched.shape[0]), T))
        if one_per_node:
            node_counts[:, node_index] = rank_counts
        return TokenTraffic(rank_counts=rank_counts, node_counts=node_counts, node_of=node_index,
                            copy_counts=copy_counts)
    if tr.kind in ("uniform", "skewed"):
        # k experts per token without replacement, in proportion to the popularity (skewed) or uniformly:
        # the law of the top-k of log(popularity) + Gumbel (collectives/token_routing.py). Tokens in rank
        # order, in chunks of _CHUNK_TOKENS drawn one after the other from the same stream.
        table = alias_table(log_pop if log_pop is not None else np.ones(E))
        total = n_ranks * T
        for t0 in range(0, total, _CHUNK_TOKENS):
            n = min(_CHUNK_TOKENS, total - t0)
            count(sample_distinct(rng, table, n, k, compiled), np.arange(t0, t0 + n) // T, True)
        if one_per_node:
            node_counts[:, node_index] = rank_counts
        return TokenTraffic(rank_counts=rank_counts, node_counts=node_counts, node_of=node_index,
                            copy_counts=copy_counts)
    # node_limited / deepseek need whole rows of scores (the best expert of every node or group).
    # experts of one node are contiguous when the ranks of a node are: per-node maxima by reduceat
    starts = np.flatnonzero(np.r_[True, np.diff(node_of_expert) != 0])
    contiguous = len(starts) == n_nodes
    # Every rank draws a (T, E) float32 uniform block in rank order. The draws are taken as raw 64-bit
    # words (two float32 draws each, low half first, as numpy's float32 stream) in blocks of whole ranks:
    # the same numbers as rng.random((T, E), float32) rank after rank.
    # float32 scores: the top-k only needs the order (ties have probability ~ T E 2^-24)
    per_rank = T * E
    block = max(1, min(n_ranks, _BLOCK_DRAWS // per_rank))
    carry = None  # the high half of a 64-bit word whose low half ended the previous block
    for r0 in range(0, n_ranks, block):
        nb = min(block, n_ranks - r0)
        need = nb * per_rank - (carry is not None)
        words = rng.bit_generator.random_raw((need + 1) // 2).view(np.uint32)
        x = words[:need] if carry is None else np.concatenate([carry, words[:need]])
        carry = words[need:] if need % 2 else None
        x = x.reshape(nb * T, E)
        ei = _full_topk(_scores(tr, _u32_to_unit(x), node_of_expert, starts, contiguous, n_nodes), k)
        del x
        count(ei, np.repeat(np.arange(r0, r0 + nb), T))
    if one_per_node:
        node_counts[:, node_index] = rank_counts
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


def _hier_flows(traffic: TokenTraffic, C: np.ndarray, local_of, bytes_per_token: float, s_idx, d_idx, off):
    """Flows of the ``hier`` form, in the order: same-node pairs (row-major); then per source s and
    remote node N (ascending): the network copy s -> p (p: the rank on N with s's local index), the
    NVLink fan-out p -> every other rank of N (ascending)."""
    node = traffic.node_of
    n = len(node)
    n_nodes = int(node.max()) + 1 if n else 0
    local_of = np.asarray(local_of, np.int64)
    if n_nodes == n and n and (local_of == local_of[0]).all():
        # one rank per node (e.g. one GPU per host): every flow is the network copy s -> the rank of remote
        # node N, in the same order (s, then N ascending) and with the same bytes as the grids below, and
        # there is no fan-out; without the n x (n + nodes) grids
        rank_of_node = np.empty(n, np.int64)
        rank_of_node[node] = np.arange(n)
        N_of = np.broadcast_to(np.arange(n_nodes), (n, n_nodes))
        remote = N_of != node[:, None]                          # [s, N]
        s_i = np.broadcast_to(np.arange(n)[:, None], (n, n_nodes))[remote]
        N_i = N_of[remote]
        return s_i, rank_of_node[N_i], traffic.node_counts[remote] * bytes_per_token
    same = off & (node[s_idx] == node[d_idx])
    # rail peers: peer[N, l] = the (last) rank of node N with local index l, -1 if none
    peer = np.full((n_nodes, int(local_of.max(initial=0)) + 1), -1, np.int64)
    np.maximum.at(peer, (node, local_of), np.arange(n))
    p_of = peer[:, local_of]                                    # [N, s]
    remote = node[None, :] != np.arange(n_nodes)[:, None]       # [N, s]: N is not s's node
    if (p_of[remote] < 0).any():
        raise SpecError("moe hier: every node needs a rank with the sender's local index")
    # a grid per source: one slot per remote node's network copy followed by its ranks (ascending)
    order = np.lexsort((np.arange(n), node))                    # ranks by (node, index)
    pos = np.empty(n, np.int64)
    pos[order] = np.arange(n)
    col_of_rank = pos + node + 1                                # one extra slot before every node's ranks
    col_of_node = np.searchsorted(node[order], np.arange(n_nodes)) + np.arange(n_nodes)
    W = n + n_nodes
    g_src = np.full((n, W), -1, np.int64)
    g_dst = np.zeros((n, W), np.int64)
    g_b = np.zeros((n, W))
    # network copies (s, N), N remote
    N_i, s_i = np.nonzero(remote)
    at = s_i * W + col_of_node[N_i]  # flat positions in the grids (one index computation for the three)
    g_src.reshape(-1)[at] = s_i
    g_dst.reshape(-1)[at] = p_of[N_i, s_i]
    g_b.reshape(-1)[at] = traffic.node_counts[s_i, N_i] * bytes_per_token
    # fan-out p(s, node[d]) -> d for d on a remote node, d != p
    p_sd = p_of[node[d_idx], s_idx]                             # [s, d]
    fan = (node[s_idx] != node[d_idx]) & (d_idx != p_sd)
    fs, fd = s_idx[fan], d_idx[fan]
    at = fs * W + col_of_rank[fd]
    g_src.reshape(-1)[at] = p_sd[fan]
    g_dst.reshape(-1)[at] = fd
    g_b.reshape(-1)[at] = C[fan] * bytes_per_token
    used = g_src >= 0
    src = np.concatenate([s_idx[same], g_src[used]])
    dst = np.concatenate([d_idx[same], g_dst[used]])
    size = np.concatenate([C[same] * bytes_per_token, g_b[used]])
    return src, dst, size


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
        src, dst, size = _hier_flows(traffic, C, local_of, bytes_per_token, s_idx, d_idx, off)
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
    ``kernel`` family of :data:`collectives.calibration.PER_PEER_S`; ``sms``: the SMs of a DeepEP
    normal kernel inside one NVLink domain (SM-bound floor on the time, ``Plan.min_time_s``);
    ``bytes_per_token`` overrides the payload per token copy; ``pull_combine``: the combine pulls the
    expert outputs with remote loads after a head barrier, TensorRT-LLM's NVLinkOneSided, and pays
    :data:`collectives.calibration.PULL_COMBINE_FIXED_S` once more; the ``nvlink_onesided`` family in one NVLink
    domain pays :func:`collectives.calibration.onesided_fixed_s` instead, round 11).

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
    if algo == "hier" and len(groups) == 1:
        raise SpecError(f"algo: hier forwards {op.collective} tokens between nodes over NVLink; these ranks share "
                        f"one node: use direct")
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
    floor = 0.0  # kernel-side pipelines slower than the links (round 3): the op takes the larger time
    nvl = LL_NVLINK_S.get((family, op.collective, planner.gpu.sm)) if form == "ll" and len(groups) == 1 else None
    # TensorRT-LLM's one-sided kernels in one NVLink domain (round 11): one fixed time per call, growing with log2(ep)
    onesided = family == "nvlink_onesided" and len(groups) == 1 and op.collective in ONESIDED_NVLINK_S
    if nvl is not None:  # one NVLink board (round 8): warp copies through P2P pointers, own copies included
        # round 12: the fixed part grows with the experts (one warp group per expert) and the message's bytes
        t0, rate = ll_nvlink_fixed_s(nvl, tr.experts, per_token), nvl[3]
        fs = replace(fs, latency_s=np.full_like(fs.latency_s, t0))
        floor = t0 + float(traffic.copy_counts.sum(axis=0 if combine else 1).max(initial=0)) * per_token / rate
    elif onesided:  # in place of the p2p latency, the LL fixed time and (combine) the pull combine's barrier
        fs = replace(fs, latency_s=np.full_like(fs.latency_s, onesided_fixed_s(op.collective, len(ranks))))
    elif LL_FIXED_S.get(family, 0.0) > 0:  # low-latency kernels: the count flag behind the data, the copy-out
        fs = replace(fs, latency_s=fs.latency_s + LL_FIXED_S[family])
    pull = op.options.get("pull_combine", False)
    if not isinstance(pull, bool):
        raise SpecError(f"moe pull_combine: {pull!r} must be true or false (a combine that pulls after a barrier)")
    if pull and combine and not onesided:  # a barrier in every CTA before the first remote load; the prepare grid
        fs = replace(fs, latency_s=fs.latency_s + PULL_COMBINE_FIXED_S)
        if nvl is not None:  # a fixed time of the call: the one-board copy floor (t0 + copies) pays it too
            floor += PULL_COMBINE_FIXED_S
    sms = op.options.get("sms")
    if sms is not None and (isinstance(sms, bool) or not isinstance(sms, int) or sms < 1):
        raise SpecError(f"moe sms: {sms!r} must be an integer >= 1 (the SMs of a DeepEP normal kernel)")
    if sms is not None and len(groups) == 1 and op.collective in DEEPEP_SM_RATE_BPS:
        # DeepEP's intranode normal kernels copy with their own SMs: the busiest rank's tokens (own included)
        # (round 4: peers beyond the 8 ranks of the SM fit pay the family's per-peer cost on this path too)
        floor = deepep_sm_time_s(op.collective, sms, float(traffic.rank_counts.sum(axis=0).max(initial=0)) * per_token,
                                 peers=len(ranks) - 1, per_peer_s=PER_PEER_S[family])
    if form == "hier" and family in RDMA_PIPELINE_BPS:
        # internode normal kernels pass every (token, node) pair, the local node's too, through one pipeline
        floor = max(floor, float(traffic.node_counts.sum(axis=1).max(initial=0)) * per_token / RDMA_PIPELINE_BPS[family])
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
                     min_time_s=floor,
                     notes=f"routing={tr.kind}, tokens/rank={tr.tokens_per_rank}, topk={tr.topk}, "
                           f"network bytes={b[net].sum():.3e}")
