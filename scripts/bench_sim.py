"""Scheduling benchmarks of the simulator and policies (the figures in BENCHMARKS.md).

Usage:
    python scripts/bench_sim.py hetero      # gavel-108, Gavel's table: aware vs agnostic LP
    python scripts/bench_sim.py llm         # sia-64 / modern-512, mix=llm: heterosched-lp vs gavel
    python scripts/bench_sim.py decision    # decision time vs active jobs on large-2048
    python scripts/bench_sim.py speed       # 2000-job workloads on large-2048, non-LP policies
    python scripts/bench_sim.py memo        # gavel on Gavel's workload, LPPolicy(memoize=) off / on
    python scripts/bench_sim.py ipm         # large-2048: the pure LP with dual simplex / IPM
    python scripts/bench_sim.py methods     # large-2048: the pure LP with dual simplex / IPM / colgen
    python scripts/bench_sim.py all         # hetero, llm, decision, speed (not memo/ipm/methods)

Each prints a Markdown table; every run is a deterministic simulation (fixed seeds).
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

import numpy as np

from hsched_env.cluster import get_cluster
from hsched_env.simulator import SimConfig, Simulator
from hsched_env.workloads import load_workload
from lp_baseline.policy import make_policy

sys.path.append(str(Path(__file__).resolve().parent))       # bench_pop, script_args
from script_args import int_list  # noqa: E402


def simulate(cluster, spec, policy, **cfg):
    c = get_cluster(cluster)
    w = load_workload(spec, c, throughputs=cfg.get("throughputs"))
    return Simulator(c, w, make_policy(policy), SimConfig(**cfg)).run()


def hetero(seeds=(0,)) -> None:
    """Gavel's headline: heterogeneity-aware vs agnostic max-min LP, single-GPU jobs."""
    print("\n### gavel-108, Gavel's measured throughputs, single-GPU jobs: avg JCT (h), jobs "
          "200-399 of 600 (steady state, as Gavel measures a middle window)\n")
    print("| rate (jobs/h) | gavel (aware LP) | agnostic-lp | agnostic ÷ aware | "
          "heterosched-lp | wall s |\n|---:|---:|---:|---:|---:|---:|")
    for rate in (1.0, 2.0, 3.0, 4.0, 5.0, 5.6, 6.0):
        row = {}
        t0 = time.perf_counter()
        for policy in ("gavel", "agnostic-lp", "heterosched-lp"):
            jcts = []
            for seed in seeds:
                r = simulate("gavel-108", f"gavel:rate={rate},jobs=600,seed={seed},multi_gpu=0",
                             policy, throughputs="gavel", measure_jobs=(200, 400))
                jcts.append(r.metrics()["avg_jct_s"] / 3600)
            row[policy] = statistics.mean(jcts)
        print(f"| {rate:g} | {row['gavel']:.2f} | {row['agnostic-lp']:.2f} | "
              f"{row['agnostic-lp'] / row['gavel']:.2f}× | {row['heterosched-lp']:.2f} | "
              f"{time.perf_counter() - t0:.0f} |")
        sys.stdout.flush()


def llm() -> None:
    """Strategy co-optimization: heterosched-lp vs gavel on an LLM-heavy mix."""
    cases = [("sia-64", "gavel:rate=3,jobs=100,seed={s},mix=llm"),
             ("modern-512", "gavel:rate=20,jobs=300,seed={s},mix=llm")]
    print("\n### mix=llm: avg JCT (h) and heterosched-lp's reduction against gavel\n")
    print("| cluster | workload | seed | heterosched-lp | gavel | reduction | topk | topk's "
          "reduction | greedy | fifo |\n|---|---|---:|---:|---:|---:|---:|---:|---:|---:|")
    for cluster, spec in cases:
        for seed in (0, 1, 2):
            s = spec.format(s=seed)
            m = {p: simulate(cluster, s, p).metrics()["avg_jct_s"] / 3600
                 for p in ("heterosched-lp", "gavel", "topk", "greedy", "fifo")}
            print(f"| {cluster} | `{s}` | {seed} | {m['heterosched-lp']:.2f} | {m['gavel']:.2f} "
                  f"| {1 - m['heterosched-lp'] / m['gavel']:.0%} | {m['topk']:.2f} | "
                  f"{1 - m['topk'] / m['gavel']:.0%} | {m['greedy']:.2f} | {m['fifo']:.2f} |")
            sys.stdout.flush()


