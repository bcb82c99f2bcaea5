"""The Python API's refusals of bad input and its branching (a fresh-user audit of the library,
session 37): each bad value is an ``HSchedError`` naming its field, never a raw
``TypeError``/``IndexError`` from inside or a value silently coerced; a simulator branched
from a snapshot continues as the unbranched run would, whatever the policy's own state."""

from __future__ import annotations

import numpy as np
import pytest

from hsched_env.cluster import get_cluster
from hsched_env.cluster.files import load_cluster
from hsched_env.errors import ConfigError, UnknownNameError
from hsched_env.simulator import SimConfig, Simulator
from hsched_env.workloads import load_workload
from lp_baseline.instances import random_problem
from lp_baseline.registry import make_policy
from lp_baseline.solver import solve_allocation

CLUSTER = get_cluster("sia-64")
WORKLOAD = load_workload("gavel:rate=6,jobs=20,seed=1,mix=llm", CLUSTER)


def _drive(sim, rounds=None):
    """Step ``sim`` by hand (next_view, the policy's decide, place, advance)."""
    n = 0
    while (rounds is None or n < rounds) and (view := sim.next_view()) is not None:
        sim.place_decision(sim.policy.decide(view))
        sim.advance()
        n += 1
    return sim


@pytest.mark.parametrize("name", ["random", "support-reuse", "pop-2"])
def test_branches_from_a_snapshot_are_the_unbranched_run(name):
    """The snapshot holds the policy's state too (its RNG, its memos): two branches and the
    original, continued after them, all finish as the run that was never branched (they
    used to share one policy object, so each branch moved the others' random draws)."""
    whole = Simulator(CLUSTER, WORKLOAD, make_policy(name), SimConfig(seed=1)).run()
    sim = Simulator(CLUSTER, WORKLOAD, make_policy(name), SimConfig(seed=1))
    sim.policy.reset(CLUSTER, 1)
    sim.reset()
    _drive(sim, 15)
    snap = sim.snapshot()
    runs = [_drive(sim.restored(snap)), _drive(sim.restored(snap)), _drive(sim)]
    want = whole.metrics()["avg_jct_s"]
    assert [r.result().metrics()["avg_jct_s"] for r in runs] == [want] * 3


@pytest.mark.parametrize("kwargs,field", [
    ({"seed": "1"}, "seed"), ({"seed": 1.5}, "seed"), ({"seed": -1}, "seed"),
    ({"measure_jobs": ("0", "3")}, "measure_jobs"), ({"measure_jobs": 3}, "measure_jobs"),
    ({"measure_jobs": (1, 2, 3)}, "measure_jobs"), ({"measure_jobs": (0.5, 3)}, "measure_jobs"),
    ({"planner": None}, "planner"), ({"planner": {}}, "planner")])
def test_sim_config_refuses_values_of_the_wrong_kind(kwargs, field):
    with pytest.raises(ConfigError) as err:
        SimConfig(**kwargs)
    assert err.value.field == field


class _Fixed:
    """A policy whose every decision is ``decision(view)``."""

    name = "fixed"

    def __init__(self, decision):
        self.decision = decision

    def reset(self, cluster, seed):
        pass

    def decide(self, view):
        return self.decision(view)


@pytest.mark.parametrize("decision,says", [
    (lambda v: {int(v.job_ids[0]): 0.7}, "chose 0.7"),
    (lambda v: {int(v.job_ids[0]): "0"}, "chose '0'"),
    (lambda v: {int(v.job_ids[0]): True}, "chose True"),
    (lambda v: {int(v.job_ids[0]): [0, float("nan")]}, "whole numbers"),
    (lambda v: {int(v.job_ids[0]): None}, "chose None"),
    (lambda v: {0.5: 0}, "assigned job 0.5"),
    (lambda v: [(int(v.job_ids[0]), 0)], "returned list, not a mapping"),
    (lambda v: None, "returned NoneType"),
])
def test_a_decision_of_the_wrong_kind_is_refused_not_coerced(decision, says):
    sim = Simulator(CLUSTER, WORKLOAD, _Fixed(decision), SimConfig())
    with pytest.raises(ConfigError, match=says) as err:
        sim.run()
    assert err.value.field == "decision"


