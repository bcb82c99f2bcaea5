"""Rounding the LP's fractional allocation into one round's assignment (``LPPolicy``).

``round_allocation`` is the Gavel-style rounding at the job level described in
``lp_baseline.policy``: jobs in priority order (LP share ÷ share received since the last reset,
then the accumulated deficit), each with its preference list — its LP candidates (the current
one first when ``sticky``, then the most under-served), then its other candidates — tried on
``PlacementDryRun``, a dry run of the simulator's placement on a copy of the cluster's nodes;
then (``fill``) a work-conserving pass over the waiting jobs. ``other_candidates`` orders a
job's remaining candidates, the tail of its preference list. ``integral_assignment`` is the
other rounding (``LPPolicy(rounding="integral")``, the default of ``sia-srpt`` / ``sia-las``):
one candidate per job from the LP's vertex, no time slicing.
"""

from __future__ import annotations

import numpy as np

from hsched_env.placement import NodeState, candidate_parts
from hsched_env.policy import Assignment, SchedulerView
from hsched_env.table_memo import TableMemo

#: An LP share ``X`` at or below this is no share (the rounding's support).
TINY = 1e-6
SHARE_QUANTUM = 1e-4    # shares closer than this are ties in the rounding's priorities


class RoundingMemo:
    """The last ``round_allocation`` result and what it was computed from
    (``round_allocation(memo=)``)."""

    def __init__(self) -> None:
        self.key = None
        self.out: Assignment = {}
        self.tables: tuple = ()
        self.hits = 0
        # job id -> (its allocation entry, its ``_support``): computed once per allocation
        self.supports: dict[int, tuple] = {}
        # a job's deficit sum -> ``round(sum, 1)`` (slow in Python; the sums repeat between
        # solves, when the deficits do not change)
        self.rounded: dict[float, float] = {}

    def __deepcopy__(self, memo) -> "RoundingMemo":
        return RoundingMemo()        # a cache: a copy starts empty (same results)

    def __reduce__(self):
        return RoundingMemo, ()


def round_allocation(view: SchedulerView, allocation: dict, received: dict, deficits: dict,
                     elapsed: float, *, sticky: bool, fill: bool, others,
                     memo: RoundingMemo | None = None, gpu_rows=None) -> Assignment:
    """Gavel-style rounding at the job level (see ``lp_baseline.policy``), checked against
    a dry-run placement on the cluster's nodes.

    Args:
        view: The scheduler view.
        allocation: The LP allocation, ``{job id: (candidate rows, X)}``.
        received: ``{job id: {row: seconds run with it}}`` since the last reset (the
            allocation's making).
        deficits: ``{job id: {row: seconds}}``, the accumulated share × elapsed − received
            of the earlier allocations.
        elapsed: Seconds since the last reset.
        sticky, fill: As in ``LPPolicy``.
        others: ``others(k, exclude)``: active job ``k``'s candidates not in ``exclude`` in
            preference order (``other_candidates``), the tail of its preference list.
        memo: Where the previous round's result is kept, or ``None``. Past the priority
            order, the rounding is a function of the jobs in that order with their preference
            lists, their candidate tables, what each runs on which nodes, and the capacity;
            when all of these and the active job set are the previous call's, its result is
            returned (a copy) without the dry-run placement. Only for an ``others`` that is a
            deterministic function of those (the job's table and, through a size cap, the
            active jobs and the capacity): not the agnostic policy's random order, not a
            per-round ``allowed``.
        gpu_rows: A ``TableMemo`` for each table's GPUs by row as ``(type, count)`` pairs
            of Python ints (``PlacementDryRun``), kept across calls; ``None``: a new one.
    """
    el = max(elapsed, 1e-9)
    jobs = []
    supports = {} if memo is None else memo.supports
    rounded = {} if memo is None else memo.rounded
    if len(rounded) > 4096:
        rounded.clear()
    current = view.current.tolist()
    for k, j in enumerate(view.job_ids.tolist()):
        entry = allocation.get(j)
        if entry is None:
            continue
        known = supports.get(j)
        if known is not None and known[0] is entry:
            rs, xs, share, xq = known[1]
        else:
            rs, xs, share, xq = _support(entry)
            if memo is not None:
                supports[j] = (entry, (rs, xs, share, xq))
        if not rs:
            continue
        rec = received.get(j, {})
        got = sum(rec.values())
        prio = share * 1e9 if got <= 0 else share / (got / el)
        total = sum(deficits.get(j, {}).values())
        deficit = rounded.get(total)                             # seconds, to 0.1
        if deficit is None:
            deficit = rounded[total] = round(total, 1)
        # Which candidate: the current one if the LP still gives it a share (a switch costs
        # a restart), else the most under-served one (share X minus time received).
        cur = current[k]
        if len(rs) == 1:                     # nothing to order (most jobs of a vertex)
            order = rs[:]                    # (``rs`` is kept in the memo: never mutated)
        else:
            # Python's round() is numpy's rint (half to even) on these floats, and the
            # sort is stable: the order ``np.lexsort((-xs, -under))`` gives
            under = [round((xv - rec.get(r, 0.0) / el) / SHARE_QUANTUM) * SHARE_QUANTUM
                     for xv, r in zip(xs, rs)]
            order = [rs[i] for i in sorted(range(len(rs)), key=lambda i: (-under[i], -xq[i]))]
        if sticky and cur in order:
            order.remove(cur)
            order.insert(0, cur)
        jobs.append((-prio, -deficit, -share, j, k, order))
    jobs.sort(key=lambda e: e[:4])
    if memo is not None:
        if len(supports) > 2 * len(allocation):
            for j in [j for j in supports if j not in allocation]:
                del supports[j]                       # jobs the allocation no longer has
        key = ([(j, order) for _, _, _, j, _, order in jobs], view.job_ids.tobytes(),
               view.current.tobytes(), view.current_nodes, view.capacity.tobytes(),
               [id(t) for t in view.candidates])
        if key == memo.key:
            memo.hits += 1
            return {j: list(rows) for j, rows in memo.out.items()}
    out = _dry_run(view, jobs, fill, others, gpu_rows)
    if memo is not None:
        memo.key, memo.out = key, {j: list(rows) for j, rows in out.items()}
        memo.tables = view.candidates        # pins the tables whose ids the key holds
    return out


