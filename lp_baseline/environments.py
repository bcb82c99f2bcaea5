"""Entry points of the registered environments (``gymnasium.make("hsched/Schedule-v0")``,
``"hsched/Rank-v0"``): the environment with the default LP factory, ``make_policy``.

``hsched_env`` registers these by name only, so the world never imports the LP; the
environments take their LP as an argument (``lp=`` a policy, or ``lp_factory=``), and this
module supplies the default one. Pass ``lp=`` or ``lp_factory=`` to ``gymnasium.make`` to use
another.
"""

from __future__ import annotations

from hsched_env.envs.rank import RankEnv
from hsched_env.envs.schedule import ScheduleEnv
from lp_baseline.registry import make_policy


def schedule_env(*args, default_slots: int | None = None, **kwargs) -> ScheduleEnv:
    """``ScheduleEnv(*args, **kwargs)`` with ``lp_factory=make_policy`` unless given;
    ``default_slots`` (a registered id's K) is K unless ``slots`` or ``max_candidates`` is
    given."""
    return ScheduleEnv(*args, **_with_defaults(kwargs, default_slots))


def rank_env(*args, default_slots: int | None = None, **kwargs) -> RankEnv:
    """``RankEnv(*args, **kwargs)``, the defaults as ``schedule_env``'s."""
    return RankEnv(*args, **_with_defaults(kwargs, default_slots))


def _with_defaults(kwargs: dict, default_slots: int | None) -> dict:
    kwargs.setdefault("lp_factory", make_policy)
    if (default_slots is not None and kwargs.get("slots") is None
            and kwargs.get("max_candidates") is None):
        kwargs["slots"] = default_slots
    return kwargs


# ``gymnasium.make`` reads the entry point's ``metadata`` (render modes), as of a class.
schedule_env.metadata = ScheduleEnv.metadata
rank_env.metadata = RankEnv.metadata
