"""Workload types: :class:`Job` and :class:`Workload`.

A workload is a sorted tuple of :class:`Job` objects. Every job carries the **work** it must do,
in samples: ``work_samples = duration_s × reference throughput``, where the reference
throughput is what the job's model achieves with plain data parallelism on ``requested_gpus``
GPUs of the **reference type** (V100-16GB for fp32 models, Gavel's reference; A100-80GB for
fp16/bf16 models). A scheduler that gives the job faster GPUs or a better parallelization
finishes it sooner than ``duration_s``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import lru_cache

from hsched_env.catalog import (MAX_BATCH, ModelSpec, get_gpu, get_model, model_files_in_use,
                                model_variant)
from hsched_env.errors import (ConfigError, UnknownNameError, is_real_number, is_whole_number,
                               show)

__all__ = ["Job", "Workload", "MAX_SECONDS", "MIN_DURATION_S"]

#: Largest arrival time and job duration accepted, seconds (about 317 years): simulated clocks
#: stay far from float overflow and keep sub-second resolution.
MAX_SECONDS = 1e10
#: Shortest job duration accepted, seconds: shorter than any training job, and far enough
#: from 0 that a job's finish-time fairness (its time in the system over its duration's
#: fair share) stays finite (a 1e-320 s job's was inf, printed as if no job had finished).
MIN_DURATION_S = 1e-3


# ----------------------------------------------------------------- fitting a cluster
def missing_gpu_type(cluster, gpu_type: str) -> str | None:
    """Why a job constrained to ``gpu_type`` cannot run on ``cluster`` (it has none of that
    type), or ``None``; shared by the trace loaders and the ``Simulator``."""
    have = cluster.capacity
    if gpu_type in have:
        return None
    return f"cluster {show(cluster.name)} has no {gpu_type} GPUs (it has {', '.join(sorted(have))})"


def gpus_over_capacity(cluster, gpus: int, gpu_type: str | None, why: str = "") -> str | None:
    """Why a job of ``gpus`` GPUs (of ``gpu_type``, if constrained) cannot run on ``cluster``
    (more than it has; ``why`` follows the count), or ``None``."""
    if gpu_type is not None:
        cap = cluster.capacity.get(gpu_type, 0)
        return (None if gpus <= cap else f"job needs {show(gpus)} GPUs of type {gpu_type}{why} "
                                         f"but cluster {show(cluster.name)} has {cap}")
    return (None if gpus <= cluster.num_gpus else
            f"job needs {show(gpus)} GPUs{why} but cluster {show(cluster.name)} has "
            f"{cluster.num_gpus} in total")


# ---------------------------------------------------------------------------------- types
def _variant(model: str, batch: int | None) -> ModelSpec:
    return _variant_in(model, batch, model_files_in_use())


@lru_cache(maxsize=None)
def _variant_in(model: str, batch: int | None, catalog: str) -> ModelSpec:
    """``model_variant`` in the catalog in use (``catalog``: its key, ``HSCHED_MODELS``)."""
    return model_variant(model, batch)


def _finite_as_float(value) -> bool:
    """Whether ``float(value)`` is finite (an int past float's range overflows)."""
    try:
        return math.isfinite(float(value))
    except OverflowError:
        return False


def _model_known(name: str) -> bool:
    return _model_known_in(name, model_files_in_use())


@lru_cache(maxsize=256)
def _model_known_in(name: str, catalog: str) -> bool:
    """Whether the catalog in use (``catalog``: its key, ``HSCHED_MODELS``) has ``name``."""
    try:
        get_model(name)
    except UnknownNameError:
        return False
    return True


@lru_cache(maxsize=256)
def _gpu_canonical(name: str) -> str | None:
    """The GPU type's canonical name, ``None`` for an unknown one."""
    try:
        return get_gpu(name).name
    except UnknownNameError:
        return None


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

    A job is checked as it is made (``ConfigError`` naming the job and the field): the
    loaders check their rows first and name the file and line; a ``Job`` built by hand gets
    the same limits (a negative ``work_samples`` finished "before it arrived"). Whether it fits
    a cluster is the ``Simulator``'s check.
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

    def __post_init__(self) -> None:
        # the common case (plain Python values, as the loaders make them) in one expression;
        # anything else (NumPy numbers, a bad field) is checked field by field
        gpu_type = self.gpu_type
        if not (type(self.job_id) is int and self.job_id >= 0 and type(self.name) is str
                and type(self.model) is str and _model_known(self.model)
                and (self.batch is None
                     or (type(self.batch) is int and 1 <= self.batch <= MAX_BATCH))
                and type(self.arrival_s) is float and 0.0 <= self.arrival_s <= MAX_SECONDS
                and type(self.requested_gpus) is int and self.requested_gpus >= 1
                and type(self.duration_s) is float
                and MIN_DURATION_S <= self.duration_s <= MAX_SECONDS
                and type(self.work_samples) is float and 0.0 < self.work_samples < math.inf
                and (gpu_type is None
                     or (type(gpu_type) is str and _gpu_canonical(gpu_type) == gpu_type))):
            self._check_fields()

    def _check_fields(self) -> None:
        """A ``ConfigError`` naming the job and its first field out of bounds."""
        where = f"job {show(self.job_id)} ({show(self.name)})"

        def bad(field: str, why: str) -> ConfigError:
            return ConfigError(f"{why}, got {show(getattr(self, field))}", source=where,
                               field=field)

        def named(lookup, field: str):
            try:
                return lookup(getattr(self, field))
            except UnknownNameError as exc:
                raise UnknownNameError(exc.kind, exc.name, exc.valid, source=where,
                                       field=field) from None
        if not (is_whole_number(self.job_id) and self.job_id >= 0):
            raise bad("job_id", "must be a whole number >= 0")
        if not isinstance(self.name, str):
            raise bad("name", "must be a string")
        if not isinstance(self.model, str):
            raise bad("model", "must be a catalog model's name (a string)")
        named(get_model, "model")          # an unknown name: listing the catalog's
        if self.batch is not None and not (is_whole_number(self.batch)
                                           and 1 <= self.batch <= MAX_BATCH):
            raise bad("batch", f"must be None or a whole number from 1 to {MAX_BATCH}")
        if not (is_real_number(self.arrival_s) and 0 <= self.arrival_s <= MAX_SECONDS):
            raise bad("arrival_s", f"must be a number of seconds from 0 to {MAX_SECONDS:g}")
        if not (is_whole_number(self.requested_gpus) and self.requested_gpus >= 1):
            raise bad("requested_gpus", "must be a whole number >= 1")
        if not (is_real_number(self.duration_s)
                and MIN_DURATION_S <= self.duration_s <= MAX_SECONDS):
            raise bad("duration_s", f"must be a number of seconds from {MIN_DURATION_S:g} "
                                    f"to {MAX_SECONDS:g}")
        if not (is_real_number(self.work_samples) and 0 < self.work_samples
                and _finite_as_float(self.work_samples)):
            raise bad("work_samples", "must be a finite number of samples > 0")
        if self.gpu_type is not None:
            if not isinstance(self.gpu_type, str):
                raise bad("gpu_type", "must be None or a GPU type's canonical name")
            canonical = named(get_gpu, "gpu_type").name
            if canonical != self.gpu_type:
                raise bad("gpu_type", f"must be the GPU type's canonical name "
                                      f"{show(canonical)}")
        # NumPy numbers kept as Python ones, as the loaders make them (a NumPy batch was
        # refused later, by model_variant, without naming the job)
        for name, kind in (("job_id", int), ("batch", int), ("arrival_s", float),
                           ("requested_gpus", int), ("duration_s", float),
                           ("work_samples", float)):
            value = getattr(self, name)
            if value is not None and type(value) is not kind:
                object.__setattr__(self, name, kind(value))

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
