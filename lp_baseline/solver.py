"""Allocation LP over job × candidate: Gavel's formulations extended from GPU types to candidates.

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

``max-min`` and ``min-makespan`` are solved **lexicographically** (unless ``secondary=False``):
after the primary optimum ``v*`` is found, the primary variable is bounded to
``>= v* * (1 - LEX_REL_TOL)`` and a second solve, warm-started from the first basis, maximizes
the normalized throughput ``mean_j thr_j(X) / norm_j`` so that capacity the bottleneck jobs cannot
use is not left idle. The ``ftf`` feasibility LPs carry the same secondary objective, so the last
feasible one is already filled. See ``docs/lp.md``.

Two backends build the *same* model: ``highs`` assembles the sparse constraint matrix with numpy /
scipy.sparse and hands it to ``highspy`` in one ``passModel`` call (the default: it is the fast
path); ``pulp`` builds it with PuLP objects and solves it with PuLP's highspy-based ``HiGHS``
interface. Both run HiGHS single-threaded with a fixed random seed, so the same input gives the
same ``x`` bit for bit.

Failures never raise out of ``solve_allocation``: an infeasible model, a time limit without a
feasible point, a solver exception and a missing solver (``highspy`` not importable: this module
still imports, every solve returns status ``"unavailable"``) come back as ``LPResult.status``
with ``has_x=False`` and a ``message``; ``lp_baseline.policy.LPPolicy`` then falls back to a
greedy assignment (``docs/lp.md``, "Faults and fallback").
"""

from __future__ import annotations

import contextlib
import logging
import math
import os
import sys
import time
from dataclasses import dataclass, field

import numpy as np
import scipy.sparse as sp

from hsched_env.errors import ConfigError

try:
    import highspy
except ImportError as _exc:          # the policies fall back to their greedy assignment
    highspy = None
    _HIGHSPY_ERROR = f"highspy cannot be imported ({_exc})"
else:
    _HIGHSPY_ERROR = ""

log = logging.getLogger(__name__)

@contextlib.contextmanager
def _stdout_to_stderr():
    """Send file descriptor 1 to stderr for a moment: HiGHS writes its banner straight to the
    process's stdout (not through Python), which would corrupt JSON on stdout."""
    try:
        sys.stdout.flush()
        saved = os.dup(1)
    except (OSError, ValueError):            # no real fd 1 (e.g. captured in tests)
        yield
        return
    try:
        os.dup2(2, 1)
        yield
    finally:
        sys.stdout.flush()
        os.dup2(saved, 1)
        os.close(saved)


OBJECTIVES = ("max-min", "max-throughput", "min-makespan", "ftf", "fair-srpt", "fair-las")
#: The two-stage objectives: a max-min floor, then a weighted-throughput (JCT) objective.
FLOOR_OBJECTIVES = ("fair-srpt", "fair-las")
#: Default fairness floor of the two-stage objectives (fraction of the max-min optimum).
DEFAULT_FLOOR = 0.5
#: Weight (relative to the largest stage-2 coefficient) of the normalized-throughput term
#: added to stage 2, so no capacity is left idle whatever the weights' range.
STAGE2_FILL = 1e-6
BACKENDS = ("highs", "pulp")
STATUSES = ("optimal", "time_limit", "infeasible", "error", "unavailable")

#: HiGHS ``random_seed`` used by both backends (with ``threads = 1``) for reproducible solves.
HIGHS_SEED = 0
#: The secondary (fill) solve keeps the primary variable within this relative gap of its optimum.
LEX_REL_TOL = 1e-7
#: Relative width at which the ftf bisection stops: ``hi <= lo * (1 + FTF_REL_TOL)``.
FTF_REL_TOL = 1e-3
#: Hard cap on ftf bisection LP solves.
FTF_MAX_ITERS = 60

_INF = math.inf                     # highspy.kHighsInf
if highspy is not None:
    _MS = highspy.HighsModelStatus
    _STATUS_OF = {
        _MS.kOptimal: "optimal",
        _MS.kTimeLimit: "time_limit",
        _MS.kIterationLimit: "time_limit",
        _MS.kInterrupt: "time_limit",
        _MS.kInfeasible: "infeasible",
        _MS.kUnboundedOrInfeasible: "infeasible",
    }
    _FEASIBLE = int(highspy.SolutionStatus.kSolutionStatusFeasible)
else:
    _STATUS_OF, _FEASIBLE = {}, -1