def _timed_run(cluster, spec, policy, **cfg):
    """Simulate; also collect the POP parallel-solve time of every decision."""
    c = get_cluster(cluster)
    pol = make_policy(policy)
    parallel = []
    inner = pol.decide

    def decide(view):
        out = inner(view)
        parallel.append(pol.last_stats.extra.get("pop_parallel_s", 0.0))
        return out

    pol.decide = decide
    return Simulator(c, load_workload(spec, c), pol, SimConfig(**cfg)).run(), parallel


def decision(sizes=(100, 500, 1000, 2000), rounds=5) -> None:
    """Decision time vs active jobs on large-2048: pure LP, heuristics, POP-k."""
    policies = ("heterosched-lp", "lp-on-change", "topk", "topk-dominance", "pop-2", "pop-4",
                "pop-8")
    print(f"\n### large-2048, mix=llm, all jobs arriving in the first round\n\nDecision time: "
          f"the rounds among the first {rounds} with at least 90% of a burst of N jobs "
          f"active (durations ×0.5). Avg JCT: a complete run of the same burst with durations ×0.02.\n")
    print("| N | policy | active (min) | LP vars (mean) | decision median s | max s | "
          "÷ pure LP | POP parallel s | avg JCT ÷ pure LP |"
          "\n|---:|---|---:|---:|---:|---:|---:|---:|---:|")
    for n in sizes:
        rate = n * 12 * 1000
        ref = None
        for policy in policies:
            r, par = _timed_run("large-2048",
                                f"gavel:rate={rate},jobs={n},seed=0,mix=llm,duration_scale=0.5",
                                policy, max_time_s=rounds * 300.0)
            # one decision per round: the LP policies are not steady, so no round is skipped
            assert len(r.decision_s) == len(r.active_jobs), "skipped rounds: no per-round times"
            busy = [i for i, a in enumerate(r.active_jobs) if a >= 0.9 * n]
            dec = np.array([r.decision_s[i] for i in busy])
            par = [par[i] for i in busy]
            full, _ = _timed_run("large-2048",
                                 f"gavel:rate={rate},jobs={n},seed=0,mix=llm,duration_scale=0.02",
                                 policy)
            jct = full.metrics()["avg_jct_s"]
            med = float(np.median(dec))
            if ref is None:
                ref = (med, jct)
            pop = f"{np.median(par):.3f}" if policy.startswith("pop") else "–"
            print(f"| {n} | {policy} | {min(r.active_jobs[i] for i in busy)} | "
                  f"{np.mean([r.lp_vars[i] for i in busy]):.0f} | "
                  f"{med:.3f} | {dec.max():.3f} | {med / ref[0]:.2f} | {pop} | "
                  f"{jct / ref[1]:.3f} |")
            sys.stdout.flush()


def speed() -> None:
    """2000-job workloads on large-2048 under non-LP policies (target: under 60 s)."""
    print("\n### Simulator speed on large-2048: 2000 jobs, non-LP policies\n")
    print("| workload | policy | rounds | jobs done | simulated h | wall s (incl. planning) |"
          "\n|---|---|---:|---:|---:|---:|")
    for spec in ("philly:start=2017-10-09,hours=48,max_jobs=2000",
                 "gavel:rate=60,jobs=2000,seed=0,mix=llm"):
        for policy in ("fifo", "greedy", "srf"):
            t0 = time.perf_counter()
            r = simulate("large-2048", spec, policy)
            wall = time.perf_counter() - t0
            m = r.metrics()
            print(f"| `{spec}` | {policy} | {m['rounds']} | {m['jobs_completed']}/"
                  f"{m['jobs_total']} | {m['makespan_s'] / 3600:.0f} | {wall:.1f} |")
            sys.stdout.flush()


