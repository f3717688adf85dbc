"""Placer: allocate's one face onto node selection, with every speed-up behind it.

allocate asks `best(task)` (predicates, fit, scores: which node, allocated or pipelined), tells
`placed(task, row)` after each placement and `released(tasks)` before a discard, and reads
`fit_errors(task)` when no node fits. Behind that face:
- classes: tasks with the same `class_key` share one `_placement.ClassState` (masks and scores
  over all NodeTable rows) for the whole action. The key is derived from the signatures the
  enabled predicate / node-order plugins declared (`framework.signature`): the task fields their
  answers read, plus the request. A plugin that declared none makes the key `sched_key`;
- a change log: a placement logs its row (every row when the task spreads: pod affinity,
  topology spread), so each class catches up on the rows changed since it last looked, and a
  placement costs one row update for its own class;
- a failure memo: a class that fitted nowhere, asked again with nothing placed or released
  since, gets the same answer (and the same fit errors) without touching its arrays;
- runs: `run_length(task, row, limit)` says how many identical tasks in a row, `task` first,
  would choose the row `best(task)` just chose (`_placement.ClassState.run_length`), so allocate
  places them in one step and tells `placed(task, row)` once; `expects_run(task)` says whether
  the class's latest run was longer than one.
`forget()` makes every class recompute (the per-job guard calls it after undoing a failed job).
When the session records scores (`scheduler_core.explain.node_scores`), each `best` call records the
class's top rows right after choosing (the failure memo records an empty try), from the class's
figures (`explain.class_scores`); a run's copies are recorded from the run probe's figures.
The feasible-node search limit (`framework.node_search`, the session's `node_search`) is applied
inside `best`: each call scans from the rotating index and moves it on, as Volcano's predicate
helper does for every task it filters (a memoised failure went round every node: no move).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from itertools import islice
from typing import TYPE_CHECKING

from scheduler_core.actions.allocate.change_log import ChangeLog
from scheduler_core.actions.allocate.placement import ClassState, has_dynamic_predicates, spreads
from scheduler_core.framework.kept import any_job
from scheduler_core.framework.signature import class_key_fn, has_inter_pod_terms, signed_fields

if TYPE_CHECKING:
    from scheduler_core.framework.records import FitErrors
    from scheduler_core.framework.session import Session
    from scheduler_core.model import TaskInfo


class Placer:
    """Best node per task for one action, cached per class of identical tasks."""

    def __init__(self, ssn: Session) -> None:
        self.ssn = ssn
        self.names = ssn.node_table.names
        self._index = ssn.node_table.index
        self._dynamic = has_dynamic_predicates(ssn)
        self._search = ssn.node_search  # the feasible-node search limit (framework.node_search)
        # Whether any task carries inter-pod terms: kept per job revision with the snapshot's
        # state (framework.kept), so a steady cycle looks only at the jobs that moved.
        self.fields = signed_fields((sig for _, _, sig in ssn.placement_signatures()),
                                    lambda: any_job(ssn.kept, "allocate.inter_pod", ssn.jobs,
                                                    lambda job: has_inter_pod_terms(job.tasks.values())))
        self.class_key = class_key_fn(self.fields)
        self._log = ChangeLog(len(ssn.node_table))
        self._states: dict[object, ClassState] = {}
        # Class key -> (change-log length, fit errors) of the class's latest failure.
        self._failed: dict[object, tuple[int, FitErrors]] = {}
        # The task of the latest `best` call and its class state (what `placed` updates).
        self._asked: tuple[TaskInfo | None, ClassState | None] = (None, None)
        # Score recording (scheduler_core.explain.node_scores), None when off; per class key, the
        # recorder's cache of entries by row; the figures of the latest run's copies after the first.
        self._recorder = ssn.score_recorder
        self._parts: dict[object, object] = {}
        self._run_figures: list[tuple[float, dict[str, float]]] = []
        # The class key being worked on: what `deferred` drops when a job is stopped mid-way.
        self._current: object = None

    def best(self, task: TaskInfo) -> tuple[int, bool] | None:
        """(row, pipelined) of the best node for the task, or None when no node fits.

        Among rows passing the predicates, those whose idle fits win over those where only the
        future idle fits; then the highest score; ties go to the lowest row (name first).
        """
        key = self._current = self.class_key(task)
        log = self._log
        known = self._failed.get(key)
        if known is not None and known[0] == len(log.rows):
            if self._recorder is not None:
                self._recorder.record_none(task, "allocate")
            return None
        state = self._states.get(key)
        if state is None:
            state = self._states[key] = ClassState(self.ssn, task, self._dynamic, log)
        else:
            state.catch_up(log)
        self._asked = (task, state)
        choice = state.best(self._search)
        recorder = self._recorder
        if recorder is not None:
            cache = self._parts.get(key)
            if cache is None:
                cache = self._parts[key] = recorder.new_cache()
            recorder.record_class(task, state, choice, log, cache)
        if choice is None:
            self._failed[key] = (len(log.rows), state.errors())
        return choice

    def known_failure(self, task: TaskInfo) -> bool:
        """Whether `best(task)` would answer None from the failure memo (nothing is asked)."""
        known = self._failed.get(self.class_key(task))
        return known is not None and known[0] == len(self._log.rows)

    def run_length(self, task: TaskInfo, row: int, limit: int,
                   cap: Callable[[int], int] | None = None) -> int:
        """How many of `limit` identical tasks in a row, `task` first, go to `row`, the row
        `best(task)` just chose to allocate on, as asking `best` for each in turn would answer;
        `cap(k)` bounds it further. While recording scores, each copy's figures on `row` are
        noted for its try (`placed` records them); under soft sharding a run is then one task."""
        asked, state = self._asked
        if limit <= 1 or asked is not task or state is None:
            return 1
        recorder = self._recorder
        if recorder is None:
            return state.run_length(row, limit, cap)
        if len(self.ssn.shard.groups) > 1:
            return 1  # the recorded order ranks all rows, the run only the row's group
        figures = self._run_figures = []
        return state.run_length(row, limit, cap,
                                lambda s: figures.append((s, recorder.row_parts(task, row))))

    def expects_run(self, task: TaskInfo) -> bool:
        """After `best(task)`: the latest `run_length` of its class found a run (a hint for when
        asking is worth it; the answer is the same either way)."""
        asked, state = self._asked
        return asked is task and state is not None and state.runs

    def fit_errors(self, task: TaskInfo) -> FitErrors:
        """Why no node fits the task: its class's errors from the `best` call that returned None."""
        return self._failed[self.class_key(task)][1]

    def placed(self, task: TaskInfo, row: int, count: int = 1) -> None:
        """The task (or a run of `count` tasks of its class, `task` first, after `run_length`) was
        allocated or pipelined on `row`: log it, and update its class at once."""
        log = self._log
        log.add(ChangeLog.ALL if spreads(task) else row)
        asked, state = self._asked
        if asked is not task:
            self._current = self.class_key(task)
            state = self._states.get(self._current)
        if state is not None:
            state.catch_up(log)
            if count > 1:
                state.placed_run(row, count)
        if count > 1 and self._recorder is not None:
            # The run's tasks are the latest `count` the session placed (Session._place_run).
            placed = self.ssn.placed
            run = list(islice(reversed(placed.values()), count))[::-1]
            self._recorder.record_run(run if run and run[0] is task else [], row, self._run_figures)
            self._run_figures = []

    def released(self, tasks: Iterable[TaskInfo]) -> None:
        """These placed tasks are about to be undone (a discard): their rows gain room."""
        for task in tasks:
            if task.node_name is not None:
                self._log.add(self._index[task.node_name], released=True)

    def deferred(self, tasks: Iterable[TaskInfo]) -> None:
        """A job was stopped mid-evaluation (over its work budget, framework.work_budget) and its
        placed `tasks` are about to be undone: the class it was evaluating may be half-updated
        (dropped, rebuilt when asked again); the tasks' rows gain room."""
        self._states.pop(self._current, None)
        self._failed.pop(self._current, None)
        self._asked = (None, None)
        self.released(tasks)

    def forget(self) -> None:
        """Something changed that no log entry describes (a failed job was undone): recompute all."""
        self._log.add(ChangeLog.ALL)
