"""What a ranker file holds, and its check when it is read.

A ranker file (``.pt``, written by ``agents.ranker.save_ranker``; ``hsched train`` and
``scripts/calibrate_gate.py`` write it) is a ``torch.save`` of one dict of tensors and plain
values:

* ``format`` — ``FORMAT``;
* ``hidden`` — the network's width, a positive whole number; ``commit`` — ``True`` for a
  select-mode network (a commit logit after the slots); ``job_context`` (optional, default
  ``False``) — whether it pools each job's candidates (``agents.ranker.RankerNet``);
* ``state_dict`` — the network's weights: a dict of finite floating-point tensors, exactly the
  names and shapes of a ``RankerNet`` of that ``hidden``, ``commit`` and ``job_context``;
* ``meta`` (optional) — what training recorded (``agents.train._ranker_meta``): the keys of
  ``META_CHECKS`` hold the values checked there (a threshold in (0, 1), a gate a whole number
  >= 0, ...); other keys are a free record (``save_ranker(net, path, note=...)``) and are
  not read, except a near-miss of a checked key (``treshold``), which is refused (by
  ``save_ranker`` too, so a file written loads); an operating point
  (``meta["operating_points"][i]``) holds ``POINT_KEYS`` only.

``read_ranker_file(path)`` reads the file (``weights_only=True``: no code is unpickled) and
checks everything but the weights' shapes; ``check_weights`` checks those against the shapes
of the network the file describes. Every problem is a ``ConfigError`` in one line naming the
file and the field (``meta.size_thresholds[1]``).
"""

from __future__ import annotations

import difflib
import math
import os
import pickle
import re
import warnings
from pathlib import Path
from typing import NoReturn

import torch as th

from hsched_env.envs.rank import PRUNE_SCOPES
from hsched_env.errors import (ConfigError, is_real_number, is_switch_value, is_whole_number,
                               shorten, show)

FORMAT = "heterosched-ranker/1"
#: The keys of a ranker file (``save_ranker``'s dict); ``job_context`` and ``meta`` may be
#: absent (older files).
FILE_KEYS = ("format", "hidden", "commit", "job_context", "state_dict", "meta")
#: ``meta["inputs"]``: ``"within-fair-share"`` — the ranker scores only the candidates within
#: the job's fair share (``hsched train --fair-share-inputs``).
META_INPUTS = ("within-fair-share",)


def read_ranker_file(path: str | Path) -> dict:
    """The dict of the ranker file at ``path``, every field checked (``ConfigError``: no
    file, not a file of tensors and plain values, not a ranker file, or a field missing or
    invalid) except the shapes of the weights (``check_weights``)."""
    if not isinstance(path, (str, os.PathLike)):
        raise ConfigError(f"a ranker file is named by a path, got {show(path)}",
                          field="ranker")
    path = Path(path)
    if not path.is_file():
        raise ConfigError(f"no ranker file at {path}", field="ranker")
    try:
        with warnings.catch_warnings():          # torch's remarks on an odd pickle: the
            # file is refused, or checked field by field, below
            warnings.simplefilter("ignore")
            blob = th.load(path, map_location="cpu", weights_only=True)
    except Exception as exc:                     # noqa: BLE001 (any unreadable file)
        raise ConfigError(f"{path} is not a HeteroSched ranker file: {_unreadable(exc)}",
                          field="ranker") from None
    if not isinstance(blob, dict):
        raise ConfigError(f"{path} is not a HeteroSched ranker file: it holds a "
                          f"{type(blob).__name__}, not a dict with format {FORMAT!r}",
                          field="ranker")
    if blob.get("format") != FORMAT:
        found = (f"its format is {show(blob['format'])}" if "format" in blob
                 else "it has no 'format'")
        raise ConfigError(f"{path} is not a HeteroSched ranker file ({found}, expected "
                          f"{FORMAT!r})", field="ranker")
    source = f"ranker file {path}"
    unknown = sorted(map(str, set(blob) - set(FILE_KEYS)))
    if unknown:
        raise ConfigError(f"unknown key(s) {', '.join(map(repr, unknown))}; a ranker file "
                          f"holds {', '.join(FILE_KEYS)}", source=source, field=unknown[0])
    for key in ("hidden", "commit", "state_dict"):
        if key not in blob:
            raise ConfigError(f"missing (a ranker file holds {', '.join(FILE_KEYS)}, as "
                              f"save_ranker writes them)", source=source, field=key)
    hidden = blob["hidden"]
    if not is_whole_number(hidden) or hidden < 1:
        raise ConfigError(f"must be a positive whole number (the network's width), got "
                          f"{show(hidden)}", source=source, field="hidden")
    for key in ("commit", "job_context"):
        if key in blob and not is_switch_value(blob[key]):
            raise ConfigError(f"must be True or False, got {show(blob[key])}", source=source,
                              field=key)
    _check_tensors(blob["state_dict"], source)
    check_meta(blob.get("meta", {}), source)
    return blob


