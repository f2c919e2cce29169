"""Exact max-min fair rates by incremental, link-centric progressive filling.

A *resource* is a link or a trunk (a bundle of parallel links with equal
split, merged by the caller).  Flow ``f`` puts the fraction ``weight[f, j]``
of its rate on resource ``res[f, j]`` (``-1`` pads short rows), and stands for
``multiplicity[f]`` identical member flows.  With ``a_lf = m_f * w_lf`` the
allocation returned is the unique max-min fair one:

* feasible: ``sum_f a_lf * r_f <= c_l`` for every resource ``l``;
* every flow crosses a saturated resource on which its rate is maximal among
  the flows crossing it (its *bottleneck*).

Algorithm (docs/flow-engine.md, section 2): build the resource -> flows
adjacency once (scipy's O(nnz) CSR -> CSC counting sort), keep per resource the
remaining capacity ``rem`` and the unfrozen coefficient sum ``cnt``, and in each
round freeze the flows of the resources whose fair share ``rem / cnt`` is
smallest.  A round takes every resource whose share lies in a small window
above the minimum, sorted by share, and freezes at once every candidate that
no unfrozen flow of an earlier candidate crosses, each at its own share.  Such
a candidate is a local minimum of the share (its flows touch only resources of
larger or equal share), and shares never decrease during filling, so it would
be the minimum when progressive filling reaches its level: the batched round
is exact, it only needs fewer Python-level iterations.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp

from topologies.errors import FlowError

__all__ = ["MaxMinResult", "maxmin_rates", "maxmin_refill"]

#: Relative tolerance under which two fair shares count as the same level.
TIE_RTOL = 1e-9

_INF = np.inf


@dataclass(frozen=True)
class MaxMinResult:
    """Max-min fair rates of a flow set.

    Attributes
    ----------
    rates_Bps : numpy.ndarray
        float64[F], rate of each (member) flow in bytes/s; 0 for inactive flows,
        ``inf`` for active flows that cross no finite-capacity resource.
    bottleneck : numpy.ndarray
        int64[F], the resource that froze the flow, -1 for inactive or
        unconstrained flows.
    rounds : int
        Number of Python-level filling rounds.
    """

    rates_Bps: np.ndarray
    bottleneck: np.ndarray
    rounds: int


# --------------------------------------------------------------------------- validation


def _first_bad(mask: np.ndarray) -> int:
    return int(np.flatnonzero(mask.ravel())[0])


def _check_capacity(capacity_Bps) -> np.ndarray:
    cap = np.asarray(capacity_Bps, dtype=np.float64)
    if cap.ndim != 1:
        raise FlowError(f"capacity_Bps: expected a 1-D array of resource capacities, got shape {cap.shape}")
    bad = ~(cap > 0)  # catches NaN, 0 and negatives
    if bad.any():
        i = _first_bad(bad)
        raise FlowError(f"capacity_Bps[{i}]: {cap[i]!r} is not allowed; capacities must be > 0 (np.inf allowed)")
    return cap


def _check_res(res, n_res: int) -> np.ndarray:
    arr = np.asarray(res)
    if arr.ndim != 2:
        raise FlowError(f"res: expected a 2-D int array [flows, hops] of resource ids, got shape {arr.shape}")
    if arr.dtype.kind not in "iu":
        raise FlowError(f"res: expected an integer array of resource ids, got dtype {arr.dtype}")
    if arr.size:
        lo, hi = arr.min(), arr.max()
        if lo < -1 or hi >= n_res:
            bad = (arr < -1) | (arr >= n_res)
            k = _first_bad(bad)
            f, j = divmod(k, arr.shape[1])
            raise FlowError(
                f"res[{f}, {j}]: {int(arr[f, j])} is out of range; resource ids must be -1 (padding) or in [0, {n_res})"
            )
    return arr


def _check_weight(weight, res: np.ndarray) -> np.ndarray | None:
    if weight is None:
        return None
    w = np.asarray(weight, dtype=np.float64)
    if w.shape != res.shape:
        raise FlowError(f"weight: shape {w.shape} does not match res {res.shape}")
    bad = ~((w > 0) & (w < _INF)) & (res >= 0)
    if bad.any():
        k = _first_bad(bad)
        f, j = divmod(k, res.shape[1])
        raise FlowError(f"weight[{f}, {j}]: {w[f, j]!r} is not allowed; weights must be finite and > 0")
    return w


def _check_per_flow(x, n_flows: int, name: str, *, positive: bool) -> np.ndarray | None:
    if x is None:
        return None
    a = np.asarray(x, dtype=np.float64)
    if a.shape != (n_flows,):
        raise FlowError(f"{name}: expected shape ({n_flows},), got {a.shape}")
    bad = ~((a > 0) & (a < _INF)) if positive else ~((a >= 0) & (a < _INF))
    if bad.any():
        i = _first_bad(bad)
        rule = "finite and > 0" if positive else "finite and >= 0"
        raise FlowError(f"{name}[{i}]: {a[i]!r} is not allowed; values must be {rule}")
    return a


def _check_active(active, n_flows: int) -> np.ndarray | None:
    if active is None:
        return None
    a = np.asarray(active)
    if a.shape != (n_flows,) or a.dtype != np.bool_:
        raise FlowError(f"active: expected a bool array of shape ({n_flows},), got {a.dtype} {a.shape}")
    return a


# --------------------------------------------------------------------------- adjacency


class _Index:
    """Resource -> flow adjacency over a subset of the flows (internal).

    Local flow ``i`` is global flow ``flows[i]``.  Resource ids are mapped so
    that padding (-1) and infinite-capacity resources become the dummy column
    ``R``, which is never a bottleneck.  ``coef`` is ``None`` (all
    coefficients 1), float64[n] (per flow, multiplicity only) or float64[n, h].
    """

    __slots__ = ("flows", "res", "coef", "indptr", "indices", "n_res", "ceps")

    def __init__(self, flows, res, coef, indptr, indices, n_res, ceps):
        self.flows = flows
        self.res = res
        self.coef = coef
        self.indptr = indptr
        self.indices = indices
        self.n_res = n_res
        self.ceps = ceps

    @property
    def size(self) -> int:
        return int(self.res.shape[0])


def _local_res(res: np.ndarray, flows: np.ndarray | None, dummy_map: np.ndarray | None, n_res: int) -> np.ndarray:
    """int32 copy of the selected rows with padding / infinite resources -> n_res."""
    rows = res if flows is None else res[flows]
    if dummy_map is not None:
        # map every id through a lookup table (index -1 hits the last slot = dummy)
        return dummy_map[rows]
    if flows is None or rows.dtype != np.int32:
        rows = rows.astype(np.int32)
    np.putmask(rows, rows < 0, n_res)
    return rows


def _build_index(cap: np.ndarray, res: np.ndarray, weight: np.ndarray | None, mult: np.ndarray | None,
                 flows: np.ndarray | None) -> _Index:
    """Build the CSC adjacency of ``flows`` (None = all rows)."""
    n_res = cap.shape[0]
    finite = np.isfinite(cap)
    dummy_map = None
    if not finite.all():
        dummy_map = np.arange(n_res + 1, dtype=np.int32)
        dummy_map[:n_res][~finite] = n_res
        # index -1 reads dummy_map[-1] == n_res
    lres = _local_res(res, flows, dummy_map, n_res)
    n, h = lres.shape
    m = None if mult is None else (mult if flows is None else mult[flows])
    if weight is not None:
        coef = weight[flows] if flows is not None else weight.copy()
        if m is not None:
            coef *= m[:, None]
        coef[lres == n_res] = 1.0  # padding / infinite resources: any finite value
    else:
        coef = m
    if h > 1:
        lres, coef = _merge_duplicates(lres, coef, n_res)
    nnz = n * h
    idx_t = np.int32 if nnz < 2**31 - 1 else np.int64
    if n:
        indptr = np.arange(0, nnz + 1, h, dtype=idx_t)
        flat = lres.reshape(-1)
        if flat.dtype != idx_t:
            flat = flat.astype(idx_t)
        csr = sp.csr_array((np.ones(nnz, dtype=np.bool_), flat, indptr), shape=(n, n_res + 1))
        csc = csr.tocsc()
        del csr
        c_indptr = csc.indptr
        c_indices = csc.indices
        del csc
    else:
        c_indptr = np.zeros(n_res + 2, dtype=idx_t)
        c_indices = np.zeros(0, dtype=idx_t)
    ceps = 0.5 if coef is None or coef.size == 0 else 0.5 * float(coef.min())
    return _Index(flows, lres, coef, c_indptr, c_indices, n_res, ceps)


def _merge_duplicates(lres: np.ndarray, coef: np.ndarray | None, n_res: int):
    """Merge repeated resource ids within a row (their coefficients add up)."""
    n, h = lres.shape
    dup = None
    for j in range(1, h):
        col = lres[:, j]
        for i in range(j):
            d = (col == lres[:, i]) & (col != n_res)
            dup = d if dup is None else (dup | d)
    if dup is None or not dup.any():
        return lres, coef
    rows = np.flatnonzero(dup)
    if coef is None:
        w = np.ones((n, h))
    elif coef.ndim == 1:
        w = np.repeat(coef[:, None], h, axis=1)
    else:
        w = coef.copy()
    lres = lres.copy()
    for r in rows.tolist():  # rare path: only the rows that repeat a resource
        seen: dict[int, int] = {}
        for j in range(h):
            v = int(lres[r, j])
            if v == n_res:
                continue
            if v in seen:
                w[r, seen[v]] += w[r, j]
                lres[r, j] = n_res
            else:
                seen[v] = j
    return lres, w


# --------------------------------------------------------------------------- filling


@dataclass
class _FillState:
    rem: np.ndarray
    cnt: np.ndarray
    rate: np.ndarray
    bneck: np.ndarray
    saturated: np.ndarray


def _init_state(ix: _Index, cap: np.ndarray, alive: np.ndarray, fixed: np.ndarray | None = None,
                fixed_rate: np.ndarray | None = None) -> _FillState:
    """Counts of the alive flows; capacity reduced by the ``fixed`` flows' load."""
    n_res = ix.n_res
    r1 = n_res + 1
    rows = ix.res if alive.all() else ix.res[alive]
    if ix.coef is None:
        cnt = np.bincount(rows.reshape(-1), minlength=r1).astype(np.float64)
    else:
        cnt = np.bincount(rows.reshape(-1), weights=_entry_weights(ix.coef, alive if rows is not ix.res else None,
                                                                    rows.shape[1]), minlength=r1)
    rem = np.empty(r1)
    rem[:n_res] = cap
    rem[n_res] = _INF
    if fixed is not None and fixed.any():
        frows = ix.res[fixed]
        w = _entry_weights(ix.coef, fixed, frows.shape[1])
        fr = np.repeat(fixed_rate[fixed], frows.shape[1])
        w = fr if w is None else w * fr
        rem -= np.bincount(frows.reshape(-1), weights=w, minlength=r1)
        rem[n_res] = _INF
    cnt[n_res] = 0.0
    n = ix.size
    return _FillState(rem=rem, cnt=cnt, rate=np.zeros(n), bneck=np.full(n, -1, dtype=np.int64),
                      saturated=np.zeros(r1, dtype=np.bool_))


