"""Calibrate the ranker's gate: from how many candidates per round does ranking pay?

On each probed round of ``hsched/Rank-v0`` the same state is decided twice (``get_state`` /
``set_state``): once with every candidate kept (the pure LP: its decision time) and once with
the ranker's keep bits (its inference time plus the LP over the kept candidates, plus the
observation it scored: the round's candidate slots and features, which the environment built
when the round opened, ``info["observation_time_s"]``). The gate is the smallest candidate
count from which the ranker, its observation counted, is clearly faster on the probed rounds
with more candidates (``suggest_gate``: every one of them at ≤ 0.9× the pure LP's time);
below it, ``Ranker.keep`` keeps everything without inference. ``--without-observation``
applies the rule to LP + inference alone (the criterion before session 29). The observation
is one measurement per round (the environment builds it once, when the round opens), added
to the medians of ``--repeats`` decisions; the probes' K (80 slots per job, so that no round
overflows) is a little larger than ``hsched evaluate``'s, which pads the observation's
arrays slightly. Each probe runs from a settled heap (``agents.runners.settled_heap``), as
``hsched evaluate``'s runs do.

    OMP_NUM_THREADS=1 .venv/bin/python scripts/calibrate_gate.py --ranker runs/ranker-mixed/ranker.pt

Prints one line per probed round and the suggested ``--gate-candidates``; ``--json`` for the
table; ``--write`` stores the gate in the ranker file (``meta["gate_candidates"]``, which
``Ranker.load`` uses). Timings are wall-clock medians of ``--repeats`` runs on this machine.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path

# first, before NumPy loads: sets NUMPY_MADVISE_HUGEPAGE=0 as the ``hsched`` command does
# (without it, a 2,400-job round's observation stalled in huge-page compaction: 303 ms
# against ~40 ms)
import hsched_cli  # noqa: F401,I001

import gymnasium as gym
import numpy as np

import hsched_env  # noqa: F401  (registers the environments)
from agents.ranker import GATE_NEVER, Ranker, load_ranker_net, save_ranker
from agents.runners import settled_heap
from hsched_env.defaults import EARLIER_DRAWS

sys.path.append(str(Path(__file__).resolve().parent))       # script_args, next to this file
from script_args import one_line_errors, positive_int  # noqa: E402

#: (cluster, workload, rounds to advance before probing, probes) from small to large rounds.
PROBES = (
    ("sia-64", f"gavel:rate=4,jobs=100,seed=5000,{EARLIER_DRAWS}", (4, 12, 24)),
    ("modern-512", f"gavel:rate=30,jobs=200,seed=5000,{EARLIER_DRAWS}", (4, 12, 24)),
    ("large-2048", f"gavel:rate=20000,jobs=40,seed=5000,{EARLIER_DRAWS}", (1, 4)),
    ("large-2048", f"gavel:rate=20000,jobs=80,seed=5000,{EARLIER_DRAWS}", (1, 4)),
    ("large-2048", f"gavel:rate=20000,jobs=150,seed=5000,{EARLIER_DRAWS}", (1, 4)),
    ("large-2048", f"gavel:rate=20000,jobs=300,seed=5000,{EARLIER_DRAWS}", (1, 4)),
    ("large-2048", f"gavel:rate=20000,jobs=600,seed=5000,{EARLIER_DRAWS}", (1, 4)),
    ("large-2048", f"gavel:rate=20000,jobs=1200,seed=5000,{EARLIER_DRAWS}", (1, 4)),
    ("large-2048", f"gavel:rate=20000,jobs=2400,seed=5000,{EARLIER_DRAWS}", (1,)),
)


def probe(ranker: Ranker, cluster: str, workload: str, at: tuple[int, ...], repeats: int):
    jobs = int(workload.split("jobs=")[1].split(",")[0])
    env = gym.make("hsched/Rank-v0", cluster=cluster, workload=workload,
                   slots=80 * jobs,              # every candidate of every job: no overflow
                   measure_time=True, disable_env_checker=True,
                   **ranker.env_kwargs).unwrapped     # the ranker's prune scope
    obs, info = env.reset(seed=0)
    rows, step = [], 0
    for target in at:
        while step < target:
            obs, _, term, trunc, info = env.step(np.ones(env.K, dtype=np.int8))
            step += 1
            if term or trunc:
                return rows
        observation_s = float(info["observation_time_s"])   # built once, when it opened
        snap = env.get_state()
        n = int(np.asarray(obs["valid"]).sum())
        full, ranked, infer = [], [], []
        for _ in range(repeats):
            env.set_state(snap)
            _, _, _, _, info = env.step(np.ones(env.K, dtype=np.int8))
            full.append(info["decision_time_s"])
            env.set_state(snap)
            t0 = time.perf_counter()
            keep = ranker.keep(obs, env)
            t_inf = time.perf_counter() - t0
            _, _, _, _, info = env.step(keep)
            infer.append(t_inf)
            ranked.append(t_inf + info["decision_time_s"])
        env.set_state(snap)
        rows.append({"cluster": cluster, "workload": workload, "round": target,
                     "candidates": n, "pure_lp_s": statistics.median(full),
                     "ranker_s": statistics.median(ranked),
                     "inference_s": statistics.median(infer),
                     "observation_s": observation_s,
                     "ranker_with_observation_s": statistics.median(ranked) + observation_s,
                     "kept": int(np.asarray(keep).sum())})
    return rows


def suggest_gate(rows: list[dict], margin: float = 0.9, share: float = 1.0,
                 time_key: str = "ranker_with_observation_s") -> int:
    """The smallest candidate count ``c`` such that, over the probed rounds with at least ``c``
    candidates, at least ``share`` of them (default: every one — the ranker must never cost
    time) had ranker time (``time_key``: with its observation, or ``"ranker_s"``, LP +
    inference) ≤ ``margin`` × the pure LP's and the mean ratio is ≤ ``margin`` (no such count:
    ``GATE_NEVER``, every round solved whole — a ranker that is slower on the largest probed
    rounds is not assumed to pay on larger ones)."""
    rows = sorted(rows, key=lambda r: r["candidates"])
    for i, r in enumerate(rows):
        ratios = [x[time_key] / x["pure_lp_s"] for x in rows[i:]]
        if np.mean([q <= margin for q in ratios]) >= share and np.mean(ratios) <= margin:
            return int(r["candidates"])
    return GATE_NEVER if rows else 0


def ungated_ranker(path) -> Ranker:
    """The ranker file at ``path`` as measured here: every round ranked and pruned (no
    candidate gate, no unsure gate, no audits)."""
    return Ranker.load(path, gate_candidates=0, max_kept_fraction=1.0, audit_every=0)


@one_line_errors
def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--ranker", required=True, help="a ranker file (ranker.pt)")
    ap.add_argument("--repeats", type=positive_int, default=3,
                    help="decisions per probed round and side; their medians are compared")
    ap.add_argument("--json", action="store_true")
    ap.add_argument("--without-observation", action="store_true",
                    help="compare LP + inference with the pure LP, leaving out the observation "
                         "the ranker scores (the rule before session 29)")
    ap.add_argument("--write", action="store_true",
                    help="store the suggested gate in the ranker file")
    args = ap.parse_args(argv)
    if not Path(args.ranker).is_file():
        ap.error(f"--ranker: no such file: {args.ranker}")
    ranker = ungated_ranker(args.ranker)
    rows = []
    for cluster, workload, at in PROBES:
        with settled_heap():                 # as ``hsched evaluate`` times its runs
            found = probe(ranker, cluster, workload, at, args.repeats)
        for r in found:
            rows.append(r)
            if not args.json:
                print(f"{r['cluster']:<11s} {r['workload']:<36s} round {r['round']:>2d}: "
                      f"{r['candidates']:>6d} candidates, pure LP {r['pure_lp_s'] * 1e3:7.1f} ms, "
                      f"ranker {r['ranker_s'] * 1e3:7.1f} ms (inference "
                      f"{r['inference_s'] * 1e3:5.1f} ms, kept {r['kept']}) + observation "
                      f"{r['observation_s'] * 1e3:5.1f} ms", flush=True)
    gate = suggest_gate(rows, time_key=("ranker_s" if args.without_observation
                                        else "ranker_with_observation_s"))
    if args.write:
        net, meta = load_ranker_net(args.ranker)
        save_ranker(net, args.ranker, **{**meta, "gate_candidates": gate})
    if args.json:
        json.dump({"rows": rows, "gate_candidates": gate}, sys.stdout, indent=1)
        print()
    else:
        print(f"suggested --gate-candidates {gate}" if gate != GATE_NEVER else
              f"suggested --gate-candidates {gate} (never rank: no probed round was at "
              f"≤ 0.9× the pure LP's time with the ranker)")
    if not args.json:
        print("(the ranker's time " + ("without" if args.without_observation else "with")
              + " the observation it scores)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
