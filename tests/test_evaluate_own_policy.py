"""Evaluating your own agent (``agents.evaluate``, ``hsched evaluate``): ``module:callable``
entry points in rank mode (``keep``) and select mode (``act``), fixed-size agents (``slots``),
``sb3:PATH.zip`` models behind ``--trust-sb3-zip``, the custom ``--cluster/--workload``
scenario, and outputs that never overwrite an earlier evaluation silently.

The agents below are importable as ``test_evaluate_own_policy:<name>`` (pytest puts ``tests/``
on the path)."""

from __future__ import annotations

import json
import math
import subprocess
import sys
import traceback
from pathlib import Path

import numpy as np
import pytest

from agents.evaluate import (SMOKE, custom_suite, evaluate, format_report, output_dir,
                             parse_policies, report_json, write_outputs)
from hsched_cli.main import main
from hsched_env.errors import ConfigError

slow = pytest.mark.slow

ME = __name__.rsplit(".", 1)[-1]          # "test_evaluate_own_policy"
TINY = ("tiny-8", "gavel:rate=8,jobs=16,duration_scale=0.05")


# ---------------------------------------------------------------------------- agents
class KeepAll:
    """Rank mode: keeps every candidate, so the LP solves each round whole (= pure-lp)."""

    name = "keep-all"

    def __init__(self) -> None:
        self.calls = 0

    def keep(self, obs, env):
        self.calls += 1
        return (np.asarray(obs["valid"]) > 0.5).astype(np.int8)


class ReferenceScheduler:
    """Select mode: plays the LP reference (``ScheduleEnv.reference_action``)."""

    name = "lp-reference"

    def act(self, obs, env):
        return env.unwrapped.reference_action()


def make_reference_scheduler():
    """A factory: ``module:callable`` calls it with no arguments."""
    return ReferenceScheduler()


class FixedSlots:
    """Rank mode with a fixed K: records what it was shown."""

    slots = 8

    def __init__(self) -> None:
        self.shapes: set[tuple] = set()
        self.ks: set[int] = set()

    def keep(self, obs, env):
        self.shapes.add(np.asarray(obs["valid"]).shape)
        self.ks.add(env.unwrapped.K)
        return (np.asarray(obs["valid"]) > 0.5).astype(np.int8)


class FixedSelect:
    """Select mode with ``slots`` and ``env_kwargs``: commits every round at once."""

    name = "commit-only"
    slots = 5
    env_kwargs = {"candidate_filter": "score"}

    def __init__(self) -> None:
        self.seen: set[tuple] = set()

    def act(self, obs, env):
        self.seen.add((np.asarray(obs["valid"]).shape, env.unwrapped.candidate_filter))
        return env.unwrapped.K


class WrongShape:
    name = "wrong-shape"

    def keep(self, obs, env):
        return np.ones(env.unwrapped.K + 1, dtype=np.int8)


class KeepProbabilities:
    """Rank mode: returns keep probabilities (0.9 per valid slot), not keep bits."""

    name = "keep-probabilities"

    def keep(self, obs, env):
        return (np.asarray(obs["valid"]) > 0.5) * 0.9


class KeepTwos:
    name = "keep-twos"

    def keep(self, obs, env):
        return (np.asarray(obs["valid"]) > 0.5).astype(np.int64) * 2


class KeepComplexOnes:
    name = "keep-complex-ones"

    def keep(self, obs, env):
        return (np.asarray(obs["valid"]) > 0.5).astype(np.complex128)


class VectorAction:
    name = "vector-action"

    def act(self, obs, env):
        return np.zeros(3, dtype=np.int64)


class OnlyInvalid:
    name = "only-invalid"

    def act(self, obs, env):
        return -1


class Both:
    def keep(self, obs, env):
        return None

    def act(self, obs, env):
        return 0


NOT_AN_AGENT = 42
keep_all = KeepAll()              # an object: used as it is, not called


class BadEnvKwargs:
    env_kwargs = {"workload": "gavel:jobs=1"}

    def act(self, obs, env):
        return 0


