"""A policy wrapper for tests: keeps every view and decision of a simulation."""

from __future__ import annotations


class Recorder:
    """Wraps a policy, keeping every view and decision (``check(view, out)`` may assert)."""

    def __init__(self, inner):
        self.inner, self.name = inner, inner.name
        self.views, self.decisions = [], []

    def reset(self, cluster, seed):
        self.inner.reset(cluster, seed)

    @property
    def last_stats(self):
        return self.inner.last_stats

    def summary(self):
        return getattr(self.inner, "summary", dict)()

    def check(self, view, out) -> None:
        """Override to assert something about each decision."""

    def decide(self, view):
        out = self.inner.decide(view)
        self.check(view, out)
        self.views.append(view)
        self.decisions.append(out)
        return out
