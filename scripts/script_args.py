"""What the scripts in this folder share on their command lines.

* argparse ``type=`` functions for counts and numbers (``positive_int``, ``nonnegative_int``,
  ``positive_number``, ``probability``) and comma-separated lists of them (``int_list``,
  ``list_of``): a bad value is argparse's one-line ``argument --flag: expected ...`` error
  with exit status 2, read as plain decimal text (``hsched_env.errors.decimal_int`` /
  ``decimal_float``) as the ``hsched`` command reads its flags;
* ``one_line_errors``, a decorator for a script's ``main(argv)``: HeteroSched's own errors
  (``HSchedError``: an unknown cluster, workload, policy or ranker, a bad trace or config
  file) are printed as one line ``NAME.py: error: <message>`` on stderr and ``main`` returns
  2, as ``hsched`` does (``hsched_cli.main.main``), instead of a traceback;
* ``output_file_problem`` / ``output_folder_problem``: why a file or folder the script will
  write at the end cannot be written (``None`` if it can), checked before a long run without
  creating anything, so a bad ``--json`` / ``--out`` is a one-line error up front rather than
  a traceback after the work; ``refuse_unwritable(parser, out=..., json=...)`` makes that the
  parser's error for a script's output flags (and checks a ``--plot`` file's format).

A script imports it with its own folder on ``sys.path`` (``python scripts/NAME.py`` puts it
there; the scripts add it too, for tests that load them by path)::

    sys.path.append(str(Path(__file__).resolve().parent))
    from script_args import one_line_errors, positive_int
"""

from __future__ import annotations

import argparse
import functools
import math
import os
import sys
from pathlib import Path

from hsched_env.errors import (HSchedError, command_line_value, decimal_float, decimal_int,
                               show)

__all__ = ["PLOT_SUFFIXES", "int_list", "list_of", "nonnegative_int", "one_line_errors",
           "output_file_problem", "output_folder_problem", "positive_int", "positive_number",
           "probability", "refuse_unwritable"]


def positive_int(text: str) -> int:
    """An integer >= 1 (a count: repeats, seeds, workers, jobs)."""
    return command_line_value(text, decimal_int, "a positive integer", lambda v: v >= 1)


def nonnegative_int(text: str) -> int:
    """An integer >= 0 (a seed, a count that may be zero)."""
    return command_line_value(text, decimal_int, "a non-negative integer", lambda v: v >= 0)


def positive_number(text: str) -> float:
    """A finite number > 0 (a duration)."""
    return command_line_value(text, decimal_float, "a positive number",
                              lambda v: math.isfinite(v) and v > 0)


def nonnegative_number(text: str) -> float:
    """A finite number >= 0."""
    return command_line_value(text, decimal_float, "a non-negative number",
                              lambda v: math.isfinite(v) and v >= 0)


def probability(text: str) -> float:
    """A probability in (0, 1]."""
    return command_line_value(text, decimal_float, "a probability in (0, 1]",
                              lambda v: 0 < v <= 1)       # also refuses nan


def int_list(minimum: int = 1):
    """A ``type=`` for a comma-separated list of integers >= ``minimum`` (``"500,1000"``);
    an empty entry (``"500,"``) is refused, not skipped."""
    def parse(text: str) -> list[int]:
        error = argparse.ArgumentTypeError(
            f"expected comma-separated integers >= {minimum}, got {show(text)}")
        try:
            values = [decimal_int(part) for part in str(text).split(",")]
        except ValueError:
            raise error from None
        if not all(v >= minimum for v in values):
            raise error
        return values
    parse.__name__ = f"integers >= {minimum}"       # argparse's fallback message names it
    return parse