class WrongKindEnvKwargs(KeepAll):
    """A rank agent whose env_kwargs value is of the wrong kind (a string, as from YAML)."""
    env_kwargs = {"keep_cost": "0.1"}


class CrashOnRound3(KeepAll):
    """A rank agent with a bug: its third keep() divides by zero."""

    name = "crash-on-3"

    def keep(self, obs, env):
        if self.calls == 2:
            return 1 / 0
        return super().keep(obs, env)


class KeepThenStop:
    """Rank mode, pruning the rounding too: keeps every candidate for 10 rounds, then none,
    so the waiting jobs never run and the simulator stops the run as stalled."""

    name = "keep-then-stop"
    env_kwargs = {"prune": "all"}

    def __init__(self) -> None:
        self.calls = 0

    def keep(self, obs, env):
        self.calls += 1
        valid = (np.asarray(obs["valid"]) > 0.5).astype(np.int8)
        return valid if self.calls <= 10 else np.zeros_like(valid)


class CrashAct:
    """A select agent with a bug in act()."""

    def act(self, obs, env):
        raise KeyError("no such slot")


class RaisesConfigError(KeepAll):
    """A rank agent whose keep() raises one of HeteroSched's own errors."""

    def keep(self, obs, env):
        raise ConfigError("my agent's setting is wrong", field="my_setting")


# ---------------------------------------------------------------------------- smoke
@pytest.fixture(scope="module")
def smoke():
    return evaluate(SMOKE, ["pure-lp", f"{ME}:KeepAll", f"{ME}:make_reference_scheduler"],
                    progress=False)


def _run(report, label):
    return next(r for r in report.runs if r.label == label)


def _row(report, label):
    return next(r for r in report.rows if r["policy"] == label)


@slow
def test_entry_point_rank_agent_gives_the_pure_lp_schedule(smoke):
    assert smoke.policies == ["pure-lp", "keep-all", "lp-reference"]
    lp, mine = _run(smoke, "pure-lp"), _run(smoke, "keep-all")
    assert mine.kind == "ranker" and not mine.slots_fixed
    assert mine.slots >= mine.round_candidates_max and mine.overflow_max == 0
    assert [(j.job_id, j.finish_s) for j in mine.records] == \
        [(j.job_id, j.finish_s) for j in lp.records]
    assert mine.metrics["avg_jct_s"] == pytest.approx(lp.metrics["avg_jct_s"], rel=1e-9)
    assert _row(smoke, "keep-all")["kept_frac_mean"] == 1.0
    assert _row(smoke, "keep-all")["kept_frac_ranked_mean"] == 1.0      # it has no gate
    assert "keep-all: " + ME + ":KeepAll; rank mode" in format_report(smoke)


@slow
def test_select_agent_playing_the_reference_reproduces_pure_lp(smoke):
    lp, mine = _run(smoke, "pure-lp"), _run(smoke, "lp-reference")
    assert mine.kind == "scheduler" and mine.slots == 64 and mine.end_reason == "completed"
    assert mine.metrics["avg_jct_s"] == pytest.approx(lp.metrics["avg_jct_s"], rel=1e-6)
    assert mine.metrics["jobs_completed"] == 30
    assert mine.invalid_actions == 0 and mine.placements > 0
    # decision time per round: the environment's own (its LP) + the agent's inference
    assert mine.decision_s.size == mine.ranker_s.size == mine.lp_decision_s.size > 0
    assert np.allclose(mine.decision_s, mine.lp_decision_s + mine.ranker_s)
    assert (mine.ranker_s > 0).all()
    row = _row(smoke, "lp-reference")
    assert row["placements"] == mine.placements and row["recall"] is None
    text = format_report(smoke)
    assert "lp-reference: decision = environment" in text and "0 invalid actions" in text
    data = json.loads(json.dumps(report_json(smoke)))
    assert data["per_seed"][2]["invalid_actions"] == 0
    assert "select mode" in data["sources"]["lp-reference"]


