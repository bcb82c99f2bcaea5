"""The HeteroSched LP as a scheduling policy, with its decision-overhead heuristics.

Each round (or only when jobs arrive or finish, see ``resolve``) the policy solves the
allocation LP over job × candidate (``lp_baseline.solver``): X[j, c] is the share of time job j
should run with candidate c. The co-optimizer's default objective is ``sia-srpt``: Sia's gain
of running each candidate over waiting, weighted toward jobs near their end (``sia-las``: the
non-clairvoyant weights), over every candidate, with no floor and no size cap; its LP is the
relaxation of a one-candidate-per-job problem, whose vertex has at most T fractional jobs (T
GPU types; per POP part), and ``rounding="integral"`` (``rounding.integral_assignment``) runs each whole job on
its candidate and repairs the few fractional ones — no time slicing. See docs/lp.md.

The other objectives (``fair-srpt`` / ``fair-las``: a max-min fairness floor, then Σ throughput
÷ remaining work, with each job's throughput normalized by its throughput on its fair share
(``normalizer``) and candidates capped at ``max(requested, G / N)`` GPUs (``size_cap``);
``max-min`` and the rest) use the Gavel-style rounding by default: the fractional X is turned
into this round's integral assignment the way Gavel does it, at the level of jobs: a job's priority is its LP share (Σ_c X[j, c])
÷ the share of time it has received since its allocation was made (a re-solve of an unchanged
LP, or one that returns the same allocation, keeps that history) — jobs that have received nothing come
first — with its accumulated deficit (share × elapsed − received) as tie-breaker; jobs are
admitted in priority order if they fit on the nodes (a dry run of the simulator's placement,
``rounding.PlacementDryRun``: jobs rerunning their current candidate keep their nodes first).
Which of its candidates a job runs: its current one if the LP still gives it a share
(``sticky``: a switch costs a restart), else the one most under-served (X minus the share
received); the others with X > 0 follow, then the job's other eligible candidates, fastest
first — a job the LP runs is placed on something that fits rather than idled by node
fragmentation; the rest of the list stays as the simulator's fallbacks. Then (``fill``) GPUs
still free go to waiting jobs that fit, so the schedule is work-conserving. (Rounding per (job,
candidate) pair, as Gavel rounds per (job, type), time-shares a job between its own candidates
and pays a restart at each switch.) Gavel's own policies (``gavel``, ``gavel-resets``,
``agnostic-lp``) round as Gavel's scheduler does instead (``rounding="gavel-queues"``,
``lp_baseline.gavel_queues``): a priority per (job, GPU type), a queue per type, and a history
reset at most every ``GAVEL_MIN_RESET_S``.

Heuristics that cut decision time (``LPPolicy`` arguments):

* ``topk``: keep each job's k candidates with the highest normalized throughput per GPU;
* ``dominance``: drop candidates dominated within the job (no more GPUs of any type, at least as
  fast) — the planner already prunes its own; this also covers the appended requested ones;
* ``resolve="on-change"``: re-solve only when jobs arrive or complete, reusing X otherwise;
* ``pop``: POP-style k-way random partition of the jobs (and ⌊capacity/k⌋ per part), one LP
  per part — the baseline to beat. With ``pop_workers > 1`` the parts' solves run side by side
  (``lp_baseline.parallel_parts``: threads, processes or Ray) and the decision time is what that
  took; ``last_stats.extra`` also has ``pop_sequential_s`` (the parts one after the other),
  ``pop_parallel_s`` (the slowest part: the ideal parallel time) and ``pop_solve_wall_s``.

Faults (``docs/lp.md``, "Faults and fallback"): when an LP part yields no usable allocation —
the round's data is invalid for the LP (NaN, zero throughput), the solver is missing, raises,
proves infeasibility, ends in an error, returns a non-finite or infeasible ``x``, or hits the
decision's time limit without a feasible incumbent — that part falls back to the **greedy
assignment** (``fallback.greedy_allocation``): its jobs in arrival order, each given X = 1 on
its current candidate if it still fits, else its fastest candidate that fits the part's GPUs
still free.
The fallback is counted (``summary()["lp_fallbacks"]``, by kind in ``lp_fallback_kinds``) and
logged as a warning, rate-limited (the 1st, 10th, 100th, … fault of each kind in a run); the
rounding and the fill pass then run as usual, so the simulation goes on.

Policies built on it, by name: ``lp_baseline.registry`` (``make_policy``, ``POLICY_NAMES``;
re-exported here). The pieces: ``lp_baseline.job_terms`` (normalizers, FTF denominators,
``fair-srpt`` / ``fair-las`` weights, ``sia-*`` gains), ``lp_baseline.rounding`` (the rounding and its placement
dry run), ``lp_baseline.fallback`` (the greedy fallback), ``lp_baseline.delivery``
(delivered ÷ planned).
"""

from __future__ import annotations

import logging
import math
import numbers
import time
from dataclasses import dataclass, field

import numpy as np

from hsched_env.errors import (ConfigError, UnknownNameError, check_switch, is_real_number,
                               is_whole_number)
from hsched_env.planner import table_pool_gpus, undominated_rows
from hsched_env.policy import Assignment, PolicyStats, SchedulerView
from lp_baseline.backends import BACKENDS
from lp_baseline.delivery import DeliveryTracker
from lp_baseline.fallback import FALLBACK_KINDS, greedy_allocation
from lp_baseline.job_terms import (DEFAULT_LAS_TAU_S, NORMALIZERS, ftf_denominator,
                                   NormalizerMemo, job_normalizer, job_normalizers,
                                   projected_ftf, stage2_terms, take_rows)
from lp_baseline.parallel_parts import (DEFAULT_EXECUTOR, EXECUTORS, PartOutcome, PartSolve,
                                        default_workers, solve_parts)
from lp_baseline.registry import MAX_POP_PARTS
from lp_baseline.problem import (DEFAULT_FLOOR, FLOOR_OBJECTIVES, OBJECTIVE_FIELDS, OBJECTIVES,
                                 SIA_OBJECTIVES, AllocationProblem, check_feasible,
                                 evaluate_objective, problem_fingerprint)
from lp_baseline.gavel_queues import GAVEL_MIN_RESET_S, QueueMemo, fastest_first, queue_assignment
from lp_baseline.rounding import (TINY, RoundingMemo, integral_assignment, other_candidates,
                                  round_allocation)
from lp_baseline.solver import COLGEN_MIN_COLUMNS, METHOD_OPTIONS, solve_allocation
from lp_baseline.warm_start import BasisKeys
from hsched_env.table_memo import TableMemo

#: ``LPPolicy(lp_method=)``: how each LP is solved (``solver.METHODS``), with the HiGHS options
#: each adds.
LP_METHODS = METHOD_OPTIONS

#: Entries of ``LPPolicy._others``' memo (job tables × eligible row sets, and those × the
#: rows excluded) before it starts over.
OTHERS_MEMO_SIZE = 4096
#: Tolerance of the check that a solver's ``x`` satisfies the LP's constraints.
FEASIBILITY_TOL = 1e-6
#: The co-optimizer's default objective (``heterosched-lp``; see docs/lp.md for why).
DEFAULT_OBJECTIVE = "sia-srpt"
#: How the LP's allocation becomes a round's assignment (``LPPolicy(rounding=)``).
ROUNDINGS = ("gavel", "gavel-queues", "integral")
#: The roundings that time-slice by priorities (what each job received since the last reset,
#: its deficits): the job-level Gavel-style one and Gavel's own per-type queues.
SLICING_ROUNDINGS = ("gavel", "gavel-queues")
#: The objectives whose LP is the relaxation of a one-candidate-per-job problem: by default
#: solved without a floor or a size cap and rounded integrally (``objective_defaults``).
INTEGRAL_OBJECTIVES = SIA_OBJECTIVES


#: ``sia-srpt``'s default starvation guard (``LPPolicy(ftf_guard=)``): a job whose projected
#: finish-time fairness ρ̂ exceeds it weighs ``10 · ρ̂ / 2`` (above every unguarded job, the most
#: starved first; at least 10 until it finishes: ``job_terms.srpt_weights``). Chosen among
#: 1.5, 2 and 3 on the quality benchmark and checked on held-out seeds (docs/lp.md, "The
#: starvation guard").
DEFAULT_FTF_GUARD = 2.0
#: ``LPPolicy(ftf_guard=FTF_GUARD_OFF)`` (``--ftf-guard off``): no starvation guard.
FTF_GUARD_OFF = "off"


def objective_defaults(objective: str) -> dict:
    """``LPPolicy``'s defaults of ``rounding``, ``size_cap``, ``floor`` and ``ftf_guard`` for
    ``objective``: ``sia-srpt`` / ``sia-las``: integral rounding, no size cap, no floor
    (measured best: docs/lp.md), and for ``sia-srpt`` the starvation guard
    ``DEFAULT_FTF_GUARD``; every other objective: Gavel-style rounding, the size cap and
    ``DEFAULT_FLOOR`` (the policies of the earlier defaults, unchanged), no guard."""
    guard = DEFAULT_FTF_GUARD if objective == "sia-srpt" else None
    if objective in INTEGRAL_OBJECTIVES:
        return {"rounding": "integral", "size_cap": False, "floor": 0.0, "ftf_guard": guard}
    return {"rounding": "gavel", "size_cap": True, "floor": DEFAULT_FLOOR, "ftf_guard": guard}
log = logging.getLogger(__name__)


