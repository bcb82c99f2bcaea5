"""The ``hsched`` argument parser and entry point (``hsched = "hsched_cli.main:main"``)."""

from __future__ import annotations

import argparse
import logging
import sys
import textwrap
from pathlib import Path

from hsched_env.defaults import JOB_CANDIDATES, RESTART_S, ROUND_S
from hsched_env.errors import (ConfigError, HSchedError, command_line_value, decimal_float,
                               decimal_int)
from hsched_env.files import user_path
from hsched_cli.interrupts import exit_status, sigterm_raises, what_happened
from hsched_cli.learning import DEMO_CLUSTER, cmd_demo, cmd_evaluate, cmd_train
from hsched_cli.simulation import TOPK_DEFAULT, cmd_compare, cmd_simulate
from hsched_cli.world import cmd_candidates, cmd_clusters, cmd_models
from lp_baseline.registry import POLICY_NAMES_SPELLED


class _NoHyphenBreaks(argparse.HelpFormatter):
    """Help wrapped at spaces only: policy names such as ``gavel-resets`` stay whole."""

    def _split_lines(self, text: str, width: int) -> list[str]:
        return textwrap.wrap(" ".join(text.split()), width, break_on_hyphens=False)


#: The namespace attribute in which ``_StoreOnce`` notes the flags given so far (removed by
#: ``_OneLineErrors.parse_known_args`` before the arguments are handed on).
_GIVEN = "_hsched_flags_given"


class _StoreOnce(argparse._StoreAction):
    """argparse's ``store``, except that a flag given twice is an error naming it and both
    values (argparse keeps the last one silently: ``--policies fifo,greedy --policies gavel``
    would drop two policies without a word)."""

    def __call__(self, parser, namespace, values, option_string=None):
        if option_string is not None:
            given = namespace.__dict__.setdefault(_GIVEN, {})
            if self.dest in given:
                parser.error(f"argument {'/'.join(self.option_strings)}: given twice "
                             f"({given[self.dest]!r}, then {values!r}): give it once")
            given[self.dest] = values
        super().__call__(parser, namespace, values, option_string)


class _OneLineErrors(argparse.ArgumentParser):
    """An argument error in one line naming the command, the flag and what is wrong, and
    where the usage is (argparse prints the whole usage block first: up to 18 lines for
    ``hsched evaluate --seeds 0``); exit status 2, as argparse's. Subcommands' parsers are
    of this class too (``add_subparsers`` makes them of the parent's class). A flag that
    takes a value may be given once (``_StoreOnce``)."""

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self.register("action", None, _StoreOnce)
        self.register("action", "store", _StoreOnce)

    def error(self, message: str):
        self.exit(2, f"{self.prog}: error: {message} (see '{self.prog} --help')\n")

    def parse_known_args(self, args=None, namespace=None):
        ns, extra = super().parse_known_args(args, namespace)
        ns.__dict__.pop(_GIVEN, None)
        return ns, extra

    def parse_args(self, args=None, namespace=None):
        """As argparse's, but flags a subcommand does not know are refused by that
        subcommand's parser (``hsched evaluate: error: unrecognized arguments: --bogus``),
        not by the top one (argparse: ``hsched: error: ...``)."""
        ns, extra = self.parse_known_args(args, namespace)
        if extra:
            chosen = self._chosen_subparser(ns)
            (chosen or self).error(f"unrecognized arguments: {' '.join(extra)}")
        return ns

    def _chosen_subparser(self, ns):
        sub = getattr(self, "subcommands", None)        # build_parser's add_subparsers
        return None if sub is None else sub.choices.get(getattr(ns, sub.dest, None) or "")


def _version() -> str:
    """The installed package's version (``pyproject.toml``), or a note when the package is
    run from a checkout without being installed."""
    from importlib.metadata import PackageNotFoundError, version
    try:
        return version("heterosched")
    except PackageNotFoundError:
        return "(not installed: run from a source checkout)"