def _dry_run(view: SchedulerView, jobs: list, fill: bool, others, gpu_rows) -> Assignment:
    """The rounding's placement pass over ``jobs`` (in priority order), then the fill pass."""
    dry = PlacementDryRun(view, gpu_rows)
    out: Assignment = {}
    for _, _, _, j, k, order in jobs:
        # the LP's candidates first; if node fragmentation blocks them all, the job's
        # other candidates that fit, fastest first (a job the LP runs is never idled
        # for want of the exact set)
        prefs = order + others(k, order)
        placed = dry.place_first(k, prefs)
        if placed is not None:
            out[j] = placed
    if fill:
        _fill_free_gpus(view, jobs, out, dry, others)
    return out


def _support(entry: tuple) -> tuple[list[int], list[float], float, list[float]]:
    """A job's allocation ``(rows, X)`` as its support: the rows and shares with X > TINY
    (Python lists), its total share and each share rounded to ``SHARE_QUANTUM``."""
    rows, x = entry
    xl = x.tolist()
    support = [i for i, v in enumerate(xl) if v > TINY]
    rl = rows.tolist()
    rs, xs = [rl[i] for i in support], [xl[i] for i in support]
    # Rounded to SHARE_QUANTUM: the LP's solution is exact to ~1e-6, and another
    # optimal vertex (same problem, other candidates) must not reorder the jobs.
    share = round(_numpy_sum(xs) / SHARE_QUANTUM) * SHARE_QUANTUM if rs else 0.0
    return rs, xs, share, [round(xv / SHARE_QUANTUM) * SHARE_QUANTUM for xv in xs]


def _numpy_sum(values: list[float]) -> float:
    """``float(np.sum(values))`` to the last bit: numpy adds fewer than 8 values one after
    the other from 0 (as here), more in an unrolled pairwise order (left to numpy)."""
    if len(values) >= 8:
        return float(np.sum(np.array(values, dtype=np.float64)))
    total = 0.0
    for v in values:
        total += v
    return total


#: From this many active jobs up, ``integral_assignment`` reads the jobs in array operations
#: (``_choose_vectorized``; below, its fixed cost exceeds the per-job loop's: 8-job rounds
#: took ~1.5× longer, 20-job rounds ~0.85×).
_VECTOR_MIN_JOBS = 16
#: How many times ``integral_assignment``'s repair recomputes which jobs still fit (each a
#: pass over every repair candidate): enough for the few placements of a full cluster's
#: repair, bounded so that a repair placing many jobs stays linear.
_REFITS = 8


