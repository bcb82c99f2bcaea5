"""The Gymnasium environments: ``hsched/Schedule-v0`` (select mode) and ``hsched/Rank-v0``
(rank mode). Importing ``hsched_env`` registers both; see ``docs/environments.md``."""

from __future__ import annotations

from hsched_env.envs.rank import RankEnv
from hsched_env.envs.schedule import ScheduleEnv

ENV_IDS = ("hsched/Schedule-v0", "hsched/Rank-v0")


def replay(record: dict) -> tuple[dict, float]:
    """Re-run an ``episode_record()``: returns (metrics, total reward). The metrics equal the
    recorded episode's except wall-clock fields (``decision_time_*``, ``wall_s``)."""
    cls = {"ScheduleEnv": ScheduleEnv, "RankEnv": RankEnv}[record["class"]]
    env = cls(**record["kwargs"])
    env.reset(seed=record["seed"])
    total = 0.0
    for a in record["actions"]:
        _, r, terminated, truncated, _ = env.step(a)
        total += r
        if terminated or truncated:
            break
    return env.metrics(), total


__all__ = ["ENV_IDS", "RankEnv", "ScheduleEnv", "replay"]
