"""The policy list of an evaluation: ``PolicyEntry`` (a ``make_policy`` policy or a
scheduling policy of one's own, run by the simulator, a rank-mode agent driving ``RankEnv``
or a select-mode agent driving ``ScheduleEnv``), ``parse_policies`` (names such as
``pure-lp``, ``topk``, ``ranker:PATH``, ``module:callable`` entry points, ``sb3:PATH.zip``
models, agent and policy objects to entries, unknown names rejected before anything runs),
``policy_names``, ``default_policies`` / ``DEFAULT_POLICIES``, ``load_ranker`` /
``DEFAULT_RANKER_PATH`` (the shipped ranker), ``load_entry_point``, ``load_sb3`` /
``SB3_ALGOS``, ``agent_entry``, ``simulator_policy_entry`` and ``entries_to_items``.
Part of the evaluation harness, ``agents.evaluate``.

The agent protocol (``docs/agents.md``, "Your own agent"): an object with

* ``keep(obs, env) -> (K,) int8`` keep bits — rank mode, driven by ``hsched/Rank-v0``
  (``RankEnv``): the HeteroSched LP solves each round over the kept candidates; or
* ``act(obs, env) -> int`` — select mode, driven by ``hsched/Schedule-v0`` (``ScheduleEnv``):
  an action ``i < K`` places the candidate of slot ``i``, ``K`` commits the round;

and optionally ``name`` (its label), ``slots`` (a fixed K: the environment is built with exactly
that many slots; rounds with more candidates lose their lowest-ranked ones, reported as slot
overflow) and ``env_kwargs`` (extra environment constructor arguments, e.g.
``{"candidate_filter": "score"}``).
"""

from __future__ import annotations

import copy
import importlib
import inspect
import os
import re
import sys
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from hsched_env.envs import RankEnv, ScheduleEnv
from hsched_env.envs.base import HSchedEnvBase
from hsched_env.envs.features import CLUSTER_FEATURES
from hsched_env.errors import ConfigError, UnknownNameError, shorten, show
from hsched_env.files import why_not_a_file
from lp_baseline.registry import (POLICY_NAMES_SPELLED, is_policy_name, make_policy,
                                  split_policy_list)

#: The shipped ranker (``ranker`` without a path).
DEFAULT_RANKER_PATH = Path(__file__).resolve().parent / "data" / "ranker.pt"
#: ``--policies`` when not given; ``ranker`` is added when the shipped ranker is present.
DEFAULT_POLICIES = ("pure-lp", "topk", "pop-4", "gavel", "fifo")
#: ``sb3:ALGO:PATH.zip`` algorithms (without ALGO the zip's policy class decides).
SB3_ALGOS = ("ppo", "maskable-ppo", "a2c", "dqn")
#: Prefixes of ``--policies`` items that are not Python modules.
_PREFIXES = ("ranker", "ranker-seed", "sb3")
#: ``module.path:attribute.path``
_ENTRY_POINT = re.compile(r"^[A-Za-z_]\w*(\.[A-Za-z_]\w*)*:[A-Za-z_]\w*(\.[A-Za-z_]\w*)*$")
#: Environment arguments an agent's ``env_kwargs`` may not set: the suite's scenario and
#: settings decide them (``measure_time=False`` would hide the LP's time, and the report
#: compares every agent against the same LP, ``heterosched-lp``).
SCENARIO_KWARGS = ("cluster", "workload", "job_candidates", "round_s", "restart_s",
                   "max_time_s", "throughputs", "measure_time", "lp_factory", "lp",
                   "lp_policy", "lp_objective")
FIELD = "--policies"


@dataclass
class PolicyEntry:
    """One policy of an evaluation.

    ``kind``: ``"simulator"`` (a ``make_policy`` policy by ``policy_name``, or a scheduling
    policy object, ``reset(cluster, seed)`` and ``decide(view)``, as ``policy``: each run
    gets a new one from ``policy_factory`` where an entry point's class or factory made it,
    else a copy), ``"ranker"`` (a rank-mode agent,
    ``keep(obs, env)``, driving ``RankEnv``) or ``"scheduler"`` (a select-mode agent,
    ``act(obs, env)``, driving ``ScheduleEnv``). ``slots``: the agent's fixed K (``None``: the
    harness chooses); ``env_kwargs``: extra environment arguments; ``observation_space``: the
    space an SB3 model was trained on (checked against each scenario before anything runs).
    """

    label: str
    kind: str                         # "simulator", "ranker" or "scheduler"
    policy_name: str | None = None    # make_policy name
    ranker: object | None = None      # rank-mode agent (keep(obs, env), name)
    path: str | None = None
    agent: object | None = None       # select-mode agent (act(obs, env), name)
    slots: int | None = None
    env_kwargs: dict = field(default_factory=dict)
    source: str | None = None         # where it came from: "module:callable", "sb3 PPO x.zip"
    observation_space: object | None = None
    policy: object | None = None      # a scheduling policy object (reset, decide), "simulator"
    policy_factory: object | None = None   # what made ``policy`` (an entry point's class)

    @property
    def actor(self):
        """The object the entry runs: the agent (rank or select mode), or a scheduling
        policy object; ``None`` for a policy by name."""
        if self.kind == "simulator":
            return self.policy
        return self.ranker if self.kind == "ranker" else self.agent


def policy_names() -> list[str]:
    """The policy names ``--policies`` accepts, as shown to users (help, unknown-name errors):
    general forms such as ``ranker:PATH`` and ``pop-K (2 <= K <= 1024)``, not a list to validate
    against (``make_policy`` and ``parse_policies`` validate)."""
    return ["pure-lp", "ranker", "ranker:PATH", "ranker@R", "ranker:PATH@R", "ranker-seed",
            "ranker-seed:PATH", "module:callable",
            "sb3:PATH.zip",
            *POLICY_NAMES_SPELLED]


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
                              f"({exc})", field=FIELD) from None
        return None
    return Ranker


