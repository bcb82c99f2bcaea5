"""Schedule fidelity: our ``gavel`` policies against Gavel's own simulator, job by job, on the
identical job list.

``bench_vs_gavel.py`` compares speed on two statistically alike workloads; this script runs
both simulators on the *same* jobs and compares the JCT of every job. Per trace:

1. **The trace.** Gavel's generated-jobs driver (Poisson arrivals at ``--rate`` jobs/h, seed
   S; single-GPU jobs, or with ``-m`` its multi-GPU mix) writes the jobs it generates to
   ``--output_trace_file_name``. The script keeps lines 2 to N + 1 (``--jobs N``): line 1 is
   job 0 a first time (when the measurement window opens the driver dumps the jobs running —
   with ``-s 0`` only job 0, with all its steps — and then writes job 0 as it arrives; the
   script checks that line 1 is that copy), and the driver goes on generating jobs until the
   first N are done, so the file holds more than N. The jobs are drawn from Gavel's own job
   and arrival generators (``random.Random``, seeded with S + 2 and S + 3), not from the
   policy the driver schedules them with (``fifo_perf``), so the first N do not depend on it.
   The traces are kept in ``--work`` and reused when present (a fresh temporary folder by
   default, kept, and named on stderr).
2. **Gavel's side.** Its trace driver replays the trace with ``max_min_fairness_perf``
   (``--gavel-policy``; its heterogeneity-aware max-min LP), 36 V100 + 36 P100 + 36 K80,
   ``--seed 0``. A job's JCT is the ``Duration`` of its ``[Job succeeded]`` line in the log
   (stderr); it is checked against what the driver prints on stdout: the ``Job N: X`` list
   (the same jobs, each within 0.01 s) and the ``Average job completion time`` (the mean of
   the durations within 0.01 s). The log (about 40 MB for 600 jobs) is deleted once read
   unless ``--keep-gavel-logs``; after a failure it is kept, and named.
3. **Ours.** ``hsched simulate`` replays the same file (``gavel-trace:path=``; our job
   ``job-N`` is the trace's N-th row, Gavel's job ID N likewise) with each of ``--policies``
   (default ``gavel``, ``gavel-resets``, ``gavel-sticky``), the same round length and
   ``--restart-s 0`` by default (Gavel's simulator charges no restart cost); the JCTs come
   from ``--jobs-out``. It runs the code this script imports (``hsched_env``'s checkout is put
   first on the child's ``PYTHONPATH``).
4. **The comparison**, over the jobs both sides finished: the avg JCT of each side and their
   relative difference (ours ÷ Gavel − 1); the median, p10 and p90 of the per-job ratio
   ours ÷ Gavel (quantiles interpolated linearly between order statistics); the number of jobs
   more than 20% slower (ratio > 1.2) and more than 20% faster (ratio < 1/1.2) than Gavel's.

The output: a table per trace × policy, then per policy a summary over the traces: the mean
|relative difference| over the single-GPU traces, over the multi-GPU ones and over all; the
median of the per-trace ratio medians; the totals of slower and faster jobs. ``--markdown``
prints markdown tables; ``--json FILE`` writes everything (configuration, commands, code
versions, every per-job JCT of both sides, the rows and the summary).

The commands, for the default single-GPU trace of seed 0 (multi-GPU traces add ``-m`` to the
first; ``-l`` is the mean inter-arrival time in seconds, 3600 ÷ ``--rate``; ``-i`` and
``--time_per_iteration`` are the round length, ``--round-s``)::

    # Gavel, from its scheduler/ directory
    python scripts/drivers/simulate_scheduler_with_generated_jobs.py -c 36:36:36 -p fifo_perf \\
        -l 900 --seed 0 -s 0 -e 600 -i 360 \\
        --output_trace_file_name WORK/gen_raw_seed0_single_600_rate4.trace
    # WORK/gavel_seed0_single_600_rate4.trace: its lines 2-601 (sed -n 2,601p)
    python scripts/drivers/simulate_scheduler_with_trace.py \\
        -t WORK/gavel_seed0_single_600_rate4.trace -p max_min_fairness_perf -c 36:36:36 \\
        --seed 0 --time_per_iteration 360
    # ours, once per policy
    python -m hsched_cli simulate --cluster gavel-108 --throughputs gavel \\
        --workload gavel-trace:path=WORK/gavel_seed0_single_600_rate4.trace --policy gavel \\
        --round-s 360 --restart-s 0 --json --no-progress \\
        --jobs-out WORK/ours_gavel_seed0_single_600_rate4_gavel.csv

The generated-jobs driver runs without ``-v``: it then sends its own output to /dev/null (a
failure's traceback still reaches stderr); the trace file is written the same either way.

Gavel's checkout and venv are set up as in ``bench_vs_gavel.py`` (``stanford-futuredata/gavel``
at ``c4fa40097339e9608ab71fd64c8bdea96a5e4a4c``, unpatched, its gRPC stubs made once with
``make rpc_stubs``; a sparse checkout without its large data files
``scheduler/traces/msr/*/philly.trace`` and ``workloads/pytorch/recommendation/tests/data/
train.csv`` does: neither is read here). Gavel's code is only run, as a subprocess, never
imported or copied.

Usage (with 600 jobs a trace takes 15-30 s to generate, Gavel 11-18 s to replay it, ours 2-9 s
per policy: the six default traces and three policies in about 160 s once generated, 4-5 min
from scratch; one subprocess at a time)::

    python scripts/gavel_fidelity.py --gavel /tmp/gavel --gavel-python /tmp/gavel-venv/bin/python \\
        --work /tmp/gavel_fidelity --markdown --json /tmp/gavel_fidelity.json
    python scripts/gavel_fidelity.py --gavel /tmp/gavel --gavel-python /tmp/gavel-venv/bin/python \\
        --single-seeds 0 --multi-seeds "" --jobs 100 --policies gavel     # one small trace
"""

