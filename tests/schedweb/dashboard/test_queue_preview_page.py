"""The queue edit form's Preview (issue 20): the form's values run through the edit's own write in a
rolled-back savepoint, two sessions before / after, nothing written; the page shows the figures."""

from __future__ import annotations

import html
import json
import re

import pytest
from django.contrib.auth import get_user_model
from django.db import connection

from schedweb.audit.models import AuditEntry
from schedweb.core import services
from schedweb.core.models import Job, Queue, Task
from schedweb.scheduling.cycle import cycle_run
from schedweb.scheduling.default_conf import NAMED_CONFS
from schedweb.scheduling.models import CycleRun, QueueSample

# The change log (scheduling_change) and the exact task order are PostgreSQL's (see
# tests/schedweb/api/test_preview_queue.py, whose numbers these pages show).
pytestmark = [pytest.mark.django_db,
              pytest.mark.skipif(connection.vendor != "postgresql", reason="needs PostgreSQL")]

FORM = {"weight": 1, "priority": 0, "reclaimable": "on", "capability": "", "deserved": "", "guarantee": ""}


def _job(queue: str, tasks: int = 16) -> None:
    """Elastic job `ns/<queue>` (min member 1) of `tasks` x (1 cpu, 256Mi): 16 cpu, 4Gi asked."""
    services.job_submit(namespace="ns", name=queue, queue=queue, min_member=1,
                        tasks=[{"name": f"{queue}-{i}", "request": {"cpu": "1", "memory": "256Mi"}}
                               for i in range(tasks)])


def _nodes() -> None:
    for name in ("n0", "n1", "n2"):  # 12 cpu, 48Gi in all
        services.node_create(name=name, allocatable={"cpu": "4", "memory": "16Gi", "pods": 110})


def _written() -> tuple:
    """Everything a preview must leave as it was: change log, queues, audit, jobs, tasks, cycles."""
    with connection.cursor() as cursor:
        cursor.execute("SELECT count(*), max(id) FROM scheduling_change")
        log = cursor.fetchone()
    queues = Queue.objects.order_by("name").values_list("name", "weight", "deserved", "capability", "updated")
    return (log, list(queues), AuditEntry.objects.count(), Job.objects.count(),
            sorted(Task.objects.values_list("name", "status")), CycleRun.objects.count(),
            QueueSample.objects.count())


@pytest.fixture
def staff(db):
    """A staff user (admin of every queue) signed in."""
    from django.test import Client

    client = Client()
    client.force_login(get_user_model().objects.create_user("ops", password="pw", is_staff=True))
    return client


def _text(fragment: str, tag: str = " ") -> str:
    """Visible text, each tag replaced by `tag`, blanks collapsed."""
    return " ".join(html.unescape(re.sub(r"<[^>]+>", tag, fragment)).split())


def _figures(page: str) -> dict[str, dict[str, list[str]]]:
    """queue -> figure -> [cell text per dimension] of the preview's queue table."""
    table = re.search(r'<table class="list preview-figures" id="preview-queues">.*?</table>', page, re.S)[0]
    out: dict[str, dict[str, list[str]]] = {}
    for name, body in re.findall(r'<tbody data-queue="([^"]+)"[^>]*>(.*?)</tbody>', table, re.S):
        rows = re.findall(r'<tr data-figure="(\w+)">(.*?)</tr>', body, re.S)
        out[name] = {key: [_text(c) for c in re.findall(r"<td data-dim[^>]*>(.*?)</td>", row, re.S)]
                     for key, row in rows}
        if not rows:
            note = re.search(r'<td colspan="\d+" class="muted">(.*?)</td>', body, re.S)[1]
            out[name] = {"none": [_text(note)]}
    return out


def _jobs(page: str) -> dict[str, list[str]]:
    """kind -> the preview's job lines."""
    blocks = re.findall(r'<div class="preview-jobs" id="preview-(\w+)">(.*?)</div>', page, re.S)
    return {kind: [_text(li, "") for li in re.findall(r"<li [^>]*>(.*?)</li>", block, re.S)]
            for kind, block in blocks}


