"""The ``sia`` baseline (lp_baseline/sia.py): Sia's configurations, ILP, restart factor,
scale-up limit and solver fallback."""

from __future__ import annotations

import dataclasses
import itertools
import logging
import math

import numpy as np
import pytest

import lp_baseline.sia as sia_mod
from hsched_env.cluster import get_cluster
from hsched_env.planner import CandidateTable
from hsched_env.policy import SchedulerView
from lp_baseline.policy import make_policy
from lp_baseline.sia import SiaPolicy, restart_factor

TINY = get_cluster("tiny-8")          # types (V100-16GB, T4), 4 + 4 GPUs
SIA = get_cluster("sia-64")
WORKLOAD = "gavel:rate=20,jobs=40,seed=7,duration_scale=0.05"
P, LAM, CLIP = -0.5, 1.1, 3000.0
slow = pytest.mark.slow


# ---------------------------------------------------------------------------- helpers
def make_table(gpus, thr, sia=None, types=TINY.gpu_types) -> CandidateTable:
    """A minimal candidate table with the given rows (plain data parallelism)."""
    gpus = np.asarray(gpus, dtype=np.int64)
    R = gpus.shape[0]
    z = np.zeros(R)
    zi = np.zeros(R, dtype=np.int64)
    one = np.ones(R, dtype=np.int64)
    fields = {f.name for f in dataclasses.fields(CandidateTable)}
    kw = {name: z.copy() for name in fields}
    kw.update(model="m", gpu_types=tuple(types), pool_names=tuple(types),
              pool_types=tuple(types), gpus=gpus, pool_a=np.argmax(gpus, axis=1),
              pool_b=-one, nodes=one, kind=zi, dp=gpus.sum(axis=1), tp=one, pp=one,
              dp_a=gpus.sum(axis=1), dp_b=zi, pp_a=one, pp_b=zi, microbatches=one, zero=zi,
              recompute=np.zeros(R, dtype=bool), samples_per_s=np.asarray(thr, dtype=float),
              measured=np.zeros(R, dtype=bool), requested=np.zeros(R, dtype=bool),
              bootstrap=np.ones(R),
              sia_config=np.ones(R, dtype=bool) if sia is None else np.asarray(sia, bool))
    return CandidateTable(**kw)


def make_view(tables, capacity, *, current=None, arrival=None, time_s=1000.0, restarts=None,
              restart_s=60.0) -> SchedulerView:
    A = len(tables)
    f = np.zeros(A)
    return SchedulerView(
        time_s=time_s, round_index=0, round_s=300.0, cluster=TINY,
        capacity=np.asarray(capacity, dtype=np.int64), job_ids=np.arange(A),
        arrival_s=np.zeros(A) if arrival is None else np.asarray(arrival, dtype=float),
        work_samples=f + 1e6, remaining_samples=f + 1e6, attained_s=f.copy(),
        requested_gpus=np.ones(A, dtype=np.int64), reference_samples_per_s=f + 1.0,
        current=(-np.ones(A, dtype=np.int64) if current is None
                 else np.asarray(current, dtype=np.int64)),
        candidates=tuple(tables), restart_s=restart_s,
        restarts=(np.zeros(A, dtype=np.int64) if restarts is None
                  else np.asarray(restarts, dtype=np.int64)))


def first_choices(decision) -> dict[int, int]:
    return {int(j): (rows[0] if isinstance(rows, list) else int(rows))
            for j, rows in decision.items()}


# ---------------------------------------------------------------------------- simulation
@pytest.fixture(scope="module")
def sim_run(simulate):
    return simulate(SiaPolicy(), WORKLOAD, SIA)


@slow
def test_simulation_uses_only_sia_configs_within_capacity(sim_run):
    """(Capacity: ``simulate`` checks every decision.)"""
    rec, _ = sim_run
    assert any(rec.decisions), "Sia never ran a job"
    for view, out in zip(rec.views, rec.decisions):
        index = {int(j): k for k, j in enumerate(view.job_ids)}
        for j, rows in out.items():
            table = view.candidates[index[j]]
            assert len(rows) >= 1
            for r in rows:
                assert table.sia_config[r], (j, r)
                assert table.tp[r] == 1 and table.pp[r] == 1
                assert np.count_nonzero(table.gpus[r]) == 1       # one GPU type
            # fallbacks: same type, fewer GPUs, largest first
            n = table.gpus[rows].sum(axis=1)
            t = int(np.argmax(table.gpus[rows[0]]))
            assert np.all(table.gpus[rows, t] == n)
            assert np.all(np.diff(n) < 0)


