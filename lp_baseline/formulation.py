"""The allocation LP as arrays (``LPSpec``), assembled from an ``AllocationProblem``.

``build_spec`` writes the model of ``lp_baseline.solver``'s formulation — columns ``X[c]`` of the
fitting candidates plus, for max-min, min-makespan and the two-stage objectives, one auxiliary
column (``t`` or ``z'``); rows per runnable job, per used GPU type and per job in the objective —
as one sparse matrix with bounds and two cost vectors (the primary objective, and the secondary
one: the normalized-throughput fill, or stage 2 of ``fair-srpt`` / ``fair-las``). Both backends
(``lp_baseline.backends``) load this one description, so they solve the same model with the
same column and row order.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp

from lp_baseline.problem import FLOOR_OBJECTIVES, AllocationProblem

#: Infinite bound of a row or column (HiGHS' ``kHighsInf``).
INF = math.inf
#: Weight (relative to the largest stage-2 coefficient) of the normalized-throughput term
#: added to stage 2, so no capacity is left idle whatever the weights' range.
STAGE2_FILL = 1e-6


@dataclass(frozen=True, eq=False)
class CSCArrays:
    """A sparse matrix as the arrays of its canonical CSC form — within each column the rows
    ascending, no duplicates — what HiGHS' ``passModel`` takes as they are. ``build_spec``
    makes these instead of a ``scipy.sparse`` matrix: scipy's constructor checks the arrays
    again, which cost ~5% of a small LP decision (``LPSpec.a`` builds one on demand)."""

    data: np.ndarray        # (nnz,) float64
    indices: np.ndarray     # (nnz,) int32 row of each entry
    indptr: np.ndarray      # (ncol + 1,) int32
    shape: tuple[int, int]  # (m, ncol)

    def tocsc(self) -> sp.csc_matrix:
        """The same matrix as ``scipy.sparse.csc_matrix`` (canonical, sorted indices)."""
        a = sp.csc_matrix((self.data, self.indices, self.indptr), shape=self.shape)
        a.has_sorted_indices = True
        return a


@dataclass
class LPSpec:
    """The LP as arrays, shared by both backends: maximize ``cost @ v`` s.t. bounds."""

    cand: np.ndarray        # (n,) candidate index of each x column
    csc: CSCArrays          # (m, ncol) constraint matrix (rows: jobs, types, objective rows)
    row_lo: np.ndarray
    row_hi: np.ndarray
    col_lo: np.ndarray
    col_hi: np.ndarray
    cost: np.ndarray        # primary (or ftf's secondary) objective, maximized
    fill: np.ndarray        # secondary objective: normalized throughput, mean over jobs
    aux: int | None         # column index of t (max-min) or z' (min-makespan)
    obj_rows: np.ndarray    # row indices of the per-job objective rows
    obj_jobs: np.ndarray    # job of each objective row
    col_job: np.ndarray | None = None   # (n,) job of each x column (column generation)
    row_jobs: np.ndarray | None = None  # job of each job row (the first rows)
    types: np.ndarray | None = None     # GPU type of each capacity row (after the job rows)

    @property
    def shape(self) -> tuple[int, int]:
        """``(rows, columns)`` of the LP."""
        return self.csc.shape

    @property
    def a(self) -> sp.csc_matrix:
        """The constraint matrix as a ``scipy.sparse.csc_matrix`` (a new one each time: the
        HiGHS path never needs it; column generation and PuLP take it once)."""
        return self.csc.tocsc()


def _csc(vals: np.ndarray, rows: np.ndarray, cols: np.ndarray, m: int,
         ncol: int) -> CSCArrays:
    """The (m, ncol) matrix of the entries ``(rows, cols, vals)`` — no duplicates, and
    within each column the rows ascending in the given order (``build_spec`` lists a
    column's job row, then its type rows ascending, then its objective row) — in canonical
    CSC form: the arrays ``coo_matrix(...).tocsc()`` makes, without its conversion passes."""
    order = np.argsort(cols, kind="stable")
    indptr = np.zeros(ncol + 1, dtype=np.int32)
    np.cumsum(np.bincount(cols, minlength=ncol), out=indptr[1:])
    return CSCArrays(vals[order], rows[order].astype(np.int32), indptr, (m, ncol))


def build_spec(p: AllocationProblem, objective: str, fit: np.ndarray, run: np.ndarray,
                constrained: np.ndarray, coef_scale: np.ndarray) -> LPSpec:
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
    a = _csc(np.concatenate(vals), np.concatenate(rows), np.concatenate(cols), m, ncol)

    row_lo = np.concatenate([np.full(base_obj, -INF), np.zeros(obj_jobs.size)])
    row_hi = np.concatenate([np.ones(run_jobs.size), p.capacity[types],
                             np.full(obj_jobs.size, INF)])
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
    return LPSpec(cand=cand, csc=a, row_lo=row_lo, row_hi=row_hi, col_lo=col_lo, col_hi=col_hi,
                 cost=cost, fill=fill, aux=n if has_aux else None,
                 obj_rows=base_obj + np.arange(obj_jobs.size), obj_jobs=obj_jobs,
                 col_job=jobs, row_jobs=run_jobs, types=types)
