"""Heterogeneous GPU cluster model: node pools, presets, and cluster files.

A :class:`Cluster` is a tuple of :class:`NodePool` objects, each a group of identical nodes
(same GPU type, same number of GPUs per node, same links). From the pools the cluster derives
the arrays that the planner, the placement code and the simulator index into:

* ``gpu_types`` -- the distinct GPU types in pool order. Position ``t`` in this tuple is the
  **type index** used everywhere else (capacity vectors, candidate tables, observations).
* ``capacity`` / ``capacity_vec`` -- GPUs per type.
* ``node_pool``, ``node_type``, ``node_gpus`` -- one entry per node, nodes numbered pool by
  pool (all nodes of pool 0 first, then pool 1, ...).

Units:
    Every bandwidth is in **GB/s (gigabytes per second)** and its name ends in ``_gbps``.
    Network hardware is usually quoted in gigabits: divide by 8, so a 100 Gb/s NIC is
    12.5 GB/s, 200 Gb/s InfiniBand HDR is 25 GB/s, and a DGX A100's 8 x 200 Gb/s is
    200 GB/s per node.

    * ``intra_bw_gbps``: GPU-to-GPU bandwidth inside a node, bidirectional, per GPU (the
      figure GPU datasheets quote, e.g. 600 GB/s for NVLink3). Defaults to the GPU catalog's
      ``link_bw_gbps``.
    * ``inter_bw_gbps``: network bandwidth per **node** (all NICs of the node together, one
      direction).

Cluster files (YAML, read with ``yaml.safe_load`` semantics, or JSON)::

    name: my-lab                  # optional, defaults to the file stem
    description: "..."            # optional free text
    inter_node_bw_gbps: 12.5      # default NIC bandwidth per node, GB/s (default 12.5)
    nodes:
      - gpu_type: A100-80GB       # any GPU catalog name or alias
        gpus_per_node: 8          # 1..16
        count: 4                  # number of such nodes
        inter_node_bw_gbps: 200   # optional per-pool override
        intra_node_bw_gbps: 600   # optional; default from the GPU catalog
        name: a100-pod            # optional pool name; default "<gpu type>-x<gpus per node>"

Every problem is reported as a :class:`~hsched_env.errors.ConfigError` naming the file, the
field (e.g. ``nodes[2].gpu_type``) and, for YAML files, the line.

Example:
    >>> from hsched_env.cluster import get_cluster
    >>> c = get_cluster("sia-64")
    >>> c.num_gpus, c.capacity["T4"]
    (64, 24)
"""

from __future__ import annotations

import difflib
import json
import math
import os
import textwrap
from dataclasses import dataclass, field
from functools import lru_cache
from importlib import resources
from pathlib import Path
from typing import Any, Mapping, Union

import numpy as np

from hsched_env.errors import ConfigError, UnknownNameError, shorten, show
from hsched_env.files import is_file, json_object_no_duplicates, read_text_file, user_path

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

#: Default network bandwidth per node, GB/s (100 Gb/s Ethernet = 12.5 GB/s).
DEFAULT_INTER_NODE_BW_GBPS = 12.5
#: Largest node size accepted (HGX/DGX boards carry 8; 16-GPU servers such as DGX-2 exist).
MAX_GPUS_PER_NODE = 16
#: Largest number of nodes in a cluster (all pools together); the per-node arrays stay small.
MAX_NODES = 100_000

_TOP_KEYS = ("name", "description", "inter_node_bw_gbps", "nodes")
_NODE_KEYS = ("gpu_type", "gpus_per_node", "count", "inter_node_bw_gbps",
              "intra_node_bw_gbps", "name")
_FILE_SUFFIXES = (".yaml", ".yml", ".json")
_BW_HINT = "bandwidths are numbers in GB/s (gigabytes per second; 100 Gb/s = 12.5 GB/s)"

PathLike = Union[str, "os.PathLike[str]"]


# --------------------------------------------------------------------------------------------
# Small validation helpers (shared by the dataclasses and the file loader)
# --------------------------------------------------------------------------------------------

def _get_gpu(name: str):
    # Imported lazily so that importing this module never depends on catalog import order.
    from hsched_env.catalog import get_gpu

    return get_gpu(name)