@slow
def test_simulation_scale_up_at_most_doubles(sim_run):
    """A job starts on one GPU and never more than doubles from what it last ran with, in the
    ILP's choice or in what it actually ran (the next view's ``current``)."""
    rec, _ = sim_run
    last: dict[int, int] = {}              # job -> GPUs it ran with last time it ran
    grew = False
    for view, out in zip(rec.views, rec.decisions):
        index = {int(j): k for k, j in enumerate(view.job_ids)}
        for k, j in enumerate(view.job_ids):
            cur = int(view.current[k])
            if cur >= 0:
                n = int(view.candidates[k].gpus[cur].sum())
                assert n <= max(1, 2 * last.get(int(j), 0)), (int(j), n, last.get(int(j)))
                grew |= n > last.get(int(j), n)
                last[int(j)] = n
        for j, rows in out.items():
            n = int(view.candidates[index[j]].gpus[rows[0]].sum())
            assert n <= max(1, 2 * last.get(j, 0)), (j, n, last.get(j))
    assert grew, "no job ever scaled up: the check is vacuous"


@slow
def test_simulation_finishes_every_job(sim_run):
    _, result = sim_run
    m = result.metrics()
    assert m["jobs_completed"] == m["jobs_total"] == 40
    assert m["lp_solves"] > 0 and m["lp_fallbacks"] == 0
    assert m["lp_vars_mean"] > 0


@slow
def test_tiny_cluster_simulation_respects_capacity_and_finishes(simulate):
    """(Capacity: ``simulate`` checks every decision.)"""
    rec, result = simulate(SiaPolicy(), "gavel:rate=6,jobs=12,seed=1,duration_scale=0.05", TINY)
    assert any(rec.decisions)
    m = result.metrics()
    assert m["jobs_completed"] == m["jobs_total"] == 12


# ---------------------------------------------------------------------------- ILP vs brute force
def reference_costs(view, S=60.0):
    """Per job ``{row: cost}`` from the formulation, computed independently of the module
    (every configuration allowed: ``scale_up_limit=False``)."""
    out = []
    for k, table in enumerate(view.candidates):
        rows = [r for r in range(len(table)) if table.sia_config[r]
                and np.isfinite(table.samples_per_s[r]) and table.samples_per_s[r] > 0]
        if not rows:
            out.append({})
            continue
        # Sia's normalization: the slowest configuration at the scale unit of its GPU type
        # (the fewest GPUs on that type), so every G >= 1
        slowest = min(rows, key=lambda r: (table.samples_per_s[r], table.gpus[r].sum(), r))
        same = [r for r in rows
                if np.array_equal(table.gpus[r] > 0, table.gpus[slowest] > 0)]
        unit = min(table.gpus[r].sum() for r in same)
        base = table.samples_per_s[slowest] / unit                        # G_min = unit
        cur = int(view.current[k])
        age = view.time_s - view.arrival_s[k]
        if age < S:
            rf = 1.0
        else:
            rf = max(age - view.restarts[k] * S, 0.0) / (age + S)
        costs = {}
        for r in rows:
            g = table.samples_per_s[r] / base
            if cur >= 0 and r != cur:
                g *= rf
            costs[r] = CLIP if g == 0 else min(g ** P, CLIP)
        out.append(costs)
    return out


def brute_force(view, costs):
    """Minimum of Σ cost + λ·(unallocated) over every feasible assignment."""
    best = math.inf
    options = [[None] + list(c) for c in costs]
    for combo in itertools.product(*options):
        used = np.zeros(view.capacity.size, dtype=np.int64)
        value = 0.0
        for k, r in enumerate(combo):
            if not costs[k]:
                continue
            if r is None:
                value += LAM
            else:
                value += costs[k][r]
                used += view.candidates[k].gpus[r]
        if np.all(used <= view.capacity):
            best = min(best, value)
    return best


