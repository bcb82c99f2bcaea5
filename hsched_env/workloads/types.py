"""Workload types: :class:`Job` and :class:`Workload`.

A workload is a sorted tuple of :class:`Job` objects. Every job carries the **work** it must do,
in samples: ``work_samples = duration_s × reference throughput``, where the reference
throughput is what the job's model achieves with plain data parallelism on ``requested_gpus``
GPUs of the **reference type** (V100-16GB for fp32 models, Gavel's reference; A100-80GB for
fp16/bf16 models). A scheduler that gives the job faster GPUs or a better parallelization
finishes it sooner than ``duration_s``.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

from hsched_env.catalog import ModelSpec, model_variant

__all__ = ["Job", "Workload", "MAX_SECONDS", "MIN_DURATION_S"]

#: Largest arrival time and job duration accepted, seconds (about 317 years): simulated clocks
#: stay far from float overflow and keep sub-second resolution.
MAX_SECONDS = 1e10
#: Shortest job duration accepted, seconds: shorter than any training job, and far enough
#: from 0 that a job's finish-time fairness (its time in the system over its duration's
#: fair share) stays finite (a 1e-320 s job's was inf, printed as if no job had finished).
MIN_DURATION_S = 1e-3


# ---------------------------------------------------------------------------------- types
@lru_cache(maxsize=None)
def _variant(model: str, batch: int | None) -> ModelSpec:
    return model_variant(model, batch)


@dataclass(frozen=True)
class Job:
    """One training job of a workload.

    Attributes:
        job_id: 0..N-1 in arrival order (ties broken by trace order).
        name: The job's id in the trace (``f"job-{i}"`` for generated jobs).
        model: Catalog model name, e.g. ``"resnet50"``.
        batch: Batch override (Gavel job types such as ``"ResNet-50 (batch size 16)"``);
            ``None`` keeps the catalog's batch.
        arrival_s: Seconds from the workload start (the first arrival need not be 0).
        requested_gpus: GPUs the trace asked for (raised when the model cannot train with
            data parallelism on that many reference GPUs, see ``Workload.notes``).
        duration_s: Run time on ``requested_gpus`` reference GPUs with data parallelism.
        work_samples: Samples to train: ``duration_s × reference_throughput(spec,
            requested_gpus)``.
        gpu_type: Canonical GPU type the job is constrained to, or ``None``.
    """

    job_id: int
    name: str
    model: str
    batch: int | None
    arrival_s: float
    requested_gpus: int
    duration_s: float
    work_samples: float
    gpu_type: str | None = None

    @property
    def spec(self) -> ModelSpec:
        """The job's :class:`ModelSpec` (``model_variant(model, batch)``, cached)."""
        return _variant(self.model, self.batch)


@dataclass(frozen=True)
class Workload:
    """A loaded or generated workload.

    Attributes:
        jobs: The jobs, sorted by ``(arrival_s, job_id)``.
        spec: The spec string it came from.
        skipped: Invalid rows skipped under ``skip_invalid=True``.
        notes: Human-readable notes on assumptions and adjustments.
        source_file: The file the jobs were read from (``path=``, or a kind's default
            trace under ``traces_dir()``); ``None`` for a generated workload.
    """

    jobs: tuple[Job, ...]
    spec: str
    skipped: int = 0
    notes: tuple[str, ...] = ()
    source_file: str | None = None

    def __len__(self) -> int:
        return len(self.jobs)
