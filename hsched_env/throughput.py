"""Throughput sources: the analytic cost model, or a measured table with the model as fallback.

Both sit behind one interface, ``ThroughputSource``. The planner always prices every strategy
with the analytic model (it also gives the memory footprint); a measured source then replaces the
throughput of the strategies it has an entry for, marks strategies it measured as unable to
run (Gavel's ``0.0``) as infeasible, and bootstraps the rest (as Sia does): on a GPU type with a
positive one-GPU entry, the analytic throughput is scaled by measured / analytic one-GPU
throughput (see ``docs/cost_model.md``, "Measured tables").

Gavel's ``simulation_throughputs.json`` (MIT, Stanford Future Data Systems; shipped in
``hsched_env/data/`` with its notice) gives, per worker type (``k80``, ``p100``, ``v100`` and
``*_unconsolidated``), per ``(job type, scale factor)``, the isolated throughput in steps/s under
plain data parallelism with ``scale factor`` GPUs. One step processes the job's batch, so
samples/s = steps/s × batch (ResNet-50 bs64: 4.39 steps/s on one V100, 17.3 on eight: 3.9×).
"""

from __future__ import annotations

import ast
import json
import logging
import math
from functools import lru_cache
from importlib import resources
from pathlib import Path

from hsched_env.catalog import ModelSpec, get_gpu, model_catalog
from hsched_env.errors import ConfigError, UnknownNameError, is_real_number, show
from hsched_env.files import is_file, json_object_no_duplicates, read_text_file, why_not_a_file

log = logging.getLogger(__name__)

# Gavel worker types → catalog GPU names. Gavel's V100s are 16 GB SXM2 parts.
GAVEL_WORKER_TYPES = {"k80": "K80", "p100": "P100", "v100": "V100-16GB"}


class ThroughputSource:
    """Interface of a throughput source. The base class is the pure analytic model.

    Attributes:
        name: Short name shown in tables and JSON (``"analytic"``, ``"gavel"``).
    """

    name = "analytic"

    def measured_samples_per_s(self, model: ModelSpec, gpu_type: str, gpus: int,
                               consolidated: bool) -> float | None:
        """Measured throughput of plain data parallelism, or ``None`` when not measured.

        Args:
            model: The job's model.
            gpu_type: Canonical GPU type name.
            gpus: Number of GPUs (data-parallel replicas of one GPU each).
            consolidated: Whether all GPUs are inside one node.

        Returns:
            Samples/s, ``0.0`` when measured as unable to run, ``None`` when not in the table.
        """
        return None


#: The names of the analytic cost model alone, no measured table (``get_throughput_source``).
ANALYTIC_NAMES = (None, "", "analytic")
#: The largest throughput a table may give (steps/s): far above any measured training step
#: rate, and small enough that samples/s (× the batch) stays a finite float.
MAX_STEPS_PER_S = 1e9


