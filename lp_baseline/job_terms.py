"""Per-job terms of the allocation problem that ``LPPolicy`` computes from a ``SchedulerView``.

* the normalizer ``norm_j`` (``job_normalizer``): ``"fair-share"``, the job's throughput on its
  fair share; ``"requested"``, Gavel's ``X_equal``;
* the finish-time-fairness denominator ``D_j`` (``ftf_denominator``);
* the second stage of ``fair-srpt`` / ``fair-las`` (``stage2_terms``): each job's priority and
  each candidate's restart discount ``switch``; of ``sia-srpt`` / ``sia-las``: each candidate's
  ``gain`` (``sia_gain``, with the job weights ``srpt_weights`` / ``las_weights``).
"""

from __future__ import annotations

import math

import numpy as np

from hsched_env.policy import SchedulerView
from hsched_env.table_memo import TableMemo
from lp_baseline.problem import FLOOR_OBJECTIVES, SIA_OBJECTIVES

#: Normalizers of a job's throughput (``LPPolicy(normalizer=)``).
NORMALIZERS = ("fair-share", "requested")
#: ``fair-las``: the first attained-service class boundary (seconds of the requested config).
DEFAULT_LAS_TAU_S = 1800.0
#: ``sia-srpt``: exponent α of the SRPT job weights (as ``heterosched-ilp``'s).
SIA_SRPT_ALPHA = 0.5
#: ``sia-srpt``: the largest SRPT job weight of an unguarded job, and the least of a guarded
#: one (``srpt_weights``, ``guard_weights``).
SRPT_WEIGHT_MAX = 10.0


def is_whole_table(rows, n: int) -> bool:
    """Whether ``rows`` — a job's candidate rows, ascending and unique, as ``LPPolicy`` gives
    them — are every row of its ``n``-row table, so that indexing a per-row array with them
    gives the array itself (a copy of it): a fancy index a caller can skip."""
    return len(rows) == n and (n == 0 or (rows[0] == 0 and rows[n - 1] == n - 1))


def take_rows(values, rows):
    """``values[rows]`` for a job's candidate rows (ascending and unique), or ``values``
    itself when they are every row (``is_whole_table``): the same values, no copy."""
    if is_whole_table(rows, len(values)):
        return values
    return values[np.asarray(rows, dtype=np.int64)]


def job_normalizer(view: SchedulerView, k: int, normalizer: str) -> float:
    """Active job ``k``'s normalizer of kind ``normalizer`` (one of ``NORMALIZERS``, see
    ``LPPolicy``); the job's reference throughput where that is not > 0."""
    table = view.candidates[k]
    if normalizer == "requested":
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


def job_normalizers(view: SchedulerView, normalizer: str) -> np.ndarray:
    """(A,) each active job's normalizer (``normalizer``), > 0 where the data allow."""
    return np.array([job_normalizer(view, k, normalizer) for k in range(view.num_active)])


class NormalizerMemo:
    """``job_normalizers`` that recomputes a job's normalizer only when what it depends on
    changed since the previous call: its candidate table (the same object), the cluster's
    capacity, its reference throughput and, for ``"fair-share"``, its fair share
    ``min(requested, G / N)`` (which moves with the number of active jobs). The values are
    those of ``job_normalizer`` bit for bit; only the previous call's entries are kept."""

    def __init__(self) -> None:
        self._memo: dict = {}

    def __deepcopy__(self, memo) -> "NormalizerMemo":
        # a cache: a copy starts empty instead of copying every job's candidate table
        # (RankEnv.reference_action deep-copies the policy each round)
        return NormalizerMemo()

    def __getstate__(self) -> dict:
        return {"_memo": {}}

    def __call__(self, view: SchedulerView, normalizer: str) -> np.ndarray:
        A = view.num_active
        out = np.empty(A)
        memo, kept = self._memo, {}
        capacity = view.capacity.tobytes()
        total = float(view.capacity.sum()) / max(A, 1)
        for k in range(A):
            table = view.candidates[k]
            fair = (min(float(view.requested_gpus[k]), total) if normalizer == "fair-share"
                    else None)
            key = (id(table), normalizer, capacity, fair, float(view.reference_samples_per_s[k]))
            hit = memo.get(key) or kept.get(key)
            if hit is None or hit[0] is not table:      # (the table pins its id while kept)
                hit = (table, job_normalizer(view, k, normalizer))
            kept[key] = hit
            out[k] = hit[1]
        self._memo = kept
        return out


