"""Django admin for every cluster object. Every write goes through schedweb.core.services:
forms validate by calling the service (admin_forms), deletes call the delete services, and
jobs/tasks are changed only by actions (cancel) since they are submitted through the API/UI."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from django.contrib import admin, messages
from django.core.exceptions import ValidationError
from django.db import transaction

from schedweb.core import services
from schedweb.core.admin_forms import (
    NamespaceQuotaForm,
    NodeForm,
    PriorityClassForm,
    QueueForm,
    SchedulerConfigForm,
)
from schedweb.core.models import Job, NamespaceQuota, Node, PriorityClass, Queue, SchedulerConfig, Task


class _DryRun(Exception):
    """Raised to roll back a service call made only to learn whether it would refuse."""


def refusal(call: Callable[[], Any]) -> str | None:
    """The service's error message if `call()` would be refused, else None; nothing is kept."""
    try:
        with transaction.atomic():
            call()
            raise _DryRun
    except _DryRun:
        return None
    except ValidationError as exc:
        return "; ".join(exc.messages)


class ServiceAdmin(admin.ModelAdmin):
    """Saves through the form's service; deletes through `delete_service(obj)`."""

    delete_service: Callable[[Any], None] | None = None

    def get_form(self, request, obj=None, change=False, **kwargs):
        form = super().get_form(request, obj, change=change, **kwargs)
        form.request = request
        return form

    def save_model(self, request, obj, form, change) -> None:
        """Nothing to do: the service saved during form validation."""

    def save_related(self, request, form, formsets, change) -> None:
        """Nothing to do: the service set the many-to-many fields."""

    def _delete(self, obj: Any) -> None:
        type(self).delete_service(obj)

    def get_deleted_objects(self, objs, request):
        deleted, counts, perms_needed, protected = super().get_deleted_objects(objs, request)
        reasons = [r for r in (refusal(lambda o=o: self._delete(o)) for o in objs) if r]
        return deleted, counts, perms_needed, [*protected, *reasons]

    def delete_model(self, request, obj) -> None:
        self._delete(obj)

    def delete_queryset(self, request, queryset) -> None:
        for obj in queryset:
            self._delete(obj)


@admin.register(Queue)
class QueueAdmin(ServiceAdmin):
    """Queues: hierarchy, weights, resource limits and ACLs."""

    form = QueueForm
    list_display = ("name", "parent", "weight", "priority", "state", "reclaimable", "updated")
    list_filter = ("state", "reclaimable", ("parent", admin.RelatedOnlyFieldListFilter))
    search_fields = ("name", "parent__name")
    filter_horizontal = ("admin_users", "admin_groups", "submitter_users", "submitter_groups")
    delete_service = staticmethod(lambda q: services.queue_delete(queue=q))


@admin.register(Node)
class NodeAdmin(ServiceAdmin):
    """Nodes: allocatable, labels, taints, cordon."""

    form = NodeForm
    list_display = ("name", "unschedulable", "usage_cpu", "usage_memory", "usage_updated")
    list_filter = ("unschedulable",)
    search_fields = ("name",)
    readonly_fields = ("usage_cpu", "usage_memory", "usage_updated", "created", "updated")
    delete_service = staticmethod(lambda n: services.node_delete(node=n))


@admin.register(PriorityClass)
class PriorityClassAdmin(ServiceAdmin):
    """Priority classes."""

    form = PriorityClassForm
    list_display = ("name", "value", "preemption_policy")
    list_filter = ("preemption_policy",)
    search_fields = ("name", "description")
    delete_service = staticmethod(lambda pc: services.priority_class_delete(priority_class=pc))


@admin.register(NamespaceQuota)
class NamespaceQuotaAdmin(ServiceAdmin):
    """Namespace hard quotas."""

    form = NamespaceQuotaForm
    list_display = ("namespace", "hard")
    search_fields = ("namespace",)
    list_filter = ()
    delete_service = staticmethod(lambda q: services.namespace_quota_set(namespace=q.namespace, hard=None))

    def get_readonly_fields(self, request, obj=None):
        return ("namespace",) if obj is not None else ()


@admin.register(SchedulerConfig)
class SchedulerConfigAdmin(ServiceAdmin):
    """Scheduler configuration versions: adding one activates it; versions are immutable."""

    form = SchedulerConfigForm
    list_display = ("version", "active", "comment", "created", "created_by")
    list_filter = ("active",)
    search_fields = ("comment", "yaml")
    actions = ["activate_version"]

    def get_readonly_fields(self, request, obj=None):
        return ("version", "yaml", "active", "comment", "created", "created_by") if obj else ()

    def has_change_permission(self, request, obj=None) -> bool:
        # Versions are history: the change view is read-only (a new version replaces one).
        return False if obj is not None and request.method == "POST" else super().has_change_permission(
            request, obj)

    def has_delete_permission(self, request, obj=None) -> bool:
        return False

    @admin.action(description="Activate the selected version (stored as a new version)")
    def activate_version(self, request, queryset) -> None:
        """Re-activate an old configuration by storing a copy as the newest version."""
        if queryset.count() != 1:
            self.message_user(request, "Select exactly one version.", messages.ERROR)
            return
        old = queryset.get()
        new = services.scheduler_config_activate(yaml=old.yaml, comment=f"re-activated v{old.version}",
                                                 created_by=request.user)
        self.message_user(request, f"Version {new.version} (copy of v{old.version}) is active.")


class TaskInline(admin.TabularInline):
    """A job's tasks, read-only."""

    model = Task
    extra = 0
    can_delete = False
    show_change_link = True
    fields = ("name", "role", "status", "node", "request", "priority")
    readonly_fields = fields

    def has_add_permission(self, request, obj=None) -> bool:
        return False


class ReadOnlyAdmin(admin.ModelAdmin):
    """Objects written only by services outside the admin (jobs are submitted via API/UI)."""

    def has_add_permission(self, request) -> bool:
        return False

    def has_change_permission(self, request, obj=None) -> bool:
        return request.method != "POST" and super().has_change_permission(request, obj)

    def has_delete_permission(self, request, obj=None) -> bool:
        return False


@admin.register(Job)
class JobAdmin(ReadOnlyAdmin):
    """Jobs (PodGroups): browse, filter, cancel."""

    list_display = ("__str__", "queue", "phase", "min_member", "priority_class", "reason_code", "created")
    list_filter = ("phase", "queue", "reason_code", "namespace", "preemptable")
    search_fields = ("name", "namespace", "queue__name", "reason_message")
    list_select_related = ("queue", "priority_class")
    inlines = [TaskInline]
    actions = ["cancel_jobs"]
    readonly_fields = [f.name for f in Job._meta.fields]

    @admin.action(description="Cancel the selected jobs")
    def cancel_jobs(self, request, queryset) -> None:
        """Cancel through job_cancel; completed jobs are reported, not changed."""
        done, refused = 0, []
        for job in queryset:
            try:
                services.job_cancel(job=job)
                done += 1
            except ValidationError as exc:
                refused.append("; ".join(exc.messages))
        self.message_user(request, f"Cancelled {done} job(s).")
        for message in refused:
            self.message_user(request, message, messages.WARNING)


@admin.register(Task)
class TaskAdmin(ReadOnlyAdmin):
    """Tasks (pods): browse and filter."""

    list_display = ("name", "job", "role", "status", "node", "priority", "updated")
    list_filter = ("status", ("node", admin.RelatedOnlyFieldListFilter), "role", "preemptable")
    search_fields = ("name", "job__name", "job__namespace", "node__name")
    list_select_related = ("job", "node")
    readonly_fields = [f.name for f in Task._meta.fields]
