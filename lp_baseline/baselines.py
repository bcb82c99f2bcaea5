"""Non-learned, non-LP baselines.

Each admits jobs greedily in some order against the free GPUs per type (the simulator then
places them on nodes, trying the returned alternatives in turn); a running job tries its
current candidate first, so it is not restarted needlessly:

* ``fifo`` — heterogeneity-agnostic FIFO: arrival order; each job runs as requested (its GPU
  count, plain data parallelism) on whichever GPU type has room, types tried in a random order
  (GPUs are interchangeable to it).
* ``fifo-fastest`` — FIFO, trying the type on which the job's requested configuration is fastest
  first (Gavel's ``fifo_perf``'s choice of type; decided every round, a running job kept on
  its type).

  ``fifo`` and ``fifo-fastest`` are strict FIFO, as Gavel's: the first job in arrival order
  whose request fits no GPU type's free GPUs stops the pass, so no later job jumps ahead of it
  (``blocking``) — unless no type could hold it even empty (a request larger than every type:
  it can never run, and would block the queue for good). (Until session 44 later jobs were
  admitted past a waiting one, a backfill Gavel's FIFO does not do; with single-GPU jobs
  without a GPU-type constraint the two are the same: a job that fits nowhere leaves no GPU
  free.) The pass counts GPUs per type, as Gavel's does; Gavel has no nodes to fragment. Here
  a job that fits by count but on no node (its part of a node in none with room) is still
  listed, fails its placement and waits, while later jobs that fit in what the count left are
  placed: under fragmentation a later job can start before it (a session-44 review; left as
  it is).
* ``gavel-fifo`` — Gavel's ``fifo_perf`` as Gavel's simulator runs it
  (``lp_baseline.gavel_fifo``; not one of the greedy passes here): Gavel's FIFO pass, made
  afresh (a running job may move to a faster type) and only on Gavel's reset rule (the job set
  changed, 1,920 s since the last allocation); in between, arrivals wait and freed GPUs idle.
* ``srf`` — shortest remaining first (remaining time as submitted), fastest type first, chosen
  afresh every round (a running job has no claim on its current type).
* ``greedy`` — arrival order, each job takes its fastest candidate (any resource set and
  strategy) that fits: strategy co-optimization without an LP.
* ``random`` — random order, a random fitting candidate per job.

``fifo-fastest`` and ``greedy`` are *steady* (``hsched_env.policy``): their decision depends
only on the active jobs and what they run, so the simulator skips the rounds between events
that would repeat the last one. They also *settle*: jobs go in a fixed order, each takes the
first of its fixed preference list that fits the GPUs per type the jobs before it left, and
a running job lists its current row first; so once every job runs its first row, the next
decision sees the same free GPUs at every step, keeps every job's row and admits no other
job — the simulator skips from that round on. ``fifo`` and ``random`` draw random numbers every round and
``srf`` orders by remaining work, so they are asked every round.
"""

from __future__ import annotations

from abc import ABC, abstractmethod

import numpy as np

from hsched_env.policy import Assignment, SchedulerView
from hsched_env.table_memo import TableMemo
from lp_baseline.gavel_fifo import GavelFifo


def requested_rows(table) -> np.ndarray:
    """Rows of the job's "requested GPUs, plain data parallelism" candidates (one per type)."""
    return np.flatnonzero(table.requested)