def decision_value(view, decision, costs):
    chosen = first_choices(decision)
    value = 0.0
    used = np.zeros(view.capacity.size, dtype=np.int64)
    for k in range(view.num_active):
        if not costs[k]:
            assert k not in chosen
            continue
        if k in chosen:
            value += costs[k][chosen[k]]
            used += view.candidates[k].gpus[chosen[k]]
        else:
            value += LAM
    assert np.all(used <= view.capacity)
    return value


def random_instance(rng):
    tables, current = [], []
    A = int(rng.integers(2, 4))
    for _ in range(A):
        sizes = [(t, n) for t in range(2) for n in (1, 2, 4)]
        pick = rng.choice(len(sizes), size=int(rng.integers(1, 5)), replace=False)
        gpus, thr = [], []
        for i in pick:
            t, n = sizes[i]
            row = [0, 0]
            row[t] = n
            gpus.append(row)
            thr.append(float(rng.uniform(0.5, 2.0) * n ** rng.uniform(0.3, 1.0)
                             * (2.0 if t == 0 else 1.0)))
        sia = rng.random(len(gpus)) < 0.85
        sia[0] = True
        tables.append(make_table(gpus, thr, sia))
        current.append(int(rng.integers(len(gpus))) if rng.random() < 0.5 else -1)
    capacity = rng.integers(1, 5, size=2)
    return make_view(tables, capacity, current=current, arrival=rng.uniform(0, 900, A),
                     restarts=rng.integers(0, 8, A))


def test_ilp_matches_brute_force_on_random_small_instances():
    rng = np.random.default_rng(1)
    for _ in range(40):
        view = random_instance(rng)
        policy = SiaPolicy(scale_up_limit=False)
        decision = policy.decide(view)
        costs = reference_costs(view)
        best = brute_force(view, costs)
        assert policy.last_stats.extra["objective"] == pytest.approx(best, abs=1e-6)
        assert decision_value(view, decision, costs) == pytest.approx(best, abs=1e-6)
        assert policy.summary()["lp_fallbacks"] == 0


def test_ilp_hand_instance():
    """Two jobs, 2 V100 + 2 T4. Job 0: 1 V100 10/s, 2 V100 22/s, 1 T4 4/s (its smallest: one
    GPU, the slowest) -> G = 2.5, 5.5, 1, costs 0.632, 0.426, 1. Job 1: 1 T4 5/s, 1 V100
    15/s -> G = 1, 3, costs 1, 0.577. Job 0 on 2 V100 + job 1 on a T4 costs 1.426; each on
    one V100 costs 1.209, the optimum."""
    t0 = make_table([[1, 0], [2, 0], [0, 1]], [10.0, 22.0, 4.0])
    t1 = make_table([[0, 1], [1, 0]], [5.0, 15.0])
    view = make_view([t0, t1], [2, 2])
    policy = SiaPolicy(scale_up_limit=False)
    decision = policy.decide(view)
    costs = reference_costs(view)
    assert costs[0][0] == pytest.approx(2.5 ** -0.5)
    best = brute_force(view, costs)
    assert best == pytest.approx(2.5 ** -0.5 + 3 ** -0.5)
    assert policy.last_stats.extra["objective"] == pytest.approx(best)
    assert decision_value(view, decision, costs) == pytest.approx(best)
    assert first_choices(decision) == {0: 0, 1: 1}
    assert policy.last_stats.lp_vars == 5


# ---------------------------------------------------------------------------- restart factor
def test_restart_factor_closed_form():
    assert restart_factor(10.0, 0, 60.0) == 1.0             # younger than S
    assert restart_factor(59.9, 5, 60.0) == 1.0
    assert restart_factor(1000.0, 0, 60.0) == pytest.approx(1000 / 1060)
    assert restart_factor(1000.0, 2, 60.0) == pytest.approx(880 / 1060)
    assert restart_factor(1000.0, 50, 60.0) == 0.0          # many restarts
    assert restart_factor(60.0, 0, 60.0) == pytest.approx(0.5)
    assert restart_factor(0.0, 0, 0.0) == 1.0               # free restarts at age 0: not 0 / 0
    assert restart_factor(100.0, 3, 0.0) == 1.0             # free restarts: no penalty