def integral_assignment(view: SchedulerView, allocation: dict, values: dict,
                        eligible, fallbacks: TableMemo | None = None) -> Assignment:
    """One candidate per job from an LP vertex (``LPPolicy(rounding="integral")``): no time
    slicing.

    A job with ``X = 1`` on a candidate runs it (unless that candidate's value is ≤ 0: worth
    less than waiting). The LP relaxation of a one-candidate-per-job
    problem has a vertex optimum with at most T fractional jobs, T its coupling constraints
    (one per GPU type); those jobs (largest share first), then the jobs the LP left out (best value
    first), take their highest-value candidate with a positive value that still fits the GPUs
    left of each type. Each chosen row is followed by the job's one-type candidates on the
    same type with fewer GPUs, largest first (then fastest), then by its other candidates with
    a positive value, best first: the simulator's fallbacks when node fragmentation blocks the
    chosen set. (Until session 50 the list ended with the smaller sets: a Llama-2 13B job
    given 8 A100-40GB, a whole node, that no smaller A100 set holds waited hours while the
    type's free GPUs were split over two nodes.) The extra fallbacks may be larger than the
    chosen set and, since the simulator places jobs largest first, take GPUs the rounding
    planned for smaller jobs; trying them only after every job's planned rows was measured
    worse (session 51, docs/lp.md).

    Args:
        view: The scheduler view.
        allocation: The LP allocation, ``{job id: (candidate rows, X)}``.
        values: ``{job id: (rows, value)}``, the second-stage value of each of the job's
            candidates (only candidates with a positive value are taken by the repair).
        eligible: ``eligible(k)``: active job ``k``'s candidate rows (the fallbacks' pool);
            ``None``: every row of its table.
        fallbacks: Optional ``TableMemo`` keeping, across decisions, each table row's
            fallback order over the whole table (``smaller_on_same_type``'s ``memo``).

    From ``_VECTOR_MIN_JOBS`` active jobs up, the jobs are read in one pass over all their
    candidates (``_choose_vectorized``: array operations over the concatenated X and values);
    below, one job at a time (``_choose_per_job``), which costs less there. Both give the
    rule above (``tests/test_integral_rounding.py`` holds each to a plain version).
    """
    choose = (_choose_vectorized if view.num_active >= _VECTOR_MIN_JOBS else _choose_per_job)
    chosen = choose(view, allocation, values)
    ids = view.job_ids.tolist()
    tables = view.candidates
    out: Assignment = {}
    for k in sorted(chosen):
        rows = None if eligible is None else eligible(k)
        prefs = smaller_on_same_type(tables[k], rows, chosen[k], memo=fallbacks)
        got = values.get(ids[k])            # (rows, value) of its eligible candidates
        if got is not None and len(got[0]):
            vr, vv = np.asarray(got[0]), np.asarray(got[1], dtype=np.float64)
            order = np.argsort(-vv, kind="stable")
            best_first = vr[order][vv[order] > 0].tolist()
            seen = set(prefs)
            prefs += [r for r in dict.fromkeys(best_first) if r not in seen]
        out[ids[k]] = prefs
    return out


