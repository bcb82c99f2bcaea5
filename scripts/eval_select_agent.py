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
import math
import sys
import time
from pathlib import Path

import gymnasium as gym
import numpy as np

import hsched_env  # noqa: F401
from agents.evaluate import SMOKE, evaluate, heldout_seeds
from agents.policy_entries import SB3Scheduler, load_sb3, observation_mismatch, parse_policies
from agents.report import json_ready
from hsched_env.errors import ConfigError
from lp_baseline.registry import split_policy_list

sys.path.append(str(Path(__file__).resolve().parent))       # script_args, next to this file
from script_args import one_line_errors, positive_int  # noqa: E402


def make_env(scenario, config: dict):
    return gym.make("hsched/Schedule-v0", cluster=scenario.cluster, workload=scenario.workload,
                    job_candidates=SMOKE.job_candidates, round_s=SMOKE.round_s,
                    restart_s=SMOKE.restart_s, **config)


def load_model(ap: argparse.ArgumentParser, path: str, scenario):
    """The MaskablePPO model of ``path`` (a select-mode model for ``scenario``'s environment),
    or ``ap.error`` saying what the file is instead."""
    if not Path(path).is_file() and Path(path + ".zip").is_file():
        path += ".zip"                              # SB3's own load adds the suffix too
    try:
        agent = load_sb3(path, trust=True)          # our own runs: the docstring's warning
    except ConfigError as exc:
        ap.error(f"model: {exc.reason}")
    if not isinstance(agent, SB3Scheduler):
        ap.error(f"model: {path} is a rank-mode model (hsched/Rank-v0, MultiBinary keep "
                 f"bits); this script evaluates MaskablePPO on hsched/Schedule-v0 (hsched "
                 f"evaluate --policies sb3:{path} --trust-sb3-zip takes both)")
    if agent.algo != "maskable-ppo":
        ap.error(f"model: {path} is a {agent.algo} model; this script evaluates MaskablePPO "
                 f"(it acts with the action mask; hsched evaluate --policies sb3:{path} "
                 f"--trust-sb3-zip takes other algorithms)")
    env = make_env(scenario, {}).unwrapped
    bad = observation_mismatch(agent.observation_space, env.observation_space, env.K)
    env.close()
    if bad:
        ap.error(f"model: {path}: {bad}")
    return agent.model


def run_agent(model, scenario, seed: int, config: dict) -> dict:
    env = make_env(scenario, config)
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


@one_line_errors
def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=" ".join(__doc__.split("\n\n")[0].split()))
    ap.add_argument("model", help="a MaskablePPO model zip trained on hsched/Schedule-v0")
    ap.add_argument("--seeds", type=positive_int, default=2, help="first N held-out seeds (2)")
    ap.add_argument("--policies", default="pure-lp,topk,gavel,fifo",
                    help="comma-separated, with pure-lp (the × LP column's reference)")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args(argv)
    seeds = heldout_seeds(args.seeds)
    policies = split_policy_list(args.policies)
    if "pure-lp" not in policies:
        ap.error("--policies: needs pure-lp (the reference of the × LP column)")
    parse_policies(policies)                         # an unknown name: before the agent runs
    scenario = SMOKE.scenarios[0]
    model = load_model(ap, args.model, scenario)
    agent = [run_agent(model, scenario, s, {}) for s in seeds]
    report = evaluate(SMOKE, policies, seeds=seeds, progress=False)
    rows = [{"policy": "maskable-ppo (select mode)",
             "done": f"{sum(m['jobs_completed'] for m in agent)}/"
                     f"{sum(m['jobs_total'] for m in agent)}",
             # seed means, as the harness's rows below (the worst FTF was the seeds' max)
             "avg_jct_h": float(np.nanmean([m["avg_jct_s"] for m in agent])) / 3600,
             "makespan_h": (float(np.mean([m["makespan_s"] for m in agent])) / 3600
                            if all(m.get("makespan_s") is not None
                                   and math.isfinite(m["makespan_s"]) for m in agent)
                            else math.nan),
             "ftf_worst": float(np.nanmean([m["ftf_worst"] for m in agent])),
             "end": ",".join(m["end_reason"] for m in agent)}]
    for r in report.rows:
        rows.append({"policy": r["policy"], "done": f"{r['jobs_completed']}/{r['jobs_total']}",
                     "avg_jct_h": r["avg_jct_s"] / 3600,
                     "makespan_h": r["makespan_s"] / 3600, "ftf_worst": r["ftf_worst"]})
    ref = next(r["avg_jct_h"] for r in rows if r["policy"] == "pure-lp")
    for r in rows:
        r["jct_vs_lp"] = r["avg_jct_h"] / ref
    if args.json:
        # a figure a run does not have (a makespan of a run that did not finish every job)
        # is null: JSON has no NaN
        json.dump(json_ready({"seeds": seeds, "rows": rows}), sys.stdout, indent=1,
                  allow_nan=False)
        print()
    else:
        print(f"{scenario.cluster} {scenario.workload}, held-out seeds {seeds}")
        print(f"{'policy':<28s} {'done':>9s} {'avg JCT h':>9s} {'× LP':>6s} "
              f"{'makespan h':>10s} {'FTF worst':>9s}")
        for r in rows:
            print(f"{r['policy']:<28s} {r['done']:>9s} {_shown(r['avg_jct_h'], 9, 2)} "
                  f"{_shown(r['jct_vs_lp'], 6, 2)} {_shown(r['makespan_h'], 10, 1)} "
                  f"{_shown(r['ftf_worst'], 9, 2)}")
        print("means over the seeds; avg JCT over each policy's own finished jobs (done), so "
              "× LP compares different jobs where a policy left some unfinished: hsched "
              "evaluate --policies pure-lp,sb3:MODEL.zip --trust-sb3-zip compares the jobs "
              "every policy finished")
    return 0


def _shown(value: float, width: int, digits: int) -> str:
    """``value`` right-aligned in ``width`` with ``digits`` decimals, or ``n/a`` when it is not
    finite (a makespan of a run that did not finish every job)."""
    return f"{value:{width}.{digits}f}" if math.isfinite(value) else f"{'n/a':>{width}s}"


if __name__ == "__main__":
    sys.exit(main())
