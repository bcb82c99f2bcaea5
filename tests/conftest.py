"""Shared fixtures.

``simulate`` runs a policy through the simulator (its debug invariants on) behind a
``Recorder``, which keeps every view and decision and checks that each decision is a valid
assignment for its view; ``valid_decision`` makes the same check on a decision taken by hand.

Tests that take half a second or more (measured with ``--durations``) are marked ``slow``:
``make test-fast`` (``-m "not slow"``) skips them, ``make test`` runs everything.
"""

from __future__ import annotations

import json

import numpy as np
import pytest

from hsched_env.cluster import get_cluster
from hsched_env.simulator import SimConfig, Simulator
from hsched_env.workloads import load_workload


@pytest.fixture(autouse=True, scope="session")
def _sb3_logs_in_a_temporary_folder(tmp_path_factory):
    """A Stable-Baselines3 ``learn`` without a logger of its own makes a folder
    ``SB3-<time>`` under the system's temporary directory (``SB3_LOGDIR`` if set): the
    tests' go under pytest's temporary folders, which it cleans up, not loose in /tmp."""
    import os
    old = os.environ.get("SB3_LOGDIR")
    os.environ["SB3_LOGDIR"] = str(tmp_path_factory.mktemp("sb3-logs"))
    yield
    if old is None:
        os.environ.pop("SB3_LOGDIR", None)
    else:
        os.environ["SB3_LOGDIR"] = old


def assert_valid_decision(view, out) -> None:
    """Known active jobs, each with a non-empty list of rows in range, and first choices
    within every GPU type's capacity."""
    index = {int(j): k for k, j in enumerate(view.job_ids)}
    used = np.zeros_like(view.capacity)
    for j, rows in out.items():
        assert int(j) in index, f"job {j} is not active"
        rows = [rows] if np.ndim(rows) == 0 else list(rows)
        assert rows, f"job {j} got an empty choice"
        table = view.candidates[index[int(j)]]
        assert all(0 <= int(r) < len(table) for r in rows), (j, rows)
        used = used + table.gpus[int(rows[0])]
    assert np.all(used <= view.capacity), f"over-allocation: {used} > {view.capacity}"


class Recorder:
    """Wraps a policy: checks every decision against its view and keeps both."""

    def __init__(self, inner):
        self.inner, self.name = inner, inner.name
        self.views, self.decisions = [], []

    def reset(self, cluster, seed):
        self.inner.reset(cluster, seed)

    @property
    def last_stats(self):
        return self.inner.last_stats

    def summary(self):
        return getattr(self.inner, "summary", dict)()

    def decide(self, view):
        out = self.inner.decide(view)
        assert_valid_decision(view, out)
        self.views.append(view)
        self.decisions.append(out)
        return out


def _simulate(policy, spec: str, cluster="sia-64", **config):
    """Run ``policy`` on workload ``spec`` (cluster: a name or a ``Cluster``) with
    ``SimConfig(check_invariants=True, **config)``; returns ``(recorder, result)``."""
    if isinstance(cluster, str):
        cluster = get_cluster(cluster)
    recorder = Recorder(policy)
    result = Simulator(cluster, load_workload(spec, cluster), recorder,
                       SimConfig(check_invariants=True, **config)).run()
    return recorder, result


@pytest.fixture(scope="session")
def simulate():
    """``simulate(policy, spec, cluster="sia-64", **sim_config) -> (recorder, result)``: every
    decision of the run checked and kept (``recorder.views``, ``recorder.decisions``)."""
    return _simulate


@pytest.fixture(scope="session")
def valid_decision():
    """``valid_decision(view, decision)`` asserts the decision is a valid assignment."""
    return assert_valid_decision


class WrappedLP:
    """The default LP (``heterosched-lp``) behind the least a ``RankEnv`` needs of an LP
    policy: ``decide(view, allowed=, lp_rows=)`` (no ``lp_start``), ``shares``, ``evaluate``
    and ``last_stats`` — no ``allocation``. Subclass it to add one."""

    name = "wrapped-lp"

    def __init__(self):
        from lp_baseline.registry import make_policy
        self.inner = make_policy("heterosched-lp")

    def reset(self, cluster, seed):
        self.inner.reset(cluster, seed)

    def decide(self, view, allowed=None, lp_rows=None):
        return self.inner.decide(view, allowed=allowed, lp_rows=lp_rows)

    def shares(self, view, allowed=None):
        return self.inner.shares(view, allowed)

    def evaluate(self, view, allocation):
        return self.inner.evaluate(view, allocation)

    @property
    def last_stats(self):
        return self.inner.last_stats


@pytest.fixture(scope="session")
def wrapped_lp():
    """``WrappedLP``: the default LP with only what a ``RankEnv`` needs (no ``lp_start``, no
    ``allocation``)."""
    return WrappedLP


def _imitation_record() -> dict:
    """What imitation records for ``agents.train._ranker_meta``: the target's operating point
    (recall 0.95), two size bands and the ladder of points at recalls 0.95 and 0.99."""
    ladder = [{"target_recall": r, "threshold": t, "recall": r + 0.001, "kept_fraction": k,
               "size_thresholds": [[0, t], [1000, t / 2]]}
              for r, t, k in ((0.95, 0.04, 0.1), (0.99, 0.01, 0.15))]
    return {"operating_point": {"threshold": 0.04, "target_recall": 0.95, "recall": 0.951,
                                "kept_fraction": 0.1},
            "size_bands": [{"min_candidates": 0, "threshold": 0.04},
                           {"min_candidates": 1000, "threshold": 0.02}],
            "operating_points": ladder}


@pytest.fixture
def imitation_record():
    """A fresh ``_imitation_record()`` (tests may change it)."""
    return _imitation_record()


# ---------------------------------------------------------------- models of one's own
LLAMA3_8B = {"name": "llama3-8b", "display": "Llama-3 8B", "family": "transformer",
             "params": 8.03e9, "layers": 32, "hidden": 4096, "ffn": 14336, "heads": 32,
             "kv_heads": 8, "seq_len": 8192, "vocab": 128256, "swiglu": True,
             "flash_attention": True, "precision": "bf16", "global_batch": 512,
             "sample": "one 8192-token sequence", "tokens_per_sample": 8192,
             "fwd_flops_per_sample": None, "act_bytes_per_sample": None,
             "bytes_per_param_states": 16, "parallelism": ["dp", "tp", "pp"],
             "gavel_job_type": None, "batch_per_replica": False, "kernels_per_iteration": 0,
             "source": "Llama 3 model card"}


@pytest.fixture
def own_models(tmp_path, monkeypatch):
    """A model file of one's own, and the catalog in use as it was put back afterwards."""
    import hsched_env.catalog as catalog
    # (setenv first: it records the variable's absence, which delenv alone does not, so
    # what use_model_files sets is undone after the test)
    monkeypatch.setenv(catalog.MODELS_ENV, "")
    monkeypatch.delenv(catalog.MODELS_ENV)
    monkeypatch.setattr(catalog, "_files_in_use", [""])
    path = tmp_path / "my_models.json"
    path.write_text(json.dumps({"models": [LLAMA3_8B]}), encoding="utf-8")
    trace = tmp_path / "jobs.csv"
    trace.write_text("job_id,submit_time_s,duration_s,num_gpus,model,gpu_type\n"
                     "a,0,7200,8,llama3-8b,\nb,600,3600,4,resnet50,\n", encoding="utf-8")
    return path, trace