def test_many_restarts_keep_the_current_config():
    table = make_table([[1, 0], [2, 0], [4, 0]], [10.0, 20.0, 40.0])
    kwargs = dict(current=[0], arrival=[0.0], time_s=1000.0)
    fresh = SiaPolicy(scale_up_limit=False).decide(make_view([table], [4, 4], restarts=[0],
                                                             **kwargs))
    assert fresh[0][0] == 2                 # no restarts: it grows to 4 GPUs
    stuck = SiaPolicy(scale_up_limit=False).decide(make_view([table], [4, 4], restarts=[50],
                                                             **kwargs))
    assert stuck[0][0] == 0                 # r = 0: every other config costs the clip
    young = SiaPolicy(scale_up_limit=False).decide(
        make_view([table], [4, 4], restarts=[50], current=[0], arrival=[990.0], time_s=1000.0))
    assert young[0][0] == 2                 # age < S: factor 1 despite the restarts
    # the constructor's restart_s overrides the view's
    override = SiaPolicy(scale_up_limit=False, restart_s=1.0).decide(
        make_view([table], [4, 4], restarts=[50], **kwargs))
    assert override[0][0] == 2              # 1000 - 50 s > 0: factor ~0.95


# ---------------------------------------------------------------------------- scale-up limit
def test_scale_up_limit_on_hand_views():
    table = make_table([[1, 0], [2, 0], [4, 0], [0, 1], [0, 2], [0, 4]],
                       [10.0, 20.0, 40.0, 5.0, 10.0, 20.0])
    # never ran: one GPU (the fastest one-GPU config), though 4 are free
    policy = SiaPolicy()
    out = policy.decide(make_view([table], [4, 4]))
    assert out == {0: [0]}
    # running on 1 V100: at most 2 GPUs next
    out = policy.decide(make_view([table], [4, 4], current=[0], restarts=[0]))
    assert int(table.gpus[out[0][0]].sum()) == 2 and out[0] == [1, 0]
    # not running now, ran on 2 GPUs last time (remembered): at most 4
    out = policy.decide(make_view([table], [4, 4], current=[1]))
    out = policy.decide(make_view([table], [4, 4], current=[-1]))
    assert out[0][0] == 2 and out[0] == [2, 1, 0]
    # reset forgets it
    policy.reset(TINY, 0)
    assert policy.decide(make_view([table], [4, 4]))[0][0] == 0
    # the limit off: straight to 4 V100
    assert SiaPolicy(scale_up_limit=False).decide(make_view([table], [4, 4]))[0][0] == 2


def test_the_scale_up_limit_counts_replicas_of_each_types_scale_unit():
    """Sia starts a job on one replica and doubles it at most: on a type where the job needs
    four GPUs, one replica is those four (the limit counted GPUs over every type: a job that
    fits on one V100 could not start on the T4s while the V100s were busy)."""
    table = make_table([[1, 0], [0, 4], [0, 8]], [10.0, 3.0, 5.0])
    policy = SiaPolicy()
    assert policy.decide(make_view([table], [0, 8])) == {0: [1]}      # 4 T4, not 8
    # running on 4 T4 (one replica): at most two replicas next, 8 T4
    out = policy.decide(make_view([table], [0, 8], current=[1], restarts=[0]))
    assert out[0][0] == 2


def test_job_too_big_for_one_gpu_starts_on_its_smallest_config():
    table = make_table([[2, 0], [4, 0], [0, 4]], [20.0, 40.0, 15.0])
    out = SiaPolicy().decide(make_view([table], [4, 4]))
    assert out[0][0] == 0                   # 2 GPUs (its smallest), not nothing


def test_goodput_is_normalized_by_the_slowest_configuration_at_its_scale_unit():
    """Sia's rows are scaled so the lowest goodput is the scale unit of its GPU type: every
    configuration then has G >= 1 and costs less than waiting. Normalized by the fewest-GPU
    configuration (1 fast GPU), a job's slow 4-GPU configurations had G < 1 and, below
    0.826, cost more than waiting: never chosen, the job waited instead."""
    from lp_baseline.sia import config_cost, goodput
    # 1 × V100 at 10/s; the T4s need 4 GPUs at least: 4 × T4 at 3/s, 8 × ... only on 4 T4
    table = make_table([[1, 0], [2, 0], [0, 4]], [10.0, 18.0, 3.0])
    g = goodput(table, np.arange(3))
    assert g.tolist() == pytest.approx([4 * 10 / 3, 4 * 18 / 3, 4.0])   # unit: 4 T4
    assert np.all(config_cost(g) < LAM)
    # with T4 the only free type, Sia runs the job there (it waited: 4 × T4 cost 1.83 > λ)
    out = SiaPolicy(scale_up_limit=False).decide(make_view([table], [0, 4]))
    assert out == {0: [2]}
    # a job that fits on one GPU of each type: unit 1, the slowest 1-GPU row at G = 1
    small = make_table([[1, 0], [0, 1], [0, 2]], [10.0, 4.0, 7.0])
    assert goodput(small, np.arange(3)).tolist() == pytest.approx([2.5, 1.0, 1.75])
    # the co-optimizers' normalization (heterosched-ilp, heterosched-lp): by the fewest-GPU
    # configuration, so the slow 4-GPU row falls below 1 and costs more than waiting
    assert goodput(table, np.arange(3), "smallest").tolist() == pytest.approx([1.0, 1.8, 0.3])
    assert SiaPolicy(configurations="all").normalization == "smallest"
    assert SiaPolicy().normalization == "slowest"


