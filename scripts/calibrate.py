"""Fit the cost model's efficiency factors to their calibration anchors and print them.

Usage: python scripts/calibrate.py

What is fitted to what (and what is held out for validation, see tests/test_validation.py):

* ``eta_fp32_by_arch`` (kepler, pascal, volta), the kernel launch cost, the memory-traffic
  factor and the overlap exponent: least squares in log space on Gavel's measured single-GPU
  throughputs (anchor A8) of ResNet-18 (batch 16–256), LM (batch 5–80) and CycleGAN on K80,
  P100 and V100 (``FP32_CALIBRATION_JOBS``). A3C and Recommendation are left out of the fit: in
  Gavel's data they are bound by the host (A3C's environments; Recommendation runs slower on a
  V100 than on a K80), which no FLOP-based model captures. ResNet-50 and Transformer are held
  out.
* ``eta_tf32``: bisection so that ResNet-50 in TF32 on one A100-80GB (NVIDIA's PyTorch table,
  ``measured.TF32_FIT_ROWS``) is reproduced; every other TF32 / Ampere-fp32 CNN row is held out.
* ``eta_llm`` (NVLink Ampere), Hopper's and Volta's matmul efficiency and the elementwise
  traffic (``fit_half``): least squares in log space on the fit rows of public measured
  throughput (``measured.FIT_ROWS``, each under the strategy it ran) and anchor A2, LLaMA-1 65B
  (s = 2048, 4M-token batches) on 2048 A100-80GB at 380 tokens/s/GPU (LLaMA paper). Llama-2
  7B/13B/70B (anchor A1) are held out.

The printed values are the defaults of ``hsched_env.costmodel.Calibration``; the test suite
checks that the shipped defaults still reproduce these anchors.
"""

from __future__ import annotations

import argparse
import dataclasses

import numpy as np
from scipy.optimize import least_squares

from hsched_env.catalog import ModelSpec, get_model, model_variant
from hsched_env.cluster import cluster_from_dict
from hsched_env.costmodel import DEFAULT_CALIBRATION, Calibration
from hsched_env.planner import PlannerConfig, plan
from hsched_env.throughput import get_throughput_source

FP32_CALIBRATION_JOBS = ("resnet18", "cyclegan", "lm")
# Gavel measured the calibration jobs at several batch sizes; the sweep separates per-iteration
# host cost from per-sample GPU cost.
FP32_CALIBRATION_BATCHES = {"resnet18": (16, 32, 64, 128, 256), "lm": (5, 10, 20, 40, 80),
                            "cyclegan": (None,)}
FP32_HELD_OUT_JOBS = ("resnet50", "transformer")
GAVEL_TYPES = ("K80", "P100", "V100-16GB")
ARCH = {"K80": "kepler", "P100": "pascal", "V100-16GB": "volta"}

# Anchor A2: LLaMA-1 65B (LLaMA paper): 80 layers, h 8192, FFN 22016 (SwiGLU), 64 heads,
# s 2048, V 32000, 4M-token batches = 2048 sequences, on 2048 A100-80GB, 380 tokens/s/GPU.
LLAMA1_65B = ModelSpec(
    name="llama1-65b", display="LLaMA-1 65B (calibration anchor A2)", family="transformer",
    params=65.2e9, layers=80, hidden=8192, ffn=22016, heads=64, kv_heads=64, seq_len=2048,
    vocab=32000, swiglu=True, flash_attention=True, precision="bf16", global_batch=2048,
    sample="one 2048-token sequence", tokens_per_sample=2048, fwd_flops_per_sample=None,
    act_bytes_per_sample=None, bytes_per_param_states=16.0, parallelism=("dp", "tp", "pp"),
    gavel_job_type=None, batch_per_replica=False, kernels_per_iteration=0, source="LLaMA paper (Touvron et al. 2023), Table 2 and §2.4")
A2_TOKENS_PER_S_PER_GPU = 380.0
A2_GPUS = 2048


def single_gpu_cluster():
    return cluster_from_dict({"name": "one-of-each", "nodes": [
        {"gpu_type": t, "gpus_per_node": 1, "count": 1} for t in GAVEL_TYPES]})


def gavel_variant(model: str, batch: int | None) -> ModelSpec:
    """Catalog model at one of Gavel's batch sizes (``None``: the catalog's own)."""
    return model_variant(model, batch)


