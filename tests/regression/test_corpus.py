"""The hostile-input corpus of issue 15, sent over the real API (pytest-django client, the test
database): each case answers its exact status and names the field (or code) it refuses.

A case is `cases/<name>.json`: `why` (the finding it pins), `request` {method, path, body or
body_file (under inputs/), content_type, headers}, optional `before` requests (each with the
status it must get), and `expect` {status, code, field, message} for the API's error envelope
or {status, text} for a plain page. Without its fix every case answered 201, 200 or 500.
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import pytest
from django.test import Client

from schedweb.core import services
from schedweb.core.models import Job, Queue, Task
from schedweb.core.task_specs import spec_id_for

HERE = Path(__file__).parent
CASES = sorted((HERE / "cases").glob("*.json"))


@pytest.fixture
def staff(db, django_user_model) -> Client:
    """A staff client with the tree team (capability cpu 40) > leaf where jobs go."""
    user = django_user_model.objects.create_user(username="staff", password="pw", is_staff=True)
    team = services.queue_create(name="team", capability={"cpu": "40"})
    services.queue_create(name="leaf", parent=team)
    client = Client()
    client.force_login(user)
    return client


def send(client: Client, request: dict[str, Any]):
    """One request of a case (a body file is sent byte for byte)."""
    headers = {f"HTTP_{k.upper().replace('-', '_')}": v for k, v in (request.get("headers") or {}).items()}
    if "body_file" in request:
        body: bytes | str = (HERE / "inputs" / request["body_file"]).read_bytes()
    elif "body" in request:
        body = json.dumps(request["body"])
    else:
        return client.generic(request["method"], request["path"], **headers)
    return client.generic(request["method"], request["path"], body, content_type=request["content_type"],
                          **headers)


@pytest.mark.parametrize("path", CASES, ids=[p.stem for p in CASES])
def test_hostile_input_is_refused_exactly(staff, path):
    case = json.loads(path.read_text())
    for before in case.get("before", []):
        assert send(staff, before).status_code == before["status"]
    jobs, tasks, queues = Job.objects.count(), Task.objects.count(), Queue.objects.count()
    response = send(staff, case["request"])
    expect = case["expect"]
    assert response.status_code == expect["status"], response.content[:500]
    if "text" in expect:
        assert response["Content-Type"].startswith("text/plain")
        assert response.content.decode() == expect["text"]
    else:
        error = response.json()["error"]
        assert error["code"] == expect["code"], error
        if "field" in expect:
            assert list(error["fields"]) == [expect["field"]], error
            if "message" in expect:
                assert error["fields"][expect["field"]] == [expect["message"]], error
        elif "message" in expect:
            assert error["message"] == expect["message"], error
    # A refused request stores nothing.
    assert (Job.objects.count(), Task.objects.count(), Queue.objects.count()) == (jobs, tasks, queues)


def test_alias_bomb_is_refused_while_reading(staff):
    """Refused while composing: well under a second, no expansion (a 20-level bomb stands for 9^20
    nodes, which no machine could build)."""
    body = (HERE / "inputs" / "alias_bomb.yaml").read_bytes()
    started = time.perf_counter()
    response = staff.generic("POST", "/api/v1/manifests/import/?dry_run=true", body,
                             content_type="application/yaml")
    elapsed = time.perf_counter() - started
    assert response.status_code == 400
    assert response.json()["error"]["fields"] == {"yaml": [
        "YAML too large: more than 1000000 nodes once aliases are expanded (MAX_YAML_NODES)"]}
    assert elapsed < 5  # the point is "not 12-26 s"; generous for a loaded CI machine


def test_a_100000_task_job_is_refused_before_its_tasks_are_read(staff):
    tasks = [{"name": f"t{i}", "request": {"cpu": "100m"}} for i in range(100_000)]
    body = {"namespace": "ns1", "name": "huge", "queue": "leaf", "min_member": 1, "tasks": tasks}
    response = staff.generic("POST", "/api/v1/jobs/", json.dumps(body), content_type="application/json")
    assert response.status_code == 400
    assert response.json()["error"]["fields"] == {"tasks": [
        "A job may have at most 10000 tasks (MAX_TASKS_PER_JOB), got 100000."]}
    assert Job.objects.count() == 0


def test_export_skips_a_stored_900_level_affinity_and_exports_the_rest(staff):
    """Data stored before the door checked shapes: the export names it and goes on (was a 500)."""
    deep: Any = {"key": "zone", "operator": "Exists"}
    for _ in range(900):
        deep = {"nodeAffinity": deep}
    services.job_submit(namespace="ns1", name="fine", queue="leaf", tasks=[{"name": "f0"}])
    job = services.job_submit(namespace="ns1", name="deep", queue="leaf", tasks=[{"name": "d0"}])
    # Below the services, as old data would be (the spec's row: the value is never read back here).
    Task.objects.filter(job=job).update(spec_id=spec_id_for(affinity=deep))
    for kind in ("Job", "PodGroup"):
        response = staff.get(f"/api/v1/manifests/export/?kind=Queue&kind={kind}" if kind == "Job"
                             else f"/api/v1/manifests/export/?kind={kind}")
        assert response.status_code == 200
        text = response.content.decode()
        first = text.splitlines()[0]
        assert first == "# skipped Job ns1/deep: tasks[d0].affinity: nested deeper than 32 levels", first
        assert response["X-Export-Skipped"] == "1"
        assert "name: fine" in text and "name: deep" not in text
