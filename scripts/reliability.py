"""Reliability checks of the environments and the LP policy (the figures of RELIABILITY.md).

    python scripts/reliability.py [--steps 100000] [--rank-steps N] [--seed 0]
                                  [--markdown [FILE]] [--json FILE]

1. **Random-action soak**, one fresh process per mode (so its memory figures are its own):
   ``--steps`` steps of ``hsched/Schedule-v0`` and ``--rank-steps`` (default: ``--steps``) of
   ``hsched/Rank-v0``, half uniformly random over the whole action space (in select mode
   mostly invalid no-ops; in rank mode keep bits on empty, masked slots too), half random
   valid actions; resetting (with a new episode seed) when
   an episode ends. Every step: no exception, observation inside the observation space with no
   NaN/inf, finite reward. Reports steps/s, episodes, invalid actions, LP fallbacks and RSS
   after warm-up (10% of the steps, at most 10,000) against the end, plus the peak RSS.
2. **Determinism across processes**: the same seeded trajectory (observations, rewards, flags
   and ``info`` without wall-clock fields) hashed in two subprocesses with different
   ``PYTHONHASHSEED`` and in this process; all hashes must match.
3. **State copies**: ``get_state()`` mid-episode (mid-round in select mode), a branch of random
   actions, ``set_state()`` twice and a ``copy.deepcopy`` of the environment must each replay
   the branch identically.
4. **Fault injection**: each fault kind injected into 30% of the LP solves (seeded) of a
   simulation (with ``check_invariants``), a Schedule-v0 episode (the LP reference actions) and
   a Rank-v0 episode (random keep bits): the run must complete, and the policy's
   ``lp_fallbacks`` must equal the faults injected.

Prints a JSON summary on stdout (and ``--json FILE``); ``--markdown`` also prints markdown
tables (``--markdown FILE`` writes them to FILE). Exit status 1 if any check failed.
"""

from __future__ import annotations

import argparse
import copy
import dataclasses
import hashlib
import json
import math
import os
import resource
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

import gymnasium as gym

import hsched_env  # noqa: F401  (registers the environments)
from hsched_env.defaults import EARLIER_DRAWS

sys.path.append(str(Path(__file__).resolve().parent))       # script_args, next to this file
from script_args import nonnegative_int, positive_int, refuse_unwritable  # noqa: E402

SCHEDULE = {"env_id": "hsched/Schedule-v0", "cluster": "sia-64",
            "workload": f"gavel:rate=4,jobs=100,{EARLIER_DRAWS}", "kwargs": {}}
# Rank steps are one LP round each (~4 ms with the default workload): a lighter scenario
RANK = {"env_id": "hsched/Rank-v0", "cluster": "sia-64",
        "workload": f"gavel:rate=2,jobs=30,{EARLIER_DRAWS}",
        "kwargs": {"lp_policy": "lp-on-change"}}
MODES = {"schedule": SCHEDULE, "rank": RANK}
FAULT_KINDS = ("exception", "infeasible", "error", "unavailable", "time_limit",
               "bad_solution", "invalid_input")
WALL_CLOCK = ("decision_time_s", "wall_s", "decision_time_mean_s", "decision_time_p99_s",
              "decision_time_max_s")


# ------------------------------------------------------------------------------ helpers
def rss_mb() -> float:
    """Resident set size of this process now, MB (Linux /proc)."""
    try:
        with open("/proc/self/statm") as fh:
            pages = int(fh.read().split()[1])
        return pages * os.sysconf("SC_PAGE_SIZE") / 2**20
    except (OSError, ValueError):
        return math.nan


def peak_rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0   # KB on Linux


def progress(total: int, desc: str):
    try:
        from tqdm import tqdm
    except ImportError:                          # the bar is optional
        return None
    return tqdm(total=total, desc=desc, unit="step", file=sys.stderr, mininterval=1.0,
                smoothing=0.05, disable=None)


def make_env(mode: str, **extra):
    cfg = MODES[mode]
    return gym.make(cfg["env_id"], cluster=cfg["cluster"], workload=cfg["workload"],
                    **{**cfg["kwargs"], **extra})


