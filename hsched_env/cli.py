"""The ``hsched`` command line.

Subcommands:

* ``hsched candidates --model M --cluster C [--max-candidates N] [--json]`` — a job's
  candidates (resource set × best parallelization strategy), fastest first.
* ``hsched models`` / ``hsched clusters [NAME]`` — the catalogs.
* ``hsched demo`` — the end-to-end demo on the embedded default scenario.

Errors in the input (unknown names, bad files) exit with status 2 and one line naming what is
wrong; only this module prints.
"""

from __future__ import annotations

import argparse
import json
import logging
import sys
import time
from pathlib import Path

from hsched_env.catalog import get_gpu, get_model, gpu_catalog, model_catalog
from hsched_env.cluster import cluster_presets, get_cluster
from hsched_env.errors import HSchedError
from hsched_env.planner import CandidateTable, PlannerConfig, plan

DEMO_CLUSTER = "sia-64"
DEMO_MODELS = ("resnet50", "transformer", "bert-large", "gpt2-xl", "vit-l", "llama2-7b",
               "llama2-13b")


# ---------------------------------------------------------------------------- formatting
def format_table(headers: list[str], rows: list[list[str]]) -> str:
    """Right-aligned plain-text table (first column left-aligned)."""
    widths = [max(len(h), *(len(r[i]) for r in rows)) if rows else len(h)
              for i, h in enumerate(headers)]

    def line(cells):
        return "  ".join(c.ljust(w) if i == 0 else c.rjust(w)
                         for i, (c, w) in enumerate(zip(cells, widths)))

    return "\n".join([line(headers), line(["-" * w for w in widths])] + [line(r) for r in rows])


def _gpus_text(gpus: dict[str, int]) -> str:
    return " + ".join(f"{n}×{t}" for t, n in gpus.items())


def _num(x: float) -> str:
    if x >= 100:
        return f"{x:,.0f}"
    if x >= 1:
        return f"{x:.2f}"
    return f"{x:.3g}"


def candidates_text(table: CandidateTable, limit: int | None = None) -> str:
    """The human-readable candidate table printed by ``hsched candidates``."""
    recs = table.to_records()[:limit]
    token_model = bool(len(table)) and table.tokens_per_s_per_gpu.max() > 0
    headers = ["#", "GPUs", "nodes", "layout", "dp", "tp", "pp", "mb", "ZeRO", "recomp",
               "step s", "samples/s"] + (["tok/s/GPU"] if token_model else []) + ["mem GB/GPU"]
    rows = []
    for i, r in enumerate(recs):
        layout = r["kind"]
        if r["dp_per_type"]:
            layout += " dp " + "+".join(str(v) for v in r["dp_per_type"].values())
        if r["pp_per_type"]:
            layout += " pp " + "+".join(str(v) for v in r["pp_per_type"].values())
        row = [str(i + 1), _gpus_text(r["gpus"]), str(r["nodes"]), layout, str(r["dp"]),
               str(r["tp"]), str(r["pp"]), str(r["microbatches"]), str(r["zero"]),
               "yes" if r["recompute"] else "no", _num(r["step_time_s"]),
               _num(r["samples_per_s"]) + ("*" if r["source"] == "measured" else "")]
        if token_model:
            row.append(_num(r["tokens_per_s_per_gpu"]))
        row.append(" / ".join(f"{v:.1f}" for v in r["mem_gb_by_type"].values()))
        rows.append(row)
    return format_table(headers, rows)


def _no_fit_reason(model, cluster) -> str:
    need = model.params * model.bytes_per_param_states / 1e9
    usable = [get_gpu(p.gpu_type).memory_gb * p.num_gpus * 0.9 for p in cluster.pools]
    largest = max([u for u in usable] + [a + b for i, a in enumerate(usable)
                                          for j, b in enumerate(usable) if i < j])
    return (f"{model.name} fits on no resource set of {cluster.name}: its model states alone "
            f"need {need:,.0f} GB, and the largest resource set (at most two node pools) "
            f"offers {largest:,.0f} GB of usable GPU memory")


