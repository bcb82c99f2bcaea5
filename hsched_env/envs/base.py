"""What both HeteroSched environments share: the scenario, the simulator engine, candidate slots
and their features, rewards, episode records, state copies and rendering.

The environments drive ``hsched_env.simulator.Simulator`` step by step (``next_view`` →
placements → ``advance``), so an episode is the same simulation ``hsched simulate`` runs.
"""

from __future__ import annotations

import copy
import hashlib
import inspect
import math
import time
from collections.abc import Mapping
from dataclasses import dataclass

import gymnasium as gym
import numpy as np

from hsched_env.catalog import get_gpu
from hsched_env.cluster import Cluster, cluster_presets, get_cluster
from hsched_env.defaults import ENV_WORKLOAD, JOB_CANDIDATES, RESTART_S, ROUND_S
from hsched_env.envs.features import (CLUSTER_COLUMN, CLUSTER_FEATURES, GLOBAL_COLUMN,
                                      GLOBAL_FEATURES, LOG_CAP, CandidateColumns,
                                      observation_space)
from hsched_env.errors import (ConfigError, UnexpectedArgumentError, UnknownNameError,
                                 is_real_number, show)
from hsched_env.placement import FitIndex
from hsched_env.planner import PlannerConfig
from hsched_env.policy import SchedulerView
from hsched_env.simulator import SimConfig, Simulator
from hsched_env.throughput import get_throughput_source
from hsched_env.workloads import load_workload, spec_has_key, spec_kind, with_spec_item
from hsched_env.envs import render

REWARDS = ("job-time", "completions")
#: The registered id of each environment class (``hsched_env/__init__.py`` registers them).
ENV_IDS_BY_CLASS = {"ScheduleEnv": "hsched/Schedule-v0", "RankEnv": "hsched/Rank-v0"}


def _log1p_hours(seconds: np.ndarray) -> np.ndarray:
    """``log(1 + hours)`` of non-negative seconds (unclipped above: callers clip to
    ``[0, LOG_CAP]``)."""
    return np.log1p(np.maximum(seconds, 0.0) / 3600.0)


def _round_robin(rank: np.ndarray, score_pos: np.ndarray, positions: int,
                 K: int) -> np.ndarray:
    """The first ``K`` candidates (indices) ordered by ``(rank, -score, job index)``: each
    job's best, then each job's second best, ... ``(rank, job)`` pairs are unique, so the
    order is total. ``score_pos``: each candidate's position among the ``positions`` distinct
    values of −score in ascending order (``HSchedEnvBase._score_positions``), so that one
    integer key, rank · positions + position, sorted stably gives that order: equal keys stay
    in index order, which is job index order (candidates are concatenated job by job). One
    integer sort instead of a three-key ``np.lexsort`` (the same order, ~1.5× faster on
    150,000 candidates). Only the ranks the first ``K`` can reach are sorted."""
    key = rank * positions + score_pos
    if rank.size > 4 * K:
        reach = int(np.searchsorted(np.bincount(rank).cumsum(), K))
        sel = np.flatnonzero(rank <= reach)
        return sel[np.argsort(key[sel], kind="stable")][:K]
    return np.argsort(key, kind="stable")[:K]


#: From this many new statics keys in a round, their slot statics are computed in one pass
#: (``HSchedEnvBase._jobs_static``).
_BATCH_MIN = 8

#: Bounds of the environment's cache of per-job-set candidate statics (``_round_static``):
#: at most this many job sets, and this many candidates over all of them (each costs ~50 bytes
#: per candidate in rank mode, ~110 with select mode's fit index: at 2,000 active jobs ~150,000
#: candidates, 7-17 MB a set). A job set repeats within a round (select mode) and in rounds
#: without arrivals or completions.
STATIC_CACHE_SETS = 256
STATIC_CACHE_CANDIDATES = 1_000_000


@dataclass
class RoundSlots:
    """The candidates of the open round that the observation shows, K slots (padded).

    ``k`` is the index of the slot's job in ``view.job_ids``; rows index its candidate table.
    """

    view: SchedulerView
    k: np.ndarray                 # (M,) job index in the view, M ≤ K
    job: np.ndarray               # (M,) job id
    row: np.ndarray               # (M,) candidate row
    features: np.ndarray          # (K, F) float32, zero rows beyond M
    fit: FitIndex | None          # None where the environment does not place within a round
    total: int                    # candidates of the round (before the K-slot cut)


@dataclass(frozen=True)
class RoundCandidates:
    """All candidates of an active-job set, concatenated job by job (cached per set)."""

    total: int                    # candidates of all active jobs
    starts: np.ndarray            # (A,) first index of each job's candidates
    k_of: np.ndarray              # (total,) job index in the view
    row_of: np.ndarray            # (total,) row in the job's candidate table
    thr: np.ndarray               # (total,) samples/s
    rank: np.ndarray              # (total,) rank by score within the job (0 = best)
    fit: FitIndex | None          # which candidates fit the free GPUs (None: not needed,
                                  # ``places_within_round`` False)
    col_rows: np.ndarray          # (total,) row of its static feature columns in the key table
    within_fair_share: np.ndarray  # (total,) bool: its GPUs within the LP's fair-share cap


@dataclass(frozen=True)
class JobCandidates:
    """A job's candidates as the slots need them (cached per episode by ``_static_keys``,
    shared by the jobs with the same key)."""

    table: object                 # the CandidateTable they were computed from (a hit must be it)
    size: int
    thr: np.ndarray               # (n,) samples/s
    rank: np.ndarray              # (n,) rank by score (0 = best; ties in row order)
    base: int                     # its first row in the key table of static feature columns
    ngpu: np.ndarray              # (n,) GPUs of each candidate
    requested: np.ndarray         # (n,) bool: the job's requested configuration
    fit: FitIndex | None          # None where ``places_within_round`` is False


