"""The greedy assignment an LP part falls back to when the solver yields no usable allocation.

``FALLBACK_KINDS`` names the faults (``LPPolicy.summary()["lp_fallback_kinds"]``, see
``lp_baseline.policy`` and docs/lp.md, "Faults and fallback"); ``greedy_allocation`` is the
fallback: a feasible LP point the rounding then treats like an LP solution. (Sia's ILP has its
own, different fallback, ``SiaPolicy._greedy``: it takes a job's largest fitting configuration,
not its fastest candidate.)
"""

from __future__ import annotations

import numpy as np

#: Why an LP part fell back to the greedy assignment (``summary()["lp_fallback_kinds"]``).
FALLBACK_KINDS = ("invalid_input", "unavailable", "exception", "error", "infeasible",
                  "time_limit", "bad_solution")


def greedy_allocation(view, members, rows, thr, gpus, cap, sizes) -> np.ndarray:
    """The fallback allocation of one part (a feasible LP point): jobs in arrival order,
    each X = 1 on its current candidate if that still fits the part's free GPUs, else on
    its fastest candidate (finite, positive throughput) that fits; jobs that fit nowhere
    get nothing (the fill pass may still run them)."""
    x = np.zeros(thr.size)
    free = np.asarray(cap, dtype=np.float64).copy()
    start = np.r_[0, np.cumsum(sizes)[:-1]]
    for i, k in enumerate(members):
        s0, s = int(start[i]), int(sizes[i])
        if s == 0:
            continue
        t, g = thr[s0:s0 + s], gpus[s0:s0 + s]
        ok = np.isfinite(t) & (t > 0) & np.all(g <= free + 1e-9, axis=1)
        if not ok.any():
            continue
        cur = np.flatnonzero(rows[k] == view.current[k])
        if cur.size and ok[cur[0]]:
            c = int(cur[0])
        else:
            c = int(np.argmax(np.where(ok, t, -np.inf)))
        x[s0 + c] = 1.0
        free -= g[c]
    return x
