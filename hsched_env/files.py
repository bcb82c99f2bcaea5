"""Users' files and folders: reading text files (clusters, catalogs, traces) with errors that
name the file, YAML's key lines and numbers checked, and the folders a path still needs."""

from __future__ import annotations

import math
import os
import stat
from pathlib import Path
from typing import Any

from hsched_env.errors import ConfigError, decimal_float, decimal_int, show, shorten

__all__ = ["is_file", "json_object_no_duplicates", "missing_parents", "read_text_file",
           "shorten", "usable_path", "user_path", "value_error_text", "why_not_a_file",
           "yaml_error", "yaml_key_lines", "yaml_number_as_written"]


def user_path(text: str, *, field: str | None = None) -> Path:
    """``text`` as a path with ``~`` expanded.

    Raises:
        ConfigError: ``~user`` names no known user (``Path.expanduser`` raises RuntimeError).
    """
    try:
        return Path(text).expanduser()
    except RuntimeError:
        raise ConfigError("cannot expand '~' (no such user or no home directory)",
                          source=shorten(text, 400), field=field) from None


def usable_path(path: Path, *, field: str, what: str) -> Path:
    """``path``, once the OS accepts its name: looking it up must not fail for another
    reason than its absence (``Path.exists`` raises on a name too long, a NUL character).

    Raises:
        ConfigError: naming ``field``, ``what`` the path was to be and the OS's reason.
    """
    try:
        path.exists()
    except (OSError, ValueError) as exc:
        reason = getattr(exc, "strerror", None) or str(exc)
        raise ConfigError(f"cannot use {shorten(str(path), 80)!r} as {what}: {reason}",
                          field=field) from None
    return path


def missing_parents(path: Path) -> list[Path]:
    """``path`` and those of its parents that do not exist yet, deepest first: the folders
    that creating ``path`` will create (and a failed run may remove again). A parent that
    only looks missing because an earlier part of its path does not exist yet
    (``new/../kept``: ``kept`` exists) is not listed: it names a folder that exists."""
    out = []
    for p in [Path(path), *Path(path).parents]:
        if p.exists() or p == Path(p.anchor) or str(p) in ("", "."):
            break
        try:
            there = Path(os.path.normpath(p)).exists()
        except (OSError, ValueError):
            there = True                # unsure: never listed, so never removed
        if not there:
            out.append(p)
    return out


def is_file(path: Path) -> bool:
    """``path.is_file()``, but False (not an exception) for names the OS rejects."""
    try:
        return path.is_file()
    except (OSError, ValueError):  # e.g. "File name too long", a NUL character
        return False


def why_not_a_file(path: Path) -> str:
    """Why ``path`` is not a readable file, in a few words ("no such file", "a folder, not a
    file", "a broken link to ..."), or "" when it is one (never an exception)."""
    try:
        if path.is_file():
            return ""
        if path.is_dir():
            return "a folder, not a file"
        if path.is_symlink():
            return f"a broken link (to {show(str(os.readlink(path)))}, which does not exist)"
        if path.exists():
            return "not a regular file"
    except (OSError, ValueError):   # a name the OS rejects (too long, a NUL character)
        return "not a usable file name"
    return "no such file"


def _is_device(path: Path) -> bool:
    """Whether ``path`` is a character or block device (False where it cannot be stat'ed:
    reading it then gives the error)."""
    try:
        mode = path.stat().st_mode
    except (OSError, ValueError):
        return False
    return stat.S_ISCHR(mode) or stat.S_ISBLK(mode)


def read_text_file(path: str | os.PathLike[str], *, field: str | None = None,
                   empty_hint: str = "", decode_error: type[ConfigError] = ConfigError) -> str:
    """A file's text as UTF-8 (a byte-order mark is allowed).

    Args:
        path: The file.
        field: Field named in the errors about the file itself (e.g. ``"path"``).
        empty_hint: Appended to the "file is empty" message (what was expected).
        decode_error: Error type for non-UTF-8 bytes (``TraceError`` for traces).

    Raises:
        ConfigError: Missing or unreadable file, or an empty one; ``decode_error`` for bytes
            that are not UTF-8 (with the line they are on).
    """
    p = Path(path)
    source = str(p)
    if _is_device(p):
        # /dev/zero or /dev/urandom would be read to the end of memory (a pipe, as from a
        # shell's <(...), is read as a file is)
        raise ConfigError("a device, not a file", source=source, field=field)
    try:
        raw = p.read_bytes()
    except FileNotFoundError:
        raise ConfigError("no such file", source=source, field=field) from None
    except OSError as exc:
        raise ConfigError(f"cannot read file: {exc.strerror or exc}", source=source,
                          field=field) from None
    except ValueError:  # e.g. a NUL character in the path
        raise ConfigError("invalid file name (contains a NUL character)", source=source,
                          field=field) from None
    try:
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        line = raw[:exc.start].count(b"\n") + 1
        raise decode_error(f"file is not valid UTF-8 (byte 0x{raw[exc.start]:02x} at offset "
                           f"{exc.start}); save it as UTF-8", source=source, line=line) from None
    if not text.strip():
        raise ConfigError("file is empty" + (f"; {empty_hint}" if empty_hint else ""),
                          source=source)
    return text


