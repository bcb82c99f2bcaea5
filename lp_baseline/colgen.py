"""Column generation: the allocation LP solved over a growing subset of its columns.

The LP of a round has one column per (job, candidate) — 130,000 to 160,000 of them at 2,000
active jobs — but only a few rows that join the jobs (one per GPU type, plus the max-min rows
of the two-stage objectives), so an optimal basis uses about one column per job. HiGHS' dual
simplex over every column spends most of its time on columns that never enter.

``ColumnGenerationDriver`` solves the same ``LPSpec`` (the same rows, columns, bounds and
costs as ``HighsDriver``) as a *restricted* LP that starts with each job's best column by the
current objective (with max-min rows also by its weighted throughput and by the fill), plus
the auxiliary column ``t`` / ``z'`` (and any ``start`` columns the caller gives: a guess of the
optimal support, such as a learned ranker's best-scored candidates), and repeats:

1. solve the restricted LP (HiGHS dual simplex, warm-started from the previous basis);
2. price every column outside it with the restricted optimum's row duals ``y``: reduced cost
   ``d = cost - A^T y`` (one sparse product over the whole matrix);
3. stop if no column has ``d > PRICING_TOL``; else add each job's best-priced column and go
   to 1.

At the stop, the restricted optimum with every other column at 0 satisfies the whole LP's
optimality conditions (primal feasible: the same rows; dual feasible: no column prices in), so
it is an optimum of the whole LP — the same objective value as the full solve, certified, not
a heuristic. So ``start`` columns change how fast the answer is reached, never its objective
value (without a time limit: a run cut short returns whatever restricted optimum it reached):
a good guess of the support saves restricted solves, a poor one costs a larger first
restricted LP. Where the LP has several optima it may be another vertex than the full dual
simplex's (as with ``lp_method="ipm"``); docs/lp.md says how often that changes a schedule.

A restricted LP that is infeasible (the ftf bisection's feasibility LPs can be feasible only
with columns not yet in it) does not prove the whole LP infeasible: the driver then adds every
column and solves the whole LP, so the answer is exact in every case (and the ftf bisection's
later steps run on the whole LP: no faster than the dual simplex). Under a time limit, a
restricted LP cut short returns the previous restricted optimum, a feasible point of the
whole LP, with status ``time_limit``.

Changes between runs (``set_cost``, ``set_col_lower``, ``set_row_lower``) apply to the whole
LP: the restricted LP gets them for its columns, pricing uses the new costs for the others.
"""

from __future__ import annotations

import time

import numpy as np

from lp_baseline.backends import HighsModel, SolverRun, highspy
from lp_baseline.formulation import LPSpec

#: A column outside the restricted LP enters when its reduced cost exceeds this. Below HiGHS'
#: own dual feasibility tolerance (1e-7), so the stop is at least as strict as a full solve's.
PRICING_TOL = 1e-9


