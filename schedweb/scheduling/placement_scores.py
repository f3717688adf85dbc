"""Why a cycle put a task on its node: recording the node scores of placements, and reading them.

The cycle (`cycle._run_locked`) asks scheduler_core for the top `SCHEDULER_RECORD_SCORES` nodes
of every try (`run_session(..., record_scores=N)`, scheduler_core.explain.node_scores), except in a burst
(more than `SCHEDULER_RECORD_SCORES_MAX_PENDING` pending tasks in the snapshot: recording costs
most in a big fill), and keeps them for the tasks it bound or pipelined, at most
`SCHEDULER_RECORD_SCORES_PER_JOB` a job per cycle (a gang's identical tasks explain each other)
and not again for a task pipelined to the node it was already nominated to. Each row holds the
`NodeScore` JSON of the chosen node and of the try's best nodes (`TaskPlacementScores`).
Readers (the job page, `GET /api/v1/jobs/{id}/placements/`, `schedctl why`) take the newest
record of each task, and say so when the cycle that placed a job recorded nothing.
"""

from __future__ import annotations

import json
from typing import Any

from django.conf import settings
from django.db.models import Max, Q

from scheduler_core.model import ClusterSnapshot, TaskStatus
from scheduler_core.result import SessionResult
from schedweb.scheduling.adapter import LoadedState
from schedweb.scheduling.models import CycleRun, TaskPlacementScores
from schedweb.scheduling.writes import PlacementRow

# What each node-order plugin rewards, in a few words (the job page's hints).
PLUGIN_HINTS: dict[str, str] = {
    "binpack": "fuller nodes: the share of the node's cpu and memory (and weighted scalars) used once "
               "the task lands",
    "nodeorder": "emptier nodes (leastrequested), even cpu/memory use (balancedresource), preferred node "
                 "labels (nodeaffinity), no untolerated PreferNoSchedule taints (tainttoleration), "
                 "spread over topology domains (podtopologyspread)",
    "usage": "nodes whose measured cpu and memory usage is low",
}
OTHER_HINT = "nodes by its own rule"


def record_top() -> int:
    """Nodes kept per try (SCHEDULER_RECORD_SCORES, default 3); 0 = recording off."""
    return max(int(getattr(settings, "SCHEDULER_RECORD_SCORES", 3)), 0)


def max_pending() -> int:
    """Above this many pending tasks a cycle is a burst and records nothing (default 2000)."""
    return int(getattr(settings, "SCHEDULER_RECORD_SCORES_MAX_PENDING", 2000))


def per_job() -> int:
    """Placements recorded per job per cycle (SCHEDULER_RECORD_SCORES_PER_JOB, default 10)."""
    return max(int(getattr(settings, "SCHEDULER_RECORD_SCORES_PER_JOB", 10)), 0)


def pending_tasks(snapshot: ClusterSnapshot) -> int:
    """Pending tasks of the snapshot (stored Pipelined ones load as Pending): one look per job."""
    pending = TaskStatus.PENDING
    return sum(len(job.task_status_index.get(pending) or ()) for job in snapshot.jobs.values())


def top_for(pending: int) -> int:
    """The `record_scores` of a cycle whose snapshot has `pending` pending tasks (0: no recording)."""
    return record_top() if pending <= max_pending() else 0


def placement_rows(state: LoadedState, result: SessionResult, cycle_id: int,
                   applied: set[int]) -> list[PlacementRow]:
    """Rows (writes.PLACEMENT_COLUMNS) for the binds and pipelines whose task write applied."""
    scores = result.node_scores
    cap = per_job()
    if not scores or not cap:
        return []
    rows: list[PlacementRow] = []
    counts: dict[int, int] = {}
    jobs = state.snapshot.jobs
    for decisions, pipelined in ((result.binds, False), (result.pipelined, True)):
        for uid, node in sorted(decisions.items()):
            row, entry = state.tasks.get(uid), scores.get(uid)
            if row is None or entry is None or row[0] not in applied:
                continue
            job_uid, _, task_name = uid.rpartition("/")  # task_key: "namespace/job/task", no "/" inside
            if pipelined and uid in state.pipelined:
                job = jobs.get(job_uid)
                task = job.tasks.get(uid) if job is not None else None
                if task is not None and task.nominated_node == node:
                    continue  # nominated there last cycle too: that cycle's record explains it
            job_id = row[3]
            if counts.get(job_id, 0) >= cap:
                continue
            counts[job_id] = counts.get(job_id, 0) + 1
            chosen = entry.chosen_scores
            rows.append((cycle_id, job_id, task_name, node, pipelined, entry.action,
                         None if chosen is None else json.dumps(chosen.to_json()),
                         json.dumps([e.to_json() for e in entry.top])))
    return rows