class MeasuredTable(ThroughputSource):
    """A measured throughput table in Gavel's ``simulation_throughputs.json`` format.

    Args:
        path: The JSON file; ``None`` loads the copy shipped with the package.

    Raises:
        ConfigError: The file is missing, not JSON, or not in Gavel's layout.
    """

    name = "gavel"

    def __init__(self, path: str | Path | None = None) -> None:
        path = Path(path) if path is not None else self.shipped_path()
        source = str(path)
        # read as the other input files are (a byte-order mark allowed, an empty file, a
        # folder or a device named as such; a BOM was refused as "Unexpected UTF-8 BOM")
        text = read_text_file(path, empty_hint="expected a throughput table "
                                               "{worker_type: {...}} in Gavel's layout")
        try:
            raw = json.loads(text, object_pairs_hook=json_object_no_duplicates)
        except ConfigError as exc:             # a key given twice: JSON would keep the last
            raise ConfigError(exc.reason, source=source, field=exc.field) from None
        except json.JSONDecodeError as exc:
            raise ConfigError(f"cannot read throughput table: invalid JSON: {exc.msg}",
                              source=source, line=exc.lineno) from None
        except (ValueError, RecursionError) as exc:
            # integers beyond Python's digit limit, nesting too deep
            raise ConfigError(f"cannot read throughput table: {str(exc)[:200]}",
                              source=source) from None
        if not isinstance(raw, dict):
            raise ConfigError("expected an object {worker_type: {...}}", source=source)
        if not raw:
            raise ConfigError("the table is empty: expected an object {worker_type: {...}} "
                              "with at least one worker type", source=source)
        self._table: dict[tuple[str, bool, str, int], float] = {}
        written_as: dict[tuple[str, bool, str, int], str] = {}      # each row's first spelling
        for worker, rows in raw.items():
            base = worker.removesuffix("_unconsolidated")
            if base not in GAVEL_WORKER_TYPES:
                raise ConfigError(f"unknown worker type {worker!r}; expected one of "
                                  f"{sorted(GAVEL_WORKER_TYPES)} (optionally _unconsolidated)",
                                  source=source, field=worker)
            consolidated = not worker.endswith("_unconsolidated")
            if not isinstance(rows, dict):
                raise ConfigError("expected an object of job rows", source=source, field=worker)
            for key, entry in rows.items():
                field = f"{worker}.{key}"
                try:
                    job_type, scale = ast.literal_eval(key)
                    if not isinstance(job_type, str):
                        raise TypeError("job type")
                except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
                    raise ConfigError("expected a key \"('<job type>', <scale factor>)\"",
                                      source=source, field=field) from None
                if not isinstance(entry, dict) or "null" not in entry:
                    raise ConfigError("expected an object with a 'null' (isolated) throughput",
                                      source=source, field=field)
                value = entry["null"]
                if not is_real_number(value):      # not true (1.0), not "4.5"
                    raise ConfigError(f"the 'null' (isolated) throughput must be a number of "
                                      f"steps/s, got {show(value)}", source=source,
                                      field=f"{field}.null")
                try:
                    steps = float(value)
                except OverflowError:          # an integer beyond floats: past the bound too
                    steps = math.inf
                if not (isinstance(scale, int) and not isinstance(scale, bool) and scale > 0
                        and math.isfinite(steps) and 0 <= steps <= MAX_STEPS_PER_S):
                    raise ConfigError(f"bad scale factor or throughput ({scale!r}, {steps!r}): "
                                      f"a whole number of GPUs > 0 and 0 to "
                                      f"{MAX_STEPS_PER_S:g} steps/s", source=source, field=field)
                row = (GAVEL_WORKER_TYPES[base], consolidated, job_type, scale)
                if row in written_as:
                    raise ConfigError(f"the row of {job_type!r} on {scale} GPU(s) is given twice "
                                      f"(first as {written_as[row]!r})", source=source,
                                      field=field)
                written_as[row] = f"{worker}.{key}"
                self._table[row] = steps
        if not self._table:
            raise ConfigError("the table has no rows: every worker type's object is empty",
                              source=source)
        unused = sorted({key[2] for key in self._table} - _catalog_job_types(
            {key[2] for key in self._table}))
        if unused:
            # not an error: a table may carry job types the catalog has no model for; but a
            # misspelled one would otherwise fall back to the analytic model unnoticed
            log.warning("throughput table %s: %d job type(s) match no model of the catalog and "
                        "are never used (misspelled?): %s", source, len(unused),
                        ", ".join(map(repr, unused[:5])) + (", ..." if len(unused) > 5 else ""))

    @staticmethod
    def shipped_path() -> Path:
        """Path of the copy of Gavel's table shipped with the package."""
        return Path(str(resources.files("hsched_env.data").joinpath(
            "simulation_throughputs.json")))

    def steps_per_s(self, job_type: str, gpu_type: str, gpus: int,
                    consolidated: bool = True) -> float | None:
        """Raw table entry (steps/s), or ``None``."""
        return self._table.get((gpu_type, consolidated, job_type, gpus))

    def measured_samples_per_s(self, model, gpu_type, gpus, consolidated):
        if model.gavel_job_type is None:
            return None
        steps = self.steps_per_s(model.gavel_job_type, gpu_type, gpus, consolidated)
        if steps is None and gpus == 1:
            steps = self.steps_per_s(model.gavel_job_type, gpu_type, 1, not consolidated)
        return None if steps is None else steps * model.global_batch


