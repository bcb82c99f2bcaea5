"""The evaluation harness (``agents.evaluate``, ``hsched evaluate``): the smoke suite end to end,
held-out seeds, scenario equality between the simulator and RankEnv, recall@k, outputs, CLI."""

from __future__ import annotations

import dataclasses
import json
import math
import sys
import types

import numpy as np
import pytest

from agents.evaluate import (
    HELDOUT_SEEDS,
    SMOKE,
    SUITES,
    TRAIN_SEEDS,
    evaluate,
    format_report,
    heldout_seeds,
    is_training_seed,
    report_json,
    write_outputs,
)
from agents.policy_entries import PolicyEntry
from hsched_cli.main import main
from hsched_env.errors import ConfigError

slow = pytest.mark.slow

ROW_KEYS = {"scenario", "policy", "kind", "seeds", "jobs_completed", "jobs_total", "avg_jct_s",
            "p99_jct_s", "makespan_s", "ftf_worst", "decision_time_mean_s",
            "decision_time_p99_s", "lp_decision_time_mean_s", "ranker_time_mean_s",
            "lp_vars_mean", "avg_jct_ratio", "avg_jct_common_ratio", "common_jobs",
            "decision_time_ratio", "recall",
            "active_jobs_mean", "active_jobs_max", "candidates_per_job_mean"}


class TopPerJobRanker:
    """Stand-in for ``agents.ranker.Ranker``: keeps each job's ``k`` fastest candidates."""

    def __init__(self, k: int = 4, name: str = "top4-standin") -> None:
        self.k, self.name = k, name

    def keep(self, obs, env):
        u = env.unwrapped
        feats = np.asarray(obs["candidates"]).reshape(u.candidate_shape)
        score = feats[:, u.feature_names.index("throughput_norm")]
        jobs = u.slot_jobs()
        order = np.lexsort((-score, jobs))
        jo = jobs[order]
        first = np.r_[0, np.flatnonzero(np.diff(jo)) + 1]
        rank = np.arange(order.size) - np.repeat(first, np.diff(np.r_[first, order.size]))
        keep = np.zeros(u.K, dtype=np.int8)
        keep[order[(rank < self.k) & (jo >= 0)]] = 1
        return keep


class ReferenceRanker:
    """Keeps the LP's support each round (``RankEnv.reference_action``)."""

    name = "reference"

    def keep(self, obs, env):
        return env.unwrapped.reference_action()


@pytest.fixture(scope="module")
def report():
    return evaluate(SMOKE, ["pure-lp", "topk", "fifo", TopPerJobRanker(), ReferenceRanker()],
                    progress=False)


def _row(report, policy):
    return next(r for r in report.rows if r["policy"] == policy)


@slow
def test_smoke_suite_table_and_json(report):
    assert report.seeds == heldout_seeds(SMOKE.seeds)
    assert [r["policy"] for r in report.rows] == ["pure-lp", "topk", "fifo",
                                                   "ranker:top4-standin", "ranker:reference"]
    for r in report.rows:
        assert ROW_KEYS <= r.keys()
        assert r["jobs_completed"] == r["jobs_total"] == 30
        assert r["decision_time_mean_s"] > 0 and r["avg_jct_s"] > 0
    assert _row(report, "pure-lp")["avg_jct_ratio"] == pytest.approx(1.0)
    assert _row(report, "pure-lp")["decision_time_ratio"] == pytest.approx(1.0)
    assert _row(report, "fifo")["lp_vars_mean"] == 0 and _row(report, "fifo")["recall"] is None
    assert report.scenarios[0]["candidates_per_job_min"] >= SMOKE.job_candidates
    text = format_report(report)
    for word in ("policy", "avg JCT h", "p99 JCT h", "makespan h", "FTF worst", "decide ms",
                 "p99 ms", "LP vars", "JCT ×LP", "time ×LP", "recall@k", "ranker:top4-standin",
                 "slot overflow 0"):
        assert word in text
    data = json.loads(json.dumps(report_json(report)))      # JSON-ready, NaN as null
    assert {"suite", "seeds", "rows", "per_seed", "scenarios", "settings"} <= data.keys()
    assert data["suite"] == "smoke" and len(data["per_seed"]) == 5
    assert data["environment"]["libraries"]["numpy"] == np.__version__   # where it was made
    # every policy finished every job here: the common jobs are all of them
    for r in data["rows"] + data["per_seed"]:
        assert r["common_jobs"] == 30
        assert r["avg_jct_common_s"] == pytest.approx(r["avg_jct_s"])
        assert r["ftf_worst_common"] == pytest.approx(r["ftf_worst"])
    assert "JCT ×LP over the 30 jobs every policy finished" in text


@slow
def test_ranker_decision_time_is_lp_plus_inference(report):
    for label in ("ranker:top4-standin", "ranker:reference"):
        r = _row(report, label)
        assert r["overflow_max"] == 0
        assert r["ranker_time_mean_s"] > 0
        assert r["decision_time_mean_s"] == pytest.approx(
            r["lp_decision_time_mean_s"] + r["ranker_time_mean_s"], rel=1e-9)
    standin = _row(report, "ranker:top4-standin")
    assert 0 < standin["kept_frac_mean"] < 0.5
    assert standin["lp_vars_mean"] < _row(report, "pure-lp")["lp_vars_mean"]


@slow
def test_ranker_observation_time_is_reported_beside_the_decision(report):
    """A rank-mode agent's observations (the environment's candidate slots and features)
    are timed per round and reported beside its decision time, with the decision time they
    add up to and its ratio to the pure LP's; not for the simulator policies."""
    lp = _row(report, "pure-lp")
    assert lp.get("observation_time_mean_s") is None
    for label in ("ranker:top4-standin", "ranker:reference"):
        r = _row(report, label)
        assert r["observation_time_mean_s"] > 0
        assert r["decision_with_observation_mean_s"] == pytest.approx(
            r["decision_time_mean_s"] + r["observation_time_mean_s"], rel=1e-9)
        assert r["decision_with_observation_ratio"] == pytest.approx(
            r["decision_with_observation_mean_s"] / lp["decision_time_mean_s"])
        assert r["decision_with_observation_p99_s"] >= r["decision_time_p99_s"]
    run = next(x for x in report.runs if x.label == "ranker:top4-standin")
    assert run.observation_s.shape == run.decision_s.shape and (run.observation_s > 0).all()
    text = format_report(report)
    assert "ranker:top4-standin: + its observations" in text and "not in 'decide ms'" in text
    per_seed = [x for x in report_json(report)["per_seed"] if x["policy"] == "ranker:reference"]
    assert per_seed[0]["observation_time_mean_s"] > 0
    assert per_seed[0]["decision_with_observation_ratio"] > per_seed[0]["decision_time_ratio"]


def test_a_gated_rounds_observation_is_not_counted():
    """The rounds a ranker's gate solves whole use no features: their observation time is 0,
    and a ranker gated on every round reports none (and no line for it)."""
    from agents.ranker import GATE_NEVER, Ranker, RankerNet
    rep = evaluate(SMOKE, ["pure-lp", Ranker(RankerNet(hidden=8), name="gated",
                                             gate_candidates=GATE_NEVER)], progress=False)
    run = next(x for x in rep.runs if x.label == "ranker:gated")
    assert run.observation_s.shape == run.decision_s.shape and not run.observation_s.any()
    r = _row(rep, "ranker:gated")
    assert r["observation_time_mean_s"] == 0.0
    assert r["decision_with_observation_mean_s"] == pytest.approx(r["decision_time_mean_s"])
    assert "its observations" not in format_report(rep)