class HSchedEnvBase(gym.Env):
    """Shared machinery of ``ScheduleEnv`` and ``RankEnv`` (see their docstrings)."""

    metadata = {"render_modes": ["ansi", "rgb_array"], "render_fps": 4}
    _mode = "base"
    #: Whether the agent's actions place jobs one by one inside an open round (select mode,
    #: which masks the candidates that do not fit: the slots carry a ``FitIndex``); rank mode
    #: places the whole decision when the round closes and builds no fit index.
    places_within_round = True

    def __init__(self, cluster: str | Cluster = "sia-64",
                 workload: str = ENV_WORKLOAD, *, slots: int = 32,
                 job_candidates: int = JOB_CANDIDATES, round_s: float = ROUND_S,
                 restart_s: float = RESTART_S, throughputs: str | None = None,
                 reward: str = "job-time", reward_scale: float = 3600.0,
                 lp=None, lp_factory=None, lp_policy: str = "heterosched-lp",
                 lp_objective: str | None = None, max_time_s: float | None = None,
                 render_mode: str | None = None, **unknown) -> None:
        if unknown:
            raise UnexpectedArgumentError(_unknown_arguments(type(self), sorted(unknown)),
                                          field=sorted(unknown)[0])
        slots = slot_count(slots, None, slots)
        if reward not in REWARDS:
            raise UnknownNameError("reward", reward, list(REWARDS), field="reward")
        if not (is_real_number(reward_scale) and reward_scale > 0
                and math.isfinite(reward_scale)):
            raise ConfigError(f"reward_scale must be a positive number, got {reward_scale!r}",
                              field="reward_scale")
        if render_mode is not None and render_mode not in self.metadata["render_modes"]:
            raise UnknownNameError("render mode", render_mode, self.metadata["render_modes"],
                                   field="render_mode")
        try:
            self.cluster = get_cluster(cluster)
        except ConfigError as exc:
            unknown = isinstance(exc, UnknownNameError)
            if isinstance(cluster, Mapping):
                if not (unknown or type(exc) is ConfigError):
                    raise
                # a mapping's field is a path inside the argument (a GPU type, a key, a count)
                raise _named(exc, "cluster", inside=True) from None
            if not unknown or (exc.source and exc.field):
                raise       # a cluster file's error names the file, its line and its field
            raise _named(exc, "cluster") from None
        get_throughput_source(throughputs)      # an unknown name or missing file: say so now
        if not isinstance(workload, str):
            raise ConfigError(f"workload must be a workload spec string (as hsched simulate "
                              f"--workload takes), got {show(workload)}", field="workload")
        self.workload_spec = workload
        self.K = slots
        self.reward_kind, self.reward_scale = reward, float(reward_scale)
        self.render_mode = render_mode
        try:
            planner = PlannerConfig(max_candidates=job_candidates)
        except ConfigError as exc:             # the planner's name for it is max_candidates
            raise ConfigError(f"job_candidates must be a positive integer or None, got "
                              f"{job_candidates!r}", field="job_candidates") from exc
        self.sim_config = SimConfig(round_s=round_s, restart_s=restart_s, planner=planner,
                                    throughputs=throughputs, max_time_s=max_time_s)
        if not isinstance(lp_policy, str):
            raise ConfigError(f"lp_policy must be a policy name (any LP of hsched simulate "
                              f"--policy), got {show(lp_policy)}", field="lp_policy")
        self.lp_policy_name, self.lp_objective = lp_policy, lp_objective
        if lp_factory is not None and not callable(lp_factory):
            raise ConfigError(f"lp_factory must be a function f(lp_policy, objective=...) "
                              f"that builds an LP policy, got {show(lp_factory)}",
                              field="lp_factory")
        if lp is not None and not all(callable(getattr(lp, m, None))
                                      for m in ("reset", "decide")):
            raise ConfigError(f"lp must be an LP policy object (reset, decide(view, ...), "
                              f"like lp_baseline.policy.LPPolicy), got {show(lp)}", field="lp")
        if lp is not None and (lp_objective is not None or lp_policy != "heterosched-lp"):
            which = "lp_objective" if lp_objective is not None else "lp_policy"
            raise ConfigError(f"lp= is the LP policy itself, and {which}="
                              f"{show(lp_objective if lp_objective is not None else lp_policy)} "
                              f"names one for the environment to build, which would be "
                              f"ignored: give one or the other", field=which)
        self._lp_given, self._lp_factory = lp, lp_factory
        self._lp = None
        self._workloads: dict[str, object] = {}
        self._tables: dict = {}
        self._jobs_digest: tuple | None = None      # (job list, its _jobs_key)
        self._static_cache: dict[bytes, RoundCandidates] = {}
        self._slots_build_s = self._observation_s = 0.0
        #: slot statics by ``_static_keys``: jobs with the same candidate table, reference
        #: throughput and requested GPUs share one entry
        self._job_cache: dict[tuple, JobCandidates] = {}
        self._global_round = self._global_cache = None
        self._sim: Simulator | None = None
        self._slots: RoundSlots | None = None
        self._episode_seed: int | None = None
        self._actions: list = []
        self._job_time = 0.0
        self._completed = 0
        self._end_reason: str | None = None      # an end the environment decides (not the sim)
        self._empty_episode = False              # reset found the episode over: one step ends it
        types = self.cluster.gpu_types
        self.T = len(types)
        #: Column indices of the slot features by name (``hsched_env.envs.features``)
        self.columns = CandidateColumns(types)
        self.feature_names = self.columns.names
        F = len(self.feature_names)
        #: the static feature columns of every cached key, one block of rows per key
        #: (``JobCandidates.base``); the slots gather from it (``_build_slots``)
        self._key_cols = np.zeros((0, F), dtype=np.float32)
        #: −score of every cached key row (aligned with ``_key_cols``) and, computed when
        #: rows were added, each row's position among its distinct values (``_score_positions``)
        self._key_neg_score = np.zeros(0)
        self._key_pos: tuple[np.ndarray, int] | None = None
        #: ``obs["candidates"].reshape(candidate_shape)`` is the (K, F) slot-feature matrix
        self.candidate_shape = (self.K, F)
        self.observation_space = observation_space(self.K, types)
        peak = np.array([get_gpu(t).fp16_tflops for t in types])
        nodes = np.bincount(self.cluster.node_type, minlength=self.T)
        self._type_obs = np.zeros((self.T, len(CLUSTER_FEATURES)), dtype=np.float32)
        self._type_obs[:, CLUSTER_COLUMN["capacity_frac"]] = (self.cluster.capacity_vec
                                                              / self.cluster.num_gpus)
        self._type_obs[:, CLUSTER_COLUMN["speed_rel"]] = peak / peak.max()
        self._type_cap = np.maximum(self.cluster.capacity_vec, 1).astype(np.float64)
        self._type_nodes_safe = np.maximum(nodes, 1).astype(np.float64)
        self._type_cap_list = self._type_cap.tolist()
        self._type_nodes_list = self._type_nodes_safe.tolist()
        self._node_type_list = np.asarray(self.cluster.node_type).tolist()
        self._cluster_key = self._cluster_cache = None
        self._free_by_type = self._free_nodes_by_type = None
        self._t0 = 0.0
        self._gpu_mem = np.array([_gpu_mem(t) for t in types])
        # validate the scenario (and the LP's name and objective) now, not at the first reset
        self._workload(0)
        if self._uses_lp():
            _ = self.lp

    # ------------------------------------------------------------------ scenario
    @property
    def lp(self):
        """The LP policy: the injected ``lp``, else ``lp_factory(lp_policy,
        objective=lp_objective)`` built on first use. ``gymnasium.make`` supplies
        ``lp_factory`` (the registration's entry points, ``lp_baseline.environments``); a
        directly constructed environment that needs an LP must be given one of the two."""
        if self._lp is None:
            if self._lp_given is not None:
                self._lp = self._lp_given
            elif self._lp_factory is not None:
                try:
                    made = self._lp_factory(self.lp_policy_name, objective=self.lp_objective)
                except UnknownNameError as exc:       # the factory's names are ours
                    raise _named(exc, {"policy": "lp_policy", "objective": "lp_objective"}.get(
                        exc.kind, "lp_policy")) from None
                except ConfigError as exc:            # e.g. an objective gavel does not read
                    if exc.field != "objective":
                        raise
                    raise ConfigError(f"lp_policy {self.lp_policy_name!r} does not take "
                                      f"lp_objective={show(self.lp_objective)} ({exc.reason})",
                                      field="lp_objective") from None
                if not all(callable(getattr(made, m, None)) for m in ("reset", "decide")):
                    raise ConfigError(f"lp_factory({self.lp_policy_name!r}, objective="
                                      f"{self.lp_objective!r}) returned {show(made)}, not an LP "
                                      f"policy object (reset, decide(view, ...), like "
                                      f"lp_baseline.policy.LPPolicy)", field="lp_factory")
                self._lp = made
            else:
                raise ConfigError(
                    f"{type(self).__name__} in this mode needs an LP policy: pass lp=<policy> "
                    f"or lp_factory=lp_baseline.policy.make_policy, or create it with "
                    f"gymnasium.make({ENV_IDS_BY_CLASS.get(type(self).__name__)!r}), whose "
                    f"entry point supplies the default", field="lp")
        return self._lp

    def _workload_spec(self, seed: int) -> str:
        """The spec of this episode: generated workloads without an explicit ``seed=`` take
        the episode seed; traces and seeded specs are the same every episode."""
        spec = self.workload_spec
        if spec_kind(spec) == "gavel" and not spec_has_key(spec, "seed"):
            spec = with_spec_item(spec, f"seed={seed}")
        return spec

    def _workload(self, seed: int):
        spec = self._workload_spec(seed)
        w = self._workloads.get(spec)
        if w is None:
            # the spec as given, and the seed (errors quote what the user wrote)
            w = load_workload(self.workload_spec, self.cluster,
                              throughputs=self.sim_config.throughputs, seed=seed)
            if len(self._workloads) > 64:
                self._workloads.clear()
            self._workloads[spec] = w
        return w

    # ------------------------------------------------------------------ gymnasium API
    def reset(self, *, seed: int | None = None, options: dict | None = None):
        """A new episode (Gymnasium's ``reset``). ``options``: none are taken
        (``check_reset_options``)."""
        check_reset_options(options)
        super().reset(seed=seed)
        episode_seed = int(seed) if seed is not None else int(
            self.np_random.integers(0, 2**31 - 1))
        self._episode_seed = episode_seed
        self._sim = self._episode_simulator(episode_seed)
        self._clear_caches()          # the job-set cache is keyed by job ids of this workload
        self._sim.reset()
        self._t0 = self._sim.run_view().first_arrival_s
        if self._uses_lp():
            self.lp.reset(self.cluster, episode_seed)
        self._actions = []
        self._job_time = 0.0
        self._completed = 0
        self._end_reason = None
        self._open_round()
        # an episode over before its first decision (a time limit before the first round
        # with a job): one step, whatever the action, ends it (``_step_of_an_empty_episode``)
        self._empty_episode = self._sim.finished
        if self._empty_episode:
            run = self._sim.run_view()
            gym.logger.warn(f"episode {episode_seed} ended before its first decision "
                            f"({self._sim.end_reason}: the first job arrives at "
                            f"t={run.first_arrival_s:g} s, max_time_s="
                            f"{self.sim_config.max_time_s}); its one step ends it")
        return self._observation(), self._info()

    def _step_of_an_empty_episode(self):
        """The one transition of an episode that ended before its first decision: reward 0,
        terminated or truncated by its end reason, the action not looked at. (Until session
        51 the first ``step`` raised: ``reset`` must return a state that ``step`` accepts.)"""
        self._empty_episode = False
        terminated, truncated = self._done_flags()
        return self._observation(), 0.0, terminated, truncated, self._info()

    def _episode_simulator(self, episode_seed: int) -> Simulator:
        """A simulator of episode ``episode_seed``'s workload (not reset)."""
        return Simulator(self.cluster, self._workload(episode_seed), _NoPolicy(),
                         SimConfig(**{**self.sim_config.__dict__, "seed": episode_seed}),
                         candidate_cache=self._tables)   # plan each model once per env

    def close(self) -> None:
        self._sim = None
        self._slots = None

    def _require_episode(self, what: str) -> None:
        """A clear error for ``what`` (a method) called before ``reset()`` or after
        ``close()``."""
        if self._sim is None:
            raise RuntimeError(f"{what} needs an episode: call reset() first (also after "
                               f"close())")

    # ------------------------------------------------------------------ rounds
    def _uses_lp(self) -> bool:
        return True

    def _clear_caches(self) -> None:
        """Forget what is cached about the episode's jobs and cluster state (a new episode,
        or a state restored from a snapshot that may be of another episode)."""
        self._static_cache.clear()
        self._job_cache.clear()
        self._key_cols = np.zeros((0, self._key_cols.shape[1]), dtype=np.float32)
        self._key_neg_score, self._key_pos = np.zeros(0), None
        self._cluster_key = None
        self._global_round = self._global_cache = None

    def _open_round(self) -> None:
        """Advance to the next decision point with candidates to show (None at the end)."""
        view = self._sim.next_view()
        t0 = time.perf_counter()
        self._slots = None if view is None else self._build_slots(view)
        self._slots_build_s = time.perf_counter() - t0

    def _time_reward(self) -> float:
        """Reward for the simulated time since the last call (see ``reward``)."""
        jt = self._sim.job_time_s()
        delta = jt - self._job_time
        self._job_time = jt
        if self.reward_kind == "job-time":
            return -delta / self.reward_scale
        # counted from finish times: next_view() has already cleared ``completed_since``
        done = self._sim.run_view().jobs_completed
        new, self._completed = done - self._completed, done
        return float(new)

    def _round_static(self, view: SchedulerView) -> "RoundCandidates":
        """What the slots need that only depends on which jobs are active (cached per job
        set, assembled from per-job parts cached by ``_static_keys``: jobs with the same
        candidate table, reference throughput and request share one)."""
        key = view.job_ids.tobytes()
        st = self._static_cache.pop(key, None)
        if st is not None:
            self._static_cache[key] = st            # the most recently used set goes last
            return st
        keys = self._static_keys(view)
        new = {}                                    # each uncached key, by its first job
        for k, job_key in enumerate(keys):
            if not self._holds(job_key, view.candidates[k]) and job_key not in new:
                new[job_key] = k
        self._jobs_static(view, list(new.values()), keys)
        parts = [self._job_cache[job_key] for job_key in keys]
        sizes = np.fromiter((p.size for p in parts), dtype=np.int64, count=len(parts))
        total = int(sizes.sum())
        starts = np.cumsum(sizes) - sizes
        k_of = np.repeat(np.arange(len(parts)), sizes)
        row_of = np.arange(total) - np.repeat(starts, sizes)
        if total:
            thr = np.concatenate([p.thr for p in parts])
            rank = np.concatenate([p.rank for p in parts])
            col_rows = np.repeat(np.fromiter((p.base for p in parts), dtype=np.int64,
                                             count=len(parts)), sizes) + row_of
            ngpu = np.concatenate([p.ngpu for p in parts])
            requested = np.concatenate([p.requested for p in parts])
            # the fair share the LP's size cap allows, max(requested, G / N): fixed by the
            # active set
            within = (ngpu <= view.fair_share_gpus(k_of) + 1e-9) | requested
        else:
            thr = np.zeros(0)
            rank = np.zeros(0, dtype=np.int64)
            col_rows = np.zeros(0, dtype=np.int64)
            within = np.zeros(0, dtype=bool)
        fit = (FitIndex.concatenate([p.fit for p in parts], self.cluster)
               if self.places_within_round else None)
        st = RoundCandidates(total=total, starts=starts, k_of=k_of, row_of=row_of, thr=thr,
                             rank=rank, fit=fit, col_rows=col_rows,
                             within_fair_share=within)
        self._static_cache[key] = st
        self._evict_static()
        return st

    def _evict_static(self) -> None:
        """Keep the per-job-set cache within ``STATIC_CACHE_SETS`` sets and
        ``STATIC_CACHE_CANDIDATES`` candidates, dropping the oldest sets first (the newest,
        the open round's, always stays)."""
        cache = self._static_cache
        held = sum(st.total for st in cache.values())
        while len(cache) > 1 and (len(cache) > STATIC_CACHE_SETS
                                  or held > STATIC_CACHE_CANDIDATES):
            held -= cache.pop(next(iter(cache))).total

    @staticmethod
    def _static_keys(view: SchedulerView) -> list[tuple]:
        """Per active job, what its slot statics depend on: its candidate table (by identity;
        a hit also checks that the entry's table is this one, ``_holds``: in a copy of the
        environment the keys hold the original's ids), reference throughput and requested
        GPUs. Jobs of the same model and request share a table; a burst of 550 jobs has 116
        distinct keys over 88 tables."""
        return list(zip(map(id, view.candidates), view.reference_samples_per_s.tolist(),
                        view.requested_gpus.tolist()))

    def _holds(self, key: tuple, table) -> bool:
        """Whether ``_job_cache`` has the statics of ``key`` computed from ``table``."""
        st = self._job_cache.get(key)
        return st is not None and st.table is table

    def _jobs_static(self, view: SchedulerView, ks: list[int], keys: list[tuple]) -> None:
        """Compute the slot statics of the active jobs ``ks`` (distinct ``keys``, none cached):
        in one pass (``_compute_statics``) from ``_BATCH_MIN`` of them on — a burst's first
        round has hundreds of new keys, ~280 µs each one at a time, a few µs each together —
        else one at a time."""
        if len(ks) >= _BATCH_MIN:
            self._compute_statics(view, ks, keys)
        else:
            for k in ks:
                self._compute_statics(view, [k], keys)

    def _compute_statics(self, view: SchedulerView, ks: list[int], keys: list[tuple]) -> None:
        """Compute and cache (``_job_cache``, under ``keys[k]``) the slot statics of the active
        jobs ``ks`` over their concatenated candidate tables. Every column is a per-candidate
        function of its job's table and the per-job constants in its key, and the rank a
        stable sort by score within the job, so a job's numbers do not depend on which jobs it
        is computed with (a test compares one pass with one job at a time)."""
        tables = [view.candidates[k] for k in ks]
        sizes = np.fromiter((len(t) for t in tables), dtype=np.int64, count=len(tables))
        starts = np.cumsum(sizes) - sizes
        n = int(sizes.sum())
        job = np.repeat(np.arange(len(ks)), sizes)

        def cat(name, dtype):
            return np.concatenate([np.asarray(getattr(t, name), dtype=dtype) for t in tables])

        thr = cat("samples_per_s", np.float64)
        gpus = np.concatenate([np.asarray(t.gpus, dtype=np.int64).reshape(len(t), self.T)
                               for t in tables])
        ngpu = gpus.sum(axis=1)
        tp, pp = cat("tp", np.int64), cat("pp", np.int64)
        pa, pb = cat("pool_a", np.int64), cat("pool_b", np.int64)
        per_gpu = thr / np.maximum(ngpu, 1)
        kk = np.asarray(ks, dtype=np.int64)
        ref = np.asarray(view.reference_samples_per_s, dtype=np.float64)[kk][job]
        score = per_gpu / ref
        order = np.lexsort((-score, job))           # by job, best first, ties in row order
        rank = np.empty(n, dtype=np.int64)
        rank[order] = np.arange(n) - np.repeat(starts, sizes)
        # per job: the largest throughput and throughput per GPU, at least 0 (a job without
        # candidates has no segment)
        best, best_pg = np.zeros(len(ks)), np.zeros(len(ks))
        full = sizes > 0
        if n:
            best[full] = np.maximum(np.maximum.reduceat(thr, starts[full]), 0.0)
            best_pg[full] = np.maximum(np.maximum.reduceat(per_gpu, starts[full]), 0.0)
        G = self.cluster.num_gpus
        min_mem = np.where(gpus > 0, self._gpu_mem[None, :], np.inf).min(axis=1)
        mem = cat("mem_gb_per_gpu", np.float64)
        # static feature columns (the dynamic ones are filled per round, in ``_build_slots``)
        C = self.columns
        cols = np.zeros((n, len(C)), dtype=np.float32)
        req = np.asarray(view.requested_gpus)[kk][job]
        cols[:, C["requested_gpus"]] = np.log2(1 + req) / math.log2(1 + G)
        cols[:, C.gpus] = gpus / np.maximum(self.cluster.capacity_vec, 1)
        cols[:, C["gpus_total"]] = ngpu / G
        cols[:, C["throughput_norm"]] = thr / best[job]
        cols[:, C["throughput_per_gpu"]] = per_gpu / best_pg[job]
        cols[:, C["speedup_ref"]] = np.clip(np.log1p(thr / ref), 0, LOG_CAP)
        cols[:, C["mem_frac"]] = np.clip(mem / min_mem, 0, 1)
        cols[:, C["tp_log"]] = np.clip(np.log2(tp) / 4, 0, 1)
        cols[:, C["pp_log"]] = np.clip(np.log2(pp) / 5, 0, 1)
        requested = cat("requested", bool)
        base = len(self._key_cols)                  # appended: earlier rows keep their index
        self._key_cols = np.concatenate([self._key_cols, cols])
        self._key_neg_score = np.concatenate([self._key_neg_score, -score])
        self._key_pos = None
        fit = None
        if self.places_within_round:                # only a placing agent's mask needs it
            na, nb = _part_sizes(gpus, pa, pb, self.cluster)
            fit = FitIndex(self.cluster, pa, na, pb, nb, tp)
        for i, (k, table) in enumerate(zip(ks, tables)):
            a, b = int(starts[i]), int(starts[i] + sizes[i])
            self._job_cache[keys[k]] = JobCandidates(
                table=table, size=b - a, thr=thr[a:b], rank=rank[a:b],
                base=base + a, ngpu=ngpu[a:b], requested=requested[a:b],
                fit=None if fit is None else fit.take(slice(a, b)))

    def _score_positions(self) -> tuple[np.ndarray, int]:
        """Each cached key row's position among the distinct values of −score in ascending
        order (equal values, equal positions; NaN last, as ``np.lexsort`` puts it), and how
        many there are: recomputed when rows were added (a sort of the cached rows, ~8,000 at
        550 jobs; new keys are rare after a burst's first round)."""
        if self._key_pos is None:
            uniq, pos = np.unique(self._key_neg_score, return_inverse=True)
            self._key_pos = (pos.reshape(-1), max(len(uniq), 1))
        return self._key_pos

    def _build_slots(self, view: SchedulerView, shares=None,
                     first: list | None = None) -> RoundSlots:
        """All candidates of the round, ordered: ``first`` pairs (the LP's assignment), then
        other candidates with an LP share, then round-robin over jobs by score (each job's
        best candidate, then each job's second best, ...); cut to K slots."""
        st = self._round_static(view)
        total, k_of, row_of, starts = st.total, st.k_of, st.row_of, st.starts
        # rank within the job by score, its current candidate first; then round-robin
        current = view.current
        is_current = row_of == current[k_of]
        rank = st.rank
        running = current >= 0
        if total and running.any():
            # each running job's current candidate moves to rank 0, the ones it passes down one
            cur_rank = np.where(running, st.rank[np.where(running, starts + current, 0)], -1)
            rank = np.where(is_current, 0, rank + (rank < cur_rank[k_of]))
        share = tier = None
        if shares or first:
            share = np.zeros(total)
            for k, j in enumerate(view.job_ids):
                got = shares.get(int(j)) if shares else None
                if got is not None and got[0].size:
                    share[starts[k] + got[0]] = got[1]
            tier = np.where(share > 1e-6, 1, 2)
            neg_score = self._key_neg_score[st.col_rows]     # −score, for the ties below
        if first:
            prio = np.zeros(total)
            pos = starts[[k for k, _ in first]] + np.array([r for _, r in first])
            tier[pos] = 0
            prio[pos] = -np.arange(len(first))
            order = np.lexsort((k_of, neg_score, rank, -share, -prio, tier))
        elif shares:
            order = np.lexsort((k_of, neg_score, rank, -share, tier))
        else:
            score_pos, positions = self._score_positions()
            order = _round_robin(rank, score_pos[st.col_rows], positions, self.K)
        order = order[:self.K]
        k, row = k_of[order], row_of[order]
        M = order.size
        # the static columns are gathered, completed and clipped in place in the slots'
        # matrix: on a round of ~150,000 candidates a fresh 25 MB temporary per step cost more
        # in page faults than the arithmetic
        feats = np.empty((self.K, len(self.feature_names)), dtype=np.float32)
        feats[M:] = 0.0
        if M:
            C = self.columns
            f = feats[:M]
            # mode="clip": the rows are in the key table by construction, and with the
            # default mode="raise" NumPy buffers ``out`` (a second temporary and copy:
            # 2.4 against 0.7 ms for 150,000 rows of 24 columns)
            np.take(self._key_cols, st.col_rows[order], axis=0, out=f, mode="clip")
            f[:, C["within_fair_share"]] = st.within_fair_share[order]
            rem = view.remaining_samples[k]
            age = view.time_s - view.arrival_s[k]
            running = current[k] >= 0
            cur = is_current[order]
            f[:, C["remaining_frac"]] = rem / view.work_samples[k]
            # the hours columns are clipped to [0, LOG_CAP] with the whole matrix below
            f[:, C["remaining_ref_h"]] = _log1p_hours(rem / view.reference_samples_per_s[k])
            f[:, C["age_h"]] = _log1p_hours(age)
            f[:, C["wait_h"]] = _log1p_hours(age - view.attained_s[k])
            f[:, C["job_running"]] = running
            f[:, C["is_current"]] = cur
            f[:, C["restart"]] = ((view.attained_s[k] > 0) | running) & ~cur
            f[:, C["finish_h"]] = _log1p_hours(rem / st.thr[order])
            if share is not None:           # else both stay 0 (the static columns' zeros)
                f[:, C["lp_share"]] = np.clip(share[order], 0, 1)
                f[:, C["lp_assigned"]] = tier[order] == 0
            np.clip(f, 0.0, LOG_CAP, out=f)
        return RoundSlots(view=view, k=k, job=view.job_ids[k], row=row, features=feats,
                          fit=None if st.fit is None else st.fit.take(order), total=total)

    def _cluster_obs(self) -> np.ndarray:
        """(T, cluster features): the per-type observation of the free GPUs now. Computed
        from the nodes' free GPUs once per round (and whenever the cache is stale), then kept
        up to date placement by placement (``_track_placement``)."""
        run = self._sim.run_view()
        key = self._cluster_key
        if key is None or key[0] is not self._slots or key[1] != len(run.placements):
            free = run.free_gpus
            node_type = self.cluster.node_type
            self._free_by_type = np.bincount(node_type, weights=free,
                                             minlength=self.T).astype(np.int64).tolist()
            self._free_nodes_by_type = np.bincount(node_type, weights=free == run.node_gpus,
                                                   minlength=self.T).astype(np.int64).tolist()
            out = self._type_obs.copy()
            out[:, CLUSTER_COLUMN["free_frac"]] = (np.asarray(self._free_by_type, np.float64)
                                                   / self._type_cap)
            out[:, CLUSTER_COLUMN["free_nodes_frac"]] = (
                np.asarray(self._free_nodes_by_type, np.float64) / self._type_nodes_safe)
            self._cluster_cache = out
            self._cluster_key = (self._slots, len(run.placements))
        return self._cluster_cache.copy()

    def _track_placement(self, job: int) -> None:
        """Bring the cached cluster observation up to date with ``job``'s placement, just
        made (the next ``_cluster_obs`` recomputes it if the cache was stale)."""
        run = self._sim.run_view()
        placements = run.placements
        key = self._cluster_key
        if key is None or key[0] is not self._slots or key[1] != len(placements) - 1:
            return
        free, cap = run.free_gpus, run.node_gpus
        node_type = self._node_type_list
        out = self._cluster_cache
        free_col, nodes_col = CLUSTER_COLUMN["free_frac"], CLUSTER_COLUMN["free_nodes_frac"]
        # an allocation lists each node once (a candidate's parts lie in different pools), so
        # a node was completely free before iff it is now short by exactly this entry
        for v, k in placements[job][1]:
            t = node_type[v]
            self._free_by_type[t] -= k
            out[t, free_col] = self._free_by_type[t] / self._type_cap_list[t]
            if free[v] + k == cap[v]:               # the node was completely free before
                self._free_nodes_by_type[t] -= 1
                out[t, nodes_col] = self._free_nodes_by_type[t] / self._type_nodes_list[t]
        self._cluster_key = (self._slots, len(placements))

    def _global_obs(self) -> np.ndarray:
        sl = self._slots
        if self._global_cache is None or self._global_round is not sl:
            # once per round (and once at the episode's end), then only placed_frac
            run = self._sim.run_view()
            out = np.zeros(len(GLOBAL_FEATURES), dtype=np.float32)
            g = GLOBAL_COLUMN
            if sl is not None:
                A = sl.view.num_active
                out[g["active_jobs"]] = math.log1p(A) / math.log1p(self.K)
                out[g["placed_frac"]] = 0.0
                out[g["visible_frac"]] = sl.k.size / max(sl.total, 1)
                out[g["arrived"]] = math.log1p(len(sl.view.arrived))
                out[g["completed"]] = math.log1p(len(sl.view.completed))
            hours = max(run.time_s - self._t0, 0.0) / 3600.0
            out[g["time_h"]] = min(math.log1p(hours), LOG_CAP)
            out[g["jobs_left_frac"]] = run.jobs_unfinished / len(self._sim.jobs)
            self._global_cache = np.clip(out, 0.0, LOG_CAP)
            self._global_round = sl
        out = self._global_cache.copy()
        if sl is not None:
            out[GLOBAL_COLUMN["placed_frac"]] = (len(self._sim.run_view().placements)
                                                 / max(sl.view.num_active, 1))
        return out

    def _valid(self) -> np.ndarray:
        raise RuntimeError("subclasses define the validity of slots")

    def _observation(self) -> dict:
        t0 = time.perf_counter()
        sl = self._slots
        if sl is None:
            cand = np.zeros(self.observation_space["candidates"].shape, dtype=np.float32)
        else:
            cand = sl.features.reshape(-1)          # a view: features is (K, F) contiguous
            if self.places_within_round:
                # select mode observes a round after every placement: each observation gets
                # its own copy. Rank mode observes each round once (its step closes the
                # round), and the environment never reads the features itself, so the
                # round's matrix is handed over as it is (~14 MB at 150,000 slots on
                # large-2048; docs/environments.md, "Observations").
                cand = cand.copy()
        obs = {"candidates": cand, "valid": self._valid().astype(np.float32),
               "cluster": self._cluster_obs().reshape(-1), "global": self._global_obs()}
        #: wall-clock time of this observation: its round's slots (built once, counted with
        #: the round's first observation) and the observation itself (``observation_s``)
        self._observation_s = self._slots_build_s + (time.perf_counter() - t0)
        self._slots_build_s = 0.0
        return obs

    @property
    def observation_s(self) -> float:
        """Wall-clock seconds the last observation took to build: the candidate slots of its
        round (ordering and features, when the round opened; counted once) and the
        observation's arrays. What an agent deciding on the observation depends on, beyond
        the simulator's own step."""
        return self._observation_s

    def _info(self) -> dict:
        run = self._sim.run_view()
        info = {"time_s": float(run.time_s), "round": int(run.rounds),
                "active_jobs": 0 if self._slots is None else int(self._slots.view.num_active),
                "candidates_total": 0 if self._slots is None else int(self._slots.total),
                "episode_seed": int(self._episode_seed)}
        if self.ended:
            info["end_reason"] = self.end_reason
            info["metrics"] = self.metrics()
        return info

    @property
    def ended(self) -> bool:
        """Whether the episode is over (the simulation ended, or the environment ended it)."""
        self._require_episode("ended")
        return self._end_reason is not None or self._sim.finished

    @property
    def end_reason(self) -> str | None:
        """Why the episode ended: the simulator's ``end_reason`` (``"completed"``,
        ``"time_limit"``, ``"stalled"``) or the environment's own (select mode:
        ``"invalid_action"``, ``"invalid_actions"``); ``None`` while it runs."""
        self._require_episode("end_reason")
        return self._end_reason or (self._sim.end_reason if self._sim.finished else None)

    def _end(self, reason: str) -> None:
        """End the episode here (the simulator has not finished): no round is open any more."""
        self._end_reason = reason
        self._slots = None

    def _done_flags(self) -> tuple[bool, bool]:
        """(terminated, truncated): terminated when every job completed or an invalid action
        ended the episode (``invalid_action="terminate"``), truncated by any other end."""
        reason = self.end_reason
        if reason is None:
            return False, False
        terminal = reason in ("completed", "invalid_action")
        return terminal, not terminal

    def _check_running(self) -> None:
        if self._sim is None:
            raise RuntimeError("call reset() before step()")
        if self.ended:
            raise RuntimeError("the episode has ended; call reset()")

    # ------------------------------------------------------------------ public helpers
    def metrics(self) -> dict:
        """The simulation's metrics so far (``hsched simulate``'s keys), with the policy name
        ``env:<mode>``."""
        self._require_episode("metrics()")
        res = self._sim.result()
        res.policy = f"env:{self._mode}"
        m = res.metrics()
        if self._uses_lp() and self._lp is not None:
            m.update(getattr(self._lp, "summary", lambda: {})())
        return m

    @property
    def simulator(self) -> Simulator:
        """The simulator engine of the current episode (read it, do not drive it)."""
        return self._sim

    @property
    def slots(self) -> RoundSlots | None:
        """The open round's candidate slots (``None`` when the episode has ended): which job
        and candidate row each slot shows, and their features. Read it, do not change it."""
        return self._slots

    def episode_record(self) -> dict:
        """What replays this episode: environment id, arguments, episode seed and actions
        (JSON-ready). ``hsched_env.envs.replay(record)`` re-runs it."""
        acts = [a.tolist() if isinstance(a, np.ndarray) else int(a) for a in self._actions]
        return {"env_id": self.spec.id if self.spec is not None else None,
                "class": type(self).__name__, "kwargs": self._kwargs_record(),
                "seed": self._episode_seed, "actions": acts}

    def _kwargs_record(self) -> dict:
        cfg = self.sim_config
        return {"cluster": self.cluster.name if _is_preset(self.cluster) else
                self.cluster.to_dict(), "workload": self.workload_spec,
                "slots": self.K, "job_candidates": cfg.planner.max_candidates,
                "round_s": cfg.round_s, "restart_s": cfg.restart_s,
                "throughputs": cfg.throughputs, "reward": self.reward_kind,
                "reward_scale": self.reward_scale, "lp_policy": self.lp_policy_name,
                "lp_objective": self.lp_objective, "max_time_s": cfg.max_time_s}

    def get_state(self):
        """A snapshot of the episode (simulator, LP state, open round, RNG) to branch from:
        ``set_state(snapshot)`` returns to it, any number of times. The wrappers' counters
        (``TimeLimit``'s steps) are not in it."""
        self._require_episode("get_state()")
        return self._copy_state(self._state_dict())

    def set_state(self, snapshot) -> None:
        """Return to a ``get_state()`` snapshot of an environment configured as this one (the
        same class and constructor arguments): of any of its episodes, also into an
        environment that was never reset or was closed (e.g. a worker's copy). A snapshot of
        another configuration is refused with a ``ConfigError`` naming what differs."""
        self._check_snapshot(snapshot)
        seed = snapshot["_episode_seed"]
        same_episode = (self._sim is not None and self._episode_seed is not None
                        and self._workload_spec(self._episode_seed) == self._workload_spec(seed))
        # the run's state is the snapshot's; its jobs are those of the snapshot's episode
        sim = self._sim if same_episode else self._episode_simulator(seed)
        if self._jobs_key_of(sim) != snapshot[_SNAPSHOT_JOBS]:
            raise ConfigError(f"the snapshot's episode (seed {seed}) has other jobs than this "
                              f"environment's workload {show(self.workload_spec)} gives for "
                              f"that seed", field="snapshot")
        state = self._copy_state(snapshot)
        self._clear_caches()                 # the snapshot may be of another episode's jobs
        for key, value in state.items():
            if key == "sim_state":
                self._sim = sim.restored(value)
            elif key == "np_random":
                self._np_random = value
            elif key not in (_SNAPSHOT_CONFIG, _SNAPSHOT_JOBS):
                setattr(self, key, value)

    def _check_snapshot(self, snapshot) -> None:
        """A ``ConfigError`` unless ``snapshot`` is a ``get_state()`` snapshot of an
        environment configured as this one (``_snapshot_config``)."""
        if not (isinstance(snapshot, dict) and _SNAPSHOT_CONFIG in snapshot
                and _SNAPSHOT_JOBS in snapshot and "sim_state" in snapshot):
            got = ("a dict without a snapshot's keys" if isinstance(snapshot, dict)
                   else type(snapshot).__name__)
            raise ConfigError(f"set_state takes a snapshot from get_state(), got {got}",
                              field="snapshot")
        mine = self._snapshot_config()
        theirs = snapshot[_SNAPSHOT_CONFIG]
        keys = ["class"] + sorted((set(mine) | set(theirs)) - {"class"})
        differ = [k for k in keys if mine.get(k) != theirs.get(k)]
        if differ:
            shown = "; ".join(f"{k}: snapshot {theirs.get(k)!r}, this environment "
                              f"{mine.get(k)!r}" for k in differ[:4])
            raise ConfigError(f"the snapshot is of an environment configured otherwise "
                              f"({shown}{'; ...' if len(differ) > 4 else ''}): set_state "
                              f"restores snapshots of the same class and arguments only",
                              field="snapshot")

    def _jobs_key_of(self, sim: Simulator) -> str:
        """``_jobs_key`` of ``sim``'s jobs, kept for the last job list asked about (a
        simulator and its restored copies share one)."""
        hit = self._jobs_digest
        if hit is None or hit[0] is not sim.jobs:
            hit = self._jobs_digest = (sim.jobs, _jobs_key(sim.jobs))
        return hit[1]

    def _snapshot_config(self) -> dict:
        """What a snapshot must match to be restored here, as plain values: the class and
        the constructor arguments, with the throughput source by name (``None`` and
        ``"analytic"`` alike; a source given as an object by its type) and the LP in use by
        its type, name and objective (``lp_objective=None`` and the policy's own objective
        alike; an injected ``lp=`` or ``lp_factory=`` too). The workload is compared by the
        episode's jobs (``_SNAPSHOT_JOBS``), so two spellings of one spec are alike."""
        out = {"class": type(self).__name__, **self._kwargs_record()}
        for key in ("workload", "lp_policy", "lp_objective"):
            del out[key]
        source = self.sim_config.throughputs
        out["throughputs"] = ("analytic" if source in (None, "") else source
                              if isinstance(source, str) else type(source).__name__)
        lp = self.lp if self._uses_lp() else None
        out["lp"] = None if lp is None else (type(lp).__name__, getattr(lp, "name", None),
                                             getattr(lp, "objective", None))
        return out

    def _state_dict(self) -> dict:
        return {_SNAPSHOT_CONFIG: self._snapshot_config(),
                _SNAPSHOT_JOBS: self._jobs_key_of(self._sim),
                "sim_state": self._sim.snapshot(), "_lp": self._lp, "_slots": self._slots,
                "np_random": self._np_random, "_episode_seed": self._episode_seed,
                "_t0": self._t0, "_actions": self._actions, "_job_time": self._job_time,
                "_completed": self._completed, "_end_reason": self._end_reason,
                "_empty_episode": self._empty_episode, **self._extra_state()}

    def _extra_state(self) -> dict:
        return {}

    def _copy_state(self, state: dict) -> dict:
        """A deep copy of ``state`` (candidate tables and the cluster shared); the simulator's
        snapshot is not copied again: it is never changed, and ``restored`` copies it."""
        rest = {k: v for k, v in state.items() if k != "sim_state"}
        memo = {id(self.cluster): self.cluster}
        for t in self._tables.values():
            memo[id(t)] = t
        return {"sim_state": state["sim_state"], **copy.deepcopy(rest, memo)}

    # ------------------------------------------------------------------ rendering
    def render(self):
        if self.render_mode is None:
            gym.logger.warn("render() without render_mode: pass render_mode='ansi' or "
                            "'rgb_array' to the constructor")
            return None
        self._require_episode("render()")
        if self.render_mode == "ansi":
            return render.text(self)
        return render.picture(self)


