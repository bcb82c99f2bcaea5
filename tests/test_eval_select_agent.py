"""scripts/eval_select_agent.py's report: a figure a run does not have (NaN: the makespan of a
run that did not finish every job) is ``n/a`` in the table and ``null`` in the JSON."""

from __future__ import annotations

import importlib.util
import json
import math
from pathlib import Path

SCRIPT = Path(__file__).resolve().parents[1] / "scripts" / "eval_select_agent.py"


def _load():
    spec = importlib.util.spec_from_file_location("eval_select_agent", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_missing_figures_are_null_in_json_and_na_in_the_table():
    script = _load()
    row = {"policy": "pure-lp", "avg_jct_h": 2.5, "makespan_h": math.nan,
           "ftf_worst": math.inf, "done": "3/4"}
    shown = script.json_ready(row)
    assert shown == {"policy": "pure-lp", "avg_jct_h": 2.5, "makespan_h": None,
                     "ftf_worst": None, "done": "3/4"}
    assert json.loads(json.dumps(shown, allow_nan=False)) == shown
    assert script._shown(math.nan, 10, 1) == "       n/a"
    assert script._shown(12.345, 10, 1) == "      12.3"
