"""Baseline table per registered id: random, greedy / keep-all, the LP reference and trained
SB3 agents, mean ± std over held-out seeds (``docs/rl_baselines.md`` and ``.json``).

    python scripts/rl_baselines.py                      # Tiny and Small ids, 10 seeds, trains
    python scripts/rl_baselines.py --medium --large     # also v0 / Medium and Large ids
    python scripts/rl_baselines.py --ids hsched/Schedule-Tiny-v0 --seeds 2 --no-train
    python scripts/rl_baselines.py --run hsched/Rank-Tiny-v0:ppo+mlp=runs/my-run

For each id it runs **full episodes** (to termination or the registered step limit) on the
held-out seeds ``agents.suites.HELDOUT_SEEDS`` (1,000,000 upward; training uses seeds below
10,000) of:

* ``random`` — Schedule: uniform over the valid actions (``action_masks()``); Rank: a fair
  coin per valid slot (seeded by the episode seed);
* ``unmasked-random`` (Schedule) — uniform over all K + 1 actions: the invalid-action penalty
  at work;
* ``greedy`` (Schedule: the first valid slot until none is, then commit; slot order is the
  environment's) / ``keep-all`` (Rank: keep every valid slot);
* ``lp`` — ``env.reference_action()``;
* the trained agents (deterministic actions; MaskablePPO with its masks), trained here from
  the shipped hyper-parameter files (``agents/hyperparams/*.yml``; an id without an entry
  gets no trained agent) or loaded from run directories (``--run``):
  ``maskable-ppo+equivariant`` / ``maskable-ppo+mlp`` on Schedule ids, ``ppo+equivariant`` /
  ``ppo+mlp`` on Rank ids.

Reported per policy: mean ± std of the episode return, the average JCT (h) and the episode
length (steps), invalid actions and jobs completed; and the paired difference of the return to
random's on the same seeds (mean ± standard error, 95% t interval): a policy *measurably beats
random* when that interval lies above 0. Trained agents also get their training time (RL
only, without the LP / random references the training logs compute) and hyper-parameters.

The table is written between the ``GENERATED`` markers of ``--out`` (the text around them is
kept), the raw numbers to the JSON next to it.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import platform
import shlex
import sys
import time
from collections import Counter
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

os.environ.setdefault("OMP_NUM_THREADS", "1")

import gymnasium as gym  # noqa: E402
import numpy as np  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

import hsched_env  # noqa: E402,F401  (registers the ids)
from agents.suites import HELDOUT_SEEDS  # noqa: E402
from agents.train import (BASELINES, baseline_actor, make_config, read_hyperparams,  # noqa: E402
                          default_hyperparams_file, run_episode, train)
from hsched_env.errors import UnknownNameError  # noqa: E402
from hsched_env.registration import VARIANTS, variant  # noqa: E402

sys.path.append(str(Path(__file__).resolve().parent))       # script_args, next to this file
from script_args import (nonnegative_int, one_line_errors, output_folder_problem,  # noqa: E402
                         positive_int)

SMALL_IDS = tuple(v.id for v in VARIANTS if v.level in ("Tiny", "Small"))
MEDIUM_IDS = tuple(v.id for v in VARIANTS if v.level in ("", "Medium"))
LARGE_IDS = tuple(v.id for v in VARIANTS if v.level == "Large")
BEGIN, END = "<!-- BEGIN GENERATED: scripts/rl_baselines.py -->", "<!-- END GENERATED -->"


@dataclass(frozen=True)
class Agent:
    """A trained agent of the table: algorithm and policy family, for one environment."""

    name: str
    env: str          # "Schedule" or "Rank"
    algo: str
    policy: str       # "equivariant" or "mlp"


AGENTS = (Agent("maskable-ppo+equivariant", "Schedule", "maskable-ppo", "equivariant"),
          Agent("maskable-ppo+mlp", "Schedule", "maskable-ppo", "mlp"),
          Agent("ppo+equivariant", "Rank", "ppo", "equivariant"),
          Agent("ppo+mlp", "Rank", "ppo", "mlp"))
POLICY_LABEL = {"maskable-ppo+equivariant": "MaskablePPO + MaskableRankerPolicy",
                "maskable-ppo+mlp": "MaskablePPO + MultiInputPolicy",
                "ppo+equivariant": "PPO + RankerPolicy",
                "ppo+mlp": "PPO + MultiInputPolicy"}


# ---------------------------------------------------------------------------- agents
def _load_model(run: Path, algo: str):
    """The SB3 model of a run directory (our own run: its zip is trusted)."""
    from agents.ranker import MaskableRankerPolicy, RankerPolicy
    from agents.train import SelectRankerPolicy
    cfg = json.loads((run / "config.json").read_text())
    policies = {"MaskableRankerPolicy": MaskableRankerPolicy, "RankerPolicy": RankerPolicy,
                "SelectRankerPolicy": SelectRankerPolicy}
    custom = {}
    if cfg.get("policy") == "equivariant":
        name = ("MaskableRankerPolicy" if algo == "maskable-ppo" else
                "RankerPolicy" if variant(cfg["env"]).env == "Rank" else "SelectRankerPolicy")
        custom["policy_class"] = policies[name]
    if algo == "maskable-ppo":
        from sb3_contrib import MaskablePPO
        return MaskablePPO.load(run / "model.zip", device="cpu", custom_objects=custom), cfg
    from stable_baselines3 import PPO
    return PPO.load(run / "model.zip", device="cpu", custom_objects=custom), cfg


def agent_actor(model, env, masked: bool):
    u = env.unwrapped
    select = hasattr(u, "invalid_action")

    def act(obs):
        if masked:
            a, _ = model.predict(obs, action_masks=u.action_masks(), deterministic=True)
        else:
            a, _ = model.predict(obs, deterministic=True)
        return int(a) if select else np.asarray(a, dtype=np.int8)
    return act


def train_agent(env_id: str, agent: Agent, train_dir: Path, timesteps: int | None,
                seed: int) -> Path | None:
    """Train ``agent`` on ``env_id`` from its shipped hyper-parameter entry (``None`` when
    the file has no entry for the id)."""
    file = default_hyperparams_file(agent.algo, agent.policy)
    if file is None or not file.is_file() or env_id not in read_hyperparams(file):
        return None
    out = train_dir / f"{env_id.split('/')[-1].lower()}-{agent.name}-s{seed}"
    config = make_config(env_id, algo=agent.algo, policy=agent.policy, logdir=str(out),
                         timesteps=timesteps, seed=seed)
    print(f"training {agent.name} on {env_id} ({config.hyperparams}): "
          f"{config.timesteps:,} steps -> {out}", file=sys.stderr, flush=True)
    train(config, progress="lines", overwrite=True,
          echo=lambda s: print(s, file=sys.stderr, flush=True))
    return out


def agent_record(run: Path, agent: Agent) -> dict:
    cfg = json.loads((run / "config.json").read_text())
    summary = json.loads((run / "summary.json").read_text())
    keys = ("timesteps", "n_envs", "learning_rate", "n_steps", "batch_size", "n_epochs",
            "gamma", "gae_lambda", "ent_coef", "clip_range", "target_kl", "normalize_reward",
            "train_seeds", "hidden", "policy_kwargs", "imitation_seeds")
    hp = {k: cfg.get(k) for k in keys}
    if cfg.get("policy") != "equivariant":
        hp.pop("hidden")
    if not (cfg.get("policy") == "equivariant" and agent.env == "Rank"):
        hp.pop("imitation_seeds")
    for key in ("target_recall", "init_keep_prob"):
        if cfg.get(key) is not None and agent.env == "Rank":
            hp[key] = cfg[key]
    rl_s = float(summary.get("ppo_s", 0.0)) - float(summary.get("reference_s", 0.0))
    imitation = summary.get("imitation")
    imitation_s = (summary.get("imitation_s") or imitation.get("collect_s", 0.0) + sum(
        h.get("seconds", 0.0) for h in imitation.get("history", ()))) if imitation else None
    return {"run": str(run), "hyperparams_source": cfg.get("hyperparams"),
            "hyperparams": hp, "rl_steps": summary.get("rl_steps"),
            "train_s": rl_s, "imitation_s": imitation_s, "total_s": summary.get("total_s")}


# ---------------------------------------------------------------------------- statistics
def mean_std(x) -> tuple[float, float]:
    x = np.asarray(x, dtype=float)
    x = x[np.isfinite(x)]
    if x.size == 0:
        return float("nan"), float("nan")
    return float(x.mean()), float(x.std(ddof=1)) if x.size > 1 else 0.0


def paired(a, b) -> dict:
    """Paired difference a − b over the same seeds: mean, standard error, 95% t interval."""
    from scipy import stats
    d = np.asarray(a, dtype=float) - np.asarray(b, dtype=float)
    n = d.size
    mean = float(d.mean())
    se = float(d.std(ddof=1) / math.sqrt(n)) if n > 1 else float("nan")
    if n > 1 and se > 0:
        t = float(stats.t.ppf(0.975, n - 1))
        lo, hi = mean - t * se, mean + t * se
    elif n > 1:
        lo = hi = mean
    else:
        lo = hi = float("nan")
    return {"mean": mean, "se": se, "ci95": [lo, hi], "n": n,
            "beats": bool(lo > 0) if np.isfinite(lo) else None}


# ---------------------------------------------------------------------------- runs
def evaluate_id(env_id: str, seeds: list[int], agents: dict[str, tuple], progress=True) -> dict:
    """Every baseline and agent of ``env_id`` on ``seeds``: per policy, the episodes."""
    v = variant(env_id)
    mode = "select" if v.env == "Schedule" else "rank"
    env = gym.make(env_id)
    u = env.unwrapped
    scenario = {"cluster": u.cluster.name, "workload": u.workload_spec, "slots": int(u.K),
                "max_episode_steps": env.spec.max_episode_steps,
                "max_time_s": u.sim_config.max_time_s}
    rows: dict[str, list[dict]] = {}
    names = list(BASELINES[mode]) + list(agents)
    for name in names:
        t0 = time.perf_counter()
        eps = []
        for seed in seeds:
            if name in agents:
                model, masked = agents[name]
                act = agent_actor(model, env, masked)
            else:
                act = baseline_actor(name, env, np.random.default_rng(seed))
            e = run_episode(env, act, seed)
            m = e.pop("metrics")
            e.update(avg_jct_h=m.get("avg_jct_s", float("nan")) / 3600,
                     jobs_completed=m.get("jobs_completed"), jobs_total=m.get("jobs_total"))
            eps.append(e)
        rows[name] = eps
        if progress:
            r = mean_std([e["return"] for e in eps])
            print(f"  {env_id} {name}: return {r[0]:.2f} ± {r[1]:.2f} over {len(seeds)} seeds "
                  f"({time.perf_counter() - t0:.1f} s)", file=sys.stderr, flush=True)
    env.close()
    return {"env": env_id, "scenario": scenario, "seeds": seeds, "episodes": rows}


def summarize(result: dict) -> dict:
    eps = result["episodes"]
    rnd = [e["return"] for e in eps["random"]]
    lp = [e["return"] for e in eps["lp"]]
    table = {}
    for name, runs in eps.items():
        ret = [e["return"] for e in runs]
        row = {"return": mean_std(ret), "avg_jct_h": mean_std([e["avg_jct_h"] for e in runs]),
               "steps": mean_std([e["steps"] for e in runs]),
               "invalid_actions": mean_std([e["invalid_actions"] for e in runs]),
               "jobs_completed": float(np.mean([e["jobs_completed"] or 0 for e in runs])),
               "jobs_total": float(np.mean([e["jobs_total"] or 0 for e in runs])),
               "ends": dict(Counter(e["end_reason"] for e in runs
                                    if e["end_reason"] != "completed"))}
        if name != "random":
            row["vs_random"] = paired(ret, rnd)
        if name != "lp":
            row["vs_lp"] = paired(ret, lp)
        table[name] = row
    return table


# ---------------------------------------------------------------------------- markdown
def _pm(ms, digits=2) -> str:
    m, s = ms
    if not np.isfinite(m):
        return "–"
    return f"{m:.{digits}f} ± {s:.{digits}f}"


def _diff(d: dict | None) -> str:
    if not d or not np.isfinite(d["mean"]):
        return "–"
    lo, hi = d["ci95"]
    return f"{d['mean']:+.2f} ± {d['se']:.2f} [{lo:+.2f}, {hi:+.2f}]"


def _verdict(d: dict | None) -> str:
    if not d or d["beats"] is None:
        return ""
    if d["beats"]:
        return "**yes**"
    return "no (worse)" if d["ci95"][1] < 0 else "no (within noise)"


def markdown(results: list[dict], trained: dict, command: str) -> str:
    lines = [BEGIN, "",
             f"Generated {datetime.now():%Y-%m-%d %H:%M} by", "", "```bash", command, "```", "",
             f"Machine: {platform.machine()}, Python {platform.python_version()}, "
             f"{os.cpu_count()} cores (shared), `OMP_NUM_THREADS=1`, torch threads 1.", "",
             "Return = the episode's summed reward (−job-hours in the system, higher is "
             "better); *Δ vs random* = the paired difference of the return to random's on "
             "the same seeds, mean ± standard error [95% t interval]; *beats random* = that "
             "interval lies above 0. JCT = average job completion time of the completed "
             "jobs; steps = episode length; jobs done = completed of all, with the episodes "
             "that did not complete every job and why (`step_limit`: the id's "
             "`max_episode_steps`; `time_limit`: its `max_time_s`; `invalid_actions`: 1,000 "
             "invalid actions in a row). Training time: RL steps only (the LP and random "
             "references of the training logs excluded), plus the imitation warm start.", ""]
    for res in results:
        env_id, sc = res["env"], res["scenario"]
        table = res["summary"]
        n = len(res["seeds"])
        lines += [f"### `{env_id}`", "",
                  f"{sc['cluster']}, `{sc['workload']}`, K = {sc['slots']}, step limit "
                  f"{sc['max_episode_steps']:,}"
                  + (f", max_time_s {sc['max_time_s']:.0f}" if sc["max_time_s"] else "")
                  + f"; {n} held-out seeds ({res['seeds'][0]:,}…{res['seeds'][-1]:,}).", "",
                  "| policy | return | avg JCT (h) | steps | invalid actions | jobs done | "
                  "Δ return vs random | beats random? | Δ return vs LP |",
                  "|---|---|---|---|---|---|---|---|---|"]
        for name, row in table.items():
            label = POLICY_LABEL.get(name, name)
            done = f"{row['jobs_completed']:.1f}/{row['jobs_total']:.0f}"
            if row.get("ends"):
                done += " (" + ", ".join(f"{n} {why}" for why, n in
                                         sorted(row["ends"].items())) + ")"
            lines.append(f"| {label} | {_pm(row['return'])} | {_pm(row['avg_jct_h'], 3)} | "
                         f"{_pm(row['steps'], 0)} | {_pm(row['invalid_actions'], 0)} | {done} | "
                         f"{_diff(row.get('vs_random'))} | {_verdict(row.get('vs_random'))} | "
                         f"{_diff(row.get('vs_lp'))} |")
        lines.append("")
        mine = {k: v for k, v in trained.get(env_id, {}).items()}
        if mine:
            lines += ["| trained agent | parameters | RL steps | training time | "
                      "hyper-parameters (source) |", "|---|---|---|---|---|"]
            for name, rec in mine.items():
                hp = ", ".join(f"{k}={json.dumps(v) if isinstance(v, (dict, list)) else v}"
                               for k, v in rec["hyperparams"].items())
                took = f"{rec['train_s']:.0f} s"
                if rec.get("imitation_s"):
                    took += f" + {rec['imitation_s']:.0f} s imitation"
                lines.append(f"| {POLICY_LABEL.get(name, name)} | {rec['parameters']:,} | "
                             f"{rec['rl_steps']:,} | {took} | {hp} "
                             f"(`{rec['hyperparams_source']}`) |")
            lines.append("")
    lines.append(END)
    return "\n".join(lines)


SKELETON = """# RL baselines of the registered environments

