"""The two backends that solve an ``LPSpec`` with HiGHS, and whether HiGHS can be loaded.

Two backends build the *same* model: ``highs`` assembles the sparse constraint matrix with numpy /
scipy.sparse and hands it to ``highspy`` in one ``passModel`` call (the default: it is the fast
path); ``pulp`` builds it with PuLP objects and solves it with PuLP's highspy-based ``HiGHS``
interface. Both run HiGHS single-threaded with a fixed random seed, so the same input gives the
same ``x`` bit for bit.

A driver (``HighsDriver``, ``PulpDriver``) is built from one ``LPSpec`` and then changed in place
between runs (cost vector, a column's or rows' lower bounds), which the lexicographic and the ftf
solves of ``lp_baseline.solver`` use; each ``run`` returns a ``SolverRun``. This module imports
without ``highspy`` (``solver_available()`` then says why).
"""

from __future__ import annotations

import contextlib
import ctypes
import logging
import os
import sys
import tempfile
import threading
from dataclasses import dataclass

import numpy as np

from lp_baseline.formulation import INF, LPSpec

try:
    import highspy
except ImportError as _exc:          # the policies fall back to their greedy assignment
    highspy = None
    HIGHSPY_IMPORT_ERROR = f"highspy cannot be imported ({_exc})"
else:
    HIGHSPY_IMPORT_ERROR = ""

BACKENDS = ("highs", "pulp")

#: HiGHS ``random_seed`` used by both backends (with ``threads = 1``) for reproducible solves.
HIGHS_SEED = 0

if highspy is not None:
    _MS = highspy.HighsModelStatus
    _STATUS_OF = {
        _MS.kOptimal: "optimal",
        _MS.kTimeLimit: "time_limit",
        _MS.kIterationLimit: "time_limit",
        _MS.kInterrupt: "time_limit",
        _MS.kInfeasible: "infeasible",
        _MS.kUnboundedOrInfeasible: "infeasible",
    }
    _FEASIBLE = int(highspy.SolutionStatus.kSolutionStatusFeasible)
else:
    _STATUS_OF, _FEASIBLE = {}, -1


def solver_available() -> tuple[bool, str]:
    """``(True, "")`` if HiGHS (``highspy``) can be used, else ``(False, why)``."""
    if highspy is None:
        return False, HIGHSPY_IMPORT_ERROR or "highspy is not available"
    return True, ""


#: HiGHS' own console output (its banner) goes to this logger, at INFO (``hsched -v``).
highs_log = logging.getLogger("lp_baseline.highs")


#: One redirection of fd 1 at a time in a process: two threads (POP parts on the thread
#: executor) interleaving save / redirect / restore would leave fd 1 on one's temporary file,
#: and every later line the process prints would be lost there.
_FD1_LOCK = threading.RLock()


@contextlib.contextmanager
def highs_output_to_log():
    """Capture what HiGHS writes to file descriptor 1 for a moment and log it
    (``highs_log``, shown by ``hsched -v``). HiGHS prints a banner straight to the process's
    stdout, not through Python, once per process, and scipy's build prints a debugging line
    from its MIP solver whatever its options say: on stdout they would corrupt JSON output, and on
    stderr every process and worker would print them. Here they are kept, in the log."""
    with tempfile.TemporaryFile() as sink:
        with _fd1_pointed_at(sink.fileno()):
            yield
        sink.seek(0)
        for line in sink.read().decode("utf-8", "replace").splitlines():
            if line.strip():
                highs_log.info("%s", line.rstrip())


@contextlib.contextmanager
def _fd1_pointed_at(fd: int):
    """Within the block, file descriptor 1 (what native code writes to stdout) points at
    ``fd``. Python's ``sys.stdout`` and the C library's buffers are flushed before and after,
    so nothing written before the block moves and nothing written inside it stays behind.
    Threads take turns (``_FD1_LOCK``); without a real fd 1 (captured, or ``sys.stdout``
    None) the block runs as it is."""
    with _FD1_LOCK:
        try:
            sys.stdout.flush()
            _flush_c_stdio()
            saved = os.dup(1)
        except (OSError, ValueError, AttributeError):
            yield
            return
        try:
            os.dup2(fd, 1)
            yield
        finally:
            with contextlib.suppress(OSError, ValueError, AttributeError):
                sys.stdout.flush()
            _flush_c_stdio()
            os.dup2(saved, 1)
            os.close(saved)


