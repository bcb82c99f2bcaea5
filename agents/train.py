"""``hsched train``: train an agent on any registered ``hsched/Rank-*`` or ``hsched/Schedule-*``
id with SB3.

One ``TrainConfig`` holds every hyper-parameter; it is saved with the run (``config.json``).
Its values come, in increasing precedence, from the ``TrainConfig`` defaults, an entry of a
hyper-parameter file (rl-zoo style YAML, ``agents/hyperparams/<algo>[_mlp].yml`` by default:
``read_hyperparams``, ``config_fields``) and the command line.

**Scenario.** Training runs on the chosen id's registered scenario (cluster, workload, K
slots, step limit, ``max_time_s``): ``hsched train --env hsched/Schedule-Tiny-v0`` trains on
Tiny. ``cluster`` / ``workload`` / ``slots`` / ``episode_hours`` ... override it only when set
(``TrainConfig.env_kwargs`` holds the overrides only, ``scenario()`` the resolved scenario).

**Run directory.** ``--logdir``; by default ``runs/<id>-<algo>-<policy>-s<seed>-<date-time>``
(a new, unique folder per run). An explicit existing non-empty ``--logdir`` is refused unless
``overwrite`` (``--overwrite``), which first deletes the files a previous run wrote there
(``RUN_ARTIFACTS``; other files are left alone). It gets:

* ``tb/`` — one TensorBoard run: SB3's own scalars (``rollout/``, ``train/``, ``time/``), the
  hyper-parameters (HPARAMS tab, SB3's ``HParam``), per finished episode ``episode/return``,
  ``episode/avg_jct_h``, ``episode/makespan_h``, ``episode/decision_time_ms``,
  ``episode/kept_fraction`` (rank mode), ``episode/lp_return``, ``episode/random_return``,
  ``episode/normalized_score`` ((return − random's) ÷ (LP's − random's): 0 = random, 1 = the
  LP) and ``episode/return_vs_lp`` — the episode's return ÷ the LP reference's return on the
  same seed (1.0 = as good as the LP; the references are run once per training seed and
  cached, within ``reference_budget`` of the training time: with many seeds, some episodes go
  without); ``imitation/`` curves for the warm start; the figure ``figures/returns`` (episode
  return against the LP's and random's on the same seeds, also written as ``returns.png``);
* ``checkpoints/`` — SB3 checkpoints every ``checkpoint_steps`` (2,048 by default) with,
  under ``normalize_reward``, the reward normaliser's statistics beside each;
* ``model.zip`` (SB3) and, under ``normalize_reward``, ``vecnormalize.pkl`` (SB3's
  ``VecNormalize`` statistics: continuing the training in SB3 needs both; ``hsched train``
  itself has no resume), ``ranker.pt`` (an equivariant policy's network alone,
  loadable on any cluster and K: a rank-mode one with ``agents.ranker.Ranker.load``, a
  select-mode one with ``load_ranker_net``), ``imitation_ranker.pt``
  (after the warm start, before PPO), ``config.json``, ``summary.json`` (with
  ``environment``: Python, machine, processor, library versions; ``agents.provenance``).

**Steps.** ``timesteps`` bounds the RL environment steps: the rollout length is cut to fit a
short run (``n_steps ≤ timesteps / n_envs``) and learning stops at ``timesteps`` (a last,
partial rollout is not trained on). The imitation warm start (rank mode, equivariant policy)
is separate: ``imitation_seeds`` LP episodes of at most ``imitation_rounds`` rounds, announced
before it starts.

**Policies.** ``policy="equivariant"`` (default): the project's permutation-equivariant
``RankerPolicy`` (PPO on Rank), ``MaskableRankerPolicy`` (MaskablePPO on Schedule) or
``SelectRankerPolicy`` (PPO on Schedule: the same network with a commit logit; slots that are
not valid get a logit of −20, so it masks through the observation). ``policy="mlp"``: SB3's
``"MultiInputPolicy"`` (``policy_kwargs`` go to it).

Rank mode (the ranker): warm start by imitation of the LP reference on training seeds
(``agents.imitation``), then PPO on the end-to-end reward. ``algo="imitation"`` stops after the
warm start.

Seeds: training episodes use seeds from ``TRAIN_SEED_RANGE`` only (the evaluation harness
draws its held-out seeds outside it).

**Baselines** (``BASELINES``, ``baseline_actor``, ``run_episode``): ``random`` (Schedule:
uniform over the valid actions; Rank: a fair coin per valid slot), ``unmasked-random``
(Schedule: uniform over every action), ``greedy`` (Schedule: the first valid slot until none
is valid, then commit), ``keep-all`` (Rank: keep every valid slot) and ``lp``
(``env.reference_action()``); ``scripts/rl_baselines.py`` tabulates them.
"""

from __future__ import annotations

import dataclasses
import inspect
import json
import logging
import math
import os
import sys
import time
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path

import gymnasium as gym
import numpy as np

import hsched_env  # noqa: F401  (registers the environments, also in subprocesses)
from hsched_env.envs.base import MAX_SLOTS
from hsched_env.files import usable_path, value_error_text, yaml_error, yaml_key_lines
from hsched_env.errors import (ConfigError, UnknownNameError, decimal_float, is_real_number,
                               is_switch_value, is_whole_number)
from hsched_env.registration import VARIANT_IDS, variant
from hsched_env.text import counted

log = logging.getLogger(__name__)

#: Training seeds live in [0, 10_000); evaluation seeds are drawn elsewhere.
TRAIN_SEED_RANGE = (0, 10_000)
#: Every registered id (``hsched_env.registration``).
ENVS = VARIANT_IDS
ALGOS = ("ppo", "maskable-ppo", "imitation")
#: ``imitation_weighting`` values (``agents.imitation.LOSS_WEIGHTINGS``, named here so that
#: checking a config does not import torch).
IMITATION_WEIGHTINGS = ("round", "candidate")
POLICIES = ("equivariant", "mlp")
#: The shipped hyper-parameter files (``<algo>.yml``, ``<algo>_mlp.yml``; rl-zoo style).
HYPERPARAMS_DIR = Path(__file__).resolve().parent / "hyperparams"
#: What a run writes into its directory (``overwrite`` deletes these, nothing else).
RUN_ARTIFACTS = ("tb", "checkpoints", "model.zip", "vecnormalize.pkl", "ranker.pt",
                 "imitation_ranker.pt", "config.json", "summary.json", "returns.png",
                 "imitation.png")