@dataclass
class _Part:
    """One POP part of a round: its jobs (indices into the view), their candidate counts and
    stacked ``gpus`` / ``thr``, and the LP to solve, or the fault that replaces it."""

    members: np.ndarray
    sizes: np.ndarray
    gpus: np.ndarray
    thr: np.ndarray
    problem: AllocationProblem | None = None
    basis_keys: BasisKeys | None = None     # warm_start: its jobs and candidates by label
    fault: tuple[str, str] | None = None
    empty: bool = False
    seconds: float = 0.0


def same_allocation(a: dict, b: dict) -> bool:
    """Whether two allocations ``{job id: (rows, X)}`` are the same: the same jobs, each with
    the same rows and shares."""
    if a.keys() != b.keys():
        return False
    for j, (rows, x) in a.items():
        other_rows, other_x = b[j]
        if not ((rows is other_rows or np.array_equal(rows, other_rows))
                and (x is other_x or np.array_equal(x, other_x))):
            return False
    return True


@dataclass
class _DecisionMemo:
    """What one ``decide`` computes once and asks for twice (the LP build and the rounding):
    each job's eligible rows (for ``allowed``) and its ``sia-*`` gains, by active index, and
    the starvation guard's projected ρ̂."""

    view: SchedulerView
    allowed: object
    eligible: dict = field(default_factory=dict)
    gains: dict = field(default_factory=dict)
    #: the LP solve's own rows when a pruning restricts only the solve (``decide``'s
    #: ``lp_rows``, e.g. a ranker's kept candidates), and each job's eligible rows for them
    solve_allowed: object = None
    solve_eligible: dict = field(default_factory=dict)
    #: (A,) every active job's ``projected_ftf`` (the starvation guard), once computed
    projected_ftf: np.ndarray | None = None


def _allowed_rows(view: SchedulerView, allowed) -> list[np.ndarray]:
    """Each active job's ``allowed`` rows within its table, ascending and unique — what
    ``LPPolicy._eligible_rows`` gives each job of ``candidates="all"`` without a size cap —
    checked for every job in one pass: a job's rows already in range and ascending (what a
    ranker hands over) are a copy of them, any other job's go through ``np.unique``."""
    A = view.num_active
    got = [np.asarray(a, dtype=np.int64) for a in allowed]
    if A == 0:
        return []
    if any(g.ndim != 1 for g in got):
        got = [g.reshape(-1) for g in got]
    sizes = np.fromiter((g.size for g in got), dtype=np.int64, count=A)
    flat = np.concatenate(got)
    lens = np.fromiter((len(t) for t in view.candidates), dtype=np.int64, count=A)
    job = np.repeat(np.arange(A), sizes)
    bad = (flat < 0) | (flat >= lens[job])
    # a place whose next row (of the same job) is not larger breaks the order
    step = np.zeros(flat.size, dtype=bool)
    if flat.size > 1:
        step[:-1] = (flat[1:] <= flat[:-1]) & (job[1:] == job[:-1])
    ends = np.cumsum(sizes)
    out = np.split(flat, ends[:-1])          # views of one fresh array
    if bad.any() or step.any():
        wrong = np.zeros(A, dtype=bool)
        wrong[job[bad | step]] = True
        for k in np.flatnonzero(wrong).tolist():
            rows = out[k]
            rows = rows[(rows >= 0) & (rows < lens[k])]
            out[k] = np.unique(rows) if rows.size > 1 else rows
    return out


#: ``LPPolicy`` options that only some roundings or objectives read: option -> (what reads
#: it, whether a rounding / objective pair reads it). Given anywhere else it would be
#: silently ignored, so it is refused (as ``floor``, ``ftf_guard`` and ``round_restart`` are).
_READ_ONLY_BY = {
    "sticky": ("the Gavel-style rounding (rounding='gavel')",
               lambda objective, rounding: rounding == "gavel"),
    "fill": ("the Gavel-style rounding (rounding='gavel')",
             lambda objective, rounding: rounding == "gavel"),
    "las_tau_s": ("the least-attained-service objectives (fair-las, sia-las)",
                  lambda objective, rounding: objective in ("fair-las", "sia-las")),
    "restart_aware": (f"the two-stage objectives' second stage ({', '.join(FLOOR_OBJECTIVES)})",
                      lambda objective, rounding: objective in FLOOR_OBJECTIVES),
}


def _refuse_ignored_options(objective: str, rounding: str, **given) -> None:
    """A ``ConfigError`` for an option of ``_READ_ONLY_BY`` given (not ``None``) where
    ``objective`` and ``rounding`` never read it."""
    for field, value in given.items():
        reader, reads = _READ_ONLY_BY[field]
        if value is not None and not reads(objective, rounding):
            raise ConfigError(f"{field} is read only by {reader}; with objective "
                              f"{objective!r} and rounding {rounding!r}, {field}={value!r} "
                              f"would be ignored", field=field)


def _charge_deficits(deficits: dict, allocation: dict, received: dict, elapsed: float) -> None:
    """Gavel's reset of its per-type deficits: every job's and every candidate's ``X ×
    elapsed − received`` added to ``deficits`` (``X = 0`` where the allocation gives none, so
    what a job ran beyond its share, or without one, is charged too)."""
    for j in set(allocation) | set(received):
        d = deficits.setdefault(j, {})
        entry = allocation.get(j)
        if entry is not None:
            for r, xv in zip(entry[0].tolist(), entry[1].tolist()):
                d[r] = d.get(r, 0.0) + xv * elapsed
        for r, got in received.get(j, {}).items():
            d[r] = d.get(r, 0.0) - got


