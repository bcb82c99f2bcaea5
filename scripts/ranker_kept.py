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
        --workload gavel:rate=20000,jobs=2200,multi_gpu_recommendation=1 --max-time-s 5400
    .venv/bin/python scripts/ranker_kept.py --cluster sia-64 --workload gavel:rate=40,jobs=60,multi_gpu_recommendation=1 \\
        --max-time-s 7200 --gate-candidates 0        # small rounds: one kept per job is a lot

``--json FILE`` writes the rounds (kept share, recall); ``--plot FILE.png`` draws recall
against kept share for this run and the runs of ``--also A.json B.json ...`` (docs/img/
ranker_kept_share.png is three such runs).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import numpy as np  # noqa: E402

from agents.evaluate import evaluate  # noqa: E402
from agents.ranker import Ranker, shipped_ranker_path  # noqa: E402
from agents.suites import custom_suite  # noqa: E402

sys.path.append(str(Path(__file__).resolve().parent))       # script_args, next to this file
from script_args import (nonnegative_int, one_line_errors, positive_number,  # noqa: E402
                         refuse_unwritable)

#: Lower edges of the bands of kept share the recall is reported for.
BANDS = (0.0, 0.15, 0.25, 0.35)


class KeptLog:
    """The shipped ranker without its unsure gate, noting each round's kept share."""

    def __init__(self, path: Path, gate_candidates: int | None = None) -> None:
        self.ranker = Ranker.load(path, max_kept_fraction=1.0, name="no-unsure-gate",
                                  gate_candidates=gate_candidates, audit_every=0)
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


@one_line_errors
def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--cluster", required=True, help="cluster preset or file")
    ap.add_argument("--workload", required=True,
                    help="gavel:... (without seed=, the first held-out seed is drawn) or a "
                         "trace such as philly:start=...,hours=...")
    ap.add_argument("--max-time-s", type=positive_number, default=None,
                    help="stop the runs at this simulated time (default: the workload's end)")
    ap.add_argument("--ranker", type=Path, default=shipped_ranker_path(),
                    help="ranker file (default: the shipped agents/data/ranker.pt)")
    ap.add_argument("--gate-candidates", type=nonnegative_int, default=None, metavar="N",
                    help="the candidate gate (default: the file's; 0: rank every round)")
    ap.add_argument("--json", type=Path, default=None, metavar="FILE",
                    help="write the ranked rounds' kept share and recall")
    ap.add_argument("--plot", type=Path, default=None, metavar="FILE.png",
                    help="recall against kept share of this run (and of --also's)")
    ap.add_argument("--also", type=Path, nargs="*", default=[], metavar="JSON",
                    help="--json files of earlier runs to draw with this one")
    args = ap.parse_args(argv)
    if args.also and args.plot is None:         # (they were read by nothing)
        ap.error("--also: earlier runs are drawn on --plot; give --plot FILE.png")
    missing = [str(f) for f in args.also if not Path(f).is_file()]
    if missing:
        ap.error(f"--also: no such file: {', '.join(missing)}")
    if not args.ranker.is_file():
        ap.error(f"--ranker: no such file: {args.ranker}")
    refuse_unwritable(ap, plots=("plot",), json=args.json, plot=args.plot)
    agent = KeptLog(args.ranker, args.gate_candidates)
    # the unsure gate the file runs with elsewhere (drawn on the plot)
    in_use = Ranker.load(args.ranker, gate_candidates=args.gate_candidates).max_kept_fraction
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
    share = kept[ranked]
    seed = report.seeds[0] if report.seeds else None
    aligned = run.recall.size == kept.size
    record = {"cluster": args.cluster, "workload": args.workload, "seed": seed,
              "max_time_s": args.max_time_s, "ranker": str(args.ranker),
              "gate_candidates": agent.ranker.gate_candidates,
              "max_kept_fraction_in_use": in_use,
              "avg_jct_common_ratio": row["avg_jct_common_ratio"],
              "kept": share.tolist(),
              "recall": run.recall[ranked].tolist() if aligned else None}
    if share.size:
        p = np.percentile(share, [10, 50, 90, 100])
        print("kept share of a ranked round: p10 {:.3f}  median {:.3f}  p90 {:.3f}  max {:.3f}"
              .format(*p))
    else:
        print("no round was ranked: nothing to show per round (a smaller --gate-candidates "
              "ranks smaller rounds)")
    if not aligned:
        # hsched evaluate records a recall only for rounds where the full LP has a support
        print(f"(no recall per band: {kept.size - run.recall.size} rounds had no LP support, "
              f"so the recalls cannot be matched to the rounds)")
    elif share.size:
        recall = run.recall[ranked]
        for lo, hi in zip(BANDS, BANDS[1:] + (1.01,)):
            band = (share >= lo) & (share < hi)
            if band.any():
                print(f"  kept {lo:.2f}–{min(hi, 1.0):.2f}: {int(band.sum()):4d} rounds, "
                      f"recall mean {recall[band].mean():.3f}, least {recall[band].min():.3f}")
    if args.json:
        args.json.write_text(json.dumps(record, indent=1) + "\n")
        print(f"wrote {args.json}")
    if args.plot:
        records = [record] + [json.loads(Path(f).read_text()) for f in args.also]
        if any(r.get("recall") for r in records):
            _plot(records, args.plot, in_use)
            print(f"wrote {args.plot}")
        else:
            print(f"nothing to plot: no ranked round with a recall; {args.plot} not written")
    return 0


def _plot(records: list[dict], path: Path, threshold: float) -> None:
    """Recall of the LP's support against the kept share, one colour per run, with the
    unsure gate's ``threshold`` (not drawn when 1: no unsure gate)."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    fig, ax = plt.subplots(figsize=(7, 4.5))
    for rec in records:
        if rec.get("recall") is None:
            continue
        ax.scatter(rec["kept"], rec["recall"], s=12, alpha=0.6,
                   label=f"{rec['cluster']}, {rec['workload']} "
                         f"(avg JCT {rec['avg_jct_common_ratio']:.3f}× the LP's)")
    if threshold < 1.0:
        ax.axvline(threshold, color="k", ls="--", lw=1)
        ax.text(threshold, 0.02, " unsure gate: solved whole to the right", fontsize=8)
    ax.set_xlabel("share of the round's candidates the ranker keeps (without the gate)")
    ax.set_ylabel("recall of the LP's support")
    top = max((max(r["kept"]) for r in records if r.get("recall") and r["kept"]), default=0.5)
    ax.set_xlim(0, max(0.6, top + 0.05))
    ax.set_ylim(-0.02, 1.02)
    ax.legend(fontsize=7, loc="lower left", bbox_to_anchor=(0, 0.08))
    names = sorted({Path(r.get("ranker", "ranker.pt")).name for r in records})
    ax.set_title(f"{', '.join(names)} without its unsure gate: each ranked round",
                 fontsize=10)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


if __name__ == "__main__":
    sys.exit(main())
