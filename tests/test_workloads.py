"""Tests for hsched_env.workloads: the Gavel generator, the trace loaders and their validation."""

from __future__ import annotations

import csv
import functools
import math
import subprocess
import sys
from collections import Counter
from datetime import datetime, timedelta
from pathlib import Path

import numpy as np
import pytest

from hsched_env.cluster import get_cluster
from hsched_env.errors import ConfigError, TraceError
from hsched_env.throughput import get_throughput_source
from hsched_env.workloads import (GAVEL_TEMPLATES, LLM_MIX, POLLUX_GPU_HOURS, Job, Workload,
                                  gavel_job_type_to_model, load_workload, model_for_gpu_time,
                                  reference_gpu, reference_throughput, traces_dir,
                                  workload_kinds)

slow = pytest.mark.slow

TRACES = Path(__file__).resolve().parents[2] / "shared" / "traces"
needs_traces = pytest.mark.skipif(not TRACES.is_dir(), reason="shared traces not present")

GAVEL108 = get_cluster("gavel-108")
TINY = get_cluster("tiny-8")
LLMS = {m for m, _ in LLM_MIX}


@pytest.fixture(scope="module")
def big_classic() -> Workload:
    return load_workload("gavel:rate=4,jobs=4000,seed=7", GAVEL108)


@pytest.fixture(scope="module")
def big_llm() -> Workload:
    # modern-512: every LLM of the mix has candidates there (none is redrawn for fitting nowhere)
    return load_workload("gavel:jobs=2000,seed=3,mix=llm", get_cluster("modern-512"))


def _check_error(exc: BaseException, path: Path, line: int, field: str | None) -> None:
    msg = str(exc)
    assert path.name in msg, msg
    assert f":{line}" in msg or f"line {line}" in msg, msg
    if field is not None:
        assert field in msg, msg


def _write(tmp_path: Path, name: str, text: str) -> Path:
    p = tmp_path / name
    p.write_text(text, encoding="utf-8")
    return p


# ------------------------------------------------------------------------------ API basics
def test_kinds_and_reference_gpus():
    assert workload_kinds() == ["gavel", "philly", "gavel-trace", "pollux", "csv"]
    assert reference_gpu("resnet50") == "V100-16GB"
    assert reference_gpu("bert-large") == "A100-80GB"
    assert reference_gpu("llama2-7b") == "A100-80GB"


def test_reference_throughput_gavel_table_and_errors():
    from hsched_env.catalog import model_variant
    table = get_throughput_source("gavel")
    spec = model_variant("resnet50", 64)
    expect = table.steps_per_s("ResNet-50 (batch size 64)", "V100-16GB", 1) * 64
    assert reference_throughput(spec, 1, "gavel") == pytest.approx(expect)
    # analytic: more GPUs, more throughput
    assert reference_throughput(spec, 8) > reference_throughput(spec, 1) > 0
    with pytest.raises(ConfigError, match="llama2-70b"):
        reference_throughput("llama2-70b", 8)     # 70B does not fit on 8 A100s with DP
    with pytest.raises(ConfigError, match="between 1 and 512"):
        reference_throughput("resnet50", 1024)


def test_gavel_job_types_and_buckets():
    assert gavel_job_type_to_model("ResNet-50 (batch size 64)") == ("resnet50", 64)
    assert gavel_job_type_to_model("LM (batch size 20)") == ("lm", 20)
    assert gavel_job_type_to_model("A3C") == ("a3c", None)
    assert gavel_job_type_to_model("CycleGAN") == ("cyclegan", None)
    with pytest.raises(ConfigError, match="ResNet-18 \\(batch size N\\)"):
        gavel_job_type_to_model("VGG-16 (batch size 8)")
    assert model_for_gpu_time(0.5, "k") in ("resnet18", "recommendation")
    assert model_for_gpu_time(5, "k") in ("bert-large", "lm")
    assert model_for_gpu_time(50, "k") == model_for_gpu_time(500, "k") == "resnet50"
    # deterministic and actually uses both choices
    picks = {model_for_gpu_time(0.1, f"2017-10-01 00:00:00|{i}") for i in range(40)}
    assert picks == {"resnet18", "recommendation"}