class LPPolicy:
    """The allocation LP plus its rounding (see the module docstring).

    Args:
        name: Name shown in results.
        objective: One of ``OBJECTIVES``: ``sia-srpt`` (default), ``sia-las``, ``fair-srpt``,
            ``fair-las``, ``max-min``, ``max-throughput``, ``min-makespan`` or ``ftf``.
        candidates: ``"all"`` or ``"requested"`` (only the requested-GPU data-parallel ones).
        agnostic: Solve as if every GPU type were equally fast (Gavel's agnostic baseline).
        topk: Keep each job's k best candidates by normalized throughput per GPU.
        dominance: Drop candidates dominated within the job.
        resolve: ``"every-round"`` or ``"on-change"``.
        min_resolve_interval_s: With ``resolve="on-change"``: a change of the job set (an
            arrival or a completion) triggers a re-solve only once at least this many seconds
            have passed since the last reset (a solve that made a new allocation; under
            ``rounding="gavel-queues"`` the first such solve once this long has passed since
            the previous reset: Gavel has one interval for both); until then the jobs keep
            their allocation and a new job runs only on GPUs the fill pass finds free (under
            ``"gavel-queues"``, as in Gavel, it does not run). Gavel
            recomputes its allocation this way (``minimum_time_between_allocation_resets``,
            1,920 s: ``GAVEL_MIN_RESET_S``, the ``gavel-resets`` policy). 0 (default): at the
            next decision (under ``"gavel-queues"`` the history then resets every
            ``GAVEL_MIN_RESET_S``, as ``gavel``'s). A first decision, a fallback or a change
            of ``allowed`` re-solves at once.
        pop: Number of POP partitions (1 = the whole problem).
        pop_workers: How many POP parts are solved at the same time (1: one after the other;
            ``None``: ``min(pop, CPUs this process may use)``). The allocation does not depend
            on it.
        memoize: Reuse what did not change since the previous decision: a job's normalizer
            (``job_terms.NormalizerMemo``), a part's LP solution when the LP is the same
            (``problem.problem_fingerprint``; not with ``time_limit_s``) and the Gavel-style
            rounding's result when its inputs are the previous round's
            (``rounding.RoundingMemo``). The schedule is the
            same either way (``tests/test_lp_memo.py``); ``False`` recomputes everything.
        warm_start: Start each decision's dual simplex from the previous decision's optimal
            basis, mapped onto the new LP by job and candidate (``lp_baseline.warm_start``):
            a few pivots where the LP changed by a few jobs, instead of a solve from scratch.
            The same optimum, but where the LP has several optimal vertices HiGHS may end on
            another one, so a schedule can differ from the cold solve's (docs/lp.md, "Warm
            starts across decisions"). Off by default; the dual simplex path only (not
            column generation, which ``lp_method="auto"`` uses from 2,000 LP columns up, not
            IPM, not ``pulp``). One basis per POP part index: POP redraws its parts every
            decision, so there it saves much less.
        lp_method: How each LP is solved (``solver.METHODS``): ``"auto"`` (default: column
            generation for LPs of at least ``solver.COLGEN_MIN_COLUMNS`` columns, else the
            dual simplex), ``"simplex"`` (HiGHS' dual simplex over every column), ``"ipm"``
            (interior point, then crossover to a vertex, which the integral rounding needs)
            or ``"colgen"`` (dual simplex over a restricted LP grown by column generation,
            ``lp_baseline.colgen``; the ``highs`` backend only). The same optimum each way;
            on `large-2048` rounds of 50–2,000 jobs column generation is 1.9–8.3× faster
            than the dual simplex (docs/lp.md, "LP methods"), and where the LP has several optimal vertices a method may
            return another one.
        pop_executor: Where parallel parts run: ``"thread"`` (default), ``"process"``,
            ``"ray"`` or ``"serial"`` (``lp_baseline.parallel_parts``).
        backend: ``"highs"`` (direct sparse matrix, default) or ``"pulp"``.
        time_limit_s: Per-decision budget of the LP work (model building and solves of all
            POP parts together); on expiry a part uses the solver's feasible
            incumbent, else the greedy fallback. The rounding after it is not included.
        sticky: A job whose current candidate still has X > 0 keeps it instead of switching to
            another of its candidates (each switch costs a restart). Gavel-style rounding only
            (``None``: on there; given under the integral rounding, a ``ConfigError``).
        fill: Gavel-style rounding only: after the priority pass, give GPUs still free to waiting jobs (their candidates
            with X > 0 first, in priority order, then any candidate that fits), so no GPU idles
            while a job that fits waits. ``None``: on under the Gavel-style rounding; given
            under the integral rounding, a ``ConfigError`` (it would be ignored).
        normalizer: ``"fair-share"`` (default): a job's throughput is normalized by its
            throughput on its fair share, ``min(requested, G / N)`` GPUs (G GPUs in the
            cluster, N active jobs; its best candidate, time-sliced when larger);
            ``"requested"``: Gavel's ``X_equal`` — its requested configuration on each type,
            weighted by the type's share of the cluster.
        size_cap: Only candidates of at most ``max(requested, G / N)`` GPUs (and the requested
            configurations) enter the LP, the rounding and the fill pass; a job none of whose
            candidates is that small keeps its smallest ones. ``None``: the objective's
            default (``objective_defaults``: off for ``sia-*``, on for the others).
        floor: Fairness floor of the two-stage objectives (``fair-*``, ``sia-*``): every job
            keeps at least this fraction of the max-min optimum; 0 skips the max-min solve.
            ``None``: the objective's default (0 for ``sia-*``, ``DEFAULT_FLOOR`` otherwise).
            Given under an objective without a floor (``max-min``, ``max-throughput``,
            ``min-makespan``, ``ftf``), a ``ConfigError``: it would be ignored.
        las_tau_s: ``fair-las``: the first attained-service class boundary, in seconds of the
            job's requested configuration (classes ``[0, τ)``, ``[τ, 3τ)``, ``[3τ, 7τ)``, ...);
            also ``sia-las``'s. ``None``: ``DEFAULT_LAS_TAU_S``; given under another
            objective, a ``ConfigError`` (it would be ignored).
        restart_aware: In the second stage of ``fair-srpt`` / ``fair-las``, discount a running
            job's other candidates by the share of time they would be productive after the
            restart a switch costs, ``H / (H + restart_s)`` with ``H`` the job's remaining time
            on that candidate; for ``sia-srpt`` / ``sia-las``, Sia's restart factor on a running
            job's other candidates (``job_terms.sia_gain``). ``None``: on under those
            objectives; given under another, a ``ConfigError`` (it would be ignored).
        scale_factors: Gavel's scale factor s_m in the ``max-min`` objective: each job's
            normalized throughput counts ``requested GPUs`` times, ``max_X min_m s_m ·
            thr(m, X) / (w_m · thr(m, X_equal))`` (Gavel's ``max_min_fairness``: a job on one
            GPU should get s_m times the time of a job on s_m GPUs); the LP's job weights are
            ``1 / s_m``. Off: every job counts once.
        rounding: ``"integral"``: one candidate per job from the LP's vertex, no time slicing
            (``rounding.integral_assignment``); ``"gavel"``: the Gavel-style rounding of the
            module docstring; ``"gavel-queues"``: Gavel's own rounding, a priority queue per
            GPU type (``gavel_queues``; the ``gavel`` policies'), for
            ``candidates="requested"`` only (one candidate per type). ``None``: the
            objective's default (integral for ``sia-*``).
        ftf_guard: ``sia-srpt`` only: a starvation guard on the SRPT job weights. A job whose
            projected finish-time fairness (``job_terms.projected_ftf``: its time in the
            system so far plus its remaining time on its requested configuration, over its
            time on a fair share) ρ̂ is above ``ftf_guard`` weighs ``10 · ρ̂ / ftf_guard``, above
            every unguarded job and the most starved first, and keeps at least the top weight,
            10, until it finishes (the guard latches, ``_guarded_jobs``). ``None``: the
            objective's default (``objective_defaults``: ``DEFAULT_FTF_GUARD`` = 2 for
            ``sia-srpt``, none for the others); ``"off"`` (``FTF_GUARD_OFF``): no guard.
            docs/lp.md ("The starvation guard") has its measured effect.
        round_restart: ``sia-srpt`` / ``sia-las`` with ``restart_aware`` only: a candidate
            that costs a restart (a running job's other candidates; any candidate of a job
            that ran before and is not running) counts ``(round_s − restart_s) / round_s`` of
            its goodput in the gain, what it delivers in the round the LP decides
            (``job_terms.sia_gain``).
    """

    def __init__(self, name: str = "heterosched-lp", *, objective: str = DEFAULT_OBJECTIVE,
                 candidates: str = "all", agnostic: bool = False, topk: int | None = None,
                 dominance: bool = False, resolve: str = "every-round", pop: int = 1,
                 backend: str = "highs", time_limit_s: float | None = None,
                 sticky: bool | None = None, fill: bool | None = None,
                 normalizer: str = "fair-share",
                 size_cap: bool | None = None, floor: float | None = None,
                 las_tau_s: float | None = None, restart_aware: bool | None = None,
                 rounding: str | None = None, pop_workers: int | None = 1,
                 pop_executor: str = DEFAULT_EXECUTOR, memoize: bool = True,
                 lp_method: str = "auto", min_resolve_interval_s: float = 0.0,
                 warm_start: bool = False, scale_factors: bool = False,
                 ftf_guard: float | str | None = None, round_restart: bool = False) -> None:
        if not isinstance(name, str) or not name.strip():
            raise ConfigError(f"name (the label results carry) must be a non-empty string, "
                              f"got {name!r}", field="name")
        if objective not in OBJECTIVES:
            raise UnknownNameError("objective", objective, list(OBJECTIVES))
        # switches are True or False ("no" read as on), counts whole numbers (0.7 or "3" were
        # coerced; pop=0 read as 1, topk=0 solved empty LPs)
        for field, value in (("agnostic", agnostic), ("dominance", dominance),
                             ("memoize", memoize)):
            check_switch(value, field)
        for field, value in (("sticky", sticky), ("fill", fill),
                             ("restart_aware", restart_aware)):
            if value is not None:
                check_switch(value, field)
        if size_cap is not None:
            check_switch(size_cap, "size_cap")
        for field, value in (("pop", pop), ("topk", topk)):
            if value is not None and not (is_whole_number(value) and value >= 1):
                raise ConfigError(f"{field} must be a whole number >= 1, got {value!r}",
                                  field=field)
        if pop is not None and pop > MAX_POP_PARTS:
            # as pop-K names are bounded: a million parts ran on for minutes per round
            raise ConfigError(f"pop must be at most {MAX_POP_PARTS:,} parts, got {pop!r}",
                              field="pop")
        defaults = objective_defaults(objective)
        if ftf_guard is None:
            ftf_guard = defaults["ftf_guard"]
        elif isinstance(ftf_guard, str):
            if ftf_guard != FTF_GUARD_OFF:
                raise ConfigError(f"must be a positive finish-time fairness or "
                                  f"{FTF_GUARD_OFF!r}, got {ftf_guard!r}", field="ftf_guard")
            ftf_guard = None
        else:
            if not (isinstance(ftf_guard, numbers.Real) and not isinstance(ftf_guard, bool)
                    and math.isfinite(ftf_guard) and ftf_guard > 0):
                raise ConfigError(f"must be a finite positive finish-time fairness or "
                                  f"{FTF_GUARD_OFF!r}, got {ftf_guard!r}", field="ftf_guard")
            if objective != "sia-srpt":
                raise ConfigError(f"the starvation guard weighs sia-srpt's SRPT job weights "
                                  f"(it reads the remaining work); objective {objective!r} "
                                  f"has none, so ftf_guard={ftf_guard!r} would be ignored",
                                  field="ftf_guard")
        self.ftf_guard = None if ftf_guard is None else float(ftf_guard)
        if not isinstance(round_restart, bool):
            raise ConfigError(f"must be True or False, got {round_restart!r}",
                              field="round_restart")
        if round_restart and objective not in SIA_OBJECTIVES:
            raise ConfigError(f"round_restart discounts sia-srpt / sia-las gains; objective "
                              f"{objective!r} has none, so it would be ignored",
                              field="round_restart")
        if round_restart and restart_aware is False:
            raise ConfigError("round_restart counts restarts in the gain, which "
                              "restart_aware=False leaves out: it would be ignored",
                              field="round_restart")
        self.round_restart = round_restart
        if floor is not None and objective not in FLOOR_OBJECTIVES:
            raise ConfigError(f"the fairness floor applies to the two-stage objectives "
                              f"({', '.join(FLOOR_OBJECTIVES)}); objective {objective!r} has "
                              f"none, so floor={floor!r} would be ignored", field="floor")
        rounding = defaults["rounding"] if rounding is None else rounding
        size_cap = defaults["size_cap"] if size_cap is None else size_cap
        floor = defaults["floor"] if floor is None else floor
        if rounding not in ROUNDINGS:
            raise UnknownNameError("rounding", rounding, list(ROUNDINGS))
        self.rounding = rounding
        _refuse_ignored_options(objective, rounding, sticky=sticky, fill=fill,
                                las_tau_s=las_tau_s, restart_aware=restart_aware)
        sticky = True if sticky is None else sticky
        fill = True if fill is None else fill
        las_tau_s = DEFAULT_LAS_TAU_S if las_tau_s is None else las_tau_s
        restart_aware = True if restart_aware is None else restart_aware
        if candidates not in ("all", "requested"):
            raise UnknownNameError("candidate set", candidates, ["all", "requested"])
        if rounding == "gavel-queues" and candidates != "requested":
            raise ConfigError("rounding 'gavel-queues' is Gavel's queue per GPU type over "
                              "one candidate per type: it needs candidates='requested', got "
                              f"{candidates!r}", field="rounding")
        if resolve not in ("every-round", "on-change"):
            raise UnknownNameError("resolve mode", resolve, ["every-round", "on-change"])
        if normalizer not in NORMALIZERS:
            raise UnknownNameError("normalizer", normalizer, list(NORMALIZERS))
        if not (isinstance(min_resolve_interval_s, numbers.Real)
                and not isinstance(min_resolve_interval_s, bool)
                and math.isfinite(min_resolve_interval_s) and min_resolve_interval_s >= 0):
            raise ConfigError(f"must be a number of seconds >= 0, got "
                              f"{min_resolve_interval_s!r}", field="min_resolve_interval_s")
        if min_resolve_interval_s > 0 and resolve != "on-change":
            raise ConfigError("applies to resolve='on-change' only (every-round re-solves "
                              "each round)", field="min_resolve_interval_s")
        self.min_resolve_interval_s = float(min_resolve_interval_s)
        # Gavel's rounding: the least time between two resets of its priorities' history
        self._reset_interval_s = self.min_resolve_interval_s or GAVEL_MIN_RESET_S

        if not (is_real_number(floor) and 0.0 <= floor <= 1.0):
            raise ConfigError(f"the fairness floor must be in [0, 1], got {floor!r}",
                              field="floor")
        if not (is_real_number(las_tau_s) and math.isfinite(las_tau_s)
                and las_tau_s > 0):
            raise ConfigError(f"las_tau_s must be a positive number of seconds, got "
                              f"{las_tau_s!r}", field="las_tau_s")
        self.name, self.objective, self.candidates = name, objective, candidates
        self.agnostic, self.topk, self.dominance = agnostic, topk, dominance
        self.resolve, self.pop, self.backend = resolve, max(int(pop), 1), backend
        if pop_executor not in EXECUTORS:
            raise UnknownNameError("POP executor", pop_executor, list(EXECUTORS))
        if pop_workers is None:
            pop_workers = default_workers(self.pop)
        if not (isinstance(pop_workers, int) and not isinstance(pop_workers, bool)
                and 1 <= pop_workers <= MAX_POP_PARTS):
            raise ConfigError(f"pop_workers must be an integer from 1 to {MAX_POP_PARTS:,} "
                              f"(None: one per part, at most the CPUs), got {pop_workers!r}",
                              field="pop_workers")
        self.pop_workers, self.pop_executor = pop_workers, pop_executor
        self.memoize = bool(memoize)
        if lp_method not in LP_METHODS:
            raise UnknownNameError("LP method", lp_method, list(LP_METHODS))
        if lp_method == "colgen" and backend != "highs":
            raise ConfigError(f"lp_method='colgen' needs backend='highs', got {backend!r}",
                              field="lp_method")
        self.lp_method = lp_method
        if not isinstance(warm_start, bool):
            raise ConfigError(f"must be True or False, got {warm_start!r}", field="warm_start")
        if warm_start and (lp_method in ("ipm", "colgen") or backend != "highs"):
            # (silently a no-op there before: no solve of those starts from a basis)
            why = (f"lp_method={lp_method!r}" if lp_method in ("ipm", "colgen")
                   else f"backend={backend!r}")
            raise ConfigError(f"warm starts apply only to HiGHS' dual simplex through highspy "
                              f"(lp_method 'simplex' or 'auto', backend 'highs'): with {why} "
                              f"warm_start=True would be ignored, so drop it",
                              field="warm_start")
        self.warm_start = warm_start
        if not isinstance(scale_factors, bool):
            raise ConfigError(f"must be True or False, got {scale_factors!r}",
                              field="scale_factors")
        self.scale_factors = scale_factors
        # checked here, not at the first solve: a bad one made every decision of the run
        # the greedy fallback, under the policy's name
        if backend not in BACKENDS:
            raise UnknownNameError("LP backend", backend, list(BACKENDS))
        if time_limit_s is not None and not (is_real_number(time_limit_s)
                                             and math.isfinite(time_limit_s)
                                             and time_limit_s > 0):
            raise ConfigError(f"time_limit_s must be None or a finite number of seconds > 0, "
                              f"got {time_limit_s!r}", field="time_limit_s")
        self.time_limit_s, self.sticky, self.fill = time_limit_s, sticky, fill
        self.normalizer, self.size_cap, self.floor = normalizer, size_cap, float(floor)
        self.las_tau_s, self.restart_aware = float(las_tau_s), restart_aware
        self.last_stats = PolicyStats()
        self._memo: _DecisionMemo | None = None
        self.reset(None, 0)

    # ------------------------------------------------------------------ state
    def reset(self, cluster, seed) -> None:
        self.rng = np.random.default_rng(seed)
        self._x: dict[int, tuple[np.ndarray, np.ndarray]] = {}   # job -> (rows, x)
        self._guarded: set[int] = set()   # jobs the starvation guard has latched (ftf_guard)
        self._received: dict[int, dict[int, float]] = {}
        self._deficit: dict[int, dict[int, float]] = {}
        self._elapsed = 0.0
        self._bases: dict[int, object] = {}    # POP part -> its last LP basis (warm_start)
        self._warm_starts = 0
        self._warned_cold = False           # warm_start met an LP column generation solves
        self._warm_retries = 0
        self._last_t: float | None = None
        self._last_reset_t: float | None = None    # time of the last reset (the reset rule)
        self._stale_history = False   # gavel-queues: a new allocation since the last reset
        self._solved_inputs: tuple | None = None   # ``_lp_inputs`` of the last solve
        self._solves = 0
        self._fallbacks = 0
        self._fallback_kinds: dict[str, int] = {}
        self._time_limits = 0
        self._retry = False        # the last allocation fell back: re-solve at the next decision
        self._warned_pop = False
        self._allowed_key = None
        self._delivery = DeliveryTracker()
        self._norm_memo = NormalizerMemo()
        self._lp_memo: dict = {}      # fingerprint -> the previous decision's optimal result
        self._static_lp: _StaticLP | None = None     # ``_allocate``'s repeat of a static LP
        # (id(table), eligible rows) -> its other candidates fastest first, and (id(table),
        # eligible rows, excluded rows) -> those without the excluded; id(table) -> its rows
        # of the candidate set (``table_memo.TableMemo``: emptied by copies)
        self._others_memo = TableMemo()
        self._table_rows = TableMemo()
        self._lp_reused = 0
        self._round_memo = RoundingMemo()     # the last rounding's result (``_round``)
        self._gpu_rows = TableMemo()          # id(table) -> each row's (type, GPUs) pairs
        self._goodput_memo = TableMemo()      # id(table) -> Sia's goodputs (job_terms)
        self._fallback_memo = TableMemo()     # the integral rounding's fallback lists
        self._row_types = TableMemo()         # id(table) -> each row's GPU type (gavel-queues)
        self._queue_memo = QueueMemo()        # gavel-queues: shares per allocation, deficits
        self._type_order: tuple | None = None   # gavel-queues: (types, their order)

    @property
    def allocation(self) -> dict:
        """The current LP allocation: ``{job id: (candidate rows, X)}`` (read-only use)."""
        return self._x

    def summary(self) -> dict:
        """Counters of the run: ``lp_solves`` (allocations computed by ``decide``),
        ``lp_fallbacks`` (LP parts that used the greedy fallback, ``shares`` calls included),
        ``lp_fallback_kinds`` (those by kind, see ``FALLBACK_KINDS``), ``lp_time_limits``
        (solves that hit the time limit, with or without a usable incumbent), ``lp_reused``
        (LP parts not solved because they were the previous decision's LP exactly: its
        solution is reused, ``problem.problem_fingerprint``), ``rounding_reused`` (Gavel-style
        roundings whose dry-run placement was skipped because its inputs were the previous
        round's, ``rounding.RoundingMemo``) and
        ``delivered_over_planned``: Σ over rounds and jobs of the normalized throughput the
        jobs actually ran with (less the time a restart took) ÷ the normalized throughput the
        LP planned for them (``Σ_c X thr / norm``) over the rounds a later decision closed
        (a round is accounted at the next decision: the rounds a job finished in, and the
        run's last round, are left out);
        above 1 when the fill pass runs jobs on GPUs the plan left idle; NaN before a round
        has run. With ``warm_start``, also ``lp_warm_starts``: LP solves of ``decide`` (each
        POP part counted) that HiGHS started from the previous decision's basis, and
        ``lp_warm_retries``: those whose warm run ended without a solution and were solved
        again cold."""
        out = {"lp_solves": self._solves, "lp_fallbacks": self._fallbacks,
               "lp_fallback_kinds": dict(sorted(self._fallback_kinds.items())),
               "lp_time_limits": self._time_limits, "lp_reused": self._lp_reused,
               "rounding_reused": self._round_memo.hits,
               "delivered_over_planned": float(self._delivery.ratio())}
        if self.warm_start:
            out["lp_warm_starts"] = self._warm_starts
            out["lp_warm_retries"] = self._warm_retries
        return out

    # ------------------------------------------------------------------ candidates
    def _eligible(self, view: SchedulerView, k: int, allowed=None) -> np.ndarray:
        """The rows job ``k`` may run with: the candidate set (all or requested), the
        ``allowed`` rows, the size cap; ascending. Memoized within one ``decide`` (the LP and
        the rounding ask for the same rows)."""
        memo = self._memo
        known = None
        if memo is not None and memo.view is view:
            if memo.allowed is allowed:
                known = memo.eligible
            elif allowed is not None and memo.solve_allowed is allowed:
                known = memo.solve_eligible
        if known is None:
            return self._eligible_rows(view, k, allowed)
        rows = known.get(k)
        if (rows is None and not known and allowed is not None and self.candidates == "all"
                and not self.size_cap and len(allowed) == view.num_active):
            # every job's allowed rows at once (what _eligible_rows gives each)
            known.update(enumerate(_allowed_rows(view, allowed)))
            rows = known.get(k)
        if rows is None:
            rows = known[k] = self._eligible_rows(view, k, allowed)
        return rows

    def _eligible_rows(self, view: SchedulerView, k: int, allowed=None) -> np.ndarray:
        table = view.candidates[k]
        if allowed is None and not self.size_cap:
            # the candidate set alone: the same rows every round, kept per table (read-only)
            def rows_of_set():
                rows = (np.flatnonzero(table.requested) if self.candidates == "requested"
                        else np.arange(len(table)))
                rows.flags.writeable = False
                return rows
            return self._table_rows.get_for(table, id(table), rows_of_set)
        if allowed is not None and self.candidates == "all":
            # = np.intersect1d(arange(n), allowed[k]), without its sort when already sorted
            rows = np.asarray(allowed[k], dtype=np.int64)
            rows = rows[(rows >= 0) & (rows < len(table))]
            if rows.size > 1 and not np.all(rows[1:] > rows[:-1]):
                rows = np.unique(rows)
        else:
            rows = (np.flatnonzero(table.requested) if self.candidates == "requested"
                    else np.arange(len(table)))
            if allowed is not None:
                rows = np.intersect1d(rows, np.asarray(allowed[k], dtype=np.int64))
        if self.size_cap and rows.size:
            n = table.num_gpus[rows]
            cap = view.fair_share_gpus(k)
            ok = (n <= cap + 1e-9) | table.requested[rows]
            rows = rows[ok] if ok.any() else rows[n == n.min()]
        return rows

    def _rows(self, view: SchedulerView, k: int, norm: float, allowed=None) -> np.ndarray:
        table = view.candidates[k]
        rows = self._eligible(view, k, allowed)
        if self.dominance and rows.size > 1:
            rows = rows[undominated_rows(table_pool_gpus(table, rows), table.samples_per_s[rows])]
        if self.topk is not None and rows.size > self.topk:
            with np.errstate(all="ignore"):
                score = table.samples_per_s[rows] / norm / table.gpus[rows].sum(axis=1)
            score = np.where(np.isfinite(score), score, -np.inf)
            rows = np.sort(rows[np.argsort(-score, kind="stable")[:self.topk]])
        return rows

    def solver_rows(self, view: SchedulerView) -> list[np.ndarray]:
        """Per active job, the candidate rows this policy hands to its solver (eligible rows
        after its own pruning: dominance, top-k); what a recall measurement compares with."""
        return [self._rows(view, k, self._norm(view, k)) for k in range(view.num_active)]

    def _norms(self, view: SchedulerView) -> np.ndarray:
        """(A,) each active job's normalizer (``normalizer``; ``job_terms.job_normalizers``,
        memoized across decisions: ``job_terms.NormalizerMemo``)."""
        if not self.memoize:
            return job_normalizers(view, self.normalizer)
        return self._norm_memo(view, self.normalizer)

    def _norm(self, view: SchedulerView, k: int) -> float:
        """Active job ``k``'s normalizer (``job_terms.job_normalizer``)."""
        return job_normalizer(view, k, self.normalizer)

    # ------------------------------------------------------------------ decide
    def decide(self, view: SchedulerView, allowed=None, lp_rows=None,
               lp_start=None) -> Assignment:
        """This round's assignment.

        Args:
            view: The scheduler view.
            allowed: Optional, per active job (aligned with ``view.job_ids``), the candidate
                rows the LP may use (e.g. the ones a ranker kept); the rounding and the fill
                pass use only these too. ``None``: every candidate.
            lp_rows: Optional, per active job, rows only the LP solve is restricted to (a
                pruning such as ``support-reuse``); the rounding's fallbacks and the fill pass
                still use every allowed candidate. ``None``: the LP uses ``allowed``.
            lp_start: Optional, per active job, rows (indices into its candidate table, or
                a bool mask over it) to start the LP's column generation from (a guess of
                its support, e.g. a ranker's best-scored candidates): without a time limit
                the same optimal value whatever the guess, found in fewer restricted solves
                when the guess is good (``solve_allocation``'s ``start``; column generation
                only, which ``lp_method="auto"`` uses on large LPs). It restricts nothing.
        """
        t0 = time.perf_counter()
        if lp_start is not None:
            lp_start = _start_rows(view, lp_start)
        try:
            self._memo = _DecisionMemo(view, allowed)
            return self._decide(view, allowed, lp_rows, t0, lp_start)
        finally:
            self._memo = None

    def _decide(self, view: SchedulerView, allowed, lp_rows, t0: float,
                lp_start=None) -> Assignment:
        self._delivery.track(view, self._last_t)
        if self._last_t is not None and self.rounding in SLICING_ROUNDINGS:
            # what each (job, candidate) ran since the allocation: the Gavel-style rounding's
            # deficits (the integral rounding does not use them)
            step = view.time_s - self._last_t
            self._elapsed += step
            for j, cur in zip(view.job_ids.tolist(), view.current.tolist()):
                if cur >= 0:
                    rec = self._received.setdefault(j, {})
                    rec[cur] = rec.get(cur, 0.0) + step
        self._last_t = view.time_s
        active = {int(j) for j in view.job_ids}
        solve_rows = allowed
        if lp_rows is not None:
            solve_rows = (lp_rows if allowed is None else
                          [np.intersect1d(np.asarray(a, dtype=np.int64),
                                          np.asarray(b, dtype=np.int64))
                           for a, b in zip(allowed, lp_rows)])
        if solve_rows is not allowed and self._memo is not None:
            self._memo.solve_allowed = solve_rows       # the solve's rows, memoized apart
        key = None if solve_rows is None else tuple(np.asarray(a, dtype=np.int64).tobytes()
                                                    for a in solve_rows)
        jobs_changed = bool(view.arrived or view.completed) or set(self._x) != active
        if jobs_changed and self.min_resolve_interval_s > 0 and self._last_reset_t:
            # Gavel's reset rule: the change waits until the interval has passed (it stays
            # visible: the allocation's job set differs from the active one until a solve);
            # as in Gavel, whose "no reset yet" is a last reset at time 0, a reset at time 0
            # does not start the interval
            jobs_changed = view.time_s - self._last_reset_t >= self.min_resolve_interval_s
        changed = jobs_changed or not self._x or key != self._allowed_key or self._retry
        self._allowed_key = key
        stats = PolicyStats()
        norms = self._norms(view)          # once per decision: the LP and the plan record
        if self.resolve == "every-round" or changed:
            self._solve(view, stats, solve_rows, t0, norms, lp_start)
        if self.rounding == "integral":
            if len(self._fallback_memo) >= OTHERS_MEMO_SIZE:
                self._fallback_memo.clear()      # e.g. a ranker's kept rows change every round
            every_row = allowed is None and not self.size_cap and self.candidates == "all"
            assignment = integral_assignment(
                view, self._x, self._values(view, allowed, norms),
                None if every_row else (lambda k: self._eligible(view, k, allowed)),
                fallbacks=self._fallback_memo)
        else:
            assignment = self._round(view, allowed)
        self._delivery.record_plan(view, self._x, norms)
        stats.extra["decide_s"] = time.perf_counter() - t0
        self.last_stats = stats
        return assignment

    def _solve(self, view: SchedulerView, stats: PolicyStats, allowed=None,
               t0: float | None = None, norms: np.ndarray | None = None,
               lp_start=None) -> None:
        inputs = (self._lp_inputs(view, self._norms(view) if norms is None else norms, allowed)
                  if self.rounding in SLICING_ROUNDINGS else None)
        unchanged = (inputs is not None and inputs == self._solved_inputs and not self._retry
                     and bool(self._x))
        limits_before = self._time_limits
        new = self._allocate(view, stats, allowed, t0, norms, lp_start=lp_start)
        if unchanged:
            # the LP the allocation was made from, again: the allocation stands (a warm start
            # or a solve without the memo may end on another optimal vertex of it)
            new = self._x
        if self._resets(view, unchanged or same_allocation(new, self._x)):
            # A new allocation: move what each pair received into its deficit and restart
            # the shares (Gavel's reset). The same allocation again (a re-solve of an
            # unchanged LP) keeps them: as in Gavel, the priorities measure the time received
            # since the allocation was made, so a job with a share below 1 gets its turn.
            # (Gavel-style rounding only; 160,000 Python steps at 2,400 jobs otherwise unused)
            active = {int(j) for j in view.job_ids}
            for j, (rows, x) in (self._x.items() if self.rounding == "gavel" else ()):
                rec = self._received.get(j, {})
                d = self._deficit.setdefault(j, {})
                for r, xv in zip(rows, x):
                    d[int(r)] = d.get(int(r), 0.0) + xv * self._elapsed - rec.get(int(r), 0.0)
            if self.rounding == "gavel-queues":
                _charge_deficits(self._deficit, self._x, self._received, self._elapsed)
            for j in [j for j in self._deficit if j not in active]:
                del self._deficit[j]                    # finished jobs
            self._received = {}
            self._elapsed = 0.0
            self._stale_history = False
            self._last_reset_t = view.time_s      # a reset (Gavel's reset rule counts these)
        # an allocation the time limit cut short (the solver's incumbent) is not final: the
        # next decision solves the same LP again and takes its answer
        self._solved_inputs = (inputs if self._time_limits == limits_before or unchanged
                               else None)
        self._x = new
        # a fallback of a re-solve whose answer was not taken (``unchanged``) asks for nothing
        self._retry = bool(stats.extra.get("fallbacks")) and not unchanged
        stats.resolved = True
        self._solves += 1

    def _resets(self, view: SchedulerView, same: bool) -> bool:
        """Whether this solve resets the time-slicing history (what each job received since
        the last reset, its deficits): every solve without time slicing; under the job-level
        rounding a new allocation (``same``: the solve gave the previous one again). Under
        Gavel's own rounding, as in Gavel's scheduler (``_update_priorities``), which puts a
        new allocation into effect at once but resets the time its priorities count at most
        every ``GAVEL_MIN_RESET_S``: the first solve once that long has passed since the
        last reset and the allocation has changed since it (a new allocation marks the
        history stale; the reset comes with a later solve too, whatever that solve gives).
        Resetting at every new allocation would rank jobs by their shares alone in a
        cluster whose job set changes every round. Gavel has one interval for both its
        recomputes and its resets (``minimum_time_between_allocation_resets``), so a
        ``min_resolve_interval_s`` set here is this interval too (else ``GAVEL_MIN_RESET_S``).
        As in Gavel, whose "no reset yet" test is a last reset time of 0, a reset at time 0
        does not start the interval."""
        if self.rounding not in SLICING_ROUNDINGS:
            return True
        if self.rounding == "gavel":
            return not same
        self._stale_history = self._stale_history or not same
        last = self._last_reset_t
        return self._stale_history and (not last     # none yet, or at time 0 (Gavel's)
                                        or view.time_s - last >= self._reset_interval_s)

    def _lp_inputs(self, view: SchedulerView, norms: np.ndarray, allowed) -> tuple | None:
        """What this decision's LP is a function of when its objective reads no per-round
        field and it is one part: the jobs, their normalizers, the capacity, their candidate
        tables and the allowed rows (``_allocate``'s key for reusing a static LP, and
        ``_solve``'s test of an unchanged one); ``None`` otherwise (an objective that reads
        the remaining work or the age changes every round, and POP draws its parts anew)."""
        if OBJECTIVE_FIELDS[self.objective] or self.pop > 1:
            return None
        return (view.job_ids.tobytes(), norms.tobytes(), view.capacity.tobytes(),
                tuple(id(t) for t in view.candidates),
                None if allowed is None else
                tuple(np.asarray(a, dtype=np.int64).tobytes() for a in allowed))

    def shares(self, view: SchedulerView, allowed=None,
               lp_start=None) -> tuple[dict, PolicyStats]:
        """Solve the LP for ``view`` without touching the rounding state: ``({job id: (rows,
        X)}, stats)`` — X is the share of time the job should run with each of those
        candidate rows; ``stats.extra["objective"]`` is the LP's primary objective. The
        starvation guard's latch (``ftf_guard``) is updated as by ``decide``, so a policy
        asked for every round's shares of a run tracks that run's latch: ``reset`` it
        before another run (job ids start over).
        ``lp_start``: as ``decide``'s (per active job, rows column generation starts from;
        ``stats.extra["restricted_solves"]`` counts its solves)."""
        stats = PolicyStats()
        if lp_start is not None:
            lp_start = _start_rows(view, lp_start)
        return self._allocate(view, stats, allowed, memo_update=False,
                              lp_start=lp_start), stats

    def evaluate(self, view: SchedulerView, allocation: dict) -> float:
        """The LP's primary objective of ``allocation`` (``{job id: (rows, X)}``, e.g.
        ``allocation`` or ``shares(view)[0]``) over the round's whole problem: every active
        job with all its candidates. A job the allocation leaves out counts with X = 0, so a
        pruned LP is scored on the same problem as the full one. For the two-stage objectives
        it is stage 2's value (``sia-*``: the gain), or — with a floor above 0 — ``-inf``
        when the allocation breaks the whole problem's fairness floor (``floor ×`` its
        max-min optimum, one extra LP solve), so a pruned LP can never score above the full
        one."""
        A = view.num_active
        tabs = view.candidates
        sizes = np.array([len(t) for t in tabs], dtype=np.int64)
        if A == 0 or sizes.sum() == 0:
            return 0.0
        starts = np.cumsum(sizes) - sizes
        x = np.zeros(int(sizes.sum()))
        for k, j in enumerate(view.job_ids):
            got = allocation.get(int(j))
            if got is not None and len(got[0]):
                x[starts[k] + np.asarray(got[0], dtype=np.int64)] = got[1]
        norms = self._norms(view)
        ks = np.arange(A)
        try:
            with np.errstate(all="ignore"):
                priority, switch, gain = self._stage2(view, ks, [np.arange(s) for s in sizes],
                                                      norms)
                problem = AllocationProblem(
                    job_of=np.repeat(ks, sizes), gpus=np.concatenate([t.gpus for t in tabs]),
                    thr=np.concatenate([t.samples_per_s for t in tabs]),
                    capacity=view.capacity.astype(float), norm=norms,
                    weight=self._job_weights(view, ks),
                    remaining=view.remaining_samples, age_s=view.time_s - view.arrival_s,
                    ftf_denominator_s=ftf_denominator(view, ks),
                    priority=priority, switch=switch, gain=gain)
        except ValueError as exc:
            # the round's data is not a valid LP (NaN or zero throughput): no objective
            log.debug("%s: cannot evaluate the LP objective: %s", self.name, exc)
            return math.nan
        value = float(evaluate_objective(problem, x, self.objective))
        if self.objective in FLOOR_OBJECTIVES and value > -math.inf and self.floor > 0:
            # stage 2's value counts only where the allocation keeps the whole problem's
            # floor (a pruned LP has a lower max-min optimum, hence a looser floor)
            t_star = solve_allocation(problem, "max-min", backend=self.backend,
                                      secondary=False, method=self.lp_method).objective
            ratio = evaluate_objective(problem, x, "max-min")
            if ratio < self.floor * t_star * (1.0 - 1e-6) - 1e-12:
                return -math.inf
        return value

    def _allocate(self, view: SchedulerView, stats: PolicyStats, allowed=None,
                  t0: float | None = None, norms: np.ndarray | None = None,
                  memo_update: bool = True, lp_start=None) -> dict:
        """The LP allocation of the round; ``t0`` starts the ``time_limit_s`` budget
        (default: now); ``norms``: the jobs' normalizers if already computed;
        ``memo_update``: reuse and keep LP solutions (``memoize``; off for ``shares``);
        ``lp_start``: per job, rows column generation starts from (``decide``)."""
        deadline = (None if self.time_limit_s is None else
                    (time.perf_counter() if t0 is None else t0) + self.time_limit_s)
        A = view.num_active
        norms = self._norms(view) if norms is None else norms
        # An objective that reads no per-round field (max-min, max-throughput) builds the
        # same LP from the same jobs, tables, normalizers, capacity and allowed rows: on
        # such a repeat the previous decision's accepted answer is reused without building
        # the LP to fingerprint it (what the fingerprint's reuse would give, bit for bit)
        static_key = None
        if memo_update and self.memoize and self.time_limit_s is None:
            static_key = self._lp_inputs(view, norms, allowed)     # None: not a static LP
        if static_key is not None:
            hit = self._static_lp
            if hit is not None and hit.key == static_key:
                return hit.reuse(self, stats)
        self._static_lp = None
        rows = [self._rows(view, k, norms[k], allowed) for k in range(A)]
        parts = (self.rng.permutation(A) % self.pop if self.pop > 1
                 else np.zeros(A, dtype=np.int64))
        cap = view.capacity.astype(float)
        if self.pop > 1 and not self._warned_pop and np.any((cap > 0) & (cap < self.pop)):
            log.warning("%s: a GPU type has fewer GPUs than the %d POP parts; those parts get "
                        "none of it (floor(capacity / k))", self.name, self.pop)
            self._warned_pop = True
        part_cap = np.floor(cap / self.pop) if self.pop > 1 else cap
        members_of = [m for m in (np.flatnonzero(parts == p) for p in range(self.pop))
                      if m.size]
        # 1. each part's LP (in this process), 2. the solves (side by side when
        # pop_workers > 1), 3. each part's answer checked, or its greedy fallback
        built = []
        for members in members_of:
            t1 = time.perf_counter()
            built.append(self._build_part(view, members, rows, norms, part_cap, deadline))
            built[-1].seconds += time.perf_counter() - t1
        # a part whose LP is the previous decision's (same fingerprint) reuses its solution:
        # the same LP gives the same answer, so only without a time limit (which could cut a
        # fresh solve short), and only answers the check below accepted are kept
        use_memo = memo_update and self.memoize and self.time_limit_s is None
        memo = self._lp_memo if use_memo else {}
        keys = [problem_fingerprint(b.problem, self.objective)
                if use_memo and b.problem is not None else None for b in built]
        reused = {i: memo[key] for i, key in enumerate(keys) if key is not None and key in memo}
        todo = [i for i, b in enumerate(built) if b.problem is not None and i not in reused]
        tasks = [PartSolve(built[i].problem, self.objective, self.backend, self.floor,
                           deadline=deadline, method=self.lp_method,
                           # a decision's solves only: ``shares`` neither reads nor
                           # replaces the carried basis, nor pays for recording one
                           basis_keys=built[i].basis_keys if memo_update else None,
                           warm_basis=self._bases.get(i) if memo_update else None,
                           start=(None if lp_start is None else
                                  _start_mask(built[i].members, rows, lp_start)))
                 for i in todo]
        t_solve = time.perf_counter()
        solved = dict(zip(todo, solve_parts(tasks, executor=self.pop_executor,
                                            workers=self.pop_workers)))
        wall = time.perf_counter() - t_solve
        out = {}
        part_times = []
        kept = {}
        for i, b in enumerate(built):
            t1 = time.perf_counter()
            outcome = (PartOutcome(reused[i], "", 0.0, reused=True) if i in reused
                       else solved.get(i))
            x, accepted = self._finish_part(view, b, outcome, rows, part_cap, stats)
            if (self.warm_start and memo_update and outcome is not None
                    and outcome.result is not None and not outcome.reused):
                if outcome.result.basis is not None:
                    self._bases[i] = outcome.result.basis
                elif outcome.result.method == "colgen" and not self._warned_cold:
                    # lp_method="auto" chose column generation for a large LP: it solves cold
                    self._warned_cold = True
                    log.warning("%s: warm_start: LPs of %d columns and more are solved by "
                                "column generation (lp_method='auto'), which starts cold; "
                                "lp_method='simplex' warm-starts every LP", self.name,
                                COLGEN_MIN_COLUMNS)
                self._warm_starts += int(outcome.result.warm_started)
                self._warm_retries += int(outcome.result.warm_retried)
            if accepted and keys[i] is not None and outcome.result.status == "optimal":
                kept[keys[i]] = outcome.result
            part_times.append(b.seconds + (0.0 if outcome is None else outcome.seconds)
                              + time.perf_counter() - t1)
            for k, xr in zip(b.members, x):
                out[int(view.job_ids[k])] = (rows[k], xr)
        # the ideal parallel time (the slowest part: its build, solve and check), what the
        # parts take one after the other, and the measured wall time of the solves as run
        stats.extra["pop_parallel_s"] = max(part_times) if part_times else 0.0
        if use_memo:
            self._lp_memo = kept
            stats.extra["lp_reused"] = len(reused)
            self._lp_reused += len(reused)
        if static_key is not None and len(built) == 1 and kept:
            self._static_lp = _StaticLP(static_key, dict(out), stats, view.candidates)
        if self.pop > 1:
            stats.extra["pop_sequential_s"] = float(sum(part_times))
            stats.extra["pop_solve_wall_s"] = wall
            stats.extra["pop_workers"] = self.pop_workers
        return out

    def _job_weights(self, view: SchedulerView, ks: np.ndarray) -> np.ndarray | None:
        """The LP's job weights of active jobs ``ks``: ``1 / requested GPUs`` with
        ``scale_factors`` (Gavel's s_m), else ``None`` (all 1)."""
        if not self.scale_factors:
            return None
        return 1.0 / np.maximum(np.asarray(view.requested_gpus, dtype=np.float64)[ks], 1.0)

    def _build_part(self, view, members, rows, norms, cap, deadline) -> "_Part":
        """One part's ``AllocationProblem`` (``problem=None`` with the fault when there is
        nothing to solve or the inputs are not a valid LP)."""
        tabs = view.candidates
        sizes = np.array([rows[k].size for k in members], dtype=np.int64)
        job_of = np.repeat(np.arange(members.size), sizes)
        gpus = np.concatenate([take_rows(tabs[k].gpus, rows[k]) for k in members]) \
            if sizes.sum() else np.zeros((0, cap.size), dtype=np.int64)
        thr = np.concatenate([take_rows(tabs[k].samples_per_s, rows[k]) for k in members]) \
            if sizes.sum() else np.zeros(0)
        norm = norms[members]
        if self.agnostic:
            # Every type as fast as the job's mean requested throughput.
            thr = np.concatenate([np.full(rows[k].size, norms[k]) for k in members])
        part = _Part(members, sizes, gpus, thr)
        keep = sizes > 0
        if not np.any(keep) or thr.size == 0:
            part.empty = True
            return part
        idx = np.flatnonzero(keep)
        remap = -np.ones(members.size, dtype=np.int64)
        remap[idx] = np.arange(idx.size)
        if deadline is not None and deadline - time.perf_counter() <= 0:
            part.fault = ("time_limit", "the decision's time budget ran out before this LP")
            return part
        try:
            with np.errstate(all="ignore"):
                priority, switch, gain = self._stage2(view, members[idx],
                                                      [rows[k] for k in members[idx]], norms)
                part.problem = AllocationProblem(
                    job_of=remap[job_of], gpus=gpus, thr=thr, capacity=cap, norm=norm[idx],
                    weight=self._job_weights(view, members[idx]),
                    remaining=view.remaining_samples[members[idx]],
                    age_s=view.time_s - view.arrival_s[members[idx]],
                    ftf_denominator_s=ftf_denominator(view, members[idx]),
                    priority=priority, switch=switch, gain=gain)
        except ValueError as exc:     # ConfigError naming the bad field
            part.fault = ("invalid_input", str(exc))
            return part
        if self.warm_start:
            part.basis_keys = BasisKeys(
                job_keys=view.job_ids[members[idx]].astype(np.int64),
                cand_rows=np.concatenate([rows[k] for k in members[idx]]).astype(np.int64))
        return part

    def _finish_part(self, view, part: "_Part", outcome, rows, cap,
                     stats) -> tuple[list[np.ndarray], bool]:
        """The part's X per job and whether it is the solver's answer (else the greedy
        fallback's)."""
        sizes = part.sizes
        if part.empty:
            return [np.zeros(s) for s in sizes], False
        x, kind, detail = None, None, ""
        if part.fault is not None:
            kind, detail = part.fault
        elif outcome.out_of_time:
            kind, detail = "time_limit", "the decision's time budget ran out before this LP"
        elif outcome.result is None:
            kind, detail = "exception", outcome.error
        else:
            x, kind, detail = self._accept(part.problem, outcome.result, stats,
                                           reused=outcome.reused)
        if kind is not None:
            self._fall_back(kind, detail)
            x = self._greedy_x(view, part.members, rows, part.thr, part.gpus, cap, sizes)
            stats.extra.setdefault("fallbacks", []).append(kind)
        ends = np.cumsum(sizes).tolist()
        x = np.clip(x, 0.0, 1.0)
        return [x[e - s:e] for e, s in zip(ends, sizes.tolist())], kind is None

    def _accept(self, problem: AllocationProblem, res, stats, reused: bool = False):
        """Book one part's ``SolveResult`` into ``stats`` (``reused``: the previous decision's,
        so no solve time): ``(x, None, "")`` when the solver's answer is usable, else
        ``(None, fault kind, detail)``."""
        stats.extra.setdefault("objective_parts", []).append(float(res.objective))
        stats.extra.setdefault("lp_status", []).append(res.status)
        stats.extra["objective"] = float(res.objective)
        stats.lp_vars += res.n_vars
        stats.lp_cons += res.n_cons
        if not reused:
            stats.solve_s += res.solve_s
            stats.build_s += res.build_s
            # how column generation went (0 for the other methods): what a start saves
            extra = stats.extra
            extra["restricted_solves"] = extra.get("restricted_solves", 0) + res.pricing_rounds
        if res.status == "time_limit":
            self._time_limits += 1
        if res.status not in ("optimal", "time_limit"):
            kind = res.status if res.status in FALLBACK_KINDS else "error"
            return None, kind, res.message or f"solver status {res.status!r}"
        if not res.has_x:
            return None, "time_limit", "the time limit hit before a feasible point was found"
        x = np.asarray(res.x, dtype=np.float64)
        if res.status == "time_limit" and not np.any(x > TINY):
            # HiGHS' starting point X = 0 is feasible but shares nothing: not an incumbent
            return None, "time_limit", "the time limit hit before a non-zero feasible point"
        if x.shape != (problem.n_candidates,) or not np.all(np.isfinite(x)):
            return None, "bad_solution", f"x has shape {x.shape} or non-finite entries"
        try:
            check_feasible(problem, x, tol=FEASIBILITY_TOL)
        except AssertionError as exc:
            return None, "bad_solution", str(exc)
        return x, None, ""

    def _fall_back(self, kind: str, detail: str) -> None:
        """Count a fallback; warn on the 1st, 10th, 100th, ... of each kind in a run."""
        self._fallbacks += 1
        n = self._fallback_kinds[kind] = self._fallback_kinds.get(kind, 0) + 1
        level = logging.WARNING if str(n).rstrip("0") == "1" else logging.DEBUG
        log.log(level, "%s: LP fallback (%s, %d of this kind so far, %d in all): %s; using the "
                "greedy assignment", self.name, kind, n, self._fallbacks, detail)

    #: The fallback allocation of one part (``fallback.greedy_allocation``).
    _greedy_x = staticmethod(greedy_allocation)

    def _stage2(self, view: SchedulerView, ks: np.ndarray, rows: list, norms: np.ndarray):
        """``(priority, switch, gain)`` of the jobs ``ks`` (and their candidate ``rows``, in
        that order) for the second stage of ``fair-srpt`` / ``fair-las`` / ``sia-srpt``;
        ``None`` for what an objective does not use (``job_terms.stage2_terms``)."""
        memo = self._memo
        guarded, projected = self._guarded_jobs(view, ks)
        return stage2_terms(view, ks, rows, norms, objective=self.objective,
                            las_tau_s=self.las_tau_s, restart_aware=self.restart_aware,
                            gain_cache=memo.gains if memo is not None and memo.view is view
                            else None, table_cache=self._goodput_memo,
                            ftf_guard=self.ftf_guard, guarded=guarded, projected=projected,
                            round_restart=self.round_restart)

    def _guarded_jobs(self, view: SchedulerView, ks: np.ndarray
                      ) -> tuple[np.ndarray | None, np.ndarray | None]:
        """``(guarded, projected)``, each (len(ks),): whether each job takes the starvation
        guard's weight — its ``projected_ftf`` (``projected``, handed on to the weights so
        it is computed once a decision) is above ``ftf_guard`` now or was in an earlier
        decision of this run (the guard latches: a job whose projection falls back under
        it — more jobs arriving raise its fair share's contention — keeps the weight until
        it finishes, instead of being preempted and guarded again, a restart each time).
        ``(None, None)``: no guard, or an objective without SRPT weights. Within a
        ``decide``, ρ̂ of every active job is computed at the first call and read by the
        later ones (each POP part's LP, then the rounding's values)."""
        if self.ftf_guard is None:             # (the constructor allows it under sia-srpt only)
            return None, None
        ks = np.asarray(ks, dtype=np.int64)
        ids = view.job_ids[ks]
        memo = self._memo
        if memo is not None and memo.view is view:
            if memo.projected_ftf is None:
                memo.projected_ftf = projected_ftf(view, np.arange(view.num_active))
            projected = memo.projected_ftf[ks]
        else:
            projected = projected_ftf(view, ks)
        self._guarded.update(ids[projected > self.ftf_guard].tolist())
        guarded = np.fromiter((j in self._guarded for j in ids.tolist()), dtype=bool,
                              count=ids.size)
        return guarded, projected

    # ------------------------------------------------------------------ rounding
    def _values(self, view: SchedulerView, allowed, norms: np.ndarray) -> dict:
        """``{job id: (eligible rows, value)}``: each candidate's coefficient in the LP's
        second stage (``priority · switch · thr / norm``, or ``sia-srpt``'s gain; ``thr /
        norm`` for the one-stage objectives), what ``rounding="integral"`` repairs with."""
        ks = np.arange(view.num_active)
        rows = [self._eligible(view, k, allowed) for k in ks]
        with np.errstate(all="ignore"):
            priority, switch, gain = self._stage2(view, ks, rows, norms)
        if gain is None:
            sizes = [r.size for r in rows]
            thr = (np.concatenate([view.candidates[k].samples_per_s[r]
                                   for k, r in zip(ks, rows)]) if sum(sizes) else np.zeros(0))
            pri = np.ones(len(ks)) if priority is None else priority
            gain = (np.repeat(pri / norms, sizes) * thr
                    * (1.0 if switch is None else switch))
        gain = np.asarray(gain, dtype=np.float64)
        gain = np.where(np.isfinite(gain), gain, -np.inf)     # one pass; each job a slice
        ends = np.cumsum([r.size for r in rows]).tolist()
        return {j: (r, gain[e - r.size:e])
                for j, r, e in zip(view.job_ids.tolist(), rows, ends)}

    def _round(self, view: SchedulerView, allowed=None) -> Assignment:
        """Gavel-style rounding at the job level (``rounding.round_allocation``), or Gavel's
        own per-type queues (``gavel_queues.queue_assignment``)."""
        if self.rounding == "gavel-queues":
            types = view.cluster.gpu_types
            if self._type_order is None or self._type_order[0] != types:
                self._type_order = (types, fastest_first(types))
            # Gavel draws its queues' type order afresh every round for the policies that do
            # not know the types' speeds (its non-``_perf`` ones: here the agnostic policy)
            order = (self.rng.permutation(len(types)).tolist() if self.agnostic
                     else self._type_order[1])
            return queue_assignment(
                view, self._x, self._received, self._deficit, type_order=order,
                eligible=lambda k: self._eligible(view, k, allowed),
                others=lambda k, exclude: self._others(view, k, exclude, allowed),
                memo=self._queue_memo if self.memoize else None, types_memo=self._row_types)
        # the memo needs an ``others`` fixed by the round's jobs (no random order, no ranker)
        memo = (self._round_memo if self.memoize and allowed is None and not self.agnostic
                else None)
        return round_allocation(view, self._x, self._received, self._deficit, self._elapsed,
                                sticky=self.sticky, fill=self.fill,
                                others=lambda k, exclude: self._others(view, k, exclude, allowed),
                                memo=memo, gpu_rows=self._gpu_rows)

    def _others(self, view: SchedulerView, k: int, exclude, allowed=None) -> list[int]:
        """Job ``k``'s eligible candidates (``_eligible``) with positive throughput that are
        not in ``exclude``, fastest first (the agnostic policy: in random order, it does not
        know which type is faster). Python ints; without ``agnostic`` a list shared across
        calls (read-only: the rounding copies it into each preference list)."""
        table, eligible = view.candidates[k], self._eligible(view, k, allowed)
        if self.agnostic:                  # a random order, drawn afresh each time
            return other_candidates(table, eligible, exclude, self.rng)
        # fastest first depends on the table and the eligible rows alone: ordered once, and
        # each (rows, exclude) filtered once — a job's exclusions, its LP rows, repeat
        # from round to round between solves
        memo = self._others_memo
        if len(memo) >= OTHERS_MEMO_SIZE:
            memo.clear()                        # e.g. a ranker's kept rows change every round
        rows_key = eligible.tobytes()
        key = (id(table), rows_key, tuple(exclude))
        hit = memo.get(key)
        if hit is not None and hit[0] is table:
            return hit[1]
        ordered = memo.get_for(table, (id(table), rows_key),
                               lambda: other_candidates(table, eligible, ()))
        skip = set(exclude)
        rest = [c for c in ordered if c not in skip]
        memo[key] = (table, rest)
        return rest


