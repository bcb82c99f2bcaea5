"""Reusing what did not change between decisions (``LPPolicy(memoize=True)``, the default):
the normalizer memo and the reuse of an identical LP's solution give the schedule that
recomputing everything gives, decision for decision."""

from __future__ import annotations

import dataclasses
import math

import numpy as np
import pytest

from hsched_env.cluster import get_cluster
from hsched_env.simulator import SimConfig, Simulator
from hsched_env.workloads import load_workload
from lp_baseline.instances import random_problem
from lp_baseline.problem import OBJECTIVE_FIELDS, OBJECTIVES, problem_fingerprint
from lp_baseline.registry import make_policy
from lp_baseline.solver import solve_allocation

slow = pytest.mark.slow


class _Recorder:
    """The policy, recording every decision."""

    def __init__(self, inner):
        self.inner, self.name, self.decisions = inner, inner.name, []

    def reset(self, cluster, seed):
        self.inner.reset(cluster, seed)

    def decide(self, view):
        out = self.inner.decide(view)
        self.decisions.append(sorted((int(j), tuple(np.atleast_1d(r).tolist()))
                                     for j, r in out.items()))
        return out

    @property
    def last_stats(self):
        return self.inner.last_stats

    def summary(self):
        return self.inner.summary()


def _run(cluster, spec, name, memoize, **cfg):
    c = get_cluster(cluster)
    policy = _Recorder(make_policy(name, memoize=memoize))
    result = Simulator(c, load_workload(spec, c, throughputs=cfg.pop("throughputs", None)),
                       policy, SimConfig(**cfg)).run()
    return policy.decisions, result.metrics(), policy.inner.summary()


CASES = [("gavel-108", "gavel:rate=4,jobs=40,seed={s},multi_gpu=0", "gavel",
          dict(throughputs="gavel")),
         ("gavel-108", "gavel:rate=4,jobs=40,seed={s},multi_gpu=0", "gavel-sticky",
          dict(throughputs="gavel")),
         ("sia-64", "gavel:rate=6,jobs=24,seed={s},mix=llm,duration_scale=0.2",
          "heterosched-lp", {}),
         ("sia-64", "gavel:rate=6,jobs=24,seed={s},mix=llm,duration_scale=0.2",
          "heterosched-lp-v1", {}),
         ("sia-64", "gavel:rate=6,jobs=24,seed={s},duration_scale=0.2", "gavel", {}),
         ("gavel-108", "gavel:rate=6,jobs=50,seed={s},multi_gpu=0", "gavel-resets",
          dict(throughputs="gavel"))]


@pytest.mark.parametrize("seed", range(4))
@pytest.mark.parametrize("cluster, spec, name, cfg", CASES)
@slow
def test_memoized_decisions_equal_recomputed_ones(cluster, spec, name, cfg, seed):
    spec = spec.format(s=seed)
    fresh = _run(cluster, spec, name, False, **dict(cfg))
    memo = _run(cluster, spec, name, True, **dict(cfg))
    assert memo[0] == fresh[0]                      # every round's assignment
    wall = ("decision", "wall_s", "lp_reused", "rounding_reused")
    assert {k: v for k, v in memo[1].items() if not any(w in k for w in wall)} == \
        {k: v for k, v in fresh[1].items() if not any(w in k for w in wall)}
    assert fresh[2]["lp_reused"] == 0 and fresh[2]["rounding_reused"] == 0
    if name in ("gavel", "gavel-sticky"):
        # max-min over fixed configurations: the LP changes only when the job set does
        assert memo[2]["lp_reused"] > 0
    if name == "gavel-sticky":
        # rounds that repeat the previous one's inputs skip the job-level rounding's dry-run
        # placement (Gavel's own per-type queues count GPUs and have no dry run to skip)
        assert memo[2]["rounding_reused"] > 0


def test_memo_on_a_small_run_equals_recomputing():
    spec = "gavel:rate=3,jobs=12,seed=5,multi_gpu=0"
    fresh = _run("gavel-108", spec, "gavel", False, throughputs="gavel")
    memo = _run("gavel-108", spec, "gavel", True, throughputs="gavel")
    assert memo[0] == fresh[0] and memo[2]["lp_reused"] > 0


