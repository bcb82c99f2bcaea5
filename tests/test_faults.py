"""Solver faults: every way the allocation LP can fail makes ``LPPolicy`` fall back to its greedy
assignment, log a (rate-limited) warning and count it in ``lp_fallbacks``; the schedule stays
valid and the run (or the Gymnasium episode) goes on. See docs/lp.md, "Faults and fallback"."""

from __future__ import annotations

import dataclasses
import json
import logging
import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import lp_baseline.parallel_parts as parts_mod
import lp_baseline.solver as solver_mod
from hsched_env.cluster import get_cluster
from hsched_env.simulator import SimConfig, Simulator
from hsched_env.workloads import load_workload
from lp_baseline.policy import FALLBACK_KINDS, LPPolicy, make_policy
from lp_baseline.solver import check_feasible, random_problem

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SIA = get_cluster("sia-64")
SPEC = "gavel:rate=20,jobs=12,seed=3,mix=llm,duration_scale=0.05"
LOGGER = "lp_baseline.policy"
REAL_SOLVE = solver_mod.solve_allocation
slow = pytest.mark.slow


# ---------------------------------------------------------------------------------- helpers
# ``simulate`` (conftest) asserts every decision of a run is a valid assignment for its view.
def fault(kind):
    """A stand-in for ``solve_allocation`` that fails the way ``kind`` says."""

    def fake(problem, objective="max-min", **kw):
        if kind == "exception":
            raise RuntimeError("injected solver crash")
        res = REAL_SOLVE(problem, objective, **kw)
        zeros = np.zeros(problem.n_candidates)
        if kind in ("infeasible", "error", "unavailable"):
            return dataclasses.replace(res, x=zeros, status=kind, has_x=False,
                                       message=f"injected {kind}")
        if kind == "time_limit":        # no feasible point when the limit hit
            return dataclasses.replace(res, x=zeros, status="time_limit", has_x=False)
        if kind == "time_limit_zero":   # HiGHS' starting point X = 0: not an incumbent
            return dataclasses.replace(res, x=zeros, status="time_limit", has_x=True)
        if kind == "nan":
            return dataclasses.replace(res, x=np.full(problem.n_candidates, np.nan))
        if kind == "over":              # every candidate at X = 1: violates the constraints
            return dataclasses.replace(res, x=np.ones(problem.n_candidates))
        if kind == "short":
            return dataclasses.replace(res, x=res.x[:-1])
        raise AssertionError(kind)

    return fake


FAULTS = {"exception": "exception", "infeasible": "infeasible", "error": "error",
          "unavailable": "unavailable", "time_limit": "time_limit",
          "time_limit_zero": "time_limit", "nan": "bad_solution", "over": "bad_solution",
          "short": "bad_solution"}


def warnings_of(caplog, kind=None):
    return [r for r in caplog.records if r.name == LOGGER and r.levelno == logging.WARNING
            and "LP fallback" in r.getMessage() and (kind is None or f"({kind}," in r.getMessage())]


# ---------------------------------------------------------------------------------- injected faults
@pytest.mark.parametrize("injected", sorted(FAULTS))
def test_every_fault_falls_back_and_the_run_completes(injected, simulate, monkeypatch, caplog):
    monkeypatch.setattr(parts_mod, "solve_allocation", fault(injected))
    caplog.set_level(logging.WARNING, logger=LOGGER)
    rec, result = simulate(make_policy("heterosched-lp"), SPEC)
    m = result.metrics()
    kind = FAULTS[injected]
    assert m["jobs_completed"] == m["jobs_total"] == 12
    # every LP solve of the run fell back, all of this kind
    assert m["lp_solves"] == len(rec.decisions) > 0
    assert m["lp_fallbacks"] == m["lp_solves"]
    assert m["lp_fallback_kinds"] == {kind: m["lp_fallbacks"]}
    # rate-limited: the 1st, 10th, 100th ... fault of the kind warn
    n = m["lp_fallbacks"]
    expected = sum(1 for p in (1, 10, 100, 1000) if p <= n)
    assert len(warnings_of(caplog, kind)) == expected >= 1


