"""The built wheel: what a user who installs the package (not a checkout) gets."""

from __future__ import annotations

import importlib.metadata
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]

#: Run-time files outside the Python modules (pyproject.toml's package-data): the catalogs
#: and Gavel's measured table with their sources and licence, the shipped ranker and the
#: training hyper-parameter files.
PACKAGE_DATA = ("hsched_env/data/clusters.json", "hsched_env/data/gpus.json",
                "hsched_env/data/models.json", "hsched_env/data/simulation_throughputs.json",
                "hsched_env/data/CATALOG_SOURCES.md", "hsched_env/data/LICENSE.gavel",
                "agents/data/ranker.pt", "agents/data/README.md",
                "agents/hyperparams/ppo.yml", "agents/hyperparams/maskable_ppo.yml")


@pytest.mark.slow
def test_the_wheel_holds_the_run_time_data_and_both_licences(tmp_path):
    """Built from a copy of the source tree (no network: this environment's setuptools), the
    wheel holds every module package, the package data the code reads at run time and both
    licences in its metadata, and none of the checkout's tests, scripts or docs."""
    # looked up, not imported: importing pip (which loads the standard library's distutils)
    # or setuptools (which replaces it) here would change this test process for the others
    have = {}
    for dist in ("pip", "setuptools"):         # (setuptools >= 70.1 builds wheels itself)
        try:
            have[dist] = importlib.metadata.version(dist)
        except importlib.metadata.PackageNotFoundError:
            pytest.skip(f"{dist} is not installed: nothing to build the wheel with")
    if int(have["setuptools"].split(".")[0]) < 77:
        pytest.skip(f"setuptools {have['setuptools']}: the SPDX licence needs >= 77")
    src = tmp_path / "src"
    shutil.copytree(REPO, src, ignore=shutil.ignore_patterns(
        ".venv", ".git", "runs", "build", "dist", "*.egg-info", "__pycache__",
        ".pytest_cache", ".hypothesis"))
    out = tmp_path / "dist"
    done = subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps",
                           "--no-build-isolation", "--disable-pip-version-check", "-q",
                           "-w", str(out), str(src)], capture_output=True, text=True,
                          timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    wheel, = out.glob("heterosched-*.whl")
    names = set(zipfile.ZipFile(wheel).namelist())
    missing = [f for f in PACKAGE_DATA if f not in names]
    assert not missing, missing
    for package in ("hsched_env", "lp_baseline", "agents", "hsched_cli"):
        assert f"{package}/__init__.py" in names
    assert not [n for n in names if n.split("/")[0] in ("tests", "scripts", "docs", "runs")]
    info = next(n for n in names if n.endswith(".dist-info/METADATA"))
    metadata = zipfile.ZipFile(wheel).read(info).decode()
    assert "License-Expression: Apache-2.0" in metadata
    assert "License-File: LICENSE" in metadata
    assert "License-File: hsched_env/data/LICENSE.gavel" in metadata
