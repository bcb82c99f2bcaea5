"""The learned candidate ranker: a permutation-equivariant network and its SB3 policies.

SB3's default policy head is ``Linear(latent, K)``: logit ``i`` is tied to slot ``i``, so what
it learns about "the candidate in slot 7" does not carry over to the candidate in slot 8, nor
to a round with other candidates. The ranker instead scores every candidate with **one shared
network** from the candidate's own features plus a **pooled context** of the round (mean and
max of all candidates' embeddings, the cluster's per-type state pooled over types, the global
features) — the "kernel" design of RLScheduler, here in the Deep Sets form:

    h_i   = φ(x_i)                                    per candidate (shared weights)
    c     = ρ(mean_i h_i, max_i h_i, pool(cluster), global)
    s_i   = ψ(h_i, c)                                 per candidate logit
          = ψ(h_i, max_{i' ∈ job(i)} h_i', c)         with ``job_context`` (imitation)
    value = V(c)

Permuting the slots permutes the logits the same way; no weight depends on K or on the number
of GPU types (the per-type GPU-count columns are left out of x_i, the cluster state is pooled
over types), so a ranker trained on one cluster and K runs on any other (``Ranker.load``).

* ``RankerNet`` — the network; ``forward(cand, valid, cluster, glob, job=None)`` on
  (B, K, n_in) batches of ``ranker_inputs``.
* ``RankerPolicy`` — SB3 ``ActorCriticPolicy`` for ``hsched/Rank-v0`` (``MultiBinary(K)``:
  one Bernoulli keep-logit per slot; PPO).
* ``MaskableRankerPolicy`` — sb3-contrib ``MaskableActorCriticPolicy`` for
  ``hsched/Schedule-v0`` (``Discrete(K + 1)``: a logit per slot plus a commit logit from the
  context; MaskablePPO).
* ``Ranker`` — inference: ``Ranker.load(path).keep(obs, env)`` → keep bits; ``save_ranker``
  writes the network's weights and configuration (``torch.save`` of tensors and plain values,
  read back with ``weights_only=True``: no code is unpickled), ``load_ranker_net`` reads it,
  every field checked first (``agents.ranker_file``).
"""

from __future__ import annotations

import functools
import warnings
import weakref
from pathlib import Path

import numpy as np
import torch as th
from gymnasium import spaces
from stable_baselines3.common.policies import ActorCriticPolicy
from stable_baselines3.common.torch_layers import BaseFeaturesExtractor
from torch import nn

from agents.ranker_file import FORMAT, check_meta, check_weights, read_ranker_file
from hsched_env.errors import ConfigError, is_real_number, is_whole_number, show
from hsched_env.envs.features import (CANDIDATE_FEATURES, CLUSTER_COLUMN, CLUSTER_FEATURES,
                                      GLOBAL_FEATURES, JOB_FEATURES, CandidateColumns)

#: Logit given to empty slots (keep probability ~2e-9).
PAD_LOGIT = -20.0
#: ``gate_candidates`` that solves every round whole: ``scripts/calibrate_gate.py`` found no
#: probed round size at which ranking paid.
GATE_NEVER = 2 ** 62
#: ``max_kept_fraction`` of a file with a candidate gate that does not set its own: a round in
#: which the ranker would keep more than this share of the candidates is solved whole. Above
#: the shipped file's candidate gate, where it pays, it keeps 9–12% of a round on average
#: (at most 24%, a burst's first round; bursts of 550–8,000 jobs on ``large-2048``); on
#: overloaded Philly windows of ``sia-64`` and ``gavel-108``, which it was not trained on,
#: 24–55%, and its rounds keeping more than 35% recalled 0.37–0.86 of the LP's support on
#: average (BENCHMARKS.md, "The unsure gate"). Below a candidate gate, rounds have few
#: candidates per job and one kept per job is already a large share: a file without a
#: candidate gate has no unsure gate unless it sets one. The shipped file sets its own, 0.35
#: (since session 40): it keeps 26–28% of a 550-job burst's first round on training seeds,
#: where it recalls 0.95–0.98 of the LP's support (BENCHMARKS.md,
#: "Session 40: the unsure gate chosen for the shipped file").
DEFAULT_MAX_KEPT_FRACTION = 0.25
#: Rounds solved whole without inference after an unsure round (then it scores again); each
#: further unsure round in a row doubles it, up to ``MAX_UNSURE_BACKOFF``.
DEFAULT_UNSURE_BACKOFF = 4
MAX_UNSURE_BACKOFF = 64
#: What a ranker's keep bits do (``Ranker(mode=...)``): ``"prune"`` — restrict the LP solve
#: to them (the file's ``prune`` scope, ``hsched/Rank-v0``); ``"seed"`` — start the whole
#: LP's column generation from them (``prune="seed"``): the pure LP's optimum, certified.
RANKER_MODES = ("prune", "seed")
#: ``seed_fraction``: the share of a round's candidates, best-scored first, that starts the
#: LP's column generation (with each job's best-scored one) in seed mode, in prune mode's
#: unsure rounds and in its audits (``audit_start="seed"``). Chosen on training seeds 11 and 12 of the ``large-family`` bursts
#: (BENCHMARKS.md, "Session 39: the ranker as column generation's start"); without a time
#: limit any value gives the same optimum, only the time changes.
DEFAULT_SEED_FRACTION = 0.05
#: ``audit_recall``: an audited round (``Ranker(audit_every=N)``) fails its audit when the
#: candidates the ranker would have kept hold less than this share of the whole LP's support:
#: issue 12's recall target.
DEFAULT_AUDIT_RECALL = 0.9
#: ``audit_start``: what starts an audited round's whole-LP column generation: ``"seed"`` —
#: its best-scored ``seed_fraction`` of the round and each job's best, as an unsure round's;
#: ``"kept"`` — the set the ranker would have kept; ``"own"`` — the LP's own start
#: (BENCHMARKS.md, "Session 57: where an audit's column generation starts"). ``"seed"`` costs
#: least: a small first LP, and few pricing rounds after it.
AUDIT_STARTS = ("seed", "kept", "own")
DEFAULT_AUDIT_START = "seed"


def pair_recall(support: np.ndarray, kept: np.ndarray) -> float:
    """The share of the ``(job id, row)`` pairs ``support`` ((n, 2), n > 0) found in
    ``kept`` ((m, 2))."""
    span = int(max(support[:, 1].max(), kept[:, 1].max() if kept.size else 0)) + 1
    return float(np.isin(support[:, 0] * span + support[:, 1],
                         kept[:, 0] * span + kept[:, 1]).mean())


class _EpisodeGate:
    """A ``Ranker``'s state for one episode: its back-off, and its audits."""

    __slots__ = ("left", "unsure_last", "audit_last", "ranked", "audited", "unauditable")

    def __init__(self) -> None:
        self.left = 0            # rounds of the current back-off still to solve whole
        self.unsure_last = 0     # the last unsure round's back-off (0: the last scored was sure)
        self.audit_last = 0      # the last failed audit's back-off (0: the last audit passed)
        self.ranked = 0          # rounds pruned or audited since the episode began or an
        #                          audit failed (every audit_every-th is audited, the first too)
        self.audited = None      # the audited round's would-be kept (job, row) pairs and
        #                          the environment's ``decisions`` then, until its verdict
        self.unauditable = False  # the file's audits found the episode's LP without an
        #                          allocation to read: none more in this episode


#: Inputs the ranker derives per candidate from the state of the candidate's own GPU types
#: (after its job and candidate features): the cluster features of its types weighted by its
#: GPUs on each, and whether it fits in the GPUs free now. Type-independent (a sum over the
#: candidate's types), so the ranker still runs on any cluster; without them it cannot tell
#: a candidate on a busy type from one on an idle type, which is most of where the LP puts
#: a job that does not keep its current candidate.
TYPE_INPUTS = tuple(f"own_{name}" for name in CLUSTER_FEATURES) + ("fits_free",)


