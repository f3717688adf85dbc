"""Statement: try allocate / pipeline / evict on the session, then commit or discard.

Operations change the session at once (so later checks see them, as in Volcano); `discard`
undoes them in reverse order and restores node, job and queue accounting exactly (queue
figures follow through the event handlers); `commit` makes evictions final. `place_run` puts a
run of one job's tasks on one node in one step, with one undo record (allocate's runs).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING

from scheduler_core.model import TaskInfo, TaskStatus

if TYPE_CHECKING:
    from scheduler_core.framework.session import Session


@dataclass(slots=True)
class Operation:
    """One tried operation and what is needed to undo it."""

    kind: str  # "allocate" | "pipeline" | "evict"
    task: TaskInfo
    prev_status: TaskStatus
    prev_node: str | None
    reason: str = ""
    # A run (place_run): every task placed, `task` first; all had `prev_status` and `prev_node`.
    run: list[TaskInfo] | None = None


class Statement:
    """A group of tentative operations on one session."""

    def __init__(self, ssn: Session) -> None:
        self.ssn = ssn
        self.operations: list[Operation] = []

    def allocate(self, task: TaskInfo, node_name: str) -> None:
        """Tentatively allocate the task on the node (event handlers fire now)."""
        # Recorded first: a placement that fails half-way is still undone by discard.
        self.operations.append(Operation("allocate", task, task.status, task.node_name))
        self.ssn._place(task, node_name, TaskStatus.ALLOCATED)

    def pipeline(self, task: TaskInfo, node_name: str) -> None:
        """Tentatively pipeline the task on the node."""
        # Recorded first: a placement that fails half-way is still undone by discard.
        self.operations.append(Operation("pipeline", task, task.status, task.node_name))
        self.ssn._place(task, node_name, TaskStatus.PIPELINED)

    def place_run(self, tasks: list[TaskInfo], node_name: str, pipelined: bool = False,
                  stop: Callable[[int], bool] | None = None) -> int:
        """Tentatively allocate (or pipeline) tasks of one job, all Pending on no node, on one
        node in one step, as that many `allocate` calls would; `stop(j)` (asked after the j-th
        task) ends the run early. Returns how many were placed (at least one)."""
        first = tasks[0]
        done: list[TaskInfo] = []
        # Recorded first: a run that fails half-way is still undone by discard.
        self.operations.append(Operation("pipeline" if pipelined else "allocate", first, first.status,
                                         first.node_name, run=done))
        self.ssn._place_run(tasks, node_name, TaskStatus.PIPELINED if pipelined else TaskStatus.ALLOCATED,
                            done, stop)
        return len(done)

    def placed_tasks(self) -> Iterator[TaskInfo]:
        """Every task allocated or pipelined so far in this statement, in order."""
        for op in self.operations:
            if op.kind != "evict":
                yield from op.run if op.run is not None else (op.task,)

    def evict(self, task: TaskInfo, reason: str) -> None:
        """Tentatively evict the task (Releasing); final only on commit."""
        self.operations.append(Operation("evict", task, task.status, task.node_name, reason))
        self.ssn._evict(task)

    def evicted(self) -> list[TaskInfo]:
        """Tasks evicted so far in this statement."""
        return [op.task for op in self.operations if op.kind == "evict"]

    def discard(self) -> None:
        """Undo every operation, last first: deallocate handlers fire for undone placements,
        allocate handlers for undone evictions (Volcano's unevict)."""
        for op in reversed(self.operations):
            if op.kind == "evict":
                self.ssn._unevict(op.task, op.prev_status)
            elif op.run is not None:
                for task in reversed(op.run):
                    self.ssn._unplace(task, op.prev_status, op.prev_node)
            else:
                self.ssn._unplace(op.task, op.prev_status, op.prev_node)
        self.operations.clear()

    def commit(self) -> None:
        """Keep every operation; evictions join the session result."""
        for op in self.operations:
            if op.kind == "evict":
                self.ssn._record_eviction(op.task, op.reason)
        self.operations.clear()