def _holds_a_run(folder: Path) -> bool:
    """Whether ``folder`` holds a training run: its ``config.json`` is one (a ``TrainConfig``:
    written first, so an interrupted run has it too). Files named like a run's that are not
    one (a user's ``config.json``, an evaluation's ``tb/``) are not, and ``--overwrite``
    deletes nothing there."""
    try:
        config = json.loads((folder / "config.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return False
    return isinstance(config, dict) and {"env", "algo", "timesteps"} <= set(config)


#: Hyper-parameter file keys that name a ``TrainConfig`` field differently (rl-zoo's names).
HYPERPARAM_ALIASES = {"n_timesteps": "timesteps", "normalize": "normalize_reward"}
#: ``policy:`` values a hyper-parameter file may give, and what they mean here.
POLICY_ALIASES = {"equivariant": "equivariant", "RankerPolicy": "equivariant",
                  "MaskableRankerPolicy": "equivariant", "SelectRankerPolicy": "equivariant",
                  "mlp": "mlp", "MultiInputPolicy": "mlp"}
#: Fields a hyper-parameter entry may not set (they say what and where to train).
NOT_HYPERPARAMS = ("env", "algo", "logdir", "hyperparams", "extra")
#: Training seeds whose references are always computed (the budget applies beyond them).
REFERENCE_FREE_SEEDS = 8
#: ``policy_kwargs["activation_fn"]`` names (a file holds no code).
ACTIVATIONS = {"tanh": "Tanh", "relu": "ReLU", "elu": "ELU", "leaky_relu": "LeakyReLU"}


@dataclass
class TrainConfig:
    """Every setting of a training run (saved as ``config.json``).

    ``None`` for a scenario field means "the registered id's" (see ``env_kwargs``).
    """

    env: str = "hsched/Rank-v0"
    algo: str | None = None                     # None: ppo (Rank), maskable-ppo (Schedule)
    policy: str = "equivariant"                 # or "mlp" (SB3's MultiInputPolicy)
    timesteps: int = 1008                       # RL environment steps (imitation: not used)
    n_envs: int = 1
    seed: int = 0
    logdir: str | None = None
    # scenario: None = the registered id's
    cluster: str | None = None
    workload: str | None = None
    slots: int | None = None                    # K, the environment's candidate slots
    job_candidates: int | None = None
    round_s: float | None = None
    episode_hours: float | None = None          # truncate training episodes (0: to the end)
    train_seeds: int = 8                        # episodes cycle over seeds 0..train_seeds-1
    keep_cost: float | None = None
    lp_policy: str | None = None
    # warm start by imitation (rank mode)
    imitation_seeds: int = 8
    imitation_rounds: int = 36                  # rounds recorded per seed
    imitation_epochs: int = 30
    imitation_lr: float = 1e-3
    pos_weight: float = 3.0
    # "round": every demonstration round weighs the same in the loss; "candidate": every
    # candidate (the weighting before 2026-12-03; agents.imitation.behaviour_clone)
    imitation_weighting: str = "round"
    # batches of rounds of similar sizes: each pool of this many batches is sorted by round
    # size before it is cut (less padding, ~1.8x faster on the mixed regimes); 0: random
    # batches (before 2026-12-04; agents.imitation.batches)
    imitation_sort_pool: int = 8
    # simulated-time horizon of the demonstration episodes of ``regimes``
    imitation_hours: float | None = 3.0
    # imitation over a mix of regimes (``agents.regimes.REGIMES``; None: the one scenario)
    regimes: str | None = None
    # the ranker's operating point: the keep threshold reaching this recall of the LP's
    # support on held-out rounds (None: keep probability > ½)
    target_recall: float | None = None
    # with ``target_recall``: the operating point the saved file uses by default, one of
    # ``agents.regimes.RECALL_LADDER`` or ``target_recall`` (None: ``target_recall``).
    # DAgger's episodes are still driven at ``target_recall``, so the weights do not depend
    # on it; only which of the file's operating points is its main one.
    operating_recall: float | None = None
    # with ``target_recall``: one threshold per band of round size (candidates), these the
    # bands' lower edges after 0, e.g. (1000, 10000); () one threshold for every round
    threshold_bands: tuple = ()
    # rounds with fewer candidates are not ranked (the LP solves them whole); 0: always rank
    gate_candidates: int = 0
    # rounds in which the ranker would keep more than this share of the candidates are
    # solved whole (None: the ranker's default, agents.ranker.DEFAULT_MAX_KEPT_FRACTION;
    # 1: no unsure gate)
    max_kept_fraction: float | None = None
    # the ranker file's audits by default (agents.ranker.Ranker's audit_every: the first
    # round it would prune and every N-th after it solved whole and checked; 0: none)
    audit_every: int = 0
    # imitation: DAgger iterations after the first fit — collect again on the same regimes
    # and seeds with the fitted ranker driving (the LP labels every round), add those rounds,
    # fit anew on all of them (0: the LP's own trajectories only)
    dagger: int = 0
    # imitation and inference over the candidates within their job's fair share only (for
    # an LP with the size cap, fair-srpt, which never uses the others)
    fair_share_inputs: bool = False
    # what the kept candidates restrict (RankEnv's ``prune``: "all", or "lp" — the LP solve
    # only, the rounding's repair and fallbacks see every candidate; None: the id's, "all")
    prune: str | None = None
    # imitation: score each candidate against its job's others (RankerNet's job_context)
    job_context: bool = False
    # network and PPO
    hidden: int = 64
    # rank mode, equivariant policy: every candidate's keep probability at the start of PPO
    # (the bias of the network's last layer; None: ½). A deterministic Bernoulli policy keeps
    # a candidate iff its probability > ½: from ½, small changes drop whole jobs.
    init_keep_prob: float | None = None
    policy_kwargs: dict = field(default_factory=dict)   # extra SB3 policy arguments
    # A keep decision is K Bernoulli bits whose log-probabilities add up, so the policy ratio
    # moves fast: small steps, and stop an update early past target_kl.
    learning_rate: float | str = 1e-5           # or "lin_<v>": linear decay from v to 0
    n_steps: int = 72
    batch_size: int = 24
    n_epochs: int = 4
    gamma: float = 0.99
    gae_lambda: float = 0.95
    ent_coef: float = 0.0
    vf_coef: float = 0.5
    clip_range: float | str = 0.2
    max_grad_norm: float = 0.5
    target_kl: float | None = 0.02
    normalize_reward: bool = True
    checkpoint_steps: int = 2048
    torch_threads: int = 1
    # CPU-independent arithmetic (``agents.portable_math``): the same weights from the same
    # command on any x86-64 CPU with AVX2, at ~1.3x the time of behaviour cloning
    portable_math: bool = False
    # the LP's and random's return per training seed (return_vs_lp, the returns figure),
    # cached per seed; a new seed's are computed while they have taken less than
    # ``reference_budget`` of the training time so far (after the first 8 seeds; 1: every
    # episode's)
    references: bool = True
    reference_budget: float = 0.1
    progress_every_s: float = 15.0              # progress lines when stderr is not a TTY
    hyperparams: str | None = None              # where the values came from (a record)
    extra: dict = field(default_factory=dict)

    def __post_init__(self) -> None:
        _check_field_types(self)
        if self.slots is not None and self.slots > MAX_SLOTS:
            raise ConfigError(f"must be at most {MAX_SLOTS:,} (the environments' most "
                              f"candidate slots), got {self.slots:,}", field="--slots")
        if self.env not in ENVS:
            raise UnknownNameError("environment", self.env, list(ENVS))
        if self.algo is None:
            self.algo = "ppo" if self.mode == "rank" else "maskable-ppo"
        if self.algo not in ALGOS:
            raise UnknownNameError("algorithm", self.algo, list(ALGOS))
        self.policy = POLICY_ALIASES.get(self.policy, self.policy)
        if self.workload is not None:
            from agents.suites import is_fixed_generated
            if is_fixed_generated(self.workload):
                # every episode would replay one job list: the training seeds draw new ones
                raise ConfigError(f"the training seeds are added to the workload; remove seed= "
                                  f"from {self.workload!r}", field="--workload")
        if self.policy not in POLICIES:
            raise UnknownNameError("policy", self.policy, list(POLICIES), field="--policy")
        if self.algo == "imitation" and self.mode != "rank":
            raise ConfigError("imitation trains the ranker of hsched/Rank-*", field="--algo")
        if self.algo == "imitation" and self.policy != "equivariant":
            raise ConfigError("imitation fits the equivariant ranker (--policy equivariant)",
                              field="--policy")
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
        for flag, given in (("--regimes", self.regimes is not None),
                            ("--target-recall", self.target_recall is not None)):
            if given and not self.imitates:
                raise self.not_imitated(flag)
        if self.portable_math:
            from agents.portable_math import check_environment
            check_environment()
            if self.torch_threads != 1:
                raise ConfigError(f"portable arithmetic is defined on one PyTorch thread; "
                                  f"torch_threads is {self.torch_threads}",
                                  field="--portable-math")
        if self.keep_cost is not None and self.mode != "rank":
            raise ConfigError(f"is the price of kept candidates in hsched/Rank-*'s reward; "
                              f"{self.env} trains a select-mode agent", field="--keep-cost")
        if self.imitates and self.regimes is None and self.imitation_seeds == 1:
            raise ConfigError("needs at least 2 (the last seeds are held out for the recall "
                              "and the operating point; with 1 they would be the training "
                              "rounds themselves), or 0 for no warm start",
                              field="--imitation-seeds")
        if self.job_context and self.algo != "imitation":
            raise ConfigError("--job-context needs --algo imitation (SB3's policies see the "
                              "flat observation, without the candidates' jobs)",
                              field="--job-context")
        if self.prune is not None:
            from hsched_env.envs.rank import PRUNE_SCOPES
            if self.mode != "rank":
                raise ConfigError("--prune is an argument of hsched/Rank-*", field="--prune")
            if self.prune == "lp" and self.algo != "imitation":
                # keeping nothing costs no keep_cost there and the repair still schedules:
                # a reward-driven policy can collapse to the repair's greedy schedule
                raise ConfigError("--prune lp needs --algo imitation (the reward does not "
                                  "price what the rounding's repair places)", field="--prune")
            if self.prune not in PRUNE_SCOPES:
                raise UnknownNameError("prune scope", self.prune, list(PRUNE_SCOPES),
                                       field="--prune")
        if isinstance(self.imitation_sort_pool, bool) \
                or not isinstance(self.imitation_sort_pool, (int, np.integer)) \
                or self.imitation_sort_pool < 0:
            raise ConfigError(f"must be a whole number >= 0, got {self.imitation_sort_pool!r}",
                              field="imitation_sort_pool")
        self.imitation_sort_pool = int(self.imitation_sort_pool)
        if self.imitation_weighting not in IMITATION_WEIGHTINGS:
            raise UnknownNameError("imitation weighting", self.imitation_weighting,
                                   list(IMITATION_WEIGHTINGS), field="imitation_weighting")
        if self.target_recall is not None and not 0.0 < self.target_recall <= 1.0:
            raise ConfigError(f"must be in (0, 1], got {self.target_recall}",
                              field="--target-recall")
        if self.operating_recall is not None:
            from agents.regimes import RECALL_LADDER
            if self.target_recall is None or self.algo != "imitation":
                raise ConfigError("--operating-recall needs --algo imitation and "
                                  "--target-recall (it picks one of the operating points "
                                  "imitation chooses)", field="--operating-recall")
            offered = sorted(set(RECALL_LADDER) | {self.target_recall})
            if not any(abs(self.operating_recall - r) < 1e-9 for r in offered):
                raise ConfigError(f"must be one of the recalls training chooses operating "
                                  f"points for ({', '.join(f'{r:g}' for r in offered)}), "
                                  f"got {self.operating_recall}", field="--operating-recall")
        if isinstance(self.threshold_bands, str):
            text = self.threshold_bands.replace(" ", "")
            self.threshold_bands = text.split(",") if text else []
            if "" in self.threshold_bands:
                raise ConfigError(f"an empty entry in {self.threshold_bands!r} (a stray "
                                  f"comma?); expected whole candidate counts like 1000,10000",
                                  field="--threshold-bands")
        elif not isinstance(self.threshold_bands, (list, tuple)):
            self.threshold_bands = [self.threshold_bands]       # one edge (or None)
        self.threshold_bands = tuple(e for e in self.threshold_bands if e is not None)
        if self.threshold_bands:
            edges = []
            for e in self.threshold_bands:
                if isinstance(e, str) and e.isascii() and e.isdecimal():
                    e = int(e)
                if isinstance(e, bool) or not isinstance(e, (int, np.integer)):
                    raise ConfigError(f"expected whole candidate counts like 1000,10000, got "
                                      f"{self.threshold_bands!r}", field="--threshold-bands")
                edges.append(int(e))
            edges = tuple(edges)
            if any(e <= 0 for e in edges) or any(b <= a for a, b in zip(edges, edges[1:])):
                raise ConfigError(f"band edges must be positive and increasing, got "
                                  f"{list(edges)}", field="--threshold-bands")
            if self.target_recall is None:
                raise ConfigError("--threshold-bands needs --target-recall (each band's "
                                  "threshold is chosen for that recall)",
                                  field="--threshold-bands")
            self.threshold_bands = edges
        if isinstance(self.dagger, bool) or not isinstance(self.dagger, (int, np.integer)) \
                or self.dagger < 0:
            raise ConfigError(f"must be a whole number >= 0, got {self.dagger!r}",
                              field="--dagger")
        self.dagger = int(self.dagger)
        if self.dagger and not self.warm_imitation:
            raise ConfigError("--dagger iterates the imitation of the equivariant ranker "
                              "(hsched/Rank-*, --algo imitation or its warm start)",
                              field="--dagger")
        for name, given in (("--gate-candidates", self.gate_candidates),
                            ("--max-kept-fraction", self.max_kept_fraction is not None),
                            ("--audit-every", self.audit_every)):
            if given and self.mode != "rank":
                raise ConfigError(f"is recorded in a rank-mode ranker file (hsched/Rank-*); "
                                  f"{self.env} trains a select-mode agent", field=name)
        if self.algo == "maskable-ppo" and self.mode != "select":
            raise ConfigError("maskable-ppo needs the Discrete action of hsched/Schedule-* "
                              "(Rank's keep bits only mask empty slots: use ppo)",
                              field="--algo")
        for name in ("timesteps", "n_envs", "train_seeds", "n_steps", "batch_size",
                     "n_epochs"):
            if int(getattr(self, name)) < 1:
                raise ConfigError(f"must be >= 1, got {getattr(self, name)}",
                                  field=f"--{name.replace('_', '-')}")
        if self.imitation_seeds < 0:
            raise ConfigError(f"must be >= 0, got {self.imitation_seeds}",
                              field="--imitation-seeds")
        if self.train_seeds > TRAIN_SEED_RANGE[1] or self.imitation_seeds > TRAIN_SEED_RANGE[1]:
            raise ConfigError(f"training seeds must stay below {TRAIN_SEED_RANGE[1]}",
                              field="--train-seeds")
        if self.episode_hours is not None and not self.episode_hours >= 0:
            raise ConfigError(f"must be >= 0 (0: no limit), got {self.episode_hours}",
                              field="--episode-hours")
        if not 0.0 < self.gamma <= 1.0:
            raise ConfigError(f"must be in (0, 1], got {self.gamma}", field="--gamma")
        if not 0.0 <= self.gae_lambda <= 1.0:
            raise ConfigError(f"must be in [0, 1], got {self.gae_lambda}", field="gae_lambda")
        for name in ("learning_rate", "clip_range"):
            _schedule(getattr(self, name), name)          # validates "lin_<v>" / numbers
        if self.init_keep_prob is not None and not (0.0 < self.init_keep_prob < 1.0
                                                    and self.mode == "rank"
                                                    and self.policy == "equivariant"):
            raise ConfigError(f"init_keep_prob is a probability in (0, 1) of the equivariant "
                              f"Rank policy, got {self.init_keep_prob!r}",
                              field="init_keep_prob")
        if not isinstance(self.policy_kwargs, dict):
            raise ConfigError(f"must be a mapping, got {self.policy_kwargs!r}",
                              field="policy_kwargs")
        _check_policy_kwargs(self.policy_kwargs, self.policy)
        self._check_set_values()
        if self.max_kept_fraction is not None:
            from agents.ranker import check_max_kept_fraction
            self.max_kept_fraction = check_max_kept_fraction(self.max_kept_fraction,
                                                             "--max-kept-fraction")

    #: Fields that only ``--set`` (or a hyper-parameter file) reaches, with their bounds:
    #: whole numbers >= the bound, and numbers > (strict) or >= the bound.
    _WHOLE_AT_LEAST = {"imitation_rounds": 1, "imitation_epochs": 1, "imitation_sort_pool": 0,
                       "gate_candidates": 0, "audit_every": 0, "hidden": 1,
                       "checkpoint_steps": 1,
                       "torch_threads": 1}
    _NUMBER_ABOVE = {"imitation_lr": (0.0, True), "pos_weight": (0.0, True),
                     "ent_coef": (0.0, False), "vf_coef": (0.0, False),
                     "max_grad_norm": (0.0, True), "reference_budget": (0.0, False),
                     "progress_every_s": (0.0, False)}

    def _check_set_values(self) -> None:
        """The ``--set`` fields above: a wrong type or an out-of-range value is a
        ``ConfigError`` naming the key (it used to fail deep inside training, after the
        demonstrations had been collected, or train a ``hidden=0`` network)."""
        def number(v) -> bool:
            return not isinstance(v, bool) and isinstance(v, (int, float, np.number))

        for name, low in self._WHOLE_AT_LEAST.items():
            v = getattr(self, name)
            if isinstance(v, bool) or not isinstance(v, (int, np.integer)) or v < low:
                field_name = (_option(name) if name in ("gate_candidates", "audit_every")
                              else name)
                raise ConfigError(f"must be a whole number >= {low}, got {v!r}",
                                  field=field_name)
            setattr(self, name, int(v))             # a plain int in config.json
        for name, (low, strict) in self._NUMBER_ABOVE.items():
            v = getattr(self, name)
            if not (number(v) and math.isfinite(v) and (v > low if strict else v >= low)):
                raise ConfigError(f"must be a number {'>' if strict else '>='} {low:g}, "
                                  f"got {v!r}", field=name)
            setattr(self, name, float(v))
        kl = self.target_kl
        if kl is not None:
            if not (number(kl) and math.isfinite(kl) and kl > 0):
                raise ConfigError(f"must be a number > 0 or null, got {kl!r}",
                                  field="target_kl")
            self.target_kl = float(kl)
        hours = self.imitation_hours
        if hours is not None and not (number(hours) and math.isfinite(hours) and hours >= 0):
            # the --regimes demonstrations' horizon (0 or null: to the episodes' end); a
            # negative one used to fail after the run folder was written, naming max_time_s
            raise ConfigError(f"must be a number >= 0 (hours; 0 or null: no limit) or null, "
                              f"got {hours!r}", field="imitation_hours")

    @property
    def mode(self) -> str:
        return "rank" if variant(self.env).env == "Rank" else "select"

    @property
    def imitates(self) -> bool:
        """Whether this run can imitate the LP: the equivariant ranker of hsched/Rank-*
        (``--algo imitation``, or PPO's warm start)."""
        return self.mode == "rank" and self.policy == "equivariant"

    @property
    def warm_imitation(self) -> bool:
        """Whether it does: it imitates and has demonstrations (imitation seeds or regimes)."""
        return self.imitates and bool(self.imitation_seeds > 0 or self.regimes)

    def not_imitated(self, flag: str) -> ConfigError:
        """The error for ``flag``, an argument of the imitation this run does not do."""
        return ConfigError(f"is an argument of the equivariant ranker's imitation "
                           f"(hsched/Rank-* with --policy equivariant); {self.env} with "
                           f"--policy {self.policy} has none", field=flag)

    def env_kwargs(self) -> dict:
        """The arguments that override the registered id's scenario (only those set)."""
        kw = {k: getattr(self, k) for k in ("cluster", "workload", "slots", "job_candidates",
                                            "round_s", "lp_policy")
              if getattr(self, k) is not None}
        if self.episode_hours is not None:
            kw["max_time_s"] = self.episode_hours * 3600 if self.episode_hours > 0 else None
        if self.mode == "rank" and self.keep_cost is not None:
            kw["keep_cost"] = self.keep_cost
        if self.prune is not None:
            kw["prune"] = self.prune
        return kw

    def scenario(self) -> dict:
        """The scenario training runs on: the registered id's with ``env_kwargs`` applied
        (cluster, workload, slots, max_time_s, max_episode_steps)."""
        cached = self.__dict__.get("_scenario")
        if cached is None:
            env = gym.make(self.env, **self.env_kwargs())
            u = env.unwrapped
            cached = {"env": self.env, "cluster": u.cluster.name, "workload": u.workload_spec,
                      "slots": int(u.K), "max_time_s": u.sim_config.max_time_s,
                      "max_episode_steps": env.spec.max_episode_steps if env.spec else None,
                      "overrides": self.env_kwargs()}
            env.close()
            self.__dict__["_scenario"] = cached
        return cached

    def default_run_dir(self) -> Path:
        """``runs/<id>-<algo>-<policy>-s<seed>-<date-time>`` (``prepare_run_dir`` makes it
        unique)."""
        short = self.env.split("/")[-1].lower()
        stamp = datetime.now().strftime("%Y%m%d-%H%M%S")
        return Path("runs") / f"{short}-{self.algo}-{self.policy}-s{self.seed}-{stamp}"

    def run_dir(self) -> Path:
        """The run directory: ``logdir`` (``prepare_run_dir`` sets it), else the default."""
        return Path(self.logdir) if self.logdir else self.default_run_dir()


# ---------------------------------------------------------------------------- hyper-parameters
def default_hyperparams_file(algo: str, policy: str | None = None) -> Path | None:
    """The shipped file for ``algo`` and ``policy``: ``agents/hyperparams/ppo.yml``,
    ``maskable_ppo.yml`` (equivariant policies) and ``ppo_mlp.yml``, ``maskable_ppo_mlp.yml``
    (SB3's MultiInputPolicy); ``None`` for ``imitation`` (its settings are flags)."""
    if algo == "imitation":
        return None
    name = algo.replace("-", "_") + ("_mlp" if POLICY_ALIASES.get(policy or "") == "mlp"
                                     else "")
    return HYPERPARAMS_DIR / f"{name}.yml"


def read_hyperparams(path: str | Path) -> dict[str, dict]:
    """A hyper-parameter file: top-level keys are env ids, values that id's settings."""
    import yaml
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
        data = yaml.safe_load(text)
        lines = yaml_key_lines(text)      # a key given twice, a number not as written: refused
    except OSError as exc:
        raise ConfigError(f"cannot read {str(path)!r}: {exc.strerror or exc}",
                          field="--hyperparams") from None
    except yaml.YAMLError as exc:
        raise yaml_error(exc, str(path)) from None
    except ConfigError as exc:
        raise ConfigError(exc.reason, source=str(path), field=exc.field,
                          line=exc.line) from None
    except UnicodeDecodeError as exc:
        raise ConfigError(f"file is not valid UTF-8 (a byte 0x{exc.object[exc.start]:02x} at "
                          f"offset {exc.start})", source=str(path)) from None
    except ValueError as exc:     # a value YAML could not build: too many digits, a bad date
        raise ConfigError(f"invalid YAML: {value_error_text(exc)}", source=str(path)) from None
    except RecursionError:
        raise ConfigError("invalid YAML: nested too deeply", source=str(path)) from None
    if data is None:
        return {}
    if not isinstance(data, dict):
        raise ConfigError("a hyper-parameter file maps env ids to settings", source=str(path))
    for key, value in data.items():
        if key not in ENVS:
            # a misspelt id would leave the intended one on the defaults without a word
            raise UnknownNameError("environment id", str(key), list(ENVS), source=str(path),
                                   field=str(key), line=lines.get(f"{key}:key"))
        if not isinstance(value, dict):
            raise ConfigError("an entry is a mapping of hyper-parameters",
                              source=str(path), field=str(key))
    return data


def config_fields(entry: dict, source: str = "hyperparams") -> dict:
    """``TrainConfig`` fields from one entry of a hyper-parameter file (rl-zoo's names:
    ``n_timesteps``, ``policy``, ``normalize``, ``policy_kwargs`` ... and any
    ``TrainConfig`` field). ``policy_kwargs.hidden`` is the equivariant network's width."""
    types = {f.name: str(f.type) for f in dataclasses.fields(TrainConfig)
             if f.name not in NOT_HYPERPARAMS}
    names = set(types)
    out: dict = {}
    keys_of: dict[str, str] = {}
    for key, value in entry.items():
        name = HYPERPARAM_ALIASES.get(key, key)
        if name not in names:
            raise UnknownNameError("hyper-parameter", key,
                                   sorted(names | set(HYPERPARAM_ALIASES)), source=source)
        sets = [name]
        if name == "policy_kwargs" and isinstance(value, dict) and "hidden" in value:
            sets.append("hidden")                   # policy_kwargs.hidden is hidden
        for one in sets:
            if one in keys_of:
                raise ConfigError(f"{keys_of[one]!r} and {key!r} set the same value: give one",
                                  source=source, field=str(key))
            keys_of[one] = str(key) if one == name else f"{key}.hidden"
        if isinstance(value, str) and ("float" in types[name] or "int" in types[name]):
            value = _number(value, "int" in types[name] and "float" not in types[name])
        if name == "policy":
            if value not in POLICY_ALIASES:
                raise UnknownNameError("policy", str(value), list(POLICY_ALIASES),
                                       source=source, field="policy")
            value = POLICY_ALIASES[value]
        if name == "normalize_reward" and isinstance(value, dict):
            value = bool(value.get("norm_reward", True))
        if name == "policy_kwargs":
            if not isinstance(value, dict):
                raise ConfigError("policy_kwargs is a mapping (no code: activation_fn by "
                                  "name)", source=source, field="policy_kwargs")
            value = dict(value)
            if "hidden" in value:
                hidden = value.pop("hidden")
                if not (is_whole_number(hidden) and hidden >= 1):
                    raise ConfigError(f"must be a whole number >= 1 (the equivariant "
                                      f"network's width), got {hidden!r}", source=source,
                                      field="policy_kwargs.hidden")
                out["hidden"] = int(hidden)
        out[name] = value
    return out


#: The episodes the progress line and the final summary average over (the last ones).
LAST_EPISODES = 10


#: The ``policy_kwargs`` each policy reads (the equivariant network's width is ``hidden``,
#: taken out of ``policy_kwargs`` into its own field; SB3's ``MultiInputPolicy``: these).
POLICY_KWARGS = {"equivariant": ("optimizer_kwargs", "ortho_init"),
                 "mlp": ("net_arch", "activation_fn", "ortho_init", "share_features_extractor",
                         "optimizer_kwargs", "features_extractor_kwargs", "normalize_images",
                         "log_std_init")}


def _nested_keywords(key: str) -> tuple[str, tuple[str, ...]]:
    """What ``policy_kwargs.<key>`` is passed to, and the keywords it takes: the optimizer
    (Adam, SB3's; its learning rate is ``learning_rate``) or SB3's extractor of ``Dict``
    observations (``CombinedExtractor``, the ``mlp`` policy's)."""
    if key == "optimizer_kwargs":
        import torch
        what, fn, given = "the optimizer (torch.optim.Adam)", torch.optim.Adam, {"params", "lr"}
    else:
        from stable_baselines3.common.torch_layers import CombinedExtractor
        what, fn, given = ("SB3's CombinedExtractor", CombinedExtractor,
                           {"observation_space"})
    names = [n for n in inspect.signature(fn.__init__).parameters if n != "self"]
    return what, tuple(n for n in names if n not in given)


def _check_optimizer_values(kwargs: dict, field_name: str) -> None:
    """``optimizer_kwargs``' values, as the optimizer takes them (made once on a stand-in
    parameter: ``{eps: abc}`` failed in SB3 after the run folder was written)."""
    import torch
    try:
        torch.optim.Adam([torch.zeros(1, requires_grad=True)], **kwargs)
    except Exception as exc:                     # noqa: BLE001 (torch's own words)
        raise ConfigError(f"the optimizer (torch.optim.Adam) refuses {kwargs!r}: "
                          f"{type(exc).__name__}: {exc}", field=field_name) from None


def _check_policy_kwargs(kwargs: dict, policy: str) -> None:
    """A ``ConfigError`` naming ``policy_kwargs.<key>`` for a key ``policy`` does not read
    (SB3 would fail on it after the run folder was written, or ignore it) or a value of the
    wrong kind: ``net_arch`` a list of layer widths (or ``{pi: [...], vf: [...]}``),
    ``activation_fn`` one of ``ACTIVATIONS`` by name, the switches True or False."""
    allowed = POLICY_KWARGS.get(policy, ())
    for key, value in kwargs.items():
        field_name = f"policy_kwargs.{key}"
        if key not in allowed:
            reads = f"reads {', '.join(allowed)}" + (
                " (its width is hidden, --hidden)" if policy == "equivariant" else "")
            raise ConfigError(f"the {policy} policy does not take {key!r}; it {reads}",
                              field=field_name)
        if key == "net_arch":
            layers = value.values() if isinstance(value, dict) else [value]
            if isinstance(value, dict) and not set(value) <= {"pi", "vf"}:
                raise ConfigError(f"takes the keys pi and vf, got {sorted(value)}",
                                  field=field_name)
            if not all(isinstance(w, list) and all(is_whole_number(n) and n >= 1 for n in w)
                       for w in layers):
                raise ConfigError(f"must be a list of layer widths (whole numbers >= 1), or "
                                  f"{{pi: [...], vf: [...]}}, got {value!r}", field=field_name)
        elif key == "activation_fn":
            if value not in ACTIVATIONS:
                raise UnknownNameError("activation_fn", str(value), list(ACTIVATIONS),
                                       field=field_name)
        elif key in ("optimizer_kwargs", "features_extractor_kwargs"):
            if not (isinstance(value, dict) and all(isinstance(k, str) for k in value)):
                raise ConfigError(f"must be a mapping of keyword arguments, got {value!r}",
                                  field=field_name)
            if key == "optimizer_kwargs" and "lr" in value:
                raise ConfigError("the learning rate is learning_rate (--learning-rate, or "
                                  "--set learning_rate=...), which SB3 gives the optimizer",
                                  field=f"{field_name}.lr")
            what, takes = _nested_keywords(key)
            unknown = sorted(set(value) - set(takes))
            if unknown:                 # (SB3 failed on it after the run folder was written)
                raise ConfigError(f"{what} does not take {', '.join(map(repr, unknown))}; it "
                                  f"takes {', '.join(takes)}",
                                  field=f"{field_name}.{unknown[0]}")
            if key == "optimizer_kwargs":
                _check_optimizer_values(value, field_name)
        elif key == "log_std_init":
            if not (is_real_number(value) and math.isfinite(value)):
                raise ConfigError(f"must be a finite number, got {value!r}", field=field_name)
        elif not is_switch_value(value):
            raise ConfigError(f"must be true or false, got {value!r}", field=field_name)


#: What each annotated kind of a ``TrainConfig`` field accepts, and how an error says it.
_FIELD_KINDS = {
    "int": (is_whole_number, "a whole number"),
    "float": (is_real_number, "a number"),
    "bool": (is_switch_value, "true or false"),
    "str": (lambda v: isinstance(v, (str, os.PathLike)), "a string"),   # paths too
    "dict": (lambda v: isinstance(v, dict), "a mapping"),
    "tuple": (lambda v: isinstance(v, (tuple, list)), "a list"),
    "None": (lambda v: v is None, "null"),
}
#: The fields ``hsched train`` sets from a flag of the same name (``--<name with dashes>``),
#: copied as they are; ``OWN_FLAG_FIELDS`` have flags it reads in its own way.
FLAG_FIELDS = ("cluster", "workload", "slots", "imitation_seeds", "keep_cost", "regimes",
               "target_recall", "operating_recall", "threshold_bands", "dagger",
               "gate_candidates", "max_kept_fraction", "audit_every", "fair_share_inputs",
               "prune",
               "job_context", "learning_rate", "hidden", "gamma", "n_steps", "batch_size",
               "n_epochs", "ent_coef", "train_seeds", "portable_math")
OWN_FLAG_FIELDS = ("timesteps", "n_envs", "seed", "logdir", "episode_hours", "algo", "policy",
                   "hyperparams")
#: Fields with checks of their own, with their own wording (``TrainConfig._check_set_values``
#: and its two tables too; ``threshold_bands`` also takes "1000,10000" or one number).
_OWN_PARSING = ("threshold_bands", "target_kl", "max_kept_fraction", "dagger")
#: Seeds go to NumPy's and PyTorch's global generators: at most 2^32 - 1.
MAX_SEED = 2**32 - 1


def _check_field_types(config: "TrainConfig") -> None:
    """Every field of the kind its annotation says (a whole number given as ``2e6`` — YAML's
    way — becomes an int), and the seed within what the generators take; else a
    ``ConfigError`` naming the field (a ``--set gamma=abc`` or a string in a hyper-parameter
    file would otherwise fail deep inside, after the run folder was written)."""
    own = _OWN_PARSING + tuple(config._WHOLE_AT_LEAST) + tuple(config._NUMBER_ABOVE)
    for f in dataclasses.fields(config):
        if f.name in own:
            continue
        value = getattr(config, f.name)
        kinds = [k.strip() for k in str(f.type).split("|")]
        if (isinstance(value, float) and value.is_integer() and "int" in kinds
                and "float" not in kinds):
            value = int(value)
            setattr(config, f.name, value)
        if not any(_FIELD_KINDS[k][0](value) for k in kinds if k in _FIELD_KINDS):
            wanted = " or ".join(_FIELD_KINDS[k][1] for k in kinds if k in _FIELD_KINDS)
            # its flag, else the key of --set and of a hyper-parameter file
            raise ConfigError(f"must be {wanted}, got {value!r}",
                              field=(f"--{f.name.replace('_', '-')}"
                                     if f.name in FLAG_FIELDS + OWN_FLAG_FIELDS else f.name))
    if not 0 <= config.seed <= MAX_SEED:
        raise ConfigError(f"must be in 0..{MAX_SEED}, got {config.seed}", field="--seed")


def _number(text: str, integer: bool):
    """A number written as text (YAML 1.1 reads ``1e-5`` as a string), else the text."""
    try:
        value = decimal_float(text)
    except ValueError:
        return text
    return int(value) if integer and value.is_integer() else value


def parse_assignment(text: str) -> tuple[str, object]:
    """``KEY=VALUE`` (the value read as YAML: numbers, true/false, null, lists)."""
    import yaml
    key, sep, value = text.partition("=")
    if not sep or not key.strip():
        raise ConfigError(f"expected KEY=VALUE, got {text!r}", field="--set")
    if not value.strip():
        raise ConfigError(f"{text!r} gives no value (write {key.strip()}=null for none)",
                          field="--set")
    try:
        parsed = yaml.safe_load(value)
        yaml_key_lines(value)            # every number as written, a key given once
    except yaml.YAMLError:
        raise ConfigError(f"cannot read the value of {text!r}", field="--set") from None
    except ConfigError as exc:
        raise ConfigError(f"{exc.reason} in {text!r}", field="--set") from None
    return key.strip(), parsed


def resolve_hyperparams(env: str, algo: str | None, policy: str | None,
                        path: str | Path | None = None) -> tuple[dict, str]:
    """The hyper-parameter entry of ``env`` (fields for ``TrainConfig``) and a sentence
    saying where it came from: ``path`` if given, else the shipped file for ``algo`` and
    ``policy`` (``default_hyperparams_file``). The shipped file without an entry for ``env``
    gives ``{}`` (the ``TrainConfig`` defaults). An explicit ``path`` must exist and hold an
    entry for ``env`` (a ``ConfigError`` naming ``--hyperparams`` and the entries it holds:
    a misspelt id would otherwise train on the defaults)."""
    if algo is None:
        algo = "ppo" if env in VARIANT_IDS and variant(env).env == "Rank" else "maskable-ppo"
    file = Path(path) if path is not None else default_hyperparams_file(algo, policy)
    if file is None:
        return {}, f"no hyper-parameter file for {algo}: TrainConfig defaults"
    if path is None and not file.is_file():
        return {}, f"no shipped {file.name}: TrainConfig defaults"
    data = read_hyperparams(file)
    shown = _shown_path(file)
    if env not in data and path is not None:
        import difflib
        near = difflib.get_close_matches(env, [str(k) for k in data], n=1)
        hint = f" (did you mean {near[0]!r}?)" if near else ""
        held = ", ".join(map(str, data)) or "none"
        raise ConfigError(f"{shown} has no entry for {env}{hint}; its entries: {held} (without "
                          f"--hyperparams the shipped file's, or the TrainConfig defaults)",
                          field="--hyperparams")
    if env not in data:
        return {}, f"{shown} has no entry for {env}: TrainConfig defaults"
    return config_fields(data[env], source=f"{shown} [{env}]"), f"{shown} [{env}]"


def make_config(env: str, algo: str | None = None, policy: str | None = None,
                hyperparams: str | Path | None = None, logdir: str | None = None,
                set_fields: dict | None = None, **overrides) -> TrainConfig:
    """``TrainConfig`` from the defaults < the hyper-parameter entry < ``overrides`` (the
    command line: ``TrainConfig`` fields or a file's keys, e.g. ``n_timesteps``);
    ``overrides`` with a ``None`` value are ignored (a flag not given). ``set_fields``: the
    ``--set KEY=VALUE`` assignments, applied after ``overrides``, a ``None`` (``null``)
    included (``--set target_kl=null``: no KL limit)."""
    from_file, source = resolve_hyperparams(env, algo, policy, hyperparams)
    given = config_fields({**{k: v for k, v in overrides.items() if v is not None},
                           **(set_fields or {})}, source="command line")
    fields = {**from_file, **given}
    if policy is not None:
        fields["policy"] = policy
    try:
        config = TrainConfig(env=env, algo=algo, logdir=logdir, hyperparams=source, **fields)
        _check_fields_read(config, set(from_file) | set(given), set(given))
    except ConfigError as exc:
        # a value of the file's entry: named with the file, not as a flag nobody gave
        name = str(exc.field or "").lstrip("-").replace("-", "_").split(".")[0]
        if (type(exc) is ConfigError and exc.source is None and name in from_file
                and name not in given):
            raise ConfigError(exc.reason, source=source, field=name) from None
        raise
    return config


#: Fields only the RL training reads (its environment steps and seeds, the reward, SB3's
#: hyper-parameters, the episodes' references): ``--algo imitation`` reads none of them.
RL_FIELDS = ("timesteps", "n_envs", "train_seeds", "keep_cost", "learning_rate", "gamma",
             "n_steps", "batch_size", "n_epochs", "ent_coef", "gae_lambda", "vf_coef",
             "clip_range", "max_grad_norm", "target_kl", "normalize_reward",
             "checkpoint_steps", "references", "reference_budget", "init_keep_prob",
             "policy_kwargs")
#: Fields only the equivariant ranker's imitation reads (``TrainConfig.warm_imitation``;
#: ``imitation_seeds``, ``target_recall`` and the imitation's switches have checks of their
#: own).
IMITATION_FIELDS = ("imitation_rounds", "imitation_epochs", "imitation_lr", "pos_weight",
                    "imitation_weighting", "imitation_sort_pool", "imitation_hours",
                    "threshold_bands")
#: Scenario fields each regime of ``--regimes`` sets itself (``agents.regimes.Regime``).
REGIME_SCENARIO_FIELDS = ("cluster", "workload", "slots")


def _option(name: str) -> str:
    """How a field is given: its ``hsched train`` flag, else its key (``--set``, a file)."""
    if name == "references":
        return "--no-references"
    return f"--{name.replace('_', '-')}" if name in FLAG_FIELDS + OWN_FLAG_FIELDS else name


def _check_fields_read(config: TrainConfig, explicit: set[str], given: set[str]) -> None:
    """Fields set (``explicit``: by the file's entry or the command line; ``given``: by the
    command line) that this run would not read, which ``TrainConfig`` cannot tell from their
    defaults: ``imitation_seeds`` and the imitation's settings (``IMITATION_FIELDS``) outside
    the equivariant ranker's imitation, ``hidden`` with ``--policy mlp``; given on the
    command line: an imitation setting (``target_recall`` too) without demonstrations (a
    file's is inert there: the shipped PPO entries set some for the warm start that
    ``--imitation-seeds 0`` skips), the RL settings (``RL_FIELDS``) with ``--algo
    imitation`` (a file's entry, written for PPO, may hold them), what each regime of
    ``--regimes`` sets itself (the demonstrations' seeds and rounds; with ``--algo
    imitation`` also the scenario and ``episode_hours``), ``imitation_hours`` without
    ``--regimes``, ``threshold_bands`` with PPO (they would reach ``imitation_ranker.pt``
    only) and the ranker file's gates with ``--policy mlp`` (it writes no ranker file).
    ``imitation_hours`` counts as given alone only without ``episode_hours``, which sets it
    too (``hsched train --episode-hours``)."""
    if "imitation_seeds" in explicit and not config.imitates:
        raise config.not_imitated("--imitation-seeds")
    if "target_recall" in given and config.imitates and not config.warm_imitation:
        raise ConfigError("chooses the operating point of the ranker imitation fits; with "
                          "--imitation-seeds 0 and no --regimes there is no imitation",
                          field="--target-recall")
    if "hidden" in explicit and config.policy != "equivariant":
        raise ConfigError("is the equivariant network's width; --policy mlp sizes its layers "
                          "with --set policy_kwargs={net_arch: [64, 64]}", field="--hidden")
    hours_alone = "episode_hours" not in given        # imitation_hours not from --episode-hours
    for name in IMITATION_FIELDS:
        if name == "imitation_hours" and not hours_alone:
            continue
        if name in explicit and not config.imitates:
            raise config.not_imitated(_option(name))
        if name in given and not config.warm_imitation:
            raise ConfigError("is a setting of the imitation warm start, which "
                              "--imitation-seeds 0 without --regimes skips: nothing reads it",
                              field=_option(name))
    if config.regimes:
        for name in ("imitation_seeds", "imitation_rounds"):
            if name in given:
                what = "seeds" if name == "imitation_seeds" else "rounds per seed"
                skip = ("; for PPO without a warm start, drop --regimes"
                        if name == "imitation_seeds" and config.algo != "imitation" else "")
                raise ConfigError(f"is not read with --regimes: each regime of "
                                  f"{config.regimes!r} records its own {what} "
                                  f"(agents/regimes.py){skip}", field=_option(name))
    elif "imitation_hours" in given and hours_alone:
        raise ConfigError("is the horizon of the --regimes demonstrations; without --regimes "
                          "the demonstrations end where the training episodes do "
                          "(--episode-hours, else the id's limit)", field="imitation_hours")
    if config.algo == "imitation":
        rl = [n for n in RL_FIELDS if n in given
              and (n != "policy_kwargs" or config.policy_kwargs)]   # not its hidden alone
        if rl:
            raise ConfigError("is a setting of the RL training (its steps, seeds, reward, "
                              "SB3's hyper-parameters and the episodes' references), which "
                              "--algo imitation does not run: "
                              "it fits the ranker to the LP's demonstrations "
                              "(--imitation-seeds or --regimes)", field=_option(rl[0]))
        if config.regimes:
            for name in REGIME_SCENARIO_FIELDS:
                if name in given:
                    raise ConfigError(f"is not read with --regimes: each regime of "
                                      f"{config.regimes!r} sets its own cluster, workload and "
                                      f"slots (agents/regimes.py), and --algo imitation "
                                      f"trains on the regimes only", field=_option(name))
            if "episode_hours" in given and "imitation_hours" not in given:
                # --episode-hours 0 (it sets imitation_hours only when > 0)
                hours = config.imitation_hours
                stays = f"{hours:g} h" if hours else "no limit"
                raise ConfigError(f"does not reach the --regimes demonstrations: their horizon "
                                  f"stays imitation_hours ({stays}); for no limit give "
                                  f"--set imitation_hours=0 instead", field="--episode-hours")
    elif "threshold_bands" in given and config.warm_imitation:
        raise ConfigError("would reach imitation_ranker.pt only: PPO starts from the pooled "
                          "threshold of --target-recall and its ranker.pt keeps at ½; "
                          "--algo imitation writes a ranker that serves per-band thresholds",
                          field="--threshold-bands")
    if config.policy == "mlp":
        for name in ("gate_candidates", "max_kept_fraction", "audit_every"):
            if name in given:
                raise ConfigError("is recorded in the ranker file (ranker.pt), which --policy "
                                  "mlp does not write (SB3's MultiInputPolicy: model.zip only)",
                                  field=_option(name))


def _shown_path(path: Path) -> str:
    try:
        return str(path.resolve().relative_to(Path.cwd()))
    except ValueError:
        return str(path)


def _schedule(value, name: str):
    """A learning rate / clip range: a number, or ``"lin_<v>"`` (linear from v to 0)."""
    if isinstance(value, str):
        if value.startswith("lin_"):
            try:
                start = decimal_float(value[4:])
            except ValueError:
                start = math.nan
            if math.isfinite(start) and start > 0:
                return lambda progress_remaining: progress_remaining * start
        raise ConfigError(f"expected a number or 'lin_<number>', got {value!r}", field=name)
    if not (isinstance(value, (int, float)) and not isinstance(value, bool)
            and math.isfinite(value) and value > 0):
        raise ConfigError(f"must be a positive number, got {value!r}", field=name)
    return float(value)


# ---------------------------------------------------------------------------- run directory
def prepare_run_dir(config: TrainConfig, overwrite: bool = False) -> Path:
    """Create the run directory and set ``config.logdir`` to it.

    Without ``logdir``: the default name, with ``-2``, ``-3`` ... appended until it is new.
    With ``logdir``: an existing non-empty directory is refused (``ConfigError``) unless
    ``overwrite``, which deletes what a previous run wrote there (``RUN_ARTIFACTS``)."""
    import shutil
    if config.logdir is None:
        base = config.default_run_dir()
        base.parent.mkdir(parents=True, exist_ok=True)
        for n in range(1, 10_000):
            out = base if n == 1 else base.with_name(f"{base.name}-{n}")
            try:
                out.mkdir()
                break
            except FileExistsError:
                continue
        config.logdir = str(out)
        return out
    out = usable_path(Path(config.logdir), field="--logdir", what="the run folder")
    if out.exists() and not out.is_dir():
        raise ConfigError(f"{str(out)!r} exists and is not a directory", field="--logdir")
    if out.is_dir() and any(out.iterdir()):
        run = _holds_a_run(out)
        # files named as a run's that no run wrote (a config.json of yours) are never deleted
        named = any((out / name).exists() for name in RUN_ARTIFACTS)
        if not overwrite or (named and not run):
            if run:
                holds = ("a run; pass --overwrite to replace it (only a run's own files are "
                         "deleted), or")
            elif named:
                holds = ("files of yours, not a training run's, named as a run's files "
                         "(--overwrite would delete them);")
            else:
                holds = "files of yours; pass --overwrite to write a run beside them, or"
            raise ConfigError(f"{str(out)!r} already holds {holds} choose a new --logdir "
                              f"(without --logdir every run gets a new directory)",
                              field="--logdir")
        for name in RUN_ARTIFACTS:
            p = out / name
            if p.is_dir():
                shutil.rmtree(p)
            elif p.exists():
                p.unlink()
    try:
        out.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise ConfigError(f"cannot create {str(out)!r}: {exc.strerror or exc}",
                          field="--logdir") from None
    return out


# ---------------------------------------------------------------------------- baselines
#: Baseline policies by mode (``baseline_actor``).
BASELINES = {"select": ("random", "unmasked-random", "greedy", "lp"),
             "rank": ("random", "keep-all", "lp")}


def baseline_actor(name: str, env: gym.Env, rng: np.random.Generator):
    """``act(obs) -> action`` of a baseline on ``env`` (see the module docstring)."""
    u = env.unwrapped
    select = hasattr(u, "invalid_action")           # ScheduleEnv (select mode)
    mode = "select" if select else "rank"
    if name not in BASELINES[mode]:
        raise UnknownNameError(f"{mode}-mode baseline", name, list(BASELINES[mode]))
    if name == "lp":
        return lambda obs: u.reference_action()
    if select:
        if name == "random":
            return lambda obs: int(rng.choice(np.flatnonzero(u.action_masks())))
        if name == "unmasked-random":
            return lambda obs: int(rng.integers(u.K + 1))

        def greedy(obs):
            valid = np.flatnonzero(u.action_masks()[:u.K])
            return int(valid[0]) if valid.size else u.K
        return greedy
    if name == "keep-all":
        return lambda obs: (np.asarray(obs["valid"]) > 0.5).astype(np.int8)
    return lambda obs: ((rng.random(u.K) < 0.5) & (np.asarray(obs["valid"]) > 0.5)).astype(
        np.int8)


def run_episode(env: gym.Env, act, seed: int) -> dict:
    """One full episode (to termination or the registered step limit) of ``act(obs)`` on
    ``env`` from ``reset(seed=seed)``: return, steps, invalid actions, metrics."""
    obs, _ = env.reset(seed=int(seed))
    total, steps, invalid = 0.0, 0, 0
    t0 = time.perf_counter()
    while True:
        obs, reward, terminated, truncated, info = env.step(act(obs))
        total += float(reward)
        steps += 1
        invalid += bool(info.get("invalid_action", False))
        if terminated or truncated:
            break
    return {"seed": int(seed), "return": total, "steps": steps, "invalid_actions": invalid,
            "end_reason": info.get("end_reason"), "metrics": info.get("metrics", {}),
            "wall_s": time.perf_counter() - t0}


def reference_return(config: TrainConfig, seed: int, name: str = "lp") -> float:
    """A baseline's return on a training seed (``lp``: ``reference_action``; ``random``,
    seeded by the episode seed)."""
    env = gym.make(config.env, **config.env_kwargs())
    try:
        return run_episode(env, baseline_actor(name, env, np.random.default_rng(seed)),
                           seed)["return"]
    finally:
        env.close()


# ---------------------------------------------------------------------------- progress
class Progress:
    """How a run reports progress: ``"bar"`` (tqdm / SB3's bar, for a terminal), ``"lines"``
    (a one-line report on stderr every ``every_s`` seconds, and at each phase's end: for
    pipes and log files) or ``"none"``."""

    def __init__(self, mode="auto", every_s: float = 15.0, stream=None) -> None:
        if mode is True or mode == "auto":
            mode = "bar" if sys.stderr.isatty() else "lines"
        elif mode is False or mode is None:
            mode = "none"
        if mode not in ("bar", "lines", "none"):
            raise ValueError(f"progress must be bar, lines, none or auto, got {mode!r}")
        self.mode, self.every_s, self.stream = mode, float(every_s), stream
        self._last = -math.inf

    @property
    def bar(self) -> bool:
        return self.mode == "bar"

    def due(self) -> bool:
        now = time.perf_counter()
        if self.mode == "lines" and now - self._last >= self.every_s:
            self._last = now
            return True
        return False

    def line(self, text: str, force: bool = False) -> None:
        if self.mode == "lines" and (force or self.due()):
            if force:
                self._last = time.perf_counter()
            print(f"[hsched train] {text}", file=self.stream or sys.stderr, flush=True)


def _duration(seconds: float) -> str:
    seconds = max(float(seconds), 0.0)
    if seconds < 60:
        return f"{seconds:.0f}s"
    if seconds < 3600:
        return f"{seconds // 60:.0f}m{seconds % 60:02.0f}s"
    return f"{seconds // 3600:.0f}h{seconds % 3600 // 60:02.0f}m"


# ---------------------------------------------------------------------------- environments
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


def _select_ranker_policy():
    from agents.ranker import RankerPolicy

    class SelectRankerPolicy(RankerPolicy):
        """PPO (unmasked) policy for ``hsched/Schedule-*``: ``RankerNet`` with a commit
        logit over ``Discrete(K + 1)``; the network gives slots that are not valid (the
        observation's ``valid``) a logit of −20, so it masks through the observation."""

        commit = True

    SelectRankerPolicy.__qualname__ = "SelectRankerPolicy"
    return SelectRankerPolicy


SelectRankerPolicy = _select_ranker_policy()


def policy_spec(config: TrainConfig):
    """``(policy class or name, policy_kwargs)`` for SB3."""
    kwargs = dict(config.policy_kwargs)
    if config.policy == "mlp":
        act = kwargs.get("activation_fn")
        if isinstance(act, str):
            from torch import nn
            if act not in ACTIVATIONS:
                raise UnknownNameError("activation_fn", act, list(ACTIVATIONS),
                                       field="policy_kwargs")
            kwargs["activation_fn"] = getattr(nn, ACTIVATIONS[act])
        return "MultiInputPolicy", kwargs
    from agents.ranker import MaskableRankerPolicy, RankerPolicy
    kwargs["hidden"] = config.hidden
    if config.algo == "maskable-ppo":
        return MaskableRankerPolicy, kwargs
    return (RankerPolicy if config.mode == "rank" else SelectRankerPolicy), kwargs


def rollout_plan(config: TrainConfig) -> dict:
    """The rollout length and mini-batch size that fit ``timesteps`` (``n_steps`` cut to
    ``timesteps / n_envs``, ``batch_size`` to the rollout and, when the rollout was cut, to
    the largest divisor of it between half the configured size and that size, if any), the
    rollouts that will be
    trained on and the steps of a last, partial one (taken, not trained on)."""
    n_steps = max(1, min(config.n_steps, config.timesteps // config.n_envs))
    rollout = n_steps * config.n_envs
    if rollout < 2:
        raise ConfigError(f"--timesteps {config.timesteps} with {config.n_envs} envs leaves "
                          f"a rollout of {rollout} step: PPO needs at least 2",
                          field="--timesteps")
    batch = max(2, min(config.batch_size, rollout))
    if n_steps != config.n_steps and rollout % batch:
        # the rollout was cut to fit --timesteps: a mini-batch that divides it, else SB3
        # trains on a truncated last one (and warns); the largest not above the configured
        # size, and not below half of it (a rollout of 134 = 2 × 67 would give 2: keep the
        # configured size and its truncated last mini-batch then)
        divisors = [d for d in range(batch, 1, -1) if rollout % d == 0 and 2 * d >= batch]
        batch = divisors[0] if divisors else batch
    full = config.timesteps // rollout
    # a batch of 1 is raised to 2, which is not a cut: PPO normalises advantages over a
    # mini-batch ("batch_raised", apart from the sizes "adjusted" to fit the steps)
    raised = config.batch_size < 2
    return {"n_steps": n_steps, "batch_size": batch, "rollout": rollout, "updates": full,
            "partial_steps": config.timesteps - full * rollout,
            "adjusted": [k for k, a, b in (("n_steps", n_steps, config.n_steps),
                                           ("batch_size", batch, config.batch_size))
                         if a != b and not (raised and k == "batch_size")],
            "batch_raised": raised}


# ---------------------------------------------------------------------------- callbacks
def _episode_callback(config: TrainConfig, progress: Progress | None = None):
    from stable_baselines3.common.callbacks import BaseCallback
    from stable_baselines3.common.logger import HParam, TensorBoardOutputFormat

    class EpisodeMetrics(BaseCallback):
        """Logs each finished episode's schedule metrics and its return against the LP's and
        random's, the hyper-parameters (at the start), progress lines, the returns figure
        (at the end); stops at ``config.timesteps`` steps."""

        def __init__(self, known: dict[int, float]) -> None:
            super().__init__()
            self.ref: dict[int, float] = dict(known)
            self.rnd: dict[int, float] = {}
            self.kept: dict[int, list] = {}
            self.episodes: list[dict] = []
            self.reference_s = 0.0
            self.rollouts = 0
            self.t0 = time.perf_counter()

        def _on_training_start(self) -> None:
            self.t0 = time.perf_counter()
            self.logger.record("hparams", HParam(_hparams(config), _HPARAM_METRICS),
                               exclude=("stdout", "log", "json", "csv"))
            self.logger.dump(0)

        def _references(self, seed: int) -> tuple[float, float]:
            nan = float("nan")
            if not config.references:
                return nan, nan
            t = time.perf_counter()
            # (the free seeds are counted by the random references, which only training
            # computes: ``ref`` starts with the imitation's LP returns, which had used them up)
            if (seed not in self.rnd and len(self.rnd) >= REFERENCE_FREE_SEEDS
                    and self.reference_s > config.reference_budget * (t - self.t0)):
                return nan, nan                  # over budget: this seed goes without
            if seed not in self.ref:
                self.ref[seed] = reference_return(config, seed, "lp")
            if seed not in self.rnd:
                self.rnd[seed] = reference_return(config, seed, "random")
            self.reference_s += time.perf_counter() - t
            return self.ref[seed], self.rnd[seed]

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
                lp, rnd = self._references(seed)
                rec = {"seed": seed, "timestep": int(self.num_timesteps), "return": ret,
                       "steps": int(info["episode"]["l"]), "lp_return": lp,
                       "random_return": rnd,
                       "return_vs_lp": ret / lp if lp and np.isfinite(lp) else float("nan"),
                       "normalized_score": ((ret - rnd) / (lp - rnd) if np.isfinite(lp - rnd)
                                            and abs(lp - rnd) > 1e-9 else float("nan")),
                       "avg_jct_h": m["avg_jct_s"] / 3600, "makespan_h": m["makespan_s"] / 3600,
                       "decision_time_ms": m["decision_time_mean_s"] * 1e3,
                       "kept_fraction": float(np.mean(self.kept.pop(i, [np.nan])))}
                self.episodes.append(rec)
                scalars = {f"episode/{key}": rec[key]
                           for key in ("return", "lp_return", "random_return",
                                       "normalized_score", "avg_jct_h", "makespan_h",
                                       "decision_time_ms", "return_vs_lp")
                           if np.isfinite(rec[key])}
                if config.mode == "rank" and np.isfinite(rec["kept_fraction"]):
                    scalars["episode/kept_fraction"] = rec["kept_fraction"]
                self._log_episode(scalars, rec["timestep"])
            if progress is not None and progress.due():
                progress.line(self.status(), force=True)
            # --timesteps bounds the environment steps: a rollout that would pass it stops
            # early (its last step completes a rollout: that one is trained on)
            if self.locals.get("n_steps", -2) + 1 >= self.locals.get("n_rollout_steps",
                                                                     math.inf):
                return True
            return self.num_timesteps + self.training_env.num_envs <= config.timesteps

        def _log_episode(self, scalars: dict[str, float], step: int) -> None:
            """One finished episode's scalars, at its own timestep: written straight to the
            TensorBoard run (SB3's ``logger.record`` keeps one value per key until the next
            dump, once per rollout, so only a rollout's last episode would show, at the
            rollout's step). Other output formats of the logger get them as before."""
            writers = [f.writer for f in self.logger.output_formats
                       if isinstance(f, TensorBoardOutputFormat)]
            for tag, value in scalars.items():
                for w in writers:
                    w.add_scalar(tag, value, step)
                self.logger.record(tag, value, exclude="tensorboard")

        def _on_rollout_end(self) -> None:
            self.rollouts += 1

        def status(self) -> str:
            n, total = int(self.num_timesteps), config.timesteps
            el = time.perf_counter() - self.t0
            fps = n / el if el > 0 else 0.0
            eta = (total - n) / fps if fps > 0 else float("nan")
            text = (f"{config.algo} {n:,}/{total:,} steps ({n / total:.0%}), {fps:.0f} fps, "
                    f"{counted(len(self.episodes), 'episode')}")
            last = self.episodes[-LAST_EPISODES:]
            if last:
                text += f", mean return of the last {len(last)} {_mean(last, 'return'):.2f}"
                text += references_note(last)
            text += f", {_duration(el)} elapsed"
            if n < total and np.isfinite(eta):
                text += f", ETA {_duration(eta)}"
            return text

        def _on_training_end(self) -> None:
            if progress is not None:
                progress.line(self.status(), force=True)
            fig = returns_figure(self.episodes, config)
            if fig is not None:
                fig.savefig(Path(config.run_dir()) / "returns.png", dpi=100)
                # straight to TensorBoard: a logger dump here also wrote the last update's
                # train/* values, at the step of the dump before it (two points at one step;
                # SB3 itself never writes that update's values)
                for f in self.logger.output_formats:
                    if isinstance(f, TensorBoardOutputFormat):
                        f.writer.add_figure("figures/returns", fig, int(self.num_timesteps),
                                            close=False)
                        f.writer.flush()

    return EpisodeMetrics


_HPARAM_METRICS = {"rollout/ep_rew_mean": 0.0, "episode/return_vs_lp": 0.0,
                   "episode/normalized_score": 0.0, "episode/return": 0.0,
                   "train/value_loss": 0.0}


def _hparams(config: TrainConfig) -> dict:
    """The config's values TensorBoard's HPARAMS tab can show (numbers, strings, bools)."""
    out = {}
    for key, value in dataclasses.asdict(config).items():
        if isinstance(value, (bool, int, float, str)):
            out[key] = value
        elif value is None:
            out[key] = "None"
        elif isinstance(value, dict) and value:
            out[key] = json.dumps(value, sort_keys=True)
    return out


def references_note(episodes: list[dict]) -> str:
    """The LP's and random's mean return beside the agent's, over the same episodes: all of
    ``episodes`` when each has references, else the ones that do, with the agent's mean
    over them (a mean over different episodes read as a comparison it was not)."""
    both = [e for e in episodes        # (the others went without, over reference_budget)
            if np.isfinite(e["lp_return"]) and np.isfinite(e["random_return"])]
    if not both:
        return ""
    refs = f"LP {_mean(both, 'lp_return'):.2f}, random {_mean(both, 'random_return'):.2f}"
    if len(both) == len(episodes):
        return f" ({refs})"
    return f"; on the {len(both)} with references {_mean(both, 'return'):.2f} ({refs})"


def _mean(records: list[dict], key: str) -> float:
    values = [r[key] for r in records if np.isfinite(r.get(key, np.nan))]
    return float(np.mean(values)) if values else float("nan")


def returns_figure(episodes: list[dict], config: TrainConfig):
    """A matplotlib figure of the training episodes (``None`` without episodes): left, each
    episode's return with the LP reference's and random's on the same seed; right, the
    normalized score (return − random's) ÷ (LP's − random's) — 0 = random, 1 = the LP — of
    the episodes with references, and its running mean over 10 of them."""
    if not episodes:
        return None
    from matplotlib.figure import Figure as MplFigure
    fig = MplFigure(figsize=(11.0, 4.2))
    ax = fig.add_subplot(1, 2, 1)
    # one step axis for both (the references end after the first episodes, and the right
    # panel's own range then read as the whole run)
    bx = fig.add_subplot(1, 2, 2, sharex=ax)
    x = np.array([e["timestep"] for e in episodes], dtype=float)
    ret = np.array([e["return"] for e in episodes], dtype=float)
    lp = np.array([e["lp_return"] for e in episodes], dtype=float)
    rnd = np.array([e["random_return"] for e in episodes], dtype=float)
    ax.plot(x, ret, "-o", markersize=3, lw=0.8, label=f"{config.algo} ({config.policy})")
    for y, style, label in ((lp, "x", "LP reference (same seed)"),
                            (rnd, "v", "random (same seed)")):
        ok = np.isfinite(y)
        if ok.any():
            ax.plot(x[ok], y[ok], style, markersize=5, label=label)
    ax.set_xlabel("environment steps")
    ax.set_ylabel("episode return (− job-hours in the system)")
    ax.set_title(f"{config.env}: training episodes")
    ax.grid(alpha=0.3)
    ax.legend(loc="best", fontsize=8)
    ok = np.isfinite(lp) & np.isfinite(rnd) & (np.abs(lp - rnd) > 1e-9)
    if ok.any():
        score = (ret[ok] - rnd[ok]) / (lp[ok] - rnd[ok])
        bx.plot(x[ok], score, ".", alpha=0.5, label="episode")
        run = np.convolve(score, np.ones(10), "valid") / 10 if score.size >= 10 else None
        if run is not None:
            bx.plot(x[ok][9:], run, "-", lw=2, label="running mean (10)")
        bx.axhline(1.0, ls="--", color="gray", lw=1)
        bx.axhline(0.0, ls=":", color="gray", lw=1)
        bx.legend(loc="best", fontsize=8)
    bx.set_xlabel("environment steps")
    bx.set_ylabel("(return − random) ÷ (LP − random)")
    bx.set_title("normalized score: 0 = random, 1 = LP")
    bx.grid(alpha=0.3)
    fig.tight_layout()
    return fig


def _imitation_figure(history: list[dict], config: TrainConfig):
    from matplotlib.figure import Figure as MplFigure
    fig = MplFigure(figsize=(7.0, 4.2))
    ax = fig.add_subplot(1, 1, 1)
    epochs = [h["epoch"] for h in history]
    ax.plot(epochs, [h["loss"] for h in history], "-o", markersize=3, label="train loss")
    for key in ("valid_recall", "valid_precision", "valid_kept_fraction"):
        if key in history[0]:
            # (``evaluate_keep``'s default threshold: the operating point is chosen after
            # the epochs, and the terminal's recall is at it)
            ax.plot(epochs, [h[key] for h in history], "--",
                    label=key.replace("valid_", "held-out ").replace("_", " ")
                    + " at keep probability ½")
    ax.set_xlabel("epoch")
    ax.set_ylabel("loss; share (recall, precision, kept)")
    ax.set_title(f"imitation of the LP reference ({config.regimes or config.env})")
    ax.grid(alpha=0.3)
    ax.legend(loc="best", fontsize=8)
    fig.tight_layout()
    return fig


# ---------------------------------------------------------------------------- training
def train(config: TrainConfig, progress="auto", overwrite: bool = False, echo=None) -> dict:
    """Run the training described by ``config``; returns the summary (also saved).

    ``progress``: ``"auto"`` (``True``; a bar on a terminal, else progress lines on stderr),
    ``"bar"``, ``"lines"`` or ``"none"`` (``False``). ``overwrite``: see
    ``prepare_run_dir``. ``echo(text)`` receives the announcements (the plan of the run;
    default: the log)."""
    import torch as th
    from stable_baselines3.common.logger import HParam, configure

    echo = echo or log.info
    prog = Progress(progress, every_s=config.progress_every_s)
    # what only the environment checks (its keywords: keep_cost, slots, the cluster, the
    # workload, ...) and the rollout plan are checked before the run folder is made, or an
    # earlier run's files deleted under ``overwrite`` (the CLI checked the scenario first;
    # the Python API deleted them, then refused the config)
    config.scenario()
    rl = config.algo != "imitation"
    plan = rollout_plan(config) if rl else None
    th.set_num_threads(max(int(config.torch_threads), 1))
    arithmetic = _arithmetic(config, echo)      # before PyTorch's first tensor operation
    th.manual_seed(config.seed)
    out = prepare_run_dir(config, overwrite=overwrite)
    t_start = time.perf_counter()
    if plan is not None:                        # (the sizes cut to fit, or raised)
        config.n_steps, config.batch_size = plan["n_steps"], plan["batch_size"]
    warm = config.warm_imitation
    (out / "config.json").write_text(json.dumps(
        {**dataclasses.asdict(config), "scenario": config.scenario(), "rollout_plan": plan},
        indent=1, default=str))
    from agents.provenance import environment_record
    summary: dict = {"config": dataclasses.asdict(config), "scenario": config.scenario(),
                     "environment": environment_record()}
    if arithmetic is not None:
        summary["arithmetic_fingerprint"] = arithmetic
    tb = configure(str(out / "tb"), ["tensorboard"])
    writer = tb.output_formats[0].writer

    imitation_net = None
    known_returns: dict[int, float] = {}
    if warm:
        echo(_imitation_announcement(config))
        t_imitation = time.perf_counter()
        imitation_net, record, returns = _imitation(config, out, prog, writer, arithmetic)
        summary["imitation"] = record
        summary["imitation_s"] = time.perf_counter() - t_imitation
        known_returns.update(returns)
    elif config.mode == "rank" and rl and config.imitation_seeds > 0:
        echo("no imitation warm start with --policy mlp (it fits the equivariant network)")
    if not rl:
        # imitation is the method: the ranker is the cloned network at its operating point
        from agents.ranker import save_ranker
        meta = _ranker_meta(config, summary["imitation"], arithmetic=arithmetic)
        save_ranker(imitation_net, out / "ranker.pt", stage="imitation", **meta)
        warning = unsure_file_warning(meta)
        if warning:
            summary["warnings"] = [warning]
            echo(f"warning: {warning}")
        tb.record("hparams", HParam(_hparams(config), {"imitation/valid_recall": 0.0,
                                                       "imitation/loss": 0.0}),
                  exclude=("stdout", "log", "json", "csv"))
        fig = _imitation_figure(summary["imitation"]["history"], config)
        fig.savefig(out / "imitation.png", dpi=100)
        from stable_baselines3.common.logger import Figure
        tb.record("figures/imitation", Figure(fig, close=True),
                  exclude=("stdout", "log", "json", "csv"))
        tb.dump(0)
        tb.close()
        summary["total_s"] = time.perf_counter() - t_start
        from agents.report import json_ready
        (out / "summary.json").write_text(json.dumps(json_ready(summary), indent=1,
                                                     default=float))
        return summary

    echo(_rl_announcement(config, plan))
    model, venv = _model(config)
    model.set_logger(tb)
    if imitation_net is not None:
        model.policy.ranker.load_state_dict(imitation_net.state_dict())
        op = summary["imitation"].get("operating_point")
        if op is not None:
            # PPO's deterministic action keeps a candidate iff its probability > ½: shift the
            # logits so that this is the operating point (the threshold of --target-recall)
            with th.no_grad():
                model.policy.ranker.psi[-1].bias.sub_(op["logit_cut"])
            echo(f"PPO starts at the imitation's operating point: keep threshold "
                 f"{op['threshold']:.3g} (recall {op['recall']:.3f}) moved to ½")
    from stable_baselines3.common.callbacks import CallbackList, CheckpointCallback
    episodes = _episode_callback(config, prog if prog.mode == "lines" else None)(known_returns)
    callbacks = CallbackList([
        CheckpointCallback(save_freq=max(config.checkpoint_steps // config.n_envs, 1),
                           save_path=str(out / "checkpoints"), name_prefix="model",
                           save_vecnormalize=config.normalize_reward),
        episodes])
    t0 = time.perf_counter()
    model.learn(total_timesteps=config.timesteps, callback=callbacks, progress_bar=prog.bar,
                tb_log_name=config.algo)
    summary["ppo_s"] = time.perf_counter() - t0
    summary["reference_s"] = episodes.reference_s
    summary["rl_steps"] = int(model.num_timesteps)
    summary["updates"] = episodes.rollouts          # rollouts trained on
    model.save(out / "model.zip")
    if config.normalize_reward:         # its reward statistics: training goes on from both
        venv.save(str(out / "vecnormalize.pkl"))
    if hasattr(model.policy, "ranker"):
        from agents.ranker import save_ranker
        # no threshold recorded: the PPO policy keeps at ½ (an operating point was moved there)
        save_ranker(model.policy.ranker, out / "ranker.pt", stage="ppo",
                    timesteps=config.timesteps,
                    **_ranker_meta(config, None, arithmetic=arithmetic))
    venv.close()
    tb.close()
    summary["episodes"] = episodes.episodes
    summary["total_s"] = time.perf_counter() - t_start
    from agents.report import json_ready
    (out / "summary.json").write_text(json.dumps(json_ready(summary), indent=1,
                                                     default=float))
    return summary


def _model(config: TrainConfig):
    """The SB3 model and its vector environment."""
    from stable_baselines3 import PPO
    from stable_baselines3.common.vec_env import DummyVecEnv, SubprocVecEnv
    vec_cls = SubprocVecEnv if config.n_envs > 1 else DummyVecEnv
    venv = vec_cls([make_env(config, i) for i in range(config.n_envs)])
    if config.normalize_reward:
        from stable_baselines3.common.vec_env import VecNormalize
        venv = VecNormalize(venv, norm_obs=False, norm_reward=True, gamma=config.gamma)
    policy, policy_kwargs = policy_spec(config)
    common = dict(learning_rate=_schedule(config.learning_rate, "learning_rate"),
                  n_steps=config.n_steps, batch_size=config.batch_size,
                  n_epochs=config.n_epochs, gamma=config.gamma, gae_lambda=config.gae_lambda,
                  ent_coef=config.ent_coef, vf_coef=config.vf_coef,
                  clip_range=_schedule(config.clip_range, "clip_range"),
                  max_grad_norm=config.max_grad_norm, target_kl=config.target_kl,
                  seed=config.seed, verbose=0, policy_kwargs=policy_kwargs)
    if config.algo == "maskable-ppo":
        from sb3_contrib import MaskablePPO
        return MaskablePPO(policy, venv, **common), venv
    model = PPO(policy, venv, **common)
    if config.init_keep_prob is not None:
        import torch as th
        with th.no_grad():
            p = float(config.init_keep_prob)
            model.policy.ranker.psi[-1].bias.fill_(math.log(p / (1 - p)))
    return model, venv


def _arithmetic(config: TrainConfig, echo) -> str | None:
    """With ``portable_math``: set portable arithmetic (``agents.portable_math.enable``),
    announce it and return its fingerprint; else ``None``."""
    if not config.portable_math:
        return None
    from agents import portable_math
    found = portable_math.enable()
    same = ("the reference machine's" if found == portable_math.REFERENCE_FINGERPRINT else
            f"not the reference machine's {portable_math.REFERENCE_FINGERPRINT}: the weights "
            f"will not match files trained there")
    echo("portable arithmetic (" + ", ".join(f"{k}={v}" for k, v in
                                            portable_math.PORTABLE_ENV.items())
         + f"): fingerprint {found}, {same}")
    return found


def _imitation_announcement(config: TrainConfig) -> str:
    from agents.regimes import REGIMES
    if config.regimes:
        regs = REGIMES[config.regimes]
        capped = [r for r in regs if r.rounds is not None]
        rounds = sum(r.seeds * r.rounds for r in capped)
        whole = sum(r.seeds for r in regs if r.rounds is None)
        what = (f"{len(regs)} regimes of {config.regimes!r}, {sum(r.seeds for r in regs)} "
                f"LP episodes: {rounds} rounds at most recorded from "
                f"{sum(r.seeds for r in capped)} of them"
                + (f", one round in a few from the other {whole} to their end" if whole
                   else ""))
    else:
        what = (f"{config.imitation_seeds} LP episodes of at most {config.imitation_rounds} "
                f"rounds (at most {config.imitation_seeds * config.imitation_rounds:,} LP "
                f"rounds: an episode that ends sooner gives fewer)")
    rest = "" if config.algo == "imitation" else (
        " before PPO; not counted in --timesteps (--imitation-seeds 0 skips it)")
    dagger = "" if not config.dagger else (
        f"; then {counted(config.dagger, 'DAgger iteration')}: episodes "
        f"of the same seeds driven by the fitted ranker, labelled by the LP, and a new fit on "
        f"all rounds")
    epochs = counted(config.imitation_epochs, "epoch")
    # (``--algo imitation`` is the imitation alone: no PPO follows it to warm-start)
    head = "imitation" if config.algo == "imitation" else "imitation warm start"
    return f"{head}: {what}, then {epochs} of behaviour cloning{dagger}{rest}"


def _rl_announcement(config: TrainConfig, plan: dict) -> str:
    policy, _ = policy_spec(config)
    name = policy if isinstance(policy, str) else policy.__name__
    text = (f"{config.algo} with {name}: {config.timesteps:,} environment steps, "
            f"{counted(plan['updates'], 'rollout')} of {plan['n_steps']} steps × "
            f"{counted(config.n_envs, 'env')}")
    if plan["partial_steps"]:
        text += f" (+ {plan['partial_steps']} steps of a partial rollout, not trained on)"
    if plan["adjusted"]:
        text += "; cut to fit --timesteps: " + ", ".join(f"{k} {plan[k]}"
                                                         for k in plan["adjusted"])
    if plan["batch_raised"]:
        text += "; batch_size raised to 2 (advantages are normalised over a mini-batch)"
    return text + f"; γ {config.gamma}, learning rate {config.learning_rate}"


def _imitation(config: TrainConfig, out: Path, progress: Progress, writer,
               arithmetic: str | None = None):
    """Collect the LP reference's keep bits (on the one scenario, or on every regime of
    ``config.regimes``), fit ``RankerNet`` to them, choose its operating point; with
    ``config.dagger`` iterations, then collect again on the same regimes and seeds with the
    fitted ranker driving (the LP still labels every round: DAgger), add those rounds to
    the data and fit a new network on all of it. Returns ``(net, summary record, {seed:
    reference return})``."""
    from agents.imitation import Demos, evaluate_keep
    from agents.ranker import Ranker, save_ranker
    from agents.regimes import REGIMES, Regime

    if config.regimes:
        regimes = REGIMES[config.regimes]
    else:
        sc = config.scenario()
        regimes = (Regime(sc["cluster"], sc["workload"], seeds=config.imitation_seeds,
                          rounds=config.imitation_rounds, slots=sc["slots"]),)
    t0 = time.perf_counter()
    trains, valids, per_regime, returns = _collect_regimes(config, regimes, progress)
    collect_s = time.perf_counter() - t0
    net, record = _fit_ranker(config, Demos.merge(trains), Demos.merge(valids), progress,
                              writer)
    iterations = []
    for it in range(config.dagger):
        # the ranker as it runs: the file's operating point (threshold or bands), never gated
        # (torch_threads=None: the run's own setting, config.torch_threads, stays)
        ranker = Ranker(net, meta=_ranker_meta(config, record, serve=False,
                                               arithmetic=arithmetic),
                        gate_candidates=0, max_kept_fraction=1.0, audit_every=0,
                        name=f"dagger-{it + 1}", torch_threads=None)
        t1 = time.perf_counter()
        more_train, more_valid, more_regime, _ = _collect_regimes(
            config, regimes, progress, driver=ranker.keep,
            what=f"DAgger {it + 1}/{config.dagger} (the ranker drives, the LP labels)")
        collect_s += time.perf_counter() - t1
        del ranker                                       # its inference buffers
        driven_valid = Demos.merge(more_valid)
        before = {"operating_point": record.get("operating_point"),
                  "valid": record["valid"], "final": record["final"]}
        if before["operating_point"] is not None:
            # the fit that drove, on the held-out rounds it visited itself (at its pooled
            # threshold): what the new rounds teach
            before["own_rounds_at_operating_point"] = evaluate_keep(
                net, driven_valid, before["operating_point"]["threshold"])
        trains = [Demos.merge([a, b]) for a, b in zip(trains, more_train)]
        valids = [Demos.merge([a, b]) for a, b in zip(valids, more_valid)]
        for reg, more in zip(per_regime, more_regime):
            reg.setdefault("dagger_rounds", []).append(more["rounds"])
            reg.setdefault("dagger_cut_rounds", []).append(more["cut_rounds"])
        net, record = _fit_ranker(config, Demos.merge(trains), Demos.merge(valids), progress,
                                  writer, step0=(it + 1) * config.imitation_epochs)
        iterations.append({"iteration": it + 1,
                           "rounds_added": sum(m["rounds"] for m in more_regime),
                           "before": before,
                           "operating_point": record.get("operating_point")})
    record.update(collect_s=collect_s, regimes=per_regime)
    if config.dagger:
        record["dagger"] = iterations
    writer.flush()
    save_ranker(net, out / "imitation_ranker.pt", stage="imitation",
                **_ranker_meta(config, record, arithmetic=arithmetic))
    return net, record, returns


def _collect_regimes(config: TrainConfig, regimes, progress: Progress, driver=None,
                     what: str = "LP demonstrations"):
    """``collect_demos`` on every regime, each regime's last seeds held out: ``(train Demos
    per regime, held-out Demos per regime, a record per regime, {seed: reference return}
    of a single regime's episodes)``. ``driver``: who steps the episodes (``None``: the LP
    reference; see ``collect_demos``)."""
    from agents.imitation import Demos, collect_demos

    t0 = time.perf_counter()
    trains, valids, per_regime, returns = [], [], [], {}
    for n, reg in enumerate(regimes):
        kw = {**config.env_kwargs(), "cluster": reg.cluster, "workload": reg.workload,
              "slots": reg.slots}
        if config.regimes:                       # the regimes' own horizon
            hours = reg.hours if reg.hours is not None else config.imitation_hours
            kw["max_time_s"] = None if not hours or reg.whole else hours * 3600
        seeds = list(range(reg.seeds))
        parts = []
        env = env_workload = None
        for i, seed in enumerate(seeds):         # one seed at a time: the same demonstrations
            workload = reg.workload_of(seed)     # a trace regime: one window per seed
            if workload != env_workload:
                if env is not None:
                    env.close()
                env, env_workload = gym.make(config.env, **{**kw, "workload": workload}), workload
            parts.append(collect_demos(env, [seed], max_rounds=reg.rounds, progress=progress.bar,
                                       fair_share_only=config.fair_share_inputs,
                                       every=reg.every, driver=driver))
            el = time.perf_counter() - t0
            progress.line(f"{what}: regime {n + 1}/{len(regimes)} "
                          f"({reg.cluster}), seed {i + 1}/{len(seeds)}, "
                          f"{sum(len(p) for p in parts)} rounds, {_duration(el)} elapsed",
                          force=i + 1 == len(seeds))
        demos = Demos.merge(parts)
        for p in parts:
            demos.returns.update(p.returns)
        env.close()
        if demos.cut_rounds:
            progress.line(f"{what}: regime {n + 1} ({reg.cluster}, {reg.workload}): "
                          f"{demos.cut_rounds} of {len(demos)} recorded rounds had more "
                          f"candidates than K = {reg.slots} and were cut to the first K",
                          force=True)
        if len(regimes) == 1:
            returns.update(demos.returns)
        held = seeds[-max(1, len(seeds) // 8):]
        valid, train = demos.split(held)
        trains.append(train if len(train) else valid)
        valids.append(valid)
        per_regime.append({"cluster": reg.cluster, "workload": reg.workload,
                           **({"windows": list(reg.windows)} if reg.windows else {}),
                           "rounds": len(demos), "positive_fraction": demos.positive_fraction(),
                           "held_out_seeds": held, "cut_rounds": demos.cut_rounds})
    return trains, valids, per_regime, returns


def _fit_ranker(config: TrainConfig, train_demos, valid_demos, progress: Progress, writer,
                step0: int = 0):
    """A new ``RankerNet`` fitted to ``train_demos`` (behaviour cloning), with its operating
    point chosen on ``valid_demos``: ``(net, record)``. ``step0``: the TensorBoard step of
    its first epoch (DAgger's refits continue the curves)."""
    from agents.imitation import Demos, behaviour_clone, evaluate_keep
    from agents.ranker import RankerNet
    from agents.regimes import (RECALL_LADDER, keep_logits, operating_points, recall_threshold,
                                size_band_thresholds)

    net = RankerNet(hidden=config.hidden, job_context=config.job_context)

    def log_epoch(e, r):
        for k, v in r.items():
            if k != "epoch":
                writer.add_scalar(f"imitation/{k}", v, step0 + e)
        progress.line(f"imitation epoch {e + 1}/{config.imitation_epochs}: loss "
                      f"{r['loss']:.4f}" + (f", held-out recall {r['valid_recall']:.3f}"
                                            if "valid_recall" in r else ""),
                      force=e + 1 == config.imitation_epochs)

    history = behaviour_clone(
        net, train_demos, epochs=config.imitation_epochs, lr=config.imitation_lr,
        pos_weight=config.pos_weight, seed=config.seed, valid_demos=valid_demos,
        progress=progress.bar, log_fn=log_epoch, weighting=config.imitation_weighting,
        sort_pool=config.imitation_sort_pool)
    record = {"rounds": len(train_demos) + len(valid_demos), "train_rounds": len(train_demos),
              "valid_rounds": len(valid_demos),
              "positive_fraction": Demos.merge([train_demos, valid_demos]).positive_fraction(),
              "final": history[-1], "history": history,
              "valid": evaluate_keep(net, valid_demos)}
    if config.target_recall is not None:
        logits = keep_logits(net, valid_demos)          # one pass for every choice below
        op = recall_threshold(net, valid_demos, config.target_recall, logits=logits)
        record["operating_point"] = op
        record["valid_at_operating_point"] = evaluate_keep(net, valid_demos, op["threshold"])
        step = step0 + len(history)
        writer.add_scalar("imitation/operating_threshold", op["threshold"], step)
        writer.add_scalar("imitation/operating_kept_fraction", op["kept_fraction"], step)
        if config.threshold_bands:
            record["size_bands"] = size_band_thresholds(net, valid_demos, config.target_recall,
                                                        config.threshold_bands, logits=logits)
        # the same choice for a range of targets: other operating points of the same file
        record["operating_points"] = operating_points(
            net, valid_demos, RECALL_LADDER + (config.target_recall,), config.threshold_bands,
            logits=logits)
    return net, record


def unsure_file_warning(meta: dict) -> str | None:
    """A warning when a ranker file keeps, on its held-out training rounds at its operating
    point, more than its unsure gate allows (``meta["valid_kept_fraction"]`` above the
    ``max_kept_fraction`` the file will run with): evaluated, it would solve most large rounds
    whole after paying their inference. Session 38's seed 0 kept 35.4% against the 0.25 gate
    and was unsure on every ``large-family`` round (BENCHMARKS.md); ``None`` otherwise."""
    from agents.ranker import file_max_kept_fraction
    kept = meta.get("valid_kept_fraction")
    gate = file_max_kept_fraction(meta, meta.get("gate_candidates", 0))
    if kept is None or not kept > gate:
        return None
    return (f"at its operating point this file keeps {kept:.1%} of its held-out training "
            f"rounds' candidates, more than its unsure gate's {gate:.0%}: evaluated, it would "
            f"solve most large rounds whole after paying their inference (slower than the pure "
            f"LP). Training is sensitive to --seed (BENCHMARKS.md, session 38: 1 of 3 seeds "
            f"kept 35%); try another seed")


def _ranker_meta(config: TrainConfig, imitation: dict | None, serve: bool = True,
                 arithmetic: str | None = None) -> dict:
    """What a ranker file records of its training: scenario or regimes, operating point,
    gate, and ``arithmetic`` (the fingerprint ``agents.portable_math.enable`` returned, with
    ``--portable-math``). The main operating point is ``config.operating_recall``'s when set
    and ``serve`` (the saved file), else ``target_recall``'s (DAgger's driver)."""
    if config.regimes:
        meta = {"regimes": config.regimes}
    else:
        sc = config.scenario()
        meta = {"cluster": sc["cluster"], "workload": sc["workload"]}
    op = (imitation or {}).get("operating_point")
    if op is not None:
        meta.update(threshold=op["threshold"], target_recall=op["target_recall"],
                    valid_recall=op["recall"], valid_kept_fraction=op["kept_fraction"])
        bands = (imitation or {}).get("size_bands")
        if bands:
            meta["size_thresholds"] = [[b["min_candidates"], b["threshold"]] for b in bands]
        ladder = (imitation or {}).get("operating_points")
        if ladder:
            meta["operating_points"] = [{k: p[k] for k in ("target_recall", "threshold",
                                                            "size_thresholds")}
                                        for p in ladder]
            if serve and config.operating_recall is not None:
                from agents.ranker import operating_point
                point = operating_point({"operating_points": ladder}, config.operating_recall)
                meta.update(threshold=point["threshold"], target_recall=point["target_recall"],
                            valid_recall=point["recall"],
                            valid_kept_fraction=point["kept_fraction"])
                if bands:
                    meta["size_thresholds"] = point["size_thresholds"]
    if config.gate_candidates:
        meta["gate_candidates"] = int(config.gate_candidates)
    if config.max_kept_fraction is not None:
        meta["max_kept_fraction"] = float(config.max_kept_fraction)
    if config.audit_every:
        meta["audit_every"] = int(config.audit_every)
    if config.dagger:
        meta["dagger"] = int(config.dagger)
    if config.fair_share_inputs and imitation is not None:
        meta["inputs"] = "within-fair-share"
    if config.prune is not None:
        meta["prune"] = config.prune
    if arithmetic is not None:
        meta["arithmetic_fingerprint"] = arithmetic
    return meta
