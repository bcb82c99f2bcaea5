"""The scheduling policies by name: ``POLICY_NAMES`` and ``make_policy``.

The LP policies (``lp_baseline.policy.LPPolicy``): ``heterosched-lp`` (the reference
co-optimizer: all candidates, ``sia-srpt``, integral rounding), ``heterosched-lp-las`` (the same
with the non-clairvoyant ``sia-las``), ``heterosched-lp-v1`` (the previous default: ``fair-srpt``
with its fairness floor, size cap and Gavel-style rounding), ``gavel`` (Gavel's
heterogeneity-aware max-min with its ``X_equal`` normalizer and scale factors, only each job's requested GPU count
with plain data parallelism on each type: no strategy co-optimization; a new allocation every round, re-solved when the LP changed;
rounded by Gavel's own per-type priority queues, ``lp_baseline.gavel_queues``), ``gavel-sticky``
(the same LP rounded by HeteroSched's job-level Gavel-style rounding, ``lp_baseline.rounding``,
which keeps a job on its candidate while the LP gives it a share: the ``gavel`` policy until
session 61),
``gavel-resets`` (the same LP recomputed on Gavel's own schedule: when the job set changed
and at least 1,920 s after the last reset, ``GAVEL_MIN_RESET_S`` — another schedule, and
faster), ``agnostic-lp`` (the
same, with every type's throughput taken as equal), ``heterosched-lp-v0`` (an ablation: max-min
over every candidate with Gavel's normalizer and no size cap, on today's rounding and candidate
tables), ``topk``, ``pop-K``, ``lp-on-change`` and ``support-reuse``
(``lp_baseline.support_reuse``: the LP over each job's previous support). ``sia`` and ``heterosched-ilp``
(``lp_baseline.sia``) are Sia's ILP and the co-optimizing ILP on it; the others are the non-LP
baselines of ``lp_baseline.baselines``.
"""

from __future__ import annotations

import inspect
import re
from functools import lru_cache

from hsched_env.errors import (ConfigError, UnknownNameError, is_switch_value, is_whole_number,
                               show)

POLICY_NAMES = ("heterosched-lp", "heterosched-ilp", "lp-on-change", "topk", "topk-dominance",
                "support-reuse",
                "gavel", "gavel-resets", "gavel-sticky", "sia",
                "agnostic-lp", "pop-2", "pop-4", "pop-8", "pop-4-serial", "heterosched-lp-las",
                "heterosched-lp-v0", "heterosched-lp-v1", "fifo",
                "fifo-fastest", "gavel-fifo", "srf", "greedy", "random")
#: The most parts ``pop-K`` takes (each part gets 1/K of every GPU type, rounded down): far
#: above the few to tens of parts POP is run with, and bounded because an unbounded K made
#: ``pop-99999999999999999999`` an ``OverflowError`` traceback and a K of millions ran on.
MAX_POP_PARTS = 1024
#: ``POLICY_NAMES`` as a user reads them (help texts, unknown-name errors): the ``pop-*``
#: examples replaced by their general forms, which take any K from 2 to ``MAX_POP_PARTS``.
POLICY_NAMES_SPELLED = tuple(n for n in POLICY_NAMES if not n.startswith("pop-")) + (
    f"pop-K (2 <= K <= {MAX_POP_PARTS})", "pop-K-serial")


#: How an LP policy is solved: every LP policy reads these ``make_policy`` options.
SOLVER_OPTIONS = frozenset({"backend", "time_limit_s", "memoize", "lp_method", "warm_start"})


#: Gavel's LP policies: max-min over the requested configurations (``make_policy``'s
#: ``gavel_like``); only the solver's options reach them.
GAVEL_POLICIES = ("gavel", "gavel-resets", "gavel-sticky", "agnostic-lp")
#: The objective of each LP policy whose objective is fixed by its definition.
_FIXED_OBJECTIVES = {**{name: "max-min" for name in GAVEL_POLICIES},
                     "heterosched-lp-v0": "max-min", "heterosched-lp-las": "sia-las",
                     "heterosched-lp-v1": "fair-srpt"}