def _check_int(value: Any, what: str, *, lo: int, hi: int | None = None, **where) -> int:
    """Return ``value`` as an int in ``[lo, hi]`` or raise ConfigError.

    Integral floats (``4.0``) are accepted; booleans, strings and fractions are not.
    """
    if isinstance(value, bool) or not isinstance(value, (int, float, np.integer, np.floating)):
        raise ConfigError(f"{what} must be an integer, got {show(value)} ({type(value).__name__})",
                          **where)
    if isinstance(value, (float, np.floating)):
        if not math.isfinite(value) or not float(value).is_integer():
            raise ConfigError(f"{what} must be an integer, got {show(value)}", **where)
    ivalue = int(value)
    if ivalue < lo or (hi is not None and ivalue > hi):
        bound = f"between {lo} and {hi}" if hi is not None else f"at least {lo}"
        raise ConfigError(f"{what} must be {bound}, got {show(ivalue)}", **where)
    return ivalue


def _check_bw(value: Any, what: str, **where) -> float:
    """Return ``value`` as a positive finite float (GB/s) or raise ConfigError."""
    if isinstance(value, bool) or not isinstance(value, (int, float, np.integer, np.floating)):
        raise ConfigError(f"{what} must be a number, got {show(value)} ({type(value).__name__}); "
                          f"{_BW_HINT}", **where)
    try:
        fvalue = float(value)
    except OverflowError:  # an int beyond the float range
        fvalue = math.inf
    if not math.isfinite(fvalue) or fvalue <= 0:
        raise ConfigError(f"{what} must be a positive finite number, got {show(value)}; "
                          f"{_BW_HINT}", **where)
    return fvalue


def _readonly(a: np.ndarray) -> np.ndarray:
    a.setflags(write=False)
    return a


# --------------------------------------------------------------------------------------------
# Model
# --------------------------------------------------------------------------------------------

@dataclass(frozen=True)
class NodePool:
    """A group of identical nodes.

    The GPU type is resolved through the GPU catalog on construction, so aliases
    (``"a100-80gb"``) become canonical names (``"A100-80GB"``).

    Attributes:
        gpu_type: Canonical GPU catalog name, e.g. ``"A100-80GB"``.
        gpus_per_node: GPUs in each node, 1 to :data:`MAX_GPUS_PER_NODE`.
        num_nodes: Number of nodes in the pool, at least 1.
        intra_bw_gbps: GPU-to-GPU bandwidth inside a node, GB/s, bidirectional per GPU.
            ``None`` (the default) takes the GPU catalog's ``link_bw_gbps``.
        inter_bw_gbps: Network bandwidth per node (aggregate over its NICs, one direction),
            GB/s. 100 Gb/s = 12.5 GB/s.
        name: Pool name, unique within a cluster. Empty (the default) gives
            ``"<gpu type lower-case>-x<gpus_per_node>"``, e.g. ``"a100-80gb-x8"``.

    Raises:
        ConfigError: A count is not a positive integer, a bandwidth is not a positive finite
            number, or ``gpus_per_node`` exceeds :data:`MAX_GPUS_PER_NODE`.
        UnknownNameError: ``gpu_type`` is not in the GPU catalog.
    """

    gpu_type: str
    gpus_per_node: int
    num_nodes: int
    intra_bw_gbps: float | None = None
    inter_bw_gbps: float = DEFAULT_INTER_NODE_BW_GBPS
    name: str = ""

    def __post_init__(self) -> None:
        if not isinstance(self.gpu_type, str):
            raise ConfigError(f"gpu_type must be a string, got {show(self.gpu_type)}",
                              field="gpu_type")
        gpu = _get_gpu(self.gpu_type)
        gpn = _check_int(self.gpus_per_node, "gpus_per_node", lo=1, hi=MAX_GPUS_PER_NODE,
                         field="gpus_per_node")
        nodes = _check_int(self.num_nodes, "num_nodes", lo=1, hi=MAX_NODES, field="num_nodes")
        if self.intra_bw_gbps is None:
            default = getattr(gpu, "link_bw_gbps", None)
            try:
                intra = _check_bw(default, f"catalog link_bw_gbps of {gpu.name}",
                                  field="intra_bw_gbps")
            except ConfigError:
                raise ConfigError(f"the GPU catalog has no usable intra-node bandwidth for "
                                  f"{gpu.name} ({default!r}); set it explicitly",
                                  field="intra_bw_gbps") from None
        else:
            intra = _check_bw(self.intra_bw_gbps, "intra_bw_gbps", field="intra_bw_gbps")
        inter = _check_bw(self.inter_bw_gbps, "inter_bw_gbps", field="inter_bw_gbps")
        if not isinstance(self.name, str):
            raise ConfigError(f"name must be a string, got {show(self.name)}", field="name")
        name = self.name.strip() or f"{gpu.name.lower()}-x{gpn}"
        for attr, value in (("gpu_type", gpu.name), ("gpus_per_node", gpn),
                            ("num_nodes", nodes), ("intra_bw_gbps", intra),
                            ("inter_bw_gbps", inter), ("name", name)):
            object.__setattr__(self, attr, value)

    @property
    def num_gpus(self) -> int:
        """Total GPUs in the pool (``gpus_per_node * num_nodes``)."""
        return self.gpus_per_node * self.num_nodes


