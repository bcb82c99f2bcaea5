"""The allocation LP over job × candidate: optimality, feasibility, backends, determinism, edges.

Optimality is checked two independent ways: brute force over a grid of allocations on tiny
instances, and scipy.optimize.linprog on a formulation written here with plain loops.
"""

from __future__ import annotations

import hashlib
import itertools
import math
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from scipy.optimize import linprog

from hsched_env.errors import ConfigError
from lp_baseline.solver import (BACKENDS, FLOOR_OBJECTIVES, FTF_REL_TOL, OBJECTIVES,
                                AllocationProblem, LPResult, check_feasible, evaluate_objective,
                                random_problem, solve_allocation)

slow = pytest.mark.slow

#: The single-stage objectives with closed forms and grid brute force below.
CLASSIC = tuple(o for o in OBJECTIVES if o not in FLOOR_OBJECTIVES)

REPO = Path(__file__).resolve().parents[1]


# ------------------------------------------------------------------------------ helpers
def tiny_problem(seed: int, cands: tuple[int, ...]) -> AllocationProblem:
    """2–3 jobs, 1–3 candidates each, 2 GPU types, capacities of a few GPUs."""
    rng = np.random.default_rng(seed)
    n_jobs = len(cands)
    job_of = np.repeat(np.arange(n_jobs), cands)
    c = job_of.size
    gpus = rng.integers(0, 4, (c, 2))
    gpus[gpus.sum(axis=1) == 0, rng.integers(0, 2)] = 1
    thr = rng.uniform(1.0, 10.0, c) * gpus.sum(axis=1) ** 0.8
    capacity = rng.integers(3, 6, 2).astype(float)   # every candidate fits
    norm = rng.uniform(1.0, 5.0, n_jobs)
    remaining = rng.uniform(50.0, 500.0, n_jobs)
    age = rng.uniform(0.0, 30.0, n_jobs)
    den = age + remaining / norm
    return AllocationProblem(job_of, gpus, thr, capacity, norm,
                             weight=rng.uniform(0.5, 2.0, n_jobs),
                             remaining=remaining, age_s=age, ftf_denominator_s=den)


def simplex_grid(k: int, step: float) -> np.ndarray:
    """All (x_1..x_k) on the grid of ``step`` with x >= 0 and sum <= 1."""
    n = int(round(1 / step))
    pts = [v for v in itertools.product(range(n + 1), repeat=k) if sum(v) <= n]
    return np.array(pts, dtype=np.float64) * step


def grid_best(p: AllocationProblem, objective: str, step: float) -> float:
    """Best objective over every grid allocation that satisfies the capacity constraints."""
    per_job = [simplex_grid(int(np.sum(p.job_of == j)), step) for j in range(p.n_jobs)]
    order = np.argsort(p.job_of, kind="stable")   # candidates grouped by job
    # cartesian product of the per-job grids, as one (N, C) matrix
    idx = np.stack(np.meshgrid(*[np.arange(len(g)) for g in per_job], indexing="ij"), -1)
    idx = idx.reshape(-1, p.n_jobs)
    x_sorted = np.concatenate([per_job[j][idx[:, j]] for j in range(p.n_jobs)], axis=1)
    x = np.empty_like(x_sorted)
    x[:, order] = x_sorted
    ok = np.all(x @ p.gpus <= p.capacity + 1e-12, axis=1)
    x = x[ok]
    thr_j = np.stack([x[:, p.job_of == j] @ p.thr[p.job_of == j] for j in range(p.n_jobs)], 1)
    w = p.weights()
    if objective == "max-min":
        return float(np.max(np.min(thr_j / (w * p.norm), axis=1)))
    if objective == "max-throughput":
        return float(np.max(np.sum(thr_j / p.norm, axis=1)))
    with np.errstate(divide="ignore"):
        if objective == "min-makespan":
            return float(np.min(np.max(p.remaining / thr_j, axis=1)))
        rho = (p.age_s + p.remaining / thr_j) / p.ftf_denominator_s
        return float(np.min(np.max(rho, axis=1)))


def rounding_slack(p: AllocationProblem, objective: str, step: float, value: float) -> float:
    """How much better than the best grid point the true optimum can be.

    Flooring the optimal X to the grid keeps it feasible (all constraints are <= with
    non-negative coefficients) and lowers each thr_j by at most step * sum_{c of j} thr[c].
    """
    s = np.bincount(p.job_of, weights=p.thr, minlength=p.n_jobs) * step
    if objective == "max-min":
        return float(np.max(s / (p.weights() * p.norm)))
    if objective == "max-throughput":
        return float(np.sum(s / p.norm))
    # min-makespan, in z = 1/M: z drops by at most max_j s_j / remaining_j
    return float(np.max(s / p.remaining))


