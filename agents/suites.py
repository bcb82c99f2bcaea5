"""Evaluation seeds and suites: the seeds training may use (``TRAIN_SEEDS``) and the held-out
seeds evaluation draws from (``HELDOUT_SEEDS``, ``heldout_seeds``, ``is_training_seed``), and the
``Scenario`` / ``Suite`` definitions with the shipped suites (``SMOKE``, ``STANDARD``, ``LARGE``,
by name in ``SUITES``; ``get_suite``) and ``custom_suite`` (one scenario of your own). Part of
the evaluation harness, ``agents.evaluate``."""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path

from hsched_env.cluster import get_cluster
from hsched_env.defaults import EARLIER_DRAWS
from hsched_env.errors import (ConfigError, UnknownNameError, is_real_number, is_whole_number,
                               show)
from hsched_env.workloads import Workload, load_workload, spec_has_key, spec_kind, with_spec_item

#: Seeds the trainers may use (episode seeds of training and validation during training).
TRAIN_SEEDS = range(0, 10_000)
#: First held-out evaluation seed; evaluation seeds are ``HELDOUT_SEEDS[:n]``.
HELDOUT_SEED_BASE = 1_000_000
#: Held-out evaluation seeds: disjoint from ``TRAIN_SEEDS`` (checked at import).
HELDOUT_SEEDS = range(HELDOUT_SEED_BASE, 2_000_000)
assert HELDOUT_SEEDS.start >= TRAIN_SEEDS.stop


def heldout_seeds(n: int) -> list[int]:
    """The first ``n`` held-out evaluation seeds."""
    if not 1 <= n <= len(HELDOUT_SEEDS):
        raise ConfigError(f"must be 1..{len(HELDOUT_SEEDS):,} (the held-out seeds "
                          f"{HELDOUT_SEEDS.start:,}..{HELDOUT_SEEDS.stop - 1:,}), got {n:,}",
                          field="--seeds")
    return list(HELDOUT_SEEDS[:n])


def is_training_seed(seed: int) -> bool:
    """Whether ``seed`` may have been used for training (so must not be evaluated on)."""
    return int(seed) in TRAIN_SEEDS



@dataclass(frozen=True)
class Scenario:
    """One cluster and generated workload of a suite.

    Attributes:
        name: Short label (table headers, TensorBoard tags).
        cluster: Cluster preset (or cluster file).
        workload: Generated workload spec without ``seed=`` (the evaluation seed is added);
            with ``fixed_ok``, also a trace (``philly:``, ``pollux:``, ``csv:``,
            ``gavel-trace:``) or a seeded ``gavel:`` spec: the same jobs on every seed.
        max_time_s: Stop each run at this simulated time (``SimConfig.max_time_s``); ``None``:
            run until every job completes. Runs cut short report the jobs done by then; their
            makespan is n/a and ``avg_time_in_system_s`` is the fair JCT-like figure.
        note: What the scenario is for.
        fixed_ok: Allow a fixed workload (a trace, or a ``gavel:`` spec with ``seed=``): a
            custom scenario (``custom_suite``). The shipped suites need generated workloads,
            so each held-out seed is a different job sequence.
    """

    name: str
    cluster: str
    workload: str
    max_time_s: float | None = None
    note: str = ""
    fixed_ok: bool = False

    def __post_init__(self) -> None:
        if self.fixed_ok:
            return
        if _workload_kind(self.workload) != "gavel":
            raise ConfigError(f"an evaluation scenario needs a generated ('gavel:...') "
                              f"workload, got {self.workload!r}", field="workload")
        if _seeded(self.workload):
            raise ConfigError(f"the evaluation seed is added to the workload; remove seed= "
                              f"from {self.workload!r}", field="workload")

    @property
    def fixed_workload(self) -> bool:
        """Whether every seed runs the same jobs (a trace or a seeded ``gavel:`` spec)."""
        return _workload_kind(self.workload) != "gavel" or _seeded(self.workload)

    def workload_for(self, seed: int) -> str:
        """The workload spec of evaluation seed ``seed`` (a fixed workload: itself)."""
        if self.fixed_workload:
            return self.workload
        return with_spec_item(self.workload, f"seed={int(seed)}")

    def load(self, seed: int, cluster) -> Workload:
        """The jobs of evaluation seed ``seed`` (those of ``workload_for(seed)``); an error in
        the spec quotes it as the user wrote it, with the seed beside it."""
        return load_workload(self.workload, cluster,
                             seed=None if self.fixed_workload else int(seed))


