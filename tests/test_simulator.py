"""Simulator invariants, accounting, determinism and placement."""

from __future__ import annotations

import dataclasses
import json
import math
import subprocess
import sys

import numpy as np
import pytest

from hsched_env.cluster import cluster_from_dict, get_cluster
from hsched_env.errors import ConfigError
from hsched_env.placement import NodeState
from hsched_env.simulator import SimConfig, Simulator
from hsched_env.workloads import load_workload
from lp_baseline.baselines import BASELINES

slow = pytest.mark.slow

TINY = get_cluster("tiny-8")
SIA = get_cluster("sia-64")


def run(cluster, spec, policy="greedy", **cfg):
    workload = load_workload(spec, cluster)
    result = Simulator(cluster, workload, BASELINES[policy](),
                       SimConfig(check_invariants=True, **cfg)).run()
    return workload, result


@pytest.mark.parametrize("policy", sorted(BASELINES))
@pytest.mark.parametrize("seed", [0, 1])
@slow
def test_invariants_and_conservation_on_random_scenarios(policy, seed):
    spec = f"gavel:rate=30,jobs=40,seed={seed},mix=llm,duration_scale=0.05"
    workload, result = run(SIA, spec, policy)
    assert len(result.jobs) == 40
    for job, rec in zip(workload.jobs, result.jobs):
        assert rec.job_id == job.job_id
        if rec.done:
            # completes exactly when its work is done, never before it arrives or starts
            assert rec.samples_done == pytest.approx(job.work_samples, rel=1e-9)
            assert rec.arrival_s <= rec.first_start_s < rec.finish_s
            # the GPU time it held is at least its work at its best throughput
            assert rec.run_s > 0
        else:
            assert rec.samples_done < job.work_samples
    m = result.metrics()
    assert m["jobs_completed"] == sum(r.done for r in result.jobs)
    assert 0 < m["gpu_util"] <= 1
    for t, u in m["gpu_util_by_type"].items():
        assert 0 <= u <= 1, t


@slow
def test_every_job_completes_without_a_time_limit():
    _, result = run(SIA, "gavel:rate=20,jobs=60,seed=3,duration_scale=0.05", "fifo-fastest")
    assert all(r.done for r in result.jobs)


@slow
def test_max_time_reports_unfinished_jobs():
    _, result = run(SIA, "gavel:rate=20,jobs=60,seed=3", "fifo", max_time_s=3600)
    m = result.metrics()
    assert m["jobs_total"] == 60 and m["jobs_completed"] < 60


def test_single_job_jct_matches_its_throughput():
    """One job alone: JCT = wait until the next round + work / throughput of its candidate."""
    spec = "gavel:rate=1,jobs=1,seed=0,mix=classic"
    workload, result = run(TINY, spec, "greedy", restart_s=0)
    rec, job = result.jobs[0], workload.jobs[0]
    sim = Simulator(TINY, workload, BASELINES["greedy"]())
    table = sim.candidates_of(job)
    fastest = table.samples_per_s.max()
    start = math.ceil(job.arrival_s / 300) * 300
    assert rec.first_start_s == pytest.approx(start)
    assert rec.finish_s == pytest.approx(start + job.work_samples / fastest, rel=1e-9)
    assert rec.restarts == 0


@slow
def test_restart_cost_is_charged_on_change():
    spec = "gavel:rate=30,jobs=30,seed=2,mix=llm,duration_scale=0.1"
    _, r0 = run(SIA, spec, "random", restart_s=0)
    _, r1 = run(SIA, spec, "random", restart_s=120)
    assert sum(r.restarts for r in r1.jobs) > 0
    assert r1.metrics()["avg_jct_s"] > r0.metrics()["avg_jct_s"]


def test_restarts_are_counted_when_they_cost_nothing():
    """A free restart (``restart_s=0``) is still a restart: a job that ran several candidates
    restarted (the count hung on the cost, so it read 0; session 49)."""
    spec = "gavel:rate=30,jobs=20,seed=2,mix=llm,duration_scale=0.05"
    _, result = run(SIA, spec, "random", restart_s=0)
    moved = [r for r in result.jobs if len(r.candidates_used) > 1]
    assert moved and all(r.restarts >= 1 for r in moved)
    assert result.metrics()["restarts_per_job"] > 0


