"""Allocation LP over job × candidate: Gavel's formulations extended from GPU types to candidates.

This module solves it (``solve_allocation``, with its lexicographic and ftf-bisection solves).
The pieces live beside it: the problem data, ``LPResult`` and the objectives' evaluation in
``lp_baseline.problem``, the LP as arrays in ``lp_baseline.formulation``, the HiGHS and PuLP
backends in ``lp_baseline.backends``, synthetic instances in ``lp_baseline.instances``.

A *candidate* is one way a job can run: a resource set (GPUs of each type) plus a parallelization
strategy, with a predicted throughput. The LP chooses ``X[c]`` in ``[0, 1]``, the share of wall
time each job spends running with each of its candidates until the allocation is recomputed:

* ``0 <= X[c] <= 1``;
* per job ``j``: ``sum_{c of j} X[c] <= 1``;
* per GPU type ``t``: ``sum_c gpus[c, t] * X[c] <= capacity[t]``.

With ``thr_j(X) = sum_{c of j} thr[c] * X[c]`` the objectives are

* ``max-min`` (Gavel's LAS): maximize ``min_j thr_j(X) / (weight_j * norm_j)``;
* ``max-throughput``: maximize ``sum_j thr_j(X) / norm_j``;
* ``min-makespan``: minimize ``M`` s.t. ``thr_j(X) >= remaining_j / M``, solved as one LP in
  ``z = 1 / M``;
* ``ftf`` (Themis finish-time fairness): minimize ``max_j rho_j`` with
  ``rho_j = (age_j + remaining_j / thr_j(X)) / D_j``, by bisection on ``r`` over feasibility
  LPs ``thr_j(X) >= remaining_j / (r * D_j - age_j)``;
* ``fair-srpt`` / ``fair-las`` (HeteroSched's JCT objectives, two stages): first the max-min
  optimum ``t*`` of ``thr_j(X) / norm_j``; then, with every job held at
  ``thr_j(X) / norm_j >= floor * t*`` (a fairness *floor*, default 0.5), maximize
  ``sum_j priority_j * sum_{c of j} switch_c * thr[c] * X[c] / norm_j`` (plus a 1e-6
  normalized-throughput term, ``STAGE2_FILL``, so no capacity idles). The caller sets
  ``priority`` (``LPPolicy``: ``norm_j / remaining_j`` for the clairvoyant, SRPT-like
  ``fair-srpt``; a discretized least-attained-service class weight for the non-clairvoyant
  ``fair-las``) and ``switch`` (the share of time a candidate would be productive after a
  restart; 1 for the current one). The two names differ only in how the caller weighs jobs.
* ``sia-srpt`` / ``sia-las`` (the co-optimizer's default): the same two stages with the
  per-candidate ``gain`` as the second stage's coefficients (``LPPolicy``: Sia's gain of
  running over waiting, weighted by SRPT / LAS job weights; ``gain`` is required); with
  ``floor=0`` (``LPPolicy``'s default for them; this function's default floor is 0.5 for
  every two-stage objective) there are no max-min rows and one solve.

``max-min`` and ``min-makespan`` are solved **lexicographically** (unless ``secondary=False``):
after the primary optimum ``v*`` is found, the primary variable is bounded to
``>= v* * (1 - LEX_REL_TOL)`` and a second solve, warm-started from the first basis, maximizes
the normalized throughput ``mean_j thr_j(X) / norm_j`` so that capacity the bottleneck jobs cannot
use is not left idle. The ``ftf`` feasibility LPs carry the same secondary objective, so the last
feasible one is already filled. See ``docs/lp.md``.

The two backends (``backend="highs"``, the default, or ``"pulp"``; ``lp_baseline.backends``)
solve the same model and give the same ``x`` bit for bit.

Failures never raise out of ``solve_allocation``: an infeasible model, a time limit without a
feasible point, a solver exception and a missing solver (``highspy`` not importable: this module
still imports, every solve returns status ``"unavailable"``) come back as ``LPResult.status``
with ``has_x=False`` and a ``message``; ``lp_baseline.policy.LPPolicy`` then falls back to a
greedy assignment (``docs/lp.md``, "Faults and fallback").
"""

