"""Non-learned, non-LP baselines.

Each admits jobs greedily in some order against the free GPUs per type (the simulator then
places them on nodes, trying the returned alternatives in turn); a running job tries its
current candidate first, so it is not restarted needlessly:

* ``fifo`` — heterogeneity-agnostic FIFO: arrival order; each job runs as requested (its GPU
  count, plain data parallelism) on whichever GPU type has room, types tried in a random order
  (GPUs are interchangeable to it).
* ``fifo-fastest`` — FIFO, trying the type on which the job's requested configuration is fastest
  first (Gavel's ``fifo_perf``).
* ``srf`` — shortest remaining first (remaining time as submitted), fastest type first.
* ``greedy`` — arrival order, each job takes its fastest candidate (any resource set and
  strategy) that fits: strategy co-optimization without an LP.
* ``random`` — random order, a random fitting candidate per job.
"""

from __future__ import annotations

from abc import ABC, abstractmethod

import numpy as np

from hsched_env.policy import Assignment, SchedulerView


def requested_rows(table) -> np.ndarray:
    """Rows of the job's "requested GPUs, plain data parallelism" candidates (one per type)."""
    return np.flatnonzero(table.requested)


class _Greedy(ABC):
    """Admit jobs in ``order`` with the candidate rows ``options`` returns, if they fit."""

    name = "greedy-base"

    def __init__(self) -> None:
        self.rng = np.random.default_rng(0)
        self.last_stats = None

    def reset(self, cluster, seed) -> None:
        self.rng = np.random.default_rng(seed)

    def order(self, view: SchedulerView) -> np.ndarray:
        return np.arange(view.num_active)

    @abstractmethod
    def options(self, view: SchedulerView, k: int) -> np.ndarray:
        """Candidate rows of active job ``k`` in preference order."""

    def decide(self, view: SchedulerView) -> Assignment:
        free = view.capacity.astype(np.int64).copy()
        out: Assignment = {}
        for k in self.order(view):
            table = view.candidates[k]
            options = np.asarray(self.options(view, k), dtype=np.int64)
            cur = int(view.current[k])
            if cur >= 0 and np.any(options == cur):   # a running job keeps what it runs
                options = np.r_[cur, options[options != cur]]
            rows = options[np.all(table.gpus[options] <= free, axis=1)]
            if rows.size == 0:
                continue
            out[int(view.job_ids[k])] = rows.tolist()
            free -= table.gpus[rows[0]]
        return out


class Fifo(_Greedy):
    """Heterogeneity-agnostic FIFO (see the module docstring)."""

    name = "fifo"

    def options(self, view, k):
        rows = requested_rows(view.candidates[k])
        return rows[self.rng.permutation(rows.size)]


class FifoFastest(_Greedy):
    """FIFO trying the fastest type first."""

    name = "fifo-fastest"

    def options(self, view, k):
        table = view.candidates[k]
        rows = requested_rows(table)
        return rows[np.argsort(-table.samples_per_s[rows], kind="stable")]


class ShortestRemainingFirst(FifoFastest):
    """Shortest remaining time (as submitted) first, fastest type first."""

    name = "srf"

    def order(self, view):
        left = view.remaining_samples / view.reference_samples_per_s
        return np.lexsort((view.job_ids, left))


class GreedyBest(_Greedy):
    """Arrival order; each job its fastest fitting candidate of all."""

    name = "greedy"

    def options(self, view, k):
        table = view.candidates[k]
        return np.argsort(-table.samples_per_s, kind="stable")


class RandomPolicy(_Greedy):
    """Random order; a random fitting candidate per job."""

    name = "random"

    def order(self, view):
        return self.rng.permutation(view.num_active)

    def options(self, view, k):
        return self.rng.permutation(len(view.candidates[k]))


BASELINES = {p.name: p for p in (Fifo, FifoFastest, ShortestRemainingFirst, GreedyBest,
                                 RandomPolicy)}
