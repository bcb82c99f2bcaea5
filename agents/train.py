"""``hsched train``: train an agent on ``hsched/Rank-v0`` or ``hsched/Schedule-v0`` with SB3.

One ``TrainConfig`` holds every hyper-parameter; it is saved with the run (``config.json``).
A run directory (``--logdir``, default ``runs/<env>-<algo>-<seed>``) gets:

* ``tb/`` — TensorBoard: SB3's own scalars (``rollout/``, ``train/``, ``time/``) plus, per
  finished episode, ``episode/avg_jct_h``, ``episode/makespan_h``,
  ``episode/decision_time_ms``, ``episode/kept_fraction`` (rank mode) and
  ``episode/return_vs_lp`` — the episode's return ÷ the LP reference's return on the same
  seed (1.0 = as good as the LP; the reference is run once per training seed and cached);
  ``imitation/`` curves for the warm start;
* ``checkpoints/`` — SB3 checkpoints every ``checkpoint_steps``;
* ``model.zip`` (SB3, to resume), ``ranker.pt`` (the network alone, loadable on any cluster
  and K with ``agents.ranker.Ranker.load``), ``imitation_ranker.pt`` (after the warm start,
  before PPO), ``config.json``, ``summary.json``.

Rank mode (the ranker): warm start by imitation of the LP reference on training seeds
(``agents.imitation``), then PPO on the end-to-end reward with the permutation-equivariant
``RankerPolicy``. Select mode: MaskablePPO with ``MaskableRankerPolicy`` (or ``ppo``, which
ignores the mask: masked actions are no-ops).

Seeds: training episodes use seeds from ``TRAIN_SEED_RANGE`` only (the evaluation harness
draws its held-out seeds outside it).
"""

from __future__ import annotations

import dataclasses
import json
import logging
import time
from dataclasses import dataclass, field
from pathlib import Path

import gymnasium as gym
import numpy as np

import hsched_env  # noqa: F401  (registers the environments, also in subprocesses)
from hsched_env.defaults import JOB_CANDIDATES, ROUND_S
from hsched_env.errors import ConfigError, UnknownNameError

log = logging.getLogger(__name__)

#: Training seeds live in [0, 10_000); evaluation seeds are drawn elsewhere.
TRAIN_SEED_RANGE = (0, 10_000)
ENVS = ("hsched/Rank-v0", "hsched/Schedule-v0")
ALGOS = ("ppo", "maskable-ppo", "imitation")