from __future__ import annotations

import logging
import math
import time
from collections.abc import Mapping

import numpy as np

from hsched_env.errors import ConfigError, check_switch, is_real_number

# ``highspy`` is imported into this module on purpose: ``solve_allocation`` checks this module's
# binding, so setting ``lp_baseline.solver.highspy = None`` simulates a missing solver (as
# tests/test_faults.py and scripts/reliability.py do).
from lp_baseline.backends import (BACKENDS, HIGHSPY_IMPORT_ERROR, HighsDriver, PulpDriver,
                                  SolverRun, highspy)
from lp_baseline.colgen import ColumnGenerationDriver
from lp_baseline.formulation import LPSpec, build_spec
from lp_baseline.problem import (DEFAULT_FLOOR, FLOOR_OBJECTIVES, OBJECTIVES, SIA_OBJECTIVES,
                                 AllocationProblem, LPResult, evaluate_objective,
                                 require_field)
from lp_baseline.warm_start import BasisKeys, LabeledBasis, lp_labels
# Re-exported: callers (tests, scripts, docs/lp.md) import these from ``lp_baseline.solver``,
# where they were before the split.
from lp_baseline.backends import solver_available
from lp_baseline.instances import random_problem
from lp_baseline.problem import check_feasible

__all__ = ["BACKENDS", "DEFAULT_FLOOR", "FLOOR_OBJECTIVES", "FTF_MAX_ITERS", "FTF_REL_TOL",
           "LEX_REL_TOL", "OBJECTIVES", "AllocationProblem", "LPResult", "check_feasible",
           "evaluate_objective", "random_problem", "solve_allocation", "solver_available"]
#: ``build_spec``'s name before the split (scripts/bench_lp.py imports it).
_build_spec = build_spec

log = logging.getLogger(__name__)

#: The secondary (fill) solve keeps the primary variable within this relative gap of its optimum.
LEX_REL_TOL = 1e-7
#: Relative width at which the ftf bisection stops: ``hi <= lo * (1 + FTF_REL_TOL)``.
FTF_REL_TOL = 1e-3
#: Hard cap on ftf bisection LP solves.
FTF_MAX_ITERS = 60
#: ``solve_allocation(method=)``: HiGHS' dual simplex over every column, its interior point
#: method with crossover, dual simplex over a restricted LP grown by column generation
#: (``lp_baseline.colgen``: the same optimum, certified by pricing every column), or ``auto``:
#: column generation for an LP of at least ``COLGEN_MIN_COLUMNS`` columns (``highs``
#: backend), else the dual simplex.
METHODS = ("simplex", "ipm", "colgen", "auto")
#: The HiGHS options each method adds.
METHOD_OPTIONS = {"simplex": {}, "ipm": {"solver": "ipm", "run_crossover": "on"}, "colgen": {},
                  "auto": {}}
#: ``method="auto"`` uses column generation from this many LP columns up. Measured
#: (docs/lp.md, "LP methods"): on synthetic ``sia-srpt`` LPs column generation is 1.17× the
#: dual simplex's time at 500 columns, 0.93× at 1,000, 0.69× at 1,800, 0.46× at 3,000; on the
#: quality benchmark's rounds (125–1,100 columns on average) it is 1.0–2.5× slower.
COLGEN_MIN_COLUMNS = 2000


