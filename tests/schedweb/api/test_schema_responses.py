"""Every GET of the schema, called on a cluster with one object of each kind (a cycle run, a
forecast made), answers a body its declared response schema accepts, read strictly
(tests/schedweb/api/openapi_strict.py); so do the errors, with the one Error schema."""

from __future__ import annotations

import pytest
import yaml
from django.db import connection

from schedweb.api.schema_examples import CONF_YAML
from schedweb.api.services import token_create
from schedweb.core import services
from schedweb.core.job_services import job_submit
from schedweb.scheduling.cycle import cycle_run
from schedweb.scheduling.forecast_task import run_forecast

from . import openapi_strict
from .conftest import make_node, make_queue

CONF = CONF_YAML  # the schema's own example configuration


@pytest.fixture
def cluster(make_user, client_for):
    """A staff client and the path parameters of one object of each kind."""
    staff = make_user("staff", staff=True)
    token, _ = token_create(user=staff, name="portal")
    services.scheduler_config_activate(yaml=CONF)
    team = make_queue("team", capability={"cpu": "16"})
    make_queue("leaf", team, guarantee={"cpu": "1"})
    make_node("n0", cpu="4", memory="8Gi")
    services.priority_class_create(name="high", value=1000, actor=staff)
    services.node_shard_create(name="shard-a", scheduler_name="sched-a", nodes_desired=["n0"], actor=staff)
    services.namespace_quota_set(namespace="ns", hard={"cpu": "8", "memory": "16Gi"}, actor=staff)
    job = job_submit(namespace="ns", name="run", queue=services_queue("leaf"), min_member=1, tasks=[
        {"name": "run-0", "request": {"cpu": "1", "memory": "1Gi"}, "duration": 600,
         "node_selector": {"zone": "a"}},
        {"name": "run-1", "request": {"cpu": "1", "memory": "1Gi"}, "duration": 600}])
    job_submit(namespace="ns", name="big", queue=services_queue("leaf"), min_member=1,
               tasks=[{"name": "big-0", "request": {"cpu": "64"}}])
    run = cycle_run()
    run_forecast()
    task = job.tasks.order_by("id").first()
    from schedweb.audit.models import AuditEntry

    params = {"id": None, "name": None, "namespace": "ns"}
    by_path = {
        "/api/v1/audit/{id}/": {"id": AuditEntry.objects.order_by("id").first().pk},
        "/api/v1/cycles/{id}/": {"id": run.pk},
        "/api/v1/jobs/{id}/": {"id": job.pk}, "/api/v1/jobs/{id}/forecast/": {"id": job.pk},
        "/api/v1/jobs/{id}/placements/": {"id": job.pk},
        "/api/v1/namespace-quotas/{namespace}/": {"namespace": "ns"},
        "/api/v1/nodes/{name}/": {"name": "n0"}, "/api/v1/nodeshards/{name}/": {"name": "shard-a"},
        "/api/v1/priority-classes/{name}/": {"name": "high"},
        "/api/v1/queues/{name}/": {"name": "leaf"}, "/api/v1/queues/{name}/history/": {"name": "leaf"},
        "/api/v1/tasks/{id}/": {"id": task.pk},
    }
    return client_for(staff), params, by_path, job


def services_queue(name: str):
    from schedweb.core.models import Queue

    return Queue.objects.get(name=name)


def _path(template: str, by_path: dict, job) -> str:
    values = by_path.get(template, {"namespace": job.namespace, "name": job.name})
    return template.format(**values)


def test_every_get_answers_what_its_schema_declares(cluster):
    client, _, by_path, job = cluster
    schema = yaml.safe_load(client.get("/api/schema/").content)
    checked, failures = [], {}
    for template, operations in schema["paths"].items():
        operation = operations.get("get")
        if operation is None:
            continue
        path = _path(template, by_path, job)
        response = client.get(path, HTTP_ACCEPT="application/json, application/yaml")
        declared = operation["responses"].get(str(response.status_code))
        assert declared is not None, (path, response.status_code, response.content[:300])
        media = response["Content-Type"].split(";")[0]
        assert media in declared.get("content", {}), (path, media, list(declared.get("content", {})))
        # The YAML export is declared as text; its documents are checked by the manifest tests.
        body = response.content.decode() if media == "application/yaml" else response.json()
        found = openapi_strict.problems(schema, declared["content"][media]["schema"], body)
        if found:
            failures[path] = found[:5]
        checked.append((path, response.status_code))
    assert not failures, failures
    assert all(code == 200 for _, code in checked), checked
    assert len(checked) == sum("get" in ops for ops in schema["paths"].values()) >= 25


@pytest.mark.parametrize(("method", "path", "body", "status"), [
    ("get", "/api/v1/jobs/?state=bogus", None, 400),
    ("get", "/api/v1/jobs/999999/", None, 404),
    ("post", "/api/v1/jobs/", {"namespace": "ns", "name": "run", "queue": "leaf",
                               "tasks": [{"name": "x", "request": {"cpu": "1"}}]}, 409),
    ("get", "/api/v1/queues/nope/", None, 404),
    ("post", "/api/v1/queues/", {"name": "bad name"}, 400),
])
def test_errors_answer_the_error_schema(cluster, method, path, body, status):
    client = cluster[0]
    schema = yaml.safe_load(client.get("/api/schema/").content)
    response = getattr(client, method)(path, body, format="json") if body else getattr(client, method)(path)
    assert response.status_code == status
    template = next(t for t in schema["paths"] if _matches(t, path.split("?")[0]))
    declared = schema["paths"][template][method]["responses"][str(status)]
    assert declared["content"]["application/json"]["schema"] == {"$ref": "#/components/schemas/Error"}
    assert openapi_strict.problems(schema, declared["content"]["application/json"]["schema"],
                                   response.json()) == []


def _matches(template: str, path: str) -> bool:
    a, b = template.strip("/").split("/"), path.strip("/").split("/")
    return len(a) == len(b) and all(x == y or x.startswith("{") for x, y in zip(a, b, strict=True))


def test_the_strict_reading_catches_what_lenient_tools_let_through():
    job = {"type": "object", "properties": {"id": {"type": "integer"}}}
    schema = {"components": {"schemas": {"Job": job}}}
    nullable_ref = {"allOf": [{"$ref": "#/components/schemas/Job"}], "nullable": True}
    assert openapi_strict.problems(schema, nullable_ref, None) != []
    assert openapi_strict.problems(schema, {"oneOf": [{"type": "integer"}, {"type": "number"}]}, 3) != []
    fixed = {"oneOf": [{"$ref": "#/components/schemas/Job"}, {"enum": [None]}]}
    assert openapi_strict.problems(schema, fixed, None) == []
    assert openapi_strict.problems(schema, fixed, {"id": 1}) == []


def test_every_operation_declares_its_errors_with_one_schema(cluster):
    schema = yaml.safe_load(cluster[0].get("/api/schema/").content)
    for path, operations in schema["paths"].items():
        for method, operation in operations.items():
            codes = set(operation["responses"])
            expected = {"400", "401", "403", "429"} | ({"404"} if "{" in path else set()) | (
                {"409"} if method != "get" else set())
            assert expected <= codes, (method, path, sorted(codes))
            for code in codes - {"200", "201", "204"}:
                content = operation["responses"][code]["content"]
                assert content == {"application/json": {"schema": {"$ref": "#/components/schemas/Error"}}}
    assert "412" in schema["paths"]["/api/v1/queues/{name}/"]["put"]["responses"]
    assert connection.vendor in ("postgresql", "sqlite")
