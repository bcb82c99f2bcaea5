"""Sweeps on a backend (``agents.sweep``; ``hsched evaluate / compare --backend ray``): the run
files and their configuration hash, resume after an interruption, retries of a failed task and
of a dead worker, failures reported next to the runs that completed, and results identical to
the serial backend's.

The tests that need Ray share one local instance with two CPUs (``ray_local``) and skip only
when Ray is not installed (``pip install -e ".[dev,ray]"``, as ``scripts/setup.sh`` does)."""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from agents.evaluate import (custom_suite, deterministic_part, evaluate, run_from_json,
                             run_to_json)
from agents.report import WALL_CLOCK_ROW_KEYS
from agents.runners import WALL_CLOCK_METRICS
from agents.provenance import environment_record, same_set_up
from agents.sweep import (RESULTS_FILE, RUNS_DIR, RayBackend, RunStore, Task, make_backend,
                          run_sweep)
from hsched_cli import simulation as cli_simulation
from hsched_cli.learning import sweep_note
from hsched_cli.main import build_parser, main
from hsched_env.errors import ConfigError
from test_evaluate_own_policy import KeepAll, ReferenceScheduler

slow = pytest.mark.slow
#: Under ``pytest -n`` (``make test``) every test of this file runs in one worker, one after
#: the other: they share a local Ray instance, and one checks that ``--address auto`` finds
#: none (another worker's instance would be found).
pytestmark = pytest.mark.xdist_group("ray")

TINY = ("tiny-8", "gavel:rate=8,jobs=16,duration_scale=0.05")
COMPARE = ["compare", "--cluster", "tiny-8", "--workload",
           "gavel:rate=8,jobs=16,duration_scale=0.05,seed=3", "--policies",
           "fifo,gavel,heterosched-lp", "--no-progress"]


# ---------------------------------------------------------------------------- task bodies
# Module-level functions: the Ray workers import this module (``RayBackend`` hands them this
# process's sys.path), so they run the same code.
def counted(log: str, value):
    """Appends ``value`` to the file ``log`` (one line per execution, any process)."""
    with open(log, "a", encoding="utf-8") as fh:
        fh.write(f"{value}\n")
    return {"value": value}


def flaky(marker: str, value):
    """Raises the first time (no ``marker`` file yet), returns the second time."""
    path = Path(marker)
    if not path.exists():
        path.write_text("failed once", encoding="utf-8")
        raise RuntimeError("the first attempt fails")
    return {"value": value}


def crash_once(marker: str, value):
    """Kills its own worker process the first time, returns the second time."""
    path = Path(marker)
    if not path.exists():
        path.write_text("crashed once", encoding="utf-8")
        os._exit(1)
    return {"value": value}


def always_fails(value):
    raise ValueError(f"bad input {value}")


class CrashingAgent:
    """Rank mode: raises in its first round (a run of a sweep that fails)."""

    name = "crashing"

    def keep(self, obs, env):
        raise RuntimeError("the agent crashed")


def _tasks(tmp_path: Path, n: int, config=None) -> list[Task]:
    log = str(tmp_path / "executions.log")
    return [Task("s", f"p{i}", i, dict(config or {"k": 1}), counted, (log, i)) for i in range(n)]


def _executions(tmp_path: Path) -> list[int]:
    path = tmp_path / "executions.log"
    if not path.exists():
        return []
    return sorted(int(v) for v in path.read_text(encoding="utf-8").split())


def _snapshot(folder: Path) -> dict[str, tuple[int, bytes]]:
    return {p.name: (p.stat().st_mtime_ns, p.read_bytes()) for p in folder.glob("*.json")}


@pytest.fixture(scope="module")
def ray_local():
    """One local Ray instance with 2 CPUs for this module (started the way ``RayBackend``
    starts one: workers see this process's sys.path), shut down at the end."""
    ray = pytest.importorskip("ray")
    RayBackend(num_cpus=2).start()
    yield ray
    ray.shutdown()


# ---------------------------------------------------------------------------- no Ray needed
def test_run_records_round_trip_exactly():
    report = evaluate(custom_suite(*TINY), ["fifo"], progress=False)
    run = report.runs[0]
    back = run_from_json(json.loads(json.dumps(run_to_json(run))))
    assert json.dumps(run_to_json(back), sort_keys=True) == json.dumps(run_to_json(run),
                                                                       sort_keys=True)
    assert back.records == run.records and back.jct_s.dtype == run.jct_s.dtype
    assert back.metrics == run.metrics
    assert not set(WALL_CLOCK_METRICS) & set(deterministic_part(run)["metrics"])


def test_serial_sweep_retries_once_then_reports_the_failure(tmp_path):
    tasks = [Task("s", "flaky", 0, {}, flaky, (str(tmp_path / "m"), "ok")),
             Task("s", "bad", 0, {}, always_fails, (7,)),
             *_tasks(tmp_path, 2)]
    store = RunStore(tmp_path / RUNS_DIR)
    result = run_sweep(tasks, "serial", store=store, progress=False)
    by = {o.task.policy: o for o in result.outcomes}
    assert [o.task.policy for o in result.outcomes] == ["flaky", "bad", "p0", "p1"]
    assert by["flaky"].status == "ok" and by["flaky"].attempts == 2
    assert by["flaky"].payload == {"value": "ok"}
    assert by["bad"].status == "failed" and by["bad"].attempts == 2
    assert by["bad"].error == "ValueError: bad input 7"
    assert by["p0"].ok and by["p1"].ok and _executions(tmp_path) == [0, 1]
    failed = json.loads(store.path(tasks[1]).read_text())
    assert failed["status"] == "failed" and failed["error"] == "ValueError: bad input 7"
    assert store.read(tasks[1]) is None                   # a failed run is run again on resume
    assert store.read(tasks[0])["payload"] == {"value": "ok"}


