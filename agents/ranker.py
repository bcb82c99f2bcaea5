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
    value = V(c)

Permuting the slots permutes the logits the same way; no weight depends on K or on the number
of GPU types (the per-type GPU-count columns are left out of x_i, the cluster state is pooled
over types), so a ranker trained on one cluster and K runs on any other (``Ranker.load``).

* ``RankerNet`` — the network; ``logits(cand, valid, cluster, glob)`` on (B, K, F) batches.
* ``RankerPolicy`` — SB3 ``ActorCriticPolicy`` for ``hsched/Rank-v0`` (``MultiBinary(K)``:
  one Bernoulli keep-logit per slot; PPO).
* ``MaskableRankerPolicy`` — sb3-contrib ``MaskableActorCriticPolicy`` for
  ``hsched/Schedule-v0`` (``Discrete(K + 1)``: a logit per slot plus a commit logit from the
  context; MaskablePPO).
* ``Ranker`` — inference: ``Ranker.load(path).keep(obs, env)`` → keep bits; ``save_ranker``
  writes the network's weights and configuration (``torch.save`` of tensors and plain values,
  read back with ``weights_only=True``: no code is unpickled).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import torch as th
from gymnasium import spaces
from stable_baselines3.common.policies import ActorCriticPolicy
from stable_baselines3.common.torch_layers import BaseFeaturesExtractor
from torch import nn

from hsched_env.errors import ConfigError
from hsched_env.envs.features import (CANDIDATE_FEATURES, CLUSTER_FEATURES, GLOBAL_FEATURES,
                                      JOB_FEATURES, CandidateColumns)

#: Logit given to empty slots (keep probability ~2e-9).
PAD_LOGIT = -20.0
FORMAT = "heterosched-ranker/1"


