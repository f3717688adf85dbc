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
