"""Built-in cluster presets (``hsched_env/data/clusters.json``) and lookup by name or file."""

from __future__ import annotations

import json
import os
from functools import lru_cache
from importlib import resources
from collections.abc import Mapping
from typing import Any, Union

from hsched_env.cluster.files import _FILE_SUFFIXES, PathLike, cluster_from_dict, load_cluster
from hsched_env.cluster.model import Cluster
from hsched_env.errors import ConfigError, UnknownNameError, shorten
from hsched_env.files import is_file, json_object_no_duplicates, user_path, why_not_a_file

__all__ = ["cluster_presets", "get_cluster"]


# --------------------------------------------------------------------------------------------
# Presets
# --------------------------------------------------------------------------------------------

_PRESET_FILE = "hsched_env/data/clusters.json"


@lru_cache(maxsize=1)
def _preset_specs() -> dict[str, dict[str, Any]]:
    text = resources.files("hsched_env").joinpath("data/clusters.json").read_text("utf-8")
    try:
        raw = json.loads(text, object_pairs_hook=json_object_no_duplicates)
    except (json.JSONDecodeError, ConfigError) as e:  # a packaging bug, not user error
        raise ConfigError(f"cannot parse the preset file: {e}", source=_PRESET_FILE) from None
    if isinstance(raw, list):
        specs = {str(s.get("name", "")).lower(): s for s in raw}
    else:
        specs = {}
        for k, s in raw.items():
            if k.startswith("_"):  # e.g. "_comment"
                continue
            specs[k.lower()] = {"name": k, **s}
    return specs


@lru_cache(maxsize=None)
def _preset(key: str) -> Cluster:
    spec = _preset_specs()[key]
    return cluster_from_dict(spec, source=f"preset {spec.get('name', key)} ({_PRESET_FILE})")


def cluster_presets() -> list[str]:
    """Return the names of the built-in cluster presets, in file order."""
    return [s.get("name", k) for k, s in _preset_specs().items()]


def get_cluster(name_or_path: Union[PathLike, Cluster, Mapping[str, Any]]) -> Cluster:
    """Return a preset by name (case-insensitive) or load a cluster file.

    Args:
        name_or_path: A preset name (see :func:`cluster_presets`), a path to a ``.yaml``,
            ``.yml`` or ``.json`` cluster file, a mapping as in a cluster file (e.g.
            ``Cluster.to_dict()``, as an episode record holds it), or a :class:`Cluster`
            (returned unchanged).

    Returns:
        The cluster.

    Raises:
        UnknownNameError: Neither a preset nor an existing file; lists the presets.
        ConfigError: The file exists but is invalid.
    """
    if isinstance(name_or_path, Cluster):
        return name_or_path
    if isinstance(name_or_path, Mapping):
        return cluster_from_dict(name_or_path, source="<cluster mapping>")
    if not isinstance(name_or_path, (str, os.PathLike)):
        raise ConfigError(f"expected a preset name, a file path, a mapping as in a cluster "
                          f"file or a Cluster, got {type(name_or_path).__name__}",
                          field="cluster")
    text = os.fspath(name_or_path)
    key = text.strip().lower()
    if isinstance(name_or_path, str) and key in _preset_specs():
        return _preset(key)
    p = user_path(text, field="cluster")
    if is_file(p):
        return load_cluster(p)
    if key in _preset_specs():                   # a Path named like a preset: a file is meant
        raise UnknownNameError("cluster", text, cluster_presets(), field="cluster",
                               source=f"no cluster file {text!r} ({why_not_a_file(p)}; a path "
                                      f"is read as a cluster file: for the preset give the "
                                      f"name as a string, get_cluster({key!r}))")
    looks_like_path = p.suffix.lower() in _FILE_SUFFIXES or os.sep in text or "/" in text
    where = {"source": f"{shorten(text)} ({why_not_a_file(p)})"} if looks_like_path else {}
    raise UnknownNameError("cluster", text, cluster_presets(), **where)
