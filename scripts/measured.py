"""Public measured training throughput (``scripts/data/measured_throughput.csv``) against the
cost model: which rows are compared, how each row becomes a model and a cluster, which rows
FIT the half-precision factors (``scripts/calibrate.py``) and which are HELD OUT.

A row is compared when it is half-precision (bf16/fp16/AMP) training of a transformer whose
shape is known (the Llama-2 catalog models, BERT-large, MPT-1B…70B from llm-foundry's YAMLs,
Megatron-LM's 8B GPT-2), or ResNet-50 / ResNet-18 (CIFAR-10) training (the catalog's models) in
half precision, fp32 or TF32 (an "fp32" CNN on Ampere or newer may run its convolutions in TF32 — cuDNN in PyTorch and
TensorFlow allows it unless told otherwise — and the cost model prices it at the faster of its
TF32 and fp32 rates: ``Calibration.achievable_flops``), on a GPU type of the catalog, on 1–128
GPUs; the prediction is the
model on exactly that many GPUs of that type (8 per node; NIC 200 GB/s per node for A100 and
V100 systems, 400 GB/s for H100 systems — the sources' DGX-class nodes), with the row's global
batch and sequence length, two ways:

* ``predict_stated``: the strategy the source ran (``stated_strategy``: data-parallel and
  tensor-parallel degree, micro-batch size, activation checkpointing, FSDP/ZeRO-3 sharding) —
  the cost model's accuracy, which ``scripts/calibrate.py`` fits and the held-out figures
  measure;
* ``predict``: the planner's fastest strategy on those GPUs — what the scheduler believes the
  job can reach there (measured runs are not always the fastest configuration).

Transformer rows in fp32 or TF32, H100 PCIe rows (no such catalog type), FP8 rows and rows the
source's notes flag as unreliable are listed as not compared, with the reason.

``FIT_ROWS`` (half precision) and ``TF32_FIT_ROWS`` are the only rows the calibration sees;
every other compared row is held out.
"""

from __future__ import annotations

import argparse
import csv
import dataclasses
import sys
from pathlib import Path

import numpy as np

from hsched_env.catalog import ModelSpec, get_gpu, get_model
from hsched_env.cluster import cluster_from_dict
from hsched_env.errors import UnknownNameError
from hsched_env.costmodel import (DEFAULT_CALIBRATION, KIND_HOMO, Calibration, model_shape,
                                  pool_arrays, strategy_cost)
from hsched_env.planner import PlannerConfig, plan

CSV_PATH = Path(__file__).resolve().parent / "data" / "measured_throughput.csv"

#: The rows the half-precision factors are fitted to (``scripts/calibrate.py``): per GPU
#: architecture one model size at its most common setting, plus a second size (LLMs) or
#: sequence length (BERT) for the size-dependent, bandwidth-bound share. Everything else
#: compared is held out.
FIT_ROWS = (
    "mosaic-022",              # MPT-7B, s 2048, 8 × A100-80GB
    "mosaic-025",              # MPT-1B, s 2048, 8 × A100-80GB
    "mosaic-013",              # MPT-7B, s 2048, 8 × H100
    "mosaic-016",              # MPT-1B, s 2048, 8 × H100
    "dle-pyt-bert-2022-002",   # BERT-large pretraining, s 128, 1 × A100-80GB
    "dle-pyt-bert-2022-006",   # same, s 512
    "dle-pyt-bert-2022-010",   # BERT-large pretraining, s 128, 1 × V100-32GB
    "dle-pyt-bert-2022-014",   # same, s 512
)

#: The row ``Calibration.eta_tf32`` is fitted to (``scripts/calibrate.py``, ``fit_tf32``):
#: ResNet-50 in TF32 on one A100-80GB, NVIDIA's PyTorch table. Every other TF32 row, and every
#: "fp32" CNN row on Ampere or newer (TF32 convolutions by default), is held out.
TF32_FIT_ROWS = ("dle-pyt-rn50-001",)
#: Every row some factor is fitted to.
ALL_FIT_ROWS = FIT_ROWS + TF32_FIT_ROWS

#: Held-out rows that took part in a trial of the model's structure (a separate attention
#: efficiency, fitted with this row and rejected): not counted as held-out evidence.
STRUCTURE_TRIAL_ROWS = ("mosaic-021",)

# Model shapes: MPT from llm-foundry's pretrain YAMLs (n_layers, d_model, n_heads; GELU MLP
# with expansion 4, vocabulary 50368, FlashAttention), as the CSV's notes quote them.
MPT_SHAPES = {"mpt-1b": (24, 2048, 16), "mpt-3b": (32, 2560, 20), "mpt-7b": (32, 4096, 32),
              "mpt-13b": (40, 5120, 40), "mpt-30b": (48, 7168, 56), "mpt-70b": (80, 8192, 64)}
