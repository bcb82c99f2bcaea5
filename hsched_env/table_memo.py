"""``TableMemo``: a cache of what a job's candidate table alone determines (a simulator's
per-row data, a policy's per-table preferences).

Entries are keyed by ``id(table)`` and hold the table itself next to the value, so an id is
never reused while its entry lives and a hit is checked with ``is``. A copy or an unpickled
owner starts with an empty memo: copying it would copy every cached candidate table (the
rank environment deep-copies its LP every round), and its ids would not match the copy's
tables anyway.
"""

from __future__ import annotations


class TableMemo(dict):
    """``{key: (table, value)}`` with ``key`` starting with ``id(table)`` (see the module
    docstring); ``get_for(table, key, make)`` returns the value, computing it on a miss."""

    def get_for(self, table, key, make):
        hit = self.get(key)
        if hit is None or hit[0] is not table:
            hit = self[key] = (table, make())
        return hit[1]

    def __deepcopy__(self, memo) -> "TableMemo":
        return type(self)()

    def __copy__(self) -> "TableMemo":
        return type(self)()

    def __reduce__(self):
        return type(self), ()
