"""Side-by-side speed benchmark: Gavel's own simulator against ours on Gavel's generated workload.

Issue 15, deliverable 3. Both simulators run the case of Gavel's paper (its generated workload:
Poisson arrivals at ``--rate`` jobs/h, seed ``--seed``, single-GPU jobs, 36 V100 + 36 P100 +
36 K80, jobs ``--jobs A:B`` measured, ``--round-s`` s rounds), each as a subprocess, interleaved:
``for run in range(N): for policy: for side`` (the side that goes first alternates from run to
run). Per side and policy the script reports the median wall time (``time.perf_counter``
around the subprocess), the median CPU time (user + sys of the child, from
``resource.getrusage(RUSAGE_CHILDREN)`` deltas) and the avg JCT of the measured jobs, and per
policy the speed-ups (Gavel ÷ ours) and the JCT difference ((ours − Gavel) ÷ Gavel).

The policies (``--policies``):

* ``lp``: Gavel's ``max_min_fairness_perf`` (its heterogeneity-aware max-min LP, solved with
  cvxpy + ECOS) against our ``gavel`` policy (the same LP, solved with HiGHS);
* ``lp-resets``: the same Gavel run against our ``gavel-resets`` (the same LP, recomputed on
  Gavel's own schedule: when the job set changed and at least 1,920 s after the last reset —
  see below); ``lp`` and ``lp-resets`` share Gavel's run of each round of the benchmark;
* ``fifo``: Gavel's ``fifo_perf`` against our ``fifo-fastest`` (decided every round, a running
  job kept on its type, steady rounds skipped);
* ``fifo-resets`` (not run unless asked for): the same Gavel run against our ``gavel-fifo``
  (``fifo_perf`` as Gavel's simulator runs it: the allocation made afresh on Gavel's reset
  rule; within 0.05% of Gavel's avg JCT on identical single-GPU traces, ``gavel_fidelity.py``);
* ``lp-warm`` and ``lp-resets-warm`` (not run unless asked for): ``lp`` and ``lp-resets`` with
  HiGHS warm-started across decisions (``--lp-warm-start``, off by default: it may end on
  another optimal vertex of the LP, so the schedules may differ from the cold runs').

The commands run (rate 4 jobs/h, seed 0, jobs 100:300, 360 s rounds)::

    # Gavel, from its scheduler/ directory (-l is the mean inter-arrival time in seconds)
    python scripts/drivers/simulate_scheduler_with_generated_jobs.py -c 36:36:36 \\
        -p max_min_fairness_perf --seed 0 -l 900 -s 100 -e 300 -i 360 -v
    # ours
    python -m hsched_cli simulate --cluster gavel-108 --throughputs gavel \\
        --workload gavel:rate=4,jobs=1300,seed=0,multi_gpu=0 --policy gavel \\
        --measure-jobs 100:300 --round-s 360 --json --no-progress

Gavel's ``-v`` only makes its driver print its results (without it, it sends stdout *and*
stderr to /dev/null); its per-round log still goes to stderr, which this script discards
(``--gavel-log FILE`` keeps it: about 40 MB a run), so Gavel pays the same logging cost as
in its non-verbose mode. Its avg JCT comes from the ``Average job completion time: X seconds``
line its driver prints on stdout; ours from ``avg_jct_s`` of ``--json``.

Gavel generates jobs until the measured ones are done; our generator draws a fixed number
(``--our-jobs``, default ``B + 1000``: 1,300 for 100:300, i.e. 250 h of arrivals past the
last measured job at 4 jobs/h; jobs that would arrive after the simulation stops cost only
their generation). The script checks, on our first run, that the last generated job arrives
after our simulation ended (in simulated time: its rounds × ``--round-s`` from the first
arrival's round, not ``makespan_s``, which counts from job A's arrival), i.e. that our
arrivals did not run out before the measured jobs finished (it warns otherwise).

What the LP timings compare: Gavel recomputes its allocation only when a job arrived or
finished *and* at least 1,920 s (its ``minimum_time_between_allocation_resets``) have passed
since the last reset — 362 solves in the case above — while our ``gavel`` policy decides every
round (2,001 allocations, ``lp_solves`` in ``--out``) and calls HiGHS only when the round's LP
differs from the previous one (about half of them; the others reuse its solution, exactly:
``lp_reused``). Our ``gavel-resets`` recomputes on Gavel's rule (333 solves here): another
schedule than ``gavel``'s, the comparison of like with like.

The two job lists are *not* identical: our ``gavel:`` generator reimplements Gavel's
distributions (templates, Philly durations, Poisson arrivals) with numpy's generator, while
Gavel draws from Python's ``random.Random`` (seeded ``seed+2`` for jobs, ``seed+3`` for
arrivals, and it draws a scale factor even for single-GPU jobs), so the same seed gives other
jobs. The JCT agreement is therefore statistical, not exact: with seed 0 the measured jobs
100-299 hold 2,894 V100-hours of work on Gavel's side and 2,757 on ours (-4.7%).

Gavel's checkout: ``stanford-futuredata/gavel`` at commit
``c4fa40097339e9608ab71fd64c8bdea96a5e4a4c`` (2022-01-15, "Bugfix where main loop was spinning
infinitely after a job completes"), unpatched. Its simulator imports the gRPC runtime, so its
protobuf stubs must be generated once (``make rpc_stubs`` in ``scheduler/``, a build step that
does not change results). Gavel's trace parser reads ``total_steps`` with ``int()``, but the
generated-jobs driver used here never parses a trace, so no patch is needed. Setup (a separate
venv; nothing is installed into ours)::

    git clone https://github.com/stanford-futuredata/gavel /tmp/gavel
    python3.11 -m venv /tmp/gavel-venv
    /tmp/gavel-venv/bin/pip install cvxpy ecos numpy scipy scikit-learn matrix-completion \\
        grpcio grpcio-tools psutil
    (cd /tmp/gavel/scheduler && PATH=/tmp/gavel-venv/bin:$PATH make rpc_stubs)

Usage::

    python scripts/bench_vs_gavel.py --gavel /tmp/gavel --gavel-python /tmp/gavel-venv/bin/python \\
        --runs 5 --markdown --out /tmp/bench_vs_gavel.json
    python scripts/bench_vs_gavel.py --runs 1 --jobs 10:30     # ours only, a few seconds

Without ``--gavel`` only our side runs (and the script says so).
"""

