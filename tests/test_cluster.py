"""Tests for hsched_env.cluster: presets, derived arrays, file loading and validation."""

from __future__ import annotations

import json
import math
import pickle
import re
from pathlib import Path

import numpy as np
import pytest

from hsched_env.catalog import get_gpu, gpu_catalog
from hsched_env.cluster import (
    DEFAULT_INTER_NODE_BW_GBPS,
    MAX_GPUS_PER_NODE,
    Cluster,
    NodePool,
    cluster_from_dict,
    cluster_presets,
    get_cluster,
    load_cluster,
)
from hsched_env.errors import ConfigError, UnknownNameError

PRESETS = ["tiny-8", "gavel-108", "sia-64", "modern-512", "large-2048", "huge-10k"]

GOOD_YAML = """\
# a small lab
name: my-lab
inter_node_bw_gbps: 12.5
nodes:
  - gpu_type: a100-80gb
    gpus_per_node: 8
    count: 2
    inter_node_bw_gbps: 200
  - gpu_type: T4
    gpus_per_node: 4
    count: 3
    intra_node_bw_gbps: 16
"""


def write(tmp_path: Path, name: str, text: str | bytes) -> Path:
    p = tmp_path / name
    if isinstance(text, bytes):
        p.write_bytes(text)
    else:
        p.write_text(text, encoding="utf-8")
    return p


def good_dict() -> dict:
    return {
        "name": "d",
        "nodes": [
            {"gpu_type": "V100-16GB", "gpus_per_node": 4, "count": 2},
            {"gpu_type": "K80", "gpus_per_node": 8, "count": 1},
        ],
    }


# ------------------------------------------------------------------------------------------
# Presets
# ------------------------------------------------------------------------------------------

def test_preset_names():
    assert sorted(cluster_presets()) == sorted(PRESETS)


@pytest.mark.parametrize("name", PRESETS)
def test_every_preset_loads_and_is_consistent(name):
    c = get_cluster(name)
    assert c.name == name
    assert c.description, "presets document their sources"
    assert c.num_gpus == sum(p.gpus_per_node * p.num_nodes for p in c.pools)
    assert c.num_nodes == sum(p.num_nodes for p in c.pools)
    catalog = gpu_catalog()
    for p in c.pools:
        assert p.gpu_type in catalog
        assert 1 <= p.gpus_per_node <= MAX_GPUS_PER_NODE
        assert p.inter_bw_gbps > 0 and p.intra_bw_gbps > 0
    assert c.describe().count("\n") >= len(c.pools) + 3


def test_gavel_108():
    c = get_cluster("gavel-108")
    assert c.capacity == {"V100-16GB": 36, "P100": 36, "K80": 36}
    assert c.num_gpus == 108 and c.num_nodes == 27
    assert set(c.node_gpus.tolist()) == {4}
    assert np.allclose(c.node_inter_bw_gbps, 1.25)  # 10 Gb/s


def test_sia_64():
    c = get_cluster("sia-64")
    assert c.num_gpus == 64
    assert c.capacity == {"T4": 24, "RTX2080Ti": 24, "A100-40GB": 16}
    by_type = {p.gpu_type: p for p in c.pools}
    assert (by_type["T4"].gpus_per_node, by_type["T4"].num_nodes) == (4, 6)
    assert (by_type["RTX2080Ti"].gpus_per_node, by_type["RTX2080Ti"].num_nodes) == (8, 3)
    assert (by_type["A100-40GB"].gpus_per_node, by_type["A100-40GB"].num_nodes) == (8, 2)
    assert by_type["T4"].inter_bw_gbps == pytest.approx(50 / 8)
    assert by_type["A100-40GB"].inter_bw_gbps == pytest.approx(8 * 200 / 8)  # 1.6 Tb/s


def test_modern_512():
    c = get_cluster("modern-512")
    assert c.num_gpus == 512
    assert {"H100-SXM", "A100-80GB", "L4", "V100-32GB"} <= set(c.gpu_types)


