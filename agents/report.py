"""What an evaluation reports: ``Report`` (suite, seeds, every run, the seed-averaged rows), the
aggregation of runs into rows (``summarize``: per scenario and policy, with ratios to
``pure-lp``; ``scenario_summary``: what a scenario achieved), and the outputs: ``per_seed_rows``,
``report_json``, the printed tables (``format_report``), ``output_dir`` (where a run writes, never
over an earlier ``metrics.json`` unasked) and ``write_outputs`` (``metrics.json``, TensorBoard
scalars in a new run folder each time, PNG plots). Part of the evaluation harness,
``agents.evaluate``."""

from __future__ import annotations

import json
import math
import os
import shlex
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from agents.plots import plot_decision_vs_jct, plot_jct_cdf
from agents.policy_entries import PolicyEntry
from agents.runners import STEP_CAP, SUPPORT_TINY, Run, round_step_cap
from agents.suites import TRAIN_SEEDS, Scenario, Suite, is_fixed_generated
from hsched_env.errors import ConfigError
from hsched_env.files import missing_parents, usable_path
from hsched_env.metrics import finish_time_fairness, finished_by_all
from hsched_env.simulator import STALL_ROUNDS
from hsched_env.text import counted, format_table


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
    #: per agent (or policy object) label: where it came from, its mode and K
    #: (``describe_entry``)
    sources: dict = field(default_factory=dict)
    #: runs that failed in a sweep (after their retries): scenario, policy, seed, error,
    #: attempts; never in ``runs`` or the rows' averages
    failures: list = field(default_factory=list)
    #: a sweep's backend, run-file folder and counts (``None``: the serial loop)
    sweep: dict | None = None
    #: runs made of each (scenario, policy, seed) for its decision times, merged round by
    #: round (``evaluate(timing_repeats=)``, ``agents.runners.merge_timing_repeats``)
    timing_repeats: int = 1
    #: per ranker label: the gates it ran with (``gate_candidates``, ``max_kept_fraction``;
    #: the file's, or ``--max-kept-fraction``'s)
    ranker_gates: dict = field(default_factory=dict)
    #: where the report was made (``agents.provenance.environment_record``: Python, machine,
    #: processor, library versions; with ``--backend ray`` the driver's)
    environment: dict = field(default_factory=dict)


# ---------------------------------------------------------------------------- aggregation
def _pruned_share(row: dict) -> float:
    """The share of a ranker row's rounds whose keep bits pruned the LP: neither gated (solved
    whole without inference), unsure nor audited (scored, then solved whole)."""
    return max(0.0, 1.0 - (row.get("gated_fraction") or 0.0)
               - (row.get("unsure_fraction") or 0.0) - (row.get("audit_fraction") or 0.0))


def _audit_text(row: dict) -> str:
    """``; audited ...``: a ranker row's audits (``Ranker(audit_every=)``)."""
    recall = row.get("audit_recall_mean")
    return (f"; audited (scored, then solved whole to measure its recall of the LP's support) "
            f"{row['audit_fraction']:.0%}, recall "
            + (f"{recall:.3f} on average" if _is_number(recall) and not math.isnan(recall)
               else "n/a")
            + f", {row.get('audit_failures') or 0} failed in all")


def _nanmean(values) -> float:
    vals = np.asarray([v for v in values if v is not None], dtype=float)
    vals = vals[np.isfinite(vals)]
    return float(vals.mean()) if vals.size else math.nan


#: Keys of the rows (``summarize``, ``per_seed_rows``) that are wall-clock measurements: they
#: differ between two runs of the same scenario (and between backends); the others are a
#: function of the inputs.
WALL_CLOCK_ROW_KEYS = (
    "decision_time_mean_s", "decision_time_p99_s", "lp_decision_time_mean_s",
    "ranker_time_mean_s", "ranker_time_p99_s", "agent_time_mean_s", "agent_time_p99_s",
    "decision_time_ratio", "wall_s", "observation_time_mean_s",
    "decision_with_observation_mean_s", "decision_with_observation_p99_s",
    "decision_with_observation_ratio", "decision_with_observation_p99_ratio")


def _pooled(arrays) -> np.ndarray:
    arrays = [a for a in arrays if a is not None and a.size]
    return np.concatenate(arrays) if arrays else np.zeros(0)


