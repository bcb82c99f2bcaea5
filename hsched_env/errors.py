"""Error types raised on bad input.

Every error names *where* the problem is (file, line, field) so that a user can fix their
cluster file, trace or argument without reading a traceback.
"""

from __future__ import annotations

import difflib
import numbers
import re

import numpy as np

#: Longest user-supplied text echoed in an error message (longer text is cut in the middle).
MAX_ECHO = 80


def shorten(text: object, limit: int = MAX_ECHO) -> str:
    """``str(text)`` cut to about ``limit`` characters for error messages (``"abc…xyz"``)."""
    text = "".join(c if c.isprintable() else repr(c)[1:-1] for c in str(text))
    if len(text) <= limit:
        return text
    half = max(1, (limit - 1) // 2)
    return f"{text[:half]}…{text[-half:]}"


def show(value: object, limit: int = MAX_ECHO) -> str:
    """``repr(value)`` shortened for error messages (also for ints too long to print)."""
    try:
        text = repr(value)
    except ValueError:  # int with more digits than sys.get_int_max_str_digits()
        text = f"<{type(value).__name__} too large to print>"
    return shorten(text, limit)


#: A number written in plain decimal text: ASCII digits with an optional sign, decimal point
#: and exponent, or inf / nan (left for the caller's finiteness check to name).
_DECIMAL_TEXT = re.compile(r"[+-]?(?:(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)(?:[eE][+-]?[0-9]+)?"
                           r"|inf|infinity|nan)", re.IGNORECASE)
_INTEGER_TEXT = re.compile(r"[+-]?[0-9]+")


def decimal_float(text: str) -> float:
    """``float(text)`` for plain decimal text only (surrounding blanks allowed); ``ValueError``
    for the other forms Python's ``float()`` reads — digit-group underscores (``"1_0"``),
    other scripts' digits (``"٤"``) — which a config, trace or flag should not pass as a
    number."""
    stripped = str(text).strip()
    if not _DECIMAL_TEXT.fullmatch(stripped):
        raise ValueError(f"not a plain decimal number: {shorten(repr(text))}")
    return float(stripped)


def decimal_int(text: str) -> int:
    """``int(text)`` for plain decimal integer text only (ASCII digits, an optional sign,
    surrounding blanks allowed); ``ValueError`` for ``"1_0"``, ``"٤"`` and the like."""
    stripped = str(text).strip()
    if not _INTEGER_TEXT.fullmatch(stripped):
        raise ValueError(f"not a plain decimal integer: {shorten(repr(text))}")
    return int(stripped)


def command_line_value(text: str, parse, what: str, ok=None):
    """``parse(text)`` for an argparse ``type=`` function (``parse``: ``decimal_float`` or
    ``decimal_int``) when ``ok`` (if given) holds for it, else argparse's one-line
    ``expected <what>, got '<text>'`` error (``argparse.ArgumentTypeError``). Shared by the
    ``hsched`` command and the scripts."""
    import argparse
    try:
        value = parse(text)
    except ValueError:
        value = None
    if value is None or (ok is not None and not ok(value)):
        raise argparse.ArgumentTypeError(f"expected {what}, got {show(text)}")
    return value


def is_real_number(value: object) -> bool:
    """Whether ``value`` is a real number: an int or float (NumPy's too), not a bool or a
    string — what a numeric argument must be before it is compared (``"300" >= 1.0`` is a
    ``TypeError``, not a clear error)."""
    return isinstance(value, numbers.Real) and not is_switch_value(value)


def is_whole_number(value: object) -> bool:
    """Whether ``value`` is an integer (NumPy's too), not a bool, a float or a string — what
    a count, an index or a seed must be (``int()`` would coerce ``0.7`` or ``"3"``)."""
    if type(value) is int:  # the common case, without the ABC check
        return True
    return isinstance(value, numbers.Integral) and not is_switch_value(value)


def is_switch_value(value: object) -> bool:
    """Whether ``value`` is ``True`` or ``False`` (NumPy's too)."""
    return isinstance(value, (bool, np.bool_))


def check_switch(value: object, field: str) -> None:
    """A ``ConfigError`` naming ``field`` unless ``value`` is ``True`` or ``False``: ``"no"``
    or ``-3`` would otherwise count as on."""
    if not is_switch_value(value):
        raise ConfigError(f"{field} must be True or False, got {show(value)}", field=field)


class HSchedError(Exception):
    """Base class of every error HeteroSched raises on purpose."""


class ConfigError(HSchedError, ValueError):
    """A cluster, catalog or scenario description is invalid.

    Args:
        message: What is wrong.
        source: File name or other origin of the config (e.g. ``"preset sia-64"``).
        field: Dotted path of the offending field (e.g. ``"nodes[2].gpu_type"``).
        line: 1-based line number when known.
    """

    def __init__(self, message: str, *, source: str | None = None, field: str | None = None,
                 line: int | None = None) -> None:
        self.source, self.field, self.line, self.reason = source, field, line, message
        where = []
        if source:
            where.append(shorten(source, 400) + (f":{line}" if line is not None else ""))
        if field:
            where.append(f"field '{shorten(field)}'")
        super().__init__((", ".join(where) + ": " if where else "") + message)


class TraceError(ConfigError):
    """A workload trace row is invalid (names file, line and field)."""


class UnexpectedArgumentError(ConfigError, TypeError):
    """A keyword argument a constructor does not take. Also a ``TypeError`` worded as
    Python's own ("got an unexpected keyword argument 'x'"), since libraries that build
    environments through ``gym.make`` retry without an optional argument on exactly that
    error (TorchRL's ``GymEnv`` passes ``frameskip`` first). ``gymnasium.make`` re-raises a
    constructor's ``TypeError`` as ``type(e)(message + where it was raised) from e``; such a
    copy names the argument its cause named (``field``)."""

    @property
    def field(self) -> str | None:
        own = self.__dict__.get("_field")
        return own if own is not None else getattr(self.__cause__, "field", None)

    @field.setter
    def field(self, value: str | None) -> None:
        self._field = value

    def __reduce__(self):
        # a copy made from another error knows its field through ``__cause__``, which
        # pickling drops (a worker process's error reaching the parent): keep it resolved
        return type(self), self.args, {**self.__dict__, "_field": self.field}


class UnknownNameError(ConfigError, KeyError):
    """A name (model, GPU type, cluster preset) is not in its catalog; lists the valid names."""

    def __init__(self, kind: str, name: str, valid: list[str], **where) -> None:
        self.kind, self.name, self.valid = kind, name, sorted(valid)
        # the nearest valid name, if one is near (a general form such as "pop-K (2 <= K ...)"
        # is not a name to suggest)
        near = difflib.get_close_matches(str(name), [v for v in self.valid if " " not in v],
                                         n=1)
        hint = f" (did you mean {near[0]!r}?)" if near else ""
        super().__init__(f"unknown {kind} {shorten(name)!r}{hint}; valid: "
                         f"{', '.join(self.valid)}", **where)

    def __str__(self) -> str:  # KeyError would otherwise repr() the message
        return Exception.__str__(self)

    def __reduce__(self):
        # rebuilt from its own arguments (``Exception``'s default passes the message alone,
        # which ``__init__`` does not take), so it survives a trip to another process
        where = {"source": self.source, "field": self.field, "line": self.line}
        return _rebuild, (type(self), (self.kind, self.name, self.valid), where), self.__dict__


def _rebuild(cls: type, args: tuple, where: dict) -> HSchedError:
    """``cls(*args, **where)``: how an error that takes keyword arguments is unpickled."""
    return cls(*args, **where)
