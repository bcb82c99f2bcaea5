"""``hsched evaluate``: policies and learned rankers on held-out scenarios.

An evaluation runs every policy of a list on every scenario of a **suite**, on the suite's
**held-out seeds**, and reports schedule quality (JCT, makespan, fairness) next to decision cost
(wall-clock decision time, LP size) and how much of the full LP's support a pruning policy
kept (recall@k). See ``docs/agents.md`` (section "Evaluation").

Seeds. ``TRAIN_SEEDS`` (0 … 9,999) are the seeds training may use; evaluation draws its seeds
from ``HELDOUT_SEEDS`` (1,000,000 upward), so an evaluated episode is never one a ranker was
trained on. A scenario's workload is a generated spec *without* ``seed=``; seed ``s`` makes it
``<spec>,seed=s`` for the simulator policies and ``RankEnv(workload=<spec>).reset(seed=s)`` for a
ranker: the same jobs either way.

Policies (``parse_policies``):

* ``pure-lp`` — ``make_policy("heterosched-lp")``: the full LP over every candidate;
* any other ``make_policy`` name (``topk``, ``pop-4``, ``gavel``, ``fifo``, …) — run by the
  simulator on the identical scenario;
* ``ranker:PATH`` (``ranker`` alone: the shipped ``agents/data/ranker.pt``) —
  ``Ranker.load(PATH)`` from ``agents.ranker`` driving ``hsched_env.envs.RankEnv`` (keep bits per round, then the
  HeteroSched LP over the kept candidates). Its decision time per round is the LP's plus the
  ranker's own inference time (both reported). ``evaluate`` also accepts ranker objects directly
  (anything with ``name`` and ``keep(obs, env) -> (K,) int8``).

```python
from agents.evaluate import SUITES, evaluate, format_report
report = evaluate(SUITES["smoke"], ["pure-lp", "topk", "fifo"])
print(format_report(report))
```
"""

from __future__ import annotations

import json
import math
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from hsched_env.errors import ConfigError, UnknownNameError

#: Seeds the trainers may use (episode seeds of training and validation during training).
TRAIN_SEEDS = range(0, 10_000)
#: First held-out evaluation seed; evaluation seeds are ``HELDOUT_SEEDS[:n]``.
HELDOUT_SEED_BASE = 1_000_000
#: Held-out evaluation seeds: disjoint from ``TRAIN_SEEDS`` (checked at import).
HELDOUT_SEEDS = range(HELDOUT_SEED_BASE, 2_000_000)
assert HELDOUT_SEEDS.start >= TRAIN_SEEDS.stop

#: The shipped ranker (``ranker`` without a path).
DEFAULT_RANKER_PATH = Path(__file__).resolve().parent / "data" / "ranker.pt"
#: ``--policies`` when not given; ``ranker`` is added when the shipped ranker is present.
DEFAULT_POLICIES = ("pure-lp", "topk", "pop-4", "gavel", "fifo")
#: Support threshold: a candidate with X above this is in the LP's support.
SUPPORT_TINY = 1e-6


def heldout_seeds(n: int) -> list[int]:
    """The first ``n`` held-out evaluation seeds."""
    if n < 1:
        raise ConfigError(f"must be >= 1, got {n}", field="--seeds")
    return list(HELDOUT_SEEDS[:n])


def is_training_seed(seed: int) -> bool:
    """Whether ``seed`` may have been used for training (so must not be evaluated on)."""
    return int(seed) in TRAIN_SEEDS


# ---------------------------------------------------------------------------- suites
@dataclass(frozen=True)
class Scenario:
    """One cluster and generated workload of a suite.

    Attributes:
        name: Short label (table headers, TensorBoard tags).
        cluster: Cluster preset.
        workload: Generated workload spec without ``seed=`` (the evaluation seed is added).
        max_time_s: Stop each run at this simulated time (``SimConfig.max_time_s``); ``None``:
            run until every job completes. Runs cut short report the jobs done by then; their
            makespan is n/a and ``avg_time_in_system_s`` is the fair JCT-like figure.
        note: What the scenario is for.
    """

    name: str
    cluster: str
    workload: str
    max_time_s: float | None = None
    note: str = ""

    def __post_init__(self) -> None:
        kind = self.workload.split(":", 1)[0].strip()
        if kind != "gavel":
            raise ConfigError(f"an evaluation scenario needs a generated ('gavel:...') "
                              f"workload, got {self.workload!r}", field="workload")
        if any(p.split("=", 1)[0].strip() == "seed"
               for p in self.workload.split(":", 1)[-1].split(",")):
            raise ConfigError(f"the evaluation seed is added to the workload; remove seed= "
                              f"from {self.workload!r}", field="workload")

    def workload_for(self, seed: int) -> str:
        """The workload spec of evaluation seed ``seed``."""
        return f"{self.workload}{',' if ':' in self.workload else ':'}seed={int(seed)}"


