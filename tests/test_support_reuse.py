"""``support-reuse`` (``lp_baseline.support_reuse``): the LP over each job's previous support,
current, fastest and best-scored candidates, with a full solve every ``full_every`` rounds."""

from __future__ import annotations

import numpy as np
import pytest

from hsched_env.errors import ConfigError
from lp_baseline.policy import LPPolicy
from lp_baseline.registry import make_policy
from lp_baseline.support_reuse import SupportReusePolicy

SPEC = "gavel:rate=4,jobs=25,seed=3"


def test_full_every_round_is_the_pure_lp(simulate):
    _, pure = simulate(make_policy("heterosched-lp"), SPEC)
    _, reuse = simulate(SupportReusePolicy(LPPolicy("support-reuse"), full_every=1), SPEC)
    assert reuse.metrics()["avg_jct_s"] == pure.metrics()["avg_jct_s"]
    assert [r.finish_s for r in reuse.jobs] == [r.finish_s for r in pure.jobs]


class _Spy(SupportReusePolicy):
    """Records, per round, the rows the LP solved over and whether the round was full."""

    def decide(self, view):
        full_before = self._full_solves
        out = super().decide(view)
        self.log.append((view, [r.copy() for r in self.solver_rows(view)],
                         self._full_solves > full_before, out))
        return out


def test_pruned_rounds_solve_over_the_previous_support(simulate):
    policy = _Spy(LPPolicy("support-reuse"), full_every=4)
    policy.log = []
    _, result = simulate(policy, SPEC)
    assert result.metrics()["jobs_completed"] == 25
    fulls = [full for _, _, full, _ in policy.log]
    assert fulls[0] and fulls[:8] == [True, False, False, False, True, False, False, False]
    assert policy.summary()["full_solves"] == sum(fulls)
    pruned = 0
    for i, (view, rows, full, _) in enumerate(policy.log):
        sizes = [len(t) for t in view.candidates]
        if full:
            assert [r.size for r in rows] == sizes
            continue
        prev_view, _, _, prev_out = policy.log[i - 1]
        for k, j in enumerate(view.job_ids):
            table = view.candidates[k]
            per_gpu = table.samples_per_s / np.maximum(table.num_gpus, 1)
            assert int(np.argmax(per_gpu)) in rows[k]          # best by score
            if view.current[k] >= 0:
                assert view.current[k] in rows[k]              # what it runs
            if int(j) in prev_out:                             # last round's first choice
                first = prev_out[int(j)]
                first = first if np.ndim(first) == 0 else first[0]
                assert int(first) in rows[k]
        pruned += sum(r.size for r in rows) < sum(sizes)
    assert pruned > 0                                          # it did prune


def test_registered_and_validated():
    p = make_policy("support-reuse")
    assert isinstance(p, SupportReusePolicy) and p.name == "support-reuse"
    assert p.full_every == 12
    with pytest.raises(ConfigError) as e:
        SupportReusePolicy(LPPolicy(), full_every=0)
    assert e.value.field == "full_every"
    with pytest.raises(RuntimeError):
        SupportReusePolicy(LPPolicy()).solver_rows(None)
