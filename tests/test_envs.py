"""The Gymnasium environments ``hsched/Schedule-v0`` (select mode) and ``hsched/Rank-v0``
(rank mode): registration, API conformance (Gymnasium's and SB3's checkers), vector envs and
MaskablePPO, determinism, action semantics, rewards, reproduction of the LP policy, rendering,
replay and state copies, and errors on bad input."""

from __future__ import annotations

import copy
import functools
import json
import math
import os
import subprocess
import sys
import textwrap
import warnings

import gymnasium as gym
import numpy as np
import pytest

import hsched_env
from hsched_env.envs import RankEnv, ScheduleEnv, replay
from hsched_env.errors import ConfigError, HSchedError, UnknownNameError
from lp_baseline.environments import rank_env, schedule_env
from lp_baseline.policy import make_policy

slow = pytest.mark.slow

CLUSTER = "sia-64"
SMALL = "gavel:rate=4,jobs=20"        # ~220 rounds, a reference episode takes < 1 s
REF = "gavel:rate=4,jobs=30"          # the reference-reproduction scenario
SCHEDULE, RANK = "hsched/Schedule-v0", "hsched/Rank-v0"
# Rank-v0's info["decision_time_s"] is wall clock unless measure_time=False
DET_KWARGS = {SCHEDULE: {}, RANK: {"measure_time": False}}
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


# ---------------------------------------------------------------------------------- helpers
def deterministic_metrics(m: dict) -> dict:
    """The metrics without wall-clock fields."""
    return {k: v for k, v in m.items() if not (k.startswith("decision_time") or k == "wall_s")}


def clean_info(info: dict) -> dict:
    out = dict(info)
    if "metrics" in out:
        out["metrics"] = deterministic_metrics(out["metrics"])
    return out


def assert_same(a, b, path="value"):
    """Exact equality of nested dicts / arrays / numbers (NaN equals NaN)."""
    if isinstance(a, dict):
        assert isinstance(b, dict) and a.keys() == b.keys(), f"{path}: keys differ"
        for k in a:
            assert_same(a[k], b[k], f"{path}[{k!r}]")
    elif isinstance(a, np.ndarray):
        assert isinstance(b, np.ndarray) and a.dtype == b.dtype, f"{path}: type differs"
        assert np.array_equal(a, b, equal_nan=a.dtype.kind == "f"), f"{path}: arrays differ"
    elif isinstance(a, (float, np.floating)) and math.isnan(a):
        assert isinstance(b, (float, np.floating)) and math.isnan(b), f"{path}: {a} != {b}"
    elif isinstance(a, (list, tuple)):
        assert len(a) == len(b), f"{path}: lengths differ"
        for i, (x, y) in enumerate(zip(a, b)):
            assert_same(x, y, f"{path}[{i}]")
    else:
        assert a == b, f"{path}: {a!r} != {b!r}"


def random_action(env, rng: np.random.Generator, p_commit: float = 0.2):
    """A valid random action: select mode places a random valid slot (or commits with
    probability ``p_commit``); rank mode keeps random bits."""
    env = env.unwrapped
    if isinstance(env, ScheduleEnv):
        valid = np.flatnonzero(env.action_masks()[:env.K])
        if valid.size == 0 or rng.random() < p_commit:
            return env.K
        return int(rng.choice(valid))
    return rng.integers(0, 2, env.K).astype(np.int8)


def rollout(env, seed: int, steps: int, rng_seed: int = 0, actions=None) -> list:
    """reset(seed) then ``steps`` steps of ``random_action`` (or the given actions):
    [(obs, reward, terminated, truncated, info without wall-clock fields, action), ...]."""
    obs, info = env.reset(seed=seed)
    out = [(obs, None, False, False, clean_info(info), None)]
    rng = np.random.default_rng(rng_seed)
    for i in range(steps if actions is None else len(actions)):
        a = random_action(env, rng) if actions is None else actions[i]
        obs, r, term, trunc, info = env.step(a)
        out.append((obs, r, term, trunc, clean_info(info), a))
        if term or trunc:
            break
    return out


def continue_with(env, actions) -> list:
    out = []
    for a in actions:
        obs, r, term, trunc, info = env.step(a)
        out.append((obs, r, term, trunc, clean_info(info)))
    return out


def run_reference(env, seed: int = 0):
    """An episode following ``reference_action()``: (rewards, infos)."""
    env.reset(seed=seed)
    rewards, infos = [], []
    while True:
        _, r, term, trunc, info = env.step(env.reference_action())
        rewards.append(r)
        infos.append(info)
        if term or trunc:
            return rewards, infos


def make_select(**kw) -> ScheduleEnv:
    return schedule_env(CLUSTER, kw.pop("workload", SMALL), **kw)


def make_rank(**kw) -> RankEnv:
    kw.setdefault("measure_time", False)
    return rank_env(CLUSTER, kw.pop("workload", SMALL), **kw)


def run_python(code: str, **env_vars) -> str:
    """Run ``code`` in a fresh interpreter (repository root as cwd); its stdout."""
    env = {**os.environ, **env_vars}
    proc = subprocess.run([sys.executable, "-c", textwrap.dedent(code)], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=120, check=False)
    assert proc.returncode == 0, proc.stderr
    return proc.stdout


# ---------------------------------------------------------------------------------- fixtures
@pytest.fixture(scope="module")
def select_reference():
    """A Schedule-v0 episode of the LP reference on REF, seed 0."""
    env = make_select(workload=REF)
    rewards, infos = run_reference(env, seed=0)
    return env, rewards, infos


@pytest.fixture(scope="module")
def rank_reference():
    """A Rank-v0 episode of the reference keep bits on REF, seed 0."""
    env = make_rank(workload=REF)
    rewards, infos = run_reference(env, seed=0)
    return env, rewards, infos


@pytest.fixture(scope="module")
def simulator_reference():
    """``hsched simulate --policy heterosched-lp`` on REF, seed 0."""
    from hsched_env.cluster import get_cluster
    from hsched_env.simulator import SimConfig, Simulator
    from hsched_env.workloads import load_workload
    from lp_baseline.policy import make_policy
    cluster = get_cluster(CLUSTER)
    workload = load_workload(f"{REF},seed=0", cluster)
    return Simulator(cluster, workload, make_policy("heterosched-lp"),
                     SimConfig(seed=0)).run()


# ---------------------------------------------------------------------------------- 1. make
@pytest.mark.parametrize("env_id,cls,space", [(SCHEDULE, ScheduleEnv, gym.spaces.Discrete),
                                              (RANK, RankEnv, gym.spaces.MultiBinary)])
def test_make_after_import(env_id, cls, space):
    assert env_id in hsched_env.envs.ENV_IDS and env_id in gym.registry
    env = gym.make(env_id, cluster=CLUSTER, workload=SMALL, max_candidates=24)
    assert env.spec.id == env_id
    assert type(env.unwrapped) is cls
    assert isinstance(env.action_space, space)
    assert env.action_space.n == (25 if cls is ScheduleEnv else 24)
    obs, info = env.reset(seed=0)
    assert env.observation_space.contains(obs)
    assert obs["valid"].shape == (24,)
    assert info["episode_seed"] == 0
    env.close()


@pytest.mark.parametrize("env_id,cls,n", [(SCHEDULE, "ScheduleEnv", 17), (RANK, "RankEnv", 16)])
def test_make_with_module_prefix_in_fresh_process(env_id, cls, n):
    out = run_python(f"""
        import json, sys
        import gymnasium as gym
        assert "hsched_env" not in sys.modules
        env = gym.make("hsched_env:{env_id}", workload="{SMALL}", max_candidates=16)
        obs, info = env.reset(seed=0)
        assert env.observation_space.contains(obs)
        obs, r, term, trunc, info = env.step(env.action_space.sample())
        print(json.dumps({{"cls": type(env.unwrapped).__name__, "id": env.spec.id,
                          "n": int(env.action_space.n), "reward": r}}))
    """)
    got = json.loads(out.strip().splitlines()[-1])
    assert got["cls"] == cls and got["id"] == env_id and got["n"] == n
    assert math.isfinite(got["reward"])


# ---------------------------------------------------------------------------------- 2. checkers
@pytest.mark.parametrize("env_id", ["hsched/Schedule-Tiny-v0", "hsched/Rank-Tiny-v0"])
def test_a_refused_first_reset_leaves_the_registered_id_usable(env_id):
    """Gymnasium's passive checker (1.4.0) marks its first reset done before calling it: after
    a refused first reset the next step failed with a raw TypeError inside Gymnasium. The
    registered ids skip that checker unless asked for; a refused reset changes nothing."""
    env = gym.make(env_id)
    assert "PassiveEnvChecker" not in str(env)
    with pytest.raises(ValueError, match="takes no reset options"):
        env.reset(seed=0, options={"x": 1})
    with pytest.raises(gym.error.Error, match="Seed must be greater"):
        env.reset(seed=-1)
    first, _ = env.reset(seed=0)
    action = env.unwrapped.reference_action()
    obs, reward, terminated, truncated, _ = env.step(action)
    again = gym.make(env_id)
    first_again, _ = again.reset(seed=0)
    assert all(np.array_equal(first[k], first_again[k]) for k in first)
    assert (reward, terminated, truncated) == again.step(action)[1:4]
    assert "PassiveEnvChecker" in str(gym.make(env_id, disable_env_checker=False))


@pytest.mark.parametrize("env_id", [SCHEDULE, RANK])
@slow
def test_gymnasium_env_checker(env_id):
    from gymnasium.utils.env_checker import check_env
    env = gym.make(env_id, cluster=CLUSTER, workload=SMALL, **DET_KWARGS[env_id])
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        check_env(env.unwrapped)


@pytest.mark.parametrize("env_id", [SCHEDULE, RANK])
def test_sb3_env_checker(env_id):
    from stable_baselines3.common.env_checker import check_env
    env = gym.make(env_id, cluster=CLUSTER, workload=SMALL, **DET_KWARGS[env_id])
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        check_env(env)


