"""Links to the objects a page names: `{% linked text %}` turns the queue, node and job names in
a sentence (a scheduler's message, an explanation, a placement's scores) into links to their
pages; `{% object_link kind key %}` links one object by kind ("queue", "node", "job" with key
namespace/name; "namespace_quota": the namespace's job list). Only objects that exist are linked
(an audit entry may name a deleted one); the names are read once per request (two queries, jobs
only for the names a text holds)."""

from __future__ import annotations

import re
from typing import Any

from django import template
from django.urls import reverse
from django.utils.html import escape, format_html
from django.utils.http import urlencode
from django.utils.safestring import SafeString, mark_safe

register = template.Library()

# A name as the pages write them: Kubernetes names, and namespace/name for a job.
TOKEN = re.compile(r"[a-z0-9](?:[a-z0-9.-]*[a-z0-9])?(?:/[a-z0-9](?:[a-z0-9.-]*[a-z0-9])?)?")


class _Names:
    """The queue and node names of this request, and the jobs looked up so far."""

    def __init__(self) -> None:
        from schedweb.core.models import Node, Queue

        self.queues = set(Queue.objects.values_list("name", flat=True))
        self.nodes = set(Node.objects.values_list("name", flat=True))
        self.jobs: dict[str, bool] = {}

    def known_jobs(self, uids: set[str]) -> set[str]:
        """Which of these namespace/name uids are jobs (one query for those not seen yet)."""
        from django.db.models import Q

        from schedweb.core.models import Job

        new = {u for u in uids if u not in self.jobs}
        if new:
            where = Q()
            for uid in new:
                namespace, name = uid.split("/", 1)
                where |= Q(namespace=namespace, name=name)
            found = {f"{ns}/{n}" for ns, n in Job.objects.filter(where).values_list("namespace", "name")}
            self.jobs.update({uid: uid in found for uid in new})
        return {u for u in uids if self.jobs[u]}


def _names(context: Any) -> _Names:
    request = context.get("request")
    names = getattr(request, "_object_names", None) if request is not None else None
    if names is None:
        names = _Names()
        if request is not None:
            request._object_names = names
    return names


def _url(kind: str, key: str) -> str:
    if kind == "job":
        namespace, name = key.split("/", 1)
        return reverse("dashboard:job", args=[namespace, name])
    return reverse(f"dashboard:{kind}", args=[key])


@register.simple_tag(takes_context=True)
def linked(context: Any, text: Any) -> SafeString:
    """The text, escaped, with each name of an existing queue, node or job a link to its page."""
    text = "" if text is None else str(text)
    names = _names(context)
    tokens = [m for m in TOKEN.finditer(text)]
    jobs = names.known_jobs({m.group(0) for m in tokens if "/" in m.group(0)})
    out, last = [], 0
    for m in tokens:
        token = m.group(0)
        kind = ("job" if token in jobs else "queue" if token in names.queues
                else "node" if token in names.nodes else None)
        if kind is None:
            continue
        out.append(escape(text[last:m.start()]))
        out.append(format_html('<a href="{}">{}</a>', _url(kind, token), token))
        last = m.end()
    out.append(escape(text[last:]))
    return mark_safe("".join(out))


@register.simple_tag(takes_context=True)
def object_link(context: Any, kind: str, key: Any) -> SafeString:
    """`key` as a link to its object's page when it is an existing queue, node or job (a
    namespace quota's key: to the namespace's job list)."""
    key = "" if key is None else str(key)
    if kind == "namespace_quota" and key:
        where = f"{reverse('dashboard:jobs')}?{urlencode({'namespace': key})}"
        return format_html('<a href="{}">{}</a>', where, key)
    names = _names(context)
    exists = (key in names.queues if kind == "queue" else key in names.nodes if kind == "node"
              else "/" in key and bool(names.known_jobs({key})) if kind == "job" else False)
    return format_html('<a href="{}">{}</a>', _url(kind, key), key) if exists else escape(key)