@dataclass(frozen=True)
class Suite:
    """A set of scenarios evaluated on the same held-out seeds and scheduler settings.

    Attributes:
        name: ``smoke``, ``standard`` or ``large``.
        scenarios: The scenarios.
        seeds: Number of held-out seeds by default (``--seeds`` overrides).
        job_candidates: Candidates the planner keeps per job (``PlannerConfig.max_candidates``;
            the simulator then appends the requested-GPU data-parallel ones).
        round_s, restart_s: Round length and restart cost.
        topk: k of the ``topk`` policy.
        description: One line for the report.
    """

    name: str
    scenarios: tuple[Scenario, ...]
    seeds: int
    job_candidates: int = 16
    round_s: float = 300.0
    restart_s: float = 60.0
    topk: int = 4
    description: str = ""


SMOKE = Suite(
    "smoke",
    (Scenario("sia-64", "sia-64", "gavel:rate=4,jobs=30",
              note="30 Gavel-style jobs on Sia's 64-GPU cluster; a check that runs in seconds"),),
    seeds=1,
    description="sia-64, 30 jobs, 1 held-out seed (under a minute)")
STANDARD = Suite(
    "standard",
    (Scenario("sia-64", "sia-64", "gavel:rate=4,jobs=100",
              note="RankEnv's default scenario: 100 jobs at 4/h on 64 GPUs of 3 types"),
     Scenario("modern-512", "modern-512", "gavel:rate=30,jobs=200",
              note="200 jobs at 30/h on 512 GPUs: up to ~110 active jobs")),
    seeds=3,
    description="sia-64 (100 jobs) and modern-512 (200 jobs), 3 held-out seeds")
LARGE = Suite(
    "large",
    (Scenario("large-2048", "large-2048", "gavel:rate=20000,jobs=1000", max_time_s=3 * 3600.0,
              note="a burst of 1,000 jobs (all arrive within ~3 min) on 2,048 GPUs of 5 types, "
                   "first 3 simulated hours (36 rounds): 500-1,000 active jobs, ~20 candidates "
                   "each, ~15,000 LP variables per round"),),
    seeds=1,
    description="large-2048, 1,000-job burst, 3 h window, 1 held-out seed")
SUITES = {s.name: s for s in (SMOKE, STANDARD, LARGE)}


def get_suite(name: str) -> Suite:
    if name not in SUITES:
        raise UnknownNameError("suite", name, list(SUITES))
    return SUITES[name]


# ---------------------------------------------------------------------------- policies
@dataclass
class PolicyEntry:
    """One policy of an evaluation: a simulator policy (``make_policy`` name) or a ranker."""

    label: str
    kind: str                         # "simulator" or "ranker"
    policy_name: str | None = None    # make_policy name
    ranker: object | None = None      # loaded ranker (keep(obs, env), name)
    path: str | None = None


def policy_names() -> list[str]:
    """Names accepted by ``--policies`` (besides ``ranker:PATH``)."""
    from lp_baseline.policy import POLICY_NAMES
    return ["pure-lp", "ranker", "ranker:PATH", *POLICY_NAMES]


def default_policies() -> list[str]:
    """``DEFAULT_POLICIES``, plus ``ranker`` when ``agents/data/ranker.pt`` and
    ``agents.ranker`` are both present."""
    names = list(DEFAULT_POLICIES)
    if DEFAULT_RANKER_PATH.exists() and _ranker_class(required=False) is not None:
        names.insert(3, "ranker")
    return names


def _ranker_class(required: bool = True):
    try:
        from agents.ranker import Ranker
    except ImportError as exc:
        if required:
            raise ConfigError(f"rankers need agents.ranker.Ranker, which cannot be imported "
                              f"({exc})", field="--policies") from None
        return None
    return Ranker


def load_ranker(path: str | Path):
    """``Ranker.load(path)`` (``agents.ranker``), with a one-line error for a missing file."""
    p = Path(path)
    if not p.exists():
        raise ConfigError(f"no ranker file {str(p)!r}", field="--policies")
    return _ranker_class().load(str(p))


def _ranker_label(name: str) -> str:
    name = str(name)
    return name if name.startswith("ranker") else f"ranker:{name}"


