"""Trace loaders: ``philly``, ``gavel-trace``, ``pollux`` and ``csv``, and their files.

Each loader reads one file (``path=``, or a default under :func:`traces_dir`) and turns every
row into a job through :mod:`hsched_env.workloads.rows`.
"""

from __future__ import annotations

import csv
import logging
import math
import os
import re
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

from hsched_env.catalog import MAX_BATCH
from hsched_env.cluster import Cluster
from hsched_env.errors import ConfigError, TraceError, UnknownNameError, show, shorten
from hsched_env.files import read_text_file, user_path
from hsched_env.text import counted
from hsched_env.workloads.model_mapping import gavel_job_type_to_model, model_for_gpu_time
from hsched_env.workloads.rows import _assemble, _csv_rows, _header, _records, _Rows
from hsched_env.workloads.spec import _Params
from hsched_env.workloads.types import Workload, _variant

log = logging.getLogger("hsched_env.workloads")

__all__ = ["traces_dir", "POLLUX_APPLICATIONS", "POLLUX_GPU_HOURS", "CSV_REQUIRED",
           "CSV_OPTIONAL"]

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


# ---------------------------------------------------------------------------------- files
def traces_dir() -> Path:
    """Directory of the public traces: ``$HSCHED_TRACES``, else ``<repo>/../shared/traces``
    (in a source checkout: the folder holding this package has a ``pyproject.toml``), else
    ``./shared/traces``.

    Raises:
        ConfigError: None of them exists.
    """
    env = os.environ.get("HSCHED_TRACES")
    if env:
        p = user_path(env, field="HSCHED_TRACES")
        if not p.is_dir():
            raise ConfigError("HSCHED_TRACES is not a directory", source=env)
        return p
    checkout = Path(__file__).resolve().parents[2]
    # (an installed package's parents[3] is inside the Python installation: not tried, nor
    # named in the error)
    tried = ([checkout.parent / "shared" / "traces"]
             if (checkout / "pyproject.toml").is_file() else [])
    tried.append(Path.cwd() / "shared" / "traces")
    for p in tried:
        if p.is_dir():
            return p
    raise ConfigError("cannot find the traces directory; tried " + ", ".join(map(str, tried))
                      + "; set HSCHED_TRACES or pass path=FILE", field="path")


def _trace_file(params: _Params, default: str | None, alternative: str = "") -> Path:
    """The explicit ``path=`` or ``default`` under :func:`traces_dir`; ``alternative``: the
    other way to name the file, for the error without either (``"workload=N"``)."""
    if params.has("path"):
        return user_path(params.values["path"], field="path")
    if default is None:
        other = f" or {alternative}" if alternative else ""
        raise params.error("path", f"missing required key 'path' (path=FILE{other})")
    return traces_dir() / default


def _read_text(path: Path) -> str:
    """File contents as UTF-8 (BOM allowed); clear errors for missing/unreadable/empty."""
    return read_text_file(path, field="path", decode_error=TraceError)


# ---------------------------------------------------------------------------------- philly
_START_RE = re.compile(r"^[0-9]{4}-[0-9]{2}-[0-9]{2}"
                       r"(?:[T ][0-9]{2}:[0-9]{2}(?::[0-9]{2})?)?$")
_TS_RE = re.compile(r"^[0-9]{4}-[0-9]{2}-[0-9]{2}[ T][0-9]{2}:[0-9]{2}:[0-9]{2}$")


def _datetime(text: str, pattern: re.Pattern) -> datetime | None:
    """``text`` as a datetime if it matches ``pattern`` and is a real date, else ``None``."""
    if not pattern.match(text):
        return None
    try:
        return datetime.fromisoformat(text)
    except ValueError:
        return None


