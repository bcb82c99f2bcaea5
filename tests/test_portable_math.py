"""``hsched train --portable-math``: CPU-independent arithmetic (``agents.portable_math``).

The instruction sets another CPU would use are imitated here by holding this CPU's kernels to
fewer of them (MKL to AVX2 or SSE4.2, oneDNN to AVX2, NumPy's dispatch and OpenBLAS to
AVX2): under portable arithmetic the fingerprint and a trained ranker's weights must not
change, and the fingerprint must be the one recorded for the shipped ranker's machine."""

from __future__ import annotations

import hashlib
import os
import subprocess
import sys
from pathlib import Path

import pytest

from agents import portable_math
from agents.train import make_config

ROOT = Path(__file__).resolve().parents[1]
slow = pytest.mark.slow

#: Environment settings that hold this machine's kernels to older instruction sets.
NARROWER = {
    "MKL_ENABLE_INSTRUCTIONS": "AVX2", "ONEDNN_MAX_CPU_ISA": "AVX2",
    "NPY_DISABLE_CPU_FEATURES": "X86_V4,AVX512_ICL,AVX512_SPR", "OPENBLAS_CORETYPE": "Haswell",
}


def _env(**extra) -> dict:
    env = {k: v for k, v in os.environ.items()
           if k not in portable_math.PORTABLE_ENV and k not in NARROWER}
    return {**env, "OMP_NUM_THREADS": "1", **extra}


def _python(code: str, **extra) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          cwd=ROOT, env=_env(**extra), timeout=120)


FINGERPRINT = ("import torch; torch.set_num_threads(1); from agents.portable_math import "
               "enable; print(enable())")


@slow
@pytest.mark.parametrize("narrower", [{}, NARROWER, {"MKL_ENABLE_INSTRUCTIONS": "SSE4_2"}],
                         ids=["native", "avx2", "sse4.2"])
def test_the_fingerprint_is_the_reference_whatever_the_instruction_set(narrower):
    proc = _python(FINGERPRINT, **narrower)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.split() == [portable_math.REFERENCE_FINGERPRINT]
    assert "not match" not in proc.stderr                # enable()'s warning


@slow
def test_enable_refuses_a_process_that_already_computed():
    import torch as th
    if th.backends.cpu.get_cpu_capability() in ("AVX2", "DEFAULT"):
        pytest.skip("this CPU's own kernels are the portable ones: nothing to tell apart")
    proc = _python("import torch; (torch.randn(64, 64) @ torch.randn(64, 64)).exp().sum(); "
                   "from agents.portable_math import enable; enable()")
    assert proc.returncode != 0
    assert "fresh process" in proc.stderr and "--portable-math" in proc.stderr


@slow
def test_enable_refuses_a_contrary_setting():
    proc = _python(FINGERPRINT, MKL_CBWR="AVX2")
    assert proc.returncode != 0
    assert "MKL_CBWR=COMPATIBLE" in proc.stderr and "MKL_CBWR=AVX2" in proc.stderr


def test_the_fingerprint_is_stable_within_a_process_and_leaves_the_global_generator():
    import torch as th
    th.manual_seed(5)
    first = th.rand(3)
    th.manual_seed(5)
    a = portable_math.fingerprint()
    assert th.equal(th.rand(3), first)          # drew nothing from the global generator
    assert portable_math.fingerprint() == a and len(a) == 16


def test_the_flag_is_a_train_config_field():
    assert make_config("hsched/Rank-Tiny-v0", algo="imitation",
                       portable_math=True).portable_math is True
    assert make_config("hsched/Rank-Tiny-v0", algo="imitation").portable_math is False


def _weights(path: Path) -> str:
    import torch as th
    blob = th.load(path, weights_only=True)
    digest = hashlib.sha256()
    for name, tensor in blob["state_dict"].items():
        digest.update(name.encode() + tensor.numpy().tobytes())
    return digest.hexdigest()


@slow
def test_portable_training_writes_the_same_weights_on_a_narrower_instruction_set(tmp_path):
    """The tiny ranker's imitation under the native and the narrower kernels: the same weights
    with --portable-math, and the file records the fingerprint."""
    from agents.ranker_file import read_ranker_file
    files = []
    for name, narrower in (("native", {}), ("avx2", NARROWER)):
        run = tmp_path / name
        proc = subprocess.run(
            [sys.executable, "-m", "hsched_cli", "train", "--env", "hsched/Rank-Tiny-v0",
             "--algo", "imitation", "--imitation-seeds", "3", "--set", "imitation_epochs=4",
             "--portable-math", "--logdir", str(run), "--no-progress"],
            capture_output=True, text=True, cwd=ROOT, env=_env(**narrower), timeout=300)
        assert proc.returncode == 0, proc.stderr
        assert f"fingerprint {portable_math.REFERENCE_FINGERPRINT}" in proc.stderr
        files.append(run / "ranker.pt")
    assert _weights(files[0]) == _weights(files[1])
    meta = read_ranker_file(files[0])["meta"]
    assert meta["arithmetic_fingerprint"] == portable_math.REFERENCE_FINGERPRINT