def _catalog_job_types(job_types: set[str]) -> set[str]:
    """Those of ``job_types`` that a catalog model reads: its Gavel job type, or — for the
    batched ones (``"ResNet-50 (batch size 64)"``) — the same name at any batch size."""
    named = {m.gavel_job_type for m in model_catalog().values() if m.gavel_job_type}
    families = {t.split(" (batch size ")[0] for t in named if " (batch size " in t}
    return {t for t in job_types
            if t in named or (" (batch size " in t and t.split(" (batch size ")[0] in families)}


@lru_cache(maxsize=None)
def _shipped_gavel_table() -> MeasuredTable:
    return MeasuredTable()


#: Tables read from a path, by file version (``_file_version``); a few are kept.
_read_tables: dict[tuple, "MeasuredTable"] = {}
_READ_TABLES_MAX = 16


def _file_version(path: Path) -> tuple | None:
    """What identifies the file's content without reading it: its resolved path, device,
    inode, size and change times (the status change time moves on every write, even one
    that keeps the modification time); ``None`` when it cannot be read."""
    try:
        st = path.stat()
        return (str(path.resolve()), st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns,
                st.st_ctime_ns)
    except (OSError, RuntimeError):
        return None


def _measured_table_at(path: Path) -> "MeasuredTable":
    """The table at ``path``, read once per version of the file (``_file_version``; errors
    name the path as given). A table never changes after it is read: callers share it."""
    version = _file_version(path)
    table = _read_tables.get(version) if version is not None else None
    if table is None:
        table = MeasuredTable(path)
        if version is not None:
            if len(_read_tables) >= _READ_TABLES_MAX:
                _read_tables.clear()
            _read_tables[version] = table
    return table


def get_throughput_source(name: str | ThroughputSource | None) -> ThroughputSource:
    """Resolve ``"analytic"`` (default), ``"gavel"`` or a path to a table in Gavel's format."""
    if isinstance(name, ThroughputSource):
        return name
    if name in ANALYTIC_NAMES:
        return ThroughputSource()
    if name == "gavel":
        return _shipped_gavel_table()
    check_throughput_source(name)         # an existing file from here on
    # one parse per file version: the planner resolves its source once per job, and a table
    # of Gavel's size takes ~20 ms to read
    return _measured_table_at(Path(name))


def check_throughput_source(name: str | ThroughputSource | None,
                            field: str = "throughputs") -> None:
    """That ``name`` is ``"analytic"``, ``"gavel"`` or an existing file (not read here: the
    table's own errors come when it is), else an error naming ``field``: for a name with a
    folder or a suffix, meant as a file, what is wrong with that path ("no such file", "a
    folder, not a file", a broken link); for another word, the valid names."""
    if isinstance(name, ThroughputSource) or name in ANALYTIC_NAMES or name == "gavel":
        return
    text = str(name)
    if is_file(Path(text)):
        return
    if ("/" in text or "\\" in text or "." in text) and len(text) < 4096:
        raise ConfigError(f"unknown throughput source {show(text)}: "
                          f"{why_not_a_file(Path(text))}; valid: analytic, gavel or a table "
                          f"file in Gavel's format", field=field)
    raise UnknownNameError("throughput source", text, ["analytic", "gavel", "<path.json>"],
                           field=field)


def gavel_gpu_types() -> list[str]:
    """Catalog names of the GPU types Gavel's table covers."""
    return [get_gpu(n).name for n in GAVEL_WORKER_TYPES.values()]
