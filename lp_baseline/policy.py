"""The HeteroSched LP as a scheduling policy, with its decision-overhead heuristics.

Each round (or only when jobs arrive or finish, see ``resolve``) the policy solves the
allocation LP over job × candidate (``lp_baseline.solver``): X[j, c] is the share of time job j
should run with candidate c. The co-optimizer's default objective is ``fair-srpt`` (a max-min
fairness floor, then Σ throughput ÷ remaining work; ``fair-las`` is the non-clairvoyant
variant), with each job's throughput normalized by its throughput on its fair share
(``normalizer``) and candidates capped at ``max(requested, G / N)`` GPUs (``size_cap``); see
docs/lp.md. The fractional X is turned into this round's integral assignment
the way Gavel does it, at the level of jobs: a job's priority is its LP share (Σ_c X[j, c])
÷ the share of time it has received since the last solve — jobs that have received nothing come
first — with its accumulated deficit (share × elapsed − received) as tie-breaker; jobs are
admitted in priority order if they fit on the nodes (a dry run of the simulator's placement,
``_DryRun``: jobs rerunning their current candidate keep their nodes first). Which of its
candidates a job runs: its current one if the LP still gives it a share (``sticky``: a switch
costs a restart), else the one most under-served (X minus the share received); the others with
X > 0 follow, then the job's other eligible candidates, fastest first — a job the LP runs is
placed on something that fits rather than idled by node fragmentation; the rest of the list
stays as the simulator's fallbacks. Then (``fill``) GPUs still free go to waiting jobs that
fit, so the schedule is work-conserving. (Rounding per (job, candidate) pair, as Gavel rounds per
(job, type), time-shares a job between its own candidates and pays a restart at each switch.)

Heuristics that cut decision time (``LPPolicy`` arguments):

* ``topk``: keep each job's k candidates with the highest normalized throughput per GPU;
* ``dominance``: drop candidates dominated within the job (no more GPUs of any type, at least as
  fast) — the planner already prunes its own; this also covers the appended requested ones;
* ``resolve="on-change"``: re-solve only when jobs arrive or complete, reusing X otherwise;
* ``pop``: POP-style k-way random partition of the jobs (and ⌊capacity/k⌋ per part), one LP
  per part — the baseline to beat. The reported decision time is the sequential wall time; the
  parallel-solve time POP reports (max over parts) is in ``last_stats.extra``.

Faults (``docs/lp.md``, "Faults and fallback"): when an LP part yields no usable allocation —
the round's data is invalid for the LP (NaN, zero throughput), the solver is missing, raises,
proves infeasibility, ends in an error, returns a non-finite or infeasible ``x``, or hits the
decision's time limit without a feasible incumbent — that part falls back to the **greedy
assignment** (``_greedy_x``): its jobs in arrival order, each given X = 1 on its current
candidate if it still fits, else its fastest candidate that fits the part's GPUs still free.
The fallback is counted (``summary()["lp_fallbacks"]``, by kind in ``lp_fallback_kinds``) and
logged as a warning, rate-limited (the 1st, 10th, 100th, … fault of each kind in a run); the
rounding and the fill pass then run as usual, so the simulation goes on.

Policies built on it (``make_policy``): ``heterosched-lp`` (all candidates, ``fair-srpt``),
``heterosched-lp-las`` (the same with ``fair-las``), ``gavel`` (Gavel's heterogeneity-aware
max-min with its ``X_equal`` normalizer, only each job's requested GPU count with plain data
parallelism on each type: no strategy co-optimization), ``agnostic-lp`` (the same, with every
type's throughput taken as equal), ``heterosched-lp-v0`` (an ablation: max-min over every
candidate with Gavel's normalizer and no size cap, on today's rounding and candidate tables),
``topk``, ``pop-K`` and ``lp-on-change``. ``sia`` (``lp_baseline.sia``) is Sia's ILP.
"""

from __future__ import annotations

import logging
import math
import time

import numpy as np

from hsched_env.errors import ConfigError, UnknownNameError
from hsched_env.placement import NodeState, candidate_parts
from hsched_env.planner import _undominated
from hsched_env.policy import Assignment, PolicyStats, SchedulerView
from lp_baseline.solver import (DEFAULT_FLOOR, FLOOR_OBJECTIVES, OBJECTIVES, AllocationProblem,
                                 check_feasible, evaluate_objective, solve_allocation)

TINY = 1e-6
SHARE_QUANTUM = 1e-4    # shares closer than this are ties in the rounding's priorities
#: Why an LP part fell back to the greedy assignment (``summary()["lp_fallback_kinds"]``).
FALLBACK_KINDS = ("invalid_input", "unavailable", "exception", "error", "infeasible",
                  "time_limit", "bad_solution")
#: Tolerance of the check that a solver's ``x`` satisfies the LP's constraints.
FEASIBILITY_TOL = 1e-6
#: The co-optimizer's default objective (``heterosched-lp``; see docs/lp.md for why).
DEFAULT_OBJECTIVE = "fair-srpt"
#: Normalizers of a job's throughput (``LPPolicy(normalizer=)``).
NORMALIZERS = ("fair-share", "requested")
#: ``fair-las``: the first attained-service class boundary (seconds of the requested config).
DEFAULT_LAS_TAU_S = 1800.0
log = logging.getLogger(__name__)


