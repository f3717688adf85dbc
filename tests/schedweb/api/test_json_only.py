"""The API speaks JSON (YAML where a manifest or a configuration is the body): form and
multipart bodies are a 415 with the error envelope, and the schema declares JSON bodies only."""

from __future__ import annotations

import pytest
import yaml

from .conftest import make_queue


@pytest.mark.parametrize("content_type", ["multipart/form-data; boundary=XXX",
                                          "application/x-www-form-urlencoded", "text/plain"])
def test_form_and_multipart_bodies_are_a_415(make_user, client_for, content_type):
    make_queue("q")
    client = client_for(make_user("staff", staff=True))
    body = "--XXX\r\nContent-Disposition: form-data; name=\"name\"\r\n\r\nj\r\n--XXX--\r\n" if (
        content_type.startswith("multipart")) else "namespace=ns&name=j&queue=q"
    for path in ("/api/v1/jobs/", "/api/v1/queues/", "/api/v1/tokens/"):
        response = client.generic("POST", path, body, content_type=content_type)
        assert response.status_code == 415, (path, response.content)
        assert response.json()["error"]["code"] == "unsupported_media_type"


def test_json_and_yaml_still_parse(make_user, client_for):
    make_queue("q")
    client = client_for(make_user("staff", staff=True))
    job = {"namespace": "ns", "name": "j", "queue": "q", "tasks": [{"name": "t", "request": {"cpu": "1"}}]}
    assert client.post("/api/v1/jobs/", job, format="json").status_code == 201
    manifest = ("apiVersion: scheduling.volcano.sh/v1beta1\nkind: Queue\nmetadata: {name: q2}\n"
                "spec: {weight: 1}\n")
    response = client.generic("POST", "/api/v1/manifests/import/", manifest, content_type="application/yaml")
    assert response.status_code == 200, response.content


def test_schema_declares_json_request_bodies_only(make_user, client_for):
    schema = yaml.safe_load(client_for(make_user("u")).get("/api/schema/").content)
    yaml_bodies = {("post", "/api/v1/manifests/import/"), ("post", "/api/v1/scheduler-config/dry-run/")}
    for path, operations in schema["paths"].items():
        for method, operation in operations.items():
            media = set(operation.get("requestBody", {}).get("content", {}))
            yaml_too = {"application/yaml"} if (method, path) in yaml_bodies else set()
            allowed = {"application/json"} | yaml_too
            assert media <= allowed, (method, path, media)
