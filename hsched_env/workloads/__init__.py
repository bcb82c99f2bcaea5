"""Workloads: synthetic job streams (Gavel's generator) and loaders for public traces.

A workload is a sorted tuple of :class:`Job` objects. Every job carries the **work** it must do,
in samples: its duration × the throughput of its model on the reference GPUs (see
:mod:`hsched_env.workloads.types` and :mod:`hsched_env.workloads.reference`). A scheduler that
gives the job faster GPUs or a better parallelization finishes it sooner than ``duration_s``.

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

Modules (each imports only from the ones listed before it):

* :mod:`~hsched_env.workloads.types` -- :class:`Job` and :class:`Workload`.
* :mod:`~hsched_env.workloads.reference` -- reference GPUs and throughputs (duration ↔ work).
* :mod:`~hsched_env.workloads.model_mapping` -- catalog models for trace jobs (Gavel job
  types, GPU-time buckets).
* :mod:`~hsched_env.workloads.spec` -- the spec grammar and typed spec values.
* :mod:`~hsched_env.workloads.rows` -- row validation and assembly shared by the loaders.
* :mod:`~hsched_env.workloads.generator` -- the ``gavel`` generator and its model mixes.
* :mod:`~hsched_env.workloads.traces` -- the ``philly``, ``gavel-trace``, ``pollux`` and
  ``csv`` loaders and the traces directory.
* this package -- :func:`load_workload`, which dispatches a spec to the generator or a loader.

Example:
    >>> from hsched_env.cluster import get_cluster
    >>> w = load_workload("gavel:jobs=3,seed=1", get_cluster("gavel-108"))
    >>> [j.job_id for j in w.jobs]
    [0, 1, 2]
"""

from __future__ import annotations

# Every public name of the former single module stays importable from the package; the
# ones outside __all__ (GAVEL_TEMPLATES, LLM_MIX_CLASSIC_SHARE, NON_DISTRIBUTED, KINDS,
# CSV_REQUIRED, CSV_OPTIONAL) are re-exported for that too.
from hsched_env.catalog import MAX_BATCH
from hsched_env.cluster import Cluster, get_cluster
from hsched_env.errors import ConfigError, TraceError, check_switch, is_whole_number, show
from hsched_env.throughput import check_throughput_source
from hsched_env.workloads.generator import (GAVEL_TEMPLATES, LLM_MIX, LLM_MIX_CLASSIC_SHARE,
                                            MAX_GENERATED_JOBS, NON_DISTRIBUTED, _generate)
from hsched_env.workloads.model_mapping import gavel_job_type_to_model, model_for_gpu_time
from hsched_env.workloads.reference import (MAX_REFERENCE_GPUS, REFERENCE_GPUS, reference_gpu,
                                            reference_throughput)
from hsched_env.workloads.spec import (KINDS, _Params, _parse_spec, spec_has_key, spec_kind,
                                       with_spec_item, workload_kinds)
from hsched_env.workloads.traces import (CSV_OPTIONAL, CSV_REQUIRED, POLLUX_APPLICATIONS,
                                         POLLUX_GPU_HOURS, _load_csv, _load_gavel_trace,
                                         _load_philly, _load_pollux, traces_dir)
from hsched_env.workloads.types import MAX_SECONDS, MIN_DURATION_S, Job, Workload

__all__ = [
    "Job", "Workload", "load_workload", "reference_throughput", "reference_gpu",
    "workload_kinds", "with_spec_item", "spec_kind", "spec_has_key", "model_for_gpu_time",
    "gavel_job_type_to_model", "traces_dir",
    "REFERENCE_GPUS", "MAX_REFERENCE_GPUS", "MAX_SECONDS", "MIN_DURATION_S", "MAX_BATCH",
    "MAX_GENERATED_JOBS",
    "POLLUX_APPLICATIONS", "POLLUX_GPU_HOURS",
    "LLM_MIX",
]


# ---------------------------------------------------------------------------------- entry
def load_workload(spec: str, cluster: Cluster | str, *, skip_invalid: bool = False,
                  throughputs: str | None = None, seed: int | None = None) -> Workload:
    """Generate or load a workload.

    Args:
        spec: ``kind[:key=value,...]``; kinds: ``gavel``, ``philly``, ``gavel-trace``,
            ``pollux``, ``csv`` (see the module docstring and ``docs/workloads.md``).
        cluster: The cluster the jobs must fit (a ``Cluster`` or a preset name / file).
        skip_invalid: Skip invalid trace rows and count them in ``Workload.skipped`` instead
            of raising. File-level problems (missing file, bad header) still raise.
        throughputs: Throughput source of the reference throughputs (``None``/``"analytic"``,
            ``"gavel"``, or a table path), as for the planner.
        seed: The seed of a generated (``gavel:``) spec that gives no ``seed=`` (an episode's
            or an evaluation's seed; the spec's own ``seed=`` wins, and traces take none).
            The workload is that of the spec with ``seed=`` appended, and an error in the spec
            quotes the spec as given, with the seed beside it.

    Returns:
        The :class:`Workload`, jobs numbered in arrival order.

    Raises:
        ConfigError: Unknown kind or key, bad value, missing or empty file, no jobs.
        TraceError: An invalid row (file, line and field in the message).
    """
    if seed is not None and not (is_whole_number(seed) and seed >= 0):
        raise ConfigError(f"seed must be a whole number >= 0 (or None), got {show(seed)}",
                          field="seed")
    if (seed is not None and isinstance(spec, str) and spec_kind(spec) == "gavel"
            and not spec_has_key(spec, "seed")):
        seeded = with_spec_item(spec, f"seed={int(seed)}")
        try:
            return load_workload(seeded, cluster, skip_invalid=skip_invalid,
                                 throughputs=throughputs)
        except ConfigError as exc:
            raise _quoting_the_spec_as_given(exc, seeded, spec, seed) from None
    check_switch(skip_invalid, "skip_invalid")
    kind, values = _parse_spec(spec)
    cluster = get_cluster(cluster)
    # a bad source named here, not as a job that does not fit or as a trace row's fault
    check_throughput_source(throughputs)
    params = _Params(spec, values)
    if kind == "gavel":
        return _generate(spec, params, cluster, throughputs)
    loader = {"philly": _load_philly, "gavel-trace": _load_gavel_trace,
              "pollux": _load_pollux, "csv": _load_csv}[kind]
    return loader(spec, params, cluster, throughputs, skip_invalid)


def _quoting_the_spec_as_given(exc: ConfigError, seeded: str, spec: str,
                               seed: int) -> ConfigError:
    """``exc``, raised on ``seeded`` (``spec`` with ``seed=`` appended), with its source
    naming ``spec`` as the user wrote it and the seed drawn for it; other errors as they
    are."""
    if type(exc) not in (ConfigError, TraceError) or exc.source != f"workload spec {show(seeded)}":
        return exc
    return type(exc)(exc.reason, source=f"workload spec {show(spec)} (seed {int(seed)})",
                     field=exc.field, line=exc.line)
