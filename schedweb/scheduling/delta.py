"""Apply changed rows to a kept snapshot (schedweb.scheduling.incremental's worker).

`Applier.full(now)` wraps a full load (adapter.load_state) with the id maps a later delta needs;
`Applier.apply(changed, now)` re-reads the changed rows of each table (the load's own statements,
restricted by id) and applies them in dependency order: queues, quotas, nodes, jobs, tasks, then
node deletions. Tasks are replaced through JobInfo/NodeInfo methods (old version out with the
status it has in memory, new version in), so job indexes, sums, node and namespace accounting
stay exactly what a full load computes. What it cannot absorb (a renamed queue or node, a
priority class change, a deleted node still holding tasks) raises `Reload`.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from scheduler_core.model import OCCUPYING_STATUSES, ClusterSnapshot, JobInfo, TaskStatus
from scheduler_core.result import SessionResult
from schedweb.core.models import UNSCHEDULED_JOB_PHASES
from schedweb.scheduling.adapter import (
    Decoder,
    JobRow,
    LoadedState,
    core_phase,
    load_state,
    namespace_of,
    node_of,
    queues_of,
    task_holds_unknown_node,
)
from schedweb.scheduling.row_log import JobRowLog
from schedweb.scheduling.snapshot_sql import fetch_all, fetch_by

_TERMINAL = frozenset(UNSCHEDULED_JOB_PHASES)  # finished or suspended: loaded while holding
_STATUS = {s.value: s for s in TaskStatus}
_JOB_FIELDS = ("queue", "min_available", "task_min_available", "min_resources", "priority", "priority_class",
               "phase", "preemptable", "created", "sla_waiting_time")


class Reload(Exception):  # noqa: N818 - a signal, not an error
    """The kept snapshot cannot absorb these changes: load everything."""


def _counts(status: str) -> bool:
    """A task stored in `status` counts in its namespace's `used` (as the full load counts it)."""
    return _STATUS[status] in OCCUPYING_STATUSES