def test_non_sia_and_invalid_rows_are_never_used():
    # row 0 is the fastest but not a Sia config, row 1 has NaN throughput
    table = make_table([[4, 0], [2, 0], [1, 0], [0, 1]], [100.0, np.nan, 10.0, 5.0],
                       sia=[False, True, True, True])
    empty = make_table([[1, 0]], [1.0], sia=[False])
    view = make_view([table, empty], [4, 4])
    out = SiaPolicy(scale_up_limit=False).decide(view)
    assert set(out) == {0} and out[0] == [2]


# ---------------------------------------------------------------------------- solver failure
def test_solver_exception_falls_back_and_is_counted(monkeypatch, caplog):
    def boom(*args, **kwargs):
        raise RuntimeError("solver exploded")

    monkeypatch.setattr(sia_mod, "milp", boom)
    t0 = make_table([[1, 0], [2, 0], [4, 0]], [10.0, 20.0, 40.0])
    t1 = make_table([[1, 0], [0, 1], [0, 2]], [10.0, 5.0, 10.0])
    policy = SiaPolicy()
    with caplog.at_level(logging.WARNING, logger="lp_baseline.sia"):
        # job 0 runs on 2 V100 (may go to 4), job 1 never ran (1 GPU)
        out = policy.decide(make_view([t0, t1], [4, 4], current=[1, -1]))
    assert out[0][0] == 1                   # greedy keeps the current config
    assert out[1][0] == 0                   # then the largest allowed that fits
    assert policy.summary()["lp_fallbacks"] == 1
    assert policy.summary()["lp_fallback_kinds"] == {"exception": 1}
    assert policy.summary()["lp_solves"] == 1
    assert "fallback" in caplog.text
    # job 0 holds every V100: the new job gets a T4 instead
    out = policy.decide(make_view([t0, t1], [4, 4], current=[2, -1]))
    assert out[0][0] == 2 and out[1][0] == 1
    assert policy.summary()["lp_fallbacks"] == 2


def test_solver_without_solution_falls_back(monkeypatch):
    class Res:
        status, x, message = 1, None, "time limit reached"

    monkeypatch.setattr(sia_mod, "milp", lambda *a, **k: Res())
    t0 = make_table([[1, 0], [0, 1]], [10.0, 5.0])
    policy = SiaPolicy()
    out = policy.decide(make_view([t0, t0], [1, 1]))
    assert first_choices(out) == {0: 0, 1: 1}
    s = policy.summary()
    assert s["lp_fallbacks"] == 1 and s["lp_fallback_kinds"] == {"no_solution": 1}
    assert s["lp_time_limits"] == 1


def test_simulation_with_a_broken_solver_still_finishes(simulate, monkeypatch):
    monkeypatch.setattr(sia_mod, "milp", lambda *a, **k: (_ for _ in ()).throw(ValueError()))
    spec = "gavel:rate=20,jobs=15,seed=3,duration_scale=0.05"
    _, result = simulate(SiaPolicy(), spec, SIA)
    m = result.metrics()
    assert m["jobs_completed"] == m["jobs_total"] == 15
    assert m["lp_fallbacks"] == m["lp_solves"] > 0


# ------------------------------------------------------------------------------ heterosched-ilp
@pytest.fixture(scope="module")
def ilp_run(simulate):
    """heterosched-ilp on a short LLM mix (every decision checked within capacity)."""
    return simulate(make_policy("heterosched-ilp"),
                    "gavel:rate=20,jobs=40,seed=7,mix=llm,duration_scale=0.05", SIA)