def _workload_kind(spec: str) -> str:
    return spec_kind(spec)


def is_fixed_generated(spec: str) -> bool:
    """Whether ``spec`` is a generated (``gavel:``) workload that fixes its own ``seed=``, so
    that every episode or evaluation seed would replay one job list."""
    return _workload_kind(spec) == "gavel" and _seeded(spec)


def _seeded(spec: str) -> bool:
    return spec_has_key(spec, "seed")


@dataclass(frozen=True)
class Suite:
    """A set of scenarios evaluated on the same held-out seeds and scheduler settings.

    Attributes:
        name: ``smoke``, ``standard``, ``large``, ``large-family`` or ``custom``.
        scenarios: The scenarios.
        seeds: Number of held-out seeds by default (``--seeds`` overrides).
        job_candidates: Candidates the planner keeps per job (``PlannerConfig.max_candidates``;
            the simulator then appends the requested-GPU data-parallel ones).
        round_s, restart_s: Round length and restart cost.
        topk: k of the ``topk`` policy.
        description: One line for the report (the seeds are not in it: the report names
            the seeds it ran).
    """

    name: str
    scenarios: tuple[Scenario, ...]
    seeds: int
    job_candidates: int = 16
    round_s: float = 300.0
    restart_s: float = 60.0
    topk: int = 4
    description: str = ""

    def __post_init__(self) -> None:
        where = f"suite {show(self.name)}"
        if not isinstance(self.scenarios, (tuple, list)) or not self.scenarios:
            raise ConfigError(f"must be a non-empty tuple of Scenario, got "
                              f"{show(self.scenarios)}", source=where, field="scenarios")
        bad = [sc for sc in self.scenarios if not isinstance(sc, Scenario)]
        if bad:
            raise ConfigError(f"must hold Scenario objects, got {show(bad[0])}", source=where,
                              field="scenarios")
        object.__setattr__(self, "scenarios", tuple(self.scenarios))
        if not (is_whole_number(self.seeds) and 1 <= self.seeds <= len(HELDOUT_SEEDS)):
            raise ConfigError(f"must be a whole number of held-out seeds from 1 to "
                              f"{len(HELDOUT_SEEDS):,}, got {show(self.seeds)}", source=where,
                              field="seeds")
        for name in ("job_candidates", "topk"):
            value = getattr(self, name)
            if not (is_whole_number(value) and value >= 1):
                raise ConfigError(f"must be a whole number >= 1, got {show(value)}",
                                  source=where, field=name)


SMOKE = Suite(
    "smoke",
    (Scenario("sia-64", "sia-64", f"gavel:rate=4,jobs=30,{EARLIER_DRAWS}",
              note="30 Gavel-style jobs on Sia's 64-GPU cluster; a check that runs in seconds"),),
    seeds=1,
    description="sia-64, 30 jobs (under a minute a seed)")
STANDARD = Suite(
    "standard",
    (Scenario("sia-64", "sia-64", f"gavel:rate=4,jobs=100,{EARLIER_DRAWS}",
              note="RankEnv's default scenario: 100 jobs at 4/h on 64 GPUs of 3 types"),
     Scenario("modern-512", "modern-512", f"gavel:rate=30,jobs=200,{EARLIER_DRAWS}",
              note="200 jobs at 30/h on 512 GPUs: up to ~110 active jobs")),
    seeds=3,
    description="sia-64 (100 jobs) and modern-512 (200 jobs)")
