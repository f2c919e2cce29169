"""The result of a validation run: rows, error summaries per split, the report.

The data model of :func:`collectives.validate.validate`, apart from how points are predicted: one row per
predicted value, one :class:`ErrorSummary` per split (fit, held-out, unsplit) over the error-bearing,
non-consistency rows, consistency checks summarised apart.

Examples
--------
>>> r = ValidationRow("p", "collective", "busbw GB/s", 110.0, 100.0, 0.1, 0.1, True, split="fit")
>>> summarise("fit", [r]).mean_abs_error
0.1
>>> ValidationReport(rows=(r,), mean_abs_error=0.1, max_abs_error=0.1, source="x").ok
True
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

__all__ = ["ValidationRow", "ErrorSummary", "ValidationReport", "summarise", "TOLERANCE", "SPLITS", "KINDS"]

#: Relative tolerance per kind of point (issue 4).
TOLERANCE = {"collective": 0.10, "moe_alltoall": 0.15, "host_copy": 0.10}
#: Allowed values of a point's ``split``.
SPLITS = ("fit", "heldout", "unsplit")
#: Tables of a validation file; ``training`` is the step-time estimator's.
KINDS = ("collective", "moe_alltoall", "host_copy", "training")


@dataclass(frozen=True)
class ValidationRow:
    id: str
    kind: str
    quantity: str
    predicted: float | None
    measured: float | None
    rel_error: float | None
    tolerance: float | None
    passed: bool | None
    note: str = ""
    split: str = "unsplit"
    consistency: bool = False
    category: str = ""
    source: str = ""

    def as_dict(self) -> dict:
        return {k: getattr(self, k) for k in ("id", "kind", "split", "consistency", "category", "quantity",
                                              "predicted", "measured", "rel_error", "tolerance", "passed", "note",
                                              "source")}


@dataclass(frozen=True)
class ErrorSummary:
    """Mean and max absolute relative error over the error-bearing rows of one split."""

    split: str
    n: int
    mean_abs_error: float
    max_abs_error: float

    def as_dict(self) -> dict:
        return {"split": self.split, "n": self.n, "mean_abs_error": self.mean_abs_error,
                "max_abs_error": self.max_abs_error}


def summarise(split: str, rows) -> ErrorSummary:
    """Mean and max absolute relative error of ``rows`` (finite errors only) as the summary of ``split``."""
    errs = [abs(r.rel_error) for r in rows if r.rel_error is not None and math.isfinite(r.rel_error)]
    return ErrorSummary(split, len(errs), float(np.mean(errs)) if errs else 0.0, float(np.max(errs)) if errs else 0.0)


@dataclass(frozen=True)
class ValidationReport:
    """Rows of one validation run and their error summaries.

    ``summaries`` has one entry per split present (over non-consistency rows);
    ``consistency`` summarises the consistency checks apart. ``ok`` is false when
    the file had no point or tables this module does not know (``unrecognised``).
    """

    rows: tuple
    mean_abs_error: float
    max_abs_error: float
    source: str
    summaries: tuple = ()
    consistency: ErrorSummary | None = None
    training_points: int = 0
    unrecognised: tuple = ()

    @property
    def passed(self) -> bool:
        return all(r.passed for r in self.rows if r.passed is not None)

    @property
    def ok(self) -> bool:
        """The file was understood and held at least one point."""
        return not self.unrecognised and (len(self.rows) + self.training_points) > 0

    def summary(self, split: str) -> ErrorSummary | None:
        return next((s for s in self.summaries if s.split == split), None)

    def as_dict(self) -> dict:
        return {"source": self.source, "ok": self.ok, "passed": self.passed,
                "mean_abs_error": self.mean_abs_error, "max_abs_error": self.max_abs_error,
                "summaries": [s.as_dict() for s in self.summaries],
                "consistency": None if self.consistency is None else self.consistency.as_dict(),
                "training_points": self.training_points, "unrecognised": list(self.unrecognised),
                "rows": [r.as_dict() for r in self.rows]}