def check_meta(meta, source: str) -> None:
    """``ConfigError`` naming ``source`` and the field unless ``meta`` is a dict of named
    values whose ``META_CHECKS`` keys hold valid values and without a near-miss of one of
    them (a misspelt ``treshold`` would otherwise be ignored)."""
    if not isinstance(meta, dict) or not all(isinstance(k, str) for k in meta):
        raise ConfigError(f"must be a dict of named values, got {show(meta)}", source=source,
                          field="meta")
    for key, check in META_CHECKS.items():
        if key in meta:
            check(meta[key], source, f"meta.{key}")
    for key in (k for k in meta if k not in META_CHECKS):      # in the file's order
        # a misspelling: a close match of about the same length (not a longer or shorter
        # name of its own, such as kept_fraction beside max_kept_fraction)
        near = [k for k in difflib.get_close_matches(key, META_CHECKS, n=1, cutoff=0.8)
                if abs(len(k) - len(key)) <= 2]
        if near:
            raise ConfigError(f"is not a key ranker files use (did you mean {near[0]!r}?)",
                              source=source, field=f"meta.{key}")


def check_weights(state_dict: dict, expected: dict[str, tuple], path: str | Path,
                  network: str, inputs_weight: str) -> None:
    """``ConfigError`` unless ``state_dict`` (checked by ``read_ranker_file``) has exactly the
    names and shapes of ``expected`` (name -> shape), the weights of ``network`` (its
    description, e.g. ``RankerNet(hidden=64, ...)``). Weights that differ only in the number
    of inputs per candidate (the second dimension of ``inputs_weight``, the first layer's
    weight) are a file of another feature set: retrain it."""
    source = f"ranker file {path}"
    missing = [k for k in expected if k not in state_dict]
    extra = [k for k in state_dict if k not in expected]
    if missing or extra:
        parts = ([f"lacks {_names(missing)}"] if missing else []) + (
            [f"has unexpected {_names(extra)}"] if extra else [])
        raise ConfigError(f"{' and '.join(parts)}: not the weights of the {network} the file "
                          f"describes (its 'hidden', 'commit' and 'job_context')",
                          source=source, field="state_dict")
    wrong = [(k, tuple(state_dict[k].shape), shape) for k, shape in expected.items()
             if tuple(state_dict[k].shape) != tuple(shape)]
    if not wrong:
        return
    _, got, want = wrong[0]
    if ([k for k, *_ in wrong] == [inputs_weight] and len(got) == len(want) == 2
            and got[0] == want[0]):                # (width, inputs): only the inputs differ
        raise ConfigError(f"{path} was trained on other observation features than this "
                          f"version's ({want[-1]} inputs per candidate, the file's "
                          f"{got[-1]}): retrain it", field="ranker")
    key = wrong[0][0]
    raise ConfigError(f"{key!r} has shape {got}, but the {network} the file describes (its "
                      f"'hidden', 'commit' and 'job_context') needs {want}"
                      + (f" ({len(wrong) - 1} more weights do not fit)" if len(wrong) > 1
                         else ""), source=source, field="state_dict")