def parse_policies(items) -> list[PolicyEntry]:
    """Policy entries from names (a comma-separated string or a list) and/or ranker objects.

    Raises ``UnknownNameError`` (listing the valid names) for an unknown name, before anything
    runs; ranker files are loaded here.
    """
    from lp_baseline.policy import make_policy
    if isinstance(items, str):
        items = [p.strip() for p in items.split(",") if p.strip()]
    if not items:
        raise ConfigError("no policy named", field="--policies")
    out, seen = [], set()
    for item in items:
        if not isinstance(item, str):
            if not callable(getattr(item, "keep", None)):
                raise ConfigError(f"{item!r} is neither a policy name nor a ranker "
                                  f"(keep(obs, env))", field="policies")
            entry = PolicyEntry(_ranker_label(getattr(item, "name", type(item).__name__)),
                                "ranker", ranker=item)
        elif item == "ranker" or item.startswith("ranker:"):
            path = item.split(":", 1)[1].strip() if ":" in item else str(DEFAULT_RANKER_PATH)
            if not path:
                raise ConfigError("ranker: needs a path (ranker:PATH)", field="--policies")
            r = load_ranker(path)
            entry = PolicyEntry(_ranker_label(getattr(r, "name", Path(path).name)), "ranker",
                                ranker=r, path=path)
        else:
            name = "heterosched-lp" if item == "pure-lp" else item
            try:
                make_policy(name)
            except UnknownNameError:
                raise UnknownNameError("policy", item, policy_names(),
                                       field="--policies") from None
            entry = PolicyEntry(item, "simulator", policy_name=name)
        label, i = entry.label, 2
        while entry.label in seen:                  # the same ranker twice: distinct labels
            entry.label = f"{label}#{i}"
            i += 1
        seen.add(entry.label)
        out.append(entry)
    return out


# ---------------------------------------------------------------------------- one run
@dataclass
class Run:
    """One (scenario, policy, seed) run."""

    scenario: str
    label: str
    kind: str
    seed: int
    metrics: dict
    jct_s: np.ndarray
    decision_s: np.ndarray           # per round: LP (+ ranker) time
    lp_decision_s: np.ndarray        # per round: the policy's / LP's own time
    ranker_s: np.ndarray | None      # per round: ranker inference (rankers only)
    lp_vars: np.ndarray
    recall: np.ndarray | None        # per round with a non-empty LP support; None: n/a
    active_jobs: np.ndarray
    candidates_per_job: np.ndarray   # candidate-table size of every job of the workload
    end_reason: str
    records: list = field(default_factory=list, repr=False)
    overflow_max: int | None = None
    kept_frac_mean: float | None = None


def _support_pairs(support_lp, view) -> set[tuple[int, int]]:
    alloc, _ = support_lp.shares(view)
    return {(int(j), int(r)) for j, (rows, x) in alloc.items()
            for r, xv in zip(rows, x) if xv > SUPPORT_TINY}


def recall_defined(policy) -> bool:
    """Whether recall@k is defined for a simulator policy: an LP over all of each job's
    candidates or a per-job subset of them (``heterosched-lp``, ``topk``, ``lp-on-change``,
    ``topk-dominance``); not for POP (it partitions jobs), Gavel and the agnostic LP (requested
    configurations only) or the non-LP baselines."""
    from lp_baseline.policy import LPPolicy
    return (isinstance(policy, LPPolicy) and policy.candidates == "all" and policy.pop == 1
            and not policy.agnostic)


def _considered_rows(policy, view) -> list[np.ndarray]:
    """Per active job the candidate rows the LP policy hands to its solver (its top-k etc.)."""
    return [policy._rows(view, k, policy._norm(view, k)) for k in range(view.num_active)]


def _recall(support: set, considered: set) -> float | None:
    if not support:
        return None
    return len(support & considered) / len(support)


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
                value = _recall(_support_pairs(self.support_lp, view), considered)
                if value is not None:
                    self.recall.append(value)
        return out


def _sim_config(suite: Suite, scenario: Scenario, seed: int):
    from hsched_env.planner import PlannerConfig
    from hsched_env.simulator import SimConfig
    return SimConfig(round_s=suite.round_s, restart_s=suite.restart_s,
                     planner=PlannerConfig(max_candidates=suite.job_candidates), seed=seed,
                     max_time_s=scenario.max_time_s)


def _finish_metrics(metrics: dict, label: str, records, max_time_s, end_reason) -> dict:
    m = dict(metrics)
    m["policy"] = label
    truncated = end_reason == "time_limit" and any(not r.done for r in records)
    if truncated:
        m["makespan_s"] = math.nan              # the window ended first: no makespan
    ends = [r.finish_s if r.done else (max_time_s if truncated else math.nan) for r in records]
    times = [e - r.arrival_s for e, r in zip(ends, records)
             if not math.isnan(e) and r.arrival_s <= e]
    m["avg_time_in_system_s"] = float(np.mean(times)) if times else math.nan
    m["end_reason"] = end_reason
    return m


