"""scripts/gavel_fidelity.py: Gavel's log and trace read by hand-written excerpts, the
statistics on hand-made JCTs, and our side run on a tiny trace against made-up Gavel JCTs
(no Gavel needed; a stand-in of its two drivers for the whole script)."""

from __future__ import annotations

import json
import math
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "scripts"))
import gavel_fidelity as gf  # noqa: E402  (scripts/ is not a package)

from hsched_env.throughput import get_throughput_source  # noqa: E402

# ------------------------------------------------------------------------------ Gavel's log
# Gavel's trace driver: its logger on stderr (tab-separated), get_average_jct on stdout.
GAVEL_STDERR = (
    "scheduler:INFO [0] Added job 0\n"
    "scheduler:INFO [4679.686] [Job succeeded]\tJob ID: 2\tStart timestamp: 499.35\t"
    "End timestamp: 4566.08\tDuration: 4066.73\n"
    "scheduler:INFO [7559.665] [Job succeeded]\tJob ID: 0\tStart timestamp: 0.00\t"
    "End timestamp: 7337.24\tDuration: 7337.24\n"
    "scheduler:DEBUG [7559.665] Job 1: 3 steps left\n"          # not the JCT list
    "scheduler:INFO [9000.100] [Job succeeded]\tJob ID: 1\tStart timestamp: 242.33\t"
    "End timestamp: 8997.86\tDuration: 8755.53\n")
GAVEL_STDOUT = """Job completion times:
Job 0: 7337.238
Job 1: 8755.534
Job 2: 4066.726
Average job completion time: 6719.833 seconds (1.87 hours)
Average job completion time (low priority): 6719.833 seconds (1.87 hours)
Cluster utilization: 0.685
"""


def _log(stderr=GAVEL_STDERR, stdout=GAVEL_STDOUT):
    return gf.parse_gavel_log((stderr + stdout).splitlines(keepends=True))


def test_parse_gavel_log():
    log = _log()
    assert log.durations == {2: 4066.73, 0: 7337.24, 1: 8755.53}
    assert log.listed == {0: 7337.238, 1: 8755.534, 2: 4066.726}
    assert log.average_s == 6719.833
    jcts = gf.gavel_jcts(log)
    assert jcts == {0: 7337.24, 1: 8755.53, 2: 4066.73} and list(jcts) == [0, 1, 2]
    # the average alone (no list) is enough; a high-priority job is listed too
    assert gf.gavel_jcts(_log(stdout="Average job completion time: 6719.833 seconds\n")) == jcts
    hp = _log(stdout=GAVEL_STDOUT.replace("Job 1: ", "Job 1 (high priority): "))
    assert hp.listed[1] == 8755.534


@pytest.mark.parametrize("stderr, stdout, says", [
    ("", GAVEL_STDOUT, "no '[Job succeeded] ... Duration:' line"),
    (GAVEL_STDERR, GAVEL_STDOUT.replace("Average job completion time: 6719.833 seconds (1.87 "
                                        "hours)\n", ""), "no 'Average job completion time'"),
    # the mean of the durations (6719.833) is not the average printed
    (GAVEL_STDERR, GAVEL_STDOUT.replace(": 6719.833 seconds (1.87", ": 6720.000 seconds (1.87"),
     "is not Gavel's average 6720.000 s"),
    (GAVEL_STDERR, GAVEL_STDOUT.replace("Job 2: 4066.726\n", ""),
     "2 jobs in Gavel's JCT list, 3 [Job succeeded] lines"),
    (GAVEL_STDERR, GAVEL_STDOUT.replace("Job 2: 4066.726", "Job 2: 4067.726"),
     "job 2's Duration 4066.73 is not its listed JCT 4067.726"),
])
def test_gavel_log_that_does_not_add_up(stderr, stdout, says):
    with pytest.raises(gf.FidelityError) as exc:
        gf.gavel_jcts(_log(stderr, stdout), "LOG")
    assert says in str(exc.value) and "LOG" in str(exc.value)


def test_a_job_that_succeeds_twice_is_an_error():
    twice = GAVEL_STDERR + GAVEL_STDERR.splitlines(keepends=True)[1]
    with pytest.raises(gf.FidelityError, match="job 2 succeeded twice"):
        _log(stderr=twice)