def solver_available() -> tuple[bool, str]:
    """``(True, "")`` if HiGHS (``highspy``) can be used, else ``(False, why)``."""
    if highspy is None:
        return False, _HIGHSPY_ERROR or "highspy is not available"
    return True, ""


# ------------------------------------------------------------------------------ data types
def _bad(field_name: str, message: str) -> ConfigError:
    return ConfigError(message, source="AllocationProblem", field=field_name)


def _float_vector(name: str, value, length: int, *, positive: bool) -> np.ndarray:
    arr = np.asarray(value, dtype=np.float64)
    if arr.shape != (length,):
        raise _bad(name, f"expected shape ({length},), got {arr.shape}")
    if not np.all(np.isfinite(arr)):
        first = int(np.flatnonzero(~np.isfinite(arr))[0])
        raise _bad(name, f"must be finite (first bad index {first})")
    bad = arr <= 0 if positive else arr < 0
    if bad.any():
        i = int(np.flatnonzero(bad)[0])
        raise _bad(name, f"must be {'> 0' if positive else '>= 0'}; index {i} is {arr[i]!r}")
    return arr


@dataclass
class AllocationProblem:
    """One round's allocation problem over all candidates of the active jobs.

    Arrays are converted (``job_of``/``gpus`` to int64, the rest to float64) and validated on
    construction; a bad field raises ``ConfigError`` (a ``ValueError``) naming the field.

    Attributes:
        job_of: (C,) job index ``0..J-1`` of each candidate; every job has at least one.
        gpus: (C, T) GPUs of each type the candidate uses (integers >= 0, at least one GPU).
        thr: (C,) candidate throughput in samples/s, > 0.
        capacity: (T,) GPUs available per type, >= 0.
        norm: (J,) the job's equal-share throughput (normalizer), > 0. Defines ``J``.
        weight: (J,) priority weights (max-min), > 0; default 1.
        remaining: (J,) samples remaining, >= 0 (min-makespan, ftf).
        age_s: (J,) seconds since arrival, >= 0 (ftf).
        ftf_denominator_s: (J,) ``D_j`` of finish-time fairness, > 0 (ftf): the job's time
            to finish under its fair share (Themis' isolated time).
        priority: (J,) weight of each job in the second stage of ``fair-srpt`` / ``fair-las``,
            >= 0; default 1.
        switch: (C,) factor in (0, 1] on each candidate's term in that second stage (the
            restart discount); default 1.
    """

    job_of: np.ndarray      # (C,) int
    gpus: np.ndarray        # (C, T) int
    thr: np.ndarray         # (C,) float > 0
    capacity: np.ndarray    # (T,) float >= 0
    norm: np.ndarray        # (J,) float > 0
    weight: np.ndarray | None = None
    remaining: np.ndarray | None = None
    age_s: np.ndarray | None = None
    ftf_denominator_s: np.ndarray | None = None
    priority: np.ndarray | None = None
    switch: np.ndarray | None = None

    def __post_init__(self) -> None:
        norm = np.asarray(self.norm, dtype=np.float64)
        if norm.ndim != 1:
            raise _bad("norm", f"expected a 1-D array (one entry per job), got shape {norm.shape}")
        n_jobs = norm.shape[0]
        self.norm = _float_vector("norm", norm, n_jobs, positive=True)

        job_of = np.asarray(self.job_of)
        if job_of.ndim != 1:
            raise _bad("job_of", f"expected a 1-D array, got shape {job_of.shape}")
        n_cand = job_of.shape[0]
        if n_cand and not (np.issubdtype(job_of.dtype, np.integer)
                           or (np.issubdtype(job_of.dtype, np.floating)
                               and np.all(job_of == np.round(job_of)))):
            raise _bad("job_of", f"must hold integer job indices, got dtype {job_of.dtype}")
        job_of = job_of.astype(np.int64)
        if n_cand and (job_of.min() < 0 or job_of.max() >= n_jobs):
            i = int(np.flatnonzero((job_of < 0) | (job_of >= n_jobs))[0])
            raise _bad("job_of", f"index {i} names job {job_of[i]}, outside 0..{n_jobs - 1}")
        counts = np.bincount(job_of, minlength=n_jobs)
        if n_jobs and counts.min() == 0:
            raise _bad("job_of", f"job {int(np.argmin(counts))} has no candidate")
        self.job_of = job_of

        capacity = np.asarray(self.capacity, dtype=np.float64)
        if capacity.ndim != 1:
            raise _bad("capacity", "expected a 1-D array (one entry per GPU type), "
                       f"got shape {capacity.shape}")
        n_types = capacity.shape[0]
        self.capacity = _float_vector("capacity", capacity, n_types, positive=False)

        gpus = np.asarray(self.gpus)
        if gpus.shape != (n_cand, n_types):
            raise _bad("gpus", f"expected shape ({n_cand}, {n_types}) (candidates × GPU types), "
                       f"got {gpus.shape}")
        gf = gpus.astype(np.float64)
        if not np.all(np.isfinite(gf)) or np.any(gf < 0) or np.any(gf != np.round(gf)):
            raise _bad("gpus", "GPU counts must be finite non-negative integers")
        self.gpus = gf.astype(np.int64)
        if n_cand and np.any(self.gpus.sum(axis=1) == 0):
            first = int(np.flatnonzero(self.gpus.sum(axis=1) == 0)[0])
            raise _bad("gpus", f"candidate {first} uses no GPU")

        self.thr = _float_vector("thr", self.thr, n_cand, positive=True)
        if self.weight is not None:
            self.weight = _float_vector("weight", self.weight, n_jobs, positive=True)
        if self.remaining is not None:
            self.remaining = _float_vector("remaining", self.remaining, n_jobs, positive=False)
        if self.age_s is not None:
            self.age_s = _float_vector("age_s", self.age_s, n_jobs, positive=False)
        if self.ftf_denominator_s is not None:
            self.ftf_denominator_s = _float_vector("ftf_denominator_s", self.ftf_denominator_s,
                                                   n_jobs, positive=True)
        if self.priority is not None:
            self.priority = _float_vector("priority", self.priority, n_jobs, positive=False)
        if self.switch is not None:
            self.switch = _float_vector("switch", self.switch, n_cand, positive=True)
            if np.any(self.switch > 1.0):
                raise _bad("switch", "must be <= 1")

    @property
    def n_jobs(self) -> int:
        return int(self.norm.shape[0])

    @property
    def n_candidates(self) -> int:
        return int(self.job_of.shape[0])

    @property
    def n_types(self) -> int:
        return int(self.capacity.shape[0])

    def weights(self) -> np.ndarray:
        """(J,) priority weights, ones when unset."""
        return np.ones(self.n_jobs) if self.weight is None else self.weight

    def stage2_coefficients(self) -> np.ndarray:
        """(C,) coefficient of each ``X[c]`` in the second stage of ``fair-srpt`` /
        ``fair-las``: ``priority_j * switch_c * thr[c] / norm_j``."""
        pri = np.ones(self.n_jobs) if self.priority is None else self.priority
        sw = 1.0 if self.switch is None else self.switch
        return pri[self.job_of] * sw * self.thr / self.norm[self.job_of]

    def fits(self) -> np.ndarray:
        """(C,) bool: the candidate's GPUs fit in the capacity of every type."""
        return np.all(self.gpus <= self.capacity[None, :] + 1e-9, axis=1)

    def runnable(self) -> np.ndarray:
        """(J,) bool: the job has at least one candidate that fits."""
        return np.bincount(self.job_of, weights=self.fits(), minlength=self.n_jobs) > 0

    def job_throughput(self, x: np.ndarray) -> np.ndarray:
        """(J,) ``thr_j(x)`` in samples/s."""
        return np.bincount(self.job_of, weights=self.thr * x, minlength=self.n_jobs)