def json_object_no_duplicates(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    """``json.loads(..., object_pairs_hook=...)``: an object, but a key given twice is an
    error (JSON itself would keep the last one silently)."""
    d: dict[str, Any] = {}
    for key, value in pairs:
        if key in d:
            raise ConfigError(f"duplicate key {show(key)} in a JSON object", field=key)
        d[key] = value
    return d


def value_error_text(exc: ValueError) -> str:
    """Readable text of a ValueError raised while building values from YAML/JSON (an integer
    of too many digits, a date like 2001-13-45)."""
    text = str(exc)
    if "integer string conversion" in text:
        return "an integer has too many digits"
    return shorten(text, 160)


def yaml_error(exc, source: str) -> ConfigError:
    """A PyYAML parse error (``yaml.YAMLError``) as one line, ``source:line: invalid YAML:
    the problem (its context and where that starts)``, instead of PyYAML's several lines
    with the text quoted under a caret."""
    mark = getattr(exc, "problem_mark", None) or getattr(exc, "context_mark", None)
    problem, context = getattr(exc, "problem", None), getattr(exc, "context", None)
    msg = str(problem or exc)
    context_mark = getattr(exc, "context_mark", None)
    if context and context_mark is not None:
        msg += f" ({context} that starts on line {context_mark.line + 1})"
    elif context:
        msg += f" ({context})"
    return ConfigError(f"invalid YAML: {shorten(msg, 300)}", source=source,
                       line=mark.line + 1 if mark is not None else None)


#: The tags of YAML's numbers (``yaml_key_lines`` checks how they are written).
_YAML_NUMBER_TAGS = ("tag:yaml.org,2002:int", "tag:yaml.org,2002:float")


def yaml_key_lines(text: str) -> dict[str, int]:
    """Map field paths to 1-based line numbers using PyYAML's composer (safe loader), for
    errors that name a YAML file's line (cluster files, hyper-parameter files).

    Keys ``"<path>:key"`` hold the line of a mapping key itself (for unknown-key errors);
    ``"<path>"`` holds the line of its value. Also rejects duplicate keys, which
    ``yaml.safe_load`` would silently resolve to the last one, and numbers YAML 1.1 reads
    other than their plain-decimal text says (``yaml_number_as_written``: 010 is octal 8).
    """
    import yaml

    root = yaml.compose(text, Loader=yaml.SafeLoader)
    out: dict[str, int] = {}
    if root is None:
        return out
    out[""] = root.start_mark.line + 1

    visited: set[int] = set()

    def walk(node: Any, path: str) -> None:
        # An alias reuses its anchor's node: walk it once, so that recursive aliases and
        # "billion laughs" documents cost one pass over the text (aliased paths get no line).
        if id(node) in visited:
            return
        visited.add(id(node))
        if isinstance(node, yaml.MappingNode):
            seen: dict[str, int] = {}
            for knode, vnode in node.value:
                key = str(knode.value)
                sub = f"{path}.{key}" if path else key
                if key in seen:
                    raise ConfigError(f"duplicate key {show(key)} (first on line {seen[key]})",
                                      field=sub, line=knode.start_mark.line + 1)
                seen[key] = knode.start_mark.line + 1
                out[f"{sub}:key"] = knode.start_mark.line + 1
                out[sub] = vnode.start_mark.line + 1
                walk(vnode, sub)
        elif isinstance(node, yaml.SequenceNode):
            for i, item in enumerate(node.value):
                sub = f"{path}[{i}]"
                out[sub] = item.start_mark.line + 1
                walk(item, sub)
        elif isinstance(node, yaml.ScalarNode) and node.tag in _YAML_NUMBER_TAGS:
            number = yaml.safe_load(node.value)
            if not yaml_number_as_written(node.value, number):
                raise ConfigError(f"{node.value!r} is not a plain decimal number (YAML reads "
                                  f"it as {number!r})", field=path or None,
                                  line=node.start_mark.line + 1)

    walk(root, "")
    return out


def yaml_number_as_written(text: str, number: float) -> bool:
    """Whether YAML's ``number`` is what ``text`` says in plain decimal: YAML 1.1 also reads
    0x10, 0b11, 017 (octal: 15), 1_000 and 1:30 (sexagesimal: 90) as numbers."""
    if text.strip().lower() in (".nan", ".inf", "+.inf", "-.inf"):
        return True               # YAML's own spellings (the fields' checks refuse them)
    try:
        if isinstance(number, int):             # exactly, beyond 2**53 too
            return decimal_int(text) == number
        plain = decimal_float(text)
    except ValueError:
        return False
    return plain == number or (math.isnan(plain) and number != number)
