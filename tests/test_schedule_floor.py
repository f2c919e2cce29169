"""A plan's kernel-side floor on its time (Plan.min_time_s) holds in schedule() as in run(), dependents included."""

from topologies import build
from fabric import Router, compile_fabric
from collectives.moe import TokenRouting
from collectives.ops import Collective
from collectives.runner import planner_for, run
from collectives.schedule import CollectiveTask, ComputeTask, schedule


def test_sm_bound_dispatch_keeps_its_floor_and_delays_its_dependents():
    r = Router(compile_fabric(build("hgx-h100")))
    op = Collective("moe_dispatch", tuple(range(8)), 0, options={"moe": TokenRouting("uniform"), "sms": 24})
    plan = planner_for(r).plan(op)
    (alone,) = run(r, [op])
    assert plan.min_time_s > alone.lower_bound_s  # the SM pipeline, not the links, decides this case
    d = CollectiveTask(op, label="dispatch")
    c = ComputeTask(tuple(range(8)), 1e-4, after=(d,), label="experts")
    res = schedule(r, [d, c])
    assert abs(res[d].duration_s - alone.time_s) <= 1e-12 * alone.time_s
    assert abs(res[d].duration_s - plan.min_time_s) <= 1e-12 * plan.min_time_s
    assert abs(res[c].start_s - res[d].end_s) <= 1e-12 and abs(res.makespan_s - (plan.min_time_s + 1e-4)) <= 1e-12


def test_no_floor_no_extra_time():
    r = Router(compile_fabric(build("hgx-h100")))
    op = Collective("moe_dispatch", tuple(range(8)), 0, options={"moe": TokenRouting("uniform")})
    (alone,) = run(r, [op])
    d = CollectiveTask(op, label="dispatch")
    res = schedule(r, [d])
    assert abs(res[d].duration_s - alone.time_s) <= 1e-12 * alone.time_s