def _add_models_flag(parser: argparse.ArgumentParser) -> None:
    """``--models FILE``: models of one's own beside the packaged ones (``use_model_files``)."""
    parser.add_argument("--models", action="append", default=None, metavar="FILE",
                        help="a model catalog file of your own (the format of the packaged "
                             "models.json, docs/workloads.md 'Your own models'): its models "
                             "join the catalog for this command and the processes it starts "
                             "(HSCHED_MODELS); may be repeated")


def build_parser() -> argparse.ArgumentParser:
    p = _OneLineErrors(prog="hsched", description=(
        "HeteroSched: co-optimize parallelization and scheduling of deep-learning training "
        "jobs on heterogeneous GPU clusters."))
    p.add_argument("-v", "--verbose", action="store_true", help="log progress to stderr")
    p.add_argument("--version", action="version", version=f"%(prog)s {_version()}",
                   help="print the installed version and exit")
    sub = p.subcommands = p.add_subparsers(dest="command", required=True, metavar="COMMAND")

    c = sub.add_parser("candidates", help="a job's candidates: resource set × best strategy")
    c.add_argument("--model", required=True, help="model name (see 'hsched models')")
    c.add_argument("--cluster", required=True,
                   help="preset name (see 'hsched clusters') or a .yaml/.json cluster file")
    c.add_argument("--max-candidates", type=_positive_int, default=None, metavar="N",
                   help="keep at most N candidates (highest throughput per GPU, and the fastest)")
    c.add_argument("--throughputs", default="analytic",
                   help="'analytic' (default), 'gavel' (Gavel's measured table where it has an "
                        "entry) or a table file in Gavel's format")
    c.add_argument("--no-mixed", action="store_true", help="single-GPU-type sets only")
    c.add_argument("--json", action="store_true", help="one JSON list on stdout")
    _add_models_flag(c)
    c.set_defaults(func=cmd_candidates)

    m = sub.add_parser("models", help="list the model catalog")
    _add_models_flag(m)
    m.set_defaults(func=cmd_models)
    cl = sub.add_parser("clusters", help="list cluster presets, or describe one")
    cl.add_argument("name", nargs="?", help="preset name or cluster file")
    cl.set_defaults(func=cmd_clusters)

    for cmd, helptext in (("simulate", "simulate a workload under one policy"),
                          ("compare", "simulate a workload under several policies")):
        sp = sub.add_parser(cmd, help=helptext, formatter_class=_NoHyphenBreaks)
        _add_models_flag(sp)
        sp.add_argument("--cluster", required=True, help="preset or cluster file")
        sp.add_argument("--workload", required=True, help=(
            "gavel:rate=R,jobs=N,seed=S,mix=classic|llm | philly:start=DATE,hours=H[,vc=V] | "
            "gavel-trace:path=F | pollux:path=F | csv:path=F"))
        if cmd == "simulate":
            sp.add_argument("--policy", default="heterosched-lp",
                            help="one of: " + ", ".join(POLICY_NAMES_SPELLED)
                                 + " (default: heterosched-lp; docs/simulator.md lists them), "
                                   "or MODULE:CALLABLE, your own policy (reset and decide; "
                                   "docs/simulator.md, 'Writing a policy')")
        else:
            sp.add_argument("--policies", required=True,
                            help="comma-separated policy names, or MODULE:CALLABLE entries: "
                                 "your own policies (serial backend only)")
        sp.add_argument("--objective", default=None,
                        help="LP objective of the co-optimizer's policies: sia-srpt "
                             "(default), sia-las (non-clairvoyant), fair-srpt, fair-las "
                             "(the previous default and its non-clairvoyant variant), max-min, "
                             "max-throughput, min-makespan, ftf")
        sp.add_argument("--floor", type=_number, default=None,
                        help="fairness floor of the two-stage objectives: every job keeps "
                             "this fraction of the max-min optimum (0..1; default 0 for "
                             "sia-srpt / sia-las, 0.5 for fair-srpt / fair-las); the "
                             "co-optimizer's policies only")
        sp.add_argument("--ftf-guard", type=_ftf_guard, default=None, metavar="RHO|off",
                        help="starvation guard of sia-srpt (the default objective): a job whose "
                             "projected finish-time fairness F exceeds RHO weighs 10*F/RHO, "
                             "above every unguarded job (default: 2 under sia-srpt; 'off': "
                             "none; docs/lp.md); "
                             "the co-optimizer's policies only")
        sp.add_argument("--round-restart", action="store_true",
                        help="sia-srpt / sia-las: a candidate that costs a restart counts "
                             "(round - restart) / round of its goodput, what it delivers in "
                             "the round decided (about half the restarts, measured; off by "
                             "default; docs/lp.md); the co-optimizer's policies only")
        sp.add_argument("--throughputs", default="analytic",
                        help="'analytic' (default), 'gavel' (Gavel's measured table where it "
                             "has an entry) or a table file in Gavel's format")
        sp.add_argument("--round-s", type=_number, default=ROUND_S,
                        help=f"round length ({ROUND_S:g})")
        sp.add_argument("--restart-s", type=_number, default=RESTART_S,
                        help=f"restart cost ({RESTART_S:g})")
        sp.add_argument("--max-candidates", type=_positive_int, default=JOB_CANDIDATES,
                        metavar="N", help=f"planner candidates kept per job "
                                          f"({JOB_CANDIDATES}); each job's table also holds "
                                          "its requested configuration and Sia's "
                                          "configurations (docs/simulator.md)")
        sp.add_argument("--topk", type=_positive_int, default=TOPK_DEFAULT,
                        help=f"k of the topk policy ({TOPK_DEFAULT})")
        sp.add_argument("--lp-backend", default=None, choices=["highs", "pulp"],
                        help="LP backend: direct sparse HiGHS (default) or PuLP + HiGHS")
        if cmd == "simulate":
            sp.add_argument("--backend", default=None, choices=["highs", "pulp"],
                            help="the old name of --lp-backend")
        else:
            sp.add_argument("--backend", default=None, choices=["serial", "ray", "highs", "pulp"],
                            help="where the policy runs execute: serial (default; one after "
                                 "the other in this process) or ray (one Ray task per policy, "
                                 "see --num-cpus, --address, --out, --resume); highs / pulp: "
                                 "the old spelling of --lp-backend")
            _add_ray_flags(sp, "policy run", out=True)
        sp.add_argument("--lp-time-limit-s", type=_number, default=None,
                        help="seconds of LP work per decision (normalizers, model building "
                             "and the solves of all POP parts; the rounding after it is not "
                             "included); a decision cut short uses the best feasible answer "
                             "or the greedy fallback (docs/lp.md)")
        sp.add_argument("--lp-method", default="auto",
                        choices=["auto", "simplex", "ipm", "colgen"],
                        help="how the LP policies solve each LP: auto (default: column "
                             "generation from 2,000 LP columns up, else dual simplex), simplex "
                             "(the default before 2026-12-03), ipm or colgen (docs/lp.md)")
        sp.add_argument("--lp-warm-start", action="store_true",
                        help="start each decision's dual simplex from the previous "
                             "decision's basis (faster; where an LP has several optimal "
                             "vertices the schedule may differ from the default cold solve; "
                             "no effect on column generation, IPM or pulp; docs/lp.md)")
        sp.add_argument("--seed", type=_integer, default=0, help="policy seed (0)")
        sp.add_argument("--max-time-s", type=_number, default=None,
                        help="stop the simulation at this time (simulated seconds; a "
                             "round that started before it is cut short there, and a job "
                             "finishing after it is not counted as done; docs/simulator.md)")
        sp.add_argument("--measure-jobs", metavar="A:B", default=None,
                        help="metrics over job ids A..B-1, stop when they are done")
        sp.add_argument("--skip-invalid", action="store_true",
                        help="skip invalid trace rows (their count is reported)")
        sp.add_argument("--check-invariants", action="store_true",
                        help="verify the simulator's invariants every round (slower)")
        sp.add_argument("--no-skip-rounds", action="store_true",
                        help="ask a steady policy (fifo-fastest, greedy) every round instead "
                             "of skipping the rounds that repeat the last one (same results)")
        sp.add_argument("--no-progress", action="store_true", help="no progress bar")
        sp.add_argument("--json", action="store_true", help="JSON on stdout")
        if cmd == "simulate":
            sp.add_argument("--jobs-out", metavar="FILE.csv", type=_output_path,
                            help="one row per job")
            sp.set_defaults(func=cmd_simulate)
        else:
            sp.set_defaults(func=cmd_compare)

    d = sub.add_parser("demo", help="end-to-end demo on the default scenario")
    d.add_argument("--cluster", default=DEMO_CLUSTER, help=f"default {DEMO_CLUSTER}")
    d.add_argument("--out", default="runs/demo", type=_output_path,
                   help="output folder (plots, JSON)")
    d.set_defaults(func=cmd_demo)

    ev = sub.add_parser("evaluate", help="policies, rankers, your own agents and policies on "
                        "held-out seeds")
    ev.add_argument("--suite", default=None,
                    help="smoke (default), standard, large or large-family")
    ev.add_argument("--cluster", default=None, help="a custom one-scenario suite ('custom', "
                    "instead of --suite): cluster preset or file; needs --workload")
    ev.add_argument("--workload", default=None, help=(
        "the custom scenario's workload: gavel:... without seed= (each held-out seed draws "
        "new jobs), or a trace (philly:, pollux:, csv:, gavel-trace:; the same jobs every "
        "seed); needs --cluster"))
    ev.add_argument("--max-time-s", type=_number, default=None,
                    help="stop the custom scenario's runs at this simulated time")
    ev.add_argument("--policies", default=None, help=(
        "comma-separated: pure-lp, topk, pop-4, gavel, fifo (any 'simulate' policy); "
        "ranker (agents/data/ranker.pt) or ranker:PATH.pt, with @R for the file's "
        "operating point of target recall R (ranker@0.99); ranker-seed or ranker-seed:PATH.pt "
        "(seed mode: its best-scored candidates start the whole LP's column generation, so "
        "each round gets the pure LP's optimal value; no unsure gate); module:callable (your "
        "agent: "
        "keep(obs, env) for rank mode or act(obs, env) for select mode, optional name, slots, "
        "env_kwargs; or your scheduling policy: reset(cluster, seed) and decide(view), run "
        "by the simulator, made anew for each run; the module is imported from the current "
        "directory or the Python path); "
        "sb3:PATH.zip or sb3:ALGO:PATH.zip (ALGO ppo, maskable-ppo, a2c, dqn; needs "
        "--trust-sb3-zip). Default pure-lp,topk,pop-4,[ranker,]gavel,fifo"))
    ev.add_argument("--trust-sb3-zip", action="store_true",
                    help="allow sb3:PATH.zip: loading an SB3 zip runs the pickled Python code "
                         "inside it, so only for files you trust")
    ev.add_argument("--seeds", type=_positive_int, default=None, metavar="N",
                    help="first N held-out seeds (default: the suite's; custom: 1)")
    ev.add_argument("--out", default=None, type=_output_path,
                    help="output folder (default runs/eval-SUITE, or runs/eval-SUITE-2, -3, "
                         "... when it holds an earlier evaluation); --backend ray also writes "
                         "one file per finished run to OUT/runs/")
    ev.add_argument("--overwrite", action="store_true",
                    help="replace the metrics.json and plots of an earlier evaluation in the "
                         "output folder (TensorBoard runs are always kept side by side) and, "
                         "with --backend ray, delete its run files (and its metrics.json with "
                         "them, once the sweep starts)")
    ev.add_argument("--json", action="store_true", help="one JSON object on stdout")
    ev.add_argument("--no-progress", action="store_true", help="no progress bar")
    ev.add_argument("--max-kept-fraction", type=_number, default=None, metavar="F",
                    help="the unsure gate of every ranker file listed, instead of the file's "
                         "own (default: the file's; 0.25 for a file with a candidate gate "
                         "that sets none): a round in which the ranker would keep more than "
                         "F of the candidates is solved whole by the LP, and so are the next "
                         "few it would rank (a back-off); F in (0, 1], 1 turns the gate off; "
                         "recorded in metrics.json (settings.ranker_gates)")
    ev.add_argument("--seed-fraction", type=_number, default=None, metavar="F",
                    help="the start of every ranker file listed: its best-scored F of a round "
                         "(and each job's best) start the LP's column generation, in "
                         "ranker-seed's rounds and in ranker's unsure rounds and audits "
                         "(default 0.05; 0: ranker's unsure rounds and audits from the LP's "
                         "own start); F in [0, 1]; "
                         "recorded in metrics.json (settings.ranker_gates)")
    ev.add_argument("--audit-every", type=_nonnegative_int, default=None, metavar="N",
                    help="audit the pruning of every ranker file listed (not ranker-seed): "
                         "the first round it would prune and every N-th after it are solved "
                         "whole by the LP, and the share of the LP's support it would have "
                         "kept is measured; below --audit-recall the next rounds are solved "
                         "whole without inference (a back-off, doubling while audits fail). "
                         "For regimes the file was not trained on; costs each audited round "
                         "the whole LP's time (default: the file's meta audit_every — the "
                         "shipped file audits — none for a file without one; 0: none); "
                         "recorded in metrics.json (settings.ranker_gates)")
    ev.add_argument("--audit-recall", type=_number, default=None, metavar="R",
                    help="the recall of the LP's support an audit must reach, in (0, 1] "
                         "(default 0.9); needs audits (--audit-every or the file's)")
    ev.add_argument("--audit-start", default=None, metavar="seed|kept|own",
                    help="what starts an audited round's whole-LP column generation: seed "
                         "(default), the ranker's best-scored --seed-fraction of the round "
                         "and each job's best, as in an unsure round; kept, the set it would "
                         "have kept; or own, the LP's own start (every audit before session "
                         "57); LPs small enough for the dual simplex ignore it; needs "
                         "audits (--audit-every or the file's)")
    ev.add_argument("--timing-repeats", type=_positive_int, default=1, metavar="N",
                    help="make every (scenario, policy, seed) run N times (serially the "
                         "policies interleaved) and take each round's decision time from the "
                         "median of the N: decision times, and their p99, that one slow round "
                         "of a shared machine does not decide (N times the runs; default 1)")
    ev.add_argument("--backend", default="serial", choices=["serial", "ray"],
                    help="where the (scenario, policy, seed) runs execute: serial (default; "
                         "one after the other in this process) or ray (one Ray task each; "
                         "every finished run is written to OUT/runs/ as it completes, a failed "
                         "one is retried once, then reported as failed)")
    _add_ray_flags(ev, "(scenario, policy, seed) run", out=False)
    _add_models_flag(ev)
    ev.set_defaults(func=cmd_evaluate)

    tr = sub.add_parser("train", help="train a ranker (Rank-*) or a scheduler (Schedule-*)",
                        description=(
        "Train an agent on a registered id, on its registered scenario (cluster, workload, "
        "slots, step limit) unless --cluster/--workload/--slots/--episode-hours override it. "
        "Values come from TrainConfig's defaults, then the id's entry of the hyper-parameter "
        "file (--hyperparams; default agents/hyperparams/<algo>.yml, or <algo>_mlp.yml with "
        "--policy mlp, the algorithm's dash an underscore there: maskable_ppo.yml), then the "
        "flags. Progress: a bar on a terminal, else a line on stderr "
        "every 15 s."))
    tr.add_argument("--env", default="hsched/Rank-v0", help="a registered id: hsched/Rank-v0 "
                    "(default), hsched/Schedule-v0, or their -Tiny-v0, -Small-v0, -Medium-v0, "
                    "-Large-v0 variants")
    tr.add_argument("--algo", default=None, help="ppo (default for Rank-*), maskable-ppo "
                    "(default for Schedule-*), or imitation (Rank-*: the cloned LP reference, "
                    "no PPO)")
    tr.add_argument("--policy", default=None, choices=["equivariant", "mlp"],
                    help="equivariant (default): the project's permutation-equivariant "
                         "RankerPolicy / MaskableRankerPolicy; mlp: SB3's MultiInputPolicy")
    tr.add_argument("--hyperparams", default=None, metavar="FILE.yml",
                    help="rl-zoo style YAML: top-level keys are env ids, values their "
                         "hyper-parameters (n_timesteps, policy, n_envs, learning_rate, "
                         "n_steps, batch_size, n_epochs, gamma, gae_lambda, ent_coef, "
                         "clip_range, target_kl, policy_kwargs, ...); default the shipped "
                         "agents/hyperparams/<algo>[_mlp].yml (ppo.yml, maskable_ppo.yml)")
    tr.add_argument("--set", action="append", metavar="KEY=VALUE",
                    help="override one hyper-parameter (any key of --hyperparams' entries; "
                         "repeatable), e.g. --set gae_lambda=0.9")
    tr.add_argument("--timesteps", type=_positive_int, default=None,
                    help="RL environment steps, a bound (default: the hyper-parameter entry's "
                         "n_timesteps, else 1008); the imitation warm start is separate "
                         "(--imitation-seeds)")
    tr.add_argument("--n-envs", type=_positive_int, default=None)
    tr.add_argument("--seed", type=_integer, default=None, help="(default 0)")
    tr.add_argument("--logdir", default=None, type=_output_path,
                    help="run directory (default: a new runs/ID-ALGO-POLICY-sSEED-DATE-TIME); "
                         "an existing non-empty one needs --overwrite")
    tr.add_argument("--overwrite", action="store_true",
                    help="reuse an existing --logdir: delete the files an earlier run wrote "
                         "there (tb/, checkpoints/, model.zip, ranker.pt, config.json, ...)")
    tr.add_argument("--cluster", default=None, help="training cluster (default: the id's)")
    tr.add_argument("--workload", default=None, help="training workload spec, without seed= "
                    "(default: the id's)")
    tr.add_argument("--slots", "--max-candidates", dest="slots", type=_positive_int,
                    default=None, metavar="K",
                    help="K, the environment's candidate slots (default: the id's; "
                         "--max-candidates: old name)")
    tr.add_argument("--imitation-seeds", type=_nonnegative_int, default=None,
                    help="LP-reference episodes for the warm start of an equivariant Rank "
                         "policy (default 8; 0: none); not counted in --timesteps; not with "
                         "--regimes (each regime has its own seeds)")
    tr.add_argument("--keep-cost", type=_number, default=None, help="λ of the rank reward")
    tr.add_argument("--regimes", default=None,
                    help="imitation over a mix of scenarios (agents/regimes.py: mixed, the "
                         "shipped ranker's; mixed-wide, with tiny-8 and Philly windows)")
    tr.add_argument("--target-recall", type=_number, default=None,
                    help="choose the ranker's keep threshold for this recall of the LP's "
                         "support on held-out rounds (e.g. 0.95)")
    tr.add_argument("--operating-recall", type=_number, default=None, metavar="R",
                    help="with --target-recall: the operating point the saved ranker uses by "
                         "default, one of those imitation also chooses (agents/regimes.py "
                         "RECALL_LADDER: 0.9 ... 0.995, or the target); DAgger still runs at "
                         "--target-recall, so the weights are the same. Default: the target")
    tr.add_argument("--threshold-bands", default=None, metavar="EDGES",
                    help="with --target-recall: one keep threshold per band of round size, "
                         "each reaching the target on its own held-out rounds; EDGES are the "
                         "bands' lower candidate counts after 0 (e.g. 1000,10000). Default: "
                         "one threshold pooled over every candidate, which the largest "
                         "rounds set")
    tr.add_argument("--fair-share-inputs", action="store_true", default=None,
                    help="imitation and inference over the candidates within their job's fair "
                         "share only (for an LP with the size cap, e.g. --objective fair-srpt, "
                         "which never uses the others; the default LP has no size cap)")
    tr.add_argument("--prune", choices=("all", "lp"), default=None,
                    help="what the kept candidates restrict (hsched/Rank-*): all (default: "
                         "the LP, its rounding and the fallbacks) or lp (the LP solve only; "
                         "recorded in the ranker file, which then runs that way)")
    tr.add_argument("--job-context", action="store_true", default=None,
                    help="--algo imitation: the ranker scores each candidate against its "
                         "job's other candidates (a per-job pooled embedding)")
    tr.add_argument("--dagger", type=_integer, default=None, metavar="N",
                    help="imitation: N DAgger iterations after the first fit — episodes "
                         "of the same seeds again, driven by the fitted ranker (ungated) and "
                         "labelled by the LP every round, then a new fit on all rounds "
                         "(default 0)")
    tr.add_argument("--gate-candidates", type=_integer, default=None, metavar="N",
                    help="rounds with fewer candidates are not ranked: the LP solves them "
                         "whole (recorded in the ranker file)")
    tr.add_argument("--max-kept-fraction", type=_number, default=None, metavar="F",
                    help="a round in which the ranker would keep more than F of the "
                         "candidates is solved whole, and the next few it would rank too "
                         "(recorded in the ranker file; default: 0.25 for a file with a "
                         "candidate gate, --gate-candidates, else 1: never)")
    tr.add_argument("--audit-every", type=_integer, default=None, metavar="N",
                    help="the ranker file audits its pruning by default: the first round it "
                         "would prune and every N-th after it are solved whole and its recall "
                         "of the LP's support checked (recorded in the ranker file; hsched "
                         "evaluate --audit-every overrides it; default 0: none)")
    tr.add_argument("--portable-math", action="store_true", default=None,
                    help="CPU-independent arithmetic (MKL_CBWR=COMPATIBLE, "
                         "ATEN_CPU_CAPABILITY=avx2): the command writes the same weights on "
                         "every CPU of one vendor with AVX2 whatever its instruction sets "
                         "(an Intel and an AMD CPU still differ), at ~1.3x the time of "
                         "behaviour cloning; the file records the arithmetic's fingerprint "
                         "and the command warns where it differs from the shipped file's "
                         "(agents/portable_math.py)")
    tr.add_argument("--episode-hours", type=_number, default=None,
                    help="truncate training episodes at this simulated time (default: the "
                         "id's limit, if any; 0: run every episode to its end); a positive "
                         "value is also the horizon of the --regimes demonstrations (default "
                         "3; --set imitation_hours=0: to their end)")
    tr.add_argument("--train-seeds", type=_positive_int, default=None,
                    help="training episodes cycle over seeds 0..N-1 (default 8; < 10,000)")
    tr.add_argument("--learning-rate", type=_number, default=None)
    tr.add_argument("--gamma", type=_number, default=None, help="discount factor")
    tr.add_argument("--n-steps", type=_positive_int, default=None,
                    help="rollout steps per environment")
    tr.add_argument("--batch-size", type=_positive_int, default=None)
    tr.add_argument("--n-epochs", type=_positive_int, default=None)
    tr.add_argument("--ent-coef", type=_number, default=None)
    tr.add_argument("--hidden", type=_positive_int, default=None,
                    help="width of the equivariant network (default 64)")
    tr.add_argument("--no-references", action="store_true",
                    help="do not run the LP and random on each training seed (no "
                         "episode/return_vs_lp, no reference lines in the returns figure)")
    tr.add_argument("--no-progress", action="store_true")
    _add_models_flag(tr)
    tr.set_defaults(func=cmd_train)
    return p


