"""The ``hsched`` command line.

Subcommands:

* ``hsched candidates --model M --cluster C [--max-candidates N] [--json]`` — a job's
  candidates (resource set × best parallelization strategy), fastest first.
* ``hsched models`` / ``hsched clusters [NAME]`` — the catalogs.
* ``hsched demo`` — the end-to-end demo on the embedded default scenario.
* ``hsched train --env hsched/Rank-v0 --algo ppo`` — imitation + PPO training of the ranker
  (``agents.train``).
* ``hsched evaluate --suite smoke|standard|large --policies pure-lp,topk,ranker:PATH,...`` —
  policies and learned rankers on held-out seeds (``agents.evaluate``).

Errors in the input (unknown names, bad files) exit with status 2 and one line naming what is
wrong; only this module prints.
"""

from __future__ import annotations

import argparse
import json
import logging
import sys
import time
from pathlib import Path

import numpy as np

from hsched_env.catalog import get_gpu, get_model, gpu_catalog, model_catalog
from hsched_env.cluster import cluster_presets, get_cluster
from hsched_env.errors import ConfigError, HSchedError, show
from hsched_env.files import is_file
from hsched_env.planner import CandidateTable, PlannerConfig, plan

DEMO_CLUSTER = "sia-64"
DEMO_MODELS = ("resnet50", "transformer", "bert-large", "gpt2-xl", "vit-l", "llama2-7b",
               "llama2-13b")


# ---------------------------------------------------------------------------- formatting
def format_table(headers: list[str], rows: list[list[str]]) -> str:
    """Right-aligned plain-text table (first column left-aligned)."""
    widths = [max(len(h), *(len(r[i]) for r in rows)) if rows else len(h)
              for i, h in enumerate(headers)]

    def line(cells):
        return "  ".join(c.ljust(w) if i == 0 else c.rjust(w)
                         for i, (c, w) in enumerate(zip(cells, widths)))

    return "\n".join([line(headers), line(["-" * w for w in widths])] + [line(r) for r in rows])


def _gpus_text(gpus: dict[str, int]) -> str:
    return " + ".join(f"{n}×{t}" for t, n in gpus.items())


def _num(x: float) -> str:
    if x >= 100:
        return f"{x:,.0f}"
    if x >= 1:
        return f"{x:.2f}"
    return f"{x:.3g}"


def candidates_text(table: CandidateTable, limit: int | None = None) -> str:
    """The human-readable candidate table printed by ``hsched candidates``."""
    recs = table.to_records()[:limit]
    token_model = bool(len(table)) and table.tokens_per_s_per_gpu.max() > 0
    headers = ["#", "GPUs", "nodes", "layout", "dp", "tp", "pp", "mb", "ZeRO", "recomp",
               "step s", "samples/s"] + (["tok/s/GPU"] if token_model else []) + ["mem GB/GPU"]
    rows = []
    for i, r in enumerate(recs):
        layout = r["kind"]
        if r["dp_per_type"]:
            layout += " dp " + " + ".join(f"{v} {t}" for t, v in r["dp_per_type"].items())
        if r["pp_per_type"]:
            layout += " pp " + " + ".join(f"{v} {t}" for t, v in r["pp_per_type"].items())
        row = [str(i + 1), _gpus_text(r["gpus"]), str(r["nodes"]), layout, str(r["dp"]),
               str(r["tp"]), str(r["pp"]), str(r["microbatches"]), str(r["zero"]),
               "yes" if r["recompute"] else "no", _num(r["step_time_s"]),
               _num(r["samples_per_s"]) + ("*" if r["source"] == "measured" else "")]
        if token_model:
            row.append(_num(r["tokens_per_s_per_gpu"]))
        row.append(" / ".join(f"{v:.1f}" + (f" {t}" if len(r["mem_gb_by_type"]) > 1 else "")
                              for t, v in r["mem_gb_by_type"].items()))
        rows.append(row)
    return format_table(headers, rows)


