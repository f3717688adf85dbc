"""Commit-time checks against double booking by two scheduler instances (issue 32 item 4).

Two shards' sessions may place on one node (soft mode) or into one queue at the same instant,
each from its own snapshot. Before its binds and pipelines are written, an instance takes one
global commit lock (a transaction-scoped advisory lock: held to the commit, so whoever takes it
next sees these writes), then re-reads from the rows, for the nodes it places on, what is
committed there and, for the queues with a capability along the chains it places into, their
committed allocation. A job whose new placements would put a node over its allocatable (any
resource, pods included) or a queue over its capability loses every placement of this cycle
(gang atomicity), stays Pending and gets a reason saying it lost a race with another scheduler
(retried next cycle). Jobs are taken in uid order, each on top of those kept before it.

Node figures (as the session's): a bind must fit `allocatable - occupying` (Releasing included),
a pipeline `allocatable - (occupying - releasing) - pipelined` (the node's future idle). Tasks
this cycle evicts count as releasing and not as allocated; tasks it binds, pipelines or whose
nomination ends are not counted from their rows (their new state is this cycle's). Queues count
Allocated/Binding/Bound/Running tasks of every leaf under them; only binds allocate.

Skipped, at no cost, on an unsharded cluster (no NodeShard row): one scheduler cannot race itself.
"""

from __future__ import annotations

import logging
from collections import defaultdict
from typing import Any

from django.db import connection

from scheduler_core.result import Reason, ReasonCode, SessionResult
from schedweb.core.models import Queue
from schedweb.scheduling.adapter import LoadedState
from schedweb.scheduling.shard_runtime import Instance

logger = logging.getLogger(__name__)

COMMIT_LOCK_KEY = 0x5C4ED_0002  # one key for every instance (the leader locks are per shard)
EPS = 1e-6
PODS = "pods"
LOST = "lost a race with another scheduler"
_NODE_SQL = (
    "SELECT t.node_id, CASE WHEN t.status = 'Releasing' OR t.id = ANY(%s) THEN 'r' "
    "WHEN t.status = 'Pipelined' THEN 'p' ELSE 'n' END AS kind, r.key, sum(r.value::float8) "
    "FROM core_task t CROSS JOIN LATERAL jsonb_each_text(t.request || '{\"pods\": 1}'::jsonb) r "
    "WHERE t.node_id = ANY(%s) AND t.status IN ('Allocated', 'Binding', 'Bound', 'Running', "
    "'Releasing', 'Pipelined') AND NOT (t.id = ANY(%s)) GROUP BY 1, 2, 3")
_QUEUE_SQL = (
    "SELECT j.queue_id, r.key, sum(r.value::float8) FROM core_task t JOIN core_job j ON t.job_id = j.id "
    "CROSS JOIN LATERAL jsonb_each_text(t.request) r WHERE j.queue_id = ANY(%s) "
    "AND t.status IN ('Allocated', 'Binding', 'Bound', 'Running') AND NOT (t.id = ANY(%s)) GROUP BY 1, 2")

Sums = dict[str, float]


def _add(into: Sums, more: Sums) -> None:
    for key, value in more.items():
        into[key] = into.get(key, 0.0) + value


def _over(total: Sums, limit: dict[str, Any]) -> list[str]:
    """The dimensions of `limit` (numbers) that `total` exceeds."""
    return sorted(k for k, v in limit.items() if isinstance(v, int | float) and not isinstance(v, bool)
                  and total.get(k, 0.0) > float(v) + EPS)


def _request(task: Any) -> Sums:
    return {**task.resreq.to_canonical(), PODS: 1.0}


