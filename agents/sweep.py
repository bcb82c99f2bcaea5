"""Sweeps of independent runs on a backend: ``Task`` (one keyed run: scenario, policy, seed,
the configuration that decides its result, and the function that computes it), ``run_sweep``
(every task on a ``SerialBackend`` — in this process, one after the other — or a
``RayBackend`` — one Ray task each, on a local Ray instance or a cluster), ``RunStore`` (one
JSON file per finished run under an output folder's ``runs/``, written as each run completes,
so a killed sweep resumes without redoing them) and ``Outcome`` (what became of a task:
``ok``, ``resumed`` or ``failed`` with its error). Used by ``hsched evaluate --backend ray``
(``agents.evaluate``) and ``hsched compare --backend ray``.

Keys. A run is keyed by (scenario, policy, seed) and ``config_hash``, a SHA-256 of the key and
the task's configuration (JSON), so a run file is reused by ``resume`` only when everything
that decides the run is unchanged; run files of another configuration are left alone and
counted (``SweepResult.stale``). The hash covers the inputs a caller puts in ``config``, not
the code (see "Code"): after changing the simulator or a policy, start a new sweep (or
``overwrite``).

Code. ``CODE_FINGERPRINT`` hashes this project's sources and data files as this process loaded
them; every outcome carries the fingerprint of the process that ran it (run files keep it), and
``SweepResult.other_code`` counts the runs made by other code — a worker started after the
sources were edited, or a resumed run file from before an edit — whose results may differ.
Likewise every outcome carries its worker's ``environment_record()`` (Python, machine,
processor, library versions; run files keep it), and ``SweepResult.other_environment``
counts the runs made where those differ from this process's.

Failures. A task that raises, or whose worker process dies, is retried ``retries`` times
(default once), then recorded as ``failed`` with its error (``Outcome.error``, and a run file
with ``"status": "failed"``, which ``resume`` runs again); the other tasks go on. Ray's own
retries are off (``max_retries=0``), so every attempt is counted here.

Backends. ``RayBackend(num_cpus=None, address=None)``: ``ray.init()`` on this machine with
``num_cpus`` CPUs (default all cores), or ``address`` (``"auto"``, ``"ray://host:10001"``,
``"host:6379"``) to join a running cluster — as does ``RAY_ADDRESS`` in the environment when
no ``address`` is given (Ray reads it; then ``num_cpus`` is refused, as with ``address``); an
already initialised Ray (``ray.init`` called by the caller) is used as it is and left running.
One CPU per task. Task arguments that are not
plain values are put in Ray's object store once and shared by the tasks that use them.
Worker output goes to Ray's session logs, not to this process's stdout (``--json`` stays
pure); the warnings a task logs are logged again here when it finishes. Ray is an optional
dependency: ``pip install 'heterosched[ray]'``.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import re
import signal
import threading
import time
from collections import deque
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

from tqdm import tqdm

from agents.provenance import environment_record, same_set_up
from hsched_env.catalog import MODELS_ENV, model_files_in_use, model_sources
from hsched_env.errors import ConfigError, UnknownNameError, shorten, show

#: ``--backend`` values of ``hsched evaluate`` / ``hsched compare``.
BACKENDS = ("serial", "ray")
#: The folder of the run files inside a sweep's output folder.
RUNS_DIR = "runs"
#: The results file a sweep's output folder holds beside ``RUNS_DIR`` (the CLI's
#: ``metrics.json``): ``RunStore.prepare`` refuses a resume that matches none of the run files
#: there while it exists (nothing would be resumed; the results would replace an earlier run's).
RESULTS_FILE = "metrics.json"
#: ``"format"`` of a run file.
RUN_FORMAT = "heterosched-run/1"
#: Retries of a failed task (exception or dead worker) before it is recorded as failed.
DEFAULT_RETRIES = 1
_PLAIN = (str, int, float, bool, type(None))
#: The packages and file kinds ``CODE_FINGERPRINT`` covers.
_CODE_PACKAGES = ("hsched_env", "lp_baseline", "agents", "hsched_cli")
_CODE_SUFFIXES = (".py", ".json", ".yml", ".yaml")


def _code_fingerprint() -> str:
    root = Path(__file__).resolve().parents[1]
    h = hashlib.sha256()
    for package in _CODE_PACKAGES:
        for path in sorted((root / package).rglob("*")):
            if (path.suffix in _CODE_SUFFIXES and "__pycache__" not in path.parts
                    and path.is_file()):
                h.update(path.relative_to(root).as_posix().encode("utf-8") + b"\0")
                h.update(path.read_bytes() + b"\0")
    return h.hexdigest()[:16]


#: 16 hex digits over this project's sources and data files (``*.py``, ``*.json``, ``*.yml`` of
#: ``hsched_env``, ``lp_baseline``, ``agents``, ``hsched_cli``) when this module was imported:
#: about the code this process runs.
CODE_FINGERPRINT = _code_fingerprint()


# ---------------------------------------------------------------------------- tasks
@dataclass(frozen=True)
class Task:
    """One run of a sweep. ``fn(*args)`` computes it and returns a JSON-ready dict (the run's
    payload; floats may be NaN). ``config``: a JSON-ready dict of everything else that decides
    the result (settings, input fingerprints); with the key it makes ``config_hash``."""

    scenario: str
    policy: str
    seed: int
    config: dict
    fn: Callable = field(repr=False, compare=False)
    args: tuple = field(default=(), repr=False, compare=False)
    #: raises on a finished run's payload the sweep cannot use (a run file edited or written
    #: by other code): ``RunStore.read`` then runs the task again instead of resuming it
    check: Callable | None = field(default=None, repr=False, compare=False)

    @property
    def key(self) -> tuple[str, str, int]:
        return (self.scenario, self.policy, int(self.seed))

    @property
    def config_hash(self) -> str:
        return config_hash({"scenario": self.scenario, "policy": self.policy,
                            "seed": int(self.seed), "config": self.config})

    def describe(self) -> str:
        return f"{self.scenario} {self.policy} seed {self.seed}"


def _unusable(path: Path, why: str) -> None:
    """``RunStore.read``'s answer for a run file it cannot resume from: a warning naming it
    (the run is made again and its file replaced), and ``None``."""
    logging.getLogger(__name__).warning("run file %s: %s; the run is made again", path, why)
    return None


def config_hash(config: dict) -> str:
    """16 hex digits of the SHA-256 of ``config`` as canonical JSON (sorted keys)."""
    text = json.dumps(config, sort_keys=True, separators=(",", ":"), default=str)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:16]


def fingerprint(obj) -> str:
    """16 hex digits of the SHA-256 of ``repr(obj)``: for inputs whose ``repr`` shows all
    they hold (a ``Cluster``, a workload's job list), so a changed trace file or cluster
    file changes the configuration hash even when its name does not."""
    return hashlib.sha256(repr(obj).encode("utf-8")).hexdigest()[:16]


def model_files_record(jobs) -> dict:
    """What decides a run of ``jobs`` besides its inputs when some of them are models of
    one's own (``HSCHED_MODELS``): ``{"model_files": [file_fingerprint, ...]}`` of the files
    that define them (sorted: where a file lies does not count), or ``{}`` (so a sweep's run
    files keep their configuration hash when its jobs use none). An edited model file is
    then a changed configuration, run again on ``--resume``."""
    sources = model_sources()
    if not sources:
        return {}
    files = {sources[m] for m in {job.model for job in jobs} if m in sources}
    return {"model_files": sorted(file_fingerprint(f) for f in files)} if files else {}


def file_fingerprint(path: str | Path) -> str | None:
    """16 hex digits of the SHA-256 of a file's bytes (``None``: no such file)."""
    try:
        data = Path(path).read_bytes()
    except OSError:
        return None
    return hashlib.sha256(data).hexdigest()[:16]


@dataclass
class Outcome:
    """What became of a task: ``status`` ``"ok"`` (ran now), ``"resumed"`` (read from its
    run file) or ``"failed"`` (``error``: the last attempt's exception, in one line);
    ``attempts``: how many times it ran now (0 when resumed); ``elapsed_s``: from its first
    submission to its result (time queued behind other tasks included); ``code``: the
    ``CODE_FINGERPRINT`` of the process that ran it (``None``: unknown)."""

    task: Task
    status: str
    payload: dict | None = None
    error: str | None = None
    attempts: int = 0
    elapsed_s: float = 0.0
    code: str | None = None
    #: where it ran (``agents.provenance.environment_record`` of the worker; ``None``:
    #: unknown, e.g. a run file written before session 43)
    environment: dict | None = None

    @property
    def ok(self) -> bool:
        return self.status != "failed"


@dataclass
class SweepResult:
    """``outcomes`` in the order of the tasks; ``stale``: run files in the store that no task
    of this sweep matched (another configuration); ``wall_s``: the sweep's wall time."""

    outcomes: list[Outcome]
    stale: int = 0
    wall_s: float = 0.0

    @property
    def other_code(self) -> int:
        """Finished runs (run now or resumed) made by code other than this process's
        (``CODE_FINGERPRINT``): sources edited during or since the sweep."""
        return sum(o.ok and o.code != CODE_FINGERPRINT for o in self.outcomes)

    @property
    def other_environment(self) -> int:
        """Finished runs (run now or resumed) made where the Python, machine, processor or
        library versions differ from this process's (``environment_record``; thread settings
        aside, ``same_set_up``): a sweep resumed after an upgrade, or Ray workers unlike the
        driver. Runs that recorded none are not counted."""
        here = environment_record()
        return sum(o.ok and o.environment is not None and not same_set_up(o.environment, here)
                   for o in self.outcomes)

    @property
    def failed(self) -> list[Outcome]:
        return [o for o in self.outcomes if o.status == "failed"]

    @property
    def resumed(self) -> int:
        return sum(o.status == "resumed" for o in self.outcomes)


def error_text(exc: BaseException) -> str:
    """One line: the exception's type and message (Ray's wrappers unwrapped)."""
    cause = getattr(exc, "cause", None)              # ray.exceptions.RayTaskError
    if isinstance(cause, BaseException):
        exc = cause
    text = str(exc).strip().splitlines()
    msg = text[0] if text else ""
    name = type(exc).__name__
    if name in ("WorkerCrashedError", "NodeDiedError", "ActorDiedError",
                "LocalRayletDiedError"):
        msg = "the worker process died while running the task"
    if "No module named" in msg and name == "RaySystemError":
        msg += (" (a Ray worker could not import what the task needs: every module of an "
                "agent must be importable on the workers, e.g. on their PYTHONPATH)")
    return f"{name}: {msg}" if msg else name


# ---------------------------------------------------------------------------- run files
def _slug(text: str, limit: int = 48) -> str:
    s = re.sub(r"[^A-Za-z0-9._+-]+", "-", str(text)).strip("-.")
    return (s or "x")[:limit]


class RunStore:
    """The run files of a sweep: ``<folder>/<scenario>__<policy>__<seed>__<hash>.json``, one
    per finished (``"status": "ok"``) or failed run, each written whole (a temporary file, then
    a rename) as soon as the run completes."""

    def __init__(self, folder: str | Path) -> None:
        self.folder = Path(folder)

    def path(self, task: Task) -> Path:
        return self.folder / (f"{_slug(task.scenario)}__{_slug(task.policy)}__"
                              f"{int(task.seed)}__{task.config_hash}.json")

    def files(self) -> list[Path]:
        """The run files in the folder: named as ``path`` names them (another file there, a
        user's ``notes.json``, is neither counted nor deleted)."""
        if not self.folder.is_dir():
            return []
        return sorted(p for p in self.folder.glob("*.json")
                      if p.is_file() and _RUN_FILE_NAME.fullmatch(p.name))

    def read(self, task: Task) -> dict | None:
        """The finished run of ``task`` (its whole record), when its file exists, is readable
        and matches the task's key and configuration hash with status ``ok``, and the task's
        ``check`` takes its payload; else ``None`` (a file there that is not such a run is
        named in a warning: it runs again)."""
        path = self.path(task)
        if not path.is_file():
            return None
        try:
            record = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError) as exc:
            return _unusable(path, f"not readable as JSON ({type(exc).__name__})")
        if not (isinstance(record, dict) and record.get("format") == RUN_FORMAT
                and [record.get("scenario"), record.get("policy"), record.get("seed")]
                == list(task.key) and record.get("config_hash") == task.config_hash):
            return _unusable(path, "not this run's record")
        if record.get("status") != "ok":
            return None                          # a failed run: run again, as documented
        if "payload" not in record:
            return _unusable(path, "no payload")
        if task.check is not None:
            try:
                task.check(record["payload"])
            except Exception as exc:             # noqa: BLE001 (whatever the file holds)
                return _unusable(path, f"its payload cannot be read: {type(exc).__name__}: "
                                       f"{shorten(str(exc), 120)}")
        return record

    def write(self, outcome: Outcome) -> Path:
        t = outcome.task
        record = {"format": RUN_FORMAT, "scenario": t.scenario, "policy": t.policy,
                  "seed": int(t.seed), "config_hash": t.config_hash, "config": t.config,
                  "status": outcome.status, "attempts": outcome.attempts,
                  "error": outcome.error, "elapsed_s": outcome.elapsed_s,
                  "code": outcome.code, "environment": outcome.environment,
                  "finished": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
                  "payload": outcome.payload}
        self.folder.mkdir(parents=True, exist_ok=True)
        path = self.path(t)
        tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
        tmp.write_text(json.dumps(record, indent=1, default=_json_default), encoding="utf-8")
        os.replace(tmp, path)
        return path

    def prepare(self, tasks: list[Task], resume: bool, overwrite: bool) -> int:
        """Check the folder before a sweep: earlier run files need ``resume`` (reuse the
        matching finished ones) or ``overwrite`` (``discard_earlier`` deletes them once the
        backend has started); a ``ConfigError`` otherwise. Also a ``ConfigError``: the folder
        is a file, or ``resume`` when no run file there is of a task of this sweep (named by
        its key and configuration hash, ``path``) while the output folder above it holds a
        ``RESULTS_FILE`` (nothing would be resumed, and the sweep's results would replace an
        earlier run's). Returns the number of files no task matches (kept, unused)."""
        check_resume_overwrite(resume, overwrite)
        self.check_folder()
        files = self.files()
        if not files or overwrite:
            return 0
        if not resume:
            raise ConfigError(f"{str(self.folder)!r} holds {len(files)} run file(s) of an "
                              f"earlier sweep: pass --resume to reuse the finished runs "
                              f"(those of the same configuration), --overwrite to discard "
                              f"them, or choose another --out", field="--resume")
        mine = {self.path(t).name for t in tasks}
        stale = sum(p.name not in mine for p in files)
        results = self.folder.parent / RESULTS_FILE
        if stale == len(files) and self.folder.name == RUNS_DIR and results.exists():
            # nothing of this sweep to resume: its results would replace another run's
            raise ConfigError(f"--resume: none of the {len(files)} run file(s) in "
                              f"{str(self.folder)!r} is a run of this sweep (they are of "
                              f"another configuration or command), so nothing would be "
                              f"resumed, and this sweep's results would replace the "
                              f"{RESULTS_FILE} of an earlier run in "
                              f"{str(self.folder.parent)!r}: choose another --out (or pass "
                              f"--overwrite instead of --resume to replace it and discard "
                              f"those run files)", field="--out")
        return stale

    def check_folder(self) -> None:
        """A ``ConfigError`` naming ``--out`` when the run files' folder is a file (a sweep
        then failed after its first run was computed)."""
        if os.path.lexists(self.folder) and not self.folder.is_dir():
            raise ConfigError(f"{str(self.folder)!r} is a file, not a folder: a sweep keeps its "
                              f"run files in the folder {RUNS_DIR}/ of its output folder; move "
                              f"the file away or choose another --out", field="--out")

    def discard_earlier(self) -> None:
        """Delete the run files of an earlier sweep (``--overwrite``), and the earlier
        results (``RESULTS_FILE``) of the output folder above ``RUNS_DIR``: called once the
        backend has started, so that a backend that cannot start leaves them in place. (The
        results went with the run files: a sweep interrupted after it began left the earlier
        run's ``metrics.json`` beside the new partial run files, readable as this run's.)"""
        for p in self.files():
            p.unlink()
        results = self.folder.parent / RESULTS_FILE
        if self.folder.name == RUNS_DIR and results.is_file():
            results.unlink()