#: The LP policies whose objective is fixed by their definition (``--objective`` is not read).
FIXED_OBJECTIVE = tuple(_FIXED_OBJECTIVES)


def fixed_objective(name: str) -> str | None:
    """The LP objective of a ``FIXED_OBJECTIVE`` policy; ``None`` for the others."""
    return _FIXED_OBJECTIVES.get(name)


def split_policy_list(text: str, field: str = "--policies") -> list[str]:
    """The names of a comma-separated policy list (``"fifo, gavel"``), blanks stripped; an
    empty list or an empty entry (``"fifo,"``, ``",fifo"``, ``"fifo,,gavel"``) is an error
    naming ``field``, not skipped."""
    names = [part.strip() for part in str(text).split(",")]
    if not any(names):
        raise ConfigError("no policy named", field=field)
    if not all(names):
        where = names.index("") + 1
        raise ConfigError(f"entry {where} of {show(text)} is empty (a stray comma?)",
                          field=field)
    return names


def policy_options(name: str) -> frozenset[str]:
    """The ``make_policy`` options policy ``name`` reads (``objective``, ``floor``,
    ``ftf_guard``, ``round_restart``, ``topk`` and ``SOLVER_OPTIONS``); it ignores the others.
    The non-LP baselines, ``sia`` and ``heterosched-ilp`` read none; Gavel's policies only the
    solver's; the co-optimizer's also ``objective`` and ``ftf_guard`` (unless
    ``FIXED_OBJECTIVE``), ``round_restart`` (unless fixed to an objective other than
    ``sia-srpt`` / ``sia-las``: ``heterosched-lp-las`` reads it) and
    ``floor``, except a fixed objective
    without a floor (``heterosched-lp-v0``: max-min). Under an ``objective`` without a floor
    (not one of ``FLOOR_OBJECTIVES``) ``LPPolicy`` refuses a given floor, with the reason;
    ``topk`` and ``topk-dominance`` also ``topk``."""
    from lp_baseline.baselines import BASELINES
    if name in BASELINES or name in ("sia", "heterosched-ilp"):
        return frozenset()
    if name in GAVEL_POLICIES:
        return SOLVER_OPTIONS
    own = set(SOLVER_OPTIONS)
    if name not in FIXED_OBJECTIVE:
        own.add("objective")
    from lp_baseline.problem import FLOOR_OBJECTIVES, SIA_OBJECTIVES
    if name not in FIXED_OBJECTIVE or fixed_objective(name) in FLOOR_OBJECTIVES:
        own.add("floor")
    if name not in FIXED_OBJECTIVE:
        own.add("ftf_guard")           # (read under sia-srpt, refused under the others)
    if name not in FIXED_OBJECTIVE or fixed_objective(name) in SIA_OBJECTIVES:
        own.add("round_restart")       # (read under sia-srpt / sia-las, refused elsewhere)
    if name in ("topk", "topk-dominance"):
        own.add("topk")
    return frozenset(own)


@lru_cache(maxsize=1)
def _lp_options() -> frozenset[str]:
    """The keyword options ``LPPolicy`` takes (its signature, read once)."""
    from lp_baseline.policy import LPPolicy
    return frozenset(inspect.signature(LPPolicy.__init__).parameters) - {"self", "name"}


#: ``LPPolicy`` options some policies fix by their definition: given to them, an error (it
#: was ignored, overridden or a ``TypeError``). Gavel's policies take the solver's only.
_FIXED_OPTIONS = {"lp-on-change": frozenset({"resolve"}),
                  "topk-dominance": frozenset({"dominance"}),
                  "heterosched-lp-v0": frozenset({"normalizer", "size_cap"})}