@dataclass
class LPResult:
    """Outcome of ``solve_allocation``.

    Attributes:
        x: (C,) share of wall time each job runs with each candidate, in [0, 1].
        objective: the primary objective evaluated at ``x`` over the runnable jobs: the max-min
            ratio, the normalized throughput sum, the makespan in seconds (``inf`` if a job with
            work left gets no throughput), the worst finish-time fairness ``rho``, or (fair-srpt,
            fair-las) the second stage's weighted throughput.
        floor_ratio: (fair-srpt, fair-las) the max-min optimum ``t*`` of the first stage (the
            floor is ``floor * t*``); NaN otherwise.
        status: "optimal", "time_limit", "infeasible", "error" or "unavailable" (the solver
            cannot be loaded); never raised.
        backend: "highs" or "pulp".
        build_s: model-building time (for ``pulp``: PuLP objects; for ``highs``: matrices and
            ``passModel``).
        solve_s: wall time of the solver calls (for ``pulp`` it includes PuLP copying the model
            into HiGHS; ``highs_run_s`` is HiGHS' own time).
        n_vars: LP columns (fitting candidates plus the auxiliary variable, if any).
        n_cons: LP rows.
        iterations: LP solves (2 for lexicographic solves; bisection steps for ftf).
        unrunnable: job indices none of whose candidates fits the capacity (their ``x`` is 0 and
            they are left out of the objective).
        highs_run_s: HiGHS' own run time summed over the solves.
        has_x: whether ``x`` is a solution (optimal, the incumbent at a time limit, or ftf's
            constructed allocation); ``False`` when ``x`` is zeros for want of one
            (infeasible, error, unavailable, or a time limit before any feasible point).
        message: why a solve failed (status "error" / "unavailable"), else "".
    """

    x: np.ndarray
    objective: float
    status: str
    backend: str
    build_s: float
    solve_s: float
    n_vars: int
    n_cons: int
    iterations: int = 1
    unrunnable: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.int64))
    highs_run_s: float = 0.0
    has_x: bool = True
    message: str = ""
    floor_ratio: float = math.nan

    @property
    def decision_s(self) -> float:
        """Build plus solve time."""
        return self.build_s + self.solve_s