def test_place_checks_the_job_and_the_row():
    sim = Simulator(CLUSTER, WORKLOAD, make_policy("fifo"), SimConfig())
    sim.reset()
    with pytest.raises(RuntimeError, match="next_view"):
        sim.place(0, 0)
    view = sim.next_view()
    j = int(view.job_ids[0])
    size = len(view.candidates[0])
    for bad_job, bad_row, says in ((77, 0, "job 77, which is not active"),
                                   (j, size, f"row {size} of job {j}"),
                                   (j, 0.5, "row 0.5"), (True, 0, "job True")):
        with pytest.raises(ConfigError, match=says):
            sim.place(bad_job, bad_row)
    assert sim.place(j, 0) in (True, False)
    with pytest.raises(ConfigError, match="chose 'x'"):
        sim.try_place_decision({j: "x"})


@pytest.mark.parametrize("name,kwargs,field", [
    (None, {}, "policy"), ("topk", {"topk": 0}, "topk"), ("topk", {"topk": -1}, "topk"),
    ("topk", {"topk": "3"}, "topk"), ("heterosched-lp", {"no_such_option": 1}, "no_such_option")])
def test_make_policy_refuses_bad_arguments(name, kwargs, field):
    with pytest.raises(ConfigError) as err:
        make_policy(name, **kwargs)
    assert err.value.field == field
    assert make_policy("topk", topk=np.int64(3)).topk == 3


@pytest.mark.parametrize("name,kwargs,field", [
    # each ran under its name while doing something else (session 49's audit): every decision
    # the greedy fallback (a bad backend or time limit), an option ignored, overridden or a
    # TypeError mid-construction
    ("heterosched-lp", {"time_limit_s": -1}, "time_limit_s"),
    ("heterosched-lp", {"time_limit_s": float("nan")}, "time_limit_s"),
    ("heterosched-lp", {"time_limit_s": "5"}, "time_limit_s"),
    ("fifo", {"bogus": 1}, "bogus"),
    ("gavel", {"pop": 4}, "pop"), ("gavel", {"floor": 0.5}, "floor"),
    ("agnostic-lp", {"agnostic": False}, "agnostic"),
    ("gavel-resets", {"min_resolve_interval_s": 600}, "min_resolve_interval_s"),
    ("sia", {"floor": 0.5}, "floor"), ("heterosched-ilp", {"ftf_guard": 2}, "ftf_guard"),
    ("heterosched-lp-v0", {"normalizer": "fair-share"}, "normalizer"),
    ("heterosched-lp-v0", {"ftf_guard": 2}, "ftf_guard"),
    ("pop-4", {"pop": 8}, "pop"), ("pop-4-serial", {"pop_workers": 4}, "pop_workers"),
    ("lp-on-change", {"resolve": "every-round"}, "resolve"),
    ("topk-dominance", {"dominance": False}, "dominance"),
    # make_policy's own keywords, silently ignored until session 51
    ("fifo", {"objective": "sia-las"}, "objective"),
    ("gavel", {"objective": "sia-srpt"}, "objective"),
    ("heterosched-lp-las", {"objective": "sia-srpt"}, "objective"),
    ("gavel", {"topk": 3}, "topk"), ("heterosched-lp", {"topk": 8}, "topk"),
    ("sia", {"time_limit_s": 5}, "time_limit_s"), ("fifo", {"backend": "pulp"}, "backend"),
    ("heterosched-ilp", {"memoize": False}, "memoize")])
def test_make_policy_refuses_options_it_would_not_honour(name, kwargs, field):
    with pytest.raises(ConfigError) as err:
        make_policy(name, **kwargs)
    assert err.value.field == field


