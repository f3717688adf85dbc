"""The session's placement bookkeeping: what `allocate`, `pipeline`, `evict` and a Statement's
undo do to the nodes, the jobs, the node table and the plugins' event handlers.

`SessionOperations` is a base of `Session` (scheduler_core.framework.session), kept apart so the
session module holds the session's queries and lifecycle; it reads the session's `nodes`,
`jobs`, `node_table`, `placed`, `score_recorder` and `event_handlers`.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from scheduler_core.framework.interface import Event, EventHandler
from scheduler_core.model import JobInfo, NodeInfo, TaskInfo, TaskStatus

if TYPE_CHECKING:
    from scheduler_core.explain.node_scores import ScoreRecorder
    from scheduler_core.framework.node_table import NodeTable


class SessionOperations:
    """Place, unplace, evict and unevict tasks, firing the event handlers (Session's base)."""

    nodes: dict[str, NodeInfo]
    jobs: dict[str, JobInfo]
    node_table: NodeTable
    placed: dict[str, TaskInfo]
    score_recorder: ScoreRecorder | None
    event_handlers: list[EventHandler]
    # (handler count, allocate funcs, deallocate funcs, run funcs), rebuilt by _handlers when
    # handlers change; a run func is (batch func, None) or (None, per-event func).
    _hooks: tuple[int, list[Any], list[Any], list[Any]]

    def _handlers(self) -> tuple[int, list[Any], list[Any], list[Any]]:
        hooks = self._hooks
        if hooks[0] != len(self.event_handlers):
            # Handlers are only ever appended (mostly at open): re-read them when one was added.
            handlers = self.event_handlers
            hooks = self._hooks = (
                len(handlers), [h.allocate_func for h in handlers if h.allocate_func],
                [h.deallocate_func for h in handlers if h.deallocate_func],
                [(h.allocate_batch_func, None) if h.allocate_batch_func else (None, h.allocate_func)
                 for h in handlers if h.allocate_batch_func or h.allocate_func])
        return hooks

    def _fire(self, task: TaskInfo, allocate: bool) -> None:
        ev = Event(task)
        for fn in self._handlers()[1 if allocate else 2]:
            fn(ev)

    def _fire_run(self, tasks: list[TaskInfo]) -> None:
        # Handler by handler (each is told of the whole run at once): plugins keep their own
        # figures, so the order across handlers does not matter, the order of events does.
        events = [Event(t) for t in tasks]
        for batch, each in self._handlers()[3]:
            if batch is not None:
                batch(events)
            else:
                for ev in events:
                    each(ev)

    def _place(self, task: TaskInfo, node_name: str, status: TaskStatus) -> None:
        if self.score_recorder is not None:  # before the node changes: the scores that decided
            self.score_recorder.placing(task, node_name, status is TaskStatus.PIPELINED)
        node = self.nodes[node_name]
        task.node_name = node_name
        self.jobs[task.job_uid].update_task_status(task, status)
        node.add_task(task)
        self.node_table.update_placed(node, status is TaskStatus.PIPELINED)
        self.placed[task.uid] = task
        self._fire(task, True)

    def _place_run(self, tasks: list[TaskInfo], node_name: str, status: TaskStatus, done: list[TaskInfo],
                   stop: Callable[[int], bool] | None = None) -> None:
        """Place tasks of one job on one node in one step: what `_place` does for each, in order,
        with the node table and the event handlers updated once for the run.

        Each placed task is appended to `done` as its status changes (the caller's undo record);
        `stop(j)`, asked after the j-th task's job status changed, ends the run there when true
        (allocate: the job became ready). Job-ready callbacks read the job, which is current then.
        """
        node = self.nodes[node_name]
        job = self.jobs[tasks[0].job_uid]
        for task in tasks:
            task.node_name = node_name
            done.append(task)
            job.update_task_status(task, status)
            if stop is not None and stop(len(done)):
                break
        placed = self.placed
        for task in done:
            node.add_task(task)
            placed[task.uid] = task
        self.node_table.update_placed(node, status is TaskStatus.PIPELINED)
        self._fire_run(done)

    def _unplace(self, task: TaskInfo, status: TaskStatus, node_name: str | None) -> None:
        node = self.nodes[task.node_name] if task.node_name is not None else None
        if node is not None:
            node.remove_task(task)
            self.node_table.update_row(node)
        self.jobs[task.job_uid].update_task_status(task, status)
        task.node_name = node_name
        self.placed.pop(task.uid, None)
        self._fire(task, False)

    def _evict(self, task: TaskInfo) -> None:
        node = self.nodes[task.node_name]
        node.remove_task(task)
        self.jobs[task.job_uid].update_task_status(task, TaskStatus.RELEASING)
        node.add_task(task)
        self.node_table.update_row(node)
        self._fire(task, False)

    def _unevict(self, task: TaskInfo, status: TaskStatus) -> None:
        node = self.nodes[task.node_name]
        node.remove_task(task)
        self.jobs[task.job_uid].update_task_status(task, status)
        node.add_task(task)
        self.node_table.update_row(node)
        self._fire(task, True)