def test_large_2048():
    c = get_cluster("large-2048")
    assert c.num_gpus == 2048
    assert c.num_types >= 4
    assert int(c.capacity_vec.sum()) == 2048


def test_tiny_8():
    c = get_cluster("tiny-8")
    assert c.capacity == {"V100-16GB": 4, "T4": 4}
    assert c.num_nodes == 2


def test_preset_lookup_is_case_insensitive_and_cached():
    assert get_cluster("SIA-64") == get_cluster("sia-64")
    assert get_cluster("  Gavel-108 ").num_gpus == 108


def test_unknown_preset_lists_presets():
    with pytest.raises(UnknownNameError) as ei:
        get_cluster("sia-65")
    msg = str(ei.value)
    assert "sia-65" in msg
    for name in PRESETS:
        assert name in msg
    assert isinstance(ei.value, ConfigError) and isinstance(ei.value, KeyError)
    assert sorted(ei.value.valid) == sorted(PRESETS)


def test_missing_file_path_is_unknown_name(tmp_path):
    with pytest.raises(UnknownNameError, match="no such file"):
        get_cluster(str(tmp_path / "nope.yaml"))


# ------------------------------------------------------------------------------------------
# Derived arrays
# ------------------------------------------------------------------------------------------

def test_derived_arrays_match_pools():
    c = Cluster("mix", (
        NodePool("T4", 4, 2),
        NodePool("A100-80GB", 8, 3, inter_bw_gbps=200.0),
        NodePool("T4", 2, 1, name="t4-small"),
    ))
    assert c.gpu_types == ("T4", "A100-80GB")
    assert c.capacity == {"T4": 10, "A100-80GB": 24}
    assert c.capacity_vec.tolist() == [10, 24]
    assert c.num_gpus == 34 and c.num_nodes == 6 and c.num_types == 2
    assert c.pool_type.tolist() == [0, 1, 0]
    assert c.pool_first_node.tolist() == [0, 2, 5, 6]
    assert c.node_pool.tolist() == [0, 0, 1, 1, 1, 2]
    assert c.node_type.tolist() == [0, 0, 1, 1, 1, 0]
    assert c.node_gpus.tolist() == [4, 4, 8, 8, 8, 2]
    assert c.node_inter_bw_gbps.tolist() == [12.5, 12.5, 200.0, 200.0, 200.0, 12.5]
    assert c.node_intra_bw_gbps[2] == pytest.approx(get_gpu("A100-80GB").link_bw_gbps)
    # capacity by type agrees with the per-node arrays
    per_type = np.bincount(c.node_type, weights=c.node_gpus, minlength=c.num_types)
    assert per_type.tolist() == c.capacity_vec.tolist()
    assert c.type_index("a100-80gb") == 1 and c.type_index("T4") == 0
    with pytest.raises(UnknownNameError):
        c.type_index("H100-SXM")


@pytest.mark.parametrize("name", PRESETS)
def test_preset_arrays_consistent(name):
    c = get_cluster(name)
    n = c.num_nodes
    for arr in (c.node_pool, c.node_type, c.node_gpus, c.node_inter_bw_gbps,
                c.node_intra_bw_gbps):
        assert arr.shape == (n,)
    assert np.all(np.diff(c.node_pool) >= 0)  # nodes numbered pool by pool
    assert np.array_equal(c.node_type, c.pool_type[c.node_pool])
    assert int(c.node_gpus.sum()) == c.num_gpus
    for t, gpu_type in enumerate(c.gpu_types):
        assert c.capacity[gpu_type] == int(c.node_gpus[c.node_type == t].sum())
    assert len(set(c.gpu_types)) == len(c.gpu_types)


def test_arrays_are_read_only_and_cluster_is_immutable():
    c = get_cluster("tiny-8")
    for arr in (c.capacity_vec, c.node_pool, c.node_type, c.node_gpus, c.pool_type):
        with pytest.raises(ValueError):
            arr[0] = 99
    with pytest.raises(AttributeError):
        c.name = "x"  # type: ignore[misc]
    cap = c.capacity
    cap["T4"] = 1000
    assert c.capacity["T4"] == 4
    hash(c)