class Applier:
    """A LoadedState kept between cycles, with the id maps that locate changed rows in it."""

    def __init__(self, state: LoadedState, decoder: Decoder) -> None:
        self.state, self.dec = state, decoder
        self.node_names = {pk: name for name, pk in state.node_ids.items()}
        self.job_uids = {row.id: uid for uid, row in state.jobs.items()}
        self.task_uids: dict[int, str] = {}
        self.job_tasks: dict[int, set[str]] = {pk: set() for pk in self.job_uids}
        for uid, (pk, _, _, job_id) in state.tasks.items():
            self.task_uids[pk] = uid
            self.job_tasks[job_id].add(uid)
        self.ns_jobs: dict[str, int] = {}
        for job in state.snapshot.jobs.values():
            self.ns_jobs[job.namespace] = self.ns_jobs.get(job.namespace, 0) + 1
        self.dirty_tasks: set[int] = set()
        self.dirty_jobs: set[int] = set()
        self.row_log = JobRowLog(state.jobs)

    @classmethod
    def full(cls, now: datetime) -> Applier:
        """A full load, ready for deltas."""
        decoder = Decoder()
        return cls(load_state(now, decoder), decoder)

    # -- after the session --------------------------------------------------------------------------
    def settle(self, result: SessionResult) -> None:
        """Reset job phases to their stored values; mark what the session moved for a re-read."""
        state, snap = self.state, self.state.snapshot
        tasks = state.tasks
        for uids in (result.binds, result.pipelined, result.evictions):
            self.dirty_tasks.update(tasks[uid][0] for uid in uids if uid in tasks)
        allocated = TaskStatus.ALLOCATED
        for uid, job in snap.jobs.items():
            bucket = job.task_status_index.get(allocated)
            if bucket:  # allocated without a bind: Pending (or Allocated) in the database
                self.dirty_tasks.update(tasks[t][0] for t in bucket if t in tasks)
            phase = core_phase(state.jobs[uid].phase)
            if job.phase is not phase:
                job.phase = phase
        for uid in set(result.job_errors) | set(snap.set_aside):
            row = state.jobs.get(uid)
            if row is not None:  # its waiting tasks left the job: rebuild it from its rows
                self.dirty_jobs.add(row.id)
        snap.set_aside = {}

    def apply_own_jobs(self, changes: list[Any]) -> None:
        """Jobs our last cycle wrote (writes.JobChange) and nobody changed since: their stored
        phase and reason are what it wrote (the cycle writes no other job column: the scheduler
        name stays the one loaded)."""
        state, jobs = self.state, self.state.snapshot.jobs
        for c in changes:
            uid = self.job_uids.get(c.id)
            if uid is None:
                continue
            state.jobs[uid] = JobRow(c.id, c.phase, c.code, c.message, c.details, c.since,
                                     state.jobs[uid].scheduler_name)
            self.row_log.own.add(uid)
            jobs[uid].phase = core_phase(c.phase)
            state.row_hashes["core_job"].pop(c.id, None)  # the row is what we wrote: not read back

    # -- the delta ----------------------------------------------------------------------------------
    def apply(self, changed: dict[str, set[int]], now: datetime) -> dict[str, int]:
        """Bring the snapshot up to date with the changed rows ({table: ids}); returns row counts."""
        state, snap = self.state, self.state.snapshot
        snap.now, snap.set_aside = now.timestamp(), {}
        state.warnings, state.full, state.queries = [], False, 0
        if changed.get("core_priorityclass"):
            raise Reload("priority classes changed")
        if changed.get("core_queue"):
            self._queues()
        if changed.get("core_namespacequota"):
            self._quotas()
        node_ids = changed.get("core_node", set())
        gone_nodes = self._nodes(node_ids)
        task_ids = changed.get("core_task", set()) | self.dirty_tasks
        # A finished job is loaded only while a task holds a node: re-check it when one changes.
        scope = {state.tasks[self.task_uids[pk]][3] for pk in task_ids if pk in self.task_uids}
        scope = {pk for pk in scope if state.jobs[self.job_uids[pk]].phase in _TERMINAL}
        rebuild = self._jobs(changed.get("core_job", set()) | self.dirty_jobs | scope)
        applied = self._tasks(task_ids, rebuild)
        for pk in gone_nodes:
            self._drop_node(pk)
        self.dirty_tasks, self.dirty_jobs = set(), set()
        return {"nodes": len(node_ids), "jobs": len(rebuild), "tasks": applied, "queries": state.queries}

    def _queues(self) -> None:
        rows = fetch_all(["queues"])["queues"]
        self.state.queries += 1
        queues, names = queues_of(rows)
        old = self.state.queue_names
        if any(names.get(pk) != name for pk, name in old.items() if pk in names):
            raise Reload("a queue was renamed")
        self.state.queue_names = names
        self.state.snapshot.queues = ClusterSnapshot.build(queues=queues).queues

    def _quotas(self) -> None:
        rows = fetch_all(["quotas"])["quotas"]
        self.state.queries += 1
        self.state.quotas = {r.namespace: r.hard for r in rows}
        self._namespaces()

    def _namespaces(self) -> None:
        """The namespaces a full load lists (its jobs' and the quotas', sorted), keeping the
        objects (and their `used`) of those already there."""
        spaces, quotas = self.state.snapshot.namespaces, self.state.quotas
        names = {ns for ns, n in self.ns_jobs.items() if n} | set(quotas)
        out = {}
        for name in sorted(names):
            space = spaces.get(name)
            if space is None:
                space = namespace_of(name, quotas.get(name))
            else:
                space.quota = namespace_of(name, quotas.get(name)).quota
            out[name] = space
        self.state.snapshot.namespaces = out

    def _maybe_drop_namespace(self, name: str) -> None:
        if not self.ns_jobs.get(name) and name not in self.state.quotas:
            self.state.snapshot.namespaces.pop(name, None)

    # -- nodes ----------------------------------------------------------------------------------------
    def _nodes(self, ids: set[int]) -> set[int]:
        """Apply new and changed nodes; returns the ids gone (dropped after the tasks)."""
        rows = fetch_by("nodes", "id", sorted(ids))
        self.state.queries += bool(ids)
        snap, names = self.state.snapshot, self.node_names
        hashes = self.state.row_hashes["core_node"]
        added = False
        for r in rows:
            known = names.get(r.id)
            if known is not None and known != r.name:
                raise Reload("a node was renamed")
            hashes[r.id] = hash(r)
            fresh = node_of(r)
            node = snap.nodes.get(r.name)
            if known is None:
                if node is not None:  # deleted and created again under the same name
                    self._drop_node(self.state.node_ids[r.name])
                snap.nodes[r.name], names[r.id], self.state.node_ids[r.name] = fresh, r.name, r.id
                added = True
                continue
            assert node is not None
            if node.allocatable != fresh.allocatable:
                node.allocatable = fresh.allocatable
                node.idle = fresh.allocatable.clone().sub_without_assert(node.used)
            node.labels, node.taints, node.unschedulable = fresh.labels, fresh.taints, fresh.unschedulable
            node.usage, node.usage_time = fresh.usage, fresh.usage_time
        if added:
            snap.nodes = dict(sorted(snap.nodes.items()))
        return ids - {r.id for r in rows}

    def _drop_node(self, pk: int) -> None:
        name = self.node_names.pop(pk, None)
        if name is None:
            return
        node = self.state.snapshot.nodes.get(name)
        if node is not None and node.tasks:
            raise Reload(f"node {name} went while tasks hold it")
        self.state.snapshot.nodes.pop(name, None)
        self.state.node_ids.pop(name, None)
        self.state.row_hashes["core_node"].pop(pk, None)

    # -- jobs -----------------------------------------------------------------------------------------
    def _jobs(self, ids: set[int]) -> set[int]:
        """Apply changed jobs; returns the ids whose tasks must all be re-read."""
        state, snap = self.state, self.state.snapshot
        rows = fetch_by("jobs", "id", sorted(ids))
        state.queries += bool(ids)
        rebuild: set[int] = set()
        for r in rows:
            queue = state.queue_names.get(r.queue_id)
            if queue is None:  # its queue is newer than our queue read: it comes with the queue
                self._drop_job(r.id)
                continue
            fresh, row = self.dec.job(r, queue, state.priority_classes.get(r.priority_class_id))
            state.row_hashes["core_job"][r.id] = hash(r)
            known = self.job_uids.get(r.id)
            if known is None:
                if fresh.uid in snap.jobs:  # deleted and submitted again under the same name
                    self._drop_job(state.jobs[fresh.uid].id)
                state.jobs[fresh.uid] = row
                self.row_log.added(fresh.uid)
                self._add_job(fresh, r.id)
                rebuild.add(r.id)
                continue
            if known != fresh.uid:
                raise Reload("a job was renamed")
            job, old = snap.jobs[known], state.jobs[known]
            if (job.priority != fresh.priority or (old.phase in _TERMINAL) != (r.phase in _TERMINAL)
                    or r.id in self.dirty_jobs):
                rebuild.add(r.id)
            for name in _JOB_FIELDS:
                setattr(job, name, getattr(fresh, name))
            state.jobs[known] = row
            self.row_log.moved.add(known)
        for pk in ids - {r.id for r in rows}:
            self._drop_job(pk)
        return rebuild

    def _add_job(self, job: JobInfo, pk: int) -> None:
        """Add a job (its JobRow already in state.jobs) where the load would list it: created, id."""
        state, snap = self.state, self.state.snapshot
        last_uid = next(reversed(snap.jobs), None)
        snap.jobs[job.uid] = job
        if last_uid is not None:
            last = snap.jobs[last_uid]
            if (job.created, pk) < (last.created, state.jobs[last_uid].id):  # rare: an older job
                order = sorted(snap.jobs.items(), key=lambda kv: (kv[1].created, state.jobs[kv[0]].id))
                snap.jobs = dict(order)
        self.job_uids[pk] = job.uid
        self.job_tasks[pk] = set()
        self.ns_jobs[job.namespace] = self.ns_jobs.get(job.namespace, 0) + 1
        if job.namespace not in snap.namespaces:
            self._namespaces()

    def _drop_job(self, pk: int) -> None:
        uid = self.job_uids.get(pk)
        if uid is None:
            return
        for task_uid in list(self.job_tasks.get(pk, ())):
            self._drop_task(task_uid)
        del self.job_uids[pk]
        self.job_tasks.pop(pk, None)
        self.state.row_hashes["core_job"].pop(pk, None)
        job = self.state.snapshot.jobs.pop(uid)
        self.state.jobs.pop(uid, None)
        self.row_log.dropped(uid)
        self.ns_jobs[job.namespace] -= 1
        self._maybe_drop_namespace(job.namespace)

    # -- tasks ----------------------------------------------------------------------------------------
    def _tasks(self, ids: set[int], rebuild: set[int]) -> int:
        """Re-read changed tasks and every task of the `rebuild` jobs; returns rows applied."""
        state = self.state
        rows = fetch_by("tasks", "job", sorted(rebuild))
        seen = {r.id for r in rows}
        rest = sorted(ids - seen)
        more = fetch_by("tasks", "id", rest)
        state.queries += bool(rebuild) + bool(rest)
        missing_jobs = {r.job_id for r in more if r.job_id not in self.job_uids}
        if missing_jobs:  # a finished job that holds a node again: it is loaded again too
            rows_jobs = self._jobs(missing_jobs)
            extra = fetch_by("tasks", "job", sorted(rows_jobs))
            state.queries += bool(rows_jobs)
            rows += [r for r in extra if r.id not in seen]
            rebuild |= rows_jobs
        rows += more
        state.queries += self.dec.prefetch(rows)  # the new specs, in one statement
        kept: dict[int, set[str]] = {pk: set() for pk in rebuild}
        for r in rows:
            uid = self._apply_task(r)
            if uid is not None and r.job_id in kept:
                kept[r.job_id].add(uid)
        returned = {r.id for r in rows}
        for pk in ids - returned:
            uid = self.task_uids.get(pk)
            if uid is not None:
                self._drop_task(uid)
        for job_pk, uids in kept.items():
            for uid in self.job_tasks.get(job_pk, set()) - uids:
                self._drop_task(uid)
        return len(rows)

    def _apply_task(self, r: Any) -> str | None:
        state, snap = self.state, self.state.snapshot
        job_uid = self.job_uids.get(r.job_id)
        job = snap.jobs.get(job_uid) if job_uid is not None else None
        known = self.task_uids.get(r.id)
        if job is None:
            if known is not None:
                self._drop_task(known)
            return None
        node = self.node_names.get(r.node_id) if r.node_id else None
        uid = f"{job.uid}/{r.name}"  # adapter.task_key
        if task_holds_unknown_node(r, node):
            state.warnings.append(f"task {uid}: {r.status} on an unknown node; skipped")
            if known is not None:
                self._drop_task(known)
            return None
        if known is not None and known != uid:
            self._drop_task(known)  # renamed: out under the old name, in under the new one
        record = state.tasks.get(uid)
        if record is not None and record[0] != r.id:
            self._drop_task(uid)  # another row took the name (deleted and created again)
            record = None
        new = self.dec.task(r, job, node)
        spaces = snap.namespaces
        if record is None:
            job.add_task(new)
        else:
            old = job.tasks.get(uid)
            if old is None:  # set aside by the last session's screen: no longer in its job
                job.add_task(new)
            else:
                if old.node_name is not None:
                    old_node = snap.nodes.get(old.node_name)
                    if old_node is not None:
                        old_node.remove_task(old)
                job.replace_task(old, new)
                if _counts(record[1]):
                    spaces[job.namespace].used.sub_without_assert(old.resreq)
        if new.node_name is not None:
            snap.nodes[new.node_name].add_task(new)
        if _counts(r.status):
            spaces[job.namespace].used.add(new.resreq)
        state.tasks[uid] = (r.id, r.status, r.updated, r.job_id)
        state.row_hashes["core_task"][r.id] = hash(r)
        self.task_uids[r.id] = uid
        self.job_tasks[r.job_id].add(uid)
        if r.status == TaskStatus.PIPELINED:
            state.pipelined.add(uid)
        else:
            state.pipelined.discard(uid)
        return uid

    def _drop_task(self, uid: str) -> None:
        state, snap = self.state, self.state.snapshot
        record = state.tasks.pop(uid, None)
        if record is None:
            return
        pk, status, _, job_pk = record
        self.task_uids.pop(pk, None)
        state.row_hashes["core_task"].pop(pk, None)
        self.job_tasks.get(job_pk, set()).discard(uid)
        state.pipelined.discard(uid)
        job_uid = self.job_uids.get(job_pk)
        job = snap.jobs.get(job_uid) if job_uid is not None else None
        task = job.tasks.get(uid) if job is not None else None
        if job is None or task is None:
            return  # set aside (a waiting task: no node, no namespace use)
        if task.node_name is not None and task.node_name in snap.nodes:
            snap.nodes[task.node_name].remove_task(task)
        job.delete_task(task)
        if _counts(status):
            snap.namespaces[job.namespace].used.sub_without_assert(task.resreq)