def _add_ray_flags(sp, run: str, out: bool) -> None:
    """--num-cpus, --address, --resume (and for compare --out, --overwrite) of --backend ray."""
    sp.add_argument("--num-cpus", type=_positive_int, default=None, metavar="N",
                    help="--backend ray: CPUs of the local Ray instance, one per running task "
                         "(default: all cores)")
    sp.add_argument("--address", default=None, metavar="ADDR",
                    help="--backend ray: join a running Ray cluster (auto, HOST:6379 or "
                         "ray://HOST:10001) instead of starting one here; every node needs "
                         "this package installed")
    if out:
        sp.add_argument("--out", default=None, metavar="DIR", type=_output_path,
                        help="--backend ray: write each finished policy run to DIR/runs/ as "
                             "it completes (one JSON file) and the metrics to "
                             "DIR/metrics.json; needed by --resume")
        sp.add_argument("--overwrite", action="store_true",
                        help="discard the run files of an earlier sweep in --out, and its "
                             "metrics.json, once the sweep starts")
    sp.add_argument("--resume", action="store_true",
                    help=f"--backend ray, needs --out: reuse the finished runs in OUT/runs/ of "
                         f"an interrupted sweep (each {run} is keyed by scenario, policy, seed "
                         f"and a hash of its configuration: a changed configuration runs "
                         f"again) and run only the missing or failed ones")