def _no_fit_reason(model, cluster) -> str:
    need = model.params * model.bytes_per_param_states / 1e9
    usable = [get_gpu(p.gpu_type).memory_gb * p.num_gpus * 0.9 for p in cluster.pools]
    largest = max([u for u in usable] + [a + b for i, a in enumerate(usable)
                                          for j, b in enumerate(usable) if i < j])
    return (f"{model.name} fits on no resource set of {cluster.name}: its model states alone "
            f"need {need:,.0f} GB, and the largest resource set (at most two node pools) "
            f"offers {largest:,.0f} GB of usable GPU memory")


# ---------------------------------------------------------------------------- commands
def _check_throughputs(name: str) -> None:
    """``--throughputs`` must be 'analytic', 'gavel' or an existing file (checked without
    letting odd names, e.g. too long for the OS, raise OSError)."""
    if name not in (None, "", "analytic", "gavel") and not is_file(Path(name)):
        raise ConfigError(f"unknown throughput source {show(name)}; valid: analytic, gavel or "
                          f"a table file in Gavel's format", field="--throughputs")


def cmd_candidates(args) -> int:
    _check_throughputs(args.throughputs)
    model = get_model(args.model)
    cluster = get_cluster(args.cluster)
    config = PlannerConfig(max_candidates=args.max_candidates, mixed=not args.no_mixed)
    t0 = time.perf_counter()
    table = plan(model, cluster, config=config, throughputs=args.throughputs)
    elapsed = time.perf_counter() - t0
    if args.json:
        json.dump(table.to_records(), sys.stdout, indent=1)
        print()
        return 0
    print(f"{model.display} on {cluster.name} ({cluster.num_gpus} GPUs): {len(table)} candidates "
          f"in {elapsed * 1e3:.0f} ms, fastest first; one sample = {model.sample}, "
          f"batch {model.global_batch}{' per replica' if model.batch_per_replica else ''}")
    if len(table) == 0:
        print(_no_fit_reason(model, cluster))
        return 0
    print(candidates_text(table))
    if table.measured.any():
        print("* measured (Gavel's table); the others are predicted by the analytic cost model")
    return 0



def cmd_models(args) -> int:
    rows = []
    for m in model_catalog().values():
        rows.append([m.name, m.display, m.family, f"{m.params / 1e9:.3g}B", str(m.layers),
                     m.precision, str(m.global_batch), "/".join(m.parallelism), m.sample])
    print(format_table(["name", "model", "family", "params", "layers", "precision", "batch",
                        "parallelism", "one sample"], rows))
    return 0


def cmd_clusters(args) -> int:
    if args.name:
        print(get_cluster(args.name).describe())
        return 0
    rows = []
    for name in cluster_presets():
        c = get_cluster(name)
        mix = ", ".join(f"{n}×{t}" for t, n in c.capacity.items())
        rows.append([name, str(c.num_gpus), str(c.num_nodes), mix])
    print(format_table(["preset", "GPUs", "nodes", "GPUs by type"], rows))
    print("\nGPU types: " + ", ".join(gpu_catalog()))
    return 0


def _check_simulation_args(args, policies: list[str]) -> None:
    """Reject bad values before any simulation runs (each names its flag)."""
    import math
    from hsched_env.throughput import get_throughput_source
    from lp_baseline.policy import make_policy
    _check_throughputs(args.throughputs)
    get_throughput_source(args.throughputs)
    if args.floor is not None and not 0.0 <= args.floor <= 1.0:
        raise ConfigError(f"must be a fraction in [0, 1], got {args.floor}", field="--floor")
    for name in policies:
        make_policy(name, objective=args.objective, **_lp_options(args))
    if args.lp_time_limit_s is not None and not (args.lp_time_limit_s > 0
                                                 and math.isfinite(args.lp_time_limit_s)):
        raise ConfigError(f"must be a positive number of seconds, got {args.lp_time_limit_s}",
                          field="--lp-time-limit-s")
    if args.max_time_s is not None and not (args.max_time_s > 0
                                            and math.isfinite(args.max_time_s)):
        raise ConfigError(f"must be a positive number of seconds, got {args.max_time_s}",
                          field="--max-time-s")
    if args.seed < 0:
        raise ConfigError(f"must be >= 0, got {args.seed}", field="--seed")
    jobs_out = getattr(args, "jobs_out", None)
    if jobs_out:
        try:
            with open(jobs_out, "a", encoding="utf-8"):
                pass
        except OSError as exc:
            raise ConfigError(f"cannot write {jobs_out}: {exc.strerror or exc}",
                              field="--jobs-out") from None


