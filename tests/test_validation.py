"""Validation of the cost model and planner against published figures.

Which anchors calibrate and which validate (see ``hsched_env/costmodel.py`` and
``scripts/calibrate.py``):

* CALIBRATION (fitted, only checked here for drift): LLaMA-1 65B on 2048 A100-80GB at
  380 tokens/s/GPU (anchor A2) and the measured rows ``scripts/measured.py`` lists in
  ``FIT_ROWS`` set the half-precision factors (``eta_llm``, ``eta_llm_by_arch``,
  ``llm_elementwise_traffic``); Gavel's single-GPU ResNet-18 (bs 16-256), LM (bs 5-80) and
  CycleGAN throughputs set ``eta_fp32_by_arch``, the kernel-launch cost, the memory-traffic
  factor and the overlap exponent.
* VALIDATION (held out, never used to set a factor): Llama-2 7B/13B/70B tokens/s/GPU
  (anchor A1), Gavel's V100/K80 and V100/P100 ratios of ResNet-50 and Transformer (A8), and
  every other compared row of ``scripts/data/measured_throughput.csv`` and the cross-type
  ratios between them.
"""

from __future__ import annotations

import dataclasses
import sys
from pathlib import Path

import numpy as np
import pytest

from hsched_env.catalog import get_gpu, get_model, model_catalog
from hsched_env.cluster import cluster_from_dict, cluster_presets, get_cluster
from hsched_env.costmodel import DEFAULT_CALIBRATION, model_shape
from hsched_env.planner import PlannerConfig, plan, plan_set
from hsched_env.throughput import get_throughput_source

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "scripts"))
import calibrate  # noqa: E402  (the calibration script doubles as the anchor definitions)
import measured  # noqa: E402  (the measured rows and which of them fit)

# LLaMA's and Llama 2's training cluster scale: 256 nodes × 8 A100-80GB, 200 GB/s per node.
A100_2048 = calibrate.a100_cluster(256)


# ------------------------------------------------------------------------------ held out
@pytest.mark.parametrize("model,target", [("llama2-7b", 3000.0), ("llama2-13b", 1500.0),
                                          ("llama2-70b", 320.0)])
def test_llama2_tokens_per_gpu_within_25_percent(model, target):
    """A1 (held out): Llama-2 paper GPU-hours ⇒ 3.0k / 1.5k / 0.32k tokens/s/GPU."""
    table = plan(model, A100_2048)
    best = table.tokens_per_s_per_gpu[0]          # the planner's top (fastest) candidate
    assert abs(best / target - 1) <= 0.25, f"{model}: {best:.0f} tok/s/GPU vs {target:.0f}"


def _analytic_single_gpu(model: str) -> dict[str, float]:
    return calibrate.analytic_single_gpu_steps(model, DEFAULT_CALIBRATION)


@pytest.mark.parametrize("model", ["resnet50", "transformer"])
@pytest.mark.parametrize("slow", ["K80", "P100"])
def test_gavel_speed_ratios_within_35_percent(model, slow):
    """A8 (held out): the analytic V100/K80 and V100/P100 ratios vs Gavel's measurements."""
    pred = _analytic_single_gpu(model)
    job = get_model(model).gavel_job_type
    gavel = get_throughput_source("gavel")
    measured = gavel.steps_per_s(job, "V100-16GB", 1) / gavel.steps_per_s(job, slow, 1)
    ratio = pred["V100-16GB"] / pred[slow]
    assert abs(ratio / measured - 1) <= 0.35, f"{model} V100/{slow}: {ratio:.2f} vs {measured:.2f}"


def test_held_out_jobs_are_not_calibration_jobs():
    assert not set(calibrate.FP32_CALIBRATION_JOBS) & set(calibrate.FP32_HELD_OUT_JOBS)
    assert set(calibrate.FP32_HELD_OUT_JOBS) == {"resnet50", "transformer"}


# ------------------------------------------------------------------------------ measured rows
@pytest.fixture(scope="module")
def measured_predictions():
    """Predictions of the compared measured rows of the sources the checks below use, each
    under the strategy the source ran (``measured.predict_stated``)."""
    rows = [r for r in measured.load_rows() if r.compared
            and r["source"] in ("mosaic", "fms-fsdp-eager", "fms-fsdp-compile",
                                "dle-pyt-bert-2022", "dle-pyt-bert-2021", "lambda-v0",
                                "lambda-v1", "lambda-v2", "dle-pyt-rn50", "dle-tf-rn50",
                                "dle-mx-rn50", "sia-artifact")]
    return {r.id: (r, measured.predict_stated(r)[0]) for r in rows}


