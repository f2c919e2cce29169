"""Expert-parallel rows, round 7 (issue 8): pplx-kernels data, each check against its source."""

import tomllib
from pathlib import Path

import pytest

from collectives import TokenRouting
from collectives.validate import validate

DATA = Path(__file__).resolve().parents[1] / "collectives" / "data"

#: Byte columns of wufann/pplx-kernels 20250909_050703_all_to_all.tsv @ c360b49 (tokens -> Dispatch_bytes,
#: Combine_bytes), printed by its tests/bench_all_to_all.py: tokens x experts_per_token x the per-token bytes.
_H20_TSV_BYTES = {
    (256, 8, 7168): {1: (59136, 114688), 4: (236544, 458752), 8: (473088, 917504), 16: (946176, 1835008),
                     32: (1892352, 3670016), 64: (3784704, 7340032), 128: (7569408, 14680064)},
    (64, 6, 2048): {1: (12672, 24576), 4: (50688, 98304), 8: (101376, 196608), 16: (202752, 393216),
                    32: (405504, 786432), 64: (811008, 1572864), 128: (1622016, 3145728)},
}


def _rows(group: str) -> list[dict]:
    doc = tomllib.loads((DATA / "published_points.toml").read_text())
    return [p for p in doc["moe_alltoall"] if p.get("group") == group]


def test_h20_rows_are_fp8_dispatch_bf16_combine_as_their_byte_columns_say():
    """The H20 rows claim FP8 dispatch (one fp32 scale per 128 channels) and BF16 combine: the source's
    own byte columns must equal tokens x top-k x those per-token sizes for every shape and batch size
    (a BF16 dispatch would double the dispatch column)."""
    rows = _rows("wufann-pplx-kernels-h20-1node")
    assert len(rows) == 2
    for p in rows:
        assert p["settings"]["dispatch_dtype"] == "fp8" and p["settings"]["combine_dtype"] == "bf16"
        tr = TokenRouting("uniform", experts=p["experts"], topk=p["topk"], hidden=p["hidden"],
                          dispatch_dtype=p["settings"]["dispatch_dtype"])
        cols = _H20_TSV_BYTES[(p["experts"], p["topk"], p["hidden"])]
        assert [t for t, _, _ in p["tokens_dispatch_combine_latency_us"]] == sorted(cols)
        for tok, (d_bytes, c_bytes) in cols.items():
            assert tok * p["topk"] * tr.dispatch_bytes_per_token == d_bytes
            assert tok * p["topk"] * tr.combine_bytes_per_token == c_bytes


def test_pplx_rows_are_the_two_sides_of_one_timed_pair():
    """pplx-kernels' bench (tests/bench_all_to_all.py @ 7af3059 and @ c360b49) times dispatch e0 -> e1 and
    combine e1 -> e2 of the same sample: each row's dispatch and combine come from one table, one
    platform and one split; the README table's 1-token NVLink EP8 cells are 41.6 / 41.7 us."""
    readme = {p["id"]: p for p in _rows("pplx-kernels-h100")}
    assert (readme["pplx-h100-tok1-ep8"]["dispatch_latency_us"], readme["pplx-h100-tok1-ep8"]["combine_latency_us"]) \
        == (41.6, 41.7)
    assert {p["split"] for p in readme.values()} == {"heldout"}
    assert {p["split"] for p in _rows("wufann-pplx-kernels-h20-1node")} == {"heldout"}


@pytest.mark.xfail(strict=True, reason="issue 8 open: no fit-split data for pplx-kernels' 7af3059 IBGDA cost "
                                       "(docs/collectives.md, 'Round 7 (2026-12-02), EP kernels (pplx-kernels)')")
def test_pplx_ibgda_dispatch_at_128_tokens_falls_from_ep16_to_ep32():
    """README @ 2bd6e30 (table of 7af3059): the 128-token IBGDA dispatch falls 622.4 -> 427.6 -> 307.7 us from
    EP16 to EP32 to EP128 while the bytes each rank sends stay the same (128 x 8 token copies; the remote
    share grows). Strict xfail: it records the known miss and fails as soon as the model reproduces the
    fall, so that the marker goes with the fix."""
    ids = ["pplx-h100-tok128-ep16", "pplx-h100-tok128-ep32"]
    rows = {r.id: r.predicted for r in validate(DATA / "published_points.toml", ids=ids).rows}
    assert rows["pplx-h100-tok128-ep32:dispatch"] < 0.85 * rows["pplx-h100-tok128-ep16:dispatch"]
