"""``hsched_env.wrappers``: the action mask in the observation for RLlib and TorchRL, and the
two examples that use it (``examples/rllib_ppo_masked.py``, ``examples/torchrl_check.py``).

The wrapper tests run in the project's venv. The example tests need Ray / TorchRL, which are
not in it (``ray[rllib]`` pins gymnasium 1.2.2): they are skipped unless the running
interpreter has them, or ``HSCHED_ECOSYSTEM_PYTHON`` names an interpreter that has both
(``HSCHED_ECOSYSTEM_PYTHON=/tmp/rayvenv/bin/python``, docs/environments.md, "Masking for
RLlib and TorchRL"), which then runs the examples as subprocesses.
"""

from __future__ import annotations

import functools
import json
import os
import pickle
import subprocess
import sys
import warnings

import gymnasium as gym
import numpy as np
import pytest
from gymnasium import spaces

import hsched_env  # noqa: F401  registers the ids
from hsched_env.errors import ConfigError
from hsched_env.wrappers import (MASK_KEY, OBSERVATIONS_KEY, ActionMaskObservation,
                                 FlatActionMaskObservation, MultiBinaryAsMultiDiscrete,
                                 make_masked, mask_shape, wrap_masked)

slow = pytest.mark.slow
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SCHEDULE, RANK = "hsched/Schedule-v0", "hsched/Rank-v0"
TINY = {"cluster": "tiny-8", "workload": "gavel:rate=8,jobs=16,duration_scale=0.05"}
#: the small scenario of each environment, on the v0 ids (every version registers them)
KWARGS = {SCHEDULE: {**TINY, "slots": 32}, RANK: {**TINY, "slots": 128, "measure_time": False}}


def make(env_id: str, **kw) -> gym.Env:
    return make_masked(env_id, **{**KWARGS[env_id], **kw})


def expected_mask(env: gym.Env, flat: bool) -> np.ndarray:
    """``action_masks()`` of the environment, in the wrapper's layout."""
    base = env.unwrapped
    m = base.action_masks()
    if isinstance(base.action_space, spaces.MultiBinary):
        return m if flat else m.reshape(base.K, 2)
    return m


def sample_masked(mask: np.ndarray, rng, discrete: bool) -> np.ndarray | int:
    """A random action allowed by ``mask``: an index (Schedule), keep bits (Rank: (K, 2) or
    (2K,) per-slot [drop, keep])."""
    if discrete:
        return int(rng.choice(np.flatnonzero(mask)))
    rows = mask.reshape(-1, 2).astype(bool)
    return np.array([rng.choice(np.flatnonzero(r)) for r in rows], dtype=np.int64)


def run_episode(env: gym.Env, flat: bool, seed: int = 0, max_steps: int = 5000):
    """Steps an episode with random allowed actions, checking the mask at every step;
    returns (steps, last observation, last info)."""
    rng = np.random.default_rng(seed)
    obs, info = env.reset(seed=seed)
    base = env.unwrapped
    discrete = isinstance(base.action_space, spaces.Discrete)
    for step in range(max_steps):
        assert env.observation_space.contains(obs), f"step {step}: obs not in the space"
        mask = obs[MASK_KEY]
        np.testing.assert_array_equal(mask.astype(bool), expected_mask(env, flat),
                                      err_msg=f"step {step}")
        if discrete:
            assert mask[base.K] == 1, "commit must always be allowed"
        action = sample_masked(mask, rng, discrete)
        obs, _, terminated, truncated, info = env.step(action)
        assert not info.get("invalid_action", False), f"step {step}: masked action taken"
        assert info.get("ignored_keeps", 0) == 0, f"step {step}: keep on an empty slot"
        if terminated or truncated:
            return step + 1, obs, info
    raise AssertionError("episode did not end")


# ---------------------------------------------------------------------------- the mask
@pytest.mark.parametrize("flat", [False, True], ids=["dict", "flat"])
@pytest.mark.parametrize("env_id", [SCHEDULE, RANK])
@slow
def test_mask_is_action_masks_through_an_episode(env_id, flat):
    env = make(env_id, flat=flat)
    steps, last, info = run_episode(env, flat)
    assert steps > 10 and info["end_reason"] == "completed"
    # the episode is over: the environment allows nothing; the wrapper leaves commit (Schedule)
    # or drop (Rank) so that a masked distribution stays defined
    assert env.observation_space.contains(last)
    K = env.unwrapped.K
    if env_id == SCHEDULE:
        assert not env.unwrapped.action_masks().any()
        want = np.zeros(K + 1, dtype=bool)
        want[K] = True
    else:
        want = np.tile([True, False], K)
        want = want if flat else want.reshape(K, 2)
    np.testing.assert_array_equal(last[MASK_KEY].astype(bool), want)


