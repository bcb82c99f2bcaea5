"""Print the cost model's figures against every anchor, calibration and held-out alike.

Usage: python scripts/validate.py

The same anchors are asserted in tests/test_validation.py; this prints the numbers behind them
(the table in docs/cost_model.md comes from here).
"""

from __future__ import annotations

from calibrate import (A2_GPUS, A2_TOKENS_PER_S_PER_GPU, FP32_CALIBRATION_BATCHES,
                       GAVEL_TYPES, LLAMA1_65B, a100_cluster, analytic_single_gpu_steps,
                       gavel_variant, tokens_per_gpu_at)

from hsched_env.catalog import get_model
from hsched_env.text import format_table
from hsched_env.costmodel import DEFAULT_CALIBRATION as CAL
from hsched_env.planner import plan
from hsched_env.throughput import get_throughput_source


def main() -> None:
    rows = []
    got = tokens_per_gpu_at(LLAMA1_65B, A2_GPUS, CAL)
    rows.append(["A2 LLaMA-1 65B, 2048 A100-80GB, tok/s/GPU", "calibration",
                 f"{got:.0f}", f"{A2_TOKENS_PER_S_PER_GPU:.0f}",
                 f"{got / A2_TOKENS_PER_S_PER_GPU - 1:+.1%}"])
    for nodes in (256, 64):
        for model, target in (("llama2-7b", 3000), ("llama2-13b", 1500), ("llama2-70b", 320)):
            best = plan(model, a100_cluster(nodes)).to_records()[0]
            rows.append([f"A1 {model}, top candidate on {8 * nodes} A100-80GB, tok/s/GPU",
                         "held out", f"{best['tokens_per_s_per_gpu']:.0f}", str(target),
                         f"{best['tokens_per_s_per_gpu'] / target - 1:+.1%}"])
    gavel = get_throughput_source("gavel")
    for model in ("resnet50", "transformer"):
        pred = analytic_single_gpu_steps(model, CAL)
        job = get_model(model).gavel_job_type
        for slow in ("K80", "P100"):
            meas = gavel.steps_per_s(job, "V100-16GB", 1) / gavel.steps_per_s(job, slow, 1)
            ratio = pred["V100-16GB"] / pred[slow]
            rows.append([f"A8 {model} V100/{slow} speed ratio", "held out", f"{ratio:.2f}",
                         f"{meas:.2f}", f"{ratio / meas - 1:+.1%}"])
    for model, batches in FP32_CALIBRATION_BATCHES.items():
        for b in batches:
            spec = gavel_variant(model, b)
            pred = analytic_single_gpu_steps(spec, CAL)
            for t in GAVEL_TYPES:
                meas = gavel.steps_per_s(spec.gavel_job_type, t, 1)
                rows.append([f"A8 {spec.gavel_job_type} on {t}, steps/s", "calibration",
                             f"{pred[t]:.2f}", f"{meas:.2f}", f"{pred[t] / meas - 1:+.1%}"])
    print(format_table(["anchor", "role", "model", "published", "error"], rows))


if __name__ == "__main__":
    main()