def load_ranker(path: str | Path, target_recall: float | None = None,
                max_kept_fraction: float | None = None, mode: str = "prune",
                seed_fraction: float | None = None, audit_every: int | None = None,
                audit_recall: float | None = None, audit_start: str | None = None):
    """``Ranker.load(path)`` (``agents.ranker``), with a one-line error for a missing file
    and a pointer to ``sb3:`` for an SB3 model zip; ``target_recall``: the file's operating
    point for that recall (``Ranker``); ``max_kept_fraction``: its unsure gate, instead of
    the file's (1: off); ``mode``: ``"prune"`` or ``"seed"``; ``seed_fraction``: the share
    of a round, best-scored first, that starts the LP's column generation (``Ranker``);
    ``audit_every`` / ``audit_recall`` / ``audit_start``: its audits (``Ranker``; default
    the file's ``meta["audit_every"]``, none without it)."""
    p = Path(path)
    if p.suffix.lower() == ".zip":
        raise ConfigError(f"{str(p)!r} looks like a Stable-Baselines3 model zip, not a "
                          f"HeteroSched ranker file (.pt, from 'hsched train' or save_ranker): "
                          f"evaluate it with sb3:{p} --trust-sb3-zip", field=FIELD)
    why = why_not_a_file(p)
    if why:
        raise ConfigError(f"no ranker file {shorten(str(p), 80)!r}: {why}", field=FIELD)
    gate = {} if max_kept_fraction is None else {"max_kept_fraction": max_kept_fraction}
    if mode != "prune":
        gate.update(mode=mode, name=f"ranker-seed:{p.name}")
    if seed_fraction is not None:
        gate["seed_fraction"] = seed_fraction
    if audit_every is not None:
        gate["audit_every"] = audit_every
    if audit_recall is not None:
        gate["audit_recall"] = audit_recall
    if audit_start is not None:
        gate["audit_start"] = audit_start
    if target_recall is None:
        return _ranker_class().load(str(p), **gate)
    try:
        return _ranker_class().load(str(p), target_recall=target_recall,
                                    name=f"ranker:{p.name}@{target_recall:g}", **gate)
    except ConfigError as exc:
        if exc.source is not None or exc.field == "ranker":   # the file's own: names it
            raise
        raise ConfigError(exc.reason, source=f"ranker file {p}", field=FIELD) from None


#: ``@R`` at the end of a ranker spec: an operating point's target recall
_RECALL_SUFFIX = re.compile(r"^(?P<head>.*)@(?P<recall>[0-9]*\.?[0-9]+)$")


def _split_recall(spec: str) -> tuple[str, float | None]:
    """``"ranker:PATH@0.98"`` -> ``("ranker:PATH", 0.98)``; without ``@R``, ``None``. A
    path that itself holds '@' stays whole: only a trailing ``@`` + number is split off, and
    not when the whole spec names an existing file."""
    m = _RECALL_SUFFIX.match(spec)
    if m is None:
        return spec, None
    whole = spec.split(":", 1)[1] if ":" in spec else ""
    if whole and Path(whole).exists():
        return spec, None
    return m["head"], float(m["recall"])


def _ranker_label(name: str) -> str:
    name = str(name)
    return name if name.startswith("ranker") else f"ranker:{name}"


# ---------------------------------------------------------------------------- agents
def _env_arguments(cls) -> set[str]:
    names = set()
    for c in (cls, HSchedEnvBase):
        names |= {p.name for p in inspect.signature(c.__init__).parameters.values()
                  if p.kind not in (p.VAR_KEYWORD, p.VAR_POSITIONAL)}
    return names - {"self"}


def _is_agent(obj) -> bool:
    """Whether ``obj`` has an agent's method, ``keep`` (rank mode) or ``act`` (select)."""
    return callable(getattr(obj, "keep", None)) or callable(getattr(obj, "act", None))


def _agent_mode(obj, what: str, spec: str | None = None) -> str:
    """``"ranker"`` (``keep``) or ``"scheduler"`` (``act``) of agent ``obj``; ``what`` names
    it in the errors, ``spec`` is its ``module:callable`` entry point, if it has one."""
    keep, act = callable(getattr(obj, "keep", None)), callable(getattr(obj, "act", None))
    if keep and act:
        raise ConfigError(f"{what} has both keep() and act(): give it one of them (keep: rank "
                          f"mode on hsched/Rank-v0, act: select mode on hsched/Schedule-v0)",
                          field=FIELD)
    if not (keep or act):
        hint = ("; it is a scheduling policy (reset and decide): compare it with the LP by "
                f"hsched compare --policies heterosched-lp,{spec or 'MODULE:CALLABLE'}"
                if _is_simulator_policy(obj) else "")
        raise ConfigError(f"{what} is not an agent: it has neither keep(obs, env) -> (K,) "
                          f"keep bits (rank mode) nor act(obs, env) -> int (select mode)"
                          f"{hint}", field=FIELD)
    return "ranker" if keep else "scheduler"


def _agent_slots(obj, what: str, env_kwargs: dict) -> int | None:
    slots = getattr(obj, "slots", None)
    if slots is None:
        slots = env_kwargs.get("slots")
    elif "slots" in env_kwargs and env_kwargs["slots"] != slots:
        raise ConfigError(f"{what}: slots = {slots!r} but env_kwargs['slots'] = "
                          f"{env_kwargs['slots']!r}; give one", field=FIELD)
    if slots is None:
        return None
    if not (isinstance(slots, (int, np.integer)) and not isinstance(slots, bool)
            and slots >= 1):
        raise ConfigError(f"{what}: slots (its fixed K) must be a positive integer, got "
                          f"{slots!r}", field=FIELD)
    return int(slots)