def test_a_rejected_answer_is_not_reused(monkeypatch):
    """A solve whose answer the policy rejects (here: NaN once) falls back once; the next
    decision solves again instead of reusing it."""
    import lp_baseline.parallel_parts as parts_mod
    real, calls = parts_mod.solve_allocation, {"n": 0}

    def nan_once(problem, objective, **kw):
        res = real(problem, objective, **kw)
        calls["n"] += 1
        if calls["n"] == 3:
            return dataclasses.replace(res, x=np.full(problem.n_candidates, np.nan))
        return res

    monkeypatch.setattr(parts_mod, "solve_allocation", nan_once)
    spec = "gavel:rate=3,jobs=12,seed=5,multi_gpu=0"
    _, metrics, summary = _run("gavel-108", spec, "gavel", True, throughputs="gavel")
    assert summary["lp_fallbacks"] == 1 and summary["lp_reused"] > 0
    assert metrics["jobs_completed"] == 12


def test_gavel_reuses_the_lp_between_arrivals_and_completions():
    decisions, metrics, summary = _run("gavel-108", "gavel:rate=2,jobs=10,seed=1,multi_gpu=0",
                                       "gavel", True, throughputs="gavel")
    assert summary["lp_reused"] > 0.3 * summary["lp_solves"]
    assert metrics["jobs_completed"] == 10


@pytest.mark.parametrize("objective", OBJECTIVES)
def test_fields_outside_the_objective_do_not_change_the_solve(objective):
    """``OBJECTIVE_FIELDS`` is what the fingerprint hashes: every other optional field may
    change without changing the solution (else a reused solution could be wrong)."""
    rng = np.random.default_rng(7)
    p = random_problem(12, rng, n_types=3, total_gpus=96)
    if objective in ("sia-srpt", "sia-las"):
        p = dataclasses.replace(p, gain=rng.normal(size=p.n_candidates))
    p = dataclasses.replace(p, priority=rng.uniform(0.5, 2, p.n_jobs),
                            switch=rng.uniform(0.5, 1, p.n_candidates))
    base = solve_allocation(p, objective, floor=0.5)
    optional = ("remaining", "age_s", "ftf_denominator_s", "priority", "switch", "gain")
    changed = {}
    for name in optional:
        if name in OBJECTIVE_FIELDS[objective] or getattr(p, name) is None:
            continue
        scale = rng.uniform(0.5, 1.0 if name == "switch" else 2.0, getattr(p, name).shape)
        changed[name] = getattr(p, name) * scale          # (switch stays in (0, 1])
    if not changed:
        pytest.skip(f"{objective} reads every optional field set here")
    q = dataclasses.replace(p, **changed)
    assert problem_fingerprint(q, objective) == problem_fingerprint(p, objective)
    other = solve_allocation(q, objective, floor=0.5)
    assert np.array_equal(other.x, base.x) and other.objective == base.objective


@pytest.mark.parametrize("objective", OBJECTIVES)
def test_fields_the_objective_reads_change_the_fingerprint(objective):
    rng = np.random.default_rng(3)
    p = random_problem(8, rng, n_types=3, total_gpus=64)
    p = dataclasses.replace(p, gain=rng.normal(size=p.n_candidates),
                            priority=rng.uniform(0.5, 2, p.n_jobs),
                            switch=rng.uniform(0.5, 1, p.n_candidates))
    for name in ("thr", "norm", "capacity") + OBJECTIVE_FIELDS[objective]:
        factor = {"switch": 0.9, "capacity": 2.0}.get(name, 1.5)   # capacities stay whole
        q = dataclasses.replace(p, **{name: getattr(p, name) * factor})
        assert problem_fingerprint(q, objective) != problem_fingerprint(p, objective), name


