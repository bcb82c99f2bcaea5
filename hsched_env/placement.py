"""Placement of candidates on concrete nodes.

A candidate names GPUs per node pool. Placing it picks nodes: a part smaller than a node goes
on one node (best fit: the node with the fewest free GPUs that still has enough, so large holes
stay open); a larger part takes whole free nodes, plus one node for a remainder. Tensor-parallel
groups never straddle nodes: a part is placeable only if every node share is a multiple of
``tp``. No node is ever over-subscribed.
"""

from __future__ import annotations

import copy

import numpy as np

from hsched_env.cluster import Cluster

Allocation = tuple[tuple[int, int], ...]      # ((node, gpus), ...)
_NEVER = np.iinfo(np.int64).max                # more free GPUs than any node has
_LIST_NODES = 48          # pools up to this many nodes are placed on Python ints, not arrays


class NodeState:
    """Free GPUs per node of a cluster, with placement and release.

    Args:
        cluster: The cluster; nodes are numbered pool by pool (``cluster.node_pool``).
    """

    def __init__(self, cluster: Cluster) -> None:
        self.cluster = cluster
        self.capacity = np.asarray(cluster.node_gpus, dtype=np.int64)
        self.free = self.capacity.copy()
        first = [int(v) for v in cluster.pool_first_node]
        self._pool_range = [(first[p], first[p + 1]) for p in range(len(cluster.pools))]
        self._gpn = [p.gpus_per_node for p in cluster.pools]

    def reset(self) -> None:
        self.free[:] = self.capacity

    def copy(self) -> "NodeState":
        """An independent copy (its own free counts; the cluster layout is shared)."""
        other = copy.copy(self)
        other.free = self.free.copy()
        return other

    def free_by_type(self) -> np.ndarray:
        """(T,) free GPUs per type, aligned with ``cluster.gpu_types``."""
        out = np.zeros(len(self.cluster.gpu_types), dtype=np.int64)
        np.add.at(out, np.asarray(self.cluster.node_type), self.free)
        return out

    def _part(self, pool: int, n: int, tp: int, taken: dict[int, int]) -> list[tuple[int, int]] | None:
        """Nodes for ``n`` GPUs of ``pool`` (``taken``: GPUs already promised on nodes by the
        candidate's other parts), or None: ``n // g`` completely free nodes (lowest index
        first) plus, for the remainder, the node with the fewest free GPUs that holds it
        (best fit, lowest index on ties)."""
        gpn = self._gpn[pool]
        whole, rest = divmod(n, gpn)
        if (rest and rest % tp) or (whole and gpn % tp):
            return None
        lo, hi = self._pool_range[pool]
        if hi - lo <= _LIST_NODES:
            return self._part_list(lo, hi, gpn, whole, rest, taken)
        return self._part_array(lo, hi, gpn, whole, rest, taken)

    def _part_list(self, lo: int, hi: int, gpn: int, whole: int, rest: int,
                   taken: dict[int, int]) -> list[tuple[int, int]] | None:
        """``_part`` on Python ints (small pools: faster than arrays)."""
        free = self.free[lo:hi].tolist()
        if taken:
            free = [f - taken.get(v, 0) for v, f in enumerate(free, lo)]
        out: list[tuple[int, int]] = []
        if whole:
            full = [i for i, f in enumerate(free) if f == gpn][:whole]
            if len(full) < whole:
                return None
            for i in full:
                out.append((lo + i, gpn))
                free[i] = 0
        if rest:
            best, least = -1, 0
            for i, f in enumerate(free):
                if f >= rest and (best < 0 or f < least):
                    best, least = i, f
            if best < 0:
                return None
            out.append((lo + best, rest))
        return out

    def _part_array(self, lo: int, hi: int, gpn: int, whole: int, rest: int,
                    taken: dict[int, int]) -> list[tuple[int, int]] | None:
        """``_part`` on arrays (large pools)."""
        free = self.free[lo:hi].copy()
        if taken:
            free -= np.array([taken.get(v, 0) for v in range(lo, hi)], dtype=free.dtype)
        out: list[tuple[int, int]] = []
        if whole:
            full = np.flatnonzero(free == gpn)[:whole]
            if full.size < whole:
                return None
            out += [(lo + int(i), gpn) for i in full]
            free[full] = 0
        if rest:
            if not free.size:
                return None
            best = int(np.argmin(np.where(free >= rest, free, _NEVER)))
            if free[best] < rest:
                return None
            out.append((lo + best, rest))
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
        if len(alloc) == 1:                      # one node (most jobs): no tally needed
            (v, k), = alloc
            if self.free[v] < k:
                return False
            self.free[v] -= k
            return True
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