def _agent_env_kwargs(obj, what: str, kind: str) -> dict:
    kw = getattr(obj, "env_kwargs", None)
    if kw is None:
        return {}
    if not isinstance(kw, dict) or not all(isinstance(k, str) for k in kw):
        raise ConfigError(f"{what}: env_kwargs must be a dict of environment arguments, got "
                          f"{kw!r}", field=FIELD)
    cls = RankEnv if kind == "ranker" else ScheduleEnv
    if "max_candidates" in kw:                    # the old name of slots
        if "slots" in kw:
            raise ConfigError(f"{what}: env_kwargs gives slots and its old name "
                              f"max_candidates; give one", field=FIELD)
        kw = {("slots" if k == "max_candidates" else k): v for k, v in kw.items()}
    fixed = sorted(set(kw) & set(SCENARIO_KWARGS))
    if fixed:
        raise ConfigError(f"{what}: env_kwargs cannot set {', '.join(fixed)} (the evaluated "
                          f"scenario and suite decide them)", field=FIELD)
    allowed = _env_arguments(cls) - set(SCENARIO_KWARGS)
    unknown = sorted(set(kw) - allowed)
    if unknown:
        raise ConfigError(f"{what}: env_kwargs {', '.join(map(repr, unknown))} are not "
                          f"arguments of {cls.__name__} ({'hsched/Rank-v0' if kind == 'ranker' else 'hsched/Schedule-v0'}); "
                          f"valid: {', '.join(sorted(allowed))}", field=FIELD)
    return dict(kw)


def agent_entry(obj, label: str | None = None, source: str | None = None) -> PolicyEntry:
    """The entry of an agent object (``keep`` or ``act``; optional ``name``, ``slots``,
    ``env_kwargs``). ``label`` defaults to ``name`` (rank agents: ``ranker:<name>``)."""
    what = source or repr(obj)
    kind = _agent_mode(obj, what, source if source and _ENTRY_POINT.match(source) else None)
    env_kwargs = _agent_env_kwargs(obj, what, kind)
    slots = _agent_slots(obj, what, env_kwargs)
    env_kwargs.pop("slots", None)
    if label is None:
        name = getattr(obj, "name", None) or type(obj).__name__
        label = _ranker_label(name) if kind == "ranker" else str(name)
    entry = PolicyEntry(label, kind, slots=slots, env_kwargs=env_kwargs, source=source)
    if kind == "ranker":
        entry.ranker = obj
    else:
        entry.agent = obj
    return entry


def simulator_policy_entry(obj, label: str | None = None, source: str | None = None,
                           factory=None) -> PolicyEntry:
    """The entry of a scheduling policy object (``reset(cluster, seed)`` and
    ``decide(view)``: docs/simulator.md, "Writing a policy"), run by the simulator like the
    named policies; ``label`` defaults to its ``name`` (else its class's name).
    ``factory``: what made ``obj`` (an entry point's class or factory), called for each run's
    own policy; without one each run gets a copy of ``obj`` (``copy.deepcopy``), so an object
    that cannot be copied is refused here rather than halfway through the runs."""
    if factory is None:
        try:
            copy.deepcopy(obj)
        except Exception as exc:            # noqa: BLE001 (the user's object: report it)
            raise ConfigError(f"{source or f'policy {type(obj).__name__}'}: evaluate runs a "
                              f"copy of a policy object for each run (copy.deepcopy), and "
                              f"this one cannot be copied: {type(exc).__name__}: {exc}; give "
                              f"its class (or a factory) instead, which is called for each "
                              f"run", field=FIELD) from None
    if label is None:
        label = str(getattr(obj, "name", None) or type(obj).__name__)
    return PolicyEntry(label, "simulator", policy=obj, policy_factory=factory, source=source)


def _import_module(name: str, field: str = FIELD):
    added = os.getcwd() not in sys.path and "" not in sys.path
    if added:                                 # like 'python -m': the current directory first,
        sys.path.insert(0, os.getcwd())       # for this import only
    try:
        return importlib.import_module(name)
    except ModuleNotFoundError as exc:
        if exc.name and (name == exc.name or name.startswith(exc.name + ".")):
            raise ConfigError(f"cannot import module {name!r} (no module named {exc.name!r}); "
                              f"it must be importable from the current directory or the "
                              f"Python path", field=field) from None
        raise ConfigError(f"importing module {name!r} failed: {type(exc).__name__}: {exc}",
                          field=field) from exc
    except Exception as exc:                      # noqa: BLE001 (the user's module: report it)
        raise ConfigError(f"importing module {name!r} failed: {type(exc).__name__}: {exc}",
                          field=field) from exc
    finally:
        if added and os.getcwd() in sys.path:
            sys.path.remove(os.getcwd())


def _entry_point_object(spec: str, field: str):
    """The object a ``module:callable`` entry point names: the module is imported (the
    current directory is on the path), the dotted attribute read."""
    if not _ENTRY_POINT.match(spec):
        raise ConfigError(f"{spec!r} is not a module:callable entry point", field=field)
    module_name, attr = spec.split(":", 1)
    obj = _import_module(module_name, field)
    for i, part in enumerate(attr.split(".")):
        if not hasattr(obj, part):
            where = ".".join([module_name] + attr.split(".")[:i])
            raise ConfigError(f"{spec}: {where!r} has no attribute {part!r}", field=field)
        obj = getattr(obj, part)
    return obj