@pytest.mark.parametrize("policy,spec,limit", [
    # 300-s rounds, the limit 10 s into one
    ("fifo-fastest", "gavel:rate=20,jobs=60,seed=3,duration_scale=0.3", 2 * 3600 + 10.0),
    ("random", "gavel:rate=20,jobs=60,seed=3,duration_scale=0.3", 2 * 3600 + 10.0),
    # no arrivals left: steady rounds are skipped up to the limit's round
    ("fifo-fastest", "gavel:rate=20,jobs=30,seed=3", 4 * 3600 + 10.0),
])
def test_a_time_limit_inside_a_round_cuts_that_round_short(policy, spec, limit):
    """``max_time_s`` off the round grid: no job finishes or holds GPUs past it (the round it
    falls in ran to its end, and jobs finishing after the limit counted as completed; session
    49); with steady rounds skipped the run is the one stepped round by round."""
    _, result = run(SIA, spec, policy, max_time_s=limit)
    assert result.end_s <= limit and any(not r.done for r in result.jobs)
    assert all(r.finish_s <= limit for r in result.jobs if r.done)
    assert all(r.first_start_s + r.run_s <= limit + 1e-6 for r in result.jobs if r.run_s > 0)
    assert result.busy_until_s <= limit
    # (``run`` checks invariants, which steps every round; skipping needs them off)
    workload = load_workload(spec, SIA)
    runs = [Simulator(SIA, workload, BASELINES[policy](),
                      SimConfig(max_time_s=limit, skip_steady_rounds=skip)).run()
            for skip in (True, False)]
    assert (runs[0].rounds_skipped > 0) == (policy == "fifo-fastest")   # random: not steady
    assert runs[1].rounds_skipped == 0
    for other in runs:
        assert [(r.finish_s, r.run_s, r.samples_done, r.gpu_s_by_type) for r in other.jobs] == \
            [(r.finish_s, r.run_s, r.samples_done, r.gpu_s_by_type) for r in result.jobs]