from __future__ import annotations

import argparse
import csv
import io
import itertools
import json
import math
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterable

import numpy as np

sys.path.append(str(Path(__file__).resolve().parent))       # script_args, bench_vs_gavel
from bench_vs_gavel import gavel_python_problem, gavel_scheduler_dir  # noqa: E402
from script_args import (list_of, nonnegative_int, nonnegative_number,  # noqa: E402
                         one_line_errors, output_file_problem, output_folder_problem,
                         positive_int, positive_number)

import hsched_env  # noqa: E402
from hsched_env.errors import command_line_value, decimal_float  # noqa: E402

# Gavel's cluster (``-c V100:P100:K80``) and our preset with the same GPUs.
GAVEL_CLUSTER = "36:36:36"
OUR_CLUSTER = "gavel-108"
GAVEL_GEN_DRIVER = "scripts/drivers/simulate_scheduler_with_generated_jobs.py"
GAVEL_TRACE_DRIVER = "scripts/drivers/simulate_scheduler_with_trace.py"
#: The policy Gavel's generated-jobs driver schedules with while it writes the trace (the jobs
#: do not depend on it: it only decides how long the driver runs).
GAVEL_GEN_POLICY = "fifo_perf"
GAVEL_POLICY = "max_min_fairness_perf"
#: ``--seed`` of Gavel's trace driver (its policy's and scheduler's seed).
GAVEL_SEED = 0
DEFAULT_POLICIES = ("gavel", "gavel-resets", "gavel-sticky")
KINDS = ("single", "multi")
#: A job is "slower" when ours ÷ Gavel > SLOWER, "faster" when it is < 1 / SLOWER.
SLOWER = 1.2
#: Largest difference allowed between Gavel's ``[Job succeeded]`` durations (printed to
#: 0.01 s) and its own ``Job N: X`` list / average (to 0.001 s): rounding only.
GAVEL_TOLERANCE_S = 0.01
TAIL_CHARS = 2000


class FidelityError(RuntimeError):
    """A run failed, printed nothing usable, or its output does not add up."""


# ------------------------------------------------------------------------ pure functions
@dataclass
class GavelLog:
    """What Gavel's trace driver says about its jobs: ``durations`` from the ``[Job
    succeeded]`` lines (stderr), ``listed`` from the ``Job N: X`` list its ``get_average_jct``
    prints (stdout), ``average_s`` its ``Average job completion time`` (``None``: no line)."""
    durations: dict[int, float] = field(default_factory=dict)
    listed: dict[int, float] = field(default_factory=dict)
    average_s: float | None = None


_NUM = r"([0-9]+(?:\.[0-9]*)?(?:[eE][+-]?[0-9]+)?)"
_SUCCEEDED = re.compile(r"\[Job succeeded\]\s+Job ID: (\d+)\s+Start timestamp: " + _NUM
                        + r"\s+End timestamp: " + _NUM + r"\s+Duration: " + _NUM)
_LISTED = re.compile(r"Job (\d+)(?: \(high priority\))?: " + _NUM)
_AVERAGE = re.compile(r"Average job completion time: " + _NUM + " seconds")
_LIST_HEADER = "Job completion times:"


def parse_gavel_log(lines: Iterable[str]) -> GavelLog:
    """Read Gavel's trace-driver output (its stderr log and its stdout, in any order, or one
    after the other as a single stream of lines). The ``Job N: X`` lines are read only in the
    list that follows ``Job completion times:``."""
    log = GavelLog()
    in_list = False
    for line in lines:
        if "[Job succeeded]" in line:
            m = _SUCCEEDED.search(line)
            if not m:
                raise FidelityError(f"unreadable [Job succeeded] line: {line.strip()[:300]}")
            job = int(m.group(1))
            if job in log.durations:
                raise FidelityError(f"job {job} succeeded twice in Gavel's log")
            log.durations[job] = float(m.group(4))
            continue
        text = line.strip()
        if text == _LIST_HEADER:
            in_list = True
            continue
        if in_list:
            m = _LISTED.fullmatch(text)
            if m:
                log.listed[int(m.group(1))] = float(m.group(2))
                continue
            in_list = False
        m = _AVERAGE.match(text)
        if m and log.average_s is None:
            log.average_s = float(m.group(1))
    return log