def test_interrupted_sweep_resumes_without_redoing_finished_runs(tmp_path):
    tasks = _tasks(tmp_path, 5)
    store = RunStore(tmp_path / RUNS_DIR)
    seen = []

    def stop_after_two(outcome):
        seen.append(outcome)
        if len(seen) == 2:
            raise KeyboardInterrupt                       # Ctrl-C after two finished runs

    with pytest.raises(KeyboardInterrupt):
        run_sweep(tasks, "serial", store=store, progress=False, on_outcome=stop_after_two)
    assert _executions(tmp_path) == [0, 1]
    before = _snapshot(store.folder)
    assert len(before) == 2
    with pytest.raises(ConfigError, match="--resume"):   # earlier run files: say what to do
        run_sweep(tasks, "serial", store=store, progress=False)
    result = run_sweep(tasks, "serial", store=store, resume=True, progress=False)
    assert [o.status for o in result.outcomes] == ["resumed"] * 2 + ["ok"] * 3
    assert _executions(tmp_path) == [0, 1, 2, 3, 4]       # 0 and 1 not again
    after = _snapshot(store.folder)
    assert all(after[name] == before[name] for name in before)    # not rewritten
    assert [o.payload for o in result.outcomes] == [{"value": i} for i in range(5)]
    assert result.other_code == 0
    # a run file made by other code (sources edited since) is reused, and counted
    path = store.path(tasks[0])
    record = json.loads(path.read_text())
    path.write_text(json.dumps({**record, "code": "0123456789abcdef"}))
    again = run_sweep(tasks, "serial", store=store, resume=True, progress=False)
    assert again.resumed == 5 and again.other_code == 1
    # each run file records where it ran; one made under other library versions is counted
    assert record["environment"] == environment_record() and again.other_environment == 0
    path = store.path(tasks[1])
    other = json.loads(path.read_text())
    other["environment"] = {**other["environment"],
                            "libraries": {**other["environment"]["libraries"], "numpy": "0.0"}}
    path.write_text(json.dumps(other))
    again = run_sweep(tasks, "serial", store=store, resume=True, progress=False)
    assert again.other_environment == 1 and again.outcomes[1].environment == other["environment"]
    assert "WARNING: 1 run(s) were made under another Python" in sweep_note(
        {"backend": "serial", "other_environment_runs": again.other_environment})
    # a run file from before environments were recorded resumes, and is not counted
    other.pop("environment")
    path.write_text(json.dumps(other))
    again = run_sweep(tasks, "serial", store=store, resume=True, progress=False)
    assert again.resumed == 5 and again.outcomes[1].environment is None
    assert again.other_environment == 0
    # the record handed out is a copy: editing a run's changes no later comparison
    (tmp_path / "fresh").mkdir()                          # its own execution log
    fresh = run_sweep(_tasks(tmp_path / "fresh", 1), "serial", progress=False)
    fresh.outcomes[0].environment["python"] = "0.0"
    assert environment_record()["python"] != "0.0" and fresh.other_environment == 1
    # a changed configuration is not silently reused: those runs run again
    changed = _tasks(tmp_path, 5, config={"k": 2})
    result = run_sweep(changed, "serial", store=store, resume=True, progress=False)
    assert result.resumed == 0 and result.stale == 5
    assert _executions(tmp_path) == sorted([0, 1, 2, 3, 4] * 2)
    run_sweep(changed, "serial", store=store, overwrite=True, progress=False)
    assert len(store.files()) == 5


class _NoStart:
    """A backend that cannot start (a Ray cluster that does not answer)."""

    def start(self):
        raise ConfigError("no cluster answers", field="--address")

    def stop(self):
        pass


def test_overwrite_discards_only_run_files_and_only_once_the_backend_started(tmp_path,
                                                                          monkeypatch):
    """``--overwrite`` deletes the earlier run files and the earlier results
    (``metrics.json`` above them), not a user's file beside them, and not before the backend
    started (a Ray start that failed left runs/ empty); ``--resume`` with ``--overwrite`` is
    refused (overwrite won, silently)."""
    tasks = _tasks(tmp_path, 2)
    store = RunStore(tmp_path / RUNS_DIR)
    run_sweep(tasks, "serial", store=store, progress=False)
    notes = store.folder / "notes.json"
    notes.write_text('{"my": "notes"}')
    results = tmp_path / RESULTS_FILE                      # the earlier sweep's results
    results.write_text("[]")
    assert len(store.files()) == 2 and notes not in store.files()
    monkeypatch.setattr("agents.sweep.make_backend", lambda backend: _NoStart())
    with pytest.raises(ConfigError, match="no cluster answers"):
        run_sweep(tasks, "ray", store=store, overwrite=True, progress=False)
    assert len(store.files()) == 2 and results.exists()   # kept: nothing ran
    monkeypatch.undo()
    with pytest.raises(ConfigError, match="--resume reuses the finished runs"):
        run_sweep(tasks, "serial", store=store, resume=True, overwrite=True, progress=False)
    result = run_sweep(tasks, "serial", store=store, overwrite=True, progress=False)
    assert [o.status for o in result.outcomes] == ["ok", "ok"] and result.stale == 0
    assert notes.read_text() == '{"my": "notes"}' and len(store.files()) == 2
    # an interrupted --overwrite sweep left the earlier metrics.json beside its partial runs
    assert not results.exists()