@functools.lru_cache(maxsize=None)
def _type_columns(num_types: int) -> tuple[th.Tensor, slice]:
    """On a cluster of ``num_types`` GPU types: the columns of the (K, F) slot features that
    do not depend on the types (the job and candidate features), and the per-type
    ``gpus:<type>`` columns."""
    cols = CandidateColumns([f"type{i}" for i in range(num_types)])
    return th.as_tensor(cols.type_independent(), dtype=th.long), cols.gpus


def ranker_inputs(rows: th.Tensor, cluster: th.Tensor) -> th.Tensor:
    """The ranker's per-candidate inputs, (B, M, ``RankerNet.n_in``): the type-independent
    columns of the slot features ``rows`` (B, M, F), then ``TYPE_INPUTS`` from the per-type
    ``gpus:<type>`` columns and ``cluster`` (B, T, ``len(CLUSTER_FEATURES)``)."""
    index, gpus = _type_columns(int(cluster.shape[-2]))
    g = rows[..., gpus]                            # GPUs of each type ÷ the type's GPUs
    w = g * cluster[..., CLUSTER_COLUMN["capacity_frac"]].unsqueeze(-2)   # ∝ GPUs per type
    w = w / w.sum(dim=-1, keepdim=True).clamp(min=1e-12)
    own = th.matmul(w, cluster)                                          # (B, M, 4)
    free = cluster[..., CLUSTER_COLUMN["free_frac"]].unsqueeze(-2)
    fits = (g <= free + 1e-6).all(dim=-1, keepdim=True).to(rows.dtype)
    return th.cat([rows.index_select(-1, index.to(rows.device)), own, fits], dim=-1)