LARGE = Suite(
    "large",
    (Scenario("large-2048", "large-2048", f"gavel:rate=20000,jobs=1000,{EARLIER_DRAWS}",
              max_time_s=3 * 3600.0,
              note="a burst of 1,000 jobs (all arrive within ~3 min) on 2,048 GPUs of 5 types, "
                   "first 3 simulated hours (36 rounds): 500-1,000 active jobs, ~68 candidates "
                   "each, ~35,000 LP variables per round on average"),),
    seeds=1,
    description="large-2048, 1,000-job burst, 3 h window")
def _burst(jobs: int, active: int, mean_active: int) -> Scenario:
    return Scenario(f"large-2048-{active}", "large-2048",
                    f"gavel:rate=20000,jobs={jobs},{EARLIER_DRAWS}",
                    max_time_s=5400.0,
                    note=f"a burst of {jobs:,} jobs on 2,048 GPUs of 5 types, first 1.5 simulated "
                         f"hours (18 rounds): the burst arrives within ~7 minutes; "
                         f"~{mean_active:,} active jobs on average over the rounds")


#: Named after the burst's scale (550 / 1,100 / 2,200 jobs, all active by the second or third
#: round); the mean number of active jobs over the 18 rounds is lower (~310 / ~750 / ~1,650).
LARGE_FAMILY = Suite(
    "large-family",
    (_burst(550, 500, 310), _burst(1100, 1000, 750), _burst(2200, 2000, 1650)),
    seeds=3,
    description="large-2048 bursts of 550, 1,100 and 2,200 jobs (1.5 h windows; on average "
                "~310, ~750 and ~1,650 active jobs over the rounds)")
SUITES = {s.name: s for s in (SMOKE, STANDARD, LARGE, LARGE_FAMILY)}


def get_suite(name: str) -> Suite:
    if name not in SUITES:
        raise UnknownNameError("suite", name, list(SUITES))
    return SUITES[name]


#: Name of the one-scenario suite of ``custom_suite`` (``hsched evaluate --cluster/--workload``).
CUSTOM_SUITE = "custom"


def custom_suite(cluster: str, workload: str, max_time_s: float | None = None,
                 seeds: int = 1) -> Suite:
    """A one-scenario suite named ``custom`` (``hsched evaluate --cluster C --workload W``),
    with the shipped suites' settings (300 s rounds, 60 s restarts, 16 planner candidates per
    job, ``topk`` k = 4). A generated ``gavel:`` spec without ``seed=`` gets each held-out
    seed appended; a trace or a seeded spec is the same jobs on every seed (a note says so).
    The scenario is named after the cluster (a file: its stem)."""
    cluster, workload = str(cluster).strip(), str(workload).strip()
    if not cluster:
        raise ConfigError("needs a cluster preset or file", field="--cluster")
    if not workload:
        raise ConfigError("needs a workload spec", field="--workload")
    if max_time_s is not None and not (is_real_number(max_time_s) and 0 < max_time_s < math.inf):
        raise ConfigError(f"must be a finite number of seconds > 0 (none: no limit), got "
                          f"{max_time_s}", field="--max-time-s")
    get_cluster(cluster)                              # unknown preset / bad file: fail now
    name = Path(cluster).stem if Path(cluster).suffix else cluster
    if _workload_kind(workload) != "gavel":
        note = "a trace: the same jobs on every seed"
    elif _seeded(workload):
        note = "a seeded generated workload: the same jobs on every seed"
    else:
        note = "a generated workload: each held-out seed draws new jobs"
    sc = Scenario(name, cluster, workload, max_time_s=max_time_s, note=note, fixed_ok=True)
    window = f", first {max_time_s / 3600:g} h" if max_time_s else ""
    return Suite(CUSTOM_SUITE, (sc,), seeds=seeds,
                 description=f"{workload} on {cluster}{window}")