def _repair(p: AllocationProblem, x: np.ndarray) -> np.ndarray:
    """Clip solver output into the feasible set (removes violations of solver-tolerance size);
    a solver's -0.0 becomes 0.0 (``+ 0.0``), so no share prints or serialises as ``-0.0``."""
    x = np.clip(x, 0.0, 1.0) + 0.0
    if not x.size:
        return x
    per_job = np.bincount(p.job_of, weights=x, minlength=p.n_jobs)
    x = x / np.maximum(per_job, 1.0)[p.job_of]
    use = p.gpus.T @ x
    over = use > p.capacity
    if over.any():
        x = x * float(np.min(p.capacity[over] / use[over]))
    return x


# ------------------------------------------------------------------------------ solve
def solve_allocation(p: AllocationProblem, objective: str = "max-min", *, backend: str = "highs",
                     time_limit_s: float | None = None, secondary: bool = True,
                     highs_options: dict | None = None,
                     floor: float = DEFAULT_FLOOR, method: str = "simplex",
                     basis_keys: BasisKeys | None = None,
                     warm_basis: LabeledBasis | None = None,
                     start: np.ndarray | None = None) -> LPResult:
    """Solve the allocation LP for one round.

    Args:
        p: the problem (all candidates of the active jobs).
        objective: one of ``OBJECTIVES``.
        backend: ``"highs"`` (sparse arrays straight into highspy; default, fast) or ``"pulp"``.
        time_limit_s: wall-clock budget of the call, from its start (model building
            included), shared by all solves of a lexicographic or bisection run (HiGHS
            ``time_limit`` gets what is left). On expiry the best primal feasible point found
            so far is returned with status ``"time_limit"`` (zeros and ``has_x=False`` if none).
        secondary: for max-min / min-makespan, a second (warm-started) solve that maximizes
            normalized throughput with the primary held at its optimum; for ftf the bisection
            LPs carry that objective. No effect on max-throughput.
        highs_options: extra HiGHS options (e.g. ``{"solver": "ipm"}``), both backends.
        floor: (the two-stage objectives) the second stage holds every job at ``>= floor * t*``,
            ``t*`` the max-min optimum; in [0, 1] (1: the JCT objective only breaks ties
            among max-min optima; 0: no fairness floor).
        method: one of ``METHODS``: ``"simplex"`` (default), ``"ipm"``, ``"colgen"``
            (column generation, ``lp_baseline.colgen``; ``backend="highs"`` only) or
            ``"auto"`` (``"colgen"`` from ``COLGEN_MIN_COLUMNS`` LP columns up on the
            ``highs`` backend, else ``"simplex"``); ``LPResult.method`` says which ran.
        basis_keys: what the problem's jobs and candidates are across decisions
            (``warm_start.BasisKeys``); with it, a dual simplex solve on the ``highs`` backend
            returns its first optimal basis in ``LPResult.basis``.
        warm_basis: a previous decision's ``LPResult.basis``: the dual simplex starts from it,
            mapped onto this LP by label (``warm_start``; needs ``basis_keys``). The same
            optimum, possibly another optimal vertex. Column generation, IPM and ``pulp``
            ignore it.
        start: a guess of the optimal support (a bool mask over ``p``'s candidates, or their
            indices), e.g. a learned ranker's best-scored candidates: column generation's
            first restricted LP holds them besides its own start (``colgen``). Without a
            time limit, the same optimal value whatever the guess (column generation
            certifies its stop), possibly another optimal vertex; a good guess saves
            restricted solves. Under ``time_limit_s`` a solve cut short returns the restricted
            optimum it reached, which depends on the start. The other methods ignore it. A
            non-bool array of 0s and 1s as long as the candidates is refused (a mask given
            as numbers: pass it as bool).

    Returns:
        An ``LPResult``. Infeasible, failed or impossible solves (no solver) are reported in
        ``status`` (and ``message``), not raised; invalid arguments raise ``ConfigError`` (a ``ValueError``) naming the argument.
    """
    if objective not in OBJECTIVES:
        raise ConfigError(f"unknown objective {objective!r}; expected one of {OBJECTIVES}",
                          field="objective")
    if backend not in BACKENDS:
        raise ConfigError(f"unknown backend {backend!r}; expected one of {BACKENDS}",
                          field="backend")
    if time_limit_s is not None and not (is_real_number(time_limit_s) and time_limit_s > 0):
        raise ConfigError(f"time_limit_s must be a number > 0 (or None), got "
                          f"{time_limit_s!r}", field="time_limit_s")
    if not (is_real_number(floor) and 0.0 <= floor <= 1.0):
        raise ConfigError(f"floor must be a number in [0, 1], got {floor!r}", field="floor")
    check_switch(secondary, "secondary")
    if highs_options is not None and not isinstance(highs_options, Mapping):
        raise ConfigError(f"highs_options must be a mapping of HiGHS option names to values "
                          f"(or None), got {type(highs_options).__name__}",
                          field="highs_options")
    if method not in METHODS:
        raise ConfigError(f"unknown LP method {method!r}; expected one of {METHODS}",
                          field="method")
    if warm_basis is not None and basis_keys is None:
        raise ConfigError("warm_basis needs basis_keys (the labels to map it by)",
                          field="warm_basis")
    if method == "colgen" and backend != "highs":
        raise ConfigError(f"method='colgen' needs backend='highs', got {backend!r}",
                          field="method")
    if start is not None:
        start = _candidate_indices(start, p.n_candidates)
    if objective in ("min-makespan", "ftf"):
        require_field(p, "remaining", objective)
    if objective in SIA_OBJECTIVES:
        require_field(p, "gain", objective)
    if objective == "ftf":
        require_field(p, "age_s", objective)
        require_field(p, "ftf_denominator_s", objective)
    options = {**METHOD_OPTIONS[method], **(highs_options or {})}
    reserved = {"threads", "random_seed", "time_limit", "output_flag"} & set(options)
    if reserved:
        raise ConfigError(f"highs_options may not set {sorted(reserved)}: the solver sets them "
                          "(use time_limit_s for the time limit)", field="highs_options")

    t0 = time.perf_counter()
    fit = p.fits()
    run = p.runnable(fit)
    unrunnable = np.flatnonzero(~run)
    if unrunnable.size:
        log.debug("allocation LP: %d job(s) cannot run on this capacity: %s",
                  unrunnable.size, unrunnable[:10])
    best = np.zeros(p.n_jobs)   # best fitting throughput of each job
    np.maximum.at(best, p.job_of[fit], p.thr[fit])
    if objective in FLOOR_OBJECTIVES and floor <= 0:
        # no floor to hold: no max-min rows, one solve of the second stage
        constrained = np.zeros(p.n_jobs, dtype=bool)
        coef_scale = np.zeros(p.n_jobs)
    elif objective == "max-min" or objective in FLOOR_OBJECTIVES:
        constrained = run.copy()
        coef_scale = 1.0 / (p.weights() * p.norm)
    elif objective in ("min-makespan", "ftf"):
        constrained = run & (p.remaining > 0)
        with np.errstate(divide="ignore", invalid="ignore"):
            t_iso = np.where(constrained, p.remaining / np.where(best > 0, best, 1.0), 0.0)
        # time scale S: keeps the objective rows' coefficients and right-hand sides near 1
        scale = float(np.median(t_iso[constrained])) if constrained.any() else 1.0
        coef_scale = np.where(constrained, scale / np.where(p.remaining > 0, p.remaining, 1.0), 0.0)
    else:
        constrained = np.zeros(p.n_jobs, dtype=bool)
        coef_scale = np.zeros(p.n_jobs)

    x = np.zeros(p.n_candidates)
    if not fit.any():
        build_s = time.perf_counter() - t0
        return LPResult(x=x, objective=evaluate_objective(p, x, objective), status="optimal",
                        backend=backend, build_s=build_s, solve_s=0.0, n_vars=0, n_cons=0,
                        iterations=0, unrunnable=unrunnable)

    def failed(status: str, message: str, n_vars: int = 0, n_cons: int = 0) -> LPResult:
        # Logged at debug level: callers (LPPolicy) report failures, rate-limited.
        log.debug("allocation LP (%s): %s: %s", backend, status, message)
        return LPResult(x=x, objective=evaluate_objective(p, x, objective), status=status,
                        backend=backend, build_s=time.perf_counter() - t0, solve_s=0.0,
                        n_vars=n_vars, n_cons=n_cons, iterations=0, unrunnable=unrunnable,
                        has_x=False, message=message)

    if highspy is None:   # both backends run HiGHS through highspy
        return failed("unavailable", HIGHSPY_IMPORT_ERROR or "highspy is not available")
    spec = build_spec(p, objective, fit, run, constrained, coef_scale)
    if spec.aux is not None:   # finite upper bound on t / z' (each job is capped by its best)
        spec.col_hi[spec.aux] = float(np.min(best[spec.obj_jobs] * coef_scale[spec.obj_jobs]))
    n_cons, n_vars = spec.shape
    try:
        if method == "auto":
            method = ("colgen" if backend == "highs" and n_vars >= COLGEN_MIN_COLUMNS
                      else "simplex")
        if method == "colgen":
            driver = ColumnGenerationDriver(
                spec, options, start=None if start is None else
                np.flatnonzero(np.isin(spec.cand, start, assume_unique=True)))
        else:
            driver = (HighsDriver if backend == "highs" else PulpDriver)(spec, options)
    except ValueError:   # a bad highs_options entry is the caller's error
        raise
    except ImportError as exc:   # PuLP (pulp backend) not installed
        return failed("unavailable", f"{backend} backend cannot be imported ({exc})",
                      n_vars, n_cons)
    except Exception as exc:   # noqa: BLE001 - reported as a status, the caller falls back
        return failed("error", f"model build failed: {type(exc).__name__}: {exc}",
                      n_vars, n_cons)
    labels = None
    warm_started = False
    if basis_keys is not None and method == "simplex" and isinstance(driver, HighsDriver):
        labels = lp_labels(basis_keys, p.job_of, spec)
        driver.record_basis = True
        if warm_basis is not None:
            warm_started = driver.set_basis(*warm_basis.map_onto(*labels))
    t1 = time.perf_counter()
    build_s = t1 - t0

    def budget() -> float | None:
        return None if time_limit_s is None else time_limit_s - (time.perf_counter() - t0)

    message = ""
    floor_ratio = math.nan
    try:
        if objective == "ftf":
            status, values, iters, run_s = _solve_ftf(p, spec, driver, best, coef_scale, budget)
        else:
            keep = (min(floor, 1.0 - LEX_REL_TOL) if objective in FLOOR_OBJECTIVES
                    else 1.0 - LEX_REL_TOL)
            status, values, iters, run_s, floor_ratio = _solve_lexicographic(
                spec, driver, budget, secondary and spec.aux is not None, keep)
    except Exception as exc:   # noqa: BLE001 - reported as a status, the caller falls back
        message = f"solve failed: {type(exc).__name__}: {exc}"
        log.debug("allocation LP (%s): %s", backend, message)
        status, values, iters, run_s = "error", None, 0, 0.0
    finally:
        close = getattr(driver, "close", None)
        if close is not None:
            close()                  # its Highs object serves this thread's next LP
    solve_s = time.perf_counter() - t1
    if objective not in FLOOR_OBJECTIVES or values is None or spec.aux is None:
        floor_ratio = math.nan

    if values is not None and not np.all(np.isfinite(values[: spec.cand.size])):
        message = "the solver returned non-finite values"
        status, values = "error", None
    if values is not None:
        x[spec.cand] = values[: spec.cand.size]
        x = _repair(p, x)
    elif status == "error" and not message:
        message = "the solver ended without a solution (HiGHS model status unknown)"
    return LPResult(x=x, objective=evaluate_objective(p, x, objective), status=status,
                    backend=backend, build_s=build_s, solve_s=solve_s, n_vars=n_vars,
                    n_cons=n_cons, iterations=iters, unrunnable=unrunnable, highs_run_s=run_s,
                    has_x=values is not None, message=message, floor_ratio=floor_ratio,
                    columns_solved=getattr(driver, "columns", n_vars), method=method,
                    pricing_rounds=getattr(driver, "rounds", 0),
                    basis=_labeled_basis(labels, driver), warm_started=warm_started,
                    warm_retried=getattr(driver, "warm_retried", False))