# ---------------------------------------------------------------------------- tiny scenario
def test_fixed_slots_agent_gets_exactly_its_k():
    agent = FixedSlots()
    report = evaluate(custom_suite(*TINY), [agent], progress=False)
    run = report.runs[0]
    assert agent.shapes == {(8,)} and agent.ks == {8}
    assert run.slots == 8 and run.slots_fixed
    assert run.round_candidates_max > 8 and run.overflow_max == run.round_candidates_max - 8
    text = format_report(report)
    assert "K = 8 slots, fixed by the agent" in text
    assert f"K >= {run.round_candidates_max} shows every candidate" in text


def test_a_stalled_agent_counts_its_waiting_jobs_in_time_in_system():
    """An agent that stops running jobs: its unfinished jobs count in in-sys h up to the
    stall (they were left out, which made it look faster than the LP), and it has no
    makespan."""
    from hsched_env.simulator import STALL_ROUNDS
    report = evaluate(custom_suite(*TINY), ["pure-lp", KeepThenStop()], progress=False)
    lp, mine = report.runs
    assert lp.end_reason == "completed" and mine.end_reason == "stalled"
    waiting = [r for r in mine.records if not r.done]
    assert 0 < len(waiting) < len(mine.records)
    ends = [r.finish_s if r.done else None for r in mine.records]
    stall = mine.metrics["avg_time_in_system_s"] * len(ends) - sum(
        e - r.arrival_s for e, r in zip(ends, mine.records) if e is not None)
    stall_at = (stall + sum(r.arrival_s for r in waiting)) / len(waiting)
    # each waited until the stall: the end of a round, after STALL_ROUNDS idle rounds
    assert stall_at >= STALL_ROUNDS * 300.0
    assert stall_at == pytest.approx(300.0 * round(stall_at / 300.0), abs=1e-6)
    assert mine.metrics["avg_time_in_system_s"] > 10 * lp.metrics["avg_time_in_system_s"]
    assert np.isnan(mine.metrics["makespan_s"]) and not np.isnan(lp.metrics["makespan_s"])
    text = format_report(report)
    assert (f"keep-then-stop: ended early (stalled: no job ran for {STALL_ROUNDS:,} rounds "
            f"with jobs waiting and no arrivals left)") in text


@pytest.mark.slow
def test_default_slots_agent_told_when_rounds_overflow():
    """An agent without its own ``slots`` gets the environment's K; when rounds hold more
    candidates the report says so and what K would show them all (it printed only the
    overflow count)."""
    report = evaluate(custom_suite("sia-64", "gavel:rate=20,jobs=40,duration_scale=0.05"),
                      [ReferenceScheduler()], progress=False)
    run = report.runs[0]
    assert not run.slots_fixed and run.overflow_max > 0
    text = format_report(report)
    assert (f"K = {run.slots} slots, the environment's default; rounds had up to "
            f"{run.round_candidates_max} candidates") in text
    assert f"K >= {run.round_candidates_max} shows every candidate" in text


def test_fixed_slots_select_agent_and_env_kwargs():
    entry, = parse_policies([f"{ME}:FixedSelect"])
    assert entry.kind == "scheduler" and entry.slots == 5
    assert entry.env_kwargs == {"candidate_filter": "score"}
    report = evaluate(custom_suite(*TINY), [entry], progress=False)
    assert entry.agent.seen == {((5,), "score")}
    run = report.runs[0]
    assert run.slots == 5 and run.placements == 0 and run.invalid_actions == 0
    assert run.lp_vars.max() == 0                   # "score": no LP fills the slots


def test_an_env_kwargs_value_the_environment_refuses_names_the_agent():
    entry, = parse_policies([f"{ME}:WrongKindEnvKwargs"])
    with pytest.raises(ConfigError, match="--policies") as err:
        evaluate(custom_suite(*TINY), [entry], progress=False)
    text = str(err.value)
    assert "cannot build RankEnv with its env_kwargs {'keep_cost': '0.1'}" in text
    assert "keep_cost must be a number >= 0" in text


def test_an_agent_of_invalid_actions_ends_with_a_clear_reason():
    report = evaluate(custom_suite(*TINY), [f"{ME}:OnlyInvalid"], progress=False)
    run = report.runs[0]
    assert run.end_reason in ("step_cap", "invalid_actions")
    assert run.invalid_actions >= 1000 and run.placements == 0
    assert run.decision_s.size == run.ranker_s.size
    assert "only-invalid: ended early" in format_report(report)