@dataclass(frozen=True)
class Cluster:
    """A heterogeneous GPU cluster made of node pools.

    Construct it directly, from a dict (:func:`cluster_from_dict`), from a file
    (:func:`load_cluster`) or by preset name (:func:`get_cluster`). Instances are immutable;
    the derived arrays are read-only numpy arrays computed once.

    Attributes:
        name: Cluster name.
        pools: The node pools, in order. Nodes are numbered pool by pool.
        description: Free text (the presets cite their sources here).

    Derived (read-only properties):
        gpu_types: Distinct canonical GPU types in pool order: the type index.
        capacity: ``{gpu_type: GPUs}`` (a fresh dict on each access).
        capacity_vec: int64 array ``[T]``, GPUs per type, aligned to ``gpu_types``.
        num_gpus, num_nodes, num_types: Totals.
        pool_type: int64 ``[P]``, type index of each pool.
        pool_first_node: int64 ``[P + 1]``, first node id of each pool; the last entry is
            ``num_nodes`` (so pool ``p`` owns nodes ``pool_first_node[p]:pool_first_node[p+1]``).
        node_pool, node_type, node_gpus: int64 ``[N]``, pool index, type index and GPU count
            of each node.
        node_intra_bw_gbps, node_inter_bw_gbps: float64 ``[N]``, bandwidths of each node.

    Raises:
        ConfigError: No pools, a pool that is not a :class:`NodePool`, or duplicate pool names.
    """

    name: str
    pools: tuple[NodePool, ...]
    description: str = field(default="", compare=False)

    def __post_init__(self) -> None:
        if not isinstance(self.name, str) or not self.name.strip():
            raise ConfigError(f"cluster name must be a non-empty string, got {show(self.name)}",
                              field="name")
        pools = tuple(self.pools)
        if not pools:
            raise ConfigError("a cluster needs at least one node pool", source=self.name,
                              field="nodes")
        seen: set[str] = set()
        for i, p in enumerate(pools):
            if not isinstance(p, NodePool):
                raise ConfigError(f"pool {i} is a {type(p).__name__}, not a NodePool",
                                  source=self.name, field=f"nodes[{i}]")
            if p.name in seen:
                raise ConfigError(f"duplicate pool name {show(p.name)}", source=self.name,
                                  field=f"nodes[{i}].name")
            seen.add(p.name)
        total_nodes = sum(p.num_nodes for p in pools)
        if total_nodes > MAX_NODES:
            raise ConfigError(f"{total_nodes} nodes in total; at most {MAX_NODES} are supported",
                              source=self.name, field="nodes")
        object.__setattr__(self, "pools", pools)

        types: list[str] = []
        for p in pools:
            if p.gpu_type not in types:
                types.append(p.gpu_type)
        tindex = {t: i for i, t in enumerate(types)}
        pool_type = np.array([tindex[p.gpu_type] for p in pools], dtype=np.int64)
        pool_nodes = np.array([p.num_nodes for p in pools], dtype=np.int64)
        pool_gpn = np.array([p.gpus_per_node for p in pools], dtype=np.int64)
        node_pool = np.repeat(np.arange(len(pools), dtype=np.int64), pool_nodes)
        cap = np.zeros(len(types), dtype=np.int64)
        np.add.at(cap, pool_type, pool_nodes * pool_gpn)
        derived = {
            "_gpu_types": tuple(types),
            "_type_index": tindex,
            "_capacity_vec": _readonly(cap),
            "_pool_type": _readonly(pool_type),
            "_pool_first_node": _readonly(np.concatenate(([0], np.cumsum(pool_nodes)))),
            "_node_pool": _readonly(node_pool),
            "_node_type": _readonly(pool_type[node_pool]),
            "_node_gpus": _readonly(pool_gpn[node_pool]),
            "_node_intra_bw_gbps": _readonly(
                np.array([p.intra_bw_gbps for p in pools], dtype=np.float64)[node_pool]),
            "_node_inter_bw_gbps": _readonly(
                np.array([p.inter_bw_gbps for p in pools], dtype=np.float64)[node_pool]),
        }
        for k, v in derived.items():
            object.__setattr__(self, k, v)

    # ---- derived views -------------------------------------------------------------------

    @property
    def gpu_types(self) -> tuple[str, ...]:
        """Distinct canonical GPU types in pool order (position = type index)."""
        return self._gpu_types  # type: ignore[attr-defined]

    @property
    def num_types(self) -> int:
        """Number of distinct GPU types."""
        return len(self._gpu_types)  # type: ignore[attr-defined]

    @property
    def capacity(self) -> dict[str, int]:
        """GPUs per type, ``{gpu_type: count}`` in type-index order (a new dict each call)."""
        return {t: int(c) for t, c in zip(self.gpu_types, self.capacity_vec)}

    @property
    def capacity_vec(self) -> np.ndarray:
        """int64 ``[num_types]``: GPUs per type, aligned to :attr:`gpu_types`."""
        return self._capacity_vec  # type: ignore[attr-defined]

    @property
    def num_gpus(self) -> int:
        """Total number of GPUs."""
        return int(self.capacity_vec.sum())

    @property
    def num_nodes(self) -> int:
        """Total number of nodes."""
        return int(self._pool_first_node[-1])  # type: ignore[attr-defined]

    @property
    def pool_type(self) -> np.ndarray:
        """int64 ``[num_pools]``: type index of each pool."""
        return self._pool_type  # type: ignore[attr-defined]

    @property
    def pool_first_node(self) -> np.ndarray:
        """int64 ``[num_pools + 1]``: node id where each pool starts; last entry = num_nodes."""
        return self._pool_first_node  # type: ignore[attr-defined]

    @property
    def node_pool(self) -> np.ndarray:
        """int64 ``[num_nodes]``: pool index of each node."""
        return self._node_pool  # type: ignore[attr-defined]

    @property
    def node_type(self) -> np.ndarray:
        """int64 ``[num_nodes]``: type index of each node."""
        return self._node_type  # type: ignore[attr-defined]

    @property
    def node_gpus(self) -> np.ndarray:
        """int64 ``[num_nodes]``: GPUs in each node."""
        return self._node_gpus  # type: ignore[attr-defined]

    @property
    def node_intra_bw_gbps(self) -> np.ndarray:
        """float64 ``[num_nodes]``: intra-node GPU-to-GPU bandwidth, GB/s per GPU."""
        return self._node_intra_bw_gbps  # type: ignore[attr-defined]

    @property
    def node_inter_bw_gbps(self) -> np.ndarray:
        """float64 ``[num_nodes]``: network bandwidth per node, GB/s."""
        return self._node_inter_bw_gbps  # type: ignore[attr-defined]

    def type_index(self, gpu_type: str) -> int:
        """Return the type index of ``gpu_type`` (catalog aliases accepted).

        Raises:
            UnknownNameError: The type is not in the catalog or not in this cluster.
        """
        idx = self._type_index.get(gpu_type)  # type: ignore[attr-defined]
        if idx is None:
            canonical = _get_gpu(gpu_type).name
            idx = self._type_index.get(canonical)  # type: ignore[attr-defined]
            if idx is None:
                raise UnknownNameError(f"GPU type in cluster {self.name!r}", gpu_type,
                                       list(self.gpu_types))
        return idx

    # ---- output --------------------------------------------------------------------------

    def describe(self) -> str:
        """Return a readable multi-line summary: pools, capacity by type, totals."""
        lines = [f"Cluster {self.name!r}: {self.num_gpus} GPUs of {self.num_types} types "
                 f"on {self.num_nodes} nodes ({len(self.pools)} pools)"]
        if self.description:
            lines.extend(textwrap.wrap(" ".join(self.description.split()), width=96,
                                       initial_indent="  ", subsequent_indent="  "))
        header = ("pool", "GPU type", "GPUs/node", "nodes", "GPUs", "intra GB/s/GPU",
                  "inter GB/s/node")
        rows = [(p.name, p.gpu_type, str(p.gpus_per_node), str(p.num_nodes), str(p.num_gpus),
                 f"{p.intra_bw_gbps:g}", f"{p.inter_bw_gbps:g}") for p in self.pools]
        widths = [max(len(r[i]) for r in (header, *rows)) for i in range(len(header))]

        def fmt(r: tuple[str, ...]) -> str:
            cells = [r[0].ljust(widths[0]), r[1].ljust(widths[1])]
            cells += [c.rjust(w) for c, w in zip(r[2:], widths[2:])]
            return "  " + "  ".join(cells)

        lines.append(fmt(header))
        lines.append("  " + "  ".join("-" * w for w in widths))
        lines.extend(fmt(r) for r in rows)
        n = self.num_gpus
        lines.append("  capacity by type: " + ", ".join(
            f"{t} {c} ({100.0 * c / n:.0f}%)" for t, c in self.capacity.items()))
        lines.append(f"  total: {n} GPUs, {self.num_nodes} nodes")
        return "\n".join(lines)

    def to_dict(self) -> dict[str, Any]:
        """Return the cluster in the file format; :func:`cluster_from_dict` inverts it.

        Every pool's bandwidths and name are written explicitly, so the round trip is exact
        even if the GPU catalog's defaults change later.
        """
        d: dict[str, Any] = {"name": self.name}
        if self.description:
            d["description"] = self.description
        d["nodes"] = [
            {
                "gpu_type": p.gpu_type,
                "gpus_per_node": p.gpus_per_node,
                "count": p.num_nodes,
                "inter_node_bw_gbps": p.inter_bw_gbps,
                "intra_node_bw_gbps": p.intra_bw_gbps,
                "name": p.name,
            }
            for p in self.pools
        ]
        return d

    def __str__(self) -> str:
        caps = ", ".join(f"{t}: {c}" for t, c in self.capacity.items())
        return f"Cluster({self.name!r}, {self.num_gpus} GPUs, {self.num_nodes} nodes; {caps})"


