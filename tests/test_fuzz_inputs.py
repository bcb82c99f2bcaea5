"""Fuzzing every input loader: clusters, catalogs, traces, workload specs and CLI arguments.

Property (every fuzzer): the loader either accepts the input and returns a valid object, or
raises an :class:`~hsched_env.errors.HSchedError` whose message names the file (and the line
and field when the error has them) -- never a bare KeyError, IndexError, ValueError,
TypeError, UnicodeDecodeError, YAML error, RecursionError or OverflowError. Any other exception
fails the test with its traceback (hypothesis shrinks it to a minimal input).

Inputs are generated as valid documents and then mutated (dropped and added keys/columns, wrong
types, NaN/inf, negative and zero values, unknown names, huge counts, shuffled and duplicated
ids, odd encodings, random bytes), plus raw random text and bytes.

Every distinct input is counted per fuzzer (``FUZZ_STATS``); after each fuzzer's test a fixture
checks that it tried enough distinct inputs and that some were rejected. With
``HSCHED_FUZZ_REPORT`` set, the module writes the counts as JSON when it is done (to that path if
it ends in ``.json``, else ``runs/fuzz_inputs.json``). ``HSCHED_FUZZ_SCALE=10`` runs ten times
as many examples. The fuzzers are marked ``slow``.
"""

from __future__ import annotations

import contextlib
import csv
import hashlib
import io
import json
import math
import os
import re
import sys
from collections import defaultdict
from pathlib import Path
from unittest import mock

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from hsched_cli import main as cli
from hsched_cli import simulation as cli_simulation
from hsched_env.catalog import (
    GpuType,
    ModelSpec,
    gpu_catalog,
    load_gpu_catalog,
    load_model_catalog,
    model_catalog,
)
from hsched_env.cluster import MAX_NODES, Cluster, get_cluster, load_cluster
from hsched_env.errors import (
    ConfigError,
    HSchedError,
    TraceError,
    UnknownNameError,
    shorten,
)
from hsched_env.workloads import (
    GAVEL_TEMPLATES,
    MAX_SECONDS,
    POLLUX_APPLICATIONS,
    Workload,
    load_workload,
)

REPO = Path(__file__).resolve().parents[1]
SCALE = max(0.1, float(os.environ.get("HSCHED_FUZZ_SCALE", "1")))
CLUSTER = get_cluster("sia-64")   # T4 24, RTX2080Ti 24, A100-40GB 16: huge jobs do not fit


def fuzz(n: int, fuzzer: str):
    """Decorates one fuzzer's (hypothesis) test: ``n`` examples (× HSCHED_FUZZ_SCALE), no
    deadline, marked slow; ``_fuzzer_counts`` checks the inputs it counted under ``fuzzer``."""
    examples = max(1, int(n * SCALE))
    hypothesis_settings = settings(
        max_examples=examples, deadline=None, database=None,
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large,
                               HealthCheck.filter_too_much, HealthCheck.large_base_example])

    def decorate(test):
        test = hypothesis_settings(test)
        test.fuzzer = (fuzzer, examples)
        return pytest.mark.slow(test)

    return decorate


# ---------------------------------------------------------------------------------- counting
class _Stats:
    """Distinct inputs per fuzzer, and how each ended (accepted / rejected with HSchedError)."""

    def __init__(self) -> None:
        self.seen: dict[str, set[str]] = defaultdict(set)
        self.outcome: dict[str, dict[str, int]] = defaultdict(lambda: defaultdict(int))
        self.errors: dict[str, dict[str, int]] = defaultdict(lambda: defaultdict(int))

    def record(self, fuzzer: str, key: bytes, malformed: bool, result: object,
               rejected: bool | None = None, label: str | None = None) -> None:
        """Count one input (by content); ``rejected`` defaults to "result is an HSchedError";
        ``label`` names the kind of rejection (default: the error's type)."""
        digest = hashlib.sha1(key).hexdigest()
        if digest in self.seen[fuzzer]:
            return
        self.seen[fuzzer].add(digest)
        if rejected is None:
            rejected = isinstance(result, HSchedError)
        kind = "rejected" if rejected else "accepted"
        self.outcome[fuzzer][f"{'mutated' if malformed else 'unmutated'}_{kind}"] += 1
        if rejected:
            self.errors[fuzzer][label or type(result).__name__] += 1

    def summary(self) -> dict:
        per = {}
        for fuzzer, seen in sorted(self.seen.items()):
            per[fuzzer] = {"distinct_inputs": len(seen), **dict(self.outcome[fuzzer]),
                           "rejections": dict(self.errors[fuzzer])}

        def total(key: str) -> int:
            return sum(v.get(key, 0) for v in self.outcome.values())

        return {"distinct_inputs": sum(len(s) for s in self.seen.values()),
                "mutated_inputs": total("mutated_rejected") + total("mutated_accepted"),
                "rejected_with_hsched_error": total("mutated_rejected")
                + total("unmutated_rejected"),
                "accepted_and_validated": total("mutated_accepted") + total("unmutated_accepted"),
                "mutated_rejected": total("mutated_rejected"),
                "mutated_accepted": total("mutated_accepted"),
                "other_exceptions": 0, "per_fuzzer": per}


FUZZ_STATS = _Stats()


def _rejected(fuzzer: str) -> int:
    return sum(n for k, n in FUZZ_STATS.outcome[fuzzer].items() if k.endswith("_rejected"))


@pytest.fixture(autouse=True)
def _fuzzer_counts(request):
    """After a fuzzer's test, whatever ran before it: it tried distinct inputs (at least a third
    of its examples; 54-100% measured) and the loader rejected some, else it tests nothing."""
    fuzzer, examples = getattr(request.function, "fuzzer", (None, 0))
    if fuzzer is None:
        yield
        return
    seen, rejected = len(FUZZ_STATS.seen[fuzzer]), _rejected(fuzzer)
    yield
    distinct = len(FUZZ_STATS.seen[fuzzer]) - seen
    assert distinct >= examples // 3, f"{fuzzer}: {distinct} distinct inputs in {examples}"
    assert _rejected(fuzzer) > rejected, f"{fuzzer}: no input was rejected; it tests nothing"


@pytest.fixture(scope="module", autouse=True)
def _fuzz_report():
    """With ``HSCHED_FUZZ_REPORT`` set, write the counts of the fuzzers that ran."""
    yield
    target = os.environ.get("HSCHED_FUZZ_REPORT")
    if not target or not FUZZ_STATS.seen:
        return
    summary = FUZZ_STATS.summary()
    summary["scale"] = SCALE
    out = Path(target) if target.endswith(".json") else REPO / "runs" / "fuzz_inputs.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(summary, indent=1) + "\n", encoding="utf-8")
    print(f"\nfuzz: {summary['distinct_inputs']} distinct inputs ({summary['mutated_inputs']} "
          f"mutated): {summary['rejected_with_hsched_error']} rejected with an HSchedError "
          f"naming file/line/field, {summary['accepted_and_validated']} accepted and validated, "
          f"0 other exceptions; written to {out}")


def attempt(call):
    """``call()``'s result, or the HSchedError it raised (anything else propagates)."""
    try:
        return call()
    except HSchedError as exc:
        return exc


def assert_names_where(exc: HSchedError, source: str | None) -> None:
    """The message names the source (file), and the line and field the error carries."""
    msg = str(exc)
    assert "Traceback" not in msg and "\n" not in msg, msg
    assert msg.strip(), "empty error message"
    if source is not None:
        assert shorten(source, 400) in msg, f"file not named: {msg}"
    if isinstance(exc, ConfigError):
        if exc.field:
            assert f"field '{shorten(exc.field)}'" in msg, msg
        if exc.line is not None:
            assert exc.line >= 1
            assert f":{exc.line}" in msg, msg
    if isinstance(exc, TraceError) and source is not None:
        assert exc.line is not None and exc.line >= 1, f"trace error without a line: {msg}"


# ---------------------------------------------------------------------------------- files
@pytest.fixture(scope="module")
def workdir(tmp_path_factory) -> Path:
    return tmp_path_factory.mktemp("fuzz")


ENCODINGS = ("utf-8", "utf-8-sig", "utf-16", "utf-16-le", "utf-32", "latin-1", "cp1252")


@st.composite
def encoded(draw, text: str):
    """``text`` as bytes: UTF-8, or another encoding, or with bytes damaged. Returns
    ``(bytes, changed)`` where ``changed`` is True if the bytes are no longer the UTF-8 text."""
    how = draw(st.sampled_from(("utf-8",) * 4 + ENCODINGS + ("insert", "truncate", "random",
                                                              "empty", "nul")))
    if how in ENCODINGS:
        try:
            data = text.encode(how)
        except UnicodeEncodeError:
            data = text.encode("utf-8")
        return data, data != text.encode("utf-8")
    data = text.encode("utf-8")
    if how == "insert":
        pos = draw(st.integers(0, len(data)))
        junk = draw(st.binary(min_size=1, max_size=8))
        return data[:pos] + junk + data[pos:], True
    if how == "truncate":
        return data[:draw(st.integers(0, max(0, len(data) - 1)))], True
    if how == "random":
        return draw(st.binary(max_size=300)), True
    if how == "empty":
        return draw(st.sampled_from((b"", b"\n", b"  \n\n", b"\xef\xbb\xbf", b"\r\n"))), True
    if how == "nul":
        pos = draw(st.integers(0, len(data)))
        return data[:pos] + b"\x00" + data[pos:], True
    return data, False


# ---------------------------------------------------------------------------------- values
HUGE_DIGITS = "1" + "0" * 5000
BAD_NUMBERS = ("", " ", "nan", "NaN", "-nan", "inf", "-inf", "Infinity", "-1", "-0.5", "0",
               "0.0", "-0", "1e308", "1e-320", "1e400", "-1e308", "1.5", "2.5", "abc", "0x10",
               "1_000", "１２", "\x00", '"', "'", "1,5", "9" * 30, "100000", "65", "513",
               "1e10", "1e11", HUGE_DIGITS, "null", "None", "True", "❤", "4 4", "+4", " 4 ")
BAD_NAMES = ("", "gpt5", "LM (batch size 0)", "LM (batch size 99999999)", "LM (batch size -1)",
             "ResNet-50 (batch size 64", "resnet50 ", "RESNET-50", "H200", "k80", "V100",
             "A3C (batch size 4)", "\x00", "é", "a" * 300, "LM (batch size " + HUGE_DIGITS + ")")
ANY_CELL = st.one_of(st.sampled_from(BAD_NUMBERS), st.sampled_from(BAD_NUMBERS),
                     st.sampled_from(BAD_NAMES), st.text(max_size=12),
                     st.floats(allow_nan=True, allow_infinity=True).map(repr),
                     st.integers(-10 ** 20, 10 ** 20).map(str))