#: The keys of a ``get_state()`` snapshot that record the environment's class and arguments
#: (``HSchedEnvBase._snapshot_config``) and its episode's jobs (``_jobs_key``).
_SNAPSHOT_CONFIG = "config"
_SNAPSHOT_JOBS = "episode_jobs"


def _jobs_key(jobs) -> str:
    """A digest of an episode's jobs (ids, arrivals, models, work, requests, durations): what
    a snapshot's episode must have in common with the one it is restored into."""
    digest = hashlib.blake2b(digest_size=16)
    digest.update(repr([(j.job_id, j.arrival_s, j.model, j.work_samples, j.requested_gpus,
                         j.duration_s) for j in jobs]).encode())
    return digest.hexdigest()


class _NoPolicy:
    """The environments drive the simulator themselves."""

    name = "env"

    def reset(self, cluster, seed) -> None:
        pass

    def decide(self, view):
        raise RuntimeError("the environment places jobs itself")


def _arguments(cls) -> list[str]:
    """The keyword arguments ``cls(...)`` takes (its own and its base classes')."""
    names = []
    for klass in cls.__mro__:
        init = klass.__dict__.get("__init__")
        if init is None or klass is gym.Env or klass is object:
            continue
        for p in inspect.signature(init).parameters.values():
            if p.name != "self" and p.kind not in (p.VAR_KEYWORD, p.VAR_POSITIONAL) \
                    and p.name not in names:
                names.append(p.name)
    return names