def _moment(t) -> str:
    """A window bound as the note prints it: to the minute, or to the second (and its
    fraction) when it has them, so the printed window is the one applied."""
    if t.microsecond:
        return f"{t:%Y-%m-%d %H:%M:%S.%f}".rstrip("0")
    return f"{t:%Y-%m-%d %H:%M:%S}" if t.second else f"{t:%Y-%m-%d %H:%M}"


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
    rows = _Rows(str(path), cluster, throughputs, skip_invalid, max_jobs)
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
            rows.arrived((ts - start).total_seconds(), line)
            duration = rows.number(f[i_dur], "duration", positive=True)
            gpus = rows.integer(f[i_gpus], "num_gpus")
            model = model_for_gpu_time(duration * gpus / 3600.0, f"{ts_text}|{line}")
            rows.add(order=line, name=f"philly-{line}", model=model, batch=None,
                     arrival_s=(ts - start).total_seconds(), arrival_field="timestamp",
                     gpus=gpus, gpus_field="num_gpus", duration_s=duration,
                     duration_field="duration")
    if vc is not None and vc not in vcs:
        names = ", ".join(show(v) if not v.strip() else v for v in sorted(vcs))
        raise params.error("vc", f"no VC {show(vc)} in {path}; VCs: {shorten(names, 300)}")
    window = f"[{_moment(start)}, {_moment(end)})" + (f" in VC {vc}" if vc else "")
    if not rows.jobs and first is not None:
        window += f"; the trace spans {first} to {last}"
    notes = [f"Philly jobs submitted in {window}; models by GPU-time bucket: <1 GPU-h "
             f"resnet18/recommendation, 1-10 bert-large/lm, >=10 resnet50"]
    return _assemble(rows, spec, notes, max_jobs, f"the window {window}", str(path))


# ---------------------------------------------------------------------------------- gavel TSV
def _load_gavel_trace(spec: str, params: _Params, cluster: Cluster, throughputs: Any,
                      skip_invalid: bool) -> Workload:
    if params.has("vc") and params.has("path"):
        raise params.error("vc", "give either path= or vc=, not both")
    vc = params.values["vc"] if params.has("vc") else None
    if vc is not None and (any(c in vc for c in "/\\") or vc in (".", "..")):
        # the name was joined into a path: vc=../../x read any .trace file reachable
        raise params.error("vc", f"a virtual cluster's name, not a path, got {show(vc)}: "
                                 f"give a file with path=")
    default = f"gavel/msr_seed0/{params.values['vc']}.trace" if params.has("vc") else None
    path = _trace_file(params, default, "vc=NAME, a trace of <traces>/gavel/msr_seed0")
    if default is not None and not path.exists() and path.parent.is_dir():
        valid = sorted(p.stem for p in path.parent.glob("*.trace"))
        raise params.error("vc", f"no trace {show(params.values['vc'])} in {path.parent}; "
                                 f"valid: {shorten(', '.join(valid), 300)}")
    max_jobs = params.integer("max_jobs")
    text = _read_text(path)
    rows = _Rows(str(path), cluster, throughputs, skip_invalid, max_jobs)
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
            rows.arrived(arrival_s, order)
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
    return _assemble(rows, spec, notes, max_jobs, "the trace", str(path))


# ---------------------------------------------------------------------------------- pollux
#: ``pollux:workload=N``: the workloads of Pollux's artifact (``pollux/workloads/``).
POLLUX_WORKLOADS = (1, 2, 3, 4)


def _load_pollux(spec: str, params: _Params, cluster: Cluster, throughputs: Any,
                 skip_invalid: bool) -> Workload:
    if params.has("workload") and params.has("path"):
        raise params.error("workload", "give either path= or workload=, not both")
    default = None
    if params.has("workload"):
        k = params.integer("workload")
        if k not in POLLUX_WORKLOADS:
            raise params.error("workload", f"Pollux has workloads "
                               f"{', '.join(map(str, POLLUX_WORKLOADS))}, got {k} (path=FILE "
                               f"reads another workload CSV)")
        default = f"pollux/workloads/workload-{k}.csv"
    path = _trace_file(params, default, "workload=N, one of Pollux's workloads 1-4")
    max_jobs = params.integer("max_jobs")
    text = _read_text(path)
    rows = _Rows(str(path), cluster, throughputs, skip_invalid, max_jobs)
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
            rows.arrived(arrival_s, line)
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
    return _assemble(rows, spec, notes, max_jobs, "the file", str(path))


