"""Behaviour of the candidate planner: enumeration, pruning, measured tables, errors."""

from __future__ import annotations

import numpy as np
import pytest

from hsched_env.catalog import get_model
from hsched_env.cluster import get_cluster
from hsched_env.costmodel import KIND_DP_SPLIT, KIND_HOMO, KIND_PP_SPLIT
from hsched_env.errors import ConfigError, UnknownNameError
from hsched_env.planner import PlannerConfig, plan, plan_set, resource_sets
from hsched_env.throughput import MeasuredTable

SIA = get_cluster("sia-64")


def test_resource_sets_follow_sia_configurations():
    rs = resource_sets(SIA)
    single = rs.pool_b < 0
    by_pool = {}
    for p, n in zip(rs.pool_a[single], rs.n_a[single]):
        by_pool.setdefault(int(p), []).append(int(n))
    for i, pool in enumerate(SIA.pools):
        sub_node = [k for k in (1, 2, 4, 8) if k < pool.gpus_per_node]
        whole = [k * pool.gpus_per_node for k in range(1, pool.num_nodes + 1)]
        assert sorted(by_pool[i]) == sorted(sub_node + whole)
    mixed = ~single
    assert mixed.any()
    types_a = np.array([SIA.pools[p].gpu_type for p in rs.pool_a[mixed]])
    types_b = np.array([SIA.pools[p].gpu_type for p in rs.pool_b[mixed]])
    assert np.all(types_a != types_b)


@pytest.mark.parametrize("model", ["resnet50", "gpt2-xl", "llama2-7b", "bert-large"])
def test_candidate_structure_is_consistent(model):
    spec = get_model(model)
    table = plan(model, SIA)
    assert len(table) > 0
    n = table.num_gpus
    cap = SIA.capacity_vec
    assert np.all(table.gpus <= cap)
    homo = table.kind == KIND_HOMO
    assert np.all(table.dp[homo] * table.tp[homo] * table.pp[homo] == n[homo])
    dps = table.kind == KIND_DP_SPLIT
    assert np.all((table.dp_a + table.dp_b)[dps] * table.tp[dps] * table.pp[dps] == n[dps])
    pps = table.kind == KIND_PP_SPLIT
    assert np.all(table.dp[pps] * table.tp[pps] * (table.pp_a + table.pp_b)[pps] == n[pps])
    gpn = np.array([p.gpus_per_node for p in SIA.pools])
    assert np.all(table.tp <= gpn[table.pool_a])
    if spec.heads:
        assert np.all(spec.heads % table.tp == 0)
    if not spec.allows("tp"):
        assert np.all(table.tp == 1) and np.all(table.pp == 1)
    if not spec.batch_per_replica:
        assert np.all(table.dp <= spec.global_batch)
    assert np.all(np.isfinite(table.samples_per_s)) and np.all(table.samples_per_s > 0)
    assert np.all(np.diff(table.samples_per_s) <= 0), "fastest first"
    assert np.all(table.zero >= 0) and np.all(table.zero <= 3)
    assert np.allclose(table.samples_per_s * table.step_time_s,
                       np.where(spec.batch_per_replica, spec.global_batch * table.dp,
                                spec.global_batch))


def test_no_candidate_dominates_another():
    table = plan("gpt2-xl", SIA)
    g, thr = table.gpus, table.samples_per_s
    for i in range(len(table)):
        for j in range(len(table)):
            if i != j:
                assert not (np.all(g[j] <= g[i]) and thr[j] >= thr[i]), (i, j)


def test_dominance_pruning_only_removes_dominated_sets():
    full = plan("bert-large", SIA, config=PlannerConfig(prune_dominated=False))
    kept = plan("bert-large", SIA)
    assert len(kept) < len(full)
    keys = {tuple(r) for r in kept.gpus}
    for i in range(len(full)):
        if tuple(full.gpus[i]) in keys:
            continue
        dominated = np.all(kept.gpus <= full.gpus[i], axis=1) & (kept.samples_per_s
                                                                 >= full.samples_per_s[i])
        assert dominated.any()


def test_max_candidates_keeps_the_fastest():
    full = plan("llama2-7b", SIA)
    capped = plan("llama2-7b", SIA, config=PlannerConfig(max_candidates=5))
    assert len(capped) == 5
    assert capped.samples_per_s[0] == pytest.approx(full.samples_per_s[0])


def test_microbatch_pruning_loses_nothing():
    """The m* rule only skips micro-batch counts that cannot be the best of their set."""
    for model in ("llama2-7b", "gpt2-xl", "vit-l"):
        fast = plan(model, SIA, config=PlannerConfig(prune_dominated=False))
        slow = plan(model, SIA, config=PlannerConfig(prune_dominated=False,
                                                     prune_microbatches=False))
        a = {tuple(g): t for g, t in zip(fast.gpus, fast.samples_per_s)}
        b = {tuple(g): t for g, t in zip(slow.gpus, slow.samples_per_s)}
        assert a.keys() == b.keys()
        for key in a:
            assert a[key] == pytest.approx(b[key], rel=0.01), (model, key)