# ---------------------------------------------------------------------------------- traces
def _row(job_type, steps, arrival, sf=1, arrival_text=None):
    """A line of Gavel's 10-column trace (type, command, working dir, steps arg,
    needs_data_dir, total_steps, scale_factor, priority, SLO, arrival)."""
    text = arrival_text if arrival_text is not None else f"{arrival:f}"
    return f"{job_type}\ttrain.py --batch\twork\t--steps\t1\t{steps}\t{sf}\t1\t-1.000000\t{text}\n"


#: The tiny trace (hand-made): four single-GPU jobs of three types.
TINY = [("Recommendation (batch size 512)", 150000, 0.0),
        ("LM (batch size 10)", 1200000, 200.5),
        ("ResNet-18 (batch size 256)", 80000, 400.0),
        ("LM (batch size 10)", 500000, 1000.0)]
TINY_TRACE = "".join(_row(*r) for r in TINY)
#: What Gavel's generated-jobs driver writes: job 0 a first time (arrival "0"), the jobs, and
#: more jobs than asked for.
TINY_RAW = _row(*TINY[0], arrival_text="0") + TINY_TRACE + _row("LM (batch size 10)", 9, 5000.0)


def test_cut_trace():
    assert gf.cut_trace(TINY_RAW, 4) == TINY_TRACE
    assert gf.cut_trace(TINY_RAW, 2) == _row(*TINY[0]) + _row(*TINY[1])
    assert gf.cut_trace(TINY_RAW.rstrip("\n"), 5).endswith("\t5000.000000\n")   # gets its \n
    with pytest.raises(gf.FidelityError, match="holds 6 lines, fewer than the 6 jobs"):
        gf.cut_trace(TINY_RAW, 6)
    with pytest.raises(gf.FidelityError, match="line 1 of RAW is not a copy of line 2"):
        gf.cut_trace(TINY_TRACE, 2, "RAW")


def test_read_our_jcts():
    text = ("job_id,name,model,arrival_s,first_start_s,finish_s,jct_s,restarts\n"
            "0,job-0,lm@bs10,0.000,0.000,100.500,100.500,0\n"
            "1,job-1,lm@bs10,5.000,,,,0\n"                      # never finished
            "2,job-2,lm@bs10,5.000,360.000,nan,nan,0\n"
            "3,job-3,lm@bs10,7.000,360.000,1007.250,1000.250,1\n")
    assert gf.read_our_jcts(text) == {0: 100.5, 3: 1000.25}
    with pytest.raises(gf.FidelityError, match="not named job-N"):
        gf.read_our_jcts(text.replace("job-3", "philly-3"))


# ------------------------------------------------------------------------------ statistics
def test_compare_jcts():
    gavel = {0: 100.0, 1: 100.0, 2: 100.0, 3: 100.0, 4: 100.0, 5: 100.0}
    ours = {0: 50.0, 1: 80.0, 2: 100.0, 3: 120.0, 4: 130.0, 9: 1.0}
    s = gf.compare_jcts(ours, gavel)
    # jobs 0-4 on both sides: ratios 0.5, 0.8, 1.0, 1.2, 1.3
    assert (s["jobs_ours_done"], s["jobs_gavel_done"], s["jobs_both"]) == (6, 6, 5)
    assert s["avg_jct_ours_h"] == pytest.approx(96.0 / 3600)
    assert s["avg_jct_gavel_h"] == pytest.approx(100.0 / 3600)
    assert s["rel_diff"] == pytest.approx(-0.04)
    assert s["ratio_median"] == 1.0
    assert s["ratio_p10"] == pytest.approx(0.5 + 0.4 * 0.3)      # between 0.5 and 0.8
    assert s["ratio_p90"] == pytest.approx(1.2 + 0.6 * 0.1)      # between 1.2 and 1.3
    assert s["n_slower_20pct"] == 1            # 1.3; exactly 1.2 is not "> 20% slower"
    assert s["n_faster_20pct"] == 2            # 0.5 and 0.8 < 1/1.2
    with pytest.raises(gf.FidelityError, match="no job finished on both sides"):
        gf.compare_jcts({1: 5.0}, {2: 5.0})


def test_quantile_is_linear_between_order_statistics():
    xs = [4.0, 1.0, 3.0, 2.0]
    assert [gf.quantile(xs, q) for q in (0.0, 0.1, 0.5, 0.9, 1.0)] == \
        pytest.approx([1.0, 1.3, 2.5, 3.7, 4.0])
    assert gf.quantile([7.0], 0.9) == 7.0