{generated}
"""


def write_doc(path: Path, generated: str) -> None:
    if path.is_file():
        text = path.read_text(encoding="utf-8")
        if BEGIN in text and END in text:
            a, b = text.index(BEGIN), text.index(END) + len(END)
            path.write_text(text[:a] + generated + text[b:], encoding="utf-8")
            return
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(SKELETON.format(generated=generated), encoding="utf-8")


def render(path: Path, out: Path) -> int:
    """Rewrite ``out``'s tables from the JSON of an earlier run (its command line kept)."""
    data = json.loads(path.read_text())
    agents = {a.name: a for a in AGENTS}
    for res in data["results"]:
        res["summary"] = summarize(res)
    for env_id, recs in data["trained"].items():
        for name, rec in recs.items():
            run = Path(rec["run"])
            if (run / "config.json").is_file() and (run / "summary.json").is_file():
                recs[name] = {**agent_record(run, agents[name]),
                              "parameters": rec.get("parameters")}
    write_doc(out, markdown(data["results"], data["trained"], data["command"]))
    if path.resolve() != out.with_suffix(".json").resolve():
        out.with_suffix(".json").write_text(json.dumps(data, indent=1, default=float))
    else:
        path.write_text(json.dumps(data, indent=1, default=float))
    print(f"rewrote {out} from {path}", file=sys.stderr)
    return 0


