"""Heterogeneous GPU cluster model: node pools, presets, and cluster files.

A :class:`Cluster` is a tuple of :class:`NodePool` objects, each a group of identical nodes
(same GPU type, same number of GPUs per node, same links); the cluster derives the per-type
and per-node arrays that the planner, the placement code and the simulator index into.

Modules:
    * :mod:`hsched_env.cluster.model` -- :class:`NodePool` and :class:`Cluster`, the derived
      arrays and the bandwidth units (GB/s).
    * :mod:`hsched_env.cluster.files` -- cluster files (YAML or JSON) and dicts:
      :func:`load_cluster`, :func:`cluster_from_dict`; the file format is described there.
    * :mod:`hsched_env.cluster.presets` -- the built-in presets
      (``hsched_env/data/clusters.json``) and lookup by name or file: :func:`get_cluster`,
      :func:`cluster_presets`.

Example:
    >>> from hsched_env.cluster import get_cluster
    >>> c = get_cluster("sia-64")
    >>> c.num_gpus, c.capacity["T4"]
    (64, 24)
"""

from hsched_env.cluster.files import cluster_from_dict, load_cluster
from hsched_env.cluster.model import (DEFAULT_INTER_NODE_BW_GBPS, MAX_GPUS_PER_NODE, MAX_NODES,
                                      Cluster, NodePool)
from hsched_env.cluster.presets import cluster_presets, get_cluster

__all__ = [
    "DEFAULT_INTER_NODE_BW_GBPS",
    "MAX_GPUS_PER_NODE",
    "MAX_NODES",
    "Cluster",
    "NodePool",
    "cluster_from_dict",
    "cluster_presets",
    "get_cluster",
    "load_cluster",
]
