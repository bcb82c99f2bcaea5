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
  type when a stage would not fit in memory. The type with more memory takes the first stages,
  which hold the most in-flight micro-batches under 1F1B.

Tensor parallelism always stays inside one node and one GPU type.

Units: seconds, bytes, FLOP, and bandwidth in GB/s (gigabytes). Names follow the conventions in
``DESIGN.md``.

Calibration (see ``Calibration``) — which anchors fit which factor, and which are held out:

* ``eta_llm`` (bf16/fp16 kernels on NVLink Ampere/Hopper) is fitted to anchor A2 (LLaMA-1 65B
  on 2048 A100-80GB, 380 tokens/s/GPU) and is cross-checked against A3/A4 MFU (52–54%).
  The Llama-2 7B/13B/70B figures (anchor A1) are **held out**: ``tests/test_validation.py``
  checks them and they were not used to set any factor.
* ``eta_fp32`` per GPU architecture is fitted (``scripts/calibrate_fp32.py``) to Gavel's
  single-GPU throughputs (anchor A8) of **ResNet-18, CycleGAN, LM, A3C and Recommendation
  only**. ResNet-50 and Transformer are **held out**; their V100/K80 and V100/P100 ratios are the
  validation test.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from hsched_env.catalog import GpuType, ModelSpec

KIND_HOMO, KIND_DP_SPLIT, KIND_PP_SPLIT = 0, 1, 2
KIND_NAMES = ("homogeneous", "mixed-dp", "mixed-pp")

GB = 1e9


@dataclass(frozen=True)
class Calibration:
    """Efficiency factors and fixed costs of the analytic model.

    Attributes:
        eta_llm: Kernel efficiency (fraction of dense fp16/bf16 peak) of transformer layers on
            NVLink Ampere/Hopper GPUs. Fitted to anchor A2 (LLaMA-1 65B, 380 tok/s/GPU on 2048
            A100-80GB); see the module docstring.
        eta_half_by_arch: Efficiency of fp16/bf16 kernels on other architectures (PCIe parts,
            pre-Ampere tensor cores). Reference defaults (0.25–0.35, ``cost_model.md`` §5).
        eta_fp32_by_arch: Efficiency of fp32 kernels, fitted to Gavel's single-GPU throughputs of
            the calibration jobs (ResNet-18, CycleGAN, LM, A3C, Recommendation).
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
    eta_llm: float = 0.676
    # Reference defaults (cost_model.md §5), not fitted: PCIe parts and older tensor cores.
    eta_half_by_arch: dict = field(default_factory=lambda: {
        "hopper": 0.45, "ampere": 0.45, "ada": 0.35, "turing": 0.30, "volta": 0.35,
        "pascal": 0.30, "kepler": 0.30})
    # kepler/pascal/volta fitted by scripts/calibrate.py on ResNet-18 and CycleGAN; the newer
    # architectures reuse Volta's value (an assumption: no fp32 anchor for them).
    eta_fp32_by_arch: dict = field(default_factory=lambda: {
        "kepler": 0.207, "pascal": 0.8, "volta": 0.8, "turing": 0.8, "ampere": 0.8,
        "ada": 0.8, "hopper": 0.8})
    launch_overhead_s: float = 20e-6
    kernel_launch_s: float = 26.28e-6
    overlap_gamma: float = 1.0
    mem_traffic_factor: float = 9.36
    collective_latency_s: float = 20e-6
    optimizer_bytes_per_param: float = 20.0
    fixed_mem_gb: float = 1.0
    mem_usable_fraction: float = 0.9

    def eta(self, gpu: GpuType, model: ModelSpec) -> float:
        """Kernel efficiency of ``model`` on ``gpu`` (fraction of the matching dense peak)."""
        if model.precision == "fp32":
            return self.eta_fp32_by_arch[gpu.arch]
        nvlink = gpu.link.lower().startswith("nvlink")
        if gpu.arch in ("ampere", "hopper") and nvlink:
            return self.eta_llm
        return self.eta_half_by_arch[gpu.arch]


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


def model_shape(model: ModelSpec, calib: Calibration = DEFAULT_CALIBRATION) -> ModelShape:
    """Derive the cost-model constants of ``model`` (FLOPs, parameters, activation bytes).

    Transformers use Megatron's FLOP count (per layer forward ``2·s·P_layer + 4·s²·h``; output
    layer ``2·s·h·V``), which gives the ``6N + 12·L·h·s`` FLOPs per token of anchor A1, and
    Korthikanti et al.'s activation bytes. Other jobs spread the catalog's forward FLOPs,
    parameters and activation bytes evenly over their layers.
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
            traffic_bytes=0.0,                 # fused kernels: folded into eta_llm
            act_layer=s * h * (34 + attn_score) * scale,     # s·b·h·(34 + 5as/h)
            act_rc=2.0 * s * h * scale,        # full recompute keeps each layer's input
            logits_act=4.0 * s * V,            # fp32 logits for the loss
            boundary_bytes=float(s * h * dtype),
            # 2 all-reduces forward + 2 backward of s·h elements; ring moves 2(t-1)/t of each
            tp_comm_bytes=4.0 * 2.0 * s * h * dtype,
            dtype_bytes=dtype, state_w=w, state_g=g, state_o=o,
            fixed_mem_bytes=fixed, host_time_s=host, transformer=True)
    act = float(model.act_bytes_per_sample)
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

    flops: np.ndarray          # achievable FLOP/s = dense peak at the model's precision × η
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
        flops=np.array([g.peak_tflops(model.precision) * 1e12 * calib.eta(g, model)
                        for g in gpus]),
        mem_bytes=np.array([g.memory_gb * GB * calib.mem_usable_fraction for g in gpus]),
        hbm_bw=np.array([g.memory_bw_gbps * GB for g in gpus]),
        intra_bw=np.asarray(intra_bw_gbps, dtype=float) * GB / 2.0,   # bidirectional → one way
        inter_bw=np.asarray(inter_bw_gbps_per_node, dtype=float) * GB / gpn,
        gpus_per_node=gpn)