def test_fault_mid_run_is_counted_once_per_faulty_solve(simulate, monkeypatch, caplog):
    calls = {"n": 0}

    def flaky(problem, objective="max-min", **kw):
        calls["n"] += 1
        if calls["n"] in (3, 4, 7):
            raise ValueError("injected crash")
        return REAL_SOLVE(problem, objective, **kw)

    monkeypatch.setattr(parts_mod, "solve_allocation", flaky)
    caplog.set_level(logging.WARNING, logger=LOGGER)
    _, result = simulate(make_policy("heterosched-lp"), SPEC)
    m = result.metrics()
    assert m["jobs_completed"] == 12
    assert m["lp_fallbacks"] == 3 and m["lp_fallback_kinds"] == {"exception": 3}
    assert len(warnings_of(caplog)) == 1          # once for the kind, not per fault


@pytest.mark.parametrize("name", ["gavel", "topk", "pop-2", "lp-on-change", "agnostic-lp"])
def test_other_lp_policies_fall_back_too(simulate, name, monkeypatch):
    monkeypatch.setattr(parts_mod, "solve_allocation", fault("exception"))
    # pop-2's parts in threads: a monkeypatch reaches those, not worker processes
    # (tests/test_pop_parallel.py has a worker process whose solve raises)
    extra = {"pop_executor": "thread"} if name == "pop-2" else {}
    _, result = simulate(make_policy(name, **extra), SPEC)
    m = result.metrics()
    assert m["jobs_completed"] == 12
    parts = 2 if name == "pop-2" else 1
    assert m["lp_fallbacks"] >= m["lp_solves"] > 0
    assert m["lp_fallbacks"] <= parts * m["lp_solves"]


@pytest.mark.parametrize("objective", ["max-min", "max-throughput", "min-makespan", "ftf"])
def test_fallback_for_every_objective(simulate, objective, monkeypatch):
    monkeypatch.setattr(parts_mod, "solve_allocation", fault("infeasible"))
    _, result = simulate(make_policy("heterosched-lp", objective=objective), SPEC)
    m = result.metrics()
    assert m["jobs_completed"] == 12 and m["lp_fallbacks"] == m["lp_solves"]


def test_time_limit_with_an_incumbent_uses_it(simulate, monkeypatch):
    """A time limit that leaves a feasible, non-zero point: the policy runs it (no fallback)."""
    def limited(problem, objective="max-min", **kw):
        return dataclasses.replace(REAL_SOLVE(problem, objective, **kw), status="time_limit")

    plain = simulate(make_policy("heterosched-lp"), SPEC)[1].metrics()
    monkeypatch.setattr(parts_mod, "solve_allocation", limited)
    m = simulate(make_policy("heterosched-lp"), SPEC)[1].metrics()
    assert m["lp_fallbacks"] == 0 and m["lp_time_limits"] == m["lp_solves"] > 0
    # the incumbent is the optimum here: the schedule equals the unlimited run's
    assert m["avg_jct_s"] == plain["avg_jct_s"]


@slow
def test_real_time_limit_bounds_the_lp_and_the_run_completes(simulate, caplog):
    """A real HiGHS time limit far below what the round needs: parts fall back (kind
    time_limit) or use HiGHS' incumbent, never anything else."""
    caplog.set_level(logging.WARNING, logger=LOGGER)
    policy = make_policy("heterosched-lp", time_limit_s=1e-4)
    _, result = simulate(policy, "gavel:rate=40,jobs=30,seed=1,mix=llm,duration_scale=0.05")
    m = result.metrics()
    assert m["jobs_completed"] == 30
    assert m["lp_fallbacks"] > 0 and set(m["lp_fallback_kinds"]) == {"time_limit"}


class _Clock:
    """Stands in for the ``time`` module of ``lp_baseline.solver``: each ``perf_counter()``
    reading is ``step`` seconds after the previous one."""

    def __init__(self, step: float) -> None:
        self.now, self.step = 0.0, step

    def perf_counter(self) -> float:
        self.now += self.step
        return self.now


