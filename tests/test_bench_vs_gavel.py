"""scripts/bench_vs_gavel.py: our side alone on a tiny job range; parsing Gavel's output."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "scripts"))
import bench_vs_gavel as bvg  # noqa: E402  (scripts/ is not a package)

# What Gavel's driver prints on stdout with -v (numbers from a real 10:30 fifo_perf run).
GAVEL_STDOUT = """Window start time: 5304.183994
Window duration: 266852.822 seconds (74.13 hours)
Total duration: 272157.006 seconds (75.60 hours)
Job completion times:
Job 10: 45279.673
Job 11: 57148.130
Average job completion time: 51212.468 seconds (14.23 hours)
Average job completion time (low priority): 51212.468 seconds (14.23 hours)
Cluster utilization: 0.312
"""


def test_parse_gavel_output():
    assert bvg.parse_gavel_output(GAVEL_STDOUT) == (51212.468, 2)
    with pytest.raises(bvg.BenchError, match="Average job completion time"):
        bvg.parse_gavel_output("Job completion times:\n")


def test_commands_match_the_issue():
    cfg = bvg.Config()
    g = bvg.gavel_command("py", "max_min_fairness_perf", cfg)
    assert g[1:] == [bvg.GAVEL_DRIVER, "-c", "36:36:36", "-p", "max_min_fairness_perf",
                     "--seed", "0", "-l", "900", "-s", "100", "-e", "300", "-i", "360", "-v"]
    o = bvg.our_command("lp", cfg)
    assert o[o.index("--workload") + 1] == "gavel:rate=4,jobs=1300,seed=0,multi_gpu=0"
    assert o[o.index("--measure-jobs") + 1] == "100:300"
    assert o[o.index("--round-s") + 1] == "360"
    assert o[o.index("--policy") + 1] == "gavel" and "--lp-warm-start" not in o
    # the -warm keys: the same policy with HiGHS warm-started; not run unless asked for
    warm = bvg.our_command("lp-resets-warm", cfg)
    assert warm[warm.index("--policy") + 1] == "gavel-resets" and warm[-1] == "--lp-warm-start"
    assert bvg.DEFAULT_POLICIES == ("lp", "lp-resets", "fifo")
    assert bvg.parse_policies("lp,lp-warm") == ["lp", "lp-warm"]
    # FIFO on Gavel's reset rule: our gavel-fifo against the same fifo_perf run
    fifo = bvg.our_command("fifo-resets", cfg)
    assert fifo[fifo.index("--policy") + 1] == "gavel-fifo"
    assert bvg.POLICIES["fifo-resets"][0] == bvg.POLICIES["fifo"][0] == "fifo_perf"


def test_summary_ratios():
    runs = {"gavel": [bvg.Run(10.0, 9.0, 7200.0, 200), bvg.Run(30.0, 27.0, 7200.0, 200),
                      bvg.Run(20.0, 18.0, 7200.0, 200)],
            "ours": [bvg.Run(2.0, 1.0, 6840.0, 200)]}
    s = bvg.summarize(runs)
    assert s["gavel_wall_s"] == 20.0 and s["speedup_wall"] == 10.0
    assert s["speedup_cpu"] == 18.0
    assert s["gavel_avg_jct_h"] == 2.0
    assert s["jct_diff_pct"] == pytest.approx(-5.0)


@pytest.mark.slow
def test_our_side_only_tiny(tmp_path, capsys):
    out = tmp_path / "bench.json"
    assert bvg.main(["--runs", "1", "--jobs", "2:6", "--our-jobs", "10", "--round-s", "3600",
                     "--out", str(out), "--markdown"]) == 0
    printed = capsys.readouterr()
    assert "only our side" in printed.err
    assert printed.out.startswith("| policy |")
    doc = json.loads(out.read_text())
    assert set(doc) == {"config", "commands", "summary", "runs", "warnings"}
    assert doc["config"]["gavel"] is None
    assert set(doc["summary"]) == {"lp", "lp-resets", "fifo"}
    for key, s in doc["summary"].items():
        for name in ("ours_wall_s", "ours_cpu_s", "ours_avg_jct_h"):
            assert s[name] > 0, (key, name)
        assert s["ours_jobs_measured"] == 4
        assert s["gavel_wall_s"] is None and s["speedup_wall"] is None
        assert s["jct_diff_pct"] is None
        assert len(doc["runs"][key]["ours"]) == 1
        assert "gavel" not in doc["runs"][key]


FAKE_DRIVER = f"""import sys
assert sys.argv[sys.argv.index("-p") + 1] in ("fifo_perf", "max_min_fairness_perf")
print({GAVEL_STDOUT!r})
"""


@pytest.mark.slow
def test_both_sides_with_a_fake_gavel(tmp_path, capsys):
    """A stand-in for Gavel's checkout (its driver prints what Gavel's does): the Gavel side
    runs, is parsed, and the ratios are filled in."""
    sched = tmp_path / "gavel" / "scheduler"
    (sched / bvg.GAVEL_DRIVER).parent.mkdir(parents=True)
    (sched / bvg.GAVEL_DRIVER).write_text(FAKE_DRIVER)
    (sched / bvg.GAVEL_STUB).parent.mkdir(parents=True)
    (sched / bvg.GAVEL_STUB).write_text("")
    out = tmp_path / "bench.json"
    assert bvg.main(["--gavel", str(tmp_path / "gavel"), "--gavel-python", sys.executable,
                     "--runs", "2", "--policies", "fifo", "--jobs", "2:6", "--our-jobs", "10",
                     "--round-s", "3600", "--out", str(out)]) == 0
    err = capsys.readouterr().err
    assert err.count(" gavel wall ") == 2 and err.count(" ours  wall ") == 2
    s = json.loads(out.read_text())["summary"]["fifo"]
    assert s["gavel_avg_jct_h"] == pytest.approx(51212.468 / 3600)
    assert s["gavel_jobs_measured"] == 2
    assert s["gavel_wall_s"] > 0 and s["speedup_wall"] > 0 and s["speedup_cpu"] > 0
    ratio = s["ours_avg_jct_h"] / s["gavel_avg_jct_h"]
    assert s["jct_diff_pct"] == pytest.approx(100 * (ratio - 1))


@pytest.mark.slow
def test_lp_and_lp_resets_share_gavels_run(tmp_path, capsys):
    """``lp`` and ``lp-resets`` both compare against Gavel's max-min LP: it runs once per round
    of the benchmark, and both pairs get that run."""
    sched = tmp_path / "gavel" / "scheduler"
    (sched / bvg.GAVEL_DRIVER).parent.mkdir(parents=True)
    calls = tmp_path / "calls.txt"
    (sched / bvg.GAVEL_DRIVER).write_text(
        f"open({str(calls)!r}, 'a').write('x')\n" + FAKE_DRIVER)
    (sched / bvg.GAVEL_STUB).parent.mkdir(parents=True)
    (sched / bvg.GAVEL_STUB).write_text("")
    out = tmp_path / "bench.json"
    assert bvg.main(["--gavel", str(tmp_path / "gavel"), "--gavel-python", sys.executable,
                     "--runs", "2", "--policies", "lp,lp-resets", "--jobs", "2:6",
                     "--our-jobs", "10", "--round-s", "3600", "--out", str(out)]) == 0
    capsys.readouterr()
    assert calls.read_text() == "xx"                    # one Gavel run per round, not two
    doc = json.loads(out.read_text())
    assert doc["runs"]["lp"]["gavel"] == doc["runs"]["lp-resets"]["gavel"]
    ours = doc["commands"]["lp-resets"]["ours"]
    assert ours[ours.index("--policy") + 1] == "gavel-resets"
    for key in ("lp", "lp-resets"):
        assert doc["summary"][key]["speedup_wall"] > 0


def test_missing_gavel_stubs(tmp_path):
    sched = tmp_path / "scheduler"
    (sched / bvg.GAVEL_DRIVER).parent.mkdir(parents=True)
    (sched / bvg.GAVEL_DRIVER).write_text("")
    with pytest.raises(ValueError, match="make rpc_stubs"):
        bvg.gavel_scheduler_dir(str(tmp_path))


def test_a_missing_gavel_checkout_is_an_argparse_error(capsys, tmp_path):
    with pytest.raises(SystemExit) as exc:
        bvg.main(["--gavel", str(tmp_path / "nonexist"), "--runs", "1"])
    err = capsys.readouterr().err
    assert exc.value.code == 2
    assert "error: --gavel " in err and "no scripts/drivers/" in err


@pytest.mark.parametrize("argv, says", [
    (["--policies", "lp,"], "no empty entries"), (["--policies", "lp,,fifo"], "no empty entries"),
    (["--rate", "nan"], "argument --rate: expected a positive number"),
    (["--round-s", "0"], "argument --round-s: expected a positive number"),
    (["--seed", "-1"], "argument --seed: expected an integer >= 0"),
    (["--our-jobs", "0"], "argument --our-jobs: expected an integer >= 1"),
    (["--runs", "1_0"], "argument --runs: expected a positive integer"),
    # a key twice would double its runs while the footer says "medians of N run(s)"
    (["--policies", "fifo,fifo"], "fifo given more than once"),
    (["--policies", "lp,fifo,lp"], "lp given more than once"),
])
def test_bad_arguments_are_argparse_errors(capsys, argv, says):
    with pytest.raises(SystemExit) as exc:
        bvg.main(argv)
    assert exc.value.code == 2 and says in capsys.readouterr().err


# --------------------------------------------------------------- checks made before the runs
def _ours_refused(monkeypatch):
    """``run_ours`` replaced by a failure: a check that should stop the script first must
    stop it before any simulation."""
    def refused(*a, **k):
        raise AssertionError("a simulation ran before the arguments were checked")
    monkeypatch.setattr(bvg, "run_ours", refused)
    monkeypatch.setattr(bvg, "run_gavel", refused)


def test_arrivals_ran_out_is_judged_on_the_simulated_end():
    """``makespan_s`` counts from job A's arrival (``--measure-jobs A:B``): the end of the
    simulation is its rounds × round length (here 1,066 × 360 s, the real run of
    ``--jobs 290:300 --our-jobs 300 --policies fifo``), past the last arrival (274,111 s),
    though ``makespan_s`` (116,686 s) is not."""
    cfg = bvg.Config(jobs=(290, 300), our_jobs=300)
    run = bvg.Run(1.0, 1.0, 22645.1, 10, {"makespan_s": 116685.5, "rounds": 1066})
    assert bvg.simulated_end_s(run, cfg) == pytest.approx(1066 * 360.0)
    text = bvg.arrivals_ran_out("fifo", run, cfg)
    assert text is not None and "arrivals ran out" in text and "raise --our-jobs" in text
    assert "t=383760 s" in text and "t=274111 s" in text
    # a run with stretches of no active job (jumped over, not counted as rounds): the last
    # measured finish, job A's arrival + makespan_s, bounds the end from below too
    few = bvg.Run(1.0, 1.0, 22645.1, 10, {"makespan_s": 116685.5, "rounds": 10})
    a = bvg._our_arrivals(cfg)[290]
    assert bvg.simulated_end_s(few, cfg) == pytest.approx(a + 116685.5)
    assert bvg.arrivals_ran_out("fifo", few, cfg) is not None
    # the default 1,300 jobs arrive until t ≈ 1.2 M s: no warning for that run
    assert bvg.arrivals_ran_out("fifo", run, bvg.Config(jobs=(290, 300), our_jobs=1300)) is None
    assert bvg.arrivals_ran_out("fifo", bvg.Run(1.0, 1.0, 1.0, 10, {}), cfg) is None


def test_main_warns_when_our_arrivals_ran_out(monkeypatch, capsys):
    monkeypatch.setattr(bvg, "run_ours", lambda key, cfg: bvg.Run(
        1.0, 1.0, 22645.1, 10, {"makespan_s": 116685.5, "rounds": 1066}))
    assert bvg.main(["--runs", "1", "--jobs", "290:300", "--our-jobs", "300",
                     "--policies", "fifo"]) == 0
    err = capsys.readouterr().err
    assert "warning: fifo: our simulation ran until t=383760 s (simulated)" in err, err


@pytest.mark.parametrize("flag", ["--out", "--gavel-log"])
def test_outputs_are_checked_before_the_runs(tmp_path, monkeypatch, capsys, flag):
    _ours_refused(monkeypatch)
    # Gavel's log is written only when Gavel's side runs: a (fake) checkout given with it
    gavel = ["--gavel", str(tmp_path / "gavel")] if flag == "--gavel-log" else []
    for path, says in ((tmp_path / "no" / "x.json", "does not exist"),
                       (tmp_path, "it is a folder")):
        with pytest.raises(SystemExit) as exc:
            bvg.main(["--runs", "1", "--jobs", "2:6", "--our-jobs", "10", *gavel, flag,
                      str(path)])
        err = capsys.readouterr().err
        assert exc.value.code == 2 and f"{flag} {path}: cannot write it" in err, err
        assert says in err and "Traceback" not in err


def test_gavel_python_is_checked_before_the_runs(tmp_path, monkeypatch, capsys):
    _ours_refused(monkeypatch)
    sched = tmp_path / "gavel" / "scheduler"
    (sched / bvg.GAVEL_DRIVER).parent.mkdir(parents=True)
    (sched / bvg.GAVEL_DRIVER).write_text(FAKE_DRIVER)
    (sched / bvg.GAVEL_STUB).parent.mkdir(parents=True)
    (sched / bvg.GAVEL_STUB).write_text("")
    for python, says in ((str(tmp_path / "no-python"), "no such file"),
                         ("venv/bin/python",
                          f"no such file (a relative path is taken from {sched})"),
                         (str(tmp_path), "not an executable file"),
                         ("no-such-python-here", "not found on PATH")):
        with pytest.raises(SystemExit) as exc:
            bvg.main(["--gavel", str(tmp_path / "gavel"), "--gavel-python", python,
                      "--runs", "1", "--policies", "fifo", "--jobs", "2:6"])
        err = capsys.readouterr().err
        assert exc.value.code == 2 and f"--gavel-python {python}: {says}" in err, err
    assert bvg.gavel_python_problem(sys.executable, sched) is None
    # a command that cannot start is a BenchError (one line), not a traceback
    with pytest.raises(bvg.BenchError, match="could not start"):
        bvg.timed([str(tmp_path / "no-python")])
