"""agents.provenance: what a run records of the set-up that made its numbers."""

from __future__ import annotations

import json
import platform

import numpy as np
import scipy

from agents import provenance
from agents.provenance import cpu_model, environment_record, library_versions


def test_library_versions_are_the_installed_ones():
    v = library_versions()
    assert set(v) == set(provenance.RECORDED_LIBRARIES)
    assert v["numpy"] == np.__version__ and v["scipy"] == scipy.__version__
    import highspy  # noqa: F401  (installed with the package)
    assert v["highspy"] and v["highspy"][0].isdigit()


def test_a_missing_library_is_recorded_as_none(monkeypatch):
    monkeypatch.setattr(provenance, "RECORDED_LIBRARIES", ("numpy", "no-such-dist-xyz"))
    assert library_versions() == {"numpy": np.__version__, "no-such-dist-xyz": None}


def test_cpu_model_reads_cpuinfo_and_falls_back(tmp_path, monkeypatch):
    f = tmp_path / "cpuinfo"
    f.write_text("processor\t: 0\nvendor_id\t: GenuineIntel\nmodel name\t: Test CPU @ 2.0GHz\n"
                 "processor\t: 1\nmodel name\t: Test CPU @ 2.0GHz\n")
    assert cpu_model(f) == "Test CPU @ 2.0GHz"
    monkeypatch.setattr(platform, "processor", lambda: "fallback-cpu")
    assert cpu_model(tmp_path / "missing") == "fallback-cpu"
    f.write_text("processor\t: 0\nmodel name\t:\n")           # a blank name: the fallback
    assert cpu_model(f) == "fallback-cpu"
    monkeypatch.setattr(platform, "processor", lambda: "")
    assert cpu_model(tmp_path / "missing") is None


def test_environment_record_is_json_ready():
    rec = environment_record()
    assert rec["python"] == platform.python_version()
    assert rec["machine"] == platform.machine()
    assert json.loads(json.dumps(rec)) == rec


def test_thread_settings_record_the_variables_as_set(monkeypatch):
    monkeypatch.setenv("OMP_NUM_THREADS", "3")
    monkeypatch.delenv("MKL_NUM_THREADS", raising=False)
    got = provenance.thread_settings()
    assert got["OMP_NUM_THREADS"] == "3" and got["MKL_NUM_THREADS"] is None
    assert isinstance(got["cpus"], int) and got["cpus"] >= 1


def test_the_environment_record_holds_the_thread_settings():
    # (not under a patched environment: the record is read once per process)
    assert set(environment_record()["threads"]) == {"cpus", *provenance.THREAD_VARIABLES}


def test_thread_settings_alone_are_the_same_set_up():
    here = environment_record()
    threads = {**here, "threads": {**here["threads"], "OMP_NUM_THREADS": "7"}}
    numpy = {**here, "libraries": {**here["libraries"], "numpy": "0.0"}}
    assert provenance.same_set_up(here, threads)
    assert not provenance.same_set_up(here, numpy)
    assert not provenance.same_set_up(here, {k: v for k, v in here.items() if k != "cpu"})