def _number(text: str) -> float:
    """A flag's number."""
    return command_line_value(text, decimal_float, "a number")


def _ftf_guard(text: str) -> float | str:
    """``--ftf-guard``: a number, or ``off``."""
    from lp_baseline.policy import FTF_GUARD_OFF    # (the LP modules load only when asked)
    if text.strip().lower() == FTF_GUARD_OFF:
        return FTF_GUARD_OFF
    return command_line_value(text, decimal_float, f"a number or {FTF_GUARD_OFF!r}")


def _integer(text: str) -> int:
    """A flag's integer."""
    return command_line_value(text, decimal_int, "an integer")


def _positive_int(text: str) -> int:
    """A flag's count (>= 1)."""
    return command_line_value(text, decimal_int, "a positive integer", lambda value: value > 0)


def _nonnegative_int(text: str) -> int:
    """A flag's count (>= 0)."""
    return command_line_value(text, decimal_int, "a whole number >= 0",
                              lambda value: value >= 0)


def _output_path(text: str) -> str:
    """An output path (``--out``, ``--logdir``, ``--jobs-out``) with ``~`` expanded, as the
    input paths are (``hsched_env.files.user_path``): ``--out ~/x`` made a folder named ``~``.
    An empty one (an unset shell variable: ``--out "$OUT"``) is refused: ``Path("")`` is the
    current folder, which ``evaluate --out ""`` filled with its outputs."""
    if not text.strip():
        raise argparse.ArgumentTypeError("an empty path (give a folder or file name)")
    try:
        return str(user_path(text))
    except ConfigError as exc:
        raise argparse.ArgumentTypeError(exc.reason) from None