# ------------------------------------------------------------------------------ evaluation
def evaluate_objective(p: AllocationProblem, x: np.ndarray, objective: str) -> float:
    """Primary objective of ``objective`` at ``x``, over the runnable jobs (see ``LPResult``).

    Over an empty set of jobs it is 0.0 for every objective.
    """
    if objective not in OBJECTIVES:
        raise ValueError(f"unknown objective {objective!r}; expected one of {OBJECTIVES}")
    thr_j = p.job_throughput(np.asarray(x, dtype=np.float64))
    run = p.runnable()
    if objective in FLOOR_OBJECTIVES:
        return float(p.stage2_coefficients() @ np.asarray(x, dtype=np.float64))
    if objective == "max-throughput":
        return float(np.sum(thr_j / p.norm))
    if objective == "max-min":
        if not run.any():
            return 0.0
        return float(np.min(thr_j[run] / (p.weights()[run] * p.norm[run])))
    active = run & (_require(p, "remaining", objective) > 0)
    if not active.any():
        return 0.0
    rem, got = p.remaining[active], thr_j[active]
    if np.any(got <= 0):
        return math.inf
    if objective == "min-makespan":
        return float(np.max(rem / got))
    age = _require(p, "age_s", objective)[active]
    den = _require(p, "ftf_denominator_s", objective)[active]
    return float(np.max((age + rem / got) / den))


def check_feasible(p: AllocationProblem, x: np.ndarray, tol: float = 1e-7) -> float:
    """Largest violation of the allocation constraints at ``x`` (0 if none); asserts <= tol."""
    x = np.asarray(x, dtype=np.float64)
    viol = [0.0]
    if x.size:
        viol += [float(-x.min()), float(x.max() - 1.0)]
        viol.append(float(np.max(np.bincount(p.job_of, weights=x, minlength=p.n_jobs) - 1.0,
                                 initial=0.0)))
        viol.append(float(np.max(p.gpus.T @ x - p.capacity, initial=0.0)))
    worst = max(viol)
    if worst > tol:
        raise AssertionError(f"allocation violates its constraints by {worst:.3g} > {tol:g}")
    return max(worst, 0.0)


def _require(p: AllocationProblem, name: str, objective: str) -> np.ndarray:
    value = getattr(p, name)
    if value is None:
        raise ValueError(f"objective {objective!r} needs AllocationProblem.{name}")
    return value


def _repair(p: AllocationProblem, x: np.ndarray) -> np.ndarray:
    """Clip solver output into the feasible set (removes violations of solver-tolerance size)."""
    x = np.clip(x, 0.0, 1.0)
    if not x.size:
        return x
    per_job = np.bincount(p.job_of, weights=x, minlength=p.n_jobs)
    x = x / np.maximum(per_job, 1.0)[p.job_of]
    use = p.gpus.T @ x
    over = use > p.capacity
    if over.any():
        x = x * float(np.min(p.capacity[over] / use[over]))
    return x


