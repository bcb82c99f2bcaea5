"""Ranker files checked when they are read (``agents.ranker_file``): a file with a field
missing or invalid, a file torch cannot read and a torch file that is no ranker file each
give one ``ConfigError`` naming the file and the field, and ``hsched evaluate`` prints it in
one line and exits 2."""

from __future__ import annotations

import math

import pytest
import torch as th

from agents.policy_entries import parse_policies
from agents.ranker import Ranker, RankerNet, load_ranker_net, save_ranker
from agents.train import TrainConfig, _ranker_meta
from hsched_cli.main import main
from hsched_env.errors import ConfigError

th.set_num_threads(1)

TINY = ["--cluster", "tiny-8", "--workload", "gavel:rate=8,jobs=16,duration_scale=0.05"]


def _training_meta(record: dict) -> dict:
    """The meta ``hsched train --algo imitation`` writes from imitation's ``record``: every
    checked key but ``timesteps`` (PPO's) set as training sets it."""
    config = TrainConfig(algo="imitation", regimes="mixed", target_recall=0.95,
                         threshold_bands=(1000,), operating_recall=0.99, gate_candidates=500,
                         max_kept_fraction=0.35, dagger=1, fair_share_inputs=True,
                         prune="lp")
    return {"stage": "imitation", **_ranker_meta(config, record, arithmetic="a027ceb7fa6eafff")}


@pytest.fixture
def good(tmp_path, imitation_record):
    """A blob as ``save_ranker`` writes it with training's meta."""
    path = save_ranker(RankerNet(hidden=8, job_context=True), tmp_path / "good.pt",
                       **_training_meta(imitation_record))
    return th.load(path, weights_only=True)


def test_a_file_as_training_writes_it_loads(tmp_path, good):
    assert {"threshold", "size_thresholds", "operating_points", "gate_candidates",
            "max_kept_fraction", "dagger", "inputs", "prune", "valid_recall",
            "valid_kept_fraction", "target_recall", "regimes", "stage",
            "arithmetic_fingerprint"} <= set(good["meta"])
    th.save(good, tmp_path / "r.pt")
    net, meta = load_ranker_net(tmp_path / "r.pt")
    assert net.hidden == 8 and net.job_context and meta == good["meta"]
    r = Ranker.load(tmp_path / "r.pt")
    assert r.threshold == 0.01 and r.gate_candidates == 500 and r.max_kept_fraction == 0.35
    ppo = save_ranker(RankerNet(hidden=8), tmp_path / "ppo.pt", stage="ppo", timesteps=2048,
                      cluster="sia-64", workload="gavel:rate=4,jobs=30", note="free text")
    assert load_ranker_net(ppo)[1]["timesteps"] == 2048


def _drop(key):
    return lambda blob: blob.pop(key)


def _set(key, value):
    return lambda blob: blob.update({key: value})


def _meta(key, value):
    return lambda blob: blob["meta"].update({key: value})


def _weight(key, value):
    return lambda blob: blob["state_dict"].update({key: value})


def _point(i, key, value):
    return lambda blob: blob["meta"]["operating_points"][i].update({key: value})


def _rename_in_point(i, key, new):
    """A point's ``key`` misspelt as ``new`` (it used to drop the point's bands silently)."""
    def change(blob):
        point = blob["meta"]["operating_points"][i]
        point[new] = point.pop(key)
    return change


