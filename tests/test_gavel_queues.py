"""Gavel's own rounding (``lp_baseline.gavel_queues``, the ``gavel`` policies'): a priority
queue per GPU type, held to a plain transcription of Gavel's rule on real simulations."""

from __future__ import annotations

import numpy as np
import pytest

import lp_baseline.policy as lp_policy
from hsched_env.cluster import get_cluster
from hsched_env.errors import ConfigError
from lp_baseline.gavel_queues import fastest_first
from lp_baseline.policy import LPPolicy, _charge_deficits, same_allocation
from lp_baseline.registry import make_policy
from lp_baseline.rounding import SHARE_QUANTUM, TINY

CONTENDED = "gavel:rate=60,jobs=90,seed=4,multi_gpu=0,duration_scale=0.2"
CONTENDED_MULTI = "gavel:rate=60,jobs=90,seed=5,duration_scale=0.2"


def test_the_queues_go_fastest_type_first_as_gavels():
    assert [get_cluster("gavel-108").gpu_types[t] for t in
            fastest_first(get_cluster("gavel-108").gpu_types)] == ["V100-16GB", "P100", "K80"]
    assert fastest_first(("K80", "A100-80GB", "T4")) == [1, 2, 0]


def _plain_gavel(view, allocation, received, deficits, type_order) -> dict[int, int]:
    """Gavel's ``_update_priorities`` + ``_schedule_jobs_on_workers_helper``, as plainly as
    possible: ``{job id: row}`` of the jobs that run."""
    half = view.round_s / 2
    queues = {t: [] for t in type_order}
    for k, j in enumerate(view.job_ids.tolist()):
        table = view.candidates[k]
        rows, x = allocation.get(j, (np.zeros(0, dtype=np.int64), np.zeros(0)))
        share = {int(r): round(v / SHARE_QUANTUM) * SHARE_QUANTUM
                 for r, v in zip(rows, x) if v > TINY}
        for r in np.flatnonzero(table.requested):
            if table.samples_per_s[r] <= 0:
                continue
            t = int(np.flatnonzero(table.gpus[r])[0])
            s = share.get(int(r), 0.0)
            prio = s / (half + received.get(j, {}).get(int(r), 0.0)) if s > 0 else 0.0
            deficit = round(deficits.get(j, {}).get(int(r), 0.0), 1)
            queues[t].append((prio, deficit, s, -j, j, int(r), int(table.gpus[r].sum())))
    free = view.capacity.tolist()
    ran: dict[int, int] = {}
    taken = set()
    for t in type_order:
        for *_, j, r, n in sorted(queues[t], reverse=True):
            if free[t] == 0 or j in taken or n > free[t]:
                continue
            free[t] -= n
            taken.add(j)
            if j in allocation:              # Gavel assigns no workers to the others
                ran[j] = r
    return ran


@pytest.mark.parametrize("name,workload", [
    ("gavel", CONTENDED), ("gavel-resets", CONTENDED), ("agnostic-lp", CONTENDED),
    ("gavel", CONTENDED_MULTI)])
def test_each_round_is_gavels_rule(monkeypatch, simulate, name, workload):
    """Every rounding of a contended run on ``gavel-108`` against the plain rule: which jobs
    run and on which type; under ``gavel-resets`` jobs the allocation does not hold yet wait
    (and some do), under ``agnostic-lp`` the type order changes from round to round. With
    multi-GPU jobs too (the pass counts GPUs per type, as Gavel's)."""
    real = lp_policy.queue_assignment
    seen = {"rounds": 0, "unallocated": 0, "orders": set(), "split": 0}

    def checked(view, allocation, received, deficits, *, type_order, **kw):
        out = real(view, allocation, received, deficits, type_order=type_order, **kw)
        want = _plain_gavel(view, allocation, received, deficits, type_order)
        assert {j: rows[0] for j, rows in out.items()} == want
        seen["rounds"] += 1
        seen["unallocated"] += sum(int(j) not in allocation for j in view.job_ids)
        seen["orders"].add(tuple(type_order))
        seen["split"] += sum(int(np.sum(x > TINY)) > 1 for _, x in allocation.values())
        return out

    monkeypatch.setattr(lp_policy, "queue_assignment", checked)
    _, result = simulate(make_policy(name), workload, "gavel-108", max_time_s=60 * 360.0,
                         throughputs="gavel", round_s=360.0)
    # (the agnostic LP, every type alike, gives each job one type here)
    assert seen["rounds"] >= 50 and (seen["split"] > 0 or name == "agnostic-lp"), seen
    assert result.metrics()["jobs_completed"] > 10
    if name == "gavel-resets":
        assert seen["unallocated"] > 0, seen
    else:
        assert seen["unallocated"] == 0, seen
    assert len(seen["orders"]) == (6 if name == "agnostic-lp" else 1), seen


def test_a_share_is_served_round_robin_across_types(simulate):
    """A job the LP splits across types runs on each (Gavel time-slices by its per-type
    priorities), where the job-level rounding (``gavel-sticky``) keeps it on one: the
    restart counts tell them apart on the same run."""
    runs = {name: simulate(make_policy(name), CONTENDED, "gavel-108", max_time_s=60 * 360.0,
                           throughputs="gavel", round_s=360.0)[1].metrics()
            for name in ("gavel", "gavel-sticky")}
    assert runs["gavel"]["restarts_per_job"] > 2 * runs["gavel-sticky"]["restarts_per_job"]


