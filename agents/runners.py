"""One run of one policy on one scenario and held-out seed: ``Run`` (its metrics and per-round
logs), ``run_simulator_policy`` (a ``make_policy`` policy in the simulator, timed and with
recall@k of the full LP's support), ``run_ranker`` (a rank-mode agent driving ``RankEnv``, then
the LP over the kept candidates), ``run_scheduler`` (a select-mode agent driving
``ScheduleEnv``), ``rank_slots_bound`` (``RankEnv``'s slot count for a workload),
``check_observation`` (an SB3 model's trained observation space against a scenario's),
``round_step_cap``, ``recall_defined``, ``SUPPORT_TINY``, ``run_to_json`` / ``run_from_json``
(a ``Run`` as a JSON-ready dict and back, exactly: the run files of a sweep, ``agents.sweep``),
``deterministic_part`` (a run without its wall-clock measurements), ``merge_timing_repeats``
(repeats of one run as one, their decision times merged round by round), ``settled_heap``
(what each run's timing starts from) and ``note_agent_error`` (an exception from an agent's
own code, noted with the run it came from). Part of the evaluation harness, ``agents.evaluate``."""

from __future__ import annotations

import contextlib
import copy
import dataclasses
import gc
import json
import logging
import math
import time
from dataclasses import dataclass, field

import numpy as np

from agents.policy_entries import PolicyEntry, observation_mismatch
from agents.suites import Scenario, Suite
from hsched_env.envs import RankEnv, ScheduleEnv
from hsched_env.envs.base import MAX_SLOTS
from hsched_env.envs.features import observation_space
from hsched_env.envs.rank import SUPPORT_SHARE, allocation_support, not_keep_bits
from hsched_env.errors import ConfigError, HSchedError
from hsched_env.metrics import decision_time_metrics
from hsched_env.planner import PlannerConfig
from hsched_env.simulator import JobRecord, SimConfig, Simulator
from lp_baseline.policy import LPPolicy
from lp_baseline.support_reuse import SupportReusePolicy
from lp_baseline.registry import make_policy, options_read_by

#: Support threshold: a candidate with X above this is in the LP's support (the environments'
#: ``SUPPORT_SHARE``).
SUPPORT_TINY = SUPPORT_SHARE
#: ``Run.end_reason`` of a select-mode run stopped by ``round_step_cap``.
STEP_CAP = "step_cap"


def round_step_cap(K: int) -> int:
    """Steps a select-mode agent may take in one round before the run is stopped
    (``end_reason = "step_cap"``): a round needs at most K placements and a commit, so this
    only stops an agent that keeps sending invalid actions and never commits."""
    return max(1000, 4 * (int(K) + 1))


@dataclass
class Run:
    """One (scenario, policy, seed) run."""

    scenario: str
    label: str
    kind: str
    seed: int
    metrics: dict
    jct_s: np.ndarray
    decision_s: np.ndarray           # per round: LP / environment (+ agent) time
    lp_decision_s: np.ndarray        # per round: the policy's / LP's / environment's own time
    ranker_s: np.ndarray | None      # per round: the agent's inference (rank, select agents)
    lp_vars: np.ndarray
    recall: np.ndarray | None        # per round with a non-empty LP support; None: n/a
    active_jobs: np.ndarray
    candidates_per_job: np.ndarray   # candidate-table size of every job of the workload
    end_reason: str
    records: list = field(default_factory=list, repr=False)
    overflow_max: int | None = None
    kept_frac_mean: float | None = None
    #: the kept fraction over the rounds the ranker pruned (its gates' rounds and the rounds
    #: it scored but found unsure left out: they keep everything); None when it pruned none
    kept_frac_ranked_mean: float | None = None
    slots: int | None = None              # K of the agent's environment (agents only)
    slots_fixed: bool = False             # K was the agent's own (``slots``), not the harness's
    round_candidates_max: int | None = None   # the largest round's candidates (agents only)
    placements: int | None = None         # select mode: valid placements
    invalid_actions: int | None = None    # select mode: invalid (no-op) actions
    #: the cluster's GPUs: the finish-time fairness of any subset of ``records``
    #: (``hsched_env.metrics.finish_time_fairness``); None in run files written before it
    cluster_gpus: int | None = None
    #: rank mode, per round: the environment's time building the observation the agent
    #: scored (the round's candidate slots and features, ``RankEnv``'s
    #: ``info["observation_time_s"]``), 0 on the rounds its gate solved whole (they need no
    #: features); not in ``decision_s``. None for other kinds and older run files
    observation_s: np.ndarray | None = None