from __future__ import annotations

import argparse
import json
import math
import os
import re
import resource
import shutil
import statistics
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

sys.path.append(str(Path(__file__).resolve().parent))       # script_args
from script_args import output_file_problem, positive_int  # noqa: E402

from hsched_env.errors import decimal_int  # noqa: E402

# Gavel's cluster (``-c V100:P100:K80``) and our preset with the same GPUs.
GAVEL_CLUSTER = "36:36:36"
OUR_CLUSTER = "gavel-108"
#: policy key -> (Gavel's policy, ours)
POLICIES = {"lp": ("max_min_fairness_perf", "gavel"),
            "lp-resets": ("max_min_fairness_perf", "gavel-resets"),
            "fifo": ("fifo_perf", "fifo-fastest"),
            "fifo-resets": ("fifo_perf", "gavel-fifo"),
            "lp-warm": ("max_min_fairness_perf", "gavel"),
            "lp-resets-warm": ("max_min_fairness_perf", "gavel-resets")}
#: Our command-line flags per benchmark key (the ``-warm`` keys: HiGHS warm-started across
#: decisions, ``--lp-warm-start``; off by default because it may end on another optimal vertex).
OUR_FLAGS = {"lp-warm": ("--lp-warm-start",), "lp-resets-warm": ("--lp-warm-start",)}
DEFAULT_POLICIES = ("lp", "lp-resets", "fifo")
SIDES = ("gavel", "ours")
GAVEL_DRIVER = "scripts/drivers/simulate_scheduler_with_generated_jobs.py"
GAVEL_STUB = "runtime/rpc_stubs/common_pb2.py"
_GAVEL_AVG = re.compile(r"^Average job completion time: ([0-9.eE+-]+) seconds", re.M)
_GAVEL_JOB = re.compile(r"^Job \d+: ", re.M)
TAIL_CHARS = 2000