# ---------------------------------------------------------------------------------- csv
CSV_REQUIRED = ("job_id", "submit_time_s", "duration_s", "num_gpus")
CSV_OPTIONAL = ("model", "gpu_type", "batch")


def _load_csv(spec: str, params: _Params, cluster: Cluster, throughputs: Any,
              skip_invalid: bool) -> Workload:
    path = _trace_file(params, None)
    max_jobs = params.integer("max_jobs")
    text = _read_text(path)
    rows = _Rows(str(path), cluster, throughputs, skip_invalid, max_jobs)
    comment_lines: list[tuple[int, str]] = []
    records = _csv_rows(text, str(path), comments=comment_lines)
    header_line, cols = _header(rows, records, CSV_REQUIRED, CSV_OPTIONAL)
    seen: dict[str, int] = {}
    assigned = 0
    for line, f in _records(rows, len(cols), records):
        with rows.row(line):
            job_id = rows._value(f[cols["job_id"]], "job_id")
            if job_id in seen:
                raise rows.error("job_id", f"duplicate job id {show(job_id)} (first on line "
                                 f"{seen[job_id]})")
            arrival_s = rows.number(f[cols["submit_time_s"]], "submit_time_s")
            rows.arrived(arrival_s, line)
            duration = rows.number(f[cols["duration_s"]], "duration_s", positive=True)
            gpus = rows.integer(f[cols["num_gpus"]], "num_gpus")
            opt = {k: f[cols[k]].strip() if k in cols else "" for k in CSV_OPTIONAL}
            batch = rows.integer(opt["batch"], "batch", hi=MAX_BATCH) if opt["batch"] else None
            if opt["model"]:
                model, type_batch = rows.model(opt["model"], "model")
                if batch is None:
                    batch = type_batch
                elif type_batch is not None and batch != type_batch:
                    raise rows.error("batch", f"batch {batch} contradicts the model column's "
                                     f"job type {show(opt['model'])} (batch {type_batch}): "
                                     f"leave one of them out")
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
    notes = _row_like_comments(comment_lines, header_line, cols, str(path))
    if assigned:
        notes.append(f"assigned models to {assigned} jobs without one by GPU-time bucket")
    return _assemble(rows, spec, notes, max_jobs, "the file", str(path))


def _row_like_comments(comment_lines: list[tuple[int, str]], header_line: int,
                       cols: dict[str, int], source: str) -> list[str]:
    """A note (and a warning) on the comment lines that read as a job whose id starts with
    ``#``: after the header, ``#`` directly followed by the header's number of fields
    (``#1,0,3600,1,resnet50``) — such jobs went missing without a word. Not a commented-out
    header, nor a comment that starts with ``# `` (the usual way to write one)."""
    names = set(cols)
    like = []                                    # (line number, first field)
    for number, line in comment_lines:
        text = line.strip()
        if number < header_line or len(text) < 2 or text[1].isspace():
            continue
        fields = next(csv.reader([text]), [])
        if (len(fields) == len(cols)
                and not {f.strip().lstrip("#").strip().lower() for f in fields} <= names):
            like.append((number, fields[0].strip()))
    if not like:
        return []
    one = len(like) == 1
    where = ", ".join(str(n) for n, _ in like[:5]) + (", …" if len(like) > 5 else "")
    note = (f"{counted(len(like), 'line')} starting with '#' ({'line' if one else 'lines'} "
            f"{where}) {'has' if one else 'have'} the header's {len(cols)} columns but "
            f"{'was read as a comment, not a job' if one else 'were read as comments, not jobs'}"
            f""": quote a job id that starts with '#' ("{shorten(like[0][1], 20)}")""")
    log.warning("%s: %s", source, note)
    return [note]
