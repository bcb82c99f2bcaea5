"""Planning on clusters of many nodes: wall time and peak memory of whole commands.

A pool of N nodes has a resource set per node count, so a cluster's strategy shapes grow with
its nodes (7.9 million on two pools of 50,000 8-GPU nodes, the most a cluster may have). For
each ``--nodes`` N this script writes a cluster of two pools of N nodes (A100-80GB and
V100-32GB, 8 GPUs a node) to a temporary folder and times, each as a subprocess from the
checkout's own folder with its own Python:

* ``hsched candidates --model M --cluster FILE --json`` for each ``--models`` M;
* with ``--simulate``, ``hsched simulate --cluster FILE --workload
  gavel:rate=4,jobs=20,seed=0 --policy fifo-fastest --json`` (20 jobs, 15 model and batch
  variants of 6 models, each planned in full and data parallel only).

With ``--against DIR`` (another checkout of the project, e.g. a ``git worktree`` of an older
commit) the same commands run there too, interleaved with ours run by run (``for run: for
command: for side``), and the script checks that both sides print the same output (the
simulation's JSON but for its timings). Per command and side it reports the median wall time
over ``--runs`` (``time.perf_counter`` around the subprocess, process start included) and the
largest peak resident memory (the child's ``ru_maxrss`` from ``os.wait4``). ``--timeout``
stops a command that runs longer (reported as such, not as a time)::

    python scripts/bench_many_nodes.py --nodes 2000,10000,50000 --simulate --markdown
    python scripts/bench_many_nodes.py --against /tmp/old --nodes 10000 --runs 3
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.append(str(Path(__file__).resolve().parent))       # script_args, next to this file
from script_args import (int_list, list_of, one_line_errors, positive_int,  # noqa: E402
                         positive_number)

REPO = Path(__file__).resolve().parents[1]
SIM_WORKLOAD = "gavel:rate=4,jobs=20,seed=0"
#: JSON keys of ``hsched simulate --json`` that are timings (they differ from run to run).
TIMING_KEYS = ("wall_s",)


def cluster_yaml(nodes_per_pool: int) -> str:
    return (f"name: two-pools-{nodes_per_pool}\nnodes:\n"
            f"  - gpu_type: A100-80GB\n    gpus_per_node: 8\n    count: {nodes_per_pool}\n"
            f"  - gpu_type: V100-32GB\n    gpus_per_node: 8\n    count: {nodes_per_pool}\n")


def commands(cluster: Path, models: list[str], simulate: bool) -> list[tuple[str, list[str]]]:
    """(label, arguments of ``python -m hsched_cli``) of each command timed on ``cluster``."""
    out = [(f"candidates {m}", ["candidates", "--model", m, "--cluster", str(cluster), "--json"])
           for m in models]
    if simulate:
        out.append(("simulate 20 jobs", ["simulate", "--cluster", str(cluster), "--workload",
                                         SIM_WORKLOAD, "--policy", "fifo-fastest",
                                         "--no-progress", "--json"]))
    return out


def python_of(checkout: Path) -> str:
    """The checkout's own virtualenv Python (``.venv``), else this one."""
    venv = checkout / ".venv" / "bin" / "python"
    return str(venv) if venv.exists() else sys.executable


def run_once(checkout: Path, args: list[str], timeout: float) -> dict:
    """One command: ``{"seconds", "max_rss_mib", "stdout"}``; ``seconds`` None when it ran past
    ``timeout`` (then stopped) or failed (``error`` says how)."""
    env = dict(os.environ, OMP_NUM_THREADS=os.environ.get("OMP_NUM_THREADS", "1"))
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        t0 = time.perf_counter()
        proc = subprocess.Popen([python_of(checkout), "-m", "hsched_cli", *args],
                                cwd=checkout, stdout=out, stderr=err, env=env,
                                start_new_session=True)
        deadline = t0 + timeout
        while True:
            pid, status, usage = os.wait4(proc.pid, os.WNOHANG)
            if pid:
                break
            if time.perf_counter() > deadline:
                os.killpg(proc.pid, signal.SIGKILL)
                os.wait4(proc.pid, 0)
                proc.returncode = -9
                return {"seconds": None, "max_rss_mib": None, "stdout": b"",
                        "error": f"stopped after {timeout:g} s"}
            time.sleep(0.002)
        seconds = time.perf_counter() - t0
        proc.returncode = os.waitstatus_to_exitcode(status)
        out.seek(0)
        err.seek(0)
        if proc.returncode != 0:
            tail = err.read().decode(errors="replace").strip().splitlines()[-1:]
            return {"seconds": None, "max_rss_mib": None, "stdout": b"",
                    "error": f"exit status {proc.returncode}: {' '.join(tail)}"}
        # ru_maxrss is in KiB on Linux
        return {"seconds": seconds, "max_rss_mib": usage.ru_maxrss / 1024, "stdout": out.read()}