def check_resume_overwrite(resume: bool, overwrite: bool) -> None:
    """``resume`` with ``overwrite``: refused (one reuses the finished runs the other
    discards; overwrite won, silently)."""
    if resume and overwrite:
        raise ConfigError("--resume reuses the finished runs that --overwrite discards: give "
                          "one of them", field="--overwrite")


def _sigterm_handler():
    """This process's SIGTERM handler, ``None`` outside the main thread or when it was set
    from C (then there is nothing to put back)."""
    if threading.current_thread() is not threading.main_thread():
        return None
    return signal.getsignal(signal.SIGTERM)


def _restore_sigterm(handler) -> None:
    if handler is not None:
        signal.signal(signal.SIGTERM, handler)


def _deliver_sigterm(handler) -> None:
    """A SIGTERM that Ray's handler took, given to ``handler`` (the one before it): a Python
    handler is called (it may raise: the CLI's raises ``Terminated``); the default one ends
    the process as the signal would have. Returns where the handler does, and for an
    ignored signal or a handler set from C (``None``: nothing to call)."""
    if callable(handler):
        _restore_sigterm(handler)
        handler(signal.SIGTERM, None)
    elif handler == signal.SIG_DFL:
        signal.signal(signal.SIGTERM, signal.SIG_DFL)
        os.kill(os.getpid(), signal.SIGTERM)