class _StaticLP:
    """The last allocation of an objective that reads no per-round field, with what it was
    built from (``key``) and what its decision booked into ``PolicyStats``: ``reuse`` books
    it again as the fingerprint's reuse of the same LP would (``_accept(reused=True)``)."""

    def __init__(self, key, out: dict, stats: PolicyStats, tables: tuple) -> None:
        self.key, self.out, self.tables = key, out, tables     # (tables pin the key's ids)
        extra = stats.extra
        self.booked = (list(extra["objective_parts"]), list(extra["lp_status"]),
                       extra["objective"], stats.lp_vars, stats.lp_cons)

    def reuse(self, policy: "LPPolicy", stats: PolicyStats) -> dict:
        t0 = time.perf_counter()
        parts, status, objective, n_vars, n_cons = self.booked
        stats.extra.setdefault("objective_parts", []).extend(parts)
        stats.extra.setdefault("lp_status", []).extend(status)
        stats.extra["objective"] = objective
        stats.lp_vars += n_vars
        stats.lp_cons += n_cons
        stats.extra["lp_reused"] = 1
        policy._lp_reused += 1
        stats.extra["pop_parallel_s"] = time.perf_counter() - t0
        return dict(self.out)

    def __deepcopy__(self, memo) -> None:
        return None                # a cache: a copy of the policy builds its LP afresh

    def __reduce__(self):
        return _no_static_lp, ()   # ... and so does an unpickled one


