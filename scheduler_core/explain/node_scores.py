"""Per-node scores of the placement decisions, so a binpack or nodeorder choice can be checked by hand.

Opt-in per session: `run_session(snapshot, conf, record_scores=True)` (top 10 nodes; an int N
for top N) or, around code that calls run_session without the argument, `with
recording_scores(N):` (the CLI's way through `scenario.run_scenario`). Off, nothing is recorded
and the session pays one `is None` test per try and per placement. On, `SessionResult.node_scores`
maps each task that was tried (allocate, backfill, preempt) or placed (reclaim) to a
`TaskScores` of its *last* try:

- `action`: the action that tried it; `chosen`: the node the task holds at the end of the
  session (bound, pipelined, or allocated to a job that waits), None when it holds none (no
  node fitted, its placement was undone, e.g. a gang that did not fit); `pipelined`: the task
  is in the result's `pipelined`;
- `top`: up to N `NodeScore`s in the order the action ranks the nodes, best first. allocate:
  nodes passing the predicates where the idle fits, then those where only the future idle
  fits (`pipelined` True), each group by total score, ties to the name that sorts first, so
  `top[0]` is the node allocate chose; backfill: the nodes passing the predicates; preempt:
  the candidate nodes in the order they are tried (before any eviction). Empty when no node
  was a candidate, and for a placement no ranking decided (reclaim tries nodes in name order);
- `chosen_scores`: the `NodeScore` of `chosen` in that try (also when it ranked below N; for
  reclaim, the node's scores just before the task landed), None when the task holds no node
  or got it from an earlier try.

A `NodeScore` has the node, the `total` the action ranked by (`Session.node_scores`) and
`plugins`: each enabled node-order plugin's share of it (node-order plus batch-node-order
callback, `Session.node_score_parts`), e.g. {"nodeorder": 250.0, "binpack": 62.5}.
JSON (`to_json()`, under the result's "node_scores" key): floats rounded to 4 decimals.
Scores are those at the moment of the decision. For allocate they come from the class's shared
score vectors, once per class and not per task (`explain.class_scores`): only rows changed
since the class last ranked them get their per-plugin parts computed, and runs of identical
tasks stay on while recording.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

import numpy as np

from scheduler_core.explain.class_scores import RowCache, row_parts, run_entries

# The recorded values live with the result (values import nothing above them); re-exported here.
from scheduler_core.result import NodeScore, TaskScores

if TYPE_CHECKING:
    from scheduler_core.framework.session import Session
    from scheduler_core.model import TaskInfo
    from scheduler_core.result import SessionResult

DEFAULT_TOP = 10


class ClassState(Protocol):
    """What record_class reads of allocate's class state (actions.allocate.placement.ClassState)."""

    best_idle: np.ndarray
    best_future: np.ndarray
    unverified: set[int]
    local: bool
    ok: np.ndarray
    future_fit: np.ndarray
    # After a limited scan (framework.node_search): (kept rows, their idle-fit scores, their
    # future-only scores), else None.
    kept: tuple[np.ndarray, np.ndarray, np.ndarray] | None


class ChangeLog(Protocol):
    """What record_class reads of allocate's change log (actions.allocate.placement.ChangeLog)."""

    last: np.ndarray  # at least one entry per NodeTable row
    last_all: int

_NEG = -np.inf
_NO_ROWS = np.zeros(0, dtype=np.intp)
_NO_TOTALS = np.zeros(0)
_NO_PIPES = np.zeros(0, dtype=bool)
_AMBIENT: ContextVar[int] = ContextVar("record_scores", default=0)


def top_count(record_scores: bool | int | None) -> int:
    """Nodes kept per try: True -> DEFAULT_TOP, False/0 -> 0 (off), N -> N, None -> the
    ambient `recording_scores` value (0 outside one)."""
    if record_scores is None:
        return _AMBIENT.get()
    if isinstance(record_scores, bool):
        return DEFAULT_TOP if record_scores else 0
    if record_scores < 0:
        raise ValueError(f"record_scores must be a bool or a count >= 0, got {record_scores}")
    return int(record_scores)


@contextmanager
def recording_scores(top: int = DEFAULT_TOP) -> Iterator[None]:
    """Sessions run inside record the top `top` nodes per try unless run_session says otherwise."""
    token = _AMBIENT.set(top_count(top))
    try:
        yield
    finally:
        _AMBIENT.reset(token)


@dataclass(eq=False)
class _Try:
    """One recorded try; arrays aligned with `rows` (decision order)."""

    task: TaskInfo
    action: str
    rows: np.ndarray
    totals: np.ndarray
    parts: dict[str, np.ndarray]
    pipes: np.ndarray
    chosen: NodeScore | None = None
    # allocate's tries: the entries themselves (shared with other tries of the class), already
    # cut to the top N; rows/totals/parts/pipes are then empty.
    entries: list[NodeScore] | None = None