def test_a_weight_under_volcano_proportion_moves_the_siblings_deserved(staff):
    # Volcano's flat proportion (NAMED_CONFS["volcano-default"]); a, b, c (weight 1) each ask
    # 16 cpu, 4Gi of a 12-cpu, 48Gi cluster: deserved cpu = 12 * w / sum(w): 4 each before;
    # with a's weight 2: a = 12 * 2/4 = 6, b = c = 12 * 1/4 = 3. Memory: every share is above the
    # 4Gi asked, so deserved memory is the request. The next cycle fills each queue to its
    # deserved cpu with 1-cpu tasks of 256Mi: a 4 -> 6 tasks (1 -> 1.5 GiB), b and c 4 -> 3.
    services.scheduler_config_activate(yaml=NAMED_CONFS["volcano-default"][0])
    _nodes()
    for name in ("a", "b", "c"):
        services.queue_create(name=name)
        _job(name)
    before = _written()
    response = staff.post("/queues/a/preview/", {**FORM, "weight": 2})
    assert response.status_code == 200
    assert _written() == before  # no queue row, audit entry, change log row, cycle or sample
    page = response.content.decode()
    assert re.search(r'<div class="queue-preview" id="queue-preview" data-valid="true">', page)
    assert _text(re.search(r'<table class="compact" id="preview-changes">.*?</table>', page, re.S)[0]) == (
        "Setting Stored After the change Weight 1 2")
    unlimited_12 = ["12 cores", "48 GiB"]  # no capability: each real capability is the cluster
    assert _figures(page) == {
        "a": {"deserved": ["4 cores \u2192 6 cores", "4 GiB"], "real_capability": unlimited_12,
              "allocated": ["4 cores \u2192 6 cores", "1 GiB \u2192 1.5 GiB"]},
        "b": {"deserved": ["4 cores \u2192 3 cores", "4 GiB"], "real_capability": unlimited_12,
              "allocated": ["4 cores \u2192 3 cores", "1 GiB \u2192 768 MiB"]},
        "c": {"deserved": ["4 cores \u2192 3 cores", "4 GiB"], "real_capability": unlimited_12,
              "allocated": ["4 cores \u2192 3 cores", "1 GiB \u2192 768 MiB"]},
        "default": {"none": ["No figures: the queue plugin shares nothing to this queue (proportion: a queue "
                             "without jobs)."]},
    }
    rows = response.context["preview"]["queues"]
    assert [(q["name"], q["role_label"], q["weight"], q["share"]) for q in rows] == [
        ("a", "this queue", "1 \u2192 2", "1"), ("b", "sibling", "1", "1"), ("c", "sibling", "1", "1"),
        ("default", "sibling", "\u2014", "\u2014")]
    assert _jobs(page) == {
        "starting": ["ns/a (queue a): 2 tasks: a-4 on n2, a-5 on n2"],
        "not_starting": ["ns/b (queue b): 1 task: b-3 on n1", "ns/c (queue c): 1 task: c-3 on n2"]}
    # The form comes back as posted, with Save and Preview.
    assert re.search(r'<input type="number" name="weight" value="2"', page)
    assert 'id="save-queue"' in page and 'formaction="/queues/a/preview/"' in page
    # Saving the same form, then a cycle, does what the preview said.
    assert staff.post("/queues/a/edit/", {**FORM, "weight": 2}).status_code == 302
    cycle_run()
    bound = sorted(Task.objects.filter(status="Binding", name__startswith="a-")
                   .values_list("name", "node__name"))
    assert bound[-2:] == [("a-4", "n2"), ("a-5", "n2")] and len(bound) == 6


def _team() -> None:
    """team > {x, y}, each leaf deserving 4 cpu and asking 16 (the shipped hierarchical capacity conf)."""
    _nodes()
    team = services.queue_create(name="team")
    services.queue_create(name="x", parent=team, deserved={"cpu": "4"})
    services.queue_create(name="y", parent=team, deserved={"cpu": "4"})
    _job("x")
    _job("y")


def _x_form(**fields) -> dict:
    return {**FORM, "deserved": json.dumps({"cpu": "4"}), **fields}