# --------------------------------------------------------------------------------------------
# From dicts and files
# --------------------------------------------------------------------------------------------

def _unknown_key_error(key: Any, allowed: tuple[str, ...], path: str, source: str,
                       line: int | None) -> ConfigError:
    guess = difflib.get_close_matches(str(key), allowed, n=1)
    hint = f" (did you mean {show(guess[0])}?)" if guess else ""
    return ConfigError(f"unknown key {show(key)}{hint}; allowed keys: {', '.join(allowed)}",
                       source=source, field=path, line=line)


def cluster_from_dict(d: Mapping[str, Any], source: str = "<dict>", *,
                      default_name: str | None = None,
                      lines: Mapping[str, int] | None = None) -> Cluster:
    """Build a :class:`Cluster` from the file-format mapping.

    Args:
        d: Mapping with keys ``nodes`` (required), ``name``, ``description``,
            ``inter_node_bw_gbps`` (see the module docstring).
        source: Where ``d`` came from, used in error messages (file name, ``"preset x"``).
        default_name: Name used when ``d`` has none (the file stem for files); falls back to
            ``source``.
        lines: Optional map from field path (``"nodes[1].count"``) to 1-based line number,
            used to put line numbers in errors.

    Returns:
        The validated cluster.

    Raises:
        ConfigError: Any invalid field; the message names ``source`` and the field path.
        UnknownNameError: An unknown GPU type (a ConfigError; lists the valid names).
    """
    lines = lines or {}

    def where(path: str) -> dict[str, Any]:
        return {"source": source, "field": path, "line": lines.get(path)}

    if not isinstance(d, Mapping):
        raise ConfigError(f"a cluster description must be a mapping with a 'nodes' list, got "
                          f"{type(d).__name__}", source=source, line=lines.get(""))
    for key in d:
        if key not in _TOP_KEYS:
            raise _unknown_key_error(key, _TOP_KEYS, str(key), source,
                                     lines.get(f"{key}:key", lines.get(str(key))))

    name = d.get("name")
    if name is None:
        name = default_name if default_name is not None else source
    if not isinstance(name, str) or not name.strip():
        raise ConfigError(f"name must be a non-empty string, got {show(name)}", **where("name"))
    description = d.get("description", "")
    if description is None:
        description = ""
    if not isinstance(description, str):
        raise ConfigError(f"description must be a string, got {type(description).__name__}",
                          **where("description"))
    default_inter = DEFAULT_INTER_NODE_BW_GBPS
    if d.get("inter_node_bw_gbps") is not None:
        default_inter = _check_bw(d["inter_node_bw_gbps"], "inter_node_bw_gbps",
                                  **where("inter_node_bw_gbps"))

    if "nodes" not in d:
        raise ConfigError("missing required key 'nodes' (a list of node pools)",
                          **where("nodes"))
    nodes = d["nodes"]
    if not isinstance(nodes, (list, tuple)):
        raise ConfigError(f"'nodes' must be a list of node pools, got "
                          f"{type(nodes).__name__}", **where("nodes"))
    if not nodes:
        raise ConfigError("'nodes' is empty: a cluster needs at least one node pool",
                          **where("nodes"))

    pools: list[NodePool] = []
    used_names: set[str] = set()
    total_nodes = 0
    for i, nd in enumerate(nodes):
        base = f"nodes[{i}]"
        if not isinstance(nd, Mapping):
            raise ConfigError(f"each node pool must be a mapping, got {type(nd).__name__}",
                              **where(base))
        for key in nd:
            if key not in _NODE_KEYS:
                raise _unknown_key_error(key, _NODE_KEYS, f"{base}.{key}", source,
                                         lines.get(f"{base}.{key}:key",
                                                   lines.get(f"{base}.{key}")))
        for req in ("gpu_type", "gpus_per_node", "count"):
            if req not in nd:
                raise ConfigError(f"missing required key {req!r}", source=source,
                                  field=f"{base}.{req}", line=lines.get(base))
        gpu_name = nd["gpu_type"]
        if not isinstance(gpu_name, str):
            raise ConfigError(f"gpu_type must be a string, got {show(gpu_name)}",
                              **where(f"{base}.gpu_type"))
        try:
            gpu = _get_gpu(gpu_name)
        except UnknownNameError as e:
            raise UnknownNameError("GPU type", gpu_name, list(e.valid),
                                   **where(f"{base}.gpu_type")) from None
        gpn = _check_int(nd["gpus_per_node"], "gpus_per_node", lo=1, hi=MAX_GPUS_PER_NODE,
                         **where(f"{base}.gpus_per_node"))
        count = _check_int(nd["count"], "count (number of nodes)", lo=1, hi=MAX_NODES,
                           **where(f"{base}.count"))
        total_nodes += count
        if total_nodes > MAX_NODES:
            raise ConfigError(f"{total_nodes} nodes in pools 0..{i}; a cluster has at most "
                              f"{MAX_NODES}", **where(f"{base}.count"))
        # Optional keys given as null (YAML "~" or an empty value) mean "use the default".
        inter = default_inter
        if nd.get("inter_node_bw_gbps") is not None:
            inter = _check_bw(nd["inter_node_bw_gbps"], "inter_node_bw_gbps",
                              **where(f"{base}.inter_node_bw_gbps"))
        intra = None
        if nd.get("intra_node_bw_gbps") is not None:
            intra = _check_bw(nd["intra_node_bw_gbps"], "intra_node_bw_gbps",
                              **where(f"{base}.intra_node_bw_gbps"))
        pool_name = nd.get("name") or ""
        if not isinstance(pool_name, str):
            raise ConfigError(f"name must be a string, got {show(pool_name)}",
                              **where(f"{base}.name"))
        pool_name = pool_name.strip()
        if pool_name:
            if pool_name in used_names:
                raise ConfigError(f"duplicate pool name {show(pool_name)}",
                                  **where(f"{base}.name"))
        else:
            stem = f"{gpu.name.lower()}-x{gpn}"
            pool_name, k = stem, 2
            while pool_name in used_names:
                pool_name, k = f"{stem}-{k}", k + 1
        used_names.add(pool_name)
        try:
            pools.append(NodePool(gpu_type=gpu.name, gpus_per_node=gpn, num_nodes=count,
                                  intra_bw_gbps=intra, inter_bw_gbps=inter, name=pool_name))
        except ConfigError as e:  # e.g. the catalog lacks a default intra-node bandwidth
            key = {"intra_bw_gbps": "intra_node_bw_gbps",
                   "inter_bw_gbps": "inter_node_bw_gbps"}.get(e.field or "", e.field)
            raise ConfigError(e.reason, **where(f"{base}.{key}" if key else base)) from None
    return Cluster(name=name.strip(), pools=tuple(pools), description=description.strip())


