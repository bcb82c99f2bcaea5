"""Placement of candidates on concrete nodes.

A candidate names GPUs per node pool. Placing it picks nodes: a part smaller than a node goes
on one node (best fit: the node with the fewest free GPUs that still has enough, so large holes
stay open); a larger part takes whole free nodes, plus one node for a remainder. Tensor-parallel
groups never straddle nodes: a part is placeable only if every node share is a multiple of
``tp``. No node is ever over-subscribed.
"""

from __future__ import annotations

import numpy as np

from hsched_env.cluster import Cluster

Allocation = tuple[tuple[int, int], ...]      # ((node, gpus), ...)


class NodeState:
    """Free GPUs per node of a cluster, with placement and release.

    Args:
        cluster: The cluster; nodes are numbered pool by pool (``cluster.node_pool``).
    """

    def __init__(self, cluster: Cluster) -> None:
        self.cluster = cluster
        self.capacity = np.asarray(cluster.node_gpus, dtype=np.int64)
        self.free = self.capacity.copy()
        first = np.asarray(cluster.pool_first_node)
        self._pool_nodes = [np.arange(first[p], first[p + 1]) for p in range(len(cluster.pools))]
        self._gpn = [p.gpus_per_node for p in cluster.pools]

    def reset(self) -> None:
        self.free[:] = self.capacity

    def free_by_type(self) -> np.ndarray:
        """(T,) free GPUs per type, aligned with ``cluster.gpu_types``."""
        out = np.zeros(len(self.cluster.gpu_types), dtype=np.int64)
        np.add.at(out, np.asarray(self.cluster.node_type), self.free)
        return out

    def _part(self, pool: int, n: int, tp: int, taken: dict[int, int]) -> list[tuple[int, int]] | None:
        nodes = self._pool_nodes[pool]
        gpn = self._gpn[pool]
        free = self.free[nodes] - np.array([taken.get(int(v), 0) for v in nodes])
        if n < gpn or n % gpn:
            whole, rest = divmod(n, gpn) if n >= gpn else (0, n)
        else:
            whole, rest = n // gpn, 0
        if (rest and rest % tp) or (whole and gpn % tp):
            return None
        out: list[tuple[int, int]] = []
        if whole:
            full = nodes[free == gpn]
            if full.size < whole:
                return None
            out += [(int(v), gpn) for v in full[:whole]]
            for v, _ in out:
                free[np.searchsorted(nodes, v)] = 0
        if rest:
            ok = np.flatnonzero(free >= rest)
            if ok.size == 0:
                return None
            best = ok[np.argmin(free[ok])]                       # best fit, lowest index on ties
            out.append((int(nodes[best]), rest))
        return out

    def place(self, parts: list[tuple[int, int]], tp: int) -> Allocation | None:
        """Place parts ``[(pool, gpus), ...]``; returns the allocation (and takes the GPUs) or
        ``None`` (nothing taken) if it does not fit now."""
        taken: dict[int, int] = {}
        alloc: list[tuple[int, int]] = []
        for pool, n in parts:
            got = self._part(pool, n, tp, taken)
            if got is None:
                return None
            for v, k in got:
                taken[v] = taken.get(v, 0) + k
            alloc += got
        for v, k in alloc:
            self.free[v] -= k
        return tuple(alloc)

    def keep(self, alloc: Allocation) -> bool:
        """Re-take an existing allocation (a job keeping its nodes); False if no longer free."""
        need: dict[int, int] = {}
        for v, k in alloc:
            need[v] = need.get(v, 0) + k
        if any(self.free[v] < k for v, k in need.items()):
            return False
        for v, k in need.items():
            self.free[v] -= k
        return True

    def release(self, alloc: Allocation) -> None:
        for v, k in alloc:
            self.free[v] += k
        if np.any(self.free > self.capacity):
            raise AssertionError("released more GPUs than a node has")


def candidate_parts(table, row: int) -> list[tuple[int, int]]:
    """``[(pool, gpus), ...]`` of one candidate of a ``CandidateTable``."""
    pa, pb = int(table.pool_a[row]), int(table.pool_b[row])
    types = table.gpu_types
    na = int(table.gpus[row, types.index(table.pool_types[pa])])
    if pb < 0:
        return [(pa, na)]
    nb = int(table.gpus[row, types.index(table.pool_types[pb])])
    return [(pa, na), (pb, nb)]