#: A run file's name (``RunStore.path``): scenario, policy, seed and configuration hash.
_RUN_FILE_NAME = re.compile(r".+__.+__-?[0-9]+__[0-9a-f]{16}\.json")


def _json_default(value):
    import numpy as np
    if isinstance(value, np.generic):
        return value.item()
    if isinstance(value, np.ndarray):
        return value.tolist()
    raise TypeError(f"not JSON-serialisable: {type(value).__name__}")


# ---------------------------------------------------------------------------- backends
class SerialBackend:
    """Every task in this process, one after the other (in submission order)."""

    name = "serial"

    def __init__(self) -> None:
        self._queue: deque = deque()

    def start(self) -> None:
        pass

    def stop(self) -> None:
        self._queue.clear()

    def submit(self, task: Task, token) -> None:
        self._queue.append((task, token))

    def next_done(self):
        """``(token, payload, error, code, environment)`` of the next finished task."""
        task, token = self._queue.popleft()
        try:
            return token, task.fn(*task.args), None, CODE_FINGERPRINT, environment_record()
        except Exception as exc:                  # noqa: BLE001 (recorded as the run's error)
            return token, None, error_text(exc), CODE_FINGERPRINT, environment_record()

    def pending(self) -> int:
        return len(self._queue)


def _user_paths() -> list[str]:
    """The directories of ``sys.path`` outside the interpreter's own (and the environment's
    site-packages), plus those of ``PYTHONPATH``, in order."""
    import sys
    own = {os.path.realpath(p) for p in (sys.prefix, sys.base_prefix, sys.exec_prefix)}
    out = []
    for p in [*sys.path, *os.environ.get("PYTHONPATH", "").split(os.pathsep)]:
        real = os.path.realpath(p or os.getcwd())
        if not os.path.isdir(real) or real in out:
            continue
        if any(real == o or real.startswith(o + os.sep) for o in own):
            continue
        out.append(real)
    return out