json_scalars = st.one_of(st.none(), st.booleans(), st.integers(-10 ** 30, 10 ** 30),
                         st.floats(allow_nan=True, allow_infinity=True),
                         st.text(max_size=10), st.sampled_from(BAD_NUMBERS + BAD_NAMES))
json_values = st.recursive(json_scalars,
                           lambda c: st.lists(c, max_size=3)
                           | st.dictionaries(st.text(max_size=8), c, max_size=3),
                           max_leaves=8)


# ---------------------------------------------------------------------------------- clusters
GPU_NAMES = sorted({n for g in gpu_catalog().values() for n in (g.name, *g.aliases)})
POOL_KEYS = ("gpu_type", "gpus_per_node", "count", "inter_node_bw_gbps", "intra_node_bw_gbps",
             "name")
HUGE_VALUES = st.sampled_from([10 ** 6, 10 ** 12, 10 ** 30, 10 ** 400, 1e308, 2 ** 63, 2 ** 64,
                               -(2 ** 63), 1e-320, 5e-324])
SPECIAL_VALUES = st.one_of(HUGE_VALUES, st.sampled_from(
    [float("nan"), float("inf"), -float("inf"), -1, 0, -0.0, 4.5, "4", True, None, [], {}, 17,
     "A200", "", " ", "12.5Gbps"]))

valid_pool = st.fixed_dictionaries(
    {"gpu_type": st.sampled_from(GPU_NAMES), "gpus_per_node": st.integers(1, 16),
     "count": st.integers(1, 64)},
    optional={"inter_node_bw_gbps": st.floats(0.5, 400), "intra_node_bw_gbps": st.floats(1, 900),
              "name": st.text(min_size=1, max_size=10)})


@st.composite
def mutated_mapping(draw, base, keys):
    """A dict from ``base`` with 0-3 mutations; returns ``(dict, mutated)``."""
    d = dict(draw(base))
    ops = draw(st.lists(st.sampled_from(("drop", "add", "set", "special", "special", "huge",
                                         "rename")), max_size=3))
    for op in ops:
        if op == "drop" and d:
            d.pop(draw(st.sampled_from(sorted(d, key=str))))
        elif op == "add":
            d[draw(st.one_of(st.sampled_from(("gpu", "counts", "gpus", "nodes", "Name")),
                             st.text(max_size=6)))] = draw(json_values)
        elif op == "set":
            d[draw(st.sampled_from(keys))] = draw(json_values)
        elif op == "special":
            d[draw(st.sampled_from(keys))] = draw(SPECIAL_VALUES)
        elif op == "huge":
            numeric = [k for k in keys if isinstance(d.get(k), (int, float))
                       and not isinstance(d.get(k), bool)]
            if numeric:
                d[draw(st.sampled_from(numeric))] = draw(HUGE_VALUES)
        elif op == "rename" and d:
            key = draw(st.sampled_from(sorted(d, key=str)))
            d[str(key).upper() + "_"] = d.pop(key)
    return d, bool(ops)


@st.composite
def cluster_documents(draw):
    """``(document, mutated)``: a cluster mapping (usually valid-ish) or any JSON value."""
    if draw(st.integers(0, 9)) == 0:
        return draw(json_values), True
    pools, mutated = [], False
    for _ in range(draw(st.integers(0, 4))):
        kind = draw(st.integers(0, 5))
        if kind == 0:
            pools.append(draw(json_values))
            mutated = True
        elif kind <= 2:
            pool, m = draw(mutated_mapping(valid_pool, POOL_KEYS))
            pools.append(pool)
            mutated |= m
        else:
            pools.append(draw(valid_pool))
    top = {"nodes": pools}
    if draw(st.booleans()):
        top["name"] = draw(st.text(min_size=1, max_size=12))
    if draw(st.booleans()):
        top["inter_node_bw_gbps"] = draw(st.floats(0.5, 400))
    m = False
    if draw(st.integers(0, 2)) == 0:
        top, m = draw(mutated_mapping(st.just(top), ("name", "description",
                                                     "inter_node_bw_gbps", "nodes")))
    return top, mutated or m or not pools


def check_cluster(c: Cluster) -> None:
    assert isinstance(c, Cluster)
    assert 1 <= c.num_nodes <= MAX_NODES and c.num_gpus >= 1
    assert int(c.capacity_vec.sum()) == c.num_gpus == int(c.node_gpus.sum())
    assert all(t in gpu_catalog() for t in c.gpu_types)
    assert all(math.isfinite(b) and b > 0 for p in c.pools
               for b in (p.inter_bw_gbps, p.intra_bw_gbps))
    assert all(1 <= p.gpus_per_node <= 16 for p in c.pools)


def try_cluster_file(fuzzer: str, path: Path, data: bytes, malformed: bool) -> None:
    path.write_bytes(data)
    result = attempt(lambda: load_cluster(path))
    FUZZ_STATS.record(fuzzer, path.suffix.encode() + data, malformed, result)
    if isinstance(result, HSchedError):
        assert isinstance(result, ConfigError)
        assert_names_where(result, str(path))
    else:
        check_cluster(result)


def _dump(doc, as_json: bool) -> str | None:
    if as_json:
        return json.dumps(doc, allow_nan=True)
    try:
        return yaml.safe_dump(doc, allow_unicode=True)
    except (yaml.YAMLError, ValueError, OverflowError):
        return None


@fuzz(400, "cluster-structure")
@given(cluster_documents(), st.booleans())
def test_fuzz_cluster_structures(workdir, doc_m, as_json):
    doc, malformed = doc_m
    text = _dump(doc, as_json)
    if text is None:
        return
    path = workdir / ("c.json" if as_json else "c.yaml")
    try_cluster_file("cluster-structure", path, text.encode("utf-8", "surrogatepass"), malformed)


YAML_TOKENS = ("nodes:", "\n", "  ", "- ", "gpu_type: T4", "gpus_per_node: 4", "count: 2",
               "count: 1e999", "count: .nan", "count: 0x10", "count: 100001", "name: ", "&a ",
               "*a", "<<: *a", "[", "]", "{", "}", ",", ": ", "? ", "!!python/object:os.system",
               "!!binary aGk=", "\t", "---", "...", "#", "'", '"', "|", ">", "~", "null",
               "2001-13-45", "inter_node_bw_gbps: -1", "intra_node_bw_gbps: .inf", "- {", "%YAML",
               "gpu_type: [1]", "count: " + HUGE_DIGITS, "\ufeff", "\x00", "é")
JSON_TOKENS = ('{', '}', '[', ']', ',', ':', '"nodes"', '"gpu_type"', '"T4"', '"count"', '4',
               '"gpus_per_node"', 'NaN', 'Infinity', '-1', '1e999', 'null', 'true', '"name"',
               HUGE_DIGITS, ' ', '\n', '"\\ud800"', '"\\u0000"', '"a"')


@fuzz(300, "cluster-text")
@given(st.booleans(), st.data())
def test_fuzz_cluster_text(workdir, as_json, data):
    tokens = JSON_TOKENS if as_json else YAML_TOKENS
    how = data.draw(st.integers(0, 3))
    if how == 0:
        text = data.draw(st.text(max_size=200))
    else:
        text = "".join(data.draw(st.lists(st.sampled_from(tokens), max_size=40)))
    path = workdir / ("t.json" if as_json else "t.yml")
    try_cluster_file("cluster-text", path, text.encode("utf-8", "surrogatepass"), True)


VALID_CLUSTER_YAML = """\
name: lab-é          # a non-ASCII name, so that other encodings differ from UTF-8
description: fuzz
nodes:
  - gpu_type: A100-80GB
    gpus_per_node: 8
    count: 2
    inter_node_bw_gbps: 200
  - {gpu_type: t4, gpus_per_node: 4, count: 3, name: t4-pool}
"""


@fuzz(200, "cluster-bytes")
@given(st.booleans(), st.data())
def test_fuzz_cluster_bytes(workdir, as_json, data):
    text = (json.dumps(yaml.safe_load(VALID_CLUSTER_YAML), ensure_ascii=False) if as_json
            else VALID_CLUSTER_YAML)
    raw, changed = data.draw(encoded(text))
    path = workdir / ("b.json" if as_json else "b.yaml")
    try_cluster_file("cluster-bytes", path, raw, changed)


@fuzz(150, "cluster-name")
@given(st.one_of(st.text(max_size=60), st.sampled_from(
    ["sia-64", "SIA-64 ", "~nouser_fuzz/x.yaml", "a" * 5000, "x\x00.yaml", "/", ".", "..",
     "nope.yaml", "", " ", "~", "C:\\x.yaml", "gavel-108\n"])))
def test_fuzz_get_cluster_names(name):
    result = attempt(lambda: get_cluster(name))
    FUZZ_STATS.record("cluster-name", name.encode("utf-8", "surrogatepass"), True, result)
    if isinstance(result, HSchedError):
        assert isinstance(result, ConfigError)
        assert_names_where(result, None)
    else:
        check_cluster(result)


# ---------------------------------------------------------------------------------- catalogs
def _catalog_rows(kind: str) -> list[dict]:
    text = (REPO / "hsched_env" / "data" / f"{kind}.json").read_text(encoding="utf-8")
    return json.loads(text)[kind]


GPU_ROWS = _catalog_rows("gpus")
MODEL_ROWS = _catalog_rows("models")


@fuzz(250, "catalog")
@given(st.sampled_from(("gpus", "models")), st.data())
def test_fuzz_catalog_files(workdir, kind, data):
    rows = [dict(r) for r in (GPU_ROWS if kind == "gpus" else MODEL_ROWS)]
    rows = rows[:data.draw(st.integers(0, 3))] if data.draw(st.booleans()) else rows
    keys = sorted(rows[0] if rows else GPU_ROWS[0])
    mutated = False
    for _ in range(data.draw(st.integers(0, 3))):
        mutated = True
        if not rows:
            break
        i = data.draw(st.integers(0, len(rows) - 1))
        rows[i], _ = data.draw(mutated_mapping(st.just(rows[i]), keys))
    if data.draw(st.integers(0, 9)):
        doc = {kind: rows}
    else:
        doc, mutated = data.draw(json_values), True
    raw, changed = data.draw(encoded(json.dumps(doc, allow_nan=True, ensure_ascii=False)))
    path = workdir / f"{kind}.json"
    path.write_bytes(raw)
    loader = load_gpu_catalog if kind == "gpus" else load_model_catalog
    result = attempt(lambda: loader(path))
    FUZZ_STATS.record("catalog", kind.encode() + raw, mutated or changed or not rows, result)
    if isinstance(result, HSchedError):
        assert isinstance(result, ConfigError)
        assert_names_where(result, str(path))
    else:
        row_type = GpuType if kind == "gpus" else ModelSpec
        assert result and all(isinstance(v, row_type) for v in result.values())


