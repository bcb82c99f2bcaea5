"""Cluster files and dicts: parsing and validation into a :class:`Cluster`.

Cluster files (YAML, read with ``yaml.safe_load`` semantics, or JSON)::

    name: my-lab                  # optional, defaults to the file stem
    description: "..."            # optional free text
    inter_node_bw_gbps: 12.5      # default NIC bandwidth per node, GB/s (default 12.5)
    nodes:
      - gpu_type: A100-80GB       # any GPU catalog name or alias
        gpus_per_node: 8          # 1..16
        count: 4                  # number of such nodes
        inter_node_bw_gbps: 200   # optional per-pool override
        intra_node_bw_gbps: 600   # optional; default from the GPU catalog
        name: a100-pod            # optional pool name; default "<gpu type>-x<gpus per node>"

Every problem is reported as a :class:`~hsched_env.errors.ConfigError` naming the file, the
field (e.g. ``nodes[2].gpu_type``) and, for YAML files, the line.
"""

from __future__ import annotations

import difflib
import json
import os
from pathlib import Path
from typing import Any, Mapping, Union

from hsched_env.cluster.model import (DEFAULT_INTER_NODE_BW_GBPS, MAX_GPUS_PER_NODE, MAX_NODES,
                                      Cluster, NodePool, _check_bw, _check_int, _get_gpu)
from hsched_env.errors import ConfigError, UnknownNameError, show
from hsched_env.files import (json_object_no_duplicates, read_text_file, value_error_text,
                              yaml_error, yaml_key_lines)

__all__ = ["cluster_from_dict", "load_cluster"]

_TOP_KEYS = ("name", "description", "inter_node_bw_gbps", "nodes")
_NODE_KEYS = ("gpu_type", "gpus_per_node", "count", "inter_node_bw_gbps",
              "intra_node_bw_gbps", "name")
_FILE_SUFFIXES = (".yaml", ".yml", ".json")

PathLike = Union[str, "os.PathLike[str]"]


# --------------------------------------------------------------------------------------------
# From dicts and files
# --------------------------------------------------------------------------------------------

def _unknown_key_error(key: Any, allowed: tuple[str, ...], path: str, source: str,
                       line: int | None) -> ConfigError:
    guess = difflib.get_close_matches(str(key), allowed, n=1)
    hint = f" (did you mean {show(guess[0])}?)" if guess else ""
    return ConfigError(f"unknown key {show(key)}{hint}; allowed keys: {', '.join(allowed)}",
                       source=source, field=path, line=line)


