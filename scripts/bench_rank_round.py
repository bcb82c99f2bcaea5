"""CPU time of one hsched/Rank-v0 round (the LP decision over the kept candidates, placing it,
the next round's observation), for A/B comparisons of two checkouts on a shared machine.

    python scripts/bench_rank_round.py [--keep 0.5] [--rounds 1500] [--warmup 60]

Rank-v0 on ``sia-64`` with ``gavel:rate=4,jobs=100`` (``bench_env.py``'s scenario), each
candidate kept with probability ``--keep`` (1 or more: every candidate), a new episode (a new
seed) whenever one ends; prints the CPU milliseconds per round (``time.process_time`` over
``--rounds`` rounds after ``--warmup``), which a contended host does not inflate as it does
wall-clock rates. To compare two commits, alternate processes, each importing its own code::

    for i in 1 2 3 4 5; do
        PYTHONPATH=/path/to/old/worktree .venv/bin/python scripts/bench_rank_round.py
        PYTHONPATH=. .venv/bin/python scripts/bench_rank_round.py
    done

and compare the medians (BENCHMARKS.md, "Session 35").
"""

from __future__ import annotations

import argparse
import json
import time

import gymnasium as gym
import numpy as np

import hsched_env  # noqa: F401  (registers the environments)

CLUSTER = "sia-64"
WORKLOAD = "gavel:rate=4,jobs=100"


def cpu_ms_per_round(keep: float, rounds: int, warmup: int, seed: int = 0) -> float:
    """CPU milliseconds per Rank-v0 round, keeping each candidate with probability ``keep``."""
    env = gym.make("hsched/Rank-v0", cluster=CLUSTER, workload=WORKLOAD, measure_time=True)
    K = env.unwrapped.K
    rng = np.random.default_rng(seed)
    env.reset(seed=seed)

    def run(n: int) -> None:
        for _ in range(n):
            _, _, terminated, truncated, _ = env.step((rng.random(K) < keep).astype(np.int8))
            if terminated or truncated:
                env.reset()

    run(warmup)
    c0 = time.process_time()
    run(rounds)
    return 1e3 * (time.process_time() - c0) / rounds


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0].replace("\n", " "),
                                 formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    ap.add_argument("--keep", type=float, default=0.5,
                    help="probability of keeping each candidate (1: every candidate)")
    ap.add_argument("--rounds", type=int, default=1500, help="rounds measured")
    ap.add_argument("--warmup", type=int, default=60, help="rounds run before measuring")
    ap.add_argument("--seed", type=int, default=0, help="first episode's seed and the keep bits'")
    ap.add_argument("--json", action="store_true", help="one JSON object")
    args = ap.parse_args(argv)
    if args.rounds < 1 or args.warmup < 0 or not args.keep > 0:
        ap.error("--rounds must be >= 1, --warmup >= 0 and --keep > 0")
    ms = cpu_ms_per_round(args.keep, args.rounds, args.warmup, args.seed)
    if args.json:
        print(json.dumps({"keep": args.keep, "rounds": args.rounds, "cpu_ms_per_round": ms}))
    else:
        print(f"{ms:.3f} CPU-ms per round (keep {args.keep:g}, {args.rounds} rounds after "
              f"{args.warmup})")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