# ---------------------------------------------------------------------------------- traces
GAVEL_TYPES = sorted({f"{m.gavel_job_type}" for m in model_catalog().values()
                      if m.gavel_job_type})
MODELS = sorted(model_catalog())
CSV_HEADER = ["job_id", "submit_time_s", "duration_s", "num_gpus", "model", "gpu_type", "batch"]
POLLUX_HEADER = ["name", "time", "application", "num_replicas", "batch_size"]
PHILLY_HEADER = ["timestamp", "duration", "num_gpus", "gpu_time", "cluster"]
small_time = st.floats(0, 1e5, allow_nan=False).map(lambda x: f"{x:.3f}")
gpus_cell = st.sampled_from(["1", "1", "2", "4", "8", "2.0"])


@st.composite
def csv_row(draw, i):
    model = draw(st.sampled_from([""] + MODELS[:6] + GAVEL_TYPES[:6]))
    batch = draw(st.sampled_from(["", "", "16", "32"])) if model else ""
    return [f"job-{i}", draw(small_time), draw(st.floats(1, 1e5).map(lambda x: f"{x:.1f}")),
            draw(gpus_cell), model, draw(st.sampled_from(["", "", "t4", "A100-40GB", "2080ti"])),
            batch]


@st.composite
def pollux_row(draw, i):
    app = draw(st.sampled_from(sorted(POLLUX_APPLICATIONS)))
    return [f"{app}-{i}", draw(st.integers(0, 10 ** 5).map(str)), app, draw(gpus_cell),
            draw(st.sampled_from(["64", "128", "2048"]))]


@st.composite
def gavel_row(draw, i):
    job_type = draw(st.sampled_from([f"{m} (batch size {b})" if b else
                                     {"a3c": "A3C", "cyclegan": "CycleGAN"}[m]
                                     for m, b in GAVEL_TEMPLATES]).map(_gavel_type_name))
    return [job_type, "cd %s && python3 train.py", "-s", draw(st.sampled_from(["0", "1"])),
            draw(st.integers(1, 10 ** 6).map(str)), draw(small_time),
            draw(st.sampled_from(["1", "2", "4", "8"]))]


def _gavel_type_name(text: str) -> str:
    """``"resnet50 (batch size 16)"`` → Gavel's ``"ResNet-50 (batch size 16)"``."""
    names = {"resnet18": "ResNet-18", "resnet50": "ResNet-50", "transformer": "Transformer",
             "lm": "LM", "recommendation": "Recommendation"}
    head, _, tail = text.partition(" ")
    return f"{names.get(head, head)} {tail}".strip()


@st.composite
def philly_row(draw, i):
    minute = draw(st.integers(0, 59))
    second = draw(st.integers(0, 59))
    return [f"2017-10-09 0{draw(st.integers(6, 9))}:{minute:02d}:{second:02d}",
            draw(st.floats(1, 1e5).map(lambda x: f"{x:.1f}")), draw(gpus_cell), "0",
            draw(st.sampled_from(["6214e9", "11cb48"]))]


EXTREMES = ("1e308", "1e300", "1e11", "9" * 30, "1e-320", "5e-324", "inf", "nan", "-1", "0",
            "4096", "2000000")
ROW_OPS = ("set", "set", "extreme", "extreme", "extreme", "drop_cell", "add_cell", "dup_id", "swap", "dup_row", "del_row",
           "blank", "comment")
HEADER_OPS = ("drop", "add", "rename", "dup", "upper")


@st.composite
def trace_table(draw, header, row_strategy, max_rows=6):
    """``(header or None, rows, mutated)``: valid rows, then row and header mutations."""
    n = draw(st.integers(1, max_rows))
    rows = [draw(row_strategy(i)) for i in range(n)]
    mutated = False
    for _ in range(draw(st.integers(0, 4))):
        op = draw(st.sampled_from(ROW_OPS))
        mutated = True
        if not rows:
            break
        i = draw(st.integers(0, len(rows) - 1))
        j = draw(st.integers(0, len(rows) - 1))
        if op == "set" and rows[i]:
            rows[i][draw(st.integers(0, len(rows[i]) - 1))] = draw(ANY_CELL)
        elif op == "extreme" and rows[i]:
            rows[i][draw(st.integers(0, len(rows[i]) - 1))] = draw(st.sampled_from(EXTREMES))
        elif op == "drop_cell" and rows[i]:
            rows[i].pop(draw(st.integers(0, len(rows[i]) - 1)))
        elif op == "add_cell":
            rows[i].append(draw(ANY_CELL))
        elif op == "dup_id" and rows[i] and rows[j]:
            rows[j][0] = rows[i][0]
        elif op == "swap":
            rows[i], rows[j] = rows[j], rows[i]
        elif op == "dup_row":
            rows.insert(j, list(rows[i]))
        elif op == "del_row":
            rows.pop(i)
        elif op == "blank":
            rows.insert(i, [])
        elif op == "comment":
            rows.insert(i, ["# " + draw(st.text(max_size=10))])
    if header is not None:
        header = list(header)
        if draw(st.integers(0, 3)) == 0:
            mutated = True
            op = draw(st.sampled_from(HEADER_OPS))
            k = draw(st.integers(0, len(header) - 1))
            if op == "drop":
                header.pop(k)
            elif op == "add":
                header.append(draw(st.sampled_from(["extra", "job_id", "", "Model", "é"])))
            elif op == "rename":
                header[k] = draw(st.text(max_size=8))
            elif op == "dup":
                header.append(header[k])
            elif op == "upper":
                header[k] = header[k].upper()   # headers are case-insensitive: still valid
    return header, rows, mutated


@st.composite
def serialized(draw, header, rows, sep):
    """The table as text: csv.writer quoting, or a naive join (quotes and separators in
    values then break the structure), with \\n, \\r\\n or \\r line ends."""
    end = draw(st.sampled_from(["\n", "\n", "\r\n", "\r"]))
    lines = ([header] if header is not None else []) + rows
    if sep == "," and draw(st.booleans()):
        buf = io.StringIO()
        csv.writer(buf, lineterminator=end).writerows(lines)
        return buf.getvalue()
    return end.join(sep.join(r) for r in lines) + draw(st.sampled_from([end, ""]))


def check_workload(w: Workload, n_rows: int) -> None:
    assert isinstance(w, Workload) and 1 <= len(w.jobs) <= max(1, n_rows)
    assert [j.job_id for j in w.jobs] == list(range(len(w.jobs)))
    arrivals = [j.arrival_s for j in w.jobs]
    assert arrivals == sorted(arrivals)
    for j in w.jobs:
        assert 0 <= j.arrival_s <= MAX_SECONDS
        assert 0 < j.duration_s <= MAX_SECONDS and math.isfinite(j.duration_s)
        assert 0 < j.work_samples < math.inf
        assert 1 <= j.requested_gpus <= CLUSTER.num_gpus
        if j.gpu_type is not None:
            assert j.requested_gpus <= CLUSTER.capacity.get(j.gpu_type, 0)
        assert j.model in model_catalog()


def try_trace(fuzzer: str, path: Path, spec: str, raw: bytes, malformed: bool, n_rows: int,
              skip_invalid: bool) -> None:
    path.write_bytes(raw)
    result = attempt(lambda: load_workload(spec, CLUSTER, skip_invalid=skip_invalid))
    FUZZ_STATS.record(fuzzer, spec.encode() + bytes([skip_invalid]) + raw, malformed, result)
    if isinstance(result, HSchedError):
        assert isinstance(result, ConfigError)
        assert_names_where(result, str(path))
    else:
        check_workload(result, n_rows)


TRACE_FORMATS = {
    # fuzzer: (file name, spec prefix, header, row strategy, separator)
    "trace-csv": ("jobs.csv", "csv:path=", CSV_HEADER, csv_row, ","),
    "trace-pollux": ("workload.csv", "pollux:path=", POLLUX_HEADER, pollux_row, ","),
    "trace-gavel": ("jobs.trace", "gavel-trace:path=", None, gavel_row, "\t"),
    "trace-philly": ("philly.csv", "philly:start=2017-10-09T06:00,hours=4,path=", PHILLY_HEADER,
                     philly_row, ","),
}


def _trace_test(fuzzer: str, n: int):
    name, prefix, header, row, sep = TRACE_FORMATS[fuzzer]

    @fuzz(n, fuzzer)
    @given(trace_table(header, row), st.booleans(), st.data())
    def run(workdir, table, skip_invalid, data):
        hdr, rows, mutated = table
        text = data.draw(serialized(hdr, rows, sep))
        raw, changed = data.draw(encoded(text))
        path = workdir / name
        lines = len(re.split(rb"\r\n|\r|\n", raw))
        try_trace(fuzzer, path, prefix + str(path), raw, mutated or changed,
                  max(len(rows), lines), skip_invalid)

    return run


test_fuzz_trace_csv = _trace_test("trace-csv", 500)
test_fuzz_trace_pollux = _trace_test("trace-pollux", 300)
test_fuzz_trace_gavel = _trace_test("trace-gavel", 400)
test_fuzz_trace_philly = _trace_test("trace-philly", 250)


# ---------------------------------------------------------------------------------- specs
def check_spec_result(result) -> None:
    """A spec error names where it is: the spec or a file (source) and/or the key (field)."""
    if isinstance(result, HSchedError):
        assert isinstance(result, ConfigError)
        assert result.source or result.field, str(result)
        assert_names_where(result, result.source)
    else:
        check_workload(result, 10 ** 6)


@pytest.fixture(scope="module")
def fake_traces(workdir) -> Path:
    """A small $HSCHED_TRACES tree, so default trace paths (vc=, workload=, philly) are fast."""
    root = workdir / "traces"
    (root / "philly").mkdir(parents=True, exist_ok=True)
    (root / "philly" / "philly.csv").write_text(
        PHILLY_H + "2017-10-09 06:30:00,600,1,600,6214e9\n2017-10-09 07:00:00,60,2,120,11cb48\n"
        "2017-10-09 07:10:00,nan,1,0,6214e9\n", encoding="utf-8")
    (root / "gavel" / "msr_seed0").mkdir(parents=True, exist_ok=True)
    (root / "gavel" / "msr_seed0" / "6214e9.trace").write_text(
        _gavel() + _gavel(arrival_time="30", scale_factor="2"), encoding="utf-8")
    (root / "pollux" / "workloads").mkdir(parents=True, exist_ok=True)
    (root / "pollux" / "workloads" / "workload-1.csv").write_text(
        POLLUX_H + "a,0,bert,1,32\nb,10,cifar10,2,64\n", encoding="utf-8")
    return root