def _yaml_lines(text: str) -> dict[str, int]:
    """Map field paths to 1-based line numbers using PyYAML's composer (safe loader).

    Keys ``"<path>:key"`` hold the line of a mapping key itself (for unknown-key errors);
    ``"<path>"`` holds the line of its value. Also rejects duplicate keys, which
    ``yaml.safe_load`` would silently resolve to the last one.
    """
    import yaml

    root = yaml.compose(text, Loader=yaml.SafeLoader)
    out: dict[str, int] = {}
    if root is None:
        return out
    out[""] = root.start_mark.line + 1

    visited: set[int] = set()

    def walk(node: Any, path: str) -> None:
        # An alias reuses its anchor's node: walk it once, so that recursive aliases and
        # "billion laughs" documents cost one pass over the text (aliased paths get no line).
        if id(node) in visited:
            return
        visited.add(id(node))
        if isinstance(node, yaml.MappingNode):
            seen: dict[str, int] = {}
            for knode, vnode in node.value:
                key = str(knode.value)
                sub = f"{path}.{key}" if path else key
                if key in seen:
                    raise ConfigError(f"duplicate key {show(key)} (first on line {seen[key]})",
                                      field=sub, line=knode.start_mark.line + 1)
                seen[key] = knode.start_mark.line + 1
                out[f"{sub}:key"] = knode.start_mark.line + 1
                out[sub] = vnode.start_mark.line + 1
                walk(vnode, sub)
        elif isinstance(node, yaml.SequenceNode):
            for i, item in enumerate(node.value):
                sub = f"{path}[{i}]"
                out[sub] = item.start_mark.line + 1
                walk(item, sub)

    walk(root, "")
    return out