def test_pickle_round_trip():
    c = get_cluster("sia-64")
    c2 = pickle.loads(pickle.dumps(c))
    assert c2 == c and c2.capacity == c.capacity
    assert np.array_equal(c2.node_type, c.node_type)


# ------------------------------------------------------------------------------------------
# NodePool
# ------------------------------------------------------------------------------------------

def test_nodepool_defaults_and_alias():
    p = NodePool("a100-80gb", 8, 2)
    assert p.gpu_type == "A100-80GB"
    assert p.name == "a100-80gb-x8"
    assert p.intra_bw_gbps == pytest.approx(get_gpu("A100-80GB").link_bw_gbps)
    assert p.inter_bw_gbps == DEFAULT_INTER_NODE_BW_GBPS == 12.5
    assert p.num_gpus == 16


@pytest.mark.parametrize("kwargs", [
    {"gpus_per_node": 0}, {"gpus_per_node": -1}, {"gpus_per_node": 2.5},
    {"gpus_per_node": MAX_GPUS_PER_NODE + 1}, {"num_nodes": 0}, {"num_nodes": True},
    {"inter_bw_gbps": 0.0}, {"inter_bw_gbps": math.nan}, {"intra_bw_gbps": -3.0},
    {"intra_bw_gbps": math.inf},
])
def test_nodepool_rejects_bad_values(kwargs):
    args = {"gpu_type": "T4", "gpus_per_node": 4, "num_nodes": 1} | kwargs
    with pytest.raises(ConfigError):
        NodePool(**args)


def test_cluster_rejects_duplicate_pool_names_and_no_pools():
    with pytest.raises(ConfigError, match="duplicate pool name"):
        Cluster("c", (NodePool("T4", 4, 1), NodePool("T4", 4, 2)))
    with pytest.raises(ConfigError, match="at least one"):
        Cluster("c", ())
    for pools in (None, 5, "T4"):          # None was a raw TypeError (session 51's audit)
        with pytest.raises(ConfigError, match="sequence of NodePool") as err:
            Cluster("c", pools)
        assert err.value.field == "nodes"
    assert Cluster("c", (NodePool("T4", 4, 1),), description=None).description == ""
    for description in (5, ["x"]):         # a file's is checked; Python's was taken
        with pytest.raises(ConfigError, match="description must be a string") as err:
            Cluster("c", (NodePool("T4", 4, 1),), description=description)
        assert err.value.field == "description"


# ------------------------------------------------------------------------------------------
# Files and dicts
# ------------------------------------------------------------------------------------------

def test_yaml_file_loads(tmp_path):
    path = write(tmp_path, "lab.yaml", GOOD_YAML)
    c = load_cluster(path)
    assert c.name == "my-lab"
    assert c.capacity == {"A100-80GB": 16, "T4": 12}
    a100, t4 = c.pools
    assert a100.inter_bw_gbps == 200.0 and t4.inter_bw_gbps == 12.5
    assert t4.intra_bw_gbps == 16.0
    assert a100.intra_bw_gbps == pytest.approx(get_gpu("A100-80GB").link_bw_gbps)
    assert get_cluster(str(path)) == c
    assert get_cluster(path) == c  # a Path works too


def test_yml_name_defaults_to_stem_and_default_bw(tmp_path):
    text = "nodes:\n  - {gpu_type: v100-32gb, gpus_per_node: 8, count: 1}\n"
    c = load_cluster(write(tmp_path, "small-lab.yml", text))
    assert c.name == "small-lab"
    assert c.gpu_types == ("V100-32GB",)
    assert c.pools[0].inter_bw_gbps == DEFAULT_INTER_NODE_BW_GBPS


def test_json_file_loads(tmp_path):
    d = good_dict() | {"inter_node_bw_gbps": 3.125}
    c = load_cluster(write(tmp_path, "c.json", json.dumps(d)))
    assert c.capacity == {"V100-16GB": 8, "K80": 8}
    assert np.allclose(c.node_inter_bw_gbps, 3.125)


