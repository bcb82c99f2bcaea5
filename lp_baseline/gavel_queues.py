"""Gavel's own rounding: one priority queue per GPU type (``LPPolicy(rounding="gavel-queues")``,
the rounding of the ``gavel``, ``gavel-resets`` and ``agnostic-lp`` policies).

Gavel's scheduler (its ``scheduler.py``: ``_update_priorities`` and
``_schedule_jobs_on_workers_helper``; the rules below are read from it, the code is ours) turns
the max-min LP's allocation ``X[j, t]`` (the share of time job ``j`` should run on type ``t``)
into one round's jobs as follows:

* **A priority per (job, type)**: ``X[j, t] ÷ (time j ran on t since the last reset ÷ time all
  jobs ran on t since then)``, where every job is credited with half a round on every type at
  its arrival and at each reset (``time_per_iteration / 2``; the reset leaves that credit out of
  the deficit). The denominator is common to a type's jobs and the queues are sorted per type,
  so a type's order is that of ``X[j, t] ÷ (R/2 + received[j, t])`` (R the round length); a
  type with ``X[j, t] = 0`` gives the job priority 0 there, where it still takes GPUs the
  others left (Gavel skips zero priorities only for its FIFO policies).
* **A queue per type**, sorted by (priority, deficit on that type, ``X[j, t]``), highest first,
  ties in arrival order; the queues are concatenated **type by type** — Gavel's fixed
  V100, P100, K80 for its throughput-aware (``_perf``) policies, fastest first, and a fresh
  random order every round for the others (here: ``agnostic-lp``).
* **The pass**: down the concatenated queue, a job not yet scheduled takes its GPUs on that
  type if they are free, else it is skipped there (and may come up again on a later type).
  A job the allocation does not hold (it arrived after the last solve: under Gavel's reset
  rule, ``gavel-resets``) is in the queues with priority 0 and takes its GPUs in the pass, but
  Gavel then assigns it no workers: it does not run, and those GPUs idle for the round.

The pass counts free GPUs per type, as Gavel's does; the simulator then places the chosen
jobs on its nodes in its own order (jobs keeping their candidate first, keeping their nodes, as
Gavel's workers are kept first; then largest first), each with its other candidates as
fallbacks where node fragmentation blocks the chosen set (Gavel's simulator has no nodes). The
types are ordered fastest first by the catalog's peak fp16 (then fp32) TFLOP/s, which gives
Gavel's order on its three types.
"""

from __future__ import annotations

import numpy as np

from hsched_env.catalog import get_gpu
from hsched_env.policy import Assignment, SchedulerView
from hsched_env.table_memo import TableMemo
from lp_baseline.rounding import SHARE_QUANTUM, TINY

#: Gavel's ``minimum_time_between_allocation_resets`` (seconds): its simulator recomputes the
#: allocation only when the job set changed and at least this long after the last reset
#: (``LPPolicy(min_resolve_interval_s=)``, the ``gavel-resets`` policy; ``gavel-fifo``), and
#: its scheduler resets the priorities' history at most this often (``gavel``).
GAVEL_MIN_RESET_S = 1920.0


class QueueMemo:
    """What ``queue_assignment`` keeps across calls: each job's shares per allocation entry
    (``{job id: (entry, {row: X})}``) and the rounded deficits (``{deficit: round(it, 1)}``);
    a copy starts empty (same results)."""

    def __init__(self) -> None:
        self.shares: dict[int, tuple] = {}
        self.rounded: dict[float, float] = {}

    def __deepcopy__(self, memo) -> "QueueMemo":
        return QueueMemo()

    def __reduce__(self):
        return QueueMemo, ()


def fastest_first(gpu_types: tuple[str, ...]) -> list[int]:
    """Type indices fastest first: by the catalog's peak fp16, then fp32 TFLOP/s, ties in the
    cluster's order (Gavel's V100, P100, K80 on its cluster)."""
    specs = [get_gpu(t) for t in gpu_types]
    return sorted(range(len(gpu_types)),
                  key=lambda t: (-specs[t].fp16_tflops, -specs[t].fp32_tflops, t))


def row_types(table) -> np.ndarray:
    """(rows,) the GPU type index of each row of ``table``, or -1 for a row over several
    types (not a queue entry: Gavel's configurations are one type each)."""
    used = table.gpus > 0
    return np.where(used.sum(axis=1) == 1, used.argmax(axis=1), -1)


