"""Catalog models for trace jobs: Gavel job types and, for traces without models, GPU-time.

``"ResNet-50 (batch size 64)"`` maps to ``("resnet50", 64)`` (:func:`gavel_job_type_to_model`);
a Philly or CSV row without a model gets one by its GPU-hours, as Pollux and Sia do
(:func:`model_for_gpu_time`).
"""

from __future__ import annotations

import re
import zlib
from functools import lru_cache

from hsched_env.catalog import model_catalog, model_files_in_use
from hsched_env.errors import UnknownNameError

__all__ = ["model_for_gpu_time", "gavel_job_type_to_model"]


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


def _gavel_type_index() -> tuple[dict[str, str], dict[str, str]]:
    return _gavel_type_index_in(model_files_in_use())


@lru_cache(maxsize=8)
def _gavel_type_index_in(catalog: str) -> tuple[dict[str, str], dict[str, str]]:
    """(base name with batch → model, exact name → model) from the Gavel types of the catalog
    in use (``catalog``: its key, ``HSCHED_MODELS``)."""
    batched, exact = {}, {}
    for m in model_catalog().values():
        if m.gavel_job_type is None:
            continue
        if " (batch size " in m.gavel_job_type:
            batched[m.gavel_job_type.split(" (batch size ")[0]] = m.name
        else:
            exact[m.gavel_job_type] = m.name
    return batched, exact


_GAVEL_TYPE_RE = re.compile(r"^(.+?) \(batch size ([0-9]{1,18})\)$")


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