def test_bad_entry_points_give_clear_errors():
    cases = {
        "no_such_module_xyz:agent": "cannot import module 'no_such_module_xyz'",
        f"{ME}:NoSuchThing": "has no attribute 'NoSuchThing'",
        f"{ME}:NOT_AN_AGENT": "neither an agent",
        f"{ME}:Both": "both keep() and act()",
        f"{ME}:BadEnvKwargs": "env_kwargs cannot set workload",
        "not a name:x": "not a policy name",
        "ranker@abc": "must be a target recall",
        "ranker@": "must be a target recall",
    }
    for spec, words in cases.items():
        with pytest.raises(ConfigError, match="--policies") as err:
            parse_policies([spec])
        assert words in str(err.value), (spec, str(err.value))
    # a class is instantiated, an agent object used as it is
    assert isinstance(parse_policies([f"{ME}:KeepAll"])[0].ranker, KeepAll)
    assert parse_policies([f"{ME}:keep_all"])[0].ranker is keep_all


def test_wrong_action_shapes_name_the_expected_shape_and_k():
    with pytest.raises(ConfigError) as err:
        evaluate(custom_suite(*TINY), [f"{ME}:WrongShape"], progress=False)
    msg = str(err.value)
    assert "returned keep bits of shape" in msg and "K=" in msg and "expected (" in msg
    K = int(msg.split("K=")[1].split()[0])
    assert f"shape ({K + 1},)" in msg and f"expected ({K},)" in msg
    with pytest.raises(ConfigError) as err:
        evaluate(custom_suite(*TINY), [f"{ME}:VectorAction"], progress=False)
    msg = str(err.value)
    assert "shape (3,)" in msg and "one int action" in msg and "K=64" in msg


@pytest.mark.parametrize("agent, holds", [("KeepProbabilities", "holds 0.9"),
                                           ("KeepTwos", "holds 2"),
                                           ("KeepComplexOnes", "complex numbers")])
def test_keep_values_that_are_not_bits_are_refused_naming_the_agent(agent, holds):
    """Keep probabilities are refused before any cast: as int8 0.9 became 0 (the agent kept
    nothing, the run stalled), while its recall counted them kept (1.000 beside kept 0%)."""
    with pytest.raises(ConfigError) as err:
        evaluate(custom_suite(*TINY), [f"{ME}:{agent}"], progress=False)
    msg = str(err.value)
    assert err.value.field == "--policies" and "\n" not in msg
    label = parse_policies([f"{ME}:{agent}"])[0].label
    assert f"{label!r} returned keep values that are not keep bits" in msg, msg
    assert holds in msg and ("threshold probabilities" in msg or "complex" in holds)


def test_ranker_zip_points_to_sb3(tmp_path):
    path = tmp_path / "my_ppo.zip"
    path.write_bytes(b"PK")
    with pytest.raises(ConfigError) as err:
        parse_policies([f"ranker:{path}"])
    assert f"sb3:{path} --trust-sb3-zip" in str(err.value)
    with pytest.raises(ConfigError, match="--trust-sb3-zip"):       # before anything loads
        parse_policies([f"sb3:{path}"])
    with pytest.raises(ConfigError, match="unknown SB3 algorithm 'sac'"):
        parse_policies([f"sb3:sac:{path}"], trust_sb3_zip=True)
    with pytest.raises(ConfigError, match="cannot read"):           # not an SB3 zip
        parse_policies([f"sb3:{path}"], trust_sb3_zip=True)
    # trusting zips with none named allows nothing: refused, as --max-kept-fraction is
    with pytest.raises(ConfigError, match="the policies name none") as err:
        parse_policies(["pure-lp", "fifo"], trust_sb3_zip=True)
    assert err.value.field == "--trust-sb3-zip"
    with pytest.raises(ConfigError, match="sb3: needs a model zip"):    # its own error
        parse_policies(["sb3"], trust_sb3_zip=True)


