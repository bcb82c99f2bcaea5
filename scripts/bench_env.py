"""Environment speed: steps/s of hsched/Schedule-v0 and hsched/Rank-v0 with random actions,
against Gymnasium's CartPole-v1 measured in the same process (the ratio is what to compare
across machines).

    python scripts/bench_env.py [--seconds 5] [--repeats 5] [--markdown]

Select mode takes a uniformly random *valid* action each step (commit included), as an agent
with a mask does; rank mode keeps each candidate with probability 1/2. Every measurement
includes the environment's resets and the random-action sampling (CartPole's too). The LP's
share of the time (the select mode's candidate filter, the rank mode's solve) is taken from
the simulator's per-round decision log and reported separately from the environment's own
time. Medians over ``--repeats`` runs of ``--seconds`` each, the configurations interleaved.
The ratio to CartPole is also given in CPU time (``time.process_time`` over the same windows):
on a shared or virtualized machine, time the process waits for a core inflates wall-clock
steps/s but not CPU seconds, so that ratio moves less between runs.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path

import gymnasium as gym
import numpy as np

import hsched_env  # noqa: F401  (registers the environments)
from hsched_env.defaults import EARLIER_DRAWS

sys.path.append(str(Path(__file__).resolve().parent))       # script_args, next to this file
from script_args import positive_int, positive_number  # noqa: E402

#: The environments' default scenario, with the jobs it drew before session 45 (Recommendation
#: on 2-8 GPUs too, docs/workloads.md), so the rates compare with the earlier sessions'.
WORKLOAD = f"gavel:rate=4,jobs=100,{EARLIER_DRAWS}"
CLUSTER = "sia-64"
#: Every environment is made with Gymnasium's passive checker wrapper, as ``gym.make`` makes
#: CartPole: the registered hsched ids skip it by default since session 59, and a wrapper
#: layer fewer would tilt the ratio (every figure before then had it on both sides).
SAME_WRAPPERS = {"disable_env_checker": False}


def run_cartpole(seconds: float, seed: int) -> dict:
    env = gym.make("CartPole-v1", **SAME_WRAPPERS)
    env.reset(seed=seed)
    env.action_space.seed(seed)
    steps, t0, c0 = 0, time.perf_counter(), time.process_time()
    while True:
        for _ in range(1000):
            _, _, term, trunc, _ = env.step(env.action_space.sample())
            steps += 1
            if term or trunc:
                env.reset()
        elapsed = time.perf_counter() - t0
        if elapsed >= seconds:
            return {"steps": steps, "seconds": elapsed, "lp_seconds": 0.0,
                    "cpu_seconds": time.process_time() - c0}


def run_select(seconds: float, seed: int, **kwargs) -> dict:
    env = gym.make("hsched/Schedule-v0", cluster=CLUSTER, workload=WORKLOAD, **SAME_WRAPPERS,
                   **kwargs)
    unwrapped = env.unwrapped
    rng = np.random.default_rng(seed)
    env.reset(seed=seed)
    env.step(unwrapped.K)                      # warm the planner cache before timing
    env.reset(seed=seed)
    lp_filter = kwargs.get("candidate_filter", "lp") == "lp"
    steps, lp_s, t0, c0 = 0, 0.0, time.perf_counter(), time.process_time()
    while True:
        for _ in range(200):
            valid = np.flatnonzero(unwrapped.action_masks())
            _, _, term, trunc, _ = env.step(int(valid[rng.integers(valid.size)]))
            steps += 1
            if term or trunc:
                lp_s += sum(unwrapped.simulator.result().decision_s) if lp_filter else 0.0
                env.reset()
        elapsed = time.perf_counter() - t0
        if elapsed >= seconds:
            if lp_filter:
                lp_s += sum(unwrapped.simulator.result().decision_s)
            return {"steps": steps, "seconds": elapsed, "lp_seconds": lp_s,
                    "cpu_seconds": time.process_time() - c0}


def run_rank(seconds: float, seed: int, keep: float = 0.5, **kwargs) -> dict:
    env = gym.make("hsched/Rank-v0", cluster=CLUSTER, workload=WORKLOAD, measure_time=True,
                   **SAME_WRAPPERS, **kwargs)
    unwrapped = env.unwrapped
    rng = np.random.default_rng(seed)
    env.reset(seed=seed)
    steps, lp_s, t0, c0 = 0, 0.0, time.perf_counter(), time.process_time()
    while True:
        for _ in range(20):
            action = (rng.random(unwrapped.K) < keep).astype(np.int8)
            _, _, term, trunc, info = env.step(action)
            lp_s += info["decision_time_s"]
            steps += 1
            if term or trunc:
                env.reset()
        elapsed = time.perf_counter() - t0
        if elapsed >= seconds:
            return {"steps": steps, "seconds": elapsed, "lp_seconds": lp_s,
                    "cpu_seconds": time.process_time() - c0}


CONFIGS = {
    "CartPole-v1": (run_cartpole, {}),
    "Schedule-v0 filter=score": (run_select, {"candidate_filter": "score"}),
    "Schedule-v0 filter=lp (heterosched-lp)": (run_select, {"candidate_filter": "lp"}),
    "Schedule-v0 filter=lp (lp-on-change)": (run_select, {"candidate_filter": "lp",
                                                          "lp_policy": "lp-on-change"}),
    "Rank-v0 keep 1/2": (run_rank, {"keep": 0.5}),
    "Rank-v0 keep all": (run_rank, {"keep": 1.01}),
}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0].replace("\n", " "),
                                 formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    ap.add_argument("--seconds", type=positive_number, default=5.0,
                    help="length of each measured run (seconds of wall-clock time)")
    ap.add_argument("--repeats", type=positive_int, default=5,
                    help="runs per configuration, interleaved; the medians are reported")
    ap.add_argument("--only", default=None,
                    help="comma-separated substrings of the configurations to run (CartPole "
                         f"is always measured): {', '.join(CONFIGS)}")
    ap.add_argument("--markdown", action="store_true", help="a Markdown table")
    ap.add_argument("--json", action="store_true", help="one JSON object")
    args = ap.parse_args(argv)
    if args.json and args.markdown:             # (JSON won, silently)
        ap.error("--json and --markdown: give one of them")
    only = None if args.only is None else [o.strip() for o in args.only.split(",")]
    if only is not None:
        if not all(only):
            ap.error(f"--only: an empty entry in {args.only!r} (a stray comma?)")
        unmatched = [o for o in only if not any(o in n for n in CONFIGS)]
        if unmatched:
            ap.error(f"--only: {', '.join(map(repr, unmatched))} matches no configuration "
                     f"(configurations: {', '.join(CONFIGS)})")
    names = list(CONFIGS) if not only else [n for n in CONFIGS if any(o in n for o in only)]
    if "CartPole-v1" not in names:
        names.insert(0, "CartPole-v1")
    runs: dict[str, list[dict]] = {n: [] for n in names}
    for rep in range(args.repeats):
        for name in names:
            fn, kw = CONFIGS[name]
            runs[name].append(fn(args.seconds, seed=rep, **kw))
            r = runs[name][-1]
            print(f"[{rep + 1}/{args.repeats}] {name}: {r['steps'] / r['seconds']:,.0f} steps/s",
                  file=sys.stderr)
    cart = statistics.median(r["steps"] / r["seconds"] for r in runs["CartPole-v1"])
    cart_cpu = statistics.median(r["steps"] / r["cpu_seconds"] for r in runs["CartPole-v1"])
    rows = []
    for name in names:
        sps = statistics.median(r["steps"] / r["seconds"] for r in runs[name])
        own = statistics.median(r["steps"] / max(r["seconds"] - r["lp_seconds"], 1e-9)
                                for r in runs[name])
        lp_share = statistics.median(r["lp_seconds"] / r["seconds"] for r in runs[name])
        cpu = statistics.median(r["steps"] / r["cpu_seconds"] for r in runs[name])
        rows.append({"config": name, "steps_per_s": sps, "ratio_to_cartpole": sps / cart,
                     "lp_time_share": lp_share, "env_only_steps_per_s": own,
                     "steps_per_cpu_s": cpu, "cpu_ratio_to_cartpole": cpu / cart_cpu})
    if args.json:
        json.dump(rows, sys.stdout, indent=1)
        print()
    elif args.markdown:
        print("| configuration | steps/s (median) | × CartPole | LP share of time | "
              "steps/s without LP time | × CartPole in CPU time |")
        print("|---|---:|---:|---:|---:|---:|")
        for r in rows:
            print(f"| {r['config']} | {r['steps_per_s']:,.0f} | {r['ratio_to_cartpole']:.3g} | "
                  f"{r['lp_time_share']:.0%} | {r['env_only_steps_per_s']:,.0f} | "
                  f"{r['cpu_ratio_to_cartpole']:.3g} |")
    else:
        for r in rows:
            print(f"{r['config']:<42s} {r['steps_per_s']:>10,.0f} steps/s  "
                  f"x{r['ratio_to_cartpole']:.3g} CartPole  LP {r['lp_time_share']:.0%}  "
                  f"without LP {r['env_only_steps_per_s']:,.0f}/s  "
                  f"x{r['cpu_ratio_to_cartpole']:.3g} CartPole in CPU time")
    return 0


if __name__ == "__main__":
    sys.exit(main())