def test_runs_without_observation_times_report_none():
    """A rank-mode run read from a run file written before the observation times (no
    ``observation_s``) gives no observation figures rather than wrong ones."""
    from agents.report import summarize
    from agents.suites import Scenario, Suite
    suite = Suite("t", (Scenario("s", "sia-64", "gavel:jobs=3"),), seeds=2)
    runs = []
    for seed in (1, 2):
        lp = _run("pure-lp", seed, [3600])
        lp.decision_s = lp.lp_decision_s = np.array([0.010, 0.020])
        rk = _run("ranker", seed, [3600])
        rk.kind = "ranker"
        rk.decision_s = rk.lp_decision_s = np.array([0.004, 0.008])
        rk.ranker_s = np.array([0.001, 0.001])
        rk.observation_s = np.array([0.002, 0.0])
        runs += [lp, rk]
    entries = [PolicyEntry("pure-lp", "simulator", "heterosched-lp"),
               PolicyEntry("ranker", "ranker", None)]
    row = summarize(suite, entries, runs, [])[1]
    assert row["observation_time_mean_s"] == pytest.approx(0.001)
    assert row["decision_with_observation_mean_s"] == pytest.approx((0.006 + 0.008) * 2 / 4)
    assert row["decision_with_observation_ratio"] == pytest.approx(0.007 / 0.015)
    runs[-1].observation_s = None
    row = summarize(suite, entries, runs, [])[1]
    assert row["observation_time_mean_s"] is None
    assert "decision_with_observation_ratio" not in row


def test_each_run_starts_from_a_settled_heap(monkeypatch):
    """``settled_heap``: earlier garbage is collected before the run, everything alive is
    frozen during it (the collector does not rescan it inside the run's decisions) and
    unfrozen after, also after an error; a process with frozen objects of its own keeps
    managing them (nothing more frozen). ``run_one`` uses it for every kind of run."""
    import gc
    import weakref
    from agents import evaluate as ev
    from agents.runners import settled_heap

    class Node:
        pass

    a = Node()
    a.self = a                                   # a cycle: only the collector frees it
    dead = weakref.ref(a)
    del a
    gc.disable()                                 # nothing collects it by chance meanwhile
    try:
        assert dead() is not None
        assert gc.get_freeze_count() == 0
        with settled_heap():
            assert dead() is None                # collected before the run
            assert gc.get_freeze_count() > 0     # the rest frozen during it
        assert gc.get_freeze_count() == 0
        with pytest.raises(RuntimeError):
            with settled_heap():
                raise RuntimeError("a failed run")
        assert gc.get_freeze_count() == 0        # unfrozen after an error too
        gc.freeze()                              # the process's own frozen objects
        own = gc.get_freeze_count()
        # nothing more frozen (a frozen object whose last reference another thread drops
        # meanwhile leaves the count: ci-local once read 475,999 against 476,001)
        with settled_heap():
            assert gc.get_freeze_count() <= own
        assert 0 < gc.get_freeze_count() <= own  # and still frozen: not unfrozen by it
    finally:
        gc.unfreeze()
        gc.enable()
    seen = []

    def fake_run(*args, **kwargs):
        seen.append(gc.get_freeze_count())
        return "run"

    for name in ("run_simulator_policy", "run_ranker", "run_scheduler"):
        monkeypatch.setattr(ev, name, fake_run)
    for kind in ("simulator", "ranker", "scheduler"):
        entry = types.SimpleNamespace(kind=kind, slots=None)
        assert ev.run_one(entry, None, None, 0, None, None, None, slots=8) == "run"
    assert len(seen) == 3 and min(seen) > 0 and gc.get_freeze_count() == 0


@slow
def test_recall(report):
    assert _row(report, "pure-lp")["recall"] == 1.0
    assert 0 < _row(report, "topk")["recall"] <= 1.0
    assert 0 < _row(report, "ranker:top4-standin")["recall"] <= 1.0
    # keeping the LP's support recalls all of it (the same solve, deterministic)
    assert _row(report, "ranker:reference")["recall"] >= 0.99


@slow
def test_rank_env_and_simulator_see_the_same_scenario(report):
    """RankEnv(workload without seed).reset(seed=s) ≡ the simulator on '<workload>,seed=s':
    keeping the LP's support reproduces the pure LP (same jobs, avg JCT within 3%)."""
    runs = {r.label: r for r in report.runs}
    lp, ref = runs["pure-lp"], runs["ranker:reference"]
    key = [(j.job_id, j.model, j.arrival_s, j.work_samples) for j in lp.records]
    assert key == [(j.job_id, j.model, j.arrival_s, j.work_samples) for j in ref.records]
    assert np.array_equal(np.sort(lp.candidates_per_job), np.sort(ref.candidates_per_job))
    a, b = lp.metrics["avg_jct_s"], ref.metrics["avg_jct_s"]
    assert abs(b - a) / a < 0.03


@slow
def test_outputs(report, tmp_path):
    written = write_outputs(report, tmp_path / "eval")
    out = tmp_path / "eval"
    data = json.loads((out / "metrics.json").read_text())
    assert data["suite"] == "smoke" and data["rows"][0]["policy"] == "pure-lp"
    for png in ("decision_vs_jct.png", "jct_cdf.png"):
        assert (out / png).read_bytes()[:4] == b"\x89PNG"
    assert list((out / "tb").rglob("events.out.tfevents*"))
    assert all(p.exists() for p in written)


def _run(label, seed, finished, scenario="s"):
    """A Run whose jobs 0..len(finished)-1 arrived at 0 and finished at ``finished`` (NaN: not
    finished); each ran alone on 1 of 8 GPUs for 1 h (so its fairness is its JCT in hours)."""
    from agents.runners import Run
    from hsched_env.simulator import JobRecord
    recs = [JobRecord(job_id=i, name=f"j{i}", model="m", arrival_s=0.0, work_samples=1.0,
                      duration_s=3600.0, requested_gpus=1, finish_s=f, contention_sum=1.0,
                      rounds_active=1) for i, f in enumerate(finished)]
    empty = np.zeros(0)
    done = [r for r in recs if r.done]
    metrics = {"jobs_total": len(recs), "jobs_completed": len(done), "rounds": 1,
               "avg_jct_s": float(np.mean([r.jct_s for r in done])) if done else float("nan")}
    return Run(scenario=scenario, label=label, kind="simulator", seed=seed, metrics=metrics,
               jct_s=np.array([r.jct_s for r in recs if r.done]), decision_s=empty,
               lp_decision_s=empty, ranker_s=None, lp_vars=empty, recall=None,
               active_jobs=empty, candidates_per_job=np.array([16]), end_reason="time_limit",
               records=recs, cluster_gpus=8)


def test_a_job_arriving_at_the_windows_end_is_not_in_the_system():
    """The simulator never admits a job arriving at the limit itself: it is not counted in
    the time in system (it was, with 0 s, halving the average of a one-job run)."""
    from agents.runners import _finish_metrics
    nan = float("nan")
    run = _run("p", 1, [1793.38, nan])
    run.records[1] = dataclasses.replace(run.records[1], arrival_s=2000.0)
    m = _finish_metrics(run.metrics, "p", run.records, 2000.0, "time_limit")
    assert m["avg_time_in_system_s"] == pytest.approx(1793.38)
    run.records[1] = dataclasses.replace(run.records[1], arrival_s=1999.0)   # arrived: 1 s
    m = _finish_metrics(run.metrics, "p", run.records, 2000.0, "time_limit")
    assert m["avg_time_in_system_s"] == pytest.approx((1793.38 + 1.0) / 2)


def test_a_rows_makespan_needs_every_seeds():
    """A row's makespan is the seeds' mean only when every seed has one: one seed cut off by
    its window (or an agent's stall) makes it n/a, not the mean of the others."""
    from agents.report import _row
    nan = float("nan")
    whole = [_run("p", 1, [3600.0]), _run("p", 2, [7200.0])]
    for run, span in zip(whole, (3600.0, 7200.0)):
        run.metrics["makespan_s"] = span
    assert _row("p", "simulator", "s", whole)["makespan_s"] == 5400.0
    cut = _run("p", 3, [3600.0, nan])
    cut.metrics["makespan_s"] = nan
    assert math.isnan(_row("p", "simulator", "s", whole + [cut])["makespan_s"])
    assert _row("p", "simulator", "s", whole + [cut])["avg_jct_s"] == pytest.approx(
        (3600.0 + 7200.0 + 3600.0) / 3)             # the other columns: over the seeds that have one


