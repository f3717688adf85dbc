"""One error envelope for 400/401/403/404/405/429, and the nested-field flattening."""

from __future__ import annotations

from rest_framework.exceptions import Throttled

from schedweb.api.exceptions import api_exception_handler, flatten_errors


def test_unknown_api_path_is_json_404(make_user, client_for):
    response = client_for(make_user("u")).get("/api/v1/nope/")
    assert response.status_code == 404
    assert response.json() == {"error": {"code": "not_found", "message": "No such API endpoint.",
                                         "fields": {}}}


def test_unknown_api_path_is_401_for_anonymous(db):
    from rest_framework.test import APIClient

    assert APIClient().get("/api/v1/nope/").status_code == 401


def test_unknown_object_is_404_envelope(make_user, client_for):
    response = client_for(make_user("u")).get("/api/v1/queues/missing/")
    assert response.status_code == 404
    assert response.json()["error"]["code"] == "not_found"


def test_wrong_method_is_405_envelope(make_user, client_for):
    response = client_for(make_user("u", staff=True)).delete("/api/v1/scheduler-config/")
    assert response.status_code == 405
    assert response.json() == {"error": {"code": "method_not_allowed",
                                         "message": 'Method "DELETE" not allowed.', "fields": {}}}


def test_throttled_is_429_envelope():
    response = api_exception_handler(Throttled(wait=7), {})
    assert response.status_code == 429
    assert response.data == {"error": {"code": "throttled", "fields": {},
                                       "message": "Request was throttled. Expected available in 7 seconds."}}


def test_unknown_keys_are_rejected_by_name(make_user, client_for):
    response = client_for(make_user("s", staff=True)).post(
        "/api/v1/nodes/", {"name": "n1", "allocatable": {"cpu": "1"}, "colour": "red"}, format="json")
    assert response.status_code == 400
    assert response.json()["error"] == {"code": "invalid", "message": "colour: Unknown field.",
                                        "fields": {"colour": ["Unknown field."]}}


def test_flatten_nested_errors():
    detail = {"tasks": [{}, {"request": ["bad quantity '12x'"], "zone": ["Unknown field."]}],
              "non_field_errors": ["whole object"], "name": ["required"]}
    assert flatten_errors(detail) == {
        "tasks[1].request": ["bad quantity '12x'"], "tasks[1].zone": ["Unknown field."],
        "non_field_errors": ["whole object"], "name": ["required"],
    }
