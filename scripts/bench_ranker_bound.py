"""How much faster any "rank, then solve the LP" decision can be: the LP over its own support.

Issue 12 asks a learned ranker to cut the LP's decision time ≥ 10× at 2,000 active jobs (≥ 5×
at 500–1,000). A ranker can at best keep exactly the candidates the LP uses — its support — and
its decision then costs the LP over that kept set plus its own inference. This script measures
both halves of that bound on the ``large-family`` scenarios (``large-2048`` bursts of 550, 1,100 and
2,200 jobs, all active by the second or third round, ~310, ~750 and ~1,650 on average; the mean over the
rounds is reported), on held-out
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

By default (``--prune lp``) the bound holds for ``prune="lp"``, where the kept set restricts
the LP solve only and the rounding still reads every candidate. With ``--prune all`` the
rounding, the second-stage values and the simulator's fallbacks, too, run over the kept
candidates only, so part of the per-job work the ``lp`` bound leaves shrinks; the oracle then
keeps what the pure LP's decision uses (``reference_action`` under ``prune="all"``: the
support, each job's assigned candidate and, for the integral rounding, its fallbacks) — whether
that reproduces the pure LP's schedule is what the per-seed avg-JCT check shows.
``--prune lp,all`` measures both scopes in one run (their oracles share each seed's pure-LP
and keep-all runs). Each oracle round runs its untimed reference solve (on a deep copy of the
LP, sharing no cache with it) just before the timed decision: warmer CPU caches, if anything
in the oracle's favour.

Per scenario and scope: the rounds' mean and p99 decision times (all seeds together), the
kept fraction, the speed-up bounds (ratios of means, in the same run) and the per-seed avg-JCT
check; ``--plot FILE.png`` draws the mean times against active jobs. The rounds column is
keep-all's count, with the oracle's in parentheses where its schedule ran another number of
rounds (possible under ``prune="all"``; the means are then over different rounds).

    .venv/bin/python scripts/bench_ranker_bound.py --markdown            # 3 seeds, ~10 min
    .venv/bin/python scripts/bench_ranker_bound.py --seeds 1 --scenarios large-2048-500
    .venv/bin/python scripts/bench_ranker_bound.py --suite smoke --seeds 1 --markdown   # seconds
    .venv/bin/python scripts/bench_ranker_bound.py --prune lp,all --markdown \
        --plot docs/img/ranker_bound_large_family.png                    # both scopes, ~16 min
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
from hsched_env.envs.rank import PRUNE_SCOPES  # noqa: E402
from hsched_env.errors import ConfigError  # noqa: E402
from hsched_env.text import markdown_table  # noqa: E402
from hsched_env.workloads import load_workload  # noqa: E402
from lp_baseline.registry import make_policy  # noqa: E402

sys.path.append(str(Path(__file__).resolve().parent))       # script_args, next to this file
from script_args import positive_int, refuse_unwritable  # noqa: E402

#: ``--prune``'s default: the shipped ranker's scope (the kept set restricts the LP solve only)
PRUNE = "lp"


class KeepAll:
    """Keeps every candidate: the pure LP through ``RankEnv``."""

    name = "keep-all"

    def keep(self, obs, env):
        return (np.asarray(obs["valid"]) > 0.5).astype(np.int8)


class SupportOracle:
    """Keeps what the pure LP uses (``RankEnv.reference_action``): exactly its support under
    ``prune="lp"``; under ``prune="all"`` also each job's assigned candidate and fallbacks.
    With ``ranker``, also times that ranker's inference on the same observation
    (``inference_s``); its scores are not used."""

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


def measured_ranker() -> Ranker:
    """The shipped ranker as this bound measures its inference: every round ranked (no
    candidate gate, no unsure gate, no audits)."""
    return Ranker.load(shipped_ranker_path(), gate_candidates=0, max_kept_fraction=1.0,
                       audit_every=0)


def measure(scenario_names: list[str] | None, seeds: int, progress: bool,
            suite: str = "large-family", prune: str | tuple[str, ...] = PRUNE) -> list[dict]:
    """The bound's figures per scenario of ``suite`` (``scenario_names``: a subset), over
    ``seeds`` held-out seeds, with ``RankEnv(prune=p)`` for each scope ``p`` of ``prune`` (one
    name or several): one dict per scenario and scope, in that order (see ``main``'s table).
    The pure LP and keep-all runs are shared by the scopes (keeping every candidate is the
    whole LP under either)."""
    prunes = (prune,) if isinstance(prune, str) else tuple(prune)
    bad = [p for p in prunes if p not in PRUNE_SCOPES]
    if bad or not prunes or len(set(prunes)) != len(prunes):
        raise ConfigError(f"prune must be one of {', '.join(PRUNE_SCOPES)} (each at most "
                          f"once), got {prune!r}", field="--prune")
    suite = get_suite(suite)
    scenarios = [s for s in suite.scenarios if scenario_names is None or s.name in scenario_names]
    if scenario_names is not None and not set(scenario_names) <= {s.name for s in scenarios}:
        known = ", ".join(s.name for s in suite.scenarios)
        raise ConfigError(f"unknown scenario in {scenario_names} (suite {suite.name}: {known})",
                          field="--scenarios")
    if scenario_names is not None and len(scenarios) != len(scenario_names):
        twice = [n for n in dict.fromkeys(scenario_names) if scenario_names.count(n) > 1]
        raise ConfigError(f"scenario {', '.join(twice)} given more than once in "
                          f"{scenario_names}: give each at most once", field="--scenarios")
    ranker = measured_ranker()
    support_lp = make_policy("heterosched-lp")
    rows = []
    bar = tqdm(total=len(scenarios) * seeds * (2 + len(prunes)), desc="ranker bound",
               unit="run", disable=not progress, leave=False)
    for sc in scenarios:
        cluster = get_cluster(sc.cluster)
        acc = {"pure": [], "all": [], "jobs": [], "jct": []}
        for p in prunes:
            acc.update({("oracle", p): [], ("inference", p): [], ("kept", p): []})
        for seed in heldout_seeds(seeds):
            workload = load_workload(sc.workload_for(seed), cluster)
            slots = rank_slots_bound(suite, sc, cluster, workload)
            oracles = {p: SupportOracle(ranker) for p in prunes}
            entries = [("pure", PolicyEntry("pure-lp", "simulator", policy_name="heterosched-lp")),
                       ("all", PolicyEntry("keep-all", "ranker", ranker=KeepAll(),
                                           env_kwargs={"prune": prunes[0]}))]
            entries += [(("oracle", p), PolicyEntry(f"oracle ({p})", "ranker", ranker=oracles[p],
                                                    env_kwargs={"prune": p})) for p in prunes]
            runs = {}
            for key, entry in entries:
                bar.set_postfix_str(f"{sc.name} seed {seed} {entry.label}")
                runs[key] = run_one(entry, suite, sc, seed, cluster, workload, support_lp,
                                    slots)
                bar.update(1)
            acc["pure"].extend(runs["pure"].lp_decision_s)
            acc["all"].extend(runs["all"].lp_decision_s)
            acc["jobs"].append(float(np.mean(runs["pure"].active_jobs)))
            for p in prunes:
                acc["oracle", p].extend(runs["oracle", p].lp_decision_s)
                acc["inference", p].extend(oracles[p].inference_s)
                acc["kept", p].append(runs["oracle", p].kept_frac_mean)
            acc["jct"].append({k: r.metrics.get("avg_jct_s") for k, r in runs.items()})
        pure, full = _stats(acc["pure"]), _stats(acc["all"])
        for p in prunes:
            orc, inf = _stats(acc["oracle", p]), _stats(acc["inference", p])
            rows.append({
                "scenario": sc.name, "prune": p, "seeds": seeds, "rounds": len(acc["all"]),
                # the oracle's own rounds: under "all" its schedule, hence its round count,
                # may differ a little from keep-all's (the bounds are ratios of means)
                "oracle_rounds": len(acc["oracle", p]),
                "active_jobs_mean": float(np.mean(acc["jobs"])),
                "pure_lp_ms": [v * 1e3 for v in pure], "keep_all_ms": [v * 1e3 for v in full],
                "oracle_lp_ms": [v * 1e3 for v in orc], "inference_ms": [v * 1e3 for v in inf],
                "oracle_kept_frac": float(np.mean(acc["kept", p])),
                "bound_free_inference": full[0] / orc[0],
                "bound_shipped_inference": full[0] / (orc[0] + inf[0]),
                # per seed: the pure LP ("pure"), keep-all ("all") and this scope's oracle
                "avg_jct_s": [{"pure": j["pure"], "all": j["all"], "oracle": j["oracle", p]}
                              for j in acc["jct"]],
            })
    bar.close()
    return rows


def plot(rows: list[dict], path: Path, suite: str = "large-family") -> None:
    """Decision time per round (mean) against active jobs: the whole LP, the LP over the
    oracle's kept set per scope, and the shipped network's inference."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.ticker import FuncFormatter, NullFormatter

    fig, ax = plt.subplots(figsize=(6.4, 5.2))
    first = [r for r in rows if r["prune"] == rows[0]["prune"]]
    x = [r["active_jobs_mean"] for r in first]
    ax.plot(x, [r["keep_all_ms"][0] for r in first], "o-", color="black",
            label="whole LP (every candidate kept)")
    for p, style in zip(dict.fromkeys(r["prune"] for r in rows), ("s--", "^--")):
        mine = [r for r in rows if r["prune"] == p]
        ax.plot([r["active_jobs_mean"] for r in mine], [r["oracle_lp_ms"][0] for r in mine],
                style, label=f'LP over the support, prune="{p}" (a free, perfect ranker)')
    ax.plot(x, [r["inference_ms"][0] for r in first], "x:", color="tab:red",
            label="shipped ranker's inference alone")
    for r in first:                      # the 5× / 10× targets as the LP time they allow
        target = 10.0 if r["active_jobs_mean"] >= 1500 else 5.0
        ax.plot([r["active_jobs_mean"]], [r["keep_all_ms"][0] / target], "_", color="grey",
                markersize=18, mew=2)
    ax.plot([], [], "_", color="grey", markersize=12, mew=2,
            label="issue 12's target (5× / 10× less than the whole LP)")
    ax.set_xlabel("active jobs (mean over the rounds)")
    ax.set_ylabel("decision time per round, ms (mean)")
    ax.set_xscale("log")
    ax.set_yscale("log")
    plain = FuncFormatter(lambda v, _: f"{v:g}")
    ax.yaxis.set_major_formatter(plain)
    ax.yaxis.set_minor_formatter(plain)
    ax.set_xticks(x, [f"{v:,.0f}" for v in x])           # the scenarios' mean active jobs
    ax.xaxis.set_minor_formatter(NullFormatter())
    ax.tick_params(which="both", labelsize=7)
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=7, loc="upper center", bbox_to_anchor=(0.5, -0.14), ncol=1)
    ax.set_title(f"How fast can rank, then solve be? ({suite}, held-out seeds)", fontsize=9)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seeds", type=positive_int, default=3, help="held-out seeds (default 3)")
    ap.add_argument("--suite", default="large-family",
                    help="evaluation suite (default large-family; smoke: a check in seconds)")
    ap.add_argument("--scenarios", default=None,
                    help="comma-separated scenario names of the suite (default: all)")
    ap.add_argument("--prune", default=PRUNE,
                    help="what the kept set restricts (RankEnv's prune), one scope or several "
                         "comma-separated: lp — the LP solve only, the shipped ranker's scope "
                         "(default); all — also the rounding, the values and the fallbacks")
    ap.add_argument("--plot", default=None, metavar="FILE.png",
                    help="plot decision time against active jobs here")
    ap.add_argument("--markdown", action="store_true", help="print a markdown table")
    ap.add_argument("--out", default=None, help="write the results as JSON here")
    ap.add_argument("--no-progress", action="store_true")
    args = ap.parse_args(argv)
    names = args.scenarios.split(",") if args.scenarios else None
    refuse_unwritable(ap, plots=("plot",), out=args.out, plot=args.plot)
    try:
        rows = measure(names, args.seeds, progress=not args.no_progress, suite=args.suite,
                       prune=tuple(p.strip() for p in args.prune.split(",")))
    except ConfigError as exc:
        ap.error(str(exc))
    if args.out:
        Path(args.out).write_text(json.dumps(rows, indent=1))
    if args.markdown:
        def fmt(pair):
            digits = 1 if pair[0] < 10 else 0
            return f"{pair[0]:.{digits}f} / {pair[1]:.{digits}f}"
        table = [[r["scenario"], r["prune"], f"{r['active_jobs_mean']:.0f}",
                  str(r["rounds"]) if r["oracle_rounds"] == r["rounds"]
                  else f"{r['rounds']} ({r['oracle_rounds']})",
                  fmt(r["pure_lp_ms"]), fmt(r["keep_all_ms"]), fmt(r["oracle_lp_ms"]),
                  f"{r['oracle_kept_frac']:.1%}", fmt(r["inference_ms"]),
                  f"{r['bound_free_inference']:.2f}×", f"{r['bound_shipped_inference']:.2f}×"]
                 for r in rows]
        print(markdown_table(["scenario", "prune", "active jobs", "rounds",
                              "pure LP ms (mean / p99)", "keep-all ms",
                              "LP over the kept set ms", "kept", "shipped inference ms",
                              "bound, free inference", "bound, shipped inference"], table,
                             text_cols=("scenario", "prune")))
        for r in rows:
            jct = "; ".join(", ".join(f"{k} {v / 3600:.3f} h" for k, v in s.items())
                            for s in r["avg_jct_s"])
            print(f"\n{r['scenario']} (prune {r['prune']}) avg JCT per seed: {jct}")
        print(f"\nload average: {os.getloadavg()}")
    else:
        print(json.dumps(rows, indent=1))
    if args.plot:                          # last: what was measured is printed whatever happens
        plot(rows, Path(args.plot), suite=args.suite)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