# ---------------------------------------------------------------------------- main
#: What ``--run`` needs in a run directory (``_load_model``, ``agent_record``).
RUN_FILES = ("model.zip", "config.json", "summary.json")


def _names(p: argparse.ArgumentParser, flag: str, text: str) -> list[str]:
    """The entries of a comma-separated flag; an empty entry is an error naming ``flag``."""
    names = [n.strip() for n in text.split(",")]
    if not all(names):
        p.error(f"{flag}: an empty entry in {text!r} (a stray comma?)")
    return names


@one_line_errors
def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--ids", default=None,
                   help="comma-separated registered ids (default: the Tiny and Small ids)")
    p.add_argument("--medium", action="store_true",
                   help="also hsched/Schedule-v0, Rank-v0 and the -Medium-v0 ids")
    p.add_argument("--large", action="store_true", help="also the -Large-v0 ids (slow)")
    p.add_argument("--seeds", type=positive_int, default=10, help="held-out seeds per id (10)")
    p.add_argument("--large-seeds", type=positive_int, default=3,
                   help="held-out seeds of Large ids (3)")
    p.add_argument("--no-train", action="store_true", help="baselines (and --run agents) only")
    p.add_argument("--agents", default=None,
                   help=f"comma-separated subset of {', '.join(a.name for a in AGENTS)}")
    p.add_argument("--run", action="append", default=[], metavar="ID:AGENT=RUNDIR",
                   help="evaluate this run directory as AGENT on ID instead of training it")
    p.add_argument("--train-dir", default=str(ROOT / "runs" / "rl-baselines"),
                   help="where the trainings go (this checkout's runs/rl-baselines; "
                        "overwritten)")
    p.add_argument("--timesteps", type=positive_int, default=None,
                   help="override the hyper-parameter files' n_timesteps (quick tries)")
    p.add_argument("--train-seed", type=nonnegative_int, default=0, help="training seed (0)")
    p.add_argument("--out", default=str(ROOT / "docs" / "rl_baselines.md"),
                   help="markdown to write (the JSON goes next to it; default this "
                        "checkout's docs/rl_baselines.md, wherever it is run from)")
    p.add_argument("--no-progress", action="store_true")
    p.add_argument("--render", default=None, metavar="JSON",
                   help="only rewrite --out from an earlier run's JSON (same command line, "
                        "no episodes run; trained agents' records re-read from their run "
                        "directories when present)")
    args = p.parse_args(argv)
    # (its folder is made if missing, as the training runs' folder is)
    problem = ("it is a folder, not a file" if Path(args.out).is_dir()
               else output_folder_problem(Path(args.out).parent))
    if problem:
        p.error(f"--out: cannot write {args.out!r}: {problem}")
    if args.render:
        # the rendered JSON's own ids, agents and seeds are what it shows
        given = [f for f, v in (("--ids", args.ids), ("--medium", args.medium),
                                ("--large", args.large), ("--agents", args.agents),
                                ("--run", args.run), ("--no-train", args.no_train)) if v]
        if given:
            p.error(f"--render rewrites an earlier run's tables; {', '.join(given)} would "
                    f"change nothing")
        if not Path(args.render).is_file():
            p.error(f"--render: no such file: {args.render}")
        try:
            return render(Path(args.render), Path(args.out))
        except (ValueError, KeyError, TypeError) as exc:      # not this script's JSON
            p.error(f"--render: {args.render} is not an earlier run's JSON "
                    f"({type(exc).__name__}: {exc})")

    ids = ((_names(p, "--ids", args.ids) if args.ids else list(SMALL_IDS))
           + (list(MEDIUM_IDS) if args.medium else []) + (list(LARGE_IDS) if args.large else []))
    ids = list(dict.fromkeys(ids))                  # --ids and --medium may name one twice
    for env_id in ids:
        try:
            variant(env_id)
        except UnknownNameError as exc:
            p.error(f"--ids: {exc}")
    agent_of = {a.name: a for a in AGENTS}
    wanted = set(_names(p, "--agents", args.agents)) if args.agents else set(agent_of)
    unknown = sorted(wanted - set(agent_of))
    if unknown:
        p.error(f"--agents: unknown agent {', '.join(map(repr, unknown))} "
                f"(choose from {', '.join(agent_of)})")
    given: dict[tuple[str, str], Path] = {}
    for item in args.run:
        key, _, path = item.partition("=")
        env_id, _, name = key.rpartition(":")
        if not path or not env_id or name not in agent_of:
            p.error(f"--run wants ID:AGENT=RUNDIR (AGENT one of {', '.join(agent_of)}), "
                    f"got {item!r}")
        if env_id not in ids:
            p.error(f"--run {item}: {env_id} is not among the ids evaluated "
                    f"({', '.join(ids)}; see --ids, --medium, --large)")
        if agent_of[name].env != variant(env_id).env:
            p.error(f"--run {item}: {name} is a {agent_of[name].env} agent and {env_id} a "
                    f"{variant(env_id).env} id")
        if name not in wanted:
            p.error(f"--run {item}: {name} is not among --agents")
        run = Path(path)
        if not run.is_dir():
            p.error(f"--run {item}: no such run directory: {run}")
        missing = [f for f in RUN_FILES if not (run / f).is_file()]
        if missing:
            p.error(f"--run {item}: {run} has no {', '.join(missing)} (a finished 'hsched "
                    f"train' run directory has {', '.join(RUN_FILES)})")
        given[(env_id, name)] = run

    results, trained = [], {}
    t_all = time.perf_counter()
    for env_id in ids:
        v = variant(env_id)
        n = args.large_seeds if v.level == "Large" else args.seeds
        seeds = list(HELDOUT_SEEDS[:n])
        agents: dict[str, tuple] = {}
        for agent in AGENTS:
            if agent.env != v.env or agent.name not in wanted:
                continue
            run = given.get((env_id, agent.name))
            if run is None and not args.no_train:
                run = train_agent(env_id, agent, Path(args.train_dir), args.timesteps,
                                  args.train_seed)
            if run is None:
                continue
            model, _ = _load_model(run, agent.algo)
            agents[agent.name] = (model, agent.algo == "maskable-ppo")
            rec = agent_record(run, agent)
            rec["parameters"] = int(sum(q.numel() for q in model.policy.parameters()))
            trained.setdefault(env_id, {})[agent.name] = rec
        names = list(BASELINES["select" if v.env == "Schedule" else "rank"]) + list(agents)
        print(f"{env_id}: {len(seeds)} held-out seeds, policies {', '.join(names)}",
              file=sys.stderr, flush=True)
        res = evaluate_id(env_id, seeds, agents, progress=not args.no_progress)
        res["summary"] = summarize(res)
        results.append(res)

    command = "OMP_NUM_THREADS=1 .venv/bin/python scripts/rl_baselines.py " + " ".join(
        shlex.quote(a) for a in (argv if argv is not None else sys.argv[1:]))
    out = Path(args.out)
    write_doc(out, markdown(results, trained, command.rstrip()))
    data = {"command": command.rstrip(), "generated": datetime.now().isoformat(timespec="seconds"),
            "wall_s": time.perf_counter() - t_all,
            "results": [{k: v for k, v in r.items()} for r in results], "trained": trained}
    out.with_suffix(".json").write_text(json.dumps(data, indent=1, default=float))
    print(f"wrote {out} and {out.with_suffix('.json')} in {time.perf_counter() - t_all:.0f} s",
          file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
