"""Sia (Jayaram Subramanya et al., SOSP'23) as a baseline policy: ``sia``; and on its ILP, the
co-optimizing ILP ``heterosched-ilp`` (``configurations="all"``, ``srpt_weight=0.5``: every
candidate of the planner, job terms weighted toward jobs near their end; see the class).

Sia re-allocates every job each round with one small ILP over (job, configuration) pairs. Its
formulation is summarized in ``../shared/reference/scheduling_formulations.md``, section 2; this
module implements it as follows.

**Configurations.** A job's configurations are the rows of its candidate table flagged
``sia_config`` (with finite, positive throughput): plain data parallelism (tp = pp = 1) on one
GPU type, at Sia's sizes — powers of two within a node, whole nodes beyond, at most 64 GPUs
(``hsched_env.planner.sia_sizes``). A job constrained to a GPU type only has that type's rows.

**Goodput matrix.** ``G[i, c] = u(i) · thr[i, c] / thr[i, c_min(i)]``, with ``c_min(i)`` job
``i``'s slowest configuration (lowest throughput; on ties the fewest GPUs, then the first row)
and ``u(i)`` the *scale unit* of its GPU type: the fewest GPUs of a configuration on the same
type(s) — 1 for a job that fits on one GPU of that type. So each row's smallest entry is its
scale unit, and every configuration has ``G ≥ 1``: its cost ``G^p ≤ 1`` is below ``λ``, and
running a job anywhere it fits beats leaving it waiting, as in Sia (its simulator's
``sia.py`` scales each job's row by the lowest non-zero goodput and multiplies by the scale
unit of the GPU type that has it). Until session 61 ``sia`` took ``c_min`` as the
configuration with the fewest GPUs: a job that fits on one fast GPU but needs several slow
ones then had ``G < 1`` on the slow ones, ``G < 0.826`` cost more than waiting, and such
configurations were never chosen (GPT-2 XL on ``sia-64``: 4 × T4 at ``G`` 0.39, behind
1 × A100) — a weaker Sia than the published one (BENCHMARKS.md, "Session 61").

The co-optimizers (``heterosched-ilp`` here, ``configurations="all"``, and the LP
``heterosched-lp``, ``lp_baseline.job_terms``) keep the fewest-GPU normalization
(``normalization="smallest"``): a candidate much slower than the job's smallest one is worth
less than waiting for it. Measured against Sia's normalization on the quality benchmark,
``heterosched-lp`` schedules better with it: with Sia's, its avg JCT was +0.7% … +11.1% on
7 of the 9 gavel-llm cases, −1.8% on one and +0.0% on one; the other 18 cases were
unchanged (BENCHMARKS.md, "Session 61").

**Restart factor** (Pollux's, as Sia uses it). With ``T_i`` the job's age (now − arrival),
``N_i`` the restarts it has paid so far and ``S`` the restart cost,

    r_i = max(T_i − N_i·S, 0) / (T_i + S),     r_i = 1 while T_i < S,

multiplies ``G[i, c]`` of every configuration except the job's current one, for running jobs
only (``view.current >= 0``). A job that has restarted often (``r_i → 0``) thus keeps what it
runs.

**Scale-up limit** (``scale_up_limit=True``, Sia's behaviour: a job starts on one replica and
at most doubles its allocation each round). Counted in *replicas*, as Sia counts it: a
configuration's GPUs ÷ the scale unit of its GPU type (the fewest GPUs of the job's
configurations on that type, as in "Goodput matrix"). A job's allowed configurations have at
most ``max(1, 2 × r_i)`` replicas, with ``r_i`` the replicas of its current configuration, or
— for a job not running this round — of the configuration it ran with the last time it ran,
which the policy remembers itself (per job id, from ``view.current``; forgotten when the job
completes or at ``reset``). A job that never ran may use one replica: one GPU of every type
it fits on one GPU of (Sia's "start on 1 GPU"), and on a type where it needs more, that
type's smallest configuration. (Until session 61 the limit was in GPUs over every type: a job
that fits on one A100 but needs four T4s could start on the A100 only.)

**ILP** (binary ``A[i, c]`` over the allowed configurations):

    minimize   Σ_{i,c} A[i,c] · min(G[i,c]^p, clip)  +  λ · Σ_i (1 − Σ_c A[i,c])
    subject to Σ_c A[i,c] ≤ 1                              for every job i,
               Σ_{i,c} gpus[c, t] · A[i,c] ≤ capacity[t]   for every GPU type t,

with Sia's defaults ``p = −0.5`` (a negative power, so the sum is minimized), ``λ = 1.1`` (the
penalty of leaving a job without an allocation) and ``clip = 3000`` (``G = 0``, from a restart
factor of 0, costs ``clip``). Invalid (job, configuration) pairs are absent rather than
penalized. It is solved with ``scipy.optimize.milp`` (HiGHS) with a relative MIP gap
(``mip_gap``, 1e-4 as Sia's CBC) and an optional time limit (``time_limit_s``, none by default);
without a time limit the solve is deterministic (a wall-clock limit makes it depend on the
machine's load).

**Output.** For each job the ILP gives a configuration: that row first, then the job's other
configurations on the same GPU type with fewer GPUs, largest first, so that when node
fragmentation blocks the placement (the simulator places jobs on nodes; placement is separate
from allocation in Sia too) the job still runs on something smaller. Jobs without a
configuration are left out (they wait).

**Faults.** When the solver raises, returns no solution, ends with a status other than optimal
(or the time limit with a feasible incumbent), or returns an ``x`` that violates the
constraints, the round falls back to a greedy assignment — jobs in arrival order, each keeping
its current configuration if it still fits the free GPUs of its type, else taking its largest
allowed configuration that fits (the fastest among equal sizes). The fallback is counted
(``summary()["lp_fallbacks"]``, by kind in ``"lp_fallback_kinds"``), logged as a warning (the
1st, 10th, 100th, … of a run) and never raises.

**What differs from Sia.**

* No batch-size adaptation: our jobs have a fixed amount of work in samples and a fixed batch,
  so goodput = throughput (Sia's goodput = Pollux throughput × statistical efficiency).
* Throughputs are the simulation's (the planner's cost model or measured tables), not Sia's
  bootstrapped profiles; nothing is learned online.
* Placement is the simulator's (``Simulator.place_decision``), with the fallback rows above,
  not Sia's own placer; there is no pinning of jobs mid checkpoint-restore, non-preemptible
  jobs or reservations (none exist here).
* ``N_i`` is ``view.restarts`` (the simulator does not count a job's first start as a restart)
  and ``S`` one restart cost for all jobs (the simulation's ``restart_s``) instead of Sia's
  per-model values.
* Sia uses 60 s rounds; the round length here is the simulation's (``SimConfig.round_s``).
"""

