"""Benchmark: allocation-LP decision time, direct sparse path to HiGHS vs PuLP.

Usage: python scripts/bench_lp.py [--jobs 100 500 1000 2000] [--repeats 5] [--pulp-repeats-large 2]
                                  [--objective max-min] [--no-secondary] [--markdown]

For each job count it draws one synthetic round (``lp_baseline.solver.random_problem``: 16
candidates per job, 5 GPU types, 2048 GPUs, 1–64 GPUs of a type per candidate, lognormal
throughputs) and solves it with each backend ``--repeats`` times (PuLP at >= 2000 jobs only
``--pulp-repeats-large`` times), reporting medians of the model-building time, the solve time
and HiGHS' own run time. It also times building the same PuLP model with the faster
``LpAffineExpression([(var, coef), ...])`` idiom (build only), and prints PuLP's share of the
decision time at 1000 jobs. A reference workload (numpy sort of 1M float64) is timed in the
same run; the ``× ref`` column is the decision time divided by it.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

import numpy as np

sys.path.append(str(Path(__file__).resolve().parent))       # bench_planner, script_args
from bench_planner import median_time  # noqa: E402
from lp_baseline.problem import OBJECTIVES  # noqa: E402
from lp_baseline.solver import (_build_spec, random_problem, solve_allocation)  # noqa: E402
from script_args import nonnegative_int, one_line_errors, positive_int  # noqa: E402


#: The allocation objectives a synthetic round can be solved for: the Sia objectives need a
#: per-candidate gain (``AllocationProblem.gain``), which ``random_problem`` does not draw.
BENCH_OBJECTIVES = tuple(o for o in OBJECTIVES if o not in ("sia-srpt", "sia-las"))


def pulp_affine_build_s(p, objective: str) -> float:
    """Build time of the same model with PuLP's fastest idiom (no lpSum of products)."""
    import pulp

    t0 = time.perf_counter()
    fit, run = p.fits(), p.runnable()
    # max-min, min-makespan and ftf share one shape (a row per job); max-throughput has none
    constrained = np.zeros(p.n_jobs, dtype=bool) if objective == "max-throughput" else run.copy()
    spec = _build_spec(p, objective, fit, run, constrained, 1.0 / (p.weights() * p.norm))
    a = spec.a.tocsr()
    prob = pulp.LpProblem("allocation", pulp.LpMaximize)
    v = [prob.add_variable(f"x{k:07d}", float(spec.col_lo[k]), float(spec.col_hi[k]))
         for k in range(a.shape[1])]
    nz = np.flatnonzero(spec.cost)
    prob.setObjective(pulp.LpAffineExpression([(v[k], float(spec.cost[k])) for k in nz]))
    indptr, indices, data = a.indptr, a.indices.tolist(), a.data.tolist()
    for i in range(a.shape[0]):
        lo, hi = indptr[i], indptr[i + 1]
        e = pulp.LpAffineExpression([(v[j], c) for j, c in zip(indices[lo:hi], data[lo:hi])])
        con = e <= float(spec.row_hi[i]) if spec.row_hi[i] < np.inf else e >= float(spec.row_lo[i])
        prob.addConstraint(con, f"r{i:07d}")
    return time.perf_counter() - t0


