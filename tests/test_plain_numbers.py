"""Numbers in flags, workload specs and traces are plain decimal text: Python's other literal
forms (digit-group underscores, other scripts' digits), which ``int()`` and ``float()``
accept, are refused with an error naming the field instead of read silently."""

from __future__ import annotations

import pytest

from hsched_cli.main import main
from hsched_env.errors import ConfigError, TraceError, decimal_float, decimal_int
from hsched_env.cluster import get_cluster
from hsched_env.workloads import load_workload


@pytest.mark.parametrize("text, value", [("3", 3.0), (" -2.5 ", -2.5), ("1e3", 1000.0),
                                         ("1.6E+3", 1600.0), (".5", 0.5), ("7.", 7.0)])
def test_plain_decimal_numbers_are_read(text, value):
    assert decimal_float(text) == value


@pytest.mark.parametrize("text", ["1_0", "٤", "", "0x10", "1e", "--1", "1.2.3", "½"])
def test_other_number_forms_are_refused(text):
    with pytest.raises(ValueError):
        decimal_float(text)


def test_integers():
    assert decimal_int(" 42 ") == 42 and decimal_int("-3") == -3
    for text in ("1_0", "٤٢", "4.0", "1e3", ""):
        with pytest.raises(ValueError):
            decimal_int(text)


def test_inf_and_nan_are_left_to_the_finiteness_checks():
    assert decimal_float("inf") == float("inf")
    with pytest.raises(ConfigError, match="finite"):
        load_workload("gavel:rate=inf,jobs=3", get_cluster("sia-64"))


@pytest.mark.parametrize("spec, field", [("gavel:jobs=1_0", "jobs"), ("gavel:rate=٤,jobs=5", "rate")])
def test_workload_spec_numbers(spec, field):
    with pytest.raises(ConfigError) as err:
        load_workload(spec, get_cluster("sia-64"))
    assert err.value.field == field


@pytest.mark.parametrize("cell, field", [("1_0", "num_gpus"), ("٦٠", "duration_s")])
def test_csv_trace_numbers(tmp_path, cell, field):
    row = {"num_gpus": "1", "duration_s": "600"}
    row[field] = cell
    path = tmp_path / "jobs.csv"
    path.write_text("job_id,submit_time_s,model,num_gpus,duration_s\n"
                    f"0,0,resnet50,{row['num_gpus']},{row['duration_s']}\n", encoding="utf-8")
    with pytest.raises(TraceError) as err:
        load_workload(f"csv:path={path}", get_cluster("sia-64"))
    assert err.value.field == field and "not a number" in str(err.value)


@pytest.mark.parametrize("flag, value", [("--round-s", "3_00"), ("--seed", "٤"),
                                         ("--max-candidates", "1_6")])
def test_flag_numbers(capsys, flag, value):
    with pytest.raises(SystemExit) as exc:
        main(["simulate", "--cluster", "sia-64", "--workload", "gavel:jobs=3", "--policy",
              "fifo", flag, value])
    assert exc.value.code == 2
    err = capsys.readouterr().err
    assert f"argument {flag}: expected" in err and repr(value) in err


def test_empty_throughputs_flag_is_refused(capsys):
    assert main(["simulate", "--cluster", "sia-64", "--workload", "gavel:jobs=3", "--policy",
                 "fifo", "--throughputs", ""]) == 2
    assert "'--throughputs': an empty value" in capsys.readouterr().err


def test_pop_k_is_written_plainly():
    from hsched_env.errors import UnknownNameError
    from lp_baseline.registry import make_policy
    assert make_policy("pop-4").pop == 4 and make_policy("pop-12-serial").pop == 12
    for name in ("pop-1_0", "pop-٤", "pop-+4", "pop- 4", "pop-04"):
        with pytest.raises(UnknownNameError):
            make_policy(name)
    for name in ("pop-1", "pop-1-serial"):          # a plain K, but one part is the whole LP
        with pytest.raises(ConfigError, match=rf"'{name}': POP splits the jobs into 2 to 1,024"):
            make_policy(name)


def test_an_unknown_name_suggests_the_nearest():
    from hsched_env.errors import UnknownNameError
    from lp_baseline.registry import make_policy
    with pytest.raises(UnknownNameError,
                       match=r"unknown policy 'gavl' \(did you mean 'gavel'\?\)"):
        make_policy("gavl")
    with pytest.raises(UnknownNameError,
                       match=r"'gavle-fifo' \(did you mean 'gavel-fifo'\?\)"):
        make_policy("gavle-fifo")
    with pytest.raises(UnknownNameError,
                       match=r"unknown cluster 'sia64' \(did you mean 'sia-64'"):
        get_cluster("sia64")
    with pytest.raises(UnknownNameError) as far:            # nothing near: no suggestion
        make_policy("zzzzzz")
    assert "did you mean" not in str(far.value) and "valid: " in str(far.value)


def test_pop_k_is_bounded(capsys):
    """K up to ``MAX_POP_PARTS``; above, a one-line error (a K past a C long was an
    ``OverflowError`` traceback at the first decision, and a K of millions ran on)."""
    from hsched_cli.main import main
    from lp_baseline.registry import MAX_POP_PARTS, make_policy
    assert make_policy(f"pop-{MAX_POP_PARTS}").pop == MAX_POP_PARTS == 1024
    for name in ("pop-1025", "pop-1025-serial", "pop-99999999999999999999"):
        with pytest.raises(ConfigError, match=rf"{name}'.* at most 1,024 parts"):
            make_policy(name)
    assert main(["simulate", "--cluster", "tiny-8", "--workload", "gavel:jobs=2",
                 "--policy", "pop-99999999999999999999"]) == 2
    err = capsys.readouterr().err
    assert "at most 1,024 parts" in err and "Traceback" not in err


def test_training_numbers_and_bands():
    from agents.train import TrainConfig, _number, _schedule
    assert _number("1e-5", False) == 1e-5 and _number("1_0", True) == "1_0"
    assert _schedule("lin_3e-4", "learning_rate")(0.5) == pytest.approx(1.5e-4)
    with pytest.raises(ConfigError):
        _schedule("lin_1_0", "learning_rate")
    assert TrainConfig(algo="imitation", target_recall=0.95,
                       threshold_bands="1000, 10000").threshold_bands == (1000, 10000)
    with pytest.raises(ConfigError, match="an empty entry") as err:
        TrainConfig(algo="imitation", target_recall=0.95, threshold_bands="1000,,10000,")
    assert err.value.field == "--threshold-bands"


def test_load_workload_seed_must_be_a_whole_number():
    for seed in ("1_0", 2.7, True, -1, "abc"):
        with pytest.raises(ConfigError) as err:
            load_workload("gavel:jobs=3", get_cluster("sia-64"), seed=seed)
        assert err.value.field == "seed"


def test_gavel_job_types_take_ascii_batch_sizes():
    from hsched_env.workloads import gavel_job_type_to_model
    assert gavel_job_type_to_model("ResNet-50 (batch size 64)")[1] == 64
    with pytest.raises(ConfigError):
        gavel_job_type_to_model("ResNet-50 (batch size ٦٤)")