@fuzz(300, "spec-text")
@given(st.one_of(st.text(max_size=50),
                 st.sampled_from(["gavel", "csv", "pollux", "philly", "gavel-trace"]).map(
                     lambda k: k + ":").flatmap(lambda k: st.text(max_size=30).map(
                         lambda t: k + t))))
def test_fuzz_spec_text(fake_traces, spec):
    with mock.patch.dict(os.environ, {"HSCHED_TRACES": str(fake_traces)}):
        result = attempt(lambda: load_workload(spec, CLUSTER))
    FUZZ_STATS.record("spec-text", spec.encode("utf-8", "surrogatepass"), True, result)
    check_spec_result(result)


SPEC_VALUES = {
    "rate": ["4", "0", "-1", "nan", "inf", "1e-300", "1e-320", "1e308", "abc", HUGE_DIGITS],
    "jobs": ["1", "3", "0", "-2", "1e3", "2.5", "99999999999", "abc", HUGE_DIGITS],
    "seed": ["0", "1", "-1", "10" * 20, "x"],
    "mix": ["classic", "llm", "LLM", "modern", ""],
    "duration_scale": ["1", "0.01", "0", "-1", "1e308", "1e-320", "nan"],
    "multi_gpu": ["0", "1", "2", "-1", "yes"],
    "start": ["2017-10-09T06:00", "2017-10-09", "2017-13-40", "9999-12-31", "0001-01-01",
              "yesterday", "2017-10-09T25:00"],
    "hours": ["1", "0.5", "0", "-3", "1e308", "1e-320", "nan", "1e6"],
    "vc": ["6214e9", "nope", "../../etc/passwd", "", "11cb48"],
    "max_jobs": ["1", "5", "0", "-1", "1.5", HUGE_DIGITS],
    "workload": ["1", "4", "0", "99", "-1", "x"],
    "path": [],  # filled per example with real and bogus paths
    "bogus": ["1"],
}


@fuzz(400, "spec-grammar")
@given(st.sampled_from(["gavel", "csv", "pollux", "philly", "gavel-trace", "GAVEL", "slurm"]),
       st.lists(st.sampled_from(sorted(SPEC_VALUES)), max_size=4), st.data())
def test_fuzz_spec_grammar(workdir, fake_traces, kind, keys, data):
    trace = workdir / "spec-trace.csv"
    if not trace.exists():
        trace.write_text("job_id,submit_time_s,duration_s,num_gpus\na,0,60,1\nb,5,60,2\n",
                         encoding="utf-8")
    paths = [str(trace), str(workdir), str(workdir / "none.csv"), "~nouser_fuzz/x.csv",
             "x\x00y", "a" * 5000, str(REPO / "README.md")]
    parts = []
    for key in keys:
        values = paths if key == "path" else SPEC_VALUES[key]
        parts.append(f"{key}={data.draw(st.sampled_from(values))}" if data.draw(
            st.integers(0, 9)) else data.draw(st.sampled_from([key, f"{key}=", f" {key} = 1"])))
    if kind == "gavel" and not any(p.startswith("jobs=") for p in parts):
        parts.append("jobs=3")   # the default (100 jobs) is slow and says nothing new
    spec = kind + (":" + ",".join(parts) if parts or data.draw(st.booleans()) else "")
    skip = data.draw(st.booleans())
    with mock.patch.dict(os.environ, {"HSCHED_TRACES": str(fake_traces)}):
        result = attempt(lambda: load_workload(spec, CLUSTER, skip_invalid=skip))
    FUZZ_STATS.record("spec-grammar", spec.encode("utf-8", "surrogatepass") + bytes([skip]),
                      True, result)
    check_spec_result(result)


# ---------------------------------------------------------------------------------- CLI
class _Reached(BaseException):
    """Raised by the stubs in place of a simulation / demo / evaluation: the arguments passed.
    A ``BaseException``, as ``KeyboardInterrupt``: serial ``compare`` keeps a run's
    ``Exception`` as a FAILED row and goes on, and this must end the command instead."""


def _stub(*args, **kwargs):
    raise _Reached()


CLI_TOKENS = ["candidates", "models", "clusters", "simulate", "compare", "demo", "evaluate",
              "--model", "--cluster", "--max-candidates", "--throughputs", "--no-mixed",
              "--json", "--workload", "--policy", "--policies", "--objective", "--round-s",
              "--restart-s", "--topk", "--backend", "--lp-time-limit-s", "--seed",
              "--max-time-s", "--measure-jobs", "--skip-invalid", "--check-invariants",
              "--no-progress", "--jobs-out", "--out", "--suite", "--seeds", "-v", "-h", "--help",
              "--", "-", "--cluster=sia-64", "--model=resnet50"]
ODD = ["", " ", "\x00", "~nouser_fuzz/x", "a" * 5000, HUGE_DIGITS, "-1", "nan", "é"]
#: Per flag: (valid values, invalid values).
CLI_FLAG_VALUES = {
    "--model": (["resnet50", "ResNet-50", "lm", "llama2-70b", "LM (batch size 20)"], ["gpt5"]),
    "--cluster": (["tiny-8", "sia-64", "TINY-8", "x.yaml", "x.json"], ["nope", "bad.yaml"]),
    "--max-candidates": (["1", "4"], ["0", "-3", "2.5", "x", "99999999999999999999"]),
    "--throughputs": (["analytic", "gavel", "gavel.json"], ["nonsense", "Analytic"]),
    "--workload": (["gavel:jobs=2", "gavel:jobs=3,mix=llm", "csv:path=t.csv"],
                   ["gavel:jobs=0", "csv:path=none.csv", "pollux:path=t.csv",
                    "gavel:jobs=2,rate=1e-320", "philly:start=2017-13-01", "slurm"]),
    "--policy": (["fifo", "heterosched-lp", "gavel", "pop-4"],
                 ["pop-0", "pop-x", "bogus", "pop-99999999999999999999"]),
    "--policies": (["fifo,srf", "fifo"], [",,", "fifo,bogus", "fifo,,gavel"]),
    "--objective": (["max-min", "ftf", "max-throughput", "min-makespan"], ["bogus"]),
    "--round-s": (["300", "60"], ["0", "-1", "nan", "inf", "1e-300", "abc"]),
    "--restart-s": (["0", "60"], ["-1", "nan", "inf", "1e308", "300", "x"]),
    "--lp-time-limit-s": (["10"], ["0", "-1", "nan", "inf", "x"]),
    "--max-time-s": (["3600"], ["0", "-5", "nan", "-inf", "x"]),
    "--topk": (["1", "4"], ["0", "-2", "x", "99999999999999999999"]),
    "--backend": (["highs", "pulp"], ["glpk"]),
    "--seed": (["0", "7", "99999999999999999999"], ["-1", "x"]),
    "--measure-jobs": (["0:1", "1:3"], ["2:1", "a:b:c", "5", "-1:2", HUGE_DIGITS + ":1"]),
    "--jobs-out": (["out.csv", ""], ["nodir/out.csv"]),
    "--out": (["demo-out"], []), "--suite": (["smoke"], ["huge"]), "--seeds": (["1"], ["0", "x"]),
}
CLI_FLAGS = {
    "candidates": ["--model", "--cluster", "--max-candidates", "--throughputs", "--no-mixed",
                   "--json"],
    "models": [], "clusters": [],
    "simulate": ["--cluster", "--workload", "--policy", "--objective", "--throughputs",
                 "--round-s", "--restart-s", "--max-candidates", "--topk", "--backend",
                 "--lp-time-limit-s", "--seed", "--max-time-s", "--measure-jobs",
                 "--skip-invalid", "--check-invariants", "--no-progress", "--json",
                 "--jobs-out"],
    "demo": ["--cluster", "--out"],
    "evaluate": ["--suite", "--policies", "--seeds", "--out", "--json", "--no-progress"],
}
CLI_FLAGS["compare"] = [f if f != "--policy" else "--policies" for f in CLI_FLAGS["simulate"]
                        if f != "--jobs-out"]
REQUIRED = {"candidates": ("--model", "--cluster"), "simulate": ("--cluster", "--workload"),
            "compare": ("--cluster", "--workload", "--policies")}


def _safe_token(text: str) -> bool:
    # Files written by the CLI (--jobs-out) stay inside the fuzzer's working directory.
    return "/" not in text and "\\" not in text and ".." not in text


@st.composite
def cli_argv(draw):
    """A command line: usually a subcommand with its required flags and some optional ones
    (values valid or not), sometimes with random tokens inserted; sometimes pure token soup."""
    if draw(st.integers(0, 7)) == 0:
        return draw(st.lists(st.one_of(st.sampled_from(CLI_TOKENS), st.sampled_from(ODD),
                                       st.text(max_size=12).filter(_safe_token)), max_size=10))
    cmd = draw(st.sampled_from(sorted(CLI_FLAGS)))
    argv = (["-v"] if draw(st.integers(0, 9)) == 0 else []) + [cmd]
    flags = list(REQUIRED.get(cmd, ()))
    if CLI_FLAGS[cmd]:
        # each flag once, mostly: a value flag given twice stops at argparse's error
        # (hsched_cli.main._StoreOnce), so repeats are drawn rarely, to keep exploring past
        # parsing
        repeats = draw(st.integers(0, 9)) == 0
        extra = draw(st.lists(st.sampled_from(CLI_FLAGS[cmd]), max_size=4, unique=not repeats))
        flags += extra if repeats else [f for f in extra if f not in flags]
    if draw(st.integers(0, 19)) == 0 and flags:
        flags.pop(draw(st.integers(0, len(flags) - 1)))          # a required flag missing
    for flag in flags:
        argv.append(flag)
        if flag in CLI_FLAG_VALUES:
            valid, invalid = CLI_FLAG_VALUES[flag]
            argv.append(draw(st.sampled_from(invalid + ODD) if draw(st.integers(0, 5)) == 0
                             else st.sampled_from(valid)))
    if cmd == "clusters" and draw(st.booleans()):
        argv.append(draw(st.sampled_from(["tiny-8", "x.yaml", "bad.yaml", "nope"] + ODD)))
    if draw(st.integers(0, 9)) == 0:
        argv.insert(draw(st.integers(0, len(argv))),
                    draw(st.one_of(st.sampled_from(CLI_TOKENS + ODD),
                                   st.text(max_size=8).filter(_safe_token))))
    return argv