class LPPolicy:
    """The allocation LP plus Gavel-style rounding (see the module docstring).

    Args:
        name: Name shown in results.
        objective: One of ``OBJECTIVES``: ``fair-srpt`` (default), ``fair-las``, ``max-min``,
            ``max-throughput``, ``min-makespan`` or ``ftf``.
        candidates: ``"all"`` or ``"requested"`` (only the requested-GPU data-parallel ones).
        agnostic: Solve as if every GPU type were equally fast (Gavel's agnostic baseline).
        topk: Keep each job's k best candidates by normalized throughput per GPU.
        dominance: Drop candidates dominated within the job.
        resolve: ``"every-round"`` or ``"on-change"``.
        pop: Number of POP partitions (1 = the whole problem).
        backend: ``"highs"`` (direct sparse matrix, default) or ``"pulp"``.
        time_limit_s: Per-decision budget of the LP work (model building and solves of all
            POP parts together, sequentially); on expiry a part uses the solver's feasible
            incumbent, else the greedy fallback. The rounding after it is not included.
        sticky: A job whose current candidate still has X > 0 keeps it instead of switching to
            another of its candidates (each switch costs a restart).
        fill: After the priority pass, give GPUs still free to waiting jobs (their candidates
            with X > 0 first, in priority order, then any candidate that fits), so no GPU idles
            while a job that fits waits.
        normalizer: ``"fair-share"`` (default): a job's throughput is normalized by its
            throughput on its fair share, ``min(requested, G / N)`` GPUs (G GPUs in the
            cluster, N active jobs; its best candidate, time-sliced when larger);
            ``"requested"``: Gavel's ``X_equal`` — its requested configuration on each type,
            weighted by the type's share of the cluster.
        size_cap: Only candidates of at most ``max(requested, G / N)`` GPUs (and the requested
            configurations) enter the LP, the rounding and the fill pass; a job none of whose
            candidates is that small keeps its smallest ones.
        floor: Fairness floor of ``fair-srpt`` / ``fair-las``: every job keeps at least this
            fraction of the max-min optimum.
        las_tau_s: ``fair-las``: the first attained-service class boundary, in seconds of the
            job's requested configuration (classes ``[0, τ)``, ``[τ, 3τ)``, ``[3τ, 7τ)``, ...).
        restart_aware: In the second stage of ``fair-srpt`` / ``fair-las``, discount a running
            job's other candidates by the share of time they would be productive after the
            restart a switch costs, ``H / (H + restart_s)`` with ``H`` the job's remaining time
            on that candidate.
    """

    def __init__(self, name: str = "heterosched-lp", *, objective: str = DEFAULT_OBJECTIVE,
                 candidates: str = "all", agnostic: bool = False, topk: int | None = None,
                 dominance: bool = False, resolve: str = "every-round", pop: int = 1,
                 backend: str = "highs", time_limit_s: float | None = None,
                 sticky: bool = True, fill: bool = True, normalizer: str = "fair-share",
                 size_cap: bool = True, floor: float = DEFAULT_FLOOR,
                 las_tau_s: float = DEFAULT_LAS_TAU_S, restart_aware: bool = True) -> None:
        if objective not in OBJECTIVES:
            raise UnknownNameError("objective", objective, list(OBJECTIVES))
        if candidates not in ("all", "requested"):
            raise UnknownNameError("candidate set", candidates, ["all", "requested"])
        if resolve not in ("every-round", "on-change"):
            raise UnknownNameError("resolve mode", resolve, ["every-round", "on-change"])
        if normalizer not in NORMALIZERS:
            raise UnknownNameError("normalizer", normalizer, list(NORMALIZERS))

        if not (isinstance(floor, (int, float)) and 0.0 <= floor <= 1.0):
            raise ConfigError(f"the fairness floor must be in [0, 1], got {floor!r}",
                              field="floor")
        if not (isinstance(las_tau_s, (int, float)) and math.isfinite(las_tau_s)
                and las_tau_s > 0):
            raise ConfigError(f"las_tau_s must be a positive number of seconds, got "
                              f"{las_tau_s!r}", field="las_tau_s")
        self.name, self.objective, self.candidates = name, objective, candidates
        self.agnostic, self.topk, self.dominance = agnostic, topk, dominance
        self.resolve, self.pop, self.backend = resolve, max(int(pop), 1), backend
        self.time_limit_s, self.sticky, self.fill = time_limit_s, sticky, fill
        self.normalizer, self.size_cap, self.floor = normalizer, size_cap, float(floor)
        self.las_tau_s, self.restart_aware = float(las_tau_s), restart_aware
        self.last_stats = PolicyStats()
        self.reset(None, 0)

    # ------------------------------------------------------------------ state
    def reset(self, cluster, seed) -> None:
        self.rng = np.random.default_rng(seed)
        self._x: dict[int, tuple[np.ndarray, np.ndarray]] = {}   # job -> (rows, x)
        self._received: dict[int, dict[int, float]] = {}
        self._deficit: dict[int, dict[int, float]] = {}
        self._elapsed = 0.0
        self._last_t: float | None = None
        self._solves = 0
        self._fallbacks = 0
        self._fallback_kinds: dict[str, int] = {}
        self._time_limits = 0
        self._retry = False        # the last allocation fell back: re-solve at the next decision
        self._warned_pop = False
        self._allowed_key = None
        # delivered ÷ planned: each job's planned normalized rate of the last decision
        # job -> (Σ X thr / norm, norm, restarts so far)
        self._planned: dict[int, tuple[float, float, int]] = {}
        self._planned_sum = 0.0
        self._delivered_sum = 0.0

    @property
    def allocation(self) -> dict:
        """The current LP allocation: ``{job id: (candidate rows, X)}`` (read-only use)."""
        return self._x

    def summary(self) -> dict:
        """Counters of the run: ``lp_solves`` (allocations computed by ``decide``),
        ``lp_fallbacks`` (LP parts that used the greedy fallback, ``shares`` calls included),
        ``lp_fallback_kinds`` (those by kind, see ``FALLBACK_KINDS``), ``lp_time_limits``
        (solves that hit the time limit, with or without a usable incumbent) and
        ``delivered_over_planned``: Σ over rounds and jobs of the normalized throughput the
        jobs actually ran with (less the time a restart took) ÷ the normalized throughput the
        LP planned for them (``Σ_c X thr / norm``; rounds a job finished in are left out);
        above 1 when the fill pass runs jobs on GPUs the plan left idle; NaN before a round
        has run."""
        return {"lp_solves": self._solves, "lp_fallbacks": self._fallbacks,
                "lp_fallback_kinds": dict(sorted(self._fallback_kinds.items())),
                "lp_time_limits": self._time_limits,
                "delivered_over_planned": (self._delivered_sum / self._planned_sum
                                           if self._planned_sum > 0 else math.nan)}

    # ------------------------------------------------------------------ candidates
    def _eligible(self, view: SchedulerView, k: int, allowed=None) -> np.ndarray:
        """The rows job ``k`` may run with: the candidate set (all or requested), the
        ``allowed`` rows, the size cap; ascending."""
        table = view.candidates[k]
        rows = (np.flatnonzero(table.requested) if self.candidates == "requested"
                else np.arange(len(table)))
        if allowed is not None:
            rows = np.intersect1d(rows, np.asarray(allowed[k], dtype=np.int64))
        if self.size_cap and rows.size:
            n = table.num_gpus[rows]
            cap = max(float(view.requested_gpus[k]),
                      float(view.capacity.sum()) / max(view.num_active, 1))
            ok = (n <= cap + 1e-9) | table.requested[rows]
            rows = rows[ok] if ok.any() else rows[n == n.min()]
        return rows

    def _rows(self, view: SchedulerView, k: int, norm: float, allowed=None) -> np.ndarray:
        table = view.candidates[k]
        rows = self._eligible(view, k, allowed)
        if self.dominance and rows.size > 1:
            rows = rows[_undominated(table.gpus[rows], table.samples_per_s[rows])]
        if self.topk is not None and rows.size > self.topk:
            with np.errstate(all="ignore"):
                score = table.samples_per_s[rows] / norm / table.gpus[rows].sum(axis=1)
            score = np.where(np.isfinite(score), score, -np.inf)
            rows = np.sort(rows[np.argsort(-score, kind="stable")[:self.topk]])
        return rows

    def _norms(self, view: SchedulerView) -> np.ndarray:
        """(A,) each active job's normalizer (``normalizer``), > 0 where the data allow."""
        return np.array([self._norm(view, k) for k in range(view.num_active)])

    def _norm(self, view: SchedulerView, k: int) -> float:
        table = view.candidates[k]
        if self.normalizer == "requested":
            # Gavel's X_equal: the requested configuration on each type, weighted by the
            # type's share of the cluster
            share = view.capacity / max(view.capacity.sum(), 1)
            value = 0.0
            for r in np.flatnonzero(table.requested):
                t = int(np.flatnonzero(table.gpus[r])[0])
                value += share[t] * float(table.samples_per_s[r])
        else:
            # the job's best throughput on its fair share of min(requested, G / N) GPUs,
            # time-sliced where a candidate needs more
            fair = min(float(view.requested_gpus[k]),
                       float(view.capacity.sum()) / max(view.num_active, 1))
            value = 0.0
            if len(table):
                with np.errstate(all="ignore"):
                    thr = table.samples_per_s * np.minimum(1.0, fair / table.num_gpus)
                thr = thr[np.isfinite(thr)]
                value = float(thr.max()) if thr.size else 0.0
        return value if value > 0 else float(view.reference_samples_per_s[k])

    # ------------------------------------------------------------------ decide
    def decide(self, view: SchedulerView, allowed=None) -> Assignment:
        """This round's assignment.

        Args:
            view: The scheduler view.
            allowed: Optional, per active job (aligned with ``view.job_ids``), the candidate
                rows the LP may use (e.g. the ones a ranker kept); the rounding and the fill
                pass use only these too. ``None``: every candidate.
        """
        t0 = time.perf_counter()
        self._track_delivery(view)
        if self._last_t is not None:
            step = view.time_s - self._last_t
            self._elapsed += step
            for k, j in enumerate(view.job_ids):
                cur = int(view.current[k])
                if cur >= 0:
                    rec = self._received.setdefault(int(j), {})
                    rec[cur] = rec.get(cur, 0.0) + step
        self._last_t = view.time_s
        active = {int(j) for j in view.job_ids}
        key = None if allowed is None else tuple(np.asarray(a, dtype=np.int64).tobytes()
                                                 for a in allowed)
        changed = bool(view.arrived or view.completed) or not self._x \
            or set(self._x) != active or key != self._allowed_key or self._retry
        self._allowed_key = key
        stats = PolicyStats()
        norms = self._norms(view)          # once per decision: the LP and the plan record
        if self.resolve == "every-round" or changed:
            self._solve(view, stats, allowed, t0, norms)
        assignment = self._round(view, allowed)
        self._record_plan(view, norms)
        stats.extra["decide_s"] = time.perf_counter() - t0
        self.last_stats = stats
        return assignment

    def _solve(self, view: SchedulerView, stats: PolicyStats, allowed=None,
               t0: float | None = None, norms: np.ndarray | None = None) -> None:
        # New allocation: move what each pair received into its deficit, restart the shares.
        active = {int(j) for j in view.job_ids}
        for j, (rows, x) in self._x.items():
            rec = self._received.get(j, {})
            d = self._deficit.setdefault(j, {})
            for r, xv in zip(rows, x):
                d[int(r)] = d.get(int(r), 0.0) + xv * self._elapsed - rec.get(int(r), 0.0)
        for j in [j for j in self._deficit if j not in active]:
            del self._deficit[j]                    # finished jobs
        self._received = {}
        self._elapsed = 0.0
        self._x = self._allocate(view, stats, allowed, t0, norms)
        self._retry = bool(stats.extra.get("fallbacks"))
        stats.resolved = True
        self._solves += 1

    def shares(self, view: SchedulerView, allowed=None) -> tuple[dict, PolicyStats]:
        """Solve the LP for ``view`` without touching the rounding state: ``({job id: (rows,
        X)}, stats)`` — X is the share of time the job should run with each of those
        candidate rows; ``stats.extra["objective"]`` is the LP's primary objective."""
        stats = PolicyStats()
        return self._allocate(view, stats, allowed), stats

    def evaluate(self, view: SchedulerView, allocation: dict) -> float:
        """The LP's primary objective of ``allocation`` (``{job id: (rows, X)}``, e.g.
        ``allocation`` or ``shares(view)[0]``) over the round's whole problem: every active
        job with all its candidates. A job the allocation leaves out counts with X = 0, so a
        pruned LP is scored on the same problem as the full one. For ``fair-srpt`` /
        ``fair-las`` it is stage 2's weighted throughput, or ``-inf`` when the allocation
        breaks the whole problem's fairness floor (``floor ×`` its max-min optimum, one
        extra LP solve), so a pruned LP can never score above the full one."""
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
                priority, switch = self._stage2(view, ks, [np.arange(s) for s in sizes], norms)
                problem = AllocationProblem(
                    job_of=np.repeat(ks, sizes), gpus=np.concatenate([t.gpus for t in tabs]),
                    thr=np.concatenate([t.samples_per_s for t in tabs]),
                    capacity=view.capacity.astype(float), norm=norms,
                    remaining=view.remaining_samples, age_s=view.time_s - view.arrival_s,
                    ftf_denominator_s=self._ftf_denominator(view, ks),
                    priority=priority, switch=switch)
        except ValueError as exc:
            # the round's data is not a valid LP (NaN or zero throughput): no objective
            log.debug("%s: cannot evaluate the LP objective: %s", self.name, exc)
            return math.nan
        value = float(evaluate_objective(problem, x, self.objective))
        if self.objective in FLOOR_OBJECTIVES and value > -math.inf:
            # stage 2's value counts only where the allocation keeps the whole problem's
            # floor (a pruned LP has a lower max-min optimum, hence a looser floor)
            t_star = solve_allocation(problem, "max-min", backend=self.backend,
                                      secondary=False).objective
            ratio = evaluate_objective(problem, x, "max-min")
            if ratio < self.floor * t_star * (1.0 - 1e-6) - 1e-12:
                return -math.inf
        return value

    def _allocate(self, view: SchedulerView, stats: PolicyStats, allowed=None,
                  t0: float | None = None, norms: np.ndarray | None = None) -> dict:
        """The LP allocation of the round; ``t0`` starts the ``time_limit_s`` budget
        (default: now); ``norms``: the jobs' normalizers if already computed."""
        deadline = (None if self.time_limit_s is None else
                    (time.perf_counter() if t0 is None else t0) + self.time_limit_s)
        A = view.num_active
        norms = self._norms(view) if norms is None else norms
        rows = [self._rows(view, k, norms[k], allowed) for k in range(A)]
        parts = (self.rng.permutation(A) % self.pop if self.pop > 1
                 else np.zeros(A, dtype=np.int64))
        cap = view.capacity.astype(float)
        if self.pop > 1 and not self._warned_pop and np.any((cap > 0) & (cap < self.pop)):
            log.warning("%s: a GPU type has fewer GPUs than the %d POP parts; those parts get "
                        "none of it (floor(capacity / k))", self.name, self.pop)
            self._warned_pop = True
        out = {}
        part_times = []
        for p in range(self.pop):
            members = np.flatnonzero(parts == p)
            if members.size == 0:
                continue
            t1 = time.perf_counter()
            x = self._solve_part(view, members, rows, norms,
                                 np.floor(cap / self.pop) if self.pop > 1 else cap, stats,
                                 deadline)
            part_times.append(time.perf_counter() - t1)
            for k, xr in zip(members, x):
                out[int(view.job_ids[k])] = (rows[k], xr)
        stats.extra["pop_parallel_s"] = max(part_times) if part_times else 0.0
        return out

    def _solve_part(self, view, members, rows, norms, cap, stats,
                    deadline: float | None = None) -> list[np.ndarray]:
        tabs = view.candidates
        sizes = np.array([rows[k].size for k in members], dtype=np.int64)
        job_of = np.repeat(np.arange(members.size), sizes)
        gpus = np.concatenate([tabs[k].gpus[rows[k]] for k in members]) if sizes.sum() else \
            np.zeros((0, cap.size), dtype=np.int64)
        thr = np.concatenate([tabs[k].samples_per_s[rows[k]] for k in members]) if sizes.sum() \
            else np.zeros(0)
        norm = norms[members]
        if self.agnostic:
            # Every type as fast as the job's mean requested throughput.
            thr = np.concatenate([np.full(rows[k].size, norms[k]) for k in members])
        keep = sizes > 0
        out = [np.zeros(s) for s in sizes]
        if not np.any(keep) or thr.size == 0:
            return out
        idx = np.flatnonzero(keep)
        remap = -np.ones(members.size, dtype=np.int64)
        remap[idx] = np.arange(idx.size)
        x, kind, detail = None, None, ""
        budget = None if deadline is None else deadline - time.perf_counter()
        if budget is not None and budget <= 0:
            kind, detail = "time_limit", "the decision's time budget ran out before this LP"
        else:
            try:
                with np.errstate(all="ignore"):
                    priority, switch = self._stage2(view, members[idx],
                                                    [rows[k] for k in members[idx]], norms)
                    problem = AllocationProblem(
                        job_of=remap[job_of], gpus=gpus, thr=thr, capacity=cap, norm=norm[idx],
                        remaining=view.remaining_samples[members[idx]],
                        age_s=view.time_s - view.arrival_s[members[idx]],
                        ftf_denominator_s=self._ftf_denominator(view, members[idx]),
                        priority=priority, switch=switch)
            except ValueError as exc:     # ConfigError naming the bad field
                kind, detail = "invalid_input", str(exc)
            else:
                x, kind, detail = self._run_solver(problem, budget, stats)
        if kind is not None:
            self._fall_back(kind, detail)
            x = self._greedy_x(view, members, rows, thr, gpus, cap, sizes)
            stats.extra.setdefault("fallbacks", []).append(kind)
        start = np.r_[0, np.cumsum(sizes)[:-1]]
        return [np.clip(x[s0:s0 + s], 0.0, 1.0) for s0, s in zip(start, sizes)]

    def _run_solver(self, problem: AllocationProblem, budget, stats):
        """Solve one part: ``(x, None, "")`` when the solver's answer is usable, else
        ``(None, fault kind, detail)``."""
        try:
            res = solve_allocation(problem, self.objective, backend=self.backend,
                                   time_limit_s=budget, floor=self.floor)
        except Exception as exc:         # noqa: BLE001 - any solver crash: fall back
            return None, "exception", f"{type(exc).__name__}: {exc}"
        stats.extra.setdefault("objective_parts", []).append(float(res.objective))
        stats.extra.setdefault("lp_status", []).append(res.status)
        stats.extra["objective"] = float(res.objective)
        stats.lp_vars += res.n_vars
        stats.lp_cons += res.n_cons
        stats.solve_s += res.solve_s
        stats.build_s += res.build_s
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

    @staticmethod
    def _greedy_x(view, members, rows, thr, gpus, cap, sizes) -> np.ndarray:
        """The fallback allocation of one part (a feasible LP point): jobs in arrival order,
        each X = 1 on its current candidate if that still fits the part's free GPUs, else on
        its fastest candidate (finite, positive throughput) that fits; jobs that fit nowhere
        get nothing (the fill pass may still run them)."""
        x = np.zeros(thr.size)
        free = np.asarray(cap, dtype=np.float64).copy()
        start = np.r_[0, np.cumsum(sizes)[:-1]]
        for i, k in enumerate(members):
            s0, s = int(start[i]), int(sizes[i])
            if s == 0:
                continue
            t, g = thr[s0:s0 + s], gpus[s0:s0 + s]
            ok = np.isfinite(t) & (t > 0) & np.all(g <= free + 1e-9, axis=1)
            if not ok.any():
                continue
            cur = np.flatnonzero(rows[k] == view.current[k])
            if cur.size and ok[cur[0]]:
                c = int(cur[0])
            else:
                c = int(np.argmax(np.where(ok, t, -np.inf)))
            x[s0 + c] = 1.0
            free -= g[c]
        return x

    def _stage2(self, view: SchedulerView, ks: np.ndarray, rows: list, norms: np.ndarray):
        """``(priority, switch)`` of the jobs ``ks`` (and their candidate ``rows``, in that
        order) for the second stage of ``fair-srpt`` / ``fair-las``; ``(None, None)`` for the
        other objectives.

        ``fair-srpt``: ``norm / remaining`` (the stage then maximizes ``Σ_j thr_j /
        remaining_j``, SRPT-like). ``fair-las``: discretized least attained service — class
        ``c = ⌊log2(1 + a / las_tau_s)⌋`` of the attained service ``a`` (samples done ÷ the
        job's reference throughput, in seconds) weighs ``2^-c``, older jobs up to 10% more
        within a class; it reads only ``done_samples``, never the remaining work, as a
        non-clairvoyant scheduler would. ``switch`` (``restart_aware``): 1 for a running job's current
        candidate and for a job that never ran; ``H / (H + restart_s)`` for every other
        choice (it costs a restart), ``H`` the job's remaining time on that candidate —
        remaining work ÷ throughput for ``fair-srpt``, the LAS estimate ``norm × (attained +
        las_tau_s)`` ÷ throughput for ``fair-las`` (which never reads the remaining work)."""
        if self.objective not in FLOOR_OBJECTIVES:
            return None, None
        ks = np.asarray(ks, dtype=np.int64)
        rem = view.remaining_samples[ks]
        norm = norms[ks]
        if self.objective == "fair-srpt":
            priority = norm / np.maximum(rem, 1e-9)
        else:
            # discretized LAS (Tiresias' idea): attained service in seconds of the job's
            # requested configuration, in geometric classes [0, tau), [tau, 3 tau),
            # [3 tau, 7 tau), ...; class c weighs 2^-c; within a class the older job weighs
            # up to 10% more (FIFO), so priorities are stable between class boundaries
            done = view.done_samples[ks]
            attained = done / view.reference_samples_per_s[ks]
            cls = np.floor(np.log2(1.0 + attained / self.las_tau_s))
            age = view.time_s - view.arrival_s[ks]
            oldest = float(age.max()) if age.size and age.max() > 0 else 1.0
            priority = 2.0 ** -cls * (1.0 + 0.1 * age / oldest)
        switch = None
        if self.restart_aware and view.restart_s > 0:
            # remaining work as the objective may know it: the true remaining (fair-srpt) or
            # the LAS estimate, attained + tau fair-share seconds (fair-las)
            if self.objective == "fair-srpt":
                est = rem
            else:   # the class's upper boundary, in samples
                est = (2.0 ** (cls + 1) - 1.0) * self.las_tau_s * view.reference_samples_per_s[ks]
                est = np.maximum(est - done, 0.5 * self.las_tau_s
                                 * view.reference_samples_per_s[ks])
            parts = []
            for i, (k, r) in enumerate(zip(ks, rows)):
                cur = int(view.current[k])
                started = view.attained_s[k] > 0
                if cur < 0 and not started:
                    parts.append(np.ones(len(r)))   # a first start costs no restart
                    continue
                horizon = est[i] / view.candidates[k].samples_per_s[r]
                f = horizon / (horizon + view.restart_s)
                # a running job's current candidate costs nothing; any other choice (and any
                # choice of a preempted job) costs a restart
                parts.append(np.where(r == cur, 1.0, f) if cur >= 0 else f)
            switch = np.concatenate(parts) if parts else np.zeros(0)
            switch = np.where(np.isfinite(switch) & (switch > 0), switch, 1.0)
        return priority, switch

    @staticmethod
    def _ftf_denominator(view, ks) -> np.ndarray:
        """Finish-time-fairness reference: time on the job's fair share (requested reference
        GPUs, stretched by contention), from arrival."""
        total = view.work_samples[ks] / view.reference_samples_per_s[ks]
        contention = max(view.num_active * float(np.mean(view.requested_gpus))
                         / max(view.capacity.sum(), 1), 1.0)
        return total * contention

    # ------------------------------------------------------------------ rounding
    def _round(self, view: SchedulerView, allowed=None) -> Assignment:
        """Gavel-style rounding at the job level (see the module docstring), checked against
        a dry-run placement on the cluster's nodes."""
        el = max(self._elapsed, 1e-9)
        jobs = []
        for k, j in enumerate(view.job_ids):
            j = int(j)
            if j not in self._x:
                continue
            rows, x = self._x[j]
            support = x > TINY
            if not support.any():
                continue
            rec = self._received.get(j, {})
            # Rounded to SHARE_QUANTUM: the LP's solution is exact to ~1e-6, and another
            # optimal vertex (same problem, other candidates) must not reorder the jobs.
            share = round(float(x[support].sum()) / SHARE_QUANTUM) * SHARE_QUANTUM
            got = sum(rec.values())
            prio = share * 1e9 if got <= 0 else share / (got / el)
            deficit = round(sum(self._deficit.get(j, {}).values()), 1)     # seconds
            # Which candidate: the current one if the LP still gives it a share (a switch costs
            # a restart), else the most under-served one (share X minus time received).
            rs, xs = rows[support], x[support]
            cur = int(view.current[k])
            under = np.round((xs - np.array([rec.get(int(r), 0.0) / el for r in rs]))
                             / SHARE_QUANTUM) * SHARE_QUANTUM
            xs = np.round(xs / SHARE_QUANTUM) * SHARE_QUANTUM
            order = [int(r) for r in rs[np.lexsort((-xs, -under))]]
            if self.sticky and cur in order:
                order.remove(cur)
                order.insert(0, cur)
            jobs.append((-prio, -deficit, -share, j, k, order))
        jobs.sort(key=lambda e: e[:4])
        dry = _DryRun(view)
        out: Assignment = {}
        for _, _, _, j, k, order in jobs:
            # the LP's candidates first; if node fragmentation blocks them all, the job's
            # other candidates that fit, fastest first (a job the LP runs is never idled
            # for want of the exact set)
            prefs = order + self._others(view, k, order, allowed)
            placed = dry.place_first(k, prefs)
            if placed is not None:
                out[j] = placed
        if self.fill:
            self._fill(view, jobs, out, dry, allowed)
        return out

    def _others(self, view: SchedulerView, k: int, exclude, allowed=None) -> list[int]:
        """Job ``k``'s eligible candidates (``_eligible``) with positive throughput that are
        not in ``exclude``, fastest first (the agnostic policy: in random order, it does not
        know which type is faster)."""
        table = view.candidates[k]
        pool = self._eligible(view, k, allowed)
        thr = table.samples_per_s[pool]
        pool = pool[np.isfinite(thr) & (thr > 0)]      # a candidate that does no work
        if self.agnostic:
            pool = pool[self.rng.permutation(pool.size)]
        else:
            pool = pool[np.argsort(-table.samples_per_s[pool], kind="stable")]
        skip = set(exclude)
        return [int(c) for c in pool if int(c) not in skip]

    def _fill(self, view, jobs, out, dry: "_DryRun", allowed=None) -> None:
        """Work-conserving pass: waiting jobs, in priority order (then the rest), take a
        candidate that still fits on the free nodes (preferring the LP's support)."""
        order = [(j, k, rows) for _, _, _, j, k, rows in jobs if j not in out]
        listed = {j for j, _, _ in order} | set(out)
        order += [(int(j), k, []) for k, j in enumerate(view.job_ids) if int(j) not in listed]
        for j, k, support in order:
            placed = dry.place_first(k, list(support) + self._others(view, k, support, allowed))
            if placed is not None:
                out[j] = placed

    def _track_delivery(self, view: SchedulerView) -> None:
        """Account the round that just ended: what each job still active ran with (its
        ``current`` candidate's normalized throughput) against what the LP planned."""
        if self._last_t is None or not self._planned:
            return
        step = view.time_s - self._last_t
        if step <= 0:
            return
        for k, j in enumerate(view.job_ids):
            plan = self._planned.get(int(j))
            if plan is None:
                continue
            planned, norm, restarts = plan
            cur = int(view.current[k])
            got = float(view.candidates[k].samples_per_s[cur]) / norm if cur >= 0 else 0.0
            if int(view.restarts[k]) > restarts:      # it restarted: no progress meanwhile
                got *= max(step - view.restart_s, 0.0) / step
            self._planned_sum += planned * step
            self._delivered_sum += got * step

    def _record_plan(self, view: SchedulerView, norms: np.ndarray) -> None:
        self._planned = {}
        for k, j in enumerate(view.job_ids):
            got = self._x.get(int(j))
            if got is None:
                continue
            rows, x = got
            thr = view.candidates[k].samples_per_s[rows]
            self._planned[int(j)] = (float(np.sum(x * thr)) / norms[k], float(norms[k]),
                                     int(view.restarts[k]))