from __future__ import annotations

import logging
import math
import time

import numpy as np
import scipy.sparse as sp

from hsched_env.errors import is_real_number
from hsched_env.policy import Assignment, PolicyStats, SchedulerView
from hsched_env.table_memo import TableMemo
from lp_baseline.job_terms import srpt_weights
from lp_baseline.rounding import smaller_on_same_type

log = logging.getLogger(__name__)

#: Sia's defaults (``sia-simulator``): goodput power, no-allocation penalty, clip of G^p.
SIA_P = -0.5
SIA_LAMBDA = 1.1
SIA_CLIP = 3000.0
#: Relative MIP gap (Sia's simulator runs CBC with a 1e-4 gap).
SIA_MIP_GAP = 1e-4
#: Default time limit of one ILP solve (seconds; ``None``: none, so results never depend on
#: the machine's load); on expiry a feasible incumbent is used, else the greedy fallback.
DEFAULT_TIME_LIMIT_S = None
#: Why a round fell back to the greedy assignment (``summary()["lp_fallback_kinds"]``).
FALLBACK_KINDS = ("exception", "no_solution", "status", "bad_solution")


# ---------------------------------------------------------------------------- pieces
def milp(*args, **kwargs):
    """``scipy.optimize.milp``, imported on the first ILP solve: scipy.optimize takes
    0.2–0.3 s to import, and the LP policies load this module for its goodput and cost
    terms alone. Its HiGHS build can print a debugging line to the process's standard output
    (``HighsMipSolverData::transformNewIntegerFeasibleSolution ...``) whatever its options
    say, which would corrupt ``hsched simulate --json`` and, on standard error, read as a
    fault: what the solve writes to file descriptor 1 goes to HiGHS' log
    (``backends.highs_output_to_log``; ``hsched -v`` shows it)."""
    from scipy.optimize import milp as scipy_milp

    from lp_baseline.backends import highs_output_to_log
    with highs_output_to_log():
        return scipy_milp(*args, **kwargs)