@slow
def test_co_optimizing_ilp_uses_the_planners_strategies_and_finishes(ilp_run):
    rec, result = ilp_run
    assert result.metrics()["jobs_completed"] == 40
    non_sia = 0
    for view, out in zip(rec.views, rec.decisions):
        index = {int(j): k for k, j in enumerate(view.job_ids)}
        for j, rows in out.items():
            non_sia += not view.candidates[index[j]].sia_config[rows[0]]
    assert non_sia > 0          # it runs strategies Sia's search space does not have


@slow
def test_srpt_weights_scale_each_jobs_terms(ilp_run):
    rec, _ = ilp_run
    view = next(v for v in rec.views if v.num_active >= 6)
    ilp = make_policy("heterosched-ilp")
    plain = SiaPolicy(configurations="all", scale_up_limit=False)
    assert ilp.scale_up_limit is False
    w = ilp.job_weights(view)
    rem = view.remaining_samples / view.reference_samples_per_s
    order = np.argsort(rem)
    assert np.all(np.diff(w[order]) <= 1e-12)            # shorter remaining, larger weight
    assert np.all((w >= 0.1) & (w <= 10.0))
    for k, ((r1, c1), (r2, c2)) in enumerate(zip(ilp.problem(view), plain.problem(view))):
        np.testing.assert_array_equal(r1, r2)
        np.testing.assert_allclose(c1 - ilp.lam, w[k] * (c2 - plain.lam), rtol=1e-12)
    with pytest.raises(ValueError, match="configurations"):
        SiaPolicy(configurations="some")
    with pytest.raises(ValueError, match="srpt_weight"):
        SiaPolicy(srpt_weight=-1.0)


def test_sia_gain_cache_gives_bitwise_the_same_gains():
    """The LP policy computes each job's sia gains once per decision (over its whole table)
    and slices them for the LP build and for the rounding: the same numbers, bit for bit."""
    import gymnasium as gym
    import hsched_env  # noqa: F401
    from lp_baseline.job_terms import sia_gain, srpt_weights
    env = gym.make("hsched/Rank-v0", cluster="modern-512", workload="gavel:rate=60,jobs=80",
                   max_candidates=8192, disable_env_checker=True).unwrapped
    env.reset(seed=0)
    rng = np.random.default_rng(0)
    for _ in range(6):
        view = env.slots.view
        ks = np.arange(view.num_active)
        w = srpt_weights(view, ks)
        subsets = [np.sort(rng.choice(len(view.candidates[k]),
                                      max(1, len(view.candidates[k]) // 4), replace=False))
                   for k in ks]
        whole = [np.arange(len(view.candidates[k])) for k in ks]
        cache: dict = {}
        for rows in (subsets, whole):
            got = sia_gain(view, ks, rows, w, cache=cache)
            want = sia_gain(view, ks, rows, w)
            np.testing.assert_array_equal(got.view(np.int64), want.view(np.int64))
        assert len(cache) == view.num_active
        env.step(np.ones(env.K, dtype=np.int8))


def test_native_output_of_the_ilp_solve_goes_to_the_log(capfd, caplog, monkeypatch):
    """scipy's HiGHS build can print a debugging line from C++ during a MIP solve; under
    ``sia.milp`` what native code writes to descriptor 1 goes to HiGHS' log (``hsched -v``),
    so `hsched simulate --json` prints nothing but its JSON and standard error shows no
    solver debugging. Python output around it keeps its place."""
    import logging
    import os
    import sys

    import scipy.optimize

    from lp_baseline import sia

    def noisy_milp(*args, **kwargs):          # stands in for scipy's solver
        os.write(1, b"HighsMipSolverData::transformNewIntegerFeasibleSolution\n")
        return "solved"

    monkeypatch.setattr(scipy.optimize, "milp", noisy_milp)
    print("before", end="")
    sys.stdout.flush()
    with caplog.at_level(logging.INFO, logger="lp_baseline.highs"):
        assert sia.milp() == "solved"
    print("after")
    out, err = capfd.readouterr()
    assert out == "beforeafter\n"
    assert "HighsMipSolverData" not in err
    assert any("HighsMipSolverData" in r.getMessage() for r in caplog.records)
