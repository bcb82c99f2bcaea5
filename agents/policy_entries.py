"""The policy list of an evaluation: ``PolicyEntry`` (a ``make_policy`` policy run by the
simulator, or a ranker), ``parse_policies`` (names such as ``pure-lp``, ``topk``,
``ranker:PATH`` and/or ranker objects to entries, unknown names rejected before anything runs),
``policy_names``, ``default_policies`` / ``DEFAULT_POLICIES``, ``load_ranker`` /
``DEFAULT_RANKER_PATH`` (the shipped ranker) and ``entries_to_items``. Part of the evaluation
harness, ``agents.evaluate``."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from hsched_env.errors import ConfigError, UnknownNameError
from lp_baseline.registry import POLICY_NAMES, make_policy

#: The shipped ranker (``ranker`` without a path).
DEFAULT_RANKER_PATH = Path(__file__).resolve().parent / "data" / "ranker.pt"
#: ``--policies`` when not given; ``ranker`` is added when the shipped ranker is present.
DEFAULT_POLICIES = ("pure-lp", "topk", "pop-4", "gavel", "fifo")


@dataclass
class PolicyEntry:
    """One policy of an evaluation: a simulator policy (``make_policy`` name) or a ranker."""

    label: str
    kind: str                         # "simulator" or "ranker"
    policy_name: str | None = None    # make_policy name
    ranker: object | None = None      # loaded ranker (keep(obs, env), name)
    path: str | None = None


def policy_names() -> list[str]:
    """Names accepted by ``--policies`` (besides ``ranker:PATH``)."""
    return ["pure-lp", "ranker", "ranker:PATH", *POLICY_NAMES]


def default_policies() -> list[str]:
    """``DEFAULT_POLICIES``, plus ``ranker`` when ``agents/data/ranker.pt`` and
    ``agents.ranker`` are both present."""
    names = list(DEFAULT_POLICIES)
    if DEFAULT_RANKER_PATH.exists() and _ranker_class(required=False) is not None:
        names.insert(3, "ranker")
    return names


def _ranker_class(required: bool = True):
    try:
        from agents.ranker import Ranker
    except ImportError as exc:
        if required:
            raise ConfigError(f"rankers need agents.ranker.Ranker, which cannot be imported "
                              f"({exc})", field="--policies") from None
        return None
    return Ranker


def load_ranker(path: str | Path):
    """``Ranker.load(path)`` (``agents.ranker``), with a one-line error for a missing file."""
    p = Path(path)
    if not p.exists():
        raise ConfigError(f"no ranker file {str(p)!r}", field="--policies")
    return _ranker_class().load(str(p))


def _ranker_label(name: str) -> str:
    name = str(name)
    return name if name.startswith("ranker") else f"ranker:{name}"


def parse_policies(items) -> list[PolicyEntry]:
    """Policy entries from names (a comma-separated string or a list) and/or ranker objects.

    Raises ``UnknownNameError`` (listing the valid names) for an unknown name, before anything
    runs; ranker files are loaded here.
    """
    if isinstance(items, str):
        items = [p.strip() for p in items.split(",") if p.strip()]
    if not items:
        raise ConfigError("no policy named", field="--policies")
    out, seen = [], set()
    for item in items:
        if not isinstance(item, str):
            if not callable(getattr(item, "keep", None)):
                raise ConfigError(f"{item!r} is neither a policy name nor a ranker "
                                  f"(keep(obs, env))", field="policies")
            entry = PolicyEntry(_ranker_label(getattr(item, "name", type(item).__name__)),
                                "ranker", ranker=item)
        elif item == "ranker" or item.startswith("ranker:"):
            path = item.split(":", 1)[1].strip() if ":" in item else str(DEFAULT_RANKER_PATH)
            if not path:
                raise ConfigError("ranker: needs a path (ranker:PATH)", field="--policies")
            r = load_ranker(path)
            entry = PolicyEntry(_ranker_label(getattr(r, "name", Path(path).name)), "ranker",
                                ranker=r, path=path)
        else:
            name = "heterosched-lp" if item == "pure-lp" else item
            try:
                make_policy(name)
            except UnknownNameError:
                raise UnknownNameError("policy", item, policy_names(),
                                       field="--policies") from None
            entry = PolicyEntry(item, "simulator", policy_name=name)
        label, i = entry.label, 2
        while entry.label in seen:                  # the same ranker twice: distinct labels
            entry.label = f"{label}#{i}"
            i += 1
        seen.add(entry.label)
        out.append(entry)
    return out


def entries_to_items(entries: list[PolicyEntry]) -> list:
    """Policy entries back to what ``evaluate`` accepts (names, loaded rankers), so a ranker
    file is loaded once."""
    return [e.ranker if e.kind == "ranker" else e.label for e in entries]