def test_rank_decision_time_is_wall_clock_when_asked():
    env = rank_env(CLUSTER, SMALL, measure_time=True)
    _, first = env.reset(seed=0)
    infos = [env.step(np.ones(env.K, dtype=np.int8))[4] for _ in range(3)]
    assert all(i["decision_time_s"] > 0 for i in infos)
    # the observation's own time (its round's slots and features), reset's included
    assert all(0 < i["observation_time_s"] < 1 for i in [first] + infos)
    assert env.unwrapped.observation_s == infos[-1]["observation_time_s"]
    env = rank_env(CLUSTER, SMALL)                 # the default: no wall clock in info
    _, first = env.reset(seed=0)
    info = env.step(np.ones(env.K, dtype=np.int8))[4]
    assert "decision_time_s" not in info and info["lp_vars"] > 0
    assert "observation_time_s" not in info and "observation_time_s" not in first


def test_rank_observation_time_counts_the_rounds_slots_once():
    """``observation_s``: the slots' build time goes to the round's first observation;
    another observation of the same round costs only its arrays."""
    import time
    env = rank_env(CLUSTER, SMALL, measure_time=True).unwrapped
    build = env._build_slots

    def slow_build(*args, **kwargs):                 # the round's slots take 50 ms more
        time.sleep(0.05)
        return build(*args, **kwargs)

    env._build_slots = slow_build
    _, first = env.reset(seed=0)
    info = env.step(np.ones(env.K, dtype=np.int8))[4]
    assert first["observation_time_s"] >= 0.05 and info["observation_time_s"] >= 0.05
    env._observation()                               # the same round again: arrays only
    assert env.observation_s < 0.05


# ---------------------------------------------------------------------------------- 3. vector
def _vector_actions(env_id, K, n_envs=2):
    if env_id == SCHEDULE:
        return np.full(n_envs, K, dtype=np.int64)          # commit
    return np.ones((n_envs, K), dtype=np.int8)             # keep everything


@pytest.mark.parametrize("vector", ["sync", "async"])
@pytest.mark.parametrize("env_id", [SCHEDULE, RANK])
def test_gymnasium_vector_envs(vector, env_id):
    K = 16
    fns = [functools.partial(gym.make, f"hsched_env:{env_id}", cluster=CLUSTER, workload=SMALL,
                             max_candidates=K, **DET_KWARGS[env_id])] * 2
    venv = (gym.vector.SyncVectorEnv(fns) if vector == "sync"
            else gym.vector.AsyncVectorEnv(fns, context="spawn"))
    try:
        obs, infos = venv.reset(seed=10)
        assert obs["valid"].shape == (2, K)
        assert list(infos["episode_seed"]) == [10, 11]
        t0 = np.asarray(infos["time_s"])
        for step in range(1, 4):
            obs, rewards, term, trunc, infos = venv.step(_vector_actions(env_id, K))
            assert obs["candidates"].shape[0] == 2 and rewards.shape == (2,)
            assert np.all(np.isfinite(rewards)) and np.all(rewards <= 0)
            assert not term.any() and not trunc.any()
            assert np.all(np.asarray(infos["time_s"]) >= t0 + step * 300.0)
            assert venv.single_observation_space.contains({k: v[0] for k, v in obs.items()})
    finally:
        venv.close()


@pytest.mark.parametrize("env_id", [SCHEDULE, RANK])
@slow
def test_sb3_subproc_vec_env(env_id):
    from stable_baselines3.common.vec_env import SubprocVecEnv
    K = 16
    fn = functools.partial(gym.make, f"hsched_env:{env_id}", cluster=CLUSTER, workload=SMALL,
                           max_candidates=K, **DET_KWARGS[env_id])
    venv = SubprocVecEnv([fn, fn])
    try:
        venv.seed(3)
        obs = venv.reset()
        assert obs["valid"].shape == (2, K)
        assert [i["episode_seed"] for i in venv.reset_infos] == [3, 4]
        masks = np.stack(venv.env_method("action_masks"))
        assert masks.shape == ((2, K + 1) if env_id == SCHEDULE else (2, 2 * K))
        for _ in range(3):
            obs, rewards, dones, infos = venv.step(_vector_actions(env_id, K))
            assert rewards.shape == (2,) and np.all(np.isfinite(rewards))
            assert not dones.any()
            assert all(i["round"] >= 1 for i in infos)
    finally:
        venv.close()


class _CountInvalid(gym.Wrapper):
    """Counts steps flagged ``invalid_action``."""

    def __init__(self, env):
        super().__init__(env)
        self.invalid = self.steps = 0

    def step(self, action):
        out = self.env.step(action)
        self.steps += 1
        self.invalid += bool(out[4].get("invalid_action"))
        return out


@slow
def test_maskable_ppo_learns_with_masks():
    from sb3_contrib import MaskablePPO
    from sb3_contrib.common.maskable.utils import get_action_masks
    from stable_baselines3.common.vec_env import DummyVecEnv
    K = 16
    wrapped = _CountInvalid(gym.make(SCHEDULE, cluster=CLUSTER, workload=SMALL,
                                     max_candidates=K))
    venv = DummyVecEnv([lambda: wrapped])
    model = MaskablePPO("MultiInputPolicy", venv, n_steps=128, batch_size=64, n_epochs=1,
                        seed=0, device="cpu", verbose=0)
    model.learn(total_timesteps=256)
    assert model.num_timesteps >= 256 and wrapped.steps >= 256
    assert wrapped.invalid == 0, "MaskablePPO took masked actions"
    obs = venv.reset()
    masks = get_action_masks(venv)
    assert masks.shape == (1, K + 1) and masks.dtype == bool and masks[0, K]
    np.testing.assert_array_equal(masks[0], wrapped.unwrapped.action_masks())
    np.testing.assert_array_equal(masks[0, :K], obs["valid"][0].astype(bool))
    action, _ = model.predict(obs, action_masks=masks, deterministic=True)
    assert masks[0, int(action[0])]


# ---------------------------------------------------------------------------------- 4. determinism
@pytest.mark.parametrize("env_id", [SCHEDULE, RANK])
@slow
def test_same_seed_same_trajectory(env_id):
    env = gym.make(env_id, cluster=CLUSTER, workload=SMALL, max_candidates=32,
                   **DET_KWARGS[env_id])
    steps = 300 if env_id == SCHEDULE else 40
    a = rollout(env, seed=7, steps=steps)
    # the same env after a different episode, and a fresh env
    rollout(env, seed=8, steps=10)
    b = rollout(env, seed=7, steps=steps)
    env2 = gym.make(env_id, cluster=CLUSTER, workload=SMALL, max_candidates=32,
                    **DET_KWARGS[env_id])
    c = rollout(env2, seed=7, steps=steps)
    assert len(a) == steps + 1
    for other in (b, c):
        assert len(other) == len(a)
        for x, y in zip(a, other):
            assert_same(x, y)


@pytest.mark.parametrize("env_id", [SCHEDULE, RANK])
def test_bounded_slot_cache_gives_the_same_trajectory(env_id, monkeypatch):
    """The per-job-set cache of candidate statics is bounded (``STATIC_CACHE_SETS``,
    ``STATIC_CACHE_CANDIDATES``, oldest set dropped first); a tighter bound recomputes
    more, and changes nothing the agent sees."""
    import hsched_env.envs.base as base
    steps = 120 if env_id == SCHEDULE else 25
    kw = dict(cluster=CLUSTER, workload=SMALL, max_candidates=32, **DET_KWARGS[env_id])
    a = rollout(gym.make(env_id, **kw), seed=3, steps=steps)
    monkeypatch.setattr(base, "STATIC_CACHE_SETS", 2)
    monkeypatch.setattr(base, "STATIC_CACHE_CANDIDATES", 10)
    env = gym.make(env_id, **kw)
    b = rollout(env, seed=3, steps=steps)
    cache = env.unwrapped._static_cache
    assert len(cache) == 1                           # over the candidate bound: the newest only
    for x, y in zip(a, b, strict=True):
        assert_same(x, y)


def test_slot_cache_drops_the_least_recently_used_job_set(monkeypatch):
    """Past ``STATIC_CACHE_SETS`` job sets, the set used least recently goes first: a set
    used again stays, the newest always stays."""
    import hsched_env.envs.base as base
    env = rank_env(CLUSTER, SMALL, max_candidates=64).unwrapped
    env.reset(seed=1)
    views, seen = [], set()
    while len(views) < 3:                           # three rounds with different job sets
        key = env.slots.view.job_ids.tobytes()
        if key not in seen:
            seen.add(key)
            views.append(env.slots.view)
        env.step(np.ones(env.K, dtype=np.int8))
    monkeypatch.setattr(base, "STATIC_CACHE_SETS", 2)
    keys = [v.job_ids.tobytes() for v in views]
    env._static_cache.clear()
    for v in (views[0], views[1], views[0], views[2]):   # set 0 used again before set 2
        env._round_static(v)
    assert list(env._static_cache) == [keys[0], keys[2]]


@pytest.mark.parametrize("env_id", [SCHEDULE, RANK])
def test_new_jobs_statics_in_one_pass_give_the_same_trajectory(env_id, monkeypatch):
    """A round with many new jobs (a burst) computes their slot statics in one pass
    (``_jobs_static``); every observation, reward and info is what computing them one job at
    a time gives."""
    import hsched_env.envs.base as base
    steps = 150 if env_id == SCHEDULE else 20
    kw = dict(cluster=CLUSTER, workload="gavel:rate=400,jobs=60", max_candidates=256,
              **DET_KWARGS[env_id])
    batched = gym.make(env_id, **kw)
    u = batched.unwrapped
    passes = []
    one_pass = u._jobs_static

    def spy(view, ks, keys):
        passes.append(len(ks))
        return one_pass(view, ks, keys)

    u._jobs_static = spy
    a = rollout(batched, seed=5, steps=steps)
    assert max(passes) >= 2 * base._BATCH_MIN                 # the burst's new jobs, in one pass
    monkeypatch.setattr(base, "_BATCH_MIN", 10**9)                     # one job at a time
    b = rollout(gym.make(env_id, **kw), seed=5, steps=steps)
    for x, y in zip(a, b, strict=True):
        assert_same(x, y)


