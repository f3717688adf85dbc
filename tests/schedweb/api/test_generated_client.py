"""A client generated from the served schema with openapi-python-client, unmodified, runs the
portal's whole flow against a live server with a token: create a token, create a queue, submit a
job, list by state, get it by namespace/name, cancel it, submit a batch, export the manifests."""

from __future__ import annotations

import pytest
import yaml
from rest_framework.test import APIClient

from schedweb.api.services import token_create

from . import generated_client


@pytest.fixture
def generated(tmp_path, live_server, django_user_model):
    """(the generated package, the generator's warnings, the live server's URL, a staff key)."""
    staff = django_user_model.objects.create_user("portal", password="pw", is_staff=True)
    _, key = token_create(user=staff, name="bootstrap")
    http = APIClient()
    http.credentials(HTTP_AUTHORIZATION=f"Token {key}")
    schema = yaml.safe_load(http.get("/api/schema/").content)
    _, warned = generated_client.generate(schema, tmp_path)
    try:
        yield generated_client.load(tmp_path), warned, live_server.url, key
    finally:
        generated_client.unload()


def _ok(response, status: int):
    assert response.status_code == status, response.content
    return response.parsed


def test_generated_client_runs_the_portal_flow(generated):
    client_pkg, warned, url, bootstrap_key = generated
    assert warned == generated_client.EXPECTED_WARNINGS
    from schedweb_client import AuthenticatedClient
    from schedweb_client.api.jobs import (
        v1_jobs_batch,
        v1_jobs_cancel_create,
        v1_jobs_create,
        v1_jobs_list,
        v1_namespaces_jobs_retrieve,
    )
    from schedweb_client.api.manifests import v1_manifests_export_retrieve
    from schedweb_client.api.queues import v1_queues_create
    from schedweb_client.api.tokens import v1_tokens_create
    from schedweb_client.models import Error, JobBatch, JobSubmit, QueueWrite, TokenCreate
    from schedweb_client.models.v1_jobs_list_state_item import V1JobsListStateItem

    bootstrap = AuthenticatedClient(base_url=url, token=bootstrap_key, prefix="Token")
    secret = _ok(v1_tokens_create.sync_detailed(client=bootstrap, body=TokenCreate(name="portal")), 201)
    assert secret.key.startswith("swt_")
    api = AuthenticatedClient(base_url=url, token=secret.key, prefix="Token")

    queue = _ok(v1_queues_create.sync_detailed(client=api, body=QueueWrite.from_dict(
        {"name": "portal", "capability": {"cpu": "64", "memory": "256Gi"}})), 201)
    assert (queue.name, queue.state) == ("portal", "Open")

    job_body = {"namespace": "sweeps", "name": "lr-1", "queue": "portal", "min_member": 2, "tasks": [
        {"name": "worker", "replicas": 2, "request": {"cpu": "1", "memory": "1Gi"}}]}
    job = _ok(v1_jobs_create.sync_detailed(client=api, body=JobSubmit.from_dict(job_body)), 201)
    assert (job.namespace, job.name, job.task_count) == ("sweeps", "lr-1", 2)

    waiting = _ok(v1_jobs_list.sync_detailed(client=api, state=[V1JobsListStateItem.WAITING]), 200)
    assert [j.id for j in waiting.results] == [job.id]

    detail = _ok(v1_namespaces_jobs_retrieve.sync_detailed("sweeps", "lr-1", client=api), 200)
    assert sorted(t.name for t in detail.tasks) == ["lr-1-worker-0", "lr-1-worker-1"]

    cancelled = _ok(v1_jobs_cancel_create.sync_detailed(job.id, client=api), 200)
    assert cancelled.phase == "Cancelled"

    batch = JobBatch.from_dict({"jobs": [{**job_body, "name": f"lr-{i}"} for i in (2, 3)]})
    result = _ok(v1_jobs_batch.sync_detailed(client=api, body=batch), 201)
    assert (result.created, result.failed, [r.job.name for r in result.results]) == (2, 0, ["lr-2", "lr-3"])

    exported = _ok(v1_manifests_export_retrieve.sync_detailed(client=api, namespace="sweeps"), 200)
    docs = list(yaml.safe_load_all(exported))
    assert [(d["kind"], d["metadata"]["name"]) for d in docs if d["kind"] == "Job"] == [
        ("Job", "lr-2"), ("Job", "lr-3")]

    # Errors come back as the one Error model.
    missing = v1_namespaces_jobs_retrieve.sync_detailed("sweeps", "nope", client=api)
    assert missing.status_code == 404 and isinstance(missing.parsed, Error)
    assert missing.parsed.error.code == "not_found"
    taken = v1_jobs_create.sync_detailed(client=api, body=JobSubmit.from_dict({**job_body, "name": "lr-2"}))
    assert taken.status_code == 409 and taken.parsed.error.code == "conflict"
    assert client_pkg.__name__ == generated_client.PACKAGE
