"""YAML request bodies: the scheduler-config dry-run takes the configuration as application/yaml
(and the other YAML media types) as well as JSON {"yaml": ...}, within the YAML budget."""

from __future__ import annotations

import pytest

from .test_dry_run import BINPACK_ONLY, _cluster

URL = "/api/v1/scheduler-config/dry-run/"
BOMB = "a: &a [x, x, x, x, x, x, x, x, x, x]\n" + "".join(
    f"{chr(98 + i)}: &{chr(98 + i)} [*{chr(97 + i)}, *{chr(97 + i)}, *{chr(97 + i)}, *{chr(97 + i)}, "
    f"*{chr(97 + i)}, *{chr(97 + i)}, *{chr(97 + i)}, *{chr(97 + i)}, *{chr(97 + i)}, *{chr(97 + i)}]\n"
    for i in range(7))


@pytest.fixture
def staff(make_user, client_for):
    client = client_for(make_user("ops", staff=True))
    _cluster(client)
    return client


@pytest.mark.parametrize("media_type", ["application/yaml", "application/x-yaml", "text/yaml"])
def test_dry_run_takes_a_yaml_body(staff, media_type):
    as_json = staff.post(URL, {"yaml": BINPACK_ONLY}, format="json")
    as_yaml = staff.generic("POST", URL, BINPACK_ONLY.encode(), content_type=media_type)
    assert as_yaml.status_code == 200, as_yaml.content
    assert as_yaml.json()["binds"] == {"ns1/job1/job1-0": "n1", "ns1/job1/job1-1": "n1"}
    assert {k: v for k, v in as_yaml.json().items() if k != "timing"} == {
        k: v for k, v in as_json.json().items() if k != "timing"}


def test_a_bad_yaml_configuration_names_the_yaml_field(staff):
    response = staff.generic("POST", URL, b"actions: 'enqueue, teleport'\n", content_type="application/yaml")
    assert response.status_code == 400
    assert list(response.json()["error"]["fields"]) == ["yaml"]
    assert "teleport" in response.json()["error"]["fields"]["yaml"][0]


def test_a_yaml_body_over_budget_is_refused_before_it_is_read(staff, settings):
    settings.MAX_YAML_NODES = 10_000
    response = staff.generic("POST", URL, BOMB.encode(), content_type="application/yaml")
    assert response.status_code == 400
    assert response.json()["error"]["code"] == "parse_error"
    assert response.json()["error"]["message"] == (
        "YAML too large: more than 10000 nodes once aliases are expanded (MAX_YAML_NODES)")
    deep = "a: " + "[" * 100 + "]" * 100 + "\n"
    response = staff.generic("POST", URL, deep.encode(), content_type="application/yaml")
    assert response.status_code == 400 and "MAX_YAML_DEPTH" in response.json()["error"]["message"]


def test_other_scheduler_config_endpoints_still_take_json_only(staff):
    response = staff.generic("PUT", "/api/v1/scheduler-config/", BINPACK_ONLY.encode(),
                             content_type="application/yaml")
    assert response.status_code == 415