def linprog_reference(p: AllocationProblem, objective: str) -> float:
    """The same LP written independently (dense, loops) and solved by scipy's HiGHS."""
    c_n, j_n = p.n_candidates, p.n_jobs
    fits = [all(p.gpus[c, t] <= p.capacity[t] for t in range(p.n_types)) for c in range(c_n)]
    runnable = [any(fits[c] for c in range(c_n) if p.job_of[c] == j) for j in range(j_n)]
    n = c_n + 1   # x, then t (max-min) or z (min-makespan)
    a_ub, b_ub = [], []
    for j in range(j_n):
        a_ub.append([1.0 if p.job_of[c] == j else 0.0 for c in range(c_n)] + [0.0])
        b_ub.append(1.0)
    for t in range(p.n_types):
        a_ub.append([float(p.gpus[c, t]) for c in range(c_n)] + [0.0])
        b_ub.append(p.capacity[t])
    cost = np.zeros(n)
    if objective == "max-throughput":
        cost[:c_n] = [-p.thr[c] / p.norm[p.job_of[c]] for c in range(c_n)]
    else:
        cost[c_n] = -1.0
        for j in range(j_n):
            if not runnable[j]:
                continue
            row = [0.0] * n
            for c in range(c_n):
                if p.job_of[c] == j:
                    row[c] = -p.thr[c] / (p.weights()[j] * p.norm[j] if objective == "max-min"
                                          else p.remaining[j])
            row[c_n] = 1.0
            a_ub.append(row)
            b_ub.append(0.0)
    bounds = [(0.0, 1.0 if fits[c] else 0.0) for c in range(c_n)] + [(0.0, None)]
    res = linprog(cost, A_ub=np.array(a_ub), b_ub=np.array(b_ub), bounds=bounds, method="highs")
    assert res.status == 0, res.message
    value = -res.fun
    return 1.0 / value if objective == "min-makespan" else value


def ftf_feasible_linprog(p: AllocationProblem, r: float) -> bool:
    """Is max_j rho_j <= r achievable? (independent dense feasibility LP)."""
    c_n = p.n_candidates
    fits = [all(p.gpus[c, t] <= p.capacity[t] for t in range(p.n_types)) for c in range(c_n)]
    a_ub, b_ub = [], []
    for j in range(p.n_jobs):
        a_ub.append([1.0 if p.job_of[c] == j else 0.0 for c in range(c_n)])
        b_ub.append(1.0)
        if not any(fits[c] for c in range(c_n) if p.job_of[c] == j):
            continue
        need = r * p.ftf_denominator_s[j] - p.age_s[j]
        if need <= 0:
            return False
        a_ub.append([-p.thr[c] if p.job_of[c] == j else 0.0 for c in range(c_n)])
        b_ub.append(-p.remaining[j] / need)
    for t in range(p.n_types):
        a_ub.append([float(p.gpus[c, t]) for c in range(c_n)])
        b_ub.append(p.capacity[t])
    res = linprog(np.zeros(c_n), A_ub=np.array(a_ub), b_ub=np.array(b_ub),
                  bounds=[(0.0, 1.0 if fits[c] else 0.0) for c in range(c_n)], method="highs")
    return res.status == 0


def rel(a: float, b: float) -> float:
    return abs(a - b) / max(abs(a), abs(b), 1e-300)


# ------------------------------------------------------------------------------ optimality
TINY = [(11, (2, 2)), (12, (3, 2)), (13, (1, 2, 2)), (14, (2, 1, 2)), (15, (3, 3)), (16, (1, 1, 3))]


@pytest.mark.parametrize("objective", CLASSIC)
@pytest.mark.parametrize("seed,cands", TINY)
def test_optimal_against_grid_brute_force(objective, seed, cands):
    p = tiny_problem(seed, cands)
    assert p.fits().all()
    sizes = {1: 21, 2: 231, 3: 1771}   # grid points per job at step 0.05
    step = 0.05 if np.prod([sizes[k] for k in cands]) <= 500_000 else 0.1
    grid = grid_best(p, objective, step)
    res = solve_allocation(p, objective)
    assert res.status == "optimal"
    check_feasible(p, res.x)
    v = res.objective
    assert v == pytest.approx(evaluate_objective(p, res.x, objective), rel=1e-12)
    if objective == "max-min":
        # the fill solve holds the primary within LEX_REL_TOL (1e-7) of its optimum
        assert v >= grid * (1 - 1e-6)
        pure = solve_allocation(p, objective, secondary=False).objective
        assert pure >= grid - 1e-9                               # at least every grid point
        assert max(v, pure) <= grid + rounding_slack(p, objective, step, v) + 1e-9
    elif objective == "max-throughput":
        assert v >= grid - 1e-9
        assert v <= grid + rounding_slack(p, objective, step, v) + 1e-9
    elif objective == "min-makespan":
        assert v <= grid * (1 + 1e-6)
        assert solve_allocation(p, objective, secondary=False).objective <= grid * (1 + 1e-9)
        assert 1 / v <= 1 / grid + rounding_slack(p, objective, step, v) + 1e-12
    else:   # ftf is solved by bisection to FTF_REL_TOL
        assert v <= grid * (1 + FTF_REL_TOL) + 1e-12


