"""Dry run of a submission (issue 20): where a job would go in the next cycle; nothing is written."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.core.exceptions import ValidationError
from django.db import connection
from django.utils import timezone
from rest_framework.exceptions import PermissionDenied
from rest_framework.test import APIClient

from schedweb.api import commands
from schedweb.api.job_dry_run import preview_submission
from schedweb.audit.models import AuditEntry
from schedweb.core import services
from schedweb.core.access import QueueAccess
from schedweb.core.models import Job, Task
from schedweb.scheduling.agent import agent_step
from schedweb.scheduling.cycle import cycle_run

# Exact nodes and task order: PostgreSQL keeps microseconds (SQLite's julianday() reads lose them,
# so the creation-time ties that order tasks by name fall differently); the change log is PostgreSQL's.
pytestmark = [pytest.mark.django_db,
              pytest.mark.skipif(connection.vendor != "postgresql", reason="needs PostgreSQL")]


def _iso(t) -> str:
    return t.isoformat().replace("+00:00", "Z")


def _body(name: str, tasks: int, cpu: str, duration: float | None = 600, queue: str = "q") -> dict:
    return {"namespace": "ns", "name": name, "queue": queue, "min_member": tasks,
            "tasks": [{"name": f"{name}-{i}", "request": {"cpu": cpu, "memory": "1Gi"}, "duration": duration}
                      for i in range(tasks)]}


@pytest.fixture
def cluster(django_user_model):
    """Two 4-cpu nodes, leaf queue q (shipped conf), a staff user; `full(t0)` fills the cluster with
    a job Running since t0 whose tasks end at t0+600."""
    services.queue_create(name="q")
    for name in ("n0", "n1"):
        services.node_create(name=name, allocatable={"cpu": "4", "memory": "8Gi", "pods": 110})
    user = django_user_model.objects.create_user("ops", password="pw", is_staff=True)

    def full(t0) -> None:
        commands.job_submit(access=QueueAccess(user), data=_body("fill", 2, "4"))
        assert cycle_run(now=t0).binds == 2
        agent_step(now=t0)

    return user, full


def _written() -> tuple:
    with connection.cursor() as cursor:
        cursor.execute("SELECT count(*), max(id) FROM scheduling_change")
        log = cursor.fetchone()
    return log, Job.objects.count(), Task.objects.count(), AuditEntry.objects.count()


# (job body, fill the cluster first, placement, reason code, estimated start after t, basis, sentence)
CASES = [
    pytest.param(_body("gang", 3, "2"), False, "bound", None, 0, "declared",
                 "expected to start in the next scheduling cycle, if running jobs end as declared",
                 id="bound"),
    # The cluster is full until t0+600 = t+500 (t = t0+100): 500 s is "about 8 min". Under the
    # shipped hierarchical capacity, q's real capability is the cluster's 8 cpu, all allocated.
    pytest.param(_body("wait", 2, "2"), True, "pending", "QueueOverCapability", 500, "declared",
                 "expected to start in about 8 min, if running jobs end as declared", id="pending"),
    pytest.param(_body("huge", 1, "9"), False, "never", "NeverFits", None, "never",
                 "not expected to start: it cannot run on the cluster as it stands", id="never"),
]


@pytest.mark.parametrize("body,busy,placement,code,start_after,basis,sentence", CASES)
def test_the_dry_run_agrees_with_the_next_real_cycle(cluster, body, busy, placement, code, start_after, basis,
                                                     sentence):
    user, full = cluster
    t = timezone.now().replace(microsecond=0)
    if busy:
        full(t - timedelta(seconds=100))
    before = _written()
    preview = preview_submission(body, user, now=t)
    assert _written() == before  # nothing kept: no job, task, audit entry or change log row
    assert (preview["job"], preview["placement"], preview["estimate_basis"], preview["sentence"]) == (
        f"ns/{body['name']}", placement, basis, sentence)
    start = None if start_after is None else _iso(t + timedelta(seconds=start_after))
    assert preview["estimated_start"] == start
    assert (preview["reason"] or {}).get("code") == code
    # Submitted for real, then the next cycle: the same nodes, the same reason.
    job, _ = commands.job_submit(access=QueueAccess(user), data=body)
    cycle_run(now=t)
    job.refresh_from_db()
    nodes = dict(Task.objects.filter(job=job, node__isnull=False).values_list("name", "node__name"))
    assert preview["nodes"] == nodes
    assert (preview["reason"] or {}).get("code", "") == job.reason_code
    assert (preview["reason"] or {}).get("message", "") == job.reason_message
    assert preview["phase"] == job.phase
    if placement == "bound":
        assert sorted(nodes.values()) == ["n0", "n0", "n1"] and preview["reason"] is None


def test_a_refused_submission_raises_as_the_real_one_and_writes_nothing(cluster, django_user_model):
    user, _ = cluster
    before = _written()
    with pytest.raises(ValidationError) as err:
        preview_submission(_body("x", 1, "1", queue="nope"), user)
    assert err.value.message_dict == {"queue": ["Unknown queue 'nope'."]}
    with pytest.raises(ValidationError) as err:
        preview_submission({**_body("x", 1, "1"), "min_member": 2}, user)
    assert "min_member" in err.value.message_dict
    stranger = django_user_model.objects.create_user("stranger", password="pw")
    with pytest.raises(PermissionDenied):
        preview_submission(_body("x", 1, "1"), stranger)
    assert _written() == before


def test_no_queue_means_the_default_queue(cluster):
    user, _ = cluster
    body = _body("solo", 1, "1")
    del body["queue"]
    preview = preview_submission(body, user)
    assert (preview["placement"], list(preview["nodes"])) == ("bound", ["solo-0"])


VCJOB = """\
apiVersion: batch.volcano.sh/v1alpha1
kind: Job
metadata: {name: train, namespace: ml}
spec:
  queue: q
  minAvailable: 2
  tasks:
  - name: worker
    replicas: 2
    template:
      spec:
        containers:
        - name: main
          resources: {requests: {cpu: "2", memory: 1Gi}}
