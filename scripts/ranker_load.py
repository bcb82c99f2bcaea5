"""Where the ranker is in its element, on training data: each ranked round's kept share, load
and recall — the figures the shipped file's unsure gate (``max_kept_fraction`` 0.35) was chosen
from, and an overload gate was not (BENCHMARKS.md, "Session 40: the unsure gate chosen for the
shipped file").

The script runs a ranker file (default the shipped one) **without** its unsure gate (its
candidate gate stays) through the evaluation harness's rank-mode path, on **training** seeds
only (a gate chosen on the evaluation's seeds would fit the evaluation): the ``large-family``
bursts (``--bursts``, the regime the ranker is trained for and evaluated on) and 72-hour
Philly windows (``--windows``, an overloaded regime the shipped file was not trained on; the
default windows avoid 2017-10-02 to 10-12, the dates of the held-out Philly evaluation in
BENCHMARKS.md, though session 34 measured them too). For every round it ranks it also solves
the whole LP, and prints per scenario the kept share and the load (the GPUs the active jobs
request ÷ the cluster's GPUs; least, median, largest), the recall of the LP's support (mean,
least; the evaluation's recall, ``agents.runners.kept_support_recall``) and the median LP
support per active job (about 1 in a burst, where every job runs; far less on an overloaded
window, where the LP picks which jobs run)::

    .venv/bin/python scripts/ranker_load.py                       # the session-40 figures
    .venv/bin/python scripts/ranker_load.py --bursts 500 --seeds 11,12 --windows ""

``--json FILE`` writes every ranked round (scenario, seed, round, load, kept share, recall).
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import numpy as np  # noqa: E402

from agents.policy_entries import parse_policies  # noqa: E402
from agents.ranker import shipped_ranker_path  # noqa: E402
from agents.runners import scenario_rank_env, support_pairs, support_recall  # noqa: E402
from agents.suites import SUITES, custom_suite, is_training_seed  # noqa: E402
from hsched_env.errors import ConfigError  # noqa: E402

sys.path.append(str(Path(__file__).resolve().parent))       # script_args, next to this file
from script_args import list_of, nonnegative_int, one_line_errors, refuse_unwritable  # noqa: E402

#: Overloaded Philly windows outside the held-out Philly evaluation's dates (2017-10-02 to
#: 10-12): two of ``agents.regimes.MIXED_WIDE``'s ``sia-64`` windows and the same 10-16 window
#: on ``gavel-108``. The shipped file was trained on none of them (``mixed``).
WINDOWS = ("sia-64@2017-10-16T06:00", "sia-64@2017-10-23T06:00",
           "gavel-108@2017-10-16T06:00")
#: The held-out Philly evaluation's dates (BENCHMARKS.md), which ``WINDOWS`` avoids.
HELDOUT_WINDOW_DATES = ("2017-10-02", "2017-10-12")
#: Simulated time of a window's run (48 h, as the held-out Philly evaluation).
WINDOW_S = 172_800


def round_load(view) -> float:
    """The GPUs a round's active jobs request (each as submitted), summed, ÷ the cluster's
    GPUs: above 1 not every job can run at its requested size."""
    return float(view.requested_gpus.sum()) / float(view.capacity.sum())


def ungated(path: Path):
    """The ranker file's policy entry without its unsure gate (``max_kept_fraction`` 1: what
    it would keep) and without audits (every round it ranks is pruned); its candidate gate
    stays."""
    entry = parse_policies([f"ranker:{path}"], audit_every=0)[0]
    entry.ranker.max_kept_fraction = 1.0
    return entry


def run_scenario(entry, suite, scenario, seed: int) -> list[dict]:
    """Every round the ranker (``entry.ranker``, without its unsure gate) ranks
    on ``scenario`` with ``seed``: its load, kept share, recall and the LP's support."""
    ranker = entry.ranker
    env = scenario_rank_env(entry, suite, scenario, seed)
    obs, _ = env.reset(seed=seed)
    rows, done, index = [], env.simulator.finished, 0
    while not done:
        gated = ranker.gated_rounds
        keep = ranker.keep(obs, env)
        if ranker.gated_rounds == gated:                     # ranked
            u = env.unwrapped
            sl = u.slots
            m = sl.k.size
            kept = keep[:m] > 0
            support = support_pairs(u.lp, sl.view)
            chosen = {(int(j), int(r)) for j, r in zip(sl.job[kept], sl.row[kept])}
            rows.append({"scenario": scenario.name, "seed": seed, "round": index,
                         "active_jobs": int(sl.view.num_active), "candidates": int(m),
                         "load": round_load(sl.view), "kept": float(kept.mean()),
                         "recall": support_recall(support, chosen),
                         "support_per_job": len(support) / max(sl.view.num_active, 1)})
        obs, _, terminated, truncated, _ = env.step(keep)
        done = terminated or truncated
        index += 1
    env.close()
    return rows


