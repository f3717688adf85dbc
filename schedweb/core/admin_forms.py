"""Admin ModelForms whose validation *is* the write service: a form is valid only when the
service accepted the input (and saved it, inside the admin's transaction)."""

from __future__ import annotations

from typing import Any

from django import forms
from django.core.exceptions import ValidationError

from schedweb.core import services
from schedweb.core.forms import add_service_errors
from schedweb.core.models import NamespaceQuota, Node, PriorityClass, Queue, SchedulerConfig
from schedweb.core.validation import resources_for_input

RESOURCE_HELP = 'Quantities, e.g. {"cpu": "4", "memory": "16Gi", "nvidia.com/gpu": 1}. Empty = unset.'


class ServiceModelForm(forms.ModelForm):
    """Base: `run_service(data)` saves through schedweb.core.services; its field errors show on the form."""

    resource_fields: tuple[str, ...] = ()
    request: Any = None  # set by the ModelAdmin (for created_by)

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        if hasattr(self.fields.get("name"), "strip"):
            self.fields["name"].strip = False  # "name\n" is refused by the service, as Kubernetes does
        for name in self.resource_fields:
            if name in self.fields:
                self.fields[name] = forms.JSONField(required=name == "allocatable", help_text=RESOURCE_HELP)
                if self.instance.pk is not None:
                    # Show input units, so saving unchanged parses back to the same stored map.
                    self.initial[name] = resources_for_input(getattr(self.instance, name))

    def service_kwargs(self, data: dict[str, Any]) -> dict[str, Any]:
        """The cleaned values of the form's editable fields (read-only ones are not passed)."""
        return {k: data.get(k) for k in self.fields if k in data}

    def run_service(self, data: dict[str, Any]) -> Any:
        """Call the create or update service with the cleaned data; return the saved object."""
        raise NotImplementedError

    def _post_clean(self) -> None:
        # Replaces ModelForm's instance construction + model validation: the service validates.
        if self.errors:
            return
        try:
            self.instance = self.run_service(self.cleaned_data)
        except ValidationError as exc:
            add_service_errors(self, exc)

    def save(self, commit: bool = True) -> Any:
        """The service already saved; hand back its object."""
        self.save_m2m = lambda: None  # services set many-to-many fields themselves
        return self.instance


class QueueForm(ServiceModelForm):
    """Queue create/change through queue_create / queue_update."""

    resource_fields = ("capability", "deserved", "guarantee")

    class Meta:
        model = Queue
        fields = ["name", "parent", "weight", "priority", "state", "reclaimable", "capability", "deserved",
                  "guarantee", "annotations", "admin_users", "admin_groups", "submitter_users",
                  "submitter_groups"]

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.fields["annotations"].required = False
        # The model's PositiveIntegerField would reject 0 before the service could name the rule.
        self.fields["weight"] = forms.IntegerField(initial=1, help_text="At least 1.")

    def run_service(self, data: dict[str, Any]) -> Queue:
        kwargs = self.service_kwargs(data)
        if "annotations" in kwargs:
            kwargs["annotations"] = kwargs["annotations"] or {}
        if self.instance.pk is None:
            return services.queue_create(**kwargs)
        return services.queue_update(queue=self.instance, **kwargs)


class NodeForm(ServiceModelForm):
    """Node create/change through node_create / node_update."""

    resource_fields = ("allocatable",)

    class Meta:
        model = Node
        fields = ["name", "allocatable", "labels", "taints", "unschedulable"]

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.fields["labels"].required = self.fields["taints"].required = False
        self.fields["taints"].help_text = 'e.g. [{"key": "gpu", "value": "true", "effect": "NoSchedule"}]'

    def run_service(self, data: dict[str, Any]) -> Node:
        kwargs = self.service_kwargs(data)
        if self.instance.pk is None:
            return services.node_create(**kwargs)
        return services.node_update(node=self.instance, **kwargs)


class PriorityClassForm(ServiceModelForm):
    """Priority class create/change through its services."""

    class Meta:
        model = PriorityClass
        fields = ["name", "value", "preemption_policy", "description"]

    def run_service(self, data: dict[str, Any]) -> PriorityClass:
        kwargs = self.service_kwargs(data)
        if self.instance.pk is None:
            return services.priority_class_create(**kwargs)
        return services.priority_class_update(priority_class=self.instance, **kwargs)


class NamespaceQuotaForm(ServiceModelForm):
    """Namespace quota through namespace_quota_set (the namespace is fixed once created)."""

    resource_fields = ("hard",)

    class Meta:
        model = NamespaceQuota
        fields = ["namespace", "hard"]

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.fields["hard"].required = True

    def run_service(self, data: dict[str, Any]) -> NamespaceQuota:
        namespace = self.instance.namespace if self.instance.pk else data.get("namespace")
        if self.instance.pk is None and NamespaceQuota.objects.filter(namespace=namespace).exists():
            raise ValidationError({"namespace": [f"Namespace {namespace!r} already has a quota."]})
        return services.namespace_quota_set(namespace=namespace, hard=data.get("hard"))


class SchedulerConfigForm(ServiceModelForm):
    """A new configuration version, activated by scheduler_config_activate."""

    class Meta:
        model = SchedulerConfig
        fields = ["yaml", "comment"]

    def run_service(self, data: dict[str, Any]) -> SchedulerConfig:
        user = getattr(self.request, "user", None)
        return services.scheduler_config_activate(
            yaml=data.get("yaml") or "", comment=data.get("comment") or "",
            created_by=user if user is not None and user.is_authenticated else None)