MPT_VOCAB = 50368
# Megatron-LM's README scaling runs (the rows' notes, images/cases.png): the 8B case is 42
# layers, hidden 4096, 32 heads, vocabulary 51200 (8.67B parameters; not the paper's 8.3B
# shape); the smaller cases' shapes are not quoted by the source, so their rows are not compared.
MEGATRON_SHAPES = {"megatron-gpt2-8b": (42, 4096, 32)}
MEGATRON_VOCAB = 51200
CATALOG_MODELS = ("llama2-7b", "llama2-13b", "llama2-70b", "bert-large")
#: Catalog CNNs compared (data parallel, one replica per GPU; the rows' batch is per GPU).
CNN_MODELS = ("resnet50", "resnet18")


@dataclasses.dataclass(frozen=True)
class Row:
    """One measured row: its CSV fields and whether / how it is compared."""

    fields: dict
    compared: bool
    reason: str = ""                # why not compared

    def __getitem__(self, key):
        return self.fields[key]

    @property
    def id(self) -> str:
        return self.fields["id"]

    @property
    def role(self) -> str:
        """``"fit"`` (a ``FIT_ROWS`` row), ``"fit-adjacent"`` (not fitted, but the same table,
        model, sequence length and GPU type as a fit row — e.g. the 8-GPU copy of a fitted
        1-GPU row — or a structure-trial row: not independent evidence, so left out of the
        held-out statistics) or ``"held out"``."""
        if self.id in ALL_FIT_ROWS:
            return "fit"
        if self.id in STRUCTURE_TRIAL_ROWS or self._key() in _fit_keys():
            return "fit-adjacent"
        return "held out"

    def _key(self) -> tuple:
        f = self.fields
        return (f["source"], f["model"], f["seq_len"], f["gpu"], f["precision"])

    @property
    def fit_source(self) -> bool:
        """Whether the row comes from a source table the fit used (same software stack)."""
        return self.fields["source"] in {k[0] for k in _fit_keys()}

    @property
    def value(self) -> float:
        return float(self.fields["value"])


def _half(precision: str) -> bool:
    p = precision.lower()
    return not any(t in p for t in ("fp32", "tf32", "fp8")) and any(
        t in p for t in ("bf16", "fp16", "amp", "mixed"))


def family(row: "Row") -> str:
    """``"CNN"`` or ``"transformer"``: the two kinds of compared rows, reported apart."""
    return "CNN" if row["model"] in CNN_MODELS else "transformer"


def _skip_reason(f: dict) -> str:
    if f["metric"] not in ("tokens_per_s_per_gpu", "samples_per_s_per_gpu"):
        return f"metric {f['metric']}"
    p = f["precision"].lower()
    try:
        gpu = get_gpu(f["gpu"])
    except UnknownNameError:
        return f"GPU {f['gpu']} not in the catalog"
    if f["model"] in CNN_MODELS and not _half(p):
        if not p.startswith(("fp32", "tf32")):
            return f"precision {f['precision']}"
        if p.startswith("tf32") and gpu.tf32_tflops <= 0:
            return f"precision {f['precision']} on a GPU without TF32"
    elif not _half(p):
        return f"precision {f['precision']} (the catalog's half-precision models only)"
    if "pcie" in f["notes"].lower() and f["gpu"].startswith("H100"):
        return "H100 PCIe (the catalog has the SXM part only)"
    if "LOW QUALITY" in f["notes"]:
        return "flagged unreliable in the notes"
    name = f["model"]
    if (name not in MPT_SHAPES and name not in MEGATRON_SHAPES and name not in CATALOG_MODELS
            and name not in CNN_MODELS):
        return f"model {name}: shape not known to the comparison"
    if not (1 <= int(f["num_gpus"]) <= 128):
        return "more than 128 GPUs"
    if not f["global_batch"]:
        return "global batch not given"
    return ""


_FIT_KEYS: set | None = None


def _fit_keys() -> set:
    global _FIT_KEYS
    if _FIT_KEYS is None:
        with open(CSV_PATH, newline="") as fh:
            _FIT_KEYS = {(f["source"], f["model"], f["seq_len"], f["gpu"], f["precision"])
                         for f in csv.DictReader(fh) if f["id"] in ALL_FIT_ROWS}
    return _FIT_KEYS