def _unreadable(exc: BaseException) -> str:
    """Why ``torch.load(weights_only=True)`` could not read a file, in a few words (torch's
    own message advises loading it with ``weights_only=False``: not here, where a ranker
    file holds no code)."""
    if isinstance(exc, pickle.UnpicklingError):
        found = re.search(r"GLOBAL ([\w.]+)", str(exc))
        if found:
            return (f"it holds a Python object ({found[1]}), not only tensors and plain "
                    f"values (a ranker file is written by save_ranker or 'hsched train')")
        return ("torch cannot read it as a file of tensors and plain values (written by "
                "save_ranker or 'hsched train')")
    if isinstance(exc, EOFError):
        return "it is empty or cut short"
    if isinstance(exc, KeyError):             # torch's legacy reader: no magic number there
        return ("it is neither of the formats torch writes (a zip archive or a pickle): a "
                "ranker file is written by save_ranker or 'hsched train'")
    if isinstance(exc, OSError) and exc.strerror:
        return f"cannot read it ({exc.strerror})"
    text = str(exc).strip().splitlines()
    return f"torch cannot read it ({shorten(text[0]) if text else type(exc).__name__})"


def _names(keys: list[str], limit: int = 3) -> str:
    shown = ", ".join(repr(k) for k in keys[:limit])
    return shown + (f" and {len(keys) - limit} more" if len(keys) > limit else "")


def _check_tensors(state_dict, source: str) -> None:
    if not isinstance(state_dict, dict) or not state_dict:
        raise ConfigError(f"must be a non-empty dict of the network's weights, got "
                          f"{show(state_dict)}", source=source, field="state_dict")
    for key, value in state_dict.items():
        field = f"state_dict.{key}"
        if not isinstance(key, str):
            raise ConfigError("a weight's name must be a string", source=source, field=field)
        if not isinstance(value, th.Tensor):
            raise ConfigError(f"must be a tensor, got {type(value).__name__}", source=source,
                              field=field)
        if not value.is_floating_point():
            raise ConfigError(f"must be a floating-point tensor, got {value.dtype}",
                              source=source, field=field)
        if not bool(th.isfinite(value).all()):
            raise ConfigError("holds NaN or infinite values", source=source, field=field)


# ---------------------------------------------------------------------------- meta values
def _fail(source: str, field: str, what: str, value) -> NoReturn:
    raise ConfigError(f"must be {what}, got {show(value)}", source=source, field=field)


def _text(value, source: str, field: str) -> None:
    if not isinstance(value, str):
        _fail(source, field, "a string", value)


def _count(value, source: str, field: str) -> None:
    if not is_whole_number(value) or value < 0:
        _fail(source, field, "a whole number >= 0", value)


def _number_in(low: float, high: float, low_open: bool, high_open: bool, what: str = ""):
    """A check of a number in the interval from ``low`` to ``high`` (``*_open``: the end
    excluded); NaN is refused."""
    span = f"{'(' if low_open else '['}{low:g}, {high:g}{')' if high_open else ']'}"

    def check(value, source: str, field: str) -> None:
        ok = is_real_number(value) and not math.isnan(value) and (
            (value > low if low_open else value >= low)
            and (value < high if high_open else value <= high))
        if not ok:
            _fail(source, field, f"a number in {span}{what}", value)
    return check


_threshold = _number_in(0.0, 1.0, True, True, " (a keep probability)")
_recall = _number_in(0.0, 1.0, True, False, " (a target recall)")
_share = _number_in(0.0, 1.0, False, False)


