"""The ``gavel`` workload kind: Gavel's Poisson job generator and its model mixes.

Jobs arrive as a Poisson process; each draws one of Gavel's job templates
(:data:`GAVEL_TEMPLATES`, ``mix=classic``), or half of them an LLM-era model
(:data:`LLM_MIX`, ``mix=llm``), a scale factor (GPUs) and a duration as Gavel does. Draws whose
model cannot run on the cluster are redrawn.
"""

from __future__ import annotations

import functools
import math
from typing import Any

import numpy as np

from hsched_env.catalog import ModelSpec
from hsched_env.cluster import Cluster
from hsched_env.errors import ConfigError, show
from hsched_env.workloads.reference import _fit_reference
from hsched_env.workloads.rows import _Pending, _Rows, _assemble
from hsched_env.workloads.spec import _Params
from hsched_env.workloads.types import MAX_SECONDS, MIN_DURATION_S, Workload, _variant

__all__ = ["GAVEL_TEMPLATES", "LLM_MIX", "LLM_MIX_CLASSIC_SHARE", "MAX_GENERATED_JOBS",
           "NON_DISTRIBUTED"]

#: Largest number of jobs the ``gavel`` generator draws.
MAX_GENERATED_JOBS = 1_000_000

#: Gavel's 26 job templates (scheduler/job_table.py): (catalog model, batch or None).
GAVEL_TEMPLATES: tuple[tuple[str, int | None], ...] = (
    *(("resnet18", b) for b in (16, 32, 64, 128, 256)),
    *(("resnet50", b) for b in (16, 32, 64, 128)),
    *(("transformer", b) for b in (16, 32, 64, 128, 256)),
    *(("lm", b) for b in (5, 10, 20, 40, 80)),
    *(("recommendation", b) for b in (512, 1024, 2048, 4096, 8192)),
    ("a3c", None),
    ("cyclegan", None),
)
#: Gavel templates that are not distributed (redrawn when the scale factor is above 1): in
#: Gavel's ``scheduler/job_table.py`` only ResNet-18/50, Transformer and LM are made with
#: ``distributed=True``, and its measured table has Recommendation at one GPU only.
NON_DISTRIBUTED = frozenset({"recommendation", "a3c", "cyclegan"})
#: ``multi_gpu_recommendation=1``: the draws before session 45, which let Recommendation take
#: 2–8 GPUs (Gavel never does); kept so earlier figures can be reproduced.
NON_DISTRIBUTED_BEFORE_S45 = frozenset({"a3c", "cyclegan"})
#: ``mix=llm``: share of jobs drawn from Gavel's classic templates; the rest from LLM_MIX.
LLM_MIX_CLASSIC_SHARE = 0.5
#: ``mix=llm``: weights of the LLM-era models (our choice; big models are rarer).
LLM_MIX: tuple[tuple[str, float], ...] = (
    ("bert-large", 0.25), ("gpt2-medium", 0.20), ("vit-l", 0.15), ("gpt2-xl", 0.15),
    ("llama2-7b", 0.13), ("llama2-13b", 0.08), ("llama2-70b", 0.04),
)
_MIXES = ("classic", "llm")


# ---------------------------------------------------------------------------------- gavel
def _scale_factor(rng: np.random.Generator) -> int:
    r = rng.random()
    return 1 if r < 0.7 else 2 if r < 0.8 else 4 if r < 0.95 else 8


#: The smallest log10 of a duration in minutes ``_duration`` draws, and that duration in s.
_LOWEST_LOG10_MIN = 1.5
SHORTEST_DRAW_S = 60.0 * 10.0 ** _LOWEST_LOG10_MIN


def _duration(rng: np.random.Generator) -> float:
    if rng.random() < 0.8:
        return 60.0 * 10.0 ** rng.uniform(_LOWEST_LOG10_MIN, 3.0)
    return 60.0 * 10.0 ** rng.uniform(3.0, 4.0)


def _job_type(rng: np.random.Generator, mix: str, scale: int,
              single_gpu: frozenset = NON_DISTRIBUTED) -> tuple[str, int | None]:
    """A job type for scale factor ``scale``: as Gavel, a template in ``single_gpu`` is
    redrawn while the scale factor is above 1."""
    weights = np.array([w for _, w in LLM_MIX])
    weights = weights / weights.sum()
    while True:
        if mix == "llm" and rng.random() >= LLM_MIX_CLASSIC_SHARE:
            return LLM_MIX[int(rng.choice(len(LLM_MIX), p=weights))][0], None
        model, batch = GAVEL_TEMPLATES[int(rng.integers(len(GAVEL_TEMPLATES)))]
        if scale == 1 or model not in single_gpu:
            return model, batch


