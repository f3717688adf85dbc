"""Session: one scheduling cycle over a snapshot (Volcano's `framework.Session`).

`open_session` builds the configured plugins (tier order) and lets them register callbacks;
actions then query the session and change it through `allocate` / `pipeline` / `evict`
(directly or through a Statement); `close_session` turns the final state into a SessionResult.
The session mutates the snapshot's objects in place (no deep copies): use a fresh snapshot.
"""

from __future__ import annotations

import time
from typing import Any

import numpy as np

from scheduler_core.framework.callbacks import CallbackRegistry
from scheduler_core.framework.close_phases import ClosePhases
from scheduler_core.framework.conf import SchedulerConf
from scheduler_core.framework.hooks import NO_HOOKS, ScoreSink, SessionHooks
from scheduler_core.framework.interface import (  # noqa: F401  (re-exported for plugins)
    Event,
    EventHandler,
    Plugin,
    PredicateResult,
    ValidateResult,
)
from scheduler_core.framework.isolation import JobError
from scheduler_core.framework.kept import KeptState
from scheduler_core.framework.kept_nodes import session_table
from scheduler_core.framework.node_search import FeasibleSearch, NodeScan
from scheduler_core.framework.operations import SessionOperations
from scheduler_core.framework.registry import load_all, plugin_builders
from scheduler_core.framework.sharding import Sharding, ShardView
from scheduler_core.framework.work_budget import WorkMeter
from scheduler_core.model import ClusterSnapshot, JobInfo, NodeInfo, QueueInfo, TaskInfo, TaskStatus
from scheduler_core.result import SessionResult


