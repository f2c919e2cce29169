"""The compiled index build, column merge and reductions (fabric.index_kernels) give the numpy path's bits.

The thresholds of ``auto`` are parameters here (monkeypatched to 0 or beyond the problem), so small problems
run both paths; every comparison is ``np.array_equal``. The policy tests (default mode, no numba) run
without numba too.
"""

import json
import subprocess
import sys

import numpy as np
import pytest
from click.testing import CliRunner
from synthetic import leaf_spine

from fabric import adjacency, fill, kernels, reductions
from fabric.engine import FlowProblem, simulate
from fabric.problem import _Prob
from topologies.errors import SpecError


def _paths(monkeypatch, f):
    """``f()`` on the numpy path and under ``auto`` with every index kernel on (threshold 0)."""
    pytest.importorskip("numba")
    monkeypatch.setenv("FABRIC_EMU_KERNELS", "auto")
    out = []
    for thr in (1 << 62, 0):
        monkeypatch.setattr(kernels, "MIN_ENTRIES_INDEX", thr)
        monkeypatch.setattr(kernels, "MIN_ENTRIES_INDEX_LOADED", thr)
        out.append(f())
    return out


def _same(a, b):
    if isinstance(a, (tuple, list)):
        assert len(a) == len(b)
        for x, y in zip(a, b):
            _same(x, y)
    elif isinstance(a, np.ndarray):
        assert a.dtype == b.dtype and a.shape == b.shape and np.array_equal(a, b, equal_nan=a.dtype.kind == "f")
    else:
        assert a == b


def _rows(rng, F, R, h, dtype, pad=0.2, dup=False):
    res = rng.integers(0, R, (F, h))
    if not dup:  # distinct ids in a row (the router's paths), then padding
        res = np.argsort(rng.random((F, R)), axis=1)[:, :h] if R >= h else res
    res = np.where(rng.random((F, h)) < pad, -1, res)
    return res.astype(dtype)


@pytest.mark.parametrize("dtype", [np.int16, np.int32, np.int64])
def test_csc_is_identical(monkeypatch, dtype):
    rng = np.random.default_rng(1)
    res = _rows(rng, 700, 50, 4, dtype, dup=True)
    coef = rng.uniform(0.5, 2.0, res.shape)
    _same(*_paths(monkeypatch, lambda: adjacency._csc(res, 50)))
    _same(*_paths(monkeypatch, lambda: adjacency._csc(res, 50, coef)))
    _same(*_paths(monkeypatch, lambda: adjacency._csc(res[:0], 50)))


@pytest.mark.parametrize("block", [1, 7, 64])
def test_csc_in_parallel_blocks_is_identical(monkeypatch, block):
    """The two-pass build over blocks of flows (numba.prange) writes the sequential build's arrays."""
    pytest.importorskip("numba")
    from fabric import index_kernels

    rng = np.random.default_rng(11)
    res = _rows(rng, 517, 40, 5, np.int16, dup=True)
    coef = rng.uniform(0.5, 2.0, res.shape)
    monkeypatch.setenv("FABRIC_EMU_KERNELS", "numpy")
    want = adjacency._csc(res, 40, coef)
    monkeypatch.setattr(index_kernels, "CSC_BLOCK", block)
    _same(want, index_kernels.csc(res, 40, coef))
    _same(want[:2], index_kernels.csc(res, 40))
    # the other parallel passes: duplicate test, presence bits
    clean = _rows(rng, 517, 40, 5, np.int16)
    monkeypatch.setattr(index_kernels, "BLOCK", 1 << 40)
    want = [index_kernels.has_duplicates(res), index_kernels.has_duplicates(clean), index_kernels.presence(res, 40)]
    monkeypatch.setattr(index_kernels, "BLOCK", block)
    got = [index_kernels.has_duplicates(res), index_kernels.has_duplicates(clean), index_kernels.presence(res, 40)]
    assert want[:2] == got[:2] == [True, False]
    _same(want[2], got[2])
    _same(index_kernels.take_columns(res, [0, 2, 3]), np.take(res, [0, 2, 3], axis=1))