@pytest.mark.parametrize("env_id", [SCHEDULE, RANK])
def test_jobs_with_one_table_share_their_statics_and_change_nothing(env_id, monkeypatch):
    """Jobs with the same candidate table, reference throughput and requested GPUs share one
    cache entry of slot statics (``_static_keys``); every observation, reward and info is
    what per-job entries give."""
    from hsched_env.envs.base import HSchedEnvBase
    steps = 150 if env_id == SCHEDULE else 20
    kw = dict(cluster=CLUSTER, workload="gavel:rate=400,jobs=60", max_candidates=256,
              **DET_KWARGS[env_id])
    shared = gym.make(env_id, **kw)
    a = rollout(shared, seed=5, steps=steps)
    entries = len(shared.unwrapped._job_cache)
    per_job = HSchedEnvBase._static_keys

    def keys_per_job(view):
        return [key + (int(j),) for key, j in zip(per_job(view), view.job_ids)]

    monkeypatch.setattr(HSchedEnvBase, "_static_keys", staticmethod(keys_per_job))
    alone = gym.make(env_id, **kw)
    b = rollout(alone, seed=5, steps=steps)
    assert len(alone.unwrapped._job_cache) > entries > 0      # some jobs did share
    for x, y in zip(a, b, strict=True):
        assert_same(x, y)


def test_round_robin_order_is_the_three_key_sort():
    """``_round_robin`` (one stable integer sort of rank · positions + score position) gives
    the order of ``np.lexsort((job, -score, rank))`` — ties in score across jobs, signed
    zeros and NaN included — on both of its paths (every rank sorted, and only the ranks the
    first K reach)."""
    from hsched_env.envs.base import _round_robin
    rng = np.random.default_rng(7)
    sizes = rng.integers(1, 12, size=300)
    k_of = np.repeat(np.arange(sizes.size), sizes)
    values = np.array([0.5, 0.25, -0.0, 0.0, np.nan, -np.inf, 1.0, 0.125])
    neg_score = values[rng.integers(0, values.size, size=k_of.size)]   # many ties
    rank = np.concatenate([rng.permutation(n) for n in sizes])
    uniq, pos = np.unique(neg_score, return_inverse=True)
    for K in (k_of.size, 40, 7):
        want = np.lexsort((k_of, neg_score, rank))[:K]
        got = _round_robin(rank, pos, len(uniq), K)
        assert np.array_equal(got, want), K
    assert k_of.size > 4 * 40                         # the reach path was taken


def test_only_select_mode_builds_the_fit_index():
    """The placement mask's ``FitIndex`` is select mode's; rank mode places nothing within a
    round and builds none."""
    select = gym.make(SCHEDULE, cluster=CLUSTER, workload=SMALL).unwrapped
    select.reset(seed=0)
    assert select.slots.fit is not None
    assert select.slots.fit.fits(select.simulator.run_view().free_gpus).shape == (
        select.slots.k.size,)
    rank = rank_env(CLUSTER, SMALL).unwrapped
    rank.reset(seed=0)
    for _ in range(5):
        rank.step(np.ones(rank.K, dtype=np.int8))
    assert rank.slots.fit is None
    assert rank._job_cache and all(st.fit is None for st in rank._job_cache.values())
    assert rank._static_cache and all(st.fit is None for st in rank._static_cache.values())


def test_a_statics_entry_serves_only_the_table_it_was_computed_from():
    """A cache hit also checks that the entry was computed from the job's table object
    (``_holds``), so a key whose table id was reused (in a copy of the environment the keys
    hold the original's ids) cannot serve another table's statics."""
    env = rank_env(CLUSTER, SMALL).unwrapped
    env.reset(seed=0)
    for _ in range(3):
        env.step(np.ones(env.K, dtype=np.int8))
    view = env.slots.view
    keys = env._static_keys(view)
    assert all(env._holds(key, t) for key, t in zip(keys, view.candidates))
    other = copy.deepcopy(view.candidates[0])               # equal content, another object
    assert not env._holds(keys[0], other)
    twin = copy.deepcopy(env)                                # its tables are copies
    twin_view = twin.slots.view
    twin_keys = twin._static_keys(twin_view)
    assert not set(twin_keys) & set(keys)                    # other ids
    assert not any(twin._holds(key, t) for key, t in zip(twin_keys, twin_view.candidates))
    twin._static_cache.clear()
    twin._round_static(twin_view)                            # computed for its own tables
    assert all(twin._holds(key, t) for key, t in zip(twin_keys, twin_view.candidates))


def test_rank_env_copies_and_snapshots_across_episodes_continue_exactly():
    """Rank mode: a deep copy of the environment, and a snapshot restored after a reset into
    another episode, continue as the straight run (the slot statics cache holds tables by
    identity; a copy's tables are other objects)."""
    env = rank_env(CLUSTER, "gavel:rate=6,jobs=30").unwrapped
    rng = np.random.default_rng(3)
    actions = [(rng.random(env.K) < 0.6).astype(np.int8) for _ in range(40)]

    def play(e, acts):
        out = []
        for a in acts:
            obs, reward, term, trunc, _ = e.step(a)
            out.append(({k: v.copy() for k, v in obs.items()}, reward))
            if term or trunc:
                break
        return out

    env.reset(seed=1)
    play(env, actions[:3])
    snap = env.get_state()
    twin = copy.deepcopy(env)
    straight = play(env, actions[3:])
    assert len(straight) > 10
    copied = play(twin, actions[3:])
    env.reset(seed=2)                           # another episode: other jobs, same ids
    play(env, actions[:10])
    env.set_state(snap)
    branch = play(env, actions[3:])
    for other in (copied, branch):
        assert len(other) == len(straight)
        for (o1, r1), (o2, r2) in zip(straight, other):
            assert r1 == r2
            for k in o1:
                assert np.array_equal(o1[k], o2[k]), k


@pytest.mark.parametrize("env_id", [SCHEDULE, RANK])
@slow
def test_different_seeds_different_workloads(env_id):
    env = gym.make(env_id, cluster=CLUSTER, workload=SMALL, **DET_KWARGS[env_id])
    episodes = {}
    for seed in (0, 1, 2):
        obs, info = env.reset(seed=seed)
        assert info["episode_seed"] == seed
        jobs = env.unwrapped.simulator.jobs
        episodes[seed] = (tuple(j.arrival_s for j in jobs), tuple(j.model for j in jobs),
                          obs["candidates"].copy())
    for s, t in ((0, 1), (0, 2), (1, 2)):
        assert episodes[s][0] != episodes[t][0]
        assert episodes[s][1] != episodes[t][1]
    # a seeded workload spec is the same whatever the episode seed
    env = make_select(workload=SMALL + ",seed=5", candidate_filter="score")
    arrivals = []
    for seed in (0, 1):
        env.reset(seed=seed)
        arrivals.append(tuple(j.arrival_s for j in env.simulator.jobs))
    assert arrivals[0] == arrivals[1]


@slow
def test_unseeded_reset_draws_episode_seed_from_env_rng():
    env = make_select(candidate_filter="score")
    seeds = []
    for _ in range(2):
        env.reset(seed=123)
        seeds.append([env.reset()[1]["episode_seed"] for _ in range(3)])
    assert seeds[0] == seeds[1]
    assert len(set(seeds[0])) == 3


_CROSS_PROCESS = """
    import hashlib
    import numpy as np
    import gymnasium as gym
    import hsched_env
    env = gym.make("{env_id}", workload="{workload}", max_candidates=32, **{kwargs!r})
    rng = np.random.default_rng(0)
    obs, info = env.reset(seed=11)
    h = hashlib.sha256()
    for _ in range({steps}):
        for k in sorted(obs):
            h.update(obs[k].tobytes())
        u = env.unwrapped
        if u._mode == "select":
            valid = np.flatnonzero(u.action_masks()[:u.K])
            a = u.K if valid.size == 0 or rng.random() < 0.2 else int(rng.choice(valid))
        else:
            a = rng.integers(0, 2, u.K).astype(np.int8)
        obs, r, term, trunc, info = env.step(a)
        h.update(repr((float(r), term, trunc, info["time_s"])).encode())
        if term or trunc:
            break
    print(h.hexdigest())
"""


@pytest.mark.parametrize("env_id", [SCHEDULE, RANK])
@slow
def test_same_seed_same_trajectory_across_processes(env_id):
    steps = 200 if env_id == SCHEDULE else 30
    code = textwrap.dedent(_CROSS_PROCESS.format(env_id=env_id, workload=SMALL, steps=steps,
                                                 kwargs=DET_KWARGS[env_id]))
    procs = [subprocess.Popen([sys.executable, "-c", code], cwd=ROOT, text=True,
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                              env={**os.environ, "PYTHONHASHSEED": str(seed)})
             for seed in (1, 2)]
    digests = []
    for p in procs:
        out, err = p.communicate(timeout=120)
        assert p.returncode == 0, err
        digests.append(out.strip().splitlines()[-1])
    assert len(digests[0]) == 64 and digests[0] == digests[1]


# ---------------------------------------------------------------------------------- 5. select mode
def test_invalid_and_out_of_range_actions_are_noops():
    env = make_select(max_candidates=32, invalid_action="noop")
    obs, info = env.reset(seed=0)
    mask = env.action_masks()
    invalid_slots = np.flatnonzero(~mask)
    assert invalid_slots.size, "the first round should leave empty slots"
    actions = [int(invalid_slots[0]), int(invalid_slots[-1]), -1, env.K + 1, 10**9,
               np.int64(-5), "not an action", None]
    for a in actions:
        obs2, r, term, trunc, info2 = env.step(a)
        assert info2["invalid_action"] is True and info2["committed"] is False
        assert r == 0.0 and type(r) is float
        assert term is False and trunc is False
        assert info2["time_s"] == info["time_s"] and info2["placed"] == 0
        for k in obs:
            assert np.array_equal(obs[k], obs2[k]), k
        np.testing.assert_array_equal(env.action_masks(), mask)


