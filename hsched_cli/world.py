"""``hsched candidates``, ``hsched models``, ``hsched clusters``: the catalogs and the planner."""

from __future__ import annotations

import json
import sys
import time

from hsched_env.catalog import get_gpu, get_model, gpu_catalog, model_catalog
from hsched_env.cluster import cluster_presets, get_cluster
from hsched_env.planner import PlannerConfig, plan
from hsched_env.text import candidates_text, format_table
from hsched_env.throughput import check_throughput_source


def _no_fit_reason(model, cluster) -> str:
    need = model.params * model.bytes_per_param_states / 1e9
    usable = [get_gpu(p.gpu_type).memory_gb * p.num_gpus * 0.9 for p in cluster.pools]
    largest = max([u for u in usable] + [a + b for i, a in enumerate(usable)
                                          for j, b in enumerate(usable) if i < j])
    return (f"{model.name} fits on no resource set of {cluster.name}: its model states alone "
            f"need {need:,.0f} GB, and the largest resource set (at most two node pools) "
            f"offers {largest:,.0f} GB of usable GPU memory")


def check_throughputs(name: str) -> None:
    """``--throughputs`` must be 'analytic', 'gavel' or an existing file
    (``throughput.check_throughput_source``; the file is read later)."""
    check_throughput_source(name, field="--throughputs")


def cmd_candidates(args) -> int:
    check_throughputs(args.throughputs)
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
