"""Property tests of the simulator's invariants over random clusters, workloads and policies
(hypothesis): no node or GPU type over-allocated, job conservation, work conservation and
monotone time — checked independently here, and by the simulator's own debug mode
(``SimConfig(check_invariants=True)``), which must also catch a broken run."""

from __future__ import annotations

import math
import os

import numpy as np
import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from hsched_env.catalog import gpu_catalog
from hsched_env.cluster import cluster_from_dict, get_cluster
from hsched_env.simulator import DONE, SimConfig, Simulator
from hsched_env.workloads import load_workload
from lp_baseline.policy import make_policy

slow = pytest.mark.slow

GPU_TYPES = sorted(gpu_catalog())
POLICIES = ("heterosched-lp", "topk", "gavel", "fifo", "srf", "greedy", "random", "pop-2")
MAX_ROUNDS = 120         # cap per example: a big model on one K80 would run for days
# 25 fixed examples per policy (derandomized: the same ones every run, ~10 s in all);
# HSCHED_INVARIANT_EXAMPLES=N draws N fresh random examples per policy instead (longer soaks).
_EXAMPLES = os.environ.get("HSCHED_INVARIANT_EXAMPLES")
PROPERTY = settings(max_examples=int(_EXAMPLES or 25), deadline=None,
                    derandomize=_EXAMPLES is None, print_blob=True,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])


@st.composite
def clusters(draw):
    pools = draw(st.lists(st.tuples(st.sampled_from(GPU_TYPES), st.sampled_from([1, 2, 4, 8]),
                                    st.integers(1, 3)), min_size=1, max_size=3))
    nodes = [{"gpu_type": t, "gpus_per_node": g, "count": n, "name": f"p{i}"}
             for i, (t, g, n) in enumerate(pools)]
    return cluster_from_dict({"name": "random", "nodes": nodes})


@st.composite
def scenarios(draw):
    cluster = draw(clusters())
    rate = draw(st.sampled_from([1.0, 4.0, 12.0, 40.0]))
    jobs = draw(st.integers(1, 8))
    seed = draw(st.integers(0, 10_000))
    mix = draw(st.sampled_from(["classic", "llm"]))
    scale = draw(st.sampled_from([0.01, 0.03, 0.1]))
    spec = f"gavel:rate={rate},jobs={jobs},seed={seed},mix={mix},duration_scale={scale}"
    round_s = draw(st.sampled_from([60.0, 300.0, 360.0]))
    restart_s = draw(st.sampled_from([0.0, 10.0, 30.0]))
    return cluster, spec, round_s, restart_s, draw(st.integers(0, 3))


def drive(cluster, workload, policy, config):
    """Run the simulation step by step, checking the invariants independently of the
    simulator's own accounting. Returns (simulator, arrived ids, completed ids, expected
    samples done per job)."""
    sim = Simulator(cluster, workload, policy, config)
    policy.reset(cluster, config.seed)
    sim.reset()
    run = sim.run_view()
    n, R = len(workload.jobs), config.round_s
    node_cap = np.asarray(cluster.node_gpus)
    type_cap = np.asarray(cluster.capacity_vec)
    arrived, completed = [], []
    expected = np.zeros(n)
    last_t = -math.inf
    while (view := sim.next_view()) is not None:
        # monotone time: each round opens later than the previous one
        assert view.time_s > last_t
        last_t = view.time_s
        arrived += view.arrived
        completed += view.completed
        assert {int(j) for j in view.job_ids} <= set(arrived)
        assert all(run.state[j] < DONE for j in view.job_ids)
        decision = policy.decide(view)
        sim.place_decision(decision, who=policy.name)
        # no node and no GPU type over-allocated
        used = np.zeros(len(node_cap), dtype=np.int64)
        for j, (r, nodes) in run.placements.items():
            for v, k in nodes:
                used[v] += k
            assert np.array_equal(np.bincount(np.asarray(cluster.node_type)[[v for v, _ in nodes]],
                                              weights=[k for _, k in nodes],
                                              minlength=len(type_cap)),
                                  run.tables[j].gpus[r])
        assert np.all(used <= node_cap)
        assert np.all(np.bincount(cluster.node_type, weights=used,
                                  minlength=len(type_cap)) <= type_cap)
        placed = dict(run.placements)
        restarts = {j: run.records[j].restarts for j in placed}
        t = sim.time_s
        sim.advance()
        assert sim.time_s == t + R
        # work conservation, from the placements: throughput × productive time
        for j, (r, _) in placed.items():
            rec = run.records[j]
            restart = config.restart_s * (rec.restarts - restarts[j])
            stop = rec.finish_s if rec.done else t + R
            assert t <= stop <= t + R
            expected[j] += float(run.tables[j].samples_per_s[r]) * (stop - t - restart)
    return sim, arrived, completed, expected