def test_pop_options_without_pop_parts_are_refused():
    """``pop_workers`` / ``pop_executor`` say how POP's parts are solved; a policy of one
    part read neither, and took them without a word."""
    for kw in ({"pop_executor": "thread"}, {"pop_workers": 3}):
        for name in ("heterosched-lp", "lp-on-change", "topk"):
            with pytest.raises(ConfigError, match="does not take option") as err:
                make_policy(name, **kw)
            assert err.value.field == next(iter(kw))
    assert make_policy("heterosched-lp", pop=4, pop_workers=2).pop_workers == 2
    assert make_policy("pop-4", pop_executor="thread").pop_executor == "thread"
    # one worker: the parts run one after the other in this thread, wherever told to
    for name, kw in (("pop-4-serial", {"pop_executor": "thread"}),
                     ("pop-4", {"pop_workers": 1, "pop_executor": "thread"})):
        with pytest.raises(ConfigError, match="does not take option") as err:
            make_policy(name, **kw)
        assert err.value.field == "pop_executor"


@pytest.mark.parametrize("kwargs", [{"lp_method": "ipm"}, {"lp_method": "colgen"},
                                    {"backend": "pulp"}, {"backend": "pulp", "lp_method": "auto"}])
def test_a_warm_start_no_solve_would_use_is_refused(kwargs):
    """``warm_start`` starts HiGHS' dual simplex through highspy from a basis; with IPM,
    column generation or PuLP it did nothing (``lp_warm_starts`` 0), without a word."""
    for name in ("heterosched-lp", "gavel"):
        with pytest.raises(ConfigError, match="would be ignored") as err:
            make_policy(name, warm_start=True, **kwargs)
        assert err.value.field == "warm_start"
        make_policy(name, warm_start=False, **kwargs)
    for method in ("simplex", "auto"):
        assert make_policy("heterosched-lp", warm_start=True, lp_method=method).warm_start


def test_make_policy_still_takes_what_its_policies_read():
    """The solver's options reach every policy (the command line hands them to all); the
    co-optimizer's own options reach it."""
    make_policy("fifo", lp_method="simplex", warm_start=True)
    make_policy("gavel", warm_start=True)
    # make_policy's own keywords at their defaults, or a fixed objective named as it is
    make_policy("fifo", objective=None, backend="highs", topk=4, time_limit_s=None, memoize=True)
    make_policy("fifo", topk=np.int64(4), memoize=np.True_)            # NumPy's defaults too
    assert make_policy("gavel", objective="max-min", memoize=False).memoize is False
    assert make_policy("pop-4", pop_workers=1).pop_workers == 1
    las = make_policy("heterosched-lp-las", floor=0.5, las_tau_s=60, time_limit_s=5)
    assert (las.floor, las.las_tau_s) == (0.5, 60.0)
    with pytest.raises(UnknownNameError, match="LP backend"):
        make_policy("heterosched-lp", backend="higs")


@pytest.mark.parametrize("kwargs,field", [
    ({"memoize": "no"}, "memoize"), ({"restart_aware": "no"}, "restart_aware"),
    ({"size_cap": "yes"}, "size_cap"), ({"sticky": 0}, "sticky"), ({"fill": "off"}, "fill"),
    ({"pop": 0}, "pop"), ({"pop": 2.7}, "pop"), ({"pop": "3"}, "pop"), ({"topk": 0}, "topk"),
    ({"floor": True}, "floor"), ({"las_tau_s": True}, "las_tau_s")])
def test_lp_policy_takes_switches_and_counts_as_such(kwargs, field):
    """``"no"`` was read as on, ``pop=0`` as 1 and ``2.7`` as 2, ``topk=0`` solved empty LPs,
    ``floor=True`` was 1.0 (session 49's audit)."""
    from lp_baseline.policy import LPPolicy
    with pytest.raises(ConfigError) as err:
        LPPolicy(**kwargs)
    assert err.value.field == field


