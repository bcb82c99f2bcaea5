"""Behaviour of the candidate planner: enumeration, pruning, measured tables, errors."""

from __future__ import annotations

import json

import numpy as np
import pytest

from hsched_env.catalog import get_gpu, get_model
from hsched_env.cluster import get_cluster
from hsched_env.costmodel import (DEFAULT_CALIBRATION, KIND_DP_SPLIT, KIND_HOMO, KIND_PP_SPLIT,
                                  model_shape, pool_arrays, strategy_cost)
from hsched_env.errors import ConfigError, UnknownNameError
from hsched_env.planner import PlannerConfig, plan, plan_set, plan_sets, resource_sets, sia_sizes
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


@pytest.mark.parametrize("cluster, models", [
    ("sia-64", ("llama2-7b", "gpt2-xl", "vit-l")),
    # 10 Gb/s nodes: ZeRO-2/3's per-micro-batch traffic does not hide, so fewer micro-batches,
    # or more with a cheaper stage, or recompute, can beat the window around m*
    ("gavel-108", ("llama2-7b", "llama2-13b", "gpt2-xl"))])
def test_microbatch_pruning_loses_nothing(cluster, models):
    """The m* rule and the recompute rule only skip strategies that cannot be the best of
    their set (``prune_microbatches=False`` prices every micro-batch count, with and without
    recompute)."""
    cluster = get_cluster(cluster)
    for model in models:
        fast = plan(model, cluster, config=PlannerConfig(prune_dominated=False))
        slow = plan(model, cluster, config=PlannerConfig(prune_dominated=False,
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


def test_a_table_path_is_read_once_per_version(tmp_path):
    # the planner resolves its source once per job: a path must not be parsed every time,
    # but an edited file must be read again
    import json
    import os

    from hsched_env.throughput import get_throughput_source
    raw = json.loads((MeasuredTable.shipped_path()).read_text())
    path = tmp_path / "t.json"
    path.write_text(json.dumps(raw))
    first = get_throughput_source(str(path))
    assert get_throughput_source(str(path)) is first
    assert get_throughput_source(str(tmp_path / "." / "t.json")) is first
    key = "('ResNet-50 (batch size 64)', 1)"
    old = raw["k80"][key]["null"]
    raw["k80"][key]["null"] = 123.0
    mtime = path.stat().st_mtime_ns
    path.write_text(json.dumps(raw))
    os.utime(path, ns=(mtime, mtime))              # as `cp -p` leaves it: the old mtime
    second = get_throughput_source(str(path))
    assert second is not first
    assert second.steps_per_s("ResNet-50 (batch size 64)", "K80", 1) == 123.0
    assert first.steps_per_s("ResNet-50 (batch size 64)", "K80", 1) == old
    # a broken file is an error naming the path as given (a link, not its target), every
    # time (not cached)
    (tmp_path / "bad.json").write_text("{")
    (tmp_path / "link.json").symlink_to(tmp_path / "bad.json")
    for _ in range(2):
        with pytest.raises(ConfigError, match="cannot read throughput table") as info:
            get_throughput_source(str(tmp_path / "link.json"))
        assert "link.json" in str(info.value)


def test_bad_measured_table_is_a_config_error(tmp_path):
    path = tmp_path / "bad.json"
    path.write_text('{"a100": {}}')
    with pytest.raises(ConfigError, match="unknown worker type"):
        MeasuredTable(path)
    path.write_text('{"k80": {"ResNet": {"null": 1.0}}}')
    with pytest.raises(ConfigError, match=r"k80\.ResNet"):
        MeasuredTable(path)


def test_a_measured_table_file_is_read_as_the_other_input_files_are(tmp_path):
    """A byte-order mark is allowed (it was refused: "Unexpected UTF-8 BOM"), an empty file
    says so, and broken JSON names its line (as the cluster and model files do)."""
    shipped = MeasuredTable.shipped_path().read_text(encoding="utf-8")
    path = tmp_path / "bom.json"
    path.write_text(shipped, encoding="utf-8-sig")
    assert (MeasuredTable(path).steps_per_s("ResNet-50 (batch size 64)", "K80", 1)
            == MeasuredTable().steps_per_s("ResNet-50 (batch size 64)", "K80", 1))
    path.write_text("")
    with pytest.raises(ConfigError, match=r"bom\.json: file is empty; expected a throughput"):
        MeasuredTable(path)
    path.write_text('{"k80": {\n "x": }')
    with pytest.raises(ConfigError, match=r"bom\.json:2: cannot read throughput table: "
                                          r"invalid JSON"):
        MeasuredTable(path)


def test_a_table_value_that_is_no_number_is_named_as_such(tmp_path):
    path = tmp_path / "bad.json"
    path.write_text('{"k80": {"(\'A3C\', 1)": {"null": "fast"}}}')
    with pytest.raises(ConfigError, match=r"k80\.\('A3C', 1\)\.null.*must be a number.*'fast'"):
        MeasuredTable(path)


def test_job_types_no_model_reads_are_a_warning(tmp_path, caplog):
    """A misspelled job type would fall back to the analytic model unnoticed: it is named in a
    warning. The shipped table's job types are all read (no warning)."""
    raw = json.loads(MeasuredTable.shipped_path().read_text())
    with caplog.at_level("WARNING", logger="hsched_env.throughput"):
        MeasuredTable()
        assert not caplog.records
        raw["v100"] = {key.replace("ResNet-50", "Resnet-50"): value
                       for key, value in raw["v100"].items()}
        path = tmp_path / "typo.json"
        path.write_text(json.dumps(raw))
        MeasuredTable(path)
    (record,) = caplog.records
    assert "4 job type(s) match no model" in record.getMessage()
    assert "'Resnet-50 (batch size 16)'" in record.getMessage()


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
    for bad in ("no", "False", 0, None):            # "no" read as on: the best row alone
        with pytest.raises(ConfigError, match="best_only must be True or False"):
            plan_set("gpt2-xl", SIA, {"A100-40GB": 8}, best_only=bad)
    assert len(plan_set("gpt2-xl", SIA, {"A100-40GB": 8}, best_only=False)) > 1


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


# ---------------------------------------------------------------- mixed-pipeline orientation
TINY = get_cluster("tiny-8")          # V100-16GB and T4: 16 GB each


@pytest.mark.parametrize("cluster,gpus", [
    ("tiny-8", {"V100-16GB": 4, "T4": 4}), ("tiny-8", {"V100-16GB": 2, "T4": 4}),
    ("modern-512", {"H100-SXM": 8, "A100-80GB": 16}), ("gavel-108", {"P100": 8, "V100-16GB": 4})])
@pytest.mark.parametrize("model", ["gpt2-xl", "bert-large", "llama2-7b"])
def test_plan_set_does_not_depend_on_the_order_of_equal_memory_types(cluster, gpus, model):
    c = get_cluster(cluster)
    mem = {get_gpu(t).memory_gb for t in gpus}
    assert len(mem) == 1                                    # the case the order used to decide
    flipped = dict(reversed(list(gpus.items())))
    for best_only in (True, False):
        a = plan_set(model, c, gpus, best_only=best_only).to_records()
        b = plan_set(model, c, flipped, best_only=best_only).to_records()
        assert a == b


def _explicit_step(model, cluster, row, swap: bool) -> tuple[float, bool]:
    """Step time and ZeRO-2 feasibility of candidate ``row``'s mixed pipeline, priced directly
    with the cost model with its first stages on ``pool_a`` (or, ``swap``, on ``pool_b``)."""
    spec = get_model(model)
    pools = cluster.pools
    hw = pool_arrays([get_gpu(p.gpu_type) for p in pools], [p.intra_bw_gbps for p in pools],
                     [p.inter_bw_gbps for p in pools], [p.gpus_per_node for p in pools], spec)
    pa, pb = int(row.pool_a[0]), int(row.pool_b[0])
    ppa, ppb = int(row.pp_a[0]), int(row.pp_b[0])
    if swap:
        pa, pb, ppa, ppb = pb, pa, ppb, ppa

    def arr(v):
        return np.array([v])

    cost = strategy_cost(model_shape(spec), DEFAULT_CALIBRATION, hw, kind=arr(KIND_PP_SPLIT),
                         pa=arr(pa), pb=arr(pb), dpa=arr(int(row.dp[0])), dpb=arr(0),
                         tp=arr(int(row.tp[0])), ppa=arr(ppa), ppb=arr(ppb),
                         m=arr(int(row.microbatches[0])), rc=arr(bool(row.recompute[0])),
                         batch=spec.global_batch, per_replica_batch=spec.batch_per_replica,
                         zero_stages=(2,))
    fits = (cost["mem_a"][0, 0] <= hw.mem_bytes[pa]) and (cost["mem_b"][0, 0] <= hw.mem_bytes[pb])
    return float(cost["step_time_s"][0]), bool(fits)


def test_equal_memory_pipeline_takes_the_faster_orientation():
    """V100-16GB and T4 have the same memory: the cluster lists the V100s first, but GPT-2 XL
    runs faster with its first stage on the T4s and the output layer on the V100s."""
    gpus = {"V100-16GB": 4, "T4": 4}
    table = plan_set("gpt2-xl", TINY, gpus, best_only=False)
    pp = table.kind == KIND_PP_SPLIT
    first = np.array([TINY.pools[p].gpu_type for p in table.pool_a])
    best_of = {t: table.samples_per_s[pp & (first == t)].max() for t in gpus}
    best = plan_set("gpt2-xl", TINY, gpus)
    assert best.kind[0] == KIND_PP_SPLIT
    assert best.samples_per_s[0] == pytest.approx(max(table.samples_per_s))
    assert best.samples_per_s[0] == pytest.approx(max(best_of.values()))
    assert TINY.pools[best.pool_a[0]].gpu_type == "T4"
    assert best_of["T4"] > 1.2 * best_of["V100-16GB"]       # 31.2 vs 23.8 samples/s
    assert best.samples_per_s[0] > 1.2 * table.samples_per_s[~pp].max()   # vs 25.7 (mixed-dp)
    # The cost model prices the chosen strategy as the table says, and the same strategy
    # with the V100s first is slower (or does not fit).
    step, fits = _explicit_step("gpt2-xl", TINY, best, swap=False)
    assert fits and step == pytest.approx(best.step_time_s[0], rel=1e-12)
    step_swapped, fits_swapped = _explicit_step("gpt2-xl", TINY, best, swap=True)
    assert not fits_swapped or step_swapped > step


def test_unequal_memory_keeps_the_larger_memory_first():
    # A100-40GB (40 GB) and T4 (16 GB): one orientation only, the 40 GB type first.
    table = plan_set("gpt2-xl", SIA, {"T4": 8, "A100-40GB": 8}, best_only=False)
    pp = np.flatnonzero(table.kind == KIND_PP_SPLIT)
    assert pp.size
    assert {SIA.pools[p].gpu_type for p in table.pool_a[pp]} == {"A100-40GB"}


# ---------------------------------------------------------------- measured-table bootstrap
GAVEL_108 = get_cluster("gavel-108")


def _one_gpu_measured(model: str) -> dict[str, float]:
    gavel = MeasuredTable()
    spec = get_model(model)
    return {t: gavel.measured_samples_per_s(spec, t, 1, True) for t in GAVEL_108.gpu_types}


@pytest.mark.parametrize("model", ["a3c", "recommendation"])
def test_gavel_bootstraps_uncalibrated_jobs_from_their_one_gpu_measurements(model):
    """A3C and Recommendation run far below the analytic model (host-bound); their multi-GPU
    rows used to sit 4-15x above the one-GPU measurement. Scaled by measured/analytic on one
    GPU, N GPUs give at most N one-GPU measurements and never collapse."""
    one = _one_gpu_measured(model)
    table = plan(model, GAVEL_108, throughputs="gavel",
                 config=PlannerConfig(prune_dominated=False))
    recs = table.to_records()
    rows = [i for i in range(len(table)) if not table.measured[i]]
    assert len(rows) > 100
    for i in rows:
        gpus = table.gpus_dict(i)
        assert recs[i]["source"] == "bootstrapped"
        assert 0.1 < table.bootstrap[i] < 2.0 and table.bootstrap[i] != 1.0
        assert table.samples_per_s[i] <= sum(n * one[t] for t, n in gpus.items()) * (1 + 1e-9)
        assert table.samples_per_s[i] >= 0.3 * min(one[t] for t in gpus)
    # One node of 4 V100s scales almost linearly (it used to read 15x for A3C).
    i = np.flatnonzero(table.rows_with({"V100-16GB": 4}))[0]
    if not table.measured[i]:
        assert 3.5 <= table.samples_per_s[i] / one["V100-16GB"] <= 4.0
    i = np.flatnonzero(table.rows_with({"K80": 8}))[0]
    assert 1.0 <= table.samples_per_s[i] / one["K80"] <= 8.0


def test_a3c_multi_gpu_rows_are_a_few_times_the_one_gpu_measurement():
    one = _one_gpu_measured("a3c")
    table = plan("a3c", GAVEL_108, throughputs="gavel",
                 config=PlannerConfig(prune_dominated=False))
    got = {n: table.samples_per_s[np.flatnonzero(table.rows_with({"V100-16GB": n}))[0]]
           / one["V100-16GB"] for n in (4, 8, 32)}
    assert got[4] == pytest.approx(3.97, abs=0.05)          # analytic alone: 15.2
    assert got[8] == pytest.approx(5.30, abs=0.05)          # two nodes: all-reduce on the NICs
    assert got[32] == pytest.approx(20.15, abs=0.1)         # analytic alone: 37.7


def test_bootstrap_scales_analytic_rows_by_the_one_gpu_ratio():
    """ResNet-50: measured rows are used as is; 16 V100s (not in Gavel's table) get the
    analytic throughput × measured/analytic on one V100; a mixed-dp row a factor between its
    two types' ratios."""
    cfg = PlannerConfig(prune_dominated=False)
    gavel = plan("resnet50", GAVEL_108, throughputs="gavel", config=cfg)
    analytic = plan("resnet50", GAVEL_108, config=cfg)
    one = _one_gpu_measured("resnet50")

    def row(table, gpus):
        i = np.flatnonzero(table.rows_with(gpus))
        assert i.size == 1
        return i[0]

    ratio = {}
    for t in GAVEL_108.gpu_types:
        ratio[t] = one[t] / analytic.samples_per_s[row(analytic, {t: 1})]
        assert 0.5 < ratio[t] < 2.0
    i, j = row(gavel, {"V100-16GB": 16}), row(analytic, {"V100-16GB": 16})
    assert not gavel.measured[i] and gavel.to_records()[i]["source"] == "bootstrapped"
    assert gavel.bootstrap[i] == pytest.approx(ratio["V100-16GB"], rel=1e-12)
    assert gavel.samples_per_s[i] == pytest.approx(
        analytic.samples_per_s[j] * ratio["V100-16GB"], rel=1e-12)
    i = row(gavel, {"V100-16GB": 4, "K80": 4})
    assert gavel.kind[i] == KIND_DP_SPLIT
    lo, hi = sorted((ratio["V100-16GB"], ratio["K80"]))
    assert lo < gavel.bootstrap[i] < hi
    # Analytic planning is untouched.
    assert np.all(analytic.bootstrap == 1.0)
    assert {r["source"] for r in analytic.to_records()} == {"analytic"}


def test_measured_rows_stay_as_measured():
    gavel = MeasuredTable()
    spec = get_model("resnet50")
    table = plan("resnet50", GAVEL_108, throughputs="gavel",
                 config=PlannerConfig(prune_dominated=False))
    recs = table.to_records()
    gpn = GAVEL_108.pools[0].gpus_per_node
    checked = 0
    for t in GAVEL_108.gpu_types:
        for n in (1, 2, 4, 8):
            i = np.flatnonzero(table.rows_with({t: n}))
            assert i.size == 1
            steps = gavel.steps_per_s(spec.gavel_job_type, t, n, n <= gpn)
            if steps is None:                   # 8 K80 across two nodes: not in Gavel's table
                assert recs[i[0]]["source"] == "bootstrapped"
                continue
            assert table.measured[i[0]] and recs[i[0]]["source"] == "measured"
            assert table.bootstrap[i[0]] == 1.0
            assert table.samples_per_s[i[0]] == steps * spec.global_batch
            checked += 1
    assert checked == 11


@pytest.mark.parametrize("tp, ranks_per_node", [(1, 8), (2, 4), (8, 1)])
def test_cross_node_data_parallel_ring_uses_one_nic_share_per_rank_on_the_node(tp,
                                                                               ranks_per_node):
    """A data-parallel group with g ranks on each 8-GPU node runs g NCCL rings, each through
    its own NIC share: the gradient all-reduce over 4 nodes takes ring volume /
    (g × NIC per GPU) plus α per ring step (ZeRO-3's extra is half of it)."""
    spec = get_model("llama2-7b")
    nodes, gpn, nic_gbps = 4, 8, 200.0
    hw = pool_arrays([get_gpu("A100-80GB")], [600.0], [nic_gbps], [gpn], spec)
    d = nodes * gpn // tp

    def arr(v):
        return np.array([v])

    shape = model_shape(spec)
    cost = strategy_cost(shape, DEFAULT_CALIBRATION, hw, kind=arr(KIND_HOMO), pa=arr(0),
                         pb=arr(0), dpa=arr(d), dpb=arr(0), tp=arr(tp), ppa=arr(1), ppb=arr(0),
                         m=arr(4), rc=arr(False), batch=spec.global_batch,
                         per_replica_batch=False, zero_stages=(3,))
    params = (shape.layers * shape.layer_params + 2 * shape.embed_params) / tp
    bw = ranks_per_node * nic_gbps * 1e9 / gpn
    expected = (2 * (d - 1) / d * shape.state_g * params / bw
                + DEFAULT_CALIBRATION.collective_latency_s * 2 * (d - 1))
    assert cost["dp_sync_s"][0] == pytest.approx(expected, rel=1e-9)
    # one micro-batch's worth hides behind compute on these links: ZeRO-3 adds half of it
    assert 2 * cost["zero3_extra_s"][0] == pytest.approx(expected, rel=1e-9)


def _dp_seconds(spec, hw, kind, **rows):
    """Gradient-sync time of one strategy row."""
    def arr(v):
        return np.array([v])

    base = dict(pa=0, pb=0, dpb=0, tp=1, ppa=1, ppb=0, m=4, rc=False)
    base.update(rows)
    cost = strategy_cost(model_shape(spec), DEFAULT_CALIBRATION, hw, kind=arr(kind),
                         **{k: arr(v) for k, v in base.items()}, batch=spec.global_batch,
                         per_replica_batch=False, zero_stages=(3,))
    return cost["dp_sync_s"][0]


def test_partly_used_node_and_small_mixed_sides_drive_only_their_own_nic_shares():
    """12 GPUs of 8-GPU nodes: the last node holds 4 ranks, so the ring crosses at 4 NIC
    shares; a mixed data-parallel group with one replica per side at one share."""
    spec = get_model("gpt2-medium")
    shape = model_shape(spec)
    params = (shape.layers * shape.layer_params + 2 * shape.embed_params)
    share = 200.0 * 1e9 / 8
    alpha = DEFAULT_CALIBRATION.collective_latency_s

    def ring(d, bw):
        return 2 * (d - 1) / d * shape.state_g * params / bw + alpha * 2 * (d - 1)

    hw = pool_arrays([get_gpu("A100-80GB")], [600.0], [200.0], [8], spec)
    assert _dp_seconds(spec, hw, KIND_HOMO, dpa=12) == pytest.approx(ring(12, 4 * share))
    assert _dp_seconds(spec, hw, KIND_HOMO, dpa=16) == pytest.approx(ring(16, 8 * share))
    two = pool_arrays([get_gpu("A100-80GB"), get_gpu("V100-16GB")], [600.0, 300.0],
                      [200.0, 200.0], [8, 8], spec)
    for dpa, dpb, g in ((1, 1, 1), (2, 2, 2), (8, 4, 4)):
        got = _dp_seconds(spec, two, KIND_DP_SPLIT, pb=1, dpa=dpa, dpb=dpb)
        assert got == pytest.approx(ring(dpa + dpb, g * share)), (dpa, dpb)


@pytest.mark.parametrize("cluster,throughputs", [("sia-64", None), ("gavel-108", "gavel"),
                                                 ("modern-512", None)])
@pytest.mark.parametrize("mixed", [False, True])
def test_plan_sets_equals_plan_set_one_by_one(cluster, throughputs, mixed):
    """Pricing many sets in one pass gives, set by set, the table ``plan_set`` gives alone,
    bit for bit (every column), including sets nothing fits on (empty tables)."""
    import dataclasses
    cl = get_cluster(cluster)
    sets = [{p.gpu_type: k} for p in cl.pools for k in sia_sizes(p.gpus_per_node, p.num_gpus)]
    sets += [{p.gpu_type: 3} for p in cl.pools[:2]]
    if mixed and len(cl.pools) > 1:
        a, b = cl.pools[0], cl.pools[1]
        sets += [{a.gpu_type: a.gpus_per_node, b.gpu_type: b.gpus_per_node}]
    config = PlannerConfig(data_parallel_only=not mixed)
    for model in ("resnet50", "gpt2-xl", "llama2-13b"):
        batch = plan_sets(model, cl, sets, config=config, throughputs=throughputs)
        assert len(batch) == len(sets)
        empty = 0
        for gpus, got in zip(sets, batch):
            want = plan_set(model, cl, gpus, config=config, throughputs=throughputs)
            empty += len(want) == 0
            for f in dataclasses.fields(want):
                a, b = getattr(want, f.name), getattr(got, f.name)
                if isinstance(a, np.ndarray):
                    assert a.dtype == b.dtype and a.shape == b.shape, (model, gpus, f.name)
                    assert a.tobytes() == b.tobytes(), (model, gpus, f.name)
                else:
                    assert a == b, (model, gpus, f.name)
        if model == "llama2-13b":
            assert empty > 0            # a 13B model fits on no single small GPU count
    assert plan_sets("resnet50", cl, []) == []
    with pytest.raises(ConfigError, match="not available"):
        plan_sets("resnet50", cl, [{cl.pools[0].gpu_type: 1}, {cl.pools[0].gpu_type: 10**6}])


def _undominated_all_pairs(g, thr):
    """The plain rule: in the order fastest first (fewer GPUs first, then the row), a row is
    dominated when any earlier row uses no more GPUs of every type."""
    order = np.lexsort((np.arange(thr.size), g.sum(axis=1), -thr))
    gs = g[order]
    keep = np.empty(thr.size, dtype=bool)
    for pos, i in enumerate(order):
        keep[i] = not np.all(gs[:pos] <= gs[pos], axis=1).any()
    return keep


@pytest.mark.parametrize("grouped", [False, True])
@pytest.mark.parametrize("n,types,high,seed", [
    (0, 3, 4, 0), (1, 2, 4, 1), (300, 3, 5, 2), (700, 5, 40, 3), (520, 2, 70000, 4)])
def test_undominated_rows_matches_the_all_pairs_rule(n, types, high, seed, grouped,
                                                      monkeypatch):
    """Both ways of comparing (every pair at once; support group by support group, which
    ``undominated_rows`` takes from ``_GROUPED_FROM`` rows up) against the plain rule."""
    import hsched_env.planner as planner
    monkeypatch.setattr(planner, "_GROUPED_FROM", 0 if grouped else 10**9)
    rng = np.random.default_rng(seed)
    g = rng.integers(0, high, size=(n, types))
    thr = rng.integers(1, 30, size=n).astype(float)     # ties in throughput and in GPUs
    got = planner.undominated_rows(g, thr)
    assert got.dtype == bool and got.shape == (n,)
    assert np.array_equal(got, _undominated_all_pairs(g, thr))
    if n > 256:                                        # crosses a block boundary
        assert 0 < got.sum() < n


@pytest.mark.parametrize("seed", range(4))
def test_undominated_rows_by_support_group_matches_the_all_pairs_rule(seed):
    """Rows like a planner's on a large cluster (above ``_GROUPED_FROM``): most on one pool,
    some on two, a few repeated, one using nothing; ties in throughput. Row j can dominate
    row i only when it uses a subset of row i's pools: grouped by those subsets, the pools of
    one column compared by a running minimum."""
    from hsched_env.planner import _GROUPED_FROM, undominated_rows
    rng = np.random.default_rng(seed)
    n, pools = 2 * _GROUPED_FROM + 37, 4
    g = np.zeros((n, pools), dtype=np.int64)
    one = rng.random(n) < 0.8
    first = rng.integers(0, pools, n)
    g[np.arange(n), first] = rng.integers(1, 400, n)
    second = (first + rng.integers(1, pools, n)) % pools
    g[np.flatnonzero(~one), second[~one]] = rng.integers(1, 60, (~one).sum())
    g[5] = 0                                           # uses nothing: dominates what follows
    g[rng.integers(0, n, 50)] = g[rng.integers(0, n, 50)]            # repeated rows
    thr = np.round(np.sqrt(g.sum(axis=1)) + rng.random(n), 1)          # ties
    thr[5] = rng.choice([0.5, 40.0])
    got = undominated_rows(g, thr)
    assert np.array_equal(got, _undominated_all_pairs(g, thr))
    assert 0 < got.sum() < n


def _one_row_cost(spec, hw, *, d, tp, m, zero_stages=(1, 2, 3)):
    def arr(v):
        return np.array([v])

    return strategy_cost(model_shape(spec), DEFAULT_CALIBRATION, hw, kind=arr(KIND_HOMO),
                         pa=arr(0), pb=arr(0), dpa=arr(d), dpb=arr(0), tp=arr(tp), ppa=arr(1),
                         ppb=arr(0), m=arr(m), rc=arr(False), batch=spec.global_batch,
                         per_replica_batch=False, zero_stages=zero_stages)


def test_sharded_zero_repeats_its_traffic_on_every_microbatch_where_it_cannot_hide():
    """Gradient accumulation under ZeRO-2 / ZeRO-3: each micro-batch reduce-scatters its
    gradients (and under ZeRO-3 gathers the parameters twice). On fast links that traffic hides
    behind each micro-batch's compute; on slow links (10 Gb/s between 4-GPU V100 nodes) it
    does not, and the iteration is bound by m times the sharded traffic."""
    spec = get_model("llama2-7b")
    slow = pool_arrays([get_gpu("V100-16GB")], [300.0], [10.0], [4], spec)
    fast = pool_arrays([get_gpu("A100-80GB")], [600.0], [3200.0], [8], spec)
    for hw, d, tp in ((slow, 16, 4), (fast, 16, 8)):
        one = _one_row_cost(spec, hw, d=d, tp=tp, m=1)
        t = one["dp_sync_s"][0]
        assert t > 0
        # one micro-batch: ZeRO-2 costs stage 1's time, ZeRO-3 half an all-reduce more
        assert one["zero2_extra_s"][0] == 0.0
        assert one["zero3_extra_s"][0] == pytest.approx(0.5 * t)
    many = _one_row_cost(spec, fast, d=16, tp=8, m=16)
    assert many["zero2_extra_s"][0] == 0.0
    assert many["zero3_extra_s"][0] == pytest.approx(0.5 * many["dp_sync_s"][0])
    m = 64
    many = _one_row_cost(spec, slow, d=16, tp=4, m=m)
    t, step = many["dp_sync_s"][0], many["step_time_s"][0]
    compute = step - t           # the pipeline, the host and the optimizer
    assert 1.5 * t > compute / m           # the sharded traffic is larger than a micro-batch
    z3 = step + many["zero3_extra_s"][0]
    z2 = step + many["zero2_extra_s"][0]
    assert z3 >= 1.5 * m * t                       # bound by ZeRO-3's traffic
    assert z2 >= 0.5 * (m + 1) * t                 # reduce-scatters + the parameters' gather
    assert step < z2 < z3


def test_every_candidate_is_timed_at_the_zero_stage_it_reports():
    """The planner times a strategy at the smallest ZeRO stage that fits and reports that
    stage: re-pricing each one-type candidate at its reported stage gives its step time."""
    checked = stages = 0
    for cluster, model in ((get_cluster("gavel-108"), "llama2-7b"),
                           (get_cluster("gavel-108"), "gpt2-xl"),
                           (SIA, "llama2-13b"), (TINY, "gpt2-xl")):
        spec = get_model(model)
        pools = cluster.pools
        hw = pool_arrays([get_gpu(p.gpu_type) for p in pools], [p.intra_bw_gbps for p in pools],
                         [p.inter_bw_gbps for p in pools], [p.gpus_per_node for p in pools],
                         spec)
        table = plan(model, cluster)
        for i in np.flatnonzero(table.kind == KIND_HOMO):
            z = int(table.zero[i])

            def arr(v):
                return np.array([v])

            cost = strategy_cost(
                model_shape(spec), DEFAULT_CALIBRATION, hw, kind=arr(KIND_HOMO),
                pa=arr(int(table.pool_a[i])), pb=arr(int(table.pool_a[i])),
                dpa=arr(int(table.dp[i])), dpb=arr(0), tp=arr(int(table.tp[i])),
                ppa=arr(int(table.pp[i])), ppb=arr(0), m=arr(int(table.microbatches[i])),
                rc=arr(bool(table.recompute[i])), batch=spec.global_batch,
                per_replica_batch=spec.batch_per_replica, zero_stages=(z,))
            step = cost["step_time_s"][0] + (cost[f"zero{z}_extra_s"][0] if z >= 2 else 0.0)
            assert table.step_time_s[i] == pytest.approx(step, rel=1e-12), (model, i, z)
            checked += 1
            stages += z >= 2
    assert checked > 40 and stages > 10


def test_divisors_match_trial_division():
    from hsched_env.planner import _divisors
    for n in list(range(1, 400)) + [4096, 9973, 10080, 65536]:
        assert list(_divisors(n)) == [k for k in range(1, n + 1) if n % k == 0]


def test_divisor_pairs_list_each_values_divisors_in_order():
    from hsched_env.planner import _divisor_pairs, _divisors
    values = np.array([12, 1, 9973, 12, 10080, 4, 2, 65536, 9, 1], dtype=np.int64)
    owner, div = _divisor_pairs(values)
    expected = [(i, d) for i, v in enumerate(values.tolist()) for d in _divisors(v)]
    assert list(zip(owner.tolist(), div.tolist())) == expected
    assert all(x.size == 0 for x in _divisor_pairs(np.zeros(0, dtype=np.int64)))


@pytest.mark.parametrize("arrays", [False, True])
def test_one_pool_rows_are_the_plain_loops(arrays, monkeypatch):
    """The one-pool sets' skeleton rows, in array operations and in the loop for a few sets,
    against the plain rule: set by set, each tensor degree that fits the pool's nodes, each
    pipeline depth dividing the set's GPUs per tensor group, ascending; on pools of 1, 3, 6,
    12 and 16 GPUs a node and every one-pool set of the planner's (a set per node count)."""
    from hsched_env.cluster import cluster_from_dict
    from hsched_env.costmodel import KIND_HOMO
    import hsched_env.planner as planner
    from hsched_env.planner import TP_DEGREES, _cluster_sets, _divisors, _one_pool_rows
    monkeypatch.setattr(planner, "_ONE_POOL_ARRAYS_FROM", 0 if arrays else 10**9)
    c = cluster_from_dict({"name": "odd", "nodes": [
        {"gpu_type": "A100-80GB", "gpus_per_node": 6, "count": 7},
        {"gpu_type": "A100-40GB", "gpus_per_node": 3, "count": 5},
        {"gpu_type": "T4", "gpus_per_node": 12, "count": 9},
        {"gpu_type": "V100-32GB", "gpus_per_node": 16, "count": 3},
        {"gpu_type": "A100-80GB", "gpus_per_node": 1, "count": 40, "name": "single"}]})
    rs = _cluster_sets(c.pools)[0]
    sets = np.stack([rs.pool_a, rs.pool_b, rs.n_a, rs.n_b, rs.nodes], axis=1)
    expected = []
    for s, (a, b, n, _, _) in enumerate(sets.tolist()):
        gpn = c.pools[a].gpus_per_node
        for tp in TP_DEGREES:
            if b >= 0 or tp > gpn or n % tp or not (
                    n <= gpn or (gpn % tp == 0 and (n % gpn) % tp == 0)):
                continue
            expected += [(s, KIND_HOMO, n // (tp * pp), 0, tp, pp, 0, a, a)
                         for pp in _divisors(n // tp)]
    got = _one_pool_rows(c.pools, sets)
    assert got.dtype == np.int64 and len(expected) > 500
    assert [tuple(r) for r in got.tolist()] == expected


def test_every_pool_of_a_type_gets_its_own_sets():
    """Dominance pruning compares GPUs per pool: a set on the second pool of a GPU type is not
    pruned by the same set on the first (it used to be, leaving that pool no candidate),
    and ``plan_set`` takes the first pool of the type that holds the count."""
    from hsched_env.cluster import cluster_from_dict
    c = cluster_from_dict({"name": "two-t4", "nodes": [
        {"name": "small", "gpu_type": "T4", "gpus_per_node": 4, "count": 1},
        {"name": "big", "gpu_type": "T4", "gpus_per_node": 8, "count": 2}]})
    t = plan("resnet50", c)
    on = {(t.pool_names[p], int(n)) for p, n in zip(t.pool_a, t.gpus.sum(axis=1))}
    assert {("small", 4), ("big", 4), ("big", 8), ("big", 16)} <= on
    # LPPolicy(dominance=True) compares per pool too: it keeps both pools' 4-GPU rows
    from hsched_env.planner import table_pool_gpus, undominated_rows
    keep = undominated_rows(table_pool_gpus(t, np.arange(len(t))), t.samples_per_s)
    four = [i for i in range(len(t)) if t.gpus[i].sum() == 4]
    assert len(four) == 2 and keep[four].all()
    row = plan_set("resnet50", c, {"T4": 8})
    assert len(row) == 1 and row.pool_names[row.pool_a[0]] == "big"


def test_plan_set_names_the_pool_when_a_type_spans_two_pools():
    from hsched_env.cluster import cluster_from_dict
    c = cluster_from_dict({"name": "two-a100", "nodes": [
        {"name": "p1", "gpu_type": "A100-80GB", "gpus_per_node": 8, "count": 2},
        {"name": "p2", "gpu_type": "A100-80GB", "gpus_per_node": 8, "count": 2}]})
    with pytest.raises(ConfigError, match="one node pool per GPU type.*'p1', has 16"):
        plan_set("llama2-7b", c, {"A100-80GB": 32})
    assert len(plan_set("llama2-7b", c, {"A100-80GB": 16})) == 1


@pytest.mark.parametrize("span, gpus, gpn, inside", [
    (6, 6, 8, True),        # one replica on one node
    (6, 24, 8, False),      # ranks 6–11 span nodes 0 and 1
    (6, 12, 8, False),
    (4, 12, 8, True),       # two replicas a node, the last node half used
    (3, 24, 4, False),      # gpt2-xl on sia-64's 4-GPU T4 nodes, pp = 3
    (2, 6, 4, True),
    (16, 32, 8, False)])    # a replica larger than a node
def test_a_pipeline_stays_inside_a_node_only_when_the_nodes_hold_whole_replicas(span, gpus,
                                                                               gpn, inside):
    """Until session 50 a replica of tp·pp ≤ GPUs per node was priced on the intra-node link
    even when a node boundary fell between two of its stages (the cost-model audit: Llama-2
    7B on 24 L4 at dp4 tp2 pp3 read 231 s a step instead of 242)."""
    from hsched_env.costmodel import _pipeline_link
    hw = pool_arrays([get_gpu("L4")], [64.0], [100.0], [gpn], get_model("llama2-7b"))
    got = _pipeline_link(hw, np.array([0]), np.array([float(span)]), np.array([float(gpus)]))
    assert got[0] == (hw.intra_bw[0] if inside else hw.inter_bw[0])


def test_a_straddling_pipeline_pays_the_nic_share():
    """Llama-2 7B on 24 L4 of modern-512 (8-GPU nodes) at dp4 tp2 pp3 (until session 50 the
    set's best row): priced as if every stage boundary crossed the NIC, it costs the same;
    one replica on one node (6 GPUs) costs less than that. The set's best row is now
    another strategy."""
    import hsched_env.costmodel as cm
    spec, cluster = get_model("llama2-7b"), get_cluster("modern-512")
    pool = next(p for p in cluster.pools if p.gpu_type == "L4")
    hw = pool_arrays([get_gpu("L4")], [pool.intra_bw_gbps], [pool.inter_bw_gbps],
                     [pool.gpus_per_node], spec)

    def step(dp, all_on_the_nic=False):
        def arr(v):
            return np.array([v])
        kw = dict(kind=arr(KIND_HOMO), pa=arr(0), pb=arr(0), dpa=arr(dp), dpb=arr(0),
                  tp=arr(2), ppa=arr(3), ppb=arr(0), m=arr(256), rc=arr(False),
                  batch=spec.global_batch, per_replica_batch=False, zero_stages=(1,))
        orig = cm._pipeline_link
        if all_on_the_nic:
            cm._pipeline_link = lambda hw_, pool_, span, gpus: hw_.inter_bw[pool_]
        try:
            return strategy_cost(model_shape(spec), DEFAULT_CALIBRATION, hw,
                                 **kw)["step_time_s"][0]
        finally:
            cm._pipeline_link = orig
    assert step(4) == pytest.approx(step(4, all_on_the_nic=True), rel=1e-12)
    assert step(1) < step(1, all_on_the_nic=True)
    best = plan_set(spec, cluster, {"L4": 24})
    assert best.step_time_s.min() <= step(4)


def test_microbatch_counts_reach_the_replica_batch():
    """Up to session 50 the planner priced at most 512 micro-batches: Llama-2 7B (1,024
    sequences) on 4 A100-40GB lost m = 1,024 at tp = 4 (3.94 against 3.26 samples/s), and a
    T4 + A100 set lost its only fitting strategy (the cost-model audit)."""
    cluster = get_cluster("sia-64")
    best = plan_set("llama2-7b", cluster, {"A100-40GB": 4}).to_records()[0]
    assert (best["tp"], best["microbatches"]) == (4, 1024)
    assert best["samples_per_s"] > 3.9 and best["mem_gb_per_gpu"] <= 0.9 * 40
    mixed = plan_set("llama2-7b", cluster, {"T4": 4, "A100-40GB": 2}).to_records()
    assert len(mixed) == 1 and mixed[0]["microbatches"] == 1024


def _admitted_plain_rule(model, shape, hw, rs, sk, config):
    """``_admitted_shapes``' rule as one mask over every shape (the planner's until session
    53)."""
    from hsched_env.costmodel import model_state_bytes
    n_set = (rs.n_a + rs.n_b)[sk.set_id]
    ok = np.ones(sk.kind.shape, dtype=bool)
    if not config.mixed or config.data_parallel_only:
        ok &= sk.kind == KIND_HOMO
    if config.data_parallel_only:
        ok &= (sk.tp == 1) & (sk.ppa == 1)
    pp_tot = sk.ppa + sk.ppb
    dp_tot = np.where(sk.kind == KIND_DP_SPLIT, sk.dpa + sk.dpb, sk.dpa)
    if model.allows("tp"):
        ok &= (model.heads % sk.tp == 0) & (model.kv_heads % sk.tp == 0)
    else:
        ok &= sk.tp == 1
    ok &= (pp_tot == 1) | (model.allows("pp") & (pp_tot <= model.layers))
    if not model.batch_per_replica:
        ok &= dp_tot <= model.global_batch
    if config.max_gpus is not None:
        ok &= n_set <= config.max_gpus
    cap = np.maximum(hw.mem_bytes[sk.part_a], hw.mem_bytes[sk.part_b])
    ok &= model_state_bytes(shape) / n_set + shape.fixed_mem_bytes <= cap
    return np.flatnonzero(ok)


def test_admitted_shapes_are_the_plain_rules():
    """The shapes a model admits, tested in stages (the pipeline and replica tests as masks over
    every shape, the rest over what passes), against every test as one mask over every shape:
    catalog models and variants without tp or pp, with one layer, a batch per replica and a
    small batch, under every planner configuration that filters shapes."""
    import dataclasses
    from hsched_env.catalog import model_catalog
    from hsched_env.cluster import cluster_from_dict
    from hsched_env.costmodel import model_shape, pool_arrays
    from hsched_env.planner import _admitted_shapes, _cluster_sets
    odd = cluster_from_dict({"name": "odd", "nodes": [
        {"gpu_type": "A100-80GB", "gpus_per_node": 6, "count": 7},
        {"gpu_type": "H100", "gpus_per_node": 8, "count": 3},
        {"gpu_type": "T4", "gpus_per_node": 12, "count": 9},
        {"gpu_type": "V100-16GB", "gpus_per_node": 4, "count": 3}]})
    llama = get_model("llama2-7b")
    variants = [get_model(m) for m in ("resnet50", "gpt2-xl", "bert-large", "llama2-70b")] + [
        dataclasses.replace(llama, parallelism=("dp", "pp")),
        dataclasses.replace(llama, parallelism=("dp", "tp")),
        dataclasses.replace(llama, layers=1, parallelism=("dp", "tp")),
        dataclasses.replace(llama, global_batch=6),
        dataclasses.replace(llama, batch_per_replica=True, global_batch=4)]
    configs = [PlannerConfig(), PlannerConfig(mixed=False), PlannerConfig(data_parallel_only=True),
               PlannerConfig(max_gpus=24), PlannerConfig(mixed=False, max_gpus=3)]
    assert len(model_catalog()) > 10
    checked = 0
    for cluster in (get_cluster("sia-64"), get_cluster("large-2048"), odd):
        rs, sk = _cluster_sets(cluster.pools)
        pools = cluster.pools
        for model in variants:
            shape = model_shape(model, DEFAULT_CALIBRATION)
            hw = pool_arrays([get_gpu(p.gpu_type) for p in pools],
                             [p.intra_bw_gbps for p in pools], [p.inter_bw_gbps for p in pools],
                             [p.gpus_per_node for p in pools], model, DEFAULT_CALIBRATION)
            for config in configs:
                got = _admitted_shapes(model, shape, hw, sk, config)
                want = _admitted_plain_rule(model, shape, hw, rs, sk, config)
                assert got.dtype == want.dtype and np.array_equal(got, want), (
                    cluster.name, model.name, config)
                checked += want.size > 0
    assert checked > 100


def test_undominated_rows_edge_inputs_on_both_paths():
    """No columns (every row uses nothing: the first dominates the rest; always the every-pair
    path), fractional values (compared as they are, not truncated) and values beyond int16
    and int32 (on the every-pair path and the grouped one), and NaN GPUs (the every-pair
    path, below and above ``_GROUPED_FROM`` rows alike)."""
    from hsched_env.planner import _GROUPED_FROM, undominated_rows
    rng = np.random.default_rng(7)
    for n in (5, _GROUPED_FROM + 3):
        thr = rng.integers(1, 9, size=n).astype(float)
        none = undominated_rows(np.zeros((n, 0), dtype=np.int64), thr)
        assert none.sum() == 1 and np.array_equal(none, _undominated_all_pairs(
            np.zeros((n, 0)), thr))
        frac = np.round(rng.random((n, 2)) * 3, 1)
        frac[rng.random((n, 2)) < 0.3] = 0.0
        assert np.array_equal(undominated_rows(frac, thr), _undominated_all_pairs(frac, thr))
        big = rng.integers(0, 3, size=(n, 2)) * (2**31 + 5)
        assert np.array_equal(undominated_rows(big, thr), _undominated_all_pairs(big, thr))
        nan = rng.integers(0, 3, size=(n, 2)).astype(float)
        nan[0, 1] = np.nan
        assert np.array_equal(undominated_rows(nan, thr), _undominated_all_pairs(nan, thr))


# ------------------------------------------------------------ hand-built specs and factors
@pytest.mark.parametrize("change,field", [
    ({"layers": 0}, "layers"),                  # priced at 60x the real model's speed
    ({"hidden": 0}, "hidden"),
    ({"global_batch": -8}, "global_batch"),     # an empty table
    ({"params": float("nan")}, "params"),
    ({"heads": 0}, "kv_heads"),                 # a ZeroDivisionError in the cost model
    ({"family": "bogus"}, "family"),            # a TypeError in the cost model
    ({"layers": 2.5}, "layers"),
])
def test_a_hand_built_model_spec_is_checked_as_a_catalog_row(change, field):
    """``plan``, ``plan_set``, ``plan_sets`` and ``reference_throughput`` check a ``ModelSpec``
    given to them with the catalog loader's rules, naming the model and the field."""
    import dataclasses

    from hsched_env.workloads import reference_throughput
    spec = dataclasses.replace(get_model("llama2-7b"), **change)
    cluster = get_cluster("sia-64")
    calls = (lambda: plan(spec, cluster), lambda: plan_set(spec, cluster, {"A100-80GB": 8}),
             lambda: plan_sets(spec, cluster, [{"A100-80GB": 8}]),
             lambda: reference_throughput(spec, 8))
    for call in calls:
        with pytest.raises(ConfigError) as err:
            call()
        assert err.value.field == field and err.value.source == "model 'llama2-7b'"
    assert plan(get_model("llama2-7b"), cluster).samples_per_s.size    # the real one passes


@pytest.mark.parametrize("change,field", [
    ({"eta_llm": -1.0}, "eta_llm"),             # priced Llama-2 7B at 500x its speed
    ({"eta_llm": float("nan")}, "eta_llm"),     # dropped candidates without a word
    ({"eta_llm": "0.5"}, "eta_llm"),
    ({"mem_usable_fraction": 0.0}, "mem_usable_fraction"),
    ({"fixed_mem_gb": -5.0}, "fixed_mem_gb"),
    ({"overlap_gamma": 0.5}, "overlap_gamma"),
    ({"eta_llm_by_arch": {"hopper": 2.0}}, "eta_llm_by_arch['hopper']"),
    ({"tf32_families": ("cnn", "x")}, "tf32_families"),
])
def test_calibration_factors_are_checked(change, field):
    import dataclasses
    with pytest.raises(ConfigError) as err:
        dataclasses.replace(DEFAULT_CALIBRATION, **change)
    assert err.value.field == field
    # a table without the cluster's architecture is named when the planner needs it
    thin = dataclasses.replace(DEFAULT_CALIBRATION, eta_fp32_by_arch={"volta": 0.8})
    with pytest.raises(ConfigError, match="no efficiency for architecture 'turing'"):
        plan("resnet50", get_cluster("sia-64"), config=PlannerConfig(calibration=thin))