@pytest.mark.parametrize("objective", ["max-min", "max-throughput", "min-makespan"])
@pytest.mark.parametrize("seed", [1, 2, 3])
def test_matches_independent_linprog(objective, seed):
    p = random_problem(25, np.random.default_rng(seed), candidates_per_job=6, n_types=3,
                       total_gpus=96, max_gpus=16)
    ref = linprog_reference(p, objective)
    for backend in BACKENDS:
        res = solve_allocation(p, objective, backend=backend)
        assert res.status == "optimal"
        assert rel(res.objective, ref) < 1e-6, (backend, res.objective, ref)


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_ftf_within_bisection_tolerance_of_independent_check(seed):
    p = random_problem(20, np.random.default_rng(seed), candidates_per_job=5, n_types=3,
                       total_gpus=48, max_gpus=16)
    res = solve_allocation(p, "ftf")
    assert res.status == "optimal" and res.iterations > 1   # contended: real bisection
    r = res.objective
    assert ftf_feasible_linprog(p, r * (1 + 1e-9))
    assert not ftf_feasible_linprog(p, r / (1 + 2 * FTF_REL_TOL))


def with_gain(p: AllocationProblem, objective: str) -> AllocationProblem:
    """``p`` with a per-candidate gain (some negative) when ``objective`` needs one (sia-*)."""
    if not objective.startswith("sia-"):
        return p
    import dataclasses
    return dataclasses.replace(p, gain=np.linspace(-0.5, 2.0, p.n_candidates)[::-1].copy())


# ------------------------------------------------------------------------------ feasibility
@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("objective", OBJECTIVES)
def test_every_result_is_feasible(objective, backend):
    for seed in range(3):
        p = with_gain(random_problem(40, np.random.default_rng(100 + seed),
                                     candidates_per_job=8, n_types=4, total_gpus=256),
                      objective)
        res = solve_allocation(p, objective, backend=backend)
        assert res.status == "optimal"
        assert res.x.shape == (p.n_candidates,)
        check_feasible(p, res.x, tol=1e-7)
        assert not np.signbit(res.x).any()        # HiGHS' -0.0 shares come out as 0.0
        assert res.n_vars >= p.fits().sum() and res.n_cons >= p.n_jobs
        assert res.build_s > 0 and res.solve_s > 0


# ------------------------------------------------------------------------------ backends
@pytest.mark.parametrize("objective", OBJECTIVES)
def test_backends_agree(objective):
    p = with_gain(random_problem(30, np.random.default_rng(7), candidates_per_job=8,
                                 n_types=4, total_gpus=192), objective)
    a = solve_allocation(p, objective, backend="highs")
    b = solve_allocation(p, objective, backend="pulp")
    assert a.status == b.status == "optimal"
    assert a.backend == "highs" and b.backend == "pulp"
    assert (a.n_vars, a.n_cons, a.iterations) == (b.n_vars, b.n_cons, b.iterations)
    assert rel(a.objective, b.objective) < 1e-6


def test_secondary_fills_leftover_capacity_without_losing_the_primary():
    # job 0 is the bottleneck (slow, one GPU type); job 1 could use far more than its
    # max-min share, which only the secondary (fill) solve gives it
    p = AllocationProblem(job_of=np.array([0, 1, 1]), gpus=np.array([[2, 0], [0, 2], [0, 4]]),
                          thr=np.array([1.0, 4.0, 7.0]), capacity=np.array([2.0, 4.0]),
                          norm=np.array([1.0, 1.0]))
    pure = solve_allocation(p, "max-min", secondary=False)
    filled = solve_allocation(p, "max-min")
    assert pure.iterations == 1
    assert pure.objective == pytest.approx(1.0, rel=1e-9)
    assert rel(filled.objective, pure.objective) < 1e-6
    assert filled.iterations == 2
    assert p.job_throughput(filled.x)[1] == pytest.approx(7.0, rel=1e-6)   # all of type 1


# ------------------------------------------------------------------------------ determinism
def _digest(res: LPResult) -> str:
    return hashlib.sha256(res.x.tobytes()).hexdigest()


@slow
def test_same_input_same_x_bit_for_bit():
    p = random_problem(150, np.random.default_rng(5), n_types=5, total_gpus=512)
    for objective in OBJECTIVES:
        q = with_gain(p, objective)
        a, b = solve_allocation(q, objective), solve_allocation(q, objective)
        assert np.array_equal(a.x, b.x) and a.objective == b.objective
    a = solve_allocation(p, "max-min", backend="pulp")
    b = solve_allocation(p, "max-min", backend="pulp")
    assert np.array_equal(a.x, b.x)


@slow
def test_same_x_in_a_fresh_process():
    code = ("import numpy as np, hashlib\n"
            "from lp_baseline.solver import random_problem, solve_allocation\n"
            "p = random_problem(150, np.random.default_rng(5), n_types=5, total_gpus=512)\n"
            "for o in ('max-min', 'ftf'):\n"
            "    print(hashlib.sha256(solve_allocation(p, o).x.tobytes()).hexdigest())\n")
    out = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True,
                         check=True, timeout=120).stdout.split()
    p = random_problem(150, np.random.default_rng(5), n_types=5, total_gpus=512)
    here = [_digest(solve_allocation(p, "max-min")), _digest(solve_allocation(p, "ftf"))]
    assert out[-2:] == here


