"""How much faster any "rank, then solve the LP" decision can be: the LP over its own support.

Issue 12 asks a learned ranker to cut the LP's decision time ≥ 10× at 2,000 active jobs (≥ 5×
at 500–1,000). A ranker can at best keep exactly the candidates the LP uses — its support — and
its decision then costs the LP over that kept set plus its own inference. This script measures
both halves of that bound on the ``large-family`` scenarios (``large-2048`` bursts that peak at
~500, ~1,000 and ~2,000 active jobs; the mean over their rounds is reported), on held-out
seeds, through the evaluation harness's rank-mode path
(``agents.runners.run_ranker``: ``hsched/Rank-v0`` with ``prune="lp"``, the shipped ranker's
setting, and the ``heterosched-lp`` LP, timed per round by the environment):

* ``keep-all`` — every candidate kept: the pure LP, measured in the same environment (the
  harness's ``pure-lp`` runs in the simulator; both are listed);
* ``oracle`` — keeps exactly the LP's support (``RankEnv.reference_action``: the candidates the
  full LP gives a share, computed on a copy of the LP; not timed). Under ``prune="lp"`` this
  reproduces the pure LP's schedule (checked: the same avg JCT). Its LP time is the fastest any
  ranker's LP part can be, and ``full ÷ oracle LP`` the speed-up of a ranker whose inference
  costs nothing;
* on the oracle's observations, the shipped network's inference time (``Ranker.scores``,
  ungated, ``agents/data/ranker.pt``; after one untimed warm-up call; the keep rule's few
  array operations after the scores are not included), timed separately:
  ``full ÷ (oracle LP + inference)`` is the speed-up of a perfect ranker as costly as the
  shipped one.

The bound holds for ``prune="lp"``, where the kept set restricts the LP solve only and the
rounding still reads every candidate. Under ``prune="all"`` the rounding, too, runs over the
kept candidates, so part of the per-job work this bound leaves would shrink (the oracle there
must also keep the rounding's fallbacks). Each oracle round runs its untimed reference solve
(on a deep copy of the LP, sharing no cache with it) just before the timed decision: warmer
CPU caches, if anything in the oracle's favour.

Per scenario: the rounds' mean and p99 decision times (all seeds together), the kept fraction,
the speed-up bounds (ratios of means, in the same run) and the per-seed avg-JCT check.

    .venv/bin/python scripts/bench_ranker_bound.py --markdown            # 3 seeds, ~10 min
    .venv/bin/python scripts/bench_ranker_bound.py --seeds 1 --scenarios large-2048-500
    .venv/bin/python scripts/bench_ranker_bound.py --suite smoke --seeds 1 --markdown   # seconds
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

import numpy as np
from tqdm import tqdm

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from agents.policy_entries import PolicyEntry  # noqa: E402
from agents.ranker import Ranker, shipped_ranker_path  # noqa: E402
from agents.evaluate import run_one  # noqa: E402
from agents.runners import rank_slots_bound  # noqa: E402
from agents.suites import get_suite, heldout_seeds  # noqa: E402
from hsched_env.cluster import get_cluster  # noqa: E402
from hsched_env.errors import ConfigError  # noqa: E402
from hsched_env.text import markdown_table  # noqa: E402
from hsched_env.workloads import load_workload  # noqa: E402
from lp_baseline.registry import make_policy  # noqa: E402

PRUNE = "lp"      # the shipped ranker's scope: the kept set restricts the LP solve only


class KeepAll:
    """Keeps every candidate: the pure LP through ``RankEnv``."""

    name = "keep-all"

    def keep(self, obs, env):
        return (np.asarray(obs["valid"]) > 0.5).astype(np.int8)


class SupportOracle:
    """Keeps exactly the LP's support (``RankEnv.reference_action``). With ``ranker``, also
    times that ranker's inference on the same observation (``inference_s``); its scores are
    not used."""

    name = "oracle"

    def __init__(self, ranker: Ranker | None = None) -> None:
        self.ranker = ranker
        self.inference_s: list[float] = []

    def keep(self, obs, env):
        if self.ranker is not None:
            if not self.inference_s:
                self.ranker.scores(obs, env)        # untimed warm-up (PyTorch's first call)
            t0 = time.perf_counter()
            self.ranker.scores(obs, env)
            self.inference_s.append(time.perf_counter() - t0)
        return env.unwrapped.reference_action()


def _stats(x) -> tuple[float, float]:
    x = np.asarray(x, dtype=float)
    return float(x.mean()), float(np.percentile(x, 99))


def measure(scenario_names: list[str] | None, seeds: int, progress: bool,
            suite: str = "large-family") -> list[dict]:
    """The bound's figures per scenario of ``suite`` (``scenario_names``: a subset), over
    ``seeds`` held-out seeds: one dict per scenario (see ``main``'s table)."""
    suite = get_suite(suite)
    scenarios = [s for s in suite.scenarios if scenario_names is None or s.name in scenario_names]
    if scenario_names is not None and len(scenarios) != len(scenario_names):
        known = ", ".join(s.name for s in suite.scenarios)
        raise ConfigError(f"unknown scenario in {scenario_names} (suite {suite.name}: {known})",
                          field="--scenarios")
    ranker = Ranker.load(shipped_ranker_path(), gate_candidates=0)
    support_lp = make_policy("heterosched-lp")
    rows = []
    bar = tqdm(total=len(scenarios) * seeds * 3, desc="ranker bound", unit="run",
               disable=not progress, leave=False)
    for sc in scenarios:
        cluster = get_cluster(sc.cluster)
        acc = {"pure": [], "all": [], "oracle": [], "inference": [], "kept": [], "jobs": [],
               "jct": []}
        for seed in heldout_seeds(seeds):
            workload = load_workload(sc.workload_for(seed), cluster)
            slots = rank_slots_bound(suite, sc, cluster, workload)
            oracle = SupportOracle(ranker)
            runs = {}
            for key, entry in (
                    ("pure", PolicyEntry("pure-lp", "simulator", policy_name="heterosched-lp")),
                    ("all", PolicyEntry("keep-all", "ranker", ranker=KeepAll(),
                                        env_kwargs={"prune": PRUNE})),
                    ("oracle", PolicyEntry("oracle", "ranker", ranker=oracle,
                                           env_kwargs={"prune": PRUNE}))):
                bar.set_postfix_str(f"{sc.name} seed {seed} {key}")
                runs[key] = run_one(entry, suite, sc, seed, cluster, workload, support_lp,
                                    slots)
                bar.update(1)
            acc["pure"].extend(runs["pure"].lp_decision_s)
            acc["all"].extend(runs["all"].lp_decision_s)
            acc["oracle"].extend(runs["oracle"].lp_decision_s)
            acc["inference"].extend(oracle.inference_s)
            acc["kept"].append(runs["oracle"].kept_frac_mean)
            acc["jobs"].append(float(np.mean(runs["pure"].active_jobs)))
            acc["jct"].append({k: r.metrics.get("avg_jct_s") for k, r in runs.items()})
        pure, full, orc, inf = (_stats(acc[k]) for k in ("pure", "all", "oracle", "inference"))
        rows.append({
            "scenario": sc.name, "seeds": seeds, "rounds": len(acc["all"]),
            "active_jobs_mean": float(np.mean(acc["jobs"])),
            "pure_lp_ms": [v * 1e3 for v in pure], "keep_all_ms": [v * 1e3 for v in full],
            "oracle_lp_ms": [v * 1e3 for v in orc], "inference_ms": [v * 1e3 for v in inf],
            "oracle_kept_frac": float(np.mean(acc["kept"])),
            "bound_free_inference": full[0] / orc[0],
            "bound_shipped_inference": full[0] / (orc[0] + inf[0]),
            "avg_jct_s": acc["jct"],
        })
    bar.close()
    return rows


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seeds", type=int, default=3, help="held-out seeds (default 3)")
    ap.add_argument("--suite", default="large-family",
                    help="evaluation suite (default large-family; smoke: a check in seconds)")
    ap.add_argument("--scenarios", default=None,
                    help="comma-separated scenario names of the suite (default: all)")
    ap.add_argument("--markdown", action="store_true", help="print a markdown table")
    ap.add_argument("--out", default=None, help="write the results as JSON here")
    ap.add_argument("--no-progress", action="store_true")
    args = ap.parse_args(argv)
    if args.seeds < 1:
        ap.error("--seeds must be >= 1")
    names = args.scenarios.split(",") if args.scenarios else None
    try:
        rows = measure(names, args.seeds, progress=not args.no_progress, suite=args.suite)
    except ConfigError as exc:
        ap.error(str(exc))
    if args.out:
        Path(args.out).write_text(json.dumps(rows, indent=1))
    if args.markdown:
        def fmt(pair):
            digits = 1 if pair[0] < 10 else 0
            return f"{pair[0]:.{digits}f} / {pair[1]:.{digits}f}"
        table = [[r["scenario"], f"{r['active_jobs_mean']:.0f}", str(r["rounds"]),
                  fmt(r["pure_lp_ms"]), fmt(r["keep_all_ms"]), fmt(r["oracle_lp_ms"]),
                  f"{r['oracle_kept_frac']:.1%}", fmt(r["inference_ms"]),
                  f"{r['bound_free_inference']:.2f}×", f"{r['bound_shipped_inference']:.2f}×"]
                 for r in rows]
        print(markdown_table(["scenario", "active jobs", "rounds", "pure LP ms (mean / p99)",
                              "keep-all ms", "LP over the support ms", "support kept",
                              "shipped inference ms", "bound, free inference",
                              "bound, shipped inference"], table, text_cols=(0,)))
        for r in rows:
            jct = "; ".join(", ".join(f"{k} {v / 3600:.3f} h" for k, v in s.items())
                            for s in r["avg_jct_s"])
            print(f"\n{r['scenario']} avg JCT per seed: {jct}")
        print(f"\nload average: {os.getloadavg()}")
    else:
        print(json.dumps(rows, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
