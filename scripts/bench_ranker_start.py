"""The ranker as column generation's start: the figures of BENCHMARKS.md, "Session 39: the
ranker as column generation's start".

Column generation, the pure LP's method on large rounds, starts its restricted LP from each
job's best column and prices the rest in until none enters; any start gives the same optimal
value (without a time limit), a start close to the LP's support in fewer restricted solves.
Two measurements:

``fractions`` — which start? Runs the shipped ranker (prune mode, as evaluated) on the
``large-family`` bursts with **training** seeds (choosing a setting on the evaluation's seeds
would fit the evaluation), and on each round it ranks solves the whole LP once per start:
column generation's own, the best-scored fraction f of the candidates plus each job's best
(for each ``--fractions`` f), and each job's best m by score (for each ``--per-job`` m). Prints
each start's total LP time (build and solve) ÷ the unstarted one's, per burst::

    .venv/bin/python scripts/bench_ranker_start.py fractions --seeds 11,12

``compare`` — the held-out evaluation: the pure LP, the shipped ranker without the start on
its unsure rounds (``seed_fraction=0``), the shipped ranker, and ``ranker-seed`` (seed mode),
interleaved, each round's time the median of ``--timing-repeats`` runs::

    .venv/bin/python scripts/bench_ranker_start.py compare --suite large-family --seeds 3
    .venv/bin/python scripts/bench_ranker_start.py compare --suite large --seeds 1

``--json FILE`` writes the figures (``compare``: the evaluation's ``metrics.json`` content).
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import numpy as np  # noqa: E402

from agents.evaluate import SUITES, evaluate, format_report  # noqa: E402
from agents.policy_entries import parse_policies  # noqa: E402
from agents.ranker import best_per_job, rank_within_job, shipped_ranker_path  # noqa: E402
from agents.report import report_json  # noqa: E402
from agents.runners import scenario_rank_env  # noqa: E402
from agents.suites import is_training_seed  # noqa: E402
from hsched_env.errors import ConfigError  # noqa: E402

sys.path.append(str(Path(__file__).resolve().parent))       # script_args, next to this file
from script_args import (int_list, list_of, one_line_errors, positive_int,  # noqa: E402
                         positive_number, probability, refuse_unwritable)


def _starts(scores: np.ndarray, jobs: np.ndarray, fractions, per_job) -> dict:
    """Slot masks (over a round's M candidates) of each start: ``top f`` — the best-scored
    fraction f plus each job's best; ``best m per job`` — each job's best m by score."""
    m = scores.size
    order = np.argsort(-scores, kind="stable")
    best = best_per_job(scores, jobs)
    out = {}
    for f in fractions:
        mask = np.zeros(m, dtype=bool)
        mask[order[:int(f * m)]] = True
        mask[best] = True
        out[f"top {f:g}"] = mask
    rank = rank_within_job(scores, jobs)
    for k in per_job:
        out[f"best {k} per job"] = rank < k
    return out


class _StartProbe:
    """The shipped ranker as evaluated; on each round it ranks, the whole LP is also solved
    from each start (``LPPolicy.shares(lp_start=)``) and its build and solve time noted."""

    def __init__(self, path: Path, fractions, per_job) -> None:
        self.entry = parse_policies([f"ranker:{path}"], audit_every=0)[0]   # no audits: as
        #                                                      measured before session 58
        self.ranker = self.entry.ranker
        self.fractions, self.per_job = fractions, per_job
        self.times: dict[str, list[float]] = {}
        self.solves: dict[str, list[int]] = {}

    def keep(self, obs: dict, env) -> np.ndarray:
        gated = self.ranker.gated_rounds
        keep = self.ranker.keep(obs, env)
        if self.ranker.gated_rounds != gated:            # below the candidate gate
            return keep
        unwrapped = env.unwrapped
        sl = unwrapped.slots
        view, m = sl.view, sl.k.size
        scores = self.ranker.scores(obs, env)[:m]
        starts = {"none": None, **_starts(scores, unwrapped.slot_jobs()[:m], self.fractions,
                                          self.per_job)}
        for name, mask in starts.items():
            rows = (None if mask is None else
                    [sl.row[mask & (sl.k == i)] for i in range(view.num_active)])
            _, stats = unwrapped.lp.shares(view, lp_start=rows)
            self.times.setdefault(name, []).append(stats.solve_s + stats.build_s)
            self.solves.setdefault(name, []).append(stats.extra.get("restricted_solves", 0))
        return keep


def fractions_main(args) -> int:
    seeds = args.seeds
    bad = [s for s in seeds if not is_training_seed(s)]
    if bad:
        raise ConfigError(f"{bad} are not training seeds (0..9999): the start is chosen on "
                          f"training seeds, not on the evaluation's", field="--seeds")
    suite = SUITES["large-family"]
    scenarios = [sc for sc in suite.scenarios
                 if args.sizes is None or sc.name.rsplit("-", 1)[-1] in args.sizes.split(",")]
    fr, pj = args.fractions, args.per_job
    table = {}
    for sc in scenarios:
        probe = _StartProbe(args.ranker, fr, pj)
        if args.max_time_s is not None:
            sc = dataclasses.replace(sc, max_time_s=args.max_time_s)
        for seed in seeds:
            t0 = time.perf_counter()
            env = scenario_rank_env(probe.entry, suite, sc, seed)
            obs, _ = env.reset(seed=seed)
            done = env.simulator.finished
            while not done:
                obs, _, term, trunc, _ = env.step(probe.keep(obs, env).astype(np.int8))
                done = term or trunc
            print(f"{sc.name} seed {seed}: {len(probe.times.get('none', []))} ranked rounds so "
                  f"far ({time.perf_counter() - t0:.0f} s)", file=sys.stderr)
        none = sum(probe.times.get("none", [])) or float("nan")
        table[sc.name] = {name: {"ratio": sum(t) / none, "seconds": sum(t),
                                 "restricted_solves_median": float(np.median(probe.solves[name]))}
                          for name, t in probe.times.items()}
    names = list(next(iter(table.values()))) if table else []
    print("start | " + " | ".join(table) + "  (whole-LP time ÷ the unstarted one's; median "
          "restricted solves)")
    for name in names:
        cells = [f"{table[s][name]['ratio']:.3f} ({table[s][name]['restricted_solves_median']:g})"
                 for s in table]
        print(f"{name} | " + " | ".join(cells))
    if args.json:
        args.json.write_text(json.dumps({"seeds": seeds, "table": table}, indent=1) + "\n")
        print(f"wrote {args.json}")
    return 0


def compare_main(args) -> int:
    entries = parse_policies(["pure-lp", f"ranker:{args.ranker}", f"ranker:{args.ranker}",
                              f"ranker-seed:{args.ranker}"],
                             audit_every=0)        # the unsure rounds' start alone, no audits
    entries[1].ranker.seed_fraction = 0.0          # unsure rounds from the LP's own start
    entries[1].label = "ranker-no-start"
    entries[2].label = "ranker"
    entries[3].label = "ranker-seed"
    report = evaluate(SUITES[args.suite], entries, seeds=args.seeds,
                      progress=sys.stderr.isatty(), timing_repeats=args.timing_repeats)
    print(format_report(report))
    print("\nwith observations, × the pure LP (mean, p99); avg JCT × LP; the schedules of "
          "ranker-no-start and ranker identical?")
    rows = {(r["scenario"], r["policy"]): r for r in report.rows}
    for sc in dict.fromkeys(s for s, _ in rows):
        same = ({k: v for k, v in rows[(sc, "ranker-no-start")].items() if k in _SCHEDULE}
                == {k: v for k, v in rows[(sc, "ranker")].items() if k in _SCHEDULE})
        cells = [f"{p} {rows[(sc, p)]['decision_with_observation_ratio']:.2f}, "
                 f"{rows[(sc, p)]['decision_with_observation_p99_ratio']:.2f}, "
                 f"{rows[(sc, p)]['avg_jct_common_ratio']:.3f}"
                 for p in ("ranker-no-start", "ranker", "ranker-seed")]
        print(f"{sc}: " + "; ".join(cells) + f"; identical: {same}")
    if args.json:
        args.json.write_text(json.dumps(report_json(report), indent=1, default=str) + "\n")
        print(f"wrote {args.json}")
    return 0


#: The row keys that are the schedule (not the time): equal when two rankers scheduled alike.
_SCHEDULE = ("avg_jct_s", "p99_jct_s", "makespan_s", "avg_time_in_system_s", "ftf_worst",
             "ftf_mean", "jobs_completed", "restarts_per_job", "recall", "rounds")


@one_line_errors
def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="command", required=True)
    fr = sub.add_parser("fractions", help="which start (training seeds)")
    fr.add_argument("--seeds", type=int_list(0), default="11,12",
                    help="training seeds (default 11,12)")
    fr.add_argument("--sizes", default=None,
                    help="bursts of large-family to run: 500,1000,2000 (default all)")
    fr.add_argument("--fractions", type=list_of(probability, empty_ok=True),
                    default="0.02,0.03,0.05,0.075,0.1",
                    help="best-scored shares to start from (plus each job's best; '' none)")
    fr.add_argument("--per-job", type=list_of(positive_int, empty_ok=True), default="2,3",
                    help="each job's best m by score ('' none)")
    fr.add_argument("--max-time-s", type=positive_number, default=None,
                    help="cut each burst at this simulated time (default the suite's 1.5 h)")
    cp = sub.add_parser("compare", help="held-out evaluation of the start")
    cp.add_argument("--suite", default="large-family", choices=sorted(SUITES))
    cp.add_argument("--seeds", type=positive_int, default=3)
    cp.add_argument("--timing-repeats", type=positive_int, default=3)
    for p in (fr, cp):
        p.add_argument("--ranker", type=Path, default=shipped_ranker_path(),
                       help="ranker file (default the shipped one)")
        p.add_argument("--json", type=Path, default=None, metavar="FILE")
    args = ap.parse_args(argv)
    here = fr if args.command == "fractions" else cp
    if not args.ranker.is_file():
        here.error(f"--ranker: no such file: {args.ranker}")
    refuse_unwritable(here, json=args.json)
    if args.command == "fractions" and args.sizes is not None:
        known = [sc.name.rsplit("-", 1)[-1] for sc in SUITES["large-family"].scenarios]
        unknown = [s for s in args.sizes.split(",") if s not in known]
        if unknown:
            fr.error(f"--sizes: {', '.join(map(repr, unknown))} not among large-family's "
                     f"bursts {', '.join(known)}")
    return fractions_main(args) if args.command == "fractions" else compare_main(args)


if __name__ == "__main__":
    raise SystemExit(main())