def _entry_weights(coef, sel, h):
    """Flattened per-entry coefficients of the rows ``sel`` (None if all 1)."""
    if coef is None:
        return None
    c = coef if sel is None else coef[sel]
    if c.ndim == 1:
        return np.repeat(c, h)
    return c.reshape(-1)


def _fill(ix: _Index, st: _FillState, alive: np.ndarray) -> int:
    """Progressive filling of the ``alive`` flows (modified in place).

    On return ``st.rate`` / ``st.bneck`` hold the rates and bottlenecks of the
    flows that were alive (others untouched), ``st.saturated`` marks the
    resources that froze at least one flow.  Returns the number of rounds.
    """
    n_res = ix.n_res
    r1 = n_res + 1
    rem, cnt, rate, bneck, sat = st.rem, st.cnt, st.rate, st.bneck, st.saturated
    res, coef, indptr, indices = ix.res, ix.coef, ix.indptr, ix.indices
    h = res.shape[1]
    ceps = ix.ceps
    weighted = coef is not None
    coef2d = weighted and coef.ndim == 2
    share = np.empty(r1)
    dead = np.empty(r1, dtype=np.bool_)
    stamp = np.empty(ix.size, dtype=np.int32)
    divide, copyto, bincount, less = np.divide, np.copyto, np.bincount, np.less
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        divide(rem, cnt, out=share)
        less(cnt, ceps, out=dead)
        copyto(share, _INF, where=dead)
        rounds = 0
        window = 1e-3
        while True:
            j0 = int(share.argmin())
            s0 = float(share[j0])
            if not s0 < _INF:
                break
            rounds += 1
            if s0 > 0.0:
                cand = np.flatnonzero(share <= s0 * (1.0 + window))
            else:
                cand = None
            if cand is None or cand.shape[0] == 1:
                # ---- one bottleneck resource
                fl = indices[indptr[j0]:indptr[j0 + 1]]
                fl = fl[alive[fl]]
                sv = s0 if s0 > 0.0 else 0.0
                if fl.shape[0]:
                    alive[fl] = False
                    rate[fl] = sv
                    bneck[fl] = j0
                    rows = res[fl].reshape(-1)
                    if weighted:
                        w = coef[fl]
                        w = w.reshape(-1) if coef2d else np.repeat(w, h)
                        dc = bincount(rows, weights=w, minlength=r1)
                    else:
                        dc = bincount(rows, minlength=r1)
                    cnt -= dc
                    rem -= dc * sv
                    sat[j0] = True
                rem[j0] = _INF
                cnt[j0] = 0.0
                window = min(window * 2.0, 0.25)
            else:
                # ---- several candidates in the window: freeze every local minimum
                sc = share[cand]
                order = np.argsort(sc, kind="stable")
                cand = cand[order]
                sc = sc[order]
                k = cand.shape[0]
                ng0 = int(np.searchsorted(sc, s0 * (1.0 + TIE_RTOL), side="right"))
                posv = np.arange(k, dtype=np.int32)
                posv[:ng0] = 0
                sc[:ng0] = s0
                starts = indptr[cand]
                lens = indptr[cand + 1] - starts
                fl = np.concatenate([indices[a:b] for a, b in zip(starts.tolist(), (starts + lens).tolist())])
                pidx = np.repeat(np.arange(k, dtype=np.int32), lens)
                m = alive[fl]
                fl = fl[m]
                pidx = pidx[m]
                p = posv[pidx]
                # smallest candidate position crossed by each gathered flow
                stamp[fl] = p
                mn = stamp[fl]
                multi = mn != p
                bad = np.zeros(k, dtype=np.bool_)
                if multi.any():
                    np.minimum.at(stamp, fl[multi], p[multi])
                    mn = stamp[fl]
                    bad[p[mn < p]] = True
                    sel = (p == mn) & ~bad[p]
                    ff = fl[sel]
                    pi = pidx[sel]
                else:
                    ff = fl
                    pi = pidx
                if ng0 > 1 and ff.shape[0]:
                    # a flow crossing several tied group-0 resources appears once per resource
                    ii = np.arange(ff.shape[0], dtype=np.int32)
                    stamp[ff] = ii
                    keep = stamp[ff] == ii
                    ff = ff[keep]
                    pi = pi[keep]
                acc = cand[~bad[posv]]
                if ff.shape[0]:
                    rr = sc[pi]
                    np.maximum(rr, 0.0, out=rr)
                    alive[ff] = False
                    rate[ff] = rr
                    bneck[ff] = cand[pi]
                    rows = res[ff].reshape(-1)
                    if weighted:
                        w = coef[ff]
                        if coef2d:
                            dc = bincount(rows, weights=w.reshape(-1), minlength=r1)
                            dr = bincount(rows, weights=(w * rr[:, None]).reshape(-1), minlength=r1)
                        else:
                            dc = bincount(rows, weights=np.repeat(w, h), minlength=r1)
                            dr = bincount(rows, weights=np.repeat(w * rr, h), minlength=r1)
                    else:
                        dc = bincount(rows, minlength=r1)
                        dr = bincount(rows, weights=np.repeat(rr, h), minlength=r1)
                    cnt -= dc
                    rem -= dr
                    sat[acc] = True
                rem[acc] = _INF
                cnt[acc] = 0.0
                na = acc.shape[0]
                if na == k:
                    window = min(window * 2.0, 0.25)
                elif 2 * na < k:
                    window *= 0.5
            divide(rem, cnt, out=share)
            less(cnt, ceps, out=dead)
            copyto(share, _INF, where=dead)
    return rounds