def _budgets_on_a_fake_clock(monkeypatch, objective, limit):
    """Solve a random problem with ``time_limit_s=limit`` on a fake clock (1 ms per reading);
    HiGHS itself runs unlimited. Returns (result, [(clock at the run, budget it was given)])."""
    clock = _Clock(step=1e-3)
    monkeypatch.setattr(solver_mod, "time", clock)
    runs = []
    real_run = solver_mod.HighsDriver.run

    def run(self, budget_s):
        runs.append((clock.now, budget_s))
        return real_run(self, None)

    monkeypatch.setattr(solver_mod.HighsDriver, "run", run)
    p = random_problem(40, np.random.default_rng(4), n_types=5)
    res = solver_mod.solve_allocation(p, objective, time_limit_s=limit)
    check_feasible(p, res.x)
    return res, runs


@pytest.mark.parametrize("objective", ["max-min", "ftf"])
def test_solver_time_limit_is_one_budget_from_the_call_start(objective, monkeypatch):
    """``time_limit_s`` covers building and every solve of the call: each HiGHS run gets what
    is left of one budget started at the call's first clock reading, and once building has
    used it up no LP is started (ftf: the constructed allocation; max-min: the first solve's
    point, no fill solve). Deterministic on a fake clock; how fast HiGHS stops at its limit is
    the benchmarks' business."""
    res, runs = _budgets_on_a_fake_clock(monkeypatch, objective, limit=1.0)
    assert res.status == "optimal" and len(runs) >= 2        # max-min: primary + fill
    start = 1e-3                                              # the call's first reading
    for now, budget in runs:
        assert budget == pytest.approx(1.0 - (now - start), abs=1e-12)
    assert runs[0][0] > start                                 # building counted
    assert [b for _, b in runs] == sorted((b for _, b in runs), reverse=True)

    res, runs = _budgets_on_a_fake_clock(monkeypatch, objective, limit=0.5e-3)
    assert res.status == "time_limit" and res.has_x
    if objective == "ftf":
        assert runs == []                  # the budget was gone before the first LP
    else:
        assert len(runs) == 1 and runs[0][1] <= 0 and res.iterations == 1


@slow
def test_decision_time_limit_is_shared_by_pop_parts(simulate, monkeypatch):
    """With a per-decision budget already spent, later POP parts do not start an LP: they fall
    back (kind time_limit) without calling the solver."""
    import time as time_mod
    calls = {"n": 0}

    def sleepy(problem, objective="max-min", **kw):
        calls["n"] += 1
        assert kw["time_limit_s"] is not None and kw["time_limit_s"] > 0
        time_mod.sleep(0.03)
        return REAL_SOLVE(problem, objective, **kw)

    monkeypatch.setattr(parts_mod, "solve_allocation", sleepy)
    policy = LPPolicy("pop-4", pop=4, time_limit_s=0.02)
    _, result = simulate(policy, SPEC)
    m = result.metrics()
    assert m["jobs_completed"] == 12
    # at most one solver call per decision: the first part spends the whole budget
    assert calls["n"] <= m["lp_solves"]
    assert m["lp_fallback_kinds"].get("time_limit", 0) > 0


# ---------------------------------------------------------------------------------- solver missing
def test_solver_unavailable_status(monkeypatch):
    monkeypatch.setattr(solver_mod, "highspy", None)
    p = random_problem(5, np.random.default_rng(0), candidates_per_job=3, total_gpus=16)
    for backend in ("highs", "pulp"):
        res = solver_mod.solve_allocation(p, "max-min", backend=backend)
        assert res.status == "unavailable" and not res.has_x and res.message
        assert np.all(res.x == 0)


def test_solver_missing_through_the_policy(simulate, monkeypatch, caplog):
    monkeypatch.setattr(solver_mod, "highspy", None)
    caplog.set_level(logging.WARNING, logger=LOGGER)
    _, result = simulate(make_policy("heterosched-lp"), SPEC)
    m = result.metrics()
    assert m["jobs_completed"] == 12
    assert m["lp_fallback_kinds"] == {"unavailable": m["lp_solves"]}
    assert len(warnings_of(caplog, "unavailable")) >= 1