def test_an_invalid_action_says_why():
    """``info["invalid_reason"]`` names each kind of invalid action (``""`` when valid): not
    one integer, out of range, an empty slot, a slot of a job already placed, a candidate that
    does not fit the free GPUs."""
    env = make_select(max_candidates=32, invalid_action="noop")
    env.reset(seed=0)
    reasons = {}
    for a in ("x", 3.5, -1, env.K + 1):
        reasons[repr(a)] = env.step(a)[4]["invalid_reason"]
    assert reasons["'x'"] == reasons["3.5"] == "not one integer"
    assert reasons["-1"] == reasons[repr(env.K + 1)] == f"out of range: actions are 0..{env.K} " \
                                                        f"({env.K} commits)"
    seen = set()
    for _ in range(200):                     # rounds until every slot-level reason has shown
        sl, mask = env.slots, env.action_masks()
        if sl is None:
            break
        if sl.k.size < env.K:
            seen.add(env.step(env.K - 1)[4]["invalid_reason"])
        valid = np.flatnonzero(mask[:sl.k.size])
        if valid.size:
            a = int(valid[0])
            info = env.step(a)[4]
            assert info["invalid_action"] is False and info["invalid_reason"] == ""
            placed = np.flatnonzero(sl.job == sl.job[a])
            seen.add(env.step(int(placed[0]))[4]["invalid_reason"])
            blocked = np.flatnonzero(~env.action_masks()[:sl.k.size] & ~np.isin(
                sl.job, list(env.simulator.run_view().placements)))
            if blocked.size:
                seen.add(env.step(int(blocked[0]))[4]["invalid_reason"])
        if len(seen) == 3:
            break
        env.step(env.K)
    assert seen == {"an empty slot (no candidate in it this round)",
                    "its job is already placed this round",
                    "its candidate does not fit the GPUs free now"}, seen


def test_valid_slot_places_exactly_that_job():
    env = make_select(max_candidates=64)
    env.reset(seed=0)
    # go to a round with several active jobs
    while env.slots.view.num_active < 3:
        env.step(env.K)
    sl = env.slots
    placed_before = 0
    for _ in range(3):
        mask = env.action_masks()
        valid = np.flatnonzero(mask[:env.K])
        if valid.size == 0:
            break
        a = int(valid[-1])                      # not necessarily the LP's first choice
        j, row = int(sl.job[a]), int(sl.row[a])
        assert j not in env.simulator.run_view().placements
        obs, r, _, _, info = env.step(a)
        assert info["invalid_action"] is False and info["committed"] is False and r == 0.0
        new_alloc = env.simulator.run_view().placements
        assert new_alloc[j][0] == row
        assert info["placed"] == len(new_alloc) == placed_before + 1
        placed_before += 1
        same_job = np.flatnonzero(sl.job == j)
        assert not env.action_masks()[same_job].any()
        assert not obs["valid"][same_job].any()
        np.testing.assert_array_equal(obs["valid"].astype(bool), env.action_masks()[:env.K])
        assert obs["global"][1] == pytest.approx(placed_before / sl.view.num_active)
        # the chosen GPUs are taken
        held = sum(k for _, k in new_alloc[j][1])
        assert held == int(env.simulator.run_view().tables[j].gpus[row].sum())
    assert placed_before >= 1


def test_commit_advances_one_round():
    env = make_select()
    _, info = env.reset(seed=0)
    active = info["active_jobs"]
    assert active >= 1
    _, r, _, _, info2 = env.step(env.K)                 # commit with nothing placed
    assert info2["committed"] is True and info2["invalid_action"] is False
    assert info2["time_s"] == info["time_s"] + 300.0
    assert info2["round"] == info["round"] + 1
    # every job active before the commit waited the whole round (and later arrivals some)
    assert r <= -active * 300.0 / 3600.0 + 1e-12
    # the commit action is always valid and the mask has one bit per action
    assert env.action_masks().shape == (env.K + 1,) and env.action_masks()[env.K]


def _would_place(sim, j: int, r: int) -> bool:
    """Whether the simulator would place job ``j`` on row ``r`` now (a dry run)."""
    return bool(sim.try_place_decision({j: [r]}))


@pytest.mark.parametrize("candidate_filter", ["lp", "score"])
@slow
def test_mask_is_exact_over_random_rollout(candidate_filter):
    env = make_select(max_candidates=32, candidate_filter=candidate_filter)
    rng = np.random.default_rng(1)
    seed = 0
    obs, _ = env.reset(seed=seed)
    placements = episodes = 0
    for step in range(2000):
        mask = env.action_masks()
        assert mask.dtype == bool and mask.shape == (env.K + 1,) and mask[env.K]
        np.testing.assert_array_equal(obs["valid"].astype(bool), mask[:env.K])
        sl = env.slots
        if step % 7 == 0 and sl is not None:
            M = sl.k.size
            assert not mask[M:env.K].any()
            sim = env.simulator
            for i in range(M):
                assert mask[i] == _would_place(sim, int(sl.job[i]), int(sl.row[i])), \
                    f"step {step}: slot {i} mask {mask[i]} disagrees with Simulator.place"
        a = random_action(env, rng, p_commit=0.15)
        before = len(env.simulator.run_view().placements)
        obs, _, term, trunc, info = env.step(a)   # raises AssertionError on a mask mismatch
        assert not info["invalid_action"]
        if a != env.K:
            placements += 1
            assert info["placed"] == before + 1
        if step % 50 == 0:
            assert env.observation_space.contains(obs)
        if term or trunc:
            episodes += 1
            seed += 1
            obs, _ = env.reset(seed=seed)
    assert placements > 300


def test_reference_action_needs_lp_filter():
    env = make_select(candidate_filter="score")
    env.reset(seed=0)
    with pytest.raises(RuntimeError, match="candidate_filter"):
        env.reference_action()


def test_time_limit_truncates():
    env = make_select(candidate_filter="score", max_time_s=3000.0)
    env.reset(seed=0)
    for _ in range(100):
        _, _, term, trunc, info = env.step(env.K)
        if term or trunc:
            break
    assert trunc is True and term is False
    assert info["end_reason"] == "time_limit" and info["metrics"]["jobs_completed"] == 0
    with pytest.raises(RuntimeError):
        env.step(env.K)


# ---------------------------------------------------------------------------------- 6. reward
@slow
def test_select_episode_return_is_minus_total_jct(select_reference):
    env, rewards, infos = select_reference
    m = infos[-1]["metrics"]
    assert m["jobs_completed"] == m["jobs_total"] == 30
    total_jct = sum(r.jct_s for r in env.simulator.result().jobs)
    assert total_jct == pytest.approx(m["avg_jct_s"] * m["jobs_completed"], rel=1e-12)
    assert sum(rewards) == pytest.approx(-total_jct / 3600.0, rel=1e-6)
    assert all(r <= 0 for r in rewards)
    # placements are free; only commits cost job-time
    assert all(r == 0.0 for r, i in zip(rewards, infos) if not i["committed"])


@slow
def test_rank_episode_return_decomposes(rank_reference):
    env, rewards, infos = rank_reference
    m = infos[-1]["metrics"]
    assert m["jobs_completed"] == m["jobs_total"]
    keep_term = sum(env.keep_cost * i["kept"] / i["total"] for i in infos)
    assert keep_term > 0
    assert sum(rewards) == pytest.approx(
        -m["avg_jct_s"] * m["jobs_completed"] / 3600.0 - keep_term, rel=1e-6)


@slow
def test_reward_scale_and_completions_reward():
    base = make_select(candidate_filter="lp", reward_scale=60.0)
    rewards, infos = run_reference(base, seed=1)
    m = infos[-1]["metrics"]
    assert sum(rewards) == pytest.approx(-m["avg_jct_s"] * m["jobs_completed"] / 60.0,
                                         rel=1e-6)
    env = make_select(reward="completions")
    rewards, infos = run_reference(env, seed=1)
    assert sum(rewards) == infos[-1]["metrics"]["jobs_completed"] == 20
    assert all(r >= 0 and float(r).is_integer() for r in rewards)
    assert sum(r > 0 for r in rewards) > 1          # paid when jobs complete, not at the end
    env = make_rank(reward="completions", keep_cost=0.0)
    rewards, infos = run_reference(env, seed=1)
    assert sum(rewards) == infos[-1]["metrics"]["jobs_completed"] == 20


# ---------------------------------------------------------------------------------- 7. reference
EXACT_KEYS = ("avg_jct_s", "makespan_s", "p99_jct_s", "jobs_completed", "rounds",
              "restarts_per_job", "ftf_worst")


@slow
def test_select_reference_reproduces_lp_policy(select_reference, simulator_reference):
    _, _, infos = select_reference
    got, want = infos[-1]["metrics"], simulator_reference.metrics()
    assert want["jobs_completed"] == 30
    for key in EXACT_KEYS + ("p50_jct_s", "gpu_util", "lp_vars_mean"):
        assert got[key] == want[key], key
    assert got["policy"] == "env:select"


@slow
def test_rank_reference_close_to_lp_policy(rank_reference, simulator_reference):
    _, _, infos = rank_reference
    got, want = infos[-1]["metrics"], simulator_reference.metrics()
    assert got["jobs_completed"] == got["jobs_total"] == 30
    # the kept LP may return another optimal vertex, and the rounding of the kept LP has only
    # the kept rows as placement fallbacks: measured +5.9% avg JCT, same makespan
    assert got["avg_jct_s"] == pytest.approx(want["avg_jct_s"], rel=0.08)
    assert got["makespan_s"] == pytest.approx(want["makespan_s"], rel=0.05)
    # the kept LP is smaller than the full one
    assert got["lp_vars_mean"] < want["lp_vars_mean"]
    assert all(i["kept"] <= i["total"] and i["overflow"] == 0 for i in infos)


@slow
def test_rank_reference_with_prune_lp_reproduces_lp_policy(rank_reference, simulator_reference):
    """``prune="lp"``: the kept set restricts the LP solve only (the rounding's repair and the
    fallbacks see every candidate), so keeping the LP's support alone gives the pure LP's
    schedule exactly, with no more keep bits than ``prune="all"`` (which also keeps each
    job's first row and the fallback it is placed on). Measured on REF: 4.7% of the
    candidates kept against 5.1% (22% until session 50, when ``prune="all"`` kept each
    assignment's whole fallback list)."""
    env = make_rank(workload=REF, prune="lp")
    assert env.prune == "lp"
    _, infos = run_reference(env, seed=0)
    got, want = infos[-1]["metrics"], simulator_reference.metrics()
    for key in EXACT_KEYS:
        assert got[key] == want[key], key
    kept_lp = sum(i["kept"] for i in infos) / sum(i["total"] for i in infos)
    _, _, infos_all = rank_reference
    kept_all = sum(i["kept"] for i in infos_all) / sum(i["total"] for i in infos_all)
    assert 0 < kept_lp <= kept_all


