"""Schedule-quality benchmark: many workloads × seeds × policies, compared on common jobs.

Usage:
    python scripts/bench_quality.py                                   # every case, 3 seeds
    python scripts/bench_quality.py --policies heterosched-lp,gavel,fifo --markdown
    python scripts/bench_quality.py --quick                           # smoke run, ~1 min
    python scripts/bench_quality.py --cases philly,pollux --workers 2 --json results.json

Cases (a cluster preset + a workload spec; same spec ⇒ bit-identical jobs in every process):

* ``gavel-classic`` / ``gavel-llm``: Gavel's generator (``gavel:...,mix=classic|llm``) on
  ``gavel-108``, ``sia-64`` and ``modern-512``, seeds 0..N-1 (``--seeds``, default 3; with
  ``--first-seed K``, seeds K..K+N-1: seeds held out from the published table). Chosen so
  that each run is loaded yet a simulation takes about 2-11 s on one core (2-core machine):

  | cluster | classic | llm | throughputs |
  |---|---|---|---|
  | gavel-108 | rate=12,jobs=150 | rate=6,jobs=100,duration_scale=0.25 | gavel (measured table, as in the README) |
  | sia-64 | rate=6,jobs=120 | rate=4,jobs=100 | analytic |
  | modern-512 | rate=100,jobs=150 | rate=100,jobs=150 | analytic |

  Load (seed 0, "demand" = requested GPUs of the jobs in the system): on ``sia-64`` demand
  exceeds the cluster 20-45% of the time, peaking at 2-3×, and FIFO makes jobs wait 10-40 h on
  average before they start; on ``gavel-108`` it peaks at 1.2-2× (FIFO waits 5-13 h).
  ``gavel-108`` ``mix=llm`` at full durations runs LLMs on K80/P100/V100-16GB for up to 2,000
  simulated hours (FIFO: 16,000), 25-80 s per simulation, hence ``duration_scale=0.25``. On
  ``modern-512`` the requested sizes of 150 jobs (arriving within 1.5 h) peak at only 0.8-0.9
  of the 512 GPUs (300 jobs at 200 jobs/h stay below 1.0 too): the requested-size baselines
  never queue there, and the case measures how well a policy puts idle GPUs to work (the
  co-optimizer's jobs do compete for them: 100+ active at once).
* ``philly``: 8-hour windows of the Philly trace on ``sia-64`` (invalid rows skipped and
  counted), 173-200 jobs each, chosen among the windows with 50-200 submissions for their load:
  2017-10-14T02:00 (191 jobs), 2017-10-30T14:00 (194), 2017-11-03T10:00 (200),
  2017-11-08T20:00 (198) and 2017-12-05T07:00 (173 jobs, ~4,700 GPU-h: the heaviest, ~25 s
  per simulation). The 8-hour windows with the most submissions (~2,000 jobs) are far too large.
  The 2017-10-30 window (philly-29295: 32 GPUs) and the Pollux workloads (imagenet jobs of 32 or 48
  replicas) hold jobs larger than any one GPU type of ``sia-64`` (24 GPUs at most): policies
  limited to the requested size on one type (gavel, fifo) can never start them.
* ``pollux``: Pollux's four 160-job workloads (``pollux:path=<traces>/pollux/workloads/
  workload-K.csv``, resolved from the repository, so any working directory works) on ``sia-64``.

``--quick``: 1 seed and at most 40 jobs per case (``jobs=40`` for the generator, ``max_jobs=40``
for the traces).

Comparison. Per case, every metric is computed over the jobs that **every** compared policy
finished ("common/total"), so a policy that leaves the hardest jobs unfinished is not rewarded
with a lower average: avg and p99 JCT, makespan (first arrival to last finish among those jobs),
worst and mean finish-time fairness ρ (per job exactly as ``hsched_env.metrics``:
``finish_time_fairness``) and restarts per job; also ``delivered_over_planned`` when the
policy's metrics report it (the whole run's figure, not restricted to the common jobs). Per
policy also the jobs it did not finish and the jobs it never started.
Ratios: the first policy's avg JCT ÷ each other policy's; a case where a ratio is undefined
(no common job) is left out of that policy's geometric mean, and the summary then says over
how many of the cases it is taken. TARGET CHECK of the first policy (default
``heterosched-lp``) per case: avg JCT ≤ 0.75 × gavel's, ≤ 1.0 × sia's, worst FTF ≤ gavel's, and
every job finished (each only when the policy it needs is compared).

Writes ``--out`` (default ``runs/bench_quality/``): ``results.json`` (settings, per-case
comparison, summary, and per-job records of every run) and ``avg_jct_ratio.png``. Every
simulation is independent and deterministic; they run in ``--workers`` processes.
"""

from __future__ import annotations

import argparse
import concurrent.futures as cf
import contextlib
import inspect
import json
import logging
import math
import multiprocessing as mp
import os
import subprocess
import sys
import time
import warnings
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[1]
sys.path.append(str(Path(__file__).resolve().parent))       # script_args
from script_args import (nonnegative_int, output_file_problem, output_folder_problem,  # noqa: E402
                         positive_int)

