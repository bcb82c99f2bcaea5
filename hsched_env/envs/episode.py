"""``EpisodeEndInfo``: the wrapper every registered id puts outside Gymnasium's ``TimeLimit``,
so that an episode cut by the step limit still reports what a finished one does.

The environments put ``info["end_reason"]`` and ``info["metrics"]`` (``hsched simulate``'s
metrics of the episode so far) on the step that ends an episode. ``TimeLimit`` truncates from
outside, where the environment cannot see it coming; this wrapper adds both on that step:
``end_reason = "step_limit"`` and the metrics of the simulation up to the cut (jobs not done
are counted as in a ``max_time_s`` cut); ``end_reason = "wrapper"`` when another wrapper
inside it ended the episode. Wrap a hand-built ``TimeLimit`` in it to get the same.
"""

from __future__ import annotations

import gymnasium as gym
from gymnasium.utils import RecordConstructorArgs

STEP_LIMIT = "step_limit"
#: ``end_reason`` when another outer wrapper ended the episode.
WRAPPER_END = "wrapper"


class EpisodeEndInfo(gym.Wrapper, RecordConstructorArgs):
    """Adds ``end_reason`` and ``metrics`` to ``info`` when an outer limit truncates."""

    def __init__(self, env: gym.Env) -> None:
        RecordConstructorArgs.__init__(self)
        gym.Wrapper.__init__(self, env)
        self._steps = 0

    def reset(self, **kwargs):
        self._steps = 0
        return self.env.reset(**kwargs)

    def step(self, action):
        obs, reward, terminated, truncated, info = self.env.step(action)
        self._steps += 1
        if (terminated or truncated) and "metrics" not in info:
            info = dict(info)
            info["end_reason"] = STEP_LIMIT if self._step_limit_reached() else WRAPPER_END
            info["metrics"] = self.env.unwrapped.metrics()
        return obs, reward, terminated, truncated, info

    def action_masks(self):
        """The environment's ``action_masks()`` (sb3-contrib's convention), so that
        ``gymnasium.make(...).action_masks()`` works as the docs write it: Gymnasium's
        wrappers no longer pass unknown attributes through."""
        return self.env.unwrapped.action_masks()

    def _step_limit_reached(self) -> bool:
        """Whether the step limit of a ``TimeLimit`` inside is used up: the spec's
        ``max_episode_steps`` (``gymnasium.make``), else the limit a hand-built ``TimeLimit``
        was given."""
        spec = self.env.spec
        limits = [] if spec is None or spec.max_episode_steps is None else [
            spec.max_episode_steps]
        inner = self.env
        while isinstance(inner, gym.Wrapper):
            if isinstance(inner, gym.wrappers.TimeLimit):
                # the constructor argument, as TimeLimit keeps it (read by other libraries too)
                limits.append(getattr(inner, "_max_episode_steps", None))
            inner = inner.env
        return any(limit is not None and self._steps >= limit for limit in limits)


__all__ = ["EpisodeEndInfo", "STEP_LIMIT", "WRAPPER_END"]