class Session(SessionOperations, CallbackRegistry):
    """Snapshot + callbacks + the operations actions use."""

    def __init__(self, snapshot: ClusterSnapshot, conf: SchedulerConf,
                 node_scan: NodeScan | None = None, work_budget: int | None = None,
                 sharding: Sharding | None = None, kept: KeptState | None = None) -> None:
        self.snapshot = snapshot
        # Plugins' figures kept across sessions on this snapshot (framework.kept); None = none.
        self.kept = kept
        self.conf = conf
        self.jobs: dict[str, JobInfo] = snapshot.jobs
        self.nodes: dict[str, NodeInfo] = snapshot.nodes
        self.queues: dict[str, QueueInfo] = snapshot.queues
        self.namespaces = snapshot.namespaces
        self.priority_classes = snapshot.priority_classes
        self.now = snapshot.now
        self._init_callbacks(conf.tiers)
        self._hooks = (-1, [], [], [])  # SessionOperations._handlers fills it
        # Kept across sessions with a lasting kept state (framework.kept_nodes): only the rows
        # that may have changed are refilled.
        self.node_table, self.total_resource = session_table(kept, self.nodes, snapshot.jobs)
        # The feasible-node search limit of allocate's and backfill's predicate pass, with the
        # caller's rotating index (framework.node_search).
        self.node_search = FeasibleSearch(len(self.node_table), conf.options, node_scan)
        # This scheduler's shard over the rows (framework.sharding): hard mode fails the rows
        # outside it in `predicate`, soft mode orders the actions' candidate groups.
        self.shard = ShardView(sharding, self.node_table)
        # The jobs the actions place (routing by scheduler name): `jobs` itself unless another
        # instance's jobs are in the snapshot; theirs count on nodes and in queues, nothing more.
        self.own_jobs: dict[str, JobInfo] = self.shard.own_jobs(self.jobs)
        self.result = SessionResult()
        self.plugins: dict[str, Plugin] = {}
        # Tasks placed (allocated or pipelined) in this session, in placement order.
        self.placed: dict[str, TaskInfo] = {}
        # job_valid's answers: job uid -> (job, revision, min_available, queue, answer). The
        # job-valid callbacks (gang, capacity) read only the job's tasks (whose every change bumps
        # `revision`), min_available, the queue and what is fixed for the session, so an entry
        # whose job shows the same values holds the same answer (a refusal's record is made once
        # either way: a plugin records a code once per job).
        self._valid: dict[str, tuple] = {}
        self.eviction_reasons: dict[str, str] = {}
        # Reason ledger (read by reasons.build_reasons): job uid -> candidate reasons / fit errors.
        self.reason_records: dict[str, list[dict[str, Any]]] = {}
        self.fit_errors: dict[str, dict[str, Any]] = {}
        self._static_pred: dict[tuple, list[tuple[str, np.ndarray]]] = {}
        self._pred_cache: dict[tuple, PredicateResult] = {}
        # Jobs set aside (framework.isolation): by the screen before opening, or by a guard.
        self.quarantined: dict[str, JobError] = dict(snapshot.set_aside)
        for uid, error in self.quarantined.items():
            self.result.job_errors[uid] = error.to_json()
        # Per-node score recording (the caller's hooks.scores), None = off: set by open_session.
        self.score_recorder: ScoreSink | None = None
        self.session_hooks: SessionHooks = NO_HOOKS
        # Work units per job against the budget (framework.work_budget); the guards name the job.
        self.work = WorkMeter(work_budget)
        self._opened_at = time.perf_counter()

    # -- small lookups -------------------------------------------------------------------------
    def release(self) -> None:
        """Drop everything the session holds, once its result is built (run_session's last step).

        Plugins, and the callbacks they registered, point back at the session, and the node
        table's cached views at the table: reference cycles that would leave the whole session
        (every job, task and node of the snapshot) to the cyclic collector, whose pass over a
        few hundred thousand objects then lands, unaccounted, on whatever runs next.
        """
        table = self.__dict__.get("node_table")
        if table is not None:
            table.release()
        self.__dict__.clear()

    def quarantine(self, job: JobInfo, error: JobError) -> None:
        """Set the job aside for the rest of the session: job_valid answers InvalidJob for it, and
        what it was given earlier in the session (committed rounds) is taken back."""
        self.quarantined[job.uid] = error
        self.result.job_errors[job.uid] = error.to_json()
        for task in [t for t in self.placed.values() if t.job_uid == job.uid]:
            self._unplace(task, TaskStatus.PENDING, None)

    def job_valid(self, job: JobInfo) -> ValidateResult | None:
        """InvalidJob for a set-aside job, else the plugins' answer (first failing result),
        memoised per job state for the session (`_valid`)."""
        error = self.quarantined.get(job.uid)
        if error is not None:
            return ValidateResult(False, "InvalidJob", error.reason_message())
        uid, queue = job.uid, job.queue  # (a logged field costs a property call: read once)
        hit = self._valid.get(uid)
        if (hit is not None and hit[0] is job and hit[1] == job.revision and hit[3] == queue
                and hit[2] == job.min_available):
            return hit[4]
        answer = super().job_valid(job)
        self._valid[uid] = (job, job.revision, job.min_available, queue, answer)
        return answer

    def job_of(self, task: TaskInfo) -> JobInfo:
        """The task's job."""
        return self.jobs[task.job_uid]

    def queue_of(self, job: JobInfo) -> QueueInfo | None:
        """The job's queue (None when the job names an unknown queue)."""
        return self.queues.get(job.queue)

    def plugin_option(self, name: str) -> Any:
        """The conf's PluginOption of a plugin (switches, arguments), or None."""
        return self.conf.plugin(name)

    # -- predicates and scores -----------------------------------------------------------------
    def predicate(self, task: TaskInfo) -> PredicateResult:
        """All enabled predicates over the NodeTable; static answers are cached per sched_key.

        Returned arrays are read-only: combine them into new arrays (`ok & fit`).
        """
        entries = self._flat("predicate")
        key = task.sched_key
        all_static = all(static for _, (_, static) in entries)
        if all_static:
            hit = self._pred_cache.get(key)
            if hit is not None:
                return hit
        res = PredicateResult.combine(self.predicate_sequence(task), len(self.node_table))
        if all_static:
            self._pred_cache[key] = res
        return res

    def predicate_rows(self, task: TaskInfo, rows: np.ndarray | int) -> np.ndarray | bool:
        """`predicate(task).ok_mask[rows]`, the same answer and the same work charged, without
        combining every predicate's masks over the whole table (allocate re-verifies a few rows
        after each placement)."""
        if all(static for _, (_, static) in self._flat("predicate")):
            return self.predicate(task).ok_mask[rows]  # cached per sched_key after the first ask
        ok = np.ones(len(rows), dtype=bool) if isinstance(rows, np.ndarray) else True
        for _, mask, _ in self.predicate_sequence(task):
            ok = ok & ~mask[rows]
        return ok

    def predicate_sequence(self, task: TaskInfo) -> list[tuple[str, np.ndarray, bool]]:
        """What `predicate` combines, in its order, the work charged as it charges it: (reason,
        failing rows, listed even when it blames no row: the hard shard's) per mask. A row is
        blamed on the first mask that fails it; a mask that blames no row is not listed."""
        entries = self._flat("predicate")
        table = self.node_table
        self.work.charge_task(task, len(table))
        key = task.sched_key
        out: list[tuple[str, np.ndarray, bool]] = []
        shard_failure = self.shard.failure
        if shard_failure is not None:
            out.append((shard_failure[0], shard_failure[1], True))
        for name, (fn, static) in entries:
            if static:
                masks = self._static_pred.get((name, key))
                if masks is None:
                    masks = list(fn(task, table))
                    self._static_pred[(name, key)] = masks
            else:
                masks = fn(task, table)
            out.extend((reason, mask, False) for reason, mask in masks)
        return out

    def node_scores(self, task: TaskInfo, mask: np.ndarray) -> np.ndarray:
        """Sum of the enabled node-order and batch-node-order scores (one float per row).

        Only rows in `mask` are meaningful (others may be 0). When the mask selects few rows,
        plugins score a NodeTable view of just those rows; a callback that returns a
        full-length array anyway (precomputed scores) is indexed by the rows.
        """
        table = self.node_table
        n = len(table)
        fns = self._flat("node_order") + self._flat("batch_node_order")
        scores = np.zeros(n)
        rows = np.flatnonzero(mask)
        self.work.charge_task(task, len(rows))
        if 0 < len(rows) * 4 < n:
            view = table.view(rows)
            ones = np.ones(len(rows), dtype=bool)
            part = np.zeros(len(rows))
            for _, fn in fns:
                got = fn(task, view, ones)
                part += got[rows] if len(got) == n else got
            scores[rows] = part
            return scores
        for _, fn in fns:
            scores += fn(task, table, mask)
        return scores

    def node_score_parts(self, task: TaskInfo, mask: np.ndarray, rows: np.ndarray) -> dict[str, np.ndarray]:
        """Per plugin, its node-order plus batch-node-order score at each of `rows` (rows in `mask`).

        The breakdown of `node_scores(task, mask)[rows]`, computed the same way over the same
        mask (scores normalised over the scored nodes, e.g. topology spread, depend on it);
        plugins in callback order. Only the score recording (scheduler_core.explain.node_scores) asks.
        """
        table = self.node_table
        n = len(table)
        fns = self._flat("node_order") + self._flat("batch_node_order")
        out: dict[str, np.ndarray] = {}
        sel = np.flatnonzero(mask)
        view = None
        if 0 < len(sel) * 4 < n:  # the view path of node_scores
            view, ones, at = table.view(sel), np.ones(len(sel), dtype=bool), np.searchsorted(sel, rows)
        for name, fn in fns:
            if view is not None:
                got = fn(task, view, ones)
                part = got[rows] if len(got) == n else got[at]
            else:
                part = fn(task, table, mask)[rows]
            out[name] = out[name] + part if name in out else np.asarray(part, dtype=float)
        return out

    def node_row_score(self, task: TaskInfo, row: int) -> float:
        """`node_scores(task, mask)[row]` for a mask holding only `row` (the per-placement re-score).

        Plugins that registered a `row_fn` answer in plain floats; the others score the row's
        one-row view, exactly as node_scores would.
        """
        fns = self.row_score_fns()
        self.work.charge_task(task, 1)
        if all(fn is not None for _, fn in fns):
            total = 0.0
            for _, fn in fns:
                total += fn(task, row)
            return total
        mask = np.zeros(len(self.node_table), dtype=bool)
        mask[row] = True
        return float(self.node_scores(task, mask)[row])

    def best_node(self, task: TaskInfo, mask: np.ndarray) -> int | None:
        """Row with the highest score among `mask` (ties: lowest row = name first); None if empty.

        Soft sharding: the best of the shard's rows in `mask`, else of the others (each group
        scored alone)."""
        for group in self.shard.split(mask):
            if group.any():
                scores = np.where(group, self.node_scores(task, group), -np.inf)
                return int(np.argmax(scores))
        return None

    # -- operations (Volcano's session/statement verbs; the bookkeeping in SessionOperations) ---
    def allocate(self, task: TaskInfo, node_name: str) -> None:
        """Task -> Allocated on the node (it is bound at close if its job is ready)."""
        self._place(task, node_name, TaskStatus.ALLOCATED)

    def pipeline(self, task: TaskInfo, node_name: str) -> None:
        """Task -> Pipelined on the node (waits for releasing resources)."""
        self._place(task, node_name, TaskStatus.PIPELINED)

    def evict(self, task: TaskInfo, reason: str) -> None:
        """Task -> Releasing right away (not undoable; use a Statement to try)."""
        self._evict(task)
        self._record_eviction(task, reason)

    def _record_eviction(self, task: TaskInfo, reason: str) -> None:
        if task.uid not in self.eviction_reasons:
            self.result.evictions.append(task.uid)
        self.eviction_reasons[task.uid] = reason

    def statement(self) -> Any:
        """A new Statement: try operations, then commit or discard."""
        from scheduler_core.framework.statement import Statement

        return Statement(self)

    # -- reasons ledger -------------------------------------------------------------------------
    def record_reason(self, job_uid: str, code: Any, message: str, plugin: str,
                      details: dict | None = None) -> None:
        """Remember a candidate reason why a job could not progress (build_reasons picks one)."""
        self.reason_records.setdefault(job_uid, []).append(
            {"code": code, "message": message, "plugin": plugin, "details": details or {}})

    def record_fit_errors(self, job_uid: str, task_uid: str, fit_errors: Any) -> None:
        """Remember why a task fitted no node (latest answer per task wins)."""
        self.fit_errors.setdefault(job_uid, {})[task_uid] = fit_errors


