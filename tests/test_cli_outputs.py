"""Output folders of the CLI never lose earlier results (session 49's audit): another
command's ``metrics.json`` is not replaced without ``--overwrite``, ``--resume`` replaces only
what its sweep's run files remake, ``~`` is expanded in output paths, SIGTERM cleans up as
Ctrl-C does, and the printed TensorBoard command survives a path with spaces."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from agents.report import tensorboard_command
from hsched_cli.main import build_parser, main

WORKLOAD = ["--cluster", "tiny-8", "--workload", "gavel:rate=8,jobs=16,duration_scale=0.05"]


def _earlier_results(folder: Path, data) -> str:
    folder.mkdir(parents=True)
    text = json.dumps(data)
    (folder / "metrics.json").write_text(text)
    return text


def test_compare_and_evaluate_refuse_a_folder_with_earlier_results(tmp_path, capsys):
    out = tmp_path / "E"
    text = _earlier_results(out, {"suite": "custom", "scenarios": []})
    code = main(["compare", *WORKLOAD, "--policies", "fifo", "--backend", "ray", "--out",
                 str(out), "--no-progress"])
    err = capsys.readouterr().err
    assert code == 2 and "already holds a metrics.json" in err and "--overwrite" in err
    # --resume with no run files of a sweep there: nothing to resume, so nothing to replace
    code = main(["evaluate", *WORKLOAD, "--policies", "fifo", "--seeds", "1", "--backend",
                 "ray", "--out", str(out), "--resume", "--no-progress"])
    err = capsys.readouterr().err
    assert code == 2 and "there are none" in err
    assert (out / "metrics.json").read_text() == text and not (out / "runs").exists()


def test_the_demo_replaces_only_its_own_results(tmp_path, capsys):
    out = tmp_path / "E"
    text = _earlier_results(out, [{"policy": "fifo"}])              # a comparison's
    assert main(["demo", "--out", str(out)]) == 2
    assert "not the demo's" in capsys.readouterr().err
    assert (out / "metrics.json").read_text() == text


def test_output_paths_expand_the_home_folder():
    parser = build_parser()
    home = str(Path.home())
    assert parser.parse_args(["evaluate", "--out", "~/ev"]).out == f"{home}/ev"
    assert parser.parse_args(["demo", "--out", "~/d"]).out == f"{home}/d"
    assert parser.parse_args(["train", "--logdir", "~/t"]).logdir == f"{home}/t"
    assert parser.parse_args(["compare", "--policies", "fifo", "--out", "~/c", *WORKLOAD]
                             ).out == f"{home}/c"
    assert parser.parse_args(["simulate", "--jobs-out", "~/j.csv", *WORKLOAD]
                             ).jobs_out == f"{home}/j.csv"
    assert parser.parse_args(["demo"]).out == "runs/demo"


def test_tensorboard_command_quotes_a_path_with_spaces():
    assert tensorboard_command("tr sp/run").endswith("--logdir 'tr sp/run'")


def test_sigterm_cleans_up_as_ctrl_c_does(tmp_path):
    """``kill`` during an evaluation into the default folder: exit 143 and no claim left
    behind (it held runs/eval-custom for ever: later runs wrote to -2, -3, ...)."""
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    proc = subprocess.Popen(
        [sys.executable, "-m", "hsched_cli", "evaluate", "--cluster", "sia-64", "--workload",
         "gavel:rate=3,jobs=60", "--policies", "pure-lp,fifo", "--seeds", "4",
         "--no-progress"], cwd=tmp_path, env=env, stdout=subprocess.PIPE,
        stderr=subprocess.PIPE, text=True)
    claim = tmp_path / "runs" / "eval-custom" / ".evaluation"
    deadline = time.monotonic() + 120
    while not claim.exists() and proc.poll() is None and time.monotonic() < deadline:
        time.sleep(0.02)
    assert claim.exists(), "the evaluation never claimed its folder"
    time.sleep(0.3)
    proc.send_signal(signal.SIGTERM)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 143 and "hsched evaluate: terminated" in err
    assert not (tmp_path / "runs").exists()


# ---------------------------------------------------------------------------- sweeps (session 50)
@pytest.fixture
def serial_ray(monkeypatch):
    """``--backend ray`` without Ray: the CLI's sweeps (their run files, ``--resume``) run on
    the serial backend in this process (the checks under test come before any backend
    starts)."""
    from agents.sweep import SerialBackend
    monkeypatch.setattr("agents.evaluate.RayBackend", lambda **kw: SerialBackend())
    monkeypatch.setattr("agents.sweep.RayBackend", lambda **kw: SerialBackend())


def _files(folder: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted(folder.iterdir())} if folder.is_dir() else {}


def test_resume_replaces_only_the_results_of_its_own_sweep(tmp_path, capsys, serial_ray):
    """``--resume`` replaced an evaluation's metrics.json with the results of a sweep that
    resumed none of its run files (another configuration: "1 run file(s) of another
    configuration left unused"), and a comparison's resume replaced an evaluation's; both are
    refused before any run, naming --out, while a resume that reuses run files goes on."""
    out = tmp_path / "E"
    ev = ["evaluate", "--seeds", "1", "--backend", "ray", "--out", str(out), "--no-progress",
          "--json"]
    assert main(ev + [*WORKLOAD, "--policies", "fifo"]) == 0
    capsys.readouterr()
    before, runs = (out / "metrics.json").read_text(), _files(out / "runs")
    assert len(runs) == 1
    other = ["--cluster", "tiny-8", "--workload", "gavel:rate=8,jobs=12,duration_scale=0.05"]
    assert main(ev + [*other, "--policies", "fifo", "--resume"]) == 2
    err = capsys.readouterr().err
    assert "field '--out'" in err and "none of the 1 run file(s)" in err, err
    assert "nothing would be resumed" in err
    code = main(["compare", *WORKLOAD, "--policies", "fifo", "--backend", "ray", "--out",
                 str(out), "--resume", "--no-progress"])
    captured = capsys.readouterr()
    assert code == 2 and captured.out == ""
    assert "field '--out'" in captured.err and "not a comparison's" in captured.err
    assert "an evaluation's" in captured.err
    assert (out / "metrics.json").read_text() == before and _files(out / "runs") == runs
    assert not (out / "environment.json").exists()
    # the same sweep with one more policy: its run is resumed, its metrics.json replaced
    assert main(ev + [*WORKLOAD, "--policies", "fifo,pure-lp", "--resume"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["sweep"]["resumed"] == 1 and data["sweep"]["tasks"] == 2
    assert data["policies"] == ["fifo", "pure-lp"]
    assert json.loads((out / "metrics.json").read_text())["policies"] == ["fifo", "pure-lp"]


def test_compare_resume_replaces_only_its_own_results(tmp_path, capsys, serial_ray):
    out = tmp_path / "C"
    cmp = ["compare", *WORKLOAD, "--backend", "ray", "--out", str(out), "--no-progress",
           "--json"]
    assert main(cmp + ["--policies", "fifo"]) == 0
    capsys.readouterr()
    before, runs = (out / "metrics.json").read_text(), _files(out / "runs")
    assert main(cmp + ["--policies", "fifo", "--seed", "5", "--resume"]) == 2   # other runs
    err = capsys.readouterr().err
    assert "field '--out'" in err and "none of the 1 run file(s)" in err, err
    assert main(["evaluate", *WORKLOAD, "--policies", "fifo", "--seeds", "1", "--backend",
                 "ray", "--out", str(out), "--resume", "--no-progress"]) == 2
    err = capsys.readouterr().err
    assert "not an evaluation's" in err and "a comparison's" in err, err
    assert (out / "metrics.json").read_text() == before and _files(out / "runs") == runs
    assert main(cmp + ["--policies", "fifo,gavel", "--resume"]) == 0
    captured = capsys.readouterr()
    assert "1 of 2 runs resumed" in captured.err
    assert [m["policy"] for m in json.loads((out / "metrics.json").read_text())] == [
        "fifo", "gavel"]


def test_a_file_named_runs_in_out_is_refused_before_any_run(tmp_path, capsys, serial_ray):
    """A file ``OUT/runs`` made the first finished run of a Ray sweep fail with a traceback
    (``mkdir``: FileExistsError), after it was computed: now an error naming --out, first."""
    out = tmp_path / "F"
    out.mkdir()
    (out / "runs").write_text("mine")
    for argv in (["evaluate", *WORKLOAD, "--policies", "fifo", "--seeds", "1"],
                 ["compare", *WORKLOAD, "--policies", "fifo"]):
        code = main(argv + ["--backend", "ray", "--out", str(out), "--no-progress"])
        captured = capsys.readouterr()
        assert code == 2 and captured.out == "", captured
        assert "field '--out'" in captured.err and "is a file, not a folder" in captured.err
        assert sorted(p.name for p in out.iterdir()) == ["runs"]
        assert (out / "runs").read_text() == "mine"
