"""``hsched train``: hyper-parameter files and their precedence, the registered scenario, run
directories, the --timesteps bound, progress when piped, TensorBoard hparams and figures, and
``scripts/rl_baselines.py`` on one tiny id."""

from __future__ import annotations

import dataclasses
import importlib.util
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import torch

from agents.train import (HYPERPARAMS_DIR, TrainConfig, config_fields, make_config,
                          prepare_run_dir, read_hyperparams, resolve_hyperparams, rollout_plan,
                          train)
from hsched_cli.main import main
from hsched_env.errors import ConfigError, UnknownNameError
from hsched_env.registration import VARIANT_IDS

ROOT = Path(__file__).resolve().parents[1]
TINY = "hsched/Schedule-Tiny-v0"
slow = pytest.mark.slow


def write_yaml(path: Path, text: str) -> Path:
    path.write_text(text, encoding="utf-8")
    return path


# ---------------------------------------------------------------------------- hyper-parameters
def test_hyperparams_entry_is_read_and_flags_override_it(tmp_path):
    f = write_yaml(tmp_path / "hp.yml", f"""
{TINY}:
  n_timesteps: 321
  policy: MultiInputPolicy
  gamma: 0.9
  n_epochs: 3
  learning_rate: lin_0.001
  ent_coef: 1e-3
  normalize: false
  policy_kwargs: {{net_arch: [16, 16], activation_fn: tanh}}
hsched/Rank-Tiny-v0:
  gamma: 0.5
""")
    cfg = make_config(TINY, algo="maskable-ppo", hyperparams=f)
    assert (cfg.timesteps, cfg.policy, cfg.gamma, cfg.n_epochs) == (321, "mlp", 0.9, 3)
    assert cfg.learning_rate == "lin_0.001" and cfg.normalize_reward is False
    assert cfg.ent_coef == 1e-3                   # YAML 1.1 reads 1e-3 as text: a number here
    assert cfg.policy_kwargs == {"net_arch": [16, 16], "activation_fn": "tanh"}
    assert cfg.hyperparams.endswith(f"hp.yml [{TINY}]")
    # command line > file > TrainConfig defaults
    # (the file's MLP layers do not fit the equivariant policy: replaced on the command line)
    with pytest.raises(ConfigError, match="does not take 'net_arch'"):
        make_config(TINY, algo="maskable-ppo", policy="equivariant", hyperparams=f)
    cfg = make_config(TINY, algo="maskable-ppo", policy="equivariant", hyperparams=f,
                      gamma=0.99, timesteps=None, n_timesteps=77, policy_kwargs={})
    assert (cfg.gamma, cfg.timesteps, cfg.policy, cfg.n_epochs) == (0.99, 77, "equivariant", 3)
    assert cfg.batch_size == TrainConfig.batch_size           # not in the file: the default


def test_an_id_without_entry_uses_the_defaults_only_from_the_shipped_file(tmp_path, capsys):
    """The shipped file without an entry for the id: the TrainConfig defaults, said so. A
    --hyperparams file without one is refused, naming its entries (a misspelt id trained
    on the defaults before)."""
    fields, source = resolve_hyperparams("hsched/Rank-v0", "ppo", None)
    assert fields == {} and "ppo.yml has no entry for hsched/Rank-v0" in source
    assert make_config("hsched/Rank-v0").gamma == TrainConfig.gamma
    f = write_yaml(tmp_path / "hp.yml", "hsched/Rank-Tiny-v0:\n  gamma: 0.5\n")
    with pytest.raises(ConfigError) as err:
        resolve_hyperparams("hsched/Rank-Tiny-v1", "ppo", None, f)
    assert err.value.field == "--hyperparams"
    assert "has no entry for hsched/Rank-Tiny-v1 (did you mean 'hsched/Rank-Tiny-v0'?); " \
           "its entries: hsched/Rank-Tiny-v0" in str(err.value)
    with pytest.raises(ConfigError, match="its entries: hsched/Rank-Tiny-v0 "):
        make_config(TINY, hyperparams=f)
    run = tmp_path / "run"
    assert main(["train", "--env", TINY, "--hyperparams", str(f), "--logdir", str(run)]) == 2
    out = capsys.readouterr().err
    assert "field '--hyperparams'" in out and out.count("\n") == 1 and not run.exists()


def test_bad_hyperparams_are_refused(tmp_path):
    with pytest.raises(UnknownNameError, match="n_timestep"):
        config_fields({"n_timestep": 5})
    with pytest.raises(UnknownNameError, match="policy"):
        config_fields({"policy": "CnnPolicy"})
    with pytest.raises(ConfigError):
        config_fields({"logdir": "x"})                        # not a hyper-parameter
    with pytest.raises(ConfigError):
        read_hyperparams(write_yaml(tmp_path / "bad.yml", "- a\n- b\n"))
    with pytest.raises(ConfigError):
        read_hyperparams(tmp_path / "missing.yml")
    # a YAML syntax error: one line naming the file and line, not PyYAML's quoted excerpt
    syntax = write_yaml(tmp_path / "syntax.yml", "hsched/Tiny-v0:\n  n_steps: [1, 2\n")
    with pytest.raises(ConfigError) as ei:
        read_hyperparams(syntax)
    message = str(ei.value)
    assert "\n" not in message and "^" not in message
    assert message.startswith(f"{syntax}:3: invalid YAML: expected ','")
    assert "flow sequence that starts on line 2" in message
    # values YAML cannot build, and bytes that are not UTF-8: one line each, as cluster files
    for text, says in (("  n_steps: 2001-13-45\n", "invalid YAML: month must be in 1..12"),
                       ("  n_steps: " + "9" * 5000 + "\n",
                        "invalid YAML: an integer has too many digits"),
                       ("  n_steps: \udcff\n", "not valid UTF-8 (a byte 0xff")):
        bad = tmp_path / "bad_value.yml"
        bad.write_bytes(("hsched/Tiny-v0:\n" + text).encode("utf-8", "surrogateescape"))
        with pytest.raises(ConfigError, match=re.escape(says)):
            read_hyperparams(bad)
    with pytest.raises(ConfigError, match="lin_"):
        TrainConfig(env=TINY, learning_rate="fast")


def test_shipped_hyperparams_are_valid_and_picked_by_default():
    files = sorted(HYPERPARAMS_DIR.glob("*.yml"))
    assert {f.name for f in files} >= {"ppo.yml", "maskable_ppo.yml", "ppo_mlp.yml",
                                       "maskable_ppo_mlp.yml"}
    for f in files:
        algo = "maskable-ppo" if f.name.startswith("maskable") else "ppo"
        for env_id, entry in read_hyperparams(f).items():
            assert env_id in VARIANT_IDS, (f, env_id)
            cfg = TrainConfig(env=env_id, algo=algo, **config_fields(entry, str(f)))
            assert cfg.policy == ("mlp" if f.stem.endswith("_mlp") else "equivariant")
    for env_id in ("hsched/Schedule-Tiny-v0", "hsched/Schedule-Small-v0"):
        cfg = make_config(env_id, algo="maskable-ppo")
        entry = read_hyperparams(HYPERPARAMS_DIR / "maskable_ppo.yml")[env_id]
        assert cfg.hyperparams.endswith(f"maskable_ppo.yml [{env_id}]")
        assert cfg.timesteps == entry["n_timesteps"] and cfg.gamma == entry["gamma"]
    for env_id in ("hsched/Rank-Tiny-v0", "hsched/Rank-Small-v0"):
        assert make_config(env_id).hyperparams.endswith(f"ppo.yml [{env_id}]")
        assert make_config(env_id, policy="mlp").hyperparams.endswith(f"ppo_mlp.yml [{env_id}]")
    # imitation reads no file (the shipped ranker's command must not change)
    assert "no hyper-parameter file" in make_config("hsched/Rank-v0", algo="imitation",
                                                    regimes="mixed").hyperparams


