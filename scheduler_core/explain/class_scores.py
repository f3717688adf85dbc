"""allocate's recorded tries built from its class state, once per class rather than per task.

Tasks of one class on one snapshot state share the class's score vectors
(`actions.allocate.placement.ClassState`); a placement changes only the row it used (local
classes), so the next task's top list differs from the previous one by that row. `RowCache`
keeps, per class, each row's `NodeScore` (total, per-plugin parts, pipelined) with the
change-log position it was computed at; a try ranks the class's figures, and only rows whose
log entry, total or group changed since get their parts computed again (one plugin call per
row, usually the row of the latest placement alone). The entries are shared between the tries
(frozen), so a try costs the ranking and a list of references.

A run of identical tasks (`ClassState.run_length`) is recorded without asking the class again:
copy j of the run sees row r with j copies placed (its total and parts are taken while the run
probe has written that state into the row) and every other row as the run's first task saw it.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:
    from scheduler_core.explain.node_scores import NodeScore
    from scheduler_core.framework.session import Session
    from scheduler_core.model import TaskInfo

_NEG = -np.inf
# Up to this many rows' parts are computed one by one in plain floats (as the placement does).
ROW_BY_ROW = 8


def row_parts(ssn: Session, task: TaskInfo, row: int) -> dict[str, float]:
    """`ssn.node_score_parts` for a mask holding only `row`, in plain floats when every scorer
    has a row function (the same path as `Session.node_row_score`)."""
    fns = ssn.row_score_fns()
    if all(fn is not None for _, fn in fns):
        out: dict[str, float] = {}
        for name, fn in fns:
            out[name] = out.get(name, 0.0) + fn(task, row)  # type: ignore[misc]
        return out
    mask = np.zeros(len(ssn.node_table), dtype=bool)
    mask[row] = True
    return {name: float(v[0]) for name, v in ssn.node_score_parts(task, mask, np.array([row])).items()}


class RowCache:
    """One class's recorded entries by row, valid while the row's change-log state is the same.

    The per-plugin parts are kept as one column per plugin over every row: the first time many
    rows are missing (the class's first try, or after a change touching every row) all rows
    whose state is not cached are scored in one vectorised call, later only the changed rows.
    """

    __slots__ = ("ver", "all_ver", "tot", "pipe", "plugins", "cols", "entries")

    def __init__(self, n: int) -> None:
        self.ver = np.full(n, -2, dtype=np.int64)  # log position the parts were computed at
        self.all_ver = np.full(n, -2, dtype=np.int64)  # ... and the latest ALL entry then
        self.tot = np.full(n, np.nan)  # the entry's total (nan: no entry)
        self.pipe = np.zeros(n, dtype=bool)
        self.plugins: list[str] | None = None
        self.cols: list[np.ndarray] = []
        self.entries: list[NodeScore | None] = [None] * n

    def _store(self, rows: np.ndarray, got: dict[str, np.ndarray]) -> None:
        if self.plugins is None:
            self.plugins = list(got)
            self.cols = [np.zeros(len(self.ver)) for _ in self.plugins]
        for name, col in zip(self.plugins, self.cols, strict=True):
            col[rows] = got[name]

    def entries_for(self, ssn: Session, task: TaskInfo, rows: np.ndarray, totals: np.ndarray,
                    pipes: np.ndarray, last: np.ndarray, last_all: int,
                    make: Callable[[str, float, dict[str, float], bool], NodeScore]) -> list[NodeScore]:
        """The NodeScores of `rows` (totals and pipelined flags as ranked now; `make` builds one),
        computing the parts only of rows changed since they were cached."""
        lv = last[rows]
        fresh = (self.ver[rows] == lv) & (self.all_ver[rows] == last_all)
        stale = ~fresh | (self.tot[rows] != totals) | (self.pipe[rows] != pipes)
        if stale.any():
            names = ssn.node_table.names
            need = rows[~fresh]
            if len(need) <= ROW_BY_ROW:
                for r in need.tolist():
                    self._store(np.array([r]), {k: np.array([v]) for k, v in row_parts(ssn, task, r).items()})
                self.ver[need], self.all_ver[need] = lv[~fresh], last_all
            elif len(need):
                n = len(self.ver)
                every = np.flatnonzero((self.ver != last[:n]) | (self.all_ver != last_all))
                mask = np.zeros(n, dtype=bool)
                mask[every] = True
                self._store(every, ssn.node_score_parts(task, mask, every))
                self.ver[every], self.all_ver[every] = last[every], last_all
            plugins, cols = self.plugins or [], self.cols
            for i in np.flatnonzero(stale).tolist():
                r = int(rows[i])
                total, pipe = float(totals[i]), bool(pipes[i])
                parts = {name: float(col[r]) for name, col in zip(plugins, cols, strict=True)}
                self.entries[r] = make(names[r], total, parts, pipe)
                self.tot[r], self.pipe[r] = total, pipe
        entries = self.entries
        return [entries[r] for r in rows.tolist()]  # type: ignore[misc]


def run_entries(first: list[NodeScore], row_entry: NodeScore, top: int) -> list[NodeScore]:
    """A run copy's top list: the run's first try with the run's row at its new figures, placed
    among the idle-fit entries by total (ties: name first), cut to `top`."""
    others = [e for e in first if e.node != row_entry.node]
    at = 0
    key = (-row_entry.total, row_entry.node)
    while at < len(others) and not others[at].pipelined and (-others[at].total, others[at].node) < key:
        at += 1
    others.insert(at, row_entry)
    return others[:top]