class _Keep(logging.Handler):
    def __init__(self) -> None:
        super().__init__(level=logging.WARNING)
        self.records: list[tuple[str, int, str]] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.records.append((record.name, record.levelno, record.getMessage()))


def _call(fn, *args):
    """The body of every Ray task: ``fn(*args)``, with the warnings it logged (the driver
    logs them again: a worker's own output stays in Ray's session logs), the worker's
    ``CODE_FINGERPRINT`` and its ``environment_record()``."""
    keep = _Keep()
    root = logging.getLogger()
    root.addHandler(keep)
    try:
        value = fn(*args)
    finally:
        root.removeHandler(keep)
    return value, keep.records, CODE_FINGERPRINT, environment_record()


def ray_module():
    """``ray``, or a ``ConfigError`` saying how to install it."""
    try:
        import ray
    except ImportError as exc:
        raise ConfigError(f"--backend ray needs Ray, which cannot be imported ({exc}): "
                          f"pip install 'heterosched[ray]' (or scripts/setup.sh)",
                          field="--backend") from None
    return ray


class RayBackend:
    """One Ray task per run (one CPU each). ``num_cpus``: the CPUs of a local Ray instance
    (default: all cores); ``address``: join a running cluster instead (``num_cpus`` must then
    be ``None``: the cluster's nodes decide). A Ray already initialised by the caller is used
    as it is and left running."""

    name = "ray"

    def __init__(self, num_cpus: int | None = None, address: str | None = None) -> None:
        if num_cpus is not None and (isinstance(num_cpus, bool) or int(num_cpus) != num_cpus
                                     or num_cpus < 1):
            raise ConfigError(f"must be a positive integer, got {num_cpus!r}",
                              field="--num-cpus")
        if num_cpus is not None and address is not None:
            raise ConfigError("--num-cpus sizes a local Ray instance; a cluster joined with "
                              "--address has the CPUs its nodes offer", field="--num-cpus")
        self.num_cpus = None if num_cpus is None else int(num_cpus)
        self.address = address
        self._joined()                       # --num-cpus with RAY_ADDRESS: refused at once
        self._ray = None
        self._owned = False
        self._remote = None
        self._pending: dict = {}           # ObjectRef -> token
        self._ready: deque = deque()       # finished, not yet collected
        self._puts: dict[int, tuple] = {}  # id(arg) -> (arg, ObjectRef)

    def _joined(self) -> tuple[str, str] | None:
        """The cluster ``ray.init`` will join and what named it (``"--address"`` or
        ``"RAY_ADDRESS"``: Ray reads that environment variable when no address, or
        ``"auto"``, is given), or ``None``: a local instance is started. ``--num-cpus`` with
        ``RAY_ADDRESS`` is a ``ConfigError`` (Ray refuses ``num_cpus`` when joining)."""
        env = os.environ.get(RAY_ADDRESS_VARIABLE, "").strip()
        env = None if env in ("", "local") else env       # "local": Ray starts its own
        if env is not None and self.address in (None, "auto"):
            if self.num_cpus is not None:
                raise ConfigError(f"--num-cpus sizes a local Ray instance, but "
                                  f"{RAY_ADDRESS_VARIABLE}={env!r} in the environment makes "
                                  f"Ray join that cluster, which has the CPUs its nodes offer: "
                                  f"drop --num-cpus, or unset {RAY_ADDRESS_VARIABLE} to start "
                                  f"a local instance", field="--num-cpus")
            return env, RAY_ADDRESS_VARIABLE
        if self.address is not None:
            return self.address, "--address"
        return None

    def init_kwargs(self) -> dict:
        """The keyword arguments ``start`` passes to ``ray.init``: ``num_cpus`` only for a
        local instance (Ray refuses it when joining a cluster, ``--address`` or
        ``RAY_ADDRESS``)."""
        return self._init_kwargs(self._joined())

    def _init_kwargs(self, joined: tuple[str, str] | None) -> dict:
        """``init_kwargs`` for the cluster ``joined`` (``_joined()``'s answer)."""
        kw = {"include_dashboard": False, "log_to_driver": False,
              "logging_level": logging.WARNING}
        if self.address is not None:
            kw["address"] = self.address
        if joined is None:
            kw["num_cpus"] = self.num_cpus or os.cpu_count() or 1
        return kw

    def start(self) -> None:
        ray = ray_module()
        self._ray = ray
        if not ray.is_initialized():
            joined = self._joined()           # read once: RAY_ADDRESS decides kw and errors
            kw = self._init_kwargs(joined)
            if joined is not None:
                _check_reachable(*joined)
            # A local instance's workers inherit this environment: with PYTHONPATH set to the
            # user's entries of sys.path (pytest's rootdirs, a script's sys.path.insert) they
            # import what this process can (a runtime_env would start new workers instead).
            saved = os.environ.get("PYTHONPATH")
            if joined is None:
                os.environ["PYTHONPATH"] = os.pathsep.join(_user_paths())
            sigterm = _sigterm_handler()
            try:
                ray.init(**kw)
            except SystemExit as exc:
                # SIGTERM while ray.init runs: Ray's own handler (installed before it
                # returns) exits with the signal's number; the signal was this process's,
                # so it goes to the handler there was before (the CLI's: Terminated, exit
                # 143); one that returns (or ignores it) leaves Ray not started: said so
                if exc.code != signal.SIGTERM:
                    raise
                _deliver_sigterm(sigterm)
                raise ConfigError("SIGTERM arrived while Ray was starting (ray.init), and "
                                  "Ray's own handler stopped it: start the sweep again",
                                  field="--backend") from None
            except (ConnectionError, ValueError, RuntimeError) as exc:
                if joined is None:
                    where, flag = "a local Ray instance", "--backend"
                else:
                    where = f"the Ray cluster at {joined[0]!r}" + (
                        f" ({RAY_ADDRESS_VARIABLE} in the environment)"
                        if joined[1] == RAY_ADDRESS_VARIABLE else "")
                    flag = joined[1]
                raise ConfigError(f"cannot start or join {where}: {error_text(exc)}",
                                  field=flag) from None
            finally:
                if saved is None:
                    os.environ.pop("PYTHONPATH", None)
                else:
                    os.environ["PYTHONPATH"] = saved
                # ray.init installs its own SIGTERM handler (sys.exit): the caller's (the
                # CLI's, which unwinds a sweep as Ctrl-C does) comes back
                _restore_sigterm(sigterm)
            self._owned = True
        options = {"num_cpus": 1, "max_retries": 0}
        files = model_files_in_use()
        if files and not self._owned:
            # models of the user's own (HSCHED_MODELS): a local instance started above
            # inherits them with this environment; a Ray joined or started before gets them
            # in its tasks' (a worker of their own; the files must exist at the same paths
            # on every node)
            options["runtime_env"] = {"env_vars": {MODELS_ENV: files}}
        self._remote = ray.remote(**options)(_call)

    def stop(self) -> None:
        ray = self._ray
        if ray is None:
            return
        if not self._owned:                        # someone else's Ray: stop what is left of ours
            for ref in list(self._pending):        # (our own instance: shutdown ends it all;
                try:                               # force-cancelling there races Ray's core)
                    ray.cancel(ref)
                except Exception:                 # noqa: BLE001 (best effort on the way out)
                    pass
        self._pending.clear()
        self._ready.clear()
        self._puts.clear()
        if self._owned and ray.is_initialized():
            ray.shutdown()
        self._owned = False

    def _arg(self, value):
        if isinstance(value, _PLAIN):
            return value
        held = self._puts.get(id(value))
        if held is None or held[0] is not value:
            held = (value, self._ray.put(value))
            self._puts[id(value)] = held
        return held[1]

    def submit(self, task: Task, token) -> None:
        ref = self._remote.remote(self._arg(task.fn), *(self._arg(a) for a in task.args))
        self._pending[ref] = token

    def next_done(self):
        ray = self._ray
        if not self._ready:                        # wait for one, then take all that are done
            pending = list(self._pending)
            ready, rest = ray.wait(pending, num_returns=1, fetch_local=False)
            if rest:
                more, _ = ray.wait(rest, num_returns=len(rest), timeout=0, fetch_local=False)
                ready += more
            self._ready.extend(ready)
        ref = self._ready.popleft()
        token = self._pending.pop(ref)
        try:
            # a worker on an older copy of this module returns no environment: its run is
            # kept (and counted as other code), not failed on the unpacking
            value, records, code, *environment = ray.get(ref)
            environment = environment[0] if environment else None
        except Exception as exc:                  # noqa: BLE001 (RayTaskError, a dead worker)
            return token, None, error_text(exc), None, None
        for name, level, message in records:
            logging.getLogger(name).log(level, "%s", message)
        return token, value, None, code, environment

    def pending(self) -> int:
        return len(self._pending)