@pytest.mark.parametrize("kwargs,field", [
    ({"sticky": False}, "sticky"), ({"fill": True}, "fill"),          # sia-srpt: integral
    ({"objective": "sia-las", "fill": False}, "fill"),
    ({"las_tau_s": 60}, "las_tau_s"), ({"objective": "fair-srpt", "las_tau_s": 60}, "las_tau_s"),
    ({"objective": "max-min", "restart_aware": False}, "restart_aware"),
    ({"objective": "ftf", "restart_aware": True}, "restart_aware")])
def test_lp_policy_refuses_an_option_its_rounding_or_objective_never_reads(kwargs, field):
    """``sticky`` and ``fill`` under the integral rounding, ``las_tau_s`` outside the LAS
    objectives and ``restart_aware`` outside the two-stage ones were silently ignored
    (session 49's LP-options audit); they are refused as ``floor`` is."""
    from lp_baseline.policy import LPPolicy
    with pytest.raises(ConfigError, match="would be ignored") as err:
        LPPolicy(**kwargs)
    assert err.value.field == field


def test_lp_policy_takes_those_options_where_they_are_read():
    from lp_baseline.policy import DEFAULT_LAS_TAU_S, LPPolicy
    gavel_rounding = LPPolicy(objective="max-min", sticky=False, fill=False)
    assert (gavel_rounding.sticky, gavel_rounding.fill) == (False, False)
    assert LPPolicy(rounding="gavel", sticky=False).sticky is False        # sia-srpt, gavel
    assert LPPolicy(objective="fair-las", las_tau_s=60).las_tau_s == 60.0
    assert LPPolicy(objective="sia-las", restart_aware=False).restart_aware is False
    plain = LPPolicy()                                       # not given: the defaults
    assert (plain.sticky, plain.fill, plain.las_tau_s, plain.restart_aware) == (
        True, True, DEFAULT_LAS_TAU_S, True)
    from lp_baseline.registry import make_policy
    with pytest.raises(ConfigError, match="would be ignored"):
        make_policy("heterosched-lp", sticky=False)
    assert make_policy("heterosched-lp-v1", sticky=False).sticky is False    # fair-srpt


@pytest.mark.parametrize("kwargs,says", [({"lam": 0.0}, "lam and clip must be > 0"),
                                         ({"lam": -5.0}, "lam and clip must be > 0"),
                                         ({"p": float("nan")}, "p must be a finite number"),
                                         ({"clip": 0.0}, "lam and clip must be > 0")])
def test_sia_refuses_a_cost_that_idles_the_cluster_or_fails_every_solve(kwargs, says):
    """lam <= 0 made every job wait while the ILP "succeeded"; p = NaN failed every solve."""
    from lp_baseline.sia import SiaPolicy
    with pytest.raises(ValueError, match=says):
        SiaPolicy(**kwargs)


def test_solver_argument_errors_are_config_errors():
    p = random_problem(3, np.random.default_rng(0), n_types=2)
    for kwargs, field in (({"objective": "nope"}, "objective"),
                          ({"objective": "ftf"}, "remaining"),
                          ({"objective": "max-min", "floor": 2.0}, "floor")):
        objective = kwargs.pop("objective")
        with pytest.raises(ConfigError) as err:
            solve_allocation(p if field != "remaining" else _without(p, "remaining"),
                             objective, **kwargs)
        assert err.value.field == field


def _without(p, name):
    import dataclasses
    return dataclasses.replace(p, **{name: None})


def test_load_cluster_and_load_workload_name_the_bad_argument():
    with pytest.raises(ConfigError, match="cluster_from_dict") as err:
        load_cluster({"nodes": []})
    assert err.value.field == "path"
    for spec in ("gavel:jobs=3", "csv:path=/nonexistent.csv"):
        with pytest.raises(ConfigError, match="unknown throughput source 'foo'") as err:
            load_workload(spec, CLUSTER, throughputs="foo")
        assert err.value.field == "throughputs"