class BenchError(RuntimeError):
    """A run failed or printed no result."""


@dataclass
class Config:
    rate: float = 4.0
    seed: int = 0
    jobs: tuple[int, int] = (100, 300)
    our_jobs: int = 1300
    round_s: float = 360.0


@dataclass
class Run:
    """One subprocess run: its times and the avg JCT of the measured jobs."""
    wall_s: float
    cpu_s: float
    avg_jct_s: float
    jobs_measured: int
    extra: dict = field(default_factory=dict)


def _fmt_num(x: float) -> str:
    return f"{x:g}"


def gavel_command(python: str, policy: str, cfg: Config) -> list[str]:
    """Gavel's generated-jobs driver (run from its ``scheduler/`` directory)."""
    a, b = cfg.jobs
    return [python, GAVEL_DRIVER, "-c", GAVEL_CLUSTER, "-p", policy, "--seed", str(cfg.seed),
            "-l", _fmt_num(3600.0 / cfg.rate), "-s", str(a), "-e", str(b),
            "-i", str(int(round(cfg.round_s))), "-v"]


def our_workload(cfg: Config) -> str:
    return f"gavel:rate={_fmt_num(cfg.rate)},jobs={cfg.our_jobs},seed={cfg.seed},multi_gpu=0"


def our_command(key: str, cfg: Config) -> list[str]:
    """Our ``hsched simulate`` command for the benchmark key ``key`` (``POLICIES``); any
    other name is taken as our policy's name, run with no extra flags (as before the keys)."""
    a, b = cfg.jobs
    policy = POLICIES[key][1] if key in POLICIES else key
    return [sys.executable, "-m", "hsched_cli", "simulate", "--cluster", OUR_CLUSTER,
            "--throughputs", "gavel", "--workload", our_workload(cfg), "--policy",
            policy, "--measure-jobs", f"{a}:{b}", "--round-s", _fmt_num(cfg.round_s),
            "--json", "--no-progress", *OUR_FLAGS.get(key, ())]


def _children_cpu_s() -> float:
    ru = resource.getrusage(resource.RUSAGE_CHILDREN)
    return ru.ru_utime + ru.ru_stime


def timed(cmd: list[str], cwd: str | None = None, stderr=subprocess.PIPE):
    """Run ``cmd``; return (completed process, wall s, CPU s of the child)."""
    cpu0, t0 = _children_cpu_s(), time.perf_counter()
    try:
        proc = subprocess.run(cmd, cwd=cwd, stdout=subprocess.PIPE, stderr=stderr, text=True)
    except OSError as exc:                      # no such interpreter, not executable
        raise BenchError(f"{' '.join(cmd)} could not start: {exc}") from None
    wall = time.perf_counter() - t0
    cpu = _children_cpu_s() - cpu0
    if proc.returncode != 0:
        tail = (proc.stderr or proc.stdout or "")[-TAIL_CHARS:]
        raise BenchError(f"{' '.join(cmd)} exited with {proc.returncode}:\n{tail}")
    return proc, wall, cpu


def parse_gavel_output(stdout: str) -> tuple[float, int]:
    """(avg JCT s, number of measured jobs listed) from the stdout of Gavel's driver."""
    m = _GAVEL_AVG.search(stdout)
    if not m:
        raise BenchError("Gavel printed no 'Average job completion time' line:\n"
                         + stdout[-TAIL_CHARS:])
    return float(m.group(1)), len(_GAVEL_JOB.findall(stdout))