def cluster_from_dict(d: Mapping[str, Any], source: str = "<dict>", *,
                      default_name: str | None = None,
                      lines: Mapping[str, int] | None = None) -> Cluster:
    """Build a :class:`Cluster` from the file-format mapping.

    Args:
        d: Mapping with keys ``nodes`` (required), ``name``, ``description``,
            ``inter_node_bw_gbps`` (see the module docstring).
        source: Where ``d`` came from, used in error messages (file name, ``"preset x"``).
        default_name: Name used when ``d`` has none (the file stem for files); falls back to
            ``source``.
        lines: Optional map from field path (``"nodes[1].count"``) to 1-based line number,
            used to put line numbers in errors.

    Returns:
        The validated cluster.

    Raises:
        ConfigError: Any invalid field; the message names ``source`` and the field path.
        UnknownNameError: An unknown GPU type (a ConfigError; lists the valid names).
    """
    lines = lines or {}

    def where(path: str) -> dict[str, Any]:
        return {"source": source, "field": path, "line": lines.get(path)}

    if not isinstance(d, Mapping):
        raise ConfigError(f"a cluster description must be a mapping with a 'nodes' list, got "
                          f"{type(d).__name__}", source=source, line=lines.get(""))
    for key in d:
        if key not in _TOP_KEYS:
            raise _unknown_key_error(key, _TOP_KEYS, str(key), source,
                                     lines.get(f"{key}:key", lines.get(str(key))))

    name = d.get("name")
    if name is None:
        name = default_name if default_name is not None else source
    if not isinstance(name, str) or not name.strip():
        raise ConfigError(f"name must be a non-empty string, got {show(name)}", **where("name"))
    description = d.get("description", "")
    if description is None:
        description = ""
    if not isinstance(description, str):
        raise ConfigError(f"description must be a string, got {type(description).__name__}",
                          **where("description"))
    default_inter = DEFAULT_INTER_NODE_BW_GBPS
    if d.get("inter_node_bw_gbps") is not None:
        default_inter = _check_bw(d["inter_node_bw_gbps"], "inter_node_bw_gbps",
                                  **where("inter_node_bw_gbps"))

    if "nodes" not in d:
        raise ConfigError("missing required key 'nodes' (a list of node pools)",
                          **where("nodes"))
    nodes = d["nodes"]
    if not isinstance(nodes, (list, tuple)):
        raise ConfigError(f"'nodes' must be a list of node pools, got "
                          f"{type(nodes).__name__}", **where("nodes"))
    if not nodes:
        raise ConfigError("'nodes' is empty: a cluster needs at least one node pool",
                          **where("nodes"))

    pools: list[NodePool] = []
    used_names: set[str] = set()
    total_nodes = 0
    for i, nd in enumerate(nodes):
        base = f"nodes[{i}]"
        if not isinstance(nd, Mapping):
            raise ConfigError(f"each node pool must be a mapping, got {type(nd).__name__}",
                              **where(base))
        for key in nd:
            if key not in _NODE_KEYS:
                raise _unknown_key_error(key, _NODE_KEYS, f"{base}.{key}", source,
                                         lines.get(f"{base}.{key}:key",
                                                   lines.get(f"{base}.{key}")))
        for req in ("gpu_type", "gpus_per_node", "count"):
            if req not in nd:
                raise ConfigError(f"missing required key {req!r}", source=source,
                                  field=f"{base}.{req}", line=lines.get(base))
        gpu_name = nd["gpu_type"]
        if not isinstance(gpu_name, str):
            raise ConfigError(f"gpu_type must be a string, got {show(gpu_name)}",
                              **where(f"{base}.gpu_type"))
        try:
            gpu = _get_gpu(gpu_name)
        except UnknownNameError as e:
            raise UnknownNameError("GPU type", gpu_name, list(e.valid),
                                   **where(f"{base}.gpu_type")) from None
        gpn = _check_int(nd["gpus_per_node"], "gpus_per_node", lo=1, hi=MAX_GPUS_PER_NODE,
                         **where(f"{base}.gpus_per_node"))
        count = _check_int(nd["count"], "count (number of nodes)", lo=1, hi=MAX_NODES,
                           **where(f"{base}.count"))
        total_nodes += count
        if total_nodes > MAX_NODES:
            raise ConfigError(f"{total_nodes} nodes in pools 0..{i}; a cluster has at most "
                              f"{MAX_NODES}", **where(f"{base}.count"))
        # Optional keys given as null (YAML "~" or an empty value) mean "use the default".
        inter = default_inter
        if nd.get("inter_node_bw_gbps") is not None:
            inter = _check_bw(nd["inter_node_bw_gbps"], "inter_node_bw_gbps",
                              **where(f"{base}.inter_node_bw_gbps"))
        intra = None
        if nd.get("intra_node_bw_gbps") is not None:
            intra = _check_bw(nd["intra_node_bw_gbps"], "intra_node_bw_gbps",
                              **where(f"{base}.intra_node_bw_gbps"))
        pool_name = nd.get("name")
        if pool_name is None:                     # absent or null: the default name
            pool_name = ""
        elif not isinstance(pool_name, str) or not pool_name.strip():
            raise ConfigError(f"name must be a non-empty string (leave it out for the default "
                              f"name), got {show(pool_name)}", **where(f"{base}.name"))
        pool_name = pool_name.strip()
        if pool_name:
            if pool_name in used_names:
                raise ConfigError(f"duplicate pool name {show(pool_name)}",
                                  **where(f"{base}.name"))
        else:
            stem = f"{gpu.name.lower()}-x{gpn}"
            pool_name, k = stem, 2
            while pool_name in used_names:
                pool_name, k = f"{stem}-{k}", k + 1
        used_names.add(pool_name)
        try:
            pools.append(NodePool(gpu_type=gpu.name, gpus_per_node=gpn, num_nodes=count,
                                  intra_bw_gbps=intra, inter_bw_gbps=inter, name=pool_name))
        except ConfigError as e:  # e.g. the catalog lacks a default intra-node bandwidth
            key = {"intra_bw_gbps": "intra_node_bw_gbps",
                   "inter_bw_gbps": "inter_node_bw_gbps"}.get(e.field or "", e.field)
            raise ConfigError(e.reason, **where(f"{base}.{key}" if key else base)) from None
    return Cluster(name=name.strip(), pools=tuple(pools), description=description.strip())