def _candidate_indices(start, n: int) -> np.ndarray:
    """``start`` (a bool mask of length ``n`` or candidate indices) as sorted unique indices;
    ``ConfigError`` naming ``start`` otherwise."""
    a = np.asarray(start)
    if a.dtype == bool:
        if a.shape != (n,):
            raise ConfigError(f"a bool start mask needs one entry per candidate ({n}), got "
                              f"shape {a.shape}", field="start")
        return np.flatnonzero(a)
    if a.ndim != 1 or (a.size and not np.issubdtype(a.dtype, np.integer)):
        raise ConfigError(f"start must be a bool mask or candidate indices, got "
                          f"{a.dtype} of shape {a.shape}", field="start")
    if a.size and (a.min() < 0 or a.max() >= n):
        raise ConfigError(f"start indices must be candidates 0..{n - 1}, got "
                          f"{int(a.min())}..{int(a.max())}", field="start")
    if n > 2 and a.size == n and np.all((a == 0) | (a == 1)):
        raise ConfigError(f"start is {n} numbers of 0 and 1: a mask given as "
                          f"{a.dtype}? Pass a bool mask (start.astype(bool)) or candidate "
                          f"indices", field="start")
    return np.unique(a.astype(np.int64))


def _labeled_basis(labels, driver) -> LabeledBasis | None:
    """The driver's first optimal basis under the LP's labels (``None`` without either)."""
    if labels is None or driver.first_basis is None:   # labels: a HighsDriver's LP only
        return None
    (cols, rows), (col_status, row_status) = labels, driver.first_basis
    return LabeledBasis.of(cols, col_status, rows, row_status)