@pytest.mark.parametrize("coef", ["none", "1d", "2d"])
def test_duplicates_merge_identically(monkeypatch, coef):
    rng = np.random.default_rng(2)
    res = _rows(rng, 400, 6, 5, np.int32, dup=True)
    c = {"none": None, "1d": rng.uniform(1, 3, 400), "2d": rng.uniform(0.1, 1.0, res.shape)}[coef]
    a, b = _paths(monkeypatch, lambda: (adjacency._has_duplicates(res), adjacency._merge_duplicates(res, c)))
    assert a[0] is True
    _same(a, b)
    clean = _rows(rng, 300, 40, 4, np.int16)
    assert _paths(monkeypatch, lambda: adjacency._has_duplicates(clean)) == [False, False]


@pytest.mark.parametrize("case", range(6))
def test_build_index_is_identical(monkeypatch, case):
    """Weights (2-D coefficients), multiplicities (1-D), repeated ids, -1 padding and flow subsets."""
    rng = np.random.default_rng(10 + case)
    F, R, h = 500, 30, 4
    res = _rows(rng, F, R, h, np.int32, dup=case % 2 == 0)
    w = np.where(res >= 0, rng.choice([1 / 3, 0.5, 1.0, 0.7], (F, h)), 0.0) if case in (0, 1, 4) else None
    m = rng.choice([1.0, 2.0, 5.0], F) if case in (2, 3, 4) else None
    flows = np.flatnonzero(rng.random(F) < 0.7) if case >= 3 else None

    sel = np.flatnonzero(rng.random(F) < 0.5)

    def build():
        ix = fill.build_index(res, w, m, R, flows)
        sub = fill.sub_index(ix, sel[sel < ix.size])
        return [(x.res, x.coef, x.indptr, x.indices, x.ecoef, x.ceps) for x in (ix, sub)]

    _same(*_paths(monkeypatch, build))


