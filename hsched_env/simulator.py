"""Round-based cluster simulator.

Every ``round_s`` seconds the policy decides, for each active job (arrived, unfinished), which
candidate it runs this round (or none). The simulator places the chosen candidates on concrete
nodes (``placement``), charges a restart (``restart_s`` of no progress, GPUs held) to every job
whose candidate or nodes changed — a job that keeps its candidate keeps its nodes — and advances
time event by event inside the round: a job finishes at the exact moment its remaining work is
done and frees its GPUs; arrivals wait for the next decision. Same inputs and seed ⇒ same result.

```python
from hsched_env.simulator import Simulator, SimConfig
result = Simulator(cluster, workload, policy, SimConfig(round_s=300)).run()
# or step by step (what the Gymnasium environments do):
#   sim.reset(); view = sim.next_view(); sim.place(j, row) ...; sim.advance(); sim.result()
result.metrics()        # avg / p50 / p99 JCT, makespan, utilization, fairness, decision time
```

Public API for code that drives or watches a run (the environments, the evaluator, tests):
``run_view()`` (a read-only ``RunView`` of the run's state), ``try_place_decision`` (the
placements a decision would get, without making them), ``snapshot()`` / ``restored()``
(branch a run), and ``candidate_cache=`` (share planned candidate tables between simulators).
Nothing outside this module touches the run's private state.
"""

from __future__ import annotations

import copy
import dataclasses
import logging
import math
import time
import types
from collections.abc import Mapping, MutableMapping
from dataclasses import dataclass, field

import numpy as np

from hsched_env.catalog import ModelSpec
from hsched_env.defaults import JOB_CANDIDATES, RESTART_S, ROUND_S
from hsched_env.cluster import Cluster, get_cluster
from hsched_env.errors import (ConfigError, check_switch, is_real_number, is_whole_number,
                               show)
from hsched_env.metrics import compute_metrics
from hsched_env.placement import NodeState, candidate_parts
from hsched_env.planner import CandidateTable, PlannerConfig, plan, plan_sets, sia_sizes
from hsched_env.policy import Assignment, Policy, SchedulerView
from hsched_env.table_memo import TableMemo
from hsched_env.throughput import check_throughput_source
from hsched_env.workloads.types import MAX_SECONDS, Job, gpus_over_capacity, missing_gpu_type

log = logging.getLogger(__name__)

QUEUED, RUNNING, DONE, UNRUNNABLE = 0, 1, 2, 3
DEFAULT_MAX_CANDIDATES = JOB_CANDIDATES          # the planner's candidates per job
# Stop when no job has run for this many rounds although jobs are waiting and none will arrive:
# the policy cannot or will not place them (reported unfinished, with a warning).
STALL_ROUNDS = 1000


@dataclass(frozen=True)
class SimConfig:
    """Simulation settings.

    Attributes:
        round_s: Round length (Gavel uses 360 s, Sia 60 s; default 300 s).
        restart_s: Time without progress whenever a job's candidate or nodes change.
        planner: Candidate-planner knobs; by default each job keeps its
            ``DEFAULT_MAX_CANDIDATES`` most efficient candidates (and the fastest).
        throughputs: ``"analytic"`` or ``"gavel"`` (measured table where it has an entry).
        seed: Seed handed to the policy (``Policy.reset``).
        max_time_s: Stop at this simulated time even if jobs remain (they are reported
            unfinished); a round it falls inside is cut short there, so no job runs or
            finishes past it; ``None``: run until every job completes.
        measure_jobs: ``(a, b)``: stop once jobs ``a..b-1`` have completed and compute the
            job-level metrics over them only (Gavel's steady-state method) and the
            utilization over their span (from the first round one of them could run in);
            ``None``: all jobs.
        check_invariants: Verify the simulator's invariants every round (slower): each
            placement matches its candidate's GPUs, no node or GPU type is over-allocated,
            remaining work stays in [0, work] and never grows, samples done + remaining =
            work for every active job, a job finishes inside its round with nothing left, no
            job runs longer than it has been in the system, and time never goes back.
        progress: Show a progress bar on stderr.
        skip_steady_rounds: In ``run``, with a policy that declares itself steady
            (``steady = True``: its decision depends only on the active jobs, their
            current candidates and nodes, and uses no randomness, as ``fifo-fastest`` and
            ``greedy``), advance over the rounds in which nothing can change — no arrival,
            no completion, and the previous round changed no job's candidate or nodes —
            without asking the policy or placing anything: those rounds would repeat the
            previous one exactly. Results are identical either way (bit for bit,
            ``tests/test_simulator.py``); skipped rounds log no decision time
            (``SimResult.rounds_skipped``). Off under ``check_invariants`` (whose checks
            are per placed round).
    """

    round_s: float = ROUND_S
    restart_s: float = RESTART_S
    planner: PlannerConfig = PlannerConfig(max_candidates=DEFAULT_MAX_CANDIDATES)
    throughputs: str | None = None
    seed: int | None = 0
    max_time_s: float | None = None
    measure_jobs: tuple[int, int] | None = None
    check_invariants: bool = False
    progress: bool = False
    skip_steady_rounds: bool = True

    def __post_init__(self) -> None:
        for name in ("round_s", "restart_s", "max_time_s"):
            value = getattr(self, name)
            if isinstance(value, np.generic):    # np.float32(61.7): the clock would run in
                object.__setattr__(self, name, value.item())    # float32; Python numbers
        if not (is_real_number(self.round_s) and 1.0 <= self.round_s <= MAX_SECONDS):
            raise ConfigError(f"round length must be a number of seconds in 1..{MAX_SECONDS:g} "
                              f"(the longest time a workload may hold), got {self.round_s!r}",
                              field="round_s")
        if not (is_real_number(self.restart_s) and self.restart_s >= 0
                and math.isfinite(self.restart_s)):
            raise ConfigError(f"restart cost must be >= 0, got {self.restart_s!r}",
                              field="restart_s")
        if self.restart_s >= self.round_s:
            raise ConfigError(f"restart cost ({self.restart_s} s) must be shorter than a round "
                              f"({self.round_s} s)", field="restart_s")
        if self.max_time_s is not None and not (is_real_number(self.max_time_s)
                                                and self.max_time_s > 0
                                                and math.isfinite(self.max_time_s)):
            raise ConfigError(f"max_time_s must be a positive number of seconds (None: no "
                              f"limit), got {self.max_time_s!r}", field="max_time_s")
        if self.measure_jobs is not None:
            m = self.measure_jobs
            if not (isinstance(m, (tuple, list)) and len(m) == 2 and all(map(is_whole_number, m))
                    and 0 <= m[0] < m[1]):
                shown = f"{m[0]}:{m[1]}" if isinstance(m, (tuple, list)) and len(m) == 2 \
                    else show(m)
                raise ConfigError(f"measure_jobs must be A:B with 0 <= A < B, whole numbers "
                                  f"(a pair (A, B)), got {shown}", field="measure_jobs")
        if self.seed is not None and not (is_whole_number(self.seed) and self.seed >= 0):
            raise ConfigError(f"seed must be a whole number >= 0 (or None), got "
                              f"{show(self.seed)}", field="seed")
        for name in ("check_invariants", "progress", "skip_steady_rounds"):
            check_switch(getattr(self, name), name)
        if not isinstance(self.planner, PlannerConfig):
            raise ConfigError(f"planner must be a hsched_env.planner.PlannerConfig, got "
                              f"{show(self.planner)}", field="planner")
        # a bad source named now, not when the first job is planned
        check_throughput_source(self.throughputs, "throughputs")


