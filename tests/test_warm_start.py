"""Warm starts across decisions (``lp_baseline.warm_start``, ``LPPolicy(warm_start=True)``,
``--lp-warm-start``): the basis is carried by label, HiGHS starts from it, the optimum is the
cold solve's, and the option reaches every LP policy."""

from __future__ import annotations

import numpy as np
import pytest

from lp_baseline.backends import HighsDriver
from lp_baseline.formulation import build_spec
from lp_baseline.instances import random_problem
from lp_baseline.policy import LPPolicy, make_policy
from lp_baseline.problem import AllocationProblem, check_feasible
from lp_baseline.solver import solve_allocation
from lp_baseline.warm_start import (AUX_LABEL, BASIC, LOWER, BasisKeys, LabeledBasis,
                                    lp_labels)


def _keys(p: AllocationProblem, job_ids) -> BasisKeys:
    """Job ``j`` is ``job_ids[j]``; a candidate's row is its rank within its job."""
    rows = np.zeros(p.n_candidates, dtype=np.int64)
    for j in range(p.n_jobs):
        at = np.flatnonzero(p.job_of == j)
        rows[at] = np.arange(at.size)
    return BasisKeys(np.asarray(job_ids, dtype=np.int64), rows)


def _without_job(p: AllocationProblem, drop: int) -> AllocationProblem:
    """``p`` without job ``drop`` (the jobs after it move down one index)."""
    keep = p.job_of != drop
    jobs = np.flatnonzero(np.arange(p.n_jobs) != drop)
    remap = np.full(p.n_jobs, -1)
    remap[jobs] = np.arange(jobs.size)
    return AllocationProblem(job_of=remap[p.job_of[keep]], gpus=p.gpus[keep], thr=p.thr[keep],
                             capacity=p.capacity, norm=p.norm[jobs],
                             remaining=p.remaining[jobs], age_s=p.age_s[jobs],
                             ftf_denominator_s=p.ftf_denominator_s[jobs])


def test_map_onto_takes_known_labels_and_defaults_the_rest():
    basis = LabeledBasis.of(np.array([30, 10, 20]), [BASIC, LOWER, 2],
                            np.array([5, -1]), [LOWER, BASIC])
    assert basis.col_labels.tolist() == [10, 20, 30]
    cols, rows = basis.map_onto(np.array([20, 99, 30, 10]), np.array([-1, 7, 5]))
    assert cols.tolist() == [2, LOWER, BASIC, LOWER]
    assert rows.tolist() == [BASIC, BASIC, LOWER]
    empty = LabeledBasis.of(np.zeros(0, np.int64), [], np.zeros(0, np.int64), [])
    assert empty.map_onto(np.array([1, 2]), np.array([3]))[0].tolist() == [LOWER, LOWER]


def test_labels_are_distinct_and_follow_jobs_not_positions():
    p = random_problem(12, np.random.default_rng(0))
    keys = _keys(p, np.arange(100, 112))
    spec = build_spec(p, "max-min", p.fits(), p.runnable(), p.runnable(), np.ones(p.n_jobs))
    cols, rows = lp_labels(keys, p.job_of, spec)
    assert cols.size == spec.a.shape[1] and rows.size == spec.a.shape[0]
    assert np.unique(cols).size == cols.size and np.unique(rows).size == rows.size
    assert cols[-1] == AUX_LABEL
    # the same job under another index keeps its labels
    q = _without_job(p, 0)
    qkeys = _keys(q, np.arange(101, 112))
    qspec = build_spec(q, "max-min", q.fits(), q.runnable(), q.runnable(), np.ones(q.n_jobs))
    qcols, qrows = lp_labels(qkeys, q.job_of, qspec)
    assert set(qcols.tolist()) < set(cols.tolist())
    assert set(qrows.tolist()) < set(rows.tolist())
    with pytest.raises(ValueError, match="candidate rows"):
        BasisKeys(np.array([1]), np.array([1 << 30]))


