"""The environment speed scripts run and report what they say (their timings are measured in
BENCHMARKS.md, not asserted here)."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import pytest

SCRIPTS = Path(__file__).resolve().parents[1] / "scripts"


def _load(name: str):
    spec = importlib.util.spec_from_file_location(name, SCRIPTS / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_bench_rank_round_reports_cpu_ms_per_round(capsys):
    script = _load("bench_rank_round")
    assert script.main(["--rounds", "5", "--warmup", "2", "--keep", "1", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["rounds"] == 5 and out["keep"] == 1.0 and out["cpu_ms_per_round"] > 0
    with pytest.raises(SystemExit):
        script.main(["--rounds", "0"])


def test_bench_env_lists_its_configurations_in_help(capsys):
    script = _load("bench_env")
    with pytest.raises(SystemExit):
        script.main(["--help"])
    text = capsys.readouterr().out
    assert "Rank-v0 keep 1/2" in text and "(default: 5)" in text