@slow
def test_same_seed_same_result_across_processes():
    spec = "gavel:rate=30,jobs=30,seed=5,mix=llm,duration_scale=0.1"
    _, result = run(SIA, spec, "random")
    here = [(r.finish_s, r.restarts, r.candidates_used) for r in result.jobs]
    code = (
        "import json,sys\n"
        "from hsched_env.cluster import get_cluster\n"
        "from hsched_env.workloads import load_workload\n"
        "from hsched_env.simulator import Simulator, SimConfig\n"
        "from lp_baseline.baselines import BASELINES\n"
        f"c=get_cluster('sia-64'); w=load_workload({spec!r}, c)\n"
        "r=Simulator(c,w,BASELINES['random'](),SimConfig(check_invariants=True)).run()\n"
        "print(json.dumps([(x.finish_s,x.restarts,x.candidates_used) for x in r.jobs]))\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True).stdout
    there = [tuple(x) for x in json.loads(out)]
    assert [(a, b, list(c)) for a, b, c in here] == [(a, b, list(c)) for a, b, c in there]


@slow
def test_measure_jobs_window():
    spec = "gavel:rate=30,jobs=60,seed=4,duration_scale=0.05"
    _, result = run(SIA, spec, "greedy", measure_jobs=(10, 30))
    m = result.metrics()
    assert m["jobs_total"] == 20 and m["jobs_completed"] == 20
    assert all(result.jobs[i].done for i in range(10, 30))


def _measured_span_gpu_s(cluster, workload, policy, measure):
    """The run of ``policy`` driven round by round, with the GPU-seconds every job held from
    the first round start at or after the earliest measured arrival on, summed from the
    round's placements (each job's GPUs × the time it held them: the round, or to its finish)
    — not from the simulator's own busy counter; and that round's start."""
    sim = Simulator(cluster, workload, policy, SimConfig(measure_jobs=measure))
    policy.reset(cluster, 0)
    sim.reset()
    first = min(j.arrival_s for j in workload.jobs[measure[0]:measure[1]])
    run_view, held_gpu_s, start = sim.run_view(), 0.0, None
    while (view := sim.next_view()) is not None:
        if start is None and view.time_s >= first:
            start = view.time_s
        sim.place_decision(policy.decide(view))
        placed = {j: sum(g for _, g in nodes) for j, (_, nodes) in run_view.placements.items()}
        sim.advance()
        if start is not None:
            for j, gpus in placed.items():
                finish = run_view.records[j].finish_s
                held = finish - view.time_s if finish <= view.time_s + view.round_s \
                    else view.round_s
                held_gpu_s += gpus * held
    return sim.result(), start, held_gpu_s


@pytest.mark.parametrize("policy", ["greedy", "fifo-fastest"])
def test_measured_utilization_covers_the_measured_span(policy):
    """With ``measure_jobs`` the utilization is the cluster's over the measured span only (the
    GPU time of every job from the first round a measured job could run in), not the whole
    run's, and the same with the steady rounds skipped."""
    spec = "gavel:rate=30,jobs=60,seed=4,duration_scale=0.05"
    workload = load_workload(spec, SIA)
    measure = (20, 40)
    result, start, held_gpu_s = _measured_span_gpu_s(SIA, workload, BASELINES[policy](), measure)
    m = result.metrics()
    assert result.measure_start_s == start > workload.jobs[0].arrival_s
    end = max(result.end_s, result.busy_until_s)
    expected = held_gpu_s / (SIA.num_gpus * (end - start))
    assert m["gpu_util"] == pytest.approx(expected, rel=1e-9)
    # not the whole run's: every job's GPU time over the time from the first arrival
    whole = sum(sum(r.gpu_s_by_type.values()) for r in result.jobs) / (
        SIA.num_gpus * (end - workload.jobs[0].arrival_s))
    assert abs(m["gpu_util"] - whole) > 1e-3
    # the per-type figures weigh back to the total
    caps = dict(zip(SIA.gpu_types, SIA.capacity_vec))
    assert sum(u * caps[t] for t, u in m["gpu_util_by_type"].items()) / SIA.num_gpus \
        == pytest.approx(m["gpu_util"], rel=1e-12)
    skipped = Simulator(SIA, workload, BASELINES[policy](),
                        SimConfig(measure_jobs=measure, skip_steady_rounds=True)).run()
    assert skipped.metrics()["gpu_util"] == m["gpu_util"]


def test_measured_span_starts_at_its_first_arrival_when_the_idle_clock_jumps_past_it(tmp_path):
    """The first measured job can never run and the cluster is idle around its arrival: the
    clock jumps from the last completion to the next arrival, past the span's start, which
    is still the first round at or after that job's arrival (nothing ran in between)."""
    trace = tmp_path / "jobs.csv"
    trace.write_text("job_id,submit_time_s,duration_s,num_gpus,model,gpu_type\n"
                     "w,0,1000,1,resnet18,\nx,5000,1000,4,llama2-7b,T4\n"
                     "y,10000,1000,1,resnet18,\n", encoding="utf-8")
    workload = load_workload(f"csv:path={trace}", TINY)
    result = Simulator(TINY, workload, BASELINES["greedy"](),
                       SimConfig(measure_jobs=(1, 3))).run()
    assert result.measure_start_s == 5100.0            # x arrives at 5,000 s; 300 s rounds
    y = result.jobs[2]
    assert y.done and not result.jobs[1].done
    span = max(result.end_s, result.busy_until_s) - 5100.0
    assert result.metrics()["gpu_util"] == pytest.approx(
        sum(y.gpu_s_by_type.values()) / (TINY.num_gpus * span), rel=1e-12)
    # a time limit before the round the jump lands in: the run never reaches the span
    cut = Simulator(TINY, workload, BASELINES["greedy"](),
                    SimConfig(measure_jobs=(1, 3), max_time_s=5050.0)).run()
    assert cut.measure_start_s is None and math.isnan(cut.metrics()["gpu_util"])


def test_a_candidate_cache_shared_across_clusters_and_planner_configs_keeps_them_apart():
    """One cache for simulators of two clusters and two planner configurations: each run
    schedules as with a cache of its own (the tables were keyed by the job alone, so the
    second cluster's run was priced with the first's tables: 3,262 s against 2,045 s)."""
    from hsched_env.planner import PlannerConfig
    from lp_baseline.policy import make_policy
    other = cluster_from_dict({"name": "other", "nodes": [
        {"gpu_type": "A100-40GB", "gpus_per_node": 4, "count": 2},
        {"gpu_type": "T4", "gpus_per_node": 2, "count": 2}]})
    spec = "gavel:rate=6,jobs=10,seed=1,duration_scale=0.1"
    few = SimConfig(planner=PlannerConfig(max_candidates=1, data_parallel_only=True))

    def finish_times(cluster, config, cache=None):
        run = Simulator(cluster, load_workload(spec, cluster), make_policy("heterosched-lp"),
                        config, candidate_cache=cache).run()
        return [r.finish_s for r in run.jobs]

    alone = {(c.name, k): finish_times(c, cfg) for c in (TINY, other)
             for k, cfg in (("default", SimConfig()), ("few", few))}
    assert alone[TINY.name, "default"] != alone["other", "default"]
    assert alone[TINY.name, "default"] != alone[TINY.name, "few"]
    shared: dict = {}
    for c in (TINY, other):
        for k, cfg in (("few", few), ("default", SimConfig())):
            assert finish_times(c, cfg, shared) == alone[c.name, k], (c.name, k)
    assert len({key[0] for key in shared}) == 4                  # four scopes in one cache


@pytest.mark.parametrize("limit", [3000.0, 4950.0, 5000.0, 5050.0])
def test_an_idle_clock_stops_at_the_time_limit(tmp_path, limit):
    """The cluster is idle when the limit falls: the clock stops there, not at the round
    after the next arrival (it read 5,100 s against a 3,000 s limit, and a job arriving
    past the limit was counted in the system for 100 s)."""
    trace = tmp_path / "jobs.csv"
    trace.write_text("job_id,submit_time_s,duration_s,num_gpus,model,gpu_type\n"
                     "a,0,600,1,resnet18,\nb,5000,1200,1,resnet18,\n", encoding="utf-8")
    workload = load_workload(f"csv:path={trace}", TINY)
    sim = Simulator(TINY, workload, BASELINES["greedy"](), SimConfig(max_time_s=limit))
    result = sim.run()
    a, b = result.jobs
    assert sim.end_reason == "time_limit" and a.done and not b.done
    assert sim.run_view().time_s == limit
    in_system_b = max(limit - 5000.0, 0.0)             # b waits from its arrival to the limit
    assert sim.job_time_s() == pytest.approx(a.jct_s + in_system_b, rel=1e-12)
    assert result.end_s == a.finish_s


@pytest.mark.parametrize("arrival", [950.0, 900.0, 1200.0])
def test_the_clock_stops_at_a_limit_before_the_first_arrivals_round(tmp_path, arrival):
    """A limit before the round of the first arrival, inside a round or on its boundary:
    the run ends at the limit (the clock read that round's start, 900 s against a 500 s
    limit)."""
    trace = tmp_path / "late.csv"
    trace.write_text(f"job_id,submit_time_s,duration_s,num_gpus,model\n"
                     f"a,{arrival},600,1,resnet18\n", encoding="utf-8")
    sim = Simulator(TINY, load_workload(f"csv:path={trace}", TINY), BASELINES["greedy"](),
                    SimConfig(max_time_s=500.0))
    sim.run()
    assert sim.end_reason == "time_limit" and sim.run_view().time_s == 500.0


@pytest.mark.parametrize("skip", [True, False])
def test_a_job_arriving_on_a_round_boundary_starts_there_with_any_round_length(tmp_path, skip):
    """With a round length that is not a whole number the clock is the round's index × R,
    as the idle clock's is: added up round by round it drifted below the boundary (8 × 61.7
    read 493.59999999999997), and a job arriving there waited a round longer when the
    cluster had been busy (JCT 1,061.7 s) than when it had been idle (1,000 s)."""
    trace = tmp_path / "drift.csv"
    trace.write_text("job_id,submit_time_s,duration_s,num_gpus,model,gpu_type\n"
                     "a,0,5000,1,resnet50,V100-16GB\nb,493.6,1000,1,resnet50,V100-16GB\n",
                     encoding="utf-8")
    alone = tmp_path / "alone.csv"
    alone.write_text("job_id,submit_time_s,duration_s,num_gpus,model,gpu_type\n"
                     "b,493.6,1000,1,resnet50,V100-16GB\n", encoding="utf-8")
    jct = {}
    for name, path in (("busy", trace), ("idle", alone)):
        workload = load_workload(f"csv:path={path}", TINY)
        result = Simulator(TINY, workload, BASELINES["fifo-fastest"](),
                           SimConfig(round_s=61.7, restart_s=10.0, check_invariants=True,
                                     skip_steady_rounds=skip)).run()
        b = next(r for r in result.jobs if r.name == "b")
        jct[name] = (b.first_start_s, b.jct_s)
    assert jct["busy"] == jct["idle"] and jct["busy"][0] == 8 * 61.7


def test_measured_utilization_is_nan_when_the_run_ends_before_the_span():
    workload = load_workload("gavel:rate=30,jobs=40,seed=4,duration_scale=0.05", SIA)
    first = workload.jobs[30].arrival_s
    result = Simulator(SIA, workload, BASELINES["greedy"](),
                       SimConfig(measure_jobs=(30, 40), max_time_s=first - 600.0)).run()
    m = result.metrics()
    assert result.measure_start_s is None
    assert math.isnan(m["gpu_util"]) and all(math.isnan(u) for u in m["gpu_util_by_type"].values())


def test_a_policy_cannot_change_the_candidate_tables_it_is_shown():
    """The view is read-only down to the candidate tables: writing into one raises, so a
    policy (or an observation builder normalizing in place) cannot change the simulated
    speeds of this run or of later runs sharing the table cache."""
    workload = load_workload("gavel:rate=30,jobs=6,seed=4,duration_scale=0.05", TINY)

    class Cheat:
        name = "cheat"

        def reset(self, cluster, seed):
            pass

        def decide(self, view):
            for table in view.candidates:
                table.samples_per_s[:] *= 2
            return {}

    cache: dict = {}
    with pytest.raises(ValueError, match="read-only"):
        Simulator(TINY, workload, Cheat(), SimConfig(), candidate_cache=cache).run()
    assert cache and all(not t.samples_per_s.flags.writeable and not t.gpus.flags.writeable
                         for t in cache.values())
    before = Simulator(TINY, workload, BASELINES["greedy"](), SimConfig()).run()
    after = Simulator(TINY, workload, BASELINES["greedy"](), SimConfig(),
                      candidate_cache=cache).run()
    assert [r.finish_s for r in after.jobs] == [r.finish_s for r in before.jobs]
    # tables a caller put into the cache itself (writable copies) are handed out read-only too
    mine = {k: dataclasses.replace(t, **{f: np.array(getattr(t, f)) for f in ("samples_per_s",
                                                                              "gpus")})
            for k, t in cache.items()}
    assert all(t.samples_per_s.flags.writeable for t in mine.values())
    with pytest.raises(ValueError, match="read-only"):
        Simulator(TINY, workload, Cheat(), SimConfig(), candidate_cache=mine).run()
    assert not any(t.samples_per_s.flags.writeable for t in mine.values())


def test_jobs_that_do_not_fit_the_cluster_are_refused_by_name():
    """Jobs loaded for a larger cluster (or built by hand) that cannot run on this one are
    refused before anything runs, naming the job; they waited for ever under FIFO before."""
    jobs = list(load_workload("gavel:jobs=6,seed=3", get_cluster("modern-512")).jobs)
    jobs[4] = dataclasses.replace(jobs[4], requested_gpus=16)    # fits modern-512, not tiny-8
    Simulator(get_cluster("modern-512"), jobs, BASELINES["fifo"]())
    with pytest.raises(ConfigError, match=r"job 4 .*field 'requested_gpus'.*needs 16 GPUs but "
                                          r"cluster 'tiny-8' has 8 in total"):
        Simulator(TINY, jobs, BASELINES["fifo"]())
    typed = dataclasses.replace(load_workload("gavel:jobs=1,seed=1", TINY).jobs[0],
                                gpu_type="H100-SXM", requested_gpus=1)
    with pytest.raises(ConfigError, match="cluster 'tiny-8' has no H100-SXM GPUs") as err:
        Simulator(TINY, [typed], BASELINES["fifo"]())
    assert err.value.field == "gpu_type"
    big = dataclasses.replace(typed, gpu_type="T4", requested_gpus=5)     # tiny-8 has 4 T4s
    with pytest.raises(ConfigError, match="needs 5 GPUs of type T4 but cluster 'tiny-8' has 4"):
        Simulator(TINY, [big], BASELINES["fifo"]())


def test_a_policy_without_a_name_runs_and_a_class_is_refused():
    workload = load_workload("gavel:rate=30,jobs=4,seed=4,duration_scale=0.05", TINY)

    class Nameless:
        def reset(self, cluster, seed):
            pass

        def decide(self, view):
            return {int(j): 0 for j in view.job_ids}

    result = Simulator(TINY, workload, Nameless(), SimConfig()).run()
    assert result.policy == "Nameless" and all(r.done for r in result.jobs)
    with pytest.raises(ConfigError, match="got the class Nameless: pass an instance"):
        Simulator(TINY, workload, Nameless, SimConfig())


def test_bad_config_is_rejected():
    with pytest.raises(ConfigError, match="round"):
        SimConfig(round_s=0)
    with pytest.raises(ConfigError, match="restart"):
        SimConfig(round_s=60, restart_s=60)
    with pytest.raises(ConfigError, match="measure_jobs"):
        SimConfig(measure_jobs=(5, 5))


def test_policy_choosing_an_inactive_job_is_an_error():
    class Bad:
        name = "bad"
        def reset(self, cluster, seed): ...
        def decide(self, view):
            return {10_000: 0}
    workload = load_workload("gavel:rate=4,jobs=3,seed=0", TINY)
    with pytest.raises(ConfigError, match="not active"):
        Simulator(TINY, workload, Bad()).run()


def test_placement_best_fit_and_tensor_groups():
    c = cluster_from_dict({"name": "p", "nodes": [
        {"gpu_type": "A100-80GB", "gpus_per_node": 8, "count": 2},
        {"gpu_type": "T4", "gpus_per_node": 4, "count": 2}]})
    ns = NodeState(c)
    a = ns.place([(0, 2)], tp=2)
    b = ns.place([(0, 4)], tp=4)
    assert {v for v, _ in a} == {v for v, _ in b} == {0}      # best fit packs node 0
    full = ns.place([(0, 8)], tp=8)
    assert full == ((1, 8),)
    assert ns.place([(0, 4)], tp=4) is None                   # only 2 free, on node 0
    mixed = ns.place([(0, 2), (1, 4)], tp=2)
    assert mixed is not None and ns.free.sum() == 4
    ns.release(full)
    assert ns.free[1] == 8
    assert np.all(ns.free <= ns.capacity)
    # a tensor group of 4 cannot straddle nodes of 6 GPUs
    c6 = cluster_from_dict({"name": "six", "nodes": [
        {"gpu_type": "V100-16GB", "gpus_per_node": 6, "count": 2}]})
    assert NodeState(c6).place([(0, 8)], tp=4) is None
    assert NodeState(c6).place([(0, 8)], tp=2) is not None


def _reference_part(free, lo, hi, gpn, n, tp):
    """The placement rule written out plainly: whole free nodes lowest index first, then the
    best-fit node for the remainder (fewest free GPUs that hold it, lowest index on ties)."""
    whole, rest = divmod(n, gpn)
    if (rest and rest % tp) or (whole and gpn % tp):
        return None
    free = list(free[lo:hi])
    out = []
    for i in range(hi - lo):
        if len(out) < whole and free[i] == gpn:
            out.append((lo + i, gpn))
            free[i] = 0
    if len(out) < whole:
        return None
    if rest:
        fits = [(f, i) for i, f in enumerate(free) if f >= rest]
        if not fits:
            return None
        out.append((lo + min(fits)[1], rest))
    return out


@pytest.mark.parametrize("list_nodes", [0, 10**6])
def test_node_placement_on_lists_and_on_arrays_follows_the_rule(monkeypatch, list_nodes):
    """Small pools are placed on Python ints, large ones on arrays: both must follow the
    same rule, on random free-GPU states of pools of 2, 4 and 8 GPUs per node."""
    from hsched_env import placement
    monkeypatch.setattr(placement, "_LIST_NODES", list_nodes)
    c = cluster_from_dict({"name": "mixed", "nodes": [
        {"gpu_type": "A100-80GB", "gpus_per_node": 8, "count": 12},
        {"gpu_type": "T4", "gpus_per_node": 4, "count": 9},
        {"gpu_type": "V100-16GB", "gpus_per_node": 2, "count": 5}]})
    rng = np.random.default_rng(7)
    first = [int(v) for v in c.pool_first_node]
    placed = 0
    for _ in range(1500):
        ns = NodeState(c)
        free = (rng.random(len(ns.free)) * (ns.capacity + 1)).astype(np.int64)
        free = np.where(rng.random(len(free)) < 0.4, ns.capacity, free)
        ns.free[:] = free
        pool = int(rng.integers(len(c.pools)))
        gpn = c.pools[pool].gpus_per_node
        n, tp = int(rng.integers(1, 3 * gpn + 1)), int(rng.choice([1, 2, 4]))
        want = _reference_part(free, first[pool], first[pool + 1], gpn, n, tp)
        got = ns.place([(pool, n)], tp)
        assert (None if got is None else list(got)) == want, (pool, n, tp, free)
        if got is not None:
            placed += 1
            taken = np.zeros_like(free)
            for v, k in got:
                taken[v] += k
            assert np.array_equal(ns.free, free - taken)
        else:
            assert np.array_equal(ns.free, free)          # nothing taken on failure
    assert 300 < placed < 1400                            # both outcomes were exercised


# ---------------------------------------------------------------- regressions (code review)
def test_utilization_stays_below_one_when_the_run_stops_early():
    _, result = run(TINY, "gavel:rate=30,jobs=40,seed=0,mix=llm,duration_scale=0.05", "greedy",
                    max_time_s=3000)
    m = result.metrics()
    assert 0 < m["gpu_util"] <= 1
    assert all(0 <= u <= 1 for u in m["gpu_util_by_type"].values())


SIX = cluster_from_dict({"name": "six-gpu-nodes", "nodes": [
    {"gpu_type": "A100-40GB", "gpus_per_node": 6, "count": 4},
    {"gpu_type": "V100-16GB", "gpus_per_node": 6, "count": 2}]})


@slow
def test_every_candidate_is_placeable_on_nodes_of_six():
    from hsched_env.placement import candidate_parts
    workload = load_workload("gavel:rate=6,jobs=60,seed=0,mix=llm,duration_scale=0.2", SIX)
    sim = Simulator(SIX, workload, BASELINES["greedy"]())
    for job in workload.jobs:
        table = sim.candidates_of(job)
        for r in range(len(table)):
            assert NodeState(SIX).place(candidate_parts(table, r), int(table.tp[r])), \
                (job.model, table.take([r]).to_records()[0])


@slow
def test_lp_completes_every_job_on_nodes_of_six():
    from lp_baseline.policy import make_policy
    workload = load_workload("gavel:rate=6,jobs=60,seed=0,mix=llm,duration_scale=0.2", SIX)
    result = Simulator(SIX, workload, make_policy("heterosched-lp"),
                       SimConfig(check_invariants=True)).run()
    assert all(r.done for r in result.jobs)


def test_two_pools_of_one_gpu_type():
    two = cluster_from_dict({"name": "two-t4-pools", "nodes": [
        {"gpu_type": "T4", "gpus_per_node": 4, "count": 1},
        {"gpu_type": "T4", "gpus_per_node": 8, "count": 2}]})
    _, result = run(two, "gavel:rate=10,jobs=20,seed=0,duration_scale=0.05", "fifo")
    assert all(r.done for r in result.jobs)


def test_unsorted_arrivals_are_rejected():
    import dataclasses
    workload = load_workload("gavel:rate=4,jobs=3,seed=0", TINY)
    jobs = list(workload.jobs)
    jobs[1] = dataclasses.replace(jobs[1], arrival_s=jobs[2].arrival_s + 1000)
    with pytest.raises(ConfigError, match="sorted by arrival"):
        Simulator(TINY, jobs, BASELINES["fifo"]())


def _outcome(result) -> tuple:
    """Everything a run computes about its jobs and the cluster, for bitwise comparison."""
    jobs = [(r.job_id, r.first_start_s, r.finish_s, r.restarts, r.run_s, r.samples_done,
             tuple(sorted(r.gpu_s_by_type.items())), tuple(r.candidates_used),
             r.contention_sum, r.rounds_active) for r in result.jobs]
    return (jobs, result.end_s, result.rounds, tuple(result.active_jobs),
            result.busy_gpu_s_by_type.tobytes(), result.busy_until_s)


@pytest.mark.parametrize("policy", ["fifo-fastest", "greedy"])
@pytest.mark.parametrize("cluster,spec", [
    (get_cluster("gavel-108"), "gavel:rate=4,jobs=120,seed={seed},multi_gpu=0"),
    (get_cluster("gavel-108"), "gavel:rate=8,jobs=120,seed={seed}"),
    (SIA, "gavel:rate=20,jobs=80,seed={seed},mix=llm,duration_scale=0.1"),
    (TINY, "gavel:rate=3,jobs=30,seed={seed},duration_scale=0.2"),
])
@slow
def test_skipping_steady_rounds_changes_nothing(policy, cluster, spec):
    """A steady policy's run is bit for bit the same with and without round skipping, on
    many seeds and clusters, and the skipping does skip rounds (no decision is taken in
    them)."""
    skipped = 0
    for seed in range(3):
        workload = load_workload(spec.format(seed=seed), cluster)
        out = []
        for skip in (False, True):
            cfg = SimConfig(round_s=360, skip_steady_rounds=skip, seed=seed)
            res = Simulator(cluster, workload, BASELINES[policy](), cfg).run()
            out.append(res)
        plain, fast = out
        assert _outcome(fast) == _outcome(plain)
        assert plain.rounds_skipped == 0
        assert len(fast.decision_s) == fast.rounds - fast.rounds_skipped
        assert len(plain.decision_s) == plain.rounds
        m_plain, m_fast = plain.metrics(), fast.metrics()
        for key in ("avg_jct_s", "p99_jct_s", "makespan_s", "gpu_util", "ftf_worst",
                    "restarts_per_job", "rounds"):
            assert m_fast[key] == m_plain[key], key
        skipped += fast.rounds_skipped
    assert skipped > 0


@pytest.mark.parametrize("chunk,by_round", [(None, None), (None, 0), (1, 0), (40, 0),
                                            (1000, 0), (1000, None)])
@pytest.mark.parametrize("spec,limit,round_s", [
    ("gavel:jobs=6,duration_scale=30,seed=1", None, 300.0),   # ~15,000 steady rounds
    ("gavel:rate=2,jobs=12,duration_scale=8,seed=4", 2.0e6, 360),  # arrivals, an off-grid limit
    # a round length that is no whole number: every sum (the clock, run time, GPU-seconds)
    # then depends on the order of the additions, not only the remaining work
    ("gavel:rate=2,jobs=12,duration_scale=2,seed=4", 9.0e5, 61.7),
])
def test_long_steady_stretches_are_skipped_in_chunks_bit_for_bit(monkeypatch, chunk, by_round,
                                                                 spec, limit, round_s):
    """Steady rounds are skipped many at a time (array additions in ``advance``'s order), so
    a long job costs no Python loop per round: the same run, bit for bit, as stepping every
    round, with the chunk cut to one round, to a few, or left at its default, and with the
    round-by-round path near an event on (default) or off (``_ROUND_BY_ROUND`` 0)."""
    import hsched_env.simulator as simulator
    workload = load_workload(spec, TINY)
    cfg = dict(round_s=round_s, max_time_s=limit)
    plain = Simulator(TINY, workload, BASELINES["fifo-fastest"](),
                      SimConfig(skip_steady_rounds=False, **cfg)).run()
    if chunk is not None:                   # entries per chunk: rounds × jobs × GPU types
        monkeypatch.setattr(simulator, "_SKIP_CHUNK", chunk)
    if by_round is not None:
        monkeypatch.setattr(simulator, "_ROUND_BY_ROUND", by_round)
    fast = Simulator(TINY, workload, BASELINES["fifo-fastest"](), SimConfig(**cfg)).run()
    assert fast.rounds_skipped > 0.9 * fast.rounds > 1000
    assert _outcome(fast) == _outcome(plain)
    assert fast.metrics()["gpu_util"] == plain.metrics()["gpu_util"]


def test_numpy_round_lengths_run_the_clock_in_python_floats():
    """``SimConfig(round_s=np.float32(61.7))`` ran the clock in float32, so skipping and
    stepping disagreed; NumPy scalars are taken as the Python numbers they hold."""
    cfg = SimConfig(round_s=np.float32(61.7), restart_s=np.float32(6.5),
                    max_time_s=np.float32(9.0e5))
    assert all(type(v) is float for v in (cfg.round_s, cfg.restart_s, cfg.max_time_s))
    assert cfg.round_s == float(np.float32(61.7))
    assert type(SimConfig(round_s=np.int64(360)).round_s) is int
    workload = load_workload("gavel:rate=2,jobs=12,duration_scale=2,seed=4", TINY)
    runs = [Simulator(TINY, workload, BASELINES["fifo-fastest"](),
                      SimConfig(round_s=np.float32(61.7), max_time_s=9.0e5,
                                skip_steady_rounds=skip)).run() for skip in (False, True)]
    assert runs[1].rounds_skipped > 0 and _outcome(runs[1]) == _outcome(runs[0])


@pytest.mark.parametrize("policy,spec", [
    ("fifo-fastest", "gavel:rate=4,jobs=80,seed=2,multi_gpu=0"),
    ("greedy", "gavel:rate=4,jobs=80,seed=2,multi_gpu=0"),
    # multi-GPU jobs: strict FIFO's pass stops at a waiting job (``blocking``)
    ("fifo-fastest", "gavel:rate=4,jobs=80,seed=2")])
def test_a_settling_policy_skips_from_the_round_it_settled_in(policy, spec):
    """``settles``: once every job runs the first row of the decision, the simulator skips
    from that round on instead of deciding the repeat round first — the same run, bit for
    bit, with fewer decisions."""
    cluster = get_cluster("gavel-108")
    workload = load_workload(spec, cluster)

    class SteadyOnly(BASELINES[policy]):
        steady = True                       # the same decisions, without the promise
    assert SteadyOnly.settles is False and BASELINES[policy].settles is True
    assert SteadyOnly.blocking is BASELINES[policy].blocking     # a rule, inherited
    cfg = SimConfig(round_s=360, seed=2)
    plain = Simulator(cluster, workload, BASELINES[policy](),
                      SimConfig(round_s=360, seed=2, skip_steady_rounds=False)).run()
    steady = Simulator(cluster, workload, SteadyOnly(), cfg).run()
    settled = Simulator(cluster, workload, BASELINES[policy](), cfg).run()
    assert _outcome(settled) == _outcome(steady) == _outcome(plain)
    assert settled.rounds_skipped > steady.rounds_skipped > 0
    assert len(settled.decision_s) == settled.rounds - settled.rounds_skipped


def test_skipping_stops_at_a_time_limit_and_not_for_unsteady_policies():
    cluster = get_cluster("gavel-108")
    workload = load_workload("gavel:rate=4,jobs=60,seed=1,multi_gpu=0", cluster)
    for name in ("fifo-fastest", "greedy"):
        res = [Simulator(cluster, workload, BASELINES[name](),
                         SimConfig(round_s=360, max_time_s=40_000,
                                   skip_steady_rounds=skip)).run()
               for skip in (False, True)]
        assert res[1].rounds_skipped > 0
        assert _outcome(res[1]) == _outcome(res[0])
        assert max(r.finish_s for r in res[1].jobs if r.done) < 40_000
        assert res[1].end_s == res[0].end_s and res[1].rounds == res[0].rounds
    # a subclass makes the promise only by stating it (srf orders by remaining work)
    class ByRemaining(BASELINES["fifo-fastest"]):
        def order(self, view):
            return np.argsort(view.remaining_samples, kind="stable")
    assert ByRemaining.steady is False and ByRemaining.options_per_table is False
    assert ByRemaining.settles is False and BASELINES["srf"].settles is False
    # srf orders by remaining work and fifo draws random numbers: asked every round
    for name in ("srf", "fifo"):
        r = Simulator(cluster, workload, BASELINES[name](), SimConfig(round_s=360)).run()
        assert r.rounds_skipped == 0 and len(r.decision_s) == r.rounds


def test_a_stall_warning_names_the_policy(monkeypatch, caplog):
    """A run that stops because nobody runs the waiting jobs says whose run it was."""
    import logging

    import hsched_env.simulator as simulator_mod
    from hsched_env.cluster import get_cluster
    from hsched_env.workloads import load_workload

    class Idle:
        name = "idle-policy"

        def reset(self, cluster, seed):
            pass

        def decide(self, view):
            return {}

    monkeypatch.setattr(simulator_mod, "STALL_ROUNDS", 5)
    cluster = get_cluster("tiny-8")
    workload = load_workload("gavel:rate=4,jobs=2,seed=0", cluster)
    with caplog.at_level(logging.WARNING, logger="hsched_env.simulator"):
        sim = simulator_mod.Simulator(cluster, workload, Idle())
        sim.run()
    assert sim.end_reason == "stalled"
    said = [r.getMessage() for r in caplog.records
            if r.getMessage().startswith("idle-policy: no job ran for 5 rounds")]
    assert len(said) == 1, [r.getMessage() for r in caplog.records]
    names = ", ".join(f"{j.name} ({j.model}, {j.requested_gpus} GPUs)" for j in workload.jobs)
    assert said[0].endswith(f"(they are reported unfinished): {names}"), said[0]


def test_the_driving_api_before_reset_and_bad_arguments_are_clear_errors():
    """``next_view()`` / ``advance()`` / ``result()`` before ``reset()`` raised
    ``AttributeError: 'NoneType' ...``; a workload that is not one and a cache that is no dict
    raised deep inside."""
    import copy
    import pickle
    jobs = load_workload("gavel:jobs=3,seed=1", TINY)
    sim = Simulator(TINY, jobs, BASELINES["fifo"]())
    for call in (sim.next_view, sim.advance, sim.result, lambda: sim.run_view().time_s):
        with pytest.raises(RuntimeError, match="call reset"):
            call()
    for clone in (copy.deepcopy(sim), pickle.loads(pickle.dumps(sim))):
        with pytest.raises(RuntimeError, match="call reset"):
            clone.next_view()
    with pytest.raises(ConfigError, match="RunSnapshot"):
        sim.restored(None)
    assert sim.run().metrics()["jobs_completed"] == 3
    for workload, cache, field in ((None, None, "workload"), (5, None, "workload"),
                                   (jobs, [], "candidate_cache")):
        with pytest.raises(ConfigError) as err:
            Simulator(TINY, workload, BASELINES["fifo"](), candidate_cache=cache)
        assert err.value.field == field
