"""The learned ranker: equivariance, portability, save/load, imitation and a smoke training."""

from __future__ import annotations

import json

import gymnasium as gym
import numpy as np
import pytest
import torch as th

import hsched_env  # noqa: F401
from agents.imitation import behaviour_clone, collect_demos, evaluate_keep
from agents.ranker import (PAD_LOGIT, Ranker, RankerNet, SlotLayout, load_ranker_net,
                           save_ranker)
from agents.train import TrainConfig, train
from hsched_env.errors import ConfigError, UnknownNameError

slow = pytest.mark.slow

th.set_num_threads(1)
SMALL = dict(cluster="sia-64", workload="gavel:rate=4,jobs=20")


@pytest.fixture(scope="module")
def rank_env():
    return gym.make("hsched/Rank-v0", max_candidates=512, **SMALL)


def _tensors(env, seed=3):
    obs, _ = env.reset(seed=seed)
    for _ in range(4):                       # a few rounds in: several jobs, some running
        obs, *_ = env.step(np.ones(env.unwrapped.K, dtype=np.int8))
    return obs, SlotLayout(env.unwrapped.observation_space).from_obs(obs)


def test_ranker_is_permutation_equivariant(rank_env):
    th.manual_seed(0)
    net = RankerNet(hidden=32)
    _, (cand, valid, cluster, glob) = _tensors(rank_env)
    M = int(valid.sum())
    assert M > 10
    perm = th.randperm(M)
    logits, ctx = net(cand[:, :M], valid[:, :M], cluster, glob)
    logits_p, ctx_p = net(cand[:, :M][:, perm], valid[:, :M][:, perm], cluster, glob)
    assert th.allclose(logits[:, perm], logits_p, atol=1e-5)
    assert th.allclose(ctx, ctx_p, atol=1e-5)
    # padding does not change the scores of real candidates, and gets PAD_LOGIT
    padded, _ = net(cand, valid, cluster, glob)
    assert th.allclose(padded[:, :M], logits, atol=1e-5)
    assert th.all(padded[:, M:] == PAD_LOGIT)


def test_ranker_runs_on_other_clusters_and_k(tmp_path, rank_env):
    net = RankerNet(hidden=16)
    path = save_ranker(net, tmp_path / "r.pt", note="test")
    ranker = Ranker.load(path)
    assert ranker.meta == {"note": "test"}
    for env in (rank_env, gym.make("hsched/Rank-v0", cluster="gavel-108",
                                   workload="gavel:rate=4,jobs=10", max_candidates=300)):
        obs, _ = env.reset(seed=1)
        bits = ranker.keep(obs, env)
        valid = obs["valid"] > 0.5
        assert bits.shape == (env.unwrapped.K,) and bits.dtype == np.int8
        assert not bits[~valid].any()                     # never keeps an empty slot
        jobs = env.unwrapped.slot_jobs()
        for j in set(jobs[valid]):                       # every job keeps ≥ 1 candidate
            assert bits[jobs == j].any()
        budget = ranker.keep(obs, env, budget=0.25)
        assert budget.sum() >= int(np.ceil(0.25 * valid.sum()))


def test_save_load_round_trip_and_bad_files(tmp_path):
    net = RankerNet(hidden=8, commit=True)
    save_ranker(net, tmp_path / "a.pt")
    back, _ = load_ranker_net(tmp_path / "a.pt")
    for k, v in net.state_dict().items():
        assert th.equal(v, back.state_dict()[k])
    (tmp_path / "junk.pt").write_bytes(b"not a checkpoint")
    with pytest.raises(ConfigError, match="not a HeteroSched ranker"):
        load_ranker_net(tmp_path / "junk.pt")
    th.save({"format": "other"}, tmp_path / "other.pt")
    with pytest.raises(ConfigError, match="not a HeteroSched ranker"):
        load_ranker_net(tmp_path / "other.pt")
    with pytest.raises(ConfigError, match="no ranker file"):
        load_ranker_net(tmp_path / "missing.pt")


@slow
def test_imitation_learns_the_lp_support(rank_env):
    demos = collect_demos(rank_env, [0, 1, 2, 3], max_rounds=25, progress=False)
    assert len(demos) > 50
    frac = demos.positive_fraction()
    assert 0.02 < frac < 0.6                              # the LP keeps a minority
    held, train_set = demos.split([3])
    net = RankerNet(hidden=32)
    history = behaviour_clone(net, train_set, epochs=40, seed=0, valid_demos=held,
                              progress=False)
    after = evaluate_keep(net, held)
    assert history[-1]["loss"] < history[0]["loss"]
    # an untrained net keeps about half of everything (precision ≈ the base rate); the
    # clone is selective: measured recall 0.59, precision 0.32 at a base rate of 0.25 (the
    # default LP's keep bits include each job's fallbacks; with the previous LP: recall 0.66,
    # precision 0.58 at a base rate of 0.11)
    assert after["recall"] > 0.4 and after["precision"] > 1.2 * frac
    # and keeps well under everything (measured 0.42 at a base rate of 0.25; keep-all is 1)
    assert after["kept_fraction"] < 2 * frac