@slow
def test_highspy_import_failure_in_a_fresh_process():
    """``import highspy`` failing (blocked in ``sys.modules``): the LP modules still import and
    a simulation with the LP policy completes on the fallback."""
    code = textwrap.dedent("""
        import json, sys
        sys.modules["highspy"] = None          # makes `import highspy` raise ImportError
        from hsched_env.cluster import get_cluster
        from hsched_env.simulator import SimConfig, Simulator
        from hsched_env.workloads import load_workload
        from lp_baseline.policy import make_policy
        from lp_baseline.solver import solver_available
        c = get_cluster("tiny-8")
        w = load_workload("gavel:rate=20,jobs=6,seed=1,duration_scale=0.05", c)
        m = Simulator(c, w, make_policy("heterosched-lp"), SimConfig(check_invariants=True)).run().metrics()
        print(json.dumps({"available": solver_available()[0], "done": m["jobs_completed"],
                          "total": m["jobs_total"], "solves": m["lp_solves"],
                          "kinds": m["lp_fallback_kinds"]}))
    """)
    proc = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True,
                          text=True, timeout=120, check=False)
    assert proc.returncode == 0, proc.stderr
    out = json.loads(proc.stdout.strip().splitlines()[-1])
    assert out["available"] is False
    assert out["done"] == out["total"] == 6
    assert out["kinds"] == {"unavailable": out["solves"]} and out["solves"] > 0
    assert "LP fallback (unavailable" in proc.stderr


# ---------------------------------------------------------------------------------- degenerate input
@pytest.fixture(scope="module")
def views():
    """Real views of a small run: the first round and a contended later one."""
    workload = load_workload("gavel:rate=30,jobs=16,seed=2,mix=llm,duration_scale=0.2", SIA)
    sim = Simulator(SIA, workload, make_policy("greedy"), SimConfig())
    sim.policy.reset(SIA, 0)
    sim.reset()
    out = []
    while (view := sim.next_view()) is not None and len(out) < 8:
        out.append(view)
        sim.place_decision(sim.policy.decide(view))
        sim.advance()
    return out[0], max(out, key=lambda v: v.num_active)


def _with_thr(view, fn):
    tables = tuple(dataclasses.replace(t, samples_per_s=fn(np.array(t.samples_per_s), t))
                   for t in view.candidates)
    return dataclasses.replace(view, candidates=tables)


def _subset(view, ks):
    ks = np.asarray(ks, dtype=np.int64)
    arrays = {f.name: np.array(getattr(view, f.name))[ks] for f in dataclasses.fields(view)
              if isinstance(getattr(view, f.name), np.ndarray) and f.name != "capacity"}
    return dataclasses.replace(view, candidates=tuple(view.candidates[k] for k in ks),
                               models=tuple(view.models[k] for k in ks) if view.models else (),
                               current_nodes=tuple(view.current_nodes[k] for k in ks),
                               **arrays)


def degenerate(view, case):
    if case == "no-jobs":
        return _subset(view, [])
    if case == "one-job":
        return _subset(view, [0])
    if case == "zero-capacity-type":
        cap = np.array(view.capacity)
        cap[int(np.argmax(cap))] = 0
        return dataclasses.replace(view, capacity=cap)
    if case == "all-zero-capacity":
        return dataclasses.replace(view, capacity=np.zeros_like(view.capacity))
    if case == "zero-throughput":
        # the fastest candidate and the first requested one (what gavel uses)
        first_req = lambda tab: np.flatnonzero(tab.requested)[:1]
        return _with_thr(view, lambda t, tab: np.where(
            (np.arange(t.size) == 0) | np.isin(np.arange(t.size), first_req(tab)), 0.0, t))
    if case == "all-zero-throughput":
        return _with_thr(view, lambda t, tab: np.zeros_like(t))
    if case == "nan-throughput":
        return _with_thr(view, lambda t, tab: np.where((np.arange(t.size) % 2 == 0) | tab.requested, np.nan, t))
    if case == "nan-remaining":
        rem = np.array(view.remaining_samples)
        rem[0] = np.nan
        return dataclasses.replace(view, remaining_samples=rem)
    if case == "nan-reference":
        ref = np.array(view.reference_samples_per_s)
        ref[:] = np.nan
        return _with_thr(dataclasses.replace(view, reference_samples_per_s=ref),
                         lambda t, tab: np.full_like(t, np.nan))
    raise AssertionError(case)


