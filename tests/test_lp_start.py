"""A start for column generation (``solve_allocation(start=...)``, ``LPPolicy.decide(lp_start=)``,
``hsched/Rank-v0``'s ``prune="seed"`` and ``set_lp_start``, a ranker's seed mode): it changes
how many restricted solves the LP takes, never its optimal value."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from agents.policy_entries import parse_policies
from agents.ranker import DEFAULT_SEED_FRACTION, Ranker, RankerNet, best_per_job
from hsched_env.errors import ConfigError
from lp_baseline.environments import rank_env
from lp_baseline.registry import make_policy
from lp_baseline.solver import random_problem, solve_allocation


def _problem(seed: int):
    rng = np.random.default_rng(seed)
    p = random_problem(80, rng, candidates_per_job=24, n_types=4, total_gpus=192)
    return dataclasses.replace(p, priority=rng.uniform(0.1, 3.0, p.n_jobs),
                               switch=rng.uniform(0.5, 1.0, p.n_candidates),
                               gain=rng.uniform(-0.5, 2.0, p.n_candidates))


@pytest.mark.parametrize("objective", ["sia-srpt", "max-min", "max-throughput"])
@pytest.mark.parametrize("seed", [0, 1])
def test_a_start_changes_the_solves_not_the_optimum(objective, seed):
    p = _problem(seed)
    plain = solve_allocation(p, objective, method="colgen")
    support = plain.x > 1e-9
    rng = np.random.default_rng(seed + 10)
    for start in (support, np.flatnonzero(support), rng.random(p.n_candidates) < 0.3,
                  np.zeros(p.n_candidates, dtype=bool), np.arange(p.n_candidates)):
        res = solve_allocation(p, objective, method="colgen", start=start)
        assert res.status == "optimal"
        assert res.objective == pytest.approx(plain.objective, rel=1e-7, abs=1e-9)
    # the support as the start: the first restricted LP already holds an optimum
    seeded = solve_allocation(p, objective, method="colgen", start=support)
    assert seeded.pricing_rounds < plain.pricing_rounds
    # every column from the start: one restricted solve per stage, nothing to price in
    whole = solve_allocation(p, objective, method="colgen", start=np.arange(p.n_candidates))
    assert whole.columns_solved == whole.n_vars
    # the other methods ignore it
    simplex = solve_allocation(p, objective, start=support)
    assert simplex.objective == pytest.approx(plain.objective, rel=1e-7, abs=1e-9)


def test_a_bad_start_is_refused_by_name():
    p = _problem(0)
    n = p.n_candidates
    for bad, says in ((np.ones(n + 1, dtype=bool), "one entry per candidate"),
                      (np.array([0, n]), f"candidates 0..{n - 1}"),
                      (np.array([-1]), f"candidates 0..{n - 1}"),
                      (np.array([0.5, 1.0]), "bool mask or candidate indices"),
                      (np.zeros((2, 2), dtype=np.int64), "bool mask or candidate indices")):
        with pytest.raises(ConfigError, match=says) as err:
            solve_allocation(p, "max-min", method="colgen", start=bad)
        assert err.value.field == "start"


def _colgen_env(prune: str, **kw):
    """Rank-v0 on an LP that always uses column generation (the small test LPs are below
    ``COLGEN_MIN_COLUMNS``), its full LP scored each round."""
    return rank_env("sia-64", "gavel:rate=20,jobs=60", prune=prune, compare_full=True,
                    lp=make_policy("heterosched-lp", lp_method="colgen"), **kw)


def test_seed_mode_gets_the_full_lps_optimum_whatever_is_kept():
    """prune="seed": random keep bits, all, none — every round's allocation scores the full
    LP's objective on the round's whole problem."""
    env = _colgen_env("seed")
    obs, _ = env.reset(seed=3)
    rng = np.random.default_rng(0)
    rounds = 0
    for i in range(12):
        valid = obs["valid"] > 0.5
        bits = [rng.random(env.K) < 0.2, np.ones(env.K, dtype=bool),
                np.zeros(env.K, dtype=bool)][i % 3] & valid
        obs, _, term, trunc, info = env.step(bits.astype(np.int8))
        if info["full_lp_vars"]:
            rounds += 1
            assert info["kept_objective"] == pytest.approx(info["full_objective"], rel=1e-6,
                                                           abs=1e-9)
            assert info["lp_vars"] == info["full_lp_vars"]       # nothing restricted
        if term or trunc:
            break
    assert rounds >= 6


def test_a_start_hint_is_for_the_next_step_only_and_restricts_nothing():
    env = _colgen_env("lp")
    obs, _ = env.reset(seed=4)
    for _ in range(2):
        obs, *_ = env.step(np.ones(env.K, dtype=np.int8))
    valid = (obs["valid"] > 0.5)
    hint = np.zeros(env.K, dtype=np.int8)
    hint[np.flatnonzero(valid)[::7]] = 1
    env.set_lp_start(hint)
    calls = []
    decide = env.lp.decide

    def spy(view, **kw):
        calls.append(kw)
        return decide(view, **kw)

    env.lp.decide = spy
    obs, _, _, _, info = env.step(valid.astype(np.int8))        # every candidate kept
    assert info["kept_objective"] == pytest.approx(info["full_objective"], rel=1e-6, abs=1e-9)
    starts = calls[0]["lp_start"]
    assert sum(len(s) for s in starts) == int(hint.sum())
    env.step((obs["valid"] > 0.5).astype(np.int8))
    assert "lp_start" not in calls[1]                             # used once
    with pytest.raises(ConfigError, match="bits of 0 or 1"):
        env.set_lp_start(np.full(env.K, 0.5))
    with pytest.raises(ConfigError, match=f"{env.K} bits"):
        env.set_lp_start(np.ones(env.K + 1))


def test_seed_mode_and_the_hint_need_an_lp_that_takes_a_start():
    class NoStart:
        name = "no-start"

        def __init__(self):
            self.inner = make_policy("heterosched-lp")

        def reset(self, cluster, seed):
            self.inner.reset(cluster, seed)

        def decide(self, view, allowed=None, lp_rows=None):
            return self.inner.decide(view, allowed=allowed, lp_rows=lp_rows)

        def shares(self, view, allowed=None):
            return self.inner.shares(view, allowed)

        def evaluate(self, view, allocation):
            return self.inner.evaluate(view, allocation)

        @property
        def last_stats(self):
            return self.inner.last_stats

    with pytest.raises(ConfigError, match="prune='seed' needs an LP policy"):
        rank_env("sia-64", "gavel:rate=20,jobs=20", prune="seed", lp=NoStart())
    env = rank_env("sia-64", "gavel:rate=20,jobs=20", prune="lp", lp=NoStart())
    obs, _ = env.reset(seed=0)
    assert not env.takes_lp_start
    with pytest.raises(ConfigError, match="set_lp_start needs an LP policy"):
        env.set_lp_start(np.zeros(env.K, dtype=np.int8))
    # a ranker's unsure round there solves the LP whole without a hint
    unsure = Ranker(RankerNet(hidden=8), gate_candidates=0, threshold=1e-6,
                    max_kept_fraction=0.25)
    keep = unsure.keep(obs, env)
    assert unsure.unsure_rounds == 1 and env._lp_start_next is None
    env.step(keep)


def test_lp_start_needs_one_row_list_per_active_job():
    env = _colgen_env("lp")
    env.reset(seed=0)
    view = env.slots.view
    with pytest.raises(ConfigError, match="one row list per active job") as err:
        env.lp.decide(view, lp_start=[np.arange(2)] * (view.num_active + 1))
    assert err.value.field == "lp_start"


def test_a_seed_mode_ranker_keeps_its_best_share_and_each_jobs_best():
    env = rank_env("sia-64", "gavel:rate=20,jobs=80", prune="seed", measure_time=False)
    obs, _ = env.reset(seed=0)
    for _ in range(2):
        obs, *_ = env.step(np.zeros(env.K, dtype=np.int8))
    valid = obs["valid"] > 0.5
    n = int(valid.sum())
    r = Ranker(RankerNet(hidden=8), gate_candidates=0, mode="seed")
    keep = r.keep(obs, env).astype(bool)
    s = r.scores(obs, env)
    jobs = env.slot_jobs()
    top = np.argsort(-s[:n], kind="stable")[:int(np.ceil(DEFAULT_SEED_FRACTION * n))]
    expect = np.zeros(env.K, dtype=bool)
    expect[top] = True
    expect[best_per_job(s, jobs)] = True
    assert np.array_equal(keep, expect & valid)
    assert keep.sum() < 0.5 * n and r.unsure_rounds == 0 and r.gated_rounds == 0
    # below the candidate gate: the LP's own start, no inference
    gated = Ranker(RankerNet(hidden=8), gate_candidates=n + 1, mode="seed")
    assert gated.keep(obs, env).sum() == 0 and gated.gated_rounds == 1
    assert r.env_kwargs == {"prune": "seed"}
    with pytest.raises(ConfigError):
        Ranker(RankerNet(hidden=8), mode="select")
    with pytest.raises(ConfigError):
        Ranker(RankerNet(hidden=8), seed_fraction=1.5)


def test_an_unsure_round_hands_its_best_scored_candidates_to_the_whole_lp():
    env = rank_env("sia-64", "gavel:rate=20,jobs=80", prune="lp", measure_time=False)
    obs, _ = env.reset(seed=0)
    for _ in range(2):
        obs, *_ = env.step(np.ones(env.K, dtype=np.int8))
    valid = obs["valid"] > 0.5
    unsure = Ranker(RankerNet(hidden=8), gate_candidates=0, threshold=1e-6,
                    max_kept_fraction=0.25)
    keep = unsure.keep(obs, env)
    assert unsure.unsure_rounds == 1 and np.array_equal(keep.astype(bool), valid)
    hint = env._lp_start_next
    assert hint is not None and 0 < hint.sum() < valid.sum()
    env.step(keep)
    assert env._lp_start_next is None
    off = Ranker(RankerNet(hidden=8), gate_candidates=0, threshold=1e-6,
                 max_kept_fraction=0.25, seed_fraction=0)
    off.keep(obs, env)
    assert env._lp_start_next is None


def test_ranker_seed_is_a_policy_name():
    entry = parse_policies(["ranker-seed"])[0]
    assert entry.kind == "ranker" and entry.label == "ranker-seed:ranker.pt"
    assert entry.env_kwargs == {"prune": "seed"} and entry.ranker.mode == "seed"
    assert "seed mode" in entry.source
    plain = parse_policies(["ranker"])[0]
    assert plain.ranker.mode == "prune" and plain.env_kwargs == {"prune": "lp"}