@contextlib.contextmanager
def settled_heap():
    """Run the body with Python's heap settled, so that one run's decision times do not
    depend on what ran before it in the process: the garbage of earlier runs is collected
    first (``gc.collect``, untimed), and every object alive then — the imported modules
    (PyTorch's included), earlier runs' results — is frozen (``gc.freeze``: the cyclic
    collector no longer scans it) until the body ends. The body's own objects are collected
    as usual. Without it, a full collection of the process's ~200,000 objects (90–125 ms on
    the project's machine) landed inside whichever decision crossed the collector's threshold:
    at 550 jobs, the burst's first round of the pure LP or of the ranker, depending on the
    order of the runs (BENCHMARKS.md, session 29). If the process has frozen objects of its
    own, it manages the freezing: the run is then only preceded by the collection (freezing
    more and never unfreezing would keep every later-dropped object of a cycle for good, and
    ``gc.unfreeze`` would release the process's own too).

    The timings so measured are those of a scheduler process that freezes its heap after
    loading (a common practice for latency-sensitive Python services). One that does not
    pays such collections: on the project's machine a full collection took ~3 ms with the
    LP's modules alone (~28,000 objects) and 60–83 ms once PyTorch, which only the ranker
    needs, is imported (~185,000 objects)."""
    gc.collect()
    if gc.get_freeze_count() > 0:
        yield
        return
    gc.freeze()
    try:
        yield
    finally:
        gc.unfreeze()


