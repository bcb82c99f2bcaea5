"""``hsched simulate`` and ``hsched compare``: workloads through the simulator under policies."""

from __future__ import annotations

import argparse
import contextlib
import csv
import dataclasses
import json
import math
import os
import sys
import traceback
from pathlib import Path
from types import SimpleNamespace

from hsched_env.cluster import get_cluster
from hsched_env.errors import ConfigError, decimal_int, show
from hsched_env.files import usable_path, user_path
from hsched_env.metrics import finish_time_fairness, finished_by_all
from hsched_env.planner import PlannerConfig
from hsched_env.simulator import SimConfig, Simulator
from hsched_env.text import format_table
from hsched_env.throughput import get_throughput_source
from hsched_env.workloads import load_workload
from hsched_cli.interrupts import exit_status
from hsched_cli.learning import interrupted_note, sweep_note
from hsched_cli.outdirs import (check_no_earlier_results, check_ray_only_flags,
                                check_resume_overwrite, check_runs_folder, make_output_dir,
                                removed_if_failed_empty)
from hsched_cli.world import check_throughputs
from lp_baseline.registry import (POLICY_NAMES, make_policy, options_read_by, policy_options,
                                   split_policy_list)
from lp_baseline.warm_up import warm_up_process


def _check_simulation_args(args, policies: list[str]) -> dict:
    """Reject bad values before any simulation runs (each names its flag). Returns the
    user's own policies (``module:callable`` entries) by name, built here once: each runs
    the object built for it (a factory is called once per run, as the docs say)."""
    check_throughputs(args.throughputs)
    get_throughput_source(args.throughputs)
    if args.floor is not None and not 0.0 <= args.floor <= 1.0:
        raise ConfigError(f"must be a fraction in [0, 1], got {args.floor}", field="--floor")
    if isinstance(args.ftf_guard, float) and not (0 < args.ftf_guard < math.inf):
        raise ConfigError(f"must be a finite finish-time fairness > 0 or 'off', got "
                          f"{args.ftf_guard:g}", field="--ftf-guard")
    if args.lp_time_limit_s is not None and not (args.lp_time_limit_s > 0
                                                 and math.isfinite(args.lp_time_limit_s)):
        raise ConfigError(f"must be a positive number of seconds, got {args.lp_time_limit_s}",
                          field="--lp-time-limit-s")
    flag_of = {option: _flag_given(args, flag) for flag, option, _ in _POLICY_FLAGS}
    own = {}
    for name in policies:
        try:
            policy = _make_policy(name, args)    # the policy each run makes, built once now
        except ConfigError as exc:                # named by the flag that set it
            if exc.field not in flag_of:
                raise
            raise ConfigError(f"{name}: {exc.reason}", field=flag_of[exc.field]) from None
        if _is_entry_point(name):
            own[name] = policy
    _check_options_read(args, policies)
    _check_labels(policies, own)
    if args.max_time_s is not None and not (args.max_time_s > 0
                                            and math.isfinite(args.max_time_s)):
        raise ConfigError(f"must be a positive number of seconds, got {args.max_time_s}",
                          field="--max-time-s")
    if args.seed < 0:
        raise ConfigError(f"must be >= 0, got {args.seed}", field="--seed")
    jobs_out = getattr(args, "jobs_out", None)
    if jobs_out:
        _check_writable(Path(jobs_out), "--jobs-out")
    return own


def _check_labels(policies: list[str], own: dict) -> None:
    """No two policies of a run list would share a label in the results (a user's own
    policy is labelled by its ``name``, else its class's name)."""
    labels = [str(getattr(own[n], "name", type(own[n]).__name__)) if n in own else n
              for n in policies]
    twice = sorted({label for label in labels if labels.count(label) > 1})
    if twice:
        which = [n for n, label in zip(policies, labels) if label in twice]
        raise ConfigError(f"{', '.join(which)} would all be labelled "
                          f"{', '.join(map(repr, twice))} in the results (a module:callable "
                          f"policy is labelled by its name attribute, else its class): give "
                          f"them distinct names", field="--policies")