# --------------------------------------------------------------------------- public API


def _prepare(capacity_Bps, res, weight, multiplicity, active):
    cap = _check_capacity(capacity_Bps)
    res_a = _check_res(res, cap.shape[0])
    n_flows = res_a.shape[0]
    w = _check_weight(weight, res_a)
    m = _check_per_flow(multiplicity, n_flows, "multiplicity", positive=True)
    act = _check_active(active, n_flows)
    return cap, res_a, w, m, act


def _index_for(cap, res_a, w, m, flows):
    return _build_index(cap, res_a, w, m, flows)


def maxmin_rates(capacity_Bps: np.ndarray, res: np.ndarray, weight: np.ndarray | None = None, *,
                 multiplicity: np.ndarray | None = None, active: np.ndarray | None = None) -> MaxMinResult:
    """Max-min fair rates by exact progressive filling.

    Parameters
    ----------
    capacity_Bps : numpy.ndarray
        float64[R], capacity of each resource in bytes/s, > 0 (``np.inf`` allowed).
    res : numpy.ndarray
        int[F, h], resource ids crossed by each flow, -1 = padding.
    weight : numpy.ndarray, optional
        float64[F, h], fraction of the flow's rate carried on that resource
        (``None`` = 1.0 everywhere), > 0 where ``res >= 0``.
    multiplicity : numpy.ndarray, optional
        float[F] > 0: flow ``f`` stands for ``m_f`` identical member flows.
        The rate returned is per member flow.
    active : numpy.ndarray, optional
        bool[F]; inactive flows get rate 0 and use no capacity.

    Returns
    -------
    MaxMinResult
        ``rates_Bps`` (float64[F]), ``bottleneck`` (int64[F], -1 if none) and
        ``rounds``.

    Raises
    ------
    FlowError
        On malformed input (bad shapes, out-of-range ids, non-positive weights
        or capacities).

    Examples
    --------
    Three flows share link 0 (10 B/s); flow 2 also crosses link 1 (2 B/s):

    >>> import numpy as np
    >>> r = maxmin_rates(np.array([10.0, 2.0]), np.array([[0, -1], [0, -1], [0, 1]]))
    >>> r.rates_Bps.tolist(), r.bottleneck.tolist()
    ([4.0, 4.0, 2.0], [0, 0, 1])
    """
    cap, res_a, w, m, act = _prepare(capacity_Bps, res, weight, multiplicity, active)
    n_flows = res_a.shape[0]
    flows = None if act is None or act.all() else np.flatnonzero(act)
    ix = _index_for(cap, res_a, w, m, flows)
    alive = np.ones(ix.size, dtype=np.bool_)
    st = _init_state(ix, cap, alive)
    rounds = _fill(ix, st, alive)
    st.rate[alive] = _INF
    if flows is None:
        return MaxMinResult(rates_Bps=st.rate, bottleneck=st.bneck, rounds=rounds)
    rates = np.zeros(n_flows)
    bn = np.full(n_flows, -1, dtype=np.int64)
    rates[flows] = st.rate
    bn[flows] = st.bneck
    return MaxMinResult(rates_Bps=rates, bottleneck=bn, rounds=rounds)