def _simulation_args(args):
    from hsched_env.simulator import SimConfig
    from hsched_env.workloads import load_workload
    cluster = get_cluster(args.cluster)
    workload = load_workload(args.workload, cluster, skip_invalid=args.skip_invalid,
                             throughputs=args.throughputs)
    if workload.skipped:
        print(f"hsched: skipped {workload.skipped} invalid trace rows (--skip-invalid)",
              file=sys.stderr)
    for note in workload.notes:
        logging.getLogger("hsched").info("%s", note)
    measure = _measure(args.measure_jobs) if args.measure_jobs else None
    config = SimConfig(round_s=args.round_s, restart_s=args.restart_s,
                       planner=PlannerConfig(max_candidates=args.max_candidates),
                       throughputs=args.throughputs, seed=args.seed,
                       max_time_s=args.max_time_s, measure_jobs=measure,
                       check_invariants=args.check_invariants,
                       progress=not args.no_progress and sys.stderr.isatty())
    return cluster, workload, config


def _measure(text: str) -> tuple[int, int]:
    try:
        a, b = (int(v) for v in text.split(":"))
    except ValueError:
        raise ConfigError(f"expected A:B (job ids A..B-1), got {show(text)}",
                          field="--measure-jobs") from None
    return a, b


def _lp_options(args) -> dict:
    """Co-optimizer knobs given on the command line (``--floor``)."""
    return {} if args.floor is None else {"floor": args.floor}


def _run_policy(name, cluster, workload, config, args):
    from hsched_env.simulator import Simulator
    from lp_baseline.policy import make_policy
    policy = make_policy(name, objective=args.objective, backend=args.backend, topk=args.topk,
                         **_lp_options(args),
                         time_limit_s=args.lp_time_limit_s)
    return Simulator(cluster, workload, policy, config).run()


def _metrics_rows(all_metrics: list[dict]) -> str:
    ref = all_metrics[0]
    rows = []
    for m in all_metrics:
        ratio = m["avg_jct_s"] / ref["avg_jct_s"] if ref["avg_jct_s"] else float("nan")
        rows.append([m["policy"], f"{m['jobs_completed']}/{m['jobs_total']}",
                     f"{m['avg_jct_s'] / 3600:.2f}", f"{ratio:.2f}",
                     f"{m['p50_jct_s'] / 3600:.2f}", f"{m['p99_jct_s'] / 3600:.2f}",
                     f"{m['makespan_s'] / 3600:.1f}", f"{m['avg_queue_s'] / 3600:.2f}",
                     f"{m['gpu_util']:.0%}", f"{m['restarts_per_job']:.2f}",
                     f"{m['ftf_worst']:.2f}", f"{m['decision_time_mean_s'] * 1e3:.1f}",
                     f"{m['decision_time_p99_s'] * 1e3:.1f}", f"{m['lp_vars_mean']:.0f}",
                     f"{m['wall_s']:.1f}"])
    return format_table(["policy", "done", "avg JCT h", "× first", "p50 h", "p99 h",
                         "makespan h", "queue h", "util", "restarts", "FTF worst",
                         "decide ms", "p99 ms", "LP vars", "wall s"], rows)


def _write_jobs(path: str, result) -> None:
    import csv
    types = list(result.cluster.gpu_types)
    with open(path, "w", newline="", encoding="utf-8") as fh:
        w = csv.writer(fh)
        w.writerow(["job_id", "name", "model", "arrival_s", "first_start_s", "finish_s",
                    "jct_s", "restarts"] + [f"gpu_s_{t}" for t in types] + ["candidates_used"])
        for r in result.jobs:
            w.writerow([r.job_id, r.name, r.model, f"{r.arrival_s:.3f}",
                        f"{r.first_start_s:.3f}", f"{r.finish_s:.3f}",
                        f"{r.jct_s:.3f}" if r.done else "", r.restarts]
                       + [f"{r.gpu_s_by_type[t]:.1f}" for t in types]
                       + [";".join(r.candidates_used)])