def _check_not_an_input(out: Path, args, workload, flag: str) -> None:
    """That ``out`` is none of the files the run reads — the workload's trace (its ``path=``
    or its kind's default under the traces folder), a cluster file, a throughput table —
    which writing it would overwrite."""
    if not out.is_file():
        return
    inputs = (("--workload", workload.source_file), ("--cluster", args.cluster),
              ("--throughputs", args.throughputs))
    for name, text in inputs:
        if not isinstance(text, str) or not text:
            continue
        try:
            path = user_path(text)
            same = path.is_file() and os.path.samefile(path, out)
        except (ConfigError, OSError):
            continue                            # not a file path: a preset name, a spec
        if same:
            raise ConfigError(f"{str(out)!r} is the {name} file this run reads: writing the "
                              f"jobs there would overwrite it; give another path", field=flag)


def _check_writable(path: Path, flag: str) -> None:
    """That ``path`` can be written, without creating it (a run that fails later leaves no
    empty file behind): an existing file opened for appending, else a writable folder."""
    if usable_path(path, field=flag, what="the jobs file").exists():
        try:
            with open(path, "a", encoding="utf-8"):
                pass
        except OSError as exc:
            raise ConfigError(f"cannot write {str(path)!r}: {exc.strerror or exc}",
                              field=flag) from None
        return
    folder = path.parent
    if not folder.is_dir():
        raise ConfigError(f"cannot write {str(path)!r}: no folder {str(folder)!r}", field=flag)
    if not os.access(folder, os.W_OK):
        raise ConfigError(f"cannot write {str(path)!r}: the folder {str(folder)!r} is not "
                          f"writable", field=flag)


#: ``--topk``'s default (k of the ``topk`` policy).
TOPK_DEFAULT = 4
#: The LP flags of simulate / compare: the ``make_policy`` option each sets, and whether the
#: command line gave it (argparse's defaults: not given).
_POLICY_FLAGS = (("--objective", "objective", lambda a: a.objective is not None),
                 ("--floor", "floor", lambda a: a.floor is not None),
                 ("--ftf-guard", "ftf_guard", lambda a: getattr(a, "ftf_guard", None) is not None),
                 ("--round-restart", "round_restart", lambda a: getattr(a, "round_restart", False)),
                 ("--topk", "topk", lambda a: a.topk != TOPK_DEFAULT),
                 ("--lp-time-limit-s", "time_limit_s", lambda a: a.lp_time_limit_s is not None),
                 ("--lp-method", "lp_method", lambda a: getattr(a, "lp_method", "auto") != "auto"),
                 ("--lp-warm-start", "warm_start", lambda a: getattr(a, "lp_warm_start", False)),
                 ("--lp-backend", "backend",
                  lambda a: bool(a.lp_backend) or a.backend in ("highs", "pulp")))


def _flag_given(args, flag: str) -> str:
    """``flag`` as the command line spelled it: ``--backend``, the old name of
    ``--lp-backend``, when that is what was given."""
    if flag == "--lp-backend" and not args.lp_backend and args.backend in ("highs", "pulp"):
        return "--backend"
    return flag


def _check_options_read(args, policies: list[str]) -> None:
    """A flag that none of the policies reads (``--objective`` with ``fifo``, ``--topk``
    with ``gavel``) is an error naming the policies that do, not silently ignored."""
    for flag, option, given in _POLICY_FLAGS:
        flag = _flag_given(args, flag)
        if given(args) and not any(_reads(p, option) for p in policies):
            readers = [p for p in POLICY_NAMES
                       if option in policy_options(p) and not p.startswith("pop-")]
            if option in policy_options("pop-2"):          # pop-K reads what pop-2 does
                readers += ["pop-K"] + (["pop-K-serial"]
                                        if option in policy_options("pop-2-serial") else [])
            raise ConfigError(f"{flag} is read by none of the policies given "
                              f"({', '.join(policies)}); it applies to {', '.join(readers)}"
                              + (" (a module:callable policy reads no LP flag)"
                                 if any(map(_is_entry_point, policies)) else ""),
                              field=flag)