def _value_error_text(exc: ValueError) -> str:
    """Readable text of a ValueError raised while building values from YAML/JSON."""
    text = str(exc)
    if "integer string conversion" in text:
        return "an integer has too many digits"
    return shorten(text, 160)


def _parse_text(text: str, source: str, is_json: bool) -> tuple[Any, dict[str, int]]:
    """Parse YAML or JSON text; return the data and the path -> line map."""
    if is_json:
        try:
            return json.loads(text, object_pairs_hook=json_object_no_duplicates), {}
        except json.JSONDecodeError as e:
            raise ConfigError(f"invalid JSON: {e.msg} (column {e.colno})", source=source,
                              line=e.lineno) from None
        except ConfigError as e:
            raise ConfigError(e.reason, source=source, field=e.field) from None
        except ValueError as e:  # an integer literal beyond Python's digit limit
            raise ConfigError(f"invalid JSON: {_value_error_text(e)}", source=source) from None
        except RecursionError:
            raise ConfigError("invalid JSON: nested too deeply", source=source) from None
    import yaml

    try:
        data = yaml.safe_load(text)
        lines = _yaml_lines(text)
    except yaml.MarkedYAMLError as e:
        mark = e.problem_mark or e.context_mark
        msg = str(e.problem or e)
        if e.context and e.context_mark is not None:
            msg += f" ({e.context} that starts on line {e.context_mark.line + 1})"
        elif e.context:
            msg += f" ({e.context})"
        raise ConfigError(f"invalid YAML: {shorten(msg, 300)}", source=source,
                          line=mark.line + 1 if mark is not None else None) from None
    except yaml.YAMLError as e:
        raise ConfigError(f"invalid YAML: {shorten(e, 300)}", source=source) from None
    except ConfigError as e:
        raise ConfigError(e.reason, source=source, field=e.field, line=e.line) from None
    except ValueError as e:  # a constructor failed: too many digits, a date like 2001-13-45
        raise ConfigError(f"invalid YAML: {_value_error_text(e)}", source=source) from None
    except RecursionError:
        raise ConfigError("invalid YAML: nested too deeply", source=source) from None
    return data, lines


