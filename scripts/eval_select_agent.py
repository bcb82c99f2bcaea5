"""Evaluate a MaskablePPO agent trained on hsched/Schedule-v0 (select mode) against the LP
reference and the baselines, on held-out seeds of the smoke scenario.

    python scripts/eval_select_agent.py runs/schedule-ppo/model.zip [--seeds 2]

The agent acts deterministically with its action mask. The other policies run through
``hsched evaluate``'s harness on the same scenario and seeds. SB3 checkpoints are
code-bearing (pickled objects): load only your own.
"""

from __future__ import annotations

import argparse
import json
import sys
import time

import gymnasium as gym
import numpy as np

import hsched_env  # noqa: F401
from agents.evaluate import SMOKE, evaluate, heldout_seeds


def run_agent(model, scenario, seed: int, config: dict) -> dict:
    env = gym.make("hsched/Schedule-v0", cluster=scenario.cluster, workload=scenario.workload,
                   job_candidates=SMOKE.job_candidates, round_s=SMOKE.round_s,
                   restart_s=SMOKE.restart_s, **config)
    obs, _ = env.reset(seed=seed)
    steps, t0 = 0, time.perf_counter()
    while True:
        action, _ = model.predict(obs, action_masks=env.unwrapped.action_masks(),
                                  deterministic=True)
        obs, _, terminated, truncated, info = env.step(int(action))
        steps += 1
        if terminated or truncated:
            m = info["metrics"]
            m["steps"], m["wall_s"] = steps, time.perf_counter() - t0
            m["end_reason"] = info["end_reason"]
            return m


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("model")
    ap.add_argument("--seeds", type=int, default=2)
    ap.add_argument("--policies", default="pure-lp,topk,gavel,fifo")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args(argv)
    import torch
    from sb3_contrib import MaskablePPO
    torch.set_num_threads(1)
    model = MaskablePPO.load(args.model, device="cpu")
    seeds = heldout_seeds(args.seeds)
    scenario = SMOKE.scenarios[0]
    agent = [run_agent(model, scenario, s, {}) for s in seeds]
    report = evaluate(SMOKE, args.policies.split(","), seeds=seeds, progress=False)
    rows = [{"policy": "maskable-ppo (select mode)",
             "done": f"{sum(m['jobs_completed'] for m in agent)}/"
                     f"{sum(m['jobs_total'] for m in agent)}",
             "avg_jct_h": float(np.mean([m["avg_jct_s"] for m in agent])) / 3600,
             "makespan_h": float(np.mean([m["makespan_s"] for m in agent])) / 3600,
             "ftf_worst": float(np.max([m["ftf_worst"] for m in agent])),
             "end": ",".join(m["end_reason"] for m in agent)}]
    for r in report.rows:
        rows.append({"policy": r["policy"], "avg_jct_h": r["avg_jct_s"] / 3600,
                     "makespan_h": r["makespan_s"] / 3600, "ftf_worst": r["ftf_worst"]})
    ref = next(r["avg_jct_h"] for r in rows if r["policy"] == "pure-lp")
    for r in rows:
        r["jct_vs_lp"] = r["avg_jct_h"] / ref
    if args.json:
        json.dump({"seeds": seeds, "rows": rows}, sys.stdout, indent=1)
        print()
    else:
        print(f"{scenario.cluster} {scenario.workload}, held-out seeds {seeds}")
        print(f"{'policy':<28s} {'avg JCT h':>9s} {'× LP':>6s} {'makespan h':>10s} "
              f"{'FTF worst':>9s}")
        for r in rows:
            print(f"{r['policy']:<28s} {r['avg_jct_h']:9.2f} {r['jct_vs_lp']:6.2f} "
                  f"{r['makespan_h']:10.1f} {r['ftf_worst']:9.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
