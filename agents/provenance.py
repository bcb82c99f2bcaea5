"""Where a run's numbers were made: ``environment_record`` (Python, the machine, its processor
and the versions of the libraries that decide a training's weights and an evaluation's
schedules and times). ``hsched evaluate`` writes it to ``metrics.json`` (``environment``) and
``hsched train`` to ``summary.json`` (``environment``), so that a figure or a ranker file can
be traced to the set-up that made it (a ranker file's bytes depend on the torch, NumPy and
HiGHS versions; agents/data/README.md)."""

from __future__ import annotations

import functools
import json
import os
import platform
from importlib import metadata
from pathlib import Path

#: The distributions whose versions are recorded (``None``: not installed). NumPy, SciPy and
#: HiGHS decide the schedules; torch the ranker's weights and inference; Gymnasium and SB3
#: the environments' wrappers and the RL agents.
RECORDED_LIBRARIES = ("numpy", "scipy", "highspy", "torch", "gymnasium", "stable-baselines3",
                      "sb3-contrib")


def library_versions() -> dict[str, str | None]:
    """The installed version of each of ``RECORDED_LIBRARIES`` (``None``: not installed), from
    the package metadata, without importing the libraries."""
    out = {}
    for name in RECORDED_LIBRARIES:
        try:
            out[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            out[name] = None
    return out


def cpu_model(cpuinfo: str | Path = "/proc/cpuinfo") -> str | None:
    """The processor's model name (Linux's ``cpuinfo``), else ``platform.processor()``, else
    ``None``."""
    try:
        for line in Path(cpuinfo).read_text(errors="replace").splitlines():
            key, _, value = line.partition(":")
            if key.strip() == "model name" and value.strip():
                return value.strip()
    except OSError:
        pass
    return platform.processor() or None


#: The environment variables that size the numeric libraries' thread pools (OpenMP: torch and
#: HiGHS' parallel parts; the BLAS libraries under NumPy and SciPy). They change timings, not
#: schedules.
THREAD_VARIABLES = ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS")


def thread_settings() -> dict:
    """The CPUs this process may run on (``cpus``) and each of ``THREAD_VARIABLES`` as set
    (``None``: unset, the library's default)."""
    try:
        cpus = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):               # not on Linux
        cpus = os.cpu_count()
    return {"cpus": cpus, **{name: os.environ.get(name) for name in THREAD_VARIABLES}}


#: The keys of ``environment_record`` that change timings only: left out where runs are
#: compared for the set-up that made their schedules (``agents.sweep``; Ray starts its workers
#: with ``OMP_NUM_THREADS=1`` unless told otherwise).
TIMING_ONLY_KEYS = ("threads",)


def environment_record() -> dict:
    """Python's version, the machine's architecture, its processor, ``library_versions()``
    and ``thread_settings()`` (``threads``), as one JSON-ready dict: read once per process (a
    sweep records it with every run), a new dict each call (a caller may edit its copy)."""
    return json.loads(_environment_json())


def same_set_up(a: dict, b: dict) -> bool:
    """Whether two ``environment_record``s name the same Python, machine, processor and
    libraries (``TIMING_ONLY_KEYS`` aside)."""
    return ({k: v for k, v in a.items() if k not in TIMING_ONLY_KEYS}
            == {k: v for k, v in b.items() if k not in TIMING_ONLY_KEYS})


@functools.lru_cache(maxsize=1)
def _environment_json() -> str:
    return json.dumps({"python": platform.python_version(), "machine": platform.machine(),
                       "cpu": cpu_model(), "libraries": library_versions(),
                       "threads": thread_settings()})
