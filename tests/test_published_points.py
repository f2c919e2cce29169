"""The published validation points (collectives/data/published_points.toml) and their fit / held-out split.

These tests check the data file only (schema, units, the split rule); they do not run any model.
"""

import hashlib
import tomllib
from collections import Counter, defaultdict
from importlib import resources
from pathlib import Path

import pytest

PATH = Path(str(resources.files("collectives") / "data" / "published_points.toml"))
CATEGORIES = ("nvlink", "multinode", "nvl72", "ep", "host")
MAIN = ("nvlink", "multinode", "nvl72", "ep")
SPLIT_SALT = "fabric-emu/issue-8/split-v1:"


def split_coin(group: str) -> str:
    """The seeded coin of rule 3 (docs/validation-data.md): "heldout" iff sha256(salt + group)[0] < 128."""
    return "heldout" if hashlib.sha256((SPLIT_SALT + group).encode()).digest()[0] < 128 else "fit"
SWEEPS = ("sizes_and_busbw_GBps", "ranks_and_busbw_GBps", "algorithms_and_busbw_GBps",
          "ranks_algorithms_and_busbw_GBps")
ALGORITHMS = {"ring", "tree", "nvls", "sharp", "hier", "direct", "auto", "pat"}
COLLECTIVES = {"all_reduce", "all_gather", "reduce_scatter", "all_to_all", "send_recv", "broadcast"}


def _points():
    doc = tomllib.loads(PATH.read_text())
    return [(kind, p) for kind in ("collective", "moe_alltoall", "host_copy") for p in doc.get(kind, [])]


def _values(kind, p):
    """Every measured number of a point (one per validation row)."""
    if kind == "collective":
        if "busbw_GBps" in p:
            return [p["busbw_GBps"]]
        [key] = [k for k in SWEEPS if k in p]
        return [row[-1] for row in p[key]]
    if kind == "moe_alltoall":
        for key in ("ep_dispatch_combine_GBps", "tokens_dispatch_combine_GBps", "tokens_dispatch_combine_latency_us"):
            if key in p:  # one sweep row = (ep or tokens, dispatch, combine); bandwidth and latency count once
                return [v for row in p[key] for v in row[1:]]
        # bandwidth and latency of one kernel are one measurement: count the bandwidth, else the latency
        return [p[k] for k in ("dispatch_GBps", "combine_GBps") if k in p] or \
            [p[k] for k in ("dispatch_latency_us", "combine_latency_us") if k in p]
    return [p[k] for k in ("h2d_GBps", "d2h_GBps") if k in p]


POINTS = _points()


def test_file_parses_and_is_not_empty():
    assert len(POINTS) >= 25


def test_ids_unique_and_required_fields():
    ids = Counter(p["id"] for _, p in POINTS)
    assert [i for i, c in ids.items() if c > 1] == []
    for _, p in POINTS:
        for key in ("id", "category", "group", "split", "system", "source"):
            assert isinstance(p.get(key), str) and p[key], (p.get("id"), key)
        assert p["split"] in ("fit", "heldout"), p["id"]
        assert p["category"] in CATEGORIES, p["id"]
        assert isinstance(p.get("consistency", False), bool), p["id"]
        assert isinstance(p.get("settings", {}), dict), p["id"]


@pytest.mark.parametrize("kind,p", POINTS, ids=[p["id"] for _, p in POINTS])
def test_values_positive_and_sizes_integer(kind, p):
    vals = _values(kind, p)
    assert vals, p["id"]
    extra = [p[k] for k in ("dispatch_latency_us", "combine_latency_us", "raw_GBps", "size_bytes") if k in p]
    for v in vals + extra:
        assert isinstance(v, (int, float)) and not isinstance(v, bool) and v > 0, (p["id"], v)
    if kind == "collective":
        assert p["collective"] in COLLECTIVES
        if "size_bytes" in p:
            assert isinstance(p["size_bytes"], int) and p["size_bytes"] > 0
        if "sizes_and_busbw_GBps" in p:
            sizes = [s for s, _ in p["sizes_and_busbw_GBps"]]
            assert all(isinstance(s, int) and s > 0 for s in sizes) and sizes == sorted(set(sizes))
        for row in p.get("algorithms_and_busbw_GBps", []) + [[p.get("algorithm", "auto")]]:
            assert row[0] in ALGORITHMS, (p["id"], row)
        for key in ("ranks", "domains", "gpus_per_domain"):
            if key in p:
                assert isinstance(p[key], int) and p[key] >= 1
    if kind == "moe_alltoall":
        assert "ep" in p or "ep_dispatch_combine_GBps" in p
        assert p.get("metric") in ("logical", "rdma", "nccl_ep", "latency", "trtllm_logical"), p["id"]
        for key in ("tokens_dispatch_combine_GBps", "tokens_dispatch_combine_latency_us"):
            for row in p.get(key, []):
                assert isinstance(row[0], int) and row[0] > 0 and all(v > 0 for v in row[1:]), (p["id"], row)
        if "tokens_dispatch_combine_GBps" in p and "tokens_dispatch_combine_latency_us" in p:
            assert [r[0] for r in p["tokens_dispatch_combine_GBps"]] == \
                [r[0] for r in p["tokens_dispatch_combine_latency_us"]], p["id"]
        if p["metric"] == "latency":  # one EP group's times (one kernel where the source has only that one),
            # or a batch-size sweep of them
            assert "dispatch_latency_us" in p or "combine_latency_us" in p or \
                "tokens_dispatch_combine_latency_us" in p, p["id"]


def test_a_group_is_one_setup_on_one_side():
    by_group = defaultdict(set)
    for _, p in POINTS:
        by_group[p["group"]].add((p["split"], p["category"]))
    assert {g: s for g, s in by_group.items() if len(s) > 1} == {}


def test_split_follows_the_declared_rule():
    """Prior-use groups are fit; any other group is held out iff sha256(salt + group)[0] < 128."""
    for _, p in POINTS:
        if p.get("prior_use"):
            expected = "fit"
        else:
            expected = split_coin(p["group"])
        assert p["split"] == expected, (p["id"], p["group"])


def test_held_out_set_is_large_and_spans_every_category():
    held = Counter()
    fit = Counter()
    for kind, p in POINTS:
        if p.get("consistency"):
            continue
        n = len(_values(kind, p))
        (held if p["split"] == "heldout" else fit)[p["category"]] += n
    assert sum(held.values()) >= 30, held
    for cat in MAIN:
        assert held[cat] >= 6 and fit[cat] >= 1, (cat, held, fit)


def test_current_counts_table_in_the_docs_matches_the_data_file():
    """docs/validation-data.md "Current counts" is generated from the data file: it must say what the file holds."""
    text = (Path(__file__).resolve().parents[1] / "docs" / "validation-data.md").read_text()
    table = text.split("### Current counts", 1)[1].split("###", 1)[0]
    doc = {}
    for line in table.splitlines():
        cells = [c.strip().strip("*") for c in line.strip().strip("|").split("|")]
        if len(cells) == 3 and cells[1].isdigit():
            doc[cells[0]] = (int(cells[1]), int(cells[2]))
    counts = Counter()
    for kind, p in POINTS:
        counts[(p["category"], p["split"])] += len(_values(kind, p))
    want = {c: (counts[(c, "fit")], counts[(c, "heldout")]) for c in sorted({c for c, _ in counts})}
    want["all"] = (sum(v for (_, s), v in counts.items() if s == "fit"),
                   sum(v for (_, s), v in counts.items() if s == "heldout"))
    assert doc == want