def test_schedule_mask_includes_commit_and_follows_placements():
    env = make(SCHEDULE)
    obs, _ = env.reset(seed=3)
    K = env.unwrapped.K
    assert env.observation_space[MASK_KEY] == spaces.Box(0, 1, (K + 1,), dtype=np.int8)
    assert obs[MASK_KEY].dtype == np.int8 and obs[MASK_KEY].shape == (K + 1,)
    assert obs[MASK_KEY][K] == 1
    np.testing.assert_array_equal(obs[MASK_KEY][:K], obs["valid"])   # valid = mask[:K]
    slot = int(np.flatnonzero(obs[MASK_KEY][:K])[0])
    obs, _, _, _, info = env.step(slot)
    assert not info["invalid_action"] and info["placed"] == 1
    np.testing.assert_array_equal(obs[MASK_KEY], env.unwrapped.action_masks())
    assert obs[MASK_KEY][slot] == 0                                  # its job is placed


def test_other_keys_are_unchanged():
    env = make(SCHEDULE)
    plain = gym.make(SCHEDULE, **KWARGS[SCHEDULE])
    obs, _ = env.reset(seed=5)
    ref, _ = plain.reset(seed=5)
    assert set(obs) == set(ref) | {MASK_KEY}
    for k in ref:
        np.testing.assert_array_equal(obs[k], ref[k])
        assert env.observation_space[k] == plain.observation_space[k]


def test_rank_mask_layout_and_multidiscrete_actions():
    env = make(RANK)
    K = env.unwrapped.K
    assert env.action_space == spaces.MultiDiscrete([2] * K)
    assert env.observation_space[MASK_KEY].shape == (K, 2)
    obs, _ = env.reset(seed=0)
    valid = obs["valid"].astype(bool)
    np.testing.assert_array_equal(obs[MASK_KEY][:, 0], np.ones(K))   # drop always allowed
    np.testing.assert_array_equal(obs[MASK_KEY][:, 1].astype(bool), valid)
    obs, _, _, _, info = env.step(valid.astype(np.int64))            # keep every candidate
    assert info["kept"] == int(valid.sum()) and info["ignored_keeps"] == 0
    flat = make(RANK, flat=True)
    fobs, _ = flat.reset(seed=0)
    assert flat.observation_space[MASK_KEY].shape == (2 * K,)
    np.testing.assert_array_equal(fobs[MASK_KEY].astype(bool),
                                  flat.unwrapped.action_masks())
    keep_bits = make(RANK, multidiscrete=False)
    assert isinstance(keep_bits.action_space, spaces.MultiBinary)
    assert keep_bits.observation_space[MASK_KEY].shape == (K, 2)


def test_flat_observation_is_the_other_keys_concatenated():
    env = make(SCHEDULE, flat=True)
    plain = gym.make(SCHEDULE, **KWARGS[SCHEDULE])
    assert set(env.observation_space.spaces) == {MASK_KEY, OBSERVATIONS_KEY}
    assert env.observation_space[MASK_KEY].dtype == np.float32
    obs, _ = env.reset(seed=1)
    ref, _ = plain.reset(seed=1)
    flat = obs[OBSERVATIONS_KEY]
    assert flat.dtype == np.float32 and flat.ndim == 1
    assert list(env.observation_slices) == list(plain.observation_space.spaces)
    for key, sl in env.observation_slices.items():
        np.testing.assert_array_equal(flat[sl].reshape(env.observation_shapes[key]), ref[key])
    assert flat.size == sum(s.stop - s.start for s in env.observation_slices.values())
    assert env.observation_space.contains(obs)
    box = env.observation_space[OBSERVATIONS_KEY]
    assert float(box.low.min()) == 0.0 and float(box.high.max()) == 10.0


@pytest.mark.parametrize("dtype", ["bool", "int8", "uint8", "float32"])
def test_mask_dtype(dtype):
    env = make(SCHEDULE, mask_dtype=dtype)
    obs, _ = env.reset(seed=0)
    assert obs[MASK_KEY].dtype == np.dtype(dtype)
    assert env.observation_space[MASK_KEY].dtype == np.dtype(dtype)
    assert env.observation_space.contains(obs)