def test_summarize():
    def row(kind, policy, rel, med, slower, faster):
        return {"kind": kind, "policy": policy, "rel_diff": rel, "ratio_median": med,
                "n_slower_20pct": slower, "n_faster_20pct": faster}
    rows = [row("single", "gavel", -0.02, 0.95, 3, 10), row("single", "sticky", 0.01, 1.0, 1, 1),
            row("single", "gavel", 0.04, 0.97, 5, 20), row("multi", "gavel", -0.10, 0.90, 7, 30),
            row("multi", "sticky", 0.20, 1.1, 9, 2)]
    s = gf.summarize(rows)
    assert list(s) == ["gavel", "sticky"]
    g = s["gavel"]
    assert g["traces"] == 3
    assert g["mean_abs_rel_diff_single"] == pytest.approx(0.03)
    assert g["mean_abs_rel_diff_multi"] == pytest.approx(0.10)
    assert g["mean_abs_rel_diff_all"] == pytest.approx(0.16 / 3)
    assert g["median_of_ratio_medians"] == 0.95
    assert (g["n_slower_20pct_total"], g["n_faster_20pct_total"]) == (15, 60)
    assert s["sticky"]["median_of_ratio_medians"] == pytest.approx(1.05)
    only_single = gf.summarize(rows[:1])["gavel"]
    assert only_single["mean_abs_rel_diff_multi"] is None
    assert gf.summary_cells({"gavel": only_single}) == [
        ["gavel", "1", "2.00%", "–", "2.00%", "0.950", "3", "10"]]


def test_commands():
    cfg = gf.Config()
    spec = gf.TraceSpec("multi", 4)
    assert spec.stem(cfg) == "gavel_seed4_multi_600_rate4"
    g = gf.gen_command("py", spec, cfg, Path("/w/raw.trace"))
    assert g[1:] == [gf.GAVEL_GEN_DRIVER, "-c", "36:36:36", "-p", "fifo_perf", "-l", "900",
                     "--seed", "4", "-s", "0", "-e", "600", "-i", "360", "-m",
                     "--output_trace_file_name", "/w/raw.trace"]
    assert "-m" not in gf.gen_command("py", gf.TraceSpec("single", 0), cfg, Path("r"))
    t = gf.gavel_command("py", Path("/w/t.trace"), cfg)
    assert t[1:] == [gf.GAVEL_TRACE_DRIVER, "-t", "/w/t.trace", "-p", "max_min_fairness_perf",
                     "-c", "36:36:36", "--seed", "0", "--time_per_iteration", "360"]
    o = gf.our_command(Path("/w/t.trace"), "gavel-sticky", cfg, Path("/w/o.csv"))
    assert o[3:] == ["simulate", "--cluster", "gavel-108", "--throughputs", "gavel",
                     "--workload", "gavel-trace:path=/w/t.trace", "--policy", "gavel-sticky",
                     "--round-s", "360", "--restart-s", "0", "--json", "--no-progress",
                     "--jobs-out", "/w/o.csv"]


# ------------------------------------------------------------------- our side, end to end
def expected_our_jcts(rows=TINY, round_s=360.0) -> dict[int, float]:
    """What ``fifo-fastest``'s JCTs must be on the tiny trace: 108 GPUs for four single-GPU
    jobs, so each runs alone on its fastest GPU type in Gavel's table (P100 for the
    recommendation job, V100 for the others) from the first round boundary at or after its
    arrival until its steps are done."""
    src = get_throughput_source("gavel")
    out = {}
    for i, (job_type, steps, arrival) in enumerate(rows):
        start = math.ceil(arrival / round_s) * round_s
        fastest = max(src.steps_per_s(job_type, g, 1, True) for g in ("V100-16GB", "P100", "K80"))
        out[i] = start + steps / fastest - arrival
    return out