def gavel_jcts(log: GavelLog, source: str = "Gavel's output") -> dict[int, float]:
    """Gavel's per-job JCTs (s), ``{job ID: Duration}``, checked against its own list (when
    printed) and its average; a ``FidelityError`` naming ``source`` when they disagree."""
    if not log.durations:
        raise FidelityError(f"no '[Job succeeded] ... Duration:' line in {source}")
    if log.average_s is None:
        raise FidelityError(f"no 'Average job completion time' line in {source}")
    if log.listed:
        if set(log.listed) != set(log.durations):
            only_list = sorted(set(log.listed) - set(log.durations))[:10]
            only_log = sorted(set(log.durations) - set(log.listed))[:10]
            raise FidelityError(
                f"{source}: {len(log.listed)} jobs in Gavel's JCT list, {len(log.durations)} "
                f"[Job succeeded] lines (only listed: {only_list}; only succeeded: {only_log})")
        job, worst = max(((j, abs(log.listed[j] - d)) for j, d in log.durations.items()),
                         key=lambda p: p[1])
        if worst > GAVEL_TOLERANCE_S:
            raise FidelityError(f"{source}: job {job}'s Duration {log.durations[job]} is not "
                                f"its listed JCT {log.listed[job]}")
    mean = statistics.fmean(log.durations.values())
    if abs(mean - log.average_s) > GAVEL_TOLERANCE_S:
        raise FidelityError(f"{source}: the mean of the {len(log.durations)} durations, "
                            f"{mean:.3f} s, is not Gavel's average {log.average_s:.3f} s")
    return dict(sorted(log.durations.items()))


def cut_trace(raw: str, jobs: int, source: str = "the raw trace") -> str:
    """The first ``jobs`` jobs of a trace written by Gavel's generated-jobs driver (``-s 0``):
    its lines 2 .. ``jobs`` + 1, unchanged. Line 1 must be job 0 written a first time: the
    same job as line 2 at the same arrival time (0)."""
    lines = [ln for ln in raw.splitlines(keepends=True) if ln.strip()]
    if len(lines) < jobs + 1:
        raise FidelityError(f"{source} holds {len(lines)} lines, fewer than the {jobs} jobs "
                            f"asked for + its duplicated first line")
    first, second = (ln.rstrip("\r\n").split("\t") for ln in lines[:2])
    try:
        same = first[:-1] == second[:-1] and float(first[-1]) == float(second[-1])
    except ValueError:
        same = False
    if not same:
        raise FidelityError(f"line 1 of {source} is not a copy of line 2 (job 0 dumped when "
                            f"the measurement window opens): is it from Gavel's generated-jobs "
                            f"driver with -s 0?")
    return "".join(ln if ln.endswith("\n") else ln + "\n" for ln in lines[1:jobs + 1])


def read_our_jcts(jobs_csv: str) -> dict[int, float]:
    """``{N: JCT s}`` for our finished jobs from the text of ``--jobs-out`` (job ``job-N``: the
    trace's N-th row); an unfinished job (empty or ``nan`` JCT) is left out."""
    out: dict[int, float] = {}
    for row in csv.DictReader(io.StringIO(jobs_csv)):
        name = row["name"]
        if not re.fullmatch(r"job-\d+", name):
            raise FidelityError(f"our job {name!r} is not named job-N (a row of the trace)")
        jct = (row.get("jct_s") or "").strip()
        if jct in ("", "nan", "None"):
            continue
        value = float(jct)
        if math.isfinite(value):
            out[int(name[4:])] = value
    return out


def quantile(xs: list[float], q: float) -> float:
    """The ``q``-quantile of ``xs``, interpolated linearly between order statistics."""
    return float(np.quantile(xs, q))


def compare_jcts(ours: dict[int, float], gavel: dict[int, float]) -> dict:
    """The comparison over the jobs both sides finished (JCTs in s, by trace row)."""
    both = sorted(set(ours) & set(gavel))
    if not both:
        raise FidelityError(f"no job finished on both sides (ours {len(ours)}, Gavel "
                            f"{len(gavel)})")
    bad = [k for k in both if not gavel[k] > 0]
    if bad:
        raise FidelityError(f"Gavel's JCT of job {bad[0]} is {gavel[bad[0]]}: no ratio")
    avg_o = statistics.fmean(ours[k] for k in both)
    avg_g = statistics.fmean(gavel[k] for k in both)
    ratios = [ours[k] / gavel[k] for k in both]
    return {
        "jobs_ours_done": len(ours), "jobs_gavel_done": len(gavel), "jobs_both": len(both),
        "avg_jct_gavel_h": avg_g / 3600.0, "avg_jct_ours_h": avg_o / 3600.0,
        "rel_diff": avg_o / avg_g - 1.0,
        "ratio_median": statistics.median(ratios),
        "ratio_p10": quantile(ratios, 0.1), "ratio_p90": quantile(ratios, 0.9),
        "n_slower_20pct": sum(r > SLOWER for r in ratios),
        "n_faster_20pct": sum(r < 1.0 / SLOWER for r in ratios),
    }


