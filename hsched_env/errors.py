"""Error types raised on bad input.

Every error names *where* the problem is (file, line, field) so that a user can fix their
cluster file, trace or argument without reading a traceback.
"""

from __future__ import annotations


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
            where.append(str(source) + (f":{line}" if line is not None else ""))
        if field:
            where.append(f"field '{field}'")
        super().__init__((", ".join(where) + ": " if where else "") + message)


class TraceError(ConfigError):
    """A workload trace row is invalid (names file, line and field)."""


class UnknownNameError(ConfigError, KeyError):
    """A name (model, GPU type, cluster preset) is not in its catalog; lists the valid names."""

    def __init__(self, kind: str, name: str, valid: list[str], **where) -> None:
        self.kind, self.name, self.valid = kind, name, sorted(valid)
        super().__init__(f"unknown {kind} {name!r}; valid: {', '.join(self.valid)}", **where)

    def __str__(self) -> str:  # KeyError would otherwise repr() the message
        return Exception.__str__(self)
