"""/audit/ in the dashboard: the API's scope (staff all, queue admins their subtree, others none),
filters, the field diff, and sign-in."""

from __future__ import annotations

import re

from django.test import Client

from schedweb.core import services
from schedweb.core.models import Queue


def _page(user, query: str = "") -> str:
    client = Client()
    client.force_login(user)
    response = client.get(f"/audit/{query}")
    assert response.status_code == 200
    return response.content.decode()


def _rows(html: str) -> list[tuple[str, str]]:
    """(action, object) per entry row, newest first."""
    return re.findall(r'<td><span class="tag">([^<]+)</span></td>\s*<td>[^<]*<strong>([^<]+)</strong>', html)


def test_staff_see_every_change_with_its_diff(teams):
    users, queues = teams
    services.queue_update(queue=queues["b1"], weight=5, actor=users["staff"])
    services.node_create(name="n1", allocatable={"cpu": "4"}, actor=users["staff"])
    html = _page(users["staff"])
    assert _rows(html)[:2] == [("Create", "n1"), ("Update", "b1")]
    assert ("Create", "team-a") in _rows(html)
    # The weight change as a before -> after row, and who made it.
    assert re.search(r"<th>weight</th><td class=\"before\"><code>1</code></td><td class=\"arrow\">&rarr;</td>"
                     r"<td class=\"after\"><code>5</code></td>", html)
    assert "<td>staff" in html
    # Resource maps read in human units (stored as {"cpu": 4000.0, "pods": 110}).
    node_html = _page(users["staff"], "?object_type=node")
    assert _rows(node_html) == [("Create", "n1")]
    assert ('<th>allocatable</th><td class="before"><code>unset</code></td><td class="arrow">&rarr;</td>'
            '<td class="after"><code>4 cores, 110 pods</code></td>') in node_html
    assert "4000.0" not in node_html


def test_queue_admin_sees_only_their_subtree(teams):
    users, queues = teams
    services.queue_update(queue=queues["a1"], priority=3, actor=users["admin_a"])
    services.queue_update(queue=queues["b1"], priority=3, actor=users["staff"])
    services.node_create(name="n1", allocatable={"cpu": "4"}, actor=users["staff"])
    seen = _rows(_page(users["admin_a"]))
    assert ("Update", "a1") in seen and ("Create", "team-a") in seen
    assert not any(obj in ("b1", "team-b", "n1") for _, obj in seen)
    assert "Changes to the queues you administer" in _page(users["admin_a"])


def test_others_see_nothing_and_anonymous_must_sign_in(teams):
    users, _ = teams
    for name in ("other", "submitter_a"):
        html = _page(users[name])
        assert _rows(html) == []
        assert "you administer no queue with recorded changes" in html
    response = Client().get("/audit/")
    assert response.status_code == 302 and response["Location"].startswith("/accounts/login/")


def test_filters_and_bad_filter_values(teams):
    users, queues = teams
    services.queue_update(queue=queues["a1"], weight=2, actor=users["admin_a"])
    services.queue_set_state(queue=Queue.objects.get(name="b1"), state="Closed", actor=users["staff"])
    staff = users["staff"]
    assert _rows(_page(staff, "?actor=admin_a")) == [("Update", "a1")]
    assert _rows(_page(staff, "?action=set_state")) == [("Set State", "b1")]
    assert [o for _, o in _rows(_page(staff, "?queue=team-b"))] == ["b1", "b1", "team-b"]
    # Unknown kinds and actions are ignored (the whole log), never an error.
    assert len(_rows(_page(staff, "?object_type=nope&action=bogus"))) == len(_rows(_page(staff)))
    # A NUL byte in a query is refused at the door (request_guard), never a 500.
    client = Client()
    client.force_login(staff)
    for query in ("?action=%00", "?queue=%00"):
        assert client.get("/audit/" + query).status_code == 400
    assert "match these filters" in _page(staff, "?actor=nobody")


def test_resource_changes_read_per_dimension_in_human_units(teams):
    """Finding 7: the log showed `"cpu": 96000.0` and float bytes."""
    users, queues = teams
    staff = users["staff"]
    services.queue_update(queue=queues["b1"], capability={"cpu": "96", "memory": "1536Gi"}, actor=staff)
    services.queue_update(queue=Queue.objects.get(name="b1"), actor=staff,
                          capability={"cpu": "128", "memory": "1536Gi", "nvidia.com/gpu": 8})
    html = _page(users["staff"], "?object_key=b1&action=update")
    start = html.index('<table class="diff">')
    latest = html[start:html.index("</table>", start)]
    assert re.findall(r"<tr><th>([^<]+)</th><td class=\"before\"><code>([^<]+)</code></td>"
                      r"<td class=\"arrow\">&rarr;</td><td class=\"after\"><code>([^<]+)</code></td></tr>",
                      latest) == [
        ("capability: cpu", "96 cores", "128 cores"), ("capability: GPU", "unset", "8 GPUs")]
    assert "96000" not in html and "1649267441664" not in html
    assert "unset &rarr;" not in html  # arrows live in their own cell


def test_a_configuration_change_reads_as_a_line_diff(teams):
    users, _ = teams
    first = "actions: enqueue, allocate\ntiers:\n- plugins:\n  - name: gang\n"
    services.scheduler_config_activate(yaml=first, created_by=users["staff"])
    services.scheduler_config_activate(yaml=first.replace("allocate", "allocate, backfill"),
                                       created_by=users["staff"])
    html = _page(users["staff"], "?object_type=scheduler_config")
    block = html[html.index('<pre class="linediff">'):].split("</pre>")[0]
    assert '<span class="l del">- actions: enqueue, allocate</span>' in block
    assert '<span class="l add">+ actions: enqueue, allocate, backfill</span>' in block
    assert '<span class="l">  tiers:</span>' in block