def top_rows(scores: np.ndarray, k: int) -> np.ndarray:
    """Rows of the k best finite scores (> -inf), best first, ties to the lowest row."""
    if k <= 0:
        return _NO_ROWS
    cand = np.flatnonzero(scores > _NEG)
    if len(cand) > k:
        vals = scores[cand]
        kth = np.partition(vals, len(vals) - k)[len(vals) - k]  # the k-th best value
        above, tied = cand[vals > kth], cand[vals == kth]  # ascending rows: ties keep name order
        cand = np.concatenate((above, tied[:k - len(above)]))
    return cand[np.lexsort((cand, -scores[cand]))]


class ScoreRecorder:
    """Collects the tries of one session (`Session.score_recorder`); `finish` builds the result.

    Only the latest try is kept whole (preempt's chosen node may rank below the top N); it is
    cut to the top N, plus the node the task then holds, when the next try comes or at close.
    """

    def __init__(self, ssn: Session, top: int = DEFAULT_TOP) -> None:
        self.ssn = ssn
        self.top = top
        self.names = ssn.node_table.names
        self.index = ssn.node_table.index
        self.tries: dict[str, _Try] = {}
        self._open: _Try | None = None
        # The running action (run_session sets it): names the tries of placements nobody ranked.
        self.action = ""

    # -- recording -------------------------------------------------------------------------
    def record(self, task: TaskInfo, action: str, rows: np.ndarray, totals: np.ndarray,
               parts: dict[str, np.ndarray], pipes: np.ndarray) -> None:
        """Keep a try of `task` (rows in decision order); it replaces the task's earlier one."""
        if self._open is not None:
            self._settle(self._open)
        self._open = self.tries[task.uid] = _Try(task, action, rows, totals, parts, pipes)

    def placing(self, task: TaskInfo, node_name: str, pipelined: bool) -> None:
        """The session is about to place `task` (Session._place). A placement that no recorded
        try of the running action ranked (reclaim walks nodes by name) gets a try of its own:
        no top list, the chosen node's scores as they stand before the task lands."""
        t = self._open
        if t is not None and t.task is task and t.action == self.action:
            return  # this try's choice: noted when the try is settled
        row = self.index[node_name]
        self.record_none(task, self.action)
        self._open.chosen = NodeScore(node_name, self.ssn.node_row_score(task, row),  # type: ignore[union-attr]
                                      row_parts(self.ssn, task, row), pipelined)

    def record_none(self, task: TaskInfo, action: str) -> None:
        """A try in which no node was a candidate."""
        self.record(task, action, _NO_ROWS, np.zeros(0), {}, np.zeros(0, dtype=bool))

    def record_mask(self, task: TaskInfo, action: str, mask: np.ndarray, scores: np.ndarray | None = None,
                    *, keep_all: bool = False, pipelined: bool = False) -> None:
        """A try over the candidate rows `mask`, ranked by total score (ties: name first).

        `scores`: the action's `node_scores(task, mask)` when it has them. `keep_all` keeps every
        candidate until the task's placement is known (preempt: the node after evictions).
        """
        idx = np.flatnonzero(mask)
        if not len(idx):
            self.record_none(task, action)
            return
        ssn = self.ssn
        if scores is None:
            scores = ssn.node_scores(task, mask)
        order = np.lexsort((idx, -scores[idx]))
        rows = idx[order] if keep_all else idx[order[:self.top]]
        self.record(task, action, rows, scores[rows], ssn.node_score_parts(task, mask, rows),
                    np.full(len(rows), pipelined))

    def new_cache(self) -> RowCache:
        """A class's cache for `record_class` (the Placer keeps one per class)."""
        return RowCache(len(self.names))

    def record_class(self, task: TaskInfo, state: ClassState, choice: tuple[int, bool] | None,
                     log: ChangeLog, cache: RowCache) -> None:
        """allocate's try: the top rows of the task's class state right after `state.best()`
        (after a limited scan, of the rows it kept). `cache`: the class's `new_cache()`."""
        if choice is None:
            self.record_none(task, "allocate")
            return
        kept = state.kept
        if kept is None:
            idle, future = state.best_idle, state.best_future
        else:
            idle, future = kept[1], kept[2]
        rows = self._ranked(idle, future)
        if kept is None and state.unverified and not state.unverified.isdisjoint(rows.tolist()):
            # Rows whose dynamic predicates were not asked since they got a task (the class asks
            # lazily, before choosing one): leave out those that fail now, without touching state.
            # (A limited scan verified every row it kept.)
            ok = self.ssn.predicate(task).ok_mask
            bad = [r for r in state.unverified if not ok[r]]
            if bad:
                idle, future = idle.copy(), future.copy()
                idle[bad] = future[bad] = _NEG
                rows = self._ranked(idle, future)
        first = np.count_nonzero(idle[rows] > _NEG)
        pipes = np.arange(len(rows)) >= first  # idle-fit rows come first
        totals = np.where(pipes, future[rows], idle[rows])
        if kept is not None:
            rows = kept[0][rows]
        if state.local:
            entries = cache.entries_for(self.ssn, task, rows, totals, pipes, log.last, log.last_all,
                                        NodeScore)
            self.record(task, "allocate", _NO_ROWS, _NO_TOTALS, {}, _NO_PIPES)
            self._open.entries = entries  # type: ignore[union-attr]
            return
        # Topology spread / pod affinity: scores normalised over the class's candidates (after a
        # limited scan, over the kept rows, as they were scored).
        if kept is None:
            mask = state.ok & state.future_fit
        else:
            mask = np.zeros(len(self.names), dtype=bool)
            mask[kept[0]] = True
            mask &= state.future_fit
        self.record(task, "allocate", rows, totals, self.ssn.node_score_parts(task, mask, rows), pipes)

    def row_parts(self, task: TaskInfo, row: int) -> dict[str, float]:
        """Each plugin's score of `row` for `task` as the NodeTable stands (a run probe's state)."""
        return row_parts(self.ssn, task, row)

    def record_run(self, tasks: list[TaskInfo], row: int,
                   figures: list[tuple[float, dict[str, float]]]) -> None:
        """The copies after the first of a run on `row` (ClassState.run_length): copy j's try is
        the first copy's with `row` at `figures[j - 1]` (its total and parts with j copies placed)."""
        t = self._open
        if t is None or t.entries is None or not tasks:
            return
        name = self.names[row]
        for task, (total, parts) in zip(tasks[1:], figures, strict=False):
            entry = NodeScore(name, total, parts, False)
            self.record(task, "allocate", _NO_ROWS, _NO_TOTALS, {}, _NO_PIPES)
            self._open.entries = run_entries(t.entries, entry, self.top)  # type: ignore[union-attr]

    def _ranked(self, idle: np.ndarray, future: np.ndarray) -> np.ndarray:
        """The top rows in allocate's order: idle fits by score, then future-idle fits by score."""
        first = top_rows(idle, self.top)
        return np.concatenate((first, top_rows(future, self.top - len(first))))

    # -- result ----------------------------------------------------------------------------
    def _entry(self, t: _Try, i: int) -> NodeScore:
        return NodeScore(self.names[int(t.rows[i])], float(t.totals[i]),
                         {name: float(arr[i]) for name, arr in t.parts.items()}, bool(t.pipes[i]))

    def _entries(self, t: _Try) -> list[NodeScore]:
        """Every entry of the try (plain Python values first: one conversion per array)."""
        if t.entries is not None:
            return list(t.entries)
        names = self.names
        parts = [(name, arr.tolist()) for name, arr in t.parts.items()]
        return [NodeScore(names[r], total, {name: vals[i] for name, vals in parts}, pipe)
                for i, (r, total, pipe) in enumerate(zip(t.rows.tolist(), t.totals.tolist(),
                                                         t.pipes.tolist(), strict=True))]

    def _settle(self, t: _Try) -> None:
        """Note the node the task now holds (if this try ranked it), then cut to the top N."""
        task = t.task
        if t.entries is not None:
            if task.node_name is not None and task.uid in self.ssn.placed:
                t.chosen = next((e for e in t.entries if e.node == task.node_name), None)
            return
        if task.node_name is not None and task.uid in self.ssn.placed:
            hit = np.flatnonzero(t.rows == self.index.get(task.node_name, -1))
            if len(hit):
                t.chosen = self._entry(t, int(hit[0]))
        if len(t.rows) > self.top:
            n = self.top
            t.rows, t.totals, t.pipes = t.rows[:n], t.totals[:n], t.pipes[:n]
            t.parts = {name: arr[:n] for name, arr in t.parts.items()}

    def finish(self, result: SessionResult) -> dict[str, TaskScores]:
        """TaskScores per tried task, against the session's final placements (close_session)."""
        if self._open is not None:
            self._settle(self._open)
            self._open = None
        placed = self.ssn.placed
        out: dict[str, TaskScores] = {}
        for uid in sorted(self.tries):
            t = self.tries[uid]
            held = placed.get(uid)
            chosen = held.node_name if held is not None else None
            top = self._entries(t)
            # The try's own choice only: a node the task got elsewhere has no scores from it.
            mine = t.chosen if t.chosen is not None and t.chosen.node == chosen else None
            out[uid] = TaskScores(t.action, chosen, uid in result.pipelined, top, mine)
        return out