def test_recompute_and_zero_used_only_when_needed():
    # GPT-2 medium fits on one A100-40GB without ZeRO or recompute.
    row = plan_set("gpt2-medium", SIA, {"A100-40GB": 1})
    assert len(row) == 1 and row.zero[0] == 0 and not row.recompute[0]
    # Llama-2 7B on 8 A100-40GB needs sharded states.
    row = plan_set("llama2-7b", SIA, {"A100-40GB": 8})
    assert len(row) == 1 and (row.zero[0] > 0 or row.tp[0] * row.pp[0] > 1)


def test_more_gpus_of_a_type_never_slower_for_the_frontier():
    table = plan("resnet50", SIA, config=PlannerConfig(mixed=False))
    for t in range(len(SIA.gpu_types)):
        only = np.flatnonzero((table.gpus[:, t] > 0) & (table.gpus.sum(axis=1) == table.gpus[:, t]))
        order = only[np.argsort(table.gpus[only, t])]
        assert np.all(np.diff(table.samples_per_s[order]) > 0)


def test_measured_table_is_used_as_is_where_it_has_an_entry():
    gavel = MeasuredTable()
    c = get_cluster("gavel-108")
    table = plan("resnet50", c, throughputs="gavel", config=PlannerConfig(prune_dominated=False))
    for gpu, steps in (("V100-16GB", 4.395), ("P100", 2.619), ("K80", 0.619)):
        i = np.flatnonzero((table.rows_with({gpu: 1})))
        assert i.size == 1
        assert table.measured[i[0]]
        assert table.samples_per_s[i[0]] == pytest.approx(steps * 64, rel=1e-3)
        assert gavel.steps_per_s("ResNet-50 (batch size 64)", gpu, 1) == pytest.approx(steps,
                                                                                      rel=1e-3)
    # 16 V100s: no Gavel entry, so the analytic model prices it.
    i = np.flatnonzero(table.rows_with({"V100-16GB": 16}))
    assert i.size == 1 and not table.measured[i[0]]


def test_measured_zero_means_cannot_run(tmp_path):
    # ResNet-50 bs64 has non-zero entries everywhere; write a table where 2 K80 read 0.0.
    import json
    raw = json.loads((MeasuredTable.shipped_path()).read_text())
    raw["k80"]["('ResNet-50 (batch size 64)', 2)"]["null"] = 0.0
    path = tmp_path / "t.json"
    path.write_text(json.dumps(raw))
    table = plan("resnet50", get_cluster("gavel-108"), throughputs=MeasuredTable(path),
                 config=PlannerConfig(prune_dominated=False))
    assert not np.any(table.rows_with({"K80": 2}))


def test_bad_measured_table_is_a_config_error(tmp_path):
    path = tmp_path / "bad.json"
    path.write_text('{"a100": {}}')
    with pytest.raises(ConfigError, match="unknown worker type"):
        MeasuredTable(path)
    path.write_text('{"k80": {"ResNet": {"null": 1.0}}}')
    with pytest.raises(ConfigError, match=r"k80\.ResNet"):
        MeasuredTable(path)


def test_unknown_model_lists_valid_names():
    with pytest.raises(UnknownNameError, match="llama2-70b"):
        plan("llama-9000", SIA)


def test_plan_set_rejects_bad_sets():
    with pytest.raises(ConfigError, match="not available"):
        plan_set("resnet50", SIA, {"H100-SXM": 1})
    with pytest.raises(ConfigError, match="not available"):
        plan_set("resnet50", SIA, {"T4": 1000})
    with pytest.raises(ConfigError, match="one or two"):
        plan_set("resnet50", SIA, {"T4": 1, "A100-40GB": 1, "RTX2080Ti": 1})


def test_records_have_the_cli_schema():
    rec = plan("llama2-7b", SIA).to_records()[0]
    for key in ("gpus", "nodes", "dp", "tp", "pp", "microbatches", "zero", "recompute",
                "step_time_s", "samples_per_s", "tokens_per_s_per_gpu", "mem_gb_per_gpu"):
        assert key in rec
    assert rec["tokens_per_s_per_gpu"] > 0
    assert plan("resnet50", SIA).to_records()[0]["tokens_per_s_per_gpu"] == 0.0


def test_planning_is_deterministic():
    a = plan("gpt2-xl", SIA).to_records()
    b = plan("gpt2-xl", SIA).to_records()
    assert a == b
