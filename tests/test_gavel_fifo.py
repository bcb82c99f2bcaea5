"""Gavel's FIFO as Gavel's simulator runs it (``gavel-fifo``, ``lp_baseline.gavel_fifo``): each
allocation held to a plain transcription of Gavel's ``fifo_perf``, made on Gavel's reset rule."""

from __future__ import annotations

import numpy as np
import pytest

from lp_baseline.gavel_queues import GAVEL_MIN_RESET_S, row_types
from lp_baseline.registry import POLICY_NAMES, make_policy

CONTENDED_MULTI = "gavel:rate=60,jobs=90,seed=5,duration_scale=0.2"


def _plain_fifo_perf(view) -> dict[int, int]:
    """Gavel's ``FIFOPolicy(mode="perf").get_allocation``, as plainly as possible, on the
    view's jobs: ``{job id: row}`` of the jobs it allocates. Gavel's scale factor is one per
    job; here it is the GPUs of the job's requested row on each type (its request where it has
    none), and a job no type could hold even empty is passed over (``gavel_fifo``'s
    docstring)."""
    names = list(view.cluster.gpu_types)
    available = {names[t]: int(c) for t, c in enumerate(view.capacity)}
    throughputs, rows, scale_factors = {}, {}, {}
    for k, j in enumerate(view.job_ids.tolist()):
        table = view.candidates[k]
        throughputs[j] = {name: 0.0 for name in names}
        scale_factors[j] = {name: int(view.requested_gpus[k]) for name in names}
        rows[j] = {}
        for r in np.flatnonzero(table.requested):
            t = int(row_types(table)[r])
            if t >= 0:
                throughputs[j][names[t]] = float(table.samples_per_s[r])
                scale_factors[j][names[t]] = int(table.gpus[r, t])
                rows[j][names[t]] = int(r)
    queue = list(view.job_ids.tolist())              # in order of arrival
    available_worker_types = sorted(w for w in available if available[w] > 0)
    allocation = {}
    while queue and available_worker_types:
        job = queue.pop(0)
        sf = scale_factors[job]
        with_sf = [w for w in available_worker_types if available[w] >= sf[w]]
        if not with_sf:
            if not any(int(view.capacity[names.index(w)]) >= sf[w] and throughputs[job][w] > 0
                       for w in names):
                continue
            break
        worker_type, max_throughput = None, -1
        for w in with_sf:
            if throughputs[job][w] > max_throughput:
                max_throughput, worker_type = throughputs[job][w], w
        if throughputs[job][worker_type] > 0.0:
            allocation[job] = rows[job][worker_type]
            available[worker_type] -= sf[worker_type]
            if available[worker_type] == 0:
                available_worker_types.remove(worker_type)
    return allocation


class _Watch:
    """``gavel-fifo`` with each decision's view, allocation (when it made one) and output."""

    name = "watch"

    def __init__(self):
        self.policy = make_policy("gavel-fifo")
        self.rounds = []

    def reset(self, cluster, seed):
        self.policy.reset(cluster, seed)

    @property
    def last_stats(self):
        return None

    def decide(self, view):
        before = self.policy.allocations
        out = self.policy.decide(view)
        made = self.policy.allocations != before
        self.rounds.append((view, self.policy.allocation if made else None, out))
        return out


def test_gavel_fifo_is_a_named_policy():
    assert "gavel-fifo" in POLICY_NAMES
    assert make_policy("gavel-fifo").name == "gavel-fifo"


def test_each_allocation_is_gavels_fifo_perf_and_each_round_runs_it(simulate):
    """On a contended multi-GPU workload: every allocation is Gavel's ``fifo_perf`` of the
    jobs then active (types by name, fastest first, strict FIFO), and every round runs
    exactly the allocated jobs still active, each on its allocated row first."""
    watch = _Watch()
    simulate(watch, CONTENDED_MULTI, "gavel-108", max_time_s=80 * 360.0, throughputs="gavel",
             round_s=360.0)
    allocation, made = None, 0
    for view, new, out in watch.rounds:
        if new is not None:
            assert new == _plain_fifo_perf(view), view.time_s
            allocation, made = new, made + 1
        active = set(view.job_ids.tolist())
        assert set(out) == {j for j in allocation if j in active}, view.time_s
        assert all(out[j][0] == allocation[j] for j in out)
        for k, j in enumerate(view.job_ids.tolist()):
            if j in out:                 # the fallbacks: its other requested rows, fastest first
                table = view.candidates[k]
                others = [int(r) for r in np.flatnonzero(table.requested)
                          if r != out[j][0] and table.samples_per_s[r] > 0]
                assert out[j][1:] == sorted(others, key=lambda r: -table.samples_per_s[r])
    waited = [len(view.job_ids) - len(out) for view, _, out in watch.rounds]
    assert made >= 5 and max(waited) >= 10, (made, max(waited))     # it was contended


