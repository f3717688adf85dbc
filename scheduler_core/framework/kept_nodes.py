"""The session's NodeTable kept across sessions on one snapshot (issue 27).

A fresh `NodeTable` reads every node's figures and counts every task's status at each open:
work proportional to every node and task that exists, though between two cycles a few hundred
of thousands of nodes change. `KeptNodes`, the framework's part of a lasting `KeptState`
(key "node_table"), keeps a template table as of the last open and refills only the rows that
may differ:

- the nodes holding, now or at the last open, a task of a job the job table's change log names
  (scheduler_core.job_log: every task added, removed, replaced or moved to another status bumps
  its job; the node accounting changes through those tasks);
- the rows the last session's table rewrote (its placements, evictions and undos, `touched`),
  so a task placed and taken off again before this open is seen too;
- the nodes whose object, Resource objects (allocatable, idle, used, releasing, pipelined),
  cordon or task count differ from the last open (a caller replacing a node's figures, as the
  web's incremental load does when a node's allocatable changes).

Nodes added, removed or renamed, a scalar dimension appearing or leaving, another job table
or a break in its log rebuild the template. Each session gets a copy (`NodeTable.copy`): the
template is never moved by a session. Every refilled row is written as a fresh build writes it
(`NodeTable.fill_rows`), and every other row holds the values a fresh build would read from
the same objects, so the table equals a fresh one (tests/scheduler_core/framework/
test_kept_nodes.py).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from scheduler_core.framework.node_table import NodeTable
from scheduler_core.job_log import LogReader
from scheduler_core.model import OCCUPYING_STATUSES, TaskStatus
from scheduler_core.resources import Resource, exact_whole

if TYPE_CHECKING:
    from scheduler_core.framework.kept import KeptState
    from scheduler_core.model import JobInfo, NodeInfo

Sig = tuple[Any, ...]
_HELD = OCCUPYING_STATUSES | {TaskStatus.PIPELINED}


def _sig(node: NodeInfo) -> Sig:
    # Objects by identity (the tuple holds them: an id is never reused while kept).
    return (node, node.allocatable, node.idle, node.used, node.releasing, node.pipelined,
            node.unschedulable, len(node.tasks))


def fresh_used(nodes: dict[str, NodeInfo]) -> Resource:
    """Σ node.used in the nodes' order (overcommit's pool)."""
    used = Resource.empty()
    for node in nodes.values():
        used.add(node.used)
    return used


def nodes_used(ssn: Any) -> Resource:
    """Σ node.used over the session's nodes (a Resource of the caller's own): through the kept
    node table when the session has one, else summed."""
    part = getattr(ssn.node_table, "kept_from", None)
    if isinstance(part, KeptNodes) and part.table is not None:
        return part.used_total(ssn.nodes)
    return fresh_used(ssn.nodes)


def total_of(table: NodeTable) -> Resource:
    """The allocatable of the schedulable nodes, summed in row order (the session's total)."""
    total = Resource.empty()
    for node in table.nodes:
        if not node.unschedulable:
            total.add(node.allocatable)
    return total


class KeptNodes:
    """The template table, what its rows were read from, and the job -> nodes map."""

    def __init__(self) -> None:
        self.reader = LogReader()
        self.table: NodeTable | None = None
        self.sigs: list[Sig] = []
        self.scalars: list[tuple[str, ...]] = []  # per row: its allocatable's scalar names
        self.job_nodes: dict[str, set[str]] = {}  # job uid -> names of the nodes holding its tasks
        self.total = Resource.empty()
        self.touched: set[int] = set()  # the last session's table's rewritten rows
        self.rebuilt = 0  # template builds (tests, benchmarks)
        self.refilled = 0  # rows the last open refilled
        # Σ node.used, kept from the first `used_total` on (None: not kept): each row's used
        # as summed, and how many rows hold each scalar (a fresh sum has only those).
        self._used: Resource | None = None
        self._used_rows: list[Resource] = []
        self._used_counts: dict[str, int] = {}

    def open(self, nodes: dict[str, NodeInfo], jobs: dict[str, JobInfo]) -> tuple[NodeTable, Resource]:
        """The session's table (a copy of the template brought up to date) and the total."""
        changed, log, pos = self.reader.changed(jobs)
        rows = self._dirty(nodes, jobs, changed) if changed is not None and self.table is not None else None
        if rows is None or not self._refill(nodes, rows):
            self._build(nodes, jobs)
        self.reader.commit(log, pos)
        table = self.table.copy()  # type: ignore[union-attr]
        table.kept_from = self  # type: ignore[attr-defined]  # (nodes_used finds the part)
        self.touched = table.touched
        return table, self.total.clone()

    def used_total(self, nodes: dict[str, NodeInfo]) -> Resource:
        """Σ node.used over `nodes` (the nodes this part's last open read), as `fresh_used` sums
        it: kept once asked, moved by the refilled rows' difference while every value is a whole
        number in [0, 2**53) (exact in any order); else summed afresh."""
        if self._used is None:
            rows = [n.used.clone() for n in self.table.nodes]  # type: ignore[union-attr]
            if not all(exact_whole(r) for r in rows):
                return fresh_used(nodes)
            total, counts = Resource.empty(), self._used_counts
            counts.clear()
            for r in rows:
                total.add(r)
                for name in r.scalars:
                    counts[name] = counts.get(name, 0) + 1
            if not exact_whole(total):
                return fresh_used(nodes)
            self._used, self._used_rows = total, rows
        return self._used.clone()

    def _move_used(self, rows: list[int], nodes: list[NodeInfo]) -> None:
        total, kept, counts = self._used, self._used_rows, self._used_counts
        assert total is not None
        for i, node in zip(rows, nodes, strict=True):
            new = node.used.clone()
            if not exact_whole(new):
                self._used = None
                return
            old = kept[i]
            total.sub_without_assert(old)
            for name in old.scalars:
                left = counts[name] - 1
                if left:
                    counts[name] = left
                else:  # no row has it any more: nor would a fresh sum
                    del counts[name], total.scalars[name]
            total.add(new)
            for name in new.scalars:
                counts[name] = counts.get(name, 0) + 1
            kept[i] = new
        if not exact_whole(total):
            self._used = None

    def _build(self, nodes: dict[str, NodeInfo], jobs: dict[str, JobInfo]) -> None:
        table = self.table = NodeTable(nodes.values())
        table.touched = set()
        self.sigs = [_sig(n) for n in table.nodes]
        self.scalars = [tuple(n.allocatable.scalars) for n in table.nodes]
        job_nodes: dict[str, set[str]] = {}
        for node in table.nodes:
            for task in node.tasks.values():
                got = job_nodes.get(task.job_uid)
                if got is None:
                    got = job_nodes[task.job_uid] = set()
                got.add(node.name)
        self.job_nodes = job_nodes
        self.total = total_of(table)
        self._used = None
        self.rebuilt += 1
        self.refilled = len(table)

    def _dirty(self, nodes: dict[str, NodeInfo], jobs: dict[str, JobInfo],
               changed: set[str]) -> set[int] | None:
        """The rows to refill, or None when the rows themselves changed (rebuild)."""
        table = self.table
        assert table is not None
        index, sigs = table.index, self.sigs
        if len(nodes) != len(index):
            return None
        rows = set(self.touched)
        if list(nodes) == table.names:  # the usual case: the snapshot's nodes in name order
            pairs: Any = enumerate(zip(nodes.values(), sigs, strict=True))
        else:
            pairs = ((index.get(name, -1), (node, sigs[index[name]] if name in index else None))
                     for name, node in nodes.items())
        for i, (node, s) in pairs:
            if s is None:
                return None
            if (s[0] is not node or s[1] is not node.allocatable or s[2] is not node.idle
                    or s[3] is not node.used or s[4] is not node.releasing or s[5] is not node.pipelined
                    or s[6] != node.unschedulable or s[7] != len(node.tasks)):
                rows.add(i)
        job_nodes = self.job_nodes
        for uid in changed:
            names = job_nodes.pop(uid, None)
            if names:
                rows.update(index[n] for n in names if n in index)
            job = jobs.get(uid)
            if job is None:
                continue
            # Only tasks in these statuses are held by a node (NodeInfo.add_task).
            now = {t.node_name for status, held in job.task_status_index.items() if status in _HELD
                   for t in held.values() if t.node_name is not None}
            if now:
                job_nodes[uid] = now
                rows.update(index[n] for n in now if n in index)
        return rows

    def _refill(self, nodes: dict[str, NodeInfo], rows: set[int]) -> bool:
        """Refill the rows; False when the scalar dimensions changed (the caller rebuilds)."""
        table = self.table
        assert table is not None
        total_moved = False
        scalars_moved = False
        for i in rows:
            node = nodes[table.names[i]]
            s = self.sigs[i]
            if s[1] is not node.allocatable or s[6] != node.unschedulable:
                total_moved = True
                names = tuple(node.allocatable.scalars)
                if names != self.scalars[i]:
                    self.scalars[i] = names
                    scalars_moved = True
        if scalars_moved:
            present = {name for names in self.scalars for name in names}
            if ["cpu", "memory", *sorted(present)] != table.dims:
                return False
        order = sorted(rows)
        fresh = [nodes[table.names[i]] for i in order]
        if order:
            table.fill_rows(order, fresh)
        for i, node in zip(order, fresh, strict=True):
            self.sigs[i] = _sig(node)
        if self._used is not None and order:
            self._move_used(order, fresh)
        table.touched = set()
        if total_moved:
            self.total = total_of(table)
        self.refilled = len(rows)
        return True


def session_table(kept: KeptState | None, nodes: dict[str, NodeInfo],
                  jobs: dict[str, JobInfo]) -> tuple[NodeTable, Resource]:
    """The session's node table and total: from the kept part when the state keeps answers
    (a lasting state, or a snapshot used a third time), else built afresh."""
    if kept is None or not kept.keeps_answers():
        table = NodeTable(nodes.values())
        return table, total_of(table)
    return kept.part("node_table", KeptNodes).open(nodes, jobs)