def run_gavel(scheduler_dir: Path, python: str, policy: str, cfg: Config,
              log: Path | None) -> Run:
    cmd = gavel_command(python, policy, cfg)
    try:
        if log is None:
            proc, wall, cpu = timed(cmd, cwd=str(scheduler_dir), stderr=subprocess.DEVNULL)
        else:
            with open(log, "w") as f:
                proc, wall, cpu = timed(cmd, cwd=str(scheduler_dir), stderr=f)
    except BenchError as exc:
        hint = "" if log else "\n(rerun with --gavel-log FILE to keep Gavel's stderr)"
        raise BenchError(f"{exc}{hint}") from None
    jct, n = parse_gavel_output(proc.stdout)
    return Run(wall, cpu, jct, n)


def run_ours(key: str, cfg: Config) -> Run:
    proc, wall, cpu = timed(our_command(key, cfg))
    try:
        out = json.loads(proc.stdout)
    except json.JSONDecodeError as exc:
        raise BenchError(f"our --json output is not JSON ({exc}):\n{proc.stdout[-TAIL_CHARS:]}")
    if out.get("jobs_completed") != out.get("jobs_total"):
        print(f"warning: ours ({key}) finished {out.get('jobs_completed')} of "
              f"{out.get('jobs_total')} measured jobs", file=sys.stderr)
    return Run(wall, cpu, float(out["avg_jct_s"]), int(out["jobs_total"]),
               {"sim_wall_s": out.get("wall_s"), "makespan_s": out.get("makespan_s"),
                "rounds": out.get("rounds"), "lp_solves": out.get("lp_solves"),
                "lp_reused": out.get("lp_reused")})


def _our_arrivals(cfg: Config) -> list[float]:
    """Arrival times of our workload's generated jobs, by job id (not timed)."""
    from hsched_env.workloads import load_workload
    w = load_workload(our_workload(cfg), OUR_CLUSTER, throughputs="gavel")
    return [j.arrival_s for j in w.jobs]


def last_arrival_s(cfg: Config) -> float:
    """Arrival time of our workload's last generated job (not timed)."""
    return max(_our_arrivals(cfg))


def simulated_end_s(run: Run, cfg: Config, arrivals: list[float] | None = None) -> float | None:
    """When our simulation ended, in simulated seconds (the workload's clock), from its
    ``--json`` (``None`` if it lacks ``rounds``): at least its ``rounds`` × ``--round-s`` from
    the first arrival's round (it starts there; a stretch with no job active is jumped over,
    not counted), and at least the last measured finish — job A's arrival + ``makespan_s``
    (``makespan_s`` counts from job A's arrival, not from 0)."""
    rounds, makespan = run.extra.get("rounds"), run.extra.get("makespan_s")
    if rounds is None:
        return None
    arrivals = _our_arrivals(cfg) if arrivals is None else arrivals
    start = math.floor(min(arrivals) / cfg.round_s) * cfg.round_s
    end = start + rounds * cfg.round_s
    if makespan is not None and math.isfinite(makespan):
        end = max(end, arrivals[cfg.jobs[0]] + makespan)
    return end


def arrivals_ran_out(key: str, run: Run, cfg: Config) -> str | None:
    """The warning when our simulation (``run``, of benchmark key ``key``) was still going
    when the last of our generated jobs arrived — from then on no job arrived, unlike Gavel's
    generator, which draws jobs until the measured ones are done — else ``None``."""
    arrivals = _our_arrivals(cfg)
    end = simulated_end_s(run, cfg, arrivals)
    last = max(arrivals)
    if end is None or end < last:
        return None
    return (f"{key}: our simulation ran until t={end:.0f} s (simulated) but the last of our "
            f"{cfg.our_jobs} jobs arrived at t={last:.0f} s: our arrivals ran out before the "
            f"measured jobs finished; raise --our-jobs")


