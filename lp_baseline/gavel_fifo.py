"""Gavel's FIFO as Gavel's simulator runs it (the ``gavel-fifo`` policy).

``fifo-fastest`` (``lp_baseline.baselines``) is a FIFO that decides every round and keeps a
running job on its GPU type. Gavel's ``fifo_perf`` is another schedule (the rules below are read
from Gavel's ``policies/fifo.py`` and ``scheduler.py``; the code is ours):

* **The allocation, afresh**: in arrival order, each job goes to the GPU type on which its
  requested configuration is fastest among the types with at least that configuration's GPUs
  still free (ties: the first by type name, as Gavel sorts its worker types); the first job
  for which no type has that many GPUs free stops the pass (strict FIFO: no later job jumps
  ahead of it). A job whose fastest such type has no configuration for it (no throughput) is
  passed over, as in Gavel, and later jobs may then go ahead of it. Nothing of the previous
  allocation is kept (``FIFOPolicy(mode="perf")`` resets it): a job may move to a faster type.
* **Recomputed on Gavel's reset rule**: only when the job set changed since the last
  allocation (an arrival or a completion) and at least ``GAVEL_MIN_RESET_S`` (1,920 s) after
  it. The first decision allocates at once; as in Gavel, whose "no reset yet" test is a last
  reset time of 0, an allocation made at time 0 does not start the interval (the next change
  re-allocates at once). In between, the allocated jobs keep their types, a job that arrived
  waits for the next allocation, and the GPUs of a job that finished idle until then.
* **Each round** every allocated job runs on its type: its FIFO priority is positive there
  and the allocation fits the GPUs per type, and Gavel's scheduler skips FIFO jobs with
  priority 0, so no other job runs.

Where this differs from Gavel's simulator:

* the simulator places the allocated jobs on its nodes (Gavel's has none), each with its other
  requested configurations as fallbacks where node fragmentation blocks the allocated one (as
  for Gavel's other policies here, ``gavel_queues``): a fallback may take GPUs that a finished
  job left idle or that a later job was allocated, and that job may then wait;
* a job no type could hold even empty (a configuration larger than every type's GPUs) is
  passed over instead of blocking the queue for good (``fifo`` and ``fifo-fastest`` do the
  same);
* a job's configuration on a type is the simulator's requested row there, whose GPU count can
  exceed the request where the model does not fit at it; the pass counts that row's GPUs;
* time moves in rounds: where Gavel's clock jumps to the next arrival while nothing runs, and
  forces a re-allocation once every job of a trace has arrived and none runs, this one waits
  for the first round the reset rule allows. (With rounds shorter than 1.92 s that wait is
  longer than the simulator's 1,000-round stall window, which then ends the run.)
"""

from __future__ import annotations

import math

import numpy as np

from hsched_env.errors import ConfigError, is_real_number
from hsched_env.policy import Assignment, SchedulerView
from lp_baseline.gavel_queues import GAVEL_MIN_RESET_S, row_types


class GavelFifo:
    """Gavel's ``fifo_perf`` on Gavel's recompute schedule (module docstring)."""

    name = "gavel-fifo"

    def __init__(self, min_reset_s: float = GAVEL_MIN_RESET_S) -> None:
        if not (is_real_number(min_reset_s) and math.isfinite(min_reset_s)
                and min_reset_s >= 0):
            raise ConfigError(f"the least time between two allocations must be a finite "
                              f"number of seconds >= 0, got {min_reset_s!r}",
                              field="min_reset_s")
        self.min_reset_s = float(min_reset_s)
        self.last_stats = None
        self.reset(None, 0)

    def reset(self, cluster, seed) -> None:
        self._rows: dict[int, list[int]] = {}   # job id -> [allocated row, fallbacks...]
        self._allocated_jobs: frozenset[int] = frozenset()   # the job set allocated over
        self._last_reset_s = 0.0                # as Gavel's: 0 reads "no reset yet"
        self.allocations = 0                    # how many times the allocation was made

    @property
    def allocation(self) -> dict[int, int]:
        """``{job id: row}``: the current allocation (the allocated row of each job)."""
        return {j: rows[0] for j, rows in self._rows.items()}

    def decide(self, view: SchedulerView) -> Assignment:
        active = frozenset(view.job_ids.tolist())
        if active != self._allocated_jobs and (
                self._last_reset_s == 0.0
                or view.time_s - self._last_reset_s >= self.min_reset_s):
            self._rows = fifo_perf_allocation(view)
            self._allocated_jobs = active
            self._last_reset_s = view.time_s
            self.allocations += 1
        return {j: list(rows) for j, rows in self._rows.items() if j in active}


def _options(table) -> dict[int, tuple[int, int, float]]:
    """A job's requested configurations by GPU type: ``{type: (row, GPUs, samples/s)}`` (one
    row per type; a row over several types is none of Gavel's configurations)."""
    rows = np.flatnonzero(table.requested)
    kinds = row_types(table)[rows]
    keep = kinds >= 0
    rows, kinds = rows[keep], kinds[keep]
    return {t: (r, n, float(v)) for t, r, n, v in zip(
        kinds.tolist(), rows.tolist(), table.gpus[rows, kinds].tolist(),
        table.samples_per_s[rows].tolist())}


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
        options = _options(view.candidates[k])
        # Gavel's scale factor on each type: the GPUs of the job's configuration there, its
        # request where it has none (there its throughput is 0)
        need = {t: options[t][1] if t in options else int(view.requested_gpus[k])
                for t in by_name}
        fits = [t for t in by_name if need[t] <= free[t]]      # (need >= 1 GPU)
        if not fits:
            if any(n <= capacity[t] and v > 0 for t, (_, n, v) in options.items()):
                break                       # strict FIFO: it waits, and so do the later jobs
            continue                        # no type could ever hold it: it never runs
        speed = {t: options[t][2] if t in options else 0.0 for t in fits}
        best = max(fits, key=lambda t: (speed[t], -fits.index(t)))
        if speed[best] <= 0:
            continue                        # as Gavel: no throughput there, passed over
        free[best] -= need[best]
        others = sorted((t for t in options if t != best and options[t][2] > 0),
                        key=lambda t: (-options[t][2], by_name.index(t)))
        out[j] = [options[best][0]] + [options[t][0] for t in others]
    return out
