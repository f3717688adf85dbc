"""Vectorised "pick the best node" for classes of identical tasks (the machinery behind `placer.Placer`).

For a class (tasks equal on the fields the enabled plugins signed, `framework.signature`)
the predicate mask, the idle / future-idle fit masks and the node scores are computed once
over all NodeTable rows. After each placement only the chosen row changes (its idle, pods and
score), so the next task of the class costs one row update and one argmax; no per-node loop.
Classes whose tasks carry pod (anti-)affinity or topology spread constraints change other
rows too (topology domains), so they are recomputed in full after every placement.
Assumptions, shared with the plugins: node-order scores of a row depend on that row only
(nodeorder/binpack compute just the rows in `mask`), and a placement can only make a dynamic
predicate (pod count, proportional) fail on its row, never pass; so a row that got a task is
re-asked lazily, right before it would be chosen.

Best node, as Volcano's allocate: among rows passing the predicates, those whose `idle` fits
the request win over those where only `future_idle` fits (pipelining); within a group the
highest score wins and ties go to the lowest row, i.e. the node name that sorts first.

Runs (`ClassState.run_length`): after `best` chose row r to allocate on, how many more tasks of
the class would choose r one after another is known without placing them: the other rows do
not change meanwhile, so copy j+1 goes to r while r, as it would be with j copies placed, still
fits the request (idle and future idle, a free pod slot in both), scores above the best other row (a tie
to the lower row) and passes the dynamic predicates. The row's figures after j copies are the
same float sums the placements would make; the plugins are asked about them by writing them
into the row of the NodeTable for the question and putting the real ones back
(`NodeTable.set_row_state`): node-order row scores (`row_fn`) and dynamic predicates read a
row's accounting from the NodeTable they are given. The dynamic predicates are asked once per
run (with the run's last but one copy placed; a row they turn down stays down as it fills),
then by bisection only when they refuse.

Soft sharding (`framework.sharding`): each gradient (idle, then future idle) is tried on the
shard's rows first, then on the others; a run's rival is the best other row of its group.

The feasible-node search limit (`framework.node_search`): when the session's search is limited,
`best` chooses among the K feasible rows the rotating scan keeps (`_window.best_in_window`); a
run then stays one task: the next task's scan starts past this one's, so it sees other rows.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

import numpy as np

from scheduler_core.actions.allocate.blame import Blame, fit_errors
from scheduler_core.actions.allocate.change_log import ChangeLog
from scheduler_core.actions.allocate.window import best_in_window
from scheduler_core.framework.interface import PredicateResult
from scheduler_core.framework.records import FitErrors
from scheduler_core.resources import MIN_RESOURCE

if TYPE_CHECKING:
    from scheduler_core.framework.node_search import FeasibleSearch
    from scheduler_core.framework.node_table import NodeTable
    from scheduler_core.framework.session import Session
    from scheduler_core.model import TaskInfo

_NEG = -np.inf
# Up to this many changed rows are re-scored one by one (node_row_score) rather than via a view.
_ROW_BY_ROW = 8
# A class that missed more than this fraction of the rows recomputes everything.
REFRESH_FRACTION = 0.125
# A run probe's changed cells of one row: idle, used and future idle of the request's columns,
# and the pod count.
Cells = tuple[list[float], list[float], list[float], int]


def has_dynamic_predicates(ssn: Session) -> bool:
    """True when some enabled predicate depends on the session state (pods, affinity)."""
    return any(not static for tier in ssn.enabled_fns("predicate") for _, (_, static) in tier)


def spreads(task: TaskInfo) -> bool:
    """The task's placement changes other rows' answers (pod affinity, topology spread)."""
    aff = task.affinity or {}
    return bool(task.topology_spread_constraints or aff.get("podAffinity") or aff.get("podAntiAffinity"))


class ClassState:
    """Masks and scores of one equivalence class over the NodeTable rows."""

    __slots__ = ("ssn", "table", "task", "dynamic", "local", "ok", "counts", "idle_fit", "future_fit",
                 "scores", "best_idle", "best_future", "synced", "vec", "cols", "never", "unverified",
                 "need", "runs", "run_verified", "windowed", "kept", "feasible_max", "pred", "blame",
                 "touched")

    def __init__(self, ssn: Session, task: TaskInfo, dynamic: bool, log: ChangeLog | None = None) -> None:
        self.ssn = ssn
        self.table: NodeTable = ssn.node_table
        self.task = task
        self.dynamic = dynamic
        self.local = not spreads(task)
        self.synced = len(log.rows) if log is not None else 0
        # Rows that got a task since their dynamic predicates (pod count, ...) were last asked.
        # A placement can only make those predicates fail, never pass, so such a row is
        # re-asked lazily, when it is about to be chosen (one predicate call for all of them).
        self.unverified: set[int] = set()
        # Whether the class's latest run_length found a run (more than one task): worth asking again.
        self.runs = False
        # Run length whose last state the dynamic predicates passed (see placed_run), else -1.
        self.run_verified = -1
        # Whether the latest `best` chose inside a limited scan window (then no runs), and that
        # window: (kept rows, their idle-fit scores, their future-only scores), else None.
        self.windowed = False
        self.kept: tuple[np.ndarray, np.ndarray, np.ndarray] | None = None
        # Rows changed since the last full predicate (dynamic classes): their blame is asked
        # again when the class's fit errors are (blame.Blame, built from `pred` when first needed).
        self.touched: set[int] = set()
        self._request()
        self.refresh()

    def _request(self) -> None:
        # Same comparison as NodeTable.fit_mask: cpu and memory always, scalars when asked;
        # a requested scalar that no node has never fits.
        table, req = self.table, self.task.resreq
        self.vec = table.vector(req)
        cols = [0, 1]
        self.never = False
        for name in sorted(req.scalars):
            j = table.dim_index.get(name)
            if j is not None:
                cols.append(j)
            elif req.scalars[name] >= MIN_RESOURCE:
                self.never = True
        self.cols = np.asarray(cols, dtype=np.intp)
        # (column, request) pairs: the one-row fit test in plain floats (same arithmetic as _fits).
        self.need = [(j, float(self.vec[j])) for j in cols]

    def _fits(self, avail: np.ndarray, slots: np.ndarray) -> np.ndarray:
        if self.never:
            return np.zeros(len(avail), dtype=bool)
        # Column by column (the table's arrays are Fortran-ordered: columns are contiguous),
        # without the (rows x cols) copy that fancy indexing makes; a free pod slot too.
        mask = slots >= 1
        for j, v in self.need:
            mask &= (v - avail[:, j]) < MIN_RESOURCE
        return mask

    def refresh(self) -> None:
        """Recompute everything over all rows."""
        ssn, table, task = self.ssn, self.table, self.task
        pred = self.pred = ssn.predicate(task)
        self.blame: Blame | None = None
        self.touched.clear()
        self.ok = pred.ok_mask.copy()
        self.counts = pred.counts()
        self.unverified.clear()
        self.idle_fit = self._fits(table.idle, table.idle_pods)
        self.future_fit = self._fits(table.future, table.future_pods)
        cand = self.ok & self.future_fit
        self.scores = ssn.node_scores(task, cand) if cand.any() else np.zeros(len(table))
        self.best_idle = np.where(cand & self.idle_fit, self.scores, _NEG)
        self.best_future = np.where(cand & ~self.idle_fit, self.scores, _NEG)
        # At least the feasible rows' count: placements only take rows away (a released row
        # adds one back), so a class with no more than the search limit K skips the window.
        self.feasible_max = int(np.count_nonzero(cand))

    def catch_up(self, log: ChangeLog) -> None:
        """Apply the rows changed since the last call (a full refresh when many did)."""
        start, end = self.synced, len(log.rows)
        if start == end:
            return
        self.synced = end
        if end - start == 1 and log.rows[start] >= 0 and self.local:
            self.row_changed(log.rows[start])
            return
        if not self.local or log.last_all >= start:
            self.refresh()
            return
        rows = log.changed_since(start, len(self.table))
        released = log.last_released >= start
        if self.dynamic:
            self.touched.update(rows.tolist())  # rejected rows too: which predicate blames them may move
        if not released:
            # Only placements: a row this class's predicates reject stays rejected (see the
            # module's assumptions), so its fit and score are never read again: skip it.
            rows = rows[self.ok[rows]]
        if len(rows) > REFRESH_FRACTION * len(self.table):
            self.refresh()
            return
        if len(rows):
            self.rows_changed(rows, released)

    def row_changed(self, r: int) -> None:
        """One row got a task (the common case): scalar updates only."""
        if self.dynamic:
            self.touched.add(r)
        if not self.ok[r]:
            return  # rejected by the predicates, and a placement never makes it pass
        ssn, table, task = self.ssn, self.table, self.task
        if self.dynamic:
            self.unverified.add(r)
        ok = not self.never
        idle, fut = table.idle, table.future
        idle_fit = self.idle_fit[r] = ok and table.idle_pods[r] >= 1 and all(
            v - idle[r, j] < MIN_RESOURCE for j, v in self.need)
        fut_fit = self.future_fit[r] = ok and table.future_pods[r] >= 1 and all(
            v - fut[r, j] < MIN_RESOURCE for j, v in self.need)
        if fut_fit:
            s = self.scores[r] = ssn.node_row_score(task, r)
            self.best_idle[r] = s if idle_fit else _NEG
            self.best_future[r] = _NEG if idle_fit else s
        else:
            self.best_idle[r] = self.best_future[r] = _NEG

    def rows_changed(self, idx: np.ndarray, released: bool) -> None:
        """Tasks went to (or left, `released`) rows `idx`: update those rows only."""
        ssn, table, task = self.ssn, self.table, self.task
        if self.dynamic and released:
            # A row that lost a task may pass again: ask now.
            self.ok[idx] = ssn.predicate_rows(task, idx)
            self.unverified.difference_update(idx.tolist())
        elif self.dynamic:
            self.unverified.update(idx[self.ok[idx]].tolist())
        idle_fit = self.idle_fit[idx] = self._fits(table.idle[idx], table.idle_pods[idx])
        future_fit = self.future_fit[idx] = self._fits(table.future[idx], table.future_pods[idx])
        cand = self.ok[idx] & future_fit
        if cand.any():
            rows = idx[cand]
            if len(rows) <= _ROW_BY_ROW:
                # A handful of rows: plain-float row scores beat building a view.
                for r in rows.tolist():
                    self.scores[r] = ssn.node_row_score(task, r)
            else:
                mask = np.zeros(len(table), dtype=bool)
                mask[rows] = True
                self.scores[rows] = ssn.node_scores(task, mask)[rows]
        if released:
            self.feasible_max += len(idx)
        s = self.scores[idx]
        self.best_idle[idx] = np.where(cand & idle_fit, s, _NEG)
        self.best_future[idx] = np.where(cand & ~idle_fit, s, _NEG)

    def best(self, search: FeasibleSearch | None = None) -> tuple[int, bool] | None:
        """(row, pipelined) of the best node, or None when no node fits; under a limited
        `search`, among the rows its scan keeps (the scan moves on)."""
        self.windowed, self.kept = False, None
        if search is not None and search.limited:
            return best_in_window(self, search)
        return self.best_all()

    def best_all(self) -> tuple[int, bool] | None:
        """`best` over every row (no scan limit); soft sharding splits each gradient into the
        shard's rows, then the others (`ShardView.groups`; one group otherwise)."""
        groups = self.ssn.shard.groups
        for arr, future in ((self.best_idle, False), (self.best_future, True)):
            for group in groups:
                while True:
                    # (a fresh copy per try: verify may have turned rows of `arr` down)
                    sub = arr if group is None else np.where(group, arr, _NEG)
                    r = int(np.argmax(sub))
                    if sub[r] == _NEG:
                        break
                    if r in self.unverified and not self.verify(r):
                        continue
                    return r, future
        return None

    def run_length(self, r: int, limit: int, cap: Callable[[int], int] | None = None,
                   note: Callable[[float], None] | None = None) -> int:
        """How many tasks of the class in a row go to row r, the row `best` just chose to allocate
        on (1 <= k <= limit; see the module docstring); `cap(k)` bounds it further (the queue).
        `note(score)` is called for copy j+1 of the run (j = 1, 2, ...) while row r holds the
        state with j copies placed (score recording takes that copy's figures then)."""
        self.run_verified = -1
        if limit <= 1 or not self.local or self.windowed or self.best_idle[r] == _NEG:
            return 1  # spreading classes, pipelined and scan-limited placements go one by one
        ssn, table, task = self.ssn, self.table, self.task
        scores = self.best_idle
        group = ssn.shard.same_group(r)
        if group is not None:  # soft sharding: only r's group competes with it (the others stay put)
            scores = np.where(group, scores, _NEG)
        own = scores[r]
        scores[r] = _NEG
        rival = int(np.argmax(scores))
        top = scores[rival]
        scores[r] = own
        # A placement changes the columns the request names (cpu, memory, its scalars: `need`),
        # each by the same float operations as NodeInfo.add_task and NodeTable's future idle.
        cols = [j for j, _ in self.need]
        req = [v for _, v in self.need]
        rel = [float(table.releasing[r, j]) for j in cols]
        pip = [float(table.pipelined[r, j]) for j in cols]
        n = len(cols)
        # Free pod slots against idle and future idle: each copy takes one of both.
        idle_slots, future_slots = float(table.idle_pods[r]), float(table.future_pods[r])

        def step(cells: Cells) -> Cells:
            idle = [cells[0][i] - req[i] for i in range(n)]
            future = [(idle[i] + rel[i]) - pip[i] for i in range(n)]
            return idle, [cells[1][i] + req[i] for i in range(n)], future, cells[3] + 1

        cells: Cells = ([float(table.idle[r, j]) for j in cols], [float(table.used[r, j]) for j in cols],
                        [float(table.future[r, j]) for j in cols], int(table.pod_count[r]))
        states: list[Cells] = []  # states[j - 1]: the cells with j more copies
        saved = table.row_state(r)
        k = 1
        try:
            while k < limit:
                cells = step(cells)
                states.append(cells)
                idle, _, future, _ = cells
                if min(idle_slots, future_slots) - len(states) < 1:
                    break
                if not all(req[i] - idle[i] < MIN_RESOURCE and req[i] - future[i] < MIN_RESOURCE
                           for i in range(n)):
                    break
                table.set_cells(r, cols, *cells)
                s = ssn.node_row_score(task, r)
                if s < top or (s == top and rival < r):
                    break
                if note is not None:
                    note(s)
                k += 1
            if cap is not None and k > 1:
                k = max(1, min(k, cap(k)))
            if self.dynamic and k > 1:
                if len(states) < k:
                    states.append(step(states[-1]))
                k = self._run_passes(r, cols, states, k)
        finally:
            table.set_row_state(r, *saved)
        self.runs = k > 1
        return k

    def _run_passes(self, r: int, cols: list[int], states: list[Cells], k: int) -> int:
        """The longest prefix of a k-task run on row r that the dynamic predicates let through:
        copy j+1 needs row r to pass with j copies placed (0 copies: `best` verified it). Asked
        first with all k placed: a pass also verifies the row for the class's next task."""
        def passes(j: int) -> bool:
            self.table.set_cells(r, cols, *states[j - 1])
            return bool(self.ssn.predicate_rows(self.task, r))

        if passes(k):
            self.run_verified = k
            return k
        lo, hi = 0, k  # passes with lo copies, refuses with hi
        while hi - lo > 1:
            mid = (lo + hi) // 2
            if passes(mid):
                lo = mid
            else:
                hi = mid
        return lo + 1

    def placed_run(self, r: int, count: int) -> None:
        """A run of `count` tasks went to row r (after catch_up): when `run_length` saw the row
        pass the dynamic predicates with exactly those placed, it needs no re-check."""
        if count == self.run_verified:
            self.unverified.discard(r)
        self.run_verified = -1

    def verify(self, r: int) -> bool:
        """Ask the predicates again for every unverified row; True when row r still passes."""
        rows = np.fromiter(self.unverified, dtype=np.intp, count=len(self.unverified))
        bad = rows[~self.ssn.predicate_rows(self.task, rows)]
        self.ok[bad] = False
        self.best_idle[bad] = _NEG
        self.best_future[bad] = _NEG
        self.unverified.clear()
        return bool(self.ok[r])

    def errors(self) -> FitErrors:
        """Fit errors of the class as it stands (no row fits). With dynamic predicates, the
        rows changed since the last full predicate are asked again (blame.Blame)."""
        if self.dynamic:
            seq = self.ssn.predicate_sequence(self.task)
            if self.blame is None:
                self.blame = Blame(self.pred, len(self.table))
            rows = np.fromiter(self.touched, dtype=np.intp, count=len(self.touched))
            got = self.blame.update(seq, rows)
            if got is None:
                pred = self.pred = PredicateResult.combine(seq, len(self.table))
                self.blame = None
                self.ok, self.counts = pred.ok_mask.copy(), pred.counts()
            else:
                self.ok[rows] = got[0]
                self.counts = got[1]
            self.touched.clear()
        return fit_errors(self.ssn, self.task, self.ok, self.counts)

