"""One round's allocation problem over job × candidate, and the objectives evaluated at an ``x``.

``AllocationProblem`` holds the data of the allocation LP (formulation: ``lp_baseline.solver``)
— each candidate's job, GPUs per type and throughput, the capacity per GPU type, the per-job
normalizer and the objectives' per-job terms — and validates it on construction. ``LPResult`` is
what ``solve_allocation`` returns. ``evaluate_objective`` computes an objective's primary value
at any ``x`` and ``check_feasible`` measures how far ``x`` violates the constraints; the policies
use both to score and to check solver output.
"""

from __future__ import annotations

import hashlib
import math
from dataclasses import dataclass, field

import numpy as np

from hsched_env.errors import ConfigError

OBJECTIVES = ("max-min", "max-throughput", "min-makespan", "ftf", "fair-srpt", "fair-las",
              "sia-srpt", "sia-las")
#: The two-stage objectives: a max-min floor, then a weighted-throughput (JCT) objective
#: (``sia-srpt``, ``sia-las``: a per-candidate gain, ``AllocationProblem.gain``).
FLOOR_OBJECTIVES = ("fair-srpt", "fair-las", "sia-srpt", "sia-las")
#: The objectives whose second stage is Sia's per-candidate gain (``job_terms.sia_gain``).
SIA_OBJECTIVES = ("sia-srpt", "sia-las")
#: Default fairness floor of the two-stage objectives (fraction of the max-min optimum).
DEFAULT_FLOOR = 0.5
#: ``LPResult.status`` values.
STATUSES = ("optimal", "time_limit", "infeasible", "error", "unavailable")


# ------------------------------------------------------------------------------ data types
def _bad(field_name: str, message: str) -> ConfigError:
    return ConfigError(message, source="AllocationProblem", field=field_name)


