"""CPU time of one hsched/Rank-v0 round (the LP decision over the kept candidates, placing it,
the next round's observation), for A/B comparisons of two checkouts on a shared machine.

    python scripts/bench_rank_round.py [--keep 0.5] [--rounds 1500] [--warmup 60]
    python scripts/bench_rank_round.py --against /path/to/old/checkout [--keep 0.5,1] [--pairs 5]

Rank-v0 on ``sia-64`` with ``gavel:rate=4,jobs=100`` (``bench_env.py``'s scenario), each
candidate kept with probability ``--keep`` (in (0, 1]; 1: every candidate), a new episode (a new
seed) whenever one ends; prints the CPU milliseconds per round (``time.process_time`` over
``--rounds`` rounds after ``--warmup``), which a contended host does not inflate as it does
wall-clock rates, with the wall-clock milliseconds and the mean number of active jobs of the
measured rounds (each round's own: the ``active_jobs`` of the info that opened it — the
previous step's, or ``reset``'s — since a step's info already describes the next round).

``--against DIR`` compares this checkout with the code in ``DIR`` (another checkout or a
``git worktree``, e.g. of the 2026-11-29 commit issue 15's "Rank-v0 rounds/s doubled" is
measured from): it runs this script ``--pairs`` times on each side in alternating
subprocesses, each importing its own side's packages (``PYTHONPATH``), the side that goes
first alternating from pair to pair, pair ``i`` with ``--seed`` + ``i`` on both sides (so the
pairs run different episodes), and prints per side and keep probability the median CPU-ms and
wall-ms per round (their ranges over the pairs in ``--json``) and the speed-up (the other
side's median ÷ this side's). Both sides run in this Python environment (the same numpy,
HiGHS and Gymnasium), so the ratio is the code's.

A round's cost grows with its active jobs, and how many jobs are active depends on the
schedule each side's code makes (its default LP policy, its candidate tables): a side whose
policy finishes jobs sooner runs cheaper rounds. So the comparison also times every round
and matches them by active jobs: for each count of active jobs with at least
``--min-rounds`` rounds on both sides (pooled over the pairs' episodes), the ratio of the two
sides' median CPU-ms per round; the summary is the geometric mean of those ratios weighted by
our side's rounds at each count (``matched_speedup_cpu``) — the speed-up at equal work in jobs,
next to the plain one, which also counts the schedule's effect. ``--plot FILE`` draws both
sides' median CPU-ms per round against active jobs.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

CLUSTER = "sia-64"
WORKLOAD = "gavel:rate=4,jobs=100"
HERE = Path(__file__).resolve().parents[1]          # this checkout


def workload() -> str:
    """``WORKLOAD`` as the checkout imported here draws it, the same jobs on both sides of
    ``--against``: a checkout from session 45 on draws Recommendation at one GPU unless told
    ``multi_gpu_recommendation=1`` (docs/workloads.md), an older one knows no such key."""
    try:
        from hsched_env.workloads import spec
    except ImportError:                  # (before the workloads package was split up)
        return WORKLOAD
    keys = getattr(spec, "_SPEC_KEYS", {}).get("gavel", ())
    return WORKLOAD + (",multi_gpu_recommendation=1" if "multi_gpu_recommendation" in keys
                       else "")


def measure_round(keep: float, rounds: int, warmup: int, seed: int = 0) -> dict:
    """CPU-ms and wall-ms per Rank-v0 round, keeping each candidate with probability
    ``keep``, and the mean active jobs of the measured rounds."""
    import gymnasium as gym
    import numpy as np

    import hsched_env  # noqa: F401  (registers the environments)

    env = gym.make("hsched/Rank-v0", cluster=CLUSTER, workload=workload(), measure_time=True)
    K = env.unwrapped.K
    rng = np.random.default_rng(seed)
    _, opened = env.reset(seed=seed)
    active, cpu_ms = [], []
    clock = time.process_time

    def run(n: int) -> None:
        nonlocal opened
        for _ in range(n):
            keep_bits = (rng.random(K) < keep).astype(np.int8)
            c = clock()
            _, _, terminated, truncated, info = env.step(keep_bits)
            cpu_ms.append(1e3 * (clock() - c))
            active.append(int(opened["active_jobs"]))      # the round this step decided
            opened = info
            if terminated or truncated:
                _, opened = env.reset()

    run(warmup)
    active.clear()
    cpu_ms.clear()
    c0, w0 = clock(), time.perf_counter()
    run(rounds)
    cpu, wall = clock() - c0, time.perf_counter() - w0
    return {"keep": keep, "rounds": rounds, "cpu_ms_per_round": 1e3 * cpu / rounds,
            "wall_ms_per_round": 1e3 * wall / rounds,
            "mean_active_jobs": float(np.mean(active)),
            # each measured round's active jobs and the CPU-ms of its step alone
            "per_round": {"active_jobs": active, "cpu_ms": [round(c, 4) for c in cpu_ms]}}


def _child(code: Path, keep: float, seed: int, args) -> dict:
    """One measurement in a subprocess importing the packages of ``code``."""
    env = dict(os.environ, PYTHONPATH=str(code))
    cmd = [sys.executable, str(Path(__file__).resolve()), "--json", "--keep", repr(keep),
           "--rounds", str(args.rounds), "--warmup", str(args.warmup), "--seed", str(seed)]
    done = subprocess.run(cmd, env=env, cwd=str(code), capture_output=True, text=True)
    lines = done.stdout.strip().splitlines()
    if done.returncode != 0 or not lines:
        raise SystemExit(f"bench_rank_round: the run on {code} failed "
                         f"(exit {done.returncode}):\n{done.stderr.strip()[-2000:]}")
    return json.loads(lines[-1])   # (older code may print a solver banner first)


def compare(against: Path, keeps: list[float], args) -> tuple[list[dict], dict]:
    """``--against``: alternating subprocesses; the summary row of each keep probability
    (medians per side, the plain and the matched speed-ups) and the runs themselves,
    ``{(side, keep): [measure_round results]}``."""
    runs = {(side, keep): [] for side in ("ours", "against") for keep in keeps}
    for pair in range(args.pairs):
        for keep in keeps:
            order = ("ours", "against") if pair % 2 == 0 else ("against", "ours")
            for side in order:
                got = _child(HERE if side == "ours" else against, keep, args.seed + pair, args)
                runs[side, keep].append(got)
                print(f"[{pair + 1}/{args.pairs}] keep {keep:g} {side}: "
                      f"{got['cpu_ms_per_round']:.3f} CPU-ms, {got['wall_ms_per_round']:.3f} "
                      f"wall-ms, {got['mean_active_jobs']:.1f} active jobs", file=sys.stderr)
    rows = []
    for keep in keeps:
        row = {"keep": keep}
        for side in ("ours", "against"):
            for what in ("cpu_ms_per_round", "wall_ms_per_round", "mean_active_jobs"):
                values = [r[what] for r in runs[side, keep]]
                row[f"{side}_{what}"] = statistics.median(values)
                row[f"{side}_{what}_range"] = [min(values), max(values)]
        row["speedup_cpu"] = row["against_cpu_ms_per_round"] / row["ours_cpu_ms_per_round"]
        row["speedup_wall"] = row["against_wall_ms_per_round"] / row["ours_wall_ms_per_round"]
        row.update(matched(runs["ours", keep], runs["against", keep], args.min_rounds))
        rows.append(row)
    return rows, runs


def by_active_jobs(runs: list[dict]) -> dict[int, list[float]]:
    """The rounds of ``runs`` (``measure_round`` results), pooled: ``{active jobs: [CPU-ms
    of each round with that many]}``."""
    out: dict[int, list[float]] = {}
    for run in runs:
        for a, c in zip(run["per_round"]["active_jobs"], run["per_round"]["cpu_ms"]):
            out.setdefault(int(a), []).append(float(c))
    return out


def matched(ours: list[dict], against: list[dict], min_rounds: int) -> dict:
    """The speed-up at equal active jobs (see the module docstring): per count present with
    ``min_rounds`` rounds on both sides, ``(active jobs, our rounds, their median ÷ ours)``,
    and their geometric mean weighted by our rounds (``None`` when no count qualifies)."""
    a, b = by_active_jobs(ours), by_active_jobs(against)
    per_count = [(n, len(a[n]), statistics.median(b[n]) / statistics.median(a[n]))
                 for n in sorted(set(a) & set(b))
                 if len(a[n]) >= min_rounds and len(b[n]) >= min_rounds]
    weight = sum(w for _, w, _ in per_count)
    mean = (math.exp(sum(w * math.log(r) for _, w, r in per_count) / weight) if weight
            else None)
    covered = weight / max(sum(len(v) for v in a.values()), 1)
    return {"matched_speedup_cpu": mean, "matched_share_of_our_rounds": covered,
            "matched_per_active_jobs": per_count}


def plot(runs: dict, path: Path, against: Path) -> None:
    """Median CPU-ms per round against active jobs, both sides, one panel per keep."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    keeps = sorted({keep for _, keep in runs})
    fig, axes = plt.subplots(1, len(keeps), figsize=(5.2 * len(keeps), 3.8), squeeze=False)
    for ax, keep in zip(axes[0], keeps):
        for side, label, style in (("against", f"against ({against.name})", "o--"),
                                   ("ours", "this checkout", "s-")):
            pooled = by_active_jobs(runs[side, keep])
            counts = sorted(pooled)
            ax.plot(counts, [statistics.median(pooled[n]) for n in counts], style,
                    markersize=3, label=label)
        ax.set_title(f"Rank-v0 on {CLUSTER}, keep {keep:g}")
        ax.set_xlabel("active jobs in the round")
        ax.set_ylabel("CPU-ms per round (median)")
        ax.set_ylim(bottom=0)
        ax.grid(alpha=0.3)
        ax.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def _times(x: float | None) -> str:
    return "n/a" if x is None else f"{x:.2f}×"


