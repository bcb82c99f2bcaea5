"""``hsched train --portable-math``: CPU-independent arithmetic (``agents.portable_math``).

The instruction sets another CPU would use are imitated here by holding this CPU's kernels to
fewer of them (MKL to AVX2 or SSE4.2, oneDNN, ATen, NumPy's dispatch and OpenBLAS to AVX2):
under portable arithmetic the fingerprint and a trained ranker's weights must not change. On an
Intel or AMD CPU the fingerprint must be the one measured for that vendor
(``KNOWN_FINGERPRINTS``: an Intel Xeon, session 42; an AMD EPYC, session 44), and the reference
(the shipped ranker's machine, an AMD EPYC since session 46) is the AMD one."""

from __future__ import annotations

import hashlib
import os
import platform
import subprocess
import sys
from pathlib import Path

import pytest
import torch as th

from agents import portable_math
from agents.train import make_config
from hsched_env.errors import ConfigError

ROOT = Path(__file__).resolve().parents[1]
slow = pytest.mark.slow
#: The reference fingerprint is this build's on x86-64 with MKL: elsewhere it cannot match.
reference_build = pytest.mark.skipif(
    platform.machine().lower() not in ("x86_64", "amd64") or not th.backends.mkl.is_available()
    or th.__version__.split("+")[0] != "2.13.0",
    reason="the reference fingerprint is torch 2.13.0's with MKL on x86-64")


def _cpu_vendor() -> str | None:
    cpuinfo = Path("/proc/cpuinfo")
    if not cpuinfo.is_file():
        return None
    for line in cpuinfo.read_text(errors="replace").splitlines():
        if line.startswith("vendor_id"):
            return line.split(":", 1)[1].strip()
    return None


def _is_intel() -> bool:
    return _cpu_vendor() == "GenuineIntel"


#: Portable arithmetic's fingerprint was measured on an Intel Xeon and an AMD EPYC with the
#: same software, one value per vendor (agents/data/README.md).
known_vendor = pytest.mark.skipif(
    _cpu_vendor() not in portable_math.KNOWN_FINGERPRINTS,
    reason="portable arithmetic's fingerprint was measured on Intel and AMD CPUs only")
#: Holding this CPU's kernels to AVX2 changes nothing where they are AVX2 already.
wider_than_avx2 = pytest.mark.skipif(
    th.backends.cpu.get_cpu_capability() in ("AVX2", "DEFAULT"),
    reason="this CPU's own kernels are the AVX2 ones: nothing to narrow")

