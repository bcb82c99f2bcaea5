"""The observation layout of the HeteroSched environments: feature names, bounds and column
indices by name. The environments (``base.py``) write observations with it and the learned
ranker (``agents.ranker``) reads them with it, so a feature is added or moved here once.

An observation is a dict of four flat float32 vectors (SB3 takes 1-D vectors):

* ``candidates`` — (K, F) row-major: one row per slot, ``F = len(candidate_columns(types))``
  columns: the ``JOB_FEATURES`` of the slot's job, then one ``gpus:<type>`` column per GPU type
  (GPUs of that type ÷ the type's capacity), then the ``CANDIDATE_FEATURES`` of the slot's
  candidate; in ``[0, LOG_CAP]``.
* ``valid`` — (K,): 1 for a slot that holds a candidate.
* ``cluster`` — (T, ``len(CLUSTER_FEATURES)``) row-major, one row per GPU type, in [0, 1].
* ``global`` — (``len(GLOBAL_FEATURES)``,), in ``[0, LOG_CAP]``.
"""

from __future__ import annotations

import numpy as np
from gymnasium import spaces

#: Clip bound of the log-scaled features: log1p(hours) ≤ 10 covers 2.5 years.
LOG_CAP = 10.0
#: Per-slot features of the slot's job (columns 0..len-1 of a slot row).
JOB_FEATURES = (
    "remaining_frac",       # remaining work ÷ total work, [0, 1]
    "remaining_ref_h",      # log1p(remaining hours on its requested GPUs)
    "age_h",                # log1p(hours since arrival)
    "wait_h",               # log1p(hours since arrival not running)
    "requested_gpus",       # log2(1 + requested GPUs) ÷ log2(1 + cluster GPUs), [0, 1]
    "job_running",          # 1 if the job ran last round
)
#: Per-slot features of the slot's candidate (after the ``gpus:<type>`` columns).
CANDIDATE_FEATURES = (
    "is_current",           # 1 if this is the candidate the job ran last round
    "restart",              # 1 if running it costs a restart (started job, other candidate)
    "gpus_total",           # GPUs ÷ cluster GPUs, [0, 1]
    "throughput_norm",      # samples/s ÷ the job's fastest candidate, [0, 1]
    "throughput_per_gpu",   # (samples/s per GPU) ÷ the job's best per-GPU figure, [0, 1]
    "speedup_ref",          # log1p(samples/s ÷ the job's requested-GPU reference throughput)
    "finish_h",             # log1p(hours to finish the remaining work on this candidate)
    "mem_frac",             # memory per GPU ÷ memory of the smallest GPU it uses, [0, 1]
    "tp_log",               # log2(tp) ÷ 4, clipped to [0, 1]
    "pp_log",               # log2(pp) ÷ 5, clipped to [0, 1]
    "lp_share",             # the LP's share X for this candidate, [0, 1] (0 without the LP)
    "lp_assigned",          # 1 if the LP's rounded assignment runs it this round
    "within_fair_share",    # 1 if its GPUs ≤ max(requested, cluster GPUs ÷ active jobs)
)
#: Per-GPU-type features (one row per type).
CLUSTER_FEATURES = (
    "capacity_frac",        # GPUs of the type ÷ cluster GPUs
    "free_frac",            # GPUs of the type still free this round ÷ its GPUs
    "free_nodes_frac",      # completely free nodes of the type ÷ its nodes
    "speed_rel",            # the type's dense fp16 peak ÷ the fastest type's
)
#: Features of the whole round.
GLOBAL_FEATURES = (
    "active_jobs",          # log1p(active jobs) ÷ log1p(K)
    "placed_frac",          # jobs placed this round ÷ active jobs
    "visible_frac",         # candidates in the slots ÷ candidates of the round
    "arrived",              # log1p(jobs arrived since the last round)
    "completed",            # log1p(jobs completed since the last round)
    "time_h",               # log1p(simulated hours since the first arrival)
    "jobs_left_frac",       # jobs not yet completed ÷ jobs of the episode
)

#: Column of each cluster / global feature, by name.
CLUSTER_COLUMN = {name: i for i, name in enumerate(CLUSTER_FEATURES)}
GLOBAL_COLUMN = {name: i for i, name in enumerate(GLOBAL_FEATURES)}


class CandidateColumns:
    """Columns of the (K, F) slot-feature matrix on a cluster with GPU types ``gpu_types``:
    ``cols["mem_frac"]`` is a feature's column index, ``cols.gpus`` the slice of the per-type
    GPU columns, ``cols.names`` all F names in column order."""

    def __init__(self, gpu_types) -> None:
        self.gpu_types = tuple(gpu_types)
        self.names = (JOB_FEATURES + tuple(f"gpus:{t}" for t in self.gpu_types)
                      + CANDIDATE_FEATURES)
        self._index = {name: i for i, name in enumerate(self.names)}
        J = len(JOB_FEATURES)
        self.gpus = slice(J, J + len(self.gpu_types))

    def __getitem__(self, name: str) -> int:
        try:
            return self._index[name]
        except KeyError:
            raise KeyError(f"no slot feature {name!r}; features: {', '.join(self.names)}") \
                from None

    def __len__(self) -> int:
        return len(self.names)

    def type_independent(self) -> list[int]:
        """The job and candidate columns without the per-type GPU counts (what a learned
        ranker reads, so that it does not depend on the cluster's GPU types)."""
        return [i for i, name in enumerate(self.names) if not name.startswith("gpus:")]


def observation_space(slots: int, gpu_types) -> spaces.Dict:
    """The environments' observation space for ``slots`` (K) slots on these GPU types."""
    F, T = len(CandidateColumns(gpu_types)), len(tuple(gpu_types))
    return spaces.Dict({
        "candidates": spaces.Box(0.0, LOG_CAP, (slots * F,), np.float32),
        "valid": spaces.Box(0.0, 1.0, (slots,), np.float32),
        "cluster": spaces.Box(0.0, 1.0, (T * len(CLUSTER_FEATURES),), np.float32),
        "global": spaces.Box(0.0, LOG_CAP, (len(GLOBAL_FEATURES),), np.float32),
    })
