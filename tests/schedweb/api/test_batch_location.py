"""A batch's 201 carries `Location`: the job list of exactly the batch's jobs (ids as runs);
each answered item carries its job's `url`; a manifest's changes carry their objects' `url`."""

from __future__ import annotations

import pytest
from rest_framework.test import APIClient

from schedweb.api.job_id_ranges import id_ranges
from schedweb.core.models import Job

from .conftest import make_job, make_queue


@pytest.fixture
def staff(make_user) -> APIClient:
    client = APIClient()
    client.force_authenticate(make_user("boss", staff=True))
    return client


def _job(name: str, **extra) -> dict:
    return {"namespace": "ml", "name": name, "queue": "q", "tasks": [{"name": "t"}], **extra}


@pytest.mark.parametrize(("ids", "text"), [
    ([], ""), ([7], "7"), ([3, 1, 2, 7], "1-3,7"), ([5, 6, 9, 10, 11, 20], "5-6,9-11,20"), ([2, 2], "2"),
])
def test_ids_are_written_as_runs(ids, text):
    assert id_ranges(ids) == text


def test_a_batch_is_located_by_the_list_of_its_jobs(staff):
    queue = make_queue("q")
    other = make_job(queue, "before", namespace="ml", tasks=1)
    first = staff.post("/api/v1/jobs/batch/", {"jobs": [_job("r", idempotency_key="k")]}, format="json")
    assert first.status_code == 201
    response = staff.post("/api/v1/jobs/batch/", {"jobs": [
        _job("a"), _job("r", idempotency_key="k"), _job("b")]}, format="json")
    assert response.status_code == 201
    body = response.json()
    ids = [r["job"]["id"] for r in body["results"]]
    assert [r["url"] for r in body["results"]] == [f"/api/v1/jobs/{pk}/" for pk in ids]
    assert response["Location"] == f"/api/v1/jobs/?id={id_ranges(ids)}"
    listed = staff.get(response["Location"]).json()
    assert sorted(j["id"] for j in listed["results"]) == sorted(ids) and listed["count"] == 3
    assert other.id not in {j["id"] for j in listed["results"]}
    for result in body["results"]:
        assert staff.get(result["url"]).json()["name"] == result["job"]["name"]


def test_a_partial_batch_answers_200_with_urls_and_null_for_failures(staff):
    make_queue("q")
    response = staff.post("/api/v1/jobs/batch/?partial=true", {"jobs": [
        _job("ok"), _job("bad", queue="nope")]}, format="json")
    assert response.status_code == 200 and "Location" not in response
    ok = Job.objects.get(name="ok")
    assert [r["url"] for r in response.json()["results"]] == [f"/api/v1/jobs/{ok.id}/", None]


@pytest.mark.parametrize(("value", "status", "names"), [
    ("{a}", 200, ["a"]), ("{a}-{c}", 200, ["a", "b", "c"]), ("{a},{c}", 200, ["a", "c"]),
    ("x", 400, None), ("{c}-{a}", 400, None), ("1--2", 400, None), ("-3", 400, None),
    ("99999999999999999999", 400, None),
])
def test_the_id_filter_reads_ids_and_ranges(staff, value, status, names):
    queue = make_queue("q")
    jobs = {n: make_job(queue, n, namespace="ml", tasks=1) for n in ("a", "b", "c")}
    response = staff.get("/api/v1/jobs/", {"id": value.format(**{n: j.id for n, j in jobs.items()})})
    assert response.status_code == status
    if names is None:
        assert "id" in response.json()["error"]["fields"]
    else:
        assert sorted(j["name"] for j in response.json()["results"]) == names


MANIFEST = """
apiVersion: scheduling.volcano.sh/v1beta1
kind: Queue
metadata: {name: mq}
spec: {weight: 1}
---
apiVersion: batch.volcano.sh/v1alpha1
kind: Job
metadata: {name: vj, namespace: ml}
spec:
  queue: mq
  tasks:
  - name: w
    replicas: 1
    template: {spec: {containers: [{name: main, resources: {requests: {cpu: "1"}}}]}}
"""


def test_manifest_changes_carry_their_objects_urls(staff):
    response = staff.post("/api/v1/manifests/import/", MANIFEST, content_type="application/yaml")
    assert response.status_code == 200, response.content
    job = Job.objects.get(namespace="ml", name="vj")
    urls = {c["kind"]: c["url"] for c in response.json()["changes"]}
    assert urls == {"Queue": "/api/v1/queues/mq/", "Job": f"/api/v1/jobs/{job.id}/"}
    for url in urls.values():
        assert staff.get(url).status_code == 200
