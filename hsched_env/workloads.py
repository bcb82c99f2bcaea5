"""Workloads: synthetic job streams (Gavel's generator) and loaders for public traces.

A workload is a sorted tuple of :class:`Job` objects. Every job carries the **work** it must do,
in samples: ``work_samples = duration_s × reference throughput``, where the reference
throughput is what the job's model achieves with plain data parallelism on ``requested_gpus``
GPUs of the **reference type** (V100-16GB for fp32 models, Gavel's reference; A100-80GB for
fp16/bf16 models). A scheduler that gives the job faster GPUs or a better parallelization
finishes it sooner than ``duration_s``.

Workloads are described by a spec string ``kind[:key=value,key=value...]``:

* ``gavel:rate=4,jobs=100,seed=0,mix=classic`` — Gavel's Poisson generator (``mix=llm`` adds
  LLM-era models; ``duration_scale=F`` multiplies durations).
* ``philly:start=2017-10-09T06:00,hours=8[,vc=6214e9][,max_jobs=N][,path=FILE]`` — a window of
  the Philly trace; models assigned by GPU-time bucket (Pollux / Sia).
* ``gavel-trace:path=FILE`` (or ``vc=HASH`` for Gavel's ``msr_seed0`` traces) — Gavel's TSV.
* ``pollux:path=FILE`` (or ``workload=1..4``) — Pollux's evaluation CSVs.
* ``csv:path=FILE`` — the generic CSV format (see ``docs/workloads.md``).

Every invalid trace row raises :class:`~hsched_env.errors.TraceError` naming the file, the
1-based line and the field; ``skip_invalid=True`` skips such rows and counts them in
:attr:`Workload.skipped`. Spec errors raise :class:`~hsched_env.errors.ConfigError`.

Example:
    >>> from hsched_env.cluster import get_cluster
    >>> w = load_workload("gavel:jobs=3,seed=1", get_cluster("gavel-108"))
    >>> [j.job_id for j in w.jobs]
    [0, 1, 2]
"""

from __future__ import annotations

import contextlib
import functools
import csv
import io
import logging
import math
import os
import re
import zlib
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import datetime, timedelta
from functools import lru_cache
from pathlib import Path
from typing import Any

import numpy as np

from hsched_env.catalog import (MAX_BATCH, ModelSpec, get_gpu, get_model, model_catalog,
                                model_variant)
from hsched_env.cluster import Cluster, cluster_from_dict, get_cluster
from hsched_env.errors import ConfigError, TraceError, UnknownNameError, show
from hsched_env.files import read_text_file, user_path

__all__ = [
    "Job", "Workload", "load_workload", "reference_throughput", "reference_gpu",
    "workload_kinds", "model_for_gpu_time", "gavel_job_type_to_model", "traces_dir",
    "REFERENCE_GPUS", "MAX_REFERENCE_GPUS", "MAX_SECONDS", "MAX_BATCH", "MAX_GENERATED_JOBS",
    "POLLUX_APPLICATIONS", "POLLUX_GPU_HOURS",
    "LLM_MIX",
]

log = logging.getLogger(__name__)

# ---------------------------------------------------------------------------------- constants
#: Reference GPU type per training precision (work = duration × throughput on these GPUs).
REFERENCE_GPUS = {"fp32": "V100-16GB", "fp16": "A100-80GB", "bf16": "A100-80GB"}
#: Network bandwidth per node of the reference clusters, GB/s (V100: 200 Gb/s; A100: DGX).
_REFERENCE_INTER_BW_GBPS = {"V100-16GB": 25.0, "A100-80GB": 200.0}
#: Size of the reference clusters (64 nodes × 8 GPUs); no job may ask for more.
MAX_REFERENCE_GPUS = 512
#: Largest arrival time and job duration accepted, seconds (about 317 years): simulated clocks
#: stay far from float overflow and keep sub-second resolution.
MAX_SECONDS = 1e10
#: Largest number of jobs the ``gavel`` generator draws.
MAX_GENERATED_JOBS = 1_000_000

KINDS = ("gavel", "philly", "gavel-trace", "pollux", "csv")

#: Gavel's 26 job templates (scheduler/job_table.py): (catalog model, batch or None).
GAVEL_TEMPLATES: tuple[tuple[str, int | None], ...] = (
    *(("resnet18", b) for b in (16, 32, 64, 128, 256)),
    *(("resnet50", b) for b in (16, 32, 64, 128)),
    *(("transformer", b) for b in (16, 32, 64, 128, 256)),
    *(("lm", b) for b in (5, 10, 20, 40, 80)),
    *(("recommendation", b) for b in (512, 1024, 2048, 4096, 8192)),
    ("a3c", None),
    ("cyclegan", None),
)
#: Gavel templates that are not distributed (redrawn when the scale factor is above 1).
NON_DISTRIBUTED = frozenset({"a3c", "cyclegan"})
#: ``mix=llm``: share of jobs drawn from Gavel's classic templates; the rest from LLM_MIX.
LLM_MIX_CLASSIC_SHARE = 0.5
#: ``mix=llm``: weights of the LLM-era models (our choice; big models are rarer).
LLM_MIX: tuple[tuple[str, float], ...] = (
    ("bert-large", 0.25), ("gpt2-medium", 0.20), ("vit-l", 0.15), ("gpt2-xl", 0.15),
    ("llama2-7b", 0.13), ("llama2-13b", 0.08), ("llama2-70b", 0.04),
)

#: Pollux applications → catalog stand-ins.
POLLUX_APPLICATIONS = {"cifar10": "resnet18", "imagenet": "resnet50", "bert": "bert-large",
                       "ncf": "recommendation", "deepspeech2": "lm", "yolov3": "resnet50"}