# ---------------------------------------------------------------------------- scenario
def test_every_registered_id_trains_on_its_registered_scenario():
    for env_id in VARIANT_IDS:
        cfg = TrainConfig(env=env_id)
        assert cfg.env_kwargs() == {}                    # nothing overrides the id
        assert cfg.algo == ("ppo" if "Rank" in env_id else "maskable-ppo")
    sc = TrainConfig(env=TINY).scenario()
    assert (sc["cluster"], sc["slots"], sc["max_episode_steps"]) == ("tiny-8", 32, 2000)
    assert sc["workload"] == "gavel:rate=8,jobs=16,duration_scale=0.05,multi_gpu_recommendation=1"
    sc = TrainConfig(env=TINY, slots=16, episode_hours=2).scenario()
    assert sc["slots"] == 16 and sc["max_time_s"] == 7200
    assert TrainConfig(env="hsched/Rank-Large-v0", episode_hours=0).env_kwargs() == {
        "max_time_s": None}                              # 0: no limit, over the id's 3 h


# ---------------------------------------------------------------------------- run directories
def test_default_run_dirs_are_unique(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    a, b = TrainConfig(env=TINY), TrainConfig(env=TINY)
    da, db = prepare_run_dir(a), prepare_run_dir(b)
    assert da != db and da.is_dir() and db.is_dir()
    assert a.logdir == str(da) and da.parent == Path("runs")
    assert da.name.startswith("schedule-tiny-v0-maskable-ppo-equivariant-s0-")


def test_an_existing_run_dir_needs_overwrite(tmp_path, capsys):
    run = tmp_path / "run"
    (run / "tb").mkdir(parents=True)
    (run / "tb" / "events.out.tfevents.1").write_text("x")
    (run / "model.zip").write_text("x")
    (run / "notes.txt").write_text("mine")
    (run / "config.json").write_text(json.dumps(dataclasses.asdict(TrainConfig(env=TINY))))
    with pytest.raises(ConfigError, match="--overwrite"):
        prepare_run_dir(TrainConfig(env=TINY, logdir=str(run)))
    assert (run / "model.zip").exists()
    code = main(["train", "--env", TINY, "--timesteps", "64", "--logdir", str(run)])
    assert code == 2 and "--overwrite" in capsys.readouterr().err
    prepare_run_dir(TrainConfig(env=TINY, logdir=str(run)), overwrite=True)
    assert not (run / "tb").exists() and not (run / "model.zip").exists()
    assert (run / "notes.txt").read_text() == "mine"          # not ours: kept
    prepare_run_dir(TrainConfig(env=TINY, logdir=str(tmp_path / "new")))   # new: fine


@pytest.mark.parametrize("bad", [{"keep_cost": float("nan")}, {"workload": "gavel:jobs=-4"},
                                 {"cluster": "no-such-cluster"}])
def test_train_checks_the_environment_before_it_replaces_a_run(tmp_path, monkeypatch, bad):
    """``train(config, overwrite=True)`` deleted the earlier run's files, then found that the
    environment refuses the config (what only the environment checks): now nothing is
    written or deleted, and no default run folder is left behind either."""
    from agents.train import train
    run = tmp_path / "run"
    run.mkdir()
    (run / "ranker.pt").write_text("an earlier run")
    (run / "config.json").write_text(json.dumps(dataclasses.asdict(TrainConfig(env=TINY))))
    config = TrainConfig(env="hsched/Rank-Tiny-v0", algo="imitation", imitation_seeds=2,
                         logdir=str(run), **bad)
    with pytest.raises(ConfigError):
        train(config, overwrite=True, progress="none")
    assert (run / "ranker.pt").read_text() == "an earlier run"
    monkeypatch.chdir(tmp_path / "run")          # the default folder is made under runs/ here
    with pytest.raises(ConfigError):
        train(TrainConfig(env="hsched/Rank-Tiny-v0", algo="imitation", imitation_seeds=2,
                          **bad), progress="none")
    assert not (tmp_path / "run" / "runs").exists()


def test_overwrite_deletes_nothing_in_a_folder_that_holds_no_run(tmp_path, capsys):
    """Files named like a run's (a user's ``config.json``, an evaluation's ``tb/``) do not
    make a folder a run: ``--overwrite`` there is refused and deletes nothing (it replaced
    the user's config.json)."""
    mine = tmp_path / "mine"
    (mine / "tb").mkdir(parents=True)
    (mine / "config.json").write_text('{"db": "prod"}')
    with pytest.raises(ConfigError, match="files of yours, not a training run's"):
        prepare_run_dir(TrainConfig(env=TINY, logdir=str(mine)), overwrite=True)
    code = main(["train", "--env", TINY, "--timesteps", "64", "--logdir", str(mine),
                 "--overwrite"])
    assert code == 2 and "not a training run's" in capsys.readouterr().err
    assert (mine / "config.json").read_text() == '{"db": "prod"}' and (mine / "tb").is_dir()


def test_overwrite_through_the_cli_replaces_a_run_beside_the_users_files(tmp_path, capsys):
    """``hsched train --overwrite`` prepares the folder twice (the command, then ``train``):
    the second time the earlier run's files are gone and only the user's are left, which must
    not stop the run (it deleted the earlier run and then refused to train)."""
    run = tmp_path / "run"
    run.mkdir()
    (run / "config.json").write_text(json.dumps(dataclasses.asdict(TrainConfig(env=TINY))))
    (run / "model.zip").write_text("old")
    (run / "notes.txt").write_text("mine")
    code = main(["train", "--env", TINY, "--timesteps", "64", "--logdir", str(run),
                 "--overwrite"])
    assert code == 0, capsys.readouterr().err
    assert (run / "notes.txt").read_text() == "mine"
    assert json.loads((run / "config.json").read_text())["timesteps"] == 64
    assert (run / "model.zip").read_bytes() != b"old"


# ---------------------------------------------------------------------------- the step bound
def test_rollout_plan_fits_the_timesteps():
    plan = rollout_plan(TrainConfig(env=TINY, timesteps=64, n_steps=1024, batch_size=128))
    assert (plan["n_steps"], plan["batch_size"], plan["updates"]) == (64, 64, 1)
    plan = rollout_plan(TrainConfig(env=TINY, timesteps=100, n_steps=64, batch_size=32))
    assert (plan["n_steps"], plan["updates"], plan["partial_steps"]) == (64, 1, 36)
    # a cut rollout gets a mini-batch that divides it (SB3 would train on a truncated one)
    plan = rollout_plan(TrainConfig(env=TINY, timesteps=64, n_steps=1024, batch_size=24))
    assert (plan["n_steps"], plan["batch_size"]) == (64, 16)
    assert plan["adjusted"] == ["n_steps", "batch_size"]
    # no divisor of at least half the size (134 = 2 × 67): the configured size stays
    plan = rollout_plan(TrainConfig(env=TINY, timesteps=134, n_steps=1024, batch_size=64))
    assert (plan["n_steps"], plan["batch_size"]) == (134, 64)
    # an uncut one keeps the configured size, even if it does not divide (the user's choice)
    plan = rollout_plan(TrainConfig(env=TINY, timesteps=1000, n_steps=64, batch_size=24))
    assert (plan["n_steps"], plan["batch_size"]) == (64, 24)
    with pytest.raises(ConfigError):
        rollout_plan(TrainConfig(env=TINY, timesteps=1))


def test_the_rl_announcement_says_why_a_size_changed(tmp_path, monkeypatch):
    """A batch_size of 1 is raised to 2 (PPO normalises advantages per mini-batch), which was
    announced as "cut to fit --timesteps" though nothing was cut; one rollout and one env are
    singular. Through ``train`` (it writes the sizes into the config before announcing), the
    model stubbed out after the announcement."""
    import agents.train as train_mod

    class Stop(Exception):
        pass

    def model(config):
        said.append(config.batch_size)
        raise Stop
    monkeypatch.setattr(train_mod, "_model", model)
    for batch, timesteps, expect, refuse in (
            (1, 256, "1 rollout of 256 steps × 1 env; batch_size raised to 2 (advantages are "
                     "normalised over a mini-batch)", "cut to fit"),
            (24, 64, "1 rollout of 64 steps × 1 env; cut to fit --timesteps: n_steps 64, "
                     "batch_size 16", "raised")):
        said, lines = [], []
        cfg = TrainConfig(env=TINY, timesteps=timesteps, n_steps=1024 if batch == 24 else 256,
                          batch_size=batch, references=False,
                          logdir=str(tmp_path / f"run{batch}"))
        with pytest.raises(Stop):
            train_mod.train(cfg, progress="none", echo=lines.append)
        text = next(line for line in lines if "environment steps" in line)
        assert expect in text and refuse not in text, text
        assert said == [2 if batch == 1 else 16]          # what SB3 is given


@slow
def test_cli_tiny_training_is_bounded_and_records_its_hyperparams(tmp_path, capsys):
    f = write_yaml(tmp_path / "hp.yml", f"""
{TINY}:
  n_timesteps: 5000
  n_steps: 1024
  batch_size: 128
  n_epochs: 2
  gamma: 0.999
  gae_lambda: 0.9
""")
    run = tmp_path / "run"
    code = main(["train", "--env", TINY, "--algo", "maskable-ppo", "--hyperparams", str(f),
                 "--timesteps", "64", "--gamma", "0.95", "--logdir", str(run),
                 "--no-progress", "--no-references"])
    out, err = capsys.readouterr()
    assert code == 0, err
    assert f"hp.yml [{TINY}]" in err                       # which file and entry
    assert (run / "model.zip").is_file() and (run / "ranker.pt").is_file()
    cfg = json.loads((run / "config.json").read_text())
    assert cfg["timesteps"] == 64 and cfg["gamma"] == 0.95       # flags over the file
    assert cfg["gae_lambda"] == 0.9 and cfg["n_epochs"] == 2     # the file over defaults
    assert cfg["n_steps"] == 64 and cfg["batch_size"] == 64      # cut to fit 64 steps
    assert cfg["scenario"]["cluster"] == "tiny-8"
    summary = json.loads((run / "summary.json").read_text(),
                         parse_constant=lambda c: pytest.fail(f"summary.json holds {c}"))
    assert summary["rl_steps"] == 64 and summary["updates"] == 1
    env = summary["environment"]                  # what made the file: versions, machine
    assert env["libraries"]["numpy"] == np.__version__
    assert env["libraries"]["torch"] == torch.__version__
    assert "64 environment steps" in out


@slow
def test_last_full_rollout_is_trained_and_partial_one_is_cut(tmp_path):
    cfg = TrainConfig(env=TINY, timesteps=160, n_steps=64, batch_size=32, n_epochs=1,
                      references=False, logdir=str(tmp_path / "a"))
    s = train(cfg, progress="none")
    assert s["rl_steps"] == 160 and s["updates"] == 2            # 2 × 64 + 32 not trained
    cfg = TrainConfig(env=TINY, timesteps=128, n_steps=64, batch_size=32, n_epochs=1,
                      references=False, logdir=str(tmp_path / "b"))
    s = train(cfg, progress="none")
    assert s["rl_steps"] == 128 and s["updates"] == 2


# ---------------------------------------------------------------------------- logs
@slow
def test_training_logs_have_hparams_figures_and_one_tensorboard_run(tmp_path):
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator
    run = tmp_path / "run"
    cfg = TrainConfig(env=TINY, timesteps=600, n_steps=200, batch_size=100, n_epochs=1,
                      train_seeds=2, checkpoint_steps=200, logdir=str(run))
    s = train(cfg, progress="none")
    assert s["episodes"], "no episode in 600 steps"
    e = s["episodes"][0]
    assert e["lp_return"] < 0 and e["random_return"] < 0 and e["return_vs_lp"] > 0
    runs = {p.parent for p in run.rglob("events.out.tfevents.*")}
    assert runs == {run / "tb"}                                  # one TensorBoard run
    acc = EventAccumulator(str(run / "tb"), size_guidance={"images": 0, "scalars": 0})
    acc.Reload()
    tags = acc.Tags()
    assert "figures/returns" in tags["images"]
    assert {"episode/return", "episode/return_vs_lp", "episode/lp_return"} <= set(
        tags["scalars"])
    assert any("hparams" in tag for tag in acc.PluginTagToContent("hparams"))   # HPARAMS tab
    assert (run / "returns.png").is_file()
    # one point per step on every train/* curve (the figure's dump wrote the last update's
    # values at the step of the dump before it)
    train_tags = [t for t in tags["scalars"] if t.startswith("train/")]
    assert train_tags
    for tag in train_tags:
        steps = [ev.step for ev in acc.Scalars(tag)]
        assert len(steps) == len(set(steps)), (tag, steps)
    # the reward normaliser's statistics beside model.zip (SB3 needs both to go on training)
    from stable_baselines3.common.vec_env import DummyVecEnv, VecNormalize
    from agents.train import make_env
    stats = VecNormalize.load(str(run / "vecnormalize.pkl"), DummyVecEnv([make_env(cfg, 0)]))
    assert stats.norm_reward and not stats.norm_obs and stats.ret_rms.count > 1
    assert sorted(p.name for p in (run / "checkpoints").iterdir()) == [
        "model_200_steps.zip", "model_400_steps.zip", "model_600_steps.zip",
        "model_vecnormalize_200_steps.pkl", "model_vecnormalize_400_steps.pkl",
        "model_vecnormalize_600_steps.pkl"]


@slow
def test_tensorboard_has_every_finished_episode_at_its_own_timestep(tmp_path):
    """``episode/*`` went through SB3's ``logger.record``, which keeps one value per key until
    the next dump (once per rollout): of the two episodes that end inside this one rollout of
    512 steps only the last was logged, at step 512. Now one point per finished episode, at
    the timestep it finished (``summary.json``'s episodes)."""
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator
    run = tmp_path / "run"
    cfg = TrainConfig(env=TINY, policy="mlp", timesteps=512, n_steps=512, batch_size=128,
                      n_epochs=1, references=False, logdir=str(run))
    s = train(cfg, progress="none")
    episodes = s["episodes"]
    assert len(episodes) >= 2, "fewer than two episodes in one rollout: nothing to tell apart"
    acc = EventAccumulator(str(run / "tb"), size_guidance={"scalars": 0})
    acc.Reload()
    for tag, key in (("episode/return", "return"), ("episode/avg_jct_h", "avg_jct_h"),
                     ("episode/makespan_h", "makespan_h")):
        points = acc.Scalars(tag)
        assert [p.step for p in points] == [e["timestep"] for e in episodes], tag
        assert np.allclose([p.value for p in points], [e[key] for e in episodes],
                           rtol=1e-6), tag
    assert "episode/lp_return" not in acc.Tags()["scalars"]       # --no-references: none


@slow
def test_progress_lines_when_stderr_is_piped(tmp_path):
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    proc = subprocess.run(
        [sys.executable, "-m", "hsched_cli", "train", "--env", TINY, "--timesteps", "64",
         "--logdir", str(tmp_path / "run"), "--no-references"],
        capture_output=True, text=True, cwd=ROOT, env=env, timeout=120)
    assert proc.returncode == 0, proc.stderr
    lines = [ln for ln in proc.stderr.splitlines() if ln.startswith("[hsched train]")]
    assert lines and "64/64 steps (100%)" in lines[-1]
    assert "\r" not in proc.stderr                               # no progress bar in a pipe
    assert "hyper-parameters: agents/hyperparams/maskable_ppo.yml" in proc.stderr


# ---------------------------------------------------------------------------- rl_baselines
def _rl_baselines():
    mod = sys.modules.get("rl_baselines")
    if mod is None:
        spec = importlib.util.spec_from_file_location("rl_baselines",
                                                      ROOT / "scripts" / "rl_baselines.py")
        mod = importlib.util.module_from_spec(spec)
        sys.modules["rl_baselines"] = mod                 # its dataclasses need the module
        spec.loader.exec_module(mod)
    return mod


@slow
def test_rl_baselines_tiny_table_without_training(tmp_path):
    mod = _rl_baselines()
    out = tmp_path / "doc.md"
    out.write_text("# mine\n\nkept above\n\n" + mod.BEGIN + "\nold\n" + mod.END + "\n\nbelow\n")
    assert mod.main(["--ids", TINY, "--seeds", "2", "--no-train", "--no-progress",
                     "--out", str(out)]) == 0
    text = out.read_text()
    assert "kept above" in text and "below" in text and "\nold\n" not in text
    for name in ("| random |", "| unmasked-random |", "| greedy |", "| lp |"):
        assert name in text, name
    assert f"### `{TINY}`" in text and "--seeds 2" in text
    data = json.loads(out.with_suffix(".json").read_text())
    (res,) = data["results"]
    assert res["seeds"] == [1_000_000, 1_000_001]
    table = res["summary"]
    assert table["lp"]["return"][0] > table["random"]["return"][0]
    assert table["unmasked-random"]["invalid_actions"][0] > 0
    assert table["random"]["invalid_actions"][0] == 0
    assert table["greedy"]["vs_random"]["n"] == 2
    # --render rewrites the tables from the JSON, with the original command line
    again = tmp_path / "again.md"
    assert mod.main(["--render", str(out.with_suffix(".json")), "--out", str(again)]) == 0
    assert "| greedy |" in again.read_text() and "--seeds 2" in again.read_text()


def test_paired_difference():
    mod = _rl_baselines()
    d = mod.paired([2.0, 3.0, 4.0], [1.0, 1.0, 1.0])          # d = 1, 2, 3
    assert d["mean"] == pytest.approx(2.0) and d["se"] == pytest.approx(1 / 3 ** 0.5)
    assert d["ci95"][0] == pytest.approx(2.0 - 4.3027 / 3 ** 0.5, abs=1e-3)
    assert d["beats"] is False                                  # t(2) is wide: -0.48 .. 4.48
    d = mod.paired([2.0, 2.1, 1.9, 2.0], [1.0, 1.0, 1.0, 1.0])
    assert d["beats"] is True
    assert mod.paired([1.0, 2.0, 0.0], [1.0, 1.0, 1.0])["beats"] is False


def test_rl_baselines_refuses_bad_arguments_before_running(tmp_path, capsys):
    """One line naming the flag, exit 2, nothing run: an unknown id, no seeds (an IndexError
    once the episodes had run), an unknown agent (silently ignored), a --run directory
    that is missing or is not a finished run (SB3's '.../model.zip.zip' traceback)."""
    mod = _rl_baselines()
    rank = "hsched/Rank-Tiny-v0"
    empty = tmp_path / "empty"
    empty.mkdir()
    for argv, needle in ((["--ids", "nope"], "--ids: unknown environment id 'nope'"),
                         (["--ids", f"{rank},"], "--ids: an empty entry"),
                         (["--seeds", "0"], "argument --seeds"),
                         (["--agents", "nope"], "--agents: unknown agent 'nope' (choose from "
                                                "maskable-ppo+equivariant"),
                         (["--run", f"{rank}:ppo+mlp={tmp_path / 'none'}"],
                          "no such run directory"),
                         (["--run", f"{rank}:ppo+mlp={empty}"], "has no model.zip"),
                         (["--run", f"{rank}:maskable-ppo+mlp={empty}"], "a Schedule agent"),
                         (["--render", str(tmp_path / "none.json")], "--render: no such file")):
        with pytest.raises(SystemExit) as stop:
            mod.main(argv + ["--out", str(tmp_path / "doc.md")])
        err = capsys.readouterr().err
        assert stop.value.code == 2 and needle in err and "Traceback" not in err, err
    assert not (tmp_path / "doc.md").exists()


# ---------------------------------------------------------------------------- rank-mode start
def test_init_keep_prob_is_for_the_equivariant_rank_policy():
    TrainConfig(env="hsched/Rank-Tiny-v0", init_keep_prob=0.9)
    for bad in (dict(env=TINY, init_keep_prob=0.9), dict(env="hsched/Rank-Tiny-v0",
                                                          init_keep_prob=1.0),
                dict(env="hsched/Rank-Tiny-v0", policy="mlp", init_keep_prob=0.9)):
        with pytest.raises(ConfigError, match="init_keep_prob"):
            TrainConfig(**bad)


def test_imitation_with_dagger_adds_the_rankers_own_rounds(tmp_path, monkeypatch):
    """``dagger=1``: the demonstrations are collected a second time on the same seeds, driven
    by the first fit at its operating point (its size bands included, ungated), so the data
    doubles (each regime records the same number of rounds), the held-out seeds stay held
    out, and the operating point is chosen again on all of it."""
    import agents.imitation as imitation
    from agents.ranker import Ranker, load_ranker_net

    calls = []
    collect = imitation.collect_demos

    def spy(env, seeds, **kw):
        demos = collect(env, seeds, **kw)
        calls.append((kw.get("driver"), demos))
        return demos

    monkeypatch.setattr(imitation, "collect_demos", spy)
    run = tmp_path / "run"
    cfg = TrainConfig(env="hsched/Rank-Tiny-v0", algo="imitation", imitation_seeds=3,
                      imitation_rounds=10, imitation_epochs=2, target_recall=0.95,
                      threshold_bands=(30,), dagger=1, max_kept_fraction=0.4,
                      audit_every=5, logdir=str(run))
    s = train(cfg, progress="none")
    im = s["imitation"]
    (reg,) = im["regimes"]
    assert reg["dagger_rounds"] == [reg["rounds"]] and reg["held_out_seeds"] == [2]
    # rounds cut by K, counted in both collections (Rank-Tiny's K holds every candidate)
    assert reg["cut_rounds"] == sum(d.cut_rounds for _, d in calls[:3]) == 0
    assert reg["dagger_cut_rounds"] == [sum(d.cut_rounds for _, d in calls[3:])]
    assert im["rounds"] == 2 * reg["rounds"] and im["valid_rounds"] == 2 * 10
    (it,) = im["dagger"]
    assert it["rounds_added"] == reg["rounds"]
    assert it["operating_point"] == im["operating_point"]
    first_op = it["before"]["operating_point"]
    assert first_op["rounds"] == 10                              # the LP's held-out rounds
    assert im["operating_point"]["rounds"] == 20                 # + the ranker's
    assert 0.0 <= it["before"]["own_rounds_at_operating_point"]["recall"] <= 1.0
    # the second collection is driven by the first fit as a Ranker would run it
    lp_calls, driven_calls = calls[:3], calls[3:]
    assert len(driven_calls) == 3 and all(d is None for d, _ in lp_calls)
    rankers = {id(d.__self__): d.__self__ for d, _ in driven_calls}
    (ranker,) = rankers.values()
    assert isinstance(ranker, Ranker) and ranker.gate_candidates == 0
    assert ranker.max_kept_fraction == 1.0                    # DAgger drives ungated
    assert ranker.audit_every == 0                            # and without audits
    assert ranker.threshold == pytest.approx(first_op["threshold"])
    assert [lo for lo, _ in ranker.size_thresholds] == [0, 30]
    assert any(a.shape != b.shape or not (a == b).all()        # it did drive elsewhere
               for (_, lp), (_, dr) in zip(lp_calls, driven_calls)
               for a, b in zip(lp.cand, dr.cand))
    _, meta = load_ranker_net(run / "ranker.pt")
    assert meta["dagger"] == 1
    assert meta["max_kept_fraction"] == 0.4 == Ranker.load(run / "ranker.pt").max_kept_fraction
    # the file's audits, recorded right after its unsure gate (the shipped file's key order)
    assert meta["audit_every"] == 5 == Ranker.load(run / "ranker.pt").audit_every
    keys = list(meta)
    assert keys.index("audit_every") == keys.index("max_kept_fraction") + 1


@slow
def test_ppo_starts_at_the_imitation_operating_point(tmp_path):
    """With --target-recall the warm-started PPO policy's deterministic action (keep iff
    p > ½) is the imitation network at its operating point: its logits shifted by the cut."""
    import torch as th
    run = tmp_path / "run"
    cfg = TrainConfig(env="hsched/Rank-Tiny-v0", timesteps=16, n_steps=16, batch_size=8,
                      n_epochs=1, learning_rate=1e-12, imitation_seeds=2, imitation_rounds=8,
                      imitation_epochs=2, target_recall=0.99, references=False,
                      normalize_reward=False, logdir=str(run))
    s = train(cfg, progress="none")
    cut = s["imitation"]["operating_point"]["logit_cut"]
    before = th.load(run / "imitation_ranker.pt", weights_only=True)["state_dict"]
    after = th.load(run / "ranker.pt", weights_only=True)["state_dict"]
    key = next(k for k in before if k.startswith("psi.") and k.endswith("bias")
               and before[k].numel() == 1)
    assert float(after[key]) == pytest.approx(float(before[key]) - cut, abs=1e-6)


@slow
def test_after_ppo_the_operating_points_are_named_in_the_file_that_has_them(tmp_path, capsys):
    """PPO's ranker.pt keeps at ½ and records no operating points: the printed ladder names
    imitation_ranker.pt (it said "in the file (ranker@R)", and ranker:run/ranker.pt@0.9
    failed), and the "wrote" line lists it."""
    run = tmp_path / "run"
    code = main(["train", "--env", "hsched/Rank-Tiny-v0", "--algo", "ppo", "--timesteps", "16",
                 "--n-steps", "16", "--batch-size", "8", "--n-epochs", "1",
                 "--imitation-seeds", "2", "--set", "imitation_rounds=8",
                 "--set", "imitation_epochs=2", "--target-recall", "0.99", "--no-references",
                 "--no-progress", "--logdir", str(run)])
    out, err = capsys.readouterr()
    assert code == 0, err
    points = run / "imitation_ranker.pt"
    assert (f"other operating points in {points} (ranker:{points}@R; PPO's ranker.pt has "
            f"none: it keeps at ½): R = 0.9: keep") in out, out
    assert f"operating point (in {points}, before PPO): keep threshold" in out
    wrote = next(line for line in out.splitlines() if line.startswith("wrote "))
    assert "ranker.pt, imitation_ranker.pt, model.zip, vecnormalize.pkl, config.json, summary.json" in wrote
    from agents.policy_entries import parse_policies
    assert parse_policies([f"ranker:{points}@0.9"])[0].ranker.target_recall == 0.9
    with pytest.raises(ConfigError, match="no operating point for recall 0.9"):
        parse_policies([f"ranker:{run / 'ranker.pt'}@0.9"])


@pytest.mark.parametrize("assignment,message", [
    ("imitation_epochs=0", "'imitation_epochs': must be a whole number >= 1, got 0"),
    ("imitation_lr=-1", "'imitation_lr': must be a number > 0, got -1"),
    ("hidden=abc", "'hidden': must be a whole number >= 1, got 'abc'"),
    ("hidden=0", "'hidden': must be a whole number >= 1, got 0"),
    ("target_kl=0", "'target_kl': must be a number > 0 or null"),
])
def test_set_values_checked_before_training(assignment, message, capsys, tmp_path):
    """``--set`` values get the same one-line errors as the flags (a fresh-user audit found
    tracebacks after the demonstrations were collected, and a hidden=0 network trained)."""
    assert main(["train", "--env", "hsched/Rank-Tiny-v0", "--algo", "imitation", "--set",
                 assignment, "--logdir", str(tmp_path / "run")]) == 2
    assert message in capsys.readouterr().err
    assert not (tmp_path / "run").exists()


def test_set_values_in_range_accepted():
    config = make_config("hsched/Rank-Tiny-v0", algo="imitation", imitation_lr=1e-3,
                         hidden=32, pos_weight=2)
    assert (config.imitation_lr, config.hidden, config.pos_weight) == (1e-3, 32, 2)


def test_set_values_numpy_and_text_gate():
    """A numpy number from a script becomes a plain number (config.json writes it as a
    number); a text gate is a one-line error like the other keys (review)."""
    import numpy as np
    config = make_config("hsched/Rank-Tiny-v0", algo="ppo", hidden=np.int64(32),
                         target_kl=np.float32(0.02))           # PPO's: imitation reads none
    assert type(config.hidden) is int and type(config.target_kl) is float
    with pytest.raises(Exception, match="must be a whole number >= 0, got 'abc'"):
        make_config("hsched/Rank-Tiny-v0", algo="imitation", gate_candidates="abc")


def test_a_seeded_training_workload_is_refused(tmp_path):
    """The training seeds draw the jobs: a gavel: spec with its own seed= would replay one
    job list every episode, against what --help says."""
    from hsched_cli.main import main
    assert main(["train", "--env", "hsched/Rank-Tiny-v0", "--workload",
                 "gavel:rate=4,jobs=5,seed=3", "--timesteps", "64",
                 "--logdir", str(tmp_path / "run")]) == 2
    assert not (tmp_path / "run").exists()


@pytest.mark.parametrize("fields,field,says", [
    ({"seed": -1}, "--seed", "must be in 0..4294967295"),
    ({"seed": 2**70}, "--seed", "must be in 0.."),
    ({"gamma": "abc"}, "--gamma", "must be a number"),
    ({"n_steps": "abc"}, "--n-steps", "must be a whole number"),
    ({"n_steps": 2.5}, "--n-steps", "must be a whole number"),
    ({"normalize_reward": "abc"}, "normalize_reward", "must be true or false"),
    ({"target_kl": "x"}, "target_kl", "must be a number > 0 or null"),
    ({"clip_range": None}, "clip_range", "must be a number or a string"),
])
def test_config_values_of_the_wrong_kind_name_their_field(fields, field, says):
    """A value of the wrong kind (``--set gamma=abc``, a string in a hyper-parameter file)
    is a ConfigError naming the field before anything is written, not a TypeError inside."""
    with pytest.raises(ConfigError, match=says) as err:
        TrainConfig(env=TINY, **fields)
    assert err.value.field == field


def test_every_flag_field_is_a_train_flag():
    """``FLAG_FIELDS`` (which names a field's error by its flag) are ``hsched train``'s."""
    from agents.train import FLAG_FIELDS, OWN_FLAG_FIELDS
    from hsched_cli.main import build_parser
    train = build_parser()._subparsers._group_actions[0].choices["train"]
    flags = {a.dest for a in train._actions}
    assert set(FLAG_FIELDS) <= flags
    assert set(OWN_FLAG_FIELDS) <= flags | {"episode_hours"}


def test_a_whole_number_written_as_a_float_is_taken():
    assert TrainConfig(env=TINY, timesteps=2e3).timesteps == 2000
    assert TrainConfig(env=TINY, logdir=Path("runs") / "x").logdir == Path("runs") / "x"


def test_set_of_a_make_config_argument(capsys, tmp_path):
    code = main(["train", "--env", TINY, "--policy", "mlp", "--set", "policy=equivariant",
                 "--timesteps", "8", "--logdir", str(tmp_path / "r")])
    _, err = capsys.readouterr()
    assert code == 2 and "--set policy=... and --policy both given" in err
    code = main(["train", "--env", TINY, "--set", "policy=foo", "--timesteps", "8",
                 "--logdir", str(tmp_path / "r")])
    _, err = capsys.readouterr()
    assert code == 2 and "unknown policy 'foo'" in err
    assert not (tmp_path / "r").exists()


def test_train_refuses_more_slots_than_an_environment_takes():
    from agents.train import TrainConfig
    from hsched_env.envs.base import MAX_SLOTS
    with pytest.raises(ConfigError, match="at most 4,194,304") as err:
        TrainConfig(env="hsched/Rank-Tiny-v0", slots=MAX_SLOTS + 1)
    assert err.value.field == "--slots"
    assert TrainConfig(env="hsched/Rank-Tiny-v0", slots=MAX_SLOTS).slots == MAX_SLOTS


@pytest.mark.parametrize("argv, field, says", [
    (["--gamma", "0.9", "--set", "gamma=0.5"], "--set", "and --gamma both given"),
    (["--seed", "5", "--set", "seed=3"], "--set", "and --seed both given"),
    (["--timesteps", "8", "--set", "timesteps=5"], "--set", "and --timesteps both given"),
    (["--hidden", "16", "--set", "policy_kwargs={hidden: 32}"], "--set", "and --hidden both given"),
    (["--episode-hours", "2", "--set", "imitation_hours=3"], "--set",
     "and --episode-hours both given"),
    (["--set", "logdir=elsewhere"], "--set", "the run directory is --logdir"),
    (["--regimes", "mixed"], "--regimes", "equivariant ranker's imitation"),
    (["--target-recall", "0.9"], "--target-recall", "equivariant ranker's imitation"),
    (["--imitation-seeds", "4"], "--imitation-seeds", "equivariant ranker's imitation"),
    (["--keep-cost", "0.3"], "--keep-cost", "hsched/Rank-*'s reward"),
    (["--set", "policy_kwargs={foo: 1}"], "policy_kwargs.foo", "does not take 'foo'"),
    (["--set", "policy_kwargs={hidden: 1.7}"], "policy_kwargs.hidden", "whole number >= 1"),
    (["--policy", "mlp", "--hidden", "8"], "--hidden", "equivariant network's width"),
    (["--policy", "mlp", "--set", "policy_kwargs={net_arch: [0]}"], "policy_kwargs.net_arch",
     "layer widths"),
    # nested keywords the optimizer or the extractor do not take failed in SB3 after the run
    # folder (and, for a ranker, the whole imitation warm start) was written
    (["--set", "policy_kwargs={optimizer_kwargs: {epsx: 1}}"],
     "policy_kwargs.optimizer_kwargs.epsx", "the optimizer (torch.optim.Adam) does not take"),
    (["--policy", "mlp", "--set", "policy_kwargs={features_extractor_kwargs: {foo: 1}}"],
     "policy_kwargs.features_extractor_kwargs.foo", "CombinedExtractor does not take 'foo'"),
    (["--set", "policy_kwargs={optimizer_kwargs: {lr: 0.1}}"],
     "policy_kwargs.optimizer_kwargs.lr", "the learning rate is learning_rate"),
    (["--set", "policy_kwargs={optimizer_kwargs: {eps: abc}}"],
     "policy_kwargs.optimizer_kwargs", "the optimizer (torch.optim.Adam) refuses"),
    (["--set", "policy_kwargs={optimizer_kwargs: {betas: 5}}"],
     "policy_kwargs.optimizer_kwargs", "the optimizer (torch.optim.Adam) refuses"),
])
def test_train_refuses_what_it_would_not_read_before_writing_anything(capsys, tmp_path, argv,
                                                                       field, says):
    """A flag that --set would silently override, an option the run would not read, or
    policy_kwargs the policy cannot take: one line naming it, and no run folder."""
    run = tmp_path / "run"
    assert main(["train", "--env", TINY, "--logdir", str(run), *argv]) == 2
    err = capsys.readouterr().err
    assert f"field '{field}'" in err and says in err
    assert not run.exists()


def test_train_names_a_negative_imitation_seed_count(capsys, tmp_path):
    """``--imitation-seeds -1`` said "imitation needs demonstrations"; it is a count >= 0."""
    run = tmp_path / "run"
    with pytest.raises(SystemExit):
        main(["train", "--env", "hsched/Rank-Tiny-v0", "--algo", "imitation",
              "--imitation-seeds", "-1", "--logdir", str(run)])
    err = capsys.readouterr().err
    assert "--imitation-seeds: expected a whole number >= 0, got '-1'" in err
    assert not run.exists()


RANK_TINY = "hsched/Rank-Tiny-v0"


def test_train_set_null_is_applied_and_an_empty_value_refused(capsys, tmp_path, monkeypatch):
    """``--set target_kl=null`` sets no KL limit (it was dropped as a flag not given, so the
    file's 0.05 stayed); ``--set learning_rate=`` (no value) is refused, not dropped."""
    import agents.train as train_module

    class Built(BaseException):
        pass

    seen = {}

    def stop(config, overwrite=False):
        seen["config"] = config
        raise Built

    monkeypatch.setattr(train_module, "prepare_run_dir", stop)
    with pytest.raises(Built):
        main(["train", "--env", RANK_TINY, "--logdir", str(tmp_path / "run"), "--set",
              "target_kl=null"])
    assert seen["config"].target_kl is None
    with pytest.raises(Built):
        main(["train", "--env", RANK_TINY, "--logdir", str(tmp_path / "run")])
    assert seen["config"].target_kl == 0.05
    assert main(["train", "--env", RANK_TINY, "--logdir", str(tmp_path / "run"), "--set",
                 "learning_rate="]) == 2
    assert ("field '--set': 'learning_rate=' gives no value (write learning_rate=null for "
            "none)") in capsys.readouterr().err
    for key in ("algo", "policy", "hyperparams"):      # null there was dropped silently
        assert main(["train", "--env", RANK_TINY, "--logdir", str(tmp_path / "run"), "--set",
                     f"{key}=null"]) == 2
        assert f"--set {key}=null would mean the default" in capsys.readouterr().err


@pytest.mark.parametrize("argv, field, says", [
    # --algo imitation runs no RL training
    (["--algo", "imitation", "--gamma", "0.5"], "--gamma", "--algo imitation does not run"),
    (["--algo", "imitation", "--timesteps", "5"], "--timesteps", "--algo imitation does not"),
    (["--algo", "imitation", "--n-envs", "2"], "--n-envs", "--algo imitation does not run"),
    (["--algo", "imitation", "--keep-cost", "0.3"], "--keep-cost", "does not run"),
    (["--algo", "imitation", "--train-seeds", "3"], "--train-seeds", "does not run"),
    (["--algo", "imitation", "--learning-rate", "0.1"], "--learning-rate", "does not run"),
    (["--algo", "imitation", "--set", "normalize=false"], "normalize_reward", "does not run"),
    (["--algo", "imitation", "--no-references"], "--no-references", "does not run"),
    (["--algo", "imitation", "--set", "policy_kwargs={ortho_init: false}"], "policy_kwargs",
     "does not run"),
    # each regime has its own scenario, seeds and rounds
    (["--algo", "imitation", "--regimes", "mixed", "--imitation-seeds", "3"],
     "--imitation-seeds", "each regime of 'mixed' records its own seeds"),
    (["--algo", "imitation", "--regimes", "mixed", "--set", "imitation_rounds=5"],
     "imitation_rounds", "records its own rounds per seed"),
    (["--algo", "imitation", "--regimes", "mixed", "--cluster", "sia-64"], "--cluster",
     "sets its own cluster, workload and slots"),
    (["--algo", "imitation", "--regimes", "mixed", "--slots", "100"], "--slots",
     "sets its own cluster, workload and slots"),
    (["--algo", "imitation", "--regimes", "mixed", "--workload", "gavel:rate=1,jobs=5"],
     "--workload", "sets its own cluster, workload and slots"),
    (["--algo", "imitation", "--regimes", "mixed", "--episode-hours", "0"], "--episode-hours",
     "does not reach the --regimes demonstrations: their horizon stays imitation_hours (3 h)"),
    (["--algo", "ppo", "--regimes", "mixed", "--imitation-seeds", "0"], "--imitation-seeds",
     "for PPO without a warm start, drop --regimes"),
    # the imitation's own settings where no imitation reads them
    (["--algo", "ppo", "--target-recall", "0.9", "--threshold-bands", "100"],
     "--threshold-bands", "would reach imitation_ranker.pt only"),
    (["--algo", "ppo", "--imitation-seeds", "0", "--set", "imitation_epochs=3"],
     "imitation_epochs", "which --imitation-seeds 0 without --regimes skips"),
    (["--policy", "mlp", "--set", "imitation_epochs=3"], "imitation_epochs",
     "equivariant ranker's imitation"),
    (["--algo", "imitation", "--set", "imitation_hours=2"], "imitation_hours",
     "is the horizon of the --regimes demonstrations"),
    (["--policy", "mlp", "--gate-candidates", "5"], "--gate-candidates",
     "which --policy mlp does not write"),
    (["--policy", "mlp", "--audit-every", "8"], "--audit-every",
     "which --policy mlp does not write"),
    (["--audit-every", "-1"], "--audit-every", "must be a whole number >= 0, got -1"),
    # values out of range (they failed after the run folder was written, or were taken)
    (["--algo", "imitation", "--regimes", "mixed", "--set", "imitation_hours=-3"],
     "imitation_hours", "must be a number >= 0 (hours; 0 or null: no limit) or null, got -3"),
    (["--set", "reference_budget=-1"], "reference_budget", "must be a number >= 0, got -1"),
    (["--set", "progress_every_s=-1"], "progress_every_s", "must be a number >= 0, got -1"),
])
def test_train_refuses_options_this_run_would_not_read(capsys, tmp_path, argv, field, says):
    """Each option given that the run would not read (or out of range) is refused in one line
    naming it, before the run folder is written (they were all accepted and ignored)."""
    run = tmp_path / "run"
    assert main(["train", "--env", RANK_TINY, "--logdir", str(run), *argv]) == 2
    err = capsys.readouterr().err
    assert f"field '{field}': " in err and says in err, err
    assert err.count("\n") == 1 and not run.exists()


def test_schedule_ids_refuse_the_imitations_settings(capsys, tmp_path):
    run = tmp_path / "run"
    assert main(["train", "--env", TINY, "--set", "imitation_epochs=3", "--logdir",
                 str(run)]) == 2
    err = capsys.readouterr().err
    assert "field 'imitation_epochs': is an argument of the equivariant ranker's imitation" in err
    assert not run.exists()
    for flag, value in (("--gate-candidates", "5"), ("--audit-every", "8")):
        assert main(["train", "--env", TINY, flag, value, "--logdir", str(run)]) == 2
        err = capsys.readouterr().err
        assert f"field '{flag}': is recorded in a rank-mode ranker file" in err
        assert not run.exists()


class _Accepted(Exception):
    pass


@pytest.mark.parametrize("argv", [
    ["--env", RANK_TINY, "--algo", "imitation", "--episode-hours", "1"],
    ["--env", RANK_TINY, "--algo", "imitation", "--regimes", "mixed", "--episode-hours", "2"],
    ["--env", RANK_TINY, "--algo", "imitation", "--regimes", "mixed",
     "--set", "imitation_hours=0"],
    ["--env", RANK_TINY, "--algo", "imitation", "--imitation-seeds", "4",
     "--set", "imitation_rounds=5", "--set", "imitation_epochs=2"],
    ["--env", RANK_TINY, "--algo", "ppo", "--regimes", "mixed", "--cluster", "sia-64",
     "--episode-hours", "0"],                          # PPO's own episodes read them
    ["--env", RANK_TINY, "--algo", "ppo", "--target-recall", "0.9", "--keep-cost", "0.2"],
    ["--env", RANK_TINY, "--algo", "ppo", "--imitation-seeds", "0", "--gate-candidates", "5"],
    ["--env", RANK_TINY, "--algo", "imitation", "--hyperparams",    # the file's PPO values
     str(ROOT / "agents" / "hyperparams" / "ppo.yml"), "--hidden", "16"],   # are inert
    ["--env", TINY, "--episode-hours", "2", "--set", "progress_every_s=0",
     "--set", "reference_budget=0"],
    ["--env", TINY, "--set", "policy_kwargs={optimizer_kwargs: {eps: 1.0e-5}}"],
    ["--env", TINY, "--policy", "mlp",
     "--set", "policy_kwargs={features_extractor_kwargs: {cnn_output_dim: 64}}"],
])
def test_options_the_run_reads_are_accepted(monkeypatch, capsys, argv):
    import agents.train

    def stop(config, overwrite=False):
        raise _Accepted
    monkeypatch.setattr(agents.train, "prepare_run_dir", stop)
    with pytest.raises(_Accepted):
        main(["train", *argv])
    assert "error" not in capsys.readouterr().err


def test_the_documented_training_commands_pass_their_checks(monkeypatch, capsys):
    """The shipped ranker's command (agents/data/README.md, README.md, docs/agents.md) and the
    documented PPO commands are accepted as written."""
    import shlex

    import agents.train

    def stop(config, overwrite=False):
        raise _Accepted
    monkeypatch.setattr(agents.train, "prepare_run_dir", stop)
    # --portable-math's machine check: this test is about the options, on any machine
    monkeypatch.setattr("agents.portable_math.check_environment", lambda: None)
    commands = []
    for doc in ("agents/data/README.md", "README.md", "docs/agents.md"):
        text = re.sub(r"\\\n\s*", " ", (ROOT / doc).read_text(encoding="utf-8"))
        commands += [m.group(1).split("#")[0] for m in
                     re.finditer(r"hsched train (--env hsched/[^\s`]+[^\n`]*)", text)]
    shipped = [c for c in commands if "--regimes mixed" in c and "--dagger 1" in c]
    assert len(shipped) >= 3 and len(commands) >= 8
    for command in commands:
        argv = shlex.split(command)
        if "my.yml" in argv or argv[-1] == "--logdir":    # a file of yours; cut in the text
            continue
        with pytest.raises(_Accepted):
            main(["train", *argv])
        assert "error" not in capsys.readouterr().err, command


def test_imitation_with_one_seed_is_refused(capsys, tmp_path):
    """One demonstration seed would be its own held-out seed: recall and operating point
    measured on the training rounds."""
    assert main(["train", "--env", "hsched/Rank-Tiny-v0", "--algo", "imitation",
                 "--imitation-seeds", "1", "--target-recall", "0.99",
                 "--logdir", str(tmp_path / "run")]) == 2
    assert "'--imitation-seeds': needs at least 2" in capsys.readouterr().err


def test_a_target_recall_without_demonstrations_is_refused(capsys, tmp_path):
    """PPO on the equivariant ranker without a warm start: no operating point to choose. The
    shipped ppo.yml's target_recall for the Tiny ranker is inert there, not an error."""
    cfg = make_config("hsched/Rank-Tiny-v0", algo="ppo", imitation_seeds=0)
    assert cfg.target_recall == 0.99 and not cfg.warm_imitation
    assert main(["train", "--env", "hsched/Rank-Tiny-v0", "--imitation-seeds", "0",
                 "--target-recall", "0.9", "--logdir", str(tmp_path / "run")]) == 2
    assert "'--target-recall': chooses the operating point" in capsys.readouterr().err
    assert not (tmp_path / "run").exists()


@pytest.mark.parametrize("text, says", [
    ("hsched/Schedul-Tiny-v0:\n  gamma: 0.9\n", "unknown environment id 'hsched/Schedul-Tiny-v0'"),
    (f"{TINY}:\n  gamma: 0.9\n{TINY}:\n  gamma: 0.5\n", "duplicate key"),
    (f"{TINY}:\n  gamma: 0.9\n  gamma: 0.5\n", "duplicate key 'gamma'"),
    (f"{TINY}:\n  timesteps: 10\n  n_timesteps: 20\n", "'timesteps' and 'n_timesteps' set the same"),
    (f"{TINY}:\n  n_steps: 0x40\n", "'0x40' is not a plain decimal number (YAML reads it as 64)"),
    (f"{TINY}:\n  n_epochs: 010\n", "'010' is not a plain decimal number (YAML reads it as 8)"),
])
def test_hyperparameter_files_refuse_what_would_be_silently_dropped(tmp_path, text, says):
    """A misspelt id (the intended one would run on the defaults), a key given twice (YAML
    keeps the last), two names of one value."""
    f = write_yaml(tmp_path / "hp.yml", text)
    with pytest.raises(ConfigError, match=re.escape(says)):
        make_config(TINY, algo="maskable-ppo", hyperparams=f)


def test_the_shipped_hyperparameter_files_pass_the_checks():
    from agents.train import read_hyperparams
    files = sorted((Path(__file__).resolve().parents[1] / "agents" / "hyperparams").glob("*.yml"))
    assert len(files) >= 4
    for f in files:
        assert read_hyperparams(f)


def test_set_values_read_as_numbers_must_be_plain_decimals():
    from agents.train import parse_assignment
    assert parse_assignment("n_steps=64") == ("n_steps", 64)
    assert parse_assignment("gamma=.99") == ("gamma", 0.99)
    assert parse_assignment("normalize=false") == ("normalize", False)
    assert parse_assignment("gamma=1.0e+0") == ("gamma", 1.0)
    for text in ("learning_rate=0x10", "n_steps=1_0", "n_steps=1:30", "n_steps=017",
                 "n_steps=0b11"):
        with pytest.raises(ConfigError, match="not a plain decimal number"):
            parse_assignment(text)


def test_a_logdir_with_only_the_users_files_is_not_called_a_run(tmp_path):
    from agents.train import TrainConfig, prepare_run_dir
    (tmp_path / "notes.txt").write_text("mine")
    config = TrainConfig(env=TINY, logdir=str(tmp_path))
    with pytest.raises(ConfigError, match="already holds files of yours"):
        prepare_run_dir(config)
    (tmp_path / "config.json").write_text("{}")         # a file named as a run's: not one
    with pytest.raises(ConfigError, match="already holds files of yours"):
        prepare_run_dir(config)
    (tmp_path / "config.json").write_text(json.dumps(dataclasses.asdict(config)))
    with pytest.raises(ConfigError, match="already holds a run"):
        prepare_run_dir(config)


def test_every_shipped_hyperparameter_entry_makes_a_config():
    """Every entry of the shipped files passes the per-policy checks (policy_kwargs, the
    imitation-only and Rank-only fields) with the algorithm and policy its file is for."""
    from agents.train import default_hyperparams_file, read_hyperparams
    made = 0
    for algo, policy in (("maskable-ppo", "equivariant"), ("maskable-ppo", "mlp"),
                         ("ppo", "equivariant"), ("ppo", "mlp")):
        f = default_hyperparams_file(algo, policy)
        for env_id in read_hyperparams(f):
            config = make_config(env_id, algo=algo, policy=policy)
            assert config.hyperparams.endswith(f"[{env_id}]")
            made += 1
    assert made >= 8


@pytest.mark.parametrize("argv, says", [
    (["--imitation-seeds", "0", "--set", "imitation_seeds=16"], "and --imitation-seeds both"),
    (["--seed", "0", "--set", "seed=5"], "and --seed both given"),
    (["--set", "gamma=0.9", "--set", "gamma=0.5"], "sets gamma a second time"),
    (["--set", "policy_kwargs={hidden: 16}", "--set", "hidden=32"], "sets hidden a second"),
    (["--set", "policy_kwargs={net_arch: [0x40]}"], "'0x40' is not a plain decimal number"),
])
def test_set_conflicts_with_zero_flags_repeats_and_nested_numbers(capsys, tmp_path, argv, says):
    run = tmp_path / "run"
    assert main(["train", "--env", "hsched/Rank-Tiny-v0", "--logdir", str(run), *argv]) == 2
    assert says in capsys.readouterr().err and not run.exists()


def test_options_set_in_a_file_that_the_run_would_not_read_name_the_file(tmp_path):
    f = write_yaml(tmp_path / "hp.yml", f"{TINY}:\n  imitation_seeds: 4\n")
    with pytest.raises(ConfigError, match="equivariant ranker's imitation") as err:
        make_config(TINY, algo="maskable-ppo", hyperparams=f)
    assert "hp.yml" in str(err.value) and err.value.field == "imitation_seeds"
    shipped = Path(__file__).resolve().parents[1] / "agents" / "hyperparams" / "ppo.yml"
    with pytest.raises(ConfigError) as err:        # the equivariant file's target_recall
        make_config("hsched/Rank-Tiny-v0", policy="mlp", hyperparams=shipped)
    assert "ppo.yml" in str(err.value) and err.value.field == "target_recall"


def test_equivariant_policy_takes_optimizer_kwargs():
    config = make_config("hsched/Rank-Tiny-v0",
                         policy_kwargs={"optimizer_kwargs": {"eps": 1e-5}})
    assert config.policy_kwargs == {"optimizer_kwargs": {"eps": 1e-5}}


def test_the_progress_line_compares_returns_over_the_same_episodes():
    """The LP's and random's means beside the agent's are over the episodes that have
    references; when some went without, the agent's mean over those same episodes is shown
    too (the line read -16.50 over 10 episodes against an LP's -11.64 from one of them)."""
    from agents.train import references_note
    nan = float("nan")
    eps = [{"return": -10.0, "lp_return": -8.0, "random_return": -12.0},
           {"return": -20.0, "lp_return": nan, "random_return": nan},
           {"return": -30.0, "lp_return": -24.0, "random_return": -40.0}]
    assert references_note(eps) == "; on the 2 with references -20.00 (LP -16.00, random -26.00)"
    assert references_note([eps[0], eps[2]]) == " (LP -16.00, random -26.00)"
    assert references_note([eps[1]]) == ""


@slow
def test_training_seeds_get_references_after_an_imitation_warm_start(tmp_path):
    """The first ``REFERENCE_FREE_SEEDS`` training seeds always get references: the warm
    start's LP returns (one per imitation seed) no longer use the allowance up, which left
    6 of 56 Rank-Tiny episodes with references."""
    from agents.train import REFERENCE_FREE_SEEDS, train
    cfg = TrainConfig(env=RANK_TINY, algo="ppo", timesteps=2048, n_steps=256, batch_size=128,
                      n_epochs=1, imitation_seeds=REFERENCE_FREE_SEEDS, imitation_epochs=1,
                      train_seeds=5000, reference_budget=0.0,
                      logdir=str(tmp_path / "run"))
    s = train(cfg, progress="none")
    seeds = list(dict.fromkeys(e["seed"] for e in s["episodes"]))
    assert len(seeds) > REFERENCE_FREE_SEEDS, seeds       # (seeds from 0..4999: some new)
    referenced = {e["seed"] for e in s["episodes"] if np.isfinite(e["lp_return"])
                  and np.isfinite(e["random_return"])}
    assert referenced == set(seeds[:REFERENCE_FREE_SEEDS])