def _solve_lexicographic(spec: LPSpec, driver, budget, secondary: bool, keep: float):
    """Primary solve, then (optionally) the second solve with the primary variable held at
    ``>= keep *`` its optimum: ``1 - LEX_REL_TOL`` for the fill solve of max-min and
    min-makespan, the fairness floor for fair-srpt / fair-las. Returns ``(status, column
    values, LP solves, HiGHS run time, primary optimum)``."""
    first = driver.run(budget())
    if first.status != "optimal" or not secondary:
        primary = (float(first.values[spec.aux]) if first.values is not None
                   and spec.aux is not None else math.nan)
        return first.status, first.values, 1, first.run_s, primary
    primary = float(first.values[spec.aux])
    left = budget()
    if left is not None and left <= 0:
        return "time_limit", first.values, 1, first.run_s, primary
    driver.set_col_lower(spec.aux, max(0.0, primary * keep))
    driver.set_cost(spec.fill)
    second = driver.run(left)
    run_s = first.run_s + second.run_s
    if second.status == "error" and hasattr(driver, "clear_solver"):
        # HiGHS sometimes ends a warm-started re-solve in status "unknown"; a cold solve of the
        # same (modified) model then succeeds.
        driver.clear_solver()
        second = driver.run(budget())
        run_s += second.run_s
    if second.status == "optimal":
        return "optimal", second.values, 2, run_s, primary
    if second.status == "time_limit":
        # the fill solve did not finish: the primary optimum stands, the fill is incomplete
        values = second.values if second.values is not None else first.values
        return "time_limit", values, 2, run_s, primary
    # a numerical failure of the fill solve does not void the primary optimum
    log.warning("allocation LP: fill solve ended %s; returning the primary solution", second.status)
    return "optimal", first.values, 2, run_s, primary