def test_mask_shape_per_action_space():
    assert mask_shape(spaces.Discrete(5)) == (5,)
    assert mask_shape(spaces.MultiBinary(4)) == (4, 2)
    assert mask_shape(spaces.MultiBinary(4), flat=True) == (8,)
    assert mask_shape(spaces.MultiDiscrete([3, 3])) == (2, 3)
    for bad in (spaces.Box(0, 1, (2,)), spaces.MultiDiscrete([2, 3]),
                spaces.MultiBinary([2, 2])):
        with pytest.raises(ValueError, match="no action-mask layout"):
            mask_shape(bad)


# ---------------------------------------------------------------------------- checkers
@pytest.mark.parametrize("flat", [False, True], ids=["dict", "flat"])
@pytest.mark.parametrize("env_id", [SCHEDULE, RANK])
@slow
def test_gymnasium_env_checker(env_id, flat):
    from gymnasium.utils.env_checker import check_env
    env = make(env_id, flat=flat, disable_env_checker=True)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        # check_env warns that it is given a wrapper (it is the wrapper that is checked here)
        warnings.filterwarnings("ignore", message=".*different from the unwrapped version.*")
        check_env(env, skip_render_check=True)


# ---------------------------------------------------------------------------- construction
@slow
def test_every_registered_id():
    """Every registered ``hsched/`` id (the v0 defaults and the difficulty levels, where
    this version has them) wraps, in both layouts; ``gymnasium.make(env.spec)`` rebuilds the
    same wrapped environment (the wrappers record their arguments)."""
    ids = sorted(i for i in gym.registry if i.startswith("hsched/"))
    assert SCHEDULE in ids and RANK in ids
    for env_id in ids:
        for flat in (False, True):
            env = make_masked(env_id, flat=flat)
            K = env.unwrapped.K
            want = (K + 1,) if "Schedule" in env_id else ((2 * K,) if flat else (K, 2))
            assert env.observation_space[MASK_KEY].shape == want, env_id
            again = gym.make(env.spec)
            assert type(again) is type(env)
            assert again.observation_space == env.observation_space
            assert again.action_space == env.action_space
    for env_id in [i for i in ids if "Tiny" in i]:
        env = make_masked(env_id)
        obs, _ = env.reset(seed=0)
        assert env.observation_space.contains(obs)


class _EnvContext(dict):
    """What RLlib passes to an env creator: a dict with worker attributes."""

    worker_index = 1
    num_workers = 1


def test_make_masked_takes_a_config():
    config = _EnvContext(env_id=SCHEDULE, flat=True, **KWARGS[SCHEDULE])
    env = make_masked(config)
    assert isinstance(env, FlatActionMaskObservation)
    assert env.unwrapped.K == 32 and env.unwrapped.cluster.name == "tiny-8"
    env = make_masked({"env_id": RANK, **KWARGS[RANK]}, max_episode_steps=7)
    assert isinstance(env, ActionMaskObservation)
    assert isinstance(env.env, MultiBinaryAsMultiDiscrete)
    assert env.spec.max_episode_steps == 7
    with pytest.raises(ValueError, match="env_id"):
        make_masked({"flat": True})
    with pytest.raises(TypeError, match="registered environment id"):
        make_masked(42)


def test_make_masked_is_a_gymnasium_entry_point():
    masked_id = "hsched-test-masked/Schedule-v0"
    gym.register(masked_id, entry_point="hsched_env.wrappers:make_masked",
                 kwargs={"env_id": SCHEDULE, **KWARGS[SCHEDULE]})
    try:
        env = gym.make(masked_id)
        obs, _ = env.reset(seed=0)
        assert obs[MASK_KEY].shape == (33,) and env.observation_space.contains(obs)
    finally:
        del gym.registry[masked_id]


def test_wrap_masked_on_a_built_environment():
    env = wrap_masked(gym.make(SCHEDULE, **KWARGS[SCHEDULE]), flat=True, mask_dtype="bool")
    obs, _ = env.reset(seed=0)
    assert obs[MASK_KEY].dtype == bool and obs[MASK_KEY][-1]