class _DryRun:
    """The round's placements tried on a copy of the cluster's nodes, in the rounding's
    priority order, so that the simulator (which places jobs keeping their candidate first,
    then the rest largest first) can carry them out.

    A job rerunning its current candidate re-takes the nodes it holds (as
    ``Simulator.place``). Any other choice is first tried without the nodes still held by
    running jobs not yet placed — they will keep them if their turn comes — and only if that
    fails on those nodes too; the running jobs whose nodes it takes are then **evicted**:
    they may not list their current candidate (the simulator would give them their old nodes
    back first), so a lower-priority running job never blocks a higher-priority one."""

    def __init__(self, view: SchedulerView) -> None:
        self.view = view
        self.nodes = NodeState(view.cluster)
        self.free = view.capacity.astype(np.int64).copy()
        self._held = {k: a for k, a in enumerate(view.current_nodes)
                      if a is not None and int(view.current[k]) >= 0}
        self._mask = np.zeros_like(self.nodes.free)       # GPUs held by pending running jobs
        for alloc in self._held.values():
            for v, g in alloc:
                self._mask[v] += g
        self._pending = set(self._held)
        self._evicted: set[int] = set()

    def _settle(self, k: int) -> None:
        if k in self._pending:
            self._pending.discard(k)
            for v, g in self._held[k]:
                self._mask[v] -= g

    def _place(self, table, r: int, masked: bool) -> bool:
        parts, tp = candidate_parts(table, r), int(table.tp[r])
        if not masked:
            before = self.nodes.free.copy()
            if self.nodes.place(parts, tp) is None:
                return False
            self._evict(before)
            return True
        hide = np.minimum(self._mask, self.nodes.free)
        self.nodes.free -= hide
        got = self.nodes.place(parts, tp)
        self.nodes.free += hide
        return got is not None

    def _evict(self, before: np.ndarray) -> None:
        """Pending running jobs whose held nodes the last placement took from."""
        taken = before - self.nodes.free
        for k in list(self._pending):
            if any(taken[v] and self.nodes.free[v] < g for v, g in self._held[k]):
                self._evicted.add(k)

    def place_first(self, k: int, prefs: list[int]) -> list[int] | None:
        """Take the first of ``prefs`` (rows of job ``k``) that fits; returns it followed by
        the job's other rows in ``prefs`` order (the simulator's fallbacks), or ``None``."""
        view = self.view
        cur = int(view.current[k])
        self._settle(k)
        if k in self._evicted:
            prefs = [r for r in prefs if r != cur]
        if not prefs:
            return None
        table = view.candidates[k]
        cand = np.asarray(prefs, dtype=np.int64)
        ok = np.flatnonzero(np.all(table.gpus[cand] <= self.free, axis=1))   # per-type test
        held = self._held.get(k)
        for masked in (True, False):
            for i in ok:
                r = int(cand[i])
                if r == cur and held is not None:
                    got = self.nodes.keep(held)
                else:
                    got = self._place(table, r, masked)
                if got:
                    self.free -= table.gpus[r]
                    return [r] + [int(c) for c in prefs if int(c) != r]
        return None