def _one_of(names: tuple[str, ...]):
    def check(value, source: str, field: str) -> None:
        if value not in names or not isinstance(value, str):
            _fail(source, field, f"one of {', '.join(map(repr, names))}", value)
    return check


def _size_thresholds(value, source: str, field: str) -> None:
    """``[[min_candidates, threshold], ...]``: one keep threshold per band of round size."""
    if not isinstance(value, (list, tuple)):
        _fail(source, field, "a list of [min_candidates, threshold] pairs", value)
    seen = set()
    for i, band in enumerate(value):
        where = f"{field}[{i}]"
        if not isinstance(band, (list, tuple)) or len(band) != 2:
            _fail(source, where, "a [min_candidates, threshold] pair", band)
        _count(band[0], source, f"{where}[0]")
        _threshold(band[1], source, f"{where}[1]")
        if band[0] in seen:
            raise ConfigError(f"a second band from {band[0]} candidates", source=source,
                              field=where)
        seen.add(band[0])


#: The keys of an operating point (``meta["operating_points"]``; ``size_thresholds``
#: optional), as ``agents.train._ranker_meta`` writes them.
POINT_KEYS = ("target_recall", "threshold", "size_thresholds")


def _operating_points(value, source: str, field: str) -> None:
    """``[{"target_recall", "threshold", "size_thresholds"}, ...]``: the points ``ranker@R``
    chooses from (``agents.ranker.operating_point``). A point holds no other key: a misspelt
    ``size_treshold`` would otherwise drop the point's bands without a word."""
    if not isinstance(value, (list, tuple)):
        _fail(source, field, "a list of operating points", value)
    seen = set()
    for i, point in enumerate(value):
        where = f"{field}[{i}]"
        if not isinstance(point, dict):
            _fail(source, where, "a dict with target_recall, threshold and size_thresholds",
                  point)
        for key in point:
            if key not in POINT_KEYS:
                near = (difflib.get_close_matches(key, POINT_KEYS, n=1, cutoff=0.8)
                        if isinstance(key, str) else [])
                raise ConfigError("is not a key ranker files use in an operating point "
                                  + (f"(did you mean {near[0]!r}?)" if near else
                                     f"(it holds {', '.join(POINT_KEYS)})"),
                                  source=source, field=f"{where}.{key}")
        for key in ("target_recall", "threshold"):
            if key not in point:
                raise ConfigError("missing", source=source, field=f"{where}.{key}")
        _recall(point["target_recall"], source, f"{where}.target_recall")
        _threshold(point["threshold"], source, f"{where}.threshold")
        if "size_thresholds" in point:
            _size_thresholds(point["size_thresholds"], source, f"{where}.size_thresholds")
        if point["target_recall"] in seen:
            raise ConfigError(f"a second point for recall {point['target_recall']:g}",
                              source=source, field=f"{where}.target_recall")
        seen.add(point["target_recall"])


#: The meta keys read or recorded by training (``agents.train._ranker_meta``,
#: ``save_ranker``'s callers) and the check of each value.
META_CHECKS = {
    "stage": _text,                       # "imitation" or "ppo"
    "regimes": _text,                     # the training regimes, or:
    "cluster": _text,                     # the training scenario
    "workload": _text,
    "threshold": _threshold,              # the main operating point
    "target_recall": _recall,
    "valid_recall": _share,
    "valid_kept_fraction": _share,
    "size_thresholds": _size_thresholds,
    "operating_points": _operating_points,
    "gate_candidates": _count,            # agents.ranker.Ranker's gates
    "max_kept_fraction": _number_in(0.0, 1.0, True, False, " (1: no unsure gate)"),
    "audit_every": _count,                # audits by default (0: none)
    "dagger": _count,
    "timesteps": _count,
    "inputs": _one_of(META_INPUTS),
    "prune": _one_of(PRUNE_SCOPES),       # RankEnv's prune scope it was trained for
    "arithmetic_fingerprint": _text,      # hsched train --portable-math (agents.portable_math)
}
