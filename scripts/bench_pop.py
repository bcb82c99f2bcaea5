"""POP-k decision time with its parts solved one after the other and side by side
(``LPPolicy(pop_workers=, pop_executor=)``, ``lp_baseline.parallel_parts``).

On ``large-2048`` with a burst of N LLM-mix jobs (as in ``bench_sim.py decision``), the
simulation runs under the pure LP until a round has at least 90% of the N jobs active; on that
round's view, ``pop-K`` decides once per configuration and repetition, interleaved (after
one untimed warm-up decision each, which starts the pools):

* ``serial`` — the K parts one after the other (``pop_workers=1``, what ``pop-K`` did before);
* ``thread`` / ``process`` / ``ray`` with ``--workers`` parts at a time.

Every configuration starts from a fresh policy with the same seed, so all decide on the same
partition; their allocations are checked identical to the serial one. Reported per N and K:
the decision's median wall time, its ratio to serial in the same run, and (serial rows) the
slowest part's time, the ideal parallel time. Ray's instance is started before the timed
decisions (its start-up, ~5 s, is not in the figures).

    .venv/bin/python scripts/bench_pop.py                        # ~10 min on 2 cores
    .venv/bin/python scripts/bench_pop.py --sizes 500 --pops 4 --reps 2   # a quick look

Prints a markdown table (``--json``: one JSON object) and the machine's load average: other
processes on the cores change every timing here.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import statistics
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from hsched_env.cluster import get_cluster  # noqa: E402
from hsched_env.simulator import SimConfig, Simulator  # noqa: E402
from hsched_env.text import markdown_table  # noqa: E402
from hsched_env.workloads import load_workload  # noqa: E402
from lp_baseline.parallel_parts import EXECUTORS  # noqa: E402
from lp_baseline.policy import LPPolicy, make_policy  # noqa: E402
from lp_baseline.registry import MAX_POP_PARTS  # noqa: E402

sys.path.append(str(Path(__file__).resolve().parent))       # script_args, next to this file
from script_args import int_list, positive_int  # noqa: E402


def allocation_digest(allocation: dict) -> str:
    """A hash of ``{job: (rows, X)}`` (X rounded to 1e-9), to compare allocations."""
    h = hashlib.sha256()
    for j in sorted(allocation):
        rows, x = allocation[j]
        h.update(np.int64(j).tobytes())
        h.update(np.asarray(rows, dtype=np.int64).tobytes())
        h.update(np.round(np.asarray(x, dtype=np.float64), 9).tobytes())
    return h.hexdigest()[:16]


class SnapshotProbe:
    """The pure LP, except that on the first round with ``min_active`` active jobs each of
    ``makers`` (label -> a fresh policy) also decides on that view, timed: ``warmup``
    untimed rounds (pools start), then ``reps`` interleaved. Per label, ``samples`` holds
    each timed decision: its wall time, ``last_stats.extra``, the allocation's digest, the
    assignment and the fallbacks. (``scripts/bench_sim.py ipm`` uses it too.)"""

    name = "heterosched-lp"

    def __init__(self, min_active: int, makers: dict, reps: int, warmup: int = 1):
        self.inner = make_policy("heterosched-lp")
        self.min_active, self.makers, self.reps, self.warmup = min_active, makers, reps, warmup
        self.cluster = None
        self.samples: dict[str, list[dict]] = {}
        self.active = 0

    def reset(self, cluster, seed) -> None:
        self.cluster = cluster
        self.inner.reset(cluster, seed)

    def decide(self, view):
        if not self.samples and view.num_active >= self.min_active:
            self.active = view.num_active
            for rep in range(self.warmup + self.reps):
                for label, make in self.makers.items():
                    pol = make()
                    pol.reset(self.cluster, 0)
                    t0 = time.perf_counter()
                    out = pol.decide(view)
                    wall = time.perf_counter() - t0
                    if rep < self.warmup:
                        continue
                    self.samples.setdefault(label, []).append({
                        "decide_s": wall, "extra": dict(pol.last_stats.extra),
                        "digest": allocation_digest(pol.allocation), "assignment": out,
                        "fallbacks": pol.summary()["lp_fallbacks"]})
        return self.inner.decide(view)


def _pop_maker(pop: int, executor: str, workers: int):
    return lambda: LPPolicy(f"pop-{pop}", pop=pop, pop_workers=workers, pop_executor=executor)


def measure(n: int, pop: int, configs, reps: int) -> dict:
    cluster = get_cluster("large-2048")
    spec = f"gavel:rate={n * 12000},jobs={n},seed=0,mix=llm,duration_scale=0.5"
    probe = SnapshotProbe(int(0.9 * n), {e: _pop_maker(pop, e, w) for e, w in configs}, reps)
    sim = Simulator(cluster, load_workload(spec, cluster), probe, SimConfig(max_time_s=1800.0))
    sim.run()
    if not probe.samples:
        raise SystemExit(f"no round reached {int(0.9 * n)} active jobs for N = {n}")
    digests = {s["digest"] for runs in probe.samples.values() for s in runs}
    out = {"n": n, "pop": pop, "active": probe.active, "identical": len(digests) == 1,
           "executors": {}}
    for executor, runs in probe.samples.items():
        out["executors"][executor] = {
            "decide_s": statistics.median(r["decide_s"] for r in runs),
            "slowest_part_s": statistics.median(r["extra"]["pop_parallel_s"] for r in runs),
            "sequential_s": statistics.median(r["extra"]["pop_sequential_s"] for r in runs),
            "fallbacks": sum(r["fallbacks"] for r in runs), "reps": len(runs)}
    return out


def table(results: list[dict], workers: int) -> str:
    rows = []
    for r in results:
        ser = r["executors"]["serial"]["decide_s"]
        for executor, e in r["executors"].items():
            rows.append([str(r["n"]), str(r["active"]), f"pop-{r['pop']}", executor,
                         "1" if executor == "serial" else str(workers),
                         f"{e['decide_s']:.3f}", f"{e['decide_s'] / ser:.2f}",
                         f"{e['slowest_part_s']:.3f}" if executor == "serial" else "–",
                         "yes" if r["identical"] else "**NO**"])
    return markdown_table(["N", "active", "policy", "executor", "workers",
                           "decision median s", "÷ serial", "slowest part s (ideal)",
                           "same allocation"], rows, text_cols=("policy", "executor"))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--sizes", type=int_list(1), default="500,1000,2000",
                    help="N, comma-separated")
    ap.add_argument("--pops", type=int_list(2), default="2,4,8",
                    help=f"K of pop-K (2 <= K <= {MAX_POP_PARTS}), comma-separated")
    ap.add_argument("--executors", default=",".join(EXECUTORS),
                    help=f"comma-separated, from {', '.join(EXECUTORS)} (serial always runs)")
    ap.add_argument("--workers", type=positive_int, default=2, help="parts at a time (2)")
    ap.add_argument("--reps", type=positive_int, default=3,
                    help="decisions per configuration (3)")
    ap.add_argument("--json", action="store_true", help="one JSON object on stdout")
    args = ap.parse_args()
    over = [k for k in args.pops if k > MAX_POP_PARTS]
    if over:                   # (refused after the work before: pop-2's results were lost)
        ap.error(f"--pops: K must be at most {MAX_POP_PARTS}, got {over[0]}")
    named = args.executors.split(",")
    if "" in (e.strip() for e in named):
        ap.error(f"--executors: an empty entry in {args.executors!r}")
    executors = ["serial"] + [e.strip() for e in named if e.strip() != "serial"]
    for e in executors:
        if e not in EXECUTORS:
            ap.error(f"--executors: unknown executor {e!r} (choose from {', '.join(EXECUTORS)})")
    configs = [(e, 1 if e == "serial" else args.workers) for e in executors]
    if "ray" in executors:
        import ray
        ray.init(num_cpus=args.workers, include_dashboard=False, log_to_driver=False)
    load_before = os.getloadavg()
    results = []
    for n in args.sizes:
        for pop in args.pops:
            results.append(measure(n, pop, configs, args.reps))
            if not args.json:
                print(f"N={n} pop-{pop}: " + ", ".join(
                    f"{e} {v['decide_s']:.3f}s" for e, v in results[-1]["executors"].items()),
                    file=sys.stderr)
    load = {"before": load_before, "after": os.getloadavg()}
    if args.json:
        print(json.dumps({"workers": args.workers, "results": results, "load": load}, indent=2))
        return
    print(table(results, args.workers))
    print(f"\nload average (1, 5, 15 min) before {load_before}, after {load['after']}; "
          f"{os.cpu_count()} CPUs")


if __name__ == "__main__":
    main()