def _choose_vectorized(view: SchedulerView, allocation: dict, values: dict) -> dict[int, int]:
    """``integral_assignment``'s choice, ``{active job index: row}``, in array operations over
    every job's candidates at once."""
    A = view.num_active
    free = view.capacity.astype(np.float64).copy()
    ids = view.job_ids.tolist()
    tables = view.candidates
    no_rows, no_x = np.zeros(0, dtype=np.int64), np.zeros(0)
    alloc = [allocation.get(j) or (no_rows, no_x) for j in ids]
    vals = [values.get(j) or (no_rows, no_x) for j in ids]
    xs = [np.asarray(a[1], dtype=np.float64) for a in alloc]
    vs = [np.asarray(v[1], dtype=np.float64) for v in vals]
    vr = [np.asarray(v[0], dtype=np.int64) for v in vals]
    x_size = np.fromiter((x.size for x in xs), dtype=np.int64, count=A)
    v_size = np.fromiter((v.size for v in vs), dtype=np.int64, count=A)
    X = np.concatenate(xs) if A else no_x
    V = np.concatenate(vs) if A else no_x
    VR = np.concatenate(vr) if A else no_rows
    x_job = np.repeat(np.arange(A), x_size)
    v_job = np.repeat(np.arange(A), v_size)
    x_start = np.cumsum(x_size) - x_size             # each job's first place in X / V
    v_start = np.cumsum(v_size) - v_size

    # each job's first X = 1 row (a job with one is "whole")
    pos = np.flatnonzero(X > 1.0 - TINY)
    first = np.ones(pos.size, dtype=bool)
    first[1:] = x_job[pos][1:] != x_job[pos][:-1]
    pos = pos[first]
    whole_k = x_job[pos]
    row_of = np.full(A, -1, dtype=np.int64)             # the whole row of each job, else -1
    row_of[whole_k] = [int(alloc[k][0][i]) for k, i in
                       zip(whole_k.tolist(), (pos - x_start[whole_k]).tolist())]
    # its value: the first of the job's values listed for that row (none: worth running)
    match = np.flatnonzero((VR == row_of[v_job]) & (row_of[v_job] >= 0))
    if match.size:
        keep = np.ones(match.size, dtype=bool)
        keep[1:] = v_job[match][1:] != v_job[match][:-1]
        match = match[keep]
    worthless = np.zeros(A, dtype=bool)
    worthless[v_job[match]] = ~(V[match] > 0)
    runs_whole = (row_of >= 0) & ~worthless

    chosen: dict[int, int] = {}
    for k in np.flatnonzero(runs_whole).tolist():
        r = int(row_of[k])
        chosen[k] = r
        free -= tables[k].gpus[r]
    # the rest, by share (the fractional jobs) then best value: jobs with a positive value
    best = np.full(A, -np.inf)
    has_v = v_size > 0
    if has_v.any():
        best[has_v] = np.maximum.reduceat(V, v_start[has_v])
    nonzero_x = np.zeros(A, dtype=bool)
    nonzero_x[x_job[X != 0]] = True
    rest = [(-round((float(xs[k].sum()) if nonzero_x[k] else 0.0) / SHARE_QUANTUM),
             -float(best[k]), ids[k], k)
            for k in np.flatnonzero(~runs_whole & (best > 0)).tolist()]
    rest.sort()
    if rest:
        # Only the jobs with a positive candidate that fits the GPUs free now can take one:
        # ``may_fit`` marks them, in one pass over every candidate, and since GPUs only get
        # taken from here on, a job it leaves out would fail the test below too. The pass is
        # repeated after a placement (the only time the free GPUs change), at most
        # ``_REFITS`` times and only while it still leaves jobs out, so the work stays linear
        # in the candidates; past that, ``may_fit`` is a superset and the per-job test
        # decides.
        in_rest = np.zeros(A, dtype=bool)
        in_rest[[k for _, _, _, k in rest]] = True
        flat = np.flatnonzero(in_rest[v_job])            # their candidates, in view order
        gpus = np.concatenate([tables[k].gpus[vr[k]] for k in np.flatnonzero(in_rest).tolist()])
        positive = V[flat] > 0
        sel_job, sel_gpus = v_job[flat][positive], gpus[positive]

        def fitting() -> np.ndarray:
            may = np.zeros(A, dtype=bool)
            may[sel_job[np.all(sel_gpus <= free + 1e-9, axis=1)]] = True
            return may

        may_fit, refits = fitting(), 0
        for _, _, j, k in rest:
            if not may_fit[k]:
                continue
            r = _best_fitting(tables[k], vr[k], vs[k], free)
            if r is None:
                continue
            chosen[k] = r
            free -= tables[k].gpus[r]
            if refits < _REFITS:
                again = fitting()
                # nothing left out this time (room to spare): stop recomputing
                refits = (_REFITS if np.count_nonzero(again) >= np.count_nonzero(may_fit)
                          else refits + 1)
                may_fit = again
    return chosen


