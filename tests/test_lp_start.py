"""A start for column generation (``solve_allocation(start=...)``, ``LPPolicy.decide(lp_start=)``,
``hsched/Rank-v0``'s ``prune="seed"`` and ``set_lp_start``, a ranker's seed mode): it changes
how many restricted solves the LP takes, never its optimal value."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
import torch

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


def test_seed_mode_and_the_hint_need_an_lp_that_takes_a_start(wrapped_lp):
    NoStart = wrapped_lp                     # its decide takes no lp_start=

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


def _third_round(prune: str):
    """A ``sia-64`` Rank-v0 episode under ``prune`` after two rounds keeping everything: the
    environment, its observation and the valid slots."""
    env = rank_env("sia-64", "gavel:rate=20,jobs=80", prune=prune, measure_time=False)
    obs, _ = env.reset(seed=0)
    for _ in range(2):
        obs, *_ = env.step(np.ones(env.K, dtype=np.int8))
    return env, obs, obs["valid"] > 0.5


def test_a_seed_mode_ranker_keeps_its_best_share_and_each_jobs_best():
    env, obs, valid = _third_round("seed")
    n = int(valid.sum())
    torch.manual_seed(0)
    r = Ranker(RankerNet(hidden=8), gate_candidates=0, mode="seed")
    keep = r.keep(obs, env).astype(bool)
    s = r.scores(obs, env)
    jobs = env.slot_jobs()
    m = int(np.ceil(DEFAULT_SEED_FRACTION * n))
    nth = np.sort(s[valid])[::-1][m - 1]             # the m-th best score (ties: any of them)
    best = np.zeros(env.K, dtype=bool)
    best[best_per_job(s, jobs)] = True
    assert keep[valid & (s > nth)].all() and keep[best].all()
    assert not keep[valid & (s < nth) & ~best].any() and not keep[~valid].any()
    assert m <= keep.sum() <= m + best.sum()
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
    env, obs, valid = _third_round("lp")
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


def test_the_start_reaches_each_solve_aligned_with_its_candidates(monkeypatch):
    """decide(lp_start=the LP's own support) hands the solve exactly those candidates (each
    job's rows at its offset in the LP), and it needs no more restricted solves; under POP
    every part gets its members' share of the start."""
    import lp_baseline.parallel_parts as parts
    seen = []
    solve = parts.solve_allocation

    def spy(problem, *a, **kw):
        res = solve(problem, *a, **kw)
        seen.append((problem, kw.get("start"), res))
        return res

    monkeypatch.setattr(parts, "solve_allocation", spy)
    for name in ("heterosched-lp", "pop-4"):
        extra = {"pop_workers": 1} if name == "pop-4" else {}
        env = rank_env("sia-64", "gavel:rate=20,jobs=60", prune="lp", measure_time=False,
                       lp=make_policy(name, lp_method="colgen", **extra))
        env.reset(seed=2)
        for _ in range(3):
            env.step(np.ones(env.K, dtype=np.int8))
        view, lp = env.slots.view, env.lp
        seen.clear()
        alloc, _ = lp.shares(view)
        plain = [r for _, _, r in seen]
        support = [np.asarray(alloc[int(j)][0])[np.asarray(alloc[int(j)][1]) > 1e-9]
                   if int(j) in alloc else np.zeros(0, dtype=np.int64) for j in view.job_ids]
        assert sum(s.size for s in support) > 0
        seen.clear()
        lp._allocate(view, type(lp.last_stats)(), None, memo_update=False, lp_start=support)
        assert seen and all(start is not None for _, start, _ in seen)
        # a bool mask over each solve's candidates, as many as the support's
        assert all(start.dtype == bool and start.size == p.n_candidates for p, start, _ in seen)
        assert sum(int(start.sum()) for _, start, _ in seen) == sum(s.size for s in support)
        if name == "heterosched-lp":                    # one LP: every job's rows in order
            (problem, start, res), = seen
            sizes = [len(t) for t in view.candidates]
            offsets = np.cumsum(sizes) - sizes
            expect = np.concatenate([offsets[k] + support[k] for k in range(len(sizes))])
            assert np.array_equal(np.flatnonzero(start), np.sort(expect))
            assert np.array_equal(np.flatnonzero(plain[0].x > 1e-9), np.sort(expect))
            assert res.pricing_rounds <= plain[0].pricing_rounds
            assert res.objective == pytest.approx(plain[0].objective, rel=1e-7)


def test_bad_lp_start_rows_are_refused_by_job():
    env = _colgen_env("lp")
    env.reset(seed=0)
    view = env.slots.view
    n0 = len(view.candidates[0])
    ok = [np.zeros(0, dtype=np.int64)] * view.num_active
    for bad, says in (([None] + ok[1:], "rows must be indices"),
                      ([np.array([0.5])] + ok[1:], "rows must be indices"),
                      ([np.array([n0])] + ok[1:], f"rows must be 0..{n0 - 1}"),
                      ([np.array([-1])] + ok[1:], f"rows must be 0..{n0 - 1}")):
        with pytest.raises(ConfigError, match=says) as err:
            env.lp.decide(view, lp_start=bad)
        assert err.value.field == "lp_start" and "job " in str(err.value)
    # a bool mask per job is its rows
    masks = [np.zeros(len(t), dtype=bool) for t in view.candidates]
    env.lp.decide(view, lp_start=masks)
    p = _problem(0)
    with pytest.raises(ConfigError, match="mask given as"):
        solve_allocation(p, "max-min", method="colgen",
                         start=np.ones(p.n_candidates, dtype=np.int8))


def test_a_pending_hint_is_part_of_the_snapshot():
    env = _colgen_env("lp")
    obs, _ = env.reset(seed=0)
    snap = env.get_state()
    for _ in range(4):
        obs, *_ = env.step(np.ones(env.K, dtype=np.int8))
    env.set_lp_start((obs["valid"] > 0.5).astype(np.int8))
    env.set_state(snap)                                     # the hint was not given there
    assert env._lp_start_next is None
    env.step((env.get_state()["_slots"] is not None) * np.ones(env.K, dtype=np.int8))
    hinted = env.get_state()
    env.set_lp_start(np.zeros(env.K, dtype=np.int8))
    with_hint = env.get_state()
    env.set_state(hinted)
    assert env._lp_start_next is None
    env.set_state(with_hint)
    assert env._lp_start_next is not None


def test_a_seed_mode_ranker_refuses_a_pruning_env_and_an_operating_point():
    env = rank_env("sia-64", "gavel:rate=20,jobs=40", prune="lp", measure_time=False)
    obs, _ = env.reset(seed=0)
    with pytest.raises(ConfigError, match="needs hsched/Rank-v0 with prune='seed'"):
        Ranker(RankerNet(hidden=8), gate_candidates=0, mode="seed").keep(obs, env)
    for name in ("ranker-seed@0.99", "ranker-seed:agents/data/ranker.pt@0.99"):
        with pytest.raises(ConfigError, match="takes no @R operating point"):
            parse_policies([name])


@pytest.mark.slow
def test_the_report_says_seed_mode_not_pruning(tmp_path):
    from agents.evaluate import custom_suite, evaluate, format_report
    from agents.policy_entries import agent_entry
    torch.manual_seed(0)
    r = Ranker(RankerNet(hidden=8), gate_candidates=0, mode="seed", name="ranker-seed:tiny")
    rep = evaluate(custom_suite("sia-64", "gavel:rate=20,jobs=20"),
                   ["pure-lp", agent_entry(r)], progress=False)
    text = format_report(rep)
    line = [t for t in text.splitlines() if t.startswith("ranker-seed:tiny: decision")][0]
    assert "seed mode, the LP solves every round whole" in line
    assert "pruned" not in line and "kept" not in line
    row = [x for x in rep.rows if x["policy"] == "ranker-seed:tiny"][0]
    assert row["seed_mode"] and 0 <= row["seed_recall"] <= 1
    assert row["avg_jct_common_ratio"] == pytest.approx(1.0, abs=1e-9)
    from agents.report import per_seed_rows
    seed_row, = [x for x in per_seed_rows(rep) if x["policy"] == "ranker-seed:tiny"]
    assert seed_row["seed_mode"] and seed_row["seed_recall"] == row["seed_recall"]


def test_seed_mode_names_itself_and_has_no_unsure_gate_to_set():
    from agents.ranker import shipped_ranker_path
    r = Ranker.load(shipped_ranker_path(), mode="seed")
    assert r.name.startswith("ranker-seed:") and r.env_kwargs == {"prune": "seed"}
    with pytest.raises(ConfigError, match="ranker-seed has no unsure gate"):
        parse_policies(["pure-lp", "ranker-seed"], max_kept_fraction=0.5)
    entries = parse_policies(["ranker", "ranker-seed"], max_kept_fraction=0.5)
    assert entries[0].ranker.max_kept_fraction == 0.5


def test_a_per_job_mask_given_as_numbers_is_refused():
    env = _colgen_env("lp")
    env.reset(seed=0)
    view = env.slots.view
    k = max(range(view.num_active), key=lambda i: len(view.candidates[i]))
    n = len(view.candidates[k])
    assert n > 2
    start = [np.zeros(0, dtype=np.int64)] * view.num_active
    start[k] = np.ones(n, dtype=np.int64)
    with pytest.raises(ConfigError, match="a mask given as int64"):
        env.lp.decide(view, lp_start=start)


def test_info_counts_the_restricted_solves_a_good_start_saves():
    """The same round from the same state: started from the LP's support (reference_action),
    column generation needs fewer restricted solves than from nothing, and info says so."""
    env = rank_env("sia-64", "gavel:rate=60,jobs=150", prune="seed",
                   lp=make_policy("heterosched-lp", lp_method="colgen"))
    obs, _ = env.reset(seed=5)
    for _ in range(3):
        obs, *_ = env.step(np.zeros(env.K, dtype=np.int8))
    snap = env.get_state()
    solves = {}
    for name, bits in (("none", np.zeros(env.K, dtype=np.int8)),
                       ("support", env.reference_action())):
        env.set_state(snap)
        env.lp._lp_memo = {}                 # solve afresh, not the memo's answer
        *_, info = env.step(bits)
        solves[name] = info["lp_restricted_solves"]
    assert 0 < solves["support"] < solves["none"]


def _bench_script():
    import importlib.util
    from pathlib import Path
    spec = importlib.util.spec_from_file_location(
        "bench_ranker_start",
        Path(__file__).resolve().parents[1] / "scripts" / "bench_ranker_start.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.mark.slow
def test_the_start_benchmark_runs_on_training_seeds_only(tmp_path, capsys):
    import json
    bench = _bench_script()
    assert bench.main(["fractions", "--seeds", "1000000"]) == 2      # one line, exit 2
    assert "field '--seeds': [1000000] are not training seeds" in capsys.readouterr().err
    out = tmp_path / "f.json"
    assert bench.main(["fractions", "--seeds", "11", "--sizes", "500", "--max-time-s", "1200",
                       "--fractions", "0.05", "--per-job", "2", "--json", str(out)]) == 0
    table = json.loads(out.read_text())["table"]["large-2048-500"]
    assert table["none"]["ratio"] == 1.0
    assert set(table) == {"none", "top 0.05", "best 2 per job"}
    # the ranker's start needs fewer restricted solves than column generation's own
    assert (table["top 0.05"]["restricted_solves_median"]
            < table["none"]["restricted_solves_median"])
    assert bench.main(["compare", "--suite", "smoke", "--seeds", "1",
                       "--timing-repeats", "1"]) == 0
    assert "identical: True" in capsys.readouterr().out


@pytest.mark.slow
def test_evaluate_sets_every_listed_ranker_files_start(tmp_path):
    import json

    from hsched_cli.main import main
    for bad, says in ((["--policies", "pure-lp,fifo", "--seed-fraction", "0.1"],
                       "policies name none"),
                      (["--policies", "pure-lp,ranker", "--seed-fraction", "1.5"],
                       r"number in \[0, 1\]")):
        with pytest.raises(ConfigError, match=says):
            parse_policies(bad[1], seed_fraction=float(bad[3]))
    entries = parse_policies("ranker,ranker-seed", seed_fraction=0.0)
    assert [e.ranker.seed_fraction for e in entries] == [0.0, 0.0]
    out = tmp_path / "o"
    assert main(["evaluate", "--suite", "smoke", "--policies", "pure-lp,ranker,ranker-seed",
                 "--seed-fraction", "0.02", "--seeds", "1", "--out", str(out),
                 "--no-progress"]) == 0
    gates = json.loads((out / "metrics.json").read_text())["settings"]["ranker_gates"]
    assert sorted(g["seed_fraction"] for g in gates.values()) == [0.02, 0.02]
    assert main(["evaluate", "--suite", "smoke", "--policies", "pure-lp,fifo",
                 "--seed-fraction", "0.1", "--seeds", "1", "--out", str(tmp_path / "p"),
                 "--no-progress"]) == 2