def _mean(xs: list[float]) -> float | None:
    return statistics.fmean(xs) if xs else None


def summarize(rows: list[dict]) -> dict[str, dict]:
    """Per policy (in the order the rows name them), over its rows (each with ``kind``,
    ``policy`` and ``compare_jcts``'s keys): the mean |relative difference| over the
    single-GPU traces, the multi-GPU ones and all (``None`` without such a trace), the median
    of the per-trace ratio medians, the totals of slower / faster jobs."""
    out: dict[str, dict] = {}
    for policy in dict.fromkeys(r["policy"] for r in rows):
        mine = [r for r in rows if r["policy"] == policy]
        out[policy] = {
            "traces": len(mine),
            "mean_abs_rel_diff_single": _mean([abs(r["rel_diff"]) for r in mine
                                               if r["kind"] == "single"]),
            "mean_abs_rel_diff_multi": _mean([abs(r["rel_diff"]) for r in mine
                                              if r["kind"] == "multi"]),
            "mean_abs_rel_diff_all": _mean([abs(r["rel_diff"]) for r in mine]),
            "median_of_ratio_medians": statistics.median(r["ratio_median"] for r in mine),
            "n_slower_20pct_total": sum(r["n_slower_20pct"] for r in mine),
            "n_faster_20pct_total": sum(r["n_faster_20pct"] for r in mine),
        }
    return out


def _f(x, fmt: str) -> str:
    return "–" if x is None else format(x, fmt)


ROW_HEADERS = ["trace", "policy", "jobs", "Gavel avg JCT (h)", "ours (h)", "rel. diff",
               "ratio median", "p10", "p90", "# >20% slower", "# >20% faster",
               "our restarts/job"]
SUMMARY_HEADERS = ["policy", "traces", "mean abs. rel. diff: single", "multi", "all",
                   "median of ratio medians", "total # >20% slower", "total # >20% faster"]


def row_cells(rows: list[dict]) -> list[list[str]]:
    """The per trace × policy table (``jobs``: the jobs both sides finished)."""
    return [[r["trace"], r["policy"], str(r["jobs_both"]), _f(r["avg_jct_gavel_h"], ".3f"),
             _f(r["avg_jct_ours_h"], ".3f"), _f(r["rel_diff"], "+.2%"),
             _f(r["ratio_median"], ".3f"), _f(r["ratio_p10"], ".3f"), _f(r["ratio_p90"], ".3f"),
             str(r["n_slower_20pct"]), str(r["n_faster_20pct"]),
             _f(r.get("our_restarts_per_job"), ".2f")] for r in rows]


def summary_cells(summary: dict[str, dict]) -> list[list[str]]:
    return [[p, str(s["traces"]), _f(s["mean_abs_rel_diff_single"], ".2%"),
             _f(s["mean_abs_rel_diff_multi"], ".2%"), _f(s["mean_abs_rel_diff_all"], ".2%"),
             _f(s["median_of_ratio_medians"], ".3f"), str(s["n_slower_20pct_total"]),
             str(s["n_faster_20pct_total"])] for p, s in summary.items()]


def render(headers: list[str], cells: list[list[str]], markdown: bool,
           text_cols=("trace", "policy")) -> str:
    from hsched_env.text import format_table, markdown_table
    if markdown:
        return markdown_table(headers, cells, text_cols=text_cols)
    return format_table(headers, cells)


# -------------------------------------------------------------------------- configuration
@dataclass(frozen=True)
class Config:
    jobs: int = 600
    rate: float = 4.0
    round_s: float = 360.0
    restart_s: float = 0.0
    gavel_policy: str = GAVEL_POLICY


@dataclass(frozen=True)
class TraceSpec:
    """One trace: Gavel's generated jobs of ``seed``, single- or multi-GPU (``kind``)."""
    kind: str
    seed: int

    @property
    def label(self) -> str:
        return f"{self.kind} s{self.seed}"

    def stem(self, cfg: Config) -> str:
        return f"gavel_seed{self.seed}_{self.kind}_{cfg.jobs}_rate{cfg.rate:g}"

    def raw_name(self, cfg: Config) -> str:
        return f"gen_raw_seed{self.seed}_{self.kind}_{cfg.jobs}_rate{cfg.rate:g}.trace"


