"""``hsched/Schedule-v0``: select mode — the agent places job-strategy pairs one at a time."""

from __future__ import annotations

import math

import numpy as np
from gymnasium import logger, spaces

from hsched_env.defaults import ENV_WORKLOAD
from hsched_env.envs.base import HSchedEnvBase, slot_count, timed
from hsched_env.envs.features import (CANDIDATE_FEATURES, CLUSTER_FEATURES, GLOBAL_FEATURES,
                                      JOB_FEATURES)
from hsched_env.errors import ConfigError, UnknownNameError
from hsched_env.simulator import DONE

FILTERS = ("lp", "score")
#: What an invalid action does (``invalid_action=``); see the class docstring, "Rewards".
INVALID_ACTIONS = ("penalize", "noop", "terminate")
#: Consecutive invalid actions after which an episode is truncated (``invalid_limit=``).
INVALID_LIMIT = 1000


class ScheduleEnv(HSchedEnvBase):
    """
    ## Description

    A heterogeneous GPU cluster (``cluster``) receives deep-learning training jobs
    (``workload``). Every ``round_s`` seconds of simulated time the scheduler decides which
    jobs run, each with one *candidate*: a resource set (GPUs per type, node layout) and a
    parallelization strategy (data/tensor/pipeline degrees, micro-batches, ZeRO, recompute)
    with the planner's predicted throughput. In this environment the agent is that scheduler:
    at each step it places one job-strategy pair on the free GPUs of the round, or commits
    the round, which runs it (restarts, progress, completions) and opens the next one.

    A round usually has more candidates than the K observation slots. With
    ``candidate_filter="lp"`` (default) the HeteroSched LP (``lp_policy``) is solved for the
    round and decides which appear: the pairs its rounded assignment runs, then its other
    candidates with a positive share, then the rest round-robin over jobs by throughput per
    GPU relative to the job's requested GPUs. With ``"score"`` only the last rule is used (no
    LP: faster, and no reference policy).

    ## Action Space

    ``Discrete(K + 1)``. Action ``i < K`` places the candidate in slot ``i``; action ``K``
    commits the round. ``action_masks()`` returns the (K + 1,) bool mask of valid actions,
    as sb3-contrib's ``MaskablePPO`` expects: a slot is valid when it holds a candidate, its
    job has not been placed this round and its GPUs fit on the free nodes (exactly: the mask
    evaluates the placement rule); commit is always valid. A masked (invalid) action is
    never an exception: it places nothing, is flagged ``info["invalid_action"] = True``
    (``info["invalid_reason"]`` says why, ``""`` for a valid action; ``info["invalid_actions"]``
    counts them in the episode) and does what
    ``invalid_action`` says (see Rewards and Episode End). ``hsched_env.wrappers`` puts the
    mask into the observation (``action_mask``) for RLlib and TorchRL.

    ## Observation Space

    A ``Dict`` of flat float32 ``Box``es (K slots, F = 19 + T features, T GPU types);
    ``obs["candidates"].reshape(env.unwrapped.candidate_shape)`` is the (K, F) matrix:

    | Key | Shape | Content |
    |---|---|---|
    | ``candidates`` | (K·F,) | per slot (row-major, F per slot), the job's and the candidate's features (below); zero rows for empty slots |
    | ``valid`` | (K,) | 1 where the slot's action is valid (``action_masks()[:K]``) |
    | ``cluster`` | (T·4,) | per GPU type (4 each): share of the cluster's GPUs, free fraction this round, completely free nodes fraction, relative fp16 peak |
    | ``global`` | (7,) | log1p(active jobs)/log1p(K), jobs placed this round ÷ active, visible ÷ all candidates, log1p(arrivals) and log1p(completions) since the last round, log1p(simulated hours), fraction of jobs not completed |

    Candidate features (``env.feature_names``), all in [0, 10]; "log h" is log1p(hours):

    | Num | Feature | Min | Max |
    |---|---|---|---|
    | 0 | remaining work ÷ total work | 0 | 1 |
    | 1 | remaining time on its requested GPUs, log h | 0 | 10 |
    | 2 | age (time since arrival), log h | 0 | 10 |
    | 3 | wait (age minus time run), log h | 0 | 10 |
    | 4 | requested GPUs, log2(1 + n) ÷ log2(1 + cluster GPUs) | 0 | 1 |
    | 5 | the job ran last round | 0 | 1 |
    | 6 … 5+T | the candidate's GPUs of each type ÷ that type's GPUs | 0 | 1 |
    | 6+T | this is the job's current candidate | 0 | 1 |
    | 7+T | running it costs a restart | 0 | 1 |
    | 8+T | its GPUs ÷ cluster GPUs | 0 | 1 |
    | 9+T | throughput ÷ the job's fastest candidate | 0 | 1 |
    | 10+T | throughput per GPU ÷ the job's best per-GPU | 0 | 1 |
    | 11+T | log1p(throughput ÷ the job's requested-GPU throughput) | 0 | 10 |
    | 12+T | time to finish on it, log h | 0 | 10 |
    | 13+T | memory per GPU ÷ the smallest memory of its GPUs | 0 | 1 |
    | 14+T | log2(tensor degree) ÷ 4 | 0 | 1 |
    | 15+T | log2(pipeline degree) ÷ 5 | 0 | 1 |
    | 16+T | the LP's time share X for it (0 with ``"score"``) | 0 | 1 |
    | 17+T | the LP's rounded assignment runs it this round | 0 | 1 |
    | 18+T | its GPUs ≤ the job's fair share max(requested, cluster GPUs ÷ active jobs) (the LP's size cap) | 0 | 1 |

    ## Rewards

    ``reward="job-time"`` (default): minus the job-time in the system accrued since the
    last step (Σ over arrived, unfinished jobs of the simulated time that passed) ÷
    ``reward_scale`` (3600: job-hours). Placements do not move time (reward 0); a commit
    does. An episode that completes returns −Σ JCT ÷ scale ≡ −avg JCT × jobs ÷ scale.
    ``reward="completions"``: +1 per job completed (sparse).

    Invalid actions (``invalid_action``): ``"penalize"`` (default) costs
    ``invalid_penalty``, by default the job-time one wasted round costs (active jobs ×
    ``round_s`` ÷ ``reward_scale``; 0 with ``"completions"``), so an agent that ignores the
    mask cannot look perfect by stalling; ``"noop"`` costs nothing (time does not move);
    ``"terminate"`` ends the episode (``terminated``, ``end_reason="invalid_action"``) with
    the penalty plus ``cost_to_go()``: the job-time of running the unfinished jobs one at a
    time, in arrival order, on their requested GPUs (on the slowest type that holds them;
    never faster than the reference speed), ÷ ``reward_scale`` — more than a scheduler that
    runs jobs side by side accrues, so ending early does not pay (checked against the LP
    reference on 20 episodes of ``Schedule-Tiny-v0``).

    ## Starting State

    ``reset(seed=s)`` loads the workload — a generated spec without ``seed=`` is drawn with
    seed ``s``, so each seed is a different job sequence; traces and seeded specs are the
    same every episode — and opens the first round at the first arrival. Without a seed,
    the episode seed is drawn from the environment's RNG (``info["episode_seed"]``).

    ## Episode End

    Terminated when every job has completed (jobs that fit nowhere are never admitted by the
    generators), or at an invalid action with ``invalid_action="terminate"``. Truncated at
    ``max_time_s`` of simulated time, when jobs wait with no arrivals left and nothing ran
    for 1000 rounds (an agent that only commits), after ``invalid_limit`` (1000) invalid
    actions in a row (``end_reason="invalid_actions"``, with ``"noop"`` and ``"penalize"``
    alike), or at the registered id's step limit (``max_episode_steps``: 50,000 for
    ``hsched/Schedule-v0``; ``end_reason="step_limit"``). The last step's ``info`` holds
    ``end_reason`` and ``metrics`` (``hsched simulate``'s metrics of the episode so far).

    ## Arguments

    ```python
    import gymnasium as gym
    import hsched_env
    env = gym.make("hsched/Schedule-v0", cluster="sia-64", workload="gavel:rate=8,jobs=50")
    ```

    | Argument | Default | Meaning |
    |---|---|---|
    | ``cluster`` | ``"sia-64"`` | preset name, cluster file, a mapping as in a cluster file, or ``Cluster`` (an episode record holds a preset by name, any other cluster whole) |
    | ``workload`` | ``"gavel:rate=4,jobs=100,multi_gpu_recommendation=1"`` (``ENV_WORKLOAD``) | any ``hsched simulate --workload`` spec |
    | ``slots`` | 64 | K, the candidate slots (old name ``max_candidates``, still accepted) |
    | ``job_candidates`` | 16 | the planner's candidates per job |
    | ``round_s`` / ``restart_s`` | 300 / 60 | round length, restart cost (s) |
    | ``throughputs`` | ``None`` | ``"analytic"``, ``"gavel"`` or a table path |
    | ``candidate_filter`` | ``"lp"`` | ``"lp"`` or ``"score"`` (see Description) |
    | ``invalid_action`` | ``"penalize"`` | ``"penalize"``, ``"noop"`` or ``"terminate"`` (see Rewards) |
    | ``invalid_penalty`` | ``None`` | the penalty of an invalid action (``None``: one wasted round of job-time) |
    | ``invalid_limit`` | 1000 | invalid actions in a row that truncate the episode |
    | ``lp_policy`` / ``lp_objective`` | ``"heterosched-lp"`` / ``None`` (its default, ``sia-srpt``) | the LP (any LP of ``hsched simulate --policy``) |
    | ``lp`` / ``lp_factory`` | ``None`` / ``None`` | an LP policy object, or a factory ``f(lp_policy, objective=lp_objective)``; ``gymnasium.make`` supplies ``lp_baseline.policy.make_policy`` |
    | ``reward`` / ``reward_scale`` | ``"job-time"`` / 3600 | see Rewards |
    | ``max_time_s`` | ``None`` | truncate at this simulated time |
    | ``render_mode`` | ``None`` | ``"ansi"`` (queue and nodes) or ``"rgb_array"`` (GPU occupancy) |

    ``reference_action()`` is the LP reference policy's next action: its rounded assignment
    of the round as placements in the simulator's order, then commit — an episode of it
    reproduces ``hsched simulate --policy <lp_policy>`` (K must cover the jobs it runs in a
    round). ``get_state()``/``set_state()`` branch rollouts; ``episode_record()`` replays.

    ## Version History

    * v0: Initial version. Revised 2026-12-02 (same id, the defaults users' scripts rely on):
      invalid actions cost a wasted round (``invalid_action="penalize"``; before: a free
      no-op, ``"noop"``), ``invalid_limit`` in a row truncate, the registered id has a step
      limit (50,000). ``replay()`` runs records made before with ``"noop"``.
    """

    _mode = "select"
    places_within_round = True

    def __init__(self, cluster="sia-64", workload=ENV_WORKLOAD, *,
                 slots: int | None = None, max_candidates: int | None = None,
                 candidate_filter: str = "lp", invalid_action: str = "penalize",
                 invalid_penalty: float | None = None, invalid_limit: int = INVALID_LIMIT,
                 **kwargs) -> None:
        if candidate_filter not in FILTERS:
            raise UnknownNameError("candidate filter", candidate_filter, list(FILTERS),
                                   field="candidate_filter")
        if invalid_action not in INVALID_ACTIONS:
            raise UnknownNameError("invalid_action", invalid_action, list(INVALID_ACTIONS),
                                   field="invalid_action")
        if invalid_penalty is not None and not (
                isinstance(invalid_penalty, (int, float, np.integer, np.floating))
                and not isinstance(invalid_penalty, bool)
                and invalid_penalty >= 0 and math.isfinite(invalid_penalty)):
            raise ConfigError(f"invalid_penalty must be a number >= 0 (or None for the "
                              f"default), got {invalid_penalty!r}", field="invalid_penalty")
        if not (isinstance(invalid_limit, (int, np.integer)) and not isinstance(invalid_limit, bool)
                and invalid_limit >= 1):
            raise ConfigError(f"invalid_limit must be a positive integer, got "
                              f"{invalid_limit!r}", field="invalid_limit")
        self.candidate_filter = candidate_filter
        self.invalid_action = invalid_action
        self.invalid_penalty = None if invalid_penalty is None else float(invalid_penalty)
        self.invalid_limit = int(invalid_limit)
        self._invalid_streak = 0
        self._invalid_total = 0
        super().__init__(cluster, workload, slots=slot_count(slots, max_candidates, 64),
                         **kwargs)
        self.action_space = spaces.Discrete(self.K + 1)
        self._mask = np.zeros(self.K + 1, dtype=bool)
        self._ref: list[int] = []
        self._job_placed = np.zeros(0, dtype=bool)

    def _uses_lp(self) -> bool:
        return self.candidate_filter == "lp"

    def _kwargs_record(self) -> dict:
        return {**super()._kwargs_record(), "candidate_filter": self.candidate_filter,
                "invalid_action": self.invalid_action, "invalid_penalty": self.invalid_penalty,
                "invalid_limit": self.invalid_limit}

    def _extra_state(self) -> dict:
        return {"_mask": self._mask, "_ref": self._ref, "_job_placed": self._job_placed,
                "_invalid_streak": self._invalid_streak, "_invalid_total": self._invalid_total}

    def reset(self, *, seed: int | None = None, options: dict | None = None):
        out = super().reset(seed=seed, options=options)   # (it refuses bad options first)
        self._invalid_streak = 0
        self._invalid_total = 0
        return out

    def _end(self, reason: str) -> None:
        super()._end(reason)
        self._mask = np.zeros(self.K + 1, dtype=bool)     # nothing is valid any more

    def invalid_action_penalty(self) -> float:
        """What an invalid action costs now under ``invalid_action="penalize"``: the given
        ``invalid_penalty``, else with ``reward="job-time"`` the job-time one wasted round
        of the open round's active jobs costs (active jobs × ``round_s`` ÷ ``reward_scale``),
        and 0 with ``reward="completions"`` (an agent that only plays invalid actions then
        completes nothing, which is visible)."""
        if self.invalid_penalty is not None:
            return self.invalid_penalty
        if self.reward_kind != "job-time" or self._slots is None:
            return 0.0
        return self._slots.view.num_active * self.sim_config.round_s / self.reward_scale

    def cost_to_go(self) -> float:
        """What ``invalid_action="terminate"`` charges for the rest of the episode: the
        job-time of running every unfinished job **one at a time** from now, in arrival order,
        each at ``_serial_speed`` (its requested GPUs on the slowest GPU type here that runs
        them, never above the reference speed), ÷ ``reward_scale`` — a schedule a scheduler
        that runs jobs side by side beats, so ending the episode early costs more than
        playing on; 0 with ``reward="completions"``. (Until session 44 it charged the reference speed, which a
        job's candidates on this cluster may not reach: ending early then paid in 6 of 20
        episodes of the LP reference on ``Schedule-Tiny-v0``.)"""
        self._require_episode("cost_to_go()")
        if self.reward_kind != "job-time":
            return 0.0
        run = self._sim.run_view()
        now = float(run.time_s)
        left = run.remaining_samples
        clock, total = now, 0.0
        for job in sorted(self._sim.jobs, key=lambda jb: (jb.arrival_s, jb.job_id)):
            j = job.job_id
            if run.state[j] >= DONE or job.work_samples <= 0:
                continue
            start = max(clock, job.arrival_s)
            clock = start + left[j] / self._serial_speed(job)
            total += clock - max(now, job.arrival_s)
        return total / self.reward_scale

    def _serial_speed(self, job) -> float:
        """Samples/s ``cost_to_go`` runs ``job`` at: its slowest ``requested`` candidate (its
        requested GPUs with plain data parallelism, one row per GPU type that holds them) or,
        when no type holds its request, its fastest candidate — in either case at most its
        reference speed (work ÷ reference duration), which this cluster may not reach."""
        table = self._sim.candidates_of(job)
        thr = np.asarray(table.samples_per_s, dtype=np.float64)
        requested = thr[np.asarray(table.requested, dtype=bool) & (thr > 0)]
        reference = job.work_samples / job.duration_s if job.duration_s > 0 else math.inf
        if requested.size:
            return min(float(requested.min()), reference)
        return min(float(thr.max(initial=0.0)) or reference, reference)

    # ------------------------------------------------------------------ rounds
    def _open_round(self) -> None:
        sim = self._sim
        view = sim.next_view()
        self._ref = []
        if view is None:
            self._slots = None
            self._mask = np.zeros(self.K + 1, dtype=bool)
            return
        if self.candidate_filter == "lp":
            lp = self.lp
            decision, dt = timed(lp.decide, view)
            sim.record_decision(dt, getattr(lp.last_stats, "lp_vars", 0) or 0)
            placed = self._lp_order(decision)
            k_of = {int(j): k for k, j in enumerate(view.job_ids)}
            first = [(k_of[j], r) for j, r in placed]
            slots = self._build_slots(view, shares=getattr(lp, "allocation", None),
                                      first=first)
            pos = {(int(j), int(r)): i for i, (j, r) in enumerate(zip(slots.job, slots.row))}
            missing = [p for p in placed if p not in pos]
            if missing:
                logger.warn(f"the LP runs {len(placed)} jobs this round but only "
                            f"{len(placed) - len(missing)} of them fit in the K={self.K} slots; "
                            f"reference_action() cannot reproduce the LP (raise slots)")
            self._ref = [pos[p] for p in placed if p in pos]
        else:
            slots, dt = timed(self._build_slots, view)
            sim.record_decision(dt, 0)
        self._slots = slots
        self._job_placed = np.zeros(slots.k.size, dtype=bool)
        self._refresh_mask()

    def _lp_order(self, decision) -> list[tuple[int, int]]:
        """The (job, row) placements ``Simulator.place_decision`` would make, in order, without
        making them."""
        return self._sim.try_place_decision(decision, who=f"LP {self.lp_policy_name!r}")

    def _refresh_mask(self) -> None:
        sl = self._slots
        mask = np.zeros(self.K + 1, dtype=bool)
        M = sl.k.size
        if M:
            mask[:M] = ~self._job_placed & sl.fit.fits(self._sim.run_view().free_gpus)
        mask[self.K] = True
        self._mask = mask

    def _valid(self) -> np.ndarray:
        return self._mask[:self.K]

    # ------------------------------------------------------------------ API
    def action_masks(self) -> np.ndarray:
        """(K + 1,) bool: the valid actions (sb3-contrib ``MaskablePPO``); commit alone in an
        episode that ended before its first decision (its one step)."""
        self._require_episode("action_masks()")
        if self._empty_episode:
            mask = np.zeros(self.K + 1, dtype=bool)
            mask[self.K] = True
            return mask
        return self._mask.copy()

    def step(self, action):
        if self._empty_episode:
            return self._step_of_an_empty_episode()
        self._check_running()
        a = read_action(action)
        unreadable = a is None
        if unreadable:
            a = -1                                    # not one integer: an invalid action
        self._actions.append(a)
        reward, invalid, committed, why = 0.0, False, False, ""
        if a == self.K:
            committed = True
            self._sim.advance()
            self._open_round()
            reward = self._time_reward()
        elif 0 <= a < self.K and self._mask[a]:
            sl = self._slots
            j = int(sl.job[a])
            if not self._sim.place(j, int(sl.row[a])):
                raise AssertionError(f"slot {a} was valid but could not be placed "
                                     f"(placement mask out of sync)")
            self._job_placed |= sl.job == j
            self._track_placement(j)
            if self._ref and self._ref[0] == a:
                self._ref.pop(0)
            self._refresh_mask()
        else:
            invalid = True
            why = "not one integer" if unreadable else self._invalid_reason(a)
            reward = self._invalid(a)
        if not invalid:
            self._invalid_streak = 0
        terminated, truncated = self._done_flags()
        info = self._info()
        info.update(invalid_action=invalid, invalid_reason=why,
                    invalid_actions=self._invalid_total, committed=committed,
                    placed=0 if self._slots is None else len(self._sim.run_view().placements))
        return self._observation(), float(reward), terminated, truncated, info

    def _invalid_reason(self, action: int) -> str:
        """Why ``action`` (an integer the mask refuses) is invalid, for ``info``."""
        if not 0 <= action <= self.K:
            return f"out of range: actions are 0..{self.K} ({self.K} commits)"
        sl = self._slots
        if sl is None or action >= sl.k.size:
            return "an empty slot (no candidate in it this round)"
        if self._job_placed[action]:
            return "its job is already placed this round"
        return "its candidate does not fit the GPUs free now"

    def _invalid(self, action: int) -> float:
        """Count an invalid action and apply ``invalid_action``; returns its reward."""
        self._invalid_total += 1
        self._invalid_streak += 1
        if self.invalid_action == "terminate":
            reward = -(self.invalid_action_penalty() + self.cost_to_go())
            self._end("invalid_action")
            return reward
        reward = -self.invalid_action_penalty() if self.invalid_action == "penalize" else 0.0
        if self._invalid_streak >= self.invalid_limit:
            self._end("invalid_actions")
        return reward

    def reference_action(self) -> int:
        """The LP reference policy's next action (needs ``candidate_filter="lp"``)."""
        self._require_episode("reference_action()")
        if self.candidate_filter != "lp":
            raise RuntimeError("the LP reference needs candidate_filter='lp'")
        while self._ref and not self._mask[self._ref[0]]:
            self._ref.pop(0)          # the agent deviated: skip what no longer fits
        return self._ref[0] if self._ref else self.K


def read_action(action) -> int | None:
    """The action as an int (an int, a NumPy integer, an integral float, a one-element
    array), or ``None`` for anything that is not one integer (``step`` plays it as the
    invalid action -1)."""
    if isinstance(action, (int, np.integer)) and not isinstance(action, bool):
        return int(action)
    try:
        value = np.asarray(action)
    except Exception:                                 # noqa: BLE001 (any object: unreadable)
        return None
    if value.size != 1 or value.dtype.kind not in "iuf":
        return None
    value = value.reshape(()).item()
    if isinstance(value, float) and not value.is_integer():
        return None
    return int(value)


__all__ = ["ScheduleEnv", "JOB_FEATURES", "CANDIDATE_FEATURES", "CLUSTER_FEATURES",
           "GLOBAL_FEATURES"]
