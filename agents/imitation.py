"""Imitation of the LP reference: warm-start the ranker on the LP's support.

The LP is a cheap, computable expert: in every round of ``hsched/Rank-v0``,
``env.reference_action()`` keeps exactly the candidates the LP uses (its support, plus the rows
its rounded assignment lists under ``prune="all"``). ``collect_demos`` records (round observation, those keep bits)
along the reference's own trajectories; ``behaviour_clone`` fits ``RankerNet``'s keep-logits
to them with a per-candidate binary cross-entropy (positives weighted by ``pos_weight``,
because the support is ~10% of the candidates). Rounds are stored compactly — only the slots
that hold a candidate — and batched with padding, so K plays no role.
"""

from __future__ import annotations

import contextlib
import ctypes
import logging
import math
import sys
import time
from dataclasses import dataclass, field

import numpy as np
import torch as th
from tqdm import tqdm

from agents.ranker import RankerNet, dense_jobs, ranker_inputs
from hsched_env.envs.features import CLUSTER_FEATURES

log = logging.getLogger(__name__)


@dataclass
class Demos:
    """Rounds of LP-reference decisions (one entry per round)."""

    cand: list = field(default_factory=list)      # (M, n_in) float32, ``ranker_inputs``
    label: list = field(default_factory=list)     # (M,) 1 = the LP keeps it
    job: list = field(default_factory=list)       # (M,) int64 job index 0..J-1 in the round
    cluster: list = field(default_factory=list)   # (T, 4)
    glob: list = field(default_factory=list)      # (G,)
    seed: list = field(default_factory=list)      # episode seed of the round
    total: list = field(default_factory=list)     # the round's candidates before the K cut
    #                                               (``RoundSlots.total``: what a ranker's
    #                                               size band is chosen by at run time)
    returns: dict = field(default_factory=dict)   # seed -> the reference's episode return,
    #                                               for episodes recorded to their end
    cut_rounds: int = 0                           # recorded rounds with more candidates
    #                                               than K (cut to the first K slots); a
    #                                               count, not carried by ``split``

    def __len__(self) -> int:
        return len(self.cand)

    def split(self, seeds) -> tuple["Demos", "Demos"]:
        """(rounds of ``seeds``, the others)."""
        seeds = set(seeds)
        a, b = Demos(), Demos()
        for i in range(len(self)):
            dst = a if self.seed[i] in seeds else b
            for name in self._fields():
                getattr(dst, name).append(getattr(self, name)[i])
        return a, b

    @classmethod
    def merge(cls, parts) -> "Demos":
        """The rounds of several ``Demos`` together (e.g. one per training regime)."""
        out = cls()
        parts = list(parts)
        if len({bool(d.job) for d in parts if len(d)}) > 1:
            raise ValueError("cannot merge demonstrations with and without job indices")
        if len({bool(d.total) for d in parts if len(d)}) > 1:
            raise ValueError("cannot merge demonstrations with and without round sizes")
        for d in parts:
            for name in d._fields():
                getattr(out, name).extend(getattr(d, name))
            out.cut_rounds += d.cut_rounds
        return out

    def _fields(self) -> tuple[str, ...]:
        """The per-round lists this object fills (``job`` and ``total`` only when recorded)."""
        return (("cand", "label", "cluster", "glob", "seed") + (("job",) if self.job else ())
                + (("total",) if self.total else ()))

    def round_sizes(self) -> np.ndarray:
        """Each round's candidate count as a ranker sees it at run time (``total``, before
        the K cut and any fair-share filter), else the recorded candidates."""
        if self.total:
            return np.asarray(self.total, dtype=np.int64)
        return np.array([len(lab) for lab in self.label], dtype=np.int64)

    def positive_fraction(self) -> float:
        n = sum(len(x) for x in self.label)
        return float(sum(x.sum() for x in self.label) / max(n, 1))


