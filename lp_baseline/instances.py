"""Synthetic allocation problems shaped like real rounds, for tests and benchmarks."""

from __future__ import annotations

import numpy as np

from hsched_env.errors import ConfigError, is_real_number, is_whole_number, show
from lp_baseline.problem import AllocationProblem


def random_problem(n_jobs: int, rng: np.random.Generator, *, candidates_per_job: int = 16,
                   n_types: int = 4, total_gpus: int = 2048, max_gpus: int = 64,
                   mixed_fraction: float = 0.25) -> AllocationProblem:
    """A synthetic allocation problem shaped like a real round (for tests and benchmarks).

    Each candidate uses a power-of-two count of one GPU type (1..``max_gpus``); a
    ``mixed_fraction`` of them add a second type. Throughput is a lognormal per-job base rate ×
    per-type speed × per-job type affinity (lognormal) × GPUs^0.9 (sub-linear scaling) × a
    lognormal strategy factor. Capacity splits ``total_gpus`` over the types at random. ``norm``
    is the job's best throughput with an equal GPU share (``total_gpus / n_jobs`` GPUs,
    time-sliced when a candidate needs more); ``remaining`` is lognormal (median ~3.3M samples),
    ``age_s`` exponential (mean 1 h), and ``ftf_denominator_s = age_s + remaining / norm``.

    Args:
        n_jobs: J.
        rng: the only source of randomness.
        candidates_per_job: candidates per job.
        n_types: GPU types T.
        total_gpus: GPUs in the cluster.
        max_gpus: largest GPU count of one type in a candidate (a power of two).
        mixed_fraction: share of candidates that use two types.

    Raises:
        ConfigError: an argument out of its range, naming it.
    """
    for name, value, lo in (("n_jobs", n_jobs, 0), ("candidates_per_job", candidates_per_job, 1),
                            ("n_types", n_types, 1), ("total_gpus", total_gpus, 1),
                            ("max_gpus", max_gpus, 1)):
        if not (is_whole_number(value) and value >= lo):
            raise ConfigError(f"must be a whole number >= {lo}, got {show(value)}", field=name)
    if max_gpus & (max_gpus - 1):
        raise ConfigError(f"must be a power of two, got {max_gpus}", field="max_gpus")
    if not (is_real_number(mixed_fraction) and 0 <= mixed_fraction <= 1):
        raise ConfigError(f"must be a number from 0 to 1, got {show(mixed_fraction)}",
                          field="mixed_fraction")
    if not isinstance(rng, np.random.Generator):
        raise ConfigError(f"must be a numpy.random.Generator (np.random.default_rng(seed)), "
                          f"got {show(rng)}", field="rng")
    k, t = int(candidates_per_job), int(n_types)
    n_jobs, max_gpus, total_gpus = int(n_jobs), int(max_gpus), int(total_gpus)
    c = n_jobs * k
    job_of = np.repeat(np.arange(n_jobs, dtype=np.int64), k)
    gpus = np.zeros((c, t), dtype=np.int64)
    rows = np.arange(c)
    first = rng.integers(0, t, c)
    top = int(np.log2(max_gpus))
    gpus[rows, first] = 2 ** rng.integers(0, top + 1, c)
    if t > 1:
        mixed = rng.random(c) < mixed_fraction
        second = (first + 1 + rng.integers(0, t - 1, c)) % t
        # (max_gpus=1: the second type's one GPU; a draw from [0, 0) was numpy's error)
        gpus[rows[mixed], second[mixed]] = 2 ** rng.integers(0, max(top, 1), int(mixed.sum()))
    speed = rng.lognormal(0.0, 0.5, t)
    affinity = rng.lognormal(0.0, 0.3, (n_jobs, t))
    base = rng.lognormal(3.0, 1.0, n_jobs)
    effective = (gpus * speed[None, :] * affinity[job_of]).sum(axis=1)
    thr = base[job_of] * effective ** 0.9 * rng.lognormal(0.0, 0.2, c)
    capacity = np.floor(rng.dirichlet(np.full(t, 4.0)) * total_gpus)
    capacity[0] += total_gpus - capacity.sum()
    share = total_gpus / max(n_jobs, 1)
    slice_ = np.minimum(1.0, share / gpus.sum(axis=1))
    norm = np.zeros(n_jobs)
    np.maximum.at(norm, job_of, thr * slice_)
    remaining = rng.lognormal(15.0, 1.0, n_jobs)
    age_s = rng.exponential(3600.0, n_jobs)
    return AllocationProblem(job_of=job_of, gpus=gpus, thr=thr, capacity=capacity, norm=norm,
                             remaining=remaining, age_s=age_s,
                             ftf_denominator_s=age_s + remaining / np.where(norm > 0, norm, 1.0))