def drop_conflicts(inst: Instance, state: LoadedState, result: SessionResult) -> int:
    """Take the commit lock and drop the placements of jobs that lost a race (module docstring);
    `result` loses their binds, pipelines and new condition and gets their reason. Returns the
    number of task placements dropped. Call in the cycle's transaction, before the task writes."""
    if not inst.sharded or not (result.binds or result.pipelined):
        return 0
    snap = state.snapshot
    by_job: dict[str, list[tuple[str, str, bool]]] = defaultdict(list)  # job -> (task, node, bind)
    for placed, bind in ((result.binds, True), (result.pipelined, False)):
        for uid, node in placed.items():
            by_job[uid.rsplit("/", 1)[0]].append((uid, node, bind))
    changing = [state.tasks[u][0] for u in (*result.binds, *result.pipelined, *state.pipelined)
                if u in state.tasks]
    evicted = [state.tasks[u][0] for u in result.evictions if u in state.tasks]
    node_ids = {n: state.node_ids[n] for _, placements in by_job.items() for _, n, _ in placements
                if n in state.node_ids}
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_advisory_xact_lock(%s)", [COMMIT_LOCK_KEY])
        cursor.execute(_NODE_SQL, [evicted, sorted(set(node_ids.values())), changing])
        node_rows = cursor.fetchall()
    name_of = {i: n for n, i in node_ids.items()}
    # node -> kind ('n' occupying, 'r' releasing, 'p' pipelined) -> sums
    committed: dict[str, dict[str, Sums]] = defaultdict(lambda: defaultdict(dict))
    for node_id, kind, key, value in node_rows:
        committed[name_of[node_id]][kind][key] = float(value)
    alloc: dict[str, Sums] = {}
    for n in node_ids:
        if n in snap.nodes:
            allocatable = snap.nodes[n].allocatable
            alloc[n] = allocatable.to_canonical()
            if allocatable.max_task_num:  # no pod count stored: no pod limit to check
                alloc[n][PODS] = float(allocatable.max_task_num)
    queues = _QueueCheck(state, by_job, changing, evicted)
    kept_now: dict[str, Sums] = defaultdict(dict)  # binds kept so far, per node
    kept_later: dict[str, Sums] = defaultdict(dict)  # binds and pipelines kept so far, per node
    dropped = 0
    for job_uid in sorted(by_job):
        placements = by_job[job_uid]
        job = snap.jobs.get(job_uid)
        if job is None:
            continue
        now: dict[str, Sums] = defaultdict(dict)
        later: dict[str, Sums] = defaultdict(dict)
        for uid, node, bind in placements:
            req = _request(job.tasks[uid])
            _add(later[node], req)
            if bind:
                _add(now[node], req)
        lost = _node_loss(committed, alloc, kept_now, kept_later, now, later) or queues.loss(job_uid)
        if lost is None:
            for node in later:
                _add(kept_now[node], now.get(node, {}))
                _add(kept_later[node], later[node])
            queues.keep(job_uid)
            continue
        code, message, details = lost
        for uid, _, _ in placements:
            result.binds.pop(uid, None)
            result.pipelined.pop(uid, None)
        dropped += len(placements)
        result.conditions.pop(job_uid, None)
        result.reasons[job_uid] = Reason(code, f"{LOST}: {message}; retried next cycle",
                                         {"commit_conflict": details})
        logger.warning("cycle: job %s lost its %d placement(s) at commit: %s", job_uid, len(placements),
                       message)
    return dropped


def _node_loss(committed: dict[str, dict[str, Sums]], alloc: dict[str, Sums], kept_now: dict[str, Sums],
               kept_later: dict[str, Sums], now: dict[str, Sums], later: dict[str, Sums],
               ) -> tuple[ReasonCode, str, dict[str, Any]] | None:
    """Why the job's placements do not fit a node on top of the committed and kept ones."""
    for node in sorted(later):
        if node not in alloc:
            continue
        rows = committed.get(node, {})
        bound: Sums = {}
        for part in (rows.get("n", {}), rows.get("r", {}), kept_now[node], now.get(node, {})):
            _add(bound, part)
        future: Sums = {}
        for part in (rows.get("n", {}), rows.get("p", {}), kept_later[node], later[node]):
            _add(future, part)
        over = (_over(bound, alloc[node]) if now.get(node) else []) or _over(future, alloc[node])
        if over:
            return (ReasonCode.NodeFit, f"node {node} would be over its allocatable ({', '.join(over)})",
                    {"node": node, "resources": over})
    return None


