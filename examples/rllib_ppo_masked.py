"""RLlib PPO (new API stack) with action masking on a registered HeteroSched id.

The environment comes from ``hsched_env.wrappers.make_masked`` (registered with Tune's
``register_env``, so every EnvRunner process builds it and imports ``hsched_env`` itself, no
``NamespaceNotFound``) with ``flat=True``: observations ``{"action_mask": Box(0, 1, (K + 1,)),
"observations": Box(719,)}`` — RLlib's action-masking convention. ``MaskedMLP`` below is a
small RLModule that reads ``"observations"`` with an MLP and pushes the logits of disallowed
actions to -1e9, so PPO never samples them; a callback counts ``info["invalid_action"]`` to
show it (``--no-mask`` trains the same module without the mask, for comparison).

Runs with Ray installed (not in the project's ``.venv``: ``ray[rllib]`` pins gymnasium 1.2.2;
see docs/environments.md, "Masking for RLlib and TorchRL"):

    OMP_NUM_THREADS=1 python examples/rllib_ppo_masked.py --iterations 2

The default scenario is ``hsched/Schedule-Tiny-v0`` when registered, else ``hsched/Schedule-v0``
on the same scenario (tiny-8 cluster, 16 short jobs, K = 32). ``--env-id hsched/Rank-Tiny-v0``
trains rank mode (keep bits as ``MultiDiscrete([2] * K)``, mask [drop, keep] per slot).
"""

from __future__ import annotations

import argparse
import json
import os
import time

os.environ.setdefault("OMP_NUM_THREADS", "1")

import gymnasium as gym  # noqa: E402
import numpy as np  # noqa: E402

import hsched_env  # noqa: E402,F401  registers the ids in this process
from hsched_env.wrappers import MASK_KEY, OBSERVATIONS_KEY, make_masked  # noqa: E402

#: The small Schedule scenario, for a ``hsched/Schedule-v0`` without the ``-Tiny-v0`` id.
TINY_KWARGS = {"cluster": "tiny-8", "workload": "gavel:rate=8,jobs=16,duration_scale=0.05",
               "slots": 32}


def default_env() -> tuple[str, dict]:
    """``hsched/Schedule-Tiny-v0`` if this version registers it, else ``Schedule-v0`` with
    the same scenario."""
    if "hsched/Schedule-Tiny-v0" in gym.registry:
        return "hsched/Schedule-Tiny-v0", {}
    return "hsched/Schedule-v0", dict(TINY_KWARGS)


def build_config(env_id: str, env_kwargs: dict, *, mask: bool = True, env_runners: int = 1,
                 batch: int = 512, minibatch: int = 128, epochs: int = 2, seed: int = 0):
    """The PPOConfig of this example (``algo = build_config(...).build_algo()``)."""
    import torch
    from ray.rllib.algorithms.ppo import PPOConfig
    from ray.rllib.callbacks.callbacks import RLlibCallback
    from ray.rllib.core.columns import Columns
    from ray.rllib.core.distribution.torch.torch_distribution import TorchMultiCategorical
    from ray.rllib.core.rl_module.apis import ValueFunctionAPI
    from ray.rllib.core.rl_module.rl_module import RLModuleSpec
    from ray.rllib.core.rl_module.torch import TorchRLModule
    from ray.tune.registry import register_env
    nn = torch.nn

    class MaskedMLP(TorchRLModule, ValueFunctionAPI):
        """Policy and value MLPs over ``obs["observations"]``; the policy's logits of actions
        that ``obs["action_mask"]`` disallows are set to -1e9 (unless ``use_mask`` is off)."""

        def setup(self):
            cfg = self.model_config or {}
            space = self.observation_space[OBSERVATIONS_KEY]
            sizes = [int(np.prod(space.shape))] + list(cfg.get("hidden", (64, 64)))
            act = self.action_space
            n_logits = int(act.n) if isinstance(act, gym.spaces.Discrete) \
                else int(np.sum(act.nvec))
            if isinstance(act, gym.spaces.MultiDiscrete):
                self.action_dist_cls = TorchMultiCategorical.get_partial_dist_cls(
                    input_lens=[int(n) for n in act.nvec])
            self.use_mask = bool(cfg.get("use_mask", True))

            def mlp():
                layers = []
                for a, b in zip(sizes[:-1], sizes[1:]):
                    layers += [nn.Linear(a, b), nn.Tanh()]
                return nn.Sequential(*layers)
            self._pi_body, self._vf_body = mlp(), mlp()
            self._pi_head = nn.Linear(sizes[-1], n_logits)
            self._vf_head = nn.Linear(sizes[-1], 1)
            nn.init.orthogonal_(self._pi_head.weight, gain=0.01)
            nn.init.zeros_(self._pi_head.bias)

        def _logits(self, obs):
            logits = self._pi_head(self._pi_body(obs[OBSERVATIONS_KEY]))
            if self.use_mask:
                allowed = obs[MASK_KEY] > 0.5
                logits = logits.masked_fill(~allowed, -1e9)
            return logits

        def _forward(self, batch, **kwargs):
            return {Columns.ACTION_DIST_INPUTS: self._logits(batch[Columns.OBS])}

        def compute_values(self, batch, embeddings=None):
            obs = batch[Columns.OBS]
            return self._vf_head(self._vf_body(obs[OBSERVATIONS_KEY])).squeeze(-1)

    class CountInvalid(RLlibCallback):
        """Sums, per iteration, ``info["invalid_action"]`` (Schedule: a masked action was
        taken) and ``info["ignored_keeps"]`` (Rank: keep bits on empty slots)."""

        def on_episode_step(self, *, episode, metrics_logger=None, **kwargs):
            info = episode.get_infos(-1)
            if metrics_logger is None or not isinstance(info, dict):
                return
            for key, name in (("invalid_action", "invalid_actions"),
                              ("ignored_keeps", "ignored_keeps")):
                if key in info:
                    metrics_logger.log_value(name, int(info[key]), reduce="sum")

    register_env("hsched-masked", make_masked)
    env_config = {"env_id": env_id, "flat": True, **env_kwargs}
    return (
        PPOConfig()
        .environment("hsched-masked", env_config=env_config)
        .env_runners(num_env_runners=env_runners, num_envs_per_env_runner=1,
                     rollout_fragment_length="auto", num_cpus_per_env_runner=1)
        .learners(num_learners=0)
        .training(train_batch_size_per_learner=batch, minibatch_size=minibatch,
                  num_epochs=epochs, lr=3e-4, gamma=0.99, entropy_coeff=0.01)
        .rl_module(rl_module_spec=RLModuleSpec(
            module_class=MaskedMLP, model_config={"hidden": [64, 64], "use_mask": mask}))
        .callbacks(CountInvalid)
        .debugging(seed=seed, log_level="ERROR")
    )


