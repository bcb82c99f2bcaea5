"""The environment speed scripts run and report what they say (their timings are measured in
BENCHMARKS.md, not asserted here)."""

from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path

import pytest

SCRIPTS = Path(__file__).resolve().parents[1] / "scripts"


def _load(name: str):
    import sys
    spec = importlib.util.spec_from_file_location(name, SCRIPTS / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module            # (a script's dataclasses look their module up)
    spec.loader.exec_module(module)
    return module


def test_bench_rank_round_reports_cpu_ms_per_round(capsys):
    script = _load("bench_rank_round")
    assert script.main(["--rounds", "5", "--warmup", "2", "--keep", "1", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["rounds"] == 5 and out["keep"] == 1.0 and out["cpu_ms_per_round"] > 0
    with pytest.raises(SystemExit):
        script.main(["--rounds", "0"])


def test_bench_env_lists_its_configurations_in_help(capsys):
    script = _load("bench_env")
    with pytest.raises(SystemExit):
        script.main(["--help"])
    text = capsys.readouterr().out
    assert "Rank-v0 keep 1/2" in text and "(default: 5)" in text


def _run(active, cpu_ms):
    return {"per_round": {"active_jobs": active, "cpu_ms": cpu_ms}}


def test_bench_rank_round_matches_rounds_by_active_jobs():
    script = _load("bench_rank_round")
    # ours: 2 ms at 2 jobs (30 rounds), 4 ms at 5 (10); theirs: 3 ms at 2 jobs (12), 10 ms at
    # 5 (10), 50 ms at 9 (no round of ours there: left out of the matched ratio)
    ours = [_run([2] * 30 + [5] * 10, [2.0] * 30 + [4.0] * 10)]
    theirs = [_run([2] * 12 + [5] * 10 + [9] * 20, [3.0] * 12 + [10.0] * 10 + [50.0] * 20)]
    got = script.matched(ours, theirs, min_rounds=10)
    assert [(n, w) for n, w, _ in got["matched_per_active_jobs"]] == [(2, 30), (5, 10)]
    # weighted geometric mean of 1.5 (30 rounds) and 2.5 (10 rounds)
    assert got["matched_speedup_cpu"] == pytest.approx(1.5 ** 0.75 * 2.5 ** 0.25)
    assert got["matched_share_of_our_rounds"] == 1.0
    # a count with too few rounds on either side is left out
    got = script.matched(ours, theirs, min_rounds=11)
    assert [n for n, _, _ in got["matched_per_active_jobs"]] == [2]


def test_bench_rank_round_rejects_bad_comparisons(tmp_path, capsys):
    script = _load("bench_rank_round")
    with pytest.raises(SystemExit):
        script.main(["--keep", "0.5,1"])                 # a list needs --against
    with pytest.raises(SystemExit):
        script.main(["--against", str(tmp_path)])       # not a checkout
    assert "not a checkout" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        script.main(["--keep", "0,1", "--against", str(tmp_path)])


def test_bench_rank_round_keep_lists_and_flags(capsys):
    script = _load("bench_rank_round")
    assert script._keeps("0.5, 1,0.5") == [0.5, 1.0]          # duplicates dropped
    for bad in (",,", "a", "0.5,-1"):
        with pytest.raises(Exception):
            script._keeps(bad)
    with pytest.raises(SystemExit):                          # only with --against
        script.main(["--pairs", "3"])
    assert "used only with --against" in capsys.readouterr().err
    with pytest.raises(SystemExit):                          # no abbreviation slips past
        script.main(["--plo", "x.png"])
    assert "unrecognized arguments: --plo" in capsys.readouterr().err


def _refused(script, argv, capsys, needle: str) -> str:
    """``main(argv)`` stops with argparse's one-line error (exit 2, no traceback) naming
    ``needle``; the error text."""
    with pytest.raises(SystemExit) as stop:
        script.main(argv)
    assert stop.value.code == 2
    err = capsys.readouterr().err
    assert needle in err and "Traceback" not in err, err
    return err


@pytest.mark.parametrize("argv", [["--seconds", "nan"], ["--seconds", "0"],
                                  ["--seconds", "-1"], ["--seconds", "inf"],
                                  ["--repeats", "0"], ["--only", "nope"], ["--only", "Rank,"]])
def test_bench_env_refuses_bad_arguments(argv, capsys):
    _refused(_load("bench_env"), argv, capsys, argv[0])


@pytest.mark.parametrize("argv,needle", [(["--keep", "2"], "(0, 1]"),
                                         (["--keep", "inf"], "(0, 1]"),
                                         (["--keep", "nan"], "(0, 1]"),
                                         (["--keep", "0.5,,1"], "without empty entries"),
                                         (["--keep", "0.5,"], "without empty entries"),
                                         (["--seed", "-1"], "--seed must be >= 0")])
def test_bench_rank_round_refuses_bad_arguments(argv, needle, capsys):
    _refused(_load("bench_rank_round"), argv, capsys, needle)


@pytest.mark.parametrize("argv,needle", [
    (["--steps", "0"], "argument --steps: expected a positive integer"),
    (["--rank-steps", "1_0"], "argument --rank-steps: expected a positive integer"),
    (["--seed", "-1"], "argument --seed: expected a non-negative integer")])
def test_reliability_refuses_bad_counts(argv, needle, capsys):
    _refused(_load("reliability"), argv, capsys, needle)


def test_reliability_soak_counts_the_unfinished_episodes_lp_fallbacks():
    """The soak's LP fallbacks include the episode still under way when it stops (20 rank
    steps end no episode): each injected solver fault is one fallback counted."""
    script = _load("reliability")
    with script.Injector("exception", 0) as inj:
        out = script.soak("rank", 20, 0)
    assert out["ok"] and out["episodes_completed"] + out["episodes_truncated"] == 0
    assert inj.injected > 0 and out["lp_fallbacks"] == inj.injected


def test_reliability_says_what_its_warm_up_is():
    script = _load("reliability")
    assert "10% of the steps, at most 10,000" in script.__doc__


def _recorded(script, monkeypatch, names):
    """The benchmark functions ``names`` of ``script`` replaced by recorders: the calls."""
    calls = []
    for name in names:
        monkeypatch.setattr(script, name,
                            lambda *a, _name=name, **k: calls.append((_name, a, k)))
    return calls


def test_bench_sim_sizes_default_to_each_benchmarks_own(monkeypatch):
    script = _load("bench_sim")
    calls = _recorded(script, monkeypatch, ("decision", "ipm", "lp_methods"))
    script.main(["ipm"])                    # ipm's own sizes: no N=100 row
    script.main(["ipm", "--sizes", "100,200"])
    script.main(["decision"])
    script.main(["methods"])
    assert calls == [("ipm", (), {}), ("ipm", ((100, 200),), {}),
                     ("decision", ((100, 500, 1000, 2000),), {}),
                     ("lp_methods", ((100, 500, 1000, 2000),), {})]
    assert _load("bench_sim").ipm.__defaults__[0] == (500, 1000, 2000)   # ipm's own


@pytest.mark.parametrize("what", ["hetero", "llm", "speed", "memo"])
def test_bench_sim_refuses_sizes_a_benchmark_would_ignore(what, monkeypatch, capsys):
    script = _load("bench_sim")
    calls = _recorded(script, monkeypatch, (what,))
    _refused(script, [what, "--sizes", "100"], capsys, f"--sizes: the {what} benchmark")
    assert calls == []                          # (it ran the benchmark with its own sizes)


@pytest.mark.parametrize("argv,needle", [
    (["--nodes", "2,2"], "--nodes: give distinct values, got 2,2"),
    (["--models", "resnet50,resnet50"], "--models: give distinct values")])
def test_bench_many_nodes_refuses_a_repeated_value(argv, needle, capsys):
    _refused(_load("bench_many_nodes"), argv, capsys, needle)


def test_bench_sim_all_runs_what_its_usage_says(monkeypatch, capsys):
    script = _load("bench_sim")
    calls = _recorded(script, monkeypatch, ("hetero", "llm", "decision", "speed", "memo",
                                            "ipm", "lp_methods"))
    script.main(["all"])
    assert [c[0] for c in calls] == ["hetero", "llm", "decision", "speed"]
    usage = next(line for line in script.__doc__.splitlines() if "bench_sim.py all" in line)
    assert "hetero, llm, decision, speed" in usage and "not memo/ipm/methods" in usage
    with pytest.raises(SystemExit):
        script.main(["--help"])
    assert "all: hetero, llm, decision, speed" in capsys.readouterr().out


@pytest.mark.slow
def test_bench_ranker_bound_names_a_duplicate_scenario(capsys):
    script = _load("bench_ranker_bound")
    err = _refused(script, ["--suite", "smoke", "--scenarios", "sia-64,sia-64"], capsys,
                   "scenario sia-64 given more than once")
    assert "unknown scenario" not in err
    _refused(script, ["--suite", "smoke", "--scenarios", "sia-64,nope"], capsys,
             "unknown scenario")


@pytest.mark.slow
def test_bench_many_nodes_times_both_checkouts_and_compares_their_outputs(capsys):
    """Two runs of each command on a 4-node cluster, ours against the same checkout given as
    ``--against`` (the same outputs, so no warning), and the table has every row."""
    script = _load("bench_many_nodes")
    repo = Path(script.__file__).resolve().parents[1]
    assert script.main(["--nodes", "2", "--models", "resnet50", "--simulate", "--runs", "1",
                        "--against", str(repo), "--markdown"]) == 0
    captured = capsys.readouterr()
    assert "different outputs" not in captured.err
    rows = [line for line in captured.out.splitlines() if line.startswith("| 4 |")]
    assert len(rows) == 4                       # 2 commands x 2 checkouts
    for row in rows:
        cells = [c.strip() for c in row.strip("|").split("|")]
        assert float(cells[3]) > 0 and float(cells[4]) > 10 and cells[5] == "1", row
    assert script.main(["--nodes", "2", "--models", "no-such-model"]) == 2
    assert "no-such-model" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        script.main(["--nodes", "60000"])


def test_bench_many_nodes_tells_outputs_apart_but_not_timings():
    script = _load("bench_many_nodes")
    a = json.dumps({"avg_jct_s": 1.0, "wall_s": 2.0, "decision_ms_mean": 3.0}).encode()
    b = json.dumps({"avg_jct_s": 1.0, "wall_s": 9.0, "decision_ms_mean": 4.0}).encode()
    c = json.dumps({"avg_jct_s": 1.5, "wall_s": 2.0}).encode()
    assert script.comparable("simulate 20 jobs", a) == script.comparable("simulate 20 jobs", b)
    assert script.comparable("simulate 20 jobs", a) != script.comparable("simulate 20 jobs", c)
    assert script.comparable("candidates resnet50", a) != script.comparable(
        "candidates resnet50", b)


@pytest.mark.parametrize("name,argv,needle", [
    # a folder for a file, a missing folder, a figure of no known format: refused before the
    # run (each ended in a traceback after the work, its results lost; --plot /tmp wrote
    # /tmp.png)
    ("bench_ranker_bound", ["--suite", "smoke", "--out", "{tmp}"], "--out: cannot write"),
    ("bench_ranker_bound", ["--suite", "smoke", "--plot", "{tmp}/x.xyz"], "not a figure file"),
    ("bench_ranker_start", ["compare", "--suite", "smoke", "--json", "{tmp}"],
     "--json: cannot write"),
    ("ranker_load", ["--json", "{tmp}/no/x.json"], "does not exist"),
    ("reliability", ["--steps", "10", "--json", "{tmp}/no/x.json"], "--json: cannot write"),
    ("reliability", ["--steps", "10", "--markdown", "{tmp}"], "--markdown: cannot write"),
    ("behaviour_dump", ["--out", "{tmp}/no/d.json"], "--out: cannot write"),
    ("behaviour_dump", ["--out", "{tmp}/d.json", "--diff", "a", "b"], "give one of them"),
    ("rl_baselines", ["--out", "{tmp}"], "--out: cannot write"),
    ("rl_baselines", ["--render", "{readme}", "--out", "{tmp}/r.md"],
     "is not an earlier run's JSON"),
    ("bench_rank_round", ["--against", "{repo}", "--pairs", "1", "--plot", "{tmp}"],
     "--plot: cannot write"),
])
def test_scripts_refuse_an_output_they_cannot_write_before_the_run(name, argv, needle,
                                                                    tmp_path, capsys):
    repo = SCRIPTS.parent
    argv = [a.format(tmp=tmp_path, readme=repo / "README.md", repo=repo) for a in argv]
    _refused(_load(name), argv, capsys, needle)
    assert not any(tmp_path.iterdir())                 # nothing written


def test_bench_pop_bounds_k_and_refuses_an_empty_executor(capsys, monkeypatch):
    import sys
    script = _load("bench_pop")
    for argv, needle in ((["--pops", "2,5000"], "at most 1024"),
                         (["--executors", ","], "an empty entry")):
        monkeypatch.setattr(sys, "argv", ["bench_pop.py", *argv])
        with pytest.raises(SystemExit) as stop:
            script.main()
        assert stop.value.code == 2 and needle in capsys.readouterr().err


@pytest.mark.parametrize("name,argv,needle", [
    # flags that contradict each other, or a run of nothing, were silently accepted
    ("bench_env", ["--json", "--markdown"], "give one of them"),
    ("bench_vs_gavel", ["--gavel-log", "{tmp}/g.txt"], "give --gavel"),
    ("ranker_kept", ["--cluster", "sia-64", "--workload", "gavel:jobs=3", "--also",
                     "{readme}"], "give --plot"),
    ("ranker_load", ["--bursts", "", "--windows", ""], "nothing to run"),
    # no burst, so no seed is needed: the seeds' check does not get in the way
    ("ranker_load", ["--bursts", "", "--seeds", "", "--windows", ""], "nothing to run"),
    ("ranker_load", ["--bursts", "500,,1000"], "an empty entry"),
    ("rl_baselines", ["--render", "{readme}", "--ids", "hsched/Rank-Tiny-v0", "--out",
                      "{tmp}/r.md"], "would change nothing"),
])
def test_scripts_refuse_flags_that_contradict_each_other(name, argv, needle, tmp_path, capsys):
    repo = SCRIPTS.parent
    argv = [a.format(tmp=tmp_path, readme=repo / "README.md") for a in argv]
    _refused(_load(name), argv, capsys, needle)
    assert not any(tmp_path.iterdir())


@pytest.mark.parametrize("name", sorted(p.stem for p in SCRIPTS.glob("*.py")
                                        if p.stem != "script_args"))
def test_a_scripts_help_describes_it_in_whole_sentences(name, monkeypatch, capsys):
    """``--help`` shows the script's description whole: a first line of a docstring whose
    sentence goes on ("... `hsched compare` metrics, `hsched") was cut mid-sentence."""
    # (_load puts the script into sys.modules: the test module that imported it by name,
    # test_bench_quality's, must find its own there afterwards, or pickling its functions
    # for worker processes fails; the entry is put back as it was, or removed)
    monkeypatch.setitem(sys.modules, name, sys.modules.get(name))   # (_load replaces it)
    script = _load(name)
    monkeypatch.setattr(sys, "argv", [f"{name}.py", "--help"])   # (bench_pop reads argv)
    with pytest.raises(SystemExit) as stop:
        script.main(*([] if name == "bench_pop" else [["--help"]]))
    assert stop.value.code == 0
    out = capsys.readouterr().out
    description = " ".join(out.split("\n\n")[1].split())        # after the usage paragraph
    assert description.endswith((".", "?", ")", ":")), (name, description)