def _unknown_arguments(cls, names: list[str]) -> str:
    """The error message for arguments ``cls`` does not take: its own, and which environment
    an argument belongs to when it is the other mode's."""
    from hsched_env.envs.rank import RankEnv
    from hsched_env.envs.schedule import ScheduleEnv
    hints = []
    for other in (ScheduleEnv, RankEnv):
        if other is not cls and not issubclass(cls, other):
            theirs = [n for n in names if n in _arguments(other)]
            if theirs:
                hints.append(f"{', '.join(map(repr, theirs))} belong"
                             f"{'s' if len(theirs) == 1 else ''} to {other.__name__} "
                             f"({ENV_IDS_BY_CLASS[other.__name__]})")
    plural = "s" if len(names) > 1 else ""
    return (f"{cls.__name__} got an unexpected keyword argument{plural} "
            f"{', '.join(map(repr, names))}"
            f"{' (' + '; '.join(hints) + ')' if hints else ''}; its arguments: "
            f"{', '.join(_arguments(cls))}")


#: The most candidate slots (K) an environment takes: 2**22, far above any round's
#: candidates (a 20,000-job round of ~70 candidates a job has 1.4 million), and the
#: observation's (K, F) float32 matrix is already ~0.4 GB there; a larger K is a mistake that
#: would otherwise end in a memory error or the system's out-of-memory killer.
MAX_SLOTS = 2 ** 22