def _num(x: float) -> str:
    return f"{x:.12g}"


def gen_command(python: str, spec: TraceSpec, cfg: Config, raw: Path) -> list[str]:
    """Gavel's generated-jobs driver writing the trace ``raw`` (run from ``scheduler/``)."""
    return [python, GAVEL_GEN_DRIVER, "-c", GAVEL_CLUSTER, "-p", GAVEL_GEN_POLICY,
            "-l", _num(3600.0 / cfg.rate), "--seed", str(spec.seed), "-s", "0",
            "-e", str(cfg.jobs), "-i", str(int(cfg.round_s)),
            *(["-m"] if spec.kind == "multi" else []), "--output_trace_file_name", str(raw)]


def gavel_command(python: str, trace: Path, cfg: Config) -> list[str]:
    """Gavel's trace driver replaying ``trace`` (run from ``scheduler/``)."""
    return [python, GAVEL_TRACE_DRIVER, "-t", str(trace), "-p", cfg.gavel_policy,
            "-c", GAVEL_CLUSTER, "--seed", str(GAVEL_SEED),
            "--time_per_iteration", str(int(cfg.round_s))]


def our_command(trace: Path, policy: str, cfg: Config, jobs_csv: Path) -> list[str]:
    return [sys.executable, "-m", "hsched_cli", "simulate", "--cluster", OUR_CLUSTER,
            "--throughputs", "gavel", "--workload", f"gavel-trace:path={trace}",
            "--policy", policy, "--round-s", _num(cfg.round_s),
            "--restart-s", _num(cfg.restart_s), "--json", "--no-progress",
            "--jobs-out", str(jobs_csv)]


# ----------------------------------------------------------------------- the subprocesses
def _progress(text: str) -> None:
    print(text, file=sys.stderr, flush=True)


def _run(cmd: list[str], what: str, cwd: Path | None = None, env: dict | None = None,
         stdout=subprocess.PIPE, stderr=subprocess.PIPE, log: Path | None = None):
    """Run ``cmd``; (completed process, wall s); a ``FidelityError`` naming ``what``, the
    command and where it ran if it cannot start or fails."""
    where = f" in {cwd}" if cwd else ""
    t0 = time.perf_counter()
    try:
        proc = subprocess.run(cmd, cwd=cwd, env=env, stdout=stdout, stderr=stderr, text=True)
    except OSError as exc:
        raise FidelityError(f"{what} could not start{where}: {exc}\n  command: "
                            f"{' '.join(cmd)}") from None
    wall = time.perf_counter() - t0
    if proc.returncode != 0:
        tail = (proc.stderr or "")[-TAIL_CHARS:]         # stderr went to a pipe, or to ``log``
        if not tail and log is not None and log.is_file():
            with open(log, "rb") as f:
                f.seek(max(0, log.stat().st_size - TAIL_CHARS))
                tail = f.read().decode("utf-8", "replace")
        tail = tail or (proc.stdout or "")[-TAIL_CHARS:]
        kept = f"\n  its log (kept): {log}" if log is not None else ""
        raise FidelityError(f"{what} failed (exit status {proc.returncode}){where}\n  command: "
                            f"{' '.join(cmd)}{kept}\n{tail}")
    return proc, wall


def ensure_trace(sched_dir: Path, python: str, spec: TraceSpec, cfg: Config,
                 work: Path) -> tuple[Path, str]:
    """The trace of ``spec`` in ``work``: reused when present, else cut from Gavel's raw
    trace (reused, or generated now). (path, how it was had: reused / cut / generated)."""
    trace = work / f"{spec.stem(cfg)}.trace"
    if trace.is_file():
        n = sum(1 for ln in trace.read_text().splitlines() if ln.strip())
        if n != cfg.jobs:
            raise FidelityError(f"{trace} holds {n} jobs, not {cfg.jobs}: remove it (it is "
                                f"regenerated) or use another --work")
        return trace, "reused"
    raw = work / spec.raw_name(cfg)
    how = "cut from the raw trace kept in --work"
    if not raw.is_file():
        _progress(f"  generating it: Gavel's generated-jobs driver, seed {spec.seed}, "
                  f"{spec.kind}-GPU jobs ...")
        tmp = raw.with_suffix(".partial")
        _, wall = _run(gen_command(python, spec, cfg, tmp), "Gavel's generated-jobs driver",
                       cwd=sched_dir)
        if not tmp.is_file():
            raise FidelityError(f"Gavel's generated-jobs driver (in {sched_dir}) wrote no "
                                f"trace to {tmp}")
        tmp.replace(raw)
        how = f"generated in {wall:.1f} s"
    trace.write_text(cut_trace(raw.read_text(), cfg.jobs, str(raw)))
    return trace, how


@dataclass
class GavelRun:
    jcts: dict[int, float]
    average_s: float
    wall_s: float
    command: list[str]


