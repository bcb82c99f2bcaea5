"""Print the cost model's figures against every anchor and every comparable public
measurement, calibration and held-out alike.

Usage: python scripts/validate.py [--markdown] [--anchors-only]

Three tables: the anchors (A1, A2, Gavel's A8), every compared row of
``scripts/data/measured_throughput.csv`` (``scripts/measured.py`` says which rows are compared,
and which fit the half-precision factors: every other row is held out), and the cross-type
ratios of rows measured the same way on two GPU types. The same figures are asserted in
tests/test_validation.py; docs/cost_model.md shows this output.
"""

from __future__ import annotations

from calibrate import (A2_GPUS, A2_TOKENS_PER_S_PER_GPU, FP32_CALIBRATION_BATCHES,
                       GAVEL_TYPES, LLAMA1_65B, a100_cluster, analytic_single_gpu_steps,
                       gavel_variant, tokens_per_gpu_at)

import argparse
import sys

import numpy as np
from tqdm import tqdm

import measured
from hsched_env.catalog import get_model
from hsched_env.text import format_table, markdown_table
from hsched_env.costmodel import DEFAULT_CALIBRATION as CAL
from hsched_env.planner import plan
from hsched_env.throughput import get_throughput_source


def anchor_rows() -> list[list[str]]:
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
    return rows


def measured_rows(progress: bool = True) -> list[dict]:
    """Every compared CSV row with the model's figures and their errors: ``pred`` under the
    row's own strategy (``measured.predict_stated``: the cost model's accuracy), ``best`` the
    planner's fastest strategy on the same GPUs (``measured.predict``)."""
    rows = [r for r in measured.load_rows() if r.compared]
    out = []
    for r in tqdm(rows, desc="measured rows", disable=not progress, leave=False):
        pred, fits = measured.predict_stated(r, CAL)
        best = measured.predict(r, CAL)
        out.append({"row": r, "pred": pred, "error": pred / r.value - 1, "fits": fits,
                    "strategy": measured.stated_strategy(r), "best": best,
                    "error_best": best / r.value - 1 if best else float("nan")})
    return out


def ratio_rows(results: list[dict], key: str = "pred") -> list[dict]:
    """Cross-type ratios: measured and predicted (``key``: ``"pred"`` under the rows' own
    strategies, ``"best"`` the planner's), faster type first by measurement."""
    by_id = {x["row"].id: x for x in results}
    out = []
    for a, b in measured.ratio_pairs([x["row"] for x in results]):
        pa, pb = by_id[a.id][key], by_id[b.id][key]
        meas = a.value / b.value
        pred = pa / pb if pb > 0 else float("nan")
        roles = {a.role, b.role}
        role = ("uses a fit row" if roles - {"held out"} else
                "held out, fit's table" if a.fit_source else "held out, independent")
        out.append({"pair": f"{a['gpu']}/{b['gpu']}", "a": a, "b": b, "measured": meas,
                    "pred": pred, "error": pred / meas - 1, "role": role})
    return out


def _row_stats(errs: np.ndarray) -> str:
    errs = errs[np.isfinite(errs)]
    return (f"{errs.size} rows, median |error| {np.median(np.abs(errs)):.1%}, within ±15%: "
            f"{np.mean(np.abs(errs) <= 0.15):.0%}, worst {errs[np.argmax(np.abs(errs))]:+.0%}")