def sia_rows(table) -> np.ndarray:
    """Rows of ``table`` that are Sia configurations: flagged ``sia_config``, with finite,
    positive throughput (in row order)."""
    thr = np.asarray(table.samples_per_s, dtype=np.float64)
    with np.errstate(invalid="ignore"):
        ok = np.asarray(table.sia_config, dtype=bool) & np.isfinite(thr) & (thr > 0)
    return np.flatnonzero(ok)


def slowest_config(table, rows: np.ndarray) -> int:
    """The job's slowest configuration among ``rows``: lowest throughput, on ties the fewest
    GPUs (then the first row)."""
    n = table.gpus[rows].sum(axis=1)
    thr = table.samples_per_s[rows]
    return int(rows[np.lexsort((rows, n, thr))[0]])


def smallest_config(table, rows: np.ndarray) -> int:
    """The job's smallest configuration among ``rows``: fewest GPUs, on ties the slowest (then
    the first row)."""
    n = table.gpus[rows].sum(axis=1)
    thr = table.samples_per_s[rows]
    return int(rows[np.lexsort((rows, thr, n))[0]])


#: How ``goodput`` normalizes a job's row: ``"slowest"``, Sia's (the slowest configuration
#: at its type's scale unit: every ``G ≥ 1``); ``"smallest"``, the co-optimizers' (the
#: fewest-GPU configuration at its GPU count: slower ones may fall below 1).
NORMALIZATIONS = ("slowest", "smallest")


def goodput(table, rows: np.ndarray, normalization: str = "slowest") -> np.ndarray:
    """Normalized goodput of configurations ``rows`` (module docstring, "Goodput matrix").
    ``"slowest"`` (Sia's): throughput ÷ the throughput of the job's slowest configuration
    among them, × the scale unit of that configuration's GPU type(s) — the fewest GPUs of a
    row of ``rows`` on the same type(s) — so the smallest entry is that unit (1 for a job that
    fits on one GPU of that type) and every entry is at least 1. ``"smallest"`` (the
    co-optimizers'): throughput ÷ that of the job's fewest-GPU configuration, × its GPU
    count."""
    if normalization not in NORMALIZATIONS:
        raise ValueError(f"normalization must be one of {NORMALIZATIONS}, got "
                         f"{normalization!r}")
    if rows.size == 0:
        return np.zeros(0)
    if normalization == "smallest":
        small = smallest_config(table, rows)
        base = float(table.samples_per_s[small])
        unit = float(table.gpus[small].sum())
    else:
        slow = slowest_config(table, rows)
        unit = float(scale_units(table, rows, np.array([slow]))[0])
        base = float(table.samples_per_s[slow])
    return np.asarray(table.samples_per_s[rows], dtype=np.float64) / base * unit


def scale_units(table, rows: np.ndarray, which: np.ndarray) -> np.ndarray:
    """The scale unit of each configuration of ``which``: the fewest GPUs of a row of
    ``rows`` (the job's configurations) on the same GPU type(s); a configuration on types no
    row of ``rows`` has is its own unit (1 for one without GPUs)."""
    gpus = np.asarray(table.gpus)
    n = gpus[which].sum(axis=1).astype(np.float64)
    own = np.where(n > 0, n, 1.0)
    # a bit per GPU type of the cluster (the catalog's types: far fewer than 63)
    bits = np.left_shift(1, np.arange(gpus.shape[1], dtype=np.int64))
    codes = (gpus[rows] > 0).astype(np.int64) @ bits      # each row's set of GPU types
    n_rows = gpus[rows].sum(axis=1)
    order = np.lexsort((n_rows, codes))                    # by types, then fewest GPUs
    types, first = np.unique(codes[order], return_index=True)
    if types.size == 0:
        return own
    unit_of = n_rows[order][first]                         # each type set's fewest GPUs
    wanted = (gpus[which] > 0).astype(np.int64) @ bits
    at = np.minimum(np.searchsorted(types, wanted), types.size - 1)
    return np.where(types[at] == wanted, unit_of[at], own)


