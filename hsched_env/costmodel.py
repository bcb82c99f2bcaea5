"""Analytic cost model: iteration time and per-GPU memory of a training job under a strategy.

The model follows ``reference/cost_model.md`` (Megatron FLOPs, 1F1B pipeline, ring collectives on
the slowest link, ZeRO model states, Korthikanti activations) and is written for *arrays* of
strategies: every function takes numpy arrays with one entry per strategy row, so the planner can
price hundreds of thousands of strategies in one pass.

A strategy row runs on one or two GPU types (``A`` and optionally ``B``) in one of three layouts:

* ``KIND_HOMO`` — ``dp`` replicas of ``tp × pp`` GPUs, all of type A.
* ``KIND_DP_SPLIT`` — ``dp_a`` replicas on type A and ``dp_b`` on type B, each replica homogeneous
  with the same ``tp × pp`` shape; the global batch is split in proportion to replica speed
  (Metis, Whale), so the iteration time is the same on both sides up to integer rounding.
* ``KIND_PP_SPLIT`` — ``dp`` replicas, each a pipeline of ``pp_a`` stages on A followed by ``pp_b``
  stages on B; layers are split in proportion to stage speed (Metis), then moved to the other
  type when a stage would not fit in memory. Part A takes the first stages, which hold the most
  in-flight micro-batches under 1F1B; the last stage (part B) holds the output layer. The
  planner gives part A to the type with more memory, and prices both orders when the two
  types have the same memory.

Tensor parallelism always stays inside one node and one GPU type.

Units: seconds, bytes, FLOP, and bandwidth in GB/s (gigabytes).

Calibration (see ``Calibration``) — which anchors fit which factor, and which are held out:

* ``eta_llm`` (bf16/fp16 kernels on NVLink Ampere), with Hopper's and Volta's
  (``eta_llm_by_arch``) and the elementwise traffic, is fitted (``scripts/calibrate.py``,
  ``fit_half``) by least squares on the 8 fit rows of public measured throughput
  (``scripts/measured.py``, ``FIT_ROWS``, each under the strategy it ran) and anchor A2
  (LLaMA-1 65B on 2048 A100-80GB, 380 tokens/s/GPU), and cross-checked against A3/A4 MFU.
  The Llama-2 7B/13B/70B figures (anchor A1) are **held out**: ``tests/test_validation.py``
  checks them and they were not used to set any factor.
* ``eta_fp32`` per GPU architecture (Kepler, Pascal, Volta), with the launch cost, the memory
  traffic factor and the overlap exponent, is fitted (``scripts/calibrate.py``) to Gavel's
  single-GPU throughputs (anchor A8) of **ResNet-18, CycleGAN and LM only** (their batch
  sweeps); A3C and Recommendation are left out (host-bound in Gavel's data). ResNet-50 and
  Transformer are **held out**; their V100/K80 and V100/P100 ratios are the validation test.
* ``eta_tf32`` (fp32 convolutions on TF32 tensor cores, Ampere and newer) is fitted
  (``scripts/calibrate.py``) to one measured row, ResNet-50 on one A100-80GB in NVIDIA's
  PyTorch table; every other TF32 / Ampere-fp32 CNN row is held out.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field

import numpy as np

from hsched_env.catalog import ARCHS, FAMILIES, GpuType, ModelSpec
from hsched_env.errors import ConfigError, is_real_number, show

KIND_HOMO, KIND_DP_SPLIT, KIND_PP_SPLIT = 0, 1, 2
KIND_NAMES = ("homogeneous", "mixed-dp", "mixed-pp")

GB = 1e9


@dataclass(frozen=True)
class Calibration:
    """Efficiency factors and fixed costs of the analytic model.

    Attributes:
        eta_llm: Matmul efficiency (fraction of dense fp16/bf16 peak) of half-precision
            transformer layers on NVLink Ampere GPUs (A100), and on NVLink Hopper parts when
            ``eta_llm_by_arch`` has no entry. Fitted with the other half-precision factors
            (``scripts/calibrate.py``, ``fit_half``) on ``scripts/measured.py``'s FIT_ROWS and
            anchor A2 (LLaMA-1 65B, 380 tok/s/GPU on 2048 A100-80GB).
        eta_llm_by_arch: The same for the NVLink parts of other architectures (fitted: Hopper
            on MPT on 8 H100, Volta on BERT-large on one V100). Hopper's dense peak is 3.2×
            Ampere's, but measured LLM training runs 2.1–2.5× faster: its matmuls reach a
            smaller fraction of the peak.
        llm_elementwise_traffic: HBM traffic of the bandwidth-bound kernels between the
            matmuls of a half-precision transformer layer (norms, residual adds, activation
            function, rotary embedding, attention input/output; forward + backward), as
            ``c · s · h · dtype`` bytes per sample (c bytes per token and hidden unit per byte
            of the data type); this time adds to the matmuls'. It makes small models and fast
            GPUs relatively slower (FLOPs grow with h², traffic with h; Hopper has 3.2× the
            FLOP/s but 1.6× the bandwidth of an A100-80GB). Fitted; a count of a layer's
            kernels gives about 90. Two more terms were tried and left out because the fit put
            them at "no effect": attention-score traffic without FlashAttention (fitted 0 on
            the BERT rows) and a separate efficiency of the attention-score matmuls (fitted
            1.0, the dense matmuls' own, with a 4096-token MPT-7B row added to the fit).
        eta_half_by_arch: Efficiency of fp16/bf16 kernels on other architectures (PCIe parts,
            pre-Ampere tensor cores). Reference defaults (0.25–0.35, ``cost_model.md`` §5).
        eta_fp32_by_arch: Efficiency of fp32 kernels, fitted to Gavel's single-GPU throughputs of
            the calibration jobs (ResNet-18, CycleGAN, LM).
        eta_tf32: Efficiency (fraction of the dense TF32 tensor-core peak) of an fp32 model's
            convolutions on GPUs with TF32 (``GpuType.tf32_tflops`` > 0: Ampere, Ada, Hopper).
            cuDNN may run fp32 convolutions in TF32 unless told otherwise (PyTorch's
            ``torch.backends.cudnn.allow_tf32`` defaults to True) and picks its fastest
            algorithm, so the model takes the faster of this rate and the fp32 one: an "fp32"
            CNN on an A100 runs about 2.5× its V100 speed where the fp32 peak alone says 1.2×
            (on A10, L4 and L40S the fp32 rate stays the faster). Fitted
            (``scripts/calibrate.py``) on ResNet-50 on one A100-80GB (NVIDIA's PyTorch table).
        tf32_families: Model families whose fp32 FLOPs are convolutions and so may run in
            TF32 (``eta_tf32``). Matmul-bound fp32 models (Transformer, Recommendation) keep
            fp32: PyTorch has not used TF32 for matmuls by default since 1.12. The LSTM
            language model (family ``rnn``) is left out too: whether cuDNN's RNNs take TF32 by
            default was not established, and no measured row would check it.
        launch_overhead_s: Host-side cost per layer per micro-batch per pass (kernel launches,
            framework), seconds. Makes very small micro-batches cost something.
        kernel_launch_s: Host cost of one kernel launch in eager PyTorch (dispatch + launch).
            Launches are asynchronous, so an iteration takes at least
            ``kernels_per_iteration × kernel_launch_s`` whatever the GPU: kernel-heavy jobs gain
            less from a fast GPU. Fitted with ``eta_fp32_by_arch``.
        mem_traffic_factor: HBM traffic of the memory-bound kernels (normalization,
            activation functions, additions) of the eager fp32 jobs, as a multiple of their
            stored activation bytes; these kernels run between the compute-bound ones, so their
            time adds. Fitted with ``eta_fp32_by_arch``. Transformer-shaped models use fused
            kernels and fold this term into ``eta_llm``.
        overlap_gamma: Exponent of the smooth maximum that combines GPU and host time
            (Pollux's ``(T_a^γ + T_b^γ)^(1/γ)``, γ ∈ [1, 10]; 1 is a plain sum, large is a max).
        collective_latency_s: Latency per ring step (α), seconds.
        optimizer_bytes_per_param: Bytes moved per local parameter by the optimizer step (read
            and write fp32 master, momentum and variance, write half weights); memory bound.
        fixed_mem_gb: Fixed per-GPU memory: the CUDA/PyTorch context (FlashFlex uses 1 GB;
            Sailor measures 5.06 GB with Megatron-DeepSpeed's fused kernels and buffers).
        mem_usable_fraction: A strategy is feasible iff its memory is at most this fraction of
            the GPU's memory (``cost_model.md`` §1: 0.9).
    """

    # Fitted by scripts/calibrate.py (see the module docstring for the anchors).
    eta_llm: float = 0.6966
    eta_llm_by_arch: dict = field(default_factory=lambda: {"hopper": 0.5223, "volta": 0.6534})
    llm_elementwise_traffic: float = 77.47
    # Reference defaults (cost_model.md §5), not fitted: PCIe parts and older tensor cores.
    eta_half_by_arch: dict = field(default_factory=lambda: {
        "hopper": 0.45, "ampere": 0.45, "ada": 0.35, "turing": 0.30, "volta": 0.35,
        "pascal": 0.30, "kepler": 0.30})
    # kepler/pascal/volta fitted by scripts/calibrate.py on ResNet-18, CycleGAN and LM; the newer
    # architectures reuse Volta's value (an assumption: no fp32 anchor for them).
    eta_fp32_by_arch: dict = field(default_factory=lambda: {
        "kepler": 0.207, "pascal": 0.8, "volta": 0.8, "turing": 0.8, "ampere": 0.8,
        "ada": 0.8, "hopper": 0.8})
    eta_tf32: float = 0.3165
    tf32_families: tuple = ("cnn", "gan")
    launch_overhead_s: float = 20e-6
    kernel_launch_s: float = 26.28e-6
    overlap_gamma: float = 1.0
    mem_traffic_factor: float = 9.36
    collective_latency_s: float = 20e-6
    optimizer_bytes_per_param: float = 20.0
    fixed_mem_gb: float = 1.0
    mem_usable_fraction: float = 0.9

    def __post_init__(self) -> None:
        """Each factor in its range (a ``ConfigError`` naming it): an efficiency of −1 priced
        Llama-2 7B at 500 times its speed, and a NaN one dropped candidates without a word."""
        def bad(name: str, why: str, value) -> ConfigError:
            return ConfigError(f"must be {why}, got {show(value)}", source="Calibration",
                               field=name)

        def check(name: str, value, lo: float, hi: float = math.inf,
                  lo_open: bool = False) -> None:
            if not (is_real_number(value) and math.isfinite(value)
                    and (value > lo if lo_open else value >= lo) and value <= hi):
                span = (f"{'>' if lo_open else '>='} {lo:g}" if hi == math.inf
                        else f"in {'(' if lo_open else '['}{lo:g}, {hi:g}]")
                raise bad(name, f"a finite number {span}", value)

        for name in ("eta_llm", "eta_tf32", "mem_usable_fraction"):
            check(name, getattr(self, name), 0.0, 1.0, lo_open=True)
        for name in ("eta_llm_by_arch", "eta_half_by_arch", "eta_fp32_by_arch"):
            table = getattr(self, name)
            if not isinstance(table, Mapping):
                raise bad(name, "a mapping of architecture to efficiency", table)
            for arch, value in table.items():
                if arch not in ARCHS:
                    raise bad(f"{name}[{arch!r}]", f"an architecture of "
                                                    f"{', '.join(ARCHS)}", arch)
                check(f"{name}[{arch!r}]", value, 0.0, 1.0, lo_open=True)
        for name in ("llm_elementwise_traffic", "mem_traffic_factor", "launch_overhead_s",
                     "kernel_launch_s", "collective_latency_s", "optimizer_bytes_per_param",
                     "fixed_mem_gb"):
            check(name, getattr(self, name), 0.0)
        check("overlap_gamma", self.overlap_gamma, 1.0, 10.0)
        families = self.tf32_families
        if not (isinstance(families, (tuple, list, frozenset, set))
                and all(f in FAMILIES for f in families)):
            raise bad("tf32_families", f"model families of {', '.join(FAMILIES)}", families)

    def achievable_flops(self, gpu: GpuType, model: ModelSpec) -> float:
        """FLOP/s ``model``'s kernels reach on ``gpu``: the dense peak of the model's precision
        × the matching efficiency — or, for an fp32 convolutional model on a GPU with TF32,
        the faster of that and the TF32 peak × ``eta_tf32`` (cuDNN may use TF32 and picks its
        fastest algorithm)."""
        flops = gpu.peak_tflops(model.precision) * 1e12 * self.eta(gpu, model)
        if self.may_use_tf32(gpu, model):
            return max(flops, gpu.tf32_tflops * 1e12 * self.eta_tf32)
        return flops

    def may_use_tf32(self, gpu: GpuType, model: ModelSpec) -> bool:
        """Whether ``model``'s fp32 convolutions may run on ``gpu``'s TF32 tensor cores."""
        return (model.precision == "fp32" and gpu.tf32_tflops > 0
                and model.family in self.tf32_families)

    def eta(self, gpu: GpuType, model: ModelSpec) -> float:
        """Kernel efficiency of ``model`` on ``gpu`` (fraction of the matching dense peak)."""
        if model.precision == "fp32":
            return self._by_arch("eta_fp32_by_arch", gpu)
        nvlink = gpu.link.lower().startswith("nvlink")
        if nvlink and gpu.arch in self.eta_llm_by_arch:
            return self.eta_llm_by_arch[gpu.arch]
        if gpu.arch in ("ampere", "hopper") and nvlink:
            return self.eta_llm
        return self._by_arch("eta_half_by_arch", gpu)

    def _by_arch(self, table: str, gpu: GpuType) -> float:
        try:
            return getattr(self, table)[gpu.arch]
        except KeyError:
            raise ConfigError(f"has no efficiency for architecture {gpu.arch!r} (GPU type "
                              f"{gpu.name}): give one", source="Calibration",
                              field=table) from None


DEFAULT_CALIBRATION = Calibration()


@dataclass(frozen=True)
class ModelShape:
    """Per-model constants of the cost model, derived once from a ``ModelSpec``.

    Per-sample quantities refer to one training sample as the catalog defines it.
    """

    layers: int
    layer_fwd_flops: float     # forward FLOPs of one layer, one sample
    logits_fwd_flops: float    # forward FLOPs of the output layer, one sample
    layer_params: float        # parameters of one layer
    embed_params: float        # parameters of the input embedding (= output layer, untied)
    traffic_bytes: float       # HBM bytes of memory-bound kernels per layer per sample
    act_layer: float           # activation bytes per layer per sample (before tp/sp split)
    act_rc: float              # bytes kept per layer per sample under full recompute
    logits_act: float          # activation bytes of the output layer per sample
    boundary_bytes: float      # pipeline-boundary activation per sample, one direction
    tp_comm_bytes: float       # TP all-reduce traffic per layer per sample (fwd + bwd)
    dtype_bytes: int
    state_w: float             # model-state bytes per parameter: weights,
    state_g: float             # gradients,
    state_o: float             # optimizer states (incl. fp32 master copy)
    fixed_mem_bytes: float
    host_time_s: float         # host time to launch one iteration's kernels (one replica)
    transformer: bool


def model_state_bytes(shape: ModelShape) -> float:
    """Bytes of the model states (weights, gradients, optimizer states) of the whole model
    as the cost model prices them: every layer plus the embedding and output tables (untied).
    A transformer's count comes from its shape, so it can differ from the catalog's rounded
    ``params`` (GPT-2 medium: 405M against 355M, whose input and output tables are tied)."""
    params = shape.layers * shape.layer_params + 2.0 * shape.embed_params
    return params * (shape.state_w + shape.state_g + shape.state_o)


def model_shape(model: ModelSpec, calib: Calibration = DEFAULT_CALIBRATION) -> ModelShape:
    """Derive the cost-model constants of ``model`` (FLOPs, parameters, activation bytes).

    Transformers use Megatron's FLOP count (per layer forward ``2·s·P_layer + 4·s²·h``; output
    layer ``2·s·h·V``), which gives the ``6N + 12·L·h·s`` FLOPs per token of anchor A1, and
    Korthikanti et al.'s activation bytes. Other jobs spread the catalog's forward FLOPs,
    parameters and activation bytes (given at fp32, halved for a half-precision model) evenly
    over their layers.
    """
    dtype = 4 if model.precision == "fp32" else 2
    w = g = float(dtype)
    o = max(model.bytes_per_param_states - w - g, 0.0)
    L = model.layers
    fixed = calib.fixed_mem_gb * GB
    host = model.kernels_per_iteration * calib.kernel_launch_s
    if model.is_transformer_shaped:
        s, h, V, a = model.seq_len, model.hidden, model.vocab, model.heads
        kv = model.kv_heads / model.heads
        layer_params = 2 * h * h + 2 * h * h * kv + (3 if model.swiglu else 2) * h * model.ffn
        attn_score = 0.0 if model.flash_attention else 5.0 * a * s / h
        scale = dtype / 2                      # Korthikanti's bytes assume 16-bit activations
        return ModelShape(
            layers=L,
            layer_fwd_flops=2.0 * s * layer_params + 4.0 * s * s * h,
            logits_fwd_flops=2.0 * s * h * V,
            layer_params=float(layer_params),
            embed_params=float(V * h),
            # bandwidth-bound kernels between the matmuls (forward + backward)
            traffic_bytes=dtype * calib.llm_elementwise_traffic * s * h,
            act_layer=s * h * (34 + attn_score) * scale,     # s·b·h·(34 + 5as/h)
            act_rc=2.0 * s * h * scale,        # full recompute keeps each layer's input
            logits_act=4.0 * s * V,            # fp32 logits for the loss
            boundary_bytes=float(s * h * dtype),
            # 2 all-reduces forward + 2 backward of s·h elements; ring moves 2(t-1)/t of each
            tp_comm_bytes=4.0 * 2.0 * s * h * dtype,
            dtype_bytes=dtype, state_w=w, state_g=g, state_o=o,
            fixed_mem_bytes=fixed, host_time_s=host, transformer=True)
    act = float(model.act_bytes_per_sample) * dtype / 4.0
    return ModelShape(
        layers=L, layer_fwd_flops=float(model.fwd_flops_per_sample) / L, logits_fwd_flops=0.0,
        layer_params=model.params / L, embed_params=0.0,
        traffic_bytes=calib.mem_traffic_factor * act / L, act_layer=act / L,
        act_rc=act / L, logits_act=0.0, boundary_bytes=act / L, tp_comm_bytes=0.0,
        dtype_bytes=dtype, state_w=w, state_g=g, state_o=o, fixed_mem_bytes=fixed,
        host_time_s=host, transformer=False)


@dataclass(frozen=True)
class PoolArrays:
    """Hardware figures of a cluster's node pools for one model, as aligned arrays.

    Index = pool index. Built by ``pool_arrays``.
    """

    flops: np.ndarray          # achievable FLOP/s (Calibration.achievable_flops)
    mem_bytes: np.ndarray      # usable bytes per GPU (capacity × usable fraction)
    hbm_bw: np.ndarray         # bytes/s
    intra_bw: np.ndarray       # bytes/s, one direction, GPU to GPU inside a node
    inter_bw: np.ndarray       # bytes/s per GPU across nodes: NIC per node ÷ GPUs per node
    gpus_per_node: np.ndarray  # int


def pool_arrays(gpus: list[GpuType], intra_bw_gbps, inter_bw_gbps_per_node, gpus_per_node,
                model: ModelSpec, calib: Calibration = DEFAULT_CALIBRATION) -> PoolArrays:
    """Build ``PoolArrays`` for pools with the given GPU types and links (GB/s figures)."""
    gpn = np.asarray(gpus_per_node, dtype=np.int64)
    return PoolArrays(
        flops=np.array([calib.achievable_flops(g, model) for g in gpus]),
        mem_bytes=np.array([g.memory_gb * GB * calib.mem_usable_fraction for g in gpus]),
        hbm_bw=np.array([g.memory_bw_gbps * GB for g in gpus]),
        intra_bw=np.asarray(intra_bw_gbps, dtype=float) * GB / 2.0,   # bidirectional → one way
        inter_bw=np.asarray(inter_bw_gbps_per_node, dtype=float) * GB / gpn,
        gpus_per_node=gpn)


def _overlap(a, b, gamma: float):
    """Smooth maximum ``(a^γ + b^γ)^(1/γ)`` of two overlapping durations (Pollux's form)."""
    if not np.any(b):
        return a
    if gamma == 1.0:
        return a + b                 # the same, without two powers
    return (a ** gamma + b ** gamma) ** (1.0 / gamma)


def layer_time_per_sample(shape: ModelShape, calib: Calibration, hw: PoolArrays, pool, tp,
                          rc) -> np.ndarray:
    """Time of one layer for one sample on ``pool`` (compute + TP all-reduces), seconds."""
    tp = np.asarray(tp, dtype=np.float64)
    mult = np.where(rc, 4.0, 3.0)
    tp_share = np.where(rc, 1.5, 1.0) * (tp - 1) / tp
    # a transformer's traffic is per forward + backward: recompute adds a forward (4/3)
    traffic = shape.traffic_bytes * (mult / 3.0 if shape.transformer else 1.0)
    return (mult * shape.layer_fwd_flops / (tp * hw.flops[pool])
            + traffic / (tp * hw.hbm_bw[pool])
            + tp_share * shape.tp_comm_bytes / hw.intra_bw[pool])


def best_microbatch_count(shape: ModelShape, calib: Calibration, *, kind, u_a, u_b, pp, ppa,
                          ppb, dpa, dpb, rep_batch, samples) -> np.ndarray:
    """Time-optimal micro-batch count of a 1F1B replica, ignoring memory.

    A replica's time is ``const + (pp - 1)·S·R/m + m·l·o`` (convex in m), where ``S`` is the
    per-sample time of a (balanced) stage, ``R`` the replica's batch, ``l`` the layers of its
    largest stage and ``o`` the launch overhead per layer and micro-batch; it is minimal at
    ``m* = sqrt((pp - 1)·S·R / (l·o))``. Memory only falls as m grows, so a count well below
    m* is never the best choice. Mixed layouts use their balanced split: speed-proportional
    batches give every data-parallel replica the work-time ``samples/(dpa/u_a + dpb/u_b)``;
    a mixed pipeline's balanced stage takes ``L/(ppa/u_a + ppb/u_b)`` per sample.
    """
    L = shape.layers
    o = 3.0 * calib.launch_overhead_s
    pp = np.maximum(pp, 1)
    lmax = np.ceil(L / pp)
    stage = lmax * u_a                                          # homogeneous
    work = stage * rep_batch
    work = np.where(kind == KIND_DP_SPLIT,
                    lmax * samples / (dpa / u_a + np.maximum(dpb, 1) / u_b), work)
    stage_pp = L / (ppa / u_a + ppb / u_b)
    work = np.where(kind == KIND_PP_SPLIT, stage_pp * rep_batch, work)
    layers_pp = np.maximum(np.ceil(stage_pp / u_a), np.ceil(stage_pp / u_b))
    l_big = np.where(kind == KIND_PP_SPLIT, layers_pp, lmax)
    return np.sqrt((pp - 1) * work / (l_big * o))


def strategy_cost(shape: ModelShape, calib: Calibration, hw: PoolArrays, *, kind, pa, pb,
                  dpa, dpb, tp, ppa, ppb, m, rc, batch: int, per_replica_batch: bool,
                  zero_stages: tuple[int, ...] = (0, 1, 2, 3)) -> dict:
    """Price strategy rows; every keyword but ``batch``/``per_replica_batch`` is a row array.

    Args:
        shape: Model constants from ``model_shape``.
        calib: Calibration factors.
        hw: Pool hardware arrays.
        kind: ``KIND_*`` per row.
        pa, pb: Pool index of part A and part B (``pb`` is ignored for homogeneous rows).
            Part A holds a mixed pipeline's first stages.
        dpa, dpb: Data-parallel replicas on A and on B (``dpb`` is 0 unless
            ``KIND_DP_SPLIT``; ``KIND_PP_SPLIT`` rows put their replica count in ``dpa``).
        tp: Tensor-parallel degree (inside one node and one GPU type).
        ppa, ppb: Pipeline stages on A and on B (``ppb`` is 0 unless ``KIND_PP_SPLIT``).
        m: Micro-batches per replica per iteration.
        rc: Full activation recompute (bool array).
        batch: The job's batch in samples per iteration — per replica when
            ``per_replica_batch`` (Gavel's convention for its data-parallel jobs), else global.
        per_replica_batch: See ``batch``.
        zero_stages: The ZeRO stages to report memory for (columns of ``mem_a``/``mem_b``).
            Stages 0 and 1 cost the same time and stage 1 needs less memory, so ``(1, 2, 3)``
            decides feasibility and time; the planner asks for all four only for the rows it
            keeps.

    Returns:
        dict of row arrays: ``step_time_s`` with ZeRO stage 0 or 1 (identical times),
        ``dp_sync_s`` (its gradient all-reduce, part of ``step_time_s``), ``zero2_extra_s``
        and ``zero3_extra_s`` (the extra time of ZeRO-2 and ZeRO-3, whose sharded traffic
        repeats on every micro-batch: ``zero_extra_times``),
        ``samples_per_iter``, ``mem_a``/``mem_b`` (bytes per GPU, shape (R, len(zero_stages))),
        ``split_capped`` (memory moved layers away from the speed-proportional split of a mixed
        pipeline), ``layers_a``/``layers_b`` (layers on the largest stage of each part) and
        ``batch_a``/``batch_b`` (samples per replica on each part).

    Rows are priced one layout at a time (each on its own rows, without masks); rows sorted by
    ``kind`` (as the planner's are) are sliced, others are grouped and put back in order.
    """
    kind = np.asarray(kind)
    rows = {"pa": pa, "pb": pb, "dpa": dpa, "dpb": dpb, "tp": tp, "ppa": ppa, "ppb": ppb,
            "m": m, "rc": rc}
    rows = {k: np.broadcast_to(np.asarray(v), kind.shape) for k, v in rows.items()}
    if kind.size and (kind.min() < KIND_HOMO or kind.max() > KIND_PP_SPLIT):
        raise ValueError(f"unknown strategy kind in {np.unique(kind)}")
    order = None
    if kind.size > 1 and np.any(kind[1:] < kind[:-1]):
        order = np.argsort(kind, kind="stable")
        kind = kind[order]
        rows = {k: v[order] for k, v in rows.items()}
    bounds = np.searchsorted(kind, [KIND_HOMO, KIND_DP_SPLIT, KIND_PP_SPLIT, KIND_PP_SPLIT + 1])
    parts = []
    for k, price in ((KIND_HOMO, _cost_homo), (KIND_DP_SPLIT, _cost_dp_split),
                     (KIND_PP_SPLIT, _cost_pp_split)):
        lo, hi = bounds[k], bounds[k + 1]
        if hi > lo or (k == KIND_HOMO and kind.size == 0):
            sub = {name: v[lo:hi] for name, v in rows.items()}
            parts.append(price(shape, calib, hw, **sub, batch=batch,
                               per_replica_batch=per_replica_batch, zero_stages=zero_stages))
    out = parts[0] if len(parts) == 1 else {
        name: np.concatenate([p[name] for p in parts]) for name in parts[0]}
    if order is not None:
        out = {name: _unsort(v, order) for name, v in out.items()}
    return out


def _unsort(values: np.ndarray, order: np.ndarray) -> np.ndarray:
    """``values`` computed for rows ``order`` (a permutation), put back in row order."""
    out = np.empty_like(values)
    out[order] = values
    return out


def _pipeline_link(hw: PoolArrays, pool, span, gpus):
    """One-way bandwidth of the stage boundaries of one-type replicas of ``span`` (= tp·pp)
    GPUs each, laid out one after the other (tp innermost, then pp, then dp) over the
    ``gpus`` GPUs a set takes of ``pool`` (whole nodes, then one node for the rest). Every
    replica stays inside a node when all ``gpus`` do, or when a replica fits in a node and
    a node holds a whole number of them. Otherwise a node boundary falls inside some
    replica, between two of its stages (a tensor-parallel group never straddles nodes), and
    the synchronous step waits for that replica: the NIC share per GPU. (12 or 24 GPUs on
    8-GPU nodes in replicas of 6: ranks 6–11 span two nodes.)"""
    gpn = hw.gpus_per_node[pool]
    inside = (span <= gpn) & ((gpus <= gpn) | (np.fmod(gpn, span) == 0))
    return np.where(inside, hw.intra_bw[pool], hw.inter_bw[pool])


def dp_ranks_per_node(hw: PoolArrays, pool, stride, ranks):
    """Ranks of one data-parallel group on each node of ``pool`` when the group's ``ranks``
    ranks there lie ``stride`` (= tp·pp) apart: ``gpus_per_node // stride``, at most
    ``ranks`` (a side of a mixed set may use part of a node), at least 1."""
    gpn = hw.gpus_per_node[pool]
    return np.clip(np.floor(gpn / np.maximum(stride, 1)), 1.0, np.maximum(ranks, 1))


def _cross_node_ring_bw(hw: PoolArrays, pool, g):
    """One-way bandwidth per GPU of a ring that crosses the nodes of ``pool`` with ``g`` ranks
    on each: ``g`` NIC shares, capped by the intra-node link when ``g`` > 1 (the rings then
    also hop inside the node)."""
    return np.where(g > 1, np.minimum(hw.inter_bw[pool] * g, hw.intra_bw[pool]),
                    hw.inter_bw[pool])


def _dp_link(hw: PoolArrays, pool, stride, span):
    """One-way bandwidth per GPU of a data-parallel ring over ``span`` GPUs of ``pool`` whose
    ranks lie ``stride`` (= tp·pp) apart.

    Inside one node: the intra-node link. Across nodes, NCCL runs one ring (channel) per NIC:
    a group with ``g`` ranks on each node splits its data over ``g`` rings that cross the node
    boundary through ``g`` different NIC shares, so each node's cross-node traffic is the
    ring volume once, at ``g`` × the NIC share per GPU (``_cross_node_ring_bw``). With
    ``tp·pp`` ≥ GPUs per node (g = 1) this is the NIC share per GPU, the old rule; plain data
    parallelism on 8-GPU nodes gets the node's whole NIC. A group whose last node is only
    partly used runs at that node's rate (its fewer ranks drive fewer NIC shares).
    """
    gpn = hw.gpus_per_node[pool]
    last = np.where(span % gpn > 0, span % gpn, gpn)
    g = dp_ranks_per_node(hw, pool, stride, last / np.maximum(stride, 1))
    return np.where(span <= gpn, hw.intra_bw[pool], _cross_node_ring_bw(hw, pool, g))


def _zero_factors(shape: ModelShape, d, zero_stages) -> np.ndarray:
    """Model-state bytes per parameter at each ZeRO stage of ``zero_stages`` (columns)."""
    w, g, o = shape.state_w, shape.state_g, shape.state_o
    per_stage = {0: lambda: np.full_like(d, w + g + o), 1: lambda: w + g + o / d,
                 2: lambda: w + (g + o) / d, 3: lambda: (w + g + o) / d}
    return np.stack([per_stage[z]() for z in zero_stages], axis=-1)


def _stage_act(shape: ModelShape, tp, rc, layers, micro_b, inflight, logits):
    """Activation bytes per GPU of a stage of ``layers`` layers holding ``inflight``
    micro-batches of ``micro_b`` samples; ``logits`` (True, False or a row mask): the stage
    holds the output layer's fp32 logits."""
    # Tensor parallelism runs with sequence parallelism (Megatron's default): every activation
    # is split over the tp ranks (Korthikanti et al., "TP + SP" row).
    full_layer = micro_b * shape.act_layer / tp
    if rc.all():
        act = micro_b * shape.act_rc / tp * layers * inflight + full_layer
    elif not rc.any():
        act = full_layer * layers * inflight
    else:
        act = np.where(rc, micro_b * shape.act_rc / tp * layers * inflight + full_layer,
                       full_layer * layers * inflight)
    if logits is True:
        return act + micro_b * shape.logits_act / tp
    if logits is False:
        return act
    return act + np.where(logits, micro_b * shape.logits_act / tp, 0.0)


def _stage_mem(shape: ModelShape, params, act, zero_factors) -> np.ndarray:
    """Bytes per GPU of a stage at each ZeRO stage: ``params`` per GPU × bytes per parameter,
    plus activations and the fixed part."""
    return params[:, None] * zero_factors + (act + shape.fixed_mem_bytes)[:, None]


def _tables_first(pp):
    """Embedding/output tables of a one-type replica's first stage: both when it is the only
    stage."""
    return np.where(pp == 1, 2.0, 1.0)


def _ring_time(shape: ModelShape, calib: Calibration, d, params_bw_a, params_bw_b=None):
    """Gradient all-reduce of each stage over its data-parallel group on the slowest link:
    ring ``2(d-1)/d · bytes / BW`` (the larger of the two parts) plus α per ring step."""
    ring = np.where(d > 1, 2.0 * (d - 1) / d * shape.state_g, 0.0)
    t = ring * params_bw_a[0] / params_bw_a[1]
    if params_bw_b is not None:
        t = np.maximum(t, ring * params_bw_b[0] / params_bw_b[1])
    return t + np.where(d > 1, calib.collective_latency_s * 2.0 * (d - 1), 0.0)


def zero_extra_times(t_pipe, t_dp, m, pp=1) -> tuple[np.ndarray, np.ndarray]:
    """Extra time per iteration of ZeRO-2 and of ZeRO-3 over stages 0–1, whose gradients are
    all-reduced once per iteration (``t_dp``, not overlapped with compute).

    Gradient accumulation over ``m`` micro-batches repeats the sharded stages' traffic on
    every micro-batch: ZeRO-2 reduce-scatters each micro-batch's gradients (half an
    all-reduce), ZeRO-3 also gathers the parameters for its forward and backward passes (1.5
    all-reduces in all). The last micro-batch's traffic is exposed like stage 0's all-reduce
    (ZeRO-2: its reduce-scatter and the parameters' all-gather after the step, one
    all-reduce's volume, as stage 0; ZeRO-3: 1.5×); each earlier micro-batch's traffic is
    hidden behind its own compute on a stage, ``t_pipe / (m + pp - 1)`` (a 1F1B pipeline of
    ``pp`` stages takes about ``m + pp - 1`` stage slots), up to that compute (perfect
    prefetch: what cannot hide is added). With ``m = 1`` ZeRO-2 costs stage 0's time and
    ZeRO-3 1.5× its all-reduce; with fast links the earlier micro-batches cost nothing more;
    with slow ones the step is bound by ``m`` times the sharded traffic."""
    hidden = t_pipe / (np.maximum(m, 1) + np.maximum(pp, 1) - 1)
    earlier = np.maximum(m - 1, 0)
    zero2 = earlier * np.maximum(0.5 * t_dp - hidden, 0.0)
    zero3 = 0.5 * t_dp + earlier * np.maximum(1.5 * t_dp - hidden, 0.0)
    return zero2, zero3


def _result(shape, calib, d, m, pp, t_pipe, t_dp, t_opt, samples, mem_a, mem_b, split_capped,
            layers_a, layers_b, batch_a, batch_b) -> dict:
    """``strategy_cost``'s result from a layout's pipeline, gradient-sync and optimizer times
    and its other row arrays."""
    zero2, zero3 = zero_extra_times(t_pipe, t_dp, m, pp)
    return {
        # Eager PyTorch launches kernels asynchronously: the host runs ahead of the GPU, so an
        # iteration takes about the longer of the GPU's work and the host's launching, combined
        # as a smooth maximum the way Pollux combines overlapped compute and communication.
        "step_time_s": _overlap(t_pipe + t_dp + t_opt, shape.host_time_s, calib.overlap_gamma),
        "dp_sync_s": t_dp,
        "zero2_extra_s": zero2,
        "zero3_extra_s": zero3,
        "samples_per_iter": samples,
        "mem_a": mem_a,
        "mem_b": mem_b,
        # True where memory moved layers away from the speed-proportional pipeline split.
        "split_capped": split_capped,
        "layers_a": layers_a,
        "layers_b": layers_b,
        "batch_a": batch_a,
        "batch_b": batch_b,
    }


def _replica_rows(shape, calib, hw, pa, tp, ppa, ppb, m, rc, batch, per_replica_batch,
                  replicas):
    """Quantities every layout needs: (tp, m, pp, d, samples, rep_batch, u_a) as floats."""
    f8 = np.float64
    tp = tp.astype(f8)
    m = m.astype(f8)
    pp = np.maximum(ppa + ppb, 1).astype(f8)
    d = replicas.astype(f8)                                   # replicas in total
    samples = d * batch if per_replica_batch else np.full_like(d, float(batch))
    rep_batch = np.full_like(d, float(batch)) if per_replica_batch else np.ceil(samples / d)
    # Per-sample time of one layer (compute + TP all-reduces on the intra-node link).
    u_a = layer_time_per_sample(shape, calib, hw, pa, tp, rc)
    return tp, m, pp, d, samples, rep_batch, u_a


def _homo_pipeline(L, u, g, c, m, pp, lmax, o):
    """1F1B time of one-type replicas per sample, ``T = (m-1)·max_i(T_i + c_i) +
    Σ_i(T_i + c_i)`` with ceil(L/pp) layers on the largest stage, and its launch overhead:
    the replica time is ``k·batch + beta``."""
    k = ((m - 1) * (lmax * u + g + c) + L * u + g + (pp - 1) * c) / m
    beta = ((m - 1) * lmax + L) * o
    return k, beta


def _cost_homo(shape, calib, hw, *, pa, pb, dpa, dpb, tp, ppa, ppb, m, rc, batch,
               per_replica_batch, zero_stages) -> dict:
    """``KIND_HOMO``: ``dp`` replicas of ``tp × pp`` GPUs, all of pool ``pa``."""
    L = shape.layers
    o = 3.0 * calib.launch_overhead_s
    tp, m, pp, d, samples, rep_batch, u_a = _replica_rows(
        shape, calib, hw, pa, tp, ppa, ppb, m, rc, batch, per_replica_batch, dpa)
    g_a = 3.0 * shape.logits_fwd_flops / (tp * hw.flops[pa])
    # Rank layout: tp innermost, then pp, then dp. A replica's pipeline stays inside a node
    # when the node holds whole replicas (``_pipeline_link``).
    c_a = np.where(pp > 1, 2.0 * shape.boundary_bytes
                   / _pipeline_link(hw, pa, tp * pp, tp * pp * d), 0.0)
    lmax = np.ceil(L / pp)
    k_a, beta = _homo_pipeline(L, u_a, g_a, c_a, m, pp, lmax, o)
    t_pipe = k_a * rep_batch + beta

    # Memory: the first stage (embedding, most in-flight micro-batches, 1F1B: stage i holds
    # min(pp - i, m)) and the last (output layer and logits, one micro-batch in flight); a
    # single stage is both. The two hold one table each, so the larger activations decide.
    single = pp == 1
    mb = np.ceil(rep_batch / m)
    act = _stage_act(shape, tp, rc, lmax, mb, np.minimum(pp, m), single)
    deep = np.flatnonzero(~single)
    if deep.size:
        act[deep] = np.maximum(act[deep], _stage_act(shape, tp[deep], rc[deep], lmax[deep],
                                                     mb[deep], 1.0, True))
    params = (lmax * shape.layer_params + _tables_first(pp) * shape.embed_params) / tp
    mem_a = _stage_mem(shape, params, act, _zero_factors(shape, d, zero_stages))

    # Gradient sync: a group's ranks lie tp·pp apart, so it stays inside a node only when all
    # tp·pp·d GPUs do. Optimizer: memory bound.
    t_dp = _ring_time(shape, calib, d, (params, _dp_link(hw, pa, tp * pp, tp * pp * d)))
    t_opt = calib.optimizer_bytes_per_param * params / hw.hbm_bw[pa]
    return _result(shape, calib, d, m, pp, t_pipe, t_dp, t_opt, samples, mem_a, mem_a.copy(),
                   np.zeros(d.shape, dtype=bool), lmax, lmax, rep_batch, rep_batch)


def _cost_dp_split(shape, calib, hw, *, pa, pb, dpa, dpb, tp, ppa, ppb, m, rc, batch,
                   per_replica_batch, zero_stages) -> dict:
    """``KIND_DP_SPLIT``: ``dpa`` one-type replicas on pool ``pa`` and ``dpb`` on ``pb``."""
    L = shape.layers
    o = 3.0 * calib.launch_overhead_s
    tp, m, pp, d, samples, _, u_a = _replica_rows(
        shape, calib, hw, pa, tp, ppa, ppb, m, rc, batch, per_replica_batch,
        dpa + dpb)
    u_b = layer_time_per_sample(shape, calib, hw, pb, tp, rc)
    g_a = 3.0 * shape.logits_fwd_flops / (tp * hw.flops[pa])
    g_b = 3.0 * shape.logits_fwd_flops / (tp * hw.flops[pb])
    c_a = np.where(pp > 1, 2.0 * shape.boundary_bytes
                   / _pipeline_link(hw, pa, tp * pp, tp * pp * dpa), 0.0)
    c_b = np.where(pp > 1, 2.0 * shape.boundary_bytes
                   / _pipeline_link(hw, pb, tp * pp, tp * pp * dpb), 0.0)
    lmax = np.ceil(L / pp)
    k_a, beta = _homo_pipeline(L, u_a, g_a, c_a, m, pp, lmax, o)
    k_b, _ = _homo_pipeline(L, u_b, g_b, c_b, m, pp, lmax, o)

    # Replicas on A take B_a samples, on B take B_b, with dpa·B_a + dpb·B_b = samples and
    # k_a·B_a ≈ k_b·B_b (speed-proportional); integer B_a.
    S, A, Bq = samples, dpa.astype(np.float64), np.maximum(dpb, 1).astype(np.float64)
    t_bal = (S + A * beta / k_a + Bq * beta / k_b) / (A / k_a + Bq / k_b)
    ba_cont = (t_bal - beta) / k_a
    best_t, ba = np.full(d.size, np.inf), np.ones(d.size)
    ba_hi = np.maximum(np.floor((S - Bq) / A), 1.0)
    for cand in (np.floor(ba_cont), np.ceil(ba_cont)):
        cand = np.clip(cand, 1.0, ba_hi)
        t = np.maximum(k_a * cand, k_b * np.ceil(np.maximum(S - A * cand, 1.0) / Bq)) + beta
        better = t < best_t
        best_t, ba = np.where(better, t, best_t), np.where(better, cand, ba)
    bb = np.ceil(np.maximum(S - A * ba, 1.0) / Bq)

    # A side with fewer samples than micro-batches runs one-sample micro-batches, as many as
    # it has samples (per-type micro-batch counts, as Metis does): price each side with its
    # own count m_x = min(m, batch_x).
    def side(u, g, c, batch_x):
        mx = np.minimum(m, batch_x)
        k = ((mx - 1) * (lmax * u + g + c) + L * u + g + (pp - 1) * c) / mx
        return k * batch_x + ((mx - 1) * lmax + L) * o, mx
    t_a, m_a = side(u_a, g_a, c_a, ba)
    t_b, m_b = side(u_b, g_b, c_b, bb)
    t_pipe = np.maximum(t_a, t_b)

    # Memory: each side as a one-type replica (see _cost_homo).
    single = pp == 1
    zf = _zero_factors(shape, d, zero_stages)
    params = (lmax * shape.layer_params + _tables_first(pp) * shape.embed_params) / tp

    def side_mem(mb, mx):
        return _stage_mem(shape, params, np.maximum(
            _stage_act(shape, tp, rc, lmax, mb, np.minimum(pp, mx), single),
            _stage_act(shape, tp, rc, lmax, mb, 1.0, True)), zf)
    mem_a = side_mem(np.ceil(ba / m_a), m_a)
    mem_b = side_mem(np.ceil(bb / m_b), m_b)

    # A mixed data-parallel group always crosses nodes: its ring runs at the slower side's
    # cross-node rate (see _dp_link; both sides have the same tp·pp).
    ring_ab = np.minimum(
        _cross_node_ring_bw(hw, pa, dp_ranks_per_node(hw, pa, tp * pp, dpa)),
        _cross_node_ring_bw(hw, pb, dp_ranks_per_node(hw, pb, tp * pp, dpb)))
    t_dp = _ring_time(shape, calib, d, (params, ring_ab))
    opt = calib.optimizer_bytes_per_param
    t_opt = np.maximum(opt * params / hw.hbm_bw[pa], opt * params / hw.hbm_bw[pb])
    return _result(shape, calib, d, m, pp, t_pipe, t_dp, t_opt, samples, mem_a, mem_b,
                   np.zeros(d.shape, dtype=bool), lmax, lmax, ba, bb)


def _cost_pp_split(shape, calib, hw, *, pa, pb, dpa, dpb, tp, ppa, ppb, m, rc, batch,
                   per_replica_batch, zero_stages) -> dict:
    """``KIND_PP_SPLIT``: ``dpa`` pipelines of ``ppa`` stages on pool ``pa`` followed by
    ``ppb`` stages on ``pb``."""
    f8 = np.float64
    L = shape.layers
    o = 3.0 * calib.launch_overhead_s
    tp, m, pp, d, samples, rep_batch, u_a = _replica_rows(
        shape, calib, hw, pa, tp, ppa, ppb, m, rc, batch, per_replica_batch, dpa)
    u_b = layer_time_per_sample(shape, calib, hw, pb, tp, rc)
    g_b = 3.0 * shape.logits_fwd_flops / (tp * hw.flops[pb])
    # A mixed pipeline always crosses nodes at the type boundary: slowest NIC of the two.
    inter_ab = np.minimum(hw.inter_bw[pa], hw.inter_bw[pb])
    c_a = np.where(pp > 1, 2.0 * shape.boundary_bytes / inter_ab, 0.0)

    # Each B stage takes lb layers and the A stages share the other L - ppb·lb (so the largest
    # holds ceil((L - ppb·lb)/ppa)); lb is the integer next to the speed-proportional split
    # (la·u_a = lb·u_b) with the smaller bottleneck stage, then moved by memory below.
    ppa_f, ppb_f = np.maximum(ppa, 1).astype(f8), np.maximum(ppb, 1).astype(f8)
    lb_hi = np.maximum(np.floor((L - ppa_f) / ppb_f), 1)

    def a_layers(lb):
        return np.ceil((L - ppb_f * lb) / ppa_f)

    lb_cont = L / (ppb_f + ppa_f * u_b / u_a)
    lo, up = np.clip(np.floor(lb_cont), 1, lb_hi), np.clip(np.ceil(lb_cont), 1, lb_hi)
    worse = (np.maximum(np.ceil((L - ppb_f * lo) / ppa_f) * u_a, lo * u_b + g_b)
             > np.maximum(np.ceil((L - ppb_f * up) / ppa_f) * u_a, up * u_b + g_b))
    lb_speed = np.where(worse, up, lo)
    la = a_layers(lb_speed)
    b_mb = rep_batch / m

    # A stage that would not fit hands layers to the other type, judged at ZeRO-2 (whose
    # per-micro-batch traffic may cost time: the split does not weigh a speed-proportional
    # split at ZeRO-2 against moved layers at ZeRO-1). Room = memory left by a stage's fixed
    # part. For B this is conservative:
    # the fixed part of its last stage (output table, logits) with the per-layer activations
    # of its first (the most micro-batches in flight).
    zf = _zero_factors(shape, d, zero_stages)
    zf2 = _zero_factors(shape, d, (2,))[:, 0]
    mb = np.ceil(rep_batch / m)
    infl_a = np.minimum(pp, m)                   # 1F1B: stage i holds min(pp - i, m)
    infl_b = np.minimum(ppb, m)
    no_layers = np.zeros_like(la)
    table = shape.embed_params / tp              # parameters of a stage's table, per GPU
    room_a = hw.mem_bytes[pa] - (table * zf2 + (
        _stage_act(shape, tp, rc, no_layers, mb, infl_a, False) + shape.fixed_mem_bytes))
    room_b = hw.mem_bytes[pb] - (table * zf2 + (
        _stage_act(shape, tp, rc, no_layers, mb, 1.0, True) + shape.fixed_mem_bytes))
    act_layer = mb * np.where(rc, shape.act_rc, shape.act_layer) / tp
    fit_a = np.floor(room_a / (shape.layer_params / tp * zf2 + act_layer * infl_a))
    fit_b = np.floor(room_b / (shape.layer_params / tp * zf2 + act_layer * infl_b))
    lb = np.where(la > fit_a, np.minimum(np.ceil((L - ppa_f * np.maximum(fit_a, 0)) / ppb_f),
                                         lb_hi), lb_speed)
    lb = np.where((lb > fit_b) & (fit_b >= 1), fit_b, lb)
    la = a_layers(lb)

    # Part A's first stage holds the embedding and the most micro-batches in flight; part B
    # its first stage (index ppa, min(ppb, m) in flight, no table) and the pipeline's last.
    p_a = (la * shape.layer_params + shape.embed_params) / tp
    p_b = (lb * shape.layer_params + shape.embed_params) / tp
    mem_a = _stage_mem(shape, p_a, _stage_act(shape, tp, rc, la, mb, infl_a, False), zf)
    mem_b = np.maximum(
        _stage_mem(shape, lb * shape.layer_params / tp,
                   _stage_act(shape, tp, rc, lb, mb, infl_b, False), zf),
        _stage_mem(shape, p_b, _stage_act(shape, tp, rc, lb, mb, 1.0, True), zf))

    stage_a = la * (u_a * b_mb + o)                         # the largest A stage
    stage_b = lb * (u_b * b_mb + o) + g_b * b_mb            # B stages; the last has the logits
    c_mb = c_a * b_mb
    t_pipe = ((m - 1) * (np.maximum(stage_a, stage_b) + c_mb)
              + (L - ppb_f * lb) * (u_a * b_mb + o) + ppb_f * lb * (u_b * b_mb + o)
              + g_b * b_mb + (pp - 1) * c_mb)

    # Each side's data-parallel groups only span that side's tp·pp_x·d GPUs.
    t_dp = _ring_time(shape, calib, d, (p_a, _dp_link(hw, pa, tp * ppa_f, tp * ppa_f * d)),
                      (p_b, _dp_link(hw, pb, tp * ppb_f, tp * ppb_f * d)))
    opt = calib.optimizer_bytes_per_param
    t_opt = np.maximum(opt * p_a / hw.hbm_bw[pa], opt * p_b / hw.hbm_bw[pb])
    return _result(shape, calib, d, m, pp, t_pipe, t_dp, t_opt, samples, mem_a, mem_b,
                   lb != lb_speed, la, lb, rep_batch, rep_batch)
