"""One scheduling cycle: lock, load, run scheduler_core, write every decision, in one transaction.

`cycle_run()` is what Celery beat, `manage.py run_scheduler` and the tests call. Only one cycle
runs at a time (a transaction-scoped PostgreSQL advisory lock); a cycle that finds the lock taken
records a skipped CycleRun and returns. A failure rolls every decision back and records the
error in a CycleRun of its own.
"""

from __future__ import annotations

import copy
import logging
import os
import time
from contextlib import ExitStack
from datetime import datetime, timedelta

from django.conf import settings
from django.db import DatabaseError, transaction
from django.utils import timezone

from scheduler_core.explain.node_scores import recording_scores
from scheduler_core.framework.conf import SchedulerConf, parse_conf
from scheduler_core.framework.node_search import NodeScan
from scheduler_core.model import ClusterSnapshot
from scheduler_core.result import SessionResult
from scheduler_core.scheduler import gc_paused, run_session_isolated
from schedweb.core.models import SchedulerConfig, TaskStatus
from schedweb.scheduling import (
    commit_check,
    cycle_metrics,
    incremental,
    job_changes,
    job_conditions,
    metrics_queues,
    placement_scores,
    sample_copy,
    shard_runtime,
    writes,
)
from schedweb.scheduling.adapter import LoadedState
from schedweb.scheduling.default_conf import schedweb_default_conf
from schedweb.scheduling.metrics import QUEUE_FIGURES
from schedweb.scheduling.models import CycleRun, QueueSample, TaskPlacementScores
from schedweb.scheduling.sample_rollup import complete_samples
from schedweb.scheduling.signals import cycle_finished

logger = logging.getLogger(__name__)

# Test hook: seconds to sleep in the middle of the write phase (to kill a cycle there).
WRITE_SLEEP_ENV = "SCHEDWEB_CYCLE_WRITE_SLEEP"
PRUNE_EVERY = 100  # cycles between deletions of history older than SCHEDULER_HISTORY_DAYS (default 1)
_conf_cache: dict[tuple[int, str], SchedulerConf] = {}
# The feasible-node search's rotating index (scheduler_core.framework.node_search): where the
# next cycle's predicate pass starts. Kept by the process from cycle to cycle, as Volcano keeps it
# in a process global (a new process starts at the first node); one process runs the cycles.
NODE_SCAN = NodeScan()


def active_conf() -> tuple[int | None, SchedulerConf]:
    """The active SchedulerConfig (version, parsed; cached per version), else schedweb's shipped
    default (hierarchical capacity: parent limits hold; schedweb.scheduling.default_conf)."""
    row = SchedulerConfig.objects.filter(active=True).values_list("version", "yaml").first()
    if row is None:
        return None, schedweb_default_conf()
    version, text = row
    # Keyed by the text too: versions restart when a database is recreated (tests, re-init).
    conf = _conf_cache.get((version, text))
    if conf is None:
        if len(_conf_cache) > 16:
            _conf_cache.clear()
        conf = _conf_cache[(version, text)] = parse_conf(text)
    return version, conf


def with_rescheduling_last_run(conf: SchedulerConf, now: float) -> tuple[SchedulerConf, bool]:
    """Inject `lastRun` (the last cycle in which rescheduling was due) into the rescheduling plugin.

    Returns the conf to use and whether rescheduling is due in this cycle. The previous
    *cycle's* time would make it never due (cycles are seconds apart, the interval minutes).
    """
    option = conf.plugin("rescheduling")
    if option is None:
        return conf, False
    from scheduler_core.plugins.rescheduling.rescheduling import ReschedulingPlugin

    last = (CycleRun.objects.filter(rescheduling_ran=True, skipped=False).order_by("-started")
            .values_list("started", flat=True).first())
    conf = copy.deepcopy(conf)
    option = conf.plugin("rescheduling")
    assert option is not None
    option.arguments.pop("lastRun", None)
    if last is not None:
        option.arguments["lastRun"] = last.timestamp()
    plugin = ReschedulingPlugin(option.arguments)
    return conf, bool(plugin.strategies) and plugin.time_to_run(now)


class DatabaseUnavailable(Exception):
    """A cycle failed and its failure could not be recorded either: the database is locked or
    gone (the loop backs off and retries; schedweb.scheduling.loop)."""