def test_rank_prune_scope_is_validated_and_recorded():
    with pytest.raises(ConfigError, match="prune"):
        make_rank(prune="solve")
    class NoLpRows:                                      # an LP whose decide has no lp_rows
        def __init__(self, lp):
            self.lp = lp

        def decide(self, view, allowed=None):
            return self.lp.decide(view, allowed=allowed)

        def __getattr__(self, name):
            return getattr(self.lp, name)

    with pytest.raises(ConfigError, match="lp_rows"):
        make_rank(prune="lp", lp=NoLpRows(make_policy("heterosched-lp")))
    env = make_rank(prune="lp")
    env.reset(seed=0)
    assert env.episode_record()["kwargs"]["prune"] == "lp"
    # keeping nothing under prune="lp": the LP has nothing to solve, the repair still places
    # jobs (work that needs no LP)
    for _ in range(3):
        _, _, _, _, info = env.step(np.zeros(env.K, dtype=np.int8))
        assert info["kept"] == 0 and info["lp_vars"] == 0
    assert any(a is not None for a in env.simulator.run_view().allocations)


# ---------------------------------------------------------------------------------- 8. rank mode
def test_rank_keep_nothing_runs_nobody():
    env = make_rank()
    env.reset(seed=0)
    for _ in range(5):                                   # let some jobs run first
        env.step(np.ones(env.K, dtype=np.int8))
    sim = env.simulator
    attained = sim.run_view().attained_s.copy()
    remaining = sim.run_view().remaining_samples.copy()
    jt = sim.job_time_s()
    _, r, _, _, info = env.step(np.zeros(env.K, dtype=np.int8))
    assert info["kept"] == 0 and info["total"] > 0
    np.testing.assert_array_equal(sim.run_view().attained_s, attained)
    np.testing.assert_array_equal(sim.run_view().remaining_samples, remaining)
    assert all(a is None for a in sim.run_view().allocations)
    assert r == pytest.approx(-(sim.job_time_s() - jt) / 3600.0, rel=1e-12)
    assert r < 0


def test_rank_compare_full_objectives():
    env = make_rank(compare_full=True, max_candidates=256)
    env.reset(seed=0)
    while env.slots.view.num_active < 3:
        env.step(np.ones(env.K, dtype=np.int8))
    checked = 0
    for _ in range(6):
        sl = env.slots
        M, A = sl.k.size, sl.view.num_active
        assert sl.total == M                              # K covers the round
        snap = env.get_state()
        # keeping every candidate: the kept LP is the full LP
        _, _, _, _, info = env.step(np.ones(env.K, dtype=np.int8))
        assert {"full_objective", "kept_objective", "full_lp_vars"} <= info.keys()
        assert info["kept_objective"] == pytest.approx(info["full_objective"], rel=1e-6)
        assert info["full_lp_vars"] == info["lp_vars"]
        env.set_state(snap)
        # keeping each job's best candidate only (a subset that leaves no job out): the
        # default objective (fair-srpt, maximized; -inf if the kept allocation breaks the full
        # problem's fairness floor) can only drop, and the LP is smaller
        keep = np.zeros(env.K, dtype=np.int8)
        keep[[int(np.flatnonzero(sl.k == k)[0]) for k in range(A)]] = 1
        _, _, term, trunc, info = env.step(keep)
        assert info["kept"] == A
        assert info["kept_objective"] <= info["full_objective"] + 1e-6
        assert info["lp_vars"] < info["full_lp_vars"]
        checked += 1
        if term or trunc:
            break
    assert checked >= 3


@pytest.mark.parametrize("shape", [(0,), (5,), (17,), (2, 16), ()])
def test_rank_wrong_action_shape_raises(shape):
    env = make_rank(max_candidates=16)
    env.reset(seed=0)
    with pytest.raises(ConfigError) as e:
        env.step(np.ones(shape, dtype=np.int8))
    assert e.value.field == "action" and isinstance(e.value, HSchedError)
    # the env is untouched and still steps
    assert env.episode_record()["actions"] == []
    _, _, _, _, info = env.step(np.ones(16, dtype=np.int8))
    assert info["round"] == 1


@pytest.mark.parametrize("value, needle", [(0.5, "holds 0.5"), (2, "holds 2"),
                                            (np.nan, "holds nan"), (1 + 0j, "complex")])
def test_rank_actions_that_are_not_keep_bits_raise(value, needle):
    """Keep probabilities, other numbers and complex ones (1+0j == 1) are refused, and the
    env still steps."""
    env = make_rank(max_candidates=16)
    env.reset(seed=0)
    action = np.ones(16, dtype=np.asarray(value).dtype)
    action[3] = value
    with pytest.raises(ConfigError, match="keep bits") as e:
        env.step(action)
    assert e.value.field == "action" and needle in str(e.value)
    assert env.episode_record()["actions"] == []
    _, _, _, _, info = env.step(np.ones(16, dtype=np.int8))
    assert info["round"] == 1


def test_rank_kept_ignored_and_overflow_counts():
    K = 8
    env = make_rank(max_candidates=K)
    obs, info = env.reset(seed=0)
    sl = env.slots
    assert sl.total == info["candidates_total"] > K    # the first job alone has more
    assert obs["valid"].sum() == K
    keep = np.zeros(K, dtype=np.int8)
    keep[[0, 3]] = 1
    _, _, _, _, info = env.step(keep)
    assert info["kept"] == 2 and info["ignored_keeps"] == 0
    assert info["total"] == sl.total and info["overflow"] == sl.total - K
    # a wide K: bits on empty slots are ignored, not kept
    env = make_rank(max_candidates=64)
    obs, info = env.reset(seed=0)
    M = int(obs["valid"].sum())
    assert M == info["candidates_total"] < 64
    masks = env.action_masks().reshape(64, 2)
    assert masks[:, 0].all() and masks[:M, 1].all() and not masks[M:, 1].any()
    _, _, _, _, info = env.step(np.ones(64, dtype=np.int8))
    assert info["kept"] == M and info["ignored_keeps"] == 64 - M and info["overflow"] == 0


def test_rank_reference_action_keeps_lp_support():
    env = make_rank(max_candidates=128)
    env.reset(seed=0)
    for _ in range(10):
        a = env.reference_action()
        assert a.shape == (env.K,) and a.dtype == np.int8
        valid = env.action_masks().reshape(env.K, 2)[:, 1]
        assert a.sum() >= 1 and not a[~valid].any()
        # asking twice does not move the LP's state
        np.testing.assert_array_equal(a, env.reference_action())
        env.step(a)


# ---------------------------------------------------------------------------------- 9. render
def _picture_colors(img: np.ndarray) -> set:
    return {tuple(c) for c in np.unique(img.reshape(-1, 3), axis=0)}


_PALETTE = {(31, 119, 180), (255, 127, 14), (44, 160, 44), (214, 39, 40), (148, 103, 189),
            (140, 86, 75), (227, 119, 194), (127, 127, 127), (255, 255, 255), (200, 200, 200)}


@pytest.mark.parametrize("env_id", [SCHEDULE, RANK])
def test_render_ansi(env_id):
    env = gym.make(env_id, cluster=CLUSTER, workload=SMALL, render_mode="ansi",
                   **DET_KWARGS[env_id])
    env.reset(seed=0)
    text = env.render()
    assert isinstance(text, str)
    for t in env.unwrapped.cluster.gpu_types:
        assert t in text
    assert "job" in text and "round 0" in text


@pytest.mark.parametrize("env_id", [SCHEDULE, RANK])
def test_render_rgb_array_shows_placements(env_id):
    env = gym.make(env_id, cluster=CLUSTER, workload=SMALL, render_mode="rgb_array",
                   **DET_KWARGS[env_id])
    env.reset(seed=0)
    u = env.unwrapped
    img = env.render()
    assert img.dtype == np.uint8 and img.ndim == 3 and img.shape[2] == 3
    assert img.shape[0] > len(u.cluster.node_gpus)
    assert _picture_colors(img) <= _PALETTE                 # nothing placed yet
    if env_id == SCHEDULE:
        while not u.action_masks()[:u.K].any():
            env.step(u.K)
        env.step(int(np.flatnonzero(u.action_masks()[:u.K])[0]))
    else:
        # rank mode shows what runs between decisions: step until a job holds GPUs
        for _ in range(50):
            env.step(np.ones(u.K, dtype=np.int8))
            if any(a is not None for a in u.simulator.run_view().allocations):
                break
        assert any(a is not None for a in u.simulator.run_view().allocations)
    img2 = env.render()
    assert img2.shape == img.shape
    job_colors = _picture_colors(img2) - _PALETTE
    assert job_colors, "no GPU shows as occupied after placing a job"


@pytest.mark.parametrize("env_id", ["hsched/Schedule-Tiny-v0", "hsched/Rank-Tiny-v0"])
def test_gymnasium_masked_sampling_as_the_docs_convert_the_mask(env_id):
    """docs/environments.md, "Masking for RLlib and TorchRL": ``action_masks()`` is
    sb3-contrib's bool mask, which Gymnasium's ``sample(mask=)`` refuses; converted as the
    docs say, it samples only allowed actions."""
    env = gym.make(env_id)
    env.reset(seed=0)
    env.action_space.seed(0)
    u = env.unwrapped
    with pytest.raises(AssertionError, match="int8"):
        env.action_space.sample(mask=u.action_masks())
    for _ in range(30):
        mask = u.action_masks()
        if u.places_within_round:
            action = env.action_space.sample(mask=mask.astype(np.int8))
            assert mask[action]
        else:
            keep_ok = mask.reshape(-1, 2)[:, 1]
            action = env.action_space.sample(mask=np.where(keep_ok, 2, 0).astype(np.int8))
            assert not action[~keep_ok].any()
        _, _, terminated, truncated, info = env.step(action)
        assert not info.get("invalid_action") and not info.get("ignored_keeps")
        if terminated or truncated:
            break


def _held_gpu_cells(text: str) -> list[str]:
    """The GPU cells of an ``ansi`` picture's node lines that name a job (free: ".")."""
    lines = text.split("nodes:\n")[1].splitlines()
    return [cell for line in lines for cell in line.split()[1:] if cell not in (".", "|")]


def _run_to_the_end(env) -> None:
    """Steps ``env`` (reset) with the first valid placement / keeping every candidate until
    its episode ends; asserts that some GPU showed as held on the way."""
    u = env.unwrapped
    terminated = truncated = held = False
    while not (terminated or truncated):
        if u.places_within_round:
            valid = np.flatnonzero(u.action_masks()[:u.K])
            action = int(valid[0]) if valid.size else u.K
        else:
            action = np.ones(u.K, dtype=np.int8)
        _, _, terminated, truncated, _ = env.step(action)
        held = held or any(a is not None for a in u.simulator.run_view().allocations)
    assert terminated and held