DEFAULT_POLICIES = "heterosched-lp,heterosched-lp-las,gavel,sia"
GROUPS = ("gavel-classic", "gavel-llm", "philly", "pollux")
# (classic, llm) generator parameters and the throughput source, per cluster
GAVEL_CASES = {
    "gavel-108": ("rate=12,jobs=150", "rate=6,jobs=100,duration_scale=0.25", "gavel"),
    "sia-64": ("rate=6,jobs=120", "rate=4,jobs=100", None),
    "modern-512": ("rate=100,jobs=150", "rate=100,jobs=150", None),
}
PHILLY_WINDOWS = ("2017-10-14T02:00", "2017-10-30T14:00", "2017-11-03T10:00",
                  "2017-11-08T20:00", "2017-12-05T07:00")
POLLUX_WORKLOADS = (1, 2, 3, 4)
TRACE_CLUSTER = "sia-64"
QUICK_JOBS = 40
# The first policy's targets: avg JCT ≤ factor × that policy's (over common jobs)
JCT_TARGETS = {"gavel": 0.75, "sia": 1.0}
TARGET_KEYS = ("jct_vs_gavel", "jct_vs_sia", "ftf_vs_gavel", "all_done")
TARGET_TEXT = {"jct_vs_gavel": "avg JCT ≤ 0.75×gavel", "jct_vs_sia": "avg JCT ≤ 1.0×sia",
               "ftf_vs_gavel": "worst FTF ≤ gavel", "all_done": "finished every job"}


# ---------------------------------------------------------------------------- cases
@dataclass(frozen=True)
class Case:
    """One cluster + workload; every policy runs it under the same simulation settings."""

    name: str
    group: str
    cluster: str
    workload: str
    throughputs: str | None = None
    skip_invalid: bool = False


def traces_root() -> Path:
    """``$HSCHED_TRACES`` if set, else ``<repo>/../shared/traces`` (as the loaders)."""
    env = os.environ.get("HSCHED_TRACES")
    return Path(env).resolve() if env else (REPO.parent / "shared" / "traces").resolve()


def build_cases(groups=GROUPS, seeds: int = 3, quick: bool = False,
                first_seed: int = 0) -> list[Case]:
    """The benchmark's cases of the named groups, in a stable order: the generator cases with
    seeds ``first_seed .. first_seed + seeds - 1`` (held-out seeds: ``first_seed=3``)."""
    unknown = [g for g in groups if g not in GROUPS]
    if unknown:
        raise ValueError(f"unknown case group(s) {', '.join(unknown)}; valid: {', '.join(GROUPS)}")
    if seeds < 1:
        raise ValueError(f"--seeds must be >= 1, got {seeds}")
    if first_seed < 0:
        raise ValueError(f"--first-seed must be >= 0, got {first_seed}")
    seeds = 1 if quick else seeds
    cases: list[Case] = []
    for group in GROUPS:
        if group not in groups:
            continue
        if group.startswith("gavel-"):
            mix = group.split("-", 1)[1]
            for cluster, (classic, llm, thr) in GAVEL_CASES.items():
                params = classic if mix == "classic" else llm
                if quick:
                    params = ",".join(f"jobs={QUICK_JOBS}" if p.startswith("jobs=") else p
                                      for p in params.split(","))
                for seed in range(first_seed, first_seed + seeds):
                    cases.append(Case(f"{group}/{cluster}/s{seed}", group, cluster,
                                      f"gavel:{params},seed={seed},mix={mix}", thr))
        elif group == "philly":
            for start in PHILLY_WINDOWS:
                spec = f"philly:start={start},hours=8"
                if quick:
                    spec += f",max_jobs={QUICK_JOBS}"
                cases.append(Case(f"philly/{start}", group, TRACE_CLUSTER, spec,
                                  skip_invalid=True))
        elif group == "pollux":
            root = traces_root() / "pollux" / "workloads"
            for k in POLLUX_WORKLOADS:
                spec = f"pollux:path={root / f'workload-{k}.csv'}"
                if quick:
                    spec += f",max_jobs={QUICK_JOBS}"
                cases.append(Case(f"pollux/w{k}", group, TRACE_CLUSTER, spec))
    return cases


# ---------------------------------------------------------------------------- simulations
@contextlib.contextmanager
def _quiet_stdout(fds=(1,)):
    """Send file descriptors ``fds`` to /dev/null meanwhile: HiGHS prints its banner from C
    (the LP solver moves it to stderr, where it would break the progress bar)."""
    sys.stdout.flush()
    sys.stderr.flush()
    try:
        saved = [os.dup(fd) for fd in fds]
    except (OSError, ValueError):           # no real descriptors (captured): nothing to hide
        yield
        return
    devnull = os.open(os.devnull, os.O_WRONLY)
    try:
        for fd in fds:
            os.dup2(devnull, fd)
        yield
    finally:
        sys.stdout.flush()
        sys.stderr.flush()
        for fd, old in zip(fds, saved):
            os.dup2(old, fd)
            os.close(old)
        os.close(devnull)