def _simulation_args(args):
    cluster = get_cluster(args.cluster)
    workload = load_workload(args.workload, cluster, skip_invalid=args.skip_invalid,
                             throughputs=args.throughputs)
    jobs_out = getattr(args, "jobs_out", None)
    if jobs_out:
        _check_not_an_input(Path(jobs_out), args, workload, "--jobs-out")
    # skipped rows: the loader's warning says how many; the notes (table, JSON) say so too
    measure = _measure(args.measure_jobs) if args.measure_jobs else None
    if measure is not None and measure[1] > len(workload):
        raise ConfigError(f"{measure[0]}:{measure[1]} reaches beyond the {len(workload)} "
                          f"jobs of the workload", field="--measure-jobs")
    try:
        config = SimConfig(round_s=args.round_s, restart_s=args.restart_s,
                           planner=PlannerConfig(max_candidates=args.max_candidates),
                           throughputs=args.throughputs, seed=args.seed,
                           max_time_s=args.max_time_s, measure_jobs=measure,
                           check_invariants=args.check_invariants,
                           skip_steady_rounds=not getattr(args, "no_skip_rounds", False),
                           progress=not args.no_progress and sys.stderr.isatty())
    except ConfigError as exc:                  # named by the flag that set it
        if exc.field not in _SIM_CONFIG_FLAGS:
            raise
        raise ConfigError(exc.reason, field=_SIM_CONFIG_FLAGS[exc.field]) from None
    return cluster, workload, config


#: The flag of each ``SimConfig`` field the command line sets.
_SIM_CONFIG_FLAGS = {"round_s": "--round-s", "restart_s": "--restart-s",
                     "max_time_s": "--max-time-s", "measure_jobs": "--measure-jobs"}


def _measure(text: str) -> tuple[int, int]:
    try:
        a, b = (decimal_int(v) for v in text.split(":"))
    except ValueError:
        raise ConfigError(f"expected A:B (job ids A..B-1), got {show(text)}",
                          field="--measure-jobs") from None
    return a, b


def _lp_options(args, name: str) -> dict:
    """LP knobs given on the command line for policy ``name``: ``--floor``, ``--ftf-guard``
    and ``--round-restart`` (the policies that read them, ``policy_options``), ``--lp-method``
    and ``--lp-warm-start`` (every LP policy)."""
    reads_floor = args.floor is not None and "floor" in policy_options(name)
    options = {"floor": args.floor} if reads_floor else {}
    guard = getattr(args, "ftf_guard", None)
    if guard is not None and "ftf_guard" in policy_options(name):
        options["ftf_guard"] = guard
    if getattr(args, "round_restart", False) and "round_restart" in policy_options(name):
        options["round_restart"] = True
    method = getattr(args, "lp_method", "auto")
    if method != "auto":
        options["lp_method"] = method
    if getattr(args, "lp_warm_start", False):
        options["warm_start"] = True
    return options


def _lp_backend(args) -> str:
    """``--lp-backend``, or its old name ``--backend highs|pulp`` (default ``highs``)."""
    old = args.backend if args.backend in ("highs", "pulp") else None
    if old and args.lp_backend and old != args.lp_backend:
        raise ConfigError(f"--backend {old} (the old name of --lp-backend) and --lp-backend "
                          f"{args.lp_backend} disagree: give one", field="--lp-backend")
    return args.lp_backend or old or "highs"


def _is_entry_point(name: str) -> bool:
    """Whether ``name`` is a ``module:callable`` entry point of the user's own policy (the
    policy names have no colon)."""
    return ":" in name


def _reads(name: str, option: str) -> bool:
    """Whether policy ``name`` reads ``make_policy``'s ``option``: a user's own policy reads
    none of the LP flags."""
    return not _is_entry_point(name) and option in policy_options(name)


def _policy_keywords(name, args) -> dict:
    """The ``make_policy`` keywords the command line gives policy ``name``: the LP flags it
    reads (``_lp_options``, ``--objective``, the backend, ``--topk``, ``--lp-time-limit-s``;
    ``policy_options``)."""
    flags = {"objective": args.objective, "backend": _lp_backend(args), "topk": args.topk,
             "time_limit_s": args.lp_time_limit_s}
    return {**options_read_by(name, flags), **_lp_options(args, name)}


def _make_policy(name, args):
    """Policy ``name`` with the LP flags of the command line it reads (``_policy_keywords``);
    a ``module:callable`` entry point: the user's own policy (``load_simulator_policy``)."""
    if _is_entry_point(name):
        from agents.policy_entries import load_simulator_policy
        simulate = getattr(args, "command", None) == "simulate"
        return load_simulator_policy(name, field="--policy" if simulate else "--policies")
    return make_policy(name, **_policy_keywords(name, args))