_GAVEL_OPTIONS = frozenset({"lp_method", "warm_start"})
#: ``pop-K`` / ``pop-K-serial`` with K ≥ 2 written plainly (what ``make_policy`` builds; a K
#: above ``MAX_POP_PARTS`` is refused there).
_POP_NAME = re.compile(r"pop-([2-9]|[1-9][0-9]+)(-serial)?")


def is_policy_name(name: str) -> bool:
    """Whether ``name`` names a built-in policy (``POLICY_NAMES`` or a ``pop-K`` form),
    whatever K (``make_policy`` bounds it)."""
    return name in POLICY_NAMES or bool(_POP_NAME.fullmatch(name))


def options_read_by(name: str, options: dict) -> dict:
    """The entries of ``options`` (``make_policy`` keywords given to several policies at
    once, such as a command line's flags) that policy ``name`` reads (``policy_options``):
    what to pass it, since ``make_policy`` refuses the others away from their defaults."""
    reads = policy_options(name)
    return {key: value for key, value in options.items() if key in reads}


#: ``make_policy``'s own keywords and their defaults.
_OWN_DEFAULTS = {"objective": None, "backend": "highs", "topk": 4, "time_limit_s": None,
                 "memoize": True}


def _refuse_own_options_it_ignores(name: str, **given) -> None:
    """One of ``make_policy``'s own keywords, away from its default, given to a policy that
    does not read it (``fifo`` with ``objective``, ``gavel`` with ``topk``,
    ``heterosched-lp-las`` with another objective than its own): a ``ConfigError``, as for
    the ``LPPolicy`` options (until session 51 they were silently ignored)."""
    if not is_policy_name(name):
        return                                   # an unknown name: make_policy says so
    reads = policy_options(name)
    ignored = sorted(key for key, value in given.items()
                     if key not in reads and not _same(value, _OWN_DEFAULTS[key])
                     and not (key == "objective" and value == fixed_objective(name)))
    if ignored:
        raise ConfigError(f"{name} does not read {', '.join(ignored)} (given "
                          f"{', '.join(f'{k}={show(given[k])}' for k in ignored)}): its "
                          f"definition fixes {'it' if len(ignored) == 1 else 'them'}, or it "
                          f"has no such setting", field=ignored[0])


def _same(value, default) -> bool:
    """``value == default`` for a keyword's value of any type: ``None`` only equals itself, a
    switch only a switch (NumPy's too), a whole number only a whole number (``np.int64(4)``
    is ``topk``'s 4; ``True`` is not)."""
    if default is None or value is None:
        return value is default
    if isinstance(default, bool):
        return is_switch_value(value) and bool(value) == default
    if isinstance(default, int):
        return is_whole_number(value) and int(value) == default
    return type(value) is type(default) and value == default


def _refuse_options_it_does_not_take(name: str, lp_options: dict) -> None:
    """An ``LPPolicy`` option given to a policy that ignores it (``sia`` with ``floor``,
    ``gavel`` with ``normalizer``) or fixes it (``pop-4`` with ``pop``): a ``ConfigError``,
    as the command line refuses a flag no policy given reads. ``lp_method`` and
    ``warm_start`` reach every policy (the command line hands them to all: those without an
    LP ignore them, as documented)."""
    from lp_baseline.baselines import BASELINES
    if name in BASELINES or name in ("sia", "heterosched-ilp", *GAVEL_POLICIES):
        ignored = set(lp_options) - _GAVEL_OPTIONS
    elif not is_policy_name(name):
        return                                   # an unknown name: make_policy says so
    else:             # (LPPolicy refuses a floor, guard or round_restart its objective ignores)
        ignored = set(lp_options) & _FIXED_OPTIONS.get(name, frozenset())
        if name.startswith("pop-"):
            ignored |= set(lp_options) & ({"pop", "pop_workers", "pop_executor"}
                                          if name.endswith("-serial") else {"pop"})
            if lp_options.get("pop_workers") == 1 and "pop_executor" in lp_options:
                ignored.add("pop_executor")       # one worker: the parts run in this thread
        elif not (is_whole_number(lp_options.get("pop", 1)) and lp_options.get("pop", 1) > 1):
            # one part: nothing is split, so where and on how many workers is never read
            ignored |= set(lp_options) & {"pop_workers", "pop_executor"}
    if ignored:
        raise ConfigError(f"{name} does not take option(s) {', '.join(sorted(ignored))}: its "
                          f"definition fixes them, or it does not read them",
                          field=sorted(ignored)[0])