def _choose_per_job(view: SchedulerView, allocation: dict, values: dict) -> dict[int, int]:
    """``integral_assignment``'s choice, ``{active job index: row}``, one job at a time."""
    free = view.capacity.astype(np.float64).copy()
    chosen: dict[int, int] = {}
    rest = []
    no_rows, no_x = np.zeros(0, dtype=np.int64), np.zeros(0)
    for k, j in enumerate(view.job_ids.tolist()):
        rows, x = allocation.get(j) or (no_rows, no_x)
        vrows, val = values.get(j) or (no_rows, no_x)
        whole = np.flatnonzero(x > 1.0 - TINY)
        if whole.size:
            r = int(rows[whole[0]])
            worth = val[vrows == r]
            # a row the LP filled for want of anything better (every gain <= 0, e.g. a part
            # or an ``allowed`` set without a positive one) is not worth a job's GPUs
            if worth.size == 0 or worth[0] > 0:
                chosen[k] = r
                free -= view.candidates[k].gpus[r]
                continue
        best = float(val.max()) if val.size else -np.inf
        if best > 0:
            rest.append((-round(float(x.sum()) / SHARE_QUANTUM), -best, j, k))
    rest.sort()
    for _, _, j, k in rest:
        vrows, val = values[j]
        r = _best_fitting(view.candidates[k], vrows, val, free)
        if r is not None:
            chosen[k] = r
            free -= view.candidates[k].gpus[r]
    return chosen


def _best_fitting(table, vrows: np.ndarray, val: np.ndarray, free: np.ndarray) -> int | None:
    """The repair's pick for one job: among its rows ``vrows`` with a positive value ``val``
    that fit the ``free`` GPUs, the highest value (then the lowest row); ``None`` if none."""
    ok = (val > 0) & np.all(table.gpus[vrows] <= free + 1e-9, axis=1)
    if not ok.any():
        return None
    i = np.flatnonzero(ok)
    return int(vrows[i[np.lexsort((vrows[i], -val[i]))[0]]])


def smaller_on_same_type(table, rows: np.ndarray | None, row: int,
                         memo: TableMemo | None = None) -> list[int]:
    """``row``, then the one-type rows of ``rows`` (``None``: every row of ``table``) on
    ``row``'s (main) GPU type with fewer GPUs, largest first (then fastest, then lowest row).

    With ``memo`` (a ``TableMemo``), the order over every row of the table is computed once
    per (table, row) and filtered by ``rows``: the same list, since the order depends on the
    rows' own keys alone."""
    if memo is None:
        every = np.arange(len(table)) if rows is None else rows
        return [int(row)] + _smaller_rows(table, every, row)
    order = memo.get_for(table, (id(table), "smaller", int(row)),
                         lambda: _smaller_rows(table, np.arange(len(table)), row))
    if rows is None or not order:      # (no fallback on the whole table: none among ``rows``)
        return [int(row)] + order
    eligible = np.asarray(rows, dtype=np.int64).tolist()
    allowed = set(eligible)
    if len(allowed) == len(eligible):                 # (a repeated row: the plain path)
        return [int(row)] + [r for r in order if r in allowed]
    return [int(row)] + _smaller_rows(table, rows, row)


def _smaller_rows(table, rows: np.ndarray, row: int) -> list[int]:
    """The fallbacks of ``smaller_on_same_type`` (without ``row`` itself)."""
    rows = np.asarray(rows, dtype=np.int64)
    thr = table.samples_per_s[rows]
    rows = rows[np.isfinite(thr) & (thr > 0)]
    t = int(np.argmax(table.gpus[row]))
    n = table.gpus[rows].sum(axis=1)
    same = (table.gpus[rows, t] == n) & (n < int(table.gpus[row].sum()))
    alt = rows[same]
    alt = alt[np.lexsort((alt, -table.samples_per_s[alt], -n[same]))]
    return [int(r) for r in alt]


def _row_needs(table) -> list[tuple[tuple[int, int], ...]]:
    """Each row of ``table``: its GPUs as ``(type index, count)`` pairs of the types it uses
    (Python ints, read-only), what ``PlacementDryRun`` tests against the free GPUs."""
    return [tuple((t, n) for t, n in enumerate(row) if n) for row in table.gpus.tolist()]


def other_candidates(table, eligible: np.ndarray, exclude, rng=None) -> list[int]:
    """The rows of ``eligible`` (of the job's candidate ``table``) with positive throughput that
    are not in ``exclude``, fastest first; with ``rng`` (the agnostic policy: it does not know
    which type is faster) in the random order ``rng.permutation`` draws."""
    pool = eligible
    thr = table.samples_per_s[pool]
    pool = pool[np.isfinite(thr) & (thr > 0)]      # a candidate that does no work
    if rng is not None:
        pool = pool[rng.permutation(pool.size)]
    else:
        pool = pool[np.argsort(-table.samples_per_s[pool], kind="stable")]
    skip = set(exclude)
    return [int(c) for c in pool if int(c) not in skip]