def collect_demos(env, seeds, max_rounds: int | None = None, progress: bool = True,
                  fair_share_only: bool = False, every: int = 1, driver=None) -> Demos:
    """Run the LP reference on ``env`` (a ``RankEnv``) for each seed and record its rounds.

    Args:
        env: A ``hsched/Rank-v0`` environment (``gymnasium.make(...)`` or the class).
        seeds: Episode seeds (training seeds only: evaluation seeds must stay unseen).
        max_rounds: Stop an episode after recording this many rounds (``None``: to the
            end).
        progress: Show a progress bar.
        fair_share_only: Record only the candidates within their job's fair share (the
            ``within_fair_share`` feature: an LP with the size cap, e.g. ``fair-srpt``, never
            uses the others; the default ``sia-srpt`` has none), as
            a ranker with ``inputs="within-fair-share"`` sees them.
        every: Record one round in ``every`` (the first, then every ``every``-th); the LP
            reference decides every round. A long episode is then sampled over its whole
            length rather than its beginning only.
        driver: ``driver(obs, env)`` -> keep bits: who steps the episode (DAgger: a ranker,
            so that the rounds recorded are the states *it* visits); every recorded label is
            still the LP reference's keep bits of that round. ``None``: the reference
            steps, and the episode's return is recorded (``Demos.returns``).
    """
    if every < 1:
        raise ValueError(f"every must be >= 1, got {every}")
    u = env.unwrapped
    share_col = u.columns["within_fair_share"]
    demos = Demos()
    bar = tqdm(total=len(seeds) * (max_rounds or 0) or None, desc="LP demonstrations",
               unit="round", disable=not progress, leave=False)
    for seed in seeds:
        obs, _ = u.reset(seed=int(seed))
        rounds = recorded = 0
        total = 0.0
        while True:
            record = rounds % every == 0
            valid = obs["valid"] > 0.5
            M = int(valid.sum())
            # the reference's keep bits: the label of a recorded round, and the step when
            # the reference drives (one extra LP solve per recorded round under a driver)
            action = u.reference_action() if (record and M) or driver is None else None
            recorded += record
            if M and record:
                rows = obs["candidates"].reshape(u.candidate_shape)[:M]
                label = action[:M]
                jobs = u.slot_jobs()[:M]
                if fair_share_only:
                    inside = rows[:, share_col] > 0.5
                    rows, label, jobs = rows[inside], label[inside], jobs[inside]
                cluster = obs["cluster"].reshape(-1, len(CLUSTER_FEATURES)).astype(np.float32)
                with th.no_grad():
                    inputs = ranker_inputs(th.as_tensor(rows, dtype=th.float32)[None],
                                           th.as_tensor(cluster)[None])[0]
                demos.cand.append(inputs.numpy())
                demos.label.append(label.astype(np.float32))
                demos.job.append(dense_jobs(jobs))
                demos.cluster.append(cluster.copy())
                demos.glob.append(obs["global"].copy())
                demos.seed.append(int(seed))
                demos.total.append(int(u.slots.total))
                demos.cut_rounds += int(u.slots.total > M)
            step = (action if driver is None
                    else (np.asarray(driver(obs, u)) != 0).astype(np.int8))
            obs, reward, terminated, truncated, _ = u.step(step)
            total += reward
            rounds += 1
            bar.update(int(record))
            if terminated or truncated:
                if driver is None:             # the reference's own return
                    demos.returns[int(seed)] = total
                break
            if max_rounds is not None and recorded >= max_rounds:
                break
    bar.close()
    return demos


