"""Filtersets of the cluster objects (NetBox style: one per model, in the app that owns the model),
served by both the REST API lists and the dashboard's job lists, with the same parameter names.

Strict values: a parameter whose value names nothing is a form error naming the parameter (the
API answers 400): enumerations are choice filters (`phase`, `state`, `reason_code`, ...),
references to objects are `ExistingFilter`s (`queue=nope` is "Unknown queue 'nope'", not an
empty page), booleans `StrictBooleanFilter`s, times `UtcDateTimeFilter`s.
"""

from __future__ import annotations

from datetime import UTC
from typing import Any

import django_filters
from django import forms
from django.contrib.auth import get_user_model
from django.db.models import Q, QuerySet

from scheduler_core.explain.reasons import ReasonCode
from schedweb.core.choices import JOB_PHASES, JOB_STATE_GROUPS, TASK_STATUSES
from schedweb.core.models import SUSPENDED_REASON, Job, Node, NodeShard, Queue, ShardMode, Task

# The scheduler's codes, and the one job_suspend sets (the scheduler never writes it).
REASON_CODES = (*(code.value for code in ReasonCode), SUSPENDED_REASON)
TRUE, FALSE = ("true", "1", "yes", "on"), ("false", "0", "no", "off")


class ExistingField(forms.CharField):
    """A name (or id) that must name an existing row of `model` (looked up by `lookup`)."""

    def __init__(self, *args: Any, model: Any = None, lookup: str = "name", label_text: str = "",
                 also: tuple[str, ...] = (), **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.model, self.lookup, self.label_text, self.also = model, lookup, label_text, also

    def clean(self, value: Any) -> Any:
        """The value when it names something (or is one of `also`), else a field error."""
        value = super().clean(value)
        if value in (None, "") or value in self.also:
            return value
        if self.lookup in ("id", "pk") and not str(value).isdigit():
            raise forms.ValidationError(f"Expected a {self.label_text} id, not {value!r}.")
        if not self.model.objects.filter(**{self.lookup: value}).exists():
            raise forms.ValidationError(f"Unknown {self.label_text} {value!r}.")
        return value


class ExistingFilter(django_filters.CharFilter):
    """A CharFilter whose value must name an existing object: `ExistingFilter(Queue, field_name=
    "queue__name", label_text="queue")`; `also` lists values that stand for something else
    (`root`)."""

    field_class = ExistingField

    def __init__(self, model: Any, *args: Any, lookup: str = "name", label_text: str = "",
                 also: tuple[str, ...] = (), **kwargs: Any) -> None:
        super().__init__(*args, model=model, lookup=lookup, label_text=label_text or model._meta.verbose_name,
                         also=also, **kwargs)


class StrictBooleanField(forms.Field):
    """true/false (1/0, yes/no, on/off); anything else is an error, not "no filter"."""

    def to_python(self, value: Any) -> bool | None:
        """The boolean, None when absent."""
        if value in (None, ""):
            return None
        text = str(value).strip().lower()
        if text in TRUE:
            return True
        if text in FALSE:
            return False
        raise forms.ValidationError(f"Expected true or false, not {value!r}.")


class StrictBooleanFilter(django_filters.BooleanFilter):
    """BooleanFilter refusing values other than true/false (django-filter ignores them)."""

    field_class = StrictBooleanField


class UtcDateTimeField(django_filters.fields.IsoDateTimeField):
    """An ISO 8601 time, converted to UTC while the form is cleaned: PostgreSQL refuses offsets
    beyond +-15:59 that Python accepts, and a time near year 9999 may not exist in UTC at all
    (a field error, so the API's 400 names the parameter, never a 500)."""

    def clean(self, value: Any) -> Any:
        """The time in UTC."""
        value = super().clean(value)
        if value:
            try:
                value = value.astimezone(UTC)
            except OverflowError:
                raise forms.ValidationError("Time out of range.") from None
        return value


class UtcDateTimeFilter(django_filters.IsoDateTimeFilter):
    """An IsoDateTimeFilter whose value is compared in UTC (UtcDateTimeField)."""

    field_class = UtcDateTimeField


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
    # Any name: a job may name a scheduler no shard answers to (the default scheduler takes it).
    scheduler_name = django_filters.CharFilter()
    search = django_filters.CharFilter(method="filter_search")

    class Meta:
        model = Job
        fields = ["queue", "namespace", "phase", "state", "reason_code", "submitted_by", "scheduler_name",
                  "search"]

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


class NodeShardFilterSet(django_filters.FilterSet):
    """NodeShards by scheduler name, mode, a node they desire or use, and name search."""

    scheduler_name = django_filters.CharFilter()
    mode = django_filters.ChoiceFilter(choices=_choices(tuple(ShardMode.values)))
    node = ExistingFilter(Node, method="filter_node", label_text="node")
    search = django_filters.CharFilter(field_name="name", lookup_expr="icontains")

    class Meta:
        model = NodeShard
        fields = ["scheduler_name", "mode", "node", "search"]

    def filter_node(self, qs: QuerySet, name: str, value: str) -> QuerySet:
        """Shards desiring the node or still using it."""
        return qs.filter(Q(nodes_desired__contains=[value]) | Q(nodes_in_use__contains=[value]))