def _keeps(text: str) -> list[float]:
    """``--keep``: one probability, or a comma-separated list (duplicates dropped; an empty
    entry, a stray comma, is refused rather than skipped)."""
    parts = [v.strip() for v in str(text).split(",")]
    if not all(parts):
        raise argparse.ArgumentTypeError(
            f"expected a number or a comma-separated list without empty entries, got {text!r}")
    try:
        keeps = [float(v) for v in parts]
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number list: {text!r}") from None
    # (plain checks: a child run of --against imports the other checkout's packages, which
    # may predate scripts/script_args.py's helpers)
    if not all(0 < k <= 1 for k in keeps):                  # also refuses nan
        raise argparse.ArgumentTypeError(f"probabilities must be in (0, 1], got {text!r}")
    return list(dict.fromkeys(keeps))


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0].replace("\n", " ")
                                 + f" The scenario: {CLUSTER}, {WORKLOAD}, random keep bits.",
                                 formatter_class=argparse.ArgumentDefaultsHelpFormatter,
                                 allow_abbrev=False)
    ap.add_argument("--keep", type=_keeps, default="0.5",
                    help="probability of keeping each candidate (1: every candidate); with "
                         "--against, a comma-separated list (e.g. 0.5,1)")
    ap.add_argument("--rounds", type=int, default=1500, help="rounds measured")
    ap.add_argument("--warmup", type=int, default=60, help="rounds run before measuring")
    ap.add_argument("--seed", type=int, default=0,
                    help="first episode's seed and the keep bits' (with --against: pair i "
                         "uses seed + i on both sides)")
    ap.add_argument("--json", action="store_true", help="one JSON object (a list with --against)")
    ap.add_argument("--against", type=Path, default=None, metavar="DIR",
                    help="another checkout to compare with, in alternating subprocesses")
    ap.add_argument("--pairs", type=int, default=5,
                    help="with --against: measurements per side and keep probability")
    ap.add_argument("--min-rounds", type=int, default=10,
                    help="with --against: rounds both sides need at a count of active jobs "
                         "for it to enter the matched speed-up")
    ap.add_argument("--plot", type=Path, default=None, metavar="FILE",
                    help="with --against: CPU-ms per round against active jobs, both sides")
    args = ap.parse_args(argv)
    if args.rounds < 1 or args.warmup < 0:
        ap.error("--rounds must be >= 1 and --warmup >= 0")
    if args.seed < 0:
        ap.error(f"--seed must be >= 0, got {args.seed}")
    if args.against is None:
        if len(args.keep) != 1:
            ap.error("--keep takes one probability unless --against is given")
        given = [flag for flag in ("--pairs", "--min-rounds", "--plot")
                 if any(a == flag or a.startswith(flag + "=")
                        for a in (sys.argv[1:] if argv is None else argv))]
        if given:
            ap.error(f"{', '.join(given)}: used only with --against")
        got = measure_round(args.keep[0], args.rounds, args.warmup, args.seed)
        if args.json:
            print(json.dumps(got))
        else:
            print(f"{got['cpu_ms_per_round']:.3f} CPU-ms per round ({got['wall_ms_per_round']:.3f} "
                  f"wall-ms; keep {got['keep']:g}, {got['rounds']} rounds after {args.warmup}, "
                  f"{got['mean_active_jobs']:.1f} active jobs on average)")
        return 0
    if args.pairs < 1 or args.min_rounds < 1:
        ap.error("--pairs and --min-rounds must be >= 1")
    if not (args.against / "hsched_env" / "__init__.py").is_file():
        ap.error(f"--against {args.against}: not a checkout (no hsched_env/__init__.py there)")
    if args.plot is not None:
        # imported here: the runs of each checkout execute this file with that checkout's
        # code first on the path, which need not have what script_args imports
        sys.path.append(str(Path(__file__).resolve().parent))
        from script_args import refuse_unwritable
        refuse_unwritable(ap, plots=("plot",), plot=args.plot)
    rows, runs = compare(args.against.resolve(), args.keep, args)
    if args.plot is not None:
        plot(runs, args.plot, args.against.resolve())
    if args.json:
        print(json.dumps(rows))
        return 0
    print(f"this checkout: {HERE}\nagainst: {args.against}\n"
          f"medians of {args.pairs} alternating runs ({args.rounds} rounds after {args.warmup})")
    print("| keep | against CPU-ms | ours CPU-ms | speed-up (CPU) | against wall-ms | ours wall-ms "
          "| speed-up (wall) | active jobs, against / ours | speed-up at equal active jobs "
          "(range; our rounds covered) |")
    print("|---|---:|---:|---:|---:|---:|---:|---|---|")
    for r in rows:
        ratios = [x for _, _, x in r["matched_per_active_jobs"]]
        spread = f"{min(ratios):.2f}–{max(ratios):.2f}" if ratios else "none"
        print(f"| {r['keep']:g} | {r['against_cpu_ms_per_round']:.3f} | "
              f"{r['ours_cpu_ms_per_round']:.3f} | {r['speedup_cpu']:.2f}× | "
              f"{r['against_wall_ms_per_round']:.3f} | {r['ours_wall_ms_per_round']:.3f} | "
              f"{r['speedup_wall']:.2f}× | {r['against_mean_active_jobs']:.1f} / "
              f"{r['ours_mean_active_jobs']:.1f} | {_times(r['matched_speedup_cpu'])} ({spread}; "
              f"{100 * r['matched_share_of_our_rounds']:.0f}%) |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