def _parse_text(text: str, source: str, is_json: bool) -> tuple[Any, dict[str, int]]:
    """Parse YAML or JSON text; return the data and the path -> line map."""
    if is_json:
        try:
            return json.loads(text, object_pairs_hook=json_object_no_duplicates), {}
        except json.JSONDecodeError as e:
            raise ConfigError(f"invalid JSON: {e.msg} (column {e.colno})", source=source,
                              line=e.lineno) from None
        except ConfigError as e:         # a duplicate key: JSON's hook cannot say where
            try:
                yaml_key_lines(text)             # JSON is YAML: the same check, with the
            except ConfigError as located:       # key's path and line
                if located.line is not None:
                    raise ConfigError(located.reason, source=source, field=located.field,
                                      line=located.line) from None
            except Exception:                    # (this JSON is no YAML PyYAML reads)
                pass
            raise ConfigError(e.reason, source=source, field=e.field) from None
        except ValueError as e:  # an integer literal beyond Python's digit limit
            raise ConfigError(f"invalid JSON: {value_error_text(e)}", source=source) from None
        except RecursionError:
            raise ConfigError("invalid JSON: nested too deeply", source=source) from None
    import yaml

    try:
        data = yaml.safe_load(text)
        lines = yaml_key_lines(text)
    except yaml.YAMLError as e:
        raise yaml_error(e, source) from None
    except ConfigError as e:
        raise ConfigError(e.reason, source=source, field=e.field, line=e.line) from None
    except ValueError as e:  # a constructor failed: too many digits, a date like 2001-13-45
        raise ConfigError(f"invalid YAML: {value_error_text(e)}", source=source) from None
    except RecursionError:
        raise ConfigError("invalid YAML: nested too deeply", source=source) from None
    return data, lines


def load_cluster(path: PathLike) -> Cluster:
    """Load and validate a cluster file (``.yaml``, ``.yml`` or ``.json``).

    Args:
        path: The file. The cluster name defaults to the file stem.

    Returns:
        The validated cluster.

    Raises:
        ConfigError: Missing or unreadable file, unsupported extension, non-UTF-8 bytes,
            empty file, syntax error, or any invalid field (with file, field and line).
    """
    if not isinstance(path, (str, os.PathLike)):
        raise ConfigError(f"load_cluster takes a cluster file's path, got "
                          f"{type(path).__name__} (a mapping: cluster_from_dict)", field="path")
    p = Path(path)
    source = str(p)
    suffix = p.suffix.lower()
    if suffix not in _FILE_SUFFIXES:
        hint = ("; a preset's name goes to get_cluster" if not p.suffix and not p.exists()
                else "")
        raise ConfigError(f"unsupported cluster file extension {show(p.suffix)}; use one of "
                          f"{', '.join(_FILE_SUFFIXES)}{hint}", source=source)
    text = read_text_file(p, empty_hint="expected a mapping with a 'nodes' list")
    data, lines = _parse_text(text, source, is_json=suffix == ".json")
    if data is None:
        raise ConfigError("file contains no data (only comments?); expected a mapping with a "
                          "'nodes' list", source=source)
    return cluster_from_dict(data, source=source, default_name=p.stem, lines=lines)
