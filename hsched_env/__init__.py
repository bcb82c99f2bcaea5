"""HeteroSched world model: catalogs, clusters, cost model and the candidate planner.

Importing this package registers the Gymnasium environments ``hsched/Schedule-v0`` and
``hsched/Rank-v0`` and their difficulty levels ``-Tiny-v0``, ``-Small-v0``, ``-Medium-v0``,
``-Large-v0`` (``hsched_env.registration``; entry points only: their modules load on
``gymnasium.make``). The entry points live in ``lp_baseline.environments``: they give the
environments their default LP factory, so that this package never imports the LP
(``docs/architecture.md``).
"""

from hsched_env.errors import ConfigError, HSchedError, TraceError, UnknownNameError


def _register() -> None:
    from hsched_env.registration import register_all
    register_all()


_register()

#: Submodules reachable as attributes after a plain ``import hsched_env`` (loaded on first
#: use, PEP 562), e.g. ``hsched_env.envs.VARIANT_IDS``; importing them eagerly would slow
#: every ``import hsched_env`` down.
_SUBMODULES = frozenset({"catalog", "cluster", "costmodel", "defaults", "envs", "files",
                         "metrics", "placement", "planner", "policy", "registration",
                         "simulator", "table_memo", "text", "throughput", "workloads",
                         "wrappers"})


def __getattr__(name: str):
    if name in _SUBMODULES:
        import importlib
        return importlib.import_module(f"{__name__}.{name}")
    if name == "__version__":
        # the installed distribution's (pyproject.toml's), read when asked: a second copy of
        # the number here could drift from it (and reading metadata costs every import)
        from importlib.metadata import PackageNotFoundError, version
        try:
            return version("heterosched")
        except PackageNotFoundError:
            return "0+unknown"             # a source tree on sys.path, not installed
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = ["ConfigError", "HSchedError", "TraceError", "UnknownNameError"]