def analytic_single_gpu_steps(model: str | ModelSpec, calib: Calibration) -> dict[str, float]:
    """Analytic steps/s of ``model`` on one K80, P100 and V100."""
    spec = get_model(model) if isinstance(model, str) else model
    table = plan(spec, single_gpu_cluster(),
                 config=PlannerConfig(mixed=False, prune_dominated=False, calibration=calib))
    out = {}
    for i in range(len(table)):
        (gpu, n), = table.gpus_dict(i).items()
        if n == 1:
            out[gpu] = float(table.samples_per_s[i]) / spec.global_batch
    return out


def a100_cluster(nodes: int):
    # LLaMA/Llama-2 clusters: 8 × A100-80GB per node, 8 × 200 Gb/s = 200 GB/s per node.
    return cluster_from_dict({"name": f"a100-80gb-{8 * nodes}", "nodes": [
        {"gpu_type": "A100-80GB", "gpus_per_node": 8, "count": nodes,
         "inter_node_bw_gbps": 200.0}]})


def tokens_per_gpu_at(model, gpus: int, calib: Calibration) -> float:
    """Best tokens/s/GPU of ``model`` using exactly ``gpus`` A100-80GB."""
    table = plan(model, a100_cluster(gpus // 8),
                 config=PlannerConfig(mixed=False, prune_dominated=False, calibration=calib))
    rows = np.flatnonzero(table.num_gpus == gpus)
    return float(table.tokens_per_s_per_gpu[rows].max()) if rows.size else 0.0


def fit_fp32(calib: Calibration) -> dict[str, float]:
    gavel = get_throughput_source("gavel")
    jobs = [gavel_variant(j, b) for j in FP32_CALIBRATION_JOBS
            for b in FP32_CALIBRATION_BATCHES[j]]
    measured = {(m.gavel_job_type, t): gavel.steps_per_s(m.gavel_job_type, t, 1)
                for m in jobs for t in GAVEL_TYPES}
    archs = ["kepler", "pascal", "volta"]

    def residuals(x):
        table = dict(calib.eta_fp32_by_arch, **dict(zip(archs, x[:3])))
        c = dataclasses.replace(calib, eta_fp32_by_arch=table, kernel_launch_s=x[3] * 1e-6,
                                mem_traffic_factor=x[4], overlap_gamma=x[5])
        res = []
        for m in jobs:
            pred = analytic_single_gpu_steps(m, c)
            res += [np.log(pred.get(t, 1e-9) / measured[(m.gavel_job_type, t)])
                    for t in GAVEL_TYPES]
        return res

    # Prior: fp32 cuDNN/cuBLAS kernels reach at most ~80% of the peak.
    # Pollux's overlap exponent γ lies in [1, 10].
    bounds = ([0.05] * 3 + [0.0, 0.0, 1.0], [0.80] * 3 + [100.0, 50.0, 10.0])
    fits = [least_squares(residuals, x0=[0.3, 0.5, 0.5, us, k, 3.0], bounds=bounds)
            for us in (5.0, 20.0, 50.0) for k in (1.0, 5.0, 15.0)]
    fit = min(fits, key=lambda f: f.cost)
    out = dict(zip(archs, (round(float(v), 3) for v in fit.x[:3])))
    out["kernel_launch_us"] = round(float(fit.x[3]), 2)
    out["mem_traffic_factor"] = round(float(fit.x[4]), 2)
    out["overlap_gamma"] = round(float(fit.x[5]), 2)
    out["rms_log_error"] = round(float(np.sqrt(np.mean(np.square(fit.fun)))), 3)
    return out


def _bisect(too_low, lo: float, hi: float, steps: int) -> float:
    """The midpoint of ``[lo, hi]`` after ``steps`` halvings, keeping the upper half where
    ``too_low(mid)`` (an increasing quantity below its target)."""
    for _ in range(steps):
        mid = (lo + hi) / 2
        lo, hi = (mid, hi) if too_low(mid) else (lo, mid)
    return (lo + hi) / 2


def fit_llm(calib: Calibration) -> float:
    return round(_bisect(
        lambda eta: tokens_per_gpu_at(LLAMA1_65B, A2_GPUS, dataclasses.replace(
            calib, eta_llm=eta)) < A2_TOKENS_PER_S_PER_GPU, 0.2, 0.9, 30), 3)


HALF_FACTORS = ("eta_llm", "eta_hopper", "eta_volta", "llm_elementwise_traffic")


def half_calibration(calib: Calibration, x) -> Calibration:
    """``calib`` with the half-precision factors ``x`` (in ``HALF_FACTORS`` order)."""
    return dataclasses.replace(
        calib, eta_llm=float(x[0]),
        eta_llm_by_arch={**calib.eta_llm_by_arch, "hopper": float(x[1]), "volta": float(x[2])},
        llm_elementwise_traffic=float(x[3]))


def fit_half(calib: Calibration, progress: bool = True) -> dict[str, float]:
    """The half-precision factors: matmul efficiency of NVLink Ampere (``eta_llm``), Hopper
    and Volta parts, and the elementwise HBM traffic of a transformer layer, by least squares
    in log space on ``measured.FIT_ROWS`` (each priced under the strategy it ran,
    ``measured.predict_stated``) and anchor A2 (the planner's best strategy: the paper does
    not give its layout). Priors: efficiency in [0.3, 0.9];
    traffic ≥ 0, starting from a count of a layer's kernels (about 90 bytes per token and
    hidden unit per byte, forward + backward)."""
    import measured
    rows = [r for r in measured.load_rows() if r.id in measured.FIT_ROWS]
    if len(rows) != len(measured.FIT_ROWS) or not all(r.compared for r in rows):
        raise SystemExit("a FIT_ROWS id is missing or not comparable in the CSV")

    def residuals(x):
        c = half_calibration(calib, x)
        res = [np.log(max(measured.predict_stated(r, c)[0], 1e-9) / r.value) for r in rows]
        res.append(np.log(tokens_per_gpu_at(LLAMA1_65B, A2_GPUS, c) / A2_TOKENS_PER_S_PER_GPU))
        if progress:
            print(f"  {np.round(x, 4).tolist()}: rms log error "
                  f"{np.sqrt(np.mean(np.square(res))):.4f}", flush=True)
        return res

    fit = least_squares(residuals, x0=[0.68, 0.5, 0.6, 90.0],
                        bounds=([0.3, 0.3, 0.3, 0.0], [0.9, 0.9, 0.9, 1000.0]),
                        x_scale=[0.1, 0.1, 0.1, 30.0], diff_step=1e-3)
    out = dict(zip(HALF_FACTORS, (round(float(v), 4) for v in fit.x)))
    out["rms_log_error"] = round(float(np.sqrt(np.mean(np.square(fit.fun)))), 4)
    return out


def fit_tf32(calib: Calibration) -> dict[str, float]:
    """``eta_tf32``: bisection (in log space) so that ``measured.TF32_FIT_ROWS`` — ResNet-50
    on one A100-80GB in TF32, NVIDIA's PyTorch table — is reproduced under the strategy it ran.
    The rest of the model (memory traffic, launch cost) is the fp32 fit's."""
    import measured
    rows = [r for r in measured.load_rows() if r.id in measured.TF32_FIT_ROWS]
    if len(rows) != len(measured.TF32_FIT_ROWS) or not all(r.compared for r in rows):
        raise SystemExit("a TF32_FIT_ROWS id is missing or not comparable in the CSV")

    def log_error(eta):
        c = dataclasses.replace(calib, eta_tf32=float(eta))
        return float(np.mean([np.log(measured.predict_stated(r, c)[0] / r.value)
                              for r in rows]))

    lo, hi = 0.02, 1.0
    if log_error(lo) > 0 or log_error(hi) < 0:
        raise SystemExit("eta_tf32 outside [0.02, 1.0]: the rest of the model cannot reach "
                         "the TF32 fit row")
    return {"eta_tf32": round(_bisect(lambda eta: log_error(eta) < 0, lo, hi, 60), 4)}


def main(argv=None) -> None:
    argparse.ArgumentParser(           # no options: --help shows the docstring but its usage line
        description="\n\n".join(p for p in __doc__.split("\n\n") if not p.startswith("Usage:")),
        formatter_class=argparse.RawDescriptionHelpFormatter).parse_args(argv)
    calib = DEFAULT_CALIBRATION
    fp32 = fit_fp32(calib)
    print("eta_fp32_by_arch and kernel launch cost (fitted on ResNet-18, CycleGAN, LM):", fp32)
    half = fit_half(calib)
    print("half-precision factors (fitted on measured.FIT_ROWS and anchor A2):", half)
    print("TF32 convolution efficiency (fitted on measured.TF32_FIT_ROWS):", fit_tf32(calib))
    print("shipped defaults:", calib.eta_fp32_by_arch, "eta_llm =", calib.eta_llm,
          "eta_llm_by_arch =", calib.eta_llm_by_arch,
          "llm_elementwise_traffic =", calib.llm_elementwise_traffic,
          "kernel_launch_us =", calib.kernel_launch_s * 1e6,
          "mem_traffic_factor =", calib.mem_traffic_factor,
          "overlap_gamma =", calib.overlap_gamma, "eta_tf32 =", calib.eta_tf32)


if __name__ == "__main__":
    main()