def _with_observation(runs: list[Run]) -> dict:
    """A rank-mode agent's decision time with the environment's time building the
    observations it scored (``Run.observation_s``) added, round by round, pooled over
    ``runs``: ``observation_time_mean_s``, ``decision_with_observation_mean_s`` and
    ``_p99_s`` (None when a run has no observation times: a run file from before them)."""
    if not runs or any(r.observation_s is None or r.observation_s.size != r.decision_s.size
                       for r in runs):
        return {"observation_time_mean_s": None, "decision_with_observation_mean_s": None,
                "decision_with_observation_p99_s": None}
    ob = _pooled([r.observation_s for r in runs])
    both = _pooled([r.decision_s + r.observation_s for r in runs])
    return {"observation_time_mean_s": float(ob.mean()) if ob.size else 0.0,
            "decision_with_observation_mean_s": float(both.mean()) if both.size else 0.0,
            "decision_with_observation_p99_s": (float(np.percentile(both, 99))
                                                if both.size else 0.0)}


def _row(label: str, kind: str, scenario: str, runs: list[Run]) -> dict:
    ms = [r.metrics for r in runs]
    dec = _pooled([r.decision_s for r in runs])
    lp_dec = _pooled([r.lp_decision_s for r in runs])
    row = {
        "scenario": scenario, "policy": label, "kind": kind, "seeds": [r.seed for r in runs],
        "jobs_completed": int(sum(m["jobs_completed"] for m in ms)),
        "jobs_total": int(sum(m["jobs_total"] for m in ms)),
    }
    for key in ("avg_jct_s", "p50_jct_s", "p99_jct_s", "avg_queue_s",
                "avg_time_in_system_s", "gpu_util", "restarts_per_job", "ftf_worst",
                "ftf_mean", "wall_s"):
        row[key] = _nanmean(m.get(key) for m in ms)
    row["jobs_started"] = int(sum(m.get("jobs_started", m["jobs_total"]) for m in ms))
    # a makespan only when every seed has one: the mean of the seeds that finished would
    # read as the row's, while a seed cut off by its window (or an agent's stall) has none;
    # nor when a job was left unfinished (a simulator policy's stall, a job no candidate
    # fits: the last completion is not the schedule's end; ``hsched compare``'s table reads
    # n/a there too; the per-seed rows keep each run's figure, as compare's JSON does)
    spans = [m.get("makespan_s") for m in ms]
    row["makespan_s"] = (float(np.mean(spans)) if spans and all(
        v is not None and math.isfinite(v) for v in spans)
        and row["jobs_completed"] == row["jobs_total"] else math.nan)
    row["rounds"] = float(np.mean([m["rounds"] for m in ms])) if ms else math.nan
    row["lp_fallbacks"] = int(sum(m.get("lp_fallbacks", 0) or 0 for m in ms))
    row["decision_time_mean_s"] = float(dec.mean()) if dec.size else 0.0
    row["decision_time_p99_s"] = float(np.percentile(dec, 99)) if dec.size else 0.0
    row["lp_decision_time_mean_s"] = float(lp_dec.mean()) if lp_dec.size else 0.0
    if kind in ("ranker", "scheduler"):
        rk = _pooled([r.ranker_s for r in runs])
        prefix = "ranker" if kind == "ranker" else "agent"
        row[f"{prefix}_time_mean_s"] = float(rk.mean()) if rk.size else 0.0
        row[f"{prefix}_time_p99_s"] = float(np.percentile(rk, 99)) if rk.size else 0.0
        row["overflow_max"] = max((r.overflow_max or 0 for r in runs), default=0)
        row["slots"] = max((r.slots or 0 for r in runs), default=0)
        row["slots_fixed"] = any(r.slots_fixed for r in runs)
        row["round_candidates_max"] = max((r.round_candidates_max or 0 for r in runs),
                                          default=0)
    if kind == "ranker":
        row.update(_with_observation(runs))
        row["kept_frac_mean"] = _nanmean(r.kept_frac_mean for r in runs)
        ranked = [r.kept_frac_ranked_mean for r in runs if r.kept_frac_ranked_mean is not None]
        row["kept_frac_ranked_mean"] = _nanmean(ranked) if ranked else None
        row["gated_fraction"] = _nanmean(m.get("gated_fraction") for m in ms)
        row["backoff_fraction"] = _nanmean(m.get("backoff_fraction") for m in ms)
        row["unsure_fraction"] = _nanmean(m.get("unsure_fraction") for m in ms)
        if any("audit_fraction" in m for m in ms):
            row["audit_fraction"] = _nanmean(m.get("audit_fraction") for m in ms)
            row["audit_failures"] = int(sum(m.get("audit_failures") or 0 for m in ms))
            recalls = [m.get("audit_recall_mean") for m in ms
                       if m.get("audit_recall_mean") is not None]
            row["audit_recall_mean"] = _nanmean(recalls) if recalls else None
        if any(m.get("seed_mode") for m in ms):
            row["seed_mode"] = True
            row["seed_recall"] = _nanmean(m.get("seed_recall") for m in ms)
    else:
        row["ranker_time_mean_s"] = None
    if kind == "scheduler":
        row["placements"] = int(sum(r.placements or 0 for r in runs))
        row["invalid_actions"] = int(sum(r.invalid_actions or 0 for r in runs))
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