def gavel_python_problem(python: str, cwd: Path) -> str | None:
    """Why ``--gavel-python`` cannot be run from Gavel's ``cwd`` (its ``scheduler/``, where
    its driver runs): a path that is not an executable file (a relative path is taken from
    ``cwd``, as ``subprocess`` does), a bare name not on ``PATH``; or ``None``."""
    if os.sep in python or (os.altsep and os.altsep in python):
        p = Path(python)
        where = "" if p.is_absolute() else f" (a relative path is taken from {cwd})"
        p = p if p.is_absolute() else cwd / p
        if not p.exists():
            return "no such file" + where
        if not p.is_file() or not os.access(p, os.X_OK):
            return "not an executable file" + where
        return None
    return None if shutil.which(python) else "not found on PATH"


def gavel_scheduler_dir(path: str) -> Path:
    """Gavel's ``scheduler/`` directory from a checkout (or the directory itself); a
    ``ValueError`` saying what is missing if ``path`` is not a usable checkout."""
    p = Path(path).expanduser().resolve()
    d = p if (p / GAVEL_DRIVER).is_file() else p / "scheduler"
    if not (d / GAVEL_DRIVER).is_file():
        raise ValueError(f"no {GAVEL_DRIVER} under it or its scheduler/")
    if not (d / GAVEL_STUB).is_file():
        raise ValueError(f"Gavel's gRPC stubs are missing ({d / GAVEL_STUB}); "
                         f"run `make rpc_stubs` in {d} with its venv's python on PATH")
    return d


def _median(xs):
    return statistics.median(xs) if xs else None


def summarize(runs: dict[str, list[Run]]) -> dict:
    """Medians per side, speed-ups (Gavel ÷ ours) and the JCT difference (ours vs Gavel, %)."""
    s: dict = {}
    for side in SIDES:
        rs = runs.get(side) or []
        s[f"{side}_wall_s"] = _median([r.wall_s for r in rs])
        s[f"{side}_cpu_s"] = _median([r.cpu_s for r in rs])
        jct = _median([r.avg_jct_s for r in rs])
        s[f"{side}_avg_jct_h"] = None if jct is None else jct / 3600.0
        s[f"{side}_jobs_measured"] = rs[0].jobs_measured if rs else None
    both = s["gavel_wall_s"] is not None and s["ours_wall_s"] is not None
    s["speedup_wall"] = s["gavel_wall_s"] / s["ours_wall_s"] if both else None
    s["speedup_cpu"] = (s["gavel_cpu_s"] / s["ours_cpu_s"]
                        if both and s["ours_cpu_s"] > 0 else None)
    s["jct_diff_pct"] = (100.0 * (s["ours_avg_jct_h"] / s["gavel_avg_jct_h"] - 1.0)
                         if both else None)
    return s


HEADERS = ["policy", "Gavel wall s", "ours wall s", "speed-up", "Gavel CPU s", "ours CPU s",
           "Gavel avg JCT (h)", "ours avg JCT (h)", "JCT difference %"]


def table_rows(summaries: dict[str, dict]) -> list[list[str]]:
    def f(x, fmt):
        return "–" if x is None else format(x, fmt)

    rows = []
    for key, s in summaries.items():
        g, o = POLICIES[key]
        rows.append([f"{key} ({g} / {o})", f(s["gavel_wall_s"], ".2f"), f(s["ours_wall_s"], ".2f"),
                     "–" if s["speedup_wall"] is None else f"{s['speedup_wall']:.2f}×",
                     f(s["gavel_cpu_s"], ".2f"), f(s["ours_cpu_s"], ".2f"),
                     f(s["gavel_avg_jct_h"], ".3f"), f(s["ours_avg_jct_h"], ".3f"),
                     f(s["jct_diff_pct"], "+.1f")])
    return rows


def parse_range(text: str) -> tuple[int, int]:
    try:
        a, b = (decimal_int(x) for x in text.split(":"))
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected A:B, got {text!r}")
    if not 0 <= a < b:
        raise argparse.ArgumentTypeError(f"expected 0 <= A < B, got {text!r}")
    return a, b