# ------------------------------------------------------------------------------ closed forms
@pytest.mark.parametrize("backend", BACKENDS)
def test_max_min_identical_jobs_share_equally(backend):
    n_jobs, k = 7, 3
    thr = np.full(n_jobs, 5.0)
    p = AllocationProblem(job_of=np.arange(n_jobs), gpus=np.ones((n_jobs, 1), dtype=int), thr=thr,
                          capacity=np.array([float(k)]), norm=thr.copy())
    res = solve_allocation(p, "max-min", backend=backend)
    assert res.objective == pytest.approx(k / n_jobs, rel=1e-6)
    np.testing.assert_allclose(res.x, k / n_jobs, rtol=1e-6)


@pytest.mark.parametrize("objective", ["max-min", "max-throughput"])
def test_a_tiny_coefficient_is_dropped_not_a_rejected_model(objective):
    """A candidate a billion times slower than its job's normalizer: HiGHS drops the matrix
    entry below its ``small_matrix_value`` with a warning. The direct path (passModel) and
    column generation (addCols) rejected the model for that warning (every job got X = 0, the
    fallback's); now every path solves it, as PuLP's did."""
    p = AllocationProblem(job_of=np.array([0, 0, 1]), gpus=np.array([[4, 0], [0, 8], [2, 0]]),
                          thr=np.array([1e-9, 150.0, 40.0]), capacity=np.array([4.0, 8.0]),
                          norm=np.array([75.0, 40.0]))
    res = {b: solve_allocation(p, objective, backend=b) for b in BACKENDS}
    res["colgen"] = solve_allocation(p, objective, method="colgen")
    for r in res.values():
        assert r.status == "optimal" and r.has_x
        np.testing.assert_allclose(r.x, [0.0, 1.0, 1.0], atol=1e-9)
    assert res["highs"].x.tobytes() == res["pulp"].x.tobytes()
    # a job whose only candidate is that slow: column generation starts from its column
    p = AllocationProblem(job_of=np.array([0, 1]), gpus=np.array([[4, 0], [2, 0]]),
                          thr=np.array([1e-9, 40.0]), capacity=np.array([4.0, 8.0]),
                          norm=np.array([75.0, 40.0]))
    for method in ("simplex", "colgen"):
        assert solve_allocation(p, objective, method=method).status == "optimal"


def test_max_throughput_picks_the_best_candidates():
    # ample capacity: every job runs its fastest candidate full time
    p = AllocationProblem(job_of=np.array([0, 0, 0, 1, 1]),
                          gpus=np.array([[1, 0], [0, 1], [2, 0], [0, 2], [1, 1]]),
                          thr=np.array([3.0, 5.0, 4.0, 6.0, 2.0]), capacity=np.array([8.0, 8.0]),
                          norm=np.array([1.0, 2.0]))
    res = solve_allocation(p, "max-throughput")
    np.testing.assert_allclose(res.x, [0, 1, 0, 1, 0], atol=1e-9)
    assert res.objective == pytest.approx(5.0 + 6.0 / 2.0)
    # contention: 4 GPUs; A needs all 4 for 10/s, B needs 1 for 5/s -> B full, A 3/4
    p = AllocationProblem(job_of=np.array([0, 1]), gpus=np.array([[4], [1]]),
                          thr=np.array([10.0, 5.0]), capacity=np.array([4.0]), norm=np.ones(2))
    res = solve_allocation(p, "max-throughput")
    np.testing.assert_allclose(res.x, [0.75, 1.0], atol=1e-9)
    assert res.objective == pytest.approx(12.5)


@pytest.mark.parametrize("backend", BACKENDS)
def test_min_makespan_divisible_work(backend):
    # linear scaling on one type: makespan = total work / total rate = 600 / (4 * 10)
    sizes = np.array([1, 2, 4])
    job_of = np.repeat(np.arange(3), 3)
    g = np.tile(sizes, 3)[:, None]
    p = AllocationProblem(job_of=job_of, gpus=g, thr=10.0 * g[:, 0], capacity=np.array([4.0]),
                          norm=np.ones(3), remaining=np.array([100.0, 200.0, 300.0]))
    res = solve_allocation(p, "min-makespan", backend=backend)
    assert res.objective == pytest.approx(15.0, rel=1e-6)
    np.testing.assert_allclose(p.job_throughput(res.x), [100 / 15, 200 / 15, 300 / 15], rtol=1e-6)