def test_the_entry_points_name_an_argument_of_another_kind():
    """``Simulator(...)``, ``plan(...)``, ``plan_set(...)`` and ``PlannerConfig``: an
    argument of another kind is a ConfigError naming it (they failed with AttributeErrors
    deep inside); a cluster may be given by its preset name."""
    from hsched_env.planner import PlannerConfig, plan, plan_set
    tiny = get_cluster("tiny-8")
    jobs = load_workload("gavel:rate=4,jobs=3,seed=1", tiny)
    fifo = make_policy("fifo")
    assert Simulator("tiny-8", jobs, fifo).run().metrics()["jobs_completed"] == 3
    assert len(plan("resnet50", "tiny-8")) == len(plan("resnet50", tiny)) > 0
    cases = [(lambda: Simulator(42, jobs, fifo), "cluster"),
             (lambda: Simulator(tiny, "gavel:jobs=3", fifo), "workload"),
             (lambda: Simulator(tiny, [1, 2], fifo), "workload"),
             (lambda: Simulator(tiny, jobs, "greedy"), "policy"),
             (lambda: Simulator(tiny, jobs, fifo, None), "config"),
             (lambda: plan(None, tiny), "model"),
             (lambda: plan("resnet50", 8), "cluster"),
             (lambda: plan("resnet50", tiny, config={}), "config"),
             (lambda: PlannerConfig(calibration=None), "calibration"),
             (lambda: plan_set("resnet50", tiny, {"T4": 1.5}), "gpus.T4"),
             (lambda: plan_set("resnet50", tiny, {"T4": True}), "gpus.T4"),
             (lambda: plan_set("resnet50", tiny, {"T4": "2"}), "gpus.T4"),
             (lambda: plan_set("resnet50", tiny, None), "gpus")]
    for call, field in cases:
        with pytest.raises(ConfigError) as err:
            call()
        assert err.value.field == field


def test_switches_take_true_or_false_only():
    """A switch given "no" (truthy) or -3 used to turn it on: now a ConfigError."""
    from hsched_env.planner import PlannerConfig
    for make, name in ((PlannerConfig, "mixed"), (PlannerConfig, "data_parallel_only"),
                       (SimConfig, "check_invariants"), (SimConfig, "skip_steady_rounds")):
        for bad in ("no", -3, None):
            with pytest.raises(ConfigError) as err:
                make(**{name: bad})
            assert err.value.field == name
    with pytest.raises(ConfigError) as err:
        load_workload("gavel:jobs=3", CLUSTER, skip_invalid="no")
    assert err.value.field == "skip_invalid"
    assert SimConfig(check_invariants=np.bool_(True)).check_invariants


@pytest.mark.parametrize("env_id", ["hsched/Schedule-v0", "hsched/Rank-v0"])
def test_slots_beyond_the_maximum_are_a_config_error(env_id):
    """A K far above any round's candidates is refused before anything is allocated (it
    ended in a memory error, or the out-of-memory killer)."""
    import gymnasium as gym

    import hsched_env  # noqa: F401  (registers the ids)
    from hsched_env.envs.base import MAX_SLOTS
    for key in ("slots", "max_candidates"):
        with pytest.raises(ConfigError, match="at most 4,194,304") as err:
            gym.make(env_id, **{key: MAX_SLOTS + 1})
        assert err.value.field == key


def test_replay_refuses_what_is_not_an_episode_record():
    from hsched_env.envs import replay
    with pytest.raises(ConfigError, match="lacks 'class', 'kwargs', 'seed', 'actions'"):
        replay({})
    with pytest.raises(ConfigError, match="episode_record"):
        replay([1, 2])
    with pytest.raises(ConfigError, match="unknown environment class"):
        replay({"class": "Nope", "kwargs": {}, "seed": 0, "actions": []})
    # the actions and the seed are checked before anything runs: "abc" replayed as three
    # invalid actions, with another reward and no word
    ok = {"class": "ScheduleEnv", "kwargs": {}, "seed": 0, "actions": []}
    for bad, field in (({"actions": "abc"}, "record['actions']"),
                       ({"actions": None}, "record['actions']"),
                       ({"actions": [{"x": 1}]}, "record['actions'][0]"),
                       ({"actions": [3, 2.5]}, "record['actions'][1]"),
                       ({"class": "RankEnv", "actions": [1]}, "record['actions'][0]"),
                       ({"class": ["RankEnv"]}, "record['class']"),
                       ({"seed": -1}, "record['seed']")):
        with pytest.raises(ConfigError) as err:
            replay({**ok, **bad})
        assert err.value.field == field