@pytest.mark.parametrize("method", ["ipm", "colgen"])
def test_lp_method_reaches_the_solver_and_finds_the_same_optimum(monkeypatch, method):
    import lp_baseline.parallel_parts as parts_mod
    from hsched_env.errors import UnknownNameError
    from lp_baseline.policy import LPPolicy
    seen, real = [], parts_mod.solve_allocation

    def record(problem, objective, **kw):
        seen.append(kw.get("method"))
        return real(problem, objective, **kw)

    monkeypatch.setattr(parts_mod, "solve_allocation", record)
    spec = "gavel:rate=3,jobs=8,seed=5,mix=llm,duration_scale=0.2"
    _run("sia-64", spec, "heterosched-lp", True)
    assert seen and all(m == "auto" for m in seen)          # the default
    seen.clear()
    c = get_cluster("sia-64")
    Simulator(c, load_workload(spec, c), make_policy("heterosched-lp", lp_method=method),
              SimConfig()).run()
    assert seen and all(m == method for m in seen)
    with pytest.raises(UnknownNameError, match="LP method"):
        LPPolicy(lp_method="barrier")
    for s in range(5):
        p = random_problem(30, np.random.default_rng(s), n_types=4, total_gpus=256)
        for objective in ("max-min", "max-throughput"):
            a = solve_allocation(p, objective)
            b = solve_allocation(p, objective, method=method)
            assert b.status == a.status == "optimal"
            assert b.objective == pytest.approx(a.objective, rel=1e-6, abs=1e-9)


def test_table_memos_are_not_copied_with_the_policy():
    """The per-table memos hold candidate tables: a deep copy of a policy (the rank
    environment copies its LP every round) or a pickled one starts them empty instead of
    copying the tables, and a hit needs the very table it was computed for."""
    import copy
    import pickle

    from hsched_env.table_memo import TableMemo

    memo = TableMemo()
    table, other = object(), object()
    calls = []
    assert memo.get_for(table, id(table), lambda: calls.append(1) or "a") == "a"
    assert memo.get_for(table, id(table), lambda: calls.append(1) or "b") == "a"
    assert memo.get_for(other, id(table), lambda: calls.append(1) or "c") == "c"  # same id
    assert len(calls) == 2
    assert len(copy.deepcopy(memo)) == 0 and len(copy.copy(memo)) == 0
    assert len(pickle.loads(pickle.dumps(memo))) == 0
    assert len(memo) == 1


def test_gavel_resets_solves_on_gavels_schedule():
    """``gavel-resets`` re-solves only when the job set changed and at least
    ``GAVEL_MIN_RESET_S`` after the last solve (as in Gavel, a solve at time 0 does not start
    the interval: the next change re-solves at once); between solves new jobs wait, and every
    job finishes."""
    from lp_baseline.policy import GAVEL_MIN_RESET_S, LPPolicy

    solves = []
    real = LPPolicy._solve

    def recording(self, view, *a, **kw):
        solves.append((view.time_s, frozenset(self._x), frozenset(view.job_ids.tolist())))
        return real(self, view, *a, **kw)

    mp = pytest.MonkeyPatch()
    mp.setattr(LPPolicy, "_solve", recording)
    try:
        _, metrics, summary = _run("gavel-108", "gavel:rate=6,jobs=40,seed=2,multi_gpu=0",
                                   "gavel-resets", True, throughputs="gavel")
    finally:
        mp.undo()
    assert metrics["jobs_completed"] == 40
    assert summary["lp_solves"] == len(solves) > 3
    times = [t for t, _, _ in solves]
    assert times[0] == 0.0 and times[1] < GAVEL_MIN_RESET_S          # Gavel's time-0 reset
    assert min(b - a for a, b in zip(times[1:], times[2:])) >= GAVEL_MIN_RESET_S
    for _, allocated, active in solves[1:]:
        assert allocated != active          # only a changed job set triggers a solve
    # the same LP re-solved at every change instead: more solves
    _, _, every = _run("gavel-108", "gavel:rate=6,jobs=40,seed=2,multi_gpu=0", "gavel", True,
                       throughputs="gavel")
    assert every["lp_solves"] > summary["lp_solves"]


@pytest.mark.parametrize("kwargs, field", [
    (dict(resolve="on-change", min_resolve_interval_s=-1.0), "min_resolve_interval_s"),
    (dict(resolve="on-change", min_resolve_interval_s=float("nan")), "min_resolve_interval_s"),
    (dict(resolve="every-round", min_resolve_interval_s=60.0), "min_resolve_interval_s")])
