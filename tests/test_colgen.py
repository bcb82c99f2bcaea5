"""Column generation (``lp_baseline.colgen``, ``solve_allocation(method="colgen")``): the same
optimum as the full dual simplex on every objective, certified by pricing, with the restricted
LP much smaller than the whole one; exact where the restricted LP is infeasible."""

from __future__ import annotations

import dataclasses
import math

import numpy as np
import pytest

from hsched_env.errors import ConfigError
from lp_baseline.colgen import PRICING_TOL, ColumnGenerationDriver
from lp_baseline.formulation import build_spec
from lp_baseline.policy import LPPolicy
from lp_baseline.problem import OBJECTIVES, check_feasible
from lp_baseline.solver import random_problem, solve_allocation


def _with_terms(p, rng):
    """``p`` with the second-stage fields every objective may read."""
    return dataclasses.replace(p, priority=rng.uniform(0.1, 3.0, p.n_jobs),
                               switch=rng.uniform(0.5, 1.0, p.n_candidates),
                               gain=rng.uniform(-0.5, 2.0, p.n_candidates))


CASES = [(o, 0.5) for o in OBJECTIVES] + [("sia-srpt", 0.0), ("fair-srpt", 0.0)]


@pytest.mark.parametrize("objective,floor", CASES)
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_column_generation_reaches_the_full_lps_optimum(objective, floor, seed):
    rng = np.random.default_rng(seed)
    p = _with_terms(random_problem(60, rng, candidates_per_job=24, n_types=4,
                                   total_gpus=256), rng)
    full = solve_allocation(p, objective, floor=floor)
    cg = solve_allocation(p, objective, floor=floor, method="colgen")
    assert full.status == cg.status == "optimal"
    check_feasible(p, cg.x)
    assert cg.iterations == full.iterations
    assert cg.objective == pytest.approx(full.objective, rel=1e-6, abs=1e-9)
    if not math.isnan(full.floor_ratio):
        assert cg.floor_ratio == pytest.approx(full.floor_ratio, rel=1e-6)
    assert cg.method == "colgen"
    if objective != "ftf":          # ftf's infeasible bisection steps may load every column
        assert cg.columns_solved < 0.6 * full.columns_solved


def _spec(p, objective="max-throughput"):
    fit, run = p.fits(), p.runnable()
    return build_spec(p, objective, fit, run, np.zeros(p.n_jobs, dtype=bool),
                      np.zeros(p.n_jobs))


def test_the_stop_is_an_optimality_certificate():
    """At the stop no column outside the restricted LP prices in, and the columns inside have
    HiGHS' own reduced costs: the pricing reads HiGHS' duals with the right sign."""
    rng = np.random.default_rng(7)
    p = random_problem(80, rng, candidates_per_job=20, n_types=3, total_gpus=128)
    spec = _spec(p)
    driver = ColumnGenerationDriver(spec, {})
    start = driver.columns
    assert start == p.n_jobs                        # each job's best column to begin with
    run = driver.run(None)
    assert run.status == "optimal" and driver.columns > start and driver.rounds > 1
    sol = driver.h.getSolution()
    reduced = driver.cost - driver.a.T @ np.asarray(sol.row_dual)
    outside = driver.pos < 0
    assert np.all(reduced[outside] <= PRICING_TOL)
    inside = np.flatnonzero(~outside)
    np.testing.assert_allclose(reduced[inside], np.asarray(sol.col_dual)[driver.pos[inside]],
                               atol=1e-9)
    assert np.all(run.values[outside] == 0)


def test_stopping_early_would_be_worse():
    """The pricing matters: the restricted LP's first solve (each job's best column only) is
    strictly below the optimum on a contended cluster."""
    rng = np.random.default_rng(3)
    p = random_problem(80, rng, candidates_per_job=20, n_types=3, total_gpus=64)
    spec = _spec(p)
    driver = ColumnGenerationDriver(spec, {})
    driver.h.run()
    first = driver.h.getInfo().objective_function_value
    full = solve_allocation(p, "max-throughput")
    assert first < full.objective * (1 - 1e-3)
    assert spec.cost @ driver.run(None).values == pytest.approx(full.objective, rel=1e-9)


def test_an_infeasible_restricted_lp_falls_back_to_every_column():
    """Row bounds (the ftf bisection's kind) that only columns outside the restricted LP can
    meet: the driver solves the whole LP instead of reporting it infeasible, and reports a
    whole LP that is infeasible as such."""
    from lp_baseline.backends import HighsDriver
    rng = np.random.default_rng(4)
    p = random_problem(20, rng, candidates_per_job=8, n_types=3, total_gpus=512)
    spec = build_spec(p, "max-min", p.fits(), p.runnable(), p.runnable().copy(),
                      1.0 / p.norm)
    best = np.zeros(p.n_jobs)
    np.maximum.at(best, p.job_of, p.thr)
    for share, status in ((0.3, "optimal"), (0.99, "infeasible")):
        # with t at 0, objective row j reads thr_j(X) / norm_j >= share * its best
        lo = share * best[spec.obj_jobs] / p.norm[spec.obj_jobs]
        driver, full = ColumnGenerationDriver(spec, {}), HighsDriver(spec, {})
        for d in (driver, full):
            d.set_row_lower(spec.obj_rows, lo)
        run, want = driver.run(None), full.run(None)
        assert run.status == want.status == status
        assert driver.complete and driver.columns == spec.a.shape[1]
        if status == "optimal":
            assert spec.cost @ run.values == pytest.approx(spec.cost @ want.values, abs=1e-9)
            x = np.zeros(p.n_candidates)
            x[spec.cand] = run.values[: spec.cand.size]
            check_feasible(p, x, tol=1e-6)