def test_ftf_closed_forms():
    # one job alone: rho = (age + remaining / best) / D, in a single LP
    p = AllocationProblem(job_of=np.zeros(2, dtype=int), gpus=np.array([[1], [2]]),
                          thr=np.array([3.0, 5.0]), capacity=np.array([2.0]), norm=np.ones(1),
                          remaining=np.array([100.0]), age_s=np.array([10.0]),
                          ftf_denominator_s=np.array([40.0]))
    res = solve_allocation(p, "ftf")
    assert res.iterations == 1
    assert res.objective == pytest.approx((10 + 100 / 5) / 40, rel=FTF_REL_TOL)
    # J identical one-GPU jobs on K GPUs: each gets K/J
    n_jobs, k = 6, 2
    p = AllocationProblem(job_of=np.arange(n_jobs), gpus=np.ones((n_jobs, 1), dtype=int),
                          thr=np.ones(n_jobs), capacity=np.array([float(k)]), norm=np.ones(n_jobs),
                          remaining=np.full(n_jobs, 60.0), age_s=np.full(n_jobs, 5.0),
                          ftf_denominator_s=np.full(n_jobs, 100.0))
    res = solve_allocation(p, "ftf")
    exact = (5 + 60 * n_jobs / k) / 100
    assert exact <= res.objective <= exact * (1 + FTF_REL_TOL)


# ------------------------------------------------------------------------------ degenerate
@pytest.mark.parametrize("objective", OBJECTIVES)
def test_zero_jobs(objective):
    p = AllocationProblem(job_of=np.zeros(0, dtype=int), gpus=np.zeros((0, 2), dtype=int),
                          thr=np.zeros(0), capacity=np.array([4.0, 4.0]), norm=np.zeros(0),
                          remaining=np.zeros(0), age_s=np.zeros(0), ftf_denominator_s=np.zeros(0))
    p = with_gain(p, objective)
    for backend in BACKENDS:
        res = solve_allocation(p, objective, backend=backend)
        assert res.status == "optimal" and res.x.shape == (0,) and res.objective == 0.0
        assert res.unrunnable.size == 0


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("objective", CLASSIC)
def test_zero_capacity_type_and_unrunnable_job(objective, backend):
    # type 1 has no GPU; job 2's only candidate needs type 1, job 1's fast candidate too;
    # job 3 needs 8 GPUs of type 0 but there are 4
    p = AllocationProblem(job_of=np.array([0, 1, 1, 2, 3]),
                          gpus=np.array([[1, 0], [2, 0], [0, 1], [0, 2], [8, 0]]),
                          thr=np.array([2.0, 3.0, 50.0, 9.0, 40.0]), capacity=np.array([4.0, 0.0]),
                          norm=np.ones(4), remaining=np.array([10.0, 30.0, 5.0, 5.0]),
                          age_s=np.zeros(4), ftf_denominator_s=np.array([5.0, 10.0, 1.0, 1.0]))
    res = solve_allocation(p, objective, backend=backend)
    assert res.status == "optimal"
    assert res.unrunnable.tolist() == [2, 3]
    assert res.x[2] == 0 and res.x[3] == 0 and res.x[4] == 0
    check_feasible(p, res.x)
    # the objective is over the runnable jobs 0 and 1 (one GPU + two GPUs fit in four)
    expected = {"max-min": min(2.0, 3.0), "max-throughput": 2.0 + 3.0,
                "min-makespan": max(10 / 2, 30 / 3), "ftf": max(10 / 2 / 5, 30 / 3 / 10)}[objective]
    assert res.objective == pytest.approx(expected, rel=FTF_REL_TOL if objective == "ftf" else 1e-6)


@pytest.mark.parametrize("objective", OBJECTIVES)
def test_nothing_fits(objective):
    p = AllocationProblem(job_of=np.array([0, 1]), gpus=np.array([[2], [3]]),
                          thr=np.array([1.0, 1.0]), capacity=np.array([1.0]), norm=np.ones(2),
                          remaining=np.ones(2), age_s=np.zeros(2), ftf_denominator_s=np.ones(2))
    res = solve_allocation(with_gain(p, objective), objective)
    assert res.status == "optimal" and res.n_vars == 0 and np.all(res.x == 0)
    assert res.unrunnable.tolist() == [0, 1] and res.objective == 0.0


@pytest.mark.parametrize("objective", ["min-makespan", "ftf"])
def test_finished_jobs_do_not_constrain(objective):
    p = AllocationProblem(job_of=np.array([0, 1]), gpus=np.array([[1], [1]]),
                          thr=np.array([2.0, 4.0]), capacity=np.array([1.0]), norm=np.ones(2),
                          remaining=np.array([0.0, 40.0]), age_s=np.zeros(2),
                          ftf_denominator_s=np.array([1.0, 20.0]))
    res = solve_allocation(p, objective)
    assert res.status == "optimal"
    assert res.objective == pytest.approx(10.0 if objective == "min-makespan" else 0.5, rel=1e-3)
    p.remaining = np.zeros(2)   # nothing left anywhere: objective 0, capacity still used
    res = solve_allocation(p, objective)
    assert res.status == "optimal" and res.objective == 0.0
    assert res.x.sum() == pytest.approx(1.0)


@pytest.mark.parametrize("backend", [pytest.param(b, marks=slow) if b == "pulp" else b
                                     for b in BACKENDS])
