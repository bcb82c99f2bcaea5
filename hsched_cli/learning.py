"""``hsched demo``, ``hsched evaluate`` and ``hsched train``: the learned side (``agents``),
whose results this module prints."""

from __future__ import annotations

import contextlib
import json
import shlex
import sys
from pathlib import Path

import numpy as np

from hsched_cli.interrupts import exit_status, what_happened
from hsched_cli.outdirs import (check_no_earlier_results, check_ray_only_flags,
                                check_resume_overwrite, check_runs_folder, make_output_dir,
                                removed_if_failed_empty)
from hsched_env.errors import ConfigError
from hsched_env.files import is_file, usable_path
from hsched_env.text import counted

DEMO_CLUSTER = "sia-64"
DEMO_MODELS = ("resnet50", "transformer", "bert-large", "gpt2-xl", "vit-l", "llama2-7b",
               "llama2-13b")


# ``agents`` loads torch, SB3 and matplotlib: imported by the commands that need it only, so
# that ``hsched candidates`` / ``simulate`` start fast.
def cmd_demo(args) -> int:
    from agents.demo import run_demo
    out = Path(args.out)
    _check_demo_out(out)
    created = make_output_dir(out)              # an unwritable --out: one clear line
    with removed_if_failed_empty(created):
        for block in run_demo(cluster=args.cluster, out=out, models=DEMO_MODELS):
            print(block, flush=True)
    return 0


def _check_demo_out(out: Path) -> None:
    """The demo replaces its own results in ``out`` on every run, never another command's:
    a ``metrics.json`` there that is not a demo's is refused."""
    path = usable_path(out, field="--out", what="the output folder") / "metrics.json"
    if not is_file(path):           # (False, not an OSError, for a path past PATH_MAX)
        return
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        data = None
    if not (isinstance(data, dict) and data.get("suite") == "demo"):
        raise ConfigError(f"{str(out)!r} holds a metrics.json that is not the demo's (an "
                          f"evaluation's or a comparison's?): the demo would overwrite it; "
                          f"choose another --out", field="--out")


def _check_backend_flags(args, out_given: bool) -> None:
    """--num-cpus, --address and --resume belong to --backend ray; --resume needs --out;
    not with --overwrite."""
    check_resume_overwrite(args)
    check_ray_only_flags(args, ("--resume", "--num-cpus", "--address"))
    if args.resume and not out_given:
        raise ConfigError("--resume needs --out DIR, the output folder of the sweep to resume "
                          "(its runs/ holds the finished runs)", field="--resume")


def sweep_note(sweep: dict, failed_runs: list[str] | None = None,
               errors_in: str = "") -> str:
    """One line on a sweep: backend, resumed and failed runs, unused run files.
    ``failed_runs``: the failed runs named in the line (``--json``, where no table lists them
    above it), with ``errors_in`` saying where their errors are; ``None``: the table above
    lists them."""
    parts = [f"backend {sweep['backend']}"]
    if sweep.get("runs_dir"):
        parts.append(f"run files in {sweep['runs_dir']}")
    if sweep.get("resumed"):
        parts.append(f"{sweep['resumed']} of {sweep['tasks']} runs resumed from them")
    if sweep.get("failed"):
        if failed_runs is None:
            parts.append(f"{sweep['failed']} run(s) FAILED (listed above)")
        else:
            where = f" ({errors_in})" if errors_in else ""
            parts.append(f"{sweep['failed']} run(s) FAILED: {', '.join(failed_runs)}{where}")
    if sweep.get("other_code_runs"):
        parts.append(f"WARNING: {sweep['other_code_runs']} run(s) were made by other code than "
                     f"this process runs (the sources changed during or since the sweep: "
                     f"their results may differ)")
    if sweep.get("other_environment_runs"):
        parts.append(f"WARNING: {sweep['other_environment_runs']} run(s) were made under "
                     f"another Python, machine, processor or library versions than this "
                     f"process's (each run file's 'environment' says which): their decision "
                     f"times, and with other versions possibly their schedules, may differ")
    if sweep.get("stale_run_files"):
        parts.append(f"{sweep['stale_run_files']} run file(s) of another configuration "
                     f"left unused")
    return "; ".join(parts)


