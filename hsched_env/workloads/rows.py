"""Row validation and assembly, shared by the trace loaders and the generator.

A loader reads its file through :func:`_csv_rows`, :func:`_header` and :func:`_records`,
validates each row inside ``with rows.row(line):`` of a :class:`_Rows` (a
:class:`~hsched_env.errors.TraceError` there is raised, or counted under ``skip_invalid``),
finishes it with :meth:`_Rows.add` (capacity, reference GPUs, work or duration) and builds the
:class:`~hsched_env.workloads.types.Workload` with :func:`_assemble`.
"""

from __future__ import annotations

import contextlib
import csv
import io
import logging
import math
from collections.abc import Iterator
from dataclasses import dataclass
from decimal import Decimal, InvalidOperation
from typing import Any

from hsched_env.catalog import MAX_BATCH, get_gpu, get_model
from hsched_env.cluster import Cluster
from hsched_env.errors import (ConfigError, TraceError, UnknownNameError, decimal_float, show,
                               shorten)
from hsched_env.text import counted
from hsched_env.workloads.model_mapping import gavel_job_type_to_model
from hsched_env.workloads.reference import _fit_reference, reference_gpu
from hsched_env.workloads.types import (MAX_SECONDS, MIN_DURATION_S, Job, Workload, _variant,
                                        gpus_over_capacity, missing_gpu_type)

# The package's logger name, as before it was split into modules ("hsched_env.workloads: ...").
log = logging.getLogger("hsched_env.workloads")

#: Skipped rows (``skip_invalid``) logged one by one, with their errors, at INFO.
MAX_SKIPS_LOGGED = 20
#: Unknown header columns named in the error (the rest are counted).
MAX_COLUMNS_LISTED = 5


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
                 skip_invalid: bool, max_jobs: int | None = None) -> None:
        self.source, self.cluster, self.throughputs = source, cluster, throughputs
        self.skip_invalid = skip_invalid
        self.skipped = 0
        self.jobs: list[_Pending] = []
        self.line = 0
        # with max_jobs (and without skip_invalid): the rows' errors, held until
        # ``_assemble`` knows whether each row is among the jobs kept — (arrival, order,
        # error) in file order, arrival None when the row failed before it was read; a row
        # past the jobs kept is not loaded, so its error does not stop the load
        self.defer = max_jobs is not None and not skip_invalid
        self.deferred: list[tuple[float | None, int | None, TraceError]] = []
        self._arrival: tuple[float, int] | None = None

    def error(self, field: str | None, message: str, line: int | None = None) -> TraceError:
        return TraceError(message, source=self.source, line=self.line if line is None else line,
                          field=field)

    @contextlib.contextmanager
    def row(self, line: int) -> Iterator[None]:
        """Validate one row: a TraceError inside is raised, or counted under skip_invalid."""
        self.line = line
        self._arrival = None
        try:
            yield
        except TraceError as exc:
            if self.defer:
                self.deferred.append((*(self._arrival or (None, None)), exc))
                return
            if not self.skip_invalid:
                raise
            self.skipped += 1
            if self.skipped <= MAX_SKIPS_LOGGED:
                log.info("skipping invalid row: %s", exc)
            elif self.skipped == MAX_SKIPS_LOGGED + 1:
                log.info("%s: more invalid rows skipped; not listed", self.source)

    def arrived(self, arrival_s: float, order: int) -> None:
        """The row's arrival and sort order (``add``'s ``order``), as soon as the loader has
        read them: a later error of the row can then be held until ``_assemble`` knows
        whether ``max_jobs`` keeps the row."""
        self._arrival = (float(arrival_s), order)

    # ---- field parsers (all raise TraceError naming the field)
    def _value(self, text: str, field: str) -> str:
        text = text.strip()
        if not text:
            raise self.error(field, "empty value")
        return text

    def _finite(self, text: str, field: str) -> tuple[str, float]:
        text = self._value(text, field)
        try:
            value = decimal_float(text)
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
        """A whole number read exactly from its decimal text (``4``, ``4.0``, ``1e2``): through
        a float, ``4.0000000000000001`` passed as 4 and 2^53 + 1 as 2^53."""
        text, _ = self._finite(text, field)
        try:
            value = Decimal(text.strip())
            whole = value == value.to_integral_value()
        except InvalidOperation:           # an exponent past Decimal's range (0e99999999999…)
            whole = False
        if not whole:
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
        """A catalog GPU type (name or alias) the cluster has: its canonical name."""
        text = self._value(text, field)
        try:
            name = get_gpu(text).name
        except UnknownNameError as exc:
            raise self.error(field, str(exc)) from None
        problem = missing_gpu_type(self.cluster, name)
        if problem:
            raise self.error(field, problem)
        return name

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
            raise self.error(arrival_field, f"arrival {arrival_s:.12g} s is after the limit "
                             f"of {MAX_SECONDS:.12g} s")
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
        if duration_s < MIN_DURATION_S:
            raise self.error(duration_field, f"duration {duration_s:g} s on the reference GPUs "
                             f"is below the limit of {MIN_DURATION_S:g} s")
        self.jobs.append(_Pending(order, name, model, batch, float(arrival_s), n,
                                  float(duration_s), float(work_samples), gpu_type, gpus))

    def _check_capacity(self, gpus: int, gpu_type: str | None, field: str, why: str) -> None:
        problem = gpus_over_capacity(self.cluster, gpus, gpu_type, why)
        if problem:
            raise self.error(field, problem)


