"""HeteroSched world model: catalogs, clusters, cost model and the candidate planner.

Importing this package registers the Gymnasium environments ``hsched/Schedule-v0`` and
``hsched/Rank-v0`` (entry points only: their modules load on ``gymnasium.make``). The entry
points live in ``lp_baseline.environments``: they give the environments their default LP
factory, so that this package never imports the LP (``docs/architecture.md``).
"""

from hsched_env.errors import ConfigError, HSchedError, TraceError, UnknownNameError


def _register() -> None:
    import gymnasium as gym
    for env_id, entry in (("hsched/Schedule-v0", "lp_baseline.environments:schedule_env"),
                          ("hsched/Rank-v0", "lp_baseline.environments:rank_env")):
        if env_id not in gym.registry:
            gym.register(id=env_id, entry_point=entry)


_register()

__all__ = ["ConfigError", "HSchedError", "TraceError", "UnknownNameError"]
__version__ = "0.1.0"
