"""Solving the independent LPs of a POP partition side by side.

``pop-K`` (``LPPolicy(pop=K)``) splits a round's jobs into K random parts with ⌊capacity/K⌋
GPUs of each type each, and solves one LP per part. The parts share nothing, so they can be
solved at the same time; what this module offers is *where*:

* ``"serial"`` — one after the other in the calling thread (``pop_workers=1``);
* ``"thread"`` — a thread pool: no copies, but only the part of a solve that releases the GIL
  (HiGHS' own ``run``) overlaps; the model assembly in numpy/scipy is serialized;
* ``"process"`` — a pool of worker processes (``forkserver``, so it is safe next to threads
  such as Ray's or PyTorch's): each part's ``AllocationProblem`` is pickled to a worker
  (≈ 9 MB at 2,000 active jobs and K = 4) and the whole solve runs there;
* ``"ray"`` — one Ray task per part (``ray.init`` locally if Ray is not running; joins the
  running cluster otherwise).

Which is fastest depends on the part sizes and the machine; ``scripts/bench_pop.py`` measures
all of them, and ``BENCHMARKS.md`` ("POP parts in parallel") gives the figures that chose
``DEFAULT_EXECUTOR``. Every executor returns the solver's answers in part order, and HiGHS is
deterministic, so the allocation is the same whichever runs it (``tests/test_pop_parallel.py``).

The pools are shared per ``(executor, workers)`` for the life of the process (created on first
use, shut down at exit, forgotten in a forked child), so a policy holds only the executor's
name and can be copied and pickled.
"""

from __future__ import annotations

import atexit
import dataclasses
import logging
import multiprocessing
import os
import threading
import time
from concurrent.futures import BrokenExecutor, Executor, ProcessPoolExecutor, ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any, Callable, Sequence

from hsched_env.errors import ConfigError, UnknownNameError
from lp_baseline.solver import solve_allocation

__all__ = ["EXECUTORS", "DEFAULT_EXECUTOR", "PartSolve", "PartOutcome", "default_workers",
           "solve_parts", "shutdown"]

EXECUTORS = ("serial", "thread", "process", "ray")

#: What ``pop_workers > 1`` uses unless told otherwise. Threads: no start-up cost, no copies,
#: nothing to guard in the user's script (``if __name__ == "__main__"``), and the same speed
#: as processes at the part sizes measured (``scripts/bench_pop.py``, BENCHMARKS.md).
DEFAULT_EXECUTOR = "thread"


@dataclass(frozen=True)
class PartSolve:
    """One part's solve, as sent to a worker: ``solve_allocation(problem, objective, backend=,
    time_limit_s=, floor=, highs_options=, method=, basis_keys=, warm_basis=,
    start=)``, with the time left until ``deadline`` (a ``time.perf_counter``
    instant of the calling process) when the solve starts, as a sequential POP always did.
    Worker processes on this machine get it as ``deadline_monotonic`` (``time.monotonic``, the
    same clock in every process), so a part that waits for a free worker still ends by the
    deadline; Ray tasks (possibly on other machines) get ``time_limit_s`` measured when
    they are sent."""

    problem: Any
    objective: str
    backend: str
    floor: float
    time_limit_s: float | None = None
    deadline: float | None = None
    deadline_monotonic: float | None = None
    highs_options: dict | None = None
    method: str = "simplex"
    basis_keys: Any = None
    warm_basis: Any = None
    start: Any = None


@dataclass(frozen=True)
class PartOutcome:
    """What a worker sends back: the ``SolveResult`` (``None`` if the solve raised or the
    budget had run out), the error text, and the solve's own wall time in seconds
    (``reused``: not solved, the policy's previous answer to the same LP)."""

    result: Any
    error: str
    seconds: float
    out_of_time: bool = False
    reused: bool = False


def _solve_one(task: PartSolve) -> PartOutcome:
    """Run one part's solve; never raises (an exception is returned as its text)."""
    t0 = time.perf_counter()
    budget = task.time_limit_s
    if task.deadline is not None:
        budget = task.deadline - t0
    elif task.deadline_monotonic is not None:
        budget = task.deadline_monotonic - time.monotonic()
    if budget is not None and budget <= 0:
        return PartOutcome(None, "", 0.0, out_of_time=True)
    try:
        res = solve_allocation(task.problem, task.objective, backend=task.backend,
                               time_limit_s=budget, floor=task.floor,
                               highs_options=task.highs_options, method=task.method,
                               basis_keys=task.basis_keys, warm_basis=task.warm_basis,
                               start=task.start)
    except Exception as exc:             # noqa: BLE001 - the policy falls back for this part
        return PartOutcome(None, f"{type(exc).__name__}: {exc}", time.perf_counter() - t0)
    return PartOutcome(res, "", time.perf_counter() - t0)


