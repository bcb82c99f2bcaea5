"""An untimed warm-up run, so that a process's one-off costs are not timed in its first run.

Lazy imports, HiGHS's first model and NumPy's first calls cost a few milliseconds once per
process; timed in the first rounds of the first run they made that policy look slower than an
identical one run second (session 45). ``hsched evaluate``'s serial sweeps and ``hsched
compare``'s serial runs call ``warm_up_process`` first.
"""

from __future__ import annotations

from hsched_env.cluster import get_cluster
from hsched_env.simulator import SimConfig, Simulator
from hsched_env.workloads import load_workload
from lp_baseline.registry import make_policy


def warm_up_process() -> None:
    """A short untimed simulation of the default LP (``tiny-8``, four jobs, three rounds), so
    that the process's one-off costs — lazy imports, the solver's first model, NumPy's first
    calls — are not timed in the first rounds of the first run, ``pure-lp``'s by default
    (session 45, two seeds of a ``tiny-8`` scenario: without it a second, identical
    ``pure-lp`` read 0.84× / 0.99× the first's mean decision time and 0.74× / 0.75× its p99 in
    two runs; with it 0.93–1.22× and 0.84–1.23× in three). A serial sweep warms up too; a Ray
    worker's first task does not."""
    cluster = get_cluster("tiny-8")
    jobs = load_workload("gavel:rate=8,jobs=4,duration_scale=0.05,seed=0", cluster)
    Simulator(cluster, jobs, make_policy("heterosched-lp"),
              SimConfig(max_time_s=900.0)).run()