@pytest.mark.parametrize("env_id", ["hsched/Schedule-Tiny-v0", "hsched/Rank-Tiny-v0"])
def test_render_after_the_last_job_shows_every_gpu_free(env_id):
    """The episode's last picture: every job done, so no GPU held (it showed the last job
    to finish on every GPU it had run on, beside "16/16 jobs done")."""
    env = gym.make(env_id, render_mode="ansi")
    env.reset(seed=0)
    assert _held_gpu_cells("t=0\nnodes:\n  T4  . 3 | 12 .\n") == ["3", "12"]   # the reader
    _run_to_the_end(env)
    text = env.render()
    assert "16/16 jobs done" in text and _held_gpu_cells(text) == [], text
    env = gym.make(env_id, render_mode="rgb_array")
    env.reset(seed=0)
    _run_to_the_end(env)
    assert _picture_colors(env.render()) <= _PALETTE              # no job's colour


def test_render_without_mode_warns():
    env = make_select(candidate_filter="score")
    env.reset(seed=0)
    with pytest.warns(UserWarning, match="render_mode"):
        assert env.render() is None


# ---------------------------------------------------------------------------------- 10. replay
@slow
def test_replay_full_select_episode(select_reference):
    env, rewards, infos = select_reference
    record = json.loads(json.dumps(env.episode_record()))
    assert record["class"] == "ScheduleEnv" and record["seed"] == 0
    assert len(record["actions"]) == len(rewards)
    metrics, total = replay(record)
    assert_same(deterministic_metrics(metrics), deterministic_metrics(infos[-1]["metrics"]))
    assert total == sum(rewards)


@pytest.mark.parametrize("env_id", [SCHEDULE, RANK])
@slow
def test_replay_partial_episode_through_make(env_id):
    env = gym.make(env_id, cluster=CLUSTER, workload=SMALL, max_candidates=24,
                   reward_scale=100.0)
    traj = rollout(env, seed=4, steps=150 if env_id == SCHEDULE else 25, rng_seed=3)
    record = env.unwrapped.episode_record()
    text = json.dumps(record)
    record = json.loads(text)
    assert record["env_id"] == env_id and record["kwargs"]["reward_scale"] == 100.0
    metrics, total = replay(record)
    assert_same(deterministic_metrics(metrics),
                deterministic_metrics(env.unwrapped.metrics()))
    assert total == sum(t[1] for t in traj[1:])


def test_a_bad_episode_record_is_named_by_its_key():
    """An unknown env id, a seed that is no whole number, arguments that are no dict, or a
    key no record has: errors naming ``record[...]`` (Gymnasium's own errors, or nothing,
    before)."""
    env = gym.make("hsched/Schedule-Tiny-v0")
    env.reset(seed=0)
    env.step(env.unwrapped.K)
    record = env.unwrapped.episode_record()
    for change, key, says in (({"env_id": "hsched/Foo-v0"}, "env_id", "not registered"),
                              ({"seed": "x"}, "seed", "whole number"),
                              ({"seed": 1.5}, "seed", "whole number"),
                              ({"kwargs": [1]}, "kwargs", "a dict"),
                              ({"bogus": 1}, "bogus", "not a key of an episode record")):
        with pytest.raises(ConfigError, match=says) as err:
            replay({**record, **change})
        assert err.value.field == f"record[{key!r}]"
    assert replay({**record, "seed": None})[0]["jobs_total"] > 0     # None: a drawn seed
    assert replay(record)[1] == replay({**record, "seed": np.int64(0)})[1]
    # lp= replaces a recorded non-default LP's name and objective (the environment refuses
    # lp= beside them)
    env = gym.make("hsched/Rank-Tiny-v0", lp_policy="lp-on-change")
    env.reset(seed=0)
    for _ in range(3):
        env.step(np.ones(env.unwrapped.K, dtype=np.int8))
    record = env.unwrapped.episode_record()
    assert replay(record, lp=make_policy("lp-on-change"))[1] == replay(record)[1]


def test_a_cluster_that_is_no_preset_is_recorded_whole_and_replayed():
    """A cluster under a preset's name but with other pools (or any non-preset cluster) is
    recorded as itself, not by its name: the replay runs it, and a snapshot of the preset is
    refused as another configuration."""
    from hsched_env.cluster import get_cluster
    spec = get_cluster("tiny-8").to_dict()
    spec["nodes"][1]["count"] = 3                     # 'tiny-8' by name, 16 GPUs
    env = gym.make("hsched/Schedule-Tiny-v0", cluster=spec)
    assert env.unwrapped.cluster.num_gpus == 16
    traj = rollout(env, seed=4, steps=40, rng_seed=1)
    record = json.loads(json.dumps(env.unwrapped.episode_record()))
    assert record["kwargs"]["cluster"] == spec
    _, total = replay(record)
    assert total == sum(t[1] for t in traj[1:])
    preset = gym.make("hsched/Schedule-Tiny-v0")
    assert preset.unwrapped.episode_record()["kwargs"]["cluster"] == "tiny-8"
    preset.reset(seed=4)
    with pytest.raises(ConfigError, match="configured otherwise.*cluster"):
        env.unwrapped.set_state(preset.unwrapped.get_state())


@pytest.mark.parametrize("kwargs, field", [
    ({"reward": "x"}, "reward"), ({"candidate_filter": "x"}, "candidate_filter"),
    ({"lp_policy": "nope"}, "lp_policy"), ({"lp_policy": None}, "lp_policy"),
    ({"lp_objective": "nope"}, "lp_objective"), ({"cluster": "nope"}, "cluster"),
    ({"workload": None}, "workload"), ({"workload": 5}, "workload"),
    ({"lp_factory": lambda *a, **k: None}, "lp_factory"),
    # an objective the LP does not read (gavel is max-min): ignored until session 51
    ({"candidate_filter": "lp", "lp_policy": "gavel", "lp_objective": "sia-srpt"},
     "lp_objective")])
def test_constructor_errors_name_the_argument(kwargs, field):
    with pytest.raises(ConfigError) as err:
        gym.make("hsched/Schedule-Tiny-v0", **kwargs).reset(seed=0)
    assert err.value.field == field, str(err.value)


# ---------------------------------------------------------------------------------- 11. copies
@slow
def test_select_get_set_state_branches_identically():
    env = make_select(max_candidates=32)
    rollout(env, seed=5, steps=60, rng_seed=2)
    # stop mid-round, after a placement
    while not env.action_masks()[:env.K].any():
        env.step(env.K)
    env.step(int(np.flatnonzero(env.action_masks()[:env.K])[0]))
    assert env.simulator.run_view().placements
    obs_at = env._observation()
    snap = env.get_state()
    rng = np.random.default_rng(9)
    first, actions = [], []
    for _ in range(120):
        a = random_action(env, rng)
        actions.append(a)
        first.append(continue_with(env, [a])[0])
    assert sum(a == env.K for a in actions) >= 3, "the branch must run LP decisions"
    for _ in range(2):                                 # restoring twice works
        env.set_state(snap)
        assert env._lp is not snap["_lp"]
        for k, v in env._observation().items():
            assert np.array_equal(v, obs_at[k])
        again = continue_with(env, actions)
        for x, y in zip(first, again):
            assert_same(x, y)
    _check_deepcopy_continues(env, snap, actions, first)


def test_set_state_across_episodes_branches_like_the_straight_run():
    """A snapshot restored after a reset into another episode continues exactly as the
    straight run from it: what the environment caches per episode (slot statics per key and
    per job set, the cluster observation) must not leak from the episode in between."""
    env = gym.make("hsched/Schedule-v0", cluster="sia-64", workload="gavel:rate=6,jobs=20",
                   slots=16, candidate_filter="score").unwrapped

    def play(n):
        out = []
        for _ in range(n):
            obs, reward, term, trunc, _ = env.step(int(np.flatnonzero(env.action_masks())[0]))
            out.append(({k: v.copy() for k, v in obs.items()}, reward))
            if term or trunc:
                break
        return out
    env.reset(seed=1)
    play(3)
    snap = env.get_state()
    straight = play(25)
    env.reset(seed=2)                       # another episode: other jobs under the same ids
    play(25)
    env.set_state(snap)
    branch = play(25)
    assert len(branch) == len(straight)
    for (o1, r1), (o2, r2) in zip(straight, branch):
        assert r1 == r2
        for k in o1:
            assert np.array_equal(o1[k], o2[k]), k


def _check_deepcopy_continues(env, snap, actions, first):
    """A deep copy of the whole environment (simulator, LP state) taken at ``snap`` goes on
    exactly like the original, and stepping it leaves the original untouched."""
    env.set_state(snap)
    clone = copy.deepcopy(env)
    for x, y in zip(first, continue_with(clone, actions)):
        assert_same(x, y)
    for x, y in zip(first, continue_with(env, actions)):
        assert_same(x, y)


def test_rank_get_set_state_branches_identically():
    env = make_rank(max_candidates=64)
    rollout(env, seed=2, steps=8, rng_seed=4)
    snap = env.get_state()
    rng = np.random.default_rng(5)
    actions = [rng.integers(0, 2, env.K).astype(np.int8) for _ in range(10)]
    first = continue_with(env, actions)
    for _ in range(2):
        env.set_state(snap)
        for x, y in zip(first, continue_with(env, actions)):
            assert_same(x, y)
    # the episode record is part of the snapshot
    env.set_state(snap)
    assert len(env.episode_record()["actions"]) == 8
    _check_deepcopy_continues(env, snap, actions, first)