def replicas(table, rows: np.ndarray, which: np.ndarray) -> np.ndarray:
    """Replicas of configurations ``which``: their GPUs ÷ their scale unit
    (``scale_units``)."""
    return np.asarray(table.gpus)[which].sum(axis=1) / scale_units(table, rows, which)


def restart_factor(age_s: float, restarts: int, restart_s: float) -> float:
    """Pollux's restart factor ``max(T − N·S, 0) / (T + S)``, 1 while ``T < S``."""
    age_s, restart_s = float(age_s), float(restart_s)
    if age_s < restart_s or age_s + restart_s <= 0:
        return 1.0              # (also a job of age 0 with free restarts: 0 / 0 otherwise)
    return max(age_s - int(restarts) * restart_s, 0.0) / (age_s + restart_s)


def config_cost(g: np.ndarray, p: float = SIA_P, clip: float = SIA_CLIP) -> np.ndarray:
    """Per-configuration cost ``min(G^p, clip)`` (``G = 0`` costs ``clip``)."""
    g = np.asarray(g, dtype=np.float64)
    with np.errstate(divide="ignore", over="ignore", invalid="ignore"):
        c = np.where(g > 0, np.power(np.where(g > 0, g, 1.0), p), np.inf)
    return np.minimum(c, clip)