# ------------------------------------------------------------------------------ model spec
@dataclass
class _Spec:
    """The LP as arrays, shared by both backends: maximize ``cost @ v`` s.t. bounds."""

    cand: np.ndarray        # (n,) candidate index of each x column
    a: sp.coo_matrix        # (m, ncol) constraint matrix (rows: jobs, types, objective rows)
    row_lo: np.ndarray
    row_hi: np.ndarray
    col_lo: np.ndarray
    col_hi: np.ndarray
    cost: np.ndarray        # primary (or ftf's secondary) objective, maximized
    fill: np.ndarray        # secondary objective: normalized throughput, mean over jobs
    aux: int | None         # column index of t (max-min) or z' (min-makespan)
    obj_rows: np.ndarray    # row indices of the per-job objective rows
    obj_jobs: np.ndarray    # job of each objective row


def _build_spec(p: AllocationProblem, objective: str, fit: np.ndarray, run: np.ndarray,
                constrained: np.ndarray, coef_scale: np.ndarray) -> _Spec:
    """Vectorized assembly of the constraint matrix (no Python loop over candidates).

    ``coef_scale[j]`` multiplies ``thr[c]`` in job ``j``'s objective row (constrained jobs only).
    """
    cand = np.flatnonzero(fit)
    n = cand.size
    jobs = p.job_of[cand]
    run_jobs = np.flatnonzero(run)
    job_row = np.full(p.n_jobs, -1, dtype=np.int64)
    job_row[run_jobs] = np.arange(run_jobs.size)
    g = p.gpus[cand]
    types = np.flatnonzero(g.sum(axis=0) > 0)
    obj_jobs = np.flatnonzero(constrained)
    obj_row = np.full(p.n_jobs, -1, dtype=np.int64)
    base_obj = run_jobs.size + types.size
    obj_row[obj_jobs] = base_obj + np.arange(obj_jobs.size)
    has_aux = objective in ("max-min", "min-makespan") + FLOOR_OBJECTIVES and obj_jobs.size > 0
    ncol = n + int(has_aux)
    m = base_obj + obj_jobs.size

    k = np.arange(n)
    gt = g[:, types]
    ti, tk = np.nonzero(gt.T)              # row-major over types: deterministic order
    in_obj = constrained[jobs]
    rows = [job_row[jobs], run_jobs.size + ti, obj_row[jobs[in_obj]]]
    cols = [k, tk, k[in_obj]]
    vals = [np.ones(n), gt.T[ti, tk].astype(np.float64),
            p.thr[cand[in_obj]] * coef_scale[jobs[in_obj]]]
    if has_aux:
        rows.append(obj_row[obj_jobs])
        cols.append(np.full(obj_jobs.size, n))
        vals.append(-np.ones(obj_jobs.size))
    a = sp.coo_matrix((np.concatenate(vals), (np.concatenate(rows), np.concatenate(cols))),
                      shape=(m, ncol))

    row_lo = np.concatenate([np.full(base_obj, -_INF), np.zeros(obj_jobs.size)])
    row_hi = np.concatenate([np.ones(run_jobs.size), p.capacity[types],
                             np.full(obj_jobs.size, _INF)])
    col_lo = np.zeros(ncol)
    col_hi = np.ones(ncol)
    fill = np.zeros(ncol)
    if objective in FLOOR_OBJECTIVES:
        # the second stage: weighted (JCT-oriented) throughput, scaled to a largest
        # coefficient of 1 (the solution does not depend on the scale)
        coef = p.stage2_coefficients()[cand]
        top = float(coef.max()) if coef.size else 0.0
        base = p.thr[cand] / p.norm[jobs]
        # + a tiny normalized-throughput term: weights far below the solver's tolerance
        # (a job seconds from its end next to a very long one) must not leave GPUs idle
        fill[:n] = (coef / top if top > 0 else 0.0) + STAGE2_FILL * base / float(base.max())
    else:
        fill[:n] = p.thr[cand] / p.norm[jobs] / max(run_jobs.size, 1)
    cost = np.zeros(ncol)
    if objective == "max-throughput":
        cost[:n] = p.thr[cand] / p.norm[jobs]
    elif has_aux:
        cost[n] = 1.0
    else:   # ftf (the bisection LPs maximize the fill), or no job constrains the primary
        cost = fill.copy()
    return _Spec(cand=cand, a=a, row_lo=row_lo, row_hi=row_hi, col_lo=col_lo, col_hi=col_hi,
                 cost=cost, fill=fill, aux=n if has_aux else None,
                 obj_rows=base_obj + np.arange(obj_jobs.size), obj_jobs=obj_jobs)


