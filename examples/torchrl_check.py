"""TorchRL check: ``GymEnv`` on a masked HeteroSched id, ``check_env_specs``, TorchRL's
``ActionMask`` transform, and a masked random rollout that takes no invalid action.

``hsched_env.wrappers.make_masked`` is a Gymnasium entry point, so the script registers a
masked twin of the id (``hsched-masked/<name>``, in this process only) and builds
``torchrl.envs.GymEnv`` on it; ``GymWrapper(make_masked(...))`` is the same environment without
an id. The observation's ``"action_mask"`` (int8) becomes the tensordict's ``"action_mask"``;
``ActionMask`` restricts the action spec to it after every reset and step, so
``env.rand_action`` / ``env.rollout()`` without a policy sample only allowed actions. The
check asserts, at every step, that the action taken was allowed by the mask of the
observation it was taken from, and that the environment flagged no invalid action
(``info["invalid_action"]``; rank mode: ``info["ignored_keeps"] == 0``).

Runs with torchrl installed (any venv; see docs/environments.md, "Masking for RLlib and
TorchRL"):

    OMP_NUM_THREADS=1 python examples/torchrl_check.py            # Schedule, then Rank
    OMP_NUM_THREADS=1 python examples/torchrl_check.py --env-id hsched/Schedule-v0 --steps 300
"""

from __future__ import annotations

import argparse
import json
import os
import time

os.environ.setdefault("OMP_NUM_THREADS", "1")

import gymnasium as gym  # noqa: E402

import hsched_env  # noqa: E402,F401  registers the ids
from hsched_env.wrappers import MASK_KEY, make_masked  # noqa: E402

#: The small scenarios, for a version without the ``-Tiny-v0`` ids.
TINY = {"cluster": "tiny-8", "workload": "gavel:rate=8,jobs=16,duration_scale=0.05"}
FALLBACK = {"hsched/Schedule-Tiny-v0": ("hsched/Schedule-v0", {**TINY, "slots": 32}),
            "hsched/Rank-Tiny-v0": ("hsched/Rank-v0", {**TINY, "slots": 128})}


def resolve(env_id: str) -> tuple[str, dict]:
    """``env_id`` and its kwargs (a ``-Tiny-v0`` id not registered: its v0 equivalent)."""
    if env_id not in gym.registry and env_id in FALLBACK:
        return FALLBACK[env_id]
    return env_id, {}


def register_masked(env_id: str, **kwargs) -> str:
    """Register ``hsched-masked/<name>``: ``env_id`` through ``make_masked`` (this process)."""
    masked_id = "hsched-masked/" + env_id.split("/", 1)[-1]
    if masked_id not in gym.registry:
        gym.register(masked_id, entry_point="hsched_env.wrappers:make_masked",
                     kwargs={"env_id": env_id, **kwargs}, disable_env_checker=True)
    return masked_id


def flag_reader():
    """A TorchRL info reader for the environment's own verdict: ``invalid_action`` (Schedule:
    a masked action was taken) and ``ignored_keeps`` (Rank: keep bits on empty slots).
    TorchRL's ``default_info_dict_reader`` expects array values (``val.dtype``) and fails on
    the Python scalars a single Gymnasium environment puts in ``info``."""
    import torch
    from torchrl.data import Composite, Unbounded
    from torchrl.envs.gym_like import BaseInfoDictReader

    class FlagReader(BaseInfoDictReader):
        def __init__(self):
            self._spec = Composite(invalid_action=Unbounded((), dtype=torch.bool),
                                   ignored_keeps=Unbounded((), dtype=torch.int64), shape=())

        def __call__(self, info_dict, tensordict):
            tensordict.set("invalid_action",
                           torch.tensor(bool(info_dict.get("invalid_action", False))))
            tensordict.set("ignored_keeps", torch.tensor(int(info_dict.get("ignored_keeps", 0))))
            return tensordict

        @property
        def info_spec(self):
            return self._spec

    return FlagReader()