@slow
def test_the_creator_pickles_and_builds_in_a_fresh_process():
    """What an RLlib EnvRunner or a spawned vector-env worker does: unpickle the creator in a
    new interpreter (nothing imported there) and build the environment."""
    creator = functools.partial(make_masked, {"env_id": SCHEDULE, "flat": True,
                                              **KWARGS[SCHEDULE]})
    code = ("import pickle, sys; f = pickle.loads(sys.stdin.buffer.read()); env = f(); "
            "obs, _ = env.reset(seed=0); print(obs['action_mask'].shape, "
            "obs['observations'].shape)")
    out = subprocess.run([sys.executable, "-c", code], input=pickle.dumps(creator),
                         capture_output=True, timeout=120, cwd=ROOT,
                         env={**os.environ, "OMP_NUM_THREADS": "1"})
    assert out.returncode == 0, out.stderr.decode()[-2000:]
    assert out.stdout.decode().strip().splitlines()[-1] == "(33,) (719,)"


def test_errors():
    with pytest.raises(TypeError, match="Dict observation"):
        ActionMaskObservation(gym.make("CartPole-v1"))
    with pytest.raises(TypeError, match="action_masks"):
        FlatActionMaskObservation(_DictEnv())
    with pytest.raises(TypeError, match="MultiBinary"):
        MultiBinaryAsMultiDiscrete(gym.make(SCHEDULE, **KWARGS[SCHEDULE]))
    with pytest.raises(ValueError, match="already has"):
        ActionMaskObservation(make(SCHEDULE))
    with pytest.raises(ValueError, match="dtype"):
        make(SCHEDULE, mask_dtype="complex64")


@pytest.mark.parametrize("value", [0.7, 1.9, 2, 257, -255])
def test_multidiscrete_wrapper_keeps_the_rank_check(value):
    """A value that is not a keep bit reaches ``Rank-v0``'s own check through the wrapper (it
    was cast to int8: 0.7 kept nothing, 257 kept everything); 0/1 int64 actions still run."""
    env = make(RANK)
    env.reset(seed=0)
    K = env.unwrapped.K
    bad = np.zeros(K, dtype=np.asarray(value).dtype)
    bad[3] = value
    with pytest.raises(ConfigError, match=r"slot 3 holds"):
        env.step(bad)
    obs, reward, *_ = env.step(np.ones(K, dtype=np.int64))
    assert np.isfinite(reward) and obs["action_mask"].shape == (K, 2)


class _DictEnv(gym.Env):
    observation_space = spaces.Dict({"x": spaces.Box(0, 1, (2,), dtype=np.float32)})
    action_space = spaces.Discrete(2)


# ---------------------------------------------------------------------------- the examples
def side_python(module: str) -> str:
    """The interpreter that runs an example needing ``module`` (Ray, TorchRL)."""
    exe = os.environ.get("HSCHED_ECOSYSTEM_PYTHON")
    if exe:
        return exe
    pytest.importorskip(module)
    return sys.executable


def run_example(python: str, *args: str, timeout: int = 600) -> list[dict]:
    out = subprocess.run([python, *args], capture_output=True, text=True, timeout=timeout,
                         cwd=ROOT, env={**os.environ, "OMP_NUM_THREADS": "1"})
    assert out.returncode == 0, (out.stdout[-3000:], out.stderr[-3000:])
    return [json.loads(line) for line in out.stdout.splitlines() if line.startswith("{")]


@slow
@pytest.mark.xdist_group("ray")     # its own Ray: one at a time (tests/test_ray_backend.py)
def test_rllib_ppo_example_trains_two_iterations_with_masking():
    python = side_python("ray.rllib")
    (result,) = run_example(python, "examples/rllib_ppo_masked.py", "--iterations", "2")
    assert result["masked"] and len(result["iterations"]) == 2
    for it in result["iterations"]:
        assert it["env_steps"] and it["env_steps"] > 0
        assert it["invalid_actions"] == 0, it          # logged (not None) and zero
    returns = [it["episode_return_mean"] for it in result["iterations"]]
    assert any(r is not None and np.isfinite(r) for r in returns), returns


@slow
def test_torchrl_check():
    python = side_python("torchrl")
    results = run_example(python, "examples/torchrl_check.py", "--steps", "400")
    assert [r["env_id"] for r in results] == ["hsched/Schedule-Tiny-v0", "hsched/Rank-Tiny-v0"]
    for r in results:
        assert r["masked"] and r["actions_not_allowed"] == 0 and r["env_flagged"] == 0
        assert r["episodes_done"] >= 1, r            # the terminal mask went through too