def comparable(label: str, stdout: bytes):
    """What must agree between the two sides: the output, without the simulation's timings."""
    if not label.startswith("simulate"):
        return stdout
    data = json.loads(stdout)
    items = data if isinstance(data, list) else [data]
    for item in items:
        for key in list(item):
            if key in TIMING_KEYS or key.startswith("decision"):
                del item[key]
    return items


@one_line_errors
def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--nodes", type=int_list(1), default=[2000, 10000, 50000],
                    help="nodes per pool, comma-separated (two pools; at most 50000 each)")
    ap.add_argument("--models", type=list_of(str), default=["resnet50", "llama2-7b"],
                    help="models for hsched candidates, comma-separated")
    ap.add_argument("--simulate", action="store_true",
                    help="also time a 20-job hsched simulate on each cluster")
    ap.add_argument("--runs", type=positive_int, default=3, help="runs of each command")
    ap.add_argument("--against", type=Path, default=None,
                    help="another checkout to run the same commands in, interleaved")
    ap.add_argument("--timeout", type=positive_number, default=1800.0,
                    help="seconds after which a command is stopped")
    ap.add_argument("--markdown", action="store_true", help="a Markdown table")
    args = ap.parse_args(argv)
    for flag, values in (("--nodes", args.nodes), ("--models", args.models)):
        if len(set(values)) != len(values):  # a value twice would pool its runs' timings
            ap.error(f"{flag}: give distinct values, got {','.join(map(str, values))}")
    if any(n > 50_000 for n in args.nodes):
        ap.error("--nodes: at most 50000 per pool (MAX_NODES is 100000 in all)")
    from hsched_env.catalog import get_model
    for m in args.models:
        get_model(m)                         # an unknown model: one line, before any run
    sides = {"ours": REPO}
    if args.against is not None:
        against = args.against.expanduser().resolve()
        if not (against / "hsched_cli").is_dir():
            ap.error(f"--against: {str(against)!r} is not a checkout of the project "
                     f"(no hsched_cli folder)")
        sides = {"against": against, "ours": REPO}
    results: dict[tuple, list[dict]] = {}
    with tempfile.TemporaryDirectory() as tmp:
        for n in args.nodes:
            cluster = Path(tmp, f"two-pools-{n}.yaml")
            cluster.write_text(cluster_yaml(n), encoding="utf-8")
            for run in range(args.runs):
                for label, cmd in commands(cluster, args.models, args.simulate):
                    for side, checkout in sides.items():
                        got = run_once(checkout, cmd, args.timeout)
                        results.setdefault((n, label, side), []).append(got)
                        shown = (f"{got['seconds']:.2f} s, {got['max_rss_mib']:.0f} MiB"
                                 if got["seconds"] is not None else got["error"])
                        print(f"[{run + 1}/{args.runs}] {2 * n:,} nodes, {label}, {side}: "
                              f"{shown}", file=sys.stderr, flush=True)
                    outs = [results[(n, label, s)][-1] for s in sides]
                    if len(outs) == 2 and all(o["seconds"] is not None for o in outs) and (
                            comparable(label, outs[0]["stdout"])
                            != comparable(label, outs[1]["stdout"])):
                        print(f"bench_many_nodes.py: warning: {label} on {2 * n:,} nodes: the "
                              f"two checkouts print different outputs", file=sys.stderr)
    rows = []
    for (n, label, side), runs in results.items():
        times = [r["seconds"] for r in runs if r["seconds"] is not None]
        rss = [r["max_rss_mib"] for r in runs if r["max_rss_mib"] is not None]
        failed = [r["error"] for r in runs if r["seconds"] is None]
        rows.append((2 * n, label, side, statistics.median(times) if times else None,
                     max(rss) if rss else None, len(times), failed[0] if failed else ""))
    if args.markdown:
        print("| nodes | command | checkout | median s | peak MiB | runs | note |")
        print("|---:|---|---|---:|---:|---:|---|")
        for nodes, label, side, t, mb, k, note in rows:
            print(f"| {nodes:,} | {label} | {side} | {'' if t is None else f'{t:.2f}'} | "
                  f"{'' if mb is None else f'{mb:.0f}'} | {k} | {note} |")
    else:
        for nodes, label, side, t, mb, k, note in rows:
            shown = "—" if t is None else f"{t:8.2f} s  {mb:7.0f} MiB"
            print(f"{nodes:>7,} nodes  {label:24s} {side:8s} {shown}  ({k} runs) {note}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