def load_rows(path: Path = CSV_PATH) -> list[Row]:
    """Every CSV row, marked compared or not (with the reason)."""
    with open(path, newline="") as fh:
        out = []
        for f in csv.DictReader(fh):
            reason = _skip_reason(f)
            out.append(Row(f, not reason, reason))
    return out


def row_model(row: Row) -> ModelSpec:
    """The row's model at its sequence length and global batch (a CNN: at its batch per GPU,
    the catalog's per-replica convention, in fp16 for a half-precision row — mixed precision
    runs the convolutions in fp16 and keeps fp16 activations)."""
    f = row.fields
    if f["model"] in CNN_MODELS:
        n, batch = int(f["num_gpus"]), int(f["global_batch"])
        if batch % n:
            raise ValueError(f"{row.id}: global batch {batch} is not a whole batch per GPU "
                             f"on {n} GPUs")
        spec = get_model(f["model"])
        return dataclasses.replace(spec, global_batch=batch // n,
                                   precision="fp16" if _half(f["precision"]) else "fp32")
    name, seq, batch = f["model"], int(f["seq_len"]), int(f["global_batch"])
    if name in MPT_SHAPES or name in MEGATRON_SHAPES:
        layers, hidden, heads = MPT_SHAPES.get(name) or MEGATRON_SHAPES[name]
        vocab = MPT_VOCAB if name in MPT_SHAPES else MEGATRON_VOCAB
        precision = "bf16" if name in MPT_SHAPES else "fp16"
        return dataclasses.replace(
            get_model("gpt2-xl"), name=name, display=name, layers=layers, hidden=hidden,
            heads=heads, kv_heads=heads, ffn=4 * hidden, vocab=vocab, seq_len=seq,
            flash_attention=name in MPT_SHAPES, precision=precision, global_batch=batch,
            tokens_per_sample=seq, params=float(layers * 12 * hidden * hidden + vocab * hidden),
            sample=f"one {seq}-token sequence", source=f["source"])
    spec = get_model(name)
    return dataclasses.replace(spec, seq_len=seq, global_batch=batch,
                               tokens_per_sample=seq if spec.tokens_per_sample else 0)


def row_cluster(row: Row):
    n = int(row["num_gpus"])
    per = min(n, 8)
    if n % per:
        raise ValueError(f"{row.id}: {n} GPUs is not whole 8-GPU nodes")
    nic = 400.0 if row["gpu"].startswith("H1") else 200.0
    return cluster_from_dict({"name": f"{n}x{row['gpu']}", "nodes": [
        {"gpu_type": row["gpu"], "gpus_per_node": per, "count": n // per,
         "inter_node_bw_gbps": nic}]})


def predict(row: Row, calib: Calibration = DEFAULT_CALIBRATION) -> float:
    """The model's figure for the row, in the row's metric (0.0: nothing fits)."""
    n = int(row["num_gpus"])
    table = plan(row_model(row), row_cluster(row),
                 config=PlannerConfig(mixed=False, prune_dominated=False, calibration=calib))
    rows = np.flatnonzero(table.num_gpus == n)
    if not rows.size:
        return 0.0
    if row["metric"] == "tokens_per_s_per_gpu":
        return float(table.tokens_per_s_per_gpu[rows].max())
    return float(table.samples_per_s[rows].max()) / n


#: Sources whose rows do not state activation checkpointing but whose runs used it.
#: Megatron-LM's 2020 scaling runs: Shoeybi et al. 2019 (arXiv 1909.08053, section 5)
#: checkpoint activations after every transformer layer.
RECOMPUTE_SOURCES = ("megatron-2020",)


@dataclasses.dataclass(frozen=True)
class StatedStrategy:
    """The strategy a measured row ran, as the cost model prices it (tp innermost, no
    pipeline), and where each fact came from."""

    dp: int
    tp: int
    microbatches: int           # per replica per iteration (gradient accumulation steps)
    recompute: bool             # full activation checkpointing
    zero: int                   # 3 for FSDP FULL_SHARD / HSDP, else 0 (plain data parallelism)
    basis: str                  # how recompute was read