def _recorded_options(name, args) -> dict:
    """What a result records of the options policy ``name`` ran with: the keywords the
    command line gave it, those left at ``None`` (the policy's default) out; ``{}`` for a
    user's own policy (it reads none of them)."""
    if not name or _is_entry_point(name):
        return {}
    return {k: v for k, v in _policy_keywords(name, args).items() if v is not None}


def _run_policy(name, cluster, workload, config, args, policy=None):
    """The run of policy ``name`` (``policy``: the object to run, when already built)."""
    policy = _make_policy(name, args) if policy is None else policy
    return Simulator(cluster, workload, policy, config).run()


@contextlib.contextmanager
def _own_output_to_stderr(args, own: bool):
    """With ``--json`` and a user's own policy: what Python code prints meanwhile (the
    policy's module on import, its ``decide``) goes to stderr, so stdout holds the JSON
    alone."""
    if own and getattr(args, "json", False):
        with contextlib.redirect_stdout(sys.stderr):
            yield
    else:
        yield


def _done_jct(jobs, config, cluster_gpus: float) -> dict[int, tuple[float, float]]:
    """``(JCT, finish-time fairness ρ)`` of every finished job of the measured window
    (``config.measure_jobs``, else all), by job id; ``jobs``: ``JobRecord``s or their
    ``asdict`` rows, in workload order; ρ as ``hsched_env.metrics.finish_time_fairness``."""
    if config.measure_jobs is not None:
        a, b = config.measure_jobs
        jobs = jobs[a:b]
    out = {}
    for r in jobs:
        if isinstance(r, dict):                  # a sweep's JSON row: the record's fields
            if r["finish_s"] is None:            # JSON: NaN may be None
                continue
            r = SimpleNamespace(**r, jct_s=r["finish_s"] - r["arrival_s"])
        if not math.isnan(r.finish_s):
            out[int(r.job_id)] = (r.jct_s, finish_time_fairness(r, cluster_gpus))
    return out


def _add_common_jct(all_metrics: list[dict],
                    done: list[dict[int, tuple[float, float]] | None]) -> None:
    """Add to each run's metrics its avg JCT over the *common* jobs (those every run that did
    not fail finished), ``avg_jct_common_s``, its ratio to the first such run's,
    ``avg_jct_common_ratio``, and its worst finish-time fairness over them,
    ``ftf_worst_common``: policies that finish different jobs (a ``--max-time-s`` window, a
    stalled run) are compared on the same ones (a policy that leaves a job waiting has it
    out of its own ``ftf_worst``)."""
    common = finished_by_all(d for d in done if d is not None)
    first = None
    for m, d in zip(all_metrics, done):
        if d is None:
            continue
        avg = sum(d[i][0] for i in common) / len(common) if common else math.nan
        first = avg if first is None else first
        m["common_jobs"] = len(common)
        m["avg_jct_common_s"] = avg
        m["avg_jct_common_ratio"] = avg / first if first else math.nan
        m["ftf_worst_common"] = max(d[i][1] for i in common) if common else math.nan


def _compare_task(name, cluster, workload, config, options) -> dict:
    """One policy run of ``compare --backend ray`` (``agents.sweep``): its metrics and one
    row per job, JSON-ready."""
    result = _run_policy(name, cluster, workload, config, options)
    from agents.sweep import plain_json
    return plain_json({"metrics": result.metrics(),
                       "jobs": [dataclasses.asdict(r) for r in result.jobs]})


#: What a compare run's payload must hold for the table and the common-jobs figures: its
#: metrics (``_metrics_rows``) and each job's fields (``_done_jct``).
_COMPARE_METRICS = ("policy", "jobs_completed", "jobs_total", "avg_jct_s", "p50_jct_s",
                    "p99_jct_s", "makespan_s", "avg_queue_s", "gpu_util", "restarts_per_job",
                    "ftf_worst", "decision_time_mean_s", "decision_time_p99_s",
                    "lp_vars_mean", "wall_s")
_COMPARE_JOB_FIELDS = ("job_id", "arrival_s", "finish_s", "duration_s", "requested_gpus",
                       "contention_sum", "rounds_active")