def test_time_limit_returns_a_feasible_answer(backend):
    p = random_problem(1500 if backend == "highs" else 600, np.random.default_rng(9), n_types=5)
    for objective in ("max-min", "ftf"):
        res = solve_allocation(p, objective, backend=backend, time_limit_s=0.005)
        assert res.status in {"optimal", "time_limit"}
        check_feasible(p, res.x)
        if res.status == "time_limit" and objective == "ftf":
            assert np.isfinite(res.objective)   # the constructed fallback bound is feasible


@pytest.mark.parametrize("kwargs,field", [
    ({"n_jobs": 2.5}, "n_jobs"), ({"n_jobs": -1}, "n_jobs"), ({"n_types": 2.5}, "n_types"),
    ({"candidates_per_job": 0}, "candidates_per_job"), ({"max_gpus": 48}, "max_gpus"),
    ({"total_gpus": True}, "total_gpus"), ({"mixed_fraction": 1.5}, "mixed_fraction"),
    ({"rng": 7}, "rng"),
])
def test_random_problem_names_a_bad_argument(kwargs, field):
    """``random_problem`` (documented in docs/lp.md) raised raw TypeErrors / numpy errors."""
    args = {"n_jobs": 3, "rng": np.random.default_rng(0), **kwargs}
    with pytest.raises(ConfigError) as err:
        random_problem(args.pop("n_jobs"), args.pop("rng"), **args)
    assert err.value.field == field


def test_random_problem_with_one_gpu_candidates_mixed():
    """The smallest valid max_gpus with mixed candidates (numpy's "high <= 0" before)."""
    one = random_problem(3, np.random.default_rng(0), max_gpus=1, mixed_fraction=1.0)
    assert one.gpus.max() == 1 and (one.gpus.sum(axis=1) == 2).all()


def test_invalid_input_is_rejected_with_the_field_name():
    ok = dict(job_of=np.array([0, 1]), gpus=np.array([[1], [2]]), thr=np.array([1.0, 2.0]),
              capacity=np.array([4.0]), norm=np.ones(2))
    AllocationProblem(**ok)
    bad = [("job_of", np.array([0, 2])), ("job_of", np.array([0, 0])),
           ("gpus", np.array([[1, 0], [2, 0]])), ("gpus", np.array([[0], [2]])),
           ("gpus", np.array([[1.5], [2]])), ("thr", np.array([1.0, 0.0])),
           ("capacity", np.array([-1.0])), ("capacity", np.array([4.5])),
           ("capacity", np.array([True])), ("norm", np.array([1.0, np.nan])),
           ("weight", np.ones(3))]
    for name, value in bad:
        with pytest.raises(ValueError, match=name):
            AllocationProblem(**{**ok, name: value})
    # a norm of the wrong length is named, not job_of (which blamed job_of's indices)
    for norm in (np.ones(1), np.ones(3)):
        with pytest.raises(ConfigError, match=r"has \d entries \(one per job\), but job_of "
                                              r"names jobs 0\.\.1: expected 2") as err:
            AllocationProblem(**{**ok, "norm": norm})
        assert err.value.field == "norm"
    # an index far outside is job_of's error, found before any per-job count is made
    with pytest.raises(ConfigError, match=r"index 1 names job 100000000000") as err:
        AllocationProblem(**{**ok, "job_of": np.array([0, 10**11])})
    assert err.value.field == "job_of"
    p = AllocationProblem(**ok)
    with pytest.raises(ValueError, match="remaining"):
        solve_allocation(p, "min-makespan")
    with pytest.raises(ValueError, match="objective"):
        solve_allocation(p, "fastest")
    with pytest.raises(ValueError, match="backend"):
        solve_allocation(p, backend="gurobi")


def test_arguments_of_the_wrong_kind_are_refused_by_name():
    """A string time limit or a non-mapping ``highs_options`` raised a bare ``TypeError``; a
    truthy string for ``secondary`` ran the fill solve and ``floor=True`` read as 1."""
    p = random_problem(5, np.random.default_rng(0))
    for kw, field in (({"time_limit_s": "5"}, "time_limit_s"),
                      ({"time_limit_s": math.nan}, "time_limit_s"),
                      ({"highs_options": 5}, "highs_options"),
                      ({"secondary": "no"}, "secondary"), ({"floor": True}, "floor")):
        with pytest.raises(ConfigError) as err:
            solve_allocation(p, "max-min", **kw)
        assert err.value.field == field
    for kw in ({"time_limit_s": np.float64(5)}, {"floor": np.float32(0.5)},
               {"secondary": np.False_}, {"highs_options": {}}):
        assert solve_allocation(p, "max-min", **kw).status == "optimal"


def test_highs_options_are_passed_and_checked():
    p = random_problem(30, np.random.default_rng(3), candidates_per_job=4, total_gpus=64)
    ref = solve_allocation(p, "max-min")
    for backend in BACKENDS:
        ipm = solve_allocation(p, "max-min", backend=backend, highs_options={"solver": "ipm"})
        assert ipm.status == "optimal" and rel(ipm.objective, ref.objective) < 1e-6
    with pytest.raises(ValueError, match="no_such_option"):
        solve_allocation(p, highs_options={"no_such_option": 1})
    with pytest.raises(ValueError, match="threads"):
        solve_allocation(p, highs_options={"threads": 4})