def test_deficits_charge_every_job_and_type():
    """Gavel's reset: ``X × elapsed − received`` on every (job, type), the time a job ran
    without a share included."""
    deficits = {1: {0: 10.0}}
    allocation = {1: (np.array([0, 1]), np.array([0.5, 0.5]))}
    received = {1: {0: 100.0}, 2: {1: 50.0}}
    _charge_deficits(deficits, allocation, received, 300.0)
    assert deficits == {1: {0: 60.0, 1: 150.0}, 2: {1: -50.0}}


def test_the_queues_refuse_what_they_would_not_read():
    with pytest.raises(ConfigError, match="candidates='requested'"):
        LPPolicy("g", rounding="gavel-queues", objective="max-min", size_cap=False)
    with pytest.raises(ConfigError, match="sticky"):
        LPPolicy("g", rounding="gavel-queues", candidates="requested", objective="max-min",
                 size_cap=False, sticky=False)
    assert make_policy("gavel").rounding == "gavel-queues"
    assert make_policy("gavel-sticky").rounding == "gavel"


@pytest.mark.parametrize("interval", [None, 720.0])
def test_history_resets_on_gavels_schedule(simulate, interval):
    """``gavel`` puts each new allocation into effect at once but resets the time its
    priorities count as Gavel's scheduler does: at the first decision at least
    ``GAVEL_MIN_RESET_S`` after the last reset once the allocation has changed since it.
    (Resetting at every new allocation, as first done, ranked jobs by their shares alone
    where the job set changes every round: a 2-GPU job of the Philly window
    2017-10-14T02:00 waited 26 rounds; resetting only at a new allocation past the interval
    deferred some resets by up to 5 rounds.) Gavel's one interval for its recomputes and its
    resets: a custom ``min_resolve_interval_s`` is the reset interval too. As in Gavel, whose
    "no reset yet" is a last reset at time 0, the first reset (at 0 here) does not start the
    interval."""
    policy = (make_policy("gavel") if interval is None else
              LPPolicy("custom", objective="max-min", candidates="requested",
                       normalizer="requested", size_cap=False, scale_factors=True,
                       rounding="gavel-queues", resolve="on-change",
                       min_resolve_interval_s=interval))
    interval = interval or lp_policy.GAVEL_MIN_RESET_S
    resets, changes = [], []

    class Watch:
        name = "watch"

        def reset(self, cluster, seed):
            policy.reset(cluster, seed)

        def decide(self, view):
            before, x = policy._last_reset_t, policy.allocation
            out = policy.decide(view)
            if policy._last_reset_t != before:
                resets.append(view.time_s)
            changes.append((view.time_s, not same_allocation(policy.allocation, x)))
            return out

    simulate(Watch(), CONTENDED, "gavel-108", max_time_s=60 * 360.0, throughputs="gavel",
             round_s=360.0)
    want, last, stale = [], 0.0, False
    for t, changed in changes:                      # Gavel's rule, plainly (0: none yet)
        stale = stale or changed
        if stale and (last == 0 or t - last >= interval):
            want.append(t)
            last, stale = t, False
    assert resets == want and len(resets) >= 5, (resets, want)
    assert resets[0] == 0.0 and resets[1] < interval            # Gavel's time-0 reset
    if policy.resolve == "every-round":      # new allocations between the resets
        assert sum(c for _, c in changes) > 2 * len(resets), changes
    else:                                    # the custom interval, not Gavel's 1,920 s
        assert min(np.diff(resets)) < lp_policy.GAVEL_MIN_RESET_S, resets


def test_equal_priorities_and_deficits_go_by_share(simulate):
    """Gavel's third sort key: two jobs with the same priority on a type (X ÷ (R/2 +
    received): 0.5 ÷ 180 s = 1.0 ÷ 360 s) and the same deficit go by X, the larger first —
    here for the one V100 left, whatever their arrival order."""
    import dataclasses
    rec, _ = simulate(make_policy("gavel"), CONTENDED, "gavel-108", max_time_s=2 * 360.0,
                      throughputs="gavel", round_s=360.0)
    view = next(v for v in rec.views if v.num_active >= 2)
    v100 = view.cluster.gpu_types.index("V100-16GB")
    view = dataclasses.replace(view, capacity=np.where(np.arange(3) == v100, 1, 0))
    (ka, ja), (kb, jb) = list(enumerate(view.job_ids.tolist()))[:2]

    def v100_row(k):
        table = view.candidates[k]
        return int(next(r for r in np.flatnonzero(table.requested) if table.gpus[r, v100]))

    ra, rb = v100_row(ka), v100_row(kb)
    for x_first, got_first in ((0.5, 0.0), (1.0, 180.0)):
        x_second, got_second = (1.0, 180.0) if x_first == 0.5 else (0.5, 0.0)
        allocation = {ja: (np.array([ra]), np.array([x_first])),
                      jb: (np.array([rb]), np.array([x_second]))}
        received = {ja: {ra: got_first}, jb: {rb: got_second}}
        out = lp_policy.queue_assignment(
            view, allocation, received, {},
            type_order=[v100] + [t for t in range(3) if t != v100],
            eligible=lambda k: np.array([ra] if k == ka else [rb] if k == kb else [],
                                        dtype=np.int64),
            others=lambda k, exclude: [])
        assert list(out) == [ja if x_first == 1.0 else jb], (x_first, out)