@dataclass
class JobRecord:
    """Per-job outcome of a simulation."""

    job_id: int
    name: str
    model: str
    arrival_s: float
    work_samples: float
    duration_s: float
    requested_gpus: int
    first_start_s: float = math.nan
    finish_s: float = math.nan
    restarts: int = 0
    run_s: float = 0.0                      # time holding GPUs (incl. restarts)
    samples_done: float = 0.0               # Σ throughput × productive time
    gpu_s_by_type: dict = field(default_factory=dict)
    candidates_used: list = field(default_factory=list)   # distinct (gpus, dp, tp, pp) labels
    contention_sum: float = 0.0             # Σ active jobs over the rounds it was active
    rounds_active: int = 0

    @property
    def done(self) -> bool:
        return not math.isnan(self.finish_s)

    @property
    def jct_s(self) -> float:
        return self.finish_s - self.arrival_s


@dataclass
class SimResult:
    """Outcome of ``Simulator.run``: per-job records, per-round logs, and settings.

    ``active_jobs`` has one entry per round; ``decision_s`` and ``lp_vars`` one per decision
    taken, so ``rounds_skipped`` fewer (``SimConfig.skip_steady_rounds``)."""

    policy: str
    cluster: Cluster
    config: SimConfig
    jobs: list[JobRecord]
    end_s: float
    decision_s: list[float]
    lp_vars: list[int]
    active_jobs: list[int]
    busy_gpu_s_by_type: np.ndarray
    busy_until_s: float                      # GPU time is accounted up to here
    wall_s: float
    rounds: int
    extra: dict = field(default_factory=dict)
    rounds_skipped: int = 0                  # rounds advanced without a decision (steady)
    #: A stalled run's last rounds, in which nothing ran with jobs waiting and no arrivals
    #: left (``STALL_ROUNDS`` of them; 0 unless ``end_reason`` is ``"stalled"``): decided,
    #: and counted in ``rounds`` and the decision times, but not part of the schedule
    stall_rounds: int = 0
    #: With ``measure_jobs``: the start of the first round a measured job could run in (the
    #: first round start at or after the earliest measured arrival) and the cluster's busy
    #: GPU-seconds per type accounted before it, so the utilization covers the measured span
    #: only (``metrics.compute_metrics``); ``None`` without ``measure_jobs`` or when the run
    #: ended before that round
    measure_start_s: float | None = None
    busy_before_measure: np.ndarray | None = None

    def metrics(self) -> dict:
        return compute_metrics(self)


#: Entries (rounds × running jobs × GPU types) ``skip_steady_rounds`` computes at once.
_SKIP_CHUNK = 1 << 18
#: Rounds ahead of the nearest event up to which ``skip_steady_rounds`` steps round by round
#: (a chunk's array calls cost more than a few rounds' arithmetic).
_ROUND_BY_ROUND = 4


def _steady_rounds_ahead(t: float, R: float, remaining: np.ndarray, step: np.ndarray,
                         next_arrival, max_time_s, cap: int) -> int:
    """How many rounds from ``t`` to check at once for skipping: up to the first round the
    nearest completion, arrival or time limit could fall in, plus one (an estimate in
    floating point: the exact checks find the round), between 1 and ``cap``."""
    ahead = float(np.min(remaining / step)) if remaining.size else math.inf
    if next_arrival is not None:
        ahead = min(ahead, (next_arrival - t) / R)
    if max_time_s is not None:
        ahead = min(ahead, (max_time_s - t) / R)
    if not ahead < cap:                       # also inf or NaN
        return cap
    return max(1, min(cap, int(ahead) + 2))


def _round_at_or_after(t: float, R: float) -> float:
    """The start of the first round (a multiple of ``R``) at or after time ``t``."""
    k = math.floor(t / R)
    start = k * R
    return (k + 1) * R if t > start else start


def _next_round_start(t: float, R: float) -> float:
    """The start of the round after the one that starts at ``t`` (a multiple of ``R``):
    ``(k + 1) · R`` for ``t = k · R``, computed from the round's index, not as ``t + R`` — with
    a round length that is not a whole number, sums drift below the multiples (8 × 61.7 added
    up is 493.59999999999997), and a job arriving on the boundary waited a round longer when
    the cluster had been busy than when it had been idle (the idle clock multiplies). For a
    whole-number ``R`` both are the same float."""
    return (round(t / R) + 1) * R


def _accumulated(start: np.ndarray, step, rounds: int) -> np.ndarray:
    """``start`` after ``start += step`` ``rounds`` times, each addition rounded as in a
    loop (``accumulate`` adds in order)."""
    steps = np.broadcast_to(step, (rounds,) + np.shape(start))
    return np.add.accumulate(np.concatenate([np.asarray(start)[None], steps]), axis=0)[-1]


def _check_jobs_fit(jobs, cluster: Cluster) -> None:
    """A ``ConfigError`` naming the first job that cannot run on ``cluster``: more GPUs than
    it has (of the job's ``gpu_type``, if constrained), or a type it lacks. ``load_workload``
    refuses such rows with their file and line; jobs built or loaded for another cluster
    would otherwise wait for ever (or, under the co-optimizer, run on a set the trace did not
    ask for, with a fairness above what any schedule could give)."""
    for job in jobs:
        field, problem = "gpu_type", (None if job.gpu_type is None
                                      else missing_gpu_type(cluster, job.gpu_type))
        if problem is None:
            field, problem = "requested_gpus", gpus_over_capacity(
                cluster, job.requested_gpus, job.gpu_type)
            if problem:
                problem += " (was the workload loaded for another cluster?)"
        if problem:
            raise ConfigError(problem, source=f"job {job.job_id} ({show(job.name)})",
                              field=field)


class _NotStarted:
    """The run state of a ``Simulator`` before ``reset``: reading any of it is a clear error
    (a ``RuntimeError``) instead of an ``AttributeError`` on ``None`` from deep inside."""

    __slots__ = ()

    def __getattr__(self, name: str):
        if name.startswith("__"):                 # copy, pickle and the like look these up
            raise AttributeError(name)
        raise RuntimeError("the simulator has not started: call reset() first (run() "
                           "does), then next_view() / place() / advance()")

    def __reduce__(self):
        return "NOT_STARTED"                      # the module's one instance


#: The state of every simulator before its first ``reset``.
NOT_STARTED = _NotStarted()