def run_gavel(sched_dir: Path, python: str, trace: Path, cfg: Config, work: Path,
              keep_log: bool) -> GavelRun:
    """Gavel's trace driver on ``trace``; its per-job JCTs, checked against its average."""
    cmd = gavel_command(python, trace, cfg)
    base = work / f"gavel_{trace.stem}_{cfg.gavel_policy}"
    log, out = base.with_suffix(".log"), base.with_suffix(".out")
    with open(log, "w") as err_f:
        proc, wall = _run(cmd, "Gavel's trace driver", cwd=sched_dir, stderr=err_f, log=log)
    out.write_text(proc.stdout)
    with open(log, errors="replace") as f:
        parsed = parse_gavel_log(itertools.chain(f, proc.stdout.splitlines()))
    try:
        jcts = gavel_jcts(parsed, f"Gavel's output ({log} and {out})")
    except FidelityError as exc:
        raise FidelityError(f"{exc}\n  command (in {sched_dir}): {' '.join(cmd)}") from None
    if not keep_log:
        log.unlink()
    return GavelRun(jcts, parsed.average_s, wall, cmd)


def _our_env() -> dict:
    """The environment of our simulations: the checkout of the ``hsched_env`` imported here
    first on ``PYTHONPATH``, so the code measured is the code this script runs with."""
    root = str(Path(hsched_env.__file__).resolve().parents[1])
    path = os.environ.get("PYTHONPATH")
    return dict(os.environ, PYTHONPATH=root + (os.pathsep + path if path else ""))


@dataclass
class OurRun:
    jcts: dict[int, float]
    summary: dict
    wall_s: float
    command: list[str]


def run_ours(trace: Path, policy: str, cfg: Config, work: Path) -> OurRun:
    jobs_csv = work / f"ours_{trace.stem}_{policy.replace(':', '_').replace('/', '_')}.csv"
    cmd = our_command(trace, policy, cfg, jobs_csv)
    proc, wall = _run(cmd, f"our simulation (--policy {policy})", env=_our_env())
    try:
        summary = json.loads(proc.stdout)
    except json.JSONDecodeError as exc:
        raise FidelityError(f"our --json output is not JSON ({exc}):\n"
                            f"{proc.stdout[-TAIL_CHARS:]}") from None
    return OurRun(read_our_jcts(jobs_csv.read_text()), summary, wall, cmd)


#: What is kept of our ``--json`` per run.
OUR_SUMMARY_KEYS = ("jobs_total", "jobs_completed", "avg_jct_s", "restarts_per_job",
                    "rounds", "lp_solves", "workload_skipped", "wall_s")


def compare_trace(trace: Path, gavel: dict[int, float], policies: list[str], cfg: Config,
                  work: Path, spec: TraceSpec | None = None) -> tuple[list[dict], dict]:
    """Our side on ``trace`` for each policy, each compared with Gavel's JCTs ``gavel``:
    (one row per policy, ``{policy: our run's record}``). ``spec``: the trace's kind and
    seed (else ``kind`` is ``None`` and the label the file's stem)."""
    rows, runs = [], {}
    for policy in policies:
        r = run_ours(trace, policy, cfg, work)
        if r.summary.get("workload_skipped"):
            _progress(f"  warning: our reader skipped {r.summary['workload_skipped']} rows of "
                      f"{trace}")
        row = {"trace": spec.label if spec else trace.stem,
               "kind": spec.kind if spec else None, "seed": spec.seed if spec else None,
               "policy": policy, **compare_jcts(r.jcts, gavel),
               "our_restarts_per_job": r.summary.get("restarts_per_job"),
               "our_wall_s": r.wall_s}
        rows.append(row)
        runs[policy] = {"command": r.command, "wall_s": r.wall_s,
                        "summary": {k: r.summary.get(k) for k in OUR_SUMMARY_KEYS},
                        "jcts": {str(k): v for k, v in sorted(r.jcts.items())}}
        _progress(f"  ours {policy:14s} {r.wall_s:6.1f} s wall  avg JCT "
                  f"{row['avg_jct_ours_h']:.3f} h ({row['rel_diff']:+.2%})  ratio median "
                  f"{row['ratio_median']:.3f}  slower/faster {row['n_slower_20pct']}/"
                  f"{row['n_faster_20pct']}  ({row['jobs_both']} jobs)")
    return rows, runs


def _git(path: Path, *args: str) -> str | None:
    """``git -C path ARGS``'s stdout (``None`` without git or outside a repository)."""
    try:
        p = subprocess.run(["git", "-C", str(path), *args], capture_output=True, text=True)
    except OSError:
        return None
    return p.stdout if p.returncode == 0 else None


