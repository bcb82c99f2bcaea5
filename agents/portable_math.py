"""Instruction-set-independent arithmetic for training (``hsched train --portable-math``).

PyTorch picks its CPU kernels by instruction set: MKL's matrix products take an SSE, AVX2,
AVX-512 or AMX path, and ATen's own vectorized kernels (reductions, ``exp``, Adam's
element-wise steps) a baseline, AVX2 or AVX-512 one. The paths round differently, and a
training run of thousands of steps carries a last-bit difference into different weights: the
same command wrote three different ranker files on an AMD EPYC, on an Intel Xeon and on that
Xeon with MKL held to AVX2 (``agents/data/README.md``). Two settings take one path whatever
the instruction sets of a CPU with AVX2 — the same fingerprint (below) on an Intel Xeon with its
kernels held to AVX2 or SSE4.2 and, in session 44, on an AMD EPYC likewise — though not
across the two vendors: the EPYC's fingerprint is ``9ee98a0f8f49caa5`` (also with MKL, oneDNN,
ATen, NumPy and OpenBLAS held to AVX2, or MKL to SSE4.2), the Xeon's ``a027ceb7fa6eafff``
(``KNOWN_FINGERPRINTS``), so a file trained on one vendor's CPU is not written byte for byte
on the other's (which operation differs was not looked into; the shipped file is the EPYC's
since session 46):

* ``MKL_CBWR=COMPATIBLE`` — MKL's conditional numerical reproducibility mode on its SSE2
  branch, the one branch whose results Intel states are the same on Intel and non-Intel
  processors (a branch such as ``AVX2`` falls back to MKL's own dispatch on non-Intel CPUs);
* ``ATEN_CPU_CAPABILITY=avx2`` — ATen's AVX2 kernels: the same instructions, so the same
  results, on every CPU that has them. (Its baseline kernels, ``default``, would not need
  AVX2 but cost 1.2x more training time; a CPU without AVX2 runs them anyway, and the
  fingerprint below tells.)

Both are read when PyTorch first computes, so they must be set before the process runs any
tensor operation: ``enable()`` sets them and refuses a process where PyTorch has already
computed (its fingerprint, below, then differs from a fresh process's, or ATen chose other
kernels). The imitation data need nothing: NumPy's, OpenBLAS' and HiGHS' results here do
not change with the instruction set (the demonstrations hashed the same with NumPy's AVX2 and
AVX-512 paths switched off, and with OpenBLAS held to its Haswell or Prescott kernels).
Behaviour cloning runs ~1.3x slower this way (``BENCHMARKS.md``).

``fingerprint()`` is a hash of a few steps of a small network's training on fixed data: the
same on machines whose MKL arithmetic agrees. ``REFERENCE_FINGERPRINT`` is its value with
portable arithmetic on the machine the shipped ranker was trained on; ``enable()`` returns
this machine's, and the ranker file records it (``meta["arithmetic_fingerprint"]``). What it
does not cover: ATen's kernels (``enable()`` checks them by name), the thread count (portable
training runs PyTorch on one thread) and the library versions (the same torch, NumPy and
HiGHS are needed for the same file; ``agents/data/README.md`` names the shipped file's).
"""

from __future__ import annotations

import hashlib
import logging
import os
import platform
import subprocess
import sys
from pathlib import Path

from hsched_env.errors import ConfigError

log = logging.getLogger(__name__)

#: The environment variables of portable arithmetic and their values.
PORTABLE_ENV = {"MKL_CBWR": "COMPATIBLE", "ATEN_CPU_CAPABILITY": "avx2"}
#: ``fingerprint()`` with portable arithmetic on the CPUs it was measured on, by vendor
#: (``/proc/cpuinfo``'s ``vendor_id``): an Intel Xeon (session 42; the same with its kernels
#: held to AVX2 or SSE4.2) and an AMD EPYC (session 44; the same with its kernels held to
#: AVX2, or MKL to SSE4.2). Other models of either vendor were not measured.
KNOWN_FINGERPRINTS = {"GenuineIntel": "a027ceb7fa6eafff", "AuthenticAMD": "9ee98a0f8f49caa5"}
#: ``fingerprint()`` with portable arithmetic on the machine ``agents/data/ranker.pt`` was
#: trained on: since session 46 an AMD EPYC (session 42's file was trained on the Xeon).
REFERENCE_FINGERPRINT = KNOWN_FINGERPRINTS["AuthenticAMD"]