class Simulator:
    """Simulates ``workload`` on ``cluster`` under ``policy``.

    Args:
        cluster: The cluster.
        workload: A ``Workload`` (``hsched_env.workloads``) or a sequence of ``Job``.
        policy: The scheduling policy.
        config: ``SimConfig``.
        candidate_cache: A dict of candidate tables to use and fill (``candidates_of``'s
            cache, keyed by the cluster, the planner configuration and the throughput
            source, then the model, batch, GPU-type constraint and requested GPUs): pass the
            same dict to simulators of one cluster and planner configuration to plan each
            model once (the environments do, across episodes); simulators of other
            clusters or configurations may share it too, each using its own tables.
            Default: a new one. The tables handed out are read-only
            (``CandidateTable.freeze``), also those a caller put into the cache.
    """

    def __init__(self, cluster: Cluster, workload, policy: Policy,
                 config: SimConfig = SimConfig(), *,
                 candidate_cache: dict | None = None) -> None:
        self.cluster = cluster = get_cluster(cluster)   # a preset name or a file too
        if isinstance(workload, (str, bytes)):
            raise ConfigError(f"workload is a Workload or a sequence of jobs; load the spec "
                              f"{show(workload)} with hsched_env.workloads.load_workload",
                              field="workload")
        try:
            self.jobs = tuple(getattr(workload, "jobs", workload))
        except TypeError:
            raise ConfigError(f"workload is a Workload or a sequence of jobs, got "
                              f"{show(workload)}", field="workload") from None
        if candidate_cache is not None and not isinstance(candidate_cache, MutableMapping):
            raise ConfigError(f"candidate_cache is a mapping shared between simulators (or "
                              f"None), got {show(candidate_cache)}", field="candidate_cache")
        if not self.jobs:
            raise ConfigError("the workload has no jobs", field="workload")
        if not all(isinstance(j, Job) for j in self.jobs):
            raise ConfigError("the workload's jobs are hsched_env.workloads.Job objects",
                              field="workload")
        if isinstance(policy, type):
            raise ConfigError(f"policy is an object, got the class {policy.__name__}: pass "
                              f"an instance, {policy.__name__}(...)", field="policy")
        if not all(callable(getattr(policy, m, None)) for m in ("reset", "decide")):
            raise ConfigError(f"policy is an object with reset(cluster, seed) and "
                              f"decide(view) (lp_baseline.registry.make_policy), got "
                              f"{show(policy)}", field="policy")
        if not isinstance(config, SimConfig):
            raise ConfigError(f"config is a SimConfig, got {show(config)}", field="config")
        ids = [j.job_id for j in self.jobs]
        if ids != list(range(len(ids))):
            raise ConfigError("job ids must be 0..N-1 in order", field="workload")
        arrivals = [j.arrival_s for j in self.jobs]
        if any(b < a for a, b in zip(arrivals, arrivals[1:])):
            raise ConfigError("jobs must be sorted by arrival time (as load_workload returns "
                              "them)", field="workload")
        _check_jobs_fit(self.jobs, cluster)
        self.policy = policy
        self.config = config
        self._tables: dict[tuple, CandidateTable] = ({} if candidate_cache is None
                                                      else candidate_cache)
        # what a table depends on besides the job: a shared cache keeps one cluster's and
        # one planner configuration's tables apart from another's (they were keyed by the
        # job alone, so a cache shared across clusters priced one with another's tables)
        # (the planner configuration by its repr: its calibration holds dicts, unhashable)
        self._table_scope = (cluster, repr(config.planner), config.throughputs)
        self._s: _RunState | _NotStarted = NOT_STARTED    # reset() starts the run
        self._run_view = RunView(self)
        self._rows = TableMemo()                  # (id(table), row) -> _row_info

    # ------------------------------------------------------------------ candidates
    def candidates_of(self, job) -> CandidateTable:
        """The job's candidate table (cached per cluster and planning configuration, then
        model, batch, GPU-type constraint and requested GPUs): the planner's candidates,
        fastest first, then — flagged ``requested`` — its requested GPU count with plain
        data parallelism on each GPU type (what Gavel and the FIFO baselines run; where the
        model does not fit that count, the smallest power-of-two multiple that fits),
        unless already present; then — flagged
        ``sia_config`` — Sia's configurations (plain data parallelism on one type at
        ``planner.sia_sizes``: powers of two within a node, whole nodes beyond, at most 64
        GPUs), unless already present (then the existing row is flagged). So every policy's
        search space is inside the co-optimizer's: requested ⊂ Sia's ⊂ all candidates."""
        key = (self._table_scope, job.model, job.batch, job.gpu_type, job.requested_gpus)
        table = self._tables.get(key)
        if table is not None:
            # read-only like the tables planned here: one a caller put into the cache too
            return table if not table.samples_per_s.flags.writeable else table.freeze()
        spec: ModelSpec = job.spec
        cfg = self.config
        table = plan(spec, self.cluster, config=cfg.planner, throughputs=cfg.throughputs)
        dp_only = dataclasses.replace(cfg.planner, data_parallel_only=True)
        # Every plain data-parallel set asked for below, priced in one pass (``plan_sets``:
        # the tables ``plan_set`` gives one by one): the requested count and its doublings on
        # each type, up to its largest pool, and Sia's sizes on each type's first pool (a
        # type has one pool in every preset; ``plan_set`` prices a set on the first pool of
        # the type that holds it, so Sia's sizes land on the pool they are computed from).
        first_pool, largest_pool = {}, {}
        for pool in self.cluster.pools:
            first_pool.setdefault(pool.gpu_type, pool)
            held = largest_pool.get(pool.gpu_type)
            if held is None or pool.num_gpus > held.num_gpus:
                largest_pool[pool.gpu_type] = pool
        wanted = []
        for t, pool in first_pool.items():
            n = job.requested_gpus
            while 0 < n <= largest_pool[t].num_gpus:
                wanted.append((t, n))
                n *= 2
            wanted += [(t, k) for k in sia_sizes(pool.gpus_per_node, pool.num_gpus)]
        wanted = list(dict.fromkeys(wanted))
        priced = dict(zip(wanted, plan_sets(spec, self.cluster, [{t: n} for t, n in wanted],
                                            config=dp_only, throughputs=cfg.throughputs)))

        def dp_row(t: str, n: int) -> CandidateTable:
            got = priced.get((t, n))
            if got is None:           # not asked for above: priced alone (or its error)
                got = plan_sets(spec, self.cluster, [{t: n}], config=dp_only,
                                throughputs=cfg.throughputs)[0]
            return got.take(np.arange(len(got)))          # a copy: its flags are set below

        def plain_dp_mask(tab: CandidateTable) -> np.ndarray:
            """Which rows of ``tab`` are plain data parallelism (no TP, no PP, homogeneous)."""
            return (tab.tp == 1) & (tab.pp == 1) & (tab.kind == 0)

        def same_rows(tab: CandidateTable, gpus: np.ndarray) -> np.ndarray:
            return np.flatnonzero(np.all(tab.gpus == gpus, axis=1) & plain_dp_mask(tab))

        extra: list[CandidateTable] = []
        for t in self.cluster.gpu_types:
            # The requested count, or the smallest power-of-two multiple of it on which
            # plain data parallelism fits on this type (in one node pool, as plan_set).
            pool_gpus = largest_pool[t].num_gpus
            n, row = job.requested_gpus, None
            while n <= pool_gpus:
                row = dp_row(t, n)
                if len(row) and 0 < row.samples_per_s[0] < math.inf:  # a row that runs
                    break
                n, row = n * 2, None
            if row is None:
                continue
            same = same_rows(table, row.gpus[0])
            if same.size:
                table.requested[same[0]] = True
            else:
                row.requested[:] = True
                extra.append(row)
        # Sia's configurations (the ``sia`` baseline's search space, which the co-optimizer's
        # candidates then include): data parallelism on one type at Sia's sizes. A set already
        # present as a plain data-parallel row is flagged there: the first such row of the
        # first table holding one, in the order [table] + extra (``plain_dp``, kept as
        # tables are added: what searching them in order with ``same_rows`` finds).
        plain_dp: dict[tuple, tuple[CandidateTable, int]] = {}

        def index_plain_dp(tab: CandidateTable) -> None:
            for r in np.flatnonzero(plain_dp_mask(tab)).tolist():
                plain_dp.setdefault(tuple(tab.gpus[r].tolist()), (tab, r))

        for tab in [table] + extra:
            index_plain_dp(tab)
        for t, pool in first_pool.items():      # (in the cluster's order of types)
            for n in sia_sizes(pool.gpus_per_node, pool.num_gpus):
                row = dp_row(t, n)
                if not len(row):
                    continue
                hit = plain_dp.get(tuple(row.gpus[0].tolist()))
                if hit is not None:
                    hit[0].sia_config[hit[1]] = True
                else:
                    row.sia_config[:] = True
                    extra.append(row)
                    index_plain_dp(row)
        if extra:
            table = CandidateTable.concat([table] + extra)
        if job.gpu_type is not None:
            t = table.gpu_types.index(job.gpu_type) if job.gpu_type in table.gpu_types else -1
            only = ((table.gpus.sum(axis=1) == table.gpus[:, t]) if t >= 0
                    else np.zeros(len(table), dtype=bool))
            table = table.take(np.flatnonzero(only))
        # read-only from here: policies and environments see the table itself (the view's
        # ``candidates``), and the cache shares it with every later run
        self._tables[key] = table.freeze()
        return table

    # ------------------------------------------------------------------ engine
    # ``run`` drives the steps below with ``self.policy``; the Gymnasium environments drive
    # them one placement at a time. Per-run state lives in ``self._s`` (``_RunState``), so a
    # simulation can be branched mid-round (``snapshot`` / ``restored``) and continued.
    def reset(self) -> None:
        """Start a new run: no job has arrived, the clock is at the first arrival's round."""
        cfg, jobs = self.config, self.jobs
        n = len(jobs)
        measure = cfg.measure_jobs
        if measure is not None and measure[1] > n:
            raise ConfigError(f"measure_jobs {measure[0]}:{measure[1]} beyond the {n} jobs",
                              field="measure_jobs")
        types = self.cluster.gpu_types
        s = _RunState()
        s.wall0 = time.perf_counter()
        s.nodes = NodeState(self.cluster)
        s.arrival = np.array([j.arrival_s for j in jobs], dtype=float)
        s.work = np.array([j.work_samples for j in jobs], dtype=float)
        s.remaining = s.work.copy()
        s.ref_thr = np.array([j.work_samples / j.duration_s for j in jobs], dtype=float)
        s.requested = np.array([j.requested_gpus for j in jobs], dtype=np.int64)
        s.state = np.full(n, QUEUED)
        s.attained = np.zeros(n)
        s.finish = np.full(n, np.inf)
        s.current = np.full(n, -1, dtype=np.int64)
        s.alloc = [None] * n
        s.tables = [self.candidates_of(j) for j in jobs]
        s.records = [JobRecord(j.job_id, j.name, j.spec.name, j.arrival_s, j.work_samples,
                               j.duration_s, j.requested_gpus,
                               gpu_s_by_type={t: 0.0 for t in types}) for j in jobs]
        s.used_labels = [set() for _ in range(n)]
        for i, tab in enumerate(s.tables):
            if len(tab) == 0:
                s.state[i] = UNRUNNABLE
                only = (f" of type {jobs[i].gpu_type} (its constraint)"
                        if jobs[i].gpu_type is not None else "")
                log.warning("job %d (%r, %s) has no candidate%s on %s: it can never run and "
                            "is reported unfinished", i, jobs[i].name, jobs[i].model, only,
                            self.cluster.name)
        s.prev_remaining = s.remaining.copy()
        s.busy = np.zeros(len(types))
        if measure is not None:
            s.measure_from = float(s.arrival[measure[0]:measure[1]].min())
        s.t = math.floor(s.arrival.min() / self.config.round_s) * self.config.round_s
        s.bar = _progress(n, cfg.progress)
        self._s = s

    @property
    def time_s(self) -> float:
        """Simulated time (the start of the round being decided, between rounds its end)."""
        return self._s.t

    @property
    def finished(self) -> bool:
        """Whether the run has ended (``end_reason`` says why)."""
        return self._s.end_reason is not None

    @property
    def end_reason(self) -> str | None:
        """``"completed"`` (every job, or the measured ones, done), ``"time_limit"``
        (``max_time_s``), ``"stalled"`` (waiting jobs nobody runs, no arrivals left) or
        ``None`` while running."""
        return self._s.end_reason

    def _end(self, reason: str) -> None:
        s = self._s
        s.end_reason = reason
        if s.bar is not None:
            s.bar.close()
            s.bar = None

    def next_view(self) -> SchedulerView | None:
        """Advance to the next decision point and open its round: the view of the active
        jobs, or ``None`` when the run has ended. Place jobs with ``place`` /
        ``place_decision``, then ``advance``."""
        s, cfg, R = self._s, self.config, self.config.round_s
        if s.end_reason is not None:
            return None
        if s.in_round:
            raise RuntimeError("next_view() called twice without advance()")
        n = len(self.jobs)
        arrival, state = s.arrival, s.state
        while True:
            while s.next_arrival < n and arrival[s.next_arrival] <= s.t:
                s.arrived_since.append(s.next_arrival)
                s.next_arrival += 1
            measure = cfg.measure_jobs
            if measure is not None and np.all(state[measure[0]:measure[1]] >= DONE):
                self._end("completed")
                return None
            active = np.flatnonzero((state <= RUNNING) & (arrival <= s.t))
            if active.size:
                break
            if s.next_arrival >= n:
                self._end("completed")          # what is left can never run
                return None
            jump = _round_at_or_after(arrival[s.next_arrival], R)
            if cfg.max_time_s is not None and jump >= cfg.max_time_s:
                # the idle clock stops at the limit, not at the round after it: a job
                # arriving past the limit never arrived (it was counted in the system, and
                # the run's time read past max_time_s); the run ends below
                s.t = max(s.t, cfg.max_time_s)
                break
            if s.busy_before_measure is None and jump > s.measure_from:
                # the idle clock jumps past the measured span's start (its first job can
                # never run): nothing ran meanwhile, so the busy total is that round's
                s.measure_start = max(s.t, _round_at_or_after(s.measure_from, R))
                s.busy_before_measure = s.busy.copy()
            s.t = jump
        if cfg.max_time_s is not None and s.t >= cfg.max_time_s:
            # the clock reads the limit (the first arrival's round can start past it)
            s.t = cfg.max_time_s
            self._end("time_limit")
            return None
        if s.busy_before_measure is None and s.t >= s.measure_from:
            # the first round a measured job can run in: the measured span's utilization
            # counts the GPU time from here on (a round from its start: none is skipped
            # here, a measured job is arriving)
            s.measure_start, s.busy_before_measure = s.t, s.busy.copy()
        if cfg.check_invariants:
            if s.t < s.last_view_t:
                raise AssertionError(f"time went back: round at t={s.t} after t={s.last_view_t}")
            s.last_view_t = s.t
        tables, records, alloc = s.tables, s.records, s.alloc
        act = active.tolist()                   # Python ints index lists faster
        recs = [records[i] for i in act]
        view = SchedulerView(
            time_s=s.t, round_index=s.rounds, round_s=R, cluster=self.cluster,
            capacity=np.asarray(self.cluster.capacity_vec, dtype=np.int64).copy(),
            job_ids=active.copy(), arrival_s=arrival[active], work_samples=s.work[active],
            remaining_samples=s.remaining[active], attained_s=s.attained[active],
            requested_gpus=s.requested[active], reference_samples_per_s=s.ref_thr[active],
            current=s.current[active], candidates=tuple([tables[i] for i in act]),
            models=tuple([r.model for r in recs]),
            arrived=tuple(s.arrived_since), completed=tuple(s.completed_since),
            done_samples=np.array([r.samples_done for r in recs]),
            restart_s=float(cfg.restart_s),
            restarts=np.array([r.restarts for r in recs], dtype=np.int64),
            current_nodes=tuple([alloc[i] for i in act]))
        s.arrived_since, s.completed_since = [], []
        s.active = active
        s.active_log.append(int(active.size))
        s.nodes.reset()
        s.new_alloc = {}
        s.in_round = True
        return view

    def record_decision(self, seconds: float, lp_vars: int = 0) -> None:
        """Log the decision time (and LP size) of the open round."""
        self._s.decision_s.append(float(seconds))
        self._s.lp_vars.append(int(lp_vars))

    def can_keep(self, j: int, r: int) -> bool:
        """Whether running row ``r`` keeps job ``j`` on the nodes it holds (no restart)."""
        s = self._s
        return r == s.current[j] and s.alloc[j] is not None

    def place(self, j: int, r: int) -> bool:
        """Run job ``j`` with candidate row ``r`` this round, if it fits on the free nodes: on
        its current nodes when ``r`` is its current candidate and they are free (no restart),
        else on nodes picked by ``NodeState.place``. Returns whether it was placed. A job
        that is not active this round, or a row that is not one of its candidates' (or not a
        whole number), is a ``ConfigError``."""
        s = self._s
        if not s.in_round:
            raise RuntimeError("place() needs an open round: call next_view() first")
        active = is_whole_number(j) and self._active_now(j)
        if not active or not is_whole_number(r) or not 0 <= r < len(s.tables[j]):
            what = (f"job {show(j)}, which is not active at t={s.t:.0f}" if not active else
                    f"row {show(r)} of job {j}, which has {len(s.tables[j])} candidates")
            raise ConfigError(f"place() was given {what}", field="place")
        return self._place_on(s.nodes, s.new_alloc, j, r)

    def _active_now(self, j: int) -> bool:
        """Whether job ``j`` (an int) is one of the open round's active jobs: arrived, neither
        finished nor unrunnable (``next_view``'s rule)."""
        s = self._s
        return 0 <= j < len(self.jobs) and s.state[j] <= RUNNING and s.arrival[j] <= s.t

    def _place_on(self, nodes: NodeState, new_alloc: dict, j: int, r: int) -> bool:
        """``place`` on the given node state and round placements (the run's, or copies)."""
        if j in new_alloc:
            return False
        s = self._s
        if self.can_keep(j, r) and nodes.keep(s.alloc[j]):
            new_alloc[j] = (r, s.alloc[j])
            return True
        _, _, _, _, parts, tp = self._row_info(s.tables[j], r)
        got = nodes.place(parts, tp)
        if got is None:
            return False
        new_alloc[j] = (r, got)
        return True

    def place_decision(self, decision: Assignment, who: str = "policy") -> list[tuple[int, int]]:
        """Place a policy's decision the simulator's way: jobs keeping their candidate first
        (same candidate ⇒ same nodes), then the rest by GPUs (largest first, then job id),
        each trying its rows in order. Returns the placements made, in order."""
        s = self._s
        return self._place_decision_on(s.nodes, s.new_alloc, decision, who)

    def try_place_decision(self, decision: Assignment,
                           who: str = "policy") -> list[tuple[int, int]]:
        """The placements ``place_decision(decision)`` would make now, in order, without
        making them: a dry run on copies of the open round's node state and placements (the
        run's state is only read)."""
        s = self._s
        return self._place_decision_on(s.nodes.copy(), dict(s.new_alloc), decision, who)

    def _place_decision_on(self, nodes: NodeState, new_alloc: dict, decision: Assignment,
                           who: str) -> list[tuple[int, int]]:
        s = self._s
        t = s.t
        prefs: dict[int, list[int]] = {}
        if not isinstance(decision, Mapping):
            raise ConfigError(f"{who} returned {type(decision).__name__}, not a mapping "
                              f"{{job id: row or rows}}", field="decision")
        for j, choice in decision.items():
            if not is_whole_number(j):
                raise ConfigError(f"{who} assigned job {show(j)}: a job id is a whole number",
                                  field="decision")
            j = int(j)
            if not self._active_now(j):
                raise ConfigError(f"{who} assigned job {j}, which is not active at t={t:.0f}",
                                  field="decision")
            rows = _choice_rows(choice, j, who)
            size = len(s.tables[j])
            for r in rows:
                if not 0 <= r < size:
                    raise ConfigError(f"{who} chose row {r} for job {j}, which has "
                                      f"{size} candidates", field="decision")
            if rows:
                prefs[j] = rows
        placed = []
        for j, rows in prefs.items():
            if self.can_keep(j, rows[0]) and self._place_on(nodes, new_alloc, j, rows[0]):
                placed.append((j, rows[0]))
        order = sorted((j for j in prefs if j not in new_alloc),
                       key=lambda j: (-self._row_info(s.tables[j], prefs[j][0])[3], j))
        for j in order:
            for r in prefs[j]:
                if self._place_on(nodes, new_alloc, j, r):
                    placed.append((j, r))
                    break
        return placed

    # ------------------------------------------------------------------ reading and branching
    def run_view(self) -> "RunView":
        """A read-only view of the run's state (one per simulator: it follows the run as it
        goes on, so callers on a hot path need not keep their own)."""
        return self._run_view

    def snapshot(self) -> "RunSnapshot":
        """A copy of the run's state — and of the policy's, which decides the rounds to come
        (its RNG, its memos) — to branch from (``restored``); candidate tables and the
        cluster are shared, not copied (they never change)."""
        return RunSnapshot(copy.deepcopy(self._s, self._shared_memo()),
                           copy.deepcopy(self.policy, self._shared_memo()))

    def restored(self, snapshot: "RunSnapshot") -> "Simulator":
        """A simulator of the same scenario continuing from ``snapshot`` with its own copy of
        the policy as it was then (this one is left as it is, policy included); a snapshot
        can be restored any number of times, each branch the same run."""
        if not isinstance(snapshot, RunSnapshot):
            raise ConfigError(f"expected a RunSnapshot (Simulator.snapshot()), got "
                              f"{show(snapshot)}", field="snapshot")
        sim = copy.copy(self)
        sim._s = copy.deepcopy(snapshot.state, self._shared_memo())
        if snapshot.policy is not None:
            sim.policy = copy.deepcopy(snapshot.policy, self._shared_memo())
        sim._run_view = RunView(sim)
        return sim

    def _shared_memo(self) -> dict:
        memo = {id(self.cluster): self.cluster}
        for t in self._tables.values():
            memo[id(t)] = t
        return memo

    def job_time_s(self) -> float:
        """Σ over jobs of their time in the system (arrival to finish) up to ``time_s``: at
        the end of a completed run, Σ JCT."""
        s = self._s
        t = s.t
        arrived = s.arrival <= t
        return float(np.sum(np.minimum(s.finish[arrived], t) - s.arrival[arrived]))

    def advance(self) -> None:
        """Run the open round with the placements made: restarts, progress, exact completions
        inside the round; then the clock moves to the round's end."""
        s, cfg, R = self._s, self.config, self.config.round_s
        if not s.in_round:
            raise RuntimeError("advance() called without an open round (next_view())")
        t, active, new_alloc = s.t, s.active, s.new_alloc
        remaining, records, current, alloc = s.remaining, s.records, s.current, s.alloc
        end, length = _next_round_start(t, R), R
        if cfg.max_time_s is not None and end > cfg.max_time_s:
            # the time limit cuts the round short: nothing runs or finishes past it
            end, length = cfg.max_time_s, cfg.max_time_s - t
        changed_state = []
        jobs = active.tolist()
        for j in jobs:
            rec = records[j]
            rec.contention_sum += len(jobs)
            rec.rounds_active += 1
        busy = s.busy.tolist()          # summed as Python floats: the same IEEE additions
        busy_until = s.busy_until
        attained, state, finish_of = s.attained, s.state, s.finish
        # whether this round left every job's candidate and nodes as they were (and ran
        # something): then, until an arrival or a completion, a steady policy repeats it
        unchanged = bool(new_alloc)
        for j in jobs:
            if j not in new_alloc:
                if current[j] >= 0:
                    unchanged = False
                current[j], alloc[j] = -1, None
                continue
            r, a = new_alloc[j]
            rec = records[j]
            same = current[j] == r and alloc[j] == a
            unchanged = unchanged and same
            started = not math.isnan(rec.first_start_s)
            restart = cfg.restart_s if not same and started else 0.0
            if not same and started:        # counted even when it costs no time (restart_s 0)
                rec.restarts += 1
            if not started:
                rec.first_start_s = t
            current[j], alloc[j] = r, a
            tab = s.tables[j]
            label, thr, used = self._row_info(tab, r)[:3]
            if label not in s.used_labels[j]:
                s.used_labels[j].add(label)
                rec.candidates_used.append(label)
            left = float(remaining[j])
            finish = t + restart + (left / thr if thr else math.inf)
            if finish <= end:
                held = finish - t
                rec.samples_done += left
                remaining[j] = 0.0
                state[j] = DONE
                rec.finish_s = finish
                finish_of[j] = finish
                changed_state.append(j)
            else:
                held = length
                ran = length - restart if length > restart else 0.0
                rec.samples_done += thr * ran
                remaining[j] = max(left - thr * ran, 0.0)
                state[j] = RUNNING
            attained[j] += held
            rec.run_s += held
            gpu_s = rec.gpu_s_by_type
            for ti, name, k in used:
                gpu_s[name] += held * k
                busy[ti] += held * k
            # (a job that held its GPUs the whole round: to the clock's own end, not t + R,
            # which differs from it by an ulp for a round length that is not a whole number)
            busy_until = max(busy_until, end if held == length else t + held)
        s.busy[:] = busy
        s.busy_until = busy_until
        for j in changed_state:
            alloc[j] = None
            current[j] = -1
            s.completed_since.append(int(j))
        if s.bar is not None and changed_state:
            s.bar.update(len(changed_state))
        if cfg.check_invariants:
            _check(s.nodes, self.cluster, new_alloc, s.tables, remaining, s.work)
            if np.any(remaining > s.prev_remaining):
                raise AssertionError("remaining work grew")
            s.prev_remaining = remaining.copy()
            _check_jobs(s, active, t, end)
        s.in_round = False
        s.unchanged = unchanged and not changed_state
        s.rounds += 1
        s.t = end
        s.stalled = s.stalled + 1 if not new_alloc and s.next_arrival >= len(self.jobs) else 0
        if s.stalled >= STALL_ROUNDS:
            name = getattr(self.policy, "name", None)     # None when an environment drives
            log.warning("%sno job ran for %d rounds with %d jobs waiting and no arrivals "
                        "left: stopping at t=%.0f s (they are reported unfinished): %s",
                        f"{name}: " if name else "", s.stalled, active.size, end,
                        self._waiting_jobs_text(active))
            self._end("stalled")

    def _waiting_jobs_text(self, active: np.ndarray, most: int = 5) -> str:
        """The first ``most`` of the jobs ``active`` by name, model and requested GPUs (a
        stall warning said how many waited, not which)."""
        shown = [self.jobs[int(j)] for j in active[:most]]
        text = ", ".join(f"{job.name} ({job.model}, {job.requested_gpus} "
                         f"{job.gpu_type + ' ' if job.gpu_type else ''}GPUs)" for job in shown)
        return text + (f" and {active.size - most} more" if active.size > most else "")

    def _row_info(self, table: CandidateTable, r: int) -> tuple:
        """``(label, samples/s, ((type index, type, GPUs), ...) of the types it uses, GPUs,
        [(pool, GPUs), ...] parts, tp)`` of row ``r`` of ``table``, computed once per row."""
        hit = self._rows.get((id(table), r))       # TableMemo.get_for, inlined: a hot path
        if hit is not None and hit[0] is table:
            return hit[1]
        types = self.cluster.gpu_types
        used = tuple((ti, types[ti], int(k)) for ti, k in enumerate(table.gpus[r]) if k)
        info = (_label(table, r), float(table.samples_per_s[r]), used,
                sum(k for _, _, k in used), candidate_parts(table, r), int(table.tp[r]))
        self._rows[(id(table), r)] = (table, info)
        return info

    def skip_steady_rounds(self) -> int:
        """Advance over the rounds that would repeat the last one exactly, without a decision
        (``SimConfig.skip_steady_rounds``; call between ``advance`` and ``next_view``, only
        with a steady policy): while no job arrives and no running job would finish inside
        the round, and the last round changed no job's candidate or nodes, each job runs on
        what it holds — the same arithmetic as ``advance``, in the same order, so the run is
        bit-for-bit the one without skipping. Returns the rounds skipped."""
        s, cfg, R = self._s, self.config, self.config.round_s
        if not s.unchanged or s.in_round or s.end_reason is not None:
            return 0
        n = len(self.jobs)
        arrival, active, records = s.arrival, s.active, s.records
        run = np.array([j for j in active if j in s.new_alloc], dtype=np.int64)
        rows = s.current[run]
        thr = np.array([self._row_info(s.tables[j], r)[1] for j, r in zip(run, rows)])
        gpus = np.array([s.tables[j].gpus[r] for j, r in zip(run, rows)], dtype=np.int64)
        if not np.all(thr > 0):
            return 0                  # a job that never finishes: step round by round
        types = self.cluster.gpu_types
        remaining = s.remaining[run]
        attained = s.attained[run]
        done = np.array([records[j].samples_done for j in run])
        run_s = np.array([records[j].run_s for j in run])
        gpu_s = np.array([[records[j].gpu_s_by_type[ty] for ty in types] for j in run])
        step_samples, step_gpu_s = thr * R, R * gpus
        busy = s.busy
        skipped = 0
        t = s.t
        next_arrival = arrival[s.next_arrival] if s.next_arrival < n else None
        while True:
            # the rounds to try at once: as many as the nearest event leaves (an estimate;
            # the exact checks below decide), capped so the arrays stay small
            chunk = _steady_rounds_ahead(t, R, remaining, step_samples, next_arrival,
                                         cfg.max_time_s, max(1, _SKIP_CHUNK // gpus.size))
            if chunk <= _ROUND_BY_ROUND:
                # an event within a few rounds: one round at a time costs fewer array calls
                if next_arrival is not None and next_arrival <= t:
                    break
                end = _next_round_start(t, R)
                if cfg.max_time_s is not None and (t >= cfg.max_time_s or end > cfg.max_time_s):
                    break                 # the limit cuts this round short: ``advance`` runs it
                if np.any(t + remaining / thr <= end):     # a job would finish in this round
                    break
                # ``advance``'s arithmetic, elementwise (each job's sums in the same order)
                remaining = np.maximum(remaining - step_samples, 0.0)
                done = done + step_samples
                run_s = run_s + R
                attained = attained + R
                gpu_s = gpu_s + step_gpu_s
                # the cluster's busy GPU-seconds, job after job (``accumulate`` is sequential)
                busy = np.add.accumulate(np.vstack([busy[None], step_gpu_s]), axis=0)[-1]
                skipped += 1
                t = end
                continue
            # the clock and the remaining work after each of the next ``chunk`` rounds, as
            # ``advance`` computes them (the clock from the round index, ``_next_round_start``;
            # the work by its subtractions in order: ``accumulate`` is sequential, so every
            # entry is the loop's own float); row i: after i rounds
            starts = (round(t / R) + np.arange(chunk + 1, dtype=np.float64)) * R
            left = np.maximum(np.subtract.accumulate(
                np.vstack([remaining[None], np.broadcast_to(step_samples, (chunk, run.size))]),
                axis=0), 0.0)
            # round i + 1 (from starts[i] to starts[i + 1]) runs unless a job arrives by its
            # start, the time limit falls in it, or a job would finish inside it
            stop = np.any(starts[:-1, None] + left[:-1] / thr <= starts[1:, None], axis=1)
            if next_arrival is not None:
                stop |= next_arrival <= starts[:-1]
            if cfg.max_time_s is not None:
                stop |= (starts[:-1] >= cfg.max_time_s) | (starts[1:] > cfg.max_time_s)
            k = int(np.argmax(stop)) if stop.any() else chunk
            if k:
                remaining = left[k]
                done = _accumulated(done, step_samples, k)
                run_s = _accumulated(run_s, R, k)
                attained = _accumulated(attained, R, k)
                gpu_s = _accumulated(gpu_s, step_gpu_s, k)
                # the cluster's busy GPU-seconds, job after job, round after round
                busy = np.add.accumulate(np.vstack([busy[None], np.tile(step_gpu_s, (k, 1))]),
                                         axis=0)[-1]
                skipped += k
                t = float(starts[k])
            if k < chunk:
                break
        if not skipped:
            return 0
        s.remaining[run] = remaining
        s.attained[run] = attained
        s.busy[:] = busy
        s.busy_until = max(s.busy_until, t)
        for i, j in enumerate(run):
            rec = records[j]
            rec.samples_done, rec.run_s = float(done[i]), float(run_s[i])
            for ti, ty in enumerate(types):
                if gpus[i, ti]:
                    rec.gpu_s_by_type[ty] = float(gpu_s[i, ti])
        for j in active:
            rec = records[j]
            rec.contention_sum += skipped * active.size     # integers: exact in any order
            rec.rounds_active += skipped
        s.active_log.extend([int(active.size)] * skipped)
        s.rounds += skipped
        s.skipped += skipped
        s.stalled = 0
        s.t = t
        return skipped

    def _policy_name(self) -> str:
        """The policy's ``name``, or its class's name when it has none."""
        return getattr(self.policy, "name", type(self.policy).__name__)

    def result(self) -> SimResult:
        """The outcome so far (complete once ``finished``)."""
        s = self._s
        end_s = max([r.finish_s for r in s.records if r.done] or [s.t])
        return SimResult(policy=self._policy_name(),
                         cluster=self.cluster, config=self.config, jobs=s.records, end_s=end_s,
                         decision_s=s.decision_s, lp_vars=s.lp_vars, active_jobs=s.active_log,
                         busy_gpu_s_by_type=s.busy, busy_until_s=s.busy_until,
                         wall_s=time.perf_counter() - s.wall0, rounds=s.rounds,
                         extra=dict(getattr(self.policy, "summary", lambda: {})()),
                         rounds_skipped=s.skipped,
                         stall_rounds=s.stalled if s.end_reason == "stalled" else 0,
                         measure_start_s=s.measure_start,
                         busy_before_measure=s.busy_before_measure)

    # ------------------------------------------------------------------ main loop
    def run(self) -> SimResult:
        """Simulate the whole workload under ``self.policy``."""
        self.policy.reset(self.cluster, self.config.seed)
        self.reset()
        cfg = self.config
        skip = (cfg.skip_steady_rounds and not cfg.check_invariants
                and getattr(self.policy, "steady", False) is True)
        settles = skip and getattr(self.policy, "settles", False) is True
        who = f"policy {self._policy_name()!r}"
        while (view := self.next_view()) is not None:
            t0 = time.perf_counter()
            decision = self.policy.decide(view)
            elapsed = time.perf_counter() - t0
            stats = getattr(self.policy, "last_stats", None)
            self.record_decision(elapsed, getattr(stats, "lp_vars", 0) or 0)
            placed = self.place_decision(decision, who=who)
            self.advance()
            if settles and placed and not self._s.completed_since \
                    and _all_first(decision, placed):
                # the policy's promise: the next round would repeat this one's placements
                self._s.unchanged = True
            if skip:
                self.skip_steady_rounds()
        return self.result()


def _choice_rows(choice, job=None, who: str = "policy") -> list[int]:
    """A decision's choice for one job (a row, or rows in preference order) as a list; a
    ``ConfigError`` for anything but whole numbers (``0.7``, ``"0"``, ``True``, NaN)."""
    kind = type(choice)
    if kind is int:  # the common cases first: a plain row, or a list of them
        return [choice]
    if kind is list and all(type(c) is int for c in choice):
        return choice[:]
    if isinstance(choice, np.ndarray) and choice.dtype.kind in "iu" and choice.ndim <= 1:
        return choice.reshape(-1).tolist()
    items = list(choice) if isinstance(choice, (list, tuple, np.ndarray)) else [choice]
    if not all(is_whole_number(c) for c in items):
        raise ConfigError(f"{who} chose {show(choice)} for job {job}: a choice is a candidate "
                          f"row or a list of rows, whole numbers", field="decision")
    return [int(c) for c in items]


def _all_first(decision: Assignment, placed: list[tuple[int, int]]) -> bool:
    """Whether ``placed`` (``place_decision``'s placements) put every job of ``decision`` on
    the first row listed for it."""
    firsts = {}
    for j, choice in decision.items():
        rows = _choice_rows(choice)
        if rows:
            firsts[int(j)] = rows[0]
    return len(placed) == len(firsts) and all(firsts.get(j) == r for j, r in placed)


class RunView:
    """Read-only view of a ``Simulator``'s run (``Simulator.run_view()``). Arrays are
    read-only views indexed by job id (or node index); they follow the run as it goes on."""

    def __init__(self, sim: Simulator) -> None:
        self._sim = sim
        self._views: dict[int, tuple[np.ndarray, np.ndarray]] = {}

    def __getstate__(self) -> dict:
        return {"_sim": self._sim}          # the views are remade (a copy's would not follow)

    def __setstate__(self, state: dict) -> None:
        self._sim = state["_sim"]
        self._views = {}

    def _ro(self, a: np.ndarray) -> np.ndarray:
        """A read-only view of the run's array ``a``, made once per array."""
        hit = self._views.get(id(a))
        if hit is None or hit[0] is not a:
            if len(self._views) > 64:
                self._views.clear()
            hit = self._views[id(a)] = (a, _read_only(a))
        return hit[1]

    @property
    def _s(self) -> "_RunState":
        return self._sim._s

    @property
    def time_s(self) -> float:
        """Simulated time (the open round's start; between rounds its end)."""
        return self._s.t

    @property
    def rounds(self) -> int:
        """Rounds completed."""
        return self._s.rounds

    @property
    def in_round(self) -> bool:
        """Whether a round is open (``next_view`` called, ``advance`` not yet)."""
        return self._s.in_round

    @property
    def first_arrival_s(self) -> float:
        return float(self._s.arrival.min())

    @property
    def finish_s(self) -> np.ndarray:
        """(N,) finish time of each job, ``inf`` until it is done."""
        return self._ro(self._s.finish)

    @property
    def state(self) -> np.ndarray:
        """(N,) each job's state: ``QUEUED`` (also before it arrives), ``RUNNING``, ``DONE``
        or ``UNRUNNABLE`` (no candidate on the cluster), constants of this module."""
        return self._ro(self._s.state)

    @property
    def remaining_samples(self) -> np.ndarray:
        """(N,) work each job has left, in samples."""
        return self._ro(self._s.remaining)

    @property
    def attained_s(self) -> np.ndarray:
        """(N,) seconds each job has run (its attained service)."""
        return self._ro(self._s.attained)

    @property
    def jobs_completed(self) -> int:
        """Jobs done so far."""
        return int(np.count_nonzero(np.isfinite(self._s.finish)))

    @property
    def jobs_unfinished(self) -> int:
        """Jobs queued or running (arrived or not), i.e. neither done nor unrunnable."""
        return int(np.count_nonzero(self._s.state < DONE))

    @property
    def jobs_done_or_unrunnable(self) -> int:
        """Jobs done, or that can never run (no candidate on the cluster)."""
        return int(np.count_nonzero(self._s.state >= DONE))

    @property
    def free_gpus(self) -> np.ndarray:
        """(nodes,) GPUs free on each node in the open round (after its placements)."""
        return self._ro(self._s.nodes.free)

    @property
    def node_gpus(self) -> np.ndarray:
        """(nodes,) GPUs of each node."""
        return self._ro(self._s.nodes.capacity)

    @property
    def placements(self):
        """The open round's placements so far: ``{job id: (row, ((node, gpus), ...))}``
        (read-only mapping)."""
        return types.MappingProxyType(self._s.new_alloc)

    @property
    def allocations(self) -> tuple:
        """Per job, the nodes ``((node, gpus), ...)`` it ran on in the last round, or None."""
        return tuple(self._s.alloc)

    @property
    def tables(self) -> tuple:
        """Per job, its candidate table (``Simulator.candidates_of``)."""
        return tuple(self._s.tables)

    @property
    def records(self) -> tuple:
        """Per job, its ``JobRecord`` so far (restarts, samples done, finish, ...): the live
        records, to read (changing them corrupts the run)."""
        return tuple(self._s.records)


@dataclass(frozen=True)
class RunSnapshot:
    """A copy of a run's state and of its policy's (``Simulator.snapshot()``), opaque to
    other modules."""

    state: object
    policy: object = None


def _read_only(a: np.ndarray) -> np.ndarray:
    v = a.view()
    v.flags.writeable = False
    return v


@dataclass
class _RunState:
    """Mutable state of one run (arrays indexed by job id)."""

    wall0: float = 0.0
    nodes: NodeState | None = None
    arrival: np.ndarray = None
    work: np.ndarray = None
    remaining: np.ndarray = None
    ref_thr: np.ndarray = None
    requested: np.ndarray = None
    state: np.ndarray = None
    attained: np.ndarray = None
    finish: np.ndarray = None                 # finish time, inf until done
    current: np.ndarray = None                # candidate row run last round, -1 if none
    alloc: list = None                        # its nodes ((node, gpus), ...) or None
    tables: list = None
    records: list = None
    used_labels: list = None
    prev_remaining: np.ndarray = None
    busy: np.ndarray = None
    busy_until: float = 0.0
    measure_from: float = math.inf            # earliest arrival of the measured jobs
    measure_start: float | None = None        # the first round start at or after it
    busy_before_measure: np.ndarray | None = None   # ``busy`` at that round's start
    decision_s: list = field(default_factory=list)
    lp_vars: list = field(default_factory=list)
    active_log: list = field(default_factory=list)
    arrived_since: list = field(default_factory=list)
    completed_since: list = field(default_factory=list)
    next_arrival: int = 0
    t: float = 0.0
    last_view_t: float = -math.inf           # time of the last round opened (invariant checks)
    rounds: int = 0
    skipped: int = 0                          # rounds advanced by skip_steady_rounds
    unchanged: bool = False                   # the last round changed no job's placement
    stalled: int = 0
    active: np.ndarray = None
    new_alloc: dict = field(default_factory=dict)
    in_round: bool = False
    end_reason: str | None = None
    bar: object = None


def _label(table: CandidateTable, r: int) -> str:
    gpus = "+".join(f"{n}x{t}" for t, n in table.gpus_dict(r).items())
    return f"{gpus}:dp{int(table.dp[r])}tp{int(table.tp[r])}pp{int(table.pp[r])}"


def _check(nodes: NodeState, cluster: Cluster, new_alloc, tables, remaining, work) -> None:
    """Invariants of a round's placements: each matches its candidate's GPUs per type, no node
    over-subscribed (nor free counts drifting), no GPU type over-allocated, remaining work
    within [0, work]."""
    used = np.zeros_like(nodes.capacity)
    for j, (r, a) in new_alloc.items():
        for v, k in a:
            used[v] += k
        want = tables[j].gpus[r]
        got = np.zeros(len(cluster.gpu_types), dtype=np.int64)
        for v, k in a:
            got[cluster.node_type[v]] += k
        if not np.array_equal(got, want):
            raise AssertionError(f"job {j}: placed {got} GPUs for a candidate needing {want}")
    if np.any(used > nodes.capacity) or np.any(used != nodes.capacity - nodes.free):
        raise AssertionError("node over-subscribed or free-count drift")
    by_type = np.bincount(cluster.node_type, weights=used, minlength=len(cluster.gpu_types))
    if np.any(by_type > np.asarray(cluster.capacity_vec)):
        raise AssertionError(f"GPU types over-allocated: {by_type} > {cluster.capacity_vec}")
    if np.any(remaining < 0) or np.any(remaining > work):
        raise AssertionError("remaining work out of bounds")


def _check_jobs(s: "_RunState", active: np.ndarray, t: float, end: float) -> None:
    """Per-job invariants after a round [t, end): work conservation (samples done + remaining
    = work; a finished job did exactly its work, inside this round, after it arrived and
    started), and no job ran longer than it has been in the system."""
    for j in active:
        rec = s.records[j]
        work = s.work[j]
        if abs(rec.samples_done + s.remaining[j] - work) > 1e-9 * max(work, 1.0):
            raise AssertionError(f"job {j}: samples done {rec.samples_done} + remaining "
                                 f"{s.remaining[j]} != work {work}")
        if s.state[j] == DONE:
            if s.remaining[j] != 0.0:
                raise AssertionError(f"job {j} finished with {s.remaining[j]} samples left")
            if not (rec.arrival_s <= rec.first_start_s <= rec.finish_s
                    and t <= rec.finish_s <= end):
                raise AssertionError(f"job {j}: arrival {rec.arrival_s}, start "
                                     f"{rec.first_start_s}, finish {rec.finish_s} out of order "
                                     f"(round [{t}, {end}))")
        if s.attained[j] > end - s.arrival[j] + 1e-6:
            raise AssertionError(f"job {j} ran {s.attained[j]} s of the "
                                 f"{end - s.arrival[j]} s since it arrived")


def _progress(total: int, enabled: bool):
    if not enabled:
        return None
    from tqdm import tqdm
    return tqdm(total=total, desc="jobs completed", unit="job", leave=False)
