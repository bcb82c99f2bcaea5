"""What the ranker's unsure gate sees: the share of a round's candidates the ranker keeps, and
the recall of the LP's support at that share, round by round.

``Ranker``'s unsure gate (``agents.ranker``, ``max_kept_fraction``) solves a round whole when
the ranker would keep more than a quarter of its candidates. This script runs one scenario
through the evaluation harness (``hsched evaluate``'s rank-mode path, one held-out seed) with
the shipped ranker **without** that gate (``max_kept_fraction=1``; its candidate gate stays),
records each ranked round's kept share, and prints their distribution and the mean and least
recall of the LP's support per band of kept share, with the run's avg JCT against the pure LP
over the jobs both finished. Example (the figures of BENCHMARKS.md, "The unsure gate")::

    .venv/bin/python scripts/ranker_kept.py --cluster sia-64 \\
        --workload philly:start=2017-10-09T06:00,hours=72 --max-time-s 172800
    .venv/bin/python scripts/ranker_kept.py --cluster large-2048 \\
        --workload gavel:rate=20000,jobs=2200 --max-time-s 5400
    .venv/bin/python scripts/ranker_kept.py --cluster sia-64 --workload gavel:rate=40,jobs=60 \\
        --max-time-s 7200 --gate-candidates 0        # small rounds: one kept per job is a lot
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import numpy as np  # noqa: E402

from agents.evaluate import evaluate  # noqa: E402
from agents.ranker import Ranker, shipped_ranker_path  # noqa: E402
from agents.suites import custom_suite  # noqa: E402

#: Lower edges of the bands of kept share the recall is reported for.
BANDS = (0.0, 0.15, 0.25, 0.35)


class KeptLog:
    """The shipped ranker without its unsure gate, noting each round's kept share."""

    def __init__(self, path: Path, gate_candidates: int | None = None) -> None:
        self.ranker = Ranker.load(path, max_kept_fraction=1.0, name="no-unsure-gate",
                                  gate_candidates=gate_candidates)
        self.name = self.ranker.name
        self.env_kwargs = self.ranker.env_kwargs
        #: per round: (ranked, kept share of the valid candidates)
        self.rounds: list[tuple[bool, float]] = []

    @property
    def gated_rounds(self) -> int:
        return self.ranker.gated_rounds

    def keep(self, obs: dict, env) -> np.ndarray:
        gated = self.ranker.gated_rounds
        keep = self.ranker.keep(obs, env)
        valid = int((np.asarray(obs["valid"]) > 0.5).sum())
        self.rounds.append((self.ranker.gated_rounds == gated, keep.sum() / max(valid, 1)))
        return keep


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--cluster", required=True)
    ap.add_argument("--workload", required=True,
                    help="gavel:... without seed= (a held-out seed is drawn) or a trace")
    ap.add_argument("--max-time-s", type=float, default=None)
    ap.add_argument("--ranker", type=Path, default=shipped_ranker_path())
    ap.add_argument("--gate-candidates", type=int, default=None, metavar="N",
                    help="the candidate gate (default: the file's; 0: rank every round)")
    args = ap.parse_args(argv)
    agent = KeptLog(args.ranker, args.gate_candidates)
    report = evaluate(custom_suite(args.cluster, args.workload, max_time_s=args.max_time_s),
                      ["pure-lp", agent], progress=sys.stderr.isatty())
    run = next(r for r in report.runs if r.label == f"ranker:{agent.name}")
    row = next(r for r in report.rows if r["policy"] == run.label)
    ranked = np.array([r for r, _ in agent.rounds], dtype=bool)
    kept = np.array([k for _, k in agent.rounds])
    recall_all = "n/a" if row.get("recall") is None else f"{row['recall']:.3f}"
    print(f"{args.cluster}, {args.workload}: {len(kept)} rounds, {int(ranked.sum())} ranked "
          f"(the others below the candidate gate); avg JCT {row['avg_jct_common_ratio']:.3f}× "
          f"the pure LP's over the jobs both finished, recall {recall_all}")
    if not ranked.any():
        return 0
    share = kept[ranked]
    p = np.percentile(share, [10, 50, 90, 100])
    print("kept share of a ranked round: p10 {:.3f}  median {:.3f}  p90 {:.3f}  max {:.3f}"
          .format(*p))
    if run.recall.size != kept.size:
        # hsched evaluate records a recall only for rounds where the full LP has a support
        print(f"(no recall per band: {kept.size - run.recall.size} rounds had no LP support, "
              f"so the recalls cannot be matched to the rounds)")
        return 0
    recall = run.recall[ranked]
    for lo, hi in zip(BANDS, BANDS[1:] + (1.01,)):
        band = (share >= lo) & (share < hi)
        if band.any():
            print(f"  kept {lo:.2f}–{min(hi, 1.0):.2f}: {int(band.sum()):4d} rounds, recall "
                  f"mean {recall[band].mean():.3f}, least {recall[band].min():.3f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