@pytest.mark.slow
def test_our_side_on_a_tiny_trace(tmp_path):
    trace = tmp_path / "tiny.trace"
    trace.write_text(TINY_TRACE)
    e = expected_our_jcts()
    # e.g. job 1: 159.5 s to its round at 360 s, then 1.2 M steps at 81.65 steps/s on a V100
    assert [round(e[i], 2) for i in range(4)] == [3068.59, 14856.08, 8086.80, 6203.58]
    # Gavel's (made up): job 0 took twice as long, job 1 as long, job 2 two thirds; job 3 is
    # not in it (unfinished there) and job 7 is not ours
    gavel = {0: 2 * e[0], 1: e[1], 2: e[2] / 1.5, 7: 1000.0}
    rows, runs = gf.compare_trace(trace, gavel, ["fifo-fastest", "gavel"], gf.Config(),
                                  tmp_path, gf.TraceSpec("single", 9))
    assert [r["policy"] for r in rows] == ["fifo-fastest", "gavel"]
    r = rows[0]
    ours = runs["fifo-fastest"]["jcts"]
    assert list(ours) == ["0", "1", "2", "3"]
    for k, v in ours.items():                            # --jobs-out rounds to 1 ms
        assert v == pytest.approx(e[int(k)], abs=1e-3), k
    assert r["trace"] == "single s9" and r["kind"] == "single"
    assert (r["jobs_ours_done"], r["jobs_gavel_done"], r["jobs_both"]) == (4, 4, 3)
    mine, theirs = e[0] + e[1] + e[2], 2 * e[0] + e[1] + e[2] / 1.5
    assert r["avg_jct_ours_h"] == pytest.approx(mine / 3 / 3600, rel=1e-6)
    assert r["avg_jct_gavel_h"] == pytest.approx(theirs / 3 / 3600, rel=1e-9)
    assert r["rel_diff"] == pytest.approx(mine / theirs - 1, abs=1e-6)
    assert r["rel_diff"] == pytest.approx(-0.01414, abs=1e-5)
    assert r["ratio_median"] == pytest.approx(1.0, abs=1e-6)
    assert r["ratio_p10"] == pytest.approx(0.6, abs=1e-6)       # 0.5 + 0.2 × (1 - 0.5)
    assert r["ratio_p90"] == pytest.approx(1.4, abs=1e-6)
    assert (r["n_slower_20pct"], r["n_faster_20pct"]) == (1, 1)
    assert r["our_restarts_per_job"] == 0
    assert runs["fifo-fastest"]["summary"]["jobs_completed"] == 4
    cmd = runs["fifo-fastest"]["command"]
    assert cmd[cmd.index("--restart-s") + 1] == "0" and cmd[cmd.index("--round-s") + 1] == "360"
    # the gavel policy's row: its own run, compared the same way (its schedule differs: the
    # recommendation job is not on a P100)
    g = rows[1]
    jcts = gf.read_our_jcts((tmp_path / "ours_tiny_gavel.csv").read_text())
    assert {str(k): v for k, v in jcts.items()} == runs["gavel"]["jcts"]
    assert len(jcts) == 4 and g["jobs_both"] == 3
    assert {k: v for k, v in g.items() if k in gf.compare_jcts(jcts, gavel)} == \
        gf.compare_jcts(jcts, gavel)


# --------------------------------------------------- the whole script, with a stand-in Gavel
FAKE_GEN = f"""import sys
a = sys.argv
assert a[a.index("-p") + 1] == "fifo_perf" and a[a.index("-s") + 1] == "0"
assert a[a.index("-l") + 1] == "900" and a[a.index("-e") + 1] == "4"
with open(a[a.index("--output_trace_file_name") + 1], "w") as f:
    f.write({TINY_RAW!r})
"""
#: Gavel's trace driver, stand-in: job i takes 1000 × (i + 1) s.
FAKE_TRACE_DRIVER = """import sys
a = sys.argv
assert a[a.index("-p") + 1] == "max_min_fairness_perf"
assert a[a.index("--time_per_iteration") + 1] == "360"
n = sum(1 for line in open(a[a.index("-t") + 1]) if line.strip())
jct = [1000.0 * (i + 1) for i in range(n)]
for i, d in enumerate(jct):
    print("scheduler:INFO [1] [Job succeeded]\\tJob ID: %d\\tStart timestamp: 0.00\\t"
          "End timestamp: %.2f\\tDuration: %.2f" % (i, d, d), file=sys.stderr)
print("Job completion times:")
for i, d in enumerate(jct):
    print("Job %d: %.3f" % (i, d))
print("Average job completion time: %.3f seconds (%.2f hours)" % (sum(jct) / n, 0))
"""


def _fake_gavel(root: Path, trace_driver: str = FAKE_TRACE_DRIVER) -> Path:
    sched = root / "scheduler"
    for rel, text in ((gf.GAVEL_GEN_DRIVER, FAKE_GEN), (gf.GAVEL_TRACE_DRIVER, trace_driver),
                      ("runtime/rpc_stubs/common_pb2.py", "")):
        (sched / rel).parent.mkdir(parents=True, exist_ok=True)
        (sched / rel).write_text(text)
    return root