def test_min_resolve_interval_is_checked(kwargs, field):
    from hsched_env.errors import ConfigError
    from lp_baseline.policy import LPPolicy
    with pytest.raises(ConfigError, match=field):
        LPPolicy("x", **kwargs)


def test_static_lp_reuse_is_a_cache_copies_drop():
    """``gavel``'s max-min reads no per-round field: a repeat of the job set, tables,
    normalizers and capacity reuses the last accepted answer without building the LP (counted
    in ``lp_reused``, identical decisions: ``test_memoized_decisions_equal_recomputed_ones``);
    copies and unpickled policies start without it (it pins candidate tables)."""
    import copy
    import pickle

    c = get_cluster("gavel-108")
    policy = make_policy("gavel")
    Simulator(c, load_workload("gavel:rate=3,jobs=12,seed=5,multi_gpu=0", c,
                               throughputs="gavel"),
              policy, SimConfig(throughputs="gavel", max_time_s=20_000)).run()
    assert policy._static_lp is not None and policy.summary()["lp_reused"] > 0
    assert copy.deepcopy(policy)._static_lp is None
    assert pickle.loads(pickle.dumps(policy))._static_lp is None
    # an objective that reads per-round fields never takes this path
    sia = make_policy("heterosched-lp")
    Simulator(c, load_workload("gavel:rate=3,jobs=12,seed=5", c), sia,
              SimConfig(max_time_s=20_000)).run()
    assert sia._static_lp is None


# ---------------------------------------------------------------- fast paths, same values
def test_csc_assembly_matches_scipys_coo_conversion():
    """``formulation._csc`` builds the canonical CSC arrays of the triplets directly; they
    must be the ones ``coo_matrix(...).tocsc()`` makes (HiGHS receives them as they are)."""
    import scipy.sparse as sp
    from lp_baseline.formulation import _csc
    rng = np.random.default_rng(3)
    for _ in range(50):
        m, ncol = int(rng.integers(1, 30)), int(rng.integers(1, 40))
        dense = (rng.random((m, ncol)) < 0.2) * rng.normal(size=(m, ncol))
        cols, rows = np.nonzero(dense.T)             # column by column, rows ascending
        # interleave the columns at random, each column's rows still in ascending order
        key = rng.random(rows.size)
        for c in np.unique(cols):
            at = np.flatnonzero(cols == c)
            key[at] = np.sort(key[at])
        order = np.argsort(key)
        r, c, v = rows[order], cols[order], dense[rows[order], cols[order]]
        got = _csc(v, r, c, m, ncol)
        want = sp.coo_matrix((v, (r, c)), shape=(m, ncol)).tocsc()
        assert got.shape == want.shape
        for name in ("indptr", "indices", "data"):
            a, b = getattr(got, name), getattr(want, name)
            assert a.dtype == b.dtype and np.array_equal(a, b), name


def test_median_helper_is_numpys_median():
    from lp_baseline.job_terms import _median
    rng = np.random.default_rng(5)
    for n in list(range(1, 25)) + [100, 101]:
        x = np.round(rng.random(n) * 10.0 ** rng.integers(0, 6), int(rng.integers(0, 3)))
        assert _median(x) == float(np.median(x))
    assert math.isnan(_median(np.array([1.0, math.nan, 2.0])))


def test_table_goodput_cache_gives_the_uncached_gains():
    from hsched_env.table_memo import TableMemo
    from lp_baseline.job_terms import sia_gain, srpt_weights
    view = _sia_view()
    ks = np.arange(view.num_active)
    rows = [np.arange(len(t)) for t in view.candidates]
    w = srpt_weights(view, ks)
    memo = TableMemo()
    plain = sia_gain(view, ks, rows, w)
    for _ in range(2):                               # filled, then read
        cached = sia_gain(view, ks, rows, w, table_cache=memo)
        assert np.array_equal(plain, cached)
    assert len(memo) == len({id(t) for t in view.candidates})


