"""Gavel's FIFO as Gavel's simulator runs it (the ``gavel-fifo`` policy).

``fifo-fastest`` (``lp_baseline.baselines``) is a FIFO that decides every round and keeps a
running job on its GPU type. Gavel's ``fifo_perf`` is another schedule (the rules below are read
from Gavel's ``policies/fifo.py`` and ``scheduler.py``; the code is ours):

* **The allocation, afresh**: in arrival order, each job goes to the GPU type on which its
  requested configuration is fastest among the types with at least its GPU count still free
  (ties: the first by type name, as Gavel sorts its worker types); the first job that fits on
  no type stops the pass (strict FIFO: no later job jumps ahead of it); a job whose fastest
  such type has no throughput is passed over. Nothing of the previous allocation is kept
  (``FIFOPolicy(mode="perf")`` resets it): a job may move to a faster type.
* **Recomputed on Gavel's reset rule**: only when the job set changed since the last
  allocation (an arrival or a completion) and at least ``GAVEL_MIN_RESET_S`` (1,920 s) after
  it (the first decision allocates at once). In between, the allocated jobs keep their types,
  a job that arrived waits for the next allocation, and the GPUs of a job that finished idle
  until then.
* **Each round** every allocated job runs on its type: its FIFO priority is positive there
  and the allocation fits the GPUs per type, and Gavel's scheduler skips FIFO jobs with
  priority 0, so no other job runs.

Where this differs from Gavel's simulator: the simulator places the allocated jobs on its
nodes (Gavel's has none), each with its other requested configurations as fallbacks where node
fragmentation blocks the allocated one (as for Gavel's other policies here, ``gavel_queues``);
and a job no type could hold even empty (a request larger than every type's GPUs) is passed
over instead of blocking the queue for good (``fifo`` and ``fifo-fastest`` do the same).
"""

from __future__ import annotations

import numpy as np

from hsched_env.policy import Assignment, SchedulerView
from lp_baseline.gavel_queues import GAVEL_MIN_RESET_S, row_types


class GavelFifo:
    """Gavel's ``fifo_perf`` on Gavel's recompute schedule (module docstring)."""

    name = "gavel-fifo"

    def __init__(self, min_reset_s: float = GAVEL_MIN_RESET_S) -> None:
        self.min_reset_s = float(min_reset_s)
        self.last_stats = None
        self.reset(None, 0)

    def reset(self, cluster, seed) -> None:
        self._rows: dict[int, list[int]] = {}   # job id -> [allocated row, fallbacks...]
        self._allocated_jobs: frozenset[int] = frozenset()   # the job set allocated over
        self._last_reset_s: float | None = None
        self.allocations = 0                    # how many times the allocation was made

    @property
    def allocation(self) -> dict[int, int]:
        """``{job id: row}``: the current allocation (the allocated row of each job)."""
        return {j: rows[0] for j, rows in self._rows.items()}

    def decide(self, view: SchedulerView) -> Assignment:
        active = frozenset(view.job_ids.tolist())
        if active != self._allocated_jobs and (
                self._last_reset_s is None
                or view.time_s - self._last_reset_s >= self.min_reset_s):
            self._rows = fifo_perf_allocation(view)
            self._allocated_jobs = active
            self._last_reset_s = view.time_s
            self.allocations += 1
        return {j: list(rows) for j, rows in self._rows.items() if j in active}


def _options(table) -> tuple[dict[int, int], dict[int, float]]:
    """A job's requested configurations by GPU type: ``({type: row}, {type: samples/s})``
    (one row per type; a row over several types is none of Gavel's configurations)."""
    rows = np.flatnonzero(table.requested)
    kinds = row_types(table)[rows]
    keep = kinds >= 0
    rows, kinds = rows[keep].tolist(), kinds[keep].tolist()
    return (dict(zip(kinds, rows)),
            dict(zip(kinds, table.samples_per_s[rows].astype(float).tolist())))


def fifo_perf_allocation(view: SchedulerView) -> dict[int, list[int]]:
    """Gavel's ``fifo_perf`` allocation of the active jobs (module docstring): ``{job id:
    [row on its type, then its other requested rows fastest first]}`` of the jobs it
    allocates."""
    names = view.cluster.gpu_types
    capacity = view.capacity.tolist()
    free = capacity[:]
    by_name = sorted(range(len(names)), key=lambda t: names[t])
    out: dict[int, list[int]] = {}
    for k, j in enumerate(view.job_ids.tolist()):
        table = view.candidates[k]
        row_of, speed = _options(table)
        n = int(view.requested_gpus[k])
        fits = [t for t in by_name if free[t] > 0 and free[t] >= n]
        if not fits:
            if any(capacity[t] >= n and speed.get(t, 0.0) > 0 for t in row_of):
                break                       # strict FIFO: it waits, and so do the later jobs
            continue                        # no type could ever hold it: it never runs
        best = max(fits, key=lambda t: (speed.get(t, 0.0), -fits.index(t)))
        if speed.get(best, 0.0) <= 0:
            continue
        free[best] -= n
        others = sorted((t for t in row_of if t != best and speed[t] > 0),
                        key=lambda t: (-speed[t], by_name.index(t)))
        out[j] = [row_of[best]] + [row_of[t] for t in others]
    return out