@slow
@pytest.mark.parametrize("policy_name", POLICIES)
@given(scenario=scenarios())
@PROPERTY
def test_simulator_invariants_hold_on_random_scenarios(policy_name, scenario):
    cluster, spec, round_s, restart_s, seed = scenario
    workload = load_workload(spec, cluster)
    n = len(workload.jobs)
    first = workload.jobs[0].arrival_s
    config = SimConfig(round_s=round_s, restart_s=restart_s, seed=seed, check_invariants=True,
                       max_time_s=math.floor(first / round_s) * round_s + MAX_ROUNDS * round_s)
    policy = make_policy(policy_name)
    sim, arrived, completed, expected = drive(cluster, workload, policy, config)
    result = sim.result()
    assert sim.end_reason in ("completed", "time_limit")

    # job conservation: every job reported once, in id order; each arrives at most once (all
    # of them unless the run was cut at max_time_s), completes at most once, only after arriving
    assert [r.job_id for r in result.jobs] == list(range(n))
    assert arrived == sorted(set(arrived))
    if result.rounds and arrived:
        assert arrived == list(range(len(arrived)))
    if sim.end_reason == "completed":
        assert arrived == list(range(n))
    assert len(completed) == len(set(completed))
    done = {r.job_id for r in result.jobs if r.done}
    assert set(completed) <= done
    for rec, job in zip(result.jobs, workload.jobs):
        assert rec.arrival_s == job.arrival_s and rec.work_samples == job.work_samples
        # work conservation: samples done = Σ throughput × productive time run
        assert rec.samples_done == pytest.approx(expected[rec.job_id], rel=1e-9, abs=1e-6)
        if rec.done:
            assert rec.samples_done == pytest.approx(job.work_samples, rel=1e-9)
            assert rec.arrival_s <= rec.first_start_s <= rec.finish_s <= result.end_s
            assert rec.run_s <= rec.finish_s - rec.first_start_s + 1e-6
        else:
            assert rec.samples_done < job.work_samples * (1 + 1e-12)
        assert rec.run_s >= 0 and rec.samples_done >= 0
    m = result.metrics()
    event(f"end {sim.end_reason}")
    event("rounds " + ("<10" if result.rounds < 10 else "<40" if result.rounds < 40 else ">=40"))
    event("all jobs done" if len(done) == n else "some jobs unfinished")
    assert m["jobs_completed"] == len(done)
    assert m["lp_fallbacks"] == 0              # nothing goes wrong on valid input
    assert 0.0 <= m["gpu_util"] <= 1.0 + 1e-9
    if sim.end_reason == "completed":
        # nothing stalls: every job that has a candidate on the cluster completes
        assert done == {i for i, tab in enumerate(sim.run_view().tables) if len(tab)}


# ------------------------------------------------------------------------------- debug mode
def _run_until_placed(policy="greedy"):
    cluster = get_cluster("tiny-8")
    workload = load_workload("gavel:rate=20,jobs=6,seed=1,duration_scale=0.05", cluster)
    sim = Simulator(cluster, workload, make_policy(policy), SimConfig(check_invariants=True))
    sim.policy.reset(cluster, 0)
    sim.reset()
    while True:
        view = sim.next_view()
        sim.place_decision(sim.policy.decide(view))
        if sim.run_view().placements:
            return sim
        sim.advance()


@pytest.mark.parametrize("corruption", ["node", "work", "samples", "time"])
def test_debug_mode_catches_a_broken_run(corruption):
    """``check_invariants`` raises on each kind of corruption (and only with it on)."""
    sim = _run_until_placed()
    s = sim._s            # the simulator's own test: it corrupts the private run state on purpose
    j = next(iter(s.new_alloc))
    if corruption == "node":
        _, nodes = s.new_alloc[j]
        v = nodes[0][0]
        s.nodes.free[v] -= 1                       # GPUs used that no placement accounts for
    elif corruption == "work":
        s.remaining[j] = s.work[j] * 2
    elif corruption == "samples":
        s.records[j].samples_done += 1e6           # progress out of nowhere
    if corruption == "time":
        sim.advance()
        for _ in range(3):                         # a few rounds in, jobs active
            sim.place_decision(sim.policy.decide(sim.next_view()))
            sim.advance()
        s.t -= 2 * sim.config.round_s              # the clock goes back
        with pytest.raises(AssertionError, match="time went back"):
            sim.next_view()
        return
    with pytest.raises(AssertionError):
        sim.advance()


@slow
def test_debug_mode_is_silent_on_a_clean_run():
    cluster = get_cluster("sia-64")
    workload = load_workload("gavel:rate=30,jobs=20,seed=4,mix=llm,duration_scale=0.05", cluster)
    for name in ("heterosched-lp", "pop-2", "random"):
        result = Simulator(cluster, workload, make_policy(name),
                           SimConfig(check_invariants=True)).run()
        assert all(r.done for r in result.jobs)
