"""HeteroSched world model: catalogs, clusters, cost model and the candidate planner.

Importing this package registers the Gymnasium environments ``hsched/Schedule-v0`` and
``hsched/Rank-v0`` (entry points only: their modules load on ``gymnasium.make``).
"""

from hsched_env.errors import ConfigError, HSchedError, TraceError, UnknownNameError


def _register() -> None:
    import gymnasium as gym
    for env_id, entry in (("hsched/Schedule-v0", "hsched_env.envs.schedule:ScheduleEnv"),
                          ("hsched/Rank-v0", "hsched_env.envs.rank:RankEnv")):
        if env_id not in gym.registry:
            gym.register(id=env_id, entry_point=entry)


_register()

__all__ = ["ConfigError", "HSchedError", "TraceError", "UnknownNameError"]
__version__ = "0.1.0"