@dataclass
class TrainConfig:
    """Every setting of a training run (saved as ``config.json``)."""

    env: str = "hsched/Rank-v0"
    algo: str = "ppo"
    timesteps: int = 2048
    n_envs: int = 1
    seed: int = 0
    logdir: str | None = None
    # scenario
    cluster: str = "large-2048"
    workload: str = "gavel:rate=20000,jobs=300"
    slots: int = 8192                           # K, the environment's candidate slots
    job_candidates: int = JOB_CANDIDATES
    round_s: float = ROUND_S
    episode_hours: float | None = 3.0           # truncate training episodes (None: to the end)
    train_seeds: int = 8                        # episodes cycle over seeds 0..train_seeds-1
    keep_cost: float = 0.05
    lp_policy: str = "heterosched-lp"
    # warm start by imitation (rank mode)
    imitation_seeds: int = 8
    imitation_rounds: int = 36                  # rounds recorded per seed
    imitation_epochs: int = 30
    imitation_lr: float = 1e-3
    pos_weight: float = 3.0
    # imitation over a mix of regimes (``agents.regimes.REGIMES``; None: the one scenario)
    regimes: str | None = None
    # the ranker's operating point: the keep threshold reaching this recall of the LP's
    # support on held-out rounds (None: keep probability > ½)
    target_recall: float | None = None
    # rounds with fewer candidates are not ranked (the LP solves them whole); 0: always rank
    gate_candidates: int = 0
    # imitation and inference over the candidates within their job's fair share only (the
    # LP's size cap never uses the others)
    fair_share_inputs: bool = False
    # network and PPO
    hidden: int = 64
    # A keep decision is K Bernoulli bits whose log-probabilities add up, so the policy ratio
    # moves fast: small steps, and stop an update early past target_kl.
    learning_rate: float = 1e-5
    n_steps: int = 72
    batch_size: int = 24
    n_epochs: int = 4
    gamma: float = 0.99
    ent_coef: float = 0.0
    target_kl: float | None = 0.02
    normalize_reward: bool = True
    checkpoint_steps: int = 2048
    torch_threads: int = 1
    extra: dict = field(default_factory=dict)

    def __post_init__(self) -> None:
        if self.env not in ENVS:
            raise UnknownNameError("environment", self.env, list(ENVS))
        if self.algo not in ALGOS:
            raise UnknownNameError("algorithm", self.algo, list(ALGOS))
        if self.algo == "imitation" and self.env != "hsched/Rank-v0":
            raise ConfigError("imitation trains the ranker of hsched/Rank-v0", field="--algo")
        if self.fair_share_inputs and self.algo != "imitation":
            raise ConfigError("--fair-share-inputs needs --algo imitation (PPO's policy sees "
                              "every candidate)", field="--fair-share-inputs")
        if self.algo == "imitation" and not (self.imitation_seeds > 0 or self.regimes):
            raise ConfigError("imitation needs demonstrations: --imitation-seeds > 0 or "
                              "--regimes", field="--imitation-seeds")
        if self.regimes is not None:
            from agents.regimes import REGIMES
            if self.regimes not in REGIMES:
                raise UnknownNameError("regime mix", self.regimes, list(REGIMES))
        if self.target_recall is not None and not 0.0 < self.target_recall <= 1.0:
            raise ConfigError(f"must be in (0, 1], got {self.target_recall}",
                              field="--target-recall")
        if self.gate_candidates < 0:
            raise ConfigError(f"must be >= 0, got {self.gate_candidates}",
                              field="--gate-candidates")
        if self.algo == "maskable-ppo" and self.env != "hsched/Schedule-v0":
            raise ConfigError("maskable-ppo needs the Discrete action of hsched/Schedule-v0 "
                              "(Rank-v0's keep bits only mask empty slots: use ppo)",
                              field="--algo")
        for name in ("timesteps", "n_envs", "train_seeds", "n_steps", "batch_size"):
            if int(getattr(self, name)) < 1:
                raise ConfigError(f"must be >= 1, got {getattr(self, name)}",
                                  field=f"--{name.replace('_', '-')}")
        if self.train_seeds > TRAIN_SEED_RANGE[1] or self.imitation_seeds > TRAIN_SEED_RANGE[1]:
            raise ConfigError(f"training seeds must stay below {TRAIN_SEED_RANGE[1]}",
                              field="--train-seeds")

    @property
    def mode(self) -> str:
        return "rank" if self.env == "hsched/Rank-v0" else "select"

    def env_kwargs(self) -> dict:
        kw = {"cluster": self.cluster, "workload": self.workload,
              "job_candidates": self.job_candidates, "round_s": self.round_s,
              "lp_policy": self.lp_policy,
              "max_time_s": None if self.episode_hours is None else self.episode_hours * 3600}
        if self.mode == "rank":
            kw.update(slots=self.slots, keep_cost=self.keep_cost)
        return kw

    def run_dir(self) -> Path:
        name = self.logdir or f"runs/{self.env.split('/')[-1].lower()}-{self.algo}-{self.seed}"
        return Path(name)


class SeedCycle(gym.Wrapper):
    """Resets without a seed go through the training seeds in a shuffled cycle."""

    def __init__(self, env: gym.Env, seeds: list[int], rng_seed: int) -> None:
        super().__init__(env)
        self._rng = np.random.default_rng(rng_seed)
        self._seeds = list(seeds)
        self._queue: list[int] = []
        self.current_seed: int | None = None

    def reset(self, *, seed=None, options=None):
        if seed is None:
            if not self._queue:
                self._queue = list(self._rng.permutation(self._seeds))
            seed = int(self._queue.pop())
        self.current_seed = int(seed)
        return self.env.reset(seed=seed, options=options)


def make_env(config: TrainConfig, rank: int = 0):
    """Thunk for vector envs: the environment, its seed cycle and SB3's Monitor."""
    def thunk():
        from stable_baselines3.common.monitor import Monitor
        env = gym.make(config.env, **config.env_kwargs())
        env = SeedCycle(env, list(range(config.train_seeds)), rng_seed=config.seed * 1000 + rank)
        return Monitor(env)
    return thunk


def reference_return(config: TrainConfig, seed: int) -> float:
    """The LP reference's return on a training seed (one episode of ``reference_action``)."""
    env = gym.make(config.env, **config.env_kwargs()).unwrapped
    env.reset(seed=seed)
    total = 0.0
    while True:
        _, r, terminated, truncated, _ = env.step(env.reference_action())
        total += r
        if terminated or truncated:
            return total