def test_sweep_configuration_errors(tmp_path, monkeypatch):
    tasks = _tasks(tmp_path, 2)
    with pytest.raises(ConfigError, match="same scenario, policy and seed"):
        run_sweep(tasks + tasks[:1], "serial", progress=False)
    with pytest.raises(ConfigError, match="--out"):
        run_sweep(tasks, "serial", resume=True, progress=False)
    with pytest.raises(ConfigError, match="--address"):
        RayBackend(num_cpus=2, address="auto")
    with pytest.raises(ConfigError, match="--backend ray"):
        make_backend("serial", num_cpus=2)
    with pytest.raises(ConfigError, match="unknown backend"):
        make_backend("dask")
    monkeypatch.setitem(sys.modules, "ray", None)         # as if Ray were not installed
    with pytest.raises(ConfigError, match=r"heterosched\[ray\]"):
        RayBackend().start()


def test_a_run_file_a_resume_cannot_use_is_named_and_run_again(tmp_path, caplog):
    """A finished run's file whose payload the sweep cannot read (edited: ``{}`` or
    ``null``), or whose bytes are not JSON, is named in a warning and run again; it crashed
    every later ``--resume`` with a traceback (a payload the evaluation could not decode)."""
    import logging

    def check(payload):
        if not (isinstance(payload, dict) and "value" in payload):
            raise ValueError("no value")
    tasks = [dataclasses.replace(t, check=check) for t in _tasks(tmp_path, 4)]
    store = RunStore(tmp_path / RUNS_DIR)
    run_sweep(tasks, "serial", store=store, progress=False)
    for task, text in zip(tasks[:3], ('"payload": {}', '"payload": null', "not json {")):
        path = store.path(task)
        record = path.read_text(encoding="utf-8")
        path.write_text(re.sub(r'"payload": \{[^}]*\}', text, record) if "payload" in text
                        else text, encoding="utf-8")
    with caplog.at_level(logging.WARNING, logger="agents.sweep"):
        result = run_sweep(tasks, "serial", store=store, resume=True, progress=False)
    assert [o.status for o in result.outcomes] == ["ok", "ok", "ok", "resumed"]
    assert [o.payload for o in result.outcomes] == [{"value": i} for i in range(4)]
    said = [r.getMessage() for r in caplog.records]
    for task, why in zip(tasks[:3], ("its payload cannot be read: ValueError: no value",
                                     "its payload cannot be read: ValueError: no value",
                                     "not readable as JSON")):
        assert any(m.startswith(f"run file {store.path(task)}: {why}") for m in said), said
    assert run_sweep(tasks, "serial", store=store, resume=True, progress=False).resumed == 4


def test_model_files_enter_a_runs_configuration_only_for_jobs_that_use_them(own_models,
                                                                          tmp_path):
    """With models of one's own in use, a run's configuration holds the content of the files
    defining the models its jobs use, not their paths, and nothing for jobs of packaged
    models only (so keeping HSCHED_MODELS set does not orphan earlier sweeps' run files)."""
    import shutil

    import hsched_env.catalog as catalog
    from agents.sweep import model_files_record
    from hsched_env.cluster import get_cluster
    from hsched_env.workloads import load_workload
    models, trace = own_models
    sia = get_cluster("sia-64")
    packaged_only = load_workload("gavel:rate=4,jobs=5,seed=1", sia).jobs
    assert model_files_record(packaged_only) == {}
    catalog.use_model_files(models)
    mine = load_workload(f"csv:path={trace}", sia).jobs
    assert model_files_record(packaged_only) == {}
    first = model_files_record(mine)
    assert list(first) == ["model_files"] and len(first["model_files"]) == 1
    moved = tmp_path / "elsewhere.json"
    shutil.copy(models, moved)
    catalog._files_in_use[0] = str(moved)                # the same content at another path
    assert model_files_record(mine) == first
    moved.write_text(moved.read_text().replace("Llama 3 model card", "edited"))
    catalog._files_in_use[0] = str(moved) + os.pathsep   # (a new key: read again)
    assert model_files_record(mine) != first