class _Collect(logging.Handler):
    def __init__(self) -> None:
        super().__init__(logging.WARNING)
        self.messages: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.messages.append(f"{record.name}: {record.getMessage()}")


def _policy_kwargs(objective: str | None) -> dict:
    from lp_baseline.policy import make_policy
    if objective is not None and "objective" in inspect.signature(make_policy).parameters:
        return {"objective": objective}
    return {}


def _option_value(text: str):
    for kind in (int, float):
        try:
            return kind(text)
        except ValueError:
            pass
    return {"true": True, "false": False}.get(text.lower(), text)


def make_named_policy(name: str, objective: str | None = None):
    """``make_policy(name)``, with ``objective=`` when given and accepted. ``NAME/key=value/
    ...`` passes ``make_policy`` keywords (e.g. ``heterosched-lp/objective=fair-las/floor=0``,
    an ablation shown under that whole name)."""
    from lp_baseline.policy import make_policy
    from lp_baseline.registry import options_read_by
    base, *options = name.split("/")
    # (``--objective`` for the policies that read it: the others refuse it)
    kwargs = options_read_by(base, _policy_kwargs(objective))
    for opt in options:
        key, sep, value = opt.partition("=")
        if not sep or not key:
            from hsched_env.errors import ConfigError
            raise ConfigError(f"policy option {opt!r} of {name!r} is not key=value",
                              field="--policies")
        kwargs[key] = _option_value(value)
    return make_policy(base, **kwargs)


def check_objective(objective: str | None) -> None:
    """``--objective``: one of the LP objectives (``lp_baseline.problem.OBJECTIVES``), else an
    ``UnknownNameError`` — before any policy is made, whichever policies are given."""
    from hsched_env.errors import UnknownNameError
    from lp_baseline.problem import OBJECTIVES
    if objective is not None and objective not in OBJECTIVES:
        raise UnknownNameError("objective", objective, list(OBJECTIVES))


def check_objective_read(objective: str | None, policies: list[str]) -> None:
    """A given ``--objective`` that none of ``policies`` reads (``fifo``, ``gavel``: see
    ``lp_baseline.registry.policy_options``; a ``NAME/key=value`` policy by its NAME) is a
    ``ConfigError`` naming the policies that do, as ``hsched simulate`` refuses it — not
    recorded in results.json as if it had been used."""
    if objective is None:
        return
    from hsched_env.errors import ConfigError
    from lp_baseline.registry import POLICY_NAMES, policy_options
    if any("objective" in policy_options(p.split("/", 1)[0]) for p in policies):
        return
    readers = [p for p in POLICY_NAMES
               if "objective" in policy_options(p) and not p.startswith("pop-")]
    if "objective" in policy_options("pop-2"):          # pop-K reads what pop-2 does
        readers += ["pop-K"] + (["pop-K-serial"]
                                if "objective" in policy_options("pop-2-serial") else [])
    raise ConfigError(f"--objective is read by none of the policies given "
                      f"({', '.join(policies)}); it applies to {', '.join(readers)}",
                      field="--objective")


def run_one(case: Case, policy: str, objective: str | None = None) -> dict:
    """Simulate ``case`` under ``policy``: its full metrics, per-job records and warnings."""
    from hsched_env.cluster import get_cluster
    from hsched_env.metrics import finish_time_fairness
    from hsched_env.simulator import SimConfig, Simulator
    from hsched_env.workloads import load_workload

    collect = _Collect()
    root = logging.getLogger()
    root.addHandler(collect)
    t0 = time.perf_counter()
    try:
        # warnings and log records are collected into the result instead of printed
        with _quiet_stdout((1, 2)), warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            cluster = get_cluster(case.cluster)
            workload = load_workload(case.workload, cluster, skip_invalid=case.skip_invalid,
                                     throughputs=case.throughputs)
            pol = make_named_policy(policy, objective)
            result = Simulator(cluster, workload, pol,
                               SimConfig(throughputs=case.throughputs)).run()
            metrics = result.metrics()
    finally:
        root.removeHandler(collect)
    collect.messages += [f"{w.category.__name__}: {w.message}" for w in caught]
    G = float(cluster.num_gpus)
    jobs = []
    for r in result.jobs:
        jobs.append({"job_id": r.job_id, "name": r.name, "model": r.model,
                     "arrival_s": r.arrival_s,
                     "finish_s": r.finish_s if r.done else None,
                     "jct_s": r.jct_s if r.done else None,
                     "rho": finish_time_fairness(r, G) if r.done else None,
                     "requested_gpus": r.requested_gpus, "restarts": r.restarts,
                     "started": not math.isnan(r.first_start_s)})
    return {"case": case.name, "policy": policy, "wall_s": time.perf_counter() - t0,
            "metrics": _jsonable(metrics), "jobs": jobs, "skipped": workload.skipped,
            "notes": list(workload.notes), "warnings": collect.messages}


