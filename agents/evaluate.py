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
  ``Ranker.load(PATH)`` from ``agents.ranker`` driving ``hsched_env.envs.RankEnv`` (keep bits
  per round, then the HeteroSched LP over the kept candidates). Its decision time per round is
  the LP's plus the ranker's own inference time (both reported);
* ``module:callable`` — your own agent (``agents.policy_entries.load_entry_point``): rank mode
  (``keep(obs, env) -> (K,) int8``, driven like a ranker) or select mode
  (``act(obs, env) -> int`` on ``hsched_env.envs.ScheduleEnv``, ``run_scheduler``), with
  optional ``name``, ``slots`` (a fixed K) and ``env_kwargs``; or your own scheduling policy
  (``reset(cluster, seed)`` and ``decide(view)``), run by the simulator as the named ones
  are, made anew for each run by the class or factory named (an object: copied);
* ``sb3:PATH.zip`` / ``sb3:ALGO:PATH.zip`` — a Stable-Baselines3 / sb3-contrib model, only
  with ``trust_sb3_zip=True`` (a zip carries pickled code); its action space decides the mode
  and K.

``evaluate`` also accepts agent objects (``keep`` or ``act``, as above) and scheduling
policy objects (``reset`` and ``decide``; each run gets a copy) directly.

```python
from agents.evaluate import SUITES, custom_suite, evaluate, format_report
report = evaluate(SUITES["smoke"], ["pure-lp", "topk", "fifo"])
print(format_report(report))
report = evaluate(custom_suite("tiny-8", "gavel:rate=8,jobs=16,duration_scale=0.05"),
                  ["pure-lp", "sb3:model.zip"], trust_sb3_zip=True)
```

Modules. This module holds ``evaluate`` itself and re-exports the harness's public names; the
parts live in one module per job (imports flow one way, each only from those before it):

* ``agents.suites`` — the seeds, ``Scenario`` / ``Suite``, ``SMOKE`` / ``STANDARD`` / ``LARGE``,
  ``SUITES``, ``get_suite``, ``custom_suite``;
* ``agents.policy_entries`` — the policy list: ``PolicyEntry``, ``parse_policies``,
  ``policy_names``, ``default_policies``, ``load_ranker``, ``load_entry_point``, ``load_sb3``,
  ``agent_entry``, ``entries_to_items``;
* ``agents.runners`` — one run of one policy on one scenario and seed: ``Run``,
  ``run_simulator_policy``, ``run_ranker``, ``run_scheduler``, ``rank_slots_bound``,
  ``check_observation``, recall@k;
* ``agents.report`` — ``Report``, the aggregation into seed-averaged rows, ``report_json``,
  ``format_report``, ``output_dir``, ``write_outputs`` (``metrics.json``, TensorBoard, plots);
* ``agents.sweep`` — the runs as tasks on a backend (``SerialBackend``, ``RayBackend``), run
  files (``RunStore``), resume and retries: ``evaluate(..., backend="ray", runs_dir=...)``,
  ``hsched evaluate --backend ray``.