def test_a_stalled_simulator_policy_has_no_makespan_and_says_why():
    """A baseline that stalls (jobs it never starts) has no makespan in the row or the table,
    as in ``hsched compare``'s (it read the time to its last completion), and a note says its
    idle rounds are in decide ms and how many jobs never started."""
    from agents.report import Report, format_report, scenario_summary, summarize
    from agents.suites import Scenario, Suite
    nan = float("nan")
    suite = Suite("t", (Scenario("s", "sia-64", "gavel:jobs=3"),), seeds=1)
    entries = [PolicyEntry("pure-lp", "simulator", "heterosched-lp"),
               PolicyEntry("gavel", "simulator", "gavel")]
    lp, stuck = _run("pure-lp", 1, [3600, 7200, 10800]), _run("gavel", 1, [3600, 7200, nan])
    for run, span, started in ((lp, 10800.0, 3), (stuck, 7200.0, 2)):
        run.metrics.update(makespan_s=span, jobs_started=started)
    lp.end_reason, stuck.end_reason = "completed", "stalled"
    rows = summarize(suite, entries, [lp, stuck], [])
    assert rows[0]["makespan_s"] == 10800.0 and math.isnan(rows[1]["makespan_s"])
    report = Report(suite=suite, seeds=[1], policies=["pure-lp", "gavel"], runs=[lp, stuck],
                    rows=rows, scenarios=[scenario_summary(suite.scenarios[0], [lp, stuck])],
                    wall_s=0.0, failures=[])
    table = format_report(report)
    line = next(x for x in table.splitlines() if x.startswith("gavel "))
    assert line.split()[4] == "n/a"                                  # makespan h
    assert "gavel: stalled (no job ran for 1,000 rounds" in table
    assert "(never started: 1 of 3)" in table and "pure-lp: stalled" not in table


def test_the_jct_cdf_is_a_fraction_of_all_jobs_and_the_titles_name_the_window(tmp_path,
                                                                             monkeypatch):
    """In a time window each policy's JCT curve levels off at the share of the jobs it
    finished (it was scaled to its own finished jobs: every curve reached 1, and a policy
    that finished fewer looked no worse), and both plots' titles name the window."""
    import matplotlib
    matplotlib.use("Agg")
    from agents.plots import plot_jct_cdf
    from agents.report import Report, scenario_summary, summarize
    from agents.suites import Scenario, Suite
    nan = float("nan")
    suite = Suite("t", (Scenario("s", "sia-64", "gavel:jobs=4", max_time_s=5400.0),), seeds=2)
    entries = [PolicyEntry("pure-lp", "simulator", "heterosched-lp"),
               PolicyEntry("fifo", "simulator", "fifo")]
    runs = [_run("pure-lp", 1, [3600, 3600, 5400, nan]),
            _run("pure-lp", 2, [1800, nan, nan, nan]),
            _run("fifo", 1, [3600, nan, nan, nan]), _run("fifo", 2, [nan, nan, nan, nan])]
    report = Report(suite=suite, seeds=[1, 2], policies=["pure-lp", "fifo"], runs=runs,
                    rows=summarize(suite, entries, runs, []),
                    scenarios=[scenario_summary(suite.scenarios[0], runs)], wall_s=0.0,
                    failures=[])
    import matplotlib.figure
    captured, save = [], matplotlib.figure.Figure.savefig
    monkeypatch.setattr(matplotlib.figure.Figure, "savefig",
                        lambda fig, *a, **k: captured.append(fig) or save(fig, *a, **k))
    plot_jct_cdf(report, tmp_path / "cdf.png")
    ax = captured[0].axes[0]
    tops = {line.get_label().split(" (")[0]: line.get_ydata().max() for line in ax.get_lines()}
    assert tops == {"pure-lp": 4 / 8, "fifo": 1 / 8}          # of the 8 jobs of two seeds
    assert "pure-lp (4 of 8 jobs done" in [t.get_text() for t in ax.get_legend().get_texts()][0]
    assert ax.get_title().startswith("s (first 1.5 h): gavel:jobs=4")
    # a job arriving after the window is not the policy's to finish: each seed's last one
    for run in runs:
        run.records[3] = dataclasses.replace(run.records[3], arrival_s=6000.0)
    captured.clear()
    plot_jct_cdf(report, tmp_path / "cdf.png")
    ax = captured[0].axes[0]
    tops = {line.get_label().split(" (")[0]: line.get_ydata().max() for line in ax.get_lines()}
    assert tops == {"pure-lp": 4 / 6, "fifo": 1 / 6}


def test_common_jobs_compare_policies_on_the_jobs_all_of_them_finished():
    from agents.report import common_job_stats
    nan = float("nan")
    runs = [_run("pure-lp", 1, [3600, 7200, nan, nan]),
            _run("ranker", 1, [3600, 10800, 36000, nan]),     # + a long job the LP left
            _run("pure-lp", 2, [3600, nan]), _run("ranker", 2, [nan, 7200])]
    stats = common_job_stats(runs)
    lp, rk = stats[("s", "pure-lp", 1)], stats[("s", "ranker", 1)]
    assert lp["common_jobs"] == rk["common_jobs"] == 2          # jobs 0 and 1
    assert lp["avg_jct_common_s"] == 5400 and rk["avg_jct_common_s"] == 7200
    assert rk["ftf_worst_common"] == pytest.approx(3.0)         # job 1: 3 h on a 1 h share
    # its own average (job 2 included) is 16,800 s: 3.1x the LP's, not 1.33x
    assert rk["avg_jct_common_s"] / lp["avg_jct_common_s"] == pytest.approx(4 / 3)
    none = stats[("s", "ranker", 2)]                             # no job finished by both
    assert none["common_jobs"] == 0 and np.isnan(none["avg_jct_common_s"])
    unknown = _run("x", 3, [3600])
    unknown.cluster_gpus = None                                  # a run file before the field
    assert np.isnan(common_job_stats([unknown])[("s", "x", 3)]["ftf_worst_common"])


def test_rows_and_table_use_the_common_jobs_and_skip_a_seed_with_a_failed_run():
    """Seed 1: the ranker runs the LP's schedule and also finishes a 10-hour job the LP left
    unfinished; seed 2: the LP's run failed (a sweep), so no policy's average includes it."""
    from agents.report import Report, format_report, per_seed_rows, scenario_summary, summarize
    from agents.suites import Scenario, Suite
    nan = float("nan")
    suite = Suite("t", (Scenario("s", "sia-64", "gavel:jobs=3"),), seeds=2)
    entries = [PolicyEntry("pure-lp", "simulator", "heterosched-lp"),
               PolicyEntry("ranker", "simulator", "heterosched-lp")]
    runs = [_run("pure-lp", 1, [3600, 7200, nan]), _run("ranker", 1, [3600, 7200, 36000]),
            _run("ranker", 2, [36000, 36000, 36000])]
    failures = [{"scenario": "s", "policy": "pure-lp", "seed": 2, "error": "x", "attempts": 2}]
    rows = summarize(suite, entries, runs, failures)
    lp, rk = rows
    assert rk["avg_jct_common_ratio"] == 1.0 and rk["common_jobs"] == lp["common_jobs"] == 2
    # own jobs (+ the 10-hour one), over seed 1, the one the pure LP ran: 15,600 s ÷ 5,400 s
    assert rk["avg_jct_ratio"] == pytest.approx(15600 / 5400)
    report = Report(suite=suite, seeds=[1, 2], policies=["pure-lp", "ranker"], runs=runs,
                    rows=rows, scenarios=[scenario_summary(suite.scenarios[0], runs)],
                    wall_s=0.0, failures=failures)
    per_seed = {(r["policy"], r["seed"]): r for r in per_seed_rows(report)}
    assert per_seed["ranker", 1]["avg_jct_common_ratio"] == 1.0
    assert per_seed["ranker", 2]["common_jobs"] == 0
    table = format_report(report)
    line = next(x for x in table.splitlines() if x.startswith("ranker "))
    assert line.split()[-3] == "1.00"             # the JCT ×LP column: the common jobs
    assert "JCT ×LP over the 2 jobs every policy finished" in table