def test_fill_solve_recovers_from_a_warm_start_failure():
    """A real round (65 jobs, top-4 candidates, modern-512) on which HiGHS ended the
    warm-started fill solve in status 'unknown': the solver retries it cold."""
    from pathlib import Path
    data = np.load(Path(__file__).parent / "data" / "lp_fill_warm_unknown.npz")
    p = AllocationProblem(**{k: data[k] for k in data.files})
    res = solve_allocation(p, "max-min")
    assert res.status == "optimal" and res.iterations == 2
    primary = solve_allocation(p, "max-min", secondary=False)
    assert res.objective == pytest.approx(primary.objective, rel=1e-6)
    # the fill solve used leftover capacity: mean normalized throughput at least the primary's
    def mean_norm(x):
        thr = np.bincount(p.job_of, weights=p.thr * x, minlength=p.norm.size)
        return float(np.mean(thr / p.norm))
    assert mean_norm(res.x) >= mean_norm(primary.x) - 1e-9


# ------------------------------------------------------------------------------ fair-srpt / fair-las
def two_stage_linprog(p: AllocationProblem, floor: float) -> tuple[float, float]:
    """``(t*, stage-2 optimum)`` of the two-stage objectives, written independently: max-min
    by ``linprog_reference``, then max Σ priority·switch·thr·X/norm with every runnable job at
    ``>= floor * t*`` (dense, loops)."""
    t_star = linprog_reference(p, "max-min")
    c_n, j_n = p.n_candidates, p.n_jobs
    fits = [all(p.gpus[c, t] <= p.capacity[t] for t in range(p.n_types)) for c in range(c_n)]
    pri = np.ones(j_n) if p.priority is None else p.priority
    sw = np.ones(c_n) if p.switch is None else p.switch
    cost = [-pri[p.job_of[c]] * sw[c] * p.thr[c] / p.norm[p.job_of[c]] if p.gain is None
            else -p.gain[c] for c in range(c_n)]
    a_ub, b_ub = [], []
    for j in range(j_n):
        a_ub.append([1.0 if p.job_of[c] == j else 0.0 for c in range(c_n)])
        b_ub.append(1.0)
        if any(fits[c] for c in range(c_n) if p.job_of[c] == j):
            a_ub.append([-p.thr[c] / (p.weights()[j] * p.norm[j]) if p.job_of[c] == j else 0.0
                         for c in range(c_n)])
            b_ub.append(-floor * t_star * (1 - 1e-9))
    for t in range(p.n_types):
        a_ub.append([float(p.gpus[c, t]) for c in range(c_n)])
        b_ub.append(p.capacity[t])
    res = linprog(cost, A_ub=np.array(a_ub), b_ub=np.array(b_ub),
                  bounds=[(0.0, 1.0 if fits[c] else 0.0) for c in range(c_n)], method="highs")
    assert res.status == 0, res.message
    return t_star, -res.fun


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("objective", FLOOR_OBJECTIVES)
@pytest.mark.parametrize("floor", [0.0, 0.5, 1.0])
@pytest.mark.parametrize("seed,cands", TINY)
def test_two_stage_objectives_against_independent_lps(seed, cands, floor, objective, backend):
    base = tiny_problem(seed, cands)
    rng = np.random.default_rng(seed + 100)
    p = AllocationProblem(base.job_of, base.gpus, base.thr, base.capacity, base.norm,
                          weight=base.weight, remaining=base.remaining,
                          priority=rng.uniform(0.1, 3.0, base.n_jobs),
                          switch=rng.uniform(0.5, 1.0, base.n_candidates),
                          # sia-*: a per-candidate gain, some negative (not worth running)
                          gain=(rng.uniform(-0.5, 2.0, base.n_candidates)
                                if objective.startswith("sia-") else None))
    res = solve_allocation(p, objective, backend=backend, floor=floor)
    # a floor of 0 holds nothing: one solve of the second stage, no t*
    assert res.status == "optimal" and res.iterations == (1 if floor == 0 else 2)
    check_feasible(p, res.x)
    t_star, best = two_stage_linprog(p, floor)
    if floor == 0:
        assert math.isnan(res.floor_ratio)
    else:
        assert res.floor_ratio == pytest.approx(t_star, rel=1e-6)
    assert res.objective == pytest.approx(best, rel=1e-6)
    assert res.objective == pytest.approx(evaluate_objective(p, res.x, objective), rel=1e-12)
    # the floor holds at the returned x
    ratio = p.job_throughput(res.x) / (p.weights() * p.norm)
    assert ratio.min() >= floor * t_star * (1 - 1e-6)


