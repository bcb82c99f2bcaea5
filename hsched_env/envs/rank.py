"""``hsched/Rank-v0``: rank mode — the agent keeps candidates, the LP solves over them."""

from __future__ import annotations

import copy
import inspect
import math
from dataclasses import dataclass

import gymnasium as gym
import numpy as np
from gymnasium import spaces

from hsched_env.defaults import ENV_WORKLOAD
from hsched_env.envs.base import HSchedEnvBase, slot_count, timed
from hsched_env.errors import ConfigError, check_switch, is_real_number, shorten


#: What a ``RankEnv``'s kept candidates restrict (its ``prune`` argument): ``"seed"``
#: restricts nothing, the kept candidates start the LP's column generation.
PRUNE_SCOPES = ("all", "lp", "seed")
#: A candidate whose share of time in the LP's allocation is above this is in its support
#: (``reference_action``, ``decided_support``).
SUPPORT_SHARE = 1e-6


def allocation_support(allocation: dict, jobs=None) -> np.ndarray:
    """(n, 2) int64: the ``(job id, candidate row)`` pairs with a share above
    ``SUPPORT_SHARE`` in an LP allocation ``{job id: (rows, X)}`` (``LPPolicy.allocation``,
    ``LPPolicy.shares``); with ``jobs``, of those jobs only."""
    if not allocation:
        return np.zeros((0, 2), dtype=np.int64)
    parts = list(allocation.values())
    ids = np.fromiter(allocation.keys(), dtype=np.int64, count=len(parts))
    sizes = np.fromiter((len(rows) for rows, _ in parts), dtype=np.int64, count=len(parts))
    rows = np.concatenate([np.asarray(r, dtype=np.int64).reshape(-1) for r, _ in parts])
    shares = np.concatenate([np.asarray(x, dtype=float).reshape(-1) for _, x in parts])
    ids = np.repeat(ids, sizes)
    on = shares > SUPPORT_SHARE
    if jobs is not None:
        on &= np.isin(ids, np.asarray(jobs, dtype=np.int64))
    return np.stack([ids[on], rows[on]], axis=1)


@dataclass(frozen=True)
class NotKeepBits:
    """What makes an array not keep bits (``not_keep_bits``): a complex dtype, or its first
    slot holding a value that is not 0 or 1, that value and how many slots hold one."""

    complex: bool
    slot: int = -1
    value: object = None
    count: int = 0


def not_keep_bits(a: np.ndarray) -> NotKeepBits | None:
    """``None`` if ``a`` (one dimension) holds keep bits: bools, or numbers that are 0 or 1;
    else what is wrong. Keep probabilities (0.9), -1, 2, NaN and ``None`` are not keep bits,
    nor are complex numbers (1+0j == 1): a cast would hide them (``int8`` makes 0.9 a 0,
    ``bool`` a 1). ``RankEnv.step`` and ``hsched evaluate``'s check of an agent's ``keep()``
    each say so in their own words."""
    if a.dtype == bool:
        return None
    if a.dtype.kind == "c":
        return NotKeepBits(complex=True)
    with np.errstate(invalid="ignore"):
        bits = np.asarray((a == 0) | (a == 1), dtype=bool)
    bad = np.flatnonzero(~np.broadcast_to(bits, a.shape))
    if not bad.size:
        return None
    v = a[bad[0]]
    return NotKeepBits(False, int(bad[0]), v.item() if isinstance(v, np.generic) else v,
                       bad.size)