def _check_compare_payload(payload) -> None:
    """A ``ValueError`` unless ``payload`` is what ``_compare_task`` returns (a run file to
    resume from: ``agents.sweep.Task.check``)."""
    if not (isinstance(payload, dict) and isinstance(payload.get("metrics"), dict)
            and isinstance(payload.get("jobs"), list)
            and all(isinstance(j, dict) for j in payload["jobs"])):
        raise ValueError("not the metrics and jobs of a compare run")
    missing = [k for k in _COMPARE_METRICS if k not in payload["metrics"]] + sorted(
        {k for j in payload["jobs"] for k in _COMPARE_JOB_FIELDS if k not in j})
    if missing:
        raise ValueError(f"it lacks {', '.join(missing)}")


def _metrics_rows(all_metrics: list[dict]) -> str:
    """The compare / simulate table; a failed run (``status`` ``failed``) shows FAILED."""
    ref = next((m for m in all_metrics if m.get("status") != "failed"), None)
    rows = []
    for m in all_metrics:
        if m.get("status") == "failed":
            rows.append([m["policy"], "FAILED"] + ["n/a"] * 13)
            continue
        ratio = m.get("avg_jct_common_ratio",
                      m["avg_jct_s"] / ref["avg_jct_s"] if ref["avg_jct_s"] else float("nan"))
        rows.append([m["policy"], f"{m['jobs_completed']}/{m['jobs_total']}",
                     _hours(m["avg_jct_s"]), _number(ratio, "{:.2f}"),
                     _hours(m["p50_jct_s"]), _hours(m["p99_jct_s"]),
                     # jobs left unfinished (cut off, or stalled): no makespan in the table
                     # (the JSON keeps the time to the last completion, docs/simulator.md)
                     (_hours(m["makespan_s"])
                      if m["jobs_completed"] == m["jobs_total"] else "n/a"),
                     _hours(m["avg_queue_s"]),
                     _number(m["gpu_util"], "{:.0%}"), f"{m['restarts_per_job']:.2f}",
                     _number(m["ftf_worst"], "{:.2f}"), f"{m['decision_time_mean_s'] * 1e3:.1f}",
                     f"{m['decision_time_p99_s'] * 1e3:.1f}", f"{m['lp_vars_mean']:.0f}",
                     f"{m['wall_s']:.1f}"])
    return format_table(["policy", "done", "avg JCT h", "× first", "p50 h", "p99 h",
                         "makespan h", "queue h", "util", "restarts/job", "FTF worst",
                         "decide ms", "p99 ms", "LP vars", "wall s"], rows)


def _metric_notes(all_metrics: list[dict]) -> list[str]:
    """Lines under the table for what its columns leave out: jobs that never started (not in
    ``queue h``, as unfinished jobs are not in ``avg JCT h``) and a stalled run's idle rounds
    (in ``decide ms``)."""
    ran = [m for m in all_metrics if m.get("status") != "failed"]
    notes = []
    waiting = [m for m in ran if m.get("jobs_started", m["jobs_total"]) < m["jobs_total"]]
    if waiting:
        notes.append("queue h: arrival to first start, over the jobs that started; never "
                     "started: " + ", ".join(
                         f"{m['policy']} {m['jobs_total'] - m['jobs_started']} of "
                         f"{m['jobs_total']}" for m in waiting))
    for m in ran:
        if m.get("stall_rounds"):
            notes.append(f"{m['policy']} stalled: nothing ran in its last {m['stall_rounds']} "
                         f"rounds (jobs waiting, no arrivals left); they count in its rounds "
                         f"and decide ms")
    return notes


def _csv_time(seconds: float) -> str:
    """A time in the jobs CSV: blank when there is none (not started, not finished), as
    ``jct_s``."""
    return f"{seconds:.3f}" if math.isfinite(seconds) else ""


def _number(value, fmt: str) -> str:
    """``fmt`` of ``value``, or ``n/a`` where there is none (no job finished: NaN)."""
    return fmt.format(value) if value is not None and math.isfinite(value) else "n/a"


def _hours(seconds) -> str:
    return _number(None if seconds is None else seconds / 3600, "{:.2f}")