def stated_strategy(row: Row) -> StatedStrategy:
    """The row's strategy from its ``parallelism`` and ``micro_batch`` columns and its notes.

    Activation checkpointing: MosaicML's ``ActCkpt=True/False`` and IBM's "Full AC" / "No AC" /
    "Selective AC" (fms-fsdp checkpoints a fraction of the blocks: priced as none, which is
    optimistic by up to a third more compute); ``RECOMPUTE_SOURCES`` per their papers; every
    other row (DeepLearningExamples' and Lambda's BERT scripts, which do not checkpoint)
    without. HSDP (shard inside a node,
    replicate across) is priced as ZeRO-3 over all GPUs, which moves the same bytes per GPU
    and at most as much across nodes.

    Raises:
        ValueError: The row's micro-batch does not divide its per-replica batch.
    """
    f = row.fields
    n, par, notes = int(f["num_gpus"]), f["parallelism"], f["notes"]
    tp = 8 if "tensor MP=8" in par else 1
    dp = n // tp
    per_replica, micro = int(f["global_batch"]) // dp, int(f["micro_batch"])
    if micro < 1 or per_replica % micro or per_replica * dp != int(f["global_batch"]):
        raise ValueError(f"{row.id}: micro-batch {micro} does not divide the per-replica "
                         f"batch {f['global_batch']}/{dp}")
    if "ActCkpt=True" in notes or "Full AC" in notes:
        rc, basis = True, "stated"
    elif any(t in notes for t in ("ActCkpt=False", "No AC", "Selective AC")):
        rc, basis = False, "stated"
    elif f["source"] in RECOMPUTE_SOURCES:
        rc, basis = True, "source's paper"
    else:
        rc, basis = False, "not stated: the scripts' default (none)"
    zero = 3 if ("FSDP" in par or "HSDP" in par) else 0
    return StatedStrategy(dp=dp, tp=tp, microbatches=per_replica // micro, recompute=rc,
                          zero=zero, basis=basis)


def predict_stated(row: Row, calib: Calibration = DEFAULT_CALIBRATION) -> tuple[float, bool]:
    """The model's figure for the row under the row's own strategy (``stated_strategy``), in
    the row's metric, and whether the model's memory estimate fits it (the run did: a False
    says the memory model is pessimistic there; the time is priced all the same)."""
    st = stated_strategy(row)
    model, pool = row_model(row), row_cluster(row).pools[0]
    shape = model_shape(model, calib)
    hw = pool_arrays([get_gpu(pool.gpu_type)], [pool.intra_bw_gbps], [pool.inter_bw_gbps],
                     [pool.gpus_per_node], model, calib)
    one = np.ones(1, dtype=np.int64)
    cost = strategy_cost(shape, calib, hw, kind=np.full(1, KIND_HOMO), pa=0 * one, pb=0 * one,
                         dpa=st.dp * one, dpb=0 * one, tp=st.tp * one, ppa=one, ppb=0 * one,
                         m=st.microbatches * one, rc=np.full(1, st.recompute),
                         batch=model.global_batch,
                         per_replica_batch=model.batch_per_replica, zero_stages=(st.zero,))
    step = cost["step_time_s"][0] + (cost[f"zero{st.zero}_extra_s"][0] if st.zero >= 2 else 0.0)
    samples_per_s = cost["samples_per_iter"][0] / step
    fits = bool(cost["mem_a"][0, 0] <= hw.mem_bytes[0])
    n = int(row["num_gpus"])
    if row["metric"] == "tokens_per_s_per_gpu":
        return float(samples_per_s * model.tokens_per_sample / n), fits
    return float(samples_per_s / n), fits


def comparable_group(row: Row) -> str | None:
    """The row's ``cmp:`` group (rows of one table run the same way on several GPU types)."""
    notes = row["notes"]
    if not notes.startswith("cmp:"):
        return None
    return notes[4:].split(" ", 1)[0].rstrip(".")


def ratio_pairs(rows: list[Row]) -> list[tuple[Row, Row]]:
    """Pairs of compared rows of the same ``cmp:`` group on two GPU types (faster first by
    measurement): the cross-type ratios."""
    groups: dict[str, list[Row]] = {}
    for r in rows:
        g = comparable_group(r)
        if r.compared and g:
            groups.setdefault(g, []).append(r)
    out = []
    for members in groups.values():
        for i, a in enumerate(members):
            for b in members[i + 1:]:
                if a["gpu"] != b["gpu"] and a["num_gpus"] == b["num_gpus"]:
                    out.append((a, b) if a.value >= b.value else (b, a))
    return out


def main(argv=None) -> int:
    """A module, not a report: ``--help`` says what it holds and which scripts use it;
    without arguments it prints nothing (as before it had a command line)."""
    argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0].replace("\n", " "),
        epilog="A module with nothing to print: scripts/validate.py prints the comparison of "
               "these rows with the cost model, scripts/calibrate.py fits the factors to "
               "FIT_ROWS and TF32_FIT_ROWS; the rows and their sources are in "
               "scripts/data/measured_throughput.csv and scripts/data/README.md.").parse_args(argv)
    return 0


if __name__ == "__main__":
    sys.exit(main())
