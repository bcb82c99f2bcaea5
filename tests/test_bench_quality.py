"""scripts/bench_quality.py: the common-job comparison, the targets, and one tiny real case."""

from __future__ import annotations

import json
import math
import sys
from pathlib import Path

import numpy as np
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "scripts"))
import bench_quality as bq  # noqa: E402  (scripts/ is not a package)

slow = pytest.mark.slow

TINY = bq.Case("tiny/gavel-s0", "tiny", "tiny-8", "gavel:rate=30,jobs=10,seed=0,duration_scale=0.05")


def fake_run(policy, arrivals, jct, rho, restarts=None, started=None):
    """A run as ``run_one`` returns it; ``None`` in ``jct`` = unfinished."""
    jobs = []
    for i, (a, d, r) in enumerate(zip(arrivals, jct, rho)):
        jobs.append({"job_id": i, "name": f"job-{i}", "model": "resnet50", "arrival_s": a,
                     "finish_s": None if d is None else a + d, "jct_s": d,
                     "rho": None if d is None else r,
                     "restarts": (restarts or [0] * len(jct))[i],
                     "started": True if started is None else started[i]})
    return {"case": "c", "policy": policy, "wall_s": 1.0, "metrics": {}, "jobs": jobs,
            "skipped": 0, "notes": [], "warnings": []}


ARR = [0.0, 10.0, 20.0, 30.0, 40.0]


def case_a():
    """The first policy finishes everything; gavel leaves job 3 (started) and job 4 (never
    started) unfinished; so the common jobs are 0, 1, 2."""
    runs = {
        "heterosched-lp": fake_run("heterosched-lp", ARR, [100, 200, 300, 400, 500],
                                   [1, 2, 3, 9, 9], restarts=[0, 1, 2, 5, 5]),
        "gavel": fake_run("gavel", ARR, [200, 400, 600, None, None], [2, 1, 6, 0, 0],
                          started=[True, True, True, True, False]),
        "sia": fake_run("sia", ARR, [100, 300, 300, 1000, 1000], [1, 1, 1, 50, 50]),
    }
    runs["heterosched-lp"]["metrics"]["delivered_over_planned"] = 0.97
    return runs


def test_common_jobs_stats_ratios_and_targets():
    cmp_ = bq.compare_case(case_a())
    assert cmp_["first"] == "heterosched-lp"
    assert (cmp_["common"], cmp_["jobs_total"], cmp_["common_ids"]) == (3, 5, [0, 1, 2])
    me, gavel, sia = (cmp_["policies"][p] for p in ("heterosched-lp", "gavel", "sia"))
    # only jobs 0-2 count: job 3 and 4's JCT (400, 500) and rho (9) are ignored
    assert me["avg_jct_s"] == pytest.approx(200.0)
    assert me["p99_jct_s"] == pytest.approx(np.percentile([100, 200, 300], 99))
    assert me["makespan_s"] == pytest.approx(320.0)          # first arrival 0, job 2 at 320
    assert (me["ftf_worst"], me["ftf_mean"]) == (pytest.approx(3.0), pytest.approx(2.0))
    assert me["restarts_per_job"] == pytest.approx(1.0)
    assert me["delivered_over_planned"] == 0.97 and gavel["delivered_over_planned"] is None
    assert gavel["avg_jct_s"] == pytest.approx(400.0) and gavel["ftf_worst"] == 6.0
    assert gavel["makespan_s"] == pytest.approx(620.0)
    assert sia["avg_jct_s"] == pytest.approx(700 / 3)
    assert (gavel["unfinished"], gavel["never_started"]) == (2, 1)
    assert gavel["unfinished_jobs"] == [[3, "job-3"], [4, "job-4"]]
    assert gavel["never_started_jobs"] == [[4, "job-4"]]
    assert me["unfinished"] == 0 and me["jobs_completed"] == 5
    assert cmp_["ratios"] == {"gavel": pytest.approx(0.5), "sia": pytest.approx(200 / (700 / 3))}
    assert cmp_["targets"] == {"jct_vs_gavel": True, "jct_vs_sia": True, "ftf_vs_gavel": True,
                               "all_done": True}