def _write_jobs(path: str, result) -> None:
    types = list(result.cluster.gpu_types)
    with open(path, "w", newline="", encoding="utf-8") as fh:
        w = csv.writer(fh)
        w.writerow(["job_id", "name", "model", "arrival_s", "first_start_s", "finish_s",
                    "jct_s", "restarts"] + [f"gpu_s_{t}" for t in types] + ["candidates_used"])
        for r in result.jobs:
            w.writerow([r.job_id, r.name, r.model, f"{r.arrival_s:.3f}",
                        _csv_time(r.first_start_s), _csv_time(r.finish_s),
                        f"{r.jct_s:.3f}" if r.done else "", r.restarts]
                       + [f"{r.gpu_s_by_type[t]:.1f}" for t in types]
                       + [";".join(r.candidates_used)])


def cmd_simulate(args) -> int:
    with _own_output_to_stderr(args, _is_entry_point(args.policy)):
        own = _check_simulation_args(args, [args.policy])
        cluster, workload, config = _simulation_args(args)
        result = _run_policy(args.policy, cluster, workload, config, args,
                             own.get(args.policy))
    metrics = result.metrics()
    # the per-job file first (a closed stdout must not lose it), its failure told after the
    # metrics are printed (a full disk must not lose them)
    write_error = None
    if args.jobs_out:
        try:
            _write_jobs(args.jobs_out, result)
        except OSError as exc:
            write_error = exc.strerror or str(exc)
    if args.json:
        json.dump(_jsonable(_with_scenario(metrics, workload, args, config)), sys.stdout,
                  indent=1)
        print()
    else:
        print(_workload_header(workload, args, cluster, config))
        print(_metrics_rows([metrics]))
        for line in _metric_notes([metrics]):
            print(line)
    if write_error is not None:
        raise ConfigError(f"cannot write the per-job results to {args.jobs_out!r}: "
                          f"{write_error} (the run's metrics were printed)",
                          field="--jobs-out")
    return 0


def _workload_header(workload, args, cluster, config) -> str:
    """The line above a results table, with the workload's notes under it (what a loader
    assumed or changed: durations it derived, GPU counts it raised, rows it skipped)."""
    lines = [f"{len(workload.jobs)} jobs ({args.workload}) on {cluster.name}, "
             f"{config.round_s:.0f} s rounds, restart {config.restart_s:.0f} s"]
    lines += [f"  note: {note}" for note in workload.notes]
    return "\n".join(lines)


def _with_scenario(metrics: dict, workload, args, config) -> dict:
    """``metrics`` with the workload's skipped-row count and notes, the ``scenario`` they
    were measured on (the JSON output: a saved ``metrics.json`` said nothing of its cluster,
    workload or round length) and the ``policy_options`` the policy was made with (until
    session 63 a run with ``--objective`` or ``--round-restart`` read like a default one)."""
    scenario = {"cluster": args.cluster, "workload": args.workload,
                "jobs": len(workload.jobs), "round_s": config.round_s,
                "restart_s": config.restart_s, "max_time_s": config.max_time_s,
                "throughputs": config.throughputs, "job_candidates": args.max_candidates,
                "seed": config.seed}
    return {**metrics, "workload_skipped": workload.skipped,
            "workload_notes": list(workload.notes), "scenario": scenario,
            "policy_options": _recorded_options(metrics.get("policy", ""), args)}


def _check_sweep_args(args) -> None:
    """The flags of ``compare --backend ray`` only with it; ``--resume`` needs ``--out``, and
    not with ``--overwrite``."""
    check_resume_overwrite(args)
    check_ray_only_flags(args, ("--resume", "--overwrite", "--num-cpus", "--address", "--out"))
    if args.resume and args.out is None:
        raise ConfigError("--resume needs --out DIR, the output folder of the sweep to resume "
                          "(its runs/ holds the finished runs)", field="--resume")
    if args.overwrite and args.out is None:
        raise ConfigError("--overwrite needs --out DIR, the output folder whose run files it "
                          "discards (without --out nothing is kept to overwrite)",
                          field="--overwrite")