# -- the CLI's table and `expect: node_scores` (scenario_check) -------------------------------

def _num(x: float) -> str:
    return f"{x:.4f}".rstrip("0").rstrip(".")


def score_lines(node_scores: dict[str, dict[str, Any]], limit: int) -> list[str]:
    """Human table per task (`simulate --scores`): its nodes best first, `*` the chosen one."""
    lines = [f"Node scores ({len(node_scores)} task(s) tried; best first, * = chosen):" if node_scores
             else "Node scores: none"]
    for uid in list(node_scores)[:limit]:
        s = node_scores[uid]
        chosen = s.get("chosen")
        where = "no node" if chosen is None else chosen + (" (pipelined)" if s.get("pipelined") else "")
        if chosen is not None and s.get("chosen_scores") is None:
            where += " (from an earlier try)"
        lines.append(f"  {uid} -> {where} [{s.get('action')}]")
        entries = list(s.get("top") or [])
        extra = s.get("chosen_scores")
        if extra is not None and all(e["node"] != extra["node"] for e in entries):
            entries.append(extra)  # ranked below the top N: shown last
        if not entries:
            lines.append("    no candidate node")
            continue
        plugins = list(dict.fromkeys(p for e in entries for p in e.get("plugins", {})))
        table = [["NODE", "TOTAL", *plugins, ""]]
        for e in entries:
            mark = "* " if e["node"] == chosen else "  "
            table.append([mark + e["node"], _num(e["total"]),
                          *(_num(e["plugins"].get(p, 0.0)) for p in plugins),
                          "pipelined" if e.get("pipelined") else ""])
        table[0][0] = "  NODE"
        widths = [max(len(row[i]) for row in table) for i in range(len(table[0]))]
        lines.extend("    " + "  ".join(c.ljust(w) for c, w in zip(row, widths, strict=True)).rstrip()
                     for row in table)
    if len(node_scores) > limit:
        lines.append(f"  ... {len(node_scores) - limit} more (use --json for all)")
    return lines


