"""Parameter sweeps of collectives and training steps, failure what-ifs, stored point by point in SQLite.

:mod:`~workloads.sweep.params` (keys, normalisation, point identity),
:mod:`~workloads.sweep.grid` (grids, zips, sweep files, ``each:`` what-ifs),
:mod:`~workloads.sweep.evaluate` (one point, cached per process),
:mod:`~workloads.sweep.store` (the SQLite file),
:mod:`~workloads.sweep.execute` (batches on an executor: inline, process pool or Dask),
:mod:`~workloads.sweep.table` (rows for tables, sorting, best point, exports).
"""

from workloads.sweep.execute import (MAX_BATCH, InlineExecutor, SweepOutcome, SweepPlan, batches, default_jobs,
                                     make_executor, plan_sweep, run_sweep)
from workloads.sweep.evaluate import cache_info, evaluate, evaluate_batch
from workloads.sweep.grid import FILE_KEYS, each, expand, load_sweep_file, parse_grid
from workloads.sweep.params import KINDS, RUN_KEYS, STEP_KEYS, Point, normalise, package_version
from workloads.sweep.store import SCHEMA_VERSION, Store, StoreError

__all__ = [
    "MAX_BATCH", "InlineExecutor", "SweepOutcome", "SweepPlan", "batches", "default_jobs", "make_executor",
    "plan_sweep", "run_sweep", "cache_info", "evaluate", "evaluate_batch", "FILE_KEYS", "each", "expand",
    "load_sweep_file", "parse_grid", "KINDS", "RUN_KEYS", "STEP_KEYS", "Point", "normalise", "package_version",
    "SCHEMA_VERSION", "Store", "StoreError",
]