def _flush_c_stdio() -> None:
    """``fflush(NULL)``: the C library's buffered output goes where its descriptor points
    now (a no-op where the C library cannot be loaded)."""
    try:
        ctypes.CDLL(None).fflush(None)
    except (OSError, AttributeError, TypeError):
        pass


@dataclass
class SolverRun:
    """Outcome of one backend run: status, column values, HiGHS' run time."""

    status: str
    values: np.ndarray | None   # column values if a primal feasible point is available
    run_s: float


_banner_printed = False     # whether this process has created a Highs object (its banner)


def _new_highs():
    """A ``highspy.Highs``. HiGHS prints its banner on fd 1 when the process's first one is
    created: that one is made with fd 1 captured (``highs_output_to_log``); the later ones
    skip the capture (a file-descriptor round trip, ~0.3 ms per solve)."""
    global _banner_printed
    if _banner_printed:
        return highspy.Highs()
    with highs_output_to_log():
        h = highspy.Highs()
        _banner_printed = True
    return h


#: Configured ``Highs`` objects no driver holds, per thread and per option set: a new one
#: costs ~80 µs (the pybind11 constructor and the options), a reused one ``clearModel`` (~2 µs).
_idle = threading.local()
#: At most this many idle objects are kept per thread and option set, and this many option
#: sets per thread (past it the idle objects are dropped: callers varying ``highs_options``).
_IDLE_MAX = 4
_IDLE_SETS = 16


def _options_key(options: dict) -> tuple:
    if not options:                     # the default solve's
        return ()
    return tuple(sorted((str(k), repr(v)) for k, v in options.items()))


def _idle_pool() -> dict:
    """This thread's idle objects: ``{options key: [Highs, ...]}``."""
    pool = getattr(_idle, "pool", None)
    if pool is None:
        pool = _idle.pool = {}
    return pool


def _acquire_highs(options: dict):
    """A ``Highs`` configured with ``options`` and holding no model: an idle one of this
    thread (released by ``HighsModel.close``) or a new one."""
    spare = _idle_pool().get(_options_key(options))
    if spare:
        return spare.pop()
    h = _new_highs()
    _configure(h, options)
    return h


def _release_highs(h, options: dict) -> None:
    """Give ``h`` back (its model and solver state cleared) for this thread's next
    ``_acquire_highs`` with the same options."""
    h.clearModel()
    pool = _idle_pool()
    key = _options_key(options)
    if key not in pool and len(pool) >= _IDLE_SETS:
        pool.clear()
    spare = pool.setdefault(key, [])
    if len(spare) < _IDLE_MAX:
        spare.append(h)


def _configure(h, options: dict) -> None:
    h.setOptionValue("output_flag", False)
    h.setOptionValue("threads", 1)
    h.setOptionValue("random_seed", HIGHS_SEED)
    for key, value in options.items():
        if h.setOptionValue(key, value) != highspy.HighsStatus.kOk:
            raise ValueError(f"HiGHS rejected option {key}={value!r}")


#: HiGHS' basis statuses by code (``HighsBasisStatus``: lower, basic, upper, zero, nonbasic).
_BASIS_STATUS = (None if highspy is None else
                 sorted(highspy.HighsBasisStatus.__members__.values(), key=int))

#: ``passModel``'s codes of a column-wise matrix and of maximization (HiGHS'
#: ``MatrixFormat.kColwise`` and ``ObjSense.kMaximize``).
_COLWISE = 1
_MAXIMIZE = -1