def test_the_same_lp_from_its_own_basis_takes_no_pivot():
    p = random_problem(40, np.random.default_rng(1))
    keys = _keys(p, np.arange(40))
    cold = solve_allocation(p, "max-min", basis_keys=keys, method="simplex")
    assert cold.status == "optimal" and cold.basis is not None and not cold.warm_started
    spec = build_spec(p, "max-min", p.fits(), p.runnable(), p.runnable(),
                      1.0 / p.norm)
    driver = HighsDriver(spec, {})
    try:
        labels = lp_labels(keys, p.job_of, spec)
        assert driver.set_basis(*cold.basis.map_onto(*labels))
        assert driver.run(None).status == "optimal"
        assert driver.h.getInfo().simplex_iteration_count == 0
    finally:
        driver.close()
    fresh = HighsDriver(spec, {})
    try:
        assert fresh.run(None).status == "optimal"
        assert fresh.h.getInfo().simplex_iteration_count > 0     # what the basis saves
    finally:
        fresh.close()


@pytest.mark.parametrize("objective", ["max-min", "sia-srpt", "fair-srpt", "ftf"])
def test_warm_start_reaches_the_cold_optimum_after_the_jobs_change(objective):
    rng = np.random.default_rng(2)
    for trial in range(4):
        p = random_problem(30, rng)
        if objective in ("sia-srpt",):
            p.gain = p.thr / p.norm[p.job_of] * rng.uniform(0.5, 1.5, p.n_candidates)
        prev = solve_allocation(p, objective, basis_keys=_keys(p, np.arange(30)),
                                method="simplex")
        q = _without_job(p, trial)
        if objective == "sia-srpt":
            q.gain = np.delete(p.gain, np.flatnonzero(p.job_of == trial))
        qkeys = _keys(q, np.delete(np.arange(30), trial))
        cold = solve_allocation(q, objective, method="simplex")
        warm = solve_allocation(q, objective, basis_keys=qkeys, warm_basis=prev.basis,
                                method="simplex")
        assert warm.status == cold.status == "optimal" and warm.warm_started
        assert warm.objective == pytest.approx(cold.objective, rel=1e-7, abs=1e-9)
        check_feasible(q, warm.x, tol=1e-7)


def test_a_warm_run_that_fails_is_solved_again_cold(monkeypatch):
    """HiGHS can end a run started from a mapped-over basis in status "unknown": the driver
    then clears the solver and solves the same model cold, and the decision stands."""
    from lp_baseline.backends import HighsModel, SolverRun
    p = random_problem(30, np.random.default_rng(5))
    keys = _keys(p, np.arange(30))
    prev = solve_allocation(p, "max-min", basis_keys=keys, method="simplex")
    cold = solve_allocation(p, "max-min", method="simplex")
    real_run, calls, cleared = HighsModel.run_highs, [], []

    def run_highs(self, budget_s):
        calls.append(self.from_given_basis)
        if len(calls) == 1:            # the warm-started first run ends in "unknown"
            return SolverRun("error", None, 0.25)
        return real_run(self, budget_s)

    monkeypatch.setattr(HighsModel, "run_highs", run_highs)
    monkeypatch.setattr(HighsModel, "clear_solver",
                        lambda self: (cleared.append(True), self.h.clearSolver()))
    warm = solve_allocation(p, "max-min", basis_keys=keys, warm_basis=prev.basis,
                            method="simplex")
    assert warm.warm_started and warm.warm_retried and cleared == [True]
    assert calls[:2] == [True, False]          # the retry starts cold
    assert warm.status == "optimal" and warm.highs_run_s >= 0.25
    assert warm.objective == pytest.approx(cold.objective, rel=1e-7, abs=1e-9)
    check_feasible(p, warm.x, tol=1e-7)
    # a cold first run that fails is not retried (no basis of another LP to blame)
    calls.clear()
    cleared.clear()
    failed = solve_allocation(p, "max-min", method="simplex")
    assert failed.status == "error" and cleared == [] and calls == [False]
    assert not failed.warm_retried


def test_warm_basis_needs_keys_and_column_generation_ignores_it():
    p = random_problem(20, np.random.default_rng(3))
    keys = _keys(p, np.arange(20))
    prev = solve_allocation(p, "max-min", basis_keys=keys, method="simplex")
    with pytest.raises(ValueError, match="basis_keys"):
        solve_allocation(p, "max-min", warm_basis=prev.basis)
    cg = solve_allocation(p, "max-min", basis_keys=keys, warm_basis=prev.basis,
                          method="colgen")
    assert cg.status == "optimal" and cg.basis is None and not cg.warm_started
    assert solve_allocation(p, "max-min", method="simplex").basis is None