def _episode_callback(config: TrainConfig):
    from stable_baselines3.common.callbacks import BaseCallback

    class EpisodeMetrics(BaseCallback):
        """Logs each finished episode's schedule metrics and its return against the LP."""

        def __init__(self, known: dict[int, float]) -> None:
            super().__init__()
            self.ref: dict[int, float] = dict(known)
            self.kept: dict[int, list] = {}
            self.episodes: list[dict] = []

        def _on_step(self) -> bool:
            infos = self.locals.get("infos", [])
            dones = self.locals.get("dones", np.zeros(len(infos), dtype=bool))
            for i, info in enumerate(infos):
                if "kept" in info and info.get("total"):
                    self.kept.setdefault(i, []).append(info["kept"] / info["total"])
                if not dones[i]:
                    continue
                m = info.get("metrics")
                if m is None or "episode" not in info:
                    continue
                ret = float(info["episode"]["r"])        # Monitor's raw return
                seed = int(info.get("episode_seed", -1))
                if seed not in self.ref:
                    self.ref[seed] = reference_return(config, seed)
                rec = {"seed": seed, "return": ret, "return_vs_lp":
                       ret / self.ref[seed] if self.ref[seed] else float("nan"),
                       "avg_jct_h": m["avg_jct_s"] / 3600, "makespan_h": m["makespan_s"] / 3600,
                       "decision_time_ms": m["decision_time_mean_s"] * 1e3,
                       "kept_fraction": float(np.mean(self.kept.pop(i, [np.nan])))}
                self.episodes.append(rec)
                for key in ("avg_jct_h", "makespan_h", "decision_time_ms", "return_vs_lp"):
                    if np.isfinite(rec[key]):
                        self.logger.record(f"episode/{key}", rec[key])
                if config.mode == "rank" and np.isfinite(rec["kept_fraction"]):
                    self.logger.record("episode/kept_fraction", rec["kept_fraction"])
            return True

    return EpisodeMetrics