def test_a_row_missing_a_seed_is_compared_with_the_pure_lp_on_its_own_seeds():
    """A ranker's run failed on seed 2 (a sweep); its ratios take the pure LP over seed 1
    only: on that seed it schedules as the LP does, so every ratio is 1 (against the LP's
    two-seed average it read 3.5x and 7x its decision time)."""
    from agents.report import summarize
    from agents.suites import Scenario, Suite
    suite = Suite("t", (Scenario("s", "sia-64", "gavel:jobs=3"),), seeds=2)
    entries = [PolicyEntry("pure-lp", "simulator", "heterosched-lp"),
               PolicyEntry("ranker", "simulator", "heterosched-lp")]
    runs = [_run("pure-lp", 1, [3600, 7200]), _run("pure-lp", 2, [36000, 36000]),
            _run("ranker", 1, [3600, 7200])]
    runs[0].decision_s = runs[2].decision_s = np.full(3, 0.01)
    runs[1].decision_s = np.full(3, 0.13)
    failures = [{"scenario": "s", "policy": "ranker", "seed": 2, "error": "x", "attempts": 1}]
    lp, rk = summarize(suite, entries, runs, failures)
    assert lp["seeds"] == [1, 2] and rk["seeds"] == [1] and rk["failed_seeds"] == [2]
    assert rk["avg_jct_ratio"] == rk["avg_jct_common_ratio"] == 1.0
    assert rk["decision_time_ratio"] == pytest.approx(1.0)
    assert lp["decision_time_mean_s"] == pytest.approx(0.07)       # its own row: both seeds


def test_a_reference_missing_a_seed_compares_each_row_on_the_seeds_both_ran():
    """The pure LP's run failed on seed 2 (a sweep): every row's ratios take both sides over
    seed 1 only — on it the ranker schedules as the LP does, so every ratio is 1 (its
    two-seed figures against the LP's one seed read 3.8x its JCT and 7x its decision time)
    — and the report says over which seeds."""
    from agents.report import Report, format_report, scenario_summary, summarize
    from agents.suites import Scenario, Suite
    suite = Suite("t", (Scenario("s", "sia-64", "gavel:jobs=3"),), seeds=2)
    entries = [PolicyEntry("pure-lp", "simulator", "heterosched-lp"),
               PolicyEntry("ranker", "simulator", "heterosched-lp")]
    runs = [_run("pure-lp", 1, [3600, 7200]), _run("ranker", 1, [3600, 7200]),
            _run("ranker", 2, [36000, 36000])]
    runs[0].decision_s = runs[1].decision_s = np.full(3, 0.01)
    runs[2].decision_s = np.full(3, 0.13)
    failures = [{"scenario": "s", "policy": "pure-lp", "seed": 2, "error": "x", "attempts": 2}]
    lp, rk = summarize(suite, entries, runs, failures)
    assert lp["seeds"] == [1] and rk["seeds"] == [1, 2]
    assert rk["avg_jct_ratio"] == pytest.approx(1.0)
    assert rk["decision_time_ratio"] == pytest.approx(1.0)
    assert rk["ratio_seeds"] == lp["ratio_seeds"] == [1]
    assert rk["decision_time_mean_s"] == pytest.approx(0.07)       # its own row: both seeds
    report = Report(suite=suite, seeds=[1, 2], policies=["pure-lp", "ranker"], runs=runs,
                    rows=[lp, rk], scenarios=[scenario_summary(suite.scenarios[0], runs)],
                    wall_s=0.0, failures=failures)
    table = format_report(report)
    assert "ranker: JCT ×LP and time ×LP over the 1 seed pure-lp also ran (1), of its 2" \
        in table
    assert "pure-lp: JCT ×LP" not in table
    line = next(x for x in table.splitlines() if x.startswith("ranker "))
    assert line.split()[-2] == "1.00"             # the time ×LP column


def test_a_select_agents_time_is_its_agent_time_in_both_kinds_of_rows():
    """A select-mode agent's inference time is ``agent_time_mean_s`` in the seed-averaged rows
    and in the per-seed rows alike; ``ranker_time_mean_s`` is a rank-mode agent's only (null
    elsewhere: the per-seed rows put the select agent's time there)."""
    from agents.report import Report, scenario_summary, summarize
    from agents.suites import Scenario, Suite
    suite = Suite("t", (Scenario("s", "sia-64", "gavel:jobs=3"),), seeds=1)
    entries = [PolicyEntry("pure-lp", "simulator", "heterosched-lp"),
               PolicyEntry("mine", "scheduler")]
    lp, mine = _run("pure-lp", 1, [3600]), _run("mine", 1, [3600])
    lp.decision_s = lp.lp_decision_s = np.full(3, 0.01)
    mine.kind, mine.ranker_s = "scheduler", np.full(3, 0.002)
    mine.lp_decision_s, mine.decision_s = np.full(3, 0.008), np.full(3, 0.01)
    mine.placements, mine.invalid_actions, mine.slots, mine.overflow_max = 2, 0, 8, 0
    mine.round_candidates_max = 5
    rows = summarize(suite, entries, [lp, mine])
    report = Report(suite=suite, seeds=[1], policies=["pure-lp", "mine"], runs=[lp, mine],
                    rows=rows, scenarios=[scenario_summary(suite.scenarios[0], [lp, mine])],
                    wall_s=0.0)
    data = report_json(report)
    for row in (data["rows"][1], data["per_seed"][1]):
        assert row["policy"] == "mine" and row["ranker_time_mean_s"] is None, row
        assert row["agent_time_mean_s"] == pytest.approx(0.002)
    assert all(r["ranker_time_mean_s"] is None for r in (data["rows"][0], data["per_seed"][0]))


def test_an_empty_policy_list_is_refused_not_the_default(capsys, tmp_path):
    """``--policies ''`` is an error naming --policies (it ran the default policies)."""
    out = tmp_path / "e"
    assert main(["evaluate", "--suite", "smoke", "--policies", "", "--no-progress",
                 "--out", str(out)]) == 2
    err = capsys.readouterr().err
    assert "field '--policies': no policy named" in err and not out.exists()


def test_pareto_plot_places_a_ranker_also_with_its_observations():
    from agents.plots import decision_points
    lp = {"decision_time_mean_s": 0.100}
    ranker = {"decision_time_mean_s": 0.060, "observation_time_mean_s": 0.020,
              "decision_with_observation_mean_s": 0.080}
    gated = {"decision_time_mean_s": 0.050, "observation_time_mean_s": 0.0,
             "decision_with_observation_mean_s": 0.050}
    assert decision_points(lp) == [pytest.approx(100.0)]
    assert decision_points(ranker) == [pytest.approx(60.0), pytest.approx(80.0)]
    assert decision_points(gated) == [pytest.approx(50.0)]


def test_pareto_plot_uses_the_common_jobs_else_the_time_in_system():
    from agents.plots import quality_axis
    nan = float("nan")
    rows = [{"seeds": [1], "avg_jct_common_s": 3600.0, "common_jobs": 7},
            {"seeds": [1], "avg_jct_common_s": 4000.0, "common_jobs": 7},
            {"seeds": [], "avg_jct_common_s": nan}]                # every run failed
    key, label = quality_axis(rows)
    assert key == "avg_jct_common_s" and "(7 over the seeds)" in label
    rows[1]["avg_jct_common_s"] = nan                              # no common jobs
    assert quality_axis(rows)[0] == "avg_time_in_system_s"


def test_heldout_seeds_never_training_seeds():
    assert TRAIN_SEEDS == range(0, 10_000)
    assert HELDOUT_SEEDS.start >= 1_000_000
    assert not set(heldout_seeds(1000)) & set(TRAIN_SEEDS)
    for suite in SUITES.values():
        assert not any(is_training_seed(s) for s in heldout_seeds(suite.seeds))
    with pytest.raises(ConfigError):
        evaluate(SMOKE, ["fifo"], seeds=[3], progress=False)


def test_scenarios_need_unseeded_generated_workloads():
    from agents.evaluate import Scenario
    with pytest.raises(ConfigError):
        Scenario("x", "sia-64", "gavel:rate=4,jobs=10,seed=1")
    with pytest.raises(ConfigError):
        Scenario("x", "sia-64", "philly:start=2017-10-09T06:00,hours=8")
    assert Scenario("x", "sia-64", "gavel:jobs=3").workload_for(1_000_000) == \
        "gavel:jobs=3,seed=1000000"