def check_reset_options(options) -> None:
    """``reset``'s ``options``: none are taken. ``None`` or an empty mapping (Gymnasium's
    vector environments and ``env_checker`` pass ``{}``) pass; anything else is a
    ``ValueError`` naming it. The base ``reset`` calls it before it changes anything, and
    the subclasses clear their own state after it, so a refused call leaves the episode as
    it was."""
    if options:
        keys = sorted(map(str, options)) if isinstance(options, dict) else None
        raise ValueError(f"reset(options=...): this environment takes no reset options, "
                         f"got {keys if keys is not None else repr(options)}: set the "
                         f"scenario (cluster, workload, max_time_s, ...) with "
                         f"gymnasium.make's keywords")


def slot_count(slots, max_candidates, default: int) -> int:
    """K, the candidate slots, from ``slots`` or its old name ``max_candidates`` (kept as an
    alias; ``default`` when neither is given), checked to be a positive integer of at most
    ``MAX_SLOTS``."""
    if slots is not None and max_candidates is not None:
        raise ConfigError("give slots or its old name max_candidates, not both",
                          field="slots")
    name, value = (("max_candidates", max_candidates) if max_candidates is not None
                   else ("slots", default if slots is None else slots))
    if not (isinstance(value, (int, np.integer)) and not isinstance(value, bool)
            and value >= 1):
        raise ConfigError(f"{name} (K slots) must be a positive integer, got {value!r}",
                          field=name)
    if value > MAX_SLOTS:
        raise ConfigError(f"{name} (K slots) must be at most {MAX_SLOTS:,} (the observation "
                          f"holds K rows of features), got {int(value):,}", field=name)
    return int(value)