def parse_policies(text: str) -> list[str]:
    """``--policies``: comma-separated keys of ``POLICIES``; an empty entry or a key given
    twice is refused (twice would double its runs, not its medians' count)."""
    keys = [k.strip() for k in text.split(",")]
    bad = [k for k in keys if k not in POLICIES]
    if bad:
        raise argparse.ArgumentTypeError(f"policies must be among {','.join(POLICIES)} (no "
                                         f"empty entries), got {text!r}")
    twice = [k for k in dict.fromkeys(keys) if keys.count(k) > 1]
    if twice:
        raise argparse.ArgumentTypeError(f"{', '.join(twice)} given more than once in "
                                         f"{text!r}: give distinct policies")
    return keys


def _positive(text: str) -> float:
    """A positive finite number (``--rate``, ``--round-s``)."""
    try:
        value = float(text)
    except ValueError:
        value = math.nan
    if not (math.isfinite(value) and value > 0):
        raise argparse.ArgumentTypeError(f"expected a positive number, got {text!r}")
    return value


def _count(minimum: int):
    """An integer >= ``minimum`` (``--seed``: 0, ``--our-jobs``: 1)."""
    def parse(text: str) -> int:
        try:
            value = decimal_int(text)
        except ValueError:
            value = minimum - 1
        if value < minimum:
            raise argparse.ArgumentTypeError(f"expected an integer >= {minimum}, got {text!r}")
        return value
    return parse


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--gavel", metavar="PATH",
                    help="Gavel checkout (or its scheduler/ directory); without it only our "
                         "side runs")
    ap.add_argument("--gavel-python", default="python3", metavar="PATH",
                    help="interpreter with Gavel's dependencies (python3)")
    ap.add_argument("--gavel-log", metavar="FILE", type=Path,
                    help="keep Gavel's stderr log of the last run here (discarded by default)")
    ap.add_argument("--runs", type=positive_int, default=5, help="runs per side and policy (5)")
    ap.add_argument("--policies", type=parse_policies, default=list(DEFAULT_POLICIES),
                    help="comma-separated among " + ",".join(POLICIES)
                    + " (default: lp,lp-resets,fifo; the -warm keys add --lp-warm-start; "
                    "fifo-resets: our gavel-fifo)")
    ap.add_argument("--round-s", type=_positive, default=360.0, help="round length, s (360)")
    ap.add_argument("--rate", type=_positive, default=4.0, help="arrival rate, jobs/h (4)")
    ap.add_argument("--seed", type=_count(0), default=0, help="workload seed (0)")
    ap.add_argument("--jobs", type=parse_range, default=(100, 300), metavar="A:B",
                    help="measured job ids A..B-1 (100:300)")
    ap.add_argument("--our-jobs", type=_count(1), metavar="N",
                    help="jobs our generator draws (B + 1000)")
    ap.add_argument("--out", type=Path, metavar="FILE.json", help="write every run as JSON")
    ap.add_argument("--markdown", action="store_true", help="print a markdown table")
    args = ap.parse_args(argv)
    b = args.jobs[1]
    cfg = Config(rate=args.rate, seed=args.seed, jobs=args.jobs, round_s=args.round_s,
                 our_jobs=args.our_jobs or b + 1000)
    if cfg.our_jobs < b:
        ap.error(f"--our-jobs {cfg.our_jobs} is below the measured end {b}")
    if args.gavel_log is not None and not args.gavel:
        ap.error("--gavel-log: Gavel's log is written only when its side runs (give --gavel)")
    # what is written at the end, checked before the runs (nothing is created here)
    for flag, path in (("--out", args.out), ("--gavel-log", args.gavel_log)):
        problem = path is not None and output_file_problem(path)
        if problem:
            ap.error(f"{flag} {path}: cannot write it: {problem}")

    try:
        sched_dir = gavel_scheduler_dir(args.gavel) if args.gavel else None
    except ValueError as exc:
        ap.error(f"--gavel {args.gavel}: {exc}")
    if sched_dir and args.round_s != int(args.round_s):
        ap.error("Gavel's -i takes whole seconds: --round-s must be an integer with --gavel")
    if sched_dir:
        problem = gavel_python_problem(args.gavel_python, sched_dir)
        if problem:
            ap.error(f"--gavel-python {args.gavel_python}: {problem}")
    sides = SIDES if sched_dir else ("ours",)
    if sched_dir is None:
        print("no --gavel checkout given: running only our side", file=sys.stderr)

    try:
        runs, warnings = measure(args, cfg, sched_dir, sides)
    except BenchError as exc:
        print(f"bench_vs_gavel: {exc}", file=sys.stderr)
        return 1
    report(args, cfg, sched_dir, runs, warnings)
    return 0