def _made(factory, spec: str, field: str, noun: str, methods: str):
    """What the entry point ``spec``'s ``factory`` (a class or any callable) makes, called
    with no arguments; an error naming ``field`` when it is not callable or the call fails
    (``noun``, ``methods``: what it should have been, for the message)."""
    if not callable(factory):
        article = "an" if noun[0] in "aeiou" else "a"
        raise ConfigError(f"{spec} is {type(factory).__name__} {factory!r}: neither {article} "
                          f"{noun} ({methods}) nor a callable that makes one", field=field)
    try:
        return factory()
    except Exception as exc:                      # noqa: BLE001 (the user's factory)
        raise ConfigError(f"calling {spec}() to make the {noun} failed: "
                          f"{type(exc).__name__}: {exc}", field=field) from exc


def _is_simulator_policy(obj) -> bool:
    return callable(getattr(obj, "reset", None)) and callable(getattr(obj, "decide", None))


def load_simulator_policy(spec: str, field: str = "--policy"):
    """A scheduling policy (``reset(cluster, seed)`` and ``decide(view)``: docs/simulator.md,
    "Writing a policy") from a ``module:callable`` entry point, for ``hsched simulate`` and
    ``compare``: an object with both methods is the policy (shared by every run that loads
    it), a class or any other callable is called with no arguments to make a new one."""
    obj = _entry_point_object(spec, field)
    if inspect.isclass(obj) or not _is_simulator_policy(obj):
        obj = _made(obj, spec, field, "policy", "reset and decide")
    if not _is_simulator_policy(obj):
        hint = (" (it is an agent, keep or act: evaluate it with hsched evaluate --policies "
                f"pure-lp,{spec})" if _is_agent(obj) else "")
        raise ConfigError(f"{spec} made {type(obj).__name__} {shorten(repr(obj), 80)}, not a "
                          f"policy with reset(cluster, seed) and decide(view){hint}",
                          field=field)
    return obj


def load_entry_point(spec: str, policies_too: bool = False):
    """The agent of a ``module:callable`` entry point: the module is imported (the current
    directory is on the path), the dotted attribute read; an object with ``keep`` or ``act``
    is the agent, a class or any other callable is called with no arguments to make it.
    ``policies_too``: a scheduling policy (``reset`` and ``decide``, no ``keep`` or ``act``)
    is returned too (``hsched evaluate`` runs both); else it is refused, naming
    ``hsched compare``."""
    return _made_from_entry_point(spec, policies_too)[0]


def _made_from_entry_point(spec: str, policies_too: bool = False) -> tuple:
    """``load_entry_point``'s object and what made it: ``(object, the class or factory
    called)``, or ``(object, None)`` where the entry point named the object itself."""
    obj = factory = _entry_point_object(spec, FIELD)
    # a class is called; so is anything else but an agent or a scheduling policy's
    # instance (_agent_mode says what to do with the latter)
    if inspect.isclass(obj) or not (_is_agent(obj) or _is_simulator_policy(obj)):
        obj = _made(factory, spec, FIELD, "agent" + (" or policy" if policies_too else ""),
                    "keep or act" + (", or reset and decide" if policies_too else ""))
    else:
        factory = None
    if not (policies_too and _is_simulator_policy(obj) and not _is_agent(obj)):
        if policies_too and not _is_agent(obj):
            raise ConfigError(f"{spec} made {type(obj).__name__} {shorten(repr(obj), 80)}: "
                              f"neither an agent (keep(obs, env) or act(obs, env)) nor a "
                              f"scheduling policy (reset(cluster, seed) and decide(view))",
                              field=FIELD)
        _agent_mode(obj, f"{spec} (an object of type {type(obj).__name__})", spec)
    return obj, factory


# ---------------------------------------------------------------------------- SB3 models
def _sb3_class(algo: str):
    try:
        if algo == "maskable-ppo":
            from sb3_contrib import MaskablePPO
            return MaskablePPO
        import stable_baselines3 as sb3
    except ImportError as exc:
        raise ConfigError(f"sb3:{algo}: needs stable-baselines3 / sb3-contrib ({exc})",
                          field=FIELD) from None
    return {"ppo": sb3.PPO, "a2c": sb3.A2C, "dqn": sb3.DQN}[algo]


#: Algorithms whose zips load into each other's classes (the same actor-critic policy).
_SB3_FAMILY = {"ppo": "actor-critic", "a2c": "actor-critic"}


def _detect_algo(data: dict, path: str) -> str:
    """The algorithm of an SB3 zip, from its (unpickled) policy class and hyper-parameters."""
    from stable_baselines3.common.policies import ActorCriticPolicy
    from stable_baselines3.dqn.policies import DQNPolicy
    policy = data.get("policy_class")
    if isinstance(policy, type):
        try:
            from sb3_contrib.common.maskable.policies import MaskableActorCriticPolicy
            from sb3_contrib.common.recurrent.policies import RecurrentActorCriticPolicy
        except ImportError:
            MaskableActorCriticPolicy = RecurrentActorCriticPolicy = ()
        if RecurrentActorCriticPolicy and issubclass(policy, RecurrentActorCriticPolicy):
            raise ConfigError(f"{path}: a recurrent policy ({policy.__name__}); the harness "
                              f"evaluates PPO, MaskablePPO, A2C and DQN models", field=FIELD)
        if MaskableActorCriticPolicy and issubclass(policy, MaskableActorCriticPolicy):
            return "maskable-ppo"
        if issubclass(policy, DQNPolicy):
            return "dqn"
        if issubclass(policy, ActorCriticPolicy):
            return "ppo" if "clip_range" in data else "a2c"
    raise ConfigError(f"{path}: cannot tell the algorithm of policy {policy!r}; name it: "
                      f"sb3:ALGO:{path} with ALGO one of {', '.join(SB3_ALGOS)}", field=FIELD)