def memo(reps: int = 3) -> None:
    """``gavel`` on Gavel's generated workload (as ``scripts/bench_vs_gavel.py``: rate 4/h,
    seed 0, single-GPU jobs, jobs 100-299 measured, 360 s rounds) with ``memoize`` off and
    on, interleaved; medians, and a check that both give the same avg JCT."""
    c = get_cluster("gavel-108")
    spec = "gavel:rate=4,jobs=1300,seed=0,multi_gpu=0"
    cfg = SimConfig(throughputs="gavel", round_s=360.0, measure_jobs=(100, 300))
    walls, out = {False: [], True: []}, {}
    for _ in range(reps):
        for on in (False, True):
            w = load_workload(spec, c, throughputs="gavel")
            t0 = time.perf_counter()
            r = Simulator(c, w, make_policy("gavel", memoize=on), cfg).run()
            walls[on].append(time.perf_counter() - t0)
            out[on] = r.metrics()
    print("\n### gavel on Gavel's workload: memoize off against on\n")
    print("| memoize | wall s (median) | values | LP solves | reused | avg JCT h |"
          "\n|---|---:|---|---:|---:|---:|")
    for on in (False, True):
        m = out[on]
        print(f"| {'on' if on else 'off'} | {statistics.median(walls[on]):.2f} | "
              f"{', '.join(f'{v:.2f}' for v in walls[on])} | {m['lp_solves']} | "
              f"{m.get('lp_reused', 0)} | {m['avg_jct_s'] / 3600:.3f} |")
    same = out[False]["avg_jct_s"] == out[True]["avg_jct_s"]
    print(f"\nsame avg JCT: {same}; off ÷ on: "
          f"{statistics.median(walls[False]) / statistics.median(walls[True]):.2f}")


def lp_methods(sizes=(500, 1000, 2000), reps: int = 3,
               methods=("simplex", "ipm", "colgen")) -> None:
    """Decision time of the pure LP with each ``lp_method`` (HiGHS' dual simplex, IPM +
    crossover, column generation) on the same view of a large-2048 burst (as ``decision``),
    and whether each gives the dual simplex's assignment."""
    print("\n### large-2048, mix=llm burst: the pure LP's decision by LP method\n")
    others = [m for m in methods if m != "simplex"]
    print("| N | active | " + " | ".join(f"{m} median s" for m in methods) + " | "
          + " | ".join(f"{m} ÷ simplex | same as simplex" for m in others) + " |")
    print("|---:|---:|" + "---:|" * len(methods) + "---:|---|" * len(others))
    from bench_pop import SnapshotProbe          # (scripts/, this script's folder)
    c = get_cluster("large-2048")
    makers = {m: (lambda m=m: make_policy("heterosched-lp", lp_method=m)) for m in methods}
    for n in sizes:
        probe = SnapshotProbe(int(0.9 * n), makers, reps, warmup=0)
        w = load_workload(f"gavel:rate={n * 12000},jobs={n},seed=0,mix=llm,duration_scale=0.5", c)
        Simulator(c, w, probe, SimConfig(max_time_s=1800.0)).run()
        med = {m: statistics.median(r["decide_s"] for r in v) for m, v in probe.samples.items()}
        cells = [f"{med[m]:.3f}" for m in methods]
        for m in others:
            same = probe.samples["simplex"][-1]["assignment"] == probe.samples[m][-1]["assignment"]
            cells += [f"{med[m] / med['simplex']:.2f}", "yes" if same else "no"]
        print(f"| {n} | {probe.active} | " + " | ".join(cells) + " |")
        sys.stdout.flush()


def ipm(sizes=(500, 1000, 2000), reps: int = 3) -> None:
    """``lp_methods`` with the dual simplex and IPM only (the subcommand's earlier table)."""
    lp_methods(sizes, reps, methods=("simplex", "ipm"))


#: What ``all`` runs (the others take longer or compare LP settings: run them by name).
ALL = ("hetero", "llm", "decision", "speed")
#: ``--sizes`` when not given, per benchmark (``ipm``: its own default, 500,1000,2000).
DEFAULT_SIZES = {"decision": (100, 500, 1000, 2000), "methods": (100, 500, 1000, 2000)}


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("what", choices=["hetero", "llm", "decision", "speed", "memo", "ipm",
                                     "methods", "all"],
                    help="the benchmark; all: " + ", ".join(ALL))
    ap.add_argument("--sizes", type=int_list(1), default=None,
                    help="job counts of the decision, ipm and methods benchmarks, "
                         "comma-separated (default: 100,500,1000,2000; ipm 500,1000,2000)")
    args = ap.parse_args(argv)
    if args.sizes is not None and args.what not in ("decision", "ipm", "methods", "all"):
        ap.error(f"--sizes: the {args.what} benchmark has no job counts to set (only "
                 f"decision, ipm and methods, or all for its decision run)")
    todo = ALL if args.what == "all" else [args.what]
    for what in todo:
        if what in ("decision", "ipm", "methods"):
            run = {"decision": decision, "ipm": ipm, "methods": lp_methods}[what]
            sizes = args.sizes or DEFAULT_SIZES.get(what)
            if sizes:
                run(tuple(sizes))
            else:
                run()                         # ipm: its own default sizes
        else:
            globals()[what]()


if __name__ == "__main__":
    main()