# -- reading -------------------------------------------------------------------------------------

def number(x: float) -> str:
    """A score as people read it: at most 2 decimals, no trailing zeros (62.5, 250, 8.59); the
    API and `simulate --json` keep the exact values (ties are decided on those, see why_nodes)."""
    text = f"{float(x):.2f}".rstrip("0").rstrip(".")
    return "0" if text == "-0" else text


def score_text(entry: dict[str, Any] | None) -> str:
    """"binpack 62.5, nodeorder 250: total 312.5" for one NodeScore JSON ("" for None)."""
    if not entry:
        return ""
    # By plugin name: PostgreSQL's jsonb keeps keys in its own order, not the configuration's.
    parts = ", ".join(f"{name} {number(v)}" for name, v in sorted((entry.get("plugins") or {}).items()))
    total = f"total {number(entry.get('total', 0.0))}"
    return f"{parts}: {total}" if parts else total


def latest_records(job_id: int) -> Any:
    """The newest TaskPlacementScores of each of the job's tasks (a queryset, newest cycle first,
    then by task name), with its cycle's start."""
    newest = (TaskPlacementScores.objects.filter(job_id=job_id).values("task_name")
              .annotate(newest=Max("id")).values("newest"))
    return (TaskPlacementScores.objects.filter(id__in=newest).select_related("cycle")
            .only("cycle__started", "task_name", "node", "pipelined", "action", "chosen_scores", "top",
                  "cycle_id", "job_id").order_by("-cycle_id", "task_name"))


def record_json(record: TaskPlacementScores) -> dict[str, Any]:
    """One record as the API answers it (the NodeScore JSON of scheduler_core.explain.node_scores)."""
    return {"task": record.task_name, "node": record.node, "pipelined": record.pipelined,
            "action": record.action, "cycle": record.cycle_id, "cycle_started": record.cycle.started,
            "chosen_scores": record.chosen_scores, "top": list(record.top or [])}


def unrecorded_note(job: Any) -> str:
    """Why a placed job has no recorded scores ("" when it has some, or was never placed): the
    first cycle since its submission that placed tasks without recording."""
    if TaskPlacementScores.objects.filter(job_id=job.pk).exists():
        return ""
    if not job.tasks.filter(Q(node__isnull=False) | Q(started__isnull=False)).exists():
        return ""
    unrecorded = CycleRun.objects.filter(skipped=False, scores_recorded=False, errors="")
    cycle = (unrecorded.filter(started__gte=job.created)
             .filter(Q(binds__gt=0) | Q(pipelined__gt=0)).order_by("started", "id")
             .only("binds", "pipelined", "pending_tasks", "started").first())
    if cycle is None:
        return ""
    if cycle.pending_tasks > max_pending():
        placed = cycle.binds + cycle.pipelined
        return (f"scores not recorded: a burst of {placed} task{'s' if placed != 1 else ''} was placed "
                f"(cycle {cycle.pk}: {cycle.pending_tasks} tasks were waiting, more than the "
                f"{max_pending()} above which a cycle records no scores)")
    return f"scores not recorded: recording was off in cycle {cycle.pk}, which placed it"


def plugin_hint(name: str) -> str:
    """What the plugin `name` rewards (PLUGIN_HINTS), for the job page."""
    return PLUGIN_HINTS.get(name, OTHER_HINT)