def _sb3_mode(action_space, path: str) -> tuple[str, int]:
    """(kind, K) from an SB3 model's action space."""
    from gymnasium import spaces
    if isinstance(action_space, spaces.Discrete) and int(action_space.n) >= 2:
        return "scheduler", int(action_space.n) - 1
    if isinstance(action_space, spaces.MultiBinary) and np.ndim(action_space.n) == 0:
        return "ranker", int(action_space.n)
    raise ConfigError(f"{path}: its action space {action_space} is neither Discrete(K + 1) "
                      f"(hsched/Schedule-v0, select mode) nor MultiBinary(K) (hsched/Rank-v0, "
                      f"rank mode)", field=FIELD)


def observation_mismatch(trained, expected, K: int) -> str | None:
    """``None`` when an SB3 model's observation space ``trained`` matches the environment's
    ``expected`` (K slots); else what differs, in words."""
    from gymnasium import spaces
    if not isinstance(trained, spaces.Dict):
        return (f"it was trained on observation space {trained}, not the HeteroSched "
                f"environments' Dict (candidates, valid, cluster, global) — was it trained "
                f"behind an observation wrapper?")
    got = {k: tuple(s.shape) for k, s in trained.spaces.items()}
    want = {k: tuple(s.shape) for k, s in expected.spaces.items()}
    if got == want:
        return None
    if set(got) != set(want):
        return (f"it was trained on observation keys {sorted(got)}, the environments give "
                f"{sorted(want)}")
    per_type = len(CLUSTER_FEATURES)
    T, F = want["cluster"][0] // per_type, want["candidates"][0] // K
    t_T = got["cluster"][0] // per_type if len(got["cluster"]) == 1 else "?"
    t_F = got["candidates"][0] // K if len(got["candidates"]) == 1 else "?"
    return (f"it was trained on observations of K={K} slots × F={t_F} candidate features "
            f"(candidates {got['candidates']}, cluster {got['cluster']}: T={t_T} GPU types), "
            f"this scenario gives F={F} (candidates {want['candidates']}, cluster "
            f"{want['cluster']}: T={T} GPU types); evaluate it on a cluster with {t_T} GPU "
            f"types (--cluster), or retrain it")


class SB3Agent:
    """A loaded SB3 / sb3-contrib model as an evaluation agent: ``predict(obs,
    deterministic=True)`` (MaskablePPO: with ``action_masks=env.action_masks()``); K is the
    model's (``slots``)."""

    def __init__(self, model, algo: str, path: str, slots: int) -> None:
        self.model, self.algo, self.path, self.slots = model, algo, path, int(slots)
        self.name = f"sb3:{Path(path).name}"
        self.observation_space = model.observation_space
        self._checked: set[int] = set()

    def _predict(self, obs, env):
        u = getattr(env, "unwrapped", env)
        if id(u.observation_space) not in self._checked:
            bad = observation_mismatch(self.observation_space, u.observation_space, u.K)
            if bad:
                raise ConfigError(f"{self.name}: {bad}", field=FIELD)
            self._checked.add(id(u.observation_space))
        kw = {"action_masks": u.action_masks()} if self.algo == "maskable-ppo" else {}
        action, _ = self.model.predict(obs, deterministic=True, **kw)
        return np.asarray(action)


class SB3Ranker(SB3Agent):
    """A ``MultiBinary(K)`` model: keep bits on ``hsched/Rank-v0``."""

    def keep(self, obs, env) -> np.ndarray:
        return self._predict(obs, env).astype(np.int8).reshape(-1)


class SB3Scheduler(SB3Agent):
    """A ``Discrete(K + 1)`` model: actions on ``hsched/Schedule-v0``."""

    def act(self, obs, env) -> int:
        return int(self._predict(obs, env).reshape(-1)[0])