def run_simulator_policy(entry: PolicyEntry, suite: Suite, scenario: Scenario, seed: int,
                         cluster, workload, support_lp) -> Run:
    """``entry`` (a ``make_policy`` policy) on the scenario's workload of ``seed``."""
    from hsched_env.simulator import Simulator
    from lp_baseline.policy import make_policy
    policy = make_policy(entry.policy_name, topk=suite.topk)
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
               candidates_per_job=np.array([len(t) for t in sim._s.tables]),
               end_reason=sim.end_reason, records=records)


def rank_slots_bound(suite: Suite, scenario: Scenario, cluster, workload) -> int:
    """K for ``RankEnv``: the candidates of every job of the workload together, an upper bound
    on any round's candidates, so no round overflows the slots."""
    from hsched_env.simulator import Simulator
    sim = Simulator(cluster, workload, _NoDecisions(), _sim_config(suite, scenario, 0))
    return max(1, sum(len(sim.candidates_of(j)) for j in sim.jobs))


class _NoDecisions:
    name = "none"

    def reset(self, cluster, seed) -> None:
        pass

    def decide(self, view):
        return {}


def run_ranker(entry: PolicyEntry, suite: Suite, scenario: Scenario, seed: int, slots: int,
               support_lp) -> Run:
    """A ranker driving ``RankEnv`` (keep bits, then the HeteroSched LP over the kept
    candidates) on the scenario's workload, episode seed ``seed``."""
    from hsched_env.envs import RankEnv
    env = RankEnv(scenario.cluster, scenario.workload, max_candidates=slots,
                  job_candidates=suite.job_candidates, round_s=suite.round_s,
                  restart_s=suite.restart_s, lp_policy="heterosched-lp",
                  max_time_s=scenario.max_time_s)
    ranker = entry.ranker
    obs, _ = env.reset(seed=seed)
    lp_s, rank_s, lp_vars, recall, kept_frac = [], [], [], [], []
    overflow = 0
    done = env.simulator.finished
    while not done:
        sl = env._slots
        t0 = time.perf_counter()
        keep = ranker.keep(obs, env)
        rank_s.append(time.perf_counter() - t0)
        keep = np.asarray(keep)
        if keep.shape != (env.K,):
            raise ConfigError(f"ranker {entry.label!r} returned keep bits of shape "
                              f"{keep.shape}, expected ({env.K},)", field="ranker")
        bits = keep.astype(bool)[:sl.k.size]
        kept = {(int(j), int(r)) for j, r in zip(sl.job[bits], sl.row[bits])}
        value = _recall(_support_pairs(support_lp, sl.view), kept)
        if value is not None:
            recall.append(value)
        obs, _, terminated, truncated, info = env.step(keep.astype(np.int8))
        lp_s.append(info["decision_time_s"])
        lp_vars.append(info["lp_vars"])
        kept_frac.append(info["kept"] / max(info["total"], 1))
        overflow = max(overflow, int(info["overflow"]))
        done = terminated or truncated
    sim = env.simulator
    result = sim.result()
    records = result.jobs
    lp_arr, rank_arr = np.asarray(lp_s, dtype=float), np.asarray(rank_s, dtype=float)
    dec = lp_arr + rank_arr
    result.decision_s = list(dec)
    result.policy = entry.label
    metrics = result.metrics()
    metrics.update(getattr(env.lp, "summary", dict)())
    metrics = _finish_metrics(metrics, entry.label, records, scenario.max_time_s,
                              sim.end_reason)
    return Run(scenario=scenario.name, label=entry.label, kind="ranker", seed=seed,
               metrics=metrics, jct_s=np.array([r.jct_s for r in records if r.done]),
               decision_s=dec, lp_decision_s=lp_arr, ranker_s=rank_arr,
               lp_vars=np.asarray(lp_vars, dtype=float), recall=np.asarray(recall),
               active_jobs=np.asarray(result.active_jobs),
               candidates_per_job=np.array([len(t) for t in sim._s.tables]),
               end_reason=sim.end_reason, records=records, overflow_max=overflow,
               kept_frac_mean=float(np.mean(kept_frac)) if kept_frac else 0.0)


# ---------------------------------------------------------------------------- the suite
@dataclass
class Report:
    """What ``evaluate`` returns: the suite, seeds, every run, and the seed-averaged rows."""

    suite: Suite
    seeds: list[int]
    policies: list[str]
    runs: list[Run]
    rows: list[dict]
    scenarios: list[dict]
    wall_s: float