def cmd_simulate(args) -> int:
    _check_simulation_args(args, [args.policy])
    cluster, workload, config = _simulation_args(args)
    result = _run_policy(args.policy, cluster, workload, config, args)
    metrics = result.metrics()
    if args.jobs_out:
        _write_jobs(args.jobs_out, result)
    if args.json:
        json.dump(_jsonable(metrics), sys.stdout, indent=1)
        print()
    else:
        print(f"{len(workload.jobs)} jobs ({args.workload}) on {cluster.name}, "
              f"{config.round_s:.0f} s rounds, restart {config.restart_s:.0f} s")
        print(_metrics_rows([metrics]))
    return 0


def cmd_compare(args) -> int:
    names = [p.strip() for p in args.policies.split(",") if p.strip()]
    if not names:
        raise ConfigError("no policy named", field="--policies")
    _check_simulation_args(args, names)
    cluster, workload, config = _simulation_args(args)
    results = []
    for name in names:
        results.append(_run_policy(name, cluster, workload, config, args).metrics())
    if args.json:
        json.dump([_jsonable(m) for m in results], sys.stdout, indent=1)
        print()
    else:
        print(f"{len(workload.jobs)} jobs ({args.workload}) on {cluster.name}, "
              f"{config.round_s:.0f} s rounds, restart {config.restart_s:.0f} s")
        print(_metrics_rows(results))
    return 0


def _jsonable(metrics: dict) -> dict:
    import math
    return {k: (None if isinstance(v, float) and not math.isfinite(v) else v)
            for k, v in metrics.items()}


def cmd_demo(args) -> int:
    from agents.demo import run_demo        # plotting lives with the agents (matplotlib)
    return run_demo(cluster=args.cluster, out=Path(args.out), models=DEMO_MODELS)


def cmd_evaluate(args) -> int:
    from agents.evaluate import run_cli     # the harness lives with the agents (torch, plots)
    return run_cli(args)


def cmd_train(args) -> int:
    from agents.train import TrainConfig, train      # torch and SB3 load only here
    fields = {"env": args.env, "algo": args.algo, "timesteps": args.timesteps,
              "n_envs": args.n_envs, "seed": args.seed, "logdir": args.logdir}
    for name in ("cluster", "workload", "max_candidates", "imitation_seeds", "keep_cost",
                 "learning_rate", "hidden"):
        value = getattr(args, name)
        if value is not None:
            fields[name] = value
    if args.episode_hours is not None:
        fields["episode_hours"] = args.episode_hours if args.episode_hours > 0 else None
    config = TrainConfig(**fields)
    print(f"training {config.env} with {config.algo} for {config.timesteps} steps on "
          f"{config.cluster} ({config.workload}); run directory {config.run_dir()}",
          file=sys.stderr)
    summary = train(config, progress=not args.no_progress and sys.stderr.isatty())
    out = config.run_dir()
    imitation = summary.get("imitation")
    if imitation:
        v = imitation["valid"]
        print(f"imitation: {imitation['rounds']} LP rounds; held-out precision "
              f"{v['precision']:.2f}, recall {v['recall']:.2f}, kept {v['kept_fraction']:.1%}")
    eps = summary["episodes"]
    if eps:
        last = eps[-min(len(eps), 5):]
        print(f"last {len(last)} episodes: avg JCT {np.mean([e['avg_jct_h'] for e in last]):.2f} h,"
              f" return / LP's {np.mean([e['return_vs_lp'] for e in last]):.3f}")
    print(f"wrote {out}/ (ranker.pt, model.zip, config.json, tb/) in {summary['total_s']:.0f} s;"
          f" tensorboard --logdir {out}")
    return 0


