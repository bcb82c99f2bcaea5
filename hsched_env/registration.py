"""The registered Gymnasium ids: the two environments at their defaults (``hsched/Schedule-v0``,
``hsched/Rank-v0``) and four difficulty levels of each (``-Tiny-v0`` … ``-Large-v0``).

Each id is a scenario (cluster, workload, K slots) with a default step limit
(``max_episode_steps``, Gymnasium's ``TimeLimit``) and the ``EpisodeEndInfo`` wrapper, which
puts the episode's metrics into ``info`` when that limit cuts it. The entry points live in
``lp_baseline.environments`` (they supply the default LP factory, see
``docs/architecture.md``), so this module imports no environment code: registering is cheap.
Episode lengths measured under the LP reference are in ``docs/environments.md``
("Registered variants").
"""

from __future__ import annotations

from dataclasses import dataclass, field

import gymnasium as gym
from gymnasium.envs.registration import WrapperSpec

from hsched_env.defaults import EARLIER_DRAWS, ENV_WORKLOAD

ENTRY_POINTS = {"Schedule": "lp_baseline.environments:schedule_env",
                "Rank": "lp_baseline.environments:rank_env"}
#: The registered ids skip Gymnasium's passive checker unless ``gym.make(...,
#: disable_env_checker=False)`` asks for it: its wrapper (Gymnasium 1.4.0) marks its first
#: ``reset`` as done before calling it, so a refused first reset (``options`` the environment
#: does not take, a negative seed) left it without that reset's data, and the next ``step``
#: failed with a raw ``TypeError`` from inside Gymnasium. The environments are held to
#: Gymnasium's and SB3's full checkers by the tests instead (docs/environments.md,
#: "Conformance").
PASSIVE_CHECKER_OFF = True
#: The wrapper every registered id adds outside ``TimeLimit`` (metrics on a step-limit cut).
END_INFO_WRAPPER = WrapperSpec(name="EpisodeEndInfo",
                               entry_point="hsched_env.envs.episode:EpisodeEndInfo", kwargs={})


@dataclass(frozen=True)
class Variant:
    """One registered id: the environment (``Schedule`` or ``Rank``), its scenario kwargs and
    default step limit."""

    env: str                         # "Schedule" or "Rank"
    level: str                       # "" (the v0 defaults), "Tiny", "Small", "Medium", "Large"
    kwargs: dict = field(default_factory=dict)
    max_episode_steps: int = 1000
    summary: str = ""

    @property
    def id(self) -> str:
        return f"hsched/{self.env}{'-' + self.level if self.level else ''}-v0"

    @property
    def registered_kwargs(self) -> dict:
        """The kwargs the id is registered with: ``kwargs``, its K as ``default_slots`` (the
        entry points use it when the caller gives neither ``slots`` nor the old name
        ``max_candidates``: ``gymnasium.make`` merges the caller's kwargs into these, so a
        registered ``slots`` would clash with a caller's ``max_candidates``)."""
        out = dict(self.kwargs)
        if "slots" in out:
            out["default_slots"] = out.pop("slots")
        return out


# The variants' jobs are part of their definition (a ``-v0`` does not change under its
# name): they keep the ``gavel:`` draws they were registered with, ``multi_gpu_recommendation=1``
# (since session 45 the generator draws Recommendation at one GPU, as Gavel does).
_TINY = {"cluster": "tiny-8",
         "workload": f"gavel:rate=8,jobs=16,duration_scale=0.05,{EARLIER_DRAWS}"}
_SMALL = {"cluster": "sia-64",
          "workload": f"gavel:rate=6,jobs=30,duration_scale=0.25,{EARLIER_DRAWS}"}
_MEDIUM = {"cluster": "sia-64", "workload": ENV_WORKLOAD}
_LARGE = {"cluster": "large-2048",
          "workload": f"gavel:rate=20000,jobs=1000,{EARLIER_DRAWS}",
          "max_time_s": 3 * 3600.0}

VARIANTS: tuple[Variant, ...] = (
    Variant("Schedule", "", {}, 50_000,
            "the defaults: Sia's 64-GPU cluster, 100 Gavel jobs at 4/h (= Medium)"),
    Variant("Schedule", "Tiny", {**_TINY, "slots": 32}, 2_000,
            "8 GPUs of 2 types, 16 short jobs: a few hundred steps, learns in minutes"),
    Variant("Schedule", "Small", {**_SMALL, "slots": 64}, 5_000,
            "Sia's 64 GPUs of 3 types, 30 jobs at 6/h, durations ÷ 4"),
    Variant("Schedule", "Medium", {**_MEDIUM, "slots": 64}, 50_000,
            "Sia's 64 GPUs, 100 jobs at 4/h (the v0 defaults)"),
    Variant("Schedule", "Large", {**_LARGE, "slots": 1024}, 100_000,
            "2,048 GPUs of 5 types, a 1,000-job burst, first 3 simulated hours"),
    Variant("Rank", "", {}, 5_000,
            "the defaults: Sia's 64-GPU cluster, 100 Gavel jobs at 4/h (= Medium)"),
    Variant("Rank", "Tiny", {**_TINY, "slots": 128}, 1_000,
            "8 GPUs of 2 types, 16 short jobs: about a hundred rounds"),
    Variant("Rank", "Small", {**_SMALL, "slots": 512}, 1_000,
            "Sia's 64 GPUs of 3 types, 30 jobs at 6/h, durations ÷ 4"),
    Variant("Rank", "Medium", {**_MEDIUM, "slots": 1024}, 5_000,
            "Sia's 64 GPUs, 100 jobs at 4/h (the v0 defaults)"),
    Variant("Rank", "Large", {**_LARGE, "slots": 70_000}, 100,
            "2,048 GPUs of 5 types, a 1,000-job burst (up to 1,000 active, 66,000 "
            "candidates), first 3 h: 36 "
            "rounds, where decision time matters"),
)
VARIANT_IDS = tuple(v.id for v in VARIANTS)


def variant(env_id: str) -> Variant:
    """The ``Variant`` of a registered id."""
    for v in VARIANTS:
        if v.id == env_id:
            return v
    from hsched_env.errors import UnknownNameError
    raise UnknownNameError("environment id", env_id, list(VARIANT_IDS))


def register_all() -> None:
    """Register every id of ``VARIANTS`` (those already registered are left alone)."""
    for v in VARIANTS:
        if v.id not in gym.registry:
            gym.register(id=v.id, entry_point=ENTRY_POINTS[v.env], kwargs=v.registered_kwargs,
                         max_episode_steps=v.max_episode_steps,
                         additional_wrappers=(END_INFO_WRAPPER,),
                         disable_env_checker=PASSIVE_CHECKER_OFF)
