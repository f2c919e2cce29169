"""Refit the step-time estimator's calibration on the fit split and print it as JSON.

Run: ``python -m benchmarks.fit_step``. The printed ``training_efficiency`` and
``framework_overhead_s`` go into ``workloads.step.TRAINING_EFFICIENCY`` and
``workloads.step.FRAMEWORK_OVERHEAD`` (docs/steptime.md §5 records the current fit and its data).
"""

from __future__ import annotations

import json
import sys

from workloads.training_validate import fit_constants


def main() -> None:
    out = fit_constants(progress=lambda i, k, n: print(f"[{k}/{n}] {i}", file=sys.stderr))
    print(json.dumps(out, indent=2))


if __name__ == "__main__":
    main()
