"""Delivered ÷ planned throughput of the LP policy (``summary()["delivered_over_planned"]``).

At each decision ``LPPolicy`` records the normalized throughput its LP allocation plans for each
job (``Σ_c X thr / norm``); at the next one it accounts what each job still active actually ran
with over the round that ended — its current candidate's normalized throughput, less the time a
restart took. The ratio of the two sums over a run is above 1 when the fill pass runs jobs on
GPUs the plan left idle.
"""

from __future__ import annotations

import math

import numpy as np

from hsched_env.policy import SchedulerView
from hsched_env.table_memo import TableMemo
from lp_baseline.job_terms import take_rows


class DeliveryTracker:
    """Sums of planned and delivered normalized throughput × time over a run."""

    def __init__(self) -> None:
        # each job's planned normalized rate of the last decision
        # job -> (Σ X thr / norm, norm, restarts so far)
        self.planned: dict[int, tuple[float, float, int]] = {}
        self.planned_sum = 0.0
        self.delivered_sum = 0.0
        # job -> (allocation entry, candidate table, Σ X thr): recomputed when either changes;
        # a cache, so a copy of the tracker starts it empty (``TableMemo``'s copy semantics)
        self._rates = TableMemo()

    def ratio(self) -> float:
        """Delivered ÷ planned over the run so far; NaN before a round has run."""
        return self.delivered_sum / self.planned_sum if self.planned_sum > 0 else math.nan

    def track(self, view: SchedulerView, last_t: float | None) -> None:
        """Account the round that just ended: what each job still active ran with (its
        ``current`` candidate's normalized throughput) against what the LP planned;
        ``last_t``: the time of the previous decision (``None`` before the first)."""
        if last_t is None or not self.planned:
            return
        step = view.time_s - last_t
        if step <= 0:
            return
        for k, j in enumerate(view.job_ids):
            plan = self.planned.get(int(j))
            if plan is None:
                continue
            planned, norm, restarts = plan
            cur = int(view.current[k])
            got = float(view.candidates[k].samples_per_s[cur]) / norm if cur >= 0 else 0.0
            if int(view.restarts[k]) > restarts:      # it restarted: no progress meanwhile
                got *= max(step - view.restart_s, 0.0) / step
            self.planned_sum += planned * step
            self.delivered_sum += got * step

    def record_plan(self, view: SchedulerView, allocation: dict, norms: np.ndarray) -> None:
        """Record what ``allocation`` (``{job id: (rows, X)}``) plans for each job; ``norms``: the
        active jobs' normalizers."""
        self.planned = {}
        rates = self._rates
        restarts = view.restarts.tolist()
        tables = view.candidates
        listed = []              # (active index, job id) of the jobs the allocation lists
        todo = []                # (job id, its entry, its table): their Σ X thr to compute
        for k, j in enumerate(view.job_ids.tolist()):
            got = allocation.get(j)
            if got is None:
                continue
            listed.append((k, j))
            known = rates.get(j)
            if known is None or known[0] is not got or known[1] is not tables[k]:
                todo.append((j, got, tables[k]))
        for (j, got, table), rate in zip(todo, _planned_rates(todo)):
            rates[j] = (got, table, rate)
        for k, j in listed:
            self.planned[j] = (rates[j][2] / norms[k], float(norms[k]), restarts[k])
        if len(rates) > 2 * len(self.planned) + 64:
            self._rates = TableMemo((j, rates[j]) for j in self.planned)   # finished jobs


def _planned_rates(todo: list) -> list[float]:
    """``float(np.sum(x * table.samples_per_s[rows]))`` for each ``(job, (rows, x), table)``
    of ``todo``, to the last bit. The products are formed in one pass; a job whose products
    are finite with at most two non-zero takes its sum from one segmented sum (adding zeros
    is exact and two values have one sum in any order, whatever order ``np.sum`` adds in),
    any other job from ``np.sum`` itself."""
    if not todo:
        return []
    xs, thrs = [], []
    for _, (rows, x), table in todo:
        xs.append(x)
        thrs.append(take_rows(table.samples_per_s, rows))
    sizes = np.fromiter((len(x) for x in xs), dtype=np.int64, count=len(xs))
    if not np.array_equal(sizes, np.fromiter((len(t) for t in thrs), dtype=np.int64,
                                             count=len(thrs))):
        raise ValueError("record_plan: an allocation's X and rows differ in length")
    prod = np.concatenate(xs) * np.concatenate(thrs)
    if prod.size == 0:
        return [0.0] * len(todo)
    # reduceat sums [start, next start), the last to the end: over the non-empty jobs only,
    # whose starts increase strictly (an empty job's sum is 0.0, as np.sum's)
    nonempty = np.flatnonzero(sizes > 0)
    at = (np.cumsum(sizes) - sizes)[nonempty]
    sums = np.add.reduceat(prod, at)
    nonzero = np.add.reduceat((prod != 0).astype(np.int64), at)
    finite = np.logical_and.reduceat(np.isfinite(prod), at)
    out = [0.0] * len(todo)
    for i, total, easy in zip(nonempty.tolist(), sums.tolist(),
                              (finite & (nonzero <= 2)).tolist()):
        # (+ 0.0: np.sum of zeros is +0.0 whatever their signs; reduceat keeps a -0.0)
        out[i] = total + 0.0 if easy else float(np.sum(xs[i] * thrs[i]))
    return out
