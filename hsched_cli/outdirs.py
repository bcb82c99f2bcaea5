"""Output folders of the CLI's runs: created only when a run goes ahead, and removed again when
a run that created them fails before writing anything into them (no empty folders left
behind; a folder that was there before the run is never removed)."""

from __future__ import annotations

import contextlib
import json
from pathlib import Path

from hsched_env.errors import ConfigError, shorten
from hsched_env.files import missing_parents, usable_path


def make_output_dir(path: Path, flag: str = "--out") -> list[Path]:
    """Create ``path`` (and its parents); returns the folders this call created, deepest
    first. An unwritable path is a ``ConfigError`` naming ``flag``."""
    path = usable_path(Path(path), field=flag, what="the output folder")
    blocker = next((p for p in (path, *path.parents) if p.exists() and not p.is_dir()), None)
    if blocker is not None:
        what = "it" if blocker == path else repr(str(blocker))
        raise ConfigError(f"cannot create the folder {str(path)!r}: {what} is a file, not a "
                          f"folder", field=flag)
    new = missing_parents(path)
    try:
        path.mkdir(parents=True, exist_ok=True)
    except (OSError, RecursionError) as exc:    # (pathlib recurses once per missing parent)
        for folder in new:                      # the parents it made before failing
            with contextlib.suppress(OSError):
                folder.rmdir()
        reason = (getattr(exc, "strerror", None) or str(exc) if isinstance(exc, OSError)
                  else "too many nested folders")
        raise ConfigError(f"cannot create {shorten(str(path), 80)!r}: {reason}",
                          field=flag) from None
    return new


@contextlib.contextmanager
def removed_if_failed_empty(created: list[Path], own_files: tuple[Path, ...] = ()):
    """Run the body; if it raises, delete each of ``own_files`` (markers this run wrote, e.g.
    its claim on a default output folder) whose folder holds nothing else — a folder the run
    did write into (a Ray sweep's run files) keeps its claim —, then remove each folder of
    ``created`` (deepest first) that is empty, and re-raise. Folders the run did not create
    are left alone."""
    try:
        yield
    except BaseException:
        for f in map(Path, own_files):
            with contextlib.suppress(OSError):
                if f.parent.is_dir() and all(p == f for p in f.parent.iterdir()):
                    f.unlink(missing_ok=True)
        for folder in created:
            with contextlib.suppress(OSError):
                Path(folder).rmdir()            # only an empty folder goes
        raise


def sweep_to_resume(out: str | Path | None) -> bool:
    """Whether ``out/runs/`` holds run files of an earlier Ray sweep: what ``--resume``
    continues. Whether they are of the sweep being resumed (its tasks' keys and configuration
    hashes) is checked by ``agents.sweep.RunStore.prepare`` once the sweep's tasks are known,
    before any run starts: a resume that matches none of them is refused there while ``out``
    holds a ``metrics.json``."""
    if out is None:
        return False
    from agents.sweep import RUNS_DIR, RunStore
    return bool(RunStore(Path(out) / RUNS_DIR).files())


#: What each command's ``metrics.json`` is called in messages.
_RESULTS_OF = {"evaluate": "an evaluation's (hsched evaluate)",
               "compare": "a comparison's (hsched compare)", "demo": "the demo's (hsched demo)"}


def results_command(path: str | Path) -> str | None:
    """The command that wrote the ``metrics.json`` at ``path``: ``"compare"`` (a list, one
    entry per policy), ``"demo"`` (an evaluation report of the demo's suites),
    ``"evaluate"`` (an evaluation report), or ``None`` (unreadable, or none of these)."""
    try:
        data = json.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    if isinstance(data, list) and data and all(isinstance(m, dict) and "policy" in m
                                               for m in data):
        return "compare"
    if isinstance(data, dict) and isinstance(data.get("suite"), str) and "rows" in data:
        return "demo" if data["suite"] in ("demo", "demo-ranker") else "evaluate"
    return None


def check_no_earlier_results(out: str | Path | None, *, overwrite: bool, resume: bool,
                             command: str | None = None) -> None:
    """``out`` holding a ``metrics.json`` (of this command or another) is refused unless
    ``--overwrite``, or ``--resume`` with run files of a sweep in ``out/runs/`` and a
    ``metrics.json`` of this ``command`` (``"evaluate"``, ``"compare"``; ``None``: not
    checked). That those run files are of the sweep being resumed — else nothing would be
    resumed and the ``metrics.json`` of another run replaced — is checked by
    ``agents.sweep.RunStore.prepare`` (before any run starts)."""
    path = None if out is None else Path(out) / "metrics.json"
    if path is None or overwrite:
        return
    usable_path(Path(out), field="--out", what="the output folder")
    if not path.exists():
        return
    if resume and sweep_to_resume(out):
        wrote = results_command(path)
        if command is None or wrote == command:
            return
        what = _RESULTS_OF.get(wrote, "unreadable, or not written by hsched")
        raise ConfigError(f"{str(out)!r} holds a metrics.json that is not "
                          f"{_RESULTS_OF[command]} but {what}: --resume would replace it "
                          f"with this run's results; choose another --out (--overwrite "
                          f"replaces it, and discards the run files there)", field="--out")
    more = (" (--resume continues a sweep from its run files in runs/: there are none)"
            if resume else "")
    raise ConfigError(f"{str(out)!r} already holds a metrics.json of an earlier run{more}: "
                      f"pass --overwrite to replace it, or choose another --out", field="--out")


def check_runs_folder(out: str | Path | None) -> None:
    """That ``out/runs``, where a Ray sweep writes its run files, is a folder or absent (a
    file there made the first finished run fail after it was computed): a ``ConfigError``
    naming ``--out`` otherwise."""
    if out is None:
        return
    from agents.sweep import RUNS_DIR, RunStore
    RunStore(Path(out) / RUNS_DIR).check_folder()


def check_resume_overwrite(args) -> None:
    """``--resume`` with ``--overwrite``: refused before anything runs (the sweep's own
    check, ``agents.sweep.check_resume_overwrite``, made early)."""
    if getattr(args, "resume", False) and getattr(args, "overwrite", False):
        from agents.sweep import check_resume_overwrite as check
        check(True, True)


#: Why a flag of ``--backend ray`` means nothing to the serial backend.
_RAY_ONLY_WHY = {"--num-cpus": "it sizes the local Ray instance",
                 "--address": "it names the Ray cluster to join",
                 "--resume": "the serial backend keeps no run files to resume from",
                 "--overwrite": "the serial backend keeps no run files to overwrite",
                 "--out": "the serial backend keeps no run files"}


def check_ray_only_flags(args, flags: tuple[str, ...]) -> None:
    """``ConfigError`` for the first of ``flags`` (``_RAY_ONLY_WHY``'s, in the order given)
    set without ``--backend ray``, saying why it belongs there."""
    if args.backend == "ray":
        return
    for flag in flags:
        if getattr(args, flag.lstrip("-").replace("-", "_")):
            raise ConfigError(f"{flag} belongs to the Ray backend: give it with --backend ray "
                              f"({_RAY_ONLY_WHY[flag]})", field=flag)