def code_versions(sched_dir: Path) -> dict:
    """Which code ran: our checkout (commit, and whether tracked files differ from it) and
    Gavel's (commit)."""
    root = Path(hsched_env.__file__).resolve().parents[1]
    status = _git(root, "status", "--porcelain", "--untracked-files=no")

    def commit(path):
        out = _git(path, "rev-parse", "HEAD")
        return out.strip() if out else None
    return {"ours": {"path": str(root), "commit": commit(root),
                     "modified_files": None if status is None else
                     [ln[3:] for ln in status.splitlines() if ln.strip()]},
            "gavel": {"path": str(sched_dir), "commit": commit(sched_dir)}}


# ------------------------------------------------------------------------------- the script
def _policy_list(text: str) -> list[str]:
    """``--policies``: our policy names (``hsched simulate --policy``), comma-separated."""
    from lp_baseline.registry import is_policy_name
    names = list_of(str)(text)
    bad = [n for n in names if not (is_policy_name(n) or ":" in n)]
    if bad:
        raise argparse.ArgumentTypeError(f"not a policy of ours: {', '.join(bad)} (see "
                                         f"`hsched simulate --help`)")
    twice = [n for n in dict.fromkeys(names) if names.count(n) > 1]
    if twice:
        raise argparse.ArgumentTypeError(f"{', '.join(twice)} given more than once")
    return names


def _whole_seconds(text: str) -> float:
    """``--round-s``: Gavel's ``-i`` / ``--time_per_iteration`` take whole seconds."""
    return float(command_line_value(text, decimal_float, "a positive whole number of seconds",
                                    lambda v: math.isfinite(v) and v > 0 and v == int(v)))


def build_parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--gavel", metavar="PATH", required=True,
                    help="Gavel checkout (or its scheduler/ directory)")
    ap.add_argument("--gavel-python", default="python3", metavar="PATH",
                    help="interpreter with Gavel's dependencies (python3)")
    ap.add_argument("--gavel-policy", default=GAVEL_POLICY, metavar="NAME",
                    help=f"Gavel's policy on its side ({GAVEL_POLICY})")
    ap.add_argument("--single-seeds", type=list_of(nonnegative_int, empty_ok=True),
                    default=[0, 2, 3], metavar="S,...",
                    help="seeds of the single-GPU traces (0,2,3; \"\": none)")
    ap.add_argument("--multi-seeds", type=list_of(nonnegative_int, empty_ok=True),
                    default=[1, 4, 5], metavar="S,...",
                    help="seeds of the multi-GPU traces, Gavel's -m (1,4,5; \"\": none)")
    ap.add_argument("--jobs", type=positive_int, default=600, metavar="N",
                    help="jobs per trace: the first N Gavel generates (600)")
    ap.add_argument("--rate", type=positive_number, default=4.0,
                    help="arrival rate, jobs/h (4; Gavel's -l 3600/rate)")
    ap.add_argument("--round-s", type=_whole_seconds, default=360.0,
                    help="round length, whole seconds, both sides (360)")
    ap.add_argument("--restart-s", type=nonnegative_number, default=0.0,
                    help="our restart cost, s (0: Gavel's simulator charges none)")
    ap.add_argument("--policies", type=_policy_list, default=list(DEFAULT_POLICIES),
                    metavar="P,...", help="our policies (" + ",".join(DEFAULT_POLICIES) + ")")
    ap.add_argument("--work", type=Path, metavar="DIR",
                    help="where the traces are kept and reused, with our per-job CSVs and "
                         "Gavel's stdout (default: a new temporary folder, kept)")
    ap.add_argument("--keep-gavel-logs", action="store_true",
                    help="keep Gavel's stderr logs in --work (about 40 MB a trace of 600 jobs)")
    ap.add_argument("--json", type=Path, metavar="FILE",
                    help="write the configuration, commands, per-job JCTs, rows and summary")
    ap.add_argument("--markdown", action="store_true", help="print markdown tables")
    return ap