# ---------------------------------------------------------------------------------- 12. errors
@pytest.mark.parametrize("cls", [schedule_env, rank_env])
@pytest.mark.parametrize("kwargs,error,field", [
    ({"cluster": "no-such-cluster"}, UnknownNameError, "cluster"),
    ({"workload": "nonsense:x=1"}, ConfigError, "kind"),
    ({"workload": "gavel:rate=-1,jobs=5"}, ConfigError, "rate"),
    ({"workload": "gavel:jobs=0"}, ConfigError, "jobs"),
    ({"max_candidates": 0}, ConfigError, "max_candidates"),
    ({"max_candidates": -4}, ConfigError, "max_candidates"),
    ({"max_candidates": 2.5}, ConfigError, "max_candidates"),
    ({"job_candidates": 0}, ConfigError, "job_candidates"),
    ({"reward": "speed"}, UnknownNameError, "reward"),
    ({"reward_scale": 0.0}, ConfigError, "reward_scale"),
    ({"round_s": -1.0}, ConfigError, "round_s"),
    ({"render_mode": "human"}, UnknownNameError, "render mode"),
    ({"lp_policy": "no-such-lp"}, UnknownNameError, "policy"),
    ({"lp_objective": "fastest"}, UnknownNameError, "objective"),
])
def test_bad_arguments_raise_named_errors(cls, kwargs, error, field):
    with pytest.raises(error) as e:
        cls(**kwargs)
    err = e.value
    assert isinstance(err, HSchedError)
    if isinstance(err, UnknownNameError):
        assert err.kind == field and str(err.name) in str(err) and err.valid
    else:
        assert err.field == field and field in str(err)


@pytest.mark.parametrize("cls", [ScheduleEnv, RankEnv])
def test_an_environment_built_without_an_lp_says_how_to_give_one(cls):
    """The world never imports the LP: constructed directly, an environment that needs one
    names the ``lp`` argument and the registered id that supplies the default."""
    with pytest.raises(ConfigError) as e:
        cls(CLUSTER, SMALL)
    assert e.value.field == "lp" and "lp_factory" in str(e.value) and "gymnasium.make" in str(e.value)
    env = cls(CLUSTER, SMALL, lp_factory=make_policy)           # given one, it works
    env.reset(seed=0)
    assert env.lp.name == "heterosched-lp"


def test_bad_select_and_rank_only_arguments():
    with pytest.raises(UnknownNameError) as e:
        ScheduleEnv(CLUSTER, SMALL, candidate_filter="oracle")
    assert e.value.kind == "candidate filter" and "oracle" in str(e.value)
    assert set(e.value.valid) == {"lp", "score"}
    with pytest.raises(ConfigError) as e:
        rank_env(CLUSTER, SMALL, keep_cost=-0.1)
    assert e.value.field == "keep_cost"
    # the same errors through gymnasium.make
    with pytest.raises(UnknownNameError):
        gym.make(SCHEDULE, cluster="no-such-cluster")
    with pytest.raises(ConfigError) as e:
        gym.make(RANK, workload="gavel:rate=4,jobs=20", max_candidates=0)
    assert e.value.field == "max_candidates"


@pytest.mark.parametrize("cls,action", [(schedule_env, 0), (rank_env, None)])
def test_step_before_reset_raises(cls, action):
    env = cls(CLUSTER, SMALL)
    with pytest.raises(RuntimeError, match="reset"):
        env.step(action if action is not None else np.ones(env.K, dtype=np.int8))
    env.close()
    env.close()                                        # closing twice is fine


# ------------------------------------------------------------------ bad keywords and actions
@pytest.mark.parametrize("kwargs,message", [
    ({"max_time_s": 0}, "max_time_s must be a positive number"),
    ({"max_time_s": -1.0}, "max_time_s must be a positive number"),
    ({"throughputs": "gavl"}, "unknown throughput source 'gavl'"),
])
@pytest.mark.parametrize("env_id", ["hsched/Schedule-Tiny-v0", "hsched/Rank-Tiny-v0"])
def test_make_rejects_bad_keywords_by_name(env_id, kwargs, message):
    """``gym.make`` keywords are checked as the CLI's flags are (fresh-user audit: a time
    limit of 0 crashed the first reset with an AttributeError, and an unknown throughput
    source read as 'cannot draw a job that fits')."""
    with pytest.raises(HSchedError, match=message):
        gym.make(env_id, **kwargs).reset(seed=0)


@pytest.mark.parametrize("fill", [0.4, np.nan, -1, 2])
def test_rank_action_that_is_not_bits_raises(fill):
    """A Rank action must be K bits of 0 or 1: a probability, NaN or another integer is an
    error naming the slot (it was read as 'keep' without a word)."""
    env = gym.make("hsched/Rank-Tiny-v0")
    env.reset(seed=0)
    K = env.unwrapped.K
    action = np.zeros(K)
    action[3] = fill
    with pytest.raises(ConfigError, match="slot 3 holds"):
        env.step(action)
    for ok in (np.ones(K), np.ones(K, dtype=bool), np.zeros(K, dtype=np.int8)):
        env.step(ok)                                # 0/1 in any dtype is a keep decision


