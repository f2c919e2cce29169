"""The whole-process path of round 12: in-place hashing, the router's own latency columns, no PXN lookups
without NVLink, and no MoE modules on a non-MoE run; each compared with the formulation it replaces."""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest

from fabric.compiled import compile_fabric
from fabric.hashing import ecmp_pick, flow_hash, splitmix64
from fabric.routing import Router
from topologies import build


def _old_splitmix64(x):
    """The finaliser as written before round 12 (a temporary per step)."""
    with np.errstate(over="ignore"):
        z = x.astype(np.uint64) + np.uint64(0x9E3779B97F4A7C15)
        z = (z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
        z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
        return z ^ (z >> np.uint64(31))


def _old_flow_hash(src, dst, salt, seed):
    with np.errstate(over="ignore"):
        x = (np.asarray(src).astype(np.uint64) * np.uint64(0x100000001B3)) \
            ^ (np.asarray(dst).astype(np.uint64) << np.uint64(21)) \
            ^ (np.asarray(salt).astype(np.uint64) * np.uint64(0xD6E8FEB86659FD93))
        return _old_splitmix64(x ^ np.uint64((seed * 1_000_003) & 0xFFFFFFFFFFFFFFFF))


def _old_ecmp_pick(h, hop, count):
    with np.errstate(over="ignore"):
        base = h if hop < 2 else _old_splitmix64(h ^ np.uint64(((hop // 2) * 0x9E3779B97F4A7C15)
                                                                & 0xFFFFFFFFFFFFFFFF))
        x = (base >> np.uint64(32)) if hop % 2 == 0 else (base & np.uint64(0xFFFFFFFF))
        return ((x * np.asarray(count).astype(np.uint64)) >> np.uint64(32)).astype(np.int64)


def test_in_place_hashing_gives_the_old_bits():
    rng = np.random.default_rng(7)
    src = rng.integers(-5, 1 << 40, 5000)
    dst = rng.integers(0, 1 << 20, 5000)
    salt = rng.integers(-(1 << 62), 1 << 62, 5000)
    edge = np.array([0, 1, -1, np.iinfo(np.int64).max, np.iinfo(np.int64).min])
    for x in (src, edge, edge.astype(np.uint64), np.array(3), np.uint64(5)):
        a, b = splitmix64(x), _old_splitmix64(np.asarray(x))
        assert np.asarray(a).dtype == np.uint64 and np.array_equal(a, b)
    x = src.copy()
    splitmix64(x)
    assert np.array_equal(x, src)  # the caller's array is never written
    for seed in (0, 1, 12345):
        h = flow_hash(src, dst, salt, seed)
        assert np.array_equal(h, _old_flow_hash(src, dst, salt, seed))
        assert np.array_equal(flow_hash(src, dst, 0, seed), _old_flow_hash(src, dst, 0, seed))
        for hop in (0, 1, 2, 3, 5, 99):
            cnt = rng.integers(1, 9, len(h))
            for c in (cnt, 4, np.int64(3)):
                assert np.array_equal(ecmp_pick(h, hop, c), _old_ecmp_pick(h, hop, c))
            assert np.array_equal(ecmp_pick(h[:1], hop, cnt[:, None]), _old_ecmp_pick(h[:1], hop, cnt[:, None]))
        assert int(ecmp_pick(h[0], 2, 7)) == int(_old_ecmp_pick(h[0], 2, 7))  # a scalar hash


def _all_pairs(n):
    r = np.arange(n)
    m = r[:, None] != r[None, :]
    return np.broadcast_to(r[:, None], m.shape)[m], np.broadcast_to(r[None, :], m.shape)[m]


@pytest.mark.parametrize("name,params,policy", [
    ("fat-tree", {"hosts": 64, "radix": 8}, "ecmp"),
    ("fat-tree", {"hosts": 64, "radix": 8}, "dmodk"),
    ("fat-tree", {"hosts": 64, "radix": 8}, "spray"),
    ("hgx-h100", {"domains": 4, "scaleout": "quantum-2"}, "ecmp"),
])
def test_route_latency_from_own_columns_equals_the_table_sum(name, params, policy):
    """The latency summed from the router's columns is, bit for bit, the table's sum (``_path_latency``),
    also when chunks have different widths (small chunks: same-leaf, cross-leaf and NVLink flows apart)."""
    r = Router(compile_fabric(build(name, params)), chunk_flows=97)
    s, d = _all_pairs(r.cf.n_gpus)
    order = np.argsort((s // 8 == d // 8) * 1 - (s < 4), kind="stable")  # blocks of one kind: widths differ
    s, d = s[order], d[order]
    for pxn in (False, "host"):
        routes = r.route(s, d, policy=policy, seed=3, pxn=pxn)
        assert np.array_equal(routes.latency_s, r._path_latency(routes.res, routes.weight))


def test_no_pxn_lookups_without_nvlink_routes_as_before():
    """A fabric with no NVLink domain: PXN cannot relay (the skipped lookups gave no relay), so the routes with
    ``pxn="host"`` or ``True`` are those without PXN, and no flow is marked as relayed."""
    r = Router(compile_fabric(build("fat-tree", {"hosts": 32, "radix": 8})))
    assert not r.domain_has_nvlink.any()
    s, d = _all_pairs(32)
    plain = r.route(s, d, policy="ecmp", seed=1, pxn=False)
    for pxn in ("host", True):
        got = r.route(s, d, policy="ecmp", seed=1, pxn=pxn)
        assert np.array_equal(got.res, plain.res) and np.array_equal(got.latency_s, plain.latency_s)
        assert not got.pxn.any()
    nv = Router(compile_fabric(build("hgx-h100", {"domains": 2, "scaleout": "quantum-2"})))  # NVLink domains: the relay still happens
    s, d = _all_pairs(16)
    assert nv.route(s, d, policy="ecmp", seed=1, pxn="host").pxn.any()


def test_a_non_moe_run_does_not_import_the_moe_model():
    code = ("import sys; from cli.main import main\n"
            "try:\n    main(['run', 'all_to_all', '--topo', 'fat-tree', '--set', 'hosts=8', '--set', 'radix=4', "
            "'--size', '1MiB', '--json'])\nexcept SystemExit as e:\n    assert not e.code, e.code\n"
            "print(sorted(m for m in ('collectives.moe', 'collectives.token_routing') if m in sys.modules), "
            "file=sys.stderr)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stderr.strip().splitlines()[-1] == "[]"


def test_dispatch_dtypes_one_vocabulary():
    from collectives import moe, ops
    assert moe.DISPATCH_DTYPES is ops.DISPATCH_DTYPES
