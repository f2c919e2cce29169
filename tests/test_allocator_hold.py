"""The MoE token draw holds freed memory (fabric.allocator.hold_freed_memory; docs/performance.md round 14)."""

import os
import platform
import subprocess
import sys

import numpy as np


def _glibc() -> bool:
    return sys.platform.startswith("linux") and platform.libc_ver()[0] == "glibc"


def test_hold_freed_memory_threshold_opt_out_and_idempotent():
    code = ("from fabric.allocator import hold_freed_memory as h, MIN_ENTRIES as m; "
            "print(h(entries=m - 1), h(entries=m), h(entries=0))")  # once held, it stays held
    env = {k: v for k, v in os.environ.items() if k != "FABRIC_EMU_MALLOC"}
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, check=True).stdout
    on = str(_glibc())
    assert out.split() == ["False", on, on]
    env["FABRIC_EMU_MALLOC"] = "system"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, check=True).stdout
    assert out.split() == ["False", "False", "False"]


def test_large_token_draw_holds_freed_memory_with_the_same_counts(monkeypatch):
    from collectives import moe

    tr = moe.TokenRouting("skewed", experts=64, seed=3)
    node_of = np.arange(64) // 8
    ref = moe._route_tokens(tr, 64, node_of)
    calls = []
    monkeypatch.setattr(moe, "hold_freed_memory", lambda *, entries: calls.append(entries) or True)
    got = moe._route_tokens(tr, 64, node_of)
    # the draw asks for the hold with its selection count (ranks x tokens x topk) and its counts do not change
    assert calls == [64 * tr.tokens_per_rank * tr.topk]
    for a, b in ((ref.rank_counts, got.rank_counts), (ref.node_counts, got.node_counts),
                 (ref.copy_counts, got.copy_counts)):
        np.testing.assert_array_equal(a, b)