class RoundScratch:
    """Grow-only scratch tensors for scoring one round (``round_inputs``,
    ``RankerNet.score_round``).

    On a round of ~150,000 candidates each (N, 64) float32 intermediate is 38 MB; a fresh one
    per layer costs more in page faults than the matrix product that fills it (glibc's
    allocator maps blocks over 32 MB anew every time), so one round's inference took 5× the
    arithmetic. The buffers are kept between calls and reused (views of their first N rows);
    they grow by a quarter beyond the largest round seen, and ``clear()`` gives the memory back.
    """

    def __init__(self) -> None:
        self._buffers: dict[str, th.Tensor] = {}

    def _holds(self, name: str, rows: int, cols: int) -> bool:
        buf = self._buffers.get(name)
        return buf is not None and buf.shape[0] >= rows and buf.shape[1] == cols

    def get(self, name: str, rows: int, cols: int) -> th.Tensor:
        """A (rows, cols) float32 view of buffer ``name``; its contents are undefined."""
        if not self._holds(name, rows, cols):
            self._buffers[name] = th.empty(rows + rows // 4, cols, dtype=th.float32)
        return self._buffers[name][:rows]

    def reserve(self, name: str, rows: int, cols: int) -> None:
        """Allocate buffer ``name`` for at least ``rows`` rows now and write it once, so that
        its pages are mapped before a round needs them (a first large round otherwise pays
        the page faults: a process's first burst round of ~37,000 candidates took 42.7–52.2 ms
        of inference without the reservation and 27.2–28.1 ms with it, in two A/B runs)."""
        if not self._holds(name, rows, cols):
            self._buffers[name] = th.zeros(rows, cols, dtype=th.float32)

    def shapes(self) -> dict[str, tuple[int, int]]:
        """Each buffer's (rows, cols)."""
        return {name: tuple(buf.shape) for name, buf in self._buffers.items()}

    def clear(self) -> None:
        self._buffers.clear()


def reserve_round(scratch: RoundScratch, rows: int, num_types: int, hidden: int) -> None:
    """Reserve ``scratch``'s buffers for ``round_inputs`` and ``RankerNet.score_round`` on
    rounds of up to ``rows`` candidates, on a cluster of ``num_types`` GPU types, for a net of
    width ``hidden``: every buffer the two functions use, mapped now (``RoundScratch.reserve``)."""
    index, _ = _type_columns(int(num_types))
    n_idx = int(index.numel())
    for name, cols in (("inputs", n_idx + len(TYPE_INPUTS)), ("columns", n_idx),
                       ("a", hidden), ("h", hidden)):
        scratch.reserve(name, rows, cols)


def round_inputs(rows: th.Tensor, cluster: th.Tensor,
                 scratch: RoundScratch | None = None) -> th.Tensor:
    """``ranker_inputs`` of one round without the batch dimension: ``rows`` (N, F) slot
    features, ``cluster`` (T, ``len(CLUSTER_FEATURES)``); (N, ``RankerNet.n_in``), the same
    numbers as ``ranker_inputs(rows[None], cluster[None])[0]``, written into ``scratch``'s
    buffer (valid until its next use) when one is given."""
    scratch = scratch or RoundScratch()
    index, gpus = _type_columns(int(cluster.shape[-2]))
    N, n_idx = rows.shape[0], int(index.numel())
    out = scratch.get("inputs", N, n_idx + len(TYPE_INPUTS))
    g = rows[:, gpus]                               # GPUs of each type ÷ the type's GPUs
    w = g * cluster[:, CLUSTER_COLUMN["capacity_frac"]]                  # ∝ GPUs per type
    w /= w.sum(dim=-1, keepdim=True).clamp(min=1e-12)
    th.index_select(rows, 1, index, out=scratch.get("columns", N, n_idx))
    out[:, :n_idx] = scratch.get("columns", N, n_idx)
    out[:, n_idx:n_idx + len(CLUSTER_FEATURES)] = th.matmul(w, cluster)
    free = cluster[:, CLUSTER_COLUMN["free_frac"]]
    out[:, -1] = (g <= free + 1e-6).all(dim=-1)
    return out


def _mlp(sizes: list[int]) -> nn.Sequential:
    layers: list[nn.Module] = []
    for a, b in zip(sizes[:-1], sizes[1:]):
        layers += [nn.Linear(a, b), nn.ReLU()]
    return nn.Sequential(*layers[:-1])          # no activation after the last layer


class RankerNet(nn.Module):
    """Deep-Sets candidate scorer (see the module docstring).

    Args:
        hidden: Width of every hidden layer and of the embeddings.
        commit: Also emit a commit logit (select mode): output (B, K + 1).
        job_context: Also pool each job's candidates (the max of their embeddings) into
            ``ψ``'s input, so a candidate is scored against its job's alternatives (which
            one the LP picks for a job depends on what else the job could run):
            ``s_i = ψ(h_i, max_{i' ∈ job(i)} h_i', c)``. Needs the job of every candidate
            (``forward(..., job=)``), which ``Ranker`` and imitation supply; SB3's policies
            see the flat observation only, so they use ``job_context=False``.
    """

    n_in = len(JOB_FEATURES) + len(CANDIDATE_FEATURES) + len(TYPE_INPUTS)
    n_cluster = 2 * len(CLUSTER_FEATURES)
    n_global = len(GLOBAL_FEATURES)

    def __init__(self, hidden: int = 64, commit: bool = False,
                 job_context: bool = False) -> None:
        if not (is_whole_number(hidden) and hidden >= 1):
            raise ConfigError(f"must be a whole number >= 1 (the layers' width), got "
                              f"{show(hidden)}", field="hidden")
        super().__init__()
        self.hidden, self.commit, self.job_context = int(hidden), commit, bool(job_context)
        H = self.hidden
        self.phi = _mlp([self.n_in, H, H])
        self.rho = _mlp([2 * H + self.n_cluster + self.n_global, H, H])
        self.psi = _mlp([(3 if self.job_context else 2) * H, H, 1])
        self.commit_head = _mlp([H, H, 1]) if commit else None
        with th.no_grad():                      # start near "keep with probability 1/2"
            self.psi[-1].weight.mul_(0.01)
            self.psi[-1].bias.zero_()

    def forward(self, cand: th.Tensor, valid: th.Tensor, cluster: th.Tensor,
                glob: th.Tensor, job: th.Tensor | None = None) -> tuple[th.Tensor, th.Tensor]:
        """Logits (B, K) — (B, K + 1) with ``commit`` — and the context (B, hidden).

        Args:
            cand: (B, K, n_in) candidate inputs (``ranker_inputs``).
            valid: (B, K) 1 for slots holding a candidate.
            cluster: (B, T, 4) per-type cluster features.
            glob: (B, 7) global features.
            job: (B, K) int64, each candidate's job as an index 0..J-1 within its round
                (any value on empty slots); needed with ``job_context``, ignored without.
        """
        h = self.phi(cand)                                           # (B, K, H)
        m = (valid > 0.5).unsqueeze(-1)
        if cand.shape[1] and bool(m.all()):        # no padding (inference on one round)
            mean, mx = h.mean(dim=1), h.max(dim=1).values
        else:
            n = m.sum(dim=1).clamp(min=1)
            mean = (h * m).sum(dim=1) / n
            mx = th.where(m, h, th.full_like(h, -1e4)).max(dim=1).values
            mx = th.where(m.any(dim=1), mx, th.zeros_like(mx))
        pooled_cluster = th.cat([cluster.mean(dim=1), cluster.max(dim=1).values], dim=-1)
        ctx = self.rho(th.cat([mean, mx, pooled_cluster, glob], dim=-1))  # (B, H)
        # ψ's first layer on [h_i, job max, c] as three products, so that the context's is
        # computed once per round and the job max's once per job rather than per candidate
        # (the same function as ψ on the concatenation; 1.9× less work at inference)
        H = self.hidden
        first = self.psi[0]
        W = first.weight
        z = th.matmul(h, W[:, :H].t())
        if self.job_context:
            if job is None:
                raise ValueError("this RankerNet scores candidates against their job's "
                                 "(job_context=True): pass job=")
            pooled, flat = job_pool(h, m, job)
            B, K = h.shape[:2]
            z = z + th.matmul(pooled, W[:, H:2 * H].t())[flat].reshape(B, K, H)
        z = z + (th.matmul(ctx, W[:, -H:].t()) + first.bias).unsqueeze(1)
        s = self.psi[1:](z).squeeze(-1)
        s = th.where(m.squeeze(-1), s, th.full_like(s, PAD_LOGIT))
        if self.commit_head is not None:
            s = th.cat([s, self.commit_head(ctx)], dim=-1)
        return s, ctx

    def score_round(self, x: th.Tensor, cluster: th.Tensor, glob: th.Tensor,
                    job: th.Tensor | None = None,
                    scratch: RoundScratch | None = None) -> th.Tensor:
        """Inference on one round with no empty slots: the keep logits (N,) of ``x`` (N, n_in)
        — ``forward``'s, up to float rounding (the same function; ``forward(x[None],
        ones, cluster[None], glob[None], job[None])[0][0]``), several times faster on large
        rounds. ``cluster`` (T, 4), ``glob`` (n_global,), ``job`` (N,) int64 labels of the
        candidates' jobs, any dense labelling 0..J-1 (needed with ``job_context``). Call under
        ``torch.no_grad()``. Differences from ``forward``: the layers write into ``scratch``'s
        reused buffers, the max over candidates is taken over the per-job maxima, and ψ's
        first layer adds its job and context products (computed once per job) to the
        per-candidate product in place. No commit logit."""
        if self.job_context and job is None:
            raise ValueError("this RankerNet scores candidates against their job's "
                             "(job_context=True): pass job=")
        scratch = scratch or RoundScratch()
        N, H = x.shape[0], self.hidden
        if N == 0:
            return th.zeros(0)
        phi0, phi1 = self.phi[0], self.phi[2]
        first, last = self.psi[0], self.psi[2]
        a = th.addmm(phi0.bias, x, phi0.weight.t(), out=scratch.get("a", N, H)).relu_()
        h = th.addmm(phi1.bias, a, phi1.weight.t(), out=scratch.get("h", N, H))
        mean = h.mean(dim=0)
        if self.job_context:
            J = int(job.max()) + 1
            pooled = th.full((J, H), -1e4).scatter_reduce(0, job.unsqueeze(1).expand(-1, H), h,
                                                          reduce="amax")
            mx = pooled.max(dim=0).values
        else:
            mx = h.amax(dim=0)
        pooled_cluster = th.cat([cluster.mean(dim=0), cluster.max(dim=0).values])
        ctx = self.rho(th.cat([mean, mx, pooled_cluster, glob])[None])        # (1, H)
        W = first.weight
        c = th.matmul(ctx, W[:, -H:].t()) + first.bias                         # (1, H)
        z = scratch.get("a", N, H)                      # φ's hidden layer is no longer needed
        if self.job_context:
            per_job = th.addmm(c, pooled, W[:, H:2 * H].t())                   # (J, H)
            th.index_select(per_job, 0, job, out=z)
        else:
            z.copy_(c.expand(N, H))
        z.addmm_(h, W[:, :H].t()).relu_()
        return th.addmv(last.bias, z, last.weight[0])


def job_pool(h: th.Tensor, m: th.Tensor, job: th.Tensor) -> tuple[th.Tensor, th.Tensor]:
    """Per job, the max of the embeddings ``h`` (B, K, H) of its candidates: ``(pooled
    (B·J, H), flat (B·K,))``, ``pooled[flat]`` being each candidate's job's row (``m``
    (B, K, 1) marks the real candidates; ``job`` (B, K) their job index in the round; an
    empty slot reads job 0's row of its round)."""
    B, K, H = h.shape
    job = th.where(m.squeeze(-1), job.long(), th.zeros_like(job, dtype=th.long))
    J = int(job.max()) + 1 if job.numel() else 1
    flat = (job + th.arange(B, device=h.device).unsqueeze(1) * J).reshape(-1)     # (B·K,)
    masked = th.where(m, h, th.full_like(h, -1e4)).reshape(B * K, H)
    pooled = th.full((B * J, H), -1e4, dtype=h.dtype, device=h.device)
    pooled = pooled.scatter_reduce(0, flat.unsqueeze(1).expand(-1, H), masked, reduce="amax")
    return pooled, flat


def job_max(h: th.Tensor, m: th.Tensor, job: th.Tensor) -> th.Tensor:
    """(B, K, H): for each candidate, the max of the embeddings ``h`` of its job's candidates
    (0 on empty slots; see ``job_pool``)."""
    pooled, flat = job_pool(h, m, job)
    return th.where(m, pooled[flat].reshape(h.shape), th.zeros_like(h))


def dense_jobs(jobs: np.ndarray) -> np.ndarray:
    """Job ids (any integers) as indices 0..J-1 in order of first appearance."""
    _, first, inverse = np.unique(jobs, return_index=True, return_inverse=True)
    rank = np.empty(first.size, dtype=np.int64)
    rank[np.argsort(first, kind="stable")] = np.arange(first.size)
    return rank[inverse.reshape(-1)]


def job_labels(jobs: np.ndarray) -> tuple[np.ndarray, int]:
    """Job ids (any integers) as labels 0..J-1 in increasing id order, and J: ``dense_jobs``
    up to a relabelling, without a sort when the ids span at most a few times their count
    (a round's job ids do)."""
    jobs = np.asarray(jobs, dtype=np.int64).reshape(-1)
    if jobs.size == 0:
        return jobs, 0
    lo, hi = int(jobs.min()), int(jobs.max())
    if hi - lo > 4 * jobs.size:
        ids, inverse = np.unique(jobs, return_inverse=True)
        return inverse.reshape(-1).astype(np.int64), int(ids.size)
    present = np.zeros(hi - lo + 1, dtype=bool)
    present[jobs - lo] = True
    label = np.cumsum(present, dtype=np.int64) - 1
    return label[jobs - lo], int(label[-1]) + 1


def best_per_job(scores: np.ndarray, jobs: np.ndarray) -> np.ndarray:
    """Indices of each job's best-scored entry (ties: the first), in job order; entries with
    ``jobs < 0`` belong to no job. The same entries as the first of each job in
    ``np.lexsort((-scores, jobs))``, for finite scores."""
    sel = np.flatnonzero(jobs >= 0)
    if sel.size == 0:
        return sel
    label, J = job_labels(jobs[sel])
    s = scores[sel]
    best = np.full(J, -np.inf, dtype=s.dtype)
    np.maximum.at(best, label, s)
    tied = np.flatnonzero(s == best[label])
    first = np.full(J, sel.size, dtype=np.int64)
    np.minimum.at(first, label[tied], tied)
    return sel[first]


def rank_within_job(scores: np.ndarray, jobs: np.ndarray) -> np.ndarray:
    """Each entry's rank among its job's entries by score: 0 for the job's best, 1 for the
    next, ... (ties: the first first)."""
    order = np.lexsort((-scores, jobs))              # by job, best score first
    jo = jobs[order]
    first = np.r_[0, np.flatnonzero(np.diff(jo)) + 1]
    rank = np.empty(order.size, dtype=np.int64)
    rank[order] = np.arange(order.size) - np.repeat(first, np.diff(np.r_[first, order.size]))
    return rank


#: The observation's pieces, in the order ``SlotLayout`` flattens them.
LAYOUT_KEYS = ("candidates", "valid", "cluster", "global")


class SlotLayout:
    """Where the pieces of an environment's flattened observation are."""

    def __init__(self, observation_space: spaces.Dict) -> None:
        self.K = observation_space["valid"].shape[0]
        self.F = observation_space["candidates"].shape[0] // self.K
        self.T = observation_space["cluster"].shape[0] // len(CLUSTER_FEATURES)
        self.G = observation_space["global"].shape[0]
        #: column of ``within_fair_share`` in the (K, F) slot features
        self.share_col = CandidateColumns([f"type{i}" for i in range(self.T)])["within_fair_share"]
        self.sizes = (self.K * self.F, self.K, self.T * len(CLUSTER_FEATURES), self.G)

    def split(self, flat: th.Tensor):
        cand, valid, cluster, glob = th.split(flat, self.sizes, dim=-1)
        B = flat.shape[0]
        cluster = cluster.reshape(B, self.T, len(CLUSTER_FEATURES))
        return ranker_inputs(cand.reshape(B, self.K, self.F), cluster), valid, cluster, glob

    def from_obs(self, obs: dict) -> tuple[th.Tensor, ...]:
        """Tensors with a batch dimension of 1 from one (unbatched) observation."""
        flat = th.as_tensor(np.concatenate([np.asarray(obs[k], dtype=np.float32).reshape(-1)
                                            for k in LAYOUT_KEYS]))[None]
        return self.split(flat)


class SlotExtractor(BaseFeaturesExtractor):
    """Concatenates the observation in a fixed order: candidates, valid, cluster, global."""

    def __init__(self, observation_space: spaces.Dict) -> None:
        dim = sum(int(np.prod(observation_space[k].shape))
                  for k in ("candidates", "valid", "cluster", "global"))
        super().__init__(observation_space, features_dim=dim)

    def forward(self, observations: dict) -> th.Tensor:
        return th.cat([observations[k].reshape(observations[k].shape[0], -1)
                       for k in ("candidates", "valid", "cluster", "global")], dim=-1)


class _Extractor(nn.Module):
    """SB3 ``mlp_extractor`` stand-in: latent_pi = the logits, latent_vf = the context."""

    def __init__(self, layout: SlotLayout, net: RankerNet) -> None:
        super().__init__()
        self.layout, self.net = layout, net
        self.latent_dim_pi = layout.K + (1 if net.commit else 0)
        self.latent_dim_vf = net.hidden

    def forward(self, features: th.Tensor) -> tuple[th.Tensor, th.Tensor]:
        return self.net(*self.layout.split(features))

    def forward_actor(self, features: th.Tensor) -> th.Tensor:
        return self.forward(features)[0]

    def forward_critic(self, features: th.Tensor) -> th.Tensor:
        return self.forward(features)[1]


def _install(policy, commit: bool, hidden: int) -> None:
    """Put the ranker where SB3 builds its default networks (called from ``_build``)."""
    policy.mlp_extractor = _Extractor(SlotLayout(policy.observation_space),
                                      RankerNet(hidden=hidden, commit=commit))


class _RankerPolicyMixin:
    """What both SB3 policies share: ``RankerNet`` in place of SB3's MLP and action head."""

    commit = False

    def __init__(self, observation_space, action_space, lr_schedule, hidden: int = 64,
                 **kwargs) -> None:
        self.hidden = hidden
        kwargs.setdefault("features_extractor_class", SlotExtractor)
        kwargs.setdefault("ortho_init", False)
        super().__init__(observation_space, action_space, lr_schedule, **kwargs)

    def _build_mlp_extractor(self) -> None:
        _install(self, commit=self.commit, hidden=self.hidden)

    def _build(self, lr_schedule) -> None:
        super()._build(lr_schedule)
        self.action_net = nn.Identity()          # the logits are the latent already
        self.optimizer = self.optimizer_class(self.parameters(), lr=lr_schedule(1),
                                              **self.optimizer_kwargs)

    @property
    def ranker(self) -> RankerNet:
        return self.mlp_extractor.net


class RankerPolicy(_RankerPolicyMixin, ActorCriticPolicy):
    """PPO policy for ``hsched/Rank-v0``: Bernoulli keep-logit per slot from ``RankerNet``.

    Use ``PPO(RankerPolicy, env, policy_kwargs={"hidden": 64})``.
    """


def _maskable_policy_class():
    from sb3_contrib.common.maskable.policies import MaskableActorCriticPolicy

    class MaskableRankerPolicy(_RankerPolicyMixin, MaskableActorCriticPolicy):
        """MaskablePPO policy for ``hsched/Schedule-v0``: a logit per slot plus a commit logit.

        Use ``MaskablePPO(MaskableRankerPolicy, env, policy_kwargs={"hidden": 64})``.
        """

        commit = True

    return MaskableRankerPolicy


MaskableRankerPolicy = _maskable_policy_class()


# ---------------------------------------------------------------------------- save / load
def save_ranker(net: RankerNet, path: str | Path, **meta) -> Path:
    """Write the network's weights and configuration (plus ``meta``: plain values only,
    checked as a ranker file's are when read, so a file written loads)."""
    path = Path(path)
    check_meta(meta, f"save_ranker({str(path)!r})")
    path.parent.mkdir(parents=True, exist_ok=True)
    th.save({"format": FORMAT, "hidden": net.hidden, "commit": net.commit,
             "job_context": net.job_context,
             "state_dict": {k: v.detach().cpu() for k, v in net.state_dict().items()},
             "meta": meta}, path)
    return path


def load_ranker_net(path: str | Path) -> tuple[RankerNet, dict]:
    """Read ``save_ranker``'s file (``weights_only``: tensors and plain values only): the
    network and the file's ``meta``. Every field is checked first (``agents.ranker_file``):
    a ``ConfigError`` naming the file and the field when one is missing or invalid."""
    blob = read_ranker_file(path)
    config = {"hidden": int(blob["hidden"]), "commit": bool(blob["commit"]),
              "job_context": bool(blob.get("job_context", False))}
    try:
        with th.device("meta"):                # the shapes alone: no memory for a bad width
            expected = {k: tuple(v.shape) for k, v in RankerNet(**config).state_dict().items()}
    except RuntimeError:                       # sizes beyond what a tensor can hold
        raise ConfigError(f"{config['hidden']:,} is too wide for a network",
                          source=f"ranker file {path}", field="hidden") from None
    network = "RankerNet(" + ", ".join(f"{k}={v}" for k, v in config.items()) + ")"
    check_weights(blob["state_dict"], expected, path, network, inputs_weight="phi.0.weight")
    net = RankerNet(**config)
    net.load_state_dict(blob["state_dict"])
    net.eval()
    return net, dict(blob.get("meta", {}))


#: Most candidates ``Ranker`` reserves inference buffers for ahead of a round (~180 MB; a
#: larger round grows them when it comes).
RESERVE_MAX_ROWS = 262_144


class Ranker:
    """A trained ranker for ``hsched/Rank-v0`` observations of any K and cluster.

    ``keep(obs, env)`` keeps the candidates whose keep probability exceeds ``threshold``, and
    at least each job's ``min_per_job`` best-scored candidates (so no job is left out of the
    LP); with ``budget`` (a fraction of the candidates) it keeps the best-scored ones instead.
    ``threshold`` defaults to the ranker file's operating point (``meta["threshold"]``,
    chosen in training for a target recall of the LP's support, ``agents.regimes``), else ½;
    a file trained with ``--threshold-bands`` has one per band of round size
    (``meta["size_thresholds"]``, ``threshold_for``), used unless ``threshold`` is given.
    ``target_recall``: the file's operating point for that target instead (training chooses
    one for each of ``agents.regimes.RECALL_LADDER``, ``meta["operating_points"]``): a higher
    target, a lower threshold — more of the LP's support kept, at more LP time. The gate
    stays the file's (set or calibrated for its main point).

    **Gate.** A round with fewer than ``gate_candidates`` candidates is not ranked at all:
    ``keep`` keeps every candidate without running the network, so the LP is solved whole —
    on a small round the LP costs less than the inference that would prune it (an explicit
    ``budget`` is always applied). Default: the file's ``meta["gate_candidates"]``
    (``scripts/calibrate_gate.py``), else 0 (always rank); ``GATE_NEVER``: never rank.
    ``gated_rounds`` counts them.

    **Seed mode** (``mode="seed"``, or any ``RankEnv`` with ``prune="seed"``): the keep bits
    do not prune; they are the first columns of the whole LP's column generation, so every
    round gets the pure LP's optimal value (certified by pricing) and a good ranking only
    makes it faster. A ranked round keeps its ``seed_fraction`` best-scored candidates (and
    each job's best, with ``min_per_job`` ≥ 1, the default); a round below the candidate
    gate keeps none (the LP's own start, no inference). No unsure gate: without a time limit
    a poor ranking cannot change the schedule's objective, and costs at most a larger first
    restricted LP.

    **Audits** (``audit_every=N``, prune mode; default: the file's ``meta["audit_every"]``,
    ``hsched train --audit-every``, else 0: none; the shipped file's is 8 since session 58;
    0 turns them off): a check of the pruning
    against the LP itself, for regimes the file was not trained on. The first round of an
    episode that the ranker would prune, and every ``N``-th after it, is solved over every
    candidate after scoring; once the LP has decided it, the share of the whole
    LP's support that the pruned set would have held is the audit's recall
    (``audit_recalls``; the environment's ``decided_support``). Below ``audit_recall``
    (default 0.9) the audit fails (``audit_failures``): the next ``unsure_backoff`` rounds it
    would rank are solved whole without inference, as after an unsure round (the length
    doubling with each failure in a row, up to ``MAX_UNSURE_BACKOFF``; at least one round),
    and the first round it ranks after them is audited again. The verdict is given at the
    next ``keep`` call of the episode (no verdict if the environment did not take exactly one
    step in between, or the LP's support was empty). On the audited round the whole LP's
    column generation starts (``RankEnv.set_lp_start``) from ``audit_start``: ``"seed"`` (the
    default) — its best-scored ``seed_fraction`` of the round and each job's best, as on an
    unsure round (the LP's own start with ``seed_fraction`` 0); ``"kept"`` — the set it would
    have kept; ``"own"`` — the LP's own start (every audit before session 57). An LP that
    takes no start, one small enough for the dual simplex, or one under a time limit solves
    from its own (a solve cut short from the ranker's start would stay near the candidates it
    favours, and the audit could pass a pruning it should fail). ``audit_start_in_use`` is
    the start audits actually take. An audit costs its round inference plus the whole LP
    from that start, and the next round the verdict (BENCHMARKS.md, "Session 57: where an
    audit's column generation starts").
    Audits asked for here (``audit_every`` given) need an environment that can be audited
    (an episode of ``hsched/Rank-v0`` whose LP has an allocation, as ``LPPolicy``'s): on
    another a ``ConfigError``. The file's own audits (``audits_from_file``) are skipped
    there instead, with a warning (a ``RuntimeWarning``, once per ranker and reason).

    **Unsure gate.** A round in which the ranker would keep more than
    ``max_kept_fraction`` of its candidates is solved whole anyway (``unsure_rounds``): the
    ranker is not sure which candidates the LP needs there, so pruning risks the schedule and
    saves little LP time. The next ``unsure_backoff`` rounds of the same episode that it would
    rank are then solved whole without inference (in ``gated_rounds`` and ``backoff_rounds``),
    since consecutive rounds look alike; then it scores again, and if that round is unsure too
    the back-off doubles (up to ``MAX_UNSURE_BACKOFF`` rounds; a sure round or a new episode
    starts it over), so a long overload costs inference on few rounds. The back-off is kept
    per episode (per simulator), so one ranker may drive several environments in turn.
    Default: the file's ``meta["max_kept_fraction"]`` (``hsched train
    --max-kept-fraction``), else ``DEFAULT_MAX_KEPT_FRACTION`` when the ranker has a
    candidate gate and 1 (no unsure gate) when it ranks every round. An explicit ``budget``
    is always applied.
    """

    def __init__(self, net: RankerNet, name: str = "ranker", threshold: float | None = None,
                 min_per_job: int = 1, meta: dict | None = None,
                 torch_threads: int | None = 1, gate_candidates: int | None = None,
                 target_recall: float | None = None,
                 max_kept_fraction: float | None = None,
                 unsure_backoff: int = DEFAULT_UNSURE_BACKOFF, mode: str = "prune",
                 seed_fraction: float = DEFAULT_SEED_FRACTION, audit_every: int | None = None,
                 audit_recall: float = DEFAULT_AUDIT_RECALL,
                 audit_start: str = DEFAULT_AUDIT_START) -> None:
        # One round's scoring is a few small matrix products: PyTorch's default thread pool
        # only adds spin-waiting (measured 0.5 ms with 1 thread, 29 ms with 2 on a busy
        # 2-core machine). ``torch_threads=None`` leaves PyTorch's setting alone.
        if not isinstance(net, th.nn.Module):
            raise ConfigError(f"must be a RankerNet (Ranker.load reads one from a file), got "
                              f"{show(net)}", field="net")
        if not isinstance(name, str) or not name.strip():
            raise ConfigError(f"must be a non-empty string, got {show(name)}", field="name")
        if torch_threads is not None and not (is_whole_number(torch_threads)
                                              and torch_threads >= 1):
            raise ConfigError(f"must be a whole number >= 1 (None: PyTorch's setting), got "
                              f"{show(torch_threads)}", field="torch_threads")
        if threshold is not None and not is_real_number(threshold):
            raise ConfigError(f"must be a number in (0, 1), got {show(threshold)}",
                              field="threshold")
        if not (is_whole_number(min_per_job) and min_per_job >= 0):
            raise ConfigError(f"must be a whole number >= 0, got {show(min_per_job)}",
                              field="min_per_job")
        if gate_candidates is not None and not (is_whole_number(gate_candidates)
                                                and 0 <= gate_candidates <= GATE_NEVER):
            raise ConfigError(f"must be a whole number from 0 (always rank) to GATE_NEVER "
                              f"(2**62: never rank), got {show(gate_candidates)}",
                              field="gate_candidates")
        self.net, self.name = net.eval(), name
        self.meta = meta or {}
        check_meta(self.meta, f"Ranker {name!r}")       # as a file's meta is checked
        #: ``[(min_candidates, threshold), ...]`` ascending: the file's per-size operating
        #: points (``meta["size_thresholds"]``, ``hsched train --threshold-bands``); empty
        #: when ``threshold`` is given or the file has one threshold
        self.size_thresholds: list[tuple[int, float]] = []
        point = self.meta
        if target_recall is not None:
            if threshold is not None:
                raise ConfigError("give threshold or target_recall, not both",
                                  field="target_recall")
            point = operating_point(self.meta, target_recall)
        #: the target recall of the file's operating point in use (None: a given
        #: ``threshold``, or a file without one)
        self.target_recall = None
        if threshold is None:
            threshold = float(point.get("threshold", 0.5))
            self.size_thresholds = sorted((int(lo), float(t))
                                          for lo, t in point.get("size_thresholds", ()))
            if point.get("target_recall") is not None:
                self.target_recall = float(point["target_recall"])
        for t in [threshold] + [t for _, t in self.size_thresholds]:
            if not 0.0 < t < 1.0:
                raise ConfigError(f"threshold must be in (0, 1), got {t!r}", field="threshold")
        if gate_candidates is None:
            gate_candidates = int(self.meta.get("gate_candidates", 0))
        self.threshold, self.min_per_job = float(threshold), int(min_per_job)
        self.gate_candidates = int(gate_candidates)
        if max_kept_fraction is None:
            max_kept_fraction = file_max_kept_fraction(self.meta, self.gate_candidates)
        self.max_kept_fraction = check_max_kept_fraction(max_kept_fraction,
                                                         "max_kept_fraction")
        if isinstance(unsure_backoff, bool) or not isinstance(unsure_backoff,
                                                              (int, np.integer)) \
                or unsure_backoff < 0:
            raise ConfigError(f"must be a whole number >= 0, got {unsure_backoff!r}",
                              field="unsure_backoff")
        self.unsure_backoff = int(unsure_backoff)
        if mode not in RANKER_MODES:
            raise ConfigError(f"must be one of {', '.join(map(repr, RANKER_MODES))}, got "
                              f"{mode!r}", field="mode")
        self.mode = mode
        self.seed_fraction = check_seed_fraction(seed_fraction, "seed_fraction")
        from_file = audit_every is None
        if from_file:                     # the file's; seed mode has no pruning to audit
            audit_every = 0 if mode == "seed" else int(self.meta.get("audit_every", 0))
        self.audit_every = check_audit_every(audit_every, "audit_every")
        #: whether the audits are the file's default (``meta["audit_every"]``, not given):
        #: an environment that cannot be audited skips them with a warning instead of an error
        self.audits_from_file = from_file and self.audit_every > 0
        self.audit_recall = check_audit_recall(audit_recall, "audit_recall")
        self.audit_start = check_audit_start(audit_start, "audit_start")
        #: why the file's audits were skipped, each warned about once (``_file_audits_off``)
        self._audit_skips: set[str] = set()
        if self.audit_every and mode == "seed":
            raise ConfigError("seed mode solves every round whole (the pure LP's optimum): it "
                              "has no pruning to audit", field="audit_every")
        self.gated_rounds = 0
        #: rounds scored, found unsure (more than ``max_kept_fraction`` kept), solved whole
        self.unsure_rounds = 0
        #: rounds solved whole without inference after an unsure one (in ``gated_rounds``)
        self.backoff_rounds = 0
        #: rounds scored and solved whole as audits (``audit_every``); of them, those failed
        self.audit_rounds = 0
        self.audit_failures = 0
        #: each audit's recall of the whole LP's support, in order (an LP without a support
        #: gives no verdict and no entry)
        self.audit_recalls: list[float] = []
        #: the back-off and audits per episode: simulator -> ``_EpisodeGate``
        self._backoff: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()
        #: the observation pieces' shapes -> their SlotLayout (all a layout depends on; an
        #: id of the space could be reused by another space once the first is freed)
        self._layouts: dict[tuple, SlotLayout] = {}
        #: the observation space of the last environment ``keep`` saw (``_layout`` is looked
        #: up, and the buffers reserved, only when it changes: the gate check stays ~2 µs)
        self._space_seen = None
        #: reused inference buffers (``RoundScratch``: 684 bytes per candidate, ~100 MB at
        #: 150,000; reserved for K candidates, at most ``RESERVE_MAX_ROWS``, on the first
        #: call for an environment the gate lets rank, see ``_layout``; grown by a quarter
        #: beyond a larger round; ``scratch.clear()`` frees them)
        self.scratch = RoundScratch()
        # last, once every argument has passed: a refused Ranker leaves this process-wide
        # setting as it was
        if torch_threads is not None:
            th.set_num_threads(int(torch_threads))

    @property
    def env_kwargs(self) -> dict:
        """The ``RankEnv`` arguments this ranker was trained for (``prune``, recorded in the
        file's ``meta``; a file without it ran with the environment's default); in seed mode
        ``prune="seed"``."""
        if self.mode == "seed":
            return {"prune": "seed"}
        return {"prune": self.meta["prune"]} if "prune" in self.meta else {}

    @classmethod
    def load(cls, path: str | Path, **kwargs) -> "Ranker":
        net, meta = load_ranker_net(path)
        if net.commit:
            raise ConfigError(f"{path} holds a select-mode network (hsched/Schedule-v0: a "
                              f"commit logit after the slots), not a rank-mode ranker; "
                              f"evaluate that agent from its model.zip with "
                              f"sb3:PATH/model.zip --trust-sb3-zip", field="ranker")
        kwargs.setdefault("name", ("ranker-seed:" if kwargs.get("mode") == "seed"
                                   else "ranker:") + Path(path).name)
        return cls(net, meta=meta, **kwargs)

    def _layout(self, env) -> SlotLayout:
        """The environment's ``SlotLayout``. The first time a layout is seen whose rounds can
        be ranked (K slots at least the gate), the inference buffers are reserved for
        ``min(K, RESERVE_MAX_ROWS)`` candidates (``reserve_round``): their page faults are
        paid once, in that call (timed like any decision), not in the first large round. K
        is an upper bound on a round's candidates (``hsched evaluate`` makes it every
        candidate of the workload), so a long workload of small rounds reserves more than it
        uses, at most ~180 MB."""
        space = env.unwrapped.observation_space if env is not None else None
        key = tuple(space[k].shape for k in LAYOUT_KEYS)
        layout = self._layouts.get(key)
        if layout is None:
            layout = self._layouts[key] = SlotLayout(space)
            if layout.K >= self.gate_candidates:
                reserve_round(self.scratch, min(layout.K, RESERVE_MAX_ROWS), layout.T,
                              self.net.hidden)
        return layout

    @th.no_grad()
    def scores(self, obs: dict, env) -> np.ndarray:
        """(K,) keep logits (``PAD_LOGIT`` on empty slots). Only the slots holding a
        candidate go through the network (they come first), so the cost grows with the
        round's candidates, not with K."""
        layout = self._layout(env)
        valid = np.asarray(obs["valid"]) > 0.5
        M = int(valid.sum())
        out = np.full(layout.K, PAD_LOGIT, dtype=np.float32)
        if M == 0:
            return out
        cand = np.asarray(obs["candidates"], dtype=np.float32).reshape(layout.K, layout.F)
        rows = np.arange(M)
        if self.meta.get("inputs") == "within-fair-share":
            # a ranker for an LP with the size cap (fair-srpt): the others are not scored
            # (nor kept)
            rows = np.flatnonzero(cand[:M, layout.share_col] > 0.5)
            if rows.size == 0:
                return out
        cluster = th.as_tensor(np.asarray(obs["cluster"], dtype=np.float32)
                               .reshape(layout.T, -1))
        x = cand[:M] if rows.size == M else cand[rows]
        x = th.from_numpy(x if x.flags.writeable else x.copy())   # read-only: torch warns
        inputs = round_inputs(x, cluster, self.scratch)
        job = None
        if self.net.job_context:
            unwrapped = getattr(env, "unwrapped", env)
            job = th.as_tensor(job_labels(unwrapped.slot_jobs()[rows])[0])
        logits = self.net.score_round(inputs, cluster,
                                      th.as_tensor(np.asarray(obs["global"], dtype=np.float32)),
                                      job=job, scratch=self.scratch)
        out[rows] = logits.numpy()
        return out

    def threshold_for(self, candidates: int) -> float:
        """The keep threshold of a round with ``candidates`` candidates: the band's
        (``size_thresholds``) where the file has bands, else ``threshold``."""
        t = self.threshold
        for lo, band in self.size_thresholds:
            if candidates >= lo:
                t = band
        return t

    def __getstate__(self) -> dict:
        state = dict(self.__dict__)
        state["_backoff"] = None                     # weak references do not pickle
        return state

    def __setstate__(self, state: dict) -> None:
        state.setdefault("audit_start", "own")       # a Ranker pickled before session 57
        state.setdefault("audits_from_file", False)  # ... before session 58
        state.setdefault("_audit_skips", set())
        self.__dict__.update(state)
        self._backoff = weakref.WeakKeyDictionary()

    def _episode_backoff(self, env) -> _EpisodeGate | None:
        """The gate state of ``env``'s episode (``None``: an environment without a simulator
        that can be referenced weakly: no back-off; audits need one)."""
        sim = getattr(env, "simulator", None)
        state = None
        if sim is not None:
            try:
                state = self._backoff.get(sim)
                if state is None:
                    state = self._backoff[sim] = _EpisodeGate()
            except TypeError:                        # not weakly referenceable
                state = None
        return state

    def _audit_state(self, env, gated: bool = False) -> _EpisodeGate | None:
        """The gate state of ``env``'s episode, for its audits: ``None`` when the file's own
        audits cannot run there (skipped, with a warning, once a round is not ``gated``: a
        round below the candidate gate would not have been audited); a ``ConfigError`` when
        audits asked for cannot."""
        state = self._episode_backoff(env)
        why = None
        if state is None:
            why = (f"audits need an episode of hsched/Rank-v0 (a RankEnv, reset): "
                   f"{type(env).__name__} has no simulator that can be referenced weakly")
        elif not (callable(getattr(env, "decided_support", None))
                  and hasattr(env, "decisions")):
            why = (f"audits read the LP's decision of the audited round from hsched/Rank-v0 "
                   f"(RankEnv.decided_support, decisions); {type(env).__name__} does not "
                   f"have both")
        if why is not None:
            if not (gated and self.audits_from_file):
                self._file_audits_off(why)
            return None
        return None if state.unauditable else state

    def _file_audits_off(self, why: str) -> None:
        """The file's audits cannot run here (``why``): a warning, once per reason; audits
        asked for (``audit_every`` given): a ``ConfigError``."""
        if not self.audits_from_file:
            raise ConfigError(why, field="audit_every")
        if why not in self._audit_skips:
            self._audit_skips.add(why)
            warnings.warn(f"{self.name}: its file's audits (meta audit_every "
                          f"{self.audit_every}) are skipped here: {why}", RuntimeWarning,
                          stacklevel=4)

    @staticmethod
    def _backing_off(state: _EpisodeGate | None) -> bool:
        """Whether this round is in the back-off after an unsure round or a failed audit of
        the episode whose gate state is ``state`` (then it is counted off)."""
        if state is None or state.left <= 0:
            return False
        state.left -= 1
        return True

    def _next_backoff(self, last: int) -> int:
        """The back-off after one of length ``last`` (0: none) in a row."""
        return (min(2 * last, max(MAX_UNSURE_BACKOFF, self.unsure_backoff)) if last
                else self.unsure_backoff)

    def _audit_verdict(self, state: _EpisodeGate, env) -> None:
        """Close ``state``'s audit: the share of the LP's support (its decision of the
        audited round, solved whole) in the set the ranker would have kept; a failed audit
        starts a back-off (at least one round), after which the first round ranked is
        audited again. No verdict when the environment did not take exactly one step since
        the audit (its last decision is another round's) or the LP's support is empty."""
        (kept, decisions), state.audited = state.audited, None
        if env.decisions != decisions + 1:
            return
        support = env.decided_support()
        if support is None:
            state.unauditable = True
            self._file_audits_off(f"audits read the LP's decision of the audited round from "
                                  f"its allocation ({{job id: (rows, X)}}, as LPPolicy's); "
                                  f"{type(env.lp).__name__} has none")
            return
        if support.shape[0] == 0:
            return                                   # no support: nothing to recall
        recall = pair_recall(support, kept)
        self.audit_recalls.append(recall)
        if recall >= self.audit_recall:
            state.audit_last = 0
            return
        self.audit_failures += 1
        state.audit_last = max(1, self._next_backoff(state.audit_last))
        state.left = state.audit_last
        state.ranked = 0

    def _audit(self, state: _EpisodeGate | None, keep: np.ndarray, env) -> bool:
        """Whether this round, which the ranker would prune to ``keep``, is audited (then its
        would-be kept pairs wait in ``state`` for the LP's decision)."""
        if state is None or keep.sum() == env.slots.k.size:
            return False                             # it prunes nothing: nothing to audit
        due = state.ranked % self.audit_every == 0
        state.ranked += 1
        if not due:
            return False
        self.audit_rounds += 1
        sl = env.slots
        bits = keep[:sl.k.size]
        state.audited = (np.stack([np.asarray(sl.job[bits], dtype=np.int64),
                                   np.asarray(sl.row[bits], dtype=np.int64)], axis=1),
                         env.decisions)
        return True

    def _audit_start_bits(self, s: np.ndarray, keep: np.ndarray, valid: np.ndarray,
                          env) -> np.ndarray | None:
        """(K,) int8: the start of an audited round's whole-LP column generation
        (``audit_start``), or ``None`` for the LP's own: ``"seed"``, its best-scored
        ``seed_fraction`` and each job's best (as an unsure round's; none with
        ``seed_fraction`` 0); ``"kept"``, the set it would have kept. None either way when
        the environment's LP takes no start or has a time limit: a solve cut short would
        stay near the start, the candidates the ranker favours, and the audit could pass a
        pruning it should fail."""
        unwrapped = env.unwrapped
        how = self.audit_start_in_use
        if (how == "own" or not getattr(unwrapped, "takes_lp_start", False)
                or getattr(getattr(unwrapped, "lp", None), "time_limit_s", None) is not None):
            return None
        return keep.astype(np.int8) if how == "kept" else self._seed_bits(s, valid, env)

    @property
    def audit_start_in_use(self) -> str:
        """The start audits take (``audit_start``), ``"own"`` for ``"seed"`` with
        ``seed_fraction`` 0 (no best-scored share to start from)."""
        if self.audit_start == "seed" and not self.seed_fraction:
            return "own"
        return self.audit_start

    def _unsure(self, keep: np.ndarray, valid: np.ndarray, state: _EpisodeGate | None) -> bool:
        """Whether ``keep`` holds more than ``max_kept_fraction`` of the valid candidates;
        starts the next back-off of the episode whose gate state is ``state`` (twice the last
        one if the last scored round was unsure too) or, on a sure round, resets it."""
        if self.max_kept_fraction >= 1.0:
            return False
        if keep.sum() <= self.max_kept_fraction * valid.sum():
            if state is not None:
                state.unsure_last = 0
            return False
        if state is not None:
            state.unsure_last = self._next_backoff(state.unsure_last)
            state.left = state.unsure_last
        return True

    def _seed(self, obs: dict, env, valid: np.ndarray, total: int) -> np.ndarray:
        """Seed mode's keep bits: the ``seed_fraction`` best-scored valid candidates and each
        job's best; none below the candidate gate (the LP's own start, no inference)."""
        if self.gate_candidates and total < self.gate_candidates:
            self.gated_rounds += 1
            return np.zeros(valid.size, dtype=np.int8)
        return self._seed_bits(self.scores(obs, env), valid, env)

    def _seed_bits(self, s: np.ndarray, valid: np.ndarray, env) -> np.ndarray:
        """(K,) int8: the ``seed_fraction`` best of the valid candidates by the scores ``s``,
        and each job's best (with ``min_per_job`` ≥ 1)."""
        keep = np.zeros(s.size, dtype=bool)
        n = int(np.ceil(self.seed_fraction * valid.sum()))
        if 0 < n < s.size:
            keep[np.argpartition(-s, n - 1)[:n]] = True      # the n best (any order)
        elif n:
            keep[:] = True
        keep &= valid
        if self.min_per_job > 0 and np.isfinite(s).all():
            keep[best_per_job(s, env.unwrapped.slot_jobs())] = True
        return keep.astype(np.int8)

    def keep(self, obs: dict, env, budget: float | None = None) -> np.ndarray:
        """(K,) int8 keep bits for a ``RankEnv`` observation."""
        unwrapped = getattr(env, "unwrapped", env)
        if not callable(getattr(unwrapped, "slot_jobs", None)):
            raise ConfigError(f"keep(obs, env) ranks the slots of hsched/Rank-v0 (a RankEnv), "
                              f"got {type(unwrapped).__name__}", field="env")
        if not (isinstance(obs, dict) and "valid" in obs and "candidates" in obs):
            raise ConfigError(f"keep(obs, env) takes the environment's observation (a dict "
                              f"with 'valid' and 'candidates'), got {show(obs, 60)}",
                              field="obs")
        if np.shape(obs["valid"]) != (unwrapped.K,):
            raise ConfigError(f"the observation has {np.shape(obs['valid'])} slots, the "
                              f"environment K={unwrapped.K}: an observation of another "
                              f"environment?", field="obs")
        space = getattr(unwrapped, "observation_space", None)
        if space is not None and space is not self._space_seen:   # a new environment:
            self._layout(env)                                       # reserve the buffers
            self._space_seen = space
        valid = np.asarray(obs["valid"]) > 0.5
        slots = getattr(unwrapped, "slots", None)
        total = int(slots.total) if slots is not None else int(valid.sum())   # the round's
        seeding = getattr(unwrapped, "prune", None) == "seed"
        if self.mode == "seed" and not seeding:
            raise ConfigError(f"a seed-mode ranker needs hsched/Rank-v0 with prune='seed' "
                              f"(its env_kwargs), got prune="
                              f"{getattr(unwrapped, 'prune', None)!r}: there its keep bits "
                              f"would prune the LP", field="mode")
        if budget is None and seeding:
            return self._seed(obs, env, valid, total)
        gated = bool(budget is None and self.gate_candidates and total < self.gate_candidates)
        audits = (self._audit_state(unwrapped, gated) if self.audit_every and budget is None
                  else None)
        if audits is not None and audits.audited is not None:
            self._audit_verdict(audits, unwrapped)
            if audits.unauditable:                   # the file's audits, skipped from now
                audits = None
        if gated:
            self.gated_rounds += 1
            return valid.astype(np.int8)             # a small round: the LP solves it whole
        state = audits
        if budget is None and state is None and self.max_kept_fraction < 1.0:
            state = self._episode_backoff(unwrapped)        # the unsure gate's back-off
        if budget is None and self._backing_off(state):
            self.gated_rounds += 1
            self.backoff_rounds += 1
            return valid.astype(np.int8)             # after an unsure round or a failed audit
        s = self.scores(obs, env)
        if budget is not None:
            n = int(np.ceil(budget * valid.sum()))
            keep = np.zeros(s.size, dtype=bool)
            keep[np.argsort(-s, kind="stable")[:n]] = True
        else:
            t = self.threshold_for(total)
            keep = s > np.log(t / (1 - t))
        keep &= valid
        if self.min_per_job == 1 and np.isfinite(s).all():
            keep[best_per_job(s, env.unwrapped.slot_jobs())] = True
        elif self.min_per_job > 0:
            jobs = env.unwrapped.slot_jobs()
            keep[(rank_within_job(s, jobs) < self.min_per_job) & (jobs >= 0)] = True
        if budget is None and self._unsure(keep, valid, state):
            self.unsure_rounds += 1
            if self.seed_fraction > 0 and getattr(unwrapped, "takes_lp_start", False):
                # the scores are paid for: its best-scored candidates start the whole LP's
                # column generation (the same optimum, usually in fewer restricted solves)
                unwrapped.set_lp_start(self._seed_bits(s, valid, env))
            return valid.astype(np.int8)             # unsure which the LP needs: whole
        if self._audit(audits, keep, unwrapped):
            start = self._audit_start_bits(s, keep, valid, env)
            if start is not None:
                unwrapped.set_lp_start(start)
            return valid.astype(np.int8)             # an audit: the LP over every candidate
        return keep.astype(np.int8)


def check_max_kept_fraction(value, field: str) -> float:
    """``value`` as a ``max_kept_fraction`` (a number in (0, 1]; 1: no unsure gate), or a
    ``ConfigError`` naming ``field``."""
    if (isinstance(value, bool) or not isinstance(value, (int, float, np.number))
            or not 0.0 < value <= 1.0):                   # also refuses NaN
        raise ConfigError(f"must be a number in (0, 1] (1: no unsure gate), got {value!r}",
                          field=field)
    return float(value)


def file_max_kept_fraction(meta: dict, gate_candidates: int) -> float:
    """The unsure gate a ranker file runs with unless one is given: its
    ``meta["max_kept_fraction"]``, else ``DEFAULT_MAX_KEPT_FRACTION`` with a candidate gate
    (``gate_candidates`` > 0) and 1 (none) without."""
    return meta.get("max_kept_fraction",
                    DEFAULT_MAX_KEPT_FRACTION if gate_candidates else 1.0)


def check_audit_every(value, field: str) -> int:
    """``value`` as ``audit_every`` (a whole number >= 0; 0: no audits), or a ``ConfigError``
    naming ``field``."""
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < 0:
        raise ConfigError(f"must be a whole number >= 0 (0: no audits), got {value!r}",
                          field=field)
    return int(value)


def check_audit_recall(value, field: str) -> float:
    """``value`` as ``audit_recall`` (a number in (0, 1]), or a ``ConfigError`` naming
    ``field``."""
    if isinstance(value, bool) or not isinstance(value, (int, float, np.number)) \
            or not 0.0 < value <= 1.0:                    # also refuses NaN
        raise ConfigError(f"must be a number in (0, 1], got {value!r}", field=field)
    return float(value)


def check_audit_start(value, field: str) -> str:
    """``value`` as an ``audit_start`` (one of ``AUDIT_STARTS``), or a ``ConfigError`` naming
    ``field``."""
    if not isinstance(value, str) or value not in AUDIT_STARTS:
        raise ConfigError(f"must be one of {', '.join(map(repr, AUDIT_STARTS))}, got "
                          f"{value!r}", field=field)
    return value


def check_seed_fraction(value, field: str) -> float:
    """``value`` as a ``seed_fraction`` (a number in [0, 1]), or a ``ConfigError`` naming
    ``field``."""
    if isinstance(value, bool) or not isinstance(value, (int, float)) \
            or not 0.0 <= value <= 1.0:
        raise ConfigError(f"must be a number in [0, 1], got {value!r}", field=field)
    return float(value)


def operating_point(meta: dict, target_recall: float) -> dict:
    """The operating point of a ranker file's ``meta`` chosen in training for
    ``target_recall`` (``meta["operating_points"]``, ``agents.regimes.RECALL_LADDER``; the
    file's main point counts too): a dict with ``threshold`` and ``size_thresholds``.
    ``ConfigError`` naming the targets the file has when it has no point for this one."""
    try:
        target = float(target_recall)
    except (TypeError, ValueError):
        raise ConfigError(f"target_recall must be a number, got {target_recall!r}",
                          field="target_recall") from None
    points = list(meta.get("operating_points", ()))
    if meta.get("target_recall") is not None and "threshold" in meta:
        points.append(meta)
    for p in points:
        if abs(float(p["target_recall"]) - target) < 1e-9:
            return p
    have = sorted({float(p["target_recall"]) for p in points})
    raise ConfigError(f"the ranker file has no operating point for recall {target:g}; it has "
                      + (", ".join(f"{t:g}" for t in have) if have else "none (retrain it "
                         "with --target-recall)"), field="target_recall")


def shipped_ranker_path() -> Path:
    """The pre-trained ranker inside the package (``agents/data/ranker.pt``)."""
    return Path(__file__).resolve().parent / "data" / "ranker.pt"