def test_auto_pool_names_are_unique():
    d = {"nodes": [{"gpu_type": "T4", "gpus_per_node": 4, "count": 1},
                   {"gpu_type": "T4", "gpus_per_node": 4, "count": 2,
                    "inter_node_bw_gbps": 6.25}]}
    c = cluster_from_dict(d, default_name="x")
    assert [p.name for p in c.pools] == ["t4-x4", "t4-x4-2"]


@pytest.mark.parametrize("name", PRESETS)
def test_to_dict_round_trip(name, tmp_path):
    c = get_cluster(name)
    d = c.to_dict()
    c2 = cluster_from_dict(d)
    assert c2 == c
    assert c2.description == c.description
    assert c2.to_dict() == d
    # and through a JSON file
    c3 = load_cluster(write(tmp_path, "rt.json", json.dumps(d)))
    assert c3 == c


def test_to_dict_round_trip_yaml(tmp_path):
    yaml = pytest.importorskip("yaml")
    c = load_cluster(write(tmp_path, "lab.yaml", GOOD_YAML))
    c2 = load_cluster(write(tmp_path, "again.yaml", yaml.safe_dump(c.to_dict())))
    assert c2 == c


# ------------------------------------------------------------------------------------------
# Validation errors: each names the file and the field
# ------------------------------------------------------------------------------------------

def _yaml_with(node_extra: str = "", *, gpu="A100-80GB", gpn="8", count="2", top="") -> str:
    return (f"name: lab\n{top}nodes:\n"
            f"  - gpu_type: T4\n    gpus_per_node: 4\n    count: 1\n"
            f"  - gpu_type: {gpu}\n    gpus_per_node: {gpn}\n    count: {count}\n"
            f"{node_extra}")


def expect_error(tmp_path, text, field, *, line=None, fname="bad.yaml", match=None,
                 exc=ConfigError):
    path = write(tmp_path, fname, text)
    with pytest.raises(exc) as ei:
        load_cluster(path)
    err = ei.value
    msg = str(err)
    assert str(path) in msg, msg
    if field is not None:
        assert err.field == field, msg
        assert field in msg, msg
    if line is not None:
        assert err.line == line, msg
        assert f"{path}:{line}" in msg, msg
    if match is not None:
        assert match in msg, msg
    return err


def test_error_unknown_gpu_type_lists_valid_names(tmp_path):
    err = expect_error(tmp_path, _yaml_with(gpu="A200"), "nodes[1].gpu_type", line=6,
                       exc=UnknownNameError, match="A200")
    msg = str(err)
    for name in ("A100-80GB", "H100-SXM", "T4", "K80"):
        assert name in msg


@pytest.mark.parametrize("gpn", ["0", "-4", "2.5", "'8'", "true", "17"])
def test_error_bad_gpus_per_node(tmp_path, gpn):
    expect_error(tmp_path, _yaml_with(gpn=gpn), "nodes[1].gpus_per_node", line=7)


@pytest.mark.parametrize("count", ["0", "-1", "1.5", "many", "null"])
def test_error_bad_count(tmp_path, count):
    expect_error(tmp_path, _yaml_with(count=count), "nodes[1].count", line=8)


@pytest.mark.parametrize("bw", ["0", "-12.5", ".nan", ".inf", "'100Gbps'", "[1, 2]",
                                # below 1 MB/s: 1e-320 made the cost model's times inf and a
                                # job run for ever at 0 samples/s (session 51's input audit)
                                "1.0e-320", "0.0009"])
def test_error_bad_pool_bandwidth(tmp_path, bw):
    expect_error(tmp_path, _yaml_with(f"    inter_node_bw_gbps: {bw}\n"),
                 "nodes[1].inter_node_bw_gbps", line=9)
    expect_error(tmp_path, _yaml_with(f"    intra_node_bw_gbps: {bw}\n"),
                 "nodes[1].intra_node_bw_gbps", line=9)


def test_error_bad_top_level_bandwidth(tmp_path):
    err = expect_error(tmp_path, _yaml_with(top="inter_node_bw_gbps: fast\n"),
                       "inter_node_bw_gbps", line=2)
    assert "12.5 GB/s" in str(err)  # the unit hint