def evaluate(suite: Suite | str, policies=None, seeds: int | list[int] | None = None,
             progress: bool | None = None) -> Report:
    """Run ``policies`` (names and/or ranker objects; default ``default_policies()``) on every
    scenario of ``suite`` for each held-out seed (``seeds``: a count, or explicit held-out
    seeds; default the suite's count). ``progress``: a tqdm bar on stderr (``None``: only on a
    terminal)."""
    from tqdm import tqdm

    from hsched_env.cluster import get_cluster
    from hsched_env.workloads import load_workload
    from lp_baseline.policy import make_policy
    if isinstance(suite, str):
        suite = get_suite(suite)
    if seeds is None:
        seeds = heldout_seeds(suite.seeds)
    elif isinstance(seeds, (int, np.integer)):
        seeds = heldout_seeds(int(seeds))
    seeds = [int(s) for s in seeds]
    bad = [s for s in seeds if is_training_seed(s) or s not in HELDOUT_SEEDS]
    if bad:
        raise ConfigError(f"evaluation seeds must be held-out ({HELDOUT_SEEDS.start}.."
                          f"{HELDOUT_SEEDS.stop - 1}), not training seeds; got {bad}",
                          field="seeds")
    entries = parse_policies(default_policies() if policies is None else policies)
    support_lp = make_policy("heterosched-lp")
    total = len(suite.scenarios) * len(seeds) * len(entries)
    bar = tqdm(total=total, desc=f"evaluate {suite.name}", unit="run",
               disable=(None if progress is None else not progress), leave=False)
    t_start = time.perf_counter()
    runs: list[Run] = []
    try:
        for sc in suite.scenarios:
            cluster = get_cluster(sc.cluster)
            for seed in seeds:
                workload = load_workload(sc.workload_for(seed), cluster)
                slots = None
                for e in entries:
                    bar.set_postfix_str(f"{sc.name} {e.label} seed {seed}")
                    if e.kind == "ranker":
                        if slots is None:
                            slots = rank_slots_bound(suite, sc, cluster, workload)
                        runs.append(run_ranker(e, suite, sc, seed, slots, support_lp))
                    else:
                        runs.append(run_simulator_policy(e, suite, sc, seed, cluster,
                                                         workload, support_lp))
                    bar.update(1)
    finally:
        bar.close()
    rows = _summarize(suite, entries, runs)
    scenarios = [_scenario_summary(sc, [r for r in runs if r.scenario == sc.name])
                 for sc in suite.scenarios]
    return Report(suite=suite, seeds=seeds, policies=[e.label for e in entries], runs=runs,
                  rows=rows, scenarios=scenarios, wall_s=time.perf_counter() - t_start)


def _nanmean(values) -> float:
    vals = np.asarray([v for v in values if v is not None], dtype=float)
    vals = vals[np.isfinite(vals)]
    return float(vals.mean()) if vals.size else math.nan


def _pooled(arrays) -> np.ndarray:
    arrays = [a for a in arrays if a is not None and a.size]
    return np.concatenate(arrays) if arrays else np.zeros(0)


def _row(label: str, kind: str, scenario: str, runs: list[Run]) -> dict:
    ms = [r.metrics for r in runs]
    dec = _pooled([r.decision_s for r in runs])
    lp_dec = _pooled([r.lp_decision_s for r in runs])
    row = {
        "scenario": scenario, "policy": label, "kind": kind, "seeds": [r.seed for r in runs],
        "jobs_completed": int(sum(m["jobs_completed"] for m in ms)),
        "jobs_total": int(sum(m["jobs_total"] for m in ms)),
    }
    for key in ("avg_jct_s", "p50_jct_s", "p99_jct_s", "makespan_s", "avg_queue_s",
                "avg_time_in_system_s", "gpu_util", "restarts_per_job", "ftf_worst",
                "ftf_mean", "wall_s"):
        row[key] = _nanmean(m.get(key) for m in ms)
    row["rounds"] = float(np.mean([m["rounds"] for m in ms]))
    row["lp_fallbacks"] = int(sum(m.get("lp_fallbacks", 0) or 0 for m in ms))
    row["decision_time_mean_s"] = float(dec.mean()) if dec.size else 0.0
    row["decision_time_p99_s"] = float(np.percentile(dec, 99)) if dec.size else 0.0
    row["lp_decision_time_mean_s"] = float(lp_dec.mean()) if lp_dec.size else 0.0
    if kind == "ranker":
        rk = _pooled([r.ranker_s for r in runs])
        row["ranker_time_mean_s"] = float(rk.mean()) if rk.size else 0.0
        row["ranker_time_p99_s"] = float(np.percentile(rk, 99)) if rk.size else 0.0
        row["overflow_max"] = max(r.overflow_max or 0 for r in runs)
        row["kept_frac_mean"] = _nanmean(r.kept_frac_mean for r in runs)
    else:
        row["ranker_time_mean_s"] = None
    lpv = _pooled([r.lp_vars for r in runs])
    row["lp_vars_mean"] = float(lpv.mean()) if lpv.size else 0.0
    if any(r.recall is None for r in runs):
        row["recall"] = None
    else:
        rec = _pooled([r.recall for r in runs])
        row["recall"] = float(rec.mean()) if rec.size else None
    act = _pooled([r.active_jobs.astype(float) for r in runs])
    row["active_jobs_mean"] = float(act.mean()) if act.size else 0.0
    row["active_jobs_max"] = int(act.max()) if act.size else 0
    cpj = _pooled([r.candidates_per_job.astype(float) for r in runs])
    row["candidates_per_job_mean"] = float(cpj.mean()) if cpj.size else 0.0
    row["candidates_per_job_min"] = int(cpj.min()) if cpj.size else 0
    row["end_reasons"] = sorted({r.end_reason for r in runs})
    return row


