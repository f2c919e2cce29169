"""Robustness round 6 (docs/robustness.md): library builders with bad counts.

Each case failed on the code before the round: NaN / infinity / None raised ``ValueError``,
``OverflowError`` or ``TypeError`` from ``int()`` (a traceback, not the project's exception tree),
``nvl(None)`` and ``nvl(True)`` built fabrics named ``nvlNone`` / ``nvlTrue``, ``fat_tree(2.5, 16)``
silently built 2 hosts, and ``fat_tree(16, 16, planes=10**30)`` did not finish.
"""
import pytest

import topologies as T
from topologies.errors import SpecError
from topologies.limits import whole_number

BAD = [float("nan"), float("inf"), None, True, 2.5, "16", [16]]


@pytest.mark.parametrize("bad", BAD)
@pytest.mark.parametrize("call, field", [
    (lambda b: T.fat_tree(b, 16), "hosts"),
    (lambda b: T.fat_tree(16, b), "radix"),
    (lambda b: T.fat_tree(16, 16, planes=b), "planes"),
    (lambda b: T.nvl(b), "n"),
    (lambda b: T.cluster("H100", b, "quantum-2"), "domains"),
    (lambda b: T.superpod("h100", b), "sus"),
])
def test_builders_refuse_counts_that_are_not_whole_numbers(call, field, bad):
    with pytest.raises(SpecError) as exc:
        call(bad)
    msg = str(exc.value)
    assert msg.startswith(f"{field}: ") and "whole number" in msg and "\n" not in msg


def test_planes_and_radix_are_bounded_in_the_library_as_in_set():
    with pytest.raises(SpecError, match="planes: .* <= 64"):
        T.fat_tree(16, 16, planes=10**30)
    with pytest.raises(SpecError, match="radix: .* <= 4096"):
        T.fat_tree(16, 10**30)


def test_whole_number_takes_numpy_integers():
    import numpy as np
    assert whole_number(np.int64(8), field="x") == 8 and T.nvl(np.int64(4)).graph["name"] == "nvl4-gb200"