def interrupted_note(runs_dir: Path, exc: KeyboardInterrupt, args=None) -> str:
    """What to do after a Ray sweep was interrupted (Ctrl-C, SIGTERM: ``exc``); when its
    output folder is gone (the run removed what it had created), that there is nothing to
    resume. ``args``: the command's, for the flags the advice must add or drop (a default
    output folder needs ``--out`` to resume; ``--resume`` excludes ``--overwrite``)."""
    how = what_happened(exc)
    if not runs_dir.parent.exists():
        return f"{how} before any run finished: nothing to resume"
    from agents.sweep import RunStore
    n = len(RunStore(runs_dir).files())
    add = "--resume" if args is None or getattr(args, "out", None) is not None else (
        f"--out {shlex.quote(str(runs_dir.parent))} --resume")
    drop = " (and without --overwrite)" if getattr(args, "overwrite", False) else ""
    return (f"{how}: {n} run file(s) in {runs_dir}; run the same command with {add}{drop} "
            f"to finish the sweep without redoing them")


def cmd_evaluate(args) -> int:
    """``hsched evaluate`` (``args``: suite, cluster, workload, max_time_s, policies,
    trust_sb3_zip, seeds, out, overwrite, json, no_progress, timing_repeats, backend,
    num_cpus, address, resume). Exit status 1 when a run of a Ray sweep failed (after its retry)."""
    from agents import evaluate as ev
    _check_backend_flags(args, args.out is not None)
    ray = args.backend == "ray"
    backend = ev.RayBackend(num_cpus=args.num_cpus, address=args.address) if ray else "serial"
    custom = args.cluster is not None or args.workload is not None
    if custom:
        if args.suite is not None:
            raise ConfigError("give --suite or --cluster/--workload (a custom scenario), not "
                              "both", field="--suite")
        if args.cluster is None or args.workload is None:
            missing = "--workload" if args.cluster is not None else "--cluster"
            raise ConfigError("a custom scenario needs both --cluster and --workload",
                              field=missing)
        suite = ev.custom_suite(args.cluster, args.workload, max_time_s=args.max_time_s)
    else:
        if args.max_time_s is not None:
            raise ConfigError("--max-time-s sets the window of a custom scenario: give it "
                              "with --cluster and --workload", field="--max-time-s")
        suite = ev.get_suite(args.suite or "smoke")
    # an empty --policies '' is an error (parse_policies), not the default list
    policies = ev.default_policies() if args.policies is None else args.policies
    # with --json, what the user's own code prints (an entry point's module on import, an
    # agent or policy as it runs) goes to stderr: stdout holds the JSON alone
    report_out = sys.stdout
    with (contextlib.redirect_stdout(sys.stderr) if args.json else contextlib.nullcontext()):
        return _evaluate_entries(args, suite, policies, backend, report_out)


def _evaluate_entries(args, suite, policies, backend, report_out) -> int:
    """``cmd_evaluate`` from its policies on; ``report_out``: where the report goes (stdout
    as it was before ``--json`` sent the rest to stderr)."""
    from agents import evaluate as ev
    from agents.report import claim_output_dir
    ray = args.backend == "ray"
    entries = ev.parse_policies(policies,                                 # unknown: exit 2
                                trust_sb3_zip=args.trust_sb3_zip,         # before any folder
                                max_kept_fraction=args.max_kept_fraction,
                                seed_fraction=args.seed_fraction,
                                audit_every=args.audit_every,
                                audit_recall=args.audit_recall,
                                audit_start=args.audit_start)
    # never over results (a resumed sweep rewrites its own metrics.json). What this run
    # creates (folders, its claim on a default one) goes again if it fails before writing.
    check_no_earlier_results(args.out, overwrite=args.overwrite, resume=args.resume,
                             command="evaluate")
    if ray:
        check_runs_folder(args.out)             # a file named runs: refused before the runs
    out, created, claim = claim_output_dir(args.out, suite.name,
                                           overwrite=args.overwrite or args.resume)
    created = make_output_dir(out) + created        # an unwritable --out fails before the runs
    if args.out is None and out != Path("runs") / f"eval-{suite.name}":
        print(f"runs/eval-{suite.name} holds an earlier evaluation: writing to {out} "
              f"(--out DIR to choose, --overwrite to replace)", file=sys.stderr)
    progress = False if args.no_progress else None
    try:
        with removed_if_failed_empty(created, (claim,) if claim else ()):
            report = ev.evaluate(suite, ev.entries_to_items(entries), seeds=args.seeds,
                                 progress=progress, backend=backend,
                                 runs_dir=out / ev.RUNS_DIR if ray else None,
                                 resume=args.resume, overwrite=args.overwrite,
                                 timing_repeats=args.timing_repeats)
    except KeyboardInterrupt as exc:
        if not ray:
            raise
        print(interrupted_note(out / ev.RUNS_DIR, exc, args), file=sys.stderr)
        return exit_status(exc)
    data = ev.report_json(report)
    written = ev.write_outputs(report, out, data, overwrite=True)   # checked above
    where = f"wrote {', '.join(str(p) for p in written)}"
    failed_runs = None
    if args.json:               # no table lists the failed runs above the last line
        failed_runs = [f"{f['scenario']} {f['policy']} seed {f['seed']}"
                       for f in report.failures]
    note = ""
    if report.sweep:
        note = "; " + sweep_note(report.sweep, failed_runs,
                                 errors_in="their errors: the JSON's 'failed'")
    if args.json:
        json.dump(data, report_out, indent=1)
        print(file=report_out)
        print(where + note, file=sys.stderr)
    else:
        print(ev.format_report(report), file=report_out)
        repeats = (f" (each made {report.timing_repeats} times for its decision times)"
                   if report.timing_repeats > 1 else "")
        print(f"\n{len(report.runs)} runs{repeats} in {report.wall_s:.1f} s; {where}{note}",
              file=report_out)
    return 1 if report.failures else 0