"""

from __future__ import annotations

import inspect
import os
import time
from collections import Counter
from collections.abc import Iterable
from pathlib import Path

import numpy as np
from tqdm import tqdm

from agents.policy_entries import (DEFAULT_POLICIES, DEFAULT_RANKER_PATH, SB3_ALGOS,
                                   PolicyEntry, agent_entry, default_policies, describe_entry,
                                   entries_to_items, load_entry_point, load_ranker, load_sb3,
                                   parse_policies, policy_names)
from agents.provenance import environment_record
from agents.report import (TB_METRICS, Report, format_report, output_dir, per_seed_rows,
                           report_json, scenario_summary, summarize, write_outputs)
from agents.runners import (STEP_CAP, SUPPORT_TINY, WALL_CLOCK_FIELDS, WALL_CLOCK_METRICS, Run,
                            check_observation, deterministic_part, merge_timing_repeats,
                            rank_slots_bound, recall_defined, round_step_cap, run_from_json,
                            run_ranker, run_scheduler, run_simulator_policy, run_to_json,
                            settled_heap)
from agents.suites import (CUSTOM_SUITE, HELDOUT_SEED_BASE, HELDOUT_SEEDS, LARGE, SMOKE,
                           STANDARD, SUITES, TRAIN_SEEDS, Scenario, Suite, custom_suite,
                           get_suite, heldout_seeds, is_training_seed)
from agents.sweep import (DEFAULT_RETRIES, RUNS_DIR, RayBackend, RunStore, SerialBackend,
                          Task, file_fingerprint, fingerprint, make_backend,
                          model_files_record, run_sweep)
from hsched_env.cluster import get_cluster
from hsched_env.errors import ConfigError, is_whole_number, show
from lp_baseline.registry import make_policy
from lp_baseline.warm_up import warm_up_process

__all__ = [
    # agents.suites
    "TRAIN_SEEDS", "HELDOUT_SEED_BASE", "HELDOUT_SEEDS", "heldout_seeds", "is_training_seed",
    "Scenario", "Suite", "SMOKE", "STANDARD", "LARGE", "SUITES", "get_suite", "CUSTOM_SUITE",
    "custom_suite",
    # agents.policy_entries
    "DEFAULT_RANKER_PATH", "DEFAULT_POLICIES", "SB3_ALGOS", "PolicyEntry", "policy_names",
    "default_policies", "load_ranker", "load_entry_point", "load_sb3", "agent_entry",
    "describe_entry",
    "parse_policies", "entries_to_items",
    # agents.runners
    "SUPPORT_TINY", "STEP_CAP", "Run", "recall_defined", "run_simulator_policy",
    "rank_slots_bound", "run_ranker", "run_scheduler", "round_step_cap", "check_observation",
    "run_to_json", "run_from_json", "deterministic_part", "WALL_CLOCK_FIELDS",
    "WALL_CLOCK_METRICS", "settled_heap", "merge_timing_repeats",
    # agents.sweep
    "SerialBackend", "RayBackend", "RunStore", "RUNS_DIR",
    # agents.report
    "Report", "per_seed_rows", "report_json", "format_report", "output_dir", "write_outputs",
    "TB_METRICS",
    # this module
    "evaluate", "run_one",
]


def run_one(entry: PolicyEntry, suite: Suite, scenario: Scenario, seed: int, cluster,
            workload, support_lp, slots: int | None = None) -> Run:
    """One run of ``entry`` on ``scenario`` and held-out ``seed`` (its ``workload`` and
    ``cluster`` loaded), by the entry's kind: ``run_ranker`` (``slots``: K, default
    ``rank_slots_bound``), ``run_scheduler`` or ``run_simulator_policy``; ``support_lp``: the
    full LP whose support recall@k is measured against, reset first (its starvation guard
    latches jobs by id as it is asked for each round's shares: a latch must not carry into
    another run, whose job ids start over). Each run starts from a settled heap
    (``settled_heap``)."""
    if support_lp is not None:
        support_lp.reset(None, 0)
    if entry.kind == "ranker" and slots is None and entry.slots is None:
        slots = rank_slots_bound(suite, scenario, cluster, workload)
    with settled_heap():                    # the same starting heap for every run
        if entry.kind == "ranker":
            return run_ranker(entry, suite, scenario, seed, slots, support_lp)
        if entry.kind == "scheduler":
            return run_scheduler(entry, suite, scenario, seed)
        return run_simulator_policy(entry, suite, scenario, seed, cluster, workload,
                                    support_lp)


def _run_task(entry: PolicyEntry, suite: Suite, scenario: Scenario, seed: int, cluster,
              workload, timing_repeats: int = 1) -> dict:
    """A sweep task (``agents.sweep``): ``run_one`` with a new support LP, as a run record
    (``run_to_json``); with ``timing_repeats`` > 1 that many runs one after the other, merged
    (``merge_timing_repeats``)."""
    support_lp = make_policy("heterosched-lp")
    return run_to_json(merge_timing_repeats([
        run_one(entry, suite, scenario, seed, cluster, workload, support_lp)
        for _ in range(timing_repeats)]))


def _ranker_gates(entry: PolicyEntry) -> dict | None:
    """A ``Ranker`` entry's gates, ``{"gate_candidates", "max_kept_fraction",
    "seed_fraction"}`` (a seed-mode ranker: ``max_kept_fraction`` None, it has no unsure
    gate), with ``"audit_every"``, ``"audit_recall"``, ``"audit_start"`` and
    ``"audits_from_file"`` (the file's default, not ``--audit-every``) when it audits;
    ``None`` for any other entry."""
    ranker = entry.ranker
    if ranker is None or not hasattr(ranker, "max_kept_fraction"):
        return None
    seed = getattr(ranker, "mode", "prune") == "seed"
    gates = {"gate_candidates": getattr(ranker, "gate_candidates", None),
             "max_kept_fraction": None if seed else float(ranker.max_kept_fraction)}
    if hasattr(ranker, "seed_fraction"):
        gates["seed_fraction"] = float(ranker.seed_fraction)
    if getattr(ranker, "audit_every", 0):
        gates["audit_every"] = int(ranker.audit_every)
        gates["audit_recall"] = float(ranker.audit_recall)
        gates["audit_start"] = getattr(ranker, "audit_start_in_use", "own")
        gates["audits_from_file"] = bool(getattr(ranker, "audits_from_file", False))
    return gates


def _entry_config(entry: PolicyEntry) -> dict:
    """What decides an entry's runs besides the scenario: its kind and name, and for an
    agent where it came from (a file's content hash, an object's class and module file)."""
    config = {"label": entry.label, "kind": entry.kind, "policy_name": entry.policy_name,
              "slots": entry.slots, "env_kwargs": entry.env_kwargs, "source": entry.source}
    if entry.path:
        config["path"] = entry.path
        config["file_sha256"] = file_fingerprint(entry.path)
    gates = _ranker_gates(entry)
    if gates is not None:
        # the gates exactly (``source`` names them rounded): a gate set by
        # ``--max-kept-fraction`` is not the file's, and a resumed sweep must tell them apart
        config["gates"] = gates
    actor = entry.actor
    if actor is not None and not entry.path:
        cls = type(actor)
        config["class"] = f"{cls.__module__}.{cls.__qualname__}"
        try:
            module_file = inspect.getsourcefile(cls)
        except TypeError:                          # a built-in or dynamically made class
            module_file = None
        config["module_sha256"] = file_fingerprint(module_file) if module_file else None
    return config


def evaluate(suite: Suite | str, policies=None, seeds: int | list[int] | None = None,
             progress: bool | None = None, trust_sb3_zip: bool = False, *,
             backend="serial", runs_dir: str | Path | None = None, resume: bool = False,
             overwrite: bool = False, retries: int = DEFAULT_RETRIES,
             timing_repeats: int = 1, max_kept_fraction: float | None = None,
             seed_fraction: float | None = None, audit_every: int | None = None,
             audit_recall: float | None = None, audit_start: str | None = None) -> Report:
    """Run ``policies`` (names, agent objects and/or ``PolicyEntry`` objects; default
    ``default_policies()``) on every scenario of ``suite`` for each held-out seed (``seeds``:
    a count, or explicit held-out seeds; default the suite's count). ``progress``: a tqdm bar
    on stderr (``None``: only on a terminal). ``trust_sb3_zip``: allow ``sb3:PATH.zip`` items
    (loading a zip runs its pickled code). ``max_kept_fraction``: the unsure gate of every
    ranker file ``policies`` names (``parse_policies``; 1: off), instead of each file's own.
    ``seed_fraction``: the column-generation start of every ranker file named (seed mode's,
    and prune mode's unsure rounds'; ``agents.ranker.Ranker``), instead of the default.
    ``audit_every`` / ``audit_recall`` / ``audit_start``: the audits of every prune-mode
    ranker file named (``agents.ranker.Ranker``; default: each file's own, ``meta
    ["audit_every"]``; 0: none).

    ``backend="serial"`` without ``runs_dir`` (the default): every run here, in order; an
    error in a run stops the evaluation. Otherwise a sweep (``agents.sweep``): each
    (scenario, policy, seed) run is a task on ``backend`` (``"serial"``, ``"ray"`` or a
    backend object such as ``RayBackend(num_cpus=2)``); ``runs_dir``: write each finished run
    there as it completes (one JSON file, ``RunStore``); ``resume``: read the runs already
    there (same configuration) instead of running them again; ``overwrite``: delete the run
    files there first; a failed run is retried ``retries`` times, then listed in
    ``Report.failures`` with its error while the other runs complete. The metrics and
    per-job results of a sweep equal the serial ones; decision and wall times are
    wall-clock.

    ``timing_repeats`` N > 1: every (scenario, policy, seed) run is made N times and its
    decision times are, round by round, those of the median repeat (``merge_timing_repeats``;
    the decisions must repeat exactly, and do for every shipped policy). The serial loop
    interleaves the policies (A, B, A, B, ... for each seed), so that a slow stretch of a
    shared machine falls on all of them; a sweep task makes its N runs one after the other.
    Costs N times the runs; gives decision times, and above all their p99 over a few
    rounds, that one slow round no longer decides."""
    if isinstance(suite, str):
        suite = get_suite(suite)
    if not isinstance(suite, Suite):
        raise ConfigError(f"must be a suite's name or an agents.suites.Suite, got "
                          f"{show(suite)}", field="suite")
    seeds = _evaluation_seeds(suite, seeds)
    if isinstance(timing_repeats, bool) or not isinstance(timing_repeats, (int, np.integer)) \
            or timing_repeats < 1:
        raise ConfigError(f"must be a whole number >= 1, got {timing_repeats!r}",
                          field="--timing-repeats")
    timing_repeats = int(timing_repeats)
    bad = [s for s in seeds if is_training_seed(s) or s not in HELDOUT_SEEDS]
    if bad:
        raise ConfigError(f"evaluation seeds must be held-out ({HELDOUT_SEEDS.start}.."
                          f"{HELDOUT_SEEDS.stop - 1}), not training seeds; got {bad}",
                          field="seeds")
    entries = parse_policies(default_policies() if policies is None else policies,
                             trust_sb3_zip=trust_sb3_zip, max_kept_fraction=max_kept_fraction,
                             seed_fraction=seed_fraction, audit_every=audit_every,
                             audit_recall=audit_recall, audit_start=audit_start)
    for sc in suite.scenarios:              # SB3 models trained on other shapes: fail now
        cluster = get_cluster(sc.cluster)
        for e in entries:
            check_observation(e, sc, cluster)
    if runs_dir is not None and not isinstance(runs_dir, (str, os.PathLike)):
        raise ConfigError(f"must be a folder's path (or None), got {show(runs_dir)}",
                          field="runs_dir")
    if not (is_whole_number(retries) and retries >= 0):
        raise ConfigError(f"must be a whole number >= 0, got {show(retries)}", field="retries")
    sweep = not (isinstance(backend, str) and backend == "serial" and runs_dir is None)
    if sweep:
        return _evaluate_sweep(suite, entries, seeds, progress, make_backend(backend),
                               runs_dir, resume, overwrite, retries, timing_repeats)
    if resume:
        raise ConfigError("resuming needs the run files of an earlier sweep (runs_dir)",
                          field="--resume")
    support_lp = make_policy("heterosched-lp")
    warm_up_process()
    total = len(suite.scenarios) * len(seeds) * len(entries) * timing_repeats
    bar = tqdm(total=total, desc=f"evaluate {suite.name}", unit="run",
               disable=(None if progress is None else not progress), leave=False)
    t_start = time.perf_counter()
    runs: list[Run] = []
    try:
        for sc in suite.scenarios:
            cluster = get_cluster(sc.cluster)
            for seed in seeds:
                workload = sc.load(seed, cluster)
                slots = None
                repeats: list[list[Run]] = [[] for _ in entries]
                for rep in range(timing_repeats):        # the policies interleaved
                    for e, done in zip(entries, repeats):
                        bar.set_postfix_str(f"{sc.name} {e.label} seed {seed}" + (
                            f" repeat {rep + 1}/{timing_repeats}" if timing_repeats > 1
                            else ""))
                        if e.kind == "ranker" and slots is None and e.slots is None:
                            slots = rank_slots_bound(suite, sc, cluster, workload)
                        done.append(run_one(e, suite, sc, seed, cluster, workload,
                                            support_lp, slots))
                        bar.update(1)
                runs.extend(merge_timing_repeats(done) for done in repeats)
    finally:
        bar.close()
    report = _report(suite, entries, seeds, runs, [], time.perf_counter() - t_start)
    report.timing_repeats = timing_repeats
    return report


def _evaluation_seeds(suite: Suite, seeds) -> list[int]:
    """``evaluate``'s ``seeds`` as a list: ``None`` the suite's count, a count the first that
    many held-out seeds, else distinct whole numbers (a repeated seed was run twice and
    averaged as two; ``1000000.7`` ran as 1000000 and ``True`` as one seed)."""
    if seeds is None:
        return heldout_seeds(suite.seeds)
    if is_whole_number(seeds):
        return heldout_seeds(int(seeds))
    if isinstance(seeds, (str, bytes)) or not isinstance(seeds, Iterable):
        raise ConfigError(f"must be a count or a list of held-out seeds, got {show(seeds)}",
                          field="seeds")
    seeds = list(seeds)
    if not seeds:
        raise ConfigError("the list of seeds is empty", field="seeds")
    wrong = [s for s in seeds if not is_whole_number(s)]
    if wrong:
        raise ConfigError(f"seeds must be whole numbers, got {show(wrong[0])}", field="seeds")
    seeds = [int(s) for s in seeds]
    twice = sorted(s for s, n in Counter(seeds).items() if n > 1)
    if twice:
        raise ConfigError(f"seeds must be distinct; repeated: {twice}", field="seeds")
    return seeds


#: The metrics of a run the report reads by name (``agents.report``): a resumed run file
#: without them is run again (it crashed the report of every later ``--resume``).
REPORTED_METRICS = ("jobs_completed", "jobs_total", "rounds")


def _check_run_payload(payload) -> None:
    """A ``ValueError`` unless ``payload`` decodes to a ``Run`` the report can read (a run
    file to resume from: ``agents.sweep.Task.check``)."""
    run = run_from_json(payload)
    missing = [k for k in REPORTED_METRICS if k not in run.metrics]
    if missing:
        raise ValueError(f"its metrics lack {', '.join(missing)}")


def _evaluate_sweep(suite, entries, seeds, progress, backend, runs_dir, resume, overwrite,
                    retries, timing_repeats: int = 1) -> Report:
    """``evaluate`` as a sweep of tasks (``agents.sweep.run_sweep``)."""
    if isinstance(backend, SerialBackend):
        warm_up_process()
    tasks = []
    settings = {"job_candidates": suite.job_candidates, "round_s": suite.round_s,
                "restart_s": suite.restart_s, "topk": suite.topk}
    entry_configs = [_entry_config(e) for e in entries]
    for sc in suite.scenarios:
        cluster = get_cluster(sc.cluster)
        for seed in seeds:
            spec = sc.workload_for(seed)
            workload = sc.load(seed, cluster)
            inputs = {"suite": suite.name, "settings": settings, "cluster": sc.cluster,
                      "cluster_sha256": fingerprint(cluster), "workload": spec,
                      "jobs_sha256": fingerprint(workload.jobs), "max_time_s": sc.max_time_s}
            if timing_repeats > 1:      # (absent at 1: earlier run files stay valid)
                inputs["timing_repeats"] = timing_repeats
            inputs.update(model_files_record(workload.jobs))   # (absent without: the same)
            for e, ec in zip(entries, entry_configs):
                tasks.append(Task(sc.name, e.label, seed, {**inputs, "policy": ec}, _run_task,
                                  (e, suite, sc, seed, cluster, workload, timing_repeats),
                                  check=_check_run_payload))
    store = RunStore(Path(runs_dir)) if runs_dir is not None else None
    result = run_sweep(tasks, backend, store=store, resume=resume, overwrite=overwrite,
                       retries=retries, progress=progress, desc=f"evaluate {suite.name}")
    runs = [run_from_json(o.payload) for o in result.outcomes if o.ok]
    failures = [{"scenario": o.task.scenario, "policy": o.task.policy, "seed": o.task.seed,
                 "error": o.error, "attempts": o.attempts} for o in result.failed]
    report = _report(suite, entries, seeds, runs, failures, result.wall_s)
    report.timing_repeats = timing_repeats
    report.sweep = {"backend": backend.name, "runs_dir": None if store is None else
                    str(store.folder), "tasks": len(tasks), "resumed": result.resumed,
                    "failed": len(failures), "stale_run_files": result.stale,
                    "other_code_runs": result.other_code,
                    "other_environment_runs": result.other_environment}
    return report


def _report(suite, entries, seeds, runs, failures, wall_s) -> Report:
    rows = summarize(suite, entries, runs, failures)
    scenarios = [scenario_summary(sc, [r for r in runs if r.scenario == sc.name])
                 for sc in suite.scenarios]
    sources = {e.label: describe_entry(e) for e in entries
               if e.kind != "simulator" or e.policy is not None}
    gates = {e.label: g for e in entries if (g := _ranker_gates(e)) is not None}
    return Report(suite=suite, seeds=seeds, policies=[e.label for e in entries], runs=runs,
                  rows=rows, scenarios=scenarios, wall_s=wall_s, sources=sources,
                  failures=failures, ranker_gates=gates, environment=environment_record())