def _fill_free_gpus(view, jobs, out, dry: PlacementDryRun, others) -> None:
    """Work-conserving pass: waiting jobs, in priority order (then the rest), take a
    candidate that still fits on the free nodes (preferring the LP's support)."""
    order = [(j, k, rows) for _, _, _, j, k, rows in jobs if j not in out]
    listed = {j for j, _, _ in order} | set(out)
    order += [(int(j), k, []) for k, j in enumerate(view.job_ids) if int(j) not in listed]
    for j, k, support in order:
        placed = dry.place_first(k, list(support) + others(k, support))
        if placed is not None:
            out[j] = placed


class PlacementDryRun:
    """The round's placements tried on a copy of the cluster's nodes, in the rounding's
    priority order, so that the simulator (which places jobs keeping their candidate first,
    then the rest largest first) can carry them out.

    A job rerunning its current candidate re-takes the nodes it holds (as
    ``Simulator.place``). Any other choice is first tried without the nodes still held by
    running jobs not yet placed — they will keep them if their turn comes — and only if that
    fails on those nodes too; the running jobs whose nodes it takes are then **evicted**:
    they may not list their current candidate (the simulator would give them their old nodes
    back first), so a lower-priority running job never blocks a higher-priority one."""

    def __init__(self, view: SchedulerView, gpu_rows: TableMemo | None = None) -> None:
        self.view = view
        # table -> its GPUs by row as (type, count) pairs of Python ints (``_row_needs``)
        self._gpu_rows = TableMemo() if gpu_rows is None else gpu_rows
        self.nodes = NodeState(view.cluster)
        self.free = view.capacity.tolist()          # GPUs per type not yet taken
        self._current = view.current.tolist()
        self._held = {k: a for k, a in enumerate(view.current_nodes)
                      if a is not None and int(view.current[k]) >= 0}
        self._mask = np.zeros_like(self.nodes.free)       # GPUs held by pending running jobs
        self._holding: dict[int, list[tuple[int, int]]] = {}   # node -> [(job index, GPUs)]
        for k, alloc in self._held.items():
            for v, g in alloc:
                self._mask[v] += g
                self._holding.setdefault(int(v), []).append((k, int(g)))
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
        """Pending running jobs whose held nodes the last placement took from (a node it
        holds g GPUs of was taken from and has fewer than g free now)."""
        free = self.nodes.free
        for v in np.flatnonzero(before != free):
            for k, g in self._holding.get(int(v), ()):
                if k in self._pending and free[v] < g:
                    self._evicted.add(k)

    def place_first(self, k: int, prefs: list[int]) -> list[int] | None:
        """Take the first of ``prefs`` (rows of job ``k``, Python ints) that fits; returns it
        followed by the job's other rows in ``prefs`` order (the simulator's fallbacks), or
        ``None``."""
        cur = self._current[k]
        self._settle(k)
        if k in self._evicted:
            prefs = [r for r in prefs if r != cur]
        if not prefs:
            return None
        table = self.view.candidates[k]
        free = self.free
        # each row's GPUs as (type, count) pairs of the types it uses (the free counts never go
        # negative, so a type a row does not use would always pass the test)
        needs = self._gpu_rows.get_for(table, id(table), lambda: _row_needs(table))
        held = self._held.get(k)
        ok = []            # the rows that pass the per-type test, for the unmasked pass
        for r in prefs:    # the masked pass, testing each row's GPUs per type as it goes
            need = needs[r]
            if all(n <= free[t] for t, n in need):
                ok.append((r, need))
                if self._try(table, r, cur, held, True):
                    return self._took(free, need, r, prefs)
        for r, need in ok:
            if self._try(table, r, cur, held, False):
                return self._took(free, need, r, prefs)
        return None

    def _took(self, free: list, need: tuple, r: int, prefs: list[int]) -> list[int]:
        """Book row ``r``'s GPUs per type; ``r`` followed by the other rows of ``prefs``."""
        free = free[:]
        for t, n in need:
            free[t] -= n
        self.free = free
        if prefs[0] == r and prefs.count(r) == 1:
            return list(prefs)                       # (most jobs: their first choice)
        return [r] + [c for c in prefs if c != r]

    def _try(self, table, r: int, cur: int, held, masked: bool) -> bool:
        """Place row ``r``: the held nodes when it is the job's current row, else on the free
        nodes (``masked``: without those still held by running jobs not yet placed)."""
        if r == cur and held is not None:
            return self.nodes.keep(held)
        return self._place(table, r, masked)
