"""The queue edit form: validation is the write service's (schedweb.core.services.queue_update),
the same rules the API applies (the sub-queue admin's share rule included); its field errors show
on the form. A hidden `version` carries the queue's version the form was built from: saving a
form older than the queue is refused with an error naming the conflict (no silent revert)."""

from __future__ import annotations

from typing import Any

from django import forms
from django.core.exceptions import NON_FIELD_ERRORS, ValidationError

from schedweb.core import services
from schedweb.core.access import QueueAccess
from schedweb.core.forms import add_service_errors
from schedweb.core.models import Queue
from schedweb.core.quantities import to_quantities

RESOURCE_HELP = 'Quantities, e.g. {"cpu": "4", "memory": "16Gi", "nvidia.com/gpu": 1}. Empty = unset.'
RESOURCE_FIELDS = ("capability", "deserved", "guarantee")


class ResourceMapField(forms.JSONField):
    """A JSON resource map; unset (None) shows as an empty box rather than `null`."""

    def prepare_value(self, value: Any) -> Any:
        """Empty text for None, JSON otherwise."""
        return "" if value is None else super().prepare_value(value)


class QueueEditForm(forms.Form):
    """Weight, priority, reclaimable and the three resource maps of one queue.

    Resource maps show as quantities a person writes ({"memory": "16Gi"},
    schedweb.core.quantities.to_quantities), which the service parses back to the same stored
    value. `ignored` maps a field to why the active configuration ignores it (conf_fields); the
    page prints it beside the field (`field.field.ignored`). With `commit=False` (the Preview
    button) validation stops at the fields: `apply()` is then what the preview runs in its
    rolled-back savepoint (schedweb.scheduling.queue_preview)."""

    weight = forms.IntegerField(help_text="Share of the parent's resources relative to siblings (>= 1).")
    priority = forms.IntegerField(help_text="Higher-priority queues are served first.")
    reclaimable = forms.BooleanField(required=False, help_text="Others may reclaim what it borrows.")
    capability = ResourceMapField(required=False, help_text=RESOURCE_HELP)
    deserved = ResourceMapField(required=False, help_text=RESOURCE_HELP)
    guarantee = ResourceMapField(required=False, help_text=RESOURCE_HELP)
    version = forms.IntegerField(required=False, min_value=1, widget=forms.HiddenInput)

    def __init__(self, *args: Any, queue: Queue, ignored: dict[str, str] | None = None,
                 commit: bool = True, access: QueueAccess | None = None, **kwargs: Any) -> None:
        self.queue = queue
        self.commit = commit
        self.access = access
        kwargs.setdefault("initial", {
            "weight": queue.weight, "priority": queue.priority, "reclaimable": queue.reclaimable,
            "version": queue.version,
            # Quantities as written ("16Gi", "500m"): saving an unchanged form stores the same map.
            **{f: to_quantities(getattr(queue, f)) for f in RESOURCE_FIELDS},
        })
        super().__init__(*args, **kwargs)
        for name in ("weight", "priority"):
            self.fields[name].widget.attrs["class"] = "narrow"
        for name, field in self.fields.items():
            field.ignored = (ignored or {}).get(name, "")  # type: ignore[attr-defined]

    def clean(self) -> dict[str, Any]:
        """Run the service; its ValidationError becomes form errors and nothing is saved."""
        data = super().clean()
        if self.errors or not self.commit:
            return data
        try:
            self.apply()
        except ValidationError as exc:
            self._service_errors(exc)
        return data

    def apply(self) -> Queue:
        """The write the form stands for: queue_update with every field (cleaned data needed),
        as the form's user, based on the version the form was built from."""
        data = self.cleaned_data
        self.queue = services.queue_update(
            queue=self.queue, access=self.access, expected_version=data.get("version"),
            **{k: data.get(k) for k in self.fields if k != "version"})
        return self.queue

    def _service_errors(self, exc: ValidationError) -> None:
        # A stale version is about the whole form: shown above it, not on the hidden field.
        errors = {NON_FIELD_ERRORS if k == "version" else k: v for k, v in exc.message_dict.items()}
        add_service_errors(self, ValidationError(errors))

    def add_violations(self, violations: dict[str, list[str]]) -> None:
        """Show a preview's `violations` ({field: [message]}, `non_field_errors` for the form) as
        the save would show the service's errors."""
        exc = ValidationError({NON_FIELD_ERRORS if k == "non_field_errors" else k: v
                               for k, v in violations.items()})
        self._service_errors(exc)