def batch_demos(demos: Demos, ids) -> tuple[th.Tensor, ...]:
    """Rounds ``ids`` of ``demos`` as padded tensors ``(cand, valid, cluster, glob, label,
    job)`` (``job`` ``None`` for demonstrations recorded without job indices)."""
    M = max(len(demos.label[i]) for i in ids)
    B = len(ids)
    n_in = demos.cand[ids[0]].shape[1]
    cand = np.zeros((B, M, n_in), dtype=np.float32)
    valid = np.zeros((B, M), dtype=np.float32)
    label = np.zeros((B, M), dtype=np.float32)
    job = np.zeros((B, M), dtype=np.int64) if demos.job else None
    for b, i in enumerate(ids):
        m = len(demos.label[i])
        cand[b, :m] = demos.cand[i]
        valid[b, :m] = 1.0
        label[b, :m] = demos.label[i]
        if job is not None:
            job[b, :m] = demos.job[i]
    cluster = np.stack([demos.cluster[i] for i in ids]).astype(np.float32)
    glob = np.stack([demos.glob[i] for i in ids]).astype(np.float32)
    return (th.as_tensor(cand), th.as_tensor(valid), th.as_tensor(cluster),
            th.as_tensor(glob), th.as_tensor(label),
            None if job is None else th.as_tensor(job))


#: Most padded candidates (rounds × the largest round's candidates) one batch may hold: a batch
#: above it is cut into consecutive parts of as many rounds as fit (at least one). 16 rounds of
#: a 2,000-job ``large-2048`` burst (~135,000 candidates each) hold 2.2 million and took
#: ~13 GiB to fit (a trial regime of session 26, not adopted: BENCHMARKS.md); no batch of the
#: ``mixed`` regimes (at most 16 × ~67,700) is cut, so their fit is unchanged.
MAX_BATCH_CANDIDATES = 1 << 21


def batches(demos: Demos, order, batch_rounds: int, rng=None,
            sort_pool: int = 0,
            max_candidates: int | None = MAX_BATCH_CANDIDATES) -> list[list[int]]:
    """``order`` (round indices) cut into batches of ``batch_rounds`` rounds of one cluster
    shape each (rounds of clusters with different numbers of GPU types cannot share a batch).
    With one shape the batches are consecutive chunks of ``order``; with several, each shape's
    rounds are chunked in ``order`` and the batches shuffled with ``rng`` (when given).

    ``sort_pool`` > 0: each shape's rounds are taken in ``order`` in pools of ``sort_pool``
    batches, and each pool is sorted by round size (ties in ``order``) before it is cut, so
    that a batch holds rounds of similar sizes; the batches are then shuffled with ``rng``
    (when given). A batch is padded to its largest round, and round sizes span 30 to 68,000
    candidates: on the ``mixed`` regimes random batches pad to 2.0× the candidates, pools of 8
    batches to 1.13× (the fit is ~1.8× faster). ``0``: no sorting (the batches before
    2026-12-04).

    ``max_candidates``: a batch whose padded size (rounds × its largest round) exceeds it is
    cut, in its own order, into parts of ``max(1, max_candidates // largest)`` rounds — the
    memory bound of a fit on the largest bursts (``None``: no bound)."""
    if sort_pool < 0:
        raise ValueError(f"sort_pool must be >= 0, got {sort_pool}")
    if max_candidates is not None and max_candidates < 1:
        raise ValueError(f"max_candidates must be >= 1 or None, got {max_candidates}")
    groups: dict[tuple, list[int]] = {}
    for i in order:
        groups.setdefault(demos.cluster[int(i)].shape, []).append(int(i))
    if sort_pool:
        span = batch_rounds * sort_pool
        for shape, g in groups.items():
            groups[shape] = [i for s in range(0, len(g), span)
                             for i in sorted(g[s:s + span], key=lambda i: len(demos.label[i]))]
    out = [g[s:s + batch_rounds] for g in groups.values() for s in range(0, len(g), batch_rounds)]
    if max_candidates is not None:
        out = [part for b in out for part in _within_budget(demos, b, max_candidates)]
    if (len(groups) > 1 or sort_pool) and rng is not None:
        out = [out[i] for i in rng.permutation(len(out))]
    return out