def measure(args, cfg: Config, sched_dir: Path | None, sides: tuple[str, ...]):
    """The interleaved runs: ``{policy: {side: [Run]}}`` and the warnings."""
    runs: dict[str, dict[str, list[Run]]] = {k: {s: [] for s in sides} for k in args.policies}
    warnings: list[str] = []
    for i in range(args.runs):
        order = sides if i % 2 == 0 else sides[::-1]
        gavel_runs: dict[str, Run] = {}       # Gavel's policy -> its run of this round
        for key in args.policies:
            g_policy = POLICIES[key][0]
            for side in order:
                if side == "gavel" and g_policy in gavel_runs:
                    r = gavel_runs[g_policy]          # the same simulation: run once per round
                elif side == "gavel":
                    r = gavel_runs[g_policy] = run_gavel(sched_dir, args.gavel_python, g_policy,
                                                         cfg, args.gavel_log)
                else:
                    r = run_ours(key, cfg)
                    if i == 0:
                        ran_out = arrivals_ran_out(key, r, cfg)
                        if ran_out:
                            warnings.append(ran_out)
                runs[key][side].append(r)
                print(f"run {i + 1}/{args.runs} {key:14s} {side:5s} wall {r.wall_s:7.2f} s  "
                      f"CPU {r.cpu_s:7.2f} s  avg JCT {r.avg_jct_s / 3600:.3f} h "
                      f"({r.jobs_measured} jobs)", file=sys.stderr, flush=True)
    return runs, warnings


def report(args, cfg: Config, sched_dir: Path | None, runs, warnings: list[str]) -> None:
    """Print the table (and write ``--out``)."""
    summaries = {k: summarize(runs[k]) for k in args.policies}
    for w in warnings:
        print("warning: " + w, file=sys.stderr)
    from hsched_env.text import format_table, markdown_table
    rows = table_rows(summaries)
    print(markdown_table(HEADERS, rows, text_cols=("policy",)) if args.markdown
          else format_table(HEADERS, rows))
    a, b = cfg.jobs
    print(f"\nmedians of {args.runs} run(s); rate {cfg.rate:g} jobs/h, seed {cfg.seed}, "
          f"single-GPU jobs, {GAVEL_CLUSTER} ({OUR_CLUSTER}), jobs {a}-{b - 1} measured, "
          f"{cfg.round_s:g} s rounds; speed-up = Gavel wall ÷ ours"
          + ("" if sched_dir else "; Gavel not run (no --gavel)"))

    if args.out:
        doc = {
            "config": {"rate": cfg.rate, "seed": cfg.seed, "jobs": list(cfg.jobs),
                       "our_jobs": cfg.our_jobs, "round_s": cfg.round_s, "runs": args.runs,
                       "policies": args.policies, "gavel": str(sched_dir) if sched_dir else None,
                       "gavel_python": args.gavel_python if sched_dir else None},
            "commands": {k: {"gavel": gavel_command(args.gavel_python, POLICIES[k][0], cfg)
                             if sched_dir else None,
                             "ours": our_command(k, cfg)} for k in args.policies},
            "summary": summaries,
            "runs": {k: {s: [vars(r) for r in rs] for s, rs in v.items()}
                     for k, v in runs.items()},
            "warnings": warnings,
        }
        args.out.write_text(json.dumps(doc, indent=1) + "\n")


if __name__ == "__main__":
    sys.exit(main())