def maxmin_refill(capacity_Bps: np.ndarray, res: np.ndarray, rates_Bps: np.ndarray, threshold_Bps: float,
                  weight: np.ndarray | None = None, *, multiplicity: np.ndarray | None = None,
                  active: np.ndarray | None = None) -> MaxMinResult:
    """Warm start: re-fill only the flows whose previous rate is ``>= threshold_Bps``.

    Exact when ``rates_Bps`` is the max-min allocation of a superset of the
    active flows and every departed flow had rate ``>= threshold_Bps``: then
    every remaining flow below the threshold keeps its rate (its bottleneck is
    saturated by flows of lower or equal rate, none of which left), and the
    flows at or above it are re-filled on the capacity the lower ones leave.

    Parameters
    ----------
    capacity_Bps, res, weight, multiplicity, active
        As in :func:`maxmin_rates`.
    rates_Bps : numpy.ndarray
        float64[F], the previous max-min rates.
    threshold_Bps : float
        Smallest rate among the departed flows.

    Returns
    -------
    MaxMinResult
        Rates of the active flows; ``bottleneck`` is -1 for flows kept below
        the threshold (their bottleneck is unchanged) and ``rounds`` counts the
        re-fill rounds only.

    Examples
    --------
    >>> import numpy as np
    >>> cap = np.array([10.0, 2.0]); res = np.array([[0, -1], [0, -1], [0, 1]])
    >>> r0 = maxmin_rates(cap, res).rates_Bps          # [4, 4, 2]
    >>> act = np.array([False, True, True])            # flow 0 (rate 4) leaves
    >>> maxmin_refill(cap, res, r0, 4.0, active=act).rates_Bps.tolist()
    [0.0, 8.0, 2.0]
    """
    cap, res_a, w, m, act = _prepare(capacity_Bps, res, weight, multiplicity, active)
    n_flows = res_a.shape[0]
    prev = _check_per_flow(rates_Bps, n_flows, "rates_Bps", positive=False) if np.isfinite(rates_Bps).all() \
        else np.asarray(rates_Bps, dtype=np.float64)
    flows = None if act is None or act.all() else np.flatnonzero(act)
    ix = _index_for(cap, res_a, w, m, flows)
    lp = prev if flows is None else prev[flows]
    fixed = lp < float(threshold_Bps) * (1.0 - TIE_RTOL)
    alive = ~fixed
    st = _init_state(ix, cap, alive, fixed=fixed, fixed_rate=lp)
    rounds = _fill(ix, st, alive)
    st.rate[alive] = _INF
    st.rate[fixed] = lp[fixed]
    if flows is None:
        return MaxMinResult(rates_Bps=st.rate, bottleneck=st.bneck, rounds=rounds)
    rates = np.zeros(n_flows)
    bn = np.full(n_flows, -1, dtype=np.int64)
    rates[flows] = st.rate
    bn[flows] = st.bneck
    return MaxMinResult(rates_Bps=rates, bottleneck=bn, rounds=rounds)
