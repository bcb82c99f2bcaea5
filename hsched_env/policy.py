"""The policy interface: what a scheduling policy sees each round and what it returns.

A policy is asked once per round. It sees a read-only ``SchedulerView`` of the cluster and the
active jobs (arrived, not finished) with their candidate tables, and returns, for each job it
wants to run, a candidate row of that job's table — or an ordered list of rows, tried in turn
if the first cannot be placed on free nodes. Jobs it leaves out wait for the next round.

```python
class MyPolicy:
    name = "my-policy"
    def reset(self, cluster, seed): ...
    def decide(self, view):                       # -> {job_id: row or [rows...]}
        return {int(j): 0 for j in view.job_ids}  # everyone's fastest candidate
```

A policy may set ``steady = True`` to promise that ``decide`` returns the same assignment
whenever the active jobs, their ``current`` candidates and ``current_nodes`` are the same
(whatever the time, progress or round index), and changes no state of its own (no random
draws, no counters it later reads). The simulator then skips the rounds that would repeat the
previous one (``SimConfig.skip_steady_rounds``): same results, fewer decisions.

A steady policy may also set ``settles = True`` to promise more: when every job of its
decision was placed on the first row listed for it, its next decision — same active jobs, now
running what this one placed — lists the same first row for every job and no other job (it
"settles" at once). The simulator then starts skipping right after such a round, instead of
after the round that repeats it. ``fifo-fastest`` and ``greedy`` (``lp_baseline.baselines``)
make both promises.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Protocol, Sequence, Union

import numpy as np

from hsched_env.cluster import Cluster
from hsched_env.planner import CandidateTable

Choice = Union[int, Sequence[int]]
Assignment = dict[int, Choice]


@dataclass(frozen=True)
class SchedulerView:
    """Read-only snapshot given to ``Policy.decide`` (arrays are not writeable).

    Attributes:
        time_s: Simulated time of this decision.
        round_index: Rounds decided so far.
        round_s: Round length.
        cluster: The cluster.
        capacity: (T,) GPUs per type, aligned with ``cluster.gpu_types``; every active job is
            re-decided each round, so all of it is available.
        job_ids: (A,) ids of the active jobs, in arrival order.
        arrival_s, work_samples, remaining_samples, attained_s: (A,) per active job; attained
            is the time it has run so far.
        requested_gpus: (A,) GPUs the job asked for.
        reference_samples_per_s: (A,) its throughput on its requested reference GPUs (plain
            data parallelism); ``remaining / reference`` is its remaining time as submitted.
        current: (A,) candidate row it ran with last round, -1 if it did not run.
        candidates: Per active job, its ``CandidateTable`` (read-only): the planner's
            candidates fastest first, then the rows a simulation appends for the baselines
            (``requested``, ``sia_config``; ``Simulator.candidates_of``), in no speed order —
            sort by ``samples_per_s`` where the order matters.
        models: Per active job, its model name (with the batch, e.g. ``resnet50@bs16``).
        arrived, completed: ids of the jobs that arrived / completed since the last decision.
        done_samples: (A,) samples each active job has processed so far (observable without
            knowing its total work; what a non-clairvoyant policy may read).
        restart_s: The simulation's restart cost (seconds without progress after a change of
            candidate or nodes).
        restarts: (A,) restarts each active job has paid so far.
        current_nodes: Per active job, the nodes it held last round as ``((node, gpus),
            ...)`` (node numbering of ``placement.NodeState``), ``None`` if it did not run;
            rerunning its ``current`` candidate keeps exactly these nodes.
    """

    time_s: float
    round_index: int
    round_s: float
    cluster: Cluster
    capacity: np.ndarray
    job_ids: np.ndarray
    arrival_s: np.ndarray
    work_samples: np.ndarray
    remaining_samples: np.ndarray
    attained_s: np.ndarray
    requested_gpus: np.ndarray
    reference_samples_per_s: np.ndarray
    current: np.ndarray
    candidates: tuple[CandidateTable, ...]
    models: tuple[str, ...] = ()
    arrived: tuple[int, ...] = ()
    completed: tuple[int, ...] = ()
    done_samples: np.ndarray = None   # type: ignore[assignment]
    restart_s: float = 0.0
    restarts: np.ndarray = None   # type: ignore[assignment]
    current_nodes: tuple = ()

    def __post_init__(self) -> None:
        if self.done_samples is None:
            object.__setattr__(self, "done_samples",
                               np.maximum(self.work_samples - self.remaining_samples, 0.0))
        if self.restarts is None:
            object.__setattr__(self, "restarts", np.zeros(self.job_ids.shape, dtype=np.int64))
        if not self.current_nodes:
            object.__setattr__(self, "current_nodes", (None,) * int(self.job_ids.size))
        for value in self.__dict__.values():
            if isinstance(value, np.ndarray):
                value.flags.writeable = False

    @property
    def num_active(self) -> int:
        return int(self.job_ids.size)

    def fair_share_gpus(self, k=None):
        """Active job ``k``'s fair share of GPUs, ``max(requested, G / N)`` (G the cluster's
        GPUs, N the active jobs): the co-optimizer's size cap and the ``within_fair_share``
        observation feature. ``k`` an index: a float; an index array or ``None`` (every
        active job): an array."""
        even = float(self.capacity.sum()) / max(self.num_active, 1)
        if k is not None and np.ndim(k) == 0:
            return max(float(self.requested_gpus[k]), even)
        req = self.requested_gpus if k is None else self.requested_gpus[k]
        return np.maximum(req, even)


class Policy(Protocol):
    """A scheduling policy (see the module docstring)."""

    name: str
    # Optional attributes ``steady`` and ``settles`` (read with ``getattr(policy, "steady",
    # False)``): the promises of the module docstring.

    def reset(self, cluster: Cluster, seed: int | None) -> None:
        """Called once before a simulation; seed the policy's own randomness here."""

    def decide(self, view: SchedulerView) -> Assignment:
        """Candidate row(s) per job id for this round; omitted jobs wait."""


@dataclass
class PolicyStats:
    """What a policy may report about its last decision (``policy.last_stats``)."""

    lp_vars: int = 0
    lp_cons: int = 0
    solve_s: float = 0.0
    build_s: float = 0.0
    resolved: bool = False
    extra: dict = field(default_factory=dict)