@dataclass
class _Run:
    status: str
    values: np.ndarray | None   # column values if a primal feasible point is available
    run_s: float


# ------------------------------------------------------------------------------ backends
def _configure(h, options: dict) -> None:
    h.setOptionValue("output_flag", False)
    h.setOptionValue("threads", 1)
    h.setOptionValue("random_seed", HIGHS_SEED)
    for key, value in options.items():
        if h.setOptionValue(key, value) != highspy.HighsStatus.kOk:
            raise ValueError(f"HiGHS rejected option {key}={value!r}")


class _HighsDriver:
    """Direct path: one ``passModel`` of CSC arrays into ``highspy.Highs``; warm re-solves."""

    def __init__(self, spec: _Spec, options: dict) -> None:
        with _stdout_to_stderr():        # HiGHS prints a banner on fd 1 once per process
            self.h = highspy.Highs()
        _configure(self.h, options)
        a = spec.a.tocsc()   # sums duplicates (there are none) and sorts: deterministic
        lp = highspy.HighsLp()
        lp.num_col_, lp.num_row_ = a.shape[1], a.shape[0]
        lp.sense_ = highspy.ObjSense.kMaximize
        lp.col_cost_ = spec.cost
        lp.col_lower_, lp.col_upper_ = spec.col_lo, spec.col_hi
        lp.row_lower_, lp.row_upper_ = spec.row_lo, spec.row_hi
        lp.a_matrix_.format_ = highspy.MatrixFormat.kColwise
        lp.a_matrix_.num_col_, lp.a_matrix_.num_row_ = a.shape[1], a.shape[0]
        lp.a_matrix_.start_ = a.indptr
        lp.a_matrix_.index_ = a.indices
        lp.a_matrix_.value_ = a.data
        if self.h.passModel(lp) != highspy.HighsStatus.kOk:
            raise RuntimeError("HiGHS rejected the model (passModel)")
        self.spec = spec
        self.ncol = a.shape[1]

    def set_cost(self, cost: np.ndarray) -> None:
        self.h.changeColsCost(self.ncol, np.arange(self.ncol, dtype=np.int32), cost)

    def set_col_lower(self, col: int, lo: float) -> None:
        self.h.changeColBounds(col, lo, float(self.spec.col_hi[col]))

    def set_row_lower(self, rows: np.ndarray, lo: np.ndarray) -> None:
        self.h.changeRowsBounds(rows.size, rows.astype(np.int32), lo, np.full(rows.size, _INF))

    def clear_solver(self) -> None:
        """Drop the warm-start state (basis, factorization); the model is kept."""
        self.h.clearSolver()

    def run(self, budget_s: float | None) -> _Run:
        # HiGHS 1.x compares time_limit with the run time accumulated over all run() calls of
        # this object (ERGO-Code/HiGHS#1477), so the limit is re-based before each re-solve.
        before = self.h.getRunTime()
        limit = _INF if budget_s is None else before + max(budget_s, 0.0)
        self.h.setOptionValue("time_limit", limit)
        self.h.run()
        return _collect(self.h, before)


def _collect(h, run_before: float) -> _Run:
    status = _STATUS_OF.get(h.getModelStatus(), "error")
    info = h.getInfo()
    values = None
    if status == "optimal" or (status == "time_limit" and info.primal_solution_status == _FEASIBLE):
        values = np.asarray(h.getSolution().col_value, dtype=np.float64)
    return _Run(status, values, h.getRunTime() - run_before)


