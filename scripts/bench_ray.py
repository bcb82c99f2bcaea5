"""Sweep wall time: the serial backend against ``--backend ray`` (``agents.sweep``), and Ray's
per-task overhead.

1. A sweep (default: the smoke suite's scenario, sia-64 with 30 jobs, under pure-lp, topk,
   gavel and fifo on 2 held-out seeds: 8 runs) through ``evaluate`` serially and on a local
   Ray instance of ``--workers`` CPUs, ``--reps`` times each; for Ray the start of the
   instance (``ray.init``), the sweep itself and the shutdown are timed apart. Every Ray
   repetition's runs are checked equal to the serial ones (``deterministic_part``: all but
   the wall-clock fields).
2. Per-task overhead: ``--noop`` no-op tasks through ``run_sweep`` on Ray (instance already
   running) and serially; the difference per task is what Ray adds to each run.

Prints a markdown table (``--json``: one JSON object). The machine's load average is printed
too: other processes on the cores change every number here.

    .venv/bin/python scripts/bench_ray.py                      # about 3 minutes on 2 cores
    .venv/bin/python scripts/bench_ray.py --reps 1 --seeds 1   # a quick look
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from agents.evaluate import (SMOKE, custom_suite, deterministic_part,  # noqa: E402
                             evaluate)
from agents.sweep import RayBackend, Task, ray_module, run_sweep  # noqa: E402
from hsched_env.errors import ConfigError  # noqa: E402
from lp_baseline.registry import split_policy_list  # noqa: E402

sys.path.append(str(Path(__file__).resolve().parent))       # script_args, next to this file
from script_args import one_line_errors, positive_int  # noqa: E402

DEFAULT_POLICIES = "pure-lp,topk,gavel,fifo"


def noop(i: int) -> dict:
    """The body of an overhead task."""
    return {"i": i}


def _same(a, b) -> bool:
    if [(r.scenario, r.label, r.seed) for r in a.runs] != \
            [(r.scenario, r.label, r.seed) for r in b.runs]:
        return False
    return all(json.dumps(deterministic_part(x), sort_keys=True)
               == json.dumps(deterministic_part(y), sort_keys=True)
               for x, y in zip(a.runs, b.runs))


def bench(args) -> dict:
    ray = ray_module()
    suite = (custom_suite(args.cluster, args.workload) if args.cluster else SMOKE)
    policies = split_policy_list(args.policies)     # "fifo,": refused, not skipped
    load_before = os.getloadavg()
    serial_s, reference = [], None
    for _ in range(args.reps):
        t0 = time.perf_counter()
        report = evaluate(suite, policies, seeds=args.seeds, progress=False)
        serial_s.append(time.perf_counter() - t0)
        reference = reference or report
    run_s = [r.metrics["wall_s"] for r in reference.runs]
    init_s, sweep_s, stop_s, identical, other_code, ray_run_s = [], [], [], [], [], []
    for _ in range(args.reps):
        t0 = time.perf_counter()
        RayBackend(num_cpus=args.workers).start()
        t1 = time.perf_counter()
        report = evaluate(suite, policies, seeds=args.seeds, progress=False, backend="ray")
        t2 = time.perf_counter()
        ray.shutdown()
        t3 = time.perf_counter()
        init_s.append(t1 - t0)
        sweep_s.append(t2 - t1)
        stop_s.append(t3 - t2)
        identical.append(_same(reference, report) and not report.failures)
        other_code.append(report.sweep["other_code_runs"])
        ray_run_s.append(sum(r.metrics["wall_s"] for r in report.runs))
    RayBackend(num_cpus=args.workers).start()
    run_sweep([Task("noop", "noop", i, {}, noop, (i,)) for i in range(4)], "ray",
              progress=False)                                  # workers up before timing
    overhead = {}
    for n in (args.noop, 10 * args.noop):
        tasks = [Task("noop", "noop", i, {}, noop, (i,)) for i in range(n)]
        t0 = time.perf_counter()
        run_sweep(tasks, "ray", progress=False)
        t_ray = time.perf_counter() - t0
        t0 = time.perf_counter()
        run_sweep(tasks, "serial", progress=False)
        t_serial = time.perf_counter() - t0
        overhead[n] = {"ray_s": t_ray, "serial_s": t_serial,
                       "ray_ms_per_task": 1e3 * t_ray / n,
                       "serial_ms_per_task": 1e3 * t_serial / n}
    ray.shutdown()
    med = statistics.median
    return {"suite": suite.name, "scenarios": [sc.name for sc in suite.scenarios],
            "workload": [sc.workload for sc in suite.scenarios], "policies": policies,
            "seeds": args.seeds, "runs": len(reference.runs), "workers": args.workers,
            "cores": os.cpu_count(), "reps": args.reps, "ray_version": ray.__version__,
            "serial_s": serial_s, "ray_init_s": init_s, "ray_sweep_s": sweep_s,
            "ray_shutdown_s": stop_s,
            "ray_total_s": [a + b + c for a, b, c in zip(init_s, sweep_s, stop_s)],
            "median": {"serial_s": med(serial_s), "ray_init_s": med(init_s),
                       "ray_sweep_s": med(sweep_s), "ray_shutdown_s": med(stop_s),
                       "ray_total_s": med([a + b + c for a, b, c in
                                           zip(init_s, sweep_s, stop_s)])},
            "run_wall_s": {"sum": sum(run_s), "max": max(run_s), "min": min(run_s)},
            "ray_run_wall_sum_s": ray_run_s,
            "identical": identical, "other_code_runs": other_code, "noop_overhead": overhead,
            "loadavg_before": load_before, "loadavg_after": os.getloadavg()}


def fmt(xs) -> str:
    return ", ".join(f"{x:.1f}" for x in xs)


def markdown(r: dict) -> str:
    m = r["median"]
    lines = [
        f"Sweep: {r['runs']} runs ({', '.join(r['policies'])} × {r['seeds']} held-out seeds "
        f"on {', '.join(r['scenarios'])}: {'; '.join(r['workload'])}); {r['cores']} cores, "
        f"Ray {r['ray_version']} with {r['workers']} workers; medians of {r['reps']} "
        f"(all values listed). The runs' own wall times add up to "
        f"{r['run_wall_s']['sum']:.1f} s serially (the longest {r['run_wall_s']['max']:.1f} s), "
        f"to {fmt(r['ray_run_wall_sum_s'])} s in the Ray workers (more: the workers shared "
        f"the cores).",
        "",
        "| | wall s (median) | values | ÷ serial (lower: faster) |",
        "|---|---:|---|---:|",
        f"| serial | {m['serial_s']:.1f} | {fmt(r['serial_s'])} | 1.00 |",
        f"| ray: sweep only (instance running) | {m['ray_sweep_s']:.1f} | "
        f"{fmt(r['ray_sweep_s'])} | {m['ray_sweep_s'] / m['serial_s']:.2f} |",
        f"| ray: `ray.init` | {m['ray_init_s']:.1f} | {fmt(r['ray_init_s'])} | |",
        f"| ray: shutdown | {m['ray_shutdown_s']:.1f} | {fmt(r['ray_shutdown_s'])} | |",
        f"| ray: end to end (init + sweep + shutdown) | {m['ray_total_s']:.1f} | "
        f"{fmt(r['ray_total_s'])} | {m['ray_total_s'] / m['serial_s']:.2f} |",
        "",
        f"Ray results identical to serial (all but wall-clock fields): "
        f"{'yes' if all(r['identical']) else 'NO'} ({sum(r['identical'])}/{len(r['identical'])}"
        f" repetitions)"
        + (f"; runs made by workers whose sources differed from this process's (edited "
           f"during the benchmark), per repetition: {r['other_code_runs']}."
           if any(r["other_code_runs"]) else "."),
        "",
        "| no-op tasks | Ray total s | Ray ms / task | serial ms / task |",
        "|---:|---:|---:|---:|",
    ]
    for n, o in r["noop_overhead"].items():
        lines.append(f"| {n} | {o['ray_s']:.2f} | {o['ray_ms_per_task']:.2f} | "
                     f"{o['serial_ms_per_task']:.3f} |")
    lb, la = r["loadavg_before"], r["loadavg_after"]
    lines += ["", f"Load average before {lb[0]:.2f} / {lb[1]:.2f} / {lb[2]:.2f}, after "
              f"{la[0]:.2f} / {la[1]:.2f} / {la[2]:.2f} (1 / 5 / 15 min)."]
    return "\n".join(lines)


@one_line_errors
def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--cluster", default=None, help="a custom scenario (with --workload) "
                   "instead of the smoke suite")
    p.add_argument("--workload", default=None)
    p.add_argument("--policies", default=DEFAULT_POLICIES)
    p.add_argument("--seeds", type=positive_int, default=2)
    p.add_argument("--reps", type=positive_int, default=3)
    p.add_argument("--workers", type=positive_int, default=2)
    p.add_argument("--noop", type=positive_int, default=50,
                   help="no-op tasks (and 10× as many)")
    p.add_argument("--json", action="store_true")
    args = p.parse_args(argv)
    if (args.cluster is None) != (args.workload is None):
        p.error("--cluster and --workload go together")
    try:
        split_policy_list(args.policies)
    except ConfigError as exc:
        p.error(f"--policies: {exc.reason}")
    result = bench(args)
    print(json.dumps(result, indent=1) if args.json else markdown(result))
    return 0 if all(result["identical"]) else 1


if __name__ == "__main__":
    sys.exit(main())
