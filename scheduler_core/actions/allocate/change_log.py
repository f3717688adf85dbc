"""allocate's log of the node rows changed since the action started (placements, releases, and
changes that may touch every row), so cached class states catch up with what changed."""

from __future__ import annotations

import numpy as np


class ChangeLog:
    """Rows changed since the action started, so cached class states catch up cheaply.

    An entry is a row that got a task (>= 0), ALL when a change may affect every row (pod
    affinity), or `-(row + 2)` for a row that lost one (a discarded placement).
    """

    ALL = -1

    def __init__(self, n: int = 0) -> None:
        """`n`: the NodeTable's rows (`last` holds an entry for each from the start)."""
        self.rows: list[int] = []
        # Per row, the log position of its latest entry (-1 = none), so a class finds the
        # distinct rows changed since position p with one numpy comparison, whatever the
        # log's length; plus the latest positions of an ALL and of a released entry.
        self.last = np.full(n, -1, dtype=np.int64)
        self.last_all = -1
        self.last_released = -1

    def add(self, row: int, released: bool = False) -> None:
        """Record one changed row (or ChangeLog.ALL); `released` when a task left it."""
        pos = len(self.rows)
        self.rows.append(-(row + 2) if released else row)
        if row == ChangeLog.ALL:
            self.last_all = pos
            return
        if row >= len(self.last):
            grown = np.full(max(row + 1, 2 * len(self.last), 64), -1, dtype=np.int64)
            grown[:len(self.last)] = self.last
            self.last = grown
        self.last[row] = pos
        if released:
            self.last_released = pos

    def changed_since(self, pos: int, n: int) -> np.ndarray:
        """Distinct rows (< n, ascending) with an entry at a position >= pos."""
        return np.flatnonzero(self.last[:n] >= pos)