def load_sb3(path: str | Path, algo: str | None = None, *, trust: bool = False) -> SB3Agent:
    """An SB3 / sb3-contrib model zip as an agent (``SB3Ranker`` or ``SB3Scheduler``, by its
    action space). The zip holds pickled Python objects that run code when loaded, so this
    needs ``trust=True``. ``algo`` (one of ``SB3_ALGOS``) defaults to what the zip's policy
    class says (``agent.algo``)."""
    p = str(path)
    if algo is not None and algo not in SB3_ALGOS:
        raise UnknownNameError("SB3 algorithm", algo, list(SB3_ALGOS), field=FIELD)
    why = why_not_a_file(Path(p))
    if why:
        raise ConfigError(f"no SB3 model file {shorten(p, 80)!r}: {why}", field=FIELD)
    if not trust:
        raise ConfigError(f"sb3:{p}: a Stable-Baselines3 zip carries pickled Python code that "
                          f"runs when it is loaded; load only files you trust, and say so with "
                          f"--trust-sb3-zip (Python: trust_sb3_zip=True)", field=FIELD)
    try:
        from stable_baselines3.common.save_util import load_from_zip_file
    except ImportError as exc:
        raise ConfigError(f"sb3:{p} needs stable-baselines3 ({exc})", field=FIELD) from None
    try:
        data, _, _ = load_from_zip_file(p, device="cpu")
    except Exception as exc:                      # noqa: BLE001 (any unreadable file)
        raise ConfigError(f"cannot read {p!r} as a Stable-Baselines3 model zip "
                          f"({type(exc).__name__}: {exc})", field=FIELD) from None
    if not isinstance(data, dict) or "action_space" not in data:
        raise ConfigError(f"{p!r} is not a Stable-Baselines3 model zip (no saved spaces)",
                          field=FIELD)
    kind, K = _sb3_mode(data["action_space"], p)
    if algo is None:
        algo = _detect_algo(data, p)
    else:
        try:
            saved = _detect_algo(data, p)
        except ConfigError:                        # an algorithm the zip does not tell
            saved = algo
        # PPO and A2C share their policy class and load each other's zips (the detection
        # tells them apart by PPO's clip_range only), so naming one is the way round it;
        # across families SB3 fails inside (a DQN reading a MaskablePPO's Dict spaces)
        if _SB3_FAMILY.get(saved, saved) != _SB3_FAMILY.get(algo, algo):
            raise ConfigError(f"sb3:{algo}:{p}: the zip holds a model of {saved} (policy "
                              f"{getattr(data.get('policy_class'), '__name__', '?')}), not "
                              f"of {algo}: name {saved}, or leave the algorithm out "
                              f"(sb3:{p})", field=FIELD)
    try:
        model = _sb3_class(algo).load(p, device="cpu")
    except ConfigError:
        raise
    except Exception as exc:                      # noqa: BLE001
        raise ConfigError(f"loading {p!r} as {algo} failed ({type(exc).__name__}: {exc})",
                          field=FIELD) from None
    try:
        import torch
        torch.set_num_threads(1)     # one observation per call: threads only add spin-waiting
    except ImportError:
        pass
    cls = SB3Ranker if kind == "ranker" else SB3Scheduler
    return cls(model, algo, p, K)


def _sb3_item(item: str) -> tuple[str | None, str]:
    """(algo, path) of ``sb3:PATH`` / ``sb3:ALGO:PATH``."""
    rest = item.split(":", 1)[1].strip() if ":" in item else ""
    head, sep, tail = rest.partition(":")
    algo = head.strip().lower()
    if sep and algo in SB3_ALGOS:
        return algo, tail.strip()
    if sep and re.fullmatch(r"[a-z0-9_-]+", algo) and not Path(rest).exists():
        raise UnknownNameError("SB3 algorithm", algo, list(SB3_ALGOS), field=FIELD)
    return None, rest


def sb3_entry(item: str, trust: bool) -> PolicyEntry:
    algo, path = _sb3_item(item)
    if not path:
        raise ConfigError("sb3: needs a model zip (sb3:PATH.zip or sb3:ALGO:PATH.zip)",
                          field=FIELD)
    agent = load_sb3(path, algo, trust=trust)
    how = "given" if algo else "detected from the zip's policy class"
    entry = agent_entry(agent, label=agent.name,
                        source=f"{type(agent.model).__name__} ({how}) from {path}")
    entry.path = path
    entry.observation_space = agent.observation_space
    return entry