def test_the_commands_payload_checks_refuse_what_their_reports_could_not_read():
    """evaluate's and compare's run-file checks (``Task.check``): a run as written passes;
    one whose metrics or jobs lack what the report reads is refused (``{}`` metrics passed
    the decoding and crashed the report of every later resume)."""
    from agents.evaluate import _check_run_payload
    from hsched_cli.simulation import (_check_compare_payload, _compare_task,
                                       _simulation_args)
    report = evaluate(custom_suite(*TINY), ["fifo"], progress=False)
    payload = json.loads(json.dumps(run_to_json(report.runs[0])))
    _check_run_payload(payload)
    with pytest.raises(ValueError, match="its metrics lack jobs_completed, jobs_total, rounds"):
        _check_run_payload({**payload, "metrics": {}})
    with pytest.raises(Exception):
        _check_run_payload({})
    args = build_parser().parse_args(["compare", "--cluster", TINY[0], "--workload", TINY[1],
                                      "--policies", "fifo"])
    cluster, workload, config = _simulation_args(args)
    options = argparse.Namespace(objective=None, backend=None, lp_backend="highs", topk=None,
                                 floor=None, ftf_guard=None, round_restart=False,
                                 lp_time_limit_s=None, lp_method=None, lp_warm_start=False)
    done = json.loads(json.dumps(_compare_task("fifo", cluster, workload, config, options)))
    _check_compare_payload(done)
    with pytest.raises(ValueError, match="it lacks jobs_completed, jobs_total, avg_jct_s"):
        _check_compare_payload({**done, "metrics": {"policy": "fifo"}})
    with pytest.raises(ValueError, match="it lacks arrival_s, contention_sum, duration_s"):
        _check_compare_payload({**done, "jobs": [{"job_id": 0}]})


def test_compare_resume_runs_again_after_its_throughput_table_changed(tmp_path, capsys,
                                                                     monkeypatch):
    """``compare --backend ray --resume`` with a ``--throughputs`` table file: the file's
    content is in each run's configuration (its path alone was: an edited table resumed the
    old schedules). Ray itself is not needed for that: the sweep runs serially here."""
    import agents.sweep as sweep
    real = sweep.run_sweep
    monkeypatch.setattr(sweep, "run_sweep",
                        lambda tasks, backend, **kw: real(tasks, "serial", **kw))
    table = tmp_path / "thr.json"
    row = "('ResNet-50 (batch size 64)', 1)"
    table.write_text(json.dumps({"v100": {row: {"null": 3.0}}}))
    out = tmp_path / "out"
    argv = ["compare", "--cluster", "gavel-108", "--workload", "gavel:rate=8,jobs=6,seed=1",
            "--policies", "fifo-fastest,gavel", "--throughputs", str(table), "--backend",
            "ray", "--out", str(out), "--json", "--no-progress"]
    assert main(argv) == 0
    before = {p.name for p in (out / RUNS_DIR).glob("*.json")}
    assert main(argv + ["--resume"]) == 0        # the same table: both runs resumed
    assert "2 of 2 runs resumed" in capsys.readouterr().err
    table.write_text(json.dumps({"v100": {row: {"null": 0.3}}}))   # ten times slower
    assert main(argv + ["--resume"]) == 2        # no run of this configuration to resume
    assert "none of the 2 run file(s)" in capsys.readouterr().err
    assert main(argv + ["--overwrite"]) == 0
    after = {p.name for p in (out / RUNS_DIR).glob("*.json")}
    assert len(before) == len(after) == 2 and not before & after


def test_a_resume_that_matches_no_run_file_keeps_the_earlier_results(tmp_path):
    """``resume`` where none of the run files is of this sweep's tasks (key and configuration
    hash) while the output folder holds a metrics.json: refused before any run (nothing would
    be resumed; the results would replace another run's); without a metrics.json, or with
    one run file of the sweep, it goes on."""
    tasks = _tasks(tmp_path, 2)
    store = RunStore(tmp_path / RUNS_DIR)
    run_sweep(tasks, "serial", store=store, progress=False)
    (tmp_path / "metrics.json").write_text("{}")
    changed = _tasks(tmp_path, 2, config={"k": 2})
    with pytest.raises(ConfigError, match="none of the 2 run file") as err:
        run_sweep(changed, "serial", store=store, resume=True, progress=False)
    assert err.value.field == "--out" and _executions(tmp_path) == [0, 1]   # nothing ran
    mixed = changed[:1] + tasks[1:]                  # one run file of this sweep: resumed
    result = run_sweep(mixed, "serial", store=store, resume=True, progress=False)
    assert result.resumed == 1 and result.stale == 1 and _executions(tmp_path) == [0, 0, 1]
    (tmp_path / "metrics.json").unlink()
    result = run_sweep(_tasks(tmp_path, 2, config={"k": 3}), "serial", store=store,
                       resume=True, progress=False)
    assert result.resumed == 0 and result.stale == 3


def test_a_file_where_the_run_files_go_is_refused_before_any_run(tmp_path):
    (tmp_path / RUNS_DIR).write_text("mine")
    with pytest.raises(ConfigError, match="is a file, not a folder") as err:
        run_sweep(_tasks(tmp_path, 2), "serial", store=RunStore(tmp_path / RUNS_DIR),
                  progress=False)
    assert err.value.field == "--out" and _executions(tmp_path) == []