def test_each_restricted_solve_gets_what_is_left_of_the_budget(monkeypatch):
    rng = np.random.default_rng(5)
    p = random_problem(200, rng, candidates_per_job=24, n_types=4, total_gpus=256)
    driver = ColumnGenerationDriver(_spec(p), {})
    left, real = [], driver.h.setOptionValue

    def spy(name, value):
        if name == "time_limit":
            left.append(value - driver.h.getRunTime())
        return real(name, value)

    monkeypatch.setattr(driver.h, "setOptionValue", spy)
    run = driver.run(30.0)
    assert run.status == "optimal" and len(left) == driver.rounds > 2
    assert left[0] <= 30.0 and all(b < a for a, b in zip(left, left[1:]))


def test_a_restricted_solve_cut_short_returns_the_previous_restricted_optimum(monkeypatch):
    """A time limit in a later pricing round leaves HiGHS without a point, but the previous
    restricted optimum is feasible for the whole LP: it is returned as the incumbent."""
    import lp_baseline.backends as colgen          # where the drivers' runs are collected
    from lp_baseline.backends import SolverRun
    rng = np.random.default_rng(5)
    p = random_problem(200, rng, candidates_per_job=24, n_types=4, total_gpus=256)
    spec = _spec(p)
    calls, real = [], colgen._collect

    def cut_at_third(h, before):
        calls.append(1)
        got = real(h, before)
        return SolverRun("time_limit", None, got.run_s) if len(calls) == 3 else got

    monkeypatch.setattr(colgen, "_collect", cut_at_third)
    run = ColumnGenerationDriver(spec, {}).run(10.0)
    assert len(calls) == 3 and run.status == "time_limit" and run.values is not None
    x = np.zeros(p.n_candidates)
    x[spec.cand] = run.values[: spec.cand.size]
    check_feasible(p, x, tol=1e-7)
    assert 0 < spec.cost @ run.values < solve_allocation(p, "max-throughput").objective
    # the first restricted solve failing leaves no incumbent: no point, as the simplex
    calls.clear()
    monkeypatch.setattr(colgen, "_collect", lambda h, before: SolverRun("time_limit", None, 0.0))
    assert ColumnGenerationDriver(spec, {}).run(10.0).values is None


def test_max_min_rows_start_from_each_jobs_best_weighted_throughput():
    """With the max-min rows (the first stage of the floor objectives), stage 2's
    coefficients (here a random gain, unrelated to throughput) are a poor start: each job's
    best column by its weighted throughput is in the start too, so the pricing rounds do not
    grow with the jobs (115 rounds at 1,000 jobs without it)."""
    rng = np.random.default_rng(1000)
    p = _with_terms(random_problem(1000, rng, candidates_per_job=24, n_types=4,
                                   total_gpus=1024), rng)
    res = solve_allocation(p, "fair-srpt", floor=0.5, method="colgen")
    assert res.status == "optimal" and res.pricing_rounds <= 30


def test_time_limit_and_backend_checks():
    rng = np.random.default_rng(5)
    p = random_problem(400, rng, candidates_per_job=24, n_types=4, total_gpus=512)
    res = solve_allocation(p, "max-throughput", method="colgen", time_limit_s=1e-4)
    assert res.status in ("time_limit", "optimal")
    if res.has_x:
        check_feasible(p, res.x, tol=1e-6)
    with pytest.raises(ValueError, match="colgen"):
        solve_allocation(p, "max-throughput", method="colgen", backend="pulp")
    with pytest.raises(ValueError, match="unknown LP method"):
        solve_allocation(p, "max-throughput", method="barrier")
    with pytest.raises(ConfigError, match="colgen"):
        LPPolicy(lp_method="colgen", backend="pulp")


def test_jobs_whose_columns_are_not_contiguous():
    """The per-job choice does not rely on each job's candidates being adjacent."""
    rng = np.random.default_rng(11)
    p = random_problem(50, rng, candidates_per_job=12, n_types=3, total_gpus=96)
    perm = rng.permutation(p.n_candidates)
    q = dataclasses.replace(p, job_of=p.job_of[perm], gpus=p.gpus[perm], thr=p.thr[perm])
    assert np.any(np.diff(q.job_of) < 0)
    spec = _spec(q)
    driver = ColumnGenerationDriver(spec, {})
    assert driver.segments is None
    run = driver.run(None)
    want = solve_allocation(q, "max-throughput")
    assert run.status == "optimal" and driver.columns < spec.a.shape[1]
    assert spec.cost @ run.values == pytest.approx(want.objective, rel=1e-9)


def test_auto_picks_column_generation_for_large_lps_only():
    from lp_baseline.solver import COLGEN_MIN_COLUMNS
    rng = np.random.default_rng(6)
    small = random_problem(20, rng, candidates_per_job=10, n_types=3, total_gpus=64)
    large = random_problem(COLGEN_MIN_COLUMNS // 16 + 1, rng, n_types=4, total_gpus=512)
    assert small.n_candidates < COLGEN_MIN_COLUMNS <= large.n_candidates
    for p, method in ((small, "simplex"), (large, "colgen")):
        res = solve_allocation(p, "max-throughput", method="auto")
        assert res.status == "optimal" and res.method == method
        assert (res.pricing_rounds > 0) == (method == "colgen")
        want = solve_allocation(p, "max-throughput", method=method)
        np.testing.assert_array_equal(res.x, want.x)
    assert solve_allocation(large, "max-throughput", method="auto",
                            backend="pulp").method == "simplex"
    assert LPPolicy().lp_method == "auto"