def test_targets_fail_and_summary_counts():
    # case B: the first policy is slower than 0.75 × gavel, worse in FTF, and leaves a job
    runs_b = {
        "heterosched-lp": fake_run("heterosched-lp", ARR, [90, 90, 90, 90, None],
                                   [4, 4, 4, 4, 0]),
        "gavel": fake_run("gavel", ARR, [100] * 5, [2] * 5),
        "sia": fake_run("sia", ARR, [80] * 5, [1] * 5),
    }
    b = bq.compare_case(runs_b)
    assert b["common"] == 4 and b["ratios"]["gavel"] == pytest.approx(0.9)
    assert b["targets"] == {"jct_vs_gavel": False, "jct_vs_sia": False, "ftf_vs_gavel": False,
                            "all_done": False}
    comps = {"a": bq.compare_case(case_a()), "b": b}
    s = bq.summarize(comps, {"a": "g1", "b": "g2"})
    assert s["cases"] == 2 and s["first"] == "heterosched-lp"
    assert s["targets"]["jct_vs_gavel"] == {"passed": 1, "evaluated": 2}
    assert s["targets"]["all_done"] == {"passed": 1, "evaluated": 2}
    assert s["geomean_ratio"]["gavel"] == pytest.approx(math.sqrt(0.5 * 0.9))
    assert s["geomean_ratio"]["sia"] == pytest.approx(
        math.sqrt(200 / (700 / 3) * 90 / 80))
    assert s["groups"]["g2"]["targets"]["ftf_vs_gavel"] == {"passed": 0, "evaluated": 1}
    line = bq.summary_line(s)
    assert "avg JCT ≤ 0.75×gavel 1/2" in line and "÷gavel 0.671" in line


def test_targets_need_their_policy_and_job_sets_must_match():
    runs = case_a()
    del runs["sia"], runs["gavel"]
    runs["fifo"] = fake_run("fifo", ARR, [50] * 5, [1] * 5)
    cmp_ = bq.compare_case(runs)
    assert cmp_["targets"]["jct_vs_gavel"] is None and cmp_["targets"]["jct_vs_sia"] is None
    assert cmp_["targets"]["ftf_vs_gavel"] is None and cmp_["targets"]["all_done"] is True
    assert cmp_["ratios"] == {"fifo": pytest.approx(300 / 50)}
    runs["fifo"] = fake_run("fifo", ARR[:4], [50] * 4, [1] * 4)
    with pytest.raises(ValueError, match="different jobs"):
        bq.compare_case(runs)


def test_cases_of_the_benchmark():
    full = bq.build_cases(seeds=3)
    assert len(full) == 2 * 3 * 3 + len(bq.PHILLY_WINDOWS) + 4
    assert len({c.name for c in full}) == len(full)
    assert {c.cluster for c in full if c.group == "gavel-llm"} == {"gavel-108", "sia-64",
                                                                   "modern-512"}
    assert all(c.throughputs == "gavel" for c in full if c.cluster == "gavel-108")
    for c in full:
        if c.group == "pollux":
            assert Path(c.workload.split("path=", 1)[1]).is_file()
    quick = bq.build_cases(["philly", "gavel-classic"], quick=True)
    assert [c.group for c in quick] == ["gavel-classic"] * 3 + ["philly"] * len(bq.PHILLY_WINDOWS)
    assert all("jobs=40" in c.workload or "max_jobs=40" in c.workload for c in quick)
    with pytest.raises(ValueError, match="unknown case group"):
        bq.build_cases(["nope"])
    held_out = bq.build_cases(["gavel-llm"], seeds=2, first_seed=3)
    assert [c.name for c in held_out] == [f"gavel-llm/{k}/s{s}" for k in
                                          ("gavel-108", "sia-64", "modern-512") for s in (3, 4)]
    assert all(c.workload.endswith(f",seed={c.name[-1]},mix=llm") for c in held_out)
    with pytest.raises(ValueError, match="--first-seed must be >= 0"):
        bq.build_cases(seeds=1, first_seed=-1)