def _to_json(value):
    if isinstance(value, np.ndarray):
        return {"__ndarray__": value.tolist(), "dtype": value.dtype.str,
                "shape": list(value.shape)}
    if isinstance(value, JobRecord):
        return {"__job_record__": _to_json(dataclasses.asdict(value))}
    if isinstance(value, dict):
        return {str(k): _to_json(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_to_json(v) for v in value]
    if isinstance(value, np.generic):
        return value.item()
    return value


def _from_json(value):
    if isinstance(value, dict):
        if "__ndarray__" in value:
            return np.asarray(value["__ndarray__"], dtype=np.dtype(value["dtype"])).reshape(
                value["shape"])
        if "__job_record__" in value:
            return JobRecord(**_from_json(value["__job_record__"]))
        return {k: _from_json(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_from_json(v) for v in value]
    return value


def run_to_json(run: Run) -> dict:
    """``run`` as a JSON-ready dict (arrays with their dtype, job records as dicts; floats may
    be NaN, as Python's ``json`` writes and reads them); ``run_from_json`` restores it
    exactly."""
    return {f.name: _to_json(getattr(run, f.name)) for f in dataclasses.fields(Run)}


#: ``Run`` fields and metrics that are wall-clock measurements: they differ between two runs of
#: the same scenario (and between backends); everything else is a function of the inputs.
WALL_CLOCK_FIELDS = ("decision_s", "lp_decision_s", "ranker_s", "observation_s")
WALL_CLOCK_METRICS = ("decision_time_mean_s", "decision_time_p99_s", "decision_time_max_s",
                      "wall_s")


def deterministic_part(run: Run) -> dict:
    """``run_to_json(run)`` without the wall-clock fields and metrics (``WALL_CLOCK_FIELDS``,
    ``WALL_CLOCK_METRICS``): equal for every run of the same scenario, policy and seed,
    whichever backend ran it."""
    data = run_to_json(run)
    for name in WALL_CLOCK_FIELDS:
        data.pop(name, None)
    data["metrics"] = {k: v for k, v in data["metrics"].items() if k not in WALL_CLOCK_METRICS}
    return data


def merge_timing_repeats(runs: list[Run]) -> Run:
    """One ``Run`` from repeats of the same (scenario, policy, seed) run, taken to time it
    (``evaluate(timing_repeats=N)``): the decisions must repeat exactly
    (``deterministic_part`` equal, else ``ConfigError`` naming what differed). Round by
    round, the repeat whose total time (``decision_s`` plus ``observation_s``, where there is
    one) is the median gives every wall-clock field (``WALL_CLOCK_FIELDS``) — for an even
    count, the mean of the two middle repeats — so that a round's parts (the LP's time, the
    agent's, the observation) still add up to its total, and its total is the median of the
    repeats' totals. The decision-time metrics are recomputed from the merged ``decision_s``
    and ``wall_s`` is the repeats' median. A one-off slow round (a machine's load spike, a
    collection) then needs to hit most repeats of the same round to count. So does a one-off
    cost of the first repeat, from three repeats up (with two, the mean of both halves it): the
    merged times are then those of warm runs (the ranker reserves
    its inference buffers in its first call on a new environment, which is its round 0, once
    per process, again for a larger K: 12–15 ms on ``large-2048-500``)."""
    if not runs:
        raise ValueError("no runs to merge")
    first = runs[0]
    if len(runs) == 1:
        return first

    def same(a, b) -> bool:           # as JSON text: NaN equals NaN
        return json.dumps(a, sort_keys=True) == json.dumps(b, sort_keys=True)

    ref = deterministic_part(first)
    for i, other in enumerate(runs[1:], start=2):
        data = deterministic_part(other)
        if not same(data, ref):
            differ = sorted(k for k in ref if not same(data.get(k), ref[k]))
            if "metrics" in differ:
                differ.remove("metrics")
                differ += sorted(f"metrics.{k}" for k in ref["metrics"]
                                 if not same(data["metrics"].get(k), ref["metrics"][k]))
            raise ConfigError(
                f"{first.label} on {first.scenario}, seed {first.seed}: repeat {i} did not "
                f"repeat the first run ({', '.join(differ[:6]) or 'the record'} differ), so "
                f"its decision times cannot be merged round by round; timing repeats need a "
                f"policy whose decisions do not depend on time (no LP time limit, a "
                f"deterministic agent)", field="--timing-repeats")
    merged = dataclasses.replace(first, metrics=dict(first.metrics))
    fields = {name: np.stack([np.asarray(getattr(r, name), dtype=float) for r in runs])
              for name in WALL_CLOCK_FIELDS if getattr(first, name) is not None}
    # per round, the repeat(s) of median total time (decision + observation): every field
    # is taken from the same repeat(s), so a round's parts still add up to its total
    total = fields["decision_s"] + fields.get("observation_s", 0.0)
    n = len(runs)
    order = np.argsort(total, axis=0, kind="stable")              # (n, rounds)
    middle = order[[(n - 1) // 2, n // 2]]                        # one repeat twice if n odd
    rounds = np.arange(total.shape[1])
    for name, values in fields.items():
        setattr(merged, name, values[middle, rounds].mean(axis=0))
    merged.metrics.update(decision_time_metrics(merged.decision_s),
                          wall_s=float(np.median([r.metrics["wall_s"] for r in runs])))
    return merged


def run_from_json(data: dict) -> Run:
    """The ``Run`` of ``run_to_json(run)``, equal to ``run`` field by field."""
    names = {f.name for f in dataclasses.fields(Run)}
    unknown = sorted(set(data) - names)
    if unknown:
        raise ConfigError(f"not a run record: unknown fields {', '.join(unknown)}",
                          field="runs")
    return Run(**{k: _from_json(v) for k, v in data.items()})


def support_pairs(support_lp, view) -> set[tuple[int, int]]:
    """The ``(job id, row)`` pairs with a share in ``support_lp``'s full LP on ``view``."""
    alloc, _ = support_lp.shares(view)
    return set(map(tuple, allocation_support(alloc).tolist()))


def recall_defined(policy) -> bool:
    """Whether recall@k is defined for a simulator policy: an LP over all of each job's
    candidates or a per-job subset of them (``heterosched-lp``, ``topk``, ``lp-on-change``,
    ``topk-dominance``); not for POP (it partitions jobs), Gavel and the agnostic LP (requested
    configurations only) or the non-LP baselines."""
    if isinstance(policy, SupportReusePolicy):
        return recall_defined(policy.lp)
    return (isinstance(policy, LPPolicy) and policy.candidates == "all" and policy.pop == 1
            and not policy.agnostic)


def _considered_rows(policy, view) -> list[np.ndarray]:
    """Per active job the candidate rows the LP policy hands to its solver (its top-k etc.)."""
    return policy.solver_rows(view)


def support_recall(support: set, considered: set) -> float | None:
    """The share of ``support`` in ``considered`` (recall@k); ``None`` without a support."""
    if not support:
        return None
    return len(support & considered) / len(support)


def kept_support_recall(support_lp, slots, keep) -> float | None:
    """``support_recall`` of a rank-mode round: the full LP's support on the round's state
    (``slots``: ``RankEnv.slots``) against the candidates ``keep`` (K keep bits) keeps."""
    bits = np.asarray(keep).astype(bool)[:slots.k.size]
    kept = {(int(j), int(r)) for j, r in zip(slots.job[bits], slots.row[bits])}
    return support_recall(support_pairs(support_lp, slots.view), kept)


class _Measured:
    """A light wrapper of a simulator policy: times the policy's own ``decide`` and computes
    recall@k of the full LP's support outside that time (the simulator's own timing of the
    wrapper is replaced by this one)."""

    def __init__(self, inner, support_lp) -> None:
        self.inner = inner
        self.name = inner.name
        self.support_lp = support_lp
        self.decide_s: list[float] = []
        self.recall: list[float] = []
        self.defined = recall_defined(inner)

    @property
    def last_stats(self):
        return getattr(self.inner, "last_stats", None)

    def summary(self) -> dict:
        return dict(getattr(self.inner, "summary", dict)())

    def reset(self, cluster, seed) -> None:
        self.inner.reset(cluster, seed)
        self.decide_s, self.recall = [], []

    def decide(self, view):
        t0 = time.perf_counter()
        out = self.inner.decide(view)
        self.decide_s.append(time.perf_counter() - t0)
        if self.defined and view.num_active:
            rows = _considered_rows(self.inner, view)
            if all(r.size == len(t) for r, t in zip(rows, view.candidates)):
                self.recall.append(1.0)     # it considers every candidate: the whole support
            else:
                considered = {(int(j), int(r)) for j, rs in zip(view.job_ids, rows)
                              for r in rs}
                value = support_recall(support_pairs(self.support_lp, view), considered)
                if value is not None:
                    self.recall.append(value)
        return out


def _sim_config(suite: Suite, scenario: Scenario, seed: int):
    return SimConfig(round_s=suite.round_s, restart_s=suite.restart_s,
                     planner=PlannerConfig(max_candidates=suite.job_candidates), seed=seed,
                     max_time_s=scenario.max_time_s)


def _finish_metrics(metrics: dict, label: str, records, max_time_s, end_reason,
                    stopped_s: float | None = None) -> dict:
    """``max_time_s``: where the run's window ended (a time limit, or the time a step-capped
    run stopped). A run cut off by its window with jobs unfinished has no makespan, and each
    unfinished job counts in ``avg_time_in_system_s`` up to the window's end.
    ``stopped_s``: for an agent's run (rank or select mode), the simulated time it stopped
    at; when it stalled (no job ran for ``STALL_ROUNDS`` rounds, jobs waiting, no arrivals
    left), its unfinished jobs count up to then (at most the window's end), as the report's
    note on an agent that ended early says, and it has no makespan. A simulator policy's run
    (``stopped_s`` None) stalls on jobs it can never start (e.g. more GPUs of one type than
    any node has): those stay out of ``avg_time_in_system_s`` (counted, each would weigh the
    simulator's 1,000 idle rounds, not the policy's doing; the ``done`` column shows them) and
    the run's makespan is to its last completion, as before (the report's row, averaged over
    the seeds, shows none: ``agents.report``)."""
    m = dict(metrics)
    m["policy"] = label
    unfinished = any(not r.done for r in records)
    cut = None
    if unfinished and end_reason == "stalled":
        if stopped_s is not None:
            cut = stopped_s if max_time_s is None else min(stopped_s, max_time_s)
    elif unfinished and end_reason != "completed" and max_time_s is not None:
        cut = max_time_s
    if cut is not None:
        m["makespan_s"] = math.nan              # the run ended first: no makespan
    ends = [r.finish_s if r.done else (cut if cut is not None else math.nan) for r in records]
    # a job arriving at the cut itself never arrived (the simulator stops there): it was
    # counted with 0 s
    times = [e - r.arrival_s for e, r in zip(ends, records)
             if not math.isnan(e) and (r.done or r.arrival_s < e)]
    m["avg_time_in_system_s"] = float(np.mean(times)) if times else math.nan
    m["end_reason"] = end_reason
    return m


def run_simulator_policy(entry: PolicyEntry, suite: Suite, scenario: Scenario, seed: int,
                         cluster, workload, support_lp) -> Run:
    """``entry`` (a ``make_policy`` policy, or its own policy: made anew by its factory, else
    a copy of its object, so that no state carries from one run into another) on the
    scenario's workload of ``seed``."""
    if entry.policy_factory is not None:
        policy = entry.policy_factory()
    elif entry.policy is not None:
        policy = copy.deepcopy(entry.policy)
    else:
        policy = make_policy(entry.policy_name,
                             **options_read_by(entry.policy_name, {"topk": suite.topk}))
    wrapped = _Measured(policy, support_lp)
    sim = Simulator(cluster, workload, wrapped, _sim_config(suite, scenario, seed))
    result = sim.run()
    if len(wrapped.decide_s) != len(result.decision_s):
        raise RuntimeError("decision log and policy calls disagree")
    result.decision_s = list(wrapped.decide_s)
    records = result.jobs
    metrics = _finish_metrics(result.metrics(), entry.label, records, scenario.max_time_s,
                              sim.end_reason)
    dec = np.asarray(wrapped.decide_s, dtype=float)
    return Run(scenario=scenario.name, label=entry.label, kind="simulator", seed=seed,
               metrics=metrics, jct_s=np.array([r.jct_s for r in records if r.done]),
               decision_s=dec, lp_decision_s=dec, ranker_s=None,
               lp_vars=np.asarray(result.lp_vars, dtype=float),
               recall=np.asarray(wrapped.recall) if wrapped.defined else None,
               active_jobs=np.asarray(result.active_jobs),
               candidates_per_job=np.array([len(t) for t in sim.run_view().tables]),
               end_reason=sim.end_reason, records=records,
               cluster_gpus=int(result.cluster.num_gpus))


def rank_slots_bound(suite: Suite, scenario: Scenario, cluster, workload) -> int:
    """K for ``RankEnv``: the candidates of every job of the workload together, an upper bound
    on any round's candidates, so no round overflows the slots — at most the environments'
    ``MAX_SLOTS`` (a workload of tens of thousands of jobs; a round beyond it would show as
    slot overflow in the report)."""
    sim = Simulator(cluster, workload, _NoDecisions(), _sim_config(suite, scenario, 0))
    return min(MAX_SLOTS, max(1, sum(len(sim.candidates_of(j)) for j in sim.jobs)))


class _NoDecisions:
    name = "none"

    def reset(self, cluster, seed) -> None:
        pass

    def decide(self, view):
        return {}


def check_observation(entry: PolicyEntry, scenario: Scenario, cluster) -> None:
    """For an entry with a trained observation space (an SB3 model): a ``ConfigError`` naming
    the trained and the scenario's shapes when they differ (e.g. a cluster with a different
    number of GPU types), before anything runs."""
    trained = entry.observation_space
    if trained is None or entry.slots is None:
        return
    bad = observation_mismatch(trained, observation_space(entry.slots, cluster.gpu_types),
                               entry.slots)
    if bad:
        raise ConfigError(f"{entry.label} cannot run on scenario {scenario.name!r} (cluster "
                          f"{scenario.cluster}, {len(cluster.gpu_types)} GPU types): {bad}",
                          field="--policies")


def _env_kwargs(entry: PolicyEntry, suite: Suite, scenario: Scenario) -> dict:
    kw = {"job_candidates": suite.job_candidates, "round_s": suite.round_s,
          "restart_s": suite.restart_s, "lp_policy": "heterosched-lp",
          "lp_factory": make_policy, "max_time_s": scenario.max_time_s}
    kw.update(entry.env_kwargs)
    return kw


def make_scenario_env(cls, entry: PolicyEntry, suite: Suite, scenario: Scenario, slots):
    """``cls`` (``RankEnv`` or ``ScheduleEnv``) on ``scenario`` with the suite's settings and
    the entry's ``env_kwargs``, K = ``slots``."""
    kw = _env_kwargs(entry, suite, scenario)
    if cls is RankEnv:
        kw["measure_time"] = True               # the LP's wall-clock time in info
    try:
        return cls(scenario.cluster, scenario.workload, slots=slots, **kw)
    except (TypeError, ConfigError) as exc:
        # an env_kwargs value the constructor refuses (the scenario's own errors pass on)
        if isinstance(exc, ConfigError) and exc.field not in entry.env_kwargs:
            raise
        raise ConfigError(f"{entry.label}: cannot build {cls.__name__} with its env_kwargs "
                          f"{entry.env_kwargs!r}: {exc}", field="--policies") from None


def scenario_rank_env(entry: PolicyEntry, suite: Suite, scenario: Scenario, seed: int):
    """``RankEnv`` for ``entry`` on ``scenario``'s workload of ``seed``, K as ``hsched
    evaluate`` sets it (``rank_slots_bound``); not reset. For scripts that drive one
    scenario themselves."""
    from hsched_env.cluster import get_cluster
    cluster = get_cluster(scenario.cluster)
    workload = scenario.load(seed, cluster)
    return make_scenario_env(RankEnv, entry, suite, scenario,
                             rank_slots_bound(suite, scenario, cluster, workload))


def run_ranker(entry: PolicyEntry, suite: Suite, scenario: Scenario, seed: int, slots: int,
               support_lp) -> Run:
    """A rank-mode agent driving ``RankEnv`` (keep bits, then the HeteroSched LP over the kept
    candidates) on the scenario's workload, episode seed ``seed``. ``slots``: K (the agent's
    own ``entry.slots`` when it has one: rounds with more candidates are cut, the overflow
    is reported)."""
    if entry.slots is not None:
        slots = entry.slots
    env = make_scenario_env(RankEnv, entry, suite, scenario, slots)
    ranker = entry.ranker
    gated_before = getattr(ranker, "gated_rounds", 0)
    unsure_before = getattr(ranker, "unsure_rounds", 0)
    backoff_before = getattr(ranker, "backoff_rounds", 0)
    audits_before = getattr(ranker, "audit_rounds", 0)
    failures_before = getattr(ranker, "audit_failures", 0)
    recalls_before = len(getattr(ranker, "audit_recalls", ()))
    obs, info = env.reset(seed=seed)
    lp_s, rank_s, lp_vars, recall, kept_frac, ranked = [], [], [], [], [], []
    seeding = getattr(env, "prune", None) == "seed"     # keep bits start the whole LP
    seed_recall = []                # seed mode: the share of the LP's support its seed held
    pruned = []     # ranked, neither unsure (Ranker's unsure gate) nor audited: kept bits used
    obs_s = [float(info["observation_time_s"])]     # measure_time=True (make_scenario_env)
    overflow = total_max = 0
    done = env.simulator.finished
    while not done:
        sl = env.slots
        gated = getattr(ranker, "gated_rounds", 0)
        unsure = getattr(ranker, "unsure_rounds", 0)
        audited = getattr(ranker, "audit_rounds", 0)
        t0 = time.perf_counter()
        try:
            keep = ranker.keep(obs, env)
        except Exception as exc:
            note_agent_error(exc, entry, "keep()", scenario, seed, f"round {len(rank_s) + 1}")
            raise
        rank_s.append(time.perf_counter() - t0)
        ranked.append(getattr(ranker, "gated_rounds", 0) == gated)
        pruned.append(ranked[-1] and getattr(ranker, "unsure_rounds", 0) == unsure
                      and getattr(ranker, "audit_rounds", 0) == audited)
        keep = np.asarray(keep)
        if keep.shape != (env.K,):
            raise ConfigError(
                f"{entry.label!r} returned keep bits of shape {keep.shape}, expected "
                f"({env.K},): this RankEnv has K={env.K} slots ({_k_origin(entry)})",
                field="--policies")
        _check_keep_bits(keep, entry)       # before any cast: 0.9 would become 0, or True
        if seeding:
            # the LP solves every round whole: it considers the whole support; how much of it
            # the seed held (ranked rounds) is the seed's own figure
            value = kept_support_recall(support_lp, sl, np.ones(env.K, dtype=bool))
            if ranked[-1]:
                held = kept_support_recall(support_lp, sl, keep)
                if held is not None:
                    seed_recall.append(held)
        else:
            value = kept_support_recall(support_lp, sl, keep)
        if value is not None:
            recall.append(value)
        obs, _, terminated, truncated, info = env.step(keep.astype(np.int8))
        lp_s.append(float(info["decision_time_s"]))       # measure_time=True (above)
        obs_s.append(float(info["observation_time_s"]))
        lp_vars.append(info["lp_vars"])
        kept_frac.append(info["kept"] / max(info["total"], 1))
        overflow = max(overflow, int(info["overflow"]))
        total_max = max(total_max, int(info["total"]))
        done = terminated or truncated
    sim = env.simulator
    result = sim.result()
    records = result.jobs
    lp_arr, rank_arr = np.asarray(lp_s, dtype=float), np.asarray(rank_s, dtype=float)
    dec = lp_arr + rank_arr
    # each round's decision used the observation before it (the last one, after the episode
    # ended, none); a gated round used none of its features
    obs_arr = np.where(np.asarray(ranked, dtype=bool),
                       np.asarray(obs_s[:len(rank_s)], dtype=float), 0.0)
    result.decision_s = list(dec)
    result.policy = entry.label
    metrics = result.metrics()
    metrics.update(getattr(env.lp, "summary", dict)())
    # rounds the ranker's gate solved whole (no inference): see ``Ranker``
    metrics["gated_fraction"] = ((getattr(ranker, "gated_rounds", 0) - gated_before)
                                 / max(len(rank_s), 1))
    # of them, those solved whole after an unsure round (``Ranker``'s unsure gate)
    metrics["backoff_fraction"] = ((getattr(ranker, "backoff_rounds", 0) - backoff_before)
                                   / max(len(rank_s), 1))
    # rounds it scored but solved whole: it would have kept more than its max_kept_fraction
    metrics["unsure_fraction"] = ((getattr(ranker, "unsure_rounds", 0) - unsure_before)
                                  / max(len(rank_s), 1))
    if getattr(ranker, "audit_every", 0):
        # rounds it scored and solved whole as audits (``Ranker(audit_every=)``), the audits
        # failed, and the mean recall of the LP's support over this run's audits with a verdict
        metrics["audit_fraction"] = ((getattr(ranker, "audit_rounds", 0) - audits_before)
                                     / max(len(rank_s), 1))
        metrics["audit_failures"] = getattr(ranker, "audit_failures", 0) - failures_before
        recalls = list(getattr(ranker, "audit_recalls", ()))[recalls_before:]
        metrics["audit_recall_mean"] = float(np.mean(recalls)) if recalls else None
    if seeding:
        # seed mode (prune="seed"): the mean share of the LP's support the seed held, over
        # the rounds it ranked (None: it ranked none)
        metrics["seed_mode"] = True
        metrics["seed_recall"] = float(np.mean(seed_recall)) if seed_recall else None
    end_reason = getattr(env, "end_reason", None) or sim.end_reason
    metrics = _finish_metrics(metrics, entry.label, records, scenario.max_time_s, end_reason,
                              sim.time_s)
    return Run(scenario=scenario.name, label=entry.label, kind="ranker", seed=seed,
               metrics=metrics, jct_s=np.array([r.jct_s for r in records if r.done]),
               decision_s=dec, lp_decision_s=lp_arr, ranker_s=rank_arr,
               lp_vars=np.asarray(lp_vars, dtype=float), recall=np.asarray(recall),
               active_jobs=np.asarray(result.active_jobs),
               candidates_per_job=np.array([len(t) for t in sim.run_view().tables]),
               end_reason=end_reason, records=records, overflow_max=overflow,
               cluster_gpus=int(result.cluster.num_gpus),
               kept_frac_mean=float(np.mean(kept_frac)) if kept_frac else 0.0,
               kept_frac_ranked_mean=(float(np.mean(np.asarray(kept_frac)[pruned]))
                                      if any(pruned) else None),
               slots=env.K, slots_fixed=entry.slots is not None,
               round_candidates_max=total_max, observation_s=obs_arr)


def note_agent_error(exc: Exception, entry: PolicyEntry, call: str, scenario: Scenario,
                     seed: int, where: str) -> None:
    """Add to ``exc``, raised inside an agent's ``call`` (``keep()`` or ``act()``), a note
    naming the policy, the scenario, the seed and ``where`` in the episode (its round), so
    that the traceback of the agent's own code, kept as it is, says which run it came from.
    HeteroSched's own errors (``HSchedError``) get none: they keep their one-line form.
    (Python 3.10 has no ``add_note``: there the note is logged, at ERROR, before the
    traceback.)"""
    if isinstance(exc, HSchedError):
        return
    origin = entry.path or entry.source          # its file, or its module:callable
    origin = f" ({origin})" if origin and origin != entry.label else ""
    note = (f"raised in {call} of policy {entry.label!r}{origin} on scenario "
            f"{scenario.name!r}, seed {seed}, {where}")
    if hasattr(exc, "add_note"):
        exc.add_note(note)
    else:                                        # Python 3.10
        logging.getLogger(__name__).error("%s: %s", type(exc).__name__, note)


def _check_keep_bits(keep: np.ndarray, entry: PolicyEntry) -> None:
    """``ConfigError`` naming the agent unless ``keep`` (its ``keep()``, of shape (K,)) holds
    keep bits (``not_keep_bits``), before anything casts it, as ``RankEnv.step`` checks."""
    wrong = not_keep_bits(keep)
    if wrong is not None and wrong.complex:
        raise ConfigError(f"{entry.label!r} returned keep values that are not keep bits: "
                          f"complex numbers ({keep.dtype}); keep() returns K bits (bool, or "
                          f"0/1)", field="--policies")
    if wrong is not None:
        raise ConfigError(f"{entry.label!r} returned keep values that are not keep bits: slot "
                          f"{wrong.slot} holds {wrong.value!r} ({wrong.count} of {keep.size} "
                          f"slot(s) are not 0 or 1); keep() returns K bits (bool, or 0/1): "
                          f"threshold probabilities before returning them (e.g. probs > 0.5)",
                          field="--policies")


def _k_origin(entry: PolicyEntry) -> str:
    if entry.slots is not None:
        return "the agent's own slots"
    return "chosen by the harness: read env.K, or give the agent a fixed 'slots' attribute"


def _select_action(action, entry: PolicyEntry, K: int) -> int:
    """One integer action of ``act``; ``ConfigError`` for anything else (a vector, a bool,
    ``None``). Out-of-range integers are passed on: the environment counts them invalid."""
    if isinstance(action, (int, np.integer)) and not isinstance(action, (bool, np.bool_)):
        return int(action)
    try:
        a = np.asarray(action)
    except Exception:                                 # noqa: BLE001 (any object: rejected)
        a = np.asarray(None)
    if a.size == 1 and a.dtype.kind in "iuf":
        value = a.reshape(-1)[0].item()
        if float(value).is_integer():
            return int(value)
    got = f"shape {a.shape} {a.dtype}" if a.dtype.kind != "O" else type(action).__name__
    raise ConfigError(f"{entry.label!r}: act() returned {got} ({str(action)[:60]}), expected "
                      f"one int action of hsched/Schedule-v0 (shape (): 0..{K - 1} places the "
                      f"candidate of that slot, {K} commits the round; K={K} slots, "
                      f"{_k_origin(entry)})", field="--policies")


def run_scheduler(entry: PolicyEntry, suite: Suite, scenario: Scenario, seed: int) -> Run:
    """A select-mode agent driving ``ScheduleEnv`` (``act(obs, env)``: place a slot's
    candidate or commit the round) on the scenario's workload, episode seed ``seed``, until
    the episode ends. Decision time per round: the agent's inference time during the round
    plus the environment's own recorded time for it (the LP that fills the slots with
    ``candidate_filter="lp"``). A round that takes ``round_step_cap(K)`` steps without a
    commit stops the run (``end_reason = "step_cap"``); an episode the environment ends
    itself (too many invalid actions in a row) keeps the environment's ``end_reason``."""
    env = make_scenario_env(ScheduleEnv, entry, suite, scenario, entry.slots)
    agent = entry.agent
    obs, _ = env.reset(seed=seed)
    cap = round_step_cap(env.K)
    agent_s: list[float] = []
    in_round = 0.0
    steps = placements = invalid = 0
    overflow = total_max = 0
    end_reason = None

    def note_round():
        nonlocal overflow, total_max
        sl = env.slots
        if sl is not None:
            overflow = max(overflow, int(sl.total - sl.k.size))
            total_max = max(total_max, int(sl.total))

    note_round()
    done = env.simulator.finished
    while not done:
        t0 = time.perf_counter()
        try:
            action = agent.act(obs, env)
        except Exception as exc:
            note_agent_error(exc, entry, "act()", scenario, seed,
                             f"round {len(agent_s) + 1}, step {steps + 1} of the round")
            raise
        in_round += time.perf_counter() - t0
        obs, _, terminated, truncated, info = env.step(_select_action(action, entry, env.K))
        steps += 1
        if info["invalid_action"]:
            invalid += 1
        elif info["committed"]:
            agent_s.append(in_round)
            in_round, steps = 0.0, 0
            note_round()
        else:
            placements += 1
        done = terminated or truncated
        if not done and steps >= cap:
            end_reason = STEP_CAP
            break
    sim = env.simulator
    # the environment may end an episode itself (e.g. too many invalid actions in a row)
    end_reason = end_reason or getattr(env, "end_reason", None) or sim.end_reason
    result = sim.result()
    records = result.jobs
    env_arr = np.asarray(result.decision_s, dtype=float)
    if env_arr.size == len(agent_s) + 1:
        agent_s.append(in_round)                # ended in an open round: its time so far
    agent_arr = np.asarray(agent_s, dtype=float)
    if env_arr.size != agent_arr.size:
        raise RuntimeError(f"{entry.label}: {env_arr.size} rounds recorded by the environment, "
                           f"{agent_arr.size} by the harness")
    dec = env_arr + agent_arr
    result.decision_s = list(dec)
    result.policy = entry.label
    metrics = result.metrics()
    if env.candidate_filter == "lp":
        metrics.update(getattr(env.lp, "summary", dict)())
    metrics["placements"], metrics["invalid_actions"] = placements, invalid
    window = scenario.max_time_s if sim.finished else sim.time_s   # ended early: up to now
    metrics = _finish_metrics(metrics, entry.label, records, window, end_reason, sim.time_s)
    return Run(scenario=scenario.name, label=entry.label, kind="scheduler", seed=seed,
               metrics=metrics, jct_s=np.array([r.jct_s for r in records if r.done]),
               decision_s=dec, lp_decision_s=env_arr, ranker_s=agent_arr,
               lp_vars=np.asarray(result.lp_vars, dtype=float), recall=None,
               active_jobs=np.asarray(result.active_jobs),
               candidates_per_job=np.array([len(t) for t in sim.run_view().tables]),
               end_reason=end_reason, records=records, overflow_max=overflow,
               cluster_gpus=int(result.cluster.num_gpus),
               slots=env.K, slots_fixed=entry.slots is not None,
               round_candidates_max=total_max, placements=placements,
               invalid_actions=invalid)