class RankEnv(HSchedEnvBase):
    """
    ## Description

    The same cluster and jobs as ``hsched/Schedule-v0``, one step per scheduling round: the
    observation shows every candidate (job-strategy pair) of the round in K slots, the agent
    says which to **keep**, and the HeteroSched LP (``lp_policy``) solves the allocation over
    the kept candidates only, then rounds it to the round's assignment (docs/lp.md) and the
    round runs. Fewer kept candidates make a smaller LP — a faster decision — at the risk of
    a worse schedule: the agent learns to prune the LP without hurting job completion times.
    Jobs with no kept candidate wait this round (with ``prune="lp"``: unless the rounding's
    repair places them, see Arguments).

    ## Action Space

    ``MultiBinary(K)``: keep bit per slot. Why keep bits rather than ``Box`` scores with a
    top-k rule: the LP's own decision *is* a set (its support), so imitation has an exact
    target; the agent chooses its budget per round (the penalty below prices it) instead of
    a fixed k; and a permutation-equivariant policy emits one independent Bernoulli logit
    per candidate, which PPO and MaskablePPO support natively. Bits on empty slots are ignored
    (counted in ``info["ignored_keeps"]``). ``action_masks()`` returns the sb3-contrib
    MultiBinary mask of shape (2K,): per slot [drop allowed, keep allowed].

    ## Observation Space

    As ``hsched/Schedule-v0`` (flat float32 vectors: ``candidates`` (K·F,), ``valid`` (K,),
    ``cluster`` (T·4,), ``global`` (7,)); ``valid`` marks the slots that hold a candidate; the LP features
    (``lp_share``, ``lp_assigned``) are 0 — the LP has not run yet when the agent decides.
    Slots are ordered round-robin over jobs (each job's best candidate by throughput per GPU
    relative to its requested GPUs, then each job's second, ...); when a round has more
    candidates than K, the lowest in that order are cut (``info["overflow"]``).

    ## Rewards

    ``-(job-time accrued in the round) / reward_scale - keep_cost × kept / total``:
    the job-time term as in select mode (an episode's sum is −Σ JCT ÷ scale), plus a
    deterministic proxy for decision cost (kept ÷ all candidates of the round), so episodes
    stay reproducible. The measured cost is in ``info``: ``lp_vars``, ``lp_restricted_solves``
    (the LP's column-generation solves this round, 0 when it ran the dual simplex or reused
    an answer: what a start saves), ``kept``, ``total``,
    and with ``measure_time=True`` ``decision_time_s`` (wall-clock LP time of the round: off
    by default, so that a step's ``info`` is deterministic, as Gymnasium's checker requires;
    the last step's ``info["metrics"]`` still holds wall-clock ``decision_time_*`` and
    ``wall_s`` fields);
    with ``compare_full=True`` also ``full_objective`` and ``kept_objective`` — the full LP's
    and the kept LP's allocations scored by the LP objective on the round's whole problem
    (a job with no kept candidate counts with no share; for a two-stage objective with a
    floor above 0, such as ``fair-srpt``, ``-inf`` when the kept allocation breaks the whole
    problem's fairness floor), so kept ≤ full for a maximized objective — and
    ``full_lp_vars``.

    ## Starting State

    As ``hsched/Schedule-v0``.

    ## Episode End

    As ``hsched/Schedule-v0``; each step is one round, and any keep bits are a valid action
    (bits on empty slots are ignored), so there is no invalid-action rule; an action that is
    not K bits of 0 or 1 (a wrong shape, a probability, NaN) raises a ``ConfigError``. The
    registered ids set a step limit (``max_episode_steps``; ``docs/environments.md``).

    ## Arguments

    Those of ``hsched/Schedule-v0`` (but ``slots`` defaults to 1024 and there is no
    ``candidate_filter``), and:

    | Argument | Default | Meaning |
    |---|---|---|
    | ``keep_cost`` | 0.05 | λ, the reward's price of keeping every candidate |
    | ``prune`` | ``"all"`` | what the kept set restricts: ``"all"`` — the LP solve, its rounding and the simulator's fallbacks (a job with no kept candidate waits); ``"lp"`` — the LP solve only: the rounding's repair and each assignment's fallbacks (smaller candidates on the same type) still see every candidate, so keeping the LP's support alone reproduces the pure LP's schedule (the default ``heterosched-lp``; an LP whose optimum is not unique or that draws random numbers — ``gavel``, ``agnostic-lp``, ``pop-K`` — may solve the restricted LP to another optimum, see ``reference_action``); ``"seed"`` — nothing: the LP solves the whole round and the kept candidates are its column generation's first columns (``LPPolicy.decide``'s ``lp_start``), so without a time limit the schedule is the pure LP's optimum (its objective value, certified by pricing; possibly another optimal vertex) whatever is kept, and a kept set close to the LP's support makes it faster (on large rounds only: column generation is ``lp_method="auto"``'s from 2,000 LP columns up; smaller LPs ignore the start). ``keep_cost`` still prices the kept share, and nothing else in the reward depends on it, so this scope is for imitation-trained rankers, not for reward-driven RL |
    | ``compare_full`` | ``False`` | also solve the full LP each round and report its objective |
    | ``measure_time`` | ``False`` | ``True`` adds the wall-clock ``decision_time_s`` (the LP's time) and ``observation_time_s`` (building the returned observation: its round's candidate slots and features, what a ranker needs before it can score them) to ``info``, the latter also to ``reset``'s (opt-in: they differ between two runs of the same episode, which Gymnasium's step-determinism check rejects) |

    ``reference_action()`` keeps exactly the LP's support: the candidates the full LP gives a
    share plus those its rounded assignment lists this round (with ``prune="lp"`` or
    ``"seed"``, the shares alone: the rounding's repair and fallbacks need no keep bit
    there).

    ## Version History

    * v0: Initial version. Revised 2026-12-02 (same id): the registered id has a step limit
      (5,000), and the wall-clock ``decision_time_s`` is in ``info`` only with
      ``measure_time=True`` (before: always, 0.0 with ``measure_time=False``).
    """

    _mode = "rank"
    places_within_round = False

    def __init__(self, cluster="sia-64", workload=ENV_WORKLOAD, *,
                 slots: int | None = None, max_candidates: int | None = None,
                 keep_cost: float = 0.05, prune: str = "all",
                 compare_full: bool = False, measure_time: bool = False, **kwargs) -> None:
        if not (is_real_number(keep_cost) and keep_cost >= 0 and math.isfinite(keep_cost)):
            raise ConfigError(f"keep_cost must be a number >= 0, got {keep_cost!r}",
                              field="keep_cost")
        check_switch(compare_full, "compare_full")
        check_switch(measure_time, "measure_time")
        self.keep_cost = float(keep_cost)
        if prune not in PRUNE_SCOPES:
            raise ConfigError(f"prune must be one of {', '.join(map(repr, PRUNE_SCOPES))}, "
                              f"got {prune!r}", field="prune")
        self.prune = prune
        self._lp_start_next = None           # set_lp_start's hint for the next step
        #: the last step's (allocation, the round's job ids) for ``decided_support``
        self._decided = None
        self.compare_full = bool(compare_full)
        self.measure_time = bool(measure_time)
        self._warned_overflow = False        # (_open_round: once per environment)
        super().__init__(cluster, workload, slots=slot_count(slots, max_candidates, 1024),
                         **kwargs)
        self.action_space = spaces.MultiBinary(self.K)
        lp = self.lp
        if not all(callable(getattr(lp, m, None)) for m in ("decide", "shares", "evaluate")):
            raise ConfigError(f"rank mode needs an LP policy (decide(view, allowed=...), "
                              f"shares, evaluate); {self._lp_source()} is not one",
                              field="lp" if self._lp_given is not None else "lp_policy")
        params = inspect.signature(lp.decide).parameters
        if self.prune == "lp" and "lp_rows" not in params and not any(
                q.kind is inspect.Parameter.VAR_KEYWORD for q in params.values()):
            raise ConfigError(f"prune='lp' needs an LP policy whose decide takes lp_rows= "
                              f"(rows only its solve is restricted to); "
                              f"{self._lp_source()} does not", field="prune")
        #: whether the LP's decide takes lp_start= (``prune="seed"``, ``set_lp_start``)
        self.takes_lp_start = "lp_start" in params or any(
            q.kind is inspect.Parameter.VAR_KEYWORD for q in params.values())
        if self.prune == "seed" and not self.takes_lp_start:
            raise ConfigError(f"prune='seed' needs an LP policy whose decide takes lp_start= "
                              f"(rows its column generation starts from); "
                              f"{self._lp_source()} does not", field="prune")

    def _lp_source(self) -> str:
        """The LP policy in use, as an error message names it."""
        if self._lp_given is not None:
            return f"the given lp ({type(self._lp_given).__name__})"
        return repr(self.lp_policy_name)

    def _kwargs_record(self) -> dict:
        return {**super()._kwargs_record(), "keep_cost": self.keep_cost,
                "prune": self.prune,
                "compare_full": self.compare_full, "measure_time": self.measure_time}

    def _extra_state(self) -> dict:
        # a pending set_lp_start hint belongs to the round it was given for; the last
        # decision's allocation to the state it was made in (the LP's own, in one deep copy)
        return {"_lp_start_next": self._lp_start_next, "_decided": self._decided}

    def _valid(self) -> np.ndarray:
        v = np.zeros(self.K, dtype=bool)
        if self._slots is not None:
            v[:self._slots.k.size] = True
        return v

    def slot_jobs(self) -> np.ndarray:
        """(K,) job id of each slot's candidate, -1 for empty slots."""
        out = np.full(self.K, -1, dtype=np.int64)
        if self._slots is not None:
            out[:self._slots.k.size] = self._slots.job
        return out

    def action_masks(self) -> np.ndarray:
        """(2K,) bool for sb3-contrib MultiBinary masking: per slot [drop, keep]; keeping
        an empty slot is masked."""
        self._require_episode("action_masks()")
        v = self._valid()
        return np.stack([np.ones(self.K, dtype=bool), v], axis=1).reshape(-1)

    def set_lp_start(self, bits) -> None:
        """A hint for the next ``step`` only: the slots (K bits) whose candidates start the
        LP's column generation (``LPPolicy.decide``'s ``lp_start``), e.g. a ranker's
        best-scored candidates when it keeps more than that. It restricts nothing and
        changes no optimal value: the LP's answer is as fast to reach as the hint is close
        to its support (column generation only; the other methods ignore it; under a time
        limit a solve cut short may end elsewhere). Under
        ``prune="seed"`` the action itself is the start, and the hint is added to it."""
        self._check_running()
        if not self.takes_lp_start:
            raise ConfigError(f"set_lp_start needs an LP policy whose decide takes lp_start= "
                              f"(rows its column generation starts from); "
                              f"{self._lp_source()} does not", field="lp_policy")
        b = np.asarray(bits)
        if b.shape != (self.K,) or not np.all((b == 0) | (b == 1)):
            raise ConfigError(f"set_lp_start takes {self.K} bits of 0 or 1 (one per slot), "
                              f"got {b.dtype} of shape {b.shape}", field="bits")
        self._lp_start_next = b.astype(bool)[:self._slots.k.size]

    def _open_round(self) -> None:
        """The base's round, and a warning the first time a round has more candidates than
        the K slots: the cut ones can be neither kept nor run, and where they hold a job's
        only candidates worth running (the LP's support), that job waits (a K of 8 on
        ``Rank-Tiny-v0`` left every job waiting from round 20 on, under the LP reference
        too)."""
        super()._open_round()
        sl = self._slots
        if sl is not None and sl.total > sl.k.size and not self._warned_overflow:
            self._warned_overflow = True
            gym.logger.warn(f"a round at t={sl.view.time_s:g} s has {sl.total} candidates "
                            f"and only K={self.K} slots: the {sl.total - sl.k.size} lowest in "
                            f"the slot order are cut, and can be neither kept nor run "
                            f"(info['overflow'] counts them each round; warned once). Give "
                            f"slots= at least the largest round's candidate count (hsched "
                            f"evaluate uses agents.runners.rank_slots_bound)")

    def _kept_rows(self, keep: np.ndarray, hint, whole: bool) -> tuple:
        """The LP's rows from the keep bits (``None``: every candidate kept, and none cut by
        the slots) and its column-generation start (``lp_start``, from ``set_lp_start``)."""
        rows = None if whole and keep.all() else self._allowed(keep)
        return rows, ({} if hint is None else {"lp_start": self._allowed(hint)})

    def _allowed(self, keep: np.ndarray) -> list[np.ndarray]:
        sl = self._slots
        A = sl.view.num_active
        kk, rr = sl.k[keep], sl.row[keep]
        order = np.lexsort((rr, kk))                # by job, each job's rows ascending
        kk, rr = kk[order], rr[order]
        bounds = np.searchsorted(kk, np.arange(1, A))
        return np.split(rr, bounds) if A else []

    def step(self, action):
        if self._empty_episode:
            return self._step_of_an_empty_episode()
        self._check_running()
        a = np.asarray(action)
        if a.shape != (self.K,):
            got = (f"shape {a.shape}" if isinstance(action, (np.ndarray, list, tuple))
                   else f"{type(action).__name__} {shorten(repr(action), 40)}")
            raise ConfigError(f"a Rank-v0 action is {self.K} keep bits (an array of shape "
                              f"({self.K},)), got {got}", field="action")
        wrong = not_keep_bits(a)
        if wrong is not None and wrong.complex:
            raise ConfigError(f"a Rank-v0 action is {self.K} keep bits (0 or 1), got complex "
                              f"numbers ({a.dtype})", field="action")
        if wrong is not None:
            raise ConfigError(f"a Rank-v0 action is {self.K} keep bits (0 or 1); slot "
                              f"{wrong.slot} holds {wrong.value!r} ({wrong.count} slot(s) are "
                              f"not 0 or 1): threshold probabilities before stepping",
                              field="action")
        a = a.astype(bool)
        self._actions.append(a.astype(np.int8))
        sl = self._slots
        M = sl.k.size
        keep = a[:M]
        ignored = int(a[M:].sum())
        view = sl.view
        lp = self.lp
        hint, self._lp_start_next = self._lp_start_next, None     # set_lp_start's
        # the decision's time includes turning the keep bits into each job's rows (a ranked
        # decision pays it, the pure LP's does not; 4.5-7.1 ms a round at 2,200 jobs)
        if self.prune == "seed":
            # nothing restricted: the kept rows are the first columns of the whole LP
            start = keep if hint is None else keep | hint
            start_rows, prep = timed(self._allowed, start)
            decision, dt = timed(lp.decide, view, lp_start=start_rows)
        else:
            # every candidate kept (and none cut by the slots): the whole LP, with nothing to
            # intersect — the same allocation as ``allowed`` = every row, without its cost
            (rows, start), prep = timed(self._kept_rows, keep, hint, sl.total == M)
            if self.prune == "lp":
                decision, dt = timed(lp.decide, view, lp_rows=rows, **start)
            else:
                decision, dt = timed(lp.decide, view, allowed=rows, **start)
        dt += prep
        stats = lp.last_stats
        alloc = getattr(lp, "allocation", None)              # (an LP may not show one)
        self._decided = None if alloc is None else (alloc, view.job_ids)
        self._sim.record_decision(dt, getattr(stats, "lp_vars", 0) or 0)
        extra = {}
        if self.compare_full:
            full_alloc, full = lp.shares(view)
            extra = {"full_objective": lp.evaluate(view, full_alloc),
                     "kept_objective": lp.evaluate(view, lp.allocation),
                     "full_lp_vars": int(full.lp_vars)}
        kept = int(keep.sum())
        self._sim.place_decision(decision, who=f"LP {self.lp_policy_name!r}")
        self._sim.advance()
        self._open_round()
        reward = self._time_reward() - self.keep_cost * kept / max(sl.total, 1)
        terminated, truncated = self._done_flags()
        obs = self._observation()
        info = self._info()
        if self.measure_time:
            info["decision_time_s"] = float(dt)
            info["observation_time_s"] = float(self.observation_s)
        info.update(lp_vars=int(getattr(stats, "lp_vars", 0) or 0),
                    lp_restricted_solves=int(getattr(stats, "extra", {}).get(
                        "restricted_solves", 0)), kept=kept,
                    total=int(sl.total), overflow=int(sl.total - M), ignored_keeps=ignored,
                    **extra)
        return obs, float(reward), terminated, truncated, info

    def reset(self, *, seed: int | None = None, options: dict | None = None):
        obs, info = super().reset(seed=seed, options=options)  # (it refuses bad options first)
        self._lp_start_next = None
        self._decided = None
        if self.measure_time:
            info["observation_time_s"] = float(self.observation_s)
        return obs, info

    @property
    def decisions(self) -> int:
        """Steps taken this episode (each decided one round)."""
        return len(self._actions)

    def decided_support(self) -> np.ndarray | None:
        """(n, 2) int64: the ``(job id, candidate row)`` pairs of the round the last ``step``
        decided with a share above ``SUPPORT_SHARE`` in the LP's allocation (jobs of that
        round only: an LP that kept an earlier allocation may still list finished jobs); n
        = 0 before the first step of an episode. After a step that kept every candidate of a
        round whose candidates all had slots (or under ``prune="seed"``), that is the whole
        LP's support, the pairs ``reference_action`` keeps for ``prune="lp"``; after a pruned
        step, the restricted LP's. ``None`` after a step of an LP policy without an
        ``allocation`` (``{job id: (rows, X)}``, as ``LPPolicy``'s)."""
        if not self._actions:
            return np.zeros((0, 2), dtype=np.int64)
        if self._decided is None:
            return None
        alloc, round_jobs = self._decided
        return allocation_support(alloc, round_jobs)

    def reference_action(self) -> np.ndarray:
        """Keep bits of what the LP uses this round (computed on a copy of the LP's state):
        the candidates with a share in the full LP. Under ``prune="all"`` also the one its
        rounded assignment runs each job with — and, for an LP with ``rounding="integral"``
        (the default), the fallback the simulator places a job on this round when node
        fragmentation blocks its first (a dry run of the placement; until session 50 every
        smaller candidate on the same type, the whole fallback list then). The Gavel-style
        rounding lists every eligible candidate as a fallback, so there only the first
        counts. Under ``prune="lp"`` the rounding sees every candidate anyway, so the LP's
        support is all it needs: the same schedule as the pure LP for the default LP,
        ``heterosched-lp`` (``tests/test_envs.py``). Not for every LP: where the optimum is not
        unique (max-min: ``gavel``, ``agnostic-lp``) the LP over the support alone may end on
        another optimal vertex, and a policy that draws random numbers (POP's partition, the
        agnostic fill's type order) draws them on another problem — a session-44 audit on
        ``Rank-Tiny-v0`` seeds 0–5 found 1 (``gavel``), 5 (``pop-4``) and 5 (``agnostic-lp``)
        of 6 schedules other than ``hsched simulate``'s."""
        self._require_episode("reference_action()")
        sl = self._slots
        if sl is None:
            return np.zeros(self.K, dtype=np.int8)
        lp = copy.deepcopy(self.lp)
        decision = lp.decide(sl.view)
        whole = getattr(lp, "rounding", None) == "integral"
        use = set(map(tuple, allocation_support(lp.allocation).tolist()))
        if self.prune == "all":
            for j, choice in decision.items():
                rows = [choice] if np.ndim(choice) == 0 else list(choice)
                use.add((int(j), int(rows[0])))
            if whole:
                # and the fallback each job is placed on this round where node fragmentation
                # blocks its first row (a dry run of the simulator's placement): the
                # integral rounding lists every candidate worth running as a fallback since
                # session 50, too many to keep them all
                use.update((int(j), int(r)) for j, r in self._sim.try_place_decision(
                    decision, who=f"LP {self._lp_source()}"))
        out = np.zeros(self.K, dtype=np.int8)
        for i, (j, r) in enumerate(zip(sl.job, sl.row)):
            if (int(j), int(r)) in use:
                out[i] = 1
        return out


__all__ = ["PRUNE_SCOPES", "SUPPORT_SHARE", "allocation_support", "NotKeepBits", "RankEnv", "not_keep_bits"]
