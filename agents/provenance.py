"""Where a run's numbers were made: ``environment_record`` (Python, the machine, its processor
and the versions of the libraries that decide a training's weights and an evaluation's
schedules and times). ``hsched evaluate`` writes it to ``metrics.json`` (``environment``) and
``hsched train`` to ``summary.json`` (``environment``), so that a figure or a ranker file can
be traced to the set-up that made it (a ranker file's bytes depend on the torch, NumPy and
HiGHS versions; agents/data/README.md)."""

from __future__ import annotations

import functools
import json
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


def environment_record() -> dict:
    """Python's version, the machine's architecture, its processor and
    ``library_versions()``, as one JSON-ready dict: read once per process (a sweep records it
    with every run), a new dict each call (a caller may edit its copy)."""
    return json.loads(_environment_json())


@functools.lru_cache(maxsize=1)
def _environment_json() -> str:
    return json.dumps({"python": platform.python_version(), "machine": platform.machine(),
                       "cpu": cpu_model(), "libraries": library_versions()})