def test_fit_rows_and_their_copies_are_not_held_out():
    rows = {r.id: r for r in measured.load_rows()}
    assert set(measured.FIT_ROWS) <= set(rows)
    assert all(rows[i].compared and rows[i].role == "fit" for i in measured.FIT_ROWS)
    # the 8-GPU copies of the fitted 1-GPU BERT rows (same table, model, length, GPU), the
    # 128-GPU H100 MPT-7B row of the fitted 8-GPU one, and the structure-trial row
    for i in ("dle-pyt-bert-2022-004", "dle-pyt-bert-2022-008", "dle-pyt-bert-2022-012",
              "dle-pyt-bert-2022-016", "mosaic-004", "mosaic-021"):
        assert rows[i].role == "fit-adjacent", i
    # other sizes, lengths, GPU counts and types of the same tables are held out
    for i in ("mosaic-011", "mosaic-012", "mosaic-020", "mosaic-038", "dle-pyt-bert-2021-010"):
        assert rows[i].role == "held out", i
    held = [r for r in rows.values() if r.compared and r.role == "held out"
            and measured.family(r) == "transformer"]
    assert len(held) >= 85
    assert rows["dle-pyt-rn50-001"].role == "fit"                   # eta_tf32's row


@pytest.mark.slow
def test_fit_rows_reproduced(measured_predictions):
    """Calibration drift: the fit rows stay where the fit put them (all within ±22%; the
    one-row TF32 fit within 1%)."""
    row, pred = measured_predictions[measured.TF32_FIT_ROWS[0]]
    assert abs(pred / row.value - 1) <= 0.01, (row.id, pred, row.value)
    for i in measured.FIT_ROWS:
        row, pred = measured_predictions[i]
        assert abs(pred / row.value - 1) <= 0.22, (i, pred, row.value)


@pytest.mark.slow
def test_llm_rows_of_one_software_stack_held_out(measured_predictions):
    """Held out: MosaicML's current llm-foundry tables (MPT-1B…70B on 8–128 H100,
    A100-80GB and A100-40GB) and IBM's eager FSDP Llama-2 runs, each under its own strategy:
    a median error under 12% and 80% of the rows within ±15% (docs/cost_model_validation.md
    lists every row; measured: 9.6%, 87%)."""
    errs = np.array([p / r.value - 1 for r, p in measured_predictions.values()
                     if r.role == "held out" and r["source"] in ("mosaic", "fms-fsdp-eager")])
    assert errs.size >= 35
    assert np.median(np.abs(errs)) <= 0.12, np.sort(errs)
    assert np.mean(np.abs(errs) <= 0.15) >= 0.80, np.sort(errs)


def _held_out_ratios(measured_predictions, fast_prefix, slow_prefix, independent,
                     family="transformer", sources=None, half=None):
    rows = [r for r, _ in measured_predictions.values()]
    out = []
    for a, b in measured.ratio_pairs(rows):
        if (a.role == b.role == "held out" and a["gpu"].startswith(fast_prefix)
                and b["gpu"].startswith(slow_prefix)
                and (independent is None or a.fit_source != independent)
                and measured.family(a) == family
                and (sources is None or a["source"] in sources)
                and (half is None or measured._half(a["precision"]) == half)):
            pb = measured_predictions[b.id][1]
            if pb > 0:
                out.append((a.id, b.id,
                            measured_predictions[a.id][1] / pb / (a.value / b.value) - 1))
    return out


@pytest.mark.slow
def test_h100_a100_ratio_held_out(measured_predictions):
    """Held out: the H100 / A100-80GB speed ratio of the MPT sizes and lengths the fit did not
    see, in MosaicML's table (6 pairs, 8-64 GPUs): each within ±12%."""
    pairs = _held_out_ratios(measured_predictions, "H100", "A100-80GB", independent=False)
    assert len(pairs) >= 6
    assert all(abs(e) <= 0.12 for _, _, e in pairs), pairs


