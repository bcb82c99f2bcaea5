"""Output folders of the CLI's runs: created only when a run goes ahead, and removed again when
a run that created one fails before writing anything into it (no empty folders left behind)."""

from __future__ import annotations

import contextlib
from pathlib import Path

from hsched_env.errors import ConfigError


def make_output_dir(path: Path, flag: str = "--out") -> bool:
    """Create ``path`` (and its parents); ``True`` when this call created it. An unwritable
    path is a ``ConfigError`` naming ``flag``."""
    path = Path(path)
    existed = path.exists()
    try:
        path.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise ConfigError(f"cannot create {str(path)!r}: {exc.strerror or exc}",
                          field=flag) from None
    return not existed


@contextlib.contextmanager
def removed_if_failed_empty(path: Path, created: bool, ignore: tuple[str, ...] = ()):
    """Run the body; if it raises and this run ``created`` ``path``, remove ``path`` when it
    holds nothing but the files named in ``ignore`` (a claim marker), then re-raise."""
    try:
        yield
    except BaseException:
        path = Path(path)
        if created and path.is_dir():
            left = [p for p in path.iterdir() if p.name not in ignore]
            if not left:
                for name in ignore:
                    (path / name).unlink(missing_ok=True)
                with contextlib.suppress(OSError):
                    path.rmdir()
        raise