def load_cluster(path: PathLike) -> Cluster:
    """Load and validate a cluster file (``.yaml``, ``.yml`` or ``.json``).

    Args:
        path: The file. The cluster name defaults to the file stem.

    Returns:
        The validated cluster.

    Raises:
        ConfigError: Missing or unreadable file, unsupported extension, non-UTF-8 bytes,
            empty file, syntax error, or any invalid field (with file, field and line).
    """
    p = Path(path)
    source = str(p)
    suffix = p.suffix.lower()
    if suffix not in _FILE_SUFFIXES:
        raise ConfigError(f"unsupported cluster file extension {show(p.suffix)}; use one of "
                          f"{', '.join(_FILE_SUFFIXES)}", source=source)
    text = read_text_file(p, empty_hint="expected a mapping with a 'nodes' list")
    data, lines = _parse_text(text, source, is_json=suffix == ".json")
    if data is None:
        raise ConfigError("file contains no data (only comments?); expected a mapping with a "
                          "'nodes' list", source=source)
    return cluster_from_dict(data, source=source, default_name=p.stem, lines=lines)


# --------------------------------------------------------------------------------------------
# Presets
# --------------------------------------------------------------------------------------------

_PRESET_FILE = "hsched_env/data/clusters.json"


@lru_cache(maxsize=1)
def _preset_specs() -> dict[str, dict[str, Any]]:
    text = resources.files("hsched_env").joinpath("data/clusters.json").read_text("utf-8")
    try:
        raw = json.loads(text, object_pairs_hook=json_object_no_duplicates)
    except (json.JSONDecodeError, ConfigError) as e:  # a packaging bug, not user error
        raise ConfigError(f"cannot parse the preset file: {e}", source=_PRESET_FILE) from None
    if isinstance(raw, list):
        specs = {str(s.get("name", "")).lower(): s for s in raw}
    else:
        specs = {}
        for k, s in raw.items():
            if k.startswith("_"):  # e.g. "_comment"
                continue
            specs[k.lower()] = {"name": k, **s}
    return specs