#: Seconds ``RayBackend`` waits for a TCP connection to ``--address`` before it gives up
#: (Ray itself retries an unreachable head for minutes, printing only its own warnings).
CONNECT_TIMEOUT_S = 5.0
#: The environment variable ``ray.init`` joins a cluster at when given no address (or
#: ``"auto"``); ``"local"`` there starts a local instance.
RAY_ADDRESS_VARIABLE = "RAY_ADDRESS"


def _check_reachable(address: str, flag: str = "--address") -> None:
    """That a Ray head answers at ``address`` (``host:port`` or ``ray://host:port``;
    ``"auto"`` and other forms are left to Ray), within ``CONNECT_TIMEOUT_S``, else a
    ``ConfigError`` on ``flag`` (``--address``, or ``RAY_ADDRESS`` when the environment gave
    the address). "Answers" means: it accepts a TCP connection and speaks gRPC, as Ray's GCS
    and its client server do (``_speaks_grpc``); Ray itself retries a port that speaks
    something else for many minutes. With TLS on (``RAY_USE_TLS``) only the connection is
    checked."""
    import socket
    text = str(address).strip()
    rest = text[len("ray://"):] if text.startswith("ray://") else text
    host, sep, port = rest.rpartition(":")
    if not sep or not host or not port.isdigit() or not port.isascii():
        return
    host = host.strip("[]")                               # [::1]:6379
    source = (f" ({RAY_ADDRESS_VARIABLE} in the environment)"
              if flag == RAY_ADDRESS_VARIABLE else "")
    try:
        with socket.create_connection((host, int(port)), timeout=CONNECT_TIMEOUT_S) as sock:
            answer = None if _tls_on() else _speaks_grpc(sock)
    except OSError as exc:
        raise ConfigError(f"no Ray cluster answers at {text!r}{source} (a TCP connection to "
                          f"{host}:{port} failed within {CONNECT_TIMEOUT_S:g} s: "
                          f"{exc.strerror or exc}); is its head running (ray start --head)?",
                          field=flag) from None
    if answer is not None:
        raise ConfigError(f"no Ray cluster answers at {text!r}{source}: {host}:{port} accepts "
                          f"connections but does not speak gRPC, as a Ray head's GCS port "
                          f"(6379 by default; 10001 for ray://) does ({answer}); is it another "
                          f"service's port, the dashboard's (8265) for instance?",
                          field=flag)


