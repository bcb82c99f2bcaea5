"""Tests of the GPU and model catalogs (hsched_env/catalog.py and its package data)."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

from hsched_env.catalog import (
    GpuType, ModelSpec, get_gpu, get_model, gpu_catalog, load_gpu_catalog, load_model_catalog,
    model_catalog,
)
from conftest import LLAMA3_8B
from hsched_env.errors import ConfigError, UnknownNameError

REQUIRED_GPUS = ["K80", "P100", "V100-16GB", "V100-32GB", "T4", "RTX2080Ti", "A10", "L4",
                 "A100-40GB", "A100-80GB", "H100-SXM", "H200", "L40S"]
REQUIRED_MODELS = ["resnet18", "resnet50", "transformer", "lm", "recommendation", "cyclegan",
                   "a3c", "bert-large", "gpt2-xl", "gpt2-medium", "vit-l", "llama2-7b",
                   "llama2-13b", "llama2-70b"]
GAVEL_JOBS = {  # catalog name -> (Gavel job type, batch size Gavel's table was measured at)
    "resnet50": ("ResNet-50 (batch size 64)", 64),
    "resnet18": ("ResNet-18 (batch size 128)", 128),
    "transformer": ("Transformer (batch size 64)", 64),
    "lm": ("LM (batch size 20)", 20),
    "recommendation": ("Recommendation (batch size 1024)", 1024),
    "a3c": ("A3C", None),
    "cyclegan": ("CycleGAN", 1),
}
GAVEL_THROUGHPUTS = (Path(__file__).resolve().parents[2] / "shared" / "traces" / "gavel"
                     / "simulation_throughputs.json")
GB = 1e9


def packaged_json(name: str) -> dict:
    return json.loads((Path(__file__).parents[1] / "hsched_env" / "data" / name).read_text())


# --- contents ---------------------------------------------------------------------------------

def test_required_rows_present_in_file_order():
    assert list(gpu_catalog()) == REQUIRED_GPUS
    assert set(model_catalog()) == set(REQUIRED_MODELS)
    assert all(isinstance(g, GpuType) for g in gpu_catalog().values())
    assert all(isinstance(m, ModelSpec) for m in model_catalog().values())


def test_gpu_figures():
    a100 = get_gpu("A100-80GB")
    assert (a100.memory_gb, a100.fp16_tflops, a100.fp32_tflops) == (80, 312, 19.5)
    assert (a100.memory_bw_gbps, a100.link, a100.link_bw_gbps) == (2039, "NVLink3", 600)
    assert get_gpu("A100-40GB").memory_gb == 40
    h100 = get_gpu("H100-SXM")
    assert (h100.fp16_tflops, h100.fp32_tflops, h100.memory_gb) == (989, 67, 80)
    assert get_gpu("H200").memory_gb == 141
    k80 = get_gpu("K80")
    assert k80.memory_gb == 12 and k80.memory_bw_gbps == 240
    assert k80.fp16_tflops == k80.fp32_tflops == pytest.approx(4.4, abs=0.05)
    assert "fp32" in k80.notes  # the missing fast fp16 is explained
    assert get_gpu("V100-16GB").memory_gb == 16 and get_gpu("V100-32GB").memory_gb == 32
    assert get_gpu("T4").link == "PCIe3" and get_gpu("T4").link_bw_gbps == 32
    assert get_gpu("L40S").fp16_tflops == 362 and get_gpu("L40S").link == "PCIe4"


def test_peak_tflops_by_precision():
    v100 = get_gpu("V100-16GB")
    assert v100.peak_tflops("fp32") == 15.7
    assert v100.peak_tflops("fp16") == v100.peak_tflops("bf16") == 125
    with pytest.raises(UnknownNameError, match="fp32"):
        v100.peak_tflops("fp8")


def test_tf32_peak_is_optional(tmp_path):
    """``tf32_tflops`` may be left out of a catalog row (no TF32: 0); the packaged catalog
    gives it for Ampere, Ada and Hopper parts only."""
    doc = packaged_json("gpus.json")
    for row in doc["gpus"]:
        row.pop("tf32_tflops", None)
    path = tmp_path / "gpus.json"
    path.write_text(json.dumps(doc))
    assert all(g.tf32_tflops == 0.0 for g in load_gpu_catalog(path).values())
    for gpu in gpu_catalog().values():
        assert (gpu.tf32_tflops > 0) == (gpu.arch in ("ampere", "ada", "hopper")), gpu.name
    assert get_gpu("A100-40GB").tf32_tflops == 156


def test_every_gpu_is_sane():
    for gpu in gpu_catalog().values():
        assert gpu.fp16_tflops >= gpu.fp32_tflops > 0
        assert gpu.memory_gb > 0 and gpu.memory_bw_gbps > 0 and gpu.link_bw_gbps > 0
        assert gpu.price_per_gpu_hour_usd > 0 and gpu.source
        assert all(a == a.lower() for a in gpu.aliases)


def test_model_figures():
    l70 = get_model("llama2-70b")
    assert (l70.layers, l70.hidden, l70.ffn, l70.heads, l70.kv_heads) == (80, 8192, 28672, 64, 8)
    l7 = get_model("llama2-7b")
    assert (l7.params, l7.layers, l7.hidden, l7.ffn, l7.heads, l7.kv_heads) == (
        6.7e9, 32, 4096, 11008, 32, 32)
    assert (l7.seq_len, l7.vocab, l7.swiglu, l7.flash_attention, l7.precision) == (
        4096, 32000, True, True, "bf16")
    assert l7.global_batch * l7.seq_len == 4 * 1024 * 1024  # 4M tokens
    assert get_model("gpt2-xl").global_batch == 512 and get_model("vit-l").global_batch == 4096
    assert get_model("resnet50").fwd_flops_per_sample == pytest.approx(8.2e9)


def test_model_kinds():
    for m in model_catalog().values():
        if m.gavel_job_type is not None:
            assert m.parallelism == ("dp",) and m.precision == "fp32"
            assert not m.allows("tp") and not m.allows("pp")
            assert m.fwd_flops_per_sample and m.act_bytes_per_sample
            assert not m.is_transformer_shaped
        else:
            assert m.parallelism == ("dp", "tp", "pp") and m.is_transformer_shaped
            assert m.fwd_flops_per_sample is None and m.act_bytes_per_sample is None
            assert m.tokens_per_sample == m.seq_len > 0
    assert get_model("transformer").family == "transformer"
    with pytest.raises(UnknownNameError):
        get_model("lm").allows("ep")


def test_gavel_job_types_and_batch_sizes():
    for name, (job_type, batch) in GAVEL_JOBS.items():
        m = get_model(name)
        assert m.gavel_job_type == job_type
        if batch is not None:
            assert m.global_batch == batch
    if GAVEL_THROUGHPUTS.exists():  # the shared trace copy is not part of the package
        keys = json.loads(GAVEL_THROUGHPUTS.read_text())["k80"]
        for job_type, _ in GAVEL_JOBS.values():
            assert repr((job_type, 1)) in keys


# --- lookup -----------------------------------------------------------------------------------

@pytest.mark.parametrize("alias, canonical", [
    ("a100-80gb", "A100-80GB"), ("a100_80gb", "A100-80GB"), ("a100-80", "A100-80GB"),
    ("A100-80GB", "A100-80GB"), ("a100", "A100-40GB"), ("h100", "H100-SXM"),
    ("h100-sxm", "H100-SXM"), ("v100", "V100-16GB"), ("v100-32gb", "V100-32GB"),
    ("rtx2080ti", "RTX2080Ti"), ("2080ti", "RTX2080Ti"), ("k80", "K80"), ("p100", "P100"),
    ("t4", "T4"), ("l4", "L4"), ("a10", "A10"), ("h200", "H200"), ("l40s", "L40S"),
    (" L40S ", "L40S"),
])
def test_gpu_aliases(alias, canonical):
    assert get_gpu(alias).name == canonical


@pytest.mark.parametrize("spelling, name", [
    ("resnet50", "resnet50"), ("ResNet-50", "resnet50"), ("BERT_Large", "bert-large"),
    ("llama2_70b", "llama2-70b"), ("GPT2-XL", "gpt2-xl"),
])
def test_model_lookup(spelling, name):
    assert get_model(spelling).name == name


def test_unknown_names_list_valid_ones():
    with pytest.raises(UnknownNameError) as info:
        get_gpu("a10g")
    msg = str(info.value)
    assert "a10g" in msg and "A100-80GB" in msg and "K80" in msg and "GPU type" in msg
    assert isinstance(info.value, KeyError) and isinstance(info.value, ConfigError)
    with pytest.raises(UnknownNameError) as info:
        get_model("llama3-8b")
    assert "llama3-8b" in str(info.value) and "llama2-7b" in str(info.value)
    assert "resnet50" in info.value.valid


def test_lookup_in_user_catalog(tmp_path):
    doc = packaged_json("gpus.json")
    doc["gpus"] = [g for g in doc["gpus"] if g["name"] == "T4"]
    path = tmp_path / "mine.json"
    path.write_text(json.dumps(doc))
    mine = load_gpu_catalog(path)
    assert get_gpu("tesla-t4", mine).name == "T4"
    with pytest.raises(UnknownNameError, match="valid: T4$"):
        get_gpu("k80", mine)


# --- consistency of the figures ---------------------------------------------------------------

def simple_memory_bytes(model: ModelSpec, batch: int) -> float:
    """activations x batch + model states + 1 GB fixed overhead (cost_model.md section 4)."""
    return model.act_bytes_per_sample * batch + model.params * model.bytes_per_param_states + GB


def test_resnet50_memory_matches_gavel():
    """Gavel runs ResNet-50 bs64 on a K80 (and bs128 on P100) but has no multi-GPU K80 bs128."""
    r50 = get_model("resnet50")
    k80, p100 = get_gpu("K80").memory_gb * GB, get_gpu("P100").memory_gb * GB
    assert 90e6 <= r50.act_bytes_per_sample <= 110e6
    assert simple_memory_bytes(r50, 128) > 0.9 * k80
    assert simple_memory_bytes(r50, 64) < 0.9 * k80
    assert simple_memory_bytes(r50, 128) < 0.9 * p100


def test_gavel_jobs_fit_their_measured_batch_on_k80():
    k80 = get_gpu("K80").memory_gb * GB
    for name in GAVEL_JOBS:
        m = get_model(name)
        assert simple_memory_bytes(m, m.global_batch) < 0.9 * k80, name


def shape_params(m: ModelSpec, untied: bool) -> float:
    """Parameter count from the shape: attention + MLP per layer, plus embeddings."""
    h = m.hidden
    attention = 2 * h * h + 2 * h * h * m.kv_heads / m.heads  # Q, O + K, V (GQA shrinks K, V)
    mlp = (3 if m.swiglu else 2) * h * m.ffn
    return m.layers * (attention + mlp) + (2 if untied else 1) * m.vocab * h


@pytest.mark.parametrize("name, untied", [
    ("gpt2-medium", False), ("gpt2-xl", False), ("bert-large", False), ("vit-l", False),
    ("llama2-7b", True), ("llama2-13b", True), ("llama2-70b", True),
])
def test_params_match_shape(name, untied):
    m = get_model(name)
    assert shape_params(m, untied) == pytest.approx(m.params, rel=0.15)


def test_llama_shape_counts_are_tight():
    # The Llama-2 shape reproduces the paper's counts to 1% (GQA included), so a wrong ffn,
    # kv_heads or untied embedding would show.
    assert shape_params(get_model("llama2-7b"), True) == pytest.approx(6.74e9, rel=0.01)
    assert shape_params(get_model("llama2-70b"), True) == pytest.approx(68.98e9, rel=0.01)
    without_gqa = 80 * (4 * 8192**2 + 3 * 8192 * 28672) + 2 * 32000 * 8192
    assert without_gqa > 1.05 * get_model("llama2-70b").params


def test_lstm_lm_params_and_flops_from_shape():
    lm = get_model("lm")
    V, h, s = lm.vocab, lm.hidden, lm.seq_len
    lstm = 2 * 4 * (h * h + h * h + 2 * h)
    assert V * h + lstm + h * V + V == pytest.approx(lm.params, rel=0.02)
    per_token = 2 * (2 * 4 * h * 2 * h) + 2 * h * V
    assert per_token * s == pytest.approx(lm.fwd_flops_per_sample, rel=0.05)


# --- loading user files -----------------------------------------------------------------------

def test_packaged_files_round_trip(tmp_path):
    for name, load, packaged in [("gpus.json", load_gpu_catalog, gpu_catalog),
                                 ("models.json", load_model_catalog, model_catalog)]:
        path = tmp_path / name
        path.write_text(json.dumps(packaged_json(name)))
        assert load(path) == packaged()


GPU_CASES = [
    ("missing key", lambda rows: rows[3].pop("memory_gb"), "gpus[3].memory_gb", "missing"),
    ("extra key", lambda rows: rows[2].update(tflops=1.0), "gpus[2].tflops", "unknown key"),
    ("NaN", lambda rows: rows[1].update(fp32_tflops=math.nan), "gpus[1].fp32_tflops", "finite"),
    ("inf", lambda rows: rows[1].update(link_bw_gbps=math.inf), "gpus[1].link_bw_gbps",
     "finite"),
    ("negative memory", lambda rows: rows[3].update(memory_gb=-16), "gpus[3].memory_gb", "> 0"),
    ("zero bandwidth", lambda rows: rows[0].update(memory_bw_gbps=0), "gpus[0].memory_bw_gbps",
     "at least 0.001 GB/s"),
    # below 1 MB/s: accepted by the catalog before, refused only once a cluster was built
    ("subnormal link", lambda rows: rows[2].update(link_bw_gbps=1e-320),
     "gpus[2].link_bw_gbps", "at least 0.001 GB/s (1 MB/s), got 1e-320"),
    ("tiny memory bandwidth", lambda rows: rows[3].update(memory_bw_gbps=9.99e-4),
     "gpus[3].memory_bw_gbps", "at least 0.001 GB/s"),
    ("string number", lambda rows: rows[0].update(memory_gb="12"), "gpus[0].memory_gb",
     "number"),
    ("bool number", lambda rows: rows[0].update(memory_gb=True), "gpus[0].memory_gb", "number"),
    ("aliases not a list", lambda rows: rows[4].update(aliases="t4"), "gpus[4].aliases", "list"),
    ("duplicate alias", lambda rows: rows[4]["aliases"].append("k80"), "gpus[4].aliases[2]",
     "duplicate alias"),
    ("repeated own alias", lambda rows: rows[4]["aliases"].append("t4"), "gpus[4].aliases[2]",
     "duplicate alias"),
    ("uppercase alias", lambda rows: rows[4]["aliases"].append("Tesla-T4x"),
     "gpus[4].aliases[2]", "lowercase"),
    ("duplicate name", lambda rows: rows[5].update(name="t4"), "gpus[5].name", "duplicate"),
    ("unknown arch", lambda rows: rows[0].update(arch="keplar"), "gpus[0].arch", "kepler"),
    ("swapped peaks", lambda rows: rows[2].update(fp16_tflops=10.0), "gpus[2].fp16_tflops",
     "fp32"),
    ("row not object", lambda rows: rows.__setitem__(1, ["P100"]), "gpus[1]", "object"),
    ("sparse tf32", lambda rows: rows[8].update(tf32_tflops=624.0), "gpus[8].tf32_tflops",
     "sparsity"),
    ("negative tf32", lambda rows: rows[8].update(tf32_tflops=-1.0), "gpus[8].tf32_tflops",
     ">= 0"),
    ("tf32 on volta", lambda rows: rows[2].update(tf32_tflops=62.5), "gpus[2].tf32_tflops",
     "Ampere"),
]

MODEL_CASES = [
    ("missing key", lambda rows: rows[5].pop("layers"), "models[5].layers", "missing"),
    ("extra key", lambda rows: rows[0].update(epochs=90), "models[0].epochs", "unknown key"),
    ("float layers", lambda rows: rows[5].update(layers=32.5), "models[5].layers", "integer"),
    ("zero layers", lambda rows: rows[5].update(layers=0), "models[5].layers", "> 0"),
    ("NaN params", lambda rows: rows[11].update(params=math.nan), "models[11].params", "finite"),
    ("negative act", lambda rows: rows[1].update(act_bytes_per_sample=-1.0),
     "models[1].act_bytes_per_sample", "> 0"),
    ("null bool", lambda rows: rows[11].update(swiglu=None), "models[11].swiglu", "null"),
    ("unknown family", lambda rows: rows[0].update(family="vision"), "models[0].family",
     "cnn"),
    ("unknown precision", lambda rows: rows[0].update(precision="fp8"), "models[0].precision",
     "bf16"),
    ("cnn without flops", lambda rows: rows[1].update(fwd_flops_per_sample=None),
     "models[1].fwd_flops_per_sample", "required"),
    ("tp on a cnn", lambda rows: rows[1].update(parallelism=["dp", "tp"]),
     "models[1].parallelism", "tp"),
    ("unknown parallelism", lambda rows: rows[11].update(parallelism=["dp", "ep"]),
     "models[11].parallelism", "'ep'"),
    ("kv heads not dividing", lambda rows: rows[13].update(kv_heads=7), "models[13].kv_heads",
     "divide"),
    ("tokens != seq_len", lambda rows: rows[11].update(tokens_per_sample=2048),
     "models[11].tokens_per_sample", "seq_len"),
    ("duplicate name", lambda rows: rows[2].update(name="resnet-50"), "models[2].name",
     "duplicate"),
]


def _write_modified(tmp_path, name, edit):
    doc = packaged_json(name)
    edit(doc["gpus" if name == "gpus.json" else "models"])
    path = tmp_path / f"bad_{name}"
    path.write_text(json.dumps(doc, indent=1))  # json writes NaN / Infinity for non-finite
    return path


@pytest.mark.parametrize("case, edit, field, reason", GPU_CASES, ids=[c[0] for c in GPU_CASES])
def test_bad_gpu_catalog(tmp_path, case, edit, field, reason):
    path = _write_modified(tmp_path, "gpus.json", edit)
    with pytest.raises(ConfigError) as info:
        load_gpu_catalog(path)
    err = info.value
    assert err.field == field and err.source == str(path)
    assert "bad_gpus.json" in str(err) and f"'{field}'" in str(err)
    assert reason in err.reason


@pytest.mark.parametrize("case, edit, field, reason", MODEL_CASES,
                         ids=[c[0] for c in MODEL_CASES])
def test_bad_model_catalog(tmp_path, case, edit, field, reason):
    # Indices used above: 0 resnet18, 1 resnet50, 2 transformer, 5 a3c, 11 llama2-7b, 13 llama2-70b.
    assert [m["name"] for m in packaged_json("models.json")["models"]][11] == "llama2-7b"
    path = _write_modified(tmp_path, "models.json", edit)
    with pytest.raises(ConfigError) as info:
        load_model_catalog(path)
    err = info.value
    assert err.field == field and "bad_models.json" in str(err) and f"'{field}'" in str(err)
    assert reason in err.reason


@pytest.mark.parametrize("template, reason, line", [
    ("", "empty", None),
    ("  \n\n", "empty", None),
    ('{"KEY": [\n  {"name": "K80",,}\n]}', "invalid JSON", 2),
    ("KEY:\n  - name: K80\n", "invalid JSON", 1),
    ('[{"name": "K80"}]', "JSON object", None),
    ('{"KEY": []}', "non-empty list", None),
    ('{"KEY": {"name": "K80"}}', "non-empty list", None),
    ('{"_about": "no rows"}', "non-empty list", None),
    ('{"KEY": [], "extra": []}', "unknown top-level key", None),
])
@pytest.mark.parametrize("load, key", [(load_gpu_catalog, "gpus"), (load_model_catalog, "models")])
def test_unparseable_files(tmp_path, template, reason, line, load, key):
    path = tmp_path / "broken.json"
    path.write_text(template.replace("KEY", key))
    with pytest.raises(ConfigError) as info:
        load(path)
    assert "broken.json" in str(info.value)
    assert reason in info.value.reason
    assert info.value.line == line


def test_missing_file(tmp_path):
    with pytest.raises(ConfigError, match="nope.json"):
        load_gpu_catalog(tmp_path / "nope.json")


# ---------------------------------------------------------------- models of one's own
# (the fixture own_models and LLAMA3_8B: tests/conftest.py)
def test_models_of_ones_own_join_the_catalog_in_use(own_models):
    """``use_model_files``: the file's models are looked up, loaded from a trace, planned and
    simulated like the packaged ones; the packaged ones stay; the processes started after
    inherit them (HSCHED_MODELS)."""
    import os
    import subprocess
    import sys

    from hsched_env.catalog import MODELS_ENV, model_files_in_use, use_model_files
    from hsched_env.cluster import get_cluster
    from hsched_env.simulator import SimConfig, Simulator
    from hsched_env.workloads import load_workload
    from lp_baseline.policy import make_policy
    path, trace = own_models
    sia = get_cluster("sia-64")
    with pytest.raises(ConfigError, match="unknown model 'llama3-8b'"):
        load_workload(f"csv:path={trace}", sia)
    assert use_model_files(path) == (str(path.resolve()),)
    assert model_files_in_use() == os.environ[MODELS_ENV] == str(path.resolve())
    mine = get_model("Llama3_8B")
    assert mine.kv_heads == 8 and mine.name in model_catalog()
    assert get_model("resnet50").name == "resnet50"                 # the packaged ones stay
    jobs = load_workload(f"csv:path={trace}", sia)
    result = Simulator(sia, jobs, make_policy("heterosched-lp"), SimConfig()).run()
    assert result.metrics()["jobs_completed"] == 2
    assert use_model_files(path) == (str(path.resolve()),)         # given twice: once
    child = subprocess.run([sys.executable, "-c", "from hsched_env.catalog import get_model; "
                            "print(get_model('llama3-8b').display)"],
                           capture_output=True, text=True, env=dict(os.environ))
    assert child.returncode == 0 and child.stdout.strip() == "Llama-3 8B", child.stderr


def test_a_model_file_that_is_bad_or_renames_a_model_is_refused_and_not_used(own_models,
                                                                          tmp_path):
    from hsched_env.catalog import model_files_in_use, use_model_files
    path, _ = own_models
    taken = tmp_path / "taken.json"
    taken.write_text(json.dumps({"models": [dict(LLAMA3_8B, name="resnet50")]}),
                     encoding="utf-8")
    with pytest.raises(ConfigError, match=r"taken\.json, field 'models\[0\]\.name': model "
                                          r"'resnet50' of .*taken\.json is already in "
                                          r"the packaged catalog"):
        use_model_files(taken)
    variant = tmp_path / "variant.json"            # a batch variant's name: refused
    variant.write_text(json.dumps({"models": [dict(LLAMA3_8B, name="resnet50@bs32")]}),
                       encoding="utf-8")
    with pytest.raises(ConfigError, match=r"'resnet50@bs32' must not contain '@'"):
        use_model_files(variant)
    broken = tmp_path / "broken.json"
    broken.write_text(json.dumps({"models": [dict(LLAMA3_8B, layers=0)]}),
                      encoding="utf-8")
    with pytest.raises(ConfigError, match="layers"):
        use_model_files(broken)
    assert model_files_in_use() == ""
    use_model_files(path)
    twice = tmp_path / "twice.json"
    twice.write_text(json.dumps({"models": [dict(LLAMA3_8B, display="again")]}),
                     encoding="utf-8")
    with pytest.raises(ConfigError, match=r"llama3-8b.*is already in .*my_models\.json"):
        use_model_files(twice)
    assert model_files_in_use() == str(path.resolve())


def test_the_cli_takes_models_of_ones_own(own_models, capsys):
    from hsched_cli.main import main
    path, trace = own_models
    assert main(["simulate", "--cluster", "sia-64", "--workload", f"csv:path={trace}",
                 "--no-progress"]) == 2
    assert "unknown model 'llama3-8b'" in capsys.readouterr().err
    assert main(["simulate", "--cluster", "sia-64", "--workload", f"csv:path={trace}",
                 "--models", str(path), "--json", "--no-progress"]) == 0
    assert json.loads(capsys.readouterr().out)["jobs_completed"] == 2
    assert main(["candidates", "--model", "llama3-8b", "--cluster", "sia-64",
                 "--models", str(path)]) == 0
    assert "Llama-3 8B on sia-64" in capsys.readouterr().out
    assert main(["models", "--models", str(path / "nope.json")]) == 2
    err = capsys.readouterr().err
    assert "nope.json" in err and "field '--models'" in err      # names the flag


def test_a_model_of_ones_own_with_a_gavel_job_type(own_models, tmp_path, monkeypatch):
    """A Gavel job type of one's own reads the user's model from traces once the file is in
    use (the type index was cached from before); one that is a packaged model's is refused
    (it took the traces' ResNet-50 jobs over silently); one file spelt two ways is used
    once."""
    from hsched_env.catalog import model_files_in_use, use_model_files
    from hsched_env.workloads import gavel_job_type_to_model
    assert gavel_job_type_to_model("ResNet-50 (batch size 16)") == ("resnet50", 16)
    mine = tmp_path / "mine.json"
    mine.write_text(json.dumps({"models": [dict(LLAMA3_8B, name="my-lm",
                                                gavel_job_type="MyLM (batch size 8)")]}),
                    encoding="utf-8")
    use_model_files(mine)
    assert gavel_job_type_to_model("MyLM (batch size 4)") == ("my-lm", 4)
    assert gavel_job_type_to_model("ResNet-50 (batch size 16)") == ("resnet50", 16)
    thief = tmp_path / "thief.json"
    thief.write_text(json.dumps({"models": [dict(LLAMA3_8B, name="not-resnet",
                                                 gavel_job_type="ResNet-50 (batch size 64)")]}),
                     encoding="utf-8")
    with pytest.raises(ConfigError, match=r"Gavel job type 'ResNet-50 \(batch size 64\)' "
                                          r"already reads model 'resnet50' \(in the packaged"):
        use_model_files(thief)
    monkeypatch.chdir(tmp_path)
    assert use_model_files(["mine.json", f"./{mine.name}"]) == (str(mine.resolve()),)
    assert model_files_in_use() == str(mine.resolve())