def _cli_files(run_dir: Path) -> None:
    """Files the CLI values refer to, in the CLI fuzzer's working directory."""
    if (run_dir / "t.csv").exists():
        return
    (run_dir / "t.csv").write_text("job_id,submit_time_s,duration_s,num_gpus\na,0,60,1\n",
                                   encoding="utf-8")
    (run_dir / "x.yaml").write_text("nodes: [{gpu_type: T4, gpus_per_node: 4, count: 2}]\n",
                                    encoding="utf-8")
    (run_dir / "x.json").write_text('{"nodes": [{"gpu_type": "T4", "gpus_per_node": 4, '
                                    '"count": 2}]}', encoding="utf-8")
    (run_dir / "bad.yaml").write_text("nodes: [{gpu_type: T4, gpus_per_node: 99}]\n",
                                      encoding="utf-8")
    (run_dir / "gavel.json").write_text('{"v100": {"(\'ResNet-50 (batch size 64)\', 1)": '
                                        '{"null": 4.0}}}', encoding="utf-8")


@fuzz(400, "cli-argv")
@given(cli_argv())
def test_fuzz_cli_argv(workdir, argv):
    cwd = os.getcwd()
    out, err = io.StringIO(), io.StringIO()
    outcome: object
    run_dir = workdir / "cli"
    run_dir.mkdir(exist_ok=True)
    _cli_files(run_dir)
    try:
        os.chdir(run_dir)
        with contextlib.ExitStack() as stack:
            stack.enter_context(mock.patch.object(cli_simulation, "_run_policy", _stub))
            stack.enter_context(mock.patch.object(cli, "cmd_demo", _stub))
            if hasattr(cli, "cmd_evaluate"):
                stack.enter_context(mock.patch.object(cli, "cmd_evaluate", _stub))
            stack.enter_context(contextlib.redirect_stdout(out))
            stack.enter_context(contextlib.redirect_stderr(err))
            try:
                outcome = cli.main(list(argv))
            except SystemExit as exc:      # argparse: usage errors and --help
                outcome = exc
            except _Reached:
                outcome = "reached"
    finally:
        os.chdir(cwd)
    key = "\x1f".join(argv).encode("utf-8", "surrogatepass")
    if isinstance(outcome, SystemExit):
        assert outcome.code in (0, 2), outcome.code
        rejected = outcome.code == 2
    elif outcome == "reached":
        rejected = False
    else:
        assert isinstance(outcome, int) and not isinstance(outcome, bool), outcome
        assert outcome in (0, 2)
        rejected = outcome == 2
        if rejected:
            lines = err.getvalue().splitlines()
            assert any(ln.startswith("hsched ") and ": error: " in ln for ln in lines), lines
    label = ("argparse usage error (exit 2)" if isinstance(outcome, SystemExit)
             else "HSchedError (exit 2)")
    FUZZ_STATS.record("cli-argv", key, True, outcome, rejected=rejected, label=label)


# ---------------------------------------------------------------------------------- examples
def _write(path: Path, content: str | bytes) -> Path:
    if isinstance(content, str):
        content = content.encode("utf-8")
    path.write_bytes(content)
    return path


def _expect(call, error: type[HSchedError], *needles: str) -> HSchedError:
    """``call()`` raises ``error``; its message contains every needle."""
    with pytest.raises(error) as info:
        call()
    msg = str(info.value)
    for needle in needles:
        assert needle in msg, f"{needle!r} not in: {msg}"
    return info.value


POOL = "nodes:\n  - gpu_type: T4\n    gpus_per_node: 4\n    count: 2\n"
CLUSTER_CASES = [
    # (name, text, error type, needles)
    ("missing key", "nodes:\n  - gpu_type: T4\n    count: 2\n", ConfigError,
     ["nodes[0].gpus_per_node", "missing required key", ":2"]),
    ("extra key", POOL + "    colour: red\n", ConfigError, ["nodes[0].colour", ":5", "unknown"]),
    ("extra top key", POOL + "gpus: 3\n", ConfigError, ["field 'gpus'", ":5"]),
    ("wrong type", POOL.replace("count: 2", "count: '2'"), ConfigError,
     ["nodes[0].count", "integer", ":4"]),
    ("list as pool", "nodes:\n  - [T4, 4, 2]\n", ConfigError, ["nodes[0]", "mapping", ":2"]),
    ("NaN", POOL + "    inter_node_bw_gbps: .nan\n", ConfigError,
     ["nodes[0].inter_node_bw_gbps", "finite", ":5"]),
    ("inf", POOL + "    intra_node_bw_gbps: .inf\n", ConfigError,
     ["nodes[0].intra_node_bw_gbps", ":5"]),
    ("negative", POOL.replace("count: 2", "count: -2"), ConfigError, ["nodes[0].count", ":4"]),
    ("zero", POOL.replace("gpus_per_node: 4", "gpus_per_node: 0"), ConfigError,
     ["nodes[0].gpus_per_node", "between 1 and 16", ":3"]),
    ("unknown GPU", POOL.replace("T4", "A200"), UnknownNameError,
     ["nodes[0].gpu_type", "A200", "T4", ":2"]),
    ("too many nodes", POOL.replace("count: 2", "count: 1000000000000"), ConfigError,
     ["nodes[0].count", "between 1 and 100000"]),
    ("too many nodes in total", POOL.replace("count: 2", "count: 60000") +
     "  - {gpu_type: T4, gpus_per_node: 4, count: 60000, name: b}\n", ConfigError,
     ["nodes[1].count", "at most 100000"]),
    ("huge integer", POOL.replace("count: 2", "count: " + HUGE_DIGITS), ConfigError,
     ["too many digits"]),
    ("duplicate key", POOL + "    count: 3\n", ConfigError, ["duplicate key 'count'", ":5"]),
    ("deep nesting", "nodes: " + "[" * 5000 + "]" * 5000 + "\n", ConfigError,
     ["nested too deeply"]),
    ("recursive alias", "nodes: &a [*a]\n", ConfigError, ["nodes[0]", "mapping"]),
    ("python tag", POOL + "name: !!python/object/apply:os.system ['true']\n", ConfigError,
     ["invalid YAML", ":5"]),
    ("bad date", POOL + "name: 2001-13-45\n", ConfigError, ["invalid YAML", "month"]),
    ("empty file", "", ConfigError, ["file is empty"]),
    ("comments only", "# nothing\n", ConfigError, ["no data"]),
    ("not a mapping", "- 1\n- 2\n", ConfigError, ["must be a mapping"]),
    ("latin-1", ("name: caf\u00e9\n" + POOL).encode("latin-1"), ConfigError,
     ["not valid UTF-8", "0xe9", ":1"]),
    ("UTF-16", ("name: x\n" + POOL).encode("utf-16"), ConfigError, ["not valid UTF-8"]),
    ("binary garbage", bytes(range(256)) * 4, ConfigError, ["not valid UTF-8"]),
    ("NUL byte", POOL + "\x00", ConfigError, ["invalid YAML"]),
    ("syntax", "nodes: [\n", ConfigError, ["invalid YAML"]),
]


@pytest.mark.parametrize("name,text,error,needles", [
    pytest.param(*c, id=c[0], marks=[pytest.mark.slow] if c[0] == "deep nesting" else [])
    for c in CLUSTER_CASES])
def test_cluster_yaml_malformations(tmp_path, name, text, error, needles):
    path = _write(tmp_path / "lab.yaml", text)
    exc = _expect(lambda: load_cluster(path), error, str(path), *needles)
    assert_names_where(exc, str(path))


def test_cluster_yaml_bom_is_accepted(tmp_path):
    path = _write(tmp_path / "lab.yaml", b"\xef\xbb\xbf" + POOL.encode())
    assert load_cluster(path).num_gpus == 8


class _CallBudget:
    """A ``sys.settrace`` function counting Python calls; past ``limit`` it raises (and
    Python unsets it), so a runaway walk stops early."""

    def __init__(self, limit: int) -> None:
        self.limit, self.calls = limit, 0

    def __call__(self, frame, event, arg):
        if event == "call":
            self.calls += 1
            if self.calls > self.limit:
                raise RuntimeError(f"more than {self.limit} calls")
        return None


def test_cluster_yaml_billion_laughs_is_not_expanded(tmp_path):
    """Nested aliases expand to 9^9 references; the loader must not walk each one: it stays
    within a budget of Python calls (~30 000 measured; walking the references takes > 10^8)."""
    lol = "a0: &a0 [x]\n" + "".join(
        f"a{i}: &a{i} [{', '.join([f'*a{i - 1}'] * 9)}]\n" for i in range(1, 10)) + POOL
    path = _write(tmp_path / "lol.yaml", lol)
    budget, previous = _CallBudget(1_000_000), sys.gettrace()
    sys.settrace(budget)
    try:
        _expect(lambda: load_cluster(path), ConfigError, "field 'a0'", ":1")
    finally:
        sys.settrace(previous)
    assert 0 < budget.calls <= budget.limit


JSON_POOL = {"gpu_type": "T4", "gpus_per_node": 4, "count": 2}
JSON_CASES = [
    ("missing key", {"nodes": [{"gpu_type": "T4", "count": 2}]}, ConfigError,
     ["nodes[0].gpus_per_node"]),
    ("extra key", {"nodes": [dict(JSON_POOL, colour=1)]}, ConfigError, ["nodes[0].colour"]),
    ("wrong type", {"nodes": [dict(JSON_POOL, count=[2])]}, ConfigError, ["nodes[0].count"]),
    ("NaN", {"nodes": [dict(JSON_POOL, inter_node_bw_gbps=float("nan"))]}, ConfigError,
     ["nodes[0].inter_node_bw_gbps"]),
    ("inf", {"nodes": [dict(JSON_POOL, count=float("inf"))]}, ConfigError, ["nodes[0].count"]),
    ("negative", {"nodes": [dict(JSON_POOL, gpus_per_node=-4)]}, ConfigError,
     ["nodes[0].gpus_per_node"]),
    ("zero", {"nodes": [dict(JSON_POOL, count=0)]}, ConfigError, ["nodes[0].count"]),
    ("unknown GPU", {"nodes": [dict(JSON_POOL, gpu_type="TPU")]}, UnknownNameError,
     ["nodes[0].gpu_type", "TPU"]),
    ("huge count", {"nodes": [dict(JSON_POOL, count=10 ** 30)]}, ConfigError,
     ["nodes[0].count"]),
    ("huge bandwidth", {"nodes": [dict(JSON_POOL, inter_node_bw_gbps=10 ** 400)]}, ConfigError,
     ["nodes[0].inter_node_bw_gbps", "finite"]),
]


@pytest.mark.parametrize("name,doc,error,needles", JSON_CASES, ids=[c[0] for c in JSON_CASES])
def test_cluster_json_malformations(tmp_path, name, doc, error, needles):
    path = _write(tmp_path / "lab.json", json.dumps(doc))
    _expect(lambda: load_cluster(path), error, str(path), *needles)