def test_error_missing_nodes(tmp_path):
    expect_error(tmp_path, "name: lab\ninter_node_bw_gbps: 12.5\n", "nodes", match="missing")


def test_error_empty_nodes(tmp_path):
    expect_error(tmp_path, "name: lab\nnodes: []\n", "nodes", line=2, match="empty")


def test_error_nodes_not_a_list(tmp_path):
    expect_error(tmp_path, "nodes:\n  gpu_type: T4\n", "nodes", line=2)


def test_error_missing_pool_key(tmp_path):
    text = "nodes:\n  - gpu_type: T4\n    count: 2\n"
    expect_error(tmp_path, text, "nodes[0].gpus_per_node", line=2, match="missing")


def test_error_unknown_pool_key_typo(tmp_path):
    text = "nodes:\n  - gpu_type: T4\n    gpus_per_nod: 4\n    count: 2\n"
    err = expect_error(tmp_path, text, "nodes[0].gpus_per_nod", line=3)
    assert "gpus_per_nod" in str(err) and "did you mean 'gpus_per_node'" in str(err)


def test_error_unknown_top_level_key(tmp_path):
    text = "name: x\ninter_node_bw: 12.5\nnodes:\n  - {gpu_type: T4, gpus_per_node: 4, count: 1}\n"
    err = expect_error(tmp_path, text, "inter_node_bw", line=2)
    assert "inter_node_bw_gbps" in str(err)


def test_error_duplicate_key(tmp_path):
    text = "nodes:\n  - gpu_type: T4\n    gpus_per_node: 4\n    count: 1\n    count: 2\n"
    expect_error(tmp_path, text, "nodes[0].count", line=5, match="duplicate")


def test_error_pool_not_a_mapping(tmp_path):
    expect_error(tmp_path, "nodes:\n  - T4\n", "nodes[0]", line=2)


@pytest.mark.parametrize("text", ["- a\n- b\n", "just a string\n", "42\n"])
def test_error_not_a_mapping(tmp_path, text):
    expect_error(tmp_path, text, None, match="mapping")


@pytest.mark.parametrize("text", ["", "   \n\n", "# only a comment\n"])
def test_error_empty_file(tmp_path, text):
    expect_error(tmp_path, text, None, match="no data" if "#" in text else "empty")


def test_error_non_utf8(tmp_path):
    raw = "name: lab\nnodes:\n  - gpu_type: T4  # caf".encode() + b"\xe9\n"
    expect_error(tmp_path, raw, None, line=3, match="UTF-8")


def test_error_invalid_yaml_syntax(tmp_path):
    text = "name: lab\nnodes:\n  - gpu_type: T4\n    gpus_per_node: [4\n    count: 1\n"
    err = expect_error(tmp_path, text, None, match="invalid YAML")
    assert err.line is not None and err.line >= 4


def test_error_invalid_json(tmp_path):
    expect_error(tmp_path, '{"nodes": [}\n', None, fname="bad.json", line=1,
                 match="invalid JSON")


def test_error_json_field_named(tmp_path):
    d = good_dict()
    d["nodes"][1]["count"] = 0
    expect_error(tmp_path, json.dumps(d), "nodes[1].count", fname="bad.json")


def test_error_unsupported_extension_and_missing_file(tmp_path):
    with pytest.raises(ConfigError, match="extension"):
        load_cluster(write(tmp_path, "c.toml", "x = 1\n"))
    with pytest.raises(ConfigError, match="no such file"):
        load_cluster(tmp_path / "missing.yaml")


def test_yaml_is_loaded_safely(tmp_path):
    text = "nodes: !!python/object/apply:os.system ['echo pwned']\n"
    expect_error(tmp_path, text, None, match="invalid YAML")


def test_cluster_from_dict_errors_name_source():
    d = good_dict()
    d["nodes"][0]["gpu_type"] = "V1000"
    with pytest.raises(UnknownNameError) as ei:
        cluster_from_dict(d, source="my-source")
    assert "my-source" in str(ei.value) and "nodes[0].gpu_type" in str(ei.value)
    with pytest.raises(ConfigError, match="mapping"):
        cluster_from_dict([1, 2], source="s")  # type: ignore[arg-type]