@functools.lru_cache(maxsize=256)
def _runs_on(model: ModelSpec, cluster: Cluster) -> bool:
    """Whether the model has at least one candidate on the cluster (any set, any strategy)."""
    from hsched_env.planner import PlannerConfig, plan
    return len(plan(model, cluster, config=PlannerConfig(max_candidates=1))) > 0


def _generate(spec: str, params: _Params, cluster: Cluster, throughputs: Any) -> Workload:
    rate = params.number("rate", 4.0)
    n_jobs = params.integer("jobs", 100, hi=MAX_GENERATED_JOBS)
    seed = params.integer("seed", 0, lo=0)
    scale = params.number("duration_scale", 1.0)
    if SHORTEST_DRAW_S * scale < MIN_DURATION_S:    # (for every seed, not only those drawing it)
        raise params.error("duration_scale", f"{scale:g} makes the shortest duration the "
                           f"generator draws ({SHORTEST_DRAW_S:.0f} s × it) "
                           f"{SHORTEST_DRAW_S * scale:g} s, below the limit of "
                           f"{MIN_DURATION_S:g} s")
    multi_gpu = params.integer("multi_gpu", 1, lo=0)
    if multi_gpu not in (0, 1):
        raise params.error("multi_gpu", f"multi_gpu must be 0 or 1, got {multi_gpu}")
    multi_rec = params.integer("multi_gpu_recommendation", 0, lo=0)
    if multi_rec not in (0, 1):
        raise params.error("multi_gpu_recommendation",
                           f"multi_gpu_recommendation must be 0 or 1, got {multi_rec}")
    if multi_rec and not multi_gpu:
        # it only changes the multi-GPU draws, of which multi_gpu=0 makes none (it was
        # accepted, and dropped from the note without a word)
        raise params.error("multi_gpu_recommendation",
                           "multi_gpu_recommendation=1 changes the multi-GPU draws, and "
                           "multi_gpu=0 makes none: give one of them")
    single_gpu = NON_DISTRIBUTED_BEFORE_S45 if multi_rec else NON_DISTRIBUTED
    mix = (params.text("mix", "classic") or "").lower()
    if mix not in _MIXES:
        raise params.error("mix", f"unknown mix {show(mix)}; valid: {', '.join(_MIXES)}")
    rng = np.random.default_rng(seed)
    rows = _Rows(f"workload spec {show(spec)}", cluster, throughputs, skip_invalid=False)
    mean_gap = 3600.0 / rate
    t, redrawn = 0.0, 0
    for i in range(n_jobs):
        if i:
            t += float(rng.exponential(mean_gap))
        for _attempt in range(1000):
            sf = _scale_factor(rng) if multi_gpu else 1
            model, batch = _job_type(rng, mix, sf, single_gpu)
            spec_i = _variant(model, batch)
            try:
                n, thr = _fit_reference(spec_i, sf, throughputs)
            except ConfigError:
                n, thr = 0, 0.0
            if 0 < n <= cluster.num_gpus and _runs_on(spec_i, cluster):
                break
            redrawn += 1
        else:
            raise ConfigError(f"cannot draw a job that fits cluster {show(cluster.name)} "
                              f"({cluster.num_gpus} GPUs)", source=rows.source)
        duration = _duration(rng) * scale
        if t > MAX_SECONDS:
            raise params.error("rate", f"job {i} would arrive at {t:g} s, after the limit of "
                               f"{MAX_SECONDS:g} s; use a higher rate or fewer jobs")
        # (the lower bound, MIN_DURATION_S, is checked on the spec above, for every seed)
        if not 0 < duration * thr < math.inf or duration > MAX_SECONDS:
            raise params.error("duration_scale", f"gives a duration of {duration:g} s; "
                               f"durations must be > 0 and at most {MAX_SECONDS:g} s")
        rows.jobs.append(_Pending(i, f"job-{i}", model, batch, t, n, duration, duration * thr,
                                  None, sf))
    notes = [f"Gavel generator: Poisson arrivals at {rate:g} jobs/h (first job at t=0), "
             f"mix={mix}, seed={seed}" + (f", durations ×{scale:g}" if scale != 1 else "")
             + ("" if multi_gpu else ", single-GPU jobs only")
             + (", Recommendation on 2-8 GPUs too (the draws before session 45)"
                if multi_rec and multi_gpu else "")]
    if redrawn:
        notes.append(f"redrew {redrawn} draws whose model needs more GPUs than cluster "
                     f"{show(cluster.name)} has ({cluster.num_gpus}) or fits on none of its "
                     f"resource sets")
    return _assemble(rows, spec, notes, None, "the generated workload")