class HighsModel:
    """A configured ``highspy.Highs`` (``_new_highs``, ``_configure``) holding one maximization
    LP, loaded in one ``passModel`` of the CSC matrix ``a``; the row changes and the timed run
    both drivers of this module's ``highs`` path share (``HighsDriver``, and
    ``lp_baseline.colgen.ColumnGenerationDriver``, which loads the rows without columns).

    ``close()`` hands the ``Highs`` object back for the next model of this thread (cleared:
    a solve on it gives what a new object gives, bit for bit); the driver is unusable after.
    """

    def __init__(self, a, cost: np.ndarray, col_lo: np.ndarray, col_hi: np.ndarray,
                 row_lo: np.ndarray, row_hi: np.ndarray, options: dict) -> None:
        self._options = dict(options)
        #: whether the next run starts from a basis given by ``set_basis`` (a warm start)
        self.from_given_basis = False
        self.h = _acquire_highs(self._options)
        num_row, num_col = a.shape
        # The arrays go in by pointer (``Highs.passModel``'s array overload): filling a
        # ``highspy.HighsLp``'s fields instead converts each array element by element, which
        # took ~5% of a small LP decision. Every column continuous (``kContinuous`` = 0):
        # the same LP as a ``HighsLp`` without an integrality vector.
        status = self.h.passModel(
            num_col, num_row, int(a.indptr[-1]), _COLWISE, _MAXIMIZE, 0.0,
            cost, col_lo, col_hi, row_lo, row_hi, a.indptr, a.indices, a.data,
            np.zeros(num_col, dtype=np.int32))
        # kWarning: HiGHS took the model and dropped matrix entries below its
        # ``small_matrix_value`` (1e-9: a candidate a billion times slower than its job's
        # normalizer), as PuLP's path does; only an error rejects it
        if status == highspy.HighsStatus.kError:
            raise RuntimeError("HiGHS rejected the model (passModel)")

    def close(self) -> None:
        """Release the ``Highs`` object (``_release_highs``); idempotent."""
        h, self.h = self.h, None
        if h is not None:
            _release_highs(h, self._options)

    def set_row_lower(self, rows: np.ndarray, lo: np.ndarray) -> None:
        self.h.changeRowsBounds(rows.size, rows.astype(np.int32), lo, np.full(rows.size, INF))

    def set_basis(self, col_status: np.ndarray, row_status: np.ndarray) -> bool:
        """Start the next run from these basis statuses (HiGHS ``HighsBasisStatus`` codes,
        one per column and row), given as an *alien* basis: HiGHS repairs a basis whose
        number of basic variables is off. Returns whether HiGHS accepted it."""
        basis = highspy.HighsBasis()
        basis.col_status = [_BASIS_STATUS[v] for v in col_status.tolist()]
        basis.row_status = [_BASIS_STATUS[v] for v in row_status.tolist()]
        basis.alien = True
        accepted = self.h.setBasis(basis) == highspy.HighsStatus.kOk
        self.from_given_basis = accepted
        return accepted

    def basis(self) -> tuple[np.ndarray, np.ndarray] | None:
        """The current basis as ``(column statuses, row statuses)`` (int8 codes), ``None``
        when HiGHS has no valid one."""
        basis = self.h.getBasis()
        if not basis.valid:
            return None
        return (np.fromiter(map(int, basis.col_status), dtype=np.int8),
                np.fromiter(map(int, basis.row_status), dtype=np.int8))

    def clear_solver(self) -> None:
        """Drop the warm-start state (basis, factorization); the model is kept."""
        self.h.clearSolver()

    def run_highs(self, budget_s: float | None) -> SolverRun:
        """One ``run`` within ``budget_s`` seconds (``None``: no limit)."""
        # HiGHS 1.x compares time_limit with the run time accumulated over all run() calls of
        # this object (ERGO-Code/HiGHS#1477), so the limit is re-based before each re-solve.
        before = self.h.getRunTime()
        limit = INF if budget_s is None else before + max(budget_s, 0.0)
        self.h.setOptionValue("time_limit", limit)
        self.h.run()
        return _collect(self.h, before)