# (case, change to a good file, the field named, words of the message)
BROKEN = [
    ("no state_dict", _drop("state_dict"), "state_dict", "missing"),
    ("no hidden", _drop("hidden"), "hidden", "missing"),
    ("no commit", _drop("commit"), "commit", "missing"),
    ("hidden a string", _set("hidden", "abc"), "hidden", "positive whole number (the network's width), got 'abc'"),
    ("hidden negative", _set("hidden", -3), "hidden", "width), got -3"),
    ("hidden zero", _set("hidden", 0), "hidden", "got 0"),
    ("hidden a float", _set("hidden", 8.0), "hidden", "got 8.0"),
    ("hidden a bool", _set("hidden", True), "hidden", "got True"),
    ("hidden too wide", _set("hidden", 2 ** 62), "hidden", "too wide"),
    ("hidden not the weights'", _set("hidden", 16), "state_dict",
     "'phi.0.weight' has shape (8, "),
    ("commit without its head", _set("commit", True), "state_dict",
     "lacks 'commit_head.0.weight'"),
    ("job_context not the weights'", _set("job_context", False), "state_dict",
     "'psi.0.weight' has shape (8, 24)"),
    ("commit a string", _set("commit", "no"), "commit", "True or False, got 'no'"),
    ("job_context a number", _set("job_context", 1), "job_context", "True or False, got 1"),
    ("state_dict a list", _set("state_dict", [1, 2]), "state_dict", "dict of the network"),
    ("state_dict empty", _set("state_dict", {}), "state_dict", "non-empty"),
    ("a weight not a tensor", _weight("phi.0.bias", [0.0] * 8), "state_dict.phi.0.bias",
     "must be a tensor, got list"),
    ("a weight of integers", _weight("phi.0.bias", th.zeros(8, dtype=th.int64)),
     "state_dict.phi.0.bias", "floating-point"),
    ("a weight with NaN", _weight("phi.0.bias", th.full((8,), math.nan)),
     "state_dict.phi.0.bias", "NaN"),
    ("an extra weight", _weight("extra.weight", th.zeros(2)), "state_dict",
     "unexpected 'extra.weight'"),
    ("an unknown key", _set("weights", {}), "weights", "unknown key"),
    ("meta a list", _set("meta", [1, 2]), "meta", "dict"),
    ("threshold above 1", _meta("threshold", 2.0), "meta.threshold", "(0, 1)"),
    ("threshold 0", _meta("threshold", 0.0), "meta.threshold", "got 0.0"),
    ("threshold a string", _meta("threshold", "0.1"), "meta.threshold", "got '0.1'"),
    ("threshold NaN", _meta("threshold", math.nan), "meta.threshold", "got nan"),
    ("target_recall 0", _meta("target_recall", 0), "meta.target_recall", "(0, 1]"),
    ("valid_recall above 1", _meta("valid_recall", 1.2), "meta.valid_recall", "[0, 1]"),
    ("valid_kept_fraction < 0", _meta("valid_kept_fraction", -0.1),
     "meta.valid_kept_fraction", "[0, 1]"),
    ("size_thresholds not pairs", _meta("size_thresholds", [0, 0.1]),
     "meta.size_thresholds[0]", "pair"),
    ("a band's threshold", _meta("size_thresholds", [[0, 0.1], [1000, 1.5]]),
     "meta.size_thresholds[1][1]", "got 1.5"),
    ("a band's size", _meta("size_thresholds", [[-1, 0.1]]), "meta.size_thresholds[0][0]",
     "whole number >= 0"),
    ("a band twice", _meta("size_thresholds", [[0, 0.1], [0, 0.2]]),
     "meta.size_thresholds[1]", "second band"),
    ("operating_points a dict", _meta("operating_points", {}), "meta.operating_points",
     "list of operating points"),
    ("a point's threshold", _point(1, "threshold", -1), "meta.operating_points[1].threshold",
     "got -1"),
    ("a point's target_recall", _point(0, "target_recall", "0.9"),
     "meta.operating_points[0].target_recall", "got '0.9'"),
    ("a point without its recall", lambda b: b["meta"]["operating_points"][0].pop(
        "target_recall"), "meta.operating_points[0].target_recall", "missing"),
    ("a point's bands", _point(0, "size_thresholds", [[0, 0]]),
     "meta.operating_points[0].size_thresholds[0][1]", "got 0"),
    ("a point twice", _point(1, "target_recall", 0.95),
     "meta.operating_points[1].target_recall", "second point"),
    ("a point's misspelt bands", _rename_in_point(1, "size_thresholds", "size_treshold"),
     "meta.operating_points[1].size_treshold", "did you mean 'size_thresholds'"),
    ("a point's unknown key", _point(0, "kept_fraction", 0.2),
     "meta.operating_points[0].kept_fraction",
     "not a key ranker files use in an operating point (it holds target_recall, threshold, "
     "size_thresholds)"),
    ("gate a string", _meta("gate_candidates", "x"), "meta.gate_candidates",
     "whole number >= 0, got 'x'"),
    ("gate negative", _meta("gate_candidates", -5), "meta.gate_candidates", "got -5"),
    ("gate a float", _meta("gate_candidates", 100.5), "meta.gate_candidates", "got 100.5"),
    ("max_kept_fraction 0", _meta("max_kept_fraction", 0), "meta.max_kept_fraction",
     "(0, 1]"),
    ("max_kept_fraction NaN", _meta("max_kept_fraction", math.nan),
     "meta.max_kept_fraction", "got nan"),
    ("dagger negative", _meta("dagger", -1), "meta.dagger", "whole number"),
    ("timesteps a string", _meta("timesteps", "many"), "meta.timesteps", "whole number"),
    ("inputs unknown", _meta("inputs", "all"), "meta.inputs", "'within-fair-share'"),
    ("prune unknown", _meta("prune", "some"), "meta.prune", "'all', 'lp', 'seed'"),
    ("stage a number", _meta("stage", 3), "meta.stage", "a string"),
    ("regimes a list", _meta("regimes", ["mixed"]), "meta.regimes", "a string"),
    ("a misspelt key", _meta("treshold", 0.5), "meta.treshold", "did you mean 'threshold'"),
    ("a misspelt gate", _meta("max_kept_fractions", 0.5), "meta.max_kept_fractions",
     "did you mean 'max_kept_fraction'"),
    ("a fingerprint a number", _meta("arithmetic_fingerprint", 7),
     "meta.arithmetic_fingerprint", "a string"),
]