def check(env_id: str, *, steps: int = 600, seed: int = 0, categorical: bool = True,
          via: str = "GymEnv", mask: bool = True) -> dict:
    """Builds the TorchRL environment, runs ``check_env_specs`` and a masked random rollout
    of ``steps`` steps (episodes reset inside it); asserts no action outside the mask and no
    invalid action flagged; returns a summary. ``mask=False`` leaves out ``ActionMask`` (and
    the asserts): the control, where random actions break the mask."""
    import torch
    from torchrl.envs import GymEnv, GymWrapper, TransformedEnv
    from torchrl.envs.transforms import ActionMask
    from torchrl.envs.utils import check_env_specs

    torch.manual_seed(seed)
    base_id, kwargs = resolve(env_id)
    t0 = time.perf_counter()
    if via == "GymEnv":
        base = GymEnv(register_masked(base_id, **kwargs),
                      categorical_action_encoding=categorical)
    else:
        base = GymWrapper(make_masked(base_id, **kwargs), categorical_action_encoding=categorical)
    base.set_info_dict_reader(flag_reader())
    env = TransformedEnv(base, ActionMask()) if mask else base
    check_env_specs(env, seed=seed)
    action_spec = env.full_action_spec["action"]
    mask_spec = env.full_observation_spec[MASK_KEY]

    env.set_seed(seed)
    td = env.rollout(steps, break_when_any_done=False)   # no policy: masked rand_action
    seconds = time.perf_counter() - t0
    action = td["action"]
    if not categorical:
        action = action.long().argmax(-1)                # one-hot → index
    masks = td[MASK_KEY].bool()                          # the mask of the observation acted on
    allowed = torch.gather(masks, -1, action.long().unsqueeze(-1)).squeeze(-1)
    not_allowed = int((~allowed).sum())
    flagged = int(td["next", "invalid_action"].sum()) + int(td["next", "ignored_keeps"].sum())
    done = td["next", "done"].squeeze(-1)
    out = {"env_id": env_id, "resolved": [base_id, kwargs], "via": via, "masked": mask,
           "action_spec": type(action_spec).__name__, "action_shape": list(action_spec.shape),
           "mask_shape": list(mask_spec.shape), "mask_dtype": str(mask_spec.dtype),
           "steps": int(done.numel()), "episodes_done": int(done.sum()),
           "actions_not_allowed": not_allowed, "env_flagged": flagged,
           "seconds": round(seconds, 2)}
    if mask:
        assert not_allowed == 0, f"{not_allowed} actions outside the mask"
        assert flagged == 0, f"the environment flagged {flagged} invalid actions"
    return out


def main(argv=None) -> list[dict]:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--env-id", action="append", help="registered hsched id (repeatable; "
                   "default: hsched/Schedule-Tiny-v0 and hsched/Rank-Tiny-v0)")
    p.add_argument("--steps", type=int, default=600)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--onehot", action="store_true", help="one-hot actions (TorchRL's "
                   "default) instead of categorical indices")
    p.add_argument("--via", choices=("GymEnv", "GymWrapper"), default="GymEnv")
    p.add_argument("--no-mask", action="store_true", help="control: no ActionMask transform "
                   "(random actions break the mask; nothing is asserted)")
    args = p.parse_args(argv)
    import torchrl
    print(f"torchrl {torchrl.__version__}, gymnasium {gym.__version__}", flush=True)
    results = []
    for env_id in args.env_id or ["hsched/Schedule-Tiny-v0", "hsched/Rank-Tiny-v0"]:
        r = check(env_id, steps=args.steps, seed=args.seed, categorical=not args.onehot,
                  via=args.via, mask=not args.no_mask)
        print(json.dumps(r), flush=True)
        results.append(r)
    print("OK: check_env_specs passed; " + ("every action was allowed by its mask"
                                             if not args.no_mask else "unmasked control"))
    return results


if __name__ == "__main__":
    main()