def _compare_sweep(args, names, cluster, workload, config) -> tuple[list[dict], dict]:
    """``compare --backend ray``: one task per policy (``agents.sweep.run_sweep``); the
    metrics of each (a failed one: ``status``, ``error``, ``attempts``) and the sweep's
    summary."""
    from agents.sweep import (RUNS_DIR, RayBackend, RunStore, Task, file_fingerprint,
                              fingerprint, model_files_record, run_sweep)
    backend = RayBackend(num_cpus=args.num_cpus, address=args.address)
    config = dataclasses.replace(config, progress=False)      # no bars inside the workers
    options = argparse.Namespace(objective=args.objective, backend=None,
                                 lp_backend=_lp_backend(args), topk=args.topk,
                                 floor=args.floor, ftf_guard=args.ftf_guard,
                                 round_restart=args.round_restart,
                                 lp_time_limit_s=args.lp_time_limit_s,
                                 lp_method=args.lp_method,
                                 lp_warm_start=args.lp_warm_start)
    inputs = {"cluster": args.cluster, "cluster_sha256": fingerprint(cluster),
              "workload": args.workload, "jobs_sha256": fingerprint(workload.jobs),
              "skip_invalid": args.skip_invalid, "sim_config": repr(config),
              # (ftf_guard always, None included: the default's guard changed in session
              # 46, so a sweep started before that, whose key lacks it, does not resume)
              # (round_restart only when given: off, a sweep from before it resumes)
              "policy_options": {k: v for k, v in vars(options).items()
                                 if k != "backend" and (k != "round_restart" or v)},
              **model_files_record(workload.jobs)}
    from hsched_env.throughput import ANALYTIC_NAMES
    if (args.throughputs is not None and args.throughputs not in (*ANALYTIC_NAMES, "gavel")
            and Path(args.throughputs).is_file()):    # (a file named gavel is not read)
        # a table file's content decides the schedules (its path alone did: an edited
        # table resumed the old runs); absent for analytic / gavel, as before
        inputs["throughputs_sha256"] = file_fingerprint(args.throughputs)
    tasks = [Task(cluster.name, name, args.seed, inputs, _compare_task,
                  (name, cluster, workload, config, options), check=_check_compare_payload)
             for name in names]
    store = RunStore(Path(args.out) / RUNS_DIR) if args.out is not None else None
    result = run_sweep(tasks, backend, store=store, resume=args.resume,
                       overwrite=args.overwrite, progress=False if args.no_progress else None,
                       desc="compare")
    rows, done = [], []
    for o in result.outcomes:
        if o.ok:
            rows.append(o.payload["metrics"])
            done.append(_done_jct(o.payload["jobs"], config, cluster.num_gpus))
        else:
            rows.append({"policy": o.task.policy, "status": "failed", "error": o.error,
                         "attempts": o.attempts})
            done.append(None)
    _add_common_jct(rows, done)
    sweep = {"backend": "ray", "runs_dir": None if store is None else str(store.folder),
             "tasks": len(tasks), "resumed": result.resumed, "failed": len(result.failed),
             "stale_run_files": result.stale, "other_code_runs": result.other_code,
             "other_environment_runs": result.other_environment}
    return rows, sweep