def random_action(env, obs, rng: np.random.Generator, mode: str):
    """Half uniformly random over the whole action space, half random valid."""
    u = env.unwrapped
    K = u.K
    if rng.random() < 0.5:
        if mode == "schedule":
            return int(rng.integers(K + 1))
        return rng.integers(0, 2, K).astype(np.int8)
    if mode == "schedule":
        valid = np.flatnonzero(u.action_masks())          # commit is always valid
        return int(valid[rng.integers(valid.size)])
    p = rng.random()                                      # keep-nothing ... keep-all
    return ((rng.random(K) < p) & (obs["valid"] > 0)).astype(np.int8)


def check_step(space, obs, reward) -> str | None:
    """Why this step is broken, or None."""
    for key, value in obs.items():
        if not np.all(np.isfinite(value)):
            return f"non-finite values in observation[{key!r}]"
    if not space.contains(obs):
        bad = [k for k in obs if not space[k].contains(obs[k])]
        return f"observation outside the observation space: {bad}"
    if not math.isfinite(reward):
        return f"non-finite reward {reward!r}"
    return None


def clean(value):
    """JSON-ready, without wall-clock fields."""
    if isinstance(value, dict):
        return {str(k): clean(v) for k, v in sorted(value.items(), key=lambda kv: str(kv[0]))
                if k not in WALL_CLOCK}
    if isinstance(value, (list, tuple)):
        return [clean(v) for v in value]
    if isinstance(value, np.ndarray):
        return clean(value.tolist())
    if isinstance(value, (np.integer,)):
        return int(value)
    if isinstance(value, (float, np.floating)):
        return repr(float(value))
    return value


def digest_step(h, obs, reward, terminated, truncated, info) -> None:
    for key in sorted(obs):
        h.update(key.encode())
        h.update(np.ascontiguousarray(obs[key]).tobytes())
    h.update(repr((float(reward), bool(terminated), bool(truncated))).encode())
    h.update(json.dumps(clean(info), sort_keys=True).encode())