# ---------------------------------------------------------------------------- custom scenario
def test_custom_suite_and_traces(tmp_path):
    suite = custom_suite(*TINY)
    assert suite.name == "custom" and suite.seeds == 1
    sc, = suite.scenarios
    assert sc.name == "tiny-8" and not sc.fixed_workload
    assert sc.workload_for(1_000_000) == TINY[1] + ",seed=1000000"
    trace = tmp_path / "jobs.csv"
    trace.write_text("job_id,submit_time_s,duration_s,num_gpus,model,gpu_type,batch\n"
                     "a,0,1800,1,resnet50,,\nb,60,1200,2,,,\nc,300,600,1,,,\n")
    spec = f"csv:path={trace}"
    sc, = custom_suite("tiny-8", spec).scenarios
    assert sc.fixed_workload and sc.workload_for(1_000_001) == spec
    report = evaluate(custom_suite("tiny-8", spec), ["fifo", KeepAll()], seeds=2,
                      progress=False)
    a, b = (r for r in report.runs if r.label == "fifo")
    assert [j.arrival_s for j in a.records] == [j.arrival_s for j in b.records]
    assert all(r.metrics["jobs_completed"] == 3 for r in report.runs)
    assert "a fixed workload: the same jobs on every seed)" in format_report(report)
    # a seeded generated workload: its jobs are its own seed's draw, not a held-out one
    seeded = evaluate(custom_suite("tiny-8", TINY[1] + ",seed=3"), ["fifo"], seeds=2,
                      progress=False)
    assert ("the same jobs on every seed; its jobs drawn with the spec's own seed=, not a "
            "held-out seed)") in format_report(seeded)
    with pytest.raises(ConfigError):
        custom_suite("no-such-cluster", TINY[1])
    # one wording and one field for every bad window (inf was named max_time_s, by SimConfig)
    for bad in (0, -1, math.inf, math.nan, "5"):
        with pytest.raises(ConfigError, match="must be a finite number of seconds > 0") as err:
            custom_suite(*TINY, max_time_s=bad)
        assert err.value.field == "--max-time-s"


def _cli(capsys, *argv):
    code = main(["evaluate", "--no-progress", *argv])
    out = capsys.readouterr()
    return code, out.out, out.err


def test_a_window_in_which_no_job_finished_plots_without_a_warning(capsys, tmp_path):
    """``--max-time-s 1``: no job completes; the JCT plot says so in the panel instead of
    matplotlib warning about a legend with nothing in it."""
    import warnings
    out = tmp_path / "e"
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        code, _, err = _cli(capsys, "--cluster", TINY[0], "--workload", TINY[1], "--policies",
                            "fifo", "--max-time-s", "1", "--out", str(out))
    assert code == 0, err
    assert (out / "jct_cdf.png").stat().st_size > 0 and "Warning" not in err


@slow
def test_cli_custom_scenario_flags(capsys, tmp_path):
    out = tmp_path / "e"
    code, stdout, _ = _cli(capsys, "--cluster", TINY[0], "--workload", TINY[1], "--policies",
                           f"pure-lp,{ME}:make_reference_scheduler", "--json",
                           "--max-time-s", "3600", "--out", str(out))
    assert code == 0
    data = json.loads(stdout)
    assert data["suite"] == "custom" and data["scenarios"][0]["max_time_s"] == 3600
    assert [r["policy"] for r in data["rows"]] == ["pure-lp", "lp-reference"]
    assert data["rows"][1]["avg_jct_ratio"] == pytest.approx(1.0, rel=1e-6)
    for argv, words in (
            (["--suite", "smoke", "--cluster", "tiny-8", "--workload", TINY[1]], "not both"),
            (["--cluster", "tiny-8"], "field '--workload'"),
            (["--workload", TINY[1]], "field '--cluster'"),
            (["--max-time-s", "60"], "--max-time-s")):
        code, _, err = _cli(capsys, *argv, "--policies", "fifo", "--out", str(tmp_path / "x"))
        assert code == 2 and words in err, (argv, err)