@pytest.mark.parametrize("text,needles", [
    ('{"nodes": ' + "[" * 100000 + "]" * 100000 + "}", ["nested too deeply"]),
    ('{"nodes": [' + HUGE_DIGITS + "]}", ["too many digits"]),
    ('{"nodes": [], "nodes": []}', ["duplicate key 'nodes'"]),
    # a duplicate inside a pool: its path and line, as in a YAML file (JSON is YAML)
    ('{"nodes": [\n {"gpu_type": "T4", "gpus_per_node": 4, "count": 1},\n'
     ' {"gpu_type": "V100", "gpus_per_node": 4, "count": 1, "count": 2}\n]}',
     ["duplicate key 'count'", ":3", "field 'nodes[1].count'"]),
    ('{"nodes": [}', ["invalid JSON", ":1"]),
    ("", ["file is empty"]),
])
def test_cluster_json_file_level_errors(tmp_path, text, needles):
    path = _write(tmp_path / "lab.json", text)
    _expect(lambda: load_cluster(path), ConfigError, str(path), *needles)


@pytest.mark.parametrize("name,needles", [
    ("~nouser_fuzz/lab.yaml", ["cannot expand '~'", "field 'cluster'"]),
    ("a" * 5000, ["unknown cluster", "…"]),
    ("lab\x00.yaml", ["unknown cluster", "\\x00"]),
])
def test_get_cluster_odd_names(name, needles):
    _expect(lambda: get_cluster(name), ConfigError, *needles)


def test_a_long_file_name_is_cut_in_the_message():
    """A 5,000-character file name: each echo is cut to about 80 characters (the message was
    566 characters long, the file name echoed at about 400)."""
    with pytest.raises(ConfigError) as err:
        get_cluster("a" * 5000 + ".yaml")
    text = str(err.value)
    assert len(text) < 300 and "\n" not in text and "unknown cluster" in text, text


def test_cluster_error_messages_are_short():
    """Values echoed in messages are cut, so a 5000-character value gives a short message."""
    with pytest.raises(ConfigError) as info:
        from hsched_env.cluster import cluster_from_dict
        cluster_from_dict({"nodes": [dict(JSON_POOL, count="x" * 5000)]}, source="s")
    assert len(str(info.value)) < 300


# -- catalogs
@pytest.mark.parametrize("doc,needles", [
    (lambda r: {"gpus": [{k: v for k, v in r.items() if k != "memory_gb"}]},
     ["gpus[0].memory_gb", "missing key"]),
    (lambda r: {"gpus": [dict(r, colour=1)]}, ["gpus[0].colour", "unknown key"]),
    (lambda r: {"gpus": [dict(r, memory_gb="80")]}, ["gpus[0].memory_gb", "number"]),
    (lambda r: {"gpus": [dict(r, memory_gb=float("nan"))]}, ["gpus[0].memory_gb", "finite"]),
    (lambda r: {"gpus": [dict(r, memory_gb=-1)]}, ["gpus[0].memory_gb", "> 0"]),
    (lambda r: {"gpus": [dict(r, memory_gb=10 ** 400)]}, ["gpus[0].memory_gb", "out of range"]),
    (lambda r: {"gpus": [dict(r, arch="quantum")]}, ["gpus[0].arch", "unknown architecture"]),
    (lambda r: {"gpus": [r, r]}, ["gpus[1].name", "duplicate"]),
    (lambda r: {"gpus": []}, ["field 'gpus'", "non-empty"]),
])
def test_gpu_catalog_malformations(tmp_path, doc, needles):
    path = _write(tmp_path / "gpus.json", json.dumps(doc(dict(GPU_ROWS[0]))))
    _expect(lambda: load_gpu_catalog(path), ConfigError, str(path), *needles)


@pytest.mark.parametrize("text,needles", [
    ('{"gpus": ' + "[" * 100000 + "]" * 100000 + "}", ["nested too deeply"]),
    ('{"gpus": [' + HUGE_DIGITS + "]}", ["too many digits"]),
    ('{"gpus": [], "gpus": [1]}', ["duplicate key 'gpus'"]),
    ("\ufeff", ["file is empty"]),
])
def test_catalog_file_level_errors(tmp_path, text, needles):
    path = _write(tmp_path / "gpus.json", text)
    _expect(lambda: load_gpu_catalog(path), ConfigError, str(path), *needles)


def test_model_catalog_rejects_huge_integers(tmp_path):
    row = dict(MODEL_ROWS[0], layers=10 ** 400)
    path = _write(tmp_path / "models.json", json.dumps({"models": [row]}))
    _expect(lambda: load_model_catalog(path), ConfigError, "models[0].layers", "2**53")


@pytest.mark.parametrize("data,needles", [
    ('{"gpus": [1]}'.encode("utf-16"), ["not valid UTF-8"]),
    ("{\"gpus\": [\"caf\u00e9\"]}".encode("latin-1"), ["not valid UTF-8", ":1"]),
    (b"\x00\xff\xfe" * 50, ["not valid UTF-8"]),
])
def test_catalog_encodings(tmp_path, data, needles):
    path = _write(tmp_path / "models.json", data)
    _expect(lambda: load_model_catalog(path), ConfigError, str(path), *needles)


# -- traces
def _load(tmp_path, name: str, prefix: str, content, **kw):
    path = _write(tmp_path / name, content)
    return path, (lambda: load_workload(prefix + str(path), CLUSTER, **kw))


CSV_H = ",".join(CSV_HEADER) + "\n"
CSV_OK = "a,0,3600,2,resnet50,,\n"
CSV_CASES = [
    ("missing column", "job_id,submit_time_s,num_gpus\na,0,1\n", TraceError,
     [":1", "field 'duration_s'", "missing column"]),
    ("extra column", CSV_H.strip() + ",colour\n" + CSV_OK.strip() + ",red\n", TraceError,
     [":1", "field 'colour'", "unknown column"]),
    ("short row", CSV_H + "a,0,3600\n", TraceError, [":2", "expected 7 columns, got 3"]),
    ("long row", CSV_H + CSV_OK.strip() + ",x\n", TraceError, [":2", "expected 7 columns"]),
    ("wrong type", CSV_H + "a,zero,3600,2,,,\n", TraceError,
     [":2", "field 'submit_time_s'", "not a number"]),
    ("NaN", CSV_H + "a,0,nan,2,,,\n", TraceError, [":2", "field 'duration_s'", "finite"]),
    ("inf", CSV_H + "a,inf,60,2,,,\n", TraceError, [":2", "field 'submit_time_s'", "finite"]),
    ("negative duration", CSV_H + "a,0,-60,2,,,\n", TraceError, [":2", "field 'duration_s'"]),
    ("zero duration", CSV_H + "a,0,0,2,,,\n", TraceError, [":2", "field 'duration_s'", "> 0"]),
    ("negative arrival", CSV_H + "a,-5,60,2,,,\n", TraceError, [":2", "field 'submit_time_s'"]),
    ("fractional GPUs", CSV_H + "a,0,60,1.5,,,\n", TraceError, [":2", "field 'num_gpus'"]),
    # whole numbers read exactly, not through a float (session 51's input audit)
    ("GPUs a hair above 4", CSV_H + "a,0,60,4.0000000000000001,,,\n", TraceError,
     [":2", "field 'num_gpus'", "whole number"]),
    ("GPUs 2^53 + 1", CSV_H + "a,0,60,9007199254740993,,,\n", TraceError,
     [":2", "field 'num_gpus'", "<= 9007199254740992, got '9007199254740993'"]),
    ("GPUs past Decimal's exponents", CSV_H + "a,0,60,1e-9999999999999999999999,,,\n",
     TraceError, [":2", "field 'num_gpus'", "whole number"]),
    ("zero GPUs", CSV_H + "a,0,60,0,,,\n", TraceError, [":2", "field 'num_gpus'"]),
    ("unknown model", CSV_H + "a,0,60,1,gpt5,,\n", TraceError,
     [":2", "field 'model'", "gpt5", "resnet50"]),
    ("unknown GPU type", CSV_H + "a,0,60,1,,TPUv4,\n", TraceError, [":2", "field 'gpu_type'"]),
    ("larger than the cluster", CSV_H + "a,0,60,65,,,\n", TraceError,
     [":2", "field 'num_gpus'", "has 64 in total"]),
    ("larger than the type", CSV_H + "a,0,60,17,resnet50,a100-40gb,\n", TraceError,
     [":2", "field 'num_gpus'", "A100-40GB"]),
    ("huge GPU count", CSV_H + "a,0,60,1e308,,,\n", TraceError, [":2", "field 'num_gpus'"]),
    ("huge batch", CSV_H + "a,0,60,1,resnet50,,100000000000\n", TraceError,
     [":2", "field 'batch'", "<= 1000000"]),
    ("huge Gavel batch", CSV_H + "a,0,60,1,LM (batch size 2000000),,\n", TraceError,
     [":2", "field 'model'", "limit"]),
    ("arrival after the limit", CSV_H + "a,1e308,60,1,,,\n", TraceError,
     [":2", "field 'submit_time_s'", "limit"]),
    ("duration above the limit", CSV_H + "a,0,1e300,1,resnet50,,\n", TraceError,
     [":2", "field 'duration_s'", "limit"]),
    # below 1 ms: 1e-320 s gave an infinite FTF, shown as if no job had finished (session 51)
    ("duration below the limit", CSV_H + "a,0,1e-320,1,resnet50,,\n", TraceError,
     [":2", "field 'duration_s'", "below the limit of 0.001 s"]),
    ("duration just below the limit", CSV_H + "a,0,0.0009,1,resnet50,,\n", TraceError,
     [":2", "field 'duration_s'", "below the limit"]),
    ("duplicate ids", CSV_H + CSV_OK + "b,1,60,1,,,\n" + CSV_OK, TraceError,
     [":4", "field 'job_id'", "duplicate", "line 2"]),
    ("empty id", CSV_H + ",0,60,1,,,\n", TraceError, [":2", "field 'job_id'", "empty"]),
    ("unterminated quote", CSV_H + 'a,0,60,1,"resnet50\n', TraceError, [":2", "not closed"]),
    ("empty file", "", ConfigError, ["file is empty"]),
    ("blank lines only", "\n\n  \n", ConfigError, ["file is empty"]),
    ("header only", CSV_H, ConfigError, ["no jobs"]),
    ("latin-1", (CSV_H + "caf\u00e9,0,60,1,,,\n").encode("latin-1"), TraceError,
     [":2", "not valid UTF-8", "0xe9"]),
    ("UTF-16", (CSV_H + CSV_OK).encode("utf-16"), TraceError, [":1", "not valid UTF-8"]),
    ("binary garbage", b"\x89PNG\r\n\x1a\n" + bytes(range(256)), TraceError,
     ["not valid UTF-8"]),
    ("NUL byte", CSV_H + "a,0,60,\x00,,,\n", TraceError, [":2", "field 'num_gpus'"]),
]