"""


def test_the_manifest_dry_run_previews_each_job(cluster):
    user, _ = cluster
    client = APIClient()
    client.force_authenticate(user)
    before = _written()
    response = client.generic("POST", "/api/v1/manifests/import/?dry_run=true", VCJOB.encode(),
                              content_type="application/yaml")
    assert response.status_code == 200, response.content
    change = response.json()["changes"][0]
    preview = change.pop("preview")
    assert change == {"document": "documents[0]", "kind": "Job", "name": "ml/train", "action": "created",
                      "diff": {}}
    assert (preview["job"], preview["placement"], sorted(preview["nodes"]), preview["reason"],
            preview["estimate_basis"]) == ("ml/train", "bound", ["train-worker-0", "train-worker-1"], None,
                                           "declared")
    assert _written() == before
    # Without the dry run no preview is computed.
    real = client.generic("POST", "/api/v1/manifests/import/", VCJOB.encode(),
                          content_type="application/yaml")
    assert "preview" not in real.json()["changes"][0]


def test_post_jobs_dry_run_answers_the_preview_and_writes_nothing(cluster):
    user, _ = cluster
    client = APIClient()
    client.force_authenticate(user)
    before = _written()
    response = client.post("/api/v1/jobs/?dry_run=true", _body("gang", 3, "2"), format="json")
    assert response.status_code == 200, response.content
    body = response.json()
    assert (body["job"], body["placement"], sorted(body["nodes"].values())) == (
        "ns/gang", "bound", ["n0", "n0", "n1"])
    assert _written() == before
    # Bad input is the real submission's 400, naming the field.
    bad = client.post("/api/v1/jobs/?dry_run=true", _body("x", 1, "1", queue="nope"), format="json")
    assert bad.status_code == 400 and "queue" in bad.json()["error"]["fields"]
