"""Reference GPUs and reference throughputs: how a job's duration becomes work and back.

A job's work is ``duration_s × reference throughput``: the samples/s its model achieves with
plain data parallelism on ``requested_gpus`` GPUs of the reference type of its precision
(:data:`REFERENCE_GPUS`), in a reference cluster of 64 nodes × 8 GPUs.
"""

from __future__ import annotations

from functools import lru_cache
from typing import Any

import numpy as np

from hsched_env.catalog import ModelSpec, check_model, get_model
from hsched_env.cluster import Cluster, cluster_from_dict
from hsched_env.errors import ConfigError, show

__all__ = ["reference_throughput", "reference_gpu", "REFERENCE_GPUS", "MAX_REFERENCE_GPUS"]

#: Reference GPU type per training precision (work = duration × throughput on these GPUs).
REFERENCE_GPUS = {"fp32": "V100-16GB", "fp16": "A100-80GB", "bf16": "A100-80GB"}
#: Network bandwidth per node of the reference clusters, GB/s (V100: 200 Gb/s; A100: DGX).
_REFERENCE_INTER_BW_GBPS = {"V100-16GB": 25.0, "A100-80GB": 200.0}
#: Size of the reference clusters (64 nodes × 8 GPUs); no job may ask for more.
MAX_REFERENCE_GPUS = 512


# ---------------------------------------------------------------------------------- reference
def reference_gpu(model: ModelSpec | str) -> str:
    """Reference GPU type of a model: ``V100-16GB`` for fp32, ``A100-80GB`` for fp16/bf16."""
    spec = get_model(model) if isinstance(model, str) else model
    return REFERENCE_GPUS[spec.precision]


@lru_cache(maxsize=None)
def _reference_cluster(gpu: str) -> Cluster:
    return cluster_from_dict(
        {"name": f"reference-{gpu.lower()}",
         "inter_node_bw_gbps": _REFERENCE_INTER_BW_GBPS[gpu],
         "nodes": [{"gpu_type": gpu, "gpus_per_node": 8,
                    "count": MAX_REFERENCE_GPUS // 8}]},
        source="workloads reference cluster")


@lru_cache(maxsize=8192)
def _reference_thr(spec: ModelSpec, gpus: int, throughputs: Any) -> float:
    """Best data-parallel samples/s on ``gpus`` reference GPUs; 0.0 when nothing fits."""
    from hsched_env.planner import PlannerConfig, plan_set  # heavy; import on first use

    gpu = REFERENCE_GPUS[spec.precision]
    table = plan_set(spec, _reference_cluster(gpu), {gpu: gpus},
                     config=PlannerConfig(data_parallel_only=True), throughputs=throughputs)
    return float(table.samples_per_s.max()) if len(table) else 0.0


def _check_gpu_count(gpus: Any) -> int:
    if isinstance(gpus, bool) or not isinstance(gpus, (int, np.integer)):
        raise ConfigError(f"GPU count must be an integer, got {show(gpus)}", field="gpus")
    if not 1 <= gpus <= MAX_REFERENCE_GPUS:
        raise ConfigError(f"GPU count must be between 1 and {MAX_REFERENCE_GPUS} (the reference "
                          f"cluster), got {gpus}", field="gpus")
    return int(gpus)


def reference_throughput(model: ModelSpec | str, gpus: int,
                         throughputs: str | None = None) -> float:
    """Samples/s of ``model`` with plain data parallelism on ``gpus`` reference GPUs.

    The reference cluster is 64 nodes × 8 GPUs of :func:`reference_gpu` (NVLink inside a node,
    25 GB/s per V100 node, 200 GB/s per A100 node); the figure is the planner's best
    ``data_parallel_only`` strategy (ZeRO allowed), or Gavel's measurement where
    ``throughputs="gavel"`` has one. Cached per (model, batch, gpus, throughputs).

    Args:
        model: A ``ModelSpec`` (e.g. ``job.spec``) or a catalog name.
        gpus: GPUs, 1 to :data:`MAX_REFERENCE_GPUS`.
        throughputs: ``None``/``"analytic"``, ``"gavel"`` or a table path (as the planner).

    Raises:
        ConfigError: Bad GPU count, or the model cannot train with data parallelism on that
            many reference GPUs (e.g. Llama-2 70B on 8 A100s).
    """
    spec = get_model(model) if isinstance(model, str) else check_model(model)
    n = _check_gpu_count(gpus)
    thr = _reference_thr(spec, n, throughputs)
    if thr <= 0:
        raise ConfigError(f"{spec.name} cannot train with data parallelism on {n} × "
                          f"{reference_gpu(spec)} (it does not fit in memory or has fewer "
                          f"samples per batch than replicas)", field="gpus")
    return thr


def _fit_reference(spec: ModelSpec, gpus: int, throughputs: Any) -> tuple[int, float]:
    """``(gpus, throughput)``, raising ``gpus`` to the smallest power of two that works."""
    n = _check_gpu_count(gpus)
    thr = _reference_thr(spec, n, throughputs)
    if thr > 0:
        return n, thr
    k = 1 << (n - 1).bit_length()          # smallest power of two >= n
    if k == n:
        k *= 2
    while k <= MAX_REFERENCE_GPUS:
        thr = _reference_thr(spec, k, throughputs)
        if thr > 0:
            return k, thr
        k *= 2
    raise ConfigError(f"{spec.name} cannot train with data parallelism on {n} to "
                      f"{MAX_REFERENCE_GPUS} {reference_gpu(spec)} GPUs", field="gpus")