class _PulpDriver:
    """PuLP path: the same model as PuLP objects, solved by ``pulp.HiGHS`` (highspy-based)."""

    def __init__(self, spec: _Spec, options: dict) -> None:
        import pulp

        self.pulp = pulp
        self.options = options
        self.spec = spec
        a = spec.a.tocsr()
        ncol = a.shape[1]
        self.prob = pulp.LpProblem("allocation", pulp.LpMaximize)
        # zero-padded names: PuLP orders columns by name, this keeps the direct path's order
        names = [f"x{k:07d}" for k in range(ncol)]
        if spec.aux is not None:
            names[spec.aux] = "y_aux"
        self.vars = [self.prob.add_variable(names[k], float(spec.col_lo[k]), float(spec.col_hi[k]))
                     for k in range(ncol)]
        self.prob.setObjective(self._expr(spec.cost))
        self.cons = []
        indptr, indices, data = a.indptr.tolist(), a.indices.tolist(), a.data.tolist()
        row_lo, row_hi = spec.row_lo.tolist(), spec.row_hi.tolist()
        v = self.vars
        for i in range(a.shape[0]):
            lo, s = indptr[i], indptr[i + 1]
            expr = pulp.lpSum(c * v[j] for j, c in zip(indices[lo:s], data[lo:s]))
            con = expr <= row_hi[i] if row_hi[i] < _INF else expr >= row_lo[i]
            self.prob.addConstraint(con, f"r{i:07d}")
            self.cons.append(con)

    def _expr(self, cost: np.ndarray):
        nz = np.flatnonzero(cost).tolist()
        values = cost.tolist()
        return self.pulp.lpSum(values[k] * self.vars[k] for k in nz)

    def set_cost(self, cost: np.ndarray) -> None:
        self.prob.setObjective(self._expr(cost))

    def set_col_lower(self, col: int, lo: float) -> None:
        self.vars[col].lowBound = lo

    def set_row_lower(self, rows: np.ndarray, lo: np.ndarray) -> None:
        for r, value in zip(rows, lo):
            self.cons[int(r)].changeRHS(float(value))

    def run(self, budget_s: float | None) -> _Run:
        solver = self.pulp.HiGHS(msg=False, mip=False, threads=1,
                                 timeLimit=None if budget_s is None else max(budget_s, 1e-3),
                                 random_seed=HIGHS_SEED, **self.options)
        with _stdout_to_stderr():          # PuLP's own Highs object prints the banner too
            self.prob.solve(solver)
        h = self.prob.solverModel
        return _collect(h, 0.0)