def list_of(item, empty_ok: bool = False):
    """A ``type=`` for a comma-separated list of values of the ``type=`` function ``item``
    (``list_of(probability)``: ``"0.05,0.1"``); an empty entry is refused, not skipped;
    ``empty_ok``: an empty text is the empty list."""
    def parse(text: str) -> list:
        if empty_ok and not str(text).strip():
            return []
        parts = [part.strip() for part in str(text).split(",")]
        if not all(parts):
            raise argparse.ArgumentTypeError(
                f"an empty entry in {show(text)} (a stray comma?)")
        values = []
        for part in parts:
            try:
                values.append(item(part))
            except argparse.ArgumentTypeError as exc:
                raise argparse.ArgumentTypeError(f"entry {part!r}: {exc}") from None
        return values
    parse.__name__ = f"list of {item.__name__}"
    return parse


def output_file_problem(path) -> str | None:
    """Why the file ``path`` cannot be written (a folder there, its folder missing or not
    writable, a file there that is not writable), or ``None``; nothing is created."""
    path = Path(path).expanduser()
    if path.is_dir():
        return "it is a folder, not a file"
    if path.exists():
        return None if os.access(path, os.W_OK) else "the file is not writable"
    folder = path.parent
    if not folder.is_dir():
        return f"its folder {str(folder)!r} does not exist"
    if not os.access(folder, os.W_OK):
        return f"its folder {str(folder)!r} is not writable"
    return None


#: The figure formats the scripts' ``--plot`` files may name (matplotlib's, by suffix).
PLOT_SUFFIXES = (".png", ".pdf", ".svg", ".jpg", ".jpeg", ".eps", ".ps", ".tif", ".tiff",
                 ".webp")


def refuse_unwritable(parser: argparse.ArgumentParser, plots: tuple = (), **paths) -> None:
    """``parser.error`` (one line, exit 2) for the first of ``paths`` (``--flag-name`` with
    ``_`` for ``-``: the file it names, or ``None`` / ``"-"``: not written) that cannot be
    written (``output_file_problem``), checked before the run; for the flags in ``plots``
    also a suffix that is not a figure format (``--plot /tmp`` wrote ``/tmp.png``, ``x.xyz``
    ended in matplotlib's traceback after the run)."""
    for key, path in paths.items():
        if path is None or str(path) == "-":
            continue
        flag = "--" + key.replace("_", "-")
        problem = output_file_problem(path)
        if problem is None and key in plots and Path(path).suffix.lower() not in PLOT_SUFFIXES:
            problem = f"not a figure file (give one of {', '.join(PLOT_SUFFIXES)})"
        if problem is not None:
            parser.error(f"{flag}: cannot write {str(path)!r}: {problem}")


def output_folder_problem(path) -> str | None:
    """Why the folder ``path`` cannot be written into or created (with its parents, as
    ``mkdir(parents=True)``), or ``None``; nothing is created."""
    path = Path(path).expanduser().absolute()
    if path.exists():
        if not path.is_dir():
            return "it is a file, not a folder"
        return None if os.access(path, os.W_OK | os.X_OK) else "the folder is not writable"
    parent = path.parent
    while not parent.exists():                  # the nearest folder that exists
        parent = parent.parent
    if not parent.is_dir():
        return f"{str(parent)!r} is a file, not a folder"
    if not os.access(parent, os.W_OK | os.X_OK):
        return f"cannot create it: {str(parent)!r} is not writable"
    return None


def one_line_errors(main):
    """``main(argv)`` with HeteroSched's errors (``HSchedError``) printed as one line
    ``NAME.py: error: <message>`` on stderr and 2 returned (NAME.py: the script's file), and a
    closed output pipe (``| head``) ending it quietly with 0, as ``hsched`` does."""
    prog = Path(main.__code__.co_filename).name

    @functools.wraps(main)
    def wrapped(argv: list[str] | None = None):
        try:
            return main(argv)
        except HSchedError as exc:
            print(f"{prog}: error: {exc}", file=sys.stderr)
            return 2
        except BrokenPipeError:                  # piped into head: stop quietly, as hsched
            return 0
    return wrapped


if __name__ == "__main__":          # a module: --help says what it holds
    argparse.ArgumentParser(description=__doc__,
                            formatter_class=argparse.RawDescriptionHelpFormatter).parse_args()