def make_policy(name: str, *, objective: str | None = None, backend: str = "highs",
                topk: int = 4, time_limit_s: float | None = None, memoize: bool = True,
                **lp_options):
    """A policy by name (see ``POLICY_NAMES``); ``pop-K`` takes K from 2 to ``MAX_POP_PARTS``
    and solves its K parts side by side on up to ``min(K, CPUs)`` workers (``pop-K-serial`` or
    ``pop_workers=1``: one after the other; ``pop_executor=``: where, see
    ``lp_baseline.parallel_parts``).

    Args:
        name: The policy.
        objective: The LP objective of the co-optimizer's policies (``heterosched-lp``,
            ``lp-on-change``, ``topk``, ``topk-dominance``, ``pop-K``); ``None``: the default
            (``DEFAULT_OBJECTIVE``). ``gavel``, ``agnostic-lp`` and ``heterosched-lp-v0`` are
            max-min by definition; ``heterosched-lp-las`` (``sia-las``) and
            ``heterosched-lp-v1`` (``fair-srpt``) fix theirs.
        backend, topk, time_limit_s, memoize: As in ``LPPolicy``: ``backend``,
            ``time_limit_s`` and ``memoize`` for every LP policy, ``topk`` for ``topk`` and
            ``topk-dominance``. Each of the five, away from its default, is refused where the
            policy does not read it (``policy_options``).
        lp_options: Further ``LPPolicy`` keywords for those policies (``floor``,
            ``las_tau_s``, ``restart_aware``, ``size_cap``, ``normalizer``, ...);
            ``lp_method`` and ``warm_start`` also reach Gavel's policies (``GAVEL_POLICIES``).
    """
    from lp_baseline.baselines import BASELINES
    if not isinstance(name, str):
        raise ConfigError(f"a policy is named by a string, got {show(name)}", field="policy")
    if not is_whole_number(topk) or topk < 1:
        raise ConfigError(f"topk must be a whole number >= 1, got {show(topk)}", field="topk")
    # (``_lp_options`` imports the LP policy: only when options are given, so that a non-LP
    # policy made without any does not load SciPy and HiGHS)
    unknown = sorted(set(lp_options) - _lp_options()) if lp_options else []
    if unknown:
        raise ConfigError(f"unknown LP policy option(s) {', '.join(unknown)}; LPPolicy takes "
                          f"{', '.join(sorted(_lp_options()))}", field=unknown[0])
    _refuse_options_it_does_not_take(name, lp_options)
    _refuse_own_options_it_ignores(name, objective=objective, backend=backend, topk=topk,
                                   time_limit_s=time_limit_s, memoize=memoize)
    if name in BASELINES:
        return BASELINES[name]()
    # the LP policies' modules (scipy, HiGHS) load only when an LP policy is asked for, so a
    # ``hsched simulate --policy fifo-fastest`` starts without them
    from lp_baseline.policy import DEFAULT_OBJECTIVE, GAVEL_MIN_RESET_S, LPPolicy
    if name == "sia":
        from lp_baseline.sia import SiaPolicy
        return SiaPolicy()
    if name == "heterosched-ilp":
        # Sia's ILP over every candidate of the planner with SRPT job weights: an integral
        # co-optimizer (lp_baseline/sia.py, docs/lp.md)
        from lp_baseline.sia import SiaPolicy
        # no scale-up limit: Sia creeps up (≤ 2× per round) because it learns a job's scaling
        # online; the planner prices every candidate up front
        return SiaPolicy(name=name, configurations="all", srpt_weight=0.5, scale_up_limit=False)
    objective = DEFAULT_OBJECTIVE if objective is None else objective
    common = dict(objective=objective, backend=backend, time_limit_s=time_limit_s,
                  memoize=memoize, **lp_options)
    # Gavel's policies as Gavel defines them: max-min over the requested configurations,
    # normalized by X_equal, rounded by Gavel's per-type priority queues
    gavel_like = dict(candidates="requested", normalizer="requested", size_cap=False,
                      backend=backend, time_limit_s=time_limit_s, objective="max-min",
                      memoize=memoize, scale_factors=True, rounding="gavel-queues")
    for key in ("lp_method", "warm_start"):  # how the LP is solved: every LP policy
        if key in lp_options:
            gavel_like[key] = lp_options[key]
    if name == "heterosched-lp":
        return LPPolicy(name, **common)
    if name == "lp-on-change":
        return LPPolicy(name, resolve="on-change", **common)
    if name == "topk":
        return LPPolicy(name, topk=topk, **common)
    if name == "support-reuse":
        # the LP over each job's previous support + best-by-score, full solve every hour
        from lp_baseline.support_reuse import SupportReusePolicy
        return SupportReusePolicy(LPPolicy(name, **common), name=name)
    if name == "topk-dominance":
        return LPPolicy(name, topk=topk, dominance=True, **common)
    if name == "gavel":
        return LPPolicy(name, **gavel_like)
    if name == "gavel-sticky":
        return LPPolicy(name, **dict(gavel_like, rounding="gavel"))
    if name == "gavel-resets":
        return LPPolicy(name, resolve="on-change", min_resolve_interval_s=GAVEL_MIN_RESET_S,
                        **gavel_like)
    if name == "agnostic-lp":
        return LPPolicy(name, agnostic=True, **gavel_like)
    if name == "heterosched-lp-v0":
        # the co-optimizer before the fair-share / size-cap / JCT-stage work (issue 10):
        # max-min over every candidate with Gavel's normalizer, no size cap
        return LPPolicy(name, **dict(common, objective=fixed_objective(name),
                                     normalizer="requested", size_cap=False))
    if name == "heterosched-lp-las":
        # the non-clairvoyant co-optimizer: never reads a job's remaining work
        return LPPolicy(name, **dict(common, objective=fixed_objective(name)))
    if name == "heterosched-lp-v1":
        # the co-optimizer of the first schedule-quality work (issue 10): a max-min floor,
        # then Σ throughput ÷ remaining work, fair-share normalizer, size cap, Gavel rounding
        return LPPolicy(name, **dict(common, objective=fixed_objective(name)))
    if name.startswith("pop-"):
        # pop-K: the K parts side by side, up to one per CPU (lp_baseline.parallel_parts);
        # pop-K-serial: one after the other
        digits, serial = (name[4:-7], True) if name.endswith("-serial") else (name[4:], False)
        # K written plainly: ASCII digits without a leading zero (pop-04 is not pop-4's twin)
        k = int(digits) if re.fullmatch(r"[1-9][0-9]*", digits) else 0
        if k > MAX_POP_PARTS:
            raise ConfigError(f"policy {name!r}: POP splits the jobs and every GPU type's "
                              f"capacity into at most {MAX_POP_PARTS:,} parts (pop-2 to "
                              f"pop-{MAX_POP_PARTS}; each part gets 1/K of every GPU "
                              f"type, rounded down), not {k:,}")
        if k == 1:
            raise ConfigError(f"policy {name!r}: POP splits the jobs into 2 to "
                              f"{MAX_POP_PARTS:,} parts (pop-2 to pop-{MAX_POP_PARTS}); one "
                              f"part is the whole LP, heterosched-lp")
        if k >= 2:
            workers = dict(pop_workers=1 if serial else None)
            return LPPolicy(name, pop=k, **dict(workers, **common))
    raise UnknownNameError("policy", name, list(POLICY_NAMES_SPELLED))