log = logging.getLogger(__name__)

_pools: dict[tuple[str, int], Executor] = {}
_pools_lock = threading.Lock()
_ray_solve = None


def _pool(executor: str, workers: int) -> Executor:
    key = (executor, workers)
    with _pools_lock:
        pool = _pools.get(key)
        if pool is None:
            if executor == "thread":
                pool = ThreadPoolExecutor(workers, thread_name_prefix="pop-part")
            else:
                methods = multiprocessing.get_all_start_methods()
                method = "forkserver" if "forkserver" in methods else "spawn"   # (Windows)
                pool = ProcessPoolExecutor(workers,
                                           mp_context=multiprocessing.get_context(method))
            _pools[key] = pool
        return pool


def _ray_map(tasks: Sequence[PartSolve], workers: int) -> list[PartOutcome]:
    global _ray_solve
    try:
        import ray
    except ImportError as exc:
        raise ConfigError(f"pop_executor='ray' needs Ray (pip install 'heterosched[ray]'): "
                          f"{exc}", field="pop_executor") from None
    if not ray.is_initialized():
        ray.init(num_cpus=workers, include_dashboard=False, log_to_driver=False)
    if _ray_solve is None:
        _ray_solve = ray.remote(num_cpus=1, max_retries=1)(_solve_one)
    refs = [_ray_solve.remote(dataclasses.replace(t, time_limit_s=_budget_now(t), deadline=None))
            for t in tasks]
    out = []
    for ref in refs:
        try:
            out.append(ray.get(ref))
        except Exception as exc:         # noqa: BLE001 - a dead worker (after its retry)
            out.append(PartOutcome(None, f"{type(exc).__name__}: {exc}", 0.0))
    return out


def _budget_now(task: PartSolve) -> float | None:
    """The part's time limit measured now (for a task leaving this machine)."""
    if task.deadline is None:
        return task.time_limit_s
    return max(task.deadline - time.perf_counter(), 1e-6)


def _for_worker_process(task: PartSolve) -> PartSolve:
    """The task with its deadline on the clock every process of this machine shares."""
    if task.deadline is None:
        return task
    left = task.deadline - time.perf_counter()
    return dataclasses.replace(task, deadline=None, deadline_monotonic=time.monotonic() + left)


def solve_parts(tasks: Sequence[PartSolve], *, executor: str = "serial",
                workers: int = 1) -> list[PartOutcome]:
    """Solve every part; the outcomes come back in the order of ``tasks``.

    Args:
        tasks: One ``PartSolve`` per part.
        executor: One of ``EXECUTORS``; ``"serial"`` (or ``workers == 1``, or a single task)
            solves in the calling thread.
        workers: How many parts run at the same time.
    """
    if executor not in EXECUTORS:
        raise UnknownNameError("POP executor", executor, list(EXECUTORS))
    if not (isinstance(workers, int) and workers >= 1):
        raise ConfigError(f"pop_workers must be an integer ≥ 1, got {workers!r}",
                          field="pop_workers")
    if executor == "serial" or workers == 1 or len(tasks) <= 1:
        return [_solve_one(t) for t in tasks]
    if executor == "ray":
        return _ray_map(tasks, workers)
    pool = _pool(executor, workers)
    sent = [_for_worker_process(t) for t in tasks] if executor == "process" else tasks
    fn: Callable[[PartSolve], PartOutcome] = _solve_one
    try:
        return list(pool.map(fn, sent))
    except BrokenExecutor as exc:        # a worker died (killed, out of memory): solve here
        with _pools_lock:
            if _pools.get((executor, workers)) is pool:
                del _pools[(executor, workers)]
        pool.shutdown(wait=False, cancel_futures=True)
        log.warning("POP %s pool broke (%s); solving this round's %d parts in this process "
                    "and starting a new pool next time", executor, exc, len(tasks))
        return [_solve_one(t) for t in tasks]


def _forget_pools_after_fork() -> None:
    """In a forked child the pools' workers and threads belong to the parent: start afresh."""
    global _pools_lock, _ray_solve
    _pools.clear()
    _pools_lock = threading.Lock()
    _ray_solve = None


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_forget_pools_after_fork)


def default_workers(pop: int) -> int:
    """``pop_workers=None``: one worker per part, at most the CPUs this process may use."""
    try:
        cpus = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):           # (not on every platform)
        cpus = os.cpu_count() or 1
    return max(1, min(int(pop), cpus))


@atexit.register
def shutdown() -> None:
    """Shut down the shared pools (at exit; also callable to release the workers)."""
    with _pools_lock:
        pools = list(_pools.values())
        _pools.clear()
    for pool in pools:
        pool.shutdown(wait=True, cancel_futures=True)
