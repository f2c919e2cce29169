"""The step estimator's calibration table is what the fit on the fit split gives today.

Collective-model changes move the step's communication, so the fitted constants must be refitted
with them (``python -m benchmarks.fit_step``); this test fails when the table and the fit drift apart.
"""

from __future__ import annotations

import pytest

from workloads.step import FRAMEWORK_OVERHEAD, TRAINING_EFFICIENCY
from workloads.training_validate import fit_constants


def test_table_equals_the_fit_on_the_fit_split():
    """The table holds the fit rounded to its printed digits (3 decimals; microseconds)."""
    out = fit_constants()
    for gpu, eff in out["training_efficiency"].items():
        assert TRAINING_EFFICIENCY[gpu] == pytest.approx(eff, abs=5e-4 + 1e-9), gpu
    for gpu, t in out["framework_overhead_s"].items():
        assert FRAMEWORK_OVERHEAD[gpu] == pytest.approx(t, abs=5e-7 + 1e-12), gpu