@slow
def test_tiny_real_case_end_to_end(tmp_path):
    policies = ["gavel", "fifo"]
    runs = bq.run_all([TINY], policies, workers=1, progress=False)
    res = bq.build_results([TINY], runs, policies, {"test": True})
    cmp_ = res["comparison"][TINY.name]
    assert cmp_["jobs_total"] == 10
    for p in policies:
        m, st = runs[TINY.name][p]["metrics"], cmp_["policies"][p]
        assert st["jobs_completed"] == m["jobs_completed"]
        if cmp_["common"] == m["jobs_total"]:      # all done: the common-job metrics are the
            assert st["avg_jct_s"] == pytest.approx(m["avg_jct_s"])    # simulator's own
            assert st["p99_jct_s"] == pytest.approx(m["p99_jct_s"])
            assert st["ftf_worst"] == pytest.approx(m["ftf_worst"])
            assert st["ftf_mean"] == pytest.approx(m["ftf_mean"])
            assert st["restarts_per_job"] == pytest.approx(m["restarts_per_job"])
    assert cmp_["common"] == 10
    assert cmp_["ratios"]["fifo"] == pytest.approx(
        cmp_["policies"]["gavel"]["avg_jct_s"] / cmp_["policies"]["fifo"]["avg_jct_s"])
    text = bq.tables(res["comparison"], res["summary"], markdown=True)
    assert "| tiny/gavel-s0 | 10/10 | gavel |" in text and "TARGETS (gavel, 1 cases)" in text
    json.dumps(bq._jsonable(res))                   # JSON-ready
    bq.plot(res["comparison"], tmp_path / "p.png", "gavel")
    assert (tmp_path / "p.png").stat().st_size > 1000
    # worker processes reproduce the in-process runs exactly
    again = bq.run_all([TINY], policies, workers=2, progress=False)
    for p in policies:
        assert again[TINY.name][p]["jobs"] == runs[TINY.name][p]["jobs"]


def test_cli_rejects_bad_input(capsys):
    with pytest.raises(SystemExit) as exc:
        bq.main(["--cases", "nope"])
    assert exc.value.code == 2
    assert bq.main(["--cases", "pollux", "--policies", "no-such-policy"]) == 2
    assert "no-such-policy" in capsys.readouterr().err
    for stray in ("fifo,", ",fifo", "fifo,,gavel"):     # refused, not skipped
        with pytest.raises(SystemExit) as exc:
            bq.main(["--cases", "pollux", "--policies", stray])
        assert exc.value.code == 2
        err = capsys.readouterr().err
        assert "--policies: entry" in err and "is empty" in err, err


@pytest.mark.parametrize("argv, says", [
    (["--workers", "0"], "argument --workers: expected a positive integer, got '0'"),
    (["--seeds", "1_0"], "argument --seeds: expected a positive integer, got '1_0'"),
    (["--seeds", "0"], "argument --seeds: expected a positive integer"),
    (["--first-seed", "-1"], "argument --first-seed: expected a non-negative integer"),
])
def test_counts_are_plain_whole_numbers_in_range(capsys, argv, says):
    with pytest.raises(SystemExit) as exc:
        bq.main(["--cases", "pollux"] + argv)
    assert exc.value.code == 2 and says in capsys.readouterr().err


@pytest.mark.parametrize("cases", ["philly,", ",philly", "philly,,pollux"])
def test_cases_with_an_empty_entry_are_refused(capsys, cases):
    with pytest.raises(SystemExit) as exc:
        bq.main(["--cases", cases])
    assert exc.value.code == 2
    assert "argument --cases: an empty entry" in capsys.readouterr().err


@slow
def test_main_writes_results_with_where_they_were_made(tmp_path, capsys):
    """The whole script on one quick case group: results.json holds the comparison and the
    set-up that made it (library versions, as hsched evaluate's metrics.json)."""
    out = tmp_path / "q"
    assert bq.main(["--quick", "--cases", "pollux", "--workers", "1", "--out", str(out),
                    "--no-progress"]) == 0
    capsys.readouterr()
    results = json.loads((out / "results.json").read_text())
    env = results["settings"]["environment"]
    assert env["libraries"]["numpy"] == np.__version__ and env["python"] == sys.version.split()[0]
    assert {r["policy"] for r in results["runs"]} == set(results["settings"]["policies"])


def case_no_common_job():
    """gavel finishes none of the jobs: no job is common, so no ratio of the case is defined."""
    runs = case_a()
    runs["gavel"] = fake_run("gavel", ARR, [None] * 5, [0] * 5)
    return runs