def open_session(snapshot: ClusterSnapshot, conf: SchedulerConf, record_scores: bool | int = False,
                 node_scan: NodeScan | None = None, work_budget: int | None = None,
                 sharding: Sharding | None = None, hooks: SessionHooks | None = None,
                 kept: KeptState | None = None) -> Session:
    """Build the session and every configured plugin; call on_session_open in tier order.

    `hooks` (framework.hooks): what the caller adds from above the framework, the reasons built
    at close and the score sink; None = neither. `record_scores` (True = top 10, N = top N)
    records the per-node scores of the placement decisions into `result.node_scores` at close
    through `hooks.scores`; off by default.
    `node_scan` is the feasible-node search's rotating index the caller keeps across sessions
    (None: a fresh one, starting at the first node). `work_budget`: work units per job
    (framework.work_budget; None = the process default). `sharding`: this scheduler's shard
    (framework.sharding; None = no sharding, every node). `kept`: the plugins' state kept with
    the snapshot (framework.kept; None = every plugin builds from scratch).
    """
    load_all()
    ssn = Session(snapshot, conf, node_scan, work_budget, sharding, kept)
    if kept is not None:
        kept.sessions += 1
    ssn.session_hooks = hooks or NO_HOOKS
    if record_scores and ssn.session_hooks.scores is not None:
        ssn.score_recorder = ssn.session_hooks.scores(ssn, record_scores)
    for tier in conf.tiers:
        for opt in tier.plugins:
            builder = plugin_builders.get(opt.name)
            if builder is None:
                ssn.result.warn(f"plugin {opt.name} is not implemented; skipped")
                continue
            plugin = builder(opt.arguments)
            ssn.plugins[opt.name] = plugin
    timing = ssn.result.timing
    for tier in conf.tiers:
        for opt in tier.plugins:
            plugin = ssn.plugins.get(opt.name)
            if plugin is not None:
                # Each plugin times itself, as Volcano's framework records OnSessionOpen.
                started = time.perf_counter()
                plugin.on_session_open(ssn)
                timing[f"plugin_{opt.name}_open_s"] = round(time.perf_counter() - started, 6)
    return ssn


