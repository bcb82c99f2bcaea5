"""POP parts solved side by side (``lp_baseline.parallel_parts``): the same schedule whichever
executor solves them, the timing fields, bad options, and a worker that dies."""

from __future__ import annotations

import logging
import os

import numpy as np
import pytest

from hsched_env.errors import ConfigError, UnknownNameError
from lp_baseline import parallel_parts
from lp_baseline.parallel_parts import PartSolve, solve_parts
from lp_baseline.policy import LPPolicy, make_policy
from lp_baseline.instances import random_problem

SPEC = "gavel:rate=20,jobs=30,seed=3,mix=llm,duration_scale=0.05"
slow = pytest.mark.slow


def _run(simulate, policy):
    rec, result = simulate(policy, SPEC)
    return rec, result


def _schedule(rec, result):
    """What the run decided and how it ended: every round's assignment and the metrics that
    do not depend on wall-clock time."""
    decisions = [sorted((int(j), tuple(np.atleast_1d(r).tolist())) for j, r in d.items())
                 for d in rec.decisions]
    m = {k: v for k, v in result.metrics().items() if "decision" not in k and not k.endswith("_s")
         or k in ("avg_jct_s", "makespan_s")}
    return decisions, m


@pytest.mark.parametrize("executor", ["thread", "process"])
def test_parallel_parts_give_the_serial_schedule(simulate, executor):
    serial = _schedule(*_run(simulate, LPPolicy("pop-4", pop=4, pop_workers=1)))
    parallel_rec, parallel_result = _run(
        simulate, LPPolicy("pop-4", pop=4, pop_workers=2, pop_executor=executor))
    assert _schedule(parallel_rec, parallel_result) == serial
    assert serial[1]["jobs_completed"] == 30


def test_pop_reports_sequential_and_parallel_time(simulate):
    policy = LPPolicy("pop-4", pop=4, pop_workers=2, pop_executor="thread")
    simulate(policy, "gavel:rate=20,jobs=12,seed=3,mix=llm,duration_scale=0.05")
    extra = policy.last_stats.extra
    assert extra["pop_workers"] == 2
    # the slowest part ≤ all parts one after the other; the solves as run ≤ the decision
    assert 0 < extra["pop_parallel_s"] <= extra["pop_sequential_s"]
    assert 0 < extra["pop_solve_wall_s"] <= extra["decide_s"]


def test_pop_k_uses_up_to_k_workers_by_default():
    assert make_policy("pop-4").pop_workers == parallel_parts.default_workers(4) >= 1
    assert make_policy("pop-4").pop_executor == "thread"
    assert make_policy("pop-4", pop_workers=1).pop_workers == 1
    assert make_policy("heterosched-lp").pop_workers == 1


@pytest.mark.parametrize("kw, error, field", [
    (dict(pop_workers=0), ConfigError, "pop_workers"),
    (dict(pop_workers=2.5), ConfigError, "pop_workers"),
    (dict(pop_workers=True), ConfigError, "pop_workers"),
    (dict(pop_executor="gpu"), UnknownNameError, "gpu"),
])
def test_bad_pop_options_are_named(kw, error, field):
    with pytest.raises(error, match=field):
        LPPolicy("pop-2", pop=2, **kw)


class _KillsTheWorker:
    """Unpickling this in a worker process ends that process (a crash, an OOM kill)."""

    def __reduce__(self):
        return (os._exit, (3,))


def test_a_dead_worker_falls_back_to_solving_here(caplog):
    caplog.set_level(logging.WARNING, logger="lp_baseline.parallel_parts")
    problems = [random_problem(6, np.random.default_rng(s), n_types=3, total_gpus=64)
                for s in range(3)]
    tasks = [PartSolve(p, "max-min", "highs", 0.0) for p in problems]
    reference = [o.result.objective for o in solve_parts(tasks)]
    killer = PartSolve(_KillsTheWorker(), "max-min", "highs", 0.0)
    try:
        outcomes = solve_parts(tasks + [killer], executor="process", workers=2)
        # all parts solved in this process instead: the good ones as before, the bad one an error
        assert [o.result.objective for o in outcomes[:3]] == reference
        assert outcomes[3].result is None and outcomes[3].error
        assert any("pool broke" in r.getMessage() for r in caplog.records)
        # the next call starts a new pool
        again = solve_parts(tasks, executor="process", workers=2)
        assert [o.result.objective for o in again] == reference
    finally:
        parallel_parts.shutdown()


def test_a_solve_that_raises_in_a_worker_comes_back_as_its_error():
    problem = random_problem(6, np.random.default_rng(0), n_types=3, total_gpus=64)
    good = PartSolve(problem, "max-min", "highs", 0.0)
    bad = PartSolve(problem, "no-such-objective", "highs", 0.0)
    try:
        outcomes = solve_parts([good, bad], executor="process", workers=2)
    finally:
        parallel_parts.shutdown()
    assert outcomes[0].result is not None and outcomes[0].error == ""
    assert outcomes[1].result is None and "no-such-objective" in outcomes[1].error


def test_a_forked_child_starts_its_own_pool():
    """A pool's threads and workers stay in the parent: after ``os.fork`` (e.g. a vector
    environment's worker) the child's solves must not wait on them forever."""
    problems = [random_problem(6, np.random.default_rng(s), n_types=3, total_gpus=64)
                for s in range(2)]
    tasks = [PartSolve(p, "max-min", "highs", 0.0) for p in problems]
    reference = [o.result.objective for o in solve_parts(tasks, executor="thread", workers=2)]
    pid = os.fork()
    if pid == 0:                                       # the child: 20 s or it is hung
        import signal
        signal.alarm(20)
        try:
            got = [o.result.objective for o in solve_parts(tasks, executor="thread",
                                                            workers=2)]
            os._exit(0 if got == reference else 1)
        except BaseException:                          # noqa: BLE001
            os._exit(2)
    _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0


@slow
@pytest.mark.xdist_group("ray")     # in the worker of tests/test_ray_backend.py: one Ray at a time
def test_ray_parts_give_the_serial_answers():
    ray = pytest.importorskip("ray")
    problems = [random_problem(8, np.random.default_rng(s), n_types=3, total_gpus=64)
                for s in range(4)]
    tasks = [PartSolve(p, "max-min", "highs", 0.0) for p in problems]
    serial = [o.result.x.tolist() for o in solve_parts(tasks)]
    started_here = not ray.is_initialized()
    try:
        on_ray = [o.result.x.tolist() for o in solve_parts(tasks, executor="ray", workers=2)]
    finally:
        if started_here:
            # the instance solve_parts started must not outlive the test: later tests start
            # their own (tests/test_ray_backend.py) and would join this one instead
            ray.shutdown()
            parallel_parts.shutdown()
    assert on_ray == serial


def test_pop_k_serial_by_name():
    serial = make_policy("pop-4-serial")
    assert (serial.pop, serial.pop_workers) == (4, 1)
    with pytest.raises(ConfigError, match="one part is the whole LP"):
        make_policy("pop-1-serial")                     # (an unknown name until session 63)