def _start_rows(view: SchedulerView, lp_start) -> list[np.ndarray]:
    """``decide``'s ``lp_start`` checked: per active job, its rows as int64 indices into the
    job's candidate table; ``ConfigError(field="lp_start")`` naming the job otherwise."""
    if len(lp_start) != view.num_active:
        raise ConfigError(f"lp_start needs one row list per active job ({view.num_active}), "
                          f"got {len(lp_start)}", field="lp_start")
    out = []
    for k, (given, table) in enumerate(zip(lp_start, view.candidates)):
        n = len(table)
        try:
            a = np.asarray(given)
        except Exception:                          # noqa: BLE001 - any object: refused
            a = np.asarray(None)
        if a.dtype == bool and a.shape == (n,):
            out.append(np.flatnonzero(a))
            continue
        if a.ndim != 1 or (a.size and a.dtype.kind not in "iu"):
            raise ConfigError(f"job {int(view.job_ids[k])} (active job {k}): rows must be "
                              f"indices into its {n} candidates or a bool mask of that "
                              f"length, got {a.dtype} of shape {a.shape}", field="lp_start")
        if a.size and (a.min() < 0 or a.max() >= n):
            raise ConfigError(f"job {int(view.job_ids[k])} (active job {k}): rows must be "
                              f"0..{n - 1}, got {int(a.min())}..{int(a.max())}",
                              field="lp_start")
        if n > 2 and a.size == n and np.all((a == 0) | (a == 1)):
            raise ConfigError(f"job {int(view.job_ids[k])} (active job {k}): {n} numbers of "
                              f"0 and 1, a mask given as {a.dtype}? Pass a bool mask or row "
                              f"indices", field="lp_start")
        out.append(a.astype(np.int64, copy=False))
    return out


def _start_mask(members: np.ndarray, rows: list, lp_start) -> np.ndarray:
    """A part's column-generation start as a mask over its LP's candidates (its members'
    ``rows`` in order): the rows ``lp_start`` names for each member."""
    if not len(members):
        return np.zeros(0, dtype=bool)
    local = np.arange(len(members))
    cand = np.concatenate([rows[k] for k in members]).astype(np.int64, copy=False)
    cand_of = np.repeat(local, [rows[k].size for k in members])
    start = np.concatenate([lp_start[k] for k in members]).astype(np.int64, copy=False)
    start_of = np.repeat(local, [lp_start[k].size for k in members])
    if not start.size:
        return np.zeros(cand.size, dtype=bool)
    # one membership test over (member, row) keys, not one per job (2,000 calls: ~16 ms)
    width = int(max(cand.max(initial=0), start.max())) + 1
    return np.isin(cand_of * width + cand, start_of * width + start)


def _no_static_lp() -> None:
    return None


def __getattr__(name: str):
    """``make_policy`` and ``POLICY_NAMES``, re-exported lazily from ``lp_baseline.registry``
    (which imports this module)."""
    if name in ("make_policy", "POLICY_NAMES"):
        from lp_baseline import registry
        return getattr(registry, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