def cycle_run(*, now: datetime | None = None, shard: str = "") -> CycleRun:
    """Run one cycle of the instance `shard` ("" = unsharded; shard_runtime) or record a skip
    when another cycle of that instance holds its leader lock.

    Raises DatabaseUnavailable (from the cycle's error) when a failed cycle cannot be recorded.
    """
    started = now or timezone.now()
    t0 = time.perf_counter()
    unavailable = False
    run: CycleRun | None = None
    try:
        # The whole cycle, load included: it builds the snapshot's tens of thousands of objects.
        with gc_paused(), transaction.atomic():
            incremental.use_shard(shard)  # this instance's kept snapshot
            if not writes.try_leader_lock(shard_runtime.lock_key(shard)):
                run = CycleRun.objects.create(started=started, skipped=True, shard=shard)
                cycle_metrics.record_skip()
                return run
            run = _run_locked(started, t0, shard)
            return run
    except Exception as exc:  # recorded, then the loop goes on: one bad cycle must not stop it
        incremental.forget()  # the kept snapshot holds the rolled-back session's changes
        job_conditions.forget()  # and what it remembers as stored was rolled back
        run = None  # a failed cycle gets no prebuild time added to its record
        try:
            with transaction.atomic():
                failed = CycleRun.objects.create(started=started, errors=f"{type(exc).__name__}: {exc}",
                                                 duration_seconds=time.perf_counter() - t0, shard=shard)
                cycle_metrics.record_failure()
        except DatabaseError as record_error:  # nothing to log per cycle: the loop logs the outage
            unavailable = True
            raise DatabaseUnavailable(str(exc)) from record_error
        logger.exception("scheduling cycle failed")
        return failed
    finally:  # after the commit (the API prebuilds readers' bodies of the new data version and
        # adds its time to the run's timing)
        if not unavailable:  # nothing new to build, and its readers would fail the same way
            cycle_finished.send_robust(sender=cycle_run, run=run, shard=shard)


def _run_locked(started: datetime, t0: float, shard: str = "") -> CycleRun:
    c0 = time.process_time()
    instance = shard_runtime.resolve(shard)  # the NodeShard rows: lock, shard nodes, routing
    version, conf = active_conf()
    conf, rescheduling_due = with_rescheduling_last_run(conf, started.timestamp())
    loaded: list[LoadedState] = []
    load_time = [0.0]
    pending = [0]

    def build() -> ClusterSnapshot:
        # The kept snapshot brought up to date (schedweb.scheduling.incremental). Called again
        # only when a job's failure could not be undone in-session: then a fresh full load.
        began = time.perf_counter()
        loaded.append(incremental.load(started, version, fresh=bool(loaded)))
        load_time[0] += time.perf_counter() - began
        # Node scores of the placements (placement_scores), unless the snapshot is a burst: the
        # session reads the ambient `recording_scores` (record_scores=None), set per snapshot.
        pending[0] = placement_scores.pending_tasks(loaded[-1].snapshot)
        scoring.enter_context(recording_scores(placement_scores.top_for(pending[0])))
        return loaded[-1].snapshot

    with ExitStack() as scoring:  # record_scores left at None: the ambient value build() sets
        _, result = run_session_isolated(build, conf, node_scan=NODE_SCAN,
                                         sharding=(lambda snap: instance.sharding_for(snap, loaded[-1]))
                                         if instance.sharded else None)
    incremental.settle(loaded[-1], result)  # what the session changed in memory only goes back
    state = shard_runtime.own_state(loaded[-1], instance)  # writes leave other instances' jobs be
    t2, c2 = time.perf_counter(), time.process_time()
    t1 = t0 + load_time[0]
    report_job_errors(result)
    dropped = commit_check.drop_conflicts(instance, state, result)  # races lost to another shard
    task_changes, task_jobs = _task_changes(state, result)
    changes, code_changed, same_code = job_changes.job_changes(state, result, started)
    # Every job this cycle writes, before any task row (see writes.lock_jobs: no deadlock with a cancel).
    writes.lock_jobs({c.id for c in changes} | task_jobs)
    binds, pipelined, evictions, conflicts, applied = _write_tasks(task_changes, started)
    conflicts += dropped
    if delay := float(os.environ.get(WRITE_SLEEP_ENV) or 0):
        time.sleep(delay)
    conflicts += _write_jobs(changes, code_changed, same_code, started)
    # PodGroup conditions: only those that say something new (their own table, no job row).
    job_conditions.write(job_conditions.changed(state, result))
    previous = (CycleRun.objects.filter(skipped=False, shard=shard).order_by("-id")
                .values_list("id", flat=True).first())
    run = CycleRun.objects.create(
        started=started, config_version=version, load_seconds=t1 - t0, schedule_seconds=t2 - t1,
        binds=binds, pipelined=pipelined, evictions=evictions, pending_jobs=len(result.reasons),
        conflicts=conflicts, warnings=state.warnings + list(result.warnings),
        rescheduling_ran=rescheduling_due, job_errors=len(result.job_errors), timing=dict(result.timing),
        pending_tasks=pending[0], scores_recorded=result.node_scores is not None, shard=shard)
    shard_runtime.write_in_use(instance)
    incremental.finish(run.pk)
    writes.insert_placement_scores(placement_scores.placement_rows(state, result, run.pk, applied))
    # Flat plugins report only queues holding jobs: parents (and idle leaves) get samples too.
    samples = complete_samples(sample_copy.samples_of(result, run.pk, started), state.snapshot.queues)
    _keep_samples(run.pk, samples, writes.insert_samples(samples, previous))
    t3 = time.perf_counter()
    run.write_seconds, run.duration_seconds = t3 - t2, t3 - t0
    # The write phase's own CPU (job changes, JSON, sending), and the whole cycle's (`cpu_s`):
    # the database's work is in neither. What the cycle costs, whatever else shares the machine.
    c3 = time.process_time()
    run.timing = {**run.timing, "write_cpu_s": c3 - c2, "cpu_s": c3 - c0}
    CycleRun.objects.filter(pk=run.pk).update(write_seconds=run.write_seconds,
                                              duration_seconds=run.duration_seconds, timing=run.timing)
    cycle_metrics.record_session(run, state, result, applied, started)
    if run.pk % PRUNE_EVERY == 0:
        prune_history(started)
    return run