def test_failed_runs_are_named_on_stderr_with_json(tmp_path, capsys, monkeypatch):
    """With --json no table lists the failed runs, yet the last line said "(listed above)":
    it names them, and says where their errors are."""
    from agents.sweep import SerialBackend
    monkeypatch.setattr("agents.evaluate.RayBackend", lambda **kw: SerialBackend())
    monkeypatch.setattr("agents.sweep.RayBackend", lambda **kw: SerialBackend())
    code = main(["evaluate", "--cluster", TINY[0], "--workload", TINY[1], "--policies",
                 "fifo,test_ray_backend:CrashingAgent", "--seeds", "1", "--backend", "ray",
                 "--out", str(tmp_path / "ev"), "--no-progress", "--json"])
    captured = capsys.readouterr()
    assert code == 1
    data = json.loads(captured.out)
    (failed,) = data["failed"]
    last = captured.err.strip().splitlines()[-1]
    assert "listed above" not in last
    assert (f"1 run(s) FAILED: {failed['scenario']} crashing seed {failed['seed']} "
            f"(their errors: the JSON's 'failed')") in last, last

    def compare_task(name, *args):
        if name == "gavel":
            raise RuntimeError("gavel crashed")
        return real(name, *args)

    real = cli_simulation._compare_task
    monkeypatch.setattr(cli_simulation, "_compare_task", compare_task)
    assert main(COMPARE + ["--backend", "ray", "--json"]) == 1
    captured = capsys.readouterr()
    assert [m.get("status") for m in json.loads(captured.out)] == [None, "failed", None]
    last = captured.err.strip().splitlines()[-1]
    assert "listed above" not in last and "1 run(s) FAILED: gavel (their errors" in last, last
    assert main(COMPARE + ["--backend", "ray"]) == 1          # the table lists them above
    captured = capsys.readouterr()
    assert "gavel: FAILED after 2 attempt(s)" in captured.out
    assert "1 run(s) FAILED (listed above)" in captured.err


def test_ray_address_in_the_environment_joins_without_num_cpus(monkeypatch, capsys, tmp_path):
    """With RAY_ADDRESS set (Ray joins that cluster when given no address) ``ray.init`` was
    passed num_cpus, which Ray refuses when joining, and the error blamed --backend: no
    num_cpus then, and --num-cpus with RAY_ADDRESS is refused at once (as with --address)."""
    monkeypatch.delenv("RAY_ADDRESS", raising=False)
    assert RayBackend(num_cpus=2).init_kwargs()["num_cpus"] == 2
    assert RayBackend().init_kwargs()["num_cpus"] == (os.cpu_count() or 1)
    monkeypatch.setenv("RAY_ADDRESS", "127.0.0.1:6379")
    kw = RayBackend().init_kwargs()
    assert "num_cpus" not in kw and "address" not in kw          # Ray reads RAY_ADDRESS
    assert "num_cpus" not in RayBackend(address="auto").init_kwargs()
    with pytest.raises(ConfigError, match="RAY_ADDRESS") as err:
        RayBackend(num_cpus=2)
    assert err.value.field == "--num-cpus"
    monkeypatch.chdir(tmp_path)
    assert main(["evaluate", "--policies", "fifo", "--backend", "ray", "--num-cpus", "1",
                 "--out", "x"]) == 2
    captured = capsys.readouterr()
    assert "field '--num-cpus'" in captured.err and "RAY_ADDRESS" in captured.err
    assert captured.out == "" and not (tmp_path / "x").exists()
    monkeypatch.setenv("RAY_ADDRESS", "local")                  # Ray starts its own then
    assert RayBackend(num_cpus=2).init_kwargs()["num_cpus"] == 2


def test_an_unreachable_ray_address_in_the_environment_is_named(monkeypatch):
    """RAY_ADDRESS at which nothing listens: refused in seconds, naming RAY_ADDRESS (not
    --backend), before ``ray.init``."""
    ray = pytest.importorskip("ray")
    if ray.is_initialized():
        pytest.skip("a Ray instance of this process is running (start() would use it)")
    import socket
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]                 # closed once the block ends
    monkeypatch.setenv("RAY_ADDRESS", f"127.0.0.1:{port}")
    monkeypatch.setattr(ray, "init", lambda **kw: pytest.fail(f"ray.init({kw}) called"))
    with pytest.raises(ConfigError, match="RAY_ADDRESS in the environment") as err:
        RayBackend().start()
    assert err.value.field == "RAY_ADDRESS"


def test_sigterm_while_ray_starts_reaches_the_commands_handler(monkeypatch):
    """SIGTERM during ``ray.init``: Ray's own handler, installed before ``init`` returns,
    exits with status 15 (``SystemExit(15)``, no message); the signal now goes to the
    handler before it, the CLI's, which raises ``Terminated`` (exit 143, said)."""
    ray = pytest.importorskip("ray")
    if ray.is_initialized():
        pytest.skip("a Ray instance of this process is running (start() would use it)")
    from hsched_cli.interrupts import Terminated, exit_status, sigterm_raises
    monkeypatch.delenv("RAY_ADDRESS", raising=False)

    def init_killed(**kw):
        raise SystemExit(signal.SIGTERM)
    monkeypatch.setattr(ray, "init", init_killed)
    with pytest.raises(Terminated) as stop:
        with sigterm_raises():
            RayBackend(num_cpus=1).start()
    assert exit_status(stop.value) == 143

    # a handler that returns (a flag of the caller's): Ray did not start, and says so
    calls = []
    before = signal.signal(signal.SIGTERM, lambda *a: calls.append(a))
    try:
        with pytest.raises(ConfigError, match="SIGTERM arrived while Ray was starting"):
            RayBackend(num_cpus=1).start()
    finally:
        signal.signal(signal.SIGTERM, before)
    assert len(calls) == 1

    def init_exits(**kw):
        raise SystemExit(3)                     # any other exit is left alone
    monkeypatch.setattr(ray, "init", init_exits)
    with pytest.raises(SystemExit) as other:
        with sigterm_raises():
            RayBackend(num_cpus=1).start()
    assert other.value.code == 3