def _overlap(a, b, gamma: float):
    """Smooth maximum ``(a^γ + b^γ)^(1/γ)`` of two overlapping durations (Pollux's form)."""
    if not np.any(b):
        return a
    return (a ** gamma + b ** gamma) ** (1.0 / gamma)


def layer_time_per_sample(shape: ModelShape, calib: Calibration, hw: PoolArrays, pool, tp,
                          rc) -> np.ndarray:
    """Time of one layer for one sample on ``pool`` (compute + TP all-reduces), seconds."""
    tp = np.asarray(tp, dtype=np.float64)
    mult = np.where(rc, 4.0, 3.0)
    tp_share = np.where(rc, 1.5, 1.0) * (tp - 1) / tp
    return (mult * shape.layer_fwd_flops / (tp * hw.flops[pool])
            + shape.traffic_bytes / (tp * hw.hbm_bw[pool])
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
            Stages 0-2 cost the same time and stage 2 needs the least memory of them, so
            ``(2, 3)`` decides feasibility and time; the planner asks for all four only for the
            rows it keeps.

    Returns:
        dict of row arrays: ``step_time_s`` with ZeRO stage 0–2 (identical times),
        ``zero3_extra_s`` (extra time of ZeRO-3: it moves 1.5× the data-parallel volume),
        ``samples_per_iter``, ``mem_a``/``mem_b`` (bytes per GPU, shape (R, len(zero_stages))),
        ``split_capped`` (memory moved layers away from the speed-proportional split of a mixed
        pipeline), ``layers_a``/``layers_b`` (layers on the largest stage of each part) and
        ``batch_a``/``batch_b`` (samples per replica on each part).
    """
    f8 = np.float64
    L = shape.layers
    homo, dpsplit, ppsplit = kind == KIND_HOMO, kind == KIND_DP_SPLIT, kind == KIND_PP_SPLIT
    pb = np.where(homo, pa, pb)
    tp = tp.astype(f8)
    m = m.astype(f8)
    pp = np.maximum(ppa + ppb, 1).astype(f8)
    dpa_f = dpa.astype(f8)
    dpb_f = np.maximum(dpb, 1).astype(f8)
    d = np.where(dpsplit, dpa + dpb, dpa).astype(f8)          # replicas in total
    samples = d * batch if per_replica_batch else np.full_like(d, float(batch))
    rep_batch = np.full_like(d, float(batch)) if per_replica_batch else np.ceil(samples / d)

    # Per-sample time of one layer (compute + TP all-reduces on the intra-node link) and of
    # the output layer, on each part.
    u_a = layer_time_per_sample(shape, calib, hw, pa, tp, rc)
    u_b = layer_time_per_sample(shape, calib, hw, pb, tp, rc)
    g_a = 3.0 * shape.logits_fwd_flops / (tp * hw.flops[pa])
    g_b = 3.0 * shape.logits_fwd_flops / (tp * hw.flops[pb])
    o = 3.0 * calib.launch_overhead_s

    def link(pool, span):
        """One-way bandwidth of a group of ``span`` GPUs of ``pool`` (intra-node if it fits)."""
        return np.where(span <= hw.gpus_per_node[pool], hw.intra_bw[pool], hw.inter_bw[pool])

    inter_ab = np.minimum(hw.inter_bw[pa], hw.inter_bw[pb])
    # Rank layout: tp innermost, then pp, then dp. A replica's pipeline stays inside a node
    # when tp·pp GPUs fit in one; a mixed pipeline always crosses nodes at the type boundary.
    c_a = np.where(ppsplit, inter_ab, link(pa, tp * pp))
    c_b = np.where(ppsplit, inter_ab, link(pb, tp * pp))
    c_a = np.where(pp > 1, 2.0 * shape.boundary_bytes / c_a, 0.0)   # per sample, fwd + bwd
    c_b = np.where(pp > 1, 2.0 * shape.boundary_bytes / c_b, 0.0)

    # ------------------------------------------------------------------ pipeline time
    # Homogeneous replicas: 1F1B with ceil(L/pp) layers on the largest stage,
    # T = (m-1)·max_i(T_i + c_i) + Σ_i(T_i + c_i), linear in the micro-batch size b.
    lmax = np.ceil(L / pp)
    k_a = ((m - 1) * (lmax * u_a + g_a + c_a) + L * u_a + g_a + (pp - 1) * c_a) / m
    k_b = ((m - 1) * (lmax * u_b + g_b + c_b) + L * u_b + g_b + (pp - 1) * c_b) / m
    beta = ((m - 1) * lmax + L) * o                      # launch overhead, per replica
    t_homo = k_a * rep_batch + beta

    # Data-parallel split: replicas on A take B_a samples, on B take B_b, with
    # dpa·B_a + dpb·B_b = samples and k_a·B_a ≈ k_b·B_b (speed-proportional); integer B_a.
    ba, bb = rep_batch.copy(), rep_batch.copy()
    m_side_a, m_side_b = m.copy(), m.copy()          # micro-batches per side (mixed dp)
    t_split = t_homo.copy()
    ds = np.flatnonzero(dpsplit)
    if ds.size:
        S, A, Bq, ka, kb, be = samples[ds], dpa_f[ds], dpb_f[ds], k_a[ds], k_b[ds], beta[ds]
        t_bal = (S + A * be / ka + Bq * be / kb) / (A / ka + Bq / kb)
        ba_cont = (t_bal - be) / ka
        best_t, best_a = np.full(ds.size, np.inf), np.ones(ds.size)
        ba_hi = np.maximum(np.floor((S - Bq) / A), 1.0)
        for cand in (np.floor(ba_cont), np.ceil(ba_cont)):
            cand = np.clip(cand, 1.0, ba_hi)
            t = np.maximum(ka * cand, kb * np.ceil(np.maximum(S - A * cand, 1.0) / Bq)) + be
            better = t < best_t
            best_t, best_a = np.where(better, t, best_t), np.where(better, cand, best_a)
        best_b = np.ceil(np.maximum(S - A * best_a, 1.0) / Bq)
        # A side with fewer samples than micro-batches runs one-sample micro-batches, as many
        # as it has samples (per-type micro-batch counts, as Metis does): price each side with
        # its own count m_x = min(m, batch_x).
        def side(u, g, c, batch):
            mx = np.minimum(m[ds], batch)
            lm, P = lmax[ds], pp[ds]
            k = ((mx - 1) * (lm * u + g + c) + L * u + g + (P - 1) * c) / mx
            return k * batch + ((mx - 1) * lm + L) * o, mx
        ta, ma_ = side(u_a[ds], g_a[ds], c_a[ds], best_a)
        tb, mb_ = side(u_b[ds], g_b[ds], c_b[ds], best_b)
        t_split[ds] = np.maximum(ta, tb)
        ba[ds], bb[ds] = best_a, best_b
        m_side_a[ds], m_side_b[ds] = ma_, mb_

    # Pipeline split: ppa stages of A then ppb of B. Each B stage takes lb layers and the A
    # stages share the other L - ppb·lb (so the largest holds ceil((L - ppb·lb)/ppa)); lb is
    # the integer next to the speed-proportional split (la·u_a = lb·u_b) with the smaller
    # bottleneck stage, then moved by memory below.
    ppa_f, ppb_f = np.maximum(ppa, 1).astype(f8), np.maximum(ppb, 1).astype(f8)
    lb_hi = np.maximum(np.floor((L - ppa_f) / ppb_f), 1)

    def a_layers(lb):
        return np.ceil((L - ppb_f * lb) / ppa_f)

    lb = np.ones_like(d)
    ps = np.flatnonzero(ppsplit)
    if ps.size:
        ua, ub, gb, pa_, pb_, hi = u_a[ps], u_b[ps], g_b[ps], ppa_f[ps], ppb_f[ps], lb_hi[ps]
        lb_cont = L / (pb_ + pa_ * ub / ua)
        lo_, up_ = np.clip(np.floor(lb_cont), 1, hi), np.clip(np.ceil(lb_cont), 1, hi)
        worse = (np.maximum(np.ceil((L - pb_ * lo_) / pa_) * ua, lo_ * ub + gb)
                 > np.maximum(np.ceil((L - pb_ * up_) / pa_) * ua, up_ * ub + gb))
        lb[ps] = np.where(worse, up_, lo_)
    lb_speed = lb
    la = a_layers(lb)
    b_mb = rep_batch / m

    # ------------------------------------------------------------------ memory per GPU
    w, g, o_ = shape.state_w, shape.state_g, shape.state_o
    per_stage = {0: lambda: np.full_like(d, w + g + o_), 1: lambda: w + g + o_ / d,
                 2: lambda: w + (g + o_) / d, 3: lambda: (w + g + o_) / d}
    zero_factors = np.stack([per_stage[z]() for z in zero_stages], axis=-1)  # bytes/param
    z2 = zero_stages.index(2)          # memory decisions below are taken at ZeRO-2

    def stage_mem(layers, tables, micro_b, inflight, logits, sel=slice(None)):
        """Bytes per GPU of a stage with ``tables`` embedding/output tables, per ZeRO stage.

        Array arguments are full rows; ``sel`` restricts the result to some rows."""
        t = tp[sel]
        params = (layers[sel] * shape.layer_params + np.broadcast_to(tables, t.shape if
                  np.ndim(tables) == 0 else tables.shape)[sel] * shape.embed_params) / t
        mb = micro_b[sel]
        # Tensor parallelism runs with sequence parallelism (Megatron's default): every
        # activation is split over the tp ranks (Korthikanti et al., "TP + SP" row).
        full_layer = mb * shape.act_layer / t
        act = np.where(rc[sel], mb * shape.act_rc / t * layers[sel] * inflight[sel] + full_layer,
                       full_layer * layers[sel] * inflight[sel])
        act = act + np.where(logits[sel], mb * shape.logits_act / t, 0.0)
        return params[:, None] * zero_factors[sel] + (act + shape.fixed_mem_bytes)[:, None]

    def layer_mem_z2(micro_b, inflight, sel):
        """Bytes one more layer adds to a stage at ZeRO-2, for the rows ``sel``."""
        t = tp[sel]
        act = micro_b[sel] * np.where(rc[sel], shape.act_rc, shape.act_layer) / t
        return shape.layer_params / t * zero_factors[sel, z2] + act * inflight[sel]

    single = pp == 1
    one = np.ones_like(m)
    mb_a = np.ceil(np.where(dpsplit, ba, rep_batch) / m_side_a)
    mb_b = np.ceil(np.where(dpsplit, bb, rep_batch) / m_side_b)
    infl0 = np.minimum(pp, m_side_a)            # 1F1B: stage i holds min(pp - i, m)
    infl_b = np.where(ppsplit, np.minimum(ppb, m), np.minimum(pp, m_side_b))
    tables_first = np.where(single & ~ppsplit, 2.0, 1.0)

    if ps.size:
        # A mixed-pipeline stage that would not fit hands layers to the other type (judged at
        # ZeRO-2, which costs no extra time). Room = memory left by a stage's fixed part. For
        # B this is conservative: the fixed part of its last stage (output table, logits) with
        # the per-layer activations of its first (the most micro-batches in flight).
        yes, no_ = np.ones(d.shape, dtype=bool), np.zeros(d.shape, dtype=bool)
        zero_layers = np.zeros_like(la)
        room_a = hw.mem_bytes[pa[ps]] - stage_mem(zero_layers, one, mb_a, infl0, no_, ps)[:, z2]
        room_b = hw.mem_bytes[pb[ps]] - stage_mem(zero_layers, one, mb_b, one, yes, ps)[:, z2]
        fit_a = np.floor(room_a / layer_mem_z2(mb_a, infl0, ps))
        fit_b = np.floor(room_b / layer_mem_z2(mb_b, infl_b, ps))
        lb_ps = lb[ps]
        lb_ps = np.where(la[ps] > fit_a, np.minimum(np.ceil((L - ppa_f[ps] * np.maximum(fit_a, 0))
                                                           / ppb_f[ps]), lb_hi[ps]), lb_ps)
        lb_ps = np.where((lb_ps > fit_b) & (fit_b >= 1), fit_b, lb_ps)
        lb = lb.copy()
        lb[ps] = lb_ps
        la = a_layers(lb)

    lay_a = np.where(ppsplit, la, lmax)
    lay_b = np.where(ppsplit, lb, lmax)
    no = np.zeros(d.shape, dtype=bool)
    # Part A: first stage (embedding, most in-flight micro-batches); for one-type replicas
    # also the last stage (output layer and logits, one micro-batch in flight).
    mem_a = stage_mem(lay_a, tables_first, mb_a, infl0, single & ~ppsplit)
    # The last stage differs from the first only in one-type pipelines (pp > 1): a single
    # stage is both, and a mixed pipeline's last stage is on part B.
    deep = np.flatnonzero(~single & ~ppsplit)
    if deep.size:
        mem_a[deep] = np.maximum(mem_a[deep],
                                 stage_mem(lay_a, one, mb_a, one, ~ppsplit, deep))
    # Part B: like A for dp-split replicas; for a mixed pipeline, its first stage (index ppa,
    # min(ppb, m) in flight, no table) and the pipeline's last stage.
    mem_b = mem_a.copy()                     # a one-type replica: part B is part A
    mix = np.flatnonzero(~homo)
    if mix.size:
        mem_b[mix] = np.maximum(
            stage_mem(lay_b, np.where(ppsplit, 0.0, tables_first), mb_b, infl_b,
                      single & ~ppsplit, mix),
            stage_mem(lay_b, one, mb_b, one, ~no, mix))

    stage_a = la * (u_a * b_mb + o)                         # the largest A stage
    stage_b = lb * (u_b * b_mb + o) + g_b * b_mb            # B stages; the last has the logits
    c_mb = c_a * b_mb
    t_ppsplit = ((m - 1) * (np.maximum(stage_a, stage_b) + c_mb)
                 + (L - ppb_f * lb) * (u_a * b_mb + o) + ppb_f * lb * (u_b * b_mb + o)
                 + g_b * b_mb + (pp - 1) * c_mb)
    t_pipe = np.where(ppsplit, t_ppsplit, t_split)       # t_split is t_homo on one-type rows

    # ------------------------------------------------------------------ gradient sync, optimizer
    # Ring all-reduce of each stage's gradients over its data-parallel group on the slowest
    # link: 2(d-1)/d · bytes / BW. Under the layout (tp, then pp, then dp) a group's ranks lie
    # tp·pp apart, so it stays inside a node only when all tp·pp·d GPUs do; a mixed-dp group
    # always crosses nodes.
    p_a = (lay_a * shape.layer_params + tables_first * shape.embed_params) / tp
    p_b = (lay_b * shape.layer_params + tables_first * shape.embed_params) / tp
    # In a mixed pipeline each side's groups only span that side's tp·pp_x·d GPUs.
    span_a = np.where(ppsplit, tp * ppa_f * d, tp * pp * d)
    span_b = np.where(ppsplit, tp * ppb_f * d, tp * pp * d)
    bw_a = np.where(dpsplit, inter_ab, link(pa, span_a))
    bw_b = np.where(dpsplit, inter_ab, link(pb, span_b))
    ring = np.where(d > 1, 2.0 * (d - 1) / d * shape.state_g, 0.0)
    t_dp = np.maximum(ring * p_a / bw_a, np.where(homo, 0.0, ring * p_b / bw_b))
    t_dp = t_dp + np.where(d > 1, calib.collective_latency_s * 2.0 * (d - 1), 0.0)
    opt = calib.optimizer_bytes_per_param
    t_opt = np.maximum(opt * p_a / hw.hbm_bw[pa], np.where(homo, 0.0, opt * p_b / hw.hbm_bw[pb]))

    return {
        # Eager PyTorch launches kernels asynchronously: the host runs ahead of the GPU, so an
        # iteration takes about the longer of the GPU's work and the host's launching, combined
        # as a smooth maximum the way Pollux combines overlapped compute and communication.
        "step_time_s": _overlap(t_pipe + t_dp + t_opt, shape.host_time_s, calib.overlap_gamma),
        "zero3_extra_s": 0.5 * np.where(d > 1, t_dp, 0.0),
        "samples_per_iter": samples,
        "mem_a": mem_a,
        "mem_b": mem_b,
        # True where memory moved layers away from the speed-proportional pipeline split.
        "split_capped": ppsplit & (lb != lb_speed),
        "layers_a": lay_a,
        "layers_b": lay_b,
        "batch_a": np.where(dpsplit, ba, rep_batch),
        "batch_b": np.where(dpsplit, bb, rep_batch),
    }