def cmd_train(args) -> int:
    """``hsched train``: the values of the run come from ``TrainConfig``'s defaults, then the
    env id's entry of the hyper-parameter file (``--hyperparams``, default the shipped
    ``agents/hyperparams/<algo>[_mlp].yml``), then these flags."""
    from agents.report import tensorboard_command
    from agents.train import (FLAG_FIELDS, HYPERPARAM_ALIASES, LAST_EPISODES, make_config,
                              parse_assignment, prepare_run_dir, train)
    fields = {"timesteps": args.timesteps, "n_envs": args.n_envs, "seed": args.seed,
              "logdir": args.logdir}
    for name in FLAG_FIELDS:
        fields[name] = getattr(args, name)
    if args.episode_hours is not None:             # 0: every episode to its end
        fields["episode_hours"] = args.episode_hours
        fields["imitation_hours"] = args.episode_hours if args.episode_hours > 0 else None
    if args.no_references:
        fields["references"] = False
    # the fields the flags set (a flag given: not None; a switch: on; 0 counts as given)
    flagged = {k for k, v in fields.items() if v is not None and v is not False}
    if args.episode_hours is not None:
        flagged.add("imitation_hours")          # set by --episode-hours too
    flag_of = {k: "--episode-hours" if k == "imitation_hours" else "--" + k.replace("_", "-")
               for k in flagged}
    if args.no_references:
        flag_of["references"] = "--no-references"
    chosen = {"algo": args.algo, "policy": args.policy, "hyperparams": args.hyperparams}
    set_keys: set[str] = set()
    set_fields: dict = {}                       # --set's, a null value included
    for item in args.set or ():
        key, value = parse_assignment(item)
        if key == "env":
            raise ConfigError("the environment is --env, not --set env=...", field="--set")
        if key == "logdir":
            raise ConfigError("the run directory is --logdir, not --set logdir=...",
                              field="--set")
        if key in chosen:                       # make_config's own arguments
            if chosen[key] is not None:
                raise ConfigError(f"--set {key}=... and --{key} both given: give one",
                                  field="--set")
            if value is None:                   # (None is "not given": it would be dropped)
                raise ConfigError(f"--set {key}=null would mean the default, as leaving it "
                                  f"out does: give a value, or leave it out", field="--set")
            chosen[key] = value
            continue
        names = {HYPERPARAM_ALIASES.get(key, key)}   # the fields it sets (n_timesteps is
        # timesteps; policy_kwargs' hidden is hidden)
        if key == "policy_kwargs" and isinstance(value, dict) and "hidden" in value:
            names = {"hidden"} | ({key} if len(value) > 1 else set())
        for name in sorted(names):
            if name in flag_of:
                raise ConfigError(f"--set {key}=... and {flag_of[name]} both given: give one "
                                  f"(the flag would otherwise be overridden without a word)",
                                  field="--set")
            if name in set_keys:
                raise ConfigError(f"sets {name} a second time: give it once", field="--set")
        set_keys |= names
        set_fields[key] = value
    config = make_config(args.env, **chosen, **fields, set_fields=set_fields)
    def echo(text: str) -> None:
        print(text, file=sys.stderr, flush=True)

    echo(f"hyper-parameters: {config.hyperparams}")
    sc = config.scenario()
    where = (f"the {config.regimes!r} regimes" if config.regimes else
             f"{sc['cluster']} ({sc['workload']}, K={sc['slots']}, step limit "
             f"{sc['max_episode_steps']})")
    out = prepare_run_dir(config, overwrite=args.overwrite)
    args.run_dir = out                  # what an interrupted run names (hsched_cli.main)
    steps = "" if config.algo == "imitation" else f" for {config.timesteps:,} steps"
    echo(f"training {config.env} with {config.algo} ({config.policy} policy){steps} on "
         f"{where}; run directory {out}")
    progress = "none" if args.no_progress else "auto"
    summary = train(config, progress=progress, overwrite=True, echo=echo)
    imitation = summary.get("imitation")
    # the file with the imitation's operating points: the ranker itself (--algo imitation),
    # else the network before PPO (PPO's ranker.pt keeps at ½ and records none)
    points_file = out / ("ranker.pt" if config.algo == "imitation" else "imitation_ranker.pt")
    before_ppo = "" if config.algo == "imitation" else f" (in {points_file}, before PPO)"
    if imitation:
        v = imitation["valid"]
        dagger = sum(it["rounds_added"] for it in imitation.get("dagger", ()))
        rounds = (f"{imitation['rounds']} rounds labelled by the LP ({dagger} of them "
                  f"visited by the ranker: DAgger)" if dagger else
                  f"{imitation['rounds']} LP rounds")
        print(f"imitation: {rounds}; held-out precision "
              f"{v['precision']:.2f}, recall {v['recall']:.2f}, kept {v['kept_fraction']:.1%} "
              f"at keep probability ½")
        op = imitation.get("operating_point")
        if op:
            print(f"operating point{before_ppo}: keep threshold {op['threshold']:.3g} for "
                  f"recall {op['recall']:.3f} (target {op['target_recall']}), kept "
                  f"{op['kept_fraction']:.1%} of the held-out rounds' candidates")
        for band in imitation.get("size_bands") or ():
            source = "pooled (no support in the band)" if band["pooled"] else (
                f"recall {band['recall']:.3f}, kept {band['kept_fraction']:.1%}")
            print(f"  rounds of >= {band['min_candidates']:,} candidates "
                  f"({band['rounds']} held out): keep threshold {band['threshold']:.3g}, "
                  f"{source}")
        ladder = imitation.get("operating_points") or ()
        if ladder:
            ppo_note = ("" if config.algo == "imitation" else
                        "; PPO's ranker.pt has none: it keeps at ½")
            print(f"other operating points in {points_file} (ranker:{points_file}@R"
                  f"{ppo_note}): " + ", ".join(
                      f"R = {p['target_recall']:g}: keep {p['kept_fraction']:.1%}"
                      for p in ladder))
            serve = config.operating_recall
            if serve is not None and abs(serve - config.target_recall) > 1e-9:
                from agents.ranker import operating_point
                point = operating_point({"operating_points": ladder}, serve)
                bands = " / ".join(f"{t:.3g}" for _, t in point["size_thresholds"])
                print(f"the saved ranker serves the operating point of R = {serve:g} "
                      f"(--operating-recall; DAgger ran at {config.target_recall:g}): keep "
                      f"threshold {point['threshold']:.3g}" + (f", per band {bands}" if bands
                                                                else "")
                      + f", kept {point['kept_fraction']:.1%} of the held-out candidates")
    eps = summary.get("episodes", [])
    if eps:
        last = eps[-LAST_EPISODES:]
        line = (f"last {counted(len(last), 'episode')}: return "
                f"{np.mean([e['return'] for e in last]):.2f}"
                f", avg JCT {np.nanmean([e['avg_jct_h'] for e in last]):.2f} h")
        ratios = [e["return_vs_lp"] for e in last if np.isfinite(e["return_vs_lp"])]
        if ratios:
            line += (f", return / LP's {np.mean(ratios):.3f} (returns are negative: "
                     f"above 1 is worse than the LP"
                     + (")" if len(ratios) == len(last) else
                        f"; mean over the {len(ratios)} with the LP's reference)"))
        print(line)
    if "rl_steps" in summary:
        print(f"{summary['rl_steps']:,} environment steps "
              f"({counted(summary['updates'], 'rollout')} trained on) in "
              f"{summary['ppo_s']:.0f} s")
    print(f"wrote {out}/ ({', '.join(written_files(out))}) in {summary['total_s']:.0f} s;"
          f" {tensorboard_command(out)}")
    return 0


def written_files(out: Path) -> list[str]:
    """What a training run wrote into ``out`` (``agents.train.RUN_ARTIFACTS`` that are there:
    ``imitation_ranker.pt`` after a warm start, no ``ranker.pt`` with ``--policy mlp``, ...),
    the ranker files first, the folders last (with a ``/``; an empty ``checkpoints/`` left
    out)."""
    from agents.train import RUN_ARTIFACTS
    first = ("ranker.pt", "imitation_ranker.pt", "model.zip")
    names = [n for n in first if n in RUN_ARTIFACTS] + [n for n in RUN_ARTIFACTS
                                                         if n not in first]
    files = [n for n in names if (out / n).is_file()]
    folders = [f"{n}/" for n in names if (out / n).is_dir() and any((out / n).iterdir())]
    return files + folders