def _best_candidate(p: AllocationProblem, fit: np.ndarray) -> np.ndarray:
    """(J,) index of each job's fastest fitting candidate (lowest index on ties), -1 if none."""
    fc = np.flatnonzero(fit)
    order = fc[np.lexsort((fc, -p.thr[fc], p.job_of[fc]))]
    jobs = p.job_of[order]
    first = np.ones(order.size, dtype=bool)
    first[1:] = jobs[1:] != jobs[:-1]
    out = np.full(p.n_jobs, -1, dtype=np.int64)
    out[jobs[first]] = order[first]
    return out


def _solve_ftf(p: AllocationProblem, spec: LPSpec, driver, best: np.ndarray,
               coef_scale: np.ndarray, budget):
    """Bisection on r over feasibility LPs ``thr_j(X) >= remaining_j / (r D_j - age_j)``.

    Each LP maximizes the secondary (normalized throughput), so the last feasible one is the
    answer. Returns ``(status, column values, LP solves, HiGHS run time)``.
    """
    jobs = spec.obj_jobs
    if jobs.size == 0:   # no job has work left: ftf is vacuous, maximize normalized throughput
        res = driver.run(budget())
        return res.status, res.values, 1, res.run_s
    rem, age, den = p.remaining[jobs], p.age_s[jobs], p.ftf_denominator_s[jobs]
    scale = coef_scale[jobs] * rem   # the time scale S (the same for every row)

    # lower bound: every job alone on its fastest candidate
    r_lo = float(np.max((age + rem / best[jobs]) / den))
    # feasible upper bound: every job at share alpha of its fastest candidate, alpha as large
    # as capacity allows; x_hi is that allocation (the fallback if no LP is solved)
    best_cand = _best_candidate(p, p.fits())[jobs]
    use = p.gpus[best_cand].sum(axis=0).astype(np.float64)
    busy = use > 0
    alpha = float(min(1.0, np.min(p.capacity[busy] / use[busy])))
    r_hi = max(r_lo, float(np.max((age + rem / (alpha * best[jobs])) / den)))
    col_of = np.full(p.n_candidates, -1, dtype=np.int64)
    col_of[spec.cand] = np.arange(spec.cand.size)
    x_hi = np.zeros(spec.shape[1])
    x_hi[col_of[best_cand]] = alpha

    def solve_at(r: float) -> SolverRun:
        driver.set_row_lower(spec.obj_rows, scale / (r * den - age))
        return driver.run(budget())

    iters, run_s, status = 0, 0.0, "optimal"
    feasible_values = None
    lo, hi = r_lo, r_hi
    # first probe just above the lower bound: an uncontended cluster needs a single LP
    r = min(r_lo * (1.0 + FTF_REL_TOL / 2), r_hi)
    while iters < FTF_MAX_ITERS:
        left = budget()
        if left is not None and left <= 0:
            status = "time_limit"
            break
        res = solve_at(r)
        iters += 1
        run_s += res.run_s
        if res.status == "optimal":
            hi, feasible_values = r, res.values
        elif res.status == "infeasible":
            lo = r
        else:
            status = res.status
            break
        if hi <= lo * (1.0 + FTF_REL_TOL):
            break
        r = math.sqrt(lo * hi)
        if not lo < r < hi:
            break
    if feasible_values is not None:
        return status, feasible_values, iters, run_s
    if status == "optimal":
        # every probe was infeasible: the answer is the constructed bound r_hi, filled
        left = budget()
        if left is None or left > 0:
            res = solve_at(r_hi)
            iters += 1
            run_s += res.run_s
            if res.status == "optimal":
                return "optimal", res.values, iters, run_s
            status = res.status
        else:
            status = "time_limit"
    # no LP finished: the constructed allocation x_hi is feasible and has rho <= r_hi
    return status, x_hi, iters, run_s