@pytest.mark.parametrize("argv,needle", [
    (["evaluate", "--policies", "fifo", "--backend", "ray", "--resume"], "needs --out"),
    (["evaluate", "--policies", "fifo", "--num-cpus", "2"], "--backend ray"),
    # each flag says why it belongs to Ray (--num-cpus was blamed on run files), and
    # --resume is named before the --out it comes with
    (["evaluate", "--policies", "fifo", "--num-cpus", "2"],
     "field '--num-cpus': --num-cpus belongs to the Ray backend: give it with --backend ray "
     "(it sizes the local Ray instance)"),
    (COMPARE + ["--address", "auto"], "(it names the Ray cluster to join)"),
    (COMPARE + ["--resume", "--out", "x"],
     "field '--resume': --resume belongs to the Ray backend: give it with --backend ray (the "
     "serial backend keeps no run files to resume from)"),
    (["evaluate", "--policies", "fifo", "--resume", "--out", "x"], "--backend ray"),
    (COMPARE + ["--backend", "ray", "--resume"], "needs --out"),
    (COMPARE + ["--out", "x"], "--backend ray"),
    (COMPARE + ["--address", "auto"], "--backend ray"),
    (COMPARE + ["--backend", "pulp", "--lp-backend", "highs"], "disagree"),
    (COMPARE + ["--backend", "ray", "--out", "x", "--resume", "--overwrite"],
     "--resume reuses the finished runs that --overwrite discards"),
    (["evaluate", "--policies", "fifo", "--backend", "ray", "--out", "x", "--resume",
      "--overwrite"], "--resume reuses the finished runs that --overwrite discards"),
])
def test_cli_backend_flag_errors(capsys, tmp_path, monkeypatch, argv, needle):
    monkeypatch.chdir(tmp_path)
    assert main(argv) == 2
    captured = capsys.readouterr()
    assert needle in captured.err and captured.out == ""
    assert not (tmp_path / "x").exists()


class _OneAnswerServer:
    """A TCP server on 127.0.0.1 that answers every connection with ``answer`` (bytes; ``None``:
    it reads and stays silent) and then holds it open until the test ends."""

    def __init__(self, answer: bytes | None) -> None:
        import socket
        import threading
        self.answer = answer
        self.listening = socket.socket()
        self.listening.bind(("127.0.0.1", 0))
        self.listening.listen()
        self.port = self.listening.getsockname()[1]
        self.connections: list = []
        threading.Thread(target=self._serve, daemon=True).start()

    def _serve(self) -> None:
        while True:
            try:
                conn, _ = self.listening.accept()
            except OSError:                              # closed at the end of the test
                return
            self.connections.append(conn)
            if self.answer is not None:
                conn.sendall(self.answer)

    def close(self) -> None:
        import socket
        for conn in self.connections:
            conn.close()
        try:                                  # wakes the blocked accept (Linux), which would
            self.listening.shutdown(socket.SHUT_RDWR)   # otherwise keep the port listening
        except OSError:
            pass
        self.listening.close()


def test_an_address_that_is_not_a_ray_head_is_refused_at_once(monkeypatch):
    """--address with nothing listening, or with a server that does not speak gRPC (an HTTP
    server, a silent one), fails in seconds naming --address (Ray itself retries for many
    minutes: measured, over 4 minutes against an HTTP server before a timeout killed it); a
    server that answers as an HTTP/2 server does and Ray's own forms ("auto") pass the check.
    With Ray's TLS on, only the connection is checked."""
    import agents.sweep as sweep
    from agents.sweep import _check_reachable
    monkeypatch.setattr(sweep, "CONNECT_TIMEOUT_S", 0.5)          # the silent server's wait
    settings = bytes(3) + b"\x04" + bytes(5)                       # an empty SETTINGS frame
    servers = {name: _OneAnswerServer(answer) for name, answer in [
        ("grpc", bytes([0, 0, 6, 4, 0, 0, 0, 0, 0]) + bytes(6)),  # SETTINGS with one setting
        ("empty-settings", settings),
        ("http", b"HTTP/1.0 400 Bad request\r\n\r\n"),
        ("silent", None),
        ("data-frame", bytes(3) + b"\x00" + bytes(5))]}          # a frame, not SETTINGS
    try:
        for name in ("grpc", "empty-settings"):
            port = servers[name].port
            _check_reachable(f"127.0.0.1:{port}")
            _check_reachable(f"ray://127.0.0.1:{port}")
        for name, needle in [("http", "answered b'HTTP/1.0 '"), ("silent", "sent nothing within 0.5 s"),
                             ("data-frame", "answered b'\\x00")]:
            port = servers[name].port
            for address in (f"127.0.0.1:{port}", f"ray://127.0.0.1:{port}"):
                with pytest.raises(ConfigError, match="does not speak gRPC") as err:
                    _check_reachable(address)
                assert err.value.field == "--address" and needle in str(err.value), name
            with pytest.raises(ConfigError, match="RAY_ADDRESS in the environment") as err:
                _check_reachable(f"127.0.0.1:{port}", "RAY_ADDRESS")
            assert err.value.field == "RAY_ADDRESS"
        monkeypatch.setenv("RAY_USE_TLS", "1")                     # TLS: the connection alone
        _check_reachable(f"127.0.0.1:{servers['http'].port}")
        monkeypatch.delenv("RAY_USE_TLS")
    finally:
        for server in servers.values():
            server.close()
    port = servers["grpc"].port
    _check_reachable("auto")
    for address in (f"127.0.0.1:{port}", f"ray://127.0.0.1:{port}"):   # closed now
        with pytest.raises(ConfigError, match="no Ray cluster answers") as err:
            _check_reachable(address)
        assert err.value.field == "--address" and "TCP connection" in str(err.value)