# cases the LP handles (no fallback) and cases it rejects (fallback, kind invalid_input)
SOLVABLE = ("no-jobs", "one-job", "zero-capacity-type", "all-zero-capacity")
INVALID = ("zero-throughput", "all-zero-throughput", "nan-throughput", "nan-reference",
           "nan-remaining")
PRUNABLE = ("zero-throughput", "nan-throughput")     # some of a job's candidates only


@pytest.mark.parametrize("case", SOLVABLE + INVALID)
@pytest.mark.parametrize("name", ["heterosched-lp", "gavel", "topk", "pop-2"])
def test_degenerate_rounds(valid_decision, views, case, name, caplog):
    caplog.set_level(logging.WARNING, logger=LOGGER)
    for base in views:
        for objective in ("max-min", "ftf"):
            if name == "gavel" and objective == "ftf":
                continue
            policy = make_policy(name, objective=objective)
            policy.reset(SIA, 0)
            view = degenerate(base, case)
            with np.errstate(all="raise"):        # no stray floating-point warnings either
                out = policy.decide(view)
            valid_decision(view, out)
            s = policy.summary()
            if case in SOLVABLE:
                assert s["lp_fallbacks"] == 0, (case, s)
            elif name == "topk" and case in PRUNABLE:
                # top-k may prune the bad candidates before the LP sees them
                assert set(s["lp_fallback_kinds"]) <= {"invalid_input"}
            else:
                assert s["lp_fallbacks"] >= 1 and set(s["lp_fallback_kinds"]) == {"invalid_input"}
            # no candidate without throughput is run
            index = {int(j): k for k, j in enumerate(view.job_ids)}
            for j, rows in out.items():
                thr = view.candidates[index[j]].samples_per_s[np.atleast_1d(rows)]
                assert np.all(np.isfinite(thr) & (thr > 0)), (case, j, rows)
            if case == "all-zero-capacity" or case.startswith("all-zero-thr") or \
                    case == "nan-reference":
                assert out == {}
            # the rank-mode helpers survive the same input
            alloc, _ = policy.shares(view)
            value = policy.evaluate(view, alloc)
            assert isinstance(value, float)
    if case in INVALID and not (name == "topk" and case in PRUNABLE):
        assert warnings_of(caplog, "invalid_input")


def test_one_job_gets_its_fastest_fitting_candidate(views):
    view = degenerate(views[0], "one-job")
    policy = make_policy("heterosched-lp")
    policy.reset(SIA, 0)
    out = policy.decide(view)
    table = view.candidates[0]
    assert list(out) == [int(view.job_ids[0])]
    first = np.atleast_1d(out[int(view.job_ids[0])])[0]
    assert table.samples_per_s[first] == table.samples_per_s.max()


def test_greedy_fallback_is_a_feasible_lp_point(views):
    """The fallback X satisfies the LP's constraints (so ``allocation`` stays a valid LP
    point) and gives running jobs their current candidate when it still fits."""
    view = views[1]
    policy = make_policy("heterosched-lp")
    policy.reset(SIA, 0)
    A = view.num_active
    norms = np.array([policy._norm(view, k) for k in range(A)])
    rows = [policy._rows(view, k, norms[k]) for k in range(A)]
    members = np.arange(A)
    sizes = np.array([r.size for r in rows])
    thr = np.concatenate([view.candidates[k].samples_per_s[rows[k]] for k in members])
    gpus = np.concatenate([view.candidates[k].gpus[rows[k]] for k in members])
    cap = view.capacity.astype(float)
    x = LPPolicy._greedy_x(view, members, rows, thr, gpus, cap, sizes)
    from lp_baseline.solver import AllocationProblem
    p = AllocationProblem(job_of=np.repeat(members, sizes), gpus=gpus, thr=thr, capacity=cap,
                          norm=norms)
    check_feasible(p, x, tol=0.0)
    assert set(np.unique(x)) <= {0.0, 1.0} and x.sum() > 0