class ColumnGenerationDriver(HighsModel):
    """The driver interface of ``lp_baseline.backends.HighsDriver`` (``run``, ``set_cost``,
    ``set_col_lower``; ``set_row_lower``, ``clear_solver`` from ``HighsModel``) over a
    restricted LP; ``run``
    returns the values of **all** columns (0 outside the restricted LP).

    ``start``: x-column indices (of ``spec``) the first restricted LP holds besides the
    driver's own start (each job's best columns); ``None``: only those.

    Attributes after runs: ``columns`` (how many are in the restricted LP), ``rounds``
    (restricted solves so far), ``complete`` (every column was added: the restricted LP was
    infeasible, or HiGHS gave no duals to price with)."""

    def __init__(self, spec: LPSpec, options: dict, start: np.ndarray | None = None) -> None:
        if spec.col_job is None:
            raise ValueError("column generation needs the job of each column (LPSpec.col_job)")
        self.spec = spec
        self.a = spec.a.tocsc()
        self.ncol = self.a.shape[1]
        self.cost = np.array(spec.cost, dtype=np.float64)
        self.col_lo = np.array(spec.col_lo, dtype=np.float64)
        self.group = np.full(self.ncol, -1, dtype=np.int64)      # job of each x column
        n = spec.col_job.size
        self.group[:n] = spec.col_job
        # each job's x columns in one run (as build_spec writes them): per-job maxima by
        # segment, O(columns) per pricing round
        contiguous = n == 0 or bool(np.all(np.diff(spec.col_job) >= 0))
        self.segments = ((np.flatnonzero(np.r_[True, spec.col_job[1:] != spec.col_job[:-1]]), n)
                         if contiguous and n else None)
        none = np.zeros(0)
        super().__init__(self.a[:, :0], none, none, none, spec.row_lo, spec.row_hi,
                         options)                      # the rows, no column yet
        self.pos = np.full(self.ncol, -1, dtype=np.int64)   # column -> restricted LP index
        self.order: list[np.ndarray] = []                    # restricted LP columns, in order
        self.columns = 0
        self.rounds = 0
        self.complete = False
        # to begin: the auxiliary column (if any), every column with a positive lower bound,
        # and each job's best column by the objective; with objective rows (max-min, the
        # floor objectives' first stage, whose cost is on the auxiliary column only) also
        # each job's best column by its coefficient there (its weighted throughput) and by the
        # fill (stage 2), so a bottleneck job is not left with one poor column
        x_cols = np.arange(n)
        first = [np.arange(n, self.ncol), np.flatnonzero(self.col_lo[:n] != 0)]
        if np.any(self.cost[:n] != 0):
            first.append(self._best_per_job(self.cost, x_cols))
        if spec.obj_rows.size or not np.any(self.cost[:n] != 0):
            first.append(self._best_per_job(spec.fill, x_cols))
        if spec.obj_rows.size:
            in_obj = self.a[spec.obj_rows, :n].tocsc()
            coef = np.asarray(in_obj.sum(axis=0)).ravel()       # one objective row per column
            first.append(self._best_per_job(coef, x_cols))
        if start is not None:
            start = np.asarray(start, dtype=np.int64)
            if start.size and (start.min() < 0 or start.max() >= n):
                raise ValueError(f"start columns must be x columns 0..{n - 1}")
            first.append(start)
        self._add(np.unique(np.concatenate(first)))

    # ------------------------------------------------------------------ restricted LP
    def _best_per_job(self, score: np.ndarray, cols: np.ndarray) -> np.ndarray:
        """Among ``cols`` (x columns, increasing), each job's column of highest ``score``
        (lowest index on ties)."""
        if cols.size == 0:
            return cols
        if self.segments is None:               # jobs' columns not contiguous: sort
            order = cols[np.lexsort((cols, -score[cols], self.group[cols]))]
            g = self.group[order]
            return order[np.r_[True, g[1:] != g[:-1]]]
        starts, n = self.segments
        masked = np.full(n, -np.inf)
        masked[cols] = score[cols]
        top = np.maximum.reduceat(masked, starts)
        hit = cols[masked[cols] == np.repeat(top, np.diff(np.r_[starts, n]))[cols]]
        g = self.group[hit]
        return hit[np.r_[True, g[1:] != g[:-1]]]

    def _add(self, cols: np.ndarray) -> None:
        cols = np.asarray(cols, dtype=np.int64)
        cols = cols[self.pos[cols] < 0]
        if cols.size == 0:
            return
        sub = self.a[:, cols]
        status = self.h.addCols(cols.size, self.cost[cols], self.col_lo[cols],
                                self.spec.col_hi[cols], sub.nnz, sub.indptr.astype(np.int32),
                                sub.indices.astype(np.int32), sub.data)
        # kWarning: entries below HiGHS' small_matrix_value dropped, as the direct path's
        # passModel accepts them (backends._HighsModel)
        if status == highspy.HighsStatus.kError:
            raise RuntimeError("HiGHS rejected the generated columns (addCols)")
        self.pos[cols] = self.columns + np.arange(cols.size)
        self.order.append(cols)
        self.columns += cols.size

    def _all_values(self, values: np.ndarray | None) -> np.ndarray | None:
        if values is None:
            return None
        out = np.zeros(self.ncol)
        inside = np.flatnonzero(self.pos >= 0)
        out[inside] = values[self.pos[inside]]
        return out

    def _add_every_column(self) -> None:
        """Make the restricted LP the whole LP (its answer is then the whole LP's)."""
        self.complete = True
        self._add(np.flatnonzero(self.pos < 0))

    # ------------------------------------------------------------------ driver interface
    def set_cost(self, cost: np.ndarray) -> None:
        self.cost = np.array(cost, dtype=np.float64)
        cols = np.concatenate(self.order)
        self.h.changeColsCost(cols.size, self.pos[cols].astype(np.int32), self.cost[cols])

    def set_col_lower(self, col: int, lo: float) -> None:
        self.col_lo[col] = lo
        self._add(np.array([col]))          # a column with a positive lower bound must be in
        self.h.changeColBounds(int(self.pos[col]), lo, float(self.spec.col_hi[col]))

    def _solve_restricted(self, t0: float, budget_s: float | None) -> SolverRun:
        """One solve of the restricted LP within what is left of ``budget_s``; a warm-started
        solve that ends in an error is retried once from scratch (HiGHS sometimes ends a
        warm re-solve in status "unknown", see ``solver._solve_lexicographic``)."""
        run_s = 0.0
        for attempt in range(2):
            left = None if budget_s is None else budget_s - (time.perf_counter() - t0)
            res = self.run_highs(left)
            self.rounds += 1
            run_s += res.run_s
            if res.status != "error" or attempt:
                break
            self.h.clearSolver()
        return SolverRun(res.status, res.values, run_s)

    def run(self, budget_s: float | None) -> SolverRun:
        t0 = time.perf_counter()
        run_s = 0.0
        last = None           # the last restricted optimum: a feasible point of the whole LP
        while True:
            res = self._solve_restricted(t0, budget_s)
            run_s += res.run_s
            if res.status != "optimal" or self.complete:
                if res.status == "infeasible" and not self.complete:
                    self._add_every_column()      # the restricted LP proves nothing
                    continue
                values = self._all_values(res.values)
                if values is None and last is not None and res.status in ("time_limit",
                                                                          "error"):
                    # cut short (or failed) after an earlier restricted optimum: that one is
                    # the incumbent, a feasible point of the whole LP
                    return SolverRun("time_limit", last, run_s)
                return SolverRun(res.status, values, run_s)
            solution = self.h.getSolution()
            if not solution.dual_valid:           # no duals to price with
                self._add_every_column()
                continue
            dual = np.asarray(solution.row_dual, dtype=np.float64)
            reduced = self.cost - self.a.T @ dual
            enter = np.flatnonzero((reduced > PRICING_TOL) & (self.pos < 0))
            last = self._all_values(res.values)
            if enter.size == 0:
                return SolverRun("optimal", last, run_s)
            self._add(self._best_per_job(reduced, enter))