@one_line_errors
def main(argv: list[str] | None = None) -> int:
    ap = build_parser()
    args = ap.parse_args(argv)
    specs = ([TraceSpec("single", s) for s in dict.fromkeys(args.single_seeds)]
             + [TraceSpec("multi", s) for s in dict.fromkeys(args.multi_seeds)])
    if not specs:
        ap.error("no trace: give --single-seeds and/or --multi-seeds")
    cfg = Config(jobs=args.jobs, rate=args.rate, round_s=args.round_s,
                 restart_s=args.restart_s, gavel_policy=args.gavel_policy)
    try:
        sched_dir = gavel_scheduler_dir(args.gavel)
    except ValueError as exc:
        ap.error(f"--gavel {args.gavel}: {exc}")
    if not (sched_dir / GAVEL_TRACE_DRIVER).is_file():
        ap.error(f"--gavel {args.gavel}: no {GAVEL_TRACE_DRIVER} in {sched_dir}")
    problem = gavel_python_problem(args.gavel_python, sched_dir)
    if problem:
        ap.error(f"--gavel-python {args.gavel_python}: {problem}")
    if args.json is not None:
        problem = output_file_problem(args.json)
        if problem:
            ap.error(f"--json {args.json}: cannot write it: {problem}")
    if args.work is not None:
        problem = output_folder_problem(args.work)
        if problem:
            ap.error(f"--work {args.work}: {problem}")
        work = args.work.expanduser().resolve()
        work.mkdir(parents=True, exist_ok=True)
    else:
        work = Path(tempfile.mkdtemp(prefix="gavel_fidelity_"))
    if "," in str(work):
        ap.error(f"--work {work}: a comma in the path would split our --workload "
                 f"gavel-trace:path=...; use another folder")
    _progress(f"work folder: {work} (traces kept there; --work {work} reuses them)")

    code_at_start = code_versions(sched_dir)
    t0 = time.perf_counter()
    try:
        rows, traces = measure(specs, args.policies, cfg, sched_dir, args.gavel_python, work,
                               args.keep_gavel_logs)
    except FidelityError as exc:
        print(f"gavel_fidelity: error: {exc}", file=sys.stderr)
        return 1
    wall = time.perf_counter() - t0
    summary = summarize(rows)
    report(rows, summary, cfg, args.markdown)
    _progress(f"done in {wall:.0f} s")
    if args.json is not None:
        doc = {
            "config": {"jobs": cfg.jobs, "rate": cfg.rate, "round_s": cfg.round_s,
                       "restart_s": cfg.restart_s, "gavel_policy": cfg.gavel_policy,
                       "gavel_gen_policy": GAVEL_GEN_POLICY, "gavel_seed": GAVEL_SEED,
                       "gavel_cluster": GAVEL_CLUSTER, "our_cluster": OUR_CLUSTER,
                       "policies": args.policies, "single_seeds": args.single_seeds,
                       "multi_seeds": args.multi_seeds, "work": str(work),
                       "gavel_python": args.gavel_python, "slower_ratio": SLOWER},
            # which code ran: at the start and at the end (another edit in between shows)
            "code_at_start": code_at_start,
            "code_at_end": code_versions(sched_dir),
            "wall_s": wall,
            "traces": traces,
            "rows": rows,
            "summary": summary,
        }
        args.json.write_text(json.dumps(doc, indent=1) + "\n")
    return 0


def measure(specs: list[TraceSpec], policies: list[str], cfg: Config, sched_dir: Path,
            python: str, work: Path, keep_logs: bool) -> tuple[list[dict], dict]:
    """Every trace in turn (one subprocess at a time): its rows and its record."""
    rows: list[dict] = []
    traces: dict[str, dict] = {}
    for i, spec in enumerate(specs, 1):
        _progress(f"[{i}/{len(specs)}] {spec.label}")
        trace, how = ensure_trace(sched_dir, python, spec, cfg, work)
        _progress(f"  trace {trace} ({how})")
        g = run_gavel(sched_dir, python, trace, cfg, work, keep_logs)
        _progress(f"  Gavel {cfg.gavel_policy}: {g.wall_s:.1f} s wall, {len(g.jcts)} jobs "
                  f"done, avg JCT {g.average_s / 3600:.3f} h")
        if len(g.jcts) != cfg.jobs:
            _progress(f"  warning: Gavel finished {len(g.jcts)} of the {cfg.jobs} jobs")
        trace_rows, ours = compare_trace(trace, g.jcts, policies, cfg, work, spec)
        rows += trace_rows
        traces[spec.label] = {
            "kind": spec.kind, "seed": spec.seed, "path": str(trace), "trace": how,
            "generate_command": gen_command(python, spec, cfg,
                                            work / spec.raw_name(cfg)),
            "gavel": {"command": g.command, "cwd": str(sched_dir), "wall_s": g.wall_s,
                      "average_s_printed": g.average_s, "jobs_done": len(g.jcts),
                      "jcts": {str(k): v for k, v in g.jcts.items()}},
            "ours": ours,
        }
    return rows, traces


def report(rows: list[dict], summary: dict[str, dict], cfg: Config, markdown: bool) -> None:
    print(render(ROW_HEADERS, row_cells(rows), markdown))
    print()
    print(render(SUMMARY_HEADERS, summary_cells(summary), markdown))
    print(f"\nGavel: {cfg.gavel_policy} on {GAVEL_CLUSTER}; ours: {OUR_CLUSTER}, "
          f"--restart-s {cfg.restart_s:g}; {cfg.round_s:g} s rounds; the first {cfg.jobs} "
          f"jobs of Gavel's generated workload at {cfg.rate:g} jobs/h; statistics over the jobs "
          f"both finished; ratio = ours ÷ Gavel per job, slower: > {SLOWER:g}, faster: "
          f"< 1/{SLOWER:g}; rel. diff = ours' avg JCT ÷ Gavel's − 1")


if __name__ == "__main__":
    sys.exit(main())