def test_a_non_ray_address_is_refused_before_ray_init(monkeypatch):
    """``RayBackend.start`` with --address at an HTTP server: a ConfigError on --address
    before ``ray.init`` is ever called."""
    ray = pytest.importorskip("ray")
    if ray.is_initialized():
        pytest.skip("a Ray instance of this process is running (start() would use it)")
    monkeypatch.delenv("RAY_ADDRESS", raising=False)
    monkeypatch.setattr(ray, "init", lambda **kw: pytest.fail(f"ray.init({kw}) called"))
    server = _OneAnswerServer(b"HTTP/1.0 200 OK\r\n\r\n<!DOCTYPE html>")
    try:
        with pytest.raises(ConfigError, match="does not speak gRPC") as err:
            RayBackend(address=f"127.0.0.1:{server.port}").start()
    finally:
        server.close()
    assert err.value.field == "--address"


# ---------------------------------------------------------------------------- on Ray
def test_a_running_ray_heads_gcs_passes_the_check(ray_local):
    """The gRPC check on a real GCS (the local instance's): it answers as HTTP/2 does."""
    from agents.sweep import _check_reachable
    _check_reachable(ray_local.get_runtime_context().gcs_address)


@slow
def test_evaluate_on_ray_equals_serial(ray_local, tmp_path):
    suite = custom_suite(*TINY)
    policies = ["fifo", "pure-lp", "topk", KeepAll(), ReferenceScheduler()]
    serial = evaluate(suite, policies, seeds=2, progress=False)
    ray = evaluate(suite, policies, seeds=2, progress=False, backend="ray",
                   runs_dir=tmp_path / RUNS_DIR)
    assert ray.failures == [] and ray.sweep["tasks"] == 10
    assert [(r.scenario, r.label, r.seed) for r in ray.runs] == \
        [(r.scenario, r.label, r.seed) for r in serial.runs]
    for a, b in zip(serial.runs, ray.runs):            # metrics, per-job records, logs
        assert json.dumps(deterministic_part(a), sort_keys=True) == \
            json.dumps(deterministic_part(b), sort_keys=True), a.label
    timing = set(WALL_CLOCK_ROW_KEYS)
    for a, b in zip(serial.rows, ray.rows):
        assert {k: v for k, v in a.items() if k not in timing} == \
            {k: v for k, v in b.items() if k not in timing}
    assert len(list((tmp_path / RUNS_DIR).glob("*.json"))) == 10


@slow
def test_compare_on_ray_equals_serial(ray_local, tmp_path, capsys):
    assert main(COMPARE + ["--json"]) == 0
    serial = json.loads(capsys.readouterr().out)
    out = tmp_path / "cmp"
    assert main(COMPARE + ["--json", "--backend", "ray", "--out", str(out)]) == 0
    ray = json.loads(capsys.readouterr().out)             # stdout is pure JSON
    strip = lambda rows: [{k: v for k, v in m.items() if k not in WALL_CLOCK_METRICS}  # noqa: E731
                          for m in rows]
    assert strip(ray) == strip(serial) and [m["policy"] for m in ray] == ["fifo", "gavel",
                                                                         "heterosched-lp"]
    assert json.loads((out / "metrics.json").read_text()) == ray
    assert json.loads((out / "environment.json").read_text()) == environment_record()
    # the per-job rows of a run file are those of the same run in this process
    files = sorted((out / RUNS_DIR).glob("*.json"))
    assert len(files) == 3
    record = json.loads(next(p for p in files if "__gavel__" in p.name).read_text())
    args = build_parser().parse_args(COMPARE)
    cluster, workload, config = cli_simulation._simulation_args(args)
    here = cli_simulation._compare_task("gavel", cluster, workload, config, args)
    assert len(here["jobs"]) == 16                       # (JSON text: NaN != NaN)
    assert json.dumps(record["payload"]["jobs"]) == json.dumps(here["jobs"])


