"""Every object links to every object it names: a crawl of the dashboard over the demo cluster
(after a cycle), signed in as staff (who sees every page and control), from the overview through
every internal link. Each mention of a queue, job (namespace/name or name), task or node in a
page's text is inside a link to that object's page (a task's: its job's), but on the object's
own page; and no internal link answers 404 (or any error)."""

from __future__ import annotations

from collections import defaultdict
from urllib.parse import urlsplit

import pytest

from schedweb.core.models import Job, Node, Queue, Task

from .crawl import internal, parse

# Visited for their status only: not dashboard pages (the API, its docs, Django's admin) or not HTML.
NOT_PARSED = ("/api/", "/admin/", "/static/", "/metrics")
NEVER_VISITED = ("/accounts/logout/",)  # it would sign the crawler out


def _pages_of_objects() -> dict[str, set[str]]:
    """token -> the paths (or path?query) that count as its object's page."""
    pages: dict[str, set[str]] = defaultdict(set)
    for name in Queue.objects.values_list("name", flat=True):
        pages[name].add(f"/queues/{name}/")
    for name in Node.objects.values_list("name", flat=True):
        pages[name].add(f"/nodes/{name}/")
    jobs = {}
    for pk, namespace, name in Job.objects.values_list("id", "namespace", "name"):
        paths = {f"/jobs/{namespace}/{name}/", f"/jobs/{pk}/"}
        jobs[pk] = paths
        pages[f"{namespace}/{name}"] |= paths
        pages[name] |= paths
    for job_id, name in Task.objects.values_list("job_id", "name"):
        pages[name] |= jobs[job_id]
    for namespace in Job.objects.values_list("namespace", flat=True).distinct():
        pages[namespace].add(f"/jobs/?namespace={namespace}")  # a namespace's page: its jobs
    return pages


def _own_tokens(path: str, pages: dict[str, set[str]]) -> set[str]:
    """The tokens naming the object whose page this is (and, on a job's page, its tasks)."""
    return {token for token, paths in pages.items() if path in paths}


def _crawl(client) -> tuple[dict[str, int], dict[str, list]]:
    status: dict[str, int] = {}
    parsed: dict[str, list] = {}
    todo = ["/"]
    while todo:
        url = todo.pop()
        if url in status or url.startswith(NEVER_VISITED):
            continue
        response = client.get(url)
        status[url] = response.status_code
        if response.status_code in (301, 302):
            target = internal(response["Location"])
            if target is not None:
                todo.append(target)
            continue
        if (response.status_code != 200 or url.startswith(NOT_PARSED)
                or not response.get("Content-Type", "").startswith("text/html")):
            continue
        page = parse(response.content.decode())
        parsed[url] = page.mentions
        todo.extend(sorted(t for t in map(internal, page.links) if t is not None and t not in status))
    return status, parsed


pytestmark = pytest.mark.slow  # one crawl of ~90 pages


def test_no_broken_link_and_every_name_is_a_link(cycled, client_as):
    """One crawl for both checks (each page fetched once). Two NodeShards over the demo's nodes
    (one using a node it no longer desires) give the shard pages something to link."""
    from schedweb.core import services

    names = sorted(Node.objects.values_list("name", flat=True))
    shard = services.node_shard_create(name="shard-a", scheduler_name="sched-a", nodes_desired=names[:2])
    services.node_shard_set_in_use(shard=shard, nodes=names[1:3])
    services.node_shard_create(name="shard-b", scheduler_name="sched-b", mode="soft",
                               nodes_desired=names[3:4])
    status, parsed = _crawl(client_as(cycled["staff"]))
    assert {url: code for url, code in status.items() if code not in (200, 301, 302)} == {}
    # The crawl reached every kind of page (each demo object has its own).
    reached = {urlsplit(url).path for url in parsed}
    for path in ("/", "/queues/", "/jobs/", "/jobs/pending/", "/jobs/mine/", "/nodes/", "/mine/", "/audit/",
                 "/tokens/", "/shards/", "/shards/shard-a/", "/shards/shard-b/"):
        assert path in reached, path
    assert reached >= {f"/nodes/{n}/" for n in Node.objects.values_list("name", flat=True)}
    assert reached >= {f"/queues/{q}/" for q in Queue.objects.values_list("name", flat=True)}
    assert reached >= {f"/jobs/{ns}/{n}/" for ns, n in Job.objects.values_list("namespace", "name")}

    pages = _pages_of_objects()
    unlinked: dict[str, set[str]] = defaultdict(set)
    for url, mentions in parsed.items():
        path = urlsplit(url).path
        own = _own_tokens(path, pages)
        for m in mentions:
            targets = pages.get(m.token)
            if not targets or m.token in own:
                continue
            where = internal(m.href) if m.href is not None else None
            if where is None or (urlsplit(where).path not in targets and where not in targets):
                unlinked[path].add(f"{m.token} ({m.href or 'no link'}: {m.context!r})")
    assert dict(unlinked) == {}