def common_job_stats(runs: list[Run]) -> dict[tuple[str, str, int], dict]:
    """Each run's avg JCT and worst finish-time fairness over the *common* jobs of its
    (scenario, seed): those every policy's run of that scenario and seed finished. Policies
    that finish different jobs are compared on the same ones: a run that also finishes a
    few long jobs the others left unfinished at the window's end would otherwise read a
    higher avg JCT for doing more. Keyed by (scenario, label, seed): ``common_jobs``,
    ``avg_jct_common_s``, ``ftf_worst_common`` (NaN without common jobs, and the fairness
    NaN for a run file without ``cluster_gpus``). A (scenario, seed) that lacks the run of
    a policy that ran elsewhere in the scenario (it failed in a sweep) has no common jobs
    for any policy, so that every policy's seed average is over the same seeds and jobs."""
    groups: dict[tuple[str, int], list[Run]] = {}
    labels: dict[str, set[str]] = {}
    for r in runs:
        groups.setdefault((r.scenario, r.seed), []).append(r)
        labels.setdefault(r.scenario, set()).add(r.label)
    out = {}
    for (scenario, _), group in groups.items():
        done = [{rec.job_id: rec for rec in r.records if rec.done} for r in group]
        common = (finished_by_all(done) if {r.label for r in group} == labels[scenario]
                  else [])
        for r, by_id in zip(group, done):
            recs = [by_id[i] for i in common]
            jct = np.array([rec.jct_s for rec in recs])
            ftf = (np.array([finish_time_fairness(rec, r.cluster_gpus) for rec in recs])
                   if r.cluster_gpus else np.zeros(0))
            out[(r.scenario, r.label, r.seed)] = {
                "common_jobs": len(common),
                "avg_jct_common_s": float(jct.mean()) if jct.size else math.nan,
                "ftf_worst_common": float(ftf.max()) if ftf.size else math.nan}
    return out


def summarize(suite: Suite, entries: list[PolicyEntry], runs: list[Run],
              failures: list[dict] = ()) -> list[dict]:
    """Per scenario and policy, the average over its runs' seeds (``row["seeds"]``); a row's
    ``failed_seeds``: the seeds whose run failed in a sweep (not in the averages)."""
    rows = []
    common = common_job_stats(runs)
    for sc in suite.scenarios:
        block, runs_of = [], {}

        def row_of(e: PolicyEntry, mine: list[Run]) -> dict:
            row = _row(e.label, e.kind, sc.name, mine)
            stats = [common[(r.scenario, r.label, r.seed)] for r in mine]
            row["common_jobs"] = int(sum(c["common_jobs"] for c in stats))
            for key in ("avg_jct_common_s", "ftf_worst_common"):
                row[key] = _nanmean(c[key] for c in stats)
            return row

        for e in entries:
            mine = [r for r in runs if r.scenario == sc.name and r.label == e.label]
            runs_of[e.label] = mine
            row = row_of(e, mine)
            row["failed_seeds"] = [f["seed"] for f in failures
                                   if f["scenario"] == sc.name and f["policy"] == e.label]
            block.append(row)
        ref_entry = next((e for e in entries if e.label == "pure-lp"), None)
        whole_ref = next((r for r in block if r["policy"] == "pure-lp"), None)
        for e, r in zip(entries, block):
            # both sides over the seeds this row and the pure LP share: a run that failed in a
            # sweep leaves either with fewer seeds than the other, and seeds differ in their
            # rounds and jobs (``ratio_seeds``: those seeds; none without a pure-lp)
            ref, own = whole_ref, r
            shared = set(r["seeds"]) & set(ref["seeds"] if ref is not None else ())
            r["ratio_seeds"] = sorted(shared)
            if ref is not None and sorted(r["seeds"]) != sorted(ref["seeds"]):
                same = [x for x in runs_of["pure-lp"] if x.seed in shared]
                mine = [x for x in runs_of[e.label] if x.seed in shared]
                ref = row_of(ref_entry, same) if same else None
                own = row_of(e, mine) if mine else None
            r["avg_jct_ratio"] = _ratio(own and own["avg_jct_s"], ref and ref["avg_jct_s"])
            r["avg_jct_common_ratio"] = _ratio(own and own["avg_jct_common_s"],
                                               ref and ref["avg_jct_common_s"])
            r["decision_time_ratio"] = _ratio(own and own["decision_time_mean_s"],
                                              ref and ref["decision_time_mean_s"])
            _observation_ratios(r, ref, own)
        rows.extend(block)
    return rows


