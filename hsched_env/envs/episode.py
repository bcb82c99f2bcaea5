"""``EpisodeEndInfo``: the wrapper every registered id puts outside Gymnasium's ``TimeLimit``,
so that an episode cut by the step limit still reports what a finished one does.

The environments put ``info["end_reason"]`` and ``info["metrics"]`` (``hsched simulate``'s
metrics of the episode so far) on the step that ends an episode. ``TimeLimit`` truncates from
outside, where the environment cannot see it coming; this wrapper adds both on that step:
``end_reason = "step_limit"`` and the metrics of the simulation up to the cut (jobs not done
are counted as in a ``max_time_s`` cut). Wrap a hand-built ``TimeLimit`` in it to get the same.
"""

from __future__ import annotations

import gymnasium as gym
from gymnasium.utils import RecordConstructorArgs

STEP_LIMIT = "step_limit"


class EpisodeEndInfo(gym.Wrapper, RecordConstructorArgs):
    """Adds ``end_reason`` and ``metrics`` to ``info`` when an outer limit truncates."""

    def __init__(self, env: gym.Env) -> None:
        RecordConstructorArgs.__init__(self)
        gym.Wrapper.__init__(self, env)

    def step(self, action):
        obs, reward, terminated, truncated, info = self.env.step(action)
        if (terminated or truncated) and "metrics" not in info:
            info = dict(info)
            info["end_reason"] = STEP_LIMIT
            info["metrics"] = self.env.unwrapped.metrics()
        return obs, reward, terminated, truncated, info


__all__ = ["EpisodeEndInfo", "STEP_LIMIT"]