#: What an HTTP/2 client sends first: the connection preface and an empty SETTINGS frame
#: (RFC 9113, section 3.4); gRPC runs over HTTP/2.
_HTTP2_CLIENT_PREFACE = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n" + bytes(3) + b"\x04" + bytes(5)
#: The byte of an HTTP/2 frame header that holds the frame's type, and SETTINGS' type.
_FRAME_TYPE_BYTE, _SETTINGS = 3, 0x04


def _speaks_grpc(sock) -> str | None:
    """``None`` if the server on ``sock`` (connected) speaks HTTP/2, as every gRPC server
    does: sent an HTTP/2 client preface, it answers with a SETTINGS frame (its own preface,
    RFC 9113 section 3.4) within ``CONNECT_TIMEOUT_S``; else what it did instead."""
    import socket
    sock.settimeout(CONNECT_TIMEOUT_S)
    header = b""
    try:
        sock.sendall(_HTTP2_CLIENT_PREFACE)
        while len(header) < 9:                       # an HTTP/2 frame header: 9 bytes
            chunk = sock.recv(9 - len(header))
            if not chunk:
                break
            header += chunk
    except socket.timeout:
        if not header:
            return f"it sent nothing within {CONNECT_TIMEOUT_S:g} s"
    except OSError as exc:
        return f"the exchange failed: {exc.strerror or exc}"
    if len(header) == 9 and header[_FRAME_TYPE_BYTE] == _SETTINGS:
        return None
    if not header:
        return "it closed the connection"
    return f"it answered {header!r}"