def train(config: TrainConfig, progress: bool = True) -> dict:
    """Run the training described by ``config``; returns the summary (also saved)."""
    import torch as th
    from stable_baselines3 import PPO
    from stable_baselines3.common.callbacks import CallbackList, CheckpointCallback
    from stable_baselines3.common.vec_env import DummyVecEnv, SubprocVecEnv

    from agents.ranker import MaskableRankerPolicy, RankerPolicy, save_ranker

    th.set_num_threads(max(int(config.torch_threads), 1))
    th.manual_seed(config.seed)
    out = config.run_dir()
    out.mkdir(parents=True, exist_ok=True)
    (out / "config.json").write_text(json.dumps(dataclasses.asdict(config), indent=1))
    t_start = time.perf_counter()
    summary: dict = {"config": dataclasses.asdict(config)}

    imitation_net = None
    known_returns: dict[int, float] = {}
    if config.mode == "rank" and (config.imitation_seeds > 0 or config.regimes):
        imitation_net, record, returns = _imitation(config, out, progress)
        summary["imitation"] = record
        known_returns.update(returns)
    if config.algo == "imitation":
        # imitation is the method: the ranker is the cloned network at its operating point
        save_ranker(imitation_net, out / "ranker.pt", stage="imitation",
                    **_ranker_meta(config, summary["imitation"]))
        summary["total_s"] = time.perf_counter() - t_start
        (out / "summary.json").write_text(json.dumps(summary, indent=1, default=float))
        return summary

    vec_cls = SubprocVecEnv if config.n_envs > 1 else DummyVecEnv
    venv = vec_cls([make_env(config, i) for i in range(config.n_envs)])
    if config.normalize_reward:
        from stable_baselines3.common.vec_env import VecNormalize
        venv = VecNormalize(venv, norm_obs=False, norm_reward=True, gamma=config.gamma)
    common = dict(learning_rate=config.learning_rate, n_steps=config.n_steps,
                  batch_size=config.batch_size, n_epochs=config.n_epochs, gamma=config.gamma,
                  ent_coef=config.ent_coef, target_kl=config.target_kl, seed=config.seed,
                  verbose=0,
                  tensorboard_log=str(out / "tb"), policy_kwargs={"hidden": config.hidden})
    if config.algo == "maskable-ppo":
        from sb3_contrib import MaskablePPO
        model = MaskablePPO(MaskableRankerPolicy, venv, **common)
    elif config.mode == "rank":
        model = PPO(RankerPolicy, venv, **common)
    else:
        model = PPO("MultiInputPolicy", venv, **{**common, "policy_kwargs": {}})
    if imitation_net is not None:
        model.policy.ranker.load_state_dict(imitation_net.state_dict())
    episodes = _episode_callback(config)(known_returns)
    callbacks = CallbackList([
        CheckpointCallback(save_freq=max(config.checkpoint_steps // config.n_envs, 1),
                           save_path=str(out / "checkpoints"), name_prefix="model"),
        episodes])
    t0 = time.perf_counter()
    model.learn(total_timesteps=config.timesteps, callback=callbacks, progress_bar=progress,
                tb_log_name="ppo")
    summary["ppo_s"] = time.perf_counter() - t0
    model.save(out / "model.zip")
    if hasattr(model.policy, "ranker"):
        # the imitation network's operating point was measured before PPO changed it: not kept
        save_ranker(model.policy.ranker, out / "ranker.pt", stage="ppo",
                    timesteps=config.timesteps, **_ranker_meta(config, None))
    venv.close()
    summary["episodes"] = episodes.episodes
    summary["total_s"] = time.perf_counter() - t_start
    (out / "summary.json").write_text(json.dumps(summary, indent=1, default=float))
    return summary


def _imitation(config: TrainConfig, out: Path, progress: bool):
    """Collect the LP reference's keep bits (on the one scenario, or on every regime of
    ``config.regimes``), fit ``RankerNet`` to them, choose its operating point; returns
    ``(net, summary record, {seed: reference return})``."""
    from torch.utils.tensorboard import SummaryWriter

    from agents.imitation import Demos, behaviour_clone, collect_demos, evaluate_keep
    from agents.ranker import RankerNet, save_ranker
    from agents.regimes import REGIMES, Regime, recall_threshold

    if config.regimes:
        regimes = REGIMES[config.regimes]
    else:
        regimes = (Regime(config.cluster, config.workload, seeds=config.imitation_seeds,
                          rounds=config.imitation_rounds, slots=config.slots),)
    t0 = time.perf_counter()
    trains, valids, per_regime, returns = [], [], [], {}
    for reg in regimes:
        kw = {**config.env_kwargs(), "cluster": reg.cluster, "workload": reg.workload,
              "slots": reg.slots}
        env = gym.make(config.env, **kw)
        seeds = list(range(reg.seeds))
        demos = collect_demos(env, seeds, max_rounds=reg.rounds, progress=progress,
                              fair_share_only=config.fair_share_inputs)
        env.close()
        if len(regimes) == 1:
            returns.update(demos.returns)
        held = seeds[-max(1, len(seeds) // 8):]
        valid, train = demos.split(held)
        trains.append(train if len(train) else valid)
        valids.append(valid)
        per_regime.append({"cluster": reg.cluster, "workload": reg.workload,
                           "rounds": len(demos), "positive_fraction": demos.positive_fraction(),
                           "held_out_seeds": held})
    train_demos, valid_demos = Demos.merge(trains), Demos.merge(valids)
    collect_s = time.perf_counter() - t0
    writer = SummaryWriter(str(out / "tb" / "imitation"))
    net = RankerNet(hidden=config.hidden)
    history = behaviour_clone(
        net, train_demos, epochs=config.imitation_epochs, lr=config.imitation_lr,
        pos_weight=config.pos_weight, seed=config.seed, valid_demos=valid_demos,
        progress=progress,
        log_fn=lambda e, r: [writer.add_scalar(f"imitation/{k}", v, e)
                             for k, v in r.items() if k != "epoch"])
    record = {"rounds": len(train_demos) + len(valid_demos), "train_rounds": len(train_demos),
              "valid_rounds": len(valid_demos),
              "positive_fraction": Demos.merge([train_demos, valid_demos]).positive_fraction(),
              "collect_s": collect_s, "final": history[-1],
              "valid": evaluate_keep(net, valid_demos), "regimes": per_regime}
    if config.target_recall is not None:
        op = recall_threshold(net, valid_demos, config.target_recall)
        record["operating_point"] = op
        record["valid_at_operating_point"] = evaluate_keep(net, valid_demos, op["threshold"])
        writer.add_scalar("imitation/operating_threshold", op["threshold"], len(history))
        writer.add_scalar("imitation/operating_kept_fraction", op["kept_fraction"],
                          len(history))
    writer.close()
    save_ranker(net, out / "imitation_ranker.pt", stage="imitation",
                **_ranker_meta(config, record))
    return net, record, returns


def _ranker_meta(config: TrainConfig, imitation: dict | None) -> dict:
    """What a ranker file records of its training: scenario or regimes, operating point,
    gate."""
    meta = {"cluster": config.cluster, "workload": config.workload}
    if config.regimes:
        meta = {"regimes": config.regimes}
    op = (imitation or {}).get("operating_point")
    if op is not None:
        meta.update(threshold=op["threshold"], target_recall=op["target_recall"],
                    valid_recall=op["recall"], valid_kept_fraction=op["kept_fraction"])
    if config.gate_candidates:
        meta["gate_candidates"] = int(config.gate_candidates)
    if config.fair_share_inputs and imitation is not None:
        meta["inputs"] = "within-fair-share"
    return meta