@slow
def test_submodules_reachable_after_a_plain_import():
    """``hsched_env.envs.VARIANT_IDS`` (as docs/environments.md writes it) after only
    ``import hsched_env``, in a fresh interpreter."""
    code = ("import hsched_env; print(len(hsched_env.envs.VARIANT_IDS)); "
            "print(callable(hsched_env.planner.plan))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True).stdout.split()
    assert out == [str(len(hsched_env.envs.VARIANT_IDS)), "True"]
    with pytest.raises(AttributeError, match="no attribute 'nope'"):
        hsched_env.nope


def test_select_observations_copy_the_features_rank_hands_the_rounds_matrix_over():
    """Select mode observes a round after every placement: each observation's features are
    its own copy, so writing into one changes neither the round's slots nor the next
    observation. Rank mode observes each round once and hands over the round's matrix
    itself (no copy): a fresh array every round, never one an earlier observation holds."""
    env = make_select(candidate_filter="score")
    obs, _ = env.reset(seed=0)
    before = env.slots.features.copy()
    obs["candidates"][:] = 7.0
    assert np.array_equal(env.slots.features, before)
    valid = np.flatnonzero(env.action_masks()[:env.K])
    nxt, *_ = env.step(int(valid[0]))
    assert not np.shares_memory(nxt["candidates"], obs["candidates"])
    assert np.array_equal(nxt["candidates"], before.reshape(-1))      # the same round

    rank = make_rank()
    obs, _ = rank.reset(seed=0)
    seen = [obs["candidates"]]
    assert np.shares_memory(obs["candidates"], rank.slots.features)
    rng = np.random.default_rng(0)
    for _ in range(5):
        obs, _, term, trunc, _ = rank.step(random_action(rank, rng))
        if term or trunc:
            break
        assert np.array_equal(obs["candidates"], rank.slots.features.reshape(-1))
        assert not any(np.shares_memory(obs["candidates"], old) for old in seen)
        seen.append(obs["candidates"])


def test_rank_observations_are_zero_past_the_rounds_candidates():
    """The slots past a round's M candidates read zero in every observation — also after a
    round with more candidates (each round's matrix is new and its tail zeroed), and every
    slot before M holds a candidate's features."""
    rank = make_rank()
    obs, _ = rank.reset(seed=0)
    rng = np.random.default_rng(1)
    sizes = []
    for _ in range(40):
        M = rank.slots.k.size
        cand = obs["candidates"].reshape(rank.K, -1)
        assert 0 < M < rank.K and not cand[M:].any()
        assert np.array_equal(obs["valid"] > 0.5, np.arange(rank.K) < M)
        assert cand[:M].any(axis=1).all()
        sizes.append(M)
        obs, _, term, trunc, _ = rank.step(random_action(rank, rng))
        if term or trunc:
            break
    assert any(b < a for a, b in zip(sizes, sizes[1:]))      # a round smaller than the last


@pytest.mark.parametrize("make", [make_select, make_rank])
def test_set_state_restores_a_snapshot_of_another_episode(make):
    """A snapshot restores its own episode's jobs, also after a reset into another episode
    and into an environment never reset: the same rewards, observations and cost-to-go."""
    env = make(invalid_action="terminate") if make is make_select else make()
    rng = np.random.default_rng(3)
    env.reset(seed=3)
    for _ in range(6):
        env.step(random_action(env, rng))
    snap = env.get_state()
    actions = [random_action(env, np.random.default_rng(9))]
    if make is make_select:
        actions.append(-1)                  # invalid: ends the episode (its last observation)

    def branch(e):
        out = [(e.simulator.jobs[0].duration_s,
                e.cost_to_go() if isinstance(e, ScheduleEnv) else None)]
        for a in actions:
            obs, reward, *_ = e.step(a)
            out.append((reward, {k: v.copy() for k, v in obs.items()}))
        return out

    def same(a, b):
        assert a[0] == b[0]
        for (ra, oa), (rb, ob) in zip(a[1:], b[1:]):
            assert ra == rb and all(np.array_equal(oa[k], ob[k]) for k in oa)

    here = branch(env)
    env.reset(seed=4)                                   # another episode's jobs
    assert env.simulator.jobs[0].duration_s != here[0][0]
    env.set_state(snap)
    same(branch(env), here)
    fresh = make(invalid_action="terminate") if make is make_select else make()
    fresh.set_state(snap)                               # never reset
    same(branch(fresh), here)
    fresh.close()
    fresh.set_state(snap)                               # closed
    same(branch(fresh), here)


def test_set_state_refuses_what_is_not_a_snapshot_of_this_configuration():
    env = make_select(candidate_filter="score")
    env.reset(seed=0)
    snap = env.get_state()
    other = make_select(candidate_filter="score", workload="gavel:rate=2,jobs=9")
    with pytest.raises(ConfigError, match=r"episode \(seed 0\) has other jobs"):
        other.set_state(snap)
    with pytest.raises(ConfigError, match="candidate_filter: snapshot 'score'"):
        make_select(candidate_filter="lp").set_state(snap)
    with pytest.raises(ConfigError, match="class: snapshot 'ScheduleEnv'"):
        make_rank().set_state(snap)
    for bad in (None, {}, [snap]):
        with pytest.raises(ConfigError, match="set_state takes a snapshot from get_state"):
            env.set_state(bad)


def test_set_state_takes_equivalent_spellings_and_refuses_another_lp():
    """The configuration is compared as it acts: a workload spec with its keys in another
    order (the same jobs), ``lp_objective`` given as the policy's own, ``throughputs`` as the
    default's name are alike; an LP with another objective is not."""
    env = make_rank()
    env.reset(seed=2)
    snap = env.get_state()
    for kw in ({"workload": "gavel:jobs=20,rate=4"}, {"lp_objective": "sia-srpt"},
               {"throughputs": "analytic"}):
        twin = make_rank(**kw)
        twin.set_state(snap)
        assert twin.simulator.time_s == env.simulator.time_s
    with pytest.raises(ConfigError, match=r"lp: snapshot \('LPPolicy', 'heterosched-lp', "
                                          r"'sia-srpt'\)"):
        make_rank(lp_objective="max-min").set_state(snap)


@pytest.mark.parametrize("method", ["get_state", "metrics", "render", "ended", "end_reason"])
def test_episode_methods_before_reset_say_so(method):
    env = make_rank(render_mode="ansi")

    def call():
        value = getattr(env, method)
        return value() if callable(value) else value

    with pytest.raises(RuntimeError, match=r"call reset\(\) first"):
        call()
    env.reset(seed=0)
    call()
    env.close()
    with pytest.raises(RuntimeError, match=r"call reset\(\) first"):
        call()


@pytest.mark.parametrize("make", [make_select, make_rank])
def test_masks_and_the_reference_outside_an_episode_say_so(make):
    """``action_masks()`` and ``reference_action()`` before ``reset()`` or after ``close()``
    raise as the other episode methods do (they returned commit / no-keep bits, or the
    closed episode's masks)."""
    env = make()
    for method in ("action_masks", "reference_action"):
        with pytest.raises(RuntimeError, match=rf"{method}\(\) needs an episode"):
            getattr(env, method)()
    env.reset(seed=0)
    assert env.action_masks().any()
    env.reference_action()
    env.close()
    for method in ("action_masks", "reference_action"):
        with pytest.raises(RuntimeError, match=r"call reset\(\) first"):
            getattr(env, method)()


def test_an_injected_lp_with_an_lp_name_or_objective_is_refused():
    """``lp=`` is the LP itself; ``lp_policy`` / ``lp_objective`` beside it named another
    and were ignored without a word."""
    lp = make_policy("heterosched-lp-v1")
    for kw, field in (({"lp_policy": "gavel"}, "lp_policy"),
                      ({"lp_objective": "max-min"}, "lp_objective")):
        with pytest.raises(ConfigError, match="give one or the other") as err:
            gym.make("hsched/Schedule-Tiny-v0", lp=lp, **kw)
        assert err.value.field == field
    assert gym.make("hsched/Schedule-Tiny-v0", lp=lp).unwrapped.lp is lp


@pytest.mark.parametrize("make", [make_select, make_rank])
def test_reset_options_are_refused_not_ignored(make):
    """No reset options are taken: ``None`` and ``{}`` (Gymnasium's vector environments and
    ``env_checker`` pass ``{}``) start an episode; anything else is a ``ValueError`` naming
    its keys, and the episode under way is left as it was (the subclasses' counters and
    hints are not cleared first)."""
    env = make()
    env.reset(seed=0, options=None)
    _, info = env.reset(seed=3, options={})
    assert info["episode_seed"] == 3
    if isinstance(env, ScheduleEnv):
        env.step(-7)                        # an invalid action, counted
    else:
        env.set_lp_start(np.ones(env.K, dtype=np.int8))
    sim = env.simulator
    with pytest.raises(ValueError, match=r"no reset options, got \['max_time_s', 'workload'\]"):
        env.reset(seed=0, options={"workload": "gavel:jobs=1", "max_time_s": 1})
    assert env.simulator is sim and env.action_masks().any()
    if isinstance(env, ScheduleEnv):
        assert env._invalid_total == env._invalid_streak == 1
    else:
        assert env._lp_start_next is not None


def test_rank_mode_warns_once_when_a_round_overflows_its_slots():
    """Cut candidates can be neither kept nor run: the first round with more candidates
    than K says so (once per environment); a K that holds every round says nothing."""
    env = gym.make("hsched/Rank-Tiny-v0", slots=8)
    with pytest.warns(UserWarning, match=r"has 14 candidates and only K=8 slots: the 6 "
                                         r"lowest .* are cut") as seen:
        env.reset(seed=0)
        for _ in range(5):
            env.step(np.ones(8, dtype=np.int8))
    assert sum("only K=8 slots" in str(w.message) for w in seen) == 1
    env = gym.make("hsched/Rank-Tiny-v0")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        env.reset(seed=0)
        for _ in range(5):
            env.step(np.ones(env.unwrapped.K, dtype=np.int8))


def test_rank_decision_time_counts_turning_the_keep_bits_into_rows():
    """A ranked decision's time includes building each job's rows from the keep bits (the
    pure LP's decision has no such step), in the prune scopes and in seed mode."""
    import time
    for prune in ("lp", "seed"):
        env = rank_env(CLUSTER, SMALL, measure_time=True, prune=prune).unwrapped
        allowed = env._allowed

        def slow_allowed(*args, **kwargs):               # 30 ms more per conversion
            time.sleep(0.03)
            return allowed(*args, **kwargs)

        env._allowed = slow_allowed
        env.reset(seed=0)
        keep = np.zeros(env.K, dtype=np.int8)
        keep[0] = 1                                       # not every candidate: rows built
        info = env.step(keep)[4]
        assert info["decision_time_s"] >= 0.03, prune


@pytest.mark.parametrize("env_id", ["hsched/Schedule-v0", "hsched/Rank-v0"])
def test_an_episode_over_before_its_first_decision_takes_one_step(env_id, tmp_path):
    """A trace whose first job arrives after ``max_time_s`` (csv arrivals are not shifted to
    0): ``reset`` returned an ended episode whose first ``step`` raised, with every action
    masked (an env-API audit, session 51; vector environments failed on it). Now
    its one step, whatever the action, truncates it with reward 0; a limit after the first
    round is an ordinary episode. (Gymnasium's ``check_env`` still flags it: "truncates after
    1 step" is what such a configuration does.)"""
    trace = tmp_path / "late.csv"
    trace.write_text("job_id,submit_time_s,duration_s,num_gpus,model\n"
                     "a,1000,3600,1,resnet50\nb,1200,600,1,resnet50\n")
    spec = f"csv:path={trace}"
    env = gym.make(env_id, cluster="tiny-8", slots=16, max_time_s=500.0, workload=spec)
    with pytest.warns(UserWarning, match="episode 0 ended before its first decision"):
        _, info = env.reset(seed=0)
    assert info["end_reason"] == "time_limit" and info["active_jobs"] == 0
    if env_id == "hsched/Schedule-v0":
        assert env.unwrapped.action_masks().tolist() == [False] * 16 + [True]  # commit
    _, reward, terminated, truncated, info = env.step(env.action_space.sample())
    assert (reward, terminated, truncated) == (0.0, False, True)
    assert info["metrics"]["jobs_completed"] == 0
    with pytest.raises(RuntimeError, match="has ended"):
        env.step(env.action_space.sample())
    # a vector environment steps through such episodes (its autoreset starts the next)
    vec = gym.vector.SyncVectorEnv([lambda: gym.make(env_id, cluster="tiny-8", slots=16,
                                                     max_time_s=500.0, workload=spec)] * 2)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        vec.reset(seed=0)
        for _ in range(3):
            vec.step(vec.action_space.sample())
    vec.close()
    env = gym.make(env_id, cluster="tiny-8", slots=16, max_time_s=1300.0, workload=spec)
    _, info = env.reset(seed=0)
    assert info["time_s"] == 1200.0 and info["active_jobs"] == 2 and "end_reason" not in info


@pytest.mark.parametrize("env_id", ["hsched/Schedule-Tiny-v0", "hsched/Rank-Tiny-v0"])
def test_action_masks_reachable_on_the_made_environment(env_id):
    """``gym.make(...).action_masks()``, as the docs write it, is the environment's own mask
    at every step (Gymnasium's wrappers do not pass unknown attributes through)."""
    env = gym.make(env_id)
    env.reset(seed=0)
    rng = np.random.default_rng(0)
    for _ in range(30):
        mask = env.action_masks()
        assert np.array_equal(mask, env.unwrapped.action_masks())
        if env_id.startswith("hsched/Schedule"):
            action = int(rng.choice(np.flatnonzero(mask)))
        else:
            action = (rng.random(env.unwrapped.K) < 0.5).astype(np.int8)
        _, _, terminated, truncated, _ = env.step(action)
        if terminated or truncated:
            env.reset()


def test_a_bad_cluster_mapping_names_the_field_inside_it():
    """A typo inside a cluster mapping handed to ``gym.make``: the error names where inside
    the ``cluster`` argument (as a cluster file's error names its line and field)."""
    bad = {"nodes": [{"gpu_type": "V100-16GB", "gpus_per_node": 4, "count": 1},
                     {"gpu_type": "A100-4OGB", "gpus_per_node": 8, "count": 1}]}
    with pytest.raises(UnknownNameError, match=r"field 'cluster\.nodes\[1\]\.gpu_type': "
                                               r"unknown GPU type 'A100-4OGB'"):
        gym.make("hsched/Schedule-Tiny-v0", cluster=bad)
    with pytest.raises(UnknownNameError, match=r"field 'cluster': unknown cluster 'nope'"):
        gym.make("hsched/Schedule-Tiny-v0", cluster="nope")
    # any other error inside the mapping too: an unknown key, a bad count, a missing list
    node = {"gpu_type": "V100-16GB", "gpus_per_node": 4, "count": 1}
    for mapping, where in (({"nodes": [node], "bogus": 1}, r"cluster\.bogus"),
                           ({"nodes": [{**node, "colour": 2}]}, r"cluster\.nodes\[0\]\.colour"),
                           ({"nodes": [{**node, "count": -2}]}, r"cluster\.nodes\[0\]\.count"),
                           ({"name": "x"}, r"cluster\.nodes")):
        with pytest.raises(ConfigError, match=rf"field '{where}': "):
            gym.make("hsched/Schedule-Tiny-v0", cluster=mapping)


def test_a_bad_cluster_file_names_its_own_field(tmp_path):
    """A cluster *file* handed to ``gym.make``: the error names the file, its line and the
    field in it, as the command line does (no ``cluster.`` prefix: the file has no such key)."""
    path = tmp_path / "c.yaml"
    path.write_text("nodes:\n  - gpu_type: V100-16GB\n    gpus_per_node: 4\n    count: 1\n"
                    "  - gpu_type: A100-4OGB\n    gpus_per_node: 8\n    count: 1\n",
                    encoding="utf-8")
    with pytest.raises(UnknownNameError, match=r"c\.yaml:5, field 'nodes\[1\]\.gpu_type'"):
        gym.make("hsched/Schedule-Tiny-v0", cluster=str(path))