def _observation_ratios(row: dict, ref: dict | None, own: dict | None) -> None:
    """A ranker row's decision time with its observations (``_with_observation``) ÷ the pure
    LP's decision time, mean and p99 (``decision_with_observation_ratio``,
    ``decision_with_observation_p99_ratio``). ``own``: the row's figures over the seeds it
    shares with ``ref`` (``row`` itself when they have the same; ``None``: none in common)."""
    if row.get("decision_with_observation_mean_s") is None:
        return
    row["decision_with_observation_ratio"] = _ratio(
        own and own.get("decision_with_observation_mean_s"),
        ref and ref["decision_time_mean_s"])
    row["decision_with_observation_p99_ratio"] = _ratio(
        own and own.get("decision_with_observation_p99_s"), ref and ref["decision_time_p99_s"])


def _ratio(a, b) -> float:
    if b is None or not b or not math.isfinite(b) or a is None or not math.isfinite(a):
        return math.nan
    return float(a / b)


def scenario_summary(sc: Scenario, runs: list[Run]) -> dict:
    act = _pooled([r.active_jobs.astype(float) for r in runs])
    per_run_mean = [float(r.active_jobs.mean()) for r in runs if r.active_jobs.size]
    cpj = _pooled([r.candidates_per_job.astype(float) for r in runs])
    return {"name": sc.name, "cluster": sc.cluster, "workload": sc.workload,
            "max_time_s": sc.max_time_s, "note": sc.note,
            "fixed_workload": sc.fixed_workload,
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
    common = common_job_stats(report.runs)
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
        # a rank-mode agent's inference (a select-mode agent's is its agent_time_mean_s, as
        # in the seed-averaged rows)
        row["ranker_time_mean_s"] = (float(r.ranker_s.mean()) if r.kind == "ranker"
                                     and r.ranker_s is not None and r.ranker_s.size else None)
        row.update(common[(r.scenario, r.label, r.seed)])
        row["lp_vars_mean"] = float(r.lp_vars.mean()) if r.lp_vars.size else 0.0
        row["recall"] = (None if r.recall is None or not r.recall.size
                         else float(r.recall.mean()))
        row["active_jobs_mean"] = float(r.active_jobs.mean()) if r.active_jobs.size else 0.0
        row["active_jobs_max"] = int(r.active_jobs.max()) if r.active_jobs.size else 0
        row["candidates_per_job_mean"] = float(r.candidates_per_job.mean())
        if r.kind in ("ranker", "scheduler"):
            row["overflow_max"] = r.overflow_max
            row["slots"] = r.slots
            row["slots_fixed"] = r.slots_fixed
            row["round_candidates_max"] = r.round_candidates_max
        if r.kind == "ranker":
            row.update(_with_observation([r]))
            row["kept_frac_mean"] = r.kept_frac_mean
            row["kept_frac_ranked_mean"] = r.kept_frac_ranked_mean
            for key in ("gated_fraction", "backoff_fraction", "unsure_fraction"):
                row[key] = m.get(key)
            for key in ("audit_fraction", "audit_failures", "audit_recall_mean"):
                if key in m:
                    row[key] = m[key]
            if m.get("seed_mode"):
                row["seed_mode"] = True
                row["seed_recall"] = m.get("seed_recall")
        if r.kind == "scheduler":
            row["agent_time_mean_s"] = (float(r.ranker_s.mean()) if r.ranker_s is not None
                                        and r.ranker_s.size else 0.0)
            row["placements"] = r.placements
            row["invalid_actions"] = r.invalid_actions
        out.append(row)
    for row in out:
        ref = next((p for p in out if p["policy"] == "pure-lp" and p["seed"] == row["seed"]
                    and p["scenario"] == row["scenario"]), None)
        row["avg_jct_ratio"] = _ratio(row["avg_jct_s"], ref and ref["avg_jct_s"])
        row["avg_jct_common_ratio"] = _ratio(row["avg_jct_common_s"],
                                             ref and ref["avg_jct_common_s"])
        row["decision_time_ratio"] = _ratio(row["decision_time_mean_s"],
                                            ref and ref["decision_time_mean_s"])
        _observation_ratios(row, ref, row)
    return out


def json_ready(value):
    """``value`` with every non-finite float (NaN, ±inf) as ``None`` and NumPy scalars as
    Python ones, recursively: strict JSON (``json.dumps`` would write a bare ``NaN``)."""
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, dict):
        return {k: json_ready(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [json_ready(v) for v in value]
    if isinstance(value, np.generic):
        return json_ready(value.item())
    return value


def report_json(report: Report) -> dict:
    """The report as one JSON-ready object: suite, seeds, settings, scenarios, rows (seed
    averages) and per_seed rows. Non-finite numbers are ``null``."""
    s = report.suite
    return json_ready({
        "suite": s.name, "description": s.description, "seeds": report.seeds,
        "train_seeds": [TRAIN_SEEDS.start, TRAIN_SEEDS.stop],
        "policies": report.policies, "sources": report.sources,
        "settings": {"job_candidates": s.job_candidates, "round_s": s.round_s,
                     "restart_s": s.restart_s, "topk": s.topk,
                     "ranker_lp": "heterosched-lp", "support_threshold": SUPPORT_TINY,
                     "timing_repeats": report.timing_repeats,
                     "ranker_gates": report.ranker_gates},
        "scenarios": report.scenarios, "rows": report.rows,
        "per_seed": per_seed_rows(report), "failed": report.failures,
        **({"sweep": report.sweep} if report.sweep is not None else {}),
        "environment": report.environment, "wall_s": report.wall_s})


def _fmt(v, scale=1.0, digits=2, na="n/a") -> str:
    if not _is_number(v):
        return na
    return f"{v * scale:.{digits}f}"


def _is_number(v) -> bool:
    """A figure to print: not ``None`` and, for a float, finite."""
    return v is not None and not (isinstance(v, float) and not math.isfinite(v))


#: End reasons of a run that went as far as its scenario lets it ("stalled": nobody ran
#: jobs that waited for 1000 rounds — normal for a simulator policy that cannot place them,
#: early for an agent, which chose not to).
_NORMAL_ENDS = ("completed", "time_limit")
_NORMAL_POLICY_ENDS = _NORMAL_ENDS + ("stalled",)


def _early_end_reason(reason: str, slots) -> str:
    """One early end of an agent's run, named and explained for the report's note."""
    if reason == STEP_CAP:
        return (f"{STEP_CAP}: a round took {round_step_cap(slots)} steps without a commit")
    if reason == "stalled":
        return (f"stalled: no job ran for {STALL_ROUNDS:,} rounds with jobs waiting and no "
                f"arrivals left")
    return f"{reason}: the environment ended the episode"


def format_report(report: Report) -> str:
    """The printed tables: one per scenario, seed-averaged rows."""
    s = report.suite
    n_seeds = len(report.seeds)
    lines = [(f"suite {s.name}: {s.description}; {n_seeds} held-out "
              f"seed{'' if n_seeds == 1 else 's'} ({', '.join(map(str, report.seeds))}); "
              f"{s.round_s:.0f} s rounds, restart "
              f"{s.restart_s:.0f} s, {s.job_candidates} planner candidates per job "
              "(plus the requested and Sia's configurations)")]
    if report.timing_repeats > 1:
        lines.append(f"  decision times: per round those of the median of {report.timing_repeats} "
                     f"runs (by the round's total) of each (scenario, policy, seed), which made "
                     f"the same decisions")
    for label, src in report.sources.items():
        lines.append(f"  {label}: {src}")
    headers = ["policy", "done", "avg JCT h", "p99 JCT h", "makespan h", "in-sys h",
               "FTF worst", "decide ms", "p99 ms", "LP vars", "JCT ×LP", "time ×LP",
               "recall@k"]
    for sc in report.scenarios:
        window = (f", first {sc['max_time_s'] / 3600:g} h" if sc["max_time_s"] else "")
        if sc.get("fixed_workload"):
            window += (" (a fixed workload: the same jobs on every seed"
                       if len(report.seeds) > 1 else " (a fixed workload")
            if is_fixed_generated(sc["workload"]):
                # the seeds above are the episodes'; its jobs are not a held-out draw
                window += "; its jobs drawn with the spec's own seed=, not a held-out seed"
            window += ")"
        lines.append("")
        lines.append(f"{sc['name']}: {sc['workload']} on {sc['cluster']}{window} — active jobs "
                     f"mean {sc['active_jobs_mean']:.0f} (lowest run "
                     f"{sc['active_jobs_mean_min_over_runs']:.0f}), max "
                     f"{sc['active_jobs_max']}; candidates per job mean "
                     f"{sc['candidates_per_job_mean']:.1f} (min {sc['candidates_per_job_min']})")
        table = []
        notes = []
        ref_ran = any(r["policy"] == "pure-lp" and r["seeds"] for r in report.rows
                      if r["scenario"] == sc["name"])
        for r in (r for r in report.rows if r["scenario"] == sc["name"]):
            done = f"{r['jobs_completed']}/{r['jobs_total']}"
            if r.get("failed_seeds"):
                done = ("FAILED" if not r["seeds"] else
                        f"{done} ({len(r['failed_seeds'])} seed(s) failed)")
            if not r["seeds"]:                   # no run to take figures from
                table.append([r["policy"], done] + ["n/a"] * 11)
                continue
            table.append([
                r["policy"], done,
                _fmt(r["avg_jct_s"], 1 / 3600), _fmt(r["p99_jct_s"], 1 / 3600),
                _fmt(r["makespan_s"], 1 / 3600, 1), _fmt(r["avg_time_in_system_s"], 1 / 3600),
                _fmt(r["ftf_worst"]), _fmt(r["decision_time_mean_s"], 1e3, 1),
                _fmt(r["decision_time_p99_s"], 1e3, 1), f"{r['lp_vars_mean']:.0f}",
                _fmt(r["avg_jct_common_ratio"]), _fmt(r["decision_time_ratio"]),
                _fmt(r["recall"], 1, 3)])
            shared = r.get("ratio_seeds")
            if ref_ran and shared is not None and sorted(shared) != sorted(r["seeds"]):
                # a run of pure-lp failed (a sweep): the ratios are over the seeds both ran
                notes.append(f"{r['policy']}: JCT ×LP and time ×LP over "
                             + (f"the {counted(len(shared), 'seed')} pure-lp also ran "
                                f"({', '.join(map(str, shared))}), of its {len(r['seeds'])}"
                                if shared else "no seed: pure-lp ran none of its seeds"))
            if r["kind"] == "ranker":
                notes.append(f"{r['policy']}: decision = LP "
                             f"{r['lp_decision_time_mean_s'] * 1e3:.1f} ms + ranker "
                             f"{r['ranker_time_mean_s'] * 1e3:.1f} ms per round "
                             f"(mean); "
                             + (f"seed mode, the LP solves every round whole: "
                                f"{r['kept_frac_mean']:.1%} of the candidates were its start "
                                f"(used by column generation, on LPs of 2,000 columns or "
                                f"more), "
                                + (f"holding {_fmt(r['seed_recall'], 1, 3)} of its support in "
                                   f"the rounds it ranked" if _is_number(r.get("seed_recall"))
                                   and not math.isnan(r["seed_recall"])
                                   else "ranking no round")
                                if r.get("seed_mode") else
                                f"kept {r['kept_frac_mean']:.1%} of the candidates"
                                + (f" ({r['kept_frac_ranked_mean']:.1%} in the rounds it "
                                   f"pruned)"
                                   if (r.get("gated_fraction") or r.get("unsure_fraction")
                                       or r.get("audit_fraction"))
                                   and r.get("kept_frac_ranked_mean") is not None else ""))
                             + f"; gated (solved whole without inference) "
                             f"{r.get('gated_fraction') or 0:.0%} of the rounds"
                             + (f" ({r['backoff_fraction']:.0%} in the back-off after an "
                                f"unsure round" + (" or a failed audit" if "audit_fraction" in r
                                                   else "") + ")"
                                if r.get("backoff_fraction") else "")
                             + (f"; unsure (scored, then solved whole: it would have kept "
                                f"more than its max_kept_fraction) {r['unsure_fraction']:.0%}"
                                if r.get("unsure_fraction") else "")
                             + (_audit_text(r) if "audit_fraction" in r else "")
                             + (f"; pruned {_pruned_share(r):.0%}"
                                if r.get("unsure_fraction") or "audit_fraction" in r else "")
                             + f"; slot overflow {r['overflow_max']}")
                if r.get("observation_time_mean_s"):      # it ranked some rounds
                    notes.append(
                        f"{r['policy']}: + its observations (the environment's candidate "
                        f"slots and features) {r['observation_time_mean_s'] * 1e3:.1f} ms per "
                        f"round on average (a gated round counts 0), not in 'decide ms'"
                        + (f"; with them {_fmt(r['decision_with_observation_ratio'])}× the "
                           f"pure LP's mean time, p99 "
                           f"{_fmt(r['decision_with_observation_p99_ratio'])}×"
                           if _is_number(r.get("decision_with_observation_ratio"))
                           else " (no pure-lp in the run to compare with)"))
            if r["kind"] == "scheduler":
                notes.append(f"{r['policy']}: decision = environment "
                             f"{r['lp_decision_time_mean_s'] * 1e3:.1f} ms (filling the slots) "
                             f"+ agent {r['agent_time_mean_s'] * 1e3:.1f} ms per round (mean); "
                             f"{r['placements']} placements, {r['invalid_actions']} invalid "
                             f"actions; slot overflow {r['overflow_max']}")
            if r.get("slots_fixed") or r.get("overflow_max"):
                cut = (f"; the lowest-ranked were cut (overflow up to {r['overflow_max']}): "
                       f"K >= {r['round_candidates_max']} shows every candidate"
                       if r["overflow_max"] else "")
                who = "fixed by the agent" if r.get("slots_fixed") else "the environment's default"
                notes.append(f"{r['policy']}: K = {r['slots']} slots, {who}; "
                             f"rounds had up to {r['round_candidates_max']} candidates{cut}")
            normal = _NORMAL_POLICY_ENDS if r.get("kind") == "simulator" else _NORMAL_ENDS
            if r.get("kind") == "simulator" and "stalled" in r.get("end_reasons", ()):
                never = r["jobs_total"] - r.get("jobs_started", r["jobs_total"])
                notes.append(f"{r['policy']}: stalled (no job ran for {STALL_ROUNDS:,} rounds "
                             f"with jobs waiting and no arrivals left): those rounds count "
                             f"in its decide ms, and its unfinished jobs have no JCT and are "
                             f"not in in-sys h, so it has no makespan"
                             + (f" (never started: {never} of {r['jobs_total']})"
                                if never > 0 else ""))
            early = [e for e in r.get("end_reasons", ()) if e not in normal]
            if early:                     # each reason, in its own words (seeds may differ)
                why = "; ".join(_early_end_reason(e, r.get("slots")) for e in early)
                notes.append(f"{r['policy']}: ended early ({why}); the metrics cover the "
                             f"rounds before, unfinished jobs count in in-sys h up to then")
            if r.get("lp_fallbacks"):
                notes.append(f"{r['policy']}: {r['lp_fallbacks']} LP parts fell back to the "
                             f"greedy assignment (see docs/lp.md)")
        lines.append(format_table(headers, table))
        common = [r["common_jobs"] for r in report.rows
                  if r["scenario"] == sc["name"] and r["seeds"]]
        if common:
            lines.append(f"JCT ×LP over the {common[0]} jobs every policy finished "
                         f"(summed over the seeds; the ratio is of the seeds' mean avg JCT "
                         f"over each seed's common jobs)")
        lines.extend(notes)
        for f in (f for f in report.failures if f["scenario"] == sc["name"]):
            lines.append(f"{f['policy']} seed {f['seed']}: FAILED after {f['attempts']} "
                         f"attempt(s): {f['error']}")
    lines.append("")
    lines.append("JCT ×LP: avg JCT over the jobs every policy of a seed finished, ratio to "
                 "pure-lp's over the same jobs (avg JCT h: over each policy's own finished "
                 "jobs); in-sys h: avg time in the system, unfinished jobs counted up to the "
                 "run's end; with several seeds avg JCT h, p99 JCT h, makespan h, in-sys h and "
                 "FTF worst (of each seed's worst job) are means of the seeds' figures, and "
                 "JCT ×LP the ratio of the seeds' means over each seed's common jobs; decide "
                 "ms and p99 ms over all rounds of all seeds, time ×LP the ratio of those "
                 "means to pure-lp's; recall@k: share of the full LP's support the policy "
                 "kept, over all rounds (n/a: POP, Gavel, non-LP, select-mode agents; 1 in "
                 "seed mode, whose LP considers every candidate); one run's times move with "
                 "the machine's load (--timing-repeats N takes each round's median of N)")
    return "\n".join(lines)


METRICS_FILE = "metrics.json"


def output_dir(out: str | Path | None, suite_name: str, overwrite: bool = False) -> Path:
    """Where an evaluation writes (``hsched evaluate --out``): ``out`` itself, unless it
    already holds a ``metrics.json`` (a ``ConfigError`` naming ``--overwrite``, unless
    ``overwrite``); without ``out``, ``runs/eval-<suite>``, or when that holds an earlier
    evaluation's ``metrics.json`` the first free ``runs/eval-<suite>-2``, ``-3``, …
    (``overwrite``: ``runs/eval-<suite>`` itself)."""
    return claim_output_dir(out, suite_name, overwrite)[0]


def claim_output_dir(out: str | Path | None, suite_name: str,
                     overwrite: bool = False) -> tuple[Path, list[Path], Path | None]:
    """``output_dir``, and what choosing it created: the folders it made (deepest first; a
    default folder is made and claimed at once) and the claim file it wrote (``None`` for
    ``out`` or ``overwrite``, which claim nothing), so that a run that fails can remove
    exactly those."""
    if out is not None:
        path = usable_path(Path(out), field="--out", what="the output folder")
        if (path / METRICS_FILE).exists() and not overwrite:
            raise ConfigError(f"{str(path)!r} already holds a {METRICS_FILE} of an earlier "
                              f"evaluation: pass --overwrite to replace it (and the plots; "
                              f"TensorBoard runs are kept side by side), or choose another "
                              f"--out", field="--out")
        return path, [], None
    base = Path("runs") / f"eval-{suite_name}"
    if overwrite:
        return base, [], None
    path, i = base, 2
    while True:
        missing = missing_parents(path)             # what claiming it will create
        if _claim(path):
            return path, missing, path / CLAIM_FILE
        path = base.with_name(f"{base.name}-{i}")
        i += 1


#: Created (exclusively) in a default output folder when an evaluation chooses it, so that two
#: evaluations started together never pick the same folder.
CLAIM_FILE = ".evaluation"


def _claim(path: Path) -> bool:
    """Take ``path`` for this evaluation: ``False`` when an earlier evaluation wrote or
    claimed it."""
    if (path / METRICS_FILE).exists():
        return False
    path.mkdir(parents=True, exist_ok=True)
    try:
        with open(path / CLAIM_FILE, "x") as fh:
            fh.write(f"claimed by pid {os.getpid()}\n")
    except FileExistsError:
        return False
    return True


def write_outputs(report: Report, out: Path, data: dict | None = None,
                  overwrite: bool = False) -> list[Path]:
    """``metrics.json``, TensorBoard scalars and PNG plots under ``out``. The TensorBoard
    events go to a new run folder ``tb/<YYYYmmdd-HHMMSS>-<suite>/<scenario>/`` each time, so
    repeated evaluations into one folder stay apart. ``overwrite=False``: a ``ConfigError``
    when ``out`` already holds a ``metrics.json`` (``hsched evaluate`` checks this with
    ``output_dir`` before it runs)."""
    out = Path(out)
    if not overwrite:
        output_dir(out, report.suite.name, overwrite=False)
    out.mkdir(parents=True, exist_ok=True)
    data = report_json(report) if data is None else data
    written = []
    path = out / METRICS_FILE
    path.write_text(json.dumps(data, indent=1))
    written.append(path)
    written.append(_write_tensorboard(report, data, _tb_run_dir(out / "tb", report.suite.name)))
    written.append(plot_decision_vs_jct(report, out / "decision_vs_jct.png"))
    written.append(plot_jct_cdf(report, out / "jct_cdf.png"))
    return written


def _tb_run_dir(tb: Path, suite_name: str) -> Path:
    """A new folder under ``tb``: ``<YYYYmmdd-HHMMSS>-<suite>`` (``-2``, … when taken)."""
    base = f"{time.strftime('%Y%m%d-%H%M%S')}-{suite_name}"
    path, i = tb / base, 2
    while path.exists():
        path = tb / f"{base}-{i}"
        i += 1
    return path


TB_METRICS = (("avg_jct_h", "avg_jct_s", 1 / 3600), ("p99_jct_h", "p99_jct_s", 1 / 3600),
              ("makespan_h", "makespan_s", 1 / 3600), ("ftf_worst", "ftf_worst", 1.0),
              ("decision_time_ms", "decision_time_mean_s", 1e3),
              ("decision_time_p99_ms", "decision_time_p99_s", 1e3),
              ("lp_vars", "lp_vars_mean", 1.0), ("recall", "recall", 1.0),
              ("avg_jct_ratio", "avg_jct_ratio", 1.0),
              ("avg_jct_common_ratio", "avg_jct_common_ratio", 1.0),
              ("decision_time_ratio", "decision_time_ratio", 1.0),
              ("observation_time_ms", "observation_time_mean_s", 1e3),
              ("decision_with_observation_ratio", "decision_with_observation_ratio", 1.0),
              ("gated_fraction", "gated_fraction", 1.0),
              ("unsure_fraction", "unsure_fraction", 1.0),
              ("backoff_fraction", "backoff_fraction", 1.0),
              ("audit_fraction", "audit_fraction", 1.0),
              ("audit_recall_mean", "audit_recall_mean", 1.0))


def tensorboard_command(logdir) -> str:
    """The command that opens ``logdir`` in TensorBoard: the ``tensorboard`` installed beside
    this Python (a virtual environment's, which need not be on ``PATH``), else the bare name."""
    beside = Path(sys.executable).with_name("tensorboard")
    program = shlex.quote(str(beside)) if beside.exists() else "tensorboard"
    return f"{program} --logdir {shlex.quote(str(logdir))}"    # a path with spaces, as typed


def _write_tensorboard(report: Report, data: dict, path: Path) -> Path:
    """Under ``path`` (this evaluation's run folder), per scenario a run directory: scalars
    ``eval/<policy>/<metric>`` (step = seed index; at step ``len(seeds)`` the table row's
    figure over all seeds, which for a ratio or a per-round time is not the mean of the
    seeds' points) and ``add_hparams`` with the suite and seeds."""
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