@pytest.mark.slow
def test_main_with_a_stand_in_gavel(tmp_path, capsys):
    gavel = _fake_gavel(tmp_path / "gavel")
    work, out = tmp_path / "work", tmp_path / "out.json"
    argv = ["--gavel", str(gavel), "--gavel-python", sys.executable, "--single-seeds", "0",
            "--multi-seeds", "", "--jobs", "4", "--policies", "fifo-fastest", "--work",
            str(work), "--json", str(out), "--markdown"]
    assert gf.main(argv) == 0
    printed = capsys.readouterr()
    assert "generated in" in printed.err
    assert printed.out.startswith("| trace | policy | jobs |")
    for table in printed.out.split("\n\n")[:2]:       # the two tables: columns line up
        lines = table.splitlines()
        assert {ln.replace("\\|", "").count("|") for ln in lines} == {lines[0].count("|")}
    assert "| single s0 | fifo-fastest | 4 | 0.694 |" in printed.out   # 2,500 s = 0.694 h
    trace = work / "gavel_seed0_single_4_rate4.trace"
    assert trace.read_text() == TINY_TRACE
    assert not list(work.glob("*.log"))                 # Gavel's log deleted once read
    doc = json.loads(out.read_text())
    (row,) = doc["rows"]
    e = expected_our_jcts()
    gavel_jcts = {i: 1000.0 * (i + 1) for i in range(4)}
    assert row["avg_jct_gavel_h"] == pytest.approx(2500.0 / 3600)
    assert row["avg_jct_ours_h"] == pytest.approx(sum(e.values()) / 4 / 3600, rel=1e-6)
    ratios = sorted(e[i] / gavel_jcts[i] for i in range(4))
    assert row["ratio_median"] == pytest.approx((ratios[1] + ratios[2]) / 2, rel=1e-6)
    assert row["n_slower_20pct"] == sum(r > 1.2 for r in ratios) == 4
    assert doc["summary"]["fifo-fastest"]["mean_abs_rel_diff_single"] == \
        pytest.approx(abs(row["rel_diff"]))
    assert doc["summary"]["fifo-fastest"]["mean_abs_rel_diff_multi"] is None
    assert doc["traces"]["single s0"]["gavel"]["jcts"] == {"0": 1000.0, "1": 2000.0,
                                                           "2": 3000.0, "3": 4000.0}
    code = doc["code_at_start"]["ours"]
    assert Path(code["path"], "hsched_env").is_dir()
    assert all(Path(code["path"], f).exists() for f in code["modified_files"] or [])
    # a second run reuses the trace
    assert gf.main(argv) == 0
    assert "(reused)" in capsys.readouterr().err


@pytest.mark.slow
def test_a_failing_gavel_is_named(tmp_path, capsys):
    gavel = _fake_gavel(tmp_path / "gavel", "import sys\nprint('boom', file=sys.stderr)\n"
                                            "sys.exit(3)\n")
    work = tmp_path / "work"
    assert gf.main(["--gavel", str(gavel), "--gavel-python", sys.executable, "--single-seeds",
                    "0", "--multi-seeds", "", "--jobs", "4", "--work", str(work)]) == 1
    err = capsys.readouterr().err
    assert "Gavel's trace driver failed (exit status 3) in " + str(gavel / "scheduler") in err
    assert gf.GAVEL_TRACE_DRIVER in err and "boom" in err
    assert f"its log (kept): {work}/gavel_gavel_seed0_single_4_rate4_max_min_fairness_perf" \
           f".log" in err


@pytest.mark.parametrize("argv, says", [
    (["--gavel", "/nonexistent/gavel"], "--gavel /nonexistent/gavel: no scripts/drivers/"),
    (["--policies", "gavel,nope"], "not a policy of ours: nope"),
    (["--policies", "gavel,gavel"], "gavel given more than once"),
    (["--round-s", "360.5"], "expected a positive whole number of seconds"),
    (["--single-seeds", "", "--multi-seeds", ""], "no trace"),
    (["--gavel-python", "/nonexistent/python"], "--gavel-python /nonexistent/python: no such"),
])
def test_bad_arguments_are_argparse_errors(tmp_path, capsys, argv, says):
    gavel = _fake_gavel(tmp_path / "gavel")
    base = ["--gavel", str(gavel), "--gavel-python", sys.executable, "--work",
            str(tmp_path / "w")]
    with pytest.raises(SystemExit) as exc:
        gf.main(base + argv)
    assert exc.value.code == 2
    assert says in capsys.readouterr().err