def test_rate_limited_warnings(caplog):
    caplog.set_level(logging.DEBUG, logger=LOGGER)
    policy = make_policy("heterosched-lp")
    for _ in range(25):
        policy._fall_back("error", "x")
    policy._fall_back("infeasible", "y")
    assert len(warnings_of(caplog, "error")) == 2          # the 1st and the 10th
    assert len(warnings_of(caplog, "infeasible")) == 1
    assert policy.summary()["lp_fallbacks"] == 26
    assert set(FALLBACK_KINDS) >= set(policy.summary()["lp_fallback_kinds"])
    policy.reset(None, 0)                                  # counters are per run
    assert policy.summary()["lp_fallbacks"] == 0


def test_non_lp_policies_report_zero_fallbacks(simulate):
    for name in ("fifo", "greedy"):
        m = simulate(make_policy(name), SPEC)[1].metrics()
        assert m["lp_fallbacks"] == 0 and m["lp_solves"] == 0


# ---------------------------------------------------------------------------------- environments
def _crash_after(n_ok):
    calls = {"n": 0}

    def flaky(problem, objective="max-min", **kw):
        calls["n"] += 1
        if calls["n"] > n_ok and calls["n"] % 2 == 0:
            raise RuntimeError("injected mid-episode crash")
        return REAL_SOLVE(problem, objective, **kw)

    return flaky, calls


@pytest.mark.parametrize("env_id", ["hsched/Schedule-v0", "hsched/Rank-v0"])
@slow
def test_solver_crash_mid_episode_in_the_environments(env_id, monkeypatch, caplog):
    import gymnasium as gym

    import hsched_env  # noqa: F401  (registers the environments)
    flaky, calls = _crash_after(5)
    monkeypatch.setattr(parts_mod, "solve_allocation", flaky)
    caplog.set_level(logging.WARNING, logger=LOGGER)
    kwargs = {"candidate_filter": "lp"} if "Schedule" in env_id else {"measure_time": False}
    env = gym.make(env_id, cluster="sia-64", workload="gavel:rate=6,jobs=8",
                   max_candidates=48, **kwargs).unwrapped
    env.reset(seed=1)
    info, steps, done = {}, 0, False
    while not done:
        _, reward, terminated, truncated, info = env.step(env.reference_action())
        assert np.isfinite(reward)
        done = terminated or truncated
        steps += 1
        assert steps < 20000
    m = info["metrics"]
    assert info["end_reason"] == "completed" and m["jobs_completed"] == 8
    assert calls["n"] > 6 and m["lp_fallbacks"] > 0
    assert m["lp_fallback_kinds"] == {"exception": m["lp_fallbacks"]}
    assert env.metrics()["lp_fallbacks"] == m["lp_fallbacks"]
    assert warnings_of(caplog, "exception")


def test_score_filter_environment_reports_zero_fallbacks():
    from hsched_env.envs import ScheduleEnv
    env = ScheduleEnv("sia-64", "gavel:rate=6,jobs=4", candidate_filter="score")
    env.reset(seed=0)
    assert env.metrics()["lp_fallbacks"] == 0


def test_lp_on_change_retries_the_lp_after_a_fallback(monkeypatch):
    """``lp-on-change`` reuses X between arrivals and completions, but not a fallback one: the
    next decision solves again."""
    calls = {"n": 0}

    def first_fails(problem, objective="max-min", **kw):
        calls["n"] += 1
        if calls["n"] == 1:
            raise RuntimeError("injected")
        return REAL_SOLVE(problem, objective, **kw)

    monkeypatch.setattr(parts_mod, "solve_allocation", first_fails)
    policy = make_policy("lp-on-change")
    cluster = get_cluster("tiny-8")
    workload = load_workload("gavel:rate=1,jobs=3,seed=0,duration_scale=5", cluster)
    sim = Simulator(cluster, workload, policy, SimConfig(check_invariants=True))
    policy.reset(cluster, 0)
    sim.reset()
    for i in range(3):
        view = sim.next_view()
        if i:
            assert not view.arrived and not view.completed    # nothing else triggers a solve
        sim.place_decision(policy.decide(view))
        sim.advance()
    assert calls["n"] == 2 and policy.summary()["lp_fallbacks"] == 1
