"""``hsched candidates``, ``hsched models``, ``hsched clusters``: the catalogs and the planner."""

from __future__ import annotations

import json
import sys
import time

import numpy as np

from hsched_env.catalog import get_gpu, get_model, gpu_catalog, model_catalog
from hsched_env.cluster import cluster_presets, get_cluster
from hsched_env.costmodel import model_shape, model_state_bytes
from hsched_env.errors import ConfigError
from hsched_env.planner import PlannerConfig, plan, resource_sets
from hsched_env.text import candidates_text, format_table
from hsched_env.throughput import ANALYTIC_NAMES, check_throughput_source


def _no_fit_reason(model, cluster, config: PlannerConfig) -> str:
    """Why ``plan`` found no candidate: the model states against the memory the largest of
    the planner's resource sets has for them (its usable fraction, less the fixed part per
    GPU), or, where they would fit, that the rest holds no stage's activations."""
    calib = config.calibration
    shape = model_shape(model, calib)
    fixed_gb = shape.fixed_mem_bytes / 1e9
    need = model_state_bytes(shape) / 1e9           # as the planner prices them
    room = np.array([max(get_gpu(p.gpu_type).memory_gb * calib.mem_usable_fraction - fixed_gb,
                         0.0) for p in cluster.pools])
    sets = resource_sets(cluster)
    use = np.ones(sets.pool_a.size, dtype=bool) if config.mixed else sets.pool_b < 0
    per_set = sets.n_a * room[sets.pool_a] + np.where(sets.pool_b >= 0,
                                                       sets.n_b * room[sets.pool_b], 0.0)
    largest = float(per_set[use].max())
    scope = "one node pool" if not config.mixed else "one node pool, or two of different types"
    room_text = (f"{largest:,.1f} GB the largest resource set ({scope}) has for them "
                 f"({calib.mem_usable_fraction:.0%} of its memory, less {fixed_gb:g} GB per GPU)")
    if need > largest:
        return (f"{model.name} fits on no resource set of {cluster.name}: its model states "
                f"alone need {need:,.1f} GB, more than the {room_text}")
    return (f"{model.name} fits on no resource set of {cluster.name}: its model states need "
            f"{need:,.1f} GB of the {room_text}, and what is left holds no strategy's "
            f"activations (full recompute and the most micro-batches included)")


def check_throughputs(name: str) -> None:
    """``--throughputs`` must be 'analytic', 'gavel' or an existing file
    (``throughput.check_throughput_source``; the file is read later). An empty value is
    refused here (the library reads ``""`` as the default, analytic)."""
    if name is not None and not str(name).strip():
        raise ConfigError("an empty value: give analytic, gavel or a throughput table file",
                          field="--throughputs")
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
    noun = "candidate" if len(table) == 1 else "candidates"
    print(f"{model.display} on {cluster.name} ({cluster.num_gpus} GPUs): {len(table)} {noun} "
          f"in {elapsed * 1e3:.0f} ms, fastest first; one sample = {model.sample}, "
          f"batch {model.global_batch}{' per replica' if model.batch_per_replica else ''}")
    name = _table_name(args.throughputs)
    if len(table) == 0:
        unmeasured = len(plan(model, cluster, config=config)) if name else 0
        if unmeasured:              # the memory fits: the table says none of the sets can run
            print(f"{model.name} fits in memory on {cluster.name} ({unmeasured} candidate(s) "
                  f"by the analytic cost model), but {name} measures their resource sets as "
                  f"unable to run it (0 steps/s)")
        else:
            print(_no_fit_reason(model, cluster, config))
        return 0
    print(candidates_text(table))
    if name:
        print(_sources_note(table, name))
    return 0


def _table_name(throughputs: str | None) -> str:
    """The measured table given, as the notes name it (``""``: the analytic model alone)."""
    if throughputs in ANALYTIC_NAMES:
        return ""
    return "Gavel's table" if throughputs == "gavel" else f"the table {throughputs}"


def _sources_note(table, name: str) -> str:
    """Where the table's samples/s come from, under it, when a measured table was given."""
    measured, scaled = int(table.measured.sum()), int((table.bootstrap != 1.0).sum())
    if not measured and not scaled:
        return (f"no row is measured in {name} or scaled by it: every row is predicted by the "
                f"analytic cost model (resource sets it measures at 0 steps/s are left out)")
    parts = []
    if measured:
        parts.append(f"* measured ({name}, {measured} row(s))")
    if scaled:
        parts.append(f"~ predicted by the analytic cost model and scaled by {name}'s one-GPU "
                     f"measurement of the type ({scaled} row(s), docs/cost_model.md)")
    if measured + scaled < len(table):
        parts.append("the others are predicted by the analytic cost model")
    return "; ".join(parts)



def cmd_models(args) -> int:
    rows = []
    for m in model_catalog().values():
        rows.append([m.name, m.display, m.family, f"{m.params / 1e9:.3g}B", str(m.layers),
                     m.precision, str(m.global_batch), "/".join(m.parallelism), m.sample])
    print(format_table(["name", "model", "family", "params", "layers", "precision", "batch",
                        "parallelism", "one sample"], rows))
    return 0


def cmd_clusters(args) -> int:
    if args.name is not None:            # an empty name is an unknown cluster, not "list all"
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
