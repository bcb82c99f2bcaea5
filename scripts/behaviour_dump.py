"""Dump every observable behaviour a refactor must keep: `hsched compare` metrics, `hsched
evaluate --suite smoke` metrics and the environments' seeded rollouts, without wall-clock fields.

    .venv/bin/python scripts/behaviour_dump.py --out before.json     # on the old commit
    .venv/bin/python scripts/behaviour_dump.py --out after.json      # on the new one
    .venv/bin/python scripts/behaviour_dump.py --diff before.json after.json

A refactor keeps behaviour when ``--diff`` prints nothing and exits 0. (Against a commit before
session 45 every ``gavel:`` case differs: the generator now draws Recommendation at one GPU,
as Gavel does, docs/workloads.md.) The Pollux trace case
reads ``../shared`` beside the repository; from a worktree elsewhere give ``--shared DIR``.
The CLI runs go through
the installed ``hsched`` command (so the dump does not depend on where the CLI module lives);
the rollouts through ``gymnasium.make`` with actions drawn from a seeded generator among the
valid ones (``action_masks()``), plus the environments' own ``reference_action()``.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
HSCHED = str(Path(sys.executable).with_name("hsched"))
#: Where ``../shared`` is by default: the folder holding ``$HSCHED_TRACES`` when that is set
#: (as the tests read the traces), else ``../shared`` (``--shared``: any other).
SHARED = (Path(os.environ["HSCHED_TRACES"]).resolve().parent if os.environ.get("HSCHED_TRACES")
          else ROOT.parent / "shared")
POLLUX_W2 = Path("traces") / "pollux" / "workloads" / "workload-2.csv"     # under SHARED

#: Keys whose values are wall-clock measurements (they differ between any two runs).
WALL_CLOCK = ("decision_time", "wall_s", "decide_s", "solve_s", "build_s", "_ms", "seconds",
              "time_per", "elapsed", "steps_per_s", "fps", "ranker_time",
              "decision_with_observation", "observation_time")

COMPARES = [
    ("sia-64", "gavel:rate=4,jobs=40,seed=1",
     "heterosched-lp,heterosched-lp-las,heterosched-lp-v0,gavel,agnostic-lp,sia,heterosched-ilp,"
     "topk,topk-dominance,pop-2,lp-on-change,fifo", []),
    ("modern-512", "gavel:rate=6,jobs=40,seed=2,mix=llm", "heterosched-lp,gavel,sia", []),
    ("gavel-108", "gavel:rate=3,jobs=30,seed=0", "heterosched-lp,gavel",
     ["--throughputs", "gavel"]),
    # {shared} is filled in by ``dump`` (the dump records the case as written here, so dumps
    # made from different checkouts compare)
    ("sia-64", f"pollux:path={{shared}}/{POLLUX_W2}", "heterosched-lp,gavel",
     ["--measure-jobs", "0:60"]),
    ("sia-64", "gavel:rate=4,jobs=30,seed=3", "heterosched-lp", ["--objective", "max-min"]),
    ("sia-64", "gavel:rate=4,jobs=30,seed=3", "heterosched-lp",
     ["--objective", "fair-las", "--floor", "0.25"]),
]

ROLLOUTS = [
    ("hsched/Schedule-v0", {"workload": "gavel:rate=4,jobs=20"}, 0),
    ("hsched/Schedule-v0", {"workload": "gavel:rate=4,jobs=20", "candidate_filter": "lp"}, 1),
    ("hsched/Rank-v0", {"workload": "gavel:rate=4,jobs=20"}, 2),
]
ROLLOUT_STEPS = 120


def scrub(obj):
    """``obj`` without wall-clock fields (recursively)."""
    if isinstance(obj, dict):
        return {k: scrub(v) for k, v in obj.items()
                if not any(w in str(k) for w in WALL_CLOCK)}
    if isinstance(obj, list):
        return [scrub(v) for v in obj]
    return obj


def run_json(args: list[str]) -> object:
    out = subprocess.run([HSCHED, *args, "--json", "--no-progress"], capture_output=True,
                         text=True, cwd=ROOT, check=False)
    if out.returncode != 0:
        raise SystemExit(f"hsched {' '.join(args)} failed:\n{out.stderr[-2000:]}")
    return json.loads(out.stdout)


def digest(a) -> str:
    a = np.ascontiguousarray(np.asarray(a))
    return hashlib.sha256(a.tobytes() + str(a.dtype).encode() + str(a.shape).encode()).hexdigest()[:16]


def rollout(env_id: str, kwargs: dict, seed: int) -> dict:
    import gymnasium as gym

    import hsched_env  # noqa: F401  (registers the environments)
    env = gym.make(env_id, **kwargs).unwrapped
    rng = np.random.default_rng(seed)
    obs, info = env.reset(seed=seed)
    trace = [{k: digest(v) for k, v in sorted(obs.items())}]
    total = 0.0
    for t in range(ROLLOUT_STEPS):
        if hasattr(env, "reference_action") and t % 3 == 0 and _can_reference(env):
            action = env.reference_action()
        else:
            action = _random_valid(env, rng)
        obs, reward, terminated, truncated, info = env.step(action)
        total += float(reward)
        trace.append({"a": digest(action), "r": float(reward), "term": bool(terminated),
                      "trunc": bool(truncated),
                      "obs": {k: digest(v) for k, v in sorted(obs.items())},
                      "info": scrub(_plain(info))})
        if terminated or truncated:
            break
    return {"steps": trace, "total_reward": total, "metrics": scrub(_plain(env.metrics()))}


def _can_reference(env) -> bool:
    try:
        env.reference_action()
    except RuntimeError:
        return False
    return True


def _random_valid(env, rng):
    mask = np.asarray(env.action_masks(), dtype=bool)
    from gymnasium.spaces import Discrete
    if isinstance(env.action_space, Discrete):
        return int(rng.choice(np.flatnonzero(mask)))
    # MultiBinary rank action: per slot [drop allowed, keep allowed]
    pairs = mask.reshape(-1, 2)
    a = np.zeros(pairs.shape[0], dtype=np.int8)
    for i, (drop, keep) in enumerate(pairs):
        opts = [v for v, ok in ((0, drop), (1, keep)) if ok] or [1]
        a[i] = rng.choice(opts)
    return a


def _plain(obj):
    if isinstance(obj, dict):
        return {str(k): _plain(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [_plain(v) for v in obj]
    if isinstance(obj, np.ndarray):
        return digest(obj)
    if isinstance(obj, np.generic):
        return obj.item()
    return obj


def dump(shared: Path = SHARED) -> dict:
    out = {"compare": [], "evaluate": None, "rollouts": []}
    for cluster, workload, policies, extra in COMPARES:
        print(f"compare {cluster} {workload[:40]} {policies[:40]}", file=sys.stderr, flush=True)
        res = run_json(["compare", "--cluster", cluster, "--workload",
                        workload.format(shared=shared), "--policies", policies, *extra])
        out["compare"].append({"case": [cluster, workload, policies, extra],
                               "result": scrub(res)})
    print("evaluate --suite smoke", file=sys.stderr, flush=True)
    with tempfile.TemporaryDirectory(prefix="behaviour_dump_eval-") as where:   # a fresh one
        out["evaluate"] = scrub(run_json(["evaluate", "--suite", "smoke", "--out", where]))
    for env_id, kwargs, seed in ROLLOUTS:
        print(f"rollout {env_id} {kwargs}", file=sys.stderr, flush=True)
        out["rollouts"].append({"case": [env_id, kwargs, seed],
                                "result": rollout(env_id, kwargs, seed)})
    return out


def diff(a, b, path="") -> list[str]:
    if type(a) is not type(b):
        return [f"{path}: {a!r} != {b!r}"]
    if isinstance(a, dict):
        out = []
        for k in sorted(set(a) | set(b)):
            if k not in a or k not in b:
                out.append(f"{path}/{k}: only in {'after' if k not in a else 'before'}")
            else:
                out += diff(a[k], b[k], f"{path}/{k}")
        return out
    if isinstance(a, list):
        if len(a) != len(b):
            return [f"{path}: length {len(a)} != {len(b)}"]
        return [d for i, (x, y) in enumerate(zip(a, b)) for d in diff(x, y, f"{path}[{i}]")]
    return [] if a == b else [f"{path}: {a!r} != {b!r}"]


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", type=Path, help="write the dump here")
    ap.add_argument("--diff", nargs=2, type=Path, metavar=("BEFORE", "AFTER"))
    ap.add_argument("--shared", type=Path, default=SHARED,
                    help=f"the shared folder with traces/ (default {SHARED})")
    args = ap.parse_args(argv)
    if args.diff and args.out:
        ap.error("--out writes a dump, --diff compares two: give one of them")
    if args.diff:
        dumps = []
        for p in args.diff:
            try:
                dumps.append(scrub(json.loads(p.read_text(encoding="utf-8"))))
            except OSError as exc:
                ap.error(f"--diff: cannot read {str(p)!r}: {exc.strerror or exc}")
            except ValueError as exc:
                ap.error(f"--diff: {str(p)!r} is not a JSON dump ({exc})")
        before, after = dumps
        lines = diff(before, after)
        for line in lines[:200]:
            print(line)
        if len(lines) > 200:
            print(f"... {len(lines) - 200} more")
        return 1 if lines else 0
    if not args.out:
        ap.error("give --out FILE or --diff BEFORE AFTER")
    # imported here: a dump may be taken with another checkout's code first on the path
    sys.path.append(str(Path(__file__).resolve().parent))
    from script_args import refuse_unwritable
    refuse_unwritable(ap, out=args.out)
    if not (args.shared / POLLUX_W2).is_file():
        ap.error(f"--shared: no {POLLUX_W2} under {args.shared} (give the shared folder)")
    args.out.write_text(json.dumps(dump(args.shared), indent=1, sort_keys=True))
    print(f"wrote {args.out}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
