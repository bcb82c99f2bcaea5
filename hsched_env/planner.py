"""Candidate planner: every (resource set, parallelization strategy) a job could run with.

For one job (a ``ModelSpec``) on a ``Cluster`` the planner

1. enumerates **resource sets** (cached per cluster): for each node pool, powers of two inside a
   node and whole nodes across nodes (Sia's configurations, so a placement always exists), and
   mixed sets of two GPU types (pairs of pools of different types, each side a power-of-two
   number of GPUs or the whole pool);
2. enumerates **strategies** per set: every dp × tp × pp factorization (tp inside a node, dividing
   the attention heads; pp at most the layer count), the two mixed layouts (speed-proportional
   data-parallel split, or one pipeline across both types, in both orders when the two types
   have the same memory), micro-batch counts (powers of two), recompute on/off, and ZeRO 0–3
   (a higher stage needs less memory and never less time, so the smallest that fits is
   taken);
3. prices them all at once with ``costmodel.strategy_cost`` (or a measured table, see
   ``throughput``: its entries replace the analytic figure, and a type's one-GPU measurement
   scales that type's analytic rows), drops what does not fit in memory, keeps the **fastest
   strategy per set**, and prunes **dominated sets** (another set uses no more GPUs of any type
   and is at least as fast);
4. returns a ``CandidateTable``: one row per candidate, columns as numpy arrays.
"""

from __future__ import annotations

import logging
import math
from dataclasses import dataclass, field
from functools import lru_cache

import numpy as np

from hsched_env.catalog import ModelSpec, check_model, get_gpu, get_model
from hsched_env.cluster import Cluster, get_cluster
from hsched_env.errors import ConfigError, check_switch, is_whole_number, show
from hsched_env.costmodel import (DEFAULT_CALIBRATION, GB, KIND_DP_SPLIT, KIND_HOMO,
                                  KIND_NAMES, KIND_PP_SPLIT, Calibration,
                                  best_microbatch_count, layer_time_per_sample,
                                  model_shape, model_state_bytes,
                                  pool_arrays, strategy_cost)
from hsched_env.throughput import ThroughputSource, get_throughput_source

log = logging.getLogger(__name__)

TP_DEGREES = (1, 2, 4, 8, 16)
# A mixed set pairs sides within this factor of each other: a side 8× smaller than the other
# adds at most a few percent (even an H100 is only ~10× a T4) for the cost of a mixed layout.
MIXED_MAX_RATIO = 8


# ---------------------------------------------------------------------------- resource sets
@dataclass(frozen=True)
class ResourceSets:
    """Target resource sets of a cluster (model independent), one entry per set."""

    pool_a: np.ndarray   # pool of part A
    pool_b: np.ndarray   # pool of part B, -1 for single-type sets
    n_a: np.ndarray      # GPUs of part A
    n_b: np.ndarray      # GPUs of part B (0 for single-type sets)
    nodes: np.ndarray    # nodes the set occupies


@dataclass(frozen=True)
class Skeleton:
    """Model-independent strategy shapes of every resource set (one entry per shape).

    ``part_a``/``part_b`` are the node pools of the shape's parts: the set's ``pool_a`` and
    ``pool_b``, or the other way round for a mixed pipeline run in the other orientation (its
    first stages, part A, on the set's ``pool_b``); ``part_b`` = ``part_a`` for one-type sets.
    """

    set_id: np.ndarray
    kind: np.ndarray
    dpa: np.ndarray
    dpb: np.ndarray
    tp: np.ndarray
    ppa: np.ndarray
    ppb: np.ndarray
    part_a: np.ndarray
    part_b: np.ndarray
    gpus: np.ndarray          # GPUs of the shape's set (both parts)
    pp_total: np.ndarray = field(init=False)      # pipeline stages (both parts)
    dp_total: np.ndarray = field(init=False)      # replicas (both types of a split)
    plain: np.ndarray = field(init=False)         # the shapes of one type with tp = pp = 1

    def __post_init__(self) -> None:
        object.__setattr__(self, "pp_total", self.ppa + self.ppb)
        object.__setattr__(self, "dp_total", np.where(self.kind == KIND_DP_SPLIT,
                                                      self.dpa + self.dpb, self.dpa))
        object.__setattr__(self, "plain", np.flatnonzero(
            (self.kind == KIND_HOMO) & (self.tp == 1) & (self.ppa == 1)))


def _pow2_upto(n: int) -> list[int]:
    out, k = [], 1
    while k <= n:
        out.append(k)
        k *= 2
    return out