def _within_budget(demos: Demos, batch: list[int], max_candidates: int) -> list[list[int]]:
    """``batch`` cut into consecutive parts whose padded size is at most ``max_candidates``
    (a part of one round may exceed it)."""
    largest = max(len(demos.label[i]) for i in batch)
    if len(batch) * largest <= max_candidates:
        return [batch]
    step = max(1, max_candidates // largest)
    return [batch[s:s + step] for s in range(0, len(batch), step)]


@th.no_grad()
def evaluate_keep(net: RankerNet, demos: Demos, threshold: float = 0.5,
                  batch_rounds: int = 16) -> dict:
    """Precision / recall of the LP's keep bits and the kept fraction, at ``threshold``."""
    net.eval()
    cut = math.log(threshold / (1 - threshold))
    tp = fp = fn = kept = total = 0
    for ids in batches(demos, range(len(demos)), batch_rounds, sort_pool=EVAL_SORT_POOL):
        cand, valid, cluster, glob, label, job = batch_demos(demos, ids)
        logits, _ = net(cand, valid, cluster, glob, job=job)
        pred = (logits > cut) & (valid > 0.5)
        y = label > 0.5
        tp += int((pred & y).sum())
        fp += int((pred & ~y).sum())
        fn += int((~pred & y & (valid > 0.5)).sum())
        kept += int(pred.sum())
        total += int(valid.sum())
    return {"precision": tp / max(tp + fp, 1), "recall": tp / max(tp + fn, 1),
            "kept_fraction": kept / max(total, 1), "rounds": len(demos)}


# glibc's mallopt parameters (malloc.h)
_M_TRIM_THRESHOLD, _M_MMAP_THRESHOLD, _M_MMAP_MAX = -1, -3, -4
#: What ``retained_heap`` leaves on exit. Any mallopt call ends glibc's adaptive mmap
#: threshold for good (nothing turns it back on), so the block cannot restore the state it
#: found; it leaves the one the adaptive rule reaches after large frees: mmap above 32 MiB
#: (its cap on 64-bit), trim above twice that, up to 65,536 mappings (the default count).
#: A trim threshold of 128 KiB here would give a 4 MB array's pages back on every free.
_EXIT_MMAP_THRESHOLD, _EXIT_TRIM_THRESHOLD, _EXIT_MMAP_MAX = 32 << 20, 64 << 20, 65536


@contextlib.contextmanager
def retained_heap():
    """Within the block, glibc's ``malloc`` serves every allocation from its heap and keeps freed
    memory there (no ``mmap``, no trimming); after it, the heap is trimmed and the allocator
    left as glibc's adaptive rule leaves it after large frees (``_EXIT_*``: the exact state
    before cannot be restored). A fitting batch allocates tensors of tens to hundreds of MB: by
    default each comes from a fresh ``mmap``, whose pages the kernel must fault in and zero on
    first touch, and goes back on ``free`` — on the ``mixed`` regimes that made the kernel's
    time as large as the arithmetic (8.0 s of system against 10 s of user time over 3 epochs of
    the LP's rounds; retained: 1.4–3.0 s, each epoch 1.6–1.9× faster). The heap is never trimmed
    within the block: a trim threshold of 1 GiB still gave back the top of the heap after every
    batch of whole 1,000-job rounds (130 of a training's first 300 s in the kernel). The numbers
    computed do not change (the same weights either way, tested). Elsewhere than glibc, a no-op."""
    libc = None
    if sys.platform.startswith("linux"):
        try:
            libc = ctypes.CDLL("libc.so.6")
            libc.mallopt, libc.malloc_trim                     # noqa: B018 (glibc only)
        except (OSError, AttributeError):
            libc = None
    if libc is None:
        yield
        return
    libc.mallopt(_M_MMAP_MAX, 0)
    libc.mallopt(_M_TRIM_THRESHOLD, -1)                  # -1: never trim (mallopt(3))
    try:
        yield
    finally:
        libc.mallopt(_M_MMAP_MAX, _EXIT_MMAP_MAX)
        libc.mallopt(_M_MMAP_THRESHOLD, _EXIT_MMAP_THRESHOLD)
        libc.mallopt(_M_TRIM_THRESHOLD, _EXIT_TRIM_THRESHOLD)
        libc.malloc_trim(0)


#: ``sort_pool`` of the evaluation passes (``evaluate_keep``, ``regimes.keep_logits``): every
#: round of a shape sorted by size, the least padding (their results do not depend on how the
#: rounds are batched, up to float rounding).
EVAL_SORT_POOL = 1 << 20

#: How ``behaviour_clone`` weighs the candidates' losses (see there).
LOSS_WEIGHTINGS = ("round", "candidate")


def weighted_loss(loss: th.Tensor, valid: th.Tensor, weighting: str) -> th.Tensor:
    """Mean of a (rounds, K) per-candidate loss over the valid candidates: per round first,
    then over rounds (``"round"``), or pooled over every candidate (``"candidate"``)."""
    if weighting == "candidate":
        return (loss * valid).sum() / valid.sum().clamp(min=1)
    per_round = (loss * valid).sum(1) / valid.sum(1).clamp(min=1)
    return per_round.mean()


def behaviour_clone(net: RankerNet, demos: Demos, *, epochs: int = 30,
                    batch_rounds: int = 16, lr: float = 1e-3, pos_weight: float = 3.0,
                    seed: int = 0, valid_demos: Demos | None = None, progress: bool = True,
                    log_fn=None, weighting: str = "round", sort_pool: int = 0) -> list[dict]:
    """Fit ``net``'s keep-logits to the demonstrations (binary cross-entropy per candidate).

    ``weighting``: ``"round"`` (default) averages the loss over each round's candidates and
    then over rounds, so every decision round counts the same whatever its size (a 2,000-job
    burst does not drown a 64-GPU cluster's rounds); ``"candidate"`` pools every candidate
    of the batch (the weighting before 2026-12-03). ``sort_pool``: batches of rounds of
    similar sizes (``batches``; 0: random batches, as before 2026-12-04).

    Returns one record per epoch (train loss, and precision / recall / kept fraction on
    ``valid_demos`` when given); ``log_fn(epoch, record)`` is called after each epoch.
    """
    if len(demos) == 0:
        raise ValueError("no demonstrations to learn from")
    if weighting not in LOSS_WEIGHTINGS:
        raise ValueError(f"weighting must be one of {LOSS_WEIGHTINGS}, got {weighting!r}")
    rng = np.random.default_rng(seed)
    th.manual_seed(seed)
    opt = th.optim.Adam(net.parameters(), lr=lr)
    weight = th.tensor(pos_weight)
    with retained_heap():
        history = _clone_epochs(net, demos, opt, weight, rng, epochs, batch_rounds, sort_pool,
                                weighting, valid_demos, progress, log_fn)
    net.eval()
    return history


def _clone_epochs(net, demos, opt, weight, rng, epochs, batch_rounds, sort_pool, weighting,
                  valid_demos, progress, log_fn) -> list[dict]:
    """``behaviour_clone``'s epochs: one record each."""
    history = []
    for epoch in tqdm(range(epochs), desc="imitation", unit="epoch", disable=not progress,
                      leave=False):
        net.train()
        order = rng.permutation(len(demos))
        losses = []
        t0 = time.perf_counter()
        for ids in batches(demos, order, batch_rounds, rng, sort_pool=sort_pool):
            cand, valid, cluster, glob, label, job = batch_demos(demos, ids)
            logits, _ = net(cand, valid, cluster, glob, job=job)
            loss = th.nn.functional.binary_cross_entropy_with_logits(
                logits, label, pos_weight=weight, reduction="none")
            loss = weighted_loss(loss, valid, weighting)
            opt.zero_grad()
            loss.backward()
            opt.step()
            losses.append(float(loss.detach()))
        rec = {"epoch": epoch, "loss": float(np.mean(losses)),
               "seconds": time.perf_counter() - t0}
        if valid_demos is not None and len(valid_demos):
            rec.update({f"valid_{k}": v for k, v in evaluate_keep(net, valid_demos).items()
                        if k != "rounds"})
        history.append(rec)
        if log_fn is not None:
            log_fn(epoch, rec)
    return history
