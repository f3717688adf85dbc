"""django-filter filtersets of the API lists (queue/namespace/phase/reason/search on jobs, ...)."""

from __future__ import annotations

from datetime import UTC

import django_filters
from django.contrib.auth import get_user_model
from django.db.models import Q, QuerySet
from rest_framework import serializers

from schedweb.api.filter_backends import REASON_CODES, ExistingFilter, StrictBooleanFilter
from schedweb.core.models import Job, Node, Queue, Task


class UtcDateTimeFilter(django_filters.IsoDateTimeFilter):
    """An ISO 8601 time, compared in UTC: PostgreSQL refuses offsets beyond +-15:59 that Python
    accepts, and a time near year 9999 may not exist in UTC at all (a 400, not a 500)."""

    def filter(self, qs, value):
        """Filter by the value converted to UTC."""
        if value:
            try:
                value = value.astimezone(UTC)
            except OverflowError:
                raise serializers.ValidationError({self.field_name: ["Time out of range."]}) from None
        return super().filter(qs, value)


from schedweb.core.choices import JOB_PHASES, JOB_STATE_GROUPS, TASK_STATUSES  # noqa: E402 (re-exported)


def _choices(values: tuple[str, ...]) -> list[tuple[str, str]]:
    return [(v, v) for v in values]


class QueueFilterSet(django_filters.FilterSet):
    """Queues by parent name (`root` = top level), state and name search."""

    parent = ExistingFilter(Queue, method="filter_parent", label_text="queue", also=("root",))
    state = django_filters.MultipleChoiceFilter(choices=_choices(("Open", "Closed", "Closing")))
    search = django_filters.CharFilter(field_name="name", lookup_expr="icontains")

    class Meta:
        model = Queue
        fields = ["parent", "state", "search"]

    def filter_parent(self, qs: QuerySet, name: str, value: str) -> QuerySet:
        """`root` selects top-level queues; any other value a parent's name."""
        return qs.filter(parent__isnull=True) if value == "root" else qs.filter(parent__name=value)


class JobFilterSet(django_filters.FilterSet):
    """Jobs by queue, namespace, phase, reason code, submitter and a name/namespace search."""

    queue = ExistingFilter(Queue, field_name="queue__name", label_text="queue")
    namespace = django_filters.CharFilter()
    # distinct=False: a plain column of the job row, so no duplicates to remove (DISTINCT over
    # every selected column made the pending list 20x slower).
    phase = django_filters.MultipleChoiceFilter(choices=_choices(JOB_PHASES), distinct=False)
    reason_code = django_filters.ChoiceFilter(choices=_choices(REASON_CODES))
    # waiting (Pending + Inqueue), finished (Completed + Cancelled) or one phase; repeatable.
    state = django_filters.MultipleChoiceFilter(
        choices=_choices(tuple(JOB_STATE_GROUPS) + JOB_PHASES), method="filter_state")
    submitted_by = ExistingFilter(get_user_model(), field_name="submitted_by__username", lookup="username",
                                  label_text="user")
    search = django_filters.CharFilter(method="filter_search")

    class Meta:
        model = Job
        fields = ["queue", "namespace", "phase", "state", "reason_code", "submitted_by", "search"]

    def filter_state(self, qs: QuerySet, name: str, value: list[str]) -> QuerySet:
        """Jobs in any of the phases the given states stand for."""
        if not value:
            return qs
        phases = sorted({p for state in value for p in JOB_STATE_GROUPS.get(state, (state,))})
        return qs.filter(phase__in=phases)

    def filter_search(self, qs: QuerySet, name: str, value: str) -> QuerySet:
        """Case-insensitive match on the job name or namespace."""
        return qs.filter(Q(name__icontains=value) | Q(namespace__icontains=value))


class NodeFilterSet(django_filters.FilterSet):
    """Nodes by schedulability and name search."""

    unschedulable = StrictBooleanFilter()
    search = django_filters.CharFilter(field_name="name", lookup_expr="icontains")

    class Meta:
        model = Node
        fields = ["unschedulable", "search"]


class TaskFilterSet(django_filters.FilterSet):
    """Tasks by job, namespace, name, status and node (node agents list their node's tasks)."""

    job = ExistingFilter(Job, field_name="job_id", lookup="id", label_text="job")
    namespace = django_filters.CharFilter(field_name="job__namespace")
    name = django_filters.CharFilter()
    status = django_filters.MultipleChoiceFilter(choices=_choices(TASK_STATUSES))
    node = ExistingFilter(Node, field_name="node__name", label_text="node")

    class Meta:
        model = Task
        fields = ["job", "namespace", "name", "status", "node"]