def _gpu_mem(name: str) -> float:
    return get_gpu(name).memory_gb


def _named(exc: ConfigError, field: str, *, inside: bool = False) -> ConfigError:
    """``exc`` (an ``UnknownNameError`` or a plain ``ConfigError``) naming the constructor
    argument ``field`` (the look-ups it comes from do not know which argument they serve);
    ``inside``: the field the error names is a path inside the argument (a cluster mapping's
    ``nodes[0].gpu_type``), kept as ``field.path``."""
    inner = exc.field if inside and exc.field and exc.field != field else None
    where = dict(field=f"{field}.{inner}" if inner else field, source=exc.source,
                 line=exc.line)
    if isinstance(exc, UnknownNameError):
        return UnknownNameError(exc.kind, exc.name, exc.valid, **where)
    return ConfigError(exc.reason, **where)


def _is_preset(cluster: Cluster) -> bool:
    """Whether ``cluster`` is the preset of its name (its pools, not only its name): a record
    names it by that name, else it holds the cluster itself (``Cluster.to_dict()``)."""
    return cluster.name in cluster_presets() and get_cluster(cluster.name) == cluster


def _part_sizes(gpus, pa, pb, cluster):
    """GPUs of each slot's first and second part (pool order as ``candidate_parts``)."""
    types = cluster.gpu_types
    pool_type_idx = np.array([types.index(p.gpu_type) for p in cluster.pools], dtype=np.int64)
    idx = np.arange(len(pa))
    na = gpus[idx, pool_type_idx[pa]] if len(pa) else np.zeros(0, dtype=np.int64)
    nb = (np.where(pb >= 0, gpus[idx, pool_type_idx[np.maximum(pb, 0)]], 0) if len(pa)
          else np.zeros(0, dtype=np.int64))
    return na, nb


def timed(fn, *args, **kwargs):
    """``(result, seconds)`` of one call."""
    t0 = time.perf_counter()
    out = fn(*args, **kwargs)
    return out, time.perf_counter() - t0