@pytest.mark.slow
def test_a100_v100_ratio_independent_sources(measured_predictions):
    """Held out, from sources the fit never read (Lambda's benchmarks, NVIDIA's 2021 BERT
    tables): the A100 / V100 speed ratios of BERT-large, median error within 10%."""
    pairs = _held_out_ratios(measured_predictions, "A100", "V100", independent=True)
    assert len(pairs) >= 12
    assert np.median(np.abs([e for _, _, e in pairs])) <= 0.10, pairs


def _ratio_errors(measured_predictions):
    """Every held-out pair of ``measured.ratio_pairs`` with the model's ratio error."""
    rows = [r for r, _ in measured_predictions.values()]
    return [(a, b, measured_predictions[a.id][1] / measured_predictions[b.id][1]
             / (a.value / b.value) - 1)
            for a, b in measured.ratio_pairs(rows) if a.role == b.role == "held out"]


NVIDIA_CNN_TABLES = ("dle-pyt-rn50", "dle-tf-rn50", "dle-mx-rn50")


@pytest.mark.slow
def test_cnn_rows_of_nvidia_pytorch_table_held_out(measured_predictions):
    """Held out (nothing CNN-shaped in half precision is fitted; the fp32 factors come from
    Gavel's table; the rule that a half-precision CNN keeps fp16 activations was chosen with
    these rows visible, docs/cost_model.md): DeepLearningExamples' PyTorch ResNet-50 table (AMP on A100-80GB and
    V100, fp32 on V100; 1 and 8 GPUs): median error under 12%, 80% of the rows within ±15%
    (measured: 10.8%, 9 of 10; its TF32 rows fit ``eta_tf32`` and are left out)."""
    errs = np.array([p / r.value - 1 for r, p in measured_predictions.values()
                     if r["source"] == "dle-pyt-rn50" and r.role == "held out"])
    assert errs.size == 10
    assert np.median(np.abs(errs)) <= 0.12, np.sort(errs)
    assert np.mean(np.abs(errs) <= 0.15) >= 0.80, np.sort(errs)


@pytest.mark.slow
def test_tf32_cnn_rows_held_out(measured_predictions):
    """Held out: every TF32 / "fp32"-on-Ampere-or-newer ResNet-50 row but the one
    ``eta_tf32`` is fitted to and its 8-GPU copy (NVIDIA's TensorFlow and MXNet tables,
    Lambda's A10 / A100 / H100 / H200 rows): median error under 12%, 70% within ±15%
    (measured: 9.4%, 79% of 19; 12 of the 19 are A100 rows — the fitted configuration on other
    software stacks — all within; A10 +9%, H100 and H200 +11–21%)."""
    errs = np.array([p / r.value - 1 for r, p in measured_predictions.values()
                     if r.role == "held out" and r["model"] == "resnet50"
                     and not measured._half(r["precision"])
                     and get_gpu(r["gpu"]).tf32_tflops > 0])
    assert errs.size >= 15
    assert np.median(np.abs(errs)) <= 0.12, np.sort(errs)
    assert np.mean(np.abs(errs) <= 0.15) >= 0.70, np.sort(errs)


@pytest.mark.slow
def test_a100_v100_cnn_ratio_nvidia_tables(measured_predictions):
    """Held out: the A100 / V100 speed ratio of ResNet-50 in mixed precision in NVIDIA's
    PyTorch, TensorFlow and MXNet tables (same batch per GPU on both types): each pair
    within ±10% (measured: −7% … +2%)."""
    pairs = _held_out_ratios(measured_predictions, "A100", "V100", independent=None,
                             family="CNN", sources=NVIDIA_CNN_TABLES, half=True)
    assert len(pairs) >= 9
    assert all(abs(e) <= 0.10 for _, _, e in pairs), pairs