def _sia_view():
    """A mid-run view on ``sia-64`` with running and waiting jobs."""
    from lp_baseline.baselines import BASELINES
    cluster = get_cluster("sia-64")
    workload = load_workload("gavel:rate=20,jobs=40,seed=2,mix=llm,duration_scale=0.2", cluster)
    sim = Simulator(cluster, workload, BASELINES["greedy"](), SimConfig())
    sim.reset()
    policy = BASELINES["greedy"]()
    policy.reset(cluster, 0)
    for _ in range(6):
        view = sim.next_view()
        sim.place_decision(policy.decide(view))
        sim.advance()
    view = sim.next_view()
    assert (view.current >= 0).any() and (view.current < 0).any()
    return view


@pytest.mark.parametrize("objective", ["max-min", "sia-srpt", "max-throughput", "ftf"])
def test_build_spec_matrix_is_canonical_csc(objective):
    """HiGHS receives ``build_spec``'s CSC arrays as they are: they must be the canonical
    form (rows ascending within each column, no duplicates) of the same matrix."""
    import scipy.sparse as sp
    from lp_baseline.formulation import build_spec
    rng = np.random.default_rng(11)
    for _ in range(5):
        p = random_problem(15, rng, n_types=3, total_gpus=128)
        if objective == "sia-srpt":
            p = dataclasses.replace(p, gain=rng.normal(size=p.n_candidates))
        fit, run = p.fits(), p.runnable()
        spec = build_spec(p, objective, fit, run, run.copy(), 1.0 / p.norm)
        a = spec.csc                                 # what HighsDriver passes
        canonical = sp.csc_matrix(spec.a.toarray())
        assert spec.a.format == "csc" and spec.shape == canonical.shape == a.shape
        assert a.indptr.dtype == a.indices.dtype == np.int32 and a.data.dtype == np.float64
        for name in ("indptr", "indices", "data"):
            assert np.array_equal(getattr(a, name), getattr(canonical, name)), name
            assert np.array_equal(getattr(spec.a, name), getattr(canonical, name)), name


def test_allowed_rows_in_one_pass_equal_the_per_job_rows():
    """``_allowed_rows`` (every job's ``allowed`` rows checked at once) gives each job the
    rows ``LPPolicy._eligible_rows`` gives it one at a time: ascending, unique, in range —
    for rows as a ranker hands them over and for unsorted, repeated, out-of-range, empty,
    list and 2-D ones."""
    from lp_baseline.policy import _allowed_rows
    view = _sia_view()
    policy = make_policy("heterosched-lp")
    policy.reset(get_cluster("sia-64"), 0)
    rng = np.random.default_rng(5)
    sizes = [len(t) for t in view.candidates]
    cases = [[np.flatnonzero(rng.random(n) < 0.5) for n in sizes],       # a ranker's
             [np.arange(n) for n in sizes]]
    messy = []
    for k, n in enumerate(sizes):
        pick = rng.integers(-2, n + 3, size=int(rng.integers(0, 8)))
        messy.append(pick.tolist() if k % 3 == 0 else pick)               # lists too
    messy[0] = np.zeros(0, dtype=np.int64)
    messy[1] = np.array([[1, 0], [0, 2]])                                  # 2-D
    cases.append(messy)
    for allowed in cases:
        got = _allowed_rows(view, allowed)
        assert len(got) == view.num_active
        for k in range(view.num_active):
            want = policy._eligible_rows(view, k, allowed)
            assert got[k].dtype == np.int64
            assert np.array_equal(got[k], want), (k, allowed[k])