def close_session(ssn: Session) -> SessionResult:
    """Dispatch ready jobs, record pipelined tasks and phases, close plugins, build reasons."""
    res = ssn.result
    ready: dict[str, bool] = {}
    for uid in sorted(ssn.placed):
        task = ssn.placed[uid]
        job = ssn.jobs[task.job_uid]
        if task.status is TaskStatus.ALLOCATED:
            if job.uid not in ready:
                ready[job.uid] = ssn.job_ready(job)
            if ready[job.uid]:
                res.binds[uid] = task.node_name
        elif task.status is TaskStatus.PIPELINED:
            res.pipelined[uid] = task.node_name
    placed_here: dict[str, int] = {}
    for task in ssn.placed.values():
        if task.status is TaskStatus.ALLOCATED:
            placed_here[task.job_uid] = placed_here.get(task.job_uid, 0) + 1
    # Phases: only the jobs that changed since the last close when the state keeps answers
    # (framework.close_phases; a snapshot used once would keep them for nobody).
    keep = ssn.kept is not None and ssn.kept.keeps_answers()
    phases = ssn.kept.part("close_phases", ClosePhases) if keep else ClosePhases()
    res.job_phase.update(phases.close(ssn.jobs, ssn.own_jobs, placed_here, ssn.shard.foreign))
    # Bound tasks move to Binding (same node and queue accounting), like Volcano's dispatch.
    for uid in res.binds:
        task = ssn.placed[uid]
        ssn.jobs[task.job_uid].update_task_status(task, TaskStatus.BINDING)
    for tier in ssn.conf.tiers:
        for opt in tier.plugins:
            plugin = ssn.plugins.get(opt.name)
            if plugin is not None:
                started = time.perf_counter()
                plugin.on_session_close(ssn)
                res.timing[f"plugin_{opt.name}_close_s"] = round(time.perf_counter() - started, 6)
    if ssn.session_hooks.reasons is not None:
        res.reasons = ssn.session_hooks.reasons(ssn)
    res.sharding = ssn.shard.summary({**res.binds, **res.pipelined})
    res.work = ssn.work.summary()
    if ssn.score_recorder is not None:
        res.node_scores = ssn.score_recorder.finish(res)
    res.timing["session_s"] = round(time.perf_counter() - ssn._opened_at, 6)
    return res
