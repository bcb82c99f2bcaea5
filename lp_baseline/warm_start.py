"""An optimal simplex basis carried from one decision's LP to the next (``warm_start=True``).

Consecutive rounds' allocation LPs share most of their jobs and candidates: a job that was
active in the previous round keeps its rows and its candidate columns. ``LabeledBasis`` is the
basis HiGHS ended the previous decision's first LP solve on, each status stored under a label
that names what the column or row *means* (a job's candidate, a job's row, a GPU type's row)
rather than its position. ``map_onto`` gives the statuses of the next LP's columns and rows:
the stored one where the label is known, else nonbasic at the lower bound (a new column, ``X =
0``) or basic (a new row's slack). HiGHS takes this as an *alien* basis and repairs it into a
valid one before its dual simplex starts; an LP that differs from the previous one by a few
jobs then takes a few pivots instead of a solve from the slack basis.

A warm start reaches an optimum of the same LP, but where the LP has several optimal vertices
(a degenerate max-min LP, for instance) it may end on another one, and the schedule can differ
from the cold solve's (docs/lp.md, "Warm starts across decisions"). It is an option, off by
default. Only the dual simplex path uses it (``backend="highs"`` with the simplex method);
column generation, IPM and the PuLP backend solve cold.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from lp_baseline.formulation import LPSpec

#: HiGHS' ``HighsBasisStatus`` codes used here.
LOWER, BASIC = 0, 1
#: A job's candidate row is packed with its job key into one int64 label: ``key << ROW_BITS |
#: row``; a candidate table has fewer rows than ``2 ** ROW_BITS``.
ROW_BITS = 24
#: The label of the auxiliary column (``t`` of max-min, ``z'`` of min-makespan).
AUX_LABEL = -1


@dataclass(frozen=True)
class BasisKeys:
    """What the columns and rows of one ``AllocationProblem`` mean across decisions:
    ``job_keys[j]`` a stable id of job ``j`` (the simulator's job id), ``cand_rows[c]`` the row
    of candidate ``c`` in its job's candidate table."""

    job_keys: np.ndarray
    cand_rows: np.ndarray

    def __post_init__(self) -> None:
        if self.job_keys.ndim != 1 or self.cand_rows.ndim != 1:
            raise ValueError("BasisKeys: job_keys and cand_rows must be 1-D")
        if self.job_keys.size and (self.job_keys.min() < 0
                                   or self.job_keys.max() >= 1 << (62 - ROW_BITS)):
            raise ValueError("BasisKeys: job keys must be in [0, 2**38)")
        if self.cand_rows.size and (self.cand_rows.min() < 0
                                    or self.cand_rows.max() >= 1 << ROW_BITS):
            raise ValueError(f"BasisKeys: candidate rows must be in [0, 2**{ROW_BITS})")


def lp_labels(keys: BasisKeys, job_of: np.ndarray, spec: LPSpec
              ) -> tuple[np.ndarray, np.ndarray]:
    """``(column labels, row labels)`` of the LP ``spec`` (``formulation.build_spec``) of a
    problem whose candidates belong to the jobs ``job_of``: its columns are the candidates
    ``spec.cand`` (then the auxiliary column, if any), its rows one per job of
    ``spec.row_jobs``, one per GPU type of ``spec.types``, one per job of ``spec.obj_jobs``."""
    jk = np.asarray(keys.job_keys, dtype=np.int64)
    cand = spec.cand
    cols = (jk[job_of[cand]] << ROW_BITS) | np.asarray(keys.cand_rows, dtype=np.int64)[cand]
    if spec.aux is not None:
        cols = np.append(cols, AUX_LABEL)
    # three disjoint label sets: job rows ≥ 0 and even, objective rows ≥ 0 and odd, types < 0
    rows = np.concatenate([jk[spec.row_jobs] * 2, -1 - np.asarray(spec.types, dtype=np.int64),
                           jk[spec.obj_jobs] * 2 + 1])
    return cols, rows


@dataclass(frozen=True)
class LabeledBasis:
    """A simplex basis by label: ``col_status[i]`` is the HiGHS basis status of the column
    labeled ``col_labels[i]`` (labels sorted ascending), the same for rows."""

    col_labels: np.ndarray
    col_status: np.ndarray
    row_labels: np.ndarray
    row_status: np.ndarray

    @classmethod
    def of(cls, col_labels: np.ndarray, col_status, row_labels: np.ndarray,
           row_status) -> "LabeledBasis":
        """The basis of an LP whose columns and rows carry these labels, in LP order."""
        co, ro = np.argsort(col_labels), np.argsort(row_labels)
        return cls(col_labels[co], np.asarray(col_status, dtype=np.int8)[co],
                   row_labels[ro], np.asarray(row_status, dtype=np.int8)[ro])

    def map_onto(self, col_labels: np.ndarray, row_labels: np.ndarray
                 ) -> tuple[np.ndarray, np.ndarray]:
        """The statuses of another LP's columns and rows (in its order): the stored status
        of a known label, else ``LOWER`` for a column and ``BASIC`` for a row."""
        return (_lookup(self.col_labels, self.col_status, col_labels, LOWER),
                _lookup(self.row_labels, self.row_status, row_labels, BASIC))


def _lookup(sorted_labels: np.ndarray, status: np.ndarray, labels: np.ndarray,
            default: int) -> np.ndarray:
    out = np.full(labels.size, default, dtype=np.int8)
    if sorted_labels.size == 0 or labels.size == 0:
        return out
    at = np.minimum(np.searchsorted(sorted_labels, labels), sorted_labels.size - 1)
    hit = sorted_labels[at] == labels
    out[hit] = status[at[hit]]
    return out