@pytest.mark.parametrize("key", ["flat", "multidiscrete"])
def test_make_masked_switches_must_be_true_or_false(key):
    from hsched_env.wrappers import make_masked
    for how in ({key: "yes"}, {"env_id": {"env_id": "hsched/Schedule-Tiny-v0", key: 1}}):
        with pytest.raises(ConfigError, match=f"{key} must be True or False") as err:
            make_masked(**({"env_id": "hsched/Schedule-Tiny-v0", **how} if "env_id" not in how
                           else how))
        assert err.value.field == key


def test_a_pool_name_given_empty_is_refused(tmp_path):
    from hsched_env.cluster import load_cluster
    for name in ('""', '"   "'):
        path = tmp_path / "c.yaml"
        path.write_text("name: c\nnodes:\n  - gpu_type: V100\n    count: 2\n"
                        f"    gpus_per_node: 4\n    name: {name}\n", encoding="utf-8")
        with pytest.raises(ConfigError, match="non-empty string") as err:
            load_cluster(path)
        assert err.value.field.endswith(".name")
    path.write_text("name: c\nnodes:\n  - gpu_type: V100\n    count: 2\n    gpus_per_node: 4\n",
                    encoding="utf-8")
    assert load_cluster(path).pools[0].name          # absent: the default name


def test_errors_survive_a_trip_to_another_process():
    """A worker's error (a sweep on Ray, a process pool) reaches the parent pickled: each
    error type keeps its class, message and where (session 51: ``UnknownNameError`` could not
    be unpickled at all, its ``__init__`` taking the kind, name and valid names; a copy of an
    ``UnexpectedArgumentError`` lost the field its ``__cause__`` named)."""
    import pickle

    from hsched_env.errors import TraceError, UnexpectedArgumentError
    errors = [ConfigError("bad", source="c.json", field="nodes[1]", line=3),
              TraceError("no arrival", source="t.csv", field="arrival", line=9),
              UnexpectedArgumentError("got an unexpected keyword argument 'x'", field="x"),
              UnknownNameError("model", "resnet5O", ["vgg", "resnet50"], field="model",
                               source="w.csv", line=2)]
    try:
        try:
            raise UnexpectedArgumentError("got an unexpected keyword argument 'frameskip'",
                                          field="frameskip")
        except TypeError as first:               # what gymnasium.make does with it
            raise type(first)(f"{first} (in make)") from first
    except UnexpectedArgumentError as copy:
        errors.append(copy)
    for err in errors:
        back = pickle.loads(pickle.dumps(err))
        assert type(back) is type(err) and str(back) == str(err)
        assert (back.source, back.field, back.line) == (err.source, err.field, err.line)
    assert errors[-1].field == "frameskip"
    assert pickle.loads(pickle.dumps(errors[3])).valid == ["resnet50", "vgg"]


