"""The ``hsched`` command line: contract names, JSON schema, errors, exit codes."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from hsched_cli.main import main
from hsched_env.workloads import traces_dir

slow = pytest.mark.slow

JSON_KEYS = {"gpus", "nodes", "dp", "tp", "pp", "microbatches", "zero", "recompute",
             "step_time_s", "samples_per_s", "tokens_per_s_per_gpu", "mem_gb_per_gpu"}


def run(capsys, *argv):
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def test_candidates_json_schema(capsys):
    code, out, _ = run(capsys, "candidates", "--model", "llama2-7b", "--cluster", "sia-64",
                       "--json")
    assert code == 0
    recs = json.loads(out)
    assert isinstance(recs, list) and len(recs) > 5
    for r in recs:
        assert JSON_KEYS <= r.keys()
        assert all(isinstance(v, int) and v > 0 for v in r["gpus"].values())
        assert r["dp"] * r["tp"] * r["pp"] == sum(r["gpus"].values())
        assert r["tokens_per_s_per_gpu"] > 0
        assert r["zero"] in (0, 1, 2, 3) and isinstance(r["recompute"], bool)
    speeds = [r["samples_per_s"] for r in recs]
    assert speeds == sorted(speeds, reverse=True)


def test_candidates_json_non_token_model_has_zero_tokens(capsys):
    code, out, _ = run(capsys, "candidates", "--model", "resnet50", "--cluster", "gavel-108",
                       "--json", "--throughputs", "gavel")
    assert code == 0
    recs = json.loads(out)
    assert all(r["tokens_per_s_per_gpu"] == 0 for r in recs)
    assert any(r["source"] == "measured" for r in recs)


def test_max_candidates(capsys):
    code, out, _ = run(capsys, "candidates", "--model", "bert-large", "--cluster", "sia-64",
                       "--max-candidates", "4", "--json")
    assert code == 0 and len(json.loads(out)) == 4


def test_llama70b_on_sia64_is_an_honest_empty_answer(capsys):
    code, out, _ = run(capsys, "candidates", "--model", "llama2-70b", "--cluster", "sia-64",
                       "--json")
    assert code == 0 and json.loads(out) == []
    code, out, _ = run(capsys, "candidates", "--model", "llama2-70b", "--cluster", "sia-64")
    assert code == 0 and "fits on no resource set" in out and "1,103.6 GB" in out


def test_no_fit_reason_counts_only_the_sets_the_planner_considers(capsys, tmp_path):
    """tiny-8 (4 V100-16GB + 4 T4): with mixing off the largest set is one pool's 4 GPUs. One
    A100-80GB beside 14 V100-16GB: the planner pairs sides within 8× of each other, so its
    largest set has 187.6 GB for the states, not both pools' 258.6 GB. Ten one-GPU T4 nodes
    hold Llama-2 7B's states (107.8 of 134.0 GB, the parameters as the cost model counts them:
    6.738e9, not the catalog's 6.7e9) but no stage's activations."""
    code, out, _ = run(capsys, "candidates", "--model", "llama2-13b", "--cluster", "tiny-8",
                       "--no-mixed")
    assert code == 0 and "more than the 53.6 GB the largest resource set (one node pool)" in out
    ratio = tmp_path / "ratio.yaml"
    ratio.write_text("name: ratio\nnodes:\n"
                     "  - {gpu_type: A100-80GB, gpus_per_node: 1, count: 1}\n"
                     "  - {gpu_type: V100-16GB, gpus_per_node: 2, count: 7}\n", encoding="utf-8")
    code, out, _ = run(capsys, "candidates", "--model", "llama2-13b", "--cluster", str(ratio))
    assert code == 0 and "need 208.2 GB, more than the 187.6 GB" in out
    t4 = tmp_path / "t4.yaml"
    t4.write_text("name: t4\nnodes:\n  - {gpu_type: T4, gpus_per_node: 1, count: 10}\n",
                  encoding="utf-8")
    code, out, _ = run(capsys, "candidates", "--model", "llama2-7b", "--cluster", str(t4))
    assert code == 0 and "need 107.8 GB of the 134.0 GB" in out
    assert "no strategy's activations" in out
    # tiny-8's largest set has 107.2 GB for them: the states alone do not fit (with the
    # catalog's 6.7e9 parameters, 107.2 GB, the reason blamed the activations)
    code, out, _ = run(capsys, "candidates", "--model", "llama2-7b", "--cluster", "tiny-8")
    assert code == 0 and "model states alone need 107.8 GB, more than the 107.2 GB" in out


def test_readable_table(capsys):
    code, out, _ = run(capsys, "candidates", "--model", "llama2-70b", "--cluster", "modern-512")
    assert code == 0
    lines = out.splitlines()
    assert "candidates" in lines[0] and "tok/s/GPU" in lines[1]
    assert len(lines) > 5


@pytest.mark.parametrize("argv,needle", [
    (["--model", "llama-9", "--cluster", "sia-64"], "valid: a3c, bert-large"),
    (["--model", "resnet50", "--cluster", "nope-1"], "valid: gavel-108, huge-10k, large-2048"),
])
def test_unknown_names_exit_nonzero_with_valid_names(capsys, argv, needle):
    code, out, err = run(capsys, "candidates", *argv)
    assert code == 2 and out == ""
    assert needle in err


def test_an_empty_cluster_name_is_unknown_not_the_list(capsys):
    code, out, err = run(capsys, "clusters", "")
    assert code == 2 and out == "" and "unknown cluster ''" in err
    code, out, _ = run(capsys, "clusters")
    assert code == 0 and "preset" in out.splitlines()[0]


@pytest.mark.parametrize("argv", [
    ["evaluate", "--cluster", "tiny-8", "--workload", "gavel:jobs=2", "--policies", "fifo",
     "--out", ""],
    ["simulate", "--cluster", "tiny-8", "--workload", "gavel:jobs=2", "--jobs-out", " "],
    ["demo", "--out", ""],
    ["train", "--env", "hsched/Rank-Tiny-v0", "--logdir", ""],
])
def test_an_empty_output_path_is_refused(capsys, tmp_path, monkeypatch, argv):
    """An empty output path (an unset shell variable) is the current folder to ``Path``:
    ``evaluate --out ""`` wrote its metrics, plots and TensorBoard logs there."""
    monkeypatch.chdir(tmp_path)
    with pytest.raises(SystemExit) as exc:
        main(argv)
    assert exc.value.code == 2
    assert ": an empty path (give a folder or file name)" in capsys.readouterr().err
    assert not any(tmp_path.iterdir())


LONG_NAME = "a" * 300            # longer than a file name may be (255 bytes on Linux)


@pytest.mark.parametrize("argv, says", [
    (["simulate", "--cluster", "tiny-8", "--workload", "gavel:jobs=3", "--jobs-out", LONG_NAME],
     "field '--jobs-out': cannot use 'aaa"),
    (["evaluate", "--suite", "smoke", "--policies", "pure-lp", "--out", LONG_NAME],
     "field '--out': cannot use 'aaa"),
    (["evaluate", "--suite", "smoke", "--policies", "pure-lp", "--out", LONG_NAME + "/x"],
     "field '--out': cannot use 'aaa"),
    (["compare", "--cluster", "tiny-8", "--workload", "gavel:jobs=3", "--policies", "fifo",
      "--backend", "ray", "--out", LONG_NAME], "field '--out': cannot use 'aaa"),
    (["evaluate", "--suite", "smoke", "--policies", f"ranker:{LONG_NAME}"],
     "not a usable file name"),
    (["evaluate", "--suite", "smoke", "--policies", f"sb3:{LONG_NAME}.zip"],
     "not a usable file name"),
    (["train", "--env", "hsched/Schedule-Tiny-v0", "--timesteps", "10", "--logdir", LONG_NAME],
     "field '--logdir': cannot use 'aaa"),
])
def test_a_file_name_the_os_rejects_is_a_one_line_error(capsys, tmp_path, monkeypatch, argv,
                                                       says):
    """A path too long for the OS (``Path.exists`` raises ``OSError`` on it) is an error
    naming the flag, not a traceback (the fuzz test found ``--jobs-out``'s)."""
    monkeypatch.chdir(tmp_path)
    code, out, err = run(capsys, *argv, "--no-progress")
    assert code == 2 and out == ""
    errors = [ln for ln in err.splitlines() if ln.startswith("hsched ")]
    assert len(errors) == 1 and ": error: " in errors[0] and says in errors[0], err
    assert "File name too long" in errors[0] or "not a usable file name" in errors[0]
    assert "Traceback" not in err


OWN_POLICY = """
import numpy as np

print("importing the policy module")        # on stdout: must not reach --json's output
made = 0


class BestPerGPU:
    name = "best-per-gpu"

    def reset(self, cluster, seed):
        self.decisions = 0

    def decide(self, view):
        self.decisions += 1
        out = {}
        for k, j in enumerate(view.job_ids):
            t = view.candidates[k]
            out[int(j)] = int(np.argmax(t.samples_per_s / t.gpus.sum(axis=1)))
        return out


def make():
    global made
    made += 1
    return BestPerGPU()


class NamedFifo(BestPerGPU):
    name = "fifo"


class Broken(BestPerGPU):
    name = "broken"

    def decide(self, view):
        if self.decisions == 2:
            raise ValueError("broken on its third decision")
        return super().decide(view)


not_a_policy = 3
"""


@pytest.fixture
def own_policy_module(tmp_path, monkeypatch):
    """A module of the user's own policy in the current directory, as docs/simulator.md's
    "Writing a policy" has it."""
    name = "hsched_own_policy_for_tests"
    (tmp_path / f"{name}.py").write_text(OWN_POLICY, encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    monkeypatch.delitem(sys.modules, name, raising=False)
    yield name
    sys.modules.pop(name, None)


def test_simulate_and_compare_run_your_own_policy(capsys, own_policy_module):
    """``--policy MODULE:CALLABLE`` / ``--policies ...,MODULE:CALLABLE``: the user's policy
    (a class, or a factory) runs as the built-in ones do, labelled by its ``name``; the same
    run from Python gives the same metrics."""
    mod = own_policy_module
    workload = "gavel:rate=6,jobs=12,seed=1,duration_scale=0.05"
    code, out, err = run(capsys, "simulate", "--cluster", "sia-64", "--workload", workload,
                         "--policy", f"{mod}:BestPerGPU", "--json", "--no-progress")
    assert code == 0, err
    m = json.loads(out)
    assert m["policy"] == "best-per-gpu" and m["jobs_completed"] == 12
    import importlib
    from hsched_env.cluster import get_cluster
    from hsched_env.simulator import SimConfig, Simulator
    from hsched_env.workloads import load_workload
    cluster = get_cluster("sia-64")
    own = importlib.import_module(mod).BestPerGPU()
    direct = Simulator(cluster, load_workload(workload, cluster), own, SimConfig()).run()
    assert direct.metrics()["avg_jct_s"] == m["avg_jct_s"] and own.decisions > 0
    module = importlib.import_module(mod)
    made = module.made
    code, out, err = run(capsys, "compare", "--cluster", "sia-64", "--workload", workload,
                         "--policies", f"heterosched-lp,{mod}:make", "--json", "--no-progress")
    assert code == 0, err
    rows = json.loads(out)                   # (the module's print went to stderr)
    assert [r["policy"] for r in rows] == ["heterosched-lp", "best-per-gpu"]
    assert rows[1]["avg_jct_s"] == m["avg_jct_s"]
    assert module.made == made + 1           # the factory: once for the one run


def test_compare_keeps_the_other_runs_when_a_policy_raises(capsys, own_policy_module):
    """Serial ``compare``: a policy whose ``decide`` raises is a FAILED row with its error
    (its traceback on stderr), the policies before and after it still run and are compared
    with each other, and the exit status is 1, as with ``--backend ray``."""
    mod = own_policy_module
    workload = "gavel:rate=6,jobs=12,seed=1,duration_scale=0.05"
    argv = ["compare", "--cluster", "sia-64", "--workload", workload, "--no-progress",
            "--policies", f"heterosched-lp,{mod}:Broken,{mod}:BestPerGPU"]
    code, out, err = run(capsys, *argv, "--json")
    assert code == 1
    rows = json.loads(out)
    assert [r["policy"] for r in rows] == ["heterosched-lp", f"{mod}:Broken", "best-per-gpu"]
    assert rows[1]["status"] == "failed" and rows[1]["attempts"] == 1
    assert rows[1]["error"] == "ValueError: broken on its third decision"
    assert "Traceback" in err and "broken on its third decision" in err
    assert rows[0]["jobs_completed"] == rows[2]["jobs_completed"] == 12
    assert rows[0]["common_jobs"] == rows[2]["common_jobs"] == 12
    assert rows[2]["avg_jct_common_ratio"] == pytest.approx(
        rows[2]["avg_jct_s"] / rows[0]["avg_jct_s"])
    code, out, err = run(capsys, *argv)
    assert code == 1
    assert re.search(rf"{mod}:Broken\s+FAILED", out)
    assert (f"{mod}:Broken: FAILED after 1 attempt(s): ValueError: broken on its third "
            f"decision") in out
    assert "that did not fail" in out


@pytest.mark.parametrize("argv, says", [
    (["simulate", "--policy", "{mod}:nope"], "field '--policy': {mod}:nope: '{mod}' has no "
                                             "attribute 'nope'"),
    (["simulate", "--policy", "no_such_module_xyz:X"], "cannot import module "
                                                       "'no_such_module_xyz'"),
    (["simulate", "--policy", "{mod}:not_a_policy"], "is int 3: neither a policy"),
    (["simulate", "--policy", "{mod}:BestPerGPU", "--objective", "sia-las"],
     "a module:callable policy reads no LP flag"),
    (["compare", "--policies", "fifo,{mod}:make", "--backend", "ray"],
     "runs in this process only"),
    (["compare", "--policies", "fifo,{mod}:make", "--out", "somewhere"],
     "drop --backend ray and --out, and keep the results with --json > FILE"),
    (["compare", "--policies", "fifo,{mod}:NamedFifo"],
     "fifo, {mod}:NamedFifo would all be labelled 'fifo' in the results"),
])
def test_your_own_policy_errors_are_one_line(capsys, own_policy_module, argv, says):
    mod = own_policy_module
    argv = [a.format(mod=mod) for a in argv]
    code, out, err = run(capsys, argv[0], "--cluster", "tiny-8", "--workload", "gavel:jobs=3",
                         *argv[1:], "--no-progress")
    assert code == 2 and out in ("", "importing the policy module\n")   # (its own print)
    assert says.format(mod=mod) in err and "Traceback" not in err


def test_evaluate_runs_your_own_policy_beside_the_built_in_ones(capsys, own_policy_module):
    """``hsched evaluate --policies pure-lp,MODULE:CALLABLE``: a scheduling policy (reset,
    decide) runs as the named ones do, on each held-out seed, with its ratios to the LP; its
    figures are those of ``hsched compare`` on the same seed. (Until session 60 evaluate
    refused it and pointed to compare.)"""
    mod = own_policy_module
    workload = "gavel:rate=6,jobs=12,duration_scale=0.05"
    code, out, err = run(capsys, "evaluate", "--cluster", "sia-64", "--workload", workload,
                         "--seeds", "2", "--policies", f"pure-lp,{mod}:BestPerGPU", "--json",
                         "--no-progress")
    assert code == 0, err
    data = json.loads(out)
    rows = {r["policy"]: r for r in data["rows"]}
    assert set(rows) == {"pure-lp", "best-per-gpu"}
    own = rows["best-per-gpu"]
    assert own["kind"] == "simulator" and own["jobs_completed"] == 24
    assert own["avg_jct_common_ratio"] > 0 and own["decision_time_ratio"] > 0
    assert "a scheduling policy (reset, decide)" in data["sources"]["best-per-gpu"]
    per_seed = {(r["policy"], r["seed"]): r for r in data["per_seed"]}
    seed = data["seeds"][0]
    code, out, err = run(capsys, "compare", "--cluster", "sia-64", "--workload",
                         f"{workload},seed={seed}", "--policies",
                         f"heterosched-lp,{mod}:BestPerGPU", "--json", "--no-progress")
    assert code == 0, err
    compared = {m["policy"]: m for m in json.loads(out)}
    assert per_seed["best-per-gpu", seed]["avg_jct_s"] == compared["best-per-gpu"]["avg_jct_s"]
    assert per_seed["pure-lp", seed]["avg_jct_s"] == compared["heterosched-lp"]["avg_jct_s"]


def test_evaluate_takes_a_policy_object_and_runs_a_copy_of_it_per_run(own_policy_module,
                                                                      monkeypatch):
    """``evaluate(suite, [..., MyPolicy()])`` from Python: each run gets its own copy (the
    object given is left as it was), and an object that is neither an agent nor a policy
    is refused naming both."""
    import importlib

    from agents.evaluate import custom_suite, evaluate
    from hsched_env.errors import ConfigError
    monkeypatch.syspath_prepend(".")                     # the module's folder (the fixture's)
    own = importlib.import_module(own_policy_module).BestPerGPU()
    own.decisions = -1
    report = evaluate(custom_suite("tiny-8", "gavel:rate=8,jobs=6,duration_scale=0.05",
                                   seeds=2), ["pure-lp", own], progress=False)
    assert {r.label for r in report.runs} == {"pure-lp", "best-per-gpu"}
    assert own.decisions == -1                                   # the runs had copies
    with pytest.raises(ConfigError, match="neither a policy name, an agent .* nor a "
                                          "scheduling policy"):
        evaluate(custom_suite("tiny-8", "gavel:jobs=3"), ["pure-lp", object()],
                 progress=False)


def test_evaluate_makes_your_policy_anew_per_run_and_refuses_what_it_cannot_run(
        own_policy_module, monkeypatch):
    """An entry point's factory is called for each run (as hsched compare does); a policy
    object that cannot be copied, or one named as a built-in policy (the report finds the LP
    reference by its label), is refused before any run."""
    import importlib
    import threading

    from agents.evaluate import custom_suite, evaluate, parse_policies
    from hsched_env.errors import ConfigError
    monkeypatch.syspath_prepend(".")
    module = importlib.import_module(own_policy_module)
    suite = custom_suite("tiny-8", "gavel:rate=8,jobs=6,duration_scale=0.05", seeds=2)
    before = module.made
    evaluate(suite, ["pure-lp", f"{own_policy_module}:make"], progress=False)
    assert module.made - before == 1 + 2                   # parsing it, then each run

    class Locked(module.BestPerGPU):
        name = "locked"

        def __init__(self):
            self.lock = threading.Lock()
    with pytest.raises(ConfigError, match="cannot be copied: TypeError: cannot pickle"):
        parse_policies(["pure-lp", Locked()])

    class FakeLP(module.BestPerGPU):
        name = "pure-lp"
    with pytest.raises(ConfigError, match="its name 'pure-lp' is a built-in policy's"):
        parse_policies([FakeLP(), "pure-lp"])
    with pytest.raises(ConfigError, match="its name 'fifo' is a built-in policy's"):
        parse_policies(["pure-lp", f"{own_policy_module}:NamedFifo"])


def test_an_output_folder_that_cannot_be_made_leaves_no_parents_behind(capsys, tmp_path):
    """``--out new/<name too long>/x``: an error naming ``--out``, and the ``new`` folder that
    creating the path made before failing is removed again."""
    out = tmp_path / "new" / LONG_NAME / "x"
    code, _, err = run(capsys, "evaluate", "--suite", "smoke", "--policies", "pure-lp",
                       "--out", str(out), "--no-progress")
    assert code == 2 and "field '--out': cannot create" in err and "Traceback" not in err
    assert not (tmp_path / "new").exists()


def test_a_failed_output_folder_never_removes_a_folder_that_was_there(tmp_path, monkeypatch):
    """``new/../kept/<name too long>``: ``kept`` (empty, there before) only looks missing
    while ``new`` does not exist; the failed creation removes ``new``, never ``kept``."""
    from hsched_cli.outdirs import make_output_dir
    from hsched_env.errors import ConfigError
    from hsched_env.files import missing_parents
    monkeypatch.chdir(tmp_path)
    (tmp_path / "kept").mkdir()
    assert missing_parents(Path("new/../kept/x")) == [Path("new/../kept/x"), Path("new")]
    path = Path("new/../kept") / LONG_NAME
    assert missing_parents(path) == [Path("new")]    # (its own name: unsure, so not listed)
    with pytest.raises(ConfigError, match="cannot create"):
        make_output_dir(path)
    assert (tmp_path / "kept").is_dir() and not (tmp_path / "new").exists()


def test_version_prints_the_installed_version():
    from importlib.metadata import version
    out = hsched("--version")
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == f"hsched {version('heterosched')}"


def test_bad_cluster_file_names_file_and_field(capsys, tmp_path):
    path = tmp_path / "c.yaml"
    path.write_text("nodes:\n  - gpu_type: A100-80GB\n    gpus_per_node: 0\n    count: 2\n")
    code, _, err = run(capsys, "candidates", "--model", "resnet50", "--cluster", str(path))
    assert code == 2
    assert "c.yaml" in err and "gpus_per_node" in err


def test_custom_cluster_file(capsys, tmp_path):
    path = tmp_path / "lab.yaml"
    path.write_text("nodes:\n  - gpu_type: h100\n    gpus_per_node: 8\n    count: 2\n"
                    "  - gpu_type: l4\n    gpus_per_node: 4\n    count: 2\n")
    code, out, _ = run(capsys, "candidates", "--model", "gpt2-xl", "--cluster", str(path),
                       "--json")
    recs = json.loads(out)
    assert code == 0 and recs
    assert {t for r in recs for t in r["gpus"]} <= {"H100-SXM", "L4"}


def test_bad_max_candidates_is_a_usage_error(capsys):
    with pytest.raises(SystemExit) as exc:
        main(["candidates", "--model", "resnet50", "--cluster", "sia-64", "--max-candidates",
              "0"])
    assert exc.value.code == 2
    err = capsys.readouterr().err
    # one line, naming the command and the flag, and where the usage is (no usage block)
    assert err == ("hsched candidates: error: argument --max-candidates: expected a positive "
                   "integer, got '0' (see 'hsched candidates --help')\n")


def test_a_bad_ftf_guard_is_a_usage_error(capsys):
    with pytest.raises(SystemExit) as exc:
        main(["simulate", "--cluster", "tiny-8", "--ftf-guard", "none"])
    assert exc.value.code == 2
    assert capsys.readouterr().err == ("hsched simulate: error: argument --ftf-guard: expected "
                                       "a number or 'off', got 'none' (see 'hsched simulate "
                                       "--help')\n")


def test_an_unknown_flag_is_refused_by_its_subcommand(capsys):
    with pytest.raises(SystemExit) as exc:
        main(["evaluate", "--suite", "smoke", "--bogus", "x"])
    assert exc.value.code == 2
    assert capsys.readouterr().err == ("hsched evaluate: error: unrecognized arguments: --bogus "
                                       "x (see 'hsched evaluate --help')\n")
    with pytest.raises(SystemExit):
        main(["models", "extra"])
    assert capsys.readouterr().err.startswith("hsched models: error: unrecognized arguments")


def test_listings(capsys):
    code, out, _ = run(capsys, "models")
    assert code == 0 and "llama2-70b" in out and "one sample" in out
    code, out, _ = run(capsys, "clusters")
    assert code == 0 and "large-2048" in out and "2048" in out
    code, out, _ = run(capsys, "clusters", "sia-64")
    assert code == 0 and "A100-40GB" in out


@pytest.mark.parametrize("command", [[str(Path(sys.executable).with_name("hsched"))],
                                     [sys.executable, "-m", "hsched_cli"]])
def test_console_script_entry_point(command):
    out = subprocess.run(command + ["candidates", "--model", "resnet18", "--cluster", "tiny-8",
                                    "--json"], capture_output=True, text=True, check=True).stdout
    assert json.loads(out)


@slow
def test_demo_writes_plot_and_json(capsys, tmp_path):
    code, out, err = run(capsys, "demo", "--out", str(tmp_path))
    assert code == 0
    assert "\r" not in err and "planning candidates" not in err    # no bar into a log file
    assert (tmp_path / "candidates.png").stat().st_size > 10_000
    data = json.loads((tmp_path / "candidates.json").read_text())
    assert "llama2-7b" in data and data["llama2-7b"]
    assert "fastest set" in out
    # part 3: the shipped ranker on a burst, its gate ranking the large rounds only
    assert "The learned ranker where it pays" in out
    scale = json.loads((tmp_path / "ranker-at-scale" / "metrics.json").read_text())
    rows = {r["policy"]: r for r in scale["rows"]}
    assert set(rows) == {"pure-lp", "ranker:ranker.pt"}
    ranker = rows["ranker:ranker.pt"]
    assert 0.0 < ranker["gated_fraction"] < 1.0
    # the kept fraction counts a gated round at 100%; the ranked rounds' own is lower
    assert 0.0 < ranker["kept_frac_ranked_mean"] < ranker["kept_frac_mean"] < 0.5
    assert "in the rounds it pruned" in out
    # the observation it scores, beside the decision time
    assert ranker["observation_time_mean_s"] > 0
    assert "ranker:ranker.pt: + its observations" in out


@slow
def test_evaluate_json_survives_pop_parts_on_threads(tmp_path):
    """POP parts solved on threads used to leave fd 1 on a temporary file (the HiGHS banner
    capture), so the JSON never reached stdout: checked through a real file descriptor."""
    proc = subprocess.run([sys.executable, "-m", "hsched_cli", "evaluate", "--suite", "smoke",
                           "--policies", "pop-4,fifo", "--no-progress", "--json", "--out",
                           str(tmp_path)], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    data = json.loads(proc.stdout)
    assert [r["policy"] for r in data["rows"]] == ["pop-4", "fifo"]


SIM_KEYS = {"policy", "jobs_total", "jobs_completed", "avg_jct_s", "p50_jct_s", "p99_jct_s",
            "makespan_s", "avg_queue_s", "gpu_util", "restarts_per_job", "ftf_worst",
            "decision_time_mean_s", "decision_time_p99_s", "lp_vars_mean", "wall_s"}
SMALL = "gavel:rate=10,jobs=12,seed=0,mix=llm,duration_scale=0.05"


def hsched(*argv):
    """Run the real console entry in a subprocess: stdout must be pure (HiGHS prints on fd 1)."""
    return subprocess.run([sys.executable, "-m", "hsched_cli", *argv], capture_output=True,
                          text=True)


@slow
def test_simulate_json_is_pure_and_complete():
    for backend in ("highs", "pulp"):
        out = hsched("simulate", "--cluster", "sia-64", "--workload", SMALL, "--policy",
                     "heterosched-lp", "--backend", backend, "--json")
        assert out.returncode == 0, out.stderr
        m = json.loads(out.stdout)
        assert SIM_KEYS <= m.keys()
        assert m["policy"] == "heterosched-lp" and m["jobs_completed"] == m["jobs_total"] == 12
        assert m["lp_vars_mean"] > 0 and m["avg_jct_s"] > 0


def _strict_json(text: str):
    """``json.loads`` refusing NaN / Infinity, which are not JSON."""
    def refuse(constant):
        raise ValueError(f"{constant} in the JSON output")
    return json.loads(text, parse_constant=refuse)


def test_simulate_stopped_before_the_measured_jobs_prints_no_utilization(capsys):
    """``--measure-jobs`` whose jobs arrive after ``--max-time-s``: the utilization of the
    measured span has no value — n/a in the table, null in the JSON (nested too), not NaN."""
    argv = ["simulate", "--cluster", "sia-64", "--workload", "gavel:rate=6,jobs=30,seed=2",
            "--policy", "fifo-fastest", "--measure-jobs", "20:30", "--max-time-s", "3000",
            "--no-progress"]
    code, out, _ = run(capsys, *argv, "--json")
    assert code == 0
    m = _strict_json(out)
    assert m["jobs_completed"] == 0 and m["gpu_util"] is None
    assert m["gpu_util_by_type"] and all(u is None for u in m["gpu_util_by_type"].values())
    code, out, _ = run(capsys, *argv)
    assert code == 0
    row = next(line for line in out.splitlines() if line.startswith("fifo-fastest"))
    assert "nan" not in row and row.split()[8] == "n/a"


@slow
def test_compare_json_one_object_per_policy():
    out = hsched("compare", "--cluster", "sia-64", "--workload", SMALL, "--policies",
                 "heterosched-lp,gavel,fifo,greedy", "--json")
    assert out.returncode == 0, out.stderr
    rows = json.loads(out.stdout)
    assert [r["policy"] for r in rows] == ["heterosched-lp", "gavel", "fifo", "greedy"]
    assert all(SIM_KEYS <= r.keys() for r in rows)
    table = hsched("compare", "--cluster", "sia-64", "--workload", SMALL, "--policies",
                   "gavel,fifo")
    assert "avg JCT h" in table.stdout and "fifo" in table.stdout


@slow
def test_compare_ratios_are_over_the_jobs_every_policy_finished():
    """A window that ends before every job finished: the ratio column compares the policies
    on the jobs all of them finished."""
    out = hsched("compare", "--cluster", "sia-64", "--workload", SMALL, "--policies",
                 "heterosched-lp,fifo", "--max-time-s", "7200", "--json")
    assert out.returncode == 0, out.stderr
    lp, fifo = json.loads(out.stdout)
    assert lp["common_jobs"] == fifo["common_jobs"] > 0
    assert fifo["common_jobs"] <= min(lp["jobs_completed"], fifo["jobs_completed"])
    assert fifo["jobs_completed"] < lp["jobs_completed"]
    # over its own few finished (short) jobs FIFO reads faster than the LP; on the same
    # jobs it is slower
    assert fifo["avg_jct_s"] < lp["avg_jct_s"] and fifo["avg_jct_common_ratio"] > 1.5
    table = hsched("compare", "--cluster", "sia-64", "--workload", SMALL, "--policies",
                   "heterosched-lp,fifo", "--max-time-s", "7200").stdout
    fifo_row = next(x for x in table.splitlines() if x.startswith("fifo "))
    assert fifo_row.split()[3] == f"{fifo['avg_jct_common_ratio']:.2f}"      # × first
    assert (f"avg JCT over the {lp['common_jobs']} jobs every policy finished, ratio to "
            f"heterosched-lp's") in table
    assert lp["avg_jct_common_ratio"] == 1.0
    assert fifo["avg_jct_common_ratio"] == pytest.approx(
        fifo["avg_jct_common_s"] / lp["avg_jct_common_s"])
    # the worst FTF over the same jobs (over a subset of each policy's finished jobs)
    assert 0 < lp["ftf_worst_common"] <= lp["ftf_worst"]
    assert 0 < fifo["ftf_worst_common"] <= fifo["ftf_worst"]
    assert (f"worst FTF over those jobs: heterosched-lp {lp['ftf_worst_common']:.2f}, "
            f"fifo {fifo['ftf_worst_common']:.2f}") in table


def _csv_workload(tmp_path, rows: list[str]) -> str:
    path = tmp_path / "jobs.csv"
    path.write_text("job_id,submit_time_s,duration_s,num_gpus,model,gpu_type,batch\n"
                    + "\n".join(rows) + "\n", encoding="utf-8")
    return f"csv:path={path}"


def test_queue_time_names_the_jobs_that_never_started(tmp_path, capsys):
    """``queue h`` averages over the jobs that started: fifo, which never starts y within the
    limit, read 0.00 h beside srf's 0.08 h with nothing saying why. ``jobs_started`` is in
    the JSON, and the table says which policy left how many jobs unstarted; with no job
    finished by both, the ratio line says so instead of "over the 0 jobs" and NaNs."""
    spec = _csv_workload(tmp_path, ["x,0,3000,4,resnet50,V100-16GB,",
                                    "y,0,600,4,resnet50,V100-16GB,"])
    argv = ["compare", "--cluster", "tiny-8", "--workload", spec, "--policies", "srf,fifo",
            "--max-time-s", "2000", "--no-progress"]
    assert main(argv + ["--json"]) == 0
    srf, fifo = json.loads(capsys.readouterr().out)
    assert (srf["jobs_started"], fifo["jobs_started"]) == (2, 1)
    assert fifo["avg_queue_s"] == 0.0 and srf["avg_queue_s"] == pytest.approx(300.0)
    assert main(argv) == 0
    out = capsys.readouterr().out
    assert ("queue h: arrival to first start, over the jobs that started; never started: "
            "fifo 1 of 2") in out
    assert "× first: n/a, no job was finished by every policy" in out
    assert "nan" not in out and "over the 0 jobs" not in out and "worst FTF over" not in out


def test_a_stalled_run_says_its_idle_rounds_are_in_its_decision_times(tmp_path, capsys):
    """A job fifo never places (8 GPUs while two 1-GPU jobs hold a node): the run stalls,
    1,000 idle rounds end it, and they count in ``rounds`` and the decision times: the JSON
    has ``stall_rounds`` and the table says so under it."""
    from hsched_env.simulator import STALL_ROUNDS
    spec = _csv_workload(tmp_path, ["a,0,600,8,resnet50,,", "b,0,1200,1,resnet50,V100-16GB,",
                                    "c,0,600,1,resnet50,V100-16GB,"])
    argv = ["simulate", "--cluster", "tiny-8", "--workload", spec, "--policy", "fifo",
            "--no-progress"]
    assert main(argv + ["--json"]) == 0
    m = json.loads(capsys.readouterr().out)
    assert m["stall_rounds"] == STALL_ROUNDS and m["rounds"] > STALL_ROUNDS
    assert (m["jobs_completed"], m["jobs_started"], m["jobs_total"]) == (2, 2, 3)
    assert main(argv) == 0
    out = capsys.readouterr().out
    assert (f"fifo stalled: nothing ran in its last {STALL_ROUNDS} rounds (jobs waiting, no "
            f"arrivals left); they count in its rounds and decide ms") in out
    assert "never started: fifo 1 of 3" in out
    # a run that did not stall says nothing of the kind
    assert main(argv[:4] + [_csv_workload(tmp_path, ["b,0,1200,1,resnet50,V100-16GB,"])]
                + argv[5:]) == 0
    out = capsys.readouterr().out
    assert "fifo stalled:" not in out and "never started" not in out


def test_compare_warms_the_process_up_before_its_first_timed_run(monkeypatch, capsys):
    """The process's one-off costs go to an untimed warm-up, not to the first policy's
    decision times (the first of two policies read 1.26–1.54× its decision time in second
    place, in the audit of session 52)."""
    import hsched_cli.simulation as simulation
    calls = []
    real_warm, real_run = simulation.warm_up_process, simulation._run_policy
    monkeypatch.setattr(simulation, "warm_up_process",
                        lambda: (calls.append("warm"), real_warm())[1])
    monkeypatch.setattr(simulation, "_run_policy",
                        lambda name, *a: (calls.append(name), real_run(name, *a))[1])
    assert main(["compare", "--cluster", "tiny-8", "--workload",
                 "gavel:rate=8,jobs=4,duration_scale=0.05", "--policies", "fifo,gavel",
                 "--no-progress", "--json"]) == 0
    capsys.readouterr()
    assert calls == ["warm", "fifo", "gavel"]


def test_common_jct_helpers():
    import dataclasses
    from hsched_cli.simulation import _add_common_jct, _done_jct
    from hsched_env.simulator import JobRecord, SimConfig
    nan = float("nan")
    # ρ = JCT / (duration × max(1, mean contention × requested / G)); G = 8 here
    recs = [JobRecord(job_id=i, name="j", model="m", arrival_s=10.0, work_samples=1.0,
                      duration_s=5.0, requested_gpus=2, finish_s=f, contention_sum=c,
                      rounds_active=2)
            for i, (f, c) in enumerate([(20.0, 4.0), (nan, 2.0), (50.0, 16.0)])]
    assert _done_jct(recs, SimConfig(), 8) == {0: (10.0, 2.0), 2: (40.0, 4.0)}
    assert _done_jct(recs, SimConfig(measure_jobs=(1, 3)), 8) == {2: (40.0, 4.0)}
    rows = [dataclasses.asdict(r) for r in recs]                 # JSON rows of a sweep
    rows[2]["finish_s"] = None
    assert _done_jct(rows, SimConfig(), 8) == {0: (10.0, 2.0)}
    metrics = [{"policy": "failed", "status": "failed"}, {}, {}]
    _add_common_jct(metrics, [None, {0: (10.0, 2.0), 2: (40.0, 4.0)}, {0: (30.0, 1.5)}])
    assert "common_jobs" not in metrics[0]
    assert metrics[1]["common_jobs"] == metrics[2]["common_jobs"] == 1
    assert metrics[1]["avg_jct_common_ratio"] == 1.0 and metrics[2]["avg_jct_common_ratio"] == 3.0
    assert metrics[1]["ftf_worst_common"] == 2.0 and metrics[2]["ftf_worst_common"] == 1.5


@slow
def test_jobs_out_and_measure_jobs(tmp_path):
    path = tmp_path / "jobs.csv"
    out = hsched("simulate", "--cluster", "sia-64", "--workload", SMALL, "--policy", "greedy",
                 "--jobs-out", str(path), "--measure-jobs", "2:8", "--json")
    assert out.returncode == 0, out.stderr
    assert json.loads(out.stdout)["jobs_total"] == 6
    lines = path.read_text().splitlines()
    assert lines[0].startswith("job_id,name,model,arrival_s,first_start_s,finish_s,jct_s,"
                               "restarts,gpu_s_T4")
    assert len(lines) == 13
    rows = [line.split(",") for line in lines[1:]]
    # candidates used: every job that started names its candidate, one that never did none
    # (and has no start time: blank, as a job's jct_s before it finishes)
    assert all(bool(r[-1]) == (r[4] != "") for r in rows), rows
    assert sum(r[4] != "" for r in rows) >= 6
    assert "nan" not in path.read_text()


@pytest.mark.skipif(not os.path.exists("/dev/full"), reason="needs Linux's /dev/full")
def test_a_failed_jobs_out_write_keeps_the_metrics(capsys):
    """A write that fails after the run (a full disk; root passes the up-front access check
    of /proc) is an error naming --jobs-out, after the metrics are printed: not a traceback
    that loses them."""
    code, out, err = run(capsys, "simulate", "--cluster", "tiny-8", "--workload",
                         "gavel:jobs=3,duration_scale=0.05", "--policy", "fifo", "--json",
                         "--no-progress", "--jobs-out", "/dev/full")
    assert code == 2 and json.loads(out)["jobs_completed"] == 3
    assert ("field '--jobs-out': cannot write the per-job results to '/dev/full': No space "
            "left on device") in err and "Traceback" not in err


def test_jobs_out_is_written_before_a_closed_stdout_ends_the_command(tmp_path, monkeypatch):
    """``simulate ... --jobs-out F | true``: printing the metrics meets a closed pipe, which
    ends the command quietly (exit 0); the per-job file is written before that."""
    import io

    class Closed(io.StringIO):
        def write(self, text):
            raise BrokenPipeError(32, "Broken pipe")

    monkeypatch.setattr(sys, "stdout", Closed())
    path = tmp_path / "jobs.csv"
    assert main(["simulate", "--cluster", "tiny-8", "--workload",
                 "gavel:jobs=3,duration_scale=0.05", "--policy", "fifo", "--no-progress",
                 "--jobs-out", str(path)]) == 0
    assert len(path.read_text().splitlines()) == 4


@slow
def test_simulate_errors(tmp_path):
    out = hsched("simulate", "--cluster", "sia-64", "--workload", "gavel:rate=x",
                 "--policy", "gavel")
    assert out.returncode == 2 and "rate" in out.stderr
    out = hsched("simulate", "--cluster", "sia-64", "--workload", SMALL, "--policy", "nope")
    assert out.returncode == 2 and "valid:" in out.stderr and "heterosched-lp" in out.stderr
    bad = tmp_path / "t.csv"
    bad.write_text("job_id,submit_time_s,duration_s,num_gpus\n1,0,100,1\n2,5,-3,1\n")
    out = hsched("simulate", "--cluster", "sia-64", "--workload", f"csv:path={bad}",
                 "--policy", "fifo")
    assert out.returncode == 2 and "t.csv" in out.stderr and "3" in out.stderr
    out = hsched("simulate", "--cluster", "sia-64", "--workload", f"csv:path={bad}",
                 "--policy", "fifo", "--skip-invalid", "--json")
    assert out.returncode == 0 and "skipped 1" in out.stderr
    assert json.loads(out.stdout)["jobs_total"] == 1


@pytest.mark.parametrize("extra,needle", [
    (["--lp-time-limit-s", "0"], "--lp-time-limit-s"),
    (["--seed", "-1"], "--seed"),
    (["--max-time-s", "-1"], "--max-time-s"),
    (["--throughputs", "nonsense"], "throughput source"),
    (["--throughputs", "nope.json"], "nope.json': no such file"),
    (["--jobs-out", "/nonexistent-dir/x.csv"], "--jobs-out"),
    (["--floor", "1.5"], "--floor"),
    (["--ftf-guard", "0"], "field '--ftf-guard'"),
    (["--ftf-guard", "inf"], "must be a finite finish-time fairness > 0 or 'off'"),
    (["--ftf-guard", "2", "--objective", "fair-srpt"], "field '--ftf-guard'"),
    (["--objective", "fastest"], "fair-srpt"),
    (["--lp-method", "colgen", "--lp-backend", "pulp"], "colgen"),
    (["--round-s", "0"], "field '--round-s'"),
    (["--restart-s", "-1"], "field '--restart-s'"),
    (["--measure-jobs", "5:2"], "field '--measure-jobs'"),
    (["--measure-jobs", "0:100"], "field '--measure-jobs': 0:100 reaches beyond the 3 jobs"),
])
def test_bad_simulation_flags_fail_before_simulating(capsys, extra, needle):
    code, out, err = run(capsys, "simulate", "--cluster", "tiny-8", "--workload",
                         "gavel:rate=4,jobs=3", *extra)
    assert code == 2 and needle in err and out == ""


@pytest.mark.parametrize("policies,extra,needle", [
    (["--policy", "fifo"], ["--objective", "max-min"], "--objective is read by none"),
    (["--policy", "gavel"], ["--objective", "sia-srpt"], "--objective is read by none"),
    (["--policy", "gavel"], ["--topk", "3"], "it applies to topk, topk-dominance"),
    (["--policy", "sia"], ["--lp-time-limit-s", "0.5"], "--lp-time-limit-s is read by none"),
    (["--policy", "fifo"], ["--floor", "0.5"], "--floor is read by none"),
    (["--policy", "heterosched-lp-las"], ["--ftf-guard", "2"], "--ftf-guard is read by none"),
    # pop-K reads them for any K (pop-3 too): the rule, not a list of examples
    (["--policy", "fifo"], ["--objective", "max-min"], "support-reuse, pop-K, pop-K-serial"),
])
def test_a_flag_no_policy_reads_is_refused(capsys, policies, extra, needle):
    """An LP flag none of the given policies reads is an error, not silently ignored."""
    code, out, err = run(capsys, "simulate", "--cluster", "tiny-8", "--workload",
                         "gavel:rate=4,jobs=3", *policies, *extra)
    assert code == 2 and needle in err and out == ""


def test_a_flag_one_of_the_policies_reads_is_taken(capsys):
    code, out, err = run(capsys, "compare", "--cluster", "tiny-8", "--workload",
                         "gavel:rate=4,jobs=3,seed=0", "--policies", "fifo,topk", "--topk", "3")
    assert code == 0, err


def test_lp_flags_that_cannot_work_together_fail_before_any_policy_runs(capsys):
    """``--lp-method colgen`` needs the highs backend: refused, named by its flag, before
    ``fifo`` and ``greedy`` run (it was found only when the LP policy's turn came)."""
    code, out, err = run(capsys, "compare", "--cluster", "tiny-8", "--workload",
                         "gavel:rate=4,jobs=3", "--policies", "fifo,greedy,heterosched-lp",
                         "--lp-method", "colgen", "--lp-backend", "pulp")
    assert code == 2 and out == "" and "field '--lp-method': heterosched-lp:" in err
    # a flag no policy reads is named as it was typed (--backend: --lp-backend's old name)
    code, _, err = run(capsys, "compare", "--cluster", "tiny-8", "--workload",
                       "gavel:rate=4,jobs=3", "--policies", "fifo", "--backend", "highs")
    assert code == 2 and "field '--backend': --backend is read by none" in err


def test_jobs_out_may_not_overwrite_an_input(capsys, tmp_path):
    trace = tmp_path / "jobs.csv"
    text = "job_id,submit_time_s,duration_s,num_gpus\na,0,60,1\n"
    trace.write_text(text)
    code, out, err = run(capsys, "simulate", "--cluster", "tiny-8", "--workload",
                         f"csv:PATH={trace}", "--policy", "fifo", "--jobs-out",
                         str(tmp_path / "." / "jobs.csv"))
    assert code == 2 and out == "" and "is the --workload file this run reads" in err
    assert trace.read_text() == text
    code, _, _ = run(capsys, "simulate", "--cluster", "tiny-8", "--workload",
                     f"csv:path={trace}", "--policy", "fifo", "--jobs-out",
                     str(tmp_path / "out.csv"))
    assert code == 0 and (tmp_path / "out.csv").read_text().startswith("job_id,")


def test_jobs_out_may_not_overwrite_a_default_trace(capsys, tmp_path, monkeypatch):
    """A kind's default trace (``pollux:workload=1`` reads the traces folder's file) is an
    input too (on a copy of the traces folder: a failing check must not touch the real one)."""
    source = traces_dir() / "pollux" / "workloads" / "workload-1.csv"
    copy = tmp_path / "pollux" / "workloads" / "workload-1.csv"
    copy.parent.mkdir(parents=True)
    copy.write_bytes(source.read_bytes())
    monkeypatch.setenv("HSCHED_TRACES", str(tmp_path))
    code, out, err = run(capsys, "simulate", "--cluster", "sia-64", "--workload",
                         "pollux:workload=1,max_jobs=3", "--policy", "fifo", "--jobs-out",
                         str(copy))
    assert code == 2 and out == "" and "is the --workload file this run reads" in err
    assert copy.read_bytes() == source.read_bytes()


def test_overwrite_without_out_is_refused(capsys):
    code, out, err = run(capsys, "compare", "--cluster", "tiny-8", "--workload",
                         "gavel:rate=4,jobs=3", "--policies", "fifo,gavel", "--backend", "ray",
                         "--overwrite")
    assert code == 2 and "--overwrite needs --out" in err


def test_a_failed_run_leaves_no_jobs_out_file(capsys, tmp_path):
    path = tmp_path / "jobs.csv"
    code, _, err = run(capsys, "simulate", "--cluster", "tiny-8", "--workload", "gavel:jobs=0",
                       "--jobs-out", str(path))
    assert code == 2 and "jobs must be" in err
    assert not path.exists()
    code, _, err = run(capsys, "simulate", "--cluster", "tiny-8", "--workload", "gavel:jobs=3",
                       "--jobs-out", str(tmp_path / "no" / "jobs.csv"))
    assert code == 2 and "no folder" in err


def test_demo_and_evaluate_refuse_bad_outputs_and_seed_counts(capsys, tmp_path):
    taken = tmp_path / "a-file"
    taken.write_text("x")
    code, _, err = run(capsys, "demo", "--out", str(taken))
    assert code == 2 and "field '--out'" in err and "cannot create" in err
    code, _, err = run(capsys, "evaluate", "--cluster", "tiny-8", "--workload",
                       "gavel:rate=8,jobs=16", "--policies", "pure-lp", "--seeds", "2000000",
                       "--out", str(tmp_path / "ev"))
    assert code == 2 and "must be 1..1,000,000" in err
    assert not (tmp_path / "ev").exists()


@pytest.mark.parametrize("policy", ["heterosched-lp", "gavel"])
def test_lp_method_reaches_every_lp_policy(capsys, monkeypatch, policy):
    import lp_baseline.parallel_parts as parts_mod
    seen, real = [], parts_mod.solve_allocation

    def record(problem, objective, **kw):
        seen.append(kw.get("method"))
        return real(problem, objective, **kw)

    monkeypatch.setattr(parts_mod, "solve_allocation", record)
    for flag, method in (([], "auto"), (["--lp-method", "simplex"], "simplex"),
                         (["--lp-method", "colgen"], "colgen")):
        seen.clear()
        code, out, err = run(capsys, "simulate", "--cluster", "tiny-8", "--workload",
                             "gavel:rate=4,jobs=3", "--policy", policy, "--json",
                             "--no-progress", *flag)
        assert code == 0 and seen and set(seen) == {method}, (flag, err)


@pytest.mark.parametrize("policy", ["heterosched-lp", "gavel"])
def test_lp_warm_start_reaches_every_lp_policy(capsys, monkeypatch, policy):
    import lp_baseline.parallel_parts as parts_mod
    seen, real = [], parts_mod.solve_allocation

    def record(problem, objective, **kw):
        seen.append((kw.get("basis_keys") is not None, kw.get("warm_basis") is not None))
        return real(problem, objective, **kw)

    monkeypatch.setattr(parts_mod, "solve_allocation", record)
    for flag, warm in (([], False), (["--lp-warm-start"], True)):
        seen.clear()
        code, out, err = run(capsys, "simulate", "--cluster", "tiny-8", "--workload",
                             "gavel:rate=4,jobs=6", "--policy", policy, "--json",
                             "--no-progress", *flag)
        assert code == 0 and len(seen) > 1, (flag, err)
        assert all(keys == warm for keys, _ in seen)
        assert any(basis for _, basis in seen) == warm        # from the second solve on
        assert ("lp_warm_starts" in json.loads(out)) == warm
        assert json.loads(out).get("lp_warm_retries", "absent") == (0 if warm else "absent")


def test_compare_checks_every_policy_name_first(capsys):
    code, out, err = run(capsys, "compare", "--cluster", "tiny-8", "--workload",
                         "gavel:rate=4,jobs=3", "--policies", "fifo,nope")
    assert code == 2 and "unknown policy 'nope'" in err and out == ""


@slow
def test_objective_and_floor_reach_the_co_optimizer():
    """--objective / --floor / --ftf-guard change heterosched-lp's schedule; gavel, which
    reads none of them, refuses them (they would be silently ignored)."""
    def avg(*extra, policy="heterosched-lp"):
        out = subprocess.run([sys.executable, "-m", "hsched_cli", "simulate", "--cluster",
                              "sia-64", "--workload", "gavel:rate=30,jobs=40,seed=3",
                              "--policy", policy, "--json", "--no-progress", *extra],
                             capture_output=True, text=True, check=True).stdout
        return json.loads(out)["avg_jct_s"]
    base = avg()
    assert avg("--objective", "sia-srpt", "--floor", "0") == base     # the defaults
    assert avg("--objective", "sia-las") != base
    assert avg("--objective", "fair-srpt") != base
    assert avg("--floor", "0.5") != base
    assert avg("--ftf-guard", "1000") == base          # no job near it: the same schedule
    assert avg("--ftf-guard", "0.5") != base
    assert avg("--ftf-guard", "off") == base           # nor near the default guard, 2
    refused = subprocess.run([sys.executable, "-m", "hsched_cli", "simulate", "--cluster",
                              "sia-64", "--workload", "gavel:rate=30,jobs=40,seed=3",
                              "--policy", "gavel", "--floor", "0"], capture_output=True,
                             text=True)
    assert refused.returncode == 2 and "--floor is read by none" in refused.stderr


@slow
def test_the_starvation_guard_is_on_by_default_and_off_turns_it_off():
    """sia-srpt's default guard is 2 (docs/lp.md): on a workload where SRPT keeps a job
    waiting past it, the default schedule is ``--ftf-guard 2``'s, not ``--ftf-guard off``'s."""
    def avg(*extra):
        out = subprocess.run([sys.executable, "-m", "hsched_cli", "simulate", "--cluster",
                              "sia-64", "--workload", "gavel:rate=8,jobs=30,seed=3,mix=llm",
                              "--json", "--no-progress", *extra],
                             capture_output=True, text=True, check=True).stdout
        return json.loads(out)["avg_jct_s"]
    base = avg()
    assert avg("--ftf-guard", "2") == base
    assert avg("--ftf-guard", "OFF") != base
    assert avg("--objective", "sia-las", "--ftf-guard", "off") == avg("--objective", "sia-las")


@slow
def test_round_restart_is_off_by_default_and_cuts_restarts_when_given():
    """``--round-restart`` (``LPPolicy(round_restart=True)``, docs/lp.md): off by default;
    given, a candidate that costs a restart counts 240 of its 300 s round, and on this
    workload at least a fifth of the restarts go (1.0 → 0.75 a job when written) and the
    avg JCT falls; ``heterosched-lp-las`` (``sia-las``) reads it too."""
    def metrics(*extra):
        out = subprocess.run([sys.executable, "-m", "hsched_cli", "simulate", "--cluster",
                              "sia-64", "--workload",
                              "gavel:rate=20,jobs=40,seed=7,duration_scale=0.05",
                              "--json", "--no-progress", *extra],
                             capture_output=True, text=True, check=True).stdout
        return json.loads(out)
    base, counted = metrics(), metrics("--round-restart")
    assert 0 < counted["restarts_per_job"] <= 0.8 * base["restarts_per_job"]
    assert counted["avg_jct_s"] < base["avg_jct_s"]
    las = metrics("--policy", "heterosched-lp-las")
    las_counted = metrics("--policy", "heterosched-lp-las", "--round-restart")
    assert 0 < las_counted["restarts_per_job"] <= 0.8 * las["restarts_per_job"]
    refused = subprocess.run([sys.executable, "-m", "hsched_cli", "simulate", "--cluster",
                              "tiny-8", "--workload", "gavel:rate=8,jobs=5,seed=1",
                              "--objective", "fair-srpt", "--round-restart"],
                             capture_output=True, text=True)
    assert refused.returncode == 2 and "field '--round-restart'" in refused.stderr


@pytest.mark.parametrize("given", [None, "1"])
def test_the_command_turns_numpys_huge_page_advice_off_unless_told(given):
    """``hsched`` sets ``NUMPY_MADVISE_HUGEPAGE=0`` before NumPy loads (``hsched_cli``'s
    docstring: huge-page advice stalled large allocations here), and leaves a value the user
    set alone."""
    import os
    code = ("import hsched_cli.main, os\n"
            "from numpy._core.multiarray import _get_madvise_hugepage\n"
            "print(os.environ['NUMPY_MADVISE_HUGEPAGE'], _get_madvise_hugepage())")
    env = {k: v for k, v in os.environ.items() if k != "NUMPY_MADVISE_HUGEPAGE"}
    if given is not None:
        env["NUMPY_MADVISE_HUGEPAGE"] = given
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True,
                         text=True, check=True).stdout.split()
    assert out == (["0", "False"] if given is None else ["1", "True"])


def test_ctrl_c_is_one_line_and_names_a_partial_training_run(monkeypatch, capsys, tmp_path):
    """An interrupted command prints one line and returns 130 (no traceback); a training run
    says where its partial output is."""
    import hsched_cli.main as cli

    def interrupted(args):
        raise KeyboardInterrupt

    monkeypatch.setattr(cli, "cmd_models", interrupted)
    assert cli.main(["models"]) == 130
    assert capsys.readouterr().err.strip() == "hsched models: interrupted"
    # an earlier run's folder is not this run's: named only once the command made it
    logdir = tmp_path / "run"
    logdir.mkdir()
    (logdir / "config.json").write_text("{}")
    monkeypatch.setattr(cli, "cmd_train", interrupted)
    assert cli.main(["train", "--env", "hsched/Schedule-Tiny-v0", "--logdir", str(logdir)]) == 130
    assert capsys.readouterr().err.strip() == "hsched train: interrupted"

    def interrupted_after_the_folder(args):
        args.run_dir = logdir
        raise KeyboardInterrupt

    monkeypatch.setattr(cli, "cmd_train", interrupted_after_the_folder)
    assert cli.main(["train", "--env", "hsched/Schedule-Tiny-v0"]) == 130
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and f"partial run is in {logdir}" in err


def test_a_cut_off_run_shows_no_makespan(capsys):
    assert main(["simulate", "--cluster", "tiny-8", "--workload", "gavel:rate=4,jobs=40,seed=1",
                 "--max-time-s", "20000", "--policy", "fifo"]) == 0
    row = [ln for ln in capsys.readouterr().out.splitlines() if ln.startswith("fifo")][0]
    done, makespan = row.split()[1], row.split()[6]
    assert done == "4/40" and makespan == "n/a"          # strict FIFO (7/40 with backfill)


def test_interrupted_note_says_whether_there_is_anything_to_resume(tmp_path):
    from hsched_cli.interrupts import Terminated
    from hsched_cli.learning import interrupted_note
    assert interrupted_note(tmp_path / "gone" / "runs", KeyboardInterrupt()) == (
        "interrupted before any run finished: nothing to resume")
    (tmp_path / "out" / "runs").mkdir(parents=True)
    (tmp_path / "out" / "runs" / "tiny-8__fifo__0__0123456789abcdef.json").write_text("{}")
    (tmp_path / "out" / "runs" / "notes.json").write_text("{}")      # not a run file
    assert interrupted_note(tmp_path / "out" / "runs", KeyboardInterrupt()).startswith(
        "interrupted: 1 run file(s)")
    assert interrupted_note(tmp_path / "out" / "runs", Terminated()).startswith(
        "terminated: 1 run file(s)")
    # the advice names the flags the resume needs: --out where the command had the default
    # folder (--resume needs it), and without --overwrite (they exclude each other)
    import argparse
    runs = tmp_path / "out" / "runs"
    for out, overwrite, advice in (
            (str(tmp_path / "out"), False, "with --resume to finish"),
            (None, False, f"with --out {tmp_path / 'out'} --resume to finish"),
            (str(tmp_path / "out"), True, "with --resume (and without --overwrite) to")):
        note = interrupted_note(runs, KeyboardInterrupt(),
                                argparse.Namespace(out=out, overwrite=overwrite))
        assert f"run the same command {advice}" in note, note


def test_sigterm_is_told_from_ctrl_c_when_a_library_rewraps_it():
    """Ray's ``ray.wait`` turns the SIGTERM handler's ``Terminated`` into a plain
    ``KeyboardInterrupt``: a killed Ray sweep exited 130, "interrupted" (until session 51).
    The handler's own record makes it 143, "terminated"; a later command's Ctrl-C is 130."""
    import signal

    from hsched_cli import interrupts
    try:
        with interrupts.sigterm_raises():
            if signal.getsignal(signal.SIGTERM) is not interrupts._raise_terminated:
                pytest.skip("SIGTERM's handler cannot be set here (not the main thread)")
            try:
                try:
                    interrupts._raise_terminated(signal.SIGTERM, None)    # what SIGTERM runs
                except interrupts.Terminated:
                    raise KeyboardInterrupt from None                  # what Ray makes of it
            except KeyboardInterrupt as exc:                           # a sweep's handler
                assert type(exc) is KeyboardInterrupt
                assert interrupts.exit_status(exc) == 143
                assert interrupts.what_happened(exc) == "terminated"
                raise
    except KeyboardInterrupt as exc:                                   # the command's
        assert isinstance(exc, interrupts.Terminated) and interrupts.exit_status(exc) == 143
    assert interrupts.exit_status(KeyboardInterrupt()) == 130           # nothing left over
    try:
        with interrupts.sigterm_raises():
            raise KeyboardInterrupt
    except KeyboardInterrupt as exc:
        assert interrupts.exit_status(exc) == 130 and interrupts.what_happened(exc) == "interrupted"


def test_policy_help_and_errors_list_every_policy(capsys):
    from lp_baseline.registry import POLICY_NAMES, POLICY_NAMES_SPELLED, make_policy
    # every registered name is in the spelled list, or is a pop-K example of its general form
    for name in POLICY_NAMES:
        assert name in POLICY_NAMES_SPELLED or name.startswith("pop-")
    assert make_policy("pop-3") and make_policy("pop-2-serial")     # the general forms work
    with pytest.raises(SystemExit):
        main(["simulate", "--help"])
    text = " ".join(capsys.readouterr().out.split())
    for name in ("gavel-resets", "topk-dominance", "pop-K-serial"):
        assert name in text                            # (not broken at its hyphen)



def test_simulate_shows_the_workloads_notes(capsys):
    """What a loader assumed (Pollux's durations, stand-in models) is printed under the first
    line and is in the JSON with the skipped-row count."""
    args = ("simulate", "--cluster", "sia-64", "--workload", "pollux:workload=1,max_jobs=3",
            "--max-time-s", "600", "--no-progress")
    if not (Path(__file__).resolve().parents[2] / "shared" / "traces").is_dir():
        pytest.skip("shared traces not present")
    code, out, _ = run(capsys, *args)
    assert code == 0
    assert "  note: Pollux CSVs have no durations" in out.splitlines()[1]
    code, out, _ = run(capsys, *args, "--json")
    data = json.loads(out)
    assert data["workload_skipped"] == 0
    assert any("Pollux" in n for n in data["workload_notes"])


def test_floor_is_refused_where_no_objective_has_one(capsys):
    """--floor with an objective that has no floor (max-min, ...) or a policy whose fixed
    objective has none (heterosched-lp-v0) is an error naming --floor, not silently ignored;
    beside a policy that reads it, it reaches that policy only."""
    wl = ["--cluster", "sia-64", "--workload", "gavel:rate=30,jobs=8,seed=3", "--no-progress"]
    code, _, err = run(capsys, "simulate", *wl, "--policy", "heterosched-lp",
                       "--objective", "max-min", "--floor", "0.9")
    assert code == 2 and "'--floor'" in err and "'max-min' has none" in err
    code, _, err = run(capsys, "simulate", *wl, "--policy", "heterosched-lp-v0",
                       "--floor", "0.9")
    assert code == 2 and "--floor is read by none of the policies given" in err
    code, out, _ = run(capsys, "compare", *wl, "--policies", "heterosched-lp,heterosched-lp-v0",
                       "--floor", "0.9", "--json")
    assert code == 0 and [r["policy"] for r in json.loads(out)] == ["heterosched-lp",
                                                                    "heterosched-lp-v0"]
    # what each policy gets: the floor reaches heterosched-lp, not heterosched-lp-v0
    import argparse

    from hsched_cli.simulation import _lp_options
    from lp_baseline.registry import make_policy
    args = argparse.Namespace(floor=0.9, lp_method="auto", lp_warm_start=False)
    assert make_policy("heterosched-lp", **_lp_options(args, "heterosched-lp")).floor == 0.9
    assert _lp_options(args, "heterosched-lp-v0") == {}


def test_lp_policy_refuses_a_floor_its_objective_ignores():
    from hsched_env.errors import ConfigError
    from lp_baseline.policy import LPPolicy
    from lp_baseline.registry import make_policy, policy_options
    for objective in ("max-min", "max-throughput", "min-makespan", "ftf"):
        with pytest.raises(ConfigError, match="has none") as err:
            LPPolicy(objective=objective, floor=0.5)
        assert err.value.field == "floor"
        LPPolicy(objective=objective)                       # the default floor: fine
    assert LPPolicy(objective="fair-srpt", floor=0.9).floor == 0.9
    with pytest.raises(ConfigError, match="has none"):
        make_policy("heterosched-lp-v0", floor=0.5)
    assert "floor" not in policy_options("heterosched-lp-v0")
    assert "floor" in policy_options("heterosched-lp-v1")
    assert "floor" in policy_options("heterosched-lp")


@pytest.mark.parametrize("command", ["compare", "evaluate"])
@pytest.mark.parametrize("policies, says", [(",fifo", "entry 1 of ',fifo' is empty"),
                                            ("fifo,", "entry 2 of 'fifo,' is empty"),
                                            ("fifo,,gavel", "entry 2 of 'fifo,,gavel' is empty"),
                                            (" , ", "no policy named")])
def test_policy_lists_with_empty_entries_are_refused(capsys, command, policies, says):
    code, _, err = run(capsys, command, "--cluster", "sia-64", "--workload", "gavel:jobs=5",
                       "--policies", policies)
    assert code == 2 and "'--policies'" in err and says in err


def test_compare_refuses_a_policy_listed_twice(capsys):
    """The same on either backend (Ray's sweep refused it, the serial path ran it twice)."""
    code, _, err = run(capsys, "compare", "--cluster", "sia-64", "--workload", "gavel:jobs=5",
                       "--policies", "fifo,gavel,fifo")
    assert code == 2 and "names fifo more than once" in err


@pytest.mark.parametrize("argv, flag, values", [
    (["compare", "--cluster", "sia-64", "--workload", "gavel:jobs=5", "--policies",
      "fifo,greedy", "--policies", "gavel"], "--policies", "'fifo,greedy', then 'gavel'"),
    (["simulate", "--cluster", "sia-64", "--workload", "gavel:jobs=5", "--cluster=tiny-8"],
     "--cluster", "'sia-64', then 'tiny-8'"),
    (["simulate", "--cluster", "sia-64", "--workload", "gavel:jobs=5", "--seed", "0",
      "--seed", "0"], "--seed", "0, then 0"),
    (["evaluate", "--cluster", "tiny-8", "--workload", "gavel:jobs=4", "--policies",
      "pure-lp,fifo", "--policies", "gavel"], "--policies", "'pure-lp,fifo', then 'gavel'"),
    (["-v", "-v", "candidates", "--model", "resnet50", "--model", "llama2-7b"], "--model",
     "'resnet50', then 'llama2-7b'"),
])
def test_a_flag_given_twice_is_refused_not_overwritten(capsys, argv, flag, values):
    """argparse keeps the last value of a repeated flag: ``--policies A --policies B`` ran B
    alone, without a word. Now an error naming the flag and both values (exit 2)."""
    with pytest.raises(SystemExit) as exc:
        main(list(argv))
    out, err = capsys.readouterr()
    assert exc.value.code == 2 and not out
    assert f"argument {flag}: given twice ({values}): give it once" in err


def test_a_folder_given_as_cluster_file_and_a_file_given_as_out_folder(capsys, tmp_path):
    folder = tmp_path / "cluster.yaml"
    folder.mkdir()
    code, _, err = run(capsys, "clusters", str(folder))
    assert code == 2 and "(a folder, not a file)" in err and "no such file" not in err
    afile = tmp_path / "out.txt"
    afile.write_text("x")
    code, _, err = run(capsys, "evaluate", "--cluster", "sia-64", "--workload", "gavel:jobs=3",
                       "--policies", "fifo", "--out", str(afile / "sub"))
    assert code == 2 and f"{str(afile)!r} is a file, not a folder" in err
    assert afile.read_text() == "x"


def test_the_command_line_loads_the_lp_modules_only_when_asked():
    """``hsched`` starts without SciPy's sparse module, HiGHS or the LP policy: a non-LP
    simulation does not pay for them (registry.make_policy imports them lazily)."""
    code = ("import sys, hsched_cli.main; from lp_baseline.registry import make_policy; "
            "make_policy('fifo-fastest'); "
            "print(sorted(m for m in ('highspy', 'scipy.sparse', 'lp_baseline.policy') "
            "if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True).stdout
    assert out.strip() == "[]"


def test_json_results_record_the_scenario_and_the_policy_options(capsys):
    """A saved result says what it was measured on and with which options: a run with
    ``--objective`` and ``--round-restart`` is told apart from a default one (until session
    63 both read plain ``heterosched-lp``), and each policy of a comparison records only
    the options it read."""
    spec = "gavel:rate=4,jobs=6,seed=0,duration_scale=0.05"
    code, out, _ = run(capsys, "simulate", "--cluster", "tiny-8", "--workload", spec,
                       "--objective", "sia-las", "--round-restart", "--round-s", "600",
                       "--json", "--no-progress")
    data = json.loads(out)
    assert code == 0 and data["policy"] == "heterosched-lp"
    assert data["policy_options"] == {"objective": "sia-las", "backend": "highs",
                                      "round_restart": True}
    assert data["scenario"]["cluster"] == "tiny-8" and data["scenario"]["workload"] == spec
    assert data["scenario"]["round_s"] == 600
    code, out, _ = run(capsys, "compare", "--cluster", "tiny-8", "--workload", spec,
                       "--policies", "heterosched-lp,topk,fifo", "--ftf-guard", "off",
                       "--json", "--no-progress")
    options = {m["policy"]: m["policy_options"] for m in json.loads(out)}
    assert code == 0 and options == {
        "heterosched-lp": {"backend": "highs", "ftf_guard": "off"},
        "topk": {"backend": "highs", "topk": 4, "ftf_guard": "off"}, "fifo": {}}
