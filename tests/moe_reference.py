"""The per-rank loop implementation of MoE token routing and its flows (before vectorisation).

Test oracle only: ``collectives.moe`` must give the same counts and flows for the same seed.
``node_limited`` / ``deepseek`` draw their uniforms here as before and score them with
``collectives.moe._scores`` (the definition of those routings; this oracle checks the counting); ``uniform`` / ``skewed`` take their
k experts per token from ``collectives.token_routing.sample_distinct`` (whose law
``tests/test_token_routing.py`` checks) in the same chunks, and count them here token by token.
"""

from __future__ import annotations

import numpy as np

import collectives.moe as moe
from collectives.moe import TokenTraffic, _expected_traffic
from collectives.token_routing import alias_table, sample_distinct
from topologies.errors import SpecError

__all__ = ["route_tokens_loop", "moe_flows_loop"]


def route_tokens_loop(tr, n_ranks: int, node_of) -> TokenTraffic:
    node_of = np.asarray(node_of, dtype=np.int64)
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
    if tr.kind in ("uniform", "skewed"):
        table = alias_table(log_pop if log_pop is not None else np.ones(E))
        total, chunk = n_ranks * T, moe._CHUNK_TOKENS
        sel = np.concatenate([sample_distinct(rng, table, min(chunk, total - t0), k)
                              for t0 in range(0, total, chunk)])
        for t, experts in enumerate(sel.tolist()):
            s = t // T
            assert len(set(experts)) == k
            ranks = [int(rank_of_expert[e]) for e in experts]
            for d in set(ranks):
                rank_counts[s, d] += 1
            for d in ranks:
                copy_counts[s, d] += 1
            for N in {int(node_of_expert[e]) for e in experts}:
                node_counts[s, N] += 1
        return TokenTraffic(rank_counts=rank_counts, node_counts=node_counts, node_of=node_index,
                            copy_counts=copy_counts)
    ti = np.repeat(np.arange(T), k)
    for s in range(n_ranks):
        # float32 scores: the top-k only needs the order (ties have probability ~ T E 2^-24)
        u = rng.random((T, E), dtype=np.float32)
        scores = moe._scores(tr, u, node_of_expert, starts, contiguous, n_nodes)  # the draw's definition
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


def moe_flows_loop(traffic: TokenTraffic, local_of: np.ndarray, bytes_per_token: float, *, form: str,
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
        raise SpecError(f"moe form: {form!r} must be one of {', '.join(moe.FORMS)}")
    src, dst = np.asarray(src), np.asarray(dst)
    if combine:
        src, dst = dst, src
    keep = size > 0
    net = node[src] != node[dst]
    return src[keep], dst[keep], np.asarray(size)[keep], net[keep]
