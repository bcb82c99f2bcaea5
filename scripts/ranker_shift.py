"""A ranker's recall of the LP's support on the LP's states against its own (covariate shift).

For each held-out seed of a suite's scenario, the episode is run twice on ``hsched/Rank-v0``:
once stepped by the pure LP (every candidate kept) and once by the ranker's own keep bits. In
every round of both, the ranker's keep bits are compared with the support of the full LP on
that round's state (``recall@k`` as ``hsched evaluate`` measures it). Behaviour cloning trains
on the LP's states; at run time the ranker meets the states its own decisions lead to, so a
gap between the two recalls is what DAgger (``hsched train --dagger``) is for.

    python scripts/ranker_shift.py --suite large-family --scenario 0 --seeds 2
    python scripts/ranker_shift.py --suite large --ranker runs/ranker/ranker.pt
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np

from agents.policy_entries import parse_policies
from agents.runners import kept_support_recall, make_scenario_env, rank_slots_bound
from agents.suites import get_suite, heldout_seeds
from hsched_env.cluster import get_cluster
from hsched_env.envs.rank import RankEnv
from hsched_env.errors import ConfigError, UnknownNameError
from hsched_env.workloads import load_workload
from lp_baseline.registry import make_policy

sys.path.append(str(Path(__file__).resolve().parent))       # script_args, next to this file
from script_args import nonnegative_int, one_line_errors, positive_int  # noqa: E402


def slots_for(entry, suite, scenario, seed: int) -> int:
    """K as ``hsched evaluate`` sets it: the agent's own, else every candidate of the seed's
    workload, so no round overflows."""
    if entry.slots:
        return entry.slots
    cluster = get_cluster(scenario.cluster)
    return rank_slots_bound(suite, scenario, cluster,
                            load_workload(scenario.workload_for(seed), cluster))


def recalls(entry, suite, scenario, seed: int, drive: str,
            slots: int | None = None) -> list[float]:
    """Per round of one episode stepped by ``drive`` (``"lp"`` or ``"ranker"``), the ranker's
    recall of the full LP's support on that round's state (rounds without a support skipped).
    ``slots``: K (``None``: ``slots_for``)."""
    support_lp = make_policy("heterosched-lp")
    if slots is None:
        slots = slots_for(entry, suite, scenario, seed)
    env = make_scenario_env(RankEnv, entry, suite, scenario, slots)
    obs, _ = env.reset(seed=seed)
    out, done = [], env.simulator.finished
    while not done:
        keep = np.asarray(entry.ranker.keep(obs, env)).astype(bool)
        value = kept_support_recall(support_lp, env.slots, keep)
        if value is not None:
            out.append(value)
        step = keep if drive == "ranker" else np.ones(env.K, dtype=bool)
        obs, _, terminated, truncated, _ = env.step(step.astype(np.int8))
        done = terminated or truncated
    return out


def ranker_spec(text: str) -> str:
    """``--ranker`` as a ``parse_policies`` name: the ranker forms (``ranker``,
    ``ranker:PATH``, ``ranker@R``, ...) as they are, anything else a ranker file's path
    (``PATH`` -> ``ranker:PATH``). A seed-mode ranker (``ranker-seed...``) is refused: it
    prunes nothing, and its bits (the start of the LP's column generation, none on a round
    below its gate) are no kept set whose recall this script could measure."""
    if text == "ranker-seed" or text.startswith(("ranker-seed:", "ranker-seed@")):
        raise ConfigError(f"{text!r} is a seed-mode ranker: it prunes nothing (its bits only "
                          f"start the LP's column generation), so it has no recall of the "
                          f"LP's support to measure; give a prune-mode ranker (ranker, "
                          f"ranker:PATH)")
    if text == "ranker" or text.startswith(("ranker:", "ranker@")):
        return text
    return f"ranker:{text}"


@one_line_errors
def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--suite", default="large-family", help="an evaluation suite (large-family)")
    ap.add_argument("--scenario", type=nonnegative_int, default=0,
                    help="its scenario, by index (0)")
    ap.add_argument("--seeds", type=positive_int, default=1, help="first N held-out seeds (1)")
    ap.add_argument("--ranker", default="ranker",
                    help="ranker (the shipped file, default), a ranker file PATH.pt or "
                         "ranker:PATH.pt")
    args = ap.parse_args(argv)
    try:
        suite = get_suite(args.suite)
    except UnknownNameError as exc:
        ap.error(f"--suite: {exc}")
    if not 0 <= args.scenario < len(suite.scenarios):
        ap.error(f"--scenario: {args.suite} has {len(suite.scenarios)} scenarios")
    scenario = suite.scenarios[args.scenario]
    seeds = heldout_seeds(args.seeds)
    try:
        # its own keeps, without audits
        (entry,) = parse_policies([ranker_spec(args.ranker)], audit_every=0)
    except ConfigError as exc:          # parse_policies names its own flag, --policies
        ap.error(f"--ranker: {(exc.source + ': ') if exc.source else ''}{exc.reason}"
                 if exc.field == "--policies" else f"--ranker: {exc}")
    if entry.ranker is None:
        ap.error(f"--ranker: {args.ranker!r} is not a ranker file")
    if hasattr(entry.ranker, "max_kept_fraction"):
        # the network's own keep bits on every round: a round its gates solve whole (below
        # the file's candidate gate, or unsure) would count as recall 1 (on smoke every
        # round is below the shipped file's gate: "recall 1.000")
        entry.ranker.max_kept_fraction = 1.0
        entry.ranker.gate_candidates = 0
    print(f"{entry.label} on {scenario.name} ({scenario.workload}), its gates off; recall of "
          f"the full LP's support per round, mean (first half / second half of the rounds)")
    for seed in seeds:
        slots = slots_for(entry, suite, scenario, seed)          # once for both episodes
        for drive in ("lp", "ranker"):
            r = recalls(entry, suite, scenario, seed, drive, slots)
            half = len(r) // 2
            print(f"  seed {seed}, stepped by the {drive:6s}: {len(r)} rounds, recall "
                  f"{np.mean(r):.3f} ({np.mean(r[:half]):.3f} / {np.mean(r[half:]):.3f})",
                  flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