def test_a_deserved_under_hierarchical_capacity_moves_the_queue_and_its_sibling(staff):
    # Capacity shares by deserved: x and y deserve 4 cpu each; allocate fills the 12-cpu cluster
    # taking the lower allocated / deserved first: 6 and 6. With x deserving 8: x 8, y 4 (both
    # at 1.0); x gains x-6 and x-7, y gives up y-4 and y-5 (tasks go by pod index). team stays.
    _team()
    before = _written()
    response = staff.post("/queues/x/preview/", _x_form(deserved=json.dumps({"cpu": "8"})))
    assert response.status_code == 200
    assert _written() == before
    page = response.content.decode()
    assert _text(re.search(r'<table class="compact" id="preview-changes">.*?</table>', page, re.S)[0]) == (
        "Setting Stored After the change Deserved 4 cores 8 cores")
    whole = ["12 cores", "48 GiB"]
    assert _figures(page) == {
        "team": {"deserved": ["0 cores", "0 GiB"], "real_capability": whole,
                 "allocated": ["12 cores", "3 GiB"]},
        "x": {"deserved": ["4 cores \u2192 8 cores", "0 GiB"], "real_capability": whole,
              "allocated": ["6 cores \u2192 8 cores", "1.5 GiB \u2192 2 GiB"]},
        "y": {"deserved": ["4 cores", "0 GiB"], "real_capability": whole,
              "allocated": ["6 cores \u2192 4 cores", "1.5 GiB \u2192 1 GiB"]},
    }
    roles = [(q["name"], q["role"], q["changed"], q["share"]) for q in response.context["preview"]["queues"]]
    assert roles == [("team", "ancestor", False, "1"), ("x", "queue", True, "1.5 \u2192 1"),
                     ("y", "sibling", True, "1.5 \u2192 1")]
    jobs = _jobs(page)
    assert sorted(jobs) == ["not_starting", "starting"]
    assert re.fullmatch(r"ns/x \(queue x\): 2 tasks: x-6 on n\d, x-7 on n\d", jobs["starting"][0])
    assert re.fullmatch(r"ns/y \(queue y\): 2 tasks: y-4 on n\d, y-5 on n\d", jobs["not_starting"][0])


def test_a_change_that_moves_nothing_says_so(staff):
    _team()
    page = staff.post("/queues/x/preview/", _x_form(weight=3)).content.decode()  # capacity ignores weight
    assert _jobs(page) == {}
    assert ("The next cycle would start and reclaim the same tasks with or without the change."
            in _text(page))


@pytest.mark.parametrize(("fields", "field", "message"), [
    ({"capability": '{"cpu": "2"}'}, "deserved", "Deserved cpu 4 is above the capability cpu 2."),
    ({"guarantee": '{"cpu": "5"}'}, "guarantee", "Guarantee cpu 5 is above the deserved cpu 4."),
])
def test_a_limit_the_change_breaks_shows_on_the_form_and_nothing_is_written(staff, fields, field, message):
    _team()
    before = _written()
    response = staff.post("/queues/x/preview/", _x_form(**fields))
    assert response.status_code == 400
    assert _written() == before
    page = response.content.decode()
    assert response.context["form"].errors == {field: [message]}
    violations = re.search(r'<div id="preview-violations">.*?</div>', page, re.S)[0]
    assert _text(violations) == f"The change would be refused: {field}: {message}"
    assert 'id="preview-queues"' not in page


@pytest.mark.parametrize(("fields", "message"), [
    ({"weight": "x"}, "Enter a whole number."),
    ({"capability": "{"}, "Enter a valid JSON."),
    ({"weight": 0}, "Must be at least 1, got 0."),
])
def test_bad_input_is_a_form_error_without_a_preview(staff, fields, message):
    _team()
    before = _written()
    response = staff.post("/queues/x/preview/", _x_form(**fields))
    assert response.status_code == 400
    assert message in html.unescape(response.content.decode())
    assert _written() == before


def test_htmx_gets_the_edit_section_alone(staff):
    _team()
    response = staff.post("/queues/x/preview/", _x_form(deserved='{"cpu": "8"}'), HTTP_HX_REQUEST="true")
    assert response.status_code == 200
    page = response.content.decode()
    assert page.lstrip().startswith('<section class="card" id="queue-admin">')
    assert "<html" not in page and 'id="queue-preview"' in page and 'name="csrfmiddlewaretoken"' in page
    refused = staff.post("/queues/x/preview/", _x_form(weight="x"), HTTP_HX_REQUEST="true")
    assert refused.status_code == 400 and 'id="queue-preview"' not in refused.content.decode()


def test_only_the_queue_admins_may_preview(db, client_as, users):
    _team()
    services.queue_update(queue=Queue.objects.get(name="team"), admin_users=[users["lead"]])
    services.queue_update(queue=Queue.objects.get(name="x"), submitter_users=[users["submitter"]])
    assert client_as(users["lead"]).post("/queues/x/preview/", _x_form(weight=2)).status_code == 200
    assert 'id="preview-queue"' in client_as(users["lead"]).get("/queues/x/").content.decode()
    for user in ("submitter", "viewer"):
        assert client_as(users[user]).post("/queues/x/preview/", _x_form(weight=2)).status_code == 403
        assert 'id="preview-queue"' not in client_as(users[user]).get("/queues/x/").content.decode()
    anonymous = client_as(None).post("/queues/x/preview/", _x_form(weight=2))
    assert (anonymous.status_code, anonymous["Location"]) == (302, "/accounts/login/?next=/queues/x/preview/")
    assert client_as(users["lead"]).get("/queues/x/preview/").status_code == 405
    assert client_as(users["lead"]).post("/queues/nope/preview/", FORM).status_code == 404