# ---------------------------------------------------------------------------- commands
def cmd_candidates(args) -> int:
    model = get_model(args.model)
    cluster = get_cluster(args.cluster)
    config = PlannerConfig(max_candidates=args.max_candidates, mixed=not args.no_mixed)
    t0 = time.perf_counter()
    table = plan(model, cluster, config=config, throughputs=args.throughputs)
    elapsed = time.perf_counter() - t0
    if args.json:
        json.dump(table.to_records(), sys.stdout, indent=1)
        print()
        return 0
    print(f"{model.display} on {cluster.name} ({cluster.num_gpus} GPUs): {len(table)} candidates "
          f"in {elapsed * 1e3:.0f} ms, fastest first; one sample = {model.sample}, "
          f"batch {model.global_batch}{' per replica' if model.batch_per_replica else ''}")
    if len(table) == 0:
        print(_no_fit_reason(model, cluster))
        return 0
    print(candidates_text(table))
    if table.measured.any():
        print("* measured (Gavel's table); the others are predicted by the analytic cost model")
    return 0



def cmd_models(args) -> int:
    rows = []
    for m in model_catalog().values():
        rows.append([m.name, m.display, m.family, f"{m.params / 1e9:.3g}B", str(m.layers),
                     m.precision, str(m.global_batch), "/".join(m.parallelism), m.sample])
    print(format_table(["name", "model", "family", "params", "layers", "precision", "batch",
                        "parallelism", "one sample"], rows))
    return 0


def cmd_clusters(args) -> int:
    if args.name:
        print(get_cluster(args.name).describe())
        return 0
    rows = []
    for name in cluster_presets():
        c = get_cluster(name)
        mix = ", ".join(f"{n}×{t}" for t, n in c.capacity.items())
        rows.append([name, str(c.num_gpus), str(c.num_nodes), mix])
    print(format_table(["preset", "GPUs", "nodes", "GPUs by type"], rows))
    print("\nGPU types: " + ", ".join(gpu_catalog()))
    return 0


def cmd_demo(args) -> int:
    from agents.demo import run_demo        # plotting lives with the agents (matplotlib)
    return run_demo(cluster=args.cluster, out=Path(args.out), models=DEMO_MODELS)


# ---------------------------------------------------------------------------- parser
def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="hsched", description=(
        "HeteroSched: co-optimize parallelization and scheduling of deep-learning training "
        "jobs on heterogeneous GPU clusters."))
    p.add_argument("-v", "--verbose", action="store_true", help="log progress to stderr")
    sub = p.add_subparsers(dest="command", required=True, metavar="COMMAND")

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
    c.set_defaults(func=cmd_candidates)

    m = sub.add_parser("models", help="list the model catalog")
    m.set_defaults(func=cmd_models)
    cl = sub.add_parser("clusters", help="list cluster presets, or describe one")
    cl.add_argument("name", nargs="?", help="preset name or cluster file")
    cl.set_defaults(func=cmd_clusters)

    d = sub.add_parser("demo", help="end-to-end demo on the default scenario")
    d.add_argument("--cluster", default=DEMO_CLUSTER, help=f"default {DEMO_CLUSTER}")
    d.add_argument("--out", default="runs/demo", help="output folder (plots, JSON)")
    d.set_defaults(func=cmd_demo)
    return p


def _positive_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got {text!r}") from None
    if value <= 0:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got {text!r}")
    return value


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    logging.basicConfig(level=logging.INFO if args.verbose else logging.WARNING,
                        format="%(levelname)s %(name)s: %(message)s")
    try:
        return args.func(args)
    except HSchedError as exc:
        print(f"hsched {args.command}: error: {exc}", file=sys.stderr)
        return 2
    except BrokenPipeError:
        return 0


if __name__ == "__main__":
    sys.exit(main())