@lru_cache(maxsize=None)
def _preset(key: str) -> Cluster:
    spec = _preset_specs()[key]
    return cluster_from_dict(spec, source=f"preset {spec.get('name', key)} ({_PRESET_FILE})")


def cluster_presets() -> list[str]:
    """Return the names of the built-in cluster presets, in file order."""
    return [s.get("name", k) for k, s in _preset_specs().items()]


def get_cluster(name_or_path: Union[PathLike, Cluster]) -> Cluster:
    """Return a preset by name (case-insensitive) or load a cluster file.

    Args:
        name_or_path: A preset name (see :func:`cluster_presets`), a path to a ``.yaml``,
            ``.yml`` or ``.json`` cluster file, or a :class:`Cluster` (returned unchanged).

    Returns:
        The cluster.

    Raises:
        UnknownNameError: Neither a preset nor an existing file; lists the presets.
        ConfigError: The file exists but is invalid.
    """
    if isinstance(name_or_path, Cluster):
        return name_or_path
    if not isinstance(name_or_path, (str, os.PathLike)):
        raise ConfigError(f"expected a preset name or a file path, got "
                          f"{type(name_or_path).__name__}", field="cluster")
    text = os.fspath(name_or_path)
    key = text.strip().lower()
    if isinstance(name_or_path, str) and key in _preset_specs():
        return _preset(key)
    p = user_path(text, field="cluster")
    if is_file(p):
        return load_cluster(p)
    looks_like_path = p.suffix.lower() in _FILE_SUFFIXES or os.sep in text or "/" in text
    where = {"source": f"{text} (no such file)"} if looks_like_path else {}
    raise UnknownNameError("cluster", text, cluster_presets(), **where)