def test_cli_unknown_names_exit_2(capsys, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)                     # the default output folder is runs/...
    assert main(["evaluate", "--policies", "pure-lp,nope", "--no-progress"]) == 2
    err = capsys.readouterr().err
    assert "unknown policy 'nope'" in err
    for name in ("pure-lp", "topk", "pop-K (2 <= K <= 1024)", "pop-K-serial", "gavel", "fifo",
                 "ranker:PATH"):
        assert name in err
    assert main(["evaluate", "--suite", "huge", "--policies", "fifo"]) == 2
    assert "unknown suite 'huge'" in capsys.readouterr().err
    assert main(["evaluate", "--policies", "ranker:/no/such/ranker.pt"]) == 2
    assert "no ranker file" in capsys.readouterr().err
    assert main(["evaluate", "--policies", "fifo", "--out", __file__ + "/out"]) == 2
    assert "--out" in capsys.readouterr().err
    # a rejected command claims no output folder (it used to leave an empty runs/eval-smoke)
    assert not (tmp_path / "runs").exists()


def test_cli_failed_evaluation_leaves_no_empty_folder(capsys, tmp_path, monkeypatch):
    """An evaluation that fails before writing removes the folder it made (or claimed); a
    folder that was there before is kept."""
    from agents import evaluate as ev
    monkeypatch.chdir(tmp_path)

    def fail(*args, **kwargs):
        raise RuntimeError("boom")
    monkeypatch.setattr(ev, "evaluate", fail)
    for out in (None, "mine"):
        argv = ["evaluate", "--policies", "fifo", "--no-progress"]
        with pytest.raises(RuntimeError, match="boom"):
            main(argv + (["--out", out] if out else []))
    assert not (tmp_path / "runs").exists() and not (tmp_path / "mine").exists()
    (tmp_path / "kept").mkdir()
    with pytest.raises(RuntimeError):
        main(["evaluate", "--policies", "fifo", "--out", "kept"])
    assert (tmp_path / "kept").is_dir()
    # the parents a nested --out needed go too; an existing parent stays
    with pytest.raises(RuntimeError):
        main(["evaluate", "--policies", "fifo", "--out", "kept/a/b/c"])
    assert (tmp_path / "kept").is_dir() and not (tmp_path / "kept" / "a").exists()


def test_cli_failed_overwrite_run_leaves_another_runs_claim(capsys, tmp_path, monkeypatch):
    """``--overwrite`` without ``--out`` takes ``runs/eval-<suite>`` without claiming it: when
    it fails it must not delete the folder or the claim of an evaluation that holds it."""
    from agents import evaluate as ev
    from agents.report import CLAIM_FILE
    monkeypatch.chdir(tmp_path)
    other = tmp_path / "runs" / "eval-smoke"
    other.mkdir(parents=True)
    (other / CLAIM_FILE).write_text("claimed by pid 1\n")

    def interrupted(*args, **kwargs):
        raise KeyboardInterrupt
    monkeypatch.setattr(ev, "evaluate", interrupted)
    # (main reports Ctrl-C as one line and exit code 130, after the clean-up ran)
    assert main(["evaluate", "--policies", "fifo", "--overwrite", "--no-progress"]) == 130
    assert (other / CLAIM_FILE).read_text() == "claimed by pid 1\n"
    # and a default run that claims the next folder removes only its own claim and folder
    assert main(["evaluate", "--policies", "fifo", "--no-progress"]) == 130
    assert sorted(p.name for p in (tmp_path / "runs").iterdir()) == ["eval-smoke"]
    assert (other / CLAIM_FILE).exists()


@slow
def test_cli_json_with_a_ranker_file(capsys, tmp_path, monkeypatch):
    """``ranker:PATH`` goes through ``agents.ranker.Ranker.load`` (here a stand-in module)."""
    path = tmp_path / "standin.pt"
    path.write_bytes(b"stand-in")
    loaded = []

    class Ranker:
        @staticmethod
        def load(p):
            loaded.append(p)
            return TopPerJobRanker(k=2, name="standin.pt")

    monkeypatch.setitem(sys.modules, "agents.ranker", types.SimpleNamespace(Ranker=Ranker))
    out = tmp_path / "eval"
    code = main(["evaluate", "--suite", "smoke", "--policies", f"fifo,ranker:{path}",
                 "--json", "--out", str(out), "--no-progress"])
    assert code == 0
    data = json.loads(capsys.readouterr().out)
    assert loaded == [str(path)]
    assert [r["policy"] for r in data["rows"]] == ["fifo", "ranker:standin.pt"]
    assert data["seeds"] == [1_000_000] and data["per_seed"][1]["overflow_max"] == 0
    assert (out / "metrics.json").exists() and (out / "jct_cdf.png").exists()


def _timed(run, decision, wall):
    run.decision_s = np.asarray(decision, dtype=float)
    run.lp_decision_s = run.decision_s * 0.5
    run.metrics.update({"makespan_s": float("nan"),          # NaN: equal in every repeat
                        "decision_time_mean_s": float(run.decision_s.mean()),
                        "decision_time_p99_s": float(np.percentile(run.decision_s, 99)),
                        "decision_time_max_s": float(run.decision_s.max()), "wall_s": wall})
    return run


def test_timing_repeats_merge_round_by_round_medians():
    """``merge_timing_repeats``: each wall-clock field is the per-round median of the repeats,
    the decision-time metrics are recomputed from it, everything else is the first run's; a
    slow round in one repeat of three no longer decides the p99."""
    from agents.runners import merge_timing_repeats
    runs = [_timed(_run("pure-lp", 1, [3600, 7200]), d, w) for d, w in (
        ([0.010, 0.020, 0.500], 1.0),            # a stall in round 3 of the first repeat
        ([0.012, 0.018, 0.030], 3.0),
        ([0.011, 0.025, 0.032], 2.0))]
    merged = merge_timing_repeats(runs)
    assert merged.decision_s.tolist() == [0.011, 0.020, 0.032]
    assert merged.lp_decision_s.tolist() == [0.0055, 0.010, 0.016]
    assert merged.metrics["decision_time_max_s"] == 0.032
    assert merged.metrics["decision_time_mean_s"] == pytest.approx((0.011 + 0.020 + 0.032) / 3)
    assert merged.metrics["decision_time_p99_s"] == pytest.approx(
        np.percentile([0.011, 0.020, 0.032], 99))
    assert merged.metrics["wall_s"] == 2.0
    assert merged.metrics["avg_jct_s"] == runs[0].metrics["avg_jct_s"]
    assert merged.ranker_s is None and merged.records is runs[0].records
    assert runs[0].decision_s.tolist() == [0.010, 0.020, 0.500]     # the inputs unchanged
    assert runs[0].metrics["decision_time_max_s"] == 0.5
    assert merge_timing_repeats(runs[:1]) is runs[0]


def test_timing_repeats_take_each_rounds_parts_from_its_median_repeat():
    """A ranker's round: its total (LP + inference + observation) is the median of the
    repeats' totals and its parts come from that same repeat, so they still add up (taking
    each part's own median would give 4 ms here, against a median total of 11); with an even
    count, the mean of the two middle repeats."""
    from agents.runners import merge_timing_repeats

    def ranked(lp, rank, obs):
        run = _timed(_run("ranker", 1, [3600]), np.add(lp, rank), 1.0)
        run.kind = "ranker"
        run.lp_decision_s = np.asarray(lp, dtype=float)
        run.ranker_s = np.asarray(rank, dtype=float)
        run.observation_s = np.asarray(obs, dtype=float)
        return run

    runs = [ranked([1.0, 5.0], [0.0, 1.0], [10.0, 1.0]),    # totals 11, 7
            ranked([1.0, 2.0], [1.0, 1.0], [2.0, 1.0]),     # totals 4, 4
            ranked([6.0, 3.0], [4.0, 1.0], [1.0, 1.0])]     # totals 11, 5
    merged = merge_timing_repeats(runs)
    assert merged.decision_s.tolist() == [1.0, 4.0]          # round 1: the first repeat
    assert merged.observation_s.tolist() == [10.0, 1.0]      # round 2: the third
    assert np.array_equal(merged.decision_s, merged.lp_decision_s + merged.ranker_s)
    total = merged.decision_s + merged.observation_s
    assert total.tolist() == np.median([[11, 7], [4, 4], [11, 5]], axis=0).tolist()
    even = merge_timing_repeats(runs[:2])
    assert even.decision_s.tolist() == [1.5, 4.5] and even.observation_s.tolist() == [6.0, 1.0]
    assert np.array_equal(even.decision_s, even.lp_decision_s + even.ranker_s)