def _use_model_files(paths: list[str]) -> None:
    """``--models``: the files join the catalog (``use_model_files``); an error that names no
    field names the flag (a path that is no file read "x.json: no such file", which did not
    say which flag gave it: ``--model resnet50`` is taken as ``--models resnet50``)."""
    from hsched_env.catalog import use_model_files
    try:
        use_model_files(paths)
    except ConfigError as exc:
        if exc.field is not None:
            raise
        raise ConfigError(exc.reason, source=exc.source, field="--models",
                          line=exc.line) from None


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    logging.basicConfig(level=logging.INFO if args.verbose else logging.WARNING,
                        format="%(levelname)s %(name)s: %(message)s")
    try:
        if getattr(args, "models", None):
            _use_model_files(args.models)        # checked before the command runs
        with sigterm_raises():
            return args.func(args)
    except HSchedError as exc:
        print(f"hsched {args.command}: error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt as exc:
        # Ctrl-C or SIGTERM: one line, the shell's code for the signal; a training run's
        # folder keeps what it wrote (checkpoints, TensorBoard), so say where it is
        # (``cmd_train`` sets ``run_dir`` once it has made the folder)
        run_dir = getattr(args, "run_dir", None)
        left = (f"; the partial run is in {run_dir} (--overwrite starts over)"
                if run_dir and Path(run_dir).is_dir() and any(Path(run_dir).iterdir()) else "")
        print(f"hsched {args.command}: {what_happened(exc)}{left}", file=sys.stderr)
        return exit_status(exc)
    except BrokenPipeError:
        return 0