def test_two_stage_closed_form_srpt():
    # one GPU, two identical one-GPU jobs with 10 and 100 samples left (SRPT weights norm/rem)
    def problem():
        return AllocationProblem(job_of=np.array([0, 1]), gpus=np.array([[1], [1]]),
                                 thr=np.array([1.0, 1.0]), capacity=np.array([1.0]),
                                 norm=np.ones(2), remaining=np.array([10.0, 100.0]),
                                 priority=np.array([1 / 10, 1 / 100]))
    # max-min gives each half the GPU (t* = 0.5); a floor of 0.5 keeps each at >= 0.25 and the
    # rest goes to the short job; with no floor the short job takes the whole GPU
    for floor, short in [(0.5, 0.75), (0.0, 1.0), (1.0, 0.5)]:
        res = solve_allocation(problem(), "fair-srpt", floor=floor)
        assert math.isnan(res.floor_ratio) if floor == 0 else \
            res.floor_ratio == pytest.approx(0.5)
        # (a floor of 1 is held at 1 - LEX_REL_TOL, like max-min's fill solve)
        assert res.x[0] == pytest.approx(short, abs=1e-6)
        assert res.x[1] == pytest.approx(1 - short, abs=1e-6)


def test_two_stage_inputs_are_validated():
    base = tiny_problem(11, (2, 2))
    kw = dict(job_of=base.job_of, gpus=base.gpus, thr=base.thr, capacity=base.capacity,
              norm=base.norm)
    with pytest.raises(ValueError, match="priority"):
        AllocationProblem(**kw, priority=np.array([1.0, -1.0]))
    with pytest.raises(ValueError, match="switch"):
        AllocationProblem(**kw, switch=np.full(base.n_candidates, 1.5))
    with pytest.raises(ValueError, match="switch"):
        AllocationProblem(**kw, switch=np.zeros(base.n_candidates))
    with pytest.raises(ValueError, match="floor"):
        solve_allocation(AllocationProblem(**kw), "fair-srpt", floor=1.5)


def test_highs_banner_capture_leaves_stdout_in_place_under_threads():
    """POP parts solved on threads may build the process's first Highs object (the one made
    inside the fd-1 capture, ``backends._new_highs``) at the same time; without turns,
    interleaved save / redirect / restore left fd 1 on a temporary file and the rest of the
    process's output (``hsched demo``'s schedule table) was lost."""
    import os
    import threading
    import time
    from lp_baseline.backends import highs_output_to_log
    before = os.fstat(1)

    def build():
        with highs_output_to_log():
            time.sleep(0.01)               # another thread tries to redirect meanwhile

    threads = [threading.Thread(target=build) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    after = os.fstat(1)
    assert (after.st_dev, after.st_ino) == (before.st_dev, before.st_ino)


def test_reused_highs_object_gives_what_a_new_one_gives(monkeypatch):
    """``HighsModel.close`` hands its cleared ``Highs`` object to the thread's next LP with the
    same options (``backends._acquire_highs``): the answers stay those of new objects, bit for
    bit, across objectives and methods, and an object configured for one method never serves
    another."""
    from lp_baseline import backends
    made = []
    real_new = backends._new_highs

    def counting_new():
        made.append(real_new())
        return made[-1]

    monkeypatch.setattr(backends, "_new_highs", counting_new)
    rng = np.random.default_rng(11)
    problems = [random_problem(n, rng, n_types=3, total_gpus=64) for n in (5, 40, 400)]
    cases = [(q, o, m) for p in problems for o in ("max-min", "sia-srpt", "ftf")
             for q in [with_gain(p, o)] for m in ("simplex", "ipm", "colgen")]

    def solve_all(order=1):
        return [_digest(solve_allocation(q, o, method=m)) for q, o, m in cases[::order]]

    fresh = []
    for q, o, m in cases:                      # each on a new object
        backends._idle.pool = {}
        fresh.append(_digest(solve_allocation(q, o, method=m)))
    backends._idle.pool = {}
    made.clear()
    first = solve_all()
    reused = solve_all(-1)                     # every object now reused, in another order
    assert first == fresh
    assert solve_all() == fresh and reused == fresh[::-1]
    # one object per option set (simplex and colgen share theirs; ipm has its own), kept
    assert len(made) == 2
    assert sorted(len(v) for v in backends._idle.pool.values()) == [1, 1]
    from lp_baseline.solver import METHOD_OPTIONS
    ipm = backends._acquire_highs(METHOD_OPTIONS["ipm"])
    assert ipm.getOptionValue("solver")[1] == "ipm"
    plain = backends._acquire_highs({})
    assert plain.getOptionValue("solver")[1] != "ipm"


def test_highs_pool_keeps_a_bounded_number_of_option_sets():
    """A caller varying ``highs_options`` on every solve does not make the per-thread pool of
    idle ``Highs`` objects grow without bound."""
    from lp_baseline import backends
    backends._idle.pool = {}
    p = random_problem(6, np.random.default_rng(2), n_types=2, total_gpus=16)
    for i in range(3 * backends._IDLE_SETS):
        tolerance = {"primal_feasibility_tolerance": 1e-7 + i * 1e-9}
        solve_allocation(p, "max-min", highs_options=tolerance)
    assert 1 <= len(backends._idle.pool) <= backends._IDLE_SETS