class _QueueCheck:
    """The committed allocation of the capped queues along the placed jobs' chains."""

    def __init__(self, state: LoadedState, by_job: dict[str, list[tuple[str, str, bool]]],
                 changing: list[int], evicted: list[int]) -> None:
        self.snap = state.snapshot
        self.binds: dict[str, Sums] = {}  # job -> its binds' requests
        self.chain: dict[str, list[str]] = {}  # job -> capped queues from its leaf up
        self.kept: dict[str, Sums] = defaultdict(dict)  # capped queue -> binds kept so far
        self.committed: dict[str, Sums] = defaultdict(dict)
        self.capability: dict[str, dict[str, Any]] = {}
        jobs = {uid: p for uid, p in by_job.items()
                if uid in self.snap.jobs and any(bind for _, _, bind in p)}
        if not jobs:
            return
        rows = list(Queue.objects.values_list("id", "name", "parent_id", "capability"))
        by_id = {r[0]: r for r in rows}
        parent = {r[1]: (by_id[r[2]][1] if r[2] in by_id else None) for r in rows}
        capped = {r[1]: r[3] for r in rows if r[3]}
        if not capped:
            return
        ids = {r[1]: r[0] for r in rows}
        children: dict[str, list[str]] = defaultdict(list)
        for name, up in parent.items():
            if up is not None:
                children[up].append(name)
        for uid, placements in jobs.items():
            job = self.snap.jobs[uid]
            chain, q = [], job.queue
            while q is not None:
                if q in capped:
                    chain.append(q)
                q = parent.get(q)
            if chain:
                self.chain[uid] = chain
                req: Sums = {}
                for t, _, bind in placements:
                    if bind:
                        _add(req, job.tasks[t].resreq.to_canonical())
                self.binds[uid] = req
        needed = {q for chain in self.chain.values() for q in chain}
        if not needed:
            return
        leaves: dict[str, list[str]] = {}  # capped queue -> the leaves under it (itself if a leaf)
        for q in needed:
            stack, out = [q], []
            while stack:
                cur = stack.pop()
                stack.extend(children.get(cur, ()))
                if not children.get(cur):
                    out.append(cur)
            leaves[q] = out
        leaf_ids = sorted({ids[leaf] for out in leaves.values() for leaf in out})
        with connection.cursor() as cursor:
            cursor.execute(_QUEUE_SQL, [leaf_ids, changing + evicted])
            per_leaf: dict[int, Sums] = defaultdict(dict)
            for queue_id, key, value in cursor.fetchall():
                per_leaf[queue_id][key] = float(value)
        for q in needed:
            for leaf in leaves[q]:
                _add(self.committed[q], per_leaf.get(ids[leaf], {}))
            self.capability[q] = capped[q]

    def loss(self, job_uid: str) -> tuple[ReasonCode, str, dict[str, Any]] | None:
        """Why the job's binds do not fit a capped queue of its chain (None: they do)."""
        req = self.binds.get(job_uid)
        if not req:
            return None
        for q in self.chain[job_uid]:
            total: Sums = {}
            for part in (self.committed[q], self.kept[q], req):
                _add(total, part)
            over = _over(total, self.capability[q])
            if over:
                return (ReasonCode.QueueOverCapability,
                        f"queue {q} would be over its capability ({', '.join(over)})",
                        {"queue": q, "resources": over})
        return None

    def keep(self, job_uid: str) -> None:
        """The job's binds are kept: they count for the jobs after it."""
        for q in self.chain.get(job_uid, ()):
            _add(self.kept[q], self.binds[job_uid])