class _Greedy(ABC):
    """Admit jobs in ``order`` with the candidate rows ``options`` returns, if they fit."""

    name = "greedy-base"
    steady = False
    settles = False
    #: Whether ``options`` depends on the job's candidate table alone (no view, no random
    #: draws): then it is computed once per table and kept (``_table_options``).
    options_per_table = False
    #: Whether a job none of whose options fits the free GPUs, but one of which fits the
    #: empty cluster, stops the pass (strict FIFO: no later job jumps ahead of it); else the
    #: later jobs are still tried (backfill). A rule of the pass, inherited by subclasses.
    blocking = False
    #: Whether a running job tries its current row first (no needless restart); else it
    #: takes its options in their own order every round, so a job pushed off its first choice
    #: returns to it when it is free again.
    keeps_current = True

    def __init_subclass__(cls, **kwargs) -> None:
        # ``steady``, ``settles`` and ``options_per_table`` are promises about ``order`` /
        # ``options``: a subclass makes them only by setting them itself, never by
        # inheriting them
        super().__init_subclass__(**kwargs)
        for name in ("steady", "settles", "options_per_table"):
            if name not in cls.__dict__:
                setattr(cls, name, False)

    def __init__(self) -> None:
        self.rng = np.random.default_rng(0)
        self.last_stats = None
        self._cache = TableMemo()

    def reset(self, cluster, seed) -> None:
        self.rng = np.random.default_rng(seed)
        self._cache = TableMemo()

    def order(self, view: SchedulerView) -> np.ndarray:
        return np.arange(view.num_active)

    @abstractmethod
    def options(self, view: SchedulerView, k: int) -> np.ndarray:
        """Candidate rows of active job ``k`` in preference order."""

    def _table_options(self, view: SchedulerView, k: int) -> tuple[list, dict]:
        """Job ``k``'s options as ``(rows, {row: GPUs per type})`` in plain Python ints,
        cached per table when ``options_per_table``."""
        table = view.candidates[k]

        def make() -> tuple[list, dict]:
            rows = np.asarray(self.options(view, k), dtype=np.int64)
            as_list = rows.tolist()
            return as_list, dict(zip(as_list, map(tuple, table.gpus[rows].tolist())))
        if self.options_per_table:
            return self._cache.get_for(table, id(table), make)
        return make()

    def decide(self, view: SchedulerView) -> Assignment:
        capacity = view.capacity.tolist()
        free = capacity[:]
        out: Assignment = {}
        current = view.current.tolist()
        job_ids = view.job_ids.tolist()
        for k in np.asarray(self.order(view)).tolist():
            options, gpus = self._table_options(view, k)
            cur = current[k] if self.keeps_current else -1
            if cur >= 0 and cur in gpus:                  # a running job keeps what it runs
                options = [cur] + [r for r in options if r != cur]
            rows = [r for r in options
                    if all(g <= f for g, f in zip(gpus[r], free))]
            if not rows:
                # strict FIFO waits for a job that fits the cluster once GPUs free up; one
                # that no type can ever hold (a request larger than every type) would block
                # the queue for good, so the pass goes past it
                if self.blocking and any(all(g <= c for g, c in zip(gpus[r], capacity))
                                         for r in options):
                    break
                continue
            out[job_ids[k]] = rows
            free = [f - g for f, g in zip(free, gpus[rows[0]])]
        return out


class Fifo(_Greedy):
    """Heterogeneity-agnostic FIFO (see the module docstring)."""

    name = "fifo"
    blocking = True

    def options(self, view, k):
        rows = requested_rows(view.candidates[k])
        return rows[self.rng.permutation(rows.size)]


class FifoFastest(_Greedy):
    """FIFO trying the fastest type first."""

    name = "fifo-fastest"
    blocking = True
    steady = True
    settles = True
    options_per_table = True

    def options(self, view, k):
        table = view.candidates[k]
        rows = requested_rows(table)
        return rows[np.argsort(-table.samples_per_s[rows], kind="stable")]


class ShortestRemainingFirst(FifoFastest):
    """Shortest remaining time (as submitted) first, fastest type first — every round, so a
    job a shorter one pushed to a slower type returns to the fastest when it is free again
    (``keeps_current`` off: with it, such a job stayed on the slow type to its end, and
    ``srf`` read 2.8× fifo-fastest's avg JCT on a lightly loaded LLM mix)."""

    name = "srf"
    steady = False
    options_per_table = True
    keeps_current = False
    blocking = False            # no FIFO: a shorter job behind a waiting one may go first

    def order(self, view):
        left = view.remaining_samples / view.reference_samples_per_s
        return np.lexsort((view.job_ids, left))


class GreedyBest(_Greedy):
    """Arrival order; each job its fastest fitting candidate of all."""

    name = "greedy"
    steady = True
    settles = True
    options_per_table = True

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


BASELINES = {p.name: p for p in (Fifo, FifoFastest, GavelFifo, ShortestRemainingFirst,
                                 GreedyBest, RandomPolicy)}
