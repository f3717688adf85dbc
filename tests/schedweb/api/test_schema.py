"""OpenAPI 3 schema at /api/schema/ and offline Swagger UI at /api/docs/ (no CDN)."""

from __future__ import annotations

import pytest
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
    # Every operation under the created queue's path (more may come, such as its history).
    under = {"".join(p.capitalize() for p in op["operationId"].removeprefix("v1_").split("_"))
             for path, ops in schema["paths"].items() if path.startswith("/api/v1/queues/{name}/")
             for op in ops.values()}
    assert set(queue_links) == under
    assert under >= {"QueuesRetrieve", "QueuesUpdate", "QueuesPartialUpdate", "QueuesDestroy",
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
    # Kubernetes object names: DNS-1123 subdomains (scheduler_core.shapes_names).
    assert name_pattern == r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$"
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


RESOURCE_TAGS = {"queues", "jobs", "tasks", "nodes", "nodeshards", "priority-classes", "namespace-quotas",
                 "scheduler-config", "cycles", "manifests", "audit", "tokens", "me"}


def _schema(make_user, client_for) -> dict:
    return yaml.safe_load(client_for(make_user("u")).get("/api/schema/").content)


def _operations(schema: dict):
    for path, operations in schema["paths"].items():
        for method, operation in operations.items():
            yield path, method, operation


def test_operations_are_tagged_by_resource_with_summaries(make_user, client_for):
    schema = _schema(make_user, client_for)
    tags = {(method, path): op["tags"] for path, method, op in _operations(schema)}
    assert {t for ts in tags.values() for t in ts} == RESOURCE_TAGS
    assert all(len(ts) == 1 for ts in tags.values())
    for key, tag in {("post", "/api/v1/jobs/{id}/cancel/"): "jobs", ("get", "/api/v1/queues/tree/"): "queues",
                     ("post", "/api/v1/scheduler-config/dry-run/"): "scheduler-config",
                     ("post", "/api/v1/tasks/{id}/status/"): "tasks",
                     ("get", "/api/v1/cycles/{id}/"): "cycles",
                     ("post", "/api/v1/manifests/import/"): "manifests",
                     ("post", "/api/v1/tokens/{id}/rotate/"): "tokens"}.items():
        assert tags[key] == [tag], key
    # The tag list, in the order Swagger UI shows it, each with a description.
    assert [t["name"] for t in schema["tags"]] == [
        "queues", "jobs", "tasks", "nodes", "nodeshards", "priority-classes", "namespace-quotas",
        "scheduler-config",
        "cycles", "manifests", "audit", "tokens", "me"]
    assert all(t["description"] for t in schema["tags"])
    summaries = {(method, path): op.get("summary") for path, method, op in _operations(schema)}
    assert all(summaries.values()), [k for k, v in summaries.items() if not v]
    for key, summary in {
        ("get", "/api/v1/jobs/"): "List jobs", ("post", "/api/v1/jobs/"): "Submit a job with all its tasks",
        ("get", "/api/v1/jobs/{id}/"): "Get a job", ("post", "/api/v1/jobs/{id}/cancel/"): "Cancel a job",
        ("delete", "/api/v1/jobs/{id}/"): "Cancel a job (the same as POST .../cancel/)",
        ("patch", "/api/v1/nodes/{name}/"): "Update a node",
        ("get", "/api/v1/nodeshards/"): "List NodeShards",
        ("delete", "/api/v1/nodeshards/{name}/"): "Delete a NodeShard",
        ("put", "/api/v1/queues/{name}/"): "Replace a queue",
        ("delete", "/api/v1/priority-classes/{name}/"): "Delete a priority class",
        ("get", "/api/v1/audit/"): "List audit entries", ("get", "/api/v1/audit/{id}/"): "Get an audit entry",
        ("post", "/api/v1/tokens/"): "Create an API token (the key is shown once)",
    }.items():
        assert summaries[key] == summary, key


def test_tags_and_summaries_of_paths_to_come():
    from schedweb.api.schema_tags import summary_of, tag_of

    # Jobs by namespace and name (issue 19) group with the other job operations.
    assert tag_of("/api/v1/namespaces/{namespace}/jobs/{name}/") == "jobs"
    assert summary_of("get", "/api/v1/namespaces/{namespace}/jobs/{name}/") == (
        "Get a job by namespace and name")
    assert summary_of("post", "/api/v1/namespaces/{namespace}/jobs/{name}/cancel/") == (
        "Cancel a job by namespace and name")
    assert summary_of("get", "/api/v1/namespaces/{namespace}/jobs/") == "List jobs of a namespace"
    assert tag_of("/api/v1/widgets/{id}/") == "widgets"  # an unknown resource: its own tag, never "v1"
    assert summary_of("post", "/api/v1/widgets/{id}/spin-up/") == "Spin up a widgets"
    assert summary_of("get", "/api/v1/queues/{name}/history/") == "Get a queue's history"
    assert summary_of("get", "/api/v1/nodes/summary/") == "Get the nodes summary"


def _json_schema(node, components: dict):
    """An OpenAPI 3.0 schema as JSON Schema: references inlined, `nullable` as a null alternative."""
    if isinstance(node, list):
        return [_json_schema(n, components) for n in node]
    if not isinstance(node, dict):
        return node
    if "$ref" in node:
        return _json_schema(components[node["$ref"].rsplit("/", 1)[1]], components)
    out = {k: _json_schema(v, components) for k, v in node.items() if k not in ("nullable", "readOnly")}
    if "required" in node:  # read-only properties are required in responses only
        props = node.get("properties", {})
        out["required"] = [p for p in node["required"] if not props.get(p, {}).get("readOnly")]
    return {"anyOf": [out, {"type": "null"}]} if node.get("nullable") else out


def test_request_examples_are_valid_bodies(make_user, client_for):
    import jsonschema

    from schedweb.api.schema_examples import REQUEST_EXAMPLES

    schema = _schema(make_user, client_for)
    components = schema["components"]["schemas"]
    seen = 0
    for (method, path), by_media in REQUEST_EXAMPLES.items():
        content = schema["paths"][path][method]["requestBody"]["content"]
        for media, examples in by_media.items():
            assert content[media]["examples"] == examples, (method, path, media)
            body_schema = _json_schema(content[media]["schema"], components)
            for example in examples.values():
                assert example["summary"]
                jsonschema.validate(example["value"], body_schema)
                seen += 1
    assert seen == 17


def test_the_job_example_submits(make_user, client_for):
    from schedweb.api.schema_examples import REQUEST_EXAMPLES

    staff = make_user("staff", staff=True)
    body = REQUEST_EXAMPLES[("post", "/api/v1/jobs/")]["application/json"]["gang"]["value"]
    response = client_for(staff).post("/api/v1/jobs/", body, format="json")
    assert response.status_code == 201, response.json()
    assert (response.json()["namespace"], response.json()["name"], response.json()["queue"]) == (
        "demo", "tf-mnist", "default")


@pytest.mark.parametrize(("path", "accept", "status"), [
    ("/api/docs/", "text/html,application/xhtml+xml,*/*;q=0.8", 302),
    ("/api/schema/", "text/html,*/*;q=0.8", 302),
    ("/api/docs/", "", 401),  # API clients keep the error envelope
    ("/api/schema/", "application/json", 401),
    ("/api/schema/", "application/vnd.oai.openapi", 401),
    ("/api/schema/", "", 401),
])
def test_anonymous_browsers_sign_in_before_the_docs(db, client, path, accept, status):
    response = client.get(path, HTTP_ACCEPT=accept) if accept else client.get(path)
    assert response.status_code == status
    if status == 302:
        assert response["Location"] == f"/accounts/login/?next={path}"
        login = client.get(response["Location"]).content.decode()
        assert f'id="login-next">Sign in to continue to <code>{path}</code>.' in login
    else:
        assert response.json()["error"]["code"] == "not_authenticated"


def test_docs_after_sign_in_and_with_a_token(make_user, client):
    from schedweb.api.services import token_create

    user = make_user("u")
    _, key = token_create(user=user, name="t")
    html = "text/html,*/*;q=0.8"
    assert client.get("/api/schema/", HTTP_ACCEPT=html, HTTP_AUTHORIZATION=f"Token {key}").status_code == 200
    assert client.get("/api/docs/", HTTP_ACCEPT=html, HTTP_AUTHORIZATION="Token wrong").status_code == 401
    response = client.post("/accounts/login/?next=/api/docs/", {"username": "u", "password": "pw",
                                                                 "next": "/api/docs/"})
    assert (response.status_code, response["Location"]) == (302, "/api/docs/")
    assert client.get("/api/docs/", HTTP_ACCEPT=html).status_code == 200
    assert yaml.safe_load(client.get("/api/schema/", HTTP_ACCEPT=html).content)["openapi"].startswith("3.")


def test_pages_have_a_favicon(make_user, client):
    from django.contrib.staticfiles import finders

    client.force_login(make_user("u"))
    html = client.get("/tokens/").content.decode()
    assert '<link rel="icon" href="/static/favicon.svg" type="image/svg+xml">' in html
    assert '<link rel="alternate icon" href="/static/favicon.png" type="image/png">' in html
    assert finders.find("favicon.svg") and finders.find("favicon.png")
    response = client.get("/favicon.ico")
    assert (response.status_code, response["Location"]) == (301, "/static/favicon.png")
    with open(finders.find("favicon.png"), "rb") as png:
        assert png.read(8) == b"\x89PNG\r\n\x1a\n"