def test_sia_gains_are_the_per_job_formula():
    """The vectorized gains equal, bit for bit, the formula applied one job at a time:
    ``w_j · (λ − min(G^p, clip))``, G times the restart factor on a running job's other
    rows."""
    from lp_baseline.job_terms import sia_gain, srpt_weights
    from lp_baseline.sia import SIA_LAMBDA, config_cost, goodput, restart_factor
    view = _sia_view()
    ks = np.arange(view.num_active)
    rows = [np.arange(len(t)) for t in view.candidates]
    w = srpt_weights(view, ks)
    for restart_aware in (True, False):
        want = []
        for i, k in enumerate(ks):
            table = view.candidates[k]
            thr = np.asarray(table.samples_per_s, dtype=np.float64)
            valid = np.flatnonzero(np.isfinite(thr) & (thr > 0))
            g = np.zeros(len(table))
            g[valid] = goodput(table, valid)
            cur = int(view.current[k])
            if restart_aware and cur >= 0:
                f = restart_factor(view.time_s - view.arrival_s[k], int(view.restarts[k]),
                                   view.restart_s)
                g = np.where(np.arange(len(table)) == cur, g, g * f)
            want.append(w[i] * (SIA_LAMBDA - config_cost(g)))
        got = sia_gain(view, ks, rows, w, restart_aware=restart_aware)
        assert np.array_equal(got, np.concatenate(want))
        # subsets of the rows (every other one; each job's last; none) index the same gains
        for pick in (lambda r: r[::2], lambda r: r[-1:], lambda r: r[:0]):
            sub = [pick(r) for r in rows]
            got = sia_gain(view, ks, sub, w, restart_aware=restart_aware)
            assert np.array_equal(got, np.concatenate([g[r] for g, r in zip(want, sub)]))
    with pytest.raises(ValueError, match="once"):
        sia_gain(view, np.array([0, 0]), [rows[0], rows[0]], w[:2])


def test_integral_rounding_fallback_memo_gives_the_same_lists():
    from hsched_env.table_memo import TableMemo
    from lp_baseline.rounding import integral_assignment
    view = _sia_view()
    policy = make_policy("heterosched-lp")
    policy.reset(view.cluster, 0)
    policy.decide(view)
    values = policy._values(view, None, policy._norms(view))
    eligible = lambda k: policy._eligible(view, k, None)      # noqa: E731
    plain = integral_assignment(view, policy.allocation, values, eligible)
    assert any(len(v) > 2 for v in plain.values())
    memo = TableMemo()
    # filled first with fewer eligible rows: those lists must not come back for all rows
    fewer = integral_assignment(view, policy.allocation, values,
                                lambda k: eligible(k)[::2], fallbacks=memo)
    assert fewer != plain
    for _ in range(2):                               # filled, then read
        got = integral_assignment(view, policy.allocation, values, eligible, fallbacks=memo)
        assert got == plain


def test_smaller_on_same_type_memo_filters_the_whole_table_order():
    """The memoized fallbacks (the table's whole order, filtered by the eligible rows) equal
    the plain ones on random subsets of rows of real candidate tables."""
    from hsched_env.table_memo import TableMemo
    from lp_baseline.rounding import smaller_on_same_type
    view = _sia_view()
    rng = np.random.default_rng(4)
    memo = TableMemo()
    longer = 0
    for table in view.candidates:
        for _ in range(40):
            rows = np.sort(rng.choice(len(table), size=int(rng.integers(1, len(table) + 1)),
                                      replace=False))
            row = int(rng.integers(len(table)))
            plain = smaller_on_same_type(table, rows, row)
            assert smaller_on_same_type(table, rows, row, memo=memo) == plain
            assert smaller_on_same_type(table, rng.permutation(rows), row, memo=memo) == plain
            with_dup = np.r_[rows, rows[:1]]                  # a repeated row: the plain path
            assert (smaller_on_same_type(table, with_dup, row, memo=memo)
                    == smaller_on_same_type(table, with_dup, row))
            longer += len(plain) > 2
        for row in range(len(table)):                         # None: every row of the table
            every = smaller_on_same_type(table, np.arange(len(table)), row)
            assert smaller_on_same_type(table, None, row) == every
            assert smaller_on_same_type(table, None, row, memo=memo) == every
    assert longer > 20