def summary(rows: list[dict]) -> str:
    load = np.array([r["load"] for r in rows])
    kept = np.array([r["kept"] for r in rows])
    recall = np.array([r["recall"] for r in rows if r["recall"] is not None])
    per_job = np.array([r["support_per_job"] for r in rows])
    recalled = (f"recall {recall.mean():.3f} (least {recall.min():.3f})" if recall.size
                else "recall n/a (no LP support)")
    return (f"{len(rows):4d} ranked rounds | load {load.min():.2f} / {np.median(load):.2f} / "
            f"{load.max():.2f} | kept {kept.min():.3f} / {np.median(kept):.3f} / "
            f"{kept.max():.3f} | {recalled} | median LP support per active job "
            f"{np.median(per_job):.2f}")


@one_line_errors
def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--bursts", default="500,1000,2000",
                    help="large-family bursts to run, by active-job scale (default all; "
                         "'' none)")
    ap.add_argument("--seeds", type=list_of(nonnegative_int, empty_ok=True),
                    default="11,12,13,14,15,16,17,18",
                    help="training seeds of the bursts (default 11..18; '' none, with "
                         "--bursts '')")
    ap.add_argument("--windows", default=",".join(WINDOWS),
                    help="CLUSTER@START Philly windows (72 h, run for 48 h; '' none)")
    ap.add_argument("--ranker", type=Path, default=shipped_ranker_path(),
                    help="ranker file (default the shipped one)")
    ap.add_argument("--json", type=Path, default=None, metavar="FILE")
    args = ap.parse_args(argv)
    seeds = args.seeds
    if len(set(seeds)) != len(seeds):           # a seed twice would count its rounds twice
        ap.error(f"--seeds: give distinct seeds, got {','.join(map(str, seeds))}")
    bad = [s for s in seeds if not is_training_seed(s)]
    if bad:
        ap.error(f"--seeds: {bad} are not training seeds (0..9999): the gates are chosen on "
                 f"training seeds, not on the evaluation's")
    if not args.ranker.is_file():
        ap.error(f"--ranker: no such file: {args.ranker}")
    refuse_unwritable(ap, json=args.json)
    entry = ungated(args.ranker)
    family = SUITES["large-family"]
    by_size = {sc.name.rsplit("-", 1)[-1]: sc for sc in family.scenarios}
    sizes = [s.strip() for s in args.bursts.split(",")] if args.bursts.strip() else []
    if "" in sizes:
        ap.error(f"--bursts: an empty entry in {args.bursts!r}")
    unknown = [s for s in sizes if s not in by_size]
    if unknown:
        ap.error(f"--bursts: {', '.join(unknown)} not among large-family's "
                 f"{', '.join(by_size)} (by active-job scale)")
    if sizes and not seeds:
        ap.error("--seeds: no seed given (the bursts run on these training seeds)")
    runs = [(family, by_size[s], seeds) for s in sizes]
    windows = [w.strip() for w in args.windows.split(",")] if args.windows.strip() else []
    if "" in windows:
        ap.error(f"--windows: an empty entry in {args.windows!r}")
    for spec in windows:
        if "@" not in spec:
            ap.error(f"--windows: {spec!r} is not CLUSTER@START")
        cluster, start = spec.split("@", 1)
        try:
            suite = custom_suite(cluster, f"philly:start={start},hours=72",
                                 max_time_s=WINDOW_S)
        except ConfigError as exc:
            ap.error(f"--windows: {spec!r}: {exc}")
        runs.append((suite, suite.scenarios[0], [0]))         # a trace: the same jobs
    if not runs:                                # (it ran nothing and said nothing)
        ap.error("--bursts and --windows are both empty: nothing to run")
    try:
        from hsched_env.workloads.traces import traces_dir
        if len(runs) > len(sizes):
            traces_dir()                        # the windows need the traces: say so now
    except ConfigError as exc:
        ap.error(f"--windows: {exc}")
    rows = []
    for suite, scenario, run_seeds in runs:
        name = scenario.name if suite is family else f"{scenario.cluster} {scenario.workload}"
        mine = []
        for seed in run_seeds:
            t0 = time.perf_counter()
            mine += run_scenario(entry, suite, scenario, seed)
            print(f"  {name}, seed {seed}: {time.perf_counter() - t0:.0f} s", file=sys.stderr)
        for r in mine:
            r["scenario"] = name
        rows += mine
        print(f"{name}: " + (summary(mine) if mine else "no ranked round"), flush=True)
    if args.json:
        args.json.write_text(json.dumps(rows, indent=1) + "\n")
        print(f"wrote {args.json}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