class HighsDriver(HighsModel):
    """Direct path: one ``passModel`` of CSC arrays into ``highspy.Highs``; warm re-solves."""

    def __init__(self, spec: LPSpec, options: dict) -> None:
        a = spec.csc         # build_spec's arrays, canonical CSC: passed as they are
        super().__init__(a, spec.cost, spec.col_lo, spec.col_hi, spec.row_lo, spec.row_hi,
                         options)
        self.spec = spec
        self.ncol = a.shape[1]
        #: set ``record_basis`` to keep the basis of the first optimal run in ``first_basis``
        self.record_basis = False
        #: whether a warm-started run failed and was solved again cold (``run``)
        self.warm_retried = False
        self.first_basis: tuple[np.ndarray, np.ndarray] | None = None

    def set_cost(self, cost: np.ndarray) -> None:
        self.h.changeColsCost(self.ncol, np.arange(self.ncol, dtype=np.int32), cost)

    def set_col_lower(self, col: int, lo: float) -> None:
        self.h.changeColBounds(col, lo, float(self.spec.col_hi[col]))

    def run(self, budget_s: float | None) -> SolverRun:
        result = self.run_highs(budget_s)
        if self.from_given_basis:
            self.from_given_basis = False
            if result.status == "error":
                # HiGHS can end a run started from a basis mapped over from another LP in
                # status "unknown"; the same model solved cold (its own start) is the answer
                # the warm start stands in for. Its run time counts both runs.
                self.clear_solver()
                self.warm_retried = True
                left = None if budget_s is None else budget_s - result.run_s
                cold = self.run_highs(left)
                result = SolverRun(cold.status, cold.values, result.run_s + cold.run_s)
        if self.record_basis and self.first_basis is None and result.status == "optimal":
            self.first_basis = self.basis()
        return result


def _collect(h, run_before: float) -> SolverRun:
    status = _STATUS_OF.get(h.getModelStatus(), "error")
    values = None
    # (HiGHS' info only at a time limit: reading it costs ~4 µs a solve)
    if status == "optimal" or (status == "time_limit"
                               and h.getInfo().primal_solution_status == _FEASIBLE):
        values = np.asarray(h.getSolution().col_value, dtype=np.float64)
    return SolverRun(status, values, h.getRunTime() - run_before)


class PulpDriver:
    """PuLP path: the same model as PuLP objects, solved by ``pulp.HiGHS`` (highspy-based)."""

    def __init__(self, spec: LPSpec, options: dict) -> None:
        import pulp

        self.pulp = pulp
        self.options = options
        self.spec = spec
        a = spec.a.tocsr()
        ncol = a.shape[1]
        self.prob = pulp.LpProblem("allocation", pulp.LpMaximize)
        # zero-padded names: PuLP orders columns by name, this keeps the direct path's order
        names = [f"x{k:07d}" for k in range(ncol)]
        if spec.aux is not None:
            names[spec.aux] = "y_aux"
        self.vars = [self.prob.add_variable(names[k], float(spec.col_lo[k]), float(spec.col_hi[k]))
                     for k in range(ncol)]
        self.prob.setObjective(self._expr(spec.cost))
        self.cons = []
        indptr, indices, data = a.indptr.tolist(), a.indices.tolist(), a.data.tolist()
        row_lo, row_hi = spec.row_lo.tolist(), spec.row_hi.tolist()
        v = self.vars
        for i in range(a.shape[0]):
            lo, s = indptr[i], indptr[i + 1]
            expr = pulp.lpSum(c * v[j] for j, c in zip(indices[lo:s], data[lo:s]))
            con = expr <= row_hi[i] if row_hi[i] < INF else expr >= row_lo[i]
            self.prob.addConstraint(con, f"r{i:07d}")
            self.cons.append(con)

    def _expr(self, cost: np.ndarray):
        nz = np.flatnonzero(cost).tolist()
        values = cost.tolist()
        return self.pulp.lpSum(values[k] * self.vars[k] for k in nz)

    def set_cost(self, cost: np.ndarray) -> None:
        self.prob.setObjective(self._expr(cost))

    def set_col_lower(self, col: int, lo: float) -> None:
        self.vars[col].lowBound = lo

    def set_row_lower(self, rows: np.ndarray, lo: np.ndarray) -> None:
        for r, value in zip(rows, lo):
            self.cons[int(r)].changeRHS(float(value))

    def run(self, budget_s: float | None) -> SolverRun:
        solver = self.pulp.HiGHS(msg=False, mip=False, threads=1,
                                 timeLimit=None if budget_s is None else max(budget_s, 1e-3),
                                 random_seed=HIGHS_SEED, **self.options)
        with highs_output_to_log():        # PuLP's own Highs object prints the banner too
            self.prob.solve(solver)
        h = self.prob.solverModel
        return _collect(h, 0.0)