def _run_task(task: tuple) -> dict:
    return run_one(*task)


def run_all(cases: list[Case], policies: list[str], *, objective: str | None = None,
            workers: int = 2, progress: bool = True) -> dict[str, dict[str, dict]]:
    """Every (case, policy) simulation; ``{case name: {policy: run}}``. ``workers`` ≤ 1 runs
    them in this process."""
    from tqdm import tqdm
    tasks = [(c, p, objective) for c in cases for p in policies]
    runs: dict[str, dict[str, dict]] = {c.name: {} for c in cases}
    bar = tqdm(total=len(tasks), desc="simulations", unit="sim",
               disable=None if progress else True,      # None: no bar into a log file
               file=sys.stderr, dynamic_ncols=True)
    try:
        if workers <= 1:
            for task in tasks:
                bar.set_postfix_str(f"{task[0].name} {task[1]}", refresh=False)
                run = _run_task(task)
                runs[run["case"]][run["policy"]] = run
                bar.update()
        else:
            ctx = mp.get_context("spawn")
            with cf.ProcessPoolExecutor(max_workers=workers, mp_context=ctx) as pool:
                futures = {pool.submit(_run_task, t): t for t in tasks}
                for fut in cf.as_completed(futures):
                    case, policy, _ = futures[fut]
                    try:
                        run = fut.result()
                    except Exception as exc:
                        for f in futures:
                            f.cancel()
                        raise RuntimeError(f"{case.name} under {policy} failed: "
                                           f"{type(exc).__name__}: {exc}") from exc
                    runs[run["case"]][run["policy"]] = run
                    bar.set_postfix_str(f"{case.name} {policy} {run['wall_s']:.0f}s",
                                        refresh=False)
                    bar.update()
    finally:
        bar.close()
    # keep the --policies order inside every case
    return {c: {p: runs[c][p] for p in policies} for c in runs}


# ---------------------------------------------------------------------------- comparison
def _nan_none(x):
    return None if x is None or (isinstance(x, float) and not math.isfinite(x)) else x


