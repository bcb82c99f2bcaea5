"""Benchmark: candidate-generation time per job on every cluster preset.

Usage: python scripts/bench_planner.py [--repeats 15] [--markdown] [--cluster NAME ...]

For each preset and each catalog model it times ``plan(model, cluster)`` (warm: the cluster's
resource sets and strategy shapes are cached after the first job, as in a simulation) and
reports the median over ``--repeats`` runs, plus the one-off cold cost of enumerating the
cluster's sets. Timings on a shared machine drift, so a reference workload (sorting 1M float64
with numpy) is timed in the same run and every median is also given as a ratio to it.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

import numpy as np

from hsched_env.catalog import model_catalog
from hsched_env.cluster import cluster_presets, get_cluster
from hsched_env.planner import _cluster_sets, plan

sys.path.append(str(Path(__file__).resolve().parent))       # script_args, next to this file
from script_args import one_line_errors, positive_int  # noqa: E402


def median_time(fn, repeats: int) -> float:
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


@one_line_errors
def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--repeats", type=positive_int, default=15)
    ap.add_argument("--markdown", action="store_true", help="print Markdown tables")
    ap.add_argument("--cluster", action="append", help="only these presets (repeatable)")
    args = ap.parse_args(argv)
    names = args.cluster or cluster_presets()
    clusters = [get_cluster(name) for name in names]      # an unknown name: before timing

    data = np.random.default_rng(0).random(1_000_000)
    ref = median_time(lambda: np.sort(data), args.repeats)
    print(f"reference: numpy sort of 1M float64, median {ref * 1e3:.1f} ms")

    models = list(model_catalog())
    for name, cluster in zip(names, clusters):
        _cluster_sets.cache_clear()
        t0 = time.perf_counter()
        _cluster_sets(cluster.pools)
        cold = time.perf_counter() - t0
        rs, sk = _cluster_sets(cluster.pools)
        rows = []
        for m in models:
            plan(m, cluster)                       # warm-up
            t = median_time(lambda: plan(m, cluster), args.repeats)
            rows.append((m, t, len(plan(m, cluster))))
        worst = max(rows, key=lambda r: r[1])
        med_all = statistics.median(r[1] for r in rows)
        print(f"\n{name}: {cluster.num_gpus} GPUs, {rs.n_a.size} resource sets, "
              f"{sk.kind.size} strategy shapes; set enumeration (once per cluster) "
              f"{cold * 1e3:.1f} ms")
        print(f"  median over models {med_all * 1e3:.1f} ms ({med_all / ref:.2f}× ref); "
              f"slowest {worst[0]} {worst[1] * 1e3:.1f} ms ({worst[1] / ref:.2f}× ref)")
        if args.markdown:
            print("\n| model | candidates | median ms | × ref |\n|---|---:|---:|---:|")
            for m, t, n in rows:
                print(f"| {m} | {n} | {t * 1e3:.1f} | {t / ref:.2f} |")
        else:
            for m, t, n in rows:
                print(f"  {m:15s} {n:5d} candidates  {t * 1e3:7.1f} ms  {t / ref:5.2f}× ref")
    return 0


if __name__ == "__main__":
    sys.exit(main())
