"""The Gavel-style rounding's per-job shortcuts give what the plain computations give: a job's
other candidates filtered once per (rows, exclusions) and reused, each row's GPUs as
(type, count) pairs, and the preference list copied whole when its first row is taken."""

from __future__ import annotations

import numpy as np
import pytest

from lp_baseline import rounding
from lp_baseline.policy import LPPolicy
from lp_baseline.registry import make_policy


def test_others_memo_gives_the_plain_filter_for_every_exclusion(monkeypatch, simulate):
    memoized = LPPolicy._others
    seen = {"calls": 0, "exclusions": set()}

    def both(self, view, k, exclude, allowed=None):
        got = memoized(self, view, k, exclude, allowed)
        table, eligible = view.candidates[k], self._eligible(view, k, allowed)
        plain = rounding.other_candidates(table, eligible, exclude)
        assert got == plain and all(type(c) is int for c in got)
        again = memoized(self, view, k, exclude, allowed)        # a hit: the same list
        assert again is got
        seen["calls"] += 1
        seen["exclusions"].add((id(table), tuple(exclude)))
        return got

    monkeypatch.setattr(LPPolicy, "_others", both)
    simulate(make_policy("gavel"), "gavel:rate=6,jobs=60,seed=3,multi_gpu=1", "gavel-108",
             max_time_s=60 * 300.0)
    # exercised with several exclusions per table (the memo must key on them)
    assert seen["calls"] >= 100
    per_table = {}
    for t, ex in seen["exclusions"]:
        per_table.setdefault(t, set()).add(ex)
    assert max(len(v) for v in per_table.values()) >= 2


class _Table:
    def __init__(self, gpus):
        self.gpus = np.asarray(gpus, dtype=np.int64)


def test_row_needs_lists_each_used_type():
    needs = rounding._row_needs(_Table([[0, 2, 0], [1, 0, 3], [0, 0, 0]]))
    assert needs == [((1, 2),), ((0, 1), (2, 3)), ()]
    assert all(type(n) is int for row in needs for pair in row for n in pair)


@pytest.mark.parametrize("prefs,taken,expected", [
    ([4, 2, 7], 4, [4, 2, 7]),
    ([4, 2, 4, 7], 4, [4, 2, 7]),           # a repeated first row is listed once
    ([4, 2, 7], 2, [2, 4, 7])])
def test_taking_a_row_lists_it_first_then_the_rest(prefs, taken, expected):
    dry = rounding.PlacementDryRun.__new__(rounding.PlacementDryRun)
    got = dry._took([3, 1], ((0, 1),), taken, prefs)
    assert got == expected and got is not prefs
    assert dry.free == [2, 1]
