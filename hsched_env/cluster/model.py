"""The cluster model: node pools and the arrays a cluster derives from them.

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
"""

from __future__ import annotations

import math
import textwrap
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any

import numpy as np

from hsched_env.catalog import MIN_BW_GBPS, get_gpu
from hsched_env.errors import ConfigError, UnknownNameError, show

__all__ = ["DEFAULT_INTER_NODE_BW_GBPS", "MAX_GPUS_PER_NODE", "MAX_NODES", "Cluster", "NodePool"]

#: Default network bandwidth per node, GB/s (100 Gb/s Ethernet = 12.5 GB/s).
DEFAULT_INTER_NODE_BW_GBPS = 12.5
#: Largest node size accepted (HGX/DGX boards carry 8; 16-GPU servers such as DGX-2 exist).
MAX_GPUS_PER_NODE = 16
#: Largest number of nodes in a cluster (all pools together); the per-node arrays stay small.
MAX_NODES = 100_000

_BW_HINT = "bandwidths are numbers in GB/s (gigabytes per second; 100 Gb/s = 12.5 GB/s)"


# --------------------------------------------------------------------------------------------
# Small validation helpers (shared by the dataclasses and the file loader)
# --------------------------------------------------------------------------------------------

def _get_gpu(name: str):
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


def _is_float_text(text: str) -> bool:
    """Whether ``text`` is a finite number as Python reads it (``"1.6e3"``)."""
    try:
        return math.isfinite(float(text))
    except ValueError:
        return False


def _plain_number(text: str) -> str:
    """``text``, a number, as YAML reads a number: without an exponent where that is short
    (``"1.6e3"`` → ``1600``, ``"1e-5"`` → ``0.00001``), else with a dot and a signed exponent
    (``"1e300"`` → ``1.0e+300``; ``repr`` gave ``1e-05``, text to YAML too, and 301 digits)."""
    value = float(text)
    plain = format(Decimal(repr(value)), "f")
    if "." in plain:
        plain = plain.rstrip("0").rstrip(".") or "0"
    if len(plain) <= 20:
        return plain
    # repr's digits read back exact (and are the shortest that do); 17 significant digits
    # where repr has no exponent
    text = repr(value) if "e" in repr(value) else f"{value:.16e}"
    mantissa, _, exponent = text.partition("e")
    if "." in mantissa and "e" not in repr(value):
        mantissa = mantissa.rstrip("0")
    if mantissa.endswith(".") or "." not in mantissa:
        mantissa = mantissa.rstrip(".") + ".0"
    return f"{mantissa}e{int(exponent):+d}"


def _check_bw(value: Any, what: str, **where) -> float:
    """Return ``value`` as a finite float (GB/s) of at least ``MIN_BW_GBPS`` or raise
    ConfigError."""
    if isinstance(value, bool) or not isinstance(value, (int, float, np.integer, np.floating)):
        hint = _BW_HINT
        if isinstance(value, str) and "e" in value.lower() and _is_float_text(value):
            # YAML 1.1 reads 1.6e3 or 2e2 (no dot, or no exponent sign) as text
            hint = (f"YAML reads {show(value)} as text: write it as {_plain_number(value)} "
                    f"(or with a dot and a signed exponent, e.g. 1.6e+3)")
        raise ConfigError(f"{what} must be a number, got {show(value)} ({type(value).__name__}); "
                          f"{hint}", **where)
    try:
        fvalue = float(value)
    except OverflowError:  # an int beyond the float range
        fvalue = math.inf
    if not math.isfinite(fvalue) or fvalue <= 0:
        raise ConfigError(f"{what} must be a positive finite number, got {show(value)}; "
                          f"{_BW_HINT}", **where)
    if fvalue < MIN_BW_GBPS:
        raise ConfigError(f"{what} must be at least {MIN_BW_GBPS:g} GB/s (1 MB/s), got "
                          f"{show(value)}; {_BW_HINT}", **where)
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
        ConfigError: A count is not a positive integer, a bandwidth is not a finite number
            of at least :data:`MIN_BW_GBPS` GB/s, or ``gpus_per_node`` exceeds
            :data:`MAX_GPUS_PER_NODE`.
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
        ConfigError: No pools, a pool that is not a :class:`NodePool`, duplicate pool names,
            or a ``description`` that is not a string (``None`` is taken as ``""``, as a
            cluster file's ``description: null``).
    """

    name: str
    pools: tuple[NodePool, ...]
    description: str = field(default="", compare=False)

    def __post_init__(self) -> None:
        if not isinstance(self.name, str) or not self.name.strip():
            raise ConfigError(f"cluster name must be a non-empty string, got {show(self.name)}",
                              field="name")
        if self.description is None:                   # (a file's "description: null")
            object.__setattr__(self, "description", "")
        if not isinstance(self.description, str):     # (as a cluster file's is checked)
            raise ConfigError(f"description must be a string, got "
                              f"{type(self.description).__name__}", source=self.name,
                              field="description")
        if isinstance(self.pools, (str, bytes)) or not hasattr(self.pools, "__iter__"):
            raise ConfigError(f"pools must be a sequence of NodePool, got {show(self.pools)}",
                              source=self.name, field="nodes")
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