def test_planned_rates_are_numpys_sums_to_the_last_bit():
    """``DeliveryTracker.record_plan``'s Σ X thr per job (``delivery._planned_rates``: one
    segmented sum where at most two products are non-zero) equals ``np.sum`` of the job's
    products bit for bit: whole tables and subsets of rows, empty jobs, dense X, zeros of
    both signs, infinite and NaN throughputs."""
    from types import SimpleNamespace
    from lp_baseline.delivery import _planned_rates
    rng = np.random.default_rng(0)
    checked = 0
    for _ in range(1500):
        todo = []
        for j in range(int(rng.integers(0, 10))):
            m = int(rng.integers(0, 16))
            thr = rng.random(m) * 10.0 ** rng.uniform(-3, 5, m)
            if m and rng.random() < 0.15:
                thr[rng.integers(m)] = rng.choice([np.inf, np.nan, 0.0, -0.0])
            rows = (np.arange(m) if m == 0 or rng.random() < 0.5
                    else np.sort(rng.choice(m, int(rng.integers(0, m + 1)), replace=False)))
            x = np.zeros(rows.size)
            if rows.size:
                nz = int(rng.integers(0, min(rows.size, 4) + 1))
                x[rng.choice(rows.size, nz, replace=False)] = rng.random(nz)
                if rng.random() < 0.1:
                    x[:] = rng.random(rows.size)            # dense: np.sum's own order
                if rng.random() < 0.1:
                    x[rng.integers(rows.size)] = -0.0
            todo.append((j, (rows, x), SimpleNamespace(samples_per_s=thr)))
        with np.errstate(invalid="ignore"):
            got = _planned_rates(todo)
            want = [float(np.sum(x * t.samples_per_s[rows])) for _, (rows, x), t in todo]
        assert len(got) == len(want)
        for g, w in zip(got, want):
            assert np.float64(g).tobytes() == np.float64(w).tobytes() or (
                math.isnan(g) and math.isnan(w)), (g, w)
            checked += 1
    assert checked > 5000


@pytest.mark.parametrize("objective", ["max-min", "sia-srpt"])
def test_a_view_with_a_zero_reference_throughput_falls_back(objective):
    """Invalid input is named, whatever the objective reads: a job's zero reference
    throughput (its finish-time-fairness denominator is not finite) makes the round's LP an
    ``invalid_input`` fallback and its objective NaN, for objectives that never read that
    denominator too."""
    from lp_baseline.policy import LPPolicy
    view = _sia_view()
    ref = np.array(view.reference_samples_per_s)
    ref[0] = 0.0
    bad = dataclasses.replace(view, reference_samples_per_s=ref)
    policy = LPPolicy(objective=objective)
    policy.reset(get_cluster("sia-64"), 0)
    policy.decide(bad)
    assert policy.summary()["lp_fallbacks"] == 1
    other = LPPolicy(objective=objective)
    other.reset(get_cluster("sia-64"), 0)
    assert math.isnan(other.evaluate(bad, other.shares(bad)[0]))


def test_evaluate_objective_names_an_x_of_the_wrong_shape():
    from lp_baseline.problem import evaluate_objective
    p = random_problem(6, np.random.default_rng(2), n_types=2, total_gpus=32)
    p = dataclasses.replace(p, gain=np.ones(p.n_candidates))
    for objective in ("sia-srpt", "max-min"):
        assert math.isfinite(evaluate_objective(p, np.zeros(p.n_candidates), objective))
        for bad in (np.zeros((p.n_candidates, 1)), np.zeros(p.n_candidates + 1)):
            with pytest.raises(ValueError, match="one share per candidate"):
                evaluate_objective(p, bad, objective)


def test_the_solve_rows_memo_gives_the_per_job_rows(monkeypatch):
    """A decision whose LP solve has rows of its own (``lp_rows``: ``support-reuse``, a
    ranker's kept candidates) memoizes them apart from the rounding's and computes them for
    every job in one pass (``_allowed_rows``): the same decisions and metrics as computing
    each job's rows on every call."""
    import lp_baseline.policy as policy_module

    spec = "gavel:rate=6,jobs=24,seed=1,mix=llm,duration_scale=0.2"
    passes = []
    one_pass = policy_module._allowed_rows
    monkeypatch.setattr(policy_module, "_allowed_rows",
                        lambda view, allowed: passes.append(1) or one_pass(view, allowed))
    memo = _run("sia-64", spec, "support-reuse", True)
    assert passes                                   # the solve's rows went through the memo
    monkeypatch.setattr(policy_module.LPPolicy, "_eligible",
                        lambda self, view, k, allowed=None:
                        self._eligible_rows(view, k, allowed))
    plain = _run("sia-64", spec, "support-reuse", True)
    assert memo[0] == plain[0]
    wall = ("decision", "wall_s")
    assert {k: v for k, v in memo[1].items() if not any(w in k for w in wall)} == \
        {k: v for k, v in plain[1].items() if not any(w in k for w in wall)}