def test_a_row_larger_than_the_request_counts_its_gpus(simulate):
    """On ``sia-64`` LLM jobs do not fit their request on the small GPUs: their requested row
    there has more GPUs than asked for. The allocation counts the row's GPUs (the
    ``simulate`` fixture checks every decision fits each type: counting the request
    over-allocated the A100s 24 to 16) and is still Gavel's rule."""
    watch = _Watch()
    simulate(watch, "gavel:rate=3,jobs=40,seed=0,mix=llm", "sia-64", max_time_s=60 * 300.0)
    larger = 0
    for view, new, _ in watch.rounds:
        if new is not None:
            assert new == _plain_fifo_perf(view), view.time_s
            larger += sum(int(view.candidates[k].gpus[new[j]].sum()) > view.requested_gpus[k]
                          for k, j in enumerate(view.job_ids.tolist()) if j in new)
    assert larger > 0


@pytest.mark.parametrize("round_s", [360.0, 480.0])
def test_allocations_follow_gavels_reset_rule(simulate, round_s):
    """A new allocation only where the job set changed since the last one and at least
    ``GAVEL_MIN_RESET_S`` after it; in between, arrivals wait. As in Gavel, whose "no reset
    yet" is a last reset at time 0, the allocation of the first decision (at 0 here) does not
    start the interval. (With 480 s rounds a round falls exactly 1,920 s after another.)"""
    watch = _Watch()
    simulate(watch, CONTENDED_MULTI, "gavel-108", max_time_s=60 * round_s, throughputs="gavel",
             round_s=round_s)
    want, last, jobs = [], 0.0, None
    for view, _, _ in watch.rounds:                     # Gavel's rule, plainly
        active = set(view.job_ids.tolist())
        if active != jobs and (last == 0 or view.time_s - last >= GAVEL_MIN_RESET_S):
            want.append(view.time_s)
            last, jobs = view.time_s, active
    got = [view.time_s for view, new, _ in watch.rounds if new is not None]
    assert got == want and len(got) >= 5, (got, want)
    assert got[0] == 0.0 and got[1] < GAVEL_MIN_RESET_S      # Gavel's time-0 reset
    assert len(watch.rounds) > 3 * len(got)
    if round_s == 480.0:
        assert GAVEL_MIN_RESET_S in np.diff(got)          # the interval itself is enough


def _jobs(tmp_path, rows: str):
    path = tmp_path / "jobs.csv"
    path.write_text("job_id,submit_time_s,duration_s,num_gpus,model,gpu_type,batch\n" + rows)
    return f"csv:path={path}"


def test_a_job_moves_to_a_faster_type_at_the_next_allocation(simulate, tmp_path):
    """``tiny-8`` (4 V100, 4 T4): X holds the V100s when A (4 GPUs) is first allocated, so A
    starts on the T4s; once X is done, the next allocation (1,920 s after the last) puts A on
    the V100s. ``fifo-fastest`` keeps A on the T4s to its end."""
    spec = _jobs(tmp_path, "X,0,3000,4,resnet50,,\nA,1,20000,4,resnet50,,\n")
    v100 = {}
    for name in ("gavel-fifo", "fifo-fastest"):
        _, result = simulate(make_policy(name), spec, "tiny-8")
        a = next(r for r in result.jobs if r.job_id == 1)
        assert a.done and a.gpu_s_by_type["T4"] > 0, a
        v100[name] = a.gpu_s_by_type["V100-16GB"]
    assert v100["fifo-fastest"] == 0 < v100["gavel-fifo"], v100


def test_an_arrival_waits_for_the_next_allocation(simulate, tmp_path):
    """A job that arrives after an allocation does not run, free GPUs or not, until the next
    one (at least 1,920 s after it), where ``fifo-fastest`` starts it at the next round. The
    allocation at time 0 does not count (Gavel's time-0 reset): B, arriving after it, is
    allocated at the next round; C, arriving after that allocation, waits 1,920 s."""
    spec = _jobs(tmp_path, "X,0,20000,1,resnet50,,\nB,10,20000,1,resnet50,,\n"
                           "C,400,20000,1,resnet50,,\n")
    start = {}
    for name in ("gavel-fifo", "fifo-fastest"):
        _, result = simulate(make_policy(name), spec, "tiny-8", round_s=300.0)
        start[name] = [r.first_start_s for r in sorted(result.jobs, key=lambda r: r.job_id)]
    assert start["fifo-fastest"] == pytest.approx([0.0, 300.0, 600.0])
    assert start["gavel-fifo"] == pytest.approx([0.0, 300.0, 2400.0])   # 300 + 1,920 → 2,400