def _run(policy):
    from hsched_env.cluster import get_cluster
    from hsched_env.simulator import Simulator
    from hsched_env.workloads import load_workload
    cluster = get_cluster("sia-64")
    workload = load_workload("gavel:rate=6,jobs=30,seed=4", cluster)
    return Simulator(cluster, workload, policy).run()


def test_warm_start_says_once_when_column_generation_solves_cold(monkeypatch, caplog):
    """``lp_method="auto"`` solves LPs from ``COLGEN_MIN_COLUMNS`` columns up by column
    generation, which starts cold: a warm policy that meets one says so, once a run."""
    import logging
    import lp_baseline.solver as solver
    monkeypatch.setattr(solver, "COLGEN_MIN_COLUMNS", 10)        # every LP here is "large"
    policy = make_policy("heterosched-lp", warm_start=True)
    with caplog.at_level(logging.WARNING, logger="lp_baseline.policy"):
        _run(policy)
    said = [r for r in caplog.records if "starts cold" in r.getMessage()]
    assert len(said) == 1 and policy.summary()["lp_warm_starts"] == 0
    caplog.clear()
    with caplog.at_level(logging.WARNING, logger="lp_baseline.policy"):
        _run(make_policy("heterosched-lp", warm_start=True, lp_method="simplex"))
    assert not [r for r in caplog.records if "starts cold" in r.getMessage()]


@pytest.mark.parametrize("name", ["heterosched-lp", "gavel"])
def test_policy_warm_starts_every_solve_after_the_first(name):
    warm = make_policy(name, warm_start=True, lp_method="simplex")
    result = _run(warm)
    summary = warm.summary()
    assert summary["lp_solves"] > 10
    # every decision that solved (not reused an identical LP) after the first one
    assert summary["lp_warm_starts"] == summary["lp_solves"] - summary["lp_reused"] - 1
    assert summary["lp_warm_retries"] == 0
    assert all(r.done for r in result.jobs)
    cold = make_policy(name, lp_method="simplex")
    _run(cold)
    assert "lp_warm_starts" not in cold.summary()


def test_warm_start_must_be_a_bool():
    from hsched_env.errors import ConfigError
    with pytest.raises(ConfigError, match="warm_start"):
        LPPolicy(warm_start="yes")


def test_labels_of_a_small_lp_exactly():
    # jobs 7 and 9; job 7 has candidates (rows 0, 1), job 9 one (row 3) on type 1 only
    p = AllocationProblem(job_of=np.array([0, 0, 1]),
                          gpus=np.array([[1, 0], [0, 2], [0, 1]]),
                          thr=np.array([1.0, 2.0, 1.5]), capacity=np.array([4.0, 4.0]),
                          norm=np.ones(2))
    keys = BasisKeys(np.array([7, 9]), np.array([0, 1, 3]))
    spec = build_spec(p, "max-min", p.fits(), p.runnable(), p.runnable(), np.ones(2))
    cols, rows = lp_labels(keys, p.job_of, spec)
    assert cols.tolist() == [7 << 24, (7 << 24) | 1, (9 << 24) | 3, AUX_LABEL]
    # job rows (2 × key), type rows (-1 - type), objective rows (2 × key + 1)
    assert rows.tolist() == [14, 18, -1, -2, 15, 19]


def test_a_warm_policy_pivots_far_less(monkeypatch):
    import lp_baseline.backends as backends
    pivots = []
    real = backends.HighsModel.run_highs

    def counted(self, budget_s):
        out = real(self, budget_s)
        pivots.append(self.h.getInfo().simplex_iteration_count)
        return out

    monkeypatch.setattr(backends.HighsModel, "run_highs", counted)
    totals = {}
    for warm in (False, True):
        pivots.clear()
        _run(make_policy("heterosched-lp", warm_start=warm, lp_method="simplex"))
        totals[warm] = sum(pivots)
    assert totals[True] < 0.5 * totals[False], totals
    # (with IPM, which never starts from a basis, warm_start=True is refused:
    # tests/test_api_inputs.py, test_a_warm_start_no_solve_would_use_is_refused)