def test_cnn_rows_compared_by_precision_and_architecture():
    """ResNet-50 rows are compared in half precision, fp32 and TF32 ("fp32" on Ampere or newer
    runs TF32 convolutions by default, and the model prices it so); a TF32 row on a GPU
    without TF32, or an FP8 row, is not."""
    rows = {r.id: r for r in measured.load_rows()}
    for i in ("dle-pyt-rn50-002", "dle-pyt-rn50-005", "tf-benchmarks-2017-005",
              "lambda-v0-014", "dle-pyt-rn50-001", "lambda-v1-018"):
        assert rows[i].compared and measured.family(rows[i]) == "CNN", i
    assert rows["dle-pyt-rn50-001"].role == "fit"                   # eta_tf32's row
    assert rows["dle-pyt-rn50-003"].role == "fit-adjacent"          # its 8-GPU copy
    assert rows["dle-tf-rn50-001"].role == "held out"
    on_v100 = measured.Row({**rows["dle-pyt-rn50-001"].fields, "gpu": "V100-16GB"}, True)
    assert "without TF32" in measured._skip_reason(on_v100.fields)
    half = measured.row_model(rows["dle-pyt-rn50-004"])             # 8 A100, batch 2048
    assert (half.precision, half.global_batch, half.batch_per_replica) == ("fp16", 256, True)
    assert measured.row_model(rows["dle-pyt-rn50-001"]).precision == "fp32"


def test_sia_artifact_rows_are_held_out_cnn_rows_read_from_their_step_times():
    """Sia's artifact (one AdaptDL script per job profiled on every GPU type of its cluster):
    ResNet-18 / CIFAR-10 in fp32 and ResNet-50 in AMP on T4, V100-32GB, A100-40GB and
    RTX 2080 Ti, 1 and 4 GPUs, are compared and held out; the Quadro RTX 6000 rows (no catalog
    type) are listed, not compared. Every value is the local batch over the step time its
    notes quote from the pinned file."""
    import re
    rows = [r for r in measured.load_rows() if r["source"] == "sia-artifact"]
    assert len(rows) == 20
    compared = [r for r in rows if r.compared]
    assert len(compared) == 16
    assert all(r.role == "held out" and measured.family(r) == "CNN" for r in compared)
    assert {r["gpu"] for r in compared} == {"T4", "V100-32GB", "A100-40GB", "RTX2080Ti"}
    assert {r.reason for r in rows if not r.compared} == {
        "GPU Quadro-RTX6000 not in the catalog"}
    for r in rows:
        batch, step = re.search(r"local_bsz=(\d+) step_time=([0-9.]+) s", r["notes"]).groups()
        assert r.value == pytest.approx(int(batch) / float(step), rel=1e-3), r.id
        assert int(r["global_batch"]) == int(batch) * int(r["num_gpus"]), r.id
    by = {(r["model"], r["gpu"], r["num_gpus"]): r for r in compared}
    rn18, rn50 = by[("resnet18", "T4", "1")], by[("resnet50", "T4", "4")]
    assert (measured.row_model(rn18).precision, measured.row_model(rn18).global_batch) == (
        "fp32", 725)
    assert (measured.row_model(rn50).precision, measured.row_model(rn50).global_batch) == (
        "fp16", 163)
    # the V100/T4 pairs the cost-model docs report (the only public source with both)
    pairs = [(a["gpu"], b["gpu"], a["model"], a["num_gpus"]) for a, b in measured.ratio_pairs(rows)
             if {a["gpu"], b["gpu"]} == {"V100-32GB", "T4"}]
    assert sorted(pairs) == [("V100-32GB", "T4", m, n)
                             for m in ("resnet18", "resnet50") for n in ("1", "4")]


@pytest.mark.slow
def test_v100_t4_ratio_of_sia_artifact_as_documented(measured_predictions):
    """The V100/T4 ratio (issue 14 asks for ±10%): missed, as docs/cost_model.md reports —
    the model's ratio 2.13 / 2.14 against 2.92 / 3.08 measured for ResNet-18 in fp32 (1 / 4
    GPUs), 2.85 / 2.87 against 2.45 / 1.72 for ResNet-50 in AMP. A drift guard: if the model
    or the rows change, the documented figures must be re-measured."""
    pairs = {(a["model"], a["num_gpus"]): e for a, b, e in _ratio_errors(measured_predictions)
             if a["gpu"] == "V100-32GB" and b["gpu"] == "T4"}
    documented = {("resnet18", "1"): -0.27, ("resnet18", "4"): -0.30,
                  ("resnet50", "1"): +0.17, ("resnet50", "4"): +0.67}
    assert pairs.keys() == documented.keys()
    for key, err in documented.items():
        assert pairs[key] == pytest.approx(err, abs=0.01), (key, pairs[key])