def candidate_feature_index(num_types: int) -> list[int]:
    """Columns of the (K, F) slot features the ranker reads: the job and candidate features,
    without the per-type GPU counts (so the ranker does not depend on the cluster's types)."""
    return CandidateColumns([f"type{i}" for i in range(num_types)]).type_independent()


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
    """

    n_in = len(JOB_FEATURES) + len(CANDIDATE_FEATURES)
    n_cluster = 2 * len(CLUSTER_FEATURES)
    n_global = len(GLOBAL_FEATURES)

    def __init__(self, hidden: int = 64, commit: bool = False) -> None:
        super().__init__()
        self.hidden, self.commit = hidden, commit
        H = hidden
        self.phi = _mlp([self.n_in, H, H])
        self.rho = _mlp([2 * H + self.n_cluster + self.n_global, H, H])
        self.psi = _mlp([2 * H, H, 1])
        self.commit_head = _mlp([H, H, 1]) if commit else None
        with th.no_grad():                      # start near "keep with probability 1/2"
            self.psi[-1].weight.mul_(0.01)
            self.psi[-1].bias.zero_()

    def forward(self, cand: th.Tensor, valid: th.Tensor, cluster: th.Tensor,
                glob: th.Tensor) -> tuple[th.Tensor, th.Tensor]:
        """Logits (B, K) — (B, K + 1) with ``commit`` — and the context (B, hidden).

        Args:
            cand: (B, K, n_in) candidate features (``candidate_feature_index`` columns).
            valid: (B, K) 1 for slots holding a candidate.
            cluster: (B, T, 4) per-type cluster features.
            glob: (B, 7) global features.
        """
        h = self.phi(cand)                                           # (B, K, H)
        m = (valid > 0.5).unsqueeze(-1)
        n = m.sum(dim=1).clamp(min=1)
        mean = (h * m).sum(dim=1) / n
        mx = th.where(m, h, th.full_like(h, -1e4)).max(dim=1).values
        mx = th.where(m.any(dim=1), mx, th.zeros_like(mx))
        pooled_cluster = th.cat([cluster.mean(dim=1), cluster.max(dim=1).values], dim=-1)
        ctx = self.rho(th.cat([mean, mx, pooled_cluster, glob], dim=-1))  # (B, H)
        K = cand.shape[1]
        s = self.psi(th.cat([h, ctx.unsqueeze(1).expand(-1, K, -1)], dim=-1)).squeeze(-1)
        s = th.where(m.squeeze(-1), s, th.full_like(s, PAD_LOGIT))
        if self.commit_head is not None:
            s = th.cat([s, self.commit_head(ctx)], dim=-1)
        return s, ctx


class SlotLayout:
    """Where the pieces of an environment's flattened observation are."""

    def __init__(self, observation_space: spaces.Dict) -> None:
        self.K = observation_space["valid"].shape[0]
        self.F = observation_space["candidates"].shape[0] // self.K
        self.T = observation_space["cluster"].shape[0] // len(CLUSTER_FEATURES)
        self.G = observation_space["global"].shape[0]
        self.index = th.as_tensor(candidate_feature_index(self.T), dtype=th.long)
        #: column of ``within_fair_share`` in the (K, F) slot features
        self.share_col = CandidateColumns([f"type{i}" for i in range(self.T)])["within_fair_share"]
        self.sizes = (self.K * self.F, self.K, self.T * len(CLUSTER_FEATURES), self.G)

    def split(self, flat: th.Tensor):
        cand, valid, cluster, glob = th.split(flat, self.sizes, dim=-1)
        B = flat.shape[0]
        cand = cand.reshape(B, self.K, self.F).index_select(-1, self.index.to(flat.device))
        return cand, valid, cluster.reshape(B, self.T, len(CLUSTER_FEATURES)), glob

    def from_obs(self, obs: dict) -> tuple[th.Tensor, ...]:
        """Tensors with a batch dimension of 1 from one (unbatched) observation."""
        flat = th.as_tensor(np.concatenate([np.asarray(obs[k], dtype=np.float32).reshape(-1)
                                            for k in ("candidates", "valid", "cluster",
                                                      "global")]))[None]
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
    """Write the network's weights and configuration (plus ``meta``: plain values only)."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    th.save({"format": FORMAT, "hidden": net.hidden, "commit": net.commit,
             "state_dict": {k: v.detach().cpu() for k, v in net.state_dict().items()},
             "meta": meta}, path)
    return path


def load_ranker_net(path: str | Path) -> tuple[RankerNet, dict]:
    """Read ``save_ranker``'s file (``weights_only``: tensors and plain values only)."""
    path = Path(path)
    if not path.is_file():
        raise ConfigError(f"no ranker file at {path}", field="ranker")
    try:
        blob = th.load(path, map_location="cpu", weights_only=True)
    except Exception as exc:                   # noqa: BLE001 (any unreadable file)
        raise ConfigError(f"{path} is not a HeteroSched ranker file ({exc})",
                          field="ranker") from None
    if not isinstance(blob, dict) or blob.get("format") != FORMAT:
        raise ConfigError(f"{path} is not a HeteroSched ranker file (format "
                          f"{blob.get('format') if isinstance(blob, dict) else None!r})",
                          field="ranker")
    net = RankerNet(hidden=int(blob["hidden"]), commit=bool(blob["commit"]))
    try:
        net.load_state_dict(blob["state_dict"])
    except RuntimeError as exc:             # weights of another feature set (older file)
        raise ConfigError(f"{path} was trained on other observation features than this "
                          f"version's ({len(JOB_FEATURES) + len(CANDIDATE_FEATURES)} inputs "
                          f"per candidate): retrain it ({str(exc).splitlines()[0]})",
                          field="ranker") from None
    net.eval()
    return net, dict(blob.get("meta", {}))


