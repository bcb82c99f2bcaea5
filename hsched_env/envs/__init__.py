"""The Gymnasium environments: ``hsched/Schedule-v0`` (select mode) and ``hsched/Rank-v0``
(rank mode), and their difficulty levels (``VARIANT_IDS``: ``-Tiny-v0`` … ``-Large-v0``).
Importing ``hsched_env`` registers them all (``hsched_env.registration``); see
``docs/environments.md``."""

from __future__ import annotations

import numpy as np

from hsched_env.envs.base import ENV_IDS_BY_CLASS
from hsched_env.envs.rank import RankEnv
from hsched_env.envs.schedule import ScheduleEnv, read_action
from hsched_env.errors import ConfigError, UnknownNameError, is_whole_number, show
from hsched_env.registration import VARIANT_IDS

#: The two environments at their defaults (every registered id: ``VARIANT_IDS``).
ENV_IDS = ("hsched/Schedule-v0", "hsched/Rank-v0")
#: The keys of an ``episode_record()`` (``env_id`` may be absent in older records).
RECORD_KEYS = ("env_id", "class", "kwargs", "seed", "actions")


def _check_recorded_actions(actions, cls: str) -> None:
    """A record's actions as ``episode_record()`` writes them: a list of whole numbers
    (``ScheduleEnv``) or of keep-bit lists (``RankEnv``, whose ``step`` checks the bits). A
    select-mode environment counts a non-integer action as an invalid one, so ``"abc"``
    replayed as three invalid actions and another reward, without a word."""
    if not (isinstance(actions, (list, tuple))
            or (isinstance(actions, np.ndarray) and actions.ndim >= 1)):
        raise ConfigError(f"a record's actions are a list, got {show(actions)}",
                          field="record['actions']")
    for i, a in enumerate(actions):
        # what the environment's step reads as one integer (3, np.int64(3), 3.0, [3]); -1 is
        # how a record keeps an invalid action (-1.0 after a float-only tool)
        if cls == "ScheduleEnv" and read_action(a) is None:
            raise ConfigError(f"a select-mode action is one integer, got {show(a)}",
                              field=f"record['actions'][{i}]")
        if cls == "RankEnv" and not isinstance(a, (list, tuple, np.ndarray)):
            raise ConfigError(f"a rank-mode action is a list of keep bits, got {show(a)}",
                              field=f"record['actions'][{i}]")


def replay(record: dict, **overrides) -> tuple[dict, float]:
    """Re-run an ``episode_record()``: returns (metrics, total reward). The metrics equal the
    recorded episode's except wall-clock fields (``decision_time_*``, ``wall_s``). The
    environment is made by its registered id (``gymnasium.make``: the default LP factory);
    ``overrides`` are extra constructor arguments (e.g. ``lp=`` the policy that was used:
    it replaces the recorded ``lp_policy`` and ``lp_objective``). A record's keys are those
    ``episode_record()`` writes (``RECORD_KEYS``); any other is refused, as are an env id
    not registered in this process and a seed that is no whole number."""
    import gymnasium as gym
    if not isinstance(record, dict):
        raise ConfigError(f"an episode record is the dict episode_record() returns, got "
                          f"{type(record).__name__}", field="record")
    missing = [k for k in ("class", "kwargs", "seed", "actions") if k not in record]
    if missing:
        raise ConfigError(f"not an episode_record(): it lacks {', '.join(map(repr, missing))}",
                          field=f"record[{missing[0]!r}]")
    unknown = sorted(map(str, set(record) - set(RECORD_KEYS)))
    if unknown:
        raise ConfigError(f"not a key of an episode record: {', '.join(map(repr, unknown))} "
                          f"(its keys: {', '.join(RECORD_KEYS)})", field=f"record[{unknown[0]!r}]")
    if not isinstance(record["class"], str) or record["class"] not in ENV_IDS_BY_CLASS:
        raise UnknownNameError("environment class", str(record["class"]),
                               list(ENV_IDS_BY_CLASS), field="record['class']")
    env_id = record.get("env_id") or ENV_IDS_BY_CLASS[record["class"]]
    if not isinstance(env_id, str) or env_id not in gym.registry:
        # (an id registered in this process, e.g. a masked one (docs/environments.md), is fine)
        own = [i for i in VARIANT_IDS if i.startswith(ENV_IDS_BY_CLASS[record["class"]][:-3])]
        raise UnknownNameError("environment id (not registered in this process)", str(env_id),
                               own, field="record['env_id']")
    if record["seed"] is not None and not (is_whole_number(record["seed"])
                                           and record["seed"] >= 0):
        raise ConfigError(f"an episode seed is a whole number >= 0 (or None), got "
                          f"{show(record['seed'])}", field="record['seed']")
    _check_recorded_actions(record["actions"], record["class"])
    if not isinstance(record["kwargs"], dict):
        raise ConfigError(f"the environment's arguments are a dict, got "
                          f"{type(record['kwargs']).__name__}", field="record['kwargs']")
    kwargs = dict(record["kwargs"])
    if "lp" in overrides:
        # the LP itself replaces the recorded one: its name and objective go with it (an
        # environment refuses lp= beside a non-default lp_policy or an lp_objective)
        kwargs.pop("lp_policy", None)
        kwargs.pop("lp_objective", None)
    if record["class"] == "ScheduleEnv":
        # records from before the invalid-action option played invalid actions as free no-ops
        kwargs.setdefault("invalid_action", "noop")
    env = gym.make(env_id, disable_env_checker=True, max_episode_steps=-1,
                   **{**kwargs, **overrides}).unwrapped
    env.reset(seed=None if record["seed"] is None else int(record["seed"]))
    total = 0.0
    for a in record["actions"]:
        _, r, terminated, truncated, _ = env.step(a)
        total += r
        if terminated or truncated:
            break
    return env.metrics(), total


__all__ = ["ENV_IDS", "VARIANT_IDS", "RankEnv", "ScheduleEnv", "replay"]