#: Environment settings that hold this machine's kernels to older instruction sets.
NARROWER = {
    "MKL_ENABLE_INSTRUCTIONS": "AVX2", "ONEDNN_MAX_CPU_ISA": "AVX2", "ATEN_CPU_CAPABILITY": "avx2",
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


def _portable_fingerprint(**narrower) -> str:
    proc = _python(FINGERPRINT, **narrower)
    assert proc.returncode == 0, proc.stderr
    (found,) = proc.stdout.split()
    return found


@slow
@reference_build
def test_the_fingerprint_is_the_same_whatever_the_instruction_set():
    """Portable arithmetic's fingerprint on this CPU, natively and with its kernels held to
    AVX2 or MKL to SSE4.2: one value."""
    native = _portable_fingerprint()
    assert _portable_fingerprint(**NARROWER) == native
    assert _portable_fingerprint(MKL_ENABLE_INSTRUCTIONS="SSE4_2") == native


@slow
@reference_build
@known_vendor
def test_the_fingerprint_is_the_one_measured_for_this_cpu_vendor():
    """An Intel CPU gives the Xeon's fingerprint, an AMD CPU the EPYC's, and ``enable()``
    warns exactly where it is not the shipped file's machine's (the EPYC's)."""
    known = portable_math.KNOWN_FINGERPRINTS[_cpu_vendor()]
    proc = _python(FINGERPRINT)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.split() == [known]
    assert ("not match" in proc.stderr) == (known != portable_math.REFERENCE_FINGERPRINT)
    assert portable_math.REFERENCE_FINGERPRINT == portable_math.KNOWN_FINGERPRINTS["AuthenticAMD"]


@slow
@pytest.mark.parametrize("preset", [{}, {"ATEN_CPU_CAPABILITY": "avx2"}],
                         ids=["native-kernels", "avx2-kernels"])
def test_enable_refuses_a_process_that_already_computed(preset):
    """With ATen's kernels already the AVX2 ones (as on an AVX2 CPU), only the fingerprint
    against a fresh process's tells that MKL was initialized without its COMPATIBLE branch."""
    if not preset and th.backends.cpu.get_cpu_capability() in ("AVX2", "DEFAULT"):
        pytest.skip("this CPU's own kernels are the AVX2 ones: the other case covers it")
    proc = _python("import torch; (torch.randn(64, 64) @ torch.randn(64, 64)).exp().sum(); "
                   "from agents.portable_math import enable; enable()", **preset)
    assert proc.returncode != 0
    assert "already computed" in proc.stderr and "fresh process" in proc.stderr


def test_a_contrary_setting_is_refused_before_the_run_folder(monkeypatch, tmp_path, capsys):
    from hsched_cli.main import main
    monkeypatch.setenv("MKL_CBWR", "AVX2")
    with pytest.raises(ConfigError, match="needs MKL_CBWR=COMPATIBLE.*MKL_CBWR=AVX2"):
        portable_math.check_environment()
    run = tmp_path / "run"
    assert main(["train", "--env", "hsched/Rank-Tiny-v0", "--algo", "imitation",
                 "--portable-math", "--logdir", str(run)]) == 2
    assert "'--portable-math': needs MKL_CBWR=COMPATIBLE" in capsys.readouterr().err
    assert not run.exists()


def test_portable_arithmetic_is_one_thread():
    with pytest.raises(ConfigError, match="one PyTorch thread"):
        make_config("hsched/Rank-Tiny-v0", algo="imitation", portable_math=True,
                    torch_threads=2)


def test_the_fingerprint_is_stable_within_a_process_and_leaves_the_global_generator():
    th.manual_seed(5)
    first = th.rand(3)
    th.manual_seed(5)
    a = portable_math.fingerprint()
    assert th.equal(th.rand(3), first)          # drew nothing from the global generator
    assert portable_math.fingerprint() == a and len(a) == 16
    with th.inference_mode():                   # it trains there too
        assert portable_math.fingerprint() == a


def test_the_flag_is_a_train_config_field():
    assert make_config("hsched/Rank-Tiny-v0", algo="imitation",
                       portable_math=True).portable_math is True
    assert make_config("hsched/Rank-Tiny-v0", algo="imitation").portable_math is False


def _weights(path: Path) -> str:
    blob = th.load(path, weights_only=True)
    digest = hashlib.sha256()
    for name, tensor in blob["state_dict"].items():
        digest.update(name.encode() + tensor.numpy().tobytes())
    return digest.hexdigest()


def _train_tiny(run: Path, narrower: dict, portable: bool) -> Path:
    proc = subprocess.run(
        [sys.executable, "-m", "hsched_cli", "train", "--env", "hsched/Rank-Tiny-v0",
         "--algo", "imitation", "--imitation-seeds", "3", "--set", "imitation_epochs=4",
         *(["--portable-math"] if portable else []), "--logdir", str(run), "--no-progress"],
        capture_output=True, text=True, cwd=ROOT, env=_env(**narrower), timeout=300)
    assert proc.returncode == 0, proc.stderr
    if portable:
        assert "portable arithmetic (MKL_CBWR=COMPATIBLE" in proc.stderr
    return run / "ranker.pt"


@slow
@wider_than_avx2
def test_portable_training_writes_the_same_weights_on_a_narrower_instruction_set(tmp_path):
    """The tiny ranker's imitation under the native and the narrower kernels: the same weights
    with --portable-math, and the file records the fingerprint. Without it, on an Intel CPU
    (whose MKL takes the narrower path when told to) the weights differ: what the flag is for.
    An AMD EPYC's MKL keeps its own path, and this tiny run's weights did not differ there."""
    from agents.ranker_file import read_ranker_file
    if _is_intel():
        plain = [_train_tiny(tmp_path / f"plain-{n}", narrower, portable=False)
                 for n, narrower in (("native", {}), ("avx2", NARROWER))]
        assert _weights(plain[0]) != _weights(plain[1])
    portable = [_train_tiny(tmp_path / f"portable-{n}", narrower, portable=True)
                for n, narrower in (("native", {}), ("avx2", NARROWER))]
    assert _weights(portable[0]) == _weights(portable[1])
    meta = read_ranker_file(portable[0])["meta"]
    assert meta["arithmetic_fingerprint"] == portable_math.fresh_fingerprint()