def test_geomean_says_over_how_many_cases_it_is_taken():
    """A case whose ratio is undefined (no common job) is left out of the geometric mean;
    the summary says so ("over 1 of 2 cases") instead of counting it silently."""
    empty = bq.compare_case(case_no_common_job())
    assert empty["common"] == 0 and math.isnan(empty["ratios"]["gavel"])
    comps = {"a": bq.compare_case(case_a()), "e": empty}
    s = bq.summarize(comps, {"a": "g1", "e": "g1"})
    assert s["cases"] == 2 and s["geomean_ratio"]["gavel"] == pytest.approx(0.5)
    assert s["geomean_cases"] == {"gavel": 1, "sia": 1}
    assert s["groups"]["g1"]["geomean_cases"] == {"gavel": 1, "sia": 1}
    line = bq.summary_line(s)
    assert "÷gavel 0.500 (over 1 of 2 cases)" in line, line
    text = bq.tables(comps, s)
    assert "0.50 (1 of 2)" in text and "'(k of n)'" in text, text
    # every case defined: the figures are printed as before, with no count
    full = bq.summarize({"a": bq.compare_case(case_a())})
    assert full["geomean_cases"] == {"gavel": 1, "sia": 1}
    assert "÷gavel 0.500," in bq.summary_line(full) and "of 1" not in bq.summary_line(full)
    assert "(k of n)" not in bq.tables({"a": bq.compare_case(case_a())}, full)


def test_summary_names_only_target_policies_not_run():
    """"not compared" names a target policy that was not run — not the policy under test."""
    runs = {"sia": fake_run("sia", ARR, [100] * 5, [1] * 5),
            "gavel": fake_run("gavel", ARR, [200] * 5, [2] * 5)}
    s = bq.summarize({"a": bq.compare_case(runs)})
    assert s["first"] == "sia" and "not compared" not in bq.summary_line(s)
    del runs["sia"]
    runs = {"heterosched-lp": fake_run("heterosched-lp", ARR, [100] * 5, [1] * 5), **runs}
    line = bq.summary_line(bq.summarize({"a": bq.compare_case(runs)}))
    assert "(not compared: sia)" in line, line


def _no_simulation(monkeypatch):
    def refused(*a, **k):
        raise AssertionError("simulations ran before the arguments were checked")
    monkeypatch.setattr(bq, "run_all", refused)


def test_objective_no_policy_reads_is_refused_before_simulating(monkeypatch, capsys):
    _no_simulation(monkeypatch)
    base = ["--cases", "pollux", "--quick", "--no-progress"]
    assert bq.main(base + ["--policies", "fifo,gavel", "--objective", "max-min"]) == 2
    err = capsys.readouterr().err
    assert "--objective is read by none of the policies given (fifo, gavel)" in err, err
    assert "heterosched-lp" in err                     # the policies that do read it
    for policies in ("fifo,gavel", "heterosched-lp,gavel"):        # not an objective at all
        assert bq.main(base + ["--policies", policies, "--objective", "no-such-objective"]) == 2
        err = capsys.readouterr().err
        assert "unknown objective 'no-such-objective'" in err and "max-min" in err, err
    # read by one of them: accepted (the simulations start)
    with pytest.raises(AssertionError, match="simulations ran"):
        bq.main(base + ["--policies", "heterosched-lp,gavel", "--objective", "max-min"])


def test_outputs_are_checked_before_simulating(tmp_path, monkeypatch, capsys):
    _no_simulation(monkeypatch)
    base = ["--cases", "pollux", "--quick", "--no-progress", "--policies", "fifo,gavel"]
    a_file = tmp_path / "a-file"
    a_file.write_text("kept\n")
    for argv, says in (
            (["--json", str(tmp_path / "no" / "r.json")],
             f"--json {tmp_path / 'no' / 'r.json'}: cannot write it: its folder"),
            (["--json", str(tmp_path)], "it is a folder, not a file"),
            (["--out", str(a_file)], f"--out {a_file}: cannot write the results there: it "
                                     f"is a file"),
            (["--out", str(a_file / "sub")], "is a file, not a folder")):
        with pytest.raises(SystemExit) as exc:
            bq.main(base + ["--out", str(tmp_path / "out")] + argv)
        err = capsys.readouterr().err
        assert exc.value.code == 2 and says in err and "Traceback" not in err, (argv, err)
    assert a_file.read_text() == "kept\n" and not (tmp_path / "out").exists()
