"""``support-reuse``: a non-learned candidate pruning that reuses the LP's own last answer.

The LP's support (the candidates it gives a share) changes little from one round to the next:
jobs keep their candidates, and a job's share moves between a handful of them. So instead of
solving over every candidate of every job, solve over, per job,

* the candidates it had in the previous solve's support (a share above ``TINY``, or listed first
  in the rounding's assignment),
* its current candidate (so a running job can always keep what it runs),
* its best candidate by score — throughput per GPU ÷ the job's reference throughput, the score
  the environments order slots by — and, for a job the previous solve did not see (it just
  arrived), its ``new_job_k`` best by score,

and re-solve over *every* candidate on a schedule: the first round, then every
``full_every`` rounds, so a candidate that became attractive (GPUs freed, the active set
changed) is found again. This is the strong non-learned rule the learned ranker must beat
(issue 12): it costs nothing to run and needs no training.

The pruned LP is the wrapped ``LPPolicy``'s own (``lp_rows=``), so the objective, normalizers,
size cap and rounding are unchanged; only the LP's candidate set differs — the rounding's
fallback rows and the work-conserving fill pass still see every candidate (they cost no solve).
"""

from __future__ import annotations

import numpy as np

from hsched_env.errors import ConfigError
from hsched_env.policy import Assignment, SchedulerView
from lp_baseline.policy import LPPolicy
from lp_baseline.rounding import TINY

#: Full re-solve every this many rounds (one hour of 300 s rounds).
DEFAULT_FULL_EVERY = 12
#: Candidates by score a job without a previous support gets.
DEFAULT_NEW_JOB_K = 4


class SupportReusePolicy:
    """The LP over each job's previous support, current and best-scored candidates, with a full
    re-solve every ``full_every`` rounds (see the module docstring).

    Args:
        lp: The LP policy whose solve is pruned (``lp_rows=``); its objective and rounding are
            used as they are.
        full_every: Rounds between full solves (1: every round, i.e. the pure LP).
        new_job_k: Candidates by score for a job the previous solve did not see.
        fastest: Also keep each job's fastest candidate within the LP's size cap (so a job
            can grow onto GPUs that other jobs freed between full solves).
        name: Name shown in results.
    """

    def __init__(self, lp: LPPolicy, *, full_every: int = DEFAULT_FULL_EVERY,
                 new_job_k: int = DEFAULT_NEW_JOB_K, fastest: bool = True,
                 name: str = "support-reuse") -> None:
        for field, value in (("full_every", full_every), ("new_job_k", new_job_k)):
            if not (isinstance(value, (int, np.integer)) and value >= 1):
                raise ConfigError(f"{field} must be a positive integer, got {value!r}",
                                  field=field)
        self.lp, self.name = lp, name
        self.full_every, self.new_job_k = int(full_every), int(new_job_k)
        self.fastest = bool(fastest)
        self.reset(None, 0)

    def reset(self, cluster, seed) -> None:
        self.lp.reset(cluster, seed)
        self._support: dict[int, np.ndarray] = {}    # job id -> rows of the previous support
        self._rounds_since_full: int | None = None
        self._full_solves = 0
        self._considered: list[np.ndarray] | None = None

    @property
    def last_stats(self):
        return self.lp.last_stats

    @property
    def allocation(self) -> dict:
        """The wrapped LP's current allocation (``LPPolicy.allocation``)."""
        return self.lp.allocation

    def summary(self) -> dict:
        """The LP's counters plus ``full_solves`` (rounds solved over every candidate)."""
        return {**self.lp.summary(), "full_solves": self._full_solves}

    # ------------------------------------------------------------------ decide
    def decide(self, view: SchedulerView) -> Assignment:
        full = (self._rounds_since_full is None
                or self._rounds_since_full + 1 >= self.full_every)
        if full:
            self._considered = [np.arange(len(t)) for t in view.candidates]
            decision = self.lp.decide(view)
            self._rounds_since_full = 0
            self._full_solves += 1
        else:
            self._considered = self.allowed_rows(view)
            decision = self.lp.decide(view, lp_rows=self._considered)
            self._rounds_since_full += 1
        self._remember(view, decision)
        return decision

    def allowed_rows(self, view: SchedulerView) -> list[np.ndarray]:
        """Per active job, the rows a pruned round solves over (ascending)."""
        out = []
        for k, j in enumerate(view.job_ids):
            table = view.candidates[k]
            n = len(table)
            if n == 0:
                out.append(np.zeros(0, dtype=np.int64))
                continue
            score = table.samples_per_s / np.maximum(table.num_gpus, 1)
            score = np.where(np.isfinite(score), score, -np.inf)
            previous = self._support.get(int(j))
            if previous is not None:                      # the best by score: argmax's first
                keep = [np.array([int(np.argmax(score))])]
            else:
                keep = [np.argsort(-score, kind="stable")[:self.new_job_k]]
            if self.fastest:
                keep.append(np.array([self._fastest_within_cap(view, k)]))
            if previous is not None:
                keep.append(previous)
            if view.current[k] >= 0:
                keep.append(np.array([view.current[k]]))
            out.append(np.unique(np.concatenate(keep).astype(np.int64)))
        return out

    @staticmethod
    def _fastest_within_cap(view: SchedulerView, k: int) -> int:
        """Job ``k``'s fastest candidate of at most ``max(requested, G / N)`` GPUs (the LP's
        size cap; its smallest one when none is that small)."""
        table = view.candidates[k]
        cap = view.fair_share_gpus(k)
        n = table.num_gpus
        ok = np.flatnonzero(n <= cap + 1e-9)
        if ok.size == 0:
            ok = np.flatnonzero(n == n.min())
        return int(ok[np.argmax(table.samples_per_s[ok])])

    def solver_rows(self, view: SchedulerView) -> list[np.ndarray]:
        """The rows the last ``decide`` solved over (for recall measurements, right after
        ``decide(view)``), before the LP's own size cap."""
        if self._considered is None:
            raise RuntimeError("solver_rows() before decide()")
        return self._considered

    def _remember(self, view: SchedulerView, decision: Assignment) -> None:
        """The support of this solve, per job: rows with a share, and the row the rounding
        lists first."""
        alloc = self.lp.allocation
        support: dict[int, np.ndarray] = {}
        for j in view.job_ids:
            j = int(j)
            rows = []
            got = alloc.get(j)
            if got is not None and got[0].size:
                rows.append(np.asarray(got[0])[np.asarray(got[1]) > TINY])
            choice = decision.get(j)
            if choice is not None:
                first = choice if np.ndim(choice) == 0 else (choice[0] if len(choice) else None)
                if first is not None:
                    rows.append(np.array([int(first)]))
            support[j] = (np.unique(np.concatenate(rows).astype(np.int64)) if rows
                          else np.zeros(0, dtype=np.int64))
        self._support = support