@pytest.mark.parametrize("case,change,field,words", BROKEN, ids=[c[0] for c in BROKEN])
def test_a_broken_field_is_named_with_the_file(tmp_path, good, case, change, field, words):
    change(good)
    path = tmp_path / "broken.pt"
    th.save(good, path)
    for load in (load_ranker_net, Ranker.load):
        with pytest.raises(ConfigError) as err:
            load(path)
        text = str(err.value)
        assert err.value.field == field, text
        assert f"ranker file {path}, field '{field}': " in text and words in text, text
        assert "\n" not in text


def test_weights_of_another_feature_set_still_say_retrain(tmp_path, good):
    good["state_dict"]["phi.0.weight"] = good["state_dict"]["phi.0.weight"][:, :-1].clone()
    th.save(good, tmp_path / "old.pt")
    with pytest.raises(ConfigError) as err:
        load_ranker_net(tmp_path / "old.pt")
    assert err.value.field == "ranker"
    assert str(err.value).endswith(f"{tmp_path / 'old.pt'} was trained on other observation "
                                   f"features than this version's ({RankerNet.n_in} inputs "
                                   f"per candidate, the file's {RankerNet.n_in - 1}): "
                                   f"retrain it")


def _not_torch(tmp_path):
    garbage = tmp_path / "garbage.pt"
    garbage.write_bytes(bytes(range(256)) * 8)
    script = tmp_path / "script.pt"                    # a Python file renamed
    script.write_text("import os\nprint(os.getcwd())\n")
    empty = tmp_path / "empty.pt"
    empty.write_bytes(b"")
    text = tmp_path / "text.pt"                        # torch's KeyError(174812789) before
    text.write_text("junk\n")
    neither = "it is neither of the formats torch writes (a zip archive or a pickle)"
    return {garbage: "torch cannot read it as a file of tensors and plain values",
            script: "torch cannot read it as a file of tensors and plain values",
            empty: "it is empty or cut short", text: neither}


