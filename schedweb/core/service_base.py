"""What the write services share: the UNSET marker, the field checks that create and update
both apply (FieldChecks), the unique name check and the audit entry. Callers import the services
from schedweb.core.services."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from django.db.models import Model

from schedweb.audit.services import record as audit_record
from schedweb.core.validation import check_name, fail


class _Unset:
    """Marker for "not given" in update services (None is a meaningful value)."""

    def __repr__(self) -> str:
        return "UNSET"


UNSET: Any = _Unset()

# A field's check: (value as given, the object being updated or None on create) -> value to store;
# raises ValidationError({field: [message]}) for a bad value.
Check = Callable[[Any, Any], Any]


def field_check(check: Callable[..., Any], field: str, **kwargs: Any) -> Check:
    """A Check calling one of the validators as they are written: check(value, field, **kwargs)."""
    return lambda value, _instance: check(value, field, **kwargs)


def as_bool(value: Any, _instance: Any) -> bool:
    """A flag: the value's truthiness."""
    return bool(value)


class FieldChecks(dict[str, Check]):
    """Each column of a model and its check, in the order create and update validate them (so the
    first bad field, in that order, is the error)."""

    def for_create(self, **values: Any) -> dict[str, Any]:
        """A create's column values, each through its check."""
        return {field: check(values[field], None) for field, check in self.items() if field in values}

    def apply(self, obj: Model, **values: Any) -> None:
        """An update: each field given (not UNSET) is checked and set on `obj`; a later check sees
        the fields set before it. Nothing is saved here."""
        for field, check in self.items():
            value = values.get(field, UNSET)
            if value is not UNSET:
                setattr(obj, field, check(value, obj))


def check_unique_name(model: type[Model], kind: str, value: Any, instance: Model | None) -> str:
    """A valid object name (a Kubernetes DNS-1123 subdomain) that no other `model` row has, nor
    one differing only by case (a row stored before names were checked). `instance` may keep its
    own name, even one stored before: names are checked where they come in, not where they stay."""
    if instance is not None and value == getattr(instance, "name", None):
        return value
    check_name(value)
    clash = model.objects.filter(name__iexact=value)
    if instance is not None:
        clash = clash.exclude(pk=instance.pk)
    found = clash.values_list("name", flat=True).first()
    if found is not None:
        same = "" if found == value else f" ({found!r}: names may not differ only by case)"
        raise fail("name", f"A {kind} named {value!r} already exists{same}.")
    return value


def audit(action: str, object_type: str, key: str, before: dict | None, after: dict | None, actor: Any,
          **queue_ids: int | None) -> None:
    """One audit entry (schedweb.audit), written inside the calling service's transaction with the
    object's snapshot before and after the change; `queue_ids` let queue admins read it."""
    audit_record(action=action, object_type=object_type, object_key=key, before=before, after=after,
                 actor=actor, **queue_ids)