def test_timing_repeats_need_runs_that_repeat_their_decisions():
    from agents.runners import merge_timing_repeats
    a = _timed(_run("pure-lp", 1, [3600, 7200]), [0.01], 1.0)
    b = _timed(_run("pure-lp", 1, [3600, 10800]), [0.01], 1.0)     # another schedule
    with pytest.raises(ConfigError, match=r"repeat 2 did not repeat.*jct_s.*metrics.avg_jct_s"):
        merge_timing_repeats([a, b])
    with pytest.raises(ConfigError, match="timing-repeats"):
        evaluate(SMOKE, ["fifo"], seeds=1, progress=False, timing_repeats=0)
    with pytest.raises(ConfigError, match="timing-repeats"):
        evaluate(SMOKE, ["fifo"], seeds=1, progress=False, timing_repeats=True)


def test_timing_repeats_interleave_the_policies_and_keep_the_decisions(monkeypatch, tmp_path):
    """``evaluate(timing_repeats=2)``: each (policy, seed) run twice, the policies interleaved
    (A, B, A, B), merged into one run per (policy, seed) whose decisions are the single run's;
    the report says so; a sweep makes its repeats within the task and records the setting in
    the task's inputs, so run files of another repeat count are not resumed as these."""
    from agents import evaluate as ev
    from agents.runners import deterministic_part
    from agents.suites import Scenario, Suite
    suite = Suite("t", (Scenario("s", "tiny-8", "gavel:rate=8,jobs=6,duration_scale=0.05"),),
                  seeds=1)
    order, made = [], []
    real = ev.run_one

    def spy(entry, *args, **kwargs):
        order.append(entry.label)
        made.append(real(entry, *args, **kwargs))
        return made[-1]

    monkeypatch.setattr(ev, "run_one", spy)
    once = evaluate(suite, ["pure-lp", "fifo"], progress=False)
    order.clear()
    made.clear()
    rep = evaluate(suite, ["pure-lp", "fifo"], progress=False, timing_repeats=3)
    assert order == ["pure-lp", "fifo"] * 3
    assert [r.label for r in rep.runs] == ["pure-lp", "fifo"]
    for i, run in enumerate(rep.runs):                       # per round, the median repeat
        mine = np.stack([m.decision_s for m in made[i::2]])
        assert run.decision_s.tolist() == np.median(mine, axis=0).tolist()
        assert run.metrics["decision_time_p99_s"] == pytest.approx(
            np.percentile(np.median(mine, axis=0), 99))
    for a, b in zip(once.runs, rep.runs):
        assert deterministic_part(a) == deterministic_part(b)
    assert rep.timing_repeats == 3 and report_json(rep)["settings"]["timing_repeats"] == 3
    assert "median of 3 runs" in format_report(rep)
    assert report_json(once)["settings"]["timing_repeats"] == 1
    made.clear()
    swept = evaluate(suite, ["pure-lp"], progress=False, runs_dir=tmp_path / "runs",
                     timing_repeats=2)
    assert deterministic_part(swept.runs[0]) == deterministic_part(once.runs[0])
    assert swept.runs[0].decision_s.tolist() == np.mean(
        [m.decision_s for m in made], axis=0).tolist()               # two: their mean
    [record] = [json.loads(p.read_text()) for p in (tmp_path / "runs").glob("*.json")]
    assert record["config"]["timing_repeats"] == 2


def test_cli_timing_repeats(capsys, tmp_path):
    args = ["evaluate", "--cluster", "tiny-8", "--workload",
            "gavel:rate=8,jobs=6,duration_scale=0.05", "--policies", "fifo", "--no-progress"]
    assert main(args + ["--timing-repeats", "2", "--json", "--out", str(tmp_path / "a")]) == 0
    out = capsys.readouterr()
    assert json.loads(out.out)["settings"]["timing_repeats"] == 2
    with pytest.raises(SystemExit) as exc:                  # argparse: a positive integer
        main(args + ["--timing-repeats", "0", "--out", str(tmp_path / "b")])
    assert exc.value.code == 2
    assert "--timing-repeats" in capsys.readouterr().err


def test_pareto_plot_log_axis_labels_are_plain_numbers_within_a_decade():
    """Decision times of 100-127 ms: plain labels (105, 110, ...), not overlapping
    '1.05×10²'; across three decades only the decades are labelled."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from agents.plots import _plain_log_ticks

    def labels(lo, hi):
        fig, ax = plt.subplots()
        ax.scatter([lo, hi], [0, 1])
        ax.set_xscale("log")
        _plain_log_ticks(ax.xaxis)
        fig.canvas.draw()
        texts = [t.get_text() for t in ax.get_xticklabels(minor=True) + ax.get_xticklabels()
                 if t.get_text() and lo <= t.get_position()[0] <= hi]
        plt.close(fig)
        return texts

    narrow = labels(100, 127)
    assert len(narrow) >= 3 and all(t.replace(".", "").isdigit() for t in narrow), narrow
    assert labels(0.5, 900) == ["1", "10", "100"]
    assert labels(0.04, 9) == ["0.1", "1"]                     # not '1e-01'


def _pareto_rows(points: dict, ranker_observation: dict | None = None) -> list[dict]:
    """Report rows for ``draw_decision_vs_jct``: ``{policy: (decision ms, avg JCT h)}``; a
    ``ranker*`` policy is a ranker, with ``ranker_observation``'s fields if given."""
    return [{"policy": name, "kind": "ranker" if name.startswith("ranker") else "lp",
             "seeds": [1], "avg_jct_common_s": h * 3600, "common_jobs": 60,
             "decision_time_mean_s": ms / 1e3,
             **(ranker_observation or {} if name.startswith("ranker") else {})}
            for name, (ms, h) in points.items()]


