"""Sweeps as a library: grids, normalisation, identity, the store, resume, the failure what-if."""

from __future__ import annotations

import os
import sqlite3

import pytest

from topologies.errors import SpecError
from workloads.sweep import (Store, StoreError, batches, each, expand, load_sweep_file, normalise, parse_grid,
                             plan_sweep, run_sweep)
from workloads.sweep.table import best_index, sort_rows, to_csv, with_baseline

FT = {"topo": "fat-tree", "hosts": 16, "radix": 8}


def test_cross_and_zip():
    axes = parse_grid(["routing=ecmp,spray,dmodk", "seed=0,1,2"])
    assert len(expand({"op": "all_to_all", **FT}, axes)) == 9
    zipped = expand({"op": "all_to_all", **FT}, axes, zipped=True)
    assert [(p["routing"], p["seed"]) for p in zipped] == [("ecmp", "0"), ("spray", "1"), ("dmodk", "2")]
    with pytest.raises(SpecError, match="same number of values"):
        expand({"op": "all_to_all"}, parse_grid(["routing=ecmp,spray", "seed=0,1,2"]), zipped=True)


def test_unknown_key_names_it():
    with pytest.raises(SpecError, match="sweep key 'colour'"):
        plan_sweep("all_to_all", FT, parse_grid(["colour=red,blue"]))
    with pytest.raises(SpecError, match="routing"):
        plan_sweep("all_to_all", FT, parse_grid(["routing=ecmp,teleport"]))
    with pytest.raises(SpecError, match="hosts"):
        plan_sweep("all_to_all", FT, parse_grid(["hosts=16,x"]))


def test_identity_is_normalised_and_versioned():
    a = normalise({"op": "all_reduce", **FT, "size": "1MiB", "routing": "AUTO"})
    b = normalise({"op": "all_reduce", "topo": "fat-tree", "hosts": "16", "radix": "8", "size": 1 << 20})
    c = normalise({"op": "all_reduce", **FT, "size": "2MiB"})
    assert a.point_id == b.point_id != c.point_id
    assert a.identity()["inputs"]["size"] == 1 << 20
    with pytest.raises(SpecError, match="'1MiB' and '1048576' are the same value"):  # round 6: refused
        plan_sweep("all_reduce", FT, parse_grid(["size=1MiB,1048576,2MiB"]))
    assert len(plan_sweep("all_reduce", FT, parse_grid(["size=1MiB,2MiB"])).points) == 2


def test_each_spine_matches_resolve():
    from fabric.compiled import compile_fabric
    from fabric.failures import resolve
    from topologies.clos import fat_tree

    cf = compile_fabric(fat_tree(hosts=64, radix=16))
    spines = each(cf, "spine")
    assert len(spines) == int((cf.node_role == 2).sum()) or len(spines) == 4
    links = [set(resolve(cf, s).tolist()) for s in spines]
    assert all(not (a & b) for i, a in enumerate(links) for b in links[i + 1:])   # disjoint
    assert each(cf, "leaf 3 spine") == [f"leaf 3 spine {i}" for i in range(len(spines))]
    with pytest.raises(SpecError):
        each(cf, "core")


def test_sweep_file(tmp_path):
    f = tmp_path / "s.toml"
    f.write_text('op = "all_to_all"\n[base]\ntopo = "fat-tree"\nhosts = 16\nradix = 8\nsize = "1MiB"\n'
                 '[grid]\nrouting = ["ecmp", "spray"]\n[zip]\nseed = [0, 1]\ntokens_x = [1, 2]\n')
    op, base, grid, zipa = load_sweep_file(str(f))
    assert op == "all_to_all" and grid == [("routing", ("ecmp", "spray"))]
    with pytest.raises(SpecError, match="tokens_x"):
        plan_sweep(op, base, grid, zipa)
    f.write_text('[base]\ntopo = "fat-tree"\n[grids]\nx = 1\n')
    with pytest.raises(SpecError, match="unknown key 'grids'"):
        load_sweep_file(str(f))


def test_batches_cover_every_point_once():
    pts = list(range(101))
    for w in (1, 2, 7):
        bs = batches(pts, w)
        assert sum(bs, []) == pts and max(map(len, bs)) <= 16


def test_store_resume_and_failed_points(tmp_path):
    db = str(tmp_path / "s.sqlite")
    plan = plan_sweep("all_to_all", {**FT, "size": "1MiB"}, parse_grid(["routing=ecmp,spray", "ranks=8,32"]))
    st = Store.open(db)
    out = run_sweep(plan, st)
    assert (out.done, out.failed) == (4, 2)          # 32 ranks > 16 GPUs: recorded, not fatal
    rows = st.rows()
    assert sorted(r["status"] for r in rows) == ["error", "error", "ok", "ok"]
    assert all("exceeds" in r["error"] for r in rows if r["status"] == "error")
    again = run_sweep(plan, st)
    assert (again.skipped, again.done) == (4, 0)
    retry = run_sweep(plan, st, retry_failed=True)
    assert (retry.skipped, retry.done, retry.failed) == (2, 2, 2)
    assert len(st.rows()) == 4
    st.close()
    mode = sqlite3.connect(db).execute("PRAGMA journal_mode").fetchone()[0]
    assert mode == "wal"