@lru_cache(maxsize=4096)
def _divisors(n: int) -> tuple[int, ...]:
    """The divisors of ``n`` ≥ 1, ascending (trial division up to √n: a pool of N nodes asks
    for N set sizes, so a scan up to n made planning quadratic in the nodes)."""
    small, large = [], []
    k = 1
    while k * k <= n:
        if n % k == 0:
            small.append(k)
            if k * k != n:
                large.append(n // k)
        k += 1
    return tuple(small + large[::-1])


@lru_cache(maxsize=32)
def _cluster_sets(pools_key) -> tuple[ResourceSets, Skeleton]:
    pools = list(pools_key)
    sets: list[tuple[int, int, int, int, int]] = []
    for i, p in enumerate(pools):
        sizes = [(k, 1) for k in _pow2_upto(p.gpus_per_node - 1)]
        sizes += [(k * p.gpus_per_node, k) for k in range(1, p.num_nodes + 1)]
        sets += [(i, -1, n, 0, nodes) for n, nodes in sizes]

    def ladder(p):
        total = p.gpus_per_node * p.num_nodes
        return sorted(set(_pow2_upto(total)) | {total})

    for i, p in enumerate(pools):
        for j, q in enumerate(pools):
            if j <= i or p.gpu_type == q.gpu_type:
                continue
            a, b = _mixed_order(pools, i, j)
            pa, pb = pools[a], pools[b]
            for na in ladder(pa):
                for nb in ladder(pb):
                    if max(na, nb) > MIXED_MAX_RATIO * min(na, nb):
                        continue
                    nodes = -(-na // pa.gpus_per_node) + -(-nb // pb.gpus_per_node)
                    sets.append((a, b, na, nb, nodes))
    return _sets_and_skeleton(pools, sets)


def _mixed_order(pools, i: int, j: int) -> tuple[int, int]:
    """Parts (A, B) of a mixed set of pools ``i`` and ``j``: A is the pool with more memory
    per GPU (a mixed pipeline's first stages hold the most in-flight micro-batches), the one
    listed first in the cluster on equal memory. Both orientations of a mixed pipeline are
    priced when the memories are equal (see ``_sets_and_skeleton``)."""
    mem_i, mem_j = (get_gpu(pools[k].gpu_type).memory_gb for k in (i, j))
    return (i, j) if (mem_i, -i) >= (mem_j, -j) else (j, i)


def _sets_and_skeleton(pools, sets) -> tuple[ResourceSets, Skeleton]:
    """Arrays of the given sets and every dp × tp × pp shape of each.

    A mixed pipeline puts its first stages on part A. When both types have the same memory
    per GPU, which order is faster depends on the model (the last stage holds the output
    layer, the first the most micro-batches in flight), so each such pipeline shape is also
    listed the other way round (``Skeleton.part_a`` = the set's ``pool_b``)."""
    arr = np.array(sets, dtype=np.int64).reshape(-1, 5)
    rs = ResourceSets(*(arr[:, k] for k in range(5)))
    rows: list[tuple[int, ...]] = []
    for s, (a, b, na, nb, _) in enumerate(sets):
        if b < 0:
            continue                          # the one-pool sets: ``_one_pool_rows``
        gpn = min(pools[a].gpus_per_node, pools[b].gpus_per_node)
        both_ways = (get_gpu(pools[a].gpu_type).memory_gb
                     == get_gpu(pools[b].gpu_type).memory_gb)
        for tp in TP_DEGREES:
            if tp > gpn or not _tp_fits(na, pools[a].gpus_per_node, tp) or not _tp_fits(
                    nb, pools[b].gpus_per_node, tp):
                continue
            for k in _divisors(np.gcd(na // tp, nb // tp)):
                # k = pp: replicas of tp·pp GPUs on each side (data-parallel split) ...
                rows.append((s, KIND_DP_SPLIT, na // (tp * k), nb // (tp * k), tp, k, 0, a, b))
                # ... k = dp: k pipelines with stages on both types (pipeline split).
                rows.append((s, KIND_PP_SPLIT, k, 0, tp, na // (tp * k), nb // (tp * k), a, b))
                if both_ways:
                    rows.append((s, KIND_PP_SPLIT, k, 0, tp, nb // (tp * k), na // (tp * k),
                                 b, a))
    # the one-pool rows first (all of one layout, in the order set, tp, pp: as the mixed
    # ones are listed, set by set), then the mixed sets'
    sk = np.concatenate([_one_pool_rows(pools, arr),
                         np.array(rows, dtype=np.int64).reshape(-1, 9)])
    # Rows grouped by layout (stable): the cost model prices each layout on a slice of rows.
    sk = sk[np.argsort(sk[:, 1], kind="stable")]
    skeleton = Skeleton(*(sk[:, k] for k in range(9)), gpus=(rs.n_a + rs.n_b)[sk[:, 0]])
    return rs, skeleton


def _tp_fits(n, gpn, tp: int):
    """Tensor groups of ``tp`` stay inside nodes: a part of ``n`` GPUs within one node of
    ``gpn``, or whole nodes (and a remainder) that are each a multiple of ``tp`` (see
    ``placement``). Python ints or arrays of them."""
    return (n % tp == 0) & ((n <= gpn) | ((gpn % tp == 0) & ((n % gpn) % tp == 0)))


#: From this many one-pool sets up, ``_one_pool_rows`` builds their rows in array
#: operations; below, in a loop, which costs less there (session 53, sets of ``large-2048``:
#: one set 8 µs in the loop against 117 µs, 32 sets 359 against 357 µs, 128 sets 1,391
#: against 475 µs).
_ONE_POOL_ARRAYS_FROM = 32


def _one_pool_rows(pools, sets: np.ndarray) -> np.ndarray:
    """(rows, 9) skeleton rows of the one-pool sets among ``sets`` (rows ``(pool_a, pool_b,
    n_a, n_b, nodes)``): for each set, each tensor degree ``tp`` that fits its pool's nodes
    (``_tp_fits``), each pipeline depth ``pp`` dividing ``n_a / tp`` (ascending), the rest
    data parallel; in the order set, tp, pp. From ``_ONE_POOL_ARRAYS_FROM`` sets up in array
    operations: a pool of N nodes has a set per node count, so a cluster of 100,000 nodes
    lists millions of rows (one Python tuple each took 22 s of its planning, session 53)."""
    one = np.flatnonzero(sets[:, 1] < 0)
    if one.size < _ONE_POOL_ARRAYS_FROM:           # a few sets (``plan_set``): in a loop
        rows = []
        for s, (a, n) in zip(one.tolist(), sets[one][:, [0, 2]].tolist()):
            gpn = pools[a].gpus_per_node
            for tp in TP_DEGREES:
                if tp <= gpn and _tp_fits(n, gpn, tp):
                    rows += [(s, KIND_HOMO, n // (tp * pp), 0, tp, pp, 0, a, a)
                             for pp in _divisors(n // tp)]
        return np.array(rows, dtype=np.int64).reshape(-1, 9)
    gpn = np.array([p.gpus_per_node for p in pools], dtype=np.int64)[sets[one, 0]]
    n = sets[one, 2]
    set_id, tps, per_tp = [], [], []
    for tp in TP_DEGREES:
        ok = (tp <= gpn) & _tp_fits(n, gpn, tp)
        set_id.append(one[ok])
        tps.append(np.full(int(ok.sum()), tp, dtype=np.int64))
        per_tp.append(n[ok] // tp)
    set_id, tp, v = (np.concatenate(x) for x in (set_id, tps, per_tp))
    order = np.argsort(set_id, kind="stable")           # set by set, tp ascending within
    set_id, tp, v = set_id[order], tp[order], v[order]
    owner, pp = _divisor_pairs(v)
    set_id, tp, v = set_id[owner], tp[owner], v[owner]
    out = np.zeros((pp.size, 9), dtype=np.int64)
    out[:, 0], out[:, 1], out[:, 2], out[:, 4], out[:, 5] = set_id, KIND_HOMO, v // pp, tp, pp
    out[:, 7] = out[:, 8] = sets[set_id, 0]
    return out


def _divisor_pairs(values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Every divisor of each of ``values`` (positive ints): ``(i, d)`` arrays with ``d``
    dividing ``values[i]``, ordered by ``i``, then ``d`` ascending (``_divisors`` of each)."""
    uniq, inverse = np.unique(values, return_inverse=True)
    owner, div = [], []
    for d in range(1, math.isqrt(int(uniq[-1])) + 1 if uniq.size else 1):
        lo = int(np.searchsorted(uniq, d * d))            # d up to the square root ...
        hit = lo + np.flatnonzero(uniq[lo:] % d == 0)
        owner += [hit, hit[uniq[hit] != d * d]]
        div += [np.full(hit.size, d, dtype=np.int64)]
        div += [uniq[owner[-1]] // d]                     # ... and its co-divisor
    if not owner:
        return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64)
    owner, div = np.concatenate(owner), np.concatenate(div)
    order = np.lexsort((div, owner))
    owner, div = owner[order], div[order]                 # each unique value's divisors
    count = np.bincount(owner, minlength=uniq.size)
    start = np.cumsum(count) - count
    per_value = count[inverse]                            # back to ``values``' order
    at = np.repeat(start[inverse] - (np.cumsum(per_value) - per_value), per_value)
    return (np.repeat(np.arange(values.size), per_value),
            div[at + np.arange(int(per_value.sum()))])


def resource_sets(cluster: Cluster) -> ResourceSets:
    """The cluster's target resource sets (cached per cluster layout)."""
    return _cluster_sets(cluster.pools)[0]


# ---------------------------------------------------------------------------- candidate table
@dataclass
class CandidateTable:
    """Candidates of one job: one row per (resource set, best strategy), columns as arrays.

    Attributes:
        model: The job's model name.
        gpu_types: Column order of ``gpus`` (the cluster's GPU types).
        pool_names, pool_types: Name and GPU type of each node pool of the cluster.
        gpus: (R, T) int — GPUs of each type.
        pool_a, pool_b: Node pools of the two parts (``pool_b`` = -1 for one type); part A
            holds a mixed pipeline's first stages.
        nodes: Nodes the candidate occupies.
        kind: 0 homogeneous, 1 mixed data-parallel split, 2 mixed pipeline split.
        dp, tp, pp: Degrees (``dp`` counts replicas of both types, ``pp`` stages of both).
        dp_a, dp_b, pp_a, pp_b: Per-type replicas (mixed-dp) and stages (mixed-pp).
        layers_a, layers_b: Layers on the largest stage of each part.
        batch_a, batch_b: Samples per replica per iteration on each part.
        microbatches, zero, recompute: The rest of the strategy.
        step_time_s: Predicted time of one iteration.
        samples_per_s: Predicted throughput.
        tokens_per_s_per_gpu: Throughput in tokens per GPU (0 for non-token models).
        mem_gb_per_gpu: Predicted peak memory per GPU (largest over the parts).
        mem_gb_a, mem_gb_b: Predicted peak memory per GPU of each part.
        requested: True for the job's "requested GPUs, plain data parallelism" candidates that
            a simulation appends for the baselines (see ``Simulator.candidates_of``).
        sia_config: True for the rows a simulation adds (or marks) as Sia's configurations:
            plain data parallelism on one GPU type at Sia's sizes (powers of two within a node,
            whole nodes beyond; ``sia_sizes``), the search space of the ``sia`` baseline.
        measured: True where the throughput comes from a measured table.
        bootstrap: Factor applied to the analytic throughput, from a measured table's one-GPU
            entries (1 where none; measured rows keep 1). See ``plan``.
    """

    model: str
    gpu_types: tuple[str, ...]
    pool_names: tuple[str, ...]
    pool_types: tuple[str, ...]
    gpus: np.ndarray
    pool_a: np.ndarray
    pool_b: np.ndarray
    nodes: np.ndarray
    kind: np.ndarray
    dp: np.ndarray
    tp: np.ndarray
    pp: np.ndarray
    dp_a: np.ndarray
    dp_b: np.ndarray
    pp_a: np.ndarray
    pp_b: np.ndarray
    layers_a: np.ndarray
    layers_b: np.ndarray
    batch_a: np.ndarray
    batch_b: np.ndarray
    microbatches: np.ndarray
    zero: np.ndarray
    recompute: np.ndarray
    step_time_s: np.ndarray
    samples_per_s: np.ndarray
    tokens_per_s_per_gpu: np.ndarray
    mem_gb_per_gpu: np.ndarray
    mem_gb_a: np.ndarray
    mem_gb_b: np.ndarray
    measured: np.ndarray
    requested: np.ndarray = None   # type: ignore[assignment]
    bootstrap: np.ndarray = None   # type: ignore[assignment]
    sia_config: np.ndarray = None  # type: ignore[assignment]

    def __post_init__(self) -> None:
        if self.requested is None:
            self.requested = np.zeros(self.samples_per_s.shape, dtype=bool)
        if self.sia_config is None:
            self.sia_config = np.zeros(self.samples_per_s.shape, dtype=bool)
        if self.bootstrap is None:
            self.bootstrap = np.ones(self.samples_per_s.shape)

    def __len__(self) -> int:
        return int(self.samples_per_s.shape[0])

    def freeze(self) -> "CandidateTable":
        """Make every column read-only, in place, and return the table: a table that
        policies and environments are handed (``Simulator.candidates_of``, shared by every
        run and environment with the same cache) cannot be changed through them."""
        for value in self.__dict__.values():
            if isinstance(value, np.ndarray):
                value.flags.writeable = False
        return self

    @property
    def num_gpus(self) -> np.ndarray:
        return self.gpus.sum(axis=1)

    def take(self, idx) -> "CandidateTable":
        """A new table with the rows ``idx`` (index array or boolean mask)."""
        out = {}
        for name, value in self.__dict__.items():
            out[name] = value[idx] if isinstance(value, np.ndarray) else value
        return CandidateTable(**out)

    @staticmethod
    def concat(tables: list["CandidateTable"]) -> "CandidateTable":
        """Rows of several tables of the same model and cluster, in order."""
        first = tables[0]
        out = {}
        for name, value in first.__dict__.items():
            out[name] = (np.concatenate([getattr(t, name) for t in tables])
                         if isinstance(value, np.ndarray) else value)
        return CandidateTable(**out)

    def rows_with(self, gpus: dict[str, int]) -> np.ndarray:
        """Boolean mask of the rows using exactly ``gpus`` (type → count)."""
        want = np.array([gpus.get(t, 0) for t in self.gpu_types])
        return np.all(self.gpus == want, axis=1)

    def gpus_dict(self, i: int) -> dict[str, int]:
        return {t: int(n) for t, n in zip(self.gpu_types, self.gpus[i]) if n}

    def to_records(self) -> list[dict]:
        """One JSON-ready dict per candidate (the ``hsched candidates --json`` schema)."""
        recs = []
        for i in range(len(self)):
            layout = [{"pool": self.pool_names[p], "gpus": int(n)}
                      for p, n in ((self.pool_a[i], self.gpus[i].sum() - self._n_b(i)),
                                   (self.pool_b[i], self._n_b(i))) if p >= 0 and n > 0]
            recs.append({
                "gpus": self.gpus_dict(i),
                "nodes": int(self.nodes[i]),
                "layout": layout,
                "kind": KIND_NAMES[self.kind[i]],
                "dp": int(self.dp[i]), "tp": int(self.tp[i]), "pp": int(self.pp[i]),
                "dp_per_type": self._per_type(i, self.dp_a, self.dp_b, KIND_DP_SPLIT),
                "pp_per_type": self._per_type(i, self.pp_a, self.pp_b, KIND_PP_SPLIT),
                "microbatches": int(self.microbatches[i]),
                "zero": int(self.zero[i]),
                "recompute": bool(self.recompute[i]),
                "step_time_s": float(self.step_time_s[i]),
                "samples_per_s": float(self.samples_per_s[i]),
                "tokens_per_s_per_gpu": float(self.tokens_per_s_per_gpu[i]),
                "mem_gb_per_gpu": float(self.mem_gb_per_gpu[i]),
                "mem_gb_by_type": self._per_part(i, self.mem_gb_a, self.mem_gb_b),
                "source": ("measured" if self.measured[i] else
                           "bootstrapped" if self.bootstrap[i] != 1.0 else "analytic"),
                "bootstrap_scale": float(self.bootstrap[i]),
            })
        return recs

    def _n_b(self, i: int) -> int:
        if self.pool_b[i] < 0:
            return 0
        tb = self.gpu_types.index(self.pool_types[self.pool_b[i]])
        return int(self.gpus[i, tb])

    def _per_part(self, i, a, b) -> dict[str, float]:
        out = {self.pool_types[self.pool_a[i]]: float(a[i])}
        if self.pool_b[i] >= 0:
            out[self.pool_types[self.pool_b[i]]] = float(b[i])
        return out

    def _per_type(self, i, a, b, kind) -> dict[str, int] | None:
        if self.kind[i] != kind:
            return None
        return {self.pool_types[self.pool_a[i]]: int(a[i]),
                self.pool_types[self.pool_b[i]]: int(b[i])}


# ---------------------------------------------------------------------------- planning
#: Sia's largest configuration (its code caps allocations at 64 GPUs).
SIA_MAX_GPUS = 64


def sia_sizes(gpus_per_node: int, pool_gpus: int, max_gpus: int = SIA_MAX_GPUS) -> list[int]:
    """Sia's configuration sizes on one node pool: powers of two below a node's GPU count,
    then whole nodes (1, 2, ... nodes), up to the pool's GPUs and ``max_gpus``."""
    top = min(pool_gpus, max_gpus)
    sizes = []
    n = 1
    while n < gpus_per_node and n <= top:
        sizes.append(n)
        n *= 2
    sizes += list(range(gpus_per_node, top + 1, gpus_per_node))
    return sizes


@dataclass(frozen=True)
class PlannerConfig:
    """Knobs of the planner.

    Attributes:
        max_candidates: Keep at most this many candidates per job (after dominance pruning),
            preferring throughput per GPU; the fastest candidate is always kept. ``None``: all.
        mixed: Enumerate mixed-type resource sets.
        prune_dominated: Drop sets dominated by another set (no more GPUs of any type, at least
            the same throughput).
        max_gpus: Ignore resource sets larger than this (``None``: up to the whole cluster).
        data_parallel_only: Only plain data parallelism (tp = pp = 1, ZeRO and recompute still
            allowed) on one GPU type: the job as a heterogeneity-agnostic scheduler would run
            it (Gavel's baselines, the reference throughput of trace jobs).
        prune_microbatches: Skip micro-batch counts that cannot be optimal (below
            ``max(m*/2, pp)``, see ``costmodel.best_microbatch_count``); off prices them all.
        calibration: Cost-model factors.
    """

    max_candidates: int | None = None
    mixed: bool = True
    prune_dominated: bool = True
    max_gpus: int | None = None
    data_parallel_only: bool = False
    prune_microbatches: bool = True
    calibration: Calibration = DEFAULT_CALIBRATION

    def __post_init__(self) -> None:
        for name in ("mixed", "prune_dominated", "data_parallel_only", "prune_microbatches"):
            check_switch(getattr(self, name), name)
        if not isinstance(self.calibration, Calibration):
            raise ConfigError(f"calibration is a hsched_env.costmodel.Calibration, got "
                              f"{show(self.calibration)}", field="calibration")
        for name in ("max_candidates", "max_gpus"):
            value = getattr(self, name)
            if value is None:
                continue
            if not (is_whole_number(value) and value >= 1):
                raise ConfigError(f"{name} must be a positive integer or None, got {value!r}",
                                  field=name)
            object.__setattr__(self, name, int(value))     # a NumPy integer as a Python one


def plan(model: ModelSpec | str, cluster: Cluster, *, config: PlannerConfig = PlannerConfig(),
         throughputs: ThroughputSource | str | None = None) -> CandidateTable:
    """Candidates of one job on ``cluster``, fastest first.

    Args:
        model: A ``ModelSpec`` or a catalog name.
        cluster: The cluster.
        config: Planner knobs.
        throughputs: ``"analytic"`` (default), ``"gavel"`` or a ``ThroughputSource``.

    Returns:
        The job's ``CandidateTable`` (empty if the job fits nowhere on this cluster).
    """
    model, cluster = _plan_inputs(model, cluster, config)
    rs, sk = _cluster_sets(cluster.pools)
    priced = _price(model, cluster, rs, sk, config, get_throughput_source(throughputs))
    best = priced.best_per_set()
    if config.prune_dominated and best.size > 1:
        best = best[undominated_rows(_pool_matrix(cluster, rs, priced.set_id[best]),
                                     priced.thr[best])]
    if config.max_candidates is not None and best.size > config.max_candidates:
        best = _keep_efficient(best, priced.thr, (rs.n_a + rs.n_b)[priced.set_id],
                               config.max_candidates)
    best = best[np.argsort(-priced.thr[best], kind="stable")]
    return priced.table(model, cluster, rs, sk, best)


def plan_set(model: ModelSpec | str, cluster: Cluster, gpus: dict[str, int], *,
             best_only: bool = True, config: PlannerConfig = PlannerConfig(),
             throughputs: ThroughputSource | str | None = None) -> CandidateTable:
    """Strategies for one explicit resource set, fastest first.

    Args:
        model: A ``ModelSpec`` or a catalog name.
        cluster: The cluster whose pools (of each named type, the first pool with that many
            GPUs) supply the GPUs.
        gpus: GPU type → count, one or two types; counts need not be Sia configurations.
        best_only: Return only the fastest feasible strategy (0 or 1 row); otherwise every
            feasible strategy priced (for each shape and micro-batch count, the cheapest ZeRO
            stage and recompute setting that fit).
        config: Planner knobs (the set-level pruning knobs are ignored).
        throughputs: As in ``plan``.

    Raises:
        ConfigError: More than two types, a type the cluster lacks, or more GPUs than it has;
            a ``best_only`` that is not ``True`` or ``False`` (``"no"`` read as on).
    """
    check_switch(best_only, "best_only")
    model, cluster = _plan_inputs(model, cluster, config)
    rs, sk = _sets_and_skeleton(cluster.pools, [_set_tuple(cluster, gpus)])
    priced = _price(model, cluster, rs, sk, config, get_throughput_source(throughputs))
    rows = priced.best_per_set() if best_only else np.flatnonzero(priced.feasible)
    rows = rows[np.argsort(-priced.thr[rows], kind="stable")]
    return priced.table(model, cluster, rs, sk, rows)


def plan_sets(model: ModelSpec | str, cluster: Cluster, sets: list[dict[str, int]], *,
              config: PlannerConfig = PlannerConfig(),
              throughputs: ThroughputSource | str | None = None) -> list[CandidateTable]:
    """``plan_set(model, cluster, gpus)`` (its fastest strategy, 0 or 1 row) for each of
    ``sets``, priced in one pass: the same tables, bit for bit, as one call per set
    (``tests/test_planner.py``), at a fraction of the time when there are many sets (a
    simulation's requested and Sia configurations of a job).

    Raises:
        ConfigError: As ``plan_set``, for the first bad set.
    """
    model, cluster = _plan_inputs(model, cluster, config)
    if not isinstance(sets, (list, tuple)):
        raise ConfigError(f"sets is a list of {{GPU type: count}} dicts, got {show(sets)}",
                          field="sets")
    if not sets:
        return []
    rs, sk = _sets_and_skeleton(cluster.pools, [_set_tuple(cluster, g) for g in sets])
    priced = _price(model, cluster, rs, sk, config, get_throughput_source(throughputs))
    best = priced.best_per_set()
    every = priced.table(model, cluster, rs, sk, best)        # one row per feasible set
    of_set = priced.set_id[best]
    return [every.take(np.flatnonzero(of_set == i)) for i in range(len(sets))]


def _plan_inputs(model, cluster, config) -> tuple[ModelSpec, Cluster]:
    """The planner's model and cluster (a catalog name, a preset name or file accepted), and
    a ``ConfigError`` naming the argument that is of another kind."""
    if isinstance(model, str):
        model = get_model(model)
    elif not isinstance(model, ModelSpec):
        raise ConfigError(f"model is a catalog name or a ModelSpec, got {show(model)}",
                          field="model")
    else:
        check_model(model)                          # one built or changed by hand too
    cluster = get_cluster(cluster)                  # a preset name or a file too
    if not isinstance(config, PlannerConfig):
        raise ConfigError(f"config is a PlannerConfig, got {show(config)}", field="config")
    return model, cluster


def _set_tuple(cluster: Cluster, gpus: dict[str, int]) -> tuple[int, int, int, int, int]:
    """``(pool A, pool B or -1, GPUs on A, GPUs on B, nodes)`` of an explicit resource set
    (of each named type, the first pool with that many GPUs), checked (``plan_set``'s
    errors)."""
    if not isinstance(gpus, dict):
        raise ConfigError(f"a resource set is a mapping {{GPU type: count}}, got {show(gpus)}",
                          field="gpus")
    if not 1 <= len(gpus) <= 2:
        raise ConfigError(f"a resource set has one or two GPU types, got {len(gpus)}",
                          field="gpus")
    pools = cluster.pools
    parts = []
    if len({get_gpu(name).name for name in gpus}) != len(gpus):
        raise ConfigError(f"a GPU type is named twice in {gpus}", field="gpus")
    for name, n in gpus.items():
        if not is_whole_number(n):
            raise ConfigError(f"a GPU count is a whole number, got {show(n)}",
                              field=f"gpus.{name}")
        t = get_gpu(name).name
        of_type = [i for i, p in enumerate(pools) if p.gpu_type == t]
        pool = next((i for i in of_type if n <= pools[i].num_gpus), None)
        if pool is None or not 0 < n:
            more = ""
            if of_type and n > 0 and sum(pools[i].num_gpus for i in of_type) >= n:
                largest = max(of_type, key=lambda i: pools[i].num_gpus)
                more = (f": resource sets take one node pool per GPU type, and its largest "
                        f"{t} pool, {pools[largest].name!r}, has {pools[largest].num_gpus}")
            raise ConfigError(f"{n} GPUs of type {t} not available in cluster "
                              f"{cluster.name}{more}", field=f"gpus.{name}")
        parts.append((pool, int(n)))
    if len(parts) == 2 and _mixed_order(pools, parts[0][0], parts[1][0])[0] != parts[0][0]:
        parts.reverse()                  # the order _cluster_sets uses, whatever the dict's
    (pa, na), (pb, nb) = parts[0], (parts[1] if len(parts) == 2 else (-1, 0))
    nodes = -(-na // pools[pa].gpus_per_node) + (-(-nb // pools[pb].gpus_per_node) if nb else 0)
    return pa, pb, na, nb, nodes


def _keep_efficient(best: np.ndarray, thr: np.ndarray, n_gpus: np.ndarray, k: int) -> np.ndarray:
    """The ``k`` candidates with the highest throughput per GPU, always with the fastest."""
    score = thr[best] / n_gpus[best]
    pick = list(np.argsort(-score, kind="stable")[:k])
    fastest = int(np.argmax(thr[best]))
    if fastest not in pick:
        pick[-1] = fastest
    return best[np.sort(np.array(pick))]


@dataclass
class _Priced:
    """Every priced strategy row of one job (internal)."""

    rows: np.ndarray        # skeleton index
    set_id: np.ndarray
    m: np.ndarray
    rc: np.ndarray
    step: np.ndarray
    thr: np.ndarray
    measured: np.ndarray
    scale: np.ndarray       # bootstrap factor of the analytic throughput (1: none)
    feasible: np.ndarray
    cost: dict
    one_type: np.ndarray
    memory: object          # rows -> (mem_a, mem_b, usable_a, usable_b) at ZeRO 0..3

    def refine(self, rows: np.ndarray):
        """ZeRO stage and memory per GPU (part A, part B) of the kept ``rows``: the smallest
        stage that fits (the fastest: ``_price`` timed the row at it); measured rows ran as
        plain data parallelism, so ZeRO 0 with the estimate capped at the usable memory."""
        mem_a, mem_b, cap_a, cap_b = self.memory(rows)
        fits = (mem_a <= cap_a[:, None]) & (mem_b <= cap_b[:, None])
        fits[:, 3] |= ~fits[:, :3].any(axis=1)
        zero = np.where(self.measured[rows], 0, np.argmax(fits, axis=1))
        at = np.arange(rows.size), zero
        a = np.where(self.measured[rows], np.minimum(mem_a[:, 0], cap_a), mem_a[at])
        b = np.where(self.one_type[rows], a,
                     np.where(self.measured[rows], np.minimum(mem_b[:, 0], cap_b), mem_b[at]))
        return zero, a, b

    def best_per_set(self) -> np.ndarray:
        """Index of the fastest feasible row of each resource set (first one on ties)."""
        keep = np.flatnonzero(self.feasible)
        if keep.size == 0:
            return keep
        order = keep[np.argsort(self.set_id[keep], kind="stable")]
        sets = self.set_id[order]
        starts = np.flatnonzero(np.r_[True, sets[1:] != sets[:-1]])
        thr = self.thr[order]
        best = np.maximum.reduceat(thr, starts)
        at_best = np.flatnonzero(thr == np.repeat(best, np.diff(np.r_[starts, thr.size])))
        group = np.searchsorted(starts, at_best, side="right") - 1
        first = np.r_[True, group[1:] != group[:-1]]
        return order[at_best[first]]

    def table(self, model: ModelSpec, cluster: Cluster, rs: ResourceSets, sk: Skeleton,
              best: np.ndarray) -> CandidateTable:
        rows, set_id = self.rows[best], self.set_id[best]
        zero, mem_a, mem_b = self.refine(best)
        kind = sk.kind[rows]
        g = _gpu_matrix(cluster, rs, set_id)
        thr = self.thr[best]
        return CandidateTable(
            model=model.name, gpu_types=tuple(cluster.gpu_types),
            pool_names=tuple(p.name for p in cluster.pools),
            pool_types=tuple(p.gpu_type for p in cluster.pools), gpus=g,
            pool_a=sk.part_a[rows], pool_b=np.where(rs.pool_b[set_id] < 0, -1, sk.part_b[rows]),
            nodes=rs.nodes[set_id],
            kind=kind, dp=sk.dp_total[rows],
            tp=sk.tp[rows], pp=sk.pp_total[rows], dp_a=sk.dpa[rows],
            dp_b=sk.dpb[rows], pp_a=sk.ppa[rows], pp_b=sk.ppb[rows],
            layers_a=self.cost["layers_a"][best].astype(np.int64),
            layers_b=self.cost["layers_b"][best].astype(np.int64),
            batch_a=self.cost["batch_a"][best], batch_b=self.cost["batch_b"][best],
            microbatches=self.m[best], zero=zero, recompute=self.rc[best],
            step_time_s=self.step[best], samples_per_s=thr,
            tokens_per_s_per_gpu=thr * model.tokens_per_sample / np.maximum(g.sum(axis=1), 1),
            mem_gb_per_gpu=np.maximum(mem_a, mem_b) / GB, mem_gb_a=mem_a / GB,
            mem_gb_b=mem_b / GB, measured=self.measured[best], bootstrap=self.scale[best])


def _admitted_shapes(model: ModelSpec, shape, hw, sk: Skeleton,
                     config: PlannerConfig) -> np.ndarray:
    """The strategy shapes (rows of ``sk``, ascending) the model admits under ``config``:
    tensor groups dividing its attention and KV heads (tp = 1 where it allows no tp), at most
    one pipeline stage per layer (one where it allows no pp), a replica for each sample at
    most (unless its batch is per replica), one GPU type and tp = pp = 1 data parallel only,
    one type without ``mixed``, at most ``max_gpus`` GPUs, and room for the model's states
    sharded over every GPU of the set (ZeRO-3's bound, the least memory any strategy needs).

    The pipeline and replica tests go over every shape as masks (a cluster of many nodes has
    millions of shapes, most with more stages than layers or more replicas than samples); the
    others over the shapes still in (until session 53 each test went over every shape)."""
    pp_tot, dp_tot = sk.pp_total, sk.dp_total
    B = model.global_batch
    if config.data_parallel_only:
        idx = sk.plain                          # one GPU type, tp = pp = 1
        if not model.batch_per_replica:
            idx = idx[dp_tot[idx] <= B]         # every replica gets at least one sample
    else:
        # pp ≥ 1, so "pp = 1 or pp ≤ layers" is pp ≤ max(layers, 1)
        ok = pp_tot <= (max(model.layers, 1) if model.allows("pp") else 1)
        if not model.batch_per_replica:
            ok &= dp_tot <= B
        if not config.mixed:
            ok &= sk.kind == KIND_HOMO
        idx = np.flatnonzero(ok)
    tps = sk.tp[idx]
    if model.allows("tp"):
        idx = idx[(model.heads % tps == 0) & (model.kv_heads % tps == 0)]
    else:
        idx = idx[tps == 1]
    if config.max_gpus is not None:
        idx = idx[sk.gpus[idx] <= config.max_gpus]
    cap = np.maximum(hw.mem_bytes[sk.part_a[idx]], hw.mem_bytes[sk.part_b[idx]])
    return idx[model_state_bytes(shape) / sk.gpus[idx] + shape.fixed_mem_bytes <= cap]


def _price(model: ModelSpec, cluster: Cluster, rs: ResourceSets, sk: Skeleton,
           config: PlannerConfig, source: ThroughputSource) -> _Priced:
    """Price every strategy of every resource set the model admits."""
    calib = config.calibration
    shape = model_shape(model, calib)
    pools = cluster.pools
    hw = pool_arrays([get_gpu(p.gpu_type) for p in pools], [p.intra_bw_gbps for p in pools],
                     [p.inter_bw_gbps for p in pools], [p.gpus_per_node for p in pools],
                     model, calib)
    per_replica = model.batch_per_replica
    B = model.global_batch
    pp_tot, dp_tot = sk.pp_total, sk.dp_total

    idx = _admitted_shapes(model, shape, hw, sk, config)

    # ---- micro-batch counts: powers of two up to the replica batch, priced in phases.
    # A replica's time is convex in m with its optimum at m* (for pp = 1 it only grows with m)
    # and memory only falls as m grows. So: (1) price m in [max(m*/w, pp), w·m*] (w = 2; 3 for
    # mixed layouts). A row there is *free* when it fits at a ZeRO stage that costs no more
    # than stage 1 (ZeRO-2/3's per-micro-batch traffic hides behind compute, or stage ≤ 1
    # fits). (2) Shapes with no free row there, or whose mixed pipeline had to move layers
    # for memory (less memory per micro-batch can restore the faster split), also get every
    # larger m (less memory: a cheaper stage may fit); those whose rows fit but all pay
    # sharded traffic also get every smaller m (less traffic). (3) Shapes with no free row
    # without recompute, or only a mixed pipeline that moved layers, are priced again with it.
    # (m reaches the replica batch: until session 50 also at most 512, so a replica of
    # Llama-2 7B's 1,024 sequences on 4 GPUs lost its fastest fitting strategy, m = 1,024 at
    # tp = 4, and some sets any)
    rep_batch = np.full(idx.shape, B) if per_replica else -(-B // dp_tot[idx])
    u_a = layer_time_per_sample(shape, calib, hw, sk.part_a[idx], sk.tp[idx], False)
    u_b = layer_time_per_sample(shape, calib, hw, sk.part_b[idx], sk.tp[idx], False)
    samples = np.where(per_replica, B * dp_tot[idx], B)
    m_star = best_microbatch_count(
        shape, calib, kind=sk.kind[idx], u_a=u_a, u_b=u_b, pp=pp_tot[idx], ppa=sk.ppa[idx],
        ppb=sk.ppb[idx], dpa=sk.dpa[idx], dpb=sk.dpb[idx], rep_batch=rep_batch, samples=samples)
    pipe = pp_tot[idx] > 1
    # m* is exact for one GPU type; mixed layouts round batches and layers, so a wider window.
    width = np.where(sk.kind[idx] == KIND_HOMO, 2.0, 3.0)
    m_low = np.minimum(np.where(pipe, np.maximum(m_star / width, pp_tot[idx]), 1), rep_batch)
    m_high = np.where(pipe, np.maximum(width * m_star, m_low), 1)
    if not config.prune_microbatches:
        m_low, m_high = np.ones_like(m_low), rep_batch.astype(float)
    m_low = 2.0 ** np.floor(np.log2(np.maximum(m_low, 1)))
    mb_opts = np.array(_pow2_upto(int(rep_batch.max()) if rep_batch.size else 1))

    def cross(sel, lo, hi):
        use = ((mb_opts[None, :] >= lo[:, None]) & (mb_opts[None, :] <= hi[:, None])
               & (mb_opts[None, :] <= rep_batch[sel][:, None]))
        r, c = np.nonzero(use)
        return sel[r], mb_opts[c]

    def price(pos, m, rc, zero_stages=(1, 2, 3)):
        rows = idx[pos]
        pa, pb = sk.part_a[rows], sk.part_b[rows]
        cost = strategy_cost(shape, calib, hw, kind=sk.kind[rows], pa=pa, pb=pb,
                             dpa=sk.dpa[rows], dpb=sk.dpb[rows], tp=sk.tp[rows],
                             ppa=sk.ppa[rows], ppb=sk.ppb[rows], m=m, rc=rc, batch=B,
                             per_replica_batch=per_replica, zero_stages=zero_stages)
        fits = ((cost["mem_a"] <= hw.mem_bytes[pa][:, None])
                & (cost["mem_b"] <= hw.mem_bytes[pb][:, None]))
        return dict(pos=pos, m=m, rc=rc, pa=pa, pb=pb, fits=fits, **cost)

    def fitting(phases, usable):
        ok = np.zeros(idx.size, dtype=bool)
        for ph in phases:
            ok[ph["pos"][usable(ph)]] = True
        return ok

    def search(pos, rc: bool) -> list[dict]:
        """The window around m*, then larger m where memory demands it and smaller m where
        sharded ZeRO traffic does."""
        pos_m = cross(pos, m_low[pos], m_high[pos])
        phases = [price(*pos_m, np.full(pos_m[0].size, rc))] if pos_m[0].size else []
        ok = fitting(phases, lambda ph: _free(ph) & ~ph["split_capped"])
        more = pos[~ok[pos] & (m_high[pos] < rep_batch[pos])]
        paying = fitting(phases, lambda ph: _any_column(ph["fits"]))
        less = pos[paying[pos] & ~fitting(phases, _free)[pos] & (m_low[pos] > 1)]
        if more.size:
            pos_m = cross(more, np.maximum(np.nextafter(m_high[more], np.inf), m_low[more]),
                          rep_batch[more].astype(float))
            if pos_m[0].size:
                phases.append(price(*pos_m, np.full(pos_m[0].size, rc)))
        if less.size:
            pos_m = cross(less, np.ones(less.size), np.nextafter(m_low[less], 0.0))
            if pos_m[0].size:
                phases.append(price(*pos_m, np.full(pos_m[0].size, rc)))
        return phases

    phases = search(np.arange(idx.size), False)
    if model.is_transformer_shaped:
        # Full recompute costs a third more compute: only for shapes that fit nowhere without,
        # or only at a ZeRO stage whose per-micro-batch traffic does not hide, or only as a
        # mixed pipeline that moved layers for memory (recompute's smaller activations may let
        # a cheaper stage, or the faster split, fit)
        need = (np.flatnonzero(~fitting(phases, lambda ph: _free(ph) & ~ph["split_capped"]))
                if config.prune_microbatches else np.arange(idx.size))
        if need.size:
            phases += search(need, True)
    if not phases:
        phases = [price(np.zeros(0, np.int64), np.zeros(0, np.int64), np.zeros(0, bool))]
    # Memory is recomputed for the rows kept (see memory below), so not carried along.
    cost_keys = ("step_time_s", "zero2_extra_s", "zero3_extra_s", "samples_per_iter",
                 "layers_a", "layers_b", "batch_a", "batch_b")
    cat = {k: np.concatenate([ph[k] for ph in phases])
           for k in ("pos", "m", "rc", "pa", "pb", "fits") + cost_keys}
    rows, m, rc, pa, pb = idx[cat["pos"]], cat["m"], cat["rc"], cat["pa"], cat["pb"]
    cost = {k: cat[k] for k in cost_keys}
    set_id = sk.set_id[rows]

    # ---- ZeRO: a higher stage needs less memory and no less time (stages 0 and 1 cost the
    # same; 2 and 3 repeat their traffic on every micro-batch, costmodel.zero_extra_times), so
    # the smallest that fits is the fastest (settled for the rows kept, see _Priced.refine)
    fits = cat["fits"]                  # columns: ZeRO-1, ZeRO-2, ZeRO-3
    feasible = _any_column(fits)
    step = cost["step_time_s"] + np.where(fits[:, 0], 0.0, np.where(
        fits[:, 1], cost["zero2_extra_s"], cost["zero3_extra_s"]))
    thr = cost["samples_per_iter"] / step
    measured = np.zeros(thr.shape, dtype=bool)

    # ---- a measured table replaces plain data parallelism on one type where it has an entry
    plain = np.flatnonzero((sk.kind[rows] == KIND_HOMO) & (sk.tp[rows] == 1)
                           & (sk.ppa[rows] == 1) & (m == 1) & ~rc)
    for i in plain if type(source) is not ThroughputSource else ():
        p = pools[pa[i]]
        n = int(rs.n_a[set_id[i]])
        value = source.measured_samples_per_s(model, p.gpu_type, n, n <= p.gpus_per_node)
        if value is None:
            continue
        measured[i], feasible[i] = True, value > 0
        if value > 0:
            thr[i] = value
            step[i] = cost["samples_per_iter"][i] / value
    if measured.any():
        # A measured set is represented by its measurement only.
        feasible &= measured | ~np.isin(set_id, np.unique(set_id[measured]))

    # ---- ... and bootstraps the analytic rows (Sia): on a GPU type the table measured on one
    # GPU, the analytic throughput is scaled by measured / analytic one-GPU throughput.
    scale = np.ones(thr.shape)
    if type(source) is not ThroughputSource:
        ratio = _bootstrap_ratios(model, pools, source, shape, calib, hw, B, per_replica)
        if np.any(ratio != 1.0):
            kind, r_a, r_b = sk.kind[rows], ratio[pa], ratio[pb]
            # Mixed-dp: each side's speed scales by its ratio and the batch split follows it,
            # so the throughput scales by the ratios weighted by the samples of each side.
            w_a, w_b = sk.dpa[rows] * cost["batch_a"], sk.dpb[rows] * cost["batch_b"]
            scale = np.where(kind == KIND_DP_SPLIT, (w_a * r_a + w_b * r_b) / (w_a + w_b), r_a)
            # Mixed-pp: every stage of a balanced pipeline takes about the same time, so the
            # time scales by the stage-weighted mean of 1 / ratio.
            ppa, ppb = sk.ppa[rows], sk.ppb[rows]
            scale = np.where(kind == KIND_PP_SPLIT, (ppa + ppb) / (ppa / r_a + ppb / r_b),
                             scale)
            scale[measured] = 1.0
            upd = np.flatnonzero(scale != 1.0)
            step[upd] = step[upd] / scale[upd]
            thr[upd] = cost["samples_per_iter"][upd] / step[upd]

    def memory(sel):
        """Memory of rows ``sel`` at every ZeRO stage: (mem_a, mem_b, usable_a, usable_b)."""
        ph = price(cat["pos"][sel], m[sel], rc[sel], zero_stages=(0, 1, 2, 3))
        return ph["mem_a"], ph["mem_b"], hw.mem_bytes[pa[sel]], hw.mem_bytes[pb[sel]]

    one_type = rs.pool_b[set_id] < 0
    return _Priced(rows, set_id, m, rc, step, thr, measured, scale, feasible, cost, one_type,
                   memory)


def _bootstrap_ratios(model: ModelSpec, pools, source: ThroughputSource, shape, calib, hw,
                      batch: int, per_replica: bool) -> np.ndarray:
    """Per node pool: the measured throughput of plain data parallelism on one GPU of its type
    over the analytic model's (same model and batch); 1 where ``source`` has no positive
    one-GPU entry for the type."""
    n = len(pools)
    pool, zeros, ones = np.arange(n), np.zeros(n, dtype=np.int64), np.ones(n, dtype=np.int64)
    cost = strategy_cost(shape, calib, hw, kind=np.full(n, KIND_HOMO), pa=pool, pb=pool,
                         dpa=ones, dpb=zeros, tp=ones, ppa=ones, ppb=zeros, m=ones,
                         rc=np.zeros(n, dtype=bool), batch=batch,
                         per_replica_batch=per_replica, zero_stages=(2, 3))
    analytic = cost["samples_per_iter"] / cost["step_time_s"]
    ratio = np.ones(n)
    for i, p in enumerate(pools):
        value = source.measured_samples_per_s(model, p.gpu_type, 1, True)
        if value:
            ratio[i] = value / analytic[i]
    return ratio


def _free(phase: dict) -> np.ndarray:
    """Rows of a priced phase that fit at a ZeRO stage costing no more than stage 1: stage 1
    fits, or a sharded stage that fits adds nothing (its per-micro-batch traffic hides)."""
    fits = phase["fits"]                # columns: ZeRO-1, ZeRO-2, ZeRO-3
    return fits[:, 0] | (fits[:, 1] & (phase["zero2_extra_s"] <= 0.0)) | (
        ~fits[:, 1] & fits[:, 2] & (phase["zero3_extra_s"] <= 0.0))


def _any_column(mask: np.ndarray) -> np.ndarray:
    """Rows of a (rows, few columns) boolean array with any column set (faster than
    ``any(axis=1)`` for a handful of columns)."""
    out = mask[:, 0].copy()
    for k in range(1, mask.shape[1]):
        out |= mask[:, k]
    return out


def _gpu_matrix(cluster: Cluster, rs: ResourceSets, set_ids: np.ndarray) -> np.ndarray:
    types = list(cluster.gpu_types)
    pool_type = np.array([types.index(p.gpu_type) for p in cluster.pools])
    g = np.zeros((set_ids.size, len(types)), dtype=np.int64)
    rows = np.arange(set_ids.size)
    g[rows, pool_type[rs.pool_a[set_ids]]] += rs.n_a[set_ids]
    has_b = rs.pool_b[set_ids] >= 0
    g[rows[has_b], pool_type[rs.pool_b[set_ids[has_b]]]] += rs.n_b[set_ids[has_b]]
    return g


def _pool_matrix(cluster: Cluster, rs: ResourceSets, set_ids: np.ndarray) -> np.ndarray:
    """(len(set_ids), pools) GPUs of each set on each node pool: what the planner's dominance
    pruning compares. A set is placed on its own pools, so a set on one pool never stands in
    for a set on another pool of the same GPU type (by GPUs per type, the first pool's sets
    would prune every equal set of the second, which then got no candidate at all); with one
    pool per type (every preset) the columns are the types' and the pruning is the same."""
    g = np.zeros((set_ids.size, len(cluster.pools)), dtype=np.int64)
    rows = np.arange(set_ids.size)
    g[rows, rs.pool_a[set_ids]] += rs.n_a[set_ids]
    has_b = rs.pool_b[set_ids] >= 0
    g[rows[has_b], rs.pool_b[set_ids[has_b]]] += rs.n_b[set_ids[has_b]]
    return g


def table_pool_gpus(table: CandidateTable, rows: np.ndarray) -> np.ndarray:
    """(len(rows), pools) GPUs of each of ``table``'s ``rows`` on each node pool, what
    dominance compares (``_pool_matrix``; ``LPPolicy(dominance=True)``): a set takes one pool
    per GPU type, so a row's GPUs of a type are on that part's pool."""
    rows = np.asarray(rows, dtype=np.int64)
    type_of_pool = np.array([table.gpu_types.index(t) for t in table.pool_types],
                            dtype=np.int64)
    g = np.zeros((rows.size, len(table.pool_types)), dtype=np.int64)
    at = np.arange(rows.size)
    pa, pb = table.pool_a[rows], table.pool_b[rows]
    g[at, pa] = table.gpus[rows, type_of_pool[pa]]
    two = pb >= 0
    g[at[two], pb[two]] = table.gpus[rows[two], type_of_pool[pb[two]]]
    return g


#: Rows ``undominated_rows`` tests together (a block of columns of its comparison matrix).
_DOMINANCE_BLOCK = 256
#: From this many rows up, ``undominated_rows`` compares support group by support group;
#: below, every pair at once (one pass, no grouping), which costs less there (BENCHMARKS.md,
#: "Session 53: clusters of many nodes").
_GROUPED_FROM = 1024


def undominated_rows(g: np.ndarray, thr: np.ndarray) -> np.ndarray:
    """Mask of the rows no other row dominates.

    Row j dominates row i when it uses no more GPUs of any type and is at least as fast; of
    identical rows the first is kept. In the order fastest first (fewer GPUs first among equal
    throughputs) a row is dominated exactly when an earlier row uses no more of every type.
    The planner prunes its dominated resource sets with it (``PlannerConfig.prune_dominated``);
    ``lp_baseline.policy.LPPolicy(dominance=True)`` prunes a job's candidates the same way.

    Only a row whose resources are a subset of row i's (its *support*, the columns it uses
    any of) can dominate row i, so the rows are compared support group by support group. A
    planner's set uses one pool or two, so most groups use one column, where "an earlier row
    uses no more" is a running minimum (linear); the groups using several columns are
    compared pairwise, in blocks. Until session 53 every pair of rows was compared, which
    took minutes on a cluster of 100,000 nodes (a set per node count of each pool).

    Args:
        g: (n, T) GPUs of each resource per row (the planner and ``LPPolicy`` pass GPUs per
            node pool, ``table_pool_gpus``; GPUs per type compare the same way).
        thr: (n,) throughput per row.

    Returns:
        (n,) bool, True for the rows to keep.
    """
    g = np.asarray(g)
    n = thr.size
    order = np.lexsort((np.arange(n), g.sum(axis=1), -thr))
    gs = g[order]
    if (gs.dtype.kind in "biu" and gs.dtype.itemsize > 2
            and (gs.size == 0 or (gs.min() >= -2**15 and gs.max() < 2**15))):
        gs = gs.astype(np.int16)         # the same comparisons, less memory traffic
    every = np.arange(n)
    if n == 0 or n < _GROUPED_FROM or gs.shape[1] == 0 or not (gs >= 0).all():
        # few rows, or no support to group by (no columns, a negative value or NaN): every
        # pair at once
        dominated = _dominated_by(gs, every, gs, every)
    else:
        dominated = np.zeros(n, dtype=bool)
        used = gs > 0
        # each row's support (the columns it uses, as bits), grouped; positions ascending
        keys, group = np.unique(np.packbits(used, axis=1, bitorder="little"), axis=0,
                                return_inverse=True)
        group = group.reshape(-1)
        members = np.split(np.argsort(group, kind="stable"),
                           np.cumsum(np.bincount(group))[:-1])
        values = [gs[rows] for rows in members]
        columns = [np.flatnonzero(used[rows[0]]) for rows in members]
        own = [v[:, c] for v, c in zip(values, columns)]       # each group on its columns
        outside = ~keys
        for a in range(0, len(members), _DOMINANCE_BLOCK):
            # within[i - a, j]: group j's support is within group i's (a block of i at a
            # time: with many pools there are many groups)
            within = ~(keys[None, :, :] & outside[a:a + _DOMINANCE_BLOCK, None, :]).any(axis=2)
            for i in range(a, min(a + _DOMINANCE_BLOCK, len(members))):
                rows_i = members[i]
                dom = np.zeros(rows_i.size, dtype=bool)
                for j in np.flatnonzero(within[i - a]).tolist():
                    dom |= _dominated_by(own[j], members[j], values[i][:, columns[j]], rows_i)
                dominated[rows_i] = dom
    keep = np.empty(n, dtype=bool)
    keep[order] = ~dominated
    return keep


def _dominated_by(g_j: np.ndarray, rows_j: np.ndarray, g_i: np.ndarray,
                  rows_i: np.ndarray) -> np.ndarray:
    """For each of the rows ``rows_i`` (positions in ``undominated_rows``' order, ascending;
    their values ``g_i``): is one of the rows ``rows_j`` (ascending too; values ``g_j``, the
    same columns) earlier and no larger in every column?"""
    dom = np.zeros(rows_i.size, dtype=bool)
    if rows_j.size == 0 or rows_i.size == 0:
        return dom
    earlier = np.searchsorted(rows_j, rows_i)       # how many rows of j come before each i
    if g_j.shape[1] == 0:                            # row j uses nothing: it dominates
        return earlier > 0
    if g_j.shape[1] == 1:
        # one column: an earlier row no larger exists iff the running minimum is no larger
        low = np.minimum.accumulate(g_j[:, 0])
        has = earlier > 0
        dom[has] = low[earlier[has] - 1] <= g_i[has, 0]
        return dom
    for a in range(0, rows_i.size, _DOMINANCE_BLOCK):
        b = min(a + _DOMINANCE_BLOCK, rows_i.size)
        upto = int(earlier[b - 1])                   # rows of j before the block's last row
        if upto == 0:
            continue
        le = rows_j[:upto, None] < rows_i[None, a:b]            # le[j, i]: j earlier and
        for t in range(g_j.shape[1]):
            le &= g_j[:upto, None, t] <= g_i[None, a:b, t]      # no larger in column t
        dom[a:b] = le.any(axis=0)
    return dom
