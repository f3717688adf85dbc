"""OpenAPI 3 schema at /api/schema/ and offline Swagger UI at /api/docs/ (no CDN)."""

from __future__ import annotations

import yaml


def test_schema_lists_the_v1_endpoints(make_user, client_for):
    response = client_for(make_user("u")).get("/api/schema/")
    assert response.status_code == 200
    schema = yaml.safe_load(response.content)
    assert schema["openapi"].startswith("3.")
    for path in ("/api/v1/queues/", "/api/v1/queues/tree/", "/api/v1/queues/{name}/close/",
                 "/api/v1/jobs/", "/api/v1/jobs/{id}/cancel/", "/api/v1/nodes/{name}/heartbeat/",
                 "/api/v1/tasks/{id}/status/", "/api/v1/scheduler-config/", "/api/v1/manifests/import/",
                 "/api/v1/tokens/{id}/rotate/"):
        assert path in schema["paths"], path


def test_docs_page_serves_swagger_ui_locally(make_user, client):
    make_user("u")
    client.login(username="u", password="pw")
    response = client.get("/api/docs/")
    assert response.status_code == 200
    html = response.content.decode()
    assert "swagger-ui" in html
    assert "cdn.jsdelivr" not in html and "unpkg.com" not in html
    assert "/static/drf_spectacular_sidecar/swagger-ui-dist/swagger-ui-bundle.js" in html


def test_created_objects_link_to_their_own_operations(make_user, client_for):
    schema = yaml.safe_load(client_for(make_user("u")).get("/api/schema/").content)
    queue_links = schema["paths"]["/api/v1/queues/"]["post"]["responses"]["201"]["links"]
    assert set(queue_links) == {"QueuesRetrieve", "QueuesUpdate", "QueuesPartialUpdate", "QueuesDestroy",
                                "QueuesCloseCreate", "QueuesOpenCreate"}
    assert queue_links["QueuesCloseCreate"] == {"operationId": "v1_queues_close_create",
                                                "parameters": {"name": "$response.body#/name"}}
    job_links = schema["paths"]["/api/v1/jobs/"]["post"]["responses"]["201"]["links"]
    assert job_links["JobsCancelCreate"]["parameters"] == {"id": "$response.body#/id"}
    quota = schema["paths"]["/api/v1/namespace-quotas/"]["post"]["responses"]["201"]["links"]
    assert quota["NamespaceQuotasDestroy"]["parameters"] == {"namespace": "$response.body#/namespace"}
    # Every link names an operation that exists.
    operation_ids = {op["operationId"] for ops in schema["paths"].values() for op in ops.values()}
    for ops in schema["paths"].values():
        for op in ops.values():
            for link in op.get("responses", {}).get("201", {}).get("links", {}).values():
                assert link["operationId"] in operation_ids


def test_schema_states_what_input_checks_enforce(make_user, client_for):
    schema = yaml.safe_load(client_for(make_user("u")).get("/api/schema/").content)
    components = schema["components"]["schemas"]
    # Strict bodies refuse unknown keys, and say so.
    closed = ("QueueWrite", "PatchedQueueWrite", "NodeWrite", "JobSubmit", "TaskInput", "PriorityClass")
    for name in closed:
        assert components[name]["additionalProperties"] is False, name
    name_pattern = components["QueueWrite"]["properties"]["name"]["pattern"]
    assert name_pattern == "^[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?$"
    assert components["JobSubmit"]["properties"]["namespace"]["pattern"] == "^[a-z0-9]([-a-z0-9]*[a-z0-9])?$"
    # Response-only components are left open (clients must tolerate new fields).
    assert "additionalProperties" not in components["Job"]


def test_schema_states_the_input_limits(make_user, client_for):
    schemas = yaml.safe_load(client_for(make_user("u")).get("/api/schema/").content)["components"]["schemas"]
    assert schemas["JobSubmit"]["properties"]["tasks"]["maxItems"] == 10_000
    for component, prop in (("JobSubmit", "sla_waiting_time"), ("TaskInput", "duration")):
        field = schemas[component]["properties"][prop]
        assert (field["minimum"], field["maximum"]) == (0, 366 * 86400)
    assert "topology_spread_constraints" in schemas["TaskInput"]["properties"]