# ------------------------------------------------------------------------------ generator
def test_generator_deterministic_in_process_and_subprocess():
    spec = "gavel:rate=3,jobs=60,seed=11,mix=llm"
    a = load_workload(spec, GAVEL108)
    b = load_workload(spec, GAVEL108)
    assert a == b
    assert load_workload("gavel:rate=3,jobs=60,seed=12,mix=llm", GAVEL108).jobs != a.jobs
    code = ("from hsched_env.workloads import load_workload; "
            "from hsched_env.cluster import get_cluster; "
            f"print(repr(load_workload({spec!r}, get_cluster('gavel-108')).jobs))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True, env={"PYTHONHASHSEED": "123", "PATH": ""}).stdout
    assert out.strip() == repr(a.jobs)


def test_generator_statistics(big_classic):
    jobs = big_classic.jobs
    assert len(jobs) == 4000 and big_classic.skipped == 0
    gpus = Counter(j.requested_gpus for j in jobs)
    for n, p in {1: 0.70, 2: 0.10, 4: 0.15, 8: 0.05}.items():
        assert abs(gpus[n] / 4000 - p) < 0.025, (n, gpus)
    assert set(gpus) == {1, 2, 4, 8}
    arrivals = np.array([j.arrival_s for j in jobs])
    assert arrivals[0] == 0.0 and np.all(np.diff(arrivals) >= 0)
    assert np.mean(np.diff(arrivals)) == pytest.approx(3600 / 4, rel=0.05)
    dur = np.array([j.duration_s for j in jobs])
    assert dur.min() >= 60 * 10 ** 1.5 and dur.max() <= 60 * 10 ** 4
    assert np.mean(dur > 60 * 10 ** 3) == pytest.approx(0.2, abs=0.025)
    assert [j.job_id for j in jobs] == list(range(4000))
    assert [j.name for j in jobs[:2]] == ["job-0", "job-1"]


def test_generator_job_types(big_classic):
    types = Counter((j.model, j.batch) for j in big_classic.jobs)
    assert set(types) == set(GAVEL_TEMPLATES)         # all 26 templates, nothing else
    for j in big_classic.jobs:
        if j.model in ("recommendation", "a3c", "cyclegan"):   # not distributed in Gavel
            assert j.requested_gpus == 1
        assert j.gpu_type is None
    # uniform over templates among single-GPU jobs (no redraw there): each ≈ 1/26
    single = Counter((j.model, j.batch) for j in big_classic.jobs if j.requested_gpus == 1)
    total = sum(single.values())
    assert max(single.values()) / total < 2.0 / 26 and min(single.values()) / total > 0.5 / 26


def test_generator_recommendation_is_single_gpu_as_in_gavel():
    """Gavel's job table makes its Recommendation templates without ``distributed=True``, so
    its generator redraws them above one GPU (and its measured table has them at one GPU
    only); ``multi_gpu_recommendation=1`` keeps the draws before that fix."""
    fixed = load_workload("gavel:jobs=2000,seed=0", "gavel-108").jobs
    multi = [j for j in fixed if j.requested_gpus > 1]
    assert multi and {j.model for j in multi} == {"resnet18", "resnet50", "transformer", "lm"}
    before = load_workload("gavel:jobs=2000,seed=0,multi_gpu_recommendation=1",
                           "gavel-108").jobs
    assert sum(j.model == "recommendation" and j.requested_gpus > 1 for j in before) > 50
    with pytest.raises(ConfigError, match="multi_gpu_recommendation must be 0 or 1"):
        load_workload("gavel:jobs=5,multi_gpu_recommendation=2", "gavel-108")
    # with multi_gpu=0 it changed nothing, and was dropped from the note without a word
    with pytest.raises(ConfigError, match="multi_gpu=0 makes none: give one of them"):
        load_workload("gavel:jobs=5,multi_gpu=0,multi_gpu_recommendation=1", "gavel-108")


def test_generator_work_is_duration_times_reference(big_classic, big_llm):
    for w in (big_classic, big_llm):
        for j in w.jobs[:200]:
            thr = reference_throughput(j.spec, j.requested_gpus)
            assert j.work_samples == pytest.approx(j.duration_s * thr, rel=1e-12)


def test_generator_redraws_models_that_fit_nowhere_on_the_cluster():
    w = load_workload("gavel:jobs=300,seed=3,mix=llm", GAVEL108)
    assert "llama2-70b" not in {j.model for j in w.jobs}     # 1.1 TB of states: no V100 set
    assert any("fits on none of its resource sets" in n for n in w.notes)


def test_generator_llm_mix(big_llm):
    models = Counter(j.model for j in big_llm.jobs)
    llm_share = sum(models[m] for m in LLMS) / len(big_llm.jobs)
    assert llm_share == pytest.approx(0.5, abs=0.05)
    assert LLMS <= set(models)
    assert models["llama2-70b"] < models["bert-large"]
    for j in big_llm.jobs:
        if j.model in ("llama2-70b", "llama2-13b"):   # too big for 1-2 A100s with DP
            assert j.requested_gpus >= {"llama2-70b": 32, "llama2-13b": 4}[j.model]
            if j.requested_gpus > 8:   # raised: one power of two less does not work
                with pytest.raises(ConfigError):
                    reference_throughput(j.spec, j.requested_gpus // 2)
    assert any("raised requested GPUs" in n for n in big_llm.notes)


def test_generator_fits_small_cluster_and_duration_scale():
    w = load_workload("gavel:jobs=300,seed=1,mix=llm", TINY)
    assert max(j.requested_gpus for j in w.jobs) <= 8
    assert "llama2-70b" not in {j.model for j in w.jobs}
    assert any("redrew" in n for n in w.notes)
    a = load_workload("gavel:jobs=20,seed=5", GAVEL108)
    b = load_workload("gavel:jobs=20,seed=5,duration_scale=0.1", GAVEL108)
    for ja, jb in zip(a.jobs, b.jobs):
        assert (ja.model, ja.arrival_s) == (jb.model, jb.arrival_s)
        assert jb.duration_s == pytest.approx(0.1 * ja.duration_s)


# ------------------------------------------------------------------------------ spec errors
@pytest.mark.parametrize("spec,words", [
    ("poisson:rate=4", ["unknown workload kind 'poisson'", "gavel, philly"]),
    ("gavel:rte=4", ["unknown key 'rte'", "rate, jobs, seed"]),
    ("gavel:rate=fast", ["rate", "must be a number"]),
    ("gavel:rate=-1", ["rate", "> 0"]),
    ("gavel:rate=nan", ["rate"]),
    ("gavel:jobs=2.5", ["jobs", "integer"]),
    ("gavel:jobs=0", ["jobs"]),
    ("gavel:mix=huge", ["mix", "classic, llm"]),
    ("gavel:rate=4,rate=5", ["given twice"]),
    ("gavel:rate", ["needs a value"]),
    ("philly:hours=8", ["start", "missing"]),
    ("philly:start=10/09/2017,hours=8", ["start", "YYYY-MM-DD"]),
    ("philly:start=2017-10-09,hours=0", ["hours"]),
    ("csv:max_jobs=3", ["path", "missing"]),
    ("", ["non-empty"]),
    ("gavel:rate=4,,jobs=3", ["empty item"]),
    ("gavel:,rate=4", ["empty item"]),
])
def test_spec_errors(spec, words):
    with pytest.raises(ConfigError) as ei:
        load_workload(spec, GAVEL108)
    for w in words:
        assert w in str(ei.value), str(ei.value)


def test_a_trailing_comma_is_allowed_and_items_are_appended_cleanly():
    from hsched_env.workloads import with_spec_item
    a = load_workload("gavel:rate=4,jobs=3,seed=1,", GAVEL108)
    b = load_workload("gavel:rate=4,jobs=3,seed=1", GAVEL108)
    assert [j.arrival_s for j in a.jobs] == [j.arrival_s for j in b.jobs]
    assert with_spec_item("gavel", "seed=1") == "gavel:seed=1"
    assert with_spec_item("gavel:", "seed=1") == "gavel:seed=1"
    assert with_spec_item("gavel:rate=4,", "seed=1") == "gavel:rate=4,seed=1"
    assert with_spec_item("gavel:rate=4", "seed=1") == "gavel:rate=4,seed=1"


def test_a_seed_key_in_any_case_is_the_specs_own():
    """The parser reads keys and kinds in any case; so do the environments and suites that
    decide whether to add the episode's seed."""
    from agents.suites import custom_suite, is_fixed_generated
    from lp_baseline.environments import rank_env

    def arrivals(spec, seed):
        env = rank_env("tiny-8", spec, measure_time=False)
        env.reset(seed=seed)
        return [j.arrival_s for j in env.unwrapped.simulator.jobs]
    assert arrivals("gavel:rate=4,jobs=5,SEED=3", 7) == arrivals("gavel:rate=4,jobs=5,seed=3", 8)
    assert arrivals("GAVEL:rate=4,jobs=5", 7) == arrivals("gavel:rate=4,jobs=5,seed=7", 0)
    assert custom_suite("tiny-8", "GAVEL:rate=4,jobs=5").scenarios[0].workload_for(3) \
        .endswith(",seed=3")


# ------------------------------------------------------------------------------ philly
@functools.lru_cache(maxsize=1)
def _philly_rows() -> list[tuple[int, str, str]]:
    with open(TRACES / "philly" / "philly.csv", newline="") as f:
        return [(i, row["timestamp"], row["cluster"])
                for i, row in enumerate(csv.DictReader(f), start=2)]


def _philly_rows_in(start: datetime, hours: float, vc: str | None = None) -> list[int]:
    """Line numbers of Philly rows in the window, computed independently of the loader."""
    lo = start.strftime("%Y-%m-%d %H:%M:%S")
    hi = (start + timedelta(hours=hours)).strftime("%Y-%m-%d %H:%M:%S")
    return [i for i, ts, c in _philly_rows() if lo <= ts < hi and (vc is None or c == vc)]


@needs_traces
def test_philly_window():
    start = datetime(2017, 10, 9, 6)
    w = load_workload("philly:start=2017-10-09T06:00,hours=8", GAVEL108)
    lines = _philly_rows_in(start, 8)
    assert len(w.jobs) == len(lines) > 100
    assert sorted(int(j.name.split("-")[1]) for j in w.jobs) == lines
    arr = [j.arrival_s for j in w.jobs]
    assert arr == sorted(arr) and 0 <= arr[0] and arr[-1] < 8 * 3600
    # spot check line 67: "2017-10-09 06:00:17,2883.0,1,2883.0,..." (read back from the file)
    raw = (TRACES / "philly" / "philly.csv").read_text().splitlines()[66].split(",")
    j = next(j for j in w.jobs if j.name == "philly-67")
    ts = datetime.strptime(raw[0], "%Y-%m-%d %H:%M:%S")
    assert j.arrival_s == (ts - start).total_seconds()
    assert j.duration_s == float(raw[1]) and j.requested_gpus == int(raw[2])
    for j in w.jobs:   # GPU-time buckets
        gpu_h = j.duration_s * j.requested_gpus / 3600
        expect = ({"resnet18", "recommendation"} if gpu_h < 1 else
                  {"bert-large", "lm"} if gpu_h < 10 else {"resnet50"})
        assert j.model in expect
        assert j.work_samples == pytest.approx(
            j.duration_s * reference_throughput(j.spec, j.requested_gpus))
    assert len({j.model for j in w.jobs}) >= 4


def test_an_unknown_philly_vc_lists_the_vcs_in_one_short_line(tmp_path):
    """A trace with thousands of VCs listed them all (27,000 characters) and an empty VC as
    nothing (session 51's input audit)."""
    rows = [f"2017-10-09 07:{i // 60:02d}:{i % 60:02d},60.0,1,60.0,vc{i:05d}" for i in range(3000)]
    rows.append("2017-10-09 08:00:00,60.0,1,60.0,")
    path = tmp_path / "many_vcs.csv"
    path.write_text("timestamp,duration,num_gpus,gpu_time,cluster\n" + "\n".join(rows) + "\n")
    with pytest.raises(ConfigError, match="no VC 'nope'") as err:
        load_workload(f"philly:start=2017-10-09T06:00,hours=3,path={path},vc=nope", GAVEL108)
    text = str(err.value)
    assert len(text) < 600 and "VCs: ''" in text and "vc00000" in text and "…" in text


@needs_traces
@slow
def test_philly_vc_and_max_jobs():
    w = load_workload("philly:start=2017-10-09,hours=24,vc=6214e9,max_jobs=30", GAVEL108)
    lines = _philly_rows_in(datetime(2017, 10, 9), 24, vc="6214e9")
    assert len(w.jobs) == 30 < len(lines)
    assert {int(j.name.split("-")[1]) for j in w.jobs} <= set(lines)
    with pytest.raises(ConfigError, match="no VC 'abcdef'"):
        load_workload("philly:start=2017-10-09,hours=24,vc=abcdef", GAVEL108)
    with pytest.raises(ConfigError, match="no jobs"):
        load_workload("philly:start=2016-01-01,hours=8", GAVEL108)


PHILLY_HEADER = "timestamp,duration,num_gpus,gpu_time,cluster\n"


@pytest.mark.parametrize("row,field", [
    ("2017-10-09 06:00:00,100.0,1,100,vc1,extra", None),       # column count
    ("2017-13-40 06:00:00,100.0,1,100,vc1", "timestamp"),
    ("yesterday,100.0,1,100,vc1", "timestamp"),
    ("2017-10-09 06:00:00,,1,100,vc1", "duration"),
    ("2017-10-09 06:00:00,abc,1,100,vc1", "duration"),
    ("2017-10-09 06:00:00,nan,1,100,vc1", "duration"),
    ("2017-10-09 06:00:00,-5,1,100,vc1", "duration"),
    ("2017-10-09 06:00:00,0,1,100,vc1", "duration"),
    ("2017-10-09 06:00:00,100,0,100,vc1", "num_gpus"),
    ("2017-10-09 06:00:00,100,1.5,100,vc1", "num_gpus"),
    ("2017-10-09 06:00:00,100,16,100,vc1", "num_gpus"),         # tiny-8 has 8 GPUs
])
def test_philly_invalid_rows(tmp_path, row, field):
    good = "2017-10-09 06:10:00,100.0,1,100.0,vc1\n"
    p = _write(tmp_path, "mini_philly.csv", PHILLY_HEADER + good + row + "\n" + good)
    spec = f"philly:start=2017-10-09T06:00,hours=1,path={p}"
    with pytest.raises(TraceError) as ei:
        load_workload(spec, TINY)
    _check_error(ei.value, p, 3, field)
    w = load_workload(spec, TINY, skip_invalid=True)
    assert w.skipped == 1 and len(w.jobs) == 2
    assert any("skipped 1" in n for n in w.notes)


def test_philly_file_errors(tmp_path, monkeypatch):
    p = _write(tmp_path, "bad_header.csv", "timestamp,duration,gpus\n2017-10-09 06:00:00,1,1\n")
    with pytest.raises(TraceError) as ei:
        load_workload(f"philly:start=2017-10-09,path={p}", TINY, skip_invalid=True)
    _check_error(ei.value, p, 1, "num_gpus")
    with pytest.raises(ConfigError, match="no such file"):
        load_workload(f"philly:start=2017-10-09,path={tmp_path / 'nope.csv'}", TINY)
    empty = _write(tmp_path, "empty.csv", "")
    with pytest.raises(ConfigError, match="empty"):
        load_workload(f"philly:start=2017-10-09,path={empty}", TINY)
    # HSCHED_TRACES: the default file comes from there
    (tmp_path / "philly").mkdir()
    _write(tmp_path / "philly", "philly.csv", PHILLY_HEADER +
           "2017-10-09 07:00:00,60.0,1,60.0,vc9\n"      # window end: excluded
           "2017-10-09 06:59:59,60.0,1,60.0,vc9\n"
           "2017-10-09 05:59:59,60.0,1,60.0,vc9\n"      # before the start: excluded
           "2017-10-09 06:00:00,60.0,2,120.0,vc9\n")    # window start: included
    monkeypatch.setenv("HSCHED_TRACES", str(tmp_path))
    assert traces_dir() == tmp_path
    w = load_workload("philly:start=2017-10-09T06:00,hours=1", TINY)
    assert [(j.name, j.arrival_s, j.requested_gpus) for j in w.jobs] == [
        ("philly-5", 0.0, 2), ("philly-3", 3599.0, 1)]
    monkeypatch.setenv("HSCHED_TRACES", str(tmp_path / "missing"))
    with pytest.raises(ConfigError, match="HSCHED_TRACES"):
        load_workload("philly:start=2017-10-09T06:00,hours=1", TINY)


def test_non_utf8_file(tmp_path):
    p = tmp_path / "latin1.csv"
    p.write_bytes(b"job_id,submit_time_s,duration_s,num_gpus\na,0,10,1\nb\xe9,0,10,1\n")
    with pytest.raises(TraceError) as ei:
        load_workload(f"csv:path={p}", TINY)
    _check_error(ei.value, p, 3, None)
    assert "UTF-8" in str(ei.value)


@pytest.mark.skipif(not Path("/dev/zero").exists(), reason="needs /dev/zero")
def test_a_device_is_refused_and_a_pipe_is_read(tmp_path):
    """/dev/zero was read to the end of memory (a MemoryError traceback); a device is now
    refused before any read. A pipe (a shell's ``<(cat trace.csv)``) is read as a file."""
    import os
    for dev in ("/dev/zero", "/dev/null"):
        with pytest.raises(ConfigError, match="a device, not a file"):
            load_workload(f"csv:path={dev}", TINY)
    fifo = tmp_path / "trace.fifo"
    os.mkfifo(fifo)
    writer = subprocess.Popen([sys.executable, "-c", "import sys; open(sys.argv[1], 'w')"
                               ".write('job_id,submit_time_s,duration_s,num_gpus\\na,0,10,1\\n')",
                               str(fifo)])
    try:
        w = load_workload(f"csv:path={fifo}", TINY)
    finally:
        writer.wait(timeout=30)
    assert [j.name for j in w.jobs] == ["a"]


# ------------------------------------------------------------------------------ gavel traces
@needs_traces
def test_gavel_trace_first_rows():
    path = TRACES / "gavel" / "msr_seed0" / "0e4a51.trace"
    w = load_workload(f"gavel-trace:path={path}", GAVEL108, throughputs="gavel")
    assert len(w.jobs) == 1181
    j0, j1 = w.jobs[0], w.jobs[1]
    # line 1: Transformer (batch size 128) ... 95121 steps, arrival 0, scale factor 1
    assert (j0.name, j0.model, j0.batch, j0.arrival_s, j0.requested_gpus) == (
        "job-0", "transformer", 128, 0.0, 1)
    assert j0.work_samples == 95121 * 128
    steps = get_throughput_source("gavel").steps_per_s("Transformer (batch size 128)",
                                                       "V100-16GB", 1)
    assert j0.duration_s == pytest.approx(95121 / steps)      # Gavel's table gives it back
    # line 2: Recommendation (batch size 8192), 10000 steps, arrival 6
    assert (j1.model, j1.batch, j1.arrival_s, j1.work_samples) == (
        "recommendation", 8192, 6.0, 10000 * 8192)
    # same file via vc=, analytic reference: same work, other durations
    w2 = load_workload("gavel-trace:vc=0e4a51", GAVEL108)
    assert [j.work_samples for j in w2.jobs] == [j.work_samples for j in w.jobs]
    # big scale factors need the cluster to have them
    w3 = load_workload("gavel-trace:vc=23dbec", GAVEL108)
    assert max(j.requested_gpus for j in w3.jobs) == 8
    assert {j.model for j in w3.jobs} >= {"cyclegan"}


@needs_traces
def test_gavel_trace_job_bigger_than_cluster():
    path = TRACES / "gavel" / "msr_seed0" / "2869ce.trace"
    with pytest.raises(TraceError) as ei:
        load_workload(f"gavel-trace:path={path}", TINY)
    first_big = next(i for i, line in enumerate(path.read_text().splitlines(), 1)
                     if int(line.split("\t")[6]) > 8)
    _check_error(ei.value, path, first_big, "scale_factor")
    assert "cluster 'tiny-8' has 8" in str(ei.value)
    big = sum(int(line.split("\t")[6]) > 8 for line in path.read_text().splitlines())
    w = load_workload(f"gavel-trace:path={path}", TINY, skip_invalid=True)
    assert w.skipped == big == 72 and len(w.jobs) == 533 - 72
    assert len(load_workload("gavel-trace:vc=2869ce", get_cluster("sia-64")).jobs) == 533


GAVEL_LINE = ("ResNet-50 (batch size 64)\tcd %s && python3 main.py\t--num_minibatches\t1\t"
              "1000\t{arrival}\t{sf}")


@pytest.mark.parametrize("line,field", [
    ("VGG-16 (batch size 64)\tcmd\t-n\t1\t100\t0\t1", "job_type"),
    ("LM (batch size 20)\tcmd\t-n\t1\t100\t0", None),                 # 6 columns
    ("LM (batch size 20)\tcmd\t-n\t1\tmany\t0\t1", "total_steps"),
    ("LM (batch size 20)\tcmd\t-n\t1\t0\t0\t1", "total_steps"),
    ("LM (batch size 20)\tcmd\t-n\t1\t100\t-3\t1", "arrival_time"),
    ("LM (batch size 20)\tcmd\t-n\t1\t100\tinf\t1", "arrival_time"),
    ("LM (batch size 20)\tcmd\t-n\t1\t100\t0\t0", "scale_factor"),
    ("LM (batch size 20)\tcmd\t-n\t1\t100\t0\t16", "scale_factor"),  # > tiny-8
    ("LM (batch size 20)\tcmd\t-n\t2\t100\t0\t1", "needs_data_dir"),
    ("LM (batch size 20)\t\t-n\t1\t100\t0\t1", "command"),
])
def test_gavel_trace_invalid_rows(tmp_path, line, field):
    good = GAVEL_LINE.format(arrival=0, sf=1)
    p = _write(tmp_path, "mini.trace", "\n".join([good, line, GAVEL_LINE.format(
        arrival=5.5, sf=4)]) + "\n")
    with pytest.raises(TraceError) as ei:
        load_workload(f"gavel-trace:path={p}", TINY)
    _check_error(ei.value, p, 2, field)
    w = load_workload(f"gavel-trace:path={p}", TINY, skip_invalid=True)
    assert w.skipped == 1
    assert [(j.name, j.arrival_s, j.requested_gpus) for j in w.jobs] == [
        ("job-0", 0.0, 1), ("job-2", 5.5, 4)]


# ------------------------------------------------------------------------------ pollux
@needs_traces
def test_philly_window_note_prints_the_window_applied():
    """Seconds in a bound are printed (the note gave 06:13 for a start of 06:13:30)."""
    w = load_workload("philly:start=2017-10-09T06:13:30,hours=0.01", GAVEL108)
    assert any("[2017-10-09 06:13:30, 2017-10-09 06:14:06)" in n for n in w.notes)
    w = load_workload("philly:start=2017-10-09T06:00,hours=8", GAVEL108)
    assert any("[2017-10-09 06:00, 2017-10-09 14:00)" in n for n in w.notes)


@needs_traces
def test_skipped_rows_note_says_it_counts_before_max_jobs():
    """The rows are checked before max_jobs keeps the first jobs; the note says so (the 5
    skipped 16-GPU jobs of this window arrive hours after the 40 kept)."""
    spec = "philly:start=2017-10-09T06:00,hours=8"
    cut = load_workload(spec + ",max_jobs=40", "tiny-8", skip_invalid=True)
    whole = load_workload(spec, "tiny-8", skip_invalid=True)
    assert cut.skipped == whole.skipped == 5 and len(cut.jobs) == 40
    assert any("skipped 5 invalid rows (counted before max_jobs kept the first 40" in n
               for n in cut.notes)
    assert "skipped 5 invalid rows" in whole.notes


def test_pollux_workload_number_is_checked():
    with pytest.raises(ConfigError, match="field 'workload': Pollux has workloads 1, 2, 3, 4, "
                                          "got 5"):
        load_workload("pollux:workload=5", GAVEL108)


@needs_traces
def test_pollux_workload():
    w = load_workload("pollux:workload=1", GAVEL108)
    assert len(w.jobs) == 160
    j = w.jobs[0]
    assert (j.name, j.model, j.arrival_s, j.requested_gpus) == ("cifar10-0", "resnet18",
                                                                107.0, 6)
    assert j.duration_s == pytest.approx(math.sqrt(1 / 60) * 3600 / 6)
    models = {j.name.rsplit("-", 1)[0]: j.model for j in w.jobs}
    assert models["deepspeech2"] == "lm" and models["ncf"] == "recommendation"
    gpu_h = {j.name.rsplit("-", 1)[0]: j.duration_s * j.requested_gpus / 3600 for j in w.jobs}
    for app, h in gpu_h.items():
        assert h == pytest.approx(POLLUX_GPU_HOURS[app])
    assert any("no durations" in n for n in w.notes)
    path = TRACES / "pollux" / "workloads" / "workload-1.csv"
    assert load_workload(f"pollux:path={path}", GAVEL108).jobs == w.jobs


@pytest.mark.parametrize("row,field", [
    ("j2,100,resnet,1,64", "application"),
    ("j2,100,bert,zero,64", "num_replicas"),
    ("j2,100,bert,0,64", "num_replicas"),
    ("j2,-1,bert,1,64", "time"),
    ("j2,100,bert,1,", "batch_size"),
    ("j1,100,bert,1,64", "name"),                                  # duplicate name
    ("j2,100,bert,1", None),
])
def test_pollux_invalid_rows(tmp_path, row, field):
    p = _write(tmp_path, "wl.csv", "name,time,application,num_replicas,batch_size\n"
               f"j1,0,cifar10,2,128\n{row}\nj3,50,imagenet,8,256\n")
    with pytest.raises(TraceError) as ei:
        load_workload(f"pollux:path={p}", TINY)
    _check_error(ei.value, p, 3, field)
    w = load_workload(f"pollux:path={p}", TINY, skip_invalid=True)
    assert w.skipped == 1 and [j.name for j in w.jobs] == ["j1", "j3"]


# ------------------------------------------------------------------------------ generic csv
CSV_HEADER = "job_id,submit_time_s,duration_s,num_gpus,model,gpu_type,batch\n"


def test_csv_loader(tmp_path):
    p = _write(tmp_path, "jobs.csv", CSV_HEADER +
               "a,10,3600,2,ResNet-50,v100,32\n"
               "b,0,600,1,,,\n"
               "# a comment line\n"
               "c,10,100,8,llama2_70b,,\n"
               "d,5,7200,1,LM (batch size 40),p100,\n")
    w = load_workload(f"csv:path={p}", GAVEL108)
    assert [j.name for j in w.jobs] == ["b", "d", "a", "c"]      # ties: file order
    a = w.jobs[2]
    assert (a.model, a.batch, a.gpu_type, a.requested_gpus) == ("resnet50", 32, "V100-16GB", 2)
    assert a.work_samples == pytest.approx(3600 * reference_throughput(a.spec, 2))
    assert w.jobs[0].model in ("resnet18", "recommendation")      # 1/6 GPU-h bucket
    d = w.jobs[1]
    assert (d.model, d.batch, d.gpu_type) == ("lm", 40, "P100")
    c = w.jobs[3]
    assert c.model == "llama2-70b" and c.requested_gpus in (16, 32, 64)   # raised from 8
    assert c.work_samples == pytest.approx(100 * reference_throughput(c.spec, c.requested_gpus))
    assert any("raised requested GPUs of 1 jobs" in n for n in w.notes)
    # only required columns, max_jobs
    p2 = _write(tmp_path, "min.csv", "job_id,submit_time_s,duration_s,num_gpus\n"
                "x,0,60,1\ny,1,60,1\nz,2,60,1\n")
    w2 = load_workload(f"csv:path={p2},max_jobs=2", TINY)
    assert [j.name for j in w2.jobs] == ["x", "y"]


def test_max_jobs_loads_the_first_jobs_whatever_the_rows_past_them_hold(tmp_path):
    """``max_jobs=N`` keeps the first N jobs by arrival: an invalid row past them (by its
    arrival, not its place in the file) does not stop the load — a note counts it — while an
    invalid row among them is the error it always was."""
    header = "job_id,submit_time_s,duration_s,num_gpus\n"
    later = _write(tmp_path, "later.csv", header + "big,50,100,64\na,0,100,1\nb,10,100,2\n")
    w = load_workload(f"csv:path={later},max_jobs=2", TINY)
    assert [j.name for j in w.jobs] == ["a", "b"]
    assert any("1 invalid row past the first 2 jobs (max_jobs) not loaded; the first:" in n
               and "later.csv:2, field 'num_gpus'" in n for n in w.notes)
    for n in (3, None):                       # the invalid row is among the jobs kept
        spec = f"csv:path={later}" + (f",max_jobs={n}" if n else "")
        with pytest.raises(TraceError, match="job needs 64 GPUs") as ei:
            load_workload(spec, TINY)
        assert ei.value.line == 2
    # a tie at the cut: the file's order decides, as it does for the jobs
    tie = _write(tmp_path, "tie.csv", header + "a,0,100,1\nbig,0,100,64\n")
    assert [j.name for j in load_workload(f"csv:path={tie},max_jobs=1", TINY).jobs] == ["a"]
    with pytest.raises(TraceError, match="job needs 64 GPUs"):
        load_workload(f"csv:path={tie},max_jobs=2", TINY)
    # an error before the row's arrival is read cannot be placed: it stops the load
    early = _write(tmp_path, "early.csv", header + "a,0,100,1\na,50,100,1\n")
    with pytest.raises(TraceError, match="duplicate job id"):
        load_workload(f"csv:path={early},max_jobs=1", TINY)
    # ... but the error raised is the file's first among the rows that stop the load, as
    # without max_jobs: here the kept row's, not the later unplaceable one's
    both = _write(tmp_path, "both.csv", header + "a,0,100,64\nb,10,100,1\nb,20,100,1\n")
    for spec in (f"csv:path={both}", f"csv:path={both},max_jobs=1"):
        with pytest.raises(TraceError, match="job needs 64 GPUs") as ei:
            load_workload(spec, TINY)
        assert ei.value.line == 2


@needs_traces
@pytest.mark.parametrize("spec, n", [
    ("philly:start=2017-12-12,hours=24,max_jobs=3", 3),
    ("gavel-trace:vc=11cb48,max_jobs=5", 5),
])
def test_max_jobs_on_the_traces_skips_what_lies_past_the_jobs_kept(spec, n):
    """The traces' rows too: jobs too large for the cluster that arrive after the first N do
    not stop ``max_jobs=N`` (they did before session 54)."""
    cluster = GAVEL108 if spec.startswith("philly") else TINY
    w = load_workload(spec, cluster)
    assert len(w.jobs) == n
    assert any("invalid rows past the first" in note and "(max_jobs) not loaded" in note
               for note in w.notes)
    whole = spec.rsplit(",max_jobs=", 1)[0]
    with pytest.raises(TraceError, match="job needs"):
        load_workload(whole, cluster)
    kept = load_workload(whole, cluster, skip_invalid=True).jobs[:n]
    assert [(j.name, j.arrival_s) for j in w.jobs] == [(j.name, j.arrival_s) for j in kept]


def test_csv_comments_are_lines_not_quoted_fields(tmp_path):
    """A line starting with ``#`` is a comment (after blanks, whatever it holds, an unbalanced
    quote too); a quoted ``"#2"`` is a job id, not a comment dropped without a word."""
    p = _write(tmp_path, "hash.csv", "job_id,submit_time_s,duration_s,num_gpus\n"
               "#1,0,60,1\n"
               '"#2",1,60,1\n'
               '  # a "note\n'
               "3,2,60,1\n")
    w = load_workload(f"csv:path={p}", TINY)
    assert [j.name for j in w.jobs] == ["#2", "3"]
    # the comment with the header's four columns is named (it went missing without a word);
    # the one-column comment is not
    assert [n for n in w.notes if "'#'" in n] == [
        "1 line starting with '#' (line 2) has the header's 4 columns but was read as a "
        "comment, not a job: quote a job id that starts with '#' (\"#1\")"]
    # the usual comments are not named: one before the header, a commented-out header, and
    # "# " followed by a row (the usual way to disable one)
    quiet = _write(tmp_path, "quiet.csv", "#a,b,c,d\njob_id,submit_time_s,duration_s,num_gpus\n"
                   "#job_id,submit_time_s,duration_s,num_gpus\n# 2,0,60,1\n3,2,60,1\n")
    assert not [n for n in load_workload(f"csv:path={quiet}", TINY).notes if "'#'" in n]
    bad = _write(tmp_path, "bad.csv", "job_id,submit_time_s,duration_s,num_gpus\n"
                 "# skipped\n1,0,60,1\n2,0,\"60,1\n")
    with pytest.raises(TraceError) as ei:
        load_workload(f"csv:path={bad}", TINY)
    assert ei.value.line == 4                   # the file's line, comments counted


def test_csv_header_with_unnamed_columns_says_so(tmp_path):
    p = _write(tmp_path, "trail.csv", "job_id,submit_time_s,duration_s,num_gpus,,\n"
               "a,0,60,1,,\n")
    with pytest.raises(ConfigError, match=r"column 5 of the header has no name"):
        load_workload(f"csv:path={p}", TINY)


@pytest.mark.parametrize("row,field", [
    ("b,5,100,1,nosuchmodel,,", "model"),
    ("b,5,100,1,resnet50,Z100,", "gpu_type"),
    ("b,5,100,8,resnet50,T4,", "num_gpus"),          # tiny-8 has 4 T4s
    ("b,5,100,2,resnet50,A100,", "gpu_type"),        # tiny-8 has no A100s: the type is named
    ("b,5,100,16,resnet50,,", "num_gpus"),           # more than the cluster
    ("b,5,100,8,llama2-70b,,", "num_gpus"),          # raised to > 8
    ("a,5,100,1,resnet50,,", "job_id"),              # duplicate
    ("b,-5,100,1,resnet50,,", "submit_time_s"),
    ("b,5,0,1,resnet50,,", "duration_s"),
    ("b,5,inf,1,resnet50,,", "duration_s"),
    ("b,5,100,-1,resnet50,,", "num_gpus"),
    ("b,5,100,1,resnet50,,0", "batch"),
    ("b,5,100,1,,,32", "batch"),
    ("b,5,100,1,LM (batch size 40),,80", "batch"),   # contradicts the job type's batch
    (",5,100,1,resnet50,,", "job_id"),
    ("b,5,100,1,resnet50", None),
])
def test_csv_invalid_rows(tmp_path, row, field):
    p = _write(tmp_path, "bad.csv", CSV_HEADER + "a,0,100,1,resnet18,,\n" + row +
               "\nc,9,100,2,bert-large,V100,\n")
    with pytest.raises(TraceError) as ei:
        load_workload(f"csv:path={p}", TINY)
    _check_error(ei.value, p, 3, field)
    w = load_workload(f"csv:path={p}", TINY, skip_invalid=True)
    assert w.skipped == 1 and [j.name for j in w.jobs] == ["a", "c"]


def test_csv_header_errors(tmp_path):
    p = _write(tmp_path, "h1.csv", "job_id,submit_time_s,duration_s\na,0,1\n")
    with pytest.raises(TraceError) as ei:
        load_workload(f"csv:path={p}", TINY, skip_invalid=True)   # not a row error
    _check_error(ei.value, p, 1, "num_gpus")
    p = _write(tmp_path, "h2.csv", "job_id,submit_time_s,duration_s,num_gpus,modle\na,0,1,1,x\n")
    with pytest.raises(TraceError) as ei:
        load_workload(f"csv:path={p}", TINY, skip_invalid=True)
    _check_error(ei.value, p, 1, "modle")
    p = _write(tmp_path, "h3.csv", "job_id,submit_time_s,duration_s,num_gpus\n")
    with pytest.raises(ConfigError, match="no jobs"):
        load_workload(f"csv:path={p}", TINY)
    p = _write(tmp_path, "h4.csv", "job_id,submit_time_s,duration_s,num_gpus\na,0,1,99\n")
    with pytest.raises(ConfigError, match="no jobs.*1 invalid rows skipped"):
        load_workload(f"csv:path={p}", TINY, skip_invalid=True)


def test_job_is_frozen_and_spec():
    j = Job(job_id=0, name="x", model="resnet50", batch=16, arrival_s=0.0, requested_gpus=1,
            duration_s=1.0, work_samples=2.0)
    assert j.spec.global_batch == 16 and j.spec.gavel_job_type == "ResNet-50 (batch size 16)"
    with pytest.raises(AttributeError):
        j.model = "lm"  # type: ignore[misc]


@pytest.mark.parametrize("field,value,match", [
    ("work_samples", -5.0, "work_samples.*> 0"),          # it "finished" before it arrived
    ("work_samples", math.inf, "work_samples"),
    ("duration_s", -1.0, "duration_s"),                   # 1,000 LP fallbacks, then NaN
    ("duration_s", 1e-9, "duration_s"),
    ("arrival_s", math.nan, "arrival_s"),                 # a raw ValueError before
    ("arrival_s", -3.0, "arrival_s"),
    ("requested_gpus", 0, "requested_gpus.*>= 1"),
    ("requested_gpus", 1.5, "requested_gpus"),
    ("requested_gpus", True, "requested_gpus"),
    ("batch", 0, "batch"),
    ("job_id", -1, "job_id"),
    ("name", 7, "name"),
    ("model", "nope", "field 'model': unknown model 'nope'"),
    ("gpu_type", "zz", "field 'gpu_type': unknown GPU type"),
    ("gpu_type", "v100", "canonical name 'V100-16GB'"),
])
def test_a_job_built_by_hand_is_checked_field_by_field(field, value, match):
    """``Job`` is public, and ``Simulator`` takes a sequence of them: a job outside the limits
    the loaders apply is refused as it is made, naming the job and the field."""
    good = dict(job_id=3, name="a", model="resnet50", batch=None, arrival_s=0.0,
                requested_gpus=2, duration_s=3600.0, work_samples=5.0, gpu_type="V100-16GB")
    Job(**good)
    with pytest.raises(ConfigError, match=match) as exc:
        Job(**{**good, field: value})
    assert exc.value.field == field
    job_id, name = (-1 if field == "job_id" else 3), (7 if field == "name" else "a")
    assert exc.value.source == f"job {job_id} ({name!r})"


def test_a_job_keeps_numpy_numbers_as_python_ones():
    """NumPy numbers pass, kept as the Python numbers the loaders make (a NumPy batch was
    refused later by model_variant, naming no job); an int past float's range is refused
    (an OverflowError before)."""
    good = dict(job_id=3, name="a", model="resnet50", batch=None, arrival_s=0.0,
                requested_gpus=2, duration_s=3600.0, work_samples=5.0)
    job = Job(**{**good, "batch": np.int64(32), "arrival_s": np.float32(5.0),
                 "requested_gpus": np.int64(2), "work_samples": np.float64(5.0)})
    assert (type(job.batch), type(job.arrival_s), type(job.requested_gpus),
            type(job.work_samples)) == (int, float, int, float)
    assert job.spec.global_batch == 32
    with pytest.raises(ConfigError, match="work_samples"):
        Job(**{**good, "work_samples": 10 ** 400})


def test_generator_single_gpu_jobs():
    w = load_workload("gavel:jobs=200,seed=1,multi_gpu=0", GAVEL108)
    assert {j.requested_gpus for j in w.jobs} == {1}
    assert any("single-GPU" in n for n in w.notes)
    with pytest.raises(ConfigError, match="multi_gpu"):
        load_workload("gavel:jobs=2,multi_gpu=2", GAVEL108)


# ------------------------------------------------------------------ found by a fresh-user audit
def test_unbalanced_quote_is_an_error_not_rows_lost(tmp_path):
    """csv reads a quoted field on to the next quote: a stray one swallowed every later row
    (4 of 5 jobs lost, counted as 1 skipped row under skip_invalid)."""
    text = ("job_id,submit_time_s,duration_s,num_gpus,model\na,0,10,1,resnet50\n"
            '"b,1,10,1,resnet50\nc,2,10,1,resnet50\nd,3,10,1,resnet50\n')
    path = _write(tmp_path, "quote.csv", text)
    for skip in (False, True):
        with pytest.raises(TraceError, match="unbalanced double quote") as exc:
            load_workload(f"csv:path={path}", TINY, skip_invalid=skip)
        _check_error(exc.value, path, 3, None)
        assert "line 5" in str(exc.value)
    # quoted fields on one line still load
    path = _write(tmp_path, "ok.csv", 'job_id,submit_time_s,duration_s,num_gpus,model\n'
                                      '"a,1",0,10,1,"resnet50"\n')
    assert [j.name for j in load_workload(f"csv:path={path}", TINY).jobs] == ["a,1"]


def test_unknown_columns_error_is_short_and_says_what_is_missing(tmp_path):
    names = [f"col{i}" for i in range(27)]
    path = _write(tmp_path, "wide.csv", ",".join(names) + "\n" + ",".join("1" * 27) + "\n")
    with pytest.raises(TraceError) as exc:
        load_workload(f"csv:path={path}", TINY)
    msg = str(exc.value)
    assert "'col4'" in msg and "'col5'" not in msg and "and 22 more" in msg
    assert "missing job_id, submit_time_s, duration_s, num_gpus" in msg
    assert len(msg) < 400


def test_spec_hints_for_a_bare_file_and_a_bare_pollux():
    with pytest.raises(ConfigError, match=r"csv:path=jobs\.csv"):
        load_workload("jobs.csv", TINY)
    with pytest.raises(ConfigError, match="workload=N"):
        load_workload("pollux", TINY)


def test_skipped_rows_are_listed_at_info(tmp_path, caplog):
    rows = "".join(f"j{i},{i},10,{'x' if i % 2 else 1},resnet50\n" for i in range(30))
    path = _write(tmp_path, "bad.csv", "job_id,submit_time_s,duration_s,num_gpus,model\n" + rows)
    with caplog.at_level("INFO", logger="hsched_env.workloads"):
        w = load_workload(f"csv:path={path}", TINY, skip_invalid=True)
    assert len(w.jobs) == 15 and w.skipped == 15
    listed = [r for r in caplog.records if r.getMessage().startswith("skipping invalid row")]
    assert len(listed) == 15 and all("num_gpus" in r.getMessage() for r in listed)


def test_unbalanced_quote_on_the_last_line_is_caught(tmp_path):
    path = _write(tmp_path, "last.csv", 'job_id,submit_time_s,duration_s,num_gpus,model\n'
                                        'a,0,10,1,resnet50\n"b,1,10,1,resnet50\n')
    with pytest.raises(TraceError, match="on line 3 is not closed"):
        load_workload(f"csv:path={path}", TINY)


def test_gavel_trace_hints_name_its_own_keys():
    with pytest.raises(ConfigError, match="vc=NAME") as exc:
        load_workload("gavel-trace", GAVEL108)
    assert "Pollux" not in str(exc.value)
    if (traces_dir() / "gavel" / "msr_seed0").is_dir():
        with pytest.raises(ConfigError, match="valid: 0e4a51"):
            load_workload("gavel-trace:vc=zzz", GAVEL108)
    # a name, not a path: vc=../x was joined into one and read any .trace file it reached
    for vc in ("../../philly/philly", "..", "sub\\x"):
        with pytest.raises(ConfigError, match="field 'vc': a virtual cluster's name, not a "
                                              "path"):
            load_workload(f"gavel-trace:vc={vc}", GAVEL108)


def test_load_workload_seed_draws_an_unseeded_spec_and_errors_quote_it_as_given():
    cluster = get_cluster("sia-64")
    drawn = load_workload("gavel:jobs=5,rate=4", cluster, seed=7)
    assert drawn.jobs == load_workload("gavel:jobs=5,rate=4,seed=7", cluster).jobs
    own = load_workload("gavel:jobs=5,rate=4,seed=3", cluster, seed=7)      # its own wins
    assert own.jobs == load_workload("gavel:jobs=5,rate=4,seed=3", cluster).jobs
    assert own.jobs != drawn.jobs
    with pytest.raises(ConfigError) as err:
        load_workload("gavel:jobs=-4", cluster, seed=7)
    assert "workload spec 'gavel:jobs=-4' (seed 7)" in str(err.value)
    assert "seed=7" not in str(err.value) and err.value.field == "jobs"
