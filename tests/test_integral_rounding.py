"""The co-optimizer's integral rounding (``LPPolicy(rounding="integral")``,
``lp_baseline.rounding.integral_assignment``) and the ``sia-srpt`` / ``sia-las`` objectives
(``lp_baseline.job_terms.sia_gain``)."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from hsched_env.errors import UnknownNameError
from lp_baseline.job_terms import las_weights, sia_gain, srpt_weights
from lp_baseline.policy import LPPolicy, make_policy
from lp_baseline.rounding import integral_assignment, smaller_on_same_type
from lp_baseline.sia import SIA_LAMBDA, SiaPolicy
from test_sia import make_table, make_view

slow = pytest.mark.slow


def _one_type_table():
    # rows: 1, 2, 4 V100s; 1, 2 T4s
    return make_table([[1, 0], [2, 0], [4, 0], [0, 1], [0, 2]], [10.0, 19.0, 36.0, 4.0, 7.5])


def test_whole_jobs_keep_their_row_and_the_repair_takes_the_best_positive_fit():
    tabs = [_one_type_table() for _ in range(4)]
    view = make_view(tabs, [4, 4])
    rows = np.arange(5)
    allocation = {
        0: (rows, np.array([0.0, 0.0, 1.0, 0.0, 0.0])),      # whole: 4 V100s
        1: (rows, np.array([0.0, 0.0, 0.0, 0.4, 0.6])),      # fractional, on T4s
        2: (rows, np.zeros(5)),                               # left out by the LP
        3: (rows, np.zeros(5)),                               # left out, nothing positive
    }
    values = {0: (rows, np.array([1.0, 2.0, 3.0, 0.5, 0.6])),
              1: (rows, np.array([1.0, 2.0, 3.0, 0.5, 0.6])),
              2: (rows, np.array([0.1, 0.2, 0.3, 0.9, 0.4])),
              3: (rows, np.full(5, -1.0))}
    out = integral_assignment(view, allocation, values, lambda k: rows)
    first = {j: r[0] for j, r in out.items()}
    # job 0 keeps its whole row; job 1 (fractional) goes first among the rest: V100s are
    # full, its best fitting positive row is 2 T4s; job 2 then gets the last... nothing
    # with 2 T4s taken? T4 capacity 4: job 1 takes 2 T4s, job 2 takes 1 T4 (its best fit)
    assert first[0] == 2
    assert first[1] == 4
    assert first[2] == 3
    assert 3 not in out                           # no candidate worth more than waiting
    used = sum(tabs[k].gpus[r] for k, r in first.items())
    assert np.all(used <= view.capacity)
    # fallbacks: the same type with fewer GPUs, largest first; then the job's other
    # candidates worth running, best first (until session 50 the list stopped there: a job
    # whose set node fragmentation blocked, with no smaller set of its type, waited)
    assert out[0] == [2, 1, 0, 4, 3]
    assert out[1] == [4, 3, 2, 1, 0]
    assert out[2] == [3, 4, 2, 1, 0]                 # values 0.9, then 0.4, 0.3, 0.2, 0.1


def test_a_whole_row_worth_less_than_waiting_is_not_run():
    tabs = [_one_type_table(), _one_type_table()]
    view = make_view(tabs, [4, 4])
    rows = np.arange(5)
    # every gain <= 0 (e.g. an ``allowed`` set without a positive one): the LP still fills
    allocation = {0: (rows, np.array([0.0, 1.0, 0.0, 0.0, 0.0])),
                  1: (rows, np.array([0.0, 0.0, 0.0, 1.0, 0.0]))}
    values = {0: (rows, np.full(5, -2.0)), 1: (rows, np.array([-1.0, -1.0, -1.0, 0.5, -1.0]))}
    out = integral_assignment(view, allocation, values, lambda k: rows)
    assert 0 not in out and out[1][0] == 3


def test_smaller_on_same_type_orders_largest_then_fastest():
    table = make_table([[4, 0], [2, 0], [2, 0], [1, 0], [0, 1], [2, 2]],
                       [30.0, 15.0, 18.0, 9.0, 5.0, 40.0])
    assert smaller_on_same_type(table, np.arange(6), 0) == [0, 2, 1, 3]
    # a mixed-type row falls back to one-type rows of its main type (ties: the first type)
    assert smaller_on_same_type(table, np.arange(6), 5) == [5, 2, 1, 3]


def test_sia_gain_is_the_ilp_gain_of_heterosched_ilp():
    tabs = [_one_type_table(), _one_type_table(),
            make_table([[2, 0], [4, 0], [0, 2]], [5.0, 9.0, 2.0])]
    view = make_view(tabs, [4, 4], current=[1, -1, 0], arrival=[0.0, 200.0, 500.0],
                     time_s=1000.0, restarts=[2, 0, 1])
    view = dataclasses.replace(view, remaining_samples=np.array([1e5, 4e5, 2e6]))
    ks = np.arange(3)
    rows = [np.arange(len(t)) for t in tabs]
    gain = sia_gain(view, ks, rows, srpt_weights(view, ks))
    ilp = SiaPolicy(configurations="all", srpt_weight=0.5, scale_up_limit=False)
    expected = np.concatenate([SIA_LAMBDA - cost for _, cost in ilp.problem(view)])
    np.testing.assert_allclose(gain, expected, rtol=1e-12)
    # the job nearest its end weighs the most; the restart factor lowers a running job's
    # other rows below what they are worth to a job that is not running
    w = srpt_weights(view, ks)
    assert w[0] > w[1] > w[2]


def test_las_weights_never_read_the_remaining_work():
    tabs = [_one_type_table() for _ in range(3)]
    view = make_view(tabs, [4, 4])
    view = dataclasses.replace(view, done_samples=np.array([0.0, 5e3, 5e5]),
                               remaining_samples=np.array([1.0, 1e9, 3.0]))
    other = dataclasses.replace(view, remaining_samples=np.array([7e9, 2.0, 1e3]))
    ks = np.arange(3)
    w = las_weights(view, ks, 1800.0)
    np.testing.assert_array_equal(w, las_weights(other, ks, 1800.0))
    assert w[0] >= w[1] > w[2]                      # least attained service first


def test_unknown_rounding_is_named():
    with pytest.raises(UnknownNameError, match="rounding"):
        LPPolicy(rounding="stochastic")


@slow
@pytest.mark.parametrize("objective", ["sia-srpt", "sia-las", "fair-srpt"])
def test_integral_rounding_runs_the_lp_whole_jobs_on_their_row(simulate, objective):
    policy = make_policy("heterosched-lp", objective=objective, rounding="integral",
                         size_cap=False)
    snapshots = []
    inner = policy.decide

    def decide(view, *args, **kwargs):
        out = inner(view, *args, **kwargs)
        snapshots.append({j: (rows.copy(), x.copy()) for j, (rows, x) in
                          policy.allocation.items()})
        return out

    policy.decide = decide
    rec, result = simulate(policy, "gavel:rate=20,jobs=40,seed=7,duration_scale=0.05",
                           "sia-64")
    assert all(r.done for r in result.jobs)
    whole = 0
    for decision, alloc in zip(rec.decisions, snapshots):
        for j, (rows, x) in alloc.items():
            i = np.flatnonzero(x > 1.0 - 1e-6)
            if i.size:
                whole += 1
                assert decision[j][0] == int(rows[i[0]])     # no time slicing
    # the rule was exercised: measured 50 / 45 / 19 whole-job decisions for sia-srpt /
    # sia-las / fair-srpt (fair-srpt had 20+ before the cost model's TF32 change shortened
    # the run)
    assert whole >= 15


def test_numpy_sum_matches_numpy_bit_for_bit():
    """The rounding's share is ``np.sum`` of the support's shares, computed in Python for
    the few values a job has: the same float for every length (numpy sums fewer than 8
    values in order, more pairwise)."""
    from lp_baseline.rounding import _numpy_sum
    rng = np.random.default_rng(5)
    for n in list(range(1, 20)) * 200:
        a = rng.random(n) * 10.0 ** rng.integers(-8, 8, n)
        assert _numpy_sum(a.tolist()) == float(np.sum(a))


def _plain_integral_assignment(view, allocation, values, eligible):
    """The per-job rule ``integral_assignment`` implements, written one job at a time."""
    free = view.capacity.astype(np.float64).copy()
    chosen, rest = {}, []
    for k, j in enumerate(view.job_ids):
        j = int(j)
        rows, x = allocation.get(j, (np.zeros(0, dtype=np.int64), np.zeros(0)))
        vrows, val = values.get(j, (np.zeros(0, dtype=np.int64), np.zeros(0)))
        whole = np.flatnonzero(x > 1.0 - 1e-6)
        if whole.size:
            r = int(rows[whole[0]])
            worth = val[vrows == r]
            if worth.size == 0 or worth[0] > 0:
                chosen[k] = r
                free -= view.candidates[k].gpus[r]
                continue
        best = float(val.max()) if val.size else -np.inf
        if best > 0:
            rest.append((-round(float(x.sum()) / 1e-4), -best, j, k))
    rest.sort()
    for _, _, j, k in rest:
        vrows, val = values[j]
        table = view.candidates[k]
        ok = (val > 0) & np.all(table.gpus[vrows] <= free + 1e-9, axis=1)
        if ok.any():
            i = np.flatnonzero(ok)
            chosen[k] = r = int(vrows[i[np.lexsort((vrows[i], -val[i]))[0]]])
            free -= table.gpus[r]
    out = {}
    for k in sorted(chosen):
        j = int(view.job_ids[k])
        prefs = smaller_on_same_type(view.candidates[k], np.arange(len(view.candidates[k]))
                                     if eligible is None else eligible(k), chosen[k])
        # then the job's other candidates with a positive value, best first (session 50)
        vrows, val = values.get(j, (np.zeros(0, dtype=np.int64), np.zeros(0)))
        for i in sorted(range(len(vrows)), key=lambda i: -val[i]):
            if val[i] > 0 and int(vrows[i]) not in prefs:
                prefs.append(int(vrows[i]))
        out[j] = prefs
    return out


@pytest.mark.parametrize("vector_min_jobs", [0, 10 ** 9], ids=["vectorized", "per-job"])
@pytest.mark.parametrize("seed", range(48))
def test_integral_assignment_is_the_plain_per_job_rule(seed, vector_min_jobs, monkeypatch):
    """Random rounds: whole, fractional and left-out jobs, jobs missing from the allocation or
    the values, values of both signs on subsets of the rows (some repeated), tight capacities
    and roomy ones where the repair places many jobs, and both a per-job eligible set and
    every row (``eligible=None``), with and without the memo; both of its paths."""
    from hsched_env.table_memo import TableMemo
    from lp_baseline import rounding
    monkeypatch.setattr(rounding, "_VECTOR_MIN_JOBS", vector_min_jobs)
    rng = np.random.default_rng(seed)
    A = int(rng.integers(0, 30))
    tabs = []
    for _ in range(A):
        R = int(rng.integers(1, 8))
        g = rng.integers(0, 5, (R, 2))
        g[g.sum(axis=1) == 0, 0] = 1
        tabs.append(make_table(g, rng.uniform(1, 50, R)))
    roomy = seed % 4 == 0             # room for many repairs: past the repair's refits
    view = make_view(tabs, rng.integers(0, 3 * A + 2, 2) * (20 if roomy else 1))
    view = dataclasses.replace(view, job_ids=rng.permutation(1000)[:A].astype(np.int64))
    allocation, values = {}, {}
    for k, t in enumerate(tabs):
        j, R = int(view.job_ids[k]), len(t)
        rows = np.sort(rng.choice(R, int(rng.integers(1, R + 1)), replace=False))
        kind = rng.integers(0, 4)
        x = np.zeros(rows.size)
        if roomy and rng.random() < 0.7:
            kind = 3                                      # left out: the repair places it
        if kind == 0:
            x[rng.integers(rows.size, size=int(rng.integers(1, 3)))] = \
                1.0 - rng.choice([0.0, 5e-7])             # (two X = 1 rows: the first counts)
        elif kind == 1:
            x[:] = rng.dirichlet(np.ones(rows.size)) * rng.uniform(0.1, 1.0)
        if rng.random() < 0.9:
            allocation[j] = (rows, x)
        if rng.random() < 0.9:
            vrows = np.sort(rng.choice(R, int(rng.integers(0, R + 1)),
                                       replace=bool(rng.random() < 0.2)))   # repeats too
            values[j] = (vrows, rng.normal(0.5, 1.0, vrows.size))
    subsets = [np.sort(rng.choice(len(t), int(rng.integers(1, len(t) + 1)), replace=False))
               for t in tabs]
    for eligible in (None, lambda k: subsets[k]):
        want = _plain_integral_assignment(view, allocation, values, eligible)
        assert integral_assignment(view, allocation, values, eligible) == want
        memo = TableMemo()
        for _ in range(2):
            assert integral_assignment(view, allocation, values, eligible,
                                       fallbacks=memo) == want


def test_the_ftf_guard_lifts_a_job_past_its_projected_ftf_above_the_top_weight():
    """``ftf_guard``: a job whose projected finish-time fairness ρ̂ (time in the system so far
    plus its remaining time, over its fair-share time) exceeds the guard weighs
    ``10 · ρ̂ / ftf_guard``, above the top SRPT weight, and so takes the one GPU the others
    would otherwise get first."""
    from lp_baseline.job_terms import SRPT_WEIGHT_MAX, projected_ftf
    tabs = [_one_type_table() for _ in range(3)]
    view = make_view(tabs, [1, 0], arrival=[0.0, 0.0, 9e5], time_s=1e6)
    # reference throughput 1: remaining time = remaining samples; fair-share time = 1e6 s
    # (3 jobs of one GPU on 1 GPU: contention 3, so 3e6 s)
    view = dataclasses.replace(view, remaining_samples=np.array([1e3, 9e5, 1e3]))
    ks = np.arange(3)
    np.testing.assert_allclose(projected_ftf(view, ks),
                               [(1e6 + 1e3) / 3e6, (1e6 + 9e5) / 3e6, (1e5 + 1e3) / 3e6])
    plain, guarded = srpt_weights(view, ks), srpt_weights(view, ks, ftf_guard=0.5)
    assert plain[1] < plain[0] == plain[2]
    # above the top weight by its projection over the guard: 10 × 0.633 / 0.5
    assert guarded[1] == pytest.approx(SRPT_WEIGHT_MAX * (1.9e6 / 3e6) / 0.5)
    assert list(guarded[[0, 2]]) == list(plain[[0, 2]])

    def runs(policy) -> set:
        return {j for j, rows in policy.decide(view).items() if rows}
    assert 1 not in runs(LPPolicy())
    assert runs(LPPolicy(ftf_guard=0.5)) == {1}
    assert runs(LPPolicy(ftf_guard=0.7)) == runs(LPPolicy())      # 0.63 is under the guard


def test_sia_srpt_is_guarded_by_default_and_off_turns_the_guard_off():
    """``LPPolicy()``: ``sia-srpt`` with the guard at ``DEFAULT_FTF_GUARD`` (2); ``"off"``: none;
    the other objectives: none. A job waiting long enough to project ρ = 2.63 runs under the
    default and waits with the guard off."""
    from lp_baseline.job_terms import projected_ftf
    from lp_baseline.policy import DEFAULT_FTF_GUARD
    assert LPPolicy().ftf_guard == DEFAULT_FTF_GUARD == 2.0
    assert LPPolicy(ftf_guard="off").ftf_guard is None
    for objective in ("sia-las", "fair-srpt", "max-min"):
        assert LPPolicy(objective=objective).ftf_guard is None
        assert LPPolicy(objective=objective, ftf_guard="off").ftf_guard is None
    tabs = [_one_type_table() for _ in range(3)]
    view = make_view(tabs, [1, 0], arrival=[6.5e6, 0.0, 6.9e6], time_s=7e6)
    view = dataclasses.replace(view, remaining_samples=np.array([1e3, 9e5, 1e3]))
    np.testing.assert_allclose(projected_ftf(view, np.arange(3)),
                               [(5e5 + 1e3) / 3e6, (7e6 + 9e5) / 3e6, (1e5 + 1e3) / 3e6])

    def runs(policy) -> set:
        return {j for j, rows in policy.decide(view).items() if rows}
    assert runs(LPPolicy()) == runs(LPPolicy(ftf_guard=2.0)) == {1}
    assert 1 not in runs(LPPolicy(ftf_guard="off"))


def test_the_guard_latches_a_job_keeps_the_top_weight_when_its_projection_falls_back():
    """Once a job's projected ρ has passed the guard it keeps the top weight until it
    finishes: two arrivals raise the contention and bring job 1's projection back under 2,
    and the guarded policy keeps running it where a fresh one (that never saw it above the
    guard) would preempt it for a shorter job. ``reset`` forgets the latch."""
    from lp_baseline.job_terms import projected_ftf
    tabs = [_one_type_table() for _ in range(5)]
    first = make_view(tabs[:3], [1, 0], arrival=[6.5e6, 0.0, 6.9e6], time_s=7e6)
    first = dataclasses.replace(first, remaining_samples=np.array([1e3, 9e5, 1e3]))
    later = make_view(tabs, [1, 0], arrival=[6.5e6, 0.0, 6.9e6, 7.05e6, 7.05e6],
                      time_s=7.1e6, current=[-1, 0, -1, -1, -1])
    later = dataclasses.replace(later, remaining_samples=np.array([1e3, 8e5, 1e3, 1e3, 1e3]))
    assert projected_ftf(first, np.arange(3))[1] > 2.0 > projected_ftf(later, np.arange(5))[1]

    def runs(policy, view) -> set:
        return {j for j, rows in policy.decide(view).items() if rows}
    guarded = LPPolicy()
    assert runs(guarded, first) == {1}
    assert runs(guarded, later) == {1}                 # latched: job 1 keeps the GPU
    assert 1 not in runs(LPPolicy(), later)            # never saw it above the guard
    guarded.reset(None, 0)
    assert 1 not in runs(guarded, later)


def test_the_guard_serves_the_most_starved_guarded_job_first():
    """Guarded jobs weigh ``10 · ρ̂ / ρ_max``: of two jobs over the guard (ρ̂ 2.63 and 2.17)
    and a short unguarded job at the top SRPT weight, 10, the one GPU goes to the most
    starved — whichever index it has (with one flat weight the three tied). A latched job
    whose projection fell back under the guard keeps the weight 10 (``max(1, ρ̂ / ρ_max)``)."""
    from lp_baseline.job_terms import SRPT_WEIGHT_MAX, guard_weights, projected_ftf
    tabs = [_one_type_table() for _ in range(3)]

    def view_of(arrival, remaining):
        v = make_view(tabs, [1, 0], arrival=arrival, time_s=7e6)
        return dataclasses.replace(v, remaining_samples=np.array(remaining))

    for starved, other in ((0, 2), (2, 0)):
        arrival, remaining = [0.0] * 3, [0.0] * 3
        arrival[starved], remaining[starved] = 0.0, 9e5        # ρ̂ = 7.9e6 / 3e6 = 2.63
        arrival[other], remaining[other] = 1e6, 5e5            # ρ̂ = 6.5e6 / 3e6 = 2.17
        arrival[1], remaining[1] = 6.9e6, 1e3                  # short and fresh: weight 10
        view = view_of(arrival, remaining)
        ks = np.arange(3)
        proj = projected_ftf(view, ks)
        np.testing.assert_allclose(proj[[starved, other]], [7.9e6 / 3e6, 6.5e6 / 3e6])
        w = srpt_weights(view, ks, ftf_guard=2.0)
        np.testing.assert_allclose(w[[starved, other]], SRPT_WEIGHT_MAX * proj[[starved, other]]
                                   / 2.0)
        assert w[1] == SRPT_WEIGHT_MAX < w[other] < w[starved]
        assert {j for j, rows in LPPolicy().decide(view).items() if rows} == {starved}
    # latched under the guard: the top weight, not less
    w, over = guard_weights(view, ks, 3.0)
    assert not over.any() and list(w) == [SRPT_WEIGHT_MAX] * 3
    latched = srpt_weights(view, ks, ftf_guard=3.0, guarded=np.array([False, False, True]))
    assert latched[2] == SRPT_WEIGHT_MAX
    # a degenerate job (no work: ρ̂ infinite) weighs the top weight, not inf
    empty = dataclasses.replace(view, work_samples=np.array([0.0, 1e6, 1e6]),
                                remaining_samples=np.array([0.0, 1e6, 1e6]))
    with np.errstate(divide="ignore", invalid="ignore"):
        w, over = guard_weights(empty, ks, 2.0)
    assert over[0] and w[0] == SRPT_WEIGHT_MAX and np.isfinite(w).all()


def test_the_guard_projects_each_jobs_ftf_once_a_decision(monkeypatch):
    """``LPPolicy`` hands the ρ̂ it latches the guard with on to the SRPT weights: one
    ``projected_ftf`` per decision, and the same allocation as the weights computing their
    own ρ̂."""
    import lp_baseline.job_terms as job_terms
    import lp_baseline.policy as policy_module
    tabs = [_one_type_table() for _ in range(3)]
    view = dataclasses.replace(make_view(tabs, [1, 0], arrival=[0.0, 1e6, 6.9e6], time_s=7e6),
                               remaining_samples=np.array([9e5, 5e5, 1e3]))
    before = LPPolicy().decide(view)
    calls, projected_ftf = [], job_terms.projected_ftf

    def counted(v, ks):
        calls.append(len(ks))
        return projected_ftf(v, ks)

    monkeypatch.setattr(policy_module, "projected_ftf", counted)
    monkeypatch.setattr(job_terms, "projected_ftf", counted)
    policy = LPPolicy()
    assert policy.decide(view) == before
    assert calls == [3]


def test_the_ftf_guard_is_refused_where_it_would_be_ignored():
    from hsched_env.errors import ConfigError
    with pytest.raises(ConfigError, match="ftf_guard.*sia-srpt.*'sia-las'"):
        LPPolicy(objective="sia-las", ftf_guard=2.0)
    for bad in (0, -1.0, float("nan"), float("inf"), True, "2", "none"):
        with pytest.raises(ConfigError, match="ftf_guard.*positive"):
            LPPolicy(ftf_guard=bad)


def test_round_restart_counts_what_a_restart_leaves_of_the_round_in_the_gain():
    """``round_restart``: a candidate that costs a restart delivers ``(round_s − restart_s) /
    round_s`` of its goodput in the round the LP decides, so ``G`` is multiplied by that (on
    top of Sia's restart factor for a running job's other candidates): a running job's other
    rows and every row of a job that ran before and waits; a running job's current row and a
    first start keep their gains bit for bit."""
    from lp_baseline.job_terms import table_goodput
    from lp_baseline.sia import config_cost, restart_factor
    tabs = [_one_type_table() for _ in range(4)]
    view = make_view(tabs, [4, 4], current=[2, -1, -1, -1], restarts=[1, 1, 0, 0],
                     time_s=1000.0)
    # job 0 runs (row 2), job 1 ran before and waits, job 2 never ran, job 3 was preempted
    # after its first start without a restart yet (what counts is having run, not restarts)
    view = dataclasses.replace(view, attained_s=np.array([600.0, 300.0, 0.0, 300.0]))
    ks, rows, w = np.arange(4), [np.arange(5)] * 4, np.ones(4)
    before = sia_gain(view, ks, rows, w).reshape(4, 5)
    after = sia_gain(view, ks, rows, w, round_restart=True).reshape(4, 5)
    g = table_goodput(tabs[0])
    this_round = (300.0 - 60.0) / 300.0
    pollux = restart_factor(1000.0, 1, 60.0)
    others = [0, 1, 3, 4]
    np.testing.assert_array_equal(after[0, 2], before[0, 2])
    np.testing.assert_allclose(before[0, others],
                               SIA_LAMBDA - config_cost(g[others] * pollux), rtol=1e-12)
    np.testing.assert_allclose(after[0, others],
                               SIA_LAMBDA - config_cost(g[others] * pollux * this_round),
                               rtol=1e-12)
    np.testing.assert_array_equal(before[1], before[2])         # no factor while waiting
    np.testing.assert_allclose(after[1], SIA_LAMBDA - config_cost(g * this_round), rtol=1e-12)
    np.testing.assert_array_equal(after[3], after[1])
    np.testing.assert_array_equal(after[2], before[2])
    assert np.all(after <= before) and np.all(after[[1, 3]] < before[[1, 3]])
    # without restart awareness there is no restart to count
    np.testing.assert_array_equal(
        sia_gain(view, ks, rows, w, restart_aware=False, round_restart=True),
        sia_gain(view, ks, rows, w, restart_aware=False))


def test_round_restart_is_a_sia_objective_switch():
    """``LPPolicy(round_restart=)`` takes True or False, and only under ``sia-srpt`` /
    ``sia-las`` (the objectives whose gains it discounts)."""
    from hsched_env.errors import ConfigError
    assert LPPolicy().round_restart is False
    assert LPPolicy(objective="sia-las", round_restart=True).round_restart is True
    with pytest.raises(ConfigError, match="round_restart"):
        LPPolicy(objective="fair-srpt", round_restart=True)
    with pytest.raises(ConfigError, match="True or False"):
        LPPolicy(round_restart=1)
    with pytest.raises(ConfigError, match="restart_aware=False"):
        LPPolicy(round_restart=True, restart_aware=False)


def test_round_restart_reaches_every_policy_on_a_sia_objective():
    """``--round-restart`` is read by the co-optimizer's policies whose objective can be a
    ``sia-*`` one, ``heterosched-lp-las`` (fixed to ``sia-las``) included, and by none of the
    others; ``make_policy`` hands it on."""
    from lp_baseline.registry import policy_options
    for name in ("heterosched-lp", "heterosched-lp-las", "lp-on-change", "topk", "pop-4",
                 "support-reuse"):
        assert "round_restart" in policy_options(name), name
    for name in ("heterosched-lp-v0", "heterosched-lp-v1", "gavel", "sia", "fifo"):
        assert "round_restart" not in policy_options(name), name
    assert make_policy("heterosched-lp-las", round_restart=True).round_restart is True
