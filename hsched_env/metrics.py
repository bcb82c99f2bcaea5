"""Schedule-quality and decision-cost metrics of a simulation.

Job completion time (JCT) = finish − arrival. Finish-time fairness ρ (Themis, as Gavel and Sia
report it) compares a job's JCT with the time it would take on its fair share: its requested
GPUs of the reference type when it had a cluster share of at least that many GPUs, stretched by
the contention it saw otherwise: ``ρ = JCT / (duration × max(1, contention × requested / G))``,
with ``contention`` the mean number of active jobs over the rounds it was active and ``G`` the
cluster's GPUs. ρ > 1: the job finished later than on its fair share.

``avg_queue_s`` (arrival to first start) is over the jobs that started (``jobs_started`` of
``jobs_total``), as ``avg_jct_s`` is over those that finished: a job that never started is in
neither, so compare the counts beside them. ``stall_rounds``: a run that stalled (jobs waiting
that nothing runs, no arrivals left) ends after that many rounds in which nothing ran; they
count in ``rounds`` and in the decision times.

``lp_solves`` / ``lp_fallbacks`` are the LP policy's counters (``LPPolicy.summary()``: LP
allocations computed, LP parts that fell back to the greedy assignment); they are 0 for policies
without an LP, so the keys always exist.
"""

from __future__ import annotations

import math

import numpy as np

METRIC_KEYS = ("policy", "jobs_total", "jobs_completed", "jobs_started", "avg_jct_s",
               "p50_jct_s", "p99_jct_s", "makespan_s", "avg_queue_s", "gpu_util",
               "restarts_per_job", "ftf_worst", "ftf_mean", "decision_time_mean_s",
               "decision_time_p99_s", "decision_time_max_s", "lp_vars_mean", "rounds",
               "wall_s", "lp_solves", "lp_fallbacks")


def _pct(values: np.ndarray, q: float) -> float:
    return float(np.percentile(values, q)) if values.size else math.nan


def decision_time_metrics(decision_s) -> dict:
    """``decision_time_mean_s``, ``decision_time_p99_s`` and ``decision_time_max_s`` of the
    per-round decision times ``decision_s`` (0 for each when there is no round)."""
    dec = np.asarray(decision_s, dtype=float)
    return {"decision_time_mean_s": float(dec.mean()) if dec.size else 0.0,
            "decision_time_p99_s": _pct(dec, 99) if dec.size else 0.0,
            "decision_time_max_s": float(dec.max()) if dec.size else 0.0}


def finish_time_fairness(rec, cluster_gpus: float) -> float:
    """Finish-time fairness ρ of one completed job (a ``JobRecord``) on a cluster of
    ``cluster_gpus`` GPUs: ``JCT / (duration × max(1, contention × requested / G))``, as in the
    module docstring (``ftf_worst`` / ``ftf_mean`` are the max / mean of it over done jobs)."""
    contention = rec.contention_sum / max(rec.rounds_active, 1)
    fair = rec.duration_s * max(1.0, contention * rec.requested_gpus / cluster_gpus)
    return rec.jct_s / fair


def finished_by_all(finished_ids) -> list[int]:
    """The job ids in every one of ``finished_ids`` (an iterable of each run's finished job
    ids), sorted; ``[]`` for no runs. Policies that finish different jobs (a time window, a
    stalled run) are compared over these: ``hsched evaluate``, ``hsched compare`` and the
    quality benchmark."""
    sets = [set(ids) for ids in finished_ids]
    return sorted(set.intersection(*sets)) if sets else []


def _utilization(result) -> tuple[dict, float]:
    """``({type: utilization}, utilization)``: the cluster's GPU-seconds held (by every job)
    ÷ (capacity × time) over the time GPU use was accounted for — from the first arrival to
    the last completion, or to the end of the last round when the run stopped with jobs
    still holding GPUs. With ``measure_jobs`` the span starts at the first round a measured
    job could run in (``SimResult.measure_start_s``) instead, so the warm-up before the
    measured jobs is not in it; NaN when the run ended before that round, or when nothing
    ran from it on (the span is empty)."""
    caps = np.asarray(result.cluster.capacity_vec, dtype=float)
    types = result.cluster.gpu_types
    busy = np.asarray(result.busy_gpu_s_by_type, dtype=float)
    end = max(result.end_s, result.busy_until_s)
    measured = result.config.measure_jobs is not None
    if measured and (result.measure_start_s is None or end <= result.measure_start_s):
        return {t: math.nan for t in types}, math.nan
    if not measured:
        start = min(r.arrival_s for r in result.jobs)
    else:
        start = result.measure_start_s
        busy = busy - result.busy_before_measure
    span = max(end - start, 1e-9)
    return ({t: float(busy[i] / (caps[i] * span)) for i, t in enumerate(types)},
            float(busy.sum() / (caps.sum() * span)))


def compute_metrics(result) -> dict:
    """Metrics of a ``SimResult`` (over ``measure_jobs`` when set), JSON-ready."""
    recs = result.jobs
    cfg = result.config
    if cfg.measure_jobs is not None:
        a, b = cfg.measure_jobs
        recs = recs[a:b]
    done = [r for r in recs if r.done]
    jct = np.array([r.jct_s for r in done])
    started = [r for r in recs if not math.isnan(r.first_start_s)]
    queue = np.array([r.first_start_s - r.arrival_s for r in started])
    G = float(result.cluster.num_gpus)
    rho = np.array([finish_time_fairness(r, G) for r in done])
    t0 = min(r.arrival_s for r in recs)
    t_end = max([r.finish_s for r in done] or [result.end_s])
    makespan = t_end - t0 if done else math.nan
    util, util_all = _utilization(result)
    dec = np.array(result.decision_s)
    out = {
        "policy": result.policy,
        "jobs_total": len(recs),
        "jobs_completed": len(done),
        "jobs_started": len(started),
        "avg_jct_s": float(jct.mean()) if jct.size else math.nan,
        "p50_jct_s": _pct(jct, 50),
        "p99_jct_s": _pct(jct, 99),
        "makespan_s": makespan,
        "avg_queue_s": float(queue.mean()) if queue.size else math.nan,
        "gpu_util": util_all,
        "gpu_util_by_type": util,
        "restarts_per_job": float(np.mean([r.restarts for r in recs])),
        "ftf_worst": float(rho.max()) if rho.size else math.nan,
        "ftf_mean": float(rho.mean()) if rho.size else math.nan,
        **decision_time_metrics(dec),
        "lp_vars_mean": float(np.mean(result.lp_vars)) if result.lp_vars else 0.0,
        "rounds": result.rounds,
        "rounds_skipped": getattr(result, "rounds_skipped", 0),
        "stall_rounds": getattr(result, "stall_rounds", 0),
        "wall_s": result.wall_s,
    }
    out.update({k: v for k, v in result.extra.items() if k not in out})
    # LP counters exist for every policy (0 for those without an LP), so runs compare
    out.setdefault("lp_solves", 0)
    out.setdefault("lp_fallbacks", 0)
    return out