def test_fp32_convolutions_run_tf32_on_ampere_and_newer():
    """An fp32 CNN may run its convolutions on TF32 tensor cores where the GPU has them (the
    cuDNN default), and cuDNN takes the faster: the TF32 rate on A100 and H100, the fp32 rate
    on A10 (whose TF32 rate is lower); an fp32 matmul model (Transformer, LM) and pre-Ampere
    GPUs keep the fp32 peak. ResNet-50 on one A100-80GB: about 2.5× a V100 (NVIDIA's table:
    938 / 367)."""
    cal = DEFAULT_CALIBRATION
    a100, v100, h100 = get_gpu("A100-80GB"), get_gpu("V100-16GB"), get_gpu("H100-SXM")
    rn50, transformer = get_model("resnet50"), get_model("transformer")
    assert cal.may_use_tf32(a100, rn50) and cal.may_use_tf32(h100, get_model("cyclegan"))
    assert not cal.may_use_tf32(v100, rn50) and not cal.may_use_tf32(a100, transformer)
    assert not cal.may_use_tf32(a100, dataclasses.replace(rn50, precision="fp16"))
    assert cal.achievable_flops(a100, rn50) == pytest.approx(156e12 * cal.eta_tf32)
    assert cal.achievable_flops(a100, transformer) == pytest.approx(
        19.5e12 * cal.eta_fp32_by_arch["ampere"])
    a10 = get_gpu("A10")
    assert cal.may_use_tf32(a10, rn50)
    assert cal.achievable_flops(a10, rn50) == pytest.approx(
        31.2e12 * cal.eta_fp32_by_arch["ampere"])                   # 25.0 > 62.5 × 0.3165
    speed = {g: plan(rn50, cluster_from_dict({"name": g, "nodes": [
        {"gpu_type": g, "gpus_per_node": 1, "count": 1}]})).samples_per_s.max()
        for g in ("A100-80GB", "V100-16GB")}
    assert 2.3 < speed["A100-80GB"] / speed["V100-16GB"] < 3.3


def test_half_precision_cnn_keeps_half_the_activation_bytes():
    """Mixed precision stores a CNN's activations in fp16: half the activation memory and the
    memory-bound traffic of the fp32 model, the same FLOPs; the fp32 catalog model is priced
    from the catalog's bytes unchanged."""
    fp32 = get_model("resnet50")
    fp16 = dataclasses.replace(fp32, precision="fp16")
    s32, s16 = model_shape(fp32), model_shape(fp16)
    assert s32.act_layer == fp32.act_bytes_per_sample / fp32.layers
    assert s16.act_layer == pytest.approx(s32.act_layer / 2)
    assert s16.traffic_bytes == pytest.approx(s32.traffic_bytes / 2)
    assert s16.layer_fwd_flops == s32.layer_fwd_flops


def test_stated_strategies_read_from_the_rows():
    rows = {r.id: r for r in measured.load_rows()}
    st = measured.stated_strategy(rows["mosaic-038"])     # 8 A100-40GB, ActCkpt, GradAccum 4
    assert (st.dp, st.tp, st.microbatches, st.recompute, st.zero) == (8, 1, 4, True, 3)
    st = measured.stated_strategy(rows["mosaic-022"])     # ActCkpt=False, GradAccum 2
    assert (st.microbatches, st.recompute, st.basis) == (2, False, "stated")
    st = measured.stated_strategy(rows["fms-fsdp-eager-005"])     # Selective AC: none priced
    assert (st.dp, st.microbatches, st.recompute, st.zero) == (128, 1, False, 3)
    st = measured.stated_strategy(rows["megatron-2020-007"])      # tensor MP 8, the paper's AC
    assert (st.dp, st.tp, st.recompute, st.zero) == (1, 8, True, 0)
    assert st.basis == "source's paper"
    st = measured.stated_strategy(rows["dle-pyt-bert-2022-002"])  # single GPU, 32 micro-batches
    assert (st.dp, st.microbatches, st.recompute, st.zero) == (1, 32, False, 0)
    bad = measured.Row({**rows["mosaic-038"].fields, "micro_batch": "7"}, True)
    with pytest.raises(ValueError, match="mosaic-038: micro-batch 7"):
        measured.stated_strategy(bad)


def test_stated_strategy_prices_recompute_and_sharding():
    """The stated-strategy figure follows the row's settings: the same row with activation
    checkpointing is slower (a third more compute), and the model's memory check is reported."""
    row = {r.id: r for r in measured.load_rows()}["mosaic-022"]
    plain, fits = measured.predict_stated(row)
    ckpt = measured.Row({**row.fields, "notes": row["notes"].replace("ActCkpt=False",
                                                                     "ActCkpt=True")}, True)
    slow, _ = measured.predict_stated(ckpt)
    assert fits and 0.70 < slow / plain < 0.80