def test_pareto_plot_labels_stay_inside_the_axes():
    """A demo-like panel (policies from 0.05 to 6.5 ms, a long name at the right edge, the best
    JCT at the bottom, three policies close together): every label is drawn inside the
    axes, none runs past an edge, and no two overlap."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from agents.plots import draw_decision_vs_jct, place_labels

    points = {"fifo": (0.05, 12.9), "gavel": (0.37, 4.2), "topk": (1.2, 1.6),
              "pure-lp": (1.2, 0.6), "pop-4": (2.5, 1.6), "heterosched-lp-las": (6.5, 1.0),
              "ranker:r.pt": (1.25, 0.62)}
    rows = _pareto_rows(points, ranker_observation={"observation_time_mean_s": 2e-4,
                                                    "decision_with_observation_mean_s": 1.45e-3})
    fig, ax = plt.subplots(figsize=(6, 4.5))
    labels = draw_decision_vs_jct(ax, rows, {name: "k" for name in points})
    fig.tight_layout()
    place_labels(ax, labels)
    fig.canvas.draw()
    box = ax.get_window_extent()
    texts = [t for t in ax.texts if t.get_text()]
    assert len(texts) == len(points) + 1                       # + "+ observations"
    extents = [t.get_window_extent() for t in texts]
    for t, ext in zip(texts, extents):
        assert box.x0 - 1 <= ext.x0 and ext.x1 <= box.x1 + 1, (t.get_text(), ext, box)
        assert box.y0 - 1 <= ext.y0 and ext.y1 <= box.y1 + 1, (t.get_text(), ext, box)
    overlapping = [(a.get_text(), b.get_text()) for i, (a, ea) in enumerate(zip(texts, extents))
                   for b, eb in zip(texts[i + 1:], extents[i + 1:]) if ea.overlaps(eb)]
    assert not overlapping                 # topk, pure-lp and the ranker sit close together
    plt.close(fig)


def test_pareto_plot_labels_sit_nearest_their_own_points():
    """The demo's panel of one audit (2026-12-06): pop-4's label went 20 points down-left of
    its point, beside the ranker's, while the spot right of its point was free. Every
    policy's label is now nearer its own point than any other point, but points within 15
    pixels of its own (the LP and the gated ranker, 9 pixels apart: a label beside one is
    beside both)."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from agents.plots import _axes, draw_decision_vs_jct, place_labels

    points = {"pure-lp": (1.17, 0.615), "topk": (1.25, 1.73), "pop-4": (2.82, 1.61),
              "ranker:ranker.pt": (1.31, 0.615), "sia": (7.76, 0.99), "gavel": (0.365, 4.24),
              "fifo": (0.046, 12.9)}
    rows = _pareto_rows(points)
    fig, axes = _axes(plt, 1)                  # the layout of plot_decision_vs_jct's panel
    ax = axes[0]
    labels = draw_decision_vs_jct(ax, rows, {name: "k" for name in points})
    ax.set_title("sia-64: gavel:rate=3,jobs=60,mix=llm,duration_scale=0.25", fontsize=9)
    ax.grid(True, which="both", alpha=0.3)
    fig.suptitle("Suite demo: decision cost against schedule quality (seeds 1000000)",
                 fontsize=10)
    fig.tight_layout()
    place_labels(ax, labels)
    fig.canvas.draw()
    at = {name: ax.transData.transform(xy) for name, xy in points.items()}

    def gap(ext, p):               # display distance from a point to a text's box
        return math.hypot(max(ext.x0 - p[0], 0, p[0] - ext.x1),
                          max(ext.y0 - p[1], 0, p[1] - ext.y1))

    for t in ax.texts:
        name, ext = t.get_text(), t.get_window_extent()
        mine = gap(ext, at[name])
        others = {o: gap(ext, p) for o, p in at.items()
                  if o != name and math.dist(p, at[name]) > 15}
        assert all(mine < d for d in others.values()), (name, mine, others)
    plt.close(fig)