class Ranker:
    """A trained ranker for ``hsched/Rank-v0`` observations of any K and cluster.

    ``keep(obs, env)`` keeps the candidates whose keep probability exceeds ``threshold``, and
    at least each job's ``min_per_job`` best-scored candidates (so no job is left out of the
    LP); with ``budget`` (a fraction of the candidates) it keeps the best-scored ones instead.
    ``threshold`` defaults to the ranker file's operating point (``meta["threshold"]``,
    chosen in training for a target recall of the LP's support, ``agents.regimes``), else ½.

    **Gate.** A round with fewer than ``gate_candidates`` candidates is not ranked at all:
    ``keep`` keeps every candidate without running the network, so the LP is solved whole —
    on a small round the LP costs less than the inference that would prune it (an explicit
    ``budget`` is always applied). Default: the file's ``meta["gate_candidates"]``
    (``scripts/calibrate_gate.py``), else 0 (always rank). ``gated_rounds`` counts them.
    """

    def __init__(self, net: RankerNet, name: str = "ranker", threshold: float | None = None,
                 min_per_job: int = 1, meta: dict | None = None,
                 torch_threads: int | None = 1, gate_candidates: int | None = None) -> None:
        # One round's scoring is a few small matrix products: PyTorch's default thread pool
        # only adds spin-waiting (measured 0.5 ms with 1 thread, 29 ms with 2 on a busy
        # 2-core machine). ``torch_threads=None`` leaves PyTorch's setting alone.
        if torch_threads is not None:
            th.set_num_threads(int(torch_threads))
        self.net, self.name = net.eval(), name
        self.meta = meta or {}
        if threshold is None:
            threshold = float(self.meta.get("threshold", 0.5))
        if not 0.0 < threshold < 1.0:
            raise ConfigError(f"threshold must be in (0, 1), got {threshold!r}",
                              field="threshold")
        if gate_candidates is None:
            gate_candidates = int(self.meta.get("gate_candidates", 0))
        self.threshold, self.min_per_job = float(threshold), int(min_per_job)
        self.gate_candidates = int(gate_candidates)
        self.gated_rounds = 0
        self._layouts: dict[int, SlotLayout] = {}

    @classmethod
    def load(cls, path: str | Path, **kwargs) -> "Ranker":
        net, meta = load_ranker_net(path)
        kwargs.setdefault("name", f"ranker:{Path(path).name}")
        return cls(net, meta=meta, **kwargs)

    def _layout(self, env) -> SlotLayout:
        space = env.unwrapped.observation_space if env is not None else None
        key = id(space)
        if key not in self._layouts:
            self._layouts[key] = SlotLayout(space)
        return self._layouts[key]

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
        cand = cand[rows][:, layout.index.numpy()]
        cluster = np.asarray(obs["cluster"], dtype=np.float32).reshape(layout.T, -1)
        logits, _ = self.net(th.as_tensor(cand)[None], th.ones(1, rows.size),
                             th.as_tensor(cluster)[None],
                             th.as_tensor(np.asarray(obs["global"], dtype=np.float32))[None])
        out[rows] = logits[0].numpy()
        return out

    def keep(self, obs: dict, env, budget: float | None = None) -> np.ndarray:
        """(K,) int8 keep bits for a ``RankEnv`` observation."""
        valid = np.asarray(obs["valid"]) > 0.5
        slots = getattr(getattr(env, "unwrapped", env), "slots", None)
        total = int(slots.total) if slots is not None else int(valid.sum())   # the round's
        if budget is None and self.gate_candidates and total < self.gate_candidates:
            self.gated_rounds += 1
            return valid.astype(np.int8)             # a small round: the LP solves it whole
        s = self.scores(obs, env)
        if budget is not None:
            n = int(np.ceil(budget * valid.sum()))
            keep = np.zeros(s.size, dtype=bool)
            keep[np.argsort(-s, kind="stable")[:n]] = True
        else:
            keep = s > np.log(self.threshold / (1 - self.threshold))
        keep &= valid
        if self.min_per_job > 0:
            jobs = env.unwrapped.slot_jobs()
            order = np.lexsort((-s, jobs))           # by job, best score first
            jo = jobs[order]
            first = np.r_[0, np.flatnonzero(np.diff(jo)) + 1]
            rank = np.arange(order.size) - np.repeat(first, np.diff(np.r_[first, order.size]))
            top = order[(rank < self.min_per_job) & (jo >= 0)]
            keep[top] = True
        return keep.astype(np.int8)


def shipped_ranker_path() -> Path:
    """The pre-trained ranker inside the package (``agents/data/ranker.pt``)."""
    return Path(__file__).resolve().parent / "data" / "ranker.pt"