@slow
def test_ray_retries_failed_tasks_and_dead_workers(ray_local, tmp_path):
    tasks = [Task("s", "flaky", 0, {}, flaky, (str(tmp_path / "flaky"), "a")),
             Task("s", "crash", 0, {}, crash_once, (str(tmp_path / "crash"), "b")),
             Task("s", "bad", 0, {}, always_fails, (3,)),
             *_tasks(tmp_path, 3)]
    store = RunStore(tmp_path / RUNS_DIR)
    result = run_sweep(tasks, RayBackend(), store=store, progress=False)
    by = {o.task.policy: o for o in result.outcomes}
    assert by["flaky"].status == "ok" and by["flaky"].attempts == 2
    assert by["crash"].status == "ok" and by["crash"].attempts == 2
    assert by["crash"].payload == {"value": "b"}
    assert by["bad"].status == "failed" and by["bad"].attempts == 2
    assert by["bad"].error == "ValueError: bad input 3"
    assert [by[f"p{i}"].payload for i in range(3)] == [{"value": i} for i in range(3)]
    assert _executions(tmp_path) == [0, 1, 2]
    assert all(len(by[f"p{i}"].code) == 16 for i in range(3))    # the worker's sources
    # where each ran: the workers' environment, this machine's set-up (their thread settings
    # are Ray's: it starts workers with OMP_NUM_THREADS=1); none for a failed task
    assert all(same_set_up(by[f"p{i}"].environment, environment_record()) for i in range(3))
    assert all(by[f"p{i}"].environment["threads"]["OMP_NUM_THREADS"] is not None
               for i in range(3))
    assert by["bad"].environment is None and result.other_environment == 0
    assert ray_local.is_initialized()                     # a caller's Ray is left running
    assert len(store.files()) == 6
    # a worker that dies and is not retried: failed with the reason, never dropped
    dies = Task("s", "dies", 0, {}, crash_once, (str(tmp_path / "dies"), "c"))
    result = run_sweep([dies], RayBackend(), retries=0, progress=False)
    assert result.outcomes[0].status == "failed"
    assert "worker process died" in result.outcomes[0].error


@slow
def test_killed_ray_sweep_resumes_from_its_run_files(ray_local, tmp_path, capsys):
    """A real ``hsched evaluate --backend ray`` of 24 runs interrupted (SIGINT) after two runs,
    then ``--resume``: the two finished runs are read, not run again (their files untouched).
    The runs are 48-job simulations (about 0.5 s each on one CPU), so the 22 left take
    seconds after the signal."""
    out = tmp_path / "ev"
    argv = ["evaluate", "--cluster", "tiny-8", "--workload",
            "gavel:rate=8,jobs=48,duration_scale=0.05", "--policies",
            "fifo,pure-lp,topk", "--seeds", "8", "--backend", "ray", "--num-cpus", "1",
            "--out", str(out), "--no-progress"]
    # SIGINT's default action restored in the child: a test run started in the background by
    # a non-interactive shell (``cmd &``) inherits SIGINT ignored, and Python then never raises
    # KeyboardInterrupt (ci-local launched that way saw the sweep ignore the signal, exit 0)
    proc = subprocess.Popen([sys.executable, "-m", "hsched_cli", *argv],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    runs = out / RUNS_DIR
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline and len(list(runs.glob("*.json"))) < 2:
        assert proc.poll() is None, proc.communicate()
        time.sleep(0.05)
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 130, (f"exit {proc.returncode} with "
                                    f"{len(list(runs.glob('*.json')))} run files", err[-3000:])
    assert "--resume" in err
    before = _snapshot(runs)
    assert 2 <= len(before) < 24 and not (out / "metrics.json").exists(), sorted(before)
    code = main(argv + ["--json", "--resume"])
    captured = capsys.readouterr()
    assert code == 0, captured.err[-3000:]
    # Ray's raylet may print a notice of the interrupted sweep's dead worker on this
    # process's stdout before the JSON (not ours to silence); nothing else may precede it
    head, brace, body = captured.out.partition("\n{")
    if brace and not captured.out.startswith("{"):
        assert all("(raylet)" in line for line in head.splitlines() if line.strip()), head
        captured_json = "{" + body
    else:
        captured_json = captured.out
    data = json.loads(captured_json)
    assert data["sweep"]["resumed"] == len(before) and data["sweep"]["tasks"] == 24
    assert data["failed"] == [] and len(data["per_seed"]) == 24
    after = _snapshot(runs)
    assert len(after) == 24 and all(after[name] == before[name] for name in before)
    assert (out / "metrics.json").exists()


@slow
def test_starting_ray_keeps_the_callers_sigterm_handler(tmp_path):
    """``ray.init`` installs its own SIGTERM handler (``sys.exit``), which made a killed
    sweep exit 1 with Ray's line instead of the CLI's note and 143: the caller's comes back."""
    pytest.importorskip("ray")
    code = ("import signal, ray\n"
            "from agents.sweep import RayBackend\n"
            "def mine(signum, frame): pass\n"
            "signal.signal(signal.SIGTERM, mine)\n"
            "backend = RayBackend(num_cpus=1)\n"
            "backend.start()\n"
            "print(signal.getsignal(signal.SIGTERM) is mine)\n"
            "ray.shutdown()\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         cwd=tmp_path, env={**os.environ, "OMP_NUM_THREADS": "1"}, timeout=300)
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.strip().splitlines()[-1] == "True"


@slow
def test_a_ray_started_before_your_models_gets_them_in_its_tasks(ray_local, own_models):
    """Models of one's own named after the caller's Ray had started (its workers never saw
    HSCHED_MODELS): the sweep's tasks carry it, and the run plans the model (every run
    failed with "unknown model" before)."""
    import hsched_env.catalog as catalog
    models, trace = own_models
    catalog.use_model_files(models)
    report = evaluate(custom_suite("sia-64", f"csv:path={trace}"), ["pure-lp"],
                      backend=RayBackend(), progress=False)
    assert report.failures == [] and report.runs[0].metrics["jobs_completed"] == 2