# ------------------------------------------------------------------------------ solve
def solve_allocation(p: AllocationProblem, objective: str = "max-min", *, backend: str = "highs",
                     time_limit_s: float | None = None, secondary: bool = True,
                     highs_options: dict | None = None,
                     floor: float = DEFAULT_FLOOR) -> LPResult:
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
        floor: (fair-srpt, fair-las) the second stage holds every job at ``>= floor * t*``,
            ``t*`` the max-min optimum; in [0, 1] (1: the JCT objective only breaks ties
            among max-min optima; 0: no fairness floor).

    Returns:
        An ``LPResult``. Infeasible, failed or impossible solves (no solver) are reported in
        ``status`` (and ``message``), not raised; invalid arguments raise ``ValueError``.
    """
    if objective not in OBJECTIVES:
        raise ValueError(f"unknown objective {objective!r}; expected one of {OBJECTIVES}")
    if backend not in BACKENDS:
        raise ValueError(f"unknown backend {backend!r}; expected one of {BACKENDS}")
    if time_limit_s is not None and not time_limit_s > 0:
        raise ValueError(f"time_limit_s must be > 0, got {time_limit_s!r}")
    if not (isinstance(floor, (int, float)) and 0.0 <= floor <= 1.0):
        raise ValueError(f"floor must be in [0, 1], got {floor!r}")
    if objective in ("min-makespan", "ftf"):
        _require(p, "remaining", objective)
    if objective == "ftf":
        _require(p, "age_s", objective)
        _require(p, "ftf_denominator_s", objective)
    options = dict(highs_options or {})
    reserved = {"threads", "random_seed", "time_limit", "output_flag"} & set(options)
    if reserved:
        raise ValueError(f"highs_options may not set {sorted(reserved)}: the solver sets them "
                         "(use time_limit_s for the time limit)")

    t0 = time.perf_counter()
    fit = p.fits()
    run = p.runnable()
    unrunnable = np.flatnonzero(~run)
    if unrunnable.size:
        log.debug("allocation LP: %d job(s) cannot run on this capacity: %s",
                  unrunnable.size, unrunnable[:10])
    best = np.zeros(p.n_jobs)   # best fitting throughput of each job
    np.maximum.at(best, p.job_of[fit], p.thr[fit])
    if objective == "max-min" or objective in FLOOR_OBJECTIVES:
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
        return failed("unavailable", _HIGHSPY_ERROR or "highspy is not available")
    spec = _build_spec(p, objective, fit, run, constrained, coef_scale)
    if spec.aux is not None:   # finite upper bound on t / z' (each job is capped by its best)
        spec.col_hi[spec.aux] = float(np.min(best[spec.obj_jobs] * coef_scale[spec.obj_jobs]))
    n_vars, n_cons = spec.a.shape[1], spec.a.shape[0]
    try:
        driver = (_HighsDriver if backend == "highs" else _PulpDriver)(spec, options)
    except ValueError:   # a bad highs_options entry is the caller's error
        raise
    except ImportError as exc:   # PuLP (pulp backend) not installed
        return failed("unavailable", f"{backend} backend cannot be imported ({exc})",
                      n_vars, n_cons)
    except Exception as exc:   # noqa: BLE001 - reported as a status, the caller falls back
        return failed("error", f"model build failed: {type(exc).__name__}: {exc}",
                      n_vars, n_cons)
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
                    has_x=values is not None, message=message, floor_ratio=floor_ratio)


def _solve_lexicographic(spec: _Spec, driver, budget, secondary: bool, keep: float):
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


def _solve_ftf(p: AllocationProblem, spec: _Spec, driver, best: np.ndarray,
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
    x_hi = np.zeros(spec.a.shape[1])
    x_hi[col_of[best_cand]] = alpha

    def solve_at(r: float) -> _Run:
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


# ------------------------------------------------------------------------------ instances
def random_problem(n_jobs: int, rng: np.random.Generator, *, candidates_per_job: int = 16,
                   n_types: int = 4, total_gpus: int = 2048, max_gpus: int = 64,
                   mixed_fraction: float = 0.25) -> AllocationProblem:
    """A synthetic allocation problem shaped like a real round (for tests and benchmarks).

    Each candidate uses a power-of-two count of one GPU type (1..``max_gpus``); a
    ``mixed_fraction`` of them add a second type. Throughput is a lognormal per-job base rate ×
    per-type speed × per-job type affinity (lognormal) × GPUs^0.9 (sub-linear scaling) × a
    lognormal strategy factor. Capacity splits ``total_gpus`` over the types at random. ``norm``
    is the job's best throughput with an equal GPU share (``total_gpus / n_jobs`` GPUs,
    time-sliced when a candidate needs more); ``remaining`` is lognormal (median ~3.3M samples),
    ``age_s`` exponential (mean 1 h), and ``ftf_denominator_s = age_s + remaining / norm``.

    Args:
        n_jobs: J.
        rng: the only source of randomness.
        candidates_per_job: candidates per job.
        n_types: GPU types T.
        total_gpus: GPUs in the cluster.
        max_gpus: largest GPU count of one type in a candidate (a power of two).
        mixed_fraction: share of candidates that use two types.
    """
    k, t = candidates_per_job, n_types
    c = n_jobs * k
    job_of = np.repeat(np.arange(n_jobs, dtype=np.int64), k)
    gpus = np.zeros((c, t), dtype=np.int64)
    rows = np.arange(c)
    first = rng.integers(0, t, c)
    top = int(np.log2(max_gpus))
    gpus[rows, first] = 2 ** rng.integers(0, top + 1, c)
    if t > 1:
        mixed = rng.random(c) < mixed_fraction
        second = (first + 1 + rng.integers(0, t - 1, c)) % t
        gpus[rows[mixed], second[mixed]] = 2 ** rng.integers(0, top, int(mixed.sum()))
    speed = rng.lognormal(0.0, 0.5, t)
    affinity = rng.lognormal(0.0, 0.3, (n_jobs, t))
    base = rng.lognormal(3.0, 1.0, n_jobs)
    effective = (gpus * speed[None, :] * affinity[job_of]).sum(axis=1)
    thr = base[job_of] * effective ** 0.9 * rng.lognormal(0.0, 0.2, c)
    capacity = np.floor(rng.dirichlet(np.full(t, 4.0)) * total_gpus)
    capacity[0] += total_gpus - capacity.sum()
    share = total_gpus / max(n_jobs, 1)
    slice_ = np.minimum(1.0, share / gpus.sum(axis=1))
    norm = np.zeros(n_jobs)
    np.maximum.at(norm, job_of, thr * slice_)
    remaining = rng.lognormal(15.0, 1.0, n_jobs)
    age_s = rng.exponential(3600.0, n_jobs)
    return AllocationProblem(job_of=job_of, gpus=gpus, thr=thr, capacity=capacity, norm=norm,
                             remaining=remaining, age_s=age_s,
                             ftf_denominator_s=age_s + remaining / np.where(norm > 0, norm, 1.0))
