"""The environments as an RL benchmark: the registered ids and their step limits, checkers clean
with default kwargs, invalid actions that cost (and end episodes), metrics on a step-limit cut,
the HiGHS banner kept out of stdout/stderr, a readable ``rgb_array`` frame."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
import warnings

import gymnasium as gym
import numpy as np
import pytest

import hsched_env
from hsched_env.defaults import ENV_WORKLOAD
from hsched_env.envs import ENV_IDS, VARIANT_IDS
from hsched_env.envs.episode import EpisodeEndInfo
from hsched_env.errors import ConfigError, UnknownNameError
from hsched_env.registration import VARIANTS, variant

slow = pytest.mark.slow
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TINY_S, TINY_R = "hsched/Schedule-Tiny-v0", "hsched/Rank-Tiny-v0"
SMALL_IDS = [v.id for v in VARIANTS if v.level != "Large"]


# ------------------------------------------------------------------------- registration
def test_every_variant_is_registered_with_its_limit_and_end_info_wrapper():
    assert set(ENV_IDS) <= set(VARIANT_IDS)
    assert len(VARIANT_IDS) == 10 and len(set(VARIANT_IDS)) == 10
    for v in VARIANTS:
        spec = gym.spec(v.id)
        assert spec.max_episode_steps == v.max_episode_steps > 0
        # the scenario as the variant states it; its K as the entry points' default
        assert ({k: w for k, w in spec.kwargs.items() if k != "default_slots"}
                == {k: w for k, w in v.kwargs.items() if k != "slots"})
        assert spec.kwargs.get("default_slots") == v.kwargs.get("slots")
        assert [w.name for w in spec.additional_wrappers] == ["EpisodeEndInfo"]
    # the v0 ids keep their defaults: no scenario kwargs in the registration
    assert gym.spec("hsched/Schedule-v0").kwargs == {} == gym.spec("hsched/Rank-v0").kwargs
    with pytest.raises(UnknownNameError, match="Schedule-Huge"):
        variant("hsched/Schedule-Huge-v0")


@pytest.mark.parametrize("env_id", SMALL_IDS)
def test_variant_makes_its_scenario(env_id):
    v = variant(env_id)
    env = gym.make(env_id)
    u = env.unwrapped
    assert u.cluster.name == v.kwargs.get("cluster", "sia-64")
    assert u.workload_spec == v.kwargs.get("workload", ENV_WORKLOAD)
    # a registered variant keeps the jobs it was defined with (docs/environments.md)
    assert "multi_gpu_recommendation=1" in u.workload_spec
    assert u.K == v.kwargs.get("slots", 64 if v.env == "Schedule" else 1024)
    obs, info = env.reset(seed=0)
    assert env.observation_space.contains(obs)
    # a gym.make override of the step limit is honoured
    assert gym.make(env_id, max_episode_steps=7).spec.max_episode_steps == 7


@pytest.mark.parametrize("env_id", [TINY_S, TINY_R])
def test_a_variants_k_yields_to_slots_or_its_old_name(env_id):
    """A registered id's K is a default: ``slots`` or its old name ``max_candidates`` given
    to ``gymnasium.make`` replaces it (both at once is an error)."""
    assert gym.make(env_id).unwrapped.K == variant(env_id).kwargs["slots"]
    assert gym.make(env_id, slots=16).unwrapped.K == 16
    assert gym.make(env_id, max_candidates=16).unwrapped.K == 16
    with pytest.raises(ConfigError, match="not both"):
        gym.make(env_id, slots=16, max_candidates=16)


# ------------------------------------------------------------------------- checkers
def _check(env_id):
    from gymnasium.utils.env_checker import check_env
    from stable_baselines3.common.env_checker import check_env as sb3_check_env
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        check_env(gym.make(env_id).unwrapped)
        sb3_check_env(gym.make(env_id))


@pytest.mark.parametrize("env_id", [TINY_S, TINY_R])
def test_checkers_clean_on_default_kwargs_tiny(env_id):
    _check(env_id)


@slow
@pytest.mark.parametrize("env_id", [i for i in SMALL_IDS if "Tiny" not in i])
def test_checkers_clean_on_default_kwargs(env_id):
    _check(env_id)


@slow
@pytest.mark.parametrize("env_id", [v.id for v in VARIANTS if v.level == "Large"])
def test_checkers_clean_on_default_kwargs_large(env_id):
    _check(env_id)                 # 20-30 s each: a 1,000-job LP per step


# ------------------------------------------------------------------------- invalid actions
def _first_round_with_invalid_slot(env):
    u = env.unwrapped
    obs, info = env.reset(seed=1)
    mask = u.action_masks()
    bad = np.flatnonzero(~mask[:u.K])
    assert bad.size
    return u, int(bad[0]), info


def test_penalize_is_the_default_and_costs_one_wasted_round():
    env = gym.make(TINY_S)
    u, bad, info = _first_round_with_invalid_slot(env)
    assert u.invalid_action == "penalize"
    active = u.slots.view.num_active
    _, r, term, trunc, info2 = env.step(bad)
    assert info2["invalid_action"] and info2["invalid_actions"] == 1
    assert r == pytest.approx(-active * u.sim_config.round_s / u.reward_scale)
    assert not term and not trunc and info2["time_s"] == info["time_s"]
    # a given penalty replaces the default; "noop" costs nothing
    env = gym.make(TINY_S, invalid_penalty=0.25)
    _, bad, _ = _first_round_with_invalid_slot(env)
    assert env.step(bad)[1] == -0.25
    env = gym.make(TINY_S, invalid_action="noop")
    _, bad, _ = _first_round_with_invalid_slot(env)
    assert env.step(bad)[1] == 0.0


def test_terminate_ends_with_the_cost_to_go():
    env = gym.make(TINY_S, invalid_action="terminate")
    u, bad, _ = _first_round_with_invalid_slot(env)
    expected = u.invalid_action_penalty() + u.cost_to_go()
    # cost to go: the jobs one at a time in arrival order, each on its requested GPUs on the
    # slowest type that holds them (else its fastest candidate), at most at reference speed
    now, clock, total = u.simulator.run_view().time_s, u.simulator.run_view().time_s, 0.0
    for j in sorted(u.simulator.jobs, key=lambda jb: jb.arrival_s):
        table = u.simulator.candidates_of(j)
        requested = [float(t) for t, r in zip(table.samples_per_s, table.requested) if r]
        speed = min(min(requested) if requested else max(table.samples_per_s),
                    j.work_samples / j.duration_s)
        clock = max(clock, j.arrival_s) + j.work_samples / speed   # nothing ran yet
        total += clock - max(now, j.arrival_s)
    assert u.cost_to_go() == pytest.approx(total / u.reward_scale)
    _, r, term, trunc, info = env.step(bad)
    assert term and not trunc and r == pytest.approx(-expected)
    assert info["end_reason"] == "invalid_action" and "metrics" in info
    # the episode is over: no valid action, no open round
    assert not u.action_masks().any() and u.slots is None
    with pytest.raises(RuntimeError, match="ended"):
        env.step(u.K)


@slow
def test_terminating_early_never_pays():
    """At every step of the LP reference's episodes (seeds 0–19: until session 44 ending
    early paid on 6 of them, by up to 1.4 job-hours, where a job's request fits no GPU type of
    ``tiny-8`` and the charge took it at its reference speed), what ending the episode there
    costs is more than what playing it out still costs; and an invalid action does end it
    with that charge."""
    for seed in range(20):
        env = gym.make(TINY_S, invalid_action="terminate", max_episode_steps=-1)
        u = env.unwrapped
        env.reset(seed=seed)
        charges, rewards, done = [], [], False
        while not done:
            charges.append(u.invalid_action_penalty() + u.cost_to_go())
            _, r, term, trunc, _ = env.step(u.reference_action())
            rewards.append(r)
            done = term or trunc
        still = np.cumsum(rewards[::-1])[::-1]          # return from each step on (< 0)
        assert np.all(-np.array(charges) < still), seed
    cut = len(rewards) // 2
    env.reset(seed=19)
    for _ in range(cut):
        env.step(u.reference_action())
    _, r, term, _, _ = env.step(-1)
    assert term and r == pytest.approx(-charges[cut])


@pytest.mark.parametrize("mode", ["noop", "penalize"])
def test_invalid_streak_truncates_and_a_valid_action_resets_it(mode):
    env = gym.make(TINY_S, invalid_action=mode, invalid_limit=5)
    u, bad, _ = _first_round_with_invalid_slot(env)
    for _ in range(4):
        assert not any(env.step(bad)[2:4])
    env.step(u.K)                                   # commit: valid, the streak restarts
    for i in range(5):
        _, _, term, trunc, info = env.step(-1)
    assert trunc and not term and info["end_reason"] == "invalid_actions"
    assert info["invalid_actions"] == 9 and "metrics" in info
    assert not env.unwrapped.action_masks().any() and env.unwrapped.slots is None


def test_an_unmasked_random_agent_cannot_look_perfect():
    """Uniform actions over all K + 1 (mostly invalid) score far below the LP reference."""
    returns = {}
    for who in ("lp", "unmasked-random"):
        env = gym.make(TINY_S)
        u = env.unwrapped
        rng = np.random.default_rng(0)
        env.reset(seed=3)
        total, done = 0.0, False
        while not done:
            a = u.reference_action() if who == "lp" else int(rng.integers(u.K + 1))
            _, r, term, trunc, info = env.step(a)
            total += r
            done = term or trunc
        returns[who] = total
    assert returns["unmasked-random"] < 3 * returns["lp"] < 0


@pytest.mark.parametrize("kwargs,field", [({"invalid_action": "ignore"}, "invalid_action"),
                                          ({"invalid_penalty": -1.0}, "invalid_penalty"),
                                          ({"invalid_limit": 0}, "invalid_limit")])
def test_bad_invalid_action_options(kwargs, field):
    with pytest.raises((ConfigError, UnknownNameError)) as exc:
        gym.make(TINY_S, **kwargs)
    assert exc.value.field == field


@pytest.mark.parametrize("env_id,kwargs,field,says", [
    (TINY_S, {"round_s": "300"}, "round_s", "number"),
    (TINY_S, {"restart_s": None}, "restart_s", ">= 0"),
    (TINY_S, {"max_time_s": "3600"}, "max_time_s", "positive number"),
    (TINY_S, {"reward_scale": "a"}, "reward_scale", "positive number"),
    (TINY_S, {"lp_factory": 42}, "lp_factory", "must be a function"),
    (TINY_S, {"lp": "x"}, "lp", "LP policy object"),
    (TINY_S, {"foo": 1}, "foo", "got an unexpected keyword argument 'foo'; its arguments: "
                                "cluster"),
    (TINY_S, {"keep_cost": 0.1}, "keep_cost", "'keep_cost' belongs to RankEnv"),
    (TINY_R, {"candidate_filter": "lp"}, "candidate_filter", "belongs to ScheduleEnv"),
    (TINY_R, {"keep_cost": "a"}, "keep_cost", "a number >= 0"),
    (TINY_R, {"compare_full": "no"}, "compare_full", "True or False"),
    (TINY_R, {"measure_time": "False"}, "measure_time", "True or False"),
    (TINY_R, {"lp": object()}, "lp", "LP policy object")])
def test_bad_constructor_values_are_named(env_id, kwargs, field, says):
    """A value of the wrong kind (a string for a number, a non-callable factory, an argument
    of the other environment) is a ConfigError naming the argument, not a TypeError from
    deep inside."""
    with pytest.raises(ConfigError, match=says) as exc:
        gym.make(env_id, **kwargs)
    assert exc.value.field == field


def test_an_unknown_argument_is_also_the_type_error_libraries_retry_on():
    """TorchRL's ``GymEnv`` passes ``frameskip`` and retries without it on a ``TypeError``
    saying "unexpected keyword argument 'frameskip'"; a plain ``ConfigError`` (a
    ``ValueError``) made its documented example fail (the docs audit of session 50)."""
    with pytest.raises(TypeError, match="unexpected keyword argument 'frameskip'") as exc:
        gym.make(TINY_S, frameskip=1)
    assert isinstance(exc.value, ConfigError) and exc.value.field == "frameskip"
    with pytest.raises(TypeError, match="unexpected keyword arguments 'a', 'b'"):
        gym.make(TINY_R, b=1, a=2)


# ------------------------------------------------------------------------- step limit
@pytest.mark.parametrize("env_id,action", [(TINY_S, "commit"), (TINY_R, "keep")])
def test_step_limit_cut_reports_metrics(env_id, action):
    env = gym.make(env_id, max_episode_steps=6)
    u = env.unwrapped
    env.reset(seed=0)
    for i in range(6):
        a = u.K if action == "commit" else np.ones(u.K, dtype=np.int8)
        _, _, term, trunc, info = env.step(a)
        assert (trunc, i) == (i == 5, i) and not term
    assert info["end_reason"] == "step_limit"
    assert info["metrics"]["jobs_total"] == len(u.simulator.jobs)
    assert info["metrics"] == {**u.metrics(), "wall_s": info["metrics"]["wall_s"]}


def test_end_info_around_a_hand_built_time_limit_names_the_step_limit():
    """``EpisodeEndInfo(TimeLimit(env, n))`` on an environment built by hand (no spec): the
    cut is the step limit, as with a registered id."""
    from lp_baseline.environments import schedule_env
    env = EpisodeEndInfo(gym.wrappers.TimeLimit(schedule_env(**variant(TINY_S).kwargs),
                                                max_episode_steps=5))
    assert env.spec is None
    env.reset(seed=0)
    for i in range(5):
        _, _, term, trunc, info = env.step(env.unwrapped.K)
        assert (trunc, term) == (i == 4, False)
    assert info["end_reason"] == "step_limit"


def test_end_info_wrapper_leaves_the_environments_own_end_alone():
    env = EpisodeEndInfo(gym.make(TINY_S, max_episode_steps=-1).unwrapped)
    u = env.unwrapped
    env.reset(seed=0)
    done = False
    while not done:
        _, _, term, trunc, info = env.step(u.reference_action())
        done = term or trunc
    assert term and info["end_reason"] == "completed"


# ------------------------------------------------------------------------- HiGHS banner, render
def test_highs_banner_goes_to_the_log_not_to_stdout_or_stderr():
    code = textwrap.dedent("""
        import logging, sys
        logging.basicConfig(level=logging.INFO, stream=open(sys.argv[1], "w"))
        import gymnasium as gym, hsched_env
        env = gym.make("hsched/Rank-Tiny-v0")
        env.reset(seed=0)
        env.step(env.action_space.sample())
        print("ok")
    """)
    log = os.path.join(ROOT, "runs", f"highs-log-{os.getpid()}.txt")
    os.makedirs(os.path.dirname(log), exist_ok=True)
    try:
        done = subprocess.run([sys.executable, "-c", code, log], cwd=ROOT,
                              capture_output=True, text=True, timeout=120)
        assert done.returncode == 0, done.stderr
        assert done.stdout == "ok\n"
        assert "HiGHS" not in done.stderr
        with open(log) as f:
            assert "lp_baseline.highs" in f.read()
    finally:
        if os.path.exists(log):
            os.remove(log)


@pytest.mark.parametrize("cluster", ["tiny-8", "sia-64", "large-2048"])
def test_rgb_array_frame_is_readable(cluster):
    env = gym.make(TINY_S, cluster=cluster, render_mode="rgb_array")
    env.reset(seed=0)
    img = env.render()
    assert img.dtype == np.uint8 and img.shape[2] == 3
    assert img.shape[1] >= 640
    assert img.shape[0] <= 1.5 * img.shape[1]          # landscape-ish, even at 288 nodes