def parse_expected(ctx: Any, path: tuple, value: Any, nodes: Any) -> dict[str, Any]:
    """One task's `expect: node_scores` entry: `chosen` (a node, or null = none) and/or `top`
    (node names the recorded top list must start with, in order; `[]`: no candidate node).
    `ctx`: scenario_fields.Ctx."""
    from scheduler_core.scenario_fields import Obj

    o = Obj(ctx, value, path, ("chosen", "top"))
    want: dict[str, Any] = {}
    if "chosen" in o.data:
        node = o.data["chosen"]
        if node is not None and (not isinstance(node, str) or node not in nodes):
            raise o.err("chosen", f"unknown node {node!r}")
        want["chosen"] = node
    if "top" in o.data:
        want["top"] = []
        for ipath, node in o.items("top"):
            if not isinstance(node, str) or node not in nodes:
                raise ctx.error(ipath, f"unknown node {node!r}")
            want["top"].append(node)
    return want


def check_expected(expected: dict[str, dict[str, Any]], recorded: dict[str, Any] | None,
                   report: Any) -> int:
    """Compare `expect: node_scores` with the result's; `report(task, message)` per mismatch.
    Returns the number of comparisons (one per task; none when the result has no node_scores,
    as for `forecast`: `simulate --check` records them whenever the block asks)."""
    if recorded is None:
        return 0
    for task, want in expected.items():
        got = recorded.get(task)
        if got is None:
            report(task, "no scores recorded (the task was neither tried nor placed)")
            continue
        if "chosen" in want and got.get("chosen") != want["chosen"]:
            report(task, f"chosen: expected {want['chosen'] or 'no node'}, "
                         f"got {got.get('chosen') or 'no node'}")
        names = [e["node"] for e in got.get("top") or []]
        if "top" in want and (names[:len(want["top"])] != want["top"] or (names and not want["top"])):
            report(task, f"top: expected {want['top'] or 'no candidate node'}"
                         f"{' first' if want['top'] else ''}, got {names or 'no candidate node'}")
    return len(expected)


def expected_top(expected: dict[str, dict[str, Any]] | None) -> int:
    """Nodes to record so every expected top list can be compared (at least DEFAULT_TOP)."""
    return max([DEFAULT_TOP, *(len(w.get("top", ())) for w in (expected or {}).values())])
