"""Reads of the scheduling records that the API and the dashboard share: the newest cycle's
samples, and the queue tree with its figures (what tasks hold now, what the cycle decided)."""

from __future__ import annotations

import json
from collections import defaultdict
from typing import Any

from django.db.models import Count, TextField
from django.db.models.functions import Cast

from schedweb.core.choices import ALLOCATED_TASK_STATUSES, TERMINAL_TASK_STATUSES, WAITING_JOB_PHASES
from schedweb.core.models import Job, Queue, Task
from schedweb.core.selectors import add_scaled
from schedweb.scheduling.models import QueueSample

SAMPLE_FIELDS = ("queue", "cycle_id", "deserved", "allocated", "request", "inqueue", "elastic", "capability",
                 "real_capability", "guarantee", "share", "overused", "explanation")


def latest_samples(fields: tuple[str, ...] = SAMPLE_FIELDS) -> dict[str, dict[str, Any]]:
    """Per queue name, the figures of the newest cycle that recorded samples (one query).

    Keys: `fields` (default all: deserved, allocated, request, inqueue, elastic, capability,
    real_capability, guarantee (stored units or None), share, overused, explanation, cycle_id).
    Ask for fewer when the explanations (kilobytes of JSON per queue) are not needed.
    """
    latest = QueueSample.objects.order_by("-cycle_id").values_list("cycle_id", flat=True)[:1]
    names = ("queue", *(f for f in fields if f != "queue"))
    rows = QueueSample.objects.filter(cycle_id__in=latest).values(*names)
    return {row["queue"]: row for row in rows}


def queue_figures(queues: list[Queue] | None = None) -> dict[int, dict[str, Any]]:
    """Per queue id: allocated, request, pending_jobs and the cycle's deserved/real_capability/share.

    The one place that knows where figures come from: allocated/request are summed from the
    tasks as they stand now (grouping identical requests, so the SQL returns one row per distinct
    (queue, status, request), not per task); deserved/real_capability/share come from the newest
    cycle's QueueSample rows (None before the first cycle, or for a queue the queue plugin does
    not report). Resources are in stored units. Four queries, whatever the size; three when
    `queues` (all of them, already loaded) gives the names.
    """
    allocated: dict[int, dict[str, float]] = defaultdict(dict)
    request: dict[int, dict[str, float]] = defaultdict(dict)
    # The request as text: a few dozen distinct texts over thousands of groups, each parsed once.
    rows = (
        Task.objects.exclude(status__in=TERMINAL_TASK_STATUSES)
        .annotate(request_text=Cast("request", TextField()))
        .values_list("job__queue_id", "status", "request_text")
        .annotate(n=Count("id"))
        .order_by()
    )
    parsed: dict[str, dict[str, Any]] = {}
    for queue_id, status, text, n in rows:
        resources = parsed.get(text)
        if resources is None:
            resources = parsed[text] = json.loads(text) if text else {}
        add_scaled(request[queue_id], resources, n)
        if status in ALLOCATED_TASK_STATUSES:
            add_scaled(allocated[queue_id], resources, n)
    pending = dict(
        Job.objects.filter(phase__in=WAITING_JOB_PHASES).values("queue_id").annotate(n=Count("id"))
        .order_by().values_list("queue_id", "n")
    )
    samples = latest_samples(("deserved", "real_capability", "share"))
    if queues is not None:
        ids_by_name = {q.name: q.id for q in queues}
    else:
        ids_by_name = dict(Queue.objects.filter(name__in=list(samples)).values_list("name", "id"))
    sampled = {ids_by_name[name]: row for name, row in samples.items() if name in ids_by_name}
    ids = set(allocated) | set(request) | set(pending) | set(sampled)
    return {
        qid: {
            "allocated": allocated.get(qid) or {},
            "request": request.get(qid) or {},
            "pending_jobs": pending.get(qid, 0),
            "deserved": (sampled.get(qid) or {}).get("deserved"),
            "real_capability": (sampled.get(qid) or {}).get("real_capability"),
            "share": (sampled.get(qid) or {}).get("share"),
        }
        for qid in ids
    }


def _roll_up(children: dict[int | None, list[Queue]], figures: dict[int, dict[str, Any]],
             queue_id: int) -> dict[str, Any]:
    """A parent's allocated/request/pending_jobs are the sums of its subtree (jobs sit in leaves)."""
    own = figures.get(queue_id) or {"allocated": {}, "request": {}, "pending_jobs": 0,
                                     "deserved": None, "real_capability": None, "share": None}
    total = {"allocated": dict(own["allocated"]), "request": dict(own["request"]),
             "pending_jobs": own["pending_jobs"], "deserved": own["deserved"],
             "real_capability": own["real_capability"], "share": own["share"]}
    for child in children.get(queue_id, ()):
        sub = _roll_up(children, figures, child.id)
        add_scaled(total["allocated"], sub["allocated"], 1)
        add_scaled(total["request"], sub["request"], 1)
        total["pending_jobs"] += sub["pending_jobs"]
    figures[queue_id] = total
    return total


def queue_tree() -> tuple[list[Queue], dict[int | None, list[Queue]], dict[int, dict[str, Any]]]:
    """All queues (one query, ordered by name), children by parent id, and rolled-up figures."""
    queues = list(Queue.objects.order_by("name"))
    children: dict[int | None, list[Queue]] = defaultdict(list)
    for q in queues:
        children[q.parent_id].append(q)
    figures = queue_figures(queues)
    for top in children.get(None, ()):
        _roll_up(children, figures, top.id)
    return queues, children, figures