@slow
def test_cli_never_overwrites_metrics_silently(capsys, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    args = ["--cluster", TINY[0], "--workload", TINY[1], "--policies", "fifo"]
    assert _cli(capsys, *args)[0] == 0
    code, stdout, err = _cli(capsys, *args)
    assert code == 0 and "writing to runs/eval-custom-2" in err
    assert (tmp_path / "runs/eval-custom/metrics.json").exists()
    assert (tmp_path / "runs/eval-custom-2/metrics.json").exists()
    # an explicit --out holding results: an error naming --overwrite, before anything runs
    out = tmp_path / "runs/eval-custom"
    first = (out / "metrics.json").read_text()
    code, _, err = _cli(capsys, *args, "--out", str(out))
    assert code == 2 and "--overwrite" in err and (out / "metrics.json").read_text() == first
    code, stdout, _ = _cli(capsys, *args, "--out", str(out), "--overwrite")
    assert code == 0 and "wrote " + str(out / "metrics.json") in stdout
    runs = sorted(p.name for p in (out / "tb").iterdir())
    assert len(runs) == 2 and all(r.endswith("-custom") or "-custom-" in r for r in runs)
    for run in runs:                  # per-scenario subfolders inside each run folder
        assert list((out / "tb" / run / "tiny-8").glob("events.out.tfevents*"))


@slow
def test_output_dir_and_write_outputs(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert output_dir(None, "smoke") == Path("runs/eval-smoke")
    report = evaluate(custom_suite(*TINY), ["fifo"], progress=False)
    write_outputs(report, output_dir(None, "custom"))
    assert output_dir(None, "custom").name == "eval-custom-2"
    assert output_dir(None, "custom", overwrite=True).name == "eval-custom"
    with pytest.raises(ConfigError, match="--overwrite"):
        write_outputs(report, tmp_path / "runs/eval-custom", overwrite=False)


# ---------------------------------------------------------------------------- SB3 models
def _train(tmp_path, env_id, algo_cls, name, slots=16, **kw):
    import gymnasium as gym

    import hsched_env  # noqa: F401  (registers the environments)
    env = gym.make(env_id, cluster=TINY[0], workload=TINY[1], slots=slots)
    model = algo_cls("MultiInputPolicy", env, n_steps=16, batch_size=16, n_epochs=1, seed=0,
                     device="cpu", **kw)
    model.learn(64)
    path = tmp_path / name
    model.save(path)
    return path


@pytest.fixture(scope="module")
def zips(tmp_path_factory):
    from sb3_contrib import MaskablePPO
    from stable_baselines3 import PPO
    d = tmp_path_factory.mktemp("sb3")
    return {"rank": _train(d, "hsched/Rank-v0", PPO, "rank_ppo.zip"),
            "select": _train(d, "hsched/Schedule-v0", MaskablePPO, "select_mppo.zip")}


@slow
def test_cli_sb3_zip_needs_trust_then_evaluates(capsys, tmp_path, zips):
    custom = ["--cluster", TINY[0], "--workload", TINY[1]]
    policies = f"pure-lp,sb3:{zips['rank']},sb3:{zips['select']}"
    code, _, err = _cli(capsys, *custom, "--policies", policies, "--out", str(tmp_path / "a"))
    assert code == 2 and "--trust-sb3-zip" in err and "pickled" in err
    assert not (tmp_path / "a" / "metrics.json").exists()
    code, stdout, _ = _cli(capsys, *custom, "--policies", policies, "--trust-sb3-zip",
                           "--json", "--out", str(tmp_path / "b"))
    assert code == 0
    data = json.loads(stdout)
    rows = {r["policy"]: r for r in data["rows"]}
    assert list(rows) == ["pure-lp", "sb3:rank_ppo.zip", "sb3:select_mppo.zip"]
    rank, select = rows["sb3:rank_ppo.zip"], rows["sb3:select_mppo.zip"]
    assert rank["kind"] == "ranker" and rank["slots"] == 16 and rank["slots_fixed"]
    assert select["kind"] == "scheduler" and select["slots"] == 16
    assert select["invalid_actions"] == 0          # MaskablePPO predicts with the mask
    assert rank["jobs_total"] == select["jobs_total"] == 16
    assert "PPO (detected" in data["sources"]["sb3:rank_ppo.zip"]
    assert "MaskablePPO (detected" in data["sources"]["sb3:select_mppo.zip"]


@slow
def test_sb3_explicit_algo_and_shape_mismatch(zips):
    entry, = parse_policies([f"sb3:ppo:{zips['rank']}"], trust_sb3_zip=True)
    assert entry.kind == "ranker" and entry.slots == 16 and "(given)" in entry.source
    with pytest.raises(ConfigError) as err:          # sia-64 has 3 GPU types, tiny-8 two
        evaluate(custom_suite("sia-64", "gavel:rate=4,jobs=5"), [entry], progress=False)
    msg = str(err.value)
    assert "F=21" in msg and "T=2 GPU types" in msg and "T=3 GPU types" in msg
    # an algorithm the zip does not hold is refused naming the one it does (SB3's DQN failed
    # with "N-step returns are not supported for Dict observation spaces yet")
    for algo, path, saved in [("dqn", zips["select"], "maskable-ppo"),
                              ("ppo", zips["select"], "maskable-ppo"),
                              ("maskable-ppo", zips["rank"], "ppo")]:
        with pytest.raises(ConfigError) as err:
            parse_policies([f"sb3:{algo}:{path}"], trust_sb3_zip=True)
        assert f"the zip holds a model of {saved}" in str(err.value) and f"not of {algo}" in str(
            err.value) and err.value.field == "--policies"
    # PPO and A2C load each other's zips (one policy class): naming the other is allowed,
    # the way round the detection's guess from PPO's clip_range
    entry, = parse_policies([f"sb3:a2c:{zips['rank']}"], trust_sb3_zip=True)
    assert entry.kind == "ranker" and "A2C" in entry.source
    with pytest.raises(ConfigError, match="--trust-sb3-zip"):
        parse_policies([f"sb3:{zips['rank']}"])
    with pytest.raises(ConfigError, match="no SB3 model file"):
        parse_policies(["sb3:/no/such/model.zip"], trust_sb3_zip=True)


def test_a_simulator_policy_listed_twice_runs_twice():
    """`--policies fifo,fifo`: the second copy is labelled fifo#2, and what the CLI hands to
    evaluate (entries_to_items) resolves again (the label is not a policy name)."""
    from agents.evaluate import entries_to_items
    entries = parse_policies(["fifo", "fifo", "pure-lp", "pure-lp"])
    assert [e.label for e in entries] == ["fifo", "fifo#2", "pure-lp", "pure-lp#2"]
    again = parse_policies(entries_to_items(entries))
    assert [e.label for e in again] == ["fifo", "fifo#2", "pure-lp", "pure-lp#2"]
    assert [e.policy_name for e in again] == ["fifo", "fifo", "heterosched-lp", "heterosched-lp"]
    report = evaluate(custom_suite(*TINY), entries_to_items(entries[:2]), progress=False)
    assert report.policies == ["fifo", "fifo#2"]


def test_an_error_in_an_agents_code_names_its_run_and_keeps_its_traceback():
    """An exception inside a user's keep() or act(): the same exception, its traceback ending
    in the agent's code, with a note naming the policy, scenario, seed and round."""
    with pytest.raises(ZeroDivisionError) as err:
        evaluate(custom_suite(*TINY), ["pure-lp", f"{ME}:CrashOnRound3"], progress=False)
    assert err.value.__notes__ == [
        f"raised in keep() of policy 'crash-on-3' ({ME}:CrashOnRound3) on scenario "
        f"'tiny-8', seed 1000000, round 3"]
    assert traceback.extract_tb(err.value.__traceback__)[-1].name == "keep"
    with pytest.raises(KeyError, match="no such slot") as err:
        evaluate(custom_suite(*TINY), [f"{ME}:CrashAct"], progress=False)
    assert err.value.__notes__ == [
        f"raised in act() of policy '{ME}:CrashAct' on scenario 'tiny-8', seed 1000000, "
        f"round 1, step 1 of the round"]
    assert traceback.extract_tb(err.value.__traceback__)[-1].name == "act"


def test_heteroscheds_own_error_from_an_agent_stays_one_line(capsys, tmp_path):
    with pytest.raises(ConfigError) as err:
        evaluate(custom_suite(*TINY), [f"{ME}:RaisesConfigError"], progress=False)
    assert not hasattr(err.value, "__notes__")
    assert main(["evaluate", "--cluster", TINY[0], "--workload", TINY[1], "--policies",
                 f"{ME}:RaisesConfigError", "--out", str(tmp_path / "o")]) == 2
    assert capsys.readouterr().err == ("hsched evaluate: error: field 'my_setting': my agent's "
                                       "setting is wrong\n")


@slow
def test_the_cli_prints_the_agents_traceback_with_its_run(tmp_path):
    """``hsched evaluate`` on an agent whose keep() fails: exit 1, the agent's traceback and,
    under the error, the note naming the policy, scenario, seed and round."""
    here = Path(__file__).resolve().parent
    env = {"PYTHONPATH": f"{here.parent}:{here}", "OMP_NUM_THREADS": "1",
           "PATH": "/usr/bin:/bin"}
    done = subprocess.run([sys.executable, "-m", "hsched_cli", "evaluate", "--cluster", TINY[0],
                           "--workload", TINY[1], "--policies", f"pure-lp,{ME}:CrashOnRound3",
                           "--out", str(tmp_path / "o"), "--no-progress"],
                          capture_output=True, text=True, env=env, cwd=tmp_path, timeout=300)
    assert done.returncode == 1, done.stderr
    lines = done.stderr.rstrip().splitlines()
    assert lines[0] == "Traceback (most recent call last):"
    assert "in keep" in lines[-5] and lines[-2] == "ZeroDivisionError: division by zero"
    assert lines[-1] == (f"raised in keep() of policy 'crash-on-3' ({ME}:CrashOnRound3) "
                         f"on scenario 'tiny-8', seed 1000000, round 3")
    assert not (tmp_path / "o").exists()


def test_finish_metrics_counts_a_stall_for_agents_only():
    """``_finish_metrics``: an agent's stalled run counts its waiting jobs up to the stall (at
    most the window's end) and has no makespan; a simulator policy's stall (no stop time
    given: jobs it can never start) leaves them out and keeps its makespan."""
    from types import SimpleNamespace as Rec

    from agents.runners import _finish_metrics
    recs = [Rec(done=True, finish_s=100.0, arrival_s=0.0),
            Rec(done=False, finish_s=math.nan, arrival_s=50.0)]
    base = {"makespan_s": 100.0}
    agent = _finish_metrics(base, "a", recs, None, "stalled", stopped_s=1050.0)
    assert agent["avg_time_in_system_s"] == (100.0 + 1000.0) / 2
    assert math.isnan(agent["makespan_s"]) and agent["end_reason"] == "stalled"
    capped = _finish_metrics(base, "a", recs, 550.0, "stalled", stopped_s=1050.0)
    assert capped["avg_time_in_system_s"] == (100.0 + 500.0) / 2    # not past the window
    policy = _finish_metrics(base, "p", recs, None, "stalled")
    assert policy["avg_time_in_system_s"] == 100.0 and policy["makespan_s"] == 100.0
    window = _finish_metrics(base, "p", recs, 550.0, "time_limit")
    assert window["avg_time_in_system_s"] == 300.0 and math.isnan(window["makespan_s"])
    done = _finish_metrics(base, "p", recs[:1], 550.0, "completed", stopped_s=100.0)
    assert done["avg_time_in_system_s"] == 100.0 and done["makespan_s"] == 100.0


def test_each_early_end_of_a_row_is_explained():
    """Seeds of one agent can end early for different reasons; the note explains each
    (it explained only the first it recognized)."""
    from agents.report import _early_end_reason
    from agents.runners import STEP_CAP
    assert _early_end_reason(STEP_CAP, 8).startswith(f"{STEP_CAP}: a round took ")
    assert _early_end_reason("stalled", 8).startswith("stalled: no job ran for 1,000 rounds")
    assert _early_end_reason("invalid_actions", 8) == ("invalid_actions: the environment "
                                                       "ended the episode")