def _assemble(rows: _Rows, spec: str, notes: list[str], max_jobs: int | None,
              what: str, source_file: str | None = None) -> Workload:
    pending = sorted(rows.jobs, key=lambda p: (p.arrival_s, p.order))
    if rows.deferred:
        _check_deferred(rows, pending, max_jobs, notes)
    cut = max_jobs is not None and len(pending) > max_jobs
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
        # the rows are checked before max_jobs keeps the first jobs: a skipped row may lie
        # past the jobs kept, so the note says where it counted
        notes.append(f"skipped {rows.skipped} invalid rows" + (
            f" (counted before max_jobs kept the first {len(pending)} jobs: some may lie "
            f"past them)" if cut else ""))
        log.warning("%s: skipped %d invalid rows (hsched -v, or logging at INFO, lists the "
                    "first %d with their errors)", rows.source, rows.skipped, MAX_SKIPS_LOGGED)
    jobs = tuple(Job(job_id=i, name=p.name, model=p.model, batch=p.batch,
                     arrival_s=p.arrival_s, requested_gpus=p.gpus, duration_s=p.duration_s,
                     work_samples=p.work_samples, gpu_type=p.gpu_type)
                 for i, p in enumerate(pending))
    for note in notes:
        log.info("%s: %s", spec, note)
    return Workload(jobs=jobs, spec=spec, skipped=rows.skipped, notes=tuple(notes),
                    source_file=source_file)


def _check_deferred(rows: _Rows, pending: list[_Pending], max_jobs: int,
                    notes: list[str]) -> None:
    """Raise the first (in the file) held error of a row that ``max_jobs`` would keep —
    among the first ``max_jobs`` rows by (arrival, order), valid or not — or of a row that
    failed before its arrival was read (it cannot be placed), so the error is the one the
    load without ``max_jobs`` raises whenever such a row is among the jobs kept; the
    invalid rows past them are not loaded: a note counts them."""
    keys = sorted([(p.arrival_s, p.order, False) for p in pending]
                  + [(a, o, True) for a, o, _ in rows.deferred if a is not None])
    kept = {(a, o) for a, o, bad in keys[:max_jobs] if bad}
    for arrival, order, exc in rows.deferred:          # in file order
        if arrival is None or (arrival, order) in kept:
            raise exc
    past = counted(len(rows.deferred), "invalid row")
    first = rows.deferred[0][2]
    notes.append(f"{past} past the first {counted(max_jobs, 'job')} (max_jobs) not loaded; "
                 f"the first: {first}")
    log.warning("%s: %s past the first %s (max_jobs) not loaded; the first: %s",
                rows.source, past, counted(max_jobs, "job"), first)


def _csv_rows(text: str, source: str, *,
              comments: list[tuple[int, str]] | None = None
              ) -> Iterator[tuple[int, list[str]]]:
    """(first line number, fields) of each non-blank CSV record; with a ``comments`` list,
    lines whose first character other than blanks is ``#`` are skipped before the CSV is
    read, and added to it as (line number, text) as they are met (a quoted ``"#1"`` is a
    field, not a comment)."""
    numbers: list[int] = []              # the file's line number of each line the reader gets

    def lines() -> Iterator[str]:
        for number, line in enumerate(io.StringIO(text, newline=""), start=1):
            if comments is not None and line.lstrip().startswith("#"):
                comments.append((number, line))
                continue
            numbers.append(number)
            yield line

    reader = csv.reader(lines())

    def line_of(index: int) -> int:      # the file line of the reader's line ``index`` (1-based)
        return numbers[index - 1] if 0 < index <= len(numbers) else (numbers[-1] if numbers
                                                                     else 1)
    while True:
        start_index = reader.line_num + 1
        try:
            row = next(reader)
        except StopIteration:
            return
        except csv.Error as exc:
            raise TraceError(f"malformed CSV: {exc}", source=source,
                             line=line_of(start_index)) from None
        start = line_of(start_index)
        if not row or (len(row) == 1 and not row[0].strip()):
            continue
        if any("\n" in f or "\r" in f for f in row):
            # a quoted field ran over line ends: in a job trace, an unbalanced double quote
            # (csv reads on to the next quote, possibly the end of the file)
            end = line_of(reader.line_num)
            span = (f"runs from line {start} to line {end}"
                    if end > start else f"on line {start} is not closed")
            raise TraceError(f"a quoted field {span}: an unbalanced double quote? (job "
                             f"traces have no multi-line fields)", source=source, line=start)
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
        if not name:
            raise rows.error(f"column {i + 1}", f"column {i + 1} of the header has no name "
                             f"(a trailing comma, or a column left unnamed?)", line)
        if name in cols:
            raise rows.error(name, f"duplicate column {show(name)}", line)
        cols[name] = i
    unknown = [n for n in cols if n not in required + optional]
    if unknown:
        listed = ", ".join(show(n, 30) for n in unknown[:MAX_COLUMNS_LISTED])
        if len(unknown) > MAX_COLUMNS_LISTED:
            listed += f" and {len(unknown) - MAX_COLUMNS_LISTED} more"
        missing = [n for n in required if n not in cols]
        hint = (f"; missing {', '.join(missing)}: is this a job trace of this kind?"
                if missing else "")
        raise rows.error(shorten(unknown[0], 30), f"unknown column(s) {listed}; allowed: "
                         f"{', '.join(required + optional)}{hint}", line)
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