# ------------------------------------------------------------------------------ 1. soak
def soak(mode: str, steps: int, seed: int) -> dict:
    env = make_env(mode)
    space = env.observation_space
    rng = np.random.default_rng(seed)
    episode_seed = seed
    obs, _ = env.reset(seed=episode_seed)
    warm_at = max(min(steps // 10, 10_000), 1)
    out = {"mode": mode, "env_id": MODES[mode]["env_id"], "cluster": MODES[mode]["cluster"],
           "workload": MODES[mode]["workload"], "kwargs": MODES[mode]["kwargs"],
           "K": env.unwrapped.K, "steps": 0, "episodes_completed": 0, "episodes_truncated": 0,
           "invalid_actions": 0, "masked_steps": 0, "ignored_keeps": 0, "lp_fallbacks": 0,
           "failures": [], "rss_start_mb": rss_mb(), "warmup_steps": warm_at,
           "rss_curve_mb": []}
    tenth = max(steps // 10, 1)
    bar = progress(steps, f"soak {mode}")
    t0 = time.perf_counter()
    for i in range(steps):
        action = random_action(env, obs, rng, mode)
        try:
            obs, reward, terminated, truncated, info = env.step(action)
        except Exception as exc:                           # noqa: BLE001 - reported
            out["failures"].append(f"step {i}: {type(exc).__name__}: {exc}")
            break
        out["steps"] += 1
        out["invalid_actions"] += bool(info.get("invalid_action", False))
        ignored = int(info.get("ignored_keeps", 0))       # rank: keep bits on empty slots
        out["ignored_keeps"] += ignored
        out["masked_steps"] += ignored > 0
        problem = check_step(space, obs, reward)
        if problem:
            out["failures"].append(f"step {i}: {problem}")
            if len(out["failures"]) >= 10:
                break
        if terminated or truncated:
            out["episodes_completed" if terminated else "episodes_truncated"] += 1
            out["lp_fallbacks"] += int(info["metrics"].get("lp_fallbacks", 0))
            episode_seed += 1
            obs, _ = env.reset(seed=episode_seed)
        if i + 1 == warm_at:
            out["rss_warm_mb"] = rss_mb()
        if (i + 1) % tenth == 0:
            out["rss_curve_mb"].append(rss_mb())
        if bar is not None and (i + 1) % 500 == 0:
            bar.update(500)
    if bar is not None:
        bar.close()
    out["seconds"] = time.perf_counter() - t0
    out["steps_per_s"] = out["steps"] / max(out["seconds"], 1e-9)
    out["rss_end_mb"] = rss_mb()
    out.setdefault("rss_warm_mb", out["rss_end_mb"])
    out["rss_growth_mb"] = out["rss_end_mb"] - out["rss_warm_mb"]
    out["peak_rss_mb"] = max(peak_rss_mb(), out["rss_end_mb"])   # ru_maxrss lags a little
    # an episode's fallbacks are added when it ends; add those of the one under way when the
    # soak stopped (its counters start at 0 on reset), read after the timings and RSS
    try:
        out["lp_fallbacks"] += int(env.unwrapped.metrics().get("lp_fallbacks", 0))
    except Exception as exc:                               # noqa: BLE001 - reported
        out["failures"].append(f"metrics of the last episode: {type(exc).__name__}: {exc}")
    out["ok"] = not out["failures"] and out["steps"] == steps
    return out


# ------------------------------------------------------------------------------ 2. determinism
def trajectory_hash(mode: str, steps: int, seed: int) -> str:
    extra = {"measure_time": False} if mode == "rank" else {}
    env = make_env(mode, **extra)
    rng = np.random.default_rng(seed)
    h = hashlib.sha256()
    obs, info = env.reset(seed=seed)
    digest_step(h, obs, 0.0, False, False, info)
    episode_seed = seed
    for _ in range(steps):
        obs, reward, terminated, truncated, info = env.step(random_action(env, obs, rng, mode))
        digest_step(h, obs, reward, terminated, truncated, info)
        if terminated or truncated:
            episode_seed += 1
            obs, info = env.reset(seed=episode_seed)
            digest_step(h, obs, 0.0, False, False, info)
    return h.hexdigest()


def determinism(steps: dict, seed: int) -> dict:
    out = {}
    for mode, n in steps.items():
        hashes = {"this process": trajectory_hash(mode, n, seed)}
        for hash_seed in ("0", "12345"):
            proc = subprocess.run(
                [sys.executable, str(Path(__file__).resolve()), "--_hash", mode, str(n),
                 str(seed)], capture_output=True, text=True, cwd=ROOT, check=False,
                env={**os.environ, "PYTHONHASHSEED": hash_seed})
            hashes[f"subprocess PYTHONHASHSEED={hash_seed}"] = (
                proc.stdout.strip().splitlines()[-1] if proc.returncode == 0
                else f"failed: {proc.stderr.strip()[-300:]}")
        out[mode] = {"steps": n, "hashes": hashes, "ok": len(set(hashes.values())) == 1}
    return out


# ------------------------------------------------------------------------------ 3. state copies
def state_copies(mode: str, before: int, branch: int, seed: int) -> dict:
    extra = {"measure_time": False} if mode == "rank" else {}
    env = make_env(mode, **extra)
    u = env.unwrapped
    rng = np.random.default_rng(seed)
    obs, _ = u.reset(seed=seed)
    for _ in range(before):
        obs, _, term, trunc, _ = u.step(random_action(env, obs, rng, mode))
        if term or trunc:
            obs, _ = u.reset(seed=seed + 1)
    if mode == "schedule":                     # stop mid-round, after a placement
        for _ in range(1000):
            if u.action_masks()[:u.K].any():
                break
            obs, *_ = u.step(u.K)
        valid = np.flatnonzero(u.action_masks()[:u.K])
        if valid.size:
            obs, *_ = u.step(int(valid[0]))
    snap = u.get_state()
    obs_at = obs                              # the observation of the snapshot's state
    actions = []

    def run_branch(e, acts=None) -> str:
        h = hashlib.sha256()
        o = obs_at
        for k in range(branch):
            if acts is None:
                a = random_action(env, o, rng, mode)
                actions.append(a)
            else:
                a = acts[k]
            o, r, term, trunc, info = e.step(a)
            digest_step(h, o, r, term, trunc, info)
            if term or trunc:
                break
        return h.hexdigest()

    first = run_branch(u)
    again = []
    for _ in range(2):
        u.set_state(snap)
        again.append(run_branch(u, actions))
    u.set_state(snap)
    clone = copy.deepcopy(u)
    cloned = run_branch(clone, actions)
    after_clone = run_branch(u, actions)      # the original is untouched by the clone
    hashes = [first] + again + [cloned, after_clone]
    return {"steps_before": before, "branch_steps": len(actions),
            "replays": len(hashes) - 1, "ok": len(set(hashes)) == 1}


# ------------------------------------------------------------------------------ 4. faults
class Injector:
    """Wraps ``solve_allocation`` where the policies' solves run (``lp_baseline.parallel_parts``,
    in this process: the serial and thread executors) and ``AllocationProblem`` in
    ``lp_baseline.policy`` so that a seeded 30% of the LP solves fail as ``kind`` says; counts
    what it injected."""

    def __init__(self, kind: str, seed: int, rate: float = 0.3) -> None:
        import lp_baseline.parallel_parts as parts_mod
        import lp_baseline.policy as policy_mod
        import lp_baseline.solver as solver_mod
        self.kind, self.rate = kind, rate
        self.rng = np.random.default_rng(seed)
        self.injected = 0
        self.parts_mod, self.policy_mod, self.solver_mod = parts_mod, policy_mod, solver_mod
        self.saved = (parts_mod.solve_allocation, policy_mod.AllocationProblem)

    def _fire(self) -> bool:
        if self.rng.random() < self.rate:
            self.injected += 1
            return True
        return False

    def __enter__(self):
        real_solve, real_problem = self.saved
        solver_mod, kind = self.solver_mod, self.kind

        def solve(problem, objective="max-min", **kw):
            if kind == "invalid_input" or not self._fire():
                return real_solve(problem, objective, **kw)
            if kind == "exception":
                raise RuntimeError("injected solver crash")
            if kind == "unavailable":                # the real code path without highspy
                saved, solver_mod.highspy = solver_mod.highspy, None
                try:
                    return real_solve(problem, objective, **kw)
                finally:
                    solver_mod.highspy = saved
            res = real_solve(problem, objective, **kw)
            zeros = np.zeros(problem.n_candidates)
            if kind in ("infeasible", "error"):
                return dataclasses.replace(res, x=zeros, status=kind, has_x=False,
                                           message=f"injected {kind}")
            if kind == "time_limit":
                return dataclasses.replace(res, x=zeros, status="time_limit", has_x=False)
            if kind == "bad_solution":
                return dataclasses.replace(res, x=np.full(problem.n_candidates, np.nan))
            raise AssertionError(kind)

        def problem(**kw):
            if kind == "invalid_input" and self._fire():
                kw["thr"] = np.array(kw["thr"], dtype=float)
                kw["thr"][0] = np.nan
            return real_problem(**kw)

        self.parts_mod.solve_allocation = solve
        self.policy_mod.AllocationProblem = problem
        return self

    def __exit__(self, *exc):
        self.parts_mod.solve_allocation, self.policy_mod.AllocationProblem = self.saved
        return False


def fault_injection(seed: int) -> dict:
    import logging

    from hsched_env.cluster import get_cluster
    from hsched_env.simulator import SimConfig, Simulator
    from hsched_env.workloads import load_workload
    from lp_baseline.policy import make_policy
    logging.getLogger("lp_baseline.policy").setLevel(logging.ERROR)   # warnings expected
    cluster = get_cluster("sia-64")
    workload = load_workload(
        f"gavel:rate=6,jobs=30,seed=2,duration_scale=0.2,{EARLIER_DRAWS}", cluster)
    rows = []
    for i, kind in enumerate(FAULT_KINDS):
        for target in ("simulator", "schedule", "rank"):
            row = {"kind": kind, "target": target, "error": None}
            try:
                with Injector(kind, seed + i) as inj:
                    if target == "simulator":
                        policy = make_policy("heterosched-lp")
                        res = Simulator(cluster, workload, policy,
                                        SimConfig(check_invariants=True)).run()
                        m, completed = res.metrics(), all(r.done for r in res.jobs)
                    else:
                        m, completed = _fault_episode(target, seed, inj)
                row.update(injected=inj.injected, lp_fallbacks=int(m["lp_fallbacks"]),
                           kinds=m.get("lp_fallback_kinds", {}), completed=completed,
                           jobs=f"{m['jobs_completed']}/{m['jobs_total']}")
                row["ok"] = (completed and inj.injected > 0
                             and row["lp_fallbacks"] == inj.injected
                             and set(row["kinds"]) <= {kind})
            except Exception as exc:                       # noqa: BLE001 - reported
                row.update(error=f"{type(exc).__name__}: {exc}", ok=False)
            rows.append(row)
    return {"rows": rows, "runs": len(rows), "survived": sum(r["error"] is None for r in rows),
            "injected": sum(r.get("injected", 0) for r in rows),
            "counted": sum(r.get("lp_fallbacks", 0) for r in rows),
            "ok": all(r["ok"] for r in rows)}


def _fault_episode(target: str, seed: int, inj) -> tuple[dict, bool]:
    mode = target
    extra = {"measure_time": False} if mode == "rank" else {}
    env = gym.make(MODES[mode]["env_id"], cluster="sia-64",
                   workload=f"gavel:rate=6,jobs=20,{EARLIER_DRAWS}",
                   slots=64 if mode == "schedule" else 256, **extra)
    u = env.unwrapped
    u.sim_config = dataclasses.replace(u.sim_config, check_invariants=True)
    rng = np.random.default_rng(seed)
    obs, _ = env.reset(seed=seed)
    for _ in range(200_000):
        if mode == "schedule":
            action = u.reference_action()           # no extra LP solve
        else:
            action = ((rng.random(u.K) < 0.7) & (obs["valid"] > 0)).astype(np.int8)
        obs, reward, terminated, truncated, info = env.step(action)
        if not math.isfinite(reward):
            raise AssertionError("non-finite reward")
        if terminated or truncated:
            return info["metrics"], bool(terminated)
    raise AssertionError("the episode did not end")


# ------------------------------------------------------------------------------ report
def markdown(summary: dict) -> str:
    lines = ["### Random-action soak", "",
             ("| mode | scenario | steps | steps/s | episodes (done / truncated) | invalid or "
              "masked actions | LP fallbacks | RSS after warm-up MB | RSS at end MB | growth MB "
              "| peak RSS MB | failures |"),
             "|---|---|---:|---:|---|---:|---:|---:|---:|---:|---:|---:|"]
    for mode, s in summary["soak"].items():
        scenario = f"`{s.get('cluster')}`, `{s.get('workload')}`, K={s.get('K')}"
        if s.get("kwargs"):
            scenario += ", " + ", ".join(f"{k}={v}" for k, v in s["kwargs"].items())
        lines.append(
            f"| {s.get('env_id', mode)} | {scenario} | {s.get('steps', 0):,} | "
            f"{s.get('steps_per_s', 0):,.0f} | {s.get('episodes_completed', 0)} / "
            f"{s.get('episodes_truncated', 0)} | "
            f"{s.get('invalid_actions', 0) + s.get('masked_steps', 0):,} | "
            f"{s.get('lp_fallbacks', 0)} | {s.get('rss_warm_mb', math.nan):.1f} | "
            f"{s.get('rss_end_mb', math.nan):.1f} | {s.get('rss_growth_mb', math.nan):+.1f} | "
            f"{s.get('peak_rss_mb', math.nan):.1f} | {len(s.get('failures', []))} |")
    lines += ["", "RSS (MB) every 10% of the steps:", ""]
    for mode, s in summary["soak"].items():
        curve = ", ".join(f"{v:.1f}" for v in s.get("rss_curve_mb", []))
        lines.append(f"* {s.get('env_id', mode)}: {curve}")
    lines += ["", "### Determinism across processes", "",
              "| mode | steps | hashes compared | identical |", "|---|---:|---:|---|"]
    for mode, d in summary["determinism"].items():
        lines.append(f"| {mode} | {d['steps']:,} | {len(d['hashes'])} | "
                     f"{'yes' if d['ok'] else 'NO'} |")
    lines += ["", "### get_state / set_state", "",
              ("| mode | steps before | branch steps | replays (set_state ×2, deepcopy, "
               "original) | identical |"), "|---|---:|---:|---:|---|"]
    for mode, d in summary["state"].items():
        lines.append(f"| {mode} | {d['steps_before']} | {d['branch_steps']} | {d['replays']} | "
                     f"{'yes' if d['ok'] else 'NO'} |")
    f = summary["faults"]
    lines += ["", "### Fault injection (30% of LP solves)", "",
              ("| fault kind | target | faults injected | lp_fallbacks counted | jobs done | "
               "survived |"), "|---|---|---:|---:|---|---|"]
    for r in f["rows"]:
        lines.append(f"| {r['kind']} | {r['target']} | {r.get('injected', '-')} | "
                     f"{r.get('lp_fallbacks', '-')} | {r.get('jobs', '-')} | "
                     f"{'yes' if r['ok'] else 'NO: ' + str(r['error'])} |")
    lines.append(f"| **all** | {f['runs']} runs | {f['injected']} | {f['counted']} | | "
                 f"{f['survived']}/{f['runs']} |")
    return "\n".join(lines) + "\n"


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--steps", type=positive_int, default=100_000, help="select-mode soak steps")
    ap.add_argument("--rank-steps", type=positive_int, default=None,
                    help="rank-mode soak steps (default: --steps)")
    ap.add_argument("--seed", type=nonnegative_int, default=0)
    ap.add_argument("--markdown", nargs="?", const="-", default=None, metavar="FILE",
                    help="also print markdown tables (or write them to FILE)")
    ap.add_argument("--json", default=None, metavar="FILE", help="also write the JSON here")
    ap.add_argument("--_soak", nargs=3, metavar=("MODE", "STEPS", "SEED"),
                    help=argparse.SUPPRESS)
    ap.add_argument("--_hash", nargs=3, metavar=("MODE", "STEPS", "SEED"),
                    help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args._hash:
        print(trajectory_hash(args._hash[0], int(args._hash[1]), int(args._hash[2])))
        return 0
    if args._soak:
        print(json.dumps(soak(args._soak[0], int(args._soak[1]), int(args._soak[2]))))
        return 0
    refuse_unwritable(ap, json=args.json, markdown=args.markdown)
    steps = {"schedule": args.steps,
             "rank": args.rank_steps if args.rank_steps is not None else args.steps}
    t0 = time.perf_counter()
    summary = {"command": " ".join(["python", "scripts/reliability.py"]
                                   + (argv if argv is not None else sys.argv[1:])),
               "seed": args.seed, "soak": {}}
    for mode, n in steps.items():
        # a fresh process per mode: its RSS figures are its own
        proc = subprocess.run([sys.executable, str(Path(__file__).resolve()), "--_soak", mode,
                               str(n), str(args.seed)], stdout=subprocess.PIPE, text=True,
                              cwd=ROOT, check=False)
        try:
            summary["soak"][mode] = json.loads(proc.stdout.strip().splitlines()[-1])
        except (IndexError, json.JSONDecodeError):
            summary["soak"][mode] = {"mode": mode, "ok": False,
                                     "failures": [f"soak process exited {proc.returncode}"]}
    det_steps = {"schedule": min(steps["schedule"], 5000), "rank": min(steps["rank"], 1000)}
    print("determinism across processes ...", file=sys.stderr)
    summary["determinism"] = determinism(det_steps, args.seed)
    print("state copies ...", file=sys.stderr)
    summary["state"] = {"schedule": state_copies("schedule", 400, 300, args.seed),
                        "rank": state_copies("rank", 40, 40, args.seed)}
    print("fault injection ...", file=sys.stderr)
    summary["faults"] = fault_injection(args.seed)
    summary["seconds"] = time.perf_counter() - t0
    summary["ok"] = (all(s.get("ok") for s in summary["soak"].values())
                     and all(d["ok"] for d in summary["determinism"].values())
                     and all(d["ok"] for d in summary["state"].values())
                     and summary["faults"]["ok"])
    text = json.dumps(summary, indent=1, default=str)
    print(text)
    if args.json:
        Path(args.json).write_text(text + "\n")
    if args.markdown:
        md = markdown(summary)
        if args.markdown == "-":
            print(md)
        else:
            Path(args.markdown).write_text(md)
    return 0 if summary["ok"] else 1


if __name__ == "__main__":
    sys.exit(main())