def test_save_ranker_refuses_what_would_not_load(tmp_path):
    with pytest.raises(ConfigError, match="field 'meta.treshold'.*did you mean 'threshold'"):
        save_ranker(RankerNet(hidden=8), tmp_path / "x.pt", treshold=0.1)
    assert not (tmp_path / "x.pt").exists()
    # a name of its own beside a checked one is a free record
    path = save_ranker(RankerNet(hidden=8), tmp_path / "y.pt", kept_fraction=0.2)
    assert load_ranker_net(path)[1]["kept_fraction"] == 0.2


def test_a_ranker_built_in_python_checks_its_meta_as_a_file_would():
    with pytest.raises(ConfigError, match=r"Ranker 'mine', field 'meta.threshold': must be a "
                                          r"number in \(0, 1\)"):
        Ranker(RankerNet(hidden=8), name="mine", meta={"threshold": 1.5})
    with pytest.raises(ConfigError, match="did you mean 'gate_candidates'"):
        Ranker(RankerNet(hidden=8), meta={"gate_candidate": 100})
    assert Ranker(RankerNet(hidden=8), meta={"threshold": 0.2, "note": "mine"}).threshold == 0.2


def test_a_file_torch_cannot_read_is_one_line_without_torchs_advice(tmp_path):
    for path, words in _not_torch(tmp_path).items():
        with pytest.raises(ConfigError) as err:
            load_ranker_net(path)
        text = str(err.value)
        assert f"{path} is not a HeteroSched ranker file: {words}" in text, text
        assert err.value.field == "ranker"
        assert "weights_only" not in text and "\n" not in text


def test_a_torch_file_that_is_no_ranker_file(tmp_path):
    th.save({"a": th.zeros(3)}, tmp_path / "tensors.pt")
    th.save({"format": "other/1"}, tmp_path / "other.pt")
    th.save([th.zeros(3)], tmp_path / "list.pt")
    th.save(RankerNet(hidden=4), tmp_path / "module.pt")      # a whole pickled module
    cases = {"tensors.pt": " (it has no 'format', expected 'heterosched-ranker/1')",
             "other.pt": " (its format is 'other/1', expected 'heterosched-ranker/1')",
             "list.pt": ": it holds a list, not a dict",
             "module.pt": ": it holds a Python object (agents.ranker.RankerNet), not only "
                          "tensors and plain values"}
    for name, words in cases.items():
        with pytest.raises(ConfigError) as err:
            load_ranker_net(tmp_path / name)
        text = str(err.value)
        assert f"{tmp_path / name} is not a HeteroSched ranker file{words}" in text, text
        assert err.value.field == "ranker" and "weights_only" not in text


def test_evaluate_prints_one_line_and_exits_2(tmp_path, good, capsys):
    good["hidden"] = "abc"
    th.save(good, tmp_path / "bad.pt")
    garbage = next(iter(_not_torch(tmp_path)))
    expected = {
        f"ranker:{tmp_path / 'bad.pt'}": f"ranker file {tmp_path / 'bad.pt'}, field 'hidden': "
                                         f"must be a positive whole number",
        f"ranker:{tmp_path / 'bad.pt'}@0.99": f"ranker file {tmp_path / 'bad.pt'}, field "
                                              f"'hidden': must be a positive whole number",
        f"ranker:{garbage}": f"{garbage} is not a HeteroSched ranker file",
    }
    for spec, words in expected.items():
        assert main(["evaluate", *TINY, "--policies", f"pure-lp,{spec}",
                     "--out", str(tmp_path / "out")]) == 2
        err = capsys.readouterr().err
        assert err.startswith("hsched evaluate: error: ") and words in err, err
        assert err.count("\n") == 1 and "Traceback" not in err
        assert not (tmp_path / "out").exists()
    # an operating point the file lacks still names the file, by --policies
    path = save_ranker(RankerNet(hidden=8), tmp_path / "r.pt", threshold=0.2)
    with pytest.raises(ConfigError, match="no operating point") as err:
        parse_policies([f"ranker:{path}@0.9"])
    assert err.value.field == "--policies" and err.value.source == f"ranker file {path}"