#: Assumed GPU-hours per Pollux application: the geometric middle of its Philly GPU-time
#: bucket (Pollux sampled jobs of ≥ 60 s, i.e. ≥ 1/60 GPU-h, and < 1000 GPU-h).
POLLUX_GPU_HOURS = {
    "cifar10": math.sqrt(1 / 60), "ncf": math.sqrt(1 / 60),
    "bert": math.sqrt(10.0), "deepspeech2": math.sqrt(10.0),
    "yolov3": math.sqrt(1000.0), "imagenet": math.sqrt(100.0 * 1000.0),
}

_SPEC_KEYS: dict[str, tuple[str, ...]] = {
    "gavel": ("rate", "jobs", "seed", "mix", "duration_scale", "multi_gpu"),
    "philly": ("start", "hours", "vc", "max_jobs", "path"),
    "gavel-trace": ("path", "vc", "max_jobs"),
    "pollux": ("path", "workload", "max_jobs"),
    "csv": ("path", "max_jobs"),
}
_MIXES = ("classic", "llm")


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
    """

    jobs: tuple[Job, ...]
    spec: str
    skipped: int = 0
    notes: tuple[str, ...] = ()

    def __len__(self) -> int:
        return len(self.jobs)


def workload_kinds() -> list[str]:
    """The workload kinds accepted by :func:`load_workload`."""
    return list(KINDS)


# ---------------------------------------------------------------------------------- reference
def reference_gpu(model: ModelSpec | str) -> str:
    """Reference GPU type of a model: ``V100-16GB`` for fp32, ``A100-80GB`` for fp16/bf16."""
    spec = get_model(model) if isinstance(model, str) else model
    return REFERENCE_GPUS[spec.precision]


@lru_cache(maxsize=None)
def _reference_cluster(gpu: str) -> Cluster:
    return cluster_from_dict(
        {"name": f"reference-{gpu.lower()}",
         "inter_node_bw_gbps": _REFERENCE_INTER_BW_GBPS[gpu],
         "nodes": [{"gpu_type": gpu, "gpus_per_node": 8,
                    "count": MAX_REFERENCE_GPUS // 8}]},
        source="workloads reference cluster")


@lru_cache(maxsize=8192)
def _reference_thr(spec: ModelSpec, gpus: int, throughputs: Any) -> float:
    """Best data-parallel samples/s on ``gpus`` reference GPUs; 0.0 when nothing fits."""
    from hsched_env.planner import PlannerConfig, plan_set  # heavy; import on first use

    gpu = REFERENCE_GPUS[spec.precision]
    table = plan_set(spec, _reference_cluster(gpu), {gpu: gpus},
                     config=PlannerConfig(data_parallel_only=True), throughputs=throughputs)
    return float(table.samples_per_s.max()) if len(table) else 0.0


def _check_gpu_count(gpus: Any) -> int:
    if isinstance(gpus, bool) or not isinstance(gpus, (int, np.integer)):
        raise ConfigError(f"GPU count must be an integer, got {show(gpus)}", field="gpus")
    if not 1 <= gpus <= MAX_REFERENCE_GPUS:
        raise ConfigError(f"GPU count must be between 1 and {MAX_REFERENCE_GPUS} (the reference "
                          f"cluster), got {gpus}", field="gpus")
    return int(gpus)


def reference_throughput(model: ModelSpec | str, gpus: int,
                         throughputs: str | None = None) -> float:
    """Samples/s of ``model`` with plain data parallelism on ``gpus`` reference GPUs.

    The reference cluster is 64 nodes × 8 GPUs of :func:`reference_gpu` (NVLink inside a node,
    25 GB/s per V100 node, 200 GB/s per A100 node); the figure is the planner's best
    ``data_parallel_only`` strategy (ZeRO allowed), or Gavel's measurement where
    ``throughputs="gavel"`` has one. Cached per (model, batch, gpus, throughputs).

    Args:
        model: A ``ModelSpec`` (e.g. ``job.spec``) or a catalog name.
        gpus: GPUs, 1 to :data:`MAX_REFERENCE_GPUS`.
        throughputs: ``None``/``"analytic"``, ``"gavel"`` or a table path (as the planner).

    Raises:
        ConfigError: Bad GPU count, or the model cannot train with data parallelism on that
            many reference GPUs (e.g. Llama-2 70B on 8 A100s).
    """
    spec = get_model(model) if isinstance(model, str) else model
    n = _check_gpu_count(gpus)
    thr = _reference_thr(spec, n, throughputs)
    if thr <= 0:
        raise ConfigError(f"{spec.name} cannot train with data parallelism on {n} × "
                          f"{reference_gpu(spec)} (it does not fit in memory or has fewer "
                          f"samples per batch than replicas)", field="gpus")
    return thr


def _fit_reference(spec: ModelSpec, gpus: int, throughputs: Any) -> tuple[int, float]:
    """``(gpus, throughput)``, raising ``gpus`` to the smallest power of two that works."""
    n = _check_gpu_count(gpus)
    thr = _reference_thr(spec, n, throughputs)
    if thr > 0:
        return n, thr
    k = 1 << (n - 1).bit_length()          # smallest power of two >= n
    if k == n:
        k *= 2
    while k <= MAX_REFERENCE_GPUS:
        thr = _reference_thr(spec, k, throughputs)
        if thr > 0:
            return k, thr
        k *= 2
    raise ConfigError(f"{spec.name} cannot train with data parallelism on {n} to "
                      f"{MAX_REFERENCE_GPUS} {reference_gpu(spec)} GPUs", field="gpus")


# ---------------------------------------------------------------------------------- models
def _pick(key: str, first: str, second: str) -> str:
    """Deterministic choice from a stable hash (crc32, not the salted ``hash()``)."""
    return first if zlib.crc32(key.encode("utf-8")) % 2 == 0 else second


def model_for_gpu_time(gpu_hours: float, key: str) -> str:
    """Catalog model of a trace job without one, by GPU-time bucket (Pollux, Sia).

    * < 1 GPU-h: ``resnet18`` (CIFAR-10) or ``recommendation`` (Pollux's NCF);
    * 1–10 GPU-h: ``bert-large`` or ``lm`` (recurrent stand-in for DeepSpeech2);
    * 10–100 GPU-h: ``resnet50`` (stand-in for YOLOv3);
    * ≥ 100 GPU-h: ``resnet50`` (ImageNet).

    Args:
        gpu_hours: Duration × GPUs, in hours.
        key: Stable string identifying the row (e.g. ``"<timestamp>|<line>"``); its crc32
            makes the "or" choices.
    """
    if gpu_hours < 1:
        return _pick(key, "resnet18", "recommendation")
    if gpu_hours < 10:
        return _pick(key, "bert-large", "lm")
    return "resnet50"


@lru_cache(maxsize=None)
def _gavel_type_index() -> tuple[dict[str, str], dict[str, str]]:
    """(base name with batch → model, exact name → model) from the catalog's Gavel types."""
    batched, exact = {}, {}
    for m in model_catalog().values():
        if m.gavel_job_type is None:
            continue
        if " (batch size " in m.gavel_job_type:
            batched[m.gavel_job_type.split(" (batch size ")[0]] = m.name
        else:
            exact[m.gavel_job_type] = m.name
    return batched, exact


_GAVEL_TYPE_RE = re.compile(r"^(.+?) \(batch size (\d{1,18})\)$")


def gavel_job_type_to_model(job_type: str) -> tuple[str, int | None]:
    """Map a Gavel job type to ``(catalog model, batch)``.

    ``"ResNet-50 (batch size 64)"`` → ``("resnet50", 64)``; ``"A3C"`` → ``("a3c", None)``.

    Raises:
        UnknownNameError: Not a Gavel job type of the catalog (lists the valid forms).
    """
    batched, exact = _gavel_type_index()
    text = job_type.strip()
    if text in exact:
        return exact[text], None
    m = _GAVEL_TYPE_RE.match(text)
    if m and m.group(1) in batched and int(m.group(2)) > 0:
        return batched[m.group(1)], int(m.group(2))
    valid = [f"{b} (batch size N)" for b in batched] + list(exact)
    raise UnknownNameError("Gavel job type", job_type, valid)


# ---------------------------------------------------------------------------------- spec
def _parse_spec(spec: str) -> tuple[str, dict[str, str]]:
    if not isinstance(spec, str) or not spec.strip():
        raise ConfigError(f"workload spec must be a non-empty string like 'gavel:rate=4', got "
                          f"{show(spec)}; kinds: {', '.join(KINDS)}", field="workload")
    kind, _, rest = spec.strip().partition(":")
    kind = kind.strip().lower()
    where = {"source": f"workload spec {show(spec)}"}
    if kind not in KINDS:
        raise ConfigError(f"unknown workload kind {show(kind)}; valid kinds: {', '.join(KINDS)}",
                          field="kind", **where)
    params: dict[str, str] = {}
    for item in rest.split(","):
        if not item.strip():
            continue
        key, eq, value = item.partition("=")
        key = key.strip().lower()
        if key not in _SPEC_KEYS[kind]:
            raise ConfigError(f"unknown key {show(key)} for kind {show(kind)}; valid keys: "
                              f"{', '.join(_SPEC_KEYS[kind])}", field=key, **where)
        if not eq or not value.strip():
            raise ConfigError(f"key {show(key)} needs a value ({key}=...)", field=key, **where)
        if key in params:
            raise ConfigError(f"key {show(key)} given twice", field=key, **where)
        params[key] = value.strip()
    return kind, params


class _Params:
    """Typed access to spec values; errors name the key."""

    def __init__(self, spec: str, values: dict[str, str]) -> None:
        self.spec, self.values = spec, values

    def error(self, key: str, message: str) -> ConfigError:
        return ConfigError(message, source=f"workload spec {show(self.spec)}", field=key)

    def has(self, key: str) -> bool:
        return key in self.values

    def number(self, key: str, default: float | None = None, *, positive: bool = True,
               hi: float | None = None) -> float:
        if key not in self.values:
            if default is None:
                raise self.error(key, f"missing required key {show(key)}")
            return default
        text = self.values[key]
        try:
            value = float(text)
        except ValueError:
            raise self.error(key, f"{key} must be a number, got {show(text)}") from None
        if not math.isfinite(value) or (positive and value <= 0) or value < 0:
            raise self.error(key, f"{key} must be a finite number "
                             f"{'> 0' if positive else '>= 0'}, got {show(text)}")
        if hi is not None and value > hi:
            raise self.error(key, f"{key} must be at most {hi:g}, got {show(text)}")
        return value

    def integer(self, key: str, default: int | None = None, *, lo: int = 1,
                hi: int | None = None) -> int | None:
        if key not in self.values:
            return default
        text = self.values[key]
        try:
            value = int(text)
        except ValueError:
            raise self.error(key, f"{key} must be an integer, got {show(text)}") from None
        if value < lo:
            raise self.error(key, f"{key} must be an integer >= {lo}, got {show(text)}")
        if hi is not None and value > hi:
            raise self.error(key, f"{key} must be an integer <= {hi}, got {show(text)}")
        return value

    def text(self, key: str, default: str | None = None) -> str | None:
        return self.values.get(key, default)


# ---------------------------------------------------------------------------------- files
def traces_dir() -> Path:
    """Directory of the public traces: ``$HSCHED_TRACES``, else ``<repo>/../shared/traces``,
    else ``./shared/traces``.

    Raises:
        ConfigError: None of them exists.
    """
    env = os.environ.get("HSCHED_TRACES")
    if env:
        p = user_path(env, field="HSCHED_TRACES")
        if not p.is_dir():
            raise ConfigError("HSCHED_TRACES is not a directory", source=env)
        return p
    tried = [Path(__file__).resolve().parents[2] / "shared" / "traces",
             Path.cwd() / "shared" / "traces"]
    for p in tried:
        if p.is_dir():
            return p
    raise ConfigError("cannot find the traces directory; tried " + ", ".join(map(str, tried))
                      + "; set HSCHED_TRACES or pass path=FILE", field="path")


def _trace_file(params: _Params, default: str | None) -> Path:
    """The explicit ``path=`` or ``default`` under :func:`traces_dir`."""
    if params.has("path"):
        return user_path(params.values["path"], field="path")
    if default is None:
        raise params.error("path", "missing required key 'path' (path=FILE)")
    return traces_dir() / default


def _read_text(path: Path) -> str:
    """File contents as UTF-8 (BOM allowed); clear errors for missing/unreadable/empty."""
    return read_text_file(path, field="path", decode_error=TraceError)


# ---------------------------------------------------------------------------------- rows
@dataclass
class _Pending:
    """A validated row before sorting and numbering."""

    order: int
    name: str
    model: str
    batch: int | None
    arrival_s: float
    gpus: int
    duration_s: float
    work_samples: float
    gpu_type: str | None
    asked_gpus: int          # GPUs the row asked for (``gpus`` may have been raised)


class _Rows:
    """Row-level validation context of one file (or of the generator)."""

    def __init__(self, source: str, cluster: Cluster, throughputs: Any,
                 skip_invalid: bool) -> None:
        self.source, self.cluster, self.throughputs = source, cluster, throughputs
        self.skip_invalid = skip_invalid
        self.skipped = 0
        self.jobs: list[_Pending] = []
        self.line = 0

    def error(self, field: str | None, message: str, line: int | None = None) -> TraceError:
        return TraceError(message, source=self.source, line=self.line if line is None else line,
                          field=field)

    @contextlib.contextmanager
    def row(self, line: int) -> Iterator[None]:
        """Validate one row: a TraceError inside is raised, or counted under skip_invalid."""
        self.line = line
        try:
            yield
        except TraceError as exc:
            if not self.skip_invalid:
                raise
            self.skipped += 1
            log.debug("skipping invalid row: %s", exc)

    # ---- field parsers (all raise TraceError naming the field)
    def _value(self, text: str, field: str) -> str:
        text = text.strip()
        if not text:
            raise self.error(field, "empty value")
        return text

    def _finite(self, text: str, field: str) -> tuple[str, float]:
        text = self._value(text, field)
        try:
            value = float(text)
        except ValueError:
            raise self.error(field, f"not a number: {show(text)}") from None
        if not math.isfinite(value):
            raise self.error(field, f"must be finite, got {show(text)}")
        return text, value

    def number(self, text: str, field: str, *, positive: bool = False) -> float:
        text, value = self._finite(text, field)
        if positive and value <= 0:
            raise self.error(field, f"must be > 0, got {show(text)}")
        if value < 0:
            raise self.error(field, f"must be >= 0, got {show(text)}")
        return value

    def integer(self, text: str, field: str, *, lo: int = 1, hi: int = 2 ** 53) -> int:
        text, value = self._finite(text, field)
        if not value.is_integer():
            raise self.error(field, f"must be a whole number, got {show(text)}")
        if value < lo:
            raise self.error(field, f"must be >= {lo}, got {show(text)}")
        if value > hi:
            raise self.error(field, f"must be <= {hi}, got {show(text)}")
        return int(value)

    def model(self, text: str, field: str) -> tuple[str, int | None]:
        """A catalog model name/alias, or a Gavel job type (``"LM (batch size 20)"``)."""
        text = self._value(text, field)
        try:
            return get_model(text).name, None
        except UnknownNameError as exc:
            try:
                model, batch = gavel_job_type_to_model(text)
            except UnknownNameError:
                raise self.error(field, str(exc)) from None
            self.check_batch(batch, field)
            return model, batch

    def check_batch(self, batch: int | None, field: str) -> None:
        """A batch override must be at most :data:`MAX_BATCH`."""
        if batch is not None and batch > MAX_BATCH:
            raise self.error(field, f"batch size {batch} is above the limit of {MAX_BATCH}")

    def gpu_type(self, text: str, field: str) -> str:
        text = self._value(text, field)
        try:
            return get_gpu(text).name
        except UnknownNameError as exc:
            raise self.error(field, str(exc)) from None

    # ---- completion: reference throughput, raised GPU counts, cluster capacity
    def add(self, *, order: int, name: str, model: str, batch: int | None, arrival_s: float,
            arrival_field: str, gpus: int, gpus_field: str, duration_field: str,
            duration_s: float | None = None, work_samples: float | None = None,
            gpu_type: str | None = None) -> None:
        """Finish a row: check capacity, fit the reference GPUs, derive work or duration.

        ``arrival_field`` and ``duration_field`` name the columns blamed when the arrival or
        the (given or derived) duration is above :data:`MAX_SECONDS`.
        """
        if arrival_s > MAX_SECONDS:
            raise self.error(arrival_field, f"arrival {arrival_s:g} s is after the limit of "
                             f"{MAX_SECONDS:g} s")
        self._check_capacity(gpus, gpu_type, gpus_field, "")
        try:
            spec = _variant(model, batch)
            n, thr = _fit_reference(spec, gpus, self.throughputs)
        except ConfigError as exc:
            raise self.error(gpus_field, exc.reason) from None
        if n != gpus:
            self._check_capacity(n, gpu_type, gpus_field,
                                 f" (raised from {gpus}: {model} cannot train with data "
                                 f"parallelism on fewer {reference_gpu(spec)} GPUs)")
        if work_samples is None:
            work_samples = duration_s * thr
        else:
            duration_s = work_samples / thr
        if not duration_s <= MAX_SECONDS:
            raise self.error(duration_field, f"duration {duration_s:g} s on the reference GPUs "
                             f"is above the limit of {MAX_SECONDS:g} s")
        if not (0 < work_samples < math.inf and duration_s > 0):
            raise self.error(duration_field, f"duration {duration_s:g} s gives no work to do "
                             f"({work_samples:g} samples)")
        self.jobs.append(_Pending(order, name, model, batch, float(arrival_s), n,
                                  float(duration_s), float(work_samples), gpu_type, gpus))

    def _check_capacity(self, gpus: int, gpu_type: str | None, field: str, why: str) -> None:
        c = self.cluster
        if gpu_type is not None:
            cap = c.capacity.get(gpu_type, 0)
            if gpus > cap:
                raise self.error(field, f"job needs {show(gpus)} GPUs of type {gpu_type}{why} but "
                                 f"cluster {show(c.name)} has {cap}")
        elif gpus > c.num_gpus:
            raise self.error(field, f"job needs {show(gpus)} GPUs{why} but cluster "
                             f"{show(c.name)} has {c.num_gpus} in total")


def _assemble(rows: _Rows, spec: str, notes: list[str], max_jobs: int | None,
              what: str) -> Workload:
    pending = sorted(rows.jobs, key=lambda p: (p.arrival_s, p.order))
    if max_jobs is not None:
        pending = pending[:max_jobs]
    if not pending:
        extra = f" ({rows.skipped} invalid rows skipped)" if rows.skipped else ""
        raise ConfigError(f"no jobs in {what}{extra}", source=rows.source)
    raised = sum(p.gpus != p.asked_gpus for p in pending)
    if raised:
        notes.append(f"raised requested GPUs of {raised} jobs to the smallest power of two "
                     f"on which their model trains with data parallelism on the reference GPUs")
    if rows.skipped:
        notes.append(f"skipped {rows.skipped} invalid rows")
        log.warning("%s: skipped %d invalid rows", rows.source, rows.skipped)
    jobs = tuple(Job(job_id=i, name=p.name, model=p.model, batch=p.batch,
                     arrival_s=p.arrival_s, requested_gpus=p.gpus, duration_s=p.duration_s,
                     work_samples=p.work_samples, gpu_type=p.gpu_type)
                 for i, p in enumerate(pending))
    for note in notes:
        log.info("%s: %s", spec, note)
    return Workload(jobs=jobs, spec=spec, skipped=rows.skipped, notes=tuple(notes))


def _csv_rows(text: str, source: str) -> Iterator[tuple[int, list[str]]]:
    """(first line number, fields) of each non-blank CSV record."""
    reader = csv.reader(io.StringIO(text, newline=""))
    while True:
        start = reader.line_num + 1
        try:
            row = next(reader)
        except StopIteration:
            return
        except csv.Error as exc:
            raise TraceError(f"malformed CSV: {exc}", source=source, line=start) from None
        if not row or (len(row) == 1 and not row[0].strip()):
            continue
        yield start, row


def _header(rows: _Rows, records: Iterator[tuple[int, list[str]]], required: tuple[str, ...],
            optional: tuple[str, ...] = ()) -> tuple[int, dict[str, int]]:
    """Read the header record; every required column must be present, nothing unknown."""
    try:
        line, names = next(records)
    except StopIteration:
        raise ConfigError("file has no header", source=rows.source) from None
    cols: dict[str, int] = {}
    for i, raw in enumerate(names):
        name = raw.strip().lower()
        if name in cols:
            raise rows.error(name, f"duplicate column {show(name)}", line)
        cols[name] = i
    unknown = [n for n in cols if n not in required + optional]
    if unknown:
        raise rows.error(unknown[0], f"unknown column(s) {', '.join(map(repr, unknown))}; "
                         f"allowed: {', '.join(required + optional)}", line)
    for name in required:
        if name not in cols:
            raise rows.error(name, f"missing column {show(name)}; the header must contain "
                             f"{', '.join(required)}", line)
    return line, cols


def _records(rows: _Rows, ncols: int,
             records: Iterator[tuple[int, list[str]]]) -> Iterator[tuple[int, list[str]]]:
    """Data records with the right column count (a wrong count is a row error)."""
    for line, fields in records:
        if len(fields) != ncols:
            with rows.row(line):
                raise rows.error(None, f"expected {ncols} columns, got {len(fields)}")
            continue
        yield line, fields


# ---------------------------------------------------------------------------------- gavel
def _scale_factor(rng: np.random.Generator) -> int:
    r = rng.random()
    return 1 if r < 0.7 else 2 if r < 0.8 else 4 if r < 0.95 else 8


def _duration(rng: np.random.Generator) -> float:
    if rng.random() < 0.8:
        return 60.0 * 10.0 ** rng.uniform(1.5, 3.0)
    return 60.0 * 10.0 ** rng.uniform(3.0, 4.0)


def _job_type(rng: np.random.Generator, mix: str, scale: int) -> tuple[str, int | None]:
    weights = np.array([w for _, w in LLM_MIX])
    weights = weights / weights.sum()
    while True:
        if mix == "llm" and rng.random() >= LLM_MIX_CLASSIC_SHARE:
            return LLM_MIX[int(rng.choice(len(LLM_MIX), p=weights))][0], None
        model, batch = GAVEL_TEMPLATES[int(rng.integers(len(GAVEL_TEMPLATES)))]
        if scale == 1 or model not in NON_DISTRIBUTED:
            return model, batch


@functools.lru_cache(maxsize=256)
def _runs_on(model: ModelSpec, cluster: Cluster) -> bool:
    """Whether the model has at least one candidate on the cluster (any set, any strategy)."""
    from hsched_env.planner import PlannerConfig, plan
    return len(plan(model, cluster, config=PlannerConfig(max_candidates=1))) > 0


def _generate(spec: str, params: _Params, cluster: Cluster, throughputs: Any) -> Workload:
    rate = params.number("rate", 4.0)
    n_jobs = params.integer("jobs", 100, hi=MAX_GENERATED_JOBS)
    seed = params.integer("seed", 0, lo=0)
    scale = params.number("duration_scale", 1.0)
    multi_gpu = params.integer("multi_gpu", 1, lo=0)
    if multi_gpu not in (0, 1):
        raise params.error("multi_gpu", f"multi_gpu must be 0 or 1, got {multi_gpu}")
    mix = (params.text("mix", "classic") or "").lower()
    if mix not in _MIXES:
        raise params.error("mix", f"unknown mix {show(mix)}; valid: {', '.join(_MIXES)}")
    rng = np.random.default_rng(seed)
    rows = _Rows(f"workload spec {show(spec)}", cluster, throughputs, skip_invalid=False)
    mean_gap = 3600.0 / rate
    t, redrawn = 0.0, 0
    for i in range(n_jobs):
        if i:
            t += float(rng.exponential(mean_gap))
        for _attempt in range(1000):
            sf = _scale_factor(rng) if multi_gpu else 1
            model, batch = _job_type(rng, mix, sf)
            spec_i = _variant(model, batch)
            try:
                n, thr = _fit_reference(spec_i, sf, throughputs)
            except ConfigError:
                n, thr = 0, 0.0
            if 0 < n <= cluster.num_gpus and _runs_on(spec_i, cluster):
                break
            redrawn += 1
        else:
            raise ConfigError(f"cannot draw a job that fits cluster {show(cluster.name)} "
                              f"({cluster.num_gpus} GPUs)", source=rows.source)
        duration = _duration(rng) * scale
        if t > MAX_SECONDS:
            raise params.error("rate", f"job {i} would arrive at {t:g} s, after the limit of "
                               f"{MAX_SECONDS:g} s; use a higher rate or fewer jobs")
        if not 0 < duration * thr < math.inf or duration > MAX_SECONDS:
            raise params.error("duration_scale", f"gives a duration of {duration:g} s; "
                               f"durations must be > 0 and at most {MAX_SECONDS:g} s")
        rows.jobs.append(_Pending(i, f"job-{i}", model, batch, t, n, duration, duration * thr,
                                  None, sf))
    notes = [f"Gavel generator: Poisson arrivals at {rate:g} jobs/h (first job at t=0), "
             f"mix={mix}, seed={seed}" + (f", durations ×{scale:g}" if scale != 1 else "")
             + ("" if multi_gpu else ", single-GPU jobs only")]
    if redrawn:
        notes.append(f"redrew {redrawn} draws whose model needs more GPUs than cluster "
                     f"{show(cluster.name)} has ({cluster.num_gpus}) or fits on none of its "
                     f"resource sets")
    return _assemble(rows, spec, notes, None, "the generated workload")


# ---------------------------------------------------------------------------------- philly
_START_RE = re.compile(r"^\d{4}-\d{2}-\d{2}(?:[T ]\d{2}:\d{2}(?::\d{2})?)?$")
_TS_RE = re.compile(r"^\d{4}-\d{2}-\d{2}[ T]\d{2}:\d{2}:\d{2}$")


def _datetime(text: str, pattern: re.Pattern) -> datetime | None:
    """``text`` as a datetime if it matches ``pattern`` and is a real date, else ``None``."""
    if not pattern.match(text):
        return None
    try:
        return datetime.fromisoformat(text)
    except ValueError:
        return None


def _load_philly(spec: str, params: _Params, cluster: Cluster, throughputs: Any,
                 skip_invalid: bool) -> Workload:
    start_text = params.text("start")
    if start_text is None:
        raise params.error("start", "missing required key 'start' (start=YYYY-MM-DD[THH:MM])")
    start = _datetime(start_text, _START_RE)
    if start is None:
        raise params.error("start", f"start must be YYYY-MM-DD or YYYY-MM-DDTHH:MM, got "
                           f"{show(start_text)}")
    hours = params.number("hours", 8.0)
    vc = params.text("vc")
    max_jobs = params.integer("max_jobs")
    try:
        end = start + timedelta(hours=hours)
    except OverflowError:
        raise params.error("hours", f"start + hours is beyond the year 9999 (start "
                           f"{start:%Y-%m-%d %H:%M}, hours {hours:g})") from None
    path = _trace_file(params, "philly/philly.csv")
    text = _read_text(path)
    rows = _Rows(str(path), cluster, throughputs, skip_invalid)
    records = _csv_rows(text, str(path))
    _, cols = _header(rows, records, ("timestamp", "duration", "num_gpus"),
                      ("gpu_time", "cluster"))
    if vc is not None and "cluster" not in cols:
        raise params.error("vc", f"{path} has no 'cluster' column to filter by VC")
    i_ts, i_dur, i_gpus = cols["timestamp"], cols["duration"], cols["num_gpus"]
    i_vc = cols.get("cluster")
    vcs: set[str] = set()
    first = last = None
    for line, f in _records(rows, len(cols), records):
        with rows.row(line):
            ts_text = f[i_ts].strip()
            if not ts_text:
                raise rows.error("timestamp", "empty value")
            ts = _datetime(ts_text, _TS_RE)
            if ts is None:
                raise rows.error("timestamp", f"unparsable timestamp {show(ts_text)} (expected "
                                 f"YYYY-MM-DD HH:MM:SS)")
            first = ts if first is None or ts < first else first
            last = ts if last is None or ts > last else last
            row_vc = f[i_vc].strip() if i_vc is not None else ""
            vcs.add(row_vc)
            if not start <= ts < end or (vc is not None and row_vc != vc):
                continue
            duration = rows.number(f[i_dur], "duration", positive=True)
            gpus = rows.integer(f[i_gpus], "num_gpus")
            model = model_for_gpu_time(duration * gpus / 3600.0, f"{ts_text}|{line}")
            rows.add(order=line, name=f"philly-{line}", model=model, batch=None,
                     arrival_s=(ts - start).total_seconds(), arrival_field="timestamp",
                     gpus=gpus, gpus_field="num_gpus", duration_s=duration,
                     duration_field="duration")
    if vc is not None and vc not in vcs:
        raise params.error("vc", f"no VC {show(vc)} in {path}; VCs: {', '.join(sorted(vcs))}")
    window = f"[{start:%Y-%m-%d %H:%M}, {end:%Y-%m-%d %H:%M})" + (f" in VC {vc}" if vc else "")
    if not rows.jobs and first is not None:
        window += f"; the trace spans {first} to {last}"
    notes = [f"Philly jobs submitted in {window}; models by GPU-time bucket: <1 GPU-h "
             f"resnet18/recommendation, 1-10 bert-large/lm, >=10 resnet50"]
    return _assemble(rows, spec, notes, max_jobs, f"the window {window}")


# ---------------------------------------------------------------------------------- gavel TSV
def _load_gavel_trace(spec: str, params: _Params, cluster: Cluster, throughputs: Any,
                      skip_invalid: bool) -> Workload:
    if params.has("vc") and params.has("path"):
        raise params.error("vc", "give either path= or vc=, not both")
    default = f"gavel/msr_seed0/{params.values['vc']}.trace" if params.has("vc") else None
    path = _trace_file(params, default)
    max_jobs = params.integer("max_jobs")
    text = _read_text(path)
    rows = _Rows(str(path), cluster, throughputs, skip_invalid)
    order = 0
    for line, raw in enumerate(re.split(r"\r\n|\r|\n", text), 1):  # universal newlines
        if not raw.strip():
            continue
        with rows.row(line):
            f = raw.split("\t")
            if len(f) == 7:      # Gavel 2019: type, command, steps arg, data dir, steps, t, sf
                job_type, cmd, steps_arg, data_dir, steps, arrival, sf = f
            elif len(f) == 10:   # Gavel today: + working dir, priority weight, SLO
                job_type, cmd, _wd, steps_arg, data_dir, steps, sf, _prio, _slo, arrival = f
            else:
                raise rows.error(None, f"expected 7 tab-separated columns (job_type, command, "
                                 f"num_steps_arg, needs_data_dir, total_steps, arrival_time, "
                                 f"scale_factor) or Gavel's 10, got {len(f)}")
            job_type = rows._value(job_type, "job_type")
            try:
                model, batch = gavel_job_type_to_model(job_type)
            except UnknownNameError as exc:
                raise rows.error("job_type", str(exc)) from None
            rows._value(cmd, "command")
            rows._value(steps_arg, "num_steps_arg")
            if rows.integer(data_dir, "needs_data_dir", lo=0) > 1:
                raise rows.error("needs_data_dir", f"must be 0 or 1, got {show(data_dir.strip())}")
            total_steps = rows.integer(steps, "total_steps")
            arrival_s = rows.number(arrival, "arrival_time")
            gpus = rows.integer(sf, "scale_factor")
            rows.check_batch(batch, "job_type")
            batch_size = _variant(model, batch).global_batch
            rows.add(order=order, name=f"job-{order}", model=model, batch=batch,
                     arrival_s=arrival_s, arrival_field="arrival_time", gpus=gpus,
                     gpus_field="scale_factor", work_samples=float(total_steps) * batch_size,
                     duration_field="total_steps")
        order += 1
    notes = ["Gavel trace: work = total_steps × batch samples; duration = work / reference "
             "throughput on scale_factor GPUs"]
    return _assemble(rows, spec, notes, max_jobs, "the trace")


# ---------------------------------------------------------------------------------- pollux
def _load_pollux(spec: str, params: _Params, cluster: Cluster, throughputs: Any,
                 skip_invalid: bool) -> Workload:
    if params.has("workload") and params.has("path"):
        raise params.error("workload", "give either path= or workload=, not both")
    default = None
    if params.has("workload"):
        default = f"pollux/workloads/workload-{params.integer('workload')}.csv"
    path = _trace_file(params, default)
    max_jobs = params.integer("max_jobs")
    text = _read_text(path)
    rows = _Rows(str(path), cluster, throughputs, skip_invalid)
    records = _csv_rows(text, str(path))
    names = ("name", "time", "application", "num_replicas", "batch_size")
    _, cols = _header(rows, records, names)
    seen: dict[str, int] = {}
    for line, f in _records(rows, len(cols), records):
        with rows.row(line):
            v = {k: f[cols[k]] for k in names}
            name = rows._value(v["name"], "name")
            if name in seen:
                raise rows.error("name", f"duplicate job name {show(name)} (first on line "
                                 f"{seen[name]})")
            arrival_s = rows.number(v["time"], "time")
            app = rows._value(v["application"], "application").lower()
            if app not in POLLUX_APPLICATIONS:
                raise rows.error("application", f"unknown application {show(app)}; valid: "
                                 f"{', '.join(sorted(POLLUX_APPLICATIONS))}")
            replicas = rows.integer(v["num_replicas"], "num_replicas")
            rows.integer(v["batch_size"], "batch_size")
            duration = POLLUX_GPU_HOURS[app] * 3600.0 / replicas
            rows.add(order=line, name=name, model=POLLUX_APPLICATIONS[app], batch=None,
                     arrival_s=arrival_s, arrival_field="time", gpus=replicas,
                     gpus_field="num_replicas", duration_s=duration,
                     duration_field="application")
            seen[name] = line
    gpu_h = ", ".join(f"{a} {h:.3g}" for a, h in POLLUX_GPU_HOURS.items())
    stand = ", ".join(f"{a}→{m}" for a, m in POLLUX_APPLICATIONS.items())
    notes = [f"Pollux CSVs have no durations: assumed GPU-hours per application (geometric "
             f"middle of its Philly GPU-time bucket): {gpu_h}; duration = GPU-hours / "
             f"num_replicas",
             f"Pollux stand-in models: {stand}; requested GPUs = num_replicas (Pollux's initial "
             f"allocation); batch_size ignored (catalog batch)"]
    return _assemble(rows, spec, notes, max_jobs, "the file")


# ---------------------------------------------------------------------------------- csv
CSV_REQUIRED = ("job_id", "submit_time_s", "duration_s", "num_gpus")
CSV_OPTIONAL = ("model", "gpu_type", "batch")


def _load_csv(spec: str, params: _Params, cluster: Cluster, throughputs: Any,
              skip_invalid: bool) -> Workload:
    path = _trace_file(params, None)
    max_jobs = params.integer("max_jobs")
    text = _read_text(path)
    rows = _Rows(str(path), cluster, throughputs, skip_invalid)
    records = (r for r in _csv_rows(text, str(path)) if not r[1][0].lstrip().startswith("#"))
    _, cols = _header(rows, records, CSV_REQUIRED, CSV_OPTIONAL)
    seen: dict[str, int] = {}
    assigned = 0
    for line, f in _records(rows, len(cols), records):
        with rows.row(line):
            job_id = rows._value(f[cols["job_id"]], "job_id")
            if job_id in seen:
                raise rows.error("job_id", f"duplicate job id {show(job_id)} (first on line "
                                 f"{seen[job_id]})")
            arrival_s = rows.number(f[cols["submit_time_s"]], "submit_time_s")
            duration = rows.number(f[cols["duration_s"]], "duration_s", positive=True)
            gpus = rows.integer(f[cols["num_gpus"]], "num_gpus")
            opt = {k: f[cols[k]].strip() if k in cols else "" for k in CSV_OPTIONAL}
            batch = rows.integer(opt["batch"], "batch", hi=MAX_BATCH) if opt["batch"] else None
            if opt["model"]:
                model, type_batch = rows.model(opt["model"], "model")
                if batch is None:
                    batch = type_batch
            elif batch is not None:
                raise rows.error("batch", "a batch needs a model (the model column is empty)")
            else:
                model = model_for_gpu_time(duration * gpus / 3600.0,
                                           f"{f[cols['submit_time_s']].strip()}|{line}")
            gpu_type = rows.gpu_type(opt["gpu_type"], "gpu_type") if opt["gpu_type"] else None
            rows.add(order=line, name=job_id, model=model, batch=batch, arrival_s=arrival_s,
                     arrival_field="submit_time_s", gpus=gpus, gpus_field="num_gpus",
                     duration_s=duration, duration_field="duration_s", gpu_type=gpu_type)
            assigned += not opt["model"]
            seen[job_id] = line
    notes = []
    if assigned:
        notes.append(f"assigned models to {assigned} jobs without one by GPU-time bucket")
    return _assemble(rows, spec, notes, max_jobs, "the file")


# ---------------------------------------------------------------------------------- entry
def load_workload(spec: str, cluster: Cluster | str, *, skip_invalid: bool = False,
                  throughputs: str | None = None) -> Workload:
    """Generate or load a workload.

    Args:
        spec: ``kind[:key=value,...]``; kinds: ``gavel``, ``philly``, ``gavel-trace``,
            ``pollux``, ``csv`` (see the module docstring and ``docs/workloads.md``).
        cluster: The cluster the jobs must fit (a ``Cluster`` or a preset name / file).
        skip_invalid: Skip invalid trace rows and count them in ``Workload.skipped`` instead
            of raising. File-level problems (missing file, bad header) still raise.
        throughputs: Throughput source of the reference throughputs (``None``/``"analytic"``,
            ``"gavel"``, or a table path), as for the planner.

    Returns:
        The :class:`Workload`, jobs numbered in arrival order.

    Raises:
        ConfigError: Unknown kind or key, bad value, missing or empty file, no jobs.
        TraceError: An invalid row (file, line and field in the message).
    """
    kind, values = _parse_spec(spec)
    cluster = get_cluster(cluster)
    params = _Params(spec, values)
    if kind == "gavel":
        return _generate(spec, params, cluster, throughputs)
    loader = {"philly": _load_philly, "gavel-trace": _load_gavel_trace,
              "pollux": _load_pollux, "csv": _load_csv}[kind]
    return loader(spec, params, cluster, throughputs, skip_invalid)