def cmd_compare(args) -> int:
    """``hsched compare``: every policy of ``--policies`` on one workload. Exit status 1 when
    a run failed (``--backend ray``: after its retry; serial: at once, the other policies
    still run)."""
    names = split_policy_list(args.policies)
    twice = sorted({n for n in names if names.count(n) > 1})
    if twice:
        raise ConfigError(f"names {', '.join(twice)} more than once: each policy runs once "
                          f"(the same policy on the same workload and seed makes the same "
                          f"schedule)",
                          field="--policies")
    entry_points = [n for n in names if _is_entry_point(n)]
    if entry_points and (args.backend == "ray" or args.out is not None):
        raise ConfigError(f"{', '.join(entry_points)}: a module:callable policy runs in this "
                          f"process only (a Ray worker may not import your module), so the "
                          f"comparison runs serially, which keeps no run files: drop "
                          f"--backend ray and --out, and keep the results with --json > FILE",
                          field="--policies")
    _check_sweep_args(args)
    check_no_earlier_results(args.out, overwrite=args.overwrite, resume=args.resume,
                             command="compare")
    check_runs_folder(args.out)             # (--out: --backend ray only) a file named runs
    with _own_output_to_stderr(args, bool(entry_points)):
        own = _check_simulation_args(args, names)
    cluster, workload, config = _simulation_args(args)
    # an unwritable --out fails before the runs; a Ray that cannot start (or --address with
    # no cluster) leaves no empty --out behind
    created = [] if args.out is None else make_output_dir(Path(args.out))
    sweep = None
    if args.backend == "ray":
        try:
            with removed_if_failed_empty(created):
                results, sweep = _compare_sweep(args, names, cluster, workload, config)
        except KeyboardInterrupt as exc:
            if args.out is None:
                raise
            print(interrupted_note(Path(args.out) / "runs", exc, args), file=sys.stderr)
            return exit_status(exc)
    else:
        results, done = _compare_serially(args, names, cluster, workload, config, own)
        _add_common_jct(results, done)
    data = [_jsonable(_with_scenario(m, workload, args, config)) for m in results]
    if args.out is not None:
        path = Path(args.out) / "metrics.json"
        path.write_text(json.dumps(data, indent=1), encoding="utf-8")
        # where the sweep was driven from (metrics.json is a list, one entry per policy, so
        # the record is a file of its own; each run file holds its worker's)
        from agents.provenance import environment_record
        (Path(args.out) / "environment.json").write_text(
            json.dumps(environment_record(), indent=1), encoding="utf-8")
    if args.json:
        json.dump(data, sys.stdout, indent=1)
        print()
    else:
        print(_workload_header(workload, args, cluster, config))
        print(_metrics_rows(results))
        ran = [m for m in results if "common_jobs" in m]
        if len(ran) > 1:
            failed = " that did not fail" if len(ran) < len(results) else ""
            common = ran[0]["common_jobs"]
            if not common:
                print(f"× first: n/a, no job was finished by every policy{failed}")
            else:
                print(f"× first: avg JCT over the {common} job{'' if common == 1 else 's'} "
                      f"every policy{failed} finished, ratio to {ran[0]['policy']}'s over the "
                      f"same jobs")
            if common and any(m["jobs_completed"] != m["common_jobs"] for m in ran):
                # FTF worst above counts each policy's own finished jobs only
                print("worst FTF over those jobs: " + ", ".join(
                    f"{m['policy']} {_number(m['ftf_worst_common'], '{:.2f}')}"
                    for m in ran))
        for line in _metric_notes(results):
            print(line)
        for m in results:
            if m.get("status") == "failed":
                print(f"{m['policy']}: FAILED after {m['attempts']} attempt(s): {m['error']}")
    if sweep is not None:
        where = f"; wrote {Path(args.out) / 'metrics.json'}" if args.out is not None else ""
        failed_runs = None
        if args.json:           # no table lists the failed runs above the last line
            failed_runs = [m["policy"] for m in results if m.get("status") == "failed"]
        print(sweep_note(sweep, failed_runs, errors_in="their errors: their entries' 'error' "
                         "in the JSON") + where, file=sys.stderr)
    return 1 if any(m.get("status") == "failed" for m in results) else 0


def _compare_serially(args, names, cluster, workload, config, own: dict
                      ) -> tuple[list[dict], list[dict | None]]:
    """``compare --backend serial``: each policy's metrics and finished jobs
    (``_done_jct``), in ``names``' order. A run that raises is shown with its traceback on
    stderr and kept as a failed entry (``status``, ``error``, ``attempts``: 1, as the Ray
    backend's, which retries once), with ``None`` for its jobs; the other policies still
    run."""
    from agents.sweep import error_text
    results, done = [], []
    warm_up_process()          # the process's one-off costs: not in the first policy's times
    with _own_output_to_stderr(args, bool(own)):
        for name in names:
            try:
                result = _run_policy(name, cluster, workload, config, args, own.get(name))
            except Exception as exc:          # noqa: BLE001 (kept as the run's error)
                print(f"compare: policy {name} failed (shown as FAILED in the results); "
                      f"its traceback:", file=sys.stderr)
                traceback.print_exc(file=sys.stderr)
                results.append({"policy": name, "status": "failed", "error": error_text(exc),
                                "attempts": 1})
                done.append(None)
                continue
            results.append(result.metrics())
            done.append(_done_jct(result.jobs, config, cluster.num_gpus))
    return results, done


def _jsonable(metrics: dict) -> dict:
    """``metrics`` with every non-finite float (in nested dicts too, e.g.
    ``gpu_util_by_type``) as ``None``: JSON has no NaN."""
    return {k: (None if isinstance(v, float) and not math.isfinite(v)
                else _jsonable(v) if isinstance(v, dict) else v)
            for k, v in metrics.items()}
