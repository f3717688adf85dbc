"""NeverFits at submit time (issue 16): the 201 of a job that already cannot run as submitted
carries `warnings: [{code: "NeverFits", kind, message, dimension, need, limit}]`.

The check is scheduler_core.explain.never_fits' own (`NeverFitsIndex.check`), which reads only facts no
other job can change: node allocatable and static predicates, the queue limits of the active
configuration. It runs against a *probe*: a session opened and closed on a minimal snapshot (the
nodes without their tasks, the queue tree, one empty placeholder job per leaf queue so that flat
queue plugins report figures for every leaf) with the active configuration. The probe is kept
per process and rebuilt when the node-side fingerprint changes (node and queue counts and
newest `updated`, the active configuration: read by the submission's one context query,
schedweb.core.job_store), but at most once per NEVER_FITS_PROBE_MIN_AGE seconds (default 1: node
heartbeats move the fingerprint, and a warning is advice; the first cycle after the submission
gives the authoritative reason). A burst of submissions reuses one probe, and the index caches
its fit per task class, so a repeated job shape costs a dictionary lookup.

The job is accepted all the same, as Kubernetes accepts an unschedulable pod.
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from django.conf import settings
from django.utils import timezone

from scheduler_core.model import ClusterSnapshot, JobInfo, JobPhase, TaskInfo, TaskStatus
from scheduler_core.resources import Resource

PLACEHOLDER_NAMESPACE = "schedweb-submit-probe"


@dataclass
class Probe:
    """A closed session's NeverFits index for one node-side fingerprint."""

    fingerprint: str
    built: float           # time.monotonic() of the build
    index: Any             # scheduler_core.explain.never_fits.NeverFitsIndex
    lock: threading.Lock   # the index caches per task class: one check at a time


_probe: Probe | None = None
_build_lock = threading.Lock()


def min_age() -> float:
    """settings.NEVER_FITS_PROBE_MIN_AGE: seconds a probe is kept even if its fingerprint moved."""
    return float(getattr(settings, "NEVER_FITS_PROBE_MIN_AGE", 1.0))


def build_probe(fingerprint: str, now: datetime | None = None) -> Probe:
    """Open and close a session on the nodes and queues as stored, with the active configuration."""
    from scheduler_core.explain.reasons import CloseState
    from scheduler_core.framework.session import close_session, open_session
    from schedweb.scheduling.adapter import namespace_of, node_of, priority_classes_of, queues_of
    from schedweb.scheduling.cycle import active_conf
    from schedweb.scheduling.snapshot_sql import fetch_all

    rows = fetch_all(["priority_classes", "queues", "nodes"])
    queues, _ = queues_of(rows["queues"])
    parents = {q.parent for q in queues}
    placeholders = [JobInfo(uid=f"{PLACEHOLDER_NAMESPACE}/{q.name}", name=q.name,
                            namespace=PLACEHOLDER_NAMESPACE, queue=q.name, min_available=0)
                    for q in queues if q.name not in parents]
    stamp = (now or timezone.now()).timestamp()
    snapshot = ClusterSnapshot.build(
        nodes=[node_of(r) for r in rows["nodes"]], queues=queues, jobs=placeholders,
        namespaces=[namespace_of(PLACEHOLDER_NAMESPACE, None)],
        priority_classes=priority_classes_of(rows["priority_classes"]).values(), now=stamp)
    _, conf = active_conf()
    ssn = open_session(snapshot, conf)
    close_session(ssn)  # the queue plugin reports its figures (real capability) at close
    return Probe(fingerprint, time.monotonic(), CloseState(ssn).never_fits, threading.Lock())


def probe_for(fingerprint: str) -> Probe:
    """The kept probe, rebuilt when the fingerprint moved and it is older than min_age()."""
    global _probe
    probe = _probe
    if probe is not None and (probe.fingerprint == fingerprint or time.monotonic() - probe.built < min_age()):
        return probe
    with _build_lock:
        probe = _probe
        stale = probe is not None and time.monotonic() - probe.built >= min_age()
        if probe is None or (probe.fingerprint != fingerprint and stale):
            probe = _probe = build_probe(fingerprint)
    return probe


def forget() -> None:
    """Drop the kept probe (tests; a configuration change is seen through the fingerprint)."""
    global _probe
    _probe = None


_STATUS = {s.value: s for s in TaskStatus}


def job_info(job: Any, tasks: list[dict[str, Any]]) -> JobInfo:
    """A Job and its task rows (dicts of Task fields, as schedweb.core.job_store inserts them) as
    the scheduler sees them at submit time."""
    pc = job.priority_class
    info = JobInfo(uid=f"{job.namespace}/{job.name}", name=job.name, namespace=job.namespace,
                   queue=job.queue.name, min_available=job.min_member,
                   task_min_available=dict(job.min_task_member or {}),
                   min_resources=Resource.from_canonical(job.min_resources) if job.min_resources is not None
                   else None, priority=pc.value if pc is not None else 0,
                   priority_class=pc.name if pc is not None else "", phase=JobPhase.PENDING,
                   preemptable=job.preemptable, created=job.created.timestamp(),
                   sla_waiting_time=job.sla_waiting_time)
    for t in tasks:
        info.add_task(TaskInfo(
            uid=f"{info.uid}/{t['name']}", name=t["name"], namespace=job.namespace, job_uid=info.uid,
            resreq=Resource.from_canonical(t["request"] or {}), status=_STATUS[t["status"]], role=t["role"],
            priority=t["priority"] if t["priority"] is not None else info.priority,
            preemption_policy=t["preemption_policy"], preemptable=t["preemptable"],
            node_selector=t["node_selector"] or {}, tolerations=t["tolerations"] or [],
            affinity=t["affinity"],
            labels=t["labels"] or {}, created=info.created, duration=t["duration"],
            topology_spread_constraints=t["topology_spread_constraints"] or []))
    return info


def warning_of(reason: Any) -> dict[str, Any]:
    """The 201's warning entry of a NeverFits reason."""
    details = reason.details or {}
    return {"code": str(getattr(reason.code, "value", reason.code)), "kind": details.get("kind"),
            "message": reason.message, "dimension": details.get("dimension"),
            "need": details.get("need"), "limit": details.get("limit")}


def submit_warnings(jobs: list[Any], fingerprint: str) -> list[list[dict[str, Any]]]:
    """Per job (each with `_new_tasks`, as schedweb.api.commands leaves them): its warnings."""
    probe = probe_for(fingerprint)
    out = []
    for job in jobs:
        info = job_info(job, getattr(job, "_new_tasks", []))
        with probe.lock:
            reason = probe.index.check(info)
        out.append([warning_of(reason)] if reason is not None else [])
    return out
