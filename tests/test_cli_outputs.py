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