@one_line_errors
def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--jobs", type=positive_int, nargs="+", default=[100, 500, 1000, 2000])
    ap.add_argument("--candidates", type=positive_int, default=16)
    ap.add_argument("--types", type=positive_int, default=5)
    ap.add_argument("--gpus", type=positive_int, default=2048)
    ap.add_argument("--repeats", type=positive_int, default=5)
    ap.add_argument("--pulp-repeats-large", type=positive_int, default=2,
                    help="PuLP repeats at >= 2000 jobs")
    ap.add_argument("--objective", default="max-min", choices=BENCH_OBJECTIVES)
    ap.add_argument("--no-secondary", action="store_true",
                    help="single solve (no lexicographic fill solve)")
    ap.add_argument("--seed", type=nonnegative_int, default=0)
    ap.add_argument("--markdown", action="store_true", help="print a Markdown table")
    args = ap.parse_args(argv)
    secondary = not args.no_secondary

    data = np.random.default_rng(0).random(1_000_000)
    ref = median_time(lambda: np.sort(data), 11)
    print(f"reference: numpy sort of 1M float64, median {ref * 1e3:.1f} ms")
    print(f"objective {args.objective}, secondary (fill) solve {'on' if secondary else 'off'}, "
          f"{args.candidates} candidates/job, {args.types} GPU types, {args.gpus} GPUs")

    warm = random_problem(20, np.random.default_rng(1), n_types=args.types)
    for backend in ("highs", "pulp"):                    # imports, HiGHS start-up
        solve_allocation(warm, args.objective, backend=backend)

    rows = []
    for n_jobs in args.jobs:
        rng = np.random.default_rng([args.seed, n_jobs])
        p = random_problem(n_jobs, rng, candidates_per_job=args.candidates, n_types=args.types,
                           total_gpus=args.gpus)
        objectives = {}
        for backend in ("highs", "pulp"):
            reps = args.repeats if backend == "highs" or n_jobs < 2000 else args.pulp_repeats_large
            res = [solve_allocation(p, args.objective, backend=backend, secondary=secondary)
                   for _ in range(reps)]
            assert all(r.status == "optimal" for r in res), [r.status for r in res]
            med = {k: statistics.median(getattr(r, k) for r in res)
                   for k in ("build_s", "solve_s", "highs_run_s")}
            med["decision_s"] = statistics.median(r.decision_s for r in res)
            objectives[backend] = res[0].objective
            rows.append(dict(jobs=n_jobs, backend=backend, reps=reps, vars=res[0].n_vars,
                             cons=res[0].n_cons, solves=res[0].iterations, **med))
        affine = statistics.median(pulp_affine_build_s(p, args.objective)
                                   for _ in range(min(args.repeats, 3)))
        rows[-1]["affine_build_s"] = affine
        rel = abs(objectives["highs"] - objectives["pulp"]) / (abs(objectives["highs"]) or 1.0)
        print(f"{n_jobs} jobs: objective {objectives['highs']:.6g} (backends differ by {rel:.1e})")

    if args.markdown:
        print("\n| jobs | LP vars × rows | backend | repeats | build s | solve s | HiGHS run s "
              "| decision s | build share | × ref |")
        print("|---:|---|---|---:|---:|---:|---:|---:|---:|---:|")
    for r in rows:
        share = r["build_s"] / r["decision_s"]
        cells = [f"{r['jobs']}", f"{r['vars']:,} × {r['cons']:,}", r["backend"], f"{r['reps']}",
                 f"{r['build_s']:.3f}", f"{r['solve_s']:.3f}", f"{r['highs_run_s']:.3f}",
                 f"{r['decision_s']:.3f}", f"{share:.0%}", f"{r['decision_s'] / ref:.0f}"]
        print(("| " + " | ".join(cells) + " |") if args.markdown else "  ".join(cells))

    print()
    for r in rows:
        if r["backend"] != "pulp":
            continue
        overhead = r["build_s"] + r["solve_s"] - r["highs_run_s"]
        print(f"{r['jobs']} jobs, PuLP: build {r['build_s']:.3f} s = "
              f"{r['build_s'] / r['decision_s']:.0%} of decision time {r['decision_s']:.3f} s; "
              f"build + PuLP→HiGHS copy "
              f"{overhead:.3f} s = {overhead / r['decision_s']:.0%}; LpAffineExpression-idiom "
              f"build {r['affine_build_s']:.3f} s = "
              f"{r['affine_build_s'] / (r['affine_build_s'] + r['solve_s']):.0%}")
    at = {r["backend"]: r for r in rows if r["jobs"] == 1000}
    if len(at) == 2:
        share = at["pulp"]["build_s"] / at["pulp"]["decision_s"]
        verdict = "above" if share > 0.20 else "below"
        print(f"\nAt 1000 jobs PuLP's model building is {share:.0%} of its decision time "
              f"({verdict} the 20% threshold); direct path builds in "
              f"{at['highs']['build_s']:.3f} s "
              f"({at['highs']['build_s'] / at['highs']['decision_s']:.1%}); decision time "
              f"PuLP / direct = {at['pulp']['decision_s'] / at['highs']['decision_s']:.2f}×")
    return 0


if __name__ == "__main__":
    sys.exit(main())