# ---------------------------------------------------------------------------- the list
def parse_policies(items, trust_sb3_zip: bool = False,
                   max_kept_fraction: float | None = None,
                   seed_fraction: float | None = None, audit_every: int | None = None,
                   audit_recall: float | None = None,
                   audit_start: str | None = None) -> list[PolicyEntry]:
    """Policy entries from names (a comma-separated string or a list), agent objects and/or
    ``PolicyEntry`` objects (kept as they are).

    Names: ``pure-lp``, any ``make_policy`` name, ``ranker`` / ``ranker:PATH`` (its keep bits
    prune the LP), ``ranker-seed`` / ``ranker-seed:PATH`` (the same file in seed mode: its
    best-scored candidates start the whole LP's column generation, ``agents.ranker.Ranker``),
    ``module:callable`` (an agent entry point, ``load_entry_point``) and ``sb3:PATH.zip`` /
    ``sb3:ALGO:PATH.zip`` (``load_sb3``; needs ``trust_sb3_zip=True``). Raises
    ``UnknownNameError`` (listing the valid names) for an unknown name and ``ConfigError`` for
    an entry that cannot be loaded, before anything runs; files are loaded here.
    ``max_kept_fraction``: every ranker file named here runs with this unsure gate instead
    of its own (``agents.ranker.Ranker``; 1: off); an error if no ranker file is named.
    ``seed_fraction``: every ranker file named here starts the LP's column generation from
    this share of a round (seed mode's start, and prune mode's unsure rounds' and audits';
    0: those from the LP's own start); an error if no ranker file is named.
    ``audit_every`` / ``audit_recall`` / ``audit_start``: every prune-mode ranker file named
    here audits its pruning (``agents.ranker.Ranker``; None: each file's own, ``meta
    ["audit_every"]``; 0: no audits); an error if none is named, and ``audit_recall`` /
    ``audit_start`` only for a file that audits (given or its own). ``trust_sb3_zip``: an
    error if no ``sb3:`` item is named (it would allow nothing).
    """
    if isinstance(items, str):
        items = split_policy_list(items, FIELD)
    if isinstance(items, (bytes, dict)) or not isinstance(items, Iterable):
        raise ConfigError(f"policies are a comma-separated string or a list of names, agents "
                          f"and PolicyEntry objects, got {show(items)}", field=FIELD)
    items = list(items)
    if not items:
        raise ConfigError("no policy named", field=FIELD)
    if trust_sb3_zip and not any(isinstance(i, str) and (i == "sb3" or i.startswith("sb3:"))
                                 for i in items):           # (a bare sb3: its own error)
        raise ConfigError("allows the SB3 zip files named (sb3:PATH.zip), and the policies "
                          "name none", field="--trust-sb3-zip")
    if max_kept_fraction is not None:
        from agents.ranker import check_max_kept_fraction
        max_kept_fraction = check_max_kept_fraction(max_kept_fraction, "--max-kept-fraction")
        if not any(isinstance(i, str) and _names_ranker_file(i)
                   and not i.startswith("ranker-seed") for i in items):
            raise ConfigError("sets the unsure gate of the ranker files named (ranker, "
                              "ranker:PATH), and the policies name none (agent objects keep "
                              "their own gates; ranker-seed has no unsure gate)",
                              field="--max-kept-fraction")
    if seed_fraction is not None:
        from agents.ranker import check_seed_fraction
        seed_fraction = check_seed_fraction(seed_fraction, "--seed-fraction")
        if not any(isinstance(i, str) and _names_ranker_file(i) for i in items):
            raise ConfigError("sets the start of the ranker files named (ranker, ranker:PATH, "
                              "ranker-seed, ranker-seed:PATH), and the policies name none",
                              field="--seed-fraction")
    audit_every, audit_recall, audit_start = _checked_audits(items, audit_every, audit_recall,
                                                             audit_start)
    out, seen = [], set()
    for item in items:
        if isinstance(item, PolicyEntry):
            entry = item
        elif not isinstance(item, str):
            if _is_agent(item):
                entry = _own(agent_entry(item))
            elif _is_simulator_policy(item):
                entry = _own(simulator_policy_entry(item))
            else:
                raise ConfigError(f"{shorten(repr(item), 80)} is neither a policy name, an "
                                  f"agent (keep(obs, env) or act(obs, env)) nor a scheduling "
                                  f"policy (reset(cluster, seed) and decide(view))",
                                  field="policies")
        elif _names_ranker_file(item):
            seed = item == "ranker-seed" or item.startswith(("ranker-seed:", "ranker-seed@"))
            spec, recall = _split_recall(item)
            if seed and (recall is not None or spec.startswith("ranker-seed@")):
                raise ConfigError(f"{item!r}: ranker-seed takes no @R operating point (seed "
                                  f"mode keeps its best-scored share of each round, not a "
                                  f"recall threshold)", field=FIELD)
            if spec.startswith("ranker@"):     # "ranker@" + something not a number
                raise ConfigError(f"{item!r}: the operating point after '@' must be a target "
                                  f"recall such as ranker@0.95", field=FIELD)
            path = spec.split(":", 1)[1].strip() if ":" in spec else str(DEFAULT_RANKER_PATH)
            if not path:
                raise ConfigError(f"{spec.split(':')[0]}: needs a path "
                                  f"({spec.split(':')[0]}:PATH)", field=FIELD)
            audits = {} if seed else {"audit_every": audit_every,
                                      "audit_recall": audit_recall,
                                      "audit_start": audit_start}
            r = load_ranker(path, target_recall=recall, max_kept_fraction=max_kept_fraction,
                            mode="seed" if seed else "prune", seed_fraction=seed_fraction,
                            **audits)
            if not seed:
                _check_audited(r, path, audit_recall, audit_start)
            point = None if seed else getattr(r, "target_recall", None)
            entry = PolicyEntry(_ranker_label(getattr(r, "name", Path(path).name)), "ranker",
                                ranker=r, path=path,
                                source=f"ranker file {path}" + (
                                    f", operating point for recall {point:g}"
                                    if point is not None else "") + _gates_text(r),
                                env_kwargs=_agent_env_kwargs(r, f"ranker file {path}",
                                                             "ranker"))
        elif item == "sb3" or item.startswith("sb3:"):
            entry = sb3_entry(item, trust_sb3_zip)
        elif ":" in item and item.split(":", 1)[0] not in _PREFIXES:
            if not _ENTRY_POINT.match(item):
                raise ConfigError(f"{item!r} is not a policy name, ranker:PATH, sb3:PATH.zip "
                                  f"or a module:callable entry point (module and attribute "
                                  f"are dotted Python names)", field=FIELD)
            obj, factory = _made_from_entry_point(item, policies_too=True)
            label = getattr(obj, "name", None) or item
            entry = _own(agent_entry(obj, label=label, source=item) if _is_agent(obj)
                         else simulator_policy_entry(obj, label=str(label), source=item,
                                                     factory=factory))
        else:
            name = "heterosched-lp" if item == "pure-lp" else item
            try:
                make_policy(name)
            except UnknownNameError:
                raise UnknownNameError("policy", item, policy_names(),
                                       field=FIELD) from None
            entry = PolicyEntry(item, "simulator", policy_name=name)
        label, i = entry.label, 2
        while entry.label in seen:                  # the same ranker twice: distinct labels
            entry.label = f"{label}#{i}"
            i += 1
        seen.add(entry.label)
        out.append(entry)
    return out


def _own(entry: PolicyEntry) -> PolicyEntry:
    """``entry``, of a policy or agent of one's own, unless it is labelled as a built-in
    policy (refused: the report finds the LP reference by its label, ``pure-lp``, and a
    second ``gavel`` would read as the built-in one)."""
    label = entry.label
    if label == "pure-lp" or is_policy_name(label):
        raise ConfigError(f"{entry.source or entry.label}: its name {label!r} is a built-in "
                          f"policy's, which labels that policy's results; give yours "
                          f"another name", field=FIELD)
    return entry