def ftf_denominator(view: SchedulerView, ks) -> np.ndarray:
    """Finish-time-fairness reference ``D_j``: the job's time on its fair share — its requested
    reference GPUs, stretched by the contention ``max(1, N × requested_j ÷ G)`` (``N`` active
    jobs, ``G`` GPUs), as the reported metric's ρ takes it (``hsched_env.metrics``) — from
    arrival. (Until session 44 the stretch used the mean request of the active jobs for every
    job, so the objective optimized another ρ than the one reported.)"""
    total = view.work_samples[ks] / view.reference_samples_per_s[ks]
    requested = np.asarray(view.requested_gpus, dtype=np.float64)[ks]
    contention = np.maximum(view.num_active * requested / max(view.capacity.sum(), 1), 1.0)
    return total * contention


def stage2_terms(view: SchedulerView, ks: np.ndarray, rows: list, norms: np.ndarray, *,
                 objective: str, las_tau_s: float, restart_aware: bool,
                 gain_cache: dict | None = None, table_cache: TableMemo | None = None,
                 ftf_guard: float | None = None, guarded: np.ndarray | None = None,
                 projected: np.ndarray | None = None, round_restart: bool = False):
    """``(priority, switch, gain)`` of the jobs ``ks`` (and their candidate ``rows``, in that
    order) for the second stage of ``fair-srpt`` / ``fair-las`` / ``sia-srpt``; ``(None,
    None, None)`` for the other objectives. ``gain`` is set only for ``sia-srpt`` /
    ``sia-las`` (``sia_gain``), ``priority`` and ``switch`` only for ``fair-*``.

    ``fair-srpt``: ``norm / remaining`` (the stage then maximizes ``Σ_j thr_j /
    remaining_j``, SRPT-like). ``fair-las``: discretized least attained service — class
    ``c = ⌊log2(1 + a / las_tau_s)⌋`` of the attained service ``a`` (samples done ÷ the
    job's reference throughput, in seconds) weighs ``2^-c``, older jobs up to 10% more
    within a class; it reads only ``done_samples``, never the remaining work, as a
    non-clairvoyant scheduler would. ``switch`` (``restart_aware``): 1 for a running job's current
    candidate and for a job that never ran; ``H / (H + restart_s)`` for every other
    choice (it costs a restart), ``H`` the job's remaining time on that candidate —
    remaining work ÷ throughput for ``fair-srpt``, the LAS estimate ``norm × (attained +
    las_tau_s)`` ÷ throughput for ``fair-las`` (which never reads the remaining work).
    ``ftf_guard``, ``guarded``: ``sia-srpt``'s starvation guard and the jobs it has latched
    (``srpt_weights``), ``projected`` the jobs' ``projected_ftf`` when the caller has it.
    ``round_restart``: ``sia-*`` only, ``sia_gain``'s."""
    if objective not in FLOOR_OBJECTIVES:
        return None, None, None
    ks = np.asarray(ks, dtype=np.int64)
    if objective in SIA_OBJECTIVES:
        if gain_cache is not None and all(k in gain_cache for k in ks.tolist()):
            w = None                    # every job's gains are known: no weight is read
        else:
            w = (srpt_weights(view, ks, ftf_guard=ftf_guard, guarded=guarded,
                              projected=projected)
                 if objective == "sia-srpt"
                 else las_weights(view, ks, las_tau_s))
        return None, None, sia_gain(view, ks, rows, w, restart_aware=restart_aware,
                                    cache=gain_cache, table_cache=table_cache,
                                    round_restart=round_restart)
    rem = view.remaining_samples[ks]
    norm = norms[ks]
    if objective == "fair-srpt":
        priority = norm / np.maximum(rem, 1e-9)
    else:
        # discretized LAS (Tiresias' idea): attained service in seconds of the job's
        # requested configuration, in geometric classes [0, tau), [tau, 3 tau),
        # [3 tau, 7 tau), ...; class c weighs 2^-c; within a class the older job weighs
        # up to 10% more (FIFO), so priorities are stable between class boundaries
        done = view.done_samples[ks]
        attained = done / view.reference_samples_per_s[ks]
        cls = np.floor(np.log2(1.0 + attained / las_tau_s))
        age = view.time_s - view.arrival_s[ks]
        oldest = float(age.max()) if age.size and age.max() > 0 else 1.0
        priority = 2.0 ** -cls * (1.0 + 0.1 * age / oldest)
    switch = None
    if restart_aware and view.restart_s > 0:
        # remaining work as the objective may know it: the true remaining (fair-srpt) or
        # the LAS estimate, attained + tau fair-share seconds (fair-las)
        if objective == "fair-srpt":
            est = rem
        else:   # the class's upper boundary, in samples
            est = (2.0 ** (cls + 1) - 1.0) * las_tau_s * view.reference_samples_per_s[ks]
            est = np.maximum(est - done, 0.5 * las_tau_s
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
    return priority, switch, None


def _median(x: np.ndarray) -> float:
    """``float(np.median(x))`` of a non-empty 1-D float array, the same value (the mean of
    the two middle values is ``(a + b) / 2`` there too; a zero median may differ in sign)
    without ``np.median``'s overhead."""
    s = np.sort(x)
    n = s.size
    if math.isnan(s[-1]):                       # NaNs sort last; np.median returns NaN
        return math.nan
    if n % 2:
        return float(s[n // 2])
    return float((s[n // 2 - 1] + s[n // 2]) / 2.0)


def srpt_weights(view: SchedulerView, ks: np.ndarray, alpha: float = SIA_SRPT_ALPHA,
                 ftf_guard: float | None = None,
                 guarded: np.ndarray | None = None,
                 projected: np.ndarray | None = None) -> np.ndarray:
    """(len(ks),) SRPT job weights ``clip((median R / R_j)^α, 0.1, 10)``, ``R`` a job's
    remaining time on its requested configuration (remaining work ÷ reference throughput),
    the median over every active job of the view (so POP parts share one scale).

    ``ftf_guard`` ρ_max (a starvation guard): a job whose ``projected_ftf`` ρ̂ is above it
    weighs ``10 · ρ̂ / ρ_max`` (``guard_weights``) whatever its remaining time: above every
    unguarded job, and the most starved guarded job first. ``guarded`` ((len(ks),) bools):
    jobs guarded anyway, at ``10 · max(1, ρ̂ / ρ_max)`` (10 without ``ftf_guard``) —
    ``LPPolicy(ftf_guard=)`` passes the jobs it has seen above the guard in any earlier
    decision, so a job keeps its place once it has earned it. ``projected``: the jobs'
    ``projected_ftf`` when the caller has it already (``guard_weights``)."""
    rem = view.remaining_samples / view.reference_samples_per_s
    if rem.size == 0:
        return np.zeros(0)
    med = _median(rem)
    w = np.clip((med / np.maximum(rem[ks], 1.0)) ** float(alpha), 0.1, SRPT_WEIGHT_MAX)
    if ftf_guard is None and guarded is None:
        return w
    if ftf_guard is None:
        return np.where(guarded, SRPT_WEIGHT_MAX, w)
    top, over = guard_weights(view, ks, ftf_guard, projected)
    if guarded is not None:
        over = over | guarded
    return np.where(over, top, w)


def guard_weights(view: SchedulerView, ks, ftf_guard: float,
                  projected: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
    """``(weight, over)``, each (len(ks),): the SRPT weight the starvation guard ρ_max gives
    each job, ``10 · max(1, ρ̂ / ρ_max)`` (ρ̂ its ``projected_ftf``), and whether ρ̂ is above
    ρ_max. The weight grows with ρ̂ so that the guarded jobs are served most starved first
    (session 47: with one flat top weight they competed with the shortest unguarded jobs
    and among themselves by goodput alone; BENCHMARKS.md "Schedule quality"). ``projected``:
    ``projected_ftf(view, ks)`` when the caller has it already."""
    proj = projected_ftf(view, ks) if projected is None else projected
    # a degenerate job (no work: ρ̂ infinite or NaN) weighs the top weight, not inf or NaN,
    # which would take it out of the rounding
    ratio = np.where(np.isfinite(proj), proj / float(ftf_guard), 1.0)
    return SRPT_WEIGHT_MAX * np.maximum(1.0, ratio), proj > ftf_guard


def projected_ftf(view: SchedulerView, ks) -> np.ndarray:
    """(len(ks),) each job's finish-time fairness ρ if it ran from now to its end on its
    requested configuration: ``(age + remaining time) ÷ ftf_denominator`` — its time in the
    system so far plus what is left, over its time on a fair share (the reported ρ's
    denominator with the current contention). While the job waits it grows with its age
    (and falls when arrivals shrink its fair share)."""
    ks = np.asarray(ks, dtype=np.int64)
    age = view.time_s - view.arrival_s[ks]
    left = view.remaining_samples[ks] / view.reference_samples_per_s[ks]
    return (age + left) / ftf_denominator(view, ks)


def las_weights(view: SchedulerView, ks: np.ndarray, las_tau_s: float,
                alpha: float = SIA_SRPT_ALPHA) -> np.ndarray:
    """(len(ks),) the non-clairvoyant job weights of ``sia-las``: ``srpt_weights`` with the
    remaining time replaced by the attained service's class boundary ``(2^(c+1) − 1)·τ``
    (``c = ⌊log2(1 + a / τ)⌋``, ``a`` the attained service in seconds of the requested
    configuration, as ``fair-las``): least attained service first, stable within a class;
    it never reads the remaining work."""
    attained = view.done_samples / view.reference_samples_per_s
    if attained.size == 0:
        return np.zeros(0)
    cls = np.floor(np.log2(1.0 + attained / las_tau_s))
    est = (2.0 ** (cls + 1) - 1.0) * las_tau_s
    med = _median(est)
    return np.clip((med / est[ks]) ** float(alpha), 0.1, 10.0)


def sia_gain(view: SchedulerView, ks: np.ndarray, rows: list, w: np.ndarray, *,
             restart_aware: bool = True, cache: dict | None = None,
             table_cache: TableMemo | None = None, round_restart: bool = False) -> np.ndarray:
    """(Σ len(rows),) ``sia-srpt``'s second-stage coefficient of each candidate: the gain of
    running job ``j`` on candidate ``c`` over leaving it waiting in Sia's objective,
    ``w_j · (λ − min(G_jc^p, clip))`` (``lp_baseline.sia``: ``G`` the goodput normalized by
    the job's smallest candidate, p = −0.5, λ = 1.1), ``w`` the job weights (``srpt_weights``
    or ``las_weights``), aligned with ``ks`` (``None`` when ``cache`` holds every job);
    ``rows``: each job's candidate rows, ascending and unique (as ``LPPolicy`` gives them).
    With ``restart_aware``, Sia's restart factor multiplies ``G`` of a running job's other
    candidates. With ``round_restart`` too, every candidate that costs a restart — a running
    job's other candidates, and any candidate of a job that has run before and is not
    running — delivers ``(round_s − restart_s) / round_s`` of its goodput in this round (the
    simulator charges the restart in the round it happens), and ``G`` is multiplied by that
    as well: the LP, solved round by round, weighs a switch by what it delivers in the round
    it decides.

    A job's gains do not depend on which of its rows are asked for (the weights are scaled by
    the median over every active job, ``G`` by the job's smallest valid candidate), so
    ``cache`` (a dict, for one view, one weighting, one ``restart_aware`` and one
    ``round_restart``; the LP policy
    keeps one per decision) holds each job's gains over its whole table, by active index,
    and later calls only index them: the LP's build and the rounding's values ask for the
    same jobs in one decision. Each gain is computed element by element as without it.
    ``table_cache`` keeps each table's goodputs across decisions (``table_goodput``)."""
    from lp_baseline.sia import SIA_LAMBDA, config_cost, restart_factor
    ks = [int(k) for k in ks]
    if len(set(ks)) != len(ks):
        raise ValueError("sia_gain: ks must list each active job once")
    got = {} if cache is None else cache
    todo = [i for i, k in enumerate(ks) if k not in got]
    if todo:
        # the jobs not in the cache, in one vectorized pass over their whole tables: G times
        # each row's restart factor (1 for a running job's current row and for a job that
        # is not running), then the cost, elementwise as one job at a time
        gs, job_factor, current_row = [], [], []   # per job: G, its factor, its running row
        tables, current = view.candidates, view.current.tolist()
        arrival, restarts = view.arrival_s.tolist(), view.restarts.tolist()
        # what a candidate that costs a restart delivers of this round (round_restart)
        this_round = (max(view.round_s - view.restart_s, 0.0) / view.round_s
                      if restart_aware and round_restart and view.round_s > 0 else 1.0)
        # (a job has started iff it has run: every round it runs adds to attained_s)
        started = (view.attained_s > 0).tolist() if this_round != 1.0 else None
        for i in todo:
            k = ks[i]
            gs.append(table_goodput(tables[k], table_cache))
            cur = current[k]
            if restart_aware and cur >= 0:
                job_factor.append(this_round * restart_factor(
                    view.time_s - arrival[k], restarts[k], view.restart_s))
                current_row.append(cur)
            else:
                # a job that ran before pays a restart on any candidate; a first start, none
                job_factor.append(this_round if started is not None and started[k] else 1.0)
                current_row.append(-1)
        sizes = [g.size for g in gs]
        # each job's factor on every row, 1 on a running job's current row
        factor = np.repeat(np.asarray(job_factor, dtype=np.float64), sizes)
        cur_at = np.asarray(current_row, dtype=np.int64)
        running = cur_at >= 0
        if np.any(cur_at[running] >= np.asarray(sizes, dtype=np.int64)[running]):
            raise IndexError("sia_gain: a running job's current row is past its table's end")
        factor[(np.cumsum(sizes) - sizes)[running] + cur_at[running]] = 1.0
        cost = SIA_LAMBDA - config_cost(np.concatenate(gs) * factor)
        full = np.repeat(np.asarray(w, dtype=np.float64)[todo], sizes) * cost
        end = 0
        for i, size in zip(todo, sizes):
            got[ks[i]] = full[end:end + size]
            end += size
    # a job asked for with every row of its table takes its gains whole (the same values)
    parts = [take_rows(got[k], r) for k, r in zip(ks, rows)]
    return np.concatenate(parts) if parts else np.zeros(0)


def table_goodput(table, table_cache: TableMemo | None = None) -> np.ndarray:
    """``G`` over every row of ``table``: the normalized goodput (``lp_baseline.sia.goodput``
    with the co-optimizers' ``"smallest"`` normalization, over the rows with finite, positive
    throughput; 0 on the others). Fixed by the table, so ``table_cache`` (a ``TableMemo``)
    keeps it across decisions."""
    from lp_baseline.sia import goodput

    def make():
        thr = np.asarray(table.samples_per_s, dtype=np.float64)
        with np.errstate(invalid="ignore"):
            valid = np.flatnonzero(np.isfinite(thr) & (thr > 0))
        g = np.zeros(len(table))
        g[valid] = goodput(table, valid, "smallest")
        g.flags.writeable = False                 # shared across decisions
        return g
    if table_cache is None:
        return make()
    return table_cache.get_for(table, (id(table), "goodput"), make)