def test_pareto_plot_labels_clear_each_other_in_a_crowded_panel():
    """Session 51's `large-family` Pareto run (six policies, two rankers with observations,
    three panels): at 2,200 jobs five points lie within 60 ms of each other, and with four
    heights to try "+ observations" was drawn over "ranker-seed:ranker.pt". With six heights
    no two labels of any panel overlap."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from agents.plots import _axes, draw_decision_vs_jct, panel_title, place_labels

    panels = {  # policy: (decision ms, avg JCT h, decision ms with observations)
        550: {"pure-lp": (71.07, 0.42315, None), "topk": (37.43, 0.66918, None),
              "pop-4": (73.08, 0.43119, None), "support-reuse": (45.87, 0.58873, None),
              "ranker:ranker.pt": (60.75, 0.42461, 65.81),
              "ranker-seed:ranker.pt": (59.5, 0.42315, 64.42)},
        1100: {"pure-lp": (183.46, 0.50573, None), "topk": (83.19, 0.57968, None),
               "pop-4": (145.09, 0.50826, None), "support-reuse": (123.02, 0.54874, None),
               "ranker:ranker.pt": (135.92, 0.5064, 147.37),
               "ranker-seed:ranker.pt": (145.19, 0.50573, 157.5)},
        2200: {"pure-lp": (494.52, 0.51714, None), "topk": (239.97, 0.58764, None),
               "pop-4": (305.11, 0.51916, None), "support-reuse": (355.74, 0.57941, None),
               "ranker:ranker.pt": (314.97, 0.51732, 344.52),
               "ranker-seed:ranker.pt": (329.02, 0.51714, 358.15)}}
    fig, axes = _axes(plt, len(panels))
    drawn = []
    for ax, (jobs, points) in zip(axes, panels.items()):
        rows = []
        for name, (ms, h, with_obs) in points.items():
            rows += _pareto_rows({name: (ms, h)}, None if with_obs is None else {
                "observation_time_mean_s": (with_obs - ms) / 1e3,
                "decision_with_observation_mean_s": with_obs / 1e3})
        drawn.append((ax, draw_decision_vs_jct(ax, rows, {name: "k" for name in points})))
        ax.set_title(panel_title({"name": f"large-2048-{jobs}", "workload":
                                  f"gavel:rate=20000,jobs={jobs},multi_gpu_recommendation=1"}),
                     fontsize=9)
        ax.grid(True, which="both", alpha=0.3)
    fig.suptitle("Suite large-family: decision cost against schedule quality (seeds 1000000, "
                 "1000001, 1000002)", fontsize=10)
    fig.tight_layout()
    for ax, labels in drawn:
        place_labels(ax, labels)
    fig.canvas.draw()
    for ax, _ in drawn:
        texts = [t for t in ax.texts if t.get_text()]
        assert len(texts) == 8                                 # six policies, two observations
        extents = [t.get_window_extent() for t in texts]
        overlapping = [(a.get_text(), b.get_text())
                       for i, (a, ea) in enumerate(zip(texts, extents))
                       for b, eb in zip(texts[i + 1:], extents[i + 1:]) if ea.overlaps(eb)]
        assert not overlapping, (ax.get_title(), overlapping)
    # the panels' titles (long workload specs) stay inside the figure and clear of each
    # other: on one line the third ran past the figure's right edge
    titles = [ax.title.get_window_extent() for ax, _ in drawn]
    figure = fig.bbox
    assert all(t.x0 >= figure.x0 and t.x1 <= figure.x1 for t in titles), \
        [(t.x0, t.x1, figure.x1) for t in titles]
    assert not any(a.overlaps(b) for a, b in zip(titles, titles[1:]))
    plt.close(fig)


def test_pareto_plot_does_not_magnify_a_tiny_jct_gap():
    """Two policies 0.1% apart in avg JCT (the demo's burst): the y-axis spans at least 5% of
    its middle, so the gap looks as small as it is (matplotlib alone zooms onto it)."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from agents.plots import draw_decision_vs_jct

    rows = [{"policy": name, "kind": "lp", "seeds": [1], "avg_jct_common_s": h * 3600,
             "common_jobs": 550, "decision_time_mean_s": ms / 1e3}
            for name, ms, h in (("pure-lp", 120.0, 0.6720), ("topk", 90.0, 0.6713))]
    fig, ax = plt.subplots()
    draw_decision_vs_jct(ax, rows, {"pure-lp": "k", "topk": "k"})
    lo, hi = ax.get_ylim()
    plt.close(fig)
    assert hi - lo >= 0.05 * (lo + hi) / 2 * 0.999
    assert lo < 0.6713 and hi > 0.6720


def test_failed_run_keeps_a_folder_it_wrote_into_and_its_claim(tmp_path):
    """A default-folder run that fails after writing (a Ray sweep's run files) keeps the
    folder and its claim, so that no later evaluation claims a folder holding run files."""
    from hsched_cli.outdirs import removed_if_failed_empty
    folder = tmp_path / "runs" / "eval-smoke"
    (folder / "runs").mkdir(parents=True)
    (folder / "runs" / "a.json").write_text("{}")
    claim = folder / ".evaluation"
    claim.write_text("claimed by pid 2\n")
    with pytest.raises(RuntimeError):
        with removed_if_failed_empty([folder, tmp_path / "runs"], (claim,)):
            raise RuntimeError("failed after a run file")
    assert claim.exists() and (folder / "runs" / "a.json").exists()


def test_pareto_plot_linear_axis_when_decision_times_are_close():
    """Decision times within a factor of 3 (the demo's burst: 87–126 ms) get a linear axis
    from 0, where a log axis showed one or two ticks; wider spreads stay logarithmic."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from agents.plots import draw_decision_vs_jct

    def scale(times_ms):
        rows = [{"policy": f"p{i}", "kind": "lp", "seeds": [1], "avg_jct_common_s": 3600.0,
                 "common_jobs": 1, "decision_time_mean_s": ms / 1e3}
                for i, ms in enumerate(times_ms)]
        fig, ax = plt.subplots()
        draw_decision_vs_jct(ax, rows, {r["policy"]: "k" for r in rows})
        out = ax.get_xscale(), ax.get_xlim()
        plt.close(fig)
        return out

    kind, (lo, hi) = scale([87.0, 97.0, 126.0])
    assert kind == "linear" and lo == 0.0 and hi > 126.0
    assert scale([0.05, 6.5])[0] == "log"


def test_a_report_without_pure_lp_has_no_ratios_to_print():
    """Without pure-lp in the run there is nothing to compare with: the observation line says
    so instead of printing 'n/a×'; a policy whose every run failed shows n/a, not 0.0."""
    from agents.ranker import Ranker, RankerNet
    rep = evaluate(SMOKE, [Ranker(RankerNet(hidden=8), name="ungated", gate_candidates=0)],
                   progress=False)
    text = format_report(rep)
    assert "ranker:ungated: + its observations" in text
    assert "no pure-lp in the run to compare with" in text and "n/a×" not in text
    row = dict(_row(rep, "ranker:ungated"), seeds=[], failed_seeds=[1000000])
    rep.rows[rep.rows.index(_row(rep, "ranker:ungated"))] = row
    line = next(ln for ln in format_report(rep).splitlines() if ln.startswith("ranker:ungated "))
    assert line.split()[1:] == ["FAILED"] + ["n/a"] * 11



def test_unsure_rounds_are_solved_whole_and_reported():
    """A ranker that would keep (nearly) everything is unsure on every round it scores: those
    rounds and the back-off after them are solved whole, so its schedule is the pure LP's;
    the report says how many; with the unsure gate off it keeps everything itself."""
    from agents.ranker import Ranker, RankerNet
    from agents.report import per_seed_rows
    rep = evaluate(SMOKE, ["pure-lp",
                           Ranker(RankerNet(hidden=8), name="unsure", gate_candidates=0,
                                  threshold=1e-6, max_kept_fraction=0.25),
                           Ranker(RankerNet(hidden=8), name="off", gate_candidates=0,
                                  threshold=1e-6, max_kept_fraction=1.0)], progress=False)
    unsure, off = _row(rep, "ranker:unsure"), _row(rep, "ranker:off")
    assert unsure["unsure_fraction"] > 0 and unsure["backoff_fraction"] > 0
    assert unsure["gated_fraction"] == pytest.approx(unsure["backoff_fraction"])
    assert unsure["avg_jct_common_ratio"] == 1.0 == off["avg_jct_common_ratio"]
    assert off["unsure_fraction"] == 0 == off["backoff_fraction"] == off["gated_fraction"]
    text = format_report(rep)
    assert "in the back-off after an unsure round" in text and "unsure (scored" in text
    assert "; pruned " in text
    seeds = [r for r in per_seed_rows(rep) if r["policy"] == "ranker:unsure"]
    assert seeds and all(r["unsure_fraction"] > 0 for r in seeds)
    assert sum(r["unsure_fraction"] for r in seeds) / len(seeds) == pytest.approx(
        unsure["unsure_fraction"])


def test_report_header_counts_the_seeds_it_ran():
    """The header and the JSON say how many held-out seeds ran (``--seeds`` overrides the
    suite's default), not the suite's default count."""
    suite = SMOKE
    rep = evaluate(suite, ["fifo"], seeds=2, progress=False)
    header = format_report(rep).splitlines()[0]
    assert "2 held-out seeds (1000000, 1000001)" in header
    assert "1 held-out seed" not in header
    assert "held-out seed" not in report_json(rep)["description"]
    one = evaluate(suite, ["fifo"], seeds=1, progress=False)
    assert "1 held-out seed (1000000);" in format_report(one).splitlines()[0]


def test_rank_slots_bound_stays_within_the_environments_maximum(monkeypatch):
    """K is every job's candidates together, but at most what an environment takes (a
    workload of tens of thousands of jobs would otherwise be refused)."""
    from agents import runners
    from hsched_env.cluster import get_cluster
    scenario = SMOKE.scenarios[0]
    cluster = get_cluster(scenario.cluster)
    workload = scenario.load(heldout_seeds(1)[0], cluster)
    full = runners.rank_slots_bound(SMOKE, scenario, cluster, workload)
    assert full > 30                       # 30 jobs, several candidates each
    monkeypatch.setattr(runners, "MAX_SLOTS", 25)
    assert runners.rank_slots_bound(SMOKE, scenario, cluster, workload) == 25


def test_a_serial_evaluation_warms_the_process_up_before_its_first_timed_run(monkeypatch):
    """The process's one-off costs go to an untimed warm-up, not to the first run's rounds."""
    import agents.evaluate as ev
    calls = []
    real_warm, real_run = ev.warm_up_process, ev.run_one
    monkeypatch.setattr(ev, "warm_up_process", lambda: (calls.append("warm"), real_warm())[1])
    monkeypatch.setattr(ev, "run_one", lambda *a, **k: (calls.append("run"), real_run(*a, **k))[1])
    suite = ev.custom_suite("tiny-8", "gavel:rate=8,jobs=4,duration_scale=0.05")
    ev.evaluate(suite, ["fifo"], progress=False)
    assert calls == ["warm", "run"]


@slow
def test_timing_repeats_repeat_where_the_starvation_guard_latches():
    """The support LP that recall@k is measured against latches the default LP's starvation
    guard by job id; each run resets it, so a repeat (and a run after another scenario or
    seed, whose job ids start over) measures the same recall. On this workload the guard
    fires; before the reset the second repeat's recall differed and the merge refused it."""
    from agents.evaluate import _run_task
    from agents.runners import run_from_json
    from agents.suites import Scenario, Suite
    from hsched_env.cluster import get_cluster
    sc = Scenario("sia-64-llm", "sia-64", "gavel:rate=8,jobs=30,mix=llm")
    suite = Suite("custom", (sc,), seeds=1)
    cluster = get_cluster("sia-64")
    entry = PolicyEntry("topk", "simulator", policy_name="topk")
    run = run_from_json(_run_task(entry, suite, sc, 3, cluster, sc.load(3, cluster),
                                  timing_repeats=2))
    assert 0 < float(np.mean(run.recall)) < 1


@pytest.mark.parametrize("seeds,says", [
    ([1_000_000, 1_000_000], "distinct; repeated: [1000000]"),   # averaged as two seeds
    ([1_000_000.7], "whole numbers, got 1000000.7"),             # ran as 1000000
    (True, "a count or a list"),                                  # ran as one seed
    ([], "empty"),                                                # an all-NaN report
    ("1000000", "a count or a list"),                             # "got [1, 0, 0, ...]"
    (2.0, "a count or a list"),
    ([None], "whole numbers, got None"),
])
def test_evaluate_names_bad_seeds_before_anything_runs(seeds, says):
    from agents.suites import SMOKE
    with pytest.raises(ConfigError) as err:
        evaluate(SMOKE, ["fifo"], seeds=seeds, progress=False)
    assert err.value.field == "seeds" and says in err.value.reason


def test_a_suite_is_checked_as_it_is_made():
    from agents.suites import SMOKE, Suite, custom_suite
    for kwargs, field in (({"scenarios": ()}, "scenarios"), ({"scenarios": ("x",)}, "scenarios"),
                          ({"seeds": 2.5}, "seeds"), ({"seeds": 0}, "seeds"),
                          ({"topk": 0}, "topk"), ({"job_candidates": 1.5}, "job_candidates")):
        with pytest.raises(ConfigError) as err:
            Suite(**{"name": "x", "scenarios": SMOKE.scenarios, "seeds": 1, **kwargs})
        assert err.value.field == field
    with pytest.raises(ConfigError, match="whole number of held-out seeds"):
        custom_suite("tiny-8", "gavel:jobs=3", seeds=2.7)            # ran 2 seeds before
    with pytest.raises(ConfigError, match="suite's name or an agents.suites.Suite"):
        evaluate(None, ["fifo"], progress=False)
