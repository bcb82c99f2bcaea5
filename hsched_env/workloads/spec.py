"""Workload spec strings ``kind[:key=value,key=value...]``: parsing and typed values.

The kind and the keys are case-insensitive; each kind accepts its own keys (``_SPEC_KEYS``);
a key needs a value and may be given once. Every problem raises
:class:`~hsched_env.errors.ConfigError` naming the spec and the key. The kinds and what their
keys mean are listed in :mod:`hsched_env.workloads` and ``docs/workloads.md``.
"""

from __future__ import annotations

import math

from hsched_env.errors import ConfigError, decimal_float, decimal_int, show, shorten

__all__ = ["workload_kinds", "KINDS"]

KINDS = ("gavel", "philly", "gavel-trace", "pollux", "csv")

_SPEC_KEYS: dict[str, tuple[str, ...]] = {
    "gavel": ("rate", "jobs", "seed", "mix", "duration_scale", "multi_gpu",
              "multi_gpu_recommendation"),
    "philly": ("start", "hours", "vc", "max_jobs", "path"),
    "gavel-trace": ("path", "vc", "max_jobs"),
    "pollux": ("path", "workload", "max_jobs"),
    "csv": ("path", "max_jobs"),
}


def workload_kinds() -> list[str]:
    """The workload kinds accepted by :func:`load_workload`."""
    return list(KINDS)


# ---------------------------------------------------------------------------------- spec
def spec_kind(spec: str) -> str:
    """The kind of ``spec`` (``gavel``, ``philly``, ...), lower case as the parser reads it."""
    return spec.strip().partition(":")[0].strip().lower()


def spec_has_key(spec: str, key: str) -> bool:
    """Whether ``spec`` gives ``key`` (``seed``, ...), in any case as the parser reads it."""
    rest = spec.strip().partition(":")[2]
    return any(item.partition("=")[0].strip().lower() == key for item in rest.split(","))


def with_spec_item(spec: str, item: str) -> str:
    """``spec`` with ``item`` (``key=value``) appended: ``gavel`` → ``gavel:item``,
    ``gavel:`` or ``gavel:rate=4,`` → without a second separator, else after a comma."""
    spec = spec.strip()
    if ":" not in spec:
        return f"{spec}:{item}"
    return f"{spec}{item}" if spec.endswith((":", ",")) else f"{spec},{item}"


def _parse_spec(spec: str) -> tuple[str, dict[str, str]]:
    if not isinstance(spec, str) or not spec.strip():
        raise ConfigError(f"workload spec must be a non-empty string like 'gavel:rate=4', got "
                          f"{show(spec)}; kinds: {', '.join(KINDS)}", field="workload")
    kind, rest = spec_kind(spec), spec.strip().partition(":")[2]
    where = {"source": f"workload spec {show(spec)}"}
    if kind not in KINDS:
        hint = ""
        if ":" not in spec and spec.strip().lower().endswith(".csv"):
            hint = f" (a CSV file: csv:path={spec.strip()})"
        raise ConfigError(f"unknown workload kind {show(kind)}; valid kinds: "
                          f"{', '.join(KINDS)}{shorten(hint)}", field="kind", **where)
    params: dict[str, str] = {}
    items = rest.split(",")
    if not items[-1].strip():
        items.pop()                      # nothing after the colon, or one trailing comma
    for item in items:
        if not item.strip():
            raise ConfigError("an empty item between commas (two commas in a row, or a comma "
                              "right after the colon)", field="workload", **where)
        key, eq, value = item.partition("=")
        key = key.strip().lower()
        if key not in _SPEC_KEYS[kind]:
            raise ConfigError(f"unknown key {show(key)} for kind {show(kind)}; valid keys: "
                              f"{', '.join(_SPEC_KEYS[kind])}", field=key, **where)
        if not eq or not value.strip():
            raise ConfigError(f"key {show(key)} needs a value ({key}=...)", field=key, **where)
        if key in params:
            raise ConfigError(f"key {show(key)} given twice", field=key, **where)
        params[key] = value.strip()
    return kind, params


class _Params:
    """Typed access to spec values; errors name the key."""

    def __init__(self, spec: str, values: dict[str, str]) -> None:
        self.spec, self.values = spec, values

    def error(self, key: str, message: str) -> ConfigError:
        return ConfigError(message, source=f"workload spec {show(self.spec)}", field=key)

    def has(self, key: str) -> bool:
        return key in self.values

    def number(self, key: str, default: float | None = None, *, positive: bool = True,
               hi: float | None = None) -> float:
        if key not in self.values:
            if default is None:
                raise self.error(key, f"missing required key {show(key)}")
            return default
        text = self.values[key]
        try:
            value = decimal_float(text)
        except ValueError:
            raise self.error(key, f"{key} must be a number, got {show(text)}") from None
        if not math.isfinite(value) or (positive and value <= 0) or value < 0:
            raise self.error(key, f"{key} must be a finite number "
                             f"{'> 0' if positive else '>= 0'}, got {show(text)}")
        if hi is not None and value > hi:
            raise self.error(key, f"{key} must be at most {hi:g}, got {show(text)}")
        return value

    def integer(self, key: str, default: int | None = None, *, lo: int = 1,
                hi: int | None = None) -> int | None:
        if key not in self.values:
            return default
        text = self.values[key]
        try:
            value = decimal_int(text)
        except ValueError:
            raise self.error(key, f"{key} must be an integer, got {show(text)}") from None
        if value < lo:
            raise self.error(key, f"{key} must be an integer >= {lo}, got {show(text)}")
        if hi is not None and value > hi:
            raise self.error(key, f"{key} must be an integer <= {hi}, got {show(text)}")
        return value

    def text(self, key: str, default: str | None = None) -> str | None:
        return self.values.get(key, default)