# ----------------------------------------------- the Python API's arguments (session 59 audit)
def test_python_api_arguments_of_the_wrong_kind_are_named():
    """Each raised a raw TypeError / AttributeError / KeyError from deep inside, or (the
    backend) only at the end of a sweep; each is now a ConfigError naming the argument."""
    import gymnasium as gym

    from agents.evaluate import evaluate
    from agents.policy_entries import parse_policies
    from agents.ranker import Ranker, RankerNet
    from agents.suites import SMOKE
    from agents.sweep import make_backend
    from hsched_env.planner import PlannerConfig, plan_sets
    from lp_baseline.policy import LPPolicy
    cluster = get_cluster("sia-64")
    cases = [
        (lambda: plan_sets("resnet50", cluster, 5), "sets"),
        (lambda: plan_sets("resnet50", cluster, None), "sets"),   # returned [] silently
        (lambda: RankerNet(hidden=0), "hidden"),                   # a zero-width network
        (lambda: RankerNet(hidden=2.5), "hidden"),
        (lambda: Ranker.load(None), "ranker"),
        (lambda: SimConfig(throughputs="bogus"), "throughputs"),  # named only at run()
        (lambda: PlannerConfig(max_candidates=2.5), "max_candidates"),
        (lambda: parse_policies(5), "--policies"),
        (lambda: make_backend(None), "--backend"),
        (lambda: evaluate(SMOKE, ["fifo"], runs_dir=5, progress=False), "runs_dir"),
        (lambda: evaluate(SMOKE, ["fifo"], retries="x", runs_dir="unused", progress=False),
         "retries"),
        (lambda: LPPolicy(name=None), "name"),
    ]
    for call, field in cases:
        with pytest.raises(ConfigError) as err:
            call()
        assert err.value.field == field
    # a NumPy count is a count, as elsewhere (it was refused by PlannerConfig alone)
    assert PlannerConfig(max_candidates=np.int64(8)) == PlannerConfig(max_candidates=8)
    # keep() on what is not a Rank-v0 episode, or another environment's observation
    ranker = Ranker(RankerNet(hidden=8), gate_candidates=0)
    rank = gym.make("hsched/Rank-Tiny-v0")
    obs, _ = rank.reset(seed=0)
    assert ranker.keep(obs, rank).shape == (rank.unwrapped.K,)
    select = gym.make("hsched/Schedule-Tiny-v0")
    other, _ = gym.make("hsched/Rank-Small-v0").reset(seed=0)
    for o, e, field in ((select.reset(seed=0)[0], select, "env"), ({}, rank, "obs"),
                        (other, rank, "obs")):
        with pytest.raises(ConfigError) as err:
            ranker.keep(o, e)
        assert err.value.field == field


def test_replay_reads_actions_as_the_environment_does():
    """A record's actions as an array, or as integral floats (pandas, float-only JSON tools),
    replay exactly: the check refuses only what the environment could not read as one
    integer (the reviewer found the first version refusing these)."""
    import gymnasium as gym

    from hsched_env.envs import replay
    env = gym.make("hsched/Schedule-Tiny-v0").unwrapped
    env.reset(seed=3)
    for _ in range(6):
        env.step(env.reference_action())
    env.step(3.5)                                  # not one integer: recorded as -1
    rec = env.episode_record()
    assert rec["actions"][-1] == -1
    _, reward = replay(rec)
    for actions in (np.array(rec["actions"]), [float(a) for a in rec["actions"]],
                    np.array(rec["actions"], dtype=float)):
        assert replay({**rec, "actions": actions})[1] == reward
    for bad, field in (([*rec["actions"][:-1], 2.5], "record['actions'][6]"),
                       (np.array(3), "record['actions']")):      # a 0-d array: TypeError
        with pytest.raises(ConfigError) as err:
            replay({**rec, "actions": bad})
        assert err.value.field == field


def test_catalog_lookups_and_mask_wrappers_name_a_bad_argument():
    import gymnasium as gym

    from hsched_env.catalog import get_gpu, get_model, gpu_catalog, model_catalog
    from hsched_env.wrappers import wrap_masked
    for call in (lambda: get_gpu("v100", catalog=5), lambda: get_model("resnet50", catalog=[1]),
                 lambda: get_model("resnet50", catalog={"a": 1})):
        with pytest.raises(ConfigError) as err:               # AttributeError before
            call()
        assert err.value.field == "catalog"
    assert get_gpu("v100", catalog=gpu_catalog()).name == "V100-16GB"
    assert get_model("ResNet-50", catalog=model_catalog()).name == "resnet50"
    with pytest.raises(ConfigError) as err:
        wrap_masked(None)
    assert err.value.field == "env"
    with pytest.raises(ConfigError) as err:                   # numpy's TypeError before
        wrap_masked(gym.make("hsched/Schedule-Tiny-v0"), mask_dtype="bogus")
    assert err.value.field == "dtype"