_reported: dict[str, str] = {}  # job uid -> the error last logged for it (this process)


def report_job_errors(result: SessionResult) -> None:
    """Log each set-aside job once (again only when its error changes), not every cycle."""
    global _reported
    current = {}
    for uid, error in sorted(result.job_errors.items()):
        text = f"{error.get('where')}: {error.get('field') or error.get('error')}: {error.get('message')}"
        current[uid] = text
        if _reported.get(uid) != text:
            logger.error("job %s set aside (InvalidJob) in the scheduling cycle: %s", uid, text)
    _reported = current


def prune_history(now: datetime) -> int:
    """Delete cycles (with their queue samples and placement scores) older than
    SCHEDULER_HISTORY_DAYS; returns rows deleted."""
    days = float(getattr(settings, "SCHEDULER_HISTORY_DAYS", 1))
    cutoff = now - timedelta(days=days)
    # Children first, each in one DELETE (the cycles' cascade would collect them row by row).
    samples, _ = QueueSample.objects.filter(created__lt=cutoff).delete()
    scores, _ = TaskPlacementScores.objects.filter(cycle__started__lt=cutoff).delete()
    cycles, _ = CycleRun.objects.filter(started__lt=cutoff).delete()
    return samples + scores + cycles


def _task_changes(state: LoadedState, result: SessionResult) -> tuple[list[writes.TaskChange], set[int]]:
    """Binds (Binding), pipelines, evictions (Releasing), expired pipelines (back to Pending);
    and the ids of those tasks' jobs."""
    changes: list[writes.TaskChange] = []
    jobs: set[int] = set()
    for decisions, status in ((result.binds, TaskStatus.BINDING), (result.pipelined, TaskStatus.PIPELINED)):
        for uid, node in sorted(decisions.items()):
            row, node_id = state.tasks.get(uid), state.node_ids.get(node)
            if row is None or node_id is None:
                continue
            changes.append(writes.TaskChange(row[0], row[1], row[2], status, node_id, True))
            jobs.add(row[3])
    for uid in sorted(set(result.evictions)):
        row = state.tasks.get(uid)
        if row is not None and row[1] != TaskStatus.RELEASING:
            changes.append(writes.TaskChange(row[0], row[1], row[2], TaskStatus.RELEASING))
            jobs.add(row[3])
    # A nomination lasts one session: a task pipelined before and not now waits again.
    for uid in sorted(state.pipelined):
        pk, status, updated, job_id = state.tasks[uid]
        if uid not in result.binds and uid not in result.pipelined:
            changes.append(writes.TaskChange(pk, status, updated, TaskStatus.PENDING, None, True))
            jobs.add(job_id)
    return changes, jobs


def _write_tasks(changes: list[writes.TaskChange], now: datetime) -> tuple[int, int, int, int, set[int]]:
    """Apply the task changes; returns (binds, pipelined, evictions applied, conflicts, applied task ids)."""
    applied = writes.update_tasks(changes, now)
    counts = {TaskStatus.BINDING: 0, TaskStatus.PIPELINED: 0, TaskStatus.RELEASING: 0}
    for change in changes:
        if change.id in applied and change.new_status in counts:
            counts[change.new_status] += 1
    conflicts = len(changes) - len(applied)
    if conflicts:
        logger.warning("cycle: %d task decision(s) dropped: the task changed during the cycle", conflicts)
    return (counts[TaskStatus.BINDING], counts[TaskStatus.PIPELINED], counts[TaskStatus.RELEASING], conflicts,
            applied)


def _write_jobs(changes: list[writes.JobChange], code_changed: set[int], same_code: list[int],
                now: datetime) -> int:
    """Apply job changes and the reason history; returns conflicts."""
    applied = writes.update_jobs(changes, now)
    incremental.own_jobs([c for c in changes if c.id in applied])  # kept as written, not re-read
    written = [c for c in changes if c.id in applied]
    writes.write_reason_history([c for c in written if c.id in code_changed], same_code, now,
                                reworded=[c for c in written if c.code and c.id not in code_changed])
    return len(changes) - len(applied)


def _keep_samples(cycle_id: int, samples: list[sample_copy.Sample], stored: list[dict[str, object]]) -> None:
    """Once committed, the samples as the render of /metrics after the cycle would read them
    back (metrics_queues.KEPT: it then reads no sample row)."""
    rows = [(s.queue, s.share, s.weight, s.overused, *(values[f] for f in QUEUE_FIGURES))
            for s, values in zip(samples, stored, strict=True)]
    transaction.on_commit(lambda: metrics_queues.KEPT.keep(cycle_id, rows))