def check_environment() -> None:
    """``ConfigError`` unless portable arithmetic can be set here: an x86-64 machine, and no
    variable of ``PORTABLE_ENV`` set to another value (checked with the training's
    configuration, before its run folder is written)."""
    machine = platform.machine().lower()
    if machine not in ("x86_64", "amd64"):
        raise ConfigError(f"portable arithmetic is defined for x86-64 CPUs (MKL's COMPATIBLE "
                          f"branch, ATen's AVX2 kernels); this machine is {machine}",
                          field="--portable-math")
    for name, value in PORTABLE_ENV.items():
        given = os.environ.get(name)
        if given is not None and given.lower() != value.lower():
            raise ConfigError(f"needs {name}={value}, but the environment sets "
                              f"{name}={given}: unset it", field="--portable-math")


def enable() -> str:
    """Set portable arithmetic for this process (PyTorch on one thread); returns
    ``fingerprint()``.

    ``ConfigError`` (``check_environment``) off x86-64 or when one of ``PORTABLE_ENV`` is set
    to another value, and when PyTorch has already computed in this process: ATen chose other
    kernels, or the fingerprint differs from a fresh process's (measured in a subprocess,
    ~2 s). A fresh fingerprint other than ``REFERENCE_FINGERPRINT`` is logged as a warning:
    training is then reproducible on this kind of machine, but not byte for byte against
    files trained on the reference machine.
    """
    check_environment()
    for name, value in PORTABLE_ENV.items():
        os.environ[name] = value
    import torch as th
    th.set_num_threads(1)
    capability = th.backends.cpu.get_cpu_capability()
    found = fingerprint() if capability in ("AVX2", "DEFAULT") else None  # DEFAULT: no AVX2
    if found is None or found != fresh_fingerprint():
        raise ConfigError("PyTorch already computed in this process"
                          + (f" with its {capability} kernels" if found is None else "")
                          + "; portable arithmetic must be chosen before the first tensor "
                          "operation: run the training in a fresh process, or set "
                          + " ".join(f"{k}={v}" for k, v in PORTABLE_ENV.items())
                          + " in its environment", field="--portable-math")
    if found != REFERENCE_FINGERPRINT:
        log.warning("portable arithmetic: this machine's fingerprint is %s, the reference "
                    "machine's %s — its training is reproducible here but will not match "
                    "files trained there byte for byte", found, REFERENCE_FINGERPRINT)
    return found


def fresh_fingerprint() -> str:
    """``fingerprint()`` in a new Python process with portable arithmetic set."""
    root = Path(__file__).resolve().parents[1]
    code = (f"import sys; sys.path.insert(0, {str(root)!r}); import torch; "
            f"torch.set_num_threads(1); from agents.portable_math import fingerprint; "
            f"print(fingerprint())")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          env={**os.environ, **PORTABLE_ENV}, timeout=300)
    if proc.returncode != 0:
        raise RuntimeError(f"the fresh-process fingerprint failed: {proc.stderr.strip()}")
    return proc.stdout.strip()


def fingerprint() -> str:
    """A hash (16 hex digits) of four Adam steps of a two-layer network with a pooled set
    embedding, fed fixed data: the kinds of operation the ranker's training uses (matrix
    products forward and backward, ReLU, max-pooling, the weighted binary cross-entropy,
    Adam). It draws from its own generator, not from PyTorch's global one, and trains also
    when called under ``no_grad`` or ``inference_mode``."""
    import torch as th
    from torch.nn import functional as F

    with th.inference_mode(False), th.enable_grad():
        gen = th.Generator().manual_seed(20261205)
        x = th.randn(3, 57, 23, generator=gen)
        label = (th.rand(3, 57, generator=gen) < 0.2).float()
        w1 = (0.2 * th.randn(48, 23, generator=gen)).requires_grad_()
        b1 = (0.1 * th.randn(48, generator=gen)).requires_grad_()
        w2 = (0.2 * th.randn(1, 96, generator=gen)).requires_grad_()
        params = [w1, b1, w2]
        opt = th.optim.Adam(params, lr=1e-2)
        for _ in range(4):
            h = F.relu(F.linear(x, w1, b1))
            pooled = h.max(dim=1, keepdim=True).values.expand_as(h)
            logits = F.linear(th.cat([h, pooled], dim=-1), w2).squeeze(-1)
            loss = F.binary_cross_entropy_with_logits(logits, label,
                                                      pos_weight=th.tensor(3.0))
            opt.zero_grad()
            loss.backward()
            opt.step()
        # a long reduction and exponentials too: ATen's vectorized kernels differ there
        tail = th.exp(-th.linspace(0.0, 7.0, 4099)).mul(w2.detach().sum()).sum(
            dim=0, keepdim=True)
    digest = hashlib.sha256()
    for p in params + [tail]:
        digest.update(p.detach().numpy().tobytes())
    return digest.hexdigest()[:16]