def test_yaml_exponent_read_as_text_gets_a_hint(tmp_path):
    """YAML 1.1 reads 1.6e3 (no sign in the exponent) as a string."""
    p = write(tmp_path, "e3.yaml", "name: e3\nnodes:\n  - {gpu_type: A100-80GB, gpus_per_node: 8, "
                                    "count: 2, inter_node_bw_gbps: 1.6e3}\n")
    with pytest.raises(ConfigError, match=r"write it as 1600"):
        get_cluster(str(p))


@pytest.mark.parametrize("written,advice", [("1e-5", "0.00001"), ("1.0e300", "1.0e+300")])
def test_the_yaml_exponent_hint_is_a_number_yaml_reads(tmp_path, written, advice):
    """The advice itself must read as a number (``1e-05`` is text to YAML too) and stay short
    (``1.0e300`` was advised as 301 digits)."""
    import yaml
    p = write(tmp_path, "e.yaml", "name: e\nnodes:\n  - {gpu_type: A100-80GB, gpus_per_node: 8, "
                                  f"count: 2, inter_node_bw_gbps: {written}}}\n")
    with pytest.raises(ConfigError, match=rf"write it as {re.escape(advice)} ") as err:
        get_cluster(str(p))
    assert isinstance(yaml.safe_load(f"x: {advice}")["x"], float) and len(str(err.value)) < 400


def test_load_cluster_of_a_preset_name_points_to_get_cluster():
    from hsched_env.cluster import load_cluster
    with pytest.raises(ConfigError, match="get_cluster"):
        load_cluster("sia-64")


def test_get_cluster_of_a_path_named_like_a_preset_says_a_path_is_a_file(tmp_path,
                                                                         monkeypatch):
    """``get_cluster(Path("tiny-8"))`` said "unknown cluster 'tiny-8'; valid: …, tiny-8":
    a Path is read as a file, which the message now says, with the string form to use."""
    monkeypatch.chdir(tmp_path)
    with pytest.raises(UnknownNameError) as exc:        # still the KeyError it was
        get_cluster(Path("Tiny-8"))
    msg = str(exc.value)
    assert exc.value.field == "cluster" and "no cluster file 'Tiny-8' (no such file;" in msg
    assert "a path is read as a cluster file" in msg and "get_cluster('tiny-8')" in msg
    assert get_cluster("Tiny-8").name == "tiny-8"                  # the string is the preset
    with pytest.raises(ConfigError,
                       match=r"unknown cluster 'tiny-9' \(did you mean 'tiny-8'\?\); valid:"):
        get_cluster(Path("tiny-9"))


def test_quoted_plain_number_gets_no_yaml_exponent_hint(tmp_path):
    p = write(tmp_path, "q.yaml", 'name: q\nnodes:\n  - {gpu_type: A100-80GB, gpus_per_node: 8, '
                                  'count: 2, inter_node_bw_gbps: "100"}\n')
    with pytest.raises(ConfigError) as exc:
        get_cluster(str(p))
    assert "must be a number" in str(exc.value) and "YAML reads" not in str(exc.value)


def test_cluster_yaml_numbers_are_plain_decimals(tmp_path):
    """YAML 1.1 reads 010 as octal 8 and 1_0 as 10: refused with the line, not read so."""
    from hsched_env.cluster import load_cluster
    from hsched_env.errors import ConfigError
    for value, reads in (("010", "8"), ("1_0", "10"), ("0x8", "8")):
        path = tmp_path / "c.yaml"
        path.write_text(f"name: c\nnodes:\n  - gpu_type: V100\n    count: {value}\n"
                        f"    gpus_per_node: 4\n", encoding="utf-8")
        with pytest.raises(ConfigError, match=f"'{value}' is not a plain decimal number "
                                              f"\\(YAML reads it as {reads}\\)") as err:
            load_cluster(path)
        assert err.value.line == 4