class FitIndex:
    """Vectorized "would ``NodeState.place`` succeed?" for many candidates at once.

    ``NodeState._part`` puts a part of ``n`` GPUs of a pool with ``g`` GPUs per node on
    ``whole = n // g`` completely free nodes plus, for ``rest = n % g`` GPUs, one more node with
    at least ``rest`` free. So a part fits iff the pool has ``≥ whole`` free nodes and
    ``≥ whole + 1`` nodes with ``≥ rest`` free GPUs (every free node counts for both), and its
    tensor-parallel groups do not straddle nodes. A candidate's parts lie in different pools,
    so it fits iff every part does. ``fits`` evaluates this for arrays of parts from the
    per-pool counts of a ``NodeState`` — exactly ``place``'s answer, without trying it.

    Args:
        cluster: The cluster.
        pool_a, n_a, pool_b, n_b, tp: (M,) parts of M candidates (``pool_b = -1``: one part).
    """

    def __init__(self, cluster: Cluster, pool_a, n_a, pool_b, n_b, tp) -> None:
        gpn = np.array([p.gpus_per_node for p in cluster.pools], dtype=np.int64)
        node_pool = np.asarray(cluster.node_pool, dtype=np.int64)
        P, L = len(cluster.pools), int(gpn.max()) + 1
        self._shape = (P, L)
        # histogram cell of a node of pool p with f free GPUs: p·L + (L − 1 − f), levels
        # reversed so that a cumulative sum along a pool's row counts nodes with ≥ f free
        self._node_cell = node_pool * L + (L - 1)
        tp = np.asarray(tp, dtype=np.int64)
        ok = np.ones(len(tp), dtype=bool)
        cells, need = [], []
        for pool, n in ((np.asarray(pool_a), np.asarray(n_a)), (np.asarray(pool_b),
                                                                 np.asarray(n_b))):
            present = pool >= 0
            p = np.where(present, pool, 0)
            g = gpn[p]
            whole, rest = np.divmod(n, g)
            ok &= ~present | ~(((rest > 0) & (rest % tp != 0)) | ((whole > 0) & (g % tp != 0)))
            # ≥ whole completely free nodes, and ≥ whole + 1 nodes with ≥ rest free; an absent
            # part or no remainder needs ≥ 0 nodes (always true)
            has_rest = present & (rest > 0)
            cells += [p * L + (L - 1 - g), np.where(has_rest, p * L + (L - 1 - rest), 0)]
            need += [np.where(present, whole, 0), np.where(has_rest, whole + 1, 0)]
        self._cells = np.stack(cells)           # (4, M): cell of each condition
        need = np.stack(need)
        need[0, ~ok] = _NEVER                   # statically impossible: never fits
        self._need = need

    @classmethod
    def concatenate(cls, parts: list["FitIndex"], cluster: Cluster) -> "FitIndex":
        """One index over the candidates of ``parts`` (indexes of the same cluster), in
        order."""
        if not parts:
            empty = np.zeros(0, dtype=np.int64)
            return cls(cluster, empty, empty, empty, empty, empty)
        out = object.__new__(cls)
        out._shape, out._node_cell = parts[0]._shape, parts[0]._node_cell
        out._cells = np.concatenate([p._cells for p in parts], axis=1)
        out._need = np.concatenate([p._need for p in parts], axis=1)
        return out

    def take(self, idx: np.ndarray) -> "FitIndex":
        """The index restricted to candidates ``idx`` (in that order; a slice gives views)."""
        out = object.__new__(FitIndex)
        out._shape, out._node_cell = self._shape, self._node_cell
        out._cells, out._need = self._cells[:, idx], self._need[:, idx]
        return out

    def fits(self, free: np.ndarray) -> np.ndarray:
        """(M,) bool: which candidates ``NodeState.place`` could place with ``free`` GPUs per
        node (``NodeState.free``)."""
        P, L = self._shape
        # count[p, L − 1 − r]: nodes of pool p with ≥ r free GPUs
        count = np.bincount(self._node_cell - free, minlength=P * L).reshape(P, L).cumsum(
            axis=1).ravel()
        return (count[self._cells] >= self._need).all(axis=0)


def candidate_parts(table, row: int) -> list[tuple[int, int]]:
    """``[(pool, gpus), ...]`` of one candidate of a ``CandidateTable``."""
    pa, pb = int(table.pool_a[row]), int(table.pool_b[row])
    types = table.gpu_types
    na = int(table.gpus[row, types.index(table.pool_types[pa])])
    if pb < 0:
        return [(pa, na)]
    nb = int(table.gpus[row, types.index(table.pool_types[pb])])
    return [(pa, na), (pb, nb)]