@pytest.mark.parametrize("content", [b"hello, not a database" * 50, b"SQLite format 3\x00" + bytes(range(256)) * 16])
def test_garbage_file_is_refused_and_untouched(tmp_path, content):
    p = tmp_path / "bad.sqlite"
    p.write_bytes(content)
    with pytest.raises(StoreError, match="refusing to touch it"):
        Store.open(str(p))
    assert p.read_bytes() == content and sorted(os.listdir(tmp_path)) == ["bad.sqlite"]


def test_foreign_sqlite_is_refused_and_untouched(tmp_path):
    p = tmp_path / "other.sqlite"
    con = sqlite3.connect(p)
    con.execute("CREATE TABLE users (name TEXT)")
    con.execute("INSERT INTO users VALUES ('ada')")
    con.commit()
    con.close()
    before = p.read_bytes()
    with pytest.raises(StoreError, match="not a fabric-emu sweep .*users"):
        Store.open(str(p))
    assert p.read_bytes() == before and sorted(os.listdir(tmp_path)) == ["other.sqlite"]


def test_failure_what_if_ranks_spines_as_the_closed_form(tmp_path):
    """Spray on a 16-host fat-tree (4 leaves x 4 hosts, 2 spines, 2 cables per leaf-spine, 50 GB/s).

    All-to-all of S bytes per rank: a leaf sends 4 hosts x 12 remote peers x S/16 = 3S up. With leaf 0's
    cables to spine 0 degraded to half, failing spine 0 leaves 2 full cables per leaf (1.5 S/c per cable),
    failing spine 1 leaves leaf 0 only its 2 half-speed cables (3S / 2 / (c/2) = 3 S/c): the worse failure.
    Intact, the hosts' own links bound the run at 15/16 S/c. (Ratios: the engine's bytes carry the
    transport's framing, the same factor on every link.)
    """
    S = 16 << 20
    plan = plan_sweep("all_to_all", {**FT, "size": S, "routing": "spray", "degrade": ["leaf 0 spine 0=50%"]},
                      parse_grid(["fail=none,each:spine"]))
    assert [p.fail for p in plan.points] == [(), ("spine 0",), ("spine 1",)]
    st = Store.open(str(tmp_path / "w.sqlite"))
    run_sweep(plan, st)
    rows = {r["fail"]: r for r in with_baseline(st.rows(), plan.swept_keys)}
    # both failures leave the fabric as the bottleneck (1.5 and 3 S/c against the hosts' 15/16 S/c divided by
    # the NICs' many-peer goodput), on links of the same transport: their bounds are exactly 1 : 2
    assert rows["spine 1"]["lower_bound_us"] == pytest.approx(2.0 * rows["spine 0"]["lower_bound_us"], rel=1e-6)
    assert rows["spine 0"]["lower_bound_us"] > rows["none"]["lower_bound_us"]
    ranked = [r["fail"] for r in sort_rows(list(rows.values()), "slowdown", reverse=True)]
    assert ranked == ["spine 1", "spine 0", "none"]
    assert rows["none"]["slowdown"] == 1.0 and rows["spine 1"]["slowdown"] > rows["spine 0"]["slowdown"] > 1.0
    assert rows["none"]["time_us"] >= rows["none"]["lower_bound_us"] * (1 - 1e-9)
    st.close()


def test_best_and_csv_columns(tmp_path):
    st = Store.open(str(tmp_path / "c.sqlite"))
    plan = plan_sweep("all_reduce", {**FT, "size": "4MiB"}, parse_grid(["algo=ring,tree"]))
    run_sweep(plan, st)
    rows = st.rows()
    b = best_index(rows, "busbw_GBps")
    assert rows[b]["busbw_GBps"] == max(r["busbw_GBps"] for r in rows)
    header = to_csv(rows, st.swept_keys()).splitlines()[0].split(",")
    assert header[:2] == ["point_id", "algo"] and "busbw_GBps" in header and "hosts" in header
    st.close()


def test_degrade_each_and_errors():
    plan = plan_sweep("all_to_all", {**FT, "size": "1MiB"}, parse_grid(["degrade=each:spine=50%"]))
    assert [p.degrade for p in plan.points] == [("spine 0=50%",), ("spine 1=50%",)]
    with pytest.raises(SpecError, match="each:SELECTOR=VALUE"):
        plan_sweep("all_to_all", {**FT, "size": "1MiB"}, parse_grid(["degrade=each:spine"]))
    with pytest.raises(SpecError, match="matches nothing|no core|there is no"):
        plan_sweep("all_to_all", {**FT, "size": "1MiB"}, parse_grid(["fail=each:core"]))
    with pytest.raises(SpecError, match="size"):
        plan_sweep("moe_dispatch", {**FT}, parse_grid(["size=1MiB,2MiB"]))


def test_shipped_sweep_files_plan(repo_root=os.path.dirname(os.path.dirname(os.path.abspath(__file__)))):
    import glob

    files = sorted(glob.glob(os.path.join(repo_root, "docs", "sweeps", "*.toml")))
    assert files
    for f in files:
        op, base, grid, zipa = load_sweep_file(f)
        plan = plan_sweep(op, base, grid, zipa)
        assert plan.points and len({p.point_id for p in plan.points}) == len(plan.points)