def _queue_rows(table, rows: np.ndarray) -> list[tuple[int, int, int]]:
    """``(row, type, GPUs)`` of each of ``rows`` that is a queue entry: one GPU type, a
    positive throughput."""
    rows = np.asarray(rows, dtype=np.int64)
    kinds = row_types(table)[rows]
    keep = (kinds >= 0) & (table.samples_per_s[rows] > 0)
    rows, kinds = rows[keep], kinds[keep]
    return list(zip(rows.tolist(), kinds.tolist(), table.gpus[rows, kinds].tolist()))


def _shares(entry) -> dict[int, float]:
    """A job's allocation ``(rows, X)`` as ``{row: X}`` over its support (X > ``TINY``), each
    share rounded to ``SHARE_QUANTUM`` (another optimal vertex must not reorder the jobs)."""
    if entry is None:
        return {}
    return {r: round(x / SHARE_QUANTUM) * SHARE_QUANTUM
            for r, x in zip(entry[0].tolist(), entry[1].tolist()) if x > TINY}


def queue_assignment(view: SchedulerView, allocation: dict, received: dict, deficits: dict,
                     *, type_order: list[int], eligible, others,
                     memo: QueueMemo | None = None,
                     types_memo: TableMemo | None = None) -> Assignment:
    """This round's assignment by Gavel's per-type queues (module docstring).

    Args:
        view: The scheduler view.
        allocation: The LP allocation, ``{job id: (candidate rows, X)}``.
        received: ``{job id: {row: seconds run with it}}`` since the last reset.
        deficits: ``{job id: {row: seconds}}``, the accumulated ``X × elapsed − received``
            of the earlier allocations (Gavel's per-type deficits: one row per type).
        type_order: The types' indices in the order their queues are passed.
        eligible: ``eligible(k)``: active job ``k``'s candidate rows (its queue entries: the
            rows of one type with a positive throughput).
        others: ``others(k, exclude)``: job ``k``'s candidates not in ``exclude`` in
            preference order, the simulator's fallbacks after the row the pass gave it.
        memo: Where each job's shares (per allocation) and the rounded deficits are kept
            across calls (``QueueMemo``); ``None``: computed afresh.
        types_memo: Each table's queue entries by eligible rows, kept across calls.
    """
    half = view.round_s / 2.0
    types_memo = TableMemo() if types_memo is None else types_memo
    shares = {} if memo is None else memo.shares
    if memo is not None and len(shares) > 2 * len(allocation):
        for j in [j for j in shares if j not in allocation]:
            del shares[j]                                 # jobs the allocation no longer has
    rounded = {} if memo is None else memo.rounded          # a deficit -> round(it, 1)
    if len(rounded) > 4096:
        rounded.clear()
    queues: dict[int, list] = {t: [] for t in type_order}
    for k, j in enumerate(view.job_ids.tolist()):
        table = view.candidates[k]
        rows = eligible(k)
        entries = types_memo.get_for(table, (id(table), rows.tobytes()),
                                     lambda: _queue_rows(table, rows))
        entry = allocation.get(j)
        known = shares.get(j)
        if known is not None and known[0] is entry:
            share = known[1]
        else:
            share = _shares(entry)
            shares[j] = (entry, share)
        rec, dfc = received.get(j, {}), deficits.get(j, {})
        for r, t, n in entries:
            x = share.get(r, 0.0)
            prio = x / (half + rec.get(r, 0.0)) if x > 0 else 0.0
            d = dfc.get(r, 0.0)                  # seconds, to 0.1 (ties of noise broken alike)
            dq = rounded.get(d)
            if dq is None:
                dq = rounded[d] = round(d, 1)
            queues[t].append((-prio, -dq, -x, j, k, r, n))
    free = view.capacity.tolist()
    taken: set[int] = set()
    out: Assignment = {}
    for t in type_order:
        queue = queues[t]
        queue.sort()
        for *_, j, k, r, n in queue:
            if free[t] <= 0:
                break
            if j in taken or n > free[t]:
                continue
            free[t] -= n
            taken.add(j)
            # a job the allocation does not hold yet (it arrived since the last solve) takes
            # its place in the pass but is given no GPUs: they idle this round
            if j in allocation:
                out[j] = [r] + others(k, [r])
    return out