# ---------------------------------------------------------------------------- policy
class SiaPolicy:
    """Sia's ILP over per-job data-parallel configurations (see the module docstring).

    Args:
        p: Power applied to the normalized goodput (Sia: −0.5; the objective is minimized).
        lam: λ, the cost of leaving a job without an allocation (Sia: 1.1).
        restart_s: Restart cost ``S`` of the restart factor; ``None``: the simulation's
            (``view.restart_s``).
        scale_up_limit: Sia's scale-up rule, counted in replicas of each GPU type's scale
            unit (module docstring) — a job starts on one replica (one GPU of a type it fits
            on one GPU of, else that type's smallest configuration) and its replicas at most
            double from the configuration it runs (or last ran) to the next. ``False``: every
            configuration is allowed.
        time_limit_s: Time limit of one ILP solve (``None``: none). On expiry the incumbent is
            used if it is feasible, else the greedy fallback.
        mip_gap: Relative MIP gap of the solve (Sia's simulator: 1e-4).
        clip: Upper clip of ``G^p`` (Sia: 3000).
        name: Name shown in results.
        configurations: ``"sia"`` (default): the job's ``sia_config`` rows, Sia's search space;
            ``"all"``: every candidate of the job with positive throughput (the planner's
            strategies: tensor / pipeline parallelism, ZeRO, mixed types) — the co-optimizing
            ILP ``heterosched-ilp``.
        srpt_weight: ``None`` (Sia): every job weighs the same. A number ``α``: job ``i``'s
            terms are weighted by ``w_i = clip((median_k R_k / R_i)^α, 0.1, 10)``, ``R`` the
            remaining time on the requested configuration (remaining work ÷ reference
            throughput, clairvoyant like ``fair-srpt``): its cost becomes ``w_i·cost +
            (1 − w_i)·λ``, so both being allocated and speeding up count ``w_i`` times as
            much for a job near its end.
    """

    name = "sia"

    def __init__(self, *, p: float = SIA_P, lam: float = SIA_LAMBDA,
                 restart_s: float | None = None, scale_up_limit: bool = True,
                 time_limit_s: float | None = DEFAULT_TIME_LIMIT_S,
                 mip_gap: float = SIA_MIP_GAP, clip: float = SIA_CLIP,
                 name: str = "sia", configurations: str = "sia",
                 srpt_weight: float | None = None) -> None:
        if configurations not in ("sia", "all"):
            raise ValueError(f"configurations must be 'sia' or 'all', got {configurations!r}")
        if srpt_weight is not None and not (math.isfinite(srpt_weight) and srpt_weight >= 0):
            raise ValueError(f"srpt_weight must be None or a number >= 0, got {srpt_weight!r}")
        if restart_s is not None and not (restart_s >= 0 and math.isfinite(restart_s)):
            raise ValueError(f"restart_s must be a finite number >= 0, got {restart_s!r}")
        if time_limit_s is not None and not time_limit_s > 0:
            raise ValueError(f"time_limit_s must be > 0, got {time_limit_s!r}")
        if not mip_gap >= 0:
            raise ValueError(f"mip_gap must be >= 0, got {mip_gap!r}")
        # λ is what leaving a job without GPUs costs: at 0 or below every job waits and the
        # cluster idles while the ILP "succeeds"; a NaN p makes every solve fail
        for what, value in (("p", p), ("lam", lam), ("clip", clip)):
            if not (is_real_number(value) and math.isfinite(value)):
                raise ValueError(f"{what} must be a finite number, got {value!r}")
        if not (lam > 0 and clip > 0):
            raise ValueError(f"lam and clip must be > 0 (the cost of leaving a job without an "
                             f"allocation, and the cap of a configuration's cost), got "
                             f"lam={lam!r}, clip={clip!r}")
        self.name = name
        self.p, self.lam, self.clip = float(p), float(lam), float(clip)
        self.restart_s = restart_s
        self.scale_up_limit = bool(scale_up_limit)
        self.time_limit_s, self.mip_gap = time_limit_s, float(mip_gap)
        self.configurations, self.srpt_weight = configurations, srpt_weight
        # Sia's own for Sia's search space; the co-optimizers' for every candidate (module
        # docstring, "Goodput matrix")
        self.normalization = "slowest" if configurations == "sia" else "smallest"
        self._tables = TableMemo()     # per candidate table: its rows, goodputs, replicas
        self.last_stats = PolicyStats()
        self.reset(None, None)

    # ------------------------------------------------------------------ state
    def reset(self, cluster, seed) -> None:
        """Forget the per-job history and the counters (the policy has no randomness)."""
        self._last_replicas: dict[int, float] = {}   # job id -> replicas it ran with last
        self._solves = 0
        self._fallbacks = 0
        self._fallback_kinds: dict[str, int] = {}
        self._time_limits = 0

    def summary(self) -> dict:
        """Counters of the run: ``lp_solves`` (ILPs handed to the solver), ``lp_fallbacks``
        (rounds that used the greedy fallback), ``lp_fallback_kinds`` (those by kind) and
        ``lp_time_limits`` (solves that hit the time limit)."""
        return {"lp_solves": self._solves, "lp_fallbacks": self._fallbacks,
                "lp_fallback_kinds": dict(sorted(self._fallback_kinds.items())),
                "lp_time_limits": self._time_limits}

    # ------------------------------------------------------------------ problem
    def replica_limit(self, view: SchedulerView, k: int, rows: np.ndarray) -> float:
        """Most replicas active job ``k`` may get this round (``inf`` without the scale-up
        limit; module docstring, "Scale-up limit"); ``rows`` are its configurations."""
        if not self.scale_up_limit or rows.size == 0:
            return math.inf
        cur = int(view.current[k])
        if cur >= 0:
            last = self._replicas_of(view.candidates[k], cur)
        else:
            last = self._last_replicas.get(int(view.job_ids[k]), 0.0)
        return max(1.0, 2.0 * last) if last > 0 else 1.0

    def _table_terms(self, table) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """``(rows, G, replicas)`` of a candidate table: its configurations, their goodput
        and their replicas — fixed by the table, so computed once per table (they were
        computed again for every job at every decision)."""
        def make():
            rows = self._rows(table)
            g = goodput(table, rows, self.normalization)
            reps = replicas(table, rows, rows) if rows.size else np.zeros(0)
            for a in (rows, g, reps):
                a.flags.writeable = False
            return rows, g, reps
        return self._tables.get_for(table, (id(table), "terms"), make)

    def _replicas_of(self, table, row: int) -> float:
        """The replicas of ``row`` of ``table`` (``replicas``; a row outside the job's
        configurations is its own unit)."""
        rows, _, reps = self._table_terms(table)
        at = np.flatnonzero(rows == row)
        return float(reps[at[0]] if at.size else replicas(table, rows, np.array([row]))[0])

    def problem(self, view: SchedulerView) -> list[tuple[np.ndarray, np.ndarray]]:
        """Per active job, ``(rows, cost)``: its allowed configurations and their ILP cost
        ``min((r·G)^p, clip)`` (restart factor ``r`` on all but the current configuration)."""
        S = view.restart_s if self.restart_s is None else self.restart_s
        restarts = view.restarts
        out = []
        for k in range(view.num_active):
            table = view.candidates[k]
            rows, g, reps = self._table_terms(table)
            if rows.size == 0:
                out.append((rows, np.zeros(0)))
                continue
            cur = int(view.current[k])
            if cur >= 0:
                r = restart_factor(view.time_s - view.arrival_s[k], int(restarts[k]), S)
                g = np.where(rows == cur, g, g * r)
            if self.scale_up_limit:
                keep = reps <= self.replica_limit(view, k, rows)
                rows, g = rows[keep], g[keep]
            out.append((rows, config_cost(g, self.p, self.clip)))
        if self.srpt_weight is not None and out:
            w = self.job_weights(view)
            out = [(rows, w[k] * cost + (1.0 - w[k]) * self.lam)
                   for k, (rows, cost) in enumerate(out)]
        return out

    def _rows(self, table) -> np.ndarray:
        """The job's configurations (``configurations``)."""
        if self.configurations == "sia":
            return sia_rows(table)
        thr = np.asarray(table.samples_per_s, dtype=np.float64)
        with np.errstate(invalid="ignore"):
            return np.flatnonzero(np.isfinite(thr) & (thr > 0))

    def job_weights(self, view: SchedulerView) -> np.ndarray:
        """(A,) the SRPT job weights ``clip((median R / R_i)^α, 0.1, 10)`` (``srpt_weight``)."""
        return srpt_weights(view, np.arange(view.num_active), float(self.srpt_weight))

    def objective(self, problem, choice: dict[int, int]) -> float:
        """Sia's objective of ``choice`` (``{active index: row}``) on ``problem``: chosen
        configurations' costs plus λ per job of the problem (one with a configuration)
        left without one."""
        value = 0.0
        for k, (rows, cost) in enumerate(problem):
            if rows.size == 0:
                continue
            r = choice.get(k)
            if r is None:
                value += self.lam
            else:
                value += float(cost[int(np.flatnonzero(rows == r)[0])])
        return value

    # ------------------------------------------------------------------ decide
    def decide(self, view: SchedulerView) -> Assignment:
        t0 = time.perf_counter()
        for j in view.completed:
            self._last_replicas.pop(int(j), None)
        stats = PolicyStats()
        prob = self.problem(view)
        # Remember what running jobs run (after ``problem``, which reads it from the view).
        for k, j in enumerate(view.job_ids if self.scale_up_limit else ()):
            cur = int(view.current[k])
            if cur >= 0:
                self._last_replicas[int(j)] = self._replicas_of(view.candidates[k], cur)
        ks = [k for k, (rows, _) in enumerate(prob) if rows.size]
        choice: dict[int, int] = {}
        if ks:
            choice = self._solve(view, prob, ks, stats, t0)
        stats.extra["objective"] = self.objective(prob, choice)
        out: Assignment = {}
        for k in sorted(choice):
            out[int(view.job_ids[k])] = self._with_fallbacks(view.candidates[k], choice[k])
        stats.extra["decide_s"] = time.perf_counter() - t0
        self.last_stats = stats
        return out

    def _solve(self, view, prob, ks, stats, t0) -> dict[int, int]:
        """The ILP's choice ``{active index: row}``, or the greedy fallback's."""
        from scipy.optimize import Bounds, LinearConstraint    # see ``milp``
        sizes = np.array([prob[k][0].size for k in ks], dtype=np.int64)
        n = int(sizes.sum())
        T = int(view.capacity.size)
        job_of = np.repeat(np.arange(len(ks)), sizes)
        rows = np.concatenate([prob[k][0] for k in ks])
        cost = np.concatenate([prob[k][1] for k in ks])
        gpus = np.concatenate([view.candidates[k].gpus[prob[k][0]] for k in ks]).astype(float)
        c = cost - self.lam                 # the constant λ·(jobs) is left out
        one = sp.csr_matrix((np.ones(n), (job_of, np.arange(n))), shape=(len(ks), n))
        typ = sp.csr_matrix(gpus.T)
        A = sp.vstack([one, typ], format="csr")
        ub = np.r_[np.ones(len(ks)), view.capacity.astype(float)]
        cons = LinearConstraint(A, -np.inf, ub)
        options = {"disp": False, "presolve": True, "mip_rel_gap": self.mip_gap}
        if self.time_limit_s is not None:
            options["time_limit"] = float(self.time_limit_s)
        stats.lp_vars, stats.lp_cons = n, len(ks) + T
        t1 = time.perf_counter()
        stats.build_s = t1 - t0
        self._solves += 1
        kind, detail, x = None, "", None
        try:
            res = milp(c, constraints=cons, integrality=np.ones(n), bounds=Bounds(0, 1),
                       options=options)
        except Exception as exc:              # noqa: BLE001 - any solver crash: fall back
            kind, detail = "exception", f"{type(exc).__name__}: {exc}"
        else:
            stats.extra["lp_status"] = int(res.status)
            if res.status == 1:
                self._time_limits += 1
            if res.status not in (0, 1):
                kind, detail = "status", f"milp status {res.status}: {res.message}"
            elif res.x is None:
                kind, detail = "no_solution", f"milp status {res.status}: {res.message}"
            else:
                x = np.asarray(res.x, dtype=np.float64)
                if x.shape != (n,) or not np.all(np.isfinite(x)):
                    kind, detail, x = "bad_solution", f"x has shape {x.shape}", None
        stats.solve_s = time.perf_counter() - t1
        if x is not None:
            pick = x > 0.5
            per_job = np.bincount(job_of[pick], minlength=len(ks))
            used = gpus[pick].sum(axis=0)
            if np.any(per_job > 1) or np.any(used > view.capacity + 1e-9):
                kind, detail = "bad_solution", "x violates the ILP's constraints"
            else:
                return {ks[int(job_of[i])]: int(rows[i]) for i in np.flatnonzero(pick)}
        self._fall_back(kind, detail)
        stats.extra["fallback"] = kind
        return self._greedy(view, prob, ks)

    def _fall_back(self, kind: str, detail: str) -> None:
        """Count a fallback; warn on the 1st, 10th, 100th, ... of the run."""
        self._fallbacks += 1
        self._fallback_kinds[kind] = self._fallback_kinds.get(kind, 0) + 1
        level = logging.WARNING if str(self._fallbacks).rstrip("0") == "1" else logging.DEBUG
        log.log(level, "%s: ILP fallback (%s, %d in all): %s; using the greedy assignment",
                self.name, kind, self._fallbacks, detail)

    @staticmethod
    def _greedy(view, prob, ks) -> dict[int, int]:
        """Jobs in arrival order: the current configuration if it still fits the free GPUs
        of its type, else the largest allowed configuration that fits (fastest on ties)."""
        free = view.capacity.astype(np.int64).copy()
        order = sorted(ks, key=lambda k: (float(view.arrival_s[k]), int(view.job_ids[k])))
        out = {}
        for k in order:
            table = view.candidates[k]
            rows = prob[k][0]
            fits = rows[np.all(table.gpus[rows] <= free, axis=1)]
            if fits.size == 0:
                continue
            cur = int(view.current[k])
            if cur in fits:
                r = cur
            else:
                n = table.gpus[fits].sum(axis=1)
                r = int(fits[np.lexsort((fits, -table.samples_per_s[fits], -n))[0]])
            out[k] = r
            free -= table.gpus[r]
        return out

    def _with_fallbacks(self, table, row: int) -> list[int]:
        """``row`` then the job's other one-type configurations on its type with fewer GPUs,
        largest first (then fastest)."""
        return smaller_on_same_type(table, self._rows(table), row)