def test_train_config_validates():
    with pytest.raises(UnknownNameError):
        TrainConfig(env="hsched/Nope-v0")
    with pytest.raises(UnknownNameError):
        TrainConfig(algo="dqn")
    with pytest.raises(ConfigError, match="maskable-ppo"):
        TrainConfig(env="hsched/Rank-v0", algo="maskable-ppo")
    with pytest.raises(ConfigError):
        TrainConfig(timesteps=0)


@pytest.mark.parametrize("env_id,algo,hours", [("hsched/Rank-v0", "ppo", 4),
                                               ("hsched/Schedule-v0", "maskable-ppo", 1)])
@slow
def test_smoke_training_run(tmp_path, env_id, algo, hours):
    cfg = TrainConfig(env=env_id, algo=algo, timesteps=256, n_steps=64, batch_size=32,
                      n_epochs=2, slots=512 if "Rank" in env_id else 64,
                      episode_hours=hours, train_seeds=3, imitation_seeds=2, imitation_rounds=10,
                      imitation_epochs=2, checkpoint_steps=128, logdir=str(tmp_path / "run"),
                      **SMALL)
    summary = train(cfg, progress=False)
    out = tmp_path / "run"
    saved = json.loads((out / "config.json").read_text())
    assert saved["env"] == env_id and saved["timesteps"] == 256
    assert (out / "model.zip").is_file() and list((out / "checkpoints").glob("*.zip"))
    assert list(out.rglob("events.out.tfevents.*"))
    assert (out / "ranker.pt").is_file()
    Ranker.load(out / "ranker.pt")
    eps = summary["episodes"]
    assert eps, "no episode finished in 256 steps"
    for e in eps:
        # a truncated episode may end before any job completes (then there is no JCT)
        assert np.isnan(e["avg_jct_h"]) or e["avg_jct_h"] > 0
        assert np.isfinite(e["return_vs_lp"]) and e["return_vs_lp"] > 0
    assert any(np.isfinite(e["avg_jct_h"]) for e in eps)
    if "Rank" in env_id:
        assert (out / "imitation_ranker.pt").is_file()
        assert summary["imitation"]["rounds"] > 0
        assert 0 < eps[0]["kept_fraction"] <= 1


def _episode_avg_jct(env, keep_fn) -> float:
    obs, _ = env.reset(seed=1_000_001)                   # a held-out evaluation seed
    while True:
        obs, _, terminated, truncated, info = env.step(keep_fn(obs))
        if terminated or truncated:
            assert info["metrics"]["jobs_completed"] == info["metrics"]["jobs_total"]
            return info["metrics"]["avg_jct_s"]


@slow
@pytest.mark.xfail(strict=True, reason=(
    "known regression (issue 12): the ranker retrained on the new default LP (sia-srpt, "
    "keep bits with each job's fallbacks) ranks worse than random at a 20% budget: measured "
    "avg JCT 5.20 h against 4.28 h for random pruning; the previous ranker on the previous LP: "
    "3.60 h against 4.77 h. strict: this test fails as soon as the ranker beats random again"))
def test_shipped_ranker_beats_random_pruning_at_the_same_budget():
    """The pre-trained ranker (trained on large-2048) keeps the same number of candidates
    as random pruning, on a held-out seed of another cluster; its schedule is better.
    Measured with the previous LP and ranker: avg JCT 3.60 h against 4.77 h for random
    (budget 0.2)."""
    from agents.ranker import shipped_ranker_path
    path = shipped_ranker_path()
    assert path.is_file(), "agents/data/ranker.pt is missing (see agents/data/README.md)"
    ranker = Ranker.load(path, min_per_job=0)            # exactly the budget, nothing more
    budget = 0.2
    env = gym.make("hsched/Rank-v0", cluster="sia-64", workload="gavel:rate=4,jobs=30",
                   max_candidates=1024, keep_cost=0.0).unwrapped
    rng = np.random.default_rng(0)

    def random_keep(obs):
        M = int((obs["valid"] > 0.5).sum())
        bits = np.zeros(env.K, dtype=np.int8)
        bits[rng.choice(M, int(np.ceil(budget * M)), replace=False)] = 1
        return bits

    learned = _episode_avg_jct(env, lambda obs: ranker.keep(obs, env, budget=budget))
    random = _episode_avg_jct(env, random_keep)
    assert learned < 0.9 * random, (learned / 3600, random / 3600)