@pytest.mark.parametrize("name,content,error,needles", CSV_CASES, ids=[c[0] for c in CSV_CASES])
def test_csv_trace_malformations(tmp_path, name, content, error, needles):
    path, call = _load(tmp_path, "jobs.csv", "csv:path=", content)
    exc = _expect(call, error, str(path), *needles)
    assert_names_where(exc, str(path))


def test_csv_trace_bom_crlf_and_unsorted_ids_are_accepted(tmp_path):
    content = "\ufeff" + CSV_H + "z,50,60,1,,,\r\na,0,60,1,,,\r\nm,25,60,1,,,\r\n"
    _, call = _load(tmp_path, "jobs.csv", "csv:path=", content)
    w = call()
    assert [j.name for j in w.jobs] == ["a", "m", "z"]      # sorted by arrival
    assert [j.job_id for j in w.jobs] == [0, 1, 2]


def test_csv_trace_skip_invalid_counts_every_malformed_row(tmp_path):
    bad = ["a,0,nan,1,,,", "b,0,60,999,,,", "c,-1,60,1,,,", "d,0,60,1,gpt5,,", "e,0,60",
           "f,1e308,60,1,,,", "g,0,60,1,,H200,"]
    content = CSV_H + "\n".join(bad + ["ok,0,60,1,,,"]) + "\n"
    _, call = _load(tmp_path, "jobs.csv", "csv:path=", content, skip_invalid=True)
    w = call()
    assert len(w.jobs) == 1 and w.skipped == len(bad)


POLLUX_H = ",".join(POLLUX_HEADER) + "\n"
POLLUX_CASES = [
    ("missing column", "name,time,application,num_replicas\na,0,bert,1\n", TraceError,
     [":1", "field 'batch_size'", "missing column"]),
    ("extra column", POLLUX_H.strip() + ",x\na,0,bert,1,32,1\n", TraceError,
     [":1", "field 'x'", "unknown column"]),
    ("wrong type", POLLUX_H + "a,0,bert,two,32\n", TraceError, [":2", "field 'num_replicas'"]),
    ("NaN", POLLUX_H + "a,nan,bert,1,32\n", TraceError, [":2", "field 'time'", "finite"]),
    ("negative", POLLUX_H + "a,-1,bert,1,32\n", TraceError, [":2", "field 'time'"]),
    ("zero replicas", POLLUX_H + "a,0,bert,0,32\n", TraceError, [":2", "field 'num_replicas'"]),
    ("unknown application", POLLUX_H + "a,0,gpt5,1,32\n", TraceError,
     [":2", "field 'application'", "cifar10"]),
    ("larger than the cluster", POLLUX_H + "a,0,bert,128,32\n", TraceError,
     [":2", "field 'num_replicas'"]),
    ("duplicate names", POLLUX_H + "a,0,bert,1,32\na,5,ncf,1,32\n", TraceError,
     [":3", "field 'name'", "duplicate"]),
    ("arrival after the limit", POLLUX_H + "a,1e300,bert,1,32\n", TraceError,
     [":2", "field 'time'", "limit"]),
    ("empty file", "", ConfigError, ["file is empty"]),
    ("latin-1", (POLLUX_H + "caf\u00e9,0,bert,1,32\n").encode("latin-1"), TraceError,
     [":2", "not valid UTF-8"]),
    ("UTF-16", (POLLUX_H + "a,0,bert,1,32\n").encode("utf-16"), TraceError,
     ["not valid UTF-8"]),
]


@pytest.mark.parametrize("name,content,error,needles", POLLUX_CASES,
                         ids=[c[0] for c in POLLUX_CASES])
def test_pollux_trace_malformations(tmp_path, name, content, error, needles):
    path, call = _load(tmp_path, "workload.csv", "pollux:path=", content)
    exc = _expect(call, error, str(path), *needles)
    assert_names_where(exc, str(path))


GAVEL_OK = ["ResNet-50 (batch size 64)", "cd x && python3 train.py", "-s", "1", "1000", "0", "1"]


def _gavel(**changes) -> str:
    names = ["job_type", "command", "num_steps_arg", "needs_data_dir", "total_steps",
             "arrival_time", "scale_factor"]
    row = [changes.get(n, v) for n, v in zip(names, GAVEL_OK)]
    return "\t".join(row) + "\n"


GAVEL_CASES = [
    ("missing column", "\t".join(GAVEL_OK[:6]) + "\n", TraceError,
     [":1", "expected 7 tab-separated columns", "got 6"]),
    ("extra column", "\t".join(GAVEL_OK + ["x"]) + "\n", TraceError, [":1", "got 8"]),
    ("wrong type", _gavel(total_steps="many"), TraceError, [":1", "field 'total_steps'"]),
    ("NaN", _gavel(arrival_time="nan"), TraceError, [":1", "field 'arrival_time'", "finite"]),
    ("inf", _gavel(total_steps="inf"), TraceError, [":1", "field 'total_steps'"]),
    ("negative", _gavel(arrival_time="-1"), TraceError, [":1", "field 'arrival_time'"]),
    ("zero steps", _gavel(total_steps="0"), TraceError, [":1", "field 'total_steps'"]),
    ("unknown job type", _gavel(job_type="VGG-16 (batch size 8)"), TraceError,
     [":1", "field 'job_type'", "ResNet-50 (batch size N)"]),
    ("huge batch", _gavel(job_type="ResNet-50 (batch size 5000000)"), TraceError,
     [":1", "field 'job_type'", "limit"]),
    ("larger than the cluster", _gavel(scale_factor="128"), TraceError,
     [":1", "field 'scale_factor'"]),
    ("duration above the limit", _gavel(total_steps="1e300"), TraceError,
     [":1", "field 'total_steps'"]),
    ("bad data-dir flag", _gavel(needs_data_dir="2"), TraceError,
     [":1", "field 'needs_data_dir'"]),
    ("empty command", _gavel(command=" "), TraceError, [":1", "field 'command'", "empty"]),
    ("empty file", "", ConfigError, ["file is empty"]),
    ("latin-1", _gavel(command="caf\u00e9").encode("latin-1"), TraceError,
     [":1", "not valid UTF-8"]),
    ("UTF-16", _gavel().encode("utf-16"), TraceError, ["not valid UTF-8"]),
    ("binary garbage", bytes(range(128, 256)), TraceError, ["not valid UTF-8"]),
]


@pytest.mark.parametrize("name,content,error,needles", GAVEL_CASES,
                         ids=[c[0] for c in GAVEL_CASES])
def test_gavel_trace_malformations(tmp_path, name, content, error, needles):
    path, call = _load(tmp_path, "jobs.trace", "gavel-trace:path=", content)
    exc = _expect(call, error, str(path), *needles)
    assert_names_where(exc, str(path))


def test_gavel_trace_bom_and_crlf_are_accepted(tmp_path):
    _, call = _load(tmp_path, "jobs.trace", "gavel-trace:path=",
                    b"\xef\xbb\xbf" + (_gavel() + _gavel(arrival_time="5")).replace(
                        "\n", "\r\n").encode())
    assert len(call()) == 2


PHILLY_H = ",".join(PHILLY_HEADER) + "\n"
PHILLY_SPEC = "philly:start=2017-10-09T06:00,hours=4,path="
PHILLY_CASES = [
    ("missing column", "timestamp,num_gpus\n2017-10-09 07:00:00,1\n", TraceError,
     [":1", "field 'duration'", "missing column"]),
    ("extra column", PHILLY_H.strip() + ",x\n2017-10-09 07:00:00,60,1,60,a,1\n", TraceError,
     [":1", "field 'x'"]),
    ("bad timestamp", PHILLY_H + "2017-10-09 25:00:00,60,1,60,a\n", TraceError,
     [":2", "field 'timestamp'"]),
    ("NaN", PHILLY_H + "2017-10-09 07:00:00,nan,1,60,a\n", TraceError,
     [":2", "field 'duration'", "finite"]),
    ("zero duration", PHILLY_H + "2017-10-09 07:00:00,0,1,60,a\n", TraceError,
     [":2", "field 'duration'"]),
    ("huge GPU count", PHILLY_H + "2017-10-09 07:00:00,60,4096,60,a\n", TraceError,
     [":2", "field 'num_gpus'"]),
    ("empty file", "", ConfigError, ["file is empty"]),
    ("UTF-16", (PHILLY_H + "2017-10-09 07:00:00,60,1,60,a\n").encode("utf-16"), TraceError,
     ["not valid UTF-8"]),
]


@pytest.mark.parametrize("name,content,error,needles", PHILLY_CASES,
                         ids=[c[0] for c in PHILLY_CASES])
def test_philly_trace_malformations(tmp_path, name, content, error, needles):
    path, call = _load(tmp_path, "philly.csv", PHILLY_SPEC, content)
    exc = _expect(call, error, str(path), *needles)
    assert_names_where(exc, str(path))


# -- specs
@pytest.mark.parametrize("spec,needles", [
    ("slurm:x=1", ["field 'kind'", "valid kinds"]),
    ("gavel:colour=1", ["field 'colour'", "valid keys"]),
    ("gavel:rate=", ["field 'rate'", "needs a value"]),
    ("gavel:rate=1,rate=2", ["field 'rate'", "twice"]),
    ("gavel:rate=nan", ["field 'rate'", "finite"]),
    ("gavel:rate=-1", ["field 'rate'"]),
    ("gavel:jobs=0", ["field 'jobs'"]),
    ("gavel:jobs=2000000", ["field 'jobs'", "<= 1000000"]),
    ("gavel:jobs=" + HUGE_DIGITS, ["field 'jobs'", "…"]),
    ("gavel:jobs=3,rate=1e-300", ["field 'rate'", "limit"]),
    ("gavel:jobs=3,duration_scale=1e308", ["field 'duration_scale'"]),
    ("gavel:jobs=3,duration_scale=1e-300", ["field 'duration_scale'", "below the limit"]),
    # below the limit for the shortest draw, whatever the seed draws (seed 3 drew none)
    ("gavel:jobs=30,duration_scale=5e-7,seed=3", ["field 'duration_scale'", "shortest"]),
    ("gavel:jobs=3,multi_gpu=2", ["field 'multi_gpu'"]),
    ("gavel:jobs=3,mix=modern", ["field 'mix'", "classic"]),
    ("philly:hours=8", ["field 'start'", "missing"]),
    ("philly:start=2017-13-01", ["field 'start'"]),
    ("philly:start=2017-10-09,hours=1e308", ["field 'hours'", "9999"]),
    ("philly:start=9999-12-31,hours=100", ["field 'hours'", "9999"]),
    ("csv", ["field 'path'", "missing"]),
    ("csv:path=~nouser_fuzz/x.csv", ["field 'path'", "cannot expand"]),
    ("csv:path=x\x00y", ["field 'path'", "NUL"]),
    ("csv:path=/", ["field 'path'", "cannot read"]),
    ("csv:path=" + "a" * 5000, ["field 'path'"]),
    ("pollux:workload=1,path=x", ["field 'workload'", "not both"]),
    ("pollux:workload=0", ["field 'workload'"]),
    ("", ["field 'workload'", "non-empty"]),
])
def test_spec_malformations(spec, needles):
    _expect(lambda: load_workload(spec, CLUSTER), ConfigError, *needles)