# ------------------------------------------------------------------------------ calibration drift
def test_calibration_anchor_a2_reproduced():
    """A2 (calibration): the shipped eta_llm still gives LLaMA-65B 380 tok/s/GPU (±2%)."""
    got = calibrate.tokens_per_gpu_at(calibrate.LLAMA1_65B, 2048, DEFAULT_CALIBRATION)
    assert got == pytest.approx(calibrate.A2_TOKENS_PER_S_PER_GPU, rel=0.02)


# ------------------------------------------------------------------------------ feasibility facts
A100_64 = cluster_from_dict({"name": "a100-80gb-64", "nodes": [
    {"gpu_type": "A100-80GB", "gpus_per_node": 8, "count": 8, "inter_node_bw_gbps": 200.0}]})


def test_llama2_70b_has_no_pure_data_parallel_candidate():
    """Plain data parallelism replicates 1.1 TB of model states per replica: it cannot fit."""
    table = plan("llama2-70b", A100_64, config=PlannerConfig(prune_dominated=False))
    assert len(table) > 0
    assert not np.any((table.tp == 1) & (table.pp == 1) & (table.zero == 0))
    for n in (8, 16, 64):
        strategies = plan_set("llama2-70b", A100_64, {"A100-80GB": n}, best_only=False)
        assert not np.any((strategies.tp == 1) & (strategies.pp == 1) & (strategies.zero == 0))


def test_llama2_70b_on_16_a100_needs_tensor_and_pipeline_parallelism():
    strategies = plan_set("llama2-70b", A100_64, {"A100-80GB": 16}, best_only=False)
    assert np.any((strategies.tp > 1) & (strategies.pp > 1))
    assert np.all(strategies.tp * strategies.pp * strategies.dp == 16)


@pytest.mark.parametrize("cluster", cluster_presets())
def test_every_candidate_fits_its_gpus(cluster):
    c = get_cluster(cluster)
    frac = DEFAULT_CALIBRATION.mem_usable_fraction
    for name in model_catalog():
        table = plan(name, c)
        for i in range(len(table)):
            rec = table.take([i]).to_records()[0]
            for gpu, gb in rec["mem_gb_by_type"].items():
                assert 0 < gb <= frac * get_gpu(gpu).memory_gb + 1e-9, (cluster, name, rec)


def test_mixed_candidates_exist_and_never_beat_the_faster_type():
    """On sia-64, a mid-size model gets mixed-type candidates, and none is predicted faster than
    the same number of GPUs all of the faster type (same node shape, best NIC)."""
    c = get_cluster("sia-64")
    for name in ("gpt2-xl", "bert-large", "resnet50"):
        model = get_model(name)
        table = plan(model, c, config=PlannerConfig(prune_dominated=False))
        mixed = np.flatnonzero(table.kind > 0)
        assert mixed.size >= 10, name
        for i in mixed:
            gpus = table.gpus_dict(i)
            assert len(gpus) == 2
            fast = max(gpus, key=lambda t: DEFAULT_CALIBRATION.achievable_flops(get_gpu(t),
                                                                               model))
            pool = next(p for p in c.pools if p.gpu_type == fast)
            total = sum(gpus.values())
            same_fast = cluster_from_dict({"name": "fast", "nodes": [{
                "gpu_type": fast, "gpus_per_node": pool.gpus_per_node,
                "count": -(-total // pool.gpus_per_node),
                "inter_node_bw_gbps": max(p.inter_bw_gbps for p in c.pools)}]})
            homo = plan_set(model, same_fast, {fast: total})
            assert len(homo) == 1, (name, gpus)
            assert table.samples_per_s[i] <= homo.samples_per_s[0] * (1 + 1e-9), (name, gpus)


def test_counted_puts_the_word_in_its_number():
    from hsched_env.text import counted
    assert counted(1, "epoch") == "1 epoch"
    assert counted(0, "epoch") == "0 epochs"
    assert counted(2, "DAgger iteration") == "2 DAgger iterations"
    assert counted(1200, "round") == "1,200 rounds"
    assert counted(3, "policy", "policies") == "3 policies"