def _tls_on() -> bool:
    """Whether Ray's TLS is switched on in the environment (``RAY_USE_TLS``, as Ray reads
    it): its gRPC then runs inside TLS, which ``_speaks_grpc`` does not speak."""
    return os.environ.get("RAY_USE_TLS", "0").lower() in ("1", "true")


def make_backend(backend="serial", num_cpus: int | None = None, address: str | None = None):
    """A backend object from ``"serial"`` / ``"ray"`` (or a backend object, returned as it
    is). ``num_cpus`` / ``address`` belong to ``"ray"``."""
    if not isinstance(backend, str):
        if not all(callable(getattr(backend, m, None))
                   for m in ("start", "stop", "submit", "next_done")):
            raise ConfigError(f"a backend is 'serial', 'ray' or a backend object (start, "
                              f"stop, submit, next_done: SerialBackend, RayBackend), got "
                              f"{show(backend)}",
                              field="--backend")
        return backend
    if backend == "serial":
        if num_cpus is not None or address is not None:
            flag = "--num-cpus" if num_cpus is not None else "--address"
            raise ConfigError(f"{flag} belongs to the Ray backend: give it with --backend ray",
                              field=flag)
        return SerialBackend()
    if backend == "ray":
        return RayBackend(num_cpus=num_cpus, address=address)
    raise UnknownNameError("backend", backend, list(BACKENDS), field="--backend")