# -- CLI
@pytest.mark.parametrize("argv,code,needle", [
    (["candidates", "--model", "resnet50", "--cluster", "tiny-8", "--throughputs", "a" * 5000],
     2, "field '--throughputs'"),
    (["candidates", "--model", "resnet50", "--cluster", "~nouser_fuzz/x.yaml"], 2,
     "cannot expand '~'"),
    (["clusters", "a" * 5000], 2, "unknown cluster"),
    (["simulate", "--cluster", "tiny-8", "--workload", "csv:path=x\x00y"], 2, "NUL"),
    (["simulate", "--cluster", "tiny-8", "--workload", "gavel:jobs=" + HUGE_DIGITS], 2,
     "field 'jobs'"),
    (["simulate", "--cluster", "tiny-8", "--workload", "gavel:jobs=2", "--measure-jobs",
      HUGE_DIGITS + ":1"], 2, "--measure-jobs"),
    (["candidates", "--model", "resnet50", "--cluster", "tiny-8", "--max-candidates",
      HUGE_DIGITS], 2, "positive integer"),
])
def test_cli_odd_arguments(capsys, argv, code, needle):
    try:
        rc = cli.main(argv)
    except SystemExit as exc:
        rc = exc.code
    err = capsys.readouterr().err
    assert rc == code and needle in err, err
    assert len(err) < 2000          # long values are shortened, not echoed whole


# -- safe loading
UNSAFE = [
    (re.compile(r"\byaml\.(load|load_all|unsafe_load|full_load)\s*\("), "yaml.load"),
    (re.compile(r"\byaml\.(Unsafe|Full)?Loader\b"), "a non-safe YAML Loader"),
    (re.compile(r"\b(pickle|cPickle|dill|marshal|shelve)\.(load|loads|Unpickler|open)\b"),
     "unpickling"),
    (re.compile(r"\b(torch|th)\.load\((?![^)]*weights_only=True)"),
     "torch.load without weights_only=True"),
    (re.compile(r"(?<![\w.])eval\("), "eval("),
    (re.compile(r"allow_pickle\s*=\s*True"), "np.load(allow_pickle=True)"),
]


def test_no_unsafe_deserialization_in_the_project():
    """YAML goes through the safe loader and nothing untrusted is unpickled or eval'd."""
    offenders = []
    for package in ("hsched_env", "lp_baseline", "agents", "scripts"):
        for path in sorted((REPO / package).rglob("*.py")):
            for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
                code = line.split("#", 1)[0]
                for pattern, what in UNSAFE:
                    if pattern.search(code):
                        offenders.append(f"{path.relative_to(REPO)}:{n}: {what}: {line.strip()}")
    assert not offenders, "\n".join(offenders)


@pytest.mark.parametrize("table", [
    '{"v100": {"([1], 2)": {"null": 1.0}}}',                 # job type not a string
    '{"v100": {"(\'resnet\', true)": {"null": 1.0}}}',         # not a tuple literal
    '{"v100": {"(\'resnet\', True)": {"null": 1.0}}}',         # a bool scale factor
    '{"v100": {"(\'a\', 1)": {"null": ' + "9" * 5000 + '}}}',  # beyond the digit limit
])
def test_bad_throughput_tables_are_rejected_cleanly(tmp_path, table):
    from hsched_env.throughput import MeasuredTable
    path = tmp_path / "t.json"
    path.write_text(table)
    with pytest.raises(HSchedError, match="t.json"):
        MeasuredTable(path)


@pytest.mark.parametrize("table,words", [
    # a key given twice (JSON keeps the last, silently) or one row spelled two ways
    ('{"v100": {"(\'ResNet-50 (batch size 64)\', 1)": {"null": 1.0}}, '
     '"v100": {"(\'ResNet-50 (batch size 64)\', 1)": {"null": 9.0}}}', "duplicate key 'v100'"),
    ('{"v100": {"(\'ResNet-50 (batch size 64)\', 1)": {"null": 1.0}, '
     '"(\'ResNet-50 (batch size 64)\',1)": {"null": 9.0}}}', "given twice"),
    ('{"v100": {"(\'a\', 1)": {"null": true}}}', "must be a number"),          # read as 1.0
    ('{"v100": {"(\'a\', 1)": {"null": "4.5"}}}', "must be a number"),         # read as 4.5
    ('{"v100": {"(\'a\', 1)": {"null": 1e308}}}', "0 to 1e+09 steps/s"),       # inf samples/s
    ('{"v100": {"(\'a\', 1)": {"null": 1' + "0" * 400 + '}}}', "0 to 1e+09 steps/s"),
    ('{"v100": {}}', "the table has no rows"),                                # nothing in it
])
def test_throughput_tables_that_were_read_wrongly_are_refused(tmp_path, table, words):
    """Session 49's audit: each of these was read without a word (the last row of a duplicate
    winning, a bool or a string as a throughput, a row whose samples/s overflowed to inf, an
    empty table that left every row analytic)."""
    from hsched_env.throughput import MeasuredTable
    path = tmp_path / "t.json"
    path.write_text(table)
    with pytest.raises(HSchedError, match="t.json") as err:
        MeasuredTable(path)
    assert words in str(err.value)


def test_the_candidate_table_says_where_each_throughput_comes_from(capsys, tmp_path):
    """Measured rows are marked ``*``, rows scaled by a one-GPU measurement ``~`` (they were
    called analytic), and the note names the table given (it said "Gavel's table" for any)."""
    from hsched_cli.main import main
    assert main(["candidates", "--model", "recommendation", "--cluster", "gavel-108",
                 "--throughputs", "gavel"]) == 0
    out = capsys.readouterr().out
    rows = [ln for ln in out.splitlines() if ln.strip()[:1].isdigit()]
    assert any(ln.rstrip().split()[-2].endswith("~") for ln in rows)
    assert any(ln.rstrip().split()[-2].endswith("*") for ln in rows)
    assert "~ predicted by the analytic cost model and scaled by Gavel's table" in out
    table = tmp_path / "mine.json"
    table.write_text('{"v100": {"(\'ResNet-50 (batch size 64)\', 1)": {"null": 3.0}}}')
    assert main(["candidates", "--model", "resnet50", "--cluster", "gavel-108",
                 "--throughputs", str(table)]) == 0
    out = capsys.readouterr().out
    assert f"* measured (the table {table}, 1 row(s))" in out and "Gavel's" not in out
    assert main(["candidates", "--model", "llama2-7b", "--cluster", "sia-64",
                 "--throughputs", "gavel"]) == 0
    assert "no row is measured in Gavel's table or scaled by it" in capsys.readouterr().out


def test_no_candidate_because_the_table_measures_zero_says_so(capsys, tmp_path):
    """Every set the model fits on measured at 0 steps/s: the reason is the table, not memory
    (it said the activations did not fit, beside 7.4 GB used of 16)."""
    from hsched_cli.main import main
    cluster = tmp_path / "v100x4.yaml"
    cluster.write_text("nodes:\n  - gpu_type: V100-16GB\n    gpus_per_node: 4\n"
                       "    count: 1\n")
    table = tmp_path / "zeros.json"
    table.write_text(json.dumps({"v100": {f"('ResNet-50 (batch size 64)', {n})": {"null": 0.0}
                                          for n in (1, 2, 4)}}))
    assert main(["candidates", "--model", "resnet50", "--cluster", str(cluster),
                 "--throughputs", str(table)]) == 0
    out = capsys.readouterr().out
    assert "0 candidates" in out and f"the table {table} measures their resource sets" in out
    assert "activations" not in out


def test_rows_on_pools_of_one_gpu_type_name_their_pool(capsys, tmp_path):
    """Two pools of A100s (other node sizes and networks): each row names its pool (rows 5
    and 6 read alike, character for character)."""
    from hsched_cli.main import main
    cluster = tmp_path / "same.yaml"
    cluster.write_text("nodes:\n"
                       "  - {gpu_type: A100-80GB, gpus_per_node: 8, count: 2}\n"
                       "  - {gpu_type: A100-80GB, gpus_per_node: 4, count: 3,"
                       " inter_node_bw_gbps: 1.25}\n")
    assert main(["candidates", "--model", "llama2-7b", "--cluster", str(cluster)]) == 0
    rows = [ln for ln in capsys.readouterr().out.splitlines() if ln.strip()[:1].isdigit()]
    assert rows and all("(a100-80gb-x8)" in ln or "(a100-80gb-x4)" in ln for ln in rows)
    assert len({ln.split(None, 1)[1] for ln in rows}) == len(rows)      # no two rows alike


def test_odd_throughput_source_names_and_tiny_rounds():
    from hsched_env.simulator import SimConfig
    from hsched_env.throughput import get_throughput_source
    with pytest.raises(HSchedError, match="throughput source"):
        get_throughput_source("x" * 5000)                  # too long for the OS
    with pytest.raises(HSchedError, match="round length"):
        SimConfig(round_s=1e-300)


def test_a_throughput_path_that_is_not_a_table_file_says_why(tmp_path, capsys):
    """``--throughputs`` naming a folder, a broken link, a missing file or an empty table:
    exit 2 with what is wrong with that path."""
    from hsched_cli.main import main
    (tmp_path / "empty.json").write_text("{}")
    (tmp_path / "link.json").symlink_to(tmp_path / "gone.json")
    cases = {str(tmp_path): "a folder, not a file",
             str(tmp_path / "link.json"): "a broken link",
             str(tmp_path / "missing.json"): "no such file",
             str(tmp_path / "empty.json"): "the table is empty"}
    from hsched_env.throughput import get_throughput_source
    for path, why in cases.items():
        assert main(["simulate", "--cluster", "gavel-108", "--throughputs", path,
                     "--workload", "gavel:jobs=3", "--policy", "fifo"]) == 2
        assert why in capsys.readouterr().err, path
        with pytest.raises(HSchedError, match=why):           # the Python API says the same
            get_throughput_source(path)