def _checked_audits(items, audit_every, audit_recall,
                    audit_start=None) -> tuple[int | None, float | None, str | None]:
    """``parse_policies``' ``audit_every``, ``audit_recall`` and ``audit_start`` checked
    against the policies (``--audit-every``, ``--audit-recall``, ``--audit-start``)."""
    if audit_recall is None and audit_start is None and audit_every is None:   # the files'
        return None, None, None
    from agents.ranker import check_audit_every, check_audit_recall, check_audit_start
    if audit_every is not None:
        audit_every = check_audit_every(audit_every, "--audit-every")
    if audit_recall is not None:
        audit_recall = check_audit_recall(audit_recall, "--audit-recall")
        if audit_every == 0:
            raise ConfigError("sets the recall an audit must reach, and --audit-every 0 turns "
                              "the audits off", field="--audit-recall")
    if audit_start is not None:
        audit_start = check_audit_start(audit_start, "--audit-start")
        if audit_every == 0:
            raise ConfigError("sets what starts an audit's LP, and --audit-every 0 turns the "
                              "audits off", field="--audit-start")
    if not any(isinstance(i, str) and _names_ranker_file(i) and not i.startswith("ranker-seed")
               for i in items):
        raise ConfigError("sets the audits of the prune-mode ranker files named (ranker, "
                          "ranker:PATH), and the policies name none (agent objects keep "
                          "their own; ranker-seed solves every round whole)",
                          field="--audit-every" if audit_every is not None
                          else "--audit-recall" if audit_recall is not None
                          else "--audit-start")
    return audit_every, audit_recall, audit_start


def _check_audited(ranker, path: str, audit_recall: float | None,
                   audit_start: str | None) -> None:
    """``ConfigError`` when ``--audit-recall`` or ``--audit-start`` is given for a ranker
    file that audits nothing (no ``--audit-every`` and no ``meta["audit_every"]``)."""
    for flag, value in (("--audit-recall", audit_recall), ("--audit-start", audit_start)):
        if value is not None and not getattr(ranker, "audit_every", 0):
            raise ConfigError(f"sets its audits, and ranker file {shorten(str(path), 80)} "
                              f"audits nothing by default (its meta sets no audit_every): "
                              f"give --audit-every N", field=flag)


def _names_ranker_file(item: str) -> bool:
    """Whether a ``--policies`` name is a ranker file: ``ranker``, ``ranker:PATH``,
    ``ranker@R``, ``ranker:PATH@R``, ``ranker-seed``, ``ranker-seed:PATH``."""
    return item in ("ranker", "ranker-seed") or item.startswith(("ranker:", "ranker@",
                                                                 "ranker-seed:", "ranker-seed@"))


def _gates_text(ranker) -> str:
    """``, gates: ...`` — the rounds a ``Ranker`` solves whole (empty for other agents)."""
    gates = []
    if getattr(ranker, "gate_candidates", 0):
        gates.append(f"fewer than {ranker.gate_candidates:,} candidates")
    if getattr(ranker, "mode", "prune") == "seed":
        share = ranker.seed_fraction * 100
        return (f", seed mode: its best-scored {share:.4g}% of each round (and each job's "
                f"best) start the whole LP's column generation"
                + (f"; rounds with {gates[0]} get the LP's own start" if gates else ""))
    if getattr(ranker, "max_kept_fraction", 1.0) < 1.0:
        gates.append(f"more than {ranker.max_kept_fraction * 100:.4g}% of a round kept "
                     f"(unsure)")
    text = f", solves whole the rounds with {' or '.join(gates)}" if gates else ""
    if getattr(ranker, "audit_every", 0):
        n = ranker.audit_every
        which = ("every round it would prune" if n == 1 else
                 f"the first round it would prune and every {n}{_ordinal(n)} after it")
        how = getattr(ranker, "audit_start_in_use", "own")
        start = {"seed": f"from its best-scored {ranker.seed_fraction * 100:.4g}% and each "
                         f"job's best",
                 "kept": "from the set it would have kept"}.get(how,
                                                                "from the LP's own start")
        whose = " by its file's default" if getattr(ranker, "audits_from_file", False) else ""
        text += (f"; audits its pruning{whose} ({which} solved whole, {start}; a recall of the "
                 f"LP's support below {ranker.audit_recall:g} backs off)")
    return text


def _ordinal(n: int) -> str:
    """``nd``, ``rd`` or ``th``: the suffix of ``n``-th (n >= 2)."""
    if n % 100 in (11, 12, 13):
        return "th"
    return {1: "st", 2: "nd", 3: "rd"}.get(n % 10, "th")


def describe_entry(entry: PolicyEntry) -> str | None:
    """One line on where an agent entry came from, its mode and K, or a policy object's
    (``None``: a policy by name)."""
    if entry.kind == "simulator":
        if entry.policy is None:
            return None
        cls = type(entry.policy)
        fresh = "made anew" if entry.policy_factory is not None else "a copy"
        return (f"{entry.source or f'{cls.__module__}.{cls.__qualname__}'}; a scheduling "
                f"policy (reset, decide) run by the simulator, {fresh} for each run")
    mode = ("rank mode (keep bits, hsched/Rank-v0)" if entry.kind == "ranker"
            else "select mode (actions, hsched/Schedule-v0)")
    if entry.slots is not None:
        k = f"K = {entry.slots} (the agent's own)"
    elif entry.kind == "ranker":
        k = "K = every candidate of the workload (rank_slots_bound)"
    else:
        k = "K = hsched/Schedule-v0's default"
    extra = f"; env_kwargs {entry.env_kwargs}" if entry.env_kwargs else ""
    src = f"{entry.source}; " if entry.source else ""
    return f"{src}{mode}, {k}{extra}"


def entries_to_items(entries: list[PolicyEntry]) -> list:
    """Policy entries as ``evaluate`` takes them: the entries themselves, which it uses as
    they are, so no file is loaded twice and no label is looked up as a name (a policy
    listed twice is labelled ``fifo#2``, which is not one)."""
    return list(entries)