def test_reductions_are_identical(monkeypatch):
    rng = np.random.default_rng(4)
    for trial in range(8):
        F, R, h = int(rng.integers(1, 900)), int(rng.integers(1, 60)), int(rng.integers(1, 7))
        res = _rows(rng, F, R, h, [np.int16, np.int32, np.int64][trial % 3], dup=trial % 2 == 1)
        v = rng.lognormal(0, 3, F)  # wide range: additions round
        w = rng.uniform(0.1, 3.0, (F, h)) if trial % 2 else None
        if trial == 5:
            v[::7] = np.nan
        _same(*_paths(monkeypatch, lambda: reductions._slot_sum(res, v, w, R)))
        if trial % 4 == 1:  # hop columns summed in parallel (each in flow order)
            from fabric import index_kernels

            monkeypatch.setattr(index_kernels, "BLOCK", max(1, F // 3))
            _same(_paths(monkeypatch, lambda: reductions._slot_sum(res, v, w, R))[0],
                  index_kernels.slot_sum(res, v, w, R))
            monkeypatch.undo()
        with np.errstate(invalid="ignore"):
            _same(*_paths(monkeypatch, lambda: reductions._slot_max(res, v, R)))


def test_a_broadcast_constant_is_read_once_per_flow(monkeypatch):
    """Equal sizes given as np.broadcast_to (stride 0, as the flow sets build them): the compiled sums and the
    one-solve tail read element 0 (no F-sized copy) and give the bits of the materialised array."""
    rng = np.random.default_rng(12)
    res = _rows(rng, 300, 20, 4, np.int16)
    v = np.broadcast_to(np.float64(3.7e6), (300,))
    w = rng.uniform(0.1, 3.0, res.shape)
    for weight in (None, w):
        a, b = _paths(monkeypatch, lambda: reductions._slot_sum(res, v, weight, 20))
        _same(a, b)
        _same(a, reductions._slot_sum(res, np.array(v), weight, 20))
    cap = rng.uniform(1e9, 4e9, 20)
    p = FlowProblem(capacity_Bps=cap, res=res, size_bytes=v)
    a, b = _paths(monkeypatch, lambda: simulate(p))
    c = simulate(FlowProblem(capacity_Bps=cap, res=res, size_bytes=np.array(v)))
    assert a.mode_used == "one-solve"
    for f in ("finish_s", "transfer_end_s", "resource_bytes", "resource_busy_s"):
        _same(getattr(a, f), getattr(b, f))
        _same(getattr(a, f), getattr(c, f))


def _with_twin_columns(rng, F, R, weighted, broken=None):
    """Six-hop rows whose columns 1 and 2 carry the same flows (resource u and u + R/2, as the router's
    host link beside the NIC port) unless ``broken`` names how to spoil it."""
    half = R // 2
    u = rng.integers(0, half // 2, F)
    res = np.stack([rng.integers(half // 2, half, F), u, u + half, rng.integers(half // 2, half, F)], axis=1)
    res[:, 3] = np.where(res[:, 3] == res[:, 0], -1, res[:, 3])
    if broken == "map":  # two flows with the same resource in column 1 and different ones in column 2
        k = int(np.flatnonzero(res[1:, 1] == res[0, 1])[0]) + 1
        res[k, 2] = half + (res[0, 2] - half + 1) % half
    if broken == "pad":
        res[3, 2] = -1
    w = None
    if weighted:
        w = np.where(res >= 0, 0.5, 0.0)
        if broken == "weight":
            w[4, 2] = 0.25
    cap = rng.choice([1.0, 2.0, 4.0], R)
    return res.astype(np.int16), w, cap


@pytest.mark.parametrize("broken", [None, "map", "pad", "weight"])
def test_column_merge_is_identical(monkeypatch, broken):
    rng = np.random.default_rng(5)
    res, w, cap = _with_twin_columns(rng, 600, 40, weighted=broken == "weight" or broken is None, broken=broken)
    p = FlowProblem(capacity_Bps=cap, res=res, weight=w, size_bytes=np.ones(len(res)))

    def merged():
        r = reductions._reduce_columns(_Prob(p))
        return r.res, r.weight, r.cap, r.rep

    a, b = _paths(monkeypatch, merged)
    _same(a, b)
    assert (a[0].shape[1] == 3) == (broken is None)  # the twin column is merged only when it is one


@pytest.mark.parametrize("case", ["runs", "interleaved", "padded", "shared", "one", "many", "nan"])
def test_size_classes_are_identical(monkeypatch, case):
    """The compiled labelling of the size classes (fabric.index_kernels.size_classes) gives the numpy path's
    index arrays; the split simulation's results are bit-identical, the classes' rows taken as views or not,
    a class's all-padding hop columns dropped or not."""
    from fabric import decompose

    rng = np.random.default_rng(8)
    F = 300
    res = np.concatenate([_rows(rng, 100, 20, 3, np.int32), _rows(rng, 200, 20, 3, np.int32) + 20])
    res[res == 19] = -1  # padding (-1 + 20 = 19 in the second block)
    sizes = np.r_[np.full(100, 7.0), np.full(200, 3.0)]
    if case == "interleaved":
        perm = rng.permutation(F)
        res, sizes = res[perm], sizes[perm]
    elif case == "padded":  # the larger class has entries in column 0 only, the other in columns 0 and 2
        res[:100, 1:] = -1
        res[100:, 1] = -1
    elif case == "shared":
        res[150, 0] = 5  # a resource of the first class in a flow of the second
    elif case == "one":
        sizes[:] = 3.0
    elif case == "many":
        sizes = np.arange(F, dtype=np.float64)
    elif case == "nan":
        sizes[7] = np.nan
    p = FlowProblem(capacity_Bps=rng.uniform(1, 5, 40), res=res, size_bytes=sizes,
                    latency_s=rng.uniform(1e-6, 2e-6, F), resource_weight=rng.choice([1.0, 1.25], 40))
    a, b = _paths(monkeypatch, lambda: decompose.independent_size_classes(p))
    assert (a is None) == (case in ("shared", "one", "many", "nan"))
    if a is None:
        assert b is None
        return
    _same(a, b)
    assert [len(c) for c in a] == [200, 100]  # by increasing size
    x, y = _paths(monkeypatch, lambda: decompose.simulate_split(p))
    for f in ("start_s", "finish_s", "transfer_end_s", "resource_bytes", "resource_busy_s"):
        _same(getattr(x, f), getattr(y, f))
    # each class alone, on copies of its rows
    ref = [simulate(FlowProblem(capacity_Bps=p.capacity_Bps, res=res[rows], size_bytes=sizes[rows],
                                latency_s=p.latency_s[rows], resource_weight=p.resource_weight)) for rows in a]
    for rows, r in zip(a, ref):
        assert np.array_equal(x.finish_s[rows], r.finish_s)
        assert np.array_equal(x.transfer_end_s[rows], r.transfer_end_s)
        assert np.array_equal(decompose._sub(p, rows).res, res[rows])
    assert np.array_equal(x.resource_bytes, ref[0].resource_bytes + ref[1].resource_bytes)
    assert np.array_equal(x.resource_busy_s, ref[0].resource_busy_s + ref[1].resource_busy_s)
    # each class uses at most half the resources: it was solved on its own (renumbered) resources
    owner = decompose._size_classes(p, 16)[2]
    for c, rows in enumerate(a):
        used = decompose._compact(decompose._sub(p, rows), owner, c)[1]
        assert np.array_equal(used, np.unique(res[rows][res[rows] >= 0]))
    if case == "padded":
        cols = decompose._size_classes(p, 16)[1]
        assert cols.tolist() == [[True, False, True], [True, False, False]]
        assert decompose._sub(p, a[1], cols[1]).res.shape == (100, 1)


@pytest.mark.parametrize("mode,lat", [("auto", True), ("auto", False), ("exact", True)])
def test_simulation_is_identical(monkeypatch, mode, lat):
    """One-solve (the compiled tail: rates, transfer ends, finishes, busy maxima) and the exact loop."""
    cap, res = leaf_spine(32, hpl=8, spines=4, seed=3)
    rng = np.random.default_rng(6)
    size = np.full(res.shape[0], 1e3) if mode == "auto" else rng.lognormal(7, 1, res.shape[0])
    rw = rng.choice([1.0, 1.05, 1.1], cap.shape[0])
    cap[rng.random(cap.shape[0]) < 0.05] = np.inf  # some flows cross no finite resource: infinite rate
    p = FlowProblem(capacity_Bps=cap, res=res, size_bytes=size, resource_weight=rw,
                    latency_s=rng.uniform(1e-6, 2e-6, res.shape[0]) if lat else None)
    a, b = _paths(monkeypatch, lambda: simulate(p, mode=mode))
    from fabric import index_kernels

    monkeypatch.setattr(index_kernels, "BLOCK", 97)  # the parallel passes over blocks of flows
    monkeypatch.setattr(index_kernels, "CSC_BLOCK", 101)
    c = simulate(p, mode=mode)
    for f in ("finish_s", "transfer_end_s", "resource_bytes", "resource_busy_s"):
        _same(getattr(a, f), getattr(b, f))
        _same(getattr(a, f), getattr(c, f))
    assert (a.mode_used, a.rounds, a.events) == (b.mode_used, b.rounds, b.events) == (c.mode_used, c.rounds, c.events)


@pytest.mark.parametrize("args", [
    ["run", "all_to_all", "--topo", "fat-tree", "--set", "hosts=64", "--set", "radix=8", "--size", "4MiB",
     "--routing", "ecmp", "--seed", "3"],
    ["run", "all_to_all", "--topo", "fat-tree", "--set", "hosts=64", "--set", "radix=8", "--size", "4MiB",
     "--routing", "spray", "--fail", "spine 1"],
    ["run", "moe_dispatch", "--topo", "fat-tree", "--set", "hosts=32", "--set", "radix=8", "--moe-routing",
     "skewed", "--experts", "32", "--seed", "1"],
])
def test_cli_json_is_byte_identical(monkeypatch, args):
    from cli.app import cli

    def run():
        r = CliRunner().invoke(cli, args + ["--json"], catch_exceptions=False)
        assert r.exit_code == 0, r.output
        return r.output

    a, b = _paths(monkeypatch, run)
    assert a == b
    json.loads(a)


# --------------------------------------------------------------------------- policy (with or without numba)


def test_default_mode_is_auto_and_numpy_turns_everything_off(monkeypatch):
    monkeypatch.delenv("FABRIC_EMU_KERNELS", raising=False)
    assert kernels.mode() == "auto"
    assert kernels.MIN_ENTRIES_INDEX_LOADED <= kernels.MIN_ENTRIES_INDEX
    assert not kernels.use_index(kernels.MIN_ENTRIES_INDEX_LOADED - 1)
    assert kernels.use_index(kernels.MIN_ENTRIES_INDEX) == kernels.available()
    assert not kernels.use_compiled(1 << 40, None)  # a kernel without a threshold: never under auto
    monkeypatch.setenv("FABRIC_EMU_KERNELS", "numpy")
    assert not kernels.use_compiled(1 << 40, 0)
    monkeypatch.setenv("FABRIC_EMU_KERNELS", "bogus")  # robustness round 8: refused (it was read as auto)
    with pytest.raises(SpecError, match="FABRIC_EMU_KERNELS"):
        kernels.mode()


def test_without_numba_every_path_runs_numpy(monkeypatch):
    """numba missing: ``auto`` and ``numba`` fall back to the numpy code, nothing imports numba."""
    monkeypatch.setitem(kernels._STATE, "numba", False)
    monkeypatch.setattr(kernels, "MIN_ENTRIES_INDEX", 0)
    monkeypatch.setattr(kernels, "MIN_ENTRIES_INDEX_LOADED", 0)
    cap, res = leaf_spine(16, hpl=4, spines=2, seed=1)
    p = FlowProblem(capacity_Bps=cap, res=res, size_bytes=np.full(res.shape[0], 1e3))
    for m in ("auto", "numba"):
        monkeypatch.setenv("FABRIC_EMU_KERNELS", m)
        assert not kernels.use_compiled(1 << 40, 0) and not kernels.use_index(1 << 40)
        r = simulate(p)
        assert r.mode_used == "one-solve" and np.isfinite(r.finish_s).all()


def test_a_process_without_numba_runs_the_cli(monkeypatch, repo):
    """numba not importable, every threshold 0: the CLI gives the numpy path's JSON (FABRIC_EMU_KERNELS=numpy)."""
    args = ["run", "all_to_all", "--topo", "fat-tree", "--set", "hosts=16", "--set", "radix=4", "--size", "1MiB",
            "--json"]
    code = ("import sys; sys.modules['numba'] = None\n"
            "from fabric import kernels; kernels.MIN_ENTRIES_INDEX = kernels.MIN_ENTRIES_INDEX_LOADED = 0\n"
            "from click.testing import CliRunner; from cli.app import cli\n"
            f"r = CliRunner().invoke(cli, {args!r}, catch_exceptions=False)\n"
            "assert r.exit_code == 0, r.output\n"
            "assert not kernels.available() and 'fabric.index_kernels' not in sys.modules\n"
            "sys.stdout.write(r.output)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=False, cwd=repo,
                         env={"FABRIC_EMU_KERNELS": "auto", "PATH": "", "PYTHONPATH": str(repo)})
    assert out.returncode == 0, out.stderr
    from cli.app import cli

    monkeypatch.setenv("FABRIC_EMU_KERNELS", "numpy")
    ref = CliRunner().invoke(cli, args, catch_exceptions=False).output
    assert out.stdout == ref and json.loads(ref)[0]["time_us"] > 0


def test_the_duplicate_test_compares_only_the_column_pairs_that_share_resources(monkeypatch):
    """The duplicate test reads only the column pairs whose resources intersect (fails on the old code, which
    had no pair list and compared every pair): a repeat in such a pair is found on both paths, no pair means
    no repeat, and the index built with the pairs is the one built without them."""
    rng = np.random.default_rng(5)
    F, R = 5000, 60
    res = np.stack([rng.integers(0, 20, F), rng.integers(20, 40, F), rng.integers(20, 60, F)], axis=1)
    res = res.astype(np.int32)
    res[rng.random(res.shape) < 0.05] = -1
    present = np.zeros((3, R), bool)
    for j in range(3):
        present[j, res[res[:, j] >= 0, j]] = True
    pairs = adjacency.overlapping_pairs(present)
    assert pairs.tolist() == [[2, 1]]  # column 0 shares nothing
    has = [(res[:, 2] == res[:, 1]) & (res[:, 1] >= 0)]
    assert has[0].any()
    a, b = _paths(monkeypatch, lambda: (adjacency._has_duplicates(res, pairs), adjacency._has_duplicates(res)))
    assert a == b == (True, True)
    clean = res.copy()
    clean[has[0], 2] = -1
    a, b = _paths(monkeypatch, lambda: adjacency._has_duplicates(clean, pairs))
    assert a is b is False
    assert not adjacency._has_duplicates(res, np.zeros((0, 2), np.int64))
    for p in (pairs, None):
        ix, iy = _paths(monkeypatch, lambda: adjacency.build_index(res, None, None, R, None, pairs=p))
        ref = adjacency.build_index(res, None, None, R, None)
        for x in (ix, iy):
            _same((x.indptr, x.indices, x.res, x.coef), (ref.indptr, ref.indices, ref.res, ref.coef))