def summary(results: list[dict], ratios: list[dict]) -> list[str]:
    lines = []
    for role in ("fit", "fit-adjacent", "held out"):
        mine = [x for x in results if x["row"].role == role]
        if mine:
            lines.append(f"{role}, stated strategy: "
                         + _row_stats(np.array([x["error"] for x in mine])))
            lines.append(f"{role}, planner's best: "
                         + _row_stats(np.array([x["error_best"] for x in mine])))
    held = [x for x in results if x["row"].role == "held out"]
    for fam in ("transformer", "CNN"):
        errs = np.array([x["error"] for x in held if measured.family(x["row"]) == fam])
        if errs.size:
            lines.append(f"held out, stated strategy, every {fam} row: " + _row_stats(errs))
    for fam, source in sorted({(measured.family(x["row"]), x["row"]["source"]) for x in held},
                              key=lambda k: (k[0] != "transformer", k[1])):
        errs = np.array([x["error"] for x in held if x["row"]["source"] == source
                         and measured.family(x["row"]) == fam])
        lines.append(f"held out, stated strategy, {fam}, {source}: " + _row_stats(errs))
    for fam, pair in sorted({(_ratio_kind(x), x["pair"]) for x in ratios},
                            key=lambda k: (k[0] != "transformer", k[0], k[1])):
        for role in ("held out, fit's table", "held out, independent"):
            errs = np.array([x["error"] for x in ratios if x["pair"] == pair
                             and _ratio_kind(x) == fam
                             and x["role"] == role and np.isfinite(x["error"])])
            if errs.size:
                lines.append(f"ratio {pair}, {fam} ({role}): {errs.size} pairs, median |error| "
                             f"{np.median(np.abs(errs)):.1%}, within ±10%: "
                             f"{np.mean(np.abs(errs) <= 0.10):.0%}")
    return lines


def _ratio_kind(ratio: dict) -> str:
    """How a ratio pair is summarised: transformers together, CNN pairs by precision (mixed
    precision apart from fp32 / TF32)."""
    a = ratio["a"]
    if measured.family(a) == "transformer":
        return "transformer"
    return "CNN AMP" if measured._half(a["precision"]) else "CNN fp32/TF32"


def _strategy_text(st: measured.StatedStrategy) -> str:
    parts = [f"dp {st.dp}"] + ([f"tp {st.tp}"] if st.tp > 1 else []) + [
        f"m {st.microbatches}", "ZeRO-3" if st.zero == 3 else "DDP",
        "recompute" if st.recompute else "no recompute"]
    return " · ".join(parts)


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--markdown", action="store_true", help="markdown tables")
    ap.add_argument("--anchors-only", action="store_true", help="skip the measured rows")
    args = ap.parse_args(argv)
    table = _markdown if args.markdown else format_table
    print(table(["anchor", "role", "model", "published", "error"], anchor_rows()))
    if args.anchors_only:
        return
    results = measured_rows(progress=sys.stderr.isatty())
    print()
    print(table(["id", "GPUs", "model", "seq", "metric", "measured", "stated strategy",
                 "model", "error", "planner's best", "error", "role"],
                [[x["row"].id, f"{x['row']['num_gpus']} × {x['row']['gpu']}",
                  x["row"]["model"], x["row"]["seq_len"],
                  "tok/s/GPU" if x["row"]["metric"] == "tokens_per_s_per_gpu" else "samples/s/GPU",
                  f"{x['row'].value:.5g}",
                  _strategy_text(x["strategy"]) + ("" if x["fits"] else " (over the memory model)"),
                  f"{x['pred']:.5g}", f"{x['error']:+.0%}",
                  f"{x['best']:.5g}" if x["best"] else "nothing fits",
                  f"{x['error_best']:+.0%}" if x["best"] else "–", x["row"].role]
                 for x in results]))
    ratios = ratio_rows(results)
    print()
    print(table(["ratio", "rows", "model", "GPUs", "measured", "model", "error", "role"],
                [[x["pair"], f"{x['a'].id} / {x['b'].id}", x["a"]["model"],
                  x["a"]["num_gpus"], f"{x['measured']:.2f}",
                  f"{x['pred']:.2f}" if np.isfinite(x["pred"]) else "–",
                  f"{x['error']:+.0%}" if np.isfinite(x["error"]) else "–", x["role"]]
                 for x in ratios]))
    print()
    for line in summary(results, ratios):
        print(line)
    skipped = [r for r in measured.load_rows() if not r.compared]
    reasons: dict[str, int] = {}
    for r in skipped:
        key = r.reason.split(" (")[0].split(":")[0]
        reasons[key] = reasons.get(key, 0) + 1
    print(f"not compared: {len(skipped)} rows (" + ", ".join(
        f"{k}: {v}" for k, v in sorted(reasons.items(), key=lambda kv: -kv[1])) + ")")


def _markdown(headers, rows) -> str:
    return markdown_table(headers, rows, text_cols=headers)      # every column left-aligned


if __name__ == "__main__":
    main()