def _jsonable(obj):
    if isinstance(obj, dict):
        return {k: _jsonable(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [_jsonable(v) for v in obj]
    if isinstance(obj, (np.floating, float)):
        return _nan_none(float(obj))
    if isinstance(obj, np.integer):
        return int(obj)
    if isinstance(obj, np.ndarray):
        return _jsonable(obj.tolist())
    return obj


def _done(job: dict) -> bool:
    return job.get("finish_s") is not None


def common_jobs(runs: dict[str, dict]) -> list[int]:
    """Ids of the jobs that every run finished (sorted). All runs must hold the same jobs."""
    ids = None
    for policy, run in runs.items():
        these = [j["job_id"] for j in run["jobs"]]
        if ids is None:
            ids, first = sorted(these), policy
        elif sorted(these) != ids:
            raise ValueError(f"runs of one case hold different jobs ({first} vs {policy})")
    from hsched_env.metrics import finished_by_all
    return finished_by_all([j["job_id"] for j in run["jobs"] if _done(j)]
                           for run in runs.values())


def policy_stats(run: dict, common: list[int]) -> dict:
    """One policy's metrics over the ``common`` jobs, and the jobs it left unfinished."""
    by_id = {j["job_id"]: j for j in run["jobs"]}
    sel = [by_id[i] for i in common]
    jct = np.array([j["jct_s"] for j in sel], dtype=float)
    rho = np.array([j["rho"] for j in sel], dtype=float)
    nan = math.nan
    unfinished = [j for j in run["jobs"] if not _done(j)]
    never = [j for j in unfinished if not j["started"]]
    return {
        "avg_jct_s": float(jct.mean()) if jct.size else nan,
        "p99_jct_s": float(np.percentile(jct, 99)) if jct.size else nan,
        "makespan_s": (max(j["finish_s"] for j in sel) - min(j["arrival_s"] for j in sel)
                       if sel else nan),
        "ftf_worst": float(rho.max()) if rho.size else nan,
        "ftf_mean": float(rho.mean()) if rho.size else nan,
        "restarts_per_job": float(np.mean([j["restarts"] for j in sel])) if sel else nan,
        "delivered_over_planned": run.get("metrics", {}).get("delivered_over_planned"),
        "unfinished": len(unfinished),
        "unfinished_jobs": [[j["job_id"], j["name"]] for j in unfinished],
        "never_started": len(never),
        "never_started_jobs": [[j["job_id"], j["name"]] for j in never],
        "jobs_completed": len(run["jobs"]) - len(unfinished),
        "wall_s": run.get("wall_s", nan),
    }


def compare_case(runs: dict[str, dict], first: str | None = None) -> dict:
    """The comparison of one case's runs (``{policy: run}``): common jobs, per-policy stats,
    ``first``'s avg JCT ÷ every other policy's, and ``first``'s target checks."""
    first = first or next(iter(runs))
    common = common_jobs(runs)
    total = len(next(iter(runs.values()))["jobs"])
    stats = {p: policy_stats(run, common) for p, run in runs.items()}
    mine = stats[first]
    ratios = {}
    for p, st in stats.items():
        if p != first:
            ok = st["avg_jct_s"] > 0 and math.isfinite(st["avg_jct_s"])
            ratios[p] = mine["avg_jct_s"] / st["avg_jct_s"] if ok else math.nan
    targets: dict[str, bool | None] = {k: None for k in TARGET_KEYS}
    for p, factor in JCT_TARGETS.items():
        if p in ratios and math.isfinite(ratios[p]):
            targets[f"jct_vs_{p}"] = bool(ratios[p] <= factor)
    if "gavel" in stats and first != "gavel":
        a, b = mine["ftf_worst"], stats["gavel"]["ftf_worst"]
        if math.isfinite(a) and math.isfinite(b):
            targets["ftf_vs_gavel"] = bool(a <= b)
    targets["all_done"] = mine["unfinished"] == 0
    return {"first": first, "jobs_total": total, "common": len(common), "common_ids": common,
            "policies": stats, "ratios": ratios, "targets": targets}


def _usable_ratio(x) -> bool:
    """Whether a case's ratio enters a geometric mean (finite and > 0: not the NaN of a case
    with no common job)."""
    return x is not None and math.isfinite(x) and x > 0


def geomean(values) -> float:
    """The geometric mean of the usable values (``_usable_ratio``; the others are left out:
    ``summarize``'s ``geomean_cases`` counts the ones taken); NaN if none."""
    v = [x for x in values if _usable_ratio(x)]
    return float(math.exp(sum(map(math.log, v)) / len(v))) if v else math.nan


def _geo_text(blk: dict, p: str, fmt: str = ".2f", long: bool = False) -> str:
    """A block's geometric-mean ratio against ``p``, with how many of its cases it covers
    when a case was left out (its ratio undefined): ``0.67 (2 of 3)``."""
    text = _f(blk["geomean_ratio"].get(p), fmt)
    k, n = blk.get("geomean_cases", {}).get(p), blk["cases"]
    if k is None or k == n:
        return text
    return f"{text} (over {k} of {n} cases)" if long else f"{text} ({k} of {n})"


def summarize(comparisons: dict[str, dict], groups: dict[str, str] | None = None) -> dict:
    """Target pass counts and geometric-mean ratios over cases (and per group when
    ``groups`` maps case name → group)."""
    def block(names):
        out = {"cases": len(names), "targets": {}, "geomean_ratio": {}, "geomean_cases": {}}
        for k in TARGET_KEYS:
            vals = [comparisons[n]["targets"][k] for n in names]
            vals = [v for v in vals if v is not None]
            out["targets"][k] = {"passed": sum(vals), "evaluated": len(vals)}
        others = []
        for n in names:
            others += [p for p in comparisons[n]["ratios"] if p not in others]
        for p in others:
            ratios = [comparisons[n]["ratios"].get(p) for n in names]
            out["geomean_ratio"][p] = geomean(ratios)
            # the cases the geometric mean is taken over (an undefined ratio is left out)
            out["geomean_cases"][p] = sum(_usable_ratio(r) for r in ratios)
        return out

    names = list(comparisons)
    out = block(names)
    out["first"] = comparisons[names[0]]["first"] if names else None
    if groups:
        order = []
        for n in names:
            if groups[n] not in order:
                order.append(groups[n])
        out["groups"] = {g: block([n for n in names if groups[n] == g]) for g in order}
    return out


# ---------------------------------------------------------------------------- output
def _h(x) -> str:
    return "–" if x is None or not math.isfinite(x) else f"{x / 3600:.2f}"


def _f(x, fmt=".2f") -> str:
    return "–" if x is None or not math.isfinite(x) else format(x, fmt)


def _mark(v) -> str:
    return "n/a" if v is None else ("PASS" if v else "fail")


def _ids(jobs: list, limit: int = 8) -> str:
    names = [str(name) for _, name in jobs]
    more = f" … (+{len(names) - limit})" if len(names) > limit else ""
    return ", ".join(names[:limit]) + more


def _targets_in_play(summary: dict) -> list[str]:
    """The target checks evaluated in at least one case (e.g. none against sia without it)."""
    return [k for k in TARGET_KEYS if summary["targets"][k]["evaluated"]]


def tables(comparisons: dict[str, dict], summary: dict, markdown: bool = False) -> str:
    """The per-case table, the target table and the summary, as text or Markdown."""
    from hsched_env.text import format_table, markdown_table
    first = summary["first"]
    heads = ["case", "common/total", "policy", "avg JCT h", f"{first} ÷", "p99 JCT h",
             "makespan h", "FTF worst", "FTF mean", "restarts/job", "deliv/plan", "unfinished",
             "never started", "wall s"]
    rows = []
    for name, cmp_ in comparisons.items():
        for i, (p, st) in enumerate(cmp_["policies"].items()):
            ratio = cmp_["ratios"].get(p)
            rows.append([name if i == 0 else "", f"{cmp_['common']}/{cmp_['jobs_total']}"
                         if i == 0 else "", p, _h(st["avg_jct_s"]),
                         "1" if p == first else _f(ratio), _h(st["p99_jct_s"]),
                         _f(st["makespan_s"] / 3600, ".1f"), _f(st["ftf_worst"]),
                         _f(st["ftf_mean"]), _f(st["restarts_per_job"]),
                         _f(st["delivered_over_planned"], ".3f")
                         if st["delivered_over_planned"] is not None else "–",
                         str(st["unfinished"]), str(st["never_started"]),
                         _f(st["wall_s"], ".1f")])
    keys = _targets_in_play(summary)
    vs = [p for p in JCT_TARGETS if any(p in c["ratios"] for c in comparisons.values())]
    theads = ["case"] + [f"÷ {p}" for p in vs] + [TARGET_TEXT[k] for k in keys]
    trows = []
    for name, cmp_ in comparisons.items():
        trows.append([name] + [_f(cmp_["ratios"].get(p)) for p in vs]
                     + [_mark(cmp_["targets"][k]) for k in keys])
    ghead = ["group", "cases"] + [f"geomean ÷ {p}" for p in summary["geomean_ratio"]] + \
        [TARGET_TEXT[k] for k in keys]
    grows = []
    blocks = list(summary.get("groups", {}).items()) + [("all", summary)]
    partial = any(k != blk["cases"] for _, blk in blocks
                  for k in blk.get("geomean_cases", {}).values())
    for g, blk in blocks:
        grows.append([g, str(blk["cases"])]
                     + [_geo_text(blk, p) for p in summary["geomean_ratio"]]
                     + [f"{blk['targets'][k]['passed']}/{blk['targets'][k]['evaluated']}"
                        for k in keys])
    text_cols = {"case", "policy", "group"}

    def render(h, r):
        if not markdown:
            return format_table(h, r)
        return markdown_table(h, r, text_cols)

    out = [f"Per case, over the jobs every policy finished (common/total); JCT and makespan "
           f"in hours; '{first} ÷' = {first}'s avg JCT ÷ the policy's; unfinished and never "
           f"started count all jobs.", "",
           render(heads, rows), "", f"Targets of {first} per case:", "", render(theads, trows),
           "", "By group (geometric-mean ratios of avg JCT"
           + ("; '(k of n)': over the k of its n cases where the ratio is defined"
              if partial else "") + "; targets passed/evaluated):", "",
           render(ghead, grows), "", summary_line(summary)]
    odd = oddities(comparisons)
    if odd:
        out += ["", "Unfinished jobs, warnings, skipped rows:", ""] + \
            [("- " if markdown else "  ") + line for line in odd]
    return "\n".join(out)


def summary_line(summary: dict) -> str:
    t = summary["targets"]
    parts = [f"{TARGET_TEXT[k]} {t[k]['passed']}/{t[k]['evaluated']}" for k in TARGET_KEYS
             if t[k]["evaluated"]]
    # the target policies not run (the first policy, the one under test, is not "missing")
    missing = [p for p in JCT_TARGETS
               if p != summary["first"] and p not in summary["geomean_ratio"]]
    geo = ", ".join(f"÷{p} {_geo_text(summary, p, '.3f', long=True)}"
                    for p in summary["geomean_ratio"])
    return (f"TARGETS ({summary['first']}, {summary['cases']} cases): " + "; ".join(parts)
            + (f" (not compared: {', '.join(missing)})" if missing else "")
            + f". Geometric-mean avg-JCT ratio: {geo}.")


def oddities(comparisons: dict[str, dict]) -> list[str]:
    """Per case: the policies that left jobs unfinished (policies with the same jobs on one
    line), their distinct warnings, and skipped trace rows."""
    lines = []
    for name, cmp_ in comparisons.items():
        same: dict[tuple, list[str]] = {}
        for p, st in cmp_["policies"].items():
            if st["unfinished"]:
                key = (tuple(map(tuple, st["unfinished_jobs"])),
                       tuple(map(tuple, st["never_started_jobs"])))
                same.setdefault(key, []).append(p)
        for (unf, never), ps in same.items():
            how = ("all never started" if len(never) == len(unf) else
                   f"{len(never)} never started" + (f": {_ids(never)}" if never else ""))
            lines.append(f"{name} {', '.join(ps)}: {len(unf)} unfinished ({how}): {_ids(unf)}")
        for p, warns in cmp_.get("warnings", {}).items():
            for w in dict.fromkeys(warns):
                lines.append(f"{name} {p}: {w}")
        if cmp_.get("skipped"):
            lines.append(f"{name}: {cmp_['skipped']} invalid trace rows skipped")
    return lines


def plot(comparisons: dict[str, dict], path: Path, first: str) -> None:
    """``first``'s avg JCT ÷ each other policy's per case (log y), lines at 0.75 and 1."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.ticker import FuncFormatter, LogLocator
    names = list(comparisons)
    others = []
    for n in names:
        others += [p for p in comparisons[n]["ratios"] if p not in others]
    fig, ax = plt.subplots(figsize=(max(8.0, 0.36 * len(names) + 3.0), 5.0))
    x = np.arange(len(names))
    markers = "o^sDvP*X"
    spread = 0.36 / max(len(others) - 1, 1) if len(others) > 1 else 0.0
    ys = []
    for k, p in enumerate(others):
        y = np.array([comparisons[n]["ratios"].get(p, math.nan) for n in names], dtype=float)
        y = np.where(np.isfinite(y) & (y > 0), y, np.nan)
        ys.append(y)
        ax.scatter(x + (k - (len(others) - 1) / 2) * spread, y, marker=markers[k % len(markers)],
                   s=38, label=f"{first} ÷ {p}", zorder=3)
    ax.axhline(1.0, color="0.25", lw=1.1, ls="-", zorder=1, label="1.0: target vs sia")
    ax.axhline(0.75, color="tab:red", lw=1.1, ls="--", zorder=1, label="0.75: target vs gavel")
    ax.set_yscale("log")
    finite = np.concatenate(ys)[np.isfinite(np.concatenate(ys))] if ys else np.array([])
    lo = min(0.5, float(finite.min()) / 1.3) if finite.size else 0.5
    hi = max(1.5, float(finite.max()) * 1.3) if finite.size else 1.5
    ax.set_ylim(lo, hi * 1.6)                    # headroom for the group labels
    ax.yaxis.set_major_locator(LogLocator(base=10, subs=(1.0, 2.0, 5.0)))
    ax.yaxis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:g}"))
    ax.yaxis.set_minor_formatter(FuncFormatter(lambda v, _: ""))
    groups = [n.split("/", 1)[0] for n in names]
    ax.set_xticks(x)
    ax.set_xticklabels([n.split("/", 1)[1] if "/" in n else n for n in names], rotation=60,
                       ha="right", fontsize=8)
    ax.set_xlim(-0.6, len(names) - 0.4)
    starts = [i for i in range(len(names)) if i == 0 or groups[i] != groups[i - 1]]
    for a, b in zip(starts, starts[1:] + [len(names)]):
        if a:
            ax.axvline(a - 0.5, color="0.75", lw=0.8, zorder=0)
        ax.text((a + b - 1) / 2, 0.985, groups[a], transform=ax.get_xaxis_transform(),
                ha="center", va="top", fontsize=9, fontweight="bold", color="0.3")
    ax.set_ylabel(f"avg JCT of {first} ÷ policy's\n(common jobs; below 1: {first} faster)")
    ax.set_title(f"Schedule quality per case: {first}'s average JCT relative to each policy")
    ax.grid(axis="y", which="major", color="0.9", zorder=0)
    ax.legend(loc="best", fontsize=8, framealpha=0.9)
    fig.tight_layout()
    fig.savefig(path, dpi=130)
    plt.close(fig)


def _git_state() -> dict:
    try:
        head = subprocess.run(["git", "rev-parse", "HEAD"], cwd=REPO, capture_output=True,
                              text=True, timeout=10).stdout.strip()
        dirty = subprocess.run(["git", "status", "--porcelain"], cwd=REPO, capture_output=True,
                               text=True, timeout=10).stdout.split("\n")
        return {"commit": head, "modified": [d[3:] for d in dirty if d.strip()]}
    except (OSError, subprocess.SubprocessError):
        return {}


def build_results(cases: list[Case], runs: dict[str, dict[str, dict]], policies: list[str],
                  settings: dict) -> dict:
    """The comparison and summary of finished runs, with every run's per-job records."""
    comparisons = {}
    for c in cases:
        cmp_ = compare_case(runs[c.name], policies[0])
        cmp_["warnings"] = {p: r["warnings"] for p, r in runs[c.name].items() if r["warnings"]}
        cmp_["skipped"] = max(r["skipped"] for r in runs[c.name].values())
        comparisons[c.name] = cmp_
    summary = summarize(comparisons, {c.name: c.group for c in cases})
    return {"settings": settings, "cases": [asdict(c) for c in cases],
            "comparison": comparisons, "summary": summary,
            "runs": [runs[c.name][p] for c in cases for p in policies]}


# ---------------------------------------------------------------------------- main
def _split(text: str) -> list[str]:
    """A comma-separated list; an empty entry (a stray comma) is an error, not skipped."""
    parts = [t.strip() for t in text.split(",")]
    if not all(parts):
        raise argparse.ArgumentTypeError(f"an empty entry in {text!r} (a stray comma?)")
    return parts


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--cases", type=_split, default=",".join(GROUPS),
                    help=f"comma-separated case groups ({', '.join(GROUPS)}; default all)")
    ap.add_argument("--seeds", type=positive_int, default=3,
                    help="how many seeds of the generator cases (default 3: seeds 0..2)")
    ap.add_argument("--first-seed", type=nonnegative_int, default=0, metavar="K",
                    help="the generator cases' first seed (default 0); e.g. --first-seed 3 "
                         "for seeds held out from the published table")
    ap.add_argument("--policies", default=DEFAULT_POLICIES,
                    help=f"comma-separated; the first is checked against the targets "
                         f"(default {DEFAULT_POLICIES})")
    ap.add_argument("--objective", default=None,
                    help="LP objective handed to make_policy (default: its own)")
    ap.add_argument("--workers", type=positive_int, default=2, help="simulation processes (default 2)")
    ap.add_argument("--quick", action="store_true",
                    help=f"smoke run: 1 seed, at most {QUICK_JOBS} jobs per case")
    ap.add_argument("--out", default=str(REPO / "runs" / "bench_quality"),
                    help="output folder: results.json, avg_jct_ratio.png "
                         "(default <repo>/runs/bench_quality)")
    ap.add_argument("--json", metavar="PATH", default=None,
                    help="also write the results JSON here ('-': stdout, tables to stderr)")
    ap.add_argument("--markdown", action="store_true", help="print BENCHMARKS.md-ready tables")
    ap.add_argument("--no-progress", action="store_true", help="no progress bar")
    args = ap.parse_args(argv)

    from hsched_env.errors import ConfigError, HSchedError
    from lp_baseline.registry import split_policy_list
    try:                                  # an empty entry ("fifo,") is refused, not skipped
        policies = split_policy_list(args.policies)
    except ConfigError as exc:
        ap.error(f"--policies: {exc.reason}")
    if len(set(policies)) != len(policies):
        ap.error("--policies: give distinct policy names")
    try:
        cases = build_cases(args.cases, args.seeds, args.quick, args.first_seed)
    except ValueError as exc:
        ap.error(str(exc))
    if not cases:
        ap.error("no case selected")
    # what is written at the end, checked before the simulations (nothing is created here)
    problem = output_folder_problem(args.out)
    if not problem and Path(args.out, "results.json").is_dir():
        problem = f"{Path(args.out, 'results.json')} is a folder"
    if problem:
        ap.error(f"--out {args.out}: cannot write the results there: {problem}")
    if args.json and args.json != "-":
        problem = output_file_problem(args.json)
        if problem:
            ap.error(f"--json {args.json}: cannot write it: {problem}")
    try:                                  # unknown policy / objective: fail before simulating
        check_objective(args.objective)
        with _quiet_stdout():
            for p in policies:
                make_named_policy(p, args.objective)
        check_objective_read(args.objective, policies)
    except (HSchedError, TypeError) as exc:    # TypeError: an unknown NAME/key=value key
        print(f"{Path(__file__).name}: error: {exc}", file=sys.stderr)
        return 2

    from agents.provenance import environment_record
    settings = {"policies": policies, "objective": args.objective,
                "case_groups": args.cases, "seeds": 1 if args.quick else args.seeds,
                "first_seed": args.first_seed,
                "quick": args.quick, "workers": args.workers, "git": _git_state(),
                "python": sys.version.split()[0], "environment": environment_record(),
                "started": time.strftime("%Y-%m-%d %H:%M:%S")}
    t0 = time.perf_counter()
    runs = run_all(cases, policies, objective=args.objective, workers=args.workers,
                   progress=not args.no_progress)
    wall = time.perf_counter() - t0
    settings["wall_s"] = wall
    settings["cpu_s"] = sum(r["wall_s"] for c in runs.values() for r in c.values())
    results = build_results(cases, runs, policies, settings)

    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    text = json.dumps(_jsonable(results), indent=1)
    (out / "results.json").write_text(text + "\n", encoding="utf-8")
    plot(results["comparison"], out / "avg_jct_ratio.png", policies[0])
    to_stdout = args.json == "-"
    if args.json and not to_stdout:
        Path(args.json).write_text(text + "\n", encoding="utf-8")

    report = sys.stderr if to_stdout else sys.stdout
    slow = sorted(results["runs"], key=lambda r: -r["wall_s"])[:5]
    header = (f"{len(cases)} cases × {len(policies)} policies = {len(results['runs'])} "
              f"simulations in {wall:.0f} s wall ({settings['cpu_s']:.0f} s of simulation, "
              f"{args.workers} workers); slowest: "
              + ", ".join(f"{r['case']} {r['policy']} {r['wall_s']:.0f}s" for r in slow))
    print(header, file=report)
    if args.markdown:
        print("\n" + "\n".join(f"- `{c.name}`: `{c.cluster}`, `{_short_spec(c)}`"
                               + (f", throughputs {c.throughputs}" if c.throughputs else "")
                               for c in cases), file=report)
    print("\n" + tables(results["comparison"], results["summary"], markdown=args.markdown),
          file=report)
    print(f"\nwrote {out / 'results.json'} and {out / 'avg_jct_ratio.png'}"
          + (f" and {args.json}" if args.json and not to_stdout else ""), file=report)
    if to_stdout:
        print(text)
    return 0


def _short_spec(case: Case) -> str:
    """The spec with a trace path shown relative to the traces folder."""
    root = str(traces_root())
    return case.workload.replace(root + os.sep, "<traces>/")


if __name__ == "__main__":
    sys.exit(main())