def _float_vector(name: str, value, length: int, *, positive: bool) -> np.ndarray:
    arr = np.asarray(value, dtype=np.float64)
    if arr.shape != (length,):
        raise _bad(name, f"expected shape ({length},), got {arr.shape}")
    if length:
        # the common case in two reductions (NaN fails both comparisons); the checks below
        # find what is wrong otherwise
        lo, hi = arr.min(), arr.max()
        if (lo > 0 if positive else lo >= 0) and hi < math.inf:
            return arr
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
        capacity: (T,) GPUs available per type, whole numbers >= 0.
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
        gain: (C,) the second stage's coefficient of each candidate, finite, replacing
            ``priority · switch · thr / norm`` (``sia-srpt``: the weighted Sia gain
            ``w_j (λ − G^p)``); default unset.
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
    gain: np.ndarray | None = None

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
        named = int(job_of.max()) + 1 if n_cand else 0
        if (n_cand and named != n_jobs and job_of.min() >= 0 and named <= n_cand
                and np.bincount(job_of, minlength=named).min() > 0):
            # job_of names jobs 0..named-1, each with candidates: norm's length is at fault
            raise _bad("norm", f"has {n_jobs} entries (one per job), but job_of names jobs "
                       f"0..{named - 1}: expected {named}")
        if n_cand and (job_of.min() < 0 or job_of.max() >= n_jobs):
            i = int(np.flatnonzero((job_of < 0) | (job_of >= n_jobs))[0])
            raise _bad("job_of", f"index {i} names job {job_of[i]}, outside 0..{n_jobs - 1}")
        counts = np.bincount(job_of, minlength=n_jobs)
        if n_jobs and counts.min() == 0:
            raise _bad("job_of", f"job {int(np.argmin(counts))} has no candidate")
        self.job_of = job_of

        raw = np.asarray(self.capacity)
        if raw.dtype == np.bool_:
            raise _bad("capacity", "GPUs available per type must be whole numbers, got "
                       "booleans")
        capacity = np.asarray(raw, dtype=np.float64)
        if capacity.ndim != 1:
            raise _bad("capacity", "expected a 1-D array (one entry per GPU type), "
                       f"got shape {capacity.shape}")
        n_types = capacity.shape[0]
        self.capacity = _float_vector("capacity", capacity, n_types, positive=False)
        fractional = np.flatnonzero(self.capacity != np.round(self.capacity))
        if fractional.size:
            # a GPU is not shared between candidates within a round: 4.5 GPUs would let the LP
            # give out half a GPU that no placement can run
            i = int(fractional[0])
            raise _bad("capacity", f"GPUs available per type must be whole numbers; type {i} "
                       f"has {self.capacity[i]:g}")

        gpus = np.asarray(self.gpus)
        if gpus.shape != (n_cand, n_types):
            raise _bad("gpus", f"expected shape ({n_cand}, {n_types}) (candidates × GPU types), "
                       f"got {gpus.shape}")
        if np.issubdtype(gpus.dtype, np.integer):       # finite integers already
            if gpus.size and gpus.min() < 0:
                raise _bad("gpus", "GPU counts must be finite non-negative integers")
            self.gpus = gpus.astype(np.int64)
        else:
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
        if self.gain is not None:
            gain = np.asarray(self.gain, dtype=np.float64)
            if gain.shape != (n_cand,):
                raise _bad("gain", f"expected shape ({n_cand},), got {gain.shape}")
            if not np.all(np.isfinite(gain)):
                raise _bad("gain", f"must be finite (first bad index "
                           f"{int(np.flatnonzero(~np.isfinite(gain))[0])})")
            self.gain = gain

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
        ``fair-las``: ``priority_j * switch_c * thr[c] / norm_j``; ``gain`` where set."""
        if self.gain is not None:
            return self.gain
        pri = np.ones(self.n_jobs) if self.priority is None else self.priority
        sw = 1.0 if self.switch is None else self.switch
        return pri[self.job_of] * sw * self.thr / self.norm[self.job_of]

    def fits(self) -> np.ndarray:
        """(C,) bool: the candidate's GPUs fit in the capacity of every type."""
        return np.all(self.gpus <= self.capacity[None, :] + 1e-9, axis=1)

    def runnable(self, fit: np.ndarray | None = None) -> np.ndarray:
        """(J,) bool: the job has at least one candidate that fits (``fit``: ``fits()``, if
        the caller has it)."""
        fit = self.fits() if fit is None else fit
        return np.bincount(self.job_of, weights=fit, minlength=self.n_jobs) > 0

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
            work left gets no throughput), the worst finish-time fairness ``rho``, or (the
            two-stage objectives) the second stage's value (weighted throughput; sia-*: gain).
        floor_ratio: (the two-stage objectives) the max-min optimum ``t*`` of the first stage
            (the floor is ``floor * t*``); NaN otherwise, and with a floor of 0 (no first
            stage).
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
        columns_solved: LP columns HiGHS saw: ``n_vars``, or with column generation
            (``method="colgen"``) those of the restricted LP at the end.
        pricing_rounds: restricted LP solves of column generation (0 without it).
        method: how the LP was solved (``solver.METHODS``; ``"auto"`` resolved), "" when
            no LP was built.
        basis: with ``basis_keys``, the basis of the first optimal solve as a
            ``warm_start.LabeledBasis`` (the next decision's ``warm_basis``); else ``None``.
        warm_started: whether HiGHS took ``warm_basis`` as its starting basis.
        warm_retried: whether that warm-started run ended without a solution and the LP was
            solved again cold (``backends.HighsDriver.run``).
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
    columns_solved: int = 0
    pricing_rounds: int = 0
    method: str = ""
    basis: object = None
    warm_started: bool = False
    warm_retried: bool = False

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
        raise ConfigError(f"unknown objective {objective!r}; expected one of {OBJECTIVES}",
                          field="objective")
    x = np.asarray(x, dtype=np.float64)
    if x.shape != (p.n_candidates,):
        raise ConfigError(f"x has shape {x.shape}, expected ({p.n_candidates},): one share "
                          f"per candidate", field="x")
    if objective in FLOOR_OBJECTIVES:
        return float(p.stage2_coefficients() @ x)
    thr_j = p.job_throughput(x)
    run = p.runnable()
    if objective == "max-throughput":
        return float(np.sum(thr_j / p.norm))
    if objective == "max-min":
        if not run.any():
            return 0.0
        return float(np.min(thr_j[run] / (p.weights()[run] * p.norm[run])))
    active = run & (require_field(p, "remaining", objective) > 0)
    if not active.any():
        return 0.0
    rem, got = p.remaining[active], thr_j[active]
    if np.any(got <= 0):
        return math.inf
    if objective == "min-makespan":
        return float(np.max(rem / got))
    age = require_field(p, "age_s", objective)[active]
    den = require_field(p, "ftf_denominator_s", objective)[active]
    return float(np.max((age + rem / got) / den))


#: The ``AllocationProblem`` fields each objective's LP and objective value read, beyond
#: ``job_of``, ``gpus``, ``thr``, ``capacity``, ``norm`` and ``weight`` (which all read).
#: ``tests/test_lp_memo.py`` checks it: changing any other field leaves the solve unchanged.
OBJECTIVE_FIELDS: dict[str, tuple[str, ...]] = {
    "max-min": (), "max-throughput": (), "min-makespan": ("remaining",),
    "ftf": ("remaining", "age_s", "ftf_denominator_s"),
    **{o: ("priority", "switch", "gain") for o in FLOOR_OBJECTIVES},
}
_ALWAYS_READ = ("job_of", "gpus", "thr", "capacity", "norm", "weight")


def problem_fingerprint(p: AllocationProblem, objective: str) -> bytes:
    """A digest of what ``objective``'s solve reads from ``p`` (``OBJECTIVE_FIELDS``): two
    problems with the same fingerprint give the same LP, hence — HiGHS being deterministic —
    the same solution. ``LPPolicy`` reuses the previous decision's solution on a match."""
    h = hashlib.blake2b(objective.encode(), digest_size=20)
    for name in _ALWAYS_READ + OBJECTIVE_FIELDS[objective]:
        value = getattr(p, name)
        h.update(name.encode())
        if value is None:
            h.update(b"-")
        else:
            a = np.ascontiguousarray(value)
            h.update(str((a.dtype.str, a.shape)).encode())
            h.update(a.tobytes())
    return h.digest()


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


def require_field(p: AllocationProblem, name: str, objective: str) -> np.ndarray:
    """``p.<name>``, which ``objective`` needs; a ``ConfigError`` if it is unset."""
    value = getattr(p, name)
    if value is None:
        raise _bad(name, f"objective {objective!r} needs AllocationProblem.{name}")
    return value