# ---------------------------------------------------------------------------- parser
def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="hsched", description=(
        "HeteroSched: co-optimize parallelization and scheduling of deep-learning training "
        "jobs on heterogeneous GPU clusters."))
    p.add_argument("-v", "--verbose", action="store_true", help="log progress to stderr")
    sub = p.add_subparsers(dest="command", required=True, metavar="COMMAND")

    c = sub.add_parser("candidates", help="a job's candidates: resource set × best strategy")
    c.add_argument("--model", required=True, help="model name (see 'hsched models')")
    c.add_argument("--cluster", required=True,
                   help="preset name (see 'hsched clusters') or a .yaml/.json cluster file")
    c.add_argument("--max-candidates", type=_positive_int, default=None, metavar="N",
                   help="keep at most N candidates (highest throughput per GPU, and the fastest)")
    c.add_argument("--throughputs", default="analytic",
                   help="'analytic' (default), 'gavel' (Gavel's measured table where it has an "
                        "entry) or a table file in Gavel's format")
    c.add_argument("--no-mixed", action="store_true", help="single-GPU-type sets only")
    c.add_argument("--json", action="store_true", help="one JSON list on stdout")
    c.set_defaults(func=cmd_candidates)

    m = sub.add_parser("models", help="list the model catalog")
    m.set_defaults(func=cmd_models)
    cl = sub.add_parser("clusters", help="list cluster presets, or describe one")
    cl.add_argument("name", nargs="?", help="preset name or cluster file")
    cl.set_defaults(func=cmd_clusters)

    for cmd, helptext in (("simulate", "simulate a workload under one policy"),
                          ("compare", "simulate a workload under several policies")):
        sp = sub.add_parser(cmd, help=helptext)
        sp.add_argument("--cluster", required=True, help="preset or cluster file")
        sp.add_argument("--workload", required=True, help=(
            "gavel:rate=R,jobs=N,seed=S,mix=classic|llm | philly:start=DATE,hours=H[,vc=V] | "
            "gavel-trace:path=F | pollux:path=F | csv:path=F"))
        if cmd == "simulate":
            sp.add_argument("--policy", default="heterosched-lp",
                            help="heterosched-lp (default), heterosched-lp-las, gavel, sia, "
                                 "agnostic-lp, topk, lp-on-change, pop-K, heterosched-lp-v0, "
                                 "fifo, fifo-fastest, srf, greedy, random")
        else:
            sp.add_argument("--policies", required=True, help="comma-separated policy names")
        sp.add_argument("--objective", default=None,
                        help="LP objective of the co-optimizer's policies: fair-srpt "
                             "(default), fair-las (non-clairvoyant), max-min, max-throughput, "
                             "min-makespan, ftf")
        sp.add_argument("--floor", type=float, default=None,
                        help="fairness floor of fair-srpt / fair-las: every job keeps this "
                             "fraction of the max-min optimum (0..1, default 0.5); the "
                             "co-optimizer's policies only")
        sp.add_argument("--throughputs", default="analytic", help="'analytic' or 'gavel'")
        sp.add_argument("--round-s", type=float, default=300.0, help="round length (300)")
        sp.add_argument("--restart-s", type=float, default=60.0, help="restart cost (60)")
        sp.add_argument("--max-candidates", type=_positive_int, default=16, metavar="N",
                        help="candidates kept per job (16)")
        sp.add_argument("--topk", type=_positive_int, default=4, help="k of the topk policy (4)")
        sp.add_argument("--backend", default="highs", choices=["highs", "pulp"],
                        help="LP backend: direct sparse HiGHS (default) or PuLP + HiGHS")
        sp.add_argument("--lp-time-limit-s", type=float, default=None,
                        help="per-solve LP time limit")
        sp.add_argument("--seed", type=int, default=0, help="policy seed (0)")
        sp.add_argument("--max-time-s", type=float, default=None,
                        help="stop the simulation at this time")
        sp.add_argument("--measure-jobs", metavar="A:B", default=None,
                        help="metrics over job ids A..B-1, stop when they are done")
        sp.add_argument("--skip-invalid", action="store_true",
                        help="skip invalid trace rows (their count is reported)")
        sp.add_argument("--check-invariants", action="store_true",
                        help="verify the simulator's invariants every round (slower)")
        sp.add_argument("--no-progress", action="store_true", help="no progress bar")
        sp.add_argument("--json", action="store_true", help="JSON on stdout")
        if cmd == "simulate":
            sp.add_argument("--jobs-out", metavar="FILE.csv", help="one row per job")
            sp.set_defaults(func=cmd_simulate)
        else:
            sp.set_defaults(func=cmd_compare)

    d = sub.add_parser("demo", help="end-to-end demo on the default scenario")
    d.add_argument("--cluster", default=DEMO_CLUSTER, help=f"default {DEMO_CLUSTER}")
    d.add_argument("--out", default="runs/demo", help="output folder (plots, JSON)")
    d.set_defaults(func=cmd_demo)

    ev = sub.add_parser("evaluate", help="policies and learned rankers on held-out seeds")
    ev.add_argument("--suite", default="smoke", help="smoke (default), standard or large")
    ev.add_argument("--policies", default=None, help=(
        "comma-separated: pure-lp, topk, pop-4, gavel, fifo (any 'simulate' policy), "
        "ranker (agents/data/ranker.pt) or ranker:PATH; default pure-lp,topk,pop-4,[ranker,]"
        "gavel,fifo"))
    ev.add_argument("--seeds", type=_positive_int, default=None, metavar="N",
                    help="first N held-out seeds (default: the suite's)")
    ev.add_argument("--out", default=None, help="output folder (default runs/eval-SUITE)")
    ev.add_argument("--json", action="store_true", help="one JSON object on stdout")
    ev.add_argument("--no-progress", action="store_true", help="no progress bar")
    ev.set_defaults(func=cmd_evaluate)

    tr = sub.add_parser("train", help="train a ranker (Rank-v0) or a scheduler (Schedule-v0)")
    tr.add_argument("--env", default="hsched/Rank-v0", help="hsched/Rank-v0 (default) or "
                    "hsched/Schedule-v0")
    tr.add_argument("--algo", default="ppo", help="ppo (default) or maskable-ppo")
    tr.add_argument("--timesteps", type=_positive_int, default=1008)
    tr.add_argument("--n-envs", type=_positive_int, default=1)
    tr.add_argument("--seed", type=int, default=0)
    tr.add_argument("--logdir", default=None, help="run directory (default runs/ENV-ALGO-SEED)")
    tr.add_argument("--cluster", default=None, help="training cluster (default large-2048)")
    tr.add_argument("--workload", default=None, help="training workload spec, without seed= "
                    "(default gavel:rate=20000,jobs=300)")
    tr.add_argument("--max-candidates", type=_positive_int, default=None, help="K slots")
    tr.add_argument("--imitation-seeds", type=int, default=None,
                    help="LP-reference episodes for the warm start (0: none)")
    tr.add_argument("--keep-cost", type=float, default=None, help="λ of the rank reward")
    tr.add_argument("--episode-hours", type=float, default=None,
                    help="truncate training episodes at this simulated time (default 3; "
                         "0: run every episode to its end)")
    tr.add_argument("--learning-rate", type=float, default=None)
    tr.add_argument("--hidden", type=_positive_int, default=None)
    tr.add_argument("--no-progress", action="store_true")
    tr.set_defaults(func=cmd_train)
    return p


def _positive_int(text: str) -> int:
    error = argparse.ArgumentTypeError(f"expected a positive integer, got {show(text)}")
    try:
        value = int(text)
    except ValueError:
        raise error from None
    if value <= 0:
        raise error
    return value


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    logging.basicConfig(level=logging.INFO if args.verbose else logging.WARNING,
                        format="%(levelname)s %(name)s: %(message)s")
    try:
        return args.func(args)
    except HSchedError as exc:
        print(f"hsched {args.command}: error: {exc}", file=sys.stderr)
        return 2
    except BrokenPipeError:
        return 0


if __name__ == "__main__":
    sys.exit(main())