def _summarize(suite: Suite, entries: list[PolicyEntry], runs: list[Run]) -> list[dict]:
    rows = []
    for sc in suite.scenarios:
        block = []
        for e in entries:
            mine = [r for r in runs if r.scenario == sc.name and r.label == e.label]
            block.append(_row(e.label, e.kind, sc.name, mine))
        ref = next((r for r in block if r["policy"] == "pure-lp"), None)
        for r in block:
            r["avg_jct_ratio"] = _ratio(r["avg_jct_s"], ref and ref["avg_jct_s"])
            r["decision_time_ratio"] = _ratio(r["decision_time_mean_s"],
                                              ref and ref["decision_time_mean_s"])
        rows.extend(block)
    return rows


def _ratio(a, b) -> float:
    if b is None or not b or not math.isfinite(b) or a is None or not math.isfinite(a):
        return math.nan
    return float(a / b)


def _scenario_summary(sc: Scenario, runs: list[Run]) -> dict:
    act = _pooled([r.active_jobs.astype(float) for r in runs])
    per_run_mean = [float(r.active_jobs.mean()) for r in runs if r.active_jobs.size]
    cpj = _pooled([r.candidates_per_job.astype(float) for r in runs])
    return {"name": sc.name, "cluster": sc.cluster, "workload": sc.workload,
            "max_time_s": sc.max_time_s, "note": sc.note,
            "active_jobs_mean": float(act.mean()) if act.size else 0.0,
            "active_jobs_mean_min_over_runs": min(per_run_mean) if per_run_mean else 0.0,
            "active_jobs_max": int(act.max()) if act.size else 0,
            "candidates_per_job_mean": float(cpj.mean()) if cpj.size else 0.0,
            "candidates_per_job_min": int(cpj.min()) if cpj.size else 0,
            "candidates_per_job_max": int(cpj.max()) if cpj.size else 0}


# ---------------------------------------------------------------------------- output
def per_seed_rows(report: Report) -> list[dict]:
    """One JSON-ready row per run (scenario, policy, seed)."""
    out = []
    for r in report.runs:
        m = r.metrics
        row = {"scenario": r.scenario, "policy": r.label, "kind": r.kind, "seed": r.seed}
        row.update({k: m.get(k) for k in (
            "jobs_total", "jobs_completed", "avg_jct_s", "p50_jct_s", "p99_jct_s",
            "makespan_s", "avg_queue_s", "avg_time_in_system_s", "gpu_util",
            "restarts_per_job", "ftf_worst", "ftf_mean", "rounds", "wall_s", "end_reason",
            "lp_solves", "lp_fallbacks")})
        row["decision_time_mean_s"] = float(r.decision_s.mean()) if r.decision_s.size else 0.0
        row["decision_time_p99_s"] = (float(np.percentile(r.decision_s, 99))
                                      if r.decision_s.size else 0.0)
        row["lp_decision_time_mean_s"] = (float(r.lp_decision_s.mean())
                                          if r.lp_decision_s.size else 0.0)
        row["ranker_time_mean_s"] = (float(r.ranker_s.mean()) if r.ranker_s is not None
                                     and r.ranker_s.size else None)
        row["lp_vars_mean"] = float(r.lp_vars.mean()) if r.lp_vars.size else 0.0
        row["recall"] = (None if r.recall is None or not r.recall.size
                         else float(r.recall.mean()))
        row["active_jobs_mean"] = float(r.active_jobs.mean()) if r.active_jobs.size else 0.0
        row["active_jobs_max"] = int(r.active_jobs.max()) if r.active_jobs.size else 0
        row["candidates_per_job_mean"] = float(r.candidates_per_job.mean())
        if r.kind == "ranker":
            row["overflow_max"] = r.overflow_max
            row["kept_frac_mean"] = r.kept_frac_mean
        out.append(row)
    for row in out:
        ref = next((p for p in out if p["policy"] == "pure-lp" and p["seed"] == row["seed"]
                    and p["scenario"] == row["scenario"]), None)
        row["avg_jct_ratio"] = _ratio(row["avg_jct_s"], ref and ref["avg_jct_s"])
        row["decision_time_ratio"] = _ratio(row["decision_time_mean_s"],
                                            ref and ref["decision_time_mean_s"])
    return out