def main(argv=None) -> dict:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--iterations", type=int, default=2)
    p.add_argument("--env-id", default=None, help="a registered hsched id (default: the "
                   "tiny Schedule scenario)")
    p.add_argument("--env-kwargs", default="{}", help="JSON: extra environment arguments")
    p.add_argument("--env-runners", type=int, default=1,
                   help="EnvRunner processes (0: sample in this process)")
    p.add_argument("--batch", type=int, default=1024, help="train batch per iteration (steps)")
    p.add_argument("--no-mask", action="store_true", help="ignore the mask (comparison)")
    p.add_argument("--seed", type=int, default=0)
    args = p.parse_args(argv)
    import ray

    env_id, kwargs = (args.env_id, {}) if args.env_id else default_env()
    kwargs.update(json.loads(args.env_kwargs))
    t0 = time.perf_counter()
    ray.init(num_cpus=max(2, args.env_runners + 1), include_dashboard=False,
             log_to_driver=False, configure_logging=False)
    try:
        algo = build_config(env_id, kwargs, mask=not args.no_mask,
                            env_runners=args.env_runners, batch=args.batch,
                            minibatch=min(256, args.batch), seed=args.seed).build_algo()
        built = time.perf_counter() - t0
        out = {"env_id": env_id, "env_kwargs": kwargs, "masked": not args.no_mask,
               "iterations": []}
        for i in range(args.iterations):
            t = time.perf_counter()
            r = algo.train()
            er = r.get("env_runners", {})
            row = {"iteration": i + 1,
                   "episode_return_mean": _num(er.get("episode_return_mean")),
                   "episode_len_mean": _num(er.get("episode_len_mean")),
                   "episodes": _num(er.get("num_episodes_lifetime")),
                   "env_steps": _num(er.get("num_env_steps_sampled_lifetime")),
                   "invalid_actions": _num(er.get("invalid_actions")),
                   "ignored_keeps": _num(er.get("ignored_keeps")),
                   "seconds": round(time.perf_counter() - t, 1)}
            out["iterations"].append(row)
            print(f"iter {row['iteration']}: episode_return_mean={row['episode_return_mean']} "
                  f"episode_len_mean={row['episode_len_mean']} episodes={row['episodes']} "
                  f"env_steps={row['env_steps']} invalid_actions={row['invalid_actions']} "
                  f"ignored_keeps={row['ignored_keeps']} "
                  f"({row['seconds']} s)", flush=True)
        algo.stop()
        out["build_s"] = round(built, 1)
        out["total_s"] = round(time.perf_counter() - t0, 1)
        print(json.dumps(out), flush=True)
        return out
    finally:
        ray.shutdown()


def _num(x):
    if x is None:
        return None
    try:
        x = float(x)
    except (TypeError, ValueError):
        return None
    return None if not np.isfinite(x) else round(x, 3)


if __name__ == "__main__":
    main()