POLICY_NAMES = ("heterosched-lp", "heterosched-ilp", "lp-on-change", "topk", "topk-dominance",
                "gavel", "sia",
                "agnostic-lp", "pop-2", "pop-4", "pop-8", "heterosched-lp-las",
                "heterosched-lp-v0", "fifo",
                "fifo-fastest", "srf", "greedy", "random")


def make_policy(name: str, *, objective: str | None = None, backend: str = "highs",
                topk: int = 4, time_limit_s: float | None = None, **lp_options):
    """A policy by name (see ``POLICY_NAMES``); ``pop-K`` takes any K ≥ 2.

    Args:
        name: The policy.
        objective: The LP objective of the co-optimizer's policies (``heterosched-lp``,
            ``lp-on-change``, ``topk``, ``topk-dominance``, ``pop-K``); ``None``: the default
            (``DEFAULT_OBJECTIVE``). ``gavel``, ``agnostic-lp`` and ``heterosched-lp-v0`` are
            max-min by definition.
        backend, topk, time_limit_s: As in ``LPPolicy``.
        lp_options: Further ``LPPolicy`` keywords for those policies (``floor``,
            ``las_tau_s``, ``restart_aware``, ``size_cap``, ``normalizer``, ...).
    """
    from lp_baseline.baselines import BASELINES
    if name in BASELINES:
        return BASELINES[name]()
    if name == "sia":
        from lp_baseline.sia import SiaPolicy
        return SiaPolicy()
    if name == "heterosched-ilp":
        # Sia's ILP over every candidate of the planner with SRPT job weights: an integral
        # co-optimizer (lp_baseline/sia.py, docs/lp.md)
        from lp_baseline.sia import SiaPolicy
        # no scale-up limit: Sia creeps up (≤ 2× per round) because it learns a job's scaling
        # online; the planner prices every candidate up front
        return SiaPolicy(name=name, configurations="all", srpt_weight=0.5, scale_up_limit=False)
    objective = DEFAULT_OBJECTIVE if objective is None else objective
    common = dict(objective=objective, backend=backend, time_limit_s=time_limit_s, **lp_options)
    # Gavel's policies as Gavel defines them: max-min over the requested configurations,
    # normalized by X_equal
    gavel_like = dict(candidates="requested", normalizer="requested", size_cap=False,
                      backend=backend, time_limit_s=time_limit_s, objective="max-min")
    if name == "heterosched-lp":
        return LPPolicy(name, **common)
    if name == "lp-on-change":
        return LPPolicy(name, resolve="on-change", **common)
    if name == "topk":
        return LPPolicy(name, topk=topk, **common)
    if name == "topk-dominance":
        return LPPolicy(name, topk=topk, dominance=True, **common)
    if name == "gavel":
        return LPPolicy(name, **gavel_like)
    if name == "agnostic-lp":
        return LPPolicy(name, agnostic=True, **gavel_like)
    if name == "heterosched-lp-v0":
        # the co-optimizer before the fair-share / size-cap / JCT-stage work (issue 10):
        # max-min over every candidate with Gavel's normalizer, no size cap
        return LPPolicy(name, **dict(common, objective="max-min", normalizer="requested",
                                     size_cap=False))
    if name == "heterosched-lp-las":
        # the non-clairvoyant co-optimizer: never reads a job's remaining work
        return LPPolicy(name, **dict(common, objective="fair-las"))
    if name.startswith("pop-"):
        try:
            k = int(name[4:])
        except ValueError:
            k = 0
        if k >= 2:
            return LPPolicy(name, pop=k, **common)
    raise UnknownNameError("policy", name, list(POLICY_NAMES))