def _clean(value):
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, dict):
        return {k: _clean(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_clean(v) for v in value]
    if isinstance(value, np.generic):
        return _clean(value.item())
    return value


def report_json(report: Report) -> dict:
    """The report as one JSON-ready object: suite, seeds, settings, scenarios, rows (seed
    averages) and per_seed rows. Non-finite numbers are ``null``."""
    s = report.suite
    return _clean({
        "suite": s.name, "description": s.description, "seeds": report.seeds,
        "train_seeds": [TRAIN_SEEDS.start, TRAIN_SEEDS.stop],
        "policies": report.policies,
        "settings": {"job_candidates": s.job_candidates, "round_s": s.round_s,
                     "restart_s": s.restart_s, "topk": s.topk,
                     "ranker_lp": "heterosched-lp", "support_threshold": SUPPORT_TINY},
        "scenarios": report.scenarios, "rows": report.rows,
        "per_seed": per_seed_rows(report), "wall_s": report.wall_s})


def _fmt(v, scale=1.0, digits=2, na="n/a") -> str:
    if v is None or (isinstance(v, float) and not math.isfinite(v)):
        return na
    return f"{v * scale:.{digits}f}"


def format_report(report: Report) -> str:
    """The printed tables: one per scenario, seed-averaged rows."""
    from hsched_env.cli import format_table
    s = report.suite
    lines = [(f"suite {s.name}: {s.description}; held-out seeds "
              f"{', '.join(map(str, report.seeds))}; {s.round_s:.0f} s rounds, restart "
              f"{s.restart_s:.0f} s, {s.job_candidates} planner candidates per job")]
    headers = ["policy", "done", "avg JCT h", "p99 JCT h", "makespan h", "in-sys h",
               "FTF worst", "decide ms", "p99 ms", "LP vars", "JCT ×LP", "time ×LP",
               "recall@k"]
    for sc in report.scenarios:
        window = (f", first {sc['max_time_s'] / 3600:g} h" if sc["max_time_s"] else "")
        lines.append("")
        lines.append(f"{sc['name']}: {sc['workload']} on {sc['cluster']}{window} — active jobs "
                     f"mean {sc['active_jobs_mean']:.0f} (lowest run "
                     f"{sc['active_jobs_mean_min_over_runs']:.0f}), max "
                     f"{sc['active_jobs_max']}; candidates per job mean "
                     f"{sc['candidates_per_job_mean']:.1f} (min {sc['candidates_per_job_min']})")
        table = []
        notes = []
        for r in (r for r in report.rows if r["scenario"] == sc["name"]):
            table.append([
                r["policy"], f"{r['jobs_completed']}/{r['jobs_total']}",
                _fmt(r["avg_jct_s"], 1 / 3600), _fmt(r["p99_jct_s"], 1 / 3600),
                _fmt(r["makespan_s"], 1 / 3600, 1), _fmt(r["avg_time_in_system_s"], 1 / 3600),
                _fmt(r["ftf_worst"]), _fmt(r["decision_time_mean_s"], 1e3, 1),
                _fmt(r["decision_time_p99_s"], 1e3, 1), f"{r['lp_vars_mean']:.0f}",
                _fmt(r["avg_jct_ratio"]), _fmt(r["decision_time_ratio"]),
                _fmt(r["recall"], 1, 3)])
            if r["kind"] == "ranker":
                notes.append(f"{r['policy']}: decision = LP "
                             f"{r['lp_decision_time_mean_s'] * 1e3:.1f} ms + ranker {r['ranker_time_mean_s'] * 1e3:.1f} ms per round "
                             f"(mean); kept {r['kept_frac_mean']:.1%} of the candidates; "
                             f"slot overflow {r['overflow_max']}")
            if r.get("lp_fallbacks"):
                notes.append(f"{r['policy']}: {r['lp_fallbacks']} LP parts fell back to the "
                             f"greedy assignment (see docs/lp.md)")
        lines.append(format_table(headers, table))
        lines.extend(notes)
    lines.append("")
    lines.append("JCT/time ×LP: ratio to pure-lp; recall@k: share of the full LP's support the "
                 "policy kept (n/a: POP, Gavel, non-LP); decide ms over all rounds of all seeds")
    return "\n".join(lines)


def write_outputs(report: Report, out: Path, data: dict | None = None) -> list[Path]:
    """``metrics.json``, TensorBoard scalars (``tb/``) and PNG plots under ``out``."""
    from agents.plots import plot_decision_vs_jct, plot_jct_cdf
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    data = report_json(report) if data is None else data
    written = []
    path = out / "metrics.json"
    path.write_text(json.dumps(data, indent=1))
    written.append(path)
    written.append(_write_tensorboard(report, data, out / "tb"))
    written.append(plot_decision_vs_jct(report, out / "decision_vs_jct.png"))
    written.append(plot_jct_cdf(report, out / "jct_cdf.png"))
    return written


TB_METRICS = (("avg_jct_h", "avg_jct_s", 1 / 3600), ("p99_jct_h", "p99_jct_s", 1 / 3600),
              ("makespan_h", "makespan_s", 1 / 3600), ("ftf_worst", "ftf_worst", 1.0),
              ("decision_time_ms", "decision_time_mean_s", 1e3),
              ("decision_time_p99_ms", "decision_time_p99_s", 1e3),
              ("lp_vars", "lp_vars_mean", 1.0), ("recall", "recall", 1.0),
              ("avg_jct_ratio", "avg_jct_ratio", 1.0),
              ("decision_time_ratio", "decision_time_ratio", 1.0))


def _write_tensorboard(report: Report, data: dict, path: Path) -> Path:
    """Per scenario a run directory: scalars ``eval/<policy>/<metric>`` (step = seed index,
    the seed average at step ``len(seeds)``) and ``add_hparams`` with the suite and seeds."""
    from torch.utils.tensorboard import SummaryWriter
    seed_index = {s: i for i, s in enumerate(report.seeds)}
    n = len(report.seeds)
    for sc in report.scenarios:
        with SummaryWriter(log_dir=str(path / sc["name"])) as w:
            for r in (r for r in data["per_seed"] if r["scenario"] == sc["name"]):
                for tag, key, scale in TB_METRICS:
                    if r.get(key) is not None:
                        w.add_scalar(f"eval/{r['policy']}/{tag}", r[key] * scale,
                                     seed_index[r["seed"]])
            metrics = {}
            for r in (r for r in data["rows"] if r["scenario"] == sc["name"]):
                for tag, key, scale in TB_METRICS:
                    if r.get(key) is not None:
                        w.add_scalar(f"eval/{r['policy']}/{tag}", r[key] * scale, n)
                        if tag in ("avg_jct_h", "decision_time_ms", "recall"):
                            metrics[f"hparam/{r['policy']}/{tag}"] = r[key] * scale
            w.add_hparams({"suite": report.suite.name, "scenario": sc["name"],
                           "cluster": sc["cluster"], "workload": sc["workload"],
                           "seeds": ",".join(map(str, report.seeds)),
                           "policies": ",".join(report.policies)}, metrics,
                          run_name="hparams")
    return path


# ---------------------------------------------------------------------------- CLI
def run_cli(args) -> int:
    """``hsched evaluate`` (``args``: suite, policies, seeds, out, json, no_progress)."""
    suite = get_suite(args.suite)
    policies = args.policies if args.policies else default_policies()
    entries = parse_policies(policies)              # unknown names exit 2 before any run
    out = Path(args.out) if args.out else Path("runs") / f"eval-{suite.name}"
    try:                                            # an unwritable --out fails before the runs
        out.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise ConfigError(f"cannot create {str(out)!r}: {exc.strerror or exc}",
                          field="--out") from None
    progress = False if getattr(args, "no_progress", False) else None
    report = evaluate(suite, entries_to_items(entries), seeds=args.seeds, progress=progress)
    data = report_json(report)
    written = write_outputs(report, out, data)
    if args.json:
        json.dump(data, sys.stdout, indent=1)
        print()
    else:
        print(format_report(report))
        print(f"\n{len(report.runs)} runs in {report.wall_s:.1f} s; wrote "
              + ", ".join(str(p) for p in written))
    return 0


def entries_to_items(entries: list[PolicyEntry]) -> list:
    """Policy entries back to what ``evaluate`` accepts (names, loaded rankers), so a ranker
    file is loaded once."""
    return [e.ranker if e.kind == "ranker" else e.label for e in entries]