# ---------------------------------------------------------------------------- the sweep
def run_sweep(tasks: list[Task], backend="serial", store: RunStore | None = None,
              resume: bool = False, overwrite: bool = False,
              retries: int = DEFAULT_RETRIES, progress: bool | None = None,
              desc: str = "sweep", on_outcome: Callable[[Outcome], None] | None = None
              ) -> SweepResult:
    """Run every task on ``backend`` (``"serial"``, ``"ray"`` or a backend object) and
    return their outcomes in task order. ``store``: write each finished or failed run to its
    run file as it completes; with ``resume``, tasks whose finished run file matches are read
    from it, not run (``RunStore.prepare`` checks the folder first: ``resume`` or
    ``overwrite`` is needed when it holds run files). ``retries``: extra attempts of a failed
    task. ``progress``: a tqdm bar of finished tasks on stderr (``None``: only on a
    terminal). ``on_outcome``: called with each outcome as it arrives (resumed ones first)."""
    keys = {}
    for t in tasks:
        if t.key in keys:
            raise ConfigError(f"two runs of the sweep have the same scenario, policy and seed "
                              f"({t.describe()}): give each policy once", field="--policies")
        keys[t.key] = t
    if retries < 0:
        raise ConfigError(f"must be >= 0, got {retries}", field="retries")
    if resume and store is None:
        raise ConfigError("resuming needs the output folder of the earlier sweep (--out)",
                          field="--resume")
    backend = make_backend(backend)
    t_start = time.perf_counter()
    stale = store.prepare(tasks, resume, overwrite) if store is not None else 0
    outcomes: list[Outcome | None] = [None] * len(tasks)
    todo = []
    for i, t in enumerate(tasks):
        record = store.read(t) if (store is not None and resume) else None
        if record is not None:
            outcomes[i] = Outcome(t, "resumed", payload=record["payload"],
                                  elapsed_s=float(record.get("elapsed_s") or 0.0),
                                  code=record.get("code"),
                                  environment=record.get("environment"))
        else:
            todo.append(i)
    bar = tqdm(total=len(tasks), initial=len(tasks) - len(todo), desc=desc, unit="run",
               disable=(None if progress is None else not progress), leave=False)
    if on_outcome is not None:
        for o in outcomes:
            if o is not None:
                on_outcome(o)
    attempts = {i: 0 for i in todo}
    started: dict[int, float] = {}
    failed = 0
    try:
        if todo:
            backend.start()
            if overwrite and store is not None:
                store.discard_earlier()
            for i in todo:
                attempts[i] += 1
                started[i] = time.perf_counter()
                backend.submit(tasks[i], i)
            while backend.pending():
                i, payload, error, code, environment = backend.next_done()
                t = tasks[i]
                if error is not None and attempts[i] <= retries:
                    logging.getLogger(__name__).warning(
                        "%s: attempt %d failed (%s); retrying", t.describe(), attempts[i], error)
                    attempts[i] += 1
                    backend.submit(t, i)
                    continue
                elapsed = time.perf_counter() - started[i]
                if error is None:
                    o = Outcome(t, "ok", payload=payload, attempts=attempts[i], elapsed_s=elapsed,
                                code=code, environment=environment)
                else:
                    o = Outcome(t, "failed", error=error, attempts=attempts[i], elapsed_s=elapsed,
                                code=code, environment=environment)
                    failed += 1
                    bar.set_postfix_str(f"{failed} failed")
                if store is not None:
                    store.write(o)
                outcomes[i] = o
                if on_outcome is not None:
                    on_outcome(o)
                bar.update(1)
    finally:
        bar.close()
        backend.stop()
    return SweepResult([o for o in outcomes if o is not None], stale=stale,
                       wall_s=time.perf_counter() - t_start)


def plain_json(value):
    """``value`` with numpy scalars and arrays as Python numbers and lists, tuples as lists
    and dict keys as strings: what it reads back as from a run file (NaN stays NaN)."""
    import numpy as np
    if isinstance(value, dict):
        return {str(k): plain_json(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [plain_json(v) for v in value]
    if isinstance(value, np.ndarray):
        return plain_json(value.tolist())
    if isinstance(value, np.generic):
        return value.item()
    return value
